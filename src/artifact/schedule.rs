//! A scheduled commission (`type: scheduled`): a template in `.lore/commissions/` that never
//! runs a worker itself; at each time its `schedule.cron` names, a one-shot commission is
//! written from it. Its keys (guild-hall's dialect, where the prompt is the body, and Guild
//! Hall's, where it is `prompt:`), its status words, its `schedule:` block, and the one-shot
//! commission's text. Pure: no I/O.

use std::path::{Path, PathBuf};

use chrono::{DateTime, NaiveDate, Utc};
use serde_yaml_ng::{Mapping, Value};

use super::commission::Resources;
use super::cron::Cron;
use super::frontmatter::{key_position, owned_text, split, Problem};
use super::store::content_hash;

/// A template's status (Guild Hall's four words): only `active` spawns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ScheduleStatus {
    Active,
    Paused,
    /// Its `repeat` runs done, or ended by a person: terminal.
    Completed,
    Failed,
}

impl ScheduleStatus {
    const ALL: [ScheduleStatus; 4] = [ScheduleStatus::Active, ScheduleStatus::Paused, ScheduleStatus::Completed, ScheduleStatus::Failed];

    pub fn as_str(self) -> &'static str {
        match self {
            ScheduleStatus::Active => "active",
            ScheduleStatus::Paused => "paused",
            ScheduleStatus::Completed => "completed",
            ScheduleStatus::Failed => "failed",
        }
    }
}

/// The `schedule:` block.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Schedule {
    pub(crate) cron: Cron,
    /// Runs before it is `completed`; `None`: for ever.
    pub(crate) repeat: Option<u32>,
    pub(crate) runs_completed: u32,
    /// The tick of its latest run (Guild Hall wrote the time of the spawn).
    pub(crate) last_run: Option<DateTime<Utc>>,
    pub(crate) last_spawned_id: Option<String>,
}

/// A parsed, validated template.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Template {
    pub(crate) id: String,
    pub(crate) path: PathBuf,
    /// The file's hash when read: its update is dropped if it changed since.
    pub(crate) hash: u64,
    pub(crate) title: Option<String>,
    pub(crate) status: ScheduleStatus,
    pub(crate) worker: String,
    /// The prompt every run is given: `prompt:` (Guild Hall's dialect), else the body.
    pub(crate) prompt: String,
    pub(crate) dependencies: Vec<String>,
    pub(crate) resources: Resources,
    /// `resource_overrides:` as written (Guild Hall's dialect of `resources:`), validated: each
    /// run is given it in the same form.
    pub(crate) resource_overrides: Option<Value>,
    pub(crate) schedule: Schedule,
    /// `schedule:` as written: what its update starts from (keys Guild Hall or a person added
    /// are kept).
    pub(crate) schedule_value: Mapping,
    /// When it began counting, for a template that never ran: `created:`, else `date:`
    /// (midnight UTC).
    pub(crate) since: Option<DateTime<Utc>>,
}

/// The keys a template may hold: guild-hall's and Guild Hall's.
const KEYS: [&str; 20] = [
    "title",
    "date",
    "type",
    "status",
    "tags",
    "worker",
    "workerDisplayTitle",
    "prompt",
    "dependencies",
    "resources",
    "resource_overrides",
    "schedule",
    "activity_timeline",
    "linked_artifacts",
    "current_progress",
    "result_summary",
    "projectName",
    "created",
    "reason",
    "completed",
];

const SCHEDULE_KEYS: [&str; 5] = ["cron", "repeat", "runs_completed", "last_run", "last_spawned_id"];

/// Whether `text` is a template: `type: scheduled` at the top of its frontmatter. A line scan,
/// so that the commission readers pass it by without parsing it.
pub(crate) fn is_template(text: &str) -> bool {
    let Ok(sp) = split(text) else { return false };
    sp.yaml.lines().any(|l| {
        l.strip_prefix("type:").is_some_and(|v| {
            let v = v.split(" #").next().unwrap_or("").trim();
            matches!(v, "scheduled" | "\"scheduled\"" | "'scheduled'")
        })
    })
}

/// A time as a template writes it: RFC 3339 (Guild Hall's `2026-06-10T09:00:01.123Z`).
fn instant(v: &Value) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(v.as_str()?).ok().map(|t| t.with_timezone(&Utc))
}

