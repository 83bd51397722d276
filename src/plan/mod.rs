//! Plans and waves (design §9, Kiln's EXECUTE stage): a plan's tasks run in ordered waves,
//! in parallel inside a wave, and land on the integration branch by lossless copy-back in plan
//! order once the whole wave has succeeded and no two tasks collide; a verify gate between
//! waves, fix-forward when it fails; tasks and verify held to the liveness rules of
//! commissions, and after a crash each task resumed by its class (Kiln's). [`decide`] is the
//! pure state machine, [`observe`] and [`act`] its two sides, joined by [`Plans`], the kind the
//! reconcile pass drives; [`copyback`] the landing, [`mail`] a task's mailbox.

pub(crate) mod act;
pub(crate) mod copyback;
pub mod decide;
pub(crate) mod mail;
pub mod observe;

use std::time::Duration;

use anyhow::Result;

#[cfg(test)]
use crate::activity::kind;
use crate::activity::kind::{AtWork, Capacity, Ctx, Decided, Kind, Name};
use crate::activity::observed::{AtRest, Store};
use crate::activity::Outcome;
#[cfg(test)]
use crate::artifact::plan::PlanStatus;
use crate::artifact::Problem;
use crate::worker::Catalog;

/// Plans as a kind of the reconcile pass. `store`: what a watch observed in its earlier passes
/// (plans at rest, [`observe::at_rest`]); `None`: everything is read.
#[derive(Default)]
pub(crate) struct Plans<'a> {
    pub(crate) store: Option<&'a Store<AtRest>>,
}

impl Kind<Catalog> for Plans<'_> {
    const NAME: Name = Name::Plan;
    const ACT_ORDER: u8 = 1;
    const LAUNCHES: bool = true;
    type Snapshot = decide::Snapshot;
    type Action = decide::Action;

    /// `capacity`: the workers the project's and the home's caps allow besides its commissions
    /// (its own running wave tasks are counted by the decider).
    fn observe(&self, ctx: Ctx<'_, Catalog>, capacity: &Capacity) -> Result<(Self::Snapshot, Vec<Problem>)> {
        let now = crate::activity::timeline::timestamp(chrono::Utc::now());
        let (mut snapshot, problems) =
            observe::observe_cached(ctx.home, ctx.project, ctx.workers, &now, capacity.left_for_tasks(), self.store)?;
        snapshot.running_by_package = capacity.packages_for_tasks();
        Ok((snapshot, problems))
    }

    fn decide(&self, snapshot: &Self::Snapshot) -> Decided<decide::Action> {
        // Ended on the integration branch while the checkout says it is to run: left alone, said.
        let notes = snapshot.plans.iter().filter_map(|o| Some(o.integrated.as_ref()?.note(&o.plan.path))).collect();
        Decided { notes, ..Decided::actions(decide::decide(snapshot)) }
    }

    fn act(&self, ctx: Ctx<'_, Catalog>, _: &Self::Snapshot, action: &decide::Action) -> Result<Outcome> {
        act::act(&ctx, action)
    }

    /// A task or verify going stale or reaching its limit, one still going away.
    fn next_check(&self, snapshot: &Self::Snapshot) -> Option<Duration> {
        decide::next_check(snapshot)
    }

    /// Tasks and verify runs whose shim is at work (a shim killed or ending wakes the watcher).
    fn at_work(&self, ctx: Ctx<'_, Catalog>, snapshot: &Self::Snapshot) -> AtWork {
        let (home, project) = (ctx.home, ctx.project);
        let mut running = Vec::new();
        for o in &snapshot.plans {
            running.extend(o.tasks.iter().filter(|t| t.attempt.busy).map(|t| home.task_state(&project.name, &o.plan.id, &t.task.slug())));
            if o.verify.busy {
                running.push(home.verify_state(&project.name, &o.plan.id));
            }
        }
        AtWork { running, awaited_dirs: Vec::new() }
    }

    /// The plans of the project running or verifying (their tasks or verify at work).
    fn busy_after(&self, ctx: Ctx<'_, Catalog>) -> Result<Vec<String>> {
        let mut busy = Vec::new();
        for path in crate::artifact::paths(&ctx.project.plans_dir())? {
            let Some(id) = path.file_stem().and_then(|s| s.to_str()) else { continue };
            // At rest as this round observed it (only a pass writes a plan's record): not
            // running or verifying.
            if crate::artifact::ids::validate_id(id).is_err() || self.store.is_some_and(|s| s.holds(Name::Plan, &path)) {
                continue;
            }
            if let Ok(Some(r)) = observe::record(ctx.home, ctx.project, id) {
                if r.status.is_active() {
                    busy.push(id.to_string());
                }
            }
        }
        Ok(busy)
    }

    #[cfg(test)]
    fn requests() -> Vec<(&'static str, &'static str)> {
        kind::table(&PlanStatus::ALL, decide::person_may_request, PlanStatus::as_str)
    }
}
