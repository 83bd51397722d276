//! Orphans: what is left of commissions and meetings whose artifact is gone, listed by
//! `status` and `check`, and removed by `gc` only when provably ours and unreferenced.

use crate::common::*;
use serde_json::Value;

#[test]
fn orphans_are_listed_and_collected_but_unmerged_work_only_on_request() {
    let p = Project::new(&["scribe"]);
    let done = p.create("scribe", "Done", "output: .lore/done.md\nDo.");
    let kept = p.create("scribe", "Kept", "output: .lore/kept.md\nDo.");
    let alive = p.create("scribe", "Alive", "output: .lore/alive.md\nDo.");
    p.settle();
    for id in [&done, &kept, &alive] {
        assert_eq!(p.status(id), "completed");
    }
    // Work on `kept`'s branch that is merged nowhere.
    let wt = p.tmp.path().join("extra");
    git(&p.root, &["worktree", "add", "-q", wt.to_str().expect("utf8"), "claude/commission/kept"]);
    std::fs::write(wt.join("extra.txt"), "more\n").expect("write");
    git(&wt, &["add", "-A"]);
    git(&wt, &["commit", "-q", "-m", "more work"]);
    git(&p.root, &["worktree", "remove", wt.to_str().expect("utf8")]);
    // The artifacts go (as `rm` would), their runtime dirs and branches stay.
    for id in [&done, &kept] {
        std::fs::remove_file(p.artifact_path(id)).expect("rm");
    }
    let (done_state, kept_state) = (p.state_dir(&done), p.state_dir(&kept));
    assert!(done_state.exists() && kept_state.exists());

    // status: marked orphaned, with what is left; the streamed array is exactly the
    // pretty-printed whole.
    let text = p.ok(&["status", "--json"]);
    let rows: Value = serde_json::from_str(&text).expect("json");
    assert_eq!(text, format!("{}\n", serde_json::to_string_pretty(&rows).expect("pretty")));
    let filtered: Value = serde_json::from_str(&p.ok(&["status", "--json", "--status", "completed", "--worker", "scribe"])).expect("json");
    assert_eq!(filtered.as_array().map(|a| a.iter().map(|r| r["id"].clone()).collect::<Vec<_>>()), Some(vec![Value::from("alive")]));
    let none: Value = serde_json::from_str(&p.ok(&["status", "--json", "--worker", "nobody"])).expect("json");
    assert_eq!(none, serde_json::json!([]));
    assert_ne!(p.run(&["status", "--status", "finished"]).0, 0, "an unknown status is refused");
    let orphaned: Vec<&Value> = rows.as_array().expect("rows").iter().filter(|r| r["status"] == "orphaned").collect();
    assert_eq!(orphaned.iter().map(|r| r["id"].as_str().unwrap_or("")).collect::<Vec<_>>(), ["done", "kept"], "{rows}");
    assert!(orphaned[1]["reason"].as_str().unwrap_or("").contains("branch claude/commission/kept (unmerged commits)"), "{rows}");
    let only: Value = serde_json::from_str(&p.ok(&["status", "--json", "--status", "orphaned"])).expect("json");
    assert_eq!(only.as_array().map(Vec::len), Some(2));
    // check: reported, not failed on.
    let out = p.ok(&["check"]);
    assert!(out.contains("done.md:1:1: orphaned: its commission artifact is gone, left: runtime dir"), "{out}");

    // --dry-run: says everything, removes nothing.
    let out = p.ok(&["gc", "--dry-run"]);
    assert!(out.contains(&format!("would remove runtime dir {} (commission done)", done_state.display())), "{out}");
    assert!(out.contains("would remove branch claude/commission/done (commission done)"), "{out}");
    assert!(out.contains("kept commission kept: orphaned:") && out.contains("--include-unmerged"), "{out}");
    assert!(done_state.exists() && p.branches().contains(&"claude/commission/done".to_string()));

    // gc: the merged orphan goes, path by path; the unmerged one stays; the live one is untouched.
    let out = p.ok(&["gc"]);
    assert!(out.contains(&format!("removed runtime dir {}", done_state.display())), "{out}");
    assert!(out.contains("removed branch claude/commission/done"), "{out}");
    assert!(!done_state.exists());
    let branches = p.branches();
    assert!(!branches.contains(&"claude/commission/done".to_string()), "{branches:?}");
    assert!(branches.contains(&"claude/commission/kept".to_string()) && kept_state.exists(), "{branches:?}");
    assert!(branches.contains(&"claude/commission/alive".to_string()) && p.state_dir(&alive).exists(), "{branches:?}");

    // --include-unmerged: that one too, said in JSON.
    let v: Value = serde_json::from_str(&p.ok(&["gc", "--include-unmerged", "--json"])).expect("json");
    let removed: Vec<String> = v["removed"].as_array().expect("removed").iter().map(|r| format!("{} {}", r["what"], r["target"])).collect();
    assert!(removed.contains(&"\"branch\" \"claude/commission/kept\"".to_string()), "{removed:?}");
    assert!(!kept_state.exists() && !p.branches().contains(&"claude/commission/kept".to_string()));
    assert!(p.branches().contains(&"claude/commission/alive".to_string()));
    assert_eq!(p.ok(&["gc"]).trim(), "no orphans");
    let rows: Value = serde_json::from_str(&p.ok(&["status", "--json"])).expect("json");
    assert!(rows.as_array().expect("rows").iter().all(|r| r["status"] != "orphaned"), "{rows}");
}

