//! Whose timeline an id names, for `guild-hall timeline`: a commission's, a meeting's, a
//! plan's, or a wave task's (its plan's entries for it, by canonical id). An id that names
//! artifacts of two kinds is refused, naming them; one that names none says so as `logs` does.

use anyhow::{bail, Result};
use serde_json::Value;

use crate::activity::timeline;
use crate::artifact::ids;
use crate::config::Project;

/// The timeline of the artifact `id` names (an artifact that is gone still has its timeline
/// file while it is there).
pub fn of(project: &Project, id: &str) -> Result<Vec<Value>> {
    if let Some((plan, task)) = super::plan::task(project, id)? {
        let all = timeline::read(&timeline::path_for(&plan.path))?;
        return Ok(all.into_iter().filter(|e| e["task"] == task.canonical.as_str()).collect());
    }
    ids::validate_id(id)?;
    let kinds = [("commission", project.commission_path(id)), ("meeting", project.meeting_path(id)), ("plan", project.plan_path(id))];
    let held: Vec<_> = kinds.iter().filter(|(_, artifact)| artifact.exists() || timeline::path_for(artifact).exists()).collect();
    match held.as_slice() {
        [] => Err(crate::tools::Failure::not_found(crate::artifact::Wording::COMMISSION.missing(id, &project.commissions_dir())).into()),
        [(_, artifact)] => timeline::read(&timeline::path_for(artifact)),
        more => {
            let named: Vec<String> = more.iter().map(|(kind, artifact)| format!("a {kind} ({})", artifact.display())).collect();
            bail!(
                "{id:?} is the id of {}: refused, it names no one timeline (`guild-hall meeting show {id}` and `guild-hall plan show {id}` show a meeting's and a plan's)",
                named.join(" and ")
            )
        }
    }
}
