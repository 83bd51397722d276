//! What people and tools do to meetings: write a new meeting or request, ask for a transition
//! (written into the file as a person would: parity, REQ-MTG-3/23), have it carried out now —
//! by a pass of our own, or by the `watch` that holds the project — and run a turn.

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use anyhow::{anyhow, bail, Result};
use serde_yaml_ng::Value;

use crate::artifact::write::Edit;
use crate::artifact::{ids, Meeting, MeetingStatus};
use crate::config::{Home, Project};
use crate::meeting::decide::MeetingRecord;
use crate::meeting::events::TurnEvent;
use crate::meeting::observe;
use crate::worker::Catalog;

/// A meeting to write.
#[derive(Debug, Clone)]
pub struct NewMeeting {
    pub worker: String,
    pub title: Option<String>,
    pub agenda: Option<String>,
    pub references: Vec<String>,
    pub id: Option<String>,
    /// `Open` (a person's meeting) or `Requested` (a request from a worker, agent or tool).
    pub status: MeetingStatus,
    pub requested_by: Option<String>,
    /// The opening message or context.
    pub body: String,
}

/// The ids of the meetings guild-hall has open now.
pub(crate) fn open_meetings(home: &Home, project: &Project) -> Result<Vec<String>> {
    let mut open = Vec::new();
    for path in crate::artifact::paths(&project.meetings_dir())? {
        let Some(id) = path.file_stem().and_then(|s| s.to_str()) else { continue };
        if ids::validate_id(id).is_err() {
            continue;
        }
        if observe::record(home, project, id)?.is_some_and(|r| r.status == MeetingStatus::Open) {
            open.push(id.to_string());
        }
    }
    Ok(open)
}

/// Write a new meeting artifact; its id. Refuses (writing nothing) a worker that cannot meet,
/// bad paths, an id asked for that is taken (ids are never reused: without one, the first free
/// one is picked), an open meeting past the cap, and a meeting `check` would refuse.
pub fn create(home: &Home, project: &Project, new: &NewMeeting) -> Result<String> {
    let catalog = Catalog::discover(&project.root, &home.workers_dir());
    catalog.for_meeting(&new.worker).map_err(|e| anyhow!("{}; nothing written", super::commission::unusable(&catalog, &new.worker, e)))?;
    let refs = new.references.iter().map(|r| ids::validate_rel_path(r)).collect::<Result<Vec<_>, _>>()?;
    if new.status == MeetingStatus::Open {
        let open = open_meetings(home, project)?;
        if open.len() >= project.config.meeting_cap {
            bail!(
                "the meeting cap ({}) is reached: open meetings are {}; close one first (guild-hall meeting close <id>)",
                project.config.meeting_cap,
                open.join(", ")
            );
        }
    }
    let dir = project.meetings_dir();
    crate::artifact::make_lore_dir(&dir)?;
    let base = match &new.id {
        Some(id) => id.clone(),
        None => {
            let words = new.title.as_deref().or(new.agenda.as_deref()).unwrap_or(new.body.as_str());
            let words: String = words.split_whitespace().take(6).collect::<Vec<_>>().join(" ");
            ids::slugify_or(&words, &format!("meeting-{}", chrono::Utc::now().format("%Y%m%d-%H%M%S")))
        }
    };
    let text = crate::artifact::meeting::render(&crate::artifact::meeting::New {
        title: new.title.clone(),
        worker: new.worker.clone(),
        status: new.status,
        requested_by: new.requested_by.clone(),
        agenda: new.agenda.clone(),
        references: refs,
        created: Some(crate::activity::timeline::timestamp(chrono::Utc::now())),
        body: new.body.clone(),
    });
    // Never over a file that appeared meanwhile, and never one the parser every pass and
    // `check` use would refuse (an agenda over the frontmatter's size limit, say).
    super::create_with_free_id(home, project, crate::activity::kind::Name::Meeting, &base, new.id.is_some(), |id| {
        crate::artifact::create_new(&project.meeting_path(id), &text, "meeting", Meeting::parse).map(|_| ())
    })
}

