//! The plan state machine as a pure decider: waves in order, at most `parallelism` tasks of
//! the current wave running (FIFO in plan order), fail-fast, integration once the whole wave
//! has succeeded, the verify gate, fix-forward, retry and cancel. This file holds what the
//! decider sees ([`Snapshot`]) and what it asks for ([`Action`]); [`machine`] is the step of
//! one plan, built on [`step::Step`] and the parts below it.
//!
//! - `record`: what guild-hall remembers of a plan, taken from the artifact where it has none;
//! - `machine`: one plan's step — a person's request, cancel, start, and the status arms;
//! - `waves`: a running wave — tasks ended, stops owed, fail-fast, copy-back, starts;
//! - `verify`: the verify gate and fix-forward;
//! - `resume`: Kiln's resume classes, an ended attempt classified, orphaned and rerun tasks;
//! - `liveness`: tasks and verify held to the liveness rules of commissions, leftovers killed;
//! - `fold`: what is new in a task's mailbox, folded into the timeline;
//! - `step`: the update one step builds;
//! - `integration`: what the copy-back of a wave finds means for the plan.

use serde::Serialize;

use chrono::{DateTime, Utc};

use crate::activity::state::{ExitInfo, Heartbeat, RunInfo};
use crate::activity::timeline;
use crate::artifact::plan::{Plan, PlanStatus, Task};
use crate::artifact::write::Edit;
use crate::artifact::Status;
use crate::worker::attempt::{Process, Taken};
use crate::worker::observed_attempt::ObservedAttempt;

pub(crate) use super::mail::{TaskFolded, TaskMail};
pub(crate) use integration::{Finding, Integration};
pub(crate) use liveness::next_check;
pub use record::{elsewhere, known_record, PlanRecord, TaskRecord, TaskState, MAX_RERUNS};
pub(crate) use resume::resume_class;

mod fold;
mod integration;
mod liveness;
mod machine;
mod record;
mod resume;
mod review;
mod step;
mod verify;
mod waves;

#[cfg(test)]
mod machine_tests;
#[cfg(test)]
mod tests;

/// One task as observed.
#[derive(Debug, Clone)]
pub(crate) struct ObservedTask {
    pub(crate) task: Task,
    /// Its current attempt (the record's; none yet: nothing of it known) as every kind's is
    /// observed, with what a shim holds in its runtime dir.
    pub(crate) attempt: PlanAttempt,
    /// What its current attempt used, once it ended (read until its `usage` event is logged).
    pub(crate) usage: Option<crate::worker::usage::Attempt>,
    /// The rate or usage limit that ended its current attempt, and how many in a row did.
    pub(crate) limited: Option<(crate::worker::limits::Limited, u32)>,
    /// Its current attempt, over, passed its package's budget: its shim stopped it.
    pub(crate) overspent: Option<crate::activity::budget::Overspent>,
    /// What its current attempt's workspace setup made that git does not ignore (read until
    /// its `setup` event is logged).
    pub(crate) setup_made: Option<String>,
    /// What is new in its current attempt's mailbox (its task updates), and what it folds to.
    pub(crate) mail: TaskMail,
    /// Why its worker cannot run here (unknown package, ...), if so.
    pub(crate) worker_problem: Option<String>,
    /// Something is at its worktree's path (what removing it would remove).
    pub(crate) worktree_exists: bool,
    /// Its recorded worktree is gone (Kiln's `orphaned`): not at the path made for the task,
    /// not a worktree `git worktree list` knows, or its `.git` gone; says which, with the path.
    pub(crate) worktree_gone: Option<String>,
    /// Its commit is on the integration branch (its trailer since the wave's base); only
    /// looked for when its worktree is gone.
    pub(crate) landed: bool,
    /// Its worker package's `timeout:`.
    pub(crate) package_timeout: Option<std::time::Duration>,
    /// Its worker package's name and `max_concurrent:`, if it has one.
    pub(crate) package_cap: Option<(String, usize)>,
}

