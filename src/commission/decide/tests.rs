//! Table and property tests of the pure decider: every transition, intent handling, limits,
//! FIFO, exit classification, heartbeat, and convergence.

use std::path::PathBuf;

use super::transitions::transition_allowed;
use crate::activity::state::Record;

use chrono::{DateTime, Duration, TimeZone, Utc};
use proptest::prelude::*;

use super::*;
use crate::activity::kind::Action as _;
use crate::activity::state::{ExitInfo, RunInfo, Sample};
use crate::artifact::Commission;
use crate::commission::observe::{Proc, QUESTIONS_SHOWN};
use crate::config::{Project, ProjectConfig};
use crate::worker::toolbox::mailbox::{Mail, MailBody};
use crate::worker::Catalog;

fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 22, 12, 0, 0).single().expect("valid time")
}

fn commission(id: &str, extra: &str) -> Commission {
    let text = format!("---\ntitle: {id}\nworker: scribe\ncreated: 2026-11-22T10:00:{:02}Z\n{extra}---\nDo the thing.\n", id.len() % 60);
    Commission::parse(&PathBuf::from(format!(".lore/commissions/{id}.md")), &text).expect("test artifact parses")
}

/// An observed commission; a record made by an earlier pass knows the artifact's `created`.
fn obs(c: Commission, record: Option<Record>) -> Observed {
    let record = record.map(|mut r| {
        if r.created.is_none() {
            r.created = c.created().map(str::to_string);
        }
        r
    });
    Observed::new(c, record)
}

fn rec(status: Status, attempt: u32) -> Record {
    Record { status, prev: None, attempt, term_sent_at: None, created: None, stopping: None, given: None, revision: None, conflict: None }
}

fn snapshot(commissions: Vec<Observed>) -> Snapshot {
    Snapshot {
        now: t0(),
        project: Project { root: PathBuf::from("/nonexistent"), name: "p".into(), config: ProjectConfig::default() },
        max_concurrent: 10,
        running_elsewhere: 0,
        running_orphans: 0,
        tasks_running: 0,
        daily_budget: None,
        running_by_package: Default::default(),
        commissions,
        schedules: Vec::new(),
        problems: Vec::new(),
        workers: Catalog::with(&["scribe"]),
    }
}

/// A snapshot of nothing (for the schedule decider's tests).
pub(super) fn empty_snapshot() -> Snapshot {
    snapshot(Vec::new())
}

/// A snapshot with no room to dispatch: what a pass does to a status is all there is to see.
fn held(commissions: Vec<Observed>) -> Snapshot {
    let mut s = snapshot(commissions);
    s.project.config.commission_cap = 0;
    s
}

fn run_info(attempt: u32) -> RunInfo {
    RunInfo {
        attempt,
        pid: 4242,
        pgid: 4242,
        start_time: 1,
        boot_id: "b".into(),
        worker_pid: Some(4243),
        started_at: t0(),
        run_id: "r".into(),
    }
}

fn mail(attempt: u32, body: MailBody) -> Mail {
    Mail {
        seq: 1,
        id: format!("m-{attempt}-{}", serde_json::to_string(&body).unwrap_or_default().len()),
        ts: "2026-11-22T11:00:00Z".into(),
        attempt,
        body,
    }
}

/// A new mailbox event as observe hands it over: folded, and kept for the timeline.
fn deliver(o: &mut Observed, m: Mail) {
    o.deliver(m, "key", &mut Default::default());
}

/// Every (from, to) status event any action carries.
fn status_events(p: &Decisions) -> Vec<(String, String)> {
    p.actions
        .iter()
        .flat_map(|a| match a {
            Action::Update(u)
            | Action::Dispatch { update: u, .. }
            | Action::Finish { update: u, .. }
            | Action::Signal { update: u, .. } => u.events.clone(),
            _ => Vec::new(),
        })
        .filter(|e| e["kind"] == "status")
        .map(|e| (e["from"].as_str().unwrap_or("").to_string(), e["to"].as_str().unwrap_or("").to_string()))
        .collect()
}

fn edits_of(p: &Decisions, id: &str) -> Vec<Edit> {
    p.actions
        .iter()
        .filter(|a| a.id() == id)
        .flat_map(|a| match a {
            Action::Update(u)
            | Action::Dispatch { update: u, .. }
            | Action::Finish { update: u, .. }
            | Action::Signal { update: u, .. } => u.edits.clone(),
            _ => Vec::new(),
        })
        .collect()
}

fn sets(p: &Decisions, id: &str, key: &str) -> Option<Value> {
    edits_of(p, id).into_iter().rev().find_map(|e| match e {
        Edit::Set(k, v) if k == key => Some(v),
        _ => None,
    })
}

/// What a refusal of an edit of a commission held at `held` says: `refused:` of a failed or
/// cancelled one (its `reason:`, why it ended, must stay as it is), else `reason:`.
fn refusal(p: &Decisions, id: &str, held: Status) -> String {
    let ended = matches!(held, Status::Failed | Status::Cancelled | Status::Abandoned);
    if ended {
        assert!(sets(p, id, "reason").is_none(), "a refusal of an edit of a {held} commission replaced why it ended");
    }
    sets(p, id, if ended { "refused" } else { "reason" }).and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
}

fn dispatches(p: &Decisions) -> Vec<String> {
    p.actions.iter().filter(|a| matches!(a, Action::Dispatch { resume: false, .. })).map(|a| a.id().to_string()).collect()
}

/// The whole table: every (recorded, written) pair of statuses, with what must happen. A
/// refusal must put the status back, say truly why in `reason:` and log a `refused` event.
#[test]
fn every_status_edit_is_accepted_or_refused_by_the_state_machine() {
    use Status::*;
    const FINAL: &str = "a completed commission is final";
    const ONLY_COMPLETES: &str = "only the reconciler marks a commission completed";
    const RUNNING: &str = "can only be cancelled (status: cancelled)";
    const OVER: &str = "is already over";
    const AGAIN: &str = "is run again with status: pending";
    const SUBMIT: &str = "a draft is submitted with status: pending";
    const NO_DRAFT: &str = "cannot go back to draft";
    const BLOCKS: &str = "only the reconciler blocks";
    const STARTS: &str = "when it starts its worker";
    const FAILS: &str = "only the reconciler fails";
    const TO_REVIEW: &str = "only the reconciler puts a commission in review";
    const IN_REVIEW: &str = "its work waits in review: approve it";
    const GIVEN_UP: &str = "an abandoned commission is final";
    // (from, to, None = accepted | Some(what the reason must say))
    let table: &[(Status, Status, Option<&str>)] = &[
        (Draft, Pending, None),
        (Draft, Blocked, Some(SUBMIT)),
        (Draft, Dispatched, Some(SUBMIT)),
        (Draft, InProgress, Some(SUBMIT)),
        (Draft, Completed, Some(ONLY_COMPLETES)),
        (Draft, Failed, Some(SUBMIT)),
        (Draft, Cancelled, Some("nothing to cancel; delete the file")),
        (Pending, Draft, Some(NO_DRAFT)),
        (Pending, Blocked, Some(BLOCKS)),
        (Pending, Dispatched, Some(STARTS)),
        (Pending, InProgress, Some(STARTS)),
        (Pending, Completed, Some(ONLY_COMPLETES)),
        (Pending, Failed, Some(FAILS)),
        (Pending, Cancelled, None),
        (Blocked, Draft, Some(NO_DRAFT)),
        (Blocked, Pending, Some("becomes pending by itself")),
        (Blocked, Dispatched, Some(STARTS)),
        (Blocked, InProgress, Some(STARTS)),
        (Blocked, Completed, Some(ONLY_COMPLETES)),
        (Blocked, Failed, Some(FAILS)),
        (Blocked, Cancelled, None),
        (Dispatched, Draft, Some(RUNNING)),
        (Dispatched, Pending, Some(RUNNING)),
        (Dispatched, Blocked, Some(RUNNING)),
        (Dispatched, InProgress, Some(RUNNING)),
        (Dispatched, Completed, Some(ONLY_COMPLETES)),
        (Dispatched, Failed, Some(RUNNING)),
        (Dispatched, Cancelled, None),
        (InProgress, Draft, Some(RUNNING)),
        (InProgress, Pending, Some(RUNNING)),
        (InProgress, Blocked, Some(RUNNING)),
        (InProgress, Dispatched, Some(RUNNING)),
        (InProgress, Completed, Some(ONLY_COMPLETES)),
        (InProgress, Failed, Some(RUNNING)),
        (InProgress, Cancelled, None),
        (Completed, Draft, Some(FINAL)),
        (Completed, Pending, Some(FINAL)),
        (Completed, Blocked, Some(FINAL)),
        (Completed, Dispatched, Some(FINAL)),
        (Completed, InProgress, Some(FINAL)),
        (Completed, Failed, Some(FINAL)),
        (Completed, Cancelled, Some(FINAL)),
        (Failed, Draft, Some(AGAIN)),
        (Failed, Pending, None),
        (Failed, Blocked, Some(AGAIN)),
        (Failed, Dispatched, Some(AGAIN)),
        (Failed, InProgress, Some(AGAIN)),
        (Failed, Completed, Some(ONLY_COMPLETES)),
        (Failed, Cancelled, Some(OVER)),
        (Cancelled, Draft, Some(AGAIN)),
        (Cancelled, Pending, None),
        (Cancelled, Blocked, Some(AGAIN)),
        (Cancelled, Dispatched, Some(AGAIN)),
        (Cancelled, InProgress, Some(AGAIN)),
        (Cancelled, Completed, Some(ONLY_COMPLETES)),
        (Cancelled, Failed, Some(OVER)),
        (Draft, Review, Some(TO_REVIEW)),
        (Pending, Review, Some(TO_REVIEW)),
        (Blocked, Review, Some(TO_REVIEW)),
        (Dispatched, Review, Some(TO_REVIEW)),
        (InProgress, Review, Some(TO_REVIEW)),
        (Completed, Review, Some(FINAL)),
        (Failed, Review, Some(TO_REVIEW)),
        (Cancelled, Review, Some(TO_REVIEW)),
        (Review, Draft, Some(IN_REVIEW)),
        (Review, Pending, Some(IN_REVIEW)),
        (Review, Blocked, Some(IN_REVIEW)),
        (Review, Dispatched, Some(IN_REVIEW)),
        (Review, InProgress, Some(IN_REVIEW)),
        (Review, Completed, Some(IN_REVIEW)),
        (Review, Failed, Some(IN_REVIEW)),
        (Review, Cancelled, None),
        (Draft, Abandoned, Some("nothing to give up; delete the file")),
        (Pending, Abandoned, None),
        (Blocked, Abandoned, None),
        (Dispatched, Abandoned, Some(RUNNING)),
        (InProgress, Abandoned, Some(RUNNING)),
        (Review, Abandoned, Some(IN_REVIEW)),
        (Completed, Abandoned, Some(FINAL)),
        (Failed, Abandoned, None),
        (Cancelled, Abandoned, None),
        (Abandoned, Draft, Some(GIVEN_UP)),
        (Abandoned, Pending, Some(GIVEN_UP)),
        (Abandoned, Blocked, Some(GIVEN_UP)),
        (Abandoned, Dispatched, Some(GIVEN_UP)),
        (Abandoned, InProgress, Some(GIVEN_UP)),
        (Abandoned, Review, Some(GIVEN_UP)),
        (Abandoned, Completed, Some(GIVEN_UP)),
        (Abandoned, Failed, Some(GIVEN_UP)),
        (Abandoned, Cancelled, Some(GIVEN_UP)),
    ];
    let n = Status::ALL.len();
    assert_eq!(table.len(), n * (n - 1), "every pair of different statuses is in the table");
    for &(from, to, expect) in table {
        assert_eq!(person_may_request(from, to), expect.is_none(), "{from} -> {to}: table and state machine agree");
        // As a person finds it: right after the reconciler wrote `from` (the record still
        // remembers the status it replaced, which may be exactly the one written back), and
        // long after.
        for prev in [None, Some(to)] {
            let c = commission("c", &format!("status: {to}\nattempt: 1\n"));
            let mut o = obs(c, Some(Record { prev, ..rec(from, 1) }));
            if from.is_active() {
                o.attempt.located.proc = Proc::Alive;
                o.attempt.located.run = Some(run_info(1));
            }
            if from == Blocked {
                o.missing_deps = vec![".lore/research/prior-art.md".into()];
            }
            if prev.is_some() {
                // The pass that first sees the reconciler's own write confirms it.
                let mut seen = o.clone();
                seen.artifact = commission("c", &format!("status: {from}\nattempt: 1\n"));
                if from == Dispatched {
                    seen.attempt.located.proc = Proc::Starting;
                }
                let p = decide(&held(vec![seen]));
                let r = recorded(&p, "c").expect("the record is updated");
                assert_eq!((r.status, r.prev), (from, None), "{from}: the landed write is confirmed");
                o.record = Some(r);
            }
            let p = decide(&held(vec![o]));
            let events = status_events(&p);
            let reason = if expect.is_some() {
                refusal(&p, "c", from)
            } else {
                sets(&p, "c", "reason").and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
            };
            match expect {
                None => {
                    assert!(events.contains(&(from.to_string(), to.to_string())), "{from} -> {to} should be accepted: {events:?}");
                    assert!(!reason.contains("refused"), "{from} -> {to}: {reason}");
                }
                Some(why) => {
                    // Put back (a dispatched one whose worker runs moves on to in_progress).
                    assert!(
                        events.iter().all(|(f, t)| (f.as_str(), t.as_str()) == ("dispatched", "in_progress")),
                        "{from} -> {to}: {events:?}"
                    );
                    let back = if from == Dispatched { InProgress } else { from };
                    let put_back = (back != to).then(|| Value::from(back.as_str()));
                    assert_eq!(sets(&p, "c", "status"), put_back, "{from} -> {to}: status put back");
                    assert!(reason.starts_with(&format!("refused status change {from} -> {to}: ")), "{from} -> {to}: {reason}");
                    assert!(reason.contains(why), "{from} -> {to}: {reason:?} should say {why:?}");
                    let logged = events_of(&p, "c");
                    assert!(logged.iter().any(|e| e["kind"] == "refused" && e["text"] == reason.as_str()), "{from} -> {to}: {logged:?}");
                }
            }
        }
    }
}

