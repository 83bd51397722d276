#!/bin/bash
# runner: slurm on a one-node cluster started here (tests/slurm/cluster.sh), issue 22:
#   1. dispatch-to-running: one `reconcile --once` that submits a commission's job, then
#      `scontrol show job` polled every 20 ms until the job leaves PENDING; next to a bare
#      `sbatch --wrap true` submitted and polled the same way. Median of N rounds each.
#   2. 20 one-second commissions on the 2-CPU node (`reconcile --once --wait`), against the
#      ideal (20 × 1 s / 2 CPUs) and 20 bare `sbatch --wrap 'sleep 1'` on the same node.
# Starts daemons and jobs: run it as root in private pid and network namespaces:
#   unshare --pid --fork --mount-proc --net benches/slurm.sh target/release/guild-hall [N]
set -eu
BIN=$(realpath "$1"); N=${2:-10}
HERE=$(dirname "$(realpath "$0")")
T=$(mktemp -d)
trap 'slurm_stop; rm -rf "$T"' EXIT
ip link set lo up
ip link add gh0 type veth peer name gh1 && ip addr add 10.217.0.1/24 dev gh0 && ip link set gh0 up && ip link set gh1 up
source "$HERE/../tests/slurm/cluster.sh"
slurm_cluster "$T/slurm" 2
now() { date +%s.%N; }
ms() { python3 -c 'import sys; print(round((float(sys.argv[2]) - float(sys.argv[1])) * 1000))' "$1" "$2"; }
median() { python3 -c 'import sys, statistics; print(round(statistics.median(map(float, sys.argv[1:]))))' "$@"; }
left_pending() { ! scontrol show job -o "$1" | grep -q 'JobState=PENDING'; }
poll() { until left_pending "$1"; do sleep 0.02; done; }
idle() { [ -z "$(squeue -h -o %i)" ]; }

source "$(dirname "$(realpath "$0")")/project.sh"
bench_project "$BIN" "$T"
printf 'runner: slurm\ncommission_cap: 20\n' > .lore/guild-hall.yaml
mkdir -p .lore/workers/nap
printf 'name: nap\ndescription: sleeps\ncommand: ["./run.sh"]\ncheckout: sparse\ncapabilities: [commission]\n' > .lore/workers/nap/worker.yaml
cat > .lore/workers/nap/run.sh <<'SH'
#!/bin/sh
secs=$(sed -n 's/^sleep: *//p' "$GUILD_HALL_PROMPT_FILE")
sleep "${secs:-0}"
mkdir -p .lore/naps && echo "$GUILD_HALL_ID" > ".lore/naps/$GUILD_HALL_ID.md"
"$GUILD_HALL_BIN" toolbox submit-result --summary napped --artifact ".lore/naps/$GUILD_HALL_ID.md" >/dev/null
SH
chmod +x .lore/workers/nap/run.sh
git add -A && git commit -qm workers

# Warm up: the first job after the node comes up waits for a scheduling cycle.
j=$(sbatch --parsable --wrap true -o /dev/null); poll "$j"
until idle; do sleep 0.05; done

bare=(); gh=()
for i in $(seq "$N"); do
  t0=$(now); j=$(sbatch --parsable --wrap true -o /dev/null); poll "$j"; bare+=("$(ms "$t0" "$(now)")")
  until idle; do sleep 0.05; done
  printf -- '---\nworker: nap\n---\nsleep: 0\n' > ".lore/commissions/lat-$i.md"
  t0=$(now); "$BIN" reconcile --once >/dev/null
  h=$(ls "$GUILD_HALL_HOME"/state/*/commissions/lat-$i/slurm.json)
  j=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["job_id"])' "$h"); poll "$j"; gh+=("$(ms "$t0" "$(now)")")
  "$BIN" reconcile --once --wait --timeout 60s >/dev/null
  until idle; do sleep 0.05; done
done
echo "dispatch-to-running, median of $N: guild-hall $(median "${gh[@]}") ms (reconcile --once, then polled), bare sbatch --wrap true $(median "${bare[@]}") ms"
echo "  guild-hall: ${gh[*]}"
echo "  bare:       ${bare[*]}"

# 20 one-second jobs on two CPUs.
t0=$(now)
for i in $(seq 20); do sbatch --parsable --wrap 'sleep 1' -o /dev/null >/dev/null; done
until idle; do sleep 0.02; done
bare20=$(ms "$t0" "$(now)")
for i in $(seq 20); do printf -- '---\nworker: nap\n---\nsleep: 1\n' > ".lore/commissions/par-$i.md"; done
t0=$(now)
"$BIN" reconcile --once --wait --timeout 300s >/dev/null
gh20=$(ms "$t0" "$(now)")
done20=$(grep -l '^status: completed' .lore/commissions/par-*.md | wc -l)
echo "20 one-second commissions, 2 CPUs: guild-hall $gh20 ms ($done20 completed), bare sbatch $bare20 ms, ideal 10000 ms"
