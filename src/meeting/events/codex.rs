//! The Codex CLI's `codex exec --json` lines (`protocol: codex-json`) as meeting events: the
//! thread id is the session, each finished agent message one text delta, MCP calls, commands,
//! file changes and web searches tool use and result, `turn.completed` the end of the turn and
//! `turn.failed` its error. Pure; state is only what one turn's lines need.

use std::collections::HashSet;

use serde_json::{json, Value as Json};

use super::{summarize, TurnEvent};

/// What the translation remembers within one turn.
#[derive(Debug, Default)]
pub(super) struct Codex {
    /// Items whose start was surfaced as a tool use (their completion is then only a result).
    started: HashSet<String>,
    /// Whether an agent message was already surfaced (the next is set apart from it).
    said: bool,
    /// The last top-level `error` line: Codex says the same in `turn.failed`, which ends the
    /// turn; a retried request's error alone must not fail a turn that goes on.
    last_error: Option<String>,
}

impl Codex {
    pub(super) fn line(&mut self, v: &Json) -> Vec<TurnEvent> {
        let mut out = Vec::new();
        match v["type"].as_str() {
            Some("thread.started") => {
                if let Some(id) = v["thread_id"].as_str() {
                    out.push(TurnEvent::Session { id: id.to_string() });
                }
            }
            Some("item.started") => {
                if let Some((name, input)) = tool_use(&v["item"]) {
                    if let Some(id) = v["item"]["id"].as_str() {
                        self.started.insert(id.to_string());
                    }
                    out.push(TurnEvent::ToolUse { name, input });
                }
            }
            Some("item.completed") => self.completed(&v["item"], &mut out),
            Some("error") => self.last_error = v["message"].as_str().map(str::to_string),
            Some("turn.completed") => out.push(TurnEvent::TurnEnd),
            Some("turn.failed") => {
                let reason = v["error"]["message"]
                    .as_str()
                    .map(str::to_string)
                    .or_else(|| self.last_error.take())
                    .unwrap_or_else(|| "Codex reported a failed turn".to_string());
                out.push(TurnEvent::Error { reason });
            }
            _ => {}
        }
        out
    }

    fn completed(&mut self, item: &Json, out: &mut Vec<TurnEvent>) {
        match item["type"].as_str() {
            Some("agent_message") => {
                if let Some(text) = item["text"].as_str().filter(|t| !t.is_empty()) {
                    let sep = if self.said { "\n\n" } else { "" };
                    self.said = true;
                    out.push(TurnEvent::TextDelta { text: format!("{sep}{text}") });
                }
            }
            // Codex's own notices (an unknown model's metadata, say): the turn goes on.
            Some("error") => {
                tracing::debug!(message = item["message"].as_str().unwrap_or(""), "a notice from Codex");
            }
            _ => {
                let Some((name, input)) = tool_use(item) else { return };
                let started = item["id"].as_str().is_some_and(|id| self.started.remove(id));
                if !started {
                    out.push(TurnEvent::ToolUse { name: name.clone(), input });
                }
                out.push(TurnEvent::ToolResult { name, summary: result(item) });
            }
        }
    }
}

/// The tool an item is a use of, by the name the meeting shows, and its input.
fn tool_use(item: &Json) -> Option<(String, Json)> {
    let s = |k: &str| item[k].as_str().unwrap_or("?");
    match item["type"].as_str()? {
        // Named as Claude Code names MCP tools, so that a meeting shows them alike.
        "mcp_tool_call" => Some((format!("mcp__{}__{}", s("server"), s("tool")), item["arguments"].clone())),
        "command_execution" => Some(("shell".into(), json!({"command": item["command"]}))),
        "file_change" => Some(("file_change".into(), json!({"changes": item["changes"]}))),
        "web_search" => Some(("web_search".into(), json!({"query": item["query"]}))),
        _ => None,
    }
}

