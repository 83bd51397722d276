//! The decider: a pure function from a [`Snapshot`] to the [`Action`]s that move the world
//! toward what the artifacts ask for. No I/O, deterministic order. It owns the state machine
//! (REQ-COM-5/6 plus `draft`), intent handling (`desired:`, direct `status:` edits), what it
//! waits for (dependencies, its worker's package), limits and FIFO, exit classification and
//! heartbeat judgement.

use serde_json::json;
use serde_yaml_ng::Value;

use crate::activity::names;
use crate::activity::reason::Reason;
use crate::activity::state::{Given, Heartbeat, RunInfo};
use crate::artifact::commission::Revision;
use crate::artifact::write::Edit;
use crate::artifact::Status;
use crate::commission::observe::{Observed, Snapshot};
use crate::config::DispatchMode;

/// One effect. Each is idempotent: carrying it out twice, or half and then again, converges.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum Action {
    /// Rewrite owned keys / record / timeline.
    Update(Update),
    /// Mark dispatched (unless resuming), then branch, worktree and the worker under the shim.
    Dispatch { update: Update, attempt: u32, branch: String, worker: String, resume: bool },
    /// Ask the current attempt's shim to stop every process of the attempt.
    Signal { id: String, run: RunInfo, signal: Sig, update: Update },
    /// Take the attempt's job out of a cluster's queue (nothing of it runs yet), then `update`.
    Dequeue { id: String, attempt: u32, update: Update },
    /// The shim is gone but processes of its attempt are not: kill them (nothing else).
    KillLeftovers { id: String, run: RunInfo, pids: Vec<i32> },
    /// Completion: commit leftovers, squash-merge, remove the worktree, then `update`; when
    /// nothing can be merged, `conflict` (a failure) instead, its reason the landing's words —
    /// but a conflict outside `.lore/` with send-backs left is `send_back` (held in review, the
    /// paths put in its record and reason, to be sent back to its worker the next pass).
    Finish { update: Update, conflict: Box<Update>, send_back: Option<Box<Update>>, attempt: u32, branch: String, summary: String },
    /// Submitted, held for review: commit what is left in the worktree onto the branch, then
    /// `update` (status `review`), then remove the worktree.
    Hold { update: Update, attempt: u32, branch: String },
    /// In review: `update` (the reviewer's start in the timeline), then reviewer `index`'s
    /// run over `attempt`'s work on `branch`: its worktree, its prompt with the diff, its
    /// process, read-only (once: a run already recorded is not started again).
    StartReviewer { update: Update, attempt: u32, index: usize, reviewer: String, branch: String },
    /// A reviewer's run is over: its worktree removed (it could write nothing there).
    ReviewerCleanup { id: String, attempt: u32, index: usize, branch: String },
    /// Reviewers no longer waited for (a person decided, or the commission ended): `update`,
    /// then each one's processes killed (its run while alive, its leftovers) and its worktree
    /// removed.
    DropReviewers { update: Update, attempt: u32, branch: String, runs: Vec<(usize, Option<RunInfo>, Vec<i32>)> },
    /// Failure/cancellation aftermath: commit partial results, remove the worktree.
    Cleanup { id: String, attempt: u32, branch: String, why: String },
    /// Remember the latest signs of life.
    Heartbeat { id: String, beat: Heartbeat },
    /// A scheduled commission's step: its run written (never over one), then the template
    /// counted (only if unchanged since read).
    Schedule(schedule::ScheduleStep),
}

impl crate::activity::kind::Action for Action {
    fn id(&self) -> &str {
        match self {
            Action::Update(u)
            | Action::Dispatch { update: u, .. }
            | Action::Finish { update: u, .. }
            | Action::Hold { update: u, .. }
            | Action::StartReviewer { update: u, .. }
            | Action::DropReviewers { update: u, .. }
            | Action::Dequeue { update: u, .. } => &u.id,
            Action::Signal { id, .. }
            | Action::KillLeftovers { id, .. }
            | Action::Cleanup { id, .. }
            | Action::ReviewerCleanup { id, .. }
            | Action::Heartbeat { id, .. } => id,
            Action::Schedule(step) => &step.id,
        }
    }

