//! `/`: the board in a browser — the terminal board's items ([`crate::board::model`]: the same
//! reading, the same order by need) in three columns: what needs a person (review, failed,
//! questions, meeting requests, halted plans), what runs, and the rest; filtered by words
//! (`status:S`, `worker:W` as the board takes them), status and kind. Its event stream sends
//! the columns again after each change.

use std::fmt::Write as _;

use crate::board::model::{self, Item, Kind};

use super::context::Server;
use super::html::{line, page, text};
use super::http::{encode, Request, Response};

/// The filter a request asks for: `q` (the board's words), `status`, `kind`.
#[derive(Debug, Default, Clone)]
pub(crate) struct Filter {
    pub(crate) q: String,
    pub(crate) status: String,
    pub(crate) kind: String,
}

impl Filter {
    pub(crate) fn of(req: &Request) -> Filter {
        let p = |k: &str| req.param(k).unwrap_or("").to_string();
        Filter { q: p("q"), status: p("status"), kind: p("kind") }
    }

    fn keeps(&self, i: &Item) -> bool {
        (self.status.is_empty() || i.status == self.status)
            && (self.kind.is_empty() || kind_name(i.kind) == self.kind)
            && i.matches(&self.q)
    }
}

pub(crate) fn kind_name(k: Kind) -> &'static str {
    match k {
        Kind::Commission => "commission",
        Kind::Plan => "plan",
        Kind::Meeting => "meeting",
    }
}

/// The statuses the filter offers.
const STATUSES: [&str; 14] = [
    "review",
    "failed",
    "invalid",
    "orphaned",
    "requested",
    "halted",
    "in_progress",
    "dispatched",
    "running",
    "verifying",
    "open",
    "pending",
    "blocked",
    "completed",
];

pub(crate) fn page_of(server: &Server, req: &Request) -> Response {
    let f = Filter::of(req);
    // Before the reading: a change after it is one the page's stream is sent again.
    let generation = server.hub.generation().to_string();
    let mut body = String::from("<h1>Board</h1>\n");
    let _ = write!(
        body,
        "<form id=\"filters\" class=\"filters\" method=\"get\" action=\"/\" role=\"search\" data-testid=\"filters\">\
         <label>Find <input id=\"filter-text\" name=\"q\" type=\"search\" value=\"{q}\" placeholder=\"words, status:review, worker:scribe\" data-testid=\"filter-text\" accesskey=\"f\"></label>\
         <label>Status <select id=\"filter-status\" name=\"status\" data-testid=\"filter-status\"><option value=\"\">any</option>{statuses}</select></label>\
         <label>Kind <select id=\"filter-kind\" name=\"kind\" data-testid=\"filter-kind\"><option value=\"\">any</option>{kinds}</select></label>\
         <button type=\"submit\">Filter</button></form>",
        q = text(&f.q),
        statuses = options(&STATUSES, &f.status),
        kinds = options(&["commission", "plan", "meeting"], &f.kind),
    );
    let (items, problems) = model::load(&server.home, &server.projects, chrono::Utc::now());
    let _ = write!(body, "\n<div id=\"board\" data-testid=\"board\">{}</div>", columns(server, &items, &problems, &f));
    Response::html(page("Board", &body, &[("view", "board"), ("generation", &generation)]))
}

fn options(values: &[&str], chosen: &str) -> String {
    values.iter().map(|v| format!("<option{}>{v}</option>", if *v == chosen { " selected" } else { "" })).collect()
}

/// A column: its test id, its heading, and the needs ([`Item::need`]) it takes.
type Group = (&'static str, &'static str, fn(u8) -> bool);

/// The three columns of `items`, with the `problems` above them.
pub(crate) fn columns(server: &Server, items: &[Item], problems: &[model::Problem], f: &Filter) -> String {
    let mut out = String::new();
    if !problems.is_empty() {
        out.push_str("<section class=\"problems\" data-testid=\"problems\"><h2>Problems</h2><ul>");
        for (_, _, why) in problems {
            let _ = write!(out, "<li>{}</li>", line(why));
        }
        out.push_str("</ul></section>");
    }
    out.push_str(&reconcilers(server));
    out.push_str("<div class=\"columns\">");
    let groups: [Group; 3] = [("needs-you", "Needs you", |n| n <= 4), ("running", "Running", |n| n == 5), ("rest", "The rest", |n| n > 5)];
    for (testid, title, takes) in groups {
        let mine: Vec<&Item> = items.iter().filter(|i| takes(i.need())).collect();
        let _ = write!(
            out,
            "<section class=\"column\" data-testid=\"{testid}\" aria-labelledby=\"h-{testid}\"><h2 id=\"h-{testid}\">{title} <span class=\"count\">{}</span></h2><ul class=\"cards\">",
            mine.len()
        );
        for i in mine {
            card(&mut out, server, i, f.keeps(i));
        }
        out.push_str("</ul></section>");
    }
    out.push_str("</div>");
    if items.is_empty() {
        out.push_str("<p class=\"empty\">Nothing yet: write a commission under <code>.lore/commissions/</code>, or <code>guild-hall commission new</code>.</p>");
    }
    out
}

