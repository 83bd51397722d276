//! The real agent CLIs at a rate or usage limit, against the tests' stand-ins answering 429 as
//! the APIs do: Claude Code (an API key's rate limit: no reset time in its output, so a
//! backoff; one retry of its own, `CLAUDE_CODE_MAX_RETRIES=1`) and Codex (a plan's usage limit
//! with its reset time; no retry of its own) and Gemini CLI (a quota error; one attempt of its
//! own). Each way the commission waits `pending` with `not_before:`, no attempt failed, and
//! completes when dispatched again.

use serde_json::{json, Value};

use super::claude_code::{install_package, real_claude, real_run, FakeApi};
use super::codex::{fake_openai, real_codex, requests};
use crate::common::*;

fn field(p: &Project, id: &str, key: &str) -> Option<String> {
    let text = p.artifact(id);
    let yaml: serde_yaml_ng::Value = serde_yaml_ng::from_str(text.split("---\n").nth(1).expect("frontmatter")).expect("yaml");
    yaml[key].as_str().map(str::to_string)
}

fn time(t: &str) -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::parse_from_rfc3339(t).expect("rfc3339").with_timezone(&chrono::Utc)
}

fn limited(p: &Project, id: &str) -> Vec<Value> {
    p.timeline(id).into_iter().filter(|e| e["kind"] == "limited").collect()
}

#[test]
fn real_claude_code_at_a_429_waits_and_runs_again() {
    let claude = real_claude();
    let p = Project::new(&[]);
    install_package(&p, "claude-code");
    let reset = (chrono::Utc::now() + chrono::Duration::hours(5)).timestamp();
    let limit = json!({"limit": {"status": 429, "headers": {
        "retry-after": "1",
        "anthropic-ratelimit-unified-status": "rejected",
        "anthropic-ratelimit-unified-reset": reset.to_string(),
        "anthropic-ratelimit-requests-reset": "2026-01-01T00:00:00Z"
    }}});
    let api = FakeApi::start(
        p.tmp.path(),
        &json!([
            limit, limit,
            {"tool_use": {"name": "mcp__guild-hall__write_artifact", "input": {"path": ".lore/notes/after.md", "content": "after the limit\n"}}},
            {"tool_use": {"name": "mcp__guild-hall__submit_result", "input": {"summary": "Wrote it after the limit", "artifacts": [".lore/notes/after.md"]}}},
            {"text": "Done."}
        ]),
    );
    p.write_commission("metered", "---\nworker: claude-code\noutputs: [.lore/notes/after.md]\n---\nWrite a note.\n");
    let out = real_run(&p, &api, &claude);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(p.status("metered"), "pending", "{}\n{}", p.artifact("metered"), p.ok(&["logs", "metered"]));
    let said = limited(&p, "metered");
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(said[0]["text"].as_str().is_some_and(|t| t.contains("429")), "{said:?}");
    // Claude Code says no reset time on an API key's 429: a backoff of a minute.
    assert!(said[0].get("resets_at").is_none(), "{said:?}");
    let not_before = time(&field(&p, "metered", "not_before").expect("not_before"));
    let wait = (not_before - time(said[0]["ts"].as_str().expect("ts"))).num_seconds();
    assert!((55..=61).contains(&wait), "{wait}");
    // It tried once more itself (CLAUDE_CODE_MAX_RETRIES=1), then handed the limit over.
    let turns = std::fs::read_to_string(&api.requests)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| r["body"]["tools"].is_array())
        .count();
    assert_eq!(turns, 2, "one request and one retry");
    // Time moves on (a person may move `not_before:`): dispatched again, it completes.
    let text = p.artifact("metered");
    let line = text.lines().find(|l| l.starts_with("not_before:")).expect("line").to_string();
    std::fs::write(p.artifact_path("metered"), text.replace(&line, "not_before: 2000-01-01T00:00:00Z")).expect("write");
    let out = real_run(&p, &api, &claude);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(p.status("metered"), "completed", "{}", p.ok(&["logs", "metered"]));
    assert_eq!(git(&p.root, &["show", "claude/main:.lore/notes/after.md"]), "after the limit\n");
    assert!(!p.timeline("metered").iter().any(|e| e["to"] == "failed"));
}