    fn describe(&self) -> String {
        let status = |u: &Update| {
            u.edits.iter().find_map(|e| match e {
                Edit::Set(k, v) if k == "status" => v.as_str().map(str::to_string),
                _ => None,
            })
        };
        match self {
            Action::Update(u) => {
                let mut parts: Vec<String> = status(u).map(|s| format!("status -> {s}")).into_iter().collect();
                for e in &u.edits {
                    let text = |v: &Value| v.as_str().unwrap_or("").lines().next().unwrap_or("").to_string();
                    match e {
                        Edit::Set(k, v) if k == "progress" => parts.push(format!("progress: {}", text(v))),
                        Edit::Set(k, _) if k == "result" => parts.push("result submitted".into()),
                        Edit::Set(k, _) if k == "questions" => parts.push("question logged".into()),
                        // Why it waits, right after the move to `blocked`; else the reason alone.
                        Edit::Set(k, v) if k == "reason" && matches!(status(u).as_deref(), None | Some("blocked")) => {
                            parts.insert(usize::from(status(u).is_some()), text(v))
                        }
                        Edit::Remove(k) if k == "desired" => parts.push("request consumed".into()),
                        // Said by the status itself (`completed` is when it ended).
                        Edit::Set(k, _) if k == "status" || k == "completed" => {}
                        Edit::Set(k, _) if k == "created" => parts.push("created stamped".into()),
                        Edit::Set(k, v) if k == "reason" => parts.push(format!("reason: {}", text(v))),
                        Edit::Set(k, _) => parts.push(format!("{k} written")),
                        Edit::Remove(k) => parts.push(format!("{k} removed")),
                    }
                }
                if parts.is_empty() && !only_created(u) {
                    parts.push(crate::activity::timeline::recorded(&u.events));
                }
                if parts.is_empty() {
                    // Only guild-hall's own bookkeeping (its runtime record): said only if it failed.
                    parts.push("runtime record updated".into());
                }
                parts.join("; ")
            }
            Action::Dispatch { attempt, branch, worker, resume, .. } => {
                format!("{} attempt {attempt} on {branch} (worker {worker})", if *resume { "resume dispatch" } else { "dispatch" })
            }
            Action::Signal { signal: Sig::Term, run, .. } => format!("stop the attempt: SIGTERM to its processes (shim pid {})", run.pid),
            Action::Signal { signal: Sig::Kill, run, .. } => format!("stop the attempt: SIGKILL to its processes (shim pid {})", run.pid),
            Action::Dequeue { .. } => "take the attempt's job out of its runner's queue".into(),
            Action::KillLeftovers { pids, .. } => {
                format!("kill {} the lost shim left behind", crate::activity::timeline::counted(pids.len(), "process"))
            }
            Action::Finish { branch, .. } => format!("complete: squash-merge {branch}"),
            Action::Hold { branch, .. } => format!("review: its work committed on {branch}, nothing merged; it waits for a person"),
            Action::Cleanup { branch, why, .. } => format!("clean up ({why}): keep {branch}, remove worktree"),
            Action::StartReviewer { reviewer, attempt, branch, .. } => {
                format!("review: reviewer {reviewer} reads attempt {attempt}'s work on {branch}, read-only")
            }
            Action::ReviewerCleanup { index, .. } => format!("review: remove reviewer {}'s worktree", index + 1),
            Action::DropReviewers { runs, .. } => {
                format!(
                    "review: stop {} no longer waited for, remove their worktrees",
                    crate::activity::timeline::counted(runs.len(), "reviewer")
                )
            }
            Action::Heartbeat { .. } => "heartbeat".into(),
            Action::Schedule(step) => step.what.clone(),
        }
    }

    fn starts_work(&self) -> bool {
        matches!(self, Action::Dispatch { resume: false, .. })
    }

