#!/bin/sh
# silent: exits cleanly WITHOUT submitting a result. The commission fails with
# "completed without submitting result"; its partial work is kept on the branch.
set -eu
mkdir -p .lore/partial
echo "started but never submitted" > ".lore/partial/$GUILD_HALL_ID.md"
"$GUILD_HALL_BIN" toolbox report-progress "Half way"
exit 0
