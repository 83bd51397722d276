//! The browser harness itself: what the escaping tests rely on it to see (a script that ran,
//! a dialog it raised, an error it threw) it does see.

use super::browser::Browser;
use crate::common::*;

#[test]
fn the_browser_sees_what_a_pages_script_does() {
    let p = Project::new(&[]);
    let page = p.tmp.path().join("page.html");
    std::fs::write(
        &page,
        "<!doctype html><title>t</title><p id=a>before</p><script>document.getElementById('a').textContent='after';window.ran=1;alert('hello');throw new Error('boom');</script>",
    )
    .expect("write page");
    let mut b = Browser::start(&p);
    b.goto(&format!("file://{}", page.display()));
    b.wait_text(Some("#a"), "after");
    assert_eq!(b.eval("window.ran"), 1);
    assert_eq!(b.dialogs(), vec!["alert: hello".to_string()]);
    assert!(b.errors().iter().any(|e| e.contains("boom")), "{:?}", b.errors());
}
