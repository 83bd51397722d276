//! The current wave at work: its tasks' attempts judged, stops owed, fail-fast, the copy-back
//! in Kiln's resume order, the free slots filled in plan order; and the move to the next wave.

use super::resume::{orphaned, rerun, running_task};
use super::step::{settle, Step};
use super::{Action, TaskStart, TaskState};
use crate::activity::reason::Reason;
use crate::artifact::plan::{PlanStatus, Task};

/// Every task of the wave integrated: verify, or go on.
pub(super) fn after_integration(mut st: Step<'_>, w: usize) -> Option<Action> {
    if st.o.plan.verify.is_some() {
        st.record.new_verify_run();
        let run = st.record.verify_runs;
        st.go(PlanStatus::Verifying, Reason::WaveIntegrated(w));
        return Some(Action::StartVerify { update: st.finish(), wave: w, run });
    }
    next_wave(st, w)
}

pub(super) fn next_wave(mut st: Step<'_>, w: usize) -> Option<Action> {
    if w < st.o.plan.waves.len() {
        st.record.wave = w + 1;
        st.go(PlanStatus::Running, Reason::WaveDone(w));
        st.dirty = true;
        return Some(Action::StartWave { update: st.finish(), wave: w + 1 });
    }
    let reviewers = super::review::of(&st);
    if !reviewers.is_empty() {
        return super::review::stage(st, w, &reviewers);
    }
    st.go(PlanStatus::Completed, Reason::AllVerified);
    settle(st)
}

/// Where shutting the current wave down stands.
pub(super) enum Stopping {
    /// Nothing of the wave runs any more.
    Done,
    /// Asked to stop; waiting for them to be gone.
    Waiting,
    /// This one is to be asked now.
    Stop(String, u32),
}

