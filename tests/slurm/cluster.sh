# A single-node Slurm cluster for tests and benchmarks, started as plain background processes
# (munged, slurmctld, slurmd) with a generated slurm.conf under one directory. Source it inside
# a private pid and network namespace (`unshare --pid --fork --mount-proc --net`): the daemons
# die with the namespace, and their fixed ports clash with nothing.
#   slurm_cluster DIR [CPUS]: start it; exports SLURM_CONF; returns once the node is idle.
#     (SLURM_CONF_EXTRA: more lines for slurm.conf.)
#   slurm_stop: stop the daemons by their recorded pids.

slurm_cluster() {
  local dir=$1 cpus=${2:-}
  mkdir -p "$dir"/munge/key "$dir"/munge/run "$dir"/ctld "$dir"/spool "$dir"/log
  # munged refuses a key directory others can read, and a socket directory they cannot.
  chmod 0700 "$dir"/munge/key
  chmod 0755 "$dir"/munge "$dir"/munge/run
  dd if=/dev/urandom of="$dir"/munge/key/munge.key bs=1024 count=1 status=none
  chmod 0400 "$dir"/munge/key/munge.key
  munged --force --key-file="$dir"/munge/key/munge.key --socket="$dir"/munge/run/munge.socket \
    --pid-file="$dir"/munge/run/munged.pid --log-file="$dir"/log/munged.log --seed-file="$dir"/munge/seed
  local node name
  # This host as slurmd sees it (its short name), reached over loopback; the CPU count set
  # when asked.
  node=$(slurmd -C | head -1)
  name=$(sed -E 's/^NodeName=([^ ]+).*/\1/' <<<"$node")
  node=$(sed -E "s/^NodeName=[^ ]+/NodeName=$name NodeAddr=127.0.0.1/" <<<"$node")
  if [ -n "$cpus" ]; then
    node=$(sed -E "s/CPUs=[0-9]+/CPUs=$cpus/; s/Boards=[0-9]+ SocketsPerBoard=[0-9]+ CoresPerSocket=[0-9]+ ThreadsPerCore=[0-9]+ //" <<<"$node")
  fi
  # proctrack/linuxproc even where a cgroup-v1 freezer is mounted: proctrack/cgroup would make
  # slurm/ directories in the machine's own cgroup tree, which a killed test leaves behind. What
  # linuxproc lets escape (a double-forked orphan) the shim, the attempt's subreaper, contains.
  # batch_sched_delay=0: back-to-back jobs start at once, not ~3 s later. jobcomp/filetxt: a
  # durable record of how jobs ended, without slurmdbd.
  cat >"$dir"/slurm.conf <<CONF
ClusterName=gh-test
SlurmctldHost=$name(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/run/munge.socket
MailProg=/bin/true
StateSaveLocation=$dir/ctld
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldPort=${SLURMCTLD_PORT:-6817}
SlurmdPort=${SLURMD_PORT:-6818}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/log/jobcomp.txt
MinJobAge=300
$node State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
${SLURM_CONF_EXTRA:-}
CONF
  export SLURM_CONF=$dir/slurm.conf
  slurmctld -f "$SLURM_CONF"
  slurmd -f "$SLURM_CONF"
  local i
  for i in $(seq 300); do
    if sinfo -h -o %T 2>/dev/null | grep -qx idle; then return 0; fi
    sleep 0.1
  done
  echo "the Slurm node did not become idle within 30 s; logs in $dir/log" >&2
  tail -n 20 "$dir"/log/*.log >&2
  return 1
}

slurm_stop() {
  local dir f pid
  dir=$(dirname "$SLURM_CONF")
  for f in "$dir"/slurmd.pid "$dir"/slurmctld.pid "$dir"/munge/run/munged.pid; do
    [ -s "$f" ] || continue
    pid=$(cat "$f")
    kill "$pid" 2>/dev/null || continue
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
  done
}
