//! One fact, one wording, whichever command meets it: a worker that is not installed, a
//! commission id that names nothing, a plan's waves with a problem (said at the WAVES input's
//! own line:col), a timeline asked by any artifact's id.

use crate::common::Project;

/// `guild-hall args` fails; its stderr.
fn fails(p: &Project, args: &[&str]) -> String {
    let (code, out, err) = p.run(args);
    assert_ne!(code, 0, "{args:?} should fail: {out}{err}");
    err
}

/// `commission create`, `meeting start`, `job dispatch` and `plan create` say a worker is
/// not installed in the pass's words (`Catalog::not_installed`): where packages are looked
/// for, a did-you-mean for a near name, how to install a bundled one.
#[test]
fn a_worker_not_installed_is_said_alike_by_every_entry_point() {
    let p = Project::new(&["scribe"]);
    let root = p.root.display().to_string();
    let home = p.home.display().to_string();
    let scrib = format!(
        "worker \"scrib\" is not installed (no package in {root}/.lore/workers/scrib/ nor {home}/workers/scrib/): did you mean \"scribe\"? (`guild-hall workers --available` lists the bundled packages)"
    );
    let err = fails(&p, &["commission", "create", "--worker", "scrib", "--title", "t", "--prompt", "p"]);
    assert_eq!(err.trim_end(), format!("error: {scrib}; nothing written"));
    let err = fails(&p, &["job", "dispatch", "--description", "x", "--task", "y", "--config", r#"{"worker":"scrib"}"#]);
    assert!(err.contains(&format!("config.worker: {scrib}")), "{err}");
    let waves = p.root.join("w.yaml");
    std::fs::write(&waves, "- - {id: a, worker: scrib, prompt: x}\n").expect("write");
    let err = fails(&p, &["plan", "create", "--title", "t", waves.to_str().expect("utf8")]);
    assert!(err.contains(&scrib), "{err}");
    let claude = format!(
        "worker \"claude-code\" is not installed (no package in {root}/.lore/workers/claude-code/ nor {home}/workers/claude-code/): `guild-hall workers add claude-code` installs it"
    );
    let err = fails(&p, &["meeting", "start", "--worker", "claude-code", "hello"]);
    assert_eq!(err.trim_end(), format!("error: {claude}; nothing written"));
    let err = fails(&p, &["commission", "create", "--worker", "claude-code", "--title", "t", "--prompt", "p"]);
    assert_eq!(err.trim_end(), format!("error: {claude}; nothing written"));
    // And `check`, of a hand-written file, in the same words.
    p.write_commission("hand", "---\ntitle: h\nworker: scrib\n---\nbody\n");
    let (_, out, err) = p.run(&["check"]);
    assert!(format!("{out}{err}").contains(&scrib), "{out}{err}");
}

/// `plan create`'s problems are said against the WAVES input (its path, or `<stdin>`) at its
/// own line:col — never against the plan file, which is not written — and a WAVES file of
/// another shape is told the shape.
#[test]
fn plan_create_points_at_the_waves_input() {
    let p = Project::new(&["scribe"]);
    let out = assert_cmd::Command::from_std(p.cmd())
        .args(["plan", "create", "--title", "Bad", "-"])
        .write_stdin("- - {id: a, worker: scribe, promt: \"x\"}\n")
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert_eq!(
        err.trim_end(),
        "error: <stdin>:1:5: wave 1, task a: needs `prompt:`, what the task is to achieve\n<stdin>:1:29: wave 1, task a: unknown key `promt`: did you mean `prompt`?"
    );
    assert!(!p.root.join(".lore/plans/bad.md").exists());
    // A file: its path, its lines (a document marker and a comment included), its columns.
    let waves = p.root.join("w.yaml");
    let w = waves.display();
    std::fs::write(&waves, "---\n# two waves\n- - {id: a, worker: scribe, prompt: x}\n  - id: b\n    worker: scribx\n    prompt: y\n- - {id: c, worker: scribe, prompt: z, timeout: soon}\n")
        .expect("write");
    let err = fails(&p, &["plan", "create", "--title", "t", &w.to_string()]);
    assert!(err.starts_with(&format!("error: {w}:7:49: wave 2, task c: bad timeout \"soon\"")), "{err}");
    let text = std::fs::read_to_string(&waves).expect("read").replace(", timeout: soon", "");
    std::fs::write(&waves, &text).expect("write");
    let err = fails(&p, &["plan", "create", "--title", "t", &w.to_string()]);
    assert!(err.starts_with(&format!("error: {w}:5:13: task b: worker \"scribx\" is not installed")), "{err}");
    std::fs::write(&waves, text.replace("scribx", "scribe")).expect("write");
    let id = p.ok(&["plan", "create", "--title", "t", &w.to_string()]).trim().to_string();
    // The waves kept as written, comments too, and valid.
    let plan = std::fs::read_to_string(p.root.join(".lore/plans").join(format!("{id}.md"))).expect("plan");
    assert!(plan.contains("waves:\n  # ---\n  # two waves\n  - - {id: a, worker: scribe, prompt: x}\n"), "{plan}");
    p.ok(&["check"]);
    // A mapping with `waves:` is told what the file must be, and shown the shape.
    std::fs::write(&waves, "waves:\n  - - {id: a, worker: scribe, prompt: x}\n").expect("write");
    let err = fails(&p, &["plan", "create", "--title", "t3", &w.to_string()]);
    assert!(
        err.starts_with(&format!(
            "error: {w}:1:1: must be a list of waves (a sequence of sequences of tasks) (this one is a mapping with `waves:`"
        )),
        "{err}"
    );
    assert!(err.contains("\n- - {id: a, worker: scribe, prompt: \"...\"}"), "{err}");
}
