//! `/meetings/<id>`: one meeting — its state and actions (accept, decline, close), its
//! transcript, a message box, and the worker's reply streamed into the page as it comes. A
//! message is the catalogue's `meeting/send` (the operation `guild-hall meeting send` runs);
//! its turn's events go through the hub to every page of the meeting ([`call`]).

use std::fmt::Write as _;

use serde_json::{json, Value as Json};

use crate::config::Project;
use crate::meeting::events::TurnEvent;
use crate::ops::catalogue::Meetings;
use crate::tools::ToolError;

use super::html::{line, page, text};
use super::http::Response;
use super::hub::{Batch, TurnNews, TurnStep};
use super::Server;

/// The longest tool input shown beside a tool's name (the rest is the agent's business).
const TOOL_INPUT_CHARS: usize = 120;

pub(crate) fn page_of(server: &Server, project: &Project, id: &str) -> Response {
    if crate::artifact::ids::validate_id(id).is_err() || !project.meeting_path(id).exists() {
        return super::not_found(&anyhow::anyhow!("no meeting {id} in {}", project.root.display()));
    }
    // Before the reading: a change after it is one the page's stream sends.
    let generation = server.hub.generation().to_string();
    let mut body = format!("<h1>Meeting <span class=\"id\">{}</span></h1>\n", line(id));
    let _ = writeln!(body, "<div id=\"meeting-live\" data-testid=\"meeting-live\">{}</div>", live_part(server, project, id));
    let so_far = server.hub.turn_so_far(&project.name, id).map(|t| text(&t)).unwrap_or_default();
    let _ = writeln!(
        body,
        "<section class=\"meeting\" aria-labelledby=\"h-transcript\"><h2 id=\"h-transcript\">Transcript</h2>\
         <div id=\"transcript\" class=\"transcript\" data-testid=\"transcript\">{}</div>\
         <div id=\"reply\" class=\"msg worker streaming\" data-testid=\"reply\" aria-live=\"polite\">{so_far}</div></section>",
        transcript(server, project, id, None)
    );
    let _ = write!(
        body,
        "<form id=\"send-form\" class=\"send\" data-api=\"meeting/send\" data-args=\"{args}\" data-clear data-testid=\"send-form\">\
         <label for=\"message\">Your message <span class=\"hint\">(Ctrl+Enter sends)</span></label>\
         <textarea id=\"message\" name=\"message\" rows=\"3\" required data-keep data-testid=\"message\"></textarea>\
         <button id=\"send\" type=\"submit\" data-testid=\"send\">Send</button></form>",
        args = text(&json!({"id": id}).to_string()),
    );
    let name = project.name.clone();
    Response::html(page(
        &format!("meeting {id}"),
        &body,
        &[("view", "meeting"), ("id", id), ("project", &name), ("generation", &generation)],
    ))
}

