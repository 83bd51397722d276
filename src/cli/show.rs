//! Commands that report: `reconcile` (its output), `status`, `timeline`, `logs`, `check`,
//! `workers`. Formatting only; the work is done by the library.

use anyhow::{bail, Context, Result};
use chrono::{DateTime, Utc};
use serde_json::json;

use super::out::{escape_bytes, line, say, say_err, say_json};
use super::{Env, ReconcileArgs};
use crate::activity::state::{Record, StateDir};
use crate::activity::timeline;
use crate::artifact::ids;
use crate::artifact::Problem;
use crate::commission::observe::{observe, Observed, Proc};
use crate::files::read_json;
use crate::reconcile::{self, Options};

pub fn reconcile(env: &Env, args: &ReconcileArgs) -> Result<bool> {
    let opts = Options { dry_run: args.dry_run, wait: args.wait, timeout: args.timeout, wait_lock: args.wait_lock, ..Options::default() };
    let json = args.json;
    let report = reconcile::reconcile(&env.home, &env.project, &opts, |e| {
        if json {
            return;
        }
        let mark = if !e.ok {
            "FAILED "
        } else if e.error.is_some() {
            "waiting "
        } else {
            ""
        };
        say!("{}{:<28} {mark}{}", if opts.dry_run { "would: " } else { "" }, e.id, line(&e.detail));
        if let Some(err) = &e.error {
            say!("{:<28}   {}", "", line(err));
        }
    })?;
    for p in &report.problems {
        say_err!("{p}");
    }
    if json {
        say_json!("{}", serde_json::to_string_pretty(&report.entries)?);
    } else if report.entries.is_empty() && report.problems.is_empty() {
        say!("nothing to do");
    }
    if report.timed_out {
        say_err!("error: timed out before every commission settled");
    }
    Ok(!report.failed())
}

fn age(now: DateTime<Utc>, then: Option<DateTime<Utc>>) -> String {
    match then {
        Some(t) => {
            let secs = now.signed_duration_since(t).num_seconds().max(0) as u64;
            let d = std::time::Duration::from_secs(if secs >= 3600 { secs / 60 * 60 } else { secs });
            humantime::format_duration(d).to_string().replace(' ', "")
        }
        None => "-".into(),
    }
}

