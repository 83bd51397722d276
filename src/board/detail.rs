//! The detail pane of the selected item, read when it is opened and again when its files
//! change: the frontmatter as written, questions and decisions, the result, the branch and how
//! far it is from the integration branch, the timeline's last entries and the log's last lines.
//! Every line is cleaned of escape sequences ([`super::model::clean`]). The diff pane ([`diff`])
//! shows the selected commission's change, or its plan's tasks', from `ops::diff`.

use std::path::Path;

use crate::config::{Home, Project};

use super::model::{clean, Item, Kind};

/// What the pane shows: a title and sections of lines, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Detail {
    pub(crate) title: String,
    pub(crate) sections: Vec<(String, Vec<String>)>,
    /// Keep the end in view (the log of a running worker).
    pub(crate) follow: bool,
}

/// How many of the timeline's last entries and of the log's last lines show.
const TIMELINE: usize = 8;
const LOG_LINES: usize = 12;
const FIELDS: usize = 30;

/// The pane of `item` of `project`, as the files say now. What cannot be read is said in its
/// section, not an error.
pub(crate) fn load(home: &Home, project: &Project, item: &Item) -> Detail {
    // What a person looks for first on top (the branch, the result, the questions); the log
    // last, where a running worker's end is kept in view.
    let mut sections = vec![("branch".to_string(), branch(project, item))];
    if item.kind == Kind::Commission {
        sections.push(("result".into(), result(project, &item.id)));
        sections.push(("reviews".into(), reviews(project, &item.id)));
    }
    let log = crate::activity::timeline::read(&crate::activity::timeline::path_for(&item.path)).unwrap_or_default();
    let asked: Vec<String> = log
        .iter()
        .filter(|e| e["kind"] == "question" || e["kind"] == "decision")
        .map(|e| clean(&crate::activity::timeline::render(e)))
        .collect();
    sections.push(("questions and decisions".into(), asked));
    sections.push(("frontmatter".to_string(), fields(&item.path)));
    let recent = log.len().saturating_sub(TIMELINE);
    sections.push(("timeline".into(), log[recent..].iter().map(|e| clean(&crate::activity::timeline::render(e))).collect()));
    let (what, lines) = match item.kind {
        Kind::Commission => match crate::ops::logs::worker_log(home, project, &item.id, None) {
            Ok((path, attempt)) => (format!("log (attempt {attempt})"), tail(&path)),
            Err(e) => ("log".into(), vec![clean(&format!("{e:#}"))]),
        },
        Kind::Plan => match crate::ops::logs::plan_log(home, project, &item.id, None, true) {
            Ok(path) => ("verify log".into(), tail(&path)),
            Err(_) => ("verify log".into(), Vec::new()),
        },
        Kind::Meeting => ("transcript".into(), tail(&home.transcript(&project.name, &item.id))),
    };
    sections.push((what, lines));
    Detail { title: item.named(), sections, follow: item.alive }
}

/// The frontmatter's lines as written (bounded), cleaned one by one.
fn fields(path: &Path) -> Vec<String> {
    let text = match crate::artifact::read_regular(path) {
        Ok(t) => t,
        Err(e) => return vec![clean(&format!("{}: {e}", path.display()))],
    };
    match crate::artifact::frontmatter::split(&text) {
        Ok(split) => {
            let mut lines: Vec<String> =
                split.yaml.lines().take(FIELDS).map(|l| crate::activity::state::strip_escapes(l).trim_end().to_string()).collect();
            if split.yaml.lines().count() > FIELDS {
                lines.push(format!("… (e opens {} in $EDITOR)", path.display()));
            }
            lines
        }
        Err((line, why)) => vec![clean(&format!("{}:{line}: {why}", path.display()))],
    }
}

fn result(project: &Project, id: &str) -> Vec<String> {
    let Ok(c) = crate::ops::commission::load(project, id) else { return Vec::new() };
    let Some(r) = c.field("result") else { return Vec::new() };
    let mut lines = Vec::new();
    if let Some(s) = r.get("summary").and_then(|s| s.as_str()) {
        lines.push(clean(s));
    }
    if let Some(a) = r.get("artifacts").and_then(|a| a.as_sequence()) {
        lines.extend(a.iter().filter_map(|p| p.as_str()).map(|p| format!("artifact: {}", clean(p))));
    }
    lines
}

