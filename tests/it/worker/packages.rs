//! Worker packages, capabilities, the reference `scripted-researcher` package as a template, and worker
//! memory: stored by one commission, in the next one's system prompt, compacted when it grows.

use crate::common::*;

#[test]
fn the_researcher_uses_every_tool() {
    let p = Project::new(&["scripted-researcher"]);
    let id = p.create("scripted-researcher", "Crash-only", "Crash-only software\nSurvey it.");
    p.settle();
    let s = p.status_json(&id);
    assert_eq!(s["status"], "completed", "{s}");
    assert_eq!(s["questions"][0], "Is a one-page overview enough for: Crash-only software?");
    let kinds = kinds(&p.timeline(&id));
    for k in ["progress", "decision", "question", "memory", "result", "artifact", "merge"] {
        assert!(kinds.contains(&k.to_string()), "{k} in {kinds:?}");
    }
    let report = git(&p.root, &["show", &format!("claude/main:.lore/reports/{id}.md")]);
    assert!(report.contains("by worker scripted-researcher"), "{report}");
    let prompt = std::fs::read_to_string(p.state_dir(&id).join("system-prompt.md")).expect("system prompt");
    assert!(prompt.starts_with("You are a careful researcher."), "{prompt}");
    assert!(prompt.contains("submit_result"), "{prompt}");
}

#[test]
fn a_copied_package_is_a_new_worker_with_no_code_change() {
    let p = Project::new(&[]);
    p.install_worker("scripted-researcher", "analyst");
    std::fs::write(p.root.join(".lore/workers/analyst/posture.md"), "You are a terse analyst.\n").expect("posture");
    let workers: serde_json::Value = serde_json::from_str(&p.ok(&["workers", "--json"])).expect("json");
    let analyst = workers.as_array().and_then(|a| a.iter().find(|w| w["name"] == "analyst")).expect("analyst discovered");
    assert_eq!(analyst["capabilities"][0], "commission");
    assert_eq!(analyst["source"], "project");
    let id = p.create("analyst", "Numbers", "Quarterly numbers\nAnalyse.");
    p.settle();
    assert_eq!(p.status(&id), "completed");
    let prompt = std::fs::read_to_string(p.state_dir(&id).join("system-prompt.md")).expect("system prompt");
    assert!(prompt.starts_with("You are a terse analyst."), "{prompt}");
    assert!(git(&p.root, &["show", &format!("claude/main:.lore/reports/{id}.md")]).contains("by worker analyst"));
}

#[test]
fn memory_from_one_commission_reaches_the_next() {
    let p = Project::new(&["scripted-researcher"]);
    let first = p.create("scripted-researcher", "First", "Topic one\nGo.");
    p.settle();
    let memory = p.memory_dir("scripted-researcher").join("last-topic.md");
    assert_eq!(std::fs::read_to_string(&memory).expect("memory"), format!("Researched 'Topic one' in commission {first}."));
    let second = p.create("scripted-researcher", "Second", "Topic two\nGo.");
    p.settle();
    let prompt = std::fs::read_to_string(p.state_dir(&second).join("system-prompt.md")).expect("system prompt");
    assert!(prompt.contains("## Memory") && prompt.contains(&format!("Researched 'Topic one' in commission {first}.")), "{prompt}");
    // The second overwrote the key.
    assert!(std::fs::read_to_string(&memory).expect("memory").contains("Topic two"));
}

/// A package without the `commission` capability is never dispatched to: the commission waits
/// for a package it can use (blocked, no attempt spent: a person may be fixing the package),
/// and runs once the package has the capability.
#[test]
fn a_package_without_the_commission_capability_is_never_dispatched() {
    let p = Project::new(&["scribe"]);
    let y = p.root.join(".lore/workers/scribe/worker.yaml");
    let yaml = std::fs::read_to_string(&y).expect("yaml");
    std::fs::write(&y, yaml.replace("capabilities: [commission]", "capabilities: [meeting]")).expect("write");
    p.write_commission("c", "---\nworker: scribe\n---\nx\n");
    p.settle();
    let s = p.status_json("c");
    assert_eq!((s["status"].as_str(), s["attempt"].as_u64()), (Some("blocked"), Some(0)), "{s}");
    assert!(s["reason"].as_str().is_some_and(|r| r.contains("does not have the `commission` capability")), "{s}");
    assert!(p.run_info("c").is_none(), "no process was started");
    std::fs::write(&y, yaml).expect("write");
    p.settle();
    assert_eq!(p.status("c"), "completed", "{}", p.artifact("c"));
}

