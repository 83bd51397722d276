//! The commission artifact: its status vocabulary, its keys declared once (the schema and what
//! the parser validates, with `file:line:col` problems), the keys the reconciler owns typed
//! ([`Owned`]), and a new one's text (`render`). Pure: no I/O.

use std::fmt;
use std::hash::Hash;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_yaml_ng::{Mapping, Value};

use super::frontmatter::{key_position, owned_text, split, Problem};
use super::store::content_hash;
use crate::artifact::ids;

super::vocabulary::vocabulary! {
    /// The commission state machine's states (REQ-COM-5, plus `draft`).
    pub enum Status ("status") {
        Draft = "draft",
        Pending = "pending",
        Blocked = "blocked",
        Dispatched = "dispatched",
        InProgress = "in_progress",
        /// Its work submitted and committed on its branch, nothing merged: a person approves,
        /// revises or rejects it (only with `review: required`).
        Review = "review",
        Completed = "completed",
        Failed = "failed",
        Cancelled = "cancelled",
        /// Given up for good ("we won't do this"), as Guild Hall has it: terminal, and it
        /// satisfies a dependency on it. From pending, blocked, failed or cancelled.
        Abandoned = "abandoned",
    }
}

impl Status {
    /// A worker process belongs to this state.
    pub(crate) fn is_active(self) -> bool {
        matches!(self, Status::Dispatched | Status::InProgress)
    }

    pub(crate) fn is_terminal(self) -> bool {
        matches!(self, Status::Completed | Status::Failed | Status::Cancelled | Status::Abandoned)
    }
}

/// A one-shot request written by a person or tool into `desired:`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Desired {
    Dispatched,
    Cancelled,
    /// In review: merge the work (`guild-hall approve`).
    Approved,
    /// In review: a new attempt on the same branch, given `feedback:` (`guild-hall revise`).
    Revised,
    /// In review: give the work up, its branch kept (`guild-hall reject`).
    Rejected,
    /// Pending, blocked, failed or cancelled: give it up for good (`commission abandon`).
    Abandoned,
}

impl Desired {
    pub(crate) const ALL: [Desired; 6] =
        [Desired::Dispatched, Desired::Cancelled, Desired::Approved, Desired::Revised, Desired::Rejected, Desired::Abandoned];

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Desired::Dispatched => "dispatched",
            Desired::Cancelled => "cancelled",
            Desired::Approved => "approved",
            Desired::Revised => "revised",
            Desired::Rejected => "rejected",
            Desired::Abandoned => "abandoned",
        }
    }
}

/// Whether a submitted attempt waits for a person (`review:` in `.lore/guild-hall.yaml`, a
/// package's `worker.yaml` or a commission; the most specific wins).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ReviewMode {
    /// Merged as soon as it is submitted.
    #[default]
    Auto,
    /// Held in `review`, committed on its branch, until a person approves, revises or rejects it.
    Required,
}

impl ReviewMode {
    /// The one that applies: the commission's, else its package's, else the project's.
    pub(crate) fn choose(commission: Option<ReviewMode>, package: Option<ReviewMode>, project: Option<ReviewMode>) -> ReviewMode {
        commission.or(package).or(project).unwrap_or_default()
    }
}

/// One piece of feedback on an attempt in review (`feedback:`, with `desired: revised`): what
/// to change, and optionally where (a path in the work, and a line of it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Feedback {
    /// What to change.
    pub text: String,
    /// Where: a path in the work, relative to the project root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Where in `path`: a line number (1-based).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
}

/// Where a revision's feedback came from. A person's request today; a failing check, a merge
/// conflict or a reviewer worker's verdict send work back along the same path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum FeedbackFrom {
    /// `guild-hall revise`, or `desired: revised` with `feedback:`.
    Person,
    /// A `checks:` command that failed after submit (automatic, bounded by `max_revisions`).
    Check,
    /// A squash-merge that conflicted outside `.lore/` (automatic, bounded by `max_revisions`).
    Conflict,
    /// A reviewer worker's `changes` verdict (automatic, bounded by `max_revisions`).
    Reviewer,
}

impl FeedbackFrom {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            FeedbackFrom::Person => "person",
            FeedbackFrom::Check => "check",
            FeedbackFrom::Conflict => "conflict",
            FeedbackFrom::Reviewer => "reviewer",
        }
    }
}

/// A new attempt sent back to work on the branch of the attempt it revises, with feedback on
/// that attempt: what the decider records ([`crate::activity::state::Record`]) and the prompt
/// is made from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Revision {
    /// The attempt this one is.
    pub(crate) attempt: u32,
    /// The attempt reviewed and sent back.
    pub(crate) after: u32,
    /// The branch both work on.
    pub(crate) branch: String,
    pub(crate) feedback: Vec<Feedback>,
    pub(crate) from: FeedbackFrom,
    /// Automatic send-backs (a check's, a conflict's) in this line of attempts, this one's
    /// included: what `max_revisions` bounds (a person's revise carries the count on).
    #[serde(default)]
    pub(crate) automatic: u32,
}

impl Revision {
    /// What is appended to the worker's prompt: "Feedback on attempt N", then each item.
    pub(crate) fn prompt_section(&self) -> String {
        let mut out = format!(
            "\n\n## Feedback on attempt {}\n\nYour earlier work on this task is on your branch, in your worktree: this attempt continues it. Change it as follows, then submit your result again.\n\n",
            self.after
        );
        if self.feedback.is_empty() {
            out.push_str("- (no comments: look over your work again)\n");
        }
        for f in &self.feedback {
            out.push_str(&format!("- {}\n", f.line_text().replace('\n', "\n  ")));
        }
        out
    }
}

impl Feedback {
    /// `path:line: text`, as the worker's prompt and the timeline give it.
    pub(crate) fn line_text(&self) -> String {
        match (&self.path, self.line) {
            (Some(p), Some(l)) => format!("{p}:{l}: {}", self.text),
            (Some(p), None) => format!("{p}: {}", self.text),
            _ => self.text.clone(),
        }
    }
}

/// A person's `answer:`: the text, for the oldest open question or question `question`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub(crate) enum AnswerRequest {
    /// `answer: TEXT`: the oldest open question's answer.
    Text(String),
    /// `answer: {question: N, text: TEXT}`.
    To {
        /// The question's number (`questions:` shows it).
        question: u32,
        text: String,
    },
}

