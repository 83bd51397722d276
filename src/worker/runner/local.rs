//! The local runner (the default): an attempt's shim started here, detached in a session of its
//! own, and found again by its records (`run.json`, `exit.json`) checked against this machine's
//! process table.

use std::path::Path;

use anyhow::Result;

use crate::activity::state::{ExitInfo, RunInfo, StateDir};
use crate::config::Home;
use crate::files::read_json;
use crate::worker::runner::seam::{Attempt, LocateError, Proc, Request, Runner, RunnerHandle, RunnerName};
use crate::worker::shim::{self, Spec, Stop};

pub(crate) struct Local;

impl Runner for Local {
    fn name(&self) -> RunnerName {
        RunnerName::Local
    }

    /// The shim, detached, once it has recorded the start (or why the worker could not start).
    fn start(&self, spec: &Spec, _request: &Request) -> Result<()> {
        shim::spawn_shim(spec)
    }

    fn handle(&self, _state: &StateDir) -> Result<Option<RunnerHandle>> {
        Ok(None)
    }

    fn forget(&self, _state: &StateDir) {}

    fn taken(&self, _state: &StateDir) -> Result<Option<u32>> {
        Ok(None)
    }

    /// Its shim's records, checked against the process table. A record naming a live process
    /// (pid and start time of this boot) that is not the attempt's shim is not trusted: no
    /// process is ever signalled by it.
    fn locate(&self, state: &StateDir, attempt: u32, boot: &str) -> Result<Attempt, LocateError> {
        let run = state.read_run().map_err(LocateError::Unreadable)?.filter(|r| r.attempt == attempt);
        // Whether the shim runs is looked at before its exit record is read: a shim records its
        // exit and then ends, so one seen ended has its record there to read. Read the other way
        // round, a shim ending in between was taken for one killed before recording it.
        let alive = run.as_ref().is_some_and(|r| shim::running(r, boot));
        let exit = read_json::<ExitInfo>(&state.exit()).map_err(LocateError::Unreadable)?.filter(|x| x.attempt == attempt);
        if let Some(run) = run.as_ref().filter(|r| r.boot_id == boot && shim::shim_state(r) == shim::ShimState::Foreign) {
            // A live process with the recorded pid and start time that is not the attempt's shim:
            // the record was not written by it.
            return Err(LocateError::Foreign { record: state.run(), pid: run.pid });
        }
        let mut proc = match (&run, &exit) {
            (Some(_), _) if alive => Proc::Alive,
            (Some(_), _) | (None, Some(_)) => Proc::Dead,
            (None, None) if shim::shim_lock_held(state) => Proc::Starting,
            (None, None) => Proc::NotStarted,
        };
        let mut leftovers = Vec::new();
        if let (Proc::Dead, Some(run), None) = (proc, &run, &exit) {
            // A shim that recorded no exit was killed: look for what it could not reap.
            leftovers = shim::leftovers(run);
            if !leftovers.is_empty() {
                proc = Proc::Lingering;
            }
        }
        Ok(Attempt { proc, run, exit, leftovers, queued: None, polled: false })
    }

    /// Through its shim (`run`), which stops every process of the attempt; nothing to stop
    /// before it started.
    fn stop(&self, _state: &StateDir, _attempt: u32, run: Option<&RunInfo>, how: Stop) -> Result<()> {
        match run {
            Some(run) => shim::stop_attempt(run, how),
            None => Ok(()),
        }
    }

    fn holds_slot(&self, _state: &StateDir, _attempt: u32) -> bool {
        false
    }

    /// A live process working in its worktree (read from every process's `cwd`).
    fn works_unrecorded(&self, _home: &Home, _project: &str, _id: &str, worktree: &Path) -> bool {
        shim::working_in(worktree)
    }
}
