//! Activity worktrees, made and taken back by guild-hall alone: created detached at the
//! activity's branch (full or sparse), recorded, and reset for another run; at the end, the
//! worker's commits and leftovers secured onto its branch by that record (never by what the
//! worktree now says), its objects adopted only after their hashes check out; then the worktree
//! removed by record. Git never runs here with a worktree's admin dir as its git dir.

use std::path::{Path, PathBuf};

use git2::{Oid, Repository};

use super::git::{canonical, cli, cli_raw, common_dir, signature, At, GitError, Result};
use crate::config::{human_size, MergeLimits};

/// A worktree as guild-hall made it, recorded at creation in state the worker cannot write.
/// Everything later (commit, merge, removal) goes by this record, never by what the worktree
/// now says about itself.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct WorktreeRecord {
    pub(crate) path: PathBuf,
    /// Its admin dir, `<common>/worktrees/<name>`.
    pub(crate) admin: PathBuf,
    pub(crate) common: PathBuf,
    pub(crate) branch: String,
    pub(crate) sparse: bool,
}

impl WorktreeRecord {
    /// The record guild-hall makes for a worktree at `path` (computed from the activity's id,
    /// never read from a file) on `branch`: its admin dir is the one git names after it.
    pub(crate) fn expected(project_root: &Path, path: &Path, branch: &str, sparse: bool) -> Result<WorktreeRecord> {
        let common = common_dir(project_root)?;
        let name = path.file_name().ok_or_else(|| GitError::Other(format!("{} has no file name", path.display())))?;
        Ok(WorktreeRecord { path: path.to_path_buf(), admin: common.join("worktrees").join(name), common, branch: branch.into(), sparse })
    }

    /// Where the index of guild-hall's own checkout of a full worktree is kept, beside the
    /// worktree (where its worker cannot write): the stat data of every file as checked out,
    /// so securing the work rehashes only what changed ([`secure_work`]).
    pub(crate) fn checkout_index(&self) -> PathBuf {
        let name = self.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        self.path.with_file_name(format!(".{name}.index"))
    }

    /// What an older guild-hall (no record) made: the admin dir named after the worktree.
    pub(crate) fn assumed(project_root: &Path, path: &Path, branch: &str, sparse: bool) -> Result<WorktreeRecord> {
        Self::expected(project_root, path, branch, sparse)
    }

    /// Git on the repository with this worktree's files and an index of our own (`index`, a
    /// scratch file), for one look at it: nothing of the worktree's admin dir is trusted, and
    /// the filter drivers to switch off are looked up once for all of its calls.
    pub(crate) fn with_index<'a>(&'a self, index: &'a Path) -> WithIndex<'a> {
        WithIndex { rec: self, at: At::repo(&self.common, &self.path, Some(index)), untracked: Default::default() }
    }

    /// What is `.git` of the worktree supposed to say.
    fn git_file(&self) -> String {
        format!("gitdir: {}\n", self.admin.display())
    }
}

/// The record in `state_file` of the worktree guild-hall made at `path` on `branch` — both
/// computed by the caller from the activity's id — or `None` if there is none. A record that
/// names any other path, admin dir or repository is refused with an error naming the file:
/// nothing is committed from, moved by or deleted under what a state file says. One for
/// another branch at the same paths is an earlier attempt's, and counts as none.
pub(crate) fn recorded(state_file: &Path, project_root: &Path, path: &Path, branch: &str) -> Result<Option<WorktreeRecord>> {
    let Some(rec) = crate::files::read_json::<WorktreeRecord>(state_file).map_err(|e| GitError::Other(format!("{e:#}")))? else {
        return Ok(None);
    };
    let want = WorktreeRecord::expected(project_root, path, branch, rec.sparse)?;
    let wrong = differences(&rec, &want);
    if wrong.is_empty() && rec.branch != want.branch {
        // The same paths on another branch: the record of an earlier attempt (an older
        // guild-hall wrote none for this one). It says nothing about this attempt.
        return Ok(None);
    }
    if !wrong.is_empty() {
        return Err(GitError::Other(format!(
            "{}: not the worktree guild-hall made, so nothing is committed from or removed by it: {}",
            state_file.display(),
            wrong.join("; ")
        )));
    }
    Ok(Some(want))
}

/// A path compared by where it is: its parent resolved (it may itself be gone).
pub(crate) fn place(p: &Path) -> PathBuf {
    let p = p.components().as_path();
    match (p.parent().and_then(|d| d.canonicalize().ok()), p.file_name()) {
        (Some(dir), Some(name)) => dir.join(name),
        _ => p.to_path_buf(),
    }
}

/// Where `rec` (read from a state file) is not the worktree guild-hall makes at `want`'s place:
/// its path, admin dir or repository. Paths are compared by where they are (the parent
/// resolved: the worktree itself may be gone).
pub(crate) fn differences(rec: &WorktreeRecord, want: &WorktreeRecord) -> Vec<String> {
    let mut wrong = Vec::new();
    if place(&rec.path) != place(&want.path) {
        wrong.push(format!("path {} (guild-hall's is {})", rec.path.display(), want.path.display()));
    }
    if place(&rec.admin) != place(&want.admin) {
        wrong.push(format!("admin dir {} (guild-hall's is {})", rec.admin.display(), want.admin.display()));
    }
    if place(&rec.common) != place(&want.common) {
        wrong.push(format!("repository {} (the project's is {})", rec.common.display(), want.common.display()));
    }
    wrong
}

/// [`recorded`], or for an activity without a record (an older guild-hall's) the record as
/// guild-hall would have made it.
pub(crate) fn recorded_or_assumed(state_file: &Path, project_root: &Path, path: &Path, branch: &str) -> Result<WorktreeRecord> {
    match recorded(state_file, project_root, path, branch)? {
        Some(rec) => Ok(rec),
        None => WorktreeRecord::assumed(project_root, path, branch, false),
    }
}

