//! What the board shows, read through the same observe layer and operations as `status`,
//! `plan show` and `meeting list`: one [`Item`] per commission, plan and meeting, ordered by
//! what needs a person first, and the filter over them. Loading reads; nothing here writes.

use std::collections::BTreeSet;
use std::path::PathBuf;

use crate::ops::status::{ProblemRow, Process, StatusRow};
use chrono::{DateTime, Utc};

use crate::activity::state::strip_escapes;
use crate::artifact::MeetingStatus;
use crate::config::{Home, Project};

/// Which kind of artifact an item is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Kind {
    Commission,
    Plan,
    Meeting,
}

impl Kind {
    /// The short word the list shows.
    pub(crate) fn word(self) -> &'static str {
        match self {
            Kind::Commission => "comm",
            Kind::Plan => "plan",
            Kind::Meeting => "meet",
        }
    }
}

/// One wave task as a plan's row shows it: its label and state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cell {
    pub(crate) label: String,
    pub(crate) state: String,
}

/// One row of the board: a commission, a plan or a meeting, with what its line shows. Every
/// text in it that a worker or a file could have written is already free of escape sequences
/// and control characters ([`clean`]).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Item {
    pub(crate) kind: Kind,
    /// Which of the board's projects it belongs to (an index into them).
    pub(crate) project: usize,
    pub(crate) id: String,
    pub(crate) title: String,
    pub(crate) status: String,
    pub(crate) worker: String,
    pub(crate) attempt: u32,
    pub(crate) created: Option<DateTime<Utc>>,
    /// When the worker last showed a sign of life (running commissions only).
    pub(crate) heartbeat: Option<DateTime<Utc>>,
    /// A worker process is alive for it.
    pub(crate) alive: bool,
    /// Progress, or why it failed, waits or was refused; who asked for a meeting and why.
    pub(crate) note: String,
    /// Questions the worker logged.
    pub(crate) questions: usize,
    /// A plan's waves, each a row of task cells.
    pub(crate) waves: Vec<Vec<Cell>>,
    /// The wave a plan is at (1-based; none before it ran).
    pub(crate) wave: Option<usize>,
    /// A plan's verify gate: its command and how many runs so far.
    pub(crate) verify: Option<String>,
    /// The artifact's file.
    pub(crate) path: PathBuf,
    /// What its attempts used (a plan: its tasks'), as its artifact says.
    pub(crate) usage: Option<crate::worker::usage::Usage>,
    /// A requested meeting deferred to a later day (Guild Hall's `deferred_until:`): it needs
    /// no one before then.
    pub(crate) deferred: bool,
}

impl Item {
    /// An item for the board's tests: the given kind, id and status, worker `scribe`, attempt 1.
    #[cfg(test)]
    pub(crate) fn example(kind: Kind, id: &str, status: &str) -> Item {
        Item {
            kind,
            project: 0,
            id: id.into(),
            title: String::new(),
            status: status.into(),
            worker: "scribe".into(),
            attempt: 1,
            created: None,
            heartbeat: None,
            alive: false,
            note: String::new(),
            questions: 0,
            waves: Vec::new(),
            wave: None,
            verify: None,
            path: PathBuf::new(),
            usage: None,
            deferred: false,
        }
    }
}

/// `text` as one line fit to be shown: escape sequences and controls gone, whitespace runs
/// (newlines too) made one space.
pub(crate) fn clean(text: &str) -> String {
    strip_escapes(text).split_whitespace().collect::<Vec<_>>().join(" ")
}

impl Item {
    /// The wave a plan is at, while it is not settled: a completed, failed or cancelled plan is
    /// at no wave any more (its row says how many it had).
    pub(crate) fn current_wave(&self) -> Option<usize> {
        self.wave.filter(|_| !matches!(self.status.as_str(), "completed" | "failed" | "cancelled"))
    }

