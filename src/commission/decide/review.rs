//! Review (`review: required`): a submitted attempt held in `review`, its work committed on its
//! branch and nothing merged, until a person approves (merged), revises (a new attempt on the
//! same branch, given feedback) or rejects it (cancelled, the branch kept). [`revise`] is the
//! one way work is sent back, whoever's feedback it carries.

use serde_json::json;

use super::effect::Effect;
use super::step::Step;
use crate::activity::reason::Reason;
use crate::artifact::commission::{Feedback, FeedbackFrom, ReviewMode, Revision};
use crate::artifact::{Desired, Status};
use crate::commission::observe::{Observed, Snapshot};

/// Whether this commission's submitted work waits for a person: its own `review:`, else its
/// package's, else the project's.
pub(super) fn required(s: &Snapshot, o: &Observed) -> bool {
    let package = s.workers.packages.get(&o.artifact.worker).and_then(|p| p.manifest.review);
    ReviewMode::choose(o.artifact.review, package, Some(s.project.config.review)) == ReviewMode::Required
}

/// Automatic send-backs a commission gets (a failing check's, a conflict's, a reviewer's
/// `changes`): its own `max_revisions:`, else its package's, else the project's.
pub(super) fn max_revisions(s: &Snapshot, o: &Observed) -> u32 {
    let package = s.workers.packages.get(&o.artifact.worker).and_then(|p| p.manifest.max_revisions);
    o.artifact.max_revisions.or(package).unwrap_or(s.project.config.max_revisions)
}

/// A submitted attempt whose work waits for a person: moved to `review` once its work is
/// committed on its branch (the effect secures it first, then writes this update).
pub(super) fn hold(o: &Observed, st: &mut Step<'_>) -> Effect {
    hold_because(st, Reason::AwaitsReview { id: o.artifact.id.clone() })
}

/// [`hold`], saying why (a failing check's send-back, or its failure shown to a person).
pub(super) fn hold_because(st: &mut Step<'_>, why: Reason) -> Effect {
    if st.status == Status::Dispatched {
        st.go(Status::InProgress, Reason::Ran);
    }
    if let Some((summary, artifacts)) = st.result() {
        st.set("result", super::step::result_value(summary, artifacts));
    }
    st.go(Status::Review, why);
    Effect::Hold
}

/// In review: a person's request carried out (approve, revise, reject), else nothing — it
/// waits, settled, for them. A leftover worktree (a pass killed after the move, before the
/// removal) is secured onto the branch and removed first.
pub(super) fn in_review(o: &Observed, st: &mut Step<'_>) -> Effect {
    if o.attempt.lingering().is_some() {
        return Effect::KillLeftovers;
    }
    if o.worktree_exists && !o.attempt.under_way() {
        return Effect::Cleanup("work of the attempt in review");
    }
    let attempt = st.record.attempt;
    match o.artifact.desired {
        Some(Desired::Approved) => {
            st.remove("desired");
            Effect::Approve
        }
        Some(Desired::Revised) => {
            let revision = Revision {
                attempt: attempt + 1,
                after: attempt,
                branch: super::step::attempt_branch(o, attempt),
                feedback: o.artifact.feedback.clone(),
                from: FeedbackFrom::Person,
                automatic: st.record.automatic_revisions(),
            };
            revise(revision)
        }
        Some(Desired::Rejected | Desired::Cancelled) => {
            let text = o.artifact.feedback.iter().map(Feedback::line_text).collect::<Vec<_>>().join("; ");
            let branch = super::step::attempt_branch(o, attempt);
            st.go(Status::Cancelled, Reason::Rejected { branch, text: (!text.is_empty()).then_some(text) });
            st.remove("desired");
            st.remove("feedback");
            Effect::None
        }
        Some(d @ (Desired::Dispatched | Desired::Abandoned)) => {
            let to = if d == Desired::Abandoned { Status::Abandoned } else { Status::Dispatched };
            st.refuse(&format!("desired: {}", d.as_str()), &super::transitions::refusal(Status::Review, to));
            st.remove("desired");
            Effect::None
        }
        None => Effect::None,
    }
}

/// Send the work back: a new attempt on the branch of the attempt reviewed, its prompt given
/// the feedback. The one path of every revision — a person's request, and the automatic ones
/// (a failing check, a conflict, a reviewer's verdict) differ only in the feedback and where
/// it came from. It starts as capacity allows ([`super::dispatch`]); until then the commission
/// stays where it is and the request with it, so nothing of the feedback is lost.
pub(super) fn revise(revision: Revision) -> Effect {
    Effect::Revise(Box::new(revision))
}

/// What the dispatch of a revision writes, beyond any dispatch's: the request and its feedback
/// taken out of the artifact (they are in the record, which the prompt is made from, and the
/// timeline), the earlier attempt's result with them.
pub(super) fn start(st: &mut Step<'_>, revision: &Revision) {
    let feedback: Vec<serde_json::Value> = revision.feedback.iter().map(|f| json!(f)).collect();
    st.event(
        "revise",
        format!("revise:{}", revision.attempt),
        json!({
            "text": format!("attempt {} continues attempt {}'s work on {}", revision.attempt, revision.after, revision.branch),
            "attempt": revision.attempt,
            "after": revision.after,
            "branch": revision.branch,
            "from": revision.from.as_str(),
            "feedback": feedback,
        }),
    );
    st.go(Status::Dispatched, Reason::Revised { after: revision.after, items: revision.feedback.len(), from: revision.from.as_str() });
    st.remove("desired");
    st.remove("feedback");
    st.remove("result");
    st.remove("check_results");
}
