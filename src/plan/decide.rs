//! The plan state machine as a pure decider: waves in order, at most `parallelism` tasks of
//! the current wave running (FIFO in plan order), fail-fast, integration once the whole wave
//! has succeeded, the verify gate, fix-forward, retry and cancel; tasks and verify held to the
//! liveness rules of commissions (stale, `timeout:`), what a killed shim left running killed
//! before anything follows its attempt; Kiln's resume classes, with a dead or orphaned task run
//! again. A status a person writes is a request, validated against the
//! record as for commissions; a home with no record takes a finished plan from its artifact
//! ([`PlanRecord::adopt`]) and leaves one at work in another home alone ([`elsewhere`]); a
//! record lost or older than the artifact is replaced as `observe::known` finds.
//! Snapshot in, actions out; and what the copy-back of a wave finds means for the plan
//! ([`Integration`]: act reports, this decides).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value as Json};
use serde_yaml_ng::Value;

use chrono::{DateTime, Utc};

use crate::activity::state::{ExitInfo, Heartbeat, RunInfo, Sample};
use crate::activity::timeline;
use crate::artifact::plan::{Plan, PlanStatus, Task};
use crate::artifact::write::Edit;
use crate::artifact::Status;
use crate::worker::liveness::{self, Judgement};
use crate::worker::toolbox::mailbox::MailBody;

pub use super::mail::{TaskFolded, TaskMail};
pub use integration::{Finding, Integration};

mod integration;
#[cfg(test)]
mod machine_tests;

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
    pub attempt: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The highest TaskUpdate sequence applied, of its latest attempt (each attempt counts
    /// from its own first update).
    #[serde(default)]
    pub sequence: u64,
    /// A stop was sent to its attempt (fail-fast, cancel, its worktree gone, or SIGKILL for
    /// going stale or past its limit).
    #[serde(default)]
    pub stop_sent: bool,
    /// Automatic reruns so far: attempts that died, or lost their worktree (at most
    /// [`MAX_RERUNS`]).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reruns: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl TaskRecord {
    /// A task of a started wave that has not run yet.
    pub fn queued() -> TaskRecord {
        TaskRecord { state: TaskState::Queued, attempt: 0, reason: None, sequence: 0, stop_sent: false, reruns: 0 }
    }
}

/// Reruns of a task whose attempt died or lost its worktree before it fails instead: a task
/// that keeps dying (killed at every try) is not rerun for ever.
pub const MAX_RERUNS: u32 = 2;

/// guild-hall's memory of a plan (`record.json` in its runtime dir).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanRecord {
    pub status: PlanStatus,
    /// The current wave, from 1 (0: not started).
    #[serde(default)]
    pub wave: usize,
    /// Each started wave's base: the integration tip its task worktrees were made from.
    #[serde(default)]
    pub bases: BTreeMap<usize, String>,
    #[serde(default)]
    pub tasks: BTreeMap<String, TaskRecord>,
    /// Runs of verify so far (their shim attempts).
    #[serde(default)]
    pub verify_runs: u32,
    /// Fix-forward commissions made so far.
    #[serde(default)]
    pub fixes: u32,
    /// A stop was sent to the latest verify run (a cancel, or SIGKILL for going stale or past
    /// its limit).
    #[serde(default)]
    pub verify_stop_sent: bool,
    /// Why guild-hall stopped the latest verify run (stale, past its limit): its failure's reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify_verdict: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// One task as observed.
#[derive(Debug, Clone)]
pub struct ObservedTask {
    pub task: Task,
    /// The exit of its current attempt, once its shim recorded it.
    pub exit: Option<ExitInfo>,
    /// What is new in its current attempt's mailbox (its task updates), and what it folds to.
    pub mail: TaskMail,
    /// Why its worker cannot run here (unknown package, ...), if so.
    pub worker_problem: Option<String>,
    /// Something is at its worktree's path (what removing it would remove).
    pub worktree_exists: bool,
    /// Its recorded worktree is gone (Kiln's `orphaned`): not at the path made for the task,
    /// not a worktree `git worktree list` knows, or its `.git` gone; says which, with the path.
    pub worktree_gone: Option<String>,
    /// Its commit is on the integration branch (its trailer since the wave's base); only
    /// looked for when its worktree is gone.
    pub landed: bool,
    /// A shim of the task is at work (its lock held, or its run alive), whatever the attempt.
    pub busy: bool,
    /// Its runner must be asked where it stands (a job elsewhere): looked at again on a timer.
    pub polled: bool,
    /// The current attempt's worker at work, with its signs of life.
    pub live: Option<Live>,
    /// Its worker package's `timeout:`.
    pub package_timeout: Option<std::time::Duration>,
    /// A shim has taken (or holds) this attempt: `run.json` or `exit.json` of the attempt
    /// recorded, or the shim's lock held.
    pub started: Option<u32>,
    /// The shim of its current attempt is gone without recording an exit (killed, a reboot),
    /// and nothing of the attempt runs any more.
    pub died: bool,
    /// The shim of its current attempt is gone without recording an exit, and processes of the
    /// attempt still run: they are killed before the attempt is judged or run again.
    pub lingering: Option<Lingering>,
}

/// Processes of an attempt whose shim was killed before it could reap them, found by the
/// attempt's run-id mark ([`crate::worker::shim::leftovers`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Lingering {
    pub attempt: u32,
    pub run: RunInfo,
    pub pids: Vec<i32>,
}

/// A worker (a task's or a verify's) at work: when it started and its signs of life.
#[derive(Debug, Clone, PartialEq)]
pub struct Live {
    pub started_at: DateTime<Utc>,
    /// The last change seen (`heartbeat` in its runtime dir).
    pub heartbeat: Option<Heartbeat>,
    pub sample: Sample,
}

/// One plan as observed.
#[derive(Debug, Clone)]
pub struct Observed {
    pub plan: Plan,
    /// The record this home works from: its own, or the one it takes ([`Observed::taken`]).
    pub record: Option<PlanRecord>,
    /// `record` is not this home's file but what it takes from the artifact
    /// ([`super::observe::known`]): written by the first pass.
    pub taken: bool,
    /// The checkout's file says the plan is to run, this home holds no record of it, and the
    /// integration branch's copy says it ended there ([`super::observe::integrated`]): nothing
    /// is started and the checkout's file is left as it is.
    pub integrated: Option<crate::activity::integrated::Integrated>,
    pub tasks: Vec<ObservedTask>,
    /// The exit of the latest verify run.
    pub verify_exit: Option<ExitInfo>,
    /// The verify run a shim has taken (its `run.json`), or is taking (lock held: `u32::MAX`).
    pub verify_started: Option<u32>,
    /// The shim of the latest verify run is gone without recording an exit.
    pub verify_died: bool,
    /// The latest verify run at work.
    pub verify_live: Option<Live>,
    /// A verify's shim is at work (its lock held, or its run alive), whatever the run.
    pub verify_busy: bool,
    /// The latest verify run's shim was killed and processes of the run still run.
    pub verify_lingering: Option<Lingering>,
    /// The status of the latest fix-forward commission.
    pub fix_status: Option<Status>,
    pub timeline_keys: std::collections::BTreeSet<String>,
}

#[derive(Debug, Clone)]
pub struct Snapshot {
    pub plans: Vec<Observed>,
    pub now: String,
    /// `now` as a time.
    pub at: DateTime<Utc>,
    /// The project's `stale_after` and `timeout` (commissions', tasks' and verify's).
    pub stale_after: std::time::Duration,
    pub timeout: std::time::Duration,
    /// Worker processes the project's cap (`commission_cap`) still allows: wave tasks count
    /// against it like commissions.
    pub slots: usize,
}

impl PlanRecord {
    /// The record of a plan guild-hall has not seen before: a draft, no wave begun.
    pub fn fresh() -> PlanRecord {
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
    pub fn adopt(plan: &Plan, keys: &std::collections::BTreeSet<String>) -> Option<PlanRecord> {
        plan.status
            .is_some_and(|s| matches!(s, PlanStatus::Completed | PlanStatus::Halted | PlanStatus::Failed | PlanStatus::Cancelled))
            .then(|| PlanRecord::as_written(plan, keys))
            .flatten()
    }

    /// The record the artifact describes, whatever its status (`None` without one).
    pub fn as_written(plan: &Plan, keys: &std::collections::BTreeSet<String>) -> Option<PlanRecord> {
        let status = plan.status?;
        let mut record = PlanRecord::fresh();
        record.status = status;
        record.wave = plan.fields.get("wave").and_then(Value::as_u64).and_then(|w| usize::try_from(w).ok()).unwrap_or(0);
        record.reason = plan.str_field("reason").map(str::to_string);
        // The verify runs so far, as its status moves name them (`status:<wave>:<runs>:…`).
        record.verify_runs =
            keys.iter().filter_map(|k| k.strip_prefix("status:")?.split(':').nth(1)?.parse::<u32>().ok()).max().unwrap_or(0);
        for t in plan.tasks() {
            let Some(state) = plan.task_state(&t.canonical).and_then(TaskState::parse) else { continue };
            let prefix = format!("task:{}:", t.canonical);
            let logged = keys.iter().filter_map(|k| k.strip_prefix(&prefix)?.split(':').next()?.parse::<u32>().ok()).max().unwrap_or(0);
            let attempt = if state == TaskState::Queued { logged } else { logged.max(1) };
            record.tasks.insert(t.canonical.clone(), TaskRecord { state, attempt, reason: None, sequence: 0, stop_sent: false, reruns: 0 });
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
    let wave = plan.fields.get("wave").and_then(Value::as_u64).map(|w| format!(", wave {w}")).unwrap_or_default();
    Some(format!(
        "plan {} says it is {status}{wave}, but this home ($GUILD_HALL_HOME) is not running it: it is at work in another home, or that home was lost; nothing is done for it here. Set `status: pending` to run it again here from its first wave, or `status: cancelled` to give it up",
        plan.id
    ))
}

/// Timeline events, the record and artifact edits for one plan; then how far its tasks'
/// mailboxes were read.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Update {
    pub plan: String,
    pub expect_hash: u64,
    pub edits: Vec<Edit>,
    pub events: Vec<Json>,
    pub record: Option<PlanRecord>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub folds: Vec<TaskFold>,
}

/// What a task's mailbox folded to, to keep (`events-<n>.folded.json` in its runtime dir).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TaskFold {
    /// The task's slug: its runtime dir's name.
    pub slug: String,
    pub folded: TaskFolded,
}

/// What to do; every action carries the update to apply once its effect is done.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum Action {
    Update {
        update: Update,
    },
    /// Record the integration tip as the wave's base (act fills it in), then the update.
    StartWave {
        update: Update,
        wave: usize,
    },
    /// Each task's worktree (made, or reused: reset to the base and cleaned), its snapshot, its
    /// worker started: every task a freed slot lets start, in plan order, in one action (their
    /// records written once, before any starts).
    StartTask {
        update: Update,
        starts: Vec<TaskStart>,
    },
    /// SIGTERM to a task's attempt (SIGKILL after cancel_grace, by its shim), or SIGKILL now.
    StopTask {
        update: Update,
        task: String,
        attempt: u32,
        kill: bool,
    },
    /// Collision scan, protocol checks, then one commit per task in plan order.
    Integrate {
        update: Update,
        wave: usize,
    },
    /// Run `verify` in an integration worktree at the tip.
    StartVerify {
        update: Update,
        wave: usize,
        run: u32,
    },
    /// Write a fix-forward commission for the fixer with the failing output.
    FixForward {
        update: Update,
        wave: usize,
        round: u32,
        fixer: String,
        run: u32,
    },
    /// Remove the worktrees of integrated tasks (their work is on the integration branch).
    CleanupTask {
        update: Update,
        tasks: Vec<String>,
    },
    /// SIGTERM to a running verify (a cancel), or SIGKILL now.
    StopVerify {
        update: Update,
        run: u32,
        kill: bool,
    },
    /// Write the heartbeat of a task's attempt (`task`) or of the verify run (`None`): signs of
    /// life changed. `update` is empty.
    Beat {
        update: Update,
        task: Option<String>,
        beat: Heartbeat,
    },
    /// SIGKILL what the killed shim of a task's attempt (`task`) or of the verify run (`None`)
    /// left running, each process re-checked for the attempt's mark; then `update` (its log
    /// event). Nothing that follows the attempt — its verdict, a rerun in its worktree — is
    /// done until they are gone.
    KillLeftovers {
        update: Update,
        task: Option<String>,
        run: RunInfo,
        pids: Vec<i32>,
    },
}

