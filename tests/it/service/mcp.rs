//! `guild-hall mcp` driven by an independent client, the official Python MCP SDK (`mcp` on
//! PyPI, installed into `target/py-mcp` by `.ci/run`, or by this test on first use): tools are
//! listed and called, their effects checked in the mailbox and memory, bad arguments are MCP
//! errors and never a crash.

use std::path::PathBuf;
use std::process::Command;

use crate::common::*;

/// The venv's python with the MCP SDK, made on first use.
pub(crate) fn python() -> PathBuf {
    let venv = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/py-mcp");
    let py = venv.join("bin/python");
    let ok = |py: &PathBuf| Command::new(py).args(["-c", "import mcp"]).status().is_ok_and(|s| s.success());
    if !ok(&py) {
        let lock = std::fs::File::create(std::env::temp_dir().join("guild-hall-py-mcp.lock")).expect("lock");
        let _held = nix::fcntl::Flock::lock(lock, nix::fcntl::FlockArg::LockExclusive).expect("flock");
        if !ok(&py) {
            let why = "to install the Python MCP SDK into target/py-mcp";
            let made = needs(Command::new("python3").args(["-m", "venv"]).arg(&venv).output(), "python3", why);
            // Debian and Ubuntu ship `venv` apart from python3: without it, this fails.
            assert!(
                made.status.success(),
                "this test needs python3-venv ({why}): `python3 -m venv` failed: see Prerequisites in README.md"
            );
            let pip = needs(Command::new(venv.join("bin/pip")).args(["install", "-q", "mcp"]).status(), "pip", why);
            assert!(pip.success(), "installing the Python MCP SDK failed (needs PyPI)");
        }
    }
    py
}

#[test]
fn an_independent_mcp_client_uses_every_tool() {
    let p = Project::new(&[]);
    let wt = p.tmp.path().join("wt");
    std::fs::create_dir_all(&wt).expect("mkdir");
    std::fs::write(wt.join("report.md"), "report").expect("write");
    let mailbox = p.tmp.path().join("events.jsonl");
    let bin = assert_cmd::cargo::cargo_bin("guild-hall");
    let out = Command::new(python())
        .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_client.py"))
        .arg(&bin)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("GUILD_HALL_COMMISSION", "c1")
        .env("GUILD_HALL_MAILBOX", &mailbox)
        .env("GUILD_HALL_WORKTREE", &wt)
        .env("GUILD_HALL_ATTEMPT", "1")
        .env("GUILD_HALL_WORKER", "scripted-researcher")
        .env("GUILD_HALL_HOME", &p.home)
        .env("GUILD_HALL_MEMORY", p.memory_dir("scripted-researcher"))
        .output()
        .expect("python runs");
    assert!(out.status.success(), "client failed: {}", String::from_utf8_lossy(&out.stderr));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).expect("client json");
    assert_eq!(
        r["tools"],
        serde_json::json!([
            "ask",
            "log_question",
            "read_artifact",
            "record_decision",
            "report_progress",
            "report_usage",
            "request_meeting",
            "store_memory",
            "submit_result",
            "write_artifact"
        ])
    );
    assert_eq!(r["calls"]["read_artifact"]["text"], serde_json::json!(["written over MCP\n"]), "{r}");
    assert_eq!(std::fs::read_to_string(wt.join(".lore/notes/mcp.md")).expect("written"), "written over MCP\n");
    assert!(r["errors"].to_string().contains("must be under .lore/"), "{r}");
    assert!(!wt.join("outside.md").exists() && !p.tmp.path().join("escape.md").exists());
    assert!(r["descriptions"]["submit_result"].as_str().is_some_and(|d| d.contains("once")), "{r}");
    assert!(r["instructions"].as_str().is_some_and(|i| i.contains("c1")), "{r}");
    for (name, call) in r["calls"].as_object().expect("calls") {
        assert_eq!(call["is_error"], false, "{name}: {call}");
    }
    for (name, err) in r["errors"].as_object().expect("errors") {
        assert_eq!(err["is_error"], true, "{name} must be an MCP error: {err}");
    }
    assert!(r["errors"].to_string().contains("already submitted"), "{r}");
    assert!(r["errors"].to_string().contains("bad memory key"), "{r}");
    assert_eq!(r["alive"], true);

    // The effects, exactly as the CLI toolbox would have made them.
    let mail: Vec<serde_json::Value> =
        std::fs::read_to_string(&mailbox).expect("mailbox").lines().map(|l| serde_json::from_str(l).expect("json")).collect();
    let kinds: Vec<&str> = mail.iter().map(|m| m["kind"].as_str().unwrap_or("")).collect();
    assert_eq!(kinds, ["progress", "question", "decision", "memory", "usage_report", "result", "progress"]);
    assert_eq!((mail[4]["input_tokens"].as_u64(), mail[4]["cached_tokens"].as_u64()), (Some(1200), Some(500)));
    assert_eq!(mail[5]["artifacts"], serde_json::json!(["report.md"]));
    assert_eq!(std::fs::read_to_string(p.memory_dir("scripted-researcher").join("style.md")).expect("memory"), "prefer tables");
    assert!(!p.home.join("memory/escape.md").exists() && !p.home.join("escape.md").exists());
}

