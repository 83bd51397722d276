//! The plan decider as a state machine: the whole table of status requests (each allowed one
//! carried out, each other put back saying why), the task states it moves through, and
//! properties over generated snapshots — only allowed transitions, `parallelism` and the
//! slots shared with commissions never exceeded, and convergence: the planned effects carried
//! out (modelled minimally below) and planning again reaches a fixed point in bounded steps.

use std::collections::BTreeMap;
use std::path::Path;

use chrono::{DateTime, Utc};
use proptest::prelude::*;
use serde_yaml_ng::Value;

use super::*;
use crate::activity::kind::Action as _;
use crate::worker::attempt::Taken;
use crate::worker::liveness::Proc;
use crate::worker::observed_attempt::ObservedAttempt;

const ID: &str = "p";

pub(super) fn t0() -> DateTime<Utc> {
    DateTime::from_timestamp(1_700_000_000, 0).expect("time")
}

/// A plan of `waves` waves of `tasks` tasks each (workers `w`), optionally with verify and a
/// fixer, its frontmatter ending with `extra`.
fn plan_text(waves: usize, tasks: usize, parallelism: usize, verify: bool, fixer: bool, extra: &str) -> String {
    let mut s = format!("---\nparallelism: {parallelism}\n");
    if verify {
        s.push_str("verify: [make, check]\n");
    }
    if fixer {
        s.push_str("fixer: w\n");
    }
    s.push_str("waves:\n");
    for w in 0..waves {
        for t in 0..tasks {
            let lead = if t == 0 { "  - - " } else { "    - " };
            s.push_str(&format!("{lead}{{id: t{w}{t}, worker: w, prompt: do {w}{t}}}\n"));
        }
    }
    s.push_str(extra);
    s.push_str("---\n");
    s
}

fn parse(text: &str) -> Plan {
    Plan::parse(Path::new(".lore/plans/p.md"), text).expect("a valid plan")
}

pub(super) fn observed_task(task: &Task) -> ObservedTask {
    ObservedTask {
        task: task.clone(),
        attempt: PlanAttempt::not_started(),
        usage: None,
        limited: None,
        overspent: None,
        mail: TaskMail::default(),
        worker_problem: None,
        worktree_exists: false,
        worktree_gone: None,
        setup_made: None,
        landed: false,
        package_timeout: None,
        package_cap: None,
    }
}

/// What the observer finds of a task's attempt or a verify run, as the tables set it up: the
/// located states a real runtime dir gives ([`crate::worker::runner::Attempt`]).
impl PlanAttempt {
    /// Nothing of it known: no shim has taken anything in its runtime dir.
    pub(super) fn not_started() -> PlanAttempt {
        PlanAttempt { observed: ObservedAttempt::not_started(), taken: None, busy: false }
    }

    fn located(&mut self, proc: Proc, run: Option<RunInfo>, exit: Option<ExitInfo>, leftovers: Vec<i32>) {
        let located = crate::worker::runner::Attempt { proc, run, exit, leftovers, queued: None, polled: false };
        self.observed = ObservedAttempt { located, heartbeat: None, sample: None };
    }

    /// Its worker ended so: its shim recorded the exit and is gone.
    pub(super) fn set_exit(&mut self, exit: ExitInfo) {
        self.located(Proc::Dead, Some(run_info(exit.attempt, t0())), Some(exit), Vec::new());
    }

    /// Attempt `attempt`'s shim is gone without recording an exit, and nothing of it runs.
    pub(super) fn set_died(&mut self, attempt: u32) {
        self.located(Proc::Dead, Some(run_info(attempt, t0())), None, Vec::new());
    }

    /// Attempt `attempt`'s worker at work, with these signs of life.
    pub(super) fn set_live(&mut self, attempt: u32, live: Live) {
        self.located(Proc::Alive, Some(run_info(attempt, live.started_at)), None, Vec::new());
        self.observed.heartbeat = live.heartbeat;
        self.observed.sample = Some(live.sample);
    }

    /// Its shim killed, and these processes of its attempt still running.
    pub(super) fn set_lingering(&mut self, l: &Lingering) {
        self.located(Proc::Lingering, Some(l.run.clone()), None, l.pids.clone());
    }
}

/// The `run.json` of `attempt`, started at `started_at`.
pub(super) fn run_info(attempt: u32, started_at: DateTime<Utc>) -> RunInfo {
    RunInfo {
        attempt,
        pid: 4242,
        pgid: 4242,
        start_time: 1,
        boot_id: "b".into(),
        worker_pid: Some(4243),
        started_at,
        run_id: "0123456789abcdef0123456789abcdef".into(),
    }
}

