//! `guild-hall ci`: one run of guild-hall in a disposable checkout that can be repeated any
//! number of times — adopt the remote's integration branch, bring the base branch in, reconcile
//! until settled, commit the artifacts guild-hall wrote onto the integration branch (where the
//! next run reads them) and push it without force; a push that lost a race converges next run.

use std::time::Duration;

use anyhow::{bail, Context, Result};
use serde::Serialize;

use crate::activity::remote::{self, Adopted, Push};
use crate::config::{Home, Project};
use crate::reconcile::{self, Entry, Options};

/// The `.lore/` directories whose files the reconciler writes (artifacts and timelines): what a
/// run commits. A run starts from a clean checkout, so every change there is guild-hall's.
const WRITTEN: [&str; 3] = [".lore/commissions", ".lore/meetings", ".lore/plans"];

/// The message of the commit of artifact updates.
const MESSAGE: &str = "guild-hall ci: the reconciler's artifact updates\n\nStatuses and timelines guild-hall wrote under .lore/ while it carried out the work; the\nnext run reads them here.\n";

/// How to run.
#[derive(Debug, Clone)]
pub struct CiOptions {
    /// The remote to fetch from and push to (`origin`).
    pub remote: String,
    /// Push the integration branch when done.
    pub push: bool,
    /// Give up reconciling after this long (what is settled by then is still committed).
    pub timeout: Duration,
}

/// What a run did, for people and for `--json`.
#[derive(Debug, Clone, Serialize)]
pub struct CiReport {
    pub remote: String,
    pub integration: String,
    /// The base branch, checked out when the run began and merged into the integration
    /// branch; `None` when the integration branch itself was checked out.
    pub base: Option<String>,
    /// What became of the local integration branch: `created from <remote>/<branch>`,
    /// `fast-forwarded to …`, `up to date with …`, `ahead of …`, or `created from HEAD` /
    /// `kept` when the remote has none.
    pub adopted: String,
    /// The base branch brought commits into the integration branch.
    pub merged_base: bool,
    /// The reconciler's actions, as `reconcile --json` prints them.
    pub actions: Vec<Entry>,
    /// Trailers of the work that landed on the integration branch during this run.
    pub landed: Vec<String>,
    /// The commit of the artifact updates, if anything was written.
    pub committed: Option<String>,
    /// The files that commit holds.
    pub committed_paths: Vec<String>,
    /// Artifacts whose work was still under way when the run ended (it timed out): their
    /// updates are not committed, so the next run starts them again rather than taking them
    /// for another machine's attempt in flight (this checkout and its workers are thrown away).
    pub under_way: Vec<String>,
    /// `pushed`, `up-to-date`, `rejected` (another run pushed first) or `skipped` (`--no-push`).
    pub push: &'static str,
    /// Why a push was rejected, in git's words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub push_detail: Option<String>,
    /// Problems with artifacts (each `path:line:col: message`).
    pub problems: Vec<String>,
    /// What is wrong with the checkout though the run went on: a credential left in
    /// `.git/config` (each names the key, never its value).
    pub warnings: Vec<String>,
    pub timed_out: bool,
    /// An action failed, an artifact is invalid or the time ran out (as `reconcile --wait`).
    pub failed: bool,
}

