//! `notify:`: the person's command gets one JSON event for each thing that needs a person — a
//! commission's, a wave task's failure, a meeting requested, work in review, a question — once, also when the reconciler is
//! killed right after the failure was written and run again; a command that hangs holds no pass
//! up and is killed after `notify_timeout`.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{pid_alive, wait_for, Project};

/// A notify script in the test's temp dir that writes each event it gets to a file of its own
/// in `dir` (the events told so far: [`events`]).
fn notify_script(p: &Project, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let dir = p.tmp.path().join("told");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let script = p.tmp.path().join("notify.sh");
    std::fs::write(&script, format!("#!/bin/sh\nset -eu\ncd '{}'\n{body}\n", dir.display())).expect("write");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    script
}

/// Each event written to its own file (`event.<pid>`), whole once renamed into place.
const WRITE_EVENT: &str = "cat > .event.$$ && mv .event.$$ event.$$";

fn events(p: &Project) -> Vec<Value> {
    let dir = p.tmp.path().join("told");
    let mut all: Vec<Value> = std::fs::read_dir(&dir)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_string_lossy().starts_with("event."))
                .map(|e| serde_json::from_slice(&std::fs::read(e.path()).expect("read")).expect("one JSON event"))
                .collect()
        })
        .unwrap_or_default();
    all.sort_by_key(|e| e["id"].as_str().unwrap_or("").to_string());
    all
}

fn configure(p: &Project, script: &Path, extra: &str) {
    p.config(&format!("notify: [\"{}\"]\n{extra}", script.display()));
}

/// Every supervisor started has ended (none is left to tell more).
fn quiet(p: &Project) {
    let mark = format!("{}/", p.tmp.path().display());
    wait_for("the notify commands to end", || crate::common::processes_naming(&mark).iter().all(|(_, cmd)| !cmd.contains("notify")));
}

fn failing_worker(p: &Project) {
    p.script_worker("failing", "sparse", "echo 'it broke' >&2\nexit 3");
}

#[test]
fn a_failure_is_told_once_with_its_fields() {
    let p = Project::new(&[]);
    failing_worker(&p);
    configure(&p, &notify_script(&p, WRITE_EVENT), "");
    let id = p.create("failing", "Break things", "Fail.");
    p.settle();
    assert_eq!(p.status(&id), "failed");
    wait_for("the failure to be told", || !events(&p).is_empty());
    // Passes that follow tell nothing again.
    p.ok(&["reconcile", "--once"]);
    p.ok(&["reconcile", "--once"]);
    quiet(&p);
    let told = events(&p);
    assert_eq!(told.len(), 1, "{told:?}");
    let e = &told[0];
    assert_eq!(e["event"], "failed");
    assert_eq!(e["kind"], "commission");
    assert_eq!(e["id"], id.as_str());
    assert_eq!(e["title"], "Break things");
    let name = guild_hall::config::default_project_name(&p.root.canonicalize().expect("root"));
    assert_eq!(e["project"], name.as_str());
    assert!(e["text"].as_str().unwrap_or("").contains("code 3"), "{e}");
    // Its next failure is another event.
    p.ok(&["commission", "redispatch", &id]);
    p.settle();
    wait_for("the second failure to be told", || events(&p).len() == 2);
    p.ok(&["reconcile", "--once"]);
    quiet(&p);
    assert_eq!(events(&p).len(), 2);
}

