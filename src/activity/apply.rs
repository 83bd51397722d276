//! Applying an update, the same for every kind: its timeline entries, its edits to the artifact
//! (made only to the artifact it was decided on), its record and its mailbox folds, in one
//! order that a process killed between any two steps leaves for the next pass to finish.
//!
//! The order, and why. The timeline and the files in the state dir are guild-hall's own; the
//! artifact is shared with a person, whose save always wins (the edits are dropped). The
//! record and the artifact are read together by the decider, which takes a status in the
//! artifact that differs from the record as a person's request: were either written alone,
//! the next pass could not tell our own half-done write from a request (an artifact ahead of
//! the record looks like a person asking for the new status; a record ahead of the artifact,
//! like a person putting the old one back), and would refuse it or act on it. Neither plain
//! order was right for every kind: a plan killed between its artifact and its record never got
//! past `draft`, and a commission's `prev` covers only its own status. So the two are made one
//! step for every reader:
//!
//! 1. the timeline: facts, deduplicated by key, so writing them again is harmless;
//! 2. the intent (`intents/<kind>.<id>.json` in the project's state dir): the artifact's hash
//!    before and after, its new text, and every state file to write, written atomically;
//! 3. the artifact, replaced only if it is still the one observed (`replace_if_unchanged`),
//!    then the intent written again as landed (an update with no edit is landed from step 2);
//! 4. the record, then 5. the folds (how far each mailbox was read: last, so a pass that dies
//!    before reads the same mail again, and the timeline drops what it already has);
//! 6. the intent removed.
//!
//! The next pass that acts [`settle`]s every intent left behind, under the project lock and
//! before it observes anything. A landed intent → the state files, whatever the artifact says
//! now: once our text is in, any later save (a person's, or guild-hall's own writers: a
//! meeting's session id, a request) is built on it, so the record goes with it. One not
//! landed: the artifact as it was → the edits are made now, then the state files; as we made
//! it → the state files (killed between the replace and the mark); anything else (a person
//! saved in between) → dropped like a live write that met a person's save. (Only a pass
//! settles: a read-only command or a dry run shows the state as it was before the killed
//! update.) An intent that cannot be read or finished is reported, and its artifact left
//! alone, never the project. What is left open: a kill between the replace and the mark,
//! then a save before the next pass, drops the update (the two files cannot change as one).
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
use super::kind::Name;
use super::timeline;
use super::Outcome;
use crate::artifact::store::{content_hash, replace_if_unchanged};
use crate::artifact::write::{Edit, WriteError};
use crate::artifact::Problem;
use crate::config::{Home, Project};
use crate::files::{read_json, remove_if_exists, write_json};

/// One state file an update writes: `rel` under the kind's state dir.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Write {
    rel: PathBuf,
    value: Json,
}

impl Write {
    /// `value` to be written at `path`, a file under the state dir `state`.
    fn at<T: Serialize>(state: &Path, path: &Path, value: &T) -> Result<Write> {
        let rel = path.strip_prefix(state).with_context(|| format!("{} is not under {}", path.display(), state.display()))?;
        Ok(Write { rel: rel.to_path_buf(), value: serde_json::to_value(value)? })
    }
}

/// One activity's update, the same struct for every kind: its timeline entries, its edits to
/// the artifact, its record (`R`: the kind's own) and how far its mailboxes were read (`F`:
/// what the kind folds, [`Folds`]). Each kind's decider builds it through
/// [`changes`](super::changes); [`apply`] writes it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(bound(serialize = "R: Serialize, F: Serialize + Folds"))]
pub struct Update<R, F> {
    pub(crate) id: String,
    /// The artifact's content hash when observed: everything but the timeline is dropped if
    /// it changed.
    pub(crate) expect_hash: u64,
    pub(crate) edits: Vec<Edit>,
    /// The record, if it changes (`record.json` in the state dir).
    pub(crate) record: Option<R>,
    /// The timeline entries (deduplicated by key when appended).
    pub(crate) events: Vec<Json>,
    /// How far the mailboxes were read: written last, once the events are in the timeline.
    #[serde(skip_serializing_if = "Folds::is_empty")]
    pub(crate) fold: F,
}

