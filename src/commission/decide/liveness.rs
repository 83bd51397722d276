//! A commission's worker at work: the attempt rules every kind shares
//! ([`crate::worker::attempt`]) applied to it — its limit from the commission, package or
//! project, stale and overtime as failures — and, once it is gone, how its exit ends the
//! commission (REQ-COM-14).

use serde_json::json;

use super::effect::{Effect, Sig};
use super::step::Step;
use crate::activity::reason::Reason;
use crate::artifact::Status;
use crate::commission::observe::{Observed, Snapshot};
use crate::worker::attempt::{Ended, Look, Stop, Waits};
use crate::worker::liveness;

/// The wall-clock limit of an attempt and where it comes from: the commission's `timeout:`,
/// else its package's, else the project's (`0s`: none).
pub(crate) fn time_limit(s: &Snapshot, o: &Observed) -> Option<(std::time::Duration, &'static str)> {
    let package = s.workers.packages.get(&o.artifact.worker).and_then(|p| p.manifest.timeout);
    liveness::time_limit(&[
        (o.artifact.timeout, "the commission's timeout"),
        (package, "its worker package's timeout"),
        (Some(s.project.config.timeout), "the project's timeout"),
    ])
}

/// A running worker held to the rules every kind's attempts are ([`Process::look`]): past its
/// limit, or with no signs of life for `stale_after`, it is failed and its group killed; signs
/// of life since the last look keep it alive.
pub(super) fn watch(s: &Snapshot, o: &Observed, st: &mut Step<'_>) -> Effect {
    let attempt = st.record.attempt;
    let waits = if super::asking::waiting(st) { Waits::ForAPerson } else { Waits::No };
    match o.attempt.running().look_while(waits, time_limit(s, o), s.project.config.stale_after, s.now) {
        Look::Stop(stop) => {
            match &stop {
                Stop::Overtime(why) => st.event("timeout", format!("timeout:{attempt}"), json!({"text": why})),
                Stop::Stale(_) => {
                    st.event("heartbeat", format!("heartbeat:{attempt}:stale"), json!({"state": "stale", "text": stop.text()}))
                }
            }
            st.go(Status::Failed, stop.reason());
            Effect::Signal(Sig::Kill)
        }
        Look::Quiet => Effect::None,
        Look::First(beat) => {
            st.event("heartbeat", format!("heartbeat:{attempt}:healthy"), json!({"state": "healthy", "text": "healthy"}));
            Effect::Beat(beat)
        }
        Look::Beat(beat) => Effect::Beat(beat),
    }
}

/// REQ-COM-14: how a gone process ends its commission. A submitted result always wins.
pub(super) fn classify_exit(o: &Observed, st: &mut Step<'_>) -> Effect {
    // How it ended as the attempt machine has it, from the attempt as every kind's is observed
    // (called once nothing of it runs and no shim holds it: nothing is taken). Not recorded
    // (its shim died, or no shim ever took it): its process is lost.
    let process = o.attempt.process(st.record.attempt, None);
    let exit = match process.ended() {
        Some(Ended::Exited(x)) => Some(x),
        Some(Ended::Died) | None => None,
    };
    if st.has_result() {
        if st.status == Status::Dispatched {
            st.go(Status::InProgress, Reason::Ran);
        }
        if let Some(x) = exit.filter(|x| !x.clean()) {
            let text = format!("{} after submitting its result", x.describe());
            st.event("anomaly", format!("anomaly:{}", st.record.attempt), json!({"text": text}));
        } else if exit.is_none() {
            st.event("anomaly", format!("anomaly:{}", st.record.attempt), json!({"text": "process lost after submitting its result"}));
        }
        if let Some(over) = &o.overspent {
            let text = format!("{over} after submitting its result: the result stands");
            st.event("budget", format!("budget:{}", st.record.attempt), json!({"text": text}));
        }
        return Effect::Finish;
    }
    if let Some(over) = o.overspent {
        // Stopped by its shim for its budget (or found past it at the end): that is why it
        // ended, whatever its exit says; its work is kept on its branch as any failure's is.
        st.event("budget", format!("budget:{}", st.record.attempt), json!({"text": over.to_string(), "attempt": st.record.attempt}));
        st.go(Status::Failed, Reason::BudgetExceeded(over));
        return Effect::None;
    }
    if let (Some(x), Some((limited, streak))) = (exit.filter(|x| x.attempt == st.record.attempt), o.limited.as_ref()) {
        limited_wait(o, st, x.finished_at, limited, *streak);
        return Effect::None;
    }
    let reason = match exit {
        Some(x) if x.clean() => Reason::NoResult,
        Some(x) => Reason::Exited(x.clone()),
        None => {
            st.event("heartbeat", format!("heartbeat:{}:lost", st.record.attempt), json!({"state": "lost", "text": "process lost"}));
            Reason::ProcessLost
        }
    };
    st.go(Status::Failed, reason);
    Effect::None
}

/// An attempt its agent's rate or usage limit ended, without a result: no failure. The
/// commission goes back to `pending` with `not_before:` (the reset time the agent said, else a
/// backoff from the attempt's end by how many attempts in a row ended so) and a reason; it is
/// dispatched again from then on. All of it follows from the attempt's records, so a pass
/// repeated writes the same.
fn limited_wait(
    o: &Observed,
    st: &mut Step<'_>,
    ended: chrono::DateTime<chrono::Utc>,
    limited: &crate::worker::limits::Limited,
    streak: u32,
) {
    let attempt = st.record.attempt;
    let not_before = crate::worker::limits::not_before(limited, ended, streak);
    let at = crate::activity::timeline::timestamp(not_before);
    let mut fields = json!({"text": limited.said, "attempt": attempt, "not_before": at, "in_a_row": streak});
    if let Some(r) = limited.resets_at {
        fields["resets_at"] = crate::activity::timeline::timestamp(r).into();
    }
    st.event("limited", format!("limited:{attempt}"), fields);
    let reason =
        Reason::UsageLimited { agent: o.artifact.worker.clone(), said: limited.said.clone(), resets_at: limited.resets_at, not_before };
    st.go(Status::Pending, reason.clone());
    // Pending says nothing by itself: the reason says why it waits, until it is dispatched.
    st.set("reason", serde_yaml_ng::Value::String(reason.to_string()));
    st.set(NOT_BEFORE, serde_yaml_ng::Value::String(at));
}

/// The key a commission waits on after a limit: not dispatched before this time.
pub(crate) const NOT_BEFORE: &str = "not_before";

/// When a commission still to run may be dispatched, if its `not_before:` says a time (a
/// person's edit removing it, or moving it, is theirs to make).
pub(crate) fn not_before(o: &Observed) -> Option<chrono::DateTime<chrono::Utc>> {
    let text = o.artifact.field(NOT_BEFORE)?.as_str()?;
    chrono::DateTime::parse_from_rfc3339(text).ok().map(|t| t.with_timezone(&chrono::Utc))
}
