//! Where a worker's captured output is: a commission's attempt, a wave task's, a plan's last
//! verify run. Reading and showing it is the face's.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};

use crate::activity::state::{Record, StateDir};
use crate::config::{Home, Project};
use crate::files::read_json;

/// The log of commission or wave task `id` (a task by its canonical id) at `attempt`, else its
/// latest: the path and the attempt. An attempt it never had is refused naming the ones it had.
pub fn worker_log(home: &Home, project: &Project, id: &str, attempt: Option<u32>) -> Result<(PathBuf, u32)> {
    let (state, attempt, what, latest) = match super::plan::task(project, id)? {
        Some((plan, task)) => {
            let state = StateDir(home.task_state(&project.name, &plan.id, &task.slug()));
            let recorded =
                crate::plan::observe::record(home, project, &plan.id)?.and_then(|r| r.tasks.get(&task.canonical).map(|t| t.attempt));
            match attempt.or(recorded.filter(|a| *a > 0)) {
                Some(a) => (state, a, "task", recorded.unwrap_or(0)),
                None => bail!("{id} has not started yet: no logs"),
            }
        }
        None => {
            crate::artifact::ids::validate_id(id)?;
            let state = StateDir(home.commission_state(&project.name, id));
            if !project.commission_path(id).exists() && !state.0.exists() {
                // Said as `timeline` and `status` say it.
                return Err(
                    crate::tools::Failure::not_found(crate::artifact::Wording::COMMISSION.missing(id, &project.commissions_dir())).into()
                );
            }
            let recorded = read_json::<Record>(&state.record())?.map(|r| r.attempt).unwrap_or(0);
            let attempt = match attempt {
                Some(a) => a,
                None if recorded > 0 => recorded,
                None => bail!("{id} has not been dispatched yet: no logs"),
            };
            (state, attempt, "commission", recorded)
        }
    };
    let path = state.log(attempt);
    if (attempt == 0 || attempt > latest) && !path.exists() {
        let had = match latest {
            0 => "it has not run yet".to_string(),
            1 => "its attempts: 1".to_string(),
            n => format!("its attempts: 1 to {n}"),
        };
        return Err(crate::tools::Failure::not_found(format!("{what} {id} has no attempt {attempt} ({had})")).into());
    }
    Ok((path, attempt))
}

/// The log of plan `id`'s latest verify run (`verify`), or of its task `task` (its canonical
/// id, or a label no other task has: [`crate::artifact::plan::Plan::find_task`]) at its
/// latest attempt.
pub fn plan_log(home: &Home, project: &Project, id: &str, task: Option<&str>, verify: bool) -> Result<PathBuf> {
    let plan = crate::plan::observe::load(project, id)?;
    let record = crate::plan::observe::record(home, project, id)?;
    if verify {
        let runs = record.map(|r| r.verify_runs).unwrap_or(0);
        return Ok(StateDir(home.verify_state(&project.name, id)).log(runs));
    }
    let name = task.context("name a task (its canonical id or label), or --verify")?;
    let t = plan.find_task(name)?;
    let attempt = record.and_then(|r| r.tasks.get(&t.canonical).map(|x| x.attempt)).unwrap_or(1);
    Ok(StateDir(home.task_state(&project.name, id, &t.slug())).log(attempt))
}
