//! `runner: slurm` on a real single-node Slurm cluster that each test starts itself
//! (`tests/slurm/cluster.sh`: munged, slurmctld, slurmd as plain processes) in a private pid
//! and network namespace, so that the daemons and every job end with the test and their ports
//! clash with nothing. Skipped, saying so, only where Slurm is not installed.

use crate::common::{git, in_namespaces, section, Project};

/// The programs the cluster and the runner need; `false` (and a line saying so) without them.
/// The Slurm daemons and commands these tests start a cluster with, or the test's failure in
/// one line naming what is missing: a test that cannot run fails, it is never skipped (`.ci/run`
/// installs them).
fn needs_slurm() {
    let missing: Vec<&str> = ["munged", "slurmctld", "slurmd", "sbatch", "scontrol", "squeue", "scancel", "sinfo", "ip"]
        .into_iter()
        .filter(|b| !std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()).any(|d| d.join(b).is_file()))
        .collect();
    assert!(
        missing.is_empty(),
        "this test needs {} (Debian: apt-get install slurmctld slurmd slurm-client munge iproute2), which is not installed: see Prerequisites in README.md",
        missing.join(", ")
    );
}

/// Run `script` (as [`in_namespaces`]) once a one-node cluster of `cpus` CPUs is up in its
/// namespace, `SLURM_CONF` set for guild-hall and the script; helpers for jobs and artifacts.
fn in_cluster(p: &Project, cpus: u32, script: &str) -> String {
    in_cluster_with(p, cpus, "", script)
}

