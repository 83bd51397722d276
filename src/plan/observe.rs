//! Observe a project's plans: their artifacts and records, each task's exit, task updates,
//! worker at work (signs of life) and worktree (as made for it, as `git worktree list` has
//! it), the latest verify run and fix-forward commission, into the decider's [`Snapshot`].
//! A task's or verify's processes are judged as a commission's ([`liveness::attempt`]): a
//! run record that cannot be trusted is a problem naming its file; the record this home takes
//! when its own is lost or older than the artifact ([`known`]); a plan that ended on the
//! integration branch while the checkout says it is to run ([`integrated`]). Read-only.

use anyhow::Result;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::decide::{Observed, ObservedTask, PlanAttempt, PlanRecord, Snapshot, TaskState};
use crate::activity::integrated::Integrated;
use crate::activity::kind::Name;
use crate::activity::observed::{observe_not_at_rest, AtRest, Store};
use crate::activity::state::StateDir;
use crate::activity::worktree::WorktreeRecord;
use crate::artifact::plan::{Plan, PlanStatus};
use crate::artifact::Problem;
use crate::config::{Home, Project};
use crate::files::read_json;
use crate::worker::attempt::Taken;
use crate::worker::liveness::{self, Proc};
use crate::worker::observed_attempt;
use crate::worker::Catalog;

/// `slots`: workers the caps allow besides the project's commissions (see [`super::Plans`]).
pub(crate) fn observe(home: &Home, project: &Project, workers: &Catalog, now: &str, slots: usize) -> Result<(Snapshot, Vec<Problem>)> {
    observe_cached(home, project, workers, now, slots, None)
}

/// [`observe`], leaving out the plans `store` (a watch's) holds at rest, and remembering there
/// those found at rest now ([`at_rest`]).
pub(crate) fn observe_cached(
    home: &Home,
    project: &Project,
    workers: &Catalog,
    now: &str,
    slots: usize,
    store: Option<&Store<AtRest>>,
) -> Result<(Snapshot, Vec<Problem>)> {
    let mut git = Worktrees::default();
    let at = chrono::DateTime::parse_from_rfc3339(now).map(|t| t.to_utc()).unwrap_or_else(|_| chrono::Utc::now());
    let cfg = &project.config;
    let snapshot = |plans| Snapshot {
        plans,
        now: now.to_string(),
        at,
        stale_after: cfg.stale_after,
        timeout: cfg.timeout,
        slots,
        running_by_package: Default::default(),
        reviewers: cfg.reviewers.clone(),
    };
    let resting = |s: &Snapshot| {
        let ids = at_rest(s);
        s.plans.iter().filter(|o| ids.contains(&o.plan.id)).map(|o| o.plan.path.clone()).collect()
    };
    observe_not_at_rest(
        store,
        Name::Plan,
        &project.plans_dir(),
        |path| judged_from(home, project, path),
        |path| observe_one(home, project, workers, path, &mut git),
        snapshot,
        resting,
    )
}

/// The files a plan at rest is judged from: its artifact, its record and its timeline (what a
/// person, another process or a pass that acts on it writes). Its tasks' and verify's runtime
/// files are not among them: at rest nothing of it runs, so nothing writes them but a pass
/// acting on the plan, which writes its record too.
fn judged_from(home: &Home, project: &Project, path: &Path) -> Vec<PathBuf> {
    let mut files = vec![path.to_path_buf(), crate::activity::timeline::path_for(path)];
    // An id that is not one never reaches the store: its artifact is a problem.
    if let Some(id) = path.file_stem().and_then(|s| s.to_str()).filter(|id| crate::artifact::ids::validate_id(id).is_ok()) {
        files.push(StateDir(home.plan_state(&project.name, id)).record());
    }
    files
}

