#!/bin/sh
# scripted-researcher: a scripted stand-in for an agent, using every tool of the toolbox once.
# It reads its prompt and system prompt, reports progress, records a decision, logs a question,
# stores a memory for its next commissions, writes a report into its worktree and submits it.
set -eu
gh=$GUILD_HALL_BIN
id=$GUILD_HALL_ID
report=".lore/reports/$id.md"

"$gh" toolbox report-progress "Reading the brief"
topic=$(head -n 1 "$GUILD_HALL_PROMPT_FILE")
"$gh" toolbox record-decision --question "How deep to go?" --decision "One page" \
  --reasoning "The brief asks for an overview"
"$gh" toolbox log-question "Is a one-page overview enough for: $topic?"

mkdir -p "$(dirname "$report")"
{
  echo "# Report: $topic"
  echo
  echo "Commission $id, by worker $GUILD_HALL_WORKER (attempt $GUILD_HALL_ATTEMPT)."
  echo
  echo "## What I was told"
  echo
  cat "$GUILD_HALL_PROMPT_FILE"
  echo
  echo "## What I remembered"
  echo
  sed -n '/^## Memory/,/^## Toolbox/p' "$GUILD_HALL_SYSTEM_PROMPT_FILE" | sed '$d'
} > "$report"
"$gh" toolbox report-progress "Wrote $report"
"$gh" toolbox store-memory --key last-topic --content "Researched '$topic' in commission $id."
"$gh" toolbox submit-result --summary "Report on $topic" --artifact "$report"
