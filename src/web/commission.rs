//! `/commissions/<id>`: one commission — its state as the board reads it, the questions its
//! worker waits on (answered here), its frontmatter as written, its timeline, its usage, its
//! worker's log (followed), and the change in review with approve, revise (with comments on
//! lines) and reject. Every action is a catalogue operation (`api`); every outside text is
//! escaped ([`super::html`]).

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::PathBuf;

use serde_json::{json, Value as Json};

use crate::activity::diff::Part;
use crate::board::model::{self, Item};
use crate::config::Project;
use crate::ops::dispatcher::Dispatcher;

use super::context::Server;
use super::html::{bytes, line, page, text};
use super::http::{Request, Response};
use super::hub::Batch;

/// How much of a log's end the page shows at first, and sends at most per event.
const LOG_WINDOW: u64 = 64 * 1024;

pub(crate) fn page_of(server: &Server, project: &Project, id: &str) -> Response {
    if crate::artifact::ids::validate_id(id).is_err() || !project.commission_path(id).exists() {
        return super::context::not_found(&anyhow::anyhow!("no commission {id} in {}", project.root.display()));
    }
    // Both before the reading: a change after it is one the page's stream sends.
    let generation = server.hub.generation().to_string();
    let shown = review_state(server, project, id);
    let mut body = format!("<h1>Commission <span class=\"id\">{}</span></h1>\n", line(id));
    // What needs a person first: its state, its questions, its change and the verdicts; then
    // its log; then its record (the frontmatter as written, the timeline).
    let _ = writeln!(body, "<div id=\"commission-live\" data-testid=\"commission-live\">{}</div>", live_part(server, project, id));
    let _ = writeln!(body, "<section id=\"review\" aria-labelledby=\"h-diff\">{}</section>", review_part(server, project, id));
    let (log, attempt, offset) = log_from(server, project, id, None);
    let _ = writeln!(
        body,
        "<section aria-labelledby=\"h-log\"><h2 id=\"h-log\">Log <span id=\"log-attempt\">{}</span></h2>\
         <pre id=\"log\" class=\"log\" data-testid=\"log\" tabindex=\"0\" aria-live=\"off\">{log}</pre></section>",
        attempt.map(|a| format!("(attempt {a})")).unwrap_or_default()
    );
    let _ = write!(body, "<div id=\"commission-record\" data-testid=\"commission-record\">{}</div>", record_part(project, id));
    let name = project.name.clone();
    let (tip, in_review) = (shown.0.unwrap_or_default(), if shown.1 { "yes" } else { "no" });
    let attempt = attempt.map(|a| a.to_string()).unwrap_or_default();
    let offset = offset.to_string();
    Response::html(page(
        &format!("commission {id}"),
        &body,
        &[
            ("view", "commission"),
            ("id", id),
            ("project", &name),
            ("generation", &generation),
            ("attempt", &attempt),
            ("offset", &offset),
            ("tip", &tip),
            ("review", in_review),
            // Its stream's events besides those every page takes.
            ("events", "commission-record"),
        ],
    ))
}

/// Its row as the board reads it.
fn item(server: &Server, project: &Project, id: &str) -> Option<Item> {
    let index = server.projects.iter().position(|p| p.root == project.root).unwrap_or(0);
    let ids = BTreeSet::from([id.to_string()]);
    model::commissions(&server.home, project, index, &ids, chrono::Utc::now()).ok()?.into_iter().next()
}

/// A catalogue operation's reply, for what the page reads (the status with open questions).
fn ask(server: &Server, project: &Project, operation: &str, args: Json) -> Option<Json> {
    let tools = crate::tools::dispatcher::tools::<Dispatcher>();
    let d = Dispatcher { home: server.home.clone(), project: project.clone() };
    crate::tools::find(&tools, operation)?.call(&d, args).ok().map(|(reply, _)| reply)
}

