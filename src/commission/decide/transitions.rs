//! The commission state machine's transitions: which a person may request by editing
//! `status:` (design §4), which the reconciler itself makes (REQ-COM-5/6 plus `draft`), and
//! the reason given when a request is refused.

use crate::artifact::{Desired, Status};

/// Transitions a person (or tool) may request by editing `status:` (design §4).
pub(crate) fn person_may_request(from: Status, to: Status) -> bool {
    use Status::*;
    matches!(
        (from, to),
        (Draft, Pending)
            | (Failed, Pending)
            | (Cancelled, Pending)
            | (Pending | Blocked | Dispatched | InProgress, Cancelled)
            // Given up for good (Guild Hall's `abandoned`).
            | (Pending | Blocked | Failed | Cancelled, Abandoned)
            // A rejection, as `guild-hall reject` writes it (`desired: rejected`).
            | (Review, Cancelled)
    )
}

#[cfg(test)]
/// The state machine's transitions the reconciler itself makes (REQ-COM-6, plus draft).
pub(crate) fn transition_allowed(from: Status, to: Status) -> bool {
    use Status::*;
    person_may_request(from, to)
        || matches!(
            (from, to),
            (Pending, Dispatched)
                | (Pending, Blocked)
                | (Blocked, Pending)
                | (Dispatched, InProgress)
                | (Dispatched, Failed)
                | (InProgress, Completed)
                | (InProgress, Failed)
                | (Dispatched, Completed)
                | (Dispatched | InProgress, Review)
                | (Review, Completed)
                | (Review, Dispatched)
                | (Review, Failed)
        )
}

/// Why a person's `status:` edit from `from` to `to` is refused: the true reason for every
/// pair the state machine does not allow (the whole table is tested).
pub(crate) fn refusal(from: Status, to: Status) -> String {
    use Status::*;
    match (from, to) {
        (Completed, _) => "a completed commission is final (its work is merged); write a new commission to do more".into(),
        (Abandoned, _) => "an abandoned commission is final (given up for good); write a new commission to do it after all".into(),
        (Review, _) => {
            "its work waits in review: approve it (desired: approved), send it back (desired: revised, with feedback:) or reject it (desired: rejected)".into()
        }
        (_, Review) => {
            "only the reconciler puts a commission in review, when its worker submits a result and review is required".into()
        }
        (_, Completed) => "only the reconciler marks a commission completed, when its worker submits a result".into(),
        (Dispatched | InProgress, _) => {
            format!("a running commission ({from}) can only be cancelled (status: cancelled), not set to {to}")
        }
        (Draft, Abandoned) => "a draft was never submitted, so there is nothing to give up; delete the file instead".into(),
        (Failed | Cancelled, Failed | Cancelled) => format!("the commission is already over ({from}); nothing to stop"),
        (Failed | Cancelled, _) => format!("a {from} commission is run again with status: pending, not {to}"),
        (Draft, Cancelled) => "a draft was never submitted, so there is nothing to cancel; delete the file instead".into(),
        (Draft, _) => format!("a draft is submitted with status: pending; the reconciler moves it on from there, not to {to}"),
        (Pending | Blocked, Draft) => "a submitted commission cannot go back to draft; cancel it (status: cancelled) instead".into(),
        (Blocked, Pending) => {
            "it waits on missing dependencies or its worker's package and becomes pending by itself once they exist (see reason:)".into()
        }
        (Pending | Blocked, Blocked) => {
            "only the reconciler blocks a commission, when a dependency or its worker's package is missing".into()
        }
        (Pending | Blocked, Dispatched | InProgress) => format!(
            "only the reconciler marks a commission {to}, when it starts its worker{}",
            if from == Blocked {
                " (this one waits on missing dependencies or its worker's package: see reason:)"
            } else {
                " (as capacity allows; dispatch: manual waits for desired: dispatched)"
            }
        ),
        (Pending | Blocked, Failed) => {
            "only the reconciler fails a commission, when an attempt fails; to stop it set status: cancelled".into()
        }
        _ => format!("{from} -> {to} is not a transition of the commission state machine"),
    }
}

/// Why a one-shot `desired:` request cannot be carried out from `status` (`None`: it can, or
/// it is done already — a dispatch of a running commission). What the decider refuses, asked
/// up front by the faces that write the request (tested against the decider itself).
pub(crate) fn desired_refusal(status: Status, desired: Desired) -> Option<String> {
    use Status::*;
    match (desired, status) {
        (Desired::Dispatched, Pending | Blocked | Draft | Failed | Cancelled | Dispatched | InProgress) => None,
        (Desired::Dispatched, Completed) => Some(refusal(Completed, Dispatched)),
        (Desired::Dispatched, Abandoned) => Some(refusal(Abandoned, Dispatched)),
        (Desired::Dispatched, Review) => Some(refusal(Review, Dispatched)),
        (Desired::Cancelled, Pending | Blocked | Dispatched | InProgress | Review) => None,
        (Desired::Cancelled, other) => Some(refusal(other, Cancelled)),
        (Desired::Abandoned, Pending | Blocked | Failed | Cancelled) => None,
        (Desired::Abandoned, other) => Some(refusal(other, Abandoned)),
        (Desired::Approved | Desired::Revised | Desired::Rejected, Review) => None,
        (d @ (Desired::Approved | Desired::Revised | Desired::Rejected), other) => Some(review_refusal(other, d)),
    }
}

/// Why a review request (approve, revise, reject) of a commission that is not in review is
/// refused.
pub(crate) fn review_refusal(status: Status, desired: Desired) -> String {
    let what = match desired {
        Desired::Approved => "approved",
        Desired::Revised => "sent back",
        _ => "rejected",
    };
    match status {
        Status::Completed => format!("only work in review is {what}; this one's work is merged already"),
        Status::Dispatched | Status::InProgress => {
            format!("only work in review is {what}; its worker is still at work (with review: required it goes to review once it submits)")
        }
        other => format!("only work in review is {what}; this commission is {other}"),
    }
}
