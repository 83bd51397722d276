//! Observe a project's plans: their artifacts and records, each task's exit and task updates,
//! the latest verify run and fix-forward commission, into the planner's [`Snapshot`].
//! Read-only.

use anyhow::Result;

use super::plan::{Observed, ObservedTask, PlanRecord, Snapshot};
use crate::activity::state::{read_json, ExitInfo, StateDir};
use crate::artifact::plan::Plan;
use crate::artifact::Problem;
use crate::config::{Home, Project};
use crate::worker::toolbox::mailbox;
use crate::worker::Catalog;

/// `slots`: workers the caps allow besides the project's commissions (see [`super::round`]).
pub fn observe(home: &Home, project: &Project, workers: &Catalog, now: &str, slots: usize) -> Result<(Snapshot, Vec<Problem>)> {
    let mut plans = Vec::new();
    let mut problems = Vec::new();
    for path in crate::artifact::paths(&project.plans_dir())? {
        match observe_one(home, project, workers, &path) {
            Ok(o) => plans.push(o),
            Err(p) => problems.extend(p),
        }
    }
    Ok((Snapshot { plans, now: now.to_string(), slots }, problems))
}

/// Read one plan artifact as it is now.
pub fn load(project: &Project, id: &str) -> Result<Plan> {
    crate::artifact::ids::validate_id(id)?;
    let path = project.plan_path(id);
    if std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink()) {
        anyhow::bail!("{}: symlink: plan artifacts must be regular files", path.display());
    }
    let text = std::fs::read_to_string(&path).map_err(|e| anyhow::anyhow!("no plan {id} ({}): {e}", path.display()))?;
    Plan::parse(&path, &text).map_err(|p| anyhow::anyhow!("{}", p.iter().map(|p| p.to_string()).collect::<Vec<_>>().join("\n")))
}

pub fn record(home: &Home, project: &Project, id: &str) -> Result<Option<PlanRecord>> {
    read_json(&StateDir(home.plan_state(&project.name, id)).record())
}

fn observe_one(home: &Home, project: &Project, workers: &Catalog, path: &std::path::Path) -> Result<Observed, Vec<Problem>> {
    let problem = |msg: String| vec![Problem::new(path, 1, 1, msg)];
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(problem("symlink: plan artifacts must be regular files (a link is never followed or replaced)".into()));
    }
    let text = std::fs::read_to_string(path).map_err(|e| problem(format!("cannot read: {e}")))?;
    let plan = Plan::parse(path, &text)?;
    let state = StateDir(home.plan_state(&project.name, &plan.id));
    let record: Option<PlanRecord> = read_json(&state.record()).map_err(|e| {
        problem(format!("its runtime record is corrupt ({e:#}); nothing is done for this plan until it is repaired or removed"))
    })?;
    let mut tasks = Vec::new();
    for t in plan.tasks() {
        let ts = StateDir(home.task_state(&project.name, &plan.id, &t.slug()));
        let exit: Option<ExitInfo> = read_json(&ts.exit()).map_err(|e| problem(format!("task {}: {e:#}", t.canonical)))?;
        let updates =
            mailbox::read(&ts.mailbox()).map_err(|e| problem(format!("task {}: its mailbox cannot be read: {e:#}", t.canonical)))?;
        let worker_problem = workers.for_commission(&t.worker).err();
        let worktree_exists = read_json::<crate::activity::worktree::WorktreeRecord>(&ts.worktree())
            .map_err(|e| problem(format!("task {}: {e:#}", t.canonical)))?
            .is_some_and(|w| std::fs::symlink_metadata(&w.path).is_ok());
        let started = started(&ts).map_err(|e| {
            problem(format!("task {}: {}", t.canonical, e.iter().map(|x| x.message.clone()).collect::<Vec<_>>().join("; ")))
        })?;
        let attempt = record.as_ref().and_then(|r| r.tasks.get(&t.canonical)).map(|r| r.attempt).unwrap_or(0);
        let died = attempt > 0 && died(&ts, attempt);
        tasks.push(ObservedTask { task: t.clone(), exit, updates, worker_problem, worktree_exists, started, died });
    }
    let vs = StateDir(state.0.join("verify"));
    let verify_exit = read_json(&vs.exit()).map_err(|e| problem(format!("verify: {e:#}")))?;
    let verify_started =
        started(&vs).map_err(|e| problem(format!("verify: {}", e.iter().map(|x| x.message.clone()).collect::<Vec<_>>().join("; "))))?;
    let verify_died = record.as_ref().is_some_and(|r| r.verify_runs > 0 && died(&vs, r.verify_runs));
    let fix_status = record.as_ref().filter(|r| r.fixes > 0).and_then(|r| {
        let id = super::plan::fix_id(&plan.id, r.wave, r.fixes);
        let text = std::fs::read_to_string(project.commission_path(&id)).ok()?;
        crate::artifact::Commission::parse(&project.commission_path(&id), &text).ok()?.status
    });
    let timeline_keys =
        crate::activity::timeline::keys(&crate::activity::timeline::path_for(path)).map_err(|e| problem(format!("{e:#}")))?;
    Ok(Observed { plan, record, tasks, verify_exit, verify_started, verify_died, fix_status, timeline_keys })
}

/// Whether the shim that took `attempt` in `state` is gone without recording its exit (killed,
/// or a reboot): the attempt is over, and failed.
fn died(state: &StateDir, attempt: u32) -> bool {
    if crate::worker::shim::shim_lock_held(state) {
        return false;
    }
    let exited = matches!(read_json::<ExitInfo>(&state.exit()), Ok(Some(x)) if x.attempt == attempt);
    let run = matches!(state.read_run(), Ok(Some(r)) if r.attempt == attempt && !crate::worker::shim::is_alive(&r));
    run && !exited
}

/// The attempt a shim has taken in `state` (its `run.json`, or `exit.json` when it could not
/// start), or `u32::MAX` while a shim holds the lock before recording it.
fn started(state: &StateDir) -> Result<Option<u32>, Vec<Problem>> {
    let p = |e: anyhow::Error| vec![Problem::new(&state.0, 1, 1, format!("{e:#}"))];
    if crate::worker::shim::shim_lock_held(state) {
        return Ok(Some(u32::MAX));
    }
    let run: Option<crate::activity::state::RunInfo> = read_json(&state.run()).map_err(p)?;
    Ok(run.map(|r| r.attempt))
}