    /// A dispatch, a finish and an update act on their own commission alone (its artifact,
    /// state, branch and worktree; a finish's move of the integration branch is one at a time,
    /// [`crate::activity::merge::land`]). A stop, a heartbeat and a cleanup follow their
    /// commission's update in the order decided, so they are not.
    fn concurrent(&self) -> bool {
        matches!(
            self,
            Action::Dispatch { .. } | Action::Finish { .. } | Action::Hold { .. } | Action::StartReviewer { .. } | Action::Update(_)
        )
    }

    fn verb(&self) -> &'static str {
        match self {
            Action::Update(_) => "update",
            Action::Dispatch { .. } => "dispatch",
            Action::Signal { .. } => "signal",
            Action::Dequeue { .. } => "dequeue",
            Action::KillLeftovers { .. } => "kill_leftovers",
            Action::Finish { .. } => "finish",
            Action::Hold { .. } => "hold",
            Action::Cleanup { .. } => "cleanup",
            Action::StartReviewer { .. } => "review",
            Action::ReviewerCleanup { .. } => "review_cleanup",
            Action::DropReviewers { .. } => "review_drop",
            Action::Heartbeat { .. } => "heartbeat",
            Action::Schedule(_) => "schedule",
        }
    }

    fn is_stop(&self) -> bool {
        matches!(self, Action::Signal { .. } | Action::Dequeue { .. } | Action::KillLeftovers { .. } | Action::DropReviewers { .. })
    }

    fn is_heartbeat(&self) -> bool {
        matches!(self, Action::Heartbeat { .. })
    }

    /// A heartbeat is never said, even failed: the liveness it feeds is decided next round.
    fn reported(&self, ok: bool) -> bool {
        // Bookkeeping a person has nothing to read in (the runtime record alone, a `created`
        // event) is said only when it failed, as a heartbeat is never said.
        let bookkeeping = matches!(self, Action::Update(u) if u.edits.is_empty() && only_created(u));
        !(self.is_heartbeat() || bookkeeping && ok)
    }
}

/// No event but the `created` one (or none): a commission first met (a draft, say) is no
/// news; its timeline opens with that event.
fn only_created(u: &Update) -> bool {
    u.events.iter().all(|e| e["kind"] == "created")
}

/// The decider's answer.
#[derive(Debug, Clone, Default)]
pub struct Decisions {
    pub actions: Vec<Action>,
    /// Nothing is running or can start without outside help: `--wait` may stop.
    pub(crate) settled: bool,
    /// Commissions that keep it from being settled (running, starting, or queued to run).
    pub(crate) busy: Vec<String>,
    /// Dependency cycles among waiting commissions (see [`dependency_cycles`]).
    pub(crate) cycles: Cycles,
}

/// Timestamps as written everywhere: shared with every kind of activity, so it lives there.
pub use crate::activity::timeline::timestamp;

/// Decide one pass.
pub fn decide(s: &Snapshot) -> Decisions {
    let now = timestamp(s.now);
    let mut round = Round::default();
    let mut running = s.running_orphans + s.tasks_running;

    let cycles = dependency_cycles(s);
    for o in &s.commissions {
        if o.corrupt.is_some() {
            // Its worker may be alive for all we know: it keeps its slot, and nothing is done.
            running += 1;
            continue;
        }
        let (mut step, effect) = plan_one(s, o, &now, &cycles);
        // A resumed attempt starts from the prompt as it is now (below): no edit to note.
        if !matches!(effect, Effect::Resume) {
            note_edit_while_running(&mut step);
        }
        let at_work = o.attempt.at_work() || o.reviews.iter().any(|r| r.proc.at_work());
        if step.status.is_active() || at_work {
            // A commission finished this round no longer holds its slot: its worker is gone,
            // and the pass starts new work only after the round's finishes are done. One whose
            // merge waits on a person's checkout keeps it: work does not pile up behind it.
            let merge_waits = o.artifact.owned.reason.as_deref().is_some_and(|r| Reason::parse(r).merge_waits());
            if at_work || !matches!(effect, Effect::Finish) || merge_waits {
                running += 1;
            }
            round.busy.push(o.artifact.id.clone());
        }
        carry(s, o, step, effect, &now, &mut round);
    }

    let Round { mut actions, candidates, busy, started } = round;
    dispatch(s, candidates, running, started, &mut actions);
    // The scheduled commissions' runs: written now, dispatched by the next round like any.
    actions.extend(schedule::steps(s).into_iter().map(Action::Schedule));

    let settled = actions.is_empty() && busy.is_empty();
    Decisions { actions, settled, busy, cycles }
}

