#!/bin/bash
# Peak RSS and wall time of two `reconcile --once` passes over a commission whose running
# worker's mailbox holds 700 MB (issue 17, item 7). Kills the worker it starts: run it in a
# private pid namespace.
#   unshare --pid --fork --mount-proc benches/mailbox_rss.sh target/debug/guild-hall big
# SHAPE: big (7,000 progress events of 100 KB), small (~4.6 M events of ~150 bytes),
# line (one event of 700 MB).
set -eu
BIN=$(realpath "$1"); SHAPE=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
source "$(dirname "$(realpath "$0")")/project.sh"
bench_project "$BIN" "$T"
mkdir -p .lore/workers/hang
printf 'name: hang\ndescription: hangs\ncommand: ["./run.sh"]\ncheckout: sparse\ncapabilities: [commission]\n' > .lore/workers/hang/worker.yaml
printf '#!/bin/sh\n"$GUILD_HALL_BIN" toolbox report-progress started\nexec sleep 100000\n' > .lore/workers/hang/run.sh
chmod +x .lore/workers/hang/run.sh
printf -- '---\nworker: hang\n---\nHang.\n' > .lore/commissions/big.md
for _ in $(seq 1 50); do
  "$BIN" reconcile --once >/dev/null 2>&1 || true
  grep -q 'progress: started' .lore/commissions/big.md && break
  sleep 0.2
done
grep -q 'progress: started' .lore/commissions/big.md || { echo "the worker did not start"; exit 1; }
STATE=$(ls -d "$GUILD_HALL_HOME"/state/*/commissions/big)
MAILBOX=$STATE/events-1.jsonl; [ -e "$MAILBOX" ] || MAILBOX=$STATE/events.jsonl   # before issue 17: one file
python3 - "$MAILBOX" "$SHAPE" <<'PY'
import sys, uuid
path, shape = sys.argv[1], sys.argv[2]
total, n, seq = 700_000_000, 0, 1000
head = '{"seq":%d,"id":"%s","ts":"2026-01-01T00:00:00.000Z","attempt":1,"kind":"progress","text":"'
with open(path, 'a') as f:
    if shape == 'line':
        f.write(head % (seq, uuid.uuid4()))
        chunk = 'x' * 1_000_000
        while n < total:
            f.write(chunk); n += len(chunk)
        f.write('"}\n')
    else:
        text = 'x' * 100_000 if shape == 'big' else None
        while n < total:
            seq += 1
            line = head % (seq, uuid.uuid4()) + (text or 'step %d of many' % seq) + '"}\n'
            f.write(line); n += len(line)
PY
echo "mailbox: $(stat -c %s "$MAILBOX") bytes ($SHAPE)"
for pass in 1 2; do
  /usr/bin/time -v "$BIN" reconcile --once > "$T/out" 2> "$T/err" || true
  rss=$(sed -n 's/^\s*Maximum resident set size (kbytes): //p' "$T/err")
  wall=$(sed -n 's/^\s*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$T/err")
  echo "pass $pass: peak RSS ${rss} KB, wall ${wall}"
done
