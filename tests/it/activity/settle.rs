//! An update a killed pass left half-applied (an intent in the project's state dir) that cannot
//! be settled is one artifact's problem, never the project's: the pass names the file, leaves
//! that artifact alone, and goes on with the rest.

use crate::common::Project;

#[test]
fn a_corrupt_intent_is_reported_and_the_pass_goes_on() {
    let p = Project::new(&["scribe"]);
    let first = p.create("scribe", "First", "output: .lore/first.md\nWrite.");
    p.settle();
    let intents = p.state_dir(&first).parent().and_then(|d| d.parent()).expect("project state").join("intents");
    std::fs::create_dir_all(&intents).expect("mkdir");

    let stuck = p.create("scribe", "Stuck", "output: .lore/stuck.md\nWrite.");
    let other = p.create("scribe", "Other", "output: .lore/other.md\nWrite.");
    let bad = intents.join(format!("commission.{stuck}.json"));
    std::fs::write(&bad, "{ not json").expect("corrupt intent");

    let (_, out, err) = p.run(&["reconcile", "--once"]);
    let said = format!("{out}{err}");
    assert!(said.contains(&bad.display().to_string()), "the bad intent is named: {said}");
    assert_ne!(p.status(&other), "pending", "another commission is still dispatched: {said}");
    // What the killed update left cannot be known: nothing is done for its artifact.
    assert_eq!(p.status(&stuck), "pending", "{said}");
    assert!(bad.exists(), "the intent is kept for a person to look at");
}
