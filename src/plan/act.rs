//! Carry out one plan [`Action`]: a wave's base recorded, a task's worktree made or reused and
//! its worker started (confined, contained, `GUILD_HALL_WAVE=1`, hooks off), a task stopped,
//! a wave integrated (protocol checks, collision scan, copy-back in plan order; what each
//! finding means for the plan is decided in `decide`), verify run,
//! a fix-forward commission written, what a killed shim left running killed. A process is
//! signalled only when proven the attempt's. Every step is safe to repeat.

use anyhow::{Context, Result};
use serde_json::json;

use super::copyback::{self, Change, Landed};
use super::decide::{fix_id, Action, Finding, Integration, PlanRecord, TaskStart, Update};
use crate::activity::kind::Ctx;
use crate::activity::names::{self, ActivityKind};
use crate::activity::state::StateDir;
use crate::activity::timeline;
use crate::activity::worktree::{self, WorktreeRecord};
use crate::activity::{fault, Outcome};
use crate::artifact::plan::{Plan, Task};
use crate::config::{Home, Project};
use crate::files::{read_json, write_json};
use crate::worker::launch::{self, Activation, Launch, Prepared};
use crate::worker::shim;
use crate::worker::toolbox::mailbox;
use crate::worker::Catalog;

/// A plan's verify run's state dir.
fn verify_state(ctx: &Ctx<'_, Catalog>, plan: &str) -> StateDir {
    StateDir(ctx.home.verify_state(&ctx.project.name, plan))
}

/// A task's state dir.
fn task_state(ctx: &Ctx<'_, Catalog>, plan: &str, task: &Task) -> StateDir {
    StateDir(ctx.home.task_state(&ctx.project.name, plan, &task.slug()))
}

pub(crate) fn act(ctx: &Ctx<'_, Catalog>, action: &Action) -> Result<Outcome> {
    match action {
        Action::Update { update } => apply(ctx, update),
        Action::StartWave { update, wave } => start_wave(ctx, update, *wave),
        Action::StartTask { update, starts } => start_tasks(ctx, update, starts),
        Action::StopTask { update, task, attempt, kill } => {
            let plan = super::observe::load(ctx.project, &update.id)?;
            let t = plan.task(task).context("the task vanished from the plan")?;
            stop_then_apply(ctx, &task_state(ctx, &plan.id, t), *attempt, *kill, update)
        }
        Action::Integrate { update, wave } => integrate(ctx, update, *wave),
        Action::StartVerify { update, wave, run } => start_verify(ctx, update, *wave, *run),
        Action::StopVerify { update, run, kill } => {
            let state = verify_state(ctx, &update.id);
            stop_then_apply(ctx, &state, *run, *kill, update)
        }
        Action::KillLeftovers { update, run, pids, .. } => {
            // The kill first: it never waits on the log being written.
            let killed = shim::kill_leftovers(run, pids);
            let updated = if update.events.is_empty() { Ok(Outcome::Done) } else { apply(ctx, update) };
            killed?;
            updated
        }
        Action::Beat { update, task, beat } => {
            let state = match task {
                Some(task) => {
                    let plan = super::observe::load(ctx.project, &update.id)?;
                    task_state(ctx, &plan.id, plan.task(task).context("the task vanished from the plan")?)
                }
                None => verify_state(ctx, &update.id),
            };
            write_json(&state.heartbeat(), beat)?;
            Ok(Outcome::Done)
        }
        Action::CleanupTask { update, tasks } => {
            let plan = super::observe::load(ctx.project, &update.id)?;
            for task in tasks {
                let t = plan.task(task).context("the task vanished from the plan")?;
                let state = task_state(ctx, &plan.id, t);
                if let Some(rec) = task_record(ctx, &plan.id, t)? {
                    crate::worker::workspace::remove_worktree(&state, &rec)?;
                }
                let _ = std::fs::remove_dir_all(state.objects());
                let _ = std::fs::remove_dir_all(state.0.join("snapshot"));
            }
            apply(ctx, update)
        }
        Action::FixForward { update, wave, round, fixer, run } => {
            write_fix(ctx, &update.id, *wave, *round, fixer, *run)?;
            fault("fix-forward", 1);
            apply(ctx, update)
        }
        Action::StartReviewer { update, round, index, reviewer, base } => start_reviewer(ctx, update, (*round, *index), reviewer, base),
        Action::ReviewerCleanup { update, round, index } => {
            let rs = super::observe::review_state(ctx.home, ctx.project, &update.id, *round, *index);
            let wt = super::observe::review_worktree(&rs, &update.id, *round, *index);
            crate::worker::reviewer::remove(ctx, &rs, &wt, ctx.integration())?;
            apply(ctx, update)
        }
        Action::DropReviewers { update, round, runs } => {
            // The stops first, and whatever becomes of the update, as a task's.
            let mut stopped = Ok(Outcome::Done);
            for (index, run, pids) in runs {
                let rs = super::observe::review_state(ctx.home, ctx.project, &update.id, *round, *index);
                let wt = super::observe::review_worktree(&rs, &update.id, *round, *index);
                let dropped = crate::worker::reviewer::stop(&rs, run.as_ref(), pids)
                    .and_then(|()| crate::worker::reviewer::remove(ctx, &rs, &wt, ctx.integration()));
                stopped = stopped.and(dropped);
            }
            let updated = apply(ctx, update);
            stopped?;
            updated
        }
        Action::ReviewFix { update, wave, round, fixer, text } => {
            let body = format!(
                "The reviewers of plan {} asked for changes to its integrated result after wave {wave}. Make them with new changes on top of what is there (fix forward: never revert the plan's work).\n\n{text}",
                update.id
            );
            write_fix_commission(ctx, &update.id, *wave, *round, fixer, &format!("Fix-forward: plan {}, its reviewers", update.id), body)?;
            fault("fix-forward", 1);
            apply(ctx, update)
        }
    }
}

