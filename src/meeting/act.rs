//! Carry out one meeting [`Action`]: open (branch, worktree), fold and record (the log, the
//! artifact, the record, follow-up requests), close (notes, leftovers, squash merge, worktree
//! and transcript removed). Each step is safe to repeat: a pass killed anywhere is finished by
//! the next. What the worker said never keeps an edit from landing (see [`fitted`]).

use anyhow::{Context, Result};
use serde_json::json;
use serde_yaml_ng::Value;

use super::decide::{Action, Followup, MeetingRecord, Update};
use crate::activity::fit::Shorter;
use crate::activity::kind::Ctx;
use crate::activity::merge::{land, Landing, Messages};
use crate::activity::reason::Reason;
use crate::activity::state::StateDir;
use crate::activity::timeline;
use crate::activity::worktree;
use crate::activity::Outcome;
use crate::artifact::store::edit_if_unchanged;
use crate::artifact::write::Edit;
use crate::config::{Home, Project};
use crate::files::{read_json, write_json};
use crate::worker::{Catalog, Checkout};

/// A meeting's runtime state dir.
fn state_dir(ctx: &Ctx<'_, Catalog>, id: &str) -> StateDir {
    StateDir(ctx.home.meeting_state(&ctx.project.name, id))
}

/// Stop dead after `step` of `action` when the fault switch says so (tests).
fn fault(action: &str, step: u32) {
    crate::activity::fault(&format!("meeting-{action}"), step);
}

pub(crate) fn act(ctx: &Ctx<'_, Catalog>, action: &Action) -> Result<Outcome> {
    match action {
        Action::Update { update, followups } => {
            write_followups(ctx, &update.id, followups)?;
            apply(ctx, update)
        }
        Action::Open { update, branch } => open(ctx, update, branch),
        Action::Close { update, branch, notes_written, followups } => {
            write_followups(ctx, &update.id, followups)?;
            close(ctx, update, branch, *notes_written)
        }
    }
}

/// The update, as every kind's is applied ([`crate::activity::apply`]).
pub(crate) fn apply(ctx: &Ctx<'_, Catalog>, u: &Update) -> Result<Outcome> {
    Ok(apply_hashed(ctx, u)?.0)
}

/// [`apply`], and the artifact's hash as the update left it.
fn apply_hashed(ctx: &Ctx<'_, Catalog>, u: &Update) -> Result<(Outcome, u64)> {
    let place = crate::activity::apply::Place::new(ctx.home, ctx.project, crate::activity::kind::Name::Meeting, &u.id);
    let path = ctx.project.meeting_path(&u.id);
    crate::activity::apply::apply_hashed(&place, u, |text, _| without_worker_text(&path, text, &u.edits))
}

/// A meeting's mailbox, as far as it is folded (`events.folded.json`).
impl crate::activity::apply::Folds for Option<super::fold::Folded> {
    fn is_empty(&self) -> bool {
        self.is_none()
    }
    fn files(&self, home: &Home, project: &Project, id: &str) -> Result<Vec<(std::path::PathBuf, serde_json::Value)>> {
        let Some(f) = self else { return Ok(Vec::new()) };
        Ok(vec![(super::fold::path(&StateDir(home.meeting_state(&project.name, id))), serde_json::to_value(f)?)])
    }
}

/// `edits` made to the meeting's `text`, without the worker's text if they do not fit in the
/// frontmatter ([`without_worker_text`]).
pub(crate) fn fitted<'a>(path: &'a std::path::Path, edits: &'a [Edit]) -> impl Fn(&str) -> Result<String> + 'a {
    move |text| crate::activity::fit::apply(path, text, edits, |_| without_worker_text(path, text, edits))
}

/// `edits` for a frontmatter that has no room for the worker's text (linked artifacts and
/// notes, beside a person's long agenda, say): the linked artifacts left out and the notes
/// replaced by [`super::notes::LEFT_OUT`] (the decider then leaves both to the log until the
/// meeting closes), the notes kept whole in the log's note. `None` if there is nothing to leave
/// out.
fn without_worker_text(path: &std::path::Path, text: &str, edits: &[Edit]) -> Option<Shorter> {
    let current = crate::artifact::Meeting::parse(path, text).ok()?;
    let worker_key = |k: &str| k == "notes" || k == "linked_artifacts";
    let asked_notes = edits.iter().rev().find_map(|e| match e {
        Edit::Set(k, v) if k == "notes" => Some(v.as_str().unwrap_or("").to_string()),
        _ => None,
    });
    let mut fewer: Vec<Edit> = edits.iter().filter(|e| !matches!(e, Edit::Set(k, _) | Edit::Remove(k) if worker_key(k))).cloned().collect();
    let notes = asked_notes.or_else(|| current.owned.notes.clone()).filter(|n| n != super::notes::LEFT_OUT);
    let has_linked = current.fields.contains_key("linked_artifacts");
    let asked_worker_text = edits.iter().any(|e| matches!(e, Edit::Set(k, _) | Edit::Remove(k) if worker_key(k)));
    if notes.is_none() && !has_linked && !asked_worker_text {
        return None;
    }
    if has_linked {
        fewer.push(Edit::Remove("linked_artifacts".into()));
    }
    fewer.push(Edit::Set("notes".into(), Value::String(super::notes::LEFT_OUT.into())));
    let mut kept = serde_json::Map::new();
    if let Some(n) = notes {
        kept.insert("notes".into(), serde_json::Value::String(n));
    }
    Some(Shorter { edits: fewer, what: "the meeting's notes and linked artifacts".into(), kept })
}

