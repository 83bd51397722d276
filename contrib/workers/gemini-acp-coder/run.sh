#!/bin/sh
# Starts Gemini CLI as an Agent Client Protocol agent on stdio (`gemini --acp`); guild-hall's ACP
# client (`guild-hall acp -- run.sh`, from `protocol: acp`) drives it for a commission attempt or
# a meeting turn, and offers the toolbox as the MCP server `guild-hall` in each session (its
# calls come as permission requests, answered by the package's policy: `acp.allow`, the toolbox
# always). Gemini CLI's state for this package is its own home, ~/.gemini/guild-hall-<package>
# (the one place worker.yaml's sandbox.write lets it write; the person's ~/.gemini is neither
# read nor changed, nor another package's home, where a coder could plant a GEMINI.md), with settings written whole and renamed into place:
# - an API key (GEMINI_API_KEY, endpoint GOOGLE_GEMINI_BASE_URL, both from pass_env),
# - one attempt per model request (guild-hall's own attempts are the retries),
# - no usage statistics, telemetry or update checks.
# The model is pinned (GEMINI_MODEL; `auto` adds a routing request), the workspace trusted.
# Gemini CLI loads a trusted workspace's `.gemini/` (settings whose tools.allowed run the shell
# without asking, MCP servers, hooks, policies, `.env`) from its cwd and from each session's:
# repository content. So both are GUILD_HALL_ACP_SESSION_CWD (worker.yaml's acp.session_dir, a
# directory of this package's home named after the worktree), emptied here at every start (a
# coder's shell could plant a `.gemini/` in it); the worktree comes in with
# `--include-directories`, and guild-hall's client names it to the model.
set -eu
worktree=$PWD
rm -rf "$GUILD_HALL_ACP_SESSION_CWD"
mkdir -p "$GUILD_HALL_ACP_SESSION_CWD/.gemini"
cd "$GUILD_HALL_ACP_SESSION_CWD"
# The bound on the model's turns (GUILD_HALL_MAX_TURNS): Gemini CLI's model.maxSessionTurns, as
# this directory's own workspace setting (the only `.gemini/` there), so that workers of the
# package starting at once each keep theirs.
turns=$(printf '%s' "${GUILD_HALL_MAX_TURNS:-}" | tr -cd '0-9')
printf '{"model": {"maxSessionTurns": %s}}\n' "${turns:--1}" > .gemini/settings.json
export GEMINI_CLI_HOME="$HOME/.gemini/guild-hall-$GUILD_HALL_WORKER"
mkdir -p "$GEMINI_CLI_HOME/.gemini"
settings="$GEMINI_CLI_HOME/.gemini/settings.json"
cat > "$settings.$$" <<'JSON'
{
  "security": {"auth": {"selectedType": "gemini-api-key"}},
  "privacy": {"usageStatisticsEnabled": false},
  "telemetry": {"enabled": false},
  "general": {"disableAutoUpdate": true, "disableUpdateNag": true, "maxAttempts": 1}
}
JSON
mv "$settings.$$" "$settings"
exec gemini --acp -m "${GEMINI_MODEL:-gemini-2.5-flash}" --approval-mode "${GEMINI_APPROVAL_MODE:-default}" \
  --include-directories "$worktree"