#[test]
fn desired_requests() {
    use Status::*;
    // (status, desired, expected status afterwards, desired removed?)
    let table = [
        (Draft, "dispatched", Dispatched, true),
        (Pending, "dispatched", Dispatched, true),
        (Failed, "dispatched", Dispatched, true),
        (Cancelled, "dispatched", Dispatched, true),
        (Completed, "dispatched", Completed, true),
        (Pending, "cancelled", Cancelled, true),
        (Blocked, "cancelled", Cancelled, true),
        (InProgress, "cancelled", Cancelled, true),
        (Draft, "cancelled", Draft, true),
        (Completed, "cancelled", Completed, true),
        (Failed, "cancelled", Failed, true),
        (Review, "cancelled", Cancelled, true),
        (Review, "rejected", Cancelled, true),
        (Review, "dispatched", Review, true),
        (InProgress, "approved", InProgress, true),
        (Completed, "revised", Completed, true),
        (Draft, "rejected", Draft, true),
    ];
    for (status, desired, want, removed) in table {
        let c = commission("c", &format!("status: {status}\ndesired: {desired}\n"));
        let mut o = obs(c, Some(rec(status, 0)));
        if status.is_active() {
            o.attempt.located.proc = Proc::Alive;
            o.attempt.located.run = Some(run_info(0));
        }
        let p = decide(&snapshot(vec![o]));
        let got = sets(&p, "c", "status").and_then(|v| v.as_str().and_then(Status::parse)).unwrap_or(status);
        assert_eq!(got, want, "{status} + desired {desired}");
        assert_eq!(edits_of(&p, "c").contains(&Edit::Remove("desired".into())), removed, "{status} + desired {desired}");
        if got == status {
            // Of a failed or cancelled commission the refusal is `refused:`, why it ended kept.
            let ended = matches!(status, Status::Failed | Status::Cancelled);
            let reason =
                sets(&p, "c", if ended { "refused" } else { "reason" }).and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
            assert!(reason.starts_with("refused desired"), "{status} + {desired}: {reason}");
            assert!(!ended || sets(&p, "c", "reason").is_none(), "{status} + {desired}: why it ended is kept");
        }
    }
}

/// `desired_refusal`, which the faces ask up front, says exactly what the decider refuses.
#[test]
fn desired_refusal_is_the_deciders_own() {
    use crate::artifact::Desired;
    for status in Status::ALL {
        for (desired, word) in Desired::ALL.map(|d| (d, d.as_str())) {
            let c = commission("c", &format!("status: {status}\ndesired: {word}\n"));
            let mut o = obs(c, Some(rec(status, 1)));
            if status.is_active() {
                o.attempt.located.proc = Proc::Alive;
                o.attempt.located.run = Some(run_info(1));
            }
            let p = decide(&snapshot(vec![o]));
            // Of a failed or cancelled commission the refusal is `refused:`; `reason:` (why it
            // ended) is kept.
            let ended = matches!(status, Status::Failed | Status::Cancelled | Status::Abandoned);
            let reason =
                sets(&p, "c", if ended { "refused" } else { "reason" }).and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
            let refused = reason.starts_with("refused desired");
            assert_eq!(desired_refusal(status, desired).is_some(), refused, "{status} + desired {word}: {reason}");
            // Given up (from failed or cancelled): why is its new reason.
            if ended && !(desired == Desired::Abandoned && status != Status::Abandoned) {
                assert!(sets(&p, "c", "reason").is_none(), "{status} + desired {word}: why it ended is kept");
            }
        }
    }
}

#[test]
fn manual_mode_waits_for_desired() {
    let mut s = snapshot(vec![obs(commission("a", "status: pending\n"), Some(rec(Status::Pending, 0)))]);
    s.project.config.dispatch = crate::config::DispatchMode::Manual;
    let p = decide(&s);
    assert!(p.actions.is_empty() && p.settled, "{:?}", p.actions);
    s.commissions[0] = obs(commission("a", "status: pending\ndesired: dispatched\n"), Some(rec(Status::Pending, 0)));
    assert_eq!(dispatches(&decide(&s)), vec!["a"]);
}

#[test]
fn new_file_without_status_is_pending_and_stamped() {
    let c = Commission::parse(&PathBuf::from(".lore/commissions/n.md"), "---\nworker: scribe\n---\nbody\n").expect("parses");
    let p = decide(&snapshot(vec![obs(c, None)]));
    assert_eq!(dispatches(&p), vec!["n"]);
    assert!(sets(&p, "n", "created").is_some());
    // Its log opens with what happened truly: created (taken as pending), then dispatched.
    assert_eq!(status_events(&p), vec![("pending".into(), "dispatched".into())]);
    let Action::Dispatch { update, .. } = &p.actions[0] else { panic!("{:?}", p.actions) };
    assert_eq!(update.events[0]["kind"], "created", "{:?}", update.events);
    assert_eq!(
        crate::activity::timeline::render(&update.events[0]).split_once("  ").map(|x| x.1),
        Some("created    pending (no status: taken as pending)")
    );
}

#[test]
fn dependencies_block_and_unblock() {
    let mut o = obs(commission("d", "status: pending\ndependencies: [x.md]\n"), Some(rec(Status::Pending, 0)));
    o.missing_deps = vec!["x.md".into()];
    let p = decide(&snapshot(vec![o]));
    assert_eq!(sets(&p, "d", "status"), Some(Value::from("blocked")));
    assert!(dispatches(&p).is_empty());
    let o = obs(commission("d", "status: blocked\ndependencies: [x.md]\n"), Some(rec(Status::Blocked, 0)));
    let p = decide(&snapshot(vec![o]));
    assert_eq!(status_events(&p), vec![("blocked".into(), "pending".into()), ("pending".into(), "dispatched".into())]);
}

