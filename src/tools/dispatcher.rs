//! The dispatcher: how a main agent or a tool hands out work and follows it (REQ-WD-5..18).
//! Served as `mcp --manager` and as the `worker/*` JSON-RPC methods, from this one list; each
//! operation is an [`Operations`] method, which the service's dispatcher
//! (`ops::dispatcher::Dispatcher`, over one project) implements: the service depends on this
//! catalogue, never the other way round.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Tool, ToolError};

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Dispatch {
    /// A short label for the job (shown by list).
    pub(crate) description: String,
    /// The full prompt: the outcome wanted and how the worker can verify it.
    pub(crate) task: String,
    /// Optional: which worker, and limits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) config: Option<DispatchConfig>,
}

#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct DispatchConfig {
    /// A worker package name (default: the project's default_worker).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) worker: Option<String>,
    /// At most this many agent turns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) max_turns: Option<u32>,
    /// At most this many US dollars of model use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) max_budget_usd: Option<f64>,
}

#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Detail {
    /// `{jobId, status}` for each job.
    #[default]
    Simple,
    /// Also the description and latest progress.
    Detailed,
}

#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct List {
    /// "simple" (default) or "detailed" (adds description and latest progress).
    #[serde(default)]
    pub(crate) detail: Detail,
    /// A glob matched against job descriptions, e.g. "*survey*".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) filter: Option<String>,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Job {
    /// The jobId returned by dispatch.
    #[serde(rename = "jobId")]
    pub(crate) job_id: String,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MeetingRequest {
    /// The worker the person is to meet (a package with the `meeting` capability).
    pub(crate) worker: String,
    /// Why a meeting is needed: its agenda, shown to the person with the request.
    pub(crate) reason: String,
    /// Artifacts that prompted it, relative to the project root (findings, commissions, ...).
    #[serde(default)]
    pub(crate) references: Vec<String>,
    /// A short title for the meeting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) title: Option<String>,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AnswerQuestion {
    /// The job (commission) whose worker asked.
    #[serde(rename = "jobId")]
    pub(crate) job_id: String,
    /// The answer, as the worker will read it.
    pub(crate) text: String,
    /// Which open question (its number in `status`'s openQuestions); default: the oldest open.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) question: Option<u32>,
}

/// What carries the dispatcher's operations out, one method per tool.
pub trait Operations {
    fn dispatch(&self, req: Dispatch) -> Result<Dispatched, ToolError>;
    fn list(&self, req: List) -> Result<Jobs, ToolError>;
    fn status(&self, job: &str) -> Result<JobStatus, ToolError>;
    fn result(&self, job: &str) -> Result<JobResult, ToolError>;
    fn cancel(&self, job: &str) -> Result<Cancelled, ToolError>;
    fn delete(&self, job: &str) -> Result<Deleted, ToolError>;
    fn meeting_request(&self, req: MeetingRequest) -> Result<MeetingRequested, ToolError>;
    fn answer(&self, req: AnswerQuestion) -> Result<Answered, ToolError>;
}

/// The dispatcher's operations, on whatever carries them out.
pub fn tools<D: Operations + 'static>() -> Vec<Tool<D>> {
    vec![
        Tool::new(
            "dispatch",
            "Hand a task to a worker. Returns {jobId} at once; the work runs in the background (its own branch, worktree and process) and is merged when done.",
            |d: &D, a: Dispatch| d.dispatch(a),
        ),
        Tool::new(
            "list",
            "List jobs: {jobs: [{jobId, status}]}, or with detail \"detailed\" also description and latest progress. filter is a glob on descriptions.",
            |d: &D, a: List| d.list(a),
        ),
        Tool::new(
            "status",
            "A job's state: status (running, completed, failed, cancelled), latest progress, the worker's open questions and decisions, error, times. Poll it; relay questions to the person.",
            |d: &D, a: Job| d.status(&a.job_id),
        ),
        Tool::new(
            "result",
            "A completed job's result: {jobId, output, artifacts}. An error while it is running, or if it failed or was cancelled.",
            |d: &D, a: Job| d.result(&a.job_id),
        ),
        Tool::new(
            "cancel",
            "Stop a job. Idempotent: an ended job just reports its status. Work done so far is kept on its branch.",
            |d: &D, a: Job| d.cancel(&a.job_id),
        ),
        Tool::new(
            "delete",
            "Delete a completed or cancelled job and everything it owns (its file, timeline, records and branches). Running and failed jobs are refused.",
            |d: &D, a: Job| d.delete(&a.job_id),
        ),
        Tool::new(
            "meeting_request",
            "Ask the person for a live meeting with a worker, when a question needs talking through: writes a meeting request (.lore/meetings/<id>.md, status: requested) that the person accepts, declines or leaves for later. Returns {meetingId}.",
            |d: &D, a: MeetingRequest| d.meeting_request(a),
        ),
        Tool::new(
            "answer",
            "Answer a question a job's worker asked and waits on (status shows it in openQuestions, with its number): the worker gets the answer and goes on. Refused when no question is open. Returns {jobId, question, asked, answer}.",
            |d: &D, a: AnswerQuestion| d.answer(a),
        ),
    ]
}

