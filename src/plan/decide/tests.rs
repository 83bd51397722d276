//! Unit tests of the plan decider as a whole: requests, resume classes, reruns, leftovers,
//! liveness, mail folding and how updates are said.

use super::machine_tests::{self, snap, t0};
use super::resume::ResumeClass;
use super::*;
use crate::worker::attempt::Taken;
use crate::worker::liveness;
use crate::worker::toolbox::mailbox::MailBody;
use crate::worker::toolbox::mailbox::{ChangeKind, ChangedOp, Mail, TaskUpdate, TaskUpdateStatus};
use serde_json::{json, Value as Json};
use serde_yaml_ng::Value;

fn plan_text(status: &str) -> String {
    format!("---\nstatus: {status}\nparallelism: 1\nwaves:\n  - - {{id: a, worker: w, prompt: x}}\n    - {{id: b, worker: w, prompt: y}}\n---\n")
}

fn observed(status: &str, record: Option<PlanRecord>) -> Observed {
    machine_tests::observed(Plan::parse(std::path::Path::new(".lore/plans/p.md"), &plan_text(status)).expect("valid"), record)
}

fn running(states: &[(&str, TaskState)]) -> PlanRecord {
    let mut r = machine_tests::record(PlanStatus::Running, 1);
    for (t, s) in states {
        r.tasks.insert(format!("p:exec:wave-1:{t}"), machine_tests::task_record(*s, 1));
    }
    r
}

fn update(seq: u64, key: &str, status: TaskUpdateStatus) -> Mail {
    let u = TaskUpdate {
        task_id: None,
        phase: None,
        stage: None,
        status,
        worktree_path: None,
        changed_ops: vec![
            ChangedOp { op: ChangeKind::Add, path: "src/a.rs".into(), from_path: None },
            ChangedOp { op: ChangeKind::Modify, path: ".lore/plans/p.md".into(), from_path: None },
        ],
        verify_summary: None,
        evidence_paths: vec![],
        error: None,
        timestamps: None,
        emitted_at: None,
        sequence: seq,
        idempotency_key: key.into(),
    };
    Mail { seq, id: format!("m{seq}"), ts: "t".into(), attempt: 1, body: MailBody::TaskUpdate(Box::new(u)) }
}

/// Review git #1, plans: a plan the checkout says is pending (or has no status) that ended on
/// the integration branch, which this home never ran, starts nothing and writes nothing.
#[test]
fn a_plan_that_ended_on_the_integration_branch_is_not_run_again() {
    for (here, there) in [("pending", "completed"), ("pending", "halted"), ("pending", "cancelled")] {
        let mut o = observed(here, None);
        assert!(!decide(&snap(vec![o.clone()], 3)).is_empty(), "{here}: started without it");
        o.integrated = Some(crate::activity::integrated::Integrated {
            kind: crate::activity::kind::Name::Plan,
            id: "p".into(),
            here: "pending",
            status: there,
            attempt: None,
            integration: "claude/main".into(),
        });
        assert_eq!(decide(&snap(vec![o], 3)), vec![], "{here} here, {there} there: left alone");
    }
}

/// A home with no record of a plan its artifact says is over takes the record
/// from the artifact and writes nothing else; a plan at work with no record here is
/// another home's and is left alone.
#[test]
fn a_home_without_a_record_takes_a_finished_plan_from_its_artifact() {
    let text = "---\nstatus: completed\nparallelism: 1\nwave: 1\ntasks:\n  p:exec:wave-1:task-1: integrated\n  p:exec:wave-1:task-2: integrated\nwaves:\n  - - {id: a, worker: w, prompt: x}\n    - {id: b, worker: w, prompt: y}\n---\n";
    let plan = Plan::parse(std::path::Path::new(".lore/plans/p.md"), text).expect("valid");
    let mut o = machine_tests::observed(plan, None);
    o.timeline_keys.insert("task:p:exec:wave-1:task-1:2:running".into());
    let a = decide(&snap(vec![o], 3));
    let [Action::Update { update }] = a.as_slice() else { panic!("{a:?}") };
    assert!(update.edits.is_empty() && update.events.is_empty(), "the artifact and the timeline stay as they are: {update:?}");
    let r = update.record.as_ref().expect("the home's record written");
    assert_eq!((r.status, r.wave), (PlanStatus::Completed, 1));
    assert_eq!(r.tasks["p:exec:wave-1:task-1"].state, TaskState::Integrated);
    assert_eq!(r.tasks["p:exec:wave-1:task-1"].attempt, 2, "the latest attempt its timeline names");
    assert_eq!(r.tasks["p:exec:wave-1:task-2"].attempt, 1);
    for status in ["running", "verifying"] {
        let o = observed(status, None);
        assert!(elsewhere(&o.plan, None).is_some());
        assert_eq!(decide(&snap(vec![o], 3)), vec![], "{status}: at work in another home, left alone");
    }
}

