//! A plan in a browser: its waves and tasks, each task's state following the plan as it runs
//! (no reload), and each task's log.

use super::browser::{at, Browser};
use super::server::Web;
use crate::common::*;

/// Says hello in its log, waits for `.go` in its worktree (the test's say-so), submits.
const WAITER: &str = "echo \"hello from the task\"\nwhile [ ! -e .go ]; do sleep 0.05; done\nrm -f .go\n\"$GUILD_HALL_BIN\" toolbox submit-result --summary 'did <i>it</i>'";

#[test]
fn a_plans_tasks_and_logs_follow_it_as_it_runs() {
    let p = Project::new(&[]);
    p.script_worker("waiter", "full", WAITER);
    let plans = p.root.join(".lore/plans");
    std::fs::create_dir_all(&plans).expect("mkdir");
    std::fs::write(
        plans.join("pl.md"),
        "---\ntitle: Two at once\nparallelism: 2\nwaves:\n  - - {id: one, worker: waiter, prompt: go}\n    - {id: two, worker: waiter, prompt: go}\n---\n",
    )
    .expect("write plan");
    let s = Web::start(&p, &[]);
    let mut b = Browser::start(&p);
    b.goto(&s.url);
    b.goto(&at(&s, "/plans/pl"));
    b.wait("tr[data-testid=task]");
    b.wait("body[data-live=on]");
    b.eval("window.sameDocument = 'yes'");
    assert_eq!(b.count("section[data-testid=wave]"), 1);
    assert_eq!(b.count("tr[data-testid=task]"), 2);
    // Both at work: their logs say hello.
    wait_for("both tasks at work", || {
        let v = crate::plan::fixtures::show(&p, "pl");
        v["tasks"].as_array().is_some_and(|t| t.iter().all(|t| t["attempt"] == 1))
    });
    b.click("details[data-testid=task-log] summary");
    b.wait_text(Some("details[data-testid=task-log] pre"), "hello from");
    b.screenshot("plan");
    // Each task's worktree is named by its canonical id (`:` as `-`).
    let v = crate::plan::fixtures::show(&p, "pl");
    let worktrees = p.home.join("worktrees").read_dir().expect("worktrees").flatten().next().expect("a project").path();
    for t in v["tasks"].as_array().expect("tasks") {
        let slug = t["task"].as_str().expect("task").replace(':', "-");
        let wt = worktrees.read_dir().expect("worktrees").flatten().map(|e| e.path()).find(|d| d.to_string_lossy().ends_with(&slug));
        std::fs::write(wt.unwrap_or_else(|| panic!("the worktree of {slug}")).join(".go"), "").expect("go");
    }
    b.wait_text(Some("[data-testid=status]"), "completed");
    // Each task's state as `plan show` says it.
    let v = crate::plan::fixtures::show(&p, "pl");
    for t in v["tasks"].as_array().expect("tasks") {
        let (task, state) = (t["task"].as_str().expect("task"), t["state"].as_str().expect("state"));
        b.wait(&format!("tr[data-testid=task][data-task='{task}'][data-state='{state}']"));
    }
    assert!(b.text("#waves").contains("did <i>it</i>"), "the result shown as text");
    assert_eq!(b.count("#waves i"), 0);
    assert_eq!(b.eval("window.sameDocument"), "yes", "followed without a reload");
}