impl<R, F: Default> Update<R, F> {
    /// An update of `id` that changes nothing yet.
    pub(crate) fn new(id: &str, expect_hash: u64) -> Update<R, F> {
        Update { id: id.to_string(), expect_hash, edits: Vec::new(), record: None, events: Vec::new(), fold: F::default() }
    }
}

impl<R, F: Folds> Update<R, F> {
    /// Nothing to write.
    pub(crate) fn is_empty(&self) -> bool {
        self.edits.is_empty() && self.record.is_none() && self.events.is_empty() && self.fold.is_empty()
    }
}

/// How far a kind's mailboxes were read, as its update carries it.
pub trait Folds {
    /// Nothing was read.
    fn is_empty(&self) -> bool;
    /// (file, what it holds) for activity `id`: files under its state dir.
    fn files(&self, home: &Home, project: &Project, id: &str) -> Result<Vec<(PathBuf, Json)>>;
}

/// Where one activity's update goes.
pub(crate) struct Place<'a> {
    home: &'a Home,
    project: &'a Project,
    kind: Name,
    artifact: PathBuf,
    /// The state dir: the record and the folds are under it.
    state: PathBuf,
    /// The intent: `intents/<kind>.<id>.json` in the project's state dir, one small dir a pass
    /// lists to [`settle`] them all.
    intent: PathBuf,
}

impl<'a> Place<'a> {
    /// The artifact, state dir and intent of `kind`'s `id`, all named from the id.
    pub(crate) fn new(home: &'a Home, project: &'a Project, kind: Name, id: &str) -> Place<'a> {
        let (artifact, state) = match kind {
            Name::Commission => (project.commission_path(id), home.commission_state(&project.name, id)),
            Name::Meeting => (project.meeting_path(id), home.meeting_state(&project.name, id)),
            Name::Plan => (project.plan_path(id), home.plan_state(&project.name, id)),
        };
        Place { home, project, kind, artifact, state, intent: intent_path(home, project, kind, id) }
    }
    fn fault(&self, step: u32) {
        super::fault(&format!("{}-apply", self.kind), step);
    }
}

fn intents(home: &Home, project: &Project) -> PathBuf {
    home.project_state(&project.name).join("intents")
}

/// Where an update of `kind`'s `id` that a killed pass left half-applied waits to be settled.
pub(crate) fn intent_path(home: &Home, project: &Project, kind: Name, id: &str) -> PathBuf {
    intents(home, project).join(format!("{kind}.{id}.json"))
}

/// An update between its timeline entries and its last state file.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Intent {
    /// The artifact's hash as observed, and as our edits make it.
    before: u64,
    after: u64,
    /// The artifact's text after our edits (`None`: no edit to make).
    text: Option<String>,
    record: Option<Write>,
    folds: Vec<Write>,
    /// The artifact is as the update makes it (or needed no edit and was as observed): from
    /// here on a save built on our text may follow, so the rest is written whatever the
    /// artifact says. (Absent in an intent written before this field: not landed.)
    #[serde(default)]
    landed: bool,
}

/// Apply `u` (see the module doc for the order). `shorter`: the edits to make instead when
/// they do not fit in the frontmatter (given the artifact's text).
pub(crate) fn apply<R: Serialize, F: Folds>(
    place: &Place<'_>,
    u: &Update<R, F>,
    shorter: impl FnOnce(&str, &WriteError) -> Option<Shorter>,
) -> Result<Outcome> {
    Ok(apply_hashed(place, u, shorter)?.0)
}

