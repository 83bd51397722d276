//! `check` reports every problem it finds, one bad file among them: a timeline that cannot be
//! read is a problem at its path, not the end of the report.

use crate::common::Project;

/// Review truth #9: a completed commission's timeline that is a directory made `check` exit
/// with `error: reading …: Is a directory`, every other report lost.
#[test]
fn an_unreadable_timeline_is_one_problem_among_the_others() {
    let p = Project::new(&["scribe"]);
    std::fs::create_dir_all(p.root.join(".lore/commissions")).expect("mkdir");
    p.write_commission("k", "---\ntitle: K\nworker: scribe\nstatus: completed\nattempt: 1\n---\nDone.\n");
    let timeline = p.root.join(".lore/commissions/k.timeline.jsonl");
    std::fs::create_dir_all(&timeline).expect("a directory where the timeline should be");
    p.write_commission("other", "---\ntitle: Other\nworker: nobody\n---\nWork.\n");

    let (code, out, err) = p.run(&["check"]);
    assert_eq!(code, 1, "problems fail the check:\n{out}{err}");
    assert!(!err.contains("error:"), "the check is not aborted:\n{err}");
    let at = format!("{}:1:1: its timeline cannot be read", timeline.display());
    assert!(out.contains(&at), "the timeline's problem, at its path:\n{out}");
    assert!(out.contains("other.md") && out.contains("nobody"), "the other problem is still reported:\n{out}");
}