/// A daily budget reached holds new work `blocked`, the reason naming it and its reset; the
/// day over, it is dispatched. An attempt stopped for its budget fails with the figures,
/// whatever its exit, and one that submitted first keeps its result.
#[test]
fn budgets_hold_new_work_and_fail_an_attempt_past_its_own() {
    use crate::activity::budget::{Amount, DailyReached, Overspent, Scope};
    let reached = DailyReached {
        scope: Scope::Project,
        spent: Amount::Tokens(1500),
        limit: Amount::Tokens(1000),
        resets_at: t0() + Duration::hours(12),
    };
    let mut s = snapshot(vec![obs(commission("n", "status: pending\n"), Some(rec(Status::Pending, 0)))]);
    s.daily_budget = Some(reached);
    let p = decide(&s);
    assert_eq!(sets(&p, "n", "status"), Some(Value::from("blocked")));
    assert_eq!(sets(&p, "n", "reason"), Some(Value::from(reached.to_string())));
    assert!(dispatches(&p).is_empty());
    // A watch looks again when the day resets.
    assert_eq!(next_check(&s), Some(std::time::Duration::from_secs(12 * 3600)));
    let p = decide(&snapshot(vec![obs(commission("n", "status: blocked\n"), Some(rec(Status::Blocked, 0)))]));
    assert_eq!(status_events(&p), vec![("blocked".into(), "pending".into()), ("pending".into(), "dispatched".into())]);

    let over = Overspent { spent: Amount::Usd(2_310_000), limit: Amount::Usd(2_000_000) };
    for with_result in [false, true] {
        let mut o = obs(commission("c", "status: in_progress\nattempt: 1\n"), Some(rec(Status::InProgress, 1)));
        o.attempt.located.proc = Proc::Dead;
        o.attempt.located.run = Some(run_info(1));
        o.attempt.located.exit = Some(ExitInfo { signal: Some(15), error: None, ..ExitInfo::error(1, String::new()) });
        o.overspent = Some(over);
        if with_result {
            deliver(&mut o, mail(1, MailBody::Result { summary: "done".into(), artifacts: Vec::new() }));
        }
        let p = decide(&snapshot(vec![o]));
        let events = p.actions.iter().flat_map(|a| match a {
            Action::Update(u) | Action::Finish { update: u, .. } => u.events.clone(),
            _ => Vec::new(),
        });
        let budget: Vec<_> = events.filter(|e| e["kind"] == "budget").collect();
        assert_eq!(budget.len(), 1, "{:?}", p.actions);
        if with_result {
            assert_eq!(sets(&p, "c", "status"), Some(Value::from("completed")));
        } else {
            assert_eq!(sets(&p, "c", "status"), Some(Value::from("failed")));
            assert_eq!(sets(&p, "c", "reason"), Some(Value::from("budget exceeded: $2.31 of $2.00; its work is kept on its branch")));
        }
    }
}

/// A commission whose worker's package is not installed waits, `blocked` with a reason naming
/// the worker and where packages are looked for — a new one (no status, no record) too — and
/// runs once the package is there; no attempt is spent while it waits.
#[test]
fn a_missing_worker_blocks_and_its_package_unblocks() {
    let c = Commission::parse(&PathBuf::from(".lore/commissions/n.md"), "---\nworker: nobody\n---\nbody\n").expect("parses");
    let mut s = snapshot(vec![obs(c, None)]);
    s.workers.dirs = vec![PathBuf::from("/p/.lore/workers"), PathBuf::from("/h/workers")];
    let p = decide(&s);
    assert!(dispatches(&p).is_empty());
    assert_eq!(sets(&p, "n", "status"), Some(Value::from("blocked")));
    let reason = sets(&p, "n", "reason").and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
    assert!(
        reason.contains("\"nobody\"") && reason.contains("/p/.lore/workers/nobody/") && reason.contains("/h/workers/nobody/"),
        "{reason}"
    );
    assert!(p.actions.iter().any(|a| a.describe().contains("status -> blocked; worker \"nobody\" is not installed")), "{:?}", p.actions);
    // Once written, nothing more to do while it waits: `--wait` ends.
    let c = Commission::parse(
        &PathBuf::from(".lore/commissions/n.md"),
        &format!(
            "---\nworker: nobody\nstatus: blocked\ncreated: 2026-11-22T10:00:00Z\nreason: '{}'\n---\nbody\n",
            reason.replace('\'', "''")
        ),
    )
    .expect("parses");
    let mut s = snapshot(vec![obs(c, Some(rec(Status::Blocked, 0)))]);
    s.workers.dirs = vec![PathBuf::from("/p/.lore/workers"), PathBuf::from("/h/workers")];
    let p = decide(&s);
    assert!(p.actions.is_empty() && p.settled, "{:?}", p.actions);
    let o = obs(commission("d", "status: blocked\nreason: waiting for worker\n"), Some(rec(Status::Blocked, 0)));
    let p = decide(&snapshot(vec![o]));
    assert_eq!(status_events(&p), vec![("blocked".into(), "pending".into()), ("pending".into(), "dispatched".into())]);
    assert_eq!(dispatches(&p), vec!["d"]);
}

#[test]
fn dependency_cycles_are_reported_not_waited_on() {
    let mut a = obs(commission("a", "status: blocked\ndependencies: [b.md]\noutputs: [a.md]\n"), Some(rec(Status::Blocked, 0)));
    a.missing_deps = vec!["b.md".into()];
    let mut b = obs(commission("b", "status: pending\ndependencies: [a.md]\noutputs: [b.md]\n"), Some(rec(Status::Pending, 0)));
    b.missing_deps = vec!["a.md".into()];
    let c = obs(commission("c", "status: pending\noutputs: [c.md]\n"), Some(rec(Status::Pending, 0)));
    let s = snapshot(vec![a, b, c]);
    assert_eq!(dependency_cycles(&s).cycles, vec![vec!["a".to_string(), "b".to_string()]]);
    let p = decide(&s);
    assert_eq!(sets(&p, "a", "reason"), Some(Value::from("dependency cycle: a -> b -> a")));
    assert_eq!(sets(&p, "b", "status"), Some(Value::from("blocked")));
    assert_eq!(sets(&p, "b", "reason"), Some(Value::from("dependency cycle: a -> b -> a")));
    assert_eq!(dispatches(&p), vec!["c"]);
}

#[test]
fn caps_and_fifo() {
    let mut cs: Vec<Observed> = ["e", "dd", "ccc", "bbbb", "aaaaa"]
        .iter()
        .map(|id| obs(commission(id, "status: pending\n"), Some(rec(Status::Pending, 0))))
        .collect();
    // created seconds = id length: "e" is oldest.
    let p = decide(&snapshot(cs.clone()));
    assert_eq!(dispatches(&p), vec!["e", "dd", "ccc"]);
    let mut s = snapshot(cs.clone());
    s.running_elsewhere = 9;
    assert_eq!(dispatches(&decide(&s)), vec!["e"]);
    // One already running: two more.
    cs[4] = obs(commission("aaaaa", "status: in_progress\nattempt: 1\n"), Some(rec(Status::InProgress, 1)));
    cs[4].attempt.located.proc = Proc::Alive;
    cs[4].attempt.located.run = Some(run_info(1));
    assert_eq!(dispatches(&decide(&snapshot(cs.clone()))), vec!["e", "dd"]);
    // Its worker gone with its result in: finished this round, its slot taken in the same one
    // (the pass starts new work once the round's finishes are done).
    let finishing = |frontmatter: &str| {
        let mut o = obs(commission("aaaaa", frontmatter), Some(rec(Status::InProgress, 1)));
        o.attempt.located.proc = Proc::Dead;
        o.attempt.located.run = Some(run_info(1));
        o.attempt.located.exit = Some(ExitInfo {
            attempt: 1,
            code: Some(0),
            signal: None,
            error: None,
            finished_at: t0(),
            tail: None,
            setup: None,
            checks: Box::default(),
        });
        deliver(&mut o, mail(1, MailBody::Result { summary: "done".into(), artifacts: vec![] }));
        o
    };
    cs[4] = finishing("status: in_progress\nattempt: 1\n");
    let p = decide(&snapshot(cs.clone()));
    assert!(p.actions.iter().any(|a| matches!(a, Action::Finish { update, .. } if update.id == "aaaaa")), "{:?}", p.actions);
    assert_eq!(dispatches(&p), vec!["e", "dd", "ccc"]);
    // Unless its merge already waited on a person's checkout: it keeps its slot, so work does
    // not pile up behind a merge that cannot land.
    cs[4] = finishing("status: in_progress\nattempt: 1\nreason: 'merge waiting: local changes to a.txt in /repo'\n");
    let p = decide(&snapshot(cs));
    assert!(p.actions.iter().any(|a| matches!(a, Action::Finish { update, .. } if update.id == "aaaaa")), "{:?}", p.actions);
    assert_eq!(dispatches(&p), vec!["e", "dd"]);
}

#[test]
fn exit_classification() {
    let exit = |code: Option<i32>| ExitInfo {
        attempt: 1,
        code,
        signal: if code.is_none() { Some(9) } else { None },
        error: None,
        finished_at: t0(),
        tail: None,
        setup: None,
        checks: Box::default(),
    };
    let result = MailBody::Result { summary: "done".into(), artifacts: vec!["a.md".into()] };
    let cases: [(Option<ExitInfo>, bool, &str); 5] = [
        (Some(exit(Some(0))), true, "completed"),
        (Some(exit(Some(0))), false, "failed"),
        (Some(exit(Some(3))), true, "completed"),
        (Some(exit(None)), false, "failed"),
        (None, false, "failed"),
    ];
    for (x, with_result, want) in cases {
        let mut o = obs(commission("c", "status: in_progress\nattempt: 1\n"), Some(rec(Status::InProgress, 1)));
        o.attempt.located.proc = Proc::Dead;
        o.attempt.located.run = Some(run_info(1));
        o.attempt.located.exit = x.clone();
        if with_result {
            deliver(&mut o, mail(1, result.clone()));
        }
        let p = decide(&snapshot(vec![o]));
        assert_eq!(sets(&p, "c", "status"), Some(Value::from(want)), "{x:?} result={with_result}");
        if want == "completed" {
            assert!(p.actions.iter().any(|a| matches!(a, Action::Finish { .. })));
            assert!(sets(&p, "c", "result").is_some(), "result kept");
        } else {
            let reason = sets(&p, "c", "reason").and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
            let expect = match &x {
                Some(e) if e.code == Some(0) => "completed without submitting result",
                Some(_) => "worker killed by signal 9",
                None => "process lost on restart",
            };
            assert_eq!(reason, expect);
        }
    }
}

