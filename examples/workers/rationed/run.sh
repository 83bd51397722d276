#!/bin/sh
# rationed: an agent on a metered plan. Until its attempt passes the prompt's
# `limited-attempts: N` line (default 1), it leaves some work in its worktree, then reports a
# usage limit the way any package may — guild-hall's own `limit` line on its output, with
# `resets_at` when the prompt's `resets-in: SECONDS` line says one — and exits 1, as an agent
# cut off does. After that it writes `.lore/reports/<id>.md` and submits it. A
# `wait-for-file: NAME` line holds a limited attempt (60 s at most) until NAME appears in its
# worktree.
set -eu
prompt=$(cat "$GUILD_HALL_PROMPT_FILE")
gate=$(printf '%s\n' "$prompt" | sed -n 's/^wait-for-file: *//p' | head -n 1)
limited=$(printf '%s\n' "$prompt" | sed -n 's/^limited-attempts: *//p' | head -n 1)
resets_in=$(printf '%s\n' "$prompt" | sed -n 's/^resets-in: *//p' | head -n 1)
attempt=${GUILD_HALL_ATTEMPT:-1}
if [ "$attempt" -le "${limited:-1}" ]; then
  if [ -n "$gate" ]; then
    n=0
    while [ ! -e "$gate" ] && [ "$n" -lt 600 ]; do sleep 0.1; n=$((n + 1)); done
  fi
  mkdir -p .lore/partial
  echo "begun in attempt $attempt" > ".lore/partial/$GUILD_HALL_ID-$attempt.md"
  if [ -n "$resets_in" ]; then
    at=$(date -u -d "@$(( $(date +%s) + resets_in ))" +%Y-%m-%dT%H:%M:%SZ)
    printf '{"type":"limit","text":"usage limit reached (attempt %s)","resets_at":"%s"}\n' "$attempt" "$at"
  else
    printf '{"type":"limit","text":"usage limit reached (attempt %s)"}\n' "$attempt"
  fi
  exit 1
fi
out=".lore/reports/$GUILD_HALL_ID.md"
mkdir -p .lore/reports
echo "# $GUILD_HALL_ID, written in attempt $attempt" > "$out"
"$GUILD_HALL_BIN" toolbox submit-result --summary "Wrote $out" --artifact "$out"