pub(super) fn observed(plan: Plan, record: Option<PlanRecord>) -> Observed {
    let tasks = plan.tasks().map(observed_task).collect();
    Observed {
        plan,
        record,
        taken: false,
        integrated: None,
        tasks,
        verify: PlanAttempt::not_started(),
        fix_status: None,
        timeline_keys: Default::default(),
        usage_recorded: None,
        reviews: Vec::new(),
        reviewer_timeouts: Vec::new(),
        reviewer_caps: Vec::new(),
    }
}

pub(super) fn record(status: PlanStatus, wave: usize) -> PlanRecord {
    PlanRecord { status, wave, ..PlanRecord::fresh() }
}

pub(super) fn task_record(state: TaskState, attempt: u32) -> TaskRecord {
    TaskRecord { state, attempt, reason: None, sequence: 0, stop_sent: false, reruns: 0, not_before: None }
}

pub(super) fn snap(plans: Vec<Observed>, slots: usize) -> Snapshot {
    Snapshot {
        plans,
        now: timeline::timestamp(t0()),
        at: t0(),
        stale_after: std::time::Duration::from_secs(3),
        timeout: std::time::Duration::from_secs(3600),
        slots,
        running_by_package: Default::default(),
        reviewers: None,
    }
}

pub(super) fn exit(attempt: u32, code: i32) -> ExitInfo {
    ExitInfo { attempt, code: Some(code), signal: None, error: None, finished_at: t0(), tail: None, setup: None, checks: Box::default() }
}

/// The record a plan holds after `a` (its own if `a` writes none).
fn recorded<'a>(o: &'a Observed, a: Option<&'a Action>) -> Option<&'a PlanRecord> {
    a.and_then(|a| a.update().record.as_ref()).or(o.record.as_ref())
}

fn sets<'a>(u: &'a Update, key: &str) -> Option<&'a Value> {
    u.edits.iter().rev().find_map(|e| match e {
        Edit::Set(k, v) if k == key => Some(v),
        _ => None,
    })
}

/// The plan statuses the decider itself moves through, plus what a person may ask (a retry
/// lands on `running`).
fn step_allowed(from: PlanStatus, to: PlanStatus) -> bool {
    use PlanStatus::*;
    matches!(
        (from, to),
        (Draft, Pending)
            | (Pending, Running)
            | (Running, Verifying | Halted | Completed)
            | (Verifying, Running | Completed | Halted)
            | (Halted, Verifying)
            | (Halted | Failed | Cancelled, Running)
            | (Pending | Running | Verifying | Halted, Cancelled)
    )
}

/// The task states the decider moves a task through (the copy-back, not the decider, makes a
/// task integrated: see [`Integration`]).
fn task_allowed(from: TaskState, to: TaskState) -> bool {
    use TaskState::*;
    matches!(
        (from, to),
        (Queued, Running | Failed) | (Running, Succeeded | Failed | Stopped | Queued) | (Succeeded, Queued) | (Failed | Stopped, Queued)
    )
}

#[test]
fn the_whole_table_of_status_requests() {
    use PlanStatus::*;
    // (had, asked) → what the record says after the pass; `None`: refused.
    let carried_out = |had: PlanStatus, asked: PlanStatus| -> Option<PlanStatus> {
        match (had, asked) {
            // Submitted and started in the same pass.
            (Draft, Pending) => Some(Running),
            // A retry: what did not succeed runs again.
            (Halted | Failed | Cancelled, Pending) => Some(Running),
            (Pending | Running | Verifying | Halted, Cancelled) => Some(Cancelled),
            _ => None,
        }
    };
    let text = plan_text(2, 2, 1, false, false, "");
    for had in PlanStatus::ALL {
        for asked in PlanStatus::ALL {
            if had == asked {
                continue;
            }
            let mut plan = parse(&text.replace("---\nparallelism", &format!("---\nstatus: {asked}\nparallelism")));
            plan.status = Some(asked);
            let mut r = record(had, 1);
            // The wave's tasks: one failed, one succeeded (a retry queues the failed one).
            let tasks: Vec<Task> = plan.waves[0].clone();
            r.tasks.insert(tasks[0].canonical.clone(), task_record(TaskState::Failed, 1));
            r.tasks.insert(tasks[1].canonical.clone(), task_record(TaskState::Succeeded, 1));
            let o = observed(plan, Some(r));
            let a = decide(&snap(vec![o.clone()], 4));
            let first = a.iter().find(|a| a.id() == ID);
            let u = first.map(|a| a.update()).unwrap_or_else(|| panic!("{had} -> {asked}: nothing planned"));
            match carried_out(had, asked) {
                Some(to) => {
                    assert!(person_may_request(had, asked), "{had} -> {asked} carried out but not a person's to ask");
                    let now = recorded(&o, first).map(|r| r.status);
                    assert_eq!(now, Some(to), "{had} -> {asked}: {a:?}");
                    assert!(!u.events.iter().any(|e| e["kind"] == "refused"), "{had} -> {asked}: {u:?}");
                    if to == Running && had != Draft {
                        let t = recorded(&o, first).and_then(|r| r.tasks.get(&tasks[0].canonical)).map(|t| t.state);
                        assert!(matches!(t, Some(TaskState::Queued | TaskState::Running)), "a retry runs the failed task again: {t:?}");
                    }
                }
                None => {
                    assert!(!person_may_request(had, asked), "{had} -> {asked} refused but allowed");
                    assert_eq!(u.record, None, "{had} -> {asked}: a refusal changes no record");
                    assert_eq!(sets(u, "status").and_then(Value::as_str), Some(had.as_str()), "put back: {u:?}");
                    assert_eq!(sets(u, "reason"), None, "the reason it stands is kept: {u:?}");
                    let why = sets(u, "refused").and_then(Value::as_str).unwrap_or("");
                    assert!(why.starts_with(&format!("refused: a plan that is {had} cannot be set to {asked} by hand")), "{why}");
                    assert!(u.events.iter().any(|e| e["kind"] == "refused" && e["asked"] == asked.as_str()), "{u:?}");
                }
            }
        }
    }
    // The same through `desired:`: consumed either way.
    for (had, desired, to) in
        [(Running, "cancelled", Some(Cancelled)), (Completed, "dispatched", None), (Halted, "dispatched", Some(Running))]
    {
        let plan = parse(&plan_text(1, 1, 1, false, false, &format!("status: {had}\ndesired: {desired}\n")));
        let o = observed(plan, Some(record(had, 1)));
        let a = decide(&snap(vec![o.clone()], 4));
        let u = a[0].update();
        assert!(u.edits.iter().any(|e| matches!(e, Edit::Remove(k) if k == "desired")), "{had} desired {desired}: {u:?}");
        assert_eq!(to.is_some(), !u.events.iter().any(|e| e["kind"] == "refused"), "{had} desired {desired}: {u:?}");
        if let Some(to) = to {
            assert_eq!(recorded(&o, a.first()).map(|r| r.status), Some(to));
        }
    }
}