    /// How soon a person should look at it: 0 first. Work in review (it waits for a verdict),
    /// failed or invalid work, then questions asked, then meeting requests, then halted plans,
    /// then what runs, then what waits, then drafts, then what is over.
    pub(crate) fn need(&self) -> u8 {
        match (self.kind, self.status.as_str()) {
            (Kind::Commission, "review") => 0,
            (_, "failed" | "invalid" | "orphaned") => 1,
            (Kind::Commission, "in_progress" | "dispatched" | "pending" | "blocked") if self.questions > 0 => 2,
            (Kind::Meeting, "requested") if !self.deferred => 3,
            (Kind::Plan, "halted") => 4,
            (_, "in_progress" | "dispatched" | "running" | "verifying" | "open") => 5,
            (_, "pending" | "blocked") | (Kind::Meeting, "requested") => 6,
            (_, "draft") => 7,
            _ => 8,
        }
    }

    /// Whether the filter's words all match it: `status:S` its status, `worker:W` its
    /// worker (or a plan task's), any other word a part of its id, title, status, worker or
    /// note (case-insensitive).
    pub(crate) fn matches(&self, filter: &str) -> bool {
        filter.split_whitespace().all(|word| {
            let w = word.to_lowercase();
            if let Some(s) = w.strip_prefix("status:") {
                return self.status == s;
            }
            if let Some(s) = w.strip_prefix("worker:") {
                return self.worker.to_lowercase() == s;
            }
            [&self.id, &self.title, &self.status, &self.worker, &self.note, self.kind.word()].iter().any(|f| f.to_lowercase().contains(&w))
        })
    }

    /// What people call it in a message: `commission hello`, `plan port`.
    pub(crate) fn named(&self) -> String {
        let kind = match self.kind {
            Kind::Commission => "commission",
            Kind::Plan => "plan",
            Kind::Meeting => "meeting",
        };
        format!("{kind} {}", self.id)
    }
}

/// Order items by need, then newest first, then id: what is shown top to bottom.
pub(crate) fn sort(items: &mut [Item]) {
    items.sort_by(|a, b| {
        a.need().cmp(&b.need()).then_with(|| b.created.cmp(&a.created)).then_with(|| a.kind.cmp(&b.kind)).then_with(|| a.id.cmp(&b.id))
    });
}

/// A file that cannot be read, in words, with where it belongs: its project and kind (a
/// project that cannot be read at all: [`Kind::Commission`]), so that reading that kind again
/// replaces it.
pub type Problem = (usize, Kind, String);

/// Everything the board shows of its projects, now: the items in order and the problems.
/// A project that cannot be read at all is a problem, not an error: the others still show.
pub(crate) fn load(home: &Home, projects: &[Project], now: DateTime<Utc>) -> (Vec<Item>, Vec<Problem>) {
    let mut items = Vec::new();
    let mut problems = Vec::new();
    for (i, project) in projects.iter().enumerate() {
        if let Err(e) = load_project(home, project, i, now, &mut items, &mut problems) {
            problems.push((i, Kind::Commission, clean(&format!("{}: {e:#}", project.root.display()))));
        }
    }
    sort(&mut items);
    (items, problems)
}

fn load_project(
    home: &Home,
    project: &Project,
    index: usize,
    now: DateTime<Utc>,
    items: &mut Vec<Item>,
    problems: &mut Vec<Problem>,
) -> anyhow::Result<()> {
    crate::ops::status::rows(home, project, None, now, |row| {
        items.push(commission(row, index, now));
        Ok(())
    })?;
    problems.extend(plans(home, project, index, items)?.into_iter().map(|p| (index, Kind::Plan, p)));
    problems.extend(meetings(home, project, index, now, items)?.into_iter().map(|p| (index, Kind::Meeting, p)));
    Ok(())
}

/// The items of the commissions `ids` of project `index`, read again (a file of theirs
/// changed); an id whose artifact is gone has none.
pub(crate) fn commissions(
    home: &Home,
    project: &Project,
    index: usize,
    ids: &BTreeSet<String>,
    now: DateTime<Utc>,
) -> anyhow::Result<Vec<Item>> {
    let mut items = Vec::new();
    crate::ops::status::rows_of(home, project, ids, now, |row| {
        items.push(commission(row, index, now));
        Ok(())
    })?;
    Ok(items)
}

