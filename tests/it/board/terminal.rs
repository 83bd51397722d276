//! `guild-hall board` in a real terminal (tmux: send-keys, capture-pane) on a real project with
//! scripted workers: what other processes write shows up, and each key acts through the same
//! operations as the CLI (the artifacts say so). Each scenario runs in a private pid namespace
//! (the reconciler signals workers; the tmux server dies with it), waits for what the screen
//! shows with a deadline, and never asserts a duration.

use crate::common::{in_pid_namespace, section, Project};

/// Shell helpers for driving the board in tmux, on a socket of the scenario's own (a fresh one
/// for each board: see `board`).
const TMUX: &str = r#"
servers=0
sock="$PWD/../tmux.$servers.sock"
tm() { tmux -S "$sock" "$@"; }
screen() { tm capture-pane -p -t b; }
fail_with_screen() { echo "$1" >&2; echo "--- screen:" >&2; screen >&2; exit 1; }
see() { # see TEXT: wait up to 60 s for TEXT on screen
  for i in $(seq 600); do if screen | grep -qF -- "$1"; then [ $i -lt 30 ] || echo "slow ($i): see $1" >> ../slow.log; return 0; fi; sleep 0.1; done
  fail_with_screen "the screen never showed: $1"
}
unsee() { # unsee TEXT: wait up to 60 s for TEXT to be gone from the screen
  for i in $(seq 600); do if ! screen | grep -qF -- "$1"; then [ $i -lt 30 ] || echo "slow ($i): unsee $1" >> ../slow.log; return 0; fi; sleep 0.1; done
  fail_with_screen "the screen kept showing: $1"
}
row_has() { # row_has ID TEXT: wait up to 60 s for ID's row to show TEXT
  for i in $(seq 600); do if screen | grep -F -- " $1 " | grep -qF -- "$2"; then [ $i -lt 30 ] || echo "slow ($i): row $1 $2" >> ../slow.log; return 0; fi; sleep 0.1; done
  fail_with_screen "the row of $1 never showed: $2"
}
file_has() { # file_has FILE TEXT: wait up to 60 s
  for i in $(seq 600); do if grep -qF -- "$2" "$1" 2>/dev/null; then [ $i -lt 30 ] || echo "slow ($i): file $1 $2" >> ../slow.log; return 0; fi; sleep 0.1; done
  echo "$1 never said: $2" >&2; cat "$1" >&2; fail_with_screen "(the board)"
}
board() { # board [ENV=VALUE...]: a fresh board in a 100x30 pane, on a fresh server
  # kill-server returns before the server has gone, and a dying server still accepts a
  # connection only to close it: a `new-session` on the same socket then fails with "server
  # exited unexpectedly" (and a failed `tm ls` does not mean it is gone: it fails the same way).
  # The next server gets a socket of its own; the old one ends by itself.
  tm kill-server 2>/dev/null || true
  servers=$((servers + 1))
  sock="$PWD/../tmux.$servers.sock"
  # The board's pid is written by the shell it then becomes, for the signal test; the pane
  # outlives the board and says how it ended.
  # (A Ctrl-C typed in the pane is not this shell's end, as in a person's interactive shell.)
  printf '%s\n' 'trap : INT' 'sh -c '"'"'echo $$ > ../board.pid; exec "$GH" board $BOARD_ARGS'"'"'' 'echo "[board exited: $?]"' 'exec sleep 3600' > ../board.sh
  tm -f /dev/null new-session -d -x 100 -y 30 -s b "env $* sh ../board.sh"
  tm set-option -t b remain-on-exit on
}
filter() { tm send-keys -t b / C-u "$1" Enter; row_has "$1" "$1"; }
"#;

pub(crate) fn scenario(p: &Project, body: &str) -> String {
    in_pid_namespace(p, &format!("{TMUX}\ntrap 'tm kill-server 2>/dev/null || true' EXIT\n{body}"))
}

