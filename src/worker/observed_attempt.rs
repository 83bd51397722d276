//! One attempt as every kind observes it — a commission's, a wave task's, a verify run's: where
//! its runner located it and, while its worker is alive, its signs of life ([`ObservedAttempt`], read
//! by [`observe`]). Its liveness is judged from this one shape, through the attempt machine
//! ([`ObservedAttempt::running`], [`crate::worker::attempt::Process::look`]). Read-only.

use chrono::{DateTime, Utc};

use crate::activity::state::{ExitInfo, Heartbeat, RunInfo, Sample, StateDir};
use crate::files::read_json;
use crate::worker::attempt::{self, Process, Taken};
use crate::worker::liveness::{self, Attempt, Proc};
use crate::worker::runner::LocateError;
use crate::worker::toolbox::mailbox;

/// One attempt as observed.
#[derive(Debug, Clone)]
pub(crate) struct ObservedAttempt {
    /// Where its runner located it: its processes, its shim's records (`run.json`,
    /// `exit.json`), what a killed shim left, a queue that holds it.
    pub(crate) located: Attempt,
    /// The heartbeat last written for it, read while its worker is alive (written only by
    /// guild-hall, atomically: an unreadable one restarts the count of quiet time).
    pub(crate) heartbeat: Option<Heartbeat>,
    /// Its signs of life sampled now, while its worker is alive with its start recorded.
    pub(crate) sample: Option<Sample>,
}

/// An attempt's worker at work, as a plan keeps it for each task and its verify run: when its
/// shim recorded its start, and its signs of life ([`ObservedAttempt::live`]).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Live {
    pub(crate) started_at: DateTime<Utc>,
    /// The last change seen (`heartbeat` in its runtime dir).
    pub(crate) heartbeat: Option<Heartbeat>,
    pub(crate) sample: Sample,
}

impl ObservedAttempt {
    /// An attempt no shim has recorded, or one not looked at (nothing of it is known).
    pub(crate) fn not_started() -> ObservedAttempt {
        let located = Attempt { proc: Proc::NotStarted, run: None, exit: None, leftovers: Vec::new(), queued: None, polled: false };
        ObservedAttempt { located, heartbeat: None, sample: None }
    }

    /// Its worker at work as the attempt machine judges it: since its recorded start (none
    /// recorded: no limit applies), with its last heartbeat and the signs of life sampled now.
    pub(crate) fn running(&self) -> Process {
        Process::Running {
            started_at: self.located.run.as_ref().map(|r| r.started_at),
            heartbeat: self.heartbeat.clone(),
            sample: self.sample,
        }
    }

    /// Its worker at work — alive, its start recorded, no exit recorded yet — with its signs
    /// of life; `None` otherwise.
    pub(crate) fn live(&self) -> Option<Live> {
        if self.located.proc != Proc::Alive || self.located.exit.is_some() {
            return None;
        }
        let run = self.located.run.as_ref()?;
        Some(Live { started_at: run.started_at, heartbeat: self.heartbeat.clone(), sample: self.sample? })
    }

    /// Something of it runs, or a shim (or a runner's queue) holds it: its worker alive, its
    /// shim starting, or what a killed shim left still running ([`Proc::at_work`]).
    pub(crate) fn at_work(&self) -> bool {
        self.located.proc.at_work()
    }

    /// Its shim at work, or a runner's queue holding its job ([`Proc::under_way`]): it holds
    /// its slot.
    pub(crate) fn under_way(&self) -> bool {
        self.located.proc.under_way()
    }

    /// Its worker is alive (its shim at work, its run recorded), whether or not its exit is
    /// recorded yet.
    pub(crate) fn alive(&self) -> bool {
        self.located.proc == Proc::Alive
    }

    /// A shim holds it (its lock, or a runner's queue) and has not recorded its worker yet.
    pub(crate) fn starting(&self) -> bool {
        self.located.proc == Proc::Starting
    }

    /// No shim has recorded it and none holds it: nothing of it ever ran, or nothing of it is
    /// known.
    pub(crate) fn untaken(&self) -> bool {
        self.located.proc == Proc::NotStarted
    }

    /// Recorded (run or exit), and every process of it gone: its worker ended, or its shim
    /// died with nothing left running.
    pub(crate) fn over(&self) -> bool {
        self.located.proc == Proc::Dead
    }

    /// How its worker ended, once its shim (or runner) recorded it.
    pub(crate) fn exit(&self) -> Option<&ExitInfo> {
        self.located.exit.as_ref()
    }

    /// Its shim's record of its worker (`run.json`), once written.
    pub(crate) fn run(&self) -> Option<&RunInfo> {
        self.located.run.as_ref()
    }

