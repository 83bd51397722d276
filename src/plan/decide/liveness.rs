//! Tasks and verify runs held to the liveness rules of commissions
//! ([`crate::worker::liveness`]): their limits, stale and overtime judged, heartbeats to write,
//! what a killed shim left running killed, and when to look again.

use chrono::{DateTime, Utc};
use serde_json::json;

use super::{Action, Live, Observed, ObservedTask, Snapshot, TaskState, Update};
use crate::activity::timeline;
use crate::artifact::plan::PlanStatus;
use crate::worker::attempt::{Limit, Look};
use crate::worker::liveness::{self, Proc};

/// The wall-clock limit of a task's attempt: its own `timeout:`, else its plan's, else its
/// package's, else the project's (`0s`: none).
pub(crate) fn task_limit(s: &Snapshot, o: &Observed, ot: &ObservedTask) -> Limit {
    liveness::time_limit(&[
        (ot.task.timeout, "the task's timeout"),
        (o.plan.timeout, "the plan's timeout"),
        (ot.package_timeout, "its worker package's timeout"),
        (Some(s.timeout), "the project's timeout"),
    ])
}

/// The wall-clock limit of a verify run: the plan's `timeout:`, else the project's.
pub(crate) fn verify_limit(s: &Snapshot, o: &Observed) -> Limit {
    liveness::time_limit(&[(o.plan.timeout, "the plan's timeout"), (Some(s.timeout), "the project's timeout")])
}

/// A worker (a task's or a verify's) at work looked at by the rules every kind's attempts are
/// held to ([`Process::look`]): past its limit, stale, or alive with a heartbeat to write.
pub(super) fn look(s: &Snapshot, live: &Live, limit: Limit) -> Look {
    live.running().look(limit, s.stale_after, s.at)
}

/// Kills of what killed shims left running (its tasks' current attempts, its latest verify
/// run), each with a log event said once.
pub(super) fn kill_leftovers(o: &Observed, now: &str) -> Vec<Action> {
    let tasks = o.tasks.iter().filter_map(|ot| Some((Some(ot.task.canonical.clone()), ot.attempt.lingering()?)));
    tasks
        .chain(o.verify.lingering().map(|l| (None, l)))
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
            let update = Update { id: o.plan.id.clone(), expect_hash: o.plan.hash, edits: vec![], events, record: None, fold: vec![] };
            Action::KillLeftovers { update, task, run: l.run.clone(), pids: l.pids.clone() }
        })
        .collect()
}

/// Heartbeats to write: running tasks and a running verify whose signs of life changed.
pub(super) fn beats(o: &Observed, s: &Snapshot) -> Vec<Action> {
    let Some(record) = &o.record else { return Vec::new() };
    let empty = || Update { id: o.plan.id.clone(), expect_hash: o.plan.hash, edits: vec![], events: vec![], record: None, fold: vec![] };
    let mut out = Vec::new();
    if record.status == PlanStatus::Running {
        for ot in &o.tasks {
            let Some(r) = record.tasks.get(&ot.task.canonical) else { continue };
            let Some(live) = ot.attempt.live().filter(|_| r.state == TaskState::Running && !r.stop_sent) else { continue };
            if let Look::First(beat) | Look::Beat(beat) = look(s, &live, task_limit(s, o, ot)) {
                out.push(Action::Beat { update: empty(), task: Some(ot.task.canonical.clone()), beat });
            }
        }
    }
    if record.status == PlanStatus::Verifying && !record.verify_stop_sent {
        if let Some(Look::First(beat) | Look::Beat(beat)) = o.verify.live().map(|live| look(s, &live, verify_limit(s, o))) {
            out.push(Action::Beat { update: empty(), task: None, beat });
        }
    }
    out
}

/// When the plans must be looked at again though nothing changes on disk: a running task or
/// verify going stale or reaching its limit; soon, while a stopped one is still going away.
pub(crate) fn next_check(s: &Snapshot) -> Option<std::time::Duration> {
    let soon = s.at + chrono::Duration::milliseconds(200);
    let mut at: Vec<DateTime<Utc>> = Vec::new();
    for o in &s.plans {
        let Some(record) = &o.record else { continue };
        for ot in &o.tasks {
            let r = record.tasks.get(&ot.task.canonical);
            match (ot.attempt.live(), r) {
                (Some(live), Some(r)) if r.state == TaskState::Running && !r.stop_sent => {
                    let look = live.running().next_look(task_limit(s, o, ot), s.stale_after, s.at);
                    // A job ended by its cluster changes no file: its runner is asked again.
                    let poll = s.at + chrono::Duration::from_std(liveness::POLL).unwrap_or_default();
                    at.extend(look.map(|look| if ot.attempt.polled() { look.min(poll) } else { look }));
                }
                _ if ot.attempt.busy || ot.attempt.lingering().is_some() => at.push(soon),
                // Paused by its agent's limit: looked at again once it may start.
                (_, Some(r)) if r.state == TaskState::Queued && record.status == PlanStatus::Running => {
                    at.extend(r.not_before.filter(|nb| *nb > s.at));
                }
                _ => {}
            }
        }
        if o.verify.lingering().is_some() {
            at.push(soon);
        }
        // Reviewers at work: looked at again at their time limit; what a lost shim left, soon.
        for r in &o.reviews {
            match (r.proc, &r.run) {
                (Proc::Alive, Some(run)) if record.status == PlanStatus::Verifying => {
                    let limit = super::review::reviewer_limit(s, o.reviewer_timeouts.get(r.index).copied().flatten());
                    at.extend(limit.map(|(limit, _)| run.started_at + chrono::Duration::from_std(limit).unwrap_or_default()));
                }
                (Proc::Lingering, _) => at.push(soon),
                _ => {}
            }
        }
        if let Some(live) = o.verify.live() {
            if record.status == PlanStatus::Verifying && !record.verify_stop_sent {
                at.extend(live.running().next_look(verify_limit(s, o), s.stale_after, s.at));
            } else {
                at.push(soon);
            }
        }
    }
    at.into_iter().min().map(|t| t.signed_duration_since(s.at).to_std().unwrap_or_default())
}
