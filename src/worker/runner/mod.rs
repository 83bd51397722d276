//! Runners: where an attempt's shim runs. Each implements `Runner` (`seam`): `local` (the
//! default) starts it here, detached; [`slurm`] submits it as one batch job to a cluster sharing
//! the home. This module picks the runner for a new attempt, and finds the one that holds a
//! started attempt by the handle it recorded in the attempt's state dir. A new runner is a new
//! file here, named in `of` and `runners` (and its name in `RunnerName`).

mod local;
pub(crate) mod seam;
pub(crate) mod slurm;

use std::path::Path;

use anyhow::Result;

use crate::activity::state::{RunInfo, StateDir};
use crate::config::{Home, ProjectConfig};
use crate::worker::shim::{self, Spec, Stop};

pub(crate) use seam::{Attempt, LocateError, Proc, RunnerName, POLL};
pub(crate) use seam::{Request, Runner};

/// The runner that applies: the first of the activity's, its package's and the project's.
pub(crate) fn choose(activity: Option<RunnerName>, package: Option<RunnerName>, project: RunnerName) -> RunnerName {
    activity.or(package).unwrap_or(project)
}

/// The runner `name` names, set up as the project's configuration says.
pub(crate) fn of(name: RunnerName, config: &ProjectConfig) -> Box<dyn Runner> {
    match name {
        RunnerName::Local => Box::new(local::Local),
        RunnerName::Slurm => Box::new(slurm::Slurm { config: config.slurm.clone() }),
    }
}

/// The runners an attempt may be held by: the local one, and every runner that places attempts
/// elsewhere and records a handle for them (asked in turn which holds an attempt).
struct Runners {
    here: Box<dyn Runner>,
    elsewhere: Vec<Box<dyn Runner>>,
}

/// This build's runners (those elsewhere with their configuration's defaults: only starting
/// needs it).
fn runners() -> Runners {
    Runners { here: Box::new(local::Local), elsewhere: vec![Box::new(slurm::Slurm { config: Default::default() })] }
}

impl Runners {
    /// Forget every handle in `state` but `keep`'s runner's.
    fn forget_but(&self, state: &StateDir, keep: Option<RunnerName>) {
        for r in self.elsewhere.iter().filter(|r| Some(r.name()) != keep) {
            r.forget(state);
        }
    }

    /// The runner that holds `attempt` of `state`: the one whose handle is for it, else the
    /// local one. `Err`: a handle that cannot be read.
    fn holder(&self, state: &StateDir, attempt: u32) -> Result<&dyn Runner> {
        for r in &self.elsewhere {
            if r.handle(state)?.is_some_and(|h| h.attempt == attempt) {
                return Ok(r.as_ref());
            }
        }
        Ok(self.here.as_ref())
    }

    fn holds_slot(&self, state: &StateDir, attempt: u32) -> bool {
        self.elsewhere.iter().any(|r| r.holds_slot(state, attempt))
    }

    fn holds_any_slot(&self, state: &StateDir) -> bool {
        self.elsewhere.iter().any(|r| matches!(r.handle(state), Ok(Some(h)) if r.holds_slot(state, h.attempt)))
    }

    fn taken(&self, state: &StateDir) -> Result<Option<u32>> {
        let mut latest = None;
        for r in &self.elsewhere {
            latest = latest.max(r.taken(state)?);
        }
        Ok(latest)
    }

    fn works_unrecorded(&self, home: &Home, project: &str, id: &str, worktree: &Path) -> bool {
        std::iter::once(&self.here).chain(&self.elsewhere).any(|r| r.works_unrecorded(home, project, id, worktree))
    }
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
    runners().forget_but(&spec.state, Some(placement.runner.name()));
    placement.runner.start(spec, &placement.request)
}