/// Create the worktree at `path`, detached at `branch` (which must exist): a worker commits
/// on a detached HEAD and guild-hall moves the branch. Idempotent: an existing worktree made
/// for `branch` whose checkout completed (its index written) and that is as guild-hall made it
/// is kept; a half-made one (ours: it only ever holds a worktree we created) is removed and
/// made again. Nothing here runs git with the worktree's admin dir.
pub(crate) fn add_worktree(project_root: &Path, path: &Path, branch: &str, sparse: bool) -> Result<WorktreeRecord> {
    let rec = WorktreeRecord::expected(project_root, path, branch, sparse)?;
    let main = At::repo(&rec.common, project_root, None);
    if path.exists() {
        let intact = inspect(&rec).is_empty() && std::fs::symlink_metadata(rec.admin.join("index")).is_ok_and(|m| m.is_file());
        if intact {
            return Ok(rec);
        }
        remove_worktree(&rec)?;
    }
    if rec.admin.exists() && abandoned_admin_dir(&rec) {
        // Ours (named from the activity's id, pointing at its worktree or at nothing yet) and
        // its worktree never made: what a process killed inside `git worktree add` leaves.
        // Nothing of a worker's is in it (no worktree ever ran): pruned, and made again.
        tracing::warn!(admin = %rec.admin.display(), worktree = %path.display(), "pruning the admin dir of a worktree never made (a crash's leftover)");
        let _one = admin_dirs();
        std::fs::remove_dir_all(&rec.admin)?;
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
    {
        let _one = admin_dirs();
        // `--no-checkout` reads and writes no file's content, so no filter driver can run: the
        // lookup of the ones to switch off (a git process of its own) is skipped.
        main.no_filters_needed();
        cli(&main, &["worktree", "add", "--quiet", "--no-checkout", "--detach", &p, &format!("refs/heads/{branch}")], None)?;
    }
    if std::fs::read_to_string(path.join(".git")).ok().as_deref() != Some(rec.git_file().as_str()) {
        return Err(GitError::Other(format!("git did not make the worktree's admin dir at {}", rec.admin.display())));
    }
    // With `extensions.worktreeConfig`, git copies the main checkout's `config.worktree` and
    // sparse patterns into a new worktree's admin dir: they are the person's checkout's, not
    // this one's (a worktree of ours has no config of its own: see [`inspect`]).
    for copied in ["config.worktree", "info/sparse-checkout"] {
        crate::files::remove_if_exists(&rec.admin.join(copied)).map_err(|e| GitError::Other(format!("{e:#}")))?;
    }
    if sparse {
        // The patterns go in the worktree's own admin dir, for the worker's git; sparse checkout
        // is switched on for our checkout only: `git sparse-checkout set` would turn on worktree
        // config in the person's shared `.git/config`. The skip-worktree bits it leaves in the
        // index keep `git status` clean afterwards.
        std::fs::create_dir_all(rec.admin.join("info"))?;
        std::fs::write(rec.admin.join("info/sparse-checkout"), SPARSE_PATTERNS)?;
    }
    let tip = Repository::open(&rec.common)?.refname_to_id(&format!("refs/heads/{branch}"))?;
    check_out(&rec, tip, None)?;
    Ok(rec)
}

/// Whether the admin dir of `rec` (whose worktree is not there) is one `git worktree add` began
/// for this very worktree and never finished: its `gitdir` names `rec`'s worktree, or it was
/// not written yet (git writes it first thing after the dir and its `locked` file). One whose
/// `gitdir` names any other place is another worktree's, never ours to remove.
fn abandoned_admin_dir(rec: &WorktreeRecord) -> bool {
    if std::fs::symlink_metadata(&rec.path).is_ok() || !std::fs::symlink_metadata(&rec.admin).is_ok_and(|m| m.is_dir()) {
        return false;
    }
    match std::fs::read_to_string(rec.admin.join("gitdir")) {
        Ok(gitdir) => {
            let named = Path::new(gitdir.trim_end());
            named == rec.path.join(".git") || place(named) == place(&rec.path.join(".git"))
        }
        Err(e) => e.kind() == std::io::ErrorKind::NotFound,
    }
}

/// What a sparse worktree checks out: `.lore/` alone.
const SPARSE_PATTERNS: &str = "/.lore/\n";

/// What a reset removes besides the changes to tracked files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Clean {
    /// Untracked files (`git clean -fd`); ignored ones (build output) stay.
    Untracked,
    /// Untracked and ignored files alike (`git clean -fdx`).
    All,
}

/// Bring a worktree a worker ran in back to `commit` for another run (a task's retry, a
/// verify's next run): `HEAD` detached there, every tracked file as it is there (in a sparse
/// worktree, `.lore/` alone), untracked files removed as `clean` says. Refused, naming what was
/// found, if the worktree is not as guild-hall made it ([`inspect`]): the caller makes it anew.
pub(crate) fn reset_worktree(rec: &WorktreeRecord, commit: Oid, clean: Clean) -> Result<()> {
    let found = inspect(rec);
    if !found.is_empty() {
        return Err(GitError::Other(format!("not as guild-hall made it: {}", found.join("; "))));
    }
    check_out(rec, commit, Some(clean))
}