/// [`apply`], and the artifact's hash as the update left it (when done): what an action that
/// goes on after one update expects for its next.
pub(crate) fn apply_hashed<R: Serialize, F: Folds>(
    place: &Place<'_>,
    u: &Update<R, F>,
    shorter: impl FnOnce(&str, &WriteError) -> Option<Shorter>,
) -> Result<(Outcome, u64)> {
    timeline::append(&timeline::path_for(&place.artifact), &u.events)?;
    place.fault(1);
    let record_file = super::state::StateDir(place.state.clone()).record();
    let record = u.record.as_ref().map(|r| Write::at(&place.state, &record_file, r)).transpose()?;
    let folds = u
        .fold
        .files(place.home, place.project, &u.id)?
        .iter()
        .map(|(path, v)| Write::at(&place.state, path, v))
        .collect::<Result<Vec<_>>>()?;
    if u.edits.is_empty() && record.is_none() && folds.is_empty() {
        return Ok((Outcome::Done, u.expect_hash));
    }
    // An intent still there is one settling could not finish (a stop's update comes this far
    // even for an artifact left alone): it is the only record of what a killed update left, so
    // it is never overwritten, and nothing decided on that half-applied state is written.
    if std::fs::symlink_metadata(&place.intent).is_ok() {
        return Ok((
            Outcome::Waiting(format!("an unfinished update waits in {}: repair or remove it", place.intent.display())),
            u.expect_hash,
        ));
    }
    let Some(text) = observed(&place.artifact, u.expect_hash)? else { return Ok((Outcome::Dropped, u.expect_hash)) };
    let mut folds = folds;
    let new = if place.kind == Name::Commission && crate::artifact::dialect::is_dialect(&text) {
        in_dialect(place, &text, u, &mut folds)?
    } else if u.edits.is_empty() {
        None
    } else {
        let new = super::fit::apply(&place.artifact, &text, &u.edits, |e| shorter(&text, e))?;
        (new != text).then_some(new)
    };
    // With no edit, the artifact was just seen as observed: nothing of ours is left to land.
    let landed = new.is_none();
    let intent = Intent {
        before: u.expect_hash,
        after: new.as_deref().map(content_hash).unwrap_or(u.expect_hash),
        text: new,
        record,
        folds,
        landed,
    };
    if let Some(dir) = place.intent.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    write_json(&place.intent, &intent)?;
    place.fault(2);
    Ok((finish(place, &intent)?, intent.after))
}

/// The new text of a commission in Guild Hall's dialect (`None`: no change), its keys that
/// have no place in the file written to the state dir with the record ([`Write`] in `folds`):
/// see [`crate::artifact::dialect`].
fn in_dialect<R, F: Folds>(place: &Place<'_>, text: &str, u: &Update<R, F>, folds: &mut Vec<Write>) -> Result<Option<String>> {
    use crate::artifact::dialect;
    let status = crate::artifact::frontmatter::split(text)
        .ok()
        .and_then(|sp| serde_yaml_ng::from_str::<serde_yaml_ng::Mapping>(sp.yaml).ok())
        .and_then(|m| m.get("status").and_then(|s| s.as_str()).map(str::to_string));
    let t = dialect::translate(status.as_deref(), &u.edits, &u.events, &timeline::timestamp(chrono::Utc::now()));
    if !t.kept.is_empty() {
        let file = place.state.join(dialect::KEPT_FILE);
        let before: serde_yaml_ng::Mapping = read_json(&file)?.unwrap_or_default();
        let after = dialect::keep(&before, &t.kept);
        if after != before {
            folds.push(Write::at(&place.state, &file, &after)?);
        }
    }
    if t.file.is_empty() && t.entries.is_empty() && t.body.is_none() {
        return Ok(None);
    }
    let new = dialect::apply(text, &t).with_context(|| format!("writing {}", place.artifact.display()))?;
    Ok((new != text).then_some(new))
}

/// An intent [`settle`] could not finish: what the killed update left of its artifact is not
/// known, so nothing may be done for that artifact until the intent is repaired or removed.
#[derive(Debug)]
pub(crate) struct Unsettled {
    pub(crate) kind: Name,
    pub(crate) id: String,
    /// Names the intent file and why.
    pub(crate) problem: Problem,
}

