//! Reviewer workers' runs over a commission's attempt held in `review`: each in a state dir of
//! its own under the commission's (`review-<attempt>-<n>`), its checkout there too; started
//! ([`crate::worker::reviewer`]) over the attempt's diff against the integration branch, and
//! its checkout removed. What the verdicts mean is `decide::reviewers`'.

use std::path::PathBuf;

use anyhow::Result;

use crate::activity::kind::Ctx;
use crate::activity::state::{RunInfo, StateDir};
use crate::activity::Outcome;
use crate::config::{Home, Project};
use crate::worker::reviewer::{launch_reviewer, ReviewerRun, Subject};
use crate::worker::Catalog;

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
    crate::worker::reviewer::observe_runs(
        home,
        |index| state(home, project, id, attempt, index),
        |rs, index| worktree_path(rs, id, attempt, index),
        boot,
    )
}

/// Start reviewer `index` (`reviewer`) over `attempt`'s work on `branch` (its update written
/// already, and no run recorded yet: [`started`]): its state dir, worktree and prompt, then its
/// process, confined and read-only.
pub(crate) fn start(ctx: &Ctx<'_, Catalog>, id: &str, attempt: u32, index: usize, reviewer: &str, branch: &str) -> Result<()> {
    let rs = state(ctx.home, ctx.project, id, attempt, index);
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
        toolbox: crate::tools::toolbox::instructions(crate::activity::names::ActivityKind::Commission),
    };
    launch_reviewer(ctx, &subject, reviewer)
}

/// Whether reviewer `index`'s run over `attempt` was started already (its shim recorded it,
/// or why it could not start): it is never started twice.
pub(crate) fn started(ctx: &Ctx<'_, Catalog>, id: &str, attempt: u32, index: usize) -> bool {
    let rs = state(ctx.home, ctx.project, id, attempt, index);
    rs.run().exists() || rs.exit().exists()
}

/// Remove reviewer `index`'s worktree (it wrote nothing there: nothing to secure).
pub(crate) fn cleanup(ctx: &Ctx<'_, Catalog>, id: &str, attempt: u32, index: usize, branch: &str) -> Result<Outcome> {
    let rs = state(ctx.home, ctx.project, id, attempt, index);
    let wt = worktree_path(&rs, id, attempt, index);
    crate::worker::reviewer::remove(ctx, &rs, &wt, branch)
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
    crate::worker::reviewer::stop(&state(ctx.home, ctx.project, id, attempt, index), run, leftovers)?;
    cleanup(ctx, id, attempt, index, branch)
}