/// An attempt the artifact says is under way that this home never started (no
/// record, no runtime dir) is another home's: no update, no action; one this home started
/// (its runtime dir is here, its record not yet written) fails as before.
#[test]
fn an_attempt_under_way_in_another_home_is_left_alone() {
    for status in ["dispatched", "in_progress"] {
        let c = commission("c", &format!("status: {status}\nattempt: 2\nbranch: claude/commission/c+2\n"));
        let mut o = obs(c.clone(), None);
        o.elsewhere = Some(crate::commission::observe::Elsewhere {
            status: c.status.expect("a status"),
            attempt: 2,
            branch: Some("claude/commission/c+2".into()),
            landed: Some(false),
            integration: "claude/main".into(),
            ran_here: None,
        });
        let p = decide(&snapshot(vec![o.clone()]));
        assert!(p.actions.is_empty(), "{status}: {:?}", p.actions);
        // A cancel gives it up here; a dispatch is refused, saying how to run it again.
        let mut cancel = o.clone();
        cancel.artifact = commission("c", &format!("status: {status}\nattempt: 2\ndesired: cancelled\n"));
        let p = decide(&snapshot(vec![cancel]));
        assert_eq!(sets(&p, "c", "status"), Some(Value::from("cancelled")));
        assert!(p.actions.iter().all(|a| matches!(a, Action::Update(_))), "nothing to stop or clean here: {:?}", p.actions);
        let mut dispatch = o;
        dispatch.artifact = commission("c", &format!("status: {status}\nattempt: 2\ndesired: dispatched\n"));
        let p = decide(&snapshot(vec![dispatch]));
        assert_eq!(sets(&p, "c", "status"), None);
        let reason = sets(&p, "c", "reason").and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
        assert!(reason.contains("status: pending"), "{reason}");
        let p = decide(&snapshot(vec![obs(c, None)]));
        assert_eq!(sets(&p, "c", "status"), Some(Value::from("failed")), "{status}: started here, no record");
    }
}

#[test]
fn cancel_racing_completion_keeps_the_result() {
    let mut o = obs(commission("c", "status: in_progress\nattempt: 1\ndesired: cancelled\n"), Some(rec(Status::InProgress, 1)));
    o.attempt.located.proc = Proc::Dead;
    o.attempt.located.exit = Some(ExitInfo {
        attempt: 1,
        code: Some(0),
        signal: None,
        error: None,
        finished_at: t0(),
        tail: None,
        setup: None,
        checks: Box::default(),
    });
    deliver(&mut o, mail(1, MailBody::Result { summary: "done".into(), artifacts: vec![] }));
    let p = decide(&snapshot(vec![o]));
    assert_eq!(sets(&p, "c", "status"), Some(Value::from("completed")));
}

#[test]
fn cancel_signals_then_kills_after_grace() {
    let mut o = obs(commission("c", "status: cancelled\nattempt: 1\n"), Some(rec(Status::Cancelled, 1)));
    o.attempt.located.proc = Proc::Alive;
    o.attempt.located.run = Some(run_info(1));
    let p = decide(&snapshot(vec![o.clone()]));
    assert!(p.actions.iter().any(|a| matches!(a, Action::Signal { signal: Sig::Term, .. })));
    let stopping = Some("cancelling: worker still running".to_string());
    o.record = Some(Record { term_sent_at: Some(t0() - Duration::seconds(5)), stopping: stopping.clone(), ..rec(Status::Cancelled, 1) });
    assert!(decide(&snapshot(vec![o.clone()])).actions.is_empty());
    o.record = Some(Record { term_sent_at: Some(t0() - Duration::seconds(31)), stopping, ..rec(Status::Cancelled, 1) });
    assert!(decide(&snapshot(vec![o])).actions.iter().any(|a| matches!(a, Action::Signal { signal: Sig::Kill, .. })));
}

/// The update of the one action carrying a record for `id`.
fn recorded(p: &Decisions, id: &str) -> Option<Record> {
    p.actions.iter().filter(|a| a.id() == id).find_map(|a| match a {
        Action::Update(u) | Action::Signal { update: u, .. } => u.record.clone(),
        _ => None,
    })
}

fn events_of(p: &Decisions, id: &str) -> Vec<serde_json::Value> {
    p.actions
        .iter()
        .filter(|a| a.id() == id)
        .flat_map(|a| match a {
            Action::Update(u) | Action::Signal { update: u, .. } | Action::Dispatch { update: u, .. } => u.events.clone(),
            _ => Vec::new(),
        })
        .collect()
}

#[test]
fn a_stop_is_over_only_when_every_process_is() {
    // A cancel while the worker runs: cancelled as asked, but still stopping, not completed.
    let mut o = obs(commission("c", "status: cancelled\nattempt: 1\n"), Some(rec(Status::InProgress, 1)));
    o.attempt.located.proc = Proc::Alive;
    o.attempt.located.run = Some(run_info(1));
    let p = decide(&snapshot(vec![o.clone()]));
    let r = recorded(&p, "c").expect("a record");
    assert_eq!((r.status, r.stopping.as_deref()), (Status::Cancelled, Some("cancelling: worker still running")));
    let status = events_of(&p, "c").into_iter().find(|e| e["kind"] == "status").expect("status event");
    assert_eq!((status["to"].as_str(), status["stopping"].as_str()), (Some("cancelled"), Some("cancelling: worker still running")));
    assert_eq!(sets(&p, "c", "completed"), None);
    // Still alive on a later pass (after SIGTERM): nothing more to say.
    o.record = Some(r.clone());
    o.record.as_mut().expect("record").term_sent_at = Some(t0());
    assert!(decide(&snapshot(vec![o.clone()])).actions.is_empty());
    // A shim killed with processes left behind is not over either.
    o.attempt.located.proc = Proc::Lingering;
    o.attempt.located.leftovers = vec![4244];
    assert!(decide(&snapshot(vec![o.clone()])).actions.iter().all(|a| a.verb() == "kill_leftovers"));
    // Every process gone: the stop is recorded as over, and only now `completed:`.
    o.attempt.located.proc = Proc::Dead;
    o.attempt.located.leftovers.clear();
    let p = decide(&snapshot(vec![o.clone()]));
    assert_eq!(recorded(&p, "c").expect("a record").stopping, None);
    assert_eq!(sets(&p, "c", "completed"), Some(Value::from(timestamp(t0()))));
    assert!(events_of(&p, "c").iter().any(|e| e["kind"] == "stopped"), "{p:?}");

    // A stale worker: failed at once, "failing" until its processes are gone.
    let mut o = obs(commission("s", "status: in_progress\nattempt: 1\ntimeout: 1s\n"), Some(rec(Status::InProgress, 1)));
    o.attempt.located.proc = Proc::Alive;
    o.attempt.located.run = Some(RunInfo { started_at: t0() - Duration::seconds(100), ..run_info(1) });
    let p = decide(&snapshot(vec![o]));
    assert_eq!(recorded(&p, "s").and_then(|r| r.stopping).as_deref(), Some("failing: worker still running"));
    assert_eq!(sets(&p, "s", "completed"), None);

    // Abandoned while a failed attempt's worker is still being stopped: over, and
    // `completed:`, only once its processes are gone.
    let mut o = obs(commission("g", "status: failed\nattempt: 1\ndesired: abandoned\n"), Some(rec(Status::Failed, 1)));
    o.attempt.located.proc = Proc::Alive;
    o.attempt.located.run = Some(run_info(1));
    let p = decide(&snapshot(vec![o.clone()]));
    let r = recorded(&p, "g").expect("a record");
    assert_eq!((r.status, r.stopping.as_deref()), (Status::Abandoned, Some("abandoning: worker still running")));
    assert_eq!(sets(&p, "g", "completed"), None);
    o.artifact = commission("g", "status: abandoned\nattempt: 1\n");
    o.record = Some(r);
    o.attempt.located.proc = Proc::Dead;
    let p = decide(&snapshot(vec![o]));
    assert_eq!(recorded(&p, "g").expect("a record").stopping, None);
    assert_eq!(sets(&p, "g", "completed"), Some(Value::from(timestamp(t0()))));
    // Abandoned from pending: nothing ran, over at once.
    let o = obs(commission("h", "status: pending\ndesired: abandoned\n"), Some(rec(Status::Pending, 0)));
    let p = decide(&snapshot(vec![o]));
    assert_eq!(recorded(&p, "h").map(|r| r.status), Some(Status::Abandoned));
    assert_eq!(sets(&p, "h", "completed"), Some(Value::from(timestamp(t0()))));

    // Nothing running: over at once.
    let o = obs(commission("q", "status: cancelled\n"), Some(rec(Status::Pending, 0)));
    let p = decide(&snapshot(vec![o]));
    assert_eq!(recorded(&p, "q").and_then(|r| r.stopping), None);
    assert_eq!(sets(&p, "q", "completed"), Some(Value::from(timestamp(t0()))));
}

