//! The integration branch and the person's base branch, kept together: which branch is the base
//! ([`base_branch`], recorded at `init`), `sync` (the base into the integration branch), `land`
//! (the integration branch into the base, or pushed for review), and the automatic sync of
//! `follow:` ([`follow`], which a pass calls before it starts new work). Neither rewrites a commit
//! already there nor touches a person's uncommitted change: each either moves a branch forward or
//! changes nothing.

use anyhow::{anyhow, bail, Context, Result};
use git2::{BranchType, Oid, Repository};
use serde::{Deserialize, Serialize};

use crate::activity::merge::{advance, in_the_way, waiting_reason, MergeOutcome, Target};
use crate::activity::remote::Standing;
use crate::config::{Home, Project};

/// Where `init` records the branch it started from (the repository's own git config, so that
/// any home over this checkout finds it).
pub(crate) use crate::activity::git::BASE_BRANCH_KEY;

/// What `sync` and `land` are asked to do.
#[derive(Debug, Clone, Default)]
pub struct SyncOptions {
    /// Say what would happen; change nothing (refs, checkouts, remotes).
    pub dry_run: bool,
    /// Bring this branch (or commit) in instead of the base branch: `guild-hall ci` brings the
    /// branch its run was started on.
    pub from: Option<String>,
}

/// What `land` is asked to do.
#[derive(Debug, Clone, Default)]
pub struct LandOptions {
    /// Push the integration branch to this remote (same branch name, never forced) instead of
    /// touching the base branch.
    pub push: Option<String>,
    pub dry_run: bool,
}

/// What a `sync`, `land` or push came to (or would, with `dry_run`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// `from` was already in `into`: nothing to do.
    UpToDate,
    /// `into` moved forward to `from`'s tip.
    FastForward,
    /// A merge commit (parents: `into`'s tip, then `from`'s) was made on `into`.
    Merge,
    /// The two sides conflict (`paths`): nothing was changed.
    Conflict,
    /// A checkout of `into` has local changes to files the move would touch (`paths`):
    /// nothing was changed.
    Blocked,
    /// The remote took the branch.
    Pushed,
    /// The remote refused the branch (not a fast-forward, say): nothing was changed.
    Rejected,
}

/// The report of a `sync`, `land` or push: what `--json` prints.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SyncReport {
    /// `sync`, `land` or `push`.
    pub(crate) action: String,
    /// The branch whose commits are brought in (for a push, the branch pushed).
    pub(crate) from: String,
    /// The branch that moves (for a push, the remote's branch of the same name).
    pub(crate) into: String,
    /// The remote, for a push.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) remote: Option<String>,
    pub(crate) outcome: Outcome,
    pub dry_run: bool,
    /// `into`'s tip before (the commit id).
    pub(crate) before: Option<String>,
    /// `into`'s tip after (or that would be, in a dry run; unknown for a merge not yet made).
    pub(crate) after: Option<String>,
    /// The conflicting paths, or the locally modified files in the way.
    pub(crate) paths: Vec<String>,
    /// What happened or stopped it, in words.
    pub reason: String,
    /// What the move brings (or would, in a dry run; or would have, when blocked): each file it
    /// changes on `into`, with its lines added and deleted. Empty when nothing is to move, on
    /// a conflict and for a push.
    #[serde(default)]
    pub files: Vec<FileChange>,
    /// For `land`: the commissions, meetings and plan tasks whose work it brings, newest first
    /// (each from the trailer in the last paragraph of a commit on the integration branch's
    /// first-parent chain since it forked from the base branch).
    #[serde(default)]
    pub work: Vec<BroughtWork>,
    /// The local integration branch was behind a remote's copy of it (a clone whose team's CI
    /// or teammates moved it on) and was fast-forwarded first — or why it was not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub caught_up: Option<String>,
}

/// One file a move changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileChange {
    pub path: String,
    /// `added`, `deleted`, `modified`, `renamed` or `typechange`.
    pub change: String,
    /// Lines added and deleted; `None` for a binary file.
    pub additions: Option<usize>,
    pub deletions: Option<usize>,
}

