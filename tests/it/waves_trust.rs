//! Wave tasks and verify under the liveness rules of commissions (issue 17, item 5): a hung
//! one fails "process unresponsive" after `stale_after` and its processes are stopped, a busy
//! one past its `timeout:` fails naming the limit; and Kiln's resume classes after a crash —
//! a task whose supervisor died is `rerun_required` and runs again, one whose worktree is gone
//! is `orphaned`, reported, and runs again in a fresh worktree. Real processes, real git; these
//! tests kill only what their own guild-hall started (run them in a private pid namespace).

use serde_json::Value;

use crate::common::{pid_alive, wait_for, Project};

fn write_plan(p: &Project, id: &str, extra: &str, waves: &str) {
    let dir = p.root.join(".lore/plans");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(dir.join(format!("{id}.md")), format!("---\ntitle: {id}\n{extra}waves:\n{waves}---\n")).expect("write plan");
}

fn show(p: &Project, id: &str) -> Value {
    serde_json::from_str(&p.ok(&["plan", "show", id, "--json"])).expect("plan json")
}

fn task<'a>(v: &'a Value, label: &str) -> &'a Value {
    v["tasks"].as_array().expect("tasks").iter().find(|t| t["label"] == label).expect("the task")
}

/// The plan's runtime dir (empty until the first pass made the project's).
fn plan_state(p: &Project, plan: &str) -> std::path::PathBuf {
    let project = p.home.join("state").read_dir().ok().and_then(|mut d| d.next()).and_then(|e| e.ok()).map(|e| e.path());
    project.unwrap_or_default().join("plans").join(plan)
}

fn read_run(dir: &std::path::Path) -> Option<Value> {
    std::fs::read(dir.join("run.json")).ok().and_then(|b| serde_json::from_slice(&b).ok())
}

/// The run of a task's attempt once its worker runs: (shim pid, worker pid).
fn running(p: &Project, plan: &str, slug: &str) -> (i64, i64) {
    let mut found = None;
    p.pass_until("the task's worker to run", |p| {
        found = read_run(&plan_state(p, plan).join("tasks").join(slug)).and_then(|r| Some((r["pid"].as_i64()?, r["worker_pid"].as_i64()?)));
        found.is_some_and(|(_, w)| pid_alive(w))
    });
    found.expect("run")
}

fn has_event(v: &Value, kind: &str, text: &str) -> bool {
    v["log"].as_array().expect("log").iter().any(|e| e["kind"] == kind && e.to_string().contains(text))
}

/// `sleep 1000` as a task under `stale_after: 3s`: no output, no CPU, no update after its
/// first: failed "process unresponsive", every process of it gone, the plan halted.
#[test]
fn a_hung_task_fails_unresponsive_and_its_processes_are_gone() {
    let p = Project::new(&["mason"]);
    p.config("stale_after: 3s\ncancel_grace: 2s\n");
    write_plan(&p, "hung", "", "  - - {id: t, worker: mason, prompt: \"sleep: 1000\\nwrite: never.txt x\"}\n");
    let (shim, worker) = running(&p, "hung", "hung-exec-wave-1-task-1");
    p.pass_until("the hung task to fail", |p| task(&show(p, "hung"), "t")["state"] == "failed");
    let v = show(&p, "hung");
    assert_eq!(task(&v, "t")["reason"], "process unresponsive", "{v}");
    assert!(has_event(&v, "heartbeat", "stale: no progress, output or CPU"), "{v}");
    wait_for("the hung worker and its shim to be gone", || !pid_alive(worker) && !pid_alive(shim));
    p.settle();
    let v = show(&p, "hung");
    assert_eq!(v["status"], "halted", "{v}");
    assert!(v["reason"].as_str().unwrap_or("").contains("process unresponsive"), "{v}");
}

/// Output keeps a task alive past `stale_after`, never past its `timeout:`: the task's own
/// limit, or the plan's for every task that has none.
#[test]
fn a_busy_task_past_its_timeout_fails_naming_the_limit() {
    let p = Project::new(&["mason"]);
    p.config("stale_after: 2s\ncancel_grace: 2s\n");
    write_plan(&p, "own", "", "  - - {id: t, worker: mason, timeout: 4s, prompt: \"chat: 1000\"}\n");
    write_plan(&p, "planwide", "timeout: 4s\n", "  - - {id: t, worker: mason, prompt: \"chat: 1000\"}\n");
    let (_, own) = running(&p, "own", "own-exec-wave-1-task-1");
    let (_, planwide) = running(&p, "planwide", "planwide-exec-wave-1-task-1");
    p.pass_until("both busy tasks to fail", |p| {
        task(&show(p, "own"), "t")["state"] == "failed" && task(&show(p, "planwide"), "t")["state"] == "failed"
    });
    assert_eq!(task(&show(&p, "own"), "t")["reason"], "timed out: ran longer than 4s (the task's timeout)");
    assert_eq!(task(&show(&p, "planwide"), "t")["reason"], "timed out: ran longer than 4s (the plan's timeout)");
    wait_for("the busy workers to be gone", || !pid_alive(own) && !pid_alive(planwide));
    assert!(p.ok(&["logs", "own:exec:wave-1:task-1"]).contains("mason: still at it"), "it was printing all along");
}

