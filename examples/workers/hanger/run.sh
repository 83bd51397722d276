#!/bin/sh
# hanger: reports progress once, then sleeps forever: no progress, no output, no CPU.
# The heartbeat judges it stale after `stale_after` and its process group is killed.
set -eu
"$GUILD_HALL_BIN" toolbox report-progress "About to hang"
exec sleep 100000
