//! Runners: where an attempt's shim runs. Each implements `Runner` (`seam`): `local` (the
//! default) starts it here, detached; [`slurm`] submits it as one batch job to a cluster sharing
//! the home. This module picks the runner for a new attempt, and finds the one that holds a
//! started attempt by the handle it recorded in the attempt's state dir. A new runner is a new
//! file here, named in `of` and `elsewhere` (and its name in `RunnerName`).

mod local;
pub(crate) mod seam;
pub mod slurm;

use std::path::Path;

use anyhow::Result;

use crate::activity::state::{RunInfo, StateDir};
use crate::config::{Home, ProjectConfig};
use crate::worker::shim::{self, Spec, Stop};

pub use seam::{Attempt, Proc, RunnerName, POLL};
pub(crate) use seam::{Request, Runner};

/// The runner that applies: the first of the activity's, its package's and the project's.
pub fn choose(activity: Option<RunnerName>, package: Option<RunnerName>, project: RunnerName) -> RunnerName {
    activity.or(package).unwrap_or(project)
}

/// The runner `name` names, set up as the project's configuration says.
pub(crate) fn of(name: RunnerName, config: &ProjectConfig) -> Box<dyn Runner> {
    match name {
        RunnerName::Local => Box::new(local::Local),
        RunnerName::Slurm => Box::new(slurm::Slurm { config: config.slurm.clone() }),
    }
}

/// Every runner that places attempts elsewhere and records a handle for them, asked in turn
/// which holds an attempt (with its configuration's defaults: only starting needs it).
fn elsewhere() -> [Box<dyn Runner>; 1] {
    [Box::new(slurm::Slurm { config: Default::default() })]
}

/// Where a ready attempt is to run: its runner, and what the attempt asks of it.
pub(crate) struct Placement {
    pub(crate) runner: Box<dyn Runner>,
    pub(crate) request: Request,
}

impl Placement {
    /// Here, whatever the project's runner (a person's command, a meeting's turn).
    pub(crate) fn here(request: Request) -> Placement {
        Placement { runner: Box::new(local::Local), request }
    }
}

/// Start the attempt `spec` describes where `placement` says ([`Runner::start`]). A handle
/// another runner left (an earlier attempt's, or this one's placed there before its runner
/// changed) is no job of this attempt's, and is forgotten first.
pub(crate) fn start(spec: &Spec, placement: &Placement) -> Result<()> {
    for other in elsewhere().iter().filter(|r| r.name() != placement.runner.name()) {
        other.forget(&spec.state);
    }
    placement.runner.start(spec, &placement.request)
}

/// Record `attempt` in `state` as one that could not start, and why ([`shim::refuse`]); a
/// handle an earlier submission left is no job of this refused attempt's.
pub(crate) fn refuse(state: &StateDir, attempt: u32, why: &str) -> Result<()> {
    std::fs::create_dir_all(&state.0).map_err(|e| anyhow::anyhow!("creating {}: {e}", state.0.display()))?;
    for r in elsewhere() {
        r.forget(state);
    }
    shim::refuse(state, attempt, why)
}

/// The runner that holds `attempt` of `state`: the one whose handle is for it, else the local
/// one. `Err`: a handle that cannot be read.
fn holder(state: &StateDir, attempt: u32) -> Result<Box<dyn Runner>> {
    for r in elsewhere() {
        if r.handle(state)?.is_some_and(|h| h.attempt == attempt) {
            return Ok(r);
        }
    }
    Ok(Box::new(local::Local))
}

/// Where `attempt` of `state` stands, as the runner holding it says ([`Runner::locate`]).
pub(crate) fn locate(state: &StateDir, attempt: u32, boot: &str) -> Result<Attempt, String> {
    holder(state, attempt).map_err(|e| format!("{e:#}"))?.locate(state, attempt, boot)
}

/// Ask the attempt recorded in `state` to stop, through the runner holding it (its shim here,
/// `run`, for the local runner).
pub fn stop(state: &StateDir, attempt: u32, run: Option<&RunInfo>, how: Stop) -> Result<()> {
    holder(state, attempt)?.stop(state, attempt, run, how)
}

/// Whether an attempt of `state` holds a slot without asking anyone: a handle recorded for
/// `attempt` whose end is not recorded (queued or running for all we know) — neither its exit
/// nor a later attempt's, nor a later attempt's start.
pub fn holds_slot(state: &StateDir, attempt: u32) -> bool {
    elsewhere().iter().any(|r| r.holds_slot(state, attempt))
}

/// Whether some runner's handle in `state` holds a slot for the attempt it was made for.
pub(crate) fn holds_any_slot(state: &StateDir) -> bool {
    elsewhere().iter().any(|r| matches!(r.handle(state), Ok(Some(h)) if r.holds_slot(state, h.attempt)))
}

/// The latest attempt of `state` a runner has taken ([`Runner::taken`]), queued or not.
pub(crate) fn taken(state: &StateDir) -> Result<Option<u32>> {
    let mut latest = None;
    for r in elsewhere() {
        latest = latest.max(r.taken(state)?);
    }
    Ok(latest)
}

/// Whether a worker of activity `id` of `project` is at work though no record of this home
/// names it: a process working in its `worktree` here, or a job of it elsewhere.
pub(crate) fn works_unrecorded(home: &Home, project: &str, id: &str, worktree: &Path) -> bool {
    local::Local.works_unrecorded(home, project, id, worktree)
        || elsewhere().iter().any(|r| r.works_unrecorded(home, project, id, worktree))
}

/// The runners' say on a shim about to run `attempt` of `state` here (the shim's `admit`): a
/// shim a runner started elsewhere runs only where that runner recorded it.
pub fn admit(state: &StateDir, attempt: u32) -> Option<String> {
    slurm::admit(state, attempt)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_most_specific_runner_wins() {
        use RunnerName::{Local, Slurm};
        assert_eq!(choose(None, None, Local), Local);
        assert_eq!(choose(None, None, Slurm), Slurm);
        assert_eq!(choose(None, Some(Slurm), Local), Slurm);
        assert_eq!(choose(Some(Local), Some(Slurm), Slurm), Local);
    }

    #[test]
    fn each_name_makes_its_runner_and_every_runner_elsewhere_is_asked() {
        let config = ProjectConfig::default();
        for name in [RunnerName::Local, RunnerName::Slurm] {
            assert_eq!(of(name, &config).name(), name);
        }
        assert!(elsewhere().iter().all(|r| r.name() != RunnerName::Local));
    }
}
