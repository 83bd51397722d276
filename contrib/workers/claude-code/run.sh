#!/bin/sh
# Runs Claude Code headless for one commission, confined by guild-hall's
# sandbox to its worktree, its temp dir and Claude Code's own state (worker.yaml):
# - built-in tools from CLAUDE_TOOLS with `--tools` (the others are not offered to the model at
#   all), plus the guild-hall toolbox over MCP. Unset (claude-code): Read, Grep, Glob, WebSearch
#   and WebFetch, files delivered with the toolbox's write_artifact; claude-code-coder's
#   worker.yaml adds Write, Edit and Bash: it edits and builds in its full checkout, and the
#   sandbox keeps every write (Bash's too) inside its worktree, temp dir and Claude Code's home,
# - `--permission-mode dontAsk`: what `--allowedTools` lists runs, anything else is denied
#   without asking (there is nobody to ask). No permission bypass, so it runs as root too,
# - bounded by GUILD_HALL_MAX_TURNS and GUILD_HALL_MAX_BUDGET_USD,
# - the prompt on stdin and the system prompt (posture, memory, toolbox instructions) from its
#   file with `--append-system-prompt-file`: never as text on the command line, where any
#   process could read it (/proc/*/cmdline) and a long one fails at exec,
# - `--setting-sources ""`: no settings file is loaded, so a repository's `.claude/settings.json`
#   or `settings.local.json` (hooks that run shell commands, another model, another API URL) is
#   repository content and nothing more, as in the ACP packages,
# - its stream (stream-json) as output: `guild-hall logs` shows every tool call it made,
# - a revision (`guild-hall revise`) resumed in the session of the attempt it revises.
# Claude Code's home is this package's own, ~/.claude/guild-hall-<package> (CLAUDE_CONFIG_DIR;
# worker.yaml's sandbox.write): never the person's ~/.claude (settings.json hooks, CLAUDE.md,
# login), never another package's, so a coder cannot plant hooks, settings or instructions that
# another package or the person's own `claude` would run. It persists: a meeting resumes there.
set -eu
export CLAUDE_CONFIG_DIR="$HOME/.claude/guild-hall-$GUILD_HALL_WORKER"
# The MCP config lives in the private temp dir, which guild-hall removes with the attempt.
config="$TMPDIR/guild-hall-mcp.json"
cat > "$config" <<JSON
{"mcpServers": {"guild-hall": {"type": "stdio", "command": "$GUILD_HALL_BIN", "args": ["mcp"]}}}
JSON
# A Guild Hall worker run through this package (guild_hall_packages:) names its own built-in
# tools and model: GUILD_HALL_TOOLS and GUILD_HALL_MODEL, set by guild-hall from its package.json.
builtin="${GUILD_HALL_TOOLS:-${CLAUDE_TOOLS:-Read,Grep,Glob,WebSearch,WebFetch}}"
toolbox=""
for t in report_progress submit_result log_question ask request_meeting record_decision store_memory write_artifact read_artifact; do
  toolbox="$toolbox,mcp__guild-hall__$t"
done
"$GUILD_HALL_BIN" toolbox report-progress "Starting Claude Code"
# A revision of a commission goes on in the session of the attempt it revises
# (GUILD_HALL_SESSION_ID: guild-hall read it from that attempt's stream), where this package's
# home still keeps it: the agent sees its earlier work and the feedback, appended to the prompt.
# A session id is a UUID (anything else is dropped); a session no longer kept starts anew, the
# prompt saying what is on the branch and what to change.
set --
session=$(printf '%s' "${GUILD_HALL_SESSION_ID:-}" | tr -cd 'A-Za-z0-9-')
if [ -n "$session" ] && ls "$CLAUDE_CONFIG_DIR"/projects/*/"$session.jsonl" >/dev/null 2>&1; then
  set -- --resume "$session"
fi
if [ -n "${GUILD_HALL_MODEL:-}" ]; then
  set -- "$@" --model "$GUILD_HALL_MODEL"
fi
exec claude -p "$@" --setting-sources "" \
  --append-system-prompt-file "$GUILD_HALL_SYSTEM_PROMPT_FILE" \
  --mcp-config "$config" --strict-mcp-config \
  --tools "$builtin" \
  --allowedTools "$builtin$toolbox" \
  --permission-mode dontAsk \
  --max-turns "$GUILD_HALL_MAX_TURNS" \
  --max-budget-usd "$GUILD_HALL_MAX_BUDGET_USD" \
  --output-format stream-json --verbose < "$GUILD_HALL_PROMPT_FILE"