/// What changes as it runs: the state, the actions it allows, the questions, the usage. Sent
/// again by its stream after a change.
pub(crate) fn live_part(server: &Server, project: &Project, id: &str) -> String {
    let mut out = String::new();
    let Some(i) = item(server, project, id) else {
        return "<p data-testid=\"status\">gone: its file was removed</p>".into();
    };
    // Its title as written, control characters shown as the CLI shows them (the board's item
    // has them removed, as the terminal board shows it).
    let title = crate::ops::commission::load(project, id).ok().and_then(|c| c.title).unwrap_or_else(|| i.title.clone());
    let _ = write!(
        out,
        "<div class=\"summary\"><span class=\"badge status-{s}\" data-testid=\"status\" id=\"status\">{s}</span> \
         <span class=\"title\" data-testid=\"title\">{title}</span><div class=\"meta\">{worker}{attempt}{alive}</div>{note}</div>",
        s = text(&i.status),
        title = line(&title),
        worker = if i.worker.is_empty() { String::new() } else { format!("worker {}", line(&i.worker)) },
        attempt = if i.attempt > 0 { format!(" · attempt {}", i.attempt) } else { String::new() },
        alive = if i.alive { " · <span class=\"alive\">running</span>" } else { "" },
        note = if i.note.is_empty() { String::new() } else { format!("<p class=\"note\">{}</p>", line(&i.note)) },
    );
    let settled = matches!(i.status.as_str(), "completed" | "cancelled" | "failed" | "abandoned");
    if !settled {
        let _ = write!(
            out,
            "<form class=\"inline\" data-api=\"commission/cancel\" data-args=\"{}\" data-confirm=\"Cancel commission {}?\">\
             <button id=\"cancel\" class=\"secondary\" type=\"submit\" data-testid=\"cancel\">Cancel</button></form>",
            text(&json!({"jobId": id}).to_string()),
            text(id)
        );
    }
    if matches!(i.status.as_str(), "failed" | "cancelled") {
        // Run again from the work kept on its branch, as `commission redispatch` does.
        let _ = write!(
            out,
            "<form class=\"inline\" data-api=\"commission/redispatch\" data-args=\"{}\">\
             <button id=\"redispatch\" type=\"submit\" data-testid=\"redispatch\">Run again</button></form>",
            text(&json!({"jobId": id}).to_string()),
        );
    }
    out.push_str(&questions(server, project, id));
    out.push_str("<section aria-labelledby=\"h-usage\"><h2 id=\"h-usage\">Usage</h2><p id=\"usage\" data-testid=\"usage\">");
    match i.usage {
        Some(u) => {
            let _ = write!(
                out,
                "{} in · {} out · {} cached tokens{}",
                u.input_tokens(),
                u.output_tokens(),
                u.cached_tokens(),
                u.usd_text().map(|d| format!(" · {}", text(&d))).unwrap_or_default()
            );
        }
        None => out.push_str("none recorded yet"),
    }
    out.push_str("</p></section>");
    out
}

/// Its record: the frontmatter as written and the timeline. Sent again by its stream after a
/// change.
pub(crate) fn record_part(project: &Project, id: &str) -> String {
    let fm = frontmatter(&project.commission_path(id));
    let mut out = format!(
        "<details open><summary><h2>Frontmatter</h2></summary><pre id=\"frontmatter\" data-testid=\"frontmatter\">{fm}</pre></details>"
    );
    out.push_str(&timeline(project, id));
    out
}