/// Finish every update a killed pass left half-applied in `project` (see the module doc): the
/// first thing a pass that acts does, under the project lock, before anything is observed. An
/// intent that cannot be read or finished is one artifact's trouble, not the project's: it is
/// returned, and the others are settled all the same.
pub(crate) fn settle(home: &Home, project: &Project) -> Result<Vec<Unsettled>> {
    let dir = intents(home, project);
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("reading {}", dir.display())),
    };
    let mut unsettled = Vec::new();
    for e in entries {
        let path = e.with_context(|| format!("reading {}", dir.display()))?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("").to_string();
        // `<kind>.<id>.json`; anything else (a temp file of a write that died) is not an intent.
        let Some((kind, id)) = name.strip_suffix(".json").and_then(|n| n.split_once('.')) else { continue };
        let Some(kind) = Name::ALL.into_iter().find(|k| k.as_str() == kind) else { continue };
        if crate::artifact::ids::validate_id(id).is_err() {
            continue;
        }
        let place = Place::new(home, project, kind, id);
        let settled = read_json::<Intent>(&place.intent).and_then(|intent| intent.map(|i| finish(&place, &i)).transpose());
        if let Err(e) = settled {
            let why = format!(
                "the update a killed pass left here cannot be finished ({e:#}): nothing is done for {kind} {id} until this file is repaired or removed"
            );
            unsettled.push(Unsettled { kind, id: id.to_string(), problem: Problem::new(&place.intent, 1, 1, why) });
        }
    }
    Ok(unsettled)
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
    if !intent.landed {
        let landed = match &intent.text {
            None => observed(&place.artifact, intent.before)?.is_some(),
            Some(new) => {
                observed(&place.artifact, intent.after)?.is_some()
                    || (observed(&place.artifact, intent.before)?.is_some()
                        && replace_if_unchanged(&place.artifact, intent.before, new.as_bytes())?)
            }
        };
        if !landed {
            remove_if_exists(&place.intent)?;
            return Ok(Outcome::Dropped);
        }
        // Durable before anything else is written: a save after this point may be built on
        // our text, and must not make the next pass drop the record that goes with it.
        write_json(&place.intent, &Intent { landed: true, ..intent.clone() })?;
    }
    place.fault(3);
    if let Some(w) = &intent.record {
        write_json(&under(&place.state, &w.rel)?, &w.value)?;
    }
    place.fault(4);
    for w in &intent.folds {
        write_json(&under(&place.state, &w.rel)?, &w.value)?;
    }
    place.fault(5);
    remove_if_exists(&place.intent)?;
    Ok(Outcome::Done)
}

