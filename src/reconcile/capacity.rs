//! The round's worker slots observed, once, for every kind ([`Capacity`]): the caps, and the
//! workers that hold a slot outside what the kinds observe themselves — other projects' (their
//! commissions and wave tasks), this project's orphaned commission workers, and its wave tasks.

use std::path::Path;

use anyhow::Result;

use crate::activity::capacity::Capacity;
use crate::activity::state::{Record, StateDir};
use crate::config::{Home, Project};
use crate::files::read_json;
use crate::worker::shim;

/// Observe the round's capacity: the state dirs of this home's projects walked once.
pub(crate) fn observe(home: &Home, project: &Project) -> Result<Capacity> {
    let global = home.load_config()?;
    let boot = shim::boot_id();
    // An orphan: runtime state whose commission file is gone. Asked of each state dir (a stat)
    // rather than by listing the commissions again: the observer lists them, and state dirs are
    // fewer.
    let commissions = project.commissions_dir();
    let orphans = running_in(&home.commissions_state(&project.name), &boot, |id| {
        // As the observer lists them: a file or a link named `<id>.md`.
        !std::fs::symlink_metadata(commissions.join(format!("{id}.md"))).is_ok_and(|m| m.is_file() || m.is_symlink())
    });
    let mut capacity = Capacity::new(
        project.config.commission_cap,
        global.max_concurrent_commissions,
        running_elsewhere(home, &project.name, &boot),
        orphans,
        tasks_running_in(home, &project.name, &boot),
    );
    capacity.daily = super::budget::reached(project, &global);
    (capacity.by_package, capacity.commissions_by_package) = packages_running(home, project, &boot);
    Ok(capacity)
}

/// Live attempts by worker package (`max_concurrent:`): every project's commissions and wave
/// tasks in this home, but this project's commissions that still have their file (their
/// decider counts them); and, apart, those (what the plans' decider adds). Proven live by the
/// same look as the caps', so a crash leaves no count behind; an attempt whose package is not
/// recorded counts for none.
fn packages_running(home: &Home, project: &Project, boot: &str) -> (ByPackage, ByPackage) {
    let (mut by, mut here) = (ByPackage::new(), ByPackage::new());
    let count = |by: &mut ByPackage, state: &StateDir| {
        if let Ok(name) = std::fs::read_to_string(state.package()) {
            *by.entry(name.trim().to_string()).or_insert(0) += 1;
        }
    };
    let Ok(projects) = std::fs::read_dir(home.state_root()) else { return (by, here) };
    let commissions = project.commissions_dir();
    let has_file = |id: &str| std::fs::symlink_metadata(commissions.join(format!("{id}.md"))).is_ok_and(|m| m.is_file() || m.is_symlink());
    for p in projects.filter_map(|e| e.ok()?.file_name().into_string().ok()) {
        let this = p == project.name;
        for state in live_in(&home.commissions_state(&p), boot, |_| true) {
            let id = state.0.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            count(if this && has_file(id) { &mut here } else { &mut by }, &state);
        }
        // A reviewer's run is an attempt of its package: every live one counts, here too (the
        // commissions' decider counts only their own attempts).
        for state in [home.commissions_state(&p), home.plans_state(&p)].iter().flat_map(|d| reviewer_runs(d, boot)) {
            count(&mut by, &state);
        }
        let Ok(plans) = std::fs::read_dir(home.plans_state(&p)) else { continue };
        for plan in plans.filter_map(|e| e.ok()?.file_name().into_string().ok()) {
            let Ok(tasks) = std::fs::read_dir(home.tasks_state(&p, &plan)) else { continue };
            for t in tasks.filter_map(|e| e.ok()) {
                let state = StateDir(t.path());
                if crate::worker::liveness::busy(&state, boot) {
                    count(&mut by, &state);
                }
            }
        }
    }
    (by, here)
}

type ByPackage = std::collections::BTreeMap<String, usize>;

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

/// Commissions of other projects whose worker is alive: they count against the global cap.
fn running_elsewhere(home: &Home, this: &str, boot: &str) -> usize {
    let Ok(projects) = std::fs::read_dir(home.state_root()) else { return 0 };
    // Project state dirs are named by project names, which are UTF-8.
    projects
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|p| p != this)
        .map(|p| running_in(&home.commissions_state(&p), boot, |_| true) + tasks_running_in(home, &p, boot))
        .sum()
}

/// Wave tasks under a project's state dir whose shim is alive (or starting): they hold a slot
/// under the caps like commissions.
fn tasks_running_in(home: &Home, project: &str, boot: &str) -> usize {
    let Ok(plans) = std::fs::read_dir(home.plans_state(project)) else { return 0 };
    let mut n = 0;
    for plan in plans.filter_map(|e| e.ok()?.file_name().into_string().ok()) {
        let Ok(tasks) = std::fs::read_dir(home.tasks_state(project, &plan)) else { continue };
        for t in tasks.filter_map(|e| e.ok()) {
            if crate::worker::liveness::busy(&StateDir(t.path()), boot) {
                n += 1;
            }
        }
    }
    n
}

/// Runtime dirs under `dir` (for ids `include` accepts) whose worker is running or starting,
/// or may be: a record or run file that does not parse counts as running (its worker may be
/// alive for all we know, so it keeps its slot, as in its own project), with a warning.
fn running_in(dir: &Path, boot: &str, include: impl Fn(&str) -> bool) -> usize {
    live_in(dir, boot, include).len()
}

/// [`running_in`]'s runtime dirs themselves.
fn live_in(dir: &Path, boot: &str, include: impl Fn(&str) -> bool) -> Vec<StateDir> {
    let Ok(cs) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut n = Vec::new();
    for c in cs.filter_map(|e| e.ok()) {
        if !c.file_name().to_str().is_some_and(&include) {
            continue;
        }
        let state = StateDir(c.path());
        let corrupt = |e: anyhow::Error| {
            tracing::warn!(state = %state.0.display(), error = %format!("{e:#}"), "corrupt runtime state: counted as running against the caps until it is repaired or removed");
        };
        let rec = match read_json::<Record>(&state.record()) {
            Ok(Some(rec)) => rec,
            Ok(None) => continue,
            Err(e) => {
                corrupt(e);
                n.push(state);
                continue;
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
        if alive || shim::shim_lock_held(&state) || crate::worker::runner::holds_slot(&state, rec.attempt) {
            n.push(state);
        }
    }
    n
}
