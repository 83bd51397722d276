//! The one pass over the three kinds, as `watch` drives it: a failing action is backed off by
//! its kind and id whatever its kind, and a failure of one kind's `x` leaves another kind's
//! `x` alone.

use serde_json::Value;

use crate::common::{wait_for, Project, Service};

/// A meeting whose every action fails for real: its timeline path is a directory, so the
/// first write of any action (the timeline) fails.
fn failing_meeting(p: &Project, id: &str) {
    let dir = p.root.join(".lore/meetings");
    std::fs::create_dir_all(dir.join(format!("{id}.timeline.jsonl"))).expect("mkdir in the timeline's place");
    std::fs::write(dir.join(format!("{id}.md")), "---\nworker: counsel\nstatus: requested\n---\n").expect("meeting");
}

/// The watcher's log lines for actions: (id, action, ok), in order.
fn actions(svc: &Service) -> Vec<(String, String, bool)> {
    svc.log()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| {
            let f = &v["fields"];
            let (id, action) = (f["id"].as_str()?, f["action"].as_str()?);
            Some((id.to_string(), action.to_string(), f["error"].is_null()))
        })
        .collect()
}

fn meeting_failures(log: &[(String, String, bool)], id: &str) -> usize {
    log.iter().filter(|(i, a, ok)| i == id && a.starts_with("meeting-") && !ok).count()
}

/// Where commission `id`'s dispatch is in the log, once it is there.
fn dispatched(log: &[(String, String, bool)], id: &str) -> Option<usize> {
    log.iter().position(|(i, a, ok)| i == id && a == "dispatch" && *ok)
}

/// The first failure, then the commission `id` arrives: wait for its dispatch and count the
/// meeting's failures logged before it.
fn failures_before_dispatch(p: &Project, svc: &Service, meeting: &str, commission: &str) -> usize {
    wait_for("the meeting's action to fail", || meeting_failures(&actions(svc), meeting) >= 1);
    assert_eq!(meeting_failures(&actions(svc), meeting), 1, "{}", svc.log());
    p.write_commission(commission, "---\nworker: scribe\n---\noutput: .lore/out.md\nWrite.\n");
    wait_for("the commission's dispatch", || dispatched(&actions(svc), commission).is_some());
    let log = actions(svc);
    let at = dispatched(&log, commission).unwrap_or(log.len());
    meeting_failures(&log[..at], meeting)
}

/// A meeting's failed action is backed off like a commission's: the pass that a new commission
/// brings (right after the failure) leaves the meeting alone, and it is tried again later.
#[test]
fn a_failing_meeting_action_is_backed_off() {
    let p = Project::new(&["counsel", "scribe"]);
    failing_meeting(&p, "talk");
    let svc = Service::start(&p, &[], &[]);
    assert_eq!(failures_before_dispatch(&p, &svc, "talk", "other"), 1, "the meeting was retried at once: {}", svc.log());
    // Backed off, not given up: it is tried again once its backoff runs out.
    wait_for("the meeting's action to be retried", || meeting_failures(&actions(&svc), "talk") >= 2);
    assert_eq!(svc.stop(), Some(0));
}

/// A meeting `x` whose action fails does not hold back commission `x`: the same id in another
/// kind is another thing.
#[test]
fn a_failed_meeting_does_not_hold_back_the_commission_of_the_same_id() {
    let p = Project::new(&["counsel", "scribe"]);
    failing_meeting(&p, "x");
    let svc = Service::start(&p, &[], &[]);
    assert_eq!(failures_before_dispatch(&p, &svc, "x", "x"), 1, "commission x waited for meeting x's backoff: {}", svc.log());
    crate::common::wait_status(&p, "x", "completed");
    assert_eq!(svc.stop(), Some(0));
}

/// One pass decides every kind first and then acts in the order the pass always had:
/// meetings, plans, then commissions. A meeting opened in the same pass as a dispatch is
/// said (and branched from the integration branch) before the dispatch.
#[test]
fn a_pass_opens_meetings_before_it_dispatches() {
    let p = Project::new(&["counsel", "scribe"]);
    std::fs::create_dir_all(p.root.join(".lore/meetings")).expect("mkdir");
    std::fs::write(p.root.join(".lore/meetings/talk.md"), "---\nworker: counsel\nstatus: open\n---\nHello\n").expect("meeting");
    p.write_commission("job", "---\nworker: scribe\n---\noutput: .lore/out.md\nWrite.\n");
    let out = p.ok(&["reconcile", "--once"]);
    let at = |id: &str| out.lines().position(|l| l.starts_with(id)).unwrap_or_else(|| panic!("{id} in {out}"));
    assert!(at("talk") < at("job"), "the meeting acted first: {out}");
}