fn open(ctx: &Ctx<'_, Catalog>, update: &Update, branch: &str) -> Result<Outcome> {
    let id = &update.id;
    let state = state_dir(ctx, id);
    std::fs::create_dir_all(&state.0)?;
    let meeting = super::observe::load(ctx.project, id)?;
    let pkg = ctx.workers.for_meeting(&meeting.worker).map_err(anyhow::Error::msg)?;
    let repo = crate::activity::git::open(&ctx.project.root)?;
    crate::activity::git::ensure_branch(&repo, branch, &ctx.project.config.integration_branch)?;
    fault("open", 1);
    let wt = ctx.home.meeting_worktree(&ctx.project.name, id);
    if let Some(made) =
        worktree::recorded(&state.worktree(), &ctx.project.root, &wt, branch)?.filter(|r| std::fs::symlink_metadata(&r.path).is_ok())
    {
        // Opened before: its worktree holds the meeting's work; never made anew over it.
        let tampered = worktree::inspect(&made);
        if !tampered.is_empty() {
            anyhow::bail!(
                "the meeting's worktree {} is not as guild-hall made it ({}); its files are kept: repair it or close the meeting",
                made.path.display(),
                tampered.join("; ")
            );
        }
    }
    let rec = worktree::add_worktree(&ctx.project.root, &wt, branch, pkg.manifest.checkout == Checkout::Sparse)?;
    write_json(&state.worktree(), &rec)?;
    fault("open", 2);
    let transcript = ctx.home.transcript(&ctx.project.name, id);
    if let Some(dir) = transcript.parent() {
        std::fs::create_dir_all(dir)?;
    }
    if !transcript.exists() {
        let title = meeting.title.clone().unwrap_or_else(|| id.clone());
        crate::files::write_atomic(&transcript, format!("# Meeting {id}: {title}\n\n").as_bytes())?;
    }
    apply(ctx, update)
}

/// Close: notes into the artifact (once), the work landed like a commission's, the worktree
/// and then the transcript removed, and only then the record says closed.
fn close(ctx: &Ctx<'_, Catalog>, update: &Update, branch: &str, notes_written: bool) -> Result<Outcome> {
    let id = &update.id;
    let state = state_dir(ctx, id);
    let path = ctx.project.meeting_path(id);
    let now = crate::activity::timeline::timestamp(chrono::Utc::now());
    let mut update = update.clone();
    let transcript = ctx.home.transcript(&ctx.project.name, id);
    // Never under a turn that is still running: its worktree and transcript are in use.
    std::fs::create_dir_all(&state.0)?;
    let Some(_turn) = crate::files::lock(&state.turn_lock(), crate::files::Lock::TryExclusive)? else {
        return Ok(Outcome::Waiting("closing waits for the turn that is running to end".into()));
    };
    if !notes_written {
        // The notes and the record saying they are written: one update, applied as every
        // update is (a kill at any step is finished by the next pass, never written twice).
        let meeting = super::observe::load(ctx.project, id)?;
        let notes = super::notes::compose(ctx.home, ctx.project, ctx.workers, &meeting, &state, &transcript);
        let events = notes
            .problems
            .iter()
            .map(|(kind, text)| timeline::event(&now, kind, format!("{kind}:{}", update.expect_hash), json!({"text": text})));
        let mut rec: MeetingRecord = read_json(&state.record())?.context("the meeting has no record")?;
        rec.notes_written = true;
        let written = Update {
            id: id.clone(),
            expect_hash: update.expect_hash,
            edits: vec![Edit::Set("notes".into(), Value::String(notes.text))],
            events: events.collect(),
            record: Some(rec),
            fold: None,
        };
        let (outcome, hash) = apply_hashed(ctx, &written)?;
        if outcome != Outcome::Done {
            return Ok(outcome);
        }
        update.expect_hash = hash;
        if let Some(r) = &mut update.record {
            r.notes_written = true;
        }
    }
    fault("close", 1);
    let rec =
        worktree::recorded_or_assumed(&state.worktree(), &ctx.project.root, &ctx.home.meeting_worktree(&ctx.project.name, id), branch)?;
    let meeting = super::observe::load(ctx.project, id)?;
    let title = meeting.title.clone().unwrap_or_else(|| format!("meeting {id}"));
    let notes = meeting.owned.notes.as_deref().unwrap_or("").trim().to_string();
    let message = format!("{title} (meeting {id})\n\n{notes}");
    let trailer = crate::activity::names::meeting_trailer(id);
    let leftovers = format!("guild-hall: work left in the worktree of meeting {id}");
    let integration = &ctx.project.config.integration_branch;
    let messages = Messages { leftovers, merge: message, trailer };
    let limits = ctx.project.config.merge_limits();
    let landing = land(&ctx.project.root, &rec, Some(&state.objects()), integration, &messages, &limits, || {
        fault("close", 2);
        None
    });
    match landing {
        Landing::Merged(oid) => {
            let commit = oid.map(|o| o.to_string()).unwrap_or_else(|| timeline::NOTHING_TO_MERGE.into());
            update.events.push(timeline::event(
                &now,
                "merge",
                "merge".into(),
                json!({"branch": integration, "commit": commit, "from": branch}),
            ));
        }
        Landing::Refused { kind, reason, .. } => {
            update.events.push(timeline::event(&now, "anomaly", kind.to_string(), json!({"text": reason})));
            update.edits.retain(|e| !matches!(e, Edit::Set(k, _) | Edit::Remove(k) if k == "reason"));
            update.edits.push(Edit::Set("reason".into(), Value::String(format!("closed, not merged: {reason}"))));
        }
        Landing::Waiting(why) => return wait_to_close(&path, &meeting, &update, why),
        // The work is not safe on the branch yet (a full disk, say): the meeting closes only
        // once it is, and says why it waits meanwhile; its worktree and transcript stay.
        Landing::Unsecured(why) => return wait_to_close(&path, &meeting, &update, Reason::ClosingWaits(why).to_string()),
    }
    fault("close", 3);
    crate::worker::workspace::remove_worktree(&state, &rec)?;
    let _ = std::fs::remove_dir_all(state.objects());
    // The transcript goes last, once the notes are safe in the artifact.
    crate::files::remove_if_exists(&transcript)?;
    fault("close", 4);
    if meeting.owned.reason.as_deref().is_some_and(|r| Reason::parse(r).waits())
        && !update.edits.iter().any(|e| matches!(e, Edit::Set(k, _) | Edit::Remove(k) if k == "reason"))
    {
        update.edits.push(Edit::Remove("reason".into()));
    }
    apply(ctx, &update)
}

