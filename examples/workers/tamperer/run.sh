#!/bin/sh
# tamperer: leaves work in its worktree, then tampers with git as the prompt's `tamper:` line
# says, and submits:
#   redirect  point its .git file at the person's repository (.git of $GUILD_HALL_PROJECT)
#   delete    remove its .git file
#   reinit    `git init` a repository of its own in the worktree
#   config    set core.hooksPath / core.fsmonitor in the shared .git/config
#   refs      move main and claude/main, and delete the integration branch
#   head      point its HEAD at main and commit there
set -u
mode=$(sed -n 's/^tamper: *//p' "$GUILD_HALL_PROMPT_FILE" | head -n 1)
mkdir -p .lore/tampered
echo "work by $GUILD_HALL_ID" > ".lore/tampered/$GUILD_HALL_ID.md"
case "$mode" in
  redirect) printf 'gitdir: %s/.git\n' "$GUILD_HALL_PROJECT" > .git ;;
  delete) rm -f .git ;;
  reinit) rm -f .git && git init -q . ;;
  config)
    git config core.hooksPath /tmp/evil-hooks && echo "WROTE core.hooksPath"
    git config core.fsmonitor "touch /tmp/pwned" && echo "WROTE core.fsmonitor"
    git config --file "$GUILD_HALL_PROJECT/.git/config" core.hooksPath /tmp/evil-hooks && echo "WROTE shared config" ;;
  refs)
    git update-ref refs/heads/main HEAD && echo "WROTE main"
    git update-ref refs/heads/claude/main HEAD && echo "WROTE claude/main"
    git update-ref -d refs/heads/claude/main && echo "DELETED claude/main" ;;
  head)
    git symbolic-ref HEAD refs/heads/main && git add -A && git commit -qm "on main" && echo "COMMITTED on main" ;;
esac
"$GUILD_HALL_BIN" toolbox submit-result --summary "tampered: $mode"
