//! The one generic pass: each round observes the worker slots once ([`super::capacity`]), then
//! observes and decides every kind in turn (commissions, then meetings, then plans: the wave
//! tasks get the worker slots the commissions leave), then carries out their actions in the
//! order the kinds say (meetings, plans, commissions), with one error policy for all of them —
//! a failed action is left alone for the rest of the invocation (stops and heartbeats
//! excepted), keyed by kind and id; a wait is said once. A kind that cannot be observed at all
//! (an unreadable `.lore/plans`, say) fails the round before anything acts: no kind acts on a
//! world only partly read.

use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context as _, Result};

use super::lock::take_lock;
use super::{Entry, Key, Options, Report};
use crate::activity::kind::{Action as _, Capacity, Ctx, Kind, Name};
use crate::activity::Outcome;
use crate::commission::Commissions;
use crate::config::{Home, Project};
use crate::meeting::Meetings;
use crate::plan::Plans;
use crate::worker::Catalog;

/// How many decide/act rounds one pass may take before it reports that it did not converge.
const MAX_ROUNDS: usize = 40;
const WAIT_POLL: Duration = Duration::from_millis(200);

/// `f`, and how long it took.
fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let started = Instant::now();
    (f(), started.elapsed())
}

/// The pass loop itself; the caller holds the project lock (or is only planning).
pub(crate) fn run(home: &Home, project: &Project, opts: &Options, mut on_entry: impl FnMut(&Entry)) -> Result<Report> {
    // Never under a name another checkout of this home holds: its memory and state are keyed so.
    home.refuse_a_name_taken(&project.name, &project.root)?;
    let dispatch_lock = super::lock::dispatch_lock_path(home);
    let started = Instant::now();
    let commissions = Commissions { store: opts.observed.as_deref().map(|o| &o.commissions) };
    let meetings = Meetings { store: opts.observed.as_deref().map(|o| &o.at_rest) };
    let plans = Plans { store: opts.observed.as_deref().map(|o| &o.at_rest) };
    let all: [&dyn Drive; 3] = [&commissions, &meetings, &plans];
    let kinds: Vec<&dyn Drive> = all.into_iter().filter(|k| opts.only.is_none_or(|only| only == k.name())).collect();
    // Kinds that launch no worker (a meeting's fold after a turn) count no slot: they need not
    // wait for another project's pass on the home-wide lock, and one round does what they do.
    let launches = kinds.iter().any(|k| k.launches());
    // The worker slots wave tasks may take are what commissions leave: a pass over a kind that
    // launches workers without the commissions would see none.
    if let Some(only) = opts.only.filter(|&only| only != Name::Commission && launches) {
        return Err(anyhow!("a pass over {only}s alone cannot know the worker slots the commissions leave; drive every kind"));
    }
    let mut pass = Pass {
        opts,
        report: Report::default(),
        seen_problems: BTreeSet::new(),
        waiting: HashMap::new(),
        failed: opts.skip.clone(),
        rounds: 0,
        on_entry: &mut on_entry,
        before_dispatch: opts.before_dispatch.filter(|_| !opts.dry_run),
    };
    let mut shim_exits = ShimExits::default();
    // What a killed pass wrote and never told.
    let notify = if opts.dry_run { None } else { super::notifications::command(home, project) };
    super::notifications::after_round(home, project, &notify);
    loop {
        pass.rounds += 1;
        let global = if opts.dry_run || !launches {
            None
        } else {
            Some(take_lock(&dispatch_lock, true, "").map_err(|e| anyhow!("home lock: {e}"))?)
        };
        wait_for_git(project);
        if !opts.dry_run {
            // What a killed pass left half-applied is finished before anything is observed. An
            // artifact whose update cannot be finished is left alone (its actions, as after a
            // failure), and said; the rest of the project goes on.
            for u in crate::activity::apply::settle(home, project)? {
                if pass.seen_problems.insert(u.problem.to_string()) {
                    pass.report.problems.push(u.problem);
                }
                pass.failed.insert((u.kind, u.id));
            }
        }
        // The worker packages, read once a round for every kind.
        let workers = Catalog::discover(&project.root, &home.workers_dir());
        let ctx = Ctx { home, project, workers: &workers };
        pass.report.next_check = None;
        pass.report.running.clear();
        pass.report.dependency_dirs.clear();
        let mut round = Round { settled: true, ..Round::default() };
        // The worker slots, observed once a round for every kind that launches workers; each
        // kind decided says what it holds, and those decided after it see that.
        // An unreadable commissions dir or home config fails the round as observing the
        // commissions does, in the same words.
        let mut capacity =
            if launches { super::capacity::observe(home, project).context("observing the project")? } else { Capacity::default() };
        // Every kind observed and decided first, in the pass's order; then acted on in theirs.
        let mut decided = Vec::new();
        for kind in &kinds {
            decided.push((kind.act_order(), kind.decide(&mut pass, ctx, &mut capacity, &mut round)?));
        }
        decided.sort_by_key(|(order, _)| *order);
        // Once a pass, before the first new work: bring the base branch in (`follow:`); if
        // that moved the integration branch new work is made from, look again before acting.
        if decided.iter().any(|(_, d)| d.starts_work()) {
            if let Some(hook) = pass.before_dispatch.take() {
                if hook(home, project) {
                    continue;
                }
            }
        }
        for (_, d) in &decided {
            d.act(&mut pass, ctx, &mut round)?;
        }
        drop(decided);
        drop(global);
        super::notifications::after_round(home, project, &notify);
        if opts.dry_run {
            pass.report.settled = round.settled;
            return Ok(pass.report);
        }
        let quiet = !round.progressed;
        let settled = round.settled && !round.waiting;
        if !launches || (quiet && (!opts.wait || settled || settled_but_failed(&round.busy, &pass.failed))) {
            pass.report.settled = settled;
            return Ok(pass.report);
        }
        if !opts.wait && pass.rounds >= MAX_ROUNDS {
            return Err(anyhow!("the pass did not converge after {MAX_ROUNDS} rounds (see the actions above)"));
        }
        if let Some(t) = opts.timeout {
            if started.elapsed() >= t {
                pass.report.timed_out = true;
                return Ok(pass.report);
            }
        }
        if quiet {
            // The poll, or a worker's end if sooner. Not the deciders' timers: with many
            // workers one is nearly always due, and a round per deadline would spend the cores
            // the workers need on observing them.
            shim_exits.wait(&pass.report.running, WAIT_POLL);
        }
    }
}