/// Record `attempt` in `state` as one that could not start, and why ([`shim::refuse`]); a
/// handle an earlier submission left is no job of this refused attempt's.
pub(crate) fn refuse(state: &StateDir, attempt: u32, why: &str) -> Result<()> {
    std::fs::create_dir_all(&state.0).map_err(|e| anyhow::anyhow!("creating {}: {e}", state.0.display()))?;
    runners().forget_but(state, None);
    shim::refuse(state, attempt, why)
}

/// Where `attempt` of `state` stands, as the runner holding it says ([`Runner::locate`]).
pub(crate) fn locate(state: &StateDir, attempt: u32, boot: &str) -> Result<Attempt, LocateError> {
    runners().holder(state, attempt).map_err(LocateError::Unreadable)?.locate(state, attempt, boot)
}

/// Ask the attempt recorded in `state` to stop, through the runner holding it (its shim here,
/// `run`, for the local runner).
pub(crate) fn stop(state: &StateDir, attempt: u32, run: Option<&RunInfo>, how: Stop) -> Result<()> {
    runners().holder(state, attempt)?.stop(state, attempt, run, how)
}

/// Whether an attempt of `state` holds a slot without asking anyone: a handle recorded for
/// `attempt` whose end is not recorded (queued or running for all we know) — neither its exit
/// nor a later attempt's, nor a later attempt's start.
pub(crate) fn holds_slot(state: &StateDir, attempt: u32) -> bool {
    runners().holds_slot(state, attempt)
}

/// Whether some runner's handle in `state` holds a slot for the attempt it was made for.
pub(crate) fn holds_any_slot(state: &StateDir) -> bool {
    runners().holds_any_slot(state)
}

/// The latest attempt of `state` a runner has taken ([`Runner::taken`]), queued or not.
pub(crate) fn taken(state: &StateDir) -> Result<Option<u32>> {
    runners().taken(state)
}

/// Whether a worker of activity `id` of `project` is at work though no record of this home
/// names it: a process working in its `worktree` here, or a job of it elsewhere.
pub(crate) fn works_unrecorded(home: &Home, project: &str, id: &str, worktree: &Path) -> bool {
    runners().works_unrecorded(home, project, id, worktree)
}

/// The runners' say on a shim about to run `attempt` of `state` here (the shim's `admit`): a
/// shim a runner started elsewhere runs only where that runner recorded it.
pub fn admit(state: &StateDir, attempt: u32) -> Option<String> {
    slurm::admit(state, attempt)
}