/// [`in_cluster`] with more lines in `slurm.conf`.
fn in_cluster_with(p: &Project, cpus: u32, extra_conf: &str, script: &str) -> String {
    let dir = p.tmp.path().join("slurm");
    let prelude = format!(
        r#"
# A network of the namespace's own: loopback, and an interface with an address (Slurm's
# daemons will not bind without one).
ip link set lo up
ip link add gh0 type veth peer name gh1
ip addr add 10.217.0.1/24 dev gh0
ip link set gh0 up
ip link set gh1 up
source '{cluster}'
SLURM_CONF_EXTRA='{extra_conf}'
slurm_cluster '{dir}' {cpus}
handle() {{ ls "$STATE"/*/commissions/"$1"/slurm.json; }}
job_of() {{ jget "$(handle "$1")" job_id; }}
job_state() {{ scontrol show job -o "$1" | grep -o 'JobState=[A-Z_]*' | cut -d= -f2; }}
job_name() {{ scontrol show job -o "$1" | grep -o 'JobName=[^ ]*' | cut -d= -f2; }}
is_status() {{ grep -q "^status: $2\$" ".lore/commissions/$1.md"; }}
"#,
        cluster = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/slurm/cluster.sh"),
        dir = dir.display(),
    );
    in_namespaces(p, &["--net", "--kill-child"], &format!("{prelude}\n{script}"))
}

/// A worker that says which Slurm job it runs in, writes a file and submits.
fn on_job_worker(p: &Project) {
    p.script_worker(
        "onjob",
        "sparse",
        r#"echo "job=${SLURM_JOB_ID:-none} leak=${GH_RECONCILER_ONLY:-absent}"
# Some CPU time, for the shim to write down (the node's process table is not the reconciler's).
# (then alive past the shim's next look, a second later).
i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done
sleep 1.5
mkdir -p .lore/done
echo "done in job ${SLURM_JOB_ID:-none}" > ".lore/done/$GUILD_HALL_ID.md"
"$GUILD_HALL_BIN" toolbox submit-result --summary "ran in Slurm job ${SLURM_JOB_ID:-none}" --artifact ".lore/done/$GUILD_HALL_ID.md""#,
    );
}

/// A commission and a wave task run as Slurm jobs (the worker's environment names the job its
/// handle records, the job carries the attempt's name) and merge.
#[test]
fn a_commission_and_a_wave_task_run_as_slurm_jobs_and_merge() {
    needs_slurm();
    let p = Project::new(&["mason"]);
    p.config("runner: slurm\n");
    on_job_worker(&p);
    p.write_commission("c1", "---\nworker: onjob\n---\nRun on the cluster.\n");
    let plans = p.root.join(".lore/plans");
    std::fs::create_dir_all(&plans).expect("mkdir");
    std::fs::write(
        plans.join("wave.md"),
        "---\ntitle: wave\nwaves:\n  - - {id: one, worker: mason, prompt: \"write: src/one.txt hello from a node\"}\n---\n",
    )
    .expect("plan");
    let out = in_cluster(
        &p,
        2,
        r#"
# Only the worker's environment reaches the job, not the reconciler's.
export GH_RECONCILER_ONLY=leaked
"$GH" reconcile --once --wait --timeout 120s >/dev/null
j=$(job_of c1)
echo "--- job"; echo "$j"
echo "--- name"; job_name "$j"
echo "--- handle name"; jget "$(handle c1)" name
echo "--- state"; job_state "$j"
t=$(jget "$(task_dir wave wave-exec-wave-1-task-1)/slurm.json" job_id)
echo "--- task state"; job_state "$t"
echo "--- task name"; job_name "$t"
echo "--- jobs"; squeue -h -t all -o %j | sort
"#,
    );
    let job = section(&out, "job").trim().to_string();
    assert!(job.parse::<u64>().is_ok(), "a job id recorded: {out}");
    assert_eq!(section(&out, "name").trim(), section(&out, "handle name").trim(), "{out}");
    assert!(section(&out, "name").starts_with("guild-hall.") && section(&out, "name").contains(".c1.1."), "{out}");
    assert_eq!(section(&out, "state").trim(), "COMPLETED", "{out}");
    assert_eq!(section(&out, "task state").trim(), "COMPLETED", "{out}");
    assert!(section(&out, "task name").contains(".wave-exec-wave-1-task-1.1."), "{out}");
    let jobs: Vec<&str> = section(&out, "jobs").lines().collect();
    assert_eq!(jobs.len(), 2, "one job for each, none submitted twice: {out}");
    assert!(p.artifact("c1").contains("status: completed"), "{}", p.artifact("c1"));
    assert_eq!(git(&p.root, &["show", "claude/main:.lore/done/c1.md"]), format!("done in job {job}\n"), "ran inside job {job}");
    assert_eq!(git(&p.root, &["show", "claude/main:src/one.txt"]), "hello from a node\n");
    let cpu: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(p.state_dir("c1").join("cpu.json")).expect("cpu.json")).expect("json");
    assert!(cpu["cpu_ticks"].as_u64().is_some_and(|t| t > 0), "the shim wrote the worker's CPU time down: {cpu}");
    assert_eq!(cpu["attempt"].as_u64(), Some(1), "for its attempt: {cpu}");
    let log = std::fs::read_to_string(p.state_dir("c1").join("attempt-1.log")).expect("log");
    assert!(log.contains(&format!("job={job} leak=absent")), "the job's output is the attempt's log, its environment the worker's: {log}");
}

/// A cancelled commission's job ends, and every process the worker started with it (a
/// setsid one, a double-forked one, one that ignores SIGTERM).
#[test]
fn a_cancel_ends_the_job_and_every_process_of_it() {
    needs_slurm();
    let p = Project::new(&["escaper"]);
    p.config("runner: slurm\ncancel_grace: 2s\n");
    p.write_commission("esc", "---\nworker: escaper\n---\nthen: wait\n");
    let out = in_cluster(
        &p,
        2,
        r#"
pids() { sed -n 's/^progress: .\{0,1\}pids: \([0-9 ]*\).*/\1/p' .lore/commissions/esc.md; }
has_pids() { [ -n "$(pids)" ]; }
pass_until "the escaper's processes started" has_pids
j=$(job_of esc)
echo "--- running"; job_state "$j"
set -- $(pids)
for p in "$@"; do alive $p || { echo "process $p not alive before the cancel"; exit 1; }; done
"$GH" commission cancel esc >/dev/null
pass_until "cancelled" is_status esc cancelled
ended() { case "$(job_state "$j")" in COMPLETED|CANCELLED|FAILED|TIMEOUT) return 0 ;; esac; return 1; }
pass_until "the job ended" ended
all_gone() { local p; for p in "$@"; do alive $p && return 1; done; return 0; }
wait_for "every process of the job gone" all_gone "$@"
echo "--- ended"; job_state "$j"
echo "--- left"; for p in "$@"; do alive $p && echo "$p"; done; echo none
"#,
    );
    assert_eq!(section(&out, "running").trim(), "RUNNING", "{out}");
    assert!(matches!(section(&out, "ended").trim(), "CANCELLED" | "COMPLETED"), "{out}");
    assert_eq!(section(&out, "left").trim(), "none", "{out}");
    assert!(p.artifact("esc").contains("status: cancelled"), "{}", p.artifact("esc"));
}

/// The reconciler killed (SIGKILL) while the job runs: the next passes re-attach to the job by
/// its recorded id — one job, never resubmitted — and merge its work once.
#[test]
fn a_reconciler_killed_while_a_job_runs_re_attaches_to_it() {
    needs_slurm();
    let p = Project::new(&["sleeper"]);
    p.config("runner: slurm\n");
    p.write_commission("nap", "---\nworker: sleeper\n---\nsleep: 10\n");
    let out = in_cluster(
        &p,
        2,
        r#"
"$GH" watch >/dev/null 2>&1 &
w=$!
job_running() { local j; j=$(job_of nap 2>/dev/null) && [ "$(job_state "$j")" = RUNNING ] && run_json nap >/dev/null 2>&1; }
wait_for "the job running" job_running
kill -9 $w
wait $w || true
echo "--- while down"; job_state "$(job_of nap)"
pass_until "completed" is_status nap completed
echo "--- jobs"; squeue -h -t all -o '%j' | grep -c '\.nap\.' || true
"#,
    );
    assert_eq!(section(&out, "while down").trim(), "RUNNING", "{out}");
    assert_eq!(section(&out, "jobs").trim(), "1", "one job, never resubmitted: {out}");
    let merges = git(&p.root, &["log", "--format=%s", "claude/main"]);
    assert_eq!(git(&p.root, &["log", "--format=%b", "claude/main"]).matches("Guild-Hall-Commission: nap").count(), 1, "{merges}");
}

/// A job cancelled from outside (`scancel`, not guild-hall) fails its commission, the reason
/// naming the job and how it ended.
#[test]
fn a_job_scancelled_from_outside_fails_the_commission_with_the_reason() {
    needs_slurm();
    let p = Project::new(&["sleeper"]);
    p.config("runner: slurm\n");
    p.write_commission("gone", "---\nworker: sleeper\n---\nsleep: 60\n");
    let out = in_cluster(
        &p,
        2,
        r#"
pass_until "in progress" is_status gone in_progress
j=$(job_of gone)
scancel "$j"
pass_until "failed" is_status gone failed
echo "--- job"; echo "$j"
"#,
    );
    let job = section(&out, "job").trim().to_string();
    let artifact = p.artifact("gone");
    assert!(artifact.contains(&format!("Slurm job {job} ended CANCELLED")), "the reason names the job and its end: {artifact}");
}

/// Four commissions on a two-CPU node: two run while two wait in the queue (`status` says so:
/// `queued (Slurm job N: Resources)`), longer than `stale_after`, yet a job in the queue is
/// never stale: all four complete. Each holds a slot while queued (the cap counts them).
#[test]
fn four_commissions_on_a_two_cpu_node_queue_and_all_complete() {
    needs_slurm();
    let p = Project::new(&[]);
    p.config("runner: slurm\ncommission_cap: 4\nstale_after: 2s\n");
    // Busy for 4 s, and saying so (output keeps a running worker from going stale).
    p.script_worker(
        "chatter",
        "sparse",
        r#"for i in $(seq 20); do echo "working $i"; sleep 0.2; done
mkdir -p .lore/done
echo "$GUILD_HALL_ID" > ".lore/done/$GUILD_HALL_ID.md"
"$GUILD_HALL_BIN" toolbox submit-result --summary done --artifact ".lore/done/$GUILD_HALL_ID.md""#,
    );
    for id in ["q1", "q2", "q3", "q4"] {
        p.write_commission(id, "---\nworker: chatter\n---\nWork.\n");
    }
    let out = in_cluster(
        &p,
        2,
        r#"
"$GH" reconcile --once >/dev/null
two_and_two() { [ "$(squeue -h -o %T | sort | tr '\n' ' ')" = "PENDING PENDING RUNNING RUNNING " ]; }
pass_until "two jobs running, two queued" two_and_two
echo "--- status"; "$GH" status
"$GH" reconcile --once --wait --timeout 120s >/dev/null
echo "--- done"
for id in q1 q2 q3 q4; do is_status $id completed && echo "$id"; done
"#,
    );
    let status = section(&out, "status");
    let queued = status.lines().filter(|l| l.contains(" queued ") && l.contains("queued (Slurm job ")).count();
    assert_eq!(queued, 2, "two shown queued, with the job and why: {out}");
    assert_eq!(section(&out, "done").split_whitespace().collect::<Vec<_>>(), ["q1", "q2", "q3", "q4"], "none went stale: {out}");
    for id in ["q1", "q2", "q3", "q4"] {
        assert_eq!(git(&p.root, &["show", &format!("claude/main:.lore/done/{id}.md")]), format!("{id}\n"));
    }
}

/// The home on this machine's own filesystem while the partition has nodes other than this
/// one: the attempt is refused, saying what must be shared.
#[test]
fn a_home_the_nodes_cannot_see_is_refused() {
    needs_slurm();
    let p = Project::new(&["sleeper"]);
    p.config("runner: slurm\nslurm:\n  partition: wide\n");
    p.write_commission("far", "---\nworker: sleeper\n---\nsleep: 1\n");
    // A second node, never up, in a partition with this one.
    let extra = "NodeName=elsewhere NodeAddr=10.217.0.9 CPUs=1 State=DOWN\nPartitionName=wide Nodes=ALL State=UP";
    let out = in_cluster_with(
        &p,
        2,
        extra,
        r#"
wait_for "the wide partition" sh -c 'sinfo -h -p wide -N -o %N | grep -q elsewhere'
pass_until "failed" is_status far failed
echo "--- handle"; ls "$STATE"/*/commissions/far/slurm.json 2>/dev/null || echo none
"#,
    );
    assert_eq!(section(&out, "handle").trim(), "none", "nothing submitted: {out}");
    let artifact = p.artifact("far");
    assert!(artifact.contains("the Slurm runner needs the home") && artifact.contains("elsewhere"), "{artifact}");
}

/// `runner:` and the job's resources are checked like every other key: a misspelt one or an
/// unknown runner is a problem, in `guild-hall.yaml`, `worker.yaml` and a commission alike.
/// (No cluster needed.)
#[test]
fn runner_keys_are_checked_where_they_are_written() {
    let p = Project::new(&["sleeper"]);
    p.script_worker("big", "sparse", "true");
    let yaml = p.root.join(".lore/workers/big/worker.yaml");
    let base = std::fs::read_to_string(&yaml).expect("worker.yaml");
    std::fs::write(&yaml, format!("{base}runner: slurm\nresources: {{cpus: 4, memory: 8G}}\n")).expect("write");
    p.config("runner: slurm\nslurm: {partition: agents, account: lab, qos: normal}\n");
    p.write_commission("ok", "---\nworker: big\nrunner: local\nresources: {cpus: 2}\n---\nGo.\n");
    let (code, out, err) = p.run(&["check"]);
    assert_eq!(code, 0, "all valid: {out}{err}");

    p.write_commission("bad", "---\nworker: big\nrunner: kubernetes\nresources: {cpu: 2}\n---\nGo.\n");
    let (code, out, err) = p.run(&["check"]);
    let said = format!("{out}{err}");
    assert_ne!(code, 0, "{said}");
    assert!(said.contains("unknown runner: kubernetes (expected local or slurm)"), "{said}");
    assert!(said.contains("`cpu`") && said.contains("did you mean `cpus`"), "{said}");

    std::fs::remove_file(p.artifact_path("bad")).expect("rm");
    p.config("runner: slurm\nslurm: {partiton: agents}\n");
    let (code, out, err) = p.run(&["check"]);
    let said = format!("{out}{err}");
    assert_ne!(code, 0, "{said}");
    assert!(said.contains("partiton"), "{said}");
}

/// The reconciler killed after sbatch took the job but before its id was recorded: the next
/// pass finds the job (ours, writing the attempt's log, submitted since the handle was written
/// before sbatch ran; not by its name alone), and never submits it again.
#[test]
fn a_job_whose_id_was_never_recorded_is_found_by_its_name() {
    needs_slurm();
    let p = Project::new(&["sleeper"]);
    p.config("runner: slurm\n");
    p.write_commission("lost", "---\nworker: sleeper\n---\nsleep: 1\n");
    let out = in_cluster(
        &p,
        2,
        r#"
code=0; GUILD_HALL_FAULT=slurm-submit:2 "$GH" reconcile --once >/dev/null 2>&1 || code=$?
echo "--- code"; echo "$code"
echo "--- id"; jget "$(handle lost)" job_id
pass_until "completed" is_status lost completed
echo "--- jobs"; squeue -h -t all -o '%j' | grep -c '\.lost\.' || true
echo "--- found"; jget "$(handle lost)" job_id
"#,
    );
    assert_eq!(section(&out, "code").trim(), "86", "stopped by the fault: {out}");
    assert_eq!(section(&out, "id").trim(), "None", "no id recorded: {out}");
    assert_eq!(section(&out, "jobs").trim(), "1", "one job, never resubmitted: {out}");
    assert_eq!(git(&p.root, &["log", "--format=%b", "claude/main"]).matches("Guild-Hall-Commission: lost").count(), 1);
    assert!(section(&out, "found").trim().parse::<u64>().is_ok(), "the job found by name has its id recorded: {out}");
}

/// The reconciler killed after sbatch took the job but before its id was recorded, on a machine
/// whose clock is 30 s ahead of the controller's (the handle's `submitted_at` is moved so): the
/// next pass still finds the job by its output file and records it.
#[test]
fn a_job_whose_id_was_never_recorded_is_found_though_the_clocks_disagree() {
    needs_slurm();
    let p = Project::new(&["sleeper"]);
    p.config("runner: slurm\n");
    p.write_commission("lost", "---\nworker: sleeper\n---\nsleep: 1\n");
    let out = in_cluster(
        &p,
        2,
        r#"
code=0; GUILD_HALL_FAULT=slurm-submit:2 "$GH" reconcile --once >/dev/null 2>&1 || code=$?
echo "--- code"; echo "$code"
h=$(handle lost)
at=$(date -u -d "$(jget "$h" submitted_at)" +%s)
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d["submitted_at"]=sys.argv[2]; json.dump(d,open(sys.argv[1],"w"))' \
  "$h" "$(date -u -d "@$((at + 30))" +%Y-%m-%dT%H:%M:%SZ)"
"$GH" reconcile --once >/dev/null 2>&1 || true
echo "--- found"; jget "$h" job_id
pass_until "completed" is_status lost completed
echo "--- jobs"; squeue -h -t all -o '%j' | grep -c '\.lost\.' || true
"#,
    );
    assert_eq!(section(&out, "code").trim(), "86", "stopped by the fault: {out}");
    assert!(section(&out, "found").trim().parse::<u64>().is_ok(), "the job is found and recorded: {out}");
    assert_eq!(section(&out, "jobs").trim(), "1", "one job, never submitted again: {out}");
}

/// A pass watching four jobs (two running, two queued) asks Slurm for its jobs once, not once
/// for each: `squeue --json` lists them all (on Slurm 22.05, every user's). Counted by a
/// `squeue` ahead on PATH that notes each call and runs the real one.
#[test]
fn a_pass_lists_slurms_jobs_once_for_all_its_attempts() {
    needs_slurm();
    let p = Project::new(&["sleeper"]);
    p.config("runner: slurm\ncommission_cap: 4\n");
    for id in ["w1", "w2", "w3", "w4"] {
        p.write_commission(id, "---\nworker: sleeper\n---\nsleep: 120\n");
    }
    let out = in_cluster(
        &p,
        2,
        r#"
"$GH" reconcile --once >/dev/null
two_and_two() { [ "$(squeue -h -o %T | sort | tr '\n' ' ')" = "PENDING PENDING RUNNING RUNNING " ]; }
pass_until "two jobs running, two queued" two_and_two
t=$(mktemp -d)
printf '#!/bin/sh\necho "$*" >> %s/calls\nexec %s "$@"\n' "$t" "$(command -v squeue)" > "$t/squeue"
chmod +x "$t/squeue"
PATH="$t:$PATH" "$GH" reconcile --once >/dev/null
echo "--- calls"; wc -l < "$t/calls"
echo "--- status"; "$GH" status
"#,
    );
    let calls: usize = section(&out, "calls").trim().parse().expect("a count");
    // One listing; a second only if the pass outlived the listing's second of life.
    assert!((1..=2).contains(&calls), "{calls} listings for a pass over four jobs: {out}");
    assert_eq!(section(&out, "status").lines().filter(|l| l.contains("queued (Slurm job ")).count(), 2, "{out}");
}

/// A cancelled plan whose wave has two tasks running as jobs and one waiting in the queue:
/// every job ends (the queued one taken out of the queue), the plan is cancelled.
#[test]
fn a_cancelled_plan_ends_its_running_and_queued_jobs() {
    needs_slurm();
    let p = Project::new(&["mason"]);
    p.config("runner: slurm\ncancel_grace: 2s\n");
    let plans = p.root.join(".lore/plans");
    std::fs::create_dir_all(&plans).expect("mkdir");
    std::fs::write(
        plans.join("big.md"),
        "---\ntitle: big\nparallelism: 3\nwaves:\n  - - {id: a, worker: mason, prompt: \"sleep: 120\"}\n    - {id: b, worker: mason, prompt: \"sleep: 120\"}\n    - {id: c, worker: mason, prompt: \"sleep: 120\"}\n---\n",
    )
    .expect("plan");
    let out = in_cluster(
        &p,
        2,
        r#"
states() { squeue -h -o %T | sort | tr '\n' ' '; }
two_and_one() { [ "$(states)" = "PENDING RUNNING RUNNING " ]; }
pass_until "two jobs running, one queued" two_and_one
echo "--- before"; states; echo
"$GH" plan cancel big >/dev/null
none_left() { [ -z "$(squeue -h -o %i)" ]; }
pass_until "no job left" none_left
cancelled() { "$GH" plan show big --json | grep -q '"status": *"cancelled"'; }
pass_until "the plan cancelled" cancelled
echo "--- sleepers"; for d in /proc/[0-9]*; do [ "$(cat $d/comm 2>/dev/null)" = sleep ] && alive ${d#/proc/} && echo ${d#/proc/}; done; echo none
"#,
    );
    assert_eq!(section(&out, "before").trim(), "PENDING RUNNING RUNNING", "{out}");
    assert_eq!(section(&out, "sleepers").trim(), "none", "every task's process ended: {out}");
}

/// A worker gone quiet in its job (no output, no CPU, no progress) goes stale as it would
/// here: the commission fails, and its job ends with every process of it.
#[test]
fn a_stale_worker_in_a_job_is_failed_and_its_job_ended() {
    needs_slurm();
    let p = Project::new(&["hanger"]);
    p.config("runner: slurm\nstale_after: 2s\n");
    p.write_commission("quiet", "---\nworker: hanger\n---\nHang.\n");
    let out = in_cluster(
        &p,
        2,
        r#"
pass_until "in progress" is_status quiet in_progress
j=$(job_of quiet)
pass_until "failed" is_status quiet failed
ended() { case "$(job_state "$j")" in COMPLETED|CANCELLED|FAILED) return 0 ;; esac; return 1; }
pass_until "the job ended" ended
echo "--- job"; job_state "$j"
echo "--- left"; for d in /proc/[0-9]*; do tr '\0' '\n' < $d/environ 2>/dev/null | grep -q "^SLURM_JOB_ID=$j\$" && alive ${d#/proc/} && echo ${d#/proc/}; done; echo none
"#,
    );
    assert!(p.artifact("quiet").contains("process unresponsive"), "{}", p.artifact("quiet"));
    assert_eq!(section(&out, "left").trim(), "none", "no process of the job left: {out}");
}

/// Give package `name` `sandbox: {slurm_client: true}`: its worker may reach MUNGE's socket.
fn slurm_client(p: &Project, name: &str) {
    let yaml = p.root.join(".lore/workers").join(name).join("worker.yaml");
    std::fs::write(&yaml, std::fs::read_to_string(&yaml).expect("yaml") + "sandbox: {slurm_client: true}\n").expect("write");
}

/// A confined worker in a Slurm job cannot reach MUNGE, so it submits no job of its own (one
/// that would run unconfined, as the person); a package with `sandbox.slurm_client` can, and
/// `guild-hall workers` says what that gives it.
#[test]
fn a_confined_worker_submits_no_job_unless_its_package_is_a_slurm_client() {
    needs_slurm();
    let p = Project::new(&[]);
    p.config("runner: slurm\n");
    for name in ["plain", "client"] {
        p.script_worker(
            name,
            "sparse",
            r#"mkdir -p .lore/sub
if sbatch --parsable --job-name="escape-$GUILD_HALL_ID" --output=/dev/null --wrap true >/dev/null 2>&1; then r=SUBMITTED; else r=refused; fi
echo "$r" > ".lore/sub/$GUILD_HALL_ID.md"
"$GUILD_HALL_BIN" toolbox submit-result --summary "$r" --artifact ".lore/sub/$GUILD_HALL_ID.md""#,
        );
    }
    slurm_client(&p, "client");
    p.write_commission("s1", "---\nworker: plain\n---\nTry.\n");
    p.write_commission("s2", "---\nworker: client\n---\nTry.\n");
    let out = in_cluster(
        &p,
        2,
        r#"
"$GH" reconcile --once --wait --timeout 120s >/dev/null
echo "--- jobs"; squeue -h -t all -o %j | grep escape | sort
"#,
    );
    assert_eq!(section(&out, "jobs").trim(), "escape-s2", "only the slurm_client package submitted: {out}");
    assert_eq!(git(&p.root, &["show", "claude/main:.lore/sub/s1.md"]).trim(), "refused", "{out}");
    assert_eq!(git(&p.root, &["show", "claude/main:.lore/sub/s2.md"]).trim(), "SUBMITTED", "{out}");
    let workers = p.ok(&["workers"]);
    assert!(workers.contains("slurm_client") && workers.contains("UNCONFINED"), "{workers}");
}

/// A worker that renames its own job (`scontrol update JobName=`, which the job's owner may do):
/// the job is still proven the attempt's (its id, owner and output file), the commission is not
/// taken for corrupt, and a cancel still ends the job. Jobs are submitted `--no-requeue`.
#[test]
fn a_worker_that_renames_its_job_is_still_cancelled() {
    needs_slurm();
    let p = Project::new(&[]);
    p.config("runner: slurm\ncancel_grace: 2s\n");
    p.script_worker("renamer", "sparse", "scontrol update JobId=\"$SLURM_JOB_ID\" JobName=renamed-by-worker\necho renamed\nsleep 120");
    // `scontrol` from inside the job needs MUNGE: only a package that asks may reach it.
    slurm_client(&p, "renamer");
    p.write_commission("ren", "---\nworker: renamer\n---\nRename.\n");
    let out = in_cluster(
        &p,
        2,
        r#"
pass_until "in progress" is_status ren in_progress
j=$(job_of ren)
renamed() { [ "$(job_name "$j")" = renamed-by-worker ]; }
wait_for "the job renamed by its worker" renamed
"$GH" reconcile --once >/dev/null
echo "--- after a pass"; sed -n 's/^status: //p' .lore/commissions/ren.md
echo "--- requeue"; scontrol show job -o "$j" | grep -o 'Requeue=[0-9]*'
echo "--- requeue refused"; scontrol requeue "$j" 2>&1 || true
"$GH" commission cancel ren >/dev/null
pass_until "cancelled" is_status ren cancelled
ended() { case "$(job_state "$j")" in COMPLETED|CANCELLED|FAILED) return 0 ;; esac; return 1; }
pass_until "the job ended" ended
echo "--- ended"; job_state "$j"
"#,
    );
    assert_eq!(section(&out, "after a pass").trim(), "in_progress", "a renamed job is still the attempt's: {out}");
    assert_eq!(section(&out, "requeue").trim(), "Requeue=0", "submitted --no-requeue: {out}");
    assert!(section(&out, "requeue refused").contains("disabled"), "so never run twice: {out}");
    assert!(matches!(section(&out, "ended").trim(), "CANCELLED" | "COMPLETED"), "{out}");
    assert!(p.artifact("ren").contains("status: cancelled"), "{}", p.artifact("ren"));
}

/// A worker that renames its job to look like someone else's record (`JobName="x
/// UserId=nobody(65534) StdOut=/nowhere"`): Slurm's answer is read structured, so the job is
/// still proven the attempt's; a cancel ends it, and so does the attempt's timeout.
#[test]
fn a_worker_that_forges_its_job_record_is_still_cancelled_and_timed_out() {
    needs_slurm();
    let p = Project::new(&[]);
    p.config("runner: slurm\ncancel_grace: 2s\n");
    p.script_worker(
        "forger",
        "sparse",
        "scontrol update JobId=\"$SLURM_JOB_ID\" JobName=\"x UserId=nobody(65534) StdOut=/nowhere\"\necho forged\nsleep 300",
    );
    slurm_client(&p, "forger");
    p.write_commission("fc", "---\nworker: forger\n---\nForge.\n");
    p.write_commission("ft", "---\nworker: forger\ntimeout: 8s\n---\nForge.\n");
    let out = in_cluster(
        &p,
        2,
        r#"
running() { is_status fc in_progress && is_status ft in_progress; }
pass_until "both in progress" running
c=$(job_of fc); t=$(job_of ft)
forged() { scontrol show job -o "$c" | grep -q 'JobName=x UserId=nobody' && scontrol show job -o "$t" | grep -q 'JobName=x UserId=nobody'; }
wait_for "both jobs renamed by their workers" forged
"$GH" reconcile --once >/dev/null
echo "--- after a pass"; sed -n 's/^status: //p' .lore/commissions/fc.md
"$GH" commission cancel fc >/dev/null
pass_until "cancelled" is_status fc cancelled
pass_until "timed out" is_status ft failed
ended() { case "$(job_state "$1")" in COMPLETED|CANCELLED|FAILED) return 0 ;; esac; return 1; }
c_ended() { ended "$c"; }; t_ended() { ended "$t"; }
pass_until "the cancelled job ended" c_ended
pass_until "the timed-out job ended" t_ended
echo "--- jobs"; squeue -h -o %i; echo none
"#,
    );
    assert_eq!(section(&out, "after a pass").trim(), "in_progress", "a forged name changes nothing: {out}");
    assert_eq!(section(&out, "jobs").trim(), "none", "no job left running: {out}");
    assert!(p.artifact("fc").contains("status: cancelled"), "{}", p.artifact("fc"));
    let reason = p.status_json("ft")["reason"].as_str().unwrap_or("").to_string();
    assert!(reason.contains("timed out"), "{reason}");
}

/// An unconfined worker (`sandbox: off`) that rewrites its attempt's `slurm.json` to name
/// another job of the same user — by a made-up name, or by a name of the attempt's shape — gets
/// its attempt failed, saying why, and that job is never cancelled.
#[test]
fn a_forged_handle_never_cancels_another_job_of_the_user() {
    needs_slurm();
    let p = Project::new(&[]);
    p.config("runner: slurm\ncancel_grace: 2s\n");
    let train = p.tmp.path().join("train-id");
    p.script_worker(
        "forger",
        "sparse",
        &format!(
            r#"sleep 1
s=$(ls -d "$GUILD_HALL_HOME"/state/*/commissions/"$GUILD_HALL_ID")
case "$GUILD_HALL_ID" in
  forge1) name=train ;;
  *) name="guild-hall.x.$GUILD_HALL_ID.1.0a1b2c3d" ;;
