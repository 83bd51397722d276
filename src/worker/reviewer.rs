//! A reviewer worker's run, for every kind that has reviewers (a commission's attempt, a
//! plan's integrated result): in a state dir of its own, in a worktree detached at a branch's
//! tip that its sandbox lets it read and not write, given a prompt that carries the diff;
//! observed (where its processes stand, the verdict in its own mailbox), judged, started and
//! its checkout removed. What the verdicts mean is each kind's decider's.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::activity::kind::Ctx;
use crate::activity::names::ActivityKind;
use crate::activity::state::{ExitInfo, RunInfo, StateDir};
use crate::activity::worktree;
use crate::activity::Outcome;
use crate::files::write_json;
use crate::worker::launch::{self, Activation, Launch, Prepared};
use crate::worker::liveness::Proc;
use crate::worker::toolbox::mailbox::{self, Cursor, Expect, LineComment, MailBody, Verdict};
use crate::worker::{Catalog, Checkout};

/// The attempt number inside a reviewer's own state dir (one run per dir).
pub(crate) const RUN: u32 = 1;

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
    /// What it used, once it is over (its agent's report, else what it reported itself):
    /// recorded as a `usage` event of the work it reviewed.
    pub(crate) usage: Option<crate::worker::usage::Attempt>,
}

/// A verdict as its reviewer gave it (texts clipped, paths checked where it was read).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Given {
    pub(crate) verdict: Verdict,
    pub(crate) summary: String,
    pub(crate) comments: Vec<LineComment>,
}

/// The reviewer runs whose state dirs `dir_of` names (by index, from 0, up to the first not
/// there), each with its worktree at `worktree_of`.
pub(crate) fn observe_runs(
    home: &crate::config::Home,
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
            usage: None,
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
        let (verdict, reported) = mailbox_of(&rs, run.worktree_exists.then_some(wt.as_path()), last);
        run.verdict = verdict;
        // Over once its exit is recorded, or its process is gone without one (lost). Priced
        // by its package's name as launched (the figures are its own word either way).
        let over = run.corrupt.is_none() && (run.exit.is_some() || run.proc == Proc::Dead);
        if over {
            let package = std::fs::read_to_string(rs.package()).map(|p| p.trim().to_string()).unwrap_or_default();
            run.usage = crate::worker::usage::observe(home, &rs, RUN, over, reported.as_ref(), &package);
        }
        runs.push(run);
    }
    runs
}

/// The first verdict in a reviewer's mailbox, and the usage it reported (`report_usage`),
/// summed.
fn mailbox_of(rs: &StateDir, worktree: Option<&Path>, last: bool) -> (Option<Given>, Option<crate::worker::usage::Reading>) {
    let mut found = None;
    let mut reported = None;
    let expect = Expect { attempt: Some(RUN), worktree, last };
    let read =
        mailbox::read_from(&mailbox::attempt_file(rs, RUN), &mut Cursor::default(), expect, |line| match line.mail.map(|m| m.body) {
            Some(MailBody::Verdict { verdict, summary, comments }) => {
                found.get_or_insert(Given { verdict, summary, comments });
            }
            Some(MailBody::UsageReport(r)) => reported = Some(crate::worker::usage::Reading::add(reported.take(), &r)),
            _ => {}
        });
    match read {
        Ok(_) => (found, reported),
        Err(_) => (None, None),
    }
}

/// A reviewer run's `usage` event, on the timeline of the work it reviewed: `key`, the figures,
/// `reviewer` (and `worker`) naming it, and `fields` (the attempt or round it reviewed).
pub(crate) fn usage_event(
    u: &crate::worker::usage::Attempt,
    reviewer: &str,
    key: String,
    fields: serde_json::Value,
) -> (String, serde_json::Value) {
    let (key, mut event) = u.event_about(reviewer, key, fields);
    event["reviewer"] = reviewer.into();
    (key, event)
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
    /// The toolbox section of its system prompt (a commission's toolbox, from the catalogue).
    pub(crate) toolbox: String,
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
    crate::files::write_atomic(&rs.prompt(), prompt(&subject.what, &subject.task, &subject.diff).as_bytes())?;
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
        toolbox: subject.toolbox.clone(),
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
        shares_memory: false,
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

/// Remove the worktree at `wt` of the reviewer run in `rs`, by its record, and its objects.
pub(crate) fn remove(ctx: &Ctx<'_, Catalog>, rs: &StateDir, wt: &Path, branch: &str) -> Result<Outcome> {
    let rec = worktree::recorded_or_assumed(&rs.worktree(), &ctx.project.root, wt, branch)?;
    worktree::remove_worktree(&rec)?;
    let _ = std::fs::remove_dir_all(rs.objects());
    Ok(Outcome::Done)
}

/// Stop reviewer run `rs` (its run while alive, else what its lost shim left).
pub(crate) fn stop(rs: &StateDir, run: Option<&RunInfo>, leftovers: &[i32]) -> Result<()> {
    if let Some(run) = run {
        crate::worker::runner::stop(rs, RUN, Some(run), crate::worker::shim::Stop::Kill)?;
    }
    if let (Some(run), false) = (rs.read_run().ok().flatten(), leftovers.is_empty()) {
        crate::worker::shim::kill_leftovers(&run, leftovers)?;
    }
    Ok(())
}

/// How one reviewer's run stands, as every kind judges it.
pub(crate) enum Stands<'r> {
    /// Not started yet.
    ToStart,
    /// At work (or starting).
    AtWork(&'r ReviewerRun),
    /// Its shim is gone, processes of it are not.
    Lingering(&'r ReviewerRun),
    /// Over: its verdict, or how it ended without one.
    Over(&'r ReviewerRun, Result<&'r Given, String>),
}

/// Where `run` (none: not started) stands.
pub(crate) fn stands(run: Option<&ReviewerRun>) -> Stands<'_> {
    let Some(r) = run else { return Stands::ToStart };
    if let Some(why) = &r.corrupt {
        return Stands::Over(r, Err(format!("its runtime state cannot be trusted: {why}")));
    }
    match r.proc {
        Proc::Alive | Proc::Starting => Stands::AtWork(r),
        Proc::Lingering => Stands::Lingering(r),
        // A run with a record neither started nor recorded how it ended: a pass killed between
        // its state dir and its start; started again.
        Proc::NotStarted if r.exit.is_none() && r.run.is_none() => Stands::ToStart,
        Proc::NotStarted | Proc::Dead => match (&r.verdict, &r.exit) {
            (Some(v), _) => Stands::Over(r, Ok(v)),
            (None, Some(x)) if x.clean() => Stands::Over(r, Err("it ended without submitting one".into())),
            (None, Some(x)) => Stands::Over(r, Err(x.describe())),
            (None, None) => Stands::Over(r, Err("its process was lost without recording how it ended".into())),
        },
    }
}
