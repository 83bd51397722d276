//! Applying an update, the same for every kind: its timeline entries, its edits to the artifact
//! (made only to the artifact it was decided on), its record and its mailbox folds, in one
//! order that a process killed between any two steps leaves for the next pass to finish.
//!
//! The order, and why. The timeline and the files in the state dir are guild-hall's own; the
//! artifact is shared with a person, whose save always wins (the edits are dropped). The
//! record and the artifact are read together by the planner, which takes a status in the
//! artifact that differs from the record as a person's request: were either written alone,
//! the next pass could not tell our own half-done write from a request (an artifact ahead of
//! the record looks like a person asking for the new status; a record ahead of the artifact,
//! like a person putting the old one back), and would refuse it or act on it. So the two are
//! made one step for every reader:
//!
//! 1. the timeline: facts, deduplicated by key, so writing them again is harmless;
//! 2. the intent (`apply.json` in the state dir): the artifact's text before and after, and
//!    every state file to write, written atomically;
//! 3. the artifact, replaced only if it is still the one observed (`replace_if_unchanged`);
//! 4. the record, then 5. the folds (how far each mailbox was read: last, so a pass that dies
//!    before reads the same mail again, and the timeline drops what it already has);
//! 6. the intent removed.
//!
//! Whoever reads the record first [`settle`]s an intent left behind: the artifact as it was →
//! the edits are made now, then the state files; as we made it → the state files; anything
//! else (a person saved in between) → dropped like a live write that met a person's save.
//!
//! A dropped update writes no record and no fold: the record, the edits and the read position
//! were all decided on an artifact that is no longer there, so all of them go and the next pass
//! decides again. What an action did before its update (a branch, a merge, a worktree removed)
//! is idempotent and is found again by the next pass, as after a crash before the update.
//! The hidden fault switch `GUILD_HALL_FAULT=<kind>-apply:<step>` stops the process dead after
//! each step (tests).

use std::path::{Component, Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use super::fit::Shorter;
use super::timeline;
use super::Outcome;
use crate::artifact::store::{content_hash, replace_if_unchanged};
use crate::artifact::write::{Edit, WriteError};
use crate::files::{read_json, remove_if_exists, write_json};

/// The intent's file name in the state dir.
const INTENT: &str = "apply.json";

/// One state file an update writes: `rel` under the kind's state dir.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Write {
    pub rel: PathBuf,
    pub value: Json,
}

impl Write {
    /// `value` to be written at `path`, a file under the state dir `state`.
    pub fn at<T: Serialize>(state: &Path, path: &Path, value: &T) -> Result<Write> {
        let rel = path.strip_prefix(state).with_context(|| format!("{} is not under {}", path.display(), state.display()))?;
        Ok(Write { rel: rel.to_path_buf(), value: serde_json::to_value(value)? })
    }
}

/// What every kind's update is made of (each kind's planner builds its own struct; this is
/// how the one apply reads it).
pub trait Update {
    /// The timeline entries (deduplicated by key when appended).
    fn events(&self) -> &[Json];
    /// The artifact's content hash when observed: everything but the timeline is dropped if
    /// it changed.
    fn expect_hash(&self) -> u64;
    fn edits(&self) -> &[Edit];
    /// The record, if it changes (`record.json` in the state dir).
    fn record(&self) -> Result<Option<Json>>;
    /// How far mailboxes were read: files under the state dir `state`, written last.
    fn folds(&self, state: &Path) -> Result<Vec<Write>>;
}

/// The parts of [`Update`] every kind's update struct holds under the same names (`events`,
/// `expect_hash`, `edits`, `record`): written once, inside each kind's `impl Update`.
macro_rules! update_fields {
    () => {
        fn events(&self) -> &[serde_json::Value] {
            &self.events
        }
        fn expect_hash(&self) -> u64 {
            self.expect_hash
        }
        fn edits(&self) -> &[$crate::artifact::write::Edit] {
            &self.edits
        }
        fn record(&self) -> anyhow::Result<Option<serde_json::Value>> {
            Ok(self.record.as_ref().map(serde_json::to_value).transpose()?)
        }
    };
}
pub(crate) use update_fields;

/// Where one activity's update goes.
pub struct Place<'a> {
    /// `commission`, `meeting`, `plan`: names the fault switch's steps.
    pub kind: &'a str,
    pub artifact: &'a Path,
    /// The state dir: the record, the folds and the intent are under it.
    pub state: &'a Path,
}

impl Place<'_> {
    fn intent(&self) -> PathBuf {
        self.state.join(INTENT)
    }
    fn fault(&self, step: u32) {
        super::fault(&format!("{}-apply", self.kind), step);
    }
}

