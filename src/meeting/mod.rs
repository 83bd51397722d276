//! Meetings, the synchronous half (DESIGN §10): the meeting artifact's state machine as a pure
//! planner ([`decide`]) fed by [`observe`] (the mailbox read incrementally into [`fold`]) and
//! carried out by [`act`] inside the same reconcile pass as commissions; live turns streamed
//! from the worker ([`turn`], [`events`]); notes on close ([`notes`]). Branch, worktree,
//! leftovers and squash merge are `activity`'s, shared with commissions. What people and tools
//! do to meetings (create, request, converge) is `crate::ops::meeting`, above the loop.

pub mod act;
pub mod decide;
pub mod events;
pub mod fold;
pub mod notes;
pub mod observe;
pub mod turn;

use anyhow::Result;

use crate::activity::Outcome;
use crate::artifact::Problem;
use crate::config::{Home, Project};
use crate::worker::Catalog;

/// One round of meetings within a reconcile pass: what was planned and what came of each.
#[derive(Debug, Default)]
pub struct Round {
    /// Each action, what came of it, and how long it took.
    pub done: Vec<(decide::Action, Result<Outcome>, std::time::Duration)>,
    pub problems: Vec<Problem>,
}

/// Observe, plan and (unless `dry_run`) act on the project's meetings once.
pub fn round(home: &Home, project: &Project, workers: &Catalog, dry_run: bool) -> Result<Round> {
    let now = crate::activity::timeline::timestamp(chrono::Utc::now());
    let (snapshot, problems) = observe::observe(home, project, workers, &now)?;
    let actions = decide::decide(&snapshot);
    let ctx = act::Ctx { home, project, workers };
    let done = actions
        .into_iter()
        .map(|a| {
            let started = std::time::Instant::now();
            let result = if dry_run { Ok(Outcome::Done) } else { act::act(&ctx, &a) };
            (a, result, started.elapsed())
        })
        .collect();
    Ok(Round { done, problems })
}
