//! `runner: slurm` on a real single-node Slurm cluster that each test starts itself
//! (`tests/slurm/cluster.sh`: munged, slurmctld, slurmd as plain processes) in a private pid
//! and network namespace, so that the daemons and every job end with the test and their ports
//! clash with nothing. Skipped, saying so, only where Slurm is not installed.

use crate::common::{git, in_namespaces, section, Project};

/// The programs the cluster and the runner need; `false` (and a line saying so) without them.
fn have_slurm() -> bool {
    let missing: Vec<&str> = ["munged", "slurmctld", "slurmd", "sbatch", "scontrol", "squeue", "scancel", "sinfo", "ip"]
        .into_iter()
        .filter(|b| !std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()).any(|d| d.join(b).is_file()))
        .collect();
    if missing.is_empty() {
        return true;
    }
    eprintln!(
        "SKIPPED: the Slurm tests need {} (Debian: apt-get install slurmctld slurmd slurm-client munge iproute2)",
        missing.join(", ")
    );
    false
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
    if !have_slurm() {
        return;
    }
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
    let log = std::fs::read_to_string(p.state_dir("c1").join("attempt-1.log")).expect("log");
    assert!(log.contains(&format!("job={job} leak=absent")), "the job's output is the attempt's log, its environment the worker's: {log}");
}

/// A cancelled commission's job ends, and every process the worker started with it (a
/// setsid one, a double-forked one, one that ignores SIGTERM).
#[test]
fn a_cancel_ends_the_job_and_every_process_of_it() {
    if !have_slurm() {
        return;
    }
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
    if !have_slurm() {
        return;
    }
    let p = Project::new(&["sleeper"]);
    p.config("runner: slurm\n");
    p.write_commission("nap", "---\nworker: sleeper\n---\nsleep: 3\n");
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
    if !have_slurm() {
        return;
    }
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
    if !have_slurm() {
        return;
    }
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
    if !have_slurm() {
        return;
    }
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
/// pass finds the job by the name recorded before sbatch ran, and never submits it again.
#[test]
fn a_job_whose_id_was_never_recorded_is_found_by_its_name() {
    if !have_slurm() {
        return;
    }
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
"#,
    );
    assert_eq!(section(&out, "code").trim(), "86", "stopped by the fault: {out}");
    assert_eq!(section(&out, "id").trim(), "None", "no id recorded: {out}");
    assert_eq!(section(&out, "jobs").trim(), "1", "one job, never resubmitted: {out}");
    assert_eq!(git(&p.root, &["log", "--format=%b", "claude/main"]).matches("Guild-Hall-Commission: lost").count(), 1);
}

/// A cancelled plan whose wave has two tasks running as jobs and one waiting in the queue:
/// every job ends (the queued one taken out of the queue), the plan is cancelled.
#[test]
fn a_cancelled_plan_ends_its_running_and_queued_jobs() {
    if !have_slurm() {
        return;
    }
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
    if !have_slurm() {
        return;
    }
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