/// What a round gathers while it decides each commission: the actions, the candidates for a
/// dispatch, the commissions at work, and the attempts each package starts this round
/// (reviewers' runs, then dispatches) against its `max_concurrent:`.
#[derive(Default)]
struct Round<'s> {
    actions: Vec<Action>,
    candidates: Vec<(Step<'s>, Option<Revision>)>,
    busy: Vec<String>,
    started: std::collections::BTreeMap<String, usize>,
}

/// One commission's `effect`, decided with its `step`, as the round's actions (or a candidate
/// for a dispatch, which waits for the round's capacity).
fn carry<'s>(s: &'s Snapshot, o: &'s Observed, mut step: Step<'s>, effect: Effect, now: &str, round: &mut Round<'s>) {
    match effect {
        Effect::Candidate { wants } => {
            if s.project.config.dispatch == DispatchMode::Auto || wants {
                round.busy.push(o.artifact.id.clone());
                round.candidates.push((step, None));
            } else {
                push_update(&mut round.actions, step.finish());
            }
        }
        Effect::None => push_update(&mut round.actions, step.finish()),
        Effect::Resume => {
            let attempt = step.record.attempt;
            // Its worker is started now, from the prompt as it is now.
            step.record.given = Some(Given::new(attempt, o.artifact.title.as_deref(), &o.artifact.body));
            round.actions.push(Action::Dispatch {
                branch: attempt_branch(o, attempt),
                worker: o.artifact.worker.clone(),
                attempt,
                resume: true,
                update: step.finish(),
            });
        }
        Effect::Finish => round.actions.push(finish(s, o, step, now, Reason::ResultSubmitted)),
        Effect::Approve => round.actions.push(finish(s, o, step, now, Reason::Approved)),
        Effect::ReviewersApproved { count } => round.actions.push(finish(s, o, step, now, Reason::ReviewersApproved { count })),
        Effect::StartReviewer { index, reviewer, of } => {
            let attempt = step.record.attempt;
            round.busy.push(o.artifact.id.clone());
            // A reviewer's run is an attempt of its package: it waits while `max_concurrent:`
            // is reached, counting what this round started already.
            let started_now = round.started.get(&reviewer).copied().unwrap_or(0);
            if let Some(max) = waiting::package_cap(s, &reviewer).filter(|&max| waiting::live_of(s, &reviewer) + started_now >= max) {
                reviewers::waiting_for_package(o, &mut step, index, &reviewer, of, max);
                push_update(&mut round.actions, step.finish());
                return;
            }
            reviewers::starting(&mut step, index, &reviewer, of);
            *round.started.entry(reviewer.clone()).or_insert(0) += 1;
            round.actions.push(Action::StartReviewer {
                branch: attempt_branch(o, attempt),
                attempt,
                index,
                reviewer,
                update: step.finish(),
            });
        }
        Effect::ReviewerCleanup { index } => {
            let attempt = step.record.attempt;
            push_update(&mut round.actions, step.finish());
            round.actions.push(Action::ReviewerCleanup { id: o.artifact.id.clone(), attempt, index, branch: attempt_branch(o, attempt) });
        }
        Effect::DropReviewers(runs) => {
            let attempt = step.record.attempt;
            round.actions.push(Action::DropReviewers { branch: attempt_branch(o, attempt), attempt, runs, update: step.finish() });
        }
        Effect::ReviewerLeftovers { run, pids } => {
            if let Some(run) = run {
                round.actions.push(Action::KillLeftovers { id: o.artifact.id.clone(), run, pids });
            }
            push_update(&mut round.actions, step.finish());
        }
        Effect::Revise(revision) => {
            // Started as capacity allows, like any dispatch (asked for: `dispatch: manual`
            // does not hold it back).
            round.busy.push(o.artifact.id.clone());
            round.candidates.push((step, Some(*revision)));
        }
        Effect::Hold => {
            let attempt = step.record.attempt;
            round.actions.push(Action::Hold { branch: attempt_branch(o, attempt), attempt, update: step.finish() });
        }
        Effect::Cleanup(why) => {
            let attempt = step.record.attempt;
            push_update(&mut round.actions, step.finish());
            round.actions.push(Action::Cleanup { id: o.artifact.id.clone(), attempt, branch: attempt_branch(o, attempt), why: why.into() });
        }
        Effect::Signal(sig) => match o.attempt.run() {
            Some(run) => {
                round.actions.push(Action::Signal { id: o.artifact.id.clone(), run: run.clone(), signal: sig, update: step.finish() })
            }
            None if o.attempt.queued().is_some() => {
                round.actions.push(Action::Dequeue { id: o.artifact.id.clone(), attempt: step.record.attempt, update: step.finish() })
            }
            None => push_update(&mut round.actions, step.finish()),
        },
        Effect::KillLeftovers => {
            // The kill before the update: it never waits on the artifact being written.
            if let Some((run, pids)) = o.attempt.lingering() {
                round.actions.push(Action::KillLeftovers { id: o.artifact.id.clone(), run: run.clone(), pids: pids.to_vec() });
            }
            push_update(&mut round.actions, step.finish());
        }
        Effect::Beat(beat) => {
            push_update(&mut round.actions, step.finish());
            round.actions.push(Action::Heartbeat { id: o.artifact.id.clone(), beat });
        }
    }
}

