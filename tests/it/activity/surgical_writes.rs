//! A person's edit always wins: an edit that lands between observe and write makes the
//! reconciler drop its write and re-plan, and the person's text survives byte-for-byte.

use crate::common::*;
use guild_hall::activity::kind::Ctx;
use guild_hall::commission::act::{act, Outcome};
use guild_hall::commission::decide::{decide, Action};
use guild_hall::commission::observe::observe;
use guild_hall::config::{self, Home};

#[test]
fn edit_between_observe_and_write_is_not_lost() {
    let p = Project::new(&["scribe"]);
    p.config("dispatch: manual\n");
    p.write_commission("e", "---\nworker: scribe\n---\nbody\n");
    let home = Home::resolve(Some(&p.home)).expect("home");
    let project = config::Project::open(&p.root).expect("project");
    let snap = observe(&home, &project).expect("observe");
    let planned = decide(&snap);
    assert!(planned.actions.iter().any(|a| matches!(a, Action::Update(_))), "{:?}", planned.actions);

    // The person saves between our observe and our write.
    let mine = "---\nworker: scribe\ntitle: Mine   # my comment\n---\nmy new body\n";
    std::fs::write(p.artifact_path("e"), mine).expect("edit");
    let ctx = Ctx { home: &home, project: &project, workers: &snap.workers };
    for a in &planned.actions {
        assert_eq!(act(&ctx, &snap, a).expect("act"), Outcome::Dropped);
    }
    assert_eq!(p.artifact("e"), mine);

    // The next pass re-plans from the person's version and keeps it.
    p.ok(&["reconcile", "--once"]);
    let after = p.artifact("e");
    assert!(after.starts_with("---\nworker: scribe\ntitle: Mine   # my comment\n"), "{after}");
    assert!(after.contains("status: pending") && after.ends_with("---\nmy new body\n"), "{after}");
}