#[test]
fn real_codex_at_its_usage_limit_waits_for_the_reset_it_said() {
    let codex = real_codex();
    let p = Project::new(&[]);
    install_package(&p, "codex");
    let reset = chrono::Utc::now() + chrono::Duration::seconds(5);
    let api = fake_openai(
        &p,
        json!([
            {"limit": {"headers": {"retry-after": "5"}, "error": {
                "type": "usage_limit_reached", "message": "The usage limit has been reached", "plan_type": "plus",
                "resets_at": reset.timestamp()}}},
            {"call": {"namespace": "mcp__guild_hall", "name": "write_artifact", "arguments": {"path": ".lore/notes/after.md", "content": "after the reset\n"}}},
            {"call": {"namespace": "mcp__guild_hall", "name": "submit_result", "arguments": {"summary": "Wrote it after the reset", "artifacts": [".lore/notes/after.md"]}}},
            {"text": "Done."}
        ]),
    );
    p.write_commission("metered", "---\nworker: codex\noutputs: [.lore/notes/after.md]\n---\nWrite a note.\n");
    let path = format!("{}:{}", codex.parent().expect("bin dir").display(), std::env::var("PATH").unwrap_or_default());
    let pass = |args: &[&str]| {
        let out = p
            .cmd()
            .env("PATH", &path)
            .env("OPENAI_BASE_URL", format!("{}/v1", api.url))
            .env("OPENAI_API_KEY", "sk-stand-in")
            .env("CODEX_MODEL", "stand-in-model")
            .args(args)
            .output()
            .expect("runs");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    };
    pass(&["reconcile", "--once", "--wait", "--timeout", "180s"]);
    // Paused, not failed (said to the minute, its reset may have passed already: then it has
    // run again by now).
    assert_ne!(p.status("metered"), "failed", "{}\n{}", p.artifact("metered"), p.ok(&["logs", "metered"]));
    let said = limited(&p, "metered");
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(said[0]["text"].as_str().is_some_and(|t| t.contains("usage limit") && t.contains("try again at")), "{said:?}");
    // Codex says the reset to the minute, in local time: read back as that minute.
    let resets_at = time(said[0]["resets_at"].as_str().expect("the reset Codex said"));
    let minute = |t: chrono::DateTime<chrono::Utc>| t.with_timezone(&chrono::Local).format("%H:%M").to_string();
    assert_eq!(minute(resets_at), minute(reset), "{said:?}");
    let not_before = time(said[0]["not_before"].as_str().expect("not_before"));
    assert!(not_before >= resets_at, "{not_before} {resets_at}");
    // No retry of its own: one request met the limit. (Its reset is seconds away: under load
    // the wait may already have run it again, which makes the script's other three requests.)
    let responses = || requests(&api).iter().filter(|r| r["path"].as_str().is_some_and(|x| x.ends_with("/responses"))).count();
    let expected = if p.status("metered") == "completed" { 4 } else { 1 };
    assert_eq!(responses(), expected, "{}", p.artifact("metered"));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while p.status("metered") != "completed" {
        assert!(std::time::Instant::now() < deadline, "never completed: {}", p.artifact("metered"));
        pass(&["reconcile", "--once", "--wait", "--timeout", "180s"]);
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
    let dispatched: Vec<Value> = p.timeline("metered").into_iter().filter(|e| e["kind"] == "status" && e["to"] == "dispatched").collect();
    assert!(time(dispatched[1]["ts"].as_str().expect("ts")) >= not_before, "attempt 2 after not_before: {dispatched:?}");
    assert_eq!(git(&p.root, &["show", "claude/main:.lore/notes/after.md"]), "after the reset\n");
    assert_eq!(responses(), 4, "one request met the limit, three made the run after it");
}

/// Gemini CLI at a quota error (429, `RESOURCE_EXHAUSTED`): one attempt of its own
/// (`general.maxAttempts: 1`), then the commission waits, and completes when run again.
#[test]
fn real_gemini_cli_at_a_quota_error_waits_and_runs_again() {
    let gemini = super::gemini::real_gemini();
    let p = Project::new(&[]);
    install_package(&p, "gemini");
    let api = super::gemini::stand_in(
        &p,
        json!([
            {"limit": {"status": 429, "headers": {"retry-after": "1"}}},
            {"call": {"name": "mcp_guild-hall_write_artifact", "args": {"path": ".lore/notes/after.md", "content": "after the quota\n"}}},
            {"call": {"name": "mcp_guild-hall_submit_result", "args": {"summary": "Wrote it", "artifacts": [".lore/notes/after.md"]}}},
            {"text": "Done."}
        ]),
    );
    p.write_commission("metered", "---\nworker: gemini\noutputs: [.lore/notes/after.md]\n---\nWrite a note.\n");
    let path = format!("{}:{}", gemini.parent().expect("bin dir").display(), std::env::var("PATH").unwrap_or_default());
    let pass = || {
        let out = p
            .cmd()
            .env("PATH", &path)
            .env("GOOGLE_GEMINI_BASE_URL", &api.url)
            .env("GEMINI_API_KEY", "stand-in-key")
            .args(["reconcile", "--once", "--wait", "--timeout", "180s"])
            .output()
            .expect("runs");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    };
    pass();
    assert_eq!(p.status("metered"), "pending", "{}\n{}", p.artifact("metered"), p.ok(&["logs", "metered"]));
    let said = limited(&p, "metered");
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(field(&p, "metered", "not_before").is_some());
    assert_eq!(super::gemini::turns(&api).len(), 1, "no retry of its own: {said:?}");
    let text = p.artifact("metered");
    let line = text.lines().find(|l| l.starts_with("not_before:")).expect("line").to_string();
    std::fs::write(p.artifact_path("metered"), text.replace(&line, "not_before: 2000-01-01T00:00:00Z")).expect("write");
    pass();
    assert_eq!(p.status("metered"), "completed", "{}", p.ok(&["logs", "metered"]));
}

/// A meeting turn of the real Claude Code CLI at a 429: the turn fails saying the worker hit
/// a usage limit and to send again, in its output and the transcript; no crash, no empty reply.
#[test]
fn real_claude_code_meeting_turn_at_a_429_says_so() {
    let claude = real_claude();
    let p = Project::new(&[]);
    install_package(&p, "claude-code");
    let limit = json!({"limit": {"status": 429, "headers": {"retry-after": "1"}}});
    let api = FakeApi::start(p.tmp.path(), &json!([limit, limit, limit, limit]));
    let path = format!("{}:{}", claude.parent().expect("bin dir").display(), std::env::var("PATH").unwrap_or_default());
    let out = p
        .cmd()
        .env("PATH", path)
        .env("ANTHROPIC_BASE_URL", &api.url)
        .env("ANTHROPIC_API_KEY", "sk-stand-in")
        .args(["meeting", "start", "--worker", "claude-code", "--id", "m", "hello"])
        .output()
        .expect("runs");
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(!said.contains("panicked"), "{said}");
    assert!(said.contains("[guild-hall] claude-code hit a usage limit") && said.contains("send again"), "{said}");
    let transcript = std::fs::read_dir(p.home.join("meetings"))
        .ok()
        .and_then(|mut d| d.next())
        .and_then(|e| e.ok())
        .map(|e| e.path().join("m.md"))
        .and_then(|t| std::fs::read_to_string(t).ok())
        .unwrap_or_default();
    assert!(transcript.contains("[guild-hall] claude-code hit a usage limit"), "{transcript}");
}