impl AnswerRequest {
    pub(crate) fn text(&self) -> &str {
        match self {
            AnswerRequest::Text(t) | AnswerRequest::To { text: t, .. } => t,
        }
    }

    pub(crate) fn question(&self) -> Option<u32> {
        match self {
            AnswerRequest::Text(_) => None,
            AnswerRequest::To { question, .. } => Some(*question),
        }
    }

    /// As written in the frontmatter.
    pub(crate) fn value(&self) -> Value {
        serde_yaml_ng::to_value(self).unwrap_or(Value::Null)
    }
}

/// Which runner starts an activity's attempts (`runner:` in `.lore/guild-hall.yaml`, a
/// package's `worker.yaml`, or a commission's frontmatter; the most specific wins).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum RunnerName {
    /// The shim runs on this machine.
    #[default]
    Local,
    /// The shim runs as a Slurm batch job (`slurm:` in `.lore/guild-hall.yaml` says where).
    Slurm,
}

/// Optional per-commission overrides of the worker package's resource bounds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Resources {
    pub(crate) max_turns: Option<u64>,
    /// Dollars one attempt may spend: guild-hall stops it past them (and agents with a budget
    /// setting of their own are given it).
    pub(crate) max_budget_usd: Option<f64>,
    /// Tokens one attempt may use (input, output and cached together): stopped past them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) max_tokens: Option<u64>,
    /// CPUs one attempt gets on a cluster (`runner: slurm`: `--cpus-per-task`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) cpus: Option<u32>,
    /// Memory one attempt gets on a cluster (`runner: slurm`: `--mem`), in Slurm's words:
    /// `4G`, `500M`, a number of megabytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^[0-9]+[KMGT]?$"))]
    pub(crate) memory: Option<String>,
    /// The model its worker runs, over its package's (given to the worker as
    /// `GUILD_HALL_MODEL`, which the agent packages pass their CLI: `claude --model opus`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) model: Option<String>,
}

// The one declaration of a commission's keys: their types and descriptions are the schema
// editors validate against (`guild-hall schema commission`, [`super::schema`]); their values,
// kept as written, are what [`Commission::parse`] validates.
/// A commission artifact's frontmatter (`.lore/commissions/<id>.md`).
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields, title = "guild-hall commission")]
pub(crate) struct Frontmatter {
    /// What the commission is for (shown by `status`).
    #[schemars(with = "Option<String>")]
    title: Option<Value>,
    /// When it was written (informational).
    #[schemars(with = "Option<String>")]
    date: Option<super::frontmatter::Unread>,
    /// draft → pending submits it; pending|blocked|dispatched|in_progress → cancelled cancels
    /// it; failed|cancelled → pending runs it again; pending|blocked|failed|cancelled →
    /// abandoned gives it up for good. Any other edit is refused with a reason.
    #[schemars(with = "Option<Status>")]
    status: Option<Value>,
    /// The worker package that does the work (or a Guild Hall worker's identity).
    #[schemars(with = "super::value_schemas::WorkerName")]
    worker: Option<Value>,
    /// Paths that must be on the integration branch before it is dispatched.
    #[schemars(with = "Option<Vec<super::value_schemas::RelPath>>")]
    dependencies: Option<Value>,
    /// Paths it will produce: commissions depending on them wait for it.
    #[schemars(with = "Option<Vec<super::value_schemas::RelPath>>")]
    outputs: Option<Value>,
    /// Overrides of the package's resource bounds.
    #[schemars(with = "Option<Resources>")]
    resources: Option<Value>,
    /// Wall-clock limit of an attempt.
    #[schemars(with = "Option<super::value_schemas::Duration>")]
    timeout: Option<Value>,
    /// Where its attempts run (`local` or `slurm`), over its package's and the project's.
    #[schemars(with = "Option<RunnerName>")]
    runner: Option<Value>,
    /// `required`: a submitted attempt waits in `review` for a person (approve, revise,
    /// reject); `auto` (the default): merged at once. Over its package's and the project's.
    #[schemars(with = "Option<ReviewMode>")]
    review: Option<Value>,
    /// Commands (argv lists) run in the worktree after submit, as proof of the work.
    #[schemars(with = "Option<Vec<Vec<String>>>")]
    checks: Option<Value>,
    /// Automatic send-backs (a failing check, a conflict) before it fails.
    #[schemars(with = "Option<u32>")]
    max_revisions: Option<Value>,
    /// Reviewer workers (package names) run read-only over the diff once the checks pass, each
    /// giving a verdict; over its package's and the project's (`[]`: none).
    #[schemars(with = "Option<Vec<super::value_schemas::WorkerName>>")]
    reviewers: Option<Value>,
    /// A one-shot request, removed once carried out.
    #[schemars(with = "Option<Desired>")]
    desired: Option<Value>,
    /// The scheduled commission this one is a run of (informational; Guild Hall's key).
    #[schemars(with = "Option<String>")]
    source_schedule: Option<super::frontmatter::Unread>,
    /// `one-shot` (the default), or `scheduled`: a template (`schedule:`), read apart.
    #[schemars(with = "Option<super::value_schemas::CommissionType>")]
    r#type: Option<Value>,
    /// A scheduled commission's schedule (with `type: scheduled`).
    #[schemars(with = "Option<super::value_schemas::ScheduleBlock>")]
    schedule: Option<Value>,
    /// With `desired: revised`: what to change, general or at `path` and `line`; removed with
    /// the request, once given to the next attempt (the timeline keeps it).
    #[schemars(with = "Option<Vec<Feedback>>")]
    feedback: Option<Value>,
    /// How long its worker's `ask` waits for a person, over its package's and the project's
    /// (default 30m).
    #[schemars(with = "Option<super::value_schemas::Duration>")]
    ask_timeout: Option<Value>,
    /// A person's answer to the worker's open question (the oldest, or `{question: N, text:
    /// ...}`): moved into `questions:` and removed once taken.
    #[schemars(with = "Option<AnswerRequest>")]
    answer: Option<Value>,
    // Written by guild-hall.
    /// Written by guild-hall: the FIFO key.
    #[schemars(with = "Option<String>")]
    created: Option<Value>,
    /// Written by guild-hall: the latest attempt.
    #[schemars(with = "Option<u32>")]
    attempt: Option<Value>,
    /// Written by guild-hall: the latest attempt's branch.
    #[schemars(with = "Option<String>")]
    branch: Option<Value>,
    /// Written by guild-hall: the latest progress report.
    #[schemars(with = "Option<String>")]
    progress: Option<Value>,
    /// Written by guild-hall: the worker's questions: a logged one as its text, one it asked
    /// a person as its question, number, when asked, and its answer and when (or `open`).
    #[schemars(with = "Option<Vec<super::value_schemas::Question>>")]
    questions: Option<super::frontmatter::Unread>,
    /// Written by guild-hall: the submitted result.
    #[schemars(with = "Option<super::value_schemas::CommissionResult>")]
    result: Option<super::frontmatter::Unread>,
    /// Written by guild-hall: the latest attempt's `checks:` as run after submit (command, exit
    /// code, the tail of a failing one's output), up to the first that failed.
    #[schemars(with = "Option<Vec<super::value_schemas::CheckResult>>")]
    check_results: Option<super::frontmatter::Unread>,
    /// Written by guild-hall: the reviewer workers' verdicts on the latest attempts (reviewer,
    /// attempt, verdict, summary, comments on lines).
    #[schemars(with = "Option<Vec<super::value_schemas::ReviewVerdict>>")]
    reviews: Option<super::frontmatter::Unread>,
    /// Written by guild-hall: artifacts the work produced.
    #[schemars(with = "Option<Vec<String>>")]
    linked_artifacts: Option<super::frontmatter::Unread>,
    /// Written by guild-hall: why it failed, was cancelled, blocked, or an edit refused.
    #[schemars(with = "Option<String>")]
    reason: Option<Value>,
    /// Written by guild-hall: why an edit of a failed or cancelled commission was refused
    /// (`reason:` keeps why it failed).
    #[schemars(with = "Option<String>")]
    refused: Option<Value>,
    /// Written by guild-hall: when it reached its end.
    #[schemars(with = "Option<String>")]
    completed: Option<Value>,
    /// Written by guild-hall: what its attempts used.
    #[schemars(with = "Option<super::value_schemas::UsageFigures>")]
    usage: Option<super::frontmatter::Unread>,
    // Guild Hall's dialect ([`super::dialect`]): a file with `prompt:` or `activity_timeline:`
    // is in it, and keeps its shape.
    /// Guild Hall's dialect: the worker's prompt (the body is then where the result goes).
    #[schemars(with = "Option<String>")]
    prompt: Option<Value>,
    /// Guild Hall's dialect: its timeline, appended to (`timestamp`, `event`, `reason`, and
    /// `from`, `to` for a status change).
    #[schemars(with = "Option<Vec<std::collections::BTreeMap<String, serde_json::Value>>>")]
    activity_timeline: Option<Value>,
    /// Guild Hall's dialect: the latest progress report (our `progress:`).
    #[schemars(with = "Option<String>")]
    current_progress: Option<Value>,
    /// Guild Hall's dialect: overrides of the package's bounds (our `resources:`).
    #[schemars(with = "Option<super::dialect::ResourceOverrides>")]
    resource_overrides: Option<Value>,
    /// Guild Hall's dialect: kept as written.
    #[schemars(with = "Option<Vec<String>>")]
    tags: Option<super::frontmatter::Unread>,
    /// Guild Hall's dialect: its worker's title, kept as written.
    #[serde(rename = "workerDisplayTitle")]
    #[schemars(with = "Option<String>")]
    worker_display_title: Option<super::frontmatter::Unread>,
    /// Guild Hall's dialect: its project's name, kept as written.
    #[serde(rename = "projectName")]
    #[schemars(with = "Option<String>")]
    project_name: Option<super::frontmatter::Unread>,
    /// Guild Hall's dialect: what created it (an automated process), kept as written.
    #[schemars(with = "Option<std::collections::BTreeMap<String, serde_json::Value>>")]
    source: Option<super::frontmatter::Unread>,
    /// Guild Hall's dialect: an older place of the result, kept as written.
    #[schemars(with = "Option<String>")]
    result_summary: Option<super::frontmatter::Unread>,
    /// Written by guild-hall: its agent hit a rate or usage limit; it is not dispatched before
    /// this time (RFC 3339: the reset time, else a backoff). Removed to dispatch it sooner; a
    /// value that is no time is ignored.
    #[schemars(with = "Option<String>")]
    not_before: Option<Value>,
}

