//! The verify gate after a wave: a run started, judged while it works (stale, past its limit),
//! its verdict; on failure the plan halts, with a fix-forward commission when it names a fixer,
//! and verifies again once the fix landed.

use serde_json::json;

use super::liveness::{look, verify_limit};
use super::step::{settle, Step};
use super::waves::next_wave;
use super::{fix_id, Action};
use crate::activity::reason::Reason;
use crate::artifact::plan::PlanStatus;
use crate::worker::attempt::{Ended, Look};

/// The verify run at work or ended: its clean exit moves to the next wave; a failure halts the
/// plan (with a fix-forward commission when it names a fixer); a stale or overlong run is killed.
pub(super) fn verdict(mut st: Step<'_>, w: usize) -> Option<Action> {
    let (o, s, p) = (st.o, st.s, &st.o.plan);
    use PlanStatus::Halted;
    let run = st.record.verify_runs;
    match o.verify.process(run).ended() {
        Some(Ended::Exited(x)) if x.clean() => next_wave(st, w),
        Some(ended) => {
            let how = match (st.record.verify_verdict.clone(), ended) {
                (Some(verdict), _) => verdict,
                (None, Ended::Exited(x)) => x.describe(),
                (None, Ended::Died) => "its supervisor died without recording how it ended".into(),
            };
            let failed = |fix| Reason::VerifyFailed { wave: w, how: how.clone(), plan: p.id.clone(), fix };
            match p.fixer.clone() {
                Some(fixer) => {
                    let round = st.record.fixes + 1;
                    st.record.fixes = round;
                    st.go(Halted, failed(Some((fix_id(&p.id, w, round), fixer.clone()))));
                    Some(Action::FixForward { update: st.finish(), wave: w, round, fixer, run })
                }
                None => {
                    st.go(Halted, failed(None));
                    settle(st)
                }
            }
        }
        None => {
            let live = o.verify.live().filter(|_| !st.record.verify_stop_sent);
            if let Some(Look::Stop(stop)) = live.map(|live| look(s, &live, verify_limit(s, o))) {
                let kind = stop.event_kind();
                let state = stop.is_stale().then_some("stale");
                st.event(
                    kind,
                    format!("{kind}:verify:{run}"),
                    json!({"verify": run, "state": state, "text": format!("verify: {}", stop.text())}),
                );
                st.record.verify_verdict = Some(stop.reason().to_string());
                st.record.verify_stop_sent = true;
                st.dirty = true;
                return Some(Action::StopVerify { update: st.finish(), run, kill: true });
            }
            settle(st)
        }
    }
}

/// Halted after a failed verify, every task of the wave integrated, and the fix-forward
/// commission completed: the fix landed, verify again.
pub(super) fn after_fix(mut st: Step<'_>, w: usize) -> Option<Action> {
    let (o, p) = (st.o, &st.o.plan);
    let fixed_by = fix_id(&p.id, w, st.record.fixes);
    if o.verify.exit().is_some_and(|x| x.attempt == st.record.verify_runs) {
        st.record.new_verify_run();
        let run = st.record.verify_runs;
        st.go(PlanStatus::Verifying, Reason::FixMerged(fixed_by));
        return Some(Action::StartVerify { update: st.finish(), wave: w, run });
    }
    settle(st)
}
