#!/bin/sh
# Starts Zed's Codex adapter (`codex-acp`), an Agent Client Protocol agent on stdio; guild-hall's
# ACP client (`guild-hall acp -- run.sh`, from `protocol: acp`) drives it for a commission
# attempt or a meeting turn, and offers the toolbox as the MCP server `guild-hall` in each
# session. Codex's configuration is given here with `-c` (nothing is written to config.toml):
# - its own sandbox for the commands the model runs: CODEX_SANDBOX (worker.yaml). `read-only`
#   cannot start inside guild-hall's Landlock (bubblewrap), so shell commands are refused and
#   files go through the toolbox; `danger-full-access` (codex-acp-coder): no sandbox of Codex's
#   own, guild-hall's confinement keeps every write in the worktree, temp dir and its home,
# - when Codex asks before a command or an edit: CODEX_APPROVAL (worker.yaml). `never`
#   (codex-acp): it never asks, so `acp.allow` is not consulted for commands and edits; what
#   stops them is Codex's read-only sandbox failing to start (above). `untrusted`
#   (codex-acp-coder): it asks before every command but its few known-safe read-only ones and
#   before every edit; guild-hall answers by `acp.allow` (kinds `execute`, `edit`), and a
#   rejection ends Codex's turn. MCP tool calls come to guild-hall as permission requests either
#   way, the toolbox's always allowed,
# - the model endpoint from OPENAI_BASE_URL and the key from OPENAI_API_KEY when either is set
#   (a Responses API provider that retries no failed request: guild-hall's own attempts are the
#   retries); unset, the login of this package's home. CODEX_MODEL: the model.
# Codex's home is this package's own, ~/.codex/guild-hall-<package> (worker.yaml's sandbox.write):
# never the person's ~/.codex (config, login, sessions), never another package's, so a coder
# cannot plant configuration another package or the person's own `codex` would run.
set -eu
export CODEX_HOME="$HOME/.codex/guild-hall-$GUILD_HALL_WORKER"
mkdir -p "$CODEX_HOME"
toml_str() { printf '"%s"' "$(printf '%s' "$1" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g')"; }
set -- -c "sandbox_mode=\"${CODEX_SANDBOX:-read-only}\"" -c "approval_policy=\"${CODEX_APPROVAL:-never}\""
if [ -n "${OPENAI_BASE_URL:-}" ] || [ -n "${OPENAI_API_KEY:-}" ]; then
  set -- "$@" \
    -c 'model_provider="guild-hall-openai"' \
    -c 'model_providers.guild-hall-openai.name="OpenAI (guild-hall pass_env)"' \
    -c "model_providers.guild-hall-openai.base_url=$(toml_str "${OPENAI_BASE_URL:-https://api.openai.com/v1}")" \
    -c 'model_providers.guild-hall-openai.env_key="OPENAI_API_KEY"' \
    -c 'model_providers.guild-hall-openai.wire_api="responses"' \
    -c 'model_providers.guild-hall-openai.request_max_retries=0' \
    -c 'model_providers.guild-hall-openai.stream_max_retries=0'
fi
if [ -n "${CODEX_MODEL:-}" ]; then
  set -- "$@" -c "model=$(toml_str "$CODEX_MODEL")"
fi
exec codex-acp "$@"
