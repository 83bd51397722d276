//! What people and tools do to plans: write a new plan (validated as the reconciler will read
//! it, before anything is written) and ask for a transition (`retry`: `status: pending`,
//! `cancel`: `status: cancelled`) by writing it into the file as a person would.

use anyhow::{bail, Context, Result};
use serde_yaml_ng::Value;

use crate::artifact::plan::{Plan, PlanStatus, Task};
use crate::artifact::write::Edit;
use crate::config::{Home, Project};
use crate::plan::decide::PlanRecord;

/// A plan to write.
#[derive(Debug, Clone)]
pub struct NewPlan {
    pub title: String,
    /// The waves as written: a list of waves, each a list of tasks `{id, worker, title, prompt}`.
    pub waves: Value,
    /// Default: the title, slugified.
    pub id: Option<String>,
    pub parallelism: usize,
    /// The integration verify command, run after each wave.
    pub verify: Option<Vec<String>>,
    pub fixer: Option<String>,
    pub draft: bool,
}

/// Write a new plan artifact (the file a person would write); its id. Nothing is written for a
/// plan the reconciler would refuse, nor over a file that exists.
pub fn create(project: &Project, new: &NewPlan) -> Result<String> {
    let id = match &new.id {
        Some(i) => i.clone(),
        None => crate::artifact::ids::slugify(&new.title),
    };
    crate::artifact::ids::validate_id(&id)?;
    let path = project.plan_path(&id);
    let mut fm = serde_yaml_ng::Mapping::new();
    fm.insert("title".into(), new.title.as_str().into());
    fm.insert("status".into(), if new.draft { "draft" } else { "pending" }.into());
    fm.insert("parallelism".into(), (new.parallelism as u64).into());
    if let Some(v) = &new.verify {
        fm.insert("verify".into(), Value::Sequence(v.iter().map(|a| Value::from(a.as_str())).collect()));
    }
    if let Some(f) = &new.fixer {
        fm.insert("fixer".into(), f.as_str().into());
    }
    fm.insert("waves".into(), new.waves.clone());
    let text = format!("---\n{}---\n", serde_yaml_ng::to_string(&fm)?);
    // Validated as the reconciler will read it, before anything is written.
    Plan::parse(&path, &text).map_err(|p| anyhow::anyhow!("{}", p.iter().map(|p| p.to_string()).collect::<Vec<_>>().join("\n")))?;
    std::fs::create_dir_all(project.plans_dir())?;
    let mut f =
        std::fs::OpenOptions::new().write(true).create_new(true).open(&path).with_context(|| format!("creating {}", path.display()))?;
    std::io::Write::write_all(&mut f, text.as_bytes())?;
    Ok(id)
}

/// Where plan `plan` is: what the reconciler recorded, else what its file says.
pub fn status(plan: &Plan, record: Option<&PlanRecord>) -> PlanStatus {
    record.map(|r| r.status).or(plan.status).unwrap_or(PlanStatus::Pending)
}

/// Write `status: <to>` as a person would, after checking the request makes sense from where
/// the plan is now ([`status`]).
pub fn request(home: &Home, project: &Project, id: &str, to: PlanStatus) -> Result<()> {
    let plan = crate::plan::observe::load(project, id)?;
    let from = status(&plan, crate::plan::observe::record(home, project, id)?.as_ref());
    if !crate::plan::decide::person_may_request(from, to) {
        bail!("plan {id} is {from}: it cannot be set to {to} (retry a halted, failed or cancelled plan; cancel a pending, running, verifying or halted one)");
    }
    crate::meeting::act::edit_current(&plan.path, &[Edit::Set("status".into(), Value::String(to.as_str().into()))])?;
    Ok(())
}

/// A wave task named by its canonical id (`<plan>:exec:wave-<W>:task-<T>`): its plan and it;
/// `None` for an id of another shape (a commission's).
pub fn task(project: &Project, id: &str) -> Result<Option<(Plan, Task)>> {
    let Some((plan, _)) = id.split_once(":exec:") else { return Ok(None) };
    let plan = crate::plan::observe::load(project, plan)?;
    let task = plan.task(id).cloned().with_context(|| format!("plan {} has no task {id}", plan.id))?;
    Ok(Some((plan, task)))
}
