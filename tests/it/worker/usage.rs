//! Usage end to end with the real agent CLIs against the tests' stand-ins for their model APIs,
//! which serve each turn's usage as the real APIs do: the CLI reports it at the end of its run
//! (Claude Code's `result`, Codex's `turn.completed`, Gemini CLI's stats), the shim reads it
//! from the attempt's output, and the commission's `usage:` and its `usage` event say exactly
//! what the stand-in served — dollars as Claude Code reports them, as `prices:` gives them for
//! Gemini, and none for Codex (tokens only: never invented). And budgets with the real Claude
//! Code: stopped by its shim mid-run past `max_tokens` (its replies' figures as they stream), and
//! past `max_budget_usd` by its own `--max-budget-usd`, failing with the dollars it reported.

use std::path::Path;

use serde_json::{json, Value};

use crate::common::*;
use crate::worker::claude_code::{install_package, real_claude, real_run, FakeApi};

/// What the stand-in served in all: (input not cached, output, cached).
pub(crate) fn served(api: &FakeApi) -> (u64, u64, u64) {
    let file = format!("{}.usage.jsonl", api.requests.display());
    let lines = std::fs::read_to_string(&file).unwrap_or_default();
    lines.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()).fold((0, 0, 0), |(i, o, c), u| {
        (i + u["input"].as_u64().unwrap_or(0), o + u["output"].as_u64().unwrap_or(0), c + u["cached"].as_u64().unwrap_or(0))
    })
}

/// The commission's `usage:` (as tokens, and dollars if any) and its one `usage` event.
fn recorded(p: &Project, id: &str) -> ((u64, u64, u64), Option<f64>, Value) {
    let text = p.artifact(id);
    let yaml = text.strip_prefix("---\n").and_then(|t| t.split_once("\n---")).map(|(y, _)| y).expect("frontmatter");
    let fm: serde_yaml_ng::Value = serde_yaml_ng::from_str(yaml).expect("frontmatter");
    let u = &fm["usage"];
    let n = |k: &str| u[k].as_u64().unwrap_or_else(|| panic!("usage.{k}:\n{text}"));
    let events: Vec<Value> = p.timeline(id).into_iter().filter(|e| e["kind"] == "usage").collect();
    assert_eq!(events.len(), 1, "{events:?}");
    ((n("input_tokens"), n("output_tokens"), n("cached_tokens")), u["usd"].as_f64(), events[0].clone())
}

/// A turn's usage as the stand-in serves it.
fn used(input: u64, output: u64, cached: u64) -> Value {
    json!({"input": input, "output": output, "cached": cached})
}

#[test]
fn real_claude_code_reports_its_tokens_and_dollars() {
    let claude = real_claude();
    let p = Project::new(&[]);
    install_package(&p, "claude-code");
    let api = FakeApi::start(
        p.tmp.path(),
        &json!([
            {"tool_use": {"name": "mcp__guild-hall__report_progress", "input": {"text": "reading"}}, "usage": used(1200, 40, 3000)},
            {"tool_use": {"name": "mcp__guild-hall__submit_result", "input": {"summary": "Done"}}, "usage": used(300, 25, 4200)},
            {"text": "All done.", "usage": used(50, 7, 4500)}
        ]),
    );
    p.write_commission("costed", "---\nworker: claude-code\n---\nDo a small thing.\n");
    let out = real_run(&p, &api, &claude);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(p.status("costed"), "completed", "{}", p.ok(&["logs", "costed"]));
    let (tokens, usd, event) = recorded(&p, "costed");
    assert_eq!(tokens, served(&api), "what the API served, as Claude Code reported it\n{}", p.ok(&["logs", "costed"]));
    assert_eq!(tokens, (1550, 72, 11700));
    // Dollars as Claude Code reports them (its own price table), not priced by guild-hall.
    let log = p.ok(&["logs", "costed"]);
    let reported = log
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["type"] == "result")
        .and_then(|v| v["total_cost_usd"].as_f64())
        .expect("Claude Code's result in the log");
    assert!(reported > 0.0);
    assert_eq!(usd, Some((reported * 1e6).round() / 1e6));
    assert_eq!((event["source"].as_str(), event["attempt"].as_u64(), event.get("priced")), (Some("agent"), Some(1), None));
    assert!(event["model"].as_str().is_some_and(|m| m.starts_with("claude")), "{event}");
}