/// A result submitted: the update for the merge that completes the commission, the one for a
/// merge refused (a failure), and the one for a conflict sent back, in one action.
fn finish(s: &Snapshot, o: &Observed, step: Step<'_>, now: &str, why: Reason) -> Action {
    let attempt = step.record.attempt;
    let (summary, artifacts) = step.result().unwrap_or(("", &[]));
    let send_back = conflicts::hold(s, o, &step);
    let mut conflict = step.clone();
    conflict.go(Status::Failed, Reason::NotMerged);
    conflict.set("completed", Value::String(now.to_string()));
    let mut done = step;
    done.go(Status::Completed, why);
    let mut linked: Vec<Value> = match o.artifact.field("linked_artifacts") {
        Some(Value::Sequence(v)) => v.clone(),
        _ => Vec::new(),
    };
    for a in artifacts {
        if !linked.iter().any(|l| l.as_str() == Some(a)) {
            linked.push(Value::String(a.clone()));
        }
    }
    if !linked.is_empty() {
        done.set("linked_artifacts", Value::Sequence(linked));
    }
    done.set("completed", Value::String(now.to_string()));
    Action::Finish {
        branch: attempt_branch(o, attempt),
        attempt,
        summary: summary.to_string(),
        update: done.finish(),
        conflict: Box::new(conflict.finish()),
        send_back,
    }
}