/// One task of a [`Action::StartTask`]: its canonical id and the attempt to start.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TaskStart {
    pub task: String,
    pub attempt: u32,
}

impl Action {
    pub fn update(&self) -> &Update {
        match self {
            Action::Update { update }
            | Action::StartWave { update, .. }
            | Action::StartTask { update, .. }
            | Action::StopTask { update, .. }
            | Action::Integrate { update, .. }
            | Action::StartVerify { update, .. }
            | Action::FixForward { update, .. }
            | Action::CleanupTask { update, .. }
            | Action::StopVerify { update, .. }
            | Action::Beat { update, .. }
            | Action::KillLeftovers { update, .. } => update,
        }
    }
}

impl crate::activity::kind::Action for Action {
    fn id(&self) -> &str {
        &self.update().plan
    }

    fn starts_work(&self) -> bool {
        matches!(self, Action::StartWave { .. })
    }

    fn verb(&self) -> &'static str {
        match self {
            Action::Update { .. } => "plan-update",
            Action::StartWave { .. } => "wave-start",
            Action::StartTask { .. } => "task-start",
            Action::StopTask { .. } => "task-stop",
            Action::Integrate { .. } => "wave-integrate",
            Action::StartVerify { .. } => "verify",
            Action::FixForward { .. } => "fix-forward",
            Action::CleanupTask { .. } => "task-cleanup",
            Action::StopVerify { .. } => "verify-stop",
            Action::Beat { .. } => "heartbeat",
            Action::KillLeftovers { .. } => "kill-leftovers",
        }
    }

    fn describe(&self) -> String {
        match self {
            Action::Update { update } => {
                let parts = said(update);
                if parts.is_empty() {
                    // Only guild-hall's own bookkeeping (its runtime record, the task mailboxes
                    // read, a created stamp): said only if it failed.
                    "runtime record updated".into()
                } else {
                    parts.join("; ")
                }
            }
            Action::StartWave { wave, .. } => format!("start wave {wave}"),
            Action::StartTask { starts, .. } => {
                let each: Vec<String> = starts.iter().map(|s| format!("{} (attempt {})", s.task, s.attempt)).collect();
                format!("start {}", each.join(", "))
            }
            Action::StopTask { task, kill: false, .. } => format!("shut down {task}"),
            Action::StopTask { task, kill: true, .. } => format!("kill {task}"),
            Action::Integrate { wave, .. } => format!("copy back wave {wave} in plan order"),
            Action::StartVerify { wave, run, .. } => format!("verify after wave {wave} (run {run})"),
            Action::FixForward { wave, round, fixer, .. } => format!("fix-forward {round} for wave {wave} by {fixer}"),
            Action::CleanupTask { tasks, .. } => {
                let what = if tasks.len() == 1 { "worktree" } else { "worktrees" };
                format!("remove the {what} of {} (integrated)", tasks.join(", "))
            }
            Action::StopVerify { run, kill: false, .. } => format!("stop verify run {run}"),
            Action::StopVerify { run, kill: true, .. } => format!("kill verify run {run}"),
            Action::Beat { task: Some(t), .. } => format!("heartbeat of {t}"),
            Action::Beat { task: None, .. } => "heartbeat of verify".into(),
            Action::KillLeftovers { task, run, pids, .. } => format!(
                "kill {} left by the killed shim of {} (attempt {})",
                crate::activity::timeline::counted(pids.len(), "process"),
                task.as_deref().unwrap_or("verify"),
                run.attempt
            ),
        }
    }

    fn is_stop(&self) -> bool {
        matches!(self, Action::StopTask { .. } | Action::StopVerify { .. } | Action::KillLeftovers { .. })
    }

    fn is_heartbeat(&self) -> bool {
        matches!(self, Action::Beat { .. })
    }

    /// A beat written is no news, nor is bookkeeping (the rule of commissions); either is said
    /// when it failed.
    fn reported(&self, ok: bool) -> bool {
        let bookkeeping = matches!(self, Action::Update { update } if said(update).is_empty());
        !ok || !(self.is_heartbeat() || bookkeeping)
    }

    /// A dry run lists no beats.
    fn listed(&self) -> bool {
        !self.is_heartbeat()
    }
}

/// What an update changes, in words, as a commission's are said: a status moved (and why), a
/// task's new state, what its worker reported, what went wrong. guild-hall's bookkeeping is
/// not news: its runtime record, the mailboxes read, the `tasks:` and `wave:` keys that mirror
/// the task events said, the `created` event and stamp.
fn said(u: &Update) -> Vec<String> {
    let first_line = |v: Option<&str>| v.unwrap_or("").lines().next().unwrap_or("").to_string();
    let mut parts = Vec::new();
    for e in &u.edits {
        match e {
            Edit::Set(k, v) if k == "status" => parts.push(format!("status -> {}", v.as_str().unwrap_or("?"))),
            Edit::Set(k, v) if k == "reason" => parts.push(format!("reason: {}", first_line(v.as_str()))),
            Edit::Remove(k) if k == "desired" => parts.push("request consumed".into()),
            Edit::Set(k, _) | Edit::Remove(k) if ["tasks", "wave", "created"].contains(&k.as_str()) => {}
            Edit::Set(k, _) => parts.push(format!("{k} written")),
            Edit::Remove(k) => parts.push(format!("{k} removed")),
        }
    }
    // A task's latest progress only, as a commission's `progress:` holds its latest.
    let mut progress: Vec<(String, String)> = Vec::new();
    for e in &u.events {
        let f = |k: &str| e[k].as_str().unwrap_or("").to_string();
        match e["kind"].as_str().unwrap_or("") {
            "task" => parts.push(format!("{} {}", f("task"), f("state"))),
            "progress" => {
                progress.retain(|(t, _)| *t != f("task"));
                progress.push((f("task"), first_line(e["text"].as_str())));
            }
            "question" => parts.push(format!("{}: question logged", f("task"))),
            "decision" => parts.push(format!("{}: decision: {}", f("task"), first_line(e["decision"].as_str()))),
            "result" => parts.push(format!("{}: result submitted", f("task"))),
            "task_update" => parts.push(format!("{} reports {}", f("task"), f("status"))),
            "anomaly" | "orphaned" | "rerun_required" | "task_update_ignored" => parts.push(first_line(e["text"].as_str())),
            // Said by the status edit, or guild-hall's own (created); the rest is in the log.
            _ => {}
        }
    }
    parts.extend(progress.into_iter().map(|(t, text)| format!("{t} progress: {text}")));
    if parts.is_empty() && u.events.iter().any(|e| !matches!(e["kind"].as_str(), Some("created" | "status"))) {
        parts.push(timeline::recorded(&u.events));
    }
    parts
}

/// The commission a fix-forward round writes.
pub fn fix_id(plan: &str, wave: usize, round: u32) -> String {
    crate::artifact::ids::derived(plan, &format!("fix-wave-{wave}-{round}"))
}

/// What a person may ask of a plan by editing `status:` (or `desired:`).
pub fn person_may_request(from: PlanStatus, to: PlanStatus) -> bool {
    use PlanStatus::*;
    matches!((from, to), (Draft, Pending) | (Halted | Failed | Cancelled, Pending) | (Pending | Running | Verifying | Halted, Cancelled))
}

/// Why the reconciler refuses a person's `status: <to>` on a plan that is `from` — the words
/// its refusal writes into `reason:` — or `None` where it carries it out. The faces ask it up
/// front, so they refuse with the same words.
pub fn request_refusal(from: PlanStatus, to: PlanStatus) -> Option<String> {
    (!person_may_request(from, to)).then(|| {
        format!("a plan that is {from} cannot be set to {to} by hand (allowed: draft → pending, halted|failed|cancelled → pending to retry, pending|running|verifying|halted → cancelled)")
    })
}

pub fn decide(s: &Snapshot) -> Vec<Action> {
    let running: usize = s
        .plans
        .iter()
        .map(|o| o.record.as_ref().map(|r| r.tasks.values().filter(|t| t.state == TaskState::Running).count()).unwrap_or(0))
        .sum();
    let mut slots = s.slots.saturating_sub(running);
    let mut out = Vec::new();
    for o in &s.plans {
        // The kills first: whatever the plan's state, nothing of a killed attempt runs on.
        out.extend(kill_leftovers(o, &s.now));
        if let Some(a) = step(o, s, slots) {
            if let Action::StartTask { starts, .. } = &a {
                slots = slots.saturating_sub(starts.len());
            }
            out.push(a);
        }
        out.extend(beats(o, s));
    }
    out
}

/// The wall-clock limit of a task's attempt: its own `timeout:`, else its plan's, else its
/// package's, else the project's (`0s`: none).
pub fn task_limit(s: &Snapshot, o: &Observed, ot: &ObservedTask) -> Option<(std::time::Duration, &'static str)> {
    liveness::time_limit(&[
        (ot.task.timeout, "the task's timeout"),
        (o.plan.timeout, "the plan's timeout"),
        (ot.package_timeout, "its worker package's timeout"),
        (Some(s.timeout), "the project's timeout"),
    ])
}

/// The wall-clock limit of a verify run: the plan's `timeout:`, else the project's.
pub fn verify_limit(s: &Snapshot, o: &Observed) -> Option<(std::time::Duration, &'static str)> {
    liveness::time_limit(&[(o.plan.timeout, "the plan's timeout"), (Some(s.timeout), "the project's timeout")])
}

