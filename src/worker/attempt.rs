//! One attempt of a worker as every kind judges it — a commission's, a wave task's, a verify
//! run's: where its processes stand ([`Process`], each state with what it knows), what a look
//! at it while it works finds ([`Look`]: alive, or a [`Stop`] for going stale or past its
//! limit), and how it ended ([`Ended`]). Pure: the kinds observe, this judges, they act.
//!
//! prepared → queued → running → exited | died | lingering (→ exited | died), and from running a
//! stop (stale, overtime) that the kind carries out by signalling; the verdict is the kind's,
//! from [`Process::ended`] and what the attempt's mailbox says.

use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::activity::reason::Reason;
use crate::activity::state::{ExitInfo, Heartbeat, RunInfo, Sample};
use crate::worker::liveness::{self, Judgement};

/// A wall-clock limit and where it comes from (`None`: no limit).
pub(crate) type Limit = Option<(Duration, &'static str)>;

/// Where one attempt's processes stand.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Process {
    /// Recorded as started by the decider, but no shim has taken it (a pass may have died
    /// between the two): started again, in the same worktree.
    Prepared,
    /// A shim has taken it (its lock held, its worker not yet recorded), or a cluster's queue
    /// holds its job (`why`: which job and why it waits). Nothing of it runs yet.
    Queued { why: Option<String> },
    /// Its worker at work since `started_at` (as its shim recorded it), with its last heartbeat
    /// and the signs of life sampled now (`None`: not sampled, nothing to judge them by).
    Running { started_at: Option<DateTime<Utc>>, heartbeat: Option<Heartbeat>, sample: Option<Sample> },
    /// Its shim is gone but processes of the attempt are not: they are killed before anything
    /// that follows the attempt (its verdict, a rerun in its worktree).
    Lingering { run: RunInfo, pids: Vec<i32> },
    /// Every process of it gone, how the worker ended recorded.
    Exited(ExitInfo),
    /// Its shim is gone without recording how the worker ended (killed, a reboot), and
    /// nothing of the attempt runs any more.
    Died,
}

/// Whether an attempt's worker is blocked on a person (a commission's `ask`): then it is
/// judged by [`Process::look_while`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Waits {
    /// At work: silence for longer than `stale_after` means it hung.
    No,
    /// Waiting for a person's answer.
    ForAPerson,
}

/// What a look at a running attempt finds.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Look {
    /// Looked at for the first time this attempt: the clock of quiet time starts now.
    First(Heartbeat),
    /// Something moved since the last look: alive, and this is the new heartbeat.
    Beat(Heartbeat),
    /// Nothing moved, for less than `stale_after` (or nothing was sampled).
    Quiet,
    /// It must be stopped now.
    Stop(Stop),
}

/// Why a running attempt must be stopped now.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Stop {
    /// It ran past its wall-clock limit: the words that say so, naming the limit.
    Overtime(String),
    /// No sign of life (output, CPU, mailbox) for longer than `stale_after`: this long.
    Stale(Duration),
}

impl Stop {
    /// The reason the attempt fails with (its artifact's or task's `reason`).
    pub(crate) fn reason(&self) -> Reason {
        match self {
            Stop::Overtime(why) => Reason::Overtime(why.clone()),
            Stop::Stale(_) => Reason::Unresponsive,
        }
    }

    /// The kind of the timeline event that says it.
    pub(crate) fn event_kind(&self) -> &'static str {
        match self {
            Stop::Overtime(_) => "timeout",
            Stop::Stale(_) => "heartbeat",
        }
    }

    /// The timeline's words for it.
    pub(crate) fn text(&self) -> String {
        match self {
            Stop::Overtime(why) => why.clone(),
            Stop::Stale(idle) => liveness::stale_text(*idle),
        }
    }

    pub(crate) fn is_stale(&self) -> bool {
        matches!(self, Stop::Stale(_))
    }
}

/// How an attempt that is over ended, as far as its processes tell (a kind adds what its
/// mailbox says: a result, a reported failure).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Ended<'a> {
    /// Its worker exited, this way.
    Exited(&'a ExitInfo),
    /// Its shim died without recording how the worker ended.
    Died,
}