/// `answer`: the question answered.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Answered {
    pub(crate) job_id: String,
    /// The question's number.
    pub(crate) question: u32,
    /// The question, as the worker asked it.
    pub(crate) asked: String,
    pub(crate) answer: String,
}

impl super::Reply for Answered {
    fn text(&self) -> String {
        format!(
            "{}: answered question {} ({:?}); the worker gets it on the next pass (`guild-hall watch`, or `guild-hall reconcile --once`)",
            self.job_id, self.question, self.asked
        )
    }
}

/// `meeting_request`: the request written.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MeetingRequested {
    pub(crate) meeting_id: String,
    pub(crate) status: &'static str,
}

impl super::Reply for MeetingRequested {}

/// `dispatch`: the new job.
#[derive(Debug, Serialize)]
pub struct Dispatched {
    #[serde(rename = "jobId")]
    pub(crate) job_id: String,
}

/// One job in `list`; description and summary only when detailed.
#[derive(Debug, Serialize)]
pub(crate) struct JobRow {
    #[serde(rename = "jobId")]
    pub(crate) job_id: String,
    pub(crate) status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) description: Option<String>,
    /// The latest progress (detailed only; `null` when there is none yet).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) summary: Option<Option<String>>,
    /// Failed or cancelled while its processes are still being stopped (only then).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) stopping: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct Jobs {
    pub(crate) jobs: Vec<JobRow>,
}

#[derive(Debug, Serialize)]
pub(crate) struct Decision {
    pub(crate) question: serde_json::Value,
    pub(crate) decision: serde_json::Value,
    pub(crate) reasoning: serde_json::Value,
}

/// `status`: REQ-WD-11's state, and our exact one as `commissionStatus`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JobStatus {
    pub(crate) job_id: String,
    pub(crate) status: &'static str,
    pub(crate) commission_status: &'static str,
    pub(crate) description: String,
    pub(crate) summary: Option<String>,
    pub(crate) questions: Vec<String>,
    /// The questions its worker waits on, each with its number (what `answer` takes).
    pub(crate) open_questions: Vec<OpenQuestion>,
    pub(crate) decisions: Vec<Decision>,
    pub(crate) error: Option<String>,
    /// Failed or cancelled, but processes of its attempt are still being stopped (e.g.
    /// "cancelling: worker still running"); `completedAt` is set only once they are all gone.
    pub(crate) stopping: Option<String>,
    pub(crate) started_at: Option<String>,
    pub(crate) completed_at: Option<String>,
}

/// A question a job's worker waits on.
#[derive(Debug, Serialize)]
pub(crate) struct OpenQuestion {
    pub(crate) number: u32,
    pub(crate) question: String,
    pub(crate) asked: String,
}

/// `result`: what a completed job produced.
#[derive(Debug, Serialize)]
pub struct JobResult {
    #[serde(rename = "jobId")]
    pub(crate) job_id: String,
    pub(crate) output: String,
    pub(crate) artifacts: Vec<String>,
}

/// `cancel`: the job's status after the request.
#[derive(Debug, Serialize)]
pub struct Cancelled {
    #[serde(rename = "jobId")]
    pub(crate) job_id: String,
    pub(crate) status: &'static str,
}

/// `delete`: the job is gone.
#[derive(Debug, Serialize)]
pub struct Deleted {
    #[serde(rename = "jobId")]
    pub(crate) job_id: String,
    pub(crate) deleted: bool,
}

impl super::Reply for Dispatched {}
impl super::Reply for Jobs {}
impl super::Reply for JobStatus {}
impl super::Reply for JobResult {}
impl super::Reply for Cancelled {}
impl super::Reply for Deleted {}