#[cfg(test)]
mod tests {
    use super::seam::RunnerHandle;
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
        let all = runners();
        assert_eq!(all.here.name(), RunnerName::Local);
        assert!(all.elsewhere.iter().all(|r| r.name() != RunnerName::Local));
    }

    /// A runner whose handle and answers the test sets, recording what it is asked.
    struct Fake {
        name: RunnerName,
        handle: std::sync::Mutex<Option<RunnerHandle>>,
        /// What it was asked, shared with the test.
        asked: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
        slot: bool,
        taken: Option<u32>,
        works: bool,
    }

    impl Fake {
        fn new(name: RunnerName, handle: Option<(u32, bool)>) -> Fake {
            let handle = handle.map(|(attempt, ended)| RunnerHandle { runner: name, attempt, ended });
            Fake { name, handle: handle.into(), asked: Default::default(), slot: false, taken: None, works: false }
        }

        fn said(&self, what: String) {
            self.asked.lock().expect("lock").push(what);
        }
    }

    impl Runner for Fake {
        fn name(&self) -> RunnerName {
            self.name
        }
        fn start(&self, spec: &Spec, _request: &Request) -> Result<()> {
            self.said(format!("start {}", spec.attempt));
            Ok(())
        }
        fn handle(&self, _state: &StateDir) -> Result<Option<RunnerHandle>> {
            Ok(*self.handle.lock().expect("lock"))
        }
        fn forget(&self, _state: &StateDir) {
            self.said("forget".into());
            *self.handle.lock().expect("lock") = None;
        }
        fn taken(&self, _state: &StateDir) -> Result<Option<u32>> {
            Ok(self.taken)
        }
        fn locate(&self, _state: &StateDir, attempt: u32, _boot: &str) -> Result<Attempt, LocateError> {
            self.said(format!("locate {attempt}"));
            Ok(Attempt { proc: Proc::Alive, run: None, exit: None, leftovers: Vec::new(), queued: None, polled: true })
        }
        fn stop(&self, _state: &StateDir, attempt: u32, _run: Option<&RunInfo>, how: Stop) -> Result<()> {
            self.said(format!("stop {attempt} {how:?}"));
            Ok(())
        }
        fn holds_slot(&self, _state: &StateDir, attempt: u32) -> bool {
            self.slot && matches!(*self.handle.lock().expect("lock"), Some(h) if h.attempt == attempt)
        }
        fn works_unrecorded(&self, _home: &Home, _project: &str, _id: &str, _worktree: &Path) -> bool {
            self.works
        }
    }

    fn state() -> StateDir {
        StateDir(std::path::PathBuf::from("/nonexistent/state"))
    }

    #[test]
    fn the_runner_whose_handle_names_the_attempt_holds_it_else_the_local_one() {
        let (here, there) = (Fake::new(RunnerName::Local, None), Fake::new(RunnerName::Slurm, Some((3, false))));
        let (here_asked, there_asked) = (here.asked.clone(), there.asked.clone());
        let all = Runners { here: Box::new(here), elsewhere: vec![Box::new(there)] };
        assert_eq!(all.holder(&state(), 3).expect("holder").name(), RunnerName::Slurm);
        assert_eq!(all.holder(&state(), 4).expect("holder").name(), RunnerName::Local, "a handle of another attempt's");
        all.holder(&state(), 3).expect("holder").locate(&state(), 3, "boot").expect("located");
        all.holder(&state(), 3).expect("holder").stop(&state(), 3, None, Stop::Kill).expect("stopped");
        all.holder(&state(), 4).expect("holder").stop(&state(), 4, None, Stop::Term).expect("stopped");
        assert_eq!(*there_asked.lock().expect("lock"), ["locate 3", "stop 3 Kill"]);
        assert_eq!(*here_asked.lock().expect("lock"), ["stop 4 Term"]);
    }

    #[test]
    fn a_start_or_a_refusal_forgets_every_other_runners_handle() {
        let all = Runners {
            here: Box::new(Fake::new(RunnerName::Local, None)),
            elsewhere: vec![Box::new(Fake::new(RunnerName::Slurm, Some((1, false))))],
        };
        all.forget_but(&state(), Some(RunnerName::Slurm));
        assert!(all.elsewhere[0].handle(&state()).expect("handle").is_some(), "its own handle is kept");
        all.forget_but(&state(), Some(RunnerName::Local));
        assert!(all.elsewhere[0].handle(&state()).expect("handle").is_none(), "started here: the job's handle is forgotten");
    }

    #[test]
    fn slots_takings_and_unrecorded_work_are_any_runners() {
        let mut slurm = Fake::new(RunnerName::Slurm, Some((2, false)));
        (slurm.slot, slurm.taken) = (true, Some(5));
        let all = Runners { here: Box::new(Fake::new(RunnerName::Local, None)), elsewhere: vec![Box::new(slurm)] };
        assert!(all.holds_slot(&state(), 2) && !all.holds_slot(&state(), 1));
        assert!(all.holds_any_slot(&state()));
        assert_eq!(all.taken(&state()).expect("taken"), Some(5));
        let home = Home::resolve(Some(Path::new("/nonexistent/home"))).expect("home");
        assert!(!all.works_unrecorded(&home, "p", "c", Path::new("/w")));
        let mut here = Fake::new(RunnerName::Local, None);
        here.works = true;
        let all = Runners { here: Box::new(here), elsewhere: Vec::new() };
        assert!(all.works_unrecorded(&home, "p", "c", Path::new("/w")));
        assert_eq!(all.taken(&state()).expect("taken"), None);
    }
}