/// One activity whose work a `land` brings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BroughtWork {
    /// `commission`, `meeting` or `task`.
    pub kind: String,
    /// The commission's or meeting's id, or the task's canonical id (`plan:exec:wave-N:task-M`).
    pub id: String,
    /// A commission's attempt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    /// The commit that carries it.
    pub(crate) commit: String,
}

impl SyncReport {
    /// Whether it went through (or would): nothing stopped it.
    pub fn ok(&self) -> bool {
        !matches!(self.outcome, Outcome::Conflict | Outcome::Blocked | Outcome::Rejected)
    }
    /// Whether `into` moved (never in a dry run).
    pub(crate) fn moved(&self) -> bool {
        !self.dry_run && matches!(self.outcome, Outcome::FastForward | Outcome::Merge | Outcome::Pushed)
    }
}

/// The base branch of the project: `follow:` or `base_branch:` in `.lore/guild-hall.yaml`,
/// else the branch `init` started from ([`BASE_BRANCH_KEY`]), else `main`, else `master`.
/// It is never the integration branch itself.
pub fn base_branch(project: &Project) -> Result<String> {
    let base = named_base(project)?;
    let integration = &project.config.integration_branch;
    if &base == integration {
        bail!(
            "the base branch is the integration branch ({integration}): name the person's branch with `base_branch:` in {}",
            crate::config::ProjectConfig::PATH
        );
    }
    Ok(base)
}

/// The base branch as configured (`follow:`, `base_branch:`) or recorded by `init` (git config
/// [`BASE_BRANCH_KEY`]), if any: what [`base_branch`] takes before guessing `main`/`master`.
pub(crate) fn configured_base(project: &Project) -> Result<Option<String>> {
    if let Some(b) = project.config.follow.as_ref().or(project.config.base_branch.as_ref()) {
        return Ok(Some(b.clone()));
    }
    let repo = crate::activity::git::open(&project.root)?;
    Ok(crate::activity::git::configured_base(&repo, &project.config))
}

fn named_base(project: &Project) -> Result<String> {
    if let Some(b) = configured_base(project)? {
        return Ok(b);
    }
    let repo = crate::activity::git::open(&project.root)?;
    if let Some(b) = crate::activity::git::named_base(&repo, &project.config) {
        return Ok(b);
    }
    bail!(
        "no base branch: init recorded none ({BASE_BRANCH_KEY} in the repository's git config) and there is neither `main` nor `master`; name it with `base_branch:` in {}",
        crate::config::ProjectConfig::PATH
    )
}

/// Record the branch checked out now as the base branch, unless one is recorded already or
/// HEAD is detached or on the integration branch itself. The branch recorded, if any.
pub(crate) fn record_base(project: &Project) -> Result<Option<String>> {
    let repo = crate::activity::git::open(&project.root)?;
    let mut config = repo.config()?.open_level(git2::ConfigLevel::Local).context("opening the repository's git config")?;
    if config.get_string(BASE_BRANCH_KEY).is_ok_and(|b| !b.is_empty()) {
        return Ok(None);
    }
    let Ok(head) = repo.find_reference("HEAD") else { return Ok(None) };
    let Some(branch) = head.symbolic_target().ok().flatten().and_then(|t| t.strip_prefix("refs/heads/")).map(str::to_string) else {
        return Ok(None);
    };
    if branch == project.config.integration_branch {
        return Ok(None);
    }
    config.set_str(BASE_BRANCH_KEY, &branch).with_context(|| format!("recording {BASE_BRANCH_KEY} in the repository's git config"))?;
    Ok(Some(branch))
}

/// Bring the base branch into the integration branch: nothing when it is in already, else a
/// merge commit made in memory (even when the integration branch is behind: the base's commits
/// stay off its first-parent chain, where only guild-hall's word is read) — never a rewrite of
/// a commit already there. Conflicts, or a checkout of the integration
/// branch (the project root itself, a linked worktree) with local changes the move would
/// touch, stop it with the paths named and nothing changed. The base may be a
/// remote-tracking branch (`origin/main`). No pass merges meanwhile (whoever holds the
/// project, [`crate::reconcile::lock_between_passes`]).
pub fn sync(home: &Home, project: &Project, opts: &SyncOptions) -> Result<SyncReport> {
    let _held = if opts.dry_run { None } else { Some(crate::reconcile::lock_between_passes(home, project, "guild-hall sync")?) };
    let report = sync_in_pass(project, opts)?;
    // A sync from the followed branch that went through clears what `status` says of the
    // last automatic one that could not.
    if !opts.dry_run && opts.from.is_none() && project.config.follow.is_some() && report.ok() {
        remember(home, project, None);
    }
    Ok(report)
}

