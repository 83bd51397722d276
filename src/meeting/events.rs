//! What a meeting turn streams (design §8, REQ-MTG-15): the six event types, read from a
//! worker's stdout in guild-hall's own JSON lines or translated from Claude Code's or Gemini
//! CLI's `stream-json` (the latter in [`gemini`]) or the Codex CLI's `exec --json`
//! ([`codex`]). Anything else a worker prints is not surfaced. Pure but for [`read_lines`],
//! which splits the output into lines whatever bytes it holds.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use crate::worker::Protocol;

mod codex;
mod gemini;

/// One event of a turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum TurnEvent {
    /// The agent's session id (the first turn creates it; later turns resume it).
    Session {
        id: String,
    },
    TextDelta {
        text: String,
    },
    ToolUse {
        name: String,
        #[serde(default)]
        input: Json,
    },
    ToolResult {
        name: String,
        #[serde(default)]
        summary: String,
    },
    TurnEnd,
    Error {
        reason: String,
    },
}

/// The longest tool result summary surfaced (the rest is the agent's business).
const SUMMARY_CHARS: usize = 200;

/// The longest line of a turn's output read: a longer one is skipped (never held whole).
pub(crate) const TURN_LINE_MAX: usize = 8 * 1024 * 1024;

/// Hand each line of a turn's output to `each` (until it says stop), as text: bytes that are
/// not UTF-8 are replaced, and a line over `max` bytes is skipped and logged. Whatever a worker
/// prints, its output is read to the end, so the worker never blocks on a full pipe and the
/// turn always sees how it ended.
pub(crate) fn read_lines(out: impl std::io::Read, max: usize, mut each: impl FnMut(String) -> bool) -> std::io::Result<()> {
    use std::io::BufRead;
    let mut reader = std::io::BufReader::with_capacity(64 * 1024, out);
    let (mut line, mut over) = (Vec::new(), false);
    let mut wanted = true;
    loop {
        let buf = match reader.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            break;
        }
        let newline = buf.iter().position(|&b| b == b'\n');
        let piece = &buf[..newline.unwrap_or(buf.len())];
        if !over && wanted {
            if line.len() + piece.len() > max {
                over = true;
                line = Vec::new();
            } else {
                line.extend_from_slice(piece);
            }
        }
        let took = newline.map_or(buf.len(), |i| i + 1);
        reader.consume(took);
        if newline.is_some() {
            if over {
                tracing::warn!("a line of the turn's output longer than {max} bytes was skipped");
            } else if wanted {
                wanted = each(String::from_utf8_lossy(&line).into_owned());
            }
            line.clear();
            over = false;
        }
    }
    if wanted && !over && !line.is_empty() {
        each(String::from_utf8_lossy(&line).into_owned());
    }
    Ok(())
}

/// Reads one turn's stdout line by line into [`TurnEvent`]s.
#[derive(Debug, Default)]
pub(crate) struct Reader {
    protocol: Protocol,
    /// Claude Code and Gemini CLI name a tool in `tool_use` and refer to it by id in
    /// `tool_result`.
    tool_names: HashMap<String, String>,
    codex: codex::Codex,
}

impl Reader {
    pub(crate) fn new(protocol: Protocol) -> Reader {
        Reader { protocol, tool_names: HashMap::new(), codex: codex::Codex::default() }
    }

    /// The events one line of output carries (none for a line that is not an event).
    pub(crate) fn line(&mut self, line: &str) -> Vec<TurnEvent> {
        let line = line.trim();
        if !line.starts_with('{') {
            return Vec::new();
        }
        match self.protocol {
            // guild-hall's ACP client (`worker::acp`) translates the agent's `session/update`s
            // into guild-hall's own lines.
            Protocol::GuildHall | Protocol::Acp => serde_json::from_str::<TurnEvent>(line).ok().into_iter().collect(),
            Protocol::ClaudeStreamJson => match serde_json::from_str::<Json>(line) {
                Ok(v) => self.claude(&v),
                Err(_) => Vec::new(),
            },
            Protocol::CodexJson => match serde_json::from_str::<Json>(line) {
                Ok(v) => self.codex.line(&v),
                Err(_) => Vec::new(),
            },
            Protocol::GeminiStreamJson => match serde_json::from_str::<Json>(line) {
                Ok(v) => gemini::translate(&v, &mut self.tool_names),
                Err(_) => Vec::new(),
            },
        }
    }

