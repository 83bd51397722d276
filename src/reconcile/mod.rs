//! The loop: observe → decide → act over every kind (commissions, meetings, plans), repeated inside
//! one pass until nothing more can be done now (and with `--wait`, until everything is settled).
//! Holds the project's single-writer lock ([`lock`]) and, when it drives a kind that launches
//! workers, the home-wide dispatch lock while it acts; `reconcile`, `watch` and the operations all
//! drive this same pass ([`pass`]).

pub(crate) mod budget;
mod capacity;
mod lock;
pub mod notifications;
mod pass;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use serde::Serialize;

use crate::activity::kind::Name;
use crate::artifact::Problem;
use crate::commission::decide::Action;
use crate::config::{Home, Project};
pub use lock::{lock_between_passes, lock_holder, lock_project, HeldLock};
pub(crate) use pass::run;

/// An action's kind and artifact id: what backoff and a pass's failures are keyed by (a failed
/// meeting `x` says nothing about commission `x`).
pub(crate) type Key = (Name, String);

#[derive(Debug, Clone, Default)]
pub struct Options {
    pub dry_run: bool,
    pub wait: bool,
    pub timeout: Option<Duration>,
    /// Wait for the project lock instead of refusing when another reconciler holds it.
    pub wait_lock: bool,
    /// Actions to leave alone this time, by kind and id (the watcher's backoff after failed
    /// actions); stops and heartbeats are never left out.
    pub skip: BTreeSet<Key>,
    /// What a watch observed in its earlier passes, fed by its file events
    /// ([`crate::activity::observed`]); `None` (`reconcile`, the operations): everything is read.
    pub observed: Option<std::sync::Arc<Observed>>,
    /// Drive only this kind (meetings: a turn's toolbox events folded in at once,
    /// without dispatching commissions or landing wave tasks); `None`: every kind.
    pub only: Option<Name>,
    /// Called once a pass, before the first round that would start new work (a dispatch, a
    /// meeting opened, a wave started), when not a dry run: `ops` brings the base branch into
    /// the integration branch there (`follow:`). `true`: the integration branch moved, and the
    /// round is observed again before anything acts.
    pub before_dispatch: Option<fn(&Home, &Project) -> bool>,
}

/// What a watch keeps of each kind between passes: the commissions' store (settled artifacts,
/// trailers by tips), and the plans and meetings at rest (one store, keyed by kind).
#[derive(Debug, Default)]
pub struct Observed {
    pub(crate) commissions: crate::commission::observe::Observations,
    pub(crate) at_rest: crate::activity::observed::Store<crate::activity::observed::AtRest>,
}

impl Observed {
    /// A watcher's event for `path`.
    pub(crate) fn changed(&self, path: &std::path::Path) {
        self.commissions.settled.changed(path);
        self.at_rest.changed(path);
    }

    /// Events were lost: nothing observed before is trusted.
    pub(crate) fn overflowed(&self) {
        self.commissions.settled.overflowed();
        self.at_rest.overflowed();
    }
}

/// One action taken (or planned, with `--dry-run`).
#[derive(Debug, Clone, Serialize)]
pub struct Entry {
    pub(crate) pass: usize,
    /// The kind of the artifact (`commission`, `meeting`, `plan`): not in the output, whose
    /// action names say it.
    #[serde(skip)]
    pub(crate) kind: Name,
    pub id: String,
    pub(crate) action: &'static str,
    pub detail: String,
    pub ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) plan: Option<Action>,
    /// How long carrying it out took, in milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) ms: Option<u64>,
}

#[derive(Debug, Default)]
pub struct Report {
    pub entries: Vec<Entry>,
    pub problems: Vec<Problem>,
    /// What the pass left alone on purpose, for people (not a failure): see
    /// [`crate::activity::kind::Decided::notes`].
    pub notes: Vec<Problem>,
    pub(crate) settled: bool,
    pub timed_out: bool,
    /// When to look again though nothing changes (heartbeat deadline, cancel grace, …).
    pub(crate) next_check: Option<Duration>,
    /// Runtime dirs of workers that are running or starting (the watcher waits on their shims).
    pub(crate) running: Vec<PathBuf>,
    /// Where missing dependencies would appear: the nearest existing directory of each (the
    /// watcher watches them, so a blocked commission wakes when its file arrives).
    pub(crate) dependency_dirs: Vec<PathBuf>,
}

impl Report {
    pub fn failed(&self) -> bool {
        !self.problems.is_empty() || self.entries.iter().any(|e| !e.ok) || self.timed_out
    }
}

/// Run a pass (or, with `wait`, passes until settled) under the project lock. `on_entry` sees
/// each entry as it happens.
pub fn reconcile(home: &Home, project: &Project, opts: &Options, on_entry: impl FnMut(&Entry)) -> Result<Report> {
    let _lock = if opts.dry_run { None } else { Some(lock_project(home, project, opts.wait_lock, "guild-hall reconcile")?) };
    run(home, project, opts, on_entry)
}

impl Entry {
    /// What backoff is keyed by.
    pub(crate) fn key(&self) -> Key {
        (self.kind, self.id.clone())
    }
}