impl Template {
    /// Parse and validate; any problem means nothing is spawned from it.
    // Long: each key read in turn, in both dialects, every problem gathered so `check` says all.
    pub(crate) fn parse(path: &Path, text: &str) -> Result<Template, Vec<Problem>> {
        let id = path.file_stem().and_then(|s| s.to_str()).unwrap_or("").to_string();
        let at = |line, col, msg: String| vec![Problem::new(path, line, col, msg)];
        if let Err(e) = super::ids::validate_id(&id) {
            return Err(at(1, 1, format!("bad file name: {e}")));
        }
        let sp = split(text).map_err(|(line, msg)| at(line, 1, msg))?;
        let fm: Mapping = serde_yaml_ng::from_str(sp.yaml).map_err(|e| {
            let (line, col, said) = super::locate::yaml_error(&e, sp.yaml, sp.first_line);
            at(line, col, format!("invalid YAML: {said}"))
        })?;
        let mut problems = Vec::new();
        let mut bad = |key: &str, msg: String| {
            let (line, col) = key_position(&sp, key);
            problems.push(Problem::new(path, line, col, msg));
        };
        for k in fm.keys() {
            let k = k.as_str().unwrap_or("");
            if !KEYS.contains(&k) {
                let near = super::keys::did_you_mean(k, &KEYS).map(|n| format!(": did you mean `{n}`?")).unwrap_or_default();
                bad(k, format!("unknown key `{k}` in a scheduled commission{near}"));
            }
        }
        let get = |k: &str| fm.get(k).cloned();
        let status = match get("status") {
            None | Some(Value::Null) => ScheduleStatus::Active,
            Some(v) => match ScheduleStatus::ALL.into_iter().find(|s| v.as_str() == Some(s.as_str())) {
                Some(s) => s,
                None => {
                    bad("status", format!("a scheduled commission's status is active, paused, completed or failed, not {}", show(&v)));
                    ScheduleStatus::Failed
                }
            },
        };
        let worker = super::ids::worker_name(fm.get("worker"), "which worker each run is for").unwrap_or_else(|why| {
            bad("worker", why.to_string());
            String::new()
        });
        let prompt = match get("prompt") {
            Some(Value::String(p)) if !p.trim().is_empty() => p,
            Some(_) => {
                bad("prompt", "prompt must be the runs' prompt, as text".into());
                String::new()
            }
            None if !sp.body.trim().is_empty() => sp.body.trim_end().to_string(),
            None => {
                bad("type", "missing prompt: the body (or `prompt:`) is what each run is given".into());
                String::new()
            }
        };
        let mut dependencies = Vec::new();
        match get("dependencies") {
            None | Some(Value::Null) => {}
            Some(Value::Sequence(items)) => {
                for item in items {
                    match item.as_str().map(super::ids::validate_rel_path) {
                        Some(Ok(p)) => dependencies.push(p),
                        _ => bad("dependencies", "dependencies must be a list of paths in the project".into()),
                    }
                }
            }
            Some(_) => bad("dependencies", "dependencies must be a list of paths in the project".into()),
        }
        let resources = match get("resources") {
            None | Some(Value::Null) => Resources::default(),
            Some(v) => serde_yaml_ng::from_value(v).unwrap_or_else(|e| {
                bad("resources", format!("bad resources: {e}"));
                Resources::default()
            }),
        };
        let resource_overrides = match get("resource_overrides") {
            None | Some(Value::Null) => None,
            Some(_) if fm.contains_key("resources") => {
                bad("resource_overrides", "resource_overrides and resources say the same (the bounds of its runs): keep one".into());
                None
            }
            Some(v) => match serde_yaml_ng::from_value::<super::dialect::ResourceOverrides>(v.clone()) {
                Ok(_) => Some(v),
                Err(e) => {
                    bad("resource_overrides", format!("bad resource_overrides: {e} (allowed: maxTurns, maxBudgetUsd, model)"));
                    None
                }
            },
        };
        let schedule_value = match get("schedule") {
            Some(Value::Mapping(m)) => m,
            _ => {
                bad("schedule", "a scheduled commission needs `schedule: {cron: \"MIN HOUR DOM MON DOW\"}` (UTC)".into());
                Mapping::new()
            }
        };
        let mut sbad = |msg: String| bad("schedule", msg);
        for k in schedule_value.keys() {
            let k = k.as_str().unwrap_or("");
            if !SCHEDULE_KEYS.contains(&k) {
                let near = super::keys::did_you_mean(k, &SCHEDULE_KEYS).map(|n| format!(": did you mean `{n}`?")).unwrap_or_default();
                sbad(format!("unknown key `{k}` in `schedule`{near}"));
            }
        }
        let cron = match schedule_value.get("cron").and_then(Value::as_str).map(str::parse::<Cron>) {
            Some(Ok(c)) => Some(c),
            Some(Err(e)) => {
                sbad(format!("schedule.{e}"));
                None
            }
            None if !schedule_value.is_empty() => {
                sbad("schedule.cron is missing: five fields, minute hour day-of-month month day-of-week, in UTC".into());
                None
            }
            None => None,
        };
        let count = |k: &str, sbad: &mut dyn FnMut(String)| match schedule_value.get(k) {
            None | Some(Value::Null) => None,
            Some(v) => match v.as_u64().and_then(|n| u32::try_from(n).ok()) {
                Some(n) => Some(n),
                None => {
                    sbad(format!("schedule.{k} must be a whole number, not {}", show(v)));
                    None
                }
            },
        };
        let repeat = count("repeat", &mut sbad);
        if repeat == Some(0) {
            sbad("schedule.repeat must be at least 1 (or null: for ever)".into());
        }
        let runs_completed = count("runs_completed", &mut sbad).unwrap_or(0);
        let last_run = match schedule_value.get("last_run") {
            None | Some(Value::Null) => None,
            Some(v) => instant(v).or_else(|| {
                sbad(format!("schedule.last_run must be a time (2026-11-28T19:00:00Z), not {}", show(v)));
                None
            }),
        };
        let last_spawned_id = owned_text(schedule_value.get("last_spawned_id").cloned());
        let since = get("created").as_ref().and_then(instant).or_else(|| {
            let d = get("date")?;
            let d = d.as_str()?.get(..10)?.parse::<NaiveDate>().ok()?;
            Some(d.and_hms_opt(0, 0, 0)?.and_utc())
        });
        if !problems.is_empty() {
            return Err(problems);
        }
        let Some(cron) = cron else { return Err(at(1, 1, "schedule.cron is missing".into())) };
        Ok(Template {
            id,
            path: path.to_path_buf(),
            hash: content_hash(text),
            title: owned_text(get("title")),
            status,
            worker,
            prompt,
            dependencies,
            resources,
            resource_overrides,
            schedule: Schedule { cron, repeat, runs_completed, last_run, last_spawned_id },
            schedule_value,
            since,
        })
    }

