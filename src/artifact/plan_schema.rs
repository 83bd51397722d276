//! The JSON Schema of a plan's frontmatter (`.lore/plans/<plan>.md`, DESIGN §11): title,
//! status, parallelism, verify, fixer, timeout and the waves of tasks. A standalone type for editors;
//! the plan parser lives with the waves.

use schemars::JsonSchema;
use serde::Deserialize;

use super::schema::Duration;

/// A plan's states: draft|pending → running → verifying → completed; halted|failed|cancelled.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[allow(dead_code)]
pub enum PlanStatus {
    Draft,
    Pending,
    Running,
    Verifying,
    Completed,
    Halted,
    Failed,
    Cancelled,
}

/// One task of a wave: a commission for `worker`, run in its own worktree.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct Task {
    /// The task's id within its wave (canonical id: `<plan>:exec:wave-<W>:task-<T>`).
    #[schemars(regex(pattern = r"^[a-z0-9_-][a-z0-9._-]*$"))]
    pub id: String,
    /// The worker package that does it.
    #[schemars(regex(pattern = r"^[a-z0-9_-][a-z0-9._-]*$"))]
    pub worker: String,
    pub title: Option<String>,
    /// What the worker is asked to do, and how it can verify it.
    pub prompt: String,
    /// Wall-clock limit of each of the task's attempts, over the plan's (`0s`: none).
    pub timeout: Option<Duration>,
}

/// A plan artifact's frontmatter.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "guild-hall plan")]
#[allow(dead_code)]
pub struct Plan {
    pub title: Option<String>,
    pub date: Option<String>,
    /// draft|pending → running → verifying → completed; halted|failed|cancelled.
    pub status: Option<PlanStatus>,
    /// Tasks running at once inside a wave (FIFO in plan order).
    #[schemars(range(min = 1))]
    pub parallelism: Option<u32>,
    /// The integration check (argv), run on the integration branch after each wave.
    pub verify: Option<Vec<String>>,
    /// The worker of fix-forward commissions when verify fails.
    #[schemars(regex(pattern = r"^[a-z0-9_-][a-z0-9._-]*$"))]
    pub fixer: Option<String>,
    /// Wall-clock limit of each task attempt and verify run, over the package's and the
    /// project's (`0s`: none); a task's own `timeout` is over this.
    pub timeout: Option<Duration>,
    /// The waves, in order; each a list of tasks.
    #[schemars(length(min = 1))]
    pub waves: Vec<Vec<Task>>,
    /// Written by guild-hall: the wave under way.
    pub wave: Option<u32>,
    /// Written by guild-hall: why it halted or failed, or an edit was refused.
    pub reason: Option<String>,
    /// Written by guild-hall: each task's state, by task id.
    pub tasks: Option<serde_json::Map<String, serde_json::Value>>,
    /// Written by guild-hall.
    pub created: Option<String>,
    /// Written by guild-hall: when it reached its end.
    pub completed: Option<String>,
}
