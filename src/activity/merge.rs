//! The squash merge of an activity's branch into the integration branch, in memory, once
//! (a trailer marks it), with the `.lore/` conflict rule; never of a change to the control
//! plane, of a path git refuses, or of more than the merge limits; advancing a checkout of the
//! integration branch (or any branch a person has checked out: [`advance`]) only when no local
//! change of a person's would be touched. Landing never fails silently: whatever goes wrong
//! ends as a refusal that says what.

use std::path::{Path, PathBuf};

use git2::{BranchType, Oid, Repository};

use super::control_plane::{bad_component, is_control_plane};
use super::git::{signature, GitError, Result};
use super::reason::Reason;
use super::worktree::listing;
use crate::config::{human_size, MergeLimits};

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum MergeOutcome {
    Merged(Oid),
    /// A commit with the trailer is already on the integration branch (a re-run after a crash).
    AlreadyMerged(Oid),
    NothingToMerge,
    /// Conflicts (outside `.lore/`, or on a `.lore/` file a person committed): nothing was merged.
    Conflicts(Vec<String>),
    /// The activity changed the control plane (these paths): nothing was merged.
    ControlPlane(Vec<String>),
    /// The activity's tree holds paths git refuses (`.git/…`), each with why: nothing merged.
    BadPaths(Vec<String>),
    /// What the activity adds is over the merge limits (each file or the total, with its
    /// size): nothing was merged.
    TooLarge(Vec<String>),
    /// Not yet, and why: a checkout of the branch has local changes (or ignored, untracked or
    /// hidden files) the move would touch, or a lock file of git's is in the way.
    Waiting(String),
}

/// Squash-merge `activity` into `integration` as one commit, in memory. What the activity
/// changed since it forked (its tree against the merge base: the base its worktree was made
/// from, never the integration tip) must leave the control plane alone, hold only paths git
/// accepts and stay within `limits` (sizes from the objects' headers); else nothing is merged.
/// A conflict under `.lore/` goes to the activity side when only guild-hall's merges changed
/// the file on the integration side; any other conflict aborts with the paths. A checkout of
/// the integration branch is advanced only if no locally modified file is touched.
pub(crate) fn squash_merge(
    repo: &Repository,
    integration: &str,
    activity: &str,
    message: &str,
    trailer: &str,
    limits: &MergeLimits,
) -> Result<MergeOutcome> {
    let int_commit = repo.find_branch(integration, BranchType::Local)?.get().peel_to_commit()?;
    let act_commit = repo.find_branch(activity, BranchType::Local)?.get().peel_to_commit()?;
    let base = repo.merge_base(int_commit.id(), act_commit.id())?;

    // Idempotency: look for our trailer on the integration branch since the fork point.
    if let Some(oid) = super::trailers::find_on_chain(repo, int_commit.id(), base, trailer)? {
        return Ok(MergeOutcome::AlreadyMerged(oid));
    }

    let base_tree = repo.find_commit(base)?.tree()?;
    let int_tree = int_commit.tree()?;
    let act_tree = act_commit.tree()?;
    if let Some(refused) = judge_changes(repo, &base_tree, &act_tree, limits)? {
        return Ok(refused);
    }
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

    commit_onto(repo, integration, &int_commit, &tree, &super::trailers::compose(message, trailer), &format!("squash-merge {activity}"))
}

/// Commit `tree` onto the integration branch's tip `int_commit` with `message`, advancing any
/// checkout of the branch only where no local change of a person's is touched (else nothing
/// is done: `Waiting`, with why).
pub(crate) fn commit_onto(
    repo: &Repository,
    integration: &str,
    int_commit: &git2::Commit<'_>,
    tree: &git2::Tree<'_>,
    message: &str,
    what: &str,
) -> Result<MergeOutcome> {
    advance(repo, integration, int_commit, Target::New { tree, message, others: &[] }, what)
}

/// Where [`advance`] moves a branch: to a commit that exists (a fast-forward), or to a new
/// commit of `tree` whose first parent is the branch's tip and whose other parents are
/// `others` (a merge).
pub(crate) enum Target<'a> {
    Existing(Oid),
    New { tree: &'a git2::Tree<'a>, message: &'a str, others: &'a [&'a git2::Commit<'a>] },
}

