//! Copy-back, lossless (Kiln's contract): a task's changes found with `git diff --name-status
//! -z -M` and `git ls-files -o --exclude-standard -z` against the wave base, the control plane
//! and the snapshot/evidence dirs left out; a wave-wide collision scan before anything is
//! mutated; then one commit per task on the integration branch, built in memory from the
//! worktree's bytes (modes and symlinks kept) and checked to equal it. What is copied back is
//! bounded by the merge limits, judged from the files' metadata before any is read.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{bail, Context, Result};
use git2::{Oid, Repository};

use crate::activity::merge::{commit_onto, MergeOutcome};
use crate::activity::worktree::{TreeSizes, WithIndex, WorktreeRecord};
use crate::config::MergeLimits;

/// Where a task reads the control plane (a read-only copy) and leaves its evidence.
pub(crate) const SNAPSHOT_DIR: &str = ".lore-snapshot";
pub(crate) const ARTIFACTS_DIR: &str = ".lore-artifacts";

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Op {
    Add,
    Modify,
    Delete,
    Rename,
    Untracked,
}

/// One change of a task, as TaskUpdate's `changed_ops` names them.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Change {
    pub(crate) op: Op,
    pub(crate) path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) from_path: Option<String>,
}

/// Never copied back: the snapshot and the evidence dir (evidence is moved, not copied).
pub(crate) fn excluded(path: &str) -> bool {
    [SNAPSHOT_DIR, ARTIFACTS_DIR].iter().any(|d| path == *d || path.starts_with(&format!("{d}/")))
}

/// The control plane (one definition for every kind): a task that changes it breaks the protocol.
pub(crate) use crate::activity::control_plane::is_control_plane as control_plane;

/// A scratch index to look at a task's worktree with, holding `base` and nothing else: a copy
/// of the worktree's own index when it still describes the base exactly (its stat data spares
/// hashing every file of a large tree), else one read from the base. The worker's index never
/// decides what counts as changed beyond its own files' stat data: what it staged or committed
/// does not count — an intent-to-add entry (`git add -N`) included, which would hide a file
/// from the untracked files the limits measure — and an index that tells git to ignore a file
/// (assume-unchanged, a skip-worktree bit guild-hall did not set) is not used.
pub(crate) fn scratch_index(rec: &WorktreeRecord, base: &str) -> Result<tempfile::TempPath> {
    let index = tempfile::Builder::new().prefix("guild-hall-index-").tempfile().context("a scratch index")?.into_temp_path();
    let git = rec.with_index(&index);
    let own = rec.admin.join("index");
    // A sparse worktree's own index hides what its worker wrote outside `.lore/` behind the
    // skip-worktree bits of its checkout: read afresh (its files are few), every such file is
    // seen, and refused ([`outside_sparse_checkout`]).
    let reusable = !rec.sparse
        && std::fs::symlink_metadata(&own).is_ok_and(|m| m.is_file())
        && std::fs::copy(&own, &index).is_ok()
        && git.git(&["diff", "--cached", "--quiet", "--ita-visible-in-index", base]).is_ok()
        && honest_flags(&git);
    if !reusable {
        git.git(&["read-tree", base])?;
    }
    Ok(index)
}