    /// The job a runner's queue holds for it, and why it waits, in the runner's words.
    pub(crate) fn queued(&self) -> Option<&str> {
        self.located.queued.as_deref()
    }

    /// Its runner must be asked where it stands (a job elsewhere): looked at again on a timer.
    pub(crate) fn polled(&self) -> bool {
        self.located.polled
    }

    /// Its shim is gone without recording how its worker ended (killed, a reboot), and nothing
    /// of it runs any more. `locked`: a shim holds its runtime dir's lock — then nothing is
    /// taken for dead.
    pub(crate) fn died(&self, locked: bool) -> bool {
        let l = &self.located;
        !locked && l.proc == Proc::Dead && l.run.is_some() && l.exit.is_none()
    }

    /// What its killed shim left running (found by its run-id mark): its run, and their pids.
    pub(crate) fn lingering(&self) -> Option<(&RunInfo, &[i32])> {
        let l = &self.located;
        l.run.as_ref().filter(|_| l.proc == Proc::Lingering).map(|run| (run, l.leftovers.as_slice()))
    }

    /// Attempt `attempt` as the attempt machine sees it ([`attempt::process`]), from what was
    /// observed of it and what a shim has taken in its runtime dir (`taken`; [`Taken::Locked`]:
    /// its lock held).
    pub(crate) fn process(&self, attempt: u32, taken: Option<Taken>) -> Process {
        let live = self.live();
        let running = live.as_ref().map(|l| (l.started_at, l.heartbeat.as_ref(), l.sample));
        attempt::process(attempt, self.located.exit.as_ref(), self.died(taken == Some(Taken::Locked)), self.lingering(), running, taken)
    }
}

impl Live {
    /// Its worker at work as the attempt machine judges it.
    pub(crate) fn running(&self) -> Process {
        Process::Running { started_at: Some(self.started_at), heartbeat: self.heartbeat.clone(), sample: Some(self.sample) }
    }
}