/// The questions its worker asked: each open one with an answer box.
fn questions(server: &Server, project: &Project, id: &str) -> String {
    let mut out = String::from("<section id=\"questions\" data-testid=\"questions\" aria-labelledby=\"h-q\"><h2 id=\"h-q\">Questions</h2>");
    let status = ask(server, project, "status", json!({"jobId": id}));
    let open = status.as_ref().and_then(|s| s.get("openQuestions")).and_then(Json::as_array).cloned().unwrap_or_default();
    let asked = status.as_ref().and_then(|s| s.get("questions")).and_then(Json::as_array).cloned().unwrap_or_default();
    if open.is_empty() && asked.is_empty() {
        out.push_str("<p>None asked.</p>");
    }
    for q in &open {
        let n = q.get("number").and_then(Json::as_u64).unwrap_or(0);
        let words = q.get("question").and_then(Json::as_str).unwrap_or("");
        let _ = write!(
            out,
            "<form class=\"question\" data-testid=\"answer-form\" data-api=\"commission/answer\" data-args=\"{args}\">\
             <p><strong>Question {n}</strong>: <span class=\"asked\">{q}</span></p>\
             <label for=\"answer-{n}\">Your answer</label><textarea id=\"answer-{n}\" name=\"text\" rows=\"3\" required data-keep></textarea>\
             <button type=\"submit\">Answer</button></form>",
            args = text(&json!({"jobId": id, "question": n}).to_string()),
            q = text(words),
        );
    }
    let open_words: BTreeSet<&str> = open.iter().filter_map(|q| q.get("question").and_then(Json::as_str)).collect();
    let answered: Vec<&str> = asked.iter().filter_map(Json::as_str).filter(|q| !open_words.contains(q)).collect();
    if !answered.is_empty() {
        out.push_str("<ul class=\"answered\">");
        for q in answered {
            let _ = write!(out, "<li>{}</li>", text(q));
        }
        out.push_str("</ul>");
    }
    out.push_str("</section>");
    out
}

/// The frontmatter as written (escaped), or why it cannot be read.
fn frontmatter(path: &std::path::Path) -> String {
    match crate::artifact::read_regular(path) {
        Ok(t) => match crate::artifact::frontmatter::split(&t) {
            Ok(split) => text(split.yaml),
            Err((l, why)) => text(&format!("{}:{l}: {why}", path.display())),
        },
        Err(e) => text(&format!("{}: {e}", path.display())),
    }
}

fn timeline(project: &Project, id: &str) -> String {
    let mut out = String::from(
        "<section aria-labelledby=\"h-timeline\"><h2 id=\"h-timeline\">Timeline</h2><ol id=\"timeline\" data-testid=\"timeline\">",
    );
    match crate::ops::timeline::of(project, id) {
        Ok(entries) => {
            for e in &entries {
                let _ = write!(out, "<li>{}</li>", text(&crate::activity::timeline::render(e)));
            }
        }
        Err(e) => {
            let _ = write!(out, "<li>{}</li>", line(&format!("{e:#}")));
        }
    }
    out.push_str("</ol></section>");
    out
}

/// The log's text (escaped) from `offset` (else its last [`LOG_WINDOW`]), its attempt, and
/// where it ends now. Only whole lines are taken, unless a line is longer than the window.
fn log_from(server: &Server, project: &Project, id: &str, from: Option<u64>) -> (String, Option<u32>, u64) {
    let Ok((path, attempt)) = crate::ops::logs::worker_log(&server.home, project, id, None) else { return (String::new(), None, 0) };
    let (text, end) = read_log(&path, from);
    (text, Some(attempt), end)
}

pub(crate) fn read_log(path: &PathBuf, from: Option<u64>) -> (String, u64) {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut f) = std::fs::File::open(path) else { return (String::new(), from.unwrap_or(0)) };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let start = match from {
        Some(o) if o <= len => o,
        _ => len.saturating_sub(LOG_WINDOW),
    };
    let mut buf = Vec::new();
    if f.seek(SeekFrom::Start(start)).is_err() || f.take(LOG_WINDOW).read_to_end(&mut buf).is_err() {
        return (String::new(), start);
    }
    let whole = match buf.iter().rposition(|b| *b == b'\n') {
        Some(at) => at + 1,
        None if buf.len() as u64 >= LOG_WINDOW => buf.len(),
        None => 0,
    };
    (bytes(&buf[..whole]), start + whole as u64)
}