#[test]
fn the_task_states_a_pass_moves_through() {
    use TaskState::*;
    let text = plan_text(1, 2, 2, false, false, "status: running\n");
    let t1 = parse(&text).waves[0][0].canonical.clone();
    // (the task's recorded state, what is observed of it) → the states one pass moves it
    // through, in order.
    type Setup = fn(&mut ObservedTask, &mut TaskRecord);
    let table: [(&str, TaskState, Setup, &[TaskState]); 12] = [
        ("queued, a slot free: started", Queued, |_, _| {}, &[Running]),
        ("queued, its worker unusable: failed", Queued, |o, _| o.worker_problem = Some("no such worker".into()), &[Failed]),
        ("ended cleanly: succeeded", Running, |o, _| o.attempt.set_exit(exit(1, 0)), &[Succeeded]),
        ("ended badly: failed", Running, |o, _| o.attempt.set_exit(exit(1, 2)), &[Failed]),
        // Shut down with nothing of the wave failed (a cancel a retry came after): runs again.
        (
            "ended after a stop: stopped, and run again",
            Running,
            |o, r| {
                o.attempt.set_exit(exit(1, 0));
                r.stop_sent = true;
            },
            &[Stopped, Queued, Running],
        ),
        ("its supervisor died: run again", Running, |o, _| o.attempt.set_died(1), &[Queued, Running]),
        (
            "died too often: failed",
            Running,
            |o, r| {
                o.attempt.set_died(1);
                r.reruns = MAX_RERUNS;
            },
            &[Failed],
        ),
        ("succeeded, its work lost: run again", Succeeded, |o, _| o.worktree_gone = Some("removed".into()), &[Queued, Running]),
        ("still at work: unchanged", Running, |o, _| o.attempt.taken = Some(Taken::Attempt(1)), &[]),
        // Kiln: in_progress with no heartbeat beyond the timeout is rerun_required (killed
        // first: it starts again once nothing of it runs), within the budget; then failed.
        ("live but silent past stale_after: run again", Running, |o, _| o.attempt.set_live(1, silent(4)), &[Queued]),
        (
            "live but silent too often: failed",
            Running,
            |o, r| {
                o.attempt.set_live(1, silent(4));
                r.reruns = MAX_RERUNS;
            },
            &[Failed],
        ),
        // Past its wall-clock limit, busy or not: failed (no rerun would end otherwise).
        (
            "past its timeout: failed",
            Running,
            |o, _| {
                let mut l = silent(0);
                l.started_at = t0() - chrono::Duration::hours(2);
                o.attempt.set_live(1, l);
            },
            &[Failed],
        ),
    ];
    for (what, from, setup, through) in table {
        let plan = parse(&text);
        let mut r = record(PlanStatus::Running, 1);
        let mut tr = task_record(from, if from == Queued { 0 } else { 1 });
        let mut o = observed(plan, None);
        o.tasks[0].attempt.taken = Some(Taken::Attempt(tr.attempt));
        setup(&mut o.tasks[0], &mut tr);
        r.tasks.insert(t1.clone(), tr.clone());
        // The other task is at work, so the wave is neither over nor shut down.
        let other = o.tasks[1].task.canonical.clone();
        r.tasks.insert(other, task_record(Running, 1));
        o.tasks[1].attempt.taken = Some(Taken::Attempt(1));
        o.record = Some(r);
        let a = decide(&snap(vec![o.clone()], 4));
        let logged = task_moves(a.first(), &t1);
        assert_eq!(logged, through, "{what}: {a:?}");
        let now = recorded(&o, a.first()).and_then(|r| r.tasks.get(&t1)).map(|t| t.state);
        assert_eq!(now, Some(through.last().copied().unwrap_or(from)), "{what}: {a:?}");
        let mut at = from;
        for to in through {
            assert!(task_allowed(at, *to), "{what}: {at:?} -> {to:?}");
            at = *to;
        }
    }
}