/// The REVIEW stage: `update` first, then reviewer `index` over the plan's integrated result —
/// from where its first wave began to the integration tip — read-only, once (a run already
/// recorded is not started again).
fn start_reviewer(ctx: &Ctx<'_, Catalog>, update: &Update, (round, index): (u32, usize), reviewer: &str, began: &str) -> Result<Outcome> {
    let plan = super::observe::load(ctx.project, &update.id)?;
    let rs = super::observe::review_state(ctx.home, ctx.project, &plan.id, round, index);
    let started = rs.run().exists() || rs.exit().exists();
    let outcome = apply(ctx, update)?;
    if outcome != Outcome::Done || started {
        return Ok(outcome);
    }
    let repo = crate::activity::git::open(&ctx.project.root)?;
    let base = git2::Oid::from_str(began).with_context(|| format!("the plan's first wave has no base commit ({began:?})"))?;
    let diff = crate::activity::diff::since(&repo, &plan.id, ctx.integration(), base, crate::activity::diff::Detail::Patch)?;
    let tasks: Vec<String> = plan.tasks().map(|t| format!("- {} ({}): {}", t.canonical, t.worker, t.prompt.trim())).collect();
    let subject = crate::worker::reviewer::Subject {
        worktree: super::observe::review_worktree(&rs, &plan.id, round, index),
        rs,
        id: &plan.id,
        branch: ctx.integration(),
        diff,
        task: format!("Plan {}'s waves of tasks, all integrated and verified:\n\n{}", plan.id, tasks.join("\n")),
        what: format!("the integrated result of plan {}", plan.id),
        reviewed: round,
        toolbox: crate::tools::toolbox::instructions(crate::activity::names::ActivityKind::Commission),
    };
    crate::worker::reviewer::launch_reviewer(ctx, &subject, reviewer)?;
    Ok(Outcome::Done)
}

/// Record the integration tip as the wave's base, and take each task of the wave whose trailer
/// is on the integration branch's first-parent chain as integrated (git is the truth): a run
/// that lost its record (a CI run that timed out, a fresh clone) never runs finished work
/// again nor lands it twice. The history is read once here, not per task nor per pass.
fn start_wave(ctx: &Ctx<'_, Catalog>, update: &Update, wave: usize) -> Result<Outcome> {
    let mut u = update.clone();
    let repo = crate::activity::git::open(&ctx.project.root)?;
    let tip = repo.find_branch(ctx.integration(), git2::BranchType::Local)?.get().peel_to_commit()?.id();
    let Some(mut record) = u.record.take() else { return apply(ctx, &u) };
    record.bases.entry(wave).or_insert(tip.to_string());
    let plan = super::observe::load(ctx.project, &update.id)?;
    let landed = crate::activity::trailers::on_chains(&repo, &[tip], &[], &names::wave_trailer_prefix(&plan.id, wave))
        .with_context(|| format!("reading the task trailers on {}", ctx.integration()))?;
    let now = crate::activity::timeline::timestamp(chrono::Utc::now());
    let mut ig = Integration::new(&plan, wave, now, u.clone(), record.clone());
    let mut any = false;
    for t in plan.waves.get(wave - 1).into_iter().flatten() {
        let trailer = names::task_trailer(&t.canonical);
        if ig.integrated(t) {
            continue;
        }
        if let Some((oid, _)) = landed.iter().find(|(_, line)| *line == trailer) {
            ig.landed(t, &oid.to_string(), None);
            any = true;
        }
    }
    if any {
        return apply(ctx, &ig.progress());
    }
    u.record = Some(record);
    apply(ctx, &u)
}

/// Stop `attempt` in `state` — only a shim proven the attempt's is signalled — then apply the
/// update whatever came of the stop. A run record that cannot be trusted (implausible, or naming
/// a process that is not the attempt's shim) signals nothing and is an error naming the file,
/// once: the update (the stop recorded as sent) is applied all the same, so the same stop is not
/// asked for again and again.
fn stop_then_apply(ctx: &Ctx<'_, Catalog>, state: &StateDir, attempt: u32, kill: bool, update: &Update) -> Result<Outcome> {
    let stopped = crate::worker::liveness::attempt(state, attempt, &shim::boot_id()).map_err(anyhow::Error::msg).and_then(|a| {
        match (a.proc, a.run) {
            (crate::worker::liveness::Proc::Alive, Some(run)) => crate::worker::runner::stop(state, attempt, Some(&run), how(kill)),
            // A cluster's job still in the queue (taken out), or whose shim is starting: asked
            // through its runner now, since the stop is asked once.
            (crate::worker::liveness::Proc::Starting, None) if a.polled => crate::worker::runner::stop(state, attempt, None, how(kill)),
            _ => Ok(()),
        }
    });
    let updated = apply(ctx, update);
    stopped?;
    updated
}

/// SIGKILL now (stale, past its limit), or SIGTERM and SIGKILL after the grace (a shutdown).
fn how(kill: bool) -> shim::Stop {
    if kill {
        shim::Stop::Kill
    } else {
        shim::Stop::Term
    }
}