/// A task's current attempt, or a plan's latest verify run, as observed: the attempt as every
/// kind's is ([`ObservedAttempt`]: located by its runner, its signs of life while it works),
/// and what a shim holds in its runtime dir whatever the attempt. The attempt machine is fed
/// from it ([`PlanAttempt::process`]) as it is from a commission's.
#[derive(Debug, Clone)]
pub(crate) struct PlanAttempt {
    pub(crate) observed: ObservedAttempt,
    /// What a shim has taken in its runtime dir: the attempt its `run.json` or `exit.json` (or
    /// a runner's handle) records, or [`Taken::Locked`] while it holds the lock.
    pub(crate) taken: Option<Taken>,
    /// A shim is at work in its runtime dir (its lock held, its run alive, or a runner's slot
    /// held), whatever the attempt.
    pub(crate) busy: bool,
}

impl PlanAttempt {
    /// Attempt `attempt` (a task's as its record has it, a verify run's number) as the attempt
    /// machine sees it.
    pub(crate) fn process(&self, attempt: u32) -> Process {
        self.observed.process(attempt, self.taken)
    }

    /// How the observed attempt's worker ended, once its shim (or runner) recorded it.
    pub(crate) fn exit(&self) -> Option<&ExitInfo> {
        self.observed.exit()
    }

    /// Its shim is gone without recording an exit (killed, a reboot), and nothing of the
    /// attempt runs any more.
    pub(crate) fn died(&self) -> bool {
        self.observed.died(self.taken == Some(Taken::Locked))
    }

    /// Its worker at work, with its signs of life.
    pub(crate) fn live(&self) -> Option<Live> {
        self.observed.live()
    }

    /// Its shim is gone without recording an exit, and processes of the attempt still run:
    /// they are killed before the attempt is judged or run again.
    pub(crate) fn lingering(&self) -> Option<Lingering> {
        let (run, pids) = self.observed.lingering()?;
        Some(Lingering { attempt: run.attempt, run: run.clone(), pids: pids.to_vec() })
    }

    /// Its runner must be asked where it stands (a job elsewhere): looked at again on a timer.
    pub(crate) fn polled(&self) -> bool {
        self.observed.polled()
    }
}

/// Processes of an attempt whose shim was killed before it could reap them, found by the
/// attempt's run-id mark ([`crate::worker::shim::leftovers`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Lingering {
    pub(crate) attempt: u32,
    pub(crate) run: RunInfo,
    pub(crate) pids: Vec<i32>,
}

/// A worker (a task's or a verify's) at work: when it started and its signs of life, as every
/// kind's attempt is observed.
pub(crate) use crate::worker::observed_attempt::Live;

/// One plan as observed.
#[derive(Debug, Clone)]
pub struct Observed {
    pub(crate) plan: Plan,
    /// The record this home works from: its own, or the one it takes ([`Observed::taken`]).
    pub(crate) record: Option<PlanRecord>,
    /// `record` is not this home's file but what it takes from the artifact
    /// ([`super::observe::known`]): written by the first pass.
    pub(crate) taken: bool,
    /// The checkout's file says the plan is to run, this home holds no record of it, and the
    /// integration branch's copy says it ended there ([`super::observe::integrated`]): nothing
    /// is started and the checkout's file is left as it is.
    pub(crate) integrated: Option<crate::activity::integrated::Integrated>,
    pub(crate) tasks: Vec<ObservedTask>,
    /// The latest verify run (the record's `verify_runs`; none yet: nothing of it known).
    pub(crate) verify: PlanAttempt,
    /// The status of the latest fix-forward commission.
    pub(crate) fix_status: Option<Status>,
    pub(crate) timeline_keys: std::collections::BTreeSet<String>,
    /// The sum of the `usage` events in its timeline: what its tasks' ended attempts used.
    pub(crate) usage_recorded: Option<crate::worker::usage::Usage>,
    /// Its REVIEW stage: the reviewer runs of the latest verify run's round started so far.
    pub(crate) reviews: Vec<crate::worker::reviewer::ReviewerRun>,
    /// Each reviewer's package `timeout:`, by its place in the plan's (or project's) list.
    pub(crate) reviewer_timeouts: Vec<Option<std::time::Duration>>,
    /// Each reviewer's package `max_concurrent:`, likewise.
    pub(crate) reviewer_caps: Vec<Option<usize>>,
}

