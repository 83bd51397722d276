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
