//! Splitting a markdown file into its YAML frontmatter and body, with the positions needed for
//! `file:line:col` errors and for splicing an edited frontmatter back byte-for-byte; the
//! mapping read as a kind's declaration; and the value readers and writer every artifact
//! shares (a `timeout:`, a key guild-hall owns, the YAML a renderer writes).

use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

use super::locate::{At, Seg};

/// A problem with a file, reported as `path:line:col: message`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Problem {
    pub(crate) path: PathBuf,
    pub(crate) line: usize,
    pub(crate) column: usize,
    pub(crate) message: String,
}

impl Problem {
    pub(crate) fn new(path: &Path, line: usize, column: usize, message: impl Into<String>) -> Problem {
        Problem { path: path.to_path_buf(), line, column, message: message.into() }
    }

    /// A problem at `key` of the frontmatter of the file at `path` (at its start when the key
    /// cannot be found, or the file read).
    pub(crate) fn at_key(path: &Path, key: &str, message: impl Into<String>) -> Problem {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let (line, col) = split(&text).map(|s| key_position(&s, key)).unwrap_or((1, 1));
        Problem::new(path, line, col, message)
    }

    /// A problem at the value at `at` (a path of keys and indexes, a plan task's `worker:`
    /// say) in the frontmatter of the file at `path` ([`value_position`]).
    pub(crate) fn at_value(path: &Path, at: &[Seg], message: impl Into<String>) -> Problem {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let (line, col) = split(&text).map(|s| value_position(&s, at)).unwrap_or((1, 1));
        Problem::new(path, line, col, message)
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}: {}", self.path.display(), self.line, self.column, self.message)
    }
}

/// Where the frontmatter sits in a file.
#[derive(Debug, Clone)]
pub(crate) struct Split<'a> {
    /// The YAML text between the delimiters (each line with its newline).
    pub(crate) yaml: &'a str,
    /// Byte range of `yaml` within the file.
    pub(crate) yaml_range: Range<usize>,
    /// 1-based line number of the first YAML line.
    pub(crate) first_line: usize,
    /// Everything after the closing delimiter line.
    pub(crate) body: &'a str,
}

/// The most frontmatter a file may have. Frontmatter holds settings, not content (that is the
/// body), and a bound keeps one odd file from stalling a pass for everyone.
pub(crate) const MAX_FRONTMATTER_BYTES: usize = 64 * 1024;

/// The deepest nesting of flow collections (`[`, `{`) accepted. The YAML scanner's work grows
/// with the square of this depth; real frontmatter never comes near it.
pub(crate) const MAX_FLOW_DEPTH: usize = 32;

/// Split `text` into frontmatter and body. The file must open with a `---` line (a UTF-8 byte
/// order mark before it is allowed) and the frontmatter ends at the next `---` (or `...`)
/// line. Frontmatter over [`MAX_FRONTMATTER_BYTES`] or nested deeper than [`MAX_FLOW_DEPTH`]
/// is refused before any YAML parser sees it.
pub(crate) fn split(text: &str) -> Result<Split<'_>, (usize, String)> {
    let first_end = match text.find('\n') {
        Some(i) => i + 1,
        None => return Err((1, "no frontmatter: the file must start with a '---' line".into())),
    };
    if text[..first_end].trim_start_matches('\u{feff}').trim_end() != "---" {
        return Err((1, "no frontmatter: the file must start with a '---' line".into()));
    }
    let mut pos = first_end;
    let mut line = 2;
    while pos < text.len() {
        if pos - first_end > MAX_FRONTMATTER_BYTES {
            return Err((2, format!("frontmatter too large: more than {MAX_FRONTMATTER_BYTES} bytes (put long text in the body)")));
        }
        let end = text[pos..].find('\n').map(|i| pos + i + 1).unwrap_or(text.len());
        let l = text[pos..end].trim_end();
        if l == "---" || l == "..." {
            let yaml = &text[first_end..pos];
            if let Some((at, depth)) = too_deep(yaml) {
                return Err((2 + at, format!("frontmatter nests too deeply: {depth} levels of '[' or '{{' (at most {MAX_FLOW_DEPTH})")));
            }
            return Ok(Split { yaml, yaml_range: first_end..pos, first_line: 2, body: &text[end..] });
        }
        pos = end;
        line += 1;
    }
    Err((line, "frontmatter is not closed: no '---' line after the opening one".into()))
}

