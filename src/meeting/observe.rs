//! Observe a project's meetings: their artifacts, records, mailboxes, timelines and worktrees,
//! into the planner's [`Snapshot`]. Read-only.

use anyhow::Result;

use super::plan::{MeetingRecord, Observed, Snapshot};
use crate::activity::state::{read_json, StateDir};
use crate::activity::worktree::WorktreeRecord;
use crate::artifact::{Meeting, MeetingStatus, Problem};
use crate::config::{Home, Project};
use crate::worker::toolbox::mailbox;
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
        followup_cap: project.config.followups_per_meeting,
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
        let mail = mailbox::read_checked(&state.mailbox(), worktree.is_dir().then_some(worktree.as_path()))
            .map_err(|e| problem(format!("its mailbox cannot be read: {e:#}")))?;
        let keys = crate::activity::timeline::keys(&crate::activity::timeline::path_for(path)).map_err(|e| problem(format!("{e:#}")))?;
        (mail, keys)
    } else {
        Default::default()
    };
    let opened = live && matches!(read_json::<WorktreeRecord>(&state.worktree()), Ok(Some(rec)) if rec.path.join(".git").exists());
    let worker_problem = match meeting.effective_status() {
        MeetingStatus::Open if !live => workers.for_meeting(&meeting.worker).err(),
        _ => None,
    };
    Ok(Observed { meeting, record, mail, timeline_keys, opened, worker_problem })
}