/// The update, as every kind's is applied ([`crate::activity::apply`]).
fn apply(ctx: &Ctx<'_, Catalog>, u: &Update) -> Result<Outcome> {
    let place = crate::activity::apply::Place::new(ctx.home, ctx.project, crate::activity::kind::Name::Plan, &u.id);
    crate::activity::apply::apply(&place, u, |_, _| None)
}

/// Each task's fold is in its own state dir, under the plan's.
impl crate::activity::apply::Folds for Vec<super::decide::TaskFold> {
    fn is_empty(&self) -> bool {
        <[_]>::is_empty(self)
    }
    fn files(&self, home: &Home, project: &Project, id: &str) -> Result<Vec<(std::path::PathBuf, serde_json::Value)>> {
        self.iter()
            .map(|f| {
                let task = StateDir(home.task_state(&project.name, id, &f.slug));
                Ok((mailbox::folded_file(&task, f.folded.attempt), serde_json::to_value(&f.folded)?))
            })
            .collect()
    }
}

fn base_of(record: &PlanRecord, wave: usize) -> Result<String> {
    record.bases.get(&wave).cloned().with_context(|| format!("wave {wave} has no base recorded"))
}

/// Copy the control plane into the task's state dir, fresh each attempt, and link
/// `<worktree>/.lore-snapshot` to it. Out of the worktree, it is read-only to a confined worker
/// by a Landlock rule (root or not: file modes do not stop root); returns where it is.
fn snapshot(project: &Project, state: &StateDir, wt: &std::path::Path) -> Result<std::path::PathBuf> {
    let dest = state.0.join("snapshot");
    if std::fs::symlink_metadata(&dest).is_ok() {
        std::fs::remove_dir_all(&dest)?;
    }
    std::fs::create_dir_all(&dest)?;
    for part in crate::activity::control_plane::CONTROL_PLANE {
        let part = part.trim_start_matches(".lore/").trim_end_matches('/');
        let from = project.root.join(".lore").join(part);
        if from.exists() {
            copy_tree(&from, &dest.join(part))?;
        }
    }
    // Whatever a worker left at the link's place is replaced, never followed.
    let link = wt.join(copyback::SNAPSHOT_DIR);
    match std::fs::symlink_metadata(&link) {
        Ok(m) if m.is_dir() => {
            // An older guild-hall's read-only copy.
            make_writable(&link);
            std::fs::remove_dir_all(&link)?;
        }
        Ok(_) => std::fs::remove_file(&link)?,
        Err(_) => {}
    }
    std::os::unix::fs::symlink(&dest, &link)?;
    Ok(dest)
}

/// The line of the repository's `info/exclude` that keeps the snapshot's link out of a task
/// worktree's `git status` (Kiln: the snapshot is excluded from git). A linked worktree has no
/// exclude file of its own (git reads `info/exclude` from the common dir only), so it goes
/// there; it matches nothing else a person has (rooted, one name).
const SNAPSHOT_EXCLUDE: &str = "/.lore-snapshot";

/// Add [`SNAPSHOT_EXCLUDE`] to `<common>/info/exclude` unless a line already says it. Only ever
/// appended (O_APPEND: a person's lines, or another task's append at the same moment, are never
/// rewritten), never through a link. Failing is said and costs only the listing: the snapshot
/// is never copied back whatever git says of it.
fn exclude_snapshot(common: &std::path::Path) {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let info = common.join("info");
    let file = info.join("exclude");
    let result = (|| -> std::io::Result<()> {
        if let Ok(text) = crate::artifact::read_regular(&file) {
            if text.lines().any(|l| l.trim_end() == SNAPSHOT_EXCLUDE) {
                return Ok(());
            }
        }
        std::fs::create_dir_all(&info)?;
        let mut f = std::fs::OpenOptions::new().append(true).create(true).custom_flags(libc::O_NOFOLLOW).open(&file)?;
        let ends_in_newline = f.metadata()?.len() == 0 || std::fs::read(&file).is_ok_and(|b| b.ends_with(b"\n"));
        let lead = if ends_in_newline { "" } else { "\n" };
        f.write_all(format!("{lead}# guild-hall: a wave task's read-only snapshot of .lore/\n{SNAPSHOT_EXCLUDE}\n").as_bytes())
    })();
    if let Err(e) = result {
        tracing::warn!(file = %file.display(), error = %e, "could not exclude the snapshot from git status in task worktrees");
    }
}

fn copy_tree(from: &std::path::Path, to: &std::path::Path) -> Result<()> {
    let meta = std::fs::symlink_metadata(from)?;
    if meta.is_dir() {
        std::fs::create_dir_all(to)?;
        for e in std::fs::read_dir(from)? {
            let e = e?;
            copy_tree(&e.path(), &to.join(e.file_name()))?;
        }
    } else if meta.is_file() {
        std::fs::copy(from, to)?;
    }
    Ok(())
}

fn set_mode(path: &std::path::Path, dir: u32, file: u32) {
    use std::os::unix::fs::PermissionsExt;
    if let Ok(m) = std::fs::symlink_metadata(path) {
        if m.is_dir() {
            if let Ok(entries) = std::fs::read_dir(path) {
                let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755));
                for e in entries.flatten() {
                    set_mode(&e.path(), dir, file);
                }
            }
            let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(dir));
        } else if m.is_file() {
            let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(file));
        }
    }
}

fn make_writable(path: &std::path::Path) {
    set_mode(path, 0o755, 0o644);
}