    /// Claude Code's `--output-format stream-json --verbose --include-partial-messages`.
    fn claude(&mut self, v: &Json) -> Vec<TurnEvent> {
        let mut out = Vec::new();
        match v["type"].as_str() {
            Some("system") if v["subtype"] == "init" => {
                if let Some(id) = v["session_id"].as_str() {
                    out.push(TurnEvent::Session { id: id.to_string() });
                }
            }
            Some("stream_event") => {
                let e = &v["event"];
                if e["type"] == "content_block_delta" && e["delta"]["type"] == "text_delta" {
                    if let Some(t) = e["delta"]["text"].as_str() {
                        out.push(TurnEvent::TextDelta { text: t.to_string() });
                    }
                }
            }
            // The whole assistant message comes after its deltas: its tool calls, with their
            // complete input, are taken from here.
            Some("assistant") => {
                for block in v["message"]["content"].as_array().into_iter().flatten() {
                    if block["type"] == "tool_use" {
                        let name = block["name"].as_str().unwrap_or("?").to_string();
                        if let Some(id) = block["id"].as_str() {
                            self.tool_names.insert(id.to_string(), name.clone());
                        }
                        out.push(TurnEvent::ToolUse { name, input: block["input"].clone() });
                    }
                }
            }
            Some("user") => {
                for block in v["message"]["content"].as_array().into_iter().flatten() {
                    if block["type"] == "tool_result" {
                        let id = block["tool_use_id"].as_str().unwrap_or("");
                        let name = self.tool_names.get(id).cloned().unwrap_or_else(|| "?".into());
                        out.push(TurnEvent::ToolResult { name, summary: summarize(&block["content"]) });
                    }
                }
            }
            Some("result") => {
                if v["is_error"].as_bool() == Some(true) {
                    let errors: Vec<&str> = v["errors"].as_array().into_iter().flatten().filter_map(Json::as_str).collect();
                    let reason = if !errors.is_empty() {
                        errors.join("; ")
                    } else {
                        v["result"].as_str().or(v["subtype"].as_str()).unwrap_or("Claude Code reported an error").to_string()
                    };
                    out.push(TurnEvent::Error { reason });
                } else {
                    out.push(TurnEvent::TurnEnd);
                }
            }
            _ => {}
        }
        out
    }
}

/// A tool result's content as one short line.
fn summarize(content: &Json) -> String {
    let text = match content {
        Json::String(s) => s.clone(),
        Json::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect::<Vec<_>>().join(" "),
        Json::Null => String::new(),
        other => other.to_string(),
    };
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() > SUMMARY_CHARS {
        format!("{}…", one_line.chars().take(SUMMARY_CHARS).collect::<String>())
    } else {
        one_line
    }
}

