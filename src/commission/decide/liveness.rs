//! A commission's worker at work: the liveness rules every kind shares
//! ([`crate::worker::liveness`]) applied to it — its limit from the commission, package or
//! project, stale and overtime as failures — and, once it is gone, how its exit ends the
//! commission (REQ-COM-14).

use serde_json::json;

use super::step::Step;
use super::{Effect, Sig};
use crate::artifact::Status;
use crate::commission::observe::{Observed, Snapshot};
use crate::worker::liveness::{self, Judgement};

/// The wall-clock limit of an attempt and where it comes from: the commission's `timeout:`,
/// else its package's, else the project's (`0s`: none).
pub fn time_limit(s: &Snapshot, o: &Observed) -> Option<(std::time::Duration, &'static str)> {
    let package = s.workers.packages.get(&o.artifact.worker).and_then(|p| p.manifest.timeout);
    liveness::time_limit(&[
        (o.artifact.timeout, "the commission's timeout"),
        (package, "its worker package's timeout"),
        (Some(s.project.config.timeout), "the project's timeout"),
    ])
}

/// Why a running attempt must stop now for running too long, if it must.
pub(super) fn overtime(s: &Snapshot, o: &Observed) -> Option<String> {
    liveness::overtime(time_limit(s, o), o.run.as_ref()?.started_at, s.now)
}

/// A running worker: signs of life since the last look keep it alive; none for `stale_after`
/// and it is failed and its group killed.
pub(super) fn heartbeat(s: &Snapshot, o: &Observed, st: &mut Step<'_>) -> Effect {
    let Some(sample) = o.sample else { return Effect::None };
    match liveness::judge(o.heartbeat.as_ref(), sample, s.now, s.project.config.stale_after) {
        Judgement::Stale(idle) => {
            let text = liveness::stale_text(idle);
            st.event("heartbeat", format!("heartbeat:{}:stale", st.record.attempt), json!({"state": "stale", "text": text}));
            st.go(Status::Failed, liveness::UNRESPONSIVE);
            Effect::Signal(Sig::Kill)
        }
        Judgement::Quiet => Effect::None,
        Judgement::First(beat) => {
            st.event("heartbeat", format!("heartbeat:{}:healthy", st.record.attempt), json!({"state": "healthy", "text": "healthy"}));
            Effect::Beat(beat)
        }
        Judgement::Beat(beat) => Effect::Beat(beat),
    }
}

/// REQ-COM-14: how a gone process ends its commission. A submitted result always wins.
pub(super) fn classify_exit(o: &Observed, st: &mut Step<'_>) -> Effect {
    let exit = o.exit.as_ref();
    if st.has_result() {
        if st.status == Status::Dispatched {
            st.go(Status::InProgress, "worker process ran");
        }
        if let Some(x) = exit.filter(|x| !x.clean()) {
            let text = format!("{} after submitting its result", x.describe());
            st.event("anomaly", format!("anomaly:{}", st.record.attempt), json!({"text": text}));
        } else if exit.is_none() {
            st.event("anomaly", format!("anomaly:{}", st.record.attempt), json!({"text": "process lost after submitting its result"}));
        }
        return Effect::Finish;
    }
    let reason = match exit {
        Some(x) if x.clean() => "completed without submitting result".to_string(),
        Some(x) => x.describe(),
        None => {
            st.event("heartbeat", format!("heartbeat:{}:lost", st.record.attempt), json!({"state": "lost", "text": "process lost"}));
            "process lost on restart".to_string()
        }
    };
    st.go(Status::Failed, &reason);
    Effect::None
}