#[test]
fn mcp_outside_a_worker_says_so() {
    let p = Project::new(&[]);
    let (code, _, err) = p.run(&["mcp"]);
    assert_eq!(code, 1);
    assert!(err.contains("GUILD_HALL_COMMISSION is not set"), "{err}");
}

#[test]
fn a_main_agent_dispatches_polls_and_deletes_through_mcp_manager() {
    let p = Project::new(&["scripted-researcher", "sleeper", "counsel"]);
    // No watcher runs: dispatched work must still end up running and merged.
    let bin = assert_cmd::cargo::cargo_bin("guild-hall");
    let out = Command::new(python())
        .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_manager_client.py"))
        .arg(&bin)
        .arg(&p.root)
        .arg(&p.home)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .expect("python runs");
    assert!(out.status.success(), "client failed: {}", String::from_utf8_lossy(&out.stderr));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).expect("client json");
    assert_eq!(r["tools"], serde_json::json!(crate::common::DISPATCHER_TOOLS));
    let instructions = r["instructions"].as_str().unwrap_or("");
    assert!(
        instructions.contains("- scripted-researcher:") && instructions.contains("- sleeper:") && instructions.contains("relay"),
        "{instructions}"
    );
    let job = r["job"].as_str().expect("job id").to_string();
    assert!(job.starts_with("survey-crash-only-designs-"), "{job}");
    assert_eq!(r["final"]["status"], "completed", "{r}");
    assert_eq!(r["final"]["commissionStatus"], "completed");
    assert!(r["final"]["questions"][0].as_str().is_some_and(|q| q.contains("one-page")), "{r}");
    assert_eq!(r["final"]["decisions"][0]["decision"], "One page");
    assert!(r["final"]["completedAt"].is_string() && r["final"]["startedAt"].is_string());
    assert_eq!(r["result"]["output"], "Report on Crash-only software");
    assert_eq!(r["result"]["artifacts"][0], format!(".lore/reports/{job}.md"));
    // The scripted worker reports no usage: a report with no rows, and nothing invented.
    assert_eq!((r["usage"]["by"].as_str(), r["usage"]["rows"].as_array().map(Vec::len)), (Some("worker"), Some(0)), "{r}");
    assert_eq!(r["usage_bad"]["code"], -32602, "{r}");
    assert_eq!(r["list_filtered"]["jobs"].as_array().map(|a| a.len()), Some(1), "{r}");
    assert_eq!(r["list_filtered"]["jobs"][0]["description"], "Survey crash-only designs");
    assert_eq!(r["list_none"]["jobs"], serde_json::json!([]));
    assert_eq!(r["cancel_completed"]["status"], "completed", "cancel of an ended job is a no-op");
    // A completed job is final: running it again is refused, nothing written.
    assert!(r["redispatch_completed"]["error"].as_str().is_some_and(|e| e.contains("completed") && e.contains("nothing written")), "{r}");
    assert_eq!(r["slow_running"]["status"], "running");
    assert!(r["result_running"]["error"].as_str().is_some_and(|e| e.contains("running")), "{r}");
    assert!(r["delete_running"]["error"].as_str().is_some_and(|e| e.contains("only completed or cancelled")), "{r}");
    assert_eq!(r["cancel_slow"]["status"], "cancelled");
    assert_eq!(r["slow_final"]["status"], "cancelled", "{r}");
    assert_eq!(r["cancel_again"]["status"], "cancelled");
    assert_eq!(r["delete_slow"]["deleted"], true, "{r}");
    assert_eq!(r["delete_done"]["deleted"], true, "{r}");
    assert!(r["status_unknown"]["error"].as_str().is_some_and(|e| e.contains("unknown jobId")), "{r}");
    assert!(r["status_traversal"]["error"].as_str().is_some_and(|e| e.contains("bad jobId")), "{r}");
    // A meeting request: the same artifact a person or a worker writes.
    let meeting = r["meeting_request"]["meetingId"].as_str().expect("meeting id");
    let text = std::fs::read_to_string(p.root.join(".lore/meetings").join(format!("{meeting}.md"))).expect("request written");
    assert!(
        text.contains("status: requested") && text.contains("requested_by: manager") && text.contains("The survey needs a decision"),
        "{text}"
    );
    assert!(r["meeting_request_bad"]["error"].as_str().is_some_and(|e| e.contains("`meeting` capability")), "{r}");
    assert!(r["dispatch_bad"]["error"].as_str().is_some_and(|e| e.contains("is not installed")), "{r}");
    assert!(r["dispatch_types"]["error"].as_str().is_some_and(|e| e.contains("maxTurns") || e.contains("invalid type")), "{r}");
    // Arguments that do not fit the schema are JSON-RPC invalid-params errors, unknown keys too.
    // So are unknown and malformed job ids, and unknown workers (docs/mcp.md's promise).
    for case in [
        "dispatch_types",
        "dispatch_unknown_key",
        "dispatch_unknown_config",
        "status_wrong_type",
        "status_unknown",
        "status_traversal",
        "dispatch_bad",
    ] {
        assert_eq!(r[case]["code"], -32602, "{case}: {}", r[case]);
    }
    assert!(r["dispatch_unknown_key"]["error"].as_str().is_some_and(|e| e.contains("unknown field `max_turns`")), "{r}");
    // It introduces itself as guild-hall; lists are lists even when empty; a cancel shows at once.
    assert_eq!(r["server"], serde_json::json!({"name": "guild-hall", "version": env!("CARGO_PKG_VERSION")}));
    assert_eq!(r["slow_running"]["questions"], serde_json::json!([]), "{r}");
    assert_eq!(r["slow_running"]["decisions"], serde_json::json!([]), "{r}");
    assert_eq!(r["status_after_cancel"]["status"], "cancelled", "{r}");

    // The merge happened, and delete removed exactly what the jobs owned.
    let merged = git(&p.root, &["log", "--format=%b", "claude/main"]);
    assert!(merged.contains(&format!("Guild-Hall-Commission: {job} attempt 1")), "{merged}");
    let slow = r["slow"].as_str().expect("slow id");
    for id in [job.as_str(), slow] {
        assert!(!p.artifact_path(id).exists());
        assert!(!p.root.join(format!(".lore/commissions/{id}.timeline.jsonl")).exists());
        assert!(!p.branches().iter().any(|b| b.contains(id)), "{:?}", p.branches());
        assert!(p.try_state_dir(id).is_none_or(|d| !d.exists()));
    }
    assert!(p.branches().contains(&"claude/main".to_string()));
    assert!(p.root.join(".lore/workers/scripted-researcher/worker.yaml").exists(), "nothing else removed");
}

