//! The worker packages bundled in the binary: `workers add` and
//! `workers --available`; a commission whose worker is not installed waits, and every command
//! says so alike; `init` says what to do next; and the whole first hour with nothing but the
//! installed binary.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::common::{git, wait_status, Project, Service};

/// What `guild-hall` is run with when only the binary is installed: a copy of it in a
/// directory of its own, on a PATH of that directory and the system's tools (none of the
/// source tree), a fresh home, git's configuration kept out.
fn installed(bin_dir: &Path, home: &Path, user_home: &Path, cwd: &Path) -> impl Fn(&[&str]) -> (i32, String, String) {
    let (bin_dir, home, user_home, cwd) = (bin_dir.to_path_buf(), home.to_path_buf(), user_home.to_path_buf(), cwd.to_path_buf());
    move |args: &[&str]| {
        let out = Command::new(bin_dir.join("guild-hall"))
            .args(args)
            .current_dir(&cwd)
            .env_clear()
            .env("PATH", format!("{}:/usr/local/bin:/usr/bin:/bin", bin_dir.display()))
            .env("HOME", &user_home)
            .env("GUILD_HALL_HOME", &home)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .expect("the installed binary runs");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }
}

/// A person with only the installed binary — no source tree, no examples — gets from `init`
/// to a merged commission with a bundled package, and `land` brings it to their branch; and
/// holds a meeting with the bundled `counsel`, its work merged on close.
#[test]
fn only_the_binary_from_init_to_landed_work() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let bin_dir = tmp.path().join("bin");
    std::fs::create_dir_all(&bin_dir).expect("mkdir");
    std::fs::copy(assert_cmd::cargo::cargo_bin("guild-hall"), bin_dir.join("guild-hall")).expect("copy the binary");
    let repo = tmp.path().join("repo");
    std::fs::create_dir_all(&repo).expect("mkdir");
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["config", "user.name", "Test Person"]);
    git(&repo, &["config", "user.email", "person@example.com"]);
    std::fs::write(repo.join("README.md"), "# mine\n").expect("write");
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "initial"]);
    let user_home = tmp.path().join("user-home");
    std::fs::create_dir_all(&user_home).expect("mkdir");
    let gh = installed(&bin_dir, &tmp.path().join("home"), &user_home, &repo);
    let ok = |args: &[&str]| {
        let (code, out, err) = gh(args);
        assert_eq!(code, 0, "guild-hall {args:?}\nstdout:\n{out}\nstderr:\n{err}");
        out
    };

    let out = ok(&["init"]);
    assert!(out.contains("guild-hall workers add scribe"), "init says what to do next: {out}");
    ok(&["workers", "add", "scribe"]);
    // The scripted-researcher too, into the home: it also runs without the source tree.
    ok(&["workers", "add", "scripted-researcher", "--user"]);
    let hello =
        ok(&["commission", "create", "--worker", "scribe", "--title", "Hello", "--prompt", "output: .lore/notes/hello.md\nSay hello."]);
    let hello = hello.trim();
    let survey = ok(&["commission", "create", "--worker", "scripted-researcher", "--title", "Survey", "--prompt", "Crash recovery"]);
    let survey = survey.trim();
    ok(&["reconcile", "--once", "--wait", "--timeout", "120s"]);
    for id in [hello, survey] {
        let s: Value = serde_json::from_str(&ok(&["status", id, "--json"])).expect("json");
        assert_eq!(s["status"], "completed", "{s}");
    }
    let log = git(&repo, &["log", "claude/main", "--format=%B"]);
    assert!(log.contains(&format!("Guild-Hall-Commission: {hello} attempt 1")), "{log}");
    assert!(git(&repo, &["show", "claude/main:.lore/notes/hello.md"]).contains("Say hello."));
    assert!(git(&repo, &["show", &format!("claude/main:.lore/reports/{survey}.md")]).contains("Crash recovery"));

    ok(&["land"]);
    assert_eq!(git(&repo, &["rev-parse", "main"]), git(&repo, &["rev-parse", "claude/main"]));
    assert!(std::fs::read_to_string(repo.join(".lore/notes/hello.md")).expect("landed in the checkout").contains("Say hello."));

    // A meeting too, with the bundled counsel: a turn streamed, and the close merges its work.
    ok(&["workers", "add", "counsel"]);
    let out = ok(&["meeting", "start", "--worker", "counsel", "--id", "talk", "Hello\nlink: .lore/notes/talk.md"]);
    assert!(out.contains("You said: Hello"), "{out}");
    ok(&["meeting", "close", "talk"]);
    let log = git(&repo, &["log", "claude/main", "--format=%B"]);
    assert!(log.contains("Guild-Hall-Meeting: talk"), "{log}");
    assert!(git(&repo, &["show", "claude/main:.lore/notes/talk.md"]).contains("Written in meeting talk."));
}