/// Read again what `c` touches into `items` and `problems` — the commissions it names, a
/// project's plans or meetings — and put them back in order. `false`: nothing was changed and
/// a whole reading ([`load`]) is due (`c` says everything changed, or a part could not be read:
/// the whole reading says why in its problems).
pub(crate) fn read_again(
    home: &Home,
    projects: &[Project],
    items: &mut Vec<Item>,
    problems: &mut Vec<Problem>,
    c: &super::changes::Changes,
) -> bool {
    if c.all {
        return false;
    }
    let now = Utc::now();
    let mut read = Vec::new();
    for (i, ids) in &c.commissions {
        let Some(p) = projects.get(*i) else { continue };
        match commissions(home, p, *i, ids, now) {
            Ok(new) => read.push((Kind::Commission, *i, Some(ids), new, None)),
            Err(_) => return false,
        }
    }
    for (i, kind) in c.plans.iter().map(|i| (*i, Kind::Plan)).chain(c.meetings.iter().map(|i| (*i, Kind::Meeting))) {
        let Some(p) = projects.get(i) else { continue };
        let mut new = Vec::new();
        let said = match kind {
            Kind::Plan => plans(home, p, i, &mut new),
            _ => meetings(home, p, i, now, &mut new),
        };
        match said {
            Ok(said) => read.push((kind, i, None, new, Some(said))),
            Err(_) => return false,
        }
    }
    for (kind, i, ids, new, said) in read {
        items.retain(|it| !(it.kind == kind && it.project == i && ids.is_none_or(|ids| ids.contains(&it.id))));
        items.extend(new);
        if let Some(said) = said {
            problems.retain(|(p, k, _)| !(*p == i && *k == kind));
            problems.extend(said.into_iter().map(|why| (i, kind, why)));
        }
    }
    sort(items);
    true
}

/// The project's plans, each with its waves (`ops::plan::view`), into `items`; the problems.
pub(crate) fn plans(home: &Home, project: &Project, index: usize, items: &mut Vec<Item>) -> anyhow::Result<Vec<String>> {
    let listed = crate::ops::plan::list(home, project)?;
    let mut problems = listed.problems;
    for row in listed.plans {
        match crate::ops::plan::view(home, project, &row.plan) {
            Ok((plan, _, shown)) => items.push(plan_item(&plan, &shown, index)),
            Err(e) => problems.push(format!("plan {}: {e:#}", row.plan)),
        }
    }
    Ok(problems.iter().map(|p| clean(p)).collect())
}

/// The project's meetings (`ops::meeting::list`), into `items`; the problems.
pub(crate) fn meetings(
    home: &Home,
    project: &Project,
    index: usize,
    now: DateTime<Utc>,
    items: &mut Vec<Item>,
) -> anyhow::Result<Vec<String>> {
    let (meetings, problems) = crate::ops::meeting::list(project)?;
    for m in &meetings {
        items.push(meeting(home, project, m, index, now));
    }
    Ok(problems.iter().map(|p| clean(p)).collect())
}

/// A text as one cleaned line, if it says anything.
fn text(s: Option<&str>) -> Option<String> {
    s.map(clean).filter(|s| !s.is_empty())
}

