#!/bin/sh
# stubborn: ignores SIGTERM and loops forever; only SIGKILL after `cancel_grace` stops it.
set -eu
trap '' TERM
"$GUILD_HALL_BIN" toolbox report-progress "Not stopping for TERM"
while :; do sleep 1; done
