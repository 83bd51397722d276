//! Where something is in a YAML text, from the YAML parser's own marks (the parser every
//! reader uses, so a position can never disagree with how the text was read): a key or value
//! by its path of keys and list indexes, the first duplicate key, and a parser's error said
//! with its positions counted in the file. Only asked when there is a problem to report.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// One step of a path into a YAML document: a mapping's key or a list's index (from 0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Seg {
    Key(String),
    Index(usize),
}

impl Seg {
    pub(crate) fn key(k: &str) -> Seg {
        Seg::Key(k.to_string())
    }
}

/// What of the node at a path to point at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum At {
    /// The key itself (a path ending in [`Seg::Key`]); for an index, the item.
    Key,
    /// Its value (the item, for an index).
    Value,
}

/// The text the search stops with: the parser then attaches the mark of the node it was on.
const FOUND: &str = "guild-hall: found";

/// 1-based (line, column) within `yaml` of the node at `path` (its key or its value), if
/// there is one. A path through an alias or a complex key is not followed.
pub(crate) fn position(yaml: &str, path: &[Seg], at: At) -> Option<(usize, usize)> {
    found(Nav { path, at }.deserialize(serde_yaml_ng::Deserializer::from_str(yaml)).err())
}

/// The first key written twice in one mapping, anywhere in `yaml`: it, and the 1-based
/// (line, column) of its second occurrence (what a person must remove or rename).
pub(crate) fn duplicate(yaml: &str) -> Option<(String, (usize, usize))> {
    let mut key = None;
    let at = found(Dups(&mut key).deserialize(serde_yaml_ng::Deserializer::from_str(yaml)).err())?;
    Some((key?, at))
}

fn found(e: Option<serde_yaml_ng::Error>) -> Option<(usize, usize)> {
    let e = e?;
    let l = e.location()?;
    e.to_string().contains(FOUND).then(|| (l.line(), l.column()))
}

/// What the parser said of `yaml` (whose first line is line `first_line` of the file): the
/// (line, column) in the file, and the message with any position in it counted in the file
/// too, the one already in front of it left out (said once). A duplicate key is said at its
/// second occurrence (the parser says the mapping holding it).
pub(crate) fn yaml_error(e: &serde_yaml_ng::Error, yaml: &str, first_line: usize) -> (usize, usize, String) {
    let text = e.to_string();
    if text.contains("duplicate") {
        if let Some((key, (line, col))) = duplicate(yaml) {
            return (first_line + line - 1, col, format!("duplicate key `{key}`"));
        }
    }
    let (at_line, col) = e.location().map(|l| (l.line(), l.column())).unwrap_or((1, 1));
    let (line, col) = (first_line + at_line - 1, col);
    let shifted = shift_lines(&text, first_line - 1);
    let mut said = shifted.replacen(&format!(" at line {line} column {col}"), "", 1);
    if said.starts_with("mapping values are not allowed") {
        said.push_str(&quote_advice(yaml.lines().nth(at_line.saturating_sub(1)).unwrap_or("")));
    }
    (line, col, said)
}

/// What to do about a plain value holding `: ` (`title: Bad: yaml: here`), which YAML reads as
/// a mapping: quote it. The line itself, quoted, is the example when it is `key: value`.
fn quote_advice(line: &str) -> String {
    let item = line.trim_start();
    let item = item.strip_prefix("- ").unwrap_or(item);
    let example = match item.split_once(": ") {
        // The line as the example, when it is short and plain enough to be one.
        Some((key, value)) if !key.is_empty() && !key.contains(['#', '"', '\'', '{', '[', ' ']) && value.trim_end().len() <= 60 => {
            format!("{key}: \"{}\"", value.trim_end().replace('\\', "\\\\").replace('"', "\\\""))
        }
        _ => "title: \"Bad: yaml: here\"".to_string(),
    };
    format!(": a value holding `: ` must be quoted, e.g. `{example}`")
}

/// `text` with every "line N column M" in it as "line N+by column M".
fn shift_lines(text: &str, by: usize) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("line ") {
        out.push_str(&rest[..i + 5]);
        rest = &rest[i + 5..];
        let digits = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
        match rest[..digits].parse::<usize>() {
            Ok(n) if rest[digits..].starts_with(" column ") => {
                out.push_str(&(n + by).to_string());
                rest = &rest[digits..];
            }
            _ => {}
        }
    }
    out.push_str(rest);
    out
}

