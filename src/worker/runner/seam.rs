//! The seam every runner implements ([`Runner`]): start an attempt, locate it (where it
//! stands, as [`Attempt`]), stop it, say whether it holds a slot; the runner-neutral handle it
//! leaves in the attempt's state dir ([`RunnerHandle`]) and what an attempt asks of it
//! ([`Request`]). Nothing here names a particular runner.

use std::path::Path;
use std::time::Duration;

use anyhow::Result;

use crate::activity::state::{ExitInfo, RunInfo, StateDir};
use crate::config::Home;
use crate::worker::shim::{Spec, Stop};

pub(crate) use crate::artifact::commission::RunnerName;

/// Why where an attempt stands cannot be told ([`Runner::locate`]): nothing is signalled on
/// such a record; the caller reports it and leaves the attempt alone.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LocateError {
    /// A record that does not parse or is implausible (`run.json`, `exit.json`, a handle).
    #[error("{0:#}")]
    Unreadable(anyhow::Error),
    /// `run.json` (at `record`) names `pid`, a live process of this boot that is not the
    /// attempt's shim.
    #[error("{}: names pid {pid}, a running process that is not this attempt's shim; no process is signalled by it", .record.display())]
    Foreign { record: std::path::PathBuf, pid: i32 },
    /// The runner's handle (at `handle`) records no job for `attempt`.
    #[error("{} records no job for attempt {attempt}", .handle.display())]
    NoJob { handle: std::path::PathBuf, attempt: u32 },
    /// The runner (Slurm) cannot be asked while the attempt has not ended; `handle` made us ask.
    #[error("{}: {error:#}", .handle.display())]
    NotAnswering { handle: std::path::PathBuf, error: anyhow::Error },
}

/// Where an attempt's processes stand.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Proc {
    /// No shim has recorded this attempt and none holds the lock.
    NotStarted,
    /// A shim holds the lock but has not yet recorded the worker (or its runner holds it in a
    /// queue).
    Starting,
    Alive,
    /// The shim is gone (killed before it could finish) but processes of its attempt are not.
    Lingering,
    /// Recorded, and now gone.
    Dead,
}

impl Proc {
    /// Something of the attempt runs, or a shim (or a runner's queue) holds it: alive,
    /// starting or lingering. Nothing of it is settled yet.
    pub(crate) fn at_work(self) -> bool {
        matches!(self, Proc::Alive | Proc::Starting | Proc::Lingering)
    }

    /// Its shim is at work, or a runner's queue holds its job: alive or starting (what a
    /// killed shim left running is not).
    pub(crate) fn under_way(self) -> bool {
        matches!(self, Proc::Alive | Proc::Starting)
    }
}

/// One attempt as its runner, its shim's records and the process table show it.
#[derive(Debug, Clone)]
pub(crate) struct Attempt {
    pub(crate) proc: Proc,
    /// Its `run.json` (the shim started the worker), if it is this attempt's.
    pub(crate) run: Option<RunInfo>,
    /// Its `exit.json` (every process of it gone, or it could not start), if it is this attempt's.
    pub(crate) exit: Option<ExitInfo>,
    /// With [`Proc::Lingering`]: the processes carrying the attempt's run-id mark
    /// ([`crate::worker::shim::leftovers`]), to be killed ([`crate::worker::shim::kill_leftovers`])
    /// before anything that follows the attempt (its verdict, a rerun in the same worktree) is done.
    pub(crate) leftovers: Vec<i32>,
    /// A job its runner holds in a queue: which, and why, in the runner's words (`… job 123:
    /// Resources`). Neither running nor stale; it holds its slot.
    pub(crate) queued: Option<String>,
    /// Its runner is asked where it stands (a job elsewhere): no file changes when it vanishes,
    /// so it is looked at again every [`POLL`].
    pub(crate) polled: bool,
}

/// How often an attempt whose runner must be asked ([`Attempt::polled`]) is looked at.
pub(crate) const POLL: Duration = Duration::from_secs(2);