/// The keys only the reconciler writes.
pub(crate) const OWNED_KEYS: [&str; 15] = [
    "status",
    "created",
    "attempt",
    "branch",
    "progress",
    "questions",
    "result",
    "check_results",
    "reviews",
    "linked_artifacts",
    "reason",
    "refused",
    "completed",
    "usage",
    "not_before",
];

/// The keys a person writes as a one-shot request, which the reconciler removes once answered.
pub(crate) const REQUEST_KEYS: [&str; 2] = ["desired", "feedback"];

/// A parsed, validated commission artifact.
#[derive(Debug, Clone)]
pub struct Commission {
    pub(crate) id: String,
    pub(crate) path: PathBuf,
    /// Hash of the file's bytes when read: writes are dropped if it changed since.
    pub(crate) hash: u64,
    pub(crate) title: Option<String>,
    /// `None` when the file has no `status:` (a new file: taken as pending).
    pub(crate) status: Option<Status>,
    pub(crate) worker: String,
    pub(crate) dependencies: Vec<String>,
    /// Line and column of `dependencies:` (or of the frontmatter), for problems that name it.
    pub(crate) dependencies_at: (usize, usize),
    /// Paths this commission declares it will produce (optional): how dependency cycles
    /// between commissions are seen.
    pub(crate) outputs: Vec<String>,
    pub(crate) resources: Resources,
    /// Wall-clock limit of an attempt (`timeout:`), overriding the package's and the project's.
    pub(crate) timeout: Option<std::time::Duration>,
    /// Where its attempts run (`runner:`), over its package's and the project's.
    pub(crate) runner: Option<RunnerName>,
    pub(crate) desired: Option<Desired>,
    /// `review:` as written (the package's and the project's apply when absent).
    pub(crate) review: Option<ReviewMode>,
    /// `checks:` as written: argv lists, run after the project's and its package's once an
    /// attempt submits.
    pub(crate) checks: Vec<Vec<String>>,
    /// `max_revisions:` as written (the bound of automatic send-backs).
    pub(crate) max_revisions: Option<u32>,
    /// `reviewers:` as written (the package's and the project's apply when absent).
    pub(crate) reviewers: Option<Vec<String>>,
    /// `feedback:` as written (with `desired: revised`).
    pub(crate) feedback: Vec<Feedback>,
    /// How long its worker's `ask` waits (`ask_timeout:`), over its package's and the project's.
    pub(crate) ask_timeout: Option<std::time::Duration>,
    /// A person's answer to an open question (`answer:`), taken once.
    pub(crate) answer: Option<AnswerRequest>,
    /// The keys the reconciler writes or removes ([`OWNED_KEYS`] and `desired`), as parsed:
    /// what its writes are compared with. Other keys are validated into the typed fields above
    /// and not kept.
    pub(crate) fields: Mapping,
    /// The reconciler's keys, typed: what every reader reads of them.
    pub(crate) owned: Owned,
    /// The worker's prompt: the body, or in Guild Hall's dialect its `prompt:`.
    pub(crate) body: String,
    /// In Guild Hall's dialect ([`super::dialect`]): its body and timeline.
    pub(crate) dialect: Option<super::dialect::Dialect>,
}

