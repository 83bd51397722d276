//! Applying an update (`activity::apply`), the same for every kind: a pass killed after each
//! of its steps (`GUILD_HALL_FAULT=<kind>-apply:<step>`: after the timeline, the intent, the
//! artifact, the record, the folds) is finished by the next, for a commission, a meeting and a
//! plan: the artifact says what the record says, nothing is refused that nobody asked for, no
//! timeline key is written twice, and no intent is left behind. (The plan killed between its
//! artifact and its record, in the order it had before, never got past `draft`.)

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{git, Project};

const STEPS: u32 = 5;

/// The state dir of `kind`'s `id` (under the only project in this home).
fn state(p: &Project, kind: &str, id: &str) -> PathBuf {
    let project = std::fs::read_dir(p.home.join("state"))
        .expect("state")
        .filter_map(|e| e.ok())
        .find(|e| e.path().is_dir())
        .expect("a project's state")
        .path();
    project.join(kind).join(id)
}

fn record(p: &Project, kind: &str, id: &str) -> Value {
    let path = state(p, kind, id).join("record.json");
    serde_json::from_slice(&std::fs::read(&path).expect("record")).expect("record json")
}

/// The artifact's top-level `status:`.
fn status_in(artifact: &Path) -> String {
    let text = std::fs::read_to_string(artifact).expect("artifact");
    text.lines().find_map(|l| l.strip_prefix("status:")).map(|s| s.trim().to_string()).unwrap_or_default()
}

/// Artifact, record and timeline agree: the same status, every key once, nothing refused,
/// no update half-applied.
fn agree(p: &Project, kind: &str, id: &str, artifact: &Path, fault: &str) {
    let rec = record(p, kind, id);
    assert_eq!(rec["status"].as_str(), Some(status_in(artifact).as_str()), "{fault}: the record and the artifact disagree");
    let log = std::fs::read_to_string(artifact.with_extension("timeline.jsonl")).expect("timeline");
    let mut keys: BTreeMap<String, usize> = BTreeMap::new();
    for line in log.lines() {
        let e: Value = serde_json::from_str(line).expect("timeline line");
        assert_ne!(e["kind"], "refused", "{fault}: a write of guild-hall's own read as a request: {e}");
        *keys.entry(e["key"].as_str().unwrap_or("").to_string()).or_default() += 1;
    }
    let twice: Vec<_> = keys.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "{fault}: timeline keys written twice: {twice:?}\n{log}");
    assert_eq!(intents(p), Vec::<String>::new(), "{fault}: an intent left behind");
}

/// The intents a killed pass left (`intents/<kind>.<id>.json` in the project's state dir).
fn intents(p: &Project) -> Vec<String> {
    let dir = state(p, "intents", "");
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    names.sort();
    names
}

/// Killed after `step`: from the intent on (step 2), the update is left half-applied for the
/// next pass to finish.
fn left_half_applied(p: &Project, step: u32, intent: &str, fault: &str) {
    let want: Vec<String> = if step >= 2 { vec![intent.to_string()] } else { Vec::new() };
    assert_eq!(intents(p), want, "{fault}");
}

/// A person's save after the kill, made on the artifact as the killed pass left it (a line
/// added to the body): after the artifact's step it is built on our text, so the rest of the
/// update must still be written (it was dropped, and the record fell behind the artifact).
fn save_on_top(artifact: &Path) {
    let text = std::fs::read_to_string(artifact).expect("artifact");
    std::fs::write(artifact, format!("{text}\nA line of theirs.\n")).expect("their save");
}

fn commission_killed_at(step: u32, saved: bool) {
    let fault = format!("commission-apply:{step}");
    let p = Project::new(&["scribe"]);
    let id = p.create("scribe", "Applied", "output: .lore/out.md\nWrite.");
    // The first update that gets that far: the dispatch's (pending -> dispatched, attempt 1).
    p.pass_until_fault(&fault);
    left_half_applied(&p, step, &format!("commission.{id}.json"), &fault);
    if saved {
        save_on_top(&p.artifact_path(&id));
    }
    p.settle();
    assert_eq!(p.status(&id), "completed", "{fault}");
    let started = std::fs::read_to_string(p.state_dir(&id).join("attempt-1.log")).unwrap_or_default().matches("scribe: starting").count();
    assert_eq!(started, 1, "{fault}: exactly one worker ran");
    assert!(!state(&p, "commissions", &id).join("attempt-2.log").exists(), "{fault}: one attempt");
    let merges = git(&p.root, &["log", "--format=%b", "claude/main"]).matches(&format!("Guild-Hall-Commission: {id} attempt 1")).count();
    assert_eq!(merges, 1, "{fault}");
    agree(&p, "commissions", &id, &p.artifact_path(&id), &fault);
}

