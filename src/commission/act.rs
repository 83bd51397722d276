//! Act: carry out one planned [`Action`]. Each effect is small and idempotent, and every
//! multi-step one (dispatch, finish, cleanup) checks before each step whether it was already
//! done, so a pass killed at any instant is finished by the next. The hidden fault switch
//! `GUILD_HALL_FAULT=<action>:<step>` stops the process dead after that step, for tests.

use anyhow::{Context, Result};
use serde_json::json;
use serde_yaml_ng::Value;

use crate::activity::git;
use crate::activity::kind::Ctx;
use crate::activity::merge::{land, Landing, Messages};
use crate::activity::names::{self, ActivityKind};
use crate::activity::state::StateDir;
use crate::activity::timeline;
use crate::activity::worktree::{self, WorktreeRecord};
use crate::artifact::commission::FeedbackFrom;
use crate::artifact::store::content_hash;
use crate::artifact::write::Edit;
use crate::commission::decide::{timestamp, Action, Sig, Update};
use crate::commission::observe::{Folded, Snapshot};
use crate::commission::questions::MeetingToWrite;
use crate::config::{Home, Project};
use crate::files::write_json;
use crate::worker::launch::{self, Activation, Launch, Prepared};
use crate::worker::shim;
use crate::worker::toolbox::{answers, mailbox};
use crate::worker::{Catalog, Checkout};

pub use crate::activity::Outcome;

/// A commission's runtime state dir.
fn state_dir(ctx: &Ctx<'_, Catalog>, id: &str) -> StateDir {
    StateDir(ctx.home.commission_state(&ctx.project.name, id))
}

use crate::activity::fault;

pub fn act(ctx: &Ctx<'_, Catalog>, snapshot: &Snapshot, action: &Action) -> Result<Outcome> {
    match action {
        Action::Update(u) => apply_update(ctx, u),
        Action::Dispatch { update, attempt, branch, worker, resume } => dispatch(ctx, snapshot, update, *attempt, branch, worker, *resume),
        Action::Signal { id, run, signal, update } => {
            // The stop first, and whatever becomes of the update: what a worker wrote can make
            // an update fail, and must never keep it from being stopped.
            let how = if *signal == Sig::Term { shim::Stop::Term } else { shim::Stop::Kill };
            let stopped = crate::worker::runner::stop(&state_dir(ctx, id), run.attempt, Some(run), how);
            let updated = apply_update(ctx, update);
            stopped?;
            updated
        }
        Action::Dequeue { id, attempt, update } => {
            let stopped = crate::worker::runner::stop(&state_dir(ctx, id), *attempt, None, shim::Stop::Kill);
            let updated = apply_update(ctx, update);
            stopped?;
            updated
        }
        Action::KillLeftovers { run, pids, .. } => {
            shim::kill_leftovers(run, pids)?;
            Ok(Outcome::Done)
        }
        Action::Finish { update, conflict, send_back, attempt, branch, summary } => {
            finish(ctx, snapshot, update, (conflict.as_ref(), send_back.as_deref()), *attempt, branch, summary)
        }
        Action::Cleanup { id, attempt, branch, why } => cleanup(ctx, id, *attempt, branch, why),
        Action::Hold { update, attempt, branch } => hold(ctx, update, *attempt, branch),
        Action::StartReviewer { update, attempt, index, reviewer, branch } => {
            // Its start in the timeline first; a run recorded already is not started again.
            let started = crate::commission::reviewing::started(ctx, &update.id, *attempt, *index);
            let outcome = apply_update(ctx, update)?;
            if outcome != Outcome::Done || started {
                return Ok(outcome);
            }
            crate::commission::reviewing::start(ctx, &update.id, *attempt, *index, reviewer, branch)?;
            Ok(Outcome::Done)
        }
        Action::ReviewerCleanup { id, attempt, index, branch } => crate::commission::reviewing::cleanup(ctx, id, *attempt, *index, branch),
        Action::DropReviewers { update, attempt, branch, runs } => {
            // The stops first, and whatever becomes of the update, as a commission's own.
            let mut stopped = Ok(Outcome::Done);
            for (index, run, pids) in runs {
                let dropped = crate::commission::reviewing::drop(ctx, &update.id, *attempt, *index, branch, run.as_ref(), pids);
                stopped = stopped.and(dropped);
            }
            let updated = apply_update(ctx, update);
            stopped?;
            updated
        }
        Action::Heartbeat { id, beat } => {
            write_json(&state_dir(ctx, id).heartbeat(), beat)?;
            Ok(Outcome::Done)
        }
        Action::Schedule(step) => schedule(ctx, step),
    }
}

