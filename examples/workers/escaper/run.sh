#!/bin/sh
# escaper: starts three processes meant to outlive it — one in a new session (setsid), one
# double-forked (re-parented away from it), one daemonised that ignores SIGTERM — reports their
# pids as progress ("pids: A B C"), then does what the prompt's `then:` line says:
#   exit  submit a result and exit 0 (the default)
#   wait  keep printing, never submit (for cancel)
#   hang  go silent: no output, no CPU, no progress (for stale)
set -u
setsid sleep 1001 &
a=$!
sh -c 'sleep 1002 & echo $! > "$TMPDIR/b"' &
nohup setsid sh -c 'trap "" TERM; echo $$ > "$TMPDIR/c"; while :; do sleep 1; done' >/dev/null 2>&1 &
while [ ! -s "$TMPDIR/b" ] || [ ! -s "$TMPDIR/c" ]; do sleep 0.05; done
"$GUILD_HALL_BIN" toolbox report-progress "pids: $a $(cat "$TMPDIR/b") $(cat "$TMPDIR/c")"
case "$(sed -n 's/^then: *//p' "$GUILD_HALL_PROMPT_FILE" | head -n 1)" in
  wait) while :; do echo "still here"; sleep 0.5; done ;;
  hang) exec sleep 100000 ;;
  *) "$GUILD_HALL_BIN" toolbox submit-result --summary "left three processes behind" ;;
esac
