//! Which branch an id names for `guild-hall diff`, `worker/diff`, `plan/diff` and the board's
//! diff pane: a commission's latest attempt's, or a wave task's. The change itself, and how it
//! is shown, is [`crate::activity::diff`]'s.

use anyhow::Result;
use git2::Repository;

use crate::activity::names;
use crate::activity::state::{Record, StateDir};
use crate::config::{Home, Project};
use crate::tools::Failure;

use crate::activity::diff::{between, of_commit};
pub use crate::activity::diff::{Detail, Diff, Part};

/// The change of commission `id`'s latest attempt, or of the wave task `id` names (its
/// canonical id `<plan>:exec:wave-<W>:task-<T>`, as `logs` and `timeline` take it). An id with
/// no branch is not found.
pub fn of(home: &Home, project: &Project, id: &str, detail: Detail) -> Result<Diff> {
    let repo = crate::activity::git::open(&project.root)?;
    match super::plan::task(project, id)? {
        Some((_, task)) => task_change(&repo, project, &task, detail),
        None => between(&repo, &project.config.integration_branch, id, &commission_branch(home, project, &repo, id)?, detail),
    }
}

/// The change of plan `plan`'s task `task` (its canonical id, or a label no other task has).
pub fn of_task(project: &Project, plan: &str, task: &str, detail: Detail) -> Result<Diff> {
    let repo = crate::activity::git::open(&project.root)?;
    let plan = crate::plan::observe::load(project, plan)?;
    task_change(&repo, project, plan.find_task(task)?, detail)
}

/// A wave task's change. A task's worker leaves its work in its worktree, which guild-hall
/// copies back as one commit on the integration branch (its `Guild-Hall-Task:` trailer): once
/// copied back, the change is that commit's; before, it is what the task's branch holds beyond
/// its merge base (the worktree's files are the worker's, never read here).
fn task_change(repo: &Repository, project: &Project, task: &crate::artifact::plan::Task, detail: Detail) -> Result<Diff> {
    let branch = names::task_branch(&task.slug());
    let Ok(tip) = repo.find_branch(&branch, git2::BranchType::Local).and_then(|b| b.get().peel_to_commit()) else {
        return Err(Failure::not_found(format!(
            "task {} has no branch ({branch}): it has not started, or its branch is gone",
            task.canonical
        ))
        .into());
    };
    let integration = &project.config.integration_branch;
    let onto = repo.find_branch(integration, git2::BranchType::Local)?.get().peel_to_commit()?;
    let trailer = names::task_trailer(&task.canonical);
    match crate::activity::trailers::find_on_chain(repo, onto.id(), tip.id(), &trailer)? {
        Some(landed) => of_commit(repo, &task.canonical, &branch, landed, detail),
        None => between(repo, integration, &task.canonical, &branch, detail),
    }
}

/// Commission `id`'s latest attempt's branch: the one its artifact records (`branch:`), if it
/// is one of this commission's and is there, else the highest-numbered attempt's that is.
fn commission_branch(home: &Home, project: &Project, repo: &Repository, id: &str) -> Result<String> {
    crate::artifact::ids::validate_id(id)?;
    let state = StateDir(home.commission_state(&project.name, id));
    let path = project.commission_path(id);
    if !path.exists() && !state.0.exists() {
        // Said as `logs`, `timeline` and `status` say it.
        return Err(Failure::not_found(crate::artifact::Wording::COMMISSION.missing(id, &project.commissions_dir())).into());
    }
    // An artifact that does not read still has its record's attempts.
    let artifact = path.exists().then(|| super::commission::load(project, id).ok()).flatten();
    let recorded = crate::files::read_json::<Record>(&state.record())?.map_or(0, |r| r.attempt);
    let attempts = artifact.as_ref().map_or(0, |c| c.attempt()).max(recorded);
    let named = artifact.and_then(|c| c.owned.branch).filter(|b| {
        names::may_hold_work_of(crate::activity::kind::Name::Commission, id, b) && crate::activity::git::branch_exists(repo, b)
    });
    let numbered = (1..=attempts).rev().map(|n| names::commission_branch(id, n)).find(|b| crate::activity::git::branch_exists(repo, b));
    named.or(numbered).ok_or_else(|| {
        let why = match attempts {
            0 => "it has not been dispatched".to_string(),
            n => format!("none of its attempts' branches (1 to {n}) is there"),
        };
        Failure::not_found(format!("commission {id} has no branch: {why}")).into()
    })
}
