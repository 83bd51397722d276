//! `guild-hall watch` as a real service against temp projects: editor saves of every kind, git
//! checkouts, worker results, crashes and hangs, stop and restart with a worker still running,
//! SIGHUP, two projects under one global cap, a malformed file that must not spin, the lock.

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::*;
use nix::sys::signal::Signal;
use nix::unistd::Pid;

/// Save like vim or JetBrains: write a temp file beside it, then rename over.
fn rename_save(path: &std::path::Path, text: &str) {
    let tmp = path.with_file_name(format!(".{}.swp", path.file_name().and_then(|n| n.to_str()).unwrap_or("x")));
    std::fs::write(&tmp, text).expect("write tmp");
    std::fs::rename(&tmp, path).expect("rename");
}

/// Save like VS Code: truncate, then write.
fn truncate_write(path: &std::path::Path, text: &str) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().write(true).truncate(true).open(path).expect("open");
    std::thread::sleep(Duration::from_millis(20));
    f.write_all(text.as_bytes()).expect("write");
}

/// The status a pass last recorded for commission `id` (of any project under `home`): there is
/// one only once the watcher has planned the commission, so what it says is what that pass
/// decided.
fn recorded(home: &std::path::Path, id: &str) -> Option<String> {
    for e in std::fs::read_dir(home.join("state")).ok()?.filter_map(|e| e.ok()) {
        let record = e.path().join("commissions").join(id).join("record.json");
        if let Ok(v) = std::fs::read(&record).map(|b| serde_json::from_slice::<serde_json::Value>(&b)) {
            return v.ok().and_then(|v| v["status"].as_str().map(str::to_string));
        }
    }
    None
}

/// Wait for a pass to have planned `id`, and return the status it recorded.
fn planned(home: &std::path::Path, id: &str) -> String {
    let mut status = None;
    wait_for(&format!("a pass to plan {id}"), || {
        status = recorded(home, id);
        status.is_some()
    });
    status.unwrap_or_default()
}

#[test]
fn editor_saves_and_git_checkouts_drive_commissions() {
    let p = Project::new(&["scribe", "sleeper"]);
    let svc = Service::start(&p, &[], &[]);
    // Rename-save (vim, JetBrains) of a new commission.
    rename_save(&p.artifact_path("renamed"), "---\nworker: scribe\n---\noutput: .lore/r.md\nWrite.\n");
    wait_status(&p, "renamed", "completed");
    // A draft, then truncate-and-write (VS Code) to submit it.
    rename_save(&p.artifact_path("later"), "---\nworker: scribe\nstatus: draft\n---\noutput: .lore/l.md\nWrite.\n");
    // A pass has seen it (and would have dispatched it, were it pending): it stays a draft.
    assert_eq!(planned(&p.home, "later"), "draft");
    assert_eq!(p.status("later"), "draft");
    let text = p.artifact("later").replace("status: draft", "status: pending");
    truncate_write(&p.artifact_path("later"), &text);
    wait_status(&p, "later", "completed");
    // Several commissions arriving at once through a git checkout: the branch is made in another
    // worktree, so the watcher first sees them when the checkout brings them.
    let other = p.tmp.path().join("other");
    git(&p.root, &["worktree", "add", "-q", "-b", "incoming", other.to_str().expect("utf8"), "main"]);
    std::fs::create_dir_all(other.join(".lore/commissions")).expect("mkdir");
    for i in 0..3 {
        std::fs::write(
            other.join(format!(".lore/commissions/batch-{i}.md")),
            format!("---\nworker: scribe\n---\noutput: .lore/b{i}.md\nWrite.\n"),
        )
        .expect("write");
    }
    git(&other, &["add", "-A"]);
    git(&other, &["commit", "-q", "-m", "batch"]);
    git(&p.root, &["worktree", "remove", other.to_str().expect("utf8")]);
    for i in 0..3 {
        assert!(!p.artifact_path(&format!("batch-{i}")).exists());
    }
    git(&p.root, &["checkout", "-q", "incoming"]);
    for i in 0..3 {
        wait_status(&p, &format!("batch-{i}"), "completed");
    }
    // Editor droppings are not commissions and break nothing: left as they are, no timeline,
    // no error, and the watcher goes on with the next real commission.
    std::fs::write(p.root.join(".lore/commissions/4913"), "").expect("write");
    std::fs::write(p.root.join(".lore/commissions/notes.md~"), "backup").expect("write");
    rename_save(&p.artifact_path("after-droppings"), "---\nworker: scribe\n---\noutput: .lore/after.md\nWrite.\n");
    wait_status(&p, "after-droppings", "completed");
    assert_eq!(std::fs::read_to_string(p.root.join(".lore/commissions/notes.md~")).expect("kept"), "backup");
    assert_eq!(std::fs::read_to_string(p.root.join(".lore/commissions/4913")).expect("kept"), "");
    let timelines: Vec<_> = std::fs::read_dir(p.root.join(".lore/commissions"))
        .expect("dir")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("4913") || n.contains("notes"))
        .collect();
    assert_eq!(timelines.len(), 2, "only the droppings themselves: {timelines:?}");
    let log = svc.log();
    assert!(!log.contains("commissions/4913") && !log.contains("notes.md~"), "{log}");
    assert_eq!(svc.stop(), Some(0));
}