/// A worker at work since a minute ago whose signs of life last changed `quiet_secs` ago.
fn silent(quiet_secs: i64) -> Live {
    let sample = crate::activity::state::Sample { log_len: 10, cpu_ticks: 5, mailbox_len: 100 };
    Live {
        started_at: t0() - chrono::Duration::seconds(60),
        heartbeat: Some(crate::activity::state::Heartbeat { last_activity: t0() - chrono::Duration::seconds(quiet_secs), sample }),
        sample,
    }
}

/// The states an action's log moves task `t` through, in order.
fn task_moves(a: Option<&Action>, t: &str) -> Vec<TaskState> {
    let states =
        [TaskState::Queued, TaskState::Running, TaskState::Succeeded, TaskState::Failed, TaskState::Stopped, TaskState::Integrated];
    a.map(|a| a.update().events.iter())
        .into_iter()
        .flatten()
        .filter(|e| e["kind"] == "task" && e["task"] == t)
        .filter_map(|e| states.into_iter().find(|s| e["state"] == s.as_str()))
        .collect()
}

/// One generated plan: its shape, what its artifact and record say, and what is observed of
/// its tasks.
#[derive(Debug, Clone)]
struct Gen {
    waves: usize,
    tasks: usize,
    parallelism: usize,
    verify: bool,
    fixer: bool,
    asked: Option<PlanStatus>,
    had: Option<PlanStatus>,
    wave: usize,
    states: Vec<Option<TaskState>>,
    /// Per task: 0 nothing, 1 a clean exit, 2 a failed exit, 3 died, 4 worktree gone, 5 busy.
    seen: Vec<u8>,
    verify_exit: Option<bool>,
}

fn arb_state() -> impl Strategy<Value = Option<TaskState>> {
    use TaskState::*;
    prop::option::of(prop::sample::select(vec![Queued, Running, Succeeded, Failed, Stopped, Integrated]))
}

fn arb_gen() -> impl Strategy<Value = Gen> {
    (1..4usize, 1..4usize, 1..4usize, any::<bool>(), any::<bool>())
        .prop_flat_map(|(waves, tasks, parallelism, verify, fixer)| {
            (
                Just((waves, tasks, parallelism, verify, fixer)),
                prop::option::of(prop::sample::select(PlanStatus::ALL.to_vec())),
                // Mostly running: where tasks start, stop and end.
                prop_oneof![3 => Just(Some(PlanStatus::Running)), 2 => prop::option::of(prop::sample::select(PlanStatus::ALL.to_vec()))],
                1..=waves,
                prop::collection::vec(arb_state(), tasks),
                prop::collection::vec(0..6u8, tasks),
                prop::option::of(any::<bool>()),
            )
        })
        .prop_map(|((waves, tasks, parallelism, verify, fixer), asked, had, wave, states, seen, verify_exit)| Gen {
            waves,
            tasks,
            parallelism,
            verify,
            fixer,
            asked,
            had,
            wave,
            states,
            seen,
            verify_exit,
        })
}

fn build(g: &Gen, n: usize) -> Observed {
    let status = g.asked.map(|s| format!("status: {s}\n")).unwrap_or_default();
    let text = plan_text(g.waves, g.tasks, g.parallelism, g.verify, g.fixer, &status);
    let mut plan = parse(&text);
    plan.id = format!("{ID}{n}");
    let mut o = observed(plan, None);
    let Some(had) = g.had else { return o };
    let mut r = record(had, g.wave);
    r.verify_runs = u32::from(g.verify_exit.is_some());
    let current: Vec<Task> = o.plan.waves[g.wave - 1].clone();
    for (i, t) in current.iter().enumerate() {
        let Some(state) = g.states[i] else { continue };
        r.tasks.insert(t.canonical.clone(), task_record(state, 1));
        let ot = o.tasks.iter_mut().find(|x| x.task.canonical == t.canonical).expect("its task");
        ot.attempt.taken = Some(Taken::Attempt(1));
        ot.worktree_exists = true;
        match g.seen[i] {
            1 => ot.attempt.set_exit(exit(1, 0)),
            2 => ot.attempt.set_exit(exit(1, 1)),
            3 => ot.attempt.set_died(1),
            4 => ot.worktree_gone = Some("removed".into()),
            5 => ot.attempt.busy = true,
            _ => {}
        }
    }
    if let Some(pass) = g.verify_exit {
        o.verify.taken = Some(Taken::Attempt(1));
        o.verify.set_exit(exit(1, if pass { 0 } else { 1 }));
    }
    o.record = Some(r);
    o
}