/// A scheduled commission's step. The run first, never over an existing file (its id is its
/// tick's: one written before a crash is the same run), then the template's count, only if
/// it did not change since it was read: killed between the two, the next pass finds the run
/// written and only counts it.
fn schedule(ctx: &Ctx<'_, Catalog>, step: &crate::commission::decide::schedule::ScheduleStep) -> Result<Outcome> {
    if let Some((id, text)) = &step.run {
        let path = ctx.project.commission_path(id);
        match crate::artifact::create_new(&path, text, "commission", crate::artifact::Commission::parse) {
            Ok(_) | Err(crate::artifact::CreateError::Exists { .. }) => {}
            Err(e) => return Err(anyhow::Error::new(e).context(format!("writing the run {id} of {}", step.id))),
        }
        fault("schedule", 1);
        // Held here, the run written and not counted, for a test to kill -9 (in a pid
        // namespace of its own).
        if std::env::var("GUILD_HALL_FAULT").is_ok_and(|f| f == "schedule:1:hold") {
            loop {
                std::thread::sleep(std::time::Duration::from_secs(60));
            }
        }
    }
    // The template's timeline says each run it spawned, before the run is counted (keyed by the
    // run: said once, also when a pass killed after writing the run leaves it to be counted).
    if let Some((tick, id)) = &step.count {
        let now = crate::activity::timeline::timestamp(chrono::Utc::now());
        let fields = serde_json::json!({ "run": id, "tick": crate::activity::timeline::timestamp(*tick), "text": step.what });
        let event = crate::activity::timeline::event(&now, "spawned", format!("spawned:{id}"), fields);
        crate::activity::timeline::append(&crate::activity::timeline::path_for(&step.path), &[event])?;
    }
    let edited = crate::artifact::store::edit_if_unchanged(&step.path, step.hash, |text| {
        let counted = match (&step.template, &step.count) {
            (Some(t), Some((tick, id))) => t.counted(text, *tick, id)?,
            _ => text.to_string(),
        };
        crate::artifact::write::apply(&counted, &step.edits).map_err(anyhow::Error::new)
    })?;
    Ok(if edited.is_some() { Outcome::Done } else { Outcome::Dropped })
}

/// The update, as every kind's is applied ([`crate::activity::apply`]). What a worker said can
/// be more than the frontmatter holds (many questions, a long list of artifacts): the status
/// and the rest still go in, and the timeline, which has all of it, says what was left out.
pub(crate) fn apply_update(ctx: &Ctx<'_, Catalog>, u: &Update) -> Result<Outcome> {
    // The meetings its worker requested, before the update that marks them done.
    if let Some(f) = &u.fold {
        for m in &f.write_meetings {
            write_meeting(ctx, &u.id, m)?;
        }
    }
    let place = crate::activity::apply::Place::new(ctx.home, ctx.project, crate::activity::kind::Name::Commission, &u.id);
    crate::activity::apply::apply(&place, u, |_, _| {
        without_worker_text(&u.edits).map(|edits| crate::activity::fit::Shorter {
            edits,
            what: "the worker's progress, questions and result".into(),
            kept: Default::default(),
        })
    })
}

