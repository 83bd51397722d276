#!/bin/sh
# Runs the Codex CLI headless (`codex exec --json`) for one commission (`codex.sh commission`)
# or one meeting turn (`codex.sh meeting`), confined by guild-hall's sandbox to its worktree,
# its temp dir and a Codex home of this package's own, ~/.codex/guild-hall-<package>
# (CODEX_HOME; the one place worker.yaml's sandbox.write widens): never the person's ~/.codex,
# whose config.toml, login and sessions are neither read nor changed, and never another
# package's, so a coder's shell cannot plant configuration (notify, MCP servers, instructions)
# that a read-only package, a meeting or the person's own `codex` would then run. The person's
# login is not inherited: the key comes from OPENAI_API_KEY (pass_env). The home persists, so a
# meeting's next turn finds its thread:
# - Codex's own sandbox for the commands the model runs: CODEX_SANDBOX (worker.yaml), never an
#   approval prompt (nobody to ask). `read-only` (the codex package): Codex's bubblewrap
#   sandbox, which cannot start inside guild-hall's Landlock (it must write /proc/self/uid_map),
#   so every shell command is refused and files go through the toolbox only.
#   `danger-full-access` (codex-coder): no sandbox of Codex's own; guild-hall's confinement
#   keeps every write inside the worktree, the temp dir and this package's Codex home,
# - the guild-hall toolbox as the MCP server `guild-hall` (`guild-hall mcp`), its tools approved
#   up front (with `approval_policy = "never"` an unapproved MCP call fails silently), passed
#   the GUILD_HALL_* variables it needs (Codex starts MCP servers with a short environment),
#   a tool call given as long as the toolbox's `ask` waits for a person (GUILD_HALL_ASK_TIMEOUT)
#   and a minute more,
# - the model endpoint from OPENAI_BASE_URL and the key from OPENAI_API_KEY when either is set
#   (a Responses API provider defined here with `-c`: nothing is written to config.toml; it
#   retries no failed request: guild-hall's own attempts are the retries);
#   unset, the login of this package's home (`CODEX_HOME=~/.codex/guild-hall-<package> codex login`),
# - the system prompt (GUILD_HALL_SYSTEM_PROMPT_FILE) and then the prompt, on stdin, in a new
#   thread (a resumed one holds the system prompt already): never as text on the command line,
#   where any process could read it and a long one fails at exec (Codex's own base instructions
#   stay: `model_instructions_file` would replace them),
# - a commission's revision and a meeting's later turns `codex exec resume <thread id>`; a thread Codex no longer has is
#   reported as a failed turn ("no rollout found"), which guild-hall renews in a fresh session,
# - its JSON lines as output: `guild-hall logs` shows every tool call it made, and meetings
#   translate them (`protocol: codex-json`).
set -eu
mode=${1:-commission}
export CODEX_HOME="$HOME/.codex/guild-hall-$GUILD_HALL_WORKER"
mkdir -p "$CODEX_HOME"
# A TOML basic string (paths, URLs).
toml_str() { printf '"%s"' "$(printf '%s' "$1" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g')"; }
vars=""
for v in $(env | sed -n 's/^\(GUILD_HALL_[A-Z0-9_]*\)=.*/\1/p'); do
  vars="$vars${vars:+,}\"$v\""
done
set -- \
  -c "sandbox_mode=\"${CODEX_SANDBOX:-read-only}\"" \
  -c 'approval_policy="never"' \
  -c "mcp_servers.guild-hall.command=$(toml_str "$GUILD_HALL_BIN")" \
  -c 'mcp_servers.guild-hall.args=["mcp"]' \
  -c "mcp_servers.guild-hall.env_vars=[$vars]" \
  -c 'mcp_servers.guild-hall.default_tools_approval_mode="approve"' \
  -c "mcp_servers.guild-hall.tool_timeout_sec=$((${GUILD_HALL_ASK_TIMEOUT:-1800} + 60)).0"
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
[ -n "${CODEX_MODEL:-}" ] && set -- "$@" -m "$CODEX_MODEL"
# A new thread's input: the system prompt, then the prompt (file $1), in the attempt's temp dir.
first_input() {
  { cat "$GUILD_HALL_SYSTEM_PROMPT_FILE"; printf '\n\n'; cat "$1"; } > "$TMPDIR/codex-input.md"
  echo "$TMPDIR/codex-input.md"
}
case "$mode" in
  commission)
    "$GUILD_HALL_BIN" toolbox report-progress "Starting Codex"
    # A revision (`guild-hall revise`) goes on in the thread of the attempt it revises
    # (GUILD_HALL_SESSION_ID, from that attempt's stream) while this home keeps its rollout;
    # else a new thread, the prompt saying what is on the branch and what to change.
    thread=$(printf '%s' "${GUILD_HALL_SESSION_ID:-}" | tr -cd 'A-Za-z0-9-')
    if [ -n "$thread" ] && find "$CODEX_HOME/sessions" -name "rollout-*-$thread.jsonl" 2>/dev/null | grep -q .; then
      exec codex exec resume --json --skip-git-repo-check "$@" "$thread" - < "$GUILD_HALL_PROMPT_FILE"
    fi
    input=$(first_input "$GUILD_HALL_PROMPT_FILE")
    exec codex exec --json --skip-git-repo-check "$@" - < "$input"
    ;;
  meeting)
    # A thread id is a UUID: anything else (an edited session_id) is dropped, never passed to
    # find or printed into JSON as it is.
    thread=$(printf '%s' "${GUILD_HALL_SESSION_ID:-}" | tr -cd 'A-Za-z0-9-')
    if [ -z "$thread" ]; then
      input=$(first_input "$GUILD_HALL_MESSAGE_FILE")
      exec codex exec --json --skip-git-repo-check "$@" - < "$input"
    fi
    # Codex keeps a thread as a rollout file named by its id; without one it exits 1 with only a
    # line on stderr. Said here as a failed turn, so that guild-hall renews the session.
    if ! find "$CODEX_HOME/sessions" -name "rollout-*-$thread.jsonl" 2>/dev/null | grep -q .; then
      printf '{"type":"turn.failed","error":{"message":"no rollout found for thread id %s"}}\n' "$thread"
      exit 1
    fi
    exec codex exec resume --json --skip-git-repo-check "$@" "$thread" - < "$GUILD_HALL_MESSAGE_FILE"
    ;;
  *) echo "codex.sh: unknown mode $mode (commission or meeting)" >&2; exit 2 ;;
esac
