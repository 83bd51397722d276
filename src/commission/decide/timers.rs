//! When the world must be looked at again even if nothing changes on disk: the watcher's
//! timers, asked of the decider (pure, from the same snapshot).

use chrono::{DateTime, Utc};

use super::liveness::time_limit;
use crate::artifact::Status;
use crate::commission::observe::Snapshot;
use crate::worker::liveness;

/// When the world must be looked at again even if no file changes: a heartbeat deadline, the
/// end of a cancel grace period, a shim that is still starting, the end of a day whose budget
/// holds work back. `None`: nothing is timed.
pub(crate) fn next_check(s: &Snapshot) -> Option<std::time::Duration> {
    let cfg = &s.project.config;
    let after = |d: std::time::Duration| s.now + chrono::Duration::from_std(d).unwrap_or_default();
    let mut soonest: Option<DateTime<Utc>> = None;
    for o in &s.commissions {
        let a = &o.attempt;
        let at = match o.record.as_ref() {
            // A job in a cluster's queue may wait long: asked about now and then.
            _ if a.starting() && a.queued().is_some() => Some(after(liveness::POLL)),
            _ if a.starting() || a.lingering().is_some() => Some(after(std::time::Duration::from_millis(200))),
            Some(r) if a.alive() && r.status == Status::Cancelled => {
                r.term_sent_at.map(|t| t + chrono::Duration::from_std(cfg.cancel_grace).unwrap_or_default())
            }
            _ if a.alive() => {
                let look = a.running().next_look(time_limit(s, o), cfg.stale_after, s.now);
                // A job ended by its cluster changes no file: its runner is asked again.
                look.map(|look| if a.polled() { look.min(after(liveness::POLL)) } else { look })
            }
            // Paused by its agent's limit: looked at again once it may run.
            // (Nothing of it runs: it never started, or it is over.)
            Some(r) if !a.at_work() && matches!(r.status, Status::Pending) => super::liveness::not_before(o).filter(|t| *t > s.now),
            _ => None,
        };
        soonest = match (soonest, at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }
    // A day's budget reached: what waits for it is looked at again when the day resets.
    if let Some(reached) = &s.daily_budget {
        if s.commissions.iter().any(|o| matches!(o.artifact.status, None | Some(Status::Pending | Status::Blocked))) {
            soonest = Some(soonest.map_or(reached.resets_at, |a| a.min(reached.resets_at)));
        }
    }
    // A scheduled commission's next run: the watch wakes for it, and not before.
    for o in &s.schedules {
        // Its time is the schedule clock's (a test's may differ from the snapshot's): the wait is
        // measured there.
        if let Some(at) = super::schedule::next_run(o) {
            let at = s.now + (at - o.now);
            soonest = Some(soonest.map_or(at, |a| a.min(at)));
        }
    }
    soonest.map(|t| t.signed_duration_since(s.now).to_std().unwrap_or_default())
}