/// New updates of attempt 1, read this pass (the reader moved on).
fn new_mail(updates: Vec<Mail>) -> TaskMail {
    let folded = TaskFolded { attempt: 1, ..TaskFolded::default() };
    TaskMail { folded: Some(folded), fold_changed: true, updates, ..TaskMail::default() }
}

#[test]
fn each_attempt_counts_its_own_sequence_and_keys_and_the_read_position_is_kept() {
    // Attempt 1 applied up to sequence 7 with key "done"; attempt 2 starts again from 1,
    // with the same key: both are new.
    let mut r = running(&[("task-1", TaskState::Running)]);
    r.tasks.values_mut().for_each(|t| {
        t.attempt = 2;
        t.sequence = 0;
    });
    let mut o = observed("running", Some(r));
    o.timeline_keys.insert("update:p:exec:wave-1:task-1:1:done".into());
    let mut mail = new_mail(vec![update(1, "done", TaskUpdateStatus::Done)]);
    mail.updates[0].attempt = 2;
    mail.folded = Some(TaskFolded { attempt: 2, ..TaskFolded::default() });
    o.tasks[0].mail = mail;
    let a = decide(&snap(vec![o], 3));
    let u = a[0].update();
    let applied: Vec<&Json> = u.events.iter().filter(|e| e["kind"] == "task_update").collect();
    assert_eq!(applied.len(), 1, "{u:?}");
    assert_eq!((applied[0]["attempt"].as_u64(), applied[0]["key"].as_str()), (Some(2), Some("update:p:exec:wave-1:task-1:2:done")));
    assert_eq!(u.record.as_ref().and_then(|r| r.tasks.get("p:exec:wave-1:task-1")).map(|t| t.sequence), Some(1));
    assert_eq!(u.fold.iter().map(|f| (f.slug.as_str(), f.folded.attempt)).collect::<Vec<_>>(), [("p-exec-wave-1-task-1", 2)]);
}

#[test]
fn task_updates_are_idempotent_ordered_and_filtered() {
    let mut o = observed("running", Some(running(&[("task-1", TaskState::Running)])));
    o.tasks[0].mail = new_mail(vec![
        update(2, "k2", TaskUpdateStatus::InProgress),
        update(2, "k2", TaskUpdateStatus::InProgress),
        update(1, "k1", TaskUpdateStatus::Queued),
    ]);
    let a = decide(&snap(vec![o], 3));
    let events = &a[0].update().events;
    let applied: Vec<&Json> = events.iter().filter(|e| e["kind"] == "task_update").collect();
    assert_eq!(applied.len(), 1, "the duplicate key is a no-op: {events:?}");
    assert_eq!(applied[0]["changed_ops"].as_array().map(|a| a.len()), Some(1), "the control plane is filtered out");
    assert!(events.iter().any(|e| e["kind"] == "task_update_ignored" && e["sequence"] == 1), "a lower sequence is ignored");
    assert_eq!(a[0].update().record.as_ref().and_then(|r| r.tasks.get("p:exec:wave-1:task-1")).map(|t| t.sequence), Some(2));
}

#[test]
fn every_free_slot_starts_in_one_action_in_plan_order() {
    let wide = |p: usize| {
        let tasks: String = (0..5).map(|i| format!("    - {{id: t{i}, worker: w, prompt: x}}\n")).collect();
        let text = format!("---\nstatus: running\nparallelism: {p}\nwaves:\n  -\n{tasks}---\n");
        machine_tests::observed(Plan::parse(std::path::Path::new(".lore/plans/p.md"), &text).expect("valid"), Some(running(&[])))
    };
    let started = |a: &[Action]| -> Vec<(String, u32)> {
        a.iter()
            .filter_map(|x| match x {
                Action::StartTask { starts, .. } => Some(starts.iter().map(|s| (s.task.clone(), s.attempt)).collect::<Vec<_>>()),
                _ => None,
            })
            .flatten()
            .collect()
    };
    let first = |n: usize| (1..=n).map(|i| (format!("p:exec:wave-1:task-{i}"), 1)).collect::<Vec<_>>();
    // Parallelism 3, slots to spare: the first three, in one action, their record written
    // as running in its one update.
    let a = decide(&snap(vec![wide(3)], 10));
    assert_eq!(a.iter().filter(|x| matches!(x, Action::StartTask { .. })).count(), 1, "{a:?}");
    assert_eq!(started(&a), first(3));
    let record = a[0].update().record.as_ref().expect("the record");
    assert_eq!(record.tasks.values().filter(|t| t.state == TaskState::Running).count(), 3);
    // The project's slots are fewer: as many as they allow.
    assert_eq!(started(&decide(&snap(vec![wide(4)], 2))), first(2));
    // A task whose worker cannot start stops the batch there: those before it start now, it
    // fails in the next round.
    let mut o = wide(4);
    o.tasks[2].worker_problem = Some("not installed".into());
    let a = decide(&snap(vec![o.clone()], 10));
    assert_eq!(started(&a), first(2));
    o.tasks[0].worker_problem = Some("not installed".into());
    let a = decide(&snap(vec![o], 10));
    assert!(started(&a).is_empty(), "the first cannot start: it fails, alone: {a:?}");
}

