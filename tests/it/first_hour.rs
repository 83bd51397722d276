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
