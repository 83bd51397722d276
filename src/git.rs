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

/// Where one git CLI call runs, always named explicitly: guild-hall never lets git discover a
/// repository from a directory a worker can write (a worktree's `.git` file, its admin dir's
/// `commondir`), so a worker cannot redirect where guild-hall reads or commits.
struct At<'a> {
    git_dir: &'a Path,
    /// The repository's common dir, for a linked worktree's admin dir.
    common_dir: Option<&'a Path>,
    work_tree: Option<&'a Path>,
    index_file: Option<&'a Path>,
}

impl<'a> At<'a> {
    fn repo(common: &'a Path, work_tree: &'a Path) -> At<'a> {
        At { git_dir: common, common_dir: None, work_tree: Some(work_tree), index_file: None }
    }
}

/// Configuration that makes git run a program, switched off for every call of ours: a
/// worker that wrote any of it (in a worktree config, say) gets nothing run.
const NO_PROGRAMS: [&str; 6] =
    ["core.hooksPath=/dev/null", "core.fsmonitor=false", "commit.gpgSign=false", "gc.auto=0", "maintenance.auto=false", "core.pager=cat"];

/// Run the git CLI at `at` with a clean environment: no inherited `GIT_*` variable (some make
/// git run programs or read other config), no hooks or other configured programs, no prompts,
/// and our commit identity.
fn cli(at: &At<'_>, args: &[&str], identity: Option<&Signature<'_>>) -> Result<String> {
    let mut cmd = Command::new("git");
    for c in NO_PROGRAMS {
        cmd.arg("-c").arg(c);
    }
    cmd.args(args).current_dir(at.work_tree.unwrap_or(at.git_dir));
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("GIT_") {
            cmd.env_remove(k);
        }
    }
    cmd.env("GIT_DIR", at.git_dir).env("GIT_TERMINAL_PROMPT", "0");
    if let Some(c) = at.common_dir {
        cmd.env("GIT_COMMON_DIR", c);
    }
    if let Some(w) = at.work_tree {
        cmd.env("GIT_WORK_TREE", w);
    }
    if let Some(i) = at.index_file {
        cmd.env("GIT_INDEX_FILE", i);
    }
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

/// The repository's common dir (`.git` of the main checkout) for a project.
pub fn common_dir(project_root: &Path) -> Result<PathBuf> {
    Ok(canonical(open(project_root)?.commondir()))
}

/// A worktree as guild-hall made it, recorded at creation in state the worker cannot write.
/// Everything later (commit, merge, removal) goes by this record, never by what the worktree
/// now says about itself.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct WorktreeRecord {
    pub path: PathBuf,
    /// Its admin dir, `<common>/worktrees/<name>`.
    pub admin: PathBuf,
    pub common: PathBuf,
    pub branch: String,
    pub sparse: bool,
}

impl WorktreeRecord {
    /// What an older guild-hall (no record) made: the admin dir named after the worktree.
    pub fn assumed(project_root: &Path, path: &Path, branch: &str, sparse: bool) -> Result<WorktreeRecord> {
        let common = common_dir(project_root)?;
        let name = path.file_name().ok_or_else(|| GitError::Other(format!("{} has no file name", path.display())))?;
        Ok(WorktreeRecord { path: path.to_path_buf(), admin: common.join("worktrees").join(name), common, branch: branch.into(), sparse })
    }

    fn at(&self) -> At<'_> {
        At { git_dir: &self.admin, common_dir: Some(&self.common), work_tree: Some(&self.path), index_file: None }
    }

    /// What is `.git` of the worktree supposed to say.
    fn git_file(&self) -> String {
        format!("gitdir: {}\n", self.admin.display())
    }
}

