#!/bin/sh
# One meeting turn with Gemini CLI, headless: the person's message is the prompt,
# the session guild-hall keeps is resumed with `--resume` (empty on the first turn: Gemini CLI
# then starts one, and guild-hall stores its id from the stream's `init`), and the output is
# Gemini CLI's own stream (`stream-json`), which guild-hall translates into meeting events.
# The message goes on stdin (`-p ""`: headless, the input is stdin alone), never on the command
# line; in a new session the system prompt before it (a resumed one holds it already).
# Gemini CLI tells of a session it does not have on stderr alone (exit 42): that is said once
# more on stdout, as the stream's own error, so that guild-hall renews the session.
set -eu
. "$(dirname "$0")/setup.sh"
if [ -n "${GUILD_HALL_SESSION_ID:-}" ]; then
  set -- --resume "$GUILD_HALL_SESSION_ID"
  input="$GUILD_HALL_MESSAGE_FILE"
else
  set --
  input="$TMPDIR/gemini-input.md"
  { cat "$GUILD_HALL_SYSTEM_PROMPT_FILE"; printf '\n\n%s\n\n' "$GEMINI_WORKTREE_NOTE"; cat "$GUILD_HALL_MESSAGE_FILE"; } >"$input"
fi
err="$TMPDIR/gemini.stderr"
rc=0
gemini -p "" "$@" -m "$GEMINI_MODEL" \
  --approval-mode "${GEMINI_APPROVAL_MODE:-default}" \
  --allowed-mcp-server-names guild-hall --include-directories "$GEMINI_WORKTREE" \
  --output-format stream-json <"$input" 2>"$err" || rc=$?
cat "$err" >&2
if [ "$rc" != 0 ] && grep -q "Invalid session identifier" "$err"; then
  id=$(printf '%s' "${GUILD_HALL_SESSION_ID:-}" | tr -cd 'A-Za-z0-9-')
  printf '{"type":"result","status":"error","error":{"type":"session","message":"Invalid session identifier %s: Gemini CLI has no such session"}}\n' "$id"
fi
exit "$rc"