/// A commission written before its worker is installed used to be used up (attempt
/// 1 failed) while `check` failed on it, `status` showed a bare `pending` and `--dry-run` said
/// it would dispatch. It waits, and the four commands say the same; it runs once the package
/// is there.
#[test]
fn a_commission_for_a_missing_worker_waits_and_every_command_says_so() {
    let p = Project::new(&[]);
    p.write_commission("hello", "---\ntitle: Hello\nworker: scribe\n---\noutput: .lore/reports/hello.md\nSay hello.\n");
    let here = p.root.join(".lore/workers/scribe/").display().to_string();
    let home = p.home.join("workers/scribe/").display().to_string();
    let names_both = |s: &str| s.contains("worker \"scribe\" is not installed") && s.contains(&here) && s.contains(&home);

    let (code, out, err) = p.run(&["check"]);
    assert_eq!(code, 0, "waiting is not an error: {out}{err}");
    assert!(out.starts_with("ok: 1 commission") && out.contains("1 waiting for a worker"), "{out}");
    assert!(out.lines().any(|l| l.contains("hello.md:") && l.contains("commission hello waits") && names_both(l)), "{out}");
    let problems: Value = serde_json::from_str(&p.ok(&["check", "--json"])).expect("json");
    assert!(problems.as_array().is_some_and(|a| a.iter().any(|x| x["message"].as_str().is_some_and(names_both))), "{problems}");

    let table = p.ok(&["status"]);
    assert!(table.lines().any(|l| l.starts_with("hello ") && l.contains("pending") && names_both(l)), "{table}");
    let row = p.status_json("hello");
    assert!(row["waiting"].as_str().is_some_and(names_both), "{row}");

    let plan = p.ok(&["reconcile", "--dry-run"]);
    assert!(plan.contains("status -> blocked") && names_both(&plan), "{plan}");
    assert!(!plan.contains("dispatch"), "{plan}");

    let out = p.ok(&["reconcile", "--once"]);
    assert!(names_both(&out), "{out}");
    let row = p.status_json("hello");
    assert_eq!(row["status"], "blocked", "{row}");
    assert_eq!(row["attempt"], 0, "no attempt spent: {row}");
    assert!(row["reason"].as_str().is_some_and(names_both), "{row}");
    assert!(!p.branches().iter().any(|b| b.contains("commission/hello")), "{:?}", p.branches());
    // It stays so: nothing to do, and `--wait` ends at once.
    assert!(p.settle().contains("nothing to do"));
    assert_eq!(p.status("hello"), "blocked");

    p.ok(&["workers", "add", "scribe"]);
    assert!(p.ok(&["check"]).starts_with("ok: 1 commission, 0 meetings, 0 plans, 1 worker package\n"));
    p.settle();
    let row = p.status_json("hello");
    assert_eq!(row["status"], "completed", "{row}");
    assert_eq!(row["attempt"], 1, "{row}");
    assert!(row["waiting"].is_null() && row["reason"].is_null(), "{row}");
}