#[test]
fn results_crashes_and_hangs_are_judged_while_watching() {
    let p = Project::new(&["crasher", "hanger", "silent"]);
    p.config("stale_after: 2s\n");
    let _svc = Service::start(&p, &[], &[]);
    let c = p.create("crasher", "Crash", "Crash after submitting.");
    let h = p.create("hanger", "Hang", "Hang.");
    let s = p.create("silent", "Silent", "Say nothing.");
    wait_status(&p, &c, "completed");
    wait_status(&p, &s, "failed");
    wait_status(&p, &h, "failed");
    assert_eq!(p.status_json(&h)["reason"], "process unresponsive");
    assert_eq!(p.status_json(&s)["reason"], "completed without submitting result");
}

#[test]
fn a_killed_worker_fails_without_polling() {
    let p = Project::new(&["sleeper"]);
    let _svc = Service::start(&p, &[], &["--resync", "1h"]);
    let id = p.create("sleeper", "Victim", "sleep: 300\nWork.");
    wait_status(&p, &id, "in_progress");
    let pgid = p.run_info(&id).expect("run")["pgid"].as_i64().expect("pgid") as i32;
    nix::sys::signal::killpg(Pid::from_raw(pgid), Signal::SIGKILL).expect("killpg");
    // No exit.json is written for a SIGKILLed group; the shim's released lock wakes the loop.
    wait_status(&p, &id, "failed");
    assert_eq!(p.status_json(&id)["reason"], "process lost on restart");
}

#[test]
fn stop_and_restart_readopts_a_running_worker() {
    let p = Project::new(&["sleeper"]);
    let svc = Service::start(&p, &[], &[]);
    let id = p.create("sleeper", "Long", "sleep: 3\nWork a while.");
    wait_status(&p, &id, "in_progress");
    let worker = p.run_info(&id).expect("run")["worker_pid"].as_i64().expect("pid");
    assert_eq!(svc.stop(), Some(0));
    assert!(pid_alive(worker), "the worker belongs to its shim, not to the service");
    assert_eq!(p.status(&id), "in_progress");
    let _svc = Service::start(&p, &[], &[]);
    wait_status(&p, &id, "completed");
    assert_eq!(p.status_json(&id)["attempt"], 1, "re-adopted, not re-run");
}

#[test]
fn sighup_with_a_raised_cap_dispatches_the_queue() {
    let p = Project::new(&["sleeper"]);
    p.config("commission_cap: 1\n");
    let svc = Service::start(&p, &[], &[]);
    let a = p.create("sleeper", "A", "sleep: 300\nLong.");
    std::thread::sleep(Duration::from_millis(1100));
    let b = p.create("sleeper", "B", "sleep: 300\nLong.");
    wait_status(&p, &a, "in_progress");
    // A pass has planned b and, with a running and the cap at 1, left it queued.
    assert_eq!(planned(&p.home, &b), "pending");
    assert_eq!(p.status(&b), "pending");
    p.config("commission_cap: 2\n");
    svc.signal(Signal::SIGHUP);
    wait_status(&p, &b, "in_progress");
    // The signal is logged as the loop takes it; the config file's own event may have started
    // the pass that dispatched b first.
    wait_for("the SIGHUP logged", || svc.log().contains("SIGHUP"));
    for id in [&a, &b] {
        std::fs::write(p.artifact_path(id), p.artifact(id).replace("status: in_progress", "status: cancelled")).expect("cancel");
        wait_status(&p, id, "cancelled");
    }
    // Their workers stopped by the watcher, before it is stopped itself.
    for id in [&a, &b] {
        wait_stopped(&p, id);
    }
}