/// `max_concurrent:`: tasks of a capped package start only as far as its live attempts and
/// this round's own starts (across plans) leave room; the rest stay queued, others go on.
#[test]
fn a_package_at_its_max_concurrent_holds_its_tasks_queued() {
    let plan = |id: &str, workers: &[&str]| {
        let tasks: String = workers.iter().enumerate().map(|(i, w)| format!("    - {{id: t{i}, worker: {w}, prompt: x}}\n")).collect();
        let text = format!("---\nstatus: running\nparallelism: 5\nwaves:\n  -\n{tasks}---\n");
        let mut o = machine_tests::observed(
            Plan::parse(std::path::Path::new(&format!(".lore/plans/{id}.md")), &text).expect("valid"),
            Some(running(&[])),
        );
        for (t, w) in o.tasks.iter_mut().zip(workers) {
            t.package_cap = (*w == "solo").then(|| ("solo".to_string(), 1));
        }
        o
    };
    let started = |a: &[Action]| -> Vec<String> {
        a.iter()
            .filter_map(|x| match x {
                Action::StartTask { starts, .. } => Some(starts.iter().map(|s| s.task.clone()).collect::<Vec<_>>()),
                _ => None,
            })
            .flatten()
            .collect()
    };
    // Two of the package in one wave: the first starts, the free one beside it too.
    let a = decide(&snap(vec![plan("p", &["solo", "solo", "free"])], 10));
    assert_eq!(started(&a), ["p:exec:wave-1:task-1", "p:exec:wave-1:task-3"]);
    // One already live in the home: none of the package starts.
    let mut s = snap(vec![plan("p", &["solo", "solo", "free"])], 10);
    s.running_by_package.insert("solo".into(), 1);
    assert_eq!(started(&decide(&s)), ["p:exec:wave-1:task-3"]);
    // Two plans in one round: the second plan's task of the package waits for the first's.
    let a = decide(&snap(vec![plan("p", &["solo"]), plan("q", &["solo", "free"])], 10));
    assert_eq!(started(&a), ["p:exec:wave-1:task-1", "q:exec:wave-1:task-2"]);
}

#[test]
fn parallelism_and_fifo_in_plan_order() {
    let o = observed("running", Some(running(&[])));
    let a = decide(&snap(vec![o], 3));
    assert!(matches!(&a[0], Action::StartTask { starts, .. } if starts[0].task == "p:exec:wave-1:task-1"), "{a:?}");
    let mut o = observed("running", Some(running(&[("task-1", TaskState::Running)])));
    o.tasks[0].attempt.taken = Some(Taken::Attempt(1));
    let a = decide(&snap(vec![o.clone()], 3));
    assert!(!a.iter().any(|x| matches!(x, Action::StartTask { .. })), "parallelism 1: the second waits: {a:?}");
    // Recorded as running but never taken by a shim (a pass died in between): started again.
    o.tasks[0].attempt.taken = None;
    let a = decide(&snap(vec![o], 3));
    assert!(
        matches!(&a[0], Action::StartTask { starts, .. } if starts == &[TaskStart { task: "p:exec:wave-1:task-1".into(), attempt: 1 }]),
        "{a:?}"
    );
    // The project's cap holds too: no slot left, nothing starts.
    let o = observed("running", Some(running(&[])));
    let a = decide(&snap(vec![o], 0));
    assert!(!a.iter().any(|x| matches!(x, Action::StartTask { .. })), "{a:?}");
}

#[test]
fn refused_status_edits_are_put_back_with_why() {
    for (had, asked, allowed) in [
        (PlanStatus::Running, "completed", false),
        (PlanStatus::Completed, "pending", false),
        (PlanStatus::Halted, "pending", true),
        (PlanStatus::Running, "cancelled", true),
        (PlanStatus::Verifying, "running", false),
    ] {
        let mut r = running(&[]);
        r.status = had;
        // An earlier edit's refusal is in the file.
        let text = plan_text(asked).replacen("---\n", "---\nrefused: 'refused: an earlier edit'\n", 1);
        let o = machine_tests::observed(Plan::parse(std::path::Path::new(".lore/plans/p.md"), &text).expect("valid"), Some(r));
        let a = decide(&snap(vec![o], 3));
        let u = a.first().map(|a| a.update()).expect("planned");
        let put_back = u.edits.iter().any(|e| matches!(e, Edit::Set(k, v) if k == "status" && v.as_str() == Some(had.as_str())));
        assert_eq!(!allowed, put_back, "{had} -> {asked}: {u:?}");
        let refusal_goes = u.edits.iter().any(|e| matches!(e, Edit::Remove(k) if k == "refused"));
        assert_eq!(allowed, refusal_goes, "a refusal of the status it was goes once it moves: {had} -> {asked}: {u:?}");
        if !allowed {
            assert!(u
                .edits
                .iter()
                .any(|e| matches!(e, Edit::Set(k, v) if k == "refused" && v.as_str().is_some_and(|r| r.starts_with("refused")))));
            assert!(!u.edits.iter().any(|e| matches!(e, Edit::Set(k, _) if k == "reason")), "the reason it stands is kept: {u:?}");
            assert!(u.events.iter().any(|e| e["kind"] == "refused"));
        }
    }
}

