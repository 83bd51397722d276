//! Splitting a markdown file into its YAML frontmatter and body, with the positions needed for
//! `file:line:col` errors and for splicing an edited frontmatter back byte-for-byte.

use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

/// A problem with a file, reported as `path:line:col: message`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Problem {
    pub path: PathBuf,
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl Problem {
    pub fn new(path: &Path, line: usize, column: usize, message: impl Into<String>) -> Problem {
        Problem { path: path.to_path_buf(), line, column, message: message.into() }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}: {}", self.path.display(), self.line, self.column, self.message)
    }
}

/// Where the frontmatter sits in a file.
#[derive(Debug, Clone)]
pub struct Split<'a> {
    /// The YAML text between the delimiters (each line with its newline).
    pub yaml: &'a str,
    /// Byte range of `yaml` within the file.
    pub yaml_range: Range<usize>,
    /// 1-based line number of the first YAML line.
    pub first_line: usize,
    /// Everything after the closing delimiter line.
    pub body: &'a str,
}

/// Split `text` into frontmatter and body. The file must open with a `---` line and the
/// frontmatter ends at the next `---` (or `...`) line.
pub fn split(text: &str) -> Result<Split<'_>, (usize, String)> {
    let first_end = match text.find('\n') {
        Some(i) => i + 1,
        None => return Err((1, "no frontmatter: the file must start with a '---' line".into())),
    };
    if text[..first_end].trim_end() != "---" {
        return Err((1, "no frontmatter: the file must start with a '---' line".into()));
    }
    let mut pos = first_end;
    let mut line = 2;
    while pos < text.len() {
        let end = text[pos..].find('\n').map(|i| pos + i + 1).unwrap_or(text.len());
        let l = text[pos..end].trim_end();
        if l == "---" || l == "..." {
            return Ok(Split { yaml: &text[first_end..pos], yaml_range: first_end..pos, first_line: 2, body: &text[end..] });
        }
        pos = end;
        line += 1;
    }
    Err((line, "frontmatter is not closed: no '---' line after the opening one".into()))
}

/// 1-based (line, column) of a top-level `key:` in the YAML, for error messages.
pub fn key_position(split: &Split<'_>, key: &str) -> (usize, usize) {
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