/// Walks down `path`, skipping everything else, and stops at what it names.
struct Nav<'p> {
    path: &'p [Seg],
    at: At,
}

impl<'de> DeserializeSeed<'de> for Nav<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Nav<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<(), A::Error> {
        let (want, rest) = match self.path.split_first() {
            None => return here(),
            Some((Seg::Key(want), rest)) => (want, rest),
            Some((Seg::Index(_), _)) => return IgnoredAny.visit_map(m).map(|_| ()),
        };
        let stop = rest.is_empty() && self.at == At::Key;
        while let Some(is) = m.next_key_seed(Key { want, stop })? {
            if is {
                m.next_value_seed(Nav { path: rest, at: self.at })?;
            } else {
                m.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<(), A::Error> {
        let (want, rest) = match self.path.split_first() {
            None => return here(),
            Some((Seg::Index(want), rest)) => (want, rest),
            Some((Seg::Key(_), _)) => return IgnoredAny.visit_seq(s).map(|_| ()),
        };
        let mut i = 0;
        loop {
            let more = if i == *want {
                s.next_element_seed(Nav { path: rest, at: self.at })?.is_some()
            } else {
                s.next_element::<IgnoredAny>()?.is_some()
            };
            if !more {
                return Ok(());
            }
            i += 1;
        }
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        self.scalar()
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        self.scalar()
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        self.scalar()
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        self.scalar()
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        self.scalar()
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.scalar()
    }
    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        self.scalar()
    }
}

impl Nav<'_> {
    /// A scalar is the end of the way: it, if the path ends here.
    fn scalar<E: de::Error>(&self) -> Result<(), E> {
        if self.path.is_empty() {
            here()
        } else {
            Ok(())
        }
    }
}

/// Stop: the parser puts the mark of the node being read on this error.
fn here<E: de::Error>() -> Result<(), E> {
    Err(E::custom(FOUND))
}

/// A mapping's key: whether it is `want`; the search stops at it when `stop`.
struct Key<'w> {
    want: &'w str,
    stop: bool,
}

