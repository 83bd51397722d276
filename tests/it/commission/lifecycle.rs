//! A commission's whole life through the real binary: dispatch, progress, result, squash merge,
//! dependencies, the four exit classes, heartbeat, cancellation, re-dispatch, limits.

use crate::common::*;

#[test]
fn init_is_idempotent_and_needs_git() {
    let p = Project::new(&[]);
    assert!(p.root.join(".lore/commissions").is_dir() && p.root.join(".lore/meetings").is_dir() && p.root.join(".lore/workers").is_dir());
    assert!(p.branches().contains(&"claude/main".to_string()));
    let config = std::fs::read_to_string(p.home.join("config.yaml")).expect("config.yaml");
    assert!(config.contains(&p.root.canonicalize().expect("canon").display().to_string()), "{config}");
    p.ok(&["init"]);
    let again = std::fs::read_to_string(p.home.join("config.yaml")).expect("config.yaml");
    assert_eq!(config, again);

    let not_git = tempfile::tempdir().expect("tmp");
    let (code, _, err) = p.run(&["-C", not_git.path().to_str().expect("utf8"), "init"]);
    assert_eq!(code, 1);
    assert!(err.contains("not inside a git repository"), "{err}");
}

/// Before `init` no command reports success ("nothing to do", then a dispatch failing with
/// "branch claude/main does not exist"): each says once, exit 1, that the project is not set
/// up and to run `guild-hall init`. Commands that need no project still run.
#[test]
fn every_project_command_before_init_says_to_run_init() {
    let p = Project::new(&[]);
    let fresh = p.tmp.path().join("fresh");
    std::fs::create_dir_all(&fresh).expect("mkdir");
    git(&fresh, &["init", "-q", "-b", "main"]);
    git(&fresh, &["config", "user.name", "Test Person"]);
    git(&fresh, &["config", "user.email", "person@example.com"]);
    std::fs::write(fresh.join("README.md"), "# fresh\n").expect("write");
    git(&fresh, &["add", "-A"]);
    git(&fresh, &["commit", "-q", "-m", "initial"]);
    let root = fresh.canonicalize().expect("canon");
    let dir = fresh.to_str().expect("utf8");
    let want = format!(
        "error: {} is not set up for guild-hall (it has no integration branch claude/main): run `guild-hall init` there first",
        root.display()
    );
    let commands: &[&[&str]] = &[
        &["status"],
        &["check"],
        &["reconcile", "--once", "--wait", "--timeout", "20s"],
        &["reconcile", "--dry-run"],
        &["commission", "create", "--worker", "scribe", "--title", "T", "--prompt", "P"],
        &["meeting", "list"],
        &["plan", "show", "x"],
        &["timeline", "x"],
        &["logs", "x"],
        &["gc"],
        &["sync"],
        &["land"],
        &["job", "list"],
        &["workers"],
        &["workers", "add", "scribe"],
        &["watch", dir],
        &["mcp", "--manager"],
    ];
    for args in commands {
        let mut all = vec!["-C", dir];
        all.extend_from_slice(args);
        let (code, out, err) = p.run(&all);
        assert_eq!(code, 1, "{args:?}: {out}{err}");
        assert_eq!(err.trim_end(), want, "{args:?}");
        assert_eq!(out, "", "{args:?}");
    }
    // Nothing was written for it: no .lore/, no branch, no registration.
    assert!(!fresh.join(".lore").exists());
    assert!(!git(&fresh, &["branch", "--list"]).contains("claude/main"));
    // What needs no project runs anywhere.
    for args in [&["workers", "--available"][..], &["schema", "commission"], &["completions", "bash"], &["man"], &["--help"]] {
        let mut all = vec!["-C", dir];
        all.extend_from_slice(args);
        p.ok(&all);
    }
    // `init` sets it up; then the same commands run.
    p.ok(&["-C", dir, "init"]);
    assert!(p.ok(&["-C", dir, "check"]).starts_with("ok:"));
    p.ok(&["-C", dir, "status"]);
    p.ok(&["-C", dir, "reconcile", "--once", "--wait", "--timeout", "20s"]);
}

/// Ctrl-C of `reconcile --wait` ended it silently (exit 130): it says, in one line on stderr,
/// that the workers started keep running and how to see them, and exits 130; the worker is
/// still running after it.
#[test]
fn ctrl_c_of_reconcile_wait_says_the_workers_keep_running() {
    let p = Project::new(&["sleeper"]);
    let id = p.create("sleeper", "Long", "sleep: 300\nWork.");
    let err = p.tmp.path().join("reconcile.err");
    let err = err.display();
    let out = in_pid_namespace(
        &p,
        &format!(
            r#"
# Job control: the background reconcile gets SIGINT as a terminal's Ctrl-C would deliver it
# (a script's background job would otherwise start with SIGINT ignored).
set -m
"$GH" reconcile --once --wait --timeout 120s >/dev/null 2>"{err}" &
gh=$!
wait_for "the worker to run" run_json {id}
shim=$(field {id} pid)
wait_for "the attempt to be in progress" grep -q 'status: in_progress' .lore/commissions/{id}.md
kill -INT $gh
code=0; wait $gh || code=$?
echo "--- code"; echo $code
echo "--- err"; cat "{err}"
echo "--- alive"; alive $shim && echo yes || echo no
"#
        ),
    );
    assert_eq!(section(&out, "code").trim(), "130", "{out}");
    assert_eq!(
        section(&out, "err").trim_end(),
        "interrupted: the workers already started keep running on their own; `guild-hall status` shows them, and `guild-hall watch` (or the next `guild-hall reconcile`) picks them up",
        "{out}"
    );
    assert_eq!(section(&out, "alive").trim(), "yes", "{out}");
}

