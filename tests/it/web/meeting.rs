//! A meeting in a browser: a message sent from the page runs a turn (the catalogue's
//! `meeting/send`, as `guild-hall meeting send` does), and the worker's reply streams into the
//! page as it comes — seen in part while the worker still holds its turn open — then lands in
//! the transcript, escaped.

use super::browser::{at, Browser};
use super::server::Web;
use crate::common::*;

/// A meeting worker that says its first words, waits for `.go` in its worktree (the test's
/// say-so: no timing), then says the rest and ends its turn. Its words hold markup.
fn slow_worker(p: &Project) {
    use std::os::unix::fs::PermissionsExt;
    let dir = p.root.join(".lore/workers/host");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(
        dir.join("worker.yaml"),
        "name: host\ndescription: a test meeting worker\ncommand: [\"./meet.sh\"]\nmeeting: [\"./meet.sh\"]\ncheckout: full\ncapabilities: [meeting]\n",
    )
    .expect("worker.yaml");
    let meet = dir.join("meet.sh");
    std::fs::write(
        &meet,
        "#!/bin/sh\nset -eu\nprintf '{\"type\":\"text_delta\",\"text\":\"First <b>part</b>, \"}\\n'\n\
         while [ ! -e .go ]; do sleep 0.05; done\nrm -f .go\n\
         printf '{\"type\":\"text_delta\",\"text\":\"then the rest.\"}\\n{\"type\":\"turn_end\"}\\n'\n",
    )
    .expect("meet.sh");
    std::fs::set_permissions(&meet, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

fn meeting_worktree(p: &Project, id: &str) -> std::path::PathBuf {
    p.home.join("worktrees").read_dir().expect("worktrees").flatten().next().expect("a project").path().join(format!("meeting-{id}"))
}

#[test]
fn a_turn_streams_into_the_page_as_the_worker_speaks() {
    let p = Project::new(&[]);
    slow_worker(&p);
    p.ok(&["meeting", "start", "--worker", "host", "--id", "m", "--title", "Talk it through"]);
    let s = Web::start(&p, &[]);
    let mut b = Browser::start(&p);
    b.goto(&s.url);
    b.goto(&at(&s, "/meetings/m"));
    b.wait_text(Some("[data-testid=status]"), "open");
    b.wait("body[data-live=on]");
    b.fill("#message", "How should we split the work?");
    b.click("#send");
    // The person's message at once; the worker's first words while its turn is still open.
    b.wait_text(Some("#transcript"), "How should we split the work?");
    b.wait_text(Some("#reply"), "First <b>part</b>,");
    let wt = meeting_worktree(&p, "m");
    assert!(!b.text("#reply").contains("the rest"));
    assert!(!b.text("#transcript").contains("First"), "not in the transcript before the turn ends");
    assert_eq!(b.count("#reply b"), 0, "the worker's markup is shown, not obeyed");
    b.screenshot("meeting");
    std::fs::write(wt.join(".go"), "").expect("go");
    b.wait_text(Some("#transcript"), "First <b>part</b>, then the rest.");
    b.wait_no_text(Some("#reply"), "First");
    assert_eq!(b.count("#transcript article[data-who=worker]"), 1);
    assert_eq!(b.count("#transcript article[data-who=you]"), 1);
    b.wait("[data-testid=action-result][data-state=ok]");
    let shown: serde_json::Value = serde_json::from_str(&p.ok(&["meeting", "show", "m", "--json"])).expect("json");
    assert!(shown["log"].as_array().is_some_and(|l| l.iter().any(|e| e["kind"] == "turn")), "{shown}");
}
