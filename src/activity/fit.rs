//! Artifact edits that must land whatever a worker said: when the edits do not fit in the
//! frontmatter (its size limit), they are made again without the worker's text (or with a
//! pointer to the timeline in its place), and the timeline, which has all of it, says so.
//! Every kind shares it (commissions, meetings, plans), so a status change or a close is never
//! held up by a worker's words.

use std::path::Path;

use anyhow::{Context, Result};
use serde_json::{json, Map, Value as Json};

use crate::artifact::store::content_hash;
use crate::artifact::write::{self, Edit, WriteError};

/// The edits to make instead, when the first ones do not fit.
#[derive(Debug, Clone, Default)]
pub(crate) struct Shorter {
    pub(crate) edits: Vec<Edit>,
    /// What was left out, for the timeline's note ("the worker's progress, questions and
    /// result").
    pub(crate) what: String,
    /// Fields of the note: text left out that the timeline holds nowhere else.
    pub(crate) kept: Map<String, Json>,
}

/// `edits` applied to `text` (the artifact at `path`); if that cannot be written, the edits
/// `shorter` gives instead (`None`: nothing to leave out, the error stands), with an `anomaly`
/// in the artifact's timeline saying what was left out and why. The note's key names the file
/// and the edits, so a pass that meets the same again adds nothing, and a different one does.
pub(crate) fn apply(path: &Path, text: &str, edits: &[Edit], shorter: impl FnOnce(&WriteError) -> Option<Shorter>) -> Result<String> {
    let e = match write::apply(text, edits) {
        Ok(new) => return Ok(new),
        Err(e) => e,
    };
    let Some(instead) = shorter(&e) else {
        return Err(e).with_context(|| format!("editing {}", path.display()));
    };
    let new = write::apply(text, &instead.edits).with_context(|| format!("editing {} ({e})", path.display()))?;
    let asked = serde_json::to_string(edits).unwrap_or_default();
    let key = format!("frontmatter-full:{}:{}", content_hash(text), content_hash(&asked));
    let mut fields = instead.kept;
    fields.insert(
        "text".into(),
        json!(format!("{} do not fit in the frontmatter, so they were left out of it (they are in this timeline): {e}", instead.what)),
    );
    let now = super::timeline::timestamp(chrono::Utc::now());
    super::timeline::append(&super::timeline::path_for(path), &[super::timeline::event(&now, "anomaly", key, Json::Object(fields))])?;
    Ok(new)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_yaml_ng::Value;

    #[test]
    fn what_does_not_fit_is_left_out_and_noted_once() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("c.md");
        let text = "---\nstatus: open\n---\nbody\n";
        let big = vec![Edit::Set("status".into(), Value::from("closed")), Edit::Set("notes".into(), Value::from("x".repeat(70_000)))];
        let shorter = |_: &WriteError| {
            let mut kept = Map::new();
            kept.insert("notes".into(), json!("x".repeat(70_000)));
            Some(Shorter { edits: big[..1].to_vec(), what: "the notes".into(), kept })
        };
        let new = apply(&path, text, &big, shorter).expect("the status still goes in");
        assert!(new.contains("status: closed") && !new.contains("xxx"), "{new}");
        apply(&path, text, &big, shorter).expect("again");
        let log = super::super::timeline::read(&super::super::timeline::path_for(&path)).expect("log");
        assert_eq!(log.len(), 1, "noted once: {log:?}");
        assert!(log[0]["text"].as_str().unwrap_or("").starts_with("the notes do not fit in the frontmatter"), "{:?}", log[0]["text"]);
        assert_eq!(log[0]["notes"].as_str().map(str::len), Some(70_000), "what was left out is kept");
        // Nothing to leave out: the error stands, and nothing is noted.
        let err = apply(&path, text, &big, |_| None).expect_err("refused");
        assert!(format!("{err:#}").contains("frontmatter too large"), "{err:#}");
    }
}