/// Move `branch` from its tip `tip` to `to`, advancing every checkout of it (the main one, a
/// person's linked worktrees) only where no local change of a person's is touched; else
/// nothing is done: `Waiting`, with why. The one way guild-hall moves a branch a person may
/// have checked out: the integration branch (merges, copy-back, `sync`) and the base branch
/// (`land`). Our commits have our identity and run no hooks.
pub(crate) fn advance(repo: &Repository, branch: &str, tip: &git2::Commit<'_>, to: Target<'_>, what: &str) -> Result<MergeOutcome> {
    let ref_name = format!("refs/heads/{branch}");
    // A lock never fails the work that moves the branch: the move waits, naming the file.
    if let Some(why) = super::git::ref_lock_to_wait_for(repo, &ref_name) {
        return Ok(MergeOutcome::Waiting(why));
    }
    let new_tree = match &to {
        Target::Existing(oid) => repo.find_commit(*oid)?.tree()?,
        Target::New { tree, .. } => repo.find_tree(tree.id())?,
    };
    let blocked = in_the_way(repo, branch, &tip.tree()?, &new_tree)?;
    if let Some(why) = waiting_reason(branch, &blocked) {
        return Ok(MergeOutcome::Waiting(why));
    }
    // A checkout whose index a git holds (a person's `git commit` with its editor open, or a
    // git killed mid-write) is never written under it: the move waits, naming the lock. Never
    // removed by us: a commit in progress holds it for as long as its editor is open.
    for wt in checkouts_of(repo, &ref_name)? {
        let Ok(wrepo) = Repository::open(&wt) else { continue };
        let lock = wrepo.path().join("index.lock");
        if std::fs::symlink_metadata(&lock).is_ok() {
            return Ok(MergeOutcome::Waiting(format!(
                "{branch} is checked out at {} and its index is locked by {} (a git at work there, or one killed mid-write: remove it if no git runs)",
                wt.display(),
                lock.display()
            )));
        }
    }
    let commit = match to {
        Target::Existing(oid) => oid,
        Target::New { tree, message, others } => {
            let sig = signature(repo)?;
            let parents: Vec<&git2::Commit<'_>> = std::iter::once(tip).chain(others.iter().copied()).collect();
            repo.commit(None, &sig, &sig, message, tree, &parents)?
        }
    };
    let changed = changed_paths(repo, &tip.tree()?, &new_tree)?;
    for wt in checkouts_of(repo, &ref_name)? {
        match advance_checkout(&wt, &new_tree, &changed) {
            Ok(()) => {}
            // A person's git holding the checkout's index, or a file that turned up in the way
            // since the look: the move waits (a checkout advanced already is found done the
            // next time: `matches_target`).
            Err(GitError::Git(e)) if matches!(e.code(), git2::ErrorCode::Locked | git2::ErrorCode::Conflict) => {
                return Ok(MergeOutcome::Waiting(format!(
                    "{branch} is checked out at {} and cannot be advanced yet: {}",
                    wt.display(),
                    e.message()
                )));
            }
            Err(e) => return Err(e),
        }
    }
    let moved = super::git::updating_ref(repo, &ref_name, || {
        repo.reference_matching(&ref_name, commit, true, tip.id(), &format!("guild-hall: {what}"))
    });
    match moved {
        Ok(_) => Ok(MergeOutcome::Merged(commit)),
        // Taken between the look and the update.
        Err(e) if e.code() == git2::ErrorCode::Locked => {
            Ok(MergeOutcome::Waiting(super::git::ref_lock_to_wait_for(repo, &ref_name).unwrap_or_else(|| e.message().to_string())))
        }
        Err(e) => Err(e.into()),
    }
}

/// The checkouts of `branch` (the main one, a person's linked worktrees; never guild-hall's
/// own) whose local changes moving it from `from` to `to` would touch, each with those files.
pub(crate) fn in_the_way(
    repo: &Repository,
    branch: &str,
    from: &git2::Tree<'_>,
    to: &git2::Tree<'_>,
) -> Result<Vec<(PathBuf, Vec<String>)>> {
    let checkouts = checkouts_of(repo, &format!("refs/heads/{branch}"))?;
    let changed = changed_paths(repo, from, to)?;
    let mut out = Vec::new();
    for wt in checkouts {
        let touched = locally_modified(&wt, &changed, to)?;
        if !touched.is_empty() {
            out.push((wt, touched));
        }
    }
    Ok(out)
}

/// Why a branch cannot move, said one way: which checkout holds which local changes.
pub(crate) fn waiting_reason(branch: &str, blocked: &[(PathBuf, Vec<String>)]) -> Option<String> {
    let (wt, touched) = blocked.first()?;
    Some(format!(
        "{branch} is checked out at {} with local changes to {}; commit, stash or move them away (an ignored or untracked file in the way, and an edit git is told not to see with assume-unchanged or skip-worktree, count too: nothing of yours is overwritten or deleted)",
        wt.display(),
        listing(touched)
    ))
}