/// The plans of `s` at rest: ended (completed, failed or cancelled) as the artifact and this
/// home's own record both say, no request pending, nothing of it running or lingering (tasks,
/// verify, reviewers), no reviewer's checkout left, nothing new to log; and the decider, given
/// them alone, does nothing for them (a landed task's worktree still there is removed, so such
/// a plan is not at rest; a failed task's is kept for a retry, which is an edit of the plan).
/// Until one of the files it was judged from changes ([`judged_from`]), a pass would do nothing
/// for such a plan: a watch leaves it out.
pub(crate) fn at_rest(s: &Snapshot) -> BTreeSet<String> {
    let quiet = |o: &&Observed| {
        let Some(r) = o.record.as_ref().filter(|r| matches!(r.status, PlanStatus::Completed | PlanStatus::Failed | PlanStatus::Cancelled))
        else {
            return false;
        };
        o.plan.status == Some(r.status)
            && o.plan.desired.is_none()
            && !o.taken
            && o.integrated.is_none()
            && r.tasks.values().all(|t| t.state != TaskState::Running)
            && o.tasks.iter().all(|t| {
                !t.attempt.busy
                    && t.attempt.live().is_none()
                    && t.attempt.lingering().is_none()
                    && t.usage.is_none()
                    && t.setup_made.is_none()
                    && t.mail.folded.is_none()
            })
            && !o.verify.busy
            && o.verify.live().is_none()
            && o.verify.lingering().is_none()
            && o.reviews.iter().all(|r| matches!(r.proc, Proc::NotStarted | Proc::Dead) && !r.worktree_exists)
    };
    let candidates: Vec<Observed> = s.plans.iter().filter(quiet).cloned().collect();
    if candidates.is_empty() {
        return BTreeSet::new();
    }
    let alone = Snapshot {
        plans: candidates,
        now: s.now.clone(),
        at: s.at,
        stale_after: s.stale_after,
        timeout: s.timeout,
        slots: s.slots,
        running_by_package: s.running_by_package.clone(),
        reviewers: s.reviewers.clone(),
    };
    let actions = super::decide::decide(&alone);
    let acted: BTreeSet<&str> = actions.iter().map(crate::activity::kind::Action::id).collect();
    alone.plans.iter().map(|o| o.plan.id.as_str()).filter(|id| !acted.contains(id)).map(str::to_string).collect()
}

/// One plan as it is now (`plan show`): its tasks' worktrees and processes looked at.
pub(crate) fn observe_plan(home: &Home, project: &Project, workers: &Catalog, id: &str) -> Result<Observed> {
    crate::artifact::ids::validate_id(id)?;
    let path = project.plan_path(id);
    observe_one(home, project, workers, &path, &mut Worktrees::default())
        .map_err(|p| anyhow::anyhow!("{}", p.iter().map(|p| p.to_string()).collect::<Vec<_>>().join("\n")))
}

/// The worktrees git knows of (`git worktree list`), read once per observation and only if
/// some task has one.
#[derive(Default)]
struct Worktrees(Option<BTreeSet<PathBuf>>);

impl Worktrees {
    fn registered(&mut self, project: &Project, path: &Path) -> bool {
        let known = self.0.get_or_insert_with(|| {
            let Ok(repo) = crate::activity::git::open(&project.root) else { return BTreeSet::new() };
            let Ok(names) = repo.worktrees() else { return BTreeSet::new() };
            names.iter().filter_map(|n| repo.find_worktree(n.ok()??).ok()).map(|w| crate::activity::worktree::place(w.path())).collect()
        });
        known.contains(&crate::activity::worktree::place(path))
    }
}

/// Whether a worktree record (from a state file) describes the worktree guild-hall makes at
/// `expected` (computed from the id): the same place, the repository's own admin dir for it.
/// Nothing is reset, cleaned or removed by a record that is not.
pub(super) fn made_for(project: &Project, rec: &WorktreeRecord, expected: &Path) -> bool {
    WorktreeRecord::expected(&project.root, expected, &rec.branch, rec.sparse)
        .is_ok_and(|want| crate::activity::worktree::differences(rec, &want).is_empty())
}