/// What the reconciler last wrote of a commission, typed ([`OWNED_KEYS`] read once). A key
/// absent, or holding a value of another type (a hand edit), reads as none.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Owned {
    /// `created:`, the FIFO key.
    pub(crate) created: Option<String>,
    /// `attempt:`, the latest attempt (0: none yet).
    pub(crate) attempt: u32,
    /// `branch:`, the latest attempt's branch.
    pub branch: Option<String>,
    /// `progress:`, the latest progress report.
    pub(crate) progress: Option<String>,
    /// `reason:`, why it failed, was cancelled, blocked, or an edit refused.
    pub reason: Option<String>,
    /// `refused:`, why an edit of a failed or cancelled commission was refused.
    pub(crate) refused: Option<String>,
    /// `completed:`, when it reached its end.
    pub(crate) completed: Option<String>,
}

/// The keys a commission's frontmatter may hold: the schema's, so `check`, the parser and
/// editors know one list ([`super::keys::fields`]).
pub(crate) fn commission_keys() -> &'static [&'static str] {
    super::keys::fields::<Frontmatter>()
}

/// A commission's schema, built once: what editors get.
pub(crate) fn commission_schema() -> &'static serde_json::Value {
    static S: std::sync::OnceLock<serde_json::Value> = std::sync::OnceLock::new();
    S.get_or_init(|| schemars::schema_for!(Frontmatter).to_value())
}

/// The keys a commission may hold where, from its schema: what the unknown-key check
/// ([`super::keys::unknown`]) walks.
pub(crate) fn commission_shape() -> &'static super::keys::Shape {
    static S: std::sync::OnceLock<super::keys::Shape> = std::sync::OnceLock::new();
    S.get_or_init(|| super::keys::Shape::of(commission_schema()))
}

/// Where a key's value is wrong: the key and what to say ([`Commission::parse`] places it).
type Bad<'a> = dyn FnMut(&str, String) + 'a;

/// A list of relative paths (`dependencies:`, `outputs:`); `what` one of them is, for errors.
fn paths(key: &str, value: Option<Value>, what: &str, bad: &mut Bad<'_>) -> Vec<String> {
    let mut out = Vec::new();
    match value {
        None | Some(Value::Null) => {}
        Some(Value::Sequence(items)) => {
            for item in items {
                match item.as_str().map(ids::validate_rel_path) {
                    Some(Ok(p)) => out.push(p),
                    Some(Err(e)) => bad(key, format!("bad {what}: {e}")),
                    None => bad(key, format!("{key} must be a list of paths")),
                }
            }
        }
        Some(_) => bad(key, format!("{key} must be a list of paths")),
    }
    out
}

/// `resources:`, or Guild Hall's `resource_overrides:` (one of them). `resources_said`: an
/// unknown key in `resources:` was already said, at the key.
fn read_resources(resources: Option<Value>, overrides: Option<Value>, resources_said: bool, bad: &mut Bad<'_>) -> Resources {
    match (resources, overrides) {
        (Some(_), Some(_)) => {
            bad("resource_overrides", "resource_overrides and resources say the same (the bounds of its attempts): keep one".into());
            Resources::default()
        }
        (None, Some(v)) => match serde_yaml_ng::from_value::<super::dialect::ResourceOverrides>(v) {
            Ok(o) => Resources { max_turns: o.max_turns, max_budget_usd: o.max_budget_usd, model: o.model, ..Resources::default() },
            Err(_) if resources_said => Resources::default(),
            Err(e) => {
                bad("resource_overrides", format!("bad resource_overrides: {e} (allowed: maxTurns, maxBudgetUsd, model)"));
                Resources::default()
            }
        },
        (None | Some(Value::Null), None) => Resources::default(),
        (Some(v), None) => serde_yaml_ng::from_value(v).unwrap_or_else(|e| {
            // An unknown key in it is said above, at the key.
            if !resources_said {
                bad("resources", format!("bad resources: {e} (allowed: {})", super::keys::fields::<Resources>().join(", ")));
            }
            Resources::default()
        }),
    }
}

/// Text, or nothing (an empty string is none); `wrong` says what it must be.
fn read_text(key: &str, value: Option<Value>, wrong: &str, bad: &mut Bad<'_>) -> Option<String> {
    match value {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s).filter(|s| !s.is_empty()),
        Some(_) => {
            bad(key, wrong.into());
            None
        }
    }
}

/// `desired:`: a request, one of [`Desired::ALL`].
fn read_desired(value: Option<Value>, bad: &mut Bad<'_>) -> Option<Desired> {
    match value {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if Desired::ALL.iter().any(|d| d.as_str() == s) => Desired::ALL.into_iter().find(|d| d.as_str() == s),
        Some(v) => {
            let all: Vec<&str> = Desired::ALL.iter().map(|d| d.as_str()).collect();
            bad("desired", format!("unknown request desired: {} (expected one of: {})", show(&v), all.join(", ")));
            None
        }
    }
}

