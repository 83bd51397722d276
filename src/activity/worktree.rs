//! Activity worktrees, made and taken back by guild-hall alone: created detached at the
//! activity's branch (full or sparse) and recorded; at the end, the worker's commits and
//! leftovers secured onto its branch by that record (never by what the worktree now says), its
//! objects adopted only after their hashes check out; then the worktree removed by record.

use std::path::{Path, PathBuf};

use git2::{Oid, Repository};

use super::git::{canonical, cli, cli_raw, common_dir, signature, At, GitError, Result};
use crate::config::{human_size, MergeLimits};

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
    /// The record guild-hall makes for a worktree at `path` (computed from the activity's id,
    /// never read from a file) on `branch`: its admin dir is the one git names after it.
    pub fn expected(project_root: &Path, path: &Path, branch: &str, sparse: bool) -> Result<WorktreeRecord> {
        let common = common_dir(project_root)?;
        let name = path.file_name().ok_or_else(|| GitError::Other(format!("{} has no file name", path.display())))?;
        Ok(WorktreeRecord { path: path.to_path_buf(), admin: common.join("worktrees").join(name), common, branch: branch.into(), sparse })
    }

    /// What an older guild-hall (no record) made: the admin dir named after the worktree.
    pub fn assumed(project_root: &Path, path: &Path, branch: &str, sparse: bool) -> Result<WorktreeRecord> {
        Self::expected(project_root, path, branch, sparse)
    }

    fn at(&self) -> At<'_> {
        At { git_dir: &self.admin, common_dir: Some(&self.common), work_tree: Some(&self.path), index_file: None }
    }

    /// Run guild-hall's git in this worktree, by the record (its admin dir and work tree).
    pub fn git(&self, args: &[&str]) -> Result<String> {
        cli(&self.at(), args, None)
    }

    /// Run git on the repository with this worktree's files and an index of our own (`index`,
    /// a scratch file): nothing of the worktree's admin dir is trusted.
    pub fn git_with_index(&self, index: &Path, args: &[&str]) -> Result<String> {
        cli(&At { git_dir: &self.common, common_dir: None, work_tree: Some(&self.path), index_file: Some(index) }, args, None)
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
pub fn recorded(state_file: &Path, project_root: &Path, path: &Path, branch: &str) -> Result<Option<WorktreeRecord>> {
    let Some(rec) = crate::activity::state::read_json::<WorktreeRecord>(state_file).map_err(|e| GitError::Other(format!("{e:#}")))? else {
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
pub fn place(p: &Path) -> PathBuf {
    let p = p.components().as_path();
    match (p.parent().and_then(|d| d.canonicalize().ok()), p.file_name()) {
        (Some(dir), Some(name)) => dir.join(name),
        _ => p.to_path_buf(),
    }
}

/// Where `rec` (read from a state file) is not the worktree guild-hall makes at `want`'s place:
/// its path, admin dir or repository. Paths are compared by where they are (the parent
/// resolved: the worktree itself may be gone).
pub fn differences(rec: &WorktreeRecord, want: &WorktreeRecord) -> Vec<String> {
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
pub fn recorded_or_assumed(state_file: &Path, project_root: &Path, path: &Path, branch: &str) -> Result<WorktreeRecord> {
    match recorded(state_file, project_root, path, branch)? {
        Some(rec) => Ok(rec),
        None => WorktreeRecord::assumed(project_root, path, branch, false),
    }
}

/// Create the worktree at `path`, detached at `branch` (which must exist): a worker commits
/// on a detached HEAD and guild-hall moves the branch. Idempotent: an existing, complete
/// worktree made for `branch` is kept; a half-made one (ours: it only ever holds a worktree we
/// created, before any worker ran in it) is removed and made again.
pub fn add_worktree(project_root: &Path, path: &Path, branch: &str, sparse: bool) -> Result<WorktreeRecord> {
    let rec = WorktreeRecord::expected(project_root, path, branch, sparse)?;
    let main = At::repo(&rec.common, project_root);
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
    /// What was left out for the merge limits, each file named with its size: never read,
    /// hashed or stored (the attempt must fail; the rest of its work is on the branch).
    pub too_large: Vec<String>,
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
/// worktree, files outside the checkout are absent, never taken as deleted). Everything goes
/// through the record and a fresh index of ours (nothing the worker can write decides where),
/// the worker's objects are copied into the repository only after their names, sizes and
/// hashes check out, files over the merge `limits` are left out before a byte of them is read
/// (by their metadata), and the branch moves only forward.
pub fn secure_work(rec: &WorktreeRecord, worker_objects: Option<&Path>, message: &str, limits: &MergeLimits) -> Result<Secured> {
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
        let at = At { git_dir: &rec.common, common_dir: None, work_tree: Some(&rec.path), index_file: Some(&scratch) };
        let base_hex = base.to_string();
        cli(&at, &["read-tree", &base_hex], None)?;
        // What `git add` would read, judged by size before it reads any of it.
        let Oversize { left_out, notes } = over_limits(&at, &rec.path, &base_hex, limits, &|_| true)?;
        out.too_large.extend(notes);
        let add = |args: &[&str], top: &[u8]| -> Result<()> {
            let mut specs = top.to_vec();
            specs.push(0);
            for p in &left_out {
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
        repo.reference_matching(&branch_ref, new_tip, true, tip, "guild-hall: the attempt's work")?;
    }
    dedup_keep_order(&mut out.too_large);
    Ok(out)
}

/// At most the first 20 of `items`, joined, and how many more there are.
pub fn listing(items: &[String]) -> String {
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
pub struct Oversize {
    /// The paths to leave out, as git lists them (bytes: a name need not be UTF-8).
    pub left_out: Vec<Vec<u8>>,
    /// For each, what it is and why: `big.bin is 4.0 GiB, over merge_max_file_size (100.0 MiB)`.
    pub notes: Vec<String>,
}

impl WorktreeRecord {
    /// The files that taking this worktree's work past `base` would read, judged by their
    /// metadata alone (nothing is read or hashed): untracked files git would take, and tracked
    /// files whose size is no longer the base's; those for which `counts` says no are not
    /// taken at all. A file over `limits.file` is left out; if the rest come to more than
    /// `limits.attempt`, the largest are left out until they do not. `index` is a scratch
    /// index of the caller's that holds `base`.
    pub fn over_limits(&self, index: &Path, base: &str, limits: &MergeLimits, counts: &dyn Fn(&str) -> bool) -> Result<Oversize> {
        let at = At { git_dir: &self.common, common_dir: None, work_tree: Some(&self.path), index_file: Some(index) };
        over_limits(&at, &self.path, base, limits, counts)
    }
}

fn over_limits(at: &At<'_>, root: &Path, base_hex: &str, limits: &MergeLimits, counts: &dyn Fn(&str) -> bool) -> Result<Oversize> {
    use std::os::unix::ffi::OsStrExt;
    let name = |p: &[u8]| String::from_utf8_lossy(p).into_owned();
    let size_on_disk = |p: &[u8]| {
        if !counts(&name(p)) {
            return None;
        }
        std::fs::symlink_metadata(root.join(std::ffi::OsStr::from_bytes(p))).ok().filter(|m| m.is_file()).map(|m| m.len())
    };
    let mut candidates: Vec<(Vec<u8>, u64)> = Vec::new();
    let untracked = cli_raw(at, &["ls-files", "-z", "-o", "--exclude-standard"], None)?;
    for p in untracked.split(|b| *b == 0).filter(|p| !p.is_empty()) {
        if let Some(len) = size_on_disk(p) {
            candidates.push((p.to_vec(), len));
        }
    }
    // `<mode> SP <type> SP <object> SP+ <size> TAB <path>`, NUL-terminated.
    let tracked = cli_raw(at, &["ls-tree", "-r", "-l", "-z", "--full-tree", base_hex], None)?;
    for line in tracked.split(|b| *b == 0).filter(|l| !l.is_empty()) {
        let Some(tab) = line.iter().position(|b| *b == b'\t') else { continue };
        let (meta, path) = (String::from_utf8_lossy(&line[..tab]), &line[tab + 1..]);
        let mut fields = meta.split_whitespace();
        if fields.nth(1) != Some("blob") {
            continue;
        }
        let Some(was) = fields.nth(1).and_then(|s| s.parse::<u64>().ok()) else { continue };
        if let Some(len) = size_on_disk(path).filter(|len| *len != was) {
            candidates.push((path.to_vec(), len));
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
pub fn remove_worktree(rec: &WorktreeRecord) -> Result<()> {
    if std::fs::symlink_metadata(&rec.path).is_ok() {
        std::fs::remove_dir_all(&rec.path)?;
    }
    if rec.admin.starts_with(rec.common.join("worktrees")) && rec.admin.exists() {
        std::fs::remove_dir_all(&rec.admin)?;
    }
    Ok(())
}