impl Process {
    /// Look at an attempt at work: past its limit first, then its signs of life against
    /// `stale_after`. Anything not running is [`Look::Quiet`]: there is nothing to judge.
    pub(crate) fn look(&self, limit: Limit, stale_after: Duration, now: DateTime<Utc>) -> Look {
        let Process::Running { started_at, heartbeat, sample } = self else { return Look::Quiet };
        if let Some(why) = started_at.and_then(|started| liveness::overtime(limit, started, now)) {
            return Look::Stop(Stop::Overtime(why));
        }
        let Some(sample) = sample else { return Look::Quiet };
        match liveness::judge(heartbeat.as_ref(), *sample, now, stale_after) {
            Judgement::Stale(idle) => Look::Stop(Stop::Stale(idle)),
            Judgement::Quiet => Look::Quiet,
            Judgement::First(beat) => Look::First(beat),
            Judgement::Beat(beat) => Look::Beat(beat),
        }
    }

    /// [`Self::look`], for an attempt whose worker may be waiting for a person: while it
    /// waits, its silence is no sign it hung, so it is never stale, and each look is a sign of
    /// life (the quiet clock starts again once the answer comes). Past its limit it is
    /// stopped all the same.
    pub(crate) fn look_while(&self, waits: Waits, limit: Limit, stale_after: Duration, now: DateTime<Utc>) -> Look {
        let look = self.look(limit, stale_after, now);
        match (waits, &look, self) {
            (Waits::ForAPerson, Look::Quiet | Look::Stop(Stop::Stale(_)), Process::Running { sample: Some(sample), .. }) => {
                Look::Beat(Heartbeat { last_activity: now, sample: *sample })
            }
            _ => look,
        }
    }

    /// When a running attempt must be looked at again though nothing changes on disk: when it
    /// would go stale, or reach its limit, whichever is first. `None`: it is not running.
    pub(crate) fn next_look(&self, limit: Limit, stale_after: Duration, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let Process::Running { started_at, heartbeat, .. } = self else { return None };
        Some(liveness::next_look(heartbeat.as_ref(), stale_after, limit, *started_at, now))
    }

    /// How it ended, once every process of it is gone.
    pub(crate) fn ended(&self) -> Option<Ended<'_>> {
        match self {
            Process::Exited(exit) => Some(Ended::Exited(exit)),
            Process::Died => Some(Ended::Died),
            _ => None,
        }
    }
}

/// What a shim has taken in a runtime dir: a recorded attempt, or — while it holds the lock
/// before recording anything — one not yet known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Taken {
    /// Its `run.json` (or `exit.json`, or a cluster job's handle) names this attempt.
    Attempt(u32),
    /// A shim holds the lock and has not recorded which attempt yet.
    Locked,
}

impl Taken {
    /// A shim took `attempt`, or may be taking it (the lock is held).
    pub(crate) fn covers(self, attempt: u32) -> bool {
        match self {
            Taken::Attempt(a) => a == attempt,
            Taken::Locked => true,
        }
    }
}

/// The state of attempt `attempt` from what a kind observed of its runtime dir: how it ended
/// (`died`, or its exit, if of this attempt), processes its killed shim left (`lingering`), its
/// worker at work (`running`), or a shim that took it (`taken`); else only prepared.
pub(crate) fn process(
    attempt: u32,
    exit: Option<&ExitInfo>,
    died: bool,
    lingering: Option<(&RunInfo, &[i32])>,
    running: Option<(DateTime<Utc>, Option<&Heartbeat>, Sample)>,
    taken: Option<Taken>,
) -> Process {
    if died {
        return Process::Died;
    }
    if let Some(x) = exit.filter(|x| x.attempt == attempt) {
        return Process::Exited(x.clone());
    }
    if let Some((run, pids)) = lingering {
        return Process::Lingering { run: run.clone(), pids: pids.to_vec() };
    }
    if let Some((started_at, heartbeat, sample)) = running {
        return Process::Running { started_at: Some(started_at), heartbeat: heartbeat.cloned(), sample: Some(sample) };
    }
    match taken {
        Some(t) if t.covers(attempt) => Process::Queued { why: None },
        _ => Process::Prepared,
    }
}