/// Read one plan artifact as it is now.
pub fn load(project: &Project, id: &str) -> Result<Plan> {
    Ok(crate::artifact::load(&project.plan_path(id), id, &crate::artifact::Wording::PLAN, Plan::parse)?)
}

pub(crate) fn record(home: &Home, project: &Project, id: &str) -> Result<Option<PlanRecord>> {
    read_json(&StateDir(home.plan_state(&project.name, id)).record())
}

/// The record this home works from for the plan, from its own (`own`) and what is known
/// (`keys`: its timeline's keys), and whether it is taken rather than its own (written by the
/// first pass):
/// - none of its own, while the artifact says the plan is at work and this home holds its
///   runtime (its state dir, a task's worktree): the plan is this home's, its record lost
///   (removed, as the message for a corrupt one says to). Taken: the record the artifact
///   describes, with the current wave's base found again from a task's worktree, so the tasks
///   are resumed or failed here;
/// - its own, while the artifact names work this home never ran (a task attempt past the
///   record's, or a task integrated that the record does not have whose trailer is on the
///   integration branch) with another status: the plan went on in another home. Over there
///   (completed, halted, failed, cancelled): taken, the artifact's record; at work there
///   (running, verifying, attempts past the record's): none, the plan is another home's
///   ([`super::decide::elsewhere`]). The artifact is never rewritten back to this home's record.
pub(crate) fn known(
    home: &Home,
    project: &Project,
    plan: &Plan,
    own: Option<PlanRecord>,
    keys: &BTreeSet<String>,
) -> (Option<PlanRecord>, bool) {
    let Some(r) = own else {
        let at_work = super::decide::elsewhere(plan, None).is_some();
        let here = || !crate::activity::ids::runtime(home, project, crate::activity::kind::Name::Plan, &plan.id).is_empty();
        let Some(mut r) = at_work.then(here).filter(|h| *h).and_then(|_| PlanRecord::as_written(plan, keys)) else { return (None, false) };
        if let Some(base) = plan.waves.get(r.wave.wrapping_sub(1)).into_iter().flatten().find_map(|t| base_from(home, project, &plan.id, t))
        {
            r.bases.insert(r.wave, base);
        }
        return (Some(r), true);
    };
    if plan.status.is_none_or(|s| s == r.status) {
        return (Some(r), false);
    }
    // Attempts as the timeline names them (not as a record taken from it counts them): a
    // task's moves (`task:<task>:<attempt>:<state>`, the attempt it had when it moved) and its
    // workers' updates (`update:<task>:<attempt>:…`).
    let logged = |c: &str| {
        let (moved, updated) = (format!("task:{c}:"), format!("update:{c}:"));
        keys.iter()
            .filter_map(|k| k.strip_prefix(&moved).or_else(|| k.strip_prefix(&updated))?.split(':').next()?.parse::<u32>().ok())
            .max()
            .unwrap_or(0)
    };
    let past = plan.tasks().any(|t| logged(&t.canonical) > r.tasks.get(&t.canonical).map_or(0, |o| o.attempt));
    if past && super::decide::elsewhere(plan, None).is_some() {
        return (None, false);
    }
    let Some(theirs) = PlanRecord::adopt(plan, keys) else { return (Some(r), false) };
    let integrated: Vec<&String> = theirs
        .tasks
        .iter()
        .filter(|(c, t)| t.state == TaskState::Integrated && r.tasks.get(*c).is_none_or(|o| o.state != TaskState::Integrated))
        .map(|(c, _)| c)
        .collect();
    let landed = || -> Option<bool> {
        let repo = crate::activity::git::open(&project.root).ok()?;
        let tip = repo.find_branch(&project.config.integration_branch, git2::BranchType::Local).ok()?.get().peel_to_commit().ok()?.id();
        let found = landed_tasks(&repo, tip, &plan.id)?;
        Some(integrated.iter().any(|c| found.contains(&crate::activity::names::task_trailer(c))))
    };
    if past || (!integrated.is_empty() && landed() == Some(true)) {
        return (Some(theirs), true);
    }
    (Some(r), false)
}