/// [`sync`] where passes are kept out already (inside one, or under the project's lock).
fn sync_in_pass(project: &Project, opts: &SyncOptions) -> Result<SyncReport> {
    let integration = &project.config.integration_branch;
    let repo = crate::activity::git::open(&project.root)?;
    if !crate::activity::git::branch_exists(&repo, integration) {
        bail!("there is no integration branch {integration:?}: run `guild-hall init`");
    }
    let (base, from) = match &opts.from {
        None => {
            let base = base_branch(project)?;
            let from = tip(&repo, &base, true)?;
            (base, from)
        }
        Some(rev) => {
            let from = repo
                .revparse_single(rev)
                .and_then(|o| o.peel_to_commit())
                .map_err(|_| anyhow!("there is no branch or commit {rev:?}"))?
                .id();
            (rev.clone(), from)
        }
    };
    // `guild-hall ci` (`from`) adopted the remote's copy already, after fetching it.
    let caught_up = if opts.from.is_none() { catch_up(&repo, project, opts.dry_run)? } else { None };
    let mut report = bring(&repo, "sync", &base, from, integration, opts.dry_run, FastForward::Never)?;
    report.caught_up = caught_up;
    Ok(report)
}

/// Bring the local integration branch up to a remote's copy that is strictly ahead of it (a
/// clone whose team's CI or teammates moved it on since): a fast-forward, never a rewrite, a
/// checkout of it advanced as every move is. What happened, in words; a copy that diverged is
/// said, and nothing moves.
fn catch_up(repo: &Repository, project: &Project, dry_run: bool) -> Result<Option<String>> {
    let integration = &project.config.integration_branch;
    let Some(tracking) = crate::activity::remote::tracking_ref(repo, integration) else { return Ok(None) };
    let Some(remote) = tracking.strip_prefix("refs/remotes/").and_then(|r| r.strip_suffix(&format!("/{integration}"))) else {
        return Ok(None);
    };
    let theirs = repo.find_reference(&tracking)?.peel_to_commit()?.id();
    let mine = repo.find_branch(integration, BranchType::Local)?.get().peel_to_commit()?.id();
    let past_beginning = match crate::activity::remote::standing(repo, mine, theirs)? {
        Standing::Same | Standing::Ahead => return Ok(None),
        Standing::Diverged => {
            return Ok(Some(format!(
                "{integration} and {remote}/{integration} have diverged; {integration} is used as it is here (bring them together by hand: git merge {remote}/{integration} on {integration})"
            )))
        }
        Standing::Behind => false,
        Standing::BehindItsOwnBeginning => true,
    };
    let moved = if past_beginning { "moved" } else { "fast-forwarded" };
    let why = if past_beginning { ": the local one held nothing but where it began" } else { "" };
    if dry_run {
        return Ok(Some(format!("would bring {integration} to {remote}/{integration}, which is ahead{why}")));
    }
    Ok(Some(match crate::activity::remote::adopt(repo, remote, integration) {
        Ok(_) => format!("{moved} {integration} to {remote}/{integration}, which was ahead{why}"),
        Err(e) => format!("{integration} was not brought to {remote}/{integration}: {e}"),
    }))
}

/// Bring the integration branch's work into the base branch (fast-forward when possible,
/// else a merge commit; a checkout of the base branch is updated with it, and it is refused
/// when that checkout has local changes in the way) — or, with `push`, push the integration
/// branch to that remote for a pull request and leave the base branch alone.
pub fn land(home: &Home, project: &Project, opts: &LandOptions) -> Result<SyncReport> {
    // Catching up moves the integration branch: no pass merges meanwhile, as for `sync`.
    let _held = if opts.dry_run { None } else { Some(crate::reconcile::lock_between_passes(home, project, "guild-hall land")?) };
    let integration = &project.config.integration_branch;
    let repo = crate::activity::git::open(&project.root)?;
    tip(&repo, integration, false)?;
    // The team's work first: what CI or a teammate landed on the remote's copy lands too.
    let caught_up = catch_up(&repo, project, opts.dry_run)?;
    let int_tip = tip(&repo, integration, false)?;
    let mut report = if let Some(remote) = &opts.push {
        push(project, remote, integration, int_tip, opts.dry_run)
    } else {
        let base = base_branch(project)?;
        if repo.find_branch(&base, BranchType::Local).is_err() {
            bail!(
                "land moves a branch of this repository, and there is no local branch {base:?}: create it, or use `land --push <remote>`"
            );
        }
        bring(&repo, "land", integration, int_tip, &base, opts.dry_run, FastForward::WhenBehind)?
    };
    report.caught_up = caught_up;
    Ok(report)
}

