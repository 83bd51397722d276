//! A wave task its agent's usage limit ended: the task is queued again with its `not_before`
//! (the reset time), the plan waits — running, not halted — and the task runs again after it.

use serde_json::Value;

use super::fixtures::{show, task, write_plan};
use crate::common::*;

/// A task worker cut off by a usage limit on its first attempt (guild-hall's `limit` line,
/// resetting in 4 seconds), and done on the next.
const METERED: &str = r#"if [ "$GUILD_HALL_ATTEMPT" -le 1 ] && grep -q limited "$GUILD_HALL_PROMPT_FILE"; then
  at=$(date -u -d "@$(( $(date +%s) + 4 ))" +%Y-%m-%dT%H:%M:%SZ)
  printf '{"type":"limit","text":"usage limit reached","resets_at":"%s"}\n' "$at"
  exit 1
fi
echo "$GUILD_HALL_TASK" > "out-$GUILD_HALL_TASK.txt"
"$GUILD_HALL_BIN" toolbox submit-result --summary done"#;

#[test]
fn a_limited_wave_task_makes_its_plan_wait_not_halt() {
    let p = Project::new(&[]);
    p.script_worker("metered", "full", METERED);
    write_plan(
        &p,
        "paced",
        "  - - {id: a, worker: metered, prompt: limited}\n    - {id: b, worker: metered, prompt: plain}\n  - - {id: c, worker: metered, prompt: plain}\n",
    );
    p.pass_until("task a to be paused by its limit", |p| p.timeline("paced").iter().any(|e| e["kind"] == "limited"));
    // Queued again with the limit as its reason (read from the timeline: on a loaded machine
    // the reset may have passed and the task run again by now).
    let events = p.timeline("paced");
    let queued = events.iter().find(|e| e["kind"] == "task" && e["label"] == "a" && e["state"] == "queued");
    assert!(queued.and_then(|e| e["reason"].as_str()).is_some_and(|r| r.contains("metered hit a usage or rate limit")), "{events:?}");
    let v = show(&p, "paced");
    assert!(v["status"] == "running" || v["status"] == "completed", "waits, not halted: {v}");
    let a = task(&v, "a");
    assert_ne!(a["state"], "failed", "{a}");
    let limited: Vec<Value> = p.timeline("paced").into_iter().filter(|e| e["kind"] == "limited").collect();
    assert_eq!(limited.len(), 1, "{limited:?}");
    assert!(limited[0]["resets_at"].is_string() && limited[0]["not_before"].is_string(), "{limited:?}");
    let not_before = chrono::DateTime::parse_from_rfc3339(limited[0]["not_before"].as_str().expect("time")).expect("rfc3339");
    p.pass_until("the plan to complete after the reset", |p| show(p, "paced")["status"] == "completed");
    assert!(chrono::Utc::now() >= not_before);
    let events = p.timeline("paced");
    assert!(!events.iter().any(|e| e["kind"] == "task" && e["state"] == "failed"), "no task failed");
    assert!(!events.iter().any(|e| e["kind"] == "status" && e["to"] == "halted"), "the plan never halted");
    // A task's move to running is said with the attempt before it (0 for its first).
    let started_again = events.iter().find(|e| e["kind"] == "task" && e["state"] == "running" && e["label"] == "a" && e["attempt"] == 1);
    let ts = started_again.and_then(|e| e["ts"].as_str()).expect("task a ran a second attempt");
    assert!(chrono::DateTime::parse_from_rfc3339(ts).expect("ts") >= not_before, "after not_before");
    let landed = git(&p.root, &["ls-tree", "-r", "--name-only", "claude/main"]);
    assert_eq!(landed.lines().filter(|l| l.starts_with("out-")).count(), 3, "every task's work landed: {landed}");
}

/// `max_concurrent: 1` in worker.yaml holds wave tasks back too: two tasks of the package in
/// one wave (parallelism to spare) never run at once; the second stays queued, the plan
/// running, and it starts once the first's worker has ended.
#[test]
fn max_concurrent_holds_a_wave_task_back_until_a_slot_frees() {
    let p = Project::new(&[]);
    p.script_worker(
        "solo",
        "full",
        "sleep 3\necho \"$GUILD_HALL_TASK\" > \"out-$GUILD_HALL_TASK.txt\"\n\"$GUILD_HALL_BIN\" toolbox submit-result --summary done",
    );
    let yaml = p.root.join(".lore/workers/solo/worker.yaml");
    let text = std::fs::read_to_string(&yaml).expect("worker.yaml");
    std::fs::write(&yaml, format!("{text}max_concurrent: 1\n")).expect("write");
    write_plan(&p, "single", "  - - {id: a, worker: solo, prompt: one}\n    - {id: b, worker: solo, prompt: two}\n");
    let state = |v: &Value, label: &str| task(v, label)["state"].as_str().unwrap_or_default().to_string();
    p.pass_until("one task to run", |p| {
        let v = show(p, "single");
        state(&v, "a") == "running" || state(&v, "b") == "running"
    });
    // One runs; the other waits queued, the plan running.
    let v = show(&p, "single");
    let (first, second) = if state(&v, "a") == "running" { ("a", "b") } else { ("b", "a") };
    assert_eq!(state(&v, second), "queued", "{v}");
    assert_eq!(v["status"], "running", "{v}");
    p.pass_until("the plan to complete", |p| show(p, "single")["status"] == "completed");
    // Never both at once: the second's worker started once the first's had ended.
    // A task's runtime dir is named by its place in the plan: a is task 1, b task 2.
    let dir = |label: &str| {
        let project = p.home.join("state").read_dir().ok().and_then(|mut d| d.next()).and_then(|e| e.ok()).map(|e| e.path());
        let n = if label == "a" { 1 } else { 2 };
        project.unwrap_or_default().join(format!("plans/single/tasks/single-exec-wave-1-task-{n}"))
    };
    let time = |path: std::path::PathBuf, key: &str| {
        let v: Value = serde_json::from_slice(&std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))).expect("json");
        chrono::DateTime::parse_from_rfc3339(v[key].as_str().expect("time")).expect("rfc3339")
    };
    let ended = time(dir(first).join("exit.json"), "finished_at");
    let started = time(dir(second).join("run.json"), "started_at");
    assert!(started >= ended, "{second} started at {started}, before {first} ended at {ended}");
    let landed = git(&p.root, &["ls-tree", "-r", "--name-only", "claude/main"]);
    assert_eq!(landed.lines().filter(|l| l.starts_with("out-")).count(), 2, "both tasks' work landed: {landed}");
}