/// The candidates dispatched FIFO by `created:` (ties: id), within the project and global caps;
/// the rest keep their update alone.
/// `started`: the attempts each package's reviewers start this round.
fn dispatch(
    s: &Snapshot,
    mut candidates: Vec<(Step<'_>, Option<Revision>)>,
    mut running: usize,
    mut started: std::collections::BTreeMap<String, usize>,
    actions: &mut Vec<Action>,
) {
    let cfg = &s.project.config;
    let created = |s: &Step<'_>| s.o.artifact.created().map(str::to_string).or_else(|| s.record.created.clone());
    candidates.sort_by(|(a, _), (b, _)| (created(a), a.o.id()).cmp(&(created(b), b.o.id())));
    for (mut step, revision) in candidates {
        let has_room = running < cfg.commission_cap && running + s.running_elsewhere < s.max_concurrent;
        let worker = step.o.artifact.worker.clone();
        let package_room = waiting::package_cap(s, &worker)
            .is_none_or(|max| waiting::live_of(s, &worker) + started.get(&worker).copied().unwrap_or(0) < max);
        if !has_room || !package_room || step.o.worktree_exists {
            push_update(actions, step.finish());
            continue;
        }
        running += 1;
        *started.entry(worker).or_insert(0) += 1;
        if let Some(revision) = revision {
            // On the branch of the attempt it revises, given the feedback (in the record the
            // prompt is made from).
            review::start(&mut step, &revision);
            let (attempt, branch) = (revision.attempt, revision.branch.clone());
            step.record.attempt = attempt;
            step.record.term_sent_at = None;
            step.record.stopping = None;
            step.record.given = Some(Given::new(attempt, step.o.artifact.title.as_deref(), &step.o.artifact.body));
            step.record.revision = Some(Box::new(revision));
            step.record.conflict = None;
            step.set("attempt", Value::from(attempt));
            step.set("branch", Value::String(branch.clone()));
            let worker = step.o.artifact.worker.clone();
            actions.push(Action::Dispatch { update: step.finish(), attempt, branch, worker, resume: false });
            continue;
        }
        let next = step.record.attempt.max(step.o.artifact.attempt()) + 1;
        let attempt = next.max(step.o.free_attempt.unwrap_or(0));
        let branch = names::commission_branch(step.o.id(), attempt);
        if attempt > next {
            let text = format!("attempts {next} to {} were made elsewhere (their branches or trailers exist): never reused", attempt - 1);
            step.event("attempt-skipped", format!("attempt-skipped:{attempt}"), json!({"text": text, "attempt": attempt}));
        }
        if attempt > 1 {
            step.event("redispatch", format!("redispatch:{attempt}"), json!({"attempt": attempt}));
        }
        step.go(Status::Dispatched, Reason::DispatchedTo(step.o.artifact.worker.clone()));
        step.record.attempt = attempt;
        step.record.term_sent_at = None;
        step.record.stopping = None;
        step.record.revision = None;
        // What the attempt is given (act writes the prompt from the same snapshot).
        step.record.given = Some(Given::new(attempt, step.o.artifact.title.as_deref(), &step.o.artifact.body));
        step.set("attempt", Value::from(attempt));
        step.set("branch", Value::String(branch.clone()));
        step.remove("desired");
        step.remove(liveness::NOT_BEFORE);
        let worker = step.o.artifact.worker.clone();
        actions.push(Action::Dispatch { update: step.finish(), attempt, branch, worker, resume: false });
    }
}

/// An attempt under way keeps what it was given (its worker read its prompt at the start, and
/// its merge says the title it was given): an edit of the title or prompt meanwhile applies to
/// the next attempt, and the timeline says so, once per edit.
fn note_edit_while_running(step: &mut Step<'_>) {
    let attempt = step.record.attempt;
    let Some(given) = step.record.given.as_ref().filter(|g| g.attempt == attempt && step.status.is_active()) else { return };
    let Some((key, what)) = given.edit(step.o.artifact.title.as_deref(), &step.o.artifact.body) else { return };
    if given.noted.as_deref() == Some(key.as_str()) {
        return;
    }
    let text = format!("{what} edited while attempt {attempt} runs: applies to the next attempt (this one keeps what it was given)");
    step.event("edited", key.clone(), json!({"text": text, "attempt": attempt}));
    if let Some(g) = step.record.given.as_mut() {
        g.noted = Some(key);
    }
}

fn push_update(actions: &mut Vec<Action>, u: Update) {
    if !u.is_empty() {
        actions.push(Action::Update(u));
    }
}

mod asking;
mod checks;
mod conflicts;
mod deps;
mod effect;
mod liveness;
mod machine;
mod review;
mod reviewers;
pub(crate) mod schedule;
mod step;
mod timers;
mod transitions;
mod waiting;

use effect::Effect;
use machine::plan_one;
use step::Step;

pub(crate) use asking::ask_timeout;
pub(crate) use step::{attempt_branch, result_value};

pub(crate) use deps::{cycle_problems, dependency_cycles, Cycles};
pub(crate) use effect::{Sig, Update};
pub(crate) use liveness::not_before;
pub(crate) use timers::next_check;
pub(crate) use transitions::{desired_refusal, person_may_request, refusal};
pub(crate) use waiting::waiting;

#[cfg(test)]
mod tests;