/// What changes as it goes: its state, what it is about, its notes, the actions it allows.
pub(crate) fn live_part(server: &Server, project: &Project, id: &str) -> String {
    let m = match crate::meeting::observe::load(project, id) {
        Ok(m) => m,
        Err(e) => return format!("<p data-testid=\"status\">{}</p>", line(&format!("{e:#}"))),
    };
    let e = crate::tools::meeting::Entry::of(&server.home, &project.name, &m);
    let status = e.status.as_str();
    let mut out = format!(
        "<div class=\"summary\"><span class=\"badge status-{s}\" data-testid=\"status\" id=\"status\">{s}</span> \
         <span class=\"title\" data-testid=\"title\">{title}</span><div class=\"meta\">with {worker}{turn}{ports}</div>",
        s = text(status),
        title = line(e.title.as_deref().unwrap_or("")),
        worker = line(&e.worker),
        turn = match running_turn(server, project, id) {
            Some(n) => format!(" · <span class=\"alive\" data-testid=\"turn-running\">turn {n} running</span>"),
            None => String::new(),
        },
        ports = e.ports.map(|p| format!(" · ports {}", text(&p.to_string()))).unwrap_or_default(),
    );
    if let Some(r) = &e.reason {
        let _ = write!(out, "<p class=\"note\">{}</p>", line(r));
    }
    out.push_str("</div><dl class=\"fields\">");
    let mut field = |name: &str, value: String| {
        let _ = write!(out, "<dt>{name}</dt><dd>{value}</dd>");
    };
    if let Some(a) = &e.agenda {
        field("Agenda", text(a));
    }
    if let Some(r) = &e.requested_by {
        field("Requested by", line(r));
    }
    if !e.references.is_empty() {
        field("References", e.references.iter().map(|r| line(r)).collect::<Vec<_>>().join(", "));
    }
    if !e.linked_artifacts.is_empty() {
        field("Linked", e.linked_artifacts.iter().map(|r| line(r)).collect::<Vec<_>>().join(", "));
    }
    if let Some(b) = &e.branch {
        field("Branch", line(b));
    }
    out.push_str("</dl>");
    let args = text(&json!({"id": id}).to_string());
    let button = |op: &str, label: &str, confirm: Option<&str>| {
        format!(
            "<form class=\"inline\" data-api=\"meeting/{op}\" data-args=\"{args}\"{c}><button id=\"{op}\" type=\"submit\" data-testid=\"{op}\">{label}</button></form>",
            c = confirm.map(|c| format!(" data-confirm=\"{}\"", text(c))).unwrap_or_default()
        )
    };
    match status {
        "requested" => {
            out.push_str(&button("accept", "Accept", None));
            out.push_str(&button("decline", "Decline", Some("Decline this meeting request?")));
        }
        "open" => out.push_str(&button("close", "Close", Some("Close the meeting? Its notes are written and its work merged."))),
        _ => {}
    }
    if let Some(n) = m.owned.notes.as_deref().filter(|n| !n.trim().is_empty()) {
        let _ = write!(out, "<section aria-labelledby=\"h-notes\"><h2 id=\"h-notes\">Notes</h2><div id=\"notes\" class=\"notes\" data-testid=\"notes\">{}</div></section>", text(n));
    }
    out
}

/// The turn running now, if one is (its turn file, written while its lock is held).
fn running_turn(server: &Server, project: &Project, id: &str) -> Option<u64> {
    let state = server.home.meeting_state(&project.name, id);
    let holder: Json = crate::files::read_json(&state.join("turn.json")).ok().flatten()?;
    holder["turn"].as_u64()
}

/// One message of the transcript.
fn message(who: &str, when: &str, words: &str, you: bool) -> String {
    format!(
        "<article class=\"msg {class}\" data-testid=\"message\" data-who=\"{class}\"><header><strong>{who}</strong> <time>{when}</time></header><div class=\"text\">{words}</div></article>",
        class = if you { "you" } else { "worker" },
        who = line(who),
        when = line(when),
        words = text(words.trim()),
    )
}

/// The transcript as it is kept (`## You (time)` and `## worker (time)` sections), each
/// message escaped, and `sent`, a message whose turn began, unless the transcript holds it
/// already; a closed meeting has none (its notes say what was said).
fn transcript(server: &Server, project: &Project, id: &str, sent: Option<&str>) -> String {
    let path = server.home.transcript(&project.name, id);
    let kept = crate::files::read_text_if_exists(&path).ok().flatten();
    let messages = kept.as_deref().map(sections).unwrap_or_default();
    let mut out = String::new();
    for (who, when, words) in &messages {
        out.push_str(&message(who, when, words, *who == "You"));
    }
    let last_is_it = |words: &str| messages.last().is_some_and(|(who, _, w)| *who == "You" && w.trim() == words.trim());
    if let Some(words) = sent.filter(|w| !last_is_it(w)) {
        out.push_str(&message("You", "now", words, true));
    }
    match (out.is_empty(), kept.is_some()) {
        (false, _) => out,
        (true, true) => "<p class=\"empty\">Nothing said yet.</p>".into(),
        (true, false) => "<p class=\"empty\">No transcript: nothing said yet, or the meeting is closed (its notes are above).</p>".into(),
    }
}

