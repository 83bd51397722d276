//! The plan operations people and tools call (create, show, list, retry, cancel), served as
//! the `plan/*` JSON-RPC methods from this one list. Each is an [`Operations`] method,
//! implemented above the kinds (`ops::catalogue::Plans`): this catalogue never depends on them.
//! Each writes what a person would write in the plan's file; the reconciler carries it out.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use super::{Reply, Tool, ToolError};
use crate::activity::diff::{Detail, Diff};
use crate::artifact::plan::PlanStatus;

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Create {
    pub(crate) title: String,
    /// A list of waves, each a list of tasks `{id, worker, title, prompt}`.
    pub(crate) waves: Json,
    /// Use this id instead of the first free one derived from the title; refused, naming what
    /// holds it, if anything of it exists: ids are never reused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) id: Option<String>,
    /// Tasks of a wave running at once (default 1).
    #[serde(default = "one")]
    pub(crate) parallelism: usize,
    /// Refused whenever present: verify is an argv the reconciler runs unconfined, with the
    /// person's environment, so only a person writes it (into the plan's file). Kept as a
    /// field, out of the schema, so asking for it gets that reason rather than "unknown field".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(skip)]
    pub(crate) verify: Option<Json>,
    /// The worker of fix-forward commissions when verify fails.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) fixer: Option<String>,
    /// Write it as a draft: it does not start.
    #[serde(default)]
    pub(crate) draft: bool,
}

fn one() -> usize {
    1
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct PlanId {
    pub(crate) id: String,
}

#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct List {}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct TaskDiff {
    /// The plan's id.
    pub(crate) id: String,
    /// The task: its canonical id (`<plan>:exec:wave-<W>:task-<T>`) or a label no other task has.
    pub(crate) task: String,
    /// Only each file's lines changed, without the patches.
    #[serde(default)]
    pub(crate) stat: bool,
}

/// What carries the plan operations out, one method per operation.
pub(crate) trait Operations {
    fn create(&self, req: Create) -> Result<Created, ToolError>;
    fn show(&self, id: &str) -> Result<Shown, ToolError>;
    fn list(&self) -> Result<Listed, ToolError>;
    /// Ask for `to` (pending: retry; cancelled: cancel), as a person would write it.
    fn request(&self, id: &str, to: PlanStatus) -> Result<Requested, ToolError>;
    /// A task's change ([`crate::tools::dispatcher::DIFF`]).
    fn diff(&self, id: &str, task: &str, detail: Detail) -> Result<Diff, ToolError>;
}

/// The plan operations, on whatever carries them out.
pub(crate) fn tools<P: Operations + 'static>() -> Vec<Tool<P>> {
    vec![
        Tool::new(
            "create",
            "Write a new plan (.lore/plans/<id>.md) of waves of tasks; it is submitted (pending) unless draft, and the reconciler starts it. Returns {plan}.",
            |p: &P, a: Create| match a.verify {
                Some(_) => Err(ToolError::Refused(VERIFY_REFUSED.into())),
                None => p.create(a),
            },
        ),
        Tool::new("show", "A plan: status, wave, reason, each task's state (with its resume class), and its log.", |p: &P, a: PlanId| {
            p.show(&a.id)
        }),
        Tool::new("list", "The plans: each one's id, title, status, wave and reason.", |p: &P, _: List| p.list()),
        Tool::new(
            "retry",
            "Run again what did not succeed (failed and shut-down tasks, or a failed verify): writes status: pending.",
            |p: &P, a: PlanId| p.request(&a.id, PlanStatus::Pending),
        ),
        Tool::new(
            "cancel",
            "Stop the plan: running tasks are stopped; nothing merged is undone. Writes status: cancelled.",
            |p: &P, a: PlanId| p.request(&a.id, PlanStatus::Cancelled),
        ),
        Tool::new("diff", TASK_DIFF, |p: &P, a: TaskDiff| p.diff(&a.id, &a.task, Detail::of(a.stat))),
    ]
}

/// `diff`: a task's change, as the dispatcher's `diff` gives a job's.
const TASK_DIFF: &str = "A task's change: the commit its copy-back made on the integration branch (before it, what its branch holds beyond the merge base): {id, branch, base, tip, files: [{path, old_path?, status, additions, deletions, binary, patch}], additions, deletions}. A binary file's patch is null; stat: true leaves the patches out. Not found while the task has no branch.";

/// Why `plan/create` takes no `verify`: before the catalogue served plans, an unconfined command
/// could only come from someone who can write the plan file; an endpoint client must not gain it.
pub(crate) const VERIFY_REFUSED: &str = "verify is refused here: it runs unconfined, with the person's environment, so a person must write it into the plan file (.lore/plans/<id>.md)";

/// `create`: the new plan's id.
#[derive(Debug, Serialize)]
pub(crate) struct Created {
    pub(crate) plan: String,
}