#[test]
fn two_projects_share_the_global_cap() {
    let a = Project::new(&["sleeper"]);
    let b = Project::new(&["sleeper"]);
    std::fs::write(a.home.join("config.yaml"), "max_concurrent_commissions: 1\n").expect("cfg");
    // b uses a's home.
    let b_home = |args: &[&str]| {
        let out = b.cmd().env("GUILD_HALL_HOME", &a.home).args(args).output().expect("runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    b_home(&["init"]);
    let svc = Service::start(&a, &[&a.root, &b.root], &[]);
    let ia = a.create("sleeper", "A", "sleep: 2\nShort.");
    wait_status(&a, &ia, "in_progress");
    let ib = b_home(&["commission", "create", "--worker", "sleeper", "--title", "B", "--prompt", "sleep: 1\nShort."]).trim().to_string();
    // A pass has planned b while a runs: held back by the global cap.
    assert_eq!(planned(&a.home, &ib), "pending", "held back by the global cap");
    let sb: serde_json::Value = serde_json::from_str(&b_home(&["status", &ib, "--json"])).expect("json");
    assert_eq!(sb["status"], "pending", "held back by the global cap");
    wait_status(&a, &ia, "completed");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let sb: serde_json::Value = serde_json::from_str(&b_home(&["status", &ib, "--json"])).expect("json");
        if sb["status"] == "completed" {
            break;
        }
        assert!(Instant::now() < deadline, "b never ran: {sb}");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(svc.stop(), Some(0));
}

#[test]
fn a_malformed_artifact_does_not_spin() {
    let p = Project::new(&["scribe"]);
    let svc = Service::start(&p, &[], &["-v", "--resync", "1s"]);
    std::fs::write(p.artifact_path("broken"), "---\ntitle: [unclosed\nworker: scribe\n---\nbody\n").expect("write");
    wait_for("the problem to be reported", || svc.log().contains("broken.md:3:7: invalid YAML"));
    // The passes after the one that reported it, by what caused each.
    let causes = || -> Vec<String> {
        let log = svc.log();
        let report = log.find("broken.md:3:7: invalid YAML").unwrap_or(0);
        log[report..]
            .lines()
            .filter(|l| l.contains("\"message\":\"pass\""))
            .skip(1)
            .map(|l| {
                serde_json::from_str::<serde_json::Value>(l)
                    .map(|v| v["fields"]["cause"].as_str().unwrap_or("?").to_string())
                    .unwrap_or_default()
            })
            .collect()
    };
    // Two resyncs later, every pass at rest was a resync: none was woken by a file the
    // watcher itself wrote (a loop on its own writes would be, over and over).
    wait_for("two resyncs after the report", || causes().iter().filter(|c| *c == "resync").count() >= 2);
    let causes = causes();
    assert!(causes.iter().all(|c| c == "resync"), "passes at rest with a broken file: {causes:?}");
    assert_eq!(svc.log().matches("broken.md:3:7: invalid YAML").count(), 1, "reported once");
    assert_eq!(p.artifact("broken"), "---\ntitle: [unclosed\nworker: scribe\n---\nbody\n");
}

#[test]
fn reconcile_refuses_or_waits_while_a_watcher_holds_the_project() {
    let p = Project::new(&["scribe"]);
    let svc = Service::start(&p, &[], &[]);
    let (code, _, err) = p.run(&["reconcile", "--once"]);
    assert_eq!(code, 1);
    assert!(err.contains("guild-hall watch (pid") && err.contains("--wait-lock"), "{err}");
    let status = p.ok(&["status"]);
    assert!(status.contains("reconciler: guild-hall watch (pid"), "{status}");
    // --wait-lock waits, and says once for whom: the watcher, by its pid.
    let said = p.tmp.path().join("waiting.err");
    let mut waiting = p
        .cmd()
        .args(["reconcile", "--once", "--wait-lock"])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&said).expect("file"))
        .spawn()
        .expect("spawn");
    let holder = format!("waiting for the project lock, held by guild-hall watch (pid {})", svc.pid());
    let err = || std::fs::read_to_string(&said).unwrap_or_default();
    wait_for("the reconciler to say whom it waits for", || err().contains(&holder));
    assert!(waiting.try_wait().expect("poll").is_none(), "waits for the lock: {}", err());
    assert_eq!(svc.stop(), Some(0));
    assert!(waiting.wait().expect("wait").success(), "{}", err());
    assert_eq!(err().matches("waiting for the project lock").count(), 1, "said once: {}", err());
}

#[test]
fn a_dependency_outside_lore_committed_unblocks_at_once() {
    let p = Project::new(&["scribe"]);
    // Resync far away: only a file event (the integration branch moving) can wake it.
    let _svc = Service::start(&p, &[], &["--resync", "1h"]);
    std::fs::write(p.artifact_path("needs-spec"), "---\nworker: scribe\ndependencies: [docs/spec.md]\n---\noutput: .lore/s.md\nGo.\n")
        .expect("write");
    wait_status(&p, "needs-spec", "blocked");
    p.commit_on_integration("docs/spec.md", "the spec\n", "the spec");
    wait_status(&p, "needs-spec", "completed");
}

