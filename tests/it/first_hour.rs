//! The first hour (issue 20): what a newcomer reads is said as a person would say it.

use crate::common::Project;

#[test]
fn check_counts_as_a_person_would() {
    let p = Project::new(&["scribe"]);
    p.create("scribe", "Hello", "Say hello.");
    let out = p.ok(&["check"]);
    assert!(out.starts_with("ok: 1 commission, 0 meetings, 0 plans, 1 worker package\n"), "{out}");
    p.create("scribe", "Again", "Say it again.");
    let out = p.ok(&["check"]);
    assert!(out.starts_with("ok: 2 commissions, 0 meetings, 0 plans, 1 worker package\n"), "{out}");
}

#[test]
fn logs_of_an_unknown_id_says_so_as_timeline_does() {
    let p = Project::new(&["scribe"]);
    for cmd in ["logs", "timeline"] {
        let (code, out, err) = p.run(&[cmd, "nope"]);
        assert_eq!(code, 1, "{cmd}: {out}{err}");
        assert!(err.contains("no commission \"nope\" in "), "{cmd}: {err}");
    }
    let id = p.create("scribe", "Hello", "Say hello.");
    let (code, _, err) = p.run(&["logs", &id]);
    assert_eq!(code, 1);
    assert!(err.contains("has not been dispatched yet"), "{err}");
}