/// Against a running `watch`: the board only observes and writes intent. A commission another
/// process writes appears and moves through its states; `c` + `y` cancels it; a failed one is
/// re-dispatched with `r`; a plan's task cells change as its tasks finish; a meeting request
/// is accepted with `a` (the chat runs in the terminal, Ctrl-D comes back to the board).
#[test]
fn the_board_follows_the_files_and_acts_through_the_operations() {
    let p = Project::new(&["sleeper", "silent", "mason", "counsel"]);
    let out = scenario(
        &p,
        r##"
"$GH" watch --log-format json 2>"$PWD/../watch.log" &
watch=$!
wait_for "the watch to hold the project" sh -c 'grep -qs "guild-hall watch" "$STATE"/*/lock'
board TERM=xterm-256color
see "reconciled by guild-hall watch"

# Written by another process: it appears and runs.
printf -- '---\ntitle: Nap\nworker: sleeper\n---\nsleep: 60\n' > .lore/commissions/nap.md
row_has nap in_progress
row_has nap "Sleeping 60s"
filter nap
tm send-keys -t b c
see "cancel commission nap? y/n"
tm send-keys -t b y
row_has nap cancelled
file_has .lore/commissions/nap.md "status: cancelled"
echo "--- cancelled"; grep -E '^(status|desired|reason):' .lore/commissions/nap.md

# A failed one, re-dispatched with r: a second attempt.
printf -- '---\ntitle: Mute\nworker: silent\n---\nwork\n' > .lore/commissions/mute.md
tm send-keys -t b / C-u Enter
row_has mute failed
filter mute
tm send-keys -t b r
file_has .lore/commissions/mute.md "attempt: 2"
row_has mute "#2"
echo "--- redispatched"; grep -c '"kind":"redispatch"' .lore/commissions/mute.timeline.jsonl

# A plan: its wave cells change as its tasks finish.
mkdir -p .lore/plans
printf -- '---\ntitle: Port\nparallelism: 2\nwaves:\n  - - {id: one, worker: mason, prompt: "sleep: 3\\nwrite: src/one.txt one"}\n    - {id: two, worker: mason, prompt: "sleep: 3\\nwrite: src/two.txt two"}\n  - - {id: three, worker: mason, prompt: "write: src/three.txt three"}\n---\n' > .lore/plans/port.md
filter port
see "▸one"
see "·three"
see "✓one"
see "✓three"
row_has port completed
# Settled, it is at no wave any more: no current-wave marker.
unsee "▸ w"
echo "--- plan colours"; tm capture-pane -e -p -t b | grep -cP '\x1b\[([0-9]+;)*(32|38;5;2)m✓three' || true

# A meeting request, accepted with a: `meeting accept`, then `meeting chat`, in the terminal.
printf -- '---\nworker: counsel\nstatus: requested\nrequested_by: scribe\nagenda: the survey needs a decision\n---\n' > .lore/meetings/ask.md
tm send-keys -t b / C-u Enter
row_has ask "asked by scribe"
filter ask
tm send-keys -t b a
see "you>"
tm send-keys -t b "hello from the board" Enter
see "You said: hello from the board"
# Ctrl-C is the chat's (a fresh prompt), not the board's: it is still there after.
tm send-keys -t b C-c
sleep 0.5
tm send-keys -t b C-d
see "guild-hall board · "
row_has ask open
file_has .lore/meetings/ask.md "status: open"
# Another request, declined with x.
printf -- '---\nworker: counsel\nstatus: requested\nagenda: not now\n---\n' > .lore/meetings/nope.md
filter nope
row_has nope requested
tm send-keys -t b x
row_has nope declined
file_has .lore/meetings/nope.md "status: declined"
# A file that cannot be read is named, until it can be.
printf 'no frontmatter\n' > .lore/meetings/broken.md
tm send-keys -t b j
see ".lore/meetings/broken.md"
see "1 unreadable"
rm .lore/meetings/broken.md
unsee "1 unreadable"
tm send-keys -t b q
see "[board exited: 0]"
kill $watch; wait $watch || true
echo "--- last screen"; screen
# Waits that took over 3 s, for whoever reads a failure's output.
echo "--- slow"; cat ../slow.log 2>/dev/null || true
echo "--- end"
"##,
    );
    let cancelled = section(&out, "cancelled");
    assert!(cancelled.contains("status: cancelled"), "{out}");
    assert_eq!(section(&out, "redispatched").trim(), "1", "one re-dispatch in the timeline: {out}");
    let green: u32 = section(&out, "plan colours").trim().parse().unwrap_or(0);
    assert!(green >= 1, "an integrated cell is green: {out}");
}

