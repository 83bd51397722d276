//! A plan's record against what git says: a record lost while this home runs the plan is taken
//! back from the artifact and what the home holds (the task is resumed, its result collected);
//! an older record here never rewrites a plan another home finished back to where it was here.

use super::fixtures::show;
use crate::common::{git, Project};

fn write_plan(p: &Project, id: &str, text: &str) {
    let dir = p.root.join(".lore/plans");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(dir.join(format!("{id}.md")), text).expect("write plan");
}

/// The plan's runtime dir in the home.
fn plan_state(p: &Project, id: &str) -> std::path::PathBuf {
    let project = std::fs::read_dir(p.home.join("state")).expect("state").flatten().find(|e| e.path().is_dir()).expect("project").path();
    project.join("plans").join(id)
}

#[test]
fn a_plan_whose_record_is_removed_while_its_task_runs_here_is_resumed_and_its_result_collected() {
    let p = Project::new(&["mason"]);
    write_plan(&p, "slow", "---\ntitle: slow\nwaves:\n  - - {id: a, worker: mason, prompt: \"sleep: 3\\nwrite: a.txt a\"}\n---\n");
    p.pass_until("the task runs", |p| show(p, "slow")["tasks"][0]["state"] == "running");
    std::fs::remove_file(plan_state(&p, "slow").join("record.json")).expect("remove the record");

    let status = p.ok(&["status"]);
    assert!(!status.contains("another home"), "the home holds its runtime: it is this home's plan:\n{status}");
    let (_, check, _) = p.run(&["check"]);
    assert!(!check.contains("another home"), "{check}");
    assert_eq!(show(&p, "slow")["tasks"][0]["state"], "running", "not queued: its attempt runs here");

    p.pass_until("the plan completes", |p| show(p, "slow")["status"] == "completed");
    assert_eq!(git(&p.root, &["show", "claude/main:a.txt"]).trim(), "a", "the task's result landed");
    let log = git(&p.root, &["log", "claude/main", "--format=%B"]);
    assert_eq!(log.lines().filter(|l| l.trim() == "Guild-Hall-Task: slow:exec:wave-1:task-1").count(), 1, "{log}");
}

#[test]
fn an_older_halted_record_never_rewrites_a_plan_finished_in_another_home() {
    let p = Project::new(&["mason"]);
    let head = "---\ntitle: stuck\nwaves:\n  - - {id: t, worker: mason, prompt: \"fail\"}\n";
    write_plan(&p, "stuck", &format!("{head}---\n"));
    p.settle();
    assert_eq!(show(&p, "stuck")["status"], "halted");

    // What a teammate's retry that finished commits: the plan completed, its task's commit on
    // the integration branch.
    let finished = format!("{head}status: completed\nwave: 1\ntasks:\n  stuck:exec:wave-1:task-1: integrated\n---\n");
    write_plan(&p, "stuck", &finished);
    p.commit_on_integration("t.txt", "t\n", "stuck task t\n\nGuild-Hall-Task: stuck:exec:wave-1:task-1");

    assert_eq!(show(&p, "stuck")["status"], "completed", "status agrees with the artifact");
    let dry = p.ok(&["reconcile", "--once", "--dry-run"]);
    assert!(dry.contains("stuck") && dry.contains("runtime record updated") && !dry.contains("refused"), "only its record is taken: {dry}");
    p.ok(&["reconcile", "--once"]);
    let artifact = std::fs::read_to_string(p.root.join(".lore/plans/stuck.md")).expect("read");
    assert!(artifact.contains("status: completed") && !artifact.contains("refused") && !artifact.contains("failed"), "{artifact}");
    let (_, check, _) = p.run(&["check"]);
    assert!(!check.contains("stuck"), "{check}");
    let record = std::fs::read_to_string(plan_state(&p, "stuck").join("record.json")).expect("record");
    assert!(record.contains("\"completed\""), "this home's record is replaced by the artifact's: {record}");

    // A person's `status: completed` on a halted plan, with no work landed, is still refused.
    write_plan(&p, "stuck2", &format!("{}---\n", head.replace("stuck", "stuck2")));
    p.settle();
    write_plan(
        &p,
        "stuck2",
        &format!("{}status: completed\nwave: 1\ntasks:\n  stuck2:exec:wave-1:task-1: integrated\n---\n", head.replace("stuck", "stuck2")),
    );
    p.ok(&["reconcile", "--once"]);
    let artifact = std::fs::read_to_string(p.root.join(".lore/plans/stuck2.md")).expect("read");
    assert!(artifact.contains("status: halted") && artifact.contains("task-1: failed"), "{artifact}");
}

#[test]
fn an_older_halted_record_never_rewrites_a_plan_another_home_runs_again() {
    let p = Project::new(&["mason"]);
    let head = "---\ntitle: again\nwaves:\n  - - {id: t, worker: mason, prompt: \"fail\"}\n";
    write_plan(&p, "again", &format!("{head}---\n"));
    p.settle();
    assert_eq!(show(&p, "again")["status"], "halted");

    // What a teammate's retry commits while its attempt 2 runs there.
    let timeline = p.root.join(".lore/plans/again.timeline.jsonl");
    let log = std::fs::read_to_string(&timeline).expect("timeline");
    let update = log.lines().find(|l| l.contains("\"key\":\"update:again:exec:wave-1:task-1:1:")).expect("attempt 1's update");
    let second = update.replace("task-1:1:", "task-1:2:").replace("\"attempt\":1", "\"attempt\":2");
    std::fs::write(&timeline, format!("{log}{second}\n")).expect("write");
    let running = format!("{head}status: running\nwave: 1\ntasks:\n  again:exec:wave-1:task-1: running\n---\n");
    write_plan(&p, "again", &running);

    let status = p.ok(&["status"]);
    assert!(status.contains("another home"), "{status}");
    p.ok(&["reconcile", "--once"]);
    let artifact = std::fs::read_to_string(p.root.join(".lore/plans/again.md")).expect("read");
    assert_eq!(artifact, running, "left as the other home wrote it");
}
