//! The round's worker slots observed, once, for every kind ([`Capacity`]): the caps, and the
//! workers that hold a slot outside what the kinds observe themselves — other projects' (their
//! commissions and wave tasks), this project's orphaned commission workers, and its wave tasks.
//! Read from the home's index of live runs ([`live`]), so a round costs what runs, not what the
//! history left in `state/`; a process's first round (and any in a home without an index)
//! walks the state dirs too, and registers what the index lacks.

use std::path::Path;

use anyhow::Result;

use crate::activity::capacity::Capacity;
use crate::activity::state::{Record, StateDir};
use crate::config::{Home, Project};
use crate::files::read_json;
use crate::worker::live::{self, Run, Slot};
use crate::worker::shim;

/// Observe the round's capacity: the live runs of the home's index ([`live`]), each proven
/// live by its state dir's own looks.
pub(crate) fn observe(home: &Home, project: &Project) -> Result<Capacity> {
    let global = home.load_config()?;
    let boot = shim::boot_id();
    // An orphan: runtime state whose commission file is gone. Asked of each live one (a stat)
    // rather than by listing the commissions again: the observer lists them, and live runs are
    // fewer.
    let commissions = project.commissions_dir();
    // As the observer lists them: a file or a link named `<id>.md`.
    let has_file = |id: &str| std::fs::symlink_metadata(commissions.join(format!("{id}.md"))).is_ok_and(|m| m.is_file() || m.is_symlink());
    let (mut elsewhere, mut orphans, mut tasks) = (0, 0, 0);
    // Live attempts by worker package (`max_concurrent:`): every project's commissions, wave
    // tasks and reviewers in this home, but this project's commissions that still have their
    // file (their decider counts them); and, apart, those (what the plans' decider adds). An
    // attempt whose package is not recorded counts for none.
    let (mut by, mut here) = (ByPackage::new(), ByPackage::new());
    let count = |by: &mut ByPackage, state: &StateDir| {
        if let Ok(name) = std::fs::read_to_string(state.package()) {
            *by.entry(name.trim().to_string()).or_insert(0) += 1;
        }
    };
    for run in live_runs(home, &boot)? {
        let this = run.project == project.name;
        match &run.slot {
            Slot::Commission { id } => {
                let has_file = this && has_file(id);
                match (this, has_file) {
                    (false, _) => elsewhere += 1,
                    (true, false) => orphans += 1,
                    (true, true) => {}
                }
                count(if has_file { &mut here } else { &mut by }, &run.state);
            }
            Slot::Task => {
                *(if this { &mut tasks } else { &mut elsewhere }) += 1;
                count(&mut by, &run.state);
            }
            // A reviewer's run is an attempt of its package: every live one counts, here too
            // (the commissions' decider counts only their own attempts).
            Slot::Reviewer => count(&mut by, &run.state),
        }
    }
    let mut capacity = Capacity::new(project.config.commission_cap, global.max_concurrent_commissions, elsewhere, orphans, tasks);
    capacity.daily = super::budget::reached(project, &global);
    (capacity.by_package, capacity.commissions_by_package) = (by, here);
    Ok(capacity)
}

type ByPackage = std::collections::BTreeMap<String, usize>;

/// The home's live runs, from its index. The first look of each process (and any look in a
/// home without a complete index: one whose runs a build before the index started) walks every
/// state dir too, and registers the live runs the index lacks: a run the index never saw — one
/// an older build started after the index was made, a downgrade and an upgrade again — is found
/// by the next process that reconciles, not never. A `watch` walks once; a `reconcile --once`
/// walks as every pass did before the index.
fn live_runs(home: &Home, boot: &str) -> Result<Vec<Run>> {
    let is_live = |run: &Run| match run.slot {
        Slot::Commission { .. } => commission_live(&run.state, boot),
        Slot::Task | Slot::Reviewer => crate::worker::liveness::busy(&run.state, boot),
    };
    let indexed = live::live(home, is_live)?;
    if live::complete(home) && !first_look(home) {
        return Ok(indexed);
    }
    let walked = walk(home, boot);
    let mut runs: std::collections::BTreeMap<_, _> = indexed.into_iter().map(|r| (r.state.0.clone(), r)).collect();
    let registered = walked.iter().filter(|run| !runs.contains_key(&run.state.0)).try_for_each(|run| {
        // Named by the attempt it runs, as far as its records say (only the name's).
        let attempt = run.state.read_run().ok().flatten().map_or(0, |r| r.attempt);
        live::register(home, &run.state, attempt).map(drop)
    });
    match registered.and_then(|()| live::mark_complete(home)) {
        Ok(()) => tracing::debug!(runs = walked.len(), "the index of live runs checked against the home's state dirs"),
        Err(e) => {
            tracing::warn!(error = %format!("{e:#}"), "the index of live runs could not be made; the home's state dirs are walked again next round")
        }
    }
    // The index's and the walk's, each once.
    for r in walked {
        runs.entry(r.state.0.clone()).or_insert(r);
    }
    Ok(runs.into_values().collect())
}

