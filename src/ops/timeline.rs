//! Whose timeline an id names, for `guild-hall timeline`: a commission's, a meeting's, a
//! plan's, or a wave task's (its plan's entries for it, by canonical id). An id that names
//! artifacts of two kinds is refused, naming them; one that names none says so as `logs` does.
//! With `-f`, followed until what it belongs to has settled.

use std::path::PathBuf;

use anyhow::{bail, Result};
use serde_json::Value;

use crate::activity::timeline;
use crate::artifact::ids;
use crate::config::{Home, Project};

/// The artifact whose timeline an id names, and for a wave task its canonical id.
struct Source {
    kind: &'static str,
    artifact: PathBuf,
    id: String,
    task: Option<String>,
}

impl Source {
    fn read(&self) -> Result<Vec<Value>> {
        let all = timeline::read(&timeline::path_for(&self.artifact))?;
        Ok(match &self.task {
            Some(canonical) => all.into_iter().filter(|e| e["task"] == canonical.as_str()).collect(),
            None => match self.log() {
                Some(log) => crate::artifact::dialect::merged(&log, all),
                None => all,
            },
        })
    }

    /// In Guild Hall's dialect, the artifact's own log (`activity_timeline:`, `meeting_log:`),
    /// shown with our events; `None` for a file in ours (or one that does not parse now).
    fn log(&self) -> Option<Vec<crate::artifact::dialect::Entry>> {
        let text = crate::artifact::read_regular(&self.artifact).ok()?;
        match self.kind {
            "commission" => crate::artifact::Commission::parse(&self.artifact, &text).ok()?.dialect.map(|d| d.timeline),
            "meeting" => Some(crate::artifact::Meeting::parse(&self.artifact, &text).ok()?.log).filter(|l| !l.is_empty()),
            _ => None,
        }
    }
}

fn locate(project: &Project, id: &str) -> Result<Source> {
    if let Some((plan, task)) = super::plan::task(project, id)? {
        return Ok(Source { kind: "plan", artifact: plan.path.clone(), id: plan.id.clone(), task: Some(task.canonical.clone()) });
    }
    ids::validate_id(id)?;
    let kinds = [("commission", project.commission_path(id)), ("meeting", project.meeting_path(id)), ("plan", project.plan_path(id))];
    let held: Vec<_> = kinds.into_iter().filter(|(_, artifact)| artifact.exists() || timeline::path_for(artifact).exists()).collect();
    match held.as_slice() {
        [] => Err(crate::tools::Failure::not_found(crate::artifact::Wording::COMMISSION.missing(id, &project.commissions_dir())).into()),
        [(kind, artifact)] => Ok(Source { kind, artifact: artifact.clone(), id: id.to_string(), task: None }),
        more => {
            let named: Vec<String> = more.iter().map(|(kind, artifact)| format!("a {kind} ({})", artifact.display())).collect();
            bail!(
                "{id:?} is the id of {}: refused, it names no one timeline (`guild-hall meeting show {id}` and `guild-hall plan show {id}` show a meeting's and a plan's)",
                named.join(" and ")
            )
        }
    }
}

/// The timeline of the artifact `id` names (an artifact that is gone still has its timeline
/// file while it is there).
pub fn of(project: &Project, id: &str) -> Result<Vec<Value>> {
    locate(project, id)?.read()
}

/// [`of`], each event given to `out` as it is written, until what the timeline belongs to has
/// settled and every event was given: a commission no longer pending, blocked or at work; a
/// meeting closed or declined; a plan neither pending nor at work; a wave task no longer
/// queued or running (or its plan settled). An artifact that is gone has settled.
pub fn follow(home: &Home, project: &Project, id: &str, out: &mut dyn FnMut(&Value) -> Result<()>) -> Result<()> {
    let source = locate(project, id)?;
    let mut given = 0;
    let mut dirs: Vec<PathBuf> = source.artifact.parent().map(|d| vec![d.to_path_buf()]).unwrap_or_default();
    if source.kind == "plan" {
        dirs.push(home.plan_state(&project.name, &source.id));
    }
    super::follow::until_ended(
        &dirs,
        || settled(home, project, &source),
        || {
            let events = source.read()?;
            // Append-only; one that shrank (rewritten by git) is given from its start again.
            if events.len() < given {
                given = 0;
            }
            for e in &events[given..] {
                out(e)?;
            }
            given = events.len();
            Ok(())
        },
    )
}

/// Nothing more is to be written for `s` unless a person asks (see [`follow`]).
fn settled(home: &Home, project: &Project, s: &Source) -> Result<bool> {
    use crate::artifact::plan::PlanStatus;
    use crate::artifact::{MeetingStatus, Status};
    if !s.artifact.exists() {
        return Ok(true);
    }
    // Where the reconciler has a record, its status: written after the timeline's events, so
    // a settled record means the last events are in. (The artifact may say a status before
    // the reconciler has recorded it: a person's `status:` edit, `meeting decline`.)
    Ok(match s.kind {
        "commission" => {
            let state = crate::activity::state::StateDir(home.commission_state(&project.name, &s.id));
            let status = match crate::files::read_json::<crate::activity::state::Record>(&state.record())? {
                Some(r) => r.status,
                None => super::commission::load(project, &s.id)?.status.unwrap_or(Status::Pending),
            };
            !matches!(status, Status::Pending | Status::Blocked | Status::Dispatched | Status::InProgress)
        }
        "meeting" => match crate::meeting::observe::record(home, project, &s.id)? {
            Some(r) => r.status.is_final(),
            None => crate::meeting::observe::load(project, &s.id)?.status.is_some_and(MeetingStatus::is_final),
        },
        _ => {
            let plan = crate::plan::observe::load(project, &s.id)?;
            let record = super::plan::record(home, project, &plan)?;
            let status = super::plan::status(&plan, record.as_ref());
            let plan_settled = !(status == PlanStatus::Pending || status.is_active());
            match &s.task {
                None => plan_settled,
                Some(canonical) => {
                    let state = record.as_ref().and_then(|r| r.tasks.get(canonical)).map(|t| t.state);
                    use crate::plan::decide::TaskState;
                    plan_settled || !matches!(state, None | Some(TaskState::Queued | TaskState::Running))
                }
            }
        }
    })
}