fn compacting_package(p: &Project, script: &str) {
    p.install_worker("scripted-researcher", "keeper");
    let dir = p.root.join(".lore/workers/keeper");
    let y = dir.join("worker.yaml");
    let text = std::fs::read_to_string(&y).expect("yaml") + "compact: [\"./compact.sh\"]\n";
    std::fs::write(&y, text).expect("write");
    std::fs::write(dir.join("compact.sh"), script).expect("write");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.join("compact.sh"), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    std::fs::write(p.home.join("config.yaml"), "memory_compact_threshold: 20\nprojects: []\n").expect("cfg");
    p.ok(&["init"]);
    let mem = p.memory_dir("keeper");
    std::fs::create_dir_all(&mem).expect("mkdir");
    std::fs::write(mem.join("a.md"), "first memory, long enough").expect("write");
    std::fs::write(mem.join("b.md"), "second memory, long enough").expect("write");
}

#[test]
fn memory_over_the_threshold_is_compacted_in_the_background() {
    let p = Project::new(&[]);
    compacting_package(&p, "#!/bin/sh\nwc -l | sed 's/^/compacted lines: /'\n");
    let id = p.create("keeper", "Go", "Topic\nGo.");
    p.settle();
    assert_eq!(p.status(&id), "completed");
    let mem = p.memory_dir("keeper");
    wait_for("compacted.md", || mem.join("compacted.md").exists());
    wait_for("the compacted files to go", || !mem.join("a.md").exists() && !mem.join("b.md").exists());
    wait_for("the outcome in the log", || std::fs::read_to_string(mem.join(".compact.log")).is_ok_and(|l| l.contains("compacted")));
    assert!(std::fs::read_to_string(mem.join("compacted.md")).expect("read").starts_with("compacted lines: "));
}

#[test]
fn a_failed_compaction_leaves_memory_as_it_was() {
    let p = Project::new(&[]);
    compacting_package(&p, "#!/bin/sh\ncat > /dev/null\nexit 1\n");
    let id = p.create("keeper", "Go", "Topic\nGo.");
    p.settle();
    assert_eq!(p.status(&id), "completed");
    let mem = p.memory_dir("keeper");
    let log = || std::fs::read_to_string(mem.join(".compact.log")).unwrap_or_default();
    wait_for("the compaction to end", || !log().is_empty());
    assert!(log().contains("failed, memory left as it was"), "{}", log());
    assert!(!mem.join("compacted.md").exists());
    assert_eq!(std::fs::read_to_string(mem.join("a.md")).expect("a"), "first memory, long enough");
    assert_eq!(std::fs::read_to_string(mem.join("b.md")).expect("b"), "second memory, long enough");
}

#[test]
fn memory_keys_are_never_paths() {
    let p = Project::new(&[]);
    let wt = p.tmp.path().join("wt");
    std::fs::create_dir_all(&wt).expect("mkdir");
    for key in ["../escape", "a/b", ".hidden"] {
        let out = p
            .cmd()
            .args(["toolbox", "store-memory", "--key", key, "--content", "x"])
            .env("GUILD_HALL_COMMISSION", "c")
            .env("GUILD_HALL_MAILBOX", p.tmp.path().join("events.jsonl"))
            .env("GUILD_HALL_WORKTREE", &wt)
            .env("GUILD_HALL_ATTEMPT", "1")
            .env("GUILD_HALL_WORKER", "w")
            .env("GUILD_HALL_MEMORY", p.memory_dir("w"))
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(1), "{key}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("bad memory key"), "{key}");
    }
    assert!(std::fs::read_dir(p.memory_dir("w")).map(|d| d.count() == 0).unwrap_or(true));
    assert!(!p.tmp.path().join("escape.md").exists());
}

#[test]
fn every_toolbox_spelling_the_system_prompt_teaches_works() {
    let p = Project::new(&["scribe"]);
    let id = p.create("scribe", "Prompted", "output: .lore/x.md\nWrite.");
    p.settle();
    let prompt = std::fs::read_to_string(p.state_dir(&id).join("system-prompt.md")).expect("system prompt");
    let taught: Vec<String> = prompt
        .split("(shell: `toolbox ")
        .skip(1)
        .filter_map(|rest| rest.split_whitespace().next().map(|w| w.trim_end_matches(['`', ')']).to_string()))
        .collect();
    assert_eq!(taught.len(), 10, "{prompt}");
    for name in &taught {
        // The shell spelling, and the MCP name with underscores, both run the tool.
        for spelling in [name.clone(), name.replace('-', "_")] {
            let (code, out, err) = p.run(&["toolbox", &spelling, "--help"]);
            assert_eq!(code, 0, "{spelling}: {err}");
            assert!(out.contains("Usage"), "{spelling}: {out}");
        }
    }
}