/// A verify is held to the same rules: a hung one fails the gate "process unresponsive", a
/// chatty one past the plan's `timeout:` fails it naming the limit; both are stopped.
#[test]
fn a_hung_or_overlong_verify_fails_the_gate_naming_why() {
    let p = Project::new(&["mason"]);
    p.config("stale_after: 3s\ncancel_grace: 2s\n");
    write_plan(&p, "quiet", "verify: [sleep, \"1000\"]\n", "  - - {id: t, worker: mason, prompt: \"write: q.txt q\"}\n");
    write_plan(
        &p,
        "loud",
        "timeout: 4s\nverify: [sh, -c, \"while true; do echo checking; sleep 0.2; done\"]\n",
        "  - - {id: t, worker: mason, prompt: \"write: l.txt l\"}\n",
    );
    let verify_pid = |plan: &str| read_run(&plan_state(&p, plan).join("verify")).and_then(|r| r["worker_pid"].as_i64());
    p.pass_until("both verifies to run", |_| verify_pid("quiet").is_some_and(pid_alive) && verify_pid("loud").is_some_and(pid_alive));
    let (quiet, loud) = (verify_pid("quiet").expect("pid"), verify_pid("loud").expect("pid"));
    p.settle();
    let v = show(&p, "quiet");
    assert_eq!(v["status"], "halted", "{v}");
    assert!(v["reason"].as_str().unwrap_or("").contains("verify failed after wave 1 (process unresponsive"), "{v}");
    let v = show(&p, "loud");
    assert_eq!(v["status"], "halted", "{v}");
    assert!(v["reason"].as_str().unwrap_or("").contains("(timed out: ran longer than 4s (the plan's timeout))"), "{v}");
    wait_for("both verifies to be gone", || !pid_alive(quiet) && !pid_alive(loud));
}

/// A run killed mid-task (its shim and worker SIGKILLed, as by the OOM killer or a reboot):
/// the task is `rerun_required` and runs again in its worktree; when its worktree was removed
/// too, it is `orphaned` — reported with the path — and runs again in a fresh one. Both land
/// once.
#[test]
fn a_task_killed_mid_run_is_rerun_and_one_whose_worktree_went_is_orphaned() {
    let p = Project::new(&["mason"]);
    for plan in ["re", "or"] {
        write_plan(&p, plan, "", &format!("  - - {{id: t, worker: mason, prompt: \"write: {plan}.txt {plan}\\nsleep: 1000\"}}\n"));
    }
    let (re_shim, re_worker) = running(&p, "re", "re-exec-wave-1-task-1");
    let (or_shim, or_worker) = running(&p, "or", "or-exec-wave-1-task-1");
    for shim in [re_shim, or_shim] {
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(shim as i32), nix::sys::signal::Signal::SIGKILL).expect("kill the shim");
    }
    wait_for("the killed attempts to be gone", || [re_shim, re_worker, or_shim, or_worker].iter().all(|p| !pid_alive(*p)));
    let or_worktree: std::path::PathBuf = serde_json::from_slice::<Value>(
        &std::fs::read(plan_state(&p, "or").join("tasks/or-exec-wave-1-task-1/worktree.json")).expect("worktree.json"),
    )
    .expect("json")["path"]
        .as_str()
        .expect("path")
        .into();
    std::fs::remove_dir_all(&or_worktree).expect("remove the worktree");
    // Classified from what is there, before anything is done about it.
    assert_eq!(task(&show(&p, "re"), "t")["class"], "rerun_required");
    assert_eq!(task(&show(&p, "or"), "t")["class"], "orphaned");
    for plan in ["re", "or"] {
        let path = p.root.join(format!(".lore/plans/{plan}.md"));
        let text = std::fs::read_to_string(&path).expect("read");
        std::fs::write(&path, text.replace("\\nsleep: 1000", "")).expect("edit");
    }
    p.settle();
    for plan in ["re", "or"] {
        let v = show(&p, plan);
        assert_eq!(v["status"], "completed", "{v}");
        assert_eq!(task(&v, "t")["attempt"], 2, "{v}");
        assert!(has_event(&v, "rerun_required", "its supervisor died"), "{v}");
        let log = crate::common::git(&p.root, &["log", "--format=%B", "claude/main"]);
        assert_eq!(log.matches(&format!("Guild-Hall-Task: {plan}:exec:wave-1:task-1")).count(), 1, "{log}");
        assert_eq!(crate::common::git(&p.root, &["show", &format!("claude/main:{plan}.txt")]), format!("{plan}\n"));
    }
    let v = show(&p, "or");
    assert!(has_event(&v, "orphaned", &or_worktree.display().to_string()), "the orphan is reported with its path: {v}");
    assert!(!has_event(&show(&p, "re"), "orphaned", ""), "a worktree still there is reused, not orphaned");
}