/// Who reconciles each project: this server, another process (as its lock names it), or no
/// one (then what the pages write waits for a `reconcile` or a `watch`).
fn reconcilers(server: &Server) -> String {
    let me = format!("(pid {})", std::process::id());
    let said: Vec<String> = server
        .projects
        .iter()
        .map(|p| {
            let lock = server.home.project_state(&p.name).join("lock");
            let who = if crate::board::held(&lock) {
                let text = model::clean(&std::fs::read_to_string(&lock).unwrap_or_default());
                match text.split(" since ").next() {
                    Some(w) if w.contains(&me) => "this server".to_string(),
                    Some(w) if !w.is_empty() => w.to_string(),
                    _ => "another process".to_string(),
                }
            } else {
                "no one: what you do here waits for `guild-hall reconcile` or a `watch`".to_string()
            };
            if server.projects.len() > 1 {
                format!("{}: {}", line(&p.name), line(&who))
            } else {
                line(&who)
            }
        })
        .collect();
    format!("<p class=\"reconciler meta\" data-testid=\"reconciler\">Reconciled by {}</p>", said.join(" · "))
}

/// The page of an item.
pub(crate) fn href(server: &Server, i: &Item) -> String {
    let project = match server.projects.get(i.project) {
        Some(p) if server.projects.len() > 1 => format!("?project={}", encode(&p.name)),
        _ => String::new(),
    };
    format!("/{}s/{}{project}", kind_name(i.kind), encode(&i.id))
}

fn card(out: &mut String, server: &Server, i: &Item, shown: bool) {
    let hay = [i.id.as_str(), &i.title, &i.status, &i.worker, &i.note, i.kind.word()].join(" ").to_lowercase();
    let _ = write!(
        out,
        "<li class=\"card status-{status}\" data-testid=\"item\" data-kind=\"{kind}\" data-id=\"{id}\" data-status=\"{status}\" data-worker=\"{worker}\" data-text=\"{hay}\"{hidden}>\
         <a href=\"{href}\"><span class=\"kind\">{kind}</span> <span class=\"id\">{id}</span></a> \
         <span class=\"badge\" data-testid=\"item-status\">{status}</span>",
        status = text(&i.status),
        kind = kind_name(i.kind),
        id = line(&i.id),
        worker = text(&i.worker),
        hay = text(&hay),
        hidden = if shown { "" } else { " hidden" },
        href = text(&href(server, i)),
    );
    if !i.title.is_empty() {
        let _ = write!(out, "<div class=\"title\" data-testid=\"item-title\">{}</div>", line(&i.title));
    }
    let mut meta = Vec::new();
    if !i.worker.is_empty() {
        meta.push(line(&i.worker));
    }
    if i.attempt > 1 {
        meta.push(format!("attempt {}", i.attempt));
    }
    if i.questions > 0 {
        meta.push(format!("<strong>{} question{}</strong>", i.questions, if i.questions == 1 { "" } else { "s" }));
    }
    if i.alive {
        meta.push("<span class=\"alive\">running</span>".into());
    }
    if let Some(w) = i.current_wave() {
        meta.push(format!("wave {w} of {}", i.waves.len()));
    }
    if server.projects.len() > 1 {
        if let Some(p) = server.projects.get(i.project) {
            meta.push(line(&p.name));
        }
    }
    if !meta.is_empty() {
        let _ = write!(out, "<div class=\"meta\">{}</div>", meta.join(" · "));
    }
    if !i.note.is_empty() {
        let _ = write!(out, "<div class=\"note\">{}</div>", line(&i.note));
    }
    out.push_str("</li>");
}

/// The board's stream: the columns again after a change to any item, only what the change
/// touches read again ([`model::read_again`], as the terminal board does); after a worker's log
/// or heartbeat alone, at most every [`crate::board::NOISE_RELOAD`].
pub(crate) struct Live {
    filter: Filter,
    /// The items as last read, and the problems; `None` before the first reading.
    read: Option<(Vec<Item>, Vec<model::Problem>)>,
    /// Changes held back by the throttle, read with the next batch.
    pending: crate::board::changes::Changes,
    sent: Option<std::time::Instant>,
}

impl Live {
    pub(crate) fn new(filter: Filter) -> Live {
        Live { filter, read: None, pending: Default::default(), sent: None }
    }
}

impl super::context::Live for Live {
    fn after(
        &mut self,
        server: &Server,
        batch: Option<&super::hub::Batch>,
        send: &mut dyn FnMut(&str, &str) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        let changes = match batch {
            None => None,
            Some(b) if b.changes.is_empty() => return Ok(()),
            Some(b) => {
                self.pending.merge(b.changes.clone());
                let noise = b.paths.iter().all(|p| crate::board::is_noise(p));
                if noise && self.sent.is_some_and(|t| t.elapsed() < crate::board::NOISE_RELOAD) {
                    return Ok(());
                }
                Some(std::mem::take(&mut self.pending))
            }
        };
        let (home, projects) = (&server.home, &server.projects);
        let fresh = match (&mut self.read, &changes) {
            (Some((items, problems)), Some(c)) => model::read_again(home, projects, items, problems, c),
            _ => false,
        };
        if !fresh {
            self.read = Some(model::load(home, projects, chrono::Utc::now()));
        }
        self.sent = Some(std::time::Instant::now());
        let (items, problems) = self.read.as_ref().map(|(i, p)| (i.as_slice(), p.as_slice())).unwrap_or_default();
        send("board", &columns(server, items, problems, &self.filter))
    }
}
