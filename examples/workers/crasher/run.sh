#!/bin/sh
# crasher: submits its result, then exits 3. A submitted result is never discarded: the
# commission completes and the crash is recorded as an anomaly in the timeline.
set -eu
mkdir -p .lore/crash
echo "result before the crash" > ".lore/crash/$GUILD_HALL_ID.md"
"$GUILD_HALL_BIN" toolbox submit-result --summary "Done, then crashed" --artifact ".lore/crash/$GUILD_HALL_ID.md"
exit 3