#[test]
fn happy_path_dispatch_progress_result_merge() {
    let p = Project::new(&["scribe"]);
    // A person's file, with comments and odd formatting that must survive every write.
    p.write_commission(
        "notes",
        "---\n# Written by hand.\ntitle:   \"Write the notes\"   # keep me\nworker: scribe\noutputs: [ .lore/research/notes.md   ]\n---\noutput: .lore/research/notes.md\nWrite notes.\n",
    );
    let out = p.settle();
    assert!(out.contains("dispatch"), "{out}");
    let s = p.status_json("notes");
    assert_eq!(s["status"], "completed", "{s}");
    assert_eq!(s["attempt"], 1);
    assert_eq!(s["branch"], "claude/commission/notes");
    assert_eq!(s["result"]["artifacts"][0], ".lore/research/notes.md");
    assert!(s["result"]["summary"].as_str().is_some_and(|x| !x.is_empty()));
    let text = p.artifact("notes");
    assert!(
        text.starts_with(
            "---\n# Written by hand.\ntitle:   \"Write the notes\"   # keep me\nworker: scribe\noutputs: [ .lore/research/notes.md   ]\n"
        ),
        "{text}"
    );
    assert!(text.ends_with("---\noutput: .lore/research/notes.md\nWrite notes.\n"), "{text}");
    assert!(text.contains("linked_artifacts:") && text.contains("completed:"), "{text}");

    // Merged as one commit on the integration branch, naming the commission.
    // (The integration branch begins with init's own commit, on top of main.)
    let log = git(&p.root, &["log", "--format=%s%n%b%n--", "--invert-grep", "--grep=^Guild-Hall-Begins: ", "main..claude/main"]);
    assert_eq!(log.matches("--").count(), 1, "one squash commit: {log}");
    assert!(log.contains("(notes)") && log.contains("Guild-Hall-Commission: notes attempt 1"), "{log}");
    let file = git(&p.root, &["show", "claude/main:.lore/research/notes.md"]);
    assert!(file.contains("notes"), "{file}");
    // Worktree gone, branch kept.
    assert!(!p.worktree("notes").exists());
    assert!(!p.worktree_list().contains("commission-notes"));
    assert!(p.branches().contains(&"claude/commission/notes".to_string()));

    let tl = p.timeline("notes");
    // A file without a status opens its timeline with `created (pending)`, not a move to where
    // it already was.
    assert_eq!((tl[0]["kind"].as_str(), tl[0]["status"].as_str()), (Some("created"), Some("pending")), "{tl:?}");
    assert_eq!(transitions(&tl), vec!["pending>dispatched", "dispatched>in_progress", "in_progress>completed"], "{tl:?}");
    let k = kinds(&tl);
    assert_eq!(k.iter().filter(|k| *k == "progress").count(), 2, "{k:?}");
    for want in ["result", "artifact", "merge"] {
        assert!(k.contains(&want.to_string()), "{want} in {k:?}");
    }
    let logs = p.ok(&["logs", "notes"]);
    assert!(!logs.is_empty());
    // Converged: another pass does nothing and writes nothing.
    let before = p.artifact("notes");
    assert_eq!(p.ok(&["reconcile", "--once"]).trim(), "nothing to do");
    assert_eq!(before, p.artifact("notes"));
}

#[test]
fn dependency_blocks_until_the_first_result_is_merged() {
    let p = Project::new(&["scribe"]);
    let first = p.create("scribe", "Research notes", "output: .lore/research/notes.md\nGather notes.");
    let second = p.ok(&[
        "commission",
        "create",
        "--worker",
        "scribe",
        "--title",
        "Summary",
        "--depends",
        ".lore/research/notes.md",
        "--prompt",
        "output: .lore/reports/summary.md\nSummarise.",
    ]);
    let second = second.trim();
    // A dry run says what it would do (dispatch the first, block the second) and does nothing.
    let world = |p: &Project| {
        let files: Vec<(String, String)> = std::fs::read_dir(p.root.join(".lore/commissions"))
            .expect("dir")
            .filter_map(|e| e.ok())
            .map(|e| (e.file_name().to_string_lossy().into_owned(), std::fs::read_to_string(e.path()).unwrap_or_default()))
            .collect();
        (files, p.branches(), p.home.join("state").exists() && p.try_state_dir(&first).is_some(), p.home.join("worktrees").exists())
    };
    let before = world(&p);
    let (_, out, _) = p.run(&["reconcile", "--once", "--dry-run", "--json"]);
    let plan: serde_json::Value = serde_json::from_str(&out).expect("json");
    let planned = plan.to_string();
    assert!(planned.contains("dispatch") && planned.contains("blocked"), "{plan}");
    assert_eq!(world(&p), before, "the dry run changed nothing");
    p.settle();
    assert_eq!(p.status(&first), "completed");
    assert_eq!(p.status(second), "completed");
    let tl = transitions(&p.timeline(second));
    assert!(tl.contains(&"pending>blocked".to_string()) && tl.contains(&"blocked>pending".to_string()), "{tl:?}");
    git(&p.root, &["show", "claude/main:.lore/reports/summary.md"]);
}

