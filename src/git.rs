//! Git: branches, activity worktrees (full or sparse), committing what a worker left behind,
//! and the in-memory squash merge into the integration branch. It carries out what it is told
//! and never decides policy; it never deletes a branch or overwrites uncommitted work.
//!
//! git2 does refs, trees and the merge; the git CLI does worktree add/remove, sparse checkout
//! and staging, because libgit2 has no sparse-checkout and `git add -A --sparse` is the one
//! correct way to stage in a sparse worktree.

use std::path::{Path, PathBuf};
use std::process::Command;

use git2::{BranchType, Oid, Repository, Signature};

#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error(transparent)]
    Git(#[from] git2::Error),
    #[error("`git {args}` failed: {stderr}")]
    Cli { args: String, stderr: String },
    #[error("{0}")]
    Other(String),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

pub type Result<T> = std::result::Result<T, GitError>;

const FALLBACK_NAME: &str = "Guild Hall";
const FALLBACK_EMAIL: &str = "guild-hall@localhost";

/// Open the repository containing `project_root`.
pub fn open(project_root: &Path) -> Result<Repository> {
    Repository::discover(project_root).map_err(|_| GitError::Other(format!("{} is not inside a git repository", project_root.display())))
}

/// The repository's configured identity, else the fixed fallback.
pub fn signature(repo: &Repository) -> Result<Signature<'static>> {
    match repo.signature() {
        Ok(s) => Ok(s.to_owned()),
        Err(_) => Ok(Signature::now(FALLBACK_NAME, FALLBACK_EMAIL)?),
    }
}

pub fn branch_exists(repo: &Repository, branch: &str) -> bool {
    repo.find_branch(branch, BranchType::Local).is_ok()
}

/// Create `branch` at what `from` (a branch name or "HEAD") points to, unless it exists.
pub fn ensure_branch(repo: &Repository, branch: &str, from: &str) -> Result<bool> {
    if branch_exists(repo, branch) {
        return Ok(false);
    }
    let commit = if from == "HEAD" {
        repo.head()
            .and_then(|h| h.peel_to_commit())
            .map_err(|_| GitError::Other("the repository has no commits yet: make a first commit, then run guild-hall init".into()))?
    } else {
        repo.find_branch(from, BranchType::Local)
            .map_err(|_| GitError::Other(format!("branch {from:?} does not exist (run guild-hall init)")))?
            .get()
            .peel_to_commit()?
    };
    repo.branch(branch, &commit, false)?;
    Ok(true)
}

/// Whether `rel_path` exists in the tree at `branch`'s tip.
pub fn path_in_branch(repo: &Repository, branch: &str, rel_path: &str) -> Result<bool> {
    let Ok(b) = repo.find_branch(branch, BranchType::Local) else { return Ok(false) };
    Ok(b.get().peel_to_tree()?.get_path(Path::new(rel_path)).is_ok())
}

