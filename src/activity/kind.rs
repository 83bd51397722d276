//! The Kind contract: what the one reconcile pass needs of each kind of activity (commission,
//! meeting, plan) — observe, a pure decide, act, timers, what is at work, what a person may
//! request. Each kind implements it in its own module; the pass drives them all alike, so no
//! kind ever imports the loop.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;

pub(crate) use super::capacity::Capacity;
use super::Outcome;
use crate::artifact::Problem;
use crate::config::{Home, Project};

/// The kinds of activity, by name: the one word for each, in entries and logs, backoff keys
/// and the intents' file names (`commission`, `meeting`, `plan`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Name {
    Commission,
    Meeting,
    Plan,
}

impl Name {
    pub(crate) const ALL: [Name; 3] = [Name::Commission, Name::Meeting, Name::Plan];

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Name::Commission => "commission",
            Name::Meeting => "meeting",
            Name::Plan => "plan",
        }
    }
}

impl std::fmt::Display for Name {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `reason:` after a status transition a kind carried out, the one rule of every kind: where
/// the reason is the point of the new status (a failure, a cancel, a block, a person's note on
/// a decline) it stays or is written; after any other transition a reason left from before
/// (an earlier refusal or failure) goes — unless one was written in the same step (a refusal
/// made alongside stays visible).
pub(crate) fn stale_reason_goes(reason_is_the_point: bool, written_in_step: bool) -> bool {
    !reason_is_the_point && !written_in_step
}

/// What every kind's action tells the pass.
pub(crate) trait Action: std::fmt::Debug {
    /// The artifact it is for.
    fn id(&self) -> &str;
    /// Its name in entries and logs (`dispatch`, `meeting-open`, `task-start`, …).
    fn verb(&self) -> &'static str;
    /// Short human description.
    fn describe(&self) -> String;
    /// A stop (a signal, a kill): never skipped, whatever failed before — a failing update
    /// must not keep an attempt from being stopped.
    fn is_stop(&self) -> bool {
        false
    }
    /// Signs of life remembered: no progress, and nothing to report when it succeeds (a worker
    /// that prints all the time must not keep a pass going); never skipped either, so that
    /// liveness stays true while its artifact is backed off.
    fn is_heartbeat(&self) -> bool {
        false
    }
    /// Whether carrying it out gets an entry, by how it went (`ok`). Every kind keeps its own
    /// rule: a commission's heartbeat is never said, even failed (its failure shows in the
    /// liveness it decides next); a plan's beat is said when it failed.
    fn reported(&self, _ok: bool) -> bool {
        true
    }
    /// Whether a dry run lists it (a plan's beats are left out of the listing).
    fn listed(&self) -> bool {
        true
    }
    /// New work made from the integration branch's tip (a first dispatch, a meeting opened, a
    /// wave started): the pass syncs the integration branch before it, when asked to, and
    /// carries it out only after the round's actions decided before it (a slot a finish frees
    /// is taken once the finish is done).
    fn starts_work(&self) -> bool {
        false
    }
    /// May be carried out at the same time as the round's neighbouring such actions: the files
    /// it writes are its own artifact's, state's, branch's and worktree's, or made safe to
    /// share (the timeline and intents are per artifact; a worktree's admin dir is added or
    /// removed, and the integration branch moved by a squash merge, one at a time). A
    /// commission's dispatch, finish and update are: mostly git and process starts, so a pass
    /// that starts or finishes twenty waits for none of them in turn.
    fn concurrent(&self) -> bool {
        false
    }
}

/// Where a pass runs, and what it read once in a round for every kind: the worker packages
/// (`W`: the worker layer's catalogue, which lives above this one; the pass names it). It is
/// also every kind's context for its effects.
pub struct Ctx<'a, W> {
    pub home: &'a Home,
    pub project: &'a Project,
    pub workers: &'a W,
}

// Not derived: a derive would ask `W: Copy` of the catalogue, which only is borrowed.
impl<W> Clone for Ctx<'_, W> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<W> Copy for Ctx<'_, W> {}

impl<W> Ctx<'_, W> {
    /// The project's integration branch.
    pub(crate) fn integration(&self) -> &str {
        &self.project.config.integration_branch
    }
}