/// A worktree record naming another path (a corrupt or planted `worktree.json`) never gets that
/// path deleted, reset or cleaned: a task runs again in the worktree made for its id, a verify
/// in the one made for its plan, and the person's checkout and files are untouched.
#[test]
fn a_forged_worktree_record_is_never_reset_cleaned_or_removed() {
    let p = Project::new(&["mason"]);
    let victim = p.tmp.path().join("victim");
    std::fs::create_dir_all(&victim).expect("mkdir");
    std::fs::write(victim.join("keep.txt"), "mine\n").expect("write");
    // A person's uncommitted work in their checkout.
    std::fs::write(p.root.join("draft.txt"), "not committed\n").expect("write");
    std::fs::write(p.root.join("README.md"), "# demo, edited\n").expect("write");
    write_plan(&p, "fg", "verify: [sh, -c, \"test -f t.txt\"]\n", "  - - {id: t, worker: mason, prompt: \"write: t.txt t\\nfail\"}\n");
    p.settle();
    assert_eq!(show(&p, "fg")["status"], "halted");
    let common = p.root.join(".git");
    let forge = |file: std::path::PathBuf, path: &std::path::Path| {
        let rec = serde_json::json!({"path": path, "admin": common.join("worktrees/elsewhere"), "common": common, "branch": "main", "sparse": false});
        std::fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
        std::fs::write(file, rec.to_string()).expect("forge");
    };
    forge(plan_state(&p, "fg").join("tasks/fg-exec-wave-1-task-1/worktree.json"), &victim);
    let checkout = serde_json::json!({"path": p.root, "admin": common, "common": common, "branch": "main", "sparse": false});
    std::fs::create_dir_all(plan_state(&p, "fg").join("verify")).expect("mkdir");
    std::fs::write(plan_state(&p, "fg").join("verify/worktree.json"), checkout.to_string()).expect("forge");
    assert_eq!(task(&show(&p, "fg"), "t")["class"], "orphaned");
    let path = p.root.join(".lore/plans/fg.md");
    std::fs::write(&path, std::fs::read_to_string(&path).expect("read").replace("\\nfail", "")).expect("edit");
    p.ok(&["plan", "retry", "fg"]);
    p.settle();
    let v = show(&p, "fg");
    assert_eq!(v["status"], "completed", "{v}");
    assert_eq!(std::fs::read_to_string(victim.join("keep.txt")).expect("the victim dir is still there"), "mine\n");
    assert_eq!(std::fs::read_to_string(p.root.join("draft.txt")).expect("untracked work kept"), "not committed\n");
    assert_eq!(std::fs::read_to_string(p.root.join("README.md")).expect("read"), "# demo, edited\n");
    assert!(has_event(&v, "orphaned", &victim.display().to_string()), "{v}");
}

/// Under the service nothing on disk changes while a task hangs or after its shim is killed:
/// the watcher looks again at the task's stale deadline, and wakes when its shim is gone.
#[test]
fn the_service_judges_hung_and_killed_tasks_without_polling() {
    let p = Project::new(&["mason"]);
    p.config("stale_after: 2s\n");
    write_plan(&p, "hang", "", "  - - {id: t, worker: mason, prompt: \"sleep: 1000\"}\n");
    let _svc = crate::common::Service::start(&p, &[], &["--resync", "1h"]);
    wait_for("the hung task to fail", || task(&show(&p, "hang"), "t")["state"] == "failed");
    assert_eq!(task(&show(&p, "hang"), "t")["reason"], "process unresponsive");

    let q = Project::new(&["mason"]);
    write_plan(&q, "kill", "", "  - - {id: t, worker: mason, prompt: \"first-sleep: 1000\\nwrite: k.txt k\"}\n");
    let _svc = crate::common::Service::start(&q, &[], &["--resync", "1h"]);
    let dir = || plan_state(&q, "kill").join("tasks/kill-exec-wave-1-task-1");
    let mut shim = 0;
    wait_for("the task to run", || {
        shim = read_run(&dir()).and_then(|r| r["pid"].as_i64()).unwrap_or(0);
        shim > 0 && pid_alive(shim)
    });
    // Killed once the watcher has taken in everything the start wrote (its update folded, its
    // heartbeat written): what wakes it then is the shim's end alone.
    wait_for("the watcher to settle on the running task", || {
        dir().join("heartbeat").exists() && has_event(&show(&q, "kill"), "task_update", "in_progress")
    });
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(shim as i32), nix::sys::signal::Signal::SIGKILL).expect("kill the shim");
    wait_for("the killed task to run again and land", || show(&q, "kill")["status"] == "completed");
    let v = show(&q, "kill");
    assert_eq!(task(&v, "t")["attempt"], 2, "{v}");
    assert!(has_event(&v, "rerun_required", "its supervisor died"), "{v}");
}
