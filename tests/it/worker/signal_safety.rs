//! Guild-hall signals only processes proven to be an attempt's and deletes
//! only under paths it computes from the id. Every test that leads to a kill runs the whole
//! scenario in a private pid namespace (`unshare --pid --fork --mount-proc`): there, every
//! process the script starts sits in "session 0", as the services of many machines do.

use std::path::Path;

use crate::common::*;

/// The `status --json` the scenario printed after its `--- status` line.
fn status_after_marker(out: &str) -> serde_json::Value {
    serde_json::from_str(section(out, "status")).unwrap_or_else(|e| panic!("status json ({e}):\n{out}"))
}

fn sleeper_commission(p: &Project, secs: u32) -> String {
    p.create("sleeper", "Sleep", &format!("sleep: {secs}"))
}

#[test]
fn a_run_record_with_pgid_0_kills_nothing_and_is_reported() {
    let p = Project::new(&["sleeper"]);
    let id = sleeper_commission(&p, 300);
    let out = in_pid_namespace(
        &p,
        &format!(
            r#"
dispatch {id}
shim=$(field {id} pid)
kill -9 -- -$shim
wait_for "the attempt's session gone" gone $shim
# Everything this script starts is in session 0 of the namespace.
sleep 1000 & victim=$!
forge {id} pid=0 pgid=0
"$GH" reconcile --once >/dev/null 2>&1 || true
"$GH" reconcile --once >/dev/null 2>&1 || true
alive $victim && echo "victim alive"
echo "--- status"
"$GH" status {id} --json
"#
        ),
    );
    assert!(out.contains("victim alive"), "a pass with pgid 0 in run.json killed a process of session 0:\n{out}");
    let status: serde_json::Value = status_after_marker(&out);
    let reason = status["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("run.json") && reason.contains("implausible"), "the refused record is reported with its path: {status}");
}

#[test]
fn a_reused_shim_pid_is_never_taken_for_the_attempts_session() {
    let p = Project::new(&["sleeper"]);
    let id = sleeper_commission(&p, 300);
    let out = in_pid_namespace(
        &p,
        &format!(
            r#"
dispatch {id}
shim=$(field {id} pid)
kill -9 -- -$shim
wait_for "the attempt's session gone" gone $shim
# The kernel hands the shim's pid to an unrelated session leader.
# Another process of the namespace may fork in between and take the pid: try again.
for try in 1 2 3 4 5 6 7 8 9 10; do
  echo $((shim - 1)) > /proc/sys/kernel/ns_last_pid
  setsid sleep 1000 & victim=$!
  [ "$victim" = "$shim" ] && break
  kill -9 $victim
done
[ "$victim" = "$shim" ] || {{ echo "could not reuse pid $shim (got $victim)" >&2; exit 1; }}
wait_for "the victim leads its session" sh -c "[ \"\$(cut -d' ' -f6 /proc/$victim/stat)\" = $victim ]"
"$GH" reconcile --once >/dev/null
"$GH" reconcile --once >/dev/null
alive $victim && echo "victim alive"
echo "--- status"
"$GH" status {id} --json
"#
        ),
    );
    assert!(out.contains("victim alive"), "the unrelated session that got the shim's pid was killed:\n{out}");
    let status: serde_json::Value = status_after_marker(&out);
    assert_eq!(status["status"], "failed", "the attempt whose session died is failed: {status}");
}

#[test]
fn what_a_killed_shim_leaves_behind_is_found_by_its_mark_and_stopped() {
    let p = Project::new(&["sleeper"]);
    let id = sleeper_commission(&p, 300);
    let out = in_pid_namespace(
        &p,
        &format!(
            r#"
dispatch {id}
shim=$(field {id} pid)
worker=$(field {id} worker_pid)
wait_for "the worker's sleep" pgrep -P $worker sleep
orphan=$(pgrep -P $worker sleep)
kill -9 $shim
wait_for "the shim gone" gone $shim
wait_for "the worker gone with its shim" gone $worker
alive $orphan && echo "orphan outlived the shim"
for _ in $(seq 100); do "$GH" reconcile --once >/dev/null; gone $orphan && break; sleep 0.1; done
gone $orphan && echo "orphan stopped"
"#
        ),
    );
    assert!(out.contains("orphan outlived the shim"), "the scenario needs a process the shim could not reap:\n{out}");
    assert!(out.contains("orphan stopped"), "a process carrying the attempt's mark was left running:\n{out}");
}

#[test]
fn a_run_record_naming_a_foreign_process_never_gets_it_signalled() {
    let p = Project::new(&["sleeper"]);
    let id = sleeper_commission(&p, 300);
    let out = in_pid_namespace(
        &p,
        &format!(
            r#"
dispatch {id}
setsid sleep 1000 & victim=$!
wait_for "the victim leads its session" sh -c "[ \"\$(cut -d' ' -f6 /proc/$victim/stat)\" = $victim ]"
start=$(python3 -c 'import sys; t=open("/proc/%s/stat" % sys.argv[1]).read(); print(t[t.rindex(")")+2:].split()[19])' $victim)
# Everything right but whose process it is: pid, session, start time, boot id.
forge {id} pid=$victim pgid=$victim start_time=$start
"$GH" commission cancel {id} >/dev/null
"$GH" reconcile --once >/dev/null 2>&1 || true
"$GH" reconcile --once >/dev/null 2>&1 || true
sleep 0.5
alive $victim && echo "victim alive"
echo "--- status"
"$GH" status {id} --json
"#
        ),
    );
    assert!(out.contains("victim alive"), "a cancel signalled the process a forged run.json named:\n{out}");
    let status: serde_json::Value = status_after_marker(&out);
    let reason = status["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("run.json") && reason.contains("not this attempt's shim"), "reported with its path: {status}");
}

fn write_forged_worktree_record(state: &Path, victim: &Path, admin: &Path) {
    let file = state.join("worktree.json");
    let mut rec: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).expect("worktree.json")).expect("json");
    rec["path"] = victim.to_string_lossy().into();
    rec["admin"] = admin.to_string_lossy().into();
    std::fs::write(&file, serde_json::to_vec(&rec).expect("json")).expect("forge worktree.json");
}