#[test]
fn bad_sandbox_values_are_reported_by_check_and_workers() {
    let p = Project::new(&["scribe"]);
    let cases = [
        ("relative", "sandbox: {write: [relative/dir]}", "must be an absolute path"),
        ("dotdot", "sandbox: {write: [\"/tmp/../etc\"]}", "must not contain `..`"),
        ("word", "sandbox: on", "is not `off` or `{write: [...]}`"),
        ("nodefault", "sandbox: {write: [\"${SOME_DIR}\"]}", "with a default"),
    ];
    for (name, line, _) in cases {
        p.install_worker("scribe", name);
        let y = p.root.join(".lore/workers").join(name).join("worker.yaml");
        std::fs::write(&y, std::fs::read_to_string(&y).expect("yaml") + line + "\n").expect("write");
    }
    let (code, out, _) = p.run(&["check"]);
    assert_eq!(code, 1, "{out}");
    let (wcode, listing, werr) = p.run(&["workers"]);
    assert_eq!(wcode, 0);
    for (name, _, why) in cases {
        let file = format!(".lore/workers/{name}/worker.yaml");
        assert!(out.lines().any(|l| l.contains(&file) && l.contains(why)), "check: {name}: {out}");
        assert!(werr.lines().any(|l| l.contains(&file) && l.contains(why)), "workers: {name}: {werr}");
        assert!(!listing.lines().any(|l| l.starts_with(&format!("{name} "))), "{name} is not offered as a worker:\n{listing}");
    }
    assert!(listing.lines().any(|l| l.starts_with("scribe ")), "{listing}");
}

#[test]
fn memory_compaction_runs_confined() {
    let p = Project::new(&[]);
    let script = r#"#!/bin/sh
cat > /dev/null
try() { if echo x > "$2" 2>/dev/null; then echo "WROTE: $1"; else echo "refused: $1"; fi; }
try tmpdir "$TMPDIR/scratch.txt"
try memory "$(dirname "$TMPDIR")/escaped.md"
try package ./escaped.txt
try home "$HOME/escaped.txt"
try guild-hall-home "$GUILD_HALL_HOME/escaped.txt"
"#;
    compacting_package(&p, script);
    let id = p.create("keeper", "Go", "Topic\nGo.");
    p.settle();
    assert_eq!(p.status(&id), "completed");
    let mem = p.memory_dir("keeper");
    wait_for("the compaction to end", || std::fs::read_to_string(mem.join(".compact.log")).is_ok_and(|l| !l.is_empty()));
    let out = std::fs::read_to_string(mem.join("compacted.md")).expect("its output became the memory");
    assert!(out.contains("WROTE: tmpdir"), "{out}");
    for what in ["memory", "package", "home", "guild-hall-home"] {
        assert!(out.contains(&format!("refused: {what}\n")), "{what} was not refused:\n{out}");
    }
    assert!(!mem.join("escaped.md").exists());
    assert!(!p.root.join(".lore/workers/keeper/escaped.txt").exists());
    assert!(!p.user_home().join("escaped.txt").exists());
    assert!(!p.home.join("escaped.txt").exists());
}