/// The task's worktree as recorded when guild-hall made it, checked against the path and branch
/// computed from the task's id.
fn task_record(ctx: &Ctx<'_, Catalog>, plan: &str, task: &Task) -> Result<Option<WorktreeRecord>> {
    let path = ctx.home.task_worktree(&ctx.project.name, &task.slug());
    Ok(worktree::recorded(&task_state(ctx, plan, task).worktree(), &ctx.project.root, &path, &names::task_branch(&task.slug()))?)
}

/// The task's worktree, made from the wave base, or reused (reset to the base, cleaned); a
/// worktree that cannot be reused is made anew and the old path reported orphaned.
fn task_worktree(ctx: &Ctx<'_, Catalog>, plan: &Plan, task: &Task, base: &str, sparse: bool) -> Result<(WorktreeRecord, Option<String>)> {
    let state = task_state(ctx, &plan.id, task);
    let repo = crate::activity::git::open(&ctx.project.root)?;
    let branch = names::task_branch(&task.slug());
    let base_commit = repo.find_commit(git2::Oid::from_str(base)?)?;
    let expected = ctx.home.task_worktree(&ctx.project.name, &task.slug());
    if let Some(rec) = read_json::<WorktreeRecord>(&state.worktree())? {
        let ours = super::observe::made_for(ctx.project, &rec, &expected);
        // Reset by guild-hall's own git dir, never the admin dir the worker wrote; refused (and
        // the worktree made anew, saying why) if it is not as guild-hall made it.
        let mut why = None;
        if ours && rec.path.join(".git").exists() {
            if let Some(dir) = Some(rec.path.join(copyback::SNAPSHOT_DIR)).filter(|d| d.exists()) {
                make_writable(&dir);
            }
            match worktree::reset_worktree(&rec, base_commit.id(), worktree::Clean::Untracked) {
                Ok(()) => return Ok((rec, None)),
                Err(e) => why = Some(e.to_string()),
            }
        }
        // Not reusable: made anew, the old one reported; removed only if it is the one made for
        // this task (a record naming another path never gets that path deleted).
        let orphaned = if ours {
            let _ = crate::worker::workspace::remove_worktree(&state, &rec);
            match why {
                Some(why) => format!("the worktree {} could not be reused ({why}); made anew", rec.path.display()),
                None => format!("the worktree {} could not be reused; made anew", rec.path.display()),
            }
        } else {
            format!(
                "its record named {}, not the worktree made for it: left alone; made anew at {}",
                rec.path.display(),
                expected.display()
            )
        };
        crate::activity::git::set_branch(&repo, &branch, &base_commit, true)?;
        let rec = worktree::add_worktree(&ctx.project.root, &expected, &branch, sparse)?;
        return Ok((rec, Some(orphaned)));
    }
    crate::activity::git::set_branch(&repo, &branch, &base_commit, true)?;
    let rec = worktree::add_worktree(&ctx.project.root, &expected, &branch, sparse)?;
    Ok((rec, None))
}

/// Start the tasks: each one's worktree, snapshot and launch prepared (several at once: mostly
/// git), then the plan's record written once, then every worker started (at once too: each
/// start waits for its shim's record). The record first: a pass that dies after it finds the
/// attempts running, and starts again any that no shim took.
fn start_tasks(ctx: &Ctx<'_, Catalog>, update: &Update, starts: &[TaskStart]) -> Result<Outcome> {
    let plan = super::observe::load(ctx.project, &update.id)?;
    let record = match update.record.clone() {
        Some(r) => r,
        None => super::observe::record(ctx.home, ctx.project, &plan.id)?.context("the plan has no record")?,
    };
    let prepared = crate::activity::each_at_once(
        starts,
        crate::activity::at_once(),
        || (Err(anyhow::anyhow!("preparing it panicked")), None),
        |s| {
            let mut orphaned = None;
            (prepare_task(ctx, &plan, &record, s, &mut orphaned), orphaned)
        },
    );
    let mut ready = Vec::new();
    let mut unprepared = Vec::new();
    let mut u = update.clone();
    for (s, (r, orphaned)) in starts.iter().zip(prepared) {
        // What became of a worktree that could not be reused is said whatever came after.
        if let Some(o) = orphaned {
            let now = crate::activity::timeline::timestamp(chrono::Utc::now());
            u.events.push(timeline::event(
                &now,
                "orphaned",
                format!("orphaned:{}:{}", s.task, s.attempt),
                json!({"task": s.task, "text": o}),
            ));
        }
        match r {
            // A refused launch has its exit recorded: the next pass fails the task, saying why.
            Ok(r) => ready.extend(r),
            Err(e) => unprepared.push((s, format!("{e:#}"))),
        }
    }
    let outcome = apply(ctx, &u)?;
    if outcome != Outcome::Done {
        return Ok(outcome);
    }
    // One that cannot be prepared keeps none of the others from starting: recorded as running,
    // it ends as a refused launch does (its exit says why), and the next pass fails it — never
    // left running with no shim, which would be started again and again. Written only now that
    // the record holds the attempt.
    let mut errors = Vec::new();
    for (s, why) in unprepared {
        let refused = match plan.task(&s.task) {
            Some(t) => launch::refuse(&task_state(ctx, &plan.id, t), s.attempt, &format!("cannot start: {why}")),
            None => Err(anyhow::anyhow!("the task vanished from the plan")),
        };
        if let Err(e) = refused {
            errors.push(format!("{}: {why} (and its refusal could not be recorded: {e:#})", s.task));
        }
    }
    fault("task-start", 2);
    let started = crate::activity::each_at_once(
        &ready,
        crate::activity::at_once(),
        || Err(anyhow::anyhow!("starting a task panicked")),
        |r| r.start(),
    );
    errors.extend(started.into_iter().filter_map(|r| r.err().map(|e| format!("{e:#}"))));
    if !errors.is_empty() {
        anyhow::bail!("{}", errors.join("; "));
    }
    fault("task-start", 3);
    Ok(Outcome::Done)
}