fn arb_snapshot() -> impl Strategy<Value = Snapshot> {
    (prop::collection::vec(arb_gen(), 1..5), 0..5usize)
        .prop_map(|(gs, slots)| snap(gs.iter().enumerate().map(|(n, g)| build(g, n)).collect(), slots))
}

/// Running plans whose current wave has tasks queued, at work or not yet started, under
/// few slots: where the caps bind.
fn arb_busy_snapshot() -> impl Strategy<Value = Snapshot> {
    let busy = (arb_gen(), prop::collection::vec(prop::sample::select(vec![None, Some(TaskState::Queued), Some(TaskState::Running)]), 3))
        .prop_map(|(g, states)| Gen {
            asked: Some(PlanStatus::Running),
            had: Some(PlanStatus::Running),
            states: states[..g.tasks].to_vec(),
            seen: vec![0; g.tasks],
            verify_exit: None,
            ..g
        });
    (prop::collection::vec(busy, 1..5), 0..5usize)
        .prop_map(|(gs, slots)| snap(gs.iter().enumerate().map(|(n, g)| build(g, n)).collect(), slots))
}

fn running(r: Option<&PlanRecord>) -> usize {
    r.map(|r| r.tasks.values().filter(|t| t.state == TaskState::Running).count()).unwrap_or(0)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: ProptestConfig::default().cases.min(128), timeout: 5_000, ..ProptestConfig::default() })]

    /// Every status a pass writes to a plan's record moves along the table, one step per
    /// logged move; every task state along the task table.
    #[test]
    fn only_allowed_transitions_ever_happen(s in arb_snapshot()) {
        let actions = decide(&s);
        for o in &s.plans {
            let mine: Vec<&Action> = actions.iter().filter(|a| a.id() == o.plan.id).collect();
            prop_assert!(mine.iter().filter(|a| !matches!(a, Action::KillLeftovers { .. } | Action::Beat { .. })).count() <= 1, "one step per plan: {mine:?}");
            for a in &mine {
                let u = a.update();
                // Where the pass starts: the record, or what the artifact says of a plan that is
                // over (a home that never ran it takes it from there).
                let start = known_record(o);
                let mut at = start.as_ref().map(|r| r.status).unwrap_or(PlanStatus::Draft);
                // A plan first met (no record here; one that is over is taken from its file)
                // opens its log with `created (<status>)`: the chain starts there.
                if let Some(c) = u.events.iter().find(|e| e["kind"] == "created") {
                    prop_assert!(o.record.is_none(), "only a plan first met is created: {:?}", u.events);
                    at = PlanStatus::parse(c["status"].as_str().unwrap_or("")).expect("a status");
                }
                for e in u.events.iter().filter(|e| e["kind"] == "status") {
                    let from = PlanStatus::parse(e["from"].as_str().unwrap_or("")).expect("a status");
                    let to = PlanStatus::parse(e["to"].as_str().unwrap_or("")).expect("a status");
                    prop_assert_eq!(from, at, "moves chain: {:?}", u.events);
                    prop_assert!(step_allowed(from, to), "{} -> {}: {:?}", from, to, a);
                    at = to;
                }
                if let Some(r) = &u.record {
                    prop_assert_eq!(r.status, at, "the record says where the moves ended: {:?}", a);
                    for (t, tr) in &r.tasks {
                        let mut at = start.as_ref().and_then(|r| r.tasks.get(t)).map(|t| t.state).unwrap_or(TaskState::Queued);
                        for to in task_moves(Some(a), t) {
                            prop_assert!(task_allowed(at, to), "{}: {:?} -> {:?}: {:?}", t, at, to, a);
                            at = to;
                        }
                        prop_assert_eq!(tr.state, at, "{}: the record says where the moves ended: {:?}", t, a);
                    }
                } else if u.events.iter().any(|e| e["kind"] == "refused") {
                    let had = start.as_ref().map(|r| r.status).unwrap_or(PlanStatus::Draft);
                    prop_assert_eq!(sets(u, "status").and_then(Value::as_str), Some(had.as_str()), "a refusal puts the status back");
                }
            }
        }
    }

    /// New starts never take a plan's wave past its `parallelism`, nor all plans together
    /// past the slots the caps leave besides commissions.
    #[test]
    fn caps_are_never_exceeded(s in prop_oneof![arb_snapshot(), arb_busy_snapshot()]) {
        let actions = decide(&s);
        let mut started = 0;
        for o in &s.plans {
            let a = actions.iter().find(|a| a.id() == o.plan.id && a.update().record.is_some());
            let before = running(o.record.as_ref());
            let after = running(recorded(o, a));
            prop_assert!(after <= before.max(o.plan.parallelism), "{after} running in {} (parallelism {}, {before} before)", o.plan.id, o.plan.parallelism);
            started += after.saturating_sub(before);
        }
        let before: usize = s.plans.iter().map(|o| running(o.record.as_ref())).sum();
        prop_assert!(started <= s.slots.saturating_sub(before), "{started} started with {} slots and {before} running", s.slots);
    }

    /// Fresh plans in a world where every started worker ends at once (each task as
    /// generated: well, badly, or its supervisor dying once), verify passes or fails, a fix
    /// lands: carrying out what is planned and planning again comes to rest — nothing more
    /// to do — within a bounded number of passes, every plan completed, halted or cancelled.
    #[test]
    fn carrying_out_the_plan_converges(
        shapes in prop::collection::vec((1..4usize, 1..4usize, 1..3usize, any::<bool>(), any::<bool>(), any::<bool>()), 1..3),
        outcomes in prop::collection::vec(0..4u8, 27),
        verify_fails in any::<bool>(),
        slots in 1..4usize,
    ) {
        let plans = shapes.iter().enumerate().map(|(n, (waves, tasks, par, verify, fixer, draft))| {
            let status = if *draft { "status: pending\n" } else { "" };
            let mut plan = parse(&plan_text(*waves, *tasks, *par, *verify, *fixer, status));
            plan.id = format!("{ID}{n}");
            observed(plan, None)
        }).collect();
        let mut world = World { s: snap(plans, slots), outcomes, verify_fails, texts: BTreeMap::new() };
        let mut passes = 0;
        loop {
            let actions = decide(&world.s);
            if actions.is_empty() {
                break;
            }
            passes += 1;
            prop_assert!(passes <= 200, "no fixed point after 200 passes: {actions:?}");
            for a in &actions {
                world.carry_out(a);
            }
        }
        for o in &world.s.plans {
            let st = o.record.as_ref().map(|r| r.status);
            prop_assert!(matches!(st, Some(PlanStatus::Completed | PlanStatus::Halted | PlanStatus::Cancelled)), "{}: at rest in {st:?}", o.plan.id);
            prop_assert_eq!(o.plan.status, st, "the artifact says what the record says");
            if st == Some(PlanStatus::Completed) {
                prop_assert!(o.plan.tasks().all(|t| o.record.as_ref().and_then(|r| r.tasks.get(&t.canonical)).is_some_and(|r| r.state == TaskState::Integrated)));
                prop_assert!(o.tasks.iter().all(|t| !t.worktree_exists), "integrated worktrees are removed");
            }
        }
    }
}