/// Check `commit` out into the worktree with a git dir of our own — a private temp dir holding
/// `HEAD`, `commondir`, the index and the sparse patterns — in place of the worktree's admin
/// dir, which the worker can write (a `config.worktree` there is config git would read, and
/// run a filter it names). Unchanged files keep their stat data (the index is refreshed from
/// them first), so a build in the worktree does not start over. Then the index and `HEAD` we
/// made are installed into the admin dir, each by an atomic rename (a link planted there is
/// replaced, never followed), for the worker's own git.
fn check_out(rec: &WorktreeRecord, commit: Oid, clean: Option<Clean>) -> Result<()> {
    let own = tempfile::Builder::new().prefix("guild-hall-gitdir-").tempdir()?;
    let dir = own.path();
    let hex = commit.to_string();
    std::fs::write(dir.join("HEAD"), format!("{hex}\n"))?;
    std::fs::write(dir.join("commondir"), format!("{}\n", rec.common.display()))?;
    let sparse = if rec.sparse {
        std::fs::create_dir_all(dir.join("info"))?;
        std::fs::write(dir.join("info/sparse-checkout"), SPARSE_PATTERNS)?;
        "core.sparseCheckout=true"
    } else {
        "core.sparseCheckout=false"
    };
    let index = dir.join("index");
    let at = At::private(dir, &rec.common, &rec.path, &index);
    let with = |args: &[&str]| -> Vec<String> {
        ["-c", sparse, "-c", "core.sparseCheckoutCone=false"].iter().chain(args).map(|a| a.to_string()).collect()
    };
    let run = |args: &[&str]| -> Result<String> {
        let all = with(args);
        cli(&at, &all.iter().map(String::as_str).collect::<Vec<_>>(), None)
    };
    match clean {
        // A new worktree (nothing checked out yet) has no file to keep: one command reads the
        // tree and writes what the sparse patterns let in (a refresh would `lstat` every
        // tracked path in vain: the most of a dispatch's time in a large repository).
        None => drop(run(&["read-tree", "--reset", "-u", &hex])?),
        Some(clean) => {
            run(&["read-tree", &hex])?;
            // Files already as they are at `commit` get their stat data, so the reset leaves
            // them be; those that are not are only reported (exit 1), and the reset writes them.
            let _ = run(&["update-index", "-q", "--refresh"]);
            run(&["reset", "--quiet", "--hard", &hex])?;
            match clean {
                Clean::Untracked => drop(run(&["clean", "-fdq"])?),
                Clean::All => drop(run(&["clean", "-fdxq"])?),
            }
        }
    }
    let installed = std::fs::read(&index)?;
    let put =
        |name: &str, bytes: &[u8]| crate::files::write_atomic(&rec.admin.join(name), bytes).map_err(|e| GitError::Other(format!("{e:#}")));
    // Our own copy first, out of the worker's reach: only a full checkout's is worth keeping
    // (a sparse one's files are few, and its skip-worktree bits must not steer `git add`).
    let ours = rec.checkout_index();
    if rec.sparse {
        let _ = std::fs::remove_file(&ours);
    } else {
        crate::files::write_atomic(&ours, &installed).map_err(|e| GitError::Other(format!("{e:#}")))?;
    }
    put("index", &installed)?;
    put("HEAD", format!("{hex}\n").as_bytes())?;
    Ok(())
}

/// What securing a worktree's work found and did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Secured {
    /// Ways the worktree is no longer the one guild-hall made (the attempt must fail).
    pub(crate) tampered: Vec<String>,
    /// What was left out for the merge limits, each file named with its size: never read,
    /// hashed or stored (the attempt must fail; the rest of its work is on the branch).
    pub(crate) too_large: Vec<String>,
    /// The commit holding the leftovers, if there were any.
    pub(crate) commit: Option<Oid>,
}

/// Ways the worktree differs from what guild-hall made: its `.git` file, its admin dir's
/// pointers, its HEAD, a config file in its admin dir. Read only; nothing found here is ever
/// followed.
pub(crate) fn inspect(rec: &WorktreeRecord) -> Vec<String> {
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
    // A worktree of ours has no config of its own; one written there is configuration the
    // worktree's git reads (`config.worktree`, with `extensions.worktreeConfig`; `config`,
    // were its `commondir` gone) and could name a program to run.
    for name in ["config.worktree", "config"] {
        if std::fs::symlink_metadata(rec.admin.join(name)).is_ok() {
            found.push(format!("a git config was planted in its admin dir ({})", rec.admin.join(name).display()));
        }
    }
    found
}