esac
printf '{{"attempt":1,"name":"%s","job_id":%s,"submitted_at":"2026-01-01T00:00:00Z"}}\n' "$name" "$(cat '{train}')" > "$s/slurm.json.new"
mv "$s/slurm.json.new" "$s/slurm.json"
echo forged
sleep 8"#,
            train = train.display()
        ),
    );
    let yaml = p.root.join(".lore/workers/forger/worker.yaml");
    std::fs::write(&yaml, std::fs::read_to_string(&yaml).expect("yaml") + "sandbox: off\n").expect("write");
    let out = in_cluster(
        &p,
        2,
        &format!(
            r#"
# The user's own job, nothing of guild-hall's (the forgers then run one at a time).
sbatch --parsable --job-name=train --output=/dev/null --wrap 'sleep 300' > '{train}'
t=$(cat '{train}')
printf -- '---\nworker: forger\n---\nForge.\n' > .lore/commissions/forge1.md
printf -- '---\nworker: forger\n---\nForge.\n' > .lore/commissions/forge2.md
pass_until "forge1 failed" is_status forge1 failed
pass_until "forge2 failed" is_status forge2 failed
"$GH" commission cancel forge1 >/dev/null 2>&1 || true
"$GH" reconcile --once >/dev/null 2>&1 || true
echo "--- train"; job_state "$t"
"#,
            train = train.display()
        ),
    );
    assert_eq!(section(&out, "train").trim(), "RUNNING", "the user's own job is never cancelled: {out}");
    let one = p.status_json("forge1")["reason"].as_str().unwrap_or("").to_string();
    assert!(one.contains("job name train is not one of attempt 1 of forge1"), "{one}");
    let two = p.status_json("forge2")["reason"].as_str().unwrap_or("").to_string();
    assert!(two.contains("does not write the attempt's log") && two.contains("it is not cancelled"), "{two}");
}