/// `type:` says a one-shot commission (a template is read apart, [`super::schedule`]: here
/// only by an operation on one id), and `schedule:` is only a template's.
fn one_shot(r#type: Option<&Value>, has_schedule: bool, bad: &mut Bad<'_>) {
    match r#type.and_then(Value::as_str) {
        None | Some("one-shot") if r#type.is_none_or(|v| v.is_string() || v.is_null()) => {}
        Some("scheduled") => bad("type", "a scheduled commission is a template: it is never dispatched itself, its runs are".into()),
        _ => bad("type", "type must be one-shot (the default) or scheduled".into()),
    }
    if has_schedule && r#type.and_then(Value::as_str) != Some("scheduled") {
        bad("schedule", "schedule: is a scheduled commission's: it needs `type: scheduled`".into());
    }
}

/// A duration (`timeout:`, `ask_timeout:`).
fn duration(key: &str, value: Option<Value>, bad: &mut Bad<'_>) -> Option<std::time::Duration> {
    match value {
        None | Some(Value::Null) => None,
        Some(v) => super::frontmatter::timeout(&v).map_err(|e| bad(key, e.to_string())).ok(),
    }
}

/// One of a few words (`runner:`, `review:`): `unknown` and `expected` say what it is not.
fn choice<T: serde::de::DeserializeOwned>(key: &str, value: Option<Value>, unknown: &str, expected: &str, bad: &mut Bad<'_>) -> Option<T> {
    match value {
        None | Some(Value::Null) => None,
        Some(v) => {
            serde_yaml_ng::from_value(v.clone()).map_err(|_| bad(key, format!("{unknown}: {} (expected {expected})", show(&v)))).ok()
        }
    }
}

/// `checks:`: commands, each a non-empty argv.
fn read_checks(value: Option<Value>, bad: &mut Bad<'_>) -> Vec<Vec<String>> {
    match value {
        None | Some(Value::Null) => Vec::new(),
        Some(v) => match serde_yaml_ng::from_value::<Vec<Vec<String>>>(v) {
            Ok(c) if c.iter().all(|argv| !argv.is_empty()) => c,
            _ => {
                bad("checks", "checks must be a list of commands, each a non-empty list of strings (e.g. [[cargo, test]])".into());
                Vec::new()
            }
        },
    }
}

fn read_max_revisions(value: Option<Value>, bad: &mut Bad<'_>) -> Option<u32> {
    match value {
        None | Some(Value::Null) => None,
        Some(v) => match v.as_u64().and_then(|n| u32::try_from(n).ok()) {
            Some(n) => Some(n),
            None => {
                bad("max_revisions", format!("max_revisions must be a whole number, not {}", show(&v)));
                None
            }
        },
    }
}

/// `reviewers:`: worker names.
fn read_reviewers(value: Option<Value>, bad: &mut Bad<'_>) -> Option<Vec<String>> {
    match value {
        None | Some(Value::Null) => None,
        Some(v) => match serde_yaml_ng::from_value::<Vec<String>>(v.clone()) {
            Ok(names) => {
                for n in &names {
                    if let Err(e) = ids::worker_name(Some(&Value::String(n.clone())), "which reviewer worker") {
                        bad("reviewers", format!("bad reviewer: {e}"));
                    }
                }
                Some(names)
            }
            Err(_) => {
                bad("reviewers", format!("reviewers must be a list of worker names, not {}", show(&v)));
                None
            }
        },
    }
}

/// `answer:`: a person's answer, as text or `{question, text}`.
fn read_answer(value: Option<Value>, bad: &mut Bad<'_>) -> Option<AnswerRequest> {
    match value {
        None | Some(Value::Null) => None,
        Some(v) => match serde_yaml_ng::from_value::<AnswerRequest>(v.clone()) {
            Ok(a) if !a.text().trim().is_empty() => Some(a),
            _ => {
                bad("answer", format!("bad answer: {} (expected the answer's text, or {{question: N, text: TEXT}})", show(&v)));
                None
            }
        },
    }
}

/// `feedback:`: a revision's items, their paths checked.
fn read_feedback(value: Option<Value>, bad: &mut Bad<'_>) -> Vec<Feedback> {
    match value {
        None | Some(Value::Null) => Vec::new(),
        Some(v) => match serde_yaml_ng::from_value::<Vec<Feedback>>(v) {
            Ok(f) => {
                for item in &f {
                    if let Some(Err(e)) = item.path.as_deref().map(ids::validate_rel_path) {
                        bad("feedback", format!("bad feedback path: {e}"));
                    }
                }
                f
            }
            Err(e) => {
                bad("feedback", format!("feedback must be a list of {{text, path, line}} (path and line optional): {e}"));
                Vec::new()
            }
        },
    }
}