#[test]
fn heartbeat_stale_fails_and_kills() {
    let sample = Sample { log_len: 10, cpu_ticks: 5, mailbox_len: 100 };
    let mut o = obs(commission("c", "status: in_progress\nattempt: 1\n"), Some(rec(Status::InProgress, 1)));
    o.attempt.located.proc = Proc::Alive;
    o.attempt.located.run = Some(run_info(1));
    o.attempt.sample = Some(sample);
    o.attempt.heartbeat = Some(Heartbeat { last_activity: t0() - Duration::seconds(100), sample });
    assert!(decide(&snapshot(vec![o.clone()])).actions.is_empty(), "quiet but within stale_after");
    o.attempt.heartbeat = Some(Heartbeat { last_activity: t0() - Duration::seconds(181), sample });
    let p = decide(&snapshot(vec![o.clone()]));
    assert_eq!(sets(&p, "c", "reason"), Some(Value::from("process unresponsive")));
    assert!(p.actions.iter().any(|a| matches!(a, Action::Signal { signal: Sig::Kill, .. })));
    // Any sign of life resets the clock.
    o.attempt.sample = Some(Sample { cpu_ticks: 6, ..sample });
    assert!(matches!(decide(&snapshot(vec![o])).actions.as_slice(), [Action::Heartbeat { .. }]));
}

/// A worker waiting for a person: never stale, its question open in `questions:`; an `answer:`
/// answers it (the reply goes with the fold, the key is removed); past `ask_timeout` it is
/// closed without one; an answer with nothing open is refused.
#[test]
fn a_worker_asking_a_person_waits_is_answered_or_times_out() {
    let sample = Sample { log_len: 10, cpu_ticks: 5, mailbox_len: 100 };
    let waiting = |extra: &str| {
        let mut o = obs(commission("c", &format!("status: in_progress\nattempt: 1\n{extra}")), Some(rec(Status::InProgress, 1)));
        o.attempt.located.proc = Proc::Alive;
        o.attempt.located.run = Some(run_info(1));
        o.attempt.sample = Some(sample);
        o.attempt.heartbeat = Some(Heartbeat { last_activity: t0() - Duration::seconds(1000), sample });
        deliver(&mut o, Mail { ts: "2026-11-22T11:59:00Z".into(), ..mail(1, MailBody::Ask { text: "Which colour?".into() }) });
        o
    };
    // Silent far past stale_after, but waiting: a sign of life, and the question shown open.
    let p = decide(&snapshot(vec![waiting("")]));
    assert!(sets(&p, "c", "reason").is_none(), "{p:?}");
    assert!(p.actions.iter().any(|a| matches!(a, Action::Heartbeat { beat, .. } if beat.last_activity == t0())), "{p:?}");
    let q = sets(&p, "c", "questions").expect("questions");
    assert_eq!((q[0]["question"].as_str(), q[0]["number"].as_u64(), q[0]["open"].as_bool()), (Some("Which colour?"), Some(1), Some(true)));
    let ev = events_of(&p, "c").into_iter().find(|e| e["kind"] == "question").expect("question event");
    assert_eq!((&ev["text"], &ev["waiting"], &ev["question"]), (&json!("Which colour?"), &json!(true), &json!(1)), "{ev}");
    // Answered: in `questions:`, the key removed, the reply in the fold for the answers dir.
    let p = decide(&snapshot(vec![waiting("answer: blue\n")]));
    let q = sets(&p, "c", "questions").expect("questions");
    assert_eq!((q[0]["answer"].as_str(), q[0].get("open")), (Some("blue"), None), "{q:?}");
    assert!(edits_of(&p, "c").contains(&Edit::Remove("answer".into())));
    let fold = p.actions.iter().find_map(|a| match a {
        Action::Update(u) => u.fold.clone(),
        _ => None,
    });
    let reply = fold.clone().and_then(|f| f.asks[0].reply_file()).unwrap_or_else(|| panic!("a reply to write: {fold:?} {p:?}"));
    assert_eq!(reply.outcome.said(), "blue");
    assert!(events_of(&p, "c").iter().any(|e| e["kind"] == "answered" && e["text"] == "blue"));
    assert!(sets(&p, "c", "reason").is_none(), "waiting until the answer came: not stale");
    // Past its ask_timeout (asked a minute ago): closed without an answer.
    let p = decide(&snapshot(vec![waiting("ask_timeout: 30s\n")]));
    let q = sets(&p, "c", "questions").expect("questions");
    assert!(q[0]["timed_out"].is_string() && q[0].get("open").is_none(), "{q:?}");
    assert!(events_of(&p, "c").iter().any(|e| e["kind"] == "no_answer"));
    // Nothing open: the answer is refused, and the key removed.
    let mut o = obs(commission("c", "status: in_progress\nattempt: 1\nanswer: blue\n"), Some(rec(Status::InProgress, 1)));
    o.attempt.located.proc = Proc::Alive;
    o.attempt.located.run = Some(run_info(1));
    let p = decide(&snapshot(vec![o]));
    assert!(edits_of(&p, "c").contains(&Edit::Remove("answer".into())));
    let reason = sets(&p, "c", "reason").and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
    assert!(reason.contains("refused answer") && reason.contains("no question"), "{reason}");
}

/// A meeting request read from the mailbox (a worker can append one without the toolbox):
/// written for a package with the `meeting` capability, once; refused without it.
#[test]
fn a_meeting_request_is_written_once_and_only_for_a_package_that_meets() {
    let running = || {
        let mut o = obs(commission("c", "status: in_progress\nattempt: 1\n"), Some(rec(Status::InProgress, 1)));
        o.attempt.located.proc = Proc::Alive;
        o.attempt.located.run = Some(run_info(1));
        deliver(&mut o, Mail { seq: 4, ..mail(1, MailBody::MeetingRequest { reason: "Talk it through".into() }) });
        o
    };
    let fold_of = |p: &Decisions| {
        p.actions.iter().find_map(|a| match a {
            Action::Update(u) => u.fold.clone(),
            _ => None,
        })
    };
    // scribe, as `Catalog::with` makes it, has the default capabilities: no `meeting`.
    let p = decide(&snapshot(vec![running()]));
    let fold = fold_of(&p).expect("the fold goes with the update");
    assert!(fold.write_meetings.is_empty() && fold.meetings[0].done, "{fold:?}");
    assert!(events_of(&p, "c")
        .iter()
        .any(|e| e["kind"] == "refused" && e["text"].as_str().is_some_and(|t| t.contains("`meeting` capability"))));
    let mut s = snapshot(vec![running()]);
    if let Some(pkg) = s.workers.packages.get_mut("scribe") {
        pkg.manifest.capabilities = vec!["commission".into(), "meeting".into()];
    }
    let p = decide(&s);
    let fold = fold_of(&p).expect("the fold");
    assert_eq!(fold.write_meetings.len(), 1, "{fold:?}");
    let m = &fold.write_meetings[0];
    assert_eq!((m.id.as_str(), m.reason.as_str(), m.reference.as_str()), ("c-meeting-1-4", "Talk it through", ".lore/commissions/c.md"));
    assert!(events_of(&p, "c").iter().any(|e| e["kind"] == "meeting_requested" && e["meeting"] == "c-meeting-1-4"));
    // Done once: the next pass (the fold as written) writes nothing more.
    let mut again = running();
    // As read back from its file: what is decided now is never stored.
    again.folded = serde_json::from_value(serde_json::to_value(&*fold).expect("json")).ok();
    again.mail.clear();
    let p = decide(&snapshot(vec![again]));
    assert!(fold_of(&p).is_none_or(|f| f.write_meetings.is_empty()), "{p:?}");
}

#[test]
fn interrupted_write_is_repaired_not_refused() {
    // Record says dispatched (written first); the artifact still says pending.
    let o = obs(commission("c", "status: pending\n"), Some(Record { prev: Some(Status::Pending), ..rec(Status::Dispatched, 1) }));
    let p = decide(&snapshot(vec![o]));
    assert_eq!(sets(&p, "c", "status"), Some(Value::from("dispatched")));
    assert!(sets(&p, "c", "reason").is_none());
    assert!(p.actions.iter().any(|a| matches!(a, Action::Dispatch { resume: true, .. })));
}

#[test]
fn redispatch_uses_a_new_branch() {
    let o = obs(commission("c", "status: pending\nattempt: 1\n"), Some(rec(Status::Failed, 1)));
    let p = decide(&snapshot(vec![o]));
    let d = p.actions.iter().find_map(|a| match a {
        Action::Dispatch { attempt, branch, update, .. } => Some((*attempt, branch.clone(), update.events.clone())),
        _ => None,
    });
    let (attempt, branch, events) = d.expect("dispatched");
    assert_eq!((attempt, branch.as_str()), (2, "claude/commission/c+2"));
    assert!(events.iter().any(|e| e["kind"] == "redispatch"));
}

fn dispatched(p: &Decisions) -> Option<(u32, String, Vec<serde_json::Value>)> {
    p.actions.iter().find_map(|a| match a {
        Action::Dispatch { attempt, branch, update, resume: false, .. } => Some((*attempt, branch.clone(), update.events.clone())),
        _ => None,
    })
}

#[test]
fn a_new_artifact_over_an_ended_id_is_new_work() {
    for ended in [Status::Completed, Status::Failed, Status::Cancelled] {
        // The old artifact is gone; a new one was copied in under its id, with a stamp of its own.
        let old = Record { created: Some("2020-01-01T00:00:00Z".into()), ..rec(ended, 2) };
        let o = obs(commission("c", "status: pending\n"), Some(old));
        let p = decide(&snapshot(vec![o]));
        let (attempt, branch, events) = dispatched(&p).unwrap_or_else(|| panic!("{ended}: dispatched as new work: {:?}", p.actions));
        assert_eq!((attempt, branch.as_str()), (3, "claude/commission/c+3"), "{ended}");
        assert!(events.iter().any(|e| e["kind"] == "new-work"), "{ended}: {events:?}");
        assert!(sets(&p, "c", "reason").is_none(), "{ended}: nothing refused");
    }
    // A draft written over it stays a draft, as new work.
    let old = Record { created: Some("2020-01-01T00:00:00Z".into()), ..rec(Status::Completed, 1) };
    let p = decide(&snapshot(vec![obs(commission("c", "status: draft\n"), Some(old))]));
    assert!(dispatched(&p).is_none());
    assert_eq!(recorded(&p, "c").map(|r| (r.status, r.attempt)), Some((Status::Draft, 1)));
}

