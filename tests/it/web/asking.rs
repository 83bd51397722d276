//! A worker's question answered in a browser: the scribe's `wait-for:` line runs `toolbox ask`
//! and blocks; the commission page shows the question with an answer box; the answer reaches
//! the worker, which writes it into its result.

use super::browser::{at, Browser};
use super::server::Web;
use crate::common::*;

#[test]
fn a_question_is_answered_from_the_commission_page() {
    let p = Project::new(&["scribe"]);
    let s = Web::start(&p, &[]);
    let id = p.create("scribe", "Colour", "wait-for: Which colour?\nWrite the colour down.");
    let mut b = Browser::start(&p);
    b.goto(&s.url);
    b.goto(&at(&s, &format!("/commissions/{id}")));
    b.wait("form[data-testid=answer-form]");
    assert!(b.text("#questions").contains("Which colour?"));
    b.fill("form[data-testid=answer-form] textarea[name=text]", "blue");
    b.click("form[data-testid=answer-form] button[type=submit]");
    b.wait_text(Some("[data-testid=status]"), "completed");
    let summary = p.status_json(&id)["result"]["summary"].as_str().unwrap_or("").to_string();
    assert!(summary.contains("answer: blue"), "{summary}");
    assert_eq!(b.count("form[data-testid=answer-form]"), 0, "no question left open");
}
