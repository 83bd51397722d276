//! Gemini CLI's `--output-format stream-json` (0.61) translated into meeting events: `init`
//! carries the session id, assistant `message` deltas the text, `tool_use`/`tool_result` the
//! tool calls, `result` the end of the turn or its error. Pure; tested against real captures.

use std::collections::HashMap;

use serde_json::Value as Json;

use super::{summarize, TurnEvent};

/// The events one line of Gemini CLI's stream carries. `tool_names` maps a `tool_id` to the
/// name its `tool_use` gave, for the `tool_result` that refers to it by id only.
pub(super) fn translate(v: &Json, tool_names: &mut HashMap<String, String>) -> Vec<TurnEvent> {
    let mut out = Vec::new();
    match v["type"].as_str() {
        Some("init") => {
            if let Some(id) = v["session_id"].as_str() {
                out.push(TurnEvent::Session { id: id.to_string() });
            }
        }
        // The person's own message is echoed as a `user` message: not surfaced.
        Some("message") if v["role"] == "assistant" => {
            if let Some(t) = v["content"].as_str().filter(|t| !t.is_empty()) {
                out.push(TurnEvent::TextDelta { text: t.to_string() });
            }
        }
        Some("tool_use") => {
            let name = v["tool_name"].as_str().unwrap_or("?").to_string();
            if let Some(id) = v["tool_id"].as_str() {
                tool_names.insert(id.to_string(), name.clone());
            }
            out.push(TurnEvent::ToolUse { name, input: v["parameters"].clone() });
        }
        Some("tool_result") => {
            let id = v["tool_id"].as_str().unwrap_or("");
            let name = tool_names.get(id).cloned().unwrap_or_else(|| "?".into());
            // A failed tool says so, as the Codex translation does ("error: …").
            let summary = if v["status"] == "error" {
                let content = if v["output"].is_null() { &v["error"]["message"] } else { &v["output"] };
                format!("error: {}", summarize(content))
            } else {
                summarize(&v["output"])
            };
            out.push(TurnEvent::ToolResult { name, summary });
        }
        // Warnings (a loop detected, a blocked hook) are the CLI's own business; an error is
        // the turn's.
        Some("error") if v["severity"] == "error" => {
            let reason = v["message"].as_str().unwrap_or("Gemini CLI reported an error").to_string();
            out.push(TurnEvent::Error { reason });
        }
        Some("result") => {
            if v["status"] == "success" {
                out.push(TurnEvent::TurnEnd);
            } else {
                let reason = v["error"]["message"].as_str().unwrap_or("Gemini CLI reported an error").to_string();
                out.push(TurnEvent::Error { reason });
            }
        }
        _ => {}
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::{is_expired_session, Reader};
    use super::*;
    use crate::worker::Protocol;

    fn fixture(name: &str) -> String {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/gemini").join(name);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    fn translate_fixture(name: &str) -> Vec<TurnEvent> {
        let mut r = Reader::new(Protocol::GeminiStreamJson);
        fixture(name).lines().flat_map(|l| r.line(l)).collect()
    }

    fn text(events: &[TurnEvent]) -> String {
        events.iter().filter_map(|e| if let TurnEvent::TextDelta { text } = e { Some(text.as_str()) } else { None }).collect()
    }

    #[test]
    fn a_new_session_answers_in_streamed_text() {
        let ev = translate_fixture("01_text.jsonl");
        assert_eq!(ev[0], TurnEvent::Session { id: "82aae803-5e0c-449b-a9e3-948f63640e26".into() });
        assert_eq!(text(&ev), "MOCK ANSWER: you said 'hello there'. Earlier user messages: []");
        assert_eq!(ev.iter().filter(|e| matches!(e, TurnEvent::TextDelta { .. })).count(), 3, "streamed as deltas");
        assert_eq!(ev.last(), Some(&TurnEvent::TurnEnd));
        assert_eq!(ev.len(), 5, "the echoed user message is not surfaced: {ev:?}");
    }

    #[test]
    fn an_mcp_tool_call_and_its_result() {
        let ev = translate_fixture("02_mcp_tool.jsonl");
        assert_eq!(
            ev[1],
            TurnEvent::ToolUse { name: "mcp_gh_report_progress".into(), input: serde_json::json!({"summary": "mock: progress via MCP"}) }
        );
        assert_eq!(ev[2], TurnEvent::ToolResult { name: "mcp_gh_report_progress".into(), summary: "progress recorded".into() });
        assert!(text(&ev).starts_with("MOCK DONE: the tool said"), "{ev:?}");
        assert_eq!(ev.last(), Some(&TurnEvent::TurnEnd));
    }

    #[test]
    fn a_resumed_session_keeps_its_id_and_sees_the_first_turn() {
        let one = translate_fixture("03_resume_turn1.jsonl");
        let two = translate_fixture("04_resume_turn2.jsonl");
        assert_eq!(one[0], TurnEvent::Session { id: "eb0decb0-cd63-40e7-b9b3-7416689f8708".into() });
        assert_eq!(two[0], one[0], "the resumed turn reports the same session");
        assert!(text(&two).contains("PINEAPPLE"), "{two:?}");
        assert_eq!(two.last(), Some(&TurnEvent::TurnEnd));
    }

    #[test]
    fn an_unknown_session_prints_nothing_and_says_so_on_stderr() {
        assert!(translate_fixture("05_error_unknown_session.jsonl").is_empty());
        assert_eq!(fixture("05_error_unknown_session.rc").trim(), "42");
        // meet.sh turns this stderr into a `result` error: guild-hall then renews the session.
        let stderr = fixture("05_error_unknown_session.stderr.txt");
        let first = stderr.lines().next().unwrap_or_default();
        assert!(is_expired_session(first), "{first}");
    }

    #[test]
    fn api_errors_end_the_turn_with_their_message() {
        for (name, code) in [("06_error_http500.jsonl", "500"), ("07_error_http400.jsonl", "400")] {
            let ev = translate_fixture(name);
            assert!(matches!(ev[0], TurnEvent::Session { .. }), "{ev:?}");
            let Some(TurnEvent::Error { reason }) = ev.last() else { panic!("{name}: {ev:?}") };
            assert!(reason.starts_with("[API Error:") && reason.contains(&format!("\"code\":{code}")), "{reason}");
            assert!(!is_expired_session(reason));
            assert!(!ev.iter().any(|e| matches!(e, TurnEvent::TurnEnd | TurnEvent::TextDelta { .. })), "{ev:?}");
        }
    }

    #[test]
    fn a_failed_tool_and_an_error_event() {
        let mut names = HashMap::new();
        let use_ = serde_json::json!({"type": "tool_use", "tool_name": "read_file", "tool_id": "t1", "parameters": {"path": "x"}});
        assert_eq!(
            translate(&use_, &mut names)[0],
            TurnEvent::ToolUse { name: "read_file".into(), input: serde_json::json!({"path": "x"}) }
        );
        let failed = serde_json::json!({"type": "tool_result", "tool_id": "t1", "status": "error", "error": {"type": "x", "message": "no such file"}});
        assert_eq!(
            translate(&failed, &mut names),
            vec![TurnEvent::ToolResult { name: "read_file".into(), summary: "error: no such file".into() }]
        );
        // A failed tool that printed output is still a failure, not a normal result.
        let with_output = serde_json::json!({"type": "tool_result", "tool_id": "t1", "status": "error", "output": "partial", "error": {"message": "exit 1"}});
        assert_eq!(
            translate(&with_output, &mut names),
            vec![TurnEvent::ToolResult { name: "read_file".into(), summary: "error: partial".into() }]
        );
        let ok = serde_json::json!({"type": "tool_result", "tool_id": "t1", "status": "success", "output": "contents"});
        assert_eq!(translate(&ok, &mut names), vec![TurnEvent::ToolResult { name: "read_file".into(), summary: "contents".into() }]);
        let warning = serde_json::json!({"type": "error", "severity": "warning", "message": "Loop detected, stopping execution"});
        assert!(translate(&warning, &mut names).is_empty());
        let error = serde_json::json!({"type": "error", "severity": "error", "message": "Maximum session turns exceeded"});
        assert_eq!(translate(&error, &mut names), vec![TurnEvent::Error { reason: "Maximum session turns exceeded".into() }]);
    }
}