/// An artifact read whole: its id (the file stem, validated), its frontmatter split out, and
/// the frontmatter as a mapping; or the problems, with positions. The meeting and plan
/// parsers start here (the commission parser keeps a reader of its own, for speed).
pub(crate) fn read_mapping<'a>(path: &Path, text: &'a str) -> Result<(String, Split<'a>, serde_yaml_ng::Mapping), Vec<Problem>> {
    use serde_yaml_ng::{Mapping, Value};
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    let at = |line, col, msg: String| vec![Problem::new(path, line, col, msg)];
    if let Err(e) = super::ids::validate_id(stem) {
        return Err(at(1, 1, format!("bad file name: {e}")));
    }
    let sp = split(text).map_err(|(line, msg)| at(line, 1, msg))?;
    let fields = if sp.yaml.trim().is_empty() {
        Mapping::new()
    } else {
        match serde_yaml_ng::from_str::<Value>(sp.yaml) {
            Ok(Value::Mapping(m)) => m,
            Ok(Value::Null) => Mapping::new(),
            Ok(_) => return Err(at(sp.first_line, 1, "the frontmatter must be a mapping of keys to values".into())),
            Err(e) => {
                let (line, col, said) = super::locate::yaml_error(&e, sp.yaml, sp.first_line);
                return Err(at(line, col, format!("invalid YAML: {said}")));
            }
        }
    };
    Ok((stem.to_string(), sp, fields))
}

/// A frontmatter mapping as YAML text, as every renderer writes it. A mapping of strings,
/// numbers and lists of them always serialises; were one ever refused, it is written empty
/// and the parser the write goes through refuses the file.
pub(crate) fn to_yaml(fm: &serde_yaml_ng::Mapping) -> String {
    serde_yaml_ng::to_string(fm).unwrap_or_default()
}

/// The frontmatter `fields` as the kind's declaration `T` (its keys, each value kept as
/// written for the parser to validate in its own words). Keys that are not strings are left
/// out: no kind declares one, and the unknown-key check says so at the key.
pub(crate) fn declared<T: serde::de::DeserializeOwned + Default>(fields: &serde_yaml_ng::Mapping) -> T {
    // Read in place (each value copied once, into `T`): every parse of every artifact pays this.
    let named = fields.iter().filter_map(|(k, v)| Some((k.as_str()?, InPlace(v))));
    // Every value is taken as written and every other key skipped: nothing here can fail.
    T::deserialize(serde::de::value::MapDeserializer::<_, serde_yaml_ng::Error>::new(named)).unwrap_or_default()
}

/// A declared key the parser does not read from the declaration (kept as written in the
/// mapping, read where it is shown): skipped, not copied, on every parse.
#[derive(Debug, Default)]
pub(crate) struct Unread;

impl<'de> serde::Deserialize<'de> for Unread {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Unread, D::Error> {
        <serde::de::IgnoredAny as serde::Deserialize>::deserialize(d).map(|_| Unread)
    }
}

/// A value of a mapping, deserialised where it is.
struct InPlace<'a>(&'a serde_yaml_ng::Value);

impl<'a> serde::de::IntoDeserializer<'a, serde_yaml_ng::Error> for InPlace<'a> {
    type Deserializer = &'a serde_yaml_ng::Value;

    fn into_deserializer(self) -> &'a serde_yaml_ng::Value {
        self.0
    }
}

/// A key the reconciler writes, as text: none when absent or of another type (a hand edit).
pub(crate) fn owned_text(v: Option<serde_yaml_ng::Value>) -> Option<String> {
    match v {
        Some(serde_yaml_ng::Value::String(s)) => Some(s),
        _ => None,
    }
}

