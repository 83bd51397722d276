#!/bin/sh
# sleeper: stays running for a while (the prompt's `sleep: N` line, default 5 s), for cancel
# and limit tests, then writes a file and submits. Default SIGTERM behaviour.
set -eu
secs=$(sed -n 's/^sleep: *//p' "$GUILD_HALL_PROMPT_FILE" | head -n 1)
"$GUILD_HALL_BIN" toolbox report-progress "Sleeping ${secs:-5}s"
sleep "${secs:-5}"
mkdir -p .lore/slept
echo "slept ${secs:-5}s" > ".lore/slept/$GUILD_HALL_ID.md"
"$GUILD_HALL_BIN" toolbox submit-result --summary "Slept ${secs:-5}s" --artifact ".lore/slept/$GUILD_HALL_ID.md"