/// One CI run over the project's checkout (the repository's main checkout, without changes:
/// the run switches it to the integration branch). `on_entry` sees each action as it happens.
pub fn run(home: &Home, project: &Project, opts: &CiOptions, on_entry: impl FnMut(&Entry)) -> Result<CiReport> {
    if opts.remote.is_empty() || opts.remote.starts_with('-') {
        bail!("--remote {:?}: not a remote name", opts.remote);
    }
    // The project's single-writer lock for the whole run, before anything is switched: a
    // `watch` on this checkout would otherwise see its branch change under it.
    let _lock = reconcile::lock_project(home, project, false, "guild-hall ci")?;
    let repo = crate::activity::git::open(&project.root)?;
    let warnings: Vec<String> = persisted_headers(&repo)
        .into_iter()
        .map(|key| format!(
            "{key} is set in .git/config (a credential actions/checkout persisted): every worker can read that file, and with it push to the remote; check out with `persist-credentials: false` and give guild-hall ci GUILD_HALL_PUSH_TOKEN instead (docs/teams-and-ci.md)"
        ))
        .collect();
    let changes = remote::changes(&repo)?;
    if !changes.is_empty() {
        bail!(
            "{} has uncommitted changes ({}); guild-hall ci switches branches and commits what it writes, so it runs on a clean checkout (a CI checkout)",
            project.root.display(),
            crate::activity::worktree::listing(&changes)
        );
    }
    let integration = project.config.integration_branch.clone();
    let base = base_branch(&repo, project, opts, &integration)?;

    remote::fetch(&repo, &opts.remote).with_context(|| format!("fetching {}", opts.remote))?;
    let adopted = adopt(&repo, &opts.remote, &integration)?;
    if base.is_some() {
        remote::switch(&repo, &integration)?;
    }
    let merged_base = match &base {
        Some(b) => {
            let synced = super::sync::sync(home, project, &super::sync::SyncOptions { dry_run: false, from: Some(b.clone()) })
                .with_context(|| format!("bringing {b} into {integration}"))?;
            if !synced.ok() {
                // Every later run stops here too until a person brings the two together.
                bail!(
                    "{}\nin CI: bring them together once in a clone of your own — `git fetch {r} && git switch -c fix {r}/{integration} && git merge {r}/{b}`, resolve (for an artifact guild-hall finished, keep {integration}'s status keys), `git push {r} fix:{integration}` — or `guild-hall land` {integration} into {b} before editing its finished artifacts",
                    synced.reason,
                    r = opts.remote,
                );
            }
            synced.moved()
        }
        None => false,
    };
    // What the integration branch says from here on (its guild-hall.yaml may differ).
    let project = Project::open(&project.root)?;
    super::init(home, &project)?;

    let start = repo.head()?.peel_to_commit()?.id();
    let ropts = Options { wait: true, timeout: Some(opts.timeout), ..Options::default() };
    let report = reconcile::run(home, &project, &ropts, on_entry)?;
    let head = repo.head()?.peel_to_commit()?.id();
    let mut landed: Vec<String> = crate::activity::trailers::on_chains(&repo, &[head], &[start], crate::activity::names::TRAILER_START)?
        .into_iter()
        .map(|(_, l)| l)
        .collect();
    landed.reverse();

    let (settled, under_way) = written(&repo, &project)?;
    let committed = remote::commit_paths(&repo, &settled, MESSAGE)?;
    let (push, push_detail) = if !opts.push {
        ("skipped", None)
    } else {
        match remote::push(&repo, &opts.remote, &integration, false).with_context(|| format!("pushing {integration} to {}", opts.remote))? {
            Push::Pushed => ("pushed", None),
            Push::UpToDate => ("up-to-date", None),
            Push::Rejected(why) => ("rejected", Some(why)),
        }
    };
    Ok(CiReport {
        remote: opts.remote.clone(),
        integration,
        base,
        adopted,
        merged_base,
        failed: report.failed(),
        actions: report.entries,
        landed,
        committed: committed.map(|oid| oid.to_string()),
        committed_paths: if committed.is_some() { settled } else { Vec::new() },
        under_way,
        push,
        push_detail,
        problems: report.problems.iter().map(|p| p.to_string()).collect(),
        warnings,
        timed_out: report.timed_out,
    })
}

/// The branch checked out, when it is the base branch (to be brought into the integration
/// branch and switched from); none when the integration branch is checked out; refused when
/// it is another branch, or none.
fn base_branch(repo: &git2::Repository, project: &Project, opts: &CiOptions, integration: &str) -> Result<Option<String>> {
    // What is merged in and published is the base branch, never whatever happens to be checked
    // out (a feature branch, a pull request's merge commit): unfinished work would reach the
    // integration branch and, with the next `land`, the base branch.
    Ok(match remote::current_branch(repo) {
        Some(b) if b == integration => None,
        Some(b) => {
            // Configured or recorded; else the remote's default branch (`origin/HEAD`, which
            // a clone has); else, with nothing to tell, the branch checked out.
            let configured = match super::sync::configured_base(project)? {
                Some(base) => base,
                None => remote::default_branch(repo, &opts.remote).unwrap_or_else(|| b.clone()),
            };
            if configured != b && configured != format!("{}/{b}", opts.remote) {
                bail!(
                    "this checkout is on {b}, not the base branch {configured}: guild-hall ci brings only the base branch into {integration} and publishes it (check out {configured}, or name the base with `base_branch:` in {})",
                    crate::config::ProjectConfig::PATH
                );
            }
            Some(b)
        }
        None => bail!(
            "this checkout is detached (a pull request's merge, say): guild-hall ci brings only the base branch into {integration} and publishes it; run it on a push to the base branch"
        ),
    })
}