#[test]
fn pending_loses_a_dependency_and_is_blocked_again() {
    let p = Project::new(&["scribe"]);
    p.commit_on_integration(".lore/in/x.md", "x", "the input");
    p.config("dispatch: manual\n");
    p.write_commission("d", "---\nworker: scribe\ndependencies: [.lore/in/x.md]\n---\nbody\n");
    p.ok(&["reconcile", "--once"]);
    assert_eq!(p.status("d"), "pending");
    p.remove_on_integration(".lore/in/x.md");
    p.ok(&["reconcile", "--once"]);
    assert_eq!(p.status("d"), "blocked");
    assert!(p.artifact("d").contains("missing dependencies (not on claude/main, where its worktree starts): .lore/in/x.md"));
}

#[test]
fn a_dependency_only_in_the_working_tree_is_not_met() {
    // The dependent's worktree starts from claude/main: a file only in the person's checkout
    // would not be there for its worker, so it does not count.
    let p = Project::new(&["scribe"]);
    std::fs::create_dir_all(p.root.join(".lore/in")).expect("mkdir");
    std::fs::write(p.root.join(".lore/in/x.md"), "x").expect("write");
    p.write_commission("d", "---\nworker: scribe\ndependencies: [.lore/in/x.md]\n---\nbody\n");
    p.ok(&["reconcile", "--once"]);
    assert_eq!(p.status("d"), "blocked");
    p.commit_on_integration(".lore/in/x.md", "x", "the input, where workers see it");
    p.settle();
    assert_eq!(p.status("d"), "completed");
}

#[test]
fn clean_exit_without_result_fails_and_keeps_partial_work() {
    let p = Project::new(&["silent"]);
    let id = p.create("silent", "Quiet", "Say nothing.");
    p.settle();
    let s = p.status_json(&id);
    assert_eq!(s["status"], "failed");
    assert_eq!(s["reason"], "completed without submitting result");
    assert!(!p.worktree(&id).exists() && !p.worktree_list().contains(&format!("commission-{id}")));
    // The partial work is committed on the kept branch, not merged.
    let branch = format!("claude/commission/{id}");
    let files = git(&p.root, &["ls-tree", "-r", "--name-only", &branch]);
    assert!(files.lines().any(|f| f.starts_with(".lore/")), "{files}");
    assert_eq!(git(&p.root, &["rev-list", "--count", "main..claude/main"]).trim(), "1", "init's own commit alone");
}

#[test]
fn crash_after_submitting_still_completes_with_an_anomaly() {
    let p = Project::new(&["crasher"]);
    let id = p.create("crasher", "Crashy", "Crash after submitting.");
    p.settle();
    assert_eq!(p.status(&id), "completed");
    let tl = p.timeline(&id);
    let anomaly = tl.iter().find(|e| e["kind"] == "anomaly").expect("anomaly event");
    assert!(anomaly["text"].as_str().is_some_and(|t| t.contains("code 3")), "{anomaly}");
}

#[test]
fn hung_worker_goes_stale_and_its_group_is_killed() {
    let p = Project::new(&["hanger"]);
    p.config("stale_after: 2s\n");
    let id = p.create("hanger", "Hang", "Hang forever.");
    p.settle();
    let s = p.status_json(&id);
    assert_eq!(s["status"], "failed");
    assert_eq!(s["reason"], "process unresponsive");
    let run = p.run_info(&id).expect("run.json");
    let worker = run["worker_pid"].as_i64().expect("worker pid");
    wait_for("hung worker to be gone", || !pid_alive(worker));
    let tl = p.timeline(&id);
    assert!(tl.iter().any(|e| e["kind"] == "heartbeat" && e["state"] == "stale"), "{tl:?}");
}