/// What the activity's own changes (`base` → `act`) may not do: touch the control plane, hold a
/// path git refuses, or go over the merge limits. Each new file's size comes from its object's
/// header; no content is read.
fn judge_changes(repo: &Repository, base: &git2::Tree<'_>, act: &git2::Tree<'_>, limits: &MergeLimits) -> Result<Option<MergeOutcome>> {
    let diff = repo.diff_tree_to_tree(Some(base), Some(act), None)?;
    let odb = repo.odb()?;
    let (mut control, mut bad, mut large) = (Vec::new(), Vec::new(), Vec::new());
    let mut sizes: Vec<(String, u64)> = Vec::new();
    for d in diff.deltas() {
        for f in [d.old_file(), d.new_file()] {
            let Some(raw) = f.path_bytes() else { continue };
            let path = String::from_utf8_lossy(raw).into_owned();
            if is_control_plane(&path) {
                control.push(path.clone());
            }
            if let Some(why) = raw.split(|b| *b == b'/').find_map(bad_component) {
                bad.push(format!("{path} ({why})"));
            }
        }
        let new = d.new_file();
        let counts = matches!(d.status(), git2::Delta::Added | git2::Delta::Modified | git2::Delta::Typechange);
        if counts && new.exists() && new.mode() != git2::FileMode::Commit {
            let path = new.path_bytes().map(|p| String::from_utf8_lossy(p).into_owned()).unwrap_or_default();
            let size = odb.read_header(new.id())?.0 as u64;
            if size > limits.file {
                large.push(format!("{path} is {}, over merge_max_file_size ({})", human_size(size), human_size(limits.file)));
            }
            sizes.push((path, size));
        }
    }
    let total: u64 = sizes.iter().map(|(_, n)| *n).sum();
    if total > limits.attempt {
        sizes.sort_by_key(|s| std::cmp::Reverse(s.1));
        let largest: Vec<String> = sizes.iter().take(5).map(|(p, n)| format!("{p} ({})", human_size(*n))).collect();
        large.push(format!(
            "its files come to {}, over merge_max_attempt_size ({}); the largest: {}",
            human_size(total),
            human_size(limits.attempt),
            largest.join(", ")
        ));
    }
    for v in [&mut control, &mut bad] {
        v.sort();
        v.dedup();
    }
    Ok(if !control.is_empty() {
        Some(MergeOutcome::ControlPlane(control))
    } else if !bad.is_empty() {
        Some(MergeOutcome::BadPaths(bad))
    } else if !large.is_empty() {
        Some(MergeOutcome::TooLarge(large))
    } else {
        None
    })
}

/// The commit on `integration`'s first-parent chain since `base` that carries `trailer`
/// ([`super::trailers`]): the work it marks has landed, and is never landed twice.
pub(crate) fn find_trailer(repo: &Repository, integration: &str, base: Oid, trailer: &str) -> Result<Option<Oid>> {
    let tip = repo.find_branch(integration, BranchType::Local)?.get().peel_to_commit()?.id();
    super::trailers::find_on_chain(repo, tip, base, trailer)
}

/// Every guild-hall trailer ([`super::names::TRAILERS`]) on `integration`'s first-parent chain,
/// in one walk: what a home that holds no record of an activity compares the artifacts' claims
/// with (git is the truth). Empty when the branch does not exist.
pub(crate) fn trailers_on(repo: &Repository, integration: &str) -> Result<std::collections::HashSet<String>> {
    let Ok(branch) = repo.find_branch(integration, BranchType::Local) else { return Ok(Default::default()) };
    let tip = branch.get().peel_to_commit()?.id();
    Ok(super::trailers::on_chains(repo, &[tip], &[], super::names::TRAILER_START)?.into_iter().map(|(_, line)| line).collect())
}

/// What landing an activity's work on the integration branch came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Landing {
    /// On the integration branch: the squash commit, or `None` when there was nothing to merge.
    Merged(Option<Oid>),
    /// Not merged, and why (`kind`: `tampered`, `conflict`, `control-plane`, `bad-path`,
    /// `too-large`, `outside-checkout` or `merge-failed`); the worker's work is secured on its
    /// branch. `conflicts`: the paths that conflicted (a `conflict`'s; else none).
    Refused { kind: &'static str, reason: String, conflicts: Vec<String> },
    /// Not yet, and why ([`MergeOutcome::Waiting`]; a lock on the activity's branch too).
    Waiting(String),
    /// The worker's files could not even be committed to its branch (a full disk, say), and
    /// why: nothing merged, and its worktree (and object store) must be kept, to be secured
    /// again later; nothing of it is lost.
    Unsecured(String),
}