#[test]
fn a_worktree_record_naming_another_directory_gets_nothing_removed_or_committed() {
    let p = Project::new(&["sleeper"]);
    let id = sleeper_commission(&p, 300);
    p.ok(&["reconcile", "--once"]);
    wait_for("the worktree record", || p.try_state_dir(&id).is_some_and(|s| s.join("worktree.json").exists()));
    // A directory of the person's, and an admin dir look-alike beside the project's.
    let victim = p.tmp.path().join("precious");
    std::fs::create_dir_all(&victim).expect("mkdir");
    std::fs::write(victim.join("thesis.txt"), "years of work\n").expect("write");
    let admin = p.tmp.path().join("fake-git/worktrees/precious");
    std::fs::create_dir_all(&admin).expect("mkdir");
    std::fs::write(admin.join("keep"), "x").expect("write");
    write_forged_worktree_record(&p.state_dir(&id), &victim, &admin);
    p.ok(&["commission", "cancel", &id]);
    // Cancelled, its worker stopped; the cleanup refuses the record, pass after pass.
    let mut report = String::new();
    wait_for("cancelled and the cleanup refused", || {
        let (_, out, err) = p.run(&["reconcile", "--once"]);
        report = format!("{out}{err}");
        p.status(&id) == "cancelled" && report.contains("worktree.json")
    });
    assert!(report.contains("not the worktree guild-hall made"), "the refusal names the file and why: {report}");
    assert_eq!(
        std::fs::read_to_string(victim.join("thesis.txt")).ok().as_deref(),
        Some("years of work\n"),
        "the named directory was removed"
    );
    assert!(admin.join("keep").exists(), "the named admin dir was removed");
    let branches = p.branches();
    let branch = branches.iter().find(|b| b.starts_with(&format!("claude/commission/{id}"))).expect("the attempt's branch");
    let tree = git(&p.root, &["ls-tree", "-r", "--name-only", branch]);
    assert!(!tree.contains("thesis.txt"), "the named directory's files were committed to {branch}:\n{tree}");
    // The real worktree is still there, for a person to look at: nothing was guessed.
    assert!(p.worktree(&id).join(".git").exists(), "guild-hall's own worktree is kept while its record is refused");
}
