//! `/plans/<id>`: one plan — its state (as `plan show` reads it) and actions (retry, cancel),
//! its waves with each task's state, attempt, ports, usage and submitted result, and each
//! task's worker log, followed. Every outside text is escaped ([`super::html`]).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::json;

use crate::config::Project;
use crate::tools::plan::{Shown, ShownTask};

use super::html::{line, page, text};
use super::http::{Request, Response};
use super::hub::Batch;
use super::Server;

/// The element id of a task's log (its canonical id's slug: letters, digits, `-`).
fn log_element(slug: &str) -> String {
    format!("tasklog-{slug}")
}

pub(crate) fn page_of(server: &Server, project: &Project, id: &str) -> Response {
    if crate::artifact::ids::validate_id(id).is_err() || !project.plans_dir().join(format!("{id}.md")).exists() {
        return super::not_found(&anyhow::anyhow!("no plan {id} in {}", project.root.display()));
    }
    // Before the reading: a change after it is one the page's stream sends.
    let generation = server.hub.generation().to_string();
    let mut body = format!("<h1>Plan <span class=\"id\">{}</span></h1>\n", line(id));
    let view = crate::ops::plan::view(&server.home, project, id).map(|(_, _, shown)| shown);
    let _ = writeln!(body, "<div id=\"plan-live\" data-testid=\"plan-live\">{}</div>", live_part(id, &view));
    // The logs stay outside the live part: what a person opened stays open as it follows.
    let mut events = Vec::new();
    let mut offsets = Vec::new();
    if let Ok(shown) = &view {
        body.push_str("<section aria-labelledby=\"h-logs\"><h2 id=\"h-logs\">Logs</h2>");
        for t in &shown.tasks {
            let slug = crate::artifact::plan::slug(&t.task);
            let (log, end) = task_log(server, project, t, None);
            offsets.push(format!("{slug}:{}:{end}", t.attempt));
            let el = log_element(&slug);
            events.push(format!("{el} append:{el}"));
            let _ = write!(
                body,
                "<details class=\"task-log\" data-testid=\"task-log\" data-task=\"{task}\"><summary>{label} <span class=\"meta\">{task}</span></summary>\
                 <pre id=\"{el}\" class=\"log\" tabindex=\"0\">{log}</pre></details>",
                task = text(&t.task),
                label = line(&t.label),
            );
        }
        body.push_str("</section>");
    }
    let name = project.name.clone();
    let (events, offsets) = (events.join(" "), offsets.join(","));
    Response::html(page(
        &format!("plan {id}"),
        &body,
        &[("view", "plan"), ("id", id), ("project", &name), ("generation", &generation), ("events", &events), ("logs", &offsets)],
    ))
}