/// The close cannot finish yet: `reason:` says why (written once, never over a person's newer
/// save), and the next pass tries again.
fn wait_to_close(path: &std::path::Path, meeting: &crate::artifact::Meeting, update: &Update, why: String) -> Result<Outcome> {
    if meeting.owned.reason.as_deref().is_none_or(|r| r != why) {
        let reason = [Edit::Set("reason".into(), Value::String(why.clone()))];
        edit_if_unchanged(path, update.expect_hash, fitted(path, &reason))?;
    }
    Ok(Outcome::Waiting(why))
}

/// The follow-up requests meeting `from` made (the decider kept them within the cap). One
/// that would not be a valid meeting is not written, and `from`'s log says why.
fn write_followups(ctx: &Ctx<'_, Catalog>, from: &str, followups: &[Followup]) -> Result<()> {
    let log = timeline::path_for(&ctx.project.meeting_path(from));
    for f in followups {
        match write_followup(ctx, f)? {
            FollowupWritten::Written => {}
            FollowupWritten::Invalid(why) => {
                let now = timeline::timestamp(chrono::Utc::now());
                let text = format!("follow-up {} was not written: {why}", f.id);
                timeline::append(&log, &[timeline::event(&now, "anomaly", format!("followup-invalid:{}", f.id), json!({ "text": text }))])?;
            }
        }
    }
    Ok(())
}

/// What became of a follow-up request ([`write_followup`]).
enum FollowupWritten {
    /// Written, or a file of its id was there already (never written over).
    Written,
    /// Not written: `check` would refuse it, and why.
    Invalid(crate::artifact::CreateError),
}

/// A follow-up request as a person would write it; never over an existing file, never one
/// `check` would refuse ([`FollowupWritten::Invalid`]).
fn write_followup(ctx: &Ctx<'_, Catalog>, f: &Followup) -> Result<FollowupWritten> {
    let path = ctx.project.meeting_path(&f.id);
    let text = crate::artifact::meeting::render(&crate::artifact::meeting::New {
        title: Some(format!("Follow-up: {}", first_line(&f.reason))),
        worker: f.worker.clone(),
        status: crate::artifact::MeetingStatus::Requested,
        requested_by: Some(f.requested_by.clone()),
        agenda: Some(f.reason.clone()),
        references: f.references.clone(),
        created: None,
        body: String::new(),
    });
    crate::artifact::make_lore_dir(&ctx.project.meetings_dir())?;
    match crate::artifact::create_new(&path, &text, "meeting", crate::artifact::Meeting::parse) {
        Ok(_) | Err(crate::artifact::CreateError::Exists { .. }) => Ok(FollowupWritten::Written),
        Err(e @ crate::artifact::CreateError::Invalid { .. }) => Ok(FollowupWritten::Invalid(e)),
        Err(e) => Err(e.into()),
    }
}

fn first_line(s: &str) -> String {
    let line = s.lines().next().unwrap_or("").trim();
    if line.chars().count() > 60 {
        format!("{}…", line.chars().take(60).collect::<String>())
    } else {
        line.to_string()
    }
}