/// The `Guild-Hall-Task` trailers of plan `plan` on the integration branch (`None`: it cannot
/// be read, or there is no such branch).
fn landed_tasks(repo: &git2::Repository, tip: git2::Oid, plan: &str) -> Option<std::collections::HashSet<String>> {
    let prefix = format!("{}{}:", crate::activity::names::TRAILERS[2], plan);
    Some(crate::activity::trailers::on_chains(repo, &[tip], &[], &prefix).ok()?.into_iter().map(|(_, l)| l).collect())
}

/// Whether the integration branch's copy of `plan` says it ended there while the checkout's
/// file says it is still to run (`pending`, or no status) and this home holds no record of it
/// (`record`: the one it works from, [`known`]): a CI run or a teammate's home ran it, and
/// `guild-hall land` has not brought the statuses in. The same plan: the same `created:`, or
/// with none the same waves and text after the frontmatter. A completed one counts only with
/// the trailer of each task it says is integrated on the integration branch. Looked for only
/// in that case: a plan settled in the checkout costs no git work.
pub fn integrated(project: &Project, plan: &Plan, record: Option<&PlanRecord>) -> Option<Integrated> {
    use crate::artifact::plan::PlanStatus;
    if record.is_some() || !matches!(plan.status, None | Some(PlanStatus::Pending)) {
        return None;
    }
    let repo = crate::activity::git::open(&project.root).ok()?;
    // The local integration branch first, then a remote's copy (a clone not caught up yet).
    crate::activity::integrated::tips(project, &repo).into_iter().find_map(|(on, tip)| {
        let tree = repo.find_commit(tip).ok()?.tree().ok()?;
        let text = crate::activity::integrated::copy(project, &plan.path, &repo, &tree)?;
        let theirs = Plan::parse(&plan.path, &text).ok()?;
        let status = theirs
            .status
            .filter(|s| matches!(s, PlanStatus::Completed | PlanStatus::Halted | PlanStatus::Failed | PlanStatus::Cancelled))?;
        let same = match plan.owned.created.as_deref() {
            Some(created) => theirs.owned.created.as_deref() == Some(created),
            None => {
                let ours = crate::artifact::read_regular(&plan.path).ok()?;
                let body = |t: &str| crate::artifact::frontmatter::split(t).ok().map(|s| s.body.to_string());
                theirs.waves == plan.waves && body(&ours).is_some_and(|b| Some(b) == body(&text))
            }
        };
        if !same {
            return None;
        }
        if status == PlanStatus::Completed {
            let integrated: Vec<&str> =
                theirs.tasks().filter(|t| theirs.task_state(&t.canonical) == Some("integrated")).map(|t| t.canonical.as_str()).collect();
            let found = landed_tasks(&repo, tip, &plan.id)?;
            if integrated.is_empty() || !integrated.iter().all(|c| found.contains(&crate::activity::names::task_trailer(c))) {
                return None;
            }
        }
        Some(Integrated {
            kind: crate::activity::kind::Name::Plan,
            id: plan.id.clone(),
            here: plan.status.unwrap_or(PlanStatus::Pending).as_str(),
            status: status.as_str(),
            attempt: None,
            integration: on,
        })
    })
}

