//! A project's checkout and its remotes, for runs that start from a clone (CI, a teammate's
//! machine): which remote holds the integration branch, fetching and adopting it, switching the
//! checkout to it, committing what guild-hall wrote there, and pushing it back without force.

use git2::{BranchType, Oid, Repository};

use super::git::{canonical, cli, cli_remote, signature, At, GitError, Result};
use super::merge::MergeOutcome;

/// The remote-tracking ref to start `branch` from: `origin`'s when it has one, else that of the
/// only remote that has it; `None` when no remote has it (or several do and none is `origin`).
pub(crate) fn tracking_ref(repo: &Repository, branch: &str) -> Option<String> {
    let at = |remote: &str| format!("refs/remotes/{remote}/{branch}");
    if repo.find_reference(&at("origin")).is_ok() {
        return Some(at("origin"));
    }
    let remotes = repo.remotes().ok()?;
    let with: Vec<&str> = remotes.iter().flatten().flatten().filter(|r| repo.find_reference(&at(r)).is_ok()).collect();
    match with.as_slice() {
        [only] => Some(at(only)),
        _ => None,
    }
}

/// `git fetch <remote>`: its branches into `refs/remotes/<remote>/`, as configured.
pub(crate) fn fetch(repo: &Repository, remote: &str) -> Result<()> {
    let out = cli_remote(&canonical(repo.commondir()), remote, &["fetch", "--quiet", remote])?;
    if !out.status.success() {
        return Err(GitError::Cli { args: format!("fetch {remote}"), stderr: String::from_utf8_lossy(&out.stderr).trim().to_string() });
    }
    Ok(())
}

/// What [`adopt`] did with the local branch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Adopted {
    /// The remote has no such branch: the local one (if any) is all there is.
    NoRemote,
    /// Created at the remote's commit.
    Created(Oid),
    /// Moved forward to the remote's commit.
    FastForwarded(Oid),
    /// Moved to the remote's commit from a local branch that held nothing but its own empty
    /// beginning ([`Standing::BehindItsOwnBeginning`]).
    PastItsBeginning(Oid),
    /// Already at the remote's commit.
    UpToDate,
    /// Holds the remote's commit and more (work not pushed yet).
    Ahead,
}

/// Where a local branch's tip stands to its remote's copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Standing {
    Same,
    /// The local one holds the remote's and more.
    Ahead,
    /// The remote's holds the local one and more: a fast-forward.
    Behind,
    /// Each has commits the other lacks, and the local one's are only guild-hall's empty
    /// beginnings of an integration branch ([`super::trailers::begins_message`]: the files of
    /// the commit below): a clone that ran `init` before its team's CI pushed its own. Taking
    /// the remote's loses nothing.
    BehindItsOwnBeginning,
    /// Each has commits the other lacks.
    Diverged,
}

/// How the local tip `mine` stands to the remote's `theirs`.
pub(crate) fn standing(repo: &Repository, mine: Oid, theirs: Oid) -> Result<Standing> {
    if mine == theirs {
        return Ok(Standing::Same);
    }
    if repo.graph_descendant_of(mine, theirs)? {
        return Ok(Standing::Ahead);
    }
    if repo.graph_descendant_of(theirs, mine)? {
        return Ok(Standing::Behind);
    }
    let mut walk = repo.revwalk()?;
    walk.push(mine)?;
    walk.hide(theirs)?;
    for oid in walk {
        let commit = repo.find_commit(oid?)?;
        let begins = commit.message().is_ok_and(|m| super::trailers::of_message(m).iter().any(|l| l.starts_with(super::trailers::BEGINS)));
        let empty = commit.parent_count() == 1 && commit.parent(0)?.tree_id() == commit.tree_id();
        if !(begins && empty) {
            return Ok(Standing::Diverged);
        }
    }
    Ok(Standing::BehindItsOwnBeginning)
}

/// Make the local `branch` hold `<remote>/<branch>` (after a [`fetch`]): create it there, or
/// fast-forward it (advancing a checkout of it as a landing does), or move it there from a
/// local branch that holds nothing but its own empty beginning. Never a rewrite of work: a
/// local branch that diverged from the remote's is an error that says so, and nothing is
/// changed.
pub(crate) fn adopt(repo: &Repository, remote: &str, branch: &str) -> Result<Adopted> {
    let tracking = format!("refs/remotes/{remote}/{branch}");
    let Ok(theirs) = repo.find_reference(&tracking).and_then(|r| r.peel_to_commit()) else {
        return Ok(Adopted::NoRemote);
    };
    let Ok(local) = repo.find_branch(branch, BranchType::Local) else {
        repo.branch(branch, &theirs, false)?;
        return Ok(Adopted::Created(theirs.id()));
    };
    let mine = local.get().peel_to_commit()?;
    let standing = standing(repo, mine.id(), theirs.id())?;
    match standing {
        Standing::Same => return Ok(Adopted::UpToDate),
        Standing::Ahead => return Ok(Adopted::Ahead),
        Standing::Diverged => {
            return Err(GitError::Other(format!(
                "the local {branch} ({}) and {remote}/{branch} ({}) have diverged: each has commits the other lacks; \
                 bring them together by hand (git merge {remote}/{branch} on {branch}), nothing was changed",
                short(mine.id()),
                short(theirs.id())
            )))
        }
        Standing::Behind | Standing::BehindItsOwnBeginning => {}
    }
    match super::merge::advance(
        repo,
        branch,
        &mine,
        super::merge::Target::Existing(theirs.id()),
        &format!("fast-forward to {remote}/{branch}"),
    )? {
        MergeOutcome::Waiting(why) => Err(GitError::Other(format!("cannot fast-forward {branch} to {remote}/{branch}: {why}"))),
        _ if standing == Standing::Behind => Ok(Adopted::FastForwarded(theirs.id())),
        _ => Ok(Adopted::PastItsBeginning(theirs.id())),
    }
}