/// Create the worktree at `path`, detached at `branch` (which must exist): a worker commits
/// on a detached HEAD and guild-hall moves the branch. Idempotent: an existing, complete
/// worktree made for `branch` is kept; a half-made one (ours: it only ever holds a worktree we
/// created, before any worker ran in it) is removed and made again.
pub fn add_worktree(project_root: &Path, path: &Path, branch: &str, sparse: bool) -> Result<WorktreeRecord> {
    let common = common_dir(project_root)?;
    let main = At::repo(&common, project_root);
    let name = path.file_name().and_then(|n| n.to_str()).ok_or_else(|| GitError::Other(format!("bad worktree path {}", path.display())))?;
    let rec = WorktreeRecord {
        path: path.to_path_buf(),
        admin: common.join("worktrees").join(name),
        common: common.clone(),
        branch: branch.into(),
        sparse,
    };
    if path.exists() {
        let intact = std::fs::read_to_string(path.join(".git")).is_ok_and(|t| t == rec.git_file())
            && cli(&rec.at(), &["status", "--porcelain"], None).is_ok_and(|s| s.trim().is_empty());
        if intact {
            return Ok(rec);
        }
        remove_worktree(&rec)?;
    }
    if rec.admin.exists() {
        // An admin dir of that name not pointing here is not ours to reuse or delete.
        return Err(GitError::Other(format!(
            "{} already exists for another worktree; remove it with `git worktree remove` or `git worktree prune`",
            rec.admin.display()
        )));
    }
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let p = path.to_string_lossy();
    cli(&main, &["worktree", "add", "--quiet", "--no-checkout", "--detach", &p, &format!("refs/heads/{branch}")], None)?;
    if std::fs::read_to_string(path.join(".git")).ok().as_deref() != Some(rec.git_file().as_str()) {
        return Err(GitError::Other(format!("git did not make the worktree's admin dir at {}", rec.admin.display())));
    }
    let tip = format!("refs/heads/{branch}");
    if sparse {
        // The patterns go in the worktree's own admin dir and sparse checkout is switched on for
        // this one checkout only: `git sparse-checkout set` would turn on worktree config in
        // the person's shared `.git/config`. The skip-worktree bits it leaves in the index keep
        // `git status` clean afterwards.
        std::fs::create_dir_all(rec.admin.join("info"))?;
        std::fs::write(rec.admin.join("info/sparse-checkout"), "/.lore/\n")?;
        let args = ["-c", "core.sparseCheckout=true", "-c", "core.sparseCheckoutCone=false", "checkout", "--quiet", "--detach", &tip];
        cli(&rec.at(), &args, None)?;
    } else {
        cli(&rec.at(), &["checkout", "--quiet", "--detach", &tip], None)?;
    }
    Ok(rec)
}

/// What securing a worktree's work found and did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Secured {
    /// Ways the worktree is no longer the one guild-hall made (the attempt must fail).
    pub tampered: Vec<String>,
    /// The commit holding the leftovers, if there were any.
    pub commit: Option<Oid>,
}

/// Ways the worktree differs from what guild-hall made: its `.git` file, its admin dir's
/// pointers, its HEAD. Read only; nothing found here is ever followed.
pub fn inspect(rec: &WorktreeRecord) -> Vec<String> {
    let mut found = Vec::new();
    let dot_git = rec.path.join(".git");
    match std::fs::symlink_metadata(&dot_git) {
        Err(_) => found.push("its .git file was removed".to_string()),
        Ok(m) if m.is_dir() => found.push("its .git was replaced by a repository of its own (git init)".to_string()),
        Ok(m) if !m.is_file() => found.push("its .git was replaced by a symlink".to_string()),
        Ok(_) => {
            if std::fs::read_to_string(&dot_git).ok().as_deref() != Some(rec.git_file().as_str()) {
                found.push("its .git file was rewritten to point elsewhere".to_string());
            }
        }
    }
    let read = |f: &str| std::fs::read_to_string(rec.admin.join(f)).map(|t| t.trim_end().to_string());
    match read("commondir") {
        Ok(c) if canonical(&rec.admin.join(&c)) == rec.common => {}
        Ok(_) => found.push("its admin dir's commondir was rewritten".to_string()),
        Err(_) => found.push(format!("its admin dir {} is missing or damaged", rec.admin.display())),
    }
    if let Ok(g) = read("gitdir") {
        if canonical(Path::new(&g)) != canonical(&dot_git) && Path::new(&g) != dot_git {
            found.push("its admin dir's gitdir was rewritten".to_string());
        }
    }
    if let Ok(head) = read("HEAD") {
        if let Some(target) = head.strip_prefix("ref: ") {
            if target != format!("refs/heads/{}", rec.branch) {
                found.push(format!("its HEAD was switched to {target}"));
            }
        }
    }
    found
}