/// An update between its timeline entries and its last state file.
#[derive(Debug, Serialize, Deserialize)]
struct Intent {
    /// The artifact's hash as observed, and as our edits make it.
    before: u64,
    after: u64,
    /// The artifact's text after our edits (`None`: no edit to make).
    text: Option<String>,
    record: Option<Write>,
    folds: Vec<Write>,
}

/// Apply `u` (see the module doc for the order). `shorter`: the edits to make instead when
/// they do not fit in the frontmatter (given the artifact's text).
pub fn apply<U: Update + ?Sized>(place: &Place<'_>, u: &U, shorter: impl FnOnce(&str, &WriteError) -> Option<Shorter>) -> Result<Outcome> {
    timeline::append(&timeline::path_for(place.artifact), u.events())?;
    place.fault(1);
    let record_file = super::state::StateDir(place.state.to_path_buf()).record();
    let record = u.record()?.map(|r| Write::at(place.state, &record_file, &r)).transpose()?;
    let folds = u.folds(place.state)?;
    if u.edits().is_empty() && record.is_none() && folds.is_empty() {
        return Ok(Outcome::Done);
    }
    let Some(text) = observed(place.artifact, u.expect_hash())? else { return Ok(Outcome::Dropped) };
    let new = if u.edits().is_empty() {
        None
    } else {
        let new = super::fit::apply(place.artifact, &text, u.edits(), |e| shorter(&text, e))?;
        (new != text).then_some(new)
    };
    let intent =
        Intent { before: u.expect_hash(), after: new.as_deref().map(content_hash).unwrap_or(u.expect_hash()), text: new, record, folds };
    std::fs::create_dir_all(place.state).with_context(|| format!("creating {}", place.state.display()))?;
    write_json(&place.intent(), &intent)?;
    place.fault(2);
    finish(place, &intent)
}

/// Finish an update a killed pass left half-applied (its intent is still there), before the
/// record is read: see the module doc. Nothing to do when there is none.
pub fn settle(place: &Place<'_>) -> Result<()> {
    let path = place.intent();
    let Some(intent) = read_json::<Intent>(&path)? else { return Ok(()) };
    finish(place, &intent).map(|_| ())
}

/// [`settle`] the update of the artifact at `artifact` (its state dir: `state_of` its id), before
/// the artifact and its record are read. An artifact with a bad file name has no state: the
/// parser reports it.
pub fn settle_artifact(kind: &str, artifact: &Path, state_of: impl FnOnce(&str) -> PathBuf) -> Result<()> {
    let Some(id) = artifact.file_stem().and_then(|s| s.to_str()).filter(|id| crate::artifact::ids::validate_id(id).is_ok()) else {
        return Ok(());
    };
    let state = state_of(id);
    settle(&Place { kind, artifact, state: &state })
        .with_context(|| format!("finishing the update a killed pass left in {}", state.join(INTENT).display()))
}

/// An update is under way, or was left half-applied, in the state dir `state`.
pub fn pending(state: &Path) -> bool {
    std::fs::symlink_metadata(state.join(INTENT)).is_ok()
}

/// The artifact's text if it still hashes to `expect`; `None` if a person saved (or removed it)
/// since it was observed.
fn observed(path: &Path, expect: u64) -> Result<Option<String>> {
    match crate::artifact::read_regular(path) {
        Ok(text) => Ok((content_hash(&text) == expect).then_some(text)),
        Err(crate::artifact::ReadError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

/// Steps 3 to 6 of the order, from the intent: each one done again is harmless.
fn finish(place: &Place<'_>, intent: &Intent) -> Result<Outcome> {
    let landed = match &intent.text {
        None => observed(place.artifact, intent.before)?.is_some(),
        Some(new) => {
            observed(place.artifact, intent.after)?.is_some()
                || (observed(place.artifact, intent.before)?.is_some()
                    && replace_if_unchanged(place.artifact, intent.before, new.as_bytes())?)
        }
    };
    if !landed {
        remove_if_exists(&place.intent())?;
        return Ok(Outcome::Dropped);
    }
    place.fault(3);
    if let Some(w) = &intent.record {
        write_json(&under(place.state, &w.rel)?, &w.value)?;
    }
    place.fault(4);
    for w in &intent.folds {
        write_json(&under(place.state, &w.rel)?, &w.value)?;
    }
    place.fault(5);
    remove_if_exists(&place.intent())?;
    Ok(Outcome::Done)
}

/// `rel` under `state`, refused if it would lead out of it (an intent is read back from disk).
fn under(state: &Path, rel: &Path) -> Result<PathBuf> {
    if rel.as_os_str().is_empty() || !rel.components().all(|c| matches!(c, Component::Normal(_))) {
        bail!("{}: {} is not a path under the state dir", state.join(INTENT).display(), rel.display());
    }
    let path = state.join(rel);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    Ok(path)
}