/// `--wait` between quiet rounds: sleeps until a running worker's shim ends or the poll
/// passes, so a worker's end is finished, and its slot refilled, at once rather than at the
/// next poll. One waiting thread per shim holding its lock, each started once (a shim still
/// starting, or gone already, is left to the timed wait: waiting on it would spin); a thread
/// left waiting when the pass returns ends with its shim.
struct ShimExits {
    tx: std::sync::mpsc::Sender<std::path::PathBuf>,
    rx: std::sync::mpsc::Receiver<std::path::PathBuf>,
    waiting_on: BTreeSet<std::path::PathBuf>,
}

impl Default for ShimExits {
    fn default() -> Self {
        let (tx, rx) = std::sync::mpsc::channel();
        ShimExits { tx, rx, waiting_on: BTreeSet::new() }
    }
}

impl ShimExits {
    fn wait(&mut self, running: &[std::path::PathBuf], at_most: Duration) {
        for dir in running {
            let held = || crate::files::is_locked(&crate::activity::state::StateDir(dir.clone()).shim_lock());
            if !self.waiting_on.contains(dir) && held() {
                self.waiting_on.insert(dir.clone());
                let (tx, gone) = (self.tx.clone(), dir.clone());
                crate::worker::liveness::on_shim_exit(dir.clone(), move || {
                    let _ = tx.send(gone);
                });
            }
        }
        if let Ok(gone) = self.rx.recv_timeout(at_most) {
            self.waiting_on.remove(&gone);
            for gone in self.rx.try_iter() {
                self.waiting_on.remove(&gone);
            }
        }
    }
}

/// What a pass carries from round to round.
struct Pass<'a> {
    opts: &'a Options,
    report: Report,
    seen_problems: BTreeSet<String>,
    /// What each waiting action last said it waits on (said again only when that changes).
    waiting: HashMap<Key, String>,
    /// Actions that failed (and those the caller skips): left alone for the rest of this
    /// invocation, stops and heartbeats excepted.
    failed: BTreeSet<Key>,
    rounds: usize,
    on_entry: &'a mut dyn FnMut(&Entry),
    /// [`Options::before_dispatch`], until it has run.
    before_dispatch: Option<fn(&Home, &Project) -> bool>,
}

/// What one round came to, over every kind.
#[derive(Default)]
struct Round {
    /// Something was done (a heartbeat or a wait is no progress; a failure is, as the failed
    /// action is left out of the next round).
    progressed: bool,
    /// Every kind settled by its decider and nothing still at work.
    settled: bool,
    /// Some action waits on something outside (local changes in the integration checkout, say).
    waiting: bool,
    /// What keeps the kinds from being settled.
    busy: Vec<Key>,
}