/// Commit whatever the worker left in its worktree onto its branch, and adopt the commits it
/// made itself: tracked changes and untracked files, `.gitignore` respected (in a sparse
/// worktree, files outside the checkout are absent, never taken as deleted). Everything goes through the record and a fresh index
/// of ours (nothing the worker can write decides where), the worker's objects are copied into
/// the repository only after their hashes check out, and the branch moves only forward.
pub fn secure_work(rec: &WorktreeRecord, worker_objects: Option<&Path>, message: &str) -> Result<Secured> {
    if !rec.path.exists() {
        // Only guild-hall removes a worktree (a worker cannot remove the directory itself),
        // and only after securing it: a pass that died just after did this already.
        return Ok(Secured::default());
    }
    let mut out = Secured { tampered: inspect(rec), commit: None };
    let repo = Repository::open(&rec.common)?;
    let branch_ref = format!("refs/heads/{}", rec.branch);
    let tip = repo.find_reference(&branch_ref)?.peel_to_commit()?.id();
    let alternate = worker_objects.filter(|p| p.is_dir());
    // Where the worker's own commits got to (a detached HEAD), if that is readable and ours.
    let head = (|| {
        let h = std::fs::read_to_string(rec.admin.join("HEAD")).ok()?;
        let h = h.trim();
        let oid = match h.strip_prefix("ref: ") {
            Some(r) if r == branch_ref => tip,
            Some(_) => return None,
            None => Oid::from_str(h).ok()?,
        };
        Some(oid)
    })();
    let mut base = tip;
    if let Some(h) = head.filter(|h| *h != tip) {
        match adopt_objects(&repo, alternate, h, tip) {
            Ok(()) if repo.graph_descendant_of(h, tip).unwrap_or(false) => base = h,
            // Behind the branch: what it holds is already on the branch (a second run).
            Ok(()) if repo.graph_descendant_of(tip, h).unwrap_or(false) => {}
            Ok(()) => out.tampered.push(format!("its HEAD {h} does not descend from {}", rec.branch)),
            Err(e) => out.tampered.push(format!("its commits could not be adopted: {e}")),
        }
    }
    // A fresh index of our own, in our own temp dir: the worker's index is not trusted.
    let scratch = std::env::temp_dir().join(format!("guild-hall-index-{}", uuid::Uuid::new_v4().simple()));
    let index = scratch.to_string_lossy().into_owned();
    let result = (|| -> Result<Option<Oid>> {
        // The repository itself, an explicit work tree and our own index: nothing of the
        // worktree's admin dir (which the worker can write, or get pruned) is needed. The
        // worker's store is not visible here: every object this writes lands in the
        // repository (the worker's own commits were adopted above).
        let at = At { git_dir: &rec.common, common_dir: None, work_tree: Some(&rec.path), index_file: Some(&scratch) };
        let base_hex = base.to_string();
        cli(&at, &["read-tree", &base_hex], None)?;
        if rec.sparse {
            // Files outside the sparse checkout are absent, not deleted: add what is there,
            // and take removals only under `.lore/`.
            cli(&at, &["add", "--ignore-removal", "--", "."], None)?;
            if rec.path.join(".lore").exists() {
                cli(&at, &["add", "--all", "--", ".lore/"], None)?;
            }
        } else {
            cli(&at, &["add", "--all", "--", "."], None)?;
        }
        let tree = cli(&at, &["write-tree"], None)?.trim().to_string();
        let base_tree = repo.find_commit(base)?.tree_id().to_string();
        if tree == base_tree {
            return Ok(None);
        }
        let sig = signature(&repo)?;
        let commit = cli(&at, &["commit-tree", &tree, "-p", &base_hex, "-m", message], Some(&sig))?;
        Ok(Some(Oid::from_str(commit.trim())?))
    })();
    let _ = std::fs::remove_file(&index);
    out.commit = result?;
    let new_tip = out.commit.unwrap_or(base);
    if new_tip != tip {
        repo.reference_matching(&branch_ref, new_tip, true, tip, "guild-hall: the attempt's work")?;
    }
    Ok(out)
}