#[test]
fn the_polling_watcher_drives_commissions_too() {
    // The same watcher the service falls back to when inotify runs out of watches.
    let p = Project::new(&["scribe"]);
    let _svc = Service::start(&p, &[], &["--poll", "--resync", "1h"]);
    rename_save(&p.artifact_path("polled"), "---\nworker: scribe\n---\noutput: .lore/p.md\nWrite.\n");
    wait_status(&p, "polled", "completed");
}

/// Context switches of every thread of `pid` so far: a thread that wakes (a tick, a timeout)
/// adds one each time, a thread blocked until something happens adds none.
fn context_switches(pid: u32) -> u64 {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).expect("tasks");
    tasks
        .filter_map(|t| t.ok())
        .filter_map(|t| std::fs::read_to_string(t.path().join("status")).ok())
        .flat_map(|s| {
            s.lines()
                .filter(|l| l.contains("ctxt_switches:"))
                .filter_map(|l| l.split(':').nth(1).and_then(|n| n.trim().parse::<u64>().ok()))
                .collect::<Vec<_>>()
        })
        .sum()
}

#[test]
fn at_rest_no_thread_of_the_watcher_wakes_and_a_save_still_runs_at_once() {
    let p = Project::new(&["scribe"]);
    std::fs::write(p.artifact_path("done"), "---\nworker: scribe\n---\noutput: .lore/d.md\nWrite.\n").expect("write");
    let svc = Service::start(&p, &[], &["--resync", "1h"]);
    wait_status(&p, "done", "completed");
    // Once its passes are over, the watcher sleeps: two looks a second apart see no thread
    // switched in between (a tick of any length, or a timed wait for signals, would show).
    let mut last = context_switches(svc.pid());
    wait_for("a second in which no thread of the watcher woke", || {
        std::thread::sleep(Duration::from_secs(1));
        let now = context_switches(svc.pid());
        std::mem::replace(&mut last, now) == now
    });
    // Asleep, it still answers a save: a rename into place runs the commission.
    rename_save(&p.artifact_path("next"), "---\nworker: scribe\n---\noutput: .lore/n.md\nWrite.\n");
    wait_status(&p, "next", "completed");
    assert_eq!(svc.stop(), Some(0));
}

/// Without `--log-format json`, `watch` says each action in the lines `reconcile` prints (the
/// id, then what was done), not in `tracing`'s format; its diagnostics stay `tracing`'s.
#[test]
fn watch_says_its_actions_as_reconcile_does() {
    let p = Project::new(&["scribe"]);
    let log = p.tmp.path().join("human-watch.log");
    let file = std::fs::File::create(&log).expect("log");
    let mut child = p.cmd().args(["watch"]).stdout(Stdio::null()).stderr(file).spawn().expect("spawn watch");
    let read = || std::fs::read_to_string(&log).unwrap_or_default();
    wait_for("the watcher to take its project", || read().contains("watching"));
    let id = p.create("scribe", "Notes", "output: .lore/notes.md\nWrite.");
    wait_status(&p, &id, "completed");
    wait_for("the merge to be said", || read().contains("complete: squash-merge"));
    let _ = nix::sys::signal::kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM);
    let _ = child.wait();
    let said = read();
    let padded = format!("{id:<28} ");
    let line = |what: &str| said.lines().any(|l| l.starts_with(&padded) && l.contains(what));
    assert!(line(&format!("dispatch attempt 1 on claude/commission/{id} (worker scribe)")), "{said}");
    assert!(line(&format!("complete: squash-merge claude/commission/{id}")), "{said}");
    assert!(!said.contains("timeline event"), "{said}");
    assert!(!said.contains("action=") && !said.contains("guild_hall::service::watch: dispatch"), "no tracing format for actions: {said}");
}

/// `watch` of every registered project goes on when one of them is no longer set up (its
/// integration branch deleted since): that one is skipped, named; the others run.
#[test]
fn watch_of_every_project_skips_one_no_longer_set_up() {
    let a = Project::new(&["scribe"]);
    let mut b = Project::new(&[]);
    b.home = a.home.clone();
    b.ok(&["init"]);
    git(&b.root, &["branch", "-D", "claude/main"]);
    let svc = Service::start(&a, &[], &[]);
    let id = a.create("scribe", "Watched", "output: .lore/watched.md\nWrite.");
    wait_status(&a, &id, "completed");
    let log = svc.log();
    assert!(log.contains("skipping") && log.contains(&b.root.display().to_string()), "{log}");
}