#[test]
fn meeting_orphans_are_collected_too() {
    let p = Project::new(&["counsel"]);
    p.ok(&["meeting", "start", "--worker", "counsel", "--id", "talk", "hello"]);
    p.ok(&["meeting", "close", "talk"]);
    std::fs::remove_file(p.root.join(".lore/meetings/talk.md")).expect("rm");
    let out = p.ok(&["check"]);
    assert!(out.contains("talk.md:1:1: orphaned: its meeting artifact is gone"), "{out}");
    let rows: Value = serde_json::from_str(&p.ok(&["status", "--json"])).expect("json");
    assert!(rows.as_array().expect("rows").iter().any(|r| r["status"] == "orphaned" && r["kind"] == "meeting"), "{rows}");
    let out = p.ok(&["gc"]);
    assert!(out.contains("removed branch claude/meeting/talk (meeting talk)"), "{out}");
    assert!(!p.branches().iter().any(|b| b.contains("talk")));
}

/// An orphaned plan's leftovers are its own tasks' by record, never by slug prefix: plan `a`
/// (gone) and a running plan `a-exec-wave-1`, whose task slug `a-exec-wave-1-exec-wave-1-task-1`
/// begins with plan `a`'s `a-exec-wave-`. `gc` used to remove the running task's worktree and
/// branch as plan `a`'s (fails on 777052f).
#[test]
fn gc_never_takes_a_running_plans_task_for_an_orphaned_plans() {
    let p = Project::new(&["mason"]);
    p.script_worker("waiter", "full", "echo ran > x.txt\nwhile [ ! -e .go ]; do sleep 0.05; done\nrm -f .go\n");
    let plans = p.root.join(".lore/plans");
    std::fs::create_dir_all(&plans).expect("mkdir");
    std::fs::write(plans.join("a.md"), "---\ntitle: a\nwaves:\n  - - {id: y, worker: mason, prompt: \"write: y.txt y\"}\n---\n")
        .expect("plan");
    p.settle();
    std::fs::remove_file(plans.join("a.md")).expect("rm");

    std::fs::write(plans.join("a-exec-wave-1.md"), "---\ntitle: b\nwaves:\n  - - {id: x, worker: waiter, prompt: wait}\n---\n")
        .expect("plan");
    let slug = "a-exec-wave-1-exec-wave-1-task-1";
    let worktrees = p.home.join("worktrees");
    let project = std::fs::read_dir(&worktrees).expect("worktrees").next().expect("a project").expect("entry").path();
    let wt = project.join(format!("task-{slug}"));
    p.pass_until("the task runs", |_| wt.join("x.txt").exists());

    let out = p.ok(&["gc", "--include-unmerged"]);
    assert!(wt.join("x.txt").exists(), "the running task's worktree was removed by gc:\n{out}");
    assert!(p.branches().contains(&format!("claude/task/{slug}")), "its branch was removed by gc:\n{out}");

    std::fs::write(wt.join(".go"), "").expect("go");
    p.settle();
    let v: Value = serde_json::from_str(&p.ok(&["plan", "show", "a-exec-wave-1", "--json"])).expect("json");
    assert_eq!(v["status"], "completed", "{v}");
    assert_eq!(git(&p.root, &["show", "claude/main:x.txt"]), "ran\n");
}