/// A job that `slurm.json` does not record for the attempt (a late answer to a submission given
/// up, or anyone's job running the same script) does not run the worker: its shim refuses, and
/// the recorded job runs the attempt.
#[test]
fn a_job_not_recorded_for_the_attempt_does_not_run_it() {
    needs_slurm();
    let p = Project::new(&["sleeper"]);
    p.config("runner: slurm\n");
    p.write_commission("dup", "---\nworker: sleeper\n---\nsleep: 1\n");
    let dir = p.tmp.path().join("dup");
    let out = in_cluster(
        &p,
        2,
        &format!(
            r#"
mkdir -p '{dir}'
node=$(sinfo -h -N -o %N | head -1)
scontrol update NodeName="$node" State=DRAIN Reason=test
"$GH" reconcile --once >/dev/null
j=$(job_of dup)
scontrol hold "$j"
scontrol write batch_script "$j" '{dir}/script.sh' >/dev/null
# The same script under another name, with the runner's mark in its environment.
i=$(GUILD_HALL_CPU_BEAT=1 sbatch --parsable --job-name=guild-hall.x.dup.1.0a1b2c3d --output='{dir}/impostor.log' --export=ALL '{dir}/script.sh')
scontrol update NodeName="$node" State=RESUME
ended() {{ case "$(job_state "$i")" in COMPLETED|CANCELLED|FAILED) return 0 ;; esac; return 1; }}
wait_for "the impostor job ended" ended
echo "--- impostor"; cat '{dir}/impostor.log'
echo "--- run"; run_json dup 2>/dev/null || echo none
scontrol release "$j"
pass_until "completed" is_status dup completed
"#,
            dir = dir.display()
        ),
    );
    assert!(section(&out, "impostor").contains("not running attempt 1 here"), "{out}");
    assert_eq!(section(&out, "run").trim(), "none", "the impostor took nothing: {out}");
    assert!(p.artifact("dup").contains("status: completed"), "{}", p.artifact("dup"));
}