/// The commit messages of a landing: the leftovers commit on the activity's branch, and the
/// squash merge with the trailer that marks it as done.
pub(crate) struct Messages {
    pub(crate) leftovers: String,
    pub(crate) merge: String,
    pub(crate) trailer: String,
}

/// Why a worker's change to the control plane is never merged, said the same way for every kind.
pub(crate) const CONTROL_PLANE_RULE: &str = "workers never change commissions, meetings, plans, worker packages or guild-hall.yaml; a worker asks the person with its toolbox's ask, and asks for a meeting with request_meeting (a commission's) or propose_followup (a meeting's)";

/// Land an activity's work, the one way for every kind: commit what the worker left in its
/// worktree onto its branch (by the record, never by what the worktree says), refuse a
/// worktree that is no longer the one guild-hall made, then squash-merge the branch into the
/// integration branch once (`trailer`). `after_secure` runs between the two (fault injection,
/// and the caller's own look at the secured branch: a refusal it returns merges nothing).
/// Every way this can go wrong ends in a [`Landing`] whose text says what failed: a landing
/// never errors out to be retried in silence.
pub(crate) fn land(
    project_root: &Path,
    rec: &super::worktree::WorktreeRecord,
    worker_objects: Option<&Path>,
    integration: &str,
    messages: &Messages,
    limits: &MergeLimits,
    after_secure: impl FnOnce() -> Option<Landing>,
) -> Landing {
    let Messages { leftovers, merge: message, trailer } = messages;
    let branch = &rec.branch;
    // A lock file on the activity's branch (a crash's leftover, or a person's git at work)
    // never fails the work: the landing waits, naming it.
    if let Some(why) =
        super::git::open(project_root).ok().and_then(|r| super::git::ref_lock_to_wait_for(&r, &format!("refs/heads/{branch}")))
    {
        return Landing::Waiting(Reason::MergeWaiting(why).to_string());
    }
    let secured = match super::worktree::secure_work(rec, worker_objects, leftovers, limits) {
        Ok(s) => s,
        Err(e) if super::git::is_lock_error(&e) => return Landing::Waiting(Reason::MergeWaiting(e.to_string()).to_string()),
        Err(e) => {
            return Landing::Unsecured(format!(
                "could not commit the worker's files to {branch}: {e}; nothing merged, its worktree {} kept to try again",
                rec.path.display()
            ))
        }
    };
    if !secured.tampered.is_empty() {
        // Never merge what came out of a worktree that is no longer the one we made.
        let reason = format!("worktree tampered with: {}; nothing merged, its files kept on {branch}", secured.tampered.join("; "));
        return Landing::Refused { kind: "tampered", reason, conflicts: Vec::new() };
    }
    if !secured.too_large.is_empty() {
        let reason = format!("too large to merge: {}; nothing merged, the rest of its work kept on {branch}", listing(&secured.too_large));
        return Landing::Refused { kind: "too-large", reason, conflicts: Vec::new() };
    }
    if let Some(refused) = after_secure() {
        return refused;
    }
    if rec.sparse {
        match outside_sparse_checkout(project_root, integration, branch) {
            Ok(paths) if paths.is_empty() => {}
            Ok(paths) => {
                let reason = format!(
                    "its worker saw only {SPARSE_CHECKOUT} (a sparse checkout) and changed paths outside it: {}; nothing merged, its work kept on {branch}",
                    listing(&paths)
                );
                return Landing::Refused { kind: "outside-checkout", reason, conflicts: Vec::new() };
            }
            Err(e) => {
                let reason =
                    format!("could not tell what {branch} changes outside its sparse checkout: {e}; nothing merged, branch {branch} kept");
                return Landing::Refused { kind: "merge-failed", reason, conflicts: Vec::new() };
            }
        }
    }
    let merged = {
        // One squash merge at a time in this process (finishes run at once): each moves the
        // integration branch from the tip it read, and a second would find it moved.
        static MERGING: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let _one = MERGING.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        super::git::open(project_root).and_then(|repo| squash_merge(&repo, integration, branch, message, trailer, limits))
    };
    match merged {
        Ok(MergeOutcome::Merged(oid) | MergeOutcome::AlreadyMerged(oid)) => Landing::Merged(Some(oid)),
        Ok(MergeOutcome::NothingToMerge) => Landing::Merged(None),
        Ok(MergeOutcome::Conflicts(paths)) => Landing::Refused {
            kind: "conflict",
            reason: format!("merge conflict in: {}; nothing merged, branch {branch} kept", paths.join(", ")),
            conflicts: paths,
        },
        Ok(MergeOutcome::ControlPlane(paths)) => Landing::Refused {
            kind: "control-plane",
            reason: format!(
                "the worker changed the control plane: {} ({CONTROL_PLANE_RULE}); nothing merged, branch {branch} kept",
                listing(&paths)
            ),
            conflicts: Vec::new(),
        },
        Ok(MergeOutcome::BadPaths(paths)) => Landing::Refused {
            kind: "bad-path",
            reason: format!("its work holds paths git refuses to check out: {}; nothing merged, branch {branch} kept", listing(&paths)),
            conflicts: Vec::new(),
        },
        Ok(MergeOutcome::TooLarge(what)) => Landing::Refused {
            kind: "too-large",
            reason: format!("too large to merge: {}; nothing merged, branch {branch} kept", listing(&what)),
            conflicts: Vec::new(),
        },
        Ok(MergeOutcome::Waiting(why)) => Landing::Waiting(Reason::MergeWaiting(why).to_string()),
        Err(e) => Landing::Refused {
            kind: "merge-failed",
            reason: format!("the merge into {integration} failed: {e}; nothing merged, branch {branch} kept"),
            conflicts: Vec::new(),
        },
    }
}