/// A meeting a commission's worker requested, as a person would write the request; never over
/// an existing file (written again after a crash: a no-op). One `check` would refuse is not
/// written, and the commission's timeline says why.
fn write_meeting(ctx: &Ctx<'_, Catalog>, commission: &str, m: &MeetingToWrite) -> Result<()> {
    let text = crate::artifact::meeting::render(&crate::artifact::meeting::New {
        title: Some(format!("Meeting requested by commission {commission}")),
        worker: m.worker.clone(),
        status: crate::artifact::MeetingStatus::Requested,
        requested_by: Some(m.requested_by.clone()),
        agenda: Some(m.reason.clone()),
        references: vec![m.reference.clone()],
        created: None,
        body: String::new(),
    });
    crate::artifact::make_lore_dir(&ctx.project.meetings_dir())?;
    match crate::artifact::create_new(&ctx.project.meeting_path(&m.id), &text, "meeting", crate::artifact::Meeting::parse) {
        Ok(_) | Err(crate::artifact::CreateError::Exists { .. }) => Ok(()),
        Err(e @ crate::artifact::CreateError::Invalid { .. }) => {
            let log = crate::activity::timeline::path_for(&ctx.project.commission_path(commission));
            let now = crate::activity::timeline::timestamp(chrono::Utc::now());
            let text = format!("meeting {} was not written: {e}", m.id);
            let event =
                crate::activity::timeline::event(&now, "anomaly", format!("meeting-invalid:{}", m.id), serde_json::json!({ "text": text }));
            crate::activity::timeline::append(&log, &[event])?;
            Ok(())
        }
        Err(e) => Err(e.into()),
    }
}

/// A commission's attempt's mailbox, as far as it is folded (`events-<attempt>.folded.json`).
impl crate::activity::apply::Folds for Option<Box<Folded>> {
    fn is_empty(&self) -> bool {
        self.is_none()
    }
    fn files(&self, home: &Home, project: &Project, id: &str) -> Result<Vec<(std::path::PathBuf, serde_json::Value)>> {
        let Some(f) = self else { return Ok(Vec::new()) };
        let state = StateDir(home.commission_state(&project.name, id));
        let mut files = vec![(mailbox::folded_file(&state, f.attempt), serde_json::to_value(f)?)];
        // The replies its blocked worker waits for, with the fold that holds them.
        let dir = answers::answers_dir(&state, f.attempt);
        for ask in &f.asks {
            if let (Some(reply), Some(file)) = (ask.reply_file(), answers::answer_file(&dir, &ask.id)) {
                files.push((file, serde_json::to_value(reply)?));
            }
        }
        Ok(files)
    }
}

/// `edits` with what came from the worker's mailbox left out (the result cut to a short
/// summary); `None` if there is none of it.
fn without_worker_text(edits: &[Edit]) -> Option<Vec<Edit>> {
    let mut changed = false;
    let fewer = edits
        .iter()
        .filter_map(|e| match e {
            Edit::Set(k, _) if ["progress", "questions", "linked_artifacts"].contains(&k.as_str()) => {
                changed = true;
                None
            }
            Edit::Set(k, v) if k == "result" => {
                changed = true;
                let summary = v.get("summary").and_then(Value::as_str).unwrap_or("");
                let short = mailbox::clip(summary, 512).into_owned();
                Some(Edit::Set(k.clone(), crate::commission::decide::result_value(&short, &[])))
            }
            other => Some(other.clone()),
        })
        .collect();
    changed.then_some(fewer)
}