/// Why a worker at work must be stopped now (past its limit, or stale), with the timeline
/// event that says so; `Ok(beat)`: alive, and the heartbeat to write if its signs changed.
fn judge(
    s: &Snapshot,
    live: &Live,
    limit: Option<(std::time::Duration, &'static str)>,
) -> Result<Option<Heartbeat>, (String, &'static str, String)> {
    if let Some(why) = liveness::overtime(limit, live.started_at, s.at) {
        return Err((why.clone(), "timeout", why));
    }
    match liveness::judge(live.heartbeat.as_ref(), live.sample, s.at, s.stale_after) {
        Judgement::Stale(idle) => Err((liveness::UNRESPONSIVE.to_string(), "heartbeat", liveness::stale_text(idle))),
        Judgement::Quiet => Ok(None),
        Judgement::First(b) | Judgement::Beat(b) => Ok(Some(b)),
    }
}

/// Kills of what killed shims left running (its tasks' current attempts, its latest verify
/// run), each with a log event said once.
fn kill_leftovers(o: &Observed, now: &str) -> Vec<Action> {
    let tasks = o.tasks.iter().filter_map(|ot| Some((Some(ot.task.canonical.clone()), ot.lingering.as_ref()?)));
    tasks
        .chain(o.verify_lingering.as_ref().map(|l| (None, l)))
        .map(|(task, l)| {
            let (key, text) = match &task {
                Some(t) => (
                    format!("leftovers:{t}:{}", l.attempt),
                    format!(
                        "{t}: {} of attempt {} outlived its supervisor: killed before the task is judged or run again",
                        crate::activity::timeline::counted(l.pids.len(), "process"),
                        l.attempt
                    ),
                ),
                None => (
                    format!("leftovers:verify:{}", l.attempt),
                    format!(
                        "verify: {} of run {} outlived its supervisor: killed before the verify is judged",
                        crate::activity::timeline::counted(l.pids.len(), "process"),
                        l.attempt
                    ),
                ),
            };
            let mut events = Vec::new();
            if !o.timeline_keys.contains(&key) {
                events.push(timeline::event(now, "leftovers", key, json!({"task": task, "pids": l.pids, "text": text})));
            }
            let update = Update { plan: o.plan.id.clone(), expect_hash: o.plan.hash, edits: vec![], events, record: None, folds: vec![] };
            Action::KillLeftovers { update, task, run: l.run.clone(), pids: l.pids.clone() }
        })
        .collect()
}

/// Heartbeats to write: running tasks and a running verify whose signs of life changed.
fn beats(o: &Observed, s: &Snapshot) -> Vec<Action> {
    let Some(record) = &o.record else { return Vec::new() };
    let empty = || Update { plan: o.plan.id.clone(), expect_hash: o.plan.hash, edits: vec![], events: vec![], record: None, folds: vec![] };
    let mut out = Vec::new();
    if record.status == PlanStatus::Running {
        for ot in &o.tasks {
            let Some(r) = record.tasks.get(&ot.task.canonical) else { continue };
            let Some(live) = ot.live.as_ref().filter(|_| r.state == TaskState::Running && !r.stop_sent) else { continue };
            if let Ok(Some(beat)) = judge(s, live, task_limit(s, o, ot)) {
                out.push(Action::Beat { update: empty(), task: Some(ot.task.canonical.clone()), beat });
            }
        }
    }
    if record.status == PlanStatus::Verifying && !record.verify_stop_sent {
        if let Some(Ok(Some(beat))) = o.verify_live.as_ref().map(|live| judge(s, live, verify_limit(s, o))) {
            out.push(Action::Beat { update: empty(), task: None, beat });
        }
    }
    out
}

/// When the plans must be looked at again though nothing changes on disk: a running task or
/// verify going stale or reaching its limit; soon, while a stopped one is still going away.
pub fn next_check(s: &Snapshot) -> Option<std::time::Duration> {
    let soon = s.at + chrono::Duration::milliseconds(200);
    let mut at: Vec<DateTime<Utc>> = Vec::new();
    for o in &s.plans {
        let Some(record) = &o.record else { continue };
        for ot in &o.tasks {
            let r = record.tasks.get(&ot.task.canonical);
            match (&ot.live, r) {
                (Some(live), Some(r)) if r.state == TaskState::Running && !r.stop_sent => {
                    let look =
                        liveness::next_look(live.heartbeat.as_ref(), s.stale_after, task_limit(s, o, ot), Some(live.started_at), s.at);
                    // A job ended by its cluster changes no file: its runner is asked again.
                    let poll = s.at + chrono::Duration::from_std(liveness::POLL).unwrap_or_default();
                    at.push(if ot.polled { look.min(poll) } else { look });
                }
                _ if ot.busy || ot.lingering.is_some() => at.push(soon),
                _ => {}
            }
        }
        if o.verify_lingering.is_some() {
            at.push(soon);
        }
        if let Some(live) = &o.verify_live {
            if record.status == PlanStatus::Verifying && !record.verify_stop_sent {
                at.push(liveness::next_look(live.heartbeat.as_ref(), s.stale_after, verify_limit(s, o), Some(live.started_at), s.at));
            } else {
                at.push(soon);
            }
        }
    }
    at.into_iter().min().map(|t| t.signed_duration_since(s.at).to_std().unwrap_or_default())
}

/// Kiln's resume classes: where a task stands, from its record, its worktree (as `git
/// worktree list` and the worktrees dir have it), its runtime state and task updates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ResumeClass {
    /// Not started yet.
    Queued,
    /// Its worker is at work.
    InProgress,
    /// Its worker ended well; its changes wait for the copy-back.
    ReadyForIntegration,
    /// Its commit is on the integration branch.
    Done,
    /// Its worktree is gone: reported, and the task runs again in a fresh one.
    Orphaned,
    /// It must run again: its attempt died, failed or was shut down.
    RerunRequired,
}

impl ResumeClass {
    pub fn as_str(self) -> &'static str {
        match self {
            ResumeClass::Queued => "queued",
            ResumeClass::InProgress => "in_progress",
            ResumeClass::ReadyForIntegration => "ready_for_integration",
            ResumeClass::Done => "done",
            ResumeClass::Orphaned => "orphaned",
            ResumeClass::RerunRequired => "rerun_required",
        }
    }
}

/// A task's resume class (Kiln's priority: orphaned, ready_for_integration, done,
/// in_progress, rerun_required).
pub fn resume_class(ot: &ObservedTask, rec: Option<&TaskRecord>) -> ResumeClass {
    let Some(r) = rec else { return ResumeClass::Queued };
    match r.state {
        TaskState::Integrated => ResumeClass::Done,
        TaskState::Queued => ResumeClass::Queued,
        TaskState::Succeeded if ot.landed => ResumeClass::Done,
        _ if ot.worktree_gone.is_some() => ResumeClass::Orphaned,
        TaskState::Succeeded => ResumeClass::ReadyForIntegration,
        // Its supervisor died: it runs again (once what it left running is killed).
        TaskState::Running if ot.died || ot.lingering.is_some() => ResumeClass::RerunRequired,
        TaskState::Running => ResumeClass::InProgress,
        TaskState::Failed | TaskState::Stopped => ResumeClass::RerunRequired,
    }
}

struct Step<'a> {
    o: &'a Observed,
    s: &'a Snapshot,
    now: &'a str,
    record: PlanRecord,
    edits: Vec<Edit>,
    events: Vec<Json>,
    dirty: bool,
    /// Keys of the task updates logged in this step (a repeated one is a no-op).
    keys: std::collections::HashSet<String>,
    folds: Vec<TaskFold>,
}

impl<'a> Step<'a> {
    fn set(&mut self, key: &str, v: Value) {
        if self.o.plan.fields.get(key) != Some(&v) {
            self.edits.retain(|e| !matches!(e, Edit::Set(k, _) | Edit::Remove(k) if k == key));
            self.edits.push(Edit::Set(key.into(), v));
        }
    }
    fn remove(&mut self, key: &str) {
        if self.o.plan.fields.contains_key(key) {
            self.edits.push(Edit::Remove(key.into()));
        }
    }
    fn event(&mut self, kind: &str, key: String, fields: Json) {
        if !self.o.timeline_keys.contains(&key) {
            self.events.push(timeline::event(self.now, kind, key, fields));
        }
    }
    fn go(&mut self, to: PlanStatus, reason: &str) {
        let from = self.record.status;
        if from != to {
            let key = format!("status:{}:{}:{from}:{to}", self.record.wave, self.record.verify_runs);
            self.event("status", key, json!({"from": from.as_str(), "to": to.as_str(), "reason": reason}));
            self.record.status = to;
            self.dirty = true;
        }
        self.record.reason = (!reason.is_empty() && matches!(to, PlanStatus::Halted | PlanStatus::Failed | PlanStatus::Cancelled))
            .then(|| reason.to_string());
    }
    fn task_state(&mut self, t: &Task, to: TaskState, reason: Option<String>) {
        let r = self.record.tasks.entry(t.canonical.clone()).or_insert_with(TaskRecord::queued);
        if r.state != to {
            let key = format!("task:{}:{}:{}", t.canonical, r.attempt, to.as_str());
            let fields = json!({"task": t.canonical, "label": t.label, "state": to.as_str(), "attempt": r.attempt, "reason": reason});
            r.state = to;
            r.reason = reason;
            self.dirty = true;
            self.event("task", key, fields);
        }
    }
    /// The record as the artifact shows it: status, wave, reason, each task's state.
    fn finish(mut self) -> Update {
        self.set("status", Value::String(self.record.status.as_str().into()));
        if self.record.wave > 0 {
            self.set("wave", Value::Number(self.record.wave.into()));
        }
        match &self.record.reason {
            Some(r) => self.set("reason", Value::String(r.clone())),
            None => self.remove("reason"),
        }
        let tasks = integration::tasks_value(&self.o.plan, &self.record);
        if tasks.as_mapping().is_some_and(|m| !m.is_empty()) {
            self.set("tasks", tasks);
        }
        if self.o.plan.desired.is_some() {
            self.remove("desired");
        }
        let record = (self.dirty || self.o.taken || self.o.record.as_ref() != Some(&self.record)).then(|| self.record.clone());
        Update {
            plan: self.o.plan.id.clone(),
            expect_hash: self.o.plan.hash,
            edits: self.edits,
            events: self.events,
            record,
            folds: self.folds,
        }
    }
}

/// A task's attempt ended: how.
fn classify(o: &ObservedTask, rec: &TaskRecord) -> Option<Result<(), String>> {
    if o.died {
        return Some(Err("its supervisor died without recording how the worker ended (killed, or a reboot)".into()));
    }
    let exit = o.exit.as_ref().filter(|x| x.attempt == rec.attempt)?;
    if let Some(why) = &o.mail.error {
        // Whether it reported failure cannot be known: never taken for a success.
        return Some(Err(format!("its mailbox cannot be read ({why}), so whether it reported failure cannot be known")));
    }
    let failed_update = o.mail.folded.as_ref().filter(|f| f.attempt == rec.attempt).and_then(|f| f.failed.clone());
    Some(match (exit.clean(), failed_update) {
        (_, Some(why)) => Err(format!("the worker reported failure: {why}")),
        (true, None) => Ok(()),
        (false, None) => Err(exit.describe()),
    })
}