const T1: &str = "p:exec:wave-1:task-1";

fn live(started_secs_ago: i64, quiet_secs: i64) -> Live {
    let sample = crate::activity::state::Sample { log_len: 10, cpu_ticks: 5, mailbox_len: 100 };
    Live {
        started_at: t0() - chrono::Duration::seconds(started_secs_ago),
        heartbeat: Some(Heartbeat { last_activity: t0() - chrono::Duration::seconds(quiet_secs), sample }),
        sample,
    }
}

fn task_record(a: &Action) -> Option<TaskRecord> {
    a.update().record.as_ref().and_then(|r| r.tasks.get(T1)).cloned()
}

fn kinds(a: &Action) -> Vec<String> {
    a.update().events.iter().map(|e| e["kind"].as_str().unwrap_or("").to_string()).collect()
}

#[test]
fn resume_classes_from_what_is_there() {
    let o = observed("running", None);
    let ot = o.tasks[0].clone();
    let rec = |state| TaskRecord { state, attempt: 1, reason: None, sequence: 0, stop_sent: false, reruns: 0, not_before: None };
    let gone = ObservedTask { worktree_gone: Some("its worktree /w was removed".into()), ..ot.clone() };
    let dead = |mut t: ObservedTask| {
        t.attempt.set_died(1);
        t
    };
    let died = dead(ot.clone());
    use ResumeClass::*;
    for (task, state, want) in [
        (&ot, None, Queued),
        (&ot, Some(TaskState::Queued), Queued),
        (&ot, Some(TaskState::Integrated), Done),
        (&ot, Some(TaskState::Succeeded), ReadyForIntegration),
        (&gone, Some(TaskState::Succeeded), Orphaned),
        (&ObservedTask { landed: true, ..gone.clone() }, Some(TaskState::Succeeded), Done),
        (&ot, Some(TaskState::Running), InProgress),
        (&died, Some(TaskState::Running), RerunRequired),
        (&dead(gone.clone()), Some(TaskState::Running), Orphaned),
        (&ot, Some(TaskState::Failed), RerunRequired),
        (&ot, Some(TaskState::Stopped), RerunRequired),
        (&gone, Some(TaskState::Failed), Orphaned),
    ] {
        let r = state.map(rec);
        assert_eq!(resume_class(task, r.as_ref()), want, "{state:?} gone={:?} died={}", task.worktree_gone, task.attempt.died());
    }
}

#[test]
fn a_dead_task_runs_again_a_bounded_number_of_times() {
    let mut o = observed("running", Some(running(&[("task-1", TaskState::Running)])));
    o.tasks[0].attempt.taken = Some(Taken::Attempt(1));
    o.tasks[0].attempt.set_died(1);
    // Queued again and started at once: its next attempt, the same id.
    let a = decide(&snap(vec![o.clone()], 3));
    assert!(matches!(&a[0], Action::StartTask { starts, .. } if starts.iter().all(|s| s.attempt == 2)), "{a:?}");
    let r = task_record(&a[0]).expect("recorded");
    assert_eq!((r.state, r.reruns, r.attempt), (TaskState::Running, 1, 2), "{a:?}");
    assert!(kinds(&a[0]).contains(&"rerun_required".to_string()), "{a:?}");
    // After MAX_RERUNS, failed: a task that dies at every try is not run for ever.
    if let Some(r) = o.record.as_mut().and_then(|r| r.tasks.get_mut(T1)) {
        r.reruns = MAX_RERUNS;
    }
    let a = decide(&snap(vec![o], 3));
    let r = task_record(&a[0]).expect("recorded");
    assert_eq!(r.state, TaskState::Failed);
    assert!(r.reason.as_deref().is_some_and(|w| w.contains("supervisor died") && w.contains("not run again")), "{r:?}");
}

fn lingering(attempt: u32) -> Lingering {
    Lingering { attempt, run: machine_tests::run_info(attempt, t0()), pids: vec![4244] }
}