/// Bring the integration branch's tip into `activity` for a worker to resolve what conflicted:
/// one two-parent merge commit on `activity` (its tip first), every conflicting file in it
/// holding git's conflict markers (a file one side deleted: the side that kept it), made with
/// guild-hall's identity and no hooks, carrying no trailer (it lands nothing). The squash of
/// the worker's next result then starts from the integration tip and sees only its resolution.
/// Nothing is done when `activity` holds the tip already (a dispatch run again after a crash):
/// `None`; else the paths left with markers.
pub(crate) fn merge_in_for_resolution(repo: &Repository, integration: &str, activity: &str) -> Result<Option<Vec<String>>> {
    let int_commit = repo.find_branch(integration, BranchType::Local)?.get().peel_to_commit()?;
    let act_commit = repo.find_branch(activity, BranchType::Local)?.get().peel_to_commit()?;
    if int_commit.id() == act_commit.id() || repo.graph_descendant_of(act_commit.id(), int_commit.id())? {
        return Ok(None);
    }
    let mut index = repo.merge_commits(&act_commit, &int_commit, None)?;
    let mut marked = Vec::new();
    if index.has_conflicts() {
        let conflicts: Vec<_> = index.conflicts()?.collect::<std::result::Result<_, _>>()?;
        for c in conflicts {
            let Some(path) = c.our.as_ref().or(c.their.as_ref()).map(|e| String::from_utf8_lossy(&e.path).into_owned()) else {
                continue;
            };
            let content = |e: &Option<git2::IndexEntry>| -> Result<Vec<u8>> {
                Ok(match e {
                    Some(e) => repo.find_blob(e.id)?.content().to_vec(),
                    None => Vec::new(),
                })
            };
            let is_file = |e: &Option<git2::IndexEntry>| e.as_ref().is_some_and(|e| e.mode & 0o170000 == 0o100000);
            let blob = if is_file(&c.our) && is_file(&c.their) {
                let (base, ours, theirs) = (content(&c.ancestor)?, content(&c.our)?, content(&c.their)?);
                let (mut b, mut o, mut t) = (git2::MergeFileInput::new(), git2::MergeFileInput::new(), git2::MergeFileInput::new());
                b.content(&base).path(path.as_str());
                o.content(&ours).path(path.as_str());
                t.content(&theirs).path(path.as_str());
                let mut opts = git2::MergeFileOptions::new();
                opts.our_label(activity).their_label(integration).ancestor_label("base");
                let merged = git2::merge_file(&b, &o, &t, Some(&mut opts))?;
                Some(repo.blob(merged.content())?)
            } else {
                // A symlink, or a file one side deleted: the side that has it, unmerged.
                None
            };
            let Some(mut entry) = c.our.or(c.their) else { continue };
            if let Some(blob) = blob {
                entry.id = blob;
                entry.file_size = repo.find_blob(blob).map_or(0, |b| u32::try_from(b.size()).unwrap_or(u32::MAX));
            }
            entry.flags &= !0x3000; // clear the conflict stage bits
            index.remove_path(Path::new(&path))?;
            index.add(&entry)?;
            marked.push(path);
        }
    }
    marked.sort();
    marked.dedup();
    let tree = repo.find_tree(index.write_tree_to(repo)?)?;
    let sig = signature(repo)?;
    let message = format!(
        "guild-hall: merge {integration} into {activity}\n\nConflicts left for its worker to resolve: {}",
        if marked.is_empty() { "none".to_string() } else { marked.join(", ") }
    );
    repo.commit(Some(&format!("refs/heads/{activity}")), &sig, &sig, &message, &tree, &[&act_commit, &int_commit])?;
    Ok(Some(marked))
}

