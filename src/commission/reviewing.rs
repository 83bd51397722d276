//! Reviewer workers' runs over a commission's attempt held in `review`: each in a state dir of
//! its own under the commission's (`review-<attempt>-<n>`), in a detached worktree at the
//! branch's tip that its sandbox lets it read but not write, given a prompt that carries the
//! diff. Observed here (where its processes stand, the verdict in its mailbox), started and
//! cleaned up here; what the verdicts mean is `decide::reviewers`'.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::activity::kind::Ctx;
use crate::activity::names::ActivityKind;
use crate::activity::state::{ExitInfo, RunInfo, StateDir};
use crate::activity::worktree;
use crate::activity::Outcome;
use crate::commission::observe::Proc;
use crate::config::{Home, Project};
use crate::files::write_json;
use crate::worker::launch::{self, Activation, Launch, Prepared};
use crate::worker::toolbox::mailbox::{self, Cursor, Expect, LineComment, MailBody, Verdict};
use crate::worker::{Catalog, Checkout};

/// The attempt number inside a reviewer's own state dir (one run per dir).
const RUN: u32 = 1;

/// The most bytes of the diff a reviewer's prompt carries; past it, the prompt says how to read
/// the rest in its worktree.
const DIFF_MAX: usize = 256 * 1024;

/// One reviewer's run over an attempt, as observed.
#[derive(Debug, Clone)]
pub(crate) struct ReviewerRun {
    /// Its place in the commission's `reviewers:`.
    pub(crate) index: usize,
    pub(crate) proc: Proc,
    pub(crate) run: Option<RunInfo>,
    pub(crate) exit: Option<ExitInfo>,
    /// With [`Proc::Lingering`]: its processes still alive.
    pub(crate) leftovers: Vec<i32>,
    /// The verdict it submitted (the first; a second is refused by its toolbox).
    pub(crate) verdict: Option<Given>,
    /// Its worktree is still there.
    pub(crate) worktree_exists: bool,
    /// Its runtime files cannot be trusted (why): it counts as ended without a verdict, and
    /// nothing is signalled by them.
    pub(crate) corrupt: Option<String>,
}

/// A verdict as its reviewer gave it (texts clipped, paths checked where it was read).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Given {
    pub(crate) verdict: Verdict,
    pub(crate) summary: String,
    pub(crate) comments: Vec<LineComment>,
}

/// The state dir of reviewer `index`'s run over `attempt` of commission `id`.
pub(crate) fn state(home: &Home, project: &Project, id: &str, attempt: u32, index: usize) -> StateDir {
    StateDir(home.commission_state(&project.name, id).join(format!("review-{attempt}-{index}")))
}

/// Its worktree: in its state dir (which no worker but it reads), named uniquely in the
/// repository's worktree admin dirs.
fn worktree_path(state: &StateDir, id: &str, attempt: u32, index: usize) -> PathBuf {
    state.0.join(format!("review-{id}-{attempt}-{index}"))
}

/// The runs of `attempt`'s reviewers that were started, in order.
pub(crate) fn observe(home: &Home, project: &Project, id: &str, attempt: u32, boot: &str) -> Vec<ReviewerRun> {
    observe_runs(|index| state(home, project, id, attempt, index), |rs, index| worktree_path(rs, id, attempt, index), boot)
}

/// The reviewer runs whose state dirs `dir_of` names (by index, from 0, up to the first not
/// there), each with its worktree at `worktree_of`.
pub(crate) fn observe_runs(
    dir_of: impl Fn(usize) -> StateDir,
    worktree_of: impl Fn(&StateDir, usize) -> PathBuf,
    boot: &str,
) -> Vec<ReviewerRun> {
    let mut runs = Vec::new();
    for index in 0.. {
        let rs = dir_of(index);
        if !rs.0.is_dir() {
            break;
        }
        let wt = worktree_of(&rs, index);
        let mut run = ReviewerRun {
            index,
            proc: Proc::NotStarted,
            run: None,
            exit: None,
            leftovers: Vec::new(),
            verdict: None,
            worktree_exists: std::fs::symlink_metadata(&wt).is_ok(),
            corrupt: None,
        };
        match crate::worker::liveness::attempt(&rs, RUN, boot) {
            Ok(a) => {
                run.proc = a.proc;
                run.run = a.run;
                run.exit = a.exit;
                run.leftovers = a.leftovers;
            }
            Err(why) => run.corrupt = Some(why.to_string()),
        }
        let last = matches!(run.proc, Proc::Dead | Proc::NotStarted);
        run.verdict = verdict(&rs, run.worktree_exists.then_some(wt.as_path()), last);
        runs.push(run);
    }
    runs
}