/// What changes as it runs: its state, actions, and the waves with their tasks.
fn live_part(id: &str, view: &anyhow::Result<Shown>) -> String {
    let shown = match view {
        Ok(s) => s,
        Err(e) => return format!("<p data-testid=\"status\">{}</p>", line(&format!("{e:#}"))),
    };
    let status = shown.status.as_str();
    let mut out = format!(
        "<div class=\"summary\"><span class=\"badge status-{s}\" data-testid=\"status\" id=\"status\">{s}</span> \
         <span class=\"title\" data-testid=\"title\">{title}</span><div class=\"meta\">{wave}{waves} wave{plural} · parallelism {par}{verify}</div>",
        s = text(status),
        title = line(shown.title.as_deref().unwrap_or("")),
        wave = shown.wave.filter(|w| *w > 0).map(|w| format!("at wave {w} of ")).unwrap_or_default(),
        waves = shown.waves,
        plural = if shown.waves == 1 { "" } else { "s" },
        par = shown.parallelism,
        verify = if shown.verify_runs > 0 { format!(" · {} verify runs", shown.verify_runs) } else { String::new() },
    );
    for note in [&shown.reason, &shown.problem, &shown.elsewhere, &shown.integrated].into_iter().flatten() {
        let _ = write!(out, "<p class=\"note\">{}</p>", line(note));
    }
    out.push_str("</div><dl class=\"fields\">");
    if let Some(v) = &shown.verify {
        let _ = write!(out, "<dt>Verify</dt><dd><code>{}</code></dd>", line(&v.join(" ")));
    }
    if let Some(f) = &shown.fixer {
        let _ = write!(out, "<dt>Fixer</dt><dd>{}</dd>", line(f));
    }
    let _ = write!(out, "<dt>Usage</dt><dd id=\"usage\" data-testid=\"usage\">{}</dd></dl>", usage_text(shown.usage.as_ref()));
    let args = text(&json!({"id": id}).to_string());
    if matches!(status, "failed" | "halted") {
        let _ = write!(out, "<form class=\"inline\" data-api=\"plan/retry\" data-args=\"{args}\"><button id=\"retry\" type=\"submit\" data-testid=\"retry\">Retry</button></form>");
    }
    if !matches!(status, "completed" | "cancelled" | "failed") {
        let _ = write!(
            out,
            "<form class=\"inline\" data-api=\"plan/cancel\" data-args=\"{args}\" data-confirm=\"Cancel plan {}? Its running tasks are stopped.\">\
             <button id=\"cancel\" type=\"submit\" data-testid=\"cancel\">Cancel</button></form>",
            text(id)
        );
    }
    out.push_str(&waves(shown));
    out
}

fn usage_text(u: Option<&crate::worker::usage::Usage>) -> String {
    match u {
        Some(u) => format!(
            "{} in · {} out · {} cached tokens{}",
            u.input_tokens(),
            u.output_tokens(),
            u.cached_tokens(),
            u.usd_text().map(|d| format!(" · {}", text(&d))).unwrap_or_default()
        ),
        None => "none recorded".into(),
    }
}

/// Each wave as a table of its tasks.
fn waves(shown: &Shown) -> String {
    let mut by_wave: BTreeMap<usize, Vec<&ShownTask>> = BTreeMap::new();
    for t in &shown.tasks {
        by_wave.entry(t.wave).or_default().push(t);
    }
    let mut out = String::from("<div id=\"waves\" data-testid=\"waves\">");
    for (w, tasks) in by_wave {
        let now = shown.wave == Some(w);
        let _ = write!(
            out,
            "<section class=\"wave{cur}\" data-testid=\"wave\" data-wave=\"{n}\" aria-labelledby=\"h-wave-{n}\"><h2 id=\"h-wave-{n}\">Wave {n}{here}</h2>\
             <div class=\"scroll\"><table class=\"tasks\"><thead><tr><th scope=\"col\">Task</th><th scope=\"col\">Worker</th><th scope=\"col\">State</th>\
             <th scope=\"col\">Attempt</th><th scope=\"col\">Ports</th><th scope=\"col\">Usage</th><th scope=\"col\">Result</th></tr></thead><tbody>",
            cur = if now { " current" } else { "" },
            n = w,
            here = if now { " <span class=\"meta\">(now)</span>" } else { "" },
        );
        for t in tasks {
            let usage = crate::worker::usage::summed(&shown.log, |e| e["task"] == t.task.as_str());
            let result = t
                .result
                .as_ref()
                .map(|r| {
                    let files = if r.artifacts.is_empty() {
                        String::new()
                    } else {
                        format!("<div class=\"meta\">{}</div>", r.artifacts.iter().map(|a| line(a)).collect::<Vec<_>>().join(", "))
                    };
                    format!("{}{files}", text(&r.summary))
                })
                .unwrap_or_default();
            let _ = write!(
                out,
                "<tr data-testid=\"task\" data-task=\"{task}\" data-state=\"{state}\"><th scope=\"row\">{label}{title}</th><td>{worker}</td>\
                 <td><span class=\"badge status-{state}\" data-testid=\"task-state\">{state}</span>{class}{reason}</td><td>{attempt}</td>\
                 <td>{ports}</td><td data-testid=\"task-usage\">{usage}</td><td class=\"result\">{result}</td></tr>",
                task = text(&t.task),
                state = text(&t.state),
                label = line(&t.label),
                title = t.title.as_deref().map(|x| format!("<div class=\"meta\">{}</div>", line(x))).unwrap_or_default(),
                worker = line(&t.worker),
                class = t.class.map(|c| format!(" <span class=\"meta\">{}</span>", text(c))).unwrap_or_default(),
                reason = t.reason.as_deref().map(|r| format!("<div class=\"note\">{}</div>", line(r))).unwrap_or_default(),
                attempt = if t.attempt > 0 { t.attempt.to_string() } else { "–".into() },
                ports = t.ports.map(|p| text(&p.to_string())).unwrap_or_default(),
                usage = usage.map(|u| text(&u.brief())).unwrap_or_default(),
            );
        }
        out.push_str("</tbody></table></div></section>");
    }
    out.push_str("</div>");
    out
}