/// A kind as the pass drives it: any [`Kind`] whose actions say what `--dry-run` lists.
trait Drive {
    fn name(&self) -> Name;
    fn act_order(&self) -> u8;
    fn launches(&self) -> bool;
    /// Observe and decide (a dry run lists the actions here): what is left to carry out.
    fn decide<'k>(
        &'k self,
        pass: &mut Pass<'_>,
        ctx: Ctx<'_, Catalog>,
        capacity: &mut Capacity,
        round: &mut Round,
    ) -> Result<Box<dyn Decision + 'k>>;
}

/// A kind's decision, waiting for its turn to act.
trait Decision {
    fn act(&self, pass: &mut Pass<'_>, ctx: Ctx<'_, Catalog>, round: &mut Round) -> Result<()>;
    /// Whether an action of it starts new work from the integration branch.
    fn starts_work(&self) -> bool;
}

/// A kind's snapshot and the actions it decided on it that are to be carried out.
struct Decided<'k, K: Kind<Catalog>> {
    kind: &'k K,
    snapshot: K::Snapshot,
    actions: Vec<K::Action>,
}

impl<K: Kind<Catalog> + Sync> Drive for K
where
    K::Action: Listed + Sync,
    K::Snapshot: Sync,
{
    fn name(&self) -> Name {
        K::NAME
    }
    fn act_order(&self) -> u8 {
        K::ACT_ORDER
    }
    fn launches(&self) -> bool {
        K::LAUNCHES
    }
    fn decide<'k>(
        &'k self,
        pass: &mut Pass<'_>,
        ctx: Ctx<'_, Catalog>,
        capacity: &mut Capacity,
        round: &mut Round,
    ) -> Result<Box<dyn Decision + 'k>> {
        Ok(Box::new(pass.decide(self, ctx, capacity, round)?))
    }
}

impl<K: Kind<Catalog> + Sync> Decision for Decided<'_, K>
where
    K::Action: Sync,
    K::Snapshot: Sync,
{
    fn act(&self, pass: &mut Pass<'_>, ctx: Ctx<'_, Catalog>, round: &mut Round) -> Result<()> {
        pass.act(self, ctx, round)
    }
    fn starts_work(&self) -> bool {
        self.actions.iter().any(|a| a.starts_work())
    }
}

/// What a dry run shows of an action besides its description: the whole planned action, for
/// commissions (the `plan` of an entry).
trait Listed {
    fn plan(&self) -> Option<crate::commission::decide::Action> {
        None
    }
}

impl Listed for crate::commission::decide::Action {
    fn plan(&self) -> Option<crate::commission::decide::Action> {
        Some(self.clone())
    }
}
impl Listed for crate::meeting::decide::Action {}
impl Listed for crate::plan::decide::Action {}

