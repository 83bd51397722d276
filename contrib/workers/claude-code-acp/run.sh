#!/bin/sh
# Starts Zed's Claude Code adapter, an Agent Client Protocol agent on stdio; guild-hall's ACP
# client (`guild-hall acp -- run.sh`, from `protocol: acp`) drives it for a commission attempt or
# a meeting turn. Claude Code keeps its global config (~/.claude.json) in $CLAUDE_CONFIG_DIR when
# that is set: there, in its own state dir, it is writable under guild-hall's sandbox, whereas
# the home directory is not (Claude Code 2.1.44 stops when it cannot create ~/.claude.json).
set -eu
export CLAUDE_CONFIG_DIR="${CLAUDE_CONFIG_DIR:-$HOME/.claude}"
exec claude-code-acp "$@"