/// The base a task's worktree was made from: where its HEAD meets the integration branch (a
/// worker's own commit is found out by the copy-back's protocol check, never taken as a base).
fn base_from(home: &Home, project: &Project, plan: &str, t: &crate::artifact::plan::Task) -> Option<String> {
    let rec: WorktreeRecord = read_json(&StateDir(home.task_state(&project.name, plan, &t.slug())).worktree()).ok()??;
    if !made_for(project, &rec, &home.task_worktree(&project.name, &t.slug())) {
        return None;
    }
    let head = git2::Oid::from_str(std::fs::read_to_string(rec.admin.join("HEAD")).ok()?.trim()).ok()?;
    let repo = crate::activity::git::open(&project.root).ok()?;
    let tip = repo.find_branch(&project.config.integration_branch, git2::BranchType::Local).ok()?.get().peel_to_commit().ok()?.id();
    repo.merge_base(head, tip).ok().map(|b| b.to_string())
}

fn observe_one(home: &Home, project: &Project, workers: &Catalog, path: &Path, git: &mut Worktrees) -> Result<Observed, Vec<Problem>> {
    let problem = |msg: String| vec![Problem::new(path, 1, 1, msg)];
    let text = crate::artifact::read_regular(path).map_err(|e| problem(crate::artifact::Wording::PLAN.problem(&e)))?;
    let plan = Plan::parse(path, &text)?;
    let state = StateDir(home.plan_state(&project.name, &plan.id));
    let record: Option<PlanRecord> = read_json(&state.record()).map_err(|e| {
        problem(format!("its runtime record is corrupt ({e:#}); nothing is done for this plan until it is repaired or removed"))
    })?;
    let timeline = crate::activity::timeline::read(&crate::activity::timeline::path_for(path)).map_err(|e| problem(format!("{e:#}")))?;
    let timeline_keys = timeline.iter().filter_map(|e| e["key"].as_str().map(str::to_string)).collect();
    let usage_recorded = crate::worker::usage::summed(&timeline, |_| true);
    let (record, taken) = known(home, project, &plan, record, &timeline_keys);
    let integrated = integrated(project, &plan, record.as_ref());
    let boot = crate::worker::shim::boot_id();
    let mut tasks = Vec::new();
    for t in plan.tasks() {
        let ts = StateDir(home.task_state(&project.name, &plan.id, &t.slug()));
        let rec = record.as_ref().and_then(|r| r.tasks.get(&t.canonical));
        let attempt = rec.map(|r| r.attempt).unwrap_or(0);
        let seen = observe_attempt(&ts, attempt, &boot).map_err(|why| problem(format!("task {}: {why}", t.canonical)))?;
        let pkg = workers.for_commission(&t.worker);
        let worktree = read_json::<WorktreeRecord>(&ts.worktree()).map_err(|e| problem(format!("task {}: {e:#}", t.canonical)))?;
        let worktree_exists = worktree.as_ref().is_some_and(|w| std::fs::symlink_metadata(&w.path).is_ok());
        let expected = home.task_worktree(&project.name, &t.slug());
        let worktree_gone = worktree.as_ref().and_then(|w| gone(project, git, w, &expected));
        let mail = read_mail(home, project, record.as_ref(), &ts, t, attempt, &seen);
        // What the attempt used, once it ended and until its `usage` event is logged.
        let over = attempt > 0 && seen.exit().is_some_and(|x| x.attempt == attempt);
        let usage = over
            .then(|| (super::decide::task_usage_key(&t.canonical, attempt), mail.folded.as_ref().filter(|f| f.attempt == attempt)))
            .filter(|(key, _)| !timeline_keys.contains(key))
            .and_then(|(_, folded)| {
                crate::worker::usage::observe(home, &ts, attempt, true, folded.and_then(|f| f.reported.as_ref()), &t.worker)
            });
        let landed = worktree_gone.is_some()
            && rec.is_some_and(|r| matches!(r.state, TaskState::Succeeded | TaskState::Running))
            && record.as_ref().and_then(|r| r.bases.get(&t.wave)).is_some_and(|base| landed(project, base, &t.canonical));
        let setup_made = (attempt > 0 && !timeline_keys.contains(&crate::worker::workspace::setup_key(&t.canonical, attempt)))
            .then(|| crate::worker::workspace::setup_made(&ts, attempt))
            .flatten();
        tasks.push(ObservedTask {
            task: t.clone(),
            setup_made,
            attempt: seen,
            limited: over.then(|| crate::worker::limits::observed(&ts, attempt)).flatten(),
            overspent: over.then(|| crate::worker::budget::recorded(&ts, attempt)).flatten(),
            usage,
            mail,
            package_timeout: pkg.as_ref().ok().and_then(|p| p.manifest.timeout),
            package_cap: pkg.as_ref().ok().and_then(|p| Some((p.manifest.name.clone(), p.manifest.max_concurrent?.get()))),
            // Not installed: said with where packages are looked for and how to install it.
            worker_problem: workers.cannot_start(&t.worker),
            worktree_exists,
            worktree_gone,
            landed,
        });
    }
    let vs = StateDir(home.verify_state(&project.name, &plan.id));
    let verify_runs = record.as_ref().map(|r| r.verify_runs).unwrap_or(0);
    let verify = observe_attempt(&vs, verify_runs, &boot).map_err(|why| problem(format!("verify: {why}")))?;
    let fix_status = record.as_ref().filter(|r| r.fixes > 0).and_then(|r| {
        let id = super::decide::fix_id(&plan.id, r.wave, r.fixes);
        crate::artifact::load(&project.commission_path(&id), &id, &crate::artifact::Wording::COMMISSION, crate::artifact::Commission::parse)
            .ok()?
            .status
    });
    // A cancelled plan's too: what of them still runs is stopped, their checkouts removed.
    let reviewing = |r: &&PlanRecord| matches!(r.status, PlanStatus::Verifying | PlanStatus::Cancelled);
    let reviews = match record.as_ref().filter(reviewing) {
        Some(r) => crate::worker::reviewer::observe_runs(
            home,
            |index| review_state(home, project, &plan.id, r.verify_runs, index),
            |rs, index| review_worktree(rs, &plan.id, r.verify_runs, index),
            &boot,
        ),
        None => Vec::new(),
    };
    // Each reviewer's package `timeout:` (by its place in the plan's or the project's list).
    let names = plan.reviewers.clone().or_else(|| project.config.reviewers.clone()).unwrap_or_default();
    let reviewer_timeouts = names.iter().map(|n| workers.for_commission(n).ok().and_then(|p| p.manifest.timeout)).collect();
    let reviewer_caps = names.iter().map(|n| workers.for_commission(n).ok().and_then(|p| p.manifest.max_concurrent())).collect();
    Ok(Observed {
        plan,
        record,
        taken,
        integrated,
        tasks,
        verify,
        fix_status,
        timeline_keys,
        usage_recorded,
        reviews,
        reviewer_timeouts,
        reviewer_caps,
    })
}

