//! Commands that report: `reconcile` (its output), `status` (with its plans table), `timeline`,
//! `logs`, `check`, `workers`; and `gc`, which collects the orphans it reports. Formatting only;
//! the work is done by the library.

use anyhow::{bail, Context, Result};
use chrono::{DateTime, Utc};
use serde_json::json;

use super::out::{counted, escape_bytes, line, pad, say, say_err, say_json, say_raw, Table};
use super::{Env, ReconcileArgs};
use guild_hall::activity::timeline;
use guild_hall::artifact::ids;
use guild_hall::artifact::Problem;
use guild_hall::ops::status::StatusRow;
use guild_hall::reconcile::{self, Options};

pub fn reconcile(env: &Env, args: &ReconcileArgs) -> Result<bool> {
    let opts = Options {
        dry_run: args.dry_run,
        wait: args.wait,
        timeout: args.timeout,
        wait_lock: args.wait_lock,
        before_dispatch: Some(guild_hall::ops::sync::follow),
        ..Options::default()
    };
    let json = args.json;
    if !args.dry_run {
        say_on_interrupt()?;
    }
    let report = reconcile::reconcile(&env.home, &env.project, &opts, |e| {
        if !json {
            entry(e, opts.dry_run);
        }
    })?;
    for p in &report.problems {
        say_err!("{p}");
    }
    // What the pass left alone on purpose (on stderr with --json, which keeps stdout JSON).
    for n in &report.notes {
        if json {
            say_err!("{n}");
        } else {
            say!("{n}");
        }
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

/// On Ctrl-C (SIGINT), say in one line on stderr that the workers started keep running and
/// where to see them, then exit 130 as the signal would have: `reconcile --wait` used to end
/// silently, leaving a person to wonder whether their work was stopped. Nothing is undone:
/// every effect is crash-safe, and the workers run in sessions of their own (the terminal's
/// Ctrl-C never reaches them).
fn say_on_interrupt() -> Result<()> {
    // Started with SIGINT ignored (a script's background job, `nohup`): it stays ignored, as
    // it was meant to be.
    let mut was = std::mem::MaybeUninit::<libc::sigaction>::zeroed();
    // SAFETY: with a null new action, sigaction only writes the current one into `was`.
    let queried = unsafe { libc::sigaction(libc::SIGINT, std::ptr::null(), was.as_mut_ptr()) } == 0;
    // SAFETY: zeroed is a valid sigaction, and sigaction filled it when it succeeded.
    if queried && unsafe { was.assume_init() }.sa_sigaction == libc::SIG_IGN {
        return Ok(());
    }
    let mut signals = signal_hook::iterator::Signals::new([signal_hook::consts::SIGINT])?;
    std::thread::spawn(move || {
        if signals.forever().next().is_some() {
            say_err!(
                "interrupted: the workers already started keep running on their own; `guild-hall status` shows them, and `guild-hall watch` (or the next `guild-hall reconcile`) picks them up"
            );
            std::process::exit(130);
        }
    });
    Ok(())
}

/// How wide the id column of a pass's actions is: most ids fit.
const ID_COLUMN: usize = 28;

/// One action of a pass, as `reconcile` (and `ci`) print it.
pub fn entry(e: &reconcile::Entry, dry_run: bool) {
    say_raw!("{}", entry_text(e, if dry_run { "would: " } else { "" }));
}

/// One action of a pass as `watch` says it: `reconcile`'s line, after the project's name when
/// it watches several; on stderr, with the rest of its log.
pub fn watch_entry(project: Option<&str>, e: &reconcile::Entry) {
    let lead = project.map(|p| format!("{}: ", line(p))).unwrap_or_default();
    super::out::stderr_fmt(format_args!("{}", entry_text(e, &lead)));
}

/// The lines of one action (`lead` before the id), each ending in a newline.
fn entry_text(e: &reconcile::Entry, lead: &str) -> String {
    let mark = if !e.ok {
        "FAILED "
    } else if e.error.is_some() {
        "waiting "
    } else {
        ""
    };
    // Printed as it happens, so not sized to the longest id: a longer one is followed by two
    // spaces (out::pad), and its detail starts where it can.
    let mut text = format!("{lead}{} {mark}{}\n", pad(&e.id, ID_COLUMN), line(&e.detail));
    if let Some(err) = &e.error {
        text.push_str(&format!("{}   {}\n", pad("", ID_COLUMN), line(err)));
    }
    text
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

/// `status --status S --worker W`: rows kept (every filter given must match).
#[derive(Debug, Default)]
pub struct Filter {
    pub status: Vec<String>,
    pub worker: Vec<String>,
}

impl Filter {
    fn keeps(&self, row: &StatusRow) -> bool {
        let is = |v: Option<&str>, want: &[String]| want.is_empty() || want.iter().any(|w| v == Some(w.as_str()));
        is(Some(row.status()), &self.status) && is(row.worker(), &self.worker)
    }

    /// A plan is kept when its status is one asked for and one of its tasks runs on a worker
    /// asked for; it shows only those tasks.
    fn keeps_plan(&self, status: &str) -> bool {
        self.status.is_empty() || self.status.iter().any(|s| s == status)
    }

    fn keeps_worker(&self, worker: &str) -> bool {
        self.worker.is_empty() || self.worker.iter().any(|w| w == worker)
    }

    /// What the filter asked for, as a person says it: `with status failed and worker scribe`.
    fn describe(&self) -> String {
        let either = |v: &[String]| v.iter().map(|s| line(s).into_owned()).collect::<Vec<_>>().join(" or ");
        let mut parts = Vec::new();
        if !self.status.is_empty() {
            parts.push(format!("status {}", either(&self.status)));
        }
        if !self.worker.is_empty() {
            parts.push(format!("worker {}", either(&self.worker)));
        }
        format!("with {}", parts.join(" and "))
    }
}

/// Rows printed one at a time: `--json` writes the same array `serde_json::to_string_pretty`
/// would, element by element, so memory does not grow with the number of artifacts. The table
/// is kept (its cells only) until the end, so its columns fit the longest id and worker
/// ([`Table`]).
struct Rows {
    json: bool,
    now: DateTime<Utc>,
    count: usize,
    /// `status <id> --json` prints its one row as an object: the first row, kept.
    single: Option<Option<StatusRow>>,
    /// The table: id, status, worker, attempt, age, beat, note.
    table: Table<8>,
    /// `status <id>` as a table: its reviewer workers' verdicts, printed under it.
    reviews: Option<Vec<String>>,
}

impl Rows {
    fn emit(&mut self, r: &StatusRow) -> Result<()> {
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
            let (status, worker, created, beat, note) = match r {
                // An invalid artifact or an orphan: its reason.
                StatusRow::Problem(p) => (p.status.as_str().to_string(), "", None, "-".to_string(), p.reason.clone()),
                StatusRow::Schedule(s) => {
                    (format!("{} (scheduled)", s.status.as_str()), s.worker.as_str(), None, "-".to_string(), s.note())
                }
                StatusRow::Commission(c) => {
                    if let Some(reviews) = &mut self.reviews {
                        reviews.extend(c.review_lines());
                    }
                    let s = |v: &Option<String>| v.clone().unwrap_or_default();
                    let summary = c.summary().unwrap_or("").to_string();
                    let note = if !s(&c.elsewhere).is_empty() {
                        s(&c.elsewhere)
                    } else if !s(&c.integrated).is_empty() {
                        s(&c.integrated)
                    } else if !s(&c.waiting).is_empty() {
                        s(&c.waiting)
                    } else if !s(&c.reason).is_empty() && c.status != guild_hall::artifact::Status::InProgress {
                        s(&c.reason)
                    } else if c.status == guild_hall::artifact::Status::Completed && !summary.is_empty() {
                        // What it ended with, not the last thing it said on the way.
                        summary
                    } else {
                        s(&c.progress)
                    };
                    let beat = c.heartbeat_age_secs.map(|s| format!("{s}s")).unwrap_or_else(|| "-".into());
                    // Still stopping: "cancelling" / "failing", and what is under way.
                    let stopping = s(&c.stopping);
                    let (status, note) = match stopping.split_once(':') {
                        Some((verb, _)) => (verb.to_string(), stopping.clone()),
                        // Waiting in a cluster's queue: neither running nor stale.
                        None if !s(&c.queued).is_empty() => ("queued".to_string(), s(&c.queued)),
                        None => (c.status.as_str().to_string(), note),
                    };
                    // Where its dev server is to be found, while it runs.
                    let note = match &c.ports {
                        Some(p) => format!("ports {p}; {note}"),
                        None => note,
                    };
                    (status, c.worker.as_str(), c.created.as_deref(), beat, note)
                }
            };
            let (attempt, usage) = match r {
                StatusRow::Commission(c) => (c.attempt, c.usage.map(|u| u.brief()).unwrap_or_else(|| "-".into())),
                StatusRow::Problem(p) => (p.attempt, "-".into()),
                StatusRow::Schedule(s) => (s.runs_completed, "-".into()),
            };
            // One row a commission: the first line of the note, every control in it shown.
            self.table.row([
                line(r.id()).into_owned(),
                status,
                line(worker).into_owned(),
                attempt.to_string(),
                age(self.now, parse_time(created)),
                beat,
                usage,
                line(note.split('\n').next().unwrap_or("")).into_owned(),
            ]);
        }
        self.count += 1;
        Ok(())
    }
}

pub fn status(env: &Env, id: Option<&str>, json_out: bool, filter: &Filter) -> Result<bool> {
    if let Some(id) = id {
        ids::validate_id(id)?;
    }
    // `active` and `paused`: a scheduled commission's (`completed`, `failed` are a commission's too).
    let known = ["invalid", "orphaned", "active", "paused"];
    let plan_statuses = guild_hall::artifact::plan::PlanStatus::ALL.iter().map(|s| s.as_str());
    for s in &filter.status {
        if guild_hall::artifact::Status::parse(s).is_none() && !known.contains(&s.as_str()) && !plan_statuses.clone().any(|p| p == s) {
            let mut all: Vec<&str> =
                guild_hall::artifact::Status::ALL.iter().map(|s| s.as_str()).chain(known).chain(plan_statuses).collect();
            all.sort_unstable();
            all.dedup();
            bail!("--status {s:?}: expected one of {}", all.join(", "));
        }
    }
    let now = Utc::now();
    let table = Table::new(["ID", "STATUS", "WORKER", "ATT", "AGE", "BEAT", "USAGE", "PROGRESS / RESULT / REASON"]).right(&[3, 4, 5, 6]);
    let mut rows = Rows {
        json: json_out,
        now,
        count: 0,
        single: (json_out && id.is_some()).then_some(None),
        table,
        reviews: (!json_out && id.is_some()).then(Vec::new),
    };
    if !json_out {
        if let Some(holder) = guild_hall::reconcile::lock_holder(&env.home, &env.project) {
            say!("reconciler: {holder}");
        }
        if let Some(why) = guild_hall::ops::sync::last_blocked(&env.home, &env.project) {
            say!("sync: could not follow the base branch: {}", line(&why));
        }
    }
    // Each row kept by the filter, as it comes.
    let problems =
        guild_hall::ops::status::rows(&env.home, &env.project, id, now, |r| if filter.keeps(r) { rows.emit(r) } else { Ok(()) })?;
    if let Some(id) = id {
        if rows.count == 0 && filter.status.is_empty() && filter.worker.is_empty() {
            return Err(guild_hall::tools::Failure::not_found(
                guild_hall::artifact::Wording::COMMISSION.missing(id, &env.project.commissions_dir()),
            )
            .into());
        }
    }
    if let Some(first) = rows.single.take() {
        say_json!("{}", serde_json::to_string_pretty(&first)?);
    } else if json_out {
        super::out::stdout_raw(if rows.count == 0 { b"[]\n" } else { b"\n]\n" });
    } else {
        rows.table.print();
        let reviews = rows.reviews.take().unwrap_or_default();
        if !reviews.is_empty() {
            say!("reviews:");
            for r in &reviews {
                say!("  {}", line(r));
            }
        }
    }
    let filtered = !filter.status.is_empty() || !filter.worker.is_empty();
    if !json_out && rows.count == 0 && !filtered {
        say!("no commissions in {}", env.project.commissions_dir().display());
    }
    let plans = if !json_out && id.is_none() { plans_table(env, filter)? } else { 0 };
    if !json_out && rows.count == 0 && filtered && plans == 0 {
        say!("no commission or plan {}", filter.describe());
    }
    // As ever: the JSON reports problems in its rows; the table's exit code says there were some.
    Ok(json_out || problems == 0)
}

/// `guild-hall gc`: every path and ref removed (or, with `--dry-run`, that would be), and the
/// orphans kept with why.
pub fn gc(env: &Env, dry_run: bool, json_out: bool, include_unmerged: bool) -> Result<bool> {
    let done = guild_hall::ops::gc::collect(&env.home, &env.project, dry_run, include_unmerged)?;
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

/// The plans the filter keeps, each with its waves and tasks (`guild-hall plan show <plan>`
/// has the detail); how many were shown.
fn plans_table(env: &Env, filter: &Filter) -> Result<usize> {
    let mut shown = 0;
    // One table for every plan's tasks, so that their columns line up from plan to plan.
    let mut table = Table::headless().indent("  ");
    for path in guild_hall::artifact::paths(&env.project.plans_dir())? {
        let Some(id) = path.file_stem().and_then(|s| s.to_str()) else { continue };
        let Ok(plan) = guild_hall::plan::observe::load(&env.project, id) else { continue };
        let record = guild_hall::ops::plan::record(&env.home, &env.project, &plan).ok().flatten();
        let status = guild_hall::ops::plan::status(&plan, record.as_ref());
        if !filter.keeps_plan(status.as_str()) || !plan.tasks().any(|t| filter.keeps_worker(&t.worker)) {
            continue;
        }
        shown += 1;
        let wave = record.as_ref().filter(|r| r.wave > 0).map(|r| format!(" wave {} of {}", r.wave, plan.waves.len())).unwrap_or_default();
        let elsewhere = guild_hall::plan::decide::elsewhere(&plan, record.as_ref());
        let integrated = || guild_hall::plan::observe::integrated(&env.project, &plan, record.as_ref()).map(|i| i.describe());
        let reason =
            record.as_ref().and_then(|r| r.reason.clone()).or(elsewhere).or_else(integrated).map(|r| format!("  {r}")).unwrap_or_default();
        table.line(String::new());
        let used = guild_hall::ops::plan::usage(&plan).map(|u| format!(" · used {}", u.brief())).unwrap_or_default();
        table.line(format!("plan {id}: {status}{wave}{used}{}", line(&reason)));
        for t in plan.tasks().filter(|t| filter.keeps_worker(&t.worker)) {
            let state = record.as_ref().and_then(|r| r.tasks.get(&t.canonical)).map(|r| r.state.as_str()).unwrap_or("queued");
            table.row([line(&t.canonical).into_owned(), state.to_string(), line(&t.worker).into_owned()]);
        }
    }
    table.print();
    Ok(shown)
}

/// The timeline of any artifact, or of a wave task ([`guild_hall::ops::timeline::of`]);
/// followed until it has settled with `follow` ([`guild_hall::ops::timeline::follow`]).
pub fn timeline(env: &Env, id: &str, json_out: bool, follow: bool) -> Result<()> {
    let print = |e: &serde_json::Value| -> Result<()> {
        if json_out {
            say_json!("{}", serde_json::to_string(e)?);
        } else {
            // An entry is one line: a newline in what a worker wrote is shown as `\n`.
            say!("{}", line(&timeline::render(e)));
        }
        Ok(())
    };
    if follow {
        super::out::exit_when_reader_goes();
        // A reader that went away (`timeline -f ID | head -3`) ends the following quietly.
        let followed = guild_hall::ops::timeline::follow(&env.home, &env.project, id, &mut |e| {
            print(e)?;
            if super::out::stdout_closed() {
                bail!(READER_GONE);
            }
            Ok(())
        });
        return quiet_when_gone(followed);
    }
    for e in guild_hall::ops::timeline::of(&env.project, id)? {
        print(&e)?;
    }
    Ok(())
}

/// `guild-hall show PATH`: whose work each change of a file on the integration branch was.
pub fn produced(cli: &super::Cli, env: &Env, path: &std::path::Path, json_out: bool) -> Result<()> {
    let cwd = match cli.project()? {
        Some(d) => d,
        None => std::env::current_dir().context("reading the current directory")?,
    };
    let history = guild_hall::ops::produced::of(&env.project, &cwd, path)?;
    if json_out {
        say_json!("{}", serde_json::to_string_pretty(&history)?);
        return Ok(());
    }
    say!("{} on {}, newest first:", line(&history.path), line(&history.branch));
    for c in &history.changes {
        let who = match (c.kind, &c.id, c.attempt) {
            (Some(kind), Some(id), Some(n)) => format!("{kind} {} attempt {n}", line(id)),
            (Some(kind), Some(id), None) => format!("{kind} {}", line(id)),
            _ => "no guild-hall trailer (a person's commit, or one `sync` brought in)".to_string(),
        };
        say!("{}  {}  {:<8}  {who}", c.date, c.commit.get(..10).unwrap_or(&c.commit), c.change);
    }
    if history.from_before {
        say!("(there before guild-hall began {}: from your own history)", line(&history.branch));
    }
    Ok(())
}

/// A worker's log is what it printed: shown escaped like everything else a worker writes
/// (`\n` and `\t` kept), or exactly as written with `raw`.
pub fn logs(env: &Env, id: &str, attempt: Option<u32>, raw: bool, follow: bool) -> Result<()> {
    if follow {
        return follow_log(raw, |out| guild_hall::ops::logs::follow_worker_log(&env.home, &env.project, id, attempt, out));
    }
    let (path, attempt) = guild_hall::ops::logs::worker_log(&env.home, &env.project, id, attempt)?;
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        // An attempt whose worker has not written yet (or whose log was collected).
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => bail!("no log for {id} attempt {attempt}: {} does not exist", path.display()),
        Err(e) => return Err(e).with_context(|| format!("reading the log of {id} attempt {attempt} ({})", path.display())),
    };
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

/// Why following stopped early: no one reads stdout any more.
const READER_GONE: &str = "stdout closed";

/// A follow that stopped because its reader went away ended well.
fn quiet_when_gone(followed: Result<()>) -> Result<()> {
    match followed {
        Err(_) if super::out::stdout_closed() => Ok(()),
        other => other,
    }
}

/// `logs -f`, `plan logs -f`: each run of bytes as it is written, escaped unless `raw`. A character split
/// between two runs waits for its end, so it is not shown as two escapes.
pub(super) fn follow_log(raw: bool, follow: impl FnOnce(&mut dyn FnMut(&[u8]) -> Result<()>) -> Result<()>) -> Result<()> {
    super::out::exit_when_reader_goes();
    let mut held: Vec<u8> = Vec::new();
    let followed = follow(&mut |bytes| {
        if raw {
            super::out::stdout_raw(bytes);
        } else {
            held.extend_from_slice(bytes);
            let whole = complete_utf8(&held);
            super::out::stdout_raw(&escape_bytes(&held[..whole]));
            held.drain(..whole);
        }
        if super::out::stdout_closed() {
            bail!(READER_GONE);
        }
        Ok(())
    });
    quiet_when_gone(followed)?;
    if !held.is_empty() {
        super::out::stdout_raw(&escape_bytes(&held));
    }
    Ok(())
}

/// How much of `bytes` ends on a character's boundary: all but an incomplete UTF-8 sequence
/// at its very end (at most 3 bytes).
fn complete_utf8(bytes: &[u8]) -> usize {
    let n = bytes.len();
    for back in 1..=n.min(3) {
        let b = bytes[n - back];
        if b & 0xC0 == 0x80 {
            continue; // a continuation byte: its lead is further back
        }
        let wants = match b {
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF7 => 4,
            _ => 1,
        };
        return if wants > back { n - back } else { n };
    }
    n
}

pub fn check(env: &Env, json_out: bool) -> Result<bool> {
    let report = guild_hall::ops::check::check(&env.home, &env.project)?;
    let (problems, orphans, unsettled, waiting) = (&report.problems, &report.orphans, &report.unsettled, &report.waiting);
    if json_out {
        let all: Vec<&Problem> = problems.iter().chain(waiting).chain(orphans).chain(unsettled).collect();
        say_json!("{}", serde_json::to_string_pretty(&all)?);
    } else {
        if problems.is_empty() {
            // What waits is no error, but it is said with the `ok`.
            let waits = if waiting.is_empty() { String::new() } else { format!("; {} waiting for a worker (below)", waiting.len()) };
            say!(
                "ok: {}, {}, {}, {}{waits}",
                counted(report.commissions, "commission"),
                counted(report.meetings, "meeting"),
                counted(report.plans, "plan"),
                counted(report.packages, "worker package")
            );
        }
        for p in problems.iter().chain(waiting).chain(orphans).chain(unsettled) {
            say!("{p}");
        }
    }
    Ok(problems.is_empty())
}

pub fn workers(env: &Env, json_out: bool) -> Result<()> {
    let cat = guild_hall::worker::Catalog::discover(&env.project.root, &env.home.workers_dir());
    let global = env.home.load_config()?;
    let support = guild_hall::worker::sandbox::support();
    // How each package runs here: confined, off (its own choice), or refused / unconfined on
    // a kernel without Landlock (as config.yaml says).
    let confinement = |p: &guild_hall::worker::Package| match guild_hall::worker::launch::confinement(&p.manifest.sandbox, &global) {
        Ok(guild_hall::worker::launch::Confinement::Confined) => "confined",
        Ok(guild_hall::worker::launch::Confinement::Unconfined) if p.manifest.sandbox == guild_hall::worker::SandboxSpec::Off => "off",
        Ok(guild_hall::worker::launch::Confinement::Unconfined) => "unconfined",
        Err(_) => "refused",
    };
    if json_out {
        let list: Vec<_> = cat
            .packages
            .iter()
            .map(|(name, p)| {
                let mut v = serde_json::to_value(p).unwrap_or_default();
                v["confinement"] = json!(confinement(p));
                // The name work names it by (a Guild Hall identity, an alias), and where it came from.
                v["name"] = json!(name);
                v["origin"] = json!(p.origin());
                v
            })
            .collect();
        say_json!("{}", serde_json::to_string_pretty(&list)?);
        return Ok(());
    }
    match &support {
        guild_hall::worker::sandbox::Support::Available { abi } => {
            say!(
                "Landlock: available (ABI {abi}); workers write only their own, read nothing of the home but their own; signals scoped to the worker: {}",
                if *abi >= 6 { "yes" } else { "no (needs ABI 6, Linux 6.12)" }
            );
            // What this kernel cannot keep from a worker, said plainly (docs/confinement.md).
            let abstract_sockets = if *abi >= 6 { "refused".to_string() } else { format!("not enforced: kernel Landlock ABI {abi} < 6") };
            let pathname_sockets = match guild_hall::worker::sandbox::pathname_socket_support() {
                Ok(()) => "refused (those listening when the attempt starts)".to_string(),
                Err(why) => format!("not enforced: {why}"),
            };
            say!("Unix sockets outside the attempt: abstract: {abstract_sockets}; pathname: {pathname_sockets}");
        }
        guild_hall::worker::sandbox::Support::Unavailable { why } => say!(
            "Landlock: not available ({why}); confined workers are {}",
            if global.without_landlock == guild_hall::config::WithoutLandlock::Unconfined {
                "run UNCONFINED (config.yaml)"
            } else {
                "refused"
            }
        ),
    }
    if cat.packages.is_empty() {
        say!("no worker packages in .lore/workers/ or {}", env.home.workers_dir().display());
    }
    let mut table = Table::new(["NAME", "SOURCE", "CHECKOUT", "CAPABILITIES", "DIRECTORY", "SANDBOX"]);
    for (name, p) in &cat.packages {
        let m = &p.manifest;
        let sandbox = match (&m.sandbox, confinement(p)) {
            (guild_hall::worker::SandboxSpec::Off, _) => "sandbox off".to_string(),
            (guild_hall::worker::SandboxSpec::Confined { write, read, cluster_client }, how)
                if !write.is_empty() || !read.is_empty() || *cluster_client =>
            {
                let mut s = format!("sandbox {how}");
                if !write.is_empty() {
                    s.push_str(&format!(" +{}", write.join(",")));
                }
                if !read.is_empty() {
                    s.push_str(&format!(" read +{}", read.join(",")));
                }
                if *cluster_client {
                    s.push_str(&format!(" +{}", guild_hall::worker::package::CLUSTER_CLIENT_SHOWN));
                }
                s
            }
            (_, how) => format!("sandbox {how}"),
        };
        table.row([
            line(name).into_owned(),
            line(&p.origin()).into_owned(),
            format!("{:?}", m.checkout).to_lowercase(),
            format!("[{}]", m.capabilities.join(",")),
            // The directories are alike in length; the sandbox's extra paths are not.
            line(&p.dir.display().to_string()).into_owned(),
            line(&sandbox).into_owned(),
        ]);
        if !m.description.is_empty() {
            table.under(line(&m.description).into_owned());
        }
        if let Some(n) = m.max_concurrent() {
            table.under(format!("max_concurrent: {n} (at most {n} of its attempts at once in this home; the rest wait, blocked)"));
        }
    }
    table.print();
    for pr in &cat.problems {
        say_err!("{pr}");
    }
    Ok(())
}
