#!/bin/sh
# scribe: the happy path. Reads its prompt, reports progress twice, writes the file named by the
# prompt's `output: <path>` line (default .lore/reports/<id>.md), asks the question on an
# optional `ask: <question>` line, submits the result and exits 0. Its checkout is sparse (only
# .lore/): an output outside .lore/ is never merged, and the commission fails naming it.
# A `wait-for: <question>` line asks a person with `toolbox ask` and waits for the answer
# (written into the file and the result); a `request-meeting: <reason>` line asks for a meeting
# (a refusal is written into the file and the result, and the work goes on).
set -eu
echo "scribe: starting $GUILD_HALL_ID (attempt $GUILD_HALL_ATTEMPT)"
prompt=$(cat "$GUILD_HALL_PROMPT_FILE")
out=$(printf '%s\n' "$prompt" | sed -n 's/^output: *//p' | head -n 1)
[ -n "$out" ] || out=".lore/reports/$GUILD_HALL_ID.md"
ask=$(printf '%s\n' "$prompt" | sed -n 's/^ask: *//p' | head -n 1)
wait_for=$(printf '%s\n' "$prompt" | sed -n 's/^wait-for: *//p' | head -n 1)
meet=$(printf '%s\n' "$prompt" | sed -n 's/^request-meeting: *//p' | head -n 1)

"$GUILD_HALL_BIN" toolbox report-progress "Reading the prompt"
sleep 0.3
[ -z "$ask" ] || "$GUILD_HALL_BIN" toolbox log-question "$ask"
said=""
if [ -n "$meet" ]; then
  said=$("$GUILD_HALL_BIN" toolbox request-meeting --reason "$meet" 2>&1) || said="refused: $said"
  said="; meeting: $said"
fi
if [ -n "$wait_for" ]; then
  answer=$("$GUILD_HALL_BIN" toolbox ask "$wait_for")
  said="$said; answer: $answer"
fi
"$GUILD_HALL_BIN" toolbox record-decision --question "Where to write?" --decision "$out" --reasoning "named by the prompt"
mkdir -p "$(dirname "$out")"
{
  echo "# $GUILD_HALL_ID"
  echo
  echo "Written by the scribe for $GUILD_HALL_KIND $GUILD_HALL_ID."
  echo
  echo "## Prompt"
  echo
  printf '%s\n' "$prompt"
  [ -z "$said" ] || { echo; echo "## Said"; echo; echo "${said#; }"; }
} > "$out"
"$GUILD_HALL_BIN" toolbox report-progress "Wrote $out"
"$GUILD_HALL_BIN" toolbox submit-result --summary "Wrote $out$said" --artifact "$out"
echo "scribe: done"
