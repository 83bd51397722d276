#!/usr/bin/env bash
# The meetings demo: a throwaway git project with the scripted `counsel` meeting worker. A
# meeting is started, two turns stream (the second resumes the first's session), the worker
# writes and links an artifact and records a decision, the meeting is closed: notes are
# written into it and its work is squash-merged into claude/main.
# Everything lives in a temp dir (printed at the end); your own repositories are not touched.
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

# Cargo's own progress is shown: the first build compiles every dependency (about 5 minutes
# on a small 2-core machine), later ones take seconds.
step "Building guild-hall (release; the first build takes a few minutes, later ones seconds)"
cargo build --release --manifest-path "$repo_root/Cargo.toml"
gh="$repo_root/target/release/guild-hall"

demo=$(mktemp -d "${TMPDIR:-/tmp}/guild-hall-meeting-demo.XXXXXX")
project="$demo/project"
export GUILD_HALL_HOME="$demo/home"
mkdir -p "$project"
cd "$project"

step "A fresh git project in $project, with the counsel worker"
git init -q -b main
git config user.name "Demo Person"
git config user.email "demo@example.com"
echo "# Demo project" > README.md
git add README.md
git commit -q -m "Initial commit"
"$gh" init
cp -r "$repo_root/examples/workers/counsel" .lore/workers/counsel
git add .lore
git commit -q -m "Add the counsel worker"

step "guild-hall meeting start: the first turn streams"
"$gh" meeting start --worker counsel --id design-review --title "Design review" \
  --agenda "Decide how the storage layer recovers from a crash" \
  $'Let us review the recovery design.\nlink: .lore/design/recovery.md\nsummary: we agreed to start from crash-only'

step "guild-hall meeting send: the second turn resumes the session"
"$gh" meeting send design-review $'What do we decide?\ndecide: crash-only, no journal'

step "guild-hall meeting show"
"$gh" meeting show design-review

step "guild-hall meeting close: notes, then the squash merge"
"$gh" meeting close design-review

step "The integration branch claude/main"
git log --oneline claude/main
git show --stat --format='%n%s%n%n%b' claude/main | head -n 30

step "Done"
echo "The demo lives in $demo (project, and its GUILD_HALL_HOME)."
echo "Talk yourself: cd $project && GUILD_HALL_HOME=$GUILD_HALL_HOME $gh meeting start --worker counsel \"hello\""
echo "Remove it with: rm -rf $demo"
