//! Carry out one meeting [`Action`]: open (branch, worktree), fold and record (the log, the
//! artifact, the record), close (notes, leftovers, squash merge, worktree and transcript
//! removed). Each step is safe to repeat: a pass killed anywhere is finished by the next.

use anyhow::{Context, Result};
use serde_json::json;
use serde_yaml_ng::Value;

use super::plan::{Action, Followup, MeetingRecord, Update};
use crate::activity::merge::{land, Landing, Messages};
use crate::activity::state::{read_json, write_json, StateDir};
use crate::activity::timeline;
use crate::activity::worktree;
use crate::activity::Outcome;
use crate::artifact::commission::content_hash;
use crate::artifact::write::{self, Edit};
use crate::config::{Home, Project};
use crate::worker::{Catalog, Checkout};

/// What every meeting effect needs.
pub struct Ctx<'a> {
    pub home: &'a Home,
    pub project: &'a Project,
    pub workers: &'a Catalog,
}

impl Ctx<'_> {
    fn state(&self, id: &str) -> StateDir {
        StateDir(self.home.meeting_state(&self.project.name, id))
    }
}

/// Stop dead after `step` of `action` when the fault switch says so (tests).
fn fault(action: &str, step: u32) {
    crate::activity::fault(&format!("meeting-{action}"), step);
}

pub fn act(ctx: &Ctx<'_>, action: &Action) -> Result<Outcome> {
    match action {
        Action::Update { update, followups } => {
            for f in followups {
                write_followup(ctx, f)?;
            }
            apply(ctx, update)
        }
        Action::Open { update, branch } => open(ctx, update, branch),
        Action::Close { update, branch, notes_written } => close(ctx, update, branch, *notes_written),
    }
}

/// The log first, then the artifact (dropped if it changed since observed), then the record:
/// a record is never ahead of the artifact it describes.
pub fn apply(ctx: &Ctx<'_>, u: &Update) -> Result<Outcome> {
    let path = ctx.project.meeting_path(&u.id);
    timeline::append(&timeline::path_for(&path), &u.events)?;
    if edit_if_unchanged(&path, u.expect_hash, &u.edits)?.is_none() {
        return Ok(Outcome::Dropped);
    }
    if let Some(r) = &u.record {
        let state = ctx.state(&u.id);
        std::fs::create_dir_all(&state.0)?;
        write_json(&state.record(), r)?;
    }
    // How far its mailbox was read: last, so that a pass that dies before reads it again.
    if let Some(f) = &u.fold {
        write_json(&super::observe::folded_file(&ctx.state(&u.id)), f)?;
    }
    Ok(Outcome::Done)
}

/// Apply `edits` to the artifact if it is still the one observed (`expect`): its new hash, or
/// `None` when a person's save came in between (the write is dropped; they win).
pub fn edit_if_unchanged(path: &std::path::Path, expect: u64, edits: &[Edit]) -> Result<Option<u64>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    if content_hash(&text) != expect {
        return Ok(None);
    }
    if edits.is_empty() {
        return Ok(Some(expect));
    }
    let new = write::apply(&text, edits).with_context(|| format!("editing {}", path.display()))?;
    if new != text && !crate::activity::state::replace_if_unchanged(path, expect, new.as_bytes())? {
        return Ok(None);
    }
    Ok(Some(content_hash(&new)))
}