/// Whether an error says the session cannot be resumed (expired, or unknown to the agent):
/// the turn is then run again in a fresh session (REQ-MTG-12).
pub(crate) fn is_expired_session(reason: &str) -> bool {
    let r = reason.to_lowercase();
    r.contains("no conversation found with session id")
        || r.contains("session expired")
        || r.contains("session not found")
        // Codex: `codex exec resume` of a thread it has no rollout file for.
        || r.contains("no rollout found for thread id")
        || r.contains("invalid session identifier")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> String {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude-code").join(name);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    fn translate(name: &str) -> Vec<TurnEvent> {
        let mut r = Reader::new(Protocol::ClaudeStreamJson);
        fixture(name).lines().flat_map(|l| r.line(l)).collect()
    }

    /// The text of a turn's deltas, joined.
    pub(super) fn text(events: &[TurnEvent]) -> String {
        events.iter().filter_map(|e| if let TurnEvent::TextDelta { text } = e { Some(text.as_str()) } else { None }).collect()
    }

    #[test]
    fn a_new_session_with_an_mcp_tool_call() {
        let ev = translate("turn1.jsonl");
        assert_eq!(ev[0], TurnEvent::Session { id: "1149bf9a-6688-451b-bc63-1d54cf1d6bc3".into() });
        assert_eq!(
            ev[1],
            TurnEvent::ToolUse { name: "mcp__gh__report_progress".into(), input: serde_json::json!({"summary": "Looked at the survey"}) }
        );
        assert_eq!(
            ev[2],
            TurnEvent::ToolResult { name: "mcp__gh__report_progress".into(), summary: "{\"result\":\"progress recorded\"}".into() }
        );
        assert_eq!(text(&ev), "The survey covers three designs: crash-only, journaling and checkpointing.");
        assert!(ev.iter().filter(|e| matches!(e, TurnEvent::TextDelta { .. })).count() >= 5, "streamed as several deltas");
        assert_eq!(ev.last(), Some(&TurnEvent::TurnEnd));
    }

    #[test]
    fn a_resumed_turn_is_text_only() {
        let ev = translate("turn2-resume.jsonl");
        assert!(matches!(ev.first(), Some(TurnEvent::Session { .. })), "{ev:?}");
        assert!(!ev.iter().any(|e| matches!(e, TurnEvent::ToolUse { .. })));
        assert!(!text(&ev).is_empty());
        assert_eq!(ev.last(), Some(&TurnEvent::TurnEnd));
    }

    #[test]
    fn a_built_in_tool_with_its_result() {
        let ev = translate("turn-tools.jsonl");
        let tools: Vec<&TurnEvent> = ev.iter().filter(|e| matches!(e, TurnEvent::ToolUse { .. } | TurnEvent::ToolResult { .. })).collect();
        assert!(matches!(tools[0], TurnEvent::ToolUse { name, input } if name == "Write" && input["file_path"] == "notes.md"));
        assert!(
            matches!(tools[1], TurnEvent::ToolResult { name, summary } if name == "Write" && summary.starts_with("File created successfully"))
        );
        assert!(matches!(tools[2], TurnEvent::ToolUse { name, .. } if name == "mcp__gh__report_progress"));
        assert_eq!(text(&ev), "I wrote notes.md with the first design. Shall I continue with the other two?");
    }

    #[test]
    fn an_unknown_session_is_an_expired_one() {
        let ev = translate("turn3-unknown-session.jsonl");
        assert_eq!(ev.len(), 1, "{ev:?}");
        let TurnEvent::Error { reason } = &ev[0] else { panic!("{ev:?}") };
        assert!(reason.starts_with("No conversation found with session ID"), "{reason}");
        assert!(is_expired_session(reason));
        assert!(is_expired_session(fixture("turn3-unknown-session.stderr").trim()));
        assert!(!is_expired_session("rate limited"));
    }

    #[test]
    fn output_is_read_to_its_end_whatever_it_holds() {
        let out: &[u8] = b"{\"type\":\"text_delta\",\"text\":\"a\"}\nbad \xff\xfe bytes\nxxxxxxxxxxxx\n{\"type\":\"turn_end\"}";
        let mut lines = Vec::new();
        read_lines(out, 40, |l| {
            lines.push(l);
            true
        })
        .expect("read");
        assert_eq!(
            lines,
            ["{\"type\":\"text_delta\",\"text\":\"a\"}", "bad \u{fffd}\u{fffd} bytes", "xxxxxxxxxxxx", "{\"type\":\"turn_end\"}"]
        );
        let mut short = Vec::new();
        read_lines(out, 16, |l| {
            short.push(l);
            true
        })
        .expect("read");
        assert_eq!(short, ["bad \u{fffd}\u{fffd} bytes", "xxxxxxxxxxxx"], "lines over the limit skipped");
    }

    #[test]
    fn guild_hall_lines_and_noise() {
        let mut r = Reader::new(Protocol::GuildHall);
        assert_eq!(r.line(r#"{"type":"text_delta","text":"hi"}"#), vec![TurnEvent::TextDelta { text: "hi".into() }]);
        assert_eq!(r.line(r#"{"type":"turn_end"}"#), vec![TurnEvent::TurnEnd]);
        assert!(r.line("plain text the worker printed").is_empty());
        assert!(r.line(r#"{"type":"internal_thing","x":1}"#).is_empty(), "other events are not surfaced");
        assert!(r.line("{not json").is_empty());
    }
}