/// The 0-based line where flow nesting first passes [`MAX_FLOW_DEPTH`], and that depth. Quoted
/// scalars and comments are skipped; anything the scan gets wrong the YAML parser reports.
fn too_deep(yaml: &str) -> Option<(usize, usize)> {
    // Nesting deeper than the limit needs more openers than the limit: counting bytes is a
    // fraction of the walk below, and almost every artifact stops here.
    if yaml.bytes().filter(|b| matches!(b, b'[' | b'{')).count() <= MAX_FLOW_DEPTH {
        return None;
    }
    let (mut depth, mut line) = (0usize, 0usize);
    let mut quote: Option<char> = None;
    let mut comment = false;
    let mut prev = ' ';
    for c in yaml.chars() {
        if c == '\n' {
            line += 1;
            comment = false;
        } else if comment {
        } else if let Some(q) = quote {
            if c == q {
                quote = None;
            }
        } else {
            match c {
                '\'' | '"' => quote = Some(c),
                '#' if prev.is_whitespace() => comment = true,
                '[' | '{' => {
                    depth += 1;
                    if depth > MAX_FLOW_DEPTH {
                        return Some((line, depth));
                    }
                }
                ']' | '}' => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
        prev = c;
    }
    None
}

/// 1-based (line, column) of a top-level `key:` in the YAML, for error messages.
pub(crate) fn key_position(split: &Split<'_>, key: &str) -> (usize, usize) {
    for (i, l) in split.yaml.lines().enumerate() {
        if let Some(rest) = l.strip_prefix(key) {
            if rest.trim_start().starts_with(':') {
                // Point at the value: the first non-blank after the colon (1-based).
                let colon = l.find(':').unwrap_or(0);
                let value = l[colon + 1..].find(|c: char| c != ' ').map(|o| colon + 1 + o).unwrap_or(colon);
                return (split.first_line + i, value + 1);
            }
        }
    }
    (split.first_line, 1)
}

/// 1-based (line, column) in the file of the value at `at` in the frontmatter; else of the
/// nearest thing holding it that is there (a task without `worker:`: the task), else of the
/// frontmatter's first line.
pub(crate) fn value_position(split: &Split<'_>, at: &[Seg]) -> (usize, usize) {
    let mut at = at;
    while !at.is_empty() {
        if let Some((line, col)) = super::locate::position(split.yaml, at, At::Value) {
            return (split.first_line + line - 1, col);
        }
        at = &at[..at.len() - 1];
    }
    (split.first_line, 1)
}

/// A `timeout:` (a commission's, a plan's, a task's): a duration such as `90m` or `4h`, `0s`
/// for none; else what is wrong with it.
pub(crate) fn timeout(v: &serde_yaml_ng::Value) -> Result<std::time::Duration, NotADuration> {
    let not_one = |shown: String| NotADuration { key: "timeout".into(), shown };
    match v {
        serde_yaml_ng::Value::String(t) => humantime::parse_duration(t).map_err(|_| not_one(format!("{t:?}"))),
        _ => Err(not_one(serde_yaml_ng::to_string(v).map(|s| s.trim().to_string()).unwrap_or_else(|_| "?".into()))),
    }
}

/// A value of `key` (`shown` as written) that is not a duration, said with how to write one,
/// not the duration parser's own words ("expected number at 0").
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key} {shown} is not a duration: write it like 30m, 2h or 90s")]
pub(crate) struct NotADuration {
    pub(crate) key: String,
    pub(crate) shown: String,
}

/// What is said of a value of `key` (`shown` as written) that is not a duration ([`NotADuration`]).
pub(crate) fn not_a_duration(key: &str, shown: &str) -> String {
    NotADuration { key: key.into(), shown: shown.into() }.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits() {
        let s = split("---\na: 1\n---\nbody\n").unwrap();
        assert_eq!(s.yaml, "a: 1\n");
        assert_eq!(s.body, "body\n");
        assert_eq!(&"---\na: 1\n---\nbody\n"[s.yaml_range.clone()], "a: 1\n");
        assert!(split("no frontmatter").is_err());
        assert!(split("---\na: 1\n").is_err());
        let s = split("\u{feff}---\na: 1\n---\nbody\n").expect("a byte order mark is accepted");
        assert_eq!(s.yaml, "a: 1\n");
        let deep = format!("---\na: {}\n---\nbody\n", "[".repeat(40));
        assert!(split(&deep).unwrap_err().1.contains("nests too deeply"));
        let big = format!("---\na: |\n{}---\nbody\n", "  x\n".repeat(20_000));
        assert!(split(&big).unwrap_err().1.contains("frontmatter too large"));
        let quoted = format!("---\na: \"{}\"\n---\nbody\n", "[".repeat(40));
        assert!(split(&quoted).is_ok(), "brackets in a quoted string are text");
        let s = split("---\r\na: 1\r\n---\r\n").unwrap();
        assert_eq!(s.yaml, "a: 1\r\n");
    }

    #[test]
    fn key_positions() {
        let text = "---\ntitle: x\nstatus: banana\n---\n";
        let s = split(text).unwrap();
        assert_eq!(key_position(&s, "status"), (3, 9));
    }
}
