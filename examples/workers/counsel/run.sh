#!/bin/sh
# counsel as a commission worker: it only meets, so it says so and submits that.
set -eu
"$GUILD_HALL_BIN" toolbox submit-result --summary "counsel only meets; start a meeting with it instead"