#[test]
fn real_codex_reports_tokens_only() {
    let codex = crate::worker::codex::real_codex();
    let p = Project::new(&[]);
    install_package(&p, "codex");
    let api = crate::worker::codex::fake_openai(
        &p,
        json!([
            {"call": {"namespace": "mcp__guild_hall", "name": "submit_result", "arguments": {"summary": "Done"}}, "usage": used(900, 30, 2048)},
            {"text": "All done.", "usage": used(120, 9, 3072)}
        ]),
    );
    p.write_commission("costed", "---\nworker: codex\n---\nDo a small thing.\n");
    let path = format!("{}:{}", codex.parent().expect("bin dir").display(), std::env::var("PATH").unwrap_or_default());
    let out = p
        .cmd()
        .env("PATH", path)
        .env("OPENAI_BASE_URL", format!("{}/v1", api.url))
        .env("OPENAI_API_KEY", "sk-stand-in")
        .env("CODEX_MODEL", "stand-in-model")
        .args(["reconcile", "--once", "--wait", "--timeout", "180s"])
        .output()
        .expect("runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(p.status("costed"), "completed", "{}", p.ok(&["logs", "costed"]));
    let (tokens, usd, event) = recorded(&p, "costed");
    assert_eq!(tokens, served(&api), "{}", p.ok(&["logs", "costed"]));
    assert_eq!(tokens, (1020, 39, 5120));
    assert_eq!(usd, None, "Codex reports no dollars and none are priced: tokens only");
    assert_eq!(event["source"].as_str(), Some("agent"));
    assert!(event.get("usd").is_none(), "{event}");
}

#[test]
fn real_gemini_cli_reports_tokens_that_prices_turn_into_dollars() {
    let gemini = crate::worker::gemini::real_gemini();
    let p = Project::new(&[]);
    install_package(&p, "gemini");
    let config = p.home.join("config.yaml");
    let text = std::fs::read_to_string(&config).unwrap_or_default();
    std::fs::write(&config, format!("{text}\nprices:\n  gemini-2.5-flash: {{input: 0.3, output: 2.5, cached: 0.075}}\n")).expect("config");
    let api = crate::worker::gemini::stand_in(
        &p,
        json!([
            {"call": {"name": "mcp_guild-hall_submit_result", "args": {"summary": "Done"}}, "usage": used(20000, 50, 100000)},
            {"text": "All done.", "usage": used(4000, 10, 116000)}
        ]),
    );
    p.write_commission("costed", "---\nworker: gemini\n---\nDo a small thing.\n");
    let env = [("GOOGLE_GEMINI_BASE_URL", Path::new(&api.url)), ("GEMINI_API_KEY", Path::new("stand-in-key"))];
    let out =
        crate::worker::claude_code::run_as(&p, false, &path_with(&gemini), &["reconcile", "--once", "--wait", "--timeout", "180s"], &env);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(p.status("costed"), "completed", "{}", p.ok(&["logs", "costed"]));
    let (tokens, usd, event) = recorded(&p, "costed");
    assert_eq!(tokens, served(&api), "{}", p.ok(&["logs", "costed"]));
    assert_eq!(tokens, (24000, 60, 216000));
    // 24000 × $0.3 + 60 × $2.5 + 216000 × $0.075, per million.
    assert_eq!(usd, Some(0.02355));
    assert_eq!(
        (event["source"].as_str(), event["model"].as_str(), event["priced"].as_bool()),
        (Some("agent"), Some("gemini-2.5-flash"), Some(true))
    );
}

#[test]
fn real_claude_code_past_its_budget_stops_and_fails_with_the_figures() {
    let claude = real_claude();
    let p = Project::new(&[]);
    install_package(&p, "claude-code");
    // Its first turn alone costs more than the commission's budget.
    let api = FakeApi::start(
        p.tmp.path(),
        &json!([
            {"tool_use": {"name": "mcp__guild-hall__report_progress", "input": {"text": "reading"}}, "usage": used(400000, 40, 0)},
            {"tool_use": {"name": "mcp__guild-hall__submit_result", "input": {"summary": "Done"}}, "usage": used(300, 25, 0)},
            {"text": "All done.", "usage": used(50, 7, 0)}
        ]),
    );
    p.write_commission("costly", "---\nworker: claude-code\nresources:\n  max_budget_usd: 0.5\n---\nDo a costly thing.\n");
    let out = real_run(&p, &api, &claude);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let log = p.ok(&["logs", "costly"]);
    let s = p.status_json("costly");
    assert_eq!(s["status"], "failed", "{log}");
    let reason = s["reason"].as_str().unwrap_or("");
    assert!(reason.starts_with("budget exceeded: $") && reason.ends_with(" of $0.50; its work is kept on its branch"), "{reason}\n{log}");
    assert!(!p.timeline("costly").iter().any(|e| e["kind"] == "result"), "stopped before it submitted\n{log}");
    // The figure is Claude Code's own, as its result reported it.
    let reported = log
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["type"] == "result")
        .and_then(|v| v["total_cost_usd"].as_f64())
        .expect("Claude Code's result in the log");
    assert!(reported > 0.5, "{log}");
}

#[test]
fn real_claude_code_past_its_token_budget_is_stopped_by_its_shim_mid_run() {
    let claude = real_claude();
    let p = Project::new(&[]);
    install_package(&p, "claude-code");
    // Its second reply passes the budget; its third (which would submit) is slow to come, so
    // the stop lands while the run is under way.
    let api = FakeApi::start(
        p.tmp.path(),
        &json!([
            {"tool_use": {"name": "mcp__guild-hall__report_progress", "input": {"text": "reading"}}, "usage": used(600, 10, 0)},
            {"tool_use": {"name": "mcp__guild-hall__report_progress", "input": {"text": "still reading"}}, "usage": used(600, 10, 0)},
            {"tool_use": {"name": "mcp__guild-hall__submit_result", "input": {"summary": "Done"}}, "usage": used(10, 5, 0), "sleep": 60},
            {"text": "All done.", "usage": used(5, 2, 0)}
        ]),
    );
    p.write_commission("tokens", "---\nworker: claude-code\nresources:\n  max_tokens: 1000\n---\nRead a lot.\n");
    let out = real_run(&p, &api, &claude);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let log = p.ok(&["logs", "tokens"]);
    let s = p.status_json("tokens");
    assert_eq!(s["status"], "failed", "{log}");
    let reason = s["reason"].as_str().unwrap_or("");
    assert!(
        reason.starts_with("budget exceeded: ") && reason.ends_with(" of 1000 tokens; its work is kept on its branch"),
        "{reason}\n{log}"
    );
    assert!(log.contains("of 1000 tokens: the attempt is stopped"), "{log}");
    // Stopped mid-run: before Claude Code's own end (its `result`), and before it submitted.
    assert!(!log.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()).any(|v| v["type"] == "result"), "{log}");
    assert!(!p.timeline("tokens").iter().any(|e| e["kind"] == "result"), "{log}");
}