fn dispatch(
    ctx: &Ctx<'_, Catalog>,
    snapshot: &Snapshot,
    update: &Update,
    attempt: u32,
    branch: &str,
    worker: &str,
    resume: bool,
) -> Result<Outcome> {
    let id = &update.id;
    let state = state_dir(ctx, id);
    std::fs::create_dir_all(&state.0)?;
    if !resume {
        // A fresh attempt starts with no heartbeat history, and with an empty mailbox of its
        // own: anything already there was not written by this attempt (which has not started).
        let _ = std::fs::remove_file(state.heartbeat());
        mailbox::make_fresh(&state, attempt)?;
    }
    // Where its questions' answers come: made before it starts (its sandbox reads only a dir
    // that is there), never writable by it.
    let answers_dir = answers::answers_dir(&state, attempt);
    std::fs::create_dir_all(&answers_dir).with_context(|| format!("creating {}", answers_dir.display()))?;
    // A dropped update (a person saved since the plan was made) starts nothing: the next pass
    // decides again.
    let outcome = apply_update(ctx, update)?;
    if outcome != Outcome::Done {
        return Ok(outcome);
    }
    fault("dispatch", 1);
    let commission = snapshot.get(id).context("commission vanished from the snapshot")?;
    let activation = ctx.workers.for_commission(worker).and_then(|pkg| pkg.resolve_command().map(|argv| (pkg, argv)));
    let (pkg, argv) = match activation {
        Ok(v) => v,
        Err(why) => {
            // Recorded like a worker that could not start: the next plan fails the commission.
            launch::refuse(&state, attempt, &why.to_string())?;
            return Ok(Outcome::Done);
        }
    };
    let repo = git::open(&ctx.project.root)?;
    git::ensure_branch(&repo, branch, ctx.integration())?;
    // A revision's prompt carries the feedback on the attempt it revises (in its record: the
    // update's, or as recorded when a resumed dispatch finds it).
    let record = update.record.as_ref().or(commission.record.as_ref());
    let revision = record.and_then(|r| r.revision.as_ref()).filter(|r| r.attempt == attempt);
    let wt = ctx.home.worktree(&ctx.project.name, id);
    if revision.is_some_and(|r| r.from == FeedbackFrom::Conflict) && std::fs::symlink_metadata(&wt).is_err() {
        // Sent back for a conflict: the integration tip merged into the branch before the
        // worktree is made from it, the markers in the files it checks out (done once: a
        // dispatch run again finds the tip on the branch, or the worktree made already).
        if let Some(paths) = crate::activity::merge::merge_in_for_resolution(&repo, ctx.integration(), branch)? {
            let text =
                format!("{} merged into {branch} for attempt {attempt}; conflict markers left in: {}", ctx.integration(), paths.join(", "));
            let now = timestamp(chrono::Utc::now());
            let event =
                timeline::event(&now, "merge-in", format!("merge-in:{attempt}"), json!({"text": text, "paths": paths, "attempt": attempt}));
            timeline::append(&timeline::path_for(&ctx.project.commission_path(id)), &[event])?;
        }
    }
    fault("dispatch", 2);
    let rec = worktree::add_worktree(&ctx.project.root, &wt, branch, pkg.manifest.checkout == Checkout::Sparse)?;
    write_json(&state.worktree(), &rec)?;
    fault("dispatch", 3);

    let prompt = match revision {
        Some(r) => format!("{}{}", commission.artifact.body.trim_end(), r.prompt_section()),
        None => commission.artifact.body.clone(),
    };
    crate::files::write_atomic(&state.prompt(), prompt.as_bytes())?;
    let session = revision.and_then(|r| crate::worker::session::announced(&state.log(r.after)));
    let activation = Activation {
        home: ctx.home,
        project: ctx.project,
        pkg,
        kind: ActivityKind::Commission,
        id,
        state: &state,
        worktree: &rec,
        attempt,
        toolbox: crate::tools::toolbox::instructions(ActivityKind::Commission),
        prompt_extra: String::new(),
        argv,
        env: vec![
            ("GUILD_HALL_PROMPT_FILE".to_string(), state.prompt().to_string_lossy().into_owned()),
            // A revision goes on in the agent session of the attempt it revises, where its
            // package can resume one (empty: a new session).
            ("GUILD_HALL_SESSION_ID".to_string(), session.unwrap_or_default()),
            ("GUILD_HALL_ANSWERS".to_string(), answers_dir.to_string_lossy().into_owned()),
            ("GUILD_HALL_ASK_TIMEOUT".to_string(), crate::commission::decide::ask_timeout(snapshot, commission).as_secs().to_string()),
            ("GUILD_HALL_CAPABILITIES".to_string(), pkg.manifest.capabilities.join(",")),
        ],
        readable: vec![answers_dir.clone()],
        resources: commission.artifact.resources.clone(),
        grace_cap: None,
        runner: commission.artifact.runner,
        timeout: commission.artifact.timeout,
        checks: commission.artifact.checks.clone(),
        shares_memory: true,
    };
    match launch::prepare(Launch::Worker(activation))? {
        Prepared::Ready(ready) => ready.start()?,
        Prepared::Refused(_) => return Ok(Outcome::Done),
    }
    fault("dispatch", 4);
    Ok(Outcome::Done)
}

