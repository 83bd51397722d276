//! Work that ended on the integration branch while the checkout's artifact says it is still to
//! run (a CI run or a teammate's home ran it; `guild-hall land` has not brought the statuses
//! into the checkout's branch yet): the integration branch's copy of an artifact, and the one
//! line `status`, `check` and `reconcile` say of it, for every kind that runs work.

use std::path::Path;

use crate::artifact::Problem;
use crate::config::Project;

use super::kind::Name;

/// A commission or plan the checkout's artifact says is to run while the integration branch's
/// copy of the same artifact says it ended there. Nothing is run for it here, and the checkout's
/// file is left as it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Integrated {
    pub(crate) kind: Name,
    pub(crate) id: String,
    /// What the checkout's file says (`pending` when it has no status).
    pub(crate) here: &'static str,
    /// What the integration branch's copy says.
    pub(crate) status: &'static str,
    /// The attempt that ended there (a commission's); `None` for a plan.
    pub(crate) attempt: Option<u32>,
    pub(crate) integration: String,
}

impl Integrated {
    /// One line: what is known, and what a person can do (`status`, `check` and `reconcile`
    /// say the same).
    pub fn describe(&self) -> String {
        let attempt = self.attempt.map(|n| format!(" (attempt {n})")).unwrap_or_default();
        format!(
            "{} on {}{attempt} while this checkout says {}: it is not run again here. `guild-hall land` brings the statuses into your branch",
            self.status, self.integration, self.here
        )
    }

    /// [`Integrated::describe`] as a note on the artifact's file (`path`): the line `check` and
    /// `reconcile` print.
    pub(crate) fn note(&self, path: &Path) -> Problem {
        Problem::at_key(path, "status", format!("{} {}: {}", self.kind, self.id, self.describe()))
    }
}

/// The text of the integration branch's copy of the file at `path` (in `project`'s checkout):
/// one blob read from `tree`, the integration branch's; `None` when it has none (or not text).
pub(crate) fn copy(project: &Project, path: &Path, repo: &git2::Repository, tree: &git2::Tree<'_>) -> Option<String> {
    let rel = path.strip_prefix(&project.root).ok()?;
    let blob = tree.get_path(rel).ok()?.to_object(repo).ok()?.into_blob().ok()?;
    String::from_utf8(blob.content().to_vec()).ok()
}

/// The copies of the integration branch to compare the checkout's artifacts with, by name and
/// tip: the local branch, then the remote's copy `sync` and `land` catch up with
/// (`origin/claude/main`: what CI or a teammate landed, in a clone whose own branch has not
/// caught up yet) — each only if the checkout does not hold it already (then its artifacts are
/// the checkout's, and a person's edit there since, a retry say, is what counts), and the
/// remote's only if the local branch does not hold it either.
pub(crate) fn tips(project: &Project, repo: &git2::Repository) -> Vec<(String, git2::Oid)> {
    let integration = &project.config.integration_branch;
    let head = repo.head().ok().and_then(|h| h.peel_to_commit().ok()).map(|c| c.id());
    let holds = |a: Option<git2::Oid>, b: git2::Oid| a.is_some_and(|a| a == b || repo.graph_descendant_of(a, b).unwrap_or(false));
    let local = repo.find_branch(integration, git2::BranchType::Local).ok().and_then(|b| b.get().peel_to_commit().ok()).map(|c| c.id());
    let remote = crate::activity::remote::tracking_ref(repo, integration).and_then(|r| {
        let tip = repo.find_reference(&r).ok()?.peel_to_commit().ok()?.id();
        Some((r.strip_prefix("refs/remotes/").unwrap_or(&r).to_string(), tip))
    });
    let mut out = Vec::new();
    if let Some(l) = local.filter(|l| !holds(head, *l)) {
        out.push((integration.clone(), l));
    }
    if let Some((name, r)) = remote.filter(|(_, r)| !holds(head, *r) && !holds(local, *r)) {
        out.push((name, r));
    }
    out
}

/// The integration branch's tree, if the branch exists.
pub(crate) fn tree(project: &Project) -> anyhow::Result<Option<git2::Oid>> {
    let repo = git2::Repository::open(&project.root)?;
    Ok(repo
        .find_branch(&project.config.integration_branch, git2::BranchType::Local)
        .ok()
        .and_then(|b| b.get().peel_to_tree().ok())
        .map(|t| t.id()))
}

/// The person's base branch ([`crate::activity::git::named_base`]) and its tree, if it exists
/// (a local branch, else a remote-tracking one such as `origin/main`) and is not the
/// integration branch: what a commission waiting on a dependency is told when the dependency
/// is there but not yet on the integration branch.
pub(crate) fn base_tree(project: &Project) -> Option<(String, git2::Oid)> {
    let repo = git2::Repository::open(&project.root).ok()?;
    let base = crate::activity::git::named_base(&repo, &project.config)?;
    if base == project.config.integration_branch {
        return None;
    }
    let branch = repo.find_branch(&base, git2::BranchType::Local).or_else(|_| repo.find_branch(&base, git2::BranchType::Remote)).ok()?;
    let tree = branch.get().peel_to_tree().ok()?.id();
    Some((base, tree))
}
