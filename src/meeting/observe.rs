//! Observe a project's meetings: their artifacts, records, mailboxes (what is new since the
//! last pass), timelines and worktrees, into the planner's [`Snapshot`]. Read-only.

use anyhow::Result;

use super::plan::{MeetingFolded, MeetingRecord, Observed, Snapshot};
use crate::activity::state::{read_json, StateDir};
use crate::activity::worktree::WorktreeRecord;
use crate::artifact::{Meeting, MeetingStatus, Problem};
use crate::config::{Home, Project};
use crate::worker::toolbox::mailbox::{self, Expect, Mail, MailBody};
use crate::worker::Catalog;

/// The meetings snapshot, and the artifacts that could not be read (reported, never acted on).
pub fn observe(home: &Home, project: &Project, workers: &Catalog, now: &str) -> Result<(Snapshot, Vec<Problem>)> {
    let mut meetings = Vec::new();
    let mut problems = Vec::new();
    for path in crate::artifact::paths(&project.meetings_dir())? {
        match observe_one(home, project, workers, &path) {
            Ok(o) => meetings.push(o),
            Err(p) => problems.extend(p),
        }
    }
    let snapshot = Snapshot {
        meetings,
        cap: project.config.meeting_cap,
        integration_branch: project.config.integration_branch.clone(),
        now: now.to_string(),
    };
    Ok((snapshot, problems))
}

/// Read one meeting artifact as it is now (for the CLI and the turn runner).
pub fn load(project: &Project, id: &str) -> Result<Meeting> {
    crate::artifact::ids::validate_id(id)?;
    let path = project.meeting_path(id);
    let text = match crate::artifact::read_regular(&path) {
        Ok(t) => t,
        Err(e @ crate::artifact::ReadError::Io(_)) => anyhow::bail!("no meeting {id} ({}): {e}", path.display()),
        Err(e) => anyhow::bail!("{}: {e}", path.display()),
    };
    Meeting::parse(&path, &text).map_err(|p| anyhow::anyhow!("{}", p.iter().map(|p| p.to_string()).collect::<Vec<_>>().join("\n")))
}

/// guild-hall's record of a meeting; a corrupt record is an error, never "no record".
pub fn record(home: &Home, project: &Project, id: &str) -> Result<Option<MeetingRecord>> {
    read_json(&StateDir(home.meeting_state(&project.name, id)).record())
}

fn observe_one(home: &Home, project: &Project, workers: &Catalog, path: &std::path::Path) -> Result<Observed, Vec<Problem>> {
    let problem = |msg: String| vec![Problem::new(path, 1, 1, msg)];
    let text = crate::artifact::read_regular(path).map_err(|e| problem(e.to_string()))?;
    let meeting = Meeting::parse(path, &text)?;
    let state = StateDir(home.meeting_state(&project.name, &meeting.id));
    let record: Option<MeetingRecord> = read_json(&state.record()).map_err(|e| {
        problem(format!("its runtime record is corrupt ({e:#}); nothing is done for this meeting until it is repaired or removed"))
    })?;
    let live = record.as_ref().is_some_and(|r| r.status == MeetingStatus::Open);
    let (mail, timeline_keys) = if live {
        // Paths it names are checked against the meeting's own worktree (computed from its id).
        let worktree = home.meeting_worktree(&project.name, &meeting.id);
        let mail = read_mail(&state, worktree.is_dir().then_some(worktree.as_path()))
            .map_err(|e| problem(format!("its mailbox cannot be read: {e:#}")))?;
        let keys = crate::activity::timeline::keys(&crate::activity::timeline::path_for(path)).map_err(|e| problem(format!("{e:#}")))?;
        (Some(mail), keys)
    } else {
        Default::default()
    };
    let (mail, folded, fold_changed, mail_notes) = match mail {
        Some(m) => (m.mail, Some(m.folded), m.changed, m.notes),
        None => Default::default(),
    };
    let opened = live && matches!(read_json::<WorktreeRecord>(&state.worktree()), Ok(Some(rec)) if rec.path.join(".git").exists());
    let worker_problem = match meeting.effective_status() {
        MeetingStatus::Open if !live => workers.for_meeting(&meeting.worker).err(),
        _ => None,
    };
    Ok(Observed { meeting, record, mail, folded, fold_changed, mail_notes, timeline_keys, opened, worker_problem })
}

/// Where a meeting's reader keeps what it folded of its mailbox, and how far.
pub fn folded_file(state: &StateDir) -> std::path::PathBuf {
    state.0.join("events.folded.json")
}

/// A meeting's mailbox as one pass read it.
struct Read {
    mail: Vec<Mail>,
    folded: MeetingFolded,
    changed: bool,
    notes: Vec<(String, String)>,
}

/// What is new in a meeting's mailbox since the last pass (its turns share one): every event
/// folded, the first [`MAIL_PER_PASS`] (and every follow-up) kept for the log. A kept position
/// that cannot be read starts the reading over.
fn read_mail(state: &StateDir, worktree: Option<&std::path::Path>) -> Result<Read> {
    use crate::commission::observe::MAIL_PER_PASS;
    let fold_path = folded_file(state);
    let before = read_json::<MeetingFolded>(&fold_path).unwrap_or_else(|e| {
        tracing::warn!(file = %fold_path.display(), error = %format!("{e:#}"), "the mailbox's read position cannot be read: reading the mailbox again from its start");
        None
    });
    let before = before.unwrap_or_default();
    let (mut folded, mut cursor) = (before.clone(), before.cursor.clone());
    let (mut mail, mut more) = (Vec::new(), 0u64);
    mailbox::read_from(&state.mailbox(), &mut cursor, Expect { attempt: None, worktree, last: false }, |line| {
        let Some(m) = line.mail else { return };
        folded.take(&m);
        if mail.len() < MAIL_PER_PASS || matches!(m.body, MailBody::Followup { .. }) {
            mail.push(m);
        } else {
            more += 1;
        }
    })?;
    let mut notes = Vec::new();
    if more > 0 {
        notes.push((
            format!("mailbox:events.jsonl:{}:more", before.cursor.offset),
            format!("events.jsonl: more events than a pass records one by one ({MAIL_PER_PASS}): {more} were folded without their own log entry"),
        ));
    }
    folded.cursor = cursor;
    let changed = folded != before;
    Ok(Read { mail, folded, changed, notes })
}