/// A finished tool item's outcome as one short line.
fn result(item: &Json) -> String {
    match item["type"].as_str() {
        Some("mcp_tool_call") => match item["error"]["message"].as_str() {
            Some(e) => format!("error: {e}"),
            None => summarize(&item["result"]["content"]),
        },
        Some("command_execution") => {
            let out = summarize(&item["aggregated_output"]);
            match item["exit_code"].as_i64() {
                Some(0) | None => out,
                Some(code) => format!("exit {code}: {out}"),
            }
        }
        Some("file_change") => {
            let changes = item["changes"].as_array().into_iter().flatten();
            let said: Vec<String> =
                changes.map(|c| format!("{} {}", c["kind"].as_str().unwrap_or("?"), c["path"].as_str().unwrap_or("?"))).collect();
            summarize(&Json::String(format!("{}: {}", item["status"].as_str().unwrap_or("done"), said.join(", "))))
        }
        _ => item["status"].as_str().unwrap_or("done").to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::text;
    use super::super::{is_expired_session, Reader};
    use super::*;
    use crate::worker::Protocol;

    /// One capture of `tests/fixtures/codex/` (real Codex 0.169.0 output) and its exit code.
    fn fixture(name: &str) -> String {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/codex").join(name);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    fn translate(name: &str) -> Vec<TurnEvent> {
        let mut r = Reader::new(Protocol::CodexJson);
        fixture(name).lines().flat_map(|l| r.line(l)).collect()
    }

    #[test]
    fn a_new_thread_with_text() {
        let ev = translate("01_text.jsonl");
        assert_eq!(
            ev,
            vec![
                TurnEvent::Session { id: "01a20f09-3432-7a03-8dfc-2a2e1c656ecd".into() },
                TurnEvent::TextDelta { text: "MOCK ANSWER: you said 'hello there'. Earlier user messages: []".into() },
                TurnEvent::TurnEnd,
            ],
            "the model-metadata notice is not an error"
        );
        assert_eq!(fixture("01_text.rc").trim(), "0");
    }

    #[test]
    fn an_mcp_tool_call_and_its_result() {
        let ev = translate("02_mcp_tool.jsonl");
        assert_eq!(ev[0], TurnEvent::Session { id: "01a20f09-36e6-75e0-b16f-a20c65d2a07e".into() });
        assert_eq!(
            ev[1],
            TurnEvent::ToolUse { name: "mcp__gh__report_progress".into(), input: json!({"summary": "mock: progress via MCP"}) }
        );
        assert_eq!(ev[2], TurnEvent::ToolResult { name: "mcp__gh__report_progress".into(), summary: "progress recorded".into() });
        assert!(text(&ev).starts_with("MOCK DONE: the tool said"), "{ev:?}");
        assert_eq!(ev.last(), Some(&TurnEvent::TurnEnd));
        assert_eq!(ev.len(), 5, "one use, one result: {ev:?}");
    }

    #[test]
    fn a_resumed_thread_keeps_its_id() {
        let first = translate("03_resume_turn1.jsonl");
        let second = translate("04_resume_turn2.jsonl");
        assert_eq!(first[0], second[0], "the same thread");
        assert!(text(&second).contains("Earlier user messages: ['remember the word PINEAPPLE']"), "{second:?}");
        assert_eq!(second.last(), Some(&TurnEvent::TurnEnd));
    }

    #[test]
    fn an_unknown_thread_is_an_expired_session() {
        assert!(translate("05_error_unknown_session.jsonl").is_empty(), "Codex prints nothing on stdout");
        assert_eq!(fixture("05_error_unknown_session.rc").trim(), "1");
        assert!(is_expired_session(&fixture("05_error_unknown_session.stderr.txt")));
        // What codex.sh says instead, before Codex would fail.
        let mut r = Reader::new(Protocol::CodexJson);
        let ev =
            r.line(r#"{"type":"turn.failed","error":{"message":"no rollout found for thread id 01a20eff-0000-7000-8000-000000000000"}}"#);
        let [TurnEvent::Error { reason }] = ev.as_slice() else { panic!("{ev:?}") };
        assert!(is_expired_session(reason));
    }

    #[test]
    fn http_errors_fail_the_turn_once() {
        for (name, says) in [("06_error_http500.jsonl", "high demand"), ("07_error_http400.jsonl", "mock: injected HTTP 400")] {
            let ev = translate(name);
            let errors: Vec<&TurnEvent> = ev.iter().filter(|e| matches!(e, TurnEvent::Error { .. })).collect();
            assert_eq!(errors.len(), 1, "{name}: {ev:?}");
            assert!(matches!(errors[0], TurnEvent::Error { reason } if reason.contains(says)), "{name}: {ev:?}");
            assert!(!ev.contains(&TurnEvent::TurnEnd), "{name}");
            assert!(!is_expired_session(&format!("{errors:?}")));
        }
    }

    #[test]
    fn commands_file_changes_and_several_messages() {
        let mut r = Reader::new(Protocol::CodexJson);
        let lines = [
            r#"{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"Looking."}}"#,
            r#"{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"bash -lc ls","aggregated_output":"","exit_code":null,"status":"in_progress"}}"#,
            r#"{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"bash -lc ls","aggregated_output":"a\nb\n","exit_code":2,"status":"failed"}}"#,
            r#"{"type":"item.completed","item":{"id":"item_2","type":"file_change","changes":[{"path":"src/x.rs","kind":"add"}],"status":"completed"}}"#,
            r#"{"type":"item.completed","item":{"id":"item_3","type":"mcp_tool_call","server":"guild-hall","tool":"write_artifact","arguments":{},"result":null,"error":{"message":"refused"},"status":"failed"}}"#,
            r#"{"type":"item.completed","item":{"id":"item_4","type":"agent_message","text":"Done."}}"#,
        ];
        let ev: Vec<TurnEvent> = lines.iter().flat_map(|l| r.line(l)).collect();
        assert_eq!(text(&ev), "Looking.\n\nDone.");
        assert_eq!(ev[1], TurnEvent::ToolUse { name: "shell".into(), input: json!({"command": "bash -lc ls"}) });
        assert_eq!(ev[2], TurnEvent::ToolResult { name: "shell".into(), summary: "exit 2: a b".into() });
        assert_eq!(
            ev[3],
            TurnEvent::ToolUse { name: "file_change".into(), input: json!({"changes": [{"path": "src/x.rs", "kind": "add"}]}) }
        );
        assert_eq!(ev[4], TurnEvent::ToolResult { name: "file_change".into(), summary: "completed: add src/x.rs".into() });
        assert_eq!(ev[6], TurnEvent::ToolResult { name: "mcp__guild-hall__write_artifact".into(), summary: "error: refused".into() });
        // A retried request's error alone ends nothing.
        assert!(r.line(r#"{"type":"error","message":"Reconnecting... 1/5"}"#).is_empty());
    }
}
