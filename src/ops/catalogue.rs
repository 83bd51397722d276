//! The meeting and plan catalogues ([`crate::tools::meeting`], [`crate::tools::plan`]) carried
//! out over one project by [`super::meeting`] and [`super::plan`]. Only glue: each method maps
//! its typed request onto an operation, and an operation's error onto the kind it says (a
//! plain message is a refusal; an I/O error a fault), as the dispatcher does.

use std::sync::atomic::AtomicBool;
use std::sync::mpsc::SyncSender;
use std::sync::Arc;

use serde_json::Value as Json;

use crate::artifact::plan::PlanStatus;
use crate::artifact::MeetingStatus;
use crate::config::{Home, Project};
use crate::meeting::turn::Turn;
use crate::tools::meeting::{self as meetings, Accept, Closed, Decline, Message, Opened, Start, Summary};
use crate::tools::plan::{self as plans, Create, Created, Requested};
use crate::tools::{ErrorKind, Reply, ToolError};

/// An operation's error as the caller reads it: a refusal unless it says another kind.
fn failed(e: anyhow::Error) -> ToolError {
    ToolError::of(e, ErrorKind::Refused)
}

/// The meeting operations over one project. A turn's events go to `events` as they happen
/// (nowhere if `None`), after a `None` that says the turn begins; setting `gone` interrupts the
/// turn, not the meeting.
pub(crate) struct Meetings {
    pub(crate) home: Home,
    pub(crate) project: Project,
    pub(crate) events: Option<SyncSender<Option<Json>>>,
    pub(crate) gone: Arc<AtomicBool>,
}

impl Meetings {
    /// Run one turn of meeting `id`, its events handed on.
    fn turn(&self, id: &str, message: &str) -> Result<Turn, ToolError> {
        // A receiver gone is a client gone: the turn learns it from `gone`.
        let send = |event: Option<Json>| self.events.as_ref().map(|events| events.send(event));
        send(None);
        let mut emit = |e: &crate::meeting::events::TurnEvent| {
            send(Some(serde_json::to_value(e).unwrap_or_default()));
        };
        crate::ops::meeting::turn(&self.home, &self.project, id, message, &self.gone, &mut emit).map_err(failed)
    }
}

impl Reply for Turn {}

impl meetings::Operations for Meetings {
    type Turn = Turn;

    fn start(&self, req: Start) -> Result<Opened<Turn>, ToolError> {
        let first = req.first_message();
        let new = crate::ops::meeting::NewMeeting {
            worker: req.worker,
            title: req.title,
            agenda: req.agenda,
            references: req.references.unwrap_or_default(),
            id: req.id,
            status: MeetingStatus::Open,
            requested_by: None,
            body: req.message.unwrap_or_default(),
        };
        let m = crate::ops::meeting::start(&self.home, &self.project, &new).map_err(failed)?;
        match first {
            Some(message) => self.turn(&m.id, &message).map(Opened::Turn),
            None => Ok(Opened::Meeting(Box::new(Summary::of(&m)))),
        }
    }

    fn accept(&self, req: Accept) -> Result<Opened<Turn>, ToolError> {
        let (m, opening) = crate::ops::meeting::accept(&self.home, &self.project, &req.id, req.message.as_deref()).map_err(failed)?;
        match req.message {
            Some(_) => self.turn(&m.id, &opening).map(Opened::Turn),
            None => Ok(Opened::Meeting(Box::new(Summary::of(&m)))),
        }
    }

    fn send(&self, req: Message) -> Result<Turn, ToolError> {
        self.turn(&req.id, &req.message)
    }

    fn decline(&self, req: Decline) -> Result<Summary, ToolError> {
        let m = crate::ops::meeting::decline(&self.home, &self.project, &req.id, req.reason.as_deref()).map_err(failed)?;
        Ok(Summary::of(&m))
    }

    fn close(&self, id: &str) -> Result<Closed, ToolError> {
        let (m, closed) = crate::ops::meeting::close(&self.home, &self.project, id).map_err(failed)?;
        Ok(Closed { meeting: Summary::of(&m), closed })
    }

    /// The meetings that can be read (one that cannot is left out).
    fn list(&self) -> Result<meetings::Listed, ToolError> {
        let mut meetings = Vec::new();
        for path in crate::artifact::paths(&self.project.meetings_dir()).map_err(failed)? {
            let Some(id) = path.file_stem().and_then(|s| s.to_str()) else { continue };
            if let Ok(m) = crate::meeting::observe::load(&self.project, id) {
                meetings.push(Summary::of(&m));
            }
        }
        Ok(meetings::Listed { meetings })
    }

    fn show(&self, id: &str) -> Result<meetings::Shown, ToolError> {
        let m = crate::meeting::observe::load(&self.project, id).map_err(failed)?;
        let log = crate::activity::timeline::read(&crate::activity::timeline::path_for(&m.path)).map_err(failed)?;
        Ok(meetings::Shown::of(&self.home, &self.project.name, &m, log))
    }
}

/// The plan operations over one project.
pub(crate) struct Plans {
    pub(crate) home: Home,
    pub(crate) project: Project,
}

impl plans::Operations for Plans {
    fn create(&self, req: Create) -> Result<Created, ToolError> {
        let waves = serde_yaml_ng::to_value(&req.waves).map_err(|e| ToolError::BadArguments(format!("waves: {e}")))?;
        let new = crate::ops::plan::NewPlan {
            title: req.title,
            waves,
            // Given as data: problems name the wave and the task.
            waves_text: None,
            id: req.id,
            parallelism: req.parallelism,
            // The catalogue refuses `verify` (see `tools::plan::VERIFY_REFUSED`).
            verify: None,
            fixer: req.fixer,
            draft: req.draft,
        };
        let plan = crate::ops::plan::create(&self.home, &self.project, &new).map_err(failed)?;
        Ok(Created { plan })
    }

    fn show(&self, id: &str) -> Result<plans::Shown, ToolError> {
        crate::ops::plan::view(&self.home, &self.project, id).map(|(_, _, shown)| shown).map_err(failed)
    }

    fn list(&self) -> Result<plans::Listed, ToolError> {
        crate::ops::plan::list(&self.home, &self.project).map_err(failed)
    }

    fn request(&self, id: &str, to: PlanStatus) -> Result<Requested, ToolError> {
        crate::ops::plan::request(&self.home, &self.project, id, to).map_err(failed)?;
        Ok(Requested { plan: id.to_string(), requested: to })
    }

    fn diff(&self, id: &str, task: &str, detail: crate::activity::diff::Detail) -> Result<crate::activity::diff::Diff, ToolError> {
        crate::ops::diff::of_task(&self.project, id, task, detail).map_err(failed)
    }
}
