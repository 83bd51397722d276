#!/bin/sh
# Runs Claude Code headless for one commission (REQ-WD-31..33):
# - tools: Read, Grep, Glob, WebSearch, WebFetch and the guild-hall toolbox only (no Write,
#   Edit or Bash; the deliverable goes through submit_result),
# - bounded by GUILD_HALL_MAX_TURNS and GUILD_HALL_MAX_BUDGET_USD,
# - permission mode bypassPermissions (nothing can ask a person: there is none),
# - system prompt from GUILD_HALL_SYSTEM_PROMPT_FILE (posture, memory, toolbox instructions),
# - the toolbox mounted as the MCP server `guild-hall` (`$GUILD_HALL_BIN mcp`).
set -eu
config="$GUILD_HALL_WORKTREE/../.claude-code-mcp-$GUILD_HALL_COMMISSION.json"
trap 'rm -f "$config"' EXIT
cat > "$config" <<JSON
{"mcpServers": {"guild-hall": {"type": "stdio", "command": "$GUILD_HALL_BIN", "args": ["mcp"]}}}
JSON
tools="Read,Grep,Glob,WebSearch,WebFetch"
for t in report_progress submit_result log_question record_decision store_memory; do
  tools="$tools,mcp__guild-hall__$t"
done
"$GUILD_HALL_BIN" toolbox report-progress "Starting Claude Code"
claude -p "$(cat "$GUILD_HALL_PROMPT_FILE")" \
  --append-system-prompt "$(cat "$GUILD_HALL_SYSTEM_PROMPT_FILE")" \
  --mcp-config "$config" --strict-mcp-config \
  --allowedTools "$tools" \
  --max-turns "$GUILD_HALL_MAX_TURNS" \
  --max-budget-usd "$GUILD_HALL_MAX_BUDGET_USD" \
  --permission-mode bypassPermissions --dangerously-skip-permissions \
  --output-format text