/// `check` said `ok` for a package whose command, posture or compact file does not exist, and
/// for an agent package whose CLI is not on PATH (whose attempt then failed on "exec: claude:
/// not found"). Each is a finding at its key of the package's worker.yaml, and a commission for
/// the package waits (`blocked`, no attempt), naming what is missing, until it is there.
#[test]
fn a_package_missing_a_file_or_its_cli_is_a_check_finding_and_its_work_waits() {
    use std::os::unix::fs::PermissionsExt;
    let p = Project::new(&[]);
    let dir = p.root.join(".lore/workers/w");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let yaml = dir.join("worker.yaml");
    std::fs::write(
        &yaml,
        "name: w\ncommand: [\"./run.sh\"]\ncapabilities: [commission]\nposture: posture.md\ncompact: [\"./compact.sh\"]\nrequires: [guild-hall-test-agent-cli]\n",
    )
    .expect("worker.yaml");
    // Only this test's bin dir and the system's on PATH: no agent CLI of the machine's.
    let bin = p.tmp.path().join("bin");
    std::fs::create_dir_all(&bin).expect("mkdir");
    let path = format!("/usr/local/bin:/usr/bin:/bin:{}", bin.display());
    let run = |args: &[&str]| {
        let out = p.cmd().env("PATH", &path).args(args).output().expect("runs");
        (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned())
    };
    p.write_commission("c", "---\ntitle: C\nworker: w\n---\nDo it.\n");
    let (code, out) = run(&["check"]);
    assert_eq!(code, 1, "{out}");
    let file = yaml.canonicalize().expect("canon").display().to_string();
    let at = |line: usize, col: usize, msg: &str| format!("{file}:{line}:{col}: {msg}");
    let w = dir.canonicalize().expect("canon").display().to_string();
    for want in [
        at(2, 10, &format!("command ./run.sh not found: {w}/run.sh does not exist")),
        at(4, 10, &format!("posture posture.md not found: {w}/posture.md does not exist")),
        at(5, 10, &format!("compact: command ./compact.sh not found: {w}/compact.sh does not exist")),
        at(6, 12, "requires `guild-hall-test-agent-cli`, which is not on PATH: install it, or run guild-hall with a PATH that has it"),
    ] {
        assert!(out.lines().any(|l| l == want), "{want}\n in:\n{out}");
    }
    assert!(!out.starts_with("ok"), "{out}");
    // The commission waits, no attempt spent, its reason naming what is missing.
    let (code, out) = run(&["reconcile", "--once"]);
    assert_eq!(code, 0, "{out}");
    let s = p.status_json("c");
    assert_eq!((s["status"].as_str(), s["attempt"].as_u64()), (Some("blocked"), Some(0)), "{s}");
    let reason = s["reason"].as_str().unwrap_or("");
    for what in ["run.sh", "posture.md", "compact.sh", "`guild-hall-test-agent-cli`, which is not on PATH"] {
        assert!(reason.contains(what), "{what}: {reason}");
    }
    assert!(p.run_info("c").is_none(), "no process was started");
    // Each file written, then the CLI put on PATH: the commission runs.
    let exe = |f: &std::path::Path, text: &str| {
        std::fs::write(f, text).expect("write");
        std::fs::set_permissions(f, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    };
    exe(&dir.join("run.sh"), "#!/bin/sh\n\"$GUILD_HALL_BIN\" toolbox submit-result --summary done\n");
    exe(&dir.join("compact.sh"), "#!/bin/sh\ncat\n");
    std::fs::write(dir.join("posture.md"), "Be brief.\n").expect("posture");
    let (code, out) = run(&["check"]);
    assert_eq!(code, 1, "the CLI is still missing: {out}");
    assert!(out.lines().any(|l| l.contains("requires `guild-hall-test-agent-cli`")) && !out.contains("run.sh not found"), "{out}");
    exe(&bin.join("guild-hall-test-agent-cli"), "#!/bin/sh\n");
    let (code, out) = run(&["check"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.starts_with("ok: 1 commission"), "{out}");
    let (code, out) = run(&["reconcile", "--once", "--wait", "--timeout", "60s"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(p.status("c"), "completed", "{}", p.artifact("c"));
    assert_eq!(p.status_json("c")["attempt"], 1);

    // The bundled agent packages declare their CLI: claude-code needs `claude`.
    p.ok(&["workers", "add", "claude-code"]);
    let (code, out) = run(&["check"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.lines().any(|l| l.contains("claude-code/worker.yaml:") && l.contains("requires `claude`, which is not on PATH")), "{out}");
}

/// The worker-dispatch spec's capability word `worker` (REQ-WD-1: a package that takes
/// dispatched work) is `commission`'s synonym: such a package passes `check` and runs
/// commissions. A word that is neither is said at `capabilities:`, with the words to write.
#[test]
fn the_specs_worker_capability_means_commission() {
    let p = Project::new(&["scribe"]);
    let y = p.root.join(".lore/workers/scribe/worker.yaml");
    let yaml = std::fs::read_to_string(&y).expect("yaml");
    std::fs::write(&y, yaml.replace("capabilities: [commission]", "capabilities: [worker]")).expect("write");
    let out = p.ok(&["check"]);
    assert!(out.starts_with("ok: 0 commissions, 0 meetings, 0 plans, 1 worker package\n"), "{out}");
    let id = p.create("scribe", "Spec", "output: .lore/research/spec.md\nWrite it.");
    p.settle();
    assert_eq!(p.status(&id), "completed", "{}", p.artifact(&id));

    std::fs::write(&y, yaml.replace("capabilities: [commission]", "capabilities: [wroker]")).expect("write");
    let (code, out, _) = p.run(&["check"]);
    assert_eq!(code, 1, "{out}");
    let line = out.lines().find(|l| l.contains("scribe/worker.yaml:")).unwrap_or_else(|| panic!("{out}"));
    assert!(
        line.ends_with(": unknown capability `wroker`: did you mean `worker`? a package's capabilities are `commission` (work dispatched to it: a commission, a wave task; `worker`, the worker-dispatch spec's word, means the same) and `meeting`"),
        "{line}"
    );
}