/// Its reviewer workers' verdicts (`reviews:`), each comment under its verdict.
fn reviews(project: &Project, id: &str) -> Vec<String> {
    let Ok(c) = crate::ops::commission::load(project, id) else { return Vec::new() };
    let reviews = c.field("reviews").and_then(|r| serde_json::to_value(r).ok()).unwrap_or_default();
    crate::ops::status::review_lines(&reviews).iter().map(|l| clean(l)).collect()
}

/// The item's branch and how far it is from the integration branch (commits each has that
/// the other has not).
fn branch(project: &Project, item: &Item) -> Vec<String> {
    let name = match item.kind {
        Kind::Meeting => crate::activity::names::meeting_branch(&item.id),
        _ => {
            let Ok(text) = crate::artifact::read_regular(&item.path) else { return Vec::new() };
            let Some(b) = text.lines().find_map(|l| l.strip_prefix("branch:")).map(|b| b.trim().trim_matches('"').to_string()) else {
                return Vec::new();
            };
            b
        }
    };
    let into = &project.config.integration_branch;
    let distance = (|| {
        let repo = crate::activity::git::open(&project.root).ok()?;
        let ours = repo.revparse_single(&format!("refs/heads/{name}")).ok()?.id();
        let theirs = repo.revparse_single(&format!("refs/heads/{into}")).ok()?.id();
        repo.graph_ahead_behind(ours, theirs).ok()
    })();
    let how = match distance {
        Some((0, 0)) => format!("at {into}"),
        Some((ahead, behind)) => format!("{ahead} ahead of {into}, {behind} behind"),
        None => "(not there)".to_string(),
    };
    vec![format!("{} · {how}", clean(&name))]
}

/// The last lines of a log or transcript, cleaned.
fn tail(path: &Path) -> Vec<String> {
    let Some(text) = crate::files::read_tail(path, 16 * 1024) else { return Vec::new() };
    let text = crate::activity::state::strip_escapes(&text);
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(LOG_LINES)..].iter().map(|l| l.trim_end().to_string()).collect()
}

/// The diff pane's section of patch lines (the view colours them as a patch).
pub(crate) const PATCH: &str = "patch";

/// The diff pane of `item`: a commission's change (its stat, then its patch), a plan's tasks'
/// stats, each from `ops::diff` as `guild-hall diff` shows it. What cannot be read (no branch
/// yet) is said in its section.
pub(crate) fn diff(home: &Home, project: &Project, item: &Item) -> Detail {
    let title = format!("diff of {}", item.named());
    let said = |what: &str, e: anyhow::Error| (what.to_string(), vec![clean(&format!("{e:#}"))]);
    // Its lines as written, escapes gone, indentation kept.
    let shown = |l: &str| crate::activity::state::strip_escapes(l).trim_end().to_string();
    let sections = match item.kind {
        Kind::Commission => match crate::ops::diff::of(home, project, &item.id, crate::ops::diff::Detail::Patch) {
            Ok(d) => vec![
                ("stat".to_string(), d.stat(STAT_WIDTH).iter().map(|l| shown(l)).collect()),
                (PATCH.to_string(), d.lines().map(|(_, l)| shown(l)).collect()),
            ],
            Err(e) => vec![said("diff", e)],
        },
        Kind::Plan => match crate::plan::observe::load(project, &item.id) {
            Ok(plan) => plan
                .tasks()
                .map(|t| match crate::ops::diff::of(home, project, &t.canonical, crate::ops::diff::Detail::Stat) {
                    Ok(d) => (format!("{} ({})", t.label, t.canonical), d.stat(STAT_WIDTH).iter().map(|l| shown(l)).collect()),
                    Err(e) => said(&format!("{} ({})", t.label, t.canonical), e),
                })
                .collect(),
            Err(e) => vec![said("diff", e)],
        },
        Kind::Meeting => vec![("diff".to_string(), vec!["a meeting's notes land as they close: no diff to review".to_string()])],
    };
    Detail { title, sections, follow: false }
}

/// The stat's width in the pane.
const STAT_WIDTH: usize = 100;