/// Which of `paths` still hold conflict markers at `activity`'s tip (a line opening with
/// `<<<<<<< ` and one with `>>>>>>> `): read from git's objects, never the worktree.
pub(crate) fn markers_left(project_root: &Path, activity: &str, paths: &[String]) -> Result<Vec<String>> {
    let repo = super::git::open(project_root)?;
    let tree = repo.find_branch(activity, BranchType::Local)?.get().peel_to_tree()?;
    let mut left = Vec::new();
    for path in paths {
        let Ok(entry) = tree.get_path(Path::new(path)) else { continue };
        let Ok(blob) = repo.find_blob(entry.id()) else { continue };
        let has = |marker: &[u8]| blob.content().split(|b| *b == b'\n').any(|line| line.starts_with(marker));
        if has(b"<<<<<<< ") && has(b">>>>>>> ") {
            left.push(path.clone());
        }
    }
    Ok(left)
}

/// What a sparse worktree checks out, and so all a sparse attempt may change.
pub(crate) const SPARSE_CHECKOUT: &str = ".lore/";

/// Whether a sparse attempt saw `path` (it is under [`SPARSE_CHECKOUT`]).
pub(crate) fn in_sparse_checkout(path: &str) -> bool {
    path.starts_with(SPARSE_CHECKOUT)
}

/// The paths outside [`SPARSE_CHECKOUT`] that `activity` changes since it forked from
/// `integration` (its tree against their merge base: the worker's own commits and the
/// leftovers secured onto it alike), sorted: what a sparse attempt, which never saw them,
/// may never land.
pub(crate) fn outside_sparse_checkout(project_root: &Path, integration: &str, activity: &str) -> Result<Vec<String>> {
    let repo = super::git::open(project_root)?;
    let int = repo.find_branch(integration, BranchType::Local)?.get().peel_to_commit()?;
    let act = repo.find_branch(activity, BranchType::Local)?.get().peel_to_commit()?;
    let base = repo.find_commit(repo.merge_base(int.id(), act.id())?)?;
    let mut paths: Vec<String> =
        changed_paths(&repo, &base.tree()?, &act.tree()?)?.into_iter().filter(|p| !in_sparse_checkout(p)).collect();
    paths.sort();
    Ok(paths)
}