#[derive(Debug, Clone)]
pub(crate) struct Snapshot {
    pub(crate) plans: Vec<Observed>,
    pub(crate) now: String,
    /// `now` as a time.
    pub(crate) at: DateTime<Utc>,
    /// The project's `stale_after` and `timeout` (commissions', tasks' and verify's).
    pub(crate) stale_after: std::time::Duration,
    pub(crate) timeout: std::time::Duration,
    /// Worker processes the project's cap (`commission_cap`) still allows: wave tasks count
    /// against it like commissions.
    pub(crate) slots: usize,
    /// Live attempts by worker package in this home (commissions and wave tasks of every
    /// project): what a task's package's `max_concurrent:` counts.
    pub(crate) running_by_package: std::collections::BTreeMap<String, usize>,
    /// The project's `reviewers:` (a plan's own are over them).
    pub(crate) reviewers: Option<Vec<String>>,
}

/// A change to one plan ([`crate::activity::apply::Update`]): its record, and how far its
/// tasks' mailboxes were read.
pub(crate) type Update = crate::activity::apply::Update<PlanRecord, Vec<TaskFold>>;

/// What a task's mailbox folded to, to keep (`events-<n>.folded.json` in its runtime dir).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct TaskFold {
    /// The task's slug: its runtime dir's name.
    pub(crate) slug: String,
    pub(crate) folded: TaskFolded,
}

/// The key of a task attempt's `usage` event in its plan's timeline.
pub(crate) fn task_usage_key(canonical: &str, attempt: u32) -> String {
    format!("usage:{canonical}:{attempt}")
}

/// What to do; every action carries the update to apply once its effect is done.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub(crate) enum Action {
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
    /// The REVIEW stage: `update`, then reviewer `index` (`reviewer`) started over the plan's
    /// integrated result (round: the verify run it follows), once.
    StartReviewer {
        update: Update,
        round: u32,
        index: usize,
        reviewer: String,
        /// Where its first wave began: the change reviewed is from there to the tip.
        base: String,
    },
    /// A reviewer's run over the plan is over: its checkout removed, then `update`.
    ReviewerCleanup {
        update: Update,
        round: u32,
        index: usize,
    },
    /// Reviewers no longer waited for (the plan cancelled, or one past its time limit): each
    /// one's run stopped (while alive) and what its lost shim left killed, its checkout
    /// removed; then `update`.
    DropReviewers {
        update: Update,
        round: u32,
        runs: Vec<ReviewerDrop>,
    },
    /// The reviewers asked for changes: a fix-forward commission for the fixer carrying their
    /// comments (`text`), then `update` (halted).
    ReviewFix {
        update: Update,
        wave: usize,
        round: u32,
        fixer: String,
        text: String,
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

/// One reviewer of an [`Action::DropReviewers`]: its index, its run while alive, what its lost
/// shim left running.
pub(crate) type ReviewerDrop = (usize, Option<RunInfo>, Vec<i32>);

/// One task of a [`Action::StartTask`]: its canonical id and the attempt to start.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub(crate) struct TaskStart {
    pub(crate) task: String,
    pub(crate) attempt: u32,
}

impl Action {
    pub(crate) fn update(&self) -> &Update {
        match self {
            Action::Update { update }
            | Action::StartWave { update, .. }
            | Action::StartTask { update, .. }
            | Action::StopTask { update, .. }
            | Action::Integrate { update, .. }
            | Action::StartVerify { update, .. }
            | Action::FixForward { update, .. }
            | Action::StartReviewer { update, .. }
            | Action::ReviewerCleanup { update, .. }
            | Action::DropReviewers { update, .. }
            | Action::ReviewFix { update, .. }
            | Action::CleanupTask { update, .. }
            | Action::StopVerify { update, .. }
            | Action::Beat { update, .. }
            | Action::KillLeftovers { update, .. } => update,
        }
    }
}