/// Whether this is this process's first look at `home`'s live runs (see [`live_runs`]).
fn first_look(home: &Home) -> bool {
    static LOOKED: std::sync::Mutex<std::collections::BTreeSet<std::path::PathBuf>> =
        std::sync::Mutex::new(std::collections::BTreeSet::new());
    LOOKED.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(home.root.clone())
}

/// Every live run of the home, found by walking its state dirs: what the index is made from in
/// a home that has none.
fn walk(home: &Home, boot: &str) -> Vec<Run> {
    let Ok(projects) = std::fs::read_dir(home.state_root()) else { return Vec::new() };
    let mut runs = Vec::new();
    // Project state dirs are named by project names, which are UTF-8.
    for p in projects.filter_map(|e| e.ok()?.file_name().into_string().ok()) {
        let mut found = live_in(&home.commissions_state(&p), boot);
        found.extend([home.commissions_state(&p), home.plans_state(&p)].iter().flat_map(|d| reviewer_runs(d, boot)));
        found.extend(tasks_running_in(home, &p, boot));
        runs.extend(found.iter().filter_map(|s| live::run_of(home, s)));
    }
    runs
}

/// The reviewer runs (`review-<n>-<i>` in an activity's state dir) under `dir`'s activities
/// whose shim is alive (or starting).
fn reviewer_runs(dir: &Path, boot: &str) -> Vec<StateDir> {
    let Ok(activities) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut live = Vec::new();
    for a in activities.filter_map(|e| e.ok()) {
        let Ok(runs) = std::fs::read_dir(a.path()) else { continue };
        for r in runs.filter_map(|e| e.ok()) {
            let state = StateDir(r.path());
            if r.file_name().to_str().is_some_and(|n| n.starts_with("review-")) && crate::worker::liveness::busy(&state, boot) {
                live.push(state);
            }
        }
    }
    live
}

/// Wave tasks under a project's state dir whose shim is alive (or starting): they hold a slot
/// under the caps like commissions.
fn tasks_running_in(home: &Home, project: &str, boot: &str) -> Vec<StateDir> {
    let Ok(plans) = std::fs::read_dir(home.plans_state(project)) else { return Vec::new() };
    let mut live = Vec::new();
    for plan in plans.filter_map(|e| e.ok()?.file_name().into_string().ok()) {
        let Ok(tasks) = std::fs::read_dir(home.tasks_state(project, &plan)) else { continue };
        for t in tasks.filter_map(|e| e.ok()) {
            let state = StateDir(t.path());
            if crate::worker::liveness::busy(&state, boot) {
                live.push(state);
            }
        }
    }
    live
}

/// Commission runtime dirs under `dir` whose worker is running or starting, or may be
/// ([`commission_live`]); ids that are not UTF-8 are none of ours.
fn live_in(dir: &Path, boot: &str) -> Vec<StateDir> {
    let Ok(cs) = std::fs::read_dir(dir) else { return Vec::new() };
    cs.filter_map(|e| e.ok())
        .filter(|c| c.file_name().to_str().is_some())
        .map(|c| StateDir(c.path()))
        .filter(|state| commission_live(state, boot))
        .collect()
}

/// Whether a commission's worker is running or starting in `state`, or may be: a record or run
/// file that does not parse counts as running (its worker may be alive for all we know, so it
/// keeps its slot, as in its own project), with a warning.
fn commission_live(state: &StateDir, boot: &str) -> bool {
    let corrupt = |e: anyhow::Error| {
        tracing::warn!(state = %state.0.display(), error = %format!("{e:#}"), "corrupt runtime state: counted as running against the caps until it is repaired or removed");
    };
    let rec = match read_json::<Record>(&state.record()) {
        Ok(Some(rec)) => rec,
        Ok(None) => return false,
        Err(e) => {
            corrupt(e);
            return true;
        }
    };
    let alive = match state.read_run() {
        Ok(run) => run.is_some_and(|r| r.attempt == rec.attempt && crate::worker::liveness::running(&r, boot)),
        Err(e) => {
            corrupt(e);
            true
        }
    };
    // Whatever its status says (a cancel still stopping, say), live processes hold a slot;
    // so does a runner's job, queued or running.
    alive || shim::shim_lock_held(state) || crate::worker::runner::holds_slot(state, rec.attempt)
}