fn parse_time(s: Option<&str>) -> Option<DateTime<Utc>> {
    let s = s?;
    DateTime::parse_from_rfc3339(s)
        .map(|t| t.with_timezone(&Utc))
        .ok()
        .or_else(|| chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").ok().and_then(|d| d.and_hms_opt(0, 0, 0)).map(|d| d.and_utc()))
}

/// A failed or cancelled commission whose attempt still has processes: what is under way.
fn stopping(o: &Observed) -> Option<String> {
    let verb = match o.artifact.status? {
        crate::artifact::Status::Cancelled => "cancelling",
        crate::artifact::Status::Failed => "failing",
        _ => return None,
    };
    matches!(o.proc, Proc::Alive | Proc::Starting | Proc::Lingering)
        .then(|| o.record.as_ref().and_then(|r| r.stopping.clone()).unwrap_or_else(|| format!("{verb}: worker still running")))
}

fn row(o: &Observed, now: DateTime<Utc>) -> serde_json::Value {
    let a = &o.artifact;
    let yaml_json = |k: &str| a.field(k).and_then(|v| serde_json::to_value(v).ok()).unwrap_or(serde_json::Value::Null);
    json!({
        "id": a.id,
        "title": a.title,
        "status": a.status.map(|s| s.as_str()).unwrap_or("pending"),
        "worker": a.worker,
        "attempt": a.attempt(),
        "branch": a.str_field("branch"),
        "progress": a.str_field("progress"),
        "reason": o.corrupt.as_ref().map(|why| format!("corrupt runtime state, nothing is done for it: {why}")).or_else(|| a.str_field("reason").map(str::to_string)),
        "result": yaml_json("result"),
        "questions": yaml_json("questions"),
        "created": a.created(),
        "desired": a.desired.map(|d| d.as_str()),
        "stopping": stopping(o),
        "completed": a.str_field("completed"),
        "process": match o.proc { Proc::Alive => "alive", Proc::Starting => "starting", Proc::Lingering => "lingering", Proc::Dead => "exited", Proc::NotStarted => "none" },
        "pid": o.run.as_ref().filter(|_| o.proc == Proc::Alive).map(|r| r.pid),
        "heartbeat_age_secs": o.heartbeat.as_ref().filter(|_| o.proc == Proc::Alive).map(|h| now.signed_duration_since(h.last_activity).num_seconds()),
        "path": a.path,
    })
}

/// `status --status S --worker W`: rows kept (every filter given must match).
#[derive(Debug, Default)]
pub struct Filter {
    pub status: Vec<String>,
    pub worker: Vec<String>,
}

impl Filter {
    fn keeps(&self, row: &serde_json::Value) -> bool {
        let is = |k: &str, want: &[String]| want.is_empty() || want.iter().any(|w| row[k].as_str() == Some(w.as_str()));
        is("status", &self.status) && is("worker", &self.worker)
    }
}

/// Rows printed one at a time: `--json` writes the same array `serde_json::to_string_pretty`
/// would, element by element, so memory does not grow with the number of artifacts.
struct Rows {
    json: bool,
    now: DateTime<Utc>,
    count: usize,
    /// `status <id> --json` prints its one row as an object: the first row, kept.
    single: Option<Option<serde_json::Value>>,
}

impl Rows {
    fn emit(&mut self, r: &serde_json::Value) -> Result<()> {
        if let Some(first) = &mut self.single {
            if first.is_none() {
                *first = Some(r.clone());
            }
        } else if self.json {
            let pretty = serde_json::to_string_pretty(r)?;
            let mut text = String::with_capacity(pretty.len() + 64);
            text.push_str(if self.count == 0 { "[\n" } else { ",\n" });
            for (n, line) in pretty.lines().enumerate() {
                if n > 0 {
                    text.push('\n');
                }
                text.push_str("  ");
                text.push_str(line);
            }
            super::out::stdout_raw(super::out::json(&text).as_bytes());
        } else {
            if self.count == 0 {
                say!("{:<30} {:<11} {:<12} {:>3} {:>8} {:>5}  PROGRESS / REASON", "ID", "STATUS", "WORKER", "ATT", "AGE", "BEAT");
            }
            let s = |k: &str| r[k].as_str().unwrap_or("").to_string();
            let note = if matches!(s("status").as_str(), "invalid" | "orphaned") || !s("reason").is_empty() && s("status") != "in_progress"
            {
                s("reason")
            } else {
                s("progress")
            };
            let beat = r["heartbeat_age_secs"].as_i64().map(|s| format!("{s}s")).unwrap_or_else(|| "-".into());
            // Still stopping: "cancelling" / "failing", and what is under way.
            let stopping = s("stopping");
            let (status, note) = match stopping.split_once(':') {
                Some((verb, _)) => (verb.to_string(), stopping.clone()),
                None => (s("status"), note),
            };
            // One row a commission: the first line of the note, every control in it shown.
            say!(
                "{:<30} {:<11} {:<12} {:>3} {:>8} {:>5}  {}",
                line(&s("id")),
                status,
                line(&s("worker")),
                r["attempt"].as_u64().unwrap_or(0),
                age(self.now, parse_time(r["created"].as_str())),
                beat,
                line(note.split('\n').next().unwrap_or(""))
            );
        }
        self.count += 1;
        Ok(())
    }
}

fn orphan_row(o: &crate::service::gc::Orphan) -> serde_json::Value {
    json!({"id": o.id, "status": "orphaned", "kind": o.kind, "reason": o.describe(), "path": o.artifact, "worker": null, "attempt": 0,
           "branch": o.branches.first().map(|b| b.name.clone()), "progress": null, "result": null})
}

pub fn status(env: &Env, id: Option<&str>, json_out: bool, filter: &Filter) -> Result<bool> {
    if let Some(id) = id {
        ids::validate_id(id)?;
    }
    let known = ["invalid", "orphaned"];
    for s in &filter.status {
        if crate::artifact::Status::parse(s).is_none() && !known.contains(&s.as_str()) {
            let all: Vec<&str> = crate::artifact::Status::ALL.iter().map(|s| s.as_str()).chain(known).collect();
            bail!("--status {s:?}: expected one of {}", all.join(", "));
        }
    }
    let now = Utc::now();
    let mut rows = Rows { json: json_out, now, count: 0, single: (json_out && id.is_some()).then_some(None) };
    if !json_out {
        if let Some(holder) = crate::reconcile::lock_holder(&env.home, &env.project) {
            say!("reconciler: {holder}");
        }
    }
    let wanted = |p: &std::path::Path| id.is_none_or(|i| p.file_stem().and_then(|s| s.to_str()) == Some(i));
    // Artifacts that do not parse are listed after the others, one row per problem.
    let mut invalid = Vec::new();
    let mut problems = 0usize;
    let mut failed: Option<anyhow::Error> = None;
    let catalog_problems = crate::commission::observe::observe_each(&env.home, &env.project, wanted, |o| {
        if failed.is_some() {
            return;
        }
        match o {
            Ok(o) => {
                problems += usize::from(o.corrupt.is_some());
                let r = row(&o, now);
                if filter.keeps(&r) {
                    if let Err(e) = rows.emit(&r) {
                        failed = Some(e);
                    }
                }
            }
            Err(ps) => {
                problems += ps.len();
                invalid.extend(ps);
            }
        }
    })?;
    if let Some(e) = failed {
        return Err(e);
    }
    problems += catalog_problems.iter().filter(|p| id.is_none_or(|i| p.path.file_stem().and_then(|s| s.to_str()) == Some(i))).count();
    for p in &invalid {
        let stem = p.path.file_stem().and_then(|s| s.to_str()).unwrap_or("?");
        let r = json!({"id": stem, "status": "invalid", "reason": p.to_string(), "path": p.path, "worker": null, "attempt": 0, "branch": null, "progress": null, "result": null});
        if filter.keeps(&r) {
            rows.emit(&r)?;
        }
    }
    for o in crate::service::gc::inventory(&env.home, &env.project)? {
        if id.is_none_or(|i| o.kind == "commission" && i == o.id) {
            let r = orphan_row(&o);
            if filter.keeps(&r) {
                rows.emit(&r)?;
            }
        }
    }
    if let Some(id) = id {
        if rows.count == 0 && filter.status.is_empty() && filter.worker.is_empty() {
            bail!("no commission {id:?} in {}", env.project.commissions_dir().display());
        }
    }
    if let Some(first) = rows.single.take() {
        say_json!("{}", serde_json::to_string_pretty(&first.unwrap_or(serde_json::Value::Null))?);
    } else if json_out {
        super::out::stdout_raw(if rows.count == 0 { b"[]\n" } else { b"\n]\n" });
    } else if rows.count == 0 {
        say!("no commissions in {}", env.project.commissions_dir().display());
    }
    if !json_out && id.is_none() {
        plans_table(env)?;
    }
    // As ever: the JSON reports problems in its rows; the table's exit code says there were some.
    Ok(json_out || problems == 0)
}

/// `guild-hall gc`: every path and ref removed (or, with `--dry-run`, that would be), and the
/// orphans kept with why.
pub fn gc(env: &Env, dry_run: bool, json_out: bool, include_unmerged: bool) -> Result<bool> {
    let done = crate::service::gc::collect(&env.home, &env.project, dry_run, include_unmerged)?;
    if json_out {
        say_json!("{}", serde_json::to_string_pretty(&json!({"dry_run": dry_run, "removed": done.removed, "kept": done.kept}))?);
        return Ok(true);
    }
    for r in &done.removed {
        say!("{} {} {} ({} {})", if dry_run { "would remove" } else { "removed" }, r.what, r.target, r.kind, r.id);
    }
    for k in &done.kept {
        say!("kept {} {}: {}", k.kind, k.id, k.reason);
    }
    if done.removed.is_empty() && done.kept.is_empty() {
        say!("no orphans");
    }
    Ok(true)
}

/// The plans, each with its waves and tasks (`guild-hall plan show <plan>` has the detail).
fn plans_table(env: &Env) -> Result<()> {
    for path in crate::artifact::paths(&env.project.plans_dir())? {
        let Some(id) = path.file_stem().and_then(|s| s.to_str()) else { continue };
        let Ok(plan) = crate::plan::observe::load(&env.project, id) else { continue };
        let record = crate::plan::observe::record(&env.home, &env.project, id).ok().flatten();
        let status = record.as_ref().map(|r| r.status).or(plan.status).unwrap_or(crate::artifact::plan::PlanStatus::Pending);
        let wave = record.as_ref().filter(|r| r.wave > 0).map(|r| format!(" wave {} of {}", r.wave, plan.waves.len())).unwrap_or_default();
        let reason = record.as_ref().and_then(|r| r.reason.clone()).map(|r| format!("  {r}")).unwrap_or_default();
        say!("\nplan {id}: {status}{wave}{}", line(&reason));
        for t in plan.tasks() {
            let state = record.as_ref().and_then(|r| r.tasks.get(&t.canonical)).map(|r| r.state.as_str()).unwrap_or("queued");
            say!("  {:<40} {:<11} {}", line(&t.canonical), state, line(&t.worker));
        }
    }
    Ok(())
}

/// A wave task named by its canonical id (`<plan>:exec:wave-<W>:task-<T>`): its plan and it.
fn task_ref(env: &Env, id: &str) -> Result<Option<(crate::artifact::plan::Plan, crate::artifact::plan::Task)>> {
    let Some((plan, _)) = id.split_once(":exec:") else { return Ok(None) };
    let plan = crate::plan::observe::load(&env.project, plan)?;
    let task = plan.task(id).cloned().with_context(|| format!("plan {} has no task {id}", plan.id))?;
    Ok(Some((plan, task)))
}

pub fn timeline(env: &Env, id: &str, json_out: bool) -> Result<()> {
    if let Some((plan, task)) = task_ref(env, id)? {
        for e in timeline::read(&timeline::path_for(&plan.path))?.into_iter().filter(|e| e["task"] == task.canonical.as_str()) {
            if json_out {
                say_json!("{}", serde_json::to_string(&e)?);
            } else {
                say!("{}", line(&timeline::render(&e)));
            }
        }
        return Ok(());
    }
    ids::validate_id(id)?;
    let artifact = env.project.commission_path(id);
    let path = timeline::path_for(&artifact);
    if !artifact.exists() && !path.exists() {
        bail!("no commission {id:?} in {}", env.project.commissions_dir().display());
    }
    for e in timeline::read(&path)? {
        if json_out {
            say_json!("{}", serde_json::to_string(&e)?);
        } else {
            // An entry is one line: a newline in what a worker wrote is shown as `\n`.
            say!("{}", line(&timeline::render(&e)));
        }
    }
    Ok(())
}

/// A worker's log is what it printed: shown escaped like everything else a worker writes
/// (`\n` and `\t` kept), or exactly as written with `raw`.
pub fn logs(env: &Env, id: &str, attempt: Option<u32>, raw: bool) -> Result<()> {
    let (state, attempt) = match task_ref(env, id)? {
        Some((plan, task)) => {
            let state = StateDir(env.home.task_state(&env.project.name, &plan.id, &task.slug()));
            let recorded = crate::plan::observe::record(&env.home, &env.project, &plan.id)?
                .and_then(|r| r.tasks.get(&task.canonical).map(|t| t.attempt));
            match attempt.or(recorded.filter(|a| *a > 0)) {
                Some(a) => (state, a),
                None => bail!("{id} has not started yet: no logs"),
            }
        }
        None => {
            ids::validate_id(id)?;
            let state = StateDir(env.home.commission_state(&env.project.name, id));
            let attempt = match attempt {
                Some(a) => a,
                None => match read_json::<Record>(&state.record())? {
                    Some(r) if r.attempt > 0 => r.attempt,
                    _ => bail!("{id} has not been dispatched yet: no logs"),
                },
            };
            (state, attempt)
        }
    };
    let path = state.log(attempt);
    let bytes = std::fs::read(&path).with_context(|| format!("no log for {id} attempt {attempt} ({})", path.display()))?;
    // A rotated log: the part before, then the current one (it starts with a marker).
    let mut earlier = path.clone().into_os_string();
    earlier.push(".1");
    let show = |b: &[u8]| if raw { super::out::stdout_raw(b) } else { super::out::stdout_raw(&escape_bytes(b)) };
    if let Ok(before) = std::fs::read(&earlier) {
        show(&before);
    }
    show(&bytes);
    Ok(())
}

pub fn check(env: &Env, json_out: bool) -> Result<bool> {
    let snap = observe(&env.home, &env.project)?;
    let mut problems = snap.problems.clone();
    problems.extend(crate::commission::decide::cycle_problems(&snap, &crate::commission::decide::dependency_cycles(&snap)));
    for o in &snap.commissions {
        if let Err(why) = snap.workers.for_commission(&o.artifact.worker) {
            let text = std::fs::read_to_string(&o.artifact.path).unwrap_or_default();
            let (line, col) = crate::artifact::frontmatter::split(&text)
                .map(|s| crate::artifact::frontmatter::key_position(&s, "worker"))
                .unwrap_or((1, 1));
            problems.push(Problem::new(&o.artifact.path, line, col, why));
        }
    }
    let now = crate::activity::timeline::timestamp(chrono::Utc::now());
    let (meetings, meeting_problems) = crate::meeting::observe::observe(&env.home, &env.project, &snap.workers, &now)?;
    problems.extend(meeting_problems);
    for o in &meetings.meetings {
        if let Err(why) = snap.workers.for_meeting(&o.meeting.worker) {
            let text = std::fs::read_to_string(&o.meeting.path).unwrap_or_default();
            let (line, col) = crate::artifact::frontmatter::split(&text)
                .map(|s| crate::artifact::frontmatter::key_position(&s, "worker"))
                .unwrap_or((1, 1));
            problems.push(Problem::new(&o.meeting.path, line, col, why));
        }
    }
    let (plans, plan_problems) = crate::plan::observe::observe(&env.home, &env.project, &snap.workers, &now, 0)?;
    problems.extend(plan_problems);
    for o in &plans.plans {
        let text = std::fs::read_to_string(&o.plan.path).unwrap_or_default();
        let at = |key: &str| {
            crate::artifact::frontmatter::split(&text).map(|s| crate::artifact::frontmatter::key_position(&s, key)).unwrap_or((1, 1))
        };
        for t in o.plan.tasks() {
            if let Err(why) = snap.workers.for_commission(&t.worker) {
                let (line, col) = at("waves");
                problems.push(Problem::new(&o.plan.path, line, col, format!("wave {}, task {}: {why}", t.wave, t.label)));
            }
        }
        if let Some(f) = &o.plan.fixer {
            if let Err(why) = snap.workers.for_commission(f) {
                let (line, col) = at("fixer");
                problems.push(Problem::new(&o.plan.path, line, col, format!("fixer: {why}")));
            }
        }
    }
    // Orphans are reported, not failed on: they are the home's state, not the artifacts'.
    let orphans: Vec<Problem> = crate::service::gc::inventory(&env.home, &env.project)?
        .iter()
        .map(|o| Problem::new(&o.artifact, 1, 1, format!("{} (guild-hall gc removes it)", o.describe())))
        .collect();
    if json_out {
        let all: Vec<&Problem> = problems.iter().chain(&orphans).collect();
        say_json!("{}", serde_json::to_string_pretty(&all)?);
    } else {
        if problems.is_empty() {
            say!(
                "ok: {} commissions, {} meetings, {} plans, {} worker packages",
                snap.commissions.len(),
                meetings.meetings.len(),
                plans.plans.len(),
                snap.workers.packages.len()
            );
        }
        for p in problems.iter().chain(&orphans) {
            say!("{p}");
        }
    }
    Ok(problems.is_empty())
}

pub fn workers(env: &Env, json_out: bool) -> Result<()> {
    let cat = crate::worker::Catalog::discover(&env.project.root, &env.home.workers_dir());
    let global = env.home.load_config()?;
    let support = crate::worker::sandbox::support();
    // How each package runs here: confined, off (its own choice), or refused / unconfined on
    // a kernel without Landlock (as config.yaml says).
    let confinement = |p: &crate::worker::Package| match crate::worker::launch::confinement(&p.manifest.sandbox, &global) {
        Ok(crate::worker::launch::Confinement::Confined) => "confined",
        Ok(crate::worker::launch::Confinement::Unconfined) if p.manifest.sandbox == crate::worker::SandboxSpec::Off => "off",
        Ok(crate::worker::launch::Confinement::Unconfined) => "unconfined",
        Err(_) => "refused",
    };
    if json_out {
        let list: Vec<_> = cat
            .packages
            .values()
            .map(|p| {
                let mut v = serde_json::to_value(p).unwrap_or_default();
                v["confinement"] = json!(confinement(p));
                v
            })
            .collect();
        say_json!("{}", serde_json::to_string_pretty(&list)?);
        return Ok(());
    }
    match &support {
        crate::worker::sandbox::Support::Available { abi } => {
            say!(
                "Landlock: available (ABI {abi}); workers write only their own, read nothing of the home but their own; signals scoped to the worker: {}",
                if *abi >= 6 { "yes" } else { "no (needs ABI 6, Linux 6.12)" }
            )
        }
        crate::worker::sandbox::Support::Unavailable { why } => say!(
            "Landlock: not available ({why}); confined workers are {}",
            if global.without_landlock == crate::config::WithoutLandlock::Unconfined { "run UNCONFINED (config.yaml)" } else { "refused" }
        ),
    }
    if cat.packages.is_empty() {
        say!("no worker packages in .lore/workers/ or {}", env.home.workers_dir().display());
    }
    for p in cat.packages.values() {
        let m = &p.manifest;
        let sandbox = match (&m.sandbox, confinement(p)) {
            (crate::worker::SandboxSpec::Off, _) => "sandbox off".to_string(),
            (crate::worker::SandboxSpec::Confined { write }, how) if !write.is_empty() => format!("sandbox {how} +{}", write.join(",")),
            (_, how) => format!("sandbox {how}"),
        };
        say!(
            "{:<16} {:<8} {:<7} [{}] {sandbox} {}",
            line(&m.name),
            format!("{:?}", p.source).to_lowercase(),
            format!("{:?}", m.checkout).to_lowercase(),
            m.capabilities.join(","),
            p.dir.display()
        );
        if !m.description.is_empty() {
            say!("{:<16} {}", "", line(&m.description));
        }
    }
    for pr in &cat.problems {
        say_err!("{pr}");
    }
    Ok(())
}