/// What is new in the mailbox of the task's current attempt, read while its plan is at work on
/// its wave (a plan at rest, or a task of another wave, has nothing new to fold). Its paths
/// are checked against the worktree made for the task (from its id). A mailbox that cannot be
/// read is the task's note, never the plan's problem.
#[allow(clippy::too_many_arguments)]
fn read_mail(
    home: &Home,
    project: &Project,
    record: Option<&PlanRecord>,
    ts: &StateDir,
    t: &crate::artifact::plan::Task,
    attempt: u32,
    seen: &PlanAttempt,
) -> super::mail::TaskMail {
    use crate::artifact::plan::PlanStatus;
    let at_work =
        record.is_some_and(|r| r.wave == t.wave && matches!(r.status, PlanStatus::Running | PlanStatus::Verifying | PlanStatus::Halted));
    if attempt == 0 || !at_work {
        return Default::default();
    }
    // No one writes any more: its worker ended (or died) and no shim of it is at work.
    let last = (seen.died() || seen.exit().is_some_and(|x| x.attempt == attempt)) && !seen.busy;
    let worktree = home.task_worktree(&project.name, &t.slug());
    super::mail::read(ts, &t.canonical, attempt, &worktree, last)
}

/// Why a task's recorded worktree is gone, if it is: not the one made for the task (its path
/// is computed from the id), not a worktree of the repository (`git worktree list`), or no
/// checkout there any more.
fn gone(project: &Project, git: &mut Worktrees, w: &WorktreeRecord, expected: &Path) -> Option<String> {
    let at = w.path.display();
    if !made_for(project, w, expected) {
        return Some(format!("its record names {at}, not the worktree made for it ({})", expected.display()));
    }
    if !std::fs::symlink_metadata(&w.path).is_ok_and(|m| m.is_dir()) {
        return Some(format!("its worktree {at} was removed"));
    }
    if !git.registered(project, &w.path) {
        return Some(format!("{at} is no longer a worktree of the repository (not in `git worktree list`)"));
    }
    if !std::fs::symlink_metadata(w.path.join(".git")).is_ok_and(|m| m.is_file()) {
        return Some(format!("its worktree {at} has no checkout left (its .git is gone)"));
    }
    None
}

