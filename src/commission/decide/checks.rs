//! A submitted attempt's `checks:` weighed once its worker is gone: their outcomes (the shim's
//! record of the attempt's end, [`crate::worker::checks`]) written as `check_results:` and to
//! the timeline; all passed, the work goes on to review or the merge; one failed, it is sent
//! back through [`super::review::revise`] — held in `review` first, so that its work is
//! committed on its branch — at most `max_revisions` times, then failed (`review: auto`) or
//! left for a person with the failure shown (`review: required`).

use serde_json::json;
use serde_yaml_ng::{Mapping, Value};

use super::effect::Effect;
use super::step::Step;
use crate::activity::reason::{AfterCheck, Reason};
use crate::activity::state::CheckRun;
use crate::artifact::commission::{Feedback, FeedbackFrom, Revision};
use crate::artifact::Status;
use crate::commission::observe::{Observed, Snapshot};

/// Automatic send-backs a commission gets ([`super::review::max_revisions`]).
pub(super) use super::review::max_revisions;

/// Whether the commission asks for checks now (the project's, its package's, its own).
fn expected(s: &Snapshot, o: &Observed) -> Option<Vec<String>> {
    let package = s.workers.packages.get(&o.artifact.worker).map(|p| p.manifest.checks.as_slice()).unwrap_or_default();
    s.project.config.checks.iter().chain(package).chain(&o.artifact.checks).next().cloned()
}

/// The current attempt's checks as its shim ran them; checks asked for that did not run (the
/// shim was stopped, or lost, after the result came in) are a failure of the first: no proof.
fn runs(s: &Snapshot, o: &Observed, attempt: u32) -> Vec<CheckRun> {
    let ran = o.attempt.exit().filter(|x| x.attempt == attempt).map(|x| x.checks.to_vec()).unwrap_or_default();
    match expected(s, o) {
        Some(argv) if ran.is_empty() => vec![CheckRun {
            argv,
            code: None,
            signal: None,
            tail: None,
            error: Some("the attempt ended before its checks could run".into()),
        }],
        _ => ran,
    }
}

/// Whether every check `attempt` ran passed (none asked for: passed).
pub(super) fn passed(s: &Snapshot, o: &Observed, attempt: u32) -> bool {
    runs(s, o, attempt).iter().all(CheckRun::passed)
}

/// A submitted attempt whose worker is gone, its result folded: the checks' outcomes written,
/// then the merge (`Finish`), review, an automatic send-back, or failure.
pub(super) fn submitted(s: &Snapshot, o: &Observed, st: &mut Step<'_>) -> Effect {
    let attempt = st.record.attempt;
    let runs = runs(s, o, attempt);
    if !runs.is_empty() {
        st.set("check_results", Value::Sequence(runs.iter().map(result_entry).collect()));
        for (i, r) in runs.iter().enumerate() {
            let text = format!("check `{}`: {}", r.command(), if r.passed() { "passed".to_string() } else { r.ended() });
            st.event(
                "check",
                format!("check:{attempt}:{i}"),
                json!({"text": text, "command": r.command(), "exit": r.code, "passed": r.passed(), "tail": r.tail, "attempt": attempt}),
            );
        }
    }
    let required = super::review::required(s, o);
    let Some(failed) = runs.iter().find(|r| !r.passed()) else {
        if let Some(held) = super::reviewers::hold(s, o, st) {
            return held;
        }
        return if required { super::review::hold(o, st) } else { Effect::Finish };
    };
    let revisions = st.record.automatic_revisions();
    let (command, ended) = (failed.command(), failed.ended());
    if revisions < max_revisions(s, o) {
        // Held first (its work committed on its branch, the worktree removed); the next pass
        // sends it back ([`send_back`]) from there, whatever was killed in between.
        let why = Reason::CheckFailed { command, ended, revisions, then: AfterCheck::SendBack };
        super::review::hold_because(st, why)
    } else if required {
        let why = Reason::CheckFailed { command, ended, revisions, then: AfterCheck::Review { id: o.artifact.id.clone() } };
        super::review::hold_because(st, why)
    } else {
        if st.status == Status::Dispatched {
            st.go(Status::InProgress, Reason::Ran);
        }
        if let Some((summary, artifacts)) = st.result() {
            st.set("result", super::step::result_value(summary, artifacts));
        }
        st.go(Status::Failed, Reason::CheckFailed { command, ended, revisions, then: AfterCheck::Fail });
        Effect::None
    }
}

/// In review with a failing check and send-backs left, its work secured and nothing asked of
/// it by a person: the automatic revise, the check's command and its output's tail the
/// feedback. `None`: review goes on as a person's ([`super::review::in_review`]).
pub(super) fn send_back(s: &Snapshot, o: &Observed, st: &Step<'_>) -> Option<Effect> {
    let settled = !o.worktree_exists && !o.attempt.at_work();
    if !settled || o.artifact.desired.is_some() {
        return None;
    }
    let attempt = st.record.attempt;
    let revisions = st.record.automatic_revisions();
    if revisions >= max_revisions(s, o) {
        return None;
    }
    let failed = runs(s, o, attempt).into_iter().find(|r| !r.passed())?;
    let mut text = format!("The check `{}` failed ({}).", failed.command(), failed.ended());
    if let Some(tail) = &failed.tail {
        text.push_str(&format!(" Its output ends:\n{tail}"));
    }
    text.push_str("\nMake it pass: guild-hall runs it again in your worktree after you submit.");
    let revision = Revision {
        attempt: attempt + 1,
        after: attempt,
        branch: super::step::attempt_branch(o, attempt),
        feedback: vec![Feedback { text, path: None, line: None }],
        from: FeedbackFrom::Check,
        automatic: revisions + 1,
    };
    Some(super::review::revise(revision))
}

/// One `check_results:` entry.
fn result_entry(r: &CheckRun) -> Value {
    let mut m = Mapping::new();
    m.insert("command".into(), Value::String(r.command()));
    m.insert("exit".into(), r.code.map_or(Value::Null, |c| Value::Number(c.into())));
    m.insert("passed".into(), Value::Bool(r.passed()));
    if !r.passed() {
        m.insert("ended".into(), Value::String(r.ended()));
    }
    if let Some(t) = &r.tail {
        m.insert("tail".into(), Value::String(t.clone()));
    }
    Value::Mapping(m)
}