/// Ask for `to` by writing it into the artifact, as a person would. Checked against what the
/// file says now ([`crate::meeting::decide::request_refusal`], the reconciler's own words);
/// the reconciler validates it again.
pub(crate) fn request(project: &Project, id: &str, to: MeetingStatus, note: Option<&str>) -> Result<Meeting> {
    let m = observe::load(project, id)?;
    let from = m.effective_status();
    // Refused up front, with the words the reconciler's refusal would write: nothing written.
    if let Some(why) = crate::meeting::decide::request_refusal(from, to) {
        bail!("meeting {id} is {from}: refused status change {from} -> {to}: {why}; nothing written");
    }
    let mut edits = vec![Edit::Set("status".into(), Value::String(to.as_str().into()))];
    if let Some(n) = note {
        edits.push(Edit::Set("reason".into(), Value::String(n.into())));
    }
    crate::artifact::store::edit_current(&m.path, crate::meeting::act::fitted(&m.path, &edits))?;
    observe::load(project, id)
}

/// Have the reconciler carry out what the files say about meeting `id`, now (see
/// [`super::converge`]); `done` says when a `watch` holding the project has.
fn converge(
    home: &Home,
    project: &Project,
    id: &str,
    limit: Duration,
    done: impl Fn(Option<&MeetingRecord>, &Meeting) -> bool,
) -> Result<()> {
    super::converge(home, project, "guild-hall meeting", limit, || match (observe::load(project, id), observe::record(home, project, id)) {
        (Ok(m), Ok(r)) => done(r.as_ref(), &m),
        _ => false,
    })
}

/// Fold what the meetings' toolboxes recorded into their artifacts now, if no other
/// guild-hall process holds the project (one that does — a `watch` — folds it itself).
pub(crate) fn fold_now(home: &Home, project: &Project) -> Result<()> {
    if let Ok(_lock) = crate::reconcile::lock_project(home, project, false, "guild-hall meeting") {
        let opts = crate::reconcile::Options { only: Some(crate::activity::kind::Name::Meeting), ..Default::default() };
        crate::reconcile::run(home, project, &opts, |e| {
            if !e.ok {
                tracing::warn!(meeting = %e.id, error = %e.error.as_deref().unwrap_or(""), "meeting action failed");
            }
        })?;
    }
    Ok(())
}

/// How long an operation waits for a running `watch` to carry out what it wrote.
pub(crate) const CONVERGE_LIMIT: Duration = Duration::from_secs(120);

/// Have the reconciler open meeting `id` (just written open, or accepted); an error says why
/// it was not opened (the cap, its worker).
pub fn open(home: &Home, project: &Project, id: &str) -> Result<Meeting> {
    converge(home, project, id, CONVERGE_LIMIT, |r, m| r.is_some_and(|r| r.status == MeetingStatus::Open) || m.owned.reason.is_some())?;
    let m = observe::load(project, id)?;
    if observe::record(home, project, id)?.is_none_or(|r| r.status != MeetingStatus::Open) {
        bail!("meeting {id} was not opened: {}", m.owned.reason.as_deref().unwrap_or("see `guild-hall meeting show`"));
    }
    Ok(m)
}

/// Write a person's meeting and open it.
pub(crate) fn start(home: &Home, project: &Project, new: &NewMeeting) -> Result<Meeting> {
    let id = create(home, project, &NewMeeting { status: MeetingStatus::Open, ..new.clone() })?;
    open(home, project, &id)
}