    /// The one-shot commission of run `tick`: its id (derived from the tick, so a run is
    /// written once whatever happens between its spawn and the template's update) and text.
    pub(crate) fn run(&self, tick: DateTime<Utc>, created: &str) -> (String, String) {
        let id = run_id(&self.id, tick);
        let title = format!("{} (run of {} UTC)", self.title.as_deref().unwrap_or(&self.id), tick.format("%Y-%m-%d %H:%M"));
        let new = super::commission::New {
            title,
            date: Some(tick.format("%Y-%m-%d").to_string()),
            status: super::Status::Pending,
            worker: self.worker.clone(),
            created: created.to_string(),
            dependencies: self.dependencies.clone(),
            resources: self.resources.clone(),
            body: self.prompt.clone(),
        };
        let text = super::commission::render(&new);
        // Guild Hall's back-reference, after the keys render writes; and the template's
        // `resource_overrides:`, in its own form (`resources:` render writes).
        let mut edits = vec![super::write::Edit::Set("source_schedule".into(), Value::String(self.id.clone()))];
        if let Some(o) = &self.resource_overrides {
            edits.push(super::write::Edit::Set("resource_overrides".into(), o.clone()));
        }
        let text = super::write::apply(&text, &edits).unwrap_or(text);
        (id, text)
    }

    /// `text` (this template's) after run `tick` (spawned as `spawned`): its count, last run and
    /// last id, set in place ([`count_in`]) or, in a flow mapping, as a whole; checked by
    /// reading the template back.
    pub(crate) fn counted(&self, text: &str, tick: DateTime<Utc>, spawned: &str) -> Result<String, super::write::WriteError> {
        let runs = self.schedule.runs_completed + 1;
        let at = super::super::activity::timeline::timestamp(tick);
        let out = match count_in(text, runs, &at, spawned) {
            Some(out) => out,
            None => super::write::apply(text, &[super::write::Edit::Set("schedule".into(), self.schedule_after(tick, spawned))])?,
        };
        let back = Template::parse(&self.path, &out)
            .map_err(|ps| super::write::WriteError::Verify(format!("{:?}", ps.first().map(|p| p.to_string()))))?;
        let s = &back.schedule;
        if s.runs_completed != runs
            || s.last_run != Some(tick)
            || s.last_spawned_id.as_deref() != Some(spawned)
            || s.cron != self.schedule.cron
        {
            return Err(super::write::WriteError::Verify("the schedule did not read back as written".into()));
        }
        Ok(out)
    }

