//! Whether a worker at work is still doing it, for every kind that runs one (commissions, wave
//! tasks, a plan's verify): where its attempt's processes stand ([`attempt`]: its shim's
//! records checked against the process table), its signs of life sampled (output, CPU,
//! mailbox), judged against `stale_after`, and its wall-clock limit; and the end of its shim,
//! seen without polling ([`on_shim_exit`]). Read-only: it never signals.

use std::path::Path;
use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::activity::state::{ExitInfo, Heartbeat, RunInfo, Sample, StateDir};
use crate::files::read_json;
use crate::worker::shim;

/// Call `then` (in a thread of its own) once the shim of the attempt whose runtime dir is
/// `state_dir` has gone: the kernel releases the shim's lock however it dies, so the thread
/// blocks on that lock and needs no polling. At once if no shim ever took the lock; never, if
/// the thread cannot be started (said in the log: the caller's next look will notice).
pub fn on_shim_exit(state_dir: std::path::PathBuf, then: impl FnOnce() + Send + 'static) {
    let spawned = std::thread::Builder::new().name("shim-waiter".into()).spawn(move || {
        let lock = StateDir(state_dir).shim_lock();
        if lock.exists() {
            let _ = crate::files::lock(&lock, crate::files::Lock::Shared);
        }
        then();
    });
    if let Err(e) = spawned {
        tracing::warn!(error = %e, "cannot start a thread to wait for a worker's end; the next look will notice it");
    }
}

/// Where an attempt's processes stand.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Proc {
    /// No shim has recorded this attempt and none holds the lock.
    NotStarted,
    /// A shim holds the lock but has not yet recorded the worker.
    Starting,
    Alive,
    /// The shim is gone (killed before it could finish) but processes of its attempt are not.
    Lingering,
    /// Recorded, and now gone.
    Dead,
}

/// One attempt as its shim's records and the process table show it.
#[derive(Debug, Clone)]
pub struct Attempt {
    pub proc: Proc,
    /// Its `run.json` (the shim started the worker), if it is this attempt's.
    pub run: Option<RunInfo>,
    /// Its `exit.json` (every process of it gone, or it could not start), if it is this attempt's.
    pub exit: Option<ExitInfo>,
    /// With [`Proc::Lingering`]: the processes carrying the attempt's run-id mark
    /// ([`shim::leftovers`]), to be killed ([`shim::kill_leftovers`]) before anything that
    /// follows the attempt (its verdict, a rerun in the same worktree) is done.
    pub leftovers: Vec<i32>,
    /// A Slurm job still waiting in the queue: which, and why (`Slurm job 123: Resources`).
    /// Neither running nor stale; it holds its slot.
    pub queued: Option<String>,
    /// Its runner is asked where it stands (a Slurm job): no file changes when it vanishes, so
    /// it is looked at again every [`POLL`].
    pub polled: bool,
}

/// How often an attempt whose runner must be asked ([`Attempt::polled`]) is looked at.
pub const POLL: Duration = Duration::from_secs(2);

/// Whether the shim `run` records is at work now: of this boot (`boot`, [`shim::boot_id`] read
/// once per pass), alive, and proven the attempt's ([`shim::is_ours`]). The one test of a
/// recorded shim's life, for every kind.
pub fn running(run: &RunInfo, boot: &str) -> bool {
    run.boot_id == boot && shim::is_ours(run)
}

/// Whether a shim is at work in `state`, whatever its attempt: its lock held (starting, or
/// running), its recorded run [`running`], or a Slurm job recorded with no exit (queued or
/// running on a node). A `run.json` that does not parse counts as not
/// running here (a caller that must count it says so itself).
pub fn busy(state: &StateDir, boot: &str) -> bool {
    shim::shim_lock_held(state)
        || matches!(state.read_run(), Ok(Some(r)) if running(&r, boot))
        || matches!(crate::worker::runner::slurm::Handle::read(state), Ok(Some(h)) if crate::worker::runner::holds_slot(state, h.attempt))
}

