//! Wave tasks and verify under the liveness rules of commissions: a hung
//! one fails "process unresponsive" after `stale_after` and its processes are stopped, a busy
//! one past its `timeout:` fails naming the limit; and Kiln's resume classes after a crash —
//! a task whose supervisor died is `rerun_required` and runs again once what it left running
//! is killed, one whose worktree is gone is `orphaned`, reported, and runs again in a fresh
//! worktree; a task's or verify's `run.json` that cannot be trusted is reported and signals
//! nothing. Real processes, real git; a test that kills by pid, or forges a
//! record that could get one signalled, runs in a private pid namespace.

use serde_json::Value;

use super::fixtures::{show, task};
use crate::common::{pid_alive, wait_for, Project};

fn write_plan(p: &Project, id: &str, extra: &str, waves: &str) {
    let dir = p.root.join(".lore/plans");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(dir.join(format!("{id}.md")), format!("---\ntitle: {id}\n{extra}waves:\n{waves}---\n")).expect("write plan");
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
/// first: `rerun_required` (Kiln: no heartbeat beyond the timeout), each attempt killed before
/// the next, within the rerun budget; hung every time, it fails "process unresponsive" once
/// the budget is spent, every process of it gone, the plan halted.
#[test]
fn a_hung_task_fails_unresponsive_and_its_processes_are_gone() {
    let p = Project::new(&["mason"]);
    p.config("stale_after: 3s\ncancel_grace: 2s\n");
    write_plan(&p, "hung", "", "  - - {id: t, worker: mason, prompt: \"sleep: 1000\\nwrite: never.txt x\"}\n");
    let (shim, worker) = running(&p, "hung", "hung-exec-wave-1-task-1");
    p.pass_until("the hung task to fail", |p| task(&show(p, "hung"), "t")["state"] == "failed");
    let v = show(&p, "hung");
    assert_eq!(task(&v, "t")["reason"], "process unresponsive; not run again after 2 reruns", "{v}");
    assert_eq!(task(&v, "t")["attempt"], 3, "{v}");
    assert!(has_event(&v, "heartbeat", "stale: no progress, output or CPU"), "{v}");
    assert!(has_event(&v, "rerun_required", "process unresponsive: it runs again"), "{v}");
    wait_for("the hung worker and its shim to be gone", || !pid_alive(worker) && !pid_alive(shim));
    p.settle();
    let v = show(&p, "hung");
    assert_eq!(v["status"], "halted", "{v}");
    assert!(v["reason"].as_str().unwrap_or("").contains("process unresponsive"), "{v}");
}

/// Kiln: a task live but silent past `stale_after` (`in_progress` with no heartbeat) is
/// `rerun_required`, not a failure that halts its plan: its attempt is killed and it runs
/// again in its worktree; the rerun ends well and the plan completes (fails on ab359d5: the
/// task failed "process unresponsive" and the plan halted).
#[test]
fn a_silent_task_runs_again_and_its_plan_goes_on() {
    let p = Project::new(&["mason"]);
    p.config("stale_after: 2s\ncancel_grace: 2s\n");
    write_plan(&p, "quiet", "", "  - - {id: t, worker: mason, prompt: \"first-sleep: 1000\\nwrite: woke.txt awake\"}\n");
    let (shim, worker) = running(&p, "quiet", "quiet-exec-wave-1-task-1");
    p.pass_until("the plan to end", |p| ["completed", "halted", "failed"].contains(&show(p, "quiet")["status"].as_str().unwrap_or("")));
    let v = show(&p, "quiet");
    assert_eq!(v["status"], "completed", "{v}");
    assert_eq!(task(&v, "t")["attempt"], 2, "{v}");
    assert!(has_event(&v, "rerun_required", "process unresponsive: it runs again"), "{v}");
    assert!(!pid_alive(worker) && !pid_alive(shim), "the silent attempt was killed before the rerun");
    assert_eq!(crate::common::git(&p.root, &["show", "claude/main:woke.txt"]), "awake\n");
}

/// Kiln's resume order: a wave-mate ready for integration is integrated before a task that
/// must run again is requeued — it never waits for the rerun (fails without the decider's
/// integrate-first rule: `a` was copied back only after `b`'s rerun ended; on ab359d5 `b`
/// failed and the plan halted with nothing copied back).
#[test]
fn a_ready_task_is_integrated_before_a_silent_one_runs_again() {
    let p = Project::new(&["mason"]);
    p.config("stale_after: 2s\ncancel_grace: 2s\n");
    write_plan(
        &p,
        "order",
        "parallelism: 2\n",
        "  - - {id: a, worker: mason, prompt: \"write: a.txt from a\"}\n    - {id: b, worker: mason, prompt: \"first-sleep: 1000\\nwrite: b.txt from b\"}\n",
    );
    p.pass_until("the plan to end", |p| ["completed", "halted", "failed"].contains(&show(p, "order")["status"].as_str().unwrap_or("")));
    let v = show(&p, "order");
    assert_eq!(v["status"], "completed", "{v}");
    let log = v["log"].as_array().expect("log");
    let at = |task: &str, state: &str, nth: usize| {
        log.iter()
            .enumerate()
            .filter(|(_, e)| e["kind"] == "task" && e["task"] == format!("order:exec:wave-1:{task}") && e["state"] == state)
            .nth(nth)
            .map(|(i, _)| i)
    };
    let a_integrated = at("task-1", "integrated", 0).expect("a integrated");
    let b_rerun = at("task-2", "running", 1).expect("b's second attempt started");
    assert!(a_integrated < b_rerun, "a is integrated before b runs again: {v}");
    let files = |rev: &str| crate::common::git(&p.root, &["show", "--name-only", "--format=", rev]);
    assert!(files("claude/main~1").contains("a.txt") && files("claude/main").contains("b.txt"), "a's commit first, then b's");
}

/// A task that runs again after its wave-mate was integrated is held to the wave's collision
/// rule against what that one landed: both changed `same.txt`, so the plan halts on the
/// collision and the integrated one's content stays (without the check the rerun's copy-back
/// would overwrite it silently).
#[test]
fn a_rerun_colliding_with_an_integrated_wave_mate_halts() {
    let p = Project::new(&["mason"]);
    p.config("stale_after: 2s\ncancel_grace: 2s\n");
    write_plan(
        &p,
        "clash",
        "parallelism: 2\n",
        "  - - {id: a, worker: mason, prompt: \"write: same.txt from a\"}\n    - {id: b, worker: mason, prompt: \"first-sleep: 1000\\nwrite: same.txt from b\"}\n",
    );
    p.pass_until("the plan to end", |p| ["completed", "halted", "failed"].contains(&show(p, "clash")["status"].as_str().unwrap_or("")));
    let v = show(&p, "clash");
    assert_eq!(v["status"], "halted", "{v}");
    let reason = v["reason"].as_str().unwrap_or("");
    assert!(reason.contains("collision in wave 1: same.txt") && reason.contains("clash:exec:wave-1:task-1"), "{v}");
    assert_eq!(crate::common::git(&p.root, &["show", "claude/main:same.txt"]), "from a\n");
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

/// Shell helpers for the task scenarios below (inside the pid namespace): `leftover PLAN`
/// waits until the task's attempt runs its `sleep` and prints "SHIM WORKER SLEEP" (the sleep
/// is the worker's grandchild, carrying the attempt's run-id mark); `rerun_started PLAN` says
/// whether the plan's record has the task at attempt 2.
const TASK_HELPERS: &str = r#"
slug() { echo "$1-exec-wave-1-task-1"; }
sleeping() { local f; f=$(task_dir "$1" "$(slug "$1")")/run.json; [ -f "$f" ] && [ -n "$(marked "$(jget "$f" run_id)" sleep)" ]; }
leftover() {
  pass_until "the $1 task's sleep" sleeping "$1"
  local f; f=$(task_dir "$1" "$(slug "$1")")/run.json
  echo "$(jget "$f" pid) $(jget "$f" worker_pid) $(marked "$(jget "$f" run_id)" sleep)"
}
rerun_started() { python3 -c 'import json,sys,glob; r=json.load(open(glob.glob(sys.argv[1])[0])); sys.exit(0 if any(t["attempt"]>=2 for t in r["tasks"].values()) else 1)' "$STATE/*/plans/$1/record.json"; }
"#;

/// A run killed mid-task (its shim SIGKILLed, as by the OOM killer): the worker dies with its
/// shim, but what the worker started (a `sleep` carrying the attempt's run-id mark) is left
/// running. It is found by its mark and killed before the task runs again, so no process of
/// the old attempt writes into the worktree the rerun uses. The task is `rerun_required` and
/// runs again in its worktree; when its worktree was removed too, it is `orphaned` — reported
/// with the path — and runs again in a fresh one. Both land once. In a private pid namespace:
/// the test kills a shim by pid.
#[test]
fn a_task_killed_mid_run_is_rerun_and_one_whose_worktree_went_is_orphaned() {
    let p = Project::new(&["mason"]);
    for plan in ["re", "or"] {
        write_plan(&p, plan, "", &format!("  - - {{id: t, worker: mason, prompt: \"write: {plan}.txt {plan}\\nfirst-sleep: 1000\"}}\n"));
    }
    let out = crate::common::in_pid_namespace(
        &p,
        &format!(
            r#"{TASK_HELPERS}
read re_shim re_worker re_left <<< "$(leftover re)"
read or_shim or_worker or_left <<< "$(leftover or)"
kill -9 $re_shim $or_shim
for pid in $re_shim $re_worker $or_shim $or_worker; do wait_for "the killed attempts' shims and workers gone" gone $pid; done
if alive $re_left && alive $or_left; then echo "leftovers outlived their shims"; fi
rm -rf "$(jget "$(task_dir or "$(slug or)")/worktree.json" path)"
# Classified from what is there, before anything is done about it.
echo "--- re"; "$GH" plan show re --json
echo "--- or"; "$GH" plan show or --json
echo "--- passes"
for _ in $(seq 600); do
  "$GH" reconcile --once >/dev/null
  # The rerun never starts while a process of the attempt before it still runs.
  rerun_started re && alive $re_left && echo "re: rerun started while the leftover $re_left runs"
  rerun_started or && alive $or_left && echo "or: rerun started while the leftover $or_left runs"
  [ "$("$GH" plan show re --json | jget /dev/stdin status)" = completed ] && [ "$("$GH" plan show or --json | jget /dev/stdin status)" = completed ] && break
  sleep 0.1
done
if gone $re_left && gone $or_left; then echo "leftovers killed"; fi
"#
        ),
    );
    assert!(out.contains("leftovers outlived their shims"), "the scenario needs processes the shims could not reap:\n{out}");
    assert!(!out.contains("rerun started while"), "a rerun started while the old attempt still ran:\n{out}");
    assert!(out.contains("leftovers killed"), "a process carrying the killed attempt's mark was left running:\n{out}");
    let class = |plan: &str| -> Value { serde_json::from_str(crate::common::section(&out, plan)).expect("plan json") };
    assert_eq!(task(&class("re"), "t")["class"], "rerun_required", "{out}");
    assert_eq!(task(&class("or"), "t")["class"], "orphaned", "{out}");
    let or_worktree = serde_json::from_slice::<Value>(
        &std::fs::read(plan_state(&p, "or").join("tasks/or-exec-wave-1-task-1/worktree.json")).expect("worktree.json"),
    )
    .expect("json")["path"]
        .as_str()
        .expect("path")
        .to_string();
    for plan in ["re", "or"] {
        let v = show(&p, plan);
        assert_eq!(v["status"], "completed", "{v}");
        assert_eq!(task(&v, "t")["attempt"], 2, "{v}");
        assert!(has_event(&v, "rerun_required", "its supervisor died"), "{v}");
        assert!(has_event(&v, "leftovers", "outlived its supervisor"), "the kill is in the log: {v}");
        let log = crate::common::git(&p.root, &["log", "--format=%B", "claude/main"]);
        assert_eq!(log.matches(&format!("Guild-Hall-Task: {plan}:exec:wave-1:task-1")).count(), 1, "{log}");
        assert_eq!(crate::common::git(&p.root, &["show", &format!("claude/main:{plan}.txt")]), format!("{plan}\n"));
    }
    let v = show(&p, "or");
    assert!(has_event(&v, "orphaned", &or_worktree), "the orphan is reported with its path: {v}");
    assert!(!has_event(&show(&p, "re"), "orphaned", ""), "a worktree still there is reused, not orphaned");
}

/// A task's or verify's `run.json` that cannot describe the attempt's shim — pid 0 (refused
/// as implausible), or the pid and start time of a live process that is not the shim — is
/// reported with its path, and no process is signalled by it, through a cancel too. In a
/// private pid namespace: every process there sits in "session 0".
#[test]
fn a_forged_task_or_verify_run_record_is_reported_and_signals_nothing() {
    let p = Project::new(&["mason"]);
    for plan in ["zero", "foreign"] {
        write_plan(&p, plan, "", &format!("  - - {{id: t, worker: mason, prompt: \"sleep: 1000\\nwrite: {plan}.txt x\"}}\n"));
    }
    write_plan(&p, "vf", "verify: [sleep, \"1000\"]\n", "  - - {id: t, worker: mason, prompt: \"write: vf.txt v\"}\n");
    let out = crate::common::in_pid_namespace(
        &p,
        &format!(
            r#"{TASK_HELPERS}
leftover zero >/dev/null
leftover foreign >/dev/null
verifying() {{ ls "$STATE"/*/plans/vf/verify/run.json >/dev/null 2>&1; }}
pass_until "the verify to run" verifying
sleep 1000 & victim=$!
setsid sleep 1000 & leader=$!
wait_for "the leader leads its session" sh -c "[ \"\$(cut -d' ' -f6 /proc/$leader/stat)\" = $leader ]"
forge_file "$(task_dir zero "$(slug zero)")/run.json" pid=0 pgid=0
forge_file "$(task_dir foreign "$(slug foreign)")/run.json" pid=$leader pgid=$leader start_time=$(start_time $leader)
forge_file "$(verify_dir vf)/run.json" pid=$leader pgid=$leader start_time=$(start_time $leader)
echo "--- pass"
"$GH" reconcile --once 2>&1 || true
for plan in zero foreign vf; do "$GH" plan cancel $plan >/dev/null; done
for _ in 1 2 3; do "$GH" reconcile --once >/dev/null 2>&1 || true; done
sleep 0.5
echo "--- check"
"$GH" check 2>&1 || true
echo "--- show"
"$GH" plan show foreign 2>&1 || true
echo "--- victims"
if alive $victim; then echo "victim alive"; fi
if alive $leader; then echo "leader alive"; fi
"#
        ),
    );
    let pass = crate::common::section(&out, "pass");
    let state = |plan: &str, rest: &str| plan_state(&p, plan).join(rest).display().to_string();
    let zero = state("zero", "tasks/zero-exec-wave-1-task-1/run.json");
    assert!(pass.contains(&zero) && pass.contains("implausible"), "pid 0 is refused, naming the file:\n{out}");
    for file in [state("foreign", "tasks/foreign-exec-wave-1-task-1/run.json"), state("vf", "verify/run.json")] {
        assert!(
            pass.lines().any(
                |l| l.contains(&file) && l.contains("a running process that is not this attempt's shim; no process is signalled by it")
            ),
            "a record naming a foreign process is reported with its path ({file}):\n{out}"
        );
    }
    assert!(crate::common::section(&out, "check").contains("not this attempt's shim"), "check says why too:\n{out}");
    assert!(crate::common::section(&out, "show").contains("not this attempt's shim"), "plan show says why too:\n{out}");
    let victims = crate::common::section(&out, "victims");
    assert!(victims.contains("victim alive") && victims.contains("leader alive"), "a forged run.json got a process signalled:\n{out}");
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
/// the watcher looks again at the task's stale deadline, and wakes when its shim is gone. What
/// the killed shim left running is killed before the task runs again. The kill runs in a
/// private pid namespace (the test kills a shim by pid), the watcher with it.
#[test]
fn the_service_judges_hung_and_killed_tasks_without_polling() {
    let p = Project::new(&["mason"]);
    p.config("stale_after: 2s\n");
    write_plan(&p, "hang", "", "  - - {id: t, worker: mason, prompt: \"sleep: 1000\"}\n");
    let _svc = crate::common::Service::start(&p, &[], &["--resync", "1h"]);
    wait_for("the hung task to fail", || task(&show(&p, "hang"), "t")["state"] == "failed");
    assert_eq!(task(&show(&p, "hang"), "t")["reason"], "process unresponsive; not run again after 2 reruns");

    let q = Project::new(&["mason"]);
    write_plan(&q, "kill", "", "  - - {id: t, worker: mason, prompt: \"first-sleep: 1000\\nwrite: k.txt k\"}\n");
    let out = crate::common::in_pid_namespace(
        &q,
        &format!(
            r#"{TASK_HELPERS}
"$GH" watch --log-format json -v --resync 1h 2>"$GUILD_HALL_HOME/watch.log" &
wait_for "the watcher to take its projects" grep -q '"watching"' "$GUILD_HALL_HOME/watch.log"
watched() {{ local f; f=$(task_dir kill "$(slug kill)" 2>/dev/null)/run.json; [ -f "$f" ] && [ -n "$(marked "$(jget "$f" run_id)" sleep)" ]; }}
wait_for "the task's sleep" watched
f=$(task_dir kill "$(slug kill)")/run.json
shim=$(jget "$f" pid); left=$(marked "$(jget "$f" run_id)" sleep)
# Killed once the watcher has taken in everything the start wrote (its update folded, its
# heartbeat written): what wakes it then is the shim's end alone.
folded() {{ python3 -c 'import json,sys; v=json.load(sys.stdin); sys.exit(0 if any(e["kind"]=="task_update" and "in_progress" in json.dumps(e) for e in v["log"]) else 1)'; }}
settled() {{ [ -e "$(task_dir kill "$(slug kill)")/heartbeat" ] && "$GH" plan show kill --json | folded; }}
wait_for "the watcher to settle on the running task" settled
kill -9 $shim
wait_for "the shim gone" gone $shim
if alive $left; then echo "the leftover outlived its shim"; fi
done_() {{
  rerun_started kill && alive $left && echo "rerun started while the leftover $left runs"
  [ "$("$GH" plan show kill --json | jget /dev/stdin status)" = completed ]
}}
wait_for "the killed task to run again and land" done_
if gone $left; then echo "leftover killed"; fi
echo "--- left"; echo $left
"#
        ),
    );
    // The watcher may kill it before the script looks: then its log event names it.
    let v = show(&q, "kill");
    let left: i64 = crate::common::section(&out, "left").trim().parse().expect("the leftover's pid");
    let found = v["log"]
        .as_array()
        .expect("log")
        .iter()
        .any(|e| e["kind"] == "leftovers" && e["pids"].as_array().is_some_and(|p| p.contains(&left.into())));
    assert!(out.contains("the leftover outlived its shim") || found, "the scenario needs a process the shim could not reap:\n{out}\n{v}");
    assert!(!out.contains("rerun started while"), "a rerun started while the old attempt still ran:\n{out}");
    assert!(out.contains("leftover killed"), "a process carrying the killed attempt's mark was left running:\n{out}");
    assert_eq!(task(&v, "t")["attempt"], 2, "{v}");
    assert!(has_event(&v, "rerun_required", "its supervisor died"), "{v}");
    assert!(has_event(&v, "leftovers", "outlived its supervisor"), "{v}");
}