    /// `schedule:` after run `tick` (spawned as `spawned`): its count, last run and last id.
    pub(crate) fn schedule_after(&self, tick: DateTime<Utc>, spawned: &str) -> Value {
        let mut m = self.schedule_value.clone();
        m.insert("runs_completed".into(), Value::from(self.schedule.runs_completed + 1));
        m.insert("last_run".into(), Value::String(super::super::activity::timeline::timestamp(tick)));
        m.insert("last_spawned_id".into(), Value::String(spawned.to_string()));
        Value::Mapping(m)
    }
}

/// `text` (a template) with its `schedule:` block's count, last run and last id set in place,
/// line by line, when the block is written one key a line (as Guild Hall writes it, and reads
/// it back line by line): every other line, the cron's quoting included, stays as it was.
/// `None` when the block is not written so (a flow mapping): then it is set as a whole.
pub(crate) fn count_in(text: &str, runs: u32, last_run: &str, spawned: &str) -> Option<String> {
    let sp = split(text).ok()?;
    let lines: Vec<&str> = sp.yaml.lines().collect();
    let start = lines.iter().position(|l| l.trim_end() == "schedule:")?;
    let end = lines[start + 1..].iter().position(|l| !(l.starts_with(' ') || l.trim().is_empty())).map_or(lines.len(), |n| start + 1 + n);
    let indent: String = lines.get(start + 1).filter(|_| end > start + 1)?.chars().take_while(|c| *c == ' ').collect();
    if indent.is_empty() {
        return None;
    }
    let mut block: Vec<String> = lines[start + 1..end].iter().map(|l| l.to_string()).collect();
    for (key, value) in [("runs_completed", runs.to_string()), ("last_run", last_run.to_string()), ("last_spawned_id", spawned.to_string())]
    {
        let new = format!("{indent}{key}: {value}");
        match block.iter().position(|l| l.strip_prefix(&indent).is_some_and(|r| r.starts_with(&format!("{key}:")))) {
            Some(i) => block[i] = new,
            None => block.push(new),
        }
    }
    let mut yaml: Vec<String> = lines[..=start].iter().map(|l| l.to_string()).collect();
    yaml.extend(block);
    yaml.extend(lines[end..].iter().map(|l| l.to_string()));
    let mut out = String::with_capacity(text.len() + 64);
    out.push_str(&text[..sp.yaml_range.start]);
    out.push_str(&yaml.join("\n"));
    out.push('\n');
    out.push_str(&text[sp.yaml_range.end..]);
    Some(out)
}

/// The id of a template's run at `tick`: `<template>-YYYYMMDD-HHMM` (UTC).
pub(crate) fn run_id(template: &str, tick: DateTime<Utc>) -> String {
    super::ids::derived(template, &tick.format("%Y%m%d-%H%M").to_string())
}

/// The tick a run's id names, if `id` is one of `template`'s runs.
pub(crate) fn tick_of(template: &str, id: &str) -> Option<DateTime<Utc>> {
    let rest = id.strip_prefix(template)?.strip_prefix('-')?;
    chrono::NaiveDateTime::parse_from_str(rest, "%Y%m%d-%H%M").ok().map(|t| t.and_utc())
}