/// Accept a request and open it; the first message of its first turn: the worker opens the
/// meeting by presenting what prompted it (REQ-MTG-8.6), with the person's words added.
pub fn accept(home: &Home, project: &Project, id: &str, message: Option<&str>) -> Result<(Meeting, String)> {
    request(project, id, MeetingStatus::Open, None)?;
    let m = open(home, project, id)?;
    let mut opening = String::from("You asked for this meeting and the person has accepted. Open it by presenting what prompted it");
    if let Some(a) = &m.agenda {
        opening.push_str(&format!(" (the agenda: {a})"));
    }
    if !m.references.is_empty() {
        opening.push_str(&format!(", from the referenced artifacts: {}", m.references.join(", ")));
    }
    opening.push('.');
    if let Some(msg) = message {
        opening.push_str(&format!("\n\nThe person adds: {msg}"));
    }
    Ok((m, opening))
}

/// Decline a request: nothing is created, its references stay as they are.
pub fn decline(home: &Home, project: &Project, id: &str, reason: Option<&str>) -> Result<Meeting> {
    let note = reason.map(|r| format!("declined: {r}"));
    request(project, id, MeetingStatus::Declined, note.as_deref())?;
    converge(home, project, id, CONVERGE_LIMIT, |r, _| r.is_some_and(|r| r.status == MeetingStatus::Declined))?;
    observe::load(project, id)
}

/// Close a meeting and have it carried out: `true` once closed (notes written, work merged or
/// refused with the reason), `false` while the merge waits (the reason says on what).
pub fn close(home: &Home, project: &Project, id: &str) -> Result<(Meeting, bool)> {
    request(project, id, MeetingStatus::Closed, None)?;
    converge(home, project, id, CONVERGE_LIMIT, |r, m| {
        r.is_some_and(|r| r.status == MeetingStatus::Closed)
            || m.owned.reason.as_deref().is_some_and(|r| crate::activity::reason::Reason::parse(r).merge_waits())
    })?;
    let m = observe::load(project, id)?;
    let closed = observe::record(home, project, id)?.is_some_and(|r| r.status == MeetingStatus::Closed);
    Ok((m, closed))
}

/// Run one turn of meeting `id` with `message` ([`crate::meeting::turn::run`]), then fold
/// what its toolbox recorded into the artifact (unless a `watch` holds the project: it does).
pub fn turn(
    home: &Home,
    project: &Project,
    id: &str,
    message: &str,
    interrupted: &AtomicBool,
    on_event: &mut dyn FnMut(&TurnEvent),
) -> Result<crate::meeting::turn::Turn> {
    // A daily budget reached holds new turns as it holds new dispatches.
    let daily = crate::reconcile::budget::reached(project, &home.load_config()?);
    let t = crate::meeting::turn::run(home, project, id, message, interrupted, daily, on_event)?;
    if let Err(e) = fold_now(home, project) {
        tracing::warn!(meeting = %id, error = %format!("{e:#}"), "the turn's toolbox events were not folded in yet");
    }
    Ok(t)
}

/// The project's meetings as a person lists them: requests first, then open ones, then the
/// rest, each group oldest first; and what could not be read, one line each.
pub fn list(project: &Project) -> Result<(Vec<Meeting>, Vec<String>)> {
    let mut rows = Vec::new();
    let mut problems = Vec::new();
    for path in crate::artifact::paths(&project.meetings_dir())? {
        let text = match crate::artifact::read_regular(&path) {
            Ok(t) => t,
            Err(e) => {
                problems.push(format!("{}: {e}", path.display()));
                continue;
            }
        };
        match Meeting::parse(&path, &text) {
            Ok(m) => rows.push(m),
            Err(p) => problems.extend(p.iter().map(|p| p.to_string())),
        }
    }
    let rank = |s: MeetingStatus| match s {
        MeetingStatus::Requested => 0,
        MeetingStatus::Open => 1,
        MeetingStatus::Closed => 2,
        MeetingStatus::Declined => 3,
    };
    rows.sort_by(|a, b| {
        (rank(a.effective_status()), a.owned.created.as_deref(), &a.id).cmp(&(
            rank(b.effective_status()),
            b.owned.created.as_deref(),
            &b.id,
        ))
    });
    Ok((rows, problems))
}