/// The least world the plan's actions act on: artifacts (edited as text), records, and
/// workers that end as soon as they start.
struct World {
    s: Snapshot,
    /// How the n-th start ends: 0 and 1 well, 2 badly, 3 its supervisor dies.
    outcomes: Vec<u8>,
    verify_fails: bool,
    /// The artifacts' text as edited so far, by plan id.
    texts: BTreeMap<String, String>,
}

impl World {
    fn carry_out(&mut self, a: &Action) {
        let Some(i) = self.s.plans.iter().position(|o| o.plan.id == a.id()) else { return };
        let now = self.s.now.clone();
        let mut u = a.update().clone();
        let o = &mut self.s.plans[i];
        let outcome = self
            .outcomes
            .get(
                o.tasks
                    .iter()
                    .map(|t| {
                        t.attempt.taken.map_or(0, |t| match t {
                            Taken::Attempt(a) => a,
                            Taken::Locked => 0,
                        }) as usize
                    })
                    .sum::<usize>()
                    % 27,
            )
            .copied()
            .unwrap_or(0);
        match a {
            Action::StartWave { wave, .. } => {
                if let Some(r) = &mut u.record {
                    r.bases.entry(*wave).or_insert_with(|| "base".into());
                }
            }
            Action::StartTask { starts, .. } => {
                for TaskStart { task, attempt } in starts {
                    let ot = o.tasks.iter_mut().find(|t| &t.task.canonical == task).expect("its task");
                    ot.attempt.taken = Some(Taken::Attempt(*attempt));
                    ot.worktree_exists = true;
                    match outcome {
                        2 => ot.attempt.set_exit(exit(*attempt, 1)),
                        3 if *attempt == 1 => ot.attempt.set_died(*attempt),
                        _ => ot.attempt.set_exit(exit(*attempt, 0)),
                    }
                }
            }
            Action::StopTask { task, attempt, .. } => {
                let ot = o.tasks.iter_mut().find(|t| &t.task.canonical == task).expect("its task");
                ot.attempt.set_exit(ExitInfo {
                    attempt: *attempt,
                    code: None,
                    signal: Some(15),
                    error: None,
                    finished_at: t0(),
                    tail: None,
                    setup: None,
                    checks: Box::default(),
                });
            }
            Action::Integrate { wave, .. } => {
                let record = u.record.clone().or(o.record.clone()).expect("a record");
                let mut ig = Integration::new(&o.plan, *wave, now, u.clone(), record);
                let tasks = o.plan.waves[wave - 1].clone();
                for t in &tasks {
                    if !ig.integrated(t) {
                        ig.landed(t, "c0ffee", Some(1));
                    }
                }
                u = ig.progress();
            }
            Action::StartVerify { run, .. } => {
                o.verify.taken = Some(Taken::Attempt(*run));
                o.verify.set_exit(exit(*run, i32::from(self.verify_fails)));
            }
            Action::FixForward { .. } => {
                // The fix lands, and verify passes from now on.
                self.verify_fails = false;
                o.fix_status = Some(Status::Completed);
            }
            Action::StopVerify { run, .. } => {
                o.verify.set_exit(ExitInfo {
                    attempt: *run,
                    code: None,
                    signal: Some(9),
                    error: None,
                    finished_at: t0(),
                    tail: None,
                    setup: None,
                    checks: Box::default(),
                });
            }
            Action::CleanupTask { tasks, .. } => {
                for ot in o.tasks.iter_mut().filter(|t| tasks.contains(&t.task.canonical)) {
                    ot.worktree_exists = false;
                }
            }
            Action::KillLeftovers { task: Some(task), run, .. } => {
                if let Some(ot) = o.tasks.iter_mut().find(|t| &t.task.canonical == task) {
                    ot.attempt.set_died(run.attempt);
                }
            }
            Action::KillLeftovers { task: None, .. } => o.verify.observed = ObservedAttempt::not_started(),
            Action::Update { .. } | Action::Beat { .. } => {}
            // These plans have no reviewers: no REVIEW stage.
            Action::StartReviewer { .. } | Action::ReviewerCleanup { .. } | Action::DropReviewers { .. } | Action::ReviewFix { .. } => {}
        }
        // The update: the log (its keys), the artifact (as text), the record.
        for e in &u.events {
            if let Some(k) = e["key"].as_str() {
                o.timeline_keys.insert(k.to_string());
            }
        }
        let text = self.texts.entry(o.plan.id.clone()).or_insert_with(|| {
            plan_text(
                o.plan.waves.len(),
                o.plan.waves[0].len(),
                o.plan.parallelism,
                o.plan.verify.is_some(),
                o.plan.fixer.is_some(),
                &o.plan.status.map(|s| format!("status: {s}\n")).unwrap_or_default(),
            )
        });
        *text = crate::artifact::write::apply(text, &u.edits).expect("the edits apply");
        let id = o.plan.id.clone();
        o.plan = parse(text);
        o.plan.id = id;
        if let Some(r) = u.record {
            o.record = Some(r);
        }
    }
}

