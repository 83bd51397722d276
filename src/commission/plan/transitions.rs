//! The commission state machine's transitions: which a person may request by editing
//! `status:` (DESIGN §4), which the reconciler itself makes (REQ-COM-5/6 plus `draft`), and
//! the reason given when a request is refused.

use crate::artifact::Status;

/// Transitions a person (or tool) may request by editing `status:` (DESIGN §4).
pub fn person_may_request(from: Status, to: Status) -> bool {
    use Status::*;
    matches!(
        (from, to),
        (Draft, Pending) | (Failed, Pending) | (Cancelled, Pending) | (Pending | Blocked | Dispatched | InProgress, Cancelled)
    )
}

/// The state machine's transitions the reconciler itself makes (REQ-COM-6, plus draft).
pub fn transition_allowed(from: Status, to: Status) -> bool {
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
        )
}

pub(super) fn refusal(from: Status, to: Status) -> String {
    use Status::*;
    match (from, to) {
        (_, Completed) => "only the reconciler marks a commission completed (the worker submits a result)".into(),
        (_, Dispatched | InProgress) => "dispatch by setting status: pending or desired: dispatched".into(),
        (Completed, _) => "a completed commission is final".into(),
        (Dispatched | InProgress, _) => format!("a running commission can only be cancelled, not set to {to}"),
        _ => format!("{from} -> {to} is not a transition of the commission state machine"),
    }
}
