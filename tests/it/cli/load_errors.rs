//! What commands say when an artifact cannot be loaded or created, word for word as they
//! always said it (the texts of the build before the shared `artifact::load`/`create_new`,
//! which had changed them: the io error printed twice, each kind's wording lost).

use crate::common::Project;

/// Exit codes (docs/commands.md): a refusal, something not there, a fault.
const REFUSED: i32 = 1;
const NOT_FOUND: i32 = 3;
const FAULT: i32 = 70;

/// `guild-hall args` fails, refused, saying exactly `want` (`{root}` stands for the project root).
fn says(p: &Project, args: &[&str], want: &str) {
    fails(p, args, REFUSED, want);
}

/// `guild-hall args` fails with exit `code`, saying exactly `want`.
fn fails(p: &Project, args: &[&str], code: i32, want: &str) {
    let (got, _, err) = p.run(args);
    assert_eq!(got, code, "{args:?}: {err}");
    let want = want.replace("{root}", &p.root.display().to_string());
    assert_eq!(err.trim_end(), want, "{args:?}");
}

#[test]
fn a_missing_artifact_is_said_in_each_kinds_words() {
    let p = Project::new(&["scribe"]);
    // Said as `logs`, `timeline` and `status` say it (one function: `Wording::missing`).
    let commission = "error: no commission \"nope\" in {root}/.lore/commissions";
    for cmd in ["cancel", "dispatch", "redispatch"] {
        fails(&p, &["commission", cmd, "nope"], NOT_FOUND, commission);
    }
    for args in [&["logs", "nope"][..], &["timeline", "nope"], &["status", "nope"]] {
        fails(&p, args, NOT_FOUND, commission);
    }
    let meeting = "error: no meeting nope ({root}/.lore/meetings/nope.md): cannot read: No such file or directory (os error 2)";
    for args in [&["meeting", "close", "nope"][..], &["meeting", "show", "nope"], &["meeting", "decline", "nope"]] {
        fails(&p, args, NOT_FOUND, meeting);
    }
    let plan = "error: no plan nope ({root}/.lore/plans/nope.md): No such file or directory (os error 2)";
    for cmd in ["show", "retry", "cancel"] {
        fails(&p, &["plan", cmd, "nope"], NOT_FOUND, plan);
    }
}

/// A refusal, something not there and a fault exit with codes of their own, so that a script
/// can tell "no" from "no such" from "broken".
#[test]
fn a_refusal_a_missing_id_and_a_fault_exit_apart() {
    let p = Project::new(&["scribe"]);
    p.write_commission("k", "---\ntitle: K\nworker: scribe\nstatus: completed\nattempt: 1\n---\nDone.\n");
    let (code, _, err) = p.run(&["status", "--status", "bogus"]);
    assert_eq!(code, REFUSED, "{err}");
    assert!(err.contains("--status \"bogus\": expected one of"), "{err}");
    fails(&p, &["timeline", "nope"], NOT_FOUND, "error: no commission \"nope\" in {root}/.lore/commissions");
    // Its timeline a directory: reading it is an I/O error (EISDIR), not the caller's doing.
    let timeline = p.root.join(".lore/commissions/k.timeline.jsonl");
    std::fs::create_dir_all(&timeline).expect("a directory where the timeline should be");
    let (code, _, err) = p.run(&["timeline", "k"]);
    assert_eq!(code, FAULT, "{err}");
    assert!(err.starts_with("error: ") && err.contains("Is a directory"), "{err}");
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