impl<'de> DeserializeSeed<'de> for Key<'_> {
    type Value = bool;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Key<'_> {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a key")
    }

    fn visit_str<E: de::Error>(self, k: &str) -> Result<bool, E> {
        match k == self.want {
            true if self.stop => Err(E::custom(FOUND)),
            is => Ok(is),
        }
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<bool, E> {
        self.visit_str(&v.to_string())
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<bool, E> {
        self.visit_str(&v.to_string())
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<bool, E> {
        self.visit_str(&v.to_string())
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<bool, E> {
        self.visit_str(&v.to_string())
    }
    fn visit_unit<E: de::Error>(self) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_map<A: MapAccess<'de>>(self, m: A) -> Result<bool, A::Error> {
        IgnoredAny.visit_map(m).map(|_| false)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, s: A) -> Result<bool, A::Error> {
        IgnoredAny.visit_seq(s).map(|_| false)
    }
}

/// Walks everything, and stops at the first key its mapping already had (noting it).
struct Dups<'k>(&'k mut Option<String>);

impl<'de> DeserializeSeed<'de> for Dups<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Dups<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<(), A::Error> {
        let mut seen = Vec::new();
        while let Some(k) = m.next_key_seed(Seen { seen: &seen, dup: &mut *self.0 })? {
            seen.extend(k);
            m.next_value_seed(Dups(&mut *self.0))?;
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<(), A::Error> {
        while s.next_element_seed(Dups(&mut *self.0))?.is_some() {}
        Ok(())
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
}

/// A key of a mapping whose earlier keys are `seen` (as text): a repeat stops the search.
struct Seen<'s> {
    seen: &'s [String],
    dup: &'s mut Option<String>,
}

impl<'de> DeserializeSeed<'de> for Seen<'_> {
    type Value = Option<String>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<String>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Seen<'_> {
    type Value = Option<String>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a key")
    }

    fn visit_str<E: de::Error>(self, k: &str) -> Result<Option<String>, E> {
        if self.seen.iter().any(|s| s == k) {
            *self.dup = Some(k.to_string());
            return Err(E::custom(FOUND));
        }
        Ok(Some(k.to_string()))
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Option<String>, E> {
        self.visit_str(&v.to_string())
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Option<String>, E> {
        self.visit_str(&v.to_string())
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Option<String>, E> {
        self.visit_str(&v.to_string())
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Option<String>, E> {
        self.visit_str(&v.to_string())
    }
    fn visit_unit<E: de::Error>(self) -> Result<Option<String>, E> {
        self.visit_str("~")
    }
    fn visit_map<A: MapAccess<'de>>(self, m: A) -> Result<Option<String>, A::Error> {
        IgnoredAny.visit_map(m).map(|_| None)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, s: A) -> Result<Option<String>, A::Error> {
        IgnoredAny.visit_seq(s).map(|_| None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(segs: &[&str]) -> Vec<Seg> {
        segs.iter().map(|s| s.parse::<usize>().map(Seg::Index).unwrap_or_else(|_| Seg::key(s))).collect()
    }

    #[test]
    fn keys_and_values_by_path_block_and_flow() {
        let yaml = "title: T\nresources: {max_turn: 5}\nwaves:\n  - - id: a\n      colr: 1\n  - - {id: b, timeout: 5}\n\"quoted\": x\n";
        assert_eq!(position(yaml, &path(&["title"]), At::Key), Some((1, 1)));
        assert_eq!(position(yaml, &path(&["title"]), At::Value), Some((1, 8)));
        assert_eq!(position(yaml, &path(&["resources", "max_turn"]), At::Key), Some((2, 13)));
        assert_eq!(position(yaml, &path(&["waves", "0", "0", "colr"]), At::Key), Some((5, 7)));
        assert_eq!(position(yaml, &path(&["waves", "1", "0", "timeout"]), At::Value), Some((6, 24)));
        assert_eq!(position(yaml, &path(&["waves", "1", "0"]), At::Key), Some((6, 7)), "an item: its start");
        assert_eq!(position(yaml, &path(&["waves", "1"]), At::Value), Some((6, 5)));
        assert_eq!(position(yaml, &path(&["quoted"]), At::Key), Some((7, 1)));
        assert_eq!(position(yaml, &path(&["waves", "2", "0"]), At::Key), None, "no such item");
        assert_eq!(position(yaml, &path(&["nope"]), At::Key), None);
        assert_eq!(position("a: [", &path(&["b"]), At::Key), None, "not YAML past the error: nothing found");
    }

    #[test]
    fn the_duplicate_is_the_second_occurrence_at_any_depth() {
        assert_eq!(duplicate("title: A\nworker: w\ntitle: B\n"), Some(("title".into(), (3, 1))));
        assert_eq!(duplicate("a: {x: 1, y: 2, x: 3}\n"), Some(("x".into(), (1, 17))));
        assert_eq!(duplicate("w:\n  - {id: a}\n  - {id: a}\n"), None, "in two mappings is no duplicate");
        assert_eq!(duplicate("a: 1\n"), None);
    }

    #[test]
    fn errors_are_said_counted_in_the_file_once() {
        let yaml = "title: A\nworker: [w\n";
        let e = serde_yaml_ng::from_str::<serde_yaml_ng::Value>(yaml).expect_err("broken");
        let (line, col, said) = yaml_error(&e, yaml, 2);
        assert_eq!((line, col), (4, 1), "{e}");
        assert!(!said.contains("line 4 column 1"), "said once, in front: {said}");
        assert!(said.contains("while parsing a flow sequence at line 3 column 9"), "counted in the file: {said}");
        let yaml = "title: A\nworker: w\ntitle: B\n";
        let e = serde_yaml_ng::from_str::<serde_yaml_ng::Value>(yaml).expect_err("duplicate");
        assert_eq!(yaml_error(&e, yaml, 2), (4, 1, "duplicate key `title`".into()));
        assert_eq!(shift_lines("at line 3 column 2, inline 7", 1), "at line 4 column 2, inline 7");
    }
}