/// The task's changes against `base`, in the contract's order: renames, deletes,
/// adds/modifies, untracked; `git` with a [`scratch_index`] holding `base`.
pub(crate) fn manifest(git: &WithIndex<'_>, base: &str) -> Result<Vec<Change>> {
    let diff = git.git(&["diff", "--name-status", "-z", "-M", base])?;
    let untracked = String::from_utf8_lossy(git.untracked()?).into_owned();
    let mut renames = Vec::new();
    let mut deletes = Vec::new();
    let mut writes = Vec::new();
    let mut fields = diff.split('\0').filter(|f| !f.is_empty());
    while let Some(status) = fields.next() {
        let path = fields.next().context("git diff: a status without a path")?.to_string();
        match status.chars().next() {
            Some('R') => {
                let to = fields.next().context("git diff: a rename without its new path")?.to_string();
                renames.push(Change { op: Op::Rename, path: to, from_path: Some(path) });
            }
            Some('D') => deletes.push(Change { op: Op::Delete, path, from_path: None }),
            Some('A') => writes.push(Change { op: Op::Add, path, from_path: None }),
            // M, T (type change) and anything else: the file as it is now.
            _ => writes.push(Change { op: Op::Modify, path, from_path: None }),
        }
    }
    let mut untracked: Vec<Change> = untracked
        .split('\0')
        .filter(|f| !f.is_empty())
        .map(|p| Change { op: Op::Untracked, path: p.to_string(), from_path: None })
        .collect();
    let mut all = Vec::new();
    for group in [&mut renames, &mut deletes, &mut writes, &mut untracked] {
        group.sort_by(|a, b| a.path.cmp(&b.path));
        all.append(group);
    }
    all.retain(|c| !excluded(&c.path) && !c.from_path.as_deref().is_some_and(excluded));
    if git.rec.sparse {
        // Outside a sparse checkout files are absent, not deleted (as when work is secured).
        all.retain(|c| c.op != Op::Delete || c.path.starts_with(".lore/"));
    }
    Ok(all)
}

