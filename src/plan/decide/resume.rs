//! Where a task stands when a pass looks (Kiln's resume classes), and how an attempt that
//! ended or lost its worktree moves its task: succeeded, failed, orphaned, or run again within
//! [`MAX_RERUNS`].

use serde::Serialize;
use serde_json::json;

use super::liveness::{look, task_limit};
use super::step::Step;
use super::{ObservedTask, TaskRecord, TaskState, MAX_RERUNS};
use crate::activity::reason::Reason;
use crate::worker::attempt::{Ended, Look};

/// Kiln's resume classes: where a task stands, from its record, its worktree (as `git
/// worktree list` and the worktrees dir have it), its runtime state and task updates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ResumeClass {
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
    pub(crate) fn as_str(self) -> &'static str {
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
pub(crate) fn resume_class(ot: &ObservedTask, rec: Option<&TaskRecord>) -> ResumeClass {
    let Some(r) = rec else { return ResumeClass::Queued };
    match r.state {
        TaskState::Integrated => ResumeClass::Done,
        TaskState::Queued => ResumeClass::Queued,
        TaskState::Succeeded if ot.landed => ResumeClass::Done,
        _ if ot.worktree_gone.is_some() => ResumeClass::Orphaned,
        TaskState::Succeeded => ResumeClass::ReadyForIntegration,
        // Its supervisor died: it runs again (once what it left running is killed).
        TaskState::Running if ot.attempt.died() || ot.attempt.lingering().is_some() => ResumeClass::RerunRequired,
        TaskState::Running => ResumeClass::InProgress,
        TaskState::Failed | TaskState::Stopped => ResumeClass::RerunRequired,
    }
}

/// A task's attempt ended: how.
pub(super) fn classify(o: &ObservedTask, rec: &TaskRecord) -> Option<Result<(), Reason>> {
    let process = o.attempt.process(rec.attempt);
    let exit = match process.ended()? {
        Ended::Died => return Some(Err(Reason::SupervisorDied)),
        Ended::Exited(exit) => exit,
    };
    if let Some(why) = &o.mail.error {
        // Whether it reported failure cannot be known: never taken for a success.
        return Some(Err(Reason::FailureUnknown(why.clone())));
    }
    let failed_update = o.mail.folded.as_ref().filter(|f| f.attempt == rec.attempt).and_then(|f| f.failed.clone());
    Some(match (exit.clean(), failed_update) {
        (_, Some(why)) => Err(Reason::ReportedFailure(why)),
        (true, None) => Ok(()),
        (false, None) => Err(Reason::Exited(exit.clone())),
    })
}

/// A running task: how its attempt ended, or, while it works, whether it is still alive.
pub(super) fn running_task(st: &mut Step<'_>, ot: &ObservedTask, rec: &TaskRecord) {
    let t = &ot.task;
    let ended = classify(ot, rec);
    if let (Some(_), Some(gone)) = (&ended, &ot.worktree_gone) {
        // Over, and its worktree is gone: whatever it did is lost; it runs again.
        orphaned(st, ot, rec, gone);
        return rerun(st, ot, rec, Reason::WorktreeGone { gone: gone.clone(), died: ot.attempt.died() });
    }
    match ended {
        Some(_) if rec.stop_sent => st.task_state(t, TaskState::Stopped, Some(Reason::ShutDownForFailure)),
        // Its supervisor died (killed, a reboot): nothing says how it ended; it runs again.
        Some(_) if ot.attempt.died() => rerun(st, ot, rec, Reason::SupervisorDied),
        Some(Ok(())) => st.task_state(t, TaskState::Succeeded, None),
        // Stopped by its shim past its package's budget: failed, saying by how much (a rerun
        // would spend as much again).
        Some(Err(_)) if ot.overspent.is_some() => {
            let Some(over) = ot.overspent else { return };
            let key = format!("budget:{}:{}", t.canonical, rec.attempt);
            st.event("budget", key, json!({"task": t.canonical, "text": format!("{}: {over}", t.canonical), "attempt": rec.attempt}));
            st.task_state(t, TaskState::Failed, Some(Reason::BudgetExceeded(over)));
        }
        // Its agent's rate or usage limit ended it: no failure, and no rerun spent.
        Some(Err(_)) if ot.limited.is_some() => limited(st, ot, rec),
        Some(Err(why)) => st.task_state(t, TaskState::Failed, Some(why)),
        None => {
            if let Some(gone) = &ot.worktree_gone {
                return orphaned(st, ot, rec, gone);
            }
            let Some(live) = ot.attempt.live().filter(|_| !rec.stop_sent) else { return };
            if let Look::Stop(stop) = look(st.s, &live, task_limit(st.s, st.o, ot)) {
                let kind = stop.event_kind();
                let state = stop.is_stale().then_some("stale");
                let key = format!("{kind}:{}:{}", t.canonical, rec.attempt);
                st.event(kind, key, json!({"task": t.canonical, "state": state, "text": format!("{}: {}", t.canonical, stop.text())}));
                if stop.is_stale() {
                    // Live but silent (Kiln: in_progress with no heartbeat beyond the timeout):
                    // rerun_required within the budget, failed past it; either way the stop
                    // that follows kills every process of the attempt first.
                    return rerun(st, ot, rec, stop.reason());
                }
                // Past its wall-clock limit: failed now; the stop that follows kills it.
                st.task_state(t, TaskState::Failed, Some(stop.reason()));
            }
        }
    }
}

