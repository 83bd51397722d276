//! Usage in a real terminal (tmux: capture-pane): `status`'s USAGE column, and the board's
//! usage on each item and its total in the footer, for commissions whose workers reported it.
//! In a private pid namespace (the tmux server dies with it); waits with deadlines.

use crate::common::{in_pid_namespace, section, Project};

#[test]
fn status_and_the_board_show_what_the_work_used() {
    let p = Project::new(&[]);
    p.script_worker(
        "payer",
        "sparse",
        r#""$GUILD_HALL_BIN" toolbox report-usage --input-tokens 12000 --output-tokens 400 --usd 0.17
"$GUILD_HALL_BIN" toolbox submit-result --summary "paid for""#,
    );
    p.script_worker(
        "counter",
        "sparse",
        r#""$GUILD_HALL_BIN" toolbox report-usage --input-tokens 2000 --output-tokens 500
"$GUILD_HALL_BIN" toolbox submit-result --summary "counted""#,
    );
    p.write_commission("paid", "---\nworker: payer\n---\nPay.\n");
    p.write_commission("counted", "---\nworker: counter\n---\nCount.\n");
    p.settle();
    assert_eq!(p.status("paid"), "completed", "{}", p.ok(&["logs", "paid"]));
    let out = in_pid_namespace(
        &p,
        r##"
sock="$PWD/../tmux.usage.sock"
tm() { tmux -S "$sock" "$@"; }
trap 'tm kill-server 2>/dev/null || true' EXIT
see() { # see TEXT: wait up to 60 s for TEXT in the pane
  for i in $(seq 600); do if tm capture-pane -p -t u | grep -qF -- "$1"; then return 0; fi; sleep 0.1; done
  echo "the pane never showed: $1" >&2; tm capture-pane -p -t u >&2; exit 1
}
printf '%s\n' '"$GH" status' 'echo "[status done]"' 'exec sleep 3600' > ../status.sh
tm -f /dev/null new-session -d -x 120 -y 20 -s u "env TERM=xterm-256color sh ../status.sh"
see "[status done]"
echo "--- status"; tm capture-pane -p -t u
tm kill-server
sock="$PWD/../tmux.board.sock"
tm -f /dev/null new-session -d -x 100 -y 24 -s u "env TERM=xterm-256color NO_COLOR=1 \"$GH\" board"
see "guild-hall board"
see "12k tok"
see "used 14k tok \$0.17"
echo "--- board"; tm capture-pane -p -t u
tm send-keys -t u q
echo "--- end"
"##,
    );
    let status = section(&out, "status");
    let header = status.lines().find(|l| l.starts_with("ID")).unwrap_or_default();
    assert!(header.contains("USAGE"), "{out}");
    let row = |screen: &str, id: &str| screen.lines().find(|l| l.contains(id)).unwrap_or_default().to_string();
    assert!(row(status, "paid").contains("12k tok $0.17"), "{out}");
    assert!(row(status, "counted").contains("2.5k tok") && !row(status, "counted").contains('$'), "tokens only: {out}");
    let board = section(&out, "board");
    assert!(row(board, "paid").contains("12k tok $0.17"), "{out}");
    assert!(row(board, "counted").contains("2.5k tok"), "{out}");
    assert!(board.contains("used 14k tok $0.17"), "the footer's total: {out}");
}
