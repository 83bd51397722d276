//! The board in a browser, live: a commission file written by another process (as an editor
//! saves: a temp file renamed into place) shows without a reload, and so does its change.

use super::browser::Browser;
use super::server::Web;
use crate::common::*;

/// Save like an editor: a temp file beside it, renamed over.
pub(crate) fn rename_save(path: &std::path::Path, text: &str) {
    let tmp = path.with_file_name(format!(".{}.swp", path.file_name().and_then(|n| n.to_str()).unwrap_or("x")));
    std::fs::write(&tmp, text).expect("write tmp");
    std::fs::rename(&tmp, path).expect("rename");
}

#[test]
fn the_board_shows_a_commission_written_by_another_process_without_a_reload() {
    let p = Project::new(&[]);
    rename_save(&p.artifact_path("first"), "---\ntitle: Already here\nworker: scribe\nstatus: draft\n---\nLater.\n");
    let s = Web::start(&p, &[]);
    let mut b = Browser::start(&p);
    b.goto(&s.url);
    b.wait("li[data-testid=item][data-id=first]");
    b.wait("body[data-live=on]");
    // Gone on a reload: the page is the same one all along.
    b.eval("window.sameDocument = 'yes'");
    rename_save(&p.artifact_path("second"), "---\ntitle: Written elsewhere\nworker: scribe\nstatus: draft\n---\nLater.\n");
    b.wait("li[data-testid=item][data-id=second]");
    assert_eq!(b.text("li[data-testid=item][data-id=second] [data-testid=item-title]"), "Written elsewhere");
    // Changed by another process again: its new title shows.
    rename_save(&p.artifact_path("second"), "---\ntitle: Renamed elsewhere\nworker: scribe\nstatus: draft\n---\nLater.\n");
    b.wait_text(Some("li[data-testid=item][data-id=second]"), "Renamed elsewhere");
    // Removed: it is no longer shown as the draft it was.
    std::fs::remove_file(p.artifact_path("first")).expect("remove");
    b.call(serde_json::json!({"op": "wait", "selector": "li[data-testid=item][data-id=first][data-status=draft]", "state": "detached"}));
    assert_eq!(b.eval("window.sameDocument"), "yes", "the page was never reloaded");
    assert_eq!(b.errors(), Vec::<String>::new());
}