/// Shut the current wave down: tasks whose attempt ended are marked stopped; the first one not
/// yet asked is to be asked.
pub(super) fn stopping(st: &mut Step<'_>) -> Stopping {
    let w = st.record.wave;
    let plan = &st.o.plan;
    let mut waiting = false;
    for t in plan.waves.get(w.saturating_sub(1)).into_iter().flatten() {
        let Some(r) = st.record.tasks.get(&t.canonical).cloned() else { continue };
        if r.state != TaskState::Running {
            continue;
        }
        let ot = st.o.tasks.iter().find(|x| x.task.canonical == t.canonical);
        let ended = ot.is_some_and(|x| x.attempt.died() || x.attempt.exit().is_some_and(|e| e.attempt == r.attempt));
        if ot.is_some_and(|x| x.attempt.lingering().is_some()) {
            // Its shim is gone, what it left is being killed: nothing to ask, only to wait.
            waiting = true;
        } else if ended {
            let why = if r.stop_sent { Reason::ShutDown } else { Reason::EndedInShutdown };
            st.task_state(t, TaskState::Stopped, Some(why));
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
    let busy = st.o.tasks.iter().any(|x| x.task.wave == w && (x.attempt.busy || x.attempt.lingering().is_some()));
    if waiting || busy {
        Stopping::Waiting
    } else {
        Stopping::Done
    }
}

/// What a task's attempt owes before anything else of the wave moves.
enum Owed {
    /// Recorded as started, but no shim ever took it: started again, in the same worktree.
    Start(Vec<TaskStart>),
    /// A stop to send to the attempt (SIGKILL, or SIGTERM).
    Stop { task: String, attempt: u32, kill: bool },
}

/// The running wave `w`: what its tasks' attempts owe, then fail-fast, the copy-back, and the
/// free slots filled (`started`: what each package's tasks started earlier in this round, for
/// its `max_concurrent:`).
pub(super) fn running(
    mut st: Step<'_>,
    w: usize,
    wave: &[Task],
    slots: usize,
    started: &std::collections::BTreeMap<String, usize>,
) -> Option<Action> {
    let (o, p) = (st.o, &st.o.plan);
    match owed(&mut st, w) {
        Some(Owed::Start(starts)) => return Some(Action::StartTask { update: st.finish(), starts }),
        Some(Owed::Stop { task, attempt, kill }) => return Some(Action::StopTask { update: st.finish(), task, attempt, kill }),
        None => {}
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
        let reason = Reason::TaskFailed { task: failed.canonical.clone(), label: failed.label.clone(), why, plan: p.id.clone() };
        st.go(PlanStatus::Halted, reason);
        return settle(st);
    }
    // Kiln's resume order: what is ready for integration is integrated before anything
    // is requeued, so a task to run again (rerun_required) waits for its wave-mates' copy-back,
    // never they for its rerun.
    let rerun_waits = wave.iter().any(|t| st.record.tasks.get(&t.canonical).is_some_and(|r| r.state == TaskState::Queued && r.reruns > 0));
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
    let busy = |t: &Task| o.tasks.iter().any(|x| x.task.canonical == t.canonical && (x.attempt.busy || x.attempt.lingering().is_some()));
    // A task paused by its agent's limit starts once its `not_before` has passed.
    let paused = |st: &Step<'_>, t: &Task| st.record.tasks.get(&t.canonical).and_then(|r| r.not_before).is_some_and(|nb| nb > st.s.at);
    let queued: Vec<&Task> = wave.iter().filter(|t| state_of(&st, t) == TaskState::Queued && !busy(t) && !paused(&st, t)).collect();
    let mut starts = Vec::new();
    // Attempts by package, live or started this round: a task whose package's
    // `max_concurrent:` is reached stays queued until one ends.
    let mut live = started.clone();
    for (name, n) in &st.s.running_by_package {
        *live.entry(name.clone()).or_insert(0) += n;
    }
    for next in queued {
        if starts.len() >= room {
            break;
        }
        let cap = o.tasks.iter().find(|x| x.task.canonical == next.canonical).and_then(|x| x.package_cap.clone());
        if let Some((name, max)) = &cap {
            if live.get(name).copied().unwrap_or(0) >= *max {
                continue;
            }
        }
        if let Some(why) = o.tasks.iter().find(|x| x.task.canonical == next.canonical).and_then(|x| x.worker_problem.clone()) {
            if starts.is_empty() {
                st.task_state(next, TaskState::Failed, Some(Reason::CannotStart(why)));
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
            r.not_before = None;
            // Its updates count from its own first: a rerun's sequence 1 is new.
            r.sequence = 0;
        }
        starts.push(TaskStart { task: next.canonical.clone(), attempt });
        if let Some((name, _)) = cap {
            *live.entry(name).or_insert(0) += 1;
        }
    }
    if !starts.is_empty() {
        return Some(Action::StartTask { update: st.finish(), starts });
    }
    settle(st)
}

/// Attempts that ended; workers at work held to the liveness rules; then the stops owed.
fn owed(st: &mut Step<'_>, w: usize) -> Option<Owed> {
    let o = st.o;
    for ot in o.tasks.iter().filter(|t| t.task.wave == w) {
        let Some(rec) = st.record.tasks.get(&ot.task.canonical).cloned() else { continue };
        if rec.state == TaskState::Running
            && ot.attempt.exit().is_none_or(|x| x.attempt != rec.attempt)
            && ot.attempt.taken.is_none_or(|t| !t.covers(rec.attempt))
            && !rec.stop_sent
        {
            // Recorded as started, but no shim ever took it (a pass died between the
            // two): start it again, in the same worktree.
            let starts = vec![TaskStart { task: ot.task.canonical.clone(), attempt: rec.attempt }];
            return Some(Owed::Start(starts));
        }
        match rec.state {
            TaskState::Running => running_task(st, ot, &rec),
            // Ready for integration, but its worktree is gone: its work is lost unless
            // its commit landed (the copy-back then finds it by its trailer).
            TaskState::Succeeded if !ot.landed => {
                if let Some(gone) = &ot.worktree_gone {
                    orphaned(st, ot, &rec, gone);
                    rerun(st, ot, &rec, Reason::WorkLost(gone.clone()));
                }
            }
            TaskState::Failed | TaskState::Stopped => {
                if let Some(gone) = &ot.worktree_gone {
                    orphaned(st, ot, &rec, gone);
                }
            }
            _ => {}
        }
    }
    // Stops owed: a task failed for going stale or past its limit is killed; one still
    // at work whose worktree is gone is shut down (it runs again once it is over).
    for ot in o.tasks.iter().filter(|t| t.task.wave == w) {
        let Some(rec) = st.record.tasks.get(&ot.task.canonical).cloned() else { continue };
        if rec.stop_sent || ot.attempt.live().is_none() {
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
        return Some(Owed::Stop { task: ot.task.canonical.clone(), attempt: rec.attempt, kill });
    }
    None
}
