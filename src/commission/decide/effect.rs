//! What one commission's step yields: its update (the one `Update` of every kind, with a
//! commission's record and folded mailbox), and the effect beyond it that [`super::decide`]
//! turns into actions. The state machine and the liveness rules both name these, so they live
//! below both.

use crate::activity::state::{Heartbeat, Record};
use crate::commission::observe::Folded;

/// A change to one commission ([`crate::activity::apply::Update`]): its record, and its
/// attempt's mailbox as folded by this update (written once its events are in the timeline).
pub(crate) type Update = crate::activity::apply::Update<Record, Option<Box<Folded>>>;

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Sig {
    Term,
    Kill,
}

/// What one commission needs beyond its update: the state machine (`machine`) and the liveness
/// rules (`liveness`) both name it, and [`decide`] turns it into actions (here, so neither of
/// the two depends on the other for it).
pub(super) enum Effect {
    None,
    Candidate {
        wants: bool,
    },
    Resume,
    Finish,
    /// Submitted, and a person reviews it: secure its work on its branch, then `review`.
    Hold,
    /// Approved in review: merged as a finish is.
    Approve,
    /// Sent back from review: a new attempt on the same branch ([`super::review::revise`]).
    Revise(Box<crate::artifact::commission::Revision>),
    Cleanup(&'static str),
    /// In review: start reviewer worker `index` of its `reviewers:` over the attempt's work.
    StartReviewer {
        index: usize,
        reviewer: String,
        /// How many reviewers it has.
        of: usize,
    },
    /// A reviewer's run is over: its worktree removed.
    ReviewerCleanup {
        index: usize,
    },
    /// A reviewer's shim is gone, processes of it are not: killed.
    ReviewerLeftovers {
        run: Option<crate::activity::state::RunInfo>,
        pids: Vec<i32>,
    },
    /// Reviewers no longer waited for: each (index, its run while alive, its leftover
    /// processes) stopped and its checkout removed.
    DropReviewers(Vec<(usize, Option<crate::activity::state::RunInfo>, Vec<i32>)>),
    /// Every reviewer worker approved (`review: auto`): merged as a finish is.
    ReviewersApproved {
        count: usize,
    },
    Signal(Sig),
    KillLeftovers,
    Beat(Heartbeat),
}