/// Killed at each step of the failure's update (right after its timeline line, and later), the
/// next pass tells it, once.
#[test]
fn a_failure_is_told_once_when_the_reconciler_is_killed_after_writing_it() {
    for step in 1..=5 {
        let p = Project::new(&[]);
        // It fails once the test says so (a file in its private TMPDIR): after the pass that
        // dispatched it has ended.
        p.script_worker("failing", "sparse", "while [ ! -e \"$TMPDIR/go\" ]; do sleep 0.05; done\nexit 3");
        configure(&p, &notify_script(&p, WRITE_EVENT), "");
        let id = p.create("failing", "Break things", "Fail.");
        p.ok(&["reconcile", "--once"]);
        wait_for("the worker to start", || p.run_info(&id).is_some());
        std::fs::write(p.state_dir(&id).join("tmp/go"), "").expect("go");
        let exit = p.state_dir(&id).join("exit.json");
        wait_for("the worker to exit", || exit.exists());
        let fault = format!("commission-apply:{step}");
        let out = p.cmd().args(["reconcile", "--once"]).env("GUILD_HALL_FAULT", &fault).output().expect("runs");
        assert_eq!(out.status.code(), Some(86), "{fault}: {}", String::from_utf8_lossy(&out.stderr));
        let tl = p.timeline(&id);
        assert!(tl.iter().any(|e| e["kind"] == "status" && e["to"] == "failed"), "{fault}: the failure is written: {tl:?}");
        assert!(events(&p).is_empty(), "{fault}: killed before it told anyone");
        p.settle();
        p.ok(&["reconcile", "--once"]);
        wait_for("the failure to be told", || !events(&p).is_empty());
        quiet(&p);
        let told = events(&p);
        assert_eq!(told.len(), 1, "{fault}: {told:?}");
        assert_eq!(told[0]["id"], id.as_str());
        assert_eq!(p.status(&id), "failed");
    }
}

/// Killed by its pid at whatever point it reached once the failure is in the timeline (the
/// update's other steps, the look that tells it, the start of its supervisor), the next pass
/// leaves it told once.
#[test]
fn a_failure_is_told_once_when_the_reconciler_is_killed_by_its_pid() {
    for _ in 0..3 {
        let p = Project::new(&[]);
        failing_worker(&p);
        configure(&p, &notify_script(&p, WRITE_EVENT), "");
        let id = p.create("failing", "Break things", "Fail.");
        let mut reconciler = p
            .cmd()
            .args(["reconcile", "--once", "--wait", "--timeout", "120s"])
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("spawn");
        let timeline = p.root.join(format!(".lore/commissions/{id}.timeline.jsonl"));
        wait_for("the failure to be written", || std::fs::read_to_string(&timeline).is_ok_and(|t| t.contains("\"to\":\"failed\"")));
        // Our own child, by its pid.
        reconciler.kill().expect("kill");
        reconciler.wait().expect("wait");
        p.settle();
        p.ok(&["reconcile", "--once"]);
        wait_for("the failure to be told", || !events(&p).is_empty());
        quiet(&p);
        assert_eq!(events(&p).len(), 1, "{:?}", events(&p));
    }
}

#[test]
fn a_hanging_notify_command_holds_no_pass_up_and_is_killed() {
    let p = Project::new(&[]);
    failing_worker(&p);
    // The first event's command hangs (its pid kept); later ones are written.
    let script =
        notify_script(&p, &format!("if mkdir hung 2>/dev/null; then echo $$ > hung/pid; {WRITE_EVENT}; exec sleep 600; fi\n{WRITE_EVENT}"));
    configure(&p, &script, "notify_timeout: 30s\n");
    let first = p.create("failing", "First", "Fail.");
    p.settle();
    assert_eq!(p.status(&first), "failed");
    let pid_file = p.tmp.path().join("told/hung/pid");
    wait_for("the first command to start", || std::fs::read_to_string(&pid_file).is_ok_and(|s| s.ends_with('\n')));
    let pid: i64 = std::fs::read_to_string(&pid_file).expect("pid").trim().parse().expect("a pid");
    // The pass went on and ended while the command hangs, and the next pass tells the next
    // failure meanwhile.
    let second = p.create("failing", "Second", "Fail.");
    p.settle();
    assert_eq!(p.status(&second), "failed");
    wait_for("the second failure to be told", || events(&p).iter().any(|e| e["id"] == second.as_str()));
    assert!(pid_alive(pid), "the first command still hangs while later passes run");
    // Killed after its time limit, and said in the project's notify.log.
    wait_for("the hanging command to be killed", || !pid_alive(pid));
    let state = p.state_dir(&first);
    let log = state.parent().and_then(|d| d.parent()).expect("project state").join("notify/notify.log");
    wait_for("the kill to be logged", || std::fs::read_to_string(&log).is_ok_and(|l| l.contains("killed")));
    quiet(&p);
    assert_eq!(events(&p).len(), 2);
}

