//! The meeting operations people and tools call (start, accept, send a turn, decline, close,
//! list, show), served as the `meeting/*` JSON-RPC methods from this one list. Each is an
//! [`Operations`] method, implemented above the kinds (`ops::catalogue::Meetings`): this
//! catalogue never depends on them. The operations that run a turn are marked streamed: their
//! implementation hands each event of the turn on as it happens, and the face streams it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use super::{Reply, Tool, ToolError};
use crate::artifact::{Meeting, MeetingStatus};

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Start {
    /// A worker package with the `meeting` capability.
    pub(crate) worker: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) title: Option<String>,
    /// Why you meet (the worker is told).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) agenda: Option<String>,
    /// Artifacts the meeting is about, relative to the project root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) references: Option<Vec<String>>,
    /// Use this id instead of the first free one derived from the title, agenda or message;
    /// refused, naming what holds it, if anything of it exists: ids are never reused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) id: Option<String>,
    /// The first message (default: the agenda; with neither, no turn is run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) message: Option<String>,
}

impl Start {
    /// The first turn's message, if one is run.
    pub(crate) fn first_message(&self) -> Option<String> {
        first_message(self.message.as_deref(), self.agenda.as_deref())
    }
}

/// What a person's new meeting begins with, on every face: their message, or else the
/// agenda; with neither, no turn is run.
pub fn first_message(message: Option<&str>, agenda: Option<&str>) -> Option<String> {
    message.map(str::to_string).or_else(|| agenda.map(|a| format!("Let's begin. The agenda: {a}")))
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Accept {
    /// The requested meeting.
    pub(crate) id: String,
    /// Added to the worker's opening; with it, the first turn is run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) message: Option<String>,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Message {
    /// The open meeting.
    pub(crate) id: String,
    pub(crate) message: String,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Decline {
    /// The requested meeting.
    pub(crate) id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) reason: Option<String>,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct MeetingId {
    pub(crate) id: String,
}

#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct List {}

/// What carries the meeting operations out, one method per operation. A turn's events go to
/// wherever the implementation streams them; the turn itself is its reply.
pub(crate) trait Operations {
    /// A turn's reply (design §8).
    type Turn: Reply + 'static;
    fn start(&self, req: Start) -> Result<Opened<Self::Turn>, ToolError>;
    fn accept(&self, req: Accept) -> Result<Opened<Self::Turn>, ToolError>;
    fn send(&self, req: Message) -> Result<Self::Turn, ToolError>;
    fn decline(&self, req: Decline) -> Result<Summary, ToolError>;
    fn close(&self, id: &str) -> Result<Closed, ToolError>;
    fn list(&self) -> Result<Listed, ToolError>;
    fn show(&self, id: &str) -> Result<Shown, ToolError>;
}

/// The meeting operations, on whatever carries them out.
pub(crate) fn tools<M: Operations + 'static>() -> Vec<Tool<M>> {
    vec![
        Tool::new(
            "start",
            "Start a meeting with a worker: write it (status: open), open it (branch, worktree) and run the first turn with the message (default: the agenda), streaming its events. Without either, no turn is run and the meeting is the reply.",
            |m: &M, a: Start| m.start(a),
        )
        .streamed(|a: &Start| a.first_message().is_some()),
        Tool::new(
            "accept",
            "Accept a meeting request (status: open). With a message, run the first turn, streamed: the worker opens by presenting what prompted the request, the message added.",
            |m: &M, a: Accept| m.accept(a),
        )
        .streamed(|a: &Accept| a.message.is_some()),
        Tool::new("send", "One turn of an open meeting: send the message, its events streamed as they happen.", |m: &M, a: Message| {
            m.send(a)
        })
        .streamed(|_: &Message| true),
        Tool::new(
            "decline",
            "Decline a meeting request (status: declined). Nothing is created; its references stay.",
            |m: &M, a: Decline| m.decline(a),
        ),
        Tool::new(
            "close",
            "Close a meeting: notes written into it, its work squash-merged into the integration branch. closed is false while the merge waits (the reason says on what).",
            |m: &M, a: MeetingId| m.close(&a.id),
        ),
        Tool::new("list", "The meetings: each one's id, status, worker, agenda, references, links and reason.", |m: &M, _: List| m.list()),
        Tool::new("show", "A meeting: its fields, notes and log.", |m: &M, a: MeetingId| m.show(&a.id)),
    ]
}

/// A meeting as `start`, `accept`, `decline`, `close` and `list` give it.
#[derive(Debug, Serialize)]
pub(crate) struct Summary {
    pub(crate) id: String,
    pub(crate) status: MeetingStatus,
    pub(crate) worker: String,
    pub(crate) agenda: Option<String>,
    pub(crate) requested_by: Option<String>,
    pub(crate) references: Vec<String>,
    pub(crate) linked_artifacts: Vec<String>,
    pub(crate) session_id: Option<String>,
    pub(crate) reason: Option<String>,
    pub(crate) notes: Option<String>,
}

impl Summary {
    pub(crate) fn of(m: &Meeting) -> Summary {
        Summary {
            id: m.id.clone(),
            status: m.effective_status(),
            worker: m.worker.clone(),
            agenda: m.agenda.clone(),
            requested_by: m.requested_by.clone(),
            references: m.references.clone(),
            linked_artifacts: m.linked_artifacts(),
            session_id: m.session_id().map(str::to_string),
            reason: m.owned.reason.clone(),
            notes: m.owned.notes.clone(),
        }
    }
}

/// `start` and `accept`: the meeting, or the first turn when one was run.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(crate) enum Opened<T> {
    Meeting(Box<Summary>),
    Turn(T),
}