/// Commit whatever the worker left in its worktree onto its branch, and adopt the commits it
/// made itself: tracked changes and untracked files, `.gitignore` respected (in a sparse
/// worktree, files outside the checkout are absent, never taken as deleted). Everything goes
/// through the record and an index of ours — fresh, or seeded from our own checkout's, never
/// the worker's (nothing the worker can write decides where or what),
/// the worker's objects are copied into the repository only after their names, sizes and
/// hashes check out, files over the merge `limits` are left out before a byte of them is read
/// (by their metadata), and the branch moves only forward.
pub(crate) fn secure_work(rec: &WorktreeRecord, worker_objects: Option<&Path>, message: &str, limits: &MergeLimits) -> Result<Secured> {
    if !rec.path.exists() {
        // Only guild-hall removes a worktree (a worker cannot remove the directory itself),
        // and only after securing it: a pass that died just after did this already.
        return Ok(Secured::default());
    }
    let mut out = Secured { tampered: inspect(rec), ..Secured::default() };
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
        match adopt_objects(&repo, alternate, h, tip, limits) {
            Ok(Adoption::Done) if repo.graph_descendant_of(h, tip).unwrap_or(false) => base = h,
            // Behind the branch: what it holds is already on the branch (a second run).
            Ok(Adoption::Done) if repo.graph_descendant_of(tip, h).unwrap_or(false) => {}
            Ok(Adoption::Done) => out.tampered.push(format!("its HEAD {h} does not descend from {}", rec.branch)),
            Ok(Adoption::BadPaths(paths)) => {
                out.tampered.push(format!("its commits hold paths git refuses to check out: {}", listing(&paths)))
            }
            // Its files are still taken from the worktree below, within the limits.
            Ok(Adoption::TooLarge(what)) => out.too_large.extend(what),
            Err(e) => out.tampered.push(format!("its commits could not be adopted: {e}")),
        }
    }
    // A fresh index of our own, in our own temp dir: the worker's index is not trusted.
    let scratch = std::env::temp_dir().join(format!("guild-hall-index-{}", uuid::Uuid::new_v4().simple()));
    let pathspecs = scratch.with_extension("pathspecs");
    let result = (|| -> Result<Option<Oid>> {
        // The repository itself, an explicit work tree and our own index: nothing of the
        // worktree's admin dir (which the worker can write, or get pruned) is needed. The
        // worker's store is not visible here: every object this writes lands in the
        // repository (the worker's own commits were adopted above).
        let at = At::repo(&rec.common, &rec.path, Some(&scratch));
        let base_hex = base.to_string();
        // Seeded from our own checkout's index where there is one (a full worktree): a one-tree
        // `read-tree -i -m` (`-i`: a scratch index, no check against the work tree, which the
        // worker changed) keeps the stat data of every entry `base` has unchanged, so `git add`
        // rehashes only files whose stat data moved (a write moves the ctime, which no worker
        // can set back). Otherwise a fresh index, every file hashed.
        let seeded = !rec.sparse && std::fs::copy(rec.checkout_index(), &scratch).is_ok();
        if seeded {
            cli(&at, &["read-tree", "-i", "-m", &base_hex], None)?;
        } else {
            cli(&at, &["read-tree", &base_hex], None)?;
        }
        // What `git add` would read, judged by size before it reads any of it.
        let Oversize { left_out, notes } =
            over_limits(&rec.path, &untracked(&at)?, &TreeSizes::read_at(&at, &base_hex)?, limits, &|_| true)?;
        out.too_large.extend(notes);
        // Gitlinks whose repository is there: `git add` would run `git status` inside each, as
        // guild-hall, under that repository's config (the worker's), to see if it is dirty. They
        // are left out of it and take the commit their repository's HEAD names (below).
        let nested = populated_gitlinks(&at, &rec.path)?;
        let add = |args: &[&str], top: &[u8]| -> Result<()> {
            let mut specs = top.to_vec();
            specs.push(0);
            for p in left_out.iter().chain(nested.iter().map(|(p, _)| p)) {
                specs.extend_from_slice(b":(exclude,literal)");
                specs.extend_from_slice(p);
                specs.push(0);
            }
            std::fs::write(&pathspecs, &specs)?;
            let from = format!("--pathspec-from-file={}", pathspecs.display());
            let mut all: Vec<&str> = args.to_vec();
            all.extend([from.as_str(), "--pathspec-file-nul"]);
            cli(&at, &all, None).map(|_| ())
        };
        if rec.sparse {
            // Files outside the sparse checkout are absent, not deleted: add what is there,
            // and take removals only under `.lore/`.
            add(&["add", "--ignore-removal"], b".")?;
            if rec.path.join(".lore").exists() {
                add(&["add", "--all"], b".lore/")?;
            }
        } else {
            add(&["add", "--all"], b".")?;
        }
        for (path, was) in &nested {
            if let Some(now) = nested_head(&rec.path, path).filter(|now| now != was) {
                let Ok(path) = std::str::from_utf8(path) else { continue }; // kept as it was
                cli(&at, &["update-index", "--cacheinfo", &format!("160000,{now},{path}")], None)?;
            }
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
    let _ = std::fs::remove_file(&scratch);
    let _ = std::fs::remove_file(&pathspecs);
    out.commit = result?;
    let new_tip = out.commit.unwrap_or(base);
    if new_tip != tip {
        super::git::updating_ref(&repo, &branch_ref, || {
            repo.reference_matching(&branch_ref, new_tip, true, tip, "guild-hall: the attempt's work")
        })?;
    }
    dedup_keep_order(&mut out.too_large);
    Ok(out)
}

/// The gitlinks of the index at `at` whose repository is there in the work tree (`<path>/.git`
/// exists), each with the commit the index holds for it.
fn populated_gitlinks(at: &At<'_>, root: &Path) -> Result<Vec<(Vec<u8>, Oid)>> {
    use std::os::unix::ffi::OsStrExt;
    let listing = cli_raw(at, &["ls-files", "-s", "-z"], None)?;
    let mut out = Vec::new();
    // `<mode> SP <object> SP <stage> TAB <path>`, NUL-terminated.
    for line in listing.split(|b| *b == 0).filter(|l| !l.is_empty()) {
        let Some(tab) = line.iter().position(|b| *b == b'\t') else { continue };
        let (meta, path) = (String::from_utf8_lossy(&line[..tab]), &line[tab + 1..]);
        let mut fields = meta.split_whitespace();
        if fields.next() != Some("160000") {
            continue;
        }
        let Some(oid) = fields.next().and_then(|o| Oid::from_str(o).ok()) else { continue };
        if std::fs::symlink_metadata(root.join(std::ffi::OsStr::from_bytes(path)).join(".git")).is_ok() {
            out.push((path.to_vec(), oid));
        }
    }
    Ok(out)
}

/// The commit the HEAD of the repository at `root/path` names, read by libgit2 (which runs
/// nothing that repository's config names); `None` if there is none to read.
fn nested_head(root: &Path, path: &[u8]) -> Option<Oid> {
    use std::os::unix::ffi::OsStrExt;
    let repo = Repository::open(root.join(std::ffi::OsStr::from_bytes(path))).ok()?;
    let head = repo.head().ok()?.target();
    head
}

/// At most the first 20 of `items`, joined, and how many more there are.
pub(crate) fn listing(items: &[String]) -> String {
    const SHOWN: usize = 20;
    let mut text = items.iter().take(SHOWN).cloned().collect::<Vec<_>>().join(", ");
    if items.len() > SHOWN {
        text.push_str(&format!(" and {} more", items.len() - SHOWN));
    }
    text
}

fn dedup_keep_order(items: &mut Vec<String>) {
    let mut seen = std::collections::HashSet::new();
    items.retain(|i| seen.insert(i.clone()));
}

/// Files of a worktree over the merge limits, found from their metadata alone.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Oversize {
    /// The paths to leave out, as git lists them (bytes: a name need not be UTF-8).
    pub(crate) left_out: Vec<Vec<u8>>,
    /// For each, what it is and why: `big.bin is 4.0 GiB, over merge_max_file_size (100.0 MiB)`.
    pub(crate) notes: Vec<String>,
}

/// A worktree's files with a scratch index of the caller's ([`WorktreeRecord::with_index`]).
pub(crate) struct WithIndex<'a> {
    pub(crate) rec: &'a WorktreeRecord,
    at: At<'a>,
    /// The untracked files, listed once for the look (its worker has ended).
    untracked: std::cell::OnceCell<Vec<u8>>,
}

