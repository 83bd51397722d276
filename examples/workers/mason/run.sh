#!/bin/sh
# mason: a scripted wave worker. Each line of its prompt is one act on its worktree:
#   write: PATH TEXT     write TEXT (and a newline) to PATH, directories made
#   append: PATH TEXT    append a line
#   rm: PATH             delete
#   mv: FROM TO          rename (git mv when FROM is tracked)
#   exec: PATH           make PATH executable
#   ln: TARGET LINK      a symlink
#   binary: PATH         a small binary file (bytes 0..255)
#   sleep: SECONDS       wait (a slow task)
#   chat: SECONDS        print a line every 0.2 s for SECONDS (busy, but for how long?)
#   first-sleep: SECONDS wait, in the first attempt only (a task that hangs until rerun)
#   fail                 report failed and exit 1
#   commit               commit in the worktree (a protocol violation)
#   control              write into the control plane (a protocol violation)
# It leaves evidence under .lore-artifacts/<task>/ and reports in_progress, then done, with
# task_update (the contract's TaskUpdate), each with a rising sequence.
set -eu
prompt=$(cat "$GUILD_HALL_PROMPT_FILE")
slug=$(printf '%s' "$GUILD_HALL_TASK_ID" | tr ':' '-')
update() { # status
  "$GUILD_HALL_BIN" toolbox task-update --status "$1" --sequence "$2" --idempotency-key "$GUILD_HALL_TASK_ID:$1:$GUILD_HALL_ATTEMPT" >/dev/null
}
update in_progress 1
printf '%s\n' "$prompt" | while IFS= read -r line; do
  arg=${line#*: }
  case "$line" in
    write:*) p=${arg%% *}; t=${arg#* }; mkdir -p "$(dirname "$p")"; printf '%s\n' "$t" > "$p" ;;
    append:*) p=${arg%% *}; t=${arg#* }; printf '%s\n' "$t" >> "$p" ;;
    rm:*) rm -f "$arg" ;;
    mv:*) a=${arg%% *}; b=${arg#* }; mkdir -p "$(dirname "$b")"; git mv "$a" "$b" 2>/dev/null || mv "$a" "$b" ;;
    exec:*) chmod +x "$arg" ;;
    ln:*) a=${arg%% *}; b=${arg#* }; ln -sfn "$a" "$b" ;;
    binary:*) mkdir -p "$(dirname "$arg")"; i=0; while [ $i -lt 256 ]; do printf "\\$(printf '%03o' $i)"; i=$((i+1)); done > "$arg" ;;
    sleep:*) sleep "$arg" ;;
    first-sleep:*) if [ "$GUILD_HALL_ATTEMPT" = 1 ]; then sleep "$arg"; fi ;;
    chat:*) i=0; while [ $i -lt $((arg * 5)) ]; do echo "mason: still at it ($i)"; sleep 0.2; i=$((i+1)); done ;;
    fail) "$GUILD_HALL_BIN" toolbox task-update --status failed --sequence 2 --idempotency-key "$GUILD_HALL_TASK_ID:failed:$GUILD_HALL_ATTEMPT" >/dev/null; echo "mason: told to fail" >&2; exit 1 ;;
    commit) git -c user.name=m -c user.email=m@x commit -q --allow-empty -m "a worker commit" ;;
    control) mkdir -p .lore/commissions; echo "---" > .lore/commissions/sneaky.md ;;
  esac
done
mkdir -p ".lore-artifacts/$slug"
echo "mason did: $(printf '%s' "$prompt" | tr '\n' ';')" > ".lore-artifacts/$slug/evidence.txt"
update done 3
echo "mason: done with $GUILD_HALL_TASK_ID"