/// The checkout's changes, staged, unstaged or untracked (ignored files left out), by path.
pub(crate) fn changes(repo: &Repository) -> Result<Vec<String>> {
    let mut opts = git2::StatusOptions::new();
    opts.include_untracked(true).recurse_untracked_dirs(true).include_ignored(false);
    let statuses = repo.statuses(Some(&mut opts))?;
    Ok(statuses.iter().map(|s| String::from_utf8_lossy(s.path_bytes()).into_owned()).collect())
}

/// The remote's default branch (`refs/remotes/<remote>/HEAD`, which `git clone` sets), by its
/// name there (`main`).
pub(crate) fn default_branch(repo: &Repository, remote: &str) -> Option<String> {
    let head = repo.find_reference(&format!("refs/remotes/{remote}/HEAD")).ok()?;
    let target = head.symbolic_target().ok().flatten()?;
    target.strip_prefix(&format!("refs/remotes/{remote}/")).map(str::to_string)
}

/// The branch checked out at the project's checkout, or `None` when HEAD is detached.
pub(crate) fn current_branch(repo: &Repository) -> Option<String> {
    let head = repo.find_reference("HEAD").ok()?;
    head.symbolic_target().ok().flatten().and_then(|t| t.strip_prefix("refs/heads/")).map(str::to_string)
}

/// The main checkout of the repository: its common dir and its work tree. A linked worktree
/// is refused: our git calls never use a worktree's admin dir (see [`super::git`]).
fn main_checkout(repo: &Repository) -> Result<(std::path::PathBuf, std::path::PathBuf)> {
    match repo.workdir() {
        Some(wd) if !repo.is_worktree() => Ok((canonical(repo.commondir()), canonical(wd))),
        _ => Err(GitError::Other(format!(
            "{} is not the repository's main checkout (a bare repository or a linked worktree)",
            repo.workdir().unwrap_or(repo.path()).display()
        ))),
    }
}

/// Check out `branch` in the repository's main checkout (which must have no changes in the way:
/// git refuses rather than overwrite one).
pub(crate) fn switch(repo: &Repository, branch: &str) -> Result<()> {
    let (common, root) = main_checkout(repo)?;
    cli(&At::repo(&common, &root, None), &["checkout", "-q", branch, "--"], None)?;
    Ok(())
}

/// Commit the changes to `paths` (relative to the main checkout; a deleted one is committed
/// as deleted) onto the checked-out branch with `message`, our identity and no hooks. Returns
/// the commit, or `None` when `paths` is empty. Anything else already staged is committed with
/// it: call it on a checkout that was clean.
pub(crate) fn commit_paths(repo: &Repository, paths: &[String], message: &str) -> Result<Option<Oid>> {
    if paths.is_empty() {
        return Ok(None);
    }
    let (common, root) = main_checkout(repo)?;
    let at = At::repo(&common, &root, None);
    let mut add = vec!["add", "-A", "--"];
    add.extend(paths.iter().map(String::as_str));
    cli(&at, &add, None)?;
    let sig = signature(repo)?;
    // The index holds nothing else: callers start from a clean checkout, and a landing
    // advancing it leaves its index equal to the new commit.
    cli(&at, &["commit", "-q", "--no-verify", "-m", message], Some(&sig))?;
    Ok(Some(repo.head()?.peel_to_commit()?.id()))
}

/// What became of a [`push`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Push {
    /// The remote's branch now holds ours.
    Pushed,
    /// The remote's branch was already there.
    UpToDate,
    /// Refused as not a fast-forward (the remote moved on since we fetched), with git's words.
    Rejected(String),
}

/// `git push <remote> <branch>` (with `dry_run`, `--dry-run`: the remote is asked, nothing
/// sent), never forced: a remote that moved on since our fetch refuses it
/// ([`Push::Rejected`]); any other failure (no such remote, no permission, a protected
/// branch) is an error with git's own message.
pub(crate) fn push(repo: &Repository, remote: &str, branch: &str, dry_run: bool) -> Result<Push> {
    if remote.is_empty() || remote.starts_with('-') {
        return Err(GitError::Other(format!("{remote:?} is not a remote name")));
    }
    let spec = format!("refs/heads/{branch}:refs/heads/{branch}");
    let mut args = vec!["push", "--porcelain"];
    if dry_run {
        args.push("--dry-run");
    }
    args.extend([remote, spec.as_str()]);
    let out = cli_remote(&canonical(repo.commondir()), remote, &args)?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    // `--porcelain`: one line a ref, `<flag>\t<from>:<to>\t<summary>`.
    let ours = stdout.lines().find_map(|l| {
        let mut f = l.splitn(3, '\t');
        match (f.next(), f.next(), f.next()) {
            (Some(flag), Some(refs), Some(summary)) if refs.ends_with(&format!(":refs/heads/{branch}")) => {
                Some((flag.to_string(), summary.to_string()))
            }
            _ => None,
        }
    });
    match ours {
        Some((flag, _)) if out.status.success() && flag == "=" => Ok(Push::UpToDate),
        Some(_) if out.status.success() => Ok(Push::Pushed),
        Some((flag, summary)) if flag == "!" && summary.starts_with("[rejected]") => Ok(Push::Rejected(summary)),
        _ => Err(GitError::Cli {
            args: format!("push {remote} {branch}"),
            stderr: format!("{} {}", String::from_utf8_lossy(&out.stderr).trim(), stdout.trim()).trim().to_string(),
        }),
    }
}

/// A commit's short form, for messages.
fn short(oid: Oid) -> String {
    oid.to_string().chars().take(10).collect()
}