/// `retry`, `cancel`: what was written.
#[derive(Debug, Serialize)]
pub(crate) struct Requested {
    pub(crate) plan: String,
    pub(crate) requested: PlanStatus,
}

/// `show`: as `guild-hall plan show --json` gives it.
#[derive(Debug, Serialize)]
pub struct Shown {
    pub(crate) plan: String,
    pub(crate) title: Option<String>,
    pub status: PlanStatus,
    /// The wave it is at (none before it ran).
    pub(crate) wave: Option<usize>,
    /// How many waves it has.
    pub(crate) waves: usize,
    pub(crate) parallelism: usize,
    pub(crate) verify: Option<Vec<String>>,
    pub(crate) fixer: Option<String>,
    pub(crate) reason: Option<String>,
    pub(crate) verify_runs: u32,
    pub tasks: Vec<ShownTask>,
    /// Its timeline, oldest first.
    pub log: Vec<Json>,
    /// A runtime file that cannot be trusted: nothing is done for the plan until it is
    /// repaired or removed.
    pub problem: Option<String>,
    /// At work in another home (this one never ran it): what is known, what a person can do.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elsewhere: Option<String>,
    /// Ended on the integration branch while the checkout's file says it is to run: not run
    /// again here, and what a person can do (`guild-hall land`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub integrated: Option<String>,
    /// What its tasks' ended attempts used (`usage:` as written), when any reported it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<crate::worker::usage::Usage>,
    /// Its REVIEW stage's verdicts, from its timeline's `review_verdict` events, oldest first:
    /// `{reviewer, round, verdict, summary, comments: [{path, line, text}]}` (`round`: the
    /// verify run they follow; `verdict: none` for a reviewer that gave none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub reviews: Vec<Json>,
}

impl Shown {
    /// Its reviewers' verdicts as lines, as `status` shows a commission's `reviews:`
    /// (`picky on round 1: changes: summary`, each comment under it as `  path:line: text`).
    pub fn review_lines(&self) -> Vec<String> {
        verdict_lines(&self.reviews, "round")
    }
}

/// Reviewers' verdicts as lines, one a verdict (`picky on attempt 1: changes: summary`: `per`
/// names what each reviewed, a commission's `attempt` or a plan's `round`), each comment under
/// its verdict as `  path:line: text`.
pub(crate) fn verdict_lines(reviews: &[Json], per: &str) -> Vec<String> {
    let mut out = Vec::new();
    for r in reviews {
        let s = |v: &Json, k: &str| v.get(k).and_then(Json::as_str).unwrap_or("").to_string();
        let n = r.get(per).and_then(Json::as_u64).unwrap_or(0);
        out.push(format!("{} on {per} {n}: {}: {}", s(r, "reviewer"), s(r, "verdict"), s(r, "summary")));
        for c in r.get("comments").and_then(Json::as_array).into_iter().flatten() {
            let at = match c.get("line").and_then(Json::as_u64) {
                Some(l) => format!("{}:{l}", s(c, "path")),
                None => s(c, "path"),
            };
            out.push(format!("  {at}: {}", s(c, "text")));
        }
    }
    out
}

#[derive(Debug, Serialize)]
pub struct ShownTask {
    /// Its canonical id.
    pub task: String,
    pub(crate) label: String,
    pub(crate) wave: usize,
    pub(crate) worker: String,
    pub(crate) title: Option<String>,
    pub(crate) state: String,
    /// How it would resume, from what is there now.
    pub(crate) class: Option<&'static str>,
    pub(crate) attempt: u32,
    pub(crate) reason: Option<String>,
    /// What its latest attempt submitted (`submit_result`), if it did.
    pub result: Option<ShownResult>,
    /// The ports its attempt at work holds (`workspace.ports`): `{"count": 3, "first": 41000}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ports: Option<crate::worker::ports::PortRange>,
}

/// A task's submitted result, as `show` gives it.
#[derive(Debug, Clone, Serialize)]
pub struct ShownResult {
    pub(crate) attempt: u32,
    pub summary: String,
    pub artifacts: Vec<String>,
}

/// One plan in `list`.
#[derive(Debug, Serialize)]
pub struct Row {
    pub plan: String,
    pub title: Option<String>,
    pub status: PlanStatus,
    pub wave: Option<usize>,
    pub waves: usize,
    /// Its tasks, in every wave.
    pub tasks: usize,
    /// Of them, those whose commit is on the integration branch.
    pub tasks_landed: usize,
    pub reason: Option<String>,
    /// At work in another home (this one never ran it): what is known, what a person can do.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elsewhere: Option<String>,
    /// Ended on the integration branch while the checkout's file says it is to run: not run
    /// again here, and what a person can do (`guild-hall land`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub integrated: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct Listed {
    pub plans: Vec<Row>,
    /// Plan files that cannot be read, and why.
    pub problems: Vec<String>,
}

impl Reply for Created {}
impl Reply for Requested {}
impl Reply for Shown {}
impl Reply for Listed {}