/// One task made ready to start: its state dir fresh for the attempt, its worktree, snapshot
/// and prompt; `None` where its launch was refused (recorded as its exit). What to say of a
/// worktree that could not be reused goes to `orphaned` as soon as it is known.
fn prepare_task(
    ctx: &Ctx<'_, Catalog>,
    plan: &Plan,
    record: &PlanRecord,
    start: &TaskStart,
    orphaned: &mut Option<String>,
) -> Result<Option<launch::Ready>> {
    let attempt = start.attempt;
    let task = plan.task(&start.task).context("the task vanished from the plan")?.clone();
    let base = base_of(record, task.wave)?;
    let state = task_state(ctx, &plan.id, &task);
    std::fs::create_dir_all(&state.0)?;
    // A fresh attempt starts with no heartbeat history, and with an empty mailbox of its own.
    let _ = std::fs::remove_file(state.heartbeat());
    mailbox::make_fresh(&state, attempt)?;
    let pkg = ctx.workers.for_commission(&task.worker).map_err(anyhow::Error::msg)?;
    let argv = pkg.resolve_command().map_err(anyhow::Error::msg)?;
    let (rec, gone) = task_worktree(ctx, plan, &task, &base, pkg.manifest.checkout == crate::worker::Checkout::Sparse)?;
    *orphaned = gone;
    write_json(&state.worktree(), &rec)?;
    fault("task-start", 1);
    let snapshot_dir = snapshot(ctx.project, &state, &rec.path)?;
    exclude_snapshot(&rec.common);
    let evidence = rec.path.join(copyback::ARTIFACTS_DIR).join(task.slug());
    std::fs::create_dir_all(&evidence).with_context(|| format!("making its evidence dir {}", evidence.display()))?;
    crate::files::write_atomic(&state.prompt(), task.prompt.as_bytes())?;
    let p = |x: &std::path::Path| x.to_string_lossy().into_owned();
    let activation = Activation {
        home: ctx.home,
        project: ctx.project,
        pkg,
        kind: ActivityKind::Task,
        id: &task.slug(),
        state: &state,
        worktree: &rec,
        attempt,
        toolbox: crate::tools::toolbox::instructions(ActivityKind::Task),
        prompt_extra: format!(
            "## This task\n\nYou are task {} of plan {}, wave {}. Change files in your working directory; never commit (a commit fails the task). The control plane is there read-only under {}/ (also $GUILD_HALL_SNAPSHOT); leave evidence under {}/{}/.\n",
            task.canonical,
            plan.id,
            task.wave,
            copyback::SNAPSHOT_DIR,
            copyback::ARTIFACTS_DIR,
            task.slug()
        ),
        argv,
        env: vec![
            ("GUILD_HALL_SNAPSHOT".to_string(), p(&snapshot_dir)),
            ("GUILD_HALL_TASK_ID".to_string(), task.canonical.clone()),
            ("GUILD_HALL_PLAN".into(), plan.id.clone()),
            ("GUILD_HALL_WAVE".into(), "1".into()),
            ("GUILD_HALL_PROMPT_FILE".into(), p(&state.prompt())),
            // Hooks stay off for a wave worker's own git too.
            ("GIT_CONFIG_COUNT".into(), "3".into()),
            ("GIT_CONFIG_KEY_2".into(), "core.hooksPath".into()),
            ("GIT_CONFIG_VALUE_2".into(), "/dev/null".into()),
        ],
        readable: vec![snapshot_dir.clone()],
        resources: Default::default(),
        grace_cap: None,
        runner: None,
        timeout: task.timeout.or(plan.timeout),
        checks: Vec::new(),
        shares_memory: true,
    };
    Ok(match launch::prepare(Launch::Worker(activation))? {
        Prepared::Ready(r) => Some(r),
        Prepared::Refused(_) => None,
    })
}

