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
    assert!(
        err.starts_with(&format!("error: {w}:7:49: wave 2, task c: timeout \"soon\" is not a duration: write it like 30m, 2h or 90s")),
        "{err}"
    );
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

/// Every file under `.lore/`, by path.
fn lore(p: &Project) -> std::collections::BTreeMap<std::path::PathBuf, Vec<u8>> {
    fn walk(dir: &std::path::Path, out: &mut std::collections::BTreeMap<std::path::PathBuf, Vec<u8>>) {
        for e in std::fs::read_dir(dir).expect("read dir") {
            let path = e.expect("entry").path();
            if path.is_dir() {
                walk(&path, out);
            } else {
                out.insert(path.clone(), std::fs::read(&path).expect("read"));
            }
        }
    }
    let mut out = Default::default();
    walk(&p.root.join(".lore"), &mut out);
    out
}

/// `guild-hall timeline <id> --json`'s `created` events.
fn created(p: &Project, home: &std::path::Path, id: &str) -> Vec<String> {
    let out = p.cmd().env("GUILD_HALL_HOME", home).args(["timeline", id, "--json"]).output().expect("runs");
    assert!(out.status.success(), "timeline {id}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("a JSON line"))
        .filter(|e| e["kind"] == "created")
        .map(|e| e["status"].as_str().unwrap_or("").to_string())
        .collect()
}

/// Every artifact of every kind opens its timeline with exactly one `created <status>`, when
/// first met, whatever its status — a draft plan, a commission or plan written already over —
/// however many passes; a fresh home over the same checkout adds none and changes no file
/// under `.lore/`. `timeline <id>` shows a meeting's and a plan's (an id two kinds hold is
/// refused, naming them).
#[test]
fn every_artifact_is_created_once_whatever_its_status() {
    let p = Project::new(&["scribe"]);
    p.write_commission("over", "---\ntitle: over\nworker: scribe\nstatus: cancelled\n---\nbody\n");
    p.write_commission("gone", "---\ntitle: gone\nworker: scribe\nstatus: failed\n---\nbody\n");
    p.write_commission("later", "---\ntitle: later\nworker: scribe\nstatus: draft\n---\nbody\n");
    std::fs::create_dir_all(p.root.join(".lore/meetings")).expect("mkdir");
    std::fs::write(p.root.join(".lore/meetings/met.md"), "---\ntitle: met\nworker: scribe\nstatus: closed\n---\nagenda\n").expect("write");
    let waves = p.root.join("w.yaml");
    std::fs::write(&waves, "- - {id: a, worker: scribe, prompt: x}\n").expect("write");
    p.ok(&["plan", "create", "--title", "sketch", "--draft", waves.to_str().expect("utf8")]);
    std::fs::write(
        p.root.join(".lore/plans/dropped.md"),
        "---\ntitle: dropped\nstatus: cancelled\nwaves:\n  - - {id: a, worker: scribe, prompt: x}\n---\n",
    )
    .expect("write");
    let want =
        [("over", "cancelled"), ("gone", "failed"), ("later", "draft"), ("met", "closed"), ("sketch", "draft"), ("dropped", "cancelled")];
    for _ in 0..3 {
        p.ok(&["reconcile", "--once"]);
    }
    for (id, status) in want {
        assert_eq!(created(&p, &p.home, id), [status], "{id}");
    }
    // A fresh home over the same checkout: nothing written under .lore/, still one each.
    let before = lore(&p);
    let fresh = p.tmp.path().join("home-fresh");
    for _ in 0..2 {
        let out = p.cmd().env("GUILD_HALL_HOME", &fresh).args(["reconcile", "--once"]).output().expect("runs");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    assert!(before == lore(&p), "a fresh home changed a file under .lore/");
    for (id, status) in want {
        assert_eq!(created(&p, &fresh, id), [status], "{id}");
    }
    // A never-run cancelled commission dispatched: a re-dispatch (cancelled -> pending), its
    // timeline still opening with its one `created`.
    p.ok(&["commission", "dispatch", "over"]);
    p.settle();
    let t = p.timeline("over");
    assert_eq!(t[0]["kind"], "created", "{t:?}");
    assert_eq!(t[1]["kind"], "status", "{t:?}");
    assert_eq!((t[1]["from"].as_str(), t[1]["to"].as_str()), (Some("cancelled"), Some("pending")), "{t:?}");
    assert_eq!(created(&p, &p.home, "over"), ["cancelled"]);
    // An id that is a commission's and a plan's names no one timeline.
    std::fs::copy(p.root.join(".lore/plans/dropped.md"), p.root.join(".lore/commissions/dropped.md")).expect("copy");
    let err = fails(&p, &["timeline", "dropped"]);
    assert!(err.contains("\"dropped\" is the id of a commission (") && err.contains(") and a plan ("), "{err}");
}

/// A package is named by its directory: a copy whose `name:` was left as it was is invalid,
/// said by `check` at its `name:`, and never stands in for the package of that name (before,
/// the first in sort order won silently and `check` said nothing).
#[test]
fn a_copied_package_keeping_its_name_is_said_at_its_name() {
    let p = Project::new(&["scripted-researcher"]);
    crate::common::copy_dir(&p.root.join(".lore/workers/scripted-researcher"), &p.root.join(".lore/workers/mine"));
    let (code, out, err) = p.run(&["check"]);
    assert_eq!(code, 1, "{out}{err}");
    let yaml = p.root.join(".lore/workers/mine/worker.yaml");
    let line = std::fs::read_to_string(&yaml).expect("read").lines().position(|l| l.starts_with("name:")).expect("name:") + 1;
    let want = format!("{}:{line}:7: name: scripted-researcher is not its directory's name \"mine\"", yaml.display());
    assert!(format!("{out}{err}").lines().any(|l| l.starts_with(&want)), "wanted {want:?} in:\n{out}{err}");
    let listed: serde_json::Value = serde_json::from_str(&p.ok(&["workers", "--json"])).expect("json");
    let text = listed.to_string();
    assert!(text.contains(&p.root.join(".lore/workers/scripted-researcher").display().to_string()), "{text}");
    assert!(!text.contains("workers/mine\""), "the copy is not the package scripted-researcher: {text}");
}

/// `workers --available` inside a project whose settings are bad says so (it showed every
/// package as not installed); outside any repository it lists the bundled ones against the
/// home, and `workers add` there says `--user` installs into the home.
#[test]
fn workers_available_says_a_bad_project_and_add_outside_one_says_user() {
    let p = Project::new(&["scribe"]);
    p.config("comission_cap: 2\n");
    let err = fails(&p, &["workers", "--available"]);
    let cfg = p.root.join(".lore/guild-hall.yaml");
    assert!(err.contains(&format!("{}:1:1: unknown key `comission_cap`", cfg.display())), "{err}");
    p.config("commission_cap: 2\n");
    let out = p.ok(&["workers", "--available"]);
    assert!(out.lines().any(|l| l.starts_with("scribe") && l.contains("yes (project)")), "{out}");
    let outside = p.tmp.path().join("not-a-repo");
    std::fs::create_dir_all(&outside).expect("mkdir");
    let run = |args: &[&str]| p.cmd().current_dir(&outside).args(args).output().expect("runs");
    let out = run(&["workers", "--available"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = run(&["workers", "add", "scribe"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("is not inside a git repository") && err.contains("--user"), "{err}");
    let out = run(&["workers", "add", "scribe", "--user"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(p.home.join("workers/scribe/worker.yaml").is_file());
}
