//! Whether a running worker is still doing its work: signs of life against `stale_after`, its
//! wall-clock limit, and, once it is gone, how its exit ends the commission (REQ-COM-14).

use serde_json::json;

use super::machine::Effect;
use super::step::Step;
use super::Sig;
use crate::activity::state::Heartbeat;
use crate::artifact::Status;
use crate::commission::observe::{Observed, Snapshot};

/// The wall-clock limit of an attempt and where it comes from: the commission's `timeout:`,
/// else its package's, else the project's (`0s`: none).
pub fn time_limit(s: &Snapshot, o: &Observed) -> Option<(std::time::Duration, &'static str)> {
    let package = s.workers.packages.get(&o.artifact.worker).and_then(|p| p.manifest.timeout);
    let (limit, from) = match (o.artifact.timeout, package) {
        (Some(t), _) => (t, "the commission's timeout"),
        (None, Some(t)) => (t, "its worker package's timeout"),
        (None, None) => (s.project.config.timeout, "the project's timeout"),
    };
    (!limit.is_zero()).then_some((limit, from))
}

/// Why a running attempt must stop now for running too long, if it must.
pub(super) fn overtime(s: &Snapshot, o: &Observed) -> Option<String> {
    let (limit, from) = time_limit(s, o)?;
    let started = o.run.as_ref()?.started_at;
    let ran = s.now.signed_duration_since(started).to_std().unwrap_or_default();
    (ran >= limit).then(|| format!("timed out: ran longer than {} ({from})", humantime::format_duration(limit)))
}

/// A running worker: signs of life since the last look keep it alive; none for `stale_after`
/// and it is failed and its group killed.
pub(super) fn heartbeat(s: &Snapshot, o: &Observed, st: &mut Step<'_>) -> Effect {
    let Some(sample) = o.sample else { return Effect::None };
    match &o.heartbeat {
        Some(hb) if hb.sample == sample => {
            let idle = s.now.signed_duration_since(hb.last_activity).to_std().unwrap_or_default();
            if idle > s.project.config.stale_after {
                let text = format!(
                    "stale: no progress, output or CPU for {}",
                    humantime::format_duration(std::time::Duration::from_secs(idle.as_secs()))
                );
                st.event("heartbeat", format!("heartbeat:{}:stale", st.record.attempt), json!({"state": "stale", "text": text}));
                st.go(Status::Failed, "process unresponsive");
                Effect::Signal(Sig::Kill)
            } else {
                Effect::None
            }
        }
        prev => {
            if prev.is_none() {
                st.event("heartbeat", format!("heartbeat:{}:healthy", st.record.attempt), json!({"state": "healthy", "text": "healthy"}));
            }
            Effect::Beat(Heartbeat { last_activity: s.now, sample })
        }
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