/// A running task: how its attempt ended, or, while it works, whether it is still alive.
fn running_task(st: &mut Step<'_>, ot: &ObservedTask, rec: &TaskRecord) {
    let t = &ot.task;
    let ended = classify(ot, rec);
    if let (Some(_), Some(gone)) = (&ended, &ot.worktree_gone) {
        // Over, and its worktree is gone: whatever it did is lost; it runs again.
        orphaned(st, ot, rec, gone);
        let mut why = vec![format!("its worktree is gone ({gone})")];
        if ot.died {
            why.insert(0, DIED.to_string());
        }
        return rerun(st, ot, rec, why.join("; "));
    }
    match ended {
        Some(_) if rec.stop_sent => st.task_state(t, TaskState::Stopped, Some("shut down: another task of the wave failed".into())),
        // Its supervisor died (killed, a reboot): nothing says how it ended; it runs again.
        Some(_) if ot.died => rerun(st, ot, rec, DIED.into()),
        Some(Ok(())) => st.task_state(t, TaskState::Succeeded, None),
        Some(Err(why)) => st.task_state(t, TaskState::Failed, Some(why)),
        None => {
            if let Some(gone) = &ot.worktree_gone {
                return orphaned(st, ot, rec, gone);
            }
            let Some(live) = ot.live.as_ref().filter(|_| !rec.stop_sent) else { return };
            if let Err((why, kind, text)) = judge(st.s, live, task_limit(st.s, st.o, ot)) {
                let state = if kind == "heartbeat" { Some("stale") } else { None };
                let key = format!("{kind}:{}:{}", t.canonical, rec.attempt);
                st.event(kind, key, json!({"task": t.canonical, "state": state, "text": format!("{}: {text}", t.canonical)}));
                if kind == "heartbeat" {
                    // Live but silent (Kiln: in_progress with no heartbeat beyond the timeout):
                    // rerun_required within the budget, failed past it; either way the stop
                    // that follows kills every process of the attempt first.
                    return rerun(st, ot, rec, why);
                }
                // Past its wall-clock limit: failed now; the stop that follows kills it.
                st.task_state(t, TaskState::Failed, Some(why));
            }
        }
    }
}

const DIED: &str = "its supervisor died without recording how the worker ended (killed, or a reboot)";

/// Report once that a task's worktree is gone.
fn orphaned(st: &mut Step<'_>, ot: &ObservedTask, rec: &TaskRecord, gone: &str) {
    let key = format!("orphaned:{}:{}:gone", ot.task.canonical, rec.attempt);
    st.event("orphaned", key, json!({"task": ot.task.canonical, "text": gone}));
}

/// Kiln's `rerun_required`: queued again (the same id, its next attempt), up to
/// [`MAX_RERUNS`] times; then failed.
fn rerun(st: &mut Step<'_>, ot: &ObservedTask, rec: &TaskRecord, why: String) {
    let t = &ot.task;
    if rec.reruns >= MAX_RERUNS {
        return st.task_state(t, TaskState::Failed, Some(format!("{why}; not run again after {MAX_RERUNS} reruns")));
    }
    let key = format!("rerun:{}:{}", t.canonical, rec.attempt);
    st.event("rerun_required", key, json!({"task": t.canonical, "text": format!("{why}: it runs again")}));
    st.task_state(t, TaskState::Queued, Some(why));
    if let Some(r) = st.record.tasks.get_mut(&t.canonical) {
        r.reruns += 1;
        r.stop_sent = false;
    }
}