/// A package of the awaited name that cannot be used yet (a person still writing its
/// `worker.yaml`: a misspelt key) keeps the commission waiting, no attempt spent, and the
/// commands agree; fixed, it runs.
#[test]
fn a_broken_package_keeps_a_waiting_commission_waiting() {
    let p = Project::new(&[]);
    p.write_commission("w", "---\ntitle: W\nworker: scribe\n---\noutput: .lore/reports/w.md\n");
    p.ok(&["reconcile", "--once"]);
    assert_eq!(p.status("w"), "blocked");
    p.ok(&["workers", "add", "scribe"]);
    let y = p.root.join(".lore/workers/scribe/worker.yaml");
    let good = std::fs::read_to_string(&y).expect("yaml");
    std::fs::write(&y, good.replace("capabilities:", "capabilites:")).expect("write");

    let (code, out, _) = p.run(&["check"]);
    assert_eq!(code, 1, "the package is invalid: {out}");
    assert!(out.contains("commission w waits"), "{out}");
    // A pass says the package is invalid (exit 1, as `check`), and starts nothing.
    let (_, plan, _) = p.run(&["reconcile", "--dry-run"]);
    assert!(plan.contains("is invalid") && !plan.contains("dispatch"), "{plan}");
    p.run(&["reconcile", "--once"]);
    let row = p.status_json("w");
    assert_eq!((row["status"].as_str(), row["attempt"].as_u64()), (Some("blocked"), Some(0)), "{row}");
    assert!(row["reason"].as_str().is_some_and(|r| r.contains("scribe")), "{row}");

    std::fs::write(&y, good).expect("write");
    p.settle();
    assert_eq!(p.status("w"), "completed", "{}", p.artifact("w"));
}