/// Whether the task's commit is on the integration branch since its wave's base.
fn landed(project: &Project, base: &str, canonical: &str) -> bool {
    let Ok(repo) = crate::activity::git::open(&project.root) else { return false };
    let Ok(base) = git2::Oid::from_str(base) else { return false };
    let trailer = crate::activity::names::task_trailer(canonical);
    matches!(crate::activity::merge::find_trailer(&repo, &project.config.integration_branch, base, &trailer), Ok(Some(_)))
}

/// Attempt `attempt` of the runtime dir `state` as every kind's is observed
/// ([`observed_attempt::observe`]), with what a shim holds there whatever the attempt: what it
/// has taken ([`taken`]) and whether it is at work ([`liveness::busy`]). The lock is looked at
/// after the attempt is located: an attempt located dead whose lock is held is not taken for
/// dead ([`PlanAttempt::died`]).
fn observe_attempt(state: &StateDir, attempt: u32, boot: &str) -> Result<PlanAttempt, String> {
    let observed = observed_attempt::observe(state, attempt, boot).map_err(|e| e.to_string())?;
    let taken = taken(state).map_err(|e| e.iter().map(|x| x.message.clone()).collect::<Vec<_>>().join("; "))?;
    Ok(PlanAttempt { observed, taken, busy: liveness::busy(state, boot) })
}

/// The attempt a shim has taken in `state` (its `run.json`, or `exit.json` when it could not
/// start; a runner's handle), or [`Taken::Locked`] while a shim holds the lock before
/// recording it.
fn taken(state: &StateDir) -> Result<Option<Taken>, Vec<Problem>> {
    let p = |e: anyhow::Error| vec![Problem::new(&state.0, 1, 1, format!("{e:#}"))];
    if crate::worker::shim::shim_lock_held(state) {
        return Ok(Some(Taken::Locked));
    }
    let run = state.read_run().map_err(p)?.map(|r| r.attempt);
    // A job submitted for a later attempt has taken it, queued or not.
    let job = crate::worker::runner::taken(state).map_err(p)?;
    Ok(run.max(job).map(Taken::Attempt))
}

/// The state dir of reviewer `index`'s run over plan `id`'s integrated result in `round` (the
/// verify run it follows).
pub(crate) fn review_state(home: &Home, project: &Project, id: &str, round: u32, index: usize) -> StateDir {
    StateDir(home.plan_state(&project.name, id).join(format!("review-{round}-{index}")))
}

/// Its checkout, in its state dir, named uniquely among the repository's worktrees.
pub(crate) fn review_worktree(rs: &StateDir, id: &str, round: u32, index: usize) -> std::path::PathBuf {
    rs.0.join(format!("review-plan-{id}-{round}-{index}"))
}
