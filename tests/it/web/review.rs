//! Review in a browser: a commission held in review is approved with the keyboard alone and
//! is seen merged; a revision with a comment on a line of the diff reaches the worker (the
//! next attempt's prompt holds it); a rejected one is run again from its page.

use super::browser::{at, Browser};
use super::server::Web;
use crate::common::*;

/// Leaves its prompt in `seen-<attempt>.txt`, adds a line to `work.txt`, submits.
const RECORDER: &str = r#"cp "$GUILD_HALL_PROMPT_FILE" "seen-$GUILD_HALL_ATTEMPT.txt"
echo "attempt $GUILD_HALL_ATTEMPT" >> work.txt
"$GUILD_HALL_BIN" toolbox submit-result --summary "did attempt $GUILD_HALL_ATTEMPT""#;

/// A project whose commission `job` is held in review under a running `serve`, its page open.
fn in_review(p: &Project) -> (Web, Browser) {
    p.script_worker("recorder", "full", RECORDER);
    let s = Web::start(p, &[]);
    p.write_commission("job", "---\ntitle: Do the work\nworker: recorder\nreview: required\n---\nDo the work.\n");
    wait_status(p, "job", "review");
    let mut b = Browser::start(p);
    b.goto(&s.url);
    b.goto(&at(&s, "/commissions/job"));
    b.wait("tr[data-testid=diff-line][data-path='work.txt']");
    (s, b)
}

#[test]
fn approving_with_the_keyboard_alone_merges_the_work() {
    let p = Project::new(&[]);
    let (s, mut b) = in_review(&p);
    assert_eq!(b.text("[data-testid=status]"), "review");
    // The change and its verdicts in view.
    b.eval("document.getElementById('review').scrollIntoView()");
    b.screenshot("commission");
    // The board beside it: the commission in review first, under "Needs you".
    for (id, title) in [("draft-notes", "Draft the release notes"), ("tidy", "Tidy the test helpers")] {
        p.write_commission(id, &format!("---\ntitle: {title}\nworker: recorder\nstatus: draft\n---\nLater.\n"));
    }
    b.goto(&at(&s, "/"));
    b.wait("[data-testid=needs-you] li[data-testid=item][data-id=job]");
    b.wait("li[data-testid=item][data-id=tidy]");
    b.screenshot("board");
    b.viewport(390, 844);
    b.screenshot("board-phone");
    b.viewport(1280, 800);
    b.goto(&at(&s, "/commissions/job"));
    b.wait("tr[data-testid=diff-line][data-path='work.txt']");
    b.tab_to("approve");
    b.press("Enter");
    b.wait_text(Some("[data-testid=status]"), "completed");
    assert_eq!(git(&p.root, &["show", "claude/main:work.txt"]), "attempt 1\n");
    assert!(trailers(&p).contains("Guild-Hall-Commission: job attempt 1"), "{}", trailers(&p));
    b.wait("[data-testid=action-result][data-state=ok]");
}

#[test]
fn a_revision_with_a_line_comment_reaches_the_next_attempt() {
    let p = Project::new(&[]);
    let (_s, mut b) = in_review(&p);
    b.click("tr[data-testid=diff-line][data-path='work.txt'][data-line='1'] button[data-testid=comment-line]");
    b.fill("textarea.line-comment", "say more here");
    b.fill("#revise-message", "make it shorter");
    b.click("#revise");
    b.wait_text(Some("#commission-live"), "attempt 2");
    wait_for("attempt 2 in review", || {
        let s = p.status_json("job");
        s["attempt"] == 2 && s["status"] == "review"
    });
    b.wait_text(Some("[data-testid=status]"), "review");
    let seen = git(&p.root, &["show", "claude/commission/job:seen-2.txt"]);
    assert!(seen.contains("Feedback on attempt 1"), "{seen}");
    assert!(seen.contains("- make it shorter") && seen.contains("- work.txt:1: say more here"), "{seen}");
}

#[test]
fn a_rejected_commission_is_run_again_from_its_page() {
    let p = Project::new(&[]);
    let (_s, mut b) = in_review(&p);
    assert_eq!(b.count("[data-testid=redispatch]"), 0, "nothing to run again while in review");
    p.ok(&["reject", "job", "-m", "not yet"]);
    b.wait_text(Some("[data-testid=status]"), "cancelled");
    b.click("[data-testid=redispatch]");
    b.wait("[data-testid=action-result][data-state=ok]");
    // A second attempt, held in review again, seen on the page as it happens.
    b.wait_text(Some("[data-testid=status]"), "review");
    assert_eq!(p.status_json("job")["attempt"], 2);
    assert!(p.artifact("job").contains("attempt: 2"), "{}", p.artifact("job"));
    assert!(b.errors().is_empty(), "{:?}", b.errors());
}