/// The paths among `changes` (and rename sources) that git refuses to hold in a tree — a `.git`
/// component in any case, `.`/`..`, an empty name: the squash merge's check — each with why;
/// sorted, without repeats.
pub(crate) fn refused_paths(changes: &[Change]) -> Vec<String> {
    let mut out: Vec<String> = changes
        .iter()
        .flat_map(|c| std::iter::once(&c.path).chain(c.from_path.as_ref()))
        .filter_map(|p| refused(p).map(|why| format!("{p} ({why})")))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The paths among `changes` (and rename sources) outside a sparse checkout
/// ([`crate::activity::merge::SPARSE_CHECKOUT`]): what a sparse task never saw and may never
/// copy back. Sorted, without repeats.
pub(crate) fn outside_sparse_checkout(changes: &[Change]) -> Vec<String> {
    let mut out: Vec<String> = changes
        .iter()
        .flat_map(|c| std::iter::once(&c.path).chain(c.from_path.as_ref()))
        .filter(|p| !crate::activity::merge::in_sparse_checkout(p))
        .cloned()
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Why git would refuse `path` in a tree, if it would.
fn refused(path: &str) -> Option<&'static str> {
    path.as_bytes().split(|b| *b == b'/').find_map(crate::activity::control_plane::bad_component)
}

/// What of a task's work is over the merge limits (`merge_max_file_size`,
/// `merge_max_attempt_size`), each file named with its size: its changed and untracked files
/// and its own evidence (`.lore-artifacts/<slug>/`), judged by their metadata before anything
/// is read or hashed (so before [`manifest`], whose diff reads what changed).
pub(crate) fn too_large(git: &WithIndex<'_>, base: &TreeSizes, slug: &str, limits: &MergeLimits) -> Result<Vec<String>> {
    let evidence = format!("{ARTIFACTS_DIR}/{slug}/");
    // The snapshot and other tasks' evidence are never copied back: they do not count.
    let counts = |p: &str| !excluded(p) || p.starts_with(&evidence);
    Ok(git.over_limits(base, limits, &counts)?.notes)
}

/// No entry of the index is told to be ignored: no assume-unchanged bit, and skip-worktree
/// only where guild-hall's own sparse checkout set it (outside `.lore/`).
fn honest_flags(git: &WithIndex<'_>) -> bool {
    let Ok(listing) = git.git(&["ls-files", "-v", "-z"]) else { return false };
    listing.split('\0').filter(|l| !l.is_empty()).all(|l| {
        let (tag, path) = l.split_at(1.min(l.len()));
        let path = path.trim_start();
        let assumed = tag.chars().next().is_some_and(|c| c.is_ascii_lowercase());
        let skipped = tag == "S";
        !assumed && (!skipped || (git.rec.sparse && !path.starts_with(".lore/")))
    })
}

/// Paths (and rename sources) that more than one task of the wave changes: `path → tasks`.
pub(crate) fn collisions(manifests: &[(String, Vec<Change>)]) -> BTreeMap<String, Vec<String>> {
    let mut by_path: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (task, changes) in manifests {
        let mut keys: Vec<&str> = changes.iter().flat_map(|c| std::iter::once(c.path.as_str()).chain(c.from_path.as_deref())).collect();
        keys.sort();
        keys.dedup();
        for k in keys {
            by_path.entry(k.to_string()).or_default().push(task.clone());
        }
    }
    by_path.retain(|_, tasks| tasks.len() > 1);
    by_path
}

/// Paths changed on the integration branch since `base` (by any commit reachable from its tip
/// and not from `base`) by commits that are not this wave's own copy-backs (`own_trailer`: the prefix of their trailers): what a person or a merge
/// changed while the wave ran, which a task's copy-back must never overwrite.
pub(crate) fn changed_since(
    repo: &Repository,
    integration: &str,
    base: Oid,
    own_trailer: &str,
) -> Result<std::collections::BTreeSet<String>> {
    let tip = repo.find_branch(integration, git2::BranchType::Local)?.get().peel_to_commit()?.id();
    let mut walk = repo.revwalk()?;
    walk.push(tip)?;
    walk.hide(base)?;
    // Every commit since the base, on every side: a commission's merge that reached the
    // integration branch only through a person's `land` merge (its second parent) is there too.
    // Ours only as guild-hall writes it: on the first-parent chain, the trailer in the last
    // paragraph; a squash merge whose summary names a task of this wave is the worker's word.
    let ours = crate::activity::trailers::ours_since(repo, tip, base, &[own_trailer])?;
    let mut out = std::collections::BTreeSet::new();
    for oid in walk {
        let oid = oid?;
        if ours.contains(&oid) {
            continue;
        }
        let c = repo.find_commit(oid)?;
        // A merge is compared with its parent on the integration branch's side (the base or
        // a descendant of it): what it brought in. Its first parent may be the person's branch
        // (`sync` fast-forwarding through a `land` merge), whose diff would name everything
        // the integration branch already had.
        let on_our_side = |p: &git2::Commit<'_>| p.id() == base || repo.graph_descendant_of(p.id(), base).unwrap_or(false);
        let parent = c.parents().find(on_our_side).or_else(|| c.parents().next()).map(|p| p.tree()).transpose()?;
        let diff = repo.diff_tree_to_tree(parent.as_ref(), Some(&c.tree()?), None)?;
        for d in diff.deltas() {
            for f in [d.old_file().path(), d.new_file().path()].into_iter().flatten() {
                out.insert(f.to_string_lossy().into_owned());
            }
        }
    }
    Ok(out)
}

/// What this wave's own copy-backs changed on the integration branch since `base`: each
/// commit of its first-parent chain whose trailer starts with `own_trailer`, by the task its
/// trailer names, with the paths it changed against its first parent.
pub(crate) fn changed_by_wave(repo: &Repository, integration: &str, base: Oid, own_trailer: &str) -> Result<Vec<(String, Vec<String>)>> {
    let tip = repo.find_branch(integration, git2::BranchType::Local)?.get().peel_to_commit()?.id();
    let mut out = Vec::new();
    for oid in crate::activity::trailers::first_parent_chain(repo, tip, &[base])? {
        let c = repo.find_commit(oid)?;
        let Ok(message) = c.message() else { continue };
        let Some(task) = crate::activity::trailers::of_message(message)
            .into_iter()
            .find(|l| l.starts_with(own_trailer))
            .and_then(|l| l.strip_prefix(crate::activity::names::TRAILERS[2]))
        else {
            continue;
        };
        let parent = c.parents().next().map(|p| p.tree()).transpose()?;
        let diff = repo.diff_tree_to_tree(parent.as_ref(), Some(&c.tree()?), None)?;
        let mut paths = Vec::new();
        for d in diff.deltas() {
            for f in [d.old_file().path(), d.new_file().path()].into_iter().flatten() {
                paths.push(f.to_string_lossy().into_owned());
            }
        }
        paths.retain(|p| !p.starts_with(".lore/plans/"));
        out.push((task.to_string(), paths));
    }
    Ok(out)
}

/// The blob and mode of a file in the worktree: its bytes, the executable bit, a symlink as
/// a symlink.
fn blob_of(repo: &Repository, file: &Path) -> Result<(Oid, u32)> {
    let meta = std::fs::symlink_metadata(file).with_context(|| format!("reading {}", file.display()))?;
    if meta.file_type().is_symlink() {
        let target = std::fs::read_link(file)?;
        let bytes = target.as_os_str().as_encoded_bytes();
        return Ok((repo.blob(bytes)?, 0o120000));
    }
    if !meta.is_file() {
        bail!("{} is not a file", file.display());
    }
    use std::os::unix::fs::PermissionsExt;
    let mode = if meta.permissions().mode() & 0o111 != 0 { 0o100755 } else { 0o100644 };
    Ok((repo.blob(&std::fs::read(file)?)?, mode))
}

fn entry(path: &str, id: Oid, mode: u32) -> git2::IndexEntry {
    git2::IndexEntry {
        ctime: git2::IndexTime::new(0, 0),
        mtime: git2::IndexTime::new(0, 0),
        dev: 0,
        ino: 0,
        mode,
        uid: 0,
        gid: 0,
        file_size: 0,
        id,
        flags: (path.len().min(0xfff)) as u16,
        flags_extended: 0,
        path: path.as_bytes().to_vec(),
    }
}

/// One task to land: its worktree (by record), its manifest, its evidence and where that goes,
/// its commit message and trailer.
#[derive(Clone, Copy)]
pub(crate) struct TaskLanding<'a> {
    pub(crate) rec: &'a WorktreeRecord,
    pub(crate) changes: &'a [Change],
    pub(crate) evidence: &'a Path,
    pub(crate) evidence_to: &'a str,
    pub(crate) message: &'a str,
    pub(crate) trailer: &'a str,
}