/// Log what is new in a task's mailbox: each task update of its current attempt once (a
/// repeated idempotency key is a no-op; a sequence not above the highest applied is logged as
/// ignored), the reader's notes, a mailbox that cannot be read; and keep how far it was read.
/// Linear in the new updates: a pass reads only what was appended since the last.
fn fold_mail(st: &mut Step<'_>, ot: &ObservedTask) {
    let t = &ot.task;
    let mail = &ot.mail;
    let Some(rec) = st.record.tasks.get(&t.canonical).cloned() else { return };
    let attempt = rec.attempt;
    if let Some(why) = &mail.error {
        let text = format!("{}: its mailbox cannot be read: {why}", t.canonical);
        st.event("anomaly", format!("mailbox-error:{}:{attempt}", t.canonical), json!({"task": t.canonical, "text": text}));
    }
    let Some(folded) = mail.folded.as_ref().filter(|f| f.attempt == attempt) else { return };
    let key = |idem: &str| format!("update:{}:{attempt}:{idem}", t.canonical);
    // An older guild-hall keyed an update by the task and its key alone.
    let old_key = |idem: &str| format!("update:{}:{idem}", t.canonical);
    let log = &st.o.timeline_keys;
    let in_log = |idem: &str| log.contains(&key(idem)) || (mail.legacy && log.contains(&old_key(idem)));
    let updates: Vec<_> = mail
        .updates
        .iter()
        .filter_map(|m| match &m.body {
            MailBody::TaskUpdate(u) => Some(u),
            _ => None,
        })
        .collect();
    // The highest applied: in the record, or in the log (a pass that died after appending
    // events of this read and before writing the record and the read position).
    let logged = updates.iter().filter(|u| in_log(&u.idempotency_key)).map(|u| u.sequence).max().unwrap_or(0);
    let mut seq = rec.sequence.max(logged);
    for u in updates {
        let k = key(&u.idempotency_key);
        if in_log(&u.idempotency_key) || !st.keys.insert(k.clone()) {
            continue; // a duplicate key is a no-op
        }
        if u.sequence <= seq && seq > 0 {
            st.event("task_update_ignored", k, json!({"task": t.canonical, "attempt": attempt, "sequence": u.sequence, "applied": seq, "text": "lower sequence than the highest applied: ignored"}));
            continue;
        }
        let ops: Vec<&crate::worker::toolbox::mailbox::ChangedOp> =
            u.changed_ops.iter().filter(|c| !super::copyback::control_plane(&c.path) && !super::copyback::excluded(&c.path)).collect();
        st.event("task_update", k, json!({"task": t.canonical, "attempt": attempt, "status": u.status, "sequence": u.sequence, "changed_ops": ops, "evidence_paths": u.evidence_paths, "verify_summary": u.verify_summary, "error": u.error}));
        seq = u.sequence;
    }
    seq = seq.max(mail.more_sequence);
    // What a commission's worker reports (progress, questions, decisions, its result) is
    // logged the same for a task: one package serves both kinds.
    for m in &mail.events {
        let k = format!("mail:{}:{attempt}:{}", t.canonical, m.id);
        if log.contains(&k) || !st.keys.insert(k.clone()) {
            continue;
        }
        let mut fields = m.body.timeline_fields(attempt);
        fields["task"] = json!(t.canonical);
        st.event(m.body.kind(), k, fields);
    }
    if let Some(r) = &folded.result {
        let k = format!("result:{}:{attempt}", t.canonical);
        if !log.contains(&k) && st.keys.insert(k.clone()) {
            let text = format!("{}: {}", t.canonical, r.summary);
            st.event(
                "result",
                k,
                json!({"task": t.canonical, "attempt": attempt, "summary": r.summary, "artifacts": r.artifacts, "text": text}),
            );
        }
    }
    for (k, text) in &mail.notes {
        st.event("anomaly", k.clone(), json!({"task": t.canonical, "text": format!("{}: {text}", t.canonical)}));
    }
    if let Some(r) = st.record.tasks.get_mut(&t.canonical) {
        if r.sequence != seq {
            r.sequence = seq;
            st.dirty = true;
        }
    }
    if mail.fold_changed {
        st.folds.push(TaskFold { slug: t.slug(), folded: folded.clone() });
    }
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

fn step(o: &Observed, s: &Snapshot, slots: usize) -> Option<Action> {
    let now = s.now.as_str();
    use PlanStatus::*;
    let p = &o.plan;
    let asked = match p.desired.as_deref() {
        Some("cancelled") => Cancelled,
        Some("dispatched") => Pending,
        _ => p.status.unwrap_or(Pending),
    };
    // Ended on the integration branch while the checkout's file says it is to run: nothing is
    // run again, the file is the person's until `guild-hall land` brings the status in.
    if o.integrated.is_some() {
        return None;
    }
    // At work in another home (no record here): nothing is done for it, `status` says so; a
    // request in `desired:` is validated against the status it is at there.
    let away = o.record.is_none() && elsewhere(p, None).is_some();
    if away && p.desired.is_none() {
        return None;
    }
    let start = known_record(o);
    let known = start.is_some();
    let record = start.unwrap_or_else(PlanRecord::fresh);
    let mut st =
        Step { o, s, now, record, edits: Vec::new(), events: Vec::new(), dirty: false, keys: Default::default(), folds: Vec::new() };
    let had = st.record.status;
    // First met, whatever its status (a draft, written already over): created so, the one
    // `created` event every kind opens its timeline with — not for a plan another home ran
    // (its `wave:`/`tasks:` say so), whose timeline is that home's.
    let ran = p.fields.contains_key("wave") || p.fields.contains_key("tasks");
    if o.record.is_none() && !ran && !o.timeline_keys.contains("created") {
        st.events.push(timeline::created(now, p.status.unwrap_or(Pending).as_str(), None));
    }
    // A person's request: validated against what guild-hall last accepted.
    if asked != had && known || (!known && asked != Draft && asked != Pending) {
        if person_may_request(had, asked) {
            match asked {
                Cancelled => {
                    st.go(Cancelled, "cancelled by a person");
                }
                Pending => {
                    // A retry: what did not succeed runs again; what landed stays.
                    let wave = st.record.wave;
                    for t in p.waves.get(wave.saturating_sub(1)).into_iter().flatten() {
                        if matches!(st.record.tasks.get(&t.canonical).map(|r| r.state), Some(TaskState::Failed | TaskState::Stopped)) {
                            st.task_state(t, TaskState::Queued, None);
                            if let Some(r) = st.record.tasks.get_mut(&t.canonical) {
                                r.stop_sent = false;
                                r.reruns = 0;
                            }
                        }
                    }
                    st.go(if had == Draft { Pending } else { Running }, "retried by a person");
                    st.record.reason = None;
                    if had != Draft && !st.record.bases.contains_key(&wave) {
                        // Taken from the artifact in this home: the wave's base is the tip now.
                        return Some(Action::StartWave { update: st.finish(), wave });
                    }
                }
                _ => {}
            }
        } else {
            let why = format!("refused: {}", request_refusal(had, asked).unwrap_or_default());
            let mut events = Vec::new();
            let key = format!("refused:{had}:{asked}:{}", p.hash);
            if !o.timeline_keys.contains(&key) {
                events.push(timeline::event(now, "refused", key, json!({"asked": asked.as_str(), "status": had.as_str(), "reason": why})));
            }
            let mut edits =
                vec![Edit::Set("status".into(), Value::String(had.as_str().into())), Edit::Set("reason".into(), Value::String(why))];
            if p.desired.is_some() {
                edits.push(Edit::Remove("desired".into()));
            }
            let update = Update { plan: p.id.clone(), expect_hash: p.hash, edits, events, record: None, folds: vec![] };
            return Some(Action::Update { update });
        }
    }
    if o.record.is_none() && asked == Draft {
        // Nothing is recorded of a draft: only its `created` event, once.
        let events = std::mem::take(&mut st.events);
        return (!events.is_empty()).then(|| Action::Update {
            update: Update { plan: p.id.clone(), expect_hash: p.hash, edits: vec![], events, record: None, folds: vec![] },
        });
    }
    if !known && asked == Pending {
        // First met, submitted (a draft this home never recorded included).
        st.record.status = Pending;
        st.dirty = true;
    } else if st.record.status == Draft && asked == Pending {
        st.go(Pending, "submitted");
    }
    // Cancelled: stop what runs; nothing merged is undone.
    if st.record.status == Cancelled {
        return match stopping(&mut st) {
            Stopping::Stop(task, attempt) => Some(Action::StopTask { update: st.finish(), task, attempt, kill: false }),
            _ => {
                // A verify at work is stopped too (once); its shim ends every process of it.
                let run = st.record.verify_runs;
                // (A shim at work holds its lock: `started` says u32::MAX then.)
                let verifying = run > 0
                    && matches!(o.verify_started, Some(r) if r == run || r == u32::MAX)
                    && o.verify_exit.as_ref().is_none_or(|x| x.attempt != run)
                    && !o.verify_died;
                if verifying && !st.record.verify_stop_sent {
                    st.record.verify_stop_sent = true;
                    st.dirty = true;
                    return Some(Action::StopVerify { update: st.finish(), run, kill: false });
                }
                settle(st)
            }
        };
    }
    if st.record.status == Pending {
        // A task's worker not installed or not usable: the plan waits, pending with the reason,
        // rather than start and halt on it (a plan once running waits for nothing).
        if let Some((t, why)) = o.tasks.iter().find_map(|t| t.worker_problem.as_ref().map(|why| (&t.task, why))) {
            let why = format!("waits: task {} ({}): {why}", t.canonical, t.label);
            if st.record.reason.as_deref() != Some(why.as_str()) {
                st.record.reason = Some(why);
                st.dirty = true;
            }
            return settle(st);
        }
        st.record.wave = 1;
        st.go(Running, "started");
        return Some(Action::StartWave { update: st.finish(), wave: 1 });
    }
    let w = st.record.wave;
    let Some(wave) = p.waves.get(w.saturating_sub(1)) else { return settle(st) };
    // Fold what is new in the task mailboxes into the log.
    for ot in o.tasks.iter().filter(|t| t.task.wave == w) {
        fold_mail(&mut st, ot);
    }
    match st.record.status {
        Running if o.taken && !st.record.bases.contains_key(&w) => {
            // A record taken from the artifact, no task worktree to find the wave's base from:
            // the base is the tip now (and what landed of the wave is taken as integrated).
            Some(Action::StartWave { update: st.finish(), wave: w })
        }
        Running => {
            // Attempts that ended; workers at work held to the liveness rules.
            for ot in o.tasks.iter().filter(|t| t.task.wave == w) {
                let Some(rec) = st.record.tasks.get(&ot.task.canonical).cloned() else { continue };
                if rec.state == TaskState::Running
                    && ot.exit.as_ref().is_none_or(|x| x.attempt != rec.attempt)
                    && ot.started.is_none_or(|a| a != rec.attempt && a != u32::MAX)
                    && !rec.stop_sent
                {
                    // Recorded as started, but no shim ever took it (a pass died between the
                    // two): start it again, in the same worktree.
                    let starts = vec![TaskStart { task: ot.task.canonical.clone(), attempt: rec.attempt }];
                    return Some(Action::StartTask { update: st.finish(), starts });
                }
                match rec.state {
                    TaskState::Running => running_task(&mut st, ot, &rec),
                    // Ready for integration, but its worktree is gone: its work is lost unless
                    // its commit landed (the copy-back then finds it by its trailer).
                    TaskState::Succeeded if !ot.landed => {
                        if let Some(gone) = &ot.worktree_gone {
                            orphaned(&mut st, ot, &rec, gone);
                            rerun(&mut st, ot, &rec, format!("its work was lost before the copy-back ({gone})"));
                        }
                    }
                    TaskState::Failed | TaskState::Stopped => {
                        if let Some(gone) = &ot.worktree_gone {
                            orphaned(&mut st, ot, &rec, gone);
                        }
                    }
                    _ => {}
                }
            }
            // Stops owed: a task failed for going stale or past its limit is killed; one still
            // at work whose worktree is gone is shut down (it runs again once it is over).
            for ot in o.tasks.iter().filter(|t| t.task.wave == w) {
                let Some(rec) = st.record.tasks.get(&ot.task.canonical).cloned() else { continue };
                if rec.stop_sent || ot.live.is_none() {
                    continue;
                }
                let kill = match rec.state {
                    TaskState::Failed => true,
                    // To run again (gone stale) while its attempt still runs: killed first; it
                    // starts once nothing of it is left (`busy`).
                    TaskState::Queued if rec.reruns > 0 => true,
                    TaskState::Running if ot.worktree_gone.is_some() => false,
                    _ => continue,
                };
                if let Some(r) = st.record.tasks.get_mut(&ot.task.canonical) {
                    r.stop_sent = true;
                }
                st.dirty = true;
                return Some(Action::StopTask { update: st.finish(), task: ot.task.canonical.clone(), attempt: rec.attempt, kill });
            }
            let state_of = |st: &Step<'_>, t: &Task| st.record.tasks.get(&t.canonical).map(|r| r.state).unwrap_or(TaskState::Queued);
            // Shut down by a cancel that a retry came after, with nothing failed: they run again.
            if !wave.iter().any(|t| state_of(&st, t) == TaskState::Failed) {
                let stopped: Vec<&Task> = wave.iter().filter(|t| state_of(&st, t) == TaskState::Stopped).collect();
                for t in stopped {
                    st.task_state(t, TaskState::Queued, None);
                    if let Some(r) = st.record.tasks.get_mut(&t.canonical) {
                        r.stop_sent = false;
                    }
                }
            }
            if let Some(failed) = wave.iter().find(|t| state_of(&st, t) == TaskState::Failed) {
                // Fail-fast: the rest of the wave is shut down; the plan halts once all are.
                match stopping(&mut st) {
                    Stopping::Stop(task, attempt) => return Some(Action::StopTask { update: st.finish(), task, attempt, kill: false }),
                    Stopping::Waiting => return settle(st),
                    Stopping::Done => {}
                }
                let why = st.record.tasks.get(&failed.canonical).and_then(|r| r.reason.clone()).unwrap_or_default();
                let reason = format!(
                    "task {} ({}) failed: {why}; the wave was shut down, its worktrees kept; retry with guild-hall plan retry {}",
                    failed.canonical, failed.label, p.id
                );
                st.go(Halted, &reason);
                return settle(st);
            }
            // Kiln's resume order: what is ready for integration is integrated before anything
            // is requeued, so a task to run again (rerun_required) waits for its wave-mates' copy-back,
            // never they for its rerun.
            let rerun_waits =
                wave.iter().any(|t| st.record.tasks.get(&t.canonical).is_some_and(|r| r.state == TaskState::Queued && r.reruns > 0));
            if rerun_waits && wave.iter().any(|t| state_of(&st, t) == TaskState::Succeeded) {
                return Some(Action::Integrate { update: st.finish(), wave: w });
            }
            if wave.iter().all(|t| matches!(state_of(&st, t), TaskState::Succeeded | TaskState::Integrated)) {
                if wave.iter().any(|t| state_of(&st, t) == TaskState::Succeeded) {
                    return Some(Action::Integrate { update: st.finish(), wave: w });
                }
                return after_integration(st, w);
            }
            let running = wave.iter().filter(|t| state_of(&st, t) == TaskState::Running).count();
            let room = p.parallelism.saturating_sub(running).min(slots);
            // Nothing starts in a worktree where a process of an earlier attempt still runs.
            let busy = |t: &Task| o.tasks.iter().any(|x| x.task.canonical == t.canonical && (x.busy || x.lingering.is_some()));
            let queued: Vec<&Task> = wave.iter().filter(|t| state_of(&st, t) == TaskState::Queued && !busy(t)).take(room).collect();
            let mut starts = Vec::new();
            for next in queued {
                if let Some(why) = o.tasks.iter().find(|x| x.task.canonical == next.canonical).and_then(|x| x.worker_problem.clone()) {
                    if starts.is_empty() {
                        st.task_state(next, TaskState::Failed, Some(format!("cannot start: {why}")));
                        return settle(st);
                    }
                    // Those before it start; it fails in the next round.
                    break;
                }
                let attempt = st.record.tasks.get(&next.canonical).map(|r| r.attempt).unwrap_or(0) + 1;
                st.task_state(next, TaskState::Running, None);
                if let Some(r) = st.record.tasks.get_mut(&next.canonical) {
                    r.attempt = attempt;
                    r.stop_sent = false;
                    // Its updates count from its own first: a rerun's sequence 1 is new.
                    r.sequence = 0;
                }
                starts.push(TaskStart { task: next.canonical.clone(), attempt });
            }
            if !starts.is_empty() {
                return Some(Action::StartTask { update: st.finish(), starts });
            }
            settle(st)
        }
        Verifying
            if o.verify_exit.as_ref().is_none_or(|x| x.attempt != st.record.verify_runs)
                && o.verify_started.is_none_or(|r| r != st.record.verify_runs && r != u32::MAX) =>
        {
            // Recorded as started, but no shim took it (a pass died between the two).
            let run = st.record.verify_runs;
            Some(Action::StartVerify { update: st.finish(), wave: w, run })
        }
        Verifying => match (o.verify_died, o.verify_exit.as_ref().filter(|x| x.attempt == st.record.verify_runs)) {
            (false, Some(x)) if x.clean() => next_wave(st, w),
            (died, Some(_)) | (died @ true, None) => {
                let how = match (st.record.verify_verdict.clone(), o.verify_exit.as_ref().filter(|x| x.attempt == st.record.verify_runs)) {
                    (Some(verdict), _) => verdict,
                    (None, Some(x)) if !died => x.describe(),
                    _ => "its supervisor died without recording how it ended".into(),
                };
                let reason = format!("verify failed after wave {w} ({how}); its output: guild-hall plan logs {} --verify", p.id);
                match p.fixer.clone() {
                    Some(fixer) => {
                        let round = st.record.fixes + 1;
                        st.record.fixes = round;
                        let run = st.record.verify_runs;
                        st.go(Halted, &format!("{reason}; fix-forward commission {} by {fixer} is under way", fix_id(&p.id, w, round)));
                        Some(Action::FixForward { update: st.finish(), wave: w, round, fixer, run })
                    }
                    None => {
                        st.go(Halted, &format!("{reason}; fix it on the integration branch, then retry"));
                        settle(st)
                    }
                }
            }
            (false, None) => {
                let run = st.record.verify_runs;
                let live = o.verify_live.as_ref().filter(|_| !st.record.verify_stop_sent);
                if let Some(Err((why, kind, text))) = live.map(|live| judge(s, live, verify_limit(s, o))) {
                    let state = if kind == "heartbeat" { Some("stale") } else { None };
                    st.event(
                        kind,
                        format!("{kind}:verify:{run}"),
                        json!({"verify": run, "state": state, "text": format!("verify: {text}")}),
                    );
                    st.record.verify_verdict = Some(why);
                    st.record.verify_stop_sent = true;
                    st.dirty = true;
                    return Some(Action::StopVerify { update: st.finish(), run, kill: true });
                }
                settle(st)
            }
        },
        Halted
            if st.record.fixes > 0
                && o.fix_status == Some(Status::Completed)
                && wave.iter().all(|t| st.record.tasks.get(&t.canonical).is_some_and(|r| r.state == TaskState::Integrated)) =>
        {
            // The fix landed: verify again.
            let fixed_by = fix_id(&p.id, w, st.record.fixes);
            if o.verify_exit.as_ref().is_some_and(|x| x.attempt == st.record.verify_runs) {
                new_verify_run(&mut st);
                let run = st.record.verify_runs;
                st.go(Verifying, &format!("{fixed_by} merged; verifying again"));
                return Some(Action::StartVerify { update: st.finish(), wave: w, run });
            }
            settle(st)
        }
        _ => settle(st),
    }
}

/// Every task of the wave integrated: verify, or go on.
fn after_integration(mut st: Step<'_>, w: usize) -> Option<Action> {
    if st.o.plan.verify.is_some() {
        new_verify_run(&mut st);
        let run = st.record.verify_runs;
        st.go(PlanStatus::Verifying, &format!("wave {w} integrated; verifying"));
        return Some(Action::StartVerify { update: st.finish(), wave: w, run });
    }
    next_wave(st, w)
}

/// The next verify run: nothing stopped it yet.
fn new_verify_run(st: &mut Step<'_>) {
    st.record.verify_runs += 1;
    st.record.verify_stop_sent = false;
    st.record.verify_verdict = None;
}

fn next_wave(mut st: Step<'_>, w: usize) -> Option<Action> {
    if w < st.o.plan.waves.len() {
        st.record.wave = w + 1;
        st.go(PlanStatus::Running, &format!("wave {w} done"));
        st.dirty = true;
        return Some(Action::StartWave { update: st.finish(), wave: w + 1 });
    }
    st.go(PlanStatus::Completed, "every wave integrated and verified");
    settle(st)
}

/// Where shutting the current wave down stands.
enum Stopping {
    /// Nothing of the wave runs any more.
    Done,
    /// Asked to stop; waiting for them to be gone.
    Waiting,
    /// This one is to be asked now.
    Stop(String, u32),
}

/// Shut the current wave down: tasks whose attempt ended are marked stopped; the first one not
/// yet asked is to be asked.
fn stopping(st: &mut Step<'_>) -> Stopping {
    let w = st.record.wave;
    let plan = &st.o.plan;
    let mut waiting = false;
    for t in plan.waves.get(w.saturating_sub(1)).into_iter().flatten() {
        let Some(r) = st.record.tasks.get(&t.canonical).cloned() else { continue };
        if r.state != TaskState::Running {
            continue;
        }
        let ot = st.o.tasks.iter().find(|x| x.task.canonical == t.canonical);
        let ended = ot.is_some_and(|x| x.died || x.exit.as_ref().is_some_and(|e| e.attempt == r.attempt));
        if ot.is_some_and(|x| x.lingering.is_some()) {
            // Its shim is gone, what it left is being killed: nothing to ask, only to wait.
            waiting = true;
        } else if ended {
            let why = if r.stop_sent { "shut down" } else { "ended while the wave was shut down" };
            st.task_state(t, TaskState::Stopped, Some(why.into()));
        } else if !r.stop_sent {
            if let Some(rr) = st.record.tasks.get_mut(&t.canonical) {
                rr.stop_sent = true;
            }
            st.dirty = true;
            return Stopping::Stop(t.canonical.clone(), r.attempt);
        } else {
            waiting = true;
        }
    }
    // Over only once every process of the wave is: a task failed for going stale is still
    // being killed, say.
    let busy = st.o.tasks.iter().any(|x| x.task.wave == w && (x.busy || x.lingering.is_some()));
    if waiting || busy {
        Stopping::Waiting
    } else {
        Stopping::Done
    }
}

fn is_empty(u: &Update) -> bool {
    u.edits.is_empty() && u.events.is_empty() && u.record.is_none() && u.folds.is_empty()
}

/// The update alone, if there is anything to write; else, the least urgent work: removing
/// the worktree of a task whose work has landed.
fn settle(st: Step<'_>) -> Option<Action> {
    let integrated_worktrees: Vec<String> =
        st.o.tasks
            .iter()
            .filter(|t| t.worktree_exists && st.record.tasks.get(&t.task.canonical).is_some_and(|r| r.state == TaskState::Integrated))
            .map(|t| t.task.canonical.clone())
            .collect();
    let u = st.finish();
    if !is_empty(&u) {
        return Some(Action::Update { update: u });
    }
    (!integrated_worktrees.is_empty()).then_some(Action::CleanupTask { update: u, tasks: integrated_worktrees })
}

#[cfg(test)]
mod tests {
    use super::machine_tests::{self, snap, t0};
    use super::*;
    use crate::worker::toolbox::mailbox::{ChangeKind, ChangedOp, Mail, TaskUpdate, TaskUpdateStatus};

    fn plan_text(status: &str) -> String {
        format!("---\nstatus: {status}\nparallelism: 1\nwaves:\n  - - {{id: a, worker: w, prompt: x}}\n    - {{id: b, worker: w, prompt: y}}\n---\n")
    }

    fn observed(status: &str, record: Option<PlanRecord>) -> Observed {
        machine_tests::observed(Plan::parse(std::path::Path::new(".lore/plans/p.md"), &plan_text(status)).expect("valid"), record)
    }

    fn running(states: &[(&str, TaskState)]) -> PlanRecord {
        let mut r = machine_tests::record(PlanStatus::Running, 1);
        for (t, s) in states {
            r.tasks.insert(format!("p:exec:wave-1:{t}"), machine_tests::task_record(*s, 1));
        }
        r
    }

    fn update(seq: u64, key: &str, status: TaskUpdateStatus) -> Mail {
        let u = TaskUpdate {
            task_id: None,
            phase: None,
            stage: None,
            status,
            worktree_path: None,
            changed_ops: vec![
                ChangedOp { op: ChangeKind::Add, path: "src/a.rs".into(), from_path: None },
                ChangedOp { op: ChangeKind::Modify, path: ".lore/plans/p.md".into(), from_path: None },
            ],
            verify_summary: None,
            evidence_paths: vec![],
            error: None,
            timestamps: None,
            emitted_at: None,
            sequence: seq,
            idempotency_key: key.into(),
        };
        Mail { seq, id: format!("m{seq}"), ts: "t".into(), attempt: 1, body: MailBody::TaskUpdate(Box::new(u)) }
    }

    /// Review git #1, plans: a plan the checkout says is pending (or has no status) that ended on
    /// the integration branch, which this home never ran, starts nothing and writes nothing.
    #[test]
    fn a_plan_that_ended_on_the_integration_branch_is_not_run_again() {
        for (here, there) in [("pending", "completed"), ("pending", "halted"), ("pending", "cancelled")] {
            let mut o = observed(here, None);
            assert!(!decide(&snap(vec![o.clone()], 3)).is_empty(), "{here}: started without it");
            o.integrated = Some(crate::activity::integrated::Integrated {
                kind: crate::activity::kind::Name::Plan,
                id: "p".into(),
                here: "pending",
                status: there,
                attempt: None,
                integration: "claude/main".into(),
            });
            assert_eq!(decide(&snap(vec![o], 3)), vec![], "{here} here, {there} there: left alone");
        }
    }

    /// Issue 19: a home with no record of a plan its artifact says is over takes the record
    /// from the artifact and writes nothing else; a plan at work with no record here is
    /// another home's and is left alone.
    #[test]
    fn a_home_without_a_record_takes_a_finished_plan_from_its_artifact() {
        let text = "---\nstatus: completed\nparallelism: 1\nwave: 1\ntasks:\n  p:exec:wave-1:task-1: integrated\n  p:exec:wave-1:task-2: integrated\nwaves:\n  - - {id: a, worker: w, prompt: x}\n    - {id: b, worker: w, prompt: y}\n---\n";
        let plan = Plan::parse(std::path::Path::new(".lore/plans/p.md"), text).expect("valid");
        let mut o = machine_tests::observed(plan, None);
        o.timeline_keys.insert("task:p:exec:wave-1:task-1:2:running".into());
        let a = decide(&snap(vec![o], 3));
        let [Action::Update { update }] = a.as_slice() else { panic!("{a:?}") };
        assert!(update.edits.is_empty() && update.events.is_empty(), "the artifact and the timeline stay as they are: {update:?}");
        let r = update.record.as_ref().expect("the home's record written");
        assert_eq!((r.status, r.wave), (PlanStatus::Completed, 1));
        assert_eq!(r.tasks["p:exec:wave-1:task-1"].state, TaskState::Integrated);
        assert_eq!(r.tasks["p:exec:wave-1:task-1"].attempt, 2, "the latest attempt its timeline names");
        assert_eq!(r.tasks["p:exec:wave-1:task-2"].attempt, 1);
        for status in ["running", "verifying"] {
            let o = observed(status, None);
            assert!(elsewhere(&o.plan, None).is_some());
            assert_eq!(decide(&snap(vec![o], 3)), vec![], "{status}: at work in another home, left alone");
        }
    }

    /// New updates of attempt 1, read this pass (the reader moved on).
    fn new_mail(updates: Vec<Mail>) -> TaskMail {
        let folded = TaskFolded { attempt: 1, ..TaskFolded::default() };
        TaskMail { folded: Some(folded), fold_changed: true, updates, ..TaskMail::default() }
    }

    #[test]
    fn each_attempt_counts_its_own_sequence_and_keys_and_the_read_position_is_kept() {
        // Attempt 1 applied up to sequence 7 with key "done"; attempt 2 starts again from 1,
        // with the same key: both are new.
        let mut r = running(&[("task-1", TaskState::Running)]);
        r.tasks.values_mut().for_each(|t| {
            t.attempt = 2;
            t.sequence = 0;
        });
        let mut o = observed("running", Some(r));
        o.timeline_keys.insert("update:p:exec:wave-1:task-1:1:done".into());
        let mut mail = new_mail(vec![update(1, "done", TaskUpdateStatus::Done)]);
        mail.updates[0].attempt = 2;
        mail.folded = Some(TaskFolded { attempt: 2, ..TaskFolded::default() });
        o.tasks[0].mail = mail;
        let a = decide(&snap(vec![o], 3));
        let u = a[0].update();
        let applied: Vec<&Json> = u.events.iter().filter(|e| e["kind"] == "task_update").collect();
        assert_eq!(applied.len(), 1, "{u:?}");
        assert_eq!((applied[0]["attempt"].as_u64(), applied[0]["key"].as_str()), (Some(2), Some("update:p:exec:wave-1:task-1:2:done")));
        assert_eq!(u.record.as_ref().and_then(|r| r.tasks.get("p:exec:wave-1:task-1")).map(|t| t.sequence), Some(1));
        assert_eq!(u.folds.iter().map(|f| (f.slug.as_str(), f.folded.attempt)).collect::<Vec<_>>(), [("p-exec-wave-1-task-1", 2)]);
    }

    #[test]
    fn task_updates_are_idempotent_ordered_and_filtered() {
        let mut o = observed("running", Some(running(&[("task-1", TaskState::Running)])));
        o.tasks[0].mail = new_mail(vec![
            update(2, "k2", TaskUpdateStatus::InProgress),
            update(2, "k2", TaskUpdateStatus::InProgress),
            update(1, "k1", TaskUpdateStatus::Queued),
        ]);
        let a = decide(&snap(vec![o], 3));
        let events = &a[0].update().events;
        let applied: Vec<&Json> = events.iter().filter(|e| e["kind"] == "task_update").collect();
        assert_eq!(applied.len(), 1, "the duplicate key is a no-op: {events:?}");
        assert_eq!(applied[0]["changed_ops"].as_array().map(|a| a.len()), Some(1), "the control plane is filtered out");
        assert!(events.iter().any(|e| e["kind"] == "task_update_ignored" && e["sequence"] == 1), "a lower sequence is ignored");
        assert_eq!(a[0].update().record.as_ref().and_then(|r| r.tasks.get("p:exec:wave-1:task-1")).map(|t| t.sequence), Some(2));
    }

    #[test]
    fn every_free_slot_starts_in_one_action_in_plan_order() {
        let wide = |p: usize| {
            let tasks: String = (0..5).map(|i| format!("    - {{id: t{i}, worker: w, prompt: x}}\n")).collect();
            let text = format!("---\nstatus: running\nparallelism: {p}\nwaves:\n  -\n{tasks}---\n");
            machine_tests::observed(Plan::parse(std::path::Path::new(".lore/plans/p.md"), &text).expect("valid"), Some(running(&[])))
        };
        let started = |a: &[Action]| -> Vec<(String, u32)> {
            a.iter()
                .filter_map(|x| match x {
                    Action::StartTask { starts, .. } => Some(starts.iter().map(|s| (s.task.clone(), s.attempt)).collect::<Vec<_>>()),
                    _ => None,
                })
                .flatten()
                .collect()
        };
        let first = |n: usize| (1..=n).map(|i| (format!("p:exec:wave-1:task-{i}"), 1)).collect::<Vec<_>>();
        // Parallelism 3, slots to spare: the first three, in one action, their record written
        // as running in its one update.
        let a = decide(&snap(vec![wide(3)], 10));
        assert_eq!(a.iter().filter(|x| matches!(x, Action::StartTask { .. })).count(), 1, "{a:?}");
        assert_eq!(started(&a), first(3));
        let record = a[0].update().record.as_ref().expect("the record");
        assert_eq!(record.tasks.values().filter(|t| t.state == TaskState::Running).count(), 3);
        // The project's slots are fewer: as many as they allow.
        assert_eq!(started(&decide(&snap(vec![wide(4)], 2))), first(2));
        // A task whose worker cannot start stops the batch there: those before it start now, it
        // fails in the next round.
        let mut o = wide(4);
        o.tasks[2].worker_problem = Some("not installed".into());
        let a = decide(&snap(vec![o.clone()], 10));
        assert_eq!(started(&a), first(2));
        o.tasks[0].worker_problem = Some("not installed".into());
        let a = decide(&snap(vec![o], 10));
        assert!(started(&a).is_empty(), "the first cannot start: it fails, alone: {a:?}");
    }

    #[test]
    fn parallelism_and_fifo_in_plan_order() {
        let o = observed("running", Some(running(&[])));
        let a = decide(&snap(vec![o], 3));
        assert!(matches!(&a[0], Action::StartTask { starts, .. } if starts[0].task == "p:exec:wave-1:task-1"), "{a:?}");
        let mut o = observed("running", Some(running(&[("task-1", TaskState::Running)])));
        o.tasks[0].started = Some(1);
        let a = decide(&snap(vec![o.clone()], 3));
        assert!(!a.iter().any(|x| matches!(x, Action::StartTask { .. })), "parallelism 1: the second waits: {a:?}");
        // Recorded as running but never taken by a shim (a pass died in between): started again.
        o.tasks[0].started = None;
        let a = decide(&snap(vec![o], 3));
        assert!(
            matches!(&a[0], Action::StartTask { starts, .. } if starts == &[TaskStart { task: "p:exec:wave-1:task-1".into(), attempt: 1 }]),
            "{a:?}"
        );
        // The project's cap holds too: no slot left, nothing starts.
        let o = observed("running", Some(running(&[])));
        let a = decide(&snap(vec![o], 0));
        assert!(!a.iter().any(|x| matches!(x, Action::StartTask { .. })), "{a:?}");
    }

    #[test]
    fn refused_status_edits_are_put_back_with_why() {
        for (had, asked, allowed) in [
            (PlanStatus::Running, "completed", false),
            (PlanStatus::Completed, "pending", false),
            (PlanStatus::Halted, "pending", true),
            (PlanStatus::Running, "cancelled", true),
            (PlanStatus::Verifying, "running", false),
        ] {
            let mut r = running(&[]);
            r.status = had;
            let a = decide(&snap(vec![observed(asked, Some(r))], 3));
            let u = a.first().map(|a| a.update()).expect("planned");
            let put_back = u.edits.iter().any(|e| matches!(e, Edit::Set(k, v) if k == "status" && v.as_str() == Some(had.as_str())));
            assert_eq!(!allowed, put_back, "{had} -> {asked}: {u:?}");
            if !allowed {
                assert!(u
                    .edits
                    .iter()
                    .any(|e| matches!(e, Edit::Set(k, v) if k == "reason" && v.as_str().is_some_and(|r| r.starts_with("refused")))));
                assert!(u.events.iter().any(|e| e["kind"] == "refused"));
            }
        }
    }

    const T1: &str = "p:exec:wave-1:task-1";

    fn live(started_secs_ago: i64, quiet_secs: i64) -> Live {
        let sample = Sample { log_len: 10, cpu_ticks: 5, mailbox_len: 100 };
        Live {
            started_at: t0() - chrono::Duration::seconds(started_secs_ago),
            heartbeat: Some(Heartbeat { last_activity: t0() - chrono::Duration::seconds(quiet_secs), sample }),
            sample,
        }
    }

    fn task_record(a: &Action) -> Option<TaskRecord> {
        a.update().record.as_ref().and_then(|r| r.tasks.get(T1)).cloned()
    }

    fn kinds(a: &Action) -> Vec<String> {
        a.update().events.iter().map(|e| e["kind"].as_str().unwrap_or("").to_string()).collect()
    }

    #[test]
    fn resume_classes_from_what_is_there() {
        let o = observed("running", None);
        let ot = o.tasks[0].clone();
        let rec = |state| TaskRecord { state, attempt: 1, reason: None, sequence: 0, stop_sent: false, reruns: 0 };
        let gone = ObservedTask { worktree_gone: Some("its worktree /w was removed".into()), ..ot.clone() };
        let died = ObservedTask { died: true, ..ot.clone() };
        use ResumeClass::*;
        for (task, state, want) in [
            (&ot, None, Queued),
            (&ot, Some(TaskState::Queued), Queued),
            (&ot, Some(TaskState::Integrated), Done),
            (&ot, Some(TaskState::Succeeded), ReadyForIntegration),
            (&gone, Some(TaskState::Succeeded), Orphaned),
            (&ObservedTask { landed: true, ..gone.clone() }, Some(TaskState::Succeeded), Done),
            (&ot, Some(TaskState::Running), InProgress),
            (&died, Some(TaskState::Running), RerunRequired),
            (&ObservedTask { died: true, ..gone.clone() }, Some(TaskState::Running), Orphaned),
            (&ot, Some(TaskState::Failed), RerunRequired),
            (&ot, Some(TaskState::Stopped), RerunRequired),
            (&gone, Some(TaskState::Failed), Orphaned),
        ] {
            let r = state.map(rec);
            assert_eq!(resume_class(task, r.as_ref()), want, "{state:?} gone={:?} died={}", task.worktree_gone, task.died);
        }
    }

    #[test]
    fn a_dead_task_runs_again_a_bounded_number_of_times() {
        let mut o = observed("running", Some(running(&[("task-1", TaskState::Running)])));
        o.tasks[0].started = Some(1);
        o.tasks[0].died = true;
        // Queued again and started at once: its next attempt, the same id.
        let a = decide(&snap(vec![o.clone()], 3));
        assert!(matches!(&a[0], Action::StartTask { starts, .. } if starts.iter().all(|s| s.attempt == 2)), "{a:?}");
        let r = task_record(&a[0]).expect("recorded");
        assert_eq!((r.state, r.reruns, r.attempt), (TaskState::Running, 1, 2), "{a:?}");
        assert!(kinds(&a[0]).contains(&"rerun_required".to_string()), "{a:?}");
        // After MAX_RERUNS, failed: a task that dies at every try is not run for ever.
        if let Some(r) = o.record.as_mut().and_then(|r| r.tasks.get_mut(T1)) {
            r.reruns = MAX_RERUNS;
        }
        let a = decide(&snap(vec![o], 3));
        let r = task_record(&a[0]).expect("recorded");
        assert_eq!(r.state, TaskState::Failed);
        assert!(r.reason.as_deref().is_some_and(|w| w.contains("supervisor died") && w.contains("not run again")), "{r:?}");
    }

    fn lingering(attempt: u32) -> Lingering {
        let run = RunInfo {
            attempt,
            pid: 4242,
            pgid: 4242,
            start_time: 1,
            boot_id: "b".into(),
            worker_pid: Some(4243),
            started_at: t0(),
            run_id: "0123456789abcdef0123456789abcdef".into(),
        };
        Lingering { attempt, run, pids: vec![4244] }
    }

    #[test]
    fn what_a_killed_shim_left_running_is_killed_before_the_task_is_judged_or_run_again() {
        let mut o = observed("running", Some(running(&[("task-1", TaskState::Running)])));
        o.tasks[0].started = Some(1);
        o.tasks[0].lingering = Some(lingering(1));
        // Its supervisor died, processes of it still run: classified rerun_required, but only
        // killed for now, with a log event; the task stays as it is, nothing starts.
        assert_eq!(resume_class(&o.tasks[0], o.record.as_ref().and_then(|r| r.tasks.get(T1))), ResumeClass::RerunRequired);
        let a = decide(&snap(vec![o.clone()], 3));
        assert!(matches!(&a[0], Action::KillLeftovers { task: Some(t), pids, .. } if t == T1 && pids == &[4244]), "{a:?}");
        assert_eq!(kinds(&a[0]), ["leftovers"], "{a:?}");
        assert!(!a.iter().any(|a| matches!(a, Action::StartTask { .. })), "nothing starts while they run: {a:?}");
        assert!(a.iter().all(|a| task_record(a).is_none_or(|r| r.state == TaskState::Running && r.attempt == 1)), "{a:?}");
        assert_eq!(next_check(&snap(vec![o.clone()], 3)), Some(std::time::Duration::from_millis(200)));
        // Said once.
        o.timeline_keys.insert(format!("leftovers:{T1}:1"));
        assert!(decide(&snap(vec![o.clone()], 3))[0].update().events.is_empty());
        // A cancel waits for them too, asking nothing of the dead shim.
        let mut c = o.clone();
        c.plan = Plan::parse(std::path::Path::new(".lore/plans/p.md"), &plan_text("cancelled")).expect("valid");
        let a = decide(&snap(vec![c], 3));
        assert!(!a.iter().any(|a| matches!(a, Action::StopTask { .. })), "{a:?}");
        assert!(a.iter().all(|a| task_record(a).is_none_or(|r| r.state == TaskState::Running)), "{a:?}");
        // Gone: the attempt is over, and it runs again.
        o.tasks[0].lingering = None;
        o.tasks[0].died = true;
        let a = decide(&snap(vec![o], 3));
        assert!(matches!(&a[0], Action::StartTask { starts, .. } if starts.iter().all(|s| s.attempt == 2)), "{a:?}");
        // A verify's: killed before the gate's verdict.
        let mut r = running(&[("task-1", TaskState::Integrated), ("task-2", TaskState::Integrated)]);
        r.status = PlanStatus::Verifying;
        r.verify_runs = 1;
        let mut o = observed("verifying", Some(r));
        o.plan.verify = Some(vec!["sleep".into(), "1000".into()]);
        o.verify_started = Some(1);
        o.verify_lingering = Some(lingering(1));
        let a = decide(&snap(vec![o], 3));
        assert!(matches!(&a[0], Action::KillLeftovers { task: None, .. }), "{a:?}");
        assert!(a.iter().all(|a| a.update().record.as_ref().is_none_or(|r| r.status == PlanStatus::Verifying)), "no verdict yet: {a:?}");
    }

    #[test]
    fn a_task_whose_worktree_went_is_orphaned_and_runs_again() {
        let gone = Some("its worktree /w/task-p was removed".to_string());
        // Ready for integration, but its work is gone: reported, queued again.
        let mut o = observed("running", Some(running(&[("task-1", TaskState::Succeeded), ("task-2", TaskState::Integrated)])));
        o.tasks[0].worktree_gone = gone.clone();
        let a = decide(&snap(vec![o.clone()], 3));
        assert!(matches!(&a[0], Action::StartTask { starts, .. } if starts.iter().all(|s| s.attempt == 2)), "{a:?}");
        assert!(kinds(&a[0]).contains(&"orphaned".to_string()) && kinds(&a[0]).contains(&"rerun_required".to_string()));
        // Its commit landed already: nothing runs again (the copy-back finds the commit).
        o.tasks[0].landed = true;
        let a = decide(&snap(vec![o], 3));
        assert!(matches!(&a[0], Action::Integrate { .. }), "{a:?}");
        // Still at work: shut down first (SIGTERM), then queued again once it is over.
        let mut o = observed("running", Some(running(&[("task-1", TaskState::Running)])));
        o.tasks[0].started = Some(1);
        o.tasks[0].worktree_gone = gone;
        o.tasks[0].live = Some(live(1, 0));
        o.tasks[0].busy = true;
        let a = decide(&snap(vec![o.clone()], 3));
        assert!(matches!(&a[0], Action::StopTask { kill: false, .. }), "{a:?}");
        assert!(kinds(&a[0]).contains(&"orphaned".to_string()));
        o.record = a[0].update().record.clone();
        o.tasks[0].live = None;
        o.tasks[0].busy = false;
        o.tasks[0].exit = Some(ExitInfo { attempt: 1, code: None, signal: Some(15), error: None, finished_at: t0(), tail: None });
        let a = decide(&snap(vec![o], 3));
        assert!(matches!(&a[0], Action::StartTask { starts, .. } if starts.iter().all(|s| s.attempt == 2)), "{a:?}");
        assert_eq!(task_record(&a[0]).map(|r| (r.state, r.reruns, r.stop_sent)), Some((TaskState::Running, 1, false)), "{a:?}");
    }

    #[test]
    fn a_stale_task_reruns_within_its_budget_an_overlong_one_fails_and_the_plan_halts_once_it_is_gone() {
        let at_work = |l: Live| {
            let mut o = observed("running", Some(running(&[("task-1", TaskState::Running)])));
            o.tasks[0].started = Some(1);
            o.tasks[0].live = Some(l);
            o.tasks[0].busy = true;
            o
        };
        // Quiet for less than stale_after (3s): nothing; its signs changed: a heartbeat.
        let still = |a: &[Action]| a.iter().all(|a| task_record(a).is_none_or(|r| r.state == TaskState::Running && !r.stop_sent));
        let a = decide(&snap(vec![at_work(live(10, 2))], 3));
        assert!(still(&a) && !a.iter().any(|a| matches!(a, Action::Beat { .. } | Action::StopTask { .. })), "{a:?}");
        let mut moved = live(10, 2);
        moved.sample.log_len += 1;
        let a = decide(&snap(vec![at_work(moved)], 3));
        assert!(still(&a) && a.iter().any(|a| matches!(a, Action::Beat { task: Some(t), .. } if t == T1)), "{a:?}");
        // Quiet past stale_after (Kiln: no heartbeat beyond the timeout): rerun_required within
        // the budget, its attempt killed (SIGKILL) first; the plan goes on.
        let a = decide(&snap(vec![at_work(live(10, 4))], 3));
        assert!(matches!(&a[0], Action::StopTask { kill: true, attempt: 1, .. }), "{a:?}");
        let r = task_record(&a[0]).expect("recorded");
        assert_eq!((r.state, r.reason.as_deref(), r.stop_sent, r.reruns), (TaskState::Queued, Some(liveness::UNRESPONSIVE), true, 1));
        assert!(a[0].update().events.iter().any(|e| e["kind"] == "heartbeat" && e["state"] == "stale"), "{a:?}");
        assert!(kinds(&a[0]).contains(&"rerun_required".to_string()), "{a:?}");
        assert_eq!(a[0].update().record.as_ref().map(|r| r.status), Some(PlanStatus::Running), "{a:?}");
        // Nothing starts while its killed attempt is still going; once it is gone, attempt 2.
        let mut o = at_work(live(10, 4));
        o.record = a[0].update().record.clone();
        let a = decide(&snap(vec![o.clone()], 3));
        let of_t1 = |a: &Action| match a {
            Action::StartTask { starts, .. } => starts.iter().any(|s| s.task == T1),
            Action::StopTask { task, .. } => task == T1,
            _ => false,
        };
        assert!(!a.iter().any(of_t1), "{a:?}");
        o.tasks[0].live = None;
        o.tasks[0].busy = false;
        o.tasks[0].exit = Some(ExitInfo { attempt: 1, code: None, signal: Some(9), error: None, finished_at: t0(), tail: None });
        let a = decide(&snap(vec![o], 3));
        assert!(matches!(&a[0], Action::StartTask { starts, .. } if starts.iter().any(|s| s.task == T1 && s.attempt == 2)), "{a:?}");
        // Past the budget: failed, unresponsive, killed (SIGKILL).
        let mut o = at_work(live(10, 4));
        if let Some(r) = o.record.as_mut().and_then(|r| r.tasks.get_mut(T1)) {
            r.reruns = MAX_RERUNS;
        }
        let a = decide(&snap(vec![o], 3));
        assert!(matches!(&a[0], Action::StopTask { kill: true, .. }), "{a:?}");
        let r = task_record(&a[0]).expect("recorded");
        assert_eq!(r.state, TaskState::Failed);
        assert_eq!(r.reason.as_deref(), Some("process unresponsive; not run again after 2 reruns"));
        assert!(r.stop_sent);
        // Busy past its limit (the task's own, over the plan's): failed naming it.
        let text =
            plan_text("running").replace("prompt: x}", "prompt: x, timeout: 4s}").replace("parallelism: 1", "timeout: 1h\nparallelism: 1");
        let mut o = at_work(live(5, 0));
        o.plan = Plan::parse(std::path::Path::new(".lore/plans/p.md"), &text).expect("valid");
        for (ot, t) in o.tasks.iter_mut().zip(o.plan.tasks()) {
            ot.task = t.clone();
        }
        let a = decide(&snap(vec![o.clone()], 3));
        assert_eq!(task_record(&a[0]).and_then(|r| r.reason), Some("timed out: ran longer than 4s (the task's timeout)".into()), "{a:?}");
        // The plan halts only once the killed one is gone.
        o.record = a[0].update().record.clone();
        let a = decide(&snap(vec![o.clone()], 3));
        assert!(a.iter().all(|a| a.update().record.as_ref().is_none_or(|r| r.status == PlanStatus::Running)), "{a:?}");
        o.tasks[0].live = None;
        o.tasks[0].busy = false;
        o.tasks[0].exit = Some(ExitInfo { attempt: 1, code: None, signal: Some(9), error: None, finished_at: t0(), tail: None });
        let a = decide(&snap(vec![o], 3));
        let rec = a[0].update().record.clone().expect("recorded");
        assert_eq!(rec.status, PlanStatus::Halted);
        assert!(rec.reason.as_deref().is_some_and(|r| r.contains("timed out: ran longer than 4s")), "{rec:?}");
    }

    #[test]
    fn a_stale_verify_is_killed_and_fails_the_gate_saying_why() {
        let mut r = running(&[("task-1", TaskState::Integrated), ("task-2", TaskState::Integrated)]);
        r.status = PlanStatus::Verifying;
        r.verify_runs = 1;
        let mut o = observed("verifying", Some(r));
        o.plan.verify = Some(vec!["sleep".into(), "1000".into()]);
        o.verify_started = Some(1);
        o.verify_live = Some(live(10, 4));
        let a = decide(&snap(vec![o.clone()], 3));
        assert!(matches!(&a[0], Action::StopVerify { kill: true, run: 1, .. }), "{a:?}");
        let rec = a[0].update().record.clone().expect("recorded");
        assert_eq!(rec.verify_verdict.as_deref(), Some(liveness::UNRESPONSIVE));
        o.record = Some(rec);
        o.verify_live = None;
        o.verify_exit = Some(ExitInfo { attempt: 1, code: None, signal: Some(9), error: None, finished_at: t0(), tail: None });
        let a = decide(&snap(vec![o], 3));
        let rec = a[0].update().record.clone().expect("recorded");
        assert_eq!(rec.status, PlanStatus::Halted);
        assert!(rec.reason.as_deref().is_some_and(|r| r.starts_with("verify failed after wave 1 (process unresponsive)")), "{rec:?}");
    }

    #[test]
    fn the_next_look_is_at_the_earliest_deadline() {
        let mut o = observed("running", Some(running(&[("task-1", TaskState::Running)])));
        o.tasks[0].live = Some(live(1, 0));
        // stale_after 3s (+100ms) after the last change.
        assert_eq!(next_check(&snap(vec![o.clone()], 3)), Some(std::time::Duration::from_millis(3100)));
        o.plan.timeout = Some(std::time::Duration::from_secs(2));
        assert_eq!(next_check(&snap(vec![o.clone()], 3)), Some(std::time::Duration::from_secs(1)));
        // A stopped one still going away: soon.
        o.tasks[0].live = None;
        o.tasks[0].busy = true;
        assert_eq!(next_check(&snap(vec![o], 3)), Some(std::time::Duration::from_millis(200)));
    }

    /// A pass's line for a plan's update says what changed, in words (issue 20): the mailboxes
    /// read, the mirrored `tasks:`, the `created` event are bookkeeping, not reported when it
    /// succeeded.
    #[test]
    fn a_plan_update_is_said_in_words_and_bookkeeping_is_not_reported() {
        use crate::activity::kind::Action as _;
        let update = |edits: Vec<Edit>, events: Vec<Json>| Action::Update {
            update: Update { plan: "p".into(), expect_hash: 0, edits, events, record: Some(running(&[])), folds: vec![] },
        };
        let ev = |kind: &str, fields: Json| timeline::event("2026-11-25T00:00:00.000Z", kind, kind.into(), fields);
        let quiet = update(vec![Edit::Set("tasks".into(), Value::Null)], vec![ev("created", json!({"status": "pending"}))]);
        assert_eq!(quiet.describe(), "runtime record updated");
        assert!(!quiet.reported(true) && quiet.reported(false));
        let news = update(
            vec![Edit::Set("status".into(), Value::String("completed".into())), Edit::Set("tasks".into(), Value::Null)],
            vec![
                ev("task", json!({"task": "p:exec:wave-1:task-1", "state": "succeeded"})),
                ev("progress", json!({"task": "p:exec:wave-1:task-1", "text": "Reading"})),
                ev("progress", json!({"task": "p:exec:wave-1:task-1", "text": "Wrote it\nand more"})),
                ev("result", json!({"task": "p:exec:wave-1:task-1", "summary": "Wrote it"})),
            ],
        );
        assert_eq!(
            news.describe(),
            "status -> completed; p:exec:wave-1:task-1 succeeded; p:exec:wave-1:task-1: result submitted; p:exec:wave-1:task-1 progress: Wrote it"
        );
        assert!(news.reported(true));
    }
}