#[test]
fn cancel_a_running_commission() {
    let p = Project::new(&["sleeper"]);
    let id = p.create("sleeper", "Long", "sleep: 300\nTake a while.");
    p.pass_until("worker running", |p| p.status(&id) == "in_progress");
    let worker = p.run_info(&id).expect("run")["worker_pid"].as_i64().expect("pid");
    assert!(pid_alive(worker));
    p.ok(&["commission", "cancel", &id]);
    p.settle();
    let s = p.status_json(&id);
    assert_eq!(s["status"], "cancelled");
    assert!(!pid_alive(worker));
    assert!(!p.artifact(&id).contains("desired:"));
    assert!(!p.worktree(&id).exists());
    assert!(p.branches().contains(&format!("claude/commission/{id}")));
    let tl = transitions(&p.timeline(&id));
    assert!(tl.contains(&"in_progress>cancelled".to_string()), "{tl:?}");
}

#[test]
fn cancel_kills_a_worker_that_ignores_sigterm_after_the_grace() {
    let p = Project::new(&["stubborn"]);
    p.config("cancel_grace: 1s\n");
    let id = p.create("stubborn", "Stubborn", "Ignore TERM.");
    p.pass_until("worker running", |p| p.status(&id) == "in_progress");
    let worker = p.run_info(&id).expect("run")["worker_pid"].as_i64().expect("pid");
    // Direct status edit is a request too.
    let text = p.artifact(&id).replace("status: in_progress", "status: cancelled");
    std::fs::write(p.artifact_path(&id), text).expect("edit");
    p.settle();
    assert_eq!(p.status(&id), "cancelled");
    assert!(!pid_alive(worker));
}

/// Call one tool of `guild-hall mcp --manager` (the dispatcher) and return its structured reply.
fn manager_call(p: &Project, tool: &str, args: serde_json::Value) -> serde_json::Value {
    p.manager_call(tool, args)["structuredContent"].clone()
}

#[test]
fn a_stop_is_reported_as_under_way_until_every_process_is_gone() {
    let p = Project::new(&["stubborn"]);
    p.config("cancel_grace: 1s\n");
    let id = p.create("stubborn", "Stubborn", "Ignore TERM.");
    p.pass_until("worker running", |p| p.status(&id) == "in_progress");
    let worker = p.run_info(&id).expect("run")["worker_pid"].as_i64().expect("pid");
    p.ok(&["commission", "cancel", &id]);
    // One pass: the cancel is carried out (SIGTERM, which the worker ignores). No pass runs
    // after it, so nothing sends SIGKILL: the worker is certainly still alive below.
    p.ok(&["reconcile", "--once"]);
    assert!(pid_alive(worker));
    let s = p.status_json(&id);
    assert_eq!(s["status"], "cancelled", "the cancel shows at once: {s}");
    assert_eq!(s["stopping"], "cancelling: worker still running", "{s}");
    assert_eq!(s["completed"], serde_json::Value::Null, "{s}");
    assert!(!p.artifact(&id).contains("completed:"));
    let line = p.ok(&["status"]).lines().find(|l| l.starts_with(&id)).expect("a row").to_string();
    assert!(line.contains(" cancelling ") && line.contains("cancelling: worker still running"), "{line}");
    let tl = p.timeline(&id);
    let last = tl.iter().rev().find(|e| e["kind"] == "status").expect("a status event");
    assert_eq!((last["to"].as_str(), last["stopping"].as_str()), (Some("cancelled"), Some("cancelling: worker still running")));
    assert!(!kinds(&tl).contains(&"stopped".to_string()));
    let job = manager_call(&p, "status", serde_json::json!({"jobId": id}));
    assert_eq!(job["status"], "cancelled", "{job}");
    assert_eq!(job["stopping"], "cancelling: worker still running", "{job}");
    assert_eq!(job["completedAt"], serde_json::Value::Null, "{job}");
    let list = manager_call(&p, "list", serde_json::json!({}));
    assert_eq!(list["jobs"][0]["stopping"], "cancelling: worker still running", "{list}");

    // After the grace, SIGKILL; once the shim has seen every process gone, it is over.
    p.settle();
    assert!(!pid_alive(worker));
    let s = p.status_json(&id);
    assert_eq!((s["status"].as_str(), &s["stopping"]), (Some("cancelled"), &serde_json::Value::Null), "{s}");
    assert!(s["completed"].as_str().is_some(), "{s}");
    assert!(kinds(&p.timeline(&id)).contains(&"stopped".to_string()));
    let job = manager_call(&p, "status", serde_json::json!({"jobId": id}));
    assert_eq!(job["stopping"], serde_json::Value::Null, "{job}");
    assert!(job["completedAt"].as_str().is_some(), "{job}");
    assert!(manager_call(&p, "list", serde_json::json!({}))["jobs"][0].get("stopping").is_none());
    let line = p.ok(&["status"]).lines().find(|l| l.starts_with(&id)).expect("a row").to_string();
    assert!(line.contains(" cancelled "), "{line}");
}

