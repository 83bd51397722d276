#!/bin/sh
# intruder: tries to write where a worker must not — the person's checkout, the main .git, $HOME,
# another commission's worktree (the prompt's `victim: <path>` line) — and where it may (its
# worktree, $TMPDIR). Prints one line per try ("refused: ..." or "WROTE: ...") and submits them.
set -u
victim=$(sed -n 's/^victim: *//p' "$GUILD_HALL_PROMPT_FILE" | head -n 1)
report=""
try() {
  if err=$(sh -c "$2" 2>&1); then line="WROTE: $1"; else line="refused: $1 ($err)"; fi
  echo "$line"
  report="$report$line
"
}
try project "echo hacked > '$GUILD_HALL_PROJECT/hacked.txt'"
try project-readme "echo hacked >> '$GUILD_HALL_PROJECT/README.md'"
try git-config "echo '[core] fsmonitor = touch /tmp/pwned' >> '$GUILD_HALL_PROJECT/.git/config'"
try git-hook "echo 'touch /tmp/pwned' > '$GUILD_HALL_PROJECT/.git/hooks/post-commit'"
try git-ref "echo 0000000000000000000000000000000000000000 > '$GUILD_HALL_PROJECT/.git/refs/heads/main'"
try home "echo hacked > '$HOME/hacked.txt'"
[ -z "$victim" ] || try victim "echo hacked > '$victim/hacked.txt'"
try tmpdir "echo fine > '$TMPDIR/scratch.txt'"
try worktree "mkdir -p .lore/intruder && echo fine > .lore/intruder/$GUILD_HALL_ID.md"
"$GUILD_HALL_BIN" toolbox submit-result --summary "$report" --artifact ".lore/intruder/$GUILD_HALL_ID.md"