fn show(v: &Value) -> String {
    serde_yaml_ng::to_string(v).unwrap_or_default().trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    const GUILD_HALL: &str = "---\ntitle: \"Weekly tidy\"\ndate: 2026-03-15\ntype: scheduled\nstatus: active\ntags: [commission, scheduled]\nworker: Guild Master\nprompt: \"Tidy the notes.\"\ndependencies: []\nschedule:\n  cron: \"0 9 * * 1\"\n  repeat: null\n  runs_completed: 12\n  last_run: 2026-06-10T09:00:01.123Z\n  last_spawned_id: commission-Guild-Master-20260610-090001\nactivity_timeline:\n  - timestamp: 2026-03-15T09:00:00.000Z\n    event: created\n    reason: \"Schedule created\"\n---\n";

    #[test]
    fn both_dialects_read() {
        let t = Template::parse(Path::new("c/weekly.md"), GUILD_HALL).expect("Guild Hall's");
        assert!(is_template(GUILD_HALL));
        assert_eq!((t.worker.as_str(), t.prompt.as_str(), t.status), ("Guild Master", "Tidy the notes.", ScheduleStatus::Active));
        assert_eq!(t.schedule.runs_completed, 12);
        assert_eq!(t.schedule.repeat, None);
        assert_eq!(t.since, Some(DateTime::parse_from_rfc3339("2026-03-15T00:00:00Z").expect("t").with_timezone(&Utc)));
        let ours = "---\ntype: scheduled\nworker: scribe\nschedule: {cron: \"*/5 * * * *\", repeat: 2}\n---\nWrite the note.\n";
        let t = Template::parse(Path::new("c/notes.md"), ours).expect("ours");
        assert_eq!((t.prompt.as_str(), t.schedule.repeat), ("Write the note.", Some(2)));
        let tick = DateTime::parse_from_rfc3339("2026-11-28T19:05:00Z").expect("t").with_timezone(&Utc);
        let (id, text) = t.run(tick, "2026-11-28T19:05:02.000Z");
        assert_eq!(id, "notes-20261128-1905");
        assert_eq!(tick_of("notes", &id), Some(tick));
        let run = super::super::Commission::parse(Path::new(&format!("c/{id}.md")), &text).expect("the run parses as a commission");
        assert_eq!(run.worker, "scribe");
        assert!(text.contains("source_schedule: notes"), "{text}");
        assert!(!is_template(&text));
    }

    #[test]
    fn runs_carry_the_templates_bounds_in_its_dialect() {
        let tick = DateTime::parse_from_rfc3339("2026-11-30T09:00:00Z").expect("t").with_timezone(&Utc);
        let theirs = GUILD_HALL.replace("dependencies: []\n", "dependencies: []\nresource_overrides:\n  maxTurns: 7\n  model: opus\n");
        let t = Template::parse(Path::new("c/weekly.md"), &theirs).expect("Guild Hall's");
        let (id, text) = t.run(tick, "2026-11-30T09:00:02.000Z");
        assert!(text.contains("resource_overrides:\n  maxTurns: 7\n  model: opus\n") && !text.contains("resources:"), "{text}");
        let run = super::super::Commission::parse(Path::new(&format!("c/{id}.md")), &text).expect("the run parses");
        assert_eq!(run.resources.max_turns, Some(7));
        let ours = "---\ntype: scheduled\nworker: scribe\nresources: {max_turns: 3, max_budget_usd: 0.5}\nschedule: {cron: \"0 9 * * *\"}\n---\nx\n";
        let t = Template::parse(Path::new("c/notes.md"), ours).expect("ours");
        let (id, text) = t.run(tick, "2026-11-30T09:00:02.000Z");
        assert!(!text.contains("resource_overrides"), "{text}");
        let run = super::super::Commission::parse(Path::new(&format!("c/{id}.md")), &text).expect("the run parses");
        assert_eq!((run.resources.max_turns, run.resources.max_budget_usd), (Some(3), Some(0.5)));
        let both = ours.replace("resources:", "resource_overrides: {maxTurns: 2}\nresources:");
        let said = Template::parse(Path::new("c/t.md"), &both).err().unwrap_or_default();
        assert!(said.iter().any(|p| p.to_string().contains("keep one")), "{said:?}");
        let bad = GUILD_HALL.replace("dependencies: []\n", "dependencies: []\nresource_overrides: {maxTurn: 2}\n");
        let said = Template::parse(Path::new("c/t.md"), &bad).err().unwrap_or_default();
        assert!(said.iter().any(|p| p.to_string().contains("bad resource_overrides")), "{said:?}");
    }

    #[test]
    fn bad_templates_are_said_at_the_key() {
        let said = |text: &str| {
            Template::parse(Path::new("c/t.md"), text).err().unwrap_or_default().iter().map(|p| p.to_string()).collect::<Vec<_>>()
        };
        let s = said("---\ntype: scheduled\nworker: scribe\nschedule: {cron: \"61 * * * *\"}\n---\nx\n");
        assert!(s[0].starts_with("c/t.md:4:") && s[0].contains("minute"), "{s:?}");
        let s = said("---\ntype: scheduled\nstatus: running\nworker: scribe\nschedule: {cron: \"* * * * *\", repet: 2}\n---\nx\n");
        assert!(s.iter().any(|p| p.contains("not running")) && s.iter().any(|p| p.contains("did you mean `repeat`")), "{s:?}");
        let s = said("---\ntype: scheduled\nworker: scribe\nschedule: {cron: \"* * * * *\"}\n---\n");
        assert!(s[0].contains("missing prompt"), "{s:?}");
    }
}