#[test]
fn redispatch_makes_a_new_branch_and_keeps_the_old() {
    let p = Project::new(&["silent", "scribe"]);
    let id = p.create("silent", "Again", "output: .lore/again.md\nTry.");
    p.settle();
    assert_eq!(p.status(&id), "failed");
    // Switch the worker, then re-dispatch.
    let text = p.artifact(&id).replace("worker: silent", "worker: scribe");
    std::fs::write(p.artifact_path(&id), text).expect("edit");
    p.ok(&["commission", "redispatch", &id]);
    p.settle();
    let s = p.status_json(&id);
    assert_eq!(s["status"], "completed", "{s}");
    assert_eq!(s["attempt"], 2);
    assert_eq!(s["branch"], format!("claude/commission/{id}+2"));
    let branches = p.branches();
    assert!(branches.contains(&format!("claude/commission/{id}")) && branches.contains(&format!("claude/commission/{id}+2")));
    let tl = p.timeline(&id);
    assert!(tl.iter().any(|e| e["kind"] == "redispatch" && e["attempt"] == 2));
    assert!(transitions(&tl).contains(&"failed>pending".to_string()));
    assert!(p.ok(&["logs", &id, "--attempt", "1"]).len() < 100_000);
}

#[test]
fn an_attempts_branch_is_never_another_commissions() {
    // Attempt 2 of `job` and commission `job-2` run at the same time, each on its own branch.
    let p = Project::new(&["silent", "sleeper"]);
    p.write_commission("job", "---\nworker: silent\n---\nFail once.\n");
    p.settle();
    assert_eq!(p.status("job"), "failed");
    let text = p.artifact("job").replace("worker: silent", "worker: sleeper");
    std::fs::write(p.artifact_path("job"), text.replace("Fail once.", "sleep: 2\nNow work.")).expect("edit");
    p.ok(&["commission", "redispatch", "job"]);
    p.write_commission("job-2", "---\nworker: sleeper\n---\nsleep: 2\nWork too.\n");
    // Both started (usually both running at once; under load one may have finished first:
    // each pass is then slower than a sleeper's two seconds).
    let started = |p: &Project, id: &str| matches!(p.status(id).as_str(), "in_progress" | "completed");
    p.pass_until("both started", |p| started(p, "job") && started(p, "job-2"));
    p.settle();
    assert_eq!(p.status("job"), "completed");
    assert_eq!(p.status("job-2"), "completed");
    assert_eq!(p.status_json("job")["branch"], "claude/commission/job+2");
    assert_eq!(p.status_json("job-2")["branch"], "claude/commission/job-2");
    for (branch, file) in [("claude/commission/job+2", ".lore/slept/job.md"), ("claude/commission/job-2", ".lore/slept/job-2.md")] {
        let files = git(&p.root, &["ls-tree", "-r", "--name-only", branch]);
        assert!(files.contains(file), "{branch}: {files}");
    }

    // Deleting `job` removes its own branches (`job`, `job+2`) and nothing of `job-2`'s.
    let job2_tip = git(&p.root, &["rev-parse", "claude/commission/job-2"]);
    assert_eq!(manager_call(&p, "delete", serde_json::json!({"jobId": "job"}))["deleted"], true);
    let branches = p.branches();
    assert!(!branches.iter().any(|b| b == "claude/commission/job" || b == "claude/commission/job+2"), "{branches:?}");
    assert!(branches.contains(&"claude/commission/job-2".to_string()), "{branches:?}");
    assert_eq!(git(&p.root, &["rev-parse", "claude/commission/job-2"]), job2_tip);
    assert!(!p.artifact_path("job").exists());
    let s = p.status_json("job-2");
    assert_eq!((s["status"].as_str(), s["branch"].as_str()), (Some("completed"), Some("claude/commission/job-2")));
    // And `job-2` in turn takes only its own.
    assert_eq!(manager_call(&p, "delete", serde_json::json!({"jobId": "job-2"}))["deleted"], true);
    assert!(!p.branches().iter().any(|b| b.starts_with("claude/commission/")), "{:?}", p.branches());
}