impl WithIndex<'_> {
    /// `git <args>` there.
    pub(crate) fn git(&self, args: &[&str]) -> Result<String> {
        cli(&self.at, args, None)
    }

    /// The untracked files git would take, NUL-separated (`ls-files -z -o --exclude-standard`),
    /// listed at the first call.
    pub(crate) fn untracked(&self) -> Result<&[u8]> {
        if let Some(u) = self.untracked.get() {
            return Ok(u);
        }
        let listed = untracked(&self.at)?;
        Ok(self.untracked.get_or_init(|| listed))
    }

    /// The files that taking this worktree's work past `base` would read, judged by their
    /// metadata alone (nothing is read or hashed): untracked files git would take, and tracked
    /// files whose size is no longer the base's; those for which `counts` says no are not
    /// taken at all. A file over `limits.file` is left out; if the rest come to more than
    /// `limits.attempt`, the largest are left out until they do not. The index must hold
    /// `base`, whose blobs are `base`'s sizes.
    pub(crate) fn over_limits(&self, base: &TreeSizes, limits: &MergeLimits, counts: &dyn Fn(&str) -> bool) -> Result<Oversize> {
        over_limits(&self.rec.path, self.untracked()?, base, limits, counts)
    }
}

/// The outermost directory on the way to `path` (relative to `root`) that does not exist, with
/// its trailing `/`; `None` if its directory is there.
fn absent_ancestor(root: &Path, path: &[u8]) -> Option<Vec<u8>> {
    use std::os::unix::ffi::OsStrExt;
    let mut found = None;
    let mut end = path.iter().rposition(|b| *b == b'/');
    while let Some(cut) = end {
        let dir = &path[..cut];
        if std::fs::symlink_metadata(root.join(std::ffi::OsStr::from_bytes(dir))).is_ok() {
            break;
        }
        found = Some(path[..=cut].to_vec());
        end = dir.iter().rposition(|b| *b == b'/');
    }
    found
}

/// Every blob of a tree with its size (`ls-tree -r -l`): what [`WithIndex::over_limits`] holds
/// a worktree's files against. Read once for every task of a wave, which share their base.
#[derive(Default)]
pub(crate) struct TreeSizes(Vec<(Vec<u8>, u64)>);

impl TreeSizes {
    /// The blobs of `tree` (a tree-ish) in the repository of `project_root`.
    pub(crate) fn read(project_root: &Path, tree: &str) -> Result<TreeSizes> {
        let common = common_dir(project_root)?;
        Self::read_at(&At::repo(&common, project_root, None), tree)
    }

    fn read_at(at: &At<'_>, tree: &str) -> Result<TreeSizes> {
        let mut out = Vec::new();
        // `<mode> SP <type> SP <object> SP+ <size> TAB <path>`, NUL-terminated.
        let listing = cli_raw(at, &["ls-tree", "-r", "-l", "-z", "--full-tree", tree], None)?;
        for line in listing.split(|b| *b == 0).filter(|l| !l.is_empty()) {
            let Some(tab) = line.iter().position(|b| *b == b'\t') else { continue };
            let (meta, path) = (String::from_utf8_lossy(&line[..tab]), &line[tab + 1..]);
            let mut fields = meta.split_whitespace();
            if fields.nth(1) != Some("blob") {
                continue;
            }
            if let Some(size) = fields.nth(1).and_then(|s| s.parse::<u64>().ok()) {
                out.push((path.to_vec(), size));
            }
        }
        Ok(TreeSizes(out))
    }
}

/// The untracked files git would take (`ls-files -z -o --exclude-standard`), NUL-separated.
fn untracked(at: &At<'_>) -> Result<Vec<u8>> {
    cli_raw(at, &["ls-files", "-z", "-o", "--exclude-standard"], None)
}

/// `untracked`: as [`untracked`] lists them.
fn over_limits(root: &Path, untracked: &[u8], base: &TreeSizes, limits: &MergeLimits, counts: &dyn Fn(&str) -> bool) -> Result<Oversize> {
    use std::os::unix::ffi::OsStrExt;
    let name = |p: &[u8]| String::from_utf8_lossy(p).into_owned();
    let size_on_disk = |p: &[u8]| {
        if !counts(&name(p)) {
            return None;
        }
        std::fs::symlink_metadata(root.join(std::ffi::OsStr::from_bytes(p))).ok().filter(|m| m.is_file()).map(|m| m.len())
    };
    let mut candidates: Vec<(Vec<u8>, u64)> = Vec::new();
    for p in untracked.split(|b| *b == 0).filter(|p| !p.is_empty()) {
        if let Some(len) = size_on_disk(p) {
            candidates.push((p.to_vec(), len));
        }
    }
    // A directory found absent (all of a sparse checkout outside `.lore/`) spares looking for
    // each file under it: the tree lists a directory's files together.
    let mut absent: Option<Vec<u8>> = None;
    for (path, was) in &base.0 {
        if absent.as_ref().is_some_and(|dir| path.starts_with(dir)) {
            continue;
        }
        match size_on_disk(path) {
            Some(len) if len != *was => candidates.push((path.clone(), len)),
            Some(_) => {}
            None => absent = absent_ancestor(root, path),
        }
    }
    let mut out = Oversize::default();
    let mut kept = Vec::new();
    for (path, len) in candidates {
        if len > limits.file {
            out.notes.push(format!("{} is {}, over merge_max_file_size ({})", name(&path), human_size(len), human_size(limits.file)));
            out.left_out.push(path);
        } else {
            kept.push((path, len));
        }
    }
    let mut total: u64 = kept.iter().map(|(_, len)| *len).sum();
    if total > limits.attempt {
        let all = total;
        kept.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        for (path, len) in kept {
            if total <= limits.attempt {
                break;
            }
            total -= len;
            out.notes.push(format!(
                "{} is {}, past merge_max_attempt_size ({}) with the other files ({} in all)",
                name(&path),
                human_size(len),
                human_size(limits.attempt),
                human_size(all)
            ));
            out.left_out.push(path);
        }
    }
    Ok(out)
}