/// The worktree as guild-hall recorded it when it made it (an older guild-hall kept no record:
/// the admin dir is the one git names after the worktree).
fn worktree_record(ctx: &Ctx<'_, Catalog>, id: &str, branch: &str) -> Result<WorktreeRecord> {
    Ok(worktree::recorded_or_assumed(&state_dir(ctx, id).worktree(), &ctx.project.root, &ctx.home.worktree(&ctx.project.name, id), branch)?)
}

/// Failure/cancellation aftermath: keep what the worker left on its branch, then remove the
/// worktree. A worktree the worker tampered with is noted in the timeline.
fn cleanup(ctx: &Ctx<'_, Catalog>, id: &str, attempt: u32, branch: &str, why: &str) -> Result<Outcome> {
    let state = state_dir(ctx, id);
    let rec = worktree_record(ctx, id, branch)?;
    let limits = ctx.project.config.merge_limits();
    let secured = worktree::secure_work(&rec, Some(&state.objects()), &format!("guild-hall: {why} of {id} (attempt {attempt})"), &limits)
        .with_context(|| {
        format!("could not commit the worker's files to {branch}; its worktree {} is kept to try again", rec.path.display())
    })?;
    let now = timestamp(chrono::Utc::now());
    let mut notes = Vec::new();
    if !secured.tampered.is_empty() {
        let text = format!("worktree tampered with: {}", secured.tampered.join("; "));
        notes.push(timeline::event(&now, "anomaly", format!("tampered:{attempt}"), json!({"text": text})));
    }
    if !secured.too_large.is_empty() {
        let text = format!("left out of {branch} as too large: {}", worktree::listing(&secured.too_large));
        notes.push(timeline::event(&now, "anomaly", format!("too-large:{attempt}"), json!({"text": text})));
    }
    timeline::append(&timeline::path_for(&ctx.project.commission_path(id)), &notes)?;
    fault("cleanup", 1);
    crate::worker::workspace::remove_worktree(&state, &rec)?;
    let _ = std::fs::remove_dir_all(state.objects());
    fault("cleanup", 2);
    Ok(Outcome::Done)
}

/// Submitted work held for review: what is left in the worktree committed onto the branch (the
/// worker's own commits adopted), then the status `review`, then the worktree removed. A pass
/// killed between two steps finds the work secured (secured again: nothing new), or in
/// review with a worktree, which is secured and removed as a leftover.
fn hold(ctx: &Ctx<'_, Catalog>, update: &Update, attempt: u32, branch: &str) -> Result<Outcome> {
    let id = &update.id;
    let state = state_dir(ctx, id);
    let rec = worktree_record(ctx, id, branch)?;
    let limits = ctx.project.config.merge_limits();
    let message = format!("guild-hall: work of {id} (attempt {attempt}) for review");
    let secured = worktree::secure_work(&rec, Some(&state.objects()), &message, &limits).with_context(|| {
        format!("could not commit the worker's files to {branch}; its worktree {} is kept to try again", rec.path.display())
    })?;
    let now = timestamp(chrono::Utc::now());
    let mut held = update.clone();
    if !secured.tampered.is_empty() {
        let text = format!("worktree tampered with: {}", secured.tampered.join("; "));
        held.events.push(timeline::event(&now, "anomaly", format!("tampered:{attempt}"), json!({"text": text})));
    }
    if !secured.too_large.is_empty() {
        let text = format!("left out of {branch} as too large: {}", worktree::listing(&secured.too_large));
        held.events.push(timeline::event(&now, "anomaly", format!("too-large:{attempt}"), json!({"text": text})));
    }
    fault("hold", 1);
    let outcome = apply_update(ctx, &held)?;
    if outcome != Outcome::Done {
        return Ok(outcome);
    }
    fault("hold", 2);
    worktree::remove_worktree(&rec)?;
    let _ = std::fs::remove_dir_all(state.objects());
    Ok(outcome)
}