impl Pass<'_> {
    fn decide<'k, K: Kind<Catalog>>(
        &mut self,
        kind: &'k K,
        ctx: Ctx<'_, Catalog>,
        capacity: &mut Capacity,
        round: &mut Round,
    ) -> Result<Decided<'k, K>>
    where
        K::Action: Listed,
    {
        let (snapshot, problems) = kind.observe(ctx, capacity)?;
        let decided = kind.decide(&snapshot);
        for p in problems.iter().chain(&decided.problems) {
            if self.seen_problems.insert(p.to_string()) {
                self.report.problems.push(p.clone());
            }
        }
        for n in &decided.notes {
            if self.seen_problems.insert(n.to_string()) {
                self.report.notes.push(n.clone());
            }
        }
        self.report.next_check = self.report.next_check.into_iter().chain(kind.next_check(&snapshot)).min();
        let at_work = kind.at_work(ctx, &snapshot);
        self.report.running.extend(at_work.running);
        self.report.dependency_dirs.extend(at_work.awaited_dirs);
        // A dry run carries nothing out: it is settled only if nothing is listed.
        round.settled &= decided.settled && (!self.opts.dry_run || !decided.actions.iter().any(|a| a.listed()));
        round.busy.extend(decided.busy.iter().map(|id| (K::NAME, id.clone())));
        // A stop is never left out: a failing update (what a worker wrote, say) must not keep
        // an attempt from being stopped. Nor is a heartbeat: a plan's failed action backs off
        // the whole plan, and its other tasks' signs of life must still be remembered, or a
        // live task would be judged stale and stopped.
        let failed = &self.failed;
        let left_out = |id: &str| failed.contains(&(K::NAME, id.to_string()));
        // What it holds once its actions are carried out: its workers running, and those it
        // starts now (a start left out takes nothing).
        let starts = decided.starting.iter().filter(|id| !left_out(id)).count();
        capacity.hold(K::NAME, decided.holding + starts);
        capacity.start_packages(K::NAME, decided.package_starts.iter().filter(|(id, _)| !left_out(id)).map(|(_, p)| p.as_str()));
        let actions: Vec<K::Action> =
            decided.actions.into_iter().filter(|a| a.is_stop() || a.is_heartbeat() || !left_out(a.id())).collect();
        if self.opts.dry_run {
            for a in actions.iter().filter(|a| a.listed()) {
                let e = self.entry(K::NAME, a, true, None, a.plan(), None);
                self.emit(e);
            }
        }
        Ok(Decided { kind, snapshot, actions })
    }

    fn act<K: Kind<Catalog> + Sync>(&mut self, d: &Decided<'_, K>, ctx: Ctx<'_, Catalog>, round: &mut Round) -> Result<()>
    where
        K::Snapshot: Sync,
        K::Action: Sync,
    {
        // A dry run listed its actions when it decided them.
        let actions = if self.opts.dry_run { &[][..] } else { &d.actions[..] };
        let mut rest = actions;
        while !rest.is_empty() {
            // Concurrent actions next to each other run at once, then are reported in the
            // decided order, as if one after the other. New work waits for the effects decided
            // before it: a slot a finish frees is taken once the finish is done.
            let starts = rest[0].starts_work();
            let together = rest.iter().take_while(|a| a.concurrent() && a.starts_work() == starts).count().max(1);
            let (batch, after) = rest.split_at(together);
            rest = after;
            let act = |a: &K::Action| timed(|| d.kind.act(ctx, &d.snapshot, a));
            let panicked = || (Err(anyhow!("the action panicked")), Duration::ZERO);
            let carried_out = crate::activity::each_at_once(batch, crate::activity::at_once(), panicked, act);
            for (a, (result, took)) in batch.iter().zip(carried_out) {
                self.report_action(K::NAME, a, result, took, round);
            }
        }
        let busy = d.kind.busy_after(ctx)?;
        round.settled &= busy.is_empty();
        round.busy.extend(busy.into_iter().map(|id| (K::NAME, id)));
        Ok(())
    }

    /// One action's outcome: into the failures, the round and the report.
    fn report_action<A: crate::activity::kind::Action>(
        &mut self,
        kind: Name,
        a: &A,
        result: Result<Outcome>,
        took: Duration,
        round: &mut Round,
    ) {
        let (ok, error) = match &result {
            Ok(Outcome::Done) | Ok(Outcome::Dropped) => (true, None),
            Ok(Outcome::Waiting(why)) => (true, Some(why.clone())),
            Err(e) => (false, Some(format!("{e:#}"))),
        };
        let key = (kind, a.id().to_string());
        if !ok {
            self.failed.insert(key.clone());
        }
        let waiting = matches!(result, Ok(Outcome::Waiting(_)));
        round.waiting |= waiting;
        // A failed stop is no progress either: it is never left out, so failing again next
        // round would keep a pass going (40 rounds, then "did not converge") for nothing.
        round.progressed |= !a.is_heartbeat() && !waiting && (ok || !a.is_stop());
        if !a.reported(ok) {
            return;
        }
        // A wait that goes on (a merge waiting on local changes, say) is said once, and again
        // only when what it waits on changes: `--wait` polls several times a second.
        if let Ok(Outcome::Waiting(why)) = &result {
            if self.waiting.get(&key) == Some(why) {
                return;
            }
            self.waiting.insert(key, why.clone());
        } else {
            self.waiting.remove(&key);
        }
        let e = self.entry(kind, a, ok, error, None, Some(took.as_millis() as u64));
        self.emit(e);
    }

    fn entry<A: crate::activity::kind::Action>(
        &self,
        kind: Name,
        a: &A,
        ok: bool,
        error: Option<String>,
        plan: Option<crate::commission::decide::Action>,
        ms: Option<u64>,
    ) -> Entry {
        Entry { pass: self.rounds, kind, id: a.id().into(), action: a.verb(), detail: a.describe(), ok, error, plan, ms }
    }

    fn emit(&mut self, e: Entry) {
        (self.on_entry)(&e);
        self.report.entries.push(e);
    }
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

/// `--wait` with nothing left but what failed: waiting on would be waiting forever.
fn settled_but_failed(busy: &[Key], failed: &BTreeSet<Key>) -> bool {
    !failed.is_empty() && busy.iter().all(|k| failed.contains(k))
}