/// The tip of `branch`: a local branch, else (when `remote_too`) a remote-tracking one.
fn tip(repo: &Repository, branch: &str, remote_too: bool) -> Result<Oid> {
    let found = repo
        .find_branch(branch, BranchType::Local)
        .or_else(|e| if remote_too { repo.find_branch(branch, BranchType::Remote) } else { Err(e) })
        .map_err(|_| anyhow!("there is no branch {branch:?}"))?;
    Ok(found.get().peel_to_commit().with_context(|| format!("reading branch {branch}"))?.id())
}

/// Whether [`bring`] may move a branch that is behind straight to what it brings.
#[derive(Clone, Copy, PartialEq, Eq)]
enum FastForward {
    /// The base branch (`land`): its shape is the person's.
    WhenBehind,
    /// The integration branch (`sync`): always a merge commit, the base on its second parent,
    /// so that the integration branch's first-parent chain holds only guild-hall's commits and
    /// what `sync` brings in is never read as guild-hall's word ([`crate::activity::trailers`]).
    Never,
}

/// Bring the commit `from` (the tip of `from_name`) into the local branch `into`.
fn bring(repo: &Repository, action: &str, from_name: &str, from: Oid, into: &str, dry_run: bool, ff: FastForward) -> Result<SyncReport> {
    let into_commit =
        repo.find_branch(into, BranchType::Local).map_err(|_| anyhow!("there is no branch {into:?}"))?.get().peel_to_commit()?;
    let from_commit = repo.find_commit(from)?;
    let mut report = SyncReport {
        action: action.to_string(),
        from: from_name.to_string(),
        into: into.to_string(),
        remote: None,
        outcome: Outcome::UpToDate,
        dry_run,
        before: Some(into_commit.id().to_string()),
        after: Some(into_commit.id().to_string()),
        paths: Vec::new(),
        reason: format!("{from_name} is already in {into}"),
        files: Vec::new(),
        work: Vec::new(),
        caught_up: None,
    };
    if from == into_commit.id() || repo.graph_descendant_of(into_commit.id(), from)? {
        return Ok(report);
    }
    // `land` of an integration branch that holds only `sync`'s merges of this very branch (its
    // files the same, no guild-hall work): nothing to bring, and no merge commit of `sync`'s
    // lands on the person's branch as noise.
    // What guild-hall work `land` brings, read once: for the report, and to tell the case below.
    let work = if ff == FastForward::WhenBehind { brought_work(repo, from, into_commit.id())? } else { Vec::new() };
    if ff == FastForward::WhenBehind && from_commit.tree_id() == into_commit.tree_id() && work.is_empty() {
        report.reason = format!("{from_name} holds nothing {into} lacks (only sync's merges of it)");
        return Ok(report);
    }
    let fast_forward = ff == FastForward::WhenBehind && repo.graph_descendant_of(from, into_commit.id())?;
    let (target_tree, message) = if fast_forward {
        (from_commit.tree()?, String::new())
    } else {
        // In memory, with git's own three-way merge (several merge bases folded into one).
        let mut index = repo.merge_commits(&into_commit, &from_commit, None)?;
        if index.has_conflicts() {
            let mut paths: Vec<String> = index
                .conflicts()?
                .filter_map(|c| c.ok())
                .filter_map(|c| c.our.or(c.their).or(c.ancestor))
                .map(|e| String::from_utf8_lossy(&e.path).into_owned())
                .collect();
            paths.sort();
            paths.dedup();
            report.outcome = Outcome::Conflict;
            report.after = None;
            report.reason = format!(
                "{from_name} and {into} conflict in: {}; nothing changed (merge them by hand, then run `guild-hall {action}` again)",
                paths.join(", ")
            );
            report.paths = paths;
            return Ok(report);
        }
        let tree = repo.find_tree(index.write_tree_to(repo)?)?;
        (tree, format!("Merge {from_name} into {into}\n\nguild-hall {action}\n"))
    };
    report.files = file_changes(repo, &into_commit.tree()?, &target_tree)?;
    report.work = work;
    let blocked = in_the_way(repo, into, &into_commit.tree()?, &target_tree)?;
    if let Some(why) = waiting_reason(into, &blocked) {
        report.outcome = Outcome::Blocked;
        report.after = None;
        report.paths = blocked.into_iter().flat_map(|(_, files)| files).collect();
        report.reason = format!("{why}; nothing changed");
        return Ok(report);
    }
    report.outcome = if fast_forward { Outcome::FastForward } else { Outcome::Merge };
    let verb = if fast_forward { "fast-forward" } else { "merge commit" };
    if dry_run {
        report.after = fast_forward.then(|| from.to_string());
        report.reason = format!("would bring {from_name} into {into} ({verb})");
        return Ok(report);
    }
    let target =
        if fast_forward { Target::Existing(from) } else { Target::New { tree: &target_tree, message: &message, others: &[&from_commit] } };
    match advance(repo, into, &into_commit, target, &format!("{action} {from_name} into {into}"))? {
        MergeOutcome::Merged(oid) => {
            report.after = Some(oid.to_string());
            report.reason = format!("brought {from_name} into {into} ({verb})");
        }
        MergeOutcome::Waiting(why) => {
            // A file changed between the look and the move: still nothing changed.
            report.outcome = Outcome::Blocked;
            report.after = None;
            report.reason = format!("{why}; nothing changed");
        }
        other => bail!("moving {into}: unexpected {other:?}"),
    }
    Ok(report)
}