/// What adopting the worker's own commits came to. Refused means nothing was copied.
enum Adoption {
    Done,
    /// Paths git refuses to hold (a `.git` component, say), each with why.
    BadPaths(Vec<String>),
    /// Objects over the merge limits, each named with its size.
    TooLarge(Vec<String>),
}

/// Copy every object reachable from `head` (and not from `tip`) that the repository lacks out
/// of the worker's store. First everything is checked without reading an object's contents
/// beyond trees: every path a valid one for git, every object within `limits` by its header;
/// anything wrong and nothing is copied. Then each is re-hashed on the way in: an object whose
/// content does not match its name is refused, so a worker cannot plant a false object for a
/// later commit to trip over. Parents before children and entries before their tree, so an
/// interrupted copy never leaves an object whose history or contents are missing.
fn adopt_objects(repo: &Repository, store: Option<&Path>, head: Oid, tip: Oid, limits: &MergeLimits) -> Result<Adoption> {
    let odb = repo.odb()?;
    if odb.exists(head) {
        return Ok(Adoption::Done);
    }
    let Some(store) = store else { return Err(GitError::Other(format!("commit {head} is not in the repository"))) };
    // A second handle that also sees the worker's store, for reading only.
    let both = Repository::open(repo.path())?;
    let both_odb = both.odb()?;
    both_odb.add_disk_alternate(&store.to_string_lossy())?;

    /// What the check found, and the objects to copy in order.
    struct Walk<'r> {
        both: &'r Repository,
        odb: &'r git2::Odb<'r>,
        both_odb: &'r git2::Odb<'r>,
        limits: MergeLimits,
        seen: std::collections::HashSet<Oid>,
        order: Vec<Oid>,
        bad: Vec<String>,
        large: Vec<String>,
        blob_bytes: u64,
    }
    impl Walk<'_> {
        /// Whether `oid` is still to be copied (first sight, not in the repository), checking
        /// its size by its header; `what` names it in a refusal.
        fn fresh(&mut self, oid: Oid, what: &dyn Fn() -> String) -> Result<Option<u64>> {
            if self.odb.exists(oid) || !self.seen.insert(oid) {
                return Ok(None);
            }
            let (size, _) = self.both_odb.read_header(oid)?;
            let size = size as u64;
            if size > self.limits.file {
                self.large.push(format!("{} is {}, over merge_max_file_size ({})", what(), human_size(size), human_size(self.limits.file)));
            }
            Ok(Some(size))
        }
        fn tree(&mut self, t: Oid, prefix: &str) -> Result<()> {
            let shown = if prefix.is_empty() { "its root tree".to_string() } else { format!("its tree {}", prefix.trim_end_matches('/')) };
            if self.fresh(t, &|| shown.clone())?.is_none() {
                return Ok(()); // present (and with it everything beneath), or seen already
            }
            if !self.large.is_empty() {
                return Ok(()); // refused already; a huge tree is not read
            }
            let tree = self.both.find_tree(t)?;
            for entry in tree.iter() {
                let path = format!("{prefix}{}", String::from_utf8_lossy(entry.name_bytes()));
                if let Some(why) = crate::activity::control_plane::bad_component(entry.name_bytes()) {
                    self.bad.push(format!("{path} ({why})"));
                    continue;
                }
                match entry.kind() {
                    Some(git2::ObjectType::Tree) => self.tree(entry.id(), &format!("{path}/"))?,
                    Some(git2::ObjectType::Commit) => {} // a submodule's commit lives in the submodule
                    _ => {
                        if let Some(size) = self.fresh(entry.id(), &|| path.clone())? {
                            self.blob_bytes += size;
                            self.order.push(entry.id());
                        }
                    }
                }
            }
            self.order.push(t);
            Ok(())
        }
    }
    let mut w = Walk {
        both: &both,
        odb: &odb,
        both_odb: &both_odb,
        limits: *limits,
        seen: Default::default(),
        order: Vec::new(),
        bad: Vec::new(),
        large: Vec::new(),
        blob_bytes: 0,
    };
    let mut walk = both.revwalk()?;
    walk.push(head)?;
    walk.hide(tip)?;
    walk.set_sorting(git2::Sort::TOPOLOGICAL | git2::Sort::REVERSE)?;
    for c in walk {
        let c = c?;
        if w.fresh(c, &|| format!("its commit {c}"))?.is_none() || !w.large.is_empty() {
            continue;
        }
        let tree = both.find_commit(c)?.tree_id();
        w.tree(tree, "")?;
        w.order.push(c);
    }
    if !w.bad.is_empty() {
        return Ok(Adoption::BadPaths(w.bad));
    }
    if w.blob_bytes > limits.attempt {
        w.large.push(format!(
            "its commits add {} of files, over merge_max_attempt_size ({})",
            human_size(w.blob_bytes),
            human_size(limits.attempt)
        ));
    }
    if !w.large.is_empty() {
        return Ok(Adoption::TooLarge(w.large));
    }
    for oid in w.order {
        if odb.exists(oid) {
            continue;
        }
        let obj = both_odb.read(oid)?;
        if odb.write(obj.kind(), obj.data())? != oid {
            return Err(GitError::Other(format!("object {oid} in the worker's store is corrupt")));
        }
    }
    Ok(Adoption::Done)
}

/// Remove the worktree (its work was secured by the caller) and its admin dir, both by the
/// record. Keeps the branch. Neither `git worktree remove` nor `prune` is used: they go by
/// each admin dir's `gitdir`, which a worker can rewrite or make dangling (prune would then
/// delete another attempt's admin dir, and with it the HEAD of its own commits).
pub(crate) fn remove_worktree(rec: &WorktreeRecord) -> Result<()> {
    if std::fs::symlink_metadata(&rec.path).is_ok() {
        std::fs::remove_dir_all(&rec.path)?;
    }
    match std::fs::remove_file(rec.checkout_index()) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e.into()),
        _ => {}
    }
    if rec.admin.starts_with(rec.common.join("worktrees")) && rec.admin.exists() {
        let _one = admin_dirs();
        std::fs::remove_dir_all(&rec.admin)?;
    }
    Ok(())
}

