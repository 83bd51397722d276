//! The board's diff pane (`D`) in a real terminal (tmux): the selected commission's change as
//! `guild-hall diff` gives it, coloured, scrolled with PgDn, closed with `D`; a worker's escape
//! sequence in it shown harmless; a plan's pane, each task's stat.

use crate::common::{section, Project};

#[test]
fn d_shows_the_selected_commissions_change() {
    let p = Project::new(&[]);
    // Sixty lines added, so the patch is longer than the pane; one of them with an escape.
    p.script_worker(
        "editor",
        "full",
        "printf '# demo\\nmore\\n' > README.md\nfor i in $(seq 60); do echo \"line $i of the long file\"; done > long.txt\nprintf 'evil \\033[2J here\\n' >> long.txt\n\"$GUILD_HALL_BIN\" toolbox submit-result --summary edited",
    );
    let id = p.create("editor", "Edit", "Edit things.");
    // A plan: its pane is each task's stat.
    p.script_worker(
        "planter",
        "full",
        "printf 'planted\\n' > planted.txt\n\"$GUILD_HALL_BIN\" toolbox task-update --status done --sequence 1 --idempotency-key done >/dev/null",
    );
    crate::plan::fixtures::write_plan(&p, "pl", "  - - {id: t, worker: planter, prompt: go}\n");
    p.settle();
    assert_eq!(p.status(&id), "completed");
    let out = super::terminal::scenario(
        &p,
        &format!(
            r##"
board TERM=xterm-256color
see "guild-hall board · "
filter {id}
tm send-keys -t b D
see "diff of commission {id}"
see " README.md |  1 +"
see " 2 files changed, 62 insertions(+)"
tm send-keys -t b PgDn
see "+more"
echo "--- colours"; tm capture-pane -e -p -t b | grep -cP '\x1b\[([0-9]+;)*(32|38;5;2)m  \+more' || true
# PgDn scrolls down the patch to its end.
for i in $(seq 14); do tm send-keys -t b PgDn; done
see "+line 60 of the long file"
see "+evil  here"
echo "--- end of patch"; screen | grep -F "evil" || true
tm send-keys -t b D
unsee "diff of commission {id}"
tm send-keys -t b / C-u "worker:planter" Enter
see "1 of 2 items"
row_has pl completed
tm send-keys -t b D
see "diff of plan pl"
see "t (pl:exec:wave-1:task-1)"
see " planted.txt | 1 +"
tm send-keys -t b q
see "[board exited: 0]"
echo "--- end"
"##
        ),
    );
    let green: u32 = section(&out, "colours").trim().parse().unwrap_or(0);
    assert!(green >= 1, "an added line is green: {out}");
    assert!(!section(&out, "end of patch").contains('\x1b'), "the escape is not carried out: {out}");
}

/// `guild-hall diff` on a terminal goes through the pager (`GIT_PAGER`) in colour, as git's
/// does; `--no-pager` writes to the terminal; through a pipe it is plain.
#[test]
fn on_a_terminal_diff_pages_in_colour() {
    let p = Project::new(&[]);
    p.script_worker("editor", "full", "printf '# demo\\nmore\\n' > README.md\n\"$GUILD_HALL_BIN\" toolbox submit-result --summary edited");
    let id = p.create("editor", "Edit", "Edit things.");
    p.settle();
    let run = |name: &str, line: &str| {
        std::fs::write(p.tmp.path().join(name), format!("{line}\necho \"[exit: $?]\"\nexec sleep 3600\n")).expect("script")
    };
    run("paged.sh", &format!("GIT_PAGER='cat > ../paged.txt' \"$GH\" diff {id}"));
    run("unpaged.sh", &format!("GIT_PAGER='cat > ../never.txt' \"$GH\" diff {id} --no-pager"));
    let out = super::terminal::scenario(
        &p,
        r##"
tm -f /dev/null new-session -d -x 100 -y 30 -s b "sh ../paged.sh"
see "[exit: 0]"
echo "--- paged"; cat -v ../paged.txt
tm kill-server 2>/dev/null || true
servers=$((servers + 1)); sock="$PWD/../tmux.$servers.sock"
tm -f /dev/null new-session -d -x 100 -y 30 -s b "sh ../unpaged.sh"
see "[exit: 0]"
see "+more"
echo "--- never"; ls ../never.txt 2>&1 || true
echo "--- end"
"##,
    );
    let paged = section(&out, "paged");
    assert!(paged.contains("^[[32m+more^[[m") && paged.contains("^[[1mdiff --git a/README.md b/README.md^[[m"), "{out}");
    assert!(section(&out, "never").contains("No such file"), "--no-pager runs no pager: {out}");
    let plain = p.ok(&["diff", &id]);
    assert!(plain.contains("\n+more\n") && !plain.contains('\x1b'), "{plain}");
}
