//! Surgical frontmatter writes: only the keys asked for change; comments, key order, quoting
//! and the body stay byte-for-byte. Every edit is checked by re-parsing before it is returned,
//! so a formatting bug can never silently change a person's values.

use std::collections::BTreeMap;
use std::str::FromStr;

use serde_yaml_ng::Value;
use yaml_edit::{Document, ScalarValue, YamlValue};

use super::frontmatter::split;

/// One change to a top-level frontmatter key.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub enum Edit {
    Set(String, Value),
    Remove(String),
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum WriteError {
    #[error("frontmatter cannot be edited: {0}")]
    Unparsable(String),
    #[error("edit check failed (nothing written): {0}")]
    Verify(String),
}

/// Apply `edits` to the file text, returning the new text.
pub(crate) fn apply(text: &str, edits: &[Edit]) -> Result<String, WriteError> {
    let sp = split(text).map_err(|(_, m)| WriteError::Unparsable(m))?;
    let before: Value = serde_yaml_ng::from_str(sp.yaml).map_err(|e| WriteError::Unparsable(e.to_string()))?;
    let mut yaml = if sp.yaml.trim().is_empty() { String::new() } else { sp.yaml.to_string() };
    for edit in edits {
        yaml = apply_one(&yaml, edit)?;
    }
    if !yaml.is_empty() && !yaml.ends_with('\n') {
        yaml.push('\n');
    }
    let after: Value = serde_yaml_ng::from_str(&yaml).map_err(|e| WriteError::Verify(format!("result does not parse: {e}")))?;
    verify(&before, &after, edits)?;
    let mut out = String::with_capacity(text.len() + 64);
    out.push_str(&text[..sp.yaml_range.start]);
    out.push_str(&yaml);
    out.push_str(&text[sp.yaml_range.end..]);
    // Never write what we would then refuse to read (an edit that takes frontmatter near the
    // cap over it): the write is refused as a whole, with why.
    split(&out).map_err(|(_, m)| WriteError::Verify(format!("the edited file would not be readable: {m}")))?;
    Ok(out)
}

/// A string as Guild Hall quotes one: in double quotes, `\`, `"` and newlines escaped.
pub(crate) fn double_quoted(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n"))
}

/// `s` as a list item writes it, as Guild Hall does: plain when YAML reads that back as the
/// same string, else double-quoted (`2024`, `true`, `a #b`, `x: y` are not strings plain).
fn plain_if_it_reads_back(s: &str) -> String {
    match serde_yaml_ng::from_str::<Value>(&format!("- {s}")) {
        Ok(Value::Sequence(v)) if v.len() == 1 && v[0].as_str() == Some(s) => s.to_string(),
        _ => double_quoted(s),
    }
}

/// Entries to append to a log key (`activity_timeline:`): each as its text (two-space
/// indented `- ` items) and as the value it parses to.
pub(crate) struct Appended<'a> {
    pub(crate) key: &'a str,
    pub(crate) entries: Vec<(String, Value)>,
}