/// Run the git CLI in `dir` with a clean environment: no inherited repository variables, no
/// hooks, no prompts, and our commit identity.
fn cli(dir: &Path, args: &[&str], identity: Option<&Signature<'_>>) -> Result<String> {
    let mut cmd = Command::new("git");
    cmd.arg("-c").arg("core.hooksPath=/dev/null").args(args).current_dir(dir);
    for var in ["GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR"]
    {
        cmd.env_remove(var);
    }
    cmd.env("GIT_TERMINAL_PROMPT", "0");
    if let Some(sig) = identity {
        let (name, email) = (sig.name().unwrap_or(FALLBACK_NAME), sig.email().unwrap_or(FALLBACK_EMAIL));
        cmd.env("GIT_AUTHOR_NAME", name).env("GIT_AUTHOR_EMAIL", email).env("GIT_COMMITTER_NAME", name).env("GIT_COMMITTER_EMAIL", email);
    }
    let out = cmd.output()?;
    if !out.status.success() {
        return Err(GitError::Cli { args: args.join(" "), stderr: String::from_utf8_lossy(&out.stderr).trim().to_string() });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn canonical(p: &Path) -> PathBuf {
    p.canonicalize().unwrap_or_else(|_| p.to_path_buf())
}

/// Registered worktrees: (path, branch ref).
fn worktrees(project_root: &Path) -> Result<Vec<(PathBuf, Option<String>)>> {
    let out = cli(project_root, &["worktree", "list", "--porcelain"], None)?;
    let mut list = Vec::new();
    for block in out.split("\n\n") {
        let mut path = None;
        let mut branch = None;
        for line in block.lines() {
            if let Some(p) = line.strip_prefix("worktree ") {
                path = Some(canonical(Path::new(p)));
            } else if let Some(b) = line.strip_prefix("branch ") {
                branch = Some(b.to_string());
            }
        }
        if let Some(p) = path {
            list.push((p, branch));
        }
    }
    Ok(list)
}

pub fn worktree_registered(project_root: &Path, path: &Path) -> Result<bool> {
    let want = canonical(path);
    Ok(worktrees(project_root)?.iter().any(|(p, _)| *p == want))
}

/// Create the worktree at `path` on `branch` (made from `start` if missing). Idempotent: an
/// existing, complete worktree on `branch` is kept; a half-made one (ours: it only ever holds a
/// worktree we created, before any worker ran in it) is removed and made again.
pub fn add_worktree(project_root: &Path, path: &Path, branch: &str, start: &str, sparse: bool) -> Result<()> {
    let want_ref = format!("refs/heads/{branch}");
    if path.exists() {
        let here = canonical(path);
        let registered = worktrees(project_root)?.into_iter().find(|(p, _)| *p == here);
        let complete = registered.as_ref().is_some_and(|(_, b)| b.as_deref() == Some(want_ref.as_str()))
            && cli(path, &["status", "--porcelain"], None).is_ok_and(|s| s.trim().is_empty());
        if complete {
            return Ok(());
        }
        if registered.is_some() {
            cli(project_root, &["worktree", "remove", "--force", &path.to_string_lossy()], None)?;
        }
        if path.exists() {
            std::fs::remove_dir_all(path)?;
        }
    }
    cli(project_root, &["worktree", "prune"], None)?;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let p = path.to_string_lossy();
    let repo = open(project_root)?;
    if branch_exists(&repo, branch) {
        cli(project_root, &["worktree", "add", "--quiet", "--no-checkout", &p, branch], None)?;
    } else {
        cli(project_root, &["worktree", "add", "--quiet", "--no-checkout", "-b", branch, &p, start], None)?;
    }
    if sparse {
        cli(path, &["sparse-checkout", "set", "--no-cone", "/.lore/"], None)?;
    }
    cli(path, &["checkout", "--quiet", branch], None)?;
    Ok(())
}

/// Stage everything in the worktree (tracked changes and untracked files, `.gitignore`
/// respected, sparse-aware) and commit if anything changed.
pub fn commit_all(path: &Path, message: &str) -> Result<Option<Oid>> {
    if !path.exists() {
        return Ok(None);
    }
    cli(path, &["add", "--all", "--sparse"], None)?;
    let staged = cli(path, &["diff", "--cached", "--name-only"], None)?;
    if staged.trim().is_empty() {
        return Ok(None);
    }
    let repo = Repository::open(path)?;
    let sig = signature(&repo)?;
    cli(path, &["commit", "--quiet", "--no-verify", "-m", message], Some(&sig))?;
    let head = cli(path, &["rev-parse", "HEAD"], None)?;
    Ok(Some(Oid::from_str(head.trim())?))
}

/// Remove the worktree (its work was committed by the caller) and prune. Keeps the branch.
pub fn remove_worktree(project_root: &Path, path: &Path) -> Result<()> {
    if path.exists() {
        if worktree_registered(project_root, path)? {
            cli(project_root, &["worktree", "remove", "--force", &path.to_string_lossy()], None)?;
        }
        if path.exists() {
            std::fs::remove_dir_all(path)?;
        }
    }
    cli(project_root, &["worktree", "prune"], None)?;
    Ok(())
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MergeOutcome {
    Merged(Oid),
    /// A commit with the trailer is already on the integration branch (a re-run after a crash).
    AlreadyMerged(Oid),
    NothingToMerge,
    /// Conflicts outside `.lore/`: nothing was merged.
    Conflicts(Vec<String>),
    /// The integration branch is checked out with local changes the merge would touch.
    Waiting(String),
}

/// Squash-merge `activity` into `integration` as one commit, in memory. Conflicts under `.lore/`
/// go to the activity side; others abort with the paths. A checkout of the integration branch
/// is advanced only if no locally modified file is touched.
pub fn squash_merge(repo: &Repository, integration: &str, activity: &str, message: &str, trailer: &str) -> Result<MergeOutcome> {
    let int_ref_name = format!("refs/heads/{integration}");
    let int_commit = repo.find_branch(integration, BranchType::Local)?.get().peel_to_commit()?;
    let act_commit = repo.find_branch(activity, BranchType::Local)?.get().peel_to_commit()?;
    let base = repo.merge_base(int_commit.id(), act_commit.id())?;

    // Idempotency: look for our trailer on the integration branch since the fork point.
    let mut walk = repo.revwalk()?;
    walk.push(int_commit.id())?;
    walk.hide(base)?;
    walk.simplify_first_parent()?;
    for oid in walk {
        let oid = oid?;
        if repo.find_commit(oid)?.message().is_ok_and(|m| m.lines().any(|l| l.trim() == trailer)) {
            return Ok(MergeOutcome::AlreadyMerged(oid));
        }
    }

    let base_tree = repo.find_commit(base)?.tree()?;
    let int_tree = int_commit.tree()?;
    let act_tree = act_commit.tree()?;
    let mut index = repo.merge_trees(&base_tree, &int_tree, &act_tree, None)?;
    if index.has_conflicts() {
        let mut blocking = Vec::new();
        let conflicts: Vec<_> = index.conflicts()?.collect::<std::result::Result<_, _>>()?;
        for c in conflicts {
            let path = c
                .our
                .as_ref()
                .or(c.their.as_ref())
                .or(c.ancestor.as_ref())
                .map(|e| String::from_utf8_lossy(&e.path).into_owned())
                .unwrap_or_default();
            if path.starts_with(".lore/") {
                index.remove_path(Path::new(&path))?;
                if let Some(theirs) = c.their {
                    let mut entry = theirs;
                    entry.flags &= !0x3000; // clear the conflict stage bits
                    index.add(&entry)?;
                }
            } else {
                blocking.push(path);
            }
        }
        if !blocking.is_empty() {
            blocking.sort();
            blocking.dedup();
            return Ok(MergeOutcome::Conflicts(blocking));
        }
    }
    let tree_id = index.write_tree_to(repo)?;
    if tree_id == int_tree.id() {
        return Ok(MergeOutcome::NothingToMerge);
    }
    let tree = repo.find_tree(tree_id)?;

    // Checkouts of the integration branch must not lose a person's uncommitted change.
    let checkouts = checkouts_of(repo, &int_ref_name)?;
    let changed = changed_paths(repo, &int_tree, &tree)?;
    for wt in &checkouts {
        let touched = locally_modified(wt, &changed, &tree)?;
        if !touched.is_empty() {
            return Ok(MergeOutcome::Waiting(format!(
                "{integration} is checked out at {} with local changes to {}; commit or stash them",
                wt.display(),
                touched.join(", ")
            )));
        }
    }

    let sig = signature(repo)?;
    let full_message = format!("{}\n\n{trailer}\n", message.trim_end());
    let commit = repo.commit(None, &sig, &sig, &full_message, &tree, &[&int_commit])?;
    for wt in &checkouts {
        advance_checkout(wt, &tree, &changed)?;
    }
    repo.reference_matching(&int_ref_name, commit, true, int_commit.id(), &format!("guild-hall: squash-merge {activity}"))?;
    Ok(MergeOutcome::Merged(commit))
}

/// Bring a checkout's files and index for `changed` to `tree`. Files already there (an advance
/// interrupted by a crash) only get their index entry; the rest go through a safe checkout,
/// which never overwrites a local change.
fn advance_checkout(wt: &Path, tree: &git2::Tree<'_>, changed: &[String]) -> Result<()> {
    let wrepo = Repository::open(wt)?;
    let (done, todo): (Vec<&String>, Vec<&String>) = changed.iter().partition(|p| matches_target(wt, p, tree));
    if !todo.is_empty() {
        let mut co = git2::build::CheckoutBuilder::new();
        co.safe();
        for p in &todo {
            co.path(p.as_str());
        }
        // Objects are per handle: look the tree up in the checkout's own repository.
        let wtree = wrepo.find_tree(tree.id())?;
        wrepo.checkout_tree(wtree.as_object(), Some(&mut co))?;
    }
    if !done.is_empty() {
        let mut index = wrepo.index()?;
        for p in done {
            if wt.join(p).exists() {
                index.add_path(Path::new(p))?;
            } else {
                index.remove_path(Path::new(p))?;
            }
        }
        index.write()?;
    }
    Ok(())
}

/// Working directories (main and linked) whose HEAD is `refname`.
fn checkouts_of(repo: &Repository, refname: &str) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    if !repo.is_bare() {
        if let (Ok(head), Some(wd)) = (repo.find_reference("HEAD"), repo.workdir()) {
            if head.symbolic_target().ok().flatten() == Some(refname) {
                out.push(wd.to_path_buf());
            }
        }
    }
    let names = repo.worktrees()?;
    for name in names.iter().filter_map(|n| n.ok().flatten()) {
        let Ok(wt) = repo.find_worktree(name) else { continue };
        let Ok(wrepo) = Repository::open_from_worktree(&wt) else { continue };
        if wrepo.find_reference("HEAD").ok().and_then(|h| h.symbolic_target().ok().flatten().map(str::to_string)).as_deref()
            == Some(refname)
        {
            out.push(wt.path().to_path_buf());
        }
    }
    Ok(out)
}

fn changed_paths(repo: &Repository, from: &git2::Tree<'_>, to: &git2::Tree<'_>) -> Result<Vec<String>> {
    let diff = repo.diff_tree_to_tree(Some(from), Some(to), None)?;
    let mut paths = Vec::new();
    for d in diff.deltas() {
        for f in [d.old_file().path(), d.new_file().path()].into_iter().flatten() {
            let s = f.to_string_lossy().into_owned();
            if !paths.contains(&s) {
                paths.push(s);
            }
        }
    }
    Ok(paths)
}

fn matches_target(wt: &Path, path: &str, target: &git2::Tree<'_>) -> bool {
    let on_disk = Oid::hash_file(git2::ObjectType::Blob, wt.join(path)).ok();
    let wanted = target.get_path(Path::new(path)).ok().map(|e| e.id());
    on_disk == wanted
}

/// Which of `paths` have staged or unstaged changes (or are untracked) in the checkout at `wt`,
/// other than ones already equal to the merge result (an advance interrupted by a crash).
fn locally_modified(wt: &Path, paths: &[String], target: &git2::Tree<'_>) -> Result<Vec<String>> {
    let repo = Repository::open(wt)?;
    let mut opts = git2::StatusOptions::new();
    opts.include_untracked(true).recurse_untracked_dirs(true);
    let statuses = repo.statuses(Some(&mut opts))?;
    let mut touched = Vec::new();
    for s in statuses.iter() {
        if let Ok(p) = s.path() {
            if paths.iter().any(|c| c == p) && !s.status().is_ignored() && !matches_target(wt, p, target) {
                touched.push(p.to_string());
            }
        }
    }
    Ok(touched)
}