impl crate::activity::kind::Action for Action {
    fn id(&self) -> &str {
        &self.update().id
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
            Action::StartReviewer { .. } => "review",
            Action::ReviewerCleanup { .. } => "review-cleanup",
            Action::DropReviewers { .. } => "review-stop",
            Action::ReviewFix { .. } => "review-fix",
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
            Action::StartReviewer { reviewer, round, .. } => {
                format!("review: reviewer {reviewer} reads the integrated result (round {round})")
            }
            Action::ReviewerCleanup { index, .. } => format!("review: remove reviewer {}'s worktree", index + 1),
            Action::DropReviewers { runs, .. } => {
                let each: Vec<String> = runs.iter().map(|(i, _, _)| (i + 1).to_string()).collect();
                format!("review: stop reviewer {} and remove its worktree", each.join(", "))
            }
            Action::ReviewFix { wave, round, fixer, .. } => format!("fix-forward {round} for the reviewers after wave {wave} by {fixer}"),
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
        matches!(self, Action::StopTask { .. } | Action::StopVerify { .. } | Action::KillLeftovers { .. } | Action::DropReviewers { .. })
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
pub(crate) fn fix_id(plan: &str, wave: usize, round: u32) -> String {
    crate::artifact::ids::derived(plan, &format!("fix-wave-{wave}-{round}"))
}

/// What a person may ask of a plan by editing `status:` (or `desired:`).
pub(crate) fn person_may_request(from: PlanStatus, to: PlanStatus) -> bool {
    use PlanStatus::*;
    matches!((from, to), (Draft, Pending) | (Halted | Failed | Cancelled, Pending) | (Pending | Running | Verifying | Halted, Cancelled))
}

/// Why the reconciler refuses a person's `status: <to>` on a plan that is `from` — the words
/// its refusal writes into `reason:` — or `None` where it carries it out. The faces ask it up
/// front, so they refuse with the same words.
pub(crate) fn request_refusal(from: PlanStatus, to: PlanStatus) -> Option<String> {
    (!person_may_request(from, to)).then(|| {
        format!("a plan that is {from} cannot be set to {to} by hand (allowed: draft → pending, halted|failed|cancelled → pending to retry, pending|running|verifying|halted → cancelled)")
    })
}

pub(crate) fn decide(s: &Snapshot) -> Vec<Action> {
    let running: usize = s
        .plans
        .iter()
        .map(|o| o.record.as_ref().map(|r| r.tasks.values().filter(|t| t.state == TaskState::Running).count()).unwrap_or(0))
        .sum();
    let mut slots = s.slots.saturating_sub(running);
    // Attempts each package starts this round, against its `max_concurrent:`.
    let mut started = std::collections::BTreeMap::new();
    let mut out = Vec::new();
    for o in &s.plans {
        // The kills first: whatever the plan's state, nothing of a killed attempt runs on.
        out.extend(liveness::kill_leftovers(o, &s.now));
        if let Some(a) = machine::step(o, s, slots, &started) {
            if let Action::StartTask { starts, .. } = &a {
                slots = slots.saturating_sub(starts.len());
                for t in starts {
                    if let Some((name, _)) = o.tasks.iter().find(|x| x.task.canonical == t.task).and_then(|x| x.package_cap.as_ref()) {
                        *started.entry(name.clone()).or_insert(0) += 1;
                    }
                }
            }
            if let Action::StartReviewer { reviewer, .. } = &a {
                *started.entry(reviewer.clone()).or_insert(0) += 1;
            }
            out.push(a);
        }
        out.extend(liveness::beats(o, s));
    }
    out
}