/// A `git stash`, a checkout or a reset that puts back the version from
/// before it ran (the same `created:`, or none) is the same commission: nothing runs again, and
/// the reason says how to start new work instead.
#[test]
fn an_older_version_put_back_is_the_same_commission() {
    let ended = Record { created: Some("2026-11-22T10:00:01Z".into()), ..rec(Status::Completed, 2) };
    let without_stamp = |extra: &str| {
        let text = format!("---\nworker: scribe\n{extra}---\nDo the thing.\n");
        Commission::parse(&PathBuf::from(".lore/commissions/c.md"), &text).expect("test artifact parses")
    };
    let put_back =
        [commission("c", "status: pending\n"), without_stamp("status: pending\n"), without_stamp(""), without_stamp("status: draft\n")];
    for (n, c) in put_back.into_iter().enumerate() {
        let text = format!("case {n}");
        let p = decide(&snapshot(vec![obs(c, Some(ended.clone()))]));
        assert!(dispatched(&p).is_none(), "{text:?}: {:?}", p.actions);
        assert!(!p.actions.iter().any(|a| format!("{a:?}").contains("new-work")), "{text:?}");
        assert_eq!(sets(&p, "c", "status"), Some(Value::from("completed")), "{text:?}");
        let reason = sets(&p, "c", "reason").and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
        assert!(reason.contains("commission create") && reason.contains("new name"), "{text:?}: {reason}");
    }
}

/// An attempt after every one this home ran, finished in another home, is
/// adopted (this home's record gives way, the artifact is not touched); one still under way
/// there is left alone.
#[test]
fn a_later_attempt_finished_elsewhere_is_adopted() {
    let done = commission("c", "status: completed\nattempt: 2\nbranch: claude/commission/c+2\n");
    let p = decide(&snapshot(vec![obs(done, Some(rec(Status::Failed, 1)))]));
    assert!(p.actions.iter().all(|a| !matches!(a, Action::Dispatch { .. })), "{:?}", p.actions);
    assert!(sets(&p, "c", "status").is_none() && sets(&p, "c", "reason").is_none(), "{:?}", p.actions);
    assert_eq!(recorded(&p, "c").map(|r| (r.status, r.attempt)), Some((Status::Completed, 2)));
}

#[test]
fn a_status_edit_of_the_ended_artifact_itself_stays_a_request() {
    for keys in ["attempt: 1\n", "completed: 2026-11-22T11:00:00Z\n", "result: {summary: s, artifacts: []}\n"] {
        let o = obs(commission("c", &format!("status: pending\n{keys}")), Some(rec(Status::Completed, 1)));
        let p = decide(&snapshot(vec![o]));
        assert!(dispatched(&p).is_none(), "{keys}");
        assert_eq!(sets(&p, "c", "status"), Some(Value::from("completed")), "{keys}");
        let reason = sets(&p, "c", "reason").and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
        assert!(reason.starts_with("refused status change completed -> pending"), "{keys}: {reason}");
    }
}

#[test]
fn a_dispatch_never_reuses_a_branch_made_elsewhere() {
    // No record in this home (a fresh home, a clone), but attempts 1 and 2 have branches.
    let mut o = obs(commission("c", "status: pending\n"), None);
    o.free_attempt = Some(3);
    let (attempt, branch, events) = dispatched(&decide(&snapshot(vec![o]))).expect("dispatched");
    assert_eq!((attempt, branch.as_str()), (3, "claude/commission/c+3"));
    assert!(events.iter().any(|e| e["kind"] == "attempt-skipped"), "{events:?}");
}

/// Review git #1: a commission the checkout says is pending, which ended on the integration
/// branch (a CI run, a teammate's home) and this home never ran, is left alone: no dispatch,
/// no write to the checkout's file, no record.
#[test]
fn work_that_ended_on_the_integration_branch_is_not_run_again() {
    for (here, there) in [("status: pending\n", Status::Completed), ("", Status::Failed), ("status: blocked\n", Status::Cancelled)] {
        let mut o = obs(commission("c", here), None);
        o.free_attempt = Some(1);
        o.integrated = Some(crate::commission::observe::Integrated {
            kind: crate::activity::kind::Name::Commission,
            id: "c".into(),
            here: o.artifact.status.unwrap_or(Status::Pending).as_str(),
            status: there.as_str(),
            attempt: Some(1),
            integration: "claude/main".into(),
        });
        let p = decide(&snapshot(vec![o]));
        assert!(p.actions.is_empty(), "{here:?}: {:?}", p.actions);
    }
}

fn arb_status() -> impl Strategy<Value = Status> {
    prop::sample::select(Status::ALL.to_vec())
}

fn arb_proc() -> impl Strategy<Value = Proc> {
    prop::sample::select(vec![Proc::NotStarted, Proc::Starting, Proc::Alive, Proc::Dead])
}

prop_compose! {
    fn arb_obs(i: usize)(art in arb_status(), recorded in prop::option::of(arb_status()), proc_ in arb_proc(),
                         missing in any::<bool>(), result in any::<bool>(), desired in 0..3u8, created in 0..50u32) -> Observed {
        let desired = ["", "desired: dispatched\n", "desired: cancelled\n"][desired as usize];
        let id = format!("c{i}");
        let text = format!("---\nworker: scribe\ncreated: 2026-11-22T10:{:02}:00Z\nstatus: {art}\nattempt: 1\n{desired}---\nbody\n", created % 60);
        let c = Commission::parse(&PathBuf::from(format!(".lore/commissions/{id}.md")), &text).expect("parses");
        let mut o = obs(c, recorded.map(|s| rec(s, 1)));
        o.attempt.located.proc = if recorded.is_some() { proc_ } else { Proc::NotStarted };
        if matches!(o.attempt.located.proc, Proc::Alive | Proc::Dead) { o.attempt.located.run = Some(run_info(1)); }
        if missing { o.missing_deps = vec!["x.md".into()]; }
        if result { deliver(&mut o, mail(1, MailBody::Result { summary: "s".into(), artifacts: vec![] })); }
        o
    }
}

fn arb_snapshot() -> impl Strategy<Value = Snapshot> {
    (0..12usize).prop_flat_map(|n| (0..n).map(arb_obs).collect::<Vec<_>>()).prop_map(snapshot)
}

proptest! {
    #![proptest_config(ProptestConfig { timeout: 5_000, ..ProptestConfig::default() })]

    #[test]
    fn never_over_the_cap(s in arb_snapshot()) {
        let p = decide(&s);
        // Running after the plan: planned (or kept) active status, or a process still there.
        let active = s.commissions.iter().filter(|o| {
            let recorded = p.actions.iter().filter(|a| a.id() == o.id()).find_map(|a| match a {
                Action::Update(u) | Action::Dispatch { update: u, .. } | Action::Finish { update: u, .. } | Action::Signal { update: u, .. } => u.record.as_ref().map(|r| r.status),
                _ => None,
            });
            let planned = recorded.or_else(|| sets(&p, o.id(), "status").and_then(|v| v.as_str().and_then(Status::parse)));
            let st = planned.or(o.record.as_ref().map(|r| r.status)).or(o.artifact.status);
            st.is_some_and(|x| x.is_active()) || matches!(o.attempt.located.proc, Proc::Alive | Proc::Starting)
        }).count();
        let new = dispatches(&p).len();
        prop_assert!(new == 0 || active <= s.project.config.commission_cap, "active {active} with {new} new");
    }

    #[test]
    fn only_state_machine_transitions(s in arb_snapshot()) {
        for (from, to) in status_events(&decide(&s)) {
            let (f, t) = (Status::parse(&from).expect("status"), Status::parse(&to).expect("status"));
            prop_assert!(f == t || transition_allowed(f, t) || (f.is_active() && t == Status::Failed) || (f.is_active() && t == Status::Completed),
                "{from} -> {to}");
        }
    }

    #[test]
    fn dispatch_is_fifo(s in arb_snapshot()) {
        let p = decide(&s);
        let chosen = dispatches(&p);
        let key = |id: &str| s.get(id).map(|o| (o.artifact.created().map(str::to_string), o.artifact.id.clone()));
        for w in chosen.windows(2) {
            prop_assert!(key(&w[0]) <= key(&w[1]));
        }
    }

    /// Settled artifacts this home has no record of: one another home ran (its `attempt:`)
    /// plans nothing; one written already over and never run is only logged `created` (issue
    /// 20: every artifact's timeline opens so), its file left as it is.
    #[test]
    fn settled_artifacts_without_records_plan_nothing(
        statuses in prop::collection::vec((prop::sample::select(vec![Status::Completed, Status::Failed, Status::Cancelled]), 0..3u32), 0..20)
    ) {
        let cs = statuses.iter().enumerate().map(|(i, (st, attempt))| {
            let attempt = if *attempt > 0 { format!("attempt: {attempt}\n") } else { String::new() };
            let text = format!("---\nworker: scribe\nstatus: {st}\n{attempt}---\nbody\n");
            obs(Commission::parse(&PathBuf::from(format!(".lore/commissions/c{i}.md")), &text).expect("parses"), None)
        }).collect();
        let p = decide(&snapshot(cs));
        let never_run = statuses.iter().filter(|(_, a)| *a == 0).count();
        prop_assert_eq!(p.actions.len(), never_run, "{:?}", p.actions);
        for a in &p.actions {
            let Action::Update(u) = a else { return Err(TestCaseError::fail(format!("only updates: {a:?}"))) };
            let i: usize = u.id.trim_start_matches('c').parse().expect("an index");
            prop_assert_eq!(statuses[i].1, 0);
            prop_assert!(u.edits.is_empty(), "the file left as it is: {:?}", u);
            prop_assert!(u.record.as_ref().is_none_or(|r| r.status == statuses[i].0 && r.attempt == 0), "{:?}", u);
            prop_assert_eq!(u.events.len(), 1);
            prop_assert_eq!(&u.events[0]["kind"], "created");
            prop_assert_eq!(&u.events[0]["status"], statuses[i].0.as_str());
        }
    }

    #[test]
    fn converged_snapshot_plans_nothing(statuses in prop::collection::vec(prop::sample::select(vec![Status::Completed, Status::Failed, Status::Cancelled, Status::Draft]), 0..20)) {
        let cs = statuses.iter().enumerate().map(|(i, st)| obs(commission(&format!("c{i}"), &format!("status: {st}\n")), Some(rec(*st, 1)))).collect();
        let p = decide(&snapshot(cs));
        prop_assert!(p.actions.is_empty(), "{:?}", p.actions);
        prop_assert!(p.settled);
    }
}

