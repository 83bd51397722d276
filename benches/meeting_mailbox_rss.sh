#!/bin/bash
# Peak RSS and wall time of three `reconcile --once` passes over an open meeting whose mailbox
# holds ~100 MB (25,000 summary events of 4 KB) appended after its first turn (issue 17).
#   benches/meeting_mailbox_rss.sh target/debug/guild-hall examples/workers
set -eu
BIN=$(realpath "$1"); EX=$(realpath "$2")
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
source "$(dirname "$(realpath "$0")")/project.sh"
bench_project "$BIN" "$T"
mkdir -p .lore/workers && cp -r "$EX/counsel" .lore/workers/
"$BIN" meeting start --worker counsel --id m hello >/dev/null 2>&1
MAILBOX=$(ls -d "$GUILD_HALL_HOME"/state/*/meetings/m)/events.jsonl
python3 - "$MAILBOX" <<'PY'
import sys, uuid
path = sys.argv[1]
total, n, seq = 100_000_000, 0, 1000
head = '{"seq":%d,"id":"%s","ts":"2026-01-01T00:00:00.000Z","attempt":1,"kind":"summary","text":"'
with open(path, 'a') as f:
    while n < total:
        seq += 1
        line = head % (seq, uuid.uuid4()) + 'x' * 4000 + '"}\n'
        f.write(line); n += len(line)
PY
echo "mailbox: $(stat -c %s "$MAILBOX") bytes"
for pass in 1 2 3; do
  /usr/bin/time -v "$BIN" reconcile --once > "$T/out" 2> "$T/err" || echo "pass $pass failed: $(grep -v '^\s' "$T/err" | tail -2)"
  rss=$(sed -n 's/^\s*Maximum resident set size (kbytes): //p' "$T/err")
  wall=$(sed -n 's/^\s*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$T/err")
  echo "pass $pass: peak RSS ${rss} KB, wall ${wall}, timeline $(stat -c %s .lore/meetings/m.timeline.jsonl) bytes"
done
