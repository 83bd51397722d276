#!/bin/sh
# counsel: a scripted meeting worker. One run is one turn: it reads the person's message from
# $GUILD_HALL_MESSAGE_FILE and prints guild-hall meeting events as JSON lines on stdout.
#
# Sessions live in its own store ($GUILD_HALL_MEMORY/sessions/, its package memory dir: a stand-in for an
# agent's session files): a turn with $GUILD_HALL_SESSION_ID resumes that session, and one
# whose session is gone answers as an expired session does (delete the file to expire it).
#
# Lines of the message it acts on:
#   link: PATH       write PATH if missing and under .lore/ (all its sparse checkout holds:
#                    a file outside it is not missing, only unseen, and is never written),
#                    then toolbox link-artifact PATH
#   summary: TEXT    toolbox summarize-progress TEXT
#   followup: TEXT   toolbox propose-followup --reason TEXT
#   decide: TEXT     toolbox record-decision
#   slow             stream a long answer, slowly (to interrupt it)
#   pause: N         say nothing for N seconds, then go on (a long quiet stretch of a turn)
#   fail             report an error and end the turn unfinished
#   fail-with: TEXT  the same, with TEXT as the error's reason (a JSON string's content:
#                    `\n` is a newline in it)
#   links: N         append N link events to its mailbox itself, without the toolbox (a flood)
#   raw: LINE        append LINE to its mailbox as it is, without the toolbox
#   usage: IN OUT USD  report what the turn used, as guild-hall's `usage` line (an agent's
#                    report: input and output tokens, dollars)
set -eu
msg=$(cat "$GUILD_HALL_MESSAGE_FILE")
store="$GUILD_HALL_MEMORY/sessions"
mkdir -p "$store"

json() { # a JSON string of $1
  printf '%s' "$1" | awk 'BEGIN { ORS = "" } { gsub(/\\/, "\\\\"); gsub(/"/, "\\\""); gsub(/\t/, "\\t"); if (NR > 1) print "\\n"; print }' | sed 's/^/"/; s/$/"/'
}
say() { printf '{"type":"text_delta","text":%s}\n' "$(json "$1")"; }
tool() { # name, input json, then runs the rest
  name=$1; input=$2; shift 2
  printf '{"type":"tool_use","name":"%s","input":%s}\n' "$name" "$input"
  out=$("$@" 2>&1) || out="refused: $out"
  printf '{"type":"tool_result","name":"%s","summary":%s}\n' "$name" "$(json "$out")"
}

session=${GUILD_HALL_SESSION_ID:-}
if [ -n "$session" ]; then
  if [ ! -f "$store/$session" ]; then
    printf '{"type":"error","reason":"No conversation found with session ID: %s"}\n' "$session"
    exit 1
  fi
else
  session="counsel-$(cat /proc/sys/kernel/random/uuid)"
  : > "$store/$session"
fi
printf '{"type":"session","id":"%s"}\n' "$session"
echo turn >> "$store/$session"
n=$(wc -l < "$store/$session" | tr -d ' ')
echo "counsel: turn $n of session $session" >&2

if grep -q '^## The conversation so far' "$GUILD_HALL_SYSTEM_PROMPT_FILE"; then
  say "(A new session: I have the transcript of our earlier conversation.) "
fi
first=$(printf '%s\n' "$msg" | head -n 1)
say "You said: $first. "
sleep 0.05
say "This is turn $n of our session."

if printf '%s\n' "$msg" | grep -qx fail; then
  printf '{"type":"error","reason":"counsel was told to fail"}\n'
  exit 2
fi
fail_with=$(printf '%s\n' "$msg" | sed -n 's/^fail-with: //p' | head -n 1)
if [ -n "$fail_with" ]; then
  printf '{"type":"error","reason":"%s"}\n' "$fail_with"
  exit 2
fi
printf '%s\n' "$msg" | while IFS= read -r line; do
  case "$line" in
    link:*)
      path=$(printf '%s' "${line#link:}" | sed 's/^ *//')
      case "$path" in
        *..*) inside=no ;;
        .lore/*) inside=yes ;;
        *) inside=no ;;
      esac
      if [ "$inside" = no ]; then
        say " ($path is outside .lore/, which is all my checkout holds: linked as it is, not written)"
      elif [ ! -f "$path" ]; then
        mkdir -p "$(dirname "$path")"
        printf '# %s\n\nWritten in meeting %s.\n' "$path" "$GUILD_HALL_MEETING" > "$path"
      fi
      tool link_artifact "{\"path\":$(json "$path")}" "$GUILD_HALL_BIN" toolbox link-artifact "$path"
      ;;
    summary:*)
      text=$(printf '%s' "${line#summary:}" | sed 's/^ *//')
      tool summarize_progress "{\"text\":$(json "$text")}" "$GUILD_HALL_BIN" toolbox summarize-progress "$text"
      ;;
    followup:*)
      text=$(printf '%s' "${line#followup:}" | sed 's/^ *//')
      tool propose_followup "{\"reason\":$(json "$text")}" "$GUILD_HALL_BIN" toolbox propose-followup --reason "$text"
      ;;
    decide:*)
      text=$(printf '%s' "${line#decide:}" | sed 's/^ *//')
      tool record_decision "{\"decision\":$(json "$text")}" "$GUILD_HALL_BIN" toolbox record-decision --question "What did we settle?" --decision "$text" --reasoning "agreed in the meeting"
      ;;
    links:*)
      n=$(printf '%s' "${line#links:}" | sed 's/^ *//')
      ts=$(date -u +%Y-%m-%dT%H:%M:%S.000Z)
      awk -v n="$n" -v ts="$ts" 'BEGIN { for (i = 1; i <= n; i++) printf "{\"seq\":%d,\"id\":\"flood-%d\",\"ts\":\"%s\",\"attempt\":1,\"kind\":\"link\",\"path\":\".lore/flood/artifact-%05d.md\"}\n", 100000 + i, i, ts, i }' >> "$GUILD_HALL_MAILBOX"
      say " (linked $n artifacts)"
      ;;
    raw:*)
      printf '%s\n' "${line#raw: }" >> "$GUILD_HALL_MAILBOX"
      ;;
    usage:*)
      set -- ${line#usage:}
      printf '{"type":"usage","input_tokens":%s,"output_tokens":%s,"usd":%s}\n' "$1" "$2" "$3"
      ;;
    pause:*)
      sleep "$(printf '%s' "${line#pause:}" | sed 's/^ *//')"
      say "after the pause"
      ;;
    slow)
      i=0
      while [ $i -lt 300 ]; do say " word$i"; i=$((i + 1)); sleep 0.1; done
      ;;
  esac
done
printf '{"type":"turn_end"}\n'
