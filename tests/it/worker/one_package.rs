//! One package for every kind: the unchanged `scribe` example runs as a commission and as a
//! wave task of a plan, names its output by `GUILD_HALL_ID`, and its `submit_result` in a task
//! is recorded as the task's result in the plan's timeline.

use serde_json::Value;

use crate::common::{git, Project};

/// A plan `id` of one wave of one task (`one`) for `worker`.
pub(crate) fn one_task_plan(p: &Project, id: &str, worker: &str) {
    let dir = p.root.join(".lore/plans");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let text = format!("---\ntitle: {id}\nwaves:\n  - - {{id: one, worker: {worker}, prompt: \"Do your work.\"}}\n---\n");
    std::fs::write(dir.join(format!("{id}.md")), text).expect("write plan");
}

#[test]
fn the_scribe_runs_unchanged_as_a_commission_and_as_a_wave_task() {
    let p = Project::new(&["scribe"]);
    let id = p.create("scribe", "Notes", "Write the notes.");
    one_task_plan(&p, "notes", "scribe");
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

/// `GUILD_HALL_ID` and `GUILD_HALL_KIND` are set for every kind: a commission, a wave task and
/// a meeting turn each see their own id in them.
#[test]
fn every_kind_sets_the_common_id_variable() {
    use std::os::unix::fs::PermissionsExt;
    let p = Project::new(&[]);
    let dir = p.root.join(".lore/workers/ids");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(
        dir.join("worker.yaml"),
        "name: ids\ndescription: says its id\ncommand: [\"./run.sh\"]\nmeeting: [\"./meet.sh\"]\ncheckout: full\ncapabilities: [commission, meeting]\n",
    )
    .expect("worker.yaml");
    let scripts = [
        (
            "run.sh",
            "#!/bin/sh\nset -eu\nmkdir -p .lore/ids\necho \"$GUILD_HALL_KIND $GUILD_HALL_ID\" > \".lore/ids/$GUILD_HALL_ID.txt\"\n\"$GUILD_HALL_BIN\" toolbox submit-result --summary \"$GUILD_HALL_KIND $GUILD_HALL_ID\" --artifact \".lore/ids/$GUILD_HALL_ID.txt\"\n",
        ),
        (
            "meet.sh",
            "#!/bin/sh\nset -eu\nprintf '{\"type\":\"session\",\"id\":\"s1\"}\\n'\nprintf '{\"type\":\"text_delta\",\"text\":\"I am %s %s.\"}\\n' \"$GUILD_HALL_KIND\" \"$GUILD_HALL_ID\"\nprintf '{\"type\":\"turn_end\"}\\n'\n",
        ),
    ];
    for (name, text) in scripts {
        std::fs::write(dir.join(name), text).expect("script");
        std::fs::set_permissions(dir.join(name), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let id = p.create("ids", "Who am I", "Say your id.");
    one_task_plan(&p, "who", "ids");
    p.settle();
    let said = |path: &str| git(&p.root, &["show", &format!("claude/main:.lore/ids/{path}.txt")]);
    assert_eq!(said(&id), format!("commission {id}\n"));
    assert_eq!(said("who-exec-wave-1-task-1"), "task who-exec-wave-1-task-1\n");
    let out = p.ok(&["meeting", "start", "--worker", "ids", "--title", "Talk", "--agenda", "ids", "hello"]);
    assert!(out.contains("I am meeting talk."), "{out}");
}