/// Apply `file` edits, `appended` log entries and a new `body` to a file the way Guild Hall
/// writes its own (the dialect, [`super::dialect`]): a key's lines replaced in place
/// (`status: done`, a text in double quotes, a list as `- item` lines), entries added at the end
/// of the log (where Guild Hall appends them, just above `current_progress:`), and the body
/// replaced. Every other byte stays; the outcome is checked by re-parsing, as [`apply`]'s is.
pub(crate) fn apply_in_place(text: &str, file: &[Edit], appended: &Appended<'_>, body: Option<&str>) -> Result<String, WriteError> {
    let sp = split(text).map_err(|(_, m)| WriteError::Unparsable(m))?;
    let before: Value = serde_yaml_ng::from_str(sp.yaml).map_err(|e| WriteError::Unparsable(e.to_string()))?;
    let mut yaml = sp.yaml.to_string();
    if !yaml.is_empty() && !yaml.ends_with('\n') {
        yaml.push('\n');
    }
    let mut want: Vec<Edit> = Vec::new();
    for edit in file {
        let (key, lines) = match edit {
            Edit::Set(k, Value::String(s)) if k == "status" => (k, Some(format!("{k}: {s}\n"))),
            Edit::Set(k, Value::String(s)) => (k, Some(format!("{k}: {}\n", double_quoted(s)))),
            Edit::Set(k, Value::Sequence(items)) if items.iter().all(|i| i.as_str().is_some_and(|s| !s.contains(['\n', '"']))) => {
                let listed: String =
                    items.iter().filter_map(Value::as_str).map(|i| format!("  - {}\n", plain_if_it_reads_back(i))).collect();
                (k, Some(if items.is_empty() { format!("{k}: []\n") } else { format!("{k}:\n{listed}") }))
            }
            Edit::Set(k, _) | Edit::Remove(k) => (k, None),
        };
        want.push(edit.clone());
        match (key_lines(&yaml, key), lines, edit) {
            (Some(range), Some(lines), _) => yaml.replace_range(range, &lines),
            (Some(range), None, Edit::Remove(_)) => yaml.replace_range(range, ""),
            (None, _, Edit::Remove(_)) => {}
            // A key the file lacks, or a value of another shape: as yaml-edit writes it.
            _ => yaml = apply_one(&yaml, edit)?,
        }
        if !yaml.is_empty() && !yaml.ends_with('\n') {
            yaml.push('\n');
        }
    }
    if !appended.entries.is_empty() {
        let key = appended.key;
        let mut log: Vec<Value> = match before.get(key) {
            Some(Value::Sequence(s)) => s.clone(),
            _ => Vec::new(),
        };
        let added: String = appended.entries.iter().map(|(t, _)| t.as_str()).collect();
        match key_lines(&yaml, key) {
            // Guild Hall's own `[]` (or no entry yet) becomes a block list.
            Some(range) if log.is_empty() => yaml.replace_range(range, &format!("{key}:\n{added}")),
            Some(range) => yaml.insert_str(range.end, &added),
            None => yaml.push_str(&format!("{key}:\n{added}")),
        }
        log.extend(appended.entries.iter().map(|(_, v)| v.clone()));
        want.push(Edit::Set(key.into(), Value::Sequence(log)));
    }
    let after: Value = serde_yaml_ng::from_str(&yaml).map_err(|e| WriteError::Verify(format!("result does not parse: {e}")))?;
    verify(&before, &after, &want)?;
    let body_at = text.len() - sp.body.len();
    let mut out = String::with_capacity(text.len() + 256);
    out.push_str(&text[..sp.yaml_range.start]);
    out.push_str(&yaml);
    out.push_str(&text[sp.yaml_range.end..body_at]);
    match body {
        Some(body) => {
            out.push_str(body.trim_end());
            out.push('\n');
        }
        None => out.push_str(sp.body),
    }
    split(&out).map_err(|(_, m)| WriteError::Verify(format!("the edited file would not be readable: {m}")))?;
    Ok(out)
}

/// The byte range of top-level key `key`'s lines in `yaml`: its own line and every line under
/// it (indented, or a `- ` item), not the blank lines or comments after them.
fn key_lines(yaml: &str, key: &str) -> Option<std::ops::Range<usize>> {
    let mut at = 0;
    let mut start = None;
    let mut end = 0;
    for line in yaml.split_inclusive('\n') {
        let next = at + line.len();
        match start {
            None => {
                if line.strip_prefix(key).is_some_and(|r| r.starts_with(':')) {
                    start = Some(at);
                    end = next;
                }
            }
            Some(_) => {
                let t = line.trim_end_matches(['\n', '\r']);
                if t.starts_with([' ', '\t']) && !t.trim().is_empty() && !t.trim_start().starts_with('#') || t.starts_with("- ") || t == "-"
                {
                    end = next;
                } else if !(t.trim().is_empty() || t.trim_start().starts_with('#')) {
                    break;
                }
            }
        }
        at = next;
    }
    start.map(|s| s..end)
}

fn apply_one(yaml: &str, edit: &Edit) -> Result<String, WriteError> {
    let doc = if yaml.trim().is_empty() {
        Document::new_mapping()
    } else {
        Document::from_str(yaml).map_err(|e| WriteError::Unparsable(e.to_string()))?
    };
    match edit {
        Edit::Set(k, v) => {
            if !doc.set(k.as_str(), to_yaml(v)) {
                return Err(WriteError::Unparsable("frontmatter is not a mapping".into()));
            }
        }
        Edit::Remove(k) => {
            doc.remove(k.as_str());
        }
    }
    Ok(doc.to_string())
}