/// Alone, the board offers a reconciler (`w`) and runs it for the session only; NO_COLOR
/// turns colours off; SIGTERM and a panic give the terminal back.
#[test]
fn alone_it_runs_a_reconciler_for_the_session_and_gives_the_terminal_back() {
    let p = Project::new(&["counsel", "sleeper"]);
    let out = scenario(
        &p,
        r##"
# $EDITOR and $PAGER: scripts that do what a person would (fill the template, add a line, read).
tmpd=$(cd .. && pwd)
printf '%s\n' '#!/bin/sh' 'case "$(cat "$(dirname "$0")/edit-mode")" in' \
  'new) cp "$1" "$(dirname "$0")/template.txt"; sed -i "s/^title: \"\"/title: From the board/; s/^worker: .*/worker: sleeper/; s/^The outcome wanted.*/sleep: 1/" "$1" ;;' \
  'draft) sed -i "s/^title: \"\"/title: Drafted here/; s/^worker: .*/worker: sleeper/; s/^status: pending/status: draft/; s/^The outcome wanted.*/sleep: 1/" "$1" ;;' \
  'touch) printf "\nEdited in the board.\n" >> "$1" ;;' 'esac' > "$tmpd/edit.sh"
printf '%s\n' '#!/bin/sh' 'cat > "$(dirname "$0")/paged.txt"' > "$tmpd/page.sh"
chmod +x "$tmpd/edit.sh" "$tmpd/page.sh"
board TERM=xterm-256color VISUAL="$tmpd/edit.sh" EDITOR="$tmpd/edit.sh" PAGER="$tmpd/page.sh"
see "no reconciler: w runs one for this session"
# At 100 columns every key of the footer shows (it wraps between keys).
see "w reconcile"
printf -- '---\ntitle: Nap\nworker: sleeper\n---\nsleep: 1\n' > .lore/commissions/nap.md
row_has nap pending
tm send-keys -t b w
see "this board's watch"
row_has nap completed
tm send-keys -t b Enter
see "artifact: .lore/slept/nap.md"
tm send-keys -t b Escape
# What a worker writes is shown, never obeyed: no escape sequence reaches the terminal.
mkdir -p .lore/workers/loud
printf '%s\n' 'name: loud' 'command: ["./run.sh"]' 'checkout: sparse' 'capabilities: [commission]' > .lore/workers/loud/worker.yaml
printf '%s\n' '#!/bin/sh' "printf '\\033]2;pwned\\007\\033[2Jloud output\\n'" \
  "\"\$GUILD_HALL_BIN\" toolbox submit-result --summary \"\$(printf 'done \\033]2;pwned\\007here')\"" > .lore/workers/loud/run.sh
chmod +x .lore/workers/loud/run.sh
printf -- '---\ntitle: Loud\nworker: loud\n---\nshout\n' > .lore/commissions/loud.md
row_has loud completed
filter loud
tm send-keys -t b Enter
see "done here"
tm send-keys -t b PageDown PageDown PageDown PageDown PageDown PageDown
see "loud output"
echo "--- escapes"; tm display -p -t b '#{pane_title}' | grep -c pwned || true; screen | grep -qF "done here" && echo cleaned
tm send-keys -t b Escape
# l: the log as `logs` shows it (control characters escaped), in $PAGER.
tm send-keys -t b l
file_has ../paged.txt "loud output"
echo "--- paged"; grep -cF '\x1b]2;pwned' ../paged.txt || true
# e: the artifact in $EDITOR, as a person edits it.
echo touch > ../edit-mode
tm send-keys -t b e
file_has .lore/commissions/loud.md "Edited in the board."
# n: a new commission from the template; and one as a draft, dispatched with d.
echo new > ../edit-mode
tm send-keys -t b n
file_has .lore/commissions/from-the-board.md "title: From the board"
echo "--- template worker"; grep '^worker:' ../template.txt
filter from-the-board
row_has from-the-board completed
echo draft > ../edit-mode
tm send-keys -t b n
file_has .lore/commissions/drafted-here.md "status: draft"
filter drafted-here
row_has drafted-here draft
tm send-keys -t b d
file_has .lore/commissions/drafted-here.md "status: completed"
row_has drafted-here completed
# Any size, and a resize redraws.
tm resize-window -t b -x 80 -y 24
see "? help  q quit"
tm send-keys -t b q
see "[board exited: 0]"
# The session's reconciler ended with it: the project is free.
wait_for "the board's watch to end" sh -c '"$GH" reconcile --once >/dev/null'
echo "--- freed"

# NO_COLOR: no colour at all.
board TERM=xterm-256color NO_COLOR=1
row_has nap completed
echo "--- no colour"; tm capture-pane -e -p -t b | grep -cP '\x1b\[([0-9]+;)*(3[0-8]|4[0-8]|9[0-7]|10[0-7])(;[0-9]+)*m' || true
# SIGTERM: the terminal is given back (main screen, cursor shown).
pid=$(cat ../board.pid)
kill -TERM "$pid"
see "[board exited: 0]"
echo "--- after sigterm"; tm display -p -t b '#{alternate_on} #{cursor_flag}'

# A panic: the terminal is given back before its message.
board TERM=xterm-256color GUILD_HALL_FAULT=board-panic:1
see "guild-hall board"
tm send-keys -t b '!'
see "[board exited:"
echo "--- after panic"; tm display -p -t b '#{alternate_on} #{cursor_flag}'; screen | grep -c "fault injection"

# --all: every registered project on one board, each item named with its project.
mkdir ../other && git -C ../other init -q -b main && git -C ../other -c user.name=t -c user.email=t@e commit -q --allow-empty -m init
"$GH" -C ../other init >/dev/null
printf -- '---\ntitle: Elsewhere\nworker: sleeper\nstatus: draft\n---\nsleep: 1\n' > ../other/.lore/commissions/elsewhere.md
board TERM=xterm-256color BOARD_ARGS=--all
see "/elsewhere "
see "/nap "
echo "--- end"
"##,
    );
    // Installed then: counsel (meetings and commissions), loud and sleeper (commissions): the
    // first by name of those made for commissions alone.
    assert_eq!(section(&out, "template worker").trim(), "worker: loud", "a worker made for commissions, not counsel: {out}");
    assert_eq!(section(&out, "escapes").trim(), "0\ncleaned", "no title set by a worker, its words shown cleaned: {out}");
    assert_eq!(section(&out, "paged").trim(), "1", "the pager gets the log escaped, as `logs` prints it: {out}");
    assert_eq!(section(&out, "no colour").trim(), "0", "{out}");
    assert_eq!(section(&out, "after sigterm").trim(), "0 1", "{out}");
    assert_eq!(section(&out, "after panic").trim(), "0 1\n1", "{out}");
}