/// A submission given up (the pass died before sbatch ran, a minute ago) is submitted again
/// under the same name, so a late job of the first is found as well; and an attempt so left
/// whose runner became `local` runs here, its stale `slurm.json` forgotten, and completes.
#[test]
fn a_submission_given_up_keeps_its_name_or_runs_here() {
    needs_slurm();
    let p = Project::new(&["sleeper"]);
    p.config("runner: slurm\n");
    p.write_commission("again", "---\nworker: sleeper\n---\nsleep: 1\n");
    let out = in_cluster(
        &p,
        2,
        r#"
age() { sed -i 's/"submitted_at": *"[^"]*"/"submitted_at": "2000-01-01T00:00:00Z"/' "$(handle "$1")"; }
code=0; GUILD_HALL_FAULT=slurm-submit:1 "$GH" reconcile --once >/dev/null 2>&1 || code=$?
echo "--- code"; echo "$code"
n=$(jget "$(handle again)" name)
age again
pass_until "completed" is_status again completed
echo "--- same name"; [ "$(job_name "$(job_of again)")" = "$n" ] && echo yes || echo no
printf -- '---\nworker: sleeper\n---\nsleep: 1\n' > .lore/commissions/here.md
code=0; GUILD_HALL_FAULT=slurm-submit:1 "$GH" reconcile --once >/dev/null 2>&1 || code=$?
age here
sed -i 's/^runner: slurm$/runner: local/' .lore/guild-hall.yaml
pass_until "here completed" is_status here completed
echo "--- handle"; handle here 2>/dev/null || echo none
"#,
    );
    assert_eq!(section(&out, "code").trim(), "86", "stopped by the fault: {out}");
    assert_eq!(section(&out, "same name").trim(), "yes", "{out}");
    assert_eq!(section(&out, "handle").trim(), "none", "{out}");
    assert!(p.artifact("here").contains("status: completed"), "{}", p.artifact("here"));
}