#[test]
fn fifo_survives_a_lost_created_stamp() {
    // `b` was stamped first; then a stash dropped its stamp. It keeps its place ahead of `a`.
    let parse = |id: &str, created: &str| {
        let text = format!("---\nworker: scribe\nstatus: pending\n{created}---\nDo it.\n");
        Commission::parse(&PathBuf::from(format!(".lore/commissions/{id}.md")), &text).expect("parses")
    };
    let a = obs(parse("a", "created: 2026-11-22T10:00:05Z\n"), Some(rec(Status::Pending, 0)));
    let b = obs(parse("b", ""), Some(Record { created: Some("2026-11-22T10:00:01Z".into()), ..rec(Status::Pending, 0) }));
    let mut s = snapshot(vec![a, b]);
    s.project.config.commission_cap = 1;
    let p = decide(&s);
    let dispatched: Vec<&str> =
        p.actions.iter().filter_map(|x| if let Action::Dispatch { update, .. } = x { Some(update.id.as_str()) } else { None }).collect();
    assert_eq!(dispatched, ["b"]);
    let restamped = p.actions.iter().any(|x| match x {
        Action::Update(u) | Action::Dispatch { update: u, .. } if u.id == "b" => {
            u.edits.iter().any(|e| matches!(e, Edit::Set(k, v) if k == "created" && v.as_str() == Some("2026-11-22T10:00:01Z")))
        }
        _ => false,
    });
    assert!(restamped, "the first stamp is written back: {:?}", p.actions);
}

#[test]
fn a_worker_past_its_time_limit_is_failed_and_killed() {
    let running = |extra: &str, started_secs_ago: i64| {
        let mut o = obs(commission("c", &format!("status: in_progress\n{extra}")), Some(rec(Status::InProgress, 1)));
        o.attempt.located.proc = Proc::Alive;
        o.attempt.located.run = Some(RunInfo { started_at: t0() - Duration::seconds(started_secs_ago), ..run_info(1) });
        o.attempt.sample = Some(Sample::default());
        o
    };
    let fails = |o: Observed, cfg_timeout: u64| {
        let mut s = snapshot(vec![o]);
        s.project.config.timeout = std::time::Duration::from_secs(cfg_timeout);
        let p = decide(&s);
        let killed = p.actions.iter().any(|a| matches!(a, Action::Signal { signal: Sig::Kill, .. }));
        let reason = edits_of(&p, "c").iter().find_map(|e| match e {
            Edit::Set(k, v) if k == "reason" => v.as_str().map(str::to_string),
            _ => None,
        });
        (killed, reason)
    };
    // The commission's own limit wins over the project's.
    let (killed, reason) = fails(running("timeout: 90s\n", 100), 3600);
    assert!(killed);
    assert_eq!(reason.as_deref(), Some("timed out: ran longer than 1m 30s (the commission's timeout)"));
    assert_eq!(fails(running("timeout: 90s\n", 80), 3600), (false, None));
    // The project's default applies otherwise; 0s means no limit.
    assert!(fails(running("", 100), 60).0);
    assert_eq!(fails(running("", 100_000), 0), (false, None));
    // The next look is due at the deadline, not only at the stale check.
    let mut s = snapshot(vec![running("timeout: 90s\n", 80)]);
    s.project.config.stale_after = std::time::Duration::from_secs(3600);
    assert_eq!(next_check(&s), Some(std::time::Duration::from_secs(10)));
}

#[test]
fn a_kill_comes_before_the_update_that_goes_with_it() {
    // A failed commission whose lost shim left processes: the kill is planned first, so a
    // failing update (what a worker wrote, say) can never keep it from being carried out.
    let mut o = obs(commission("c", "status: in_progress\nattempt: 1\n"), Some(rec(Status::InProgress, 1)));
    o.attempt.located.proc = Proc::Lingering;
    o.attempt.located.run = Some(run_info(1));
    o.attempt.located.leftovers = vec![4244];
    deliver(&mut o, mail(1, MailBody::Progress { text: "still here".into() }));
    let p = decide(&snapshot(vec![o]));
    let kinds: Vec<&str> = p.actions.iter().map(|a| a.verb()).collect();
    assert_eq!(kinds, ["kill_leftovers", "update"], "{p:?}");
}

#[test]
fn an_unreadable_mailbox_fails_the_ended_attempt_and_never_holds_the_stop() {
    let mut o = obs(commission("c", "status: in_progress\nattempt: 1\n"), Some(rec(Status::InProgress, 1)));
    o.attempt.located.proc = Proc::Dead;
    o.attempt.located.run = Some(run_info(1));
    o.attempt.located.exit = Some(ExitInfo {
        attempt: 1,
        code: Some(0),
        signal: None,
        error: None,
        finished_at: t0(),
        tail: None,
        setup: None,
        checks: Box::default(),
    });
    o.mail_error = Some("opening mailbox /s/events-1.jsonl: Permission denied".into());
    let p = decide(&snapshot(vec![o.clone()]));
    // Its worker is gone: waiting would hold its slot and worktree for ever.
    assert_eq!(sets(&p, "c", "status"), Some(Value::String("failed".into())), "{p:?}");
    let reason = sets(&p, "c", "reason").and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
    assert!(reason.contains("/s/events-1.jsonl") && reason.contains("a result it may hold cannot be read"), "{reason}");
    // Running too long, it is stopped all the same.
    o.attempt.located.proc = Proc::Alive;
    o.attempt.located.exit = None;
    o.artifact = commission("c", "status: in_progress\nattempt: 1\ntimeout: 1s\n");
    o.attempt.located.run = Some(RunInfo { started_at: t0() - Duration::seconds(100), ..run_info(1) });
    let p = decide(&snapshot(vec![o]));
    assert!(p.actions.iter().any(|a| matches!(a, Action::Signal { signal: Sig::Kill, .. })), "{p:?}");
}

#[test]
fn the_mailbox_is_folded_from_its_digest_with_its_position() {
    let mut o = obs(commission("c", "status: in_progress\nattempt: 1\n"), Some(rec(Status::InProgress, 1)));
    o.attempt.located.proc = Proc::Alive;
    o.attempt.located.run = Some(run_info(1));
    for i in 0..12 {
        deliver(&mut o, mail(1, MailBody::Question { text: format!("q{i}") }));
    }
    o.mail_notes.push(("mailbox:1:events-1.jsonl:3:0".into(), "events-1.jsonl line 3: not UTF-8: skipped".into()));
    let p = decide(&snapshot(vec![o]));
    let questions: Vec<String> = match sets(&p, "c", "questions") {
        Some(Value::Sequence(q)) => q.iter().filter_map(|v| v.as_str().map(str::to_string)).collect(),
        other => panic!("{other:?}"),
    };
    assert_eq!(questions.len(), QUESTIONS_SHOWN + 1);
    assert_eq!(questions[0], "(2 earlier questions are in the timeline)");
    assert_eq!(questions.last().map(String::as_str), Some("q11"));
    let events = events_of(&p, "c");
    assert_eq!(events.iter().filter(|e| e["kind"] == "question").count(), 12);
    assert!(events.iter().any(|e| e["kind"] == "anomaly" && e["key"] == "mailbox:1:events-1.jsonl:3:0"), "{events:?}");
    let fold = p.actions.iter().find_map(|a| match a {
        Action::Update(u) => u.fold.clone(),
        _ => None,
    });
    assert_eq!(fold.map(|f| f.questions_total), Some(12), "the digest goes with the update");
}