#[test]
fn what_the_copy_back_finds_decides_the_halt_and_whom_it_blames() {
    let plan = parse(&plan_text(1, 2, 2, false, false, "status: running\n"));
    let (a, b) = (plan.waves[0][0].clone(), plan.waves[0][1].clone());
    let mut r = record(PlanStatus::Running, 1);
    r.tasks.insert(a.canonical.clone(), task_record(TaskState::Succeeded, 1));
    r.tasks.insert(b.canonical.clone(), task_record(TaskState::Succeeded, 1));
    let update = Update { id: ID.into(), expect_hash: plan.hash, edits: vec![], events: vec![], record: None, fold: vec![] };
    let start = || Integration::new(&plan, 1, "now".into(), update.clone(), r.clone());
    // (finding, the reason's start, why the task to blame (the second) failed)
    let table: Vec<(Finding<'_>, &str, Option<&str>)> = vec![
        (Finding::BranchUnreadable("e".into()), "the copy-back of wave 1 failed: e;", None),
        (Finding::NoWorktree(&b), "task p:exec:wave-1:task-2 has no worktree to copy back from", None),
        (
            Finding::Protocol { task: &b, broken: vec![], committed: true },
            "task p:exec:wave-1:task-2 broke the protocol: the worker committed",
            Some("protocol violation: the worker committed"),
        ),
        (
            Finding::Protocol { task: &b, broken: vec!["x".into()], committed: true },
            "task p:exec:wave-1:task-2 broke the protocol: x;",
            Some("protocol violation: x"),
        ),
        (Finding::TooLarge(&b, "big".into()), "task p:exec:wave-1:task-2 is too large to copy back: big;", Some("too large")),
        (
            Finding::ControlPlane(&b, vec![".lore/x".into()]),
            "task p:exec:wave-1:task-2 changed the control plane",
            Some("protocol violation"),
        ),
        (Finding::Collision(vec!["f (a, b)".into()]), "collision in wave 1: f (a, b);", None),
        (
            Finding::LandFailed(&b, "e".into()),
            "task p:exec:wave-1:task-2 failed: its copy-back failed: e; the tasks after it",
            Some("its copy-back failed: e"),
        ),
    ];
    for (finding, reason, blamed) in table {
        let what = format!("{finding:?}");
        let mut ig = start();
        // The task before it landed: that stays.
        ig.landed(&a, "c0ffee", Some(1));
        let u = ig.halt(finding);
        let rec = u.record.clone().expect("recorded");
        assert_eq!(rec.status, PlanStatus::Halted, "{what}");
        assert!(rec.reason.as_deref().is_some_and(|r| r.starts_with(reason)), "{what}: {:?}", rec.reason);
        assert_eq!(sets(&u, "status").and_then(Value::as_str), Some("halted"), "{what}");
        assert_eq!(sets(&u, "reason").and_then(Value::as_str), rec.reason.as_deref(), "{what}");
        assert_eq!(rec.tasks[&a.canonical].state, TaskState::Integrated, "{what}");
        let b_now = &rec.tasks[&b.canonical];
        match blamed {
            Some(why) => {
                assert_eq!(b_now.state, TaskState::Failed, "{what}");
                assert!(b_now.reason.as_deref().is_some_and(|r| r.starts_with(why)), "{what}: {:?}", b_now.reason);
                assert!(u.events.iter().any(|e| e["key"] == format!("task:{}:violation", b.canonical)), "{what}");
            }
            None => assert_eq!(b_now.state, TaskState::Succeeded, "{what}: nobody blamed"),
        }
        let tasks = sets(&u, "tasks").and_then(Value::as_mapping).expect("tasks shown");
        assert_eq!(tasks.get(b.canonical.as_str()).and_then(Value::as_str), Some(b_now.state.as_str()), "{what}");
    }
    // Everything landed: the update shows each task integrated, the plan as the decider left it.
    let mut ig = start();
    ig.landed(&a, "c1", Some(1));
    ig.landed(&b, "c2", None);
    let u = ig.progress();
    assert!(u
        .record
        .as_ref()
        .is_some_and(|r| r.status == PlanStatus::Running && r.tasks.values().all(|t| t.state == TaskState::Integrated)));
    assert_eq!(u.events.iter().filter(|e| e["state"] == "integrated").count(), 2);
    assert_eq!(u.events[0]["changes"], 1);
    assert!(u.events[1].get("changes").is_none(), "found by its trailer: no count");
}

