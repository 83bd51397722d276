#!/bin/sh
# Starts Zed's Claude Code adapter, an Agent Client Protocol agent on stdio; guild-hall's ACP
# client (`guild-hall acp -- run.sh`, from `protocol: acp`) drives it for a commission attempt or
# a meeting turn. Claude Code's home is this package's own, ~/.claude/guild-hall-<package>
# (CLAUDE_CONFIG_DIR; worker.yaml's sandbox.write): never the person's ~/.claude (settings.json
# hooks, login), never another package's, so a coder cannot plant hooks that another package or
# the person's own `claude` would run. Claude Code keeps its global config (.claude.json) there
# too, writable under guild-hall's sandbox, whereas the home directory is not (Claude Code
# 2.1.44 stops when it cannot create ~/.claude.json). It persists: a meeting's session loads.
set -eu
export CLAUDE_CONFIG_DIR="$HOME/.claude/guild-hall-$GUILD_HALL_WORKER"
exec claude-code-acp "$@"