/// Held while this process adds or removes a worktree's admin dir: `git worktree add` reads
/// every other worktree's admin dir, and fails on one still being written or removed
/// (dispatches and finishes run at once).
fn admin_dirs() -> std::sync::MutexGuard<'static, ()> {
    static ADMIN_DIRS: std::sync::Mutex<()> = std::sync::Mutex::new(());
    ADMIN_DIRS.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    //! Against the real git: what a worker writes into its worktree and admin dir is never
    //! configuration to guild-hall's git.
    use super::*;
    use std::process::Command;

    /// Run git as a person would in `dir` (no inherited `GIT_*`, no global config).
    fn git(dir: &Path, args: &[&str]) -> String {
        let mut c = Command::new("git");
        c.args(args).current_dir(dir).env("GIT_CONFIG_GLOBAL", "/dev/null").env("GIT_CONFIG_NOSYSTEM", "1");
        for (k, _) in std::env::vars_os() {
            if k.to_string_lossy().starts_with("GIT_") && k != "GIT_CONFIG_GLOBAL" && k != "GIT_CONFIG_NOSYSTEM" {
                c.env_remove(k);
            }
        }
        let out = c.output().expect("git runs");
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// A repository with `extensions.worktreeConfig` on, a few files (`target/` ignored) and
    /// branch `b`.
    fn repo(tmp: &Path) -> PathBuf {
        let root = tmp.join("repo");
        std::fs::create_dir_all(root.join(".lore")).expect("mkdir");
        std::fs::create_dir_all(root.join("src")).expect("mkdir");
        git(&root, &["init", "-q", "-b", "main"]);
        git(&root, &["config", "user.name", "T"]);
        git(&root, &["config", "user.email", "t@example.com"]);
        git(&root, &["config", "extensions.worktreeConfig", "true"]);
        for (p, t) in [("README.md", "readme\n"), (".lore/x.md", "x\n"), ("src/a.txt", "a\n"), (".gitignore", "target/\n")] {
            std::fs::write(root.join(p), t).expect("write");
        }
        git(&root, &["add", "-A"]);
        git(&root, &["commit", "-q", "-m", "init"]);
        git(&root, &["branch", "b"]);
        root
    }

    /// What a worker plants: a `config.worktree` whose filter (for every file, through a
    /// `core.attributesFile` and a `.gitattributes`) writes `marker`, and edits of every kind.
    fn plant(rec: &WorktreeRecord, marker: &Path) {
        let attrs = rec.admin.join("attributes");
        std::fs::write(&attrs, "* filter=pwn\n").expect("attrs");
        std::fs::write(rec.path.join(".gitattributes"), "* filter=pwn\n").expect("attrs");
        let cmd = format!("id > {}; cat", marker.display());
        std::fs::write(
            rec.admin.join("config.worktree"),
            format!("[core]\n\tattributesFile = {}\n[filter \"pwn\"]\n\tsmudge = \"{cmd}\"\n\tclean = \"{cmd}\"\n", attrs.display()),
        )
        .expect("config.worktree");
        std::fs::write(rec.path.join("README.md"), "worker\n").expect("edit");
        std::fs::write(rec.path.join("new.txt"), "new\n").expect("add");
        std::fs::create_dir_all(rec.path.join("target")).expect("mkdir");
        std::fs::write(rec.path.join("target/out"), "build\n").expect("ignored");
    }

    #[test]
    fn a_reset_reads_no_config_the_worker_wrote_and_puts_every_file_back() {
        let tmp = tempfile::tempdir().expect("tmp");
        let root = repo(tmp.path());
        let rec = add_worktree(&root, &tmp.path().join("wt/task-t"), "b", false).expect("made");
        let tip = Repository::open(&root).expect("repo").refname_to_id("refs/heads/b").expect("b");
        let marker = tmp.path().join("pwned");
        plant(&rec, &marker);
        assert!(inspect(&rec).iter().any(|f| f.contains("config.worktree")), "{:?}", inspect(&rec));
        assert!(reset_worktree(&rec, tip, Clean::Untracked).is_err(), "refused: not as guild-hall made it");
        // The mechanism itself, below the check: the planted config is never read.
        check_out(&rec, tip, Some(Clean::Untracked)).expect("reset");
        assert!(!marker.exists(), "the planted filter ran: {:?}", std::fs::read_to_string(&marker));
        assert_eq!(std::fs::read_to_string(rec.path.join("README.md")).expect("readme"), "readme\n");
        assert!(!rec.path.join("new.txt").exists() && !rec.path.join(".gitattributes").exists(), "untracked files removed");
        assert!(rec.path.join("target/out").exists(), "ignored files kept (Clean::Untracked)");
        check_out(&rec, tip, Some(Clean::All)).expect("reset");
        assert!(!rec.path.join("target").exists(), "ignored files removed too (Clean::All)");
        // The worker's own git (its planted config gone) sees a clean checkout at `tip`.
        std::fs::remove_file(rec.admin.join("config.worktree")).expect("rm");
        assert_eq!(git(&rec.path, &["status", "--porcelain"]), "");
        assert_eq!(git(&rec.path, &["rev-parse", "HEAD"]).trim(), tip.to_string());
    }

    #[test]
    fn securing_a_full_worktree_starts_from_our_checkouts_index_and_still_sees_every_change() {
        let tmp = tempfile::tempdir().expect("tmp");
        let root = repo(tmp.path());
        let rec = add_worktree(&root, &tmp.path().join("wt/commission-c"), "b", false).expect("made");
        assert!(rec.checkout_index().is_file(), "our checkout's index kept beside the worktree");
        // A change of the same size whose mtime is put back: only its ctime tells (the kernel
        // sets it, no worker can), and that is enough.
        let a = rec.path.join("src/a.txt");
        let mtime = std::fs::metadata(&a).expect("meta").modified().expect("mtime");
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(&a, "A\n").expect("edit");
        std::fs::File::options().write(true).open(&a).expect("open").set_modified(mtime).expect("mtime back");
        // The worker's own index, which it can write, says nothing changed: never read.
        std::fs::write(rec.admin.join("index"), b"not an index").expect("planted");
        std::fs::write(rec.path.join("new.txt"), "new\n").expect("add");
        let limits = crate::config::MergeLimits { file: u64::MAX, attempt: u64::MAX };
        let secured = secure_work(&rec, None, "work", &limits).expect("secured");
        let commit = secured.commit.expect("a commit");
        let show = |p: &str| git(&root, &["show", &format!("{commit}:{p}")]);
        assert_eq!(show("src/a.txt"), "A\n");
        assert_eq!(show("new.txt"), "new\n");
        assert_eq!(show("README.md"), "readme\n");
        remove_worktree(&rec).expect("removed");
        assert!(!rec.checkout_index().exists(), "the copy goes with the worktree");
        // A sparse worktree keeps none (its skip-worktree bits must not steer `git add`).
        let sparse = add_worktree(&root, &tmp.path().join("wt/commission-s"), "b", true).expect("made");
        assert!(!sparse.checkout_index().exists());
    }

    #[test]
    fn a_sparse_reset_leaves_only_lore_and_a_clean_status() {
        let tmp = tempfile::tempdir().expect("tmp");
        let root = repo(tmp.path());
        let rec = add_worktree(&root, &tmp.path().join("wt/task-s"), "b", true).expect("made");
        assert!(rec.path.join(".lore/x.md").exists() && !rec.path.join("README.md").exists(), "sparse: .lore/ only");
        assert_eq!(git(&rec.path, &["status", "--porcelain"]), "");
        let tip = Repository::open(&root).expect("repo").refname_to_id("refs/heads/b").expect("b");
        let marker = tmp.path().join("pwned");
        plant(&rec, &marker);
        std::fs::write(rec.path.join(".lore/x.md"), "changed\n").expect("edit");
        std::fs::write(rec.path.join("src/b.txt"), "b\n").ok();
        check_out(&rec, tip, Some(Clean::Untracked)).expect("reset");
        assert!(!marker.exists(), "the planted filter ran: {:?}", std::fs::read_to_string(&marker));
        std::fs::remove_file(rec.admin.join("config.worktree")).expect("rm");
        assert_eq!(std::fs::read_to_string(rec.path.join(".lore/x.md")).expect("x"), "x\n");
        assert!(!rec.path.join("README.md").exists() && !rec.path.join("new.txt").exists(), "outside .lore/: nothing left");
        assert_eq!(git(&rec.path, &["status", "--porcelain"]), "");
    }

    /// The person's checkout is sparse (`git sparse-checkout set --cone`: its `config.worktree`
    /// and patterns), which git copies into every new worktree's admin dir: a worktree of
    /// guild-hall's is still made as its package says, with no config of its own.
    #[test]
    fn a_new_worktree_takes_no_config_or_patterns_from_the_persons_checkout() {
        let tmp = tempfile::tempdir().expect("tmp");
        let root = repo(tmp.path());
        git(&root, &["sparse-checkout", "set", "--cone", "src"]);
        let rec = add_worktree(&root, &tmp.path().join("wt/commission-c"), "b", false).expect("made");
        assert!(inspect(&rec).is_empty(), "{:?}", inspect(&rec));
        assert!(rec.path.join("README.md").exists() && rec.path.join(".lore/x.md").exists(), "a full checkout");
        assert_eq!(git(&rec.path, &["status", "--porcelain"]), "");
        // Made again over a crash: kept as it is.
        assert_eq!(add_worktree(&root, &rec.path, "b", false).expect("kept"), rec);
    }

    /// A process killed inside `git worktree add` leaves the admin dir of a worktree never
    /// made: ours (its `gitdir` names our worktree, or is not written yet) is pruned and the
    /// worktree made; another worktree's of the same name is never touched.
    #[test]
    fn an_admin_dir_left_by_a_crash_is_pruned_and_another_worktrees_is_kept() {
        let tmp = tempfile::tempdir().expect("tmp");
        let root = repo(tmp.path());
        let path = tmp.path().join("wt/commission-c");
        let admin = root.join(".git/worktrees/commission-c");
        for gitdir in [Some(path.join(".git")), None] {
            std::fs::create_dir_all(&admin).expect("mkdir");
            std::fs::write(admin.join("locked"), "initializing").expect("locked");
            if let Some(g) = &gitdir {
                std::fs::write(admin.join("gitdir"), format!("{}\n", g.display())).expect("gitdir");
            }
            let rec = add_worktree(&root, &path, "b", false).expect("made over the leftover");
            assert!(inspect(&rec).is_empty() && rec.path.join("README.md").exists(), "{:?}", inspect(&rec));
            assert!(!admin.join("locked").exists());
            remove_worktree(&rec).expect("removed");
        }
        std::fs::create_dir_all(&admin).expect("mkdir");
        let elsewhere = tmp.path().join("person/commission-c/.git");
        std::fs::write(admin.join("gitdir"), format!("{}\n", elsewhere.display())).expect("gitdir");
        let err = add_worktree(&root, &path, "b", false).expect_err("another worktree's admin dir");
        assert!(err.to_string().contains("already exists"), "{err}");
        assert!(admin.join("gitdir").exists(), "kept");
    }

    #[test]
    fn the_outermost_absent_directory_is_found_and_a_present_one_is_not() {
        let tmp = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(tmp.path().join("a")).expect("mkdir");
        assert_eq!(absent_ancestor(tmp.path(), b"a/b/c/f.txt"), Some(b"a/b/".to_vec()));
        assert_eq!(absent_ancestor(tmp.path(), b"x/y/f.txt"), Some(b"x/".to_vec()));
        assert_eq!(absent_ancestor(tmp.path(), b"a/f.txt"), None);
        assert_eq!(absent_ancestor(tmp.path(), b"f.txt"), None);
    }
}