/// A task's worktree as the copy-back needs it: made for the task, as made (the protocol: no
/// commit of the worker's, the worktree as made, no control plane), within the merge limits,
/// and its changes against the wave base; or the finding that halts the plan.
fn look<'t>(
    ctx: &Ctx<'_, Catalog>,
    plan: &Plan,
    (base, sizes): (&str, Result<&worktree::TreeSizes, &String>),
    t: &'t Task,
) -> Result<(WorktreeRecord, Vec<Change>), Finding<'t>> {
    // Files are read only from the worktree made for the task, never from where a record says.
    let rec = match task_record(ctx, &plan.id, t) {
        Ok(Some(rec)) => rec,
        Ok(None) => return Err(Finding::NoWorktree(t)),
        Err(e) => return Err(Finding::WorktreeUnreadable(t, format!("{e:#}"))),
    };
    let broken = worktree::inspect(&rec);
    let head = std::fs::read_to_string(rec.admin.join("HEAD")).unwrap_or_default();
    let committed = head.trim() != base;
    if !broken.is_empty() || committed {
        return Err(Finding::Protocol { task: t, broken, committed });
    }
    let failed = |e: anyhow::Error| Finding::CopyBackFailed(t, format!("{e:#}"));
    let sizes = sizes.map_err(|e| Finding::CopyBackFailed(t, e.clone()))?;
    let index = copyback::scratch_index(&rec, base).map_err(failed)?;
    let git = rec.with_index(&index);
    // Sizes first, from metadata: the manifest's diff reads what changed.
    let large = copyback::too_large(&git, sizes, &t.slug(), &ctx.project.config.merge_limits()).map_err(failed)?;
    if !large.is_empty() {
        return Err(Finding::TooLarge(t, crate::activity::worktree::listing(&large)));
    }
    let changes = copyback::manifest(&git, base).map_err(failed)?;
    drop(git);
    let refused = copyback::refused_paths(&changes);
    if !refused.is_empty() {
        return Err(Finding::RefusedPaths(t, refused));
    }
    let cp: Vec<String> = changes
        .iter()
        .flat_map(|c| std::iter::once(c.path.as_str()).chain(c.from_path.as_deref()))
        .filter(|p| copyback::control_plane(p))
        .map(str::to_string)
        .collect();
    if !cp.is_empty() {
        return Err(Finding::ControlPlane(t, cp));
    }
    if rec.sparse {
        let outside = copyback::outside_sparse_checkout(&changes);
        if !outside.is_empty() {
            return Err(Finding::OutsideCheckout(t, outside));
        }
    }
    Ok((rec, changes))
}

/// The wave's tasks in plan order: protocol checks and manifests first, a collision scan over
/// all of them, and only then one commit per task. What each finding means for the plan (a
/// halt, a task failed, and why) is the decider's ([`Integration`]); this only looks and copies.
fn integrate(ctx: &Ctx<'_, Catalog>, update: &Update, wave: usize) -> Result<Outcome> {
    let plan = super::observe::load(ctx.project, &update.id)?;
    let record = update.record.clone().or(super::observe::record(ctx.home, ctx.project, &plan.id)?).context("the plan has no record")?;
    let base = base_of(&record, wave)?;
    let base_oid = git2::Oid::from_str(&base)?;
    let now = crate::activity::timeline::timestamp(chrono::Utc::now());
    let mut ig = Integration::new(&plan, wave, now, update.clone(), record);
    let tasks: Vec<Task> = plan.waves.get(wave - 1).cloned().unwrap_or_default();
    let mut manifests: Vec<(String, Vec<Change>)> = Vec::new();
    let mut worktrees = Vec::new();
    let repo = crate::activity::git::open(&ctx.project.root)?;
    let halt = |ig: Integration<'_>, finding: Finding<'_>| apply(ctx, &ig.halt(finding));
    // The tasks ready for integration: every task of the wave, or — when one is to run again —
    // those that succeeded, integrated first (Kiln's resume order). Landed already (a pass that
    // died after its commit): done, whatever its worktree says.
    let ready = |t: &Task| ig.record().tasks.get(&t.canonical).is_some_and(|r| r.state == super::decide::TaskState::Succeeded);
    let todo: Vec<&Task> = tasks.iter().filter(|t| !ig.integrated(t) && ready(t)).collect();
    let landed: Vec<_> = todo
        .iter()
        .map(|t| crate::activity::merge::find_trailer(&repo, ctx.integration(), base_oid, &names::task_trailer(&t.canonical)))
        .collect();
    // What the worktrees of the rest hold, looked at several at once (read-only, mostly git) up
    // to the first task whose landing cannot be told, then taken in plan order: the first
    // finding in that order halts, as if each were looked at in turn.
    let to_look: Vec<&Task> =
        todo.iter().zip(&landed).take_while(|(_, l)| l.is_ok()).filter(|(_, l)| matches!(l, Ok(None))).map(|(t, _)| *t).collect();
    let sizes = match to_look.is_empty() {
        true => Ok(worktree::TreeSizes::default()),
        false => worktree::TreeSizes::read(&ctx.project.root, &base).map_err(|e| format!("reading the sizes of the wave base: {e:#}")),
    };
    let mut looks = crate::activity::each_at_once(
        &to_look,
        crate::activity::at_once(),
        || None,
        |t| Some(look(ctx, &plan, (&base, sizes.as_ref()), t)),
    )
    .into_iter();
    for (t, landed) in todo.iter().copied().zip(landed) {
        match landed {
            Err(e) => return halt(ig, Finding::BranchUnreadable(format!("{e:#}"))),
            Ok(Some(oid)) => {
                ig.landed(t, &oid.to_string(), None);
                continue;
            }
            Ok(None) => {}
        }
        let (rec, changes) = match looks.next().flatten() {
            Some(Ok(found)) => found,
            Some(Err(finding)) => return halt(ig, finding),
            None => return halt(ig, Finding::CopyBackFailed(t, "looking at its worktree panicked".into())),
        };
        manifests.push((t.canonical.clone(), changes));
        worktrees.push((t.clone(), rec));
    }
    // What changed on the integration branch since the wave started, other than this wave's
    // own copy-backs, is never overwritten: a task touching it halts the plan.
    let theirs = match copyback::changed_since(&repo, ctx.integration(), base_oid, &names::wave_trailer_prefix(&plan.id, wave)) {
        Ok(t) => t,
        Err(e) => return halt(ig, Finding::BranchUnreadable(format!("{e:#}"))),
    };
    let overlap: Vec<String> = manifests
        .iter()
        .flat_map(|(t, cs)| {
            cs.iter()
                .flat_map(|c| std::iter::once(&c.path).chain(c.from_path.as_ref()))
                .filter(|p| theirs.contains(*p))
                .map(move |p| format!("{p} ({t})"))
        })
        .collect();
    if !overlap.is_empty() {
        return halt(ig, Finding::Overlap(overlap));
    }
    // What this wave's tasks integrated before (ahead of a rerun) is theirs: a task that
    // changed it too collides with it, as if they had been copied back together.
    let landed_before = match copyback::changed_by_wave(&repo, ctx.integration(), base_oid, &names::wave_trailer_prefix(&plan.id, wave)) {
        Ok(l) => l,
        Err(e) => return halt(ig, Finding::BranchUnreadable(format!("{e:#}"))),
    };
    let mut with_landed = manifests.clone();
    for (task, paths) in landed_before {
        let changes = paths.into_iter().map(|path| Change { op: copyback::Op::Modify, path, from_path: None }).collect();
        with_landed.push((task, changes));
    }
    let collisions = copyback::collisions(&with_landed);
    if !collisions.is_empty() {
        let list: Vec<String> = collisions.iter().map(|(p, ts)| format!("{p} ({})", ts.join(", "))).collect();
        return halt(ig, Finding::Collision(list));
    }
    fault("integrate", 1);
    for (n, ((t, rec), (_, changes))) in worktrees.iter().zip(&manifests).enumerate() {
        let trailer = names::task_trailer(&t.canonical);
        let title = t.title.clone().unwrap_or_else(|| t.label.clone());
        let message = format!("{title} ({}, plan {})", t.canonical, plan.id);
        let evidence_to = format!(".lore/plans/{}/artifacts/{}", plan.id, t.slug());
        let evidence = rec.path.join(copyback::ARTIFACTS_DIR).join(t.slug());
        let landing =
            copyback::TaskLanding { rec, changes, evidence: &evidence, evidence_to: &evidence_to, message: &message, trailer: &trailer };
        let landed = match copyback::land_task(&repo, ctx.integration(), base_oid, &landing) {
            Ok(l) => l,
            Err(e) => return halt(ig, Finding::LandFailed(t, format!("{e:#}"))),
        };
        match landed {
            Landed::Committed(oid) | Landed::Already(oid) => ig.landed(t, &oid.to_string(), Some(changes.len())),
            Landed::Waiting(why) => {
                apply(ctx, &ig.progress())?;
                return Ok(Outcome::Waiting(format!("copy-back waiting: {why}")));
            }
        }
        fault("integrate", (n + 2) as u32);
    }
    apply(ctx, &ig.progress())
}