impl Commission {
    /// Parse and validate. Any problem means the artifact must not be acted on or rewritten.
    // Long: every declared key taken apart in one pattern (a key added to the declaration does
    // not compile until it is read here), then each read in turn, every problem gathered so
    // `check` says all of them; what a key's reading takes is a function of its own above.
    pub(crate) fn parse(path: &Path, text: &str) -> Result<Commission, Vec<Problem>> {
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        let at = |line, col, msg: String| vec![Problem::new(path, line, col, msg)];
        if let Err(e) = ids::validate_id(stem) {
            return Err(at(1, 1, format!("bad file name: {e}")));
        }
        let split = split(text).map_err(|(line, msg)| at(line, 1, msg))?;
        let Kept(fields, unknown) = if split.yaml.trim().is_empty() {
            Kept(Mapping::new(), Mapping::new())
        } else {
            serde_yaml_ng::from_str::<Kept>(split.yaml).map_err(|e| {
                let (line, col, said) = super::locate::yaml_error(&e, split.yaml, split.first_line);
                at(line, col, format!("invalid YAML: {said}"))
            })?
        };
        // A misspelt key is invalid like a bad value: `dependecies:` must not dispatch at once;
        // nor `resources: {max_turn: 5}` run without its bound. (Keys the reader skips are
        // not looked into: guild-hall writes them.)
        let schema = commission_shape();
        let mut problems = super::keys::unknown_keys(path, split.yaml, split.first_line, &unknown, schema);
        let nested = super::keys::unknown(&fields, schema);
        let resources_said = nested.iter().any(|u| u.within.first() == Some(&super::locate::Seg::key("resources")));
        problems.extend(nested.iter().map(|u| u.problem(path, split.yaml, split.first_line, u.message())));
        problems.sort_by_key(|p| (p.line, p.column));
        let mut bad = |key: &str, msg: String| {
            let (line, col) = key_position(&split, key);
            problems.push(Problem::new(path, line, col, msg));
        };
        // Every key declared, taken apart here: a key added to the declaration is read here too.
        let Frontmatter {
            title,
            date: _informational,
            status,
            worker,
            dependencies,
            outputs,
            resources,
            timeout,
            runner,
            review,
            checks,
            max_revisions,
            reviewers,
            desired,
            source_schedule: _informational_too,
            r#type,
            schedule,
            feedback,
            ask_timeout,
            answer,
            created,
            attempt,
            branch,
            progress,
            // Structured values guild-hall writes: kept as written in `fields`, read where shown.
            questions: _in_fields,
            result: _also_in_fields,
            check_results: _read_where_shown,
            reviews: _shown_where_read,
            linked_artifacts: _kept_in_fields,
            reason,
            refused,
            completed,
            usage: _shown_from_fields,
            prompt,
            activity_timeline,
            current_progress,
            resource_overrides,
            tags: _kept_as_written,
            worker_display_title: _kept,
            project_name: _kept_too,
            source: _kept_also,
            result_summary: _kept_likewise,
            // Read where a commission waits (`commission::decide::not_before`): a hand edit that
            // is no time reads as none, like every owned key's.
            not_before: _read_where_it_waits,
        } = super::frontmatter::declared(&fields);
        let dialect = super::dialect::MARKS.iter().any(|k| fields.contains_key(*k));
        let status = super::vocabulary::status_field::<Status>(status.as_ref(), &mut bad);
        let worker = ids::worker_name(worker.as_ref(), "which worker package does this").unwrap_or_else(|why| {
            bad("worker", why.to_string());
            String::new()
        });
        let dependencies = paths("dependencies", dependencies, "dependency", &mut bad);
        let outputs = paths("outputs", outputs, "output", &mut bad);
        let resources = read_resources(resources, resource_overrides, resources_said, &mut bad);
        let prompt = match prompt {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) if !s.trim().is_empty() => Some(s),
            Some(_) => {
                bad("prompt", "prompt must be the worker's prompt, as text".into());
                None
            }
        };
        let current_progress = read_text("current_progress", current_progress, "current_progress must be text", &mut bad);
        let timeline = match activity_timeline.as_ref().map(super::dialect::entries) {
            None => Vec::new(),
            Some(Ok(t)) => t,
            Some(Err(why)) => {
                bad("activity_timeline", format!("bad activity_timeline: {why}"));
                Vec::new()
            }
        };
        let timeout = duration("timeout", timeout, &mut bad);
        let runner = choice("runner", runner, "unknown runner", "local or slurm", &mut bad);
        let desired = read_desired(desired, &mut bad);
        let review = choice("review", review, "unknown review", "required or auto", &mut bad);
        let (checks, max_revisions, reviewers) =
            (read_checks(checks, &mut bad), read_max_revisions(max_revisions, &mut bad), read_reviewers(reviewers, &mut bad));
        let ask_timeout = duration("ask_timeout", ask_timeout, &mut bad);
        let answer = read_answer(answer, &mut bad);
        let feedback = read_feedback(feedback, &mut bad);
        one_shot(r#type.as_ref(), schedule.is_some(), &mut bad);
        let title = owned_text(title);
        if dialect && prompt.is_none() && !problems.iter().any(|p| p.message.contains("prompt")) {
            let (line, col) = key_position(&split, "activity_timeline");
            problems.push(Problem::new(
                path,
                line,
                col,
                "missing prompt: a commission in Guild Hall's dialect (it has activity_timeline:) holds the worker's prompt in prompt:",
            ));
        }
        if !dialect && split.body.trim().is_empty() {
            let line = split.first_line + split.yaml.lines().count() + 1;
            problems.push(Problem::new(path, line, 1, "missing body: the text after the frontmatter is the worker's prompt"));
        }
        if !problems.is_empty() {
            return Err(problems);
        }
        let mut fields = fields;
        // Kept: the keys the reconciler writes or removes.
        fields.retain(|k, _| k.as_str().is_some_and(|k| OWNED_KEYS.contains(&k) || REQUEST_KEYS.contains(&k) || k == "answer"));
        // In the dialect our progress is its `current_progress:`: what our writes compare with.
        if let Some(p) = &current_progress {
            fields.insert("progress".into(), Value::String(p.clone()));
        }
        fields.shrink_to_fit();
        let log_reason = status
            .filter(|s| matches!(s, Status::Failed | Status::Cancelled | Status::Abandoned | Status::Blocked))
            .and_then(|s| timeline.iter().rev().find(|e| e.to.as_deref() == Some(s.as_str()))?.reason.clone());
        let (body, dialect) = match prompt.filter(|_| dialect) {
            Some(prompt) => (format!("{}\n", prompt.trim_end()), Some(super::dialect::Dialect { body: split.body.to_string(), timeline })),
            None => (split.body.to_string(), None),
        };
        Ok(Commission {
            id: stem.to_string(),
            path: path.to_path_buf(),
            hash: content_hash(text),
            title,
            status,
            worker,
            dependencies,
            dependencies_at: key_position(&split, "dependencies"),
            outputs,
            resources,
            timeout,
            runner,
            desired,
            review,
            checks,
            max_revisions,
            reviewers,
            feedback,
            ask_timeout,
            answer,
            owned: Owned {
                created: owned_text(created),
                attempt: attempt.as_ref().and_then(Value::as_u64).map(|a| a as u32).unwrap_or(0),
                branch: owned_text(branch),
                progress: owned_text(progress).or(current_progress),
                // In the dialect, why it stands where it is is its last status change's reason.
                reason: owned_text(reason).or(log_reason),
                refused: owned_text(refused),
                completed: owned_text(completed),
            },
            fields,
            body,
            dialect,
        })
    }

    /// A file in Guild Hall's dialect, with our keys that have no place in it as the state dir
    /// keeps them ([`super::dialect::KEPT_KEYS`]): read as if the file held them.
    pub(crate) fn with_kept(mut self, kept: &Mapping) -> Commission {
        for (k, v) in kept {
            if k.as_str().is_some_and(|k| super::dialect::KEPT_KEYS.contains(&k)) && !self.fields.contains_key(k) {
                self.fields.insert(k.clone(), v.clone());
            }
        }
        let text = |k: &str| owned_text(self.fields.get(k).cloned());
        self.owned = Owned {
            created: text("created"),
            attempt: self.fields.get("attempt").and_then(Value::as_u64).map(|a| a as u32).unwrap_or(0),
            branch: text("branch"),
            progress: self.owned.progress.clone(),
            // The state dir's, else the file's own ([`Commission::parse`]).
            reason: text("reason").or(self.owned.reason.take()),
            refused: text("refused"),
            completed: text("completed"),
        };
        self
    }

