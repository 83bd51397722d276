#!/bin/sh
# researcher: Claude Code (claude.sh, the claude-code package's run.sh) with the brief told where
# its report goes: .lore/reports/<commission id>.md. The brief is written to the attempt's
# private temp dir (removed with the attempt), never passed on the command line.
set -eu
brief="$TMPDIR/brief.md"
{
  cat "$GUILD_HALL_PROMPT_FILE"
  printf '\n\nWrite your report to .lore/reports/%s.md with write_artifact, then submit_result naming it.\n' "$GUILD_HALL_ID"
} > "$brief"
GUILD_HALL_PROMPT_FILE="$brief" exec "$(dirname "$0")/claude.sh"
