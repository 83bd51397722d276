//! Nothing lost: crashes of the reconciler mid-action (fault injection), the single-writer
//! lock, refused requests, bad input of every kind, and misuse of the toolbox.

use crate::common::*;

fn count_workers_started(p: &Project, id: &str) -> usize {
    // Every started worker appends its banner line to the attempt log.
    std::fs::read_to_string(p.state_dir(id).join("attempt-1.log")).unwrap_or_default().matches("scribe: starting").count()
}

#[test]
fn killed_mid_dispatch_the_next_pass_converges_without_duplicates() {
    for step in 1..=4 {
        let p = Project::new(&["scribe"]);
        let id = p.create("scribe", "Faulty", "output: .lore/out.md\nWrite.");
        let out = p.cmd().args(["reconcile", "--once"]).env("GUILD_HALL_FAULT", format!("dispatch:{step}")).output().expect("runs");
        assert_eq!(out.status.code(), Some(86), "step {step}: {}", String::from_utf8_lossy(&out.stderr));
        p.settle();
        assert_eq!(p.status(&id), "completed", "step {step}");
        assert_eq!(count_workers_started(&p, &id), 1, "step {step}: exactly one worker ran");
        let merges =
            git(&p.root, &["log", "--format=%b", "claude/main"]).matches(&format!("Guild-Hall-Commission: {id} attempt 1")).count();
        assert_eq!(merges, 1, "step {step}");
        assert!(!p.worktree_list().contains("commission-"), "step {step}");
    }
}

#[test]
fn killed_mid_finish_the_next_pass_does_not_merge_twice() {
    for step in 1..=3 {
        let p = Project::new(&["scribe"]);
        let id = p.create("scribe", "Merge me", "output: .lore/m.md\nWrite.");
        // Passes with the fault switch on, until one reaches the finish and dies there.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        loop {
            let out = p.cmd().args(["reconcile", "--once"]).env("GUILD_HALL_FAULT", format!("finish:{step}")).output().expect("runs");
            match out.status.code() {
                Some(86) => break,
                Some(0) => assert!(std::time::Instant::now() < deadline, "step {step}: never reached the finish"),
                other => panic!("step {step}: {other:?} {}", String::from_utf8_lossy(&out.stderr)),
            }
            assert_ne!(p.status(&id), "completed", "step {step}: completed without passing the fault");
        }
        p.settle();
        assert_eq!(p.status(&id), "completed", "step {step}");
        let merges =
            git(&p.root, &["log", "--format=%b", "claude/main"]).matches(&format!("Guild-Hall-Commission: {id} attempt 1")).count();
        assert_eq!(merges, 1, "step {step}: merged exactly once");
        assert!(!p.worktree_list().contains("commission-"), "step {step}");
        assert_eq!(p.timeline(&id).iter().filter(|e| e["kind"] == "merge").count(), 1, "step {step}");
    }
}