/// A package written file by file — its `worker.yaml` before its command — keeps the
/// commission waiting until the command is there; then it runs.
#[test]
fn a_package_written_file_by_file_costs_no_attempt() {
    let p = Project::new(&[]);
    p.write_commission("f", "---\ntitle: F\nworker: fresh\n---\nx\n");
    p.ok(&["reconcile", "--once"]);
    let dir = p.root.join(".lore/workers/fresh");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(dir.join("worker.yaml"), "name: fresh\ncommand: [\"./run.sh\"]\ncapabilities: [commission]\n").expect("yaml");
    p.ok(&["reconcile", "--once"]);
    let row = p.status_json("f");
    assert_eq!((row["status"].as_str(), row["attempt"].as_u64()), (Some("blocked"), Some(0)), "{row}");
    assert!(row["reason"].as_str().is_some_and(|r| r.contains("run.sh") && r.contains("not found")), "{row}");
    // The package missing its command is a problem of `check` (at its worker.yaml), and the
    // commission waiting for it is said too.
    let (code, out, _) = p.run(&["check"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("commission f waits") && out.contains("run.sh"), "{out}");
    assert!(out.lines().any(|l| l.contains("fresh/worker.yaml:2:10: command ./run.sh not found")), "{out}");
    let script = "#!/bin/sh\n\"$GUILD_HALL_BIN\" toolbox submit-result --summary done\n";
    std::fs::write(dir.join("run.sh"), script).expect("run.sh");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.join("run.sh"), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    p.settle();
    assert_eq!(p.status("f"), "completed", "{}", p.artifact("f"));
}

/// `check` asks a worker only of work still to run: finished history whose package is gone or
/// broken since is not an error.
#[test]
fn check_leaves_finished_work_alone_when_its_package_goes() {
    let p = Project::new(&[]);
    p.ok(&["workers", "add", "scribe"]);
    let id = p.create("scribe", "Done", "output: .lore/reports/done.md");
    let other = p.create("scribe", "Also done", "output: .lore/reports/also.md");
    crate::worker::one_package::one_task_plan(&p, "notes", "scribe");
    p.settle();
    assert_eq!((p.status(&id), p.status(&other)), ("completed".to_string(), "completed".to_string()));
    let dir = p.root.join(".lore/workers/scribe");
    std::fs::remove_dir_all(&dir).expect("rm");
    let (code, out, err) = p.run(&["check"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(!out.contains("scribe"), "{out}");
    // A broken package is said once, at its own file, not again for each piece of finished work.
    p.ok(&["workers", "add", "scribe"]);
    let yaml = std::fs::read_to_string(dir.join("worker.yaml")).expect("yaml");
    std::fs::write(dir.join("worker.yaml"), format!("{yaml}timout: 1h\n")).expect("write");
    let (code, out, err) = p.run(&["check"]);
    assert_eq!(code, 1, "{out}{err}");
    assert_eq!(out.lines().filter(|l| l.contains("timout")).count(), 1, "{out}");
}

/// With `dispatch: manual`, a dispatch asked for while the commission waits for its worker is
/// kept, not consumed, and carried out once the package is there.
#[test]
fn a_manual_dispatch_of_a_waiting_commission_runs_once_its_worker_is_there() {
    let p = Project::new(&[]);
    p.config("dispatch: manual\n");
    p.write_commission("m", "---\ntitle: M\nworker: scribe\n---\noutput: .lore/reports/m.md\n");
    p.ok(&["reconcile", "--once"]);
    assert_eq!(p.status("m"), "blocked");
    let out = p.ok(&["commission", "dispatch", "m"]);
    assert!(out.contains("desired: dispatched"), "{out}");
    p.ok(&["reconcile", "--once"]);
    let text = p.artifact("m");
    assert!(text.contains("desired: dispatched") && text.contains("status: blocked"), "kept while it waits: {text}");
    assert!(!text.contains("refused"), "{text}");
    p.ok(&["workers", "add", "scribe"]);
    p.settle();
    assert_eq!(p.status("m"), "completed", "{}", p.artifact("m"));
}

/// Under `watch`, a package written into the home's `workers/` or the project's
/// `.lore/workers/` is seen, and the commission waiting for it runs.
#[test]
fn watch_runs_waiting_work_when_its_package_appears() {
    let p = Project::new(&[]);
    // No resync to stumble on the package: only its files wake the watcher.
    let svc = Service::start(&p, &[], &["--resync", "1h"]);
    p.write_commission("in-home", "---\ntitle: A\nworker: scripted-researcher\n---\nTopic A\n");
    p.write_commission("in-project", "---\ntitle: B\nworker: scribe\n---\nSay B.\n");
    wait_status(&p, "in-home", "blocked");
    wait_status(&p, "in-project", "blocked");
    // The passes its own writes wake are over before the package appears (else one of them
    // would find it without the watcher having seen it).
    std::thread::sleep(std::time::Duration::from_secs(1));
    p.ok(&["workers", "add", "scripted-researcher", "--user"]);
    wait_status(&p, "in-home", "completed");
    assert_eq!(p.status("in-project"), "blocked");
    p.ok(&["workers", "add", "scribe"]);
    wait_status(&p, "in-project", "completed");
    drop(svc);
}

#[test]
fn workers_add_writes_a_bundled_package_and_never_over_one() {
    use std::os::unix::fs::PermissionsExt;
    let p = Project::new(&[]);
    let added: Value = serde_json::from_str(&p.ok(&["workers", "add", "scribe", "--json"])).expect("json");
    let dir = p.root.join(".lore/workers/scribe");
    assert_eq!(added["name"], "scribe");
    assert_eq!(added["dir"], dir.display().to_string());
    let run = dir.join("run.sh");
    assert_eq!(std::fs::metadata(&run).expect("run.sh").permissions().mode() & 0o777, 0o755);
    assert_eq!(std::fs::metadata(dir.join("worker.yaml")).expect("worker.yaml").permissions().mode() & 0o777, 0o644);
    let source = std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/workers/scribe/run.sh")).expect("source");
    assert_eq!(std::fs::read(&run).expect("read"), source, "the bundled file is the source tree's");

    // A person's edit is never overwritten: the directory exists, nothing is written.
    std::fs::write(&run, "#!/bin/sh\necho mine\n").expect("edit");
    let (code, _, err) = p.run(&["workers", "add", "scribe"]);
    assert_eq!(code, 1);
    assert!(err.contains(&format!("{} already exists: nothing written", dir.display())), "{err}");
    assert_eq!(std::fs::read_to_string(&run).expect("read"), "#!/bin/sh\necho mine\n");

    // An unknown name: the bundled ones, and the one meant.
    let (code, _, err) = p.run(&["workers", "add", "scirbe"]);
    assert_eq!(code, 1);
    assert!(err.contains("no bundled worker package \"scirbe\" (did you mean \"scribe\"?)"), "{err}");
    assert!(["scribe", "scripted-researcher", "claude-code", "claude-code-coder"].iter().all(|n| err.contains(n)), "{err}");
    assert!(!p.root.join(".lore/workers/scirbe").exists());

    // Into the home with --user; nothing hidden is left behind by either.
    p.ok(&["workers", "add", "claude-code", "--user"]);
    assert!(p.home.join("workers/claude-code/worker.yaml").is_file());
    for d in [p.root.join(".lore/workers"), p.home.join("workers")] {
        let hidden: Vec<_> = std::fs::read_dir(&d)
            .expect("dir")
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().starts_with('.'))
            .collect();
        assert!(hidden.is_empty(), "{hidden:?}");
    }

    // --available: every bundled package, with where it is installed here.
    let list: Value = serde_json::from_str(&p.ok(&["workers", "--available", "--json"])).expect("json");
    let by = |n: &str| list.as_array().and_then(|a| a.iter().find(|x| x["name"] == n).cloned()).unwrap_or(Value::Null);
    assert_eq!(by("scribe")["installed"], "project", "{list}");
    assert_eq!(by("claude-code")["installed"], "home", "{list}");
    assert!(by("scripted-researcher")["installed"].is_null(), "{list}");
    assert_eq!(by("claude-code")["capabilities"], serde_json::json!(["commission", "meeting"]), "{list}");
    assert!(by("scripted-researcher")["description"].as_str().is_some_and(|d| !d.is_empty()), "{list}");
    let table = p.ok(&["workers", "--available"]);
    assert!(table.lines().any(|l| l.starts_with("scripted-researcher ") && l.contains(" no ")), "{table}");
    assert!(table.lines().any(|l| l.starts_with("scribe ") && l.contains("yes (project)")), "{table}");
    // `workers` alone still lists what is installed.
    let installed = p.ok(&["workers"]);
    assert!(installed.contains("scribe") && installed.contains("claude-code") && !installed.contains("scripted-researcher"), "{installed}");
}

#[test]
fn init_ends_with_the_next_commands() {
    let p = Project::new(&[]);
    let out = p.ok(&["init"]);
    let next = out.split("next:").nth(1).unwrap_or_else(|| panic!("{out}"));
    for cmd in [
        "guild-hall workers --available",
        "guild-hall workers add scribe",
        "guild-hall commission create",
        "guild-hall reconcile --once --wait",
        "guild-hall watch",
        "guild-hall land",
    ] {
        assert!(next.contains(cmd), "{cmd} in {out}");
    }
}

/// A plan whose task's worker is not installed waits, pending with the reason, and every
/// command says so alike (`check` lists it without failing, a pass holds it, `--wait` ends);
/// it starts once the package is there. `plan create` refuses such a plan up front, as
/// `commission create` refuses a missing worker. A meeting opened for a missing worker is put
/// back to `requested`, in the same words.
#[test]
fn plans_and_meetings_say_the_same_of_a_missing_worker() {
    let p = Project::new(&[]);
    let here = p.root.join(".lore/workers/scribe/").display().to_string();
    let says =
        |s: &str| s.contains("worker \"scribe\" is not installed") && s.contains(&here) && s.contains("guild-hall workers add scribe");
    std::fs::create_dir_all(p.root.join(".lore/plans")).expect("mkdir");
    std::fs::write(
        p.root.join(".lore/plans/notes.md"),
        "---\ntitle: notes\nwaves:\n  - - {id: one, worker: scribe, prompt: \"Do it.\"}\n---\n",
    )
    .expect("write plan");
    std::fs::create_dir_all(p.root.join(".lore/meetings")).expect("mkdir");
    std::fs::write(p.root.join(".lore/meetings/talk.md"), "---\ntitle: Talk\nworker: scribe\nstatus: open\nagenda: Talk.\n---\n")
        .expect("write meeting");

    let (code, out, err) = p.run(&["check"]);
    assert_eq!(code, 0, "waiting is not an error: {out}{err}");
    assert!(out.lines().any(|l| l.contains("notes.md:") && l.contains("plan notes waits") && says(l)), "{out}");
    let dry = p.ok(&["reconcile", "--dry-run"]);
    assert!(!dry.contains("start wave"), "{dry}");
    p.settle();
    let plan: Value = serde_json::from_str(&p.ok(&["plan", "show", "notes", "--json"])).expect("json");
    assert_eq!(plan["status"], "pending", "{plan}");
    assert!(plan["reason"].as_str().is_some_and(|r| r.starts_with("waits: task notes:exec:wave-1:task-1 (one)") && says(r)), "{plan}");
    let meeting = std::fs::read_to_string(p.root.join(".lore/meetings/talk.md")).expect("read");
    assert!(meeting.contains("status: requested") && says(&meeting), "{meeting}");

    let waves = p.tmp.path().join("waves.yaml");
    std::fs::write(&waves, "- - {id: two, worker: scribe, prompt: \"Do it.\"}\n").expect("waves");
    let (code, _, err) = p.run(&["plan", "create", "--title", "More", waves.to_str().expect("utf8")]);
    assert_ne!(code, 0);
    assert!(err.contains("task two") && err.contains("nothing written") && err.contains("guild-hall workers add scribe"), "{err}");
    assert!(!p.root.join(".lore/plans/more.md").exists());

    p.ok(&["workers", "add", "scribe"]);
    p.settle();
    let plan: Value = serde_json::from_str(&p.ok(&["plan", "show", "notes", "--json"])).expect("json");
    assert_eq!(plan["status"], "completed", "{plan}");
    assert!(plan["reason"].is_null(), "{plan}");
}

/// Every agent package writes an agent home of its own, named after the package
/// (its script sets the agent's home from GUILD_HALL_WORKER): never the person's `~/.codex`,
/// `~/.gemini` or `~/.claude`, never another package's.
#[test]
fn each_agent_package_writes_a_home_of_its_own() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("contrib/workers");
    let packages = [
        ("codex", ".codex"),
        ("codex-coder", ".codex"),
        ("codex-acp", ".codex"),
        ("codex-acp-coder", ".codex"),
        ("gemini", ".gemini"),
        ("gemini-coder", ".gemini"),
        ("gemini-acp", ".gemini"),
        ("gemini-acp-coder", ".gemini"),
        ("claude-code-acp", ".claude"),
        ("claude-code-acp-coder", ".claude"),
        ("claude-code", ".claude"),
        ("claude-code-coder", ".claude"),
    ];
    let mut homes = Vec::new();
    for (name, agent) in packages {
        let yaml = std::fs::read_to_string(dir.join(name).join("worker.yaml")).expect("worker.yaml");
        let m: serde_yaml_ng::Value = serde_yaml_ng::from_str(&yaml).expect("yaml");
        let write: Vec<String> =
            m["sandbox"]["write"].as_sequence().into_iter().flatten().filter_map(|v| v.as_str().map(str::to_string)).collect();
        let home = format!("~/{agent}/guild-hall-{name}");
        assert!(write.contains(&home), "{name} writes {home}: {write:?}");
        for w in &write {
            assert!(!w.contains("${") && w != &format!("~/{agent}"), "{name} writes only its own home: {w}");
            assert!(w == &home || !w.starts_with(&format!("~/{agent}")), "{name}: {w}");
        }
        for var in ["CODEX_HOME", "CLAUDE_CONFIG_DIR", "GEMINI_CLI_HOME"] {
            assert!(
                !yaml.contains(&format!("pass_env: [{var}")) && !yaml.contains(&format!(", {var}")),
                "{name} takes no {var} from outside"
            );
        }
        let scripts: String = std::fs::read_dir(dir.join(name))
            .expect("package dir")
            .flatten()
            .filter(|e| e.path().extension().is_some_and(|x| x == "sh"))
            .filter_map(|e| std::fs::read_to_string(e.path()).ok())
            .collect();
        assert!(scripts.contains(&format!("$HOME/{agent}/guild-hall-$GUILD_HALL_WORKER")), "{name}'s script sets its home");
        homes.push(home);
    }
    let mut distinct = homes.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), homes.len(), "{homes:?}");
}