/// What landing one task came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Landed {
    Committed(Oid),
    /// A commit with the task's trailer is already there (a pass that died after it).
    Already(Oid),
    Waiting(String),
}

/// Land one task: its changes applied onto the integration tip, its evidence (the files under
/// `evidence`, its `.lore-artifacts/<slug>/`) moved into `evidence_to`
/// (`.lore/plans/<plan>/artifacts/<slug>/`), one commit with `trailer`; the
/// result checked to equal the worktree for every path it changed. Once: a commit with the
/// trailer since `base` means it is done.
pub(crate) fn land_task(repo: &Repository, integration: &str, base: Oid, task: &TaskLanding<'_>) -> Result<Landed> {
    let TaskLanding { rec, changes, evidence, evidence_to, message, trailer } = *task;
    if let Some(done) = crate::activity::merge::find_trailer(repo, integration, base, trailer)? {
        return Ok(Landed::Already(done));
    }
    let tip = repo.find_branch(integration, git2::BranchType::Local)?.get().peel_to_commit()?;
    let mut index = git2::Index::new()?;
    index.read_tree(&tip.tree()?)?;
    let mut expect: Vec<(String, Option<(Oid, u32)>)> = Vec::new();
    for c in changes {
        match c.op {
            Op::Rename => {
                if let Some(from) = &c.from_path {
                    index.remove_path(Path::new(from))?;
                    expect.push((from.clone(), None));
                }
                let (id, mode) = blob_of(repo, &rec.path.join(&c.path))?;
                index.add(&entry(&c.path, id, mode))?;
                expect.push((c.path.clone(), Some((id, mode))));
            }
            Op::Delete => {
                index.remove_path(Path::new(&c.path))?;
                expect.push((c.path.clone(), None));
            }
            Op::Add | Op::Modify | Op::Untracked => {
                let (id, mode) = blob_of(repo, &rec.path.join(&c.path))?;
                index.add(&entry(&c.path, id, mode))?;
                expect.push((c.path.clone(), Some((id, mode))));
            }
        }
    }
    // The evidence dir and its parent must be directories of the worktree, not links a worker
    // planted to have guild-hall read files from elsewhere.
    let real_dir = |p: &Path| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir());
    if real_dir(&rec.path.join(ARTIFACTS_DIR)) && real_dir(evidence) {
        for file in walk_files(evidence)? {
            let rel = file.strip_prefix(evidence).map_err(|e| anyhow::anyhow!("{e}"))?.to_string_lossy().into_owned();
            let dest = format!("{}/{rel}", evidence_to.trim_end_matches('/'));
            crate::artifact::ids::validate_rel_path(&dest)?;
            if let Some(why) = refused(&rel) {
                bail!("its evidence {ARTIFACTS_DIR}/…/{rel} is a path git refuses ({why})");
            }
            let (id, mode) = blob_of(repo, &file)?;
            index.add(&entry(&dest, id, mode))?;
            expect.push((dest, Some((id, mode))));
        }
    }
    let tree_id = index.write_tree_to(repo)?;
    let tree = repo.find_tree(tree_id)?;
    // The postcondition: the integration tree equals the worker's for every path it changed.
    for (path, want) in &expect {
        let got = tree.get_path(Path::new(path)).ok().map(|e| (e.id(), e.filemode() as u32));
        if got != *want {
            bail!("copy-back check failed for {path}: the integration tree does not equal the task's worktree (nothing committed)");
        }
    }
    let full = crate::activity::trailers::compose(message, trailer);
    match commit_onto(repo, integration, &tip, &tree, &full, &format!("copy-back {trailer}"))? {
        MergeOutcome::Merged(oid) => Ok(Landed::Committed(oid)),
        MergeOutcome::Waiting(why) => Ok(Landed::Waiting(why)),
        other => bail!("unexpected outcome {other:?}"),
    }
}