/// The state of attempt `attempt` once its caller has waited for its shim to end (a meeting's
/// turn, run in the foreground): exited as its `exit.json` says, if that is this attempt's;
/// else died without recording how the worker ended.
pub(crate) fn waited(attempt: u32, exit: Option<&ExitInfo>) -> Process {
    match exit.filter(|x| x.attempt == attempt) {
        Some(x) => Process::Exited(x.clone()),
        None => Process::Died,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn t(secs: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_700_000_000 + secs, 0).expect("time")
    }

    fn s(n: u64) -> Sample {
        Sample { log_len: n, cpu_ticks: n, mailbox_len: n }
    }

    fn running(started: i64, beat: Option<(i64, u64)>, now_sample: Option<u64>) -> Process {
        Process::Running {
            started_at: Some(t(started)),
            heartbeat: beat.map(|(at, n)| Heartbeat { last_activity: t(at), sample: s(n) }),
            sample: now_sample.map(s),
        }
    }

    fn exit(attempt: u32, code: i32) -> ExitInfo {
        ExitInfo {
            attempt,
            code: Some(code),
            signal: None,
            error: None,
            finished_at: t(0),
            tail: None,
            setup: None,
            checks: Box::default(),
        }
    }

    const STALE: Duration = Duration::from_secs(10);
    const LIMIT: Limit = Some((Duration::from_secs(100), "the task's timeout"));

    /// Every look at a running attempt, and what it finds.
    #[test]
    fn a_look_at_a_running_attempt() {
        let healthy = |at: i64, n: u64| Heartbeat { last_activity: t(at), sample: s(n) };
        let table: Vec<(&str, Process, Limit, i64, Look)> = vec![
            ("first look", running(0, None, Some(1)), LIMIT, 5, Look::First(healthy(5, 1))),
            ("moved", running(0, Some((0, 1)), Some(2)), LIMIT, 50, Look::Beat(healthy(50, 2))),
            ("quiet, not yet stale", running(0, Some((0, 1)), Some(1)), LIMIT, 10, Look::Quiet),
            ("stale", running(0, Some((0, 1)), Some(1)), LIMIT, 11, Look::Stop(Stop::Stale(Duration::from_secs(11)))),
            ("not sampled", running(0, Some((0, 1)), None), LIMIT, 50, Look::Quiet),
            (
                "overtime before stale",
                running(0, Some((0, 1)), Some(1)),
                LIMIT,
                100,
                Look::Stop(Stop::Overtime("timed out: ran longer than 1m 40s (the task's timeout)".into())),
            ),
            ("no limit", running(0, Some((999, 1)), Some(2)), None, 1000, Look::Beat(healthy(1000, 2))),
            (
                "no start recorded: no overtime",
                Process::Running { started_at: None, heartbeat: None, sample: Some(s(1)) },
                LIMIT,
                500,
                Look::First(healthy(500, 1)),
            ),
            ("prepared", Process::Prepared, LIMIT, 500, Look::Quiet),
            ("queued", Process::Queued { why: Some("job 1 of a batch runner: Resources".into()) }, LIMIT, 500, Look::Quiet),
            ("exited", Process::Exited(exit(1, 0)), LIMIT, 500, Look::Quiet),
            ("died", Process::Died, LIMIT, 500, Look::Quiet),
        ];
        for (name, p, limit, now, want) in table {
            assert_eq!(p.look(limit, STALE, t(now)), want, "{name}");
        }
    }

    /// When a running attempt is looked at again: at its going stale or its limit, whichever
    /// is first; an attempt not running is not timed.
    #[test]
    fn when_a_running_attempt_is_looked_at_again() {
        let stale_at = |beat: i64| t(beat + 10) + chrono::Duration::milliseconds(100);
        let table: Vec<(&str, Process, Limit, Option<DateTime<Utc>>)> = vec![
            ("its going stale first", running(0, Some((20, 1)), Some(1)), LIMIT, Some(stale_at(20))),
            ("its limit first", running(0, Some((95, 1)), Some(1)), LIMIT, Some(t(100))),
            ("no limit", running(0, Some((95, 1)), Some(1)), None, Some(stale_at(95))),
            ("no heartbeat yet: stale counted from now", running(0, None, Some(1)), None, Some(stale_at(50))),
            (
                "no start recorded: no limit",
                Process::Running { started_at: None, heartbeat: None, sample: None },
                LIMIT,
                Some(stale_at(50)),
            ),
            ("prepared", Process::Prepared, LIMIT, None),
            ("exited", Process::Exited(exit(1, 0)), LIMIT, None),
            ("died", Process::Died, LIMIT, None),
        ];
        for (name, p, limit, want) in table {
            assert_eq!(p.next_look(limit, STALE, t(50)), want, "{name}");
        }
    }

    /// A worker waiting for a person is never stale, and each look is a sign of life; past
    /// its limit it is stopped all the same.
    #[test]
    fn an_attempt_waiting_for_a_person_is_never_stale() {
        let silent = running(0, Some((0, 1)), Some(1));
        assert!(matches!(silent.look_while(Waits::No, LIMIT, STALE, t(50)), Look::Stop(Stop::Stale(_))));
        assert_eq!(silent.look_while(Waits::ForAPerson, LIMIT, STALE, t(50)), Look::Beat(Heartbeat { last_activity: t(50), sample: s(1) }));
        assert_eq!(silent.look_while(Waits::ForAPerson, LIMIT, STALE, t(5)), Look::Beat(Heartbeat { last_activity: t(5), sample: s(1) }));
        assert!(matches!(silent.look_while(Waits::ForAPerson, LIMIT, STALE, t(100)), Look::Stop(Stop::Overtime(_))));
        assert_eq!(Process::Prepared.look_while(Waits::ForAPerson, LIMIT, STALE, t(50)), Look::Quiet);
    }

    #[test]
    fn a_stop_says_why_in_the_words_each_kind_writes() {
        let over = Stop::Overtime("timed out: ran longer than 1s (the plan's timeout)".into());
        let said = over.reason().to_string();
        assert_eq!(
            (said.as_str(), over.event_kind(), over.text(), over.is_stale()),
            (over.text().as_str(), "timeout", said.clone(), false)
        );
        let stale = Stop::Stale(Duration::from_millis(61_500));
        // The reason's words are the liveness rules' own.
        assert_eq!(stale.reason().to_string(), liveness::UNRESPONSIVE);
        assert_eq!(stale.event_kind(), "heartbeat");
        assert_eq!(stale.text(), "stale: no progress, output or CPU for 1m 1s");
        assert!(stale.is_stale());
    }

    /// The state of an attempt from what was observed, in its order of precedence.
    #[test]
    fn the_state_of_an_attempt_from_what_was_observed() {
        let run = RunInfo {
            attempt: 2,
            pid: 10,
            pgid: 10,
            start_time: 1,
            boot_id: "b".into(),
            worker_pid: None,
            started_at: t(0),
            run_id: String::new(),
        };
        let pids = [11, 12];
        let x2 = exit(2, 0);
        let x1 = exit(1, 1);
        let live = Some((t(0), None, s(1)));
        let table: Vec<(&str, Process)> = vec![
            ("died wins", process(2, Some(&x2), true, Some((&run, &pids)), live, Some(Taken::Attempt(2)))),
            ("exit of this attempt", process(2, Some(&x2), false, Some((&run, &pids)), live, None)),
            ("an earlier exit is not this one's", process(2, Some(&x1), false, None, None, None)),
            ("lingering", process(2, None, false, Some((&run, &pids)), live, Some(Taken::Attempt(2)))),
            ("running", process(2, None, false, None, live, Some(Taken::Attempt(2)))),
            ("taken", process(2, None, false, None, None, Some(Taken::Attempt(2)))),
            ("the lock held", process(2, None, false, None, None, Some(Taken::Locked))),
            ("an earlier attempt taken", process(2, None, false, None, None, Some(Taken::Attempt(1)))),
        ];
        let want = [
            Process::Died,
            Process::Exited(x2.clone()),
            Process::Prepared,
            Process::Lingering { run: run.clone(), pids: pids.to_vec() },
            Process::Running { started_at: Some(t(0)), heartbeat: None, sample: Some(s(1)) },
            Process::Queued { why: None },
            Process::Queued { why: None },
            Process::Prepared,
        ];
        for ((name, got), want) in table.into_iter().zip(want) {
            assert_eq!(got, want, "{name}");
        }
        assert_eq!(Process::Died.ended(), Some(Ended::Died));
        assert_eq!(Process::Exited(x2.clone()).ended(), Some(Ended::Exited(&x2)));
        for p in [Process::Prepared, Process::Queued { why: None }, running(0, None, None)] {
            assert_eq!(p.ended(), None);
        }
        assert_eq!(Process::Lingering { run, pids: vec![] }.ended(), None);
        // A shim waited for: its attempt's exit, else died (an earlier attempt's is not its).
        assert_eq!(waited(2, Some(&x2)), Process::Exited(x2.clone()));
        assert_eq!(waited(2, Some(&x1)), Process::Died);
        assert_eq!(waited(2, None), Process::Died);
    }

    proptest! {
        /// Past its limit, an attempt is stopped for it whatever its signs of life; within it,
        /// it is stale exactly when nothing moved for longer than `stale_after`; and a look
        /// that keeps it alive carries the heartbeat to write only when something moved.
        #[test]
        fn overtime_wins_and_staleness_is_only_silence(
            started in 0i64..1000,
            since in 0i64..1000,
            ran in 0i64..2000,
            limit in proptest::option::of(1u64..1500),
            before in 0u64..3,
            now_sample in 0u64..3,
            stale_after in 1u64..500,
        ) {
            let now = started + ran;
            let beat_at = started + since.min(ran);
            let p = running(started, Some((beat_at, before)), Some(now_sample));
            let limit = limit.map(|l| (Duration::from_secs(l), "the project's timeout"));
            let look = p.look(limit, Duration::from_secs(stale_after), t(now));
            let over = limit.is_some_and(|(l, _)| ran as u64 >= l.as_secs());
            let idle = (now - beat_at) as u64;
            match look {
                Look::Stop(Stop::Overtime(_)) => prop_assert!(over),
                Look::Stop(Stop::Stale(d)) => prop_assert!(!over && before == now_sample && d.as_secs() == idle && idle > stale_after),
                Look::Quiet => prop_assert!(!over && before == now_sample && idle <= stale_after),
                Look::Beat(h) => prop_assert!(!over && before != now_sample && h.last_activity == t(now)),
                Look::First(_) => prop_assert!(false, "a heartbeat was given"),
            }
        }

        /// A running attempt in which nothing moves is looked at again no later than it goes
        /// stale or reaches its limit, and that look stops it.
        #[test]
        fn the_next_look_at_a_silent_attempt_stops_it(
            started in 0i64..1000,
            since in 0i64..1000,
            limit in proptest::option::of(1u64..1500),
            stale_after in 1u64..500,
        ) {
            let beat = started + since;
            let p = running(started, Some((beat, 1)), Some(1));
            let limit = limit.map(|l| (Duration::from_secs(l), "the project's timeout"));
            let stale = Duration::from_secs(stale_after);
            let at = p.next_look(limit, stale, t(beat)).expect("running: timed");
            let stale_at = t(beat) + chrono::Duration::from_std(stale + Duration::from_millis(100)).expect("small");
            prop_assert!(at <= stale_at);
            if let Some((l, _)) = limit {
                prop_assert!(at <= t(started) + chrono::Duration::from_std(l).expect("small"));
            }
            prop_assert!(matches!(p.look(limit, stale, at), Look::Stop(_)));
        }

        /// Whatever was observed, an attempt is in exactly one state, and ended only once
        /// nothing of it runs.
        #[test]
        fn one_state_and_ended_only_when_nothing_runs(
            attempt in 1u32..4,
            exit_of in proptest::option::of(1u32..4),
            died: bool,
            lingers: bool,
            lives: bool,
            taken in proptest::option::of(prop_oneof![(1u32..4).prop_map(Taken::Attempt), Just(Taken::Locked)]),
        ) {
            let run = RunInfo { attempt, pid: 1, pgid: 1, start_time: 1, boot_id: "b".into(), worker_pid: None, started_at: t(0), run_id: String::new() };
            let x = exit_of.map(|a| exit(a, 0));
            let pids = [7];
            let p = process(attempt, x.as_ref(), died, lingers.then_some((&run, &pids[..])), lives.then_some((t(0), None, s(1))), taken);
            prop_assert_eq!(p.ended().is_some(), died || exit_of == Some(attempt));
            let running = matches!(p, Process::Running { .. } | Process::Lingering { .. } | Process::Queued { .. });
            prop_assert!(!(p.ended().is_some() && running));
            if p == Process::Prepared {
                prop_assert!(!died && exit_of != Some(attempt) && !lingers && !lives && !taken.is_some_and(|t| t.covers(attempt)));
            }
        }
    }
}