/// What a runner that places attempts elsewhere recorded for one in its state dir (its own file
/// there), said without the runner's own terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RunnerHandle {
    pub(crate) runner: RunnerName,
    /// The attempt it was made for.
    pub(crate) attempt: u32,
    /// Its end is taken (recorded, and the runner not asked again).
    pub(crate) ended: bool,
}

/// What an attempt asks of the runner that places it: the activity it is for and its bounds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Request {
    /// The project's name and the activity's id (a runner names its job after them).
    pub(crate) project: String,
    pub(crate) id: String,
    pub(crate) cpus: Option<u32>,
    pub(crate) memory: Option<String>,
    /// Its wall-clock limit (guild-hall stops it then; a runner may set its own backstop).
    pub(crate) limit: Option<Duration>,
    /// Its grace between SIGTERM and SIGKILL.
    pub(crate) grace: Duration,
}

/// A place attempts run. The local runner starts the shim here; a runner that places it
/// elsewhere (a batch system, a cluster) records a handle in the attempt's state dir and is
/// found again by it after a restart. Every method but [`Runner::start`] is asked of a runner
/// only for an attempt it holds a handle for (the local runner: for one no other runner does).
pub(crate) trait Runner: Send + Sync {
    fn name(&self) -> RunnerName;

    /// Start the attempt `spec` describes, as `request` asks: once this returns the attempt is
    /// recorded as started (its shim's `run.json`), taken (a job submitted, its handle
    /// written), or refused (its `exit.json` says why, through [`crate::worker::shim::refuse`]).
    fn start(&self, spec: &Spec, request: &Request) -> Result<()>;

    /// The handle this runner recorded in `state`, if any. The local runner keeps none.
    fn handle(&self, state: &StateDir) -> Result<Option<RunnerHandle>>;

    /// Forget this runner's handle in `state`: an attempt started elsewhere, or refused.
    fn forget(&self, state: &StateDir);

    /// Whether this runner has taken the attempt its handle in `state` is for (submitted, or
    /// perhaps being submitted): that attempt, if so.
    fn taken(&self, state: &StateDir) -> Result<Option<u32>>;

    /// Where `attempt` of `state` stands (`boot`: this machine's boot id, read once per pass).
    /// `Err`: a record that cannot be trusted, or a runner that cannot be asked, saying which.
    fn locate(&self, state: &StateDir, attempt: u32, boot: &str) -> Result<Attempt, LocateError>;

    /// Ask `attempt` of `state` to stop (`run`: its shim's record, if it started).
    fn stop(&self, state: &StateDir, attempt: u32, run: Option<&RunInfo>, how: Stop) -> Result<()>;

    /// Whether `attempt` of `state` holds a slot by this runner's records alone, asking no one
    /// (a job queued or running for all we know). The local runner's attempts hold theirs by
    /// their shim, which the caller looks at itself.
    fn holds_slot(&self, state: &StateDir, attempt: u32) -> bool;

    /// Whether a worker of activity `id` of `project` is at work through this runner though no
    /// record of this home names it (its records lost): found by what the runner can see (a
    /// process working in `worktree`, a job writing the activity's log).
    fn works_unrecorded(&self, home: &Home, project: &str, id: &str, worktree: &Path) -> bool;
}

/// Whether a handle recorded for `attempt` holds its slot: its end not taken, and neither its
/// exit nor a later attempt's recorded, nor a later attempt's start.
pub(crate) fn handle_holds_slot(state: &StateDir, handle: Option<RunnerHandle>, attempt: u32) -> bool {
    matches!(handle, Some(h) if h.attempt == attempt && !h.ended)
        && !matches!(crate::files::read_json::<ExitInfo>(&state.exit()), Ok(Some(x)) if x.attempt >= attempt)
        && !matches!(state.read_run(), Ok(Some(r)) if r.attempt > attempt)
}