/// Every file (and symlink) under `dir`, sorted; symlinks are not followed.
fn walk_files(dir: &Path) -> Result<Vec<std::path::PathBuf>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d)? {
            let e = e?;
            let t = e.file_type()?;
            if t.is_dir() {
                stack.push(e.path());
            } else {
                out.push(e.path());
            }
        }
    }
    out.sort();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ch(op: Op, path: &str, from: Option<&str>) -> Change {
        Change { op, path: path.into(), from_path: from.map(str::to_string) }
    }

    #[test]
    fn collisions_include_rename_sources() {
        let m = vec![
            ("t1".to_string(), vec![ch(Op::Rename, "b.txt", Some("a.txt"))]),
            ("t2".to_string(), vec![ch(Op::Modify, "a.txt", None), ch(Op::Add, "c.txt", None)]),
            ("t3".to_string(), vec![ch(Op::Untracked, "d.txt", None)]),
        ];
        let c = collisions(&m);
        assert_eq!(c.len(), 1);
        assert_eq!(c["a.txt"], vec!["t1", "t2"]);
        assert!(collisions(&m[1..]).is_empty());
    }

    /// `sync` fast-forwarding the integration branch through the person's `land` merge (first
    /// parent: their branch): only what their branch brought counts as changed, not what the
    /// integration branch already had.
    #[test]
    fn a_merge_counts_only_what_it_brought_to_the_integration_branch() {
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = Repository::init(dir.path()).expect("init");
        let sig = git2::Signature::now("T", "t@example.com").expect("sig");
        let commit = |files: &[(&str, &str)], parents: &[Oid]| -> Oid {
            let mut tb = repo.treebuilder(None).expect("tb");
            for (name, text) in files {
                tb.insert(name, repo.blob(text.as_bytes()).expect("blob"), 0o100644).expect("insert");
            }
            let tree = repo.find_tree(tb.write().expect("tree")).expect("tree");
            let parents: Vec<git2::Commit<'_>> = parents.iter().map(|p| repo.find_commit(*p).expect("parent")).collect();
            repo.commit(None, &sig, &sig, "c", &tree, &parents.iter().collect::<Vec<_>>()).expect("commit")
        };
        let root = commit(&[("a.txt", "a")], &[]);
        let base = commit(&[("a.txt", "a"), ("notes.md", "work")], &[root]);
        let person = commit(&[("a.txt", "a"), ("p.txt", "mine")], &[root]);
        let landed = commit(&[("a.txt", "a"), ("notes.md", "work"), ("p.txt", "mine")], &[person, base]);
        let tip = commit(&[("a.txt", "a"), ("notes.md", "work"), ("p.txt", "mine"), ("q.txt", "more")], &[landed]);
        repo.branch("claude/main", &repo.find_commit(tip).expect("tip"), true).expect("branch");
        let changed = changed_since(&repo, "claude/main", base, "Guild-Hall-Task: plan:").expect("walk");
        assert_eq!(changed.into_iter().collect::<Vec<_>>(), vec!["p.txt".to_string(), "q.txt".to_string()]);
    }

    #[test]
    fn a_commit_reached_only_through_a_land_merge_is_counted() {
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = Repository::init(dir.path()).expect("init");
        let sig = git2::Signature::now("T", "t@example.com").expect("sig");
        let commit = |files: &[(&str, &str)], parents: &[Oid], msg: &str| -> Oid {
            let mut tb = repo.treebuilder(None).expect("tb");
            for (name, text) in files {
                tb.insert(name, repo.blob(text.as_bytes()).expect("blob"), 0o100644).expect("insert");
            }
            let tree = repo.find_tree(tb.write().expect("tree")).expect("tree");
            let parents: Vec<git2::Commit<'_>> = parents.iter().map(|p| repo.find_commit(*p).expect("parent")).collect();
            repo.commit(None, &sig, &sig, msg, &tree, &parents.iter().collect::<Vec<_>>()).expect("commit")
        };
        let root = commit(&[("a.txt", "a"), ("f.txt", "old")], &[], "root");
        let base = commit(&[("a.txt", "a"), ("f.txt", "old"), ("notes.md", "work")], &[root], "base");
        let x =
            commit(&[("a.txt", "a"), ("f.txt", "commission X"), ("notes.md", "work")], &[base], "x\n\nGuild-Hall-Commission: x attempt 1");
        let person = commit(&[("a.txt", "a"), ("f.txt", "old"), ("p.txt", "mine")], &[root], "p");
        let landed = commit(&[("a.txt", "a"), ("f.txt", "commission X"), ("notes.md", "work"), ("p.txt", "mine")], &[person, x], "land");
        repo.branch("claude/main", &repo.find_commit(landed).expect("tip"), true).expect("branch");
        let changed = changed_since(&repo, "claude/main", base, "Guild-Hall-Task: plan:").expect("walk");
        assert!(changed.contains("f.txt"), "{changed:?}");
    }

    #[test]
    fn exclusions_and_control_plane() {
        assert!(excluded(".lore-snapshot/x") && excluded(".lore-artifacts") && !excluded(".lore/x"));
        assert!(control_plane(".lore/commissions/a.md") && control_plane(".lore/guild-hall.yaml"));
        assert!(!control_plane(".lore/research/a.md") && !control_plane("src/lib.rs"));
    }
}