/// `refused`: the failure for work that cannot be merged, and the hold that sends a conflict
/// back to its worker, when send-backs are left.
fn finish(
    ctx: &Ctx<'_, Catalog>,
    snapshot: &Snapshot,
    update: &Update,
    refused: (&Update, Option<&Update>),
    attempt: u32,
    branch: &str,
    summary: &str,
) -> Result<Outcome> {
    let id = &update.id;
    let state = state_dir(ctx, id);
    let rec = worktree_record(ctx, id, branch)?;
    let now = timestamp(chrono::Utc::now());
    // Not merged: the commission fails, saying why, in `reason:` and the timeline. The
    // worktree goes only once the work is secured on the branch (`secured`); until then the
    // cleanup of a failed commission tries again.
    let (conflict, send_back) = refused;
    let fail = |reason: String, kind: &str, secured: bool| -> Result<Outcome> {
        let mut failed = conflict.clone();
        failed.edits.retain(|e| !matches!(e, Edit::Set(k, _) if k == "reason"));
        failed.edits.push(Edit::Set("reason".into(), Value::String(reason.clone())));
        failed.events.push(timeline::event(&now, "anomaly", format!("{kind}:{attempt}"), json!({"text": reason})));
        if secured {
            crate::worker::workspace::remove_worktree(&state, &rec)?;
            let _ = std::fs::remove_dir_all(state.objects());
        }
        apply_update(ctx, &failed)
    };
    // The title the attempt was given (an edit while it ran is for the next attempt); an
    // attempt dispatched before that was recorded: the artifact's.
    let observed = snapshot.get(id);
    let given = observed.and_then(|o| o.record.as_ref()?.given.as_ref().filter(|g| g.attempt == attempt).map(|g| g.title.clone()));
    let title = given.unwrap_or_else(|| observed.and_then(|o| o.artifact.title.clone())).unwrap_or_else(|| id.clone());
    let message = format!("{title} ({id})\n\n{}", summary.trim());
    let trailer = names::commission_trailer(id, attempt);
    let leftovers = format!("guild-hall: work left in the worktree by {id} (attempt {attempt})");
    let messages = Messages { leftovers, merge: message, trailer };
    let limits = ctx.project.config.merge_limits();
    // An attempt sent back for a conflict lands only once the markers guild-hall left are gone
    // from the files it named (else it is a conflict again: sent back, or failed).
    let marked: Vec<String> = observed
        .and_then(|o| o.record.as_ref()?.revision.as_ref().filter(|r| r.attempt == attempt && r.from == FeedbackFrom::Conflict))
        .map(|r| r.feedback.iter().filter_map(|f| f.path.clone()).collect())
        .unwrap_or_default();
    let after_secure = || {
        fault("finish", 1);
        if marked.is_empty() {
            return None;
        }
        match crate::activity::merge::markers_left(&ctx.project.root, branch, &marked) {
            Ok(left) if !left.is_empty() => Some(Landing::Refused {
                kind: "conflict",
                reason: format!("conflict markers left unresolved in: {}; nothing merged, branch {branch} kept", left.join(", ")),
                conflicts: left,
            }),
            _ => None,
        }
    };
    let landing = land(&ctx.project.root, &rec, Some(&state.objects()), ctx.integration(), &messages, &limits, after_secure);
    let merge_event = |commit: String| {
        timeline::event(&now, "merge", format!("merge:{attempt}"), json!({"branch": ctx.integration(), "commit": commit, "from": branch}))
    };
    let mut done = update.clone();
    if let Some(text) = crate::worker::workspace::setup_made(&state, attempt) {
        done.events.push(crate::worker::workspace::setup_event(&now, attempt, None, &text));
    }
    match landing {
        Landing::Merged(oid) => {
            done.events.push(merge_event(oid.map(|o| o.to_string()).unwrap_or_else(|| timeline::NOTHING_TO_MERGE.into())))
        }
        Landing::Refused { kind: "conflict", reason, conflicts } => {
            let outside: Vec<String> = conflicts.iter().filter(|p| !p.starts_with(".lore/")).cloned().collect();
            return match send_back {
                Some(held) if !outside.is_empty() => {
                    let recorded = observed.and_then(|o| o.record.clone());
                    send_conflict_back(ctx, held, recorded, &rec, (attempt, conflicts), &now)
                }
                _ => {
                    let revisions = observed.and_then(|o| o.record.as_ref()).map_or(0, |r| r.automatic_revisions());
                    let reason = if revisions > 0 && !outside.is_empty() {
                        format!("{reason} (after {} (max_revisions))", timeline::counted(revisions as usize, "automatic revision"))
                    } else {
                        reason
                    };
                    fail(reason, "conflict", true)
                }
            };
        }
        Landing::Refused { kind, reason, .. } => return fail(reason, kind, true),
        Landing::Unsecured(reason) => return fail(reason, "unsecured", false),
        Landing::Waiting(text) => {
            let path = ctx.project.commission_path(id);
            let current = crate::artifact::read_regular(&path)?;
            if !current.contains(&text) && content_hash(&current) == update.expect_hash {
                let mut note = Update::new(id, update.expect_hash);
                note.edits.push(Edit::Set("reason".into(), Value::String(text.clone())));
                apply_update(ctx, &note)?;
            }
            return Ok(Outcome::Waiting(text));
        }
    }
    fault("finish", 2);
    // The status first: the work is on the integration branch, and removing a large worktree
    // takes long (10,000 files: most of a finish). A pass killed between the two finds a
    // completed commission with a worktree, and cleans it up (`leftover worktree`).
    let outcome = apply_update(ctx, &done)?;
    fault("finish", 3);
    crate::worker::workspace::remove_worktree(&state, &rec)?;
    let _ = std::fs::remove_dir_all(state.objects());
    Ok(outcome)
}