/// `--wait` waits for the wave tasks still at work, whatever failed elsewhere: a meeting's
/// failed action does not make it give up while a plan's task runs.
#[test]
fn wait_waits_for_a_plan_though_a_meeting_failed() {
    let p = Project::new(&["counsel", "mason"]);
    failing_meeting(&p, "talk");
    std::fs::create_dir_all(p.root.join(".lore/plans")).expect("mkdir");
    std::fs::write(
        p.root.join(".lore/plans/slow.md"),
        "---\ntitle: slow\nwaves:\n  - - {id: one, worker: mason, prompt: \"sleep: 2\\nwrite: a.txt a\"}\n---\n",
    )
    .expect("plan");
    let (_, out, err) = p.run(&["reconcile", "--once", "--wait", "--timeout", "120s"]);
    let v: Value = serde_json::from_str(&p.ok(&["plan", "show", "slow", "--json"])).expect("plan json");
    assert_eq!(v["status"], "completed", "--wait gave up early:\n{out}\n{err}");
}

/// A plan's observation failing is said as it always was, without the commissions'
/// `observing the project:`.
#[test]
fn a_plans_observe_error_keeps_its_words() {
    let p = Project::new(&["scribe"]);
    std::fs::write(p.root.join(".lore/plans"), "not a directory\n").expect("plans as a file");
    let (code, out, err) = p.run(&["reconcile", "--once"]);
    assert_ne!(code, 0, "{out}\n{err}");
    assert!(!err.contains("observing the project"), "{err}");
}

/// The fold after a meeting's turn drives meetings only: it takes the project lock, not the
/// home-wide dispatch lock that another project's pass may hold for minutes.
#[test]
fn a_meeting_turn_does_not_wait_for_the_dispatch_lock() {
    let p = Project::new(&["counsel"]);
    std::fs::create_dir_all(p.root.join(".lore/meetings")).expect("mkdir");
    std::fs::write(p.root.join(".lore/meetings/talk.md"), "---\nworker: counsel\nstatus: open\n---\nHello\n").expect("meeting");
    p.ok(&["reconcile", "--once"]);
    let file = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(p.home.join("dispatch.lock")).expect("lock file");
    let held = nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock).map_err(|(_, e)| e).expect("dispatch lock");
    let mut child = p.cmd().args(["meeting", "send", "talk", "hello"]).stdout(std::process::Stdio::null()).spawn().expect("send");
    let mut status = None;
    wait_for("the turn to end with the dispatch lock held elsewhere", || {
        status = child.try_wait().expect("try_wait");
        status.is_some()
    });
    drop(held);
    assert_eq!(status.and_then(|s| s.code()), Some(0));
}

/// A commission's heartbeat is never said, even when writing it failed (a failed entry would
/// fail the pass and back the commission off); a plan's beats are not listed by a dry run.
#[test]
fn heartbeats_are_said_by_each_kinds_rule() {
    let p = Project::new(&["sleeper", "mason"]);
    p.write_commission("nap", "---\nworker: sleeper\n---\nsleep: 8\n");
    std::fs::create_dir_all(p.root.join(".lore/plans")).expect("mkdir");
    std::fs::write(
        p.root.join(".lore/plans/slow.md"),
        "---\ntitle: slow\nwaves:\n  - - {id: one, worker: mason, prompt: \"chat: 8\\nwrite: a.txt a\"}\n---\n",
    )
    .expect("plan");
    p.ok(&["reconcile", "--once"]);
    let beat = p.state_dir("nap").join("heartbeat");
    let _ = std::fs::remove_file(&beat);
    std::fs::create_dir_all(beat.join("in-the-way")).expect("a directory in the heartbeat's place");
    // The task prints all the time: its signs of life change between any two looks.
    for _ in 0..10 {
        let dry = p.ok(&["reconcile", "--dry-run"]);
        assert!(!dry.contains("heartbeat of"), "a plan's beat listed: {dry}");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let (code, out, err) = p.run(&["reconcile", "--once"]);
    assert!(!out.contains("heartbeat"), "{out}\n{err}");
    assert_eq!(code, 0, "{out}\n{err}");
    std::fs::remove_dir_all(&beat).expect("out of the way");
    p.settle();
    assert_eq!(p.status("nap"), "completed");
}