fn time(s: Option<&str>) -> Option<DateTime<Utc>> {
    let s = s?;
    DateTime::parse_from_rfc3339(s)
        .map(|t| t.with_timezone(&Utc))
        .ok()
        .or_else(|| chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").ok().and_then(|d| d.and_hms_opt(0, 0, 0)).map(|d| d.and_utc()))
}

/// A commission's item from its `status` row (or a problem's: an invalid artifact, an orphan).
fn commission(row: &StatusRow, project: usize, now: DateTime<Utc>) -> Item {
    let c = match row {
        StatusRow::Commission(c) => c,
        StatusRow::Problem(p) => return problem(p, project),
        StatusRow::Schedule(s) => {
            return Item {
                worker: s.worker.clone(),
                note: s.note(),
                status: s.status.as_str().to_string(),
                ..problem(&ProblemRow { id: s.id.clone(), path: s.path.clone(), ..ProblemRow::default() }, project)
            };
        }
    };
    let status = c.status.as_str().to_string();
    let summary = text(c.summary());
    // What the line says: under way, then why it stopped or waits, then progress, then the
    // result.
    let note = text(c.stopping.as_deref())
        .or_else(|| text(c.elsewhere.as_deref()))
        .or_else(|| text(c.integrated.as_deref()))
        .or_else(|| if matches!(status.as_str(), "completed") { summary.clone() } else { None })
        .or_else(|| text(c.reason.as_deref()))
        .or_else(|| text(c.waiting.as_deref()))
        .or_else(|| text(c.progress.as_deref()))
        .or(summary)
        .unwrap_or_default();
    // Where its dev server is to be found, while it runs.
    let note = match &c.ports {
        Some(p) => format!("ports {p}; {note}"),
        None => note,
    };
    Item {
        kind: Kind::Commission,
        project,
        id: c.id.clone(),
        title: text(c.title.as_deref()).unwrap_or_default(),
        status,
        worker: text(Some(&c.worker)).unwrap_or_default(),
        attempt: c.attempt,
        created: time(c.created.as_deref()),
        heartbeat: c.heartbeat_age_secs.map(|s| now - chrono::Duration::seconds(s)),
        alive: c.process == Process::Alive,
        note,
        questions: c.questions(),
        waves: Vec::new(),
        wave: None,
        verify: None,
        path: c.path.clone(),
        usage: c.usage,
        deferred: false,
    }
}

/// An invalid artifact's or an orphan's item: its reason is the line.
fn problem(p: &ProblemRow, project: usize) -> Item {
    Item {
        kind: Kind::Commission,
        project,
        id: p.id.clone(),
        title: String::new(),
        status: p.status.as_str().to_string(),
        worker: String::new(),
        attempt: p.attempt,
        created: None,
        heartbeat: None,
        alive: false,
        note: text(Some(&p.reason)).unwrap_or_default(),
        questions: 0,
        waves: Vec::new(),
        wave: None,
        verify: None,
        path: p.path.clone(),
        usage: None,
        deferred: false,
    }
}

fn plan_item(plan: &crate::artifact::plan::Plan, shown: &crate::tools::plan::Shown, project: usize) -> Item {
    let mut waves: Vec<Vec<Cell>> = vec![Vec::new(); shown.waves];
    for t in &shown.tasks {
        if let Some(w) = waves.get_mut(t.wave.saturating_sub(1)) {
            w.push(Cell { label: clean(&t.label), state: t.state.clone() });
        }
    }
    let mut workers: Vec<&str> = shown.tasks.iter().map(|t| t.worker.as_str()).collect();
    workers.sort_unstable();
    workers.dedup();
    let note = shown
        .problem
        .as_deref()
        .or(shown.reason.as_deref())
        .or(shown.elsewhere.as_deref())
        .or(shown.integrated.as_deref())
        .map(clean)
        .unwrap_or_default();
    // Where its tasks' dev servers are to be found, while they run.
    let ports: Vec<String> = shown.tasks.iter().filter_map(|t| t.ports.map(|p| format!("{} {p}", clean(&t.label)))).collect();
    let note = if ports.is_empty() { note } else { format!("ports {}; {note}", ports.join(", ")) };
    Item {
        kind: Kind::Plan,
        project,
        id: shown.plan.clone(),
        title: shown.title.as_deref().map(clean).unwrap_or_default(),
        status: shown.status.as_str().to_string(),
        worker: clean(&workers.join(",")),
        attempt: 0,
        created: None,
        heartbeat: None,
        alive: matches!(shown.status.as_str(), "running" | "verifying"),
        note,
        questions: 0,
        waves,
        wave: shown.wave.filter(|w| *w > 0),
        verify: shown.verify.as_ref().map(|v| format!("{} ({} runs)", clean(&v.join(" ")), shown.verify_runs)),
        path: plan.path.clone(),
        usage: plan.fields.get("usage").and_then(crate::worker::usage::Usage::from_yaml),
        deferred: false,
    }
}

fn meeting(home: &Home, project: &Project, m: &crate::artifact::Meeting, index: usize, now: DateTime<Utc>) -> Item {
    let status = m.effective_status();
    let why = m.agenda.as_deref().or(m.title.as_deref()).map(clean).unwrap_or_default();
    let note = match status {
        // (The deferral's text ends in a space, which `clean` would take.)
        MeetingStatus::Requested => match &m.requested_by {
            Some(by) => format!("{}asked by {}: {why}", m.deferred(), clean(by)),
            None => format!("{}requested: {why}", m.deferred()),
        },
        MeetingStatus::Open => last_turn(&home.transcript(&project.name, &m.id)).map(|t| format!("last: {t}")).unwrap_or(why),
        _ => m.owned.reason.as_deref().map(clean).unwrap_or(why),
    };
    // Where its dev server is to be found, while a turn runs.
    let note = match crate::worker::ports::shown(home, &home.meeting_state(&project.name, &m.id)) {
        Some(p) => format!("ports {p}; {note}"),
        None => note,
    };
    Item {
        kind: Kind::Meeting,
        project: index,
        id: m.id.clone(),
        title: m.title.as_deref().map(clean).unwrap_or_default(),
        status: status.as_str().to_string(),
        worker: clean(&m.worker),
        attempt: 0,
        created: time(m.owned.created.as_deref()),
        heartbeat: None,
        alive: false,
        note,
        questions: 0,
        waves: Vec::new(),
        wave: None,
        verify: None,
        path: m.path.clone(),
        usage: None,
        deferred: m.deferred_past(now.date_naive()),
    }
}

/// The last line of an open meeting's transcript: its last turn, as far as a line shows it.
fn last_turn(transcript: &std::path::Path) -> Option<String> {
    let text = crate::files::read_tail(transcript, 4096)?;
    text.lines().rev().map(clean).find(|l| !l.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(kind: Kind, id: &str, status: &str) -> Item {
        Item::example(kind, id, status)
    }

    #[test]
    fn what_needs_a_person_comes_first() {
        let mut asked = item(Kind::Commission, "asks", "in_progress");
        asked.questions = 1;
        let mut items = vec![
            item(Kind::Commission, "done", "completed"),
            item(Kind::Commission, "draft", "draft"),
            item(Kind::Plan, "halted", "halted"),
            item(Kind::Commission, "runs", "in_progress"),
            item(Kind::Meeting, "asked", "requested"),
            asked,
            item(Kind::Commission, "broke", "failed"),
            item(Kind::Commission, "waits", "pending"),
            item(Kind::Commission, "judge", "review"),
        ];
        sort(&mut items);
        let order: Vec<_> = items.iter().map(|i| i.id.as_str()).collect();
        assert_eq!(order, ["judge", "broke", "asks", "asked", "halted", "runs", "waits", "draft", "done"]);
        // A request deferred to a later day waits with the pending work, needing no one yet.
        let mut later = item(Kind::Meeting, "later", "requested");
        later.deferred = true;
        assert_eq!(later.need(), item(Kind::Commission, "waits", "pending").need());
        assert!(later.need() > item(Kind::Meeting, "asked", "requested").need());
    }

    /// `deferred_until:` defers a request until its day, and only a request.
    #[test]
    fn a_request_is_deferred_until_its_day() {
        let meeting =
            |text: &str| crate::artifact::Meeting::parse(std::path::Path::new("/p/.lore/meetings/m.md"), text).expect("a meeting");
        let today = chrono::NaiveDate::from_ymd_opt(2026, 11, 28).expect("a date");
        let requested =
            |until: &str| meeting(&format!("---\nworker: Octavia\nstatus: requested\nagenda: talk\ndeferred_until: {until}\n---\n"));
        assert!(requested("2026-12-01").deferred_past(today));
        assert!(!requested("2026-11-28").deferred_past(today), "its day has come");
        assert!(!requested("\"\"").deferred_past(today), "none");
        assert!(!meeting("---\nworker: Octavia\nstatus: open\ndeferred_until: 2026-12-01\n---\n").deferred_past(today), "open");
    }

    #[test]
    fn the_filter_takes_words_status_and_worker() {
        let mut i = item(Kind::Commission, "survey-crash", "failed");
        i.note = "process unresponsive".into();
        assert!(i.matches(""));
        assert!(i.matches("crash"));
        assert!(i.matches("UNRESPONSIVE"));
        assert!(i.matches("status:failed worker:scribe"));
        assert!(!i.matches("status:completed"));
        assert!(!i.matches("worker:mason"));
        assert!(!i.matches("crash other"));
    }

    #[test]
    fn worker_text_is_cleaned() {
        assert_eq!(clean("a\x1b[31mred\x1b[0m\nnext\r\x07 line\u{202e}"), "ared next line");
        assert_eq!(clean("\x1b]52;c;Zm9v\x07copied"), "copied");
    }
}
