//! The dispatcher: how a main agent or a tool hands out work and follows it (REQ-WD-5..18).
//! Served as `mcp --manager` and as the `worker/*` JSON-RPC methods, from this one list; each
//! operation is an [`Operations`] method, which the service's dispatcher
//! (`ops::dispatcher::Dispatcher`, over one project) implements: the service depends on this
//! catalogue, never the other way round.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Tool, ToolError};
use crate::activity::diff::{self, Diff};

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
    /// At most this many US dollars of model use: the attempt is stopped past them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) max_budget_usd: Option<f64>,
    /// At most this many tokens (input, output and cached): the attempt is stopped past them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) max_tokens: Option<u64>,
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
pub struct Revise {
    /// The jobId of a job in review.
    #[serde(rename = "jobId")]
    pub(crate) job_id: String,
    /// What to change: each item general (`{text}`) or at a place of the work (`{text, path,
    /// line}`, the path relative to the project root). At least one.
    pub(crate) feedback: Vec<crate::artifact::Feedback>,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Reject {
    /// The jobId of a job in review.
    #[serde(rename = "jobId")]
    pub(crate) job_id: String,
    /// Why (kept in its reason and timeline).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) message: Option<String>,
}

/// `redispatch`: a failed or cancelled job set back to pending for a new attempt.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Redispatch {
    /// The jobId of a failed or cancelled job.
    #[serde(rename = "jobId")]
    pub(crate) job_id: String,
}

/// `abandon`: a job given up for good, with why.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Abandon {
    /// The jobId of a pending, blocked, failed or cancelled job.
    #[serde(rename = "jobId")]
    pub(crate) job_id: String,
    /// Why (kept in its reason and timeline).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) message: Option<String>,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct JobDiff {
    /// The jobId returned by dispatch.
    #[serde(rename = "jobId")]
    pub(crate) job_id: String,
    /// Only each file's lines changed, without the patches.
    #[serde(default)]
    pub(crate) stat: bool,
}

/// `usage`: what the project's ended attempts used, grouped, since a date.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UsageQuery {
    /// Group by commission (a wave task by its id), worker, plan or day (default: commission).
    #[serde(default)]
    pub(crate) by: By,
    /// Only attempts that ended on or after this day (`2026-11-01`) or time (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) since: Option<String>,
}

/// What the rows group by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum By {
    /// A commission, or a wave task (by its canonical id).
    #[default]
    Commission,
    /// The worker package.
    Worker,
    /// The plan (`-`: work of no plan).
    Plan,
    /// The day the attempt ended (UTC).
    Day,
}

impl By {
    pub fn parse(s: &str) -> Result<By, String> {
        Ok(match s {
            "commission" => By::Commission,
            "worker" => By::Worker,
            "plan" => By::Plan,
            "day" => By::Day,
            other => return Err(format!("--by {other:?}: expected one of commission, worker, plan, day")),
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            By::Commission => "commission",
            By::Worker => "worker",
            By::Plan => "plan",
            By::Day => "day",
        }
    }
}

/// One group's sum.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UsageRow {
    /// The commission, task, worker, plan or day.
    pub key: String,
    /// How many attempts it sums.
    pub attempts: usize,
    pub usage: crate::worker::usage::Usage,
}