/// Apply `edits` to the artifact as it is now, retrying when a save races us: for writes that
/// must land (a turn's session id), never over a person's newer save.
pub fn edit_current(path: &std::path::Path, edits: &[Edit]) -> Result<()> {
    for _ in 0..20 {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        if edit_if_unchanged(path, content_hash(&text), edits)?.is_some() {
            return Ok(());
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    anyhow::bail!("{} kept changing; not written", path.display())
}

fn open(ctx: &Ctx<'_>, update: &Update, branch: &str) -> Result<Outcome> {
    let id = &update.id;
    let state = ctx.state(id);
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
        crate::activity::state::write_atomic(&transcript, format!("# Meeting {id}: {title}\n\n").as_bytes())?;
    }
    apply(ctx, update)
}

/// Close: notes into the artifact (once), the work landed like a commission's, the worktree
/// and then the transcript removed, and only then the record says closed.
fn close(ctx: &Ctx<'_>, update: &Update, branch: &str, notes_written: bool) -> Result<Outcome> {
    let id = &update.id;
    let state = ctx.state(id);
    let path = ctx.project.meeting_path(id);
    let now = crate::activity::timeline::timestamp(chrono::Utc::now());
    let mut update = update.clone();
    let transcript = ctx.home.transcript(&ctx.project.name, id);
    // Never under a turn that is still running: its worktree and transcript are in use.
    std::fs::create_dir_all(&state.0)?;
    let Some(_turn) = crate::files::lock(&state.0.join("turn.lock"), crate::files::Lock::TryExclusive)? else {
        return Ok(Outcome::Waiting("closing waits for the turn that is running to end".into()));
    };
    if !notes_written {
        let meeting = super::observe::load(ctx.project, id)?;
        let notes = super::notes::compose(ctx, &meeting, &state, &transcript);
        for (kind, text) in &notes.problems {
            update.events.push(timeline::event(&now, kind, format!("{kind}:{}", update.expect_hash), json!({"text": text})));
        }
        let Some(hash) = edit_if_unchanged(&path, update.expect_hash, &[Edit::Set("notes".into(), Value::String(notes.text))])? else {
            return Ok(Outcome::Dropped);
        };
        update.expect_hash = hash;
        let mut rec: MeetingRecord = read_json(&state.record())?.context("the meeting has no record")?;
        rec.notes_written = true;
        write_json(&state.record(), &rec)?;
        if let Some(r) = &mut update.record {
            r.notes_written = true;
        }
    }
    fault("close", 1);
    let rec =
        worktree::recorded_or_assumed(&state.worktree(), &ctx.project.root, &ctx.home.meeting_worktree(&ctx.project.name, id), branch)?;
    let meeting = super::observe::load(ctx.project, id)?;
    let title = meeting.title.clone().unwrap_or_else(|| format!("meeting {id}"));
    let notes = meeting.str_field("notes").unwrap_or("").trim().to_string();
    let message = format!("{title} (meeting {id})\n\n{notes}");
    let trailer = format!("Guild-Hall-Meeting: {id}");
    let leftovers = format!("guild-hall: work left in the worktree of meeting {id}");
    let integration = &ctx.project.config.integration_branch;
    let messages = Messages { leftovers, merge: message, trailer };
    let limits = ctx.project.config.merge_limits();
    let landing = land(&ctx.project.root, &rec, Some(&state.objects()), integration, &messages, &limits, || fault("close", 2));
    match landing {
        Landing::Merged(oid) => {
            let commit = oid.map(|o| o.to_string()).unwrap_or_else(|| "nothing to merge".into());
            update.events.push(timeline::event(
                &now,
                "merge",
                "merge".into(),
                json!({"branch": integration, "commit": commit, "from": branch}),
            ));
        }
        Landing::Refused { kind, reason } => {
            update.events.push(timeline::event(&now, "anomaly", kind.to_string(), json!({"text": reason})));
            update.edits.push(Edit::Set("reason".into(), Value::String(format!("closed, not merged: {reason}"))));
        }
        Landing::Waiting(why) => return wait_to_close(&path, &meeting, &update, why),
        // The work is not safe on the branch yet (a full disk, say): the meeting closes only
        // once it is, and says why it waits meanwhile; its worktree and transcript stay.
        Landing::Unsecured(why) => return wait_to_close(&path, &meeting, &update, format!("closing waits: {why}")),
    }
    fault("close", 3);
    worktree::remove_worktree(&rec)?;
    let _ = std::fs::remove_dir_all(state.objects());
    // The transcript goes last, once the notes are safe in the artifact.
    crate::files::remove_if_exists(&transcript)?;
    fault("close", 4);
    if meeting.str_field("reason").is_some_and(|r| r.starts_with("merge waiting") || r.starts_with("closing waits"))
        && !update.edits.iter().any(|e| matches!(e, Edit::Set(k, _) if k == "reason"))
    {
        update.edits.push(Edit::Remove("reason".into()));
    }
    apply(ctx, &update)
}

/// The close cannot finish yet: `reason:` says why (written once, never over a person's newer
/// save), and the next pass tries again.
fn wait_to_close(path: &std::path::Path, meeting: &crate::artifact::Meeting, update: &Update, why: String) -> Result<Outcome> {
    if meeting.str_field("reason").is_none_or(|r| r != why) {
        edit_if_unchanged(path, update.expect_hash, &[Edit::Set("reason".into(), Value::String(why.clone()))])?;
    }
    Ok(Outcome::Waiting(why))
}

/// A follow-up request as a person would write it; never over an existing file.
fn write_followup(ctx: &Ctx<'_>, f: &Followup) -> Result<()> {
    let path = ctx.project.meeting_path(&f.id);
    if path.exists() {
        return Ok(());
    }
    let mut fm = serde_yaml_ng::Mapping::new();
    fm.insert("title".into(), Value::String(format!("Follow-up: {}", first_line(&f.reason))));
    fm.insert("worker".into(), Value::String(f.worker.clone()));
    fm.insert("status".into(), Value::String("requested".into()));
    fm.insert("requested_by".into(), Value::String(f.requested_by.clone()));
    fm.insert("agenda".into(), Value::String(f.reason.clone()));
    if !f.references.is_empty() {
        fm.insert("references".into(), Value::Sequence(f.references.iter().cloned().map(Value::String).collect()));
    }
    let text = format!("---\n{}---\n", serde_yaml_ng::to_string(&fm)?);
    std::fs::create_dir_all(ctx.project.meetings_dir())?;
    crate::activity::state::write_atomic(&path, text.as_bytes())
}

fn first_line(s: &str) -> String {
    let line = s.lines().next().unwrap_or("").trim();
    if line.chars().count() > 60 {
        format!("{}…", line.chars().take(60).collect::<String>())
    } else {
        line.to_string()
    }
}