/// Observe `attempt` of `state` (`boot`: this machine's boot id, read once per pass): located
/// by its runner ([`liveness::attempt`]) and, while its worker is alive, its heartbeat read and
/// its signs of life sampled. `Err`: a record that cannot be trusted, saying which (nothing is
/// signalled by it).
pub(crate) fn observe(state: &StateDir, attempt: u32, boot: &str) -> Result<ObservedAttempt, LocateError> {
    let located = liveness::attempt(state, attempt, boot)?;
    let (mut heartbeat, mut sample) = (None, None);
    if located.proc == Proc::Alive {
        heartbeat = read_json(&state.heartbeat()).ok().flatten();
        let mailbox = mailbox::attempt_mailbox(state, attempt);
        sample = located.run.as_ref().map(|run| liveness::sample(state, attempt, run, &mailbox));
    }
    Ok(ObservedAttempt { located, heartbeat, sample })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(secs: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_700_000_000 + secs, 0).expect("time")
    }

    fn run(attempt: u32) -> RunInfo {
        RunInfo {
            attempt,
            pid: 10,
            pgid: 10,
            start_time: 1,
            boot_id: "b".into(),
            worker_pid: None,
            started_at: t(0),
            run_id: String::new(),
        }
    }

    fn seen(proc: Proc, run: Option<RunInfo>, exit: Option<ExitInfo>, sample: Option<Sample>) -> ObservedAttempt {
        let beat = Heartbeat { last_activity: t(5), sample: Sample::default() };
        let located = Attempt { proc, run, exit, leftovers: Vec::new(), queued: None, polled: false };
        ObservedAttempt { located, heartbeat: Some(beat), sample }
    }

    /// What the attempt machine is handed of an observed attempt, and when a plan keeps it as
    /// a worker at work.
    #[test]
    fn an_observed_attempt_as_the_machine_sees_it() {
        let s = Sample { log_len: 1, cpu_ticks: 2, mailbox_len: 3 };
        let beat = Heartbeat { last_activity: t(5), sample: Sample::default() };
        let alive = seen(Proc::Alive, Some(run(1)), None, Some(s));
        assert_eq!(alive.running(), Process::Running { started_at: Some(t(0)), heartbeat: Some(beat.clone()), sample: Some(s) });
        let live = alive.live().expect("at work");
        assert_eq!(live, Live { started_at: t(0), heartbeat: Some(beat), sample: s });
        // Either shape is the same running attempt to the machine.
        assert_eq!(live.running(), alive.running());
        // No start recorded: running with no limit to judge, and not kept as at work.
        let unrecorded = seen(Proc::Alive, None, None, None);
        assert_eq!(unrecorded.running(), Process::Running { started_at: None, heartbeat: unrecorded.heartbeat.clone(), sample: None });
        assert_eq!(unrecorded.live(), None);
        // Its exit recorded (a shim seen alive as it ends), or not alive: not at work.
        assert_eq!(seen(Proc::Alive, Some(run(1)), Some(ExitInfo::error(1, String::new())), Some(s)).live(), None);
        for proc in [Proc::NotStarted, Proc::Starting, Proc::Lingering, Proc::Dead] {
            assert_eq!(seen(proc, Some(run(1)), None, Some(s)).live(), None, "{proc:?}");
        }
        let nothing = ObservedAttempt::not_started();
        assert_eq!((nothing.located.proc, nothing.live()), (Proc::NotStarted, None));
    }

    /// What the attempt machine is handed of an observed attempt, state by state: how it ended,
    /// what its killed shim left, its worker at work, or only taken; a shim holding the lock
    /// keeps an attempt located dead from being taken for dead.
    #[test]
    fn an_observed_attempt_fed_to_the_attempt_machine() {
        let s = Sample { log_len: 1, cpu_ticks: 2, mailbox_len: 3 };
        let x = ExitInfo::error(1, "boom".into());
        let mut lingers = seen(Proc::Lingering, Some(run(1)), None, None);
        lingers.located.leftovers = vec![7, 8];
        let dead = seen(Proc::Dead, Some(run(1)), None, None);
        let taken = Some(Taken::Attempt(1));
        let table: Vec<(&str, ObservedAttempt, Option<Taken>, Process)> = vec![
            ("exited", seen(Proc::Dead, Some(run(1)), Some(x.clone()), None), taken, Process::Exited(x.clone())),
            ("died", dead.clone(), taken, Process::Died),
            ("located dead, the lock held", dead.clone(), Some(Taken::Locked), Process::Queued { why: None }),
            ("lingering", lingers.clone(), taken, Process::Lingering { run: run(1), pids: vec![7, 8] }),
            ("at work", seen(Proc::Alive, Some(run(1)), None, Some(s)), taken, seen(Proc::Alive, Some(run(1)), None, Some(s)).running()),
            ("starting", seen(Proc::Starting, None, None, None), Some(Taken::Locked), Process::Queued { why: None }),
            ("not taken", ObservedAttempt::not_started(), None, Process::Prepared),
            ("an earlier attempt taken", ObservedAttempt::not_started(), Some(Taken::Attempt(0)), Process::Prepared),
        ];
        for (name, a, taken, want) in table {
            assert_eq!(a.process(1, taken), want, "{name}");
        }
        assert!(dead.died(false) && !dead.died(true));
        assert_eq!(lingers.lingering(), Some((&run(1), &[7, 8][..])));
        assert!(!lingers.died(false) && dead.lingering().is_none());
    }

    /// Where an attempt stands, as the deciders ask it (never by the runner's `Proc`): for each
    /// place a runner locates it, whether it is at work, under way (holding its slot), alive,
    /// starting, untaken or over.
    #[test]
    fn where_an_observed_attempt_stands() {
        // (proc, at_work, under_way, alive, starting, untaken, over)
        let table = [
            (Proc::NotStarted, false, false, false, false, true, false),
            (Proc::Starting, true, true, false, true, false, false),
            (Proc::Alive, true, true, true, false, false, false),
            (Proc::Lingering, true, false, false, false, false, false),
            (Proc::Dead, false, false, false, false, false, true),
        ];
        for (proc, at_work, under_way, alive, starting, untaken, over) in table {
            let a = seen(proc, Some(run(1)), None, None);
            let got = (a.at_work(), a.under_way(), a.alive(), a.starting(), a.untaken(), a.over());
            assert_eq!(got, (at_work, under_way, alive, starting, untaken, over), "{proc:?}");
            assert_eq!((proc.at_work(), proc.under_way()), (at_work, under_way), "{proc:?}");
        }
        // What was recorded of it, as located.
        let x = ExitInfo::error(1, "boom".into());
        let mut queued = seen(Proc::Starting, None, None, None);
        queued.located.queued = Some("a cluster's job 7: waiting for resources".into());
        queued.located.polled = true;
        assert_eq!(
            (queued.queued(), queued.polled(), queued.run(), queued.exit()),
            (Some("a cluster's job 7: waiting for resources"), true, None, None)
        );
        let exited = seen(Proc::Dead, Some(run(1)), Some(x.clone()), None);
        assert_eq!((exited.run(), exited.exit(), exited.queued(), exited.polled()), (Some(&run(1)), Some(&x), None, false));
    }
}