    /// The `created:` stamp as written (the FIFO key), if any.
    pub(crate) fn created(&self) -> Option<&str> {
        self.owned.created.as_deref()
    }

    pub(crate) fn attempt(&self) -> u32 {
        self.owned.attempt
    }

    pub(crate) fn field(&self, key: &str) -> Option<&Value> {
        self.fields.get(key)
    }
}

/// A new commission as guild-hall writes one (`commission create`, a plan's fix-forward): the
/// keys a person would write, in the order written, and the prompt.
#[derive(Debug, Clone)]
pub(crate) struct New {
    pub(crate) title: String,
    /// When it was written (`date:`, informational); none for one the reconciler writes.
    pub(crate) date: Option<String>,
    pub(crate) status: Status,
    pub(crate) worker: String,
    /// The FIFO key, stamped when the commission is made.
    pub(crate) created: String,
    pub(crate) dependencies: Vec<String>,
    /// Only the bounds set are written; none set: no `resources:`.
    pub(crate) resources: Resources,
    /// The worker's prompt (written without its trailing blank, with one newline).
    pub(crate) body: String,
}

/// The text of the commission `new`: the one place a commission's text is composed.
pub(crate) fn render(new: &New) -> String {
    let mut fm = Mapping::new();
    fm.insert("title".into(), new.title.as_str().into());
    if let Some(d) = &new.date {
        fm.insert("date".into(), d.as_str().into());
    }
    fm.insert("status".into(), new.status.as_str().into());
    fm.insert("worker".into(), new.worker.as_str().into());
    fm.insert("created".into(), new.created.as_str().into());
    if !new.dependencies.is_empty() {
        fm.insert("dependencies".into(), Value::Sequence(new.dependencies.iter().map(|d| Value::from(d.as_str())).collect()));
    }
    let r = &new.resources;
    let mut bounds = Mapping::new();
    if let Some(t) = r.max_turns {
        bounds.insert("max_turns".into(), t.into());
    }
    if let Some(b) = r.max_budget_usd {
        bounds.insert("max_budget_usd".into(), b.into());
    }
    if let Some(t) = r.max_tokens {
        bounds.insert("max_tokens".into(), t.into());
    }
    if let Some(c) = r.cpus {
        bounds.insert("cpus".into(), u64::from(c).into());
    }
    if let Some(m) = &r.memory {
        bounds.insert("memory".into(), m.as_str().into());
    }
    if let Some(m) = &r.model {
        bounds.insert("model".into(), m.as_str().into());
    }
    if !bounds.is_empty() {
        fm.insert("resources".into(), Value::Mapping(bounds));
    }
    format!("---\n{}---\n{}\n", super::frontmatter::to_yaml(&fm), new.body.trim_end())
}

/// Declared keys whose values no one reads (informational): skipped by the parser without
/// building values, as every key no commission may hold is (parsing dominates observe).
pub(crate) const UNREAD_KEYS: [&str; 6] = ["date", "tags", "workerDisplayTitle", "projectName", "source", "result_summary"];

/// The frontmatter's declared keys (the schema's, [`commission_keys`]) but the
/// [`UNREAD_KEYS`] as a mapping; and the keys no commission may hold, their values left unread.
struct Kept(Mapping, Mapping);

impl<'de> Deserialize<'de> for Kept {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Kept, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Kept;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a mapping of keys to values")
            }
            fn visit_unit<E>(self) -> Result<Kept, E> {
                Ok(Kept(Mapping::new(), Mapping::new()))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut m: A) -> Result<Kept, A::Error> {
                let (mut out, mut unknown) = (Mapping::new(), Mapping::new());
                let known = commission_keys();
                // Keys whose values are skipped, to find one written twice like the others.
                let mut skipped: Vec<Value> = Vec::new();
                while let Some(k) = m.next_key::<Value>()? {
                    if out.contains_key(&k) || skipped.contains(&k) {
                        return Err(serde::de::Error::custom(format!("duplicate key `{}`", k.as_str().unwrap_or(""))));
                    }
                    let declared = k.as_str().is_some_and(|k| known.contains(&k));
                    if declared && !k.as_str().is_some_and(|k| UNREAD_KEYS.contains(&k)) {
                        let v: Value = m.next_value()?;
                        out.insert(k, v);
                    } else {
                        m.next_value::<serde::de::IgnoredAny>()?;
                        if !declared {
                            unknown.insert(k.clone(), Value::Null);
                        }
                        skipped.push(k);
                    }
                }
                Ok(Kept(out, unknown))
            }
        }
        d.deserialize_any(V)
    }
}