/// Task `t`'s log (escaped) from `from` (else its end) and where it ends now, as the
/// commission page reads its log.
fn task_log(server: &Server, project: &Project, t: &ShownTask, from: Option<u64>) -> (String, u64) {
    if t.attempt == 0 {
        return (String::new(), 0);
    }
    let Ok((path, _)) = crate::ops::logs::worker_log(&server.home, project, &t.task, Some(t.attempt)) else { return (String::new(), 0) };
    super::commission::read_log(&path, from)
}

/// The plan page's stream: the live part again after a change to the project's plans, and
/// each task's log as it grows (a new attempt's from its start).
pub(crate) struct Live {
    project: Project,
    id: String,
    /// Each task's log as the page shows it, by slug: its attempt and where it ends.
    logs: BTreeMap<String, (u32, u64)>,
}

impl Live {
    pub(crate) fn new(project: Project, id: &str, req: &Request) -> Live {
        // As the page showed them (its data): `slug:attempt:end,…`.
        let logs = req
            .param("logs")
            .unwrap_or("")
            .split(',')
            .filter_map(|one| {
                let mut parts = one.rsplitn(3, ':');
                let end = parts.next()?.parse().ok()?;
                let attempt = parts.next()?.parse().ok()?;
                Some((parts.next()?.to_string(), (attempt, end)))
            })
            .collect();
        Live { project, id: id.to_string(), logs }
    }

    fn logs(&mut self, server: &Server, shown: &Shown, send: &mut dyn FnMut(&str, &str) -> std::io::Result<()>) -> std::io::Result<()> {
        for t in &shown.tasks {
            let slug = crate::artifact::plan::slug(&t.task);
            let el = log_element(&slug);
            let (attempt, mut offset) = self.logs.get(&slug).copied().unwrap_or((0, 0));
            if attempt != t.attempt {
                offset = 0;
                send(&el, "")?;
            }
            loop {
                let (text, end) = task_log(server, &self.project, t, Some(offset));
                if end == offset {
                    break;
                }
                offset = end;
                send(&format!("append:{el}"), &text)?;
            }
            self.logs.insert(slug, (t.attempt, offset));
        }
        Ok(())
    }
}

impl super::Live for Live {
    fn after(
        &mut self,
        server: &Server,
        batch: Option<&Batch>,
        send: &mut dyn FnMut(&str, &str) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        let index = server.projects.iter().position(|p| p.root == self.project.root);
        if batch.is_some_and(|b| !b.changes.all && !index.is_some_and(|i| b.changes.plans.contains(&i))) {
            return Ok(());
        }
        let view = crate::ops::plan::view(&server.home, &self.project, &self.id).map(|(_, _, shown)| shown);
        let only_log = batch.is_some_and(|b| b.paths.iter().all(|p| crate::board::is_noise(p)));
        if !only_log || view.is_err() {
            send("plan-live", &live_part(&self.id, &view))?;
        }
        match &view {
            Ok(shown) => self.logs(server, shown, send),
            Err(_) => Ok(()),
        }
    }
}