#[test]
fn what_a_killed_shim_left_running_is_killed_before_the_task_is_judged_or_run_again() {
    let mut o = observed("running", Some(running(&[("task-1", TaskState::Running)])));
    o.tasks[0].attempt.taken = Some(Taken::Attempt(1));
    o.tasks[0].attempt.set_lingering(&lingering(1));
    // Its supervisor died, processes of it still run: classified rerun_required, but only
    // killed for now, with a log event; the task stays as it is, nothing starts.
    assert_eq!(resume_class(&o.tasks[0], o.record.as_ref().and_then(|r| r.tasks.get(T1))), ResumeClass::RerunRequired);
    let a = decide(&snap(vec![o.clone()], 3));
    assert!(matches!(&a[0], Action::KillLeftovers { task: Some(t), pids, .. } if t == T1 && pids == &[4244]), "{a:?}");
    assert_eq!(kinds(&a[0]), ["leftovers"], "{a:?}");
    assert!(!a.iter().any(|a| matches!(a, Action::StartTask { .. })), "nothing starts while they run: {a:?}");
    assert!(a.iter().all(|a| task_record(a).is_none_or(|r| r.state == TaskState::Running && r.attempt == 1)), "{a:?}");
    assert_eq!(next_check(&snap(vec![o.clone()], 3)), Some(std::time::Duration::from_millis(200)));
    // Said once.
    o.timeline_keys.insert(format!("leftovers:{T1}:1"));
    assert!(decide(&snap(vec![o.clone()], 3))[0].update().events.is_empty());
    // A cancel waits for them too, asking nothing of the dead shim.
    let mut c = o.clone();
    c.plan = Plan::parse(std::path::Path::new(".lore/plans/p.md"), &plan_text("cancelled")).expect("valid");
    let a = decide(&snap(vec![c], 3));
    assert!(!a.iter().any(|a| matches!(a, Action::StopTask { .. })), "{a:?}");
    assert!(a.iter().all(|a| task_record(a).is_none_or(|r| r.state == TaskState::Running)), "{a:?}");
    // Gone: the attempt is over, and it runs again.
    o.tasks[0].attempt.set_died(1);
    let a = decide(&snap(vec![o], 3));
    assert!(matches!(&a[0], Action::StartTask { starts, .. } if starts.iter().all(|s| s.attempt == 2)), "{a:?}");
    // A verify's: killed before the gate's verdict.
    let mut r = running(&[("task-1", TaskState::Integrated), ("task-2", TaskState::Integrated)]);
    r.status = PlanStatus::Verifying;
    r.verify_runs = 1;
    let mut o = observed("verifying", Some(r));
    o.plan.verify = Some(vec!["sleep".into(), "1000".into()]);
    o.verify.taken = Some(Taken::Attempt(1));
    o.verify.set_lingering(&lingering(1));
    let a = decide(&snap(vec![o], 3));
    assert!(matches!(&a[0], Action::KillLeftovers { task: None, .. }), "{a:?}");
    assert!(a.iter().all(|a| a.update().record.as_ref().is_none_or(|r| r.status == PlanStatus::Verifying)), "no verdict yet: {a:?}");
}

#[test]
fn a_task_whose_worktree_went_is_orphaned_and_runs_again() {
    let gone = Some("its worktree /w/task-p was removed".to_string());
    // Ready for integration, but its work is gone: reported, queued again.
    let mut o = observed("running", Some(running(&[("task-1", TaskState::Succeeded), ("task-2", TaskState::Integrated)])));
    o.tasks[0].worktree_gone = gone.clone();
    let a = decide(&snap(vec![o.clone()], 3));
    assert!(matches!(&a[0], Action::StartTask { starts, .. } if starts.iter().all(|s| s.attempt == 2)), "{a:?}");
    assert!(kinds(&a[0]).contains(&"orphaned".to_string()) && kinds(&a[0]).contains(&"rerun_required".to_string()));
    // Its commit landed already: nothing runs again (the copy-back finds the commit).
    o.tasks[0].landed = true;
    let a = decide(&snap(vec![o], 3));
    assert!(matches!(&a[0], Action::Integrate { .. }), "{a:?}");
    // Still at work: shut down first (SIGTERM), then queued again once it is over.
    let mut o = observed("running", Some(running(&[("task-1", TaskState::Running)])));
    o.tasks[0].attempt.taken = Some(Taken::Attempt(1));
    o.tasks[0].worktree_gone = gone;
    o.tasks[0].attempt.set_live(1, live(1, 0));
    o.tasks[0].attempt.busy = true;
    let a = decide(&snap(vec![o.clone()], 3));
    assert!(matches!(&a[0], Action::StopTask { kill: false, .. }), "{a:?}");
    assert!(kinds(&a[0]).contains(&"orphaned".to_string()));
    o.record = a[0].update().record.clone();
    o.tasks[0].attempt.busy = false;
    o.tasks[0].attempt.set_exit(ExitInfo {
        attempt: 1,
        code: None,
        signal: Some(15),
        error: None,
        finished_at: t0(),
        tail: None,
        setup: None,
        checks: Box::default(),
    });
    let a = decide(&snap(vec![o], 3));
    assert!(matches!(&a[0], Action::StartTask { starts, .. } if starts.iter().all(|s| s.attempt == 2)), "{a:?}");
    assert_eq!(task_record(&a[0]).map(|r| (r.state, r.reruns, r.stop_sent)), Some((TaskState::Running, 1, false)), "{a:?}");
}