fn show(v: &Value) -> String {
    serde_yaml_ng::to_string(v).map(|s| s.trim().to_string()).unwrap_or_else(|_| "?".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Commission, Vec<Problem>> {
        Commission::parse(Path::new(".lore/commissions/c1.md"), text)
    }

    #[test]
    fn parses_a_commission() {
        let c = parse("---\ntitle: T\nworker: scribe\nstatus: pending\ndependencies: [a/b.md]\n---\nDo it.\n").unwrap();
        assert_eq!(c.id, "c1");
        assert_eq!(c.status, Some(Status::Pending));
        assert_eq!(c.dependencies, vec!["a/b.md"]);
        assert_eq!(c.body, "Do it.\n");
    }

    #[test]
    fn reports_problems_with_positions() {
        let e = parse("---\ntitle: T\nworker: scribe\nstatus: banana\n---\nbody\n").unwrap_err();
        assert_eq!(e[0].to_string(), ".lore/commissions/c1.md:4:9: unknown status \"banana\" (expected one of: draft, pending, blocked, dispatched, in_progress, review, completed, failed, cancelled, abandoned)");
        let e = parse("---\ntitle: [\nworker: x\n---\nbody\n").unwrap_err();
        assert!(e[0].message.starts_with("invalid YAML"), "{e:?}");
        let e = parse("---\nworker: scribe\n---\n\n").unwrap_err();
        assert!(e[0].message.contains("missing body"));
        let e = parse("---\nworker: scribe\ndependencies: [../../etc/passwd]\n---\nx\n").unwrap_err();
        assert!(e[0].message.contains("bad dependency"));
        assert!(Commission::parse(Path::new("x/Bad Name.md"), "---\nworker: a\n---\nb\n").is_err());
    }

    /// A misspelt key is never skipped: `dependecies:` would drop the dependency.
    #[test]
    fn an_unknown_key_is_a_problem_at_the_key() {
        let e = parse("---\ntitle: T\nworker: scribe\ndependecies: [a/b.md]\n---\nDo it.\n").unwrap_err();
        assert_eq!(e[0].to_string(), ".lore/commissions/c1.md:4:1: unknown key `dependecies`: did you mean `dependencies`?");
        assert!(parse("---\nworker: scribe\ndate: 2026-11-22\n---\nDo it.\n").is_ok(), "every schema key is allowed");
    }

    #[test]
    fn an_answer_and_an_ask_timeout_are_read_or_said_wrong_at_their_key() {
        let c = parse("---\nworker: scribe\nask_timeout: 2h\nanswer: blue\n---\nDo it.\n").unwrap();
        assert_eq!(c.ask_timeout, Some(std::time::Duration::from_secs(7200)));
        assert_eq!(c.answer, Some(AnswerRequest::Text("blue".into())));
        assert!(c.field("answer").is_some(), "kept: the reconciler removes it once taken");
        let c = parse("---\nworker: scribe\nanswer: {question: 2, text: teal}\n---\nDo it.\n").unwrap();
        assert_eq!(
            (c.answer.as_ref().and_then(AnswerRequest::question), c.answer.as_ref().map(AnswerRequest::text)),
            (Some(2), Some("teal"))
        );
        for (bad, at) in [("answer: [1, 2]", "bad answer"), ("answer: \"  \"", "bad answer"), ("ask_timeout: soon", "not a duration")] {
            let e = parse(&format!("---\nworker: scribe\n{bad}\n---\nDo it.\n")).unwrap_err();
            assert!(e[0].to_string().starts_with(".lore/commissions/c1.md:3:") && e[0].message.contains(at), "{bad}: {e:?}");
        }
    }

    fn new_commission() -> New {
        New {
            title: "Port the parser".into(),
            date: Some("2026-01-02".into()),
            status: Status::Pending,
            worker: "scribe".into(),
            created: "2026-01-02T03:04:05.000006Z".into(),
            dependencies: vec!["a/b.md".into()],
            resources: Resources { max_turns: Some(5), max_budget_usd: Some(1.5), ..Default::default() },
            body: "Do it.\n\n".into(),
        }
    }

    /// The keys in the order a person reads them; only what is set; the prompt with one newline.
    #[test]
    fn a_new_commission_is_written_as_always() {
        assert_eq!(
            render(&new_commission()),
            "---\ntitle: Port the parser\ndate: 2026-01-02\nstatus: pending\nworker: scribe\ncreated: 2026-01-02T03:04:05.000006Z\ndependencies:\n- a/b.md\nresources:\n  max_turns: 5\n  max_budget_usd: 1.5\n---\nDo it.\n"
        );
        let bare = New { date: None, status: Status::Draft, dependencies: Vec::new(), resources: Resources::default(), ..new_commission() };
        assert_eq!(
            render(&bare),
            "---\ntitle: Port the parser\nstatus: draft\nworker: scribe\ncreated: 2026-01-02T03:04:05.000006Z\n---\nDo it.\n"
        );
    }

    proptest::proptest! {
        /// What the renderer writes, the parser reads back as the same values (a title YAML
        /// would take for another type, or a multi-line one, included).
        #[test]
        fn what_is_rendered_parses_back_the_same(
            title in "\\PC{1,40}|yes|null|1\\.5|- x|a: b|#x",
            draft: bool,
            worker in "[a-z][a-z0-9_-]{0,12}",
            dependencies in proptest::collection::vec("[a-z]{1,6}(/[a-z0-9]{1,6}){0,2}\\.md", 0..3),
            max_turns in proptest::option::of(1u64..1000),
            body in "[^\\s]\\PC{0,60}(\n\\PC{0,30}){0,3}",
        ) {
            let new = New {
                title,
                status: if draft { Status::Draft } else { Status::Pending },
                worker,
                dependencies,
                resources: Resources { max_turns, ..Default::default() },
                body,
                ..new_commission()
            };
            let c = parse(&render(&new)).map_err(|e| proptest::test_runner::TestCaseError::fail(format!("{e:?}")))?;
            proptest::prop_assert_eq!(c.title.as_deref(), Some(new.title.as_str()));
            proptest::prop_assert_eq!(c.status, Some(new.status));
            proptest::prop_assert_eq!(&c.worker, &new.worker);
            proptest::prop_assert_eq!(c.created(), Some(new.created.as_str()));
            proptest::prop_assert_eq!(&c.dependencies, &new.dependencies);
            proptest::prop_assert_eq!(&c.resources, &new.resources);
            proptest::prop_assert_eq!(c.body, format!("{}\n", new.body.trim_end()));
        }
    }

    /// The reconciler's keys are read once, typed; a hand edit of another type reads as none.
    #[test]
    fn the_owned_keys_are_typed() {
        let c = parse("---\nworker: scribe\ncreated: '2026-01-02'\nattempt: 3\nbranch: b\nprogress: half\nreason: [x]\nrefused: r\ncompleted: 5\n---\nDo it.\n")
            .expect("valid");
        assert_eq!(
            c.owned,
            Owned {
                created: Some("2026-01-02".into()),
                attempt: 3,
                branch: Some("b".into()),
                progress: Some("half".into()),
                reason: None,
                refused: Some("r".into()),
                completed: None,
            }
        );
        assert_eq!((c.created(), c.attempt()), (Some("2026-01-02"), 3));
        assert_eq!(parse("---\nworker: scribe\n---\nDo it.\n").expect("valid").owned, Owned::default());
    }

    /// A key written twice is at its second line, whether its value is read or skipped.
    #[test]
    fn a_duplicate_key_is_at_the_duplicate() {
        for key in ["title", "date"] {
            let e = parse(&format!("---\n{key}: A\nworker: scribe\n{key}: B\n---\nDo it.\n")).unwrap_err();
            assert_eq!(e[0].to_string(), format!(".lore/commissions/c1.md:4:1: invalid YAML: duplicate key `{key}`"));
        }
    }
}