/// Copy every object reachable from `head` (and not from `tip`) that the repository lacks out
/// of the worker's store, each re-hashed on the way in: an object whose content does not match
/// its name is refused, so a worker cannot plant a false object for a later commit to trip
/// over. Parents before children and entries before their tree, so an interrupted copy never
/// leaves an object whose history or contents are missing.
fn adopt_objects(repo: &Repository, store: Option<&Path>, head: Oid, tip: Oid) -> Result<()> {
    let odb = repo.odb()?;
    if odb.exists(head) {
        return Ok(());
    }
    let Some(store) = store else { return Err(GitError::Other(format!("commit {head} is not in the repository"))) };
    // A second handle that also sees the worker's store, for reading only.
    let both = Repository::open(repo.path())?;
    let both_odb = both.odb()?;
    both_odb.add_disk_alternate(&store.to_string_lossy())?;
    let copy = |oid: Oid| -> Result<bool> {
        if odb.exists(oid) {
            return Ok(false);
        }
        let obj = both_odb.read(oid)?;
        if odb.write(obj.kind(), obj.data())? != oid {
            return Err(GitError::Other(format!("object {oid} in the worker's store is corrupt")));
        }
        Ok(true)
    };
    fn tree(both: &Repository, odb: &git2::Odb<'_>, copy: &dyn Fn(Oid) -> Result<bool>, t: Oid) -> Result<()> {
        if odb.exists(t) {
            return Ok(()); // present, and with it everything beneath
        }
        for entry in both.find_tree(t)?.iter() {
            match entry.kind() {
                Some(git2::ObjectType::Tree) => tree(both, odb, copy, entry.id())?,
                Some(git2::ObjectType::Commit) => {} // a submodule's commit lives in the submodule
                _ => {
                    copy(entry.id())?;
                }
            }
        }
        copy(t).map(|_| ())
    }
    let mut walk = both.revwalk()?;
    walk.push(head)?;
    walk.hide(tip)?;
    walk.set_sorting(git2::Sort::TOPOLOGICAL | git2::Sort::REVERSE)?;
    for c in walk {
        let c = c?;
        if odb.exists(c) {
            continue;
        }
        tree(&both, &odb, &copy, both.find_commit(c)?.tree_id())?;
        copy(c)?;
    }
    Ok(())
}

/// Remove the worktree (its work was secured by the caller) and its admin dir, both by the
/// record. Keeps the branch. Neither `git worktree remove` nor `prune` is used: they go by
/// each admin dir's `gitdir`, which a worker can rewrite or make dangling (prune would then
/// delete another attempt's admin dir, and with it the HEAD of its own commits).
pub fn remove_worktree(rec: &WorktreeRecord) -> Result<()> {
    if std::fs::symlink_metadata(&rec.path).is_ok() {
        std::fs::remove_dir_all(&rec.path)?;
    }
    if rec.admin.starts_with(rec.common.join("worktrees")) && rec.admin.exists() {
        std::fs::remove_dir_all(&rec.admin)?;
    }
    Ok(())
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MergeOutcome {
    Merged(Oid),
    /// A commit with the trailer is already on the integration branch (a re-run after a crash).
    AlreadyMerged(Oid),
    NothingToMerge,
    /// Conflicts (outside `.lore/`, or on a `.lore/` file a person committed): nothing was merged.
    Conflicts(Vec<String>),
    /// The integration branch is checked out with local changes the merge would touch.
    Waiting(String),
}

/// Squash-merge `activity` into `integration` as one commit, in memory. A conflict under
/// `.lore/` goes to the activity side when only guild-hall's merges changed the file on the
/// integration side; any other conflict aborts with the paths. A checkout of the integration
/// branch is advanced only if no locally modified file is touched.
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
            if path.starts_with(".lore/") && only_ours_changed(repo, int_commit.id(), base, &path)? {
                // Only guild-hall's own merges changed it on the integration side: the
                // activity's version is the newer word. A person's commit is never overwritten.
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

/// Whether every commit on `tip`'s side since `base` that changed `path` is one of guild-hall's
/// squash merges (it carries the `Guild-Hall-Commission:` trailer).
fn only_ours_changed(repo: &Repository, tip: Oid, base: Oid, path: &str) -> Result<bool> {
    let mut walk = repo.revwalk()?;
    walk.push(tip)?;
    walk.hide(base)?;
    let at = |tree: &git2::Tree<'_>| tree.get_path(Path::new(path)).ok().map(|e| e.id());
    for oid in walk {
        let commit = repo.find_commit(oid?)?;
        let mine = at(&commit.tree()?);
        let parents: Vec<_> = commit.parents().collect();
        let changed = if parents.is_empty() { mine.is_some() } else { parents.iter().any(|p| p.tree().ok().and_then(|t| at(&t)) != mine) };
        let ours = commit.message().is_ok_and(|m: &str| m.lines().any(|l| l.trim_start().starts_with("Guild-Hall-Commission: ")));
        if changed && !ours {
            return Ok(false);
        }
    }
    Ok(true)
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
    // guild-hall's own activity worktrees are never "a person's checkout" (a worker could
    // point its HEAD at the integration branch to stall every merge).
    let ours = |n: &&str| ["commission-", "meeting-", "task-"].iter().any(|p| n.starts_with(p));
    for name in names.iter().filter_map(|n| n.ok().flatten()).filter(|n| !ours(n)) {
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