/// A wave task whose package has a token budget is stopped by its shim once past it, mid-run:
/// the task fails saying by how much (no rerun: it would spend as much again), and the plan
/// halts as for any failed task.
#[test]
fn a_wave_task_past_its_packages_budget_is_stopped_and_fails_with_the_figures() {
    let p = Project::new(&[]);
    p.script_worker(
        "spender",
        "full",
        r#"echo "half of it" > made.txt
"$GUILD_HALL_BIN" toolbox report-usage --input-tokens 60000 --output-tokens 1000
"$GUILD_HALL_BIN" toolbox report-usage --input-tokens 60000 --output-tokens 400
for i in $(seq 60); do sleep 1; done
"$GUILD_HALL_BIN" toolbox submit-result --summary "never reached""#,
    );
    let yaml = p.root.join(".lore/workers/spender/worker.yaml");
    let text = std::fs::read_to_string(&yaml).expect("worker.yaml");
    std::fs::write(&yaml, format!("{text}resources: {{max_tokens: 100000}}\n")).expect("write");
    write_plan(&p, "spend", "  - - {id: one, worker: spender, prompt: spend}\n");
    p.settle();
    let v = show(&p, "spend");
    assert_eq!(v["status"], "halted", "{v}");
    assert_eq!(task(&v, "one")["state"], "failed", "{v}");
    let events = p.timeline("spend");
    let failed = events.iter().find(|e| e["kind"] == "task" && e["label"] == "one" && e["state"] == "failed");
    let reason = failed.and_then(|e| e["reason"].as_str()).unwrap_or_default();
    assert!(reason.contains("budget exceeded: 121400 of 100000 tokens"), "{events:?}");
    assert_eq!(events.iter().filter(|e| e["kind"] == "budget").count(), 1, "{events:?}");
    assert!(!events.iter().any(|e| e["kind"] == "rerun_required"), "no rerun: {events:?}");
}

/// `max_concurrent: 1` is one cap for every kind: a commission and a wave task of the package
/// both waiting for it when its one attempt ends are never started together — the pass
/// decides commissions first and the plan counts what they start in the same round — and all
/// three runs complete, one after another.
#[test]
fn max_concurrent_holds_across_a_commission_and_a_wave_task_in_one_pass() {
    let p = Project::new(&[]);
    p.script_worker(
        "solo",
        "full",
        "if grep -q long \"$GUILD_HALL_PROMPT_FILE\"; then sleep 6; else sleep 1; fi\necho done > \"out-${GUILD_HALL_TASK:-$GUILD_HALL_ID}.txt\"\n\"$GUILD_HALL_BIN\" toolbox submit-result --summary done",
    );
    let yaml = p.root.join(".lore/workers/solo/worker.yaml");
    let text = std::fs::read_to_string(&yaml).expect("worker.yaml");
    std::fs::write(&yaml, format!("{text}max_concurrent: 1\n")).expect("write");
    let first = p.create("solo", "First", "A long one.");
    p.pass_until("the first commission to run", |p| p.status(&first) == "in_progress");
    // Both wait for the package while the first runs; when it ends, one round sees both free.
    let second = p.create("solo", "Second", "Short.");
    write_plan(&p, "beside", "  - - {id: t, worker: solo, prompt: short}\n");
    p.pass_until("the commission, the first and the plan to complete", |p| {
        [&first, &second].iter().all(|id| p.status(id) == "completed") && show(p, "beside")["status"] == "completed"
    });
    // Their runs, from their shims' own records: none overlaps another.
    let json = |path: std::path::PathBuf| -> Value {
        serde_json::from_slice(&std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))).expect("json")
    };
    let time = |v: &Value, key: &str| chrono::DateTime::parse_from_rfc3339(v[key].as_str().expect("time")).expect("rfc3339");
    let project_state = p.state_dir(&first).parent().and_then(|d| d.parent()).expect("project state").to_path_buf();
    let dirs = [p.state_dir(&first), p.state_dir(&second), project_state.join("plans/beside/tasks/beside-exec-wave-1-task-1")];
    let runs = dirs.map(|d| (time(&json(d.join("run.json")), "started_at"), time(&json(d.join("exit.json")), "finished_at")));
    for (i, a) in runs.iter().enumerate() {
        for b in &runs[i + 1..] {
            assert!(a.1 <= b.0 || b.1 <= a.0, "two ran at once: {runs:?}");
        }
    }
    let landed = git(&p.root, &["ls-tree", "-r", "--name-only", "claude/main"]);
    assert_eq!(landed.lines().filter(|l| l.starts_with("out-")).count(), 3, "all landed: {landed}");
}
