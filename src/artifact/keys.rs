//! The keys a file a person writes may hold, read from the very types that parse it (serde's
//! own field list of a `Deserialize` struct: the schemas', the manifest's, the settings'), and
//! an unknown one as a problem at the key itself with a "did you mean": one list per file.

use serde::de::{self, Deserialize, Deserializer, Visitor};

use super::frontmatter::Problem;

/// The field names serde's derive gives `T` (a struct, not flattened): the keys a mapping of
/// it may hold, in the order declared. Asked of `T`'s own `Deserialize`, so it cannot drift.
pub fn fields<T: for<'de> Deserialize<'de>>() -> &'static [&'static str] {
    let mut seen = None;
    let _ = T::deserialize(Probe(&mut seen));
    seen.unwrap_or(&[])
}

/// A deserializer that only notes the fields a struct asks for, then gives up.
struct Probe<'a>(&'a mut Option<&'static [&'static str]>);

impl<'de> Deserializer<'de> for Probe<'_> {
    type Error = de::value::Error;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
        Err(de::Error::custom("not a struct"))
    }

    fn deserialize_struct<V: Visitor<'de>>(self, _: &'static str, fields: &'static [&'static str], _: V) -> Result<V::Value, Self::Error> {
        *self.0 = Some(fields);
        Err(de::Error::custom("probed"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option
        unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier ignored_any
    }
}

/// The known key closest to `word`, if close enough to be a slip of the keyboard (an edit
/// distance of at most a third of its length, at least 1; case aside).
pub fn did_you_mean<'k>(word: &str, known: &[&'k str]) -> Option<&'k str> {
    let word = word.to_lowercase();
    let most = (word.chars().count() / 3).max(1);
    known.iter().map(|k| (distance(&word, k), *k)).filter(|(d, _)| *d <= most).min_by_key(|(d, _)| *d).map(|(_, k)| k)
}

/// Levenshtein distance, over chars.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diag = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let next = (row[j + 1] + 1).min(row[j] + 1).min(diag + usize::from(ca != *cb));
            diag = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

/// What is said of an unknown `key`: the known key it is likely a slip for, else all of them.
pub fn unknown_key(key: &str, known: &[&str]) -> String {
    match did_you_mean(key, known) {
        Some(k) => format!("unknown key `{key}`: did you mean `{k}`?"),
        None => format!("unknown key `{key}` (known keys: {})", known.join(", ")),
    }
}

/// 1-based (line, column) of the top-level `key` itself in `yaml`, whose first line is line
/// `first_line` of the file; the first line when it is not written as a block key there.
pub fn key_start(yaml: &str, first_line: usize, key: &str) -> (usize, usize) {
    for (i, l) in yaml.lines().enumerate() {
        let rest = ["", "\"", "'"].iter().find_map(|q| l.strip_prefix(q).and_then(|r| r.strip_prefix(key)).and_then(|r| r.strip_prefix(q)));
        if rest.is_some_and(|r| r.trim_start().starts_with(':')) {
            return (first_line + i, 1);
        }
    }
    (first_line, 1)
}

/// A problem for each top-level key of `mapping` not in `known`, at the key, in file order.
pub fn unknown_keys(
    path: &std::path::Path,
    yaml: &str,
    first_line: usize,
    mapping: &serde_yaml_ng::Mapping,
    known: &[&str],
) -> Vec<Problem> {
    let mut out: Vec<Problem> = mapping
        .keys()
        .filter(|k| !k.as_str().is_some_and(|k| known.contains(&k)))
        .map(|k| {
            let name = k
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| serde_yaml_ng::to_string(k).map(|s| s.trim().to_string()).unwrap_or_else(|_| "?".into()));
            let (line, col) = key_start(yaml, first_line, &name);
            Problem::new(path, line, col, unknown_key(&name, known))
        })
        .collect();
    out.sort_by_key(|p| (p.line, p.column));
    out
}

/// [`unknown_keys`] of a whole YAML file (`worker.yaml`, `.lore/guild-hall.yaml`); none when
/// it is not a mapping (the type's own parse says what is wrong then).
pub fn unknown_in_file(path: &std::path::Path, text: &str, known: &[&str]) -> Vec<Problem> {
    match serde_yaml_ng::from_str::<serde_yaml_ng::Value>(text) {
        Ok(serde_yaml_ng::Value::Mapping(m)) => unknown_keys(path, text, 1, &m, known),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize)]
    #[allow(dead_code)]
    struct S {
        dependencies: Option<u8>,
        #[serde(rename = "time_out")]
        timeout: u8,
    }

    #[test]
    fn fields_are_serdes_own() {
        assert_eq!(fields::<S>(), ["dependencies", "time_out"]);
        assert!(fields::<u8>().is_empty(), "not a struct: no keys");
    }

    #[test]
    fn did_you_mean_the_nearest_known_key() {
        let known = ["dependencies", "timeout", "parallelism", "worker", "title"];
        assert_eq!(did_you_mean("dependecies", &known), Some("dependencies"));
        assert_eq!(did_you_mean("timout", &known), Some("timeout"));
        assert_eq!(did_you_mean("paralelism", &known), Some("parallelism"));
        assert_eq!(did_you_mean("Worker", &known), Some("worker"));
        assert_eq!(did_you_mean("wroker", &known), Some("worker"));
        assert_eq!(did_you_mean("colour", &known), None, "nothing near");
        assert_eq!(did_you_mean("x", &known), None);
        assert_eq!(unknown_key("timout", &known), "unknown key `timout`: did you mean `timeout`?");
        assert_eq!(unknown_key("colour", &["a", "b"]), "unknown key `colour` (known keys: a, b)");
    }

    #[test]
    fn positions_are_the_keys_own_counted_in_the_file() {
        let yaml = "title: T\nnotes: |\n  dependecies: no\n\"quoted\": 1\ndependecies: [a]\n";
        assert_eq!(key_start(yaml, 2, "dependecies"), (6, 1), "the top-level key, not the text in a block");
        assert_eq!(key_start(yaml, 2, "quoted"), (5, 1));
        assert_eq!(key_start(yaml, 1, "title"), (1, 1));
        assert_eq!(key_start("{a: 1}\n", 2, "a"), (2, 1), "flow style: the first line");
        let m: serde_yaml_ng::Mapping = serde_yaml_ng::from_str(yaml).expect("yaml");
        let ps = unknown_keys(std::path::Path::new("c.md"), yaml, 2, &m, &["title", "notes", "dependencies"]);
        let said: Vec<String> = ps.iter().map(|p| p.to_string()).collect();
        assert_eq!(
            said,
            [
                "c.md:5:1: unknown key `quoted` (known keys: title, notes, dependencies)",
                "c.md:6:1: unknown key `dependecies`: did you mean `dependencies`?"
            ]
        );
    }
}