/// Whether every commit on `tip`'s side since `base` that changed `path` is one of guild-hall's
/// squash merges: on the first-parent chain and carrying one of the
/// [`TRAILERS`](super::names::TRAILERS) as guild-hall writes them ([`super::trailers`]).
fn only_ours_changed(repo: &Repository, tip: Oid, base: Oid, path: &str) -> Result<bool> {
    let ours = super::trailers::ours_since(repo, tip, base, &super::names::TRAILERS)?;
    let mut walk = repo.revwalk()?;
    walk.push(tip)?;
    walk.hide(base)?;
    let at = |tree: &git2::Tree<'_>| tree.get_path(Path::new(path)).ok().map(|e| e.id());
    for oid in walk {
        let oid = oid?;
        let commit = repo.find_commit(oid)?;
        let mine = at(&commit.tree()?);
        let parents: Vec<_> = commit.parents().collect();
        let changed = if parents.is_empty() { mine.is_some() } else { parents.iter().any(|p| p.tree().ok().and_then(|t| at(&t)) != mine) };
        if changed && !ours.contains(&oid) {
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
        // Never over an ignored file of the person's (`.env`): libgit2's safe checkout would
        // replace one. `in_the_way` has refused such a move already; this is the last guard.
        co.safe().overwrite_ignored(false);
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
        // guild-hall's own activity worktrees are never "a person's checkout" (a worker could
        // point its HEAD at the integration branch to stall every merge). Ours is told by
        // where it is, `<home>/worktrees/<project>/<prefix><id>`, which a worker cannot move,
        // not by its name alone: a person's `../task-x` on `main` is theirs.
        if is_activity_worktree(name, wt.path()) {
            continue;
        }
        let Ok(wrepo) = Repository::open_from_worktree(&wt) else { continue };
        if wrepo.find_reference("HEAD").ok().and_then(|h| h.symbolic_target().ok().flatten().map(str::to_string)).as_deref()
            == Some(refname)
        {
            out.push(wt.path().to_path_buf());
        }
    }
    Ok(out)
}

/// Whether the linked worktree `name` at `path` is one of guild-hall's activity worktrees: named
/// with an activity's prefix, and at `<dir named worktrees>/<project>/<name>` (the home's
/// layout, `config::Home::worktrees_dir`).
fn is_activity_worktree(name: &str, path: &Path) -> bool {
    crate::config::worktree_prefix::ALL.iter().any(|p| name.starts_with(p))
        && path.file_name().is_some_and(|f| f == name)
        && path.parent().and_then(Path::parent).and_then(Path::file_name).is_some_and(|d| d == "worktrees")
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

/// Whether the file at `path` in the checkout `wt` is already what `target` holds there: the
/// same bytes and the same kind (executable or not, a symlink or not) — a change of mode alone
/// is a change — or absent from both.
fn matches_target(wt: &Path, path: &str, target: &git2::Tree<'_>) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let file = wt.join(path);
    let (meta, entry) = match (std::fs::symlink_metadata(&file), target.get_path(Path::new(path))) {
        (Err(_), Err(_)) => return true,
        (Ok(meta), Ok(entry)) => (meta, entry),
        _ => return false,
    };
    let mode = if meta.file_type().is_symlink() {
        0o120000
    } else if meta.permissions().mode() & 0o111 != 0 {
        0o100755
    } else {
        0o100644
    };
    if entry.filemode() != mode {
        return false;
    }
    let on_disk = if meta.file_type().is_symlink() {
        std::fs::read_link(&file).ok().and_then(|t| Oid::hash_object(git2::ObjectType::Blob, t.as_os_str().as_encoded_bytes()).ok())
    } else {
        Oid::hash_file(git2::ObjectType::Blob, &file).ok()
    };
    on_disk == Some(entry.id())
}

/// Which of `paths` have staged or unstaged changes (or are untracked) in the checkout at `wt`,
/// other than ones already equal to the merge result (an advance interrupted by a crash); and
/// what `git status` does not show but the move would overwrite or delete
/// ([`hidden_in_the_way`]).
fn locally_modified(wt: &Path, paths: &[String], target: &git2::Tree<'_>) -> Result<Vec<String>> {
    let mut touched = status_in_the_way(wt, paths, target)?;
    for p in hidden_in_the_way(wt, paths, target)? {
        if !touched.contains(&p) {
            touched.push(p);
        }
    }
    Ok(touched)
}

/// What of the person's `git status` leaves out and moving the checkout at `wt` over `paths`
/// would overwrite or delete: an ignored file (or directory) at a path the move writes, an
/// ignored or untracked file where it needs a directory, and an edit of a tracked file that git
/// is told not to look at (assume-unchanged, skip-worktree). A file already as `target` has it
/// is no change (an advance interrupted by a crash). Looked up path by path: an ignored tree
/// (a build's output) is never walked.
fn hidden_in_the_way(wt: &Path, paths: &[String], target: &git2::Tree<'_>) -> Result<Vec<String>> {
    /// The index entry flags git sets for `update-index --assume-unchanged` (`CE_VALID`) and
    /// `--skip-worktree` (`CE_SKIP_WORKTREE`, an extended flag).
    const ASSUME_VALID: u16 = 0x8000;
    const SKIP_WORKTREE: u16 = 0x4000;
    let repo = Repository::open(wt)?;
    let index = repo.index()?;
    let tracked = |p: &str| index.get_path(Path::new(p), 0).is_some();
    let mut found = Vec::new();
    for path in paths {
        if let Some(entry) = index.get_path(Path::new(path), 0) {
            let hidden = entry.flags & ASSUME_VALID != 0 || entry.flags_extended & SKIP_WORKTREE != 0;
            let file = wt.join(path);
            if hidden && std::fs::symlink_metadata(&file).is_ok() && !matches_target(wt, path, target) {
                let on_disk = match std::fs::symlink_metadata(&file) {
                    Ok(m) if m.file_type().is_symlink() => std::fs::read_link(&file)
                        .ok()
                        .and_then(|t| Oid::hash_object(git2::ObjectType::Blob, t.as_os_str().as_encoded_bytes()).ok()),
                    _ => Oid::hash_file(git2::ObjectType::Blob, &file).ok(),
                };
                if on_disk != Some(entry.id) {
                    found.push(path.clone());
                }
            }
            continue;
        }
        // Not tracked here: whatever is on disk at the path is the person's (the status above
        // named it if it is untracked and not ignored).
        if std::fs::symlink_metadata(wt.join(path)).is_ok() && !matches_target(wt, path, target) {
            found.push(path.clone());
        }
        // A file of theirs where the move needs a directory.
        let mut dir = Path::new(path.as_str()).parent();
        while let Some(d) = dir.filter(|d| !d.as_os_str().is_empty()) {
            let shown = d.to_string_lossy().into_owned();
            if std::fs::symlink_metadata(wt.join(d)).is_ok_and(|m| !m.is_dir()) && !tracked(&shown) {
                found.push(shown);
            }
            dir = d.parent();
        }
    }
    found.sort();
    found.dedup();
    Ok(found)
}

/// Which of `paths` `git status` shows with changes in the checkout at `wt` (staged, unstaged or
/// untracked, ignored files left out), other than ones already equal to `target`.
fn status_in_the_way(wt: &Path, paths: &[String], target: &git2::Tree<'_>) -> Result<Vec<String>> {
    let repo = Repository::open(wt)?;
    let mut opts = git2::StatusOptions::new();
    opts.include_untracked(true).recurse_untracked_dirs(true);
    let statuses = repo.statuses(Some(&mut opts))?;
    let mut touched = Vec::new();
    for s in statuses.iter() {
        if let Ok(p) = s.path() {
            // A path the move changes, or one in its way: a file where it puts a directory, or
            // a file inside a directory it replaces with a file.
            let in_its_way = |c: &String| {
                c == p
                    || c.strip_prefix(p).is_some_and(|r| r.starts_with('/'))
                    || p.strip_prefix(c.as_str()).is_some_and(|r| r.starts_with('/'))
            };
            if paths.iter().any(in_its_way) && !s.status().is_ignored() && !matches_target(wt, p, target) {
                touched.push(p.to_string());
            }
        }
    }
    Ok(touched)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A commit on `branch` (made if missing, from `parent`) whose tree is `files` (path, text).
    fn commit(repo: &Repository, branch: &str, parent: Option<Oid>, files: &[(&str, &str)]) -> Oid {
        let mut index = git2::Index::new().expect("index");
        for (path, text) in files {
            let id = repo.blob(text.as_bytes()).expect("blob");
            let entry = git2::IndexEntry {
                ctime: git2::IndexTime::new(0, 0),
                mtime: git2::IndexTime::new(0, 0),
                dev: 0,
                ino: 0,
                mode: 0o100644,
                uid: 0,
                gid: 0,
                file_size: text.len() as u32,
                id,
                flags: 0,
                flags_extended: 0,
                path: path.as_bytes().to_vec(),
            };
            index.add(&entry).expect("add");
        }
        let tree = repo.find_tree(index.write_tree_to(repo).expect("tree")).expect("tree");
        let sig = git2::Signature::now("t", "t@example.com").expect("sig");
        let parents: Vec<git2::Commit<'_>> = parent.map(|p| repo.find_commit(p).expect("parent")).into_iter().collect();
        let refs: Vec<&git2::Commit<'_>> = parents.iter().collect();
        repo.commit(Some(&format!("refs/heads/{branch}")), &sig, &sig, "c", &tree, &refs).expect("commit")
    }

    #[test]
    fn the_integration_tip_is_merged_in_once_with_markers_in_what_conflicted() {
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = Repository::init(dir.path()).expect("init");
        let base = commit(&repo, "int", None, &[("a.txt", "one\n"), ("gone.txt", "kept\n"), ("same.txt", "x\n")]);
        repo.branch("act", &repo.find_commit(base).expect("base"), false).expect("branch");
        let act =
            commit(&repo, "act", Some(base), &[("a.txt", "the worker's\n"), ("gone.txt", "changed by the worker\n"), ("same.txt", "x\n")]);
        let int = commit(&repo, "int", Some(base), &[("a.txt", "a person's\n"), ("same.txt", "x\n"), ("new.txt", "new\n")]);

        let marked = merge_in_for_resolution(&repo, "int", "act").expect("merge").expect("merged");
        assert_eq!(marked, ["a.txt", "gone.txt"]);
        let tip = repo.find_branch("act", BranchType::Local).expect("act").get().peel_to_commit().expect("tip");
        assert_eq!(tip.parent_ids().collect::<Vec<_>>(), [act, int], "a two-parent merge, the branch first");
        let text = |path: &str| {
            let entry = tip.tree().expect("tree").get_path(Path::new(path)).expect(path).id();
            String::from_utf8(repo.find_blob(entry).expect("blob").content().to_vec()).expect("utf8")
        };
        let a = text("a.txt");
        assert!(a.contains("<<<<<<< act") && a.contains("the worker's") && a.contains("a person's") && a.contains(">>>>>>> int"), "{a}");
        assert_eq!(text("gone.txt"), "changed by the worker\n", "deleted on one side: the side that kept it");
        assert_eq!(text("new.txt"), "new\n");
        assert_eq!(markers_left(dir.path(), "act", &["a.txt".into(), "gone.txt".into(), "missing.txt".into()]).expect("look"), ["a.txt"]);
        // Done once: the tip is on the branch now.
        assert_eq!(merge_in_for_resolution(&repo, "int", "act").expect("again"), None);
    }
}