#[test]
fn a_wave_task_failure_and_a_meeting_request_are_told() {
    let p = Project::new(&["mason", "counsel"]);
    configure(&p, &notify_script(&p, WRITE_EVENT), "");
    // The first look at the project takes what is there as told already.
    p.ok(&["reconcile", "--once"]);
    let plans = p.root.join(".lore/plans");
    std::fs::create_dir_all(&plans).expect("mkdir");
    std::fs::write(plans.join("pl.md"), "---\ntitle: A plan\nwaves:\n  - - {id: bad, worker: mason, prompt: \"fail\"}\n---\n")
        .expect("plan");
    std::fs::write(
        p.root.join(".lore/meetings/talk.md"),
        "---\ntitle: About the parser\nworker: counsel\nstatus: requested\nrequested_by: survey\nagenda: the parser needs a decision\n---\n",
    )
    .expect("meeting");
    p.settle();
    wait_for("both to be told", || events(&p).len() == 2);
    p.ok(&["reconcile", "--once"]);
    quiet(&p);
    let told = events(&p);
    assert_eq!(told.len(), 2, "{told:?}");
    let task = told.iter().find(|e| e["kind"] == "task").expect("the task's failure");
    assert_eq!(task["event"], "failed");
    assert_eq!(task["id"], "pl:exec:wave-1:task-1");
    assert_eq!(task["title"], "A plan");
    let meeting = told.iter().find(|e| e["kind"] == "meeting").expect("the meeting request");
    assert_eq!(meeting["event"], "meeting_requested");
    assert_eq!(meeting["id"], "talk");
    assert_eq!(meeting["title"], "About the parser");
    assert_eq!(meeting["from"], "survey");
    assert_eq!(meeting["text"], "the parser needs a decision");
}

/// Work waiting in review and a worker waiting on a question are each told once (`review`,
/// `question`, the question's text). (A check's send-back, held in review for a pass, says
/// `needs_you: false` in its event: tested with the checks, and the table in the module.)
#[test]
fn review_and_a_question_are_told_once_each() {
    let p = Project::new(&["scribe"]);
    configure(&p, &notify_script(&p, WRITE_EVENT), "");
    let held = "held".to_string();
    std::fs::write(
        p.artifact_path(&held),
        "---\ntitle: Held\nworker: scribe\nreview: required\n---\noutput: .lore/notes/held.md\nWrite it.\n",
    )
    .expect("write");
    p.settle();
    assert_eq!(p.status(&held), "review", "{}", p.artifact(&held));
    let asks = p.create("scribe", "Colour", "wait-for: Which colour?\nWrite the colour down.");
    p.pass_until("the question told", |p| events(p).iter().any(|e| e["event"] == "question"));
    // `answer` runs a pass of its own in the background (no watch runs here): wait for it.
    p.ok(&["answer", &asks, "teal"]);
    crate::common::wait_status(&p, &asks, "completed");
    quiet(&p);
    let told = events(&p);
    assert_eq!(told.len(), 2, "{told:?}");
    let by = |event: &str| told.iter().find(|e| e["event"] == event).cloned().unwrap_or_default();
    assert_eq!((by("review")["kind"].as_str(), by("review")["id"].as_str()), (Some("commission"), Some(held.as_str())), "{told:?}");
    let question = by("question");
    assert_eq!(question["id"], asks.as_str(), "{told:?}");
    assert!(question["text"].as_str().is_some_and(|t| t.contains("Which colour?")), "{told:?}");
}
