//! Orphans and their collection: runtime dirs, worktrees, transcripts and branches of commissions,
//! meetings and plans whose artifact is gone. The inventory counts only what is provably ours
//! (under our home, named for the artifact; branches only beside such a dir), and `gc` removes only
//! that — never a branch with unmerged commits unless asked to.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::Serialize;

use crate::activity::kind::Name;
use crate::activity::state::{Record, StateDir};
use crate::activity::worktree::WorktreeRecord;
use crate::config::{worktree_prefix, Home, Project};
use crate::files::read_json;

/// A branch of an orphan, and whether its work is in the integration branch (or any other).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Branch {
    pub(crate) name: String,
    pub(crate) merged: bool,
}

/// What is left of one commission or meeting whose artifact is gone.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Orphan {
    /// A commission, meeting or plan.
    pub(crate) kind: Name,
    pub(crate) id: String,
    /// Where the artifact was.
    pub(crate) artifact: PathBuf,
    pub(crate) state_dir: Option<PathBuf>,
    /// Its worktrees (a commission or meeting has one; a plan, one per task and its verify).
    pub(crate) worktrees: Vec<PathBuf>,
    /// The runtime dir of each of `worktrees` (whose record says how to tear it down), by
    /// the paths guild-hall computes for it.
    #[serde(skip)]
    pub(crate) worktree_states: Vec<PathBuf>,
    pub(crate) transcript: Option<PathBuf>,
    pub(crate) branches: Vec<Branch>,
    /// A process of it is still alive: never collected.
    pub(crate) running: bool,
    /// Its worktree holds changes no branch has (or could not be read).
    pub(crate) unsecured_worktree: bool,
}

impl Orphan {
    /// Work that exists nowhere else: an unmerged branch or an unsecured worktree.
    pub(crate) fn unmerged(&self) -> bool {
        self.unsecured_worktree || self.branches.iter().any(|b| !b.merged)
    }

    /// One line: what is left.
    pub(crate) fn describe(&self) -> String {
        let mut left = Vec::new();
        if let Some(p) = &self.state_dir {
            left.push(format!("runtime dir {}", p.display()));
        }
        for p in &self.worktrees {
            left.push(format!("worktree {}{}", p.display(), if self.unsecured_worktree { " (with unsecured changes)" } else { "" }));
        }
        if let Some(p) = &self.transcript {
            left.push(format!("transcript {}", p.display()));
        }
        for b in &self.branches {
            left.push(format!("branch {}{}", b.name, if b.merged { "" } else { " (unmerged commits)" }));
        }
        let running = if self.running { "; a process of it is still running" } else { "" };
        format!("orphaned: its {} artifact is gone, left: {}{running}", self.kind, left.join(", "))
    }
}

fn ids_in(dir: &Path, strip_prefix: &str, strip_suffix: &str) -> BTreeSet<String> {
    let Ok(entries) = std::fs::read_dir(dir) else { return BTreeSet::new() };
    entries
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .filter_map(|n| n.strip_prefix(strip_prefix).and_then(|n| n.strip_suffix(strip_suffix)).map(str::to_string))
        .filter(|id| crate::artifact::ids::validate_id(id).is_ok())
        .collect()
}

fn exists(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok()
}

