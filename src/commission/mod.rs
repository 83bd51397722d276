//! Commissions: observe (read the world into a snapshot), decide (pure: the state machine and
//! everything it decides) and act (one small idempotent effect per action), joined by
//! [`Commissions`], the kind the reconcile pass drives.

pub mod act;
pub mod decide;
pub mod observe;
pub(crate) mod questions;
pub(crate) mod reviewing;

use std::time::Duration;

use anyhow::{Context, Result};

use crate::activity::kind::{self, AtWork, Capacity, Ctx, Decided, Kind, Name};
use crate::activity::Outcome;
use crate::artifact::Problem;
#[cfg(test)]
use crate::artifact::Status;
use crate::worker::Catalog;
use decide::Action;
use observe::{Depth, Observations, Snapshot};

/// Commissions as a kind of the reconcile pass. `store`: what a watch observed in its earlier
/// passes (settled artifacts); `None`: everything is read.
#[derive(Default)]
pub(crate) struct Commissions<'a> {
    pub(crate) store: Option<&'a Observations>,
}

impl Kind<Catalog> for Commissions<'_> {
    const NAME: Name = Name::Commission;
    const ACT_ORDER: u8 = 2;
    const LAUNCHES: bool = true;
    type Snapshot = Snapshot;
    type Action = Action;

    /// The slots others hold are the round's `capacity`'s: other projects' workers, this
    /// project's orphans and wave tasks (the decider counts them against the caps).
    fn observe(&self, ctx: Ctx<'_, Catalog>, capacity: &Capacity) -> Result<(Snapshot, Vec<Problem>)> {
        let mut snapshot = observe::observe_cached(ctx.home, ctx.project, ctx.workers.clone(), Depth::Reconcile, self.store)
            .context("observing the project")?;
        snapshot.running_elsewhere = capacity.elsewhere;
        snapshot.running_orphans = capacity.orphans;
        snapshot.tasks_running = capacity.tasks;
        snapshot.daily_budget = capacity.daily;
        snapshot.running_by_package = capacity.by_package.clone();
        snapshot.max_concurrent = capacity.home_cap;
        let problems = snapshot.problems.clone();
        Ok((snapshot, problems))
    }

    /// Wave tasks share the project's and the home's caps with commissions: they get what
    /// those running and those dispatched now leave (the decider counted the tasks).
    fn decide(&self, snapshot: &Snapshot) -> Decided<Action> {
        let d = decide::decide(snapshot);
        let problems = decide::cycle_problems(snapshot, &d.cycles);
        let notes = snapshot.commissions.iter().filter_map(|o| Some(o.integrated.as_ref()?.note(&o.artifact.path))).collect();
        let holding = snapshot.commissions.iter().filter(|o| o.attempt.under_way()).count();
        let starting = d.actions.iter().filter(|a| matches!(a, Action::Dispatch { .. })).map(|a| kind::Action::id(a).to_string()).collect();
        // What plans decided after them count against `max_concurrent:` (their reviewers too).
        let package_starts = d
            .actions
            .iter()
            .filter_map(|a| match a {
                Action::Dispatch { worker, .. } | Action::StartReviewer { reviewer: worker, .. } => {
                    Some((kind::Action::id(a).to_string(), worker.clone()))
                }
                _ => None,
            })
            .collect();
        Decided { actions: d.actions, problems, notes, settled: d.settled, busy: d.busy, holding, starting, package_starts }
    }

    fn act(&self, ctx: Ctx<'_, Catalog>, snapshot: &Snapshot, action: &Action) -> Result<Outcome> {
        act::act(&ctx, snapshot, action)
    }

    fn next_check(&self, snapshot: &Snapshot) -> Option<Duration> {
        decide::next_check(snapshot)
    }

    fn at_work(&self, ctx: Ctx<'_, Catalog>, snapshot: &Snapshot) -> AtWork {
        let running = snapshot
            .commissions
            .iter()
            .filter(|o| o.attempt.under_way())
            .map(|o| ctx.home.commission_state(&ctx.project.name, o.id()))
            .collect();
        // Where missing dependencies would appear: the nearest existing directory of each, so a
        // blocked commission wakes when its file arrives.
        let root = &ctx.project.root;
        let mut awaited_dirs: Vec<_> = snapshot
            .commissions
            .iter()
            .flat_map(|o| &o.missing_deps)
            .filter_map(|d| root.join(d).ancestors().skip(1).find(|a| a.is_dir()).map(std::path::Path::to_path_buf))
            .filter(|d| d.starts_with(root))
            .collect();
        awaited_dirs.sort();
        awaited_dirs.dedup();
        AtWork { running, awaited_dirs }
    }

    #[cfg(test)]
    fn requests() -> Vec<(&'static str, &'static str)> {
        kind::table(&Status::ALL, decide::person_may_request, Status::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a person may request of a commission, as the board and operations read it.
    #[test]
    fn the_request_table() {
        let table = Commissions::requests();
        for want in [("draft", "pending"), ("failed", "pending"), ("cancelled", "pending"), ("in_progress", "cancelled")] {
            assert!(table.contains(&want), "{want:?} in {table:?}");
        }
        assert!(table.contains(&("failed", "abandoned")) && table.contains(&("blocked", "abandoned")), "{table:?}");
        assert_eq!(table.len(), 12, "{table:?}");
        assert!(!table.iter().any(|(_, to)| *to == "completed"), "{table:?}");
    }
}