/// Once an attempt's end is taken, Slurm is not asked about it again: with slurmctld gone, a
/// commission that ran on the cluster stays completed, and a local one still runs.
#[test]
fn an_ended_attempt_is_not_asked_of_slurm_again() {
    needs_slurm();
    let p = Project::new(&["sleeper"]);
    p.config("runner: slurm\n");
    p.write_commission("first", "---\nworker: sleeper\n---\nsleep: 1\n");
    let out = in_cluster(
        &p,
        2,
        r#"
pass_until "first completed" is_status first completed
taken() { jget "$(handle first)" ended >/dev/null 2>&1; }
pass_until "the end of its job taken" taken
echo "--- ended"; jget "$(handle first)" ended
slurm_stop
sed -i 's/^runner: slurm$/runner: local/' .lore/guild-hall.yaml
printf -- '---\nworker: sleeper\n---\nsleep: 1\n' > .lore/commissions/second.md
pass_until "second completed" is_status second completed
echo "--- problems"; "$GH" status 2>&1 | grep -i "cannot ask Slurm" || echo none
"#,
    );
    assert_eq!(section(&out, "ended").trim(), "COMPLETED", "the handle says the end was taken: {out}");
    assert_eq!(section(&out, "problems").trim(), "none", "{out}");
    assert!(p.artifact("first").contains("status: completed"), "{}", p.artifact("first"));
}