/// The report: the rows in key order, and their total.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UsageReport {
    pub by: By,
    /// Only attempts that ended on or after this day (or time), as given.
    pub since: Option<String>,
    pub rows: Vec<UsageRow>,
    pub total: crate::worker::usage::Usage,
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
    fn approve(&self, job: &str) -> Result<Reviewed, ToolError>;
    fn revise(&self, req: Revise) -> Result<Reviewed, ToolError>;
    fn reject(&self, req: Reject) -> Result<Reviewed, ToolError>;
    fn abandon(&self, req: Abandon) -> Result<Abandoned, ToolError>;
    fn redispatch(&self, req: Redispatch) -> Result<Redispatched, ToolError>;
    fn meeting_request(&self, req: MeetingRequest) -> Result<MeetingRequested, ToolError>;
    fn diff(&self, job: &str, detail: diff::Detail) -> Result<Diff, ToolError>;
    fn usage(&self, req: UsageQuery) -> Result<UsageReport, ToolError>;
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
            "A job's state: status (running, review, completed, failed, cancelled; review: it waits for a person's approve, revise or reject), latest progress, the worker's open questions and decisions, error, times. Poll it; relay questions to the person.",
            |d: &D, a: Job| d.status(&a.job_id),
        ),
        Tool::new(
            "result",
            "A completed job's result, or one in review: {jobId, output, artifacts}. An error while it is running, or if it failed or was cancelled.",
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
            "approve",
            "Approve a job in review (status review: its work is committed on its branch, nothing merged): its work is squash-merged and it completes. Refused unless it is in review.",
            |d: &D, a: Job| d.approve(&a.job_id),
        ),
        Tool::new(
            "revise",
            "Send a job in review back with feedback: a new attempt continues on the same branch, the feedback in its prompt (and its agent session resumed where the worker can). feedback: [{text, path?, line?}].",
            |d: &D, a: Revise| d.revise(a),
        ),
        Tool::new(
            "reject",
            "Reject a job in review: it is cancelled, its work kept on its branch. An optional message says why.",
            |d: &D, a: Reject| d.reject(a),
        ),
        Tool::new(
            "abandon",
            "Give a job up for good (\"we won't do this\"): pending, blocked, failed or cancelled jobs only; it ends abandoned, and a job depending on it no longer waits for it. An optional message says why.",
            |d: &D, a: Abandon| d.abandon(a),
        ),
        Tool::new(
            "redispatch",
            "Run a failed or cancelled job again: it is set back to pending and a new attempt starts from the work kept on its branch. Refused for any other status (a completed job is final; a running one can only be cancelled).",
            |d: &D, a: Redispatch| d.redispatch(a),
        ),
        Tool::new(
            "meeting_request",
            "Ask the person for a live meeting with a worker, when a question needs talking through: writes a meeting request (.lore/meetings/<id>.md, status: requested) that the person accepts, declines or leaves for later. Returns {meetingId}.",
            |d: &D, a: MeetingRequest| d.meeting_request(a),
        ),
        Tool::new(
            "diff",
            DIFF,
            |d: &D, a: JobDiff| d.diff(&a.job_id, diff::Detail::of(a.stat)),
        ),
        Tool::new(
            "usage",
            "What the project's work used: tokens and dollars of every ended attempt (as each agent reported them, or priced from prices: in config.yaml; no dollars where none are known), summed by commission, worker, plan or day, since a day. Returns {by, since, rows: [{key, attempts, usage}], total}.",
            |d: &D, a: UsageQuery| d.usage(a),
        ),
        Tool::new(
            "answer",
            "Answer a question a job's worker asked and waits on (status shows it in openQuestions, with its number): the worker gets the answer and goes on. Refused when no question is open. Returns {jobId, question, asked, answer}.",
            |d: &D, a: AnswerQuestion| d.answer(a),
        ),
    ]
}

/// What `diff` (a job's) and `plan/diff` (a task's) say they give.
pub(crate) const DIFF: &str = "The change its latest attempt would bring onto the integration branch (its branch from the merge base to its tip, as a squash merge brings it): {id, branch, base, tip, files: [{path, old_path?, status, additions, deletions, binary, patch}], additions, deletions}. A binary file's patch is null; stat: true leaves the patches out. Not found while it has no branch.";

/// `diff`: the change, as `guild-hall diff --json` gives it; to an agent, the stat and the
/// patches as git prints them.
impl super::Reply for Diff {
    fn text(&self) -> String {
        let mut out = self.stat(80).join("\n");
        for (_, line) in self.lines() {
            out.push('\n');
            out.push_str(line);
        }
        out
    }
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

/// `approve`, `revise`, `reject`: the request written (`desired:`), which the reconciler
/// carries out; the job is still in review until it does.
#[derive(Debug, Serialize)]
pub struct Reviewed {
    #[serde(rename = "jobId")]
    pub(crate) job_id: String,
    /// `approved`, `revised` or `rejected`.
    pub(crate) requested: &'static str,
}

impl super::Reply for Reviewed {}

/// `abandon`: the request written; a pass carries it out.
#[derive(Debug, Serialize)]
pub struct Abandoned {
    #[serde(rename = "jobId")]
    pub(crate) job_id: String,
    /// `abandoned`.
    pub(crate) requested: &'static str,
}

impl super::Reply for Abandoned {}

/// `redispatch`: the request written; a pass starts the new attempt.
#[derive(Debug, Serialize)]
pub struct Redispatched {
    #[serde(rename = "jobId")]
    pub(crate) job_id: String,
    /// `pending`.
    pub(crate) requested: &'static str,
}

impl super::Reply for Redispatched {}

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
impl super::Reply for UsageReport {}
