//! Plans and waves (DESIGN §11, Kiln's EXECUTE stage): a plan's tasks run in ordered waves,
//! in parallel inside a wave, and land on the integration branch by lossless copy-back in plan
//! order once the whole wave has succeeded and no two tasks collide; a verify gate between
//! waves, fix-forward when it fails; tasks and verify held to the liveness rules of
//! commissions, and after a crash each task resumed by its class (Kiln's). [`decide`] is the
//! pure state machine, [`observe`] and [`act`] its two sides, [`copyback`] the landing,
//! [`mail`] a task's mailbox.

pub mod act;
pub mod copyback;
pub mod decide;
pub mod mail;
pub mod observe;

use anyhow::Result;

use crate::activity::Outcome;
use crate::artifact::Problem;
use crate::config::{Home, Project};
use crate::worker::Catalog;

/// One round of plans within a reconcile pass.
#[derive(Debug, Default)]
pub struct Round {
    /// Each action, what came of it, and how long it took.
    pub done: Vec<(decide::Action, Result<Outcome>, std::time::Duration)>,
    pub problems: Vec<Problem>,
    /// When to look again though nothing changes: a task or verify going stale or reaching
    /// its limit, one still going away.
    pub next_check: Option<std::time::Duration>,
    /// Runtime dirs of tasks and verify runs whose shim is at work: the watcher waits on them
    /// (a shim killed or ending wakes it at once).
    pub running: Vec<std::path::PathBuf>,
}

/// Observe, plan and (unless `dry_run`) act on the project's plans once. `slots`: the workers
/// the project's and the home's caps allow besides its commissions (its own running wave
/// tasks are counted by the planner).
pub fn round(home: &Home, project: &Project, workers: &Catalog, slots: usize, dry_run: bool) -> Result<Round> {
    let now = crate::activity::timeline::timestamp(chrono::Utc::now());
    let (snapshot, problems) = observe::observe(home, project, workers, &now, slots)?;
    let actions = decide::decide(&snapshot);
    let next_check = decide::next_check(&snapshot);
    let mut running = Vec::new();
    for o in &snapshot.plans {
        running.extend(o.tasks.iter().filter(|t| t.busy).map(|t| home.task_state(&project.name, &o.plan.id, &t.task.slug())));
        if o.verify_busy {
            running.push(home.verify_state(&project.name, &o.plan.id));
        }
    }
    let ctx = act::Ctx { home, project, workers };
    let mut done = Vec::new();
    for a in actions {
        let started = std::time::Instant::now();
        let result = if dry_run { Ok(Outcome::Done) } else { act::act(&ctx, &a) };
        // A heartbeat written is no progress to report (as for commissions): a worker that
        // prints all the time must not keep a pass going.
        if matches!(a, decide::Action::Beat { .. }) && result.is_ok() {
            continue;
        }
        done.push((a, result, started.elapsed()));
    }
    Ok(Round { done, problems, next_check, running })
}