/// The change in review: the diff with a comment button on each line, and the verdicts.
pub(crate) fn review_part(server: &Server, project: &Project, id: &str) -> String {
    let mut out = String::from("<h2 id=\"h-diff\">Change</h2>");
    let status = item(server, project, id).map(|i| i.status).unwrap_or_default();
    let diff = match crate::ops::diff::of(&server.home, project, id, crate::ops::diff::Detail::Patch) {
        Ok(d) => d,
        Err(e) => {
            let _ = write!(out, "<p id=\"diff\" data-testid=\"diff\">{}</p>", line(&format!("{e:#}")));
            return out;
        }
    };
    let _ = write!(
        out,
        "<p>{} file{} · <span class=\"add\">+{}</span> <span class=\"del\">−{}</span> · {} at {}</p>",
        diff.files.len(),
        if diff.files.len() == 1 { "" } else { "s" },
        diff.additions,
        diff.deletions,
        line(&diff.branch),
        text(diff.tip.get(..12).unwrap_or(&diff.tip))
    );
    let in_review = status == "review";
    let _ = write!(out, "<div id=\"diff\" data-testid=\"diff\" data-tip=\"{}\">", text(&diff.tip));
    for f in &diff.files {
        let _ = write!(out, "<section class=\"file\"><h3 class=\"path\">{}</h3>", line(&f.path));
        let Some(Some(patch)) = &f.patch else {
            out.push_str("<p>binary: not shown</p></section>");
            continue;
        };
        // The columns' widths first: a fixed layout takes them from the first row, a hunk's.
        out.push_str("<table class=\"diff\"><colgroup><col class=\"n\"><col class=\"n\"><col class=\"b\"><col></colgroup><tbody>");
        let mut new_line: u32 = 0;
        let mut old_line: u32 = 0;
        for (part, l) in crate::activity::diff::parts(patch) {
            let (class, old, new) = match part {
                Part::Header => continue,
                Part::Hunk => {
                    (old_line, new_line) = hunk_starts(l);
                    let _ = write!(out, "<tr class=\"hunk\"><td colspan=\"4\">{}</td></tr>", line(l));
                    continue;
                }
                Part::Added => {
                    new_line += 1;
                    ("add", None, Some(new_line))
                }
                Part::Removed => {
                    old_line += 1;
                    ("del", Some(old_line), None)
                }
                Part::Context => {
                    old_line += 1;
                    new_line += 1;
                    ("ctx", Some(old_line), Some(new_line))
                }
            };
            let num = |n: Option<u32>| n.map(|n| n.to_string()).unwrap_or_default();
            // A comment goes on a line of the work as it is now (an added or kept line).
            let (attrs, button) = match new {
                Some(n) if in_review => (
                    format!(" data-path=\"{}\" data-line=\"{n}\"", text(&f.path)),
                    format!(
                        "<button type=\"button\" class=\"comment\" data-testid=\"comment-line\" aria-label=\"Comment on {}:{n}\">+</button>",
                        text(&f.path)
                    ),
                ),
                Some(n) => (format!(" data-path=\"{}\" data-line=\"{n}\"", text(&f.path)), String::new()),
                None => (String::new(), String::new()),
            };
            let _ = write!(
                out,
                "<tr class=\"{class}\" data-testid=\"diff-line\"{attrs}><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"b\">{button}</td><td class=\"code\">{}</td></tr>",
                num(old),
                num(new),
                line(l)
            );
        }
        out.push_str("</tbody></table></section>");
    }
    out.push_str("</div>");
    // Below the change: what a reviewer decides once it is read.
    if in_review {
        out.push_str(&verdicts(id));
    }
    out
}

/// `@@ -a,b +c,d @@`: the old and new lines before the hunk's first (`a - 1`, `c - 1`).
fn hunk_starts(l: &str) -> (u32, u32) {
    let mut old = 0;
    let mut new = 0;
    for w in l.split_whitespace() {
        let n = |s: &str| s.split(',').next().and_then(|n| n.parse::<u32>().ok()).unwrap_or(1).saturating_sub(1);
        if let Some(s) = w.strip_prefix('-') {
            old = n(s);
        } else if let Some(s) = w.strip_prefix('+') {
            new = n(s);
        }
    }
    (old, new)
}