/// A squash merge that conflicted outside `.lore/`, send-backs left: the work (secured on its
/// branch by the landing) held in review, the paths in its record, `reason:` and timeline; then
/// the worktree removed. The next pass sends it back ([`crate::commission::decide`]). A pass
/// killed before the update merges again (and conflicts again); after it, finds it held.
fn send_conflict_back(
    ctx: &Ctx<'_, Catalog>,
    held: &Update,
    recorded: Option<crate::activity::state::Record>,
    rec: &WorktreeRecord,
    (attempt, paths): (u32, Vec<String>),
    now: &str,
) -> Result<Outcome> {
    let id = &held.id;
    let mut held = held.clone();
    let reason = crate::activity::reason::Reason::Conflicted { paths: paths.clone(), revisions: 0 }.to_string();
    held.edits.retain(|e| !matches!(e, Edit::Set(k, _) if k == "reason"));
    held.edits.push(Edit::Set("reason".into(), Value::String(reason.clone())));
    held.events.push(timeline::event(
        now,
        "conflict",
        format!("conflict:{attempt}"),
        json!({"text": reason, "paths": paths, "attempt": attempt}),
    ));
    let mut record = held.record.clone().or(recorded).context("no record for the conflicting attempt")?;
    record.conflict = Some(crate::activity::state::Conflicted { attempt, paths });
    held.record = Some(record);
    fault("finish", 4);
    let outcome = apply_update(ctx, &held)?;
    if outcome != Outcome::Done {
        return Ok(outcome);
    }
    let state = state_dir(ctx, id);
    crate::worker::workspace::remove_worktree(&state, rec)?;
    let _ = std::fs::remove_dir_all(state.objects());
    Ok(outcome)
}
