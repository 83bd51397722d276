//! One package for every kind: the unchanged `scribe` example runs as a commission and as a
//! wave task of a plan, names its output by `GUILD_HALL_ID`, and its `submit_result` in a task
//! is recorded as the task's result in the plan's timeline.

use serde_json::Value;

use crate::common::{git, Project};

#[test]
fn the_scribe_runs_unchanged_as_a_commission_and_as_a_wave_task() {
    let p = Project::new(&["scribe"]);
    let id = p.create("scribe", "Notes", "Write the notes.");
    let dir = p.root.join(".lore/plans");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(
        dir.join("notes.md"),
        "---\ntitle: notes\nwaves:\n  - - {id: one, worker: scribe, title: One, prompt: \"Write the wave's notes.\"}\n---\n",
    )
    .expect("write plan");
    p.settle();

    // As a commission: completed, its report named by the id.
    assert_eq!(p.status(&id), "completed", "{}", p.artifact(&id));
    let report = git(&p.root, &["show", &format!("claude/main:.lore/reports/{id}.md")]);
    assert!(report.contains(&format!("Written by the scribe for commission {id}.")), "{report}");

    // As a wave task: completed, its report named by its slug, its result in the plan's log.
    let v: Value = serde_json::from_str(&p.ok(&["plan", "show", "notes", "--json"])).expect("plan json");
    assert_eq!(v["status"], "completed", "{v}");
    let slug = "notes-exec-wave-1-task-1";
    let task = "notes:exec:wave-1:task-1";
    let report = git(&p.root, &["show", &format!("claude/main:.lore/reports/{slug}.md")]);
    assert!(report.contains(&format!("Written by the scribe for task {slug}.")), "{report}");
    let log = v["log"].as_array().expect("log");
    let results: Vec<&Value> = log.iter().filter(|e| e["kind"] == "result").collect();
    assert_eq!(results.len(), 1, "one result recorded: {log:?}");
    assert_eq!(results[0]["task"], task);
    assert_eq!(results[0]["summary"], format!("Wrote .lore/reports/{slug}.md"));
    assert_eq!(results[0]["artifacts"], serde_json::json!([format!(".lore/reports/{slug}.md")]));
    let progress: Vec<&Value> = log.iter().filter(|e| e["kind"] == "progress" && e["task"] == task).collect();
    assert_eq!(progress.len(), 2, "its progress is logged as a commission's is: {log:?}");
    assert!(log.iter().any(|e| e["kind"] == "decision" && e["task"] == task), "{log:?}");

    // Nothing is logged twice by a later pass.
    p.ok(&["reconcile", "--once"]);
    let again: Value = serde_json::from_str(&p.ok(&["plan", "show", "notes", "--json"])).expect("plan json");
    assert_eq!(again["log"].as_array().map(Vec::len), Some(log.len()));
}