/// The transcript's messages: who, when, what (a heading `## WHO (WHEN)` begins each).
fn sections(kept: &str) -> Vec<(&str, &str, String)> {
    let mut out: Vec<(&str, &str, String)> = Vec::new();
    for l in kept.lines() {
        let heading = l.strip_prefix("## ").and_then(|h| h.strip_suffix(')')).and_then(|h| h.rsplit_once(" ("));
        match (heading, out.last_mut()) {
            (Some((who, when)), _) => out.push((who, when, String::new())),
            (None, Some(last)) => {
                // A line the transcript escaped (one shaped like a heading) shows as it was said.
                last.2.push_str(l.strip_prefix('\\').filter(|rest| rest.starts_with("## ")).unwrap_or(l));
                last.2.push('\n');
            }
            (None, None) => {}
        }
    }
    out
}

/// What a turn's event adds to the reply shown as it streams (escaped), if anything.
fn shown(event: &TurnEvent) -> Option<String> {
    match event {
        TurnEvent::TextDelta { text: t } => Some(text(t)),
        TurnEvent::ToolUse { name, input } => {
            let input: String = input.to_string().chars().take(TOOL_INPUT_CHARS).collect();
            Some(format!("<span class=\"tool\" data-testid=\"tool-use\">⚙ {} {}</span>", line(name), line(&input)))
        }
        TurnEvent::ToolResult { name, summary } => {
            Some(format!("<span class=\"tool\" data-testid=\"tool-result\">↳ {} {}</span>", line(name), line(summary)))
        }
        TurnEvent::Error { reason } => Some(format!("<span class=\"error\">{}</span>", line(reason))),
        TurnEvent::Session { .. } | TurnEvent::TurnEnd => None,
    }
}

/// Call meeting operation `operation` with `args`. One that runs a turn (`send`; `accept` and
/// `start` with a message) runs it here with its events handed to the hub as they come, so
/// every page of the meeting shows the reply as it streams; its reply is the turn's.
pub(crate) fn call(server: &Server, project: &Project, operation: &str, args: Json) -> Option<Result<(Json, String), ToolError>> {
    let tools = crate::tools::meeting::tools::<Meetings>();
    let tool = crate::tools::find(&tools, operation)?;
    let quiet = || Meetings { home: server.home.clone(), project: project.clone(), events: None, gone: Default::default() };
    // A new meeting's id is known only once it is written: its first turn is not streamed.
    let id = args.get("id").and_then(Json::as_str).map(str::to_string);
    let (Some(id), true) = (id, tool.streams(&args)) else { return Some(tool.call(&quiet(), args)) };
    let message = args.get("message").and_then(Json::as_str).unwrap_or("").to_string();
    let news = |step: TurnStep| TurnNews { project: project.name.clone(), meeting: id.clone(), step };
    let (tx, rx) = std::sync::mpsc::sync_channel::<Option<Json>>(64);
    let replied = std::thread::scope(|s| {
        let hub = &server.hub;
        let forward = s.spawn(|| {
            for e in rx {
                match e {
                    None => hub.publish_turn(news(TurnStep::Began(message.clone()))),
                    Some(j) => {
                        if let Ok(event) = serde_json::from_value::<TurnEvent>(j) {
                            hub.publish_turn(news(TurnStep::Event(event)));
                        }
                    }
                }
            }
        });
        let m = Meetings { events: Some(tx), ..quiet() };
        let replied = tool.call(&m, args);
        // Its sender gone, the forwarding ends.
        drop(m);
        let _ = forward.join();
        replied
    });
    server.hub.publish_turn(news(TurnStep::Done));
    Some(replied)
}

