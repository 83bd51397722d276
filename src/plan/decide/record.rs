//! What guild-hall remembers of a plan (`record.json` in its runtime dir): each task's state
//! and attempt, the wave, the verify runs; and, where this home holds none, what it takes from
//! the artifact ([`PlanRecord::adopt`]) or leaves to another home ([`elsewhere`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::Observed;
use crate::artifact::plan::{Plan, PlanStatus};

crate::artifact::vocabulary::vocabulary! {
    /// One task's state in the plan's record (and, as text, in the artifact's `tasks:`).
    pub enum TaskState ("task state") {
        Queued = "queued",
        Running = "running",
        /// Its worker ended well; its changes wait for the whole wave.
        Succeeded = "succeeded",
        Failed = "failed",
        /// Shut down because another task of its wave failed (its worktree is kept).
        Stopped = "stopped",
        /// Its commit is on the integration branch.
        Integrated = "integrated",
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskRecord {
    pub state: TaskState,
    /// The latest attempt started (0: never).
    #[serde(default)]
    pub(crate) attempt: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The highest TaskUpdate sequence applied, of its latest attempt (each attempt counts
    /// from its own first update).
    #[serde(default)]
    pub(crate) sequence: u64,
    /// A stop was sent to its attempt (fail-fast, cancel, its worktree gone, or SIGKILL for
    /// going stale or past its limit).
    #[serde(default)]
    pub(crate) stop_sent: bool,
    /// Automatic reruns so far: attempts that died, or lost their worktree (at most
    /// [`MAX_RERUNS`]).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(crate) reruns: u32,
    /// Queued again after its agent's rate or usage limit: not started before this time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) not_before: Option<chrono::DateTime<chrono::Utc>>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl TaskRecord {
    /// A task of a started wave that has not run yet.
    pub(crate) fn queued() -> TaskRecord {
        TaskRecord { state: TaskState::Queued, attempt: 0, reason: None, sequence: 0, stop_sent: false, reruns: 0, not_before: None }
    }
}

/// Reruns of a task whose attempt died or lost its worktree before it fails instead: a task
/// that keeps dying (killed at every try) is not rerun for ever.
pub const MAX_RERUNS: u32 = 2;

/// guild-hall's memory of a plan (`record.json` in its runtime dir).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanRecord {
    pub(crate) status: PlanStatus,
    /// The current wave, from 1 (0: not started).
    #[serde(default)]
    pub wave: usize,
    /// Each started wave's base: the integration tip its task worktrees were made from.
    #[serde(default)]
    pub(crate) bases: BTreeMap<usize, String>,
    #[serde(default)]
    pub tasks: BTreeMap<String, TaskRecord>,
    /// Runs of verify so far (their shim attempts).
    #[serde(default)]
    pub(crate) verify_runs: u32,
    /// Fix-forward commissions made so far.
    #[serde(default)]
    pub(crate) fixes: u32,
    /// A stop was sent to the latest verify run (a cancel, or SIGKILL for going stale or past
    /// its limit).
    #[serde(default)]
    pub(crate) verify_stop_sent: bool,
    /// Why guild-hall stopped the latest verify run (stale, past its limit): its failure's reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) verify_verdict: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl PlanRecord {
    /// A new verify run of the current wave: counted, nothing asked of it yet, no verdict.
    pub(crate) fn new_verify_run(&mut self) {
        self.verify_runs += 1;
        self.verify_stop_sent = false;
        self.verify_verdict = None;
    }

    /// The record of a plan guild-hall has not seen before: a draft, no wave begun.
    pub(crate) fn fresh() -> PlanRecord {
        PlanRecord {
            status: PlanStatus::Draft,
            wave: 0,
            bases: BTreeMap::new(),
            tasks: BTreeMap::new(),
            verify_runs: 0,
            fixes: 0,
            verify_stop_sent: false,
            verify_verdict: None,
            reason: None,
        }
    }

    /// What a home that holds no record of the plan takes from its artifact when the artifact
    /// says the plan is over (completed, halted, failed, cancelled): its status, wave, reason
    /// and each task's state as written there (git is the truth; the record only a cache of
    /// it, so a fresh home, a clone or a CI runner carries on from where the plan stands,
    /// never from `draft`). Each task that ran gets the latest attempt its timeline (`keys`)
    /// names, and the verify runs their count there, so what a retry here logs does not collide
    /// with what is logged. `None` for a plan that has not started (draft, pending) or is at
    /// work (running, verifying: that is another home's, see [`elsewhere`]).
    pub(crate) fn adopt(plan: &Plan, keys: &std::collections::BTreeSet<String>) -> Option<PlanRecord> {
        plan.status
            .is_some_and(|s| matches!(s, PlanStatus::Completed | PlanStatus::Halted | PlanStatus::Failed | PlanStatus::Cancelled))
            .then(|| PlanRecord::as_written(plan, keys))
            .flatten()
    }

    /// The record the artifact describes, whatever its status (`None` without one).
    pub(crate) fn as_written(plan: &Plan, keys: &std::collections::BTreeSet<String>) -> Option<PlanRecord> {
        let status = plan.status?;
        let mut record = PlanRecord::fresh();
        record.status = status;
        record.wave = plan.owned.wave.and_then(|w| usize::try_from(w).ok()).unwrap_or(0);
        record.reason = plan.owned.reason.clone();
        // The verify runs so far, as its status moves name them (`status:<wave>:<runs>:…`).
        record.verify_runs =
            keys.iter().filter_map(|k| k.strip_prefix("status:")?.split(':').nth(1)?.parse::<u32>().ok()).max().unwrap_or(0);
        for t in plan.tasks() {
            let Some(state) = plan.task_state(&t.canonical).and_then(TaskState::parse) else { continue };
            let prefix = format!("task:{}:", t.canonical);
            let logged = keys.iter().filter_map(|k| k.strip_prefix(&prefix)?.split(':').next()?.parse::<u32>().ok()).max().unwrap_or(0);
            let attempt = if state == TaskState::Queued { logged } else { logged.max(1) };
            record.tasks.insert(
                t.canonical.clone(),
                TaskRecord { state, attempt, reason: None, sequence: 0, stop_sent: false, reruns: 0, not_before: None },
            );
        }
        Some(record)
    }
}

/// What this home knows of a plan its artifact says is at work (running, verifying) while the
/// home holds no record of it: an attempt in flight in another home (or one whose home was
/// lost). Nothing is started, stopped or rewritten for it here; `status` and `check` say so,
/// with what a person can do. `None` when the home has a record, or the plan is not at work.
pub fn elsewhere(plan: &Plan, record: Option<&PlanRecord>) -> Option<String> {
    let status = plan.status.filter(|s| matches!(s, PlanStatus::Running | PlanStatus::Verifying))?;
    if record.is_some() {
        return None;
    }
    let wave = plan.owned.wave.map(|w| format!(", wave {w}")).unwrap_or_default();
    Some(format!(
        "plan {} says it is {status}{wave}, but this home ($GUILD_HALL_HOME) is not running it: it is at work in another home, or that home was lost; nothing is done for it here. Set `status: pending` to run it again here from its first wave, or `status: cancelled` to give it up",
        plan.id
    ))
}

/// The record a pass starts from: this home's; else, with no record here, what the artifact
/// says of a plan that is over ([`PlanRecord::adopt`]: the record is a cache, and the first
/// write here is the record alone), or of a plan at work in another home with a request in
/// `desired:` (validated against where it is there); else none (a plan new to guild-hall).
pub fn known_record(o: &Observed) -> Option<PlanRecord> {
    match &o.record {
        Some(r) => Some(r.clone()),
        None if elsewhere(&o.plan, None).is_some() => PlanRecord::as_written(&o.plan, &o.timeline_keys),
        None => PlanRecord::adopt(&o.plan, &o.timeline_keys),
    }
}