/// `close`: the meeting, and whether it is closed yet.
#[derive(Debug, Serialize)]
pub(crate) struct Closed {
    #[serde(flatten)]
    pub(crate) meeting: Summary,
    pub(crate) closed: bool,
}

#[derive(Debug, Serialize)]
pub(crate) struct Listed {
    pub(crate) meetings: Vec<Summary>,
}

/// One meeting as `guild-hall meeting list --json` lists it; `show` adds its notes and log.
#[derive(Debug, Serialize)]
pub struct Entry {
    pub id: String,
    pub(crate) status: MeetingStatus,
    pub(crate) worker: String,
    pub(crate) title: Option<String>,
    pub(crate) agenda: Option<String>,
    pub(crate) requested_by: Option<String>,
    pub(crate) references: Vec<String>,
    pub(crate) created: Option<String>,
    pub(crate) session_id: Option<String>,
    pub(crate) branch: Option<String>,
    pub(crate) linked_artifacts: Vec<String>,
    pub(crate) linked_more: u64,
    /// The ports its turn at work holds (`workspace.ports`): `{"count": 3, "first": 41000}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ports: Option<crate::worker::ports::PortRange>,
    pub(crate) reason: Option<String>,
}

impl Entry {
    /// Meeting `m` of the project named `project` in `home`.
    pub fn of(home: &crate::config::Home, project: &str, m: &Meeting) -> Entry {
        Entry {
            ports: crate::worker::ports::shown(home, &home.meeting_state(project, &m.id)),
            id: m.id.clone(),
            status: m.effective_status(),
            worker: m.worker.clone(),
            title: m.title.clone(),
            agenda: m.agenda.clone(),
            requested_by: m.requested_by.clone(),
            references: m.references.clone(),
            created: m.owned.created.clone(),
            session_id: m.session_id().map(str::to_string),
            branch: m.owned.branch.clone(),
            linked_artifacts: m.linked_artifacts(),
            linked_more: m.linked_more(),
            reason: m.owned.reason.clone(),
        }
    }
}

/// `show`: as `guild-hall meeting show --json` gives it.
#[derive(Debug, Serialize)]
pub struct Shown {
    #[serde(flatten)]
    pub(crate) meeting: Entry,
    pub(crate) notes: Option<String>,
    /// Its timeline, oldest first.
    pub log: Vec<Json>,
}

impl Shown {
    pub fn of(home: &crate::config::Home, project: &str, m: &Meeting, log: Vec<Json>) -> Shown {
        Shown { meeting: Entry::of(home, project, m), notes: m.owned.notes.clone(), log }
    }
}

impl<T: Reply> Reply for Opened<T> {}
impl Reply for Summary {}
impl Reply for Closed {}
impl Reply for Listed {}
impl Reply for Shown {}
