//! The loop: observe → plan → act, repeated inside one pass until nothing more can be done now
//! (and with `--wait`, until everything is settled). Holds the project's single-writer lock and
//! the home-wide dispatch lock while it acts. Watch mode will drive this same pass.

use std::collections::BTreeSet;
use std::io::{Seek, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};
use nix::fcntl::Flock;
use serde::Serialize;

use crate::artifact::Problem;
use crate::commission::act::{self, Ctx, Outcome};
use crate::commission::decide::{decide, Action};
use crate::commission::observe::{observe_cached, Depth};
use crate::config::{Home, Project};

#[derive(Debug, Clone, Default)]
pub struct Options {
    pub dry_run: bool,
    pub wait: bool,
    pub timeout: Option<Duration>,
    /// Wait for the project lock instead of refusing when another reconciler holds it.
    pub wait_lock: bool,
    /// Commissions to leave alone this time (the watcher's backoff after failed actions).
    pub skip: BTreeSet<String>,
    /// Settled artifacts remembered across passes (the watcher's).
    pub settled: Option<std::sync::Arc<crate::commission::observe::SettledCache>>,
}

/// One action taken (or planned, with `--dry-run`).
#[derive(Debug, Clone, Serialize)]
pub struct Entry {
    pub pass: usize,
    pub id: String,
    pub action: &'static str,
    pub detail: String,
    pub ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan: Option<Action>,
    /// How long carrying it out took, in milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ms: Option<u64>,
}

#[derive(Debug, Default)]
pub struct Report {
    pub entries: Vec<Entry>,
    pub problems: Vec<Problem>,
    pub settled: bool,
    pub timed_out: bool,
    /// When to look again though nothing changes (heartbeat deadline, cancel grace, …).
    pub next_check: Option<Duration>,
    /// Runtime dirs of workers that are running or starting (the watcher waits on their shims).
    pub running: Vec<PathBuf>,
    /// Where missing dependencies would appear: the nearest existing directory of each (the
    /// watcher watches them, so a blocked commission wakes when its file arrives).
    pub dependency_dirs: Vec<PathBuf>,
}

impl Report {
    pub fn failed(&self) -> bool {
        !self.problems.is_empty() || self.entries.iter().any(|e| !e.ok) || self.timed_out
    }
}

/// An exclusive, non-blocking lock on a file that records its holder.
pub struct HeldLock {
    _lock: Flock<std::fs::File>,
}

/// Take the project's single-writer lock for `who` (e.g. "guild-hall watch"), or say who holds it.
pub fn lock_project(home: &Home, project: &Project, wait: bool, who: &str) -> Result<HeldLock> {
    let path = home.project_state(&project.name).join("lock");
    take_lock(&path, wait, who).map_err(|holder| {
        anyhow!(
            "project {} is being reconciled by another guild-hall process: {holder}. It is the single writer: let it do the work, stop it, or pass --wait-lock to wait for it",
            project.root.display()
        )
    })
}

fn take_lock(path: &PathBuf, wait: bool, who: &str) -> std::result::Result<HeldLock, String> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    }
    use crate::files::{lock, Lock};
    let holder = || std::fs::read_to_string(path).map(|h| h.trim().to_string()).unwrap_or_default();
    let mut f = match lock(path, Lock::TryExclusive).map_err(|e| format!("{e:#}"))? {
        Some(f) => f,
        None if wait => {
            // Said once, so a waiting reconciler is not silent about whom it waits for.
            if !who.is_empty() {
                tracing::warn!("waiting for the project lock, held by {}", holder());
            }
            lock(path, Lock::Exclusive).map_err(|e| format!("{e:#}"))?.ok_or_else(holder)?
        }
        None => return Err(holder()),
    };
    // Who holds it, for the refusal message; the home-wide dispatch lock is taken every pass
    // and names no one (a write per pass would be a write at rest).
    if !who.is_empty() {
        let _ = f.set_len(0);
        let _ = f.rewind();
        let _ = writeln!(f, "{who} (pid {}) since {}", std::process::id(), crate::activity::timeline::timestamp(chrono::Utc::now()));
    }
    Ok(HeldLock { _lock: f })
}

/// Who holds the project's lock right now, if anyone.
pub fn lock_holder(home: &Home, project: &Project) -> Option<String> {
    let path = home.project_state(&project.name).join("lock");
    if !path.exists() {
        return None;
    }
    take_lock(&path, false, "").err()
}

/// How many plan/act rounds one pass may take before it reports that it did not converge.
const MAX_ROUNDS: usize = 40;
const WAIT_POLL: Duration = Duration::from_millis(200);