/// Every orphan of the project, commissions then meetings, by id.
pub(crate) fn inventory(home: &Home, project: &Project) -> Result<Vec<Orphan>> {
    let repo = crate::activity::git::open(&project.root)?;
    let integration =
        repo.find_branch(&project.config.integration_branch, git2::BranchType::Local).ok().and_then(|b| b.get().peel_to_commit().ok());
    let worktrees = home.worktrees_dir(&project.name);
    let boot = crate::worker::shim::boot_id();
    let mut out = Vec::new();
    for kind in [Name::Commission, Name::Meeting] {
        let (state_root, artifact_dir, prefix) = match kind {
            Name::Commission => (home.commissions_state(&project.name), project.commissions_dir(), worktree_prefix::COMMISSION),
            _ => (home.meetings_state(&project.name), project.meetings_dir(), worktree_prefix::MEETING),
        };
        let mut ids = ids_in(&state_root, "", "");
        ids.extend(ids_in(&worktrees, prefix, ""));
        if kind == Name::Meeting {
            ids.extend(ids_in(&home.transcripts_dir(&project.name), "", ".md"));
        }
        for id in ids {
            let artifact = artifact_dir.join(format!("{id}.md"));
            if exists(&artifact) {
                continue;
            }
            let state = StateDir(state_root.join(&id));
            let wt = if kind == Name::Commission { home.worktree(&project.name, &id) } else { home.meeting_worktree(&project.name, &id) };
            let transcript = home.transcript(&project.name, &id);
            let running = crate::worker::liveness::busy(&state, &boot) || crate::worker::liveness::turn_running(&state);
            let names: Vec<String> = match kind {
                Name::Commission => {
                    let attempts = read_json::<Record>(&state.record()).ok().flatten().map(|r| r.attempt).unwrap_or(0);
                    let mut names: Vec<String> = (1..=attempts.max(1)).map(|n| crate::activity::names::commission_branch(&id, n)).collect();
                    if let Ok(bs) = repo.branches(Some(git2::BranchType::Local)) {
                        for (b, _) in bs.flatten() {
                            if let Ok(Some(n)) = b.name() {
                                // `+` is in no id: every `<id>+<n>` is an attempt of this one.
                                if crate::activity::names::is_later_commission_branch(&id, n) {
                                    names.push(n.to_string());
                                }
                            }
                        }
                    }
                    names.sort();
                    names.dedup();
                    names
                }
                _ => vec![crate::activity::names::meeting_branch(&id)],
            };
            let mut branches = Vec::new();
            for name in names {
                let Ok(b) = repo.find_branch(&name, git2::BranchType::Local) else { continue };
                let Some(tip) = b.get().target() else { continue };
                let merged = reachable_elsewhere(&repo, tip, &name)
                    || integration.as_ref().is_some_and(|i| changes_present(&repo, tip, i).unwrap_or(false));
                branches.push(Branch { name, merged });
            }
            let worktrees: Vec<PathBuf> = exists(&wt).then_some(wt.clone()).into_iter().collect();
            let worktree_states = worktrees.iter().map(|_| state.0.clone()).collect();
            let unsecured_worktree = !worktrees.is_empty() && !clean(&wt, &repo);
            let orphan = Orphan {
                kind,
                id: id.clone(),
                artifact,
                state_dir: exists(&state.0).then(|| state.0.clone()),
                worktrees,
                worktree_states,
                transcript: (kind == Name::Meeting && exists(&transcript)).then_some(transcript),
                branches,
                running,
                unsecured_worktree,
            };
            out.push(orphan);
        }
    }
    out.extend(plan_orphans(home, project, &repo, integration.as_ref())?);
    Ok(out)
}

/// Whether a plan other than `orphan` whose artifact is still there has a task `slug` in its
/// state dir.
fn claimed_by_a_live_plan(home: &Home, project: &Project, orphan: &str, slug: &str) -> bool {
    ids_in(&home.plans_state(&project.name), "", "")
        .iter()
        .filter(|other| other.as_str() != orphan && exists(&project.plan_path(other)))
        .any(|other| exists(&home.task_state(&project.name, other, slug)))
}

/// Plans whose artifact is gone: their runtime dir, task and verify worktrees and branches.
fn plan_orphans(home: &Home, project: &Project, repo: &git2::Repository, integration: Option<&git2::Commit<'_>>) -> Result<Vec<Orphan>> {
    let state_root = home.plans_state(&project.name);
    let worktrees_dir = home.worktrees_dir(&project.name);
    let mut ids = ids_in(&state_root, "", "");
    ids.extend(ids_in(&worktrees_dir, worktree_prefix::VERIFY, ""));
    let boot = crate::worker::shim::boot_id();
    let mut out = Vec::new();
    for id in ids {
        let artifact = project.plan_path(&id);
        if exists(&artifact) {
            continue;
        }
        let state = home.plan_state(&project.name, &id);
        // Its tasks are the ones this home made for it, by its own record (`tasks/<slug>/` in
        // its state dir): never by the slug's prefix, which plan `a`'s and plan
        // `a-exec-wave-1`'s tasks share. A slug a plan still there also holds is that plan's.
        let task_slugs: Vec<String> = ids_in(&home.tasks_state(&project.name, &id), "", "")
            .into_iter()
            .filter(|slug| !claimed_by_a_live_plan(home, project, &id, slug))
            .collect();
        let (mut worktrees, mut worktree_states): (Vec<PathBuf>, Vec<PathBuf>) = task_slugs
            .iter()
            .map(|s| (home.task_worktree(&project.name, s), home.task_state(&project.name, &id, s)))
            .filter(|(w, _)| exists(w))
            .unzip();
        let verify = home.verify_worktree(&project.name, &id);
        if exists(&verify) {
            worktrees.push(verify);
            worktree_states.push(home.verify_state(&project.name, &id));
        }
        let running =
            task_slugs.iter().any(|slug| crate::worker::liveness::busy(&StateDir(home.task_state(&project.name, &id, slug)), &boot));
        let mut names: Vec<String> = Vec::new();
        if let Ok(bs) = repo.branches(Some(git2::BranchType::Local)) {
            for (b, _) in bs.flatten() {
                if let Ok(Some(n)) = b.name() {
                    let task = task_slugs.iter().any(|slug| n == crate::activity::names::task_branch(slug));
                    if task || n == crate::activity::names::verify_branch(&id) {
                        names.push(n.to_string());
                    }
                }
            }
        }
        let mut branches = Vec::new();
        for name in names {
            let Ok(b) = repo.find_branch(&name, git2::BranchType::Local) else { continue };
            let Some(tip) = b.get().target() else { continue };
            let merged =
                reachable_elsewhere(repo, tip, &name) || integration.is_some_and(|i| changes_present(repo, tip, i).unwrap_or(false));
            branches.push(Branch { name, merged });
        }
        let unsecured_worktree = worktrees.iter().any(|w| !clean(w, repo));
        out.push(Orphan {
            kind: Name::Plan,
            id: id.clone(),
            artifact,
            state_dir: exists(&state).then_some(state.clone()),
            worktrees,
            worktree_states,
            transcript: None,
            branches,
            running,
            unsecured_worktree,
        });
    }
    Ok(out)
}