/// Whether a meeting's turn is under way in `state`: the process running it holds the turn
/// lock. Its holder file (`turn.json`, for the refusal's message) is no proof: a turn killed
/// before it cleaned up, or a reboot, leaves it behind.
pub fn turn_running(state: &StateDir) -> bool {
    crate::files::is_locked(&state.turn_lock())
}

/// Where `attempt` in `state` stands. `Err`: a record that cannot be trusted, saying which file
/// and why — one that does not parse, an implausible `run.json` ([`StateDir::read_run`]), or one
/// naming a live process (pid and start time of this boot) that is not the attempt's shim. No
/// process is ever signalled by such a record: the caller reports it and leaves the attempt alone.
pub fn attempt(state: &StateDir, attempt: u32, boot: &str) -> Result<Attempt, String> {
    // A Slurm job's attempt: where it stands is Slurm's to say, with the shim's records.
    let handle = crate::worker::runner::slurm::Handle::read(state).map_err(|e| format!("{e:#}"))?;
    if let Some(handle) = handle.filter(|h| h.attempt == attempt) {
        return crate::worker::runner::slurm::attempt(state, attempt, &handle);
    }
    let run = state.read_run().map_err(|e| format!("{e:#}"))?.filter(|r| r.attempt == attempt);
    // Whether the shim runs is looked at before its exit record is read: a shim records its
    // exit and then ends, so one seen ended has its record there to read. Read the other way
    // round, a shim ending in between was taken for one killed before recording it.
    let alive = run.as_ref().is_some_and(|r| running(r, boot));
    let exit = read_json::<ExitInfo>(&state.exit()).map_err(|e| format!("{e:#}"))?.filter(|x| x.attempt == attempt);
    if let Some(run) = run.as_ref().filter(|r| r.boot_id == boot && shim::shim_state(r) == shim::ShimState::Foreign) {
        // A live process with the recorded pid and start time that is not the attempt's shim:
        // the record was not written by it.
        return Err(format!(
            "{}: names pid {}, a running process that is not this attempt's shim; no process is signalled by it",
            state.run().display(),
            run.pid
        ));
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

/// The reason an unresponsive worker fails with.
pub const UNRESPONSIVE: &str = "process unresponsive";

/// What advances while the attempt works, read now: its log's length, its worker's CPU time
/// (its own and its reaped children's), its mailbox's length (progress, task updates).
pub fn sample(state: &StateDir, attempt: u32, run: &RunInfo, mailbox: &Path) -> Sample {
    let len = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    // A pid recorded on another machine (a cluster's node) names nothing here: its shim
    // writes its CPU time down instead.
    let here = run.boot_id == shim::boot_id();
    let cpu = match run.worker_pid.filter(|_| here).and_then(crate::worker::shim::proc_stat) {
        Some(st) => st.cpu_ticks,
        // As its shim wrote it down (a runner's node: `cpu.json`).
        None => read_json::<serde_json::Value>(&shim::cpu_file(state))
            .ok()
            .flatten()
            .filter(|v| v["attempt"].as_u64() == Some(u64::from(attempt)))
            .and_then(|v| v["cpu_ticks"].as_u64())
            .unwrap_or(0),
    };
    Sample { log_len: len(&state.log(attempt)), cpu_ticks: cpu, mailbox_len: len(mailbox) }
}

/// What the signs of life come to.
#[derive(Debug, Clone, PartialEq)]
pub enum Judgement {
    /// Looked at for the first time this attempt: the clock of quiet time starts now.
    First(Heartbeat),
    /// Something moved since the last look: alive, and this is the new heartbeat.
    Beat(Heartbeat),
    /// Nothing moved, for less than `stale_after`.
    Quiet,
    /// Nothing moved for longer than `stale_after`: this long.
    Stale(Duration),
}

/// Judge a running worker by its `sample` against the heartbeat of the last change.
pub fn judge(prev: Option<&Heartbeat>, sample: Sample, now: DateTime<Utc>, stale_after: Duration) -> Judgement {
    match prev {
        Some(hb) if hb.sample == sample => {
            let idle = now.signed_duration_since(hb.last_activity).to_std().unwrap_or_default();
            if idle > stale_after {
                Judgement::Stale(idle)
            } else {
                Judgement::Quiet
            }
        }
        Some(_) => Judgement::Beat(Heartbeat { last_activity: now, sample }),
        None => Judgement::First(Heartbeat { last_activity: now, sample }),
    }
}

/// The timeline's words for a stale worker.
pub fn stale_text(idle: Duration) -> String {
    format!("stale: no progress, output or CPU for {}", humantime::format_duration(Duration::from_secs(idle.as_secs())))
}

/// The wall-clock limit that applies: the first of `chain` (most specific first) that is set,
/// with where it comes from; `0s` there means none.
pub fn time_limit(chain: &[(Option<Duration>, &'static str)]) -> Option<(Duration, &'static str)> {
    let (limit, from) = chain.iter().find_map(|(d, from)| d.map(|d| (d, *from)))?;
    (!limit.is_zero()).then_some((limit, from))
}

/// Why an attempt started at `started` must stop now for running longer than `limit`, if it must.
pub fn overtime(limit: Option<(Duration, &'static str)>, started: DateTime<Utc>, now: DateTime<Utc>) -> Option<String> {
    let (limit, from) = limit?;
    let ran = now.signed_duration_since(started).to_std().unwrap_or_default();
    (ran >= limit).then(|| format!("timed out: ran longer than {} ({from})", humantime::format_duration(limit)))
}

/// When a running attempt must be looked at again though nothing changes on disk: when it
/// would go stale, or reach its limit, whichever is first.
pub fn next_look(
    heartbeat: Option<&Heartbeat>,
    stale_after: Duration,
    limit: Option<(Duration, &'static str)>,
    started: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> DateTime<Utc> {
    let last = heartbeat.map(|h| h.last_activity).unwrap_or(now);
    let stale = last + chrono::Duration::from_std(stale_after + Duration::from_millis(100)).unwrap_or_default();
    let timeout = limit.zip(started).map(|((limit, _), started)| started + chrono::Duration::from_std(limit).unwrap_or_default());
    timeout.map_or(stale, |t| t.min(stale))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(secs: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_700_000_000 + secs, 0).expect("time")
    }

    #[test]
    fn any_sign_of_life_keeps_it_alive() {
        let s = Sample { log_len: 1, cpu_ticks: 1, mailbox_len: 1 };
        let after = Duration::from_secs(3);
        assert!(matches!(judge(None, s, t(0), after), Judgement::First(h) if h.last_activity == t(0)));
        let hb = Heartbeat { last_activity: t(0), sample: s };
        assert_eq!(judge(Some(&hb), s, t(3), after), Judgement::Quiet);
        assert_eq!(judge(Some(&hb), s, t(4), after), Judgement::Stale(Duration::from_secs(4)));
        for moved in [Sample { log_len: 2, ..s }, Sample { cpu_ticks: 2, ..s }, Sample { mailbox_len: 2, ..s }] {
            assert!(matches!(judge(Some(&hb), moved, t(4), after), Judgement::Beat(h) if h.last_activity == t(4)));
        }
    }

    #[test]
    fn the_most_specific_limit_wins_and_zero_is_none() {
        let s = |n| Some(Duration::from_secs(n));
        assert_eq!(time_limit(&[(None, "task"), (s(5), "plan"), (s(9), "project")]), Some((Duration::from_secs(5), "plan")));
        assert_eq!(time_limit(&[(s(0), "task"), (s(5), "plan")]), None);
        assert_eq!(overtime(Some((Duration::from_secs(4), "the task's timeout")), t(0), t(3)), None);
        assert_eq!(
            overtime(Some((Duration::from_secs(4), "the task's timeout")), t(0), t(4)).as_deref(),
            Some("timed out: ran longer than 4s (the task's timeout)")
        );
        assert_eq!(next_look(None, Duration::from_secs(60), Some((Duration::from_secs(4), "x")), Some(t(0)), t(1)), t(4));
    }
}
