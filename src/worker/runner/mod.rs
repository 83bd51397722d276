//! Runners: where an attempt's shim runs. `local` (the default) starts it here, detached;
//! `slurm` submits it as one batch job to a cluster sharing the home ([`slurm`]). A runner
//! starts an attempt, says where it stands (queued, running, gone), stops it, and finds it
//! again after a restart from the handle it recorded in the attempt's state dir.

pub mod slurm;

use std::time::Duration;

use crate::activity::state::{RunInfo, StateDir};
use crate::worker::shim::{self, Spec, Stop};
use anyhow::Result;

pub use crate::artifact::commission::RunnerName;

/// The runner that applies: the first of the activity's, its package's and the project's.
pub fn choose(activity: Option<RunnerName>, package: Option<RunnerName>, project: RunnerName) -> RunnerName {
    activity.or(package).unwrap_or(project)
}

/// Where a ready attempt is to run.
#[derive(Debug, Clone)]
pub enum Placement {
    Local,
    Slurm(Box<slurm::Job>),
}

/// Start the attempt `spec` describes where `placement` says. Locally: the shim, detached, once
/// it has recorded the start. On Slurm: once the job is submitted and its id recorded (it may
/// wait in the queue). An attempt that cannot be placed is refused (its `exit.json` says why).
pub fn start(spec: &Spec, placement: &Placement) -> Result<()> {
    match placement {
        Placement::Local => {
            // A handle left by an earlier attempt, or by this one submitted to Slurm before its
            // runner changed, is no job of this attempt's.
            slurm::Handle::remove(&spec.state);
            shim::spawn_shim(spec)
        }
        Placement::Slurm(job) => slurm::submit(spec, job),
    }
}

/// Ask the attempt recorded in `state` to stop: through Slurm for a job of ours
/// (`scancel --signal=TERM`, or `scancel` to kill), else to its local shim (`run`).
pub fn stop(state: &StateDir, attempt: u32, run: Option<&RunInfo>, how: Stop) -> Result<()> {
    if let Some(handle) = slurm::Handle::read(state)?.filter(|h| h.attempt == attempt) {
        return slurm::stop(state, &handle, how);
    }
    match run {
        Some(run) => shim::stop_attempt(run, how),
        None => Ok(()),
    }
}

/// Whether an attempt of `state` holds a slot without asking anyone: a Slurm job recorded for
/// `attempt` whose end is not recorded (queued or running for all we know) — neither its exit
/// nor a later attempt's, nor a later attempt's start.
pub fn holds_slot(state: &StateDir, attempt: u32) -> bool {
    matches!(slurm::Handle::read(state), Ok(Some(h)) if h.attempt == attempt && h.ended.is_none())
        && !matches!(crate::files::read_json::<crate::activity::state::ExitInfo>(&state.exit()), Ok(Some(x)) if x.attempt >= attempt)
        && !matches!(state.read_run(), Ok(Some(r)) if r.attempt > attempt)
}

/// The runners' say on a shim about to run `attempt` of `state` here (the shim's `admit`): a
/// shim a runner started elsewhere runs only where that runner recorded it.
pub fn admit(state: &StateDir, attempt: u32) -> Option<String> {
    slurm::admit(state, attempt)
}

/// Slurm's `--time` for an attempt limited to `limit` (guild-hall stops it itself; Slurm's limit
/// is the backstop, a grace and a minute later): whole minutes, at least one.
pub fn slurm_minutes(limit: Duration, grace: Duration) -> u64 {
    (limit + grace + Duration::from_secs(60)).as_secs().div_ceil(60).max(1)
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
    fn a_slurm_handle_holds_a_slot_until_its_attempts_end_or_a_later_one() {
        use crate::activity::state::ExitInfo;
        let dir = tempfile::tempdir().expect("tempdir");
        let state = StateDir(dir.path().to_path_buf());
        let handle = slurm::Handle {
            attempt: 1,
            name: "guild-hall.p.c.1.0a1b2c3d".into(),
            job_id: Some(7),
            submitted_at: chrono::Utc::now(),
            ended: None,
        };
        crate::files::write_json(&slurm::Handle::path(&state), &handle).expect("handle");
        assert!(holds_slot(&state, 1), "queued or running for all we know");
        crate::files::write_json(&state.exit(), &ExitInfo::error(2, "a later attempt's".into())).expect("exit");
        assert!(!holds_slot(&state, 1), "a later attempt's exit: attempt 1 has ended");
        assert!(!crate::worker::liveness::busy(&state, "boot"));
        crate::files::write_json(&state.exit(), &ExitInfo::error(1, "its own".into())).expect("exit");
        assert!(!holds_slot(&state, 1));
        std::fs::remove_file(state.exit()).expect("rm");
        crate::files::write_json(&slurm::Handle::path(&state), &slurm::Handle { ended: Some(String::new()), ..handle }).expect("handle");
        assert!(!holds_slot(&state, 1), "its end taken");
    }

    #[test]
    fn slurms_time_limit_is_a_backstop_after_guild_halls() {
        let s = Duration::from_secs;
        // 1 h + 30 s grace + a minute: 62 minutes (rounded up).
        assert_eq!(slurm_minutes(s(3600), s(30)), 62);
        assert_eq!(slurm_minutes(s(1), s(0)), 2);
    }
}
