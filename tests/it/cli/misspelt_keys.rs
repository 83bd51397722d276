//! Misspelt keys: an unknown key in a commission, meeting, plan,
//! `worker.yaml` or `.lore/guild-hall.yaml` is a problem at the key itself, `path:line:col`
//! counted in the file, with a "did you mean"; a commission holding one is never dispatched.

use crate::common::Project;

/// `check` exits 1 and says `file:line:1: unknown key `typo`: did you mean `key`?`.
fn check_says(p: &Project, file: &std::path::Path, line: usize, typo: &str, key: &str) {
    let (code, out, err) = p.run(&["check"]);
    assert_eq!(code, 1, "an unknown key fails the check:\n{out}{err}");
    let said = format!("{}:{line}:1: unknown key `{typo}`: did you mean `{key}`?", file.display());
    assert!(out.contains(&said) || err.contains(&said), "wanted {said:?} in:\n{out}{err}");
}

#[test]
fn a_misspelt_key_of_each_kind_fails_check_at_the_key_with_a_suggestion() {
    let p = Project::new(&["scribe"]);
    std::fs::create_dir_all(p.root.join(".lore/commissions")).expect("mkdir");
    p.write_commission("c", "---\ntitle: C\nworker: scribe\n# a comment\ntimout: 90m\n---\nWork.\n");
    check_says(&p, &p.artifact_path("c"), 5, "timout", "timeout");
    std::fs::remove_file(p.artifact_path("c")).expect("rm");

    let meeting = p.root.join(".lore/meetings/m.md");
    std::fs::create_dir_all(meeting.parent().expect("dir")).expect("mkdir");
    std::fs::write(&meeting, "---\nworker: scribe\nagnda: talk\n---\n").expect("write");
    check_says(&p, &meeting, 3, "agnda", "agenda");
    std::fs::remove_file(&meeting).expect("rm");

    let plan = p.root.join(".lore/plans/pl.md");
    std::fs::create_dir_all(plan.parent().expect("dir")).expect("mkdir");
    std::fs::write(&plan, "---\ntitle: P\nstatus: draft\nparalelism: 2\nwaves:\n  - - {id: a, worker: scribe, prompt: do a}\n---\n")
        .expect("write");
    check_says(&p, &plan, 4, "paralelism", "parallelism");
    std::fs::remove_file(&plan).expect("rm");

    let manifest = p.root.join(".lore/workers/scribe/worker.yaml");
    let text = std::fs::read_to_string(&manifest).expect("worker.yaml");
    std::fs::write(&manifest, format!("{text}capabilites: [commission]\n")).expect("write");
    check_says(&p, &manifest, text.lines().count() + 1, "capabilites", "capabilities");
    std::fs::write(&manifest, &text).expect("put back");

    let config = p.root.join(".lore/guild-hall.yaml");
    let before = std::fs::read_to_string(&config).unwrap_or_default();
    std::fs::write(&config, format!("{before}\ncomission_cap: 2\n")).expect("write");
    let line = std::fs::read_to_string(&config).expect("config").lines().count();
    check_says(&p, &config, line, "comission_cap", "commission_cap");
}

/// `dependecies:` used to be skipped: the dependency dropped, the commission dispatched at once.
#[test]
fn a_commission_with_dependecies_is_not_dispatched() {
    let p = Project::new(&["scribe"]);
    std::fs::create_dir_all(p.root.join(".lore/commissions")).expect("mkdir");
    p.write_commission(
        "early",
        "---\ntitle: Early\nworker: scribe\ndependecies: [.lore/research/not-yet.md]\n---\noutput: .lore/out/early.md\nWrite it.\n",
    );
    let (_, out, err) = p.run(&["reconcile", "--once"]);
    assert!(p.try_state_dir("early").and_then(|_| p.run_info("early")).is_none(), "no attempt was started:\n{out}{err}");
    assert!(!p.branches().iter().any(|b| b.contains("early")), "no branch for it: {:?}", p.branches());
    let text = p.artifact("early");
    assert!(text.contains("dependecies: [.lore/research/not-yet.md]") && !text.contains("status:"), "never rewritten:\n{text}");
    check_says(&p, &p.artifact_path("early"), 4, "dependecies", "dependencies");
    let (_, out, err) = p.run(&["status", "early"]);
    assert!(format!("{out}{err}").contains("did you mean `dependencies`?"), "status says why:\n{out}{err}");
}
