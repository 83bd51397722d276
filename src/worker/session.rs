//! The agent session an attempt ran in, as its own output announced it: what a revision of a
//! commission resumes (`GUILD_HALL_SESSION_ID`). Read from the attempt's log in each stream
//! language a bundled package speaks (Claude Code's and Gemini CLI's `stream-json`, Codex's
//! `exec --json`, guild-hall's own lines that its ACP client prints).

use std::io::{BufRead, Read};
use std::path::Path;

/// How much of a log is looked through for the announcement: agents say it first.
const LOOKED_AT: usize = 200;

/// The first session id the log at `path` announces, if it announces one of a sane shape (a
/// worker wrote it: it is only ever handed back to the same package, never run or parsed).
pub(crate) fn announced(path: &Path) -> Option<String> {
    let file = std::fs::File::open(path).ok()?;
    let mut reader = std::io::BufReader::new(file.take(8 * 1024 * 1024));
    let mut line = Vec::new();
    for _ in 0..LOOKED_AT {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return None,
            Ok(_) => {}
        }
        let text = String::from_utf8_lossy(&line);
        if let Some(id) = session_of(text.trim()) {
            return Some(id);
        }
    }
    None
}

/// The session one line of an agent's output announces.
fn session_of(line: &str) -> Option<String> {
    if !line.starts_with('{') {
        return None;
    }
    let v: serde_json::Value = serde_json::from_str(line).ok()?;
    let id = match v["type"].as_str()? {
        // Claude Code: `{"type":"system","subtype":"init","session_id":…}`.
        "system" if v["subtype"] == "init" => v["session_id"].as_str(),
        // Gemini CLI: `{"type":"init","session_id":…}`.
        "init" => v["session_id"].as_str(),
        // Codex: `{"type":"thread.started","thread_id":…}`.
        "thread.started" => v["thread_id"].as_str(),
        // guild-hall's own lines (its ACP client's): `{"type":"session","id":…}`.
        "session" => v["id"].as_str(),
        _ => None,
    }?;
    crate::artifact::meeting::valid_session_id(id).then(|| id.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_stream_language_announces_its_session() {
        for (line, id) in [
            (
                r#"{"type":"system","subtype":"init","session_id":"d5f486d9-be47-4653-98c2-d1ae47ca9544","tools":[]}"#,
                "d5f486d9-be47-4653-98c2-d1ae47ca9544",
            ),
            (r#"{"type":"init","session_id":"g-1","model":"m"}"#, "g-1"),
            (r#"{"type":"thread.started","thread_id":"0199a213-81c0-7800-8aa1-bbab2a035a53"}"#, "0199a213-81c0-7800-8aa1-bbab2a035a53"),
            (r#"{"type":"session","id":"acp-7"}"#, "acp-7"),
        ] {
            assert_eq!(session_of(line).as_deref(), Some(id), "{line}");
        }
        for odd in
            [r#"{"type":"session","id":"a b; rm -rf /"}"#, "not json", r#"{"type":"text_delta","text":"x"}"#, r#"{"type":"session"}"#]
        {
            assert_eq!(session_of(odd), None, "{odd}");
        }
    }

    #[test]
    fn the_first_announcement_in_a_log_is_the_session() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = dir.path().join("attempt-1.log");
        std::fs::write(&log, "starting\n{\"type\":\"session\",\"id\":\"first\"}\n{\"type\":\"session\",\"id\":\"second\"}\n")
            .expect("write");
        assert_eq!(announced(&log).as_deref(), Some("first"));
        assert_eq!(announced(&dir.path().join("none.log")), None);
    }
}