#[test]
fn an_mcp_speaking_agent_is_a_worker() {
    // The Python SDK client as the worker: it talks to `guild-hall mcp` the way an agent CLI
    // would, inside a real commission; the effects land in the artifact and timeline.
    let p = Project::new(&[]);
    let dir = p.root.join(".lore/workers/py-agent");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let client = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_client.py");
    // A full checkout: it writes `report.md` at the top, which a sparse attempt (that never saw
    // it) may not land.
    std::fs::write(dir.join("worker.yaml"), "name: py-agent\ncommand: [\"./run.sh\"]\ncheckout: full\n").expect("write");
    std::fs::write(
        dir.join("run.sh"),
        format!("#!/bin/sh\nset -eu\necho report > report.md\nexec {} {} \"$GUILD_HALL_BIN\"\n", python().display(), client.display()),
    )
    .expect("write");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.join("run.sh"), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let id = p.create("py-agent", "Over MCP", "Use every tool.");
    p.settle();
    let s = p.status_json(&id);
    assert_eq!(s["status"], "completed", "{s}\n{}", p.ok(&["logs", &id]));
    assert_eq!(s["progress"], "still here");
    assert_eq!(s["questions"], serde_json::json!(["which format?"]));
    assert_eq!(s["result"]["summary"], "done");
    assert_eq!(s["result"]["artifacts"], serde_json::json!(["report.md"]));
    let kinds = kinds(&p.timeline(&id));
    for k in ["progress", "question", "decision", "memory", "usage_report", "usage", "result", "artifact", "merge"] {
        assert!(kinds.contains(&k.to_string()), "{k} in {kinds:?}");
    }
    // What it reported over MCP is the attempt's usage: tokens only, as it gave no dollars.
    assert_eq!(s["usage"], serde_json::json!({"input_tokens": 1200, "output_tokens": 30, "cached_tokens": 500}), "{s}");
    assert_eq!(std::fs::read_to_string(p.memory_dir("py-agent").join("style.md")).expect("memory"), "prefer tables");
    assert_eq!(git(&p.root, &["show", "claude/main:report.md"]), "report\n");
}

