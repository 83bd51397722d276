//! Every byte a worker or a file wrote is shown, never obeyed: a title and a body holding
//! `<script>` and an `onerror` show as text on the board and on the commission page, and no
//! script of theirs runs (the harness sees a script that does: `harness.rs`).

use super::browser::{at, Browser};
use super::server::Web;
use crate::common::*;

const TITLE: &str = "<script>window.pwned='title';alert('title')</script><img src=x onerror=\"window.pwned='img'\">";

#[test]
fn a_title_with_markup_shows_as_text_and_runs_nothing() {
    let p = Project::new(&[]);
    let yaml_title = TITLE.replace('\'', "''");
    p.write_commission(
        "hostile",
        &format!("---\ntitle: '{yaml_title}'\nworker: scribe\nstatus: draft\n---\n</pre><script>window.pwned='body'</script>\n"),
    );
    let s = Web::start(&p, &[]);
    let mut b = Browser::start(&p);
    b.goto(&s.url);
    b.wait("li[data-testid=item][data-id=hostile]");
    assert_eq!(b.text("li[data-id=hostile] [data-testid=item-title]"), TITLE);
    b.screenshot("escaping");
    b.goto(&at(&s, "/commissions/hostile"));
    b.wait_text(Some("[data-testid=title]"), "<script>");
    assert_eq!(b.text("[data-testid=title]"), TITLE);
    assert!(b.text("#frontmatter").contains("<script>window.pwned="), "the frontmatter as written, shown");
    // Nothing ran: no global, no dialog, no element the title would have made.
    assert_eq!(b.eval("typeof window.pwned"), "undefined");
    assert_eq!(b.count("main img"), 0);
    assert_eq!(b.count("main script"), 0);
    assert_eq!(b.dialogs(), Vec::<String>::new());
}