/// Everything the branch changed since it left the integration branch is there, byte for
/// byte (how a squash merge leaves it). A later change to the same paths makes this false:
/// the branch then counts as unmerged, which only ever keeps more.
fn changes_present(repo: &git2::Repository, tip: git2::Oid, integration: &git2::Commit<'_>) -> Result<bool> {
    let base = repo.merge_base(tip, integration.id())?;
    let (base, branch, theirs) = (repo.find_commit(base)?.tree()?, repo.find_commit(tip)?.tree()?, integration.tree()?);
    let diff = repo.diff_tree_to_tree(Some(&base), Some(&branch), None)?;
    for d in diff.deltas() {
        let Some(path) = d.new_file().path().or_else(|| d.old_file().path()) else { return Ok(false) };
        let now = theirs.get_path(path).ok().map(|e| e.id());
        let want = (d.status() != git2::Delta::Deleted).then(|| d.new_file().id());
        if now != want {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The commit is in the history of another local branch (its work is kept there).
fn reachable_elsewhere(repo: &git2::Repository, tip: git2::Oid, own: &str) -> bool {
    let Ok(branches) = repo.branches(Some(git2::BranchType::Local)) else { return false };
    branches.flatten().any(|(b, _)| {
        b.name().ok().flatten() != Some(own)
            && b.get().target().is_some_and(|t| t == tip || repo.graph_descendant_of(t, tip).unwrap_or(false))
    })
}

/// A worktree with nothing in it that its branch lacks: no changes, no untracked files.
fn clean(wt: &Path, _repo: &git2::Repository) -> bool {
    let Ok(r) = git2::Repository::open(wt) else { return false };
    let mut opts = git2::StatusOptions::new();
    opts.include_untracked(true).recurse_untracked_dirs(true);
    r.statuses(Some(&mut opts)).is_ok_and(|s| s.is_empty())
}

/// One thing `gc` removed (or would).
#[derive(Debug, Clone, Serialize)]
pub struct Removed {
    pub kind: Name,
    pub id: String,
    /// `worktree`, `branch`, `transcript` or `runtime dir`.
    pub what: &'static str,
    /// A path, or a branch name.
    pub target: String,
}

/// An orphan `gc` left in place, and why.
#[derive(Debug, Clone, Serialize)]
pub struct Kept {
    pub kind: Name,
    pub id: String,
    pub reason: String,
}

#[derive(Debug, Default, Serialize)]
pub struct Collected {
    pub removed: Vec<Removed>,
    pub kept: Vec<Kept>,
}

/// Remove what the inventory proves is ours and unreferenced: the worktree, then the
/// branches, the transcript, and last the runtime dir (the proof, so an interrupted gc is
/// finished by the next). Running orphans are kept; so are those with unmerged work unless
/// `include_unmerged`. `dry_run` removes nothing and says what it would.
pub fn collect(home: &Home, project: &Project, dry_run: bool, include_unmerged: bool) -> Result<Collected> {
    let repo = crate::activity::git::open(&project.root)?;
    let mut done = Collected::default();
    for o in inventory(home, project)? {
        let keep = |reason: String| Kept { kind: o.kind, id: o.id.clone(), reason };
        if o.running {
            done.kept.push(keep("a process of it is still running".into()));
            continue;
        }
        if o.unmerged() && !include_unmerged {
            done.kept.push(keep(format!("{} (--include-unmerged removes it)", o.describe())));
            continue;
        }
        let mut removed = |what: &'static str, target: String| done.removed.push(Removed { kind: o.kind, id: o.id.clone(), what, target });
        for (wt, state) in o.worktrees.iter().zip(&o.worktree_states) {
            if !dry_run {
                // By the paths guild-hall computes for it, never by what a state file says; its
                // workspace's teardown first, as its runtime dir's record says.
                let rec = WorktreeRecord::expected(&project.root, wt, "", false)?;
                crate::worker::workspace::remove_worktree(&StateDir(state.clone()), &rec)?;
            }
            removed("worktree", wt.display().to_string());
        }
        for b in &o.branches {
            if !dry_run {
                if let Ok(mut br) = repo.find_branch(&b.name, git2::BranchType::Local) {
                    br.delete()?;
                }
            }
            removed("branch", b.name.clone());
        }
        if let Some(t) = &o.transcript {
            if !dry_run {
                crate::files::remove_if_exists(t)?;
            }
            removed("transcript", t.display().to_string());
        }
        if let Some(s) = &o.state_dir {
            if !dry_run {
                std::fs::remove_dir_all(s)?;
            }
            removed("runtime dir", s.display().to_string());
        }
    }
    Ok(done)
}