/// `-C` more than once is the board's alone, and the board needs a terminal: both refused in
/// words, nothing drawn.
#[test]
fn several_projects_are_the_boards_and_it_needs_a_terminal() {
    let p = Project::new(&[]);
    let out = p.cmd().args(["-C", ".", "-C", ".", "status"]).output().expect("runs");
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("-C is given 2 times: only `guild-hall board` shows several projects"),
        "{out:?}"
    );
    let out = p.cmd().args(["board"]).output().expect("runs");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("the board needs a terminal"), "{out:?}");
}

/// The detail pane's log follows the selected commission's worker as it writes: each line shows
/// while the worker still runs (it waits for the test's go before the next), and `l` pages the
/// log as `logs -f` follows it.
#[test]
fn the_log_pane_follows_a_running_worker() {
    let p = Project::new(&[]);
    p.script_worker(
        "paced",
        "sparse",
        r#"for i in 1 2 3; do
  echo "paced line $i"
  while [ ! -e "$TMPDIR/go-$i" ]; do sleep 0.05; done
done
"$GUILD_HALL_BIN" toolbox submit-result --summary "three lines""#,
    );
    let out = scenario(
        &p,
        r##"
"$GH" watch --log-format json 2>"$PWD/../watch.log" &
watch=$!
wait_for "the watch to hold the project" sh -c 'grep -qs "guild-hall watch" "$STATE"/*/lock'
# $PAGER: reads the first line and quits, as a person quitting less would.
printf '%s\n' '#!/bin/sh' 'head -n 1 > "$(dirname "$0")/paged.txt"' > ../page.sh
chmod +x ../page.sh
board TERM=xterm-256color PAGER="$PWD/../page.sh"
see "reconciled by guild-hall watch"
printf -- '---\ntitle: Walk\nworker: paced\n---\nWalk.\n' > .lore/commissions/walk.md
row_has walk in_progress
filter walk
tm send-keys -t b Enter
see "paced line 1"
# The worker's private TMPDIR: a glob names only what exists, so the dir, then the file.
go=$(ls -d "$STATE"/*/commissions/walk/tmp)
for i in 1 2; do
  touch "$go/go-$i"
  see "paced line $((i + 1))"
done
# l while it runs: `logs -f` into the pager, which has its line and quits; the board is back
# at once, though the worker still writes nothing.
tm send-keys -t b Escape
unsee "log (attempt 1)"
tm send-keys -t b l
file_has ../paged.txt "paced line 1"
# Back: Enter opens the pane again (with the terminal still handed over, it would not).
tm send-keys -t b Enter
see "log (attempt 1)"
row_has walk in_progress
touch "$go/go-3"
row_has walk completed
tm send-keys -t b q
see "[board exited: 0]"
kill $watch; wait $watch || true
echo "--- followed"; echo ok
"##,
    );
    assert_eq!(section(&out, "followed").trim(), "ok", "{out}");
}

/// A worker waiting for a person: its row says so, and `t`, the answer typed, `Enter` answers
/// it through the same operation as `guild-hall answer`; the worker goes on and completes.
#[test]
fn t_answers_a_worker_waiting_for_a_person() {
    let p = Project::new(&["scribe"]);
    let out = scenario(
        &p,
        r##"
"$GH" watch --log-format json 2>"$PWD/../watch.log" &
watch=$!
wait_for "the watch to hold the project" sh -c 'grep -qs "guild-hall watch" "$STATE"/*/lock'
board TERM=xterm-256color
see "reconciled by guild-hall watch"
printf -- '---\ntitle: Hue\nworker: scribe\n---\nwait-for: Which hue?\nWrite it.\n' > .lore/commissions/hue.md
row_has hue "waiting for you: question 1"
filter hue
tm send-keys -t b t
see "answer hue: "
tm send-keys -t b "sea green" Enter
row_has hue completed
echo "--- answered"; cat .lore/commissions/hue.md
tm send-keys -t b q
see "[board exited: 0]"
kill $watch; wait $watch || true
echo "--- end"
"##,
    );
    let hue = section(&out, "answered");
    assert!(hue.contains("- answer: sea green\n") && hue.contains("answered: "), "the answer in questions: {out}");
    assert!(hue.lines().any(|l| l.contains("summary: ") && l.contains("answer: sea green")), "the worker got it: {out}");
}
