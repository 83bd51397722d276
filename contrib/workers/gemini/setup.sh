# Sourced by run.sh and meet.sh: Gemini CLI's own home for guild-hall's workers, and its
# settings. GEMINI_CLI_HOME moves the whole of Gemini CLI's state (settings, sessions, history)
# to ~/.gemini/guild-hall-<package>/.gemini, the one place worker.yaml's sandbox.write lets it
# write: the person's own ~/.gemini (settings, login, sessions) is neither read nor changed,
# another package's home neither (a coder's shell cannot plant a GEMINI.md, an extension or a
# chat file that the read-only package's meetings would then read), and a meeting's sessions
# outlive each turn's private $TMPDIR, so `--resume` finds them.
# The settings are the same for every worker of the package (the toolbox's command is expanded from
# $GUILD_HALL_BIN by Gemini CLI itself), written whole and renamed into place, so that
# workers starting at once never see half a file:
# - an API key (GEMINI_API_KEY, endpoint GOOGLE_GEMINI_BASE_URL, both from pass_env),
# - one attempt per model request (guild-hall's own attempts are the retries),
# - the toolbox as a trusted MCP server (headless Gemini CLI runs no untrusted tool),
# - the repository's GEMINI.md still read (from the included worktree, see below).
# Gemini CLI runs in a directory of its own, not in the worktree: a trusted workspace's
# `.gemini/` (settings whose tools.allowed run the shell unasked, MCP servers, hooks,
# policies, commands, `.env`) is repository content, and Gemini CLI loads it from its cwd. The
# worktree is given with `--include-directories` ($GEMINI_WORKTREE) and named to the model
# ($GEMINI_WORKTREE_NOTE). The directory is emptied at every start (a coder's shell could plant
# a `.gemini/` in it; the only one there is guild-hall's, below) and named after the worktree, so that a meeting's turns share it and
# `--resume` finds the session (Gemini CLI files sessions by its cwd).
GEMINI_WORKTREE=$PWD
export GEMINI_CLI_HOME="$HOME/.gemini/guild-hall-$GUILD_HALL_WORKER"
mkdir -p "$GEMINI_CLI_HOME/.gemini"
settings="$GEMINI_CLI_HOME/.gemini/settings.json"
cat > "$settings.$$" <<'JSON'
{
  "security": {"auth": {"selectedType": "gemini-api-key"}},
  "privacy": {"usageStatisticsEnabled": false},
  "telemetry": {"enabled": false},
  "general": {"disableAutoUpdate": true, "disableUpdateNag": true, "maxAttempts": 1},
  "context": {"loadMemoryFromIncludeDirectories": true},
  "mcpServers": {"guild-hall": {"command": "$GUILD_HALL_BIN", "args": ["mcp"], "trust": true, "timeout": 86400000}}
}
JSON
mv "$settings.$$" "$settings"
workspace="$GEMINI_CLI_HOME/workspaces/$(printf '%s' "$GEMINI_WORKTREE" | sha256sum | cut -c1-32)"
rm -rf "$workspace"
mkdir -p "$workspace/.gemini"
cd "$workspace"
# The bound on the model's turns (GUILD_HALL_MAX_TURNS, the commission's or package's
# resources): Gemini CLI's model.maxSessionTurns, as this directory's own workspace setting, so
# that workers of the package starting at once each keep theirs.
turns=$(printf '%s' "${GUILD_HALL_MAX_TURNS:-}" | tr -cd '0-9')
printf '{"model": {"maxSessionTurns": %s}}\n' "${turns:--1}" > "$workspace/.gemini/settings.json"
GEMINI_WORKTREE_NOTE="The repository you work on is $GEMINI_WORKTREE (your current directory is a scratch directory, not the repository): give every file tool an absolute path under $GEMINI_WORKTREE, and run shell commands there (dir_path $GEMINI_WORKTREE)."