/// Every bundled package whose scripts run an agent CLI declares it in `requires:`, so that its
/// work waits (and `check` says so) where the CLI is missing, instead of spending an attempt on
/// "not found".
#[test]
fn every_bundled_agent_package_requires_its_cli() {
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    for dir in ["contrib/workers", "examples/workers"] {
        for pkg in std::fs::read_dir(root.join(dir)).expect("packages").map(|e| e.expect("entry").path()) {
            let Ok(yaml) = std::fs::read_to_string(pkg.join("worker.yaml")) else { continue };
            let scripts: String = std::fs::read_dir(&pkg)
                .expect("files")
                .map(|e| e.expect("entry").path())
                .filter(|f| f.extension().is_some_and(|x| x == "sh"))
                .map(|f| std::fs::read_to_string(f).unwrap_or_default())
                .collect();
            for cli in ["claude", "codex", "gemini"] {
                let runs = scripts.lines().any(|l| {
                    let l = l.trim_start();
                    !l.starts_with('#')
                        && (l.starts_with(&format!("{cli} ")) || l.contains(&format!("exec {cli} ")) || l.contains(&format!("| {cli} ")))
                });
                if runs {
                    assert!(
                        yaml.contains("requires:") && yaml.contains(cli),
                        "{} runs {cli} but does not require it:\n{yaml}",
                        pkg.display()
                    );
                }
            }
        }
    }
}