#[test]
fn an_attempt_begun_by_an_older_guild_hall_keeps_its_dash_branch() {
    // An older guild-hall dispatched attempt 2 on `claude/commission/old-2` and died; the
    // attempt is finished on that branch.
    let p = Project::new(&["sleeper"]);
    p.write_commission("old", "---\nworker: sleeper\n---\nsleep: 1\nWork.\n");
    p.settle();
    assert_eq!(p.status("old"), "completed");
    // Re-dispatch as attempt 2 under the old naming: branch, worktree and records as it left them.
    git(&p.root, &["branch", "claude/commission/old-2", "claude/main"]);
    let text = "---\nworker: sleeper\nstatus: in_progress\nattempt: 2\nbranch: claude/commission/old-2\n---\nsleep: 1\nWork.\n";
    std::fs::write(p.artifact_path("old"), text).expect("write");
    let state = p.state_dir("old");
    std::fs::write(state.join("record.json"), r#"{"status": "in_progress", "prev": "pending", "attempt": 2}"#).expect("record");
    std::fs::write(state.join("exit.json"), r#"{"attempt": 2, "code": 0, "signal": null, "finished_at": "2026-11-22T10:00:00Z"}"#)
        .expect("exit");
    std::fs::OpenOptions::new().create(true).append(true).open(state.join("events.jsonl")).and_then(|mut f| {
        use std::io::Write;
        writeln!(f, r#"{{"seq":99,"id":"legacy-result","ts":"2026-11-22T10:00:00.000Z","attempt":2,"kind":"result","summary":"done the old way","artifacts":[]}}"#)
    }).expect("mailbox");
    p.settle();
    let s = p.status_json("old");
    assert_eq!(s["status"], "completed", "{s}");
    assert_eq!(s["branch"], "claude/commission/old-2");
    assert!(!p.branches().contains(&"claude/commission/old+2".to_string()));
}

#[test]
fn project_cap_queues_fifo() {
    let p = Project::new(&["sleeper"]);
    p.config("commission_cap: 1\n");
    let ids: Vec<String> = (0..3)
        .map(|i| {
            let id = p.create("sleeper", &format!("Job {i}"), "sleep: 1\nShort.");
            std::thread::sleep(std::time::Duration::from_millis(1100)); // distinct `created:` seconds
            id
        })
        .collect();
    p.ok(&["reconcile", "--once"]);
    let statuses: Vec<String> = ids.iter().map(|i| p.status(i)).collect();
    assert!(["dispatched", "in_progress"].contains(&statuses[0].as_str()), "{statuses:?}");
    assert_eq!(&statuses[1..], ["pending", "pending"]);
    p.settle();
    let started: Vec<String> = ids
        .iter()
        .map(|i| {
            let tl = p.timeline(i);
            tl.iter().find(|e| e["kind"] == "status" && e["to"] == "dispatched").expect("dispatched")["ts"]
                .as_str()
                .expect("ts")
                .to_string()
        })
        .collect();
    assert!(started.windows(2).all(|w| w[0] <= w[1]), "FIFO: {started:?}");
    for i in &ids {
        assert_eq!(p.status(i), "completed");
    }
}

#[test]
fn global_cap_spans_projects() {
    let a = Project::new(&["sleeper"]);
    let b = Project::new(&["sleeper"]);
    // Share one home.
    std::fs::write(a.home.join("config.yaml"), "max_concurrent_commissions: 1\n").expect("cfg");
    let run_b = |args: &[&str]| {
        let mut c = b.cmd();
        c.env("GUILD_HALL_HOME", &a.home).args(args);
        let out = c.output().expect("runs");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let ia = a.create("sleeper", "A", "sleep: 300\nLong.");
    let ib = b.create("sleeper", "B", "sleep: 1\nShort.");
    a.pass_until("a running", |a| a.status(&ia) == "in_progress");
    run_b(&["reconcile", "--once"]);
    let sb: serde_json::Value = serde_json::from_str(&run_b(&["status", &ib, "--json"])).expect("json");
    assert_eq!(sb["status"], "pending", "global cap holds b back");
    a.ok(&["commission", "cancel", &ia]);
    a.settle();
    run_b(&["reconcile", "--once", "--wait", "--timeout", "60s"]);
    let sb: serde_json::Value = serde_json::from_str(&run_b(&["status", &ib, "--json"])).expect("json");
    assert_eq!(sb["status"], "completed");
}

#[test]
fn activation_failures_fail_with_the_reason() {
    let p = Project::new(&["scribe"]);
    p.write_commission("ghost", "---\nworker: nobody\n---\nbody\n");
    // A package whose command does not exist.
    let dir = p.root.join(".lore/workers/broken");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(dir.join("worker.yaml"), "name: broken\ncommand: [\"./missing.sh\"]\n").expect("write");
    p.write_commission("b", "---\nworker: broken\n---\nbody\n");
    p.settle();
    // A worker with no package at all is no activation failure: the commission waits for it
    // (tests/it/worker/bundled.rs), no attempt spent.
    let g = p.status_json("ghost");
    assert_eq!(g["status"], "blocked");
    assert_eq!(g["attempt"], 0, "{g}");
    assert!(g["reason"].as_str().is_some_and(|r| r.starts_with("worker \"nobody\" is not installed")), "{g}");
    // Nor is a package whose command is not there (yet: a package is written file by file):
    // the commission waits for it, no attempt spent, the reason naming the command.
    let b = p.status_json("b");
    assert_eq!((b["status"].as_str(), b["attempt"].as_u64()), (Some("blocked"), Some(0)), "{b}");
    assert!(b["reason"].as_str().is_some_and(|r| r.contains("missing.sh") && r.contains("not found")), "{b}");
    assert!(!transitions(&p.timeline("b")).iter().any(|t| t.contains("dispatched")), "{:?}", p.timeline("b"));
}

#[test]
fn killed_worker_is_failed_with_partial_results() {
    let p = Project::new(&["sleeper"]);
    let id = p.create("sleeper", "Victim", "sleep: 300\nWork.");
    p.pass_until("running", |p| p.status(&id) == "in_progress");
    let run = p.run_info(&id).expect("run");
    // Leave some uncommitted work in the worktree, then kill everything.
    std::fs::create_dir_all(p.worktree(&id).join(".lore")).expect("mkdir");
    std::fs::write(p.worktree(&id).join(".lore/partial.md"), "half done\n").expect("write");
    let pgid = run["pgid"].as_i64().expect("pgid");
    // killpg(2) directly: `kill -9 -<pgid>` from procps-ng does not reliably mean "the group".
    nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pgid as i32), nix::sys::signal::Signal::SIGKILL).expect("killpg");
    p.settle();
    let s = p.status_json(&id);
    assert_eq!(s["status"], "failed");
    assert_eq!(s["reason"], "process lost on restart");
    let partial = git(&p.root, &["show", &format!("claude/commission/{id}:.lore/partial.md")]);
    assert_eq!(partial, "half done\n");
    assert!(!p.worktree_list().contains(&format!("commission-{id}")));
}

#[test]
fn dependency_cycles_are_reported_and_not_waited_on() {
    let p = Project::new(&["scribe"]);
    p.write_commission("a", "---\nworker: scribe\ndependencies: [.lore/b.md]\noutputs: [.lore/a.md]\n---\noutput: .lore/a.md\n");
    p.write_commission("b", "---\nworker: scribe\ndependencies: [.lore/a.md]\noutputs: [.lore/b.md]\n---\noutput: .lore/b.md\n");
    let (code, _, err) = p.run(&["reconcile", "--once", "--wait", "--timeout", "60s"]);
    assert_eq!(code, 1, "a cycle is an error: {err}");
    assert!(err.contains("a.md:3:15: dependency cycle: a -> b -> a"), "{err}");
    assert!(!err.contains("timed out"), "{err}");
    for id in ["a", "b"] {
        let s = p.status_json(id);
        assert_eq!(s["status"], "blocked");
        assert_eq!(s["reason"], "dependency cycle: a -> b -> a");
    }
    let (code, out, _) = p.run(&["check"]);
    assert_eq!(code, 1);
    assert!(out.contains("dependency cycle"), "{out}");
}

#[test]
fn a_deleted_artifact_is_not_a_cancellation_and_still_holds_its_slot() {
    let p = Project::new(&["sleeper"]);
    p.config("commission_cap: 1\n");
    let id = p.create("sleeper", "Running", "sleep: 3\nWork.");
    p.pass_until("running", |p| p.status(&id) == "in_progress");
    let worker = p.run_info(&id).expect("run")["worker_pid"].as_i64().expect("pid");
    let saved = p.artifact(&id);
    std::fs::remove_file(p.artifact_path(&id)).expect("rm");
    let other = p.create("sleeper", "Waiting", "sleep: 1\nWork.");
    p.ok(&["reconcile", "--once"]);
    assert_eq!(p.status(&other), "pending", "the orphaned worker still holds the only slot");
    assert!(pid_alive(worker), "a missing file is not a cancellation");
    // The file comes back (a checkout, an undo): the commission is picked up where it was.
    std::fs::write(p.artifact_path(&id), saved).expect("restore");
    p.settle();
    assert_eq!(p.status(&id), "completed");
    assert_eq!(p.status_json(&id)["attempt"], 1);
    assert_eq!(p.status(&other), "completed");
}

#[test]
fn init_keeps_a_persons_config_comments() {
    let p = Project::new(&[]);
    let other = tempfile::tempdir().expect("tmp");
    git(other.path(), &["init", "-q", "-b", "main"]);
    std::fs::write(other.path().join("x"), "x").expect("write");
    git(other.path(), &["-c", "user.name=a", "-c", "user.email=a@b", "add", "-A"]);
    git(other.path(), &["-c", "user.name=a", "-c", "user.email=a@b", "commit", "-q", "-m", "x"]);
    let cfg = p.home.join("config.yaml");
    let before = std::fs::read_to_string(&cfg).expect("config");
    std::fs::write(&cfg, format!("# my settings\nmax_concurrent_commissions: 4   # the laptop is small\n{before}")).expect("write");
    p.ok(&["-C", other.path().to_str().expect("utf8"), "init"]);
    let after = std::fs::read_to_string(&cfg).expect("config");
    assert!(after.starts_with("# my settings\nmax_concurrent_commissions: 4   # the laptop is small\n"), "{after}");
    assert!(after.contains(&other.path().canonicalize().expect("canon").display().to_string()), "{after}");
    assert!(after.contains(&p.root.canonicalize().expect("canon").display().to_string()), "{after}");
}

#[test]
fn created_is_stamped_at_creation_and_survives_a_stash() {
    let p = Project::new(&["scribe"]);
    // A hand-written, committed commission: the first pass stamps it; a stash drops the
    // stamp; the next pass puts back the same one, and the stash pops cleanly.
    p.write_commission("by-hand", "---\nworker: scribe\nstatus: draft\n---\nLater.\n");
    git(&p.root, &["add", "-A"]);
    git(&p.root, &["commit", "-q", "-m", "by hand"]);
    p.ok(&["reconcile", "--once"]);
    let stamped = p.artifact("by-hand");
    let created = stamped.lines().find(|l| l.starts_with("created: ")).expect("stamped").to_string();
    git(&p.root, &["stash", "-q"]);
    assert!(!p.artifact("by-hand").contains("created: "));
    std::thread::sleep(std::time::Duration::from_millis(20));
    p.ok(&["reconcile", "--once"]);
    assert!(p.artifact("by-hand").contains(&created), "the same stamp: {}", p.artifact("by-hand"));
    git(&p.root, &["checkout", "-q", "--", ".lore/commissions/by-hand.md"]);
    git(&p.root, &["stash", "pop", "-q"]);
    assert!(p.artifact("by-hand").contains(&created));

    let id = p.create("scribe", "Stamped", "output: .lore/s.md\nLater.");
    assert!(p.artifact(&id).contains("\ncreated: "), "commission create stamps the FIFO key");
}

#[test]
fn a_worker_that_runs_too_long_is_stopped_at_its_timeout() {
    // The sleeper reports progress (a heartbeat) and would run 60 s; its timeout is 2 s.
    let p = Project::new(&["sleeper"]);
    p.write_commission("long", "---\nworker: sleeper\ntimeout: 2s\n---\nsleep: 60\nTake your time.\n");
    p.pass_until("it runs", |p| p.status("long") == "in_progress");
    let worker = p.run_info("long").and_then(|r| r["worker_pid"].as_i64()).expect("worker pid");
    p.settle();
    let s = p.status_json("long");
    assert_eq!(s["status"], "failed");
    assert_eq!(s["reason"], "timed out: ran longer than 2s (the commission's timeout)");
    assert!(!pid_alive(worker));
    assert!(kinds(&p.timeline("long")).contains(&"timeout".to_string()));
}

#[test]
fn a_fresh_worktree_is_clean_to_plain_git_sparse_or_full() {
    let p = Project::new(&["sleeper"]);
    p.install_worker("sleeper", "sleeper-full");
    let yaml = p.root.join(".lore/workers/sleeper-full/worker.yaml");
    std::fs::write(&yaml, std::fs::read_to_string(&yaml).expect("yaml").replace("checkout: sparse", "checkout: full")).expect("write");
    p.commit_on_integration(".lore/notes.md", "notes\n", "notes for the workers");
    let sparse = p.create("sleeper", "Sparse", "sleep: 30\nWait.");
    let full = p.create("sleeper-full", "Full", "sleep: 30\nWait.");
    p.pass_until("both run", |p| p.status(&sparse) == "in_progress" && p.status(&full) == "in_progress");
    for id in [&sparse, &full] {
        // What a worker (or a person) sees with plain git in the worktree.
        let status = git(&p.worktree(id), &["status", "--porcelain"]);
        assert_eq!(status, "", "{id}: {status}");
    }
    assert!(!p.worktree(&sparse).join("README.md").exists() && p.worktree(&sparse).join(".lore/notes.md").is_file(), "sparse: .lore/ only");
    assert!(p.worktree(&full).join("README.md").exists(), "full: everything");
    let config = std::fs::read_to_string(p.root.join(".git/config")).expect("config");
    assert!(!config.contains("worktreeConfig"), "the person's .git/config is untouched: {config}");
    for id in [&sparse, &full] {
        p.ok(&["commission", "cancel", id]);
    }
    p.settle();
}

/// An edit of a running commission's title and prompt is for the next attempt: the running one
/// keeps what it was given (its prompt, and its title in the merge), and the timeline says so,
/// once per edit.
#[test]
fn an_edit_while_running_applies_to_the_next_attempt() {
    let p = Project::new(&["sleeper"]);
    p.write_commission("nap", "---\ntitle: Old title\nworker: sleeper\n---\nsleep: 3\nThe old prompt.\n");
    p.pass_until("the attempt to run", |p| p.status("nap") == "in_progress");
    let edited = p.artifact("nap").replace("title: Old title", "title: New title").replace("The old prompt.", "The new prompt.");
    std::fs::write(p.artifact_path("nap"), edited).expect("edit");
    p.ok(&["reconcile", "--once"]);
    p.ok(&["reconcile", "--once"]);
    let noted: Vec<String> =
        p.timeline("nap").iter().filter(|e| e["kind"] == "edited").map(|e| e["text"].as_str().unwrap_or("").to_string()).collect();
    assert_eq!(
        noted,
        ["title and prompt edited while attempt 1 runs: applies to the next attempt (this one keeps what it was given)"],
        "noted once"
    );
    let prompt = std::fs::read_to_string(p.state_dir("nap").join("prompt.md")).unwrap_or_default();
    assert!(prompt.contains("The old prompt.") && !prompt.contains("new"), "{prompt}");
    assert!(p.ok(&["timeline", "nap"]).contains("edited while attempt 1 runs"));
    p.settle();
    assert_eq!(p.status("nap"), "completed");
    let subject = git(&p.root, &["log", "-1", "--format=%s", "claude/main"]);
    assert_eq!(subject.trim(), "Old title (nap)", "the merge says the title the attempt was given");
}