/// What a kind's decider made of its snapshot.
#[derive(Debug)]
pub(crate) struct Decided<A> {
    pub(crate) actions: Vec<A>,
    /// Problems only the decider sees (a dependency cycle, say).
    pub(crate) problems: Vec<Problem>,
    /// What is left alone on purpose and a person should know, without failing the pass
    /// (work that ended on the integration branch while the checkout says it is to run).
    pub(crate) notes: Vec<Problem>,
    /// Nothing of this kind is running or can start without outside help.
    pub(crate) settled: bool,
    /// The ids that keep it from being settled.
    pub(crate) busy: Vec<String>,
    /// Worker slots its work holds as observed (workers running or starting), and the ids of
    /// its actions that start one more each once carried out: what the pass tells the round's
    /// [`Capacity`] this kind holds (kinds decided later see it).
    pub(crate) holding: usize,
    pub(crate) starting: Vec<String>,
    /// The attempts its actions start (an id each, and the worker package it is of; a
    /// reviewer's run included): what kinds decided later count against `max_concurrent:`.
    pub(crate) package_starts: Vec<(String, String)>,
}

impl<A> Decided<A> {
    /// Actions only: the kind is settled by what its actions come to.
    pub(crate) fn actions(actions: Vec<A>) -> Decided<A> {
        Decided {
            actions,
            problems: Vec::new(),
            notes: Vec::new(),
            settled: true,
            busy: Vec::new(),
            holding: 0,
            starting: Vec::new(),
            package_starts: Vec::new(),
        }
    }
}

/// What is at work, for the watcher.
#[derive(Debug, Default)]
pub(crate) struct AtWork {
    /// Runtime dirs of workers that are running or starting (the watcher waits on their shims).
    pub(crate) running: Vec<PathBuf>,
    /// Where something awaited would appear (the watcher watches these directories).
    pub(crate) awaited_dirs: Vec<PathBuf>,
}

/// One kind of activity, as the reconcile pass drives it; `W`: the worker catalogue (see [`Ctx`]).
pub(crate) trait Kind<W> {
    /// The kind's name: with an id, it keys backoff.
    const NAME: Name;
    /// When its actions are carried out in a round, among the kinds' (lowest first). Every
    /// kind is observed and decided first, in the pass's order (commissions first: the wave
    /// tasks' slots are what they leave); then meetings act, then plans, then commissions —
    /// the order of effects on the integration branch, and of the output, the pass has had.
    const ACT_ORDER: u8;
    /// Whether its actions launch workers under the project's and the home's caps (the
    /// home-wide dispatch lock keeps two projects' passes from both counting a free slot). A
    /// pass over kinds that launch none (a meeting's fold after a turn) takes no dispatch lock
    /// and runs one round.
    const LAUNCHES: bool;
    type Snapshot;
    type Action: Action;

    /// The world, read into the kind's snapshot, plus the problems seen. `capacity`: the
    /// round's worker slots, observed once by the pass, with what the kinds decided before
    /// this one hold.
    fn observe(&self, ctx: Ctx<'_, W>, capacity: &Capacity) -> Result<(Self::Snapshot, Vec<Problem>)>;
    /// Pure: what to do.
    fn decide(&self, snapshot: &Self::Snapshot) -> Decided<Self::Action>;
    /// One action carried out: one small idempotent effect.
    fn act(&self, ctx: Ctx<'_, W>, snapshot: &Self::Snapshot, action: &Self::Action) -> Result<Outcome>;
    /// When to look again though nothing changes (a heartbeat deadline, a cancel grace, …).
    fn next_check(&self, snapshot: &Self::Snapshot) -> Option<Duration>;
    /// What is at work.
    fn at_work(&self, ctx: Ctx<'_, W>, snapshot: &Self::Snapshot) -> AtWork;
    /// After acting: the ids of this kind still at work that `--wait` waits for (read afresh:
    /// the actions just carried out may have started or ended them). They keep the pass from
    /// being settled, and `--wait` gives up only once each of them has failed.
    fn busy_after(&self, _ctx: Ctx<'_, W>) -> Result<Vec<String>> {
        Ok(Vec::new())
    }
    #[cfg(test)]
    /// The status changes a person may request (from, to): the table the decider enforces.
    fn requests() -> Vec<(&'static str, &'static str)>;
}

#[cfg(test)]
/// Every (from, to) pair of `all` the predicate allows, by name: a request table as data.
pub(crate) fn table<S: Copy>(
    all: &[S],
    allowed: impl Fn(S, S) -> bool,
    name: impl Fn(S) -> &'static str,
) -> Vec<(&'static str, &'static str)> {
    let mut out = Vec::new();
    for &from in all {
        out.extend(all.iter().filter(|&&to| allowed(from, to)).map(|&to| (name(from), name(to))));
    }
    out
}