/// The first verdict in a reviewer's mailbox.
fn verdict(rs: &StateDir, worktree: Option<&Path>, last: bool) -> Option<Given> {
    let mut found = None;
    let expect = Expect { attempt: Some(RUN), worktree, last };
    let read = mailbox::read_from(&mailbox::attempt_file(rs, RUN), &mut Cursor::default(), expect, |line| {
        if let Some(MailBody::Verdict { verdict, summary, comments }) = line.mail.map(|m| m.body) {
            found.get_or_insert(Given { verdict, summary, comments });
        }
    });
    read.ok().and(found)
}

/// Start reviewer `index` (`reviewer`) over `attempt`'s work on `branch`, once: its update
/// written first (the event that it started), then its state dir, worktree and prompt, then
/// its process, confined and read-only. A run that has a record already is not started again.
pub(crate) fn start(
    ctx: &Ctx<'_, Catalog>,
    update: &crate::commission::decide::Update,
    attempt: u32,
    index: usize,
    reviewer: &str,
    branch: &str,
) -> Result<Outcome> {
    let id = &update.id;
    let rs = state(ctx.home, ctx.project, id, attempt, index);
    let started = rs.run().exists() || rs.exit().exists();
    let outcome = crate::commission::act::apply_update(ctx, update)?;
    if outcome != Outcome::Done || started {
        return Ok(outcome);
    }
    crate::activity::fault("review", 1);
    let repo = crate::activity::git::open(&ctx.project.root)?;
    let diff = crate::activity::diff::between(&repo, ctx.integration(), id, branch, crate::activity::diff::Detail::Patch)?;
    let path = ctx.project.commission_path(id);
    let commission = crate::artifact::read_regular(&path).ok().and_then(|text| crate::artifact::Commission::parse(&path, &text).ok());
    let subject = Subject {
        worktree: worktree_path(&rs, id, attempt, index),
        rs,
        id,
        branch,
        diff,
        task: commission.as_ref().map(|c| c.body.trim().to_string()).unwrap_or_default(),
        what: format!("attempt {attempt} of commission {id}"),
        reviewed: attempt,
    };
    launch_reviewer(ctx, &subject, reviewer)?;
    Ok(Outcome::Done)
}

/// What one reviewer run reviews, and where it runs.
pub(crate) struct Subject<'a> {
    /// Its state dir.
    pub(crate) rs: StateDir,
    /// Its worktree (its file name unique among the repository's worktrees).
    pub(crate) worktree: PathBuf,
    /// The activity's id (its `GUILD_HALL_ID`).
    pub(crate) id: &'a str,
    /// The branch whose tip it reads, detached.
    pub(crate) branch: &'a str,
    pub(crate) diff: crate::activity::diff::Diff,
    /// What the work was asked to do.
    pub(crate) task: String,
    /// What is reviewed, in words (`attempt 2 of commission c`).
    pub(crate) what: String,
    /// The attempt (or a plan's round) reviewed (`GUILD_HALL_REVIEWED_ATTEMPT`).
    pub(crate) reviewed: u32,
}

/// Its state dir, worktree and prompt made, the reviewer started confined and read-only (or
/// refused, its `exit.json` saying why: a run that then counts as one without a verdict).
pub(crate) fn launch_reviewer(ctx: &Ctx<'_, Catalog>, subject: &Subject<'_>, reviewer: &str) -> Result<()> {
    let rs = &subject.rs;
    std::fs::create_dir_all(&rs.0).with_context(|| format!("creating {}", rs.0.display()))?;
    mailbox::make_fresh(rs, RUN)?;
    let activation = ctx.workers.for_commission(reviewer).and_then(|pkg| pkg.resolve_command().map(|argv| (pkg, argv)));
    let (pkg, argv) = match activation {
        Ok(v) => v,
        Err(why) => return launch::refuse(rs, RUN, &format!("reviewer {reviewer}: {why}")),
    };
    let rec = worktree::add_worktree(&ctx.project.root, &subject.worktree, subject.branch, pkg.manifest.checkout == Checkout::Sparse)?;
    write_json(&rs.worktree(), &rec)?;
    std::fs::write(rs.prompt(), prompt(&subject.what, &subject.task, &subject.diff))?;
    crate::activity::fault("review", 2);
    let activation = Activation {
        home: ctx.home,
        project: ctx.project,
        pkg,
        kind: ActivityKind::Commission,
        id: subject.id,
        state: rs,
        worktree: &rec,
        attempt: RUN,
        toolbox: crate::tools::toolbox::instructions(ActivityKind::Commission),
        prompt_extra: ROLE.to_string(),
        argv,
        env: vec![
            ("GUILD_HALL_PROMPT_FILE".to_string(), rs.prompt().to_string_lossy().into_owned()),
            ("GUILD_HALL_REVIEWER".to_string(), reviewer.to_string()),
            ("GUILD_HALL_REVIEWED_ATTEMPT".to_string(), subject.reviewed.to_string()),
            ("GUILD_HALL_SESSION_ID".to_string(), String::new()),
            ("GUILD_HALL_CAPABILITIES".to_string(), String::new()),
        ],
        readable: Vec::new(),
        resources: Default::default(),
        grace_cap: None,
        runner: None,
        timeout: None,
        checks: Vec::new(),
    };
    match launch::prepare(Launch::Worker(activation))? {
        Prepared::Ready(ready) => match ready.read_only(&rec) {
            Some(ready) => ready.start()?,
            None => launch::refuse(
                rs,
                RUN,
                &format!("reviewer {reviewer} would run unconfined (its sandbox: off, or Landlock is not available): a reviewer runs confined, read-only"),
            )?,
        },
        Prepared::Refused(_) => {}
    }
    Ok(())
}