impl SyncReport {
    /// A push `remote` did not take, and what to do about it.
    fn reject(&mut self, remote: &str, branch: &str, said: &str) {
        self.outcome = Outcome::Rejected;
        self.after = None;
        self.reason = format!(
            "{remote} did not take {branch} ({said}); nothing was forced — fetch it, bring its work in (git merge {remote}/{branch} on {branch}), then push again"
        );
    }
}

/// Push the integration branch to `remote` (never forced).
fn push(project: &Project, remote: &str, branch: &str, tip: Oid, dry_run: bool) -> SyncReport {
    let mut report = SyncReport {
        action: "push".into(),
        from: branch.to_string(),
        into: branch.to_string(),
        remote: Some(remote.to_string()),
        outcome: Outcome::Pushed,
        dry_run,
        before: None,
        after: Some(tip.to_string()),
        paths: Vec::new(),
        reason: String::new(),
        files: Vec::new(),
        work: Vec::new(),
        caught_up: None,
    };
    use crate::activity::remote::Push;
    let pushed = crate::activity::git::open(&project.root).and_then(|repo| crate::activity::remote::push(&repo, remote, branch, dry_run));
    match pushed {
        Ok(Push::UpToDate) => {
            report.outcome = Outcome::UpToDate;
            report.reason = format!("{remote} has {branch} as it is here");
        }
        Ok(Push::Pushed) => {
            report.reason = format!("{} {branch} to {remote}; open a pull request from it", if dry_run { "would push" } else { "pushed" });
        }
        Ok(Push::Rejected(said)) => report.reject(remote, branch, &said),
        Err(e) => report.reject(remote, branch, &e.to_string()),
    }
    report
}

/// The automatic sync of `follow:`: when the project follows a branch, sync from it and say
/// how it went in the log; a sync that cannot proceed is kept for `status` (and forgotten at
/// the next one that goes through). Whether the integration branch moved.
pub fn follow(home: &Home, project: &Project) -> bool {
    let Some(branch) = &project.config.follow else { return false };
    // Called inside a pass, or by `watch` under the project's lock: no other pass merges.
    let report = match sync_in_pass(project, &SyncOptions::default()) {
        Ok(r) => r,
        Err(e) => {
            let why = format!("{e:#}");
            tracing::warn!(project = %project.name, follow = %branch, error = %why, "sync failed; work goes on from the integration branch as it is");
            remember(home, project, Some(&why));
            return false;
        }
    };
    if report.ok() {
        if report.moved() {
            tracing::info!(project = %project.name, follow = %branch, outcome = ?report.outcome, "{}", report.reason);
        }
        remember(home, project, None);
    } else {
        tracing::warn!(project = %project.name, follow = %branch, "sync could not proceed: {}; work goes on from the integration branch as it is", report.reason);
        remember(home, project, Some(&report.reason));
    }
    report.moved()
}