#[test]
fn a_stale_task_reruns_within_its_budget_an_overlong_one_fails_and_the_plan_halts_once_it_is_gone() {
    let at_work = |l: Live| {
        let mut o = observed("running", Some(running(&[("task-1", TaskState::Running)])));
        o.tasks[0].attempt.taken = Some(Taken::Attempt(1));
        o.tasks[0].attempt.set_live(1, l);
        o.tasks[0].attempt.busy = true;
        o
    };
    // Quiet for less than stale_after (3s): nothing; its signs changed: a heartbeat.
    let still = |a: &[Action]| a.iter().all(|a| task_record(a).is_none_or(|r| r.state == TaskState::Running && !r.stop_sent));
    let a = decide(&snap(vec![at_work(live(10, 2))], 3));
    assert!(still(&a) && !a.iter().any(|a| matches!(a, Action::Beat { .. } | Action::StopTask { .. })), "{a:?}");
    let mut moved = live(10, 2);
    moved.sample.log_len += 1;
    let a = decide(&snap(vec![at_work(moved)], 3));
    assert!(still(&a) && a.iter().any(|a| matches!(a, Action::Beat { task: Some(t), .. } if t == T1)), "{a:?}");
    // Quiet past stale_after (Kiln: no heartbeat beyond the timeout): rerun_required within
    // the budget, its attempt killed (SIGKILL) first; the plan goes on.
    let a = decide(&snap(vec![at_work(live(10, 4))], 3));
    assert!(matches!(&a[0], Action::StopTask { kill: true, attempt: 1, .. }), "{a:?}");
    let r = task_record(&a[0]).expect("recorded");
    assert_eq!((r.state, r.reason.as_deref(), r.stop_sent, r.reruns), (TaskState::Queued, Some(liveness::UNRESPONSIVE), true, 1));
    assert!(a[0].update().events.iter().any(|e| e["kind"] == "heartbeat" && e["state"] == "stale"), "{a:?}");
    assert!(kinds(&a[0]).contains(&"rerun_required".to_string()), "{a:?}");
    assert_eq!(a[0].update().record.as_ref().map(|r| r.status), Some(PlanStatus::Running), "{a:?}");
    // Nothing starts while its killed attempt is still going; once it is gone, attempt 2.
    let mut o = at_work(live(10, 4));
    o.record = a[0].update().record.clone();
    let a = decide(&snap(vec![o.clone()], 3));
    let of_t1 = |a: &Action| match a {
        Action::StartTask { starts, .. } => starts.iter().any(|s| s.task == T1),
        Action::StopTask { task, .. } => task == T1,
        _ => false,
    };
    assert!(!a.iter().any(of_t1), "{a:?}");
    o.tasks[0].attempt.busy = false;
    o.tasks[0].attempt.set_exit(ExitInfo {
        attempt: 1,
        code: None,
        signal: Some(9),
        error: None,
        finished_at: t0(),
        tail: None,
        setup: None,
        checks: Box::default(),
    });
    let a = decide(&snap(vec![o], 3));
    assert!(matches!(&a[0], Action::StartTask { starts, .. } if starts.iter().any(|s| s.task == T1 && s.attempt == 2)), "{a:?}");
    // Past the budget: failed, unresponsive, killed (SIGKILL).
    let mut o = at_work(live(10, 4));
    if let Some(r) = o.record.as_mut().and_then(|r| r.tasks.get_mut(T1)) {
        r.reruns = MAX_RERUNS;
    }
    let a = decide(&snap(vec![o], 3));
    assert!(matches!(&a[0], Action::StopTask { kill: true, .. }), "{a:?}");
    let r = task_record(&a[0]).expect("recorded");
    assert_eq!(r.state, TaskState::Failed);
    assert_eq!(r.reason.as_deref(), Some("process unresponsive; not run again after 2 reruns"));
    assert!(r.stop_sent);
    // Busy past its limit (the task's own, over the plan's): failed naming it.
    let text =
        plan_text("running").replace("prompt: x}", "prompt: x, timeout: 4s}").replace("parallelism: 1", "timeout: 1h\nparallelism: 1");
    let mut o = at_work(live(5, 0));
    o.plan = Plan::parse(std::path::Path::new(".lore/plans/p.md"), &text).expect("valid");
    for (ot, t) in o.tasks.iter_mut().zip(o.plan.tasks()) {
        ot.task = t.clone();
    }
    let a = decide(&snap(vec![o.clone()], 3));
    assert_eq!(task_record(&a[0]).and_then(|r| r.reason), Some("timed out: ran longer than 4s (the task's timeout)".into()), "{a:?}");
    // The plan halts only once the killed one is gone.
    o.record = a[0].update().record.clone();
    let a = decide(&snap(vec![o.clone()], 3));
    assert!(a.iter().all(|a| a.update().record.as_ref().is_none_or(|r| r.status == PlanStatus::Running)), "{a:?}");
    o.tasks[0].attempt.busy = false;
    o.tasks[0].attempt.set_exit(ExitInfo {
        attempt: 1,
        code: None,
        signal: Some(9),
        error: None,
        finished_at: t0(),
        tail: None,
        setup: None,
        checks: Box::default(),
    });
    let a = decide(&snap(vec![o], 3));
    let rec = a[0].update().record.clone().expect("recorded");
    assert_eq!(rec.status, PlanStatus::Halted);
    assert!(rec.reason.as_deref().is_some_and(|r| r.contains("timed out: ran longer than 4s")), "{rec:?}");
}