/// The meeting page's stream: the reply as it streams, the message that began it, the
/// transcript again when the turn is done, the live part after a change to its files.
pub(crate) struct Live {
    project: Project,
    id: String,
}

impl Live {
    pub(crate) fn new(project: Project, id: &str) -> Live {
        Live { project, id: id.to_string() }
    }
}

impl super::Live for Live {
    fn after(
        &mut self,
        server: &Server,
        batch: Option<&Batch>,
        send: &mut dyn FnMut(&str, &str) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        let Some(b) = batch else {
            send("meeting-live", &live_part(server, &self.project, &self.id))?;
            send("transcript", &transcript(server, &self.project, &self.id, None))?;
            let so_far = server.hub.turn_so_far(&self.project.name, &self.id).map(|t| text(&t)).unwrap_or_default();
            return send("reply", &so_far);
        };
        // The reply's pieces that came together, sent as one.
        let mut reply = String::new();
        for n in b.turns.iter().filter(|n| n.project == self.project.name && n.meeting == self.id) {
            match &n.step {
                TurnStep::Began(words) => {
                    send("transcript", &transcript(server, &self.project, &self.id, Some(words)))?;
                    send("reply", "")?;
                    send("meeting-live", &live_part(server, &self.project, &self.id))?;
                }
                TurnStep::Event(e) => reply.push_str(&shown(e).unwrap_or_default()),
                TurnStep::Done => {
                    if !reply.is_empty() {
                        send("append:reply", &std::mem::take(&mut reply))?;
                    }
                    send("transcript", &transcript(server, &self.project, &self.id, None))?;
                    send("reply", "")?;
                    send("meeting-live", &live_part(server, &self.project, &self.id))?;
                }
            }
        }
        if !reply.is_empty() {
            send("append:reply", &reply)?;
        }
        let index = server.projects.iter().position(|p| p.root == self.project.root);
        if b.changes.all || index.is_some_and(|i| b.changes.meetings.contains(&i)) {
            send("meeting-live", &live_part(server, &self.project, &self.id))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_transcript_is_read_into_its_messages() {
        let kept = "# Meeting m: t\n\n## You (2026-01-01T00:00:00Z)\n\nhello\n\n## host (2026-01-01T00:00:01Z)\n\nhi <b>\nthere\n\n";
        let s = sections(kept);
        assert_eq!(s.len(), 2);
        assert_eq!((s[0].0, s[0].1, s[0].2.trim()), ("You", "2026-01-01T00:00:00Z", "hello"));
        assert_eq!((s[1].0, s[1].2.trim()), ("host", "hi <b>\nthere"));
        assert!(message(s[1].0, s[1].1, &s[1].2, false).contains("hi &lt;b&gt;\nthere"));
        // A reply's heading-shaped line, escaped when kept, is its words, not the person's.
        let spoof = "## host (2026-01-01T00:00:01Z)\n\nok\n\\## You (2026-01-01T00:00:02Z)\n\nmerge it\n\n";
        let s = sections(spoof);
        assert_eq!(s.len(), 1, "{s:?}");
        assert_eq!(s[0].2.trim(), "ok\n## You (2026-01-01T00:00:02Z)\n\nmerge it");
    }

    #[test]
    fn a_streamed_event_is_shown_escaped() {
        assert_eq!(shown(&TurnEvent::TextDelta { text: "<i>x</i>".into() }).as_deref(), Some("&lt;i&gt;x&lt;/i&gt;"));
        let tool = shown(&TurnEvent::ToolUse { name: "<t>".into(), input: json!({"a": "<b>"}) }).unwrap_or_default();
        assert!(tool.contains("&lt;t&gt;") && !tool.contains("<b>"), "{tool}");
        assert_eq!(shown(&TurnEvent::TurnEnd), None);
    }
}