/// Run `verify` in the plan's verify worktree, reset to the integration tip: never in a
/// person's checkout. Under the shim like a worker (contained, its output kept).
fn start_verify(ctx: &Ctx<'_, Catalog>, update: &Update, wave: usize, run: u32) -> Result<Outcome> {
    let plan = super::observe::load(ctx.project, &update.id)?;
    let argv = plan.verify.clone().context("the plan has no verify")?;
    let repo = crate::activity::git::open(&ctx.project.root)?;
    let tip = repo.find_branch(ctx.integration(), git2::BranchType::Local)?.get().peel_to_commit()?;
    let branch = names::verify_branch(&plan.id);
    let path = ctx.home.verify_worktree(&ctx.project.name, &plan.id);
    let state = verify_state(ctx, &plan.id);
    std::fs::create_dir_all(&state.0)?;
    if crate::worker::liveness::busy(&state, &shim::boot_id()) {
        // A verify still running (one a cancel left behind): its worktree is in use.
        return Ok(Outcome::Waiting("an earlier verify of this plan is still running".into()));
    }
    // Reset and cleaned only if it is the verify worktree made for this plan: a record naming
    // another path (a person's checkout, say) is never reset or cleaned.
    let ours = |r: &WorktreeRecord| super::observe::made_for(ctx.project, r, &path) && r.path.join(".git").exists();
    let rec = match read_json::<WorktreeRecord>(&state.worktree())?.filter(ours) {
        // Reset by guild-hall's own git dir, never the admin dir; one not as guild-hall made
        // it is made anew.
        Some(rec) if worktree::reset_worktree(&rec, tip.id(), worktree::Clean::All).is_ok() => rec,
        found => {
            if let Some(rec) = found {
                crate::worker::workspace::remove_worktree(&state, &rec)?;
            }
            crate::activity::git::set_branch(&repo, &branch, &tip, true)?;
            worktree::add_worktree(&ctx.project.root, &path, &branch, false)?
        }
    };
    write_json(&state.worktree(), &rec)?;
    let _ = std::fs::remove_file(state.heartbeat());
    // `verify` is the plan author's command, not an agent's: it runs as they would run it
    // (their environment, less git's, unconfined: a test suite writes caches outside the
    // worktree), contained under the shim, in its own worktree.
    let command = launch::Command {
        home: ctx.home,
        project: ctx.project,
        state: &state,
        attempt: run,
        cwd: rec.path.clone(),
        argv,
        env: vec![("GUILD_HALL_PLAN".to_string(), plan.id.clone()), ("GUILD_HALL_VERIFY_WAVE".to_string(), wave.to_string())],
    };
    let Prepared::Ready(ready) = launch::prepare(Launch::Command(command))? else {
        anyhow::bail!("verify cannot be refused: it runs unconfined");
    };
    let outcome = apply(ctx, update)?;
    if outcome != Outcome::Done {
        return Ok(outcome);
    }
    fault("verify", 1);
    ready.start()?;
    Ok(Outcome::Done)
}