/// `guild-hall job`: the dispatcher on the command line, same operations and replies.
#[test]
fn the_dispatcher_on_the_command_line() {
    let p = Project::new(&["scripted-researcher"]);
    let out = p.ok(&[
        "job",
        "dispatch",
        "--description",
        "Survey logs",
        "--task",
        "Logging\nSurvey it.",
        "--config",
        r#"{"worker": "scripted-researcher"}"#,
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).expect("json reply");
    let job = v["jobId"].as_str().expect("jobId").to_string();
    let listed: serde_json::Value = serde_json::from_str(&p.ok(&["job", "list"])).expect("json");
    assert_eq!(listed["jobs"][0]["jobId"], job.as_str());
    let (code, _, err) = p.run(&["job", "dispatch", "--description", "x", "--task", "y", "--config", r#"{"worker": "nobody"}"#]);
    assert_ne!(code, 0);
    assert!(err.contains("nobody"), "{err}");
    // The dispatcher saw to it being carried out (a reconciler of its own): wait for that.
    wait_for("the job to complete", || {
        let out = p.ok(&["job", "status", "--jobId", &job]);
        serde_json::from_str::<serde_json::Value>(&out).is_ok_and(|s| s["status"] == "completed")
    });
}

/// REQ-WD-44: a failed job's `error` says why it failed. A person's edit of the failed
/// commission that is refused (`status: completed`) used to replace `reason:` — and with it
/// the job's `error` — by the refusal; the refusal is `refused:` now, beside the cause.
#[test]
fn a_failed_jobs_error_keeps_why_it_failed_after_a_refused_edit() {
    let p = Project::new(&["silent"]);
    let id = p.create("silent", "Quiet", "Do it.");
    p.settle();
    let s = p.status_json(&id);
    assert_eq!(s["status"], "failed", "{s}");
    let cause = s["reason"].as_str().expect("why it failed").to_string();
    let job = |p: &Project| -> serde_json::Value { serde_json::from_str(&p.ok(&["job", "status", "--jobId", &id])).expect("json") };
    assert_eq!(job(&p)["error"], cause.as_str());

    // A person sets it completed: refused (a failed commission is re-dispatched, not
    // completed by hand), the status put back.
    let path = p.artifact_path(&id);
    let text = std::fs::read_to_string(&path).expect("read");
    std::fs::write(&path, text.replacen("status: failed\n", "status: completed\n", 1)).expect("write");
    p.settle();
    let text = p.artifact(&id);
    assert!(text.contains("status: failed\n"), "{text}");
    let fm: serde_yaml_ng::Value = serde_yaml_ng::from_str(text.split("---\n").nth(1).expect("frontmatter")).expect("yaml");
    assert_eq!(fm["reason"].as_str(), Some(cause.as_str()), "why it failed is kept:\n{text}");
    let refused = fm["refused"].as_str().unwrap_or_else(|| panic!("the refusal is said:\n{text}"));
    assert!(refused.starts_with("refused status change failed -> completed: "), "{refused}");
    assert_eq!(job(&p)["error"], cause.as_str());
    assert!(p.timeline(&id).iter().any(|e| e["kind"] == "refused" && e["text"] == refused), "{:?}", p.timeline(&id));
    assert!(p.ok(&["check"]).starts_with("ok:"), "refused: is guild-hall's own key");

    // Re-dispatched: it runs again and the refusal, over with the failure, goes.
    let text = std::fs::read_to_string(&path).expect("read");
    std::fs::write(&path, text.replacen("status: failed\n", "status: pending\n", 1)).expect("write");
    p.settle();
    let text = p.artifact(&id);
    assert!(!text.contains("refused:"), "{text}");
    assert_eq!(p.status_json(&id)["attempt"], 2, "{text}");
}