fn meeting_killed_at(step: u32, saved: bool) {
    let fault = format!("meeting-apply:{step}");
    let p = Project::new(&["counsel"]);
    let path = p.root.join(".lore/meetings/f.md");
    std::fs::create_dir_all(path.parent().expect("dir")).expect("mkdir");
    std::fs::write(&path, "---\nworker: counsel\nstatus: open\n---\n").expect("write");
    // The first update that gets that far: the opening's (the record open, the branch written).
    p.pass_until_fault(&fault);
    left_half_applied(&p, step, "meeting.f.json", &fault);
    if saved {
        save_on_top(&path);
        // The opening decided again would hide a dropped one: the next pass dies after the
        // timeline of any update it makes, so the record is there only if settling wrote it.
        let out = p.cmd().args(["reconcile", "--once"]).env("GUILD_HALL_FAULT", "meeting-apply:1").output().expect("runs");
        assert!(matches!(out.status.code(), Some(0 | 86)), "{fault}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(state(&p, "meetings", "f").join("record.json").exists(), "{fault}: the landed opening was dropped");
    }
    p.ok(&["reconcile", "--once"]);
    assert_eq!(status_in(&path), "open", "{fault}");
    let text = std::fs::read_to_string(&path).expect("read");
    assert!(text.contains("branch: claude/meeting/f"), "{fault}: the opening's edits are in: {text}");
    agree(&p, "meetings", "f", &path, &fault);
    // And closed after that, once.
    p.ok(&["meeting", "send", "f", "hi\nlink: .lore/f.md"]);
    let text = std::fs::read_to_string(&path).expect("read");
    std::fs::write(&path, text.replace("status: open", "status: closed")).expect("close");
    p.ok(&["reconcile", "--once"]);
    assert_eq!(status_in(&path), "closed", "{fault}");
    assert_eq!(git(&p.root, &["log", "--format=%B", "claude/main"]).matches("Guild-Hall-Meeting: f").count(), 1, "{fault}");
    agree(&p, "meetings", "f", &path, &fault);
}

fn plan_killed_at(step: u32, saved: bool) {
    let fault = format!("plan-apply:{step}");
    let p = Project::new(&["mason"]);
    let path = p.root.join(".lore/plans/k.md");
    std::fs::create_dir_all(path.parent().expect("dir")).expect("mkdir");
    std::fs::write(
        &path,
        "---\ntitle: k\nparallelism: 2\nwaves:\n  - - {id: a, worker: mason, prompt: \"write: a.txt a\"}\n    - {id: b, worker: mason, prompt: \"write: b.txt b\"}\n---\n",
    )
    .expect("plan");
    // The first update that gets that far: the plan's start (pending -> running, a status
    // guild-hall writes forward, which a person may not).
    p.pass_until_fault(&fault);
    left_half_applied(&p, step, "plan.k.json", &fault);
    if saved {
        save_on_top(&path);
    }
    p.settle();
    assert_eq!(status_in(&path), "completed", "{fault}");
    let log = git(&p.root, &["log", "--format=%B", "claude/main"]);
    assert_eq!(log.matches("Guild-Hall-Task: k:exec:wave-1:task-1").count(), 1, "{fault}: {log}");
    assert_eq!(log.matches("Guild-Hall-Task: k:exec:wave-1:task-2").count(), 1, "{fault}: {log}");
    agree(&p, "plans", "k", &path, &fault);
}

macro_rules! killed_at_each_step {
    ($($name:ident: $run:ident($step:expr, $saved:expr);)*) => {$(
        #[test]
        fn $name() {
            assert!($step <= STEPS);
            $run($step, $saved);
        }
    )*};
}

killed_at_each_step! {
    commission_after_the_timeline: commission_killed_at(1, false);
    commission_after_the_intent: commission_killed_at(2, false);
    commission_after_the_artifact: commission_killed_at(3, false);
    commission_after_the_record: commission_killed_at(4, false);
    commission_after_the_folds: commission_killed_at(5, false);
    meeting_after_the_timeline: meeting_killed_at(1, false);
    meeting_after_the_intent: meeting_killed_at(2, false);
    meeting_after_the_artifact: meeting_killed_at(3, false);
    meeting_after_the_record: meeting_killed_at(4, false);
    meeting_after_the_folds: meeting_killed_at(5, false);
    plan_after_the_timeline: plan_killed_at(1, false);
    plan_after_the_intent: plan_killed_at(2, false);
    plan_after_the_artifact: plan_killed_at(3, false);
    plan_after_the_record: plan_killed_at(4, false);
    plan_after_the_folds: plan_killed_at(5, false);
    commission_after_the_artifact_then_a_save: commission_killed_at(3, true);
    meeting_after_the_artifact_then_a_save: meeting_killed_at(3, true);
    plan_after_the_artifact_then_a_save: plan_killed_at(3, true);
}

/// A meeting's close writes its notes and the record saying so as one update: killed after
/// each step of it (and of the close's last update, the next to reach that step), the next
/// pass closes the meeting with the notes written once, merged once, and the record agreeing.
fn meeting_close_killed_at(step: u32) {
    let fault = format!("meeting-apply:{step}");
    let p = Project::new(&["counsel"]);
    let path = p.root.join(".lore/meetings/f.md");
    std::fs::create_dir_all(path.parent().expect("dir")).expect("mkdir");
    std::fs::write(&path, "---\nworker: counsel\nstatus: open\n---\n").expect("write");
    p.ok(&["reconcile", "--once"]);
    p.ok(&["meeting", "send", "f", "hi\nlink: .lore/f.md"]);
    let text = std::fs::read_to_string(&path).expect("read");
    std::fs::write(&path, text.replace("status: open", "status: closed")).expect("close");
    // The notes' update dies first; then the next update to get that far (the close's own,
    // from step 2 on: at step 1 the notes' again).
    for kill in 0..2 {
        let out = p.cmd().args(["reconcile", "--once"]).env("GUILD_HALL_FAULT", &fault).output().expect("runs");
        match out.status.code() {
            Some(86) => {}
            Some(0) if kill > 0 => break,
            other => panic!("{fault}: {other:?} {}", String::from_utf8_lossy(&out.stderr)),
        }
        if kill == 0 {
            left_half_applied(&p, step, "meeting.f.json", &fault);
            if step >= 2 {
                // The notes and the record that says they are written, in one intent.
                let intent: Value =
                    serde_json::from_slice(&std::fs::read(state(&p, "intents", "").join("meeting.f.json")).expect("intent")).expect("json");
                let notes = intent["text"].as_str().unwrap_or("").contains("\nnotes: ");
                assert!(notes && intent["record"]["value"]["notes_written"] == true, "{fault}: {intent}");
            }
        }
    }
    p.ok(&["reconcile", "--once"]);
    assert_eq!(status_in(&path), "closed", "{fault}");
    let text = std::fs::read_to_string(&path).expect("read");
    assert_eq!(text.matches("notes:").count(), 1, "{fault}: {text}");
    assert!(text.contains(".lore/f.md"), "{fault}: the notes are in: {text}");
    assert_eq!(record(&p, "meetings", "f")["notes_written"], true, "{fault}");
    assert_eq!(git(&p.root, &["log", "--format=%B", "claude/main"]).matches("Guild-Hall-Meeting: f").count(), 1, "{fault}");
    agree(&p, "meetings", "f", &path, &fault);
}

#[test]
fn meeting_close_killed_at_each_step() {
    for step in 1..=STEPS {
        meeting_close_killed_at(step);
    }
}

/// A stop is never left out, not even for an artifact whose intent settling could not finish;
/// but the stop's own update must not overwrite that intent (the only record of what a killed
/// update left) nor write anything decided on the half-applied state: it waits, and says why.
#[test]
fn a_stop_never_overwrites_an_intent_that_could_not_be_settled() {
    let p = Project::new(&["sleeper"]);
    let id = p.create("sleeper", "Long", "sleep: 300\nTake a while.");
    p.pass_until("the worker runs", |p| p.status(&id) == "in_progress");
    let worker = p.run_info(&id).expect("run")["worker_pid"].as_i64().expect("pid");
    let bad = state(&p, "intents", &format!("commission.{id}.json"));
    std::fs::create_dir_all(bad.parent().expect("intents dir")).expect("mkdir");
    std::fs::write(&bad, "{ not json").expect("a corrupt intent");
    let text = p.artifact(&id).replace("status: in_progress", "status: cancelled");
    std::fs::write(p.artifact_path(&id), text).expect("cancel");
    let (_, out, err) = p.run(&["reconcile", "--once"]);
    assert_eq!(std::fs::read_to_string(&bad).expect("the intent is still there"), "{ not json", "{out}\n{err}");
    // The stop itself still went out: the worker is stopped all the same.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while crate::common::pid_alive(worker) {
        assert!(std::time::Instant::now() < deadline, "the worker was not stopped: {out}\n{err}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Killed after the artifact landed (`desired: cancelled` carried out), a person then asks for
/// a re-dispatch by writing `status: pending`: that is a request like any other, never taken
/// for guild-hall's own write not seen yet (the record an update writes carries no `prev`).
#[test]
fn a_request_after_a_landed_kill_is_carried_out() {
    let p = Project::new(&["scribe"]);
    p.write_commission("c", "---\nworker: scribe\nstatus: pending\ndesired: cancelled\n---\noutput: .lore/c-out.md\nWrite.\n");
    p.pass_until_fault("commission-apply:3");
    assert_eq!(p.status("c"), "cancelled");
    let text = p.artifact("c").replace("status: cancelled", "status: pending");
    std::fs::write(p.artifact_path("c"), text).expect("a re-dispatch");
    p.settle();
    assert_eq!(p.status("c"), "completed", "{}", p.artifact("c"));
}