/// What a reviewer is told besides the toolbox.
const ROLE: &str = "## You are a reviewer\n\nYou review another worker's change; you do not change anything. Your working directory is a read-only checkout of the work at its branch's tip. Read the change (it is in your prompt), look at the code around it, run read-only commands if it helps, then give your verdict once with submit_result: `verdict: approve` if the work may go on as it is, or `verdict: changes` with a comment for each thing to change (shell: `\"$GUILD_HALL_BIN\" toolbox submit-result --verdict changes --comment 'src/lib.rs:42 handle the empty input' SUMMARY`). Your comments go back to the worker as its feedback.\n";

/// The reviewer's prompt: the task the work was for, and its diff against the integration
/// branch (bounded).
fn prompt(what: &str, task: &str, diff: &crate::activity::diff::Diff) -> String {
    let mut out = format!(
        "Review {what}: its change on {} (from {} to {}).\n\n## The task it was given\n\n{task}\n\n## Its change\n\n{}\n\n```diff\n",
        diff.branch,
        short(&diff.base),
        short(&diff.tip),
        diff.stat(80).join("\n"),
    );
    let mut cut = false;
    for (_, line) in diff.lines() {
        if out.len() + line.len() > DIFF_MAX {
            cut = true;
            break;
        }
        out.push_str(line);
        out.push('\n');
    }
    out.push_str("```\n");
    if cut {
        out.push_str(&format!(
            "\n(The change is longer than this prompt holds: read the rest with `git diff {} HEAD` in your working directory.)\n",
            diff.base
        ));
    }
    out.push_str("\nGive your verdict with submit_result: verdict approve, or changes with comments PATH:LINE TEXT.\n");
    out
}

fn short(commit: &str) -> &str {
    commit.get(..12).unwrap_or(commit)
}

/// Remove reviewer `index`'s worktree (it wrote nothing there: nothing to secure).
pub(crate) fn cleanup(ctx: &Ctx<'_, Catalog>, id: &str, attempt: u32, index: usize, branch: &str) -> Result<Outcome> {
    let rs = state(ctx.home, ctx.project, id, attempt, index);
    let wt = worktree_path(&rs, id, attempt, index);
    remove(ctx, &rs, &wt, branch)
}

/// Remove the worktree at `wt` of the reviewer run in `rs`, by its record, and its objects.
pub(crate) fn remove(ctx: &Ctx<'_, Catalog>, rs: &StateDir, wt: &Path, branch: &str) -> Result<Outcome> {
    let rec = worktree::recorded_or_assumed(&rs.worktree(), &ctx.project.root, wt, branch)?;
    worktree::remove_worktree(&rec)?;
    let _ = std::fs::remove_dir_all(rs.objects());
    Ok(Outcome::Done)
}

/// Reviewer `index` no longer waited for: its processes killed (its run while alive, else what
/// its lost shim left), then its worktree removed.
pub(crate) fn drop(
    ctx: &Ctx<'_, Catalog>,
    id: &str,
    attempt: u32,
    index: usize,
    branch: &str,
    run: Option<&RunInfo>,
    leftovers: &[i32],
) -> Result<Outcome> {
    let rs = state(ctx.home, ctx.project, id, attempt, index);
    if let Some(run) = run {
        crate::worker::runner::stop(&rs, RUN, Some(run), crate::worker::shim::Stop::Kill)?;
    }
    if let (Some(run), false) = (rs.read_run().ok().flatten(), leftovers.is_empty()) {
        crate::worker::shim::kill_leftovers(&run, leftovers)?;
    }
    cleanup(ctx, id, attempt, index, branch)
}