#[test]
fn a_stale_verify_is_killed_and_fails_the_gate_saying_why() {
    let mut r = running(&[("task-1", TaskState::Integrated), ("task-2", TaskState::Integrated)]);
    r.status = PlanStatus::Verifying;
    r.verify_runs = 1;
    let mut o = observed("verifying", Some(r));
    o.plan.verify = Some(vec!["sleep".into(), "1000".into()]);
    o.verify.taken = Some(Taken::Attempt(1));
    o.verify.set_live(1, live(10, 4));
    let a = decide(&snap(vec![o.clone()], 3));
    assert!(matches!(&a[0], Action::StopVerify { kill: true, run: 1, .. }), "{a:?}");
    let rec = a[0].update().record.clone().expect("recorded");
    assert_eq!(rec.verify_verdict.as_deref(), Some(liveness::UNRESPONSIVE));
    o.record = Some(rec);
    o.verify.set_exit(ExitInfo {
        attempt: 1,
        code: None,
        signal: Some(9),
        error: None,
        finished_at: t0(),
        tail: None,
        setup: None,
        checks: Box::default(),
    });
    let a = decide(&snap(vec![o], 3));
    let rec = a[0].update().record.clone().expect("recorded");
    assert_eq!(rec.status, PlanStatus::Halted);
    assert!(rec.reason.as_deref().is_some_and(|r| r.starts_with("verify failed after wave 1 (process unresponsive)")), "{rec:?}");
}

#[test]
fn the_next_look_is_at_the_earliest_deadline() {
    let mut o = observed("running", Some(running(&[("task-1", TaskState::Running)])));
    o.tasks[0].attempt.set_live(1, live(1, 0));
    // stale_after 3s (+100ms) after the last change.
    assert_eq!(next_check(&snap(vec![o.clone()], 3)), Some(std::time::Duration::from_millis(3100)));
    o.plan.timeout = Some(std::time::Duration::from_secs(2));
    assert_eq!(next_check(&snap(vec![o.clone()], 3)), Some(std::time::Duration::from_secs(1)));
    // A stopped one still going away: soon.
    o.tasks[0].attempt.observed = crate::worker::observed_attempt::ObservedAttempt::not_started();
    o.tasks[0].attempt.busy = true;
    assert_eq!(next_check(&snap(vec![o], 3)), Some(std::time::Duration::from_millis(200)));
}

/// A pass's line for a plan's update says what changed, in words: the mailboxes
/// read, the mirrored `tasks:`, the `created` event are bookkeeping, not reported when it
/// succeeded.
#[test]
fn a_plan_update_is_said_in_words_and_bookkeeping_is_not_reported() {
    use crate::activity::kind::Action as _;
    let update = |edits: Vec<Edit>, events: Vec<Json>| Action::Update {
        update: Update { id: "p".into(), expect_hash: 0, edits, events, record: Some(running(&[])), fold: vec![] },
    };
    let ev = |kind: &str, fields: Json| timeline::event("2026-11-25T00:00:00.000Z", kind, kind.into(), fields);
    let quiet = update(vec![Edit::Set("tasks".into(), Value::Null)], vec![ev("created", json!({"status": "pending"}))]);
    assert_eq!(quiet.describe(), "runtime record updated");
    assert!(!quiet.reported(true) && quiet.reported(false));
    let news = update(
        vec![Edit::Set("status".into(), Value::String("completed".into())), Edit::Set("tasks".into(), Value::Null)],
        vec![
            ev("task", json!({"task": "p:exec:wave-1:task-1", "state": "succeeded"})),
            ev("progress", json!({"task": "p:exec:wave-1:task-1", "text": "Reading"})),
            ev("progress", json!({"task": "p:exec:wave-1:task-1", "text": "Wrote it\nand more"})),
            ev("result", json!({"task": "p:exec:wave-1:task-1", "summary": "Wrote it"})),
        ],
    );
    assert_eq!(
        news.describe(),
        "status -> completed; p:exec:wave-1:task-1 succeeded; p:exec:wave-1:task-1: result submitted; p:exec:wave-1:task-1 progress: Wrote it"
    );
    assert!(news.reported(true));
}

