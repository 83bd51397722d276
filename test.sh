#!/usr/bin/env bash
# The README's test command: installs every prerequisite the tests need (tmux, Slurm and munge,
# iproute2, python3-venv with the Python MCP SDK, chromium, the pinned agent CLIs and
# playwright-core from npm), then checks
# formatting and lints and runs the whole suite. `.ci/run` calls exactly this.
#
#   ./test.sh                      # everything
#   ./test.sh -- --skip slurm      # the suite without a part whose prerequisite cannot be
#                                  # installed here (arguments go to `cargo test`)
#   GUILD_HALL_TEST_NO_INSTALL=1 ./test.sh   # install nothing; a test whose tool is missing
#                                            # fails with one line naming it
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"

# Debian's packages need root: as root directly, else through sudo when there is one.
apt_install() {
  local run=()
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then run=(sudo); else
      echo "test.sh: installing $* needs root (or sudo); install them, or skip their tests (./test.sh -- --skip NAME)" >&2
      return 1
    fi
  fi
  "${run[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${run[@]}" apt-get install -y -qq "$@" >/dev/null
}

if [ -z "${GUILD_HALL_TEST_NO_INSTALL:-}" ]; then
  # The terminal tests (`meeting chat`, `board`) drive the real binary in tmux (send-keys,
  # capture-pane); CI runs as root on a clean machine.
  if ! command -v tmux >/dev/null 2>&1; then
    apt_install tmux
  fi
  # The endpoint tests read it with curl as an HTTP client.
  if ! command -v curl >/dev/null 2>&1; then
    apt_install curl
  fi
  # The web tests drive Debian's chromium, headless (tests/it/web/browser.rs).
  if ! command -v chromium >/dev/null 2>&1; then
    apt_install chromium
  fi
  # The MCP test drives `guild-hall mcp` with the official Python MCP SDK (from PyPI); a
  # Debian python3 makes venvs only with python3-venv.
  if ! target/py-mcp/bin/python -c 'import mcp' 2>/dev/null; then
    rm -rf target/py-mcp
    python3 -m venv target/py-mcp 2>/dev/null || { apt_install python3-venv && rm -rf target/py-mcp && python3 -m venv target/py-mcp; }
    target/py-mcp/bin/pip install --quiet mcp
  fi
  # The agent CLIs come from the npm registry.
  if ! command -v npm >/dev/null 2>&1; then
    apt_install nodejs npm
  fi
  # The Claude Code tests run the real Claude Code CLI (from the npm registry), confined, against
  # a local stand-in for the model API.
  if ! target/claude-code/node_modules/.bin/claude --version >/dev/null 2>&1; then
    npm install --no-audit --no-fund --prefix target/claude-code @anthropic-ai/claude-code@2 >/dev/null
  fi
  # The Codex tests run the real Codex CLI (from the npm registry), confined, against a local
  # stand-in for the OpenAI Responses API.
  if ! target/codex/node_modules/.bin/codex --version 2>/dev/null | grep -qx "codex-cli 0.169.0"; then
    npm install --no-audit --no-fund --prefix target/codex @openai/codex@0.169.0 >/dev/null
  fi
  # The Gemini CLI tests likewise run the real Gemini CLI, pinned, against a Gemini API stand-in.
  if ! target/gemini/node_modules/.bin/gemini --version 2>/dev/null | grep -qx 0.61.0; then
    npm install --no-audit --no-fund --prefix target/gemini @google/gemini-cli@0.61.0 >/dev/null
  fi
  # The ACP tests run Zed's Claude Code adapter (pinned: tests/it/worker/acp_claude_code.rs) under guild-hall's ACP
  # client, confined, against the same stand-in.
  if ! grep -qs '"version": "0.16.2"' target/claude-code-acp/node_modules/@zed-industries/claude-code-acp/package.json; then
    npm install --no-audit --no-fund --prefix target/claude-code-acp @zed-industries/claude-code-acp@0.16.2 >/dev/null
  fi
  # ... and Zed's Codex adapter (pinned: tests/it/worker/acp_codex_gemini.rs) against the Responses API stand-in;
  # `gemini --acp` is the Gemini CLI above.
  if ! grep -qs '"version": "0.16.0"' target/codex-acp/node_modules/@zed-industries/codex-acp/package.json; then
    npm install --no-audit --no-fund --prefix target/codex-acp @zed-industries/codex-acp@0.16.0 >/dev/null
  fi
  # ... through playwright-core (pinned: tests/it/web/browser.rs; never `playwright install`,
  # which downloads a browser of its own).
  if ! grep -qs '"version": "1.65.1"' target/playwright/node_modules/playwright-core/package.json; then
    npm install --no-audit --no-fund --prefix target/playwright playwright-core@1.65.1 >/dev/null
  fi
  # The Slurm tests start a one-node cluster of their own (munged, slurmctld, slurmd as plain
  # processes, in a private network namespace made with iproute2): Debian's Slurm packages.
  if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v sbatch >/dev/null \
    || ! command -v munged >/dev/null || ! command -v ip >/dev/null; then
    apt_install slurmctld slurmd slurm-client munge iproute2
  fi
fi

cargo fmt --all -- --check
cargo clippy --locked --all-targets -- -D warnings
cargo test --locked "$@"