/// Report once that a task's worktree is gone.
pub(super) fn orphaned(st: &mut Step<'_>, ot: &ObservedTask, rec: &TaskRecord, gone: &str) {
    let key = format!("orphaned:{}:{}:gone", ot.task.canonical, rec.attempt);
    st.event("orphaned", key, json!({"task": ot.task.canonical, "text": gone}));
}

/// Kiln's `rerun_required`: queued again (the same id, its next attempt), up to
/// [`MAX_RERUNS`] times; then failed.
pub(super) fn rerun(st: &mut Step<'_>, ot: &ObservedTask, rec: &TaskRecord, why: Reason) {
    let t = &ot.task;
    if rec.reruns >= MAX_RERUNS {
        return st.task_state(t, TaskState::Failed, Some(Reason::NoMoreReruns { why: Box::new(why), reruns: MAX_RERUNS }));
    }
    let key = format!("rerun:{}:{}", t.canonical, rec.attempt);
    st.event("rerun_required", key, json!({"task": t.canonical, "text": format!("{why}: it runs again")}));
    st.task_state(t, TaskState::Queued, Some(why));
    if let Some(r) = st.record.tasks.get_mut(&t.canonical) {
        r.reruns += 1;
        r.stop_sent = false;
    }
}

/// A task's attempt its agent's rate or usage limit ended: queued again, to start once its
/// `not_before` has passed (the reset time the agent said, else a backoff by how many of its
/// attempts in a row ended so); the plan waits meanwhile, it does not halt.
fn limited(st: &mut Step<'_>, ot: &ObservedTask, rec: &TaskRecord) {
    let Some((limited, streak)) = ot.limited.as_ref() else { return };
    let t = &ot.task;
    let ended = ot.attempt.exit().map_or(st.s.at, |x| x.finished_at);
    let not_before = crate::worker::limits::not_before(limited, ended, *streak);
    let at = crate::activity::timeline::timestamp(not_before);
    let mut fields = json!({"task": t.canonical, "text": format!("{}: {}", t.canonical, limited.said), "attempt": rec.attempt, "not_before": at, "in_a_row": streak});
    if let Some(r) = limited.resets_at {
        fields["resets_at"] = crate::activity::timeline::timestamp(r).into();
    }
    st.event("limited", format!("limited:{}:{}", t.canonical, rec.attempt), fields);
    let why = Reason::UsageLimited { agent: t.worker.clone(), said: limited.said.clone(), resets_at: limited.resets_at, not_before };
    st.task_state(t, TaskState::Queued, Some(why));
    if let Some(r) = st.record.tasks.get_mut(&t.canonical) {
        r.not_before = Some(not_before);
        r.stop_sent = false;
    }
}
