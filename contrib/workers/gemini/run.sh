#!/bin/sh
# Runs Gemini CLI headless for one commission, confined by guild-hall's sandbox
# to its worktree, its temp dir and Gemini CLI's own state for guild-hall (worker.yaml,
# setup.sh):
# - `--approval-mode` from GEMINI_APPROVAL_MODE: `default` (this package) offers the model only
#   the tools that need no confirmation — reading, searching, listing — since there is nobody
#   to confirm; files are delivered with the toolbox's write_artifact. `yolo` (gemini-coder)
#   adds editing and the shell, which the sandbox keeps inside the worktree,
# - the toolbox over MCP and no other MCP server (`--allowed-mcp-server-names`),
# - the model pinned with `-m` (GEMINI_MODEL; `auto` would add a routing request),
# - the system prompt (posture, memory, toolbox instructions) and then the prompt, both on stdin
#   (`-p ""`: headless, the input is stdin alone): never as text on the command line, where any
#   process could read it and a long one fails at exec,
# - its stream (stream-json) as output: `guild-hall logs` shows every tool call it made,
# - a revision (`guild-hall revise`) resumed in the session of the attempt it revises,
# - what it wrote in its scratch directory (setup.sh) rather than the worktree, said on stderr.
set -eu
. "$(dirname "$0")/setup.sh"
"$GUILD_HALL_BIN" toolbox report-progress "Starting Gemini CLI"
run_gemini() { # INPUT [--resume SESSION]
  input=$1
  shift
  gemini -p "" "$@" -m "$GEMINI_MODEL" \
    --approval-mode "${GEMINI_APPROVAL_MODE:-default}" \
    --allowed-mcp-server-names guild-hall --include-directories "$GEMINI_WORKTREE" \
    --output-format stream-json <"$input"
}
rc=0
# A revision (`guild-hall revise`) goes on in the session of the attempt it revises
# (GUILD_HALL_SESSION_ID, from that attempt's stream), which holds the system prompt already;
# one Gemini CLI no longer has (it says so on stderr and exits at once) starts anew below.
session=$(printf '%s' "${GUILD_HALL_SESSION_ID:-}" | tr -cd 'A-Za-z0-9-')
if [ -n "$session" ]; then
  err="$TMPDIR/gemini.stderr"
  run_gemini "$GUILD_HALL_PROMPT_FILE" --resume "$session" 2>"$err" || rc=$?
  cat "$err" >&2
  if [ "$rc" != 0 ] && grep -q "Invalid session identifier" "$err"; then
    session=''
    rc=0
  fi
fi
if [ -z "$session" ]; then
  input="$TMPDIR/gemini-input.md"
  { cat "$GUILD_HALL_SYSTEM_PROMPT_FILE"; printf '\n\n%s\n\n' "$GEMINI_WORKTREE_NOTE"; cat "$GUILD_HALL_PROMPT_FILE"; } >"$input"
  run_gemini "$input" || rc=$?
fi
# A path the model gave relative resolved against the scratch directory, not the worktree:
# what landed there is no part of the result, and is said in the log.
strays=$(cd "$workspace" && find . -mindepth 1 -maxdepth 3 ! -path ./.gemini ! -path './.gemini/*' | head -n 20)
if [ -n "$strays" ]; then
  printf 'guild-hall: Gemini CLI wrote outside the worktree, in its scratch directory %s (a relative path?); not part of the result:\n%s\n' "$workspace" "$strays" >&2
fi
exit "$rc"
