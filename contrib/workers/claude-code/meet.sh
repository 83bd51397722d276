#!/bin/sh
# One meeting turn with Claude Code, headless: the person's message is the prompt,
# the session guild-hall keeps is resumed with `--resume` (empty on the first turn: Claude Code
# then starts one, and guild-hall stores its id), and the output is Claude Code's own stream
# (`stream-json` with partial messages), which guild-hall translates into meeting events.
# Tools as for commissions (run.sh), with the meeting toolbox instead of the commission one; as
# there, the message on stdin, the system prompt from its file, and no settings file loaded
# (`--setting-sources ""`: a repository's `.claude/settings.json` runs no hook here).
# Claude Code's home is this package's own, ~/.claude/guild-hall-<package> (CLAUDE_CONFIG_DIR;
# worker.yaml's sandbox.write): never the person's ~/.claude (settings.json hooks, CLAUDE.md,
# login), never another package's, so a coder cannot plant hooks, settings or instructions that
# another package or the person's own `claude` would run. It persists: a meeting resumes there.
set -eu
export CLAUDE_CONFIG_DIR="$HOME/.claude/guild-hall-$GUILD_HALL_WORKER"
config="$TMPDIR/guild-hall-mcp.json"
cat > "$config" <<JSON
{"mcpServers": {"guild-hall": {"type": "stdio", "command": "$GUILD_HALL_BIN", "args": ["mcp"]}}}
JSON
# A Guild Hall worker run through this package (guild_hall_packages:) names its own built-in
# tools and model: GUILD_HALL_TOOLS and GUILD_HALL_MODEL, set by guild-hall from its package.json.
builtin="${GUILD_HALL_TOOLS:-${CLAUDE_TOOLS:-Read,Grep,Glob,WebSearch,WebFetch}}"
toolbox=""
for t in link_artifact summarize_progress propose_followup record_decision store_memory write_artifact read_artifact; do
  toolbox="$toolbox,mcp__guild-hall__$t"
done
if [ -n "${GUILD_HALL_SESSION_ID:-}" ]; then
  set -- --resume "$GUILD_HALL_SESSION_ID"
else
  set --
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
  --output-format stream-json --verbose --include-partial-messages < "$GUILD_HALL_MESSAGE_FILE"
