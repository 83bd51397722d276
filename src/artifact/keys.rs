//! The keys a file a person writes may hold, at every depth, read from the very types that
//! parse it (their JSON Schemas compiled into a [`Shape`]; serde's own field list of a type
//! without one), and each unknown one as a problem at the key itself with a "did you mean".

use serde::de::{self, Deserialize, Deserializer, Visitor};

use super::frontmatter::Problem;
use super::locate::{self, At, Seg};

/// The field names serde's derive gives `T` (a struct, not flattened): the keys a mapping of
/// it may hold, in the order declared. Asked of `T`'s own `Deserialize`, so it cannot drift.
pub(crate) fn fields<T: for<'de> Deserialize<'de>>() -> &'static [&'static str] {
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
pub(crate) fn did_you_mean<'k>(word: &str, known: &[&'k str]) -> Option<&'k str> {
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
pub(crate) fn unknown_key(key: &str, known: &[&str]) -> String {
    said(key, "", known)
}

fn said(key: &str, place: &str, known: &[&str]) -> String {
    match did_you_mean(key, known) {
        Some(k) => format!("unknown key `{key}`{place}: did you mean `{k}`?"),
        None => format!("unknown key `{key}`{place} (known keys: {})", known.join(", ")),
    }
}

/// A key a schema does not allow where it is written: the path to the mapping holding it
/// (empty: the top level), the key, and the keys allowed there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unknown {
    pub(crate) within: Vec<Seg>,
    pub(crate) key: String,
    pub(crate) known: Vec<String>,
}

impl Unknown {
    /// What is said of it: as [`unknown_key`] says it, and where it is when not at the top
    /// level (`` in `resources` ``).
    pub(crate) fn message(&self) -> String {
        let known: Vec<&str> = self.known.iter().map(String::as_str).collect();
        let place = if self.within.is_empty() { String::new() } else { format!(" in `{}`", dotted(&self.within)) };
        said(&self.key, &place, &known)
    }

    /// It as a problem of the file at `path`, said as `message`, at the key in `yaml` (whose
    /// first line is line `first_line` of the file).
    pub(crate) fn problem(&self, path: &std::path::Path, yaml: &str, first_line: usize, message: String) -> Problem {
        let mut at = self.within.clone();
        at.push(Seg::Key(self.key.clone()));
        let (line, col) =
            locate::position(yaml, &at, At::Key).or_else(|| locate::position(yaml, &self.within, At::Value)).unwrap_or((1, 1));
        Problem::new(path, first_line + line - 1, col, message)
    }
}

/// A path said as a person reads it: `resources`, `waves[2][1].timeout` (indexes from 1).
pub(crate) fn dotted(path: &[Seg]) -> String {
    let mut out = String::new();
    for s in path {
        match s {
            Seg::Key(k) if out.is_empty() => out.push_str(k),
            Seg::Key(k) => {
                out.push('.');
                out.push_str(k);
            }
            Seg::Index(i) => out.push_str(&format!("[{}]", i + 1)),
        }
    }
    out
}

/// Which keys a file may hold where, compiled once from a JSON Schema (schemars', derived
/// from the types that parse the file): every pass checks every artifact against it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Shape {
    /// The keys a mapping here may hold, each with its value's shape; `None`: the schema
    /// expects no mapping here (a value of another type is the parser's to report).
    keys: Option<std::collections::BTreeMap<String, Shape>>,
    /// Any other key is refused (`additionalProperties: false` in every alternative).
    closed: bool,
    /// The shape of any other key's value (`additionalProperties: {…}`, as `env:`'s).
    other: Option<Box<Shape>>,
    /// The shape of a list's items.
    items: Option<Box<Shape>>,
}

impl Shape {
    /// The shape of what the JSON Schema `schema` allows (its `$ref`s followed into its
    /// `$defs`, `anyOf`/`oneOf`/`allOf` alternatives merged).
    pub(crate) fn of(schema: &serde_json::Value) -> Shape {
        compile(&[schema], schema, 0)
    }

    /// A mapping that may hold exactly `fields` (of any value), for a type with no schema of
    /// its own ([`fields`] of it).
    pub(crate) fn closed(fields: &[&str]) -> Shape {
        let keys = fields.iter().map(|f| (f.to_string(), Shape::default())).collect();
        Shape { keys: Some(keys), closed: true, other: None, items: None }
    }
}

