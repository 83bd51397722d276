#!/usr/bin/env bash
# The plans demo: a throwaway git project with the scripted `mason` wave worker and a plan of
# two waves (two tasks in parallel, then one), with a verify command between waves. One
# `reconcile --once --wait` runs it: each wave's tasks in their own worktrees, copied back in
# plan order onto claude/main (one commit per task), verified, then the next wave.
# Everything lives in a temp dir (printed at the end); your own repositories are not touched.
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

# Cargo's own progress is shown: the first build compiles every dependency (about 5 minutes
# on a small 2-core machine), later ones take seconds.
step "Building guild-hall (release; the first build takes a few minutes, later ones seconds)"
cargo build --release --manifest-path "$repo_root/Cargo.toml"
gh="$repo_root/target/release/guild-hall"

demo=$(mktemp -d "${TMPDIR:-/tmp}/guild-hall-plan-demo.XXXXXX")
project="$demo/project"
export GUILD_HALL_HOME="$demo/home"
mkdir -p "$project"
cd "$project"

step "A fresh git project in $project, with the mason worker"
git init -q -b main
git config user.name "Demo Person"
git config user.email "demo@example.com"
mkdir -p src
echo "# Demo project" > README.md
echo "legacy" > src/legacy.txt
git add -A
git commit -q -m "Initial commit"
"$gh" init
cp -r "$repo_root/examples/workers/mason" .lore/workers/mason
git add .lore
git commit -q -m "Add the mason worker"

step "A plan: two waves, parallelism 2, verify between waves"
cat > "$demo/waves.yaml" <<'YAML'
- - {id: storage, worker: mason, title: Storage layer, prompt: "write: src/storage.rs pub fn store() {}\nmv: src/legacy.txt src/legacy-storage.txt"}
  - {id: tools, worker: mason, title: A tool, prompt: "write: bin/tool.sh echo tool\nexec: bin/tool.sh"}
- - {id: wire, worker: mason, title: Wire it up, prompt: "append: src/storage.rs pub fn wire() {}"}
YAML
"$gh" plan create --title "Port the storage layer" --id port --parallelism 2 \
  --verify "test -f src/storage.rs" "$demo/waves.yaml"
cat .lore/plans/port.md

step "guild-hall reconcile --once --wait"
"$gh" reconcile --once --wait --timeout 120s

step "guild-hall plan show port"
"$gh" plan show port

step "The integration branch claude/main: one commit per task, in plan order"
git log --format='%h %s%n    %(trailers:key=Guild-Hall-Task,valueonly,separator=)' claude/main
git ls-tree -r --name-only claude/main

step "Done"
echo "The demo lives in $demo (project, and its GUILD_HALL_HOME). Remove it with: rm -rf $demo"