#[test]
fn a_second_reconciler_is_refused() {
    let p = Project::new(&["sleeper"]);
    let id = p.create("sleeper", "Holder", "sleep: 3\nHold.");
    // Its output is captured, not printed into the test run's.
    let first = p
        .cmd()
        .args(["reconcile", "--once", "--wait", "--timeout", "60s"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    wait_for("first reconciler to dispatch", || p.run_info(&id).is_some());
    let (code, _, err) = p.run(&["reconcile", "--once"]);
    assert_eq!(code, 1);
    assert!(err.contains("being reconciled by another guild-hall process: guild-hall reconcile (pid"), "{err}");
    let out = first.wait_with_output().expect("wait");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(p.status(&id), "completed");
}

#[test]
fn invalid_status_edits_are_put_back_with_a_reason() {
    let p = Project::new(&["scribe"]);
    let id = p.create("scribe", "Done", "output: .lore/d.md\nDo.");
    p.settle();
    // completed -> pending is not a transition a person may ask for.
    let text = p.artifact(&id).replace("status: completed", "status: pending # please again");
    std::fs::write(p.artifact_path(&id), &text).expect("edit");
    p.ok(&["reconcile", "--once"]);
    let after = p.artifact(&id);
    assert!(after.contains("status: completed # please again"), "comment kept, status put back: {after}");
    assert!(after.contains("refused status change completed -> pending"), "{after}");
    let tl = p.timeline(&id);
    assert!(tl.iter().any(|e| e["kind"] == "refused"));
    // Nothing was re-run.
    assert_eq!(p.status_json(&id)["attempt"], 1);

    // Writing back a status it passed through on its way (dispatched, in_progress) is a
    // request too, refused with the true reason, never put back silently.
    for (n, to) in ["dispatched", "in_progress"].into_iter().enumerate() {
        let text = p.artifact(&id);
        let line = text.lines().find(|l| l.starts_with("status:")).expect("status line").to_string();
        std::fs::write(p.artifact_path(&id), text.replace(&line, &format!("status: {to}"))).expect("edit");
        p.ok(&["reconcile", "--once"]);
        let after = p.artifact(&id);
        assert!(after.contains("status: completed"), "{after}");
        let want = format!("refused status change completed -> {to}: a completed commission is final");
        assert!(after.contains(&want), "{to}: {after}");
        let refused: Vec<_> = p.timeline(&id).into_iter().filter(|e| e["kind"] == "refused").collect();
        assert_eq!(refused.len(), n + 2, "{refused:?}");
        assert!(refused.iter().any(|e| e["text"].as_str().is_some_and(|t| t.starts_with(&want))), "{refused:?}");
    }
}

#[test]
fn draft_then_pending_by_edit() {
    let p = Project::new(&["scribe"]);
    let id = p
        .ok(&["commission", "create", "--worker", "scribe", "--title", "Later", "--prompt", "output: .lore/l.md\nx", "--draft"])
        .trim()
        .to_string();
    p.ok(&["reconcile", "--once"]);
    assert_eq!(p.status(&id), "draft");
    let text = p.artifact(&id).replace("status: draft", "status: pending");
    std::fs::write(p.artifact_path(&id), text).expect("edit");
    p.settle();
    assert_eq!(p.status(&id), "completed");
    assert!(transitions(&p.timeline(&id)).contains(&"draft>pending".to_string()));
}

#[test]
fn bad_input_is_reported_and_touches_nothing() {
    let p = Project::new(&["scribe"]);
    let cases = [
        ("malformed", "---\ntitle: [unclosed\nworker: scribe\n---\nbody\n", "malformed.md:3:7: invalid YAML"),
        ("unknown-status", "---\nworker: scribe\nstatus: banana\n---\nbody\n", "unknown-status.md:3:9: unknown status \"banana\""),
        ("no-body", "---\nworker: scribe\n---\n\n", "missing body"),
        ("bad-dep", "---\nworker: scribe\ndependencies: [../../etc/passwd]\n---\nbody\n", "bad dependency"),
        ("no-frontmatter", "just text\n", "no frontmatter"),
    ];
    for (id, text, _) in &cases {
        p.write_commission(id, text);
    }
    std::fs::write(p.root.join(".lore/commissions/Bad Name.md"), "---\nworker: scribe\n---\nx\n").expect("write");
    // Ids that are no branch name are refused before they could ever be dispatched.
    for stem in ["a..b", "x.lock", "x."] {
        std::fs::write(p.root.join(format!(".lore/commissions/{stem}.md")), "---\nworker: scribe\n---\nx\n").expect("write");
    }
    let (code, _, err) = p.run(&["reconcile", "--once"]);
    assert_eq!(code, 1, "{err}");
    for stem in ["a..b", "x.lock", "x."] {
        assert!(err.contains(&format!("{stem}.md:1:1: bad file name: invalid id \"{stem}\"")), "{stem}: {err}");
    }
    assert!(p.branches().iter().all(|b| !b.contains("a..b") && !b.contains("x.")), "{:?}", p.branches());
    for (id, text, msg) in &cases {
        assert!(err.contains(msg), "{id}: expected {msg:?} in {err}");
        assert_eq!(&p.artifact(id), text, "{id} untouched");
        assert!(!p.root.join(format!(".lore/commissions/{id}.timeline.jsonl")).exists(), "{id}: no timeline");
    }
    assert!(err.contains("bad file name"), "{err}");
    let (code, out, _) = p.run(&["check"]);
    assert_eq!(code, 1);
    assert!(out.contains("unknown-status.md:3:9:"), "{out}");
    let (_, json, _) = p.run(&["check", "--json"]);
    let problems: serde_json::Value = serde_json::from_str(&json).expect("json");
    assert!(problems.as_array().is_some_and(|a| a.len() >= 6), "{problems}");
    // Bad ids on the command line never reach the filesystem.
    for args in [vec!["status", "../x"], vec!["commission", "dispatch", "../x"], vec!["timeline", "../x"], vec!["logs", "../../etc"]] {
        let (code, _, err) = p.run(&args);
        assert_eq!(code, 1, "{args:?}");
        assert!(err.contains("invalid id"), "{args:?}: {err}");
    }
    // Unknown worker at creation: clear error, nothing written.
    let before: Vec<_> = std::fs::read_dir(p.root.join(".lore/commissions")).expect("dir").collect();
    let (code, _, err) = p.run(&["commission", "create", "--worker", "nobody", "--title", "T", "--prompt", "x"]);
    assert_eq!(code, 1);
    assert!(err.contains("worker \"nobody\" is not installed"), "{err}");
    assert_eq!(before.len(), std::fs::read_dir(p.root.join(".lore/commissions")).expect("dir").count());
}

#[test]
fn toolbox_outside_a_worker_and_misuse() {
    let p = Project::new(&[]);
    let (code, _, err) = p.run(&["toolbox", "report-progress", "hi"]);
    assert_eq!(code, 1);
    assert!(err.contains("GUILD_HALL_COMMISSION is not set"), "{err}");

    let wt = p.tmp.path().join("wt");
    std::fs::create_dir_all(&wt).expect("mkdir");
    std::fs::write(wt.join("r.md"), "r").expect("write");
    let mailbox = p.tmp.path().join("events.jsonl");
    let tool = |args: &[&str]| {
        let out = p
            .cmd()
            .args(["toolbox"])
            .args(args)
            .env("GUILD_HALL_COMMISSION", "c")
            .env("GUILD_HALL_MAILBOX", &mailbox)
            .env("GUILD_HALL_WORKTREE", &wt)
            .env("GUILD_HALL_ATTEMPT", "1")
            .output()
            .expect("runs");
        (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    assert_eq!(tool(&["submit-result", "--summary", "s", "--artifact", "../../etc/passwd"]).0, 1);
    assert_eq!(tool(&["submit-result", "--summary", "s", "--artifact", "missing.md"]).0, 1);
    assert_eq!(tool(&["report-progress", "p"]).0, 0);
    assert_eq!(tool(&["log-question", "q?"]).0, 0);
    assert_eq!(tool(&["record-decision", "--question", "q", "--decision", "d", "--reasoning", "r"]).0, 0);
    assert_eq!(tool(&["submit-result", "--summary", "s", "--artifact", "r.md"]).0, 0);
    let (code, err) = tool(&["submit-result", "--summary", "again"]);
    assert_eq!(code, 1);
    assert!(err.contains("already submitted"), "{err}");
    let lines: Vec<serde_json::Value> =
        std::fs::read_to_string(&mailbox).expect("mailbox").lines().map(|l| serde_json::from_str(l).expect("json")).collect();
    assert_eq!(lines.len(), 4);
    assert_eq!(lines.iter().map(|l| l["seq"].as_u64().unwrap_or(0)).collect::<Vec<_>>(), vec![1, 2, 3, 4]);
}

#[test]
fn questions_and_decisions_reach_artifact_and_timeline() {
    let p = Project::new(&["scribe"]);
    let id = p.create("scribe", "Ask", "output: .lore/a.md\nask: Which format?\nDo.");
    p.settle();
    let s = p.status_json(&id);
    assert_eq!(s["status"], "completed");
    assert_eq!(s["questions"][0], "Which format?", "{s}");
    let k = kinds(&p.timeline(&id));
    assert!(k.contains(&"question".to_string()), "{k:?}");
}

#[test]
fn a_closed_pipe_ends_output_quietly_and_never_a_pass() {
    let p = Project::new(&["scribe"]);
    for i in 0..300 {
        p.write_commission(&format!("draft-{i:03}"), "---\nworker: scribe\nstatus: draft\n---\nLater.\n");
    }
    let bin = assert_cmd::cargo::cargo_bin("guild-hall");
    let piped = |cmd: &str| {
        let out = p.cmd_in_shell(&format!("set -o pipefail; \"{}\" {cmd}", bin.display())).output().expect("sh");
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    for cmd in ["status | head -1", "status --json | head -c 100 >/dev/null", "check --json | head -c 10 >/dev/null"] {
        let (code, err) = piped(cmd);
        assert!(!err.contains("panicked"), "{cmd}: {err}");
        assert!(code == Some(0) || code == Some(1) || code == Some(141), "{cmd}: {code:?} {err}");
    }
    // A reconcile whose reader goes away after the first line still finishes every pass.
    for i in 0..3 {
        p.write_commission(&format!("job-{i}"), &format!("---\nworker: scribe\n---\noutput: .lore/out/{i}.md\nWrite.\n"));
    }
    let (_, err) = piped("reconcile --once --wait --timeout 120s | head -1");
    assert!(!err.contains("panicked"), "{err}");
    for i in 0..3 {
        assert_eq!(p.status(&format!("job-{i}")), "completed");
    }
}

#[test]
fn a_watch_whose_terminal_goes_away_keeps_working() {
    let p = Project::new(&["scribe"]);
    // stderr into a pipe nobody reads any more; stdout likewise.
    let mut child =
        p.cmd().args(["watch", "-v"]).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().expect("watch");
    drop(child.stdout.take());
    drop(child.stderr.take());
    let id = p.create("scribe", "After the pipe closed", "output: .lore/late.md\nWrite.");
    wait_for("the watcher completes the commission", || p.status(&id) == "completed");
    assert!(child.try_wait().expect("try_wait").is_none(), "the watcher is still running");
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGTERM).expect("term");
    let status = child.wait().expect("wait");
    assert_eq!(status.code(), Some(0));
}

#[test]
fn odd_frontmatter_is_refused_quickly_or_accepted_as_written() {
    let p = Project::new(&["scribe"]);
    // 100 KB of '[': refused by size, before any YAML parser sees it.
    p.write_commission("brackets", &format!("---\nworker: scribe\ntitle: {}\n---\nbody\n", "[".repeat(100_000)));
    // Deep flow nesting within the size cap: refused by depth.
    p.write_commission("deep", &format!("---\nworker: scribe\ntitle: {}\n---\nbody\n", "[".repeat(5_000)));
    // A byte-order mark, as some Windows editors write: accepted, and kept on our writes.
    let bom = "\u{feff}---\nworker: scribe\n---\noutput: .lore/bom.md\nWrite.\n";
    p.write_commission("bom", bom);
    let (_, _, err) = p.run(&["reconcile", "--once", "--wait", "--timeout", "60s"]);
    assert!(err.contains("brackets.md:2:1: frontmatter too large"), "{err}");
    assert!(err.contains("deep.md:3:1: frontmatter nests too deeply"), "{err}");
    assert_eq!(p.status("bom"), "completed");
    let text = p.artifact("bom");
    assert!(text.starts_with("\u{feff}---\nworker: scribe\n"), "{text:?}");
    assert!(p.artifact("brackets").len() > 100_000 && p.artifact("deep").contains("title: [[["), "refused files are never rewritten");
}

#[test]
fn a_corrupt_runtime_record_stops_only_its_own_commission() {
    let p = Project::new(&["scribe", "sleeper"]);
    let done = p.create("scribe", "Done", "output: .lore/done.md\nWrite.");
    p.settle();
    let running = p.create("sleeper", "Running", "sleep: 30\nStay.");
    p.pass_until("it runs", |p| p.status(&running) == "in_progress");
    let worker = p.run_info(&running).and_then(|r| r["worker_pid"].as_i64()).expect("worker pid");
    for id in [&done, &running] {
        std::fs::write(p.state_dir(id).join("record.json"), "{\"status\": \"compl").expect("corrupt");
    }
    let before_done = p.artifact(&done);
    let before_running = p.artifact(&running);
    let other = p.create("scribe", "Other", "output: .lore/other.md\nWrite.");
    let (code, _, err) = p.run(&["reconcile", "--once", "--wait", "--timeout", "60s"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("runtime state is corrupt") && err.contains("record.json"), "{err}");
    assert_eq!(p.status(&other), "completed", "the others go on");
    assert_eq!(p.artifact(&done), before_done, "nothing done for it");
    assert_eq!(p.artifact(&running), before_running, "not failed, not redispatched");
    assert!(pid_alive(worker), "its worker is never killed on a guess");
    let s = p.status_json(&running);
    assert!(s["reason"].as_str().is_some_and(|r| r.contains("corrupt runtime state")), "{s}");
    let (code, out, _) = p.run(&["check"]);
    assert_eq!(code, 1);
    assert!(out.contains(&format!("{running}.md:1:1: its runtime state is corrupt")), "{out}");
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(worker as i32), nix::sys::signal::Signal::SIGKILL).expect("kill");
}

#[test]
fn another_projects_corrupt_record_holds_its_slot_under_the_global_cap() {
    let p = Project::new(&["scribe"]);
    let cfg = p.home.join("config.yaml");
    std::fs::write(&cfg, format!("max_concurrent_commissions: 1\n{}", std::fs::read_to_string(&cfg).unwrap_or_default())).expect("cfg");
    // Another project under the same home, whose one commission's record does not parse: its
    // worker may be running for all we know.
    let other = p.home.join("state/elsewhere-0123/commissions/job");
    std::fs::create_dir_all(&other).expect("mkdir");
    std::fs::write(other.join("record.json"), "{\"status\": \"in_prog").expect("corrupt");
    let id = p.create("scribe", "Waits", "Write.");
    let (code, _, err) = p.run(&["reconcile", "--once"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(p.status(&id), "pending", "the global cap is full");
    assert!(err.contains("corrupt runtime state") && err.contains("elsewhere-0123"), "said so: {err}");
    // Repaired (here: removed), the slot is free again.
    std::fs::remove_dir_all(p.home.join("state/elsewhere-0123")).expect("rm");
    p.settle();
    assert_eq!(p.status(&id), "completed");
}

#[test]
fn submit_result_is_accepted_once_however_many_race() {
    let p = Project::new(&[]);
    let wt = p.tmp.path().join("wt");
    std::fs::create_dir_all(&wt).expect("mkdir");
    let mailbox = p.tmp.path().join("events.jsonl");
    for round in 0..5 {
        let _ = std::fs::remove_file(&mailbox);
        let children: Vec<_> = (0..16)
            .map(|i| {
                p.cmd()
                    .args(["toolbox", "submit-result", "--summary", &format!("submitter {i}")])
                    .env("GUILD_HALL_COMMISSION", "c")
                    .env("GUILD_HALL_MAILBOX", &mailbox)
                    .env("GUILD_HALL_WORKTREE", &wt)
                    .env("GUILD_HALL_ATTEMPT", "1")
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null())
                    .spawn()
                    .expect("spawn")
            })
            .collect();
        let accepted = children.into_iter().map(|c| c.wait_with_output().expect("wait")).filter(|o| o.status.success()).count();
        let results = std::fs::read_to_string(&mailbox).expect("mailbox").lines().filter(|l| l.contains("\"kind\":\"result\"")).count();
        assert_eq!((accepted, results), (1, 1), "round {round}");
    }
}

/// A commission artifact that is a symlink (to a file outside the project, here) is refused
/// everywhere with `path: symlink ...`: never read through, never replaced, never acted on.
#[test]
fn symlinked_commissions_are_refused_never_followed_or_replaced() {
    let p = Project::new(&["scribe"]);
    let outside = p.tmp.path().join("outside.md");
    let text = "---\ntitle: Linked\nworker: scribe\nstatus: pending\n---\noutput: .lore/l.md\nDo.\n";
    std::fs::write(&outside, text).expect("write");
    std::os::unix::fs::symlink(&outside, p.artifact_path("linked")).expect("symlink");
    let want = format!("{}: symlink: artifacts must be regular files", p.artifact_path("linked").display());

    let (code, out, _) = p.run(&["check"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("linked.md:1:1: symlink: artifacts must be regular files"), "{out}");
    let (_, out, _) = p.run(&["status", "--json"]);
    let status: serde_json::Value = serde_json::from_str(&out).expect("json");
    let row = status.as_array().and_then(|a| a.iter().find(|r| r["id"] == "linked")).cloned().unwrap_or_default();
    assert_eq!(row["status"], "invalid", "{status}");
    assert!(row["reason"].as_str().unwrap_or("").contains("symlink"), "{row}");

    // A pass reports it, dispatches nothing and writes nothing, through the link or over it.
    let (_, _, err) = p.run(&["reconcile", "--once"]);
    assert!(err.contains("symlink"), "{err}");
    for cmd in [&["commission", "cancel", "linked"][..], &["commission", "dispatch", "linked"][..]] {
        let (code, _, err) = p.run(cmd);
        assert_ne!(code, 0, "{cmd:?}");
        assert!(err.contains(&want), "{cmd:?}: {err}");
    }
    assert!(std::fs::symlink_metadata(p.artifact_path("linked")).expect("link").file_type().is_symlink(), "the link stays");
    assert_eq!(std::fs::read_to_string(&outside).expect("target"), text, "the target is untouched");
    assert!(!p.branches().iter().any(|b| b.contains("linked")), "{:?}", p.branches());
    assert!(!p.root.join(".lore/commissions/linked.timeline.jsonl").exists());

    // Meetings the same way.
    let meeting = p.tmp.path().join("meeting.md");
    std::fs::write(&meeting, "---\nworker: scribe\nstatus: open\n---\n").expect("write");
    std::os::unix::fs::symlink(&meeting, p.root.join(".lore/meetings/m.md")).expect("symlink");
    let (code, out, _) = p.run(&["check"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("m.md:1:1: symlink: artifacts must be regular files"), "{out}");
    p.run(&["reconcile", "--once"]);
    assert!(p.root.join(".lore/meetings/m.md").is_symlink() && !p.branches().iter().any(|b| b.contains("meeting")));
}

/// `.lore/commissions`, `.lore/workers` or `.lore` itself a symlink (a cloned repository's, to
/// a directory outside it): never followed. `check` names the link as an error; a pass runs
/// and rewrites nothing through it; `commission create`, `init` and `workers add` refuse,
/// naming it, and write nothing where it leads.
#[test]
fn a_symlinked_lore_dir_is_refused_never_followed() {
    let p = Project::new(&["scribe"]);
    let outside = p.tmp.path().join("outside-commissions");
    std::fs::create_dir_all(&outside).expect("mkdir");
    let text = "---\ntitle: Elsewhere\nworker: scribe\nstatus: pending\n---\noutput: .lore/e.md\nDo.\n";
    std::fs::write(outside.join("evil.md"), text).expect("write");
    let commissions = p.root.join(".lore/commissions");
    std::fs::remove_dir_all(&commissions).expect("rm");
    std::os::unix::fs::symlink(&outside, &commissions).expect("symlink");
    let named = format!("{} is a symlink", commissions.display());

    let (code, out, err) = p.run(&["check"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains(&named), "{out}{err}");
    let (_, out, err) = p.run(&["reconcile", "--once"]);
    assert!(format!("{out}{err}").contains(&named), "{out}{err}");
    let (code, _, err) = p.run(&["commission", "create", "--worker", "scribe", "--title", "New", "--prompt", "output: .lore/n.md\nDo."]);
    assert_ne!(code, 0, "created through the link");
    assert!(err.contains(&named), "{err}");
    let (code, _, err) = p.run(&["init"]);
    assert_ne!(code, 0, "init went on through the link");
    assert!(err.contains(&named), "{err}");
    let left: Vec<_> = std::fs::read_dir(&outside).expect("ls").map(|e| e.expect("entry").file_name()).collect();
    assert_eq!(left, ["evil.md"], "nothing written where the link leads");
    assert_eq!(std::fs::read_to_string(outside.join("evil.md")).expect("read"), text, "never rewritten");
    assert!(!p.branches().iter().any(|b| b.contains("evil")), "never run: {:?}", p.branches());

    // `.lore/workers`: its packages are not read, and `workers add` writes nothing through it.
    let q = Project::new(&[]);
    let outside = q.tmp.path().join("outside-workers");
    std::fs::create_dir_all(&outside).expect("mkdir");
    copy_dir(&examples().join("scribe"), &outside.join("scribe"));
    let workers = q.root.join(".lore/workers");
    std::fs::remove_dir_all(&workers).expect("rm");
    std::os::unix::fs::symlink(&outside, &workers).expect("symlink");
    let named = format!("{} is a symlink", workers.display());
    let (code, _, err) = q.run(&["workers", "add", "claude-code"]);
    assert_ne!(code, 0, "added through the link");
    assert!(err.contains(&named), "{err}");
    assert!(!outside.join("claude-code").exists(), "written where the link leads");
    let (code, out, err) = q.run(&["check"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains(&named), "{out}{err}");
    // A commission for the package there waits; nothing of it runs.
    q.write_commission("linked-scribe", "---\ntitle: Linked scribe\nworker: scribe\nstatus: pending\n---\noutput: .lore/s.md\nDo.\n");
    q.run(&["reconcile", "--once"]);
    assert_eq!(q.status("linked-scribe"), "blocked", "{}", q.artifact("linked-scribe"));
    assert!(!q.branches().iter().any(|b| b.contains("linked-scribe")), "a package read through the link ran: {:?}", q.branches());

    // `.lore` itself.
    let r = Project::new(&[]);
    let real = r.tmp.path().join("lore-elsewhere");
    std::fs::rename(r.root.join(".lore"), &real).expect("move");
    std::os::unix::fs::symlink(&real, r.root.join(".lore")).expect("symlink");
    let named = format!("{} is a symlink", r.root.join(".lore").display());
    let (code, out, err) = r.run(&["check"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains(&named), "{out}{err}");
    let (code, _, err) = r.run(&["workers", "add", "claude-code"]);
    assert_ne!(code, 0);
    assert!(err.contains(&named), "{err}");
    assert!(!real.join("workers/claude-code").exists());
}

/// A file in `.lore/commissions` (or a package dir in `.lore/workers`) whose name is not UTF-8
/// is no artifact: `check` says so, naming it, instead of skipping it without a word.
#[test]
fn check_names_files_whose_names_are_not_utf8() {
    use std::os::unix::ffi::OsStrExt;
    let p = Project::new(&["scribe"]);
    let name = std::ffi::OsStr::from_bytes(b"caf\xe9.md");
    std::fs::write(p.root.join(".lore/commissions").join(name), "---\ntitle: T\nworker: scribe\n---\nDo.\n").expect("write");
    std::fs::create_dir_all(p.root.join(".lore/workers").join(std::ffi::OsStr::from_bytes(b"w\xff"))).expect("mkdir");
    let (code, out, err) = p.run(&["check"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("caf\u{FFFD}.md") && out.contains("not UTF-8"), "{out}{err}");
    assert!(out.contains("w\u{FFFD}"), "{out}{err}");
    let (code, out, err) = p.run(&["check", "--json"]);
    assert_eq!(code, 1, "{out}{err}");
    let all: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert!(all.to_string().contains("not UTF-8"), "{all}");
}