/// Kiln's resume order: tasks ready for integration are integrated before a task that must run
/// again (rerun_required) is requeued; with none to run again, a wave integrates once whole.
#[test]
fn ready_tasks_integrate_before_a_rerun_starts() {
    use TaskState::*;
    let text = plan_text(1, 3, 3, false, false, "status: running\n");
    // (what is recorded of tasks 1, 2, 3: state and reruns) → the action the pass takes.
    type Case = (&'static str, [(TaskState, u32); 3], &'static str);
    let table: [Case; 5] = [
        ("one to run again, one ready: the ready one integrates first", [(Succeeded, 0), (Queued, 1), (Integrated, 0)], "wave-integrate"),
        ("one to run again, one ready, one at work: integrate first", [(Queued, 1), (Succeeded, 0), (Running, 0)], "wave-integrate"),
        ("one to run again, the rest integrated: it starts", [(Integrated, 0), (Queued, 1), (Integrated, 0)], "task-start"),
        ("one never started, one ready: the wave waits to integrate whole", [(Succeeded, 0), (Queued, 0), (Running, 0)], "task-start"),
        ("all ready: the wave integrates", [(Succeeded, 0), (Succeeded, 0), (Succeeded, 0)], "wave-integrate"),
    ];
    for (what, states, want) in table {
        let plan = parse(&text);
        let mut r = record(PlanStatus::Running, 1);
        let mut o = observed(plan, None);
        for (ot, (state, reruns)) in o.tasks.iter_mut().zip(states) {
            let mut tr = task_record(state, if state == Queued && reruns == 0 { 0 } else { 1 });
            tr.reruns = reruns;
            ot.attempt.taken = Some(Taken::Attempt(tr.attempt));
            r.tasks.insert(ot.task.canonical.clone(), tr);
        }
        o.record = Some(r);
        let a = decide(&snap(vec![o], 4));
        assert_eq!(a.first().map(|a| a.verb()), Some(want), "{what}: {a:?}");
    }
}