/// Run a pass (or, with `wait`, passes until settled) under the project lock. `on_entry` sees
/// each entry as it happens.
pub fn reconcile(home: &Home, project: &Project, opts: &Options, on_entry: impl FnMut(&Entry)) -> Result<Report> {
    let _lock = if opts.dry_run { None } else { Some(lock_project(home, project, opts.wait_lock, "guild-hall reconcile")?) };
    run(home, project, opts, on_entry)
}

/// The pass loop itself; the caller holds the project lock (or is only planning).
pub fn run(home: &Home, project: &Project, opts: &Options, mut on_entry: impl FnMut(&Entry)) -> Result<Report> {
    let dispatch_lock = home.root.join("dispatch.lock");
    let started = Instant::now();
    let mut report = Report::default();
    let mut seen_problems = BTreeSet::new();
    // Commissions whose action failed: left alone for the rest of this invocation.
    let mut waiting: std::collections::HashMap<String, String> = std::collections::HashMap::new();
    let mut failed_ids = opts.skip.clone();
    let mut rounds = 0usize;
    loop {
        rounds += 1;
        let global = if opts.dry_run { None } else { Some(take_lock(&dispatch_lock, true, "").map_err(|e| anyhow!("home lock: {e}"))?) };
        wait_for_git(project);
        if !opts.dry_run {
            // What a killed pass left half-applied is finished before anything is observed.
            crate::activity::apply::settle(home, project)?;
        }
        let snapshot = observe_cached(home, project, Depth::Reconcile, opts.settled.as_deref()).context("observing the project")?;
        let planned = decide(&snapshot);
        for p in snapshot.problems.iter().chain(&crate::commission::decide::cycle_problems(&snapshot, &planned.cycles)) {
            if seen_problems.insert(p.to_string()) {
                report.problems.push(p.clone());
            }
        }
        report.next_check = crate::commission::decide::next_check(&snapshot);
        report.dependency_dirs = dependency_dirs(project, &snapshot);
        report.running = snapshot
            .commissions
            .iter()
            .filter(|o| matches!(o.proc, crate::commission::observe::Proc::Alive | crate::commission::observe::Proc::Starting))
            .map(|o| home.commission_state(&project.name, o.id()))
            .collect();
        // A stop is never left out: a failing update (what a worker wrote, say) must not keep
        // an attempt from being stopped.
        let actions: Vec<&Action> = planned
            .actions
            .iter()
            .filter(|a| !failed_ids.contains(a.id()) || matches!(a, Action::Signal { .. } | Action::KillLeftovers { .. }))
            .collect();
        // Meetings and plans are planned and carried out in the same pass, after the
        // commissions: each kind's round, then its entries.
        let meetings = crate::meeting::round(home, project, &snapshot.workers, opts.dry_run)?;
        // Wave tasks share the project's and the home's caps with commissions: with those
        // running and those this round dispatches (the commission planner counted the tasks).
        let dispatching = actions.iter().filter(|a| matches!(a, Action::Dispatch { .. })).count();
        let busy = report.running.len() + snapshot.running_orphans + dispatching;
        let slots = project
            .config
            .commission_cap
            .saturating_sub(busy)
            .min(snapshot.max_concurrent.saturating_sub(busy + snapshot.running_elsewhere));
        let plans = crate::plan::round(home, project, &snapshot.workers, slots, opts.dry_run)?;
        report.next_check = report.next_check.into_iter().chain(plans.next_check).min();
        report.running.extend(plans.running.iter().cloned());
        for p in meetings.problems.iter().chain(&plans.problems) {
            if seen_problems.insert(p.to_string()) {
                report.problems.push(p.clone());
            }
        }
        let others: Vec<(String, &'static str, String, &Result<Outcome>, std::time::Duration)> = meetings
            .done
            .iter()
            .map(|(a, r, d)| (a.id().to_string(), a.kind(), a.describe(), r, *d))
            .chain(plans.done.iter().map(|(a, r, d)| (a.id().to_string(), a.kind(), a.describe(), r, *d)))
            .collect();
        let mut others_waiting = false;
        let mut other_entries = Vec::new();
        for (id, kind, detail, result, took) in &others {
            let (ok, error) = match result {
                Ok(Outcome::Done) | Ok(Outcome::Dropped) => (true, None),
                Ok(Outcome::Waiting(why)) => (true, Some(why.clone())),
                Err(e) => (false, Some(format!("{e:#}"))),
            };
            others_waiting |= matches!(result, Ok(Outcome::Waiting(_)));
            if let Ok(Outcome::Waiting(why)) = result {
                if waiting.get(id) == Some(why) {
                    continue;
                }
                waiting.insert(id.clone(), why.clone());
            }
            let ms = (!opts.dry_run).then_some(took.as_millis() as u64);
            other_entries.push(Entry { pass: rounds, id: id.clone(), action: kind, detail: detail.clone(), ok, error, plan: None, ms });
        }
        let others_progressed = others.iter().any(|(_, _, _, r, _)| matches!(r, Ok(Outcome::Done | Outcome::Dropped)));
        // Plans with a task or verify at work: `--wait` waits for them.
        let plans_busy = plans_busy(home, project)?;
        if opts.dry_run {
            for a in &actions {
                let e = Entry {
                    pass: rounds,
                    id: a.id().into(),
                    action: a.kind(),
                    detail: a.describe(),
                    ok: true,
                    error: None,
                    plan: Some((*a).clone()),
                    ms: None,
                };
                on_entry(&e);
                report.entries.push(e);
            }
            for e in other_entries {
                on_entry(&e);
                report.entries.push(e);
            }
            report.settled = planned.settled && others.is_empty() && !plans_busy;
            return Ok(report);
        }
        for e in other_entries {
            on_entry(&e);
            report.entries.push(e);
        }
        let ctx = Ctx { home, project, snapshot: &snapshot };
        let mut progressed = false;
        for a in &actions {
            let started = Instant::now();
            let result = act::act(&ctx, a);
            let took = started.elapsed();
            let (ok, error) = match &result {
                Ok(Outcome::Done) | Ok(Outcome::Dropped) => (true, None),
                Ok(Outcome::Waiting(why)) => (true, Some(why.clone())),
                Err(e) => (false, Some(format!("{e:#}"))),
            };
            if !ok {
                failed_ids.insert(a.id().to_string());
            }
            progressed |= !matches!(a, Action::Heartbeat { .. }) && !matches!(result, Ok(Outcome::Waiting(_)));
            if matches!(a, Action::Heartbeat { .. }) {
                continue;
            }
            // A wait that goes on (a merge waiting on local changes, say) is said once, and
            // again only when what it waits on changes: `--wait` polls several times a second.
            if let Ok(Outcome::Waiting(why)) = &result {
                if waiting.get(a.id()) == Some(why) {
                    continue;
                }
                waiting.insert(a.id().to_string(), why.clone());
            } else {
                waiting.remove(a.id());
            }
            let e = Entry {
                pass: rounds,
                id: a.id().into(),
                action: a.kind(),
                detail: a.describe(),
                ok,
                error,
                plan: None,
                ms: Some(took.as_millis() as u64),
            };
            on_entry(&e);
            report.entries.push(e);
        }
        drop(global);
        progressed |= others_progressed;
        let quiet = !progressed;
        let settled = planned.settled && !others_waiting && !plans_busy;
        if quiet && (!opts.wait || settled || settled_but_failed(&planned, &failed_ids)) {
            report.settled = settled;
            return Ok(report);
        }
        if !opts.wait && rounds >= MAX_ROUNDS {
            return Err(anyhow!("the pass did not converge after {MAX_ROUNDS} rounds (see the actions above)"));
        }
        if let Some(t) = opts.timeout {
            if started.elapsed() >= t {
                report.timed_out = true;
                return Ok(report);
            }
        }
        if quiet {
            std::thread::sleep(WAIT_POLL);
        }
    }
}

fn dependency_dirs(project: &Project, s: &crate::commission::observe::Snapshot) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = s
        .commissions
        .iter()
        .flat_map(|o| &o.missing_deps)
        .filter_map(|d| project.root.join(d).ancestors().skip(1).find(|a| a.is_dir()).map(Path::to_path_buf))
        .filter(|d| d.starts_with(&project.root))
        .collect();
    dirs.sort();
    dirs.dedup();
    dirs
}

/// A git command holding the index lock (checkout, merge, reset, pull) is rewriting the working
/// tree: wait for it, so that no pass sees half a checkout (a commission without its worker
/// package, say). Bounded: a stale lock left by a crashed git delays a pass by 3 s, no more.
fn wait_for_git(project: &Project) {
    let Ok(repo) = git2::Repository::open(&project.root) else { return };
    let lock = repo.path().join("index.lock");
    let deadline = Instant::now() + Duration::from_secs(3);
    while lock.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn settled_but_failed(planned: &crate::commission::decide::Decisions, failed: &BTreeSet<String>) -> bool {
    !failed.is_empty() && planned.busy.iter().all(|id| failed.contains(id))
}

/// Whether some plan of the project is running or verifying (its tasks or verify at work).
fn plans_busy(home: &Home, project: &Project) -> Result<bool> {
    for path in crate::artifact::paths(&project.plans_dir())? {
        let Some(id) = path.file_stem().and_then(|s| s.to_str()) else { continue };
        if crate::artifact::ids::validate_id(id).is_err() {
            continue;
        }
        if let Ok(Some(r)) = crate::plan::observe::record(home, project, id) {
            if r.status.is_active() {
                return Ok(true);
            }
        }
    }
    Ok(false)
}