/// A plan is at rest for a watch's store (`observe::at_rest`) only ended as the file and the
/// record both say, with nothing of it running and nothing for the decider to do.
#[test]
fn a_plan_is_at_rest_only_ended_idle_and_with_nothing_to_do() {
    let text = "---\nstatus: completed\nparallelism: 1\nwave: 1\ntasks:\n  p:exec:wave-1:task-1: integrated\n  p:exec:wave-1:task-2: integrated\nwaves:\n  - - {id: a, worker: w, prompt: x}\n    - {id: b, worker: w, prompt: y}\n---\n";
    let plan = Plan::parse(std::path::Path::new(".lore/plans/p.md"), text).expect("valid");
    let mut record = machine_tests::record(PlanStatus::Completed, 1);
    for t in ["task-1", "task-2"] {
        record.tasks.insert(format!("p:exec:wave-1:{t}"), machine_tests::task_record(TaskState::Integrated, 1));
    }
    let resting = machine_tests::observed(plan.clone(), Some(record.clone()));
    let at_rest = |o: Observed| !crate::plan::observe::at_rest(&snap(vec![o], 3)).is_empty();
    assert_eq!(decide(&snap(vec![resting.clone()], 3)), vec![], "nothing to do for it");
    assert!(at_rest(resting.clone()));
    let mut busy = resting.clone();
    busy.tasks[0].attempt.busy = true;
    assert!(!at_rest(busy), "a shim of a task at work");
    let mut verifying = resting.clone();
    verifying.verify.busy = true;
    assert!(!at_rest(verifying), "a verify's shim at work");
    let mut checked_out = resting.clone();
    checked_out.tasks[0].worktree_exists = true;
    assert!(!decide(&snap(vec![checked_out.clone()], 3)).is_empty() && !at_rest(checked_out), "a landed task's worktree to remove");
    assert!(!at_rest(machine_tests::observed(plan.clone(), None)), "no record of its own");
    let mut asked = resting.clone();
    asked.plan.desired = Some("dispatched".into());
    assert!(!at_rest(asked), "a request pending");
    let mut running = record.clone();
    running.status = PlanStatus::Running;
    assert!(!at_rest(machine_tests::observed(plan, Some(running))), "the record says it runs");
}

/// The REVIEW stage waits while its reviewer's package runs as many attempts as its
/// `max_concurrent:` allows: the plan's `reason:` says so (kept in its record, written once),
/// and goes once the reviewer starts.
#[test]
fn a_reviewer_at_its_package_cap_waits_saying_so_until_it_starts() {
    let text = |reason: &str| {
        format!("---\nstatus: verifying\nwave: 1\n{reason}parallelism: 1\nverify: [make]\nreviewers: [critic]\nwaves:\n  - - {{id: a, worker: w, prompt: x}}\n---\n")
    };
    let parse = |t: &str| Plan::parse(std::path::Path::new(".lore/plans/p.md"), t).expect("valid");
    let mut r = machine_tests::record(PlanStatus::Verifying, 1);
    r.tasks.insert("p:exec:wave-1:task-1".into(), machine_tests::task_record(TaskState::Integrated, 1));
    r.verify_runs = 1;
    let mut o = machine_tests::observed(parse(&text("")), Some(r));
    o.verify.taken = Some(Taken::Attempt(1));
    o.verify.set_exit(machine_tests::exit(1, 0));
    o.reviewer_caps = vec![Some(1)];
    o.reviewer_timeouts = vec![None];
    let at_cap = |o: &Observed| {
        let mut s = snap(vec![o.clone()], 3);
        s.running_by_package.insert("critic".into(), 1);
        decide(&s)
    };
    let why = crate::activity::reason::Reason::ReviewerAtCapacity { reviewer: "critic".into(), index: 0, of: 1, max: 1 }.to_string();
    let a = at_cap(&o);
    assert!(matches!(a.as_slice(), [Action::Update { .. }]), "it waits: {a:?}");
    let u = a[0].update();
    assert_eq!(u.record.as_ref().and_then(|r| r.reason.clone()), Some(why.clone()), "{a:?}");
    assert!(u.edits.iter().any(|e| matches!(e, Edit::Set(k, v) if k == "reason" && v.as_str() == Some(why.as_str()))), "{a:?}");
    // Said once: with the record and the file saying so, the next pass writes nothing.
    o.record = u.record.clone();
    o.plan = parse(&text(&format!("reason: '{why}'\ntasks:\n  p:exec:wave-1:task-1: integrated\n")));
    assert_eq!(at_cap(&o), vec![], "nothing new");
    // A slot of the package free: the reviewer starts, and the wait is over.
    let a = decide(&snap(vec![o], 3));
    assert!(matches!(a.as_slice(), [Action::StartReviewer { index: 0, .. }]), "{a:?}");
    let u = a[0].update();
    assert_eq!(u.record.as_ref().map(|r| r.reason.clone()), Some(None), "{a:?}");
    assert!(u.edits.iter().any(|e| matches!(e, Edit::Remove(k) if k == "reason")), "{a:?}");
}