/// The schemas `schema` stands for: itself, and what its `$ref`, `allOf`, `anyOf` and `oneOf`
/// name, followed to a bounded depth.
fn alternatives<'s>(schema: &'s serde_json::Value, root: &'s serde_json::Value, depth: usize, out: &mut Vec<&'s serde_json::Value>) {
    if depth > 16 {
        return;
    }
    out.push(schema);
    if let Some(r) = schema.get("$ref").and_then(|r| r.as_str()).and_then(|r| r.strip_prefix('#')) {
        if let Some(target) = root.pointer(r) {
            alternatives(target, root, depth + 1, out);
        }
    }
    for list in ["allOf", "anyOf", "oneOf"] {
        for s in schema.get(list).and_then(|l| l.as_array()).into_iter().flatten() {
            alternatives(s, root, depth + 1, out);
        }
    }
}

/// One shape for all of `schemas` (a value may be any of them); open past a bounded depth
/// (a recursive schema).
fn compile(schemas: &[&serde_json::Value], root: &serde_json::Value, depth: usize) -> Shape {
    if depth > 16 {
        return Shape::default();
    }
    let mut all = Vec::new();
    for s in schemas {
        alternatives(s, root, 0, &mut all);
    }
    let objects: Vec<&serde_json::Value> = all
        .iter()
        .copied()
        .filter(|s| {
            s.get("properties").is_some()
                || s.get("additionalProperties").is_some()
                || s.get("type").is_some_and(|t| t == "object" || t.as_array().is_some_and(|a| a.iter().any(|t| t == "object")))
        })
        .collect();
    let sub = |of: Vec<&serde_json::Value>| (!of.is_empty()).then(|| Box::new(compile(&of, root, depth + 1)));
    let keys = (!objects.is_empty()).then(|| {
        let names: std::collections::BTreeSet<&String> =
            objects.iter().filter_map(|s| s.get("properties").and_then(|p| p.as_object())).flat_map(|p| p.keys()).collect();
        names
            .into_iter()
            .map(|k| {
                let of: Vec<&serde_json::Value> = objects.iter().filter_map(|s| s.get("properties").and_then(|p| p.get(k))).collect();
                (k.clone(), compile(&of, root, depth + 1))
            })
            .collect()
    });
    Shape {
        keys,
        closed: !objects.is_empty() && objects.iter().all(|s| s.get("additionalProperties") == Some(&serde_json::Value::Bool(false))),
        other: sub(objects.iter().filter_map(|s| s.get("additionalProperties")).filter(|a| a.is_object()).collect()),
        items: sub(all.iter().filter_map(|s| s.get("items")).filter(|i| i.is_object()).collect()),
    }
}

/// Every key of `mapping`, at any depth, that `shape` does not allow. What the schema
/// leaves open (`env:`, `tasks:`) is not looked into.
pub(crate) fn unknown(mapping: &serde_yaml_ng::Mapping, shape: &Shape) -> Vec<Unknown> {
    let mut out = Vec::new();
    walk_mapping(mapping, shape, &mut Vec::new(), &mut out);
    out
}

fn walk(value: &serde_yaml_ng::Value, shape: &Shape, at: &mut Vec<Seg>, out: &mut Vec<Unknown>) {
    match value {
        serde_yaml_ng::Value::Mapping(m) => walk_mapping(m, shape, at, out),
        serde_yaml_ng::Value::Sequence(items) => {
            let Some(inner) = &shape.items else { return };
            for (i, item) in items.iter().enumerate() {
                at.push(Seg::Index(i));
                walk(item, inner, at, out);
                at.pop();
            }
        }
        serde_yaml_ng::Value::Tagged(t) => walk(&t.value, shape, at, out),
        _ => {}
    }
}

fn walk_mapping(m: &serde_yaml_ng::Mapping, shape: &Shape, at: &mut Vec<Seg>, out: &mut Vec<Unknown>) {
    let Some(keys) = &shape.keys else { return };
    let refused = |key: String, at: &[Seg], out: &mut Vec<Unknown>| {
        if shape.closed {
            out.push(Unknown { within: at.to_vec(), key, known: keys.keys().cloned().collect() });
        }
    };
    for (k, v) in m {
        let Some(key) = k.as_str() else {
            refused(show(k), at, out);
            continue;
        };
        match keys.get(key).or(shape.other.as_deref()) {
            // Only a mapping or a list holds keys to look into.
            Some(inner)
                if matches!(v, serde_yaml_ng::Value::Mapping(_) | serde_yaml_ng::Value::Sequence(_) | serde_yaml_ng::Value::Tagged(_)) =>
            {
                at.push(Seg::Key(key.to_string()));
                walk(v, inner, at, out);
                at.pop();
            }
            Some(_) => {}
            None => refused(key.to_string(), at, out),
        }
    }
}

fn show(v: &serde_yaml_ng::Value) -> String {
    serde_yaml_ng::to_string(v).map(|s| s.trim().to_string()).unwrap_or_else(|_| "?".into())
}