/// Approve, revise (its message and the line comments), reject.
fn verdicts(id: &str) -> String {
    let args = text(&json!({"jobId": id}).to_string());
    format!(
        "<div class=\"verdicts\" data-testid=\"verdicts\">\
         <form class=\"inline\" data-api=\"commission/approve\" data-args=\"{args}\"><button id=\"approve\" type=\"submit\" data-testid=\"approve\" accesskey=\"a\">Approve</button></form>\
         <form id=\"revise-form\" data-api=\"commission/revise\" data-args=\"{args}\" data-feedback data-testid=\"revise-form\">\
         <label for=\"revise-message\">What to change (comments on lines are added with the + beside each line)</label>\
         <textarea id=\"revise-message\" name=\"message\" rows=\"3\" data-keep></textarea>\
         <p class=\"hint\"><span id=\"comment-count\" data-testid=\"comment-count\">0</span> line comments</p>\
         <button id=\"revise\" type=\"submit\" data-testid=\"revise\">Send back</button></form>\
         <form id=\"reject-form\" data-api=\"commission/reject\" data-args=\"{args}\" data-confirm=\"Reject this work? Its branch is kept.\" data-testid=\"reject-form\">\
         <label for=\"reject-message\">Why (optional)</label><textarea id=\"reject-message\" name=\"message\" rows=\"2\" data-keep></textarea>\
         <button id=\"reject\" class=\"secondary\" type=\"submit\" data-testid=\"reject\">Reject</button></form></div>"
    )
}

/// The commission page's stream: its live part again after a change to its files; the log's
/// new lines as they are written (a new attempt's log from its start); the change section only
/// when its branch moved or it entered or left review (not under a person writing comments).
pub(crate) struct Live {
    project: Project,
    id: String,
    attempt: Option<u32>,
    offset: u64,
    /// What the change section shows: the branch's tip, and whether the verdicts are offered.
    shown: (Option<String>, bool),
}

/// The branch tip and whether the commission is in review: when either moves, the change
/// section is sent again.
fn review_state(server: &Server, project: &Project, id: &str) -> (Option<String>, bool) {
    let tip = crate::ops::diff::of(&server.home, project, id, crate::ops::diff::Detail::Stat).ok().map(|d| d.tip);
    (tip, item(server, project, id).is_some_and(|i| i.status == "review"))
}

impl Live {
    pub(crate) fn new(project: Project, id: &str, req: &Request) -> Live {
        let attempt = req.param("attempt").and_then(|a| a.parse().ok());
        let offset = req.param("offset").and_then(|a| a.parse().ok()).unwrap_or(0);
        // As the page showed it (its data), so that a stream opened after a change sends it.
        let shown = (req.param("tip").map(str::to_string), req.param("review") == Some("yes"));
        Live { project, id: id.to_string(), attempt, offset, shown }
    }

    fn log(&mut self, server: &Server, send: &mut dyn FnMut(&str, &str) -> std::io::Result<()>) -> std::io::Result<()> {
        let Ok((path, attempt)) = crate::ops::logs::worker_log(&server.home, &self.project, &self.id, None) else { return Ok(()) };
        if self.attempt != Some(attempt) {
            self.attempt = Some(attempt);
            self.offset = 0;
            send("log-attempt", &format!("(attempt {attempt})"))?;
            send("log", "")?;
        }
        loop {
            let (text, end) = read_log(&path, Some(self.offset));
            if end == self.offset {
                return Ok(());
            }
            self.offset = end;
            send("append:log", &text)?;
        }
    }
}

impl super::context::Live for Live {
    fn after(
        &mut self,
        server: &Server,
        batch: Option<&Batch>,
        send: &mut dyn FnMut(&str, &str) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        let touched = |b: &Batch| b.changes.all || b.changes.commissions.values().any(|ids| ids.contains(&self.id)) || b.changes.detail;
        if batch.is_some_and(|b| !touched(b)) {
            return Ok(());
        }
        let only_log = batch.is_some_and(|b| b.paths.iter().all(|p| crate::board::is_noise(p)));
        if !only_log {
            send("commission-live", &live_part(server, &self.project, &self.id))?;
            send("commission-record", &record_part(&self.project, &self.id))?;
            let now = review_state(server, &self.project, &self.id);
            if now != self.shown {
                self.shown = now;
                send("review", &review_part(server, &self.project, &self.id))?;
            }
        }
        self.log(server, send)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hunk_header_gives_the_lines_before_it() {
        assert_eq!(hunk_starts("@@ -10,3 +12,4 @@ fn x()"), (9, 11));
        assert_eq!(hunk_starts("@@ -0,0 +1 @@"), (0, 0));
    }
}