/// Where the last automatic sync that could not proceed is kept.
fn blocked_path(home: &Home, project: &Project) -> std::path::PathBuf {
    home.project_state(&project.name).join("sync-blocked")
}

/// Keep (or forget) why the last automatic sync could not proceed; written only when that
/// changes, so a watcher never wakes on its own write.
fn remember(home: &Home, project: &Project, why: Option<&str>) {
    let path = blocked_path(home, project);
    let done = match why {
        Some(why) if crate::files::read_text_if_exists(&path).ok().flatten().as_deref() != Some(why) => {
            std::fs::create_dir_all(home.project_state(&project.name))
                .map_err(anyhow::Error::from)
                .and_then(|_| crate::files::write_atomic(&path, why.as_bytes()))
        }
        Some(_) => Ok(()),
        None => crate::files::remove_if_exists(&path),
    };
    if let Err(e) = done {
        tracing::warn!(path = %path.display(), error = %format!("{e:#}"), "could not keep the automatic sync's outcome for status");
    }
}

/// Why the last automatic sync (`follow:`) could not proceed, while that holds.
pub fn last_blocked(home: &Home, project: &Project) -> Option<String> {
    project.config.follow.as_ref()?;
    std::fs::read_to_string(blocked_path(home, project)).ok().filter(|s| !s.trim().is_empty())
}

/// Each file that moving from `from` to `to` changes, with its lines added and deleted.
fn file_changes(repo: &Repository, from: &git2::Tree<'_>, to: &git2::Tree<'_>) -> Result<Vec<FileChange>> {
    let mut diff = repo.diff_tree_to_tree(Some(from), Some(to), None)?;
    diff.find_similar(None)?;
    let mut out = Vec::new();
    for (i, d) in diff.deltas().enumerate() {
        let change = match d.status() {
            git2::Delta::Added => "added",
            git2::Delta::Deleted => "deleted",
            git2::Delta::Renamed => "renamed",
            git2::Delta::Typechange => "typechange",
            _ => "modified",
        };
        let path = d.new_file().path().or(d.old_file().path()).map(|p| p.to_string_lossy().into_owned()).unwrap_or_default();
        let binary = d.flags().is_binary() || d.old_file().is_binary() || d.new_file().is_binary();
        let counts = match git2::Patch::from_diff(&diff, i)? {
            Some(patch) if !binary && !patch.delta().flags().is_binary() => {
                let (_, additions, deletions) = patch.line_stats()?;
                (Some(additions), Some(deletions))
            }
            _ => (None, None),
        };
        out.push(FileChange { path, change: change.to_string(), additions: counts.0, deletions: counts.1 });
    }
    Ok(out)
}

/// The activities whose work the integration branch's tip `from` brings into the branch at
/// `into`: every guild-hall trailer in the last paragraph (the trailer block) of a commit on
/// `from`'s first-parent chain since their fork point, newest first. Only that chain is read:
/// what came in beside it (a merge's other side, a `sync` from the base branch) is not
/// guild-hall's word, and a line elsewhere in a message is the message's text, not a trailer.
fn brought_work(repo: &Repository, from: Oid, into: Oid) -> Result<Vec<BroughtWork>> {
    use crate::activity::{names::TRAILER_START, trailers};
    let hide: Vec<Oid> = repo.merge_base(from, into).ok().into_iter().collect();
    let mut out = Vec::new();
    for (oid, line) in trailers::on_chains(repo, &[from], &hide, TRAILER_START)? {
        if let Some(m) = trailers::mark(&line) {
            out.push(BroughtWork { kind: m.kind.to_string(), id: m.id.to_string(), attempt: m.attempt, commit: oid.to_string() });
        }
    }
    Ok(out)
}