/// A problem for each key of `mapping` (read from `yaml`, whose first line is line
/// `first_line` of the file at `path`) that `shape` does not allow, at the key, in file order.
pub(crate) fn unknown_keys(
    path: &std::path::Path,
    yaml: &str,
    first_line: usize,
    mapping: &serde_yaml_ng::Mapping,
    shape: &Shape,
) -> Vec<Problem> {
    let mut out: Vec<Problem> = unknown(mapping, shape).iter().map(|u| u.problem(path, yaml, first_line, u.message())).collect();
    out.sort_by_key(|p| (p.line, p.column));
    out
}

/// What is wrong with a whole YAML file (`worker.yaml`, `.lore/guild-hall.yaml`) before its
/// type reads it: that it is not YAML (at the parser's position, counted in the file), else
/// [`unknown_keys`]; nothing when it is not a mapping (the type's own parse says so then).
pub(crate) fn check_file(path: &std::path::Path, text: &str, shape: &Shape) -> Vec<Problem> {
    match serde_yaml_ng::from_str::<serde_yaml_ng::Value>(text) {
        Ok(serde_yaml_ng::Value::Mapping(m)) => unknown_keys(path, text, 1, &m, shape),
        Ok(_) => Vec::new(),
        Err(e) => {
            let (line, col, said) = locate::yaml_error(&e, text, 1);
            vec![Problem::new(path, line, col, format!("invalid YAML: {said}"))]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, serde::Deserialize)]
    struct S {
        dependencies: Option<u8>,
        #[serde(rename = "time_out")]
        timeout: u8,
    }

    #[test]
    fn fields_are_serdes_own() {
        assert_eq!(fields::<S>(), ["dependencies", "time_out"]);
        let read: S = serde_json::from_str(r#"{"time_out": 3}"#).expect("an S");
        assert_eq!(read, S { dependencies: None, timeout: 3 }, "the keys it asks for are the ones it reads");
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

    #[derive(Debug, PartialEq, serde::Deserialize, schemars::JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct Outer {
        title: Option<String>,
        notes: Option<String>,
        dependencies: Option<Vec<String>>,
        limits: Option<Inner>,
        items: Option<Vec<Inner>>,
        env: Option<std::collections::BTreeMap<String, String>>,
    }

    #[derive(Debug, PartialEq, serde::Deserialize, schemars::JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct Inner {
        max_turns: Option<u64>,
    }

    /// Every unknown key, at any depth the schema closes, at the key itself counted in the file.
    #[test]
    fn every_unknown_key_at_any_depth_at_the_key() {
        let schema = Shape::of(&serde_json::to_value(schemars::schema_for!(Outer)).expect("schema"));
        let yaml = "title: T\nnotes: |\n  dependecies: no\n\"quoted\": 1\ndependecies: [a]\nlimits: {max_turn: 5}\nitems:\n  - max_turns: 1\n  - max_turn: 2\nenv: {ANY: x}\n";
        let m: serde_yaml_ng::Mapping = serde_yaml_ng::from_str(yaml).expect("yaml");
        let said: Vec<String> = unknown_keys(std::path::Path::new("c.md"), yaml, 2, &m, &schema).iter().map(|p| p.to_string()).collect();
        assert_eq!(
            said,
            [
                "c.md:5:1: unknown key `quoted` (known keys: dependencies, env, items, limits, notes, title)",
                "c.md:6:1: unknown key `dependecies`: did you mean `dependencies`?",
                "c.md:7:10: unknown key `max_turn` in `limits`: did you mean `max_turns`?",
                "c.md:10:5: unknown key `max_turn` in `items[2]`: did you mean `max_turns`?",
            ]
        );
        let flow = "{a: 1}\n";
        let m: serde_yaml_ng::Mapping = serde_yaml_ng::from_str(flow).expect("yaml");
        let said: Vec<String> =
            unknown_keys(std::path::Path::new("w.yaml"), flow, 1, &m, &Shape::closed(&["b"])).iter().map(|p| p.to_string()).collect();
        assert_eq!(said, ["w.yaml:1:2: unknown key `a`: did you mean `b`?"]);
        // What the shape allows, the type reads.
        let known = "title: T\nnotes: n\ndependencies: [a]\nlimits: {max_turns: 5}\nitems: [{max_turns: 1}]\nenv: {ANY: x}\n";
        let m: serde_yaml_ng::Mapping = serde_yaml_ng::from_str(known).expect("yaml");
        assert!(unknown(&m, &schema).is_empty());
        let read: Outer = serde_yaml_ng::from_str(known).expect("an Outer");
        let expected = Outer {
            title: Some("T".into()),
            notes: Some("n".into()),
            dependencies: Some(vec!["a".into()]),
            limits: Some(Inner { max_turns: Some(5) }),
            items: Some(vec![Inner { max_turns: Some(1) }]),
            env: Some([("ANY".to_string(), "x".to_string())].into()),
        };
        assert_eq!(read, expected);
    }
}
