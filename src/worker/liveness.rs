//! Whether a worker at work is still doing it, for every kind that runs one (commissions, wave
//! tasks, a plan's verify): where its attempt's processes stand ([`attempt`]: its shim's
//! records checked against the process table), its signs of life sampled (output, CPU,
//! mailbox), judged against `stale_after`, and its wall-clock limit; and the end of its shim,
//! seen without polling ([`on_shim_exit`]). Read-only: it never signals.

use std::path::Path;
use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::activity::state::{Heartbeat, RunInfo, Sample, StateDir};
use crate::files::read_json;
use crate::worker::shim;

/// Call `then` (in a thread of its own) once the shim of the attempt whose runtime dir is
/// `state_dir` has gone: the kernel releases the shim's lock however it dies, so the thread
/// blocks on that lock and needs no polling. At once if no shim ever took the lock; never, if
/// the thread cannot be started (said in the log: the caller's next look will notice).
pub(crate) fn on_shim_exit(state_dir: std::path::PathBuf, then: impl FnOnce() + Send + 'static) {
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

pub(crate) use crate::worker::runner::{Attempt, Proc, POLL};

pub(crate) use crate::worker::shim::running;

/// Whether a shim is at work in `state`, whatever its attempt: its lock held (starting, or
/// running), its recorded run [`running`], or a runner's handle recorded with no exit (queued,
/// or running elsewhere). A `run.json` that does not parse counts as not
/// running here (a caller that must count it says so itself).
pub(crate) fn busy(state: &StateDir, boot: &str) -> bool {
    shim::shim_lock_held(state)
        || matches!(state.read_run(), Ok(Some(r)) if running(&r, boot))
        || crate::worker::runner::holds_any_slot(state)
}

/// Whether a meeting's turn is under way in `state`: the process running it holds the turn
/// lock. Its holder file (`turn.json`, for the refusal's message) is no proof: a turn killed
/// before it cleaned up, or a reboot, leaves it behind.
pub(crate) fn turn_running(state: &StateDir) -> bool {
    crate::files::is_locked(&state.turn_lock())
}

/// Where `attempt` in `state` stands, as the runner holding it says
/// (`runner::locate`). `Err`: a record that cannot be trusted, saying which file
/// and why — one that does not parse, an implausible `run.json` ([`StateDir::read_run`]), or one
/// naming a live process (pid and start time of this boot) that is not the attempt's shim. No
/// process is ever signalled by such a record: the caller reports it and leaves the attempt alone.
pub(crate) fn attempt(state: &StateDir, attempt: u32, boot: &str) -> Result<Attempt, crate::worker::runner::LocateError> {
    crate::worker::runner::locate(state, attempt, boot)
}

#[cfg(test)]
/// The reason an unresponsive worker fails with.
pub(crate) const UNRESPONSIVE: &str = "process unresponsive";

/// What advances while the attempt works, read now: its log's length, its worker's CPU time
/// (its own and its reaped children's), its mailbox's length (progress, task updates).
pub(crate) fn sample(state: &StateDir, attempt: u32, run: &RunInfo, mailbox: &Path) -> Sample {
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
pub(crate) enum Judgement {
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
pub(crate) fn judge(prev: Option<&Heartbeat>, sample: Sample, now: DateTime<Utc>, stale_after: Duration) -> Judgement {
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
pub(crate) fn stale_text(idle: Duration) -> String {
    format!("stale: no progress, output or CPU for {}", humantime::format_duration(Duration::from_secs(idle.as_secs())))
}

/// The wall-clock limit that applies: the first of `chain` (most specific first) that is set,
/// with where it comes from; `0s` there means none.
pub(crate) fn time_limit(chain: &[(Option<Duration>, &'static str)]) -> Option<(Duration, &'static str)> {
    let (limit, from) = chain.iter().find_map(|(d, from)| d.map(|d| (d, *from)))?;
    (!limit.is_zero()).then_some((limit, from))
}

/// Why an attempt started at `started` must stop now for running longer than `limit`, if it must.
pub(crate) fn overtime(limit: Option<(Duration, &'static str)>, started: DateTime<Utc>, now: DateTime<Utc>) -> Option<String> {
    let (limit, from) = limit?;
    let ran = now.signed_duration_since(started).to_std().unwrap_or_default();
    (ran >= limit).then(|| format!("timed out: ran longer than {} ({from})", humantime::format_duration(limit)))
}

/// When a running attempt must be looked at again though nothing changes on disk: when it
/// would go stale, or reach its limit, whichever is first.
pub(crate) fn next_look(
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
