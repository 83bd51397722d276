//! What people and tools do, above the loop: create an artifact, request a transition (written
//! into its file as a person would), converge (a pass now, or left to the `watch` holding the
//! project), fold, check, and what they look at (status rows, logs, orphans). Every face — the
//! CLI, `mcp --manager`, the JSON-RPC endpoint — calls these; the kinds below never call up here.

pub(crate) mod catalogue;
pub mod check;
pub mod ci;
pub mod commission;
pub mod diff;
pub mod dispatcher;
mod follow;
pub mod gc;
pub mod logs;
pub mod meeting;
pub mod plan;
pub mod produced;
pub mod status;
pub mod sync;
pub mod timeline;
pub mod usage;
pub mod workers;

use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::config::{Home, Project};

/// Have the reconciler carry out what the files say, now: a pass of our own if no one holds
/// the project, else wait for the holder (a `watch`) until `done` says so, or `limit` passes.
/// `who` names us as the lock's holder.
pub(crate) fn converge(home: &Home, project: &Project, who: &str, limit: Duration, done: impl Fn() -> bool) -> Result<()> {
    let deadline = Instant::now() + limit;
    loop {
        match crate::reconcile::lock_project(home, project, false, who) {
            Ok(_lock) => {
                let opts = crate::reconcile::Options { before_dispatch: Some(sync::follow), ..Default::default() };
                crate::reconcile::run(home, project, &opts, |_| {})?;
                return Ok(());
            }
            Err(_) => {
                // Someone else reconciles the project: let it, and watch for the outcome.
                if Instant::now() >= deadline {
                    bail!(
                        "the guild-hall process that holds this project did not carry it out within {}",
                        humantime::format_duration(limit)
                    );
                }
                std::thread::sleep(Duration::from_millis(20));
                if done() {
                    return Ok(());
                }
            }
        }
    }
}

/// Make sure someone carries a change out, without waiting for it: a watcher holding the
/// project will see the file; otherwise start a detached `reconcile --once --wait` (which
/// waits for any other one-shot reconciler first).
pub(crate) fn kick(home: &Home, project: &Project) -> Result<()> {
    if crate::reconcile::lock_holder(home, project).is_some_and(|h| h.starts_with("guild-hall watch")) {
        return Ok(());
    }
    let exe = std::env::current_exe()?;
    let mut cmd = std::process::Command::new(exe);
    cmd.arg("-C")
        .arg(&project.root)
        .arg("--home")
        .arg(&home.root)
        .args(["reconcile", "--once", "--wait", "--wait-lock", "--timeout", "24h"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    crate::worker::shim::detach(&mut cmd);
    let mut child = cmd.spawn().context("starting a reconciler")?;
    std::thread::spawn(move || child.wait());
    Ok(())
}

/// What [`init`] did.
#[derive(Debug, Clone)]
pub struct Init {
    /// The integration branch was created.
    pub branch_created: bool,
    /// What it was created from: a remote's integration branch (`origin/claude/main`) when one
    /// exists, else `HEAD`.
    pub created_from: String,
    /// The project was added to the home's registry.
    pub registered: bool,
    /// The branch checked out at the first `init`, recorded now as the base branch.
    pub base_recorded: Option<String>,
}

/// Set up the project: its `.lore/` directories, the integration branch (from the remote's,
/// `origin` first, when a remote has one; else from HEAD), its registration in the home.
/// Idempotent.
pub fn init(home: &Home, project: &Project) -> Result<Init> {
    let lore = project.root.join(".lore");
    for d in ["commissions", "meetings", "workers"] {
        // Never through a link a cloned repository put at `.lore` or one of its dirs.
        crate::artifact::make_lore_dir(&lore.join(d)).with_context(|| format!("creating .lore/{d}"))?;
    }
    let repo = crate::activity::git::open(&project.root)?;
    // Before anything else: the branch the person is on is the one `sync` and `land` pair with.
    let base_recorded = sync::record_base(project)?;
    // A clone adopts the team's integration branch (where its finished work is), not HEAD.
    let from = crate::activity::remote::tracking_ref(&repo, &project.config.integration_branch).unwrap_or_else(|| "HEAD".into());
    let branch_created = match from.as_str() {
        "HEAD" => crate::activity::trailers::begin_integration_branch(&repo, &project.config.integration_branch)?,
        _ => crate::activity::git::ensure_branch(&repo, &project.config.integration_branch, &from)?,
    };
    let created_from = from.strip_prefix("refs/remotes/").unwrap_or(&from).to_string();
    let registered = home.register(&project.name, &project.root)?;
    Ok(Init { branch_created, created_from, registered, base_recorded })
}

/// Refuse a project `init` has not set up: without its integration branch every dispatch
/// would fail ("branch claude/main does not exist"), so no command may report success first.
/// The branch is what `init` makes (a clone adopts the remote's there too); `.lore/` alone,
/// committed by a teammate, is not enough.
pub fn ensure_set_up(project: &Project) -> Result<()> {
    let repo = crate::activity::git::open(&project.root)?;
    let branch = &project.config.integration_branch;
    if crate::activity::git::branch_exists(&repo, branch) {
        return Ok(());
    }
    bail!(
        "{} is not set up for guild-hall (it has no integration branch {branch}): run `guild-hall init` there first",
        project.root.display()
    )
}

/// [`ensure_set_up`] for `check`, which only reads files: a teammate's clone whose remote has
/// the integration branch (a pre-commit hook, a CI lint job) is checked without `init`.
pub fn ensure_checkable(project: &Project) -> Result<()> {
    let repo = crate::activity::git::open(&project.root)?;
    if crate::activity::remote::tracking_ref(&repo, &project.config.integration_branch).is_some() {
        return Ok(());
    }
    ensure_set_up(project)
}

/// Write a new artifact of `kind` under a free id ([`crate::activity::ids`]: ids are never
/// reused), with `write`, and return the id. `base` asked for by name (`explicit`) is refused if
/// anything of it exists, saying what; else the first free of `base`, `base-2`, … is taken,
/// and the next one if a concurrent create wrote that file first.
pub(crate) fn create_with_free_id(
    home: &Home,
    project: &Project,
    kind: crate::activity::kind::Name,
    base: &str,
    explicit: bool,
    write: impl Fn(&str) -> std::result::Result<(), crate::artifact::CreateError>,
) -> Result<String> {
    crate::artifact::ids::validate_id(base)?;
    let used = crate::activity::ids::Used::read(home, project, kind)?;
    if explicit {
        used.claim(base)?;
        write(base)?;
        return Ok(base.to_string());
    }
    let mut seen = Vec::new();
    loop {
        let id = used.next_free(base, &seen);
        match write(&id) {
            Err(crate::artifact::CreateError::Exists { .. }) if seen.len() < 100 => seen.push(id),
            r => return r.map(|_| id).map_err(Into::into),
        }
    }
}