/// Carry out one action on the least world a commission needs: the artifact (edited as text),
/// the record, the mailbox as folded, and a worker that ends as soon as it starts —
/// submitting a result (`ok`) or crashing.
fn carry_out(o: &mut Observed, text: &mut String, a: &Action, ok: bool) {
    let update = match a {
        Action::Update(u) | Action::Dispatch { update: u, .. } | Action::Finish { update: u, .. } | Action::Signal { update: u, .. } => {
            Some(u)
        }
        _ => None,
    };
    if let Some(u) = update {
        *text = crate::artifact::write::apply(text, &u.edits).expect("the edits apply");
        o.artifact = Commission::parse(&o.artifact.path, text).expect("still a commission");
        if let Some(r) = &u.record {
            o.record = Some(r.clone());
        }
        if let Some(f) = &u.fold {
            o.folded = Some((**f).clone());
            o.fold_changed = false;
        }
        // What the pass folded is read: a mailbox read again holds nothing new.
        o.mail.clear();
    }
    match a {
        Action::Dispatch { attempt, .. } => {
            o.attempt.located.proc = Proc::Dead;
            o.attempt.located.run = Some(run_info(*attempt));
            o.worktree_exists = true;
            o.attempt.located.exit = Some(ExitInfo {
                attempt: *attempt,
                code: Some(if ok { 0 } else { 1 }),
                signal: None,
                error: None,
                finished_at: t0(),
                tail: None,
                setup: None,
                checks: Box::default(),
            });
            o.folded = None;
            if ok {
                deliver(o, mail(*attempt, MailBody::Result { summary: "done".into(), artifacts: vec![] }));
            }
        }
        Action::Finish { .. } | Action::Cleanup { .. } => o.worktree_exists = false,
        Action::Signal { .. } | Action::KillLeftovers { .. } => o.attempt.located.proc = Proc::Dead,
        _ => {}
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: ProptestConfig::default().cases.min(64), timeout: 5_000, ..ProptestConfig::default() })]

    /// New commissions in a world where each worker ends at once, well or badly, with wave
    /// tasks holding some of the slots: carrying out what is decided and deciding again never
    /// runs more than the cap leaves besides the tasks, and comes to rest — nothing to do,
    /// settled — within a bounded number of passes, each commission completed or failed.
    #[test]
    fn carrying_out_the_decisions_converges(outcomes in prop::collection::vec(any::<bool>(), 1..10), cap in 1..4usize, tasks_running in 0..3usize) {
        let mut texts: Vec<String> = Vec::new();
        let mut s = snapshot(outcomes.iter().enumerate().map(|(i, _)| {
            let text = format!("---\ntitle: c{i}\nworker: scribe\ncreated: 2026-11-22T10:00:{i:02}Z\n---\nDo the thing.\n");
            let c = Commission::parse(&PathBuf::from(format!(".lore/commissions/c{i}.md")), &text).expect("parses");
            texts.push(text);
            obs(c, None)
        }).collect());
        s.project.config.commission_cap = cap;
        s.tasks_running = tasks_running;
        let mut passes = 0;
        loop {
            let d = decide(&s);
            if d.actions.is_empty() {
                prop_assert!(d.settled || tasks_running >= cap, "at rest but not settled: {:?}", d.busy);
                break;
            }
            passes += 1;
            prop_assert!(passes <= 100, "no fixed point after 100 passes: {:?}", d.actions);
            for a in &d.actions {
                let i = s.commissions.iter().position(|o| o.id() == a.id()).expect("a known commission");
                carry_out(&mut s.commissions[i], &mut texts[i], a, outcomes[i]);
            }
            let active = s.commissions.iter().filter(|o| o.record.as_ref().is_some_and(|r| r.status.is_active())).count();
            prop_assert!(active <= cap.saturating_sub(tasks_running), "{active} running beside {tasks_running} tasks under cap {cap}");
        }
        for (o, ok) in s.commissions.iter().zip(&outcomes) {
            let want = if tasks_running >= cap { Status::Pending } else if *ok { Status::Completed } else { Status::Failed };
            prop_assert_eq!(o.artifact.status, Some(want), "{}", o.id());
            prop_assert_eq!(o.record.as_ref().map(|r| r.status), Some(want), "{}", o.id());
        }
    }
}

/// What a pass prints of an update says what it did: a change of the runtime record alone is
/// bookkeeping, not reported when it succeeded (it was a bare `record` line), said in words
/// when it failed; other keys are named.
#[test]
fn an_update_is_described_in_words() {
    let mut u = Update::new("a", 0);
    u.record = Some(rec(Status::Pending, 0));
    let a = Action::Update(u.clone());
    assert_eq!(a.describe(), "runtime record updated");
    assert!(!a.reported(true) && a.reported(false));
    u.edits.push(Edit::Set("branch".into(), Value::String("claude/commission/a".into())));
    let a = Action::Update(u);
    assert_eq!(a.describe(), "branch written");
    assert!(a.reported(true));
}

/// An attempt its agent's limit ended waits `pending` with `not_before:` (pure: from the
/// attempt's records alone), a submitted result still wins, and it is dispatched only once
/// `not_before` has passed (or a person asks).
#[test]
fn a_limited_attempt_waits_until_not_before_then_dispatches() {
    let limited = |resets_at: Option<DateTime<Utc>>, streak: u32| {
        let mut o = obs(commission("c", "status: in_progress\nattempt: 1\n"), Some(rec(Status::InProgress, 1)));
        o.attempt.located.proc = Proc::Dead;
        o.attempt.located.exit = Some(ExitInfo { code: Some(1), error: None, finished_at: t0(), ..ExitInfo::error(1, String::new()) });
        o.limited = Some((crate::worker::limits::Limited { said: "HTTP 429".into(), resets_at }, streak));
        o
    };
    let p = decide(&snapshot(vec![limited(None, 1)]));
    assert_eq!(status_events(&p), [("in_progress".to_string(), "pending".to_string())]);
    assert_eq!(sets(&p, "c", "not_before"), Some(Value::from("2026-11-22T12:01:00.000Z")), "a minute's backoff");
    let reason = sets(&p, "c", "reason").and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
    assert!(reason.starts_with("scribe hit a usage or rate limit (HTTP 429)"), "{reason}");
    assert!(!p.actions.iter().any(|a| matches!(a, Action::Dispatch { .. })), "not dispatched at once");
    let p = decide(&snapshot(vec![limited(None, 3)]));
    assert_eq!(sets(&p, "c", "not_before"), Some(Value::from("2026-11-22T12:04:00.000Z")), "the third in a row: 4 minutes");
    let p = decide(&snapshot(vec![limited(Some(t0() + Duration::hours(2)), 1)]));
    assert_eq!(sets(&p, "c", "not_before"), Some(Value::from("2026-11-22T14:00:00.000Z")), "the reset time");
    // A result submitted before the limit: it completes.
    let mut o = limited(None, 1);
    deliver(&mut o, mail(1, MailBody::Result { summary: "done".into(), artifacts: vec![] }));
    assert_eq!(sets(&decide(&snapshot(vec![o])), "c", "status"), Some(Value::from("completed")));
    // Pending with a not_before: waits, then is dispatched (and not_before removed).
    let waiting = |not_before: &str, extra: &str| {
        obs(commission("c", &format!("status: pending\nattempt: 1\nnot_before: {not_before}\n{extra}")), Some(rec(Status::Pending, 1)))
    };
    let p = decide(&snapshot(vec![waiting("2026-11-22T12:01:00Z", "")]));
    assert!(p.actions.is_empty() && p.settled, "settled for now: {:?}", p.actions);
    assert_eq!(next_check(&snapshot(vec![waiting("2026-11-22T12:01:00Z", "")])), Some(std::time::Duration::from_secs(60)));
    let p = decide(&snapshot(vec![waiting("2026-11-22T11:59:00Z", "")]));
    assert!(p.actions.iter().any(|a| matches!(a, Action::Dispatch { attempt: 2, .. })), "{:?}", p.actions);
    assert!(edits_of(&p, "c").contains(&Edit::Remove("not_before".into())));
    let p = decide(&snapshot(vec![waiting("2026-11-22T12:01:00Z", "desired: dispatched\n")]));
    assert!(p.actions.iter().any(|a| matches!(a, Action::Dispatch { .. })), "a person's dispatch starts it sooner");
    let p = decide(&snapshot(vec![waiting("soon", "")]));
    assert!(p.actions.iter().any(|a| matches!(a, Action::Dispatch { .. })), "a not_before that is no time is ignored");
}

/// `max_concurrent: 1`: with one attempt of the package live (here or anywhere in the home),
/// the next waits `blocked`, saying why; of two candidates in one round, one starts.
#[test]
fn max_concurrent_holds_the_excess_blocked() {
    let mut s = snapshot(vec![obs(commission("a", "status: pending\n"), None), obs(commission("b", "status: pending\n"), None)]);
    let cap = |s: &mut Snapshot| {
        let pkg = s.workers.packages.get_mut("scribe").expect("scribe");
        pkg.manifest.max_concurrent = std::num::NonZeroUsize::new(1);
    };
    cap(&mut s);
    let p = decide(&s);
    let dispatched: Vec<&str> = p.actions.iter().filter(|a| matches!(a, Action::Dispatch { .. })).map(|a| a.id()).collect();
    assert_eq!(dispatched, ["a"], "one of two");
    // One live elsewhere in the home: both wait, blocked, saying why.
    s.running_by_package.insert("scribe".into(), 1);
    let p = decide(&s);
    assert!(!p.actions.iter().any(|a| matches!(a, Action::Dispatch { .. })));
    assert_eq!(status_events(&p), [("pending".to_string(), "blocked".to_string()), ("pending".to_string(), "blocked".to_string())]);
    let reason = sets(&p, "a", "reason").and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
    assert!(reason.contains("max_concurrent: 1"), "{reason}");
}

/// A reviewer's run is an attempt of its package: with its `max_concurrent:` reached (a run
/// live elsewhere), the review waits, saying so; with room for one, of two commissions in
/// review one reviewer starts this round, and a dispatch of the package waits behind it.
#[test]
fn a_reviewer_waits_while_its_package_is_at_max_concurrent() {
    let in_review = |id: &str| obs(commission(id, "status: review\nattempt: 1\nreviewers: [critic]\n"), Some(rec(Status::Review, 1)));
    let mut s = snapshot(vec![in_review("a"), in_review("b")]);
    s.workers = Catalog::with(&["scribe", "critic"]);
    let pkg = s.workers.packages.get_mut("critic").expect("critic");
    pkg.manifest.max_concurrent = std::num::NonZeroUsize::new(1);
    let starts = |p: &Decisions| -> Vec<String> {
        p.actions.iter().filter(|a| matches!(a, Action::StartReviewer { .. })).map(|a| a.id().to_string()).collect()
    };
    let p = decide(&s);
    assert_eq!(starts(&p), ["a"], "one of two: {:?}", p.actions);
    let reason = sets(&p, "b", "reason").and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
    assert!(reason.contains("waits for its reviewer critic (1 of 1)") && reason.contains("max_concurrent: 1"), "{reason}");
    // A commission of the reviewer's package waits behind the reviewer started this round.
    let mut c = obs(commission("c", "status: pending\n"), None);
    c.artifact.worker = "critic".into();
    s.commissions.push(c);
    let p = decide(&s);
    assert_eq!(starts(&p), ["a"]);
    assert!(!p.actions.iter().any(|a| matches!(a, Action::Dispatch { .. })), "{:?}", p.actions);
    // One live elsewhere: neither starts.
    s.running_by_package.insert("critic".into(), 1);
    let p = decide(&s);
    assert!(starts(&p).is_empty(), "{:?}", p.actions);
}