/// `rel` under `state`, refused if it would lead out of it (an intent is read back from disk).
fn under(state: &Path, rel: &Path) -> Result<PathBuf> {
    if rel.as_os_str().is_empty() || !rel.components().all(|c| matches!(c, Component::Normal(_))) {
        bail!("{} is not a path under the state dir {}", rel.display(), state.display());
    }
    let path = state.join(rel);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// An update with no mailbox to fold.
    #[derive(Debug, Clone, Default, PartialEq, Serialize)]
    struct NoFold;

    impl Folds for NoFold {
        fn is_empty(&self) -> bool {
            true
        }
        fn files(&self, _: &Home, _: &Project, _: &str) -> Result<Vec<(PathBuf, Json)>> {
            Ok(Vec::new())
        }
    }

    /// A mailbox fold to write, for the shape tests.
    #[derive(Debug, Clone, Default, PartialEq, Serialize)]
    struct SomeFold(Option<u32>);

    impl Folds for SomeFold {
        fn is_empty(&self) -> bool {
            self.0.is_none()
        }
        fn files(&self, _: &Home, _: &Project, id: &str) -> Result<Vec<(PathBuf, Json)>> {
            Ok(self.0.iter().map(|n| (PathBuf::from(format!("{id}.{n}.json")), json!(n))).collect())
        }
    }

    /// Each part alone makes an update worth writing; as written out (a dry run's plan), its
    /// keys keep their order and an empty fold is left out.
    #[test]
    fn an_update_is_empty_until_a_part_says_something_and_serializes_in_one_shape() {
        let empty: Update<Json, SomeFold> = Update::new("c", 7);
        assert!(empty.is_empty());
        let parts: [fn(&mut Update<Json, SomeFold>); 4] = [
            |u| u.edits.push(Edit::Remove("reason".into())),
            |u| u.record = Some(json!({})),
            |u| u.events.push(json!({})),
            |u| u.fold = SomeFold(Some(1)),
        ];
        for (i, part) in parts.iter().enumerate() {
            let mut u = empty.clone();
            part(&mut u);
            assert!(!u.is_empty(), "part {i}");
        }
        let text = |u: &Update<Json, SomeFold>| serde_json::to_string(u).expect("json");
        assert_eq!(text(&empty), r#"{"id":"c","expect_hash":7,"edits":[],"record":null,"events":[]}"#);
        let folded = Update { fold: SomeFold(Some(2)), ..empty };
        assert_eq!(text(&folded), r#"{"id":"c","expect_hash":7,"edits":[],"record":null,"events":[],"fold":2}"#);
    }

    fn setup() -> (tempfile::TempDir, Home, Project) {
        let dir = tempfile::tempdir().expect("tmp");
        let home = Home { root: dir.path().join("home") };
        let project = Project { root: dir.path().join("repo"), name: "p".into(), config: Default::default() };
        std::fs::create_dir_all(project.commissions_dir()).expect("mkdir");
        (dir, home, project)
    }

    /// A person's save between the observation and the apply: the edits, the record and the
    /// intent all go (the next pass decides again); the timeline keeps its facts. Settling an
    /// intent whose artifact a person changed drops it the same way.
    #[test]
    fn a_persons_save_drops_the_whole_update_but_the_timeline() {
        let (_dir, home, project) = setup();
        let path = project.commission_path("c");
        std::fs::write(&path, "---\nstatus: pending\n---\n").expect("write");
        let seen = content_hash("---\nstatus: pending\n---\n");
        std::fs::write(&path, "---\nstatus: pending\n---\nTheirs.\n").expect("their save");
        let u = Update {
            id: "c".into(),
            events: vec![timeline::event("t", "status", "status:1".into(), json!({}))],
            expect_hash: seen,
            edits: vec![Edit::Set("status".into(), "dispatched".into())],
            record: Some(json!({"status": "dispatched"})),
            fold: NoFold,
        };
        let place = Place::new(&home, &project, Name::Commission, "c");
        assert_eq!(apply(&place, &u, |_, _| None).expect("apply"), Outcome::Dropped);
        assert!(std::fs::read_to_string(&path).expect("read").ends_with("Theirs.\n"));
        assert!(!place.state.join("record.json").exists());
        assert!(!place.intent.exists());
        assert_eq!(timeline::read(&timeline::path_for(&path)).expect("log").len(), 1);

        // An intent left by a pass killed before its artifact write, and a save since.
        let theirs = content_hash("---\nstatus: pending\n---\nTheirs.\n");
        let intent = Intent {
            before: seen,
            after: content_hash("x"),
            text: Some("x".into()),
            record: Some(Write { rel: "record.json".into(), value: json!({"status": "dispatched"}) }),
            folds: vec![],
            landed: false,
        };
        std::fs::create_dir_all(intents(&home, &project)).expect("mkdir");
        write_json(&place.intent, &intent).expect("intent");
        assert!(settle(&home, &project).expect("settle").is_empty());
        assert!(!place.intent.exists() && !place.state.join("record.json").exists());
        assert_eq!(content_hash(&std::fs::read_to_string(&path).expect("read")), theirs);

        // One naming a path out of the state dir is refused, never followed.
        let bad = Intent {
            before: theirs,
            after: theirs,
            text: None,
            record: Some(Write { rel: "../x.json".into(), value: json!(1) }),
            folds: vec![],
            landed: false,
        };
        write_json(&place.intent, &bad).expect("intent");
        let unsettled = settle(&home, &project).expect("settle");
        assert_eq!(unsettled.len(), 1, "{unsettled:?}");
        let (u, why) = (&unsettled[0], unsettled[0].problem.to_string());
        assert!((u.kind, u.id.as_str()) == (Name::Commission, "c") && u.problem.path == place.intent, "{u:?}");
        assert!(why.contains("not a path under the state dir"), "{why}");
        assert!(!place.state.parent().expect("state").join("x.json").exists(), "never followed");
    }
}