/// Take the remote's integration branch in (or make the branch): what became of it, as said.
fn adopt(repo: &git2::Repository, remote_name: &str, integration: &str) -> Result<String> {
    let theirs = format!("{remote_name}/{integration}");
    Ok(match remote::adopt(repo, remote_name, integration)? {
        Adopted::NoRemote if crate::activity::git::branch_exists(repo, integration) => format!("kept ({theirs} does not exist)"),
        Adopted::NoRemote => {
            crate::activity::trailers::begin_integration_branch(repo, integration)?;
            format!("created from HEAD ({theirs} does not exist)")
        }
        Adopted::Created(_) => format!("created from {theirs}"),
        Adopted::FastForwarded(_) => format!("fast-forwarded to {theirs}"),
        Adopted::PastItsBeginning(_) => format!("moved to {theirs} (it held nothing but where it began)"),
        Adopted::UpToDate => format!("up to date with {theirs}"),
        Adopted::Ahead => format!("ahead of {theirs}"),
    })
}

/// The `http.extraheader` and `http.<url>.extraheader` keys of the repository's own config
/// (`.git/config`, which a confined worker's git reads): where `actions/checkout` without
/// `persist-credentials: false` leaves its token. Their names only; the values are secrets.
fn persisted_headers(repo: &git2::Repository) -> Vec<String> {
    let Ok(config) = repo.config().and_then(|c| c.open_level(git2::ConfigLevel::Local)) else { return Vec::new() };
    let mut keys = Vec::new();
    if let Ok(mut entries) = config.entries(None) {
        while let Some(Ok(entry)) = entries.next() {
            let Ok(name) = entry.name() else { continue };
            let lower = name.to_ascii_lowercase();
            if lower.starts_with("http.") && lower.ends_with(".extraheader") && !keys.iter().any(|k| k == name) {
                keys.push(name.to_string());
            }
        }
    }
    keys
}

/// What the reconciler changed under [`WRITTEN`] (the checkout was clean when the run began),
/// split into what to commit and the artifacts whose work is still under way: those, with
/// their timelines, are left out (see [`CiReport::under_way`]).
fn written(repo: &git2::Repository, project: &Project) -> Result<(Vec<String>, Vec<String>)> {
    let ours = |p: &str| WRITTEN.iter().any(|d| p.strip_prefix(d).is_some_and(|rest| rest.starts_with('/')));
    let (mut settled, mut under_way) = (Vec::new(), Vec::new());
    for path in remote::changes(repo)?.into_iter().filter(|p| ours(p)) {
        let artifact = path.strip_suffix(".timeline.jsonl").map_or_else(|| path.clone(), |stem| format!("{stem}.md"));
        if at_work(&project.root.join(&artifact)) {
            if !under_way.contains(&artifact) {
                under_way.push(artifact);
            }
        } else {
            settled.push(path);
        }
    }
    Ok((settled, under_way))
}

/// Whether the artifact at `path` says its work is under way (a commission dispatched or in
/// progress, a plan running or verifying, a meeting open). One that cannot be read or parsed
/// says nothing of the kind.
fn at_work(path: &std::path::Path) -> bool {
    use crate::artifact::plan::Plan;
    use crate::artifact::{Commission, Meeting, MeetingStatus};
    let Ok(text) = crate::artifact::read_regular(path) else { return false };
    let dir = path.parent().and_then(|d| d.file_name()).and_then(|d| d.to_str());
    match dir {
        Some("commissions") => Commission::parse(path, &text).is_ok_and(|c| c.status.is_some_and(|s| s.is_active())),
        Some("plans") => Plan::parse(path, &text).is_ok_and(|p| p.status.is_some_and(|s| s.is_active())),
        Some("meetings") => Meeting::parse(path, &text).is_ok_and(|m| m.status == Some(MeetingStatus::Open)),
        _ => false,
    }
}
