#!/usr/bin/env bash
# The guild-hall demo: a throwaway git project with the `scribe` worker and two commissions,
# the second depending on the first's output. One `reconcile --once --wait` shows
# dispatch -> progress -> merge -> unblock -> merge; then `status` and both timelines.
# Everything lives in a temp dir (printed at the end); your own repositories are not touched.
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

# Cargo's own progress is shown: the first build compiles every dependency (about 5 minutes
# on a small 2-core machine), later ones take seconds.
step "Building guild-hall (release; the first build takes a few minutes, later ones seconds)"
cargo build --release --manifest-path "$repo_root/Cargo.toml"
gh="$repo_root/target/release/guild-hall"

demo=$(mktemp -d "${TMPDIR:-/tmp}/guild-hall-demo.XXXXXX")
project="$demo/project"
export GUILD_HALL_HOME="$demo/home"
mkdir -p "$project"
cd "$project"

step "A fresh git project in $project"
git init -q -b main
git config user.name "Demo Person"
git config user.email "demo@example.com"
echo "# Demo project" > README.md
git add README.md
git commit -q -m "Initial commit"

step "guild-hall init"
"$gh" init
cp -r "$repo_root/examples/workers/scribe" .lore/workers/scribe
git add .lore
git commit -q -m "Add the scribe worker"
"$gh" workers

step "Two commissions: the second needs the first's notes"
first=$("$gh" commission create --worker scribe --title "Research notes" \
  --prompt $'output: .lore/research/notes.md\nGather notes on crash-only software. Verify: the file exists and names its sources.')
second=$("$gh" commission create --worker scribe --title "Summary" --depends .lore/research/notes.md \
  --prompt $'output: .lore/reports/summary.md\nSummarise .lore/research/notes.md in five bullet points.')
echo "created: $first, $second"
cat ".lore/commissions/$second.md"

step "guild-hall reconcile --once --wait"
"$gh" reconcile --once --wait --timeout 120s

step "guild-hall status"
"$gh" status

step "guild-hall timeline $first"
"$gh" timeline "$first"

step "guild-hall timeline $second"
"$gh" timeline "$second"

step "The integration branch claude/main"
git log --oneline --graph claude/main
git show --stat --format='%n%s%n%n%b' claude/main | head -n 20

step "guild-hall land: claude/main's work into main"
"$gh" land
git log --oneline -n 3 main
ls .lore/research .lore/reports

step "Done"
echo "The demo lives in $demo (project, and its GUILD_HALL_HOME)."
echo "Look around, e.g.: cd $project && GUILD_HALL_HOME=$GUILD_HALL_HOME $gh status"
echo "Remove it with: rm -rf $demo"