/// Every key we set has exactly its value, every key we removed is gone, every other key is
/// untouched.
fn verify(before: &Value, after: &Value, edits: &[Edit]) -> Result<(), WriteError> {
    let empty = serde_yaml_ng::Mapping::new();
    let b = before.as_mapping().unwrap_or(&empty);
    let a = after.as_mapping().ok_or_else(|| WriteError::Verify("frontmatter is no longer a mapping".into()))?;
    let mut want: BTreeMap<String, Option<&Value>> = BTreeMap::new();
    for e in edits {
        match e {
            Edit::Set(k, v) => want.insert(k.clone(), Some(v)),
            Edit::Remove(k) => want.insert(k.clone(), None),
        };
    }
    for (k, v) in &want {
        let got = a.get(k.as_str());
        if got != *v && !(v.is_none() && got.is_none()) {
            return Err(WriteError::Verify(format!("key {k:?} came out as {got:?}, wanted {v:?}")));
        }
    }
    for (k, v) in b {
        let key = k.as_str().unwrap_or_default();
        if !want.contains_key(key) && a.get(k) != Some(v) {
            return Err(WriteError::Verify(format!("key {key:?} would have changed")));
        }
    }
    for k in a.keys() {
        let key = k.as_str().unwrap_or_default();
        if !want.contains_key(key) && !b.contains_key(k) {
            return Err(WriteError::Verify(format!("key {key:?} would have appeared")));
        }
    }
    Ok(())
}

fn to_yaml(v: &Value) -> YamlValue {
    match v {
        Value::Null => YamlValue::Scalar(ScalarValue::null()),
        Value::Bool(b) => YamlValue::from(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => YamlValue::from(i),
            None => YamlValue::from(n.as_f64().unwrap_or(0.0)),
        },
        Value::String(s) => YamlValue::Scalar(ScalarValue::string(s.as_str())),
        Value::Sequence(items) => YamlValue::Sequence(items.iter().map(to_yaml).collect()),
        Value::Mapping(m) => YamlValue::Mapping(
            m.iter().map(|(k, v)| (k.as_str().map(str::to_string).unwrap_or_else(|| format!("{k:?}")), to_yaml(v))).collect(),
        ),
        Value::Tagged(t) => to_yaml(&t.value),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &str) -> Value {
        Value::String(v.into())
    }

    /// A list item that YAML would read as something else is quoted; a path stays plain.
    #[test]
    fn list_items_read_back_as_the_strings_written() {
        for item in ["lit.txt", ".lore/notes/lit.md", "2024", "true", "a #b", "*x", "x: y", "[a]", "~", "- x", "'q'"] {
            let text = format!("k:\n  - {}\n", plain_if_it_reads_back(item));
            let v: Value = serde_yaml_ng::from_str(&text).expect(&text);
            assert_eq!(v["k"][0].as_str(), Some(item), "{text}");
        }
        assert_eq!(plain_if_it_reads_back("lit.txt"), "lit.txt");
    }

    #[test]
    fn keeps_comments_order_and_body() {
        let text = "---\n# who does it\nworker:   scribe   # the scribe\ntitle: 'Quoted title'\nstatus: pending\n---\nBody\n  stays\n";
        let out = apply(text, &[Edit::Set("status".into(), s("dispatched")), Edit::Set("attempt".into(), Value::from(1))]).unwrap();
        assert!(out.contains("# who does it\nworker:   scribe   # the scribe\ntitle: 'Quoted title'\n"), "{out}");
        assert!(out.contains("status: dispatched"), "{out}");
        assert!(out.ends_with("---\nBody\n  stays\n"), "{out}");
    }

    #[test]
    fn sets_structured_and_tricky_values() {
        let text = "---\nworker: scribe\ndesired: cancelled\n---\nBody\n";
        let mut result = serde_yaml_ng::Mapping::new();
        result.insert(s("summary"), s("Done: all 3 items\nsecond line, with 'quotes' and # hash"));
        result.insert(s("artifacts"), Value::Sequence(vec![s(".lore/a.md")]));
        let edits = [
            Edit::Remove("desired".into()),
            Edit::Set("result".into(), Value::Mapping(result)),
            Edit::Set("progress".into(), s("yes")),
            Edit::Set("reason".into(), s("- starts with a dash: and colon")),
            Edit::Set("questions".into(), Value::Sequence(vec![s("why?"), s("true")])),
            Edit::Set("created".into(), s("2026-11-22T10:00:00Z")),
        ];
        let out = apply(text, &edits).unwrap();
        assert!(!out.contains("desired"), "{out}");
        assert!(out.ends_with("---\nBody\n"));
    }

    #[test]
    fn empty_frontmatter() {
        let out = apply("---\n---\nBody\n", &[Edit::Set("status".into(), s("pending"))]).unwrap();
        assert_eq!(out, "---\nstatus: pending\n---\nBody\n");
    }
}
