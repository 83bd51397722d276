#!/bin/bash
# Wall time of `reconcile --once` passes over a plan whose one running wave task has N task
# updates in its mailbox (issue 17, item 7, for wave tasks). Kills the worker it starts: run it
# in a private pid namespace.
#   unshare --pid --fork --mount-proc benches/task_mailbox.sh target/debug/guild-hall 8000
set -eu
BIN=$(realpath "$1"); N=${2:-8000}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
source "$(dirname "$(realpath "$0")")/project.sh"
bench_project "$BIN" "$T"
printf 'stale_after: 1h\n' > .lore/guild-hall.yaml
mkdir -p .lore/workers/hang .lore/plans
printf 'name: hang\ndescription: hangs\ncommand: ["./run.sh"]\ncheckout: sparse\ncapabilities: [commission]\n' > .lore/workers/hang/worker.yaml
cat > .lore/workers/hang/run.sh <<'SH'
#!/bin/sh
"$GUILD_HALL_BIN" toolbox task-update --status in_progress --sequence 1 --idempotency-key started >/dev/null
exec sleep 100000
SH
chmod +x .lore/workers/hang/run.sh
printf -- '---\ntitle: big\nwaves:\n  - - {id: t, worker: hang, prompt: hang}\n---\n' > .lore/plans/big.md
STATE=$GUILD_HALL_HOME/state
for _ in $(seq 1 100); do
  "$BIN" reconcile --once >/dev/null 2>&1 || true
  ls "$STATE"/*/plans/big/tasks/*/events*.jsonl >/dev/null 2>&1 && [ -s "$(ls "$STATE"/*/plans/big/tasks/*/events*.jsonl | head -1)" ] && break
  sleep 0.2
done
TASK=$(ls -d "$STATE"/*/plans/big/tasks/*)
MAILBOX=$TASK/events-1.jsonl; [ -e "$MAILBOX" ] || MAILBOX=$TASK/events.jsonl   # before issue 17 (items 1, 2): one file
[ -s "$MAILBOX" ] || { echo "the worker did not start"; exit 1; }
"$BIN" reconcile --once >/dev/null 2>&1 || true
python3 - "$MAILBOX" "$N" <<'PY'
import sys, uuid
path, n = sys.argv[1], int(sys.argv[2])
with open(path, 'a') as f:
    for i in range(2, n + 2):
        f.write('{"seq":%d,"id":"%s","ts":"2026-01-01T00:00:00.000Z","attempt":1,"kind":"task_update","status":"in_progress","changed_ops":[{"op":"modify","path":"src/f%d.rs"}],"sequence":%d,"idempotency_key":"step-%d"}\n' % (i, uuid.uuid4(), i, i, i))
PY
echo "mailbox: $(wc -l < "$MAILBOX") lines, $(stat -c %s "$MAILBOX") bytes"
for pass in 1 2; do
  /usr/bin/time -v "$BIN" reconcile --once > "$T/out" 2> "$T/err" || true
  wall=$(sed -n 's/^\s*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$T/err")
  rss=$(sed -n 's/^\s*Maximum resident set size (kbytes): //p' "$T/err")
  echo "pass $pass: wall ${wall}, peak RSS ${rss} KB; $(grep -v "^\s" "$T/err" | grep -v "Command being timed" | head -3 | tr "\n" " ")$(tail -2 "$T/out" | tr "\n" " ")"
done
echo "log entries: $(grep -c '"kind":"task_update"' .lore/plans/big.timeline.jsonl || true) task_update"