/// The output of a verify run (the end of it).
pub(crate) fn verify_output(home: &Home, project: &Project, plan: &str, run: u32) -> String {
    let log = StateDir(home.verify_state(&project.name, plan)).log(run);
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(200)..].join("\n")
}

/// A fix-forward commission for the fixer, as a person would write it; never over a file, never
/// one the commission parser would refuse.
fn write_fix(ctx: &Ctx<'_, Catalog>, plan: &str, wave: usize, round: u32, fixer: &str, run: u32) -> Result<()> {
    let output = verify_output(ctx.home, ctx.project, plan, run);
    let body = format!(
        "The integration verify of plan {plan} failed after wave {wave}. Make it pass with new changes on top of what is there (fix forward: never revert the wave's work).\n\nIts output (the end):\n\n```\n{}\n```\n",
        output.trim_end()
    );
    write_fix_commission(ctx, plan, wave, round, fixer, &format!("Fix-forward: plan {plan}, wave {wave} verify"), body)
}

/// A fix-forward commission `title` with `body` for the fixer, as a person would write it;
/// never over a file, never one the commission parser would refuse.
fn write_fix_commission(ctx: &Ctx<'_, Catalog>, plan: &str, wave: usize, round: u32, fixer: &str, title: &str, body: String) -> Result<()> {
    let id = fix_id(plan, wave, round);
    let path = ctx.project.commission_path(&id);
    let text = crate::artifact::commission::render(&crate::artifact::commission::New {
        title: title.to_string(),
        date: None,
        status: crate::artifact::Status::Pending,
        worker: fixer.to_string(),
        created: crate::activity::timeline::timestamp(chrono::Utc::now()),
        dependencies: Vec::new(),
        resources: Default::default(),
        body,
    });
    crate::artifact::make_lore_dir(&ctx.project.commissions_dir())?;
    // Written once: a pass that died after writing it finds it there.
    match crate::artifact::create_new(&path, &text, "commission", crate::artifact::Commission::parse) {
        Ok(_) | Err(crate::artifact::CreateError::Exists { .. }) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::activity::state::RunInfo;
    use crate::artifact::plan::PlanStatus;

    const PLAN: &str = "---\nstatus: cancelled\nwaves:\n  - - {id: t, worker: w, prompt: x}\n---\n";
    const T1: &str = "p:exec:wave-1:task-1";

    /// A stop asked of a task whose `run.json` cannot be trusted — pid 0, or the pid and start
    /// time of a live process that is not the attempt's shim (this test's own process: were it
    /// signalled, the test would die) — signals nothing and fails naming the file, but its
    /// update is applied: the stop is recorded as sent and not asked for again every pass.
    #[test]
    fn a_stop_on_an_untrusted_run_record_signals_nothing_and_is_recorded_once() {
        let dir = tempfile::tempdir().expect("tmp");
        let home = Home { root: dir.path().join("home") };
        let root = dir.path().join("repo");
        let project = Project { root: root.clone(), name: "p".into(), config: Default::default() };
        std::fs::create_dir_all(project.plans_dir()).expect("mkdir");
        std::fs::write(project.plan_path("p"), PLAN).expect("plan");
        let workers = Catalog::default();
        let ctx = Ctx { home: &home, project: &project, workers: &workers };
        let state = StateDir(home.task_state("p", "p", "p-exec-wave-1-task-1"));
        std::fs::create_dir_all(&state.0).expect("mkdir");
        let me = std::process::id() as i32;
        let run = RunInfo {
            attempt: 1,
            pid: me,
            pgid: me,
            start_time: shim::proc_stat(me).expect("own stat").start_time,
            boot_id: shim::boot_id(),
            worker_pid: None,
            started_at: chrono::Utc::now(),
            run_id: "0123456789abcdef0123456789abcdef".into(),
        };
        for (forged, why) in [
            (RunInfo { pid: 0, pgid: 0, ..run.clone() }, "implausible"),
            (run.clone(), "a running process that is not this attempt's shim; no process is signalled by it"),
        ] {
            write_json(&state.run(), &forged).expect("forge");
            let mut record: PlanRecord = serde_json::from_value(json!({"status": "cancelled", "wave": 1})).expect("record");
            record.tasks.insert(
                T1.into(),
                serde_json::from_value(json!({"state": "running", "attempt": 1, "stop_sent": true})).expect("task record"),
            );
            let update = Update {
                id: "p".into(),
                expect_hash: crate::artifact::store::content_hash(PLAN),
                edits: vec![],
                events: vec![],
                record: Some(record.clone()),
                fold: vec![],
            };
            for action in [
                Action::StopTask { update: update.clone(), task: T1.into(), attempt: 1, kill: false },
                Action::StopVerify { update: update.clone(), run: 1, kill: false },
            ] {
                if matches!(action, Action::StopVerify { .. }) {
                    let verify = verify_state(&ctx, "p");
                    std::fs::create_dir_all(&verify.0).expect("mkdir");
                    write_json(&verify.run(), &forged).expect("forge");
                }
                let _ = std::fs::remove_file(StateDir(ctx.home.plan_state(&ctx.project.name, "p")).record());
                let err = format!("{:#}", act(&ctx, &action).expect_err("refused"));
                assert!(err.contains("run.json") && err.contains(why), "{err}");
                let written: Option<PlanRecord> =
                    read_json(&StateDir(ctx.home.plan_state(&ctx.project.name, "p")).record()).expect("record");
                assert_eq!(written.map(|r| r.status), Some(PlanStatus::Cancelled), "the update is applied all the same");
            }
        }
    }
}
