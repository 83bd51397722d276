#!/bin/sh
# chatty: prints the prompt's `lines:` count of numbered 100-byte lines (default 100000, about
# 10 MB), then "chatty: the end", and submits.
set -eu
n=$(sed -n 's/^lines: *//p' "$GUILD_HALL_PROMPT_FILE" | head -n 1)
awk -v n="${n:-100000}" 'BEGIN { pad = sprintf("%90s", ""); for (i = 1; i <= n; i++) printf "line %07d%s\n", i, pad }'
echo "chatty: the end"
"$GUILD_HALL_BIN" toolbox submit-result --summary "printed ${n:-100000} lines"
