//! The first hour: what a newcomer reads is said as a person would say it.

use crate::common::{git, Project};

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
        assert_eq!(code, 3, "not found: {cmd}: {out}{err}");
        assert!(err.contains("no commission \"nope\" in "), "{cmd}: {err}");
    }
    let id = p.create("scribe", "Hello", "Say hello.");
    let (code, _, err) = p.run(&["logs", &id]);
    assert_eq!(code, 1);
    assert!(err.contains("has not been dispatched yet"), "{err}");
}

/// A request the reconciler would refuse is refused up front, nothing written: `dispatch` of a
/// completed commission (whose refusal would hide its result), `cancel` of a cancelled one.
#[test]
fn dispatch_and_cancel_check_up_front() {
    let p = Project::new(&["scribe"]);
    let id = p.create("scribe", "Hello", "output: .lore/reports/hello.md\nSay hello.");
    p.settle();
    assert_eq!(p.status(&id), "completed");
    let before = std::fs::read(p.root.join(format!(".lore/commissions/{id}.md"))).expect("read");
    let (code, out, err) = p.run(&["commission", "dispatch", &id]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains(&format!("{id} is completed: a completed commission is final")) && err.contains("nothing written"), "{err}");
    for cmd in ["cancel", "redispatch"] {
        let (code, out, err) = p.run(&["commission", cmd, &id]);
        assert_eq!(code, 1, "{cmd}: {out}{err}");
    }
    assert_eq!(std::fs::read(p.root.join(format!(".lore/commissions/{id}.md"))).expect("read"), before, "nothing written");

    let other = p.create("scribe", "Other", "Say it.");
    p.ok(&["commission", "cancel", &other]);
    p.settle();
    assert_eq!(p.status(&other), "cancelled");
    let (code, out, err) = p.run(&["commission", "cancel", &other]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("is cancelled: the commission is already over"), "{err}");
    p.ok(&["commission", "dispatch", &other]);
}

/// `init`'s next steps, run as printed (TITLE and TEXT filled in), leave the person's checkout
/// with nothing of `.lore/` untracked or changed: it says to commit `.lore/`, and how.
#[test]
fn init_says_to_commit_lore_and_following_it_leaves_nothing_untracked() {
    let p = Project::new(&[]);
    let out = p.ok(&["init"]);
    let next = out.split("\nnext:\n").nth(1).unwrap_or_else(|| panic!("{out}"));
    let commands: Vec<&str> = next.lines().filter(|l| l.starts_with("  ") && !l.starts_with("    ")).map(str::trim).collect();
    assert!(commands.iter().any(|c| c.starts_with("git add .lore && git commit -m ")), "init says to commit .lore/: {out}");
    for c in &commands {
        let c = c.replace("TITLE", "First").replace("TEXT", "'output: .lore/notes/first.md'");
        let ran = if let Some(args) = c.strip_prefix("guild-hall ") {
            let words = crate::docs::shell_words(args);
            let args: Vec<&str> = words.iter().map(String::as_str).collect();
            let (code, out, err) = p.run(&args);
            (code, format!("{out}{err}"))
        } else {
            let o = std::process::Command::new("sh").arg("-c").arg(&c).current_dir(&p.root).output().expect("sh");
            (o.status.code().unwrap_or(-1), format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr)))
        };
        assert_eq!(ran.0, 0, "init's `{c}` failed:\n{}", ran.1);
    }
    assert_eq!(git(&p.root, &["status", "--porcelain"]), "", "after init's steps, nothing is left uncommitted");
    let tracked = git(&p.root, &["ls-files", ".lore/commissions", ".lore/workers"]);
    assert!(tracked.contains(".lore/commissions/first.md") && tracked.contains(".lore/workers/scribe/worker.yaml"), "{tracked}");
    assert_eq!(git(&p.root, &["show", "main:.lore/notes/first.md"]).lines().next(), Some("# first"), "the work landed");
}
