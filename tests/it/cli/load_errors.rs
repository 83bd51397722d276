//! What commands say when an artifact cannot be loaded or created, word for word as they
//! always said it (the texts of the build before the shared `artifact::load`/`create_new`,
//! which had changed them: the io error printed twice, each kind's wording lost).

use crate::common::Project;

/// `guild-hall args` fails saying exactly `want` (`{root}` stands for the project root).
fn says(p: &Project, args: &[&str], want: &str) {
    let (code, _, err) = p.run(args);
    assert_eq!(code, 1, "{args:?}: {err}");
    let want = want.replace("{root}", &p.root.display().to_string());
    assert_eq!(err.trim_end(), want, "{args:?}");
}

#[test]
fn a_missing_artifact_is_said_in_each_kinds_words() {
    let p = Project::new(&["scribe"]);
    // Said as `logs`, `timeline` and `status` say it (one function: `Wording::missing`).
    let commission = "error: no commission \"nope\" in {root}/.lore/commissions";
    for cmd in ["cancel", "dispatch", "redispatch"] {
        says(&p, &["commission", cmd, "nope"], commission);
    }
    for args in [&["logs", "nope"][..], &["timeline", "nope"], &["status", "nope"]] {
        says(&p, args, commission);
    }
    let meeting = "error: no meeting nope ({root}/.lore/meetings/nope.md): cannot read: No such file or directory (os error 2)";
    for args in [&["meeting", "close", "nope"][..], &["meeting", "show", "nope"], &["meeting", "decline", "nope"]] {
        says(&p, args, meeting);
    }
    let plan = "error: no plan nope ({root}/.lore/plans/nope.md): No such file or directory (os error 2)";
    for cmd in ["show", "retry", "cancel"] {
        says(&p, &["plan", cmd, "nope"], plan);
    }
}

#[test]
fn a_symlinked_artifact_is_said_in_each_kinds_words() {
    let p = Project::new(&["scribe"]);
    let real = p.root.join("real.md");
    std::fs::write(&real, "---\ntitle: s\nwaves:\n  - - {id: a, worker: scribe, prompt: x}\n---\n").expect("write");
    for dir in ["plans", "commissions", "meetings"] {
        std::fs::create_dir_all(p.root.join(".lore").join(dir)).expect("mkdir");
        std::os::unix::fs::symlink(&real, p.root.join(".lore").join(dir).join("s.md")).expect("link");
    }
    says(&p, &["plan", "show", "s"], "error: {root}/.lore/plans/s.md: symlink: plan artifacts must be regular files");
    says(&p, &["plan", "retry", "s"], "error: {root}/.lore/plans/s.md: symlink: plan artifacts must be regular files");
    let theirs = "symlink: artifacts must be regular files (a link is never followed or replaced)";
    says(&p, &["commission", "redispatch", "s"], &format!("error: {{root}}/.lore/commissions/s.md: {theirs}"));
    says(&p, &["meeting", "close", "s"], &format!("error: {{root}}/.lore/meetings/s.md: {theirs}"));
    let (code, out, err) = p.run(&["check"]);
    assert_eq!(code, 1, "{out}{err}");
    let root = p.root.display();
    let line = format!("{root}/.lore/plans/s.md:1:1: symlink: plan artifacts must be regular files (a link is never followed or replaced)");
    assert!(format!("{out}{err}").lines().any(|l| l == line), "{out}{err}");
}

#[test]
fn an_id_taken_is_said_the_same_by_each_create() {
    let p = Project::new(&["scribe"]);
    let waves = p.root.join("waves.yaml");
    std::fs::write(&waves, "- - {id: a, worker: scribe, prompt: x}\n").expect("write");
    let waves = waves.to_str().expect("utf8");
    p.ok(&["plan", "create", "--title", "dup", "--draft", waves]);
    says(
        &p,
        &["plan", "create", "--title", "dup", "--id", "dup", "--draft", waves],
        "error: plan id dup is taken by the file {root}/.lore/plans/dup.md: ids are never reused (leave the id out to be given a free one)",
    );
    let create = ["commission", "create", "--worker", "scribe", "--title", "d", "--id", "dupc", "--prompt", "x", "--draft"];
    p.ok(&create);
    says(
        &p,
        &create,
        "error: commission id dupc is taken by the file {root}/.lore/commissions/dupc.md: ids are never reused (leave the id out to be given a free one)",
    );
}
