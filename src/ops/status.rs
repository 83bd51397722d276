//! `status`: one row a commission (the JSON of `guild-hall status --json`, which the table
//! shows too), then one an artifact that does not parse (its problems in one reason), then
//! one an orphan — produced one at a time, so memory does not grow with the number of
//! artifacts.

use anyhow::Result;
use chrono::{DateTime, Utc};
use serde_json::{json, Value as Json};

use crate::artifact::Status;
use crate::commission::observe::{Observed, Proc};
use crate::config::{Home, Project};

/// Hand each row of the project's commissions (only `id`'s, if given) to `emit`, in order;
/// the number of problems found (invalid artifacts, corrupt runtime state). The first error
/// of `emit` ends it.
pub fn rows(
    home: &Home,
    project: &Project,
    id: Option<&str>,
    now: DateTime<Utc>,
    mut emit: impl FnMut(&Json) -> Result<()>,
) -> Result<usize> {
    let wanted = |p: &std::path::Path| id.is_none_or(|i| p.file_stem().and_then(|s| s.to_str()) == Some(i));
    let problems = artifact_rows(home, project, wanted, None, now, &mut emit)?;
    for o in super::gc::inventory(home, project)? {
        if id.is_none_or(|i| o.kind == crate::activity::kind::Name::Commission && i == o.id) {
            emit(&orphan_row(&o))?;
        }
    }
    Ok(problems)
}

/// The rows of the commissions in `ids` alone (of their artifacts: orphans are not looked
/// for), for a face that follows file events and reads again only what changed (the board).
/// An id whose artifact is gone has no row.
pub fn rows_of(
    home: &Home,
    project: &Project,
    ids: &std::collections::BTreeSet<String>,
    now: DateTime<Utc>,
    mut emit: impl FnMut(&Json) -> Result<()>,
) -> Result<usize> {
    // Their files by name: listing a directory of 10,000 would cost more than reading them.
    let paths: Vec<_> = ids
        .iter()
        .filter(|id| crate::artifact::ids::validate_id(id).is_ok())
        .map(|id| project.commission_path(id))
        .filter(|p| p.is_file() || crate::artifact::is_symlink(p))
        .collect();
    artifact_rows(home, project, |p| p.file_stem().and_then(|s| s.to_str()).is_some_and(|s| ids.contains(s)), Some(&paths), now, &mut emit)
}

/// The rows of the artifacts `wanted` keeps (of `paths` only, if given), in order, then one a
/// problem of those that do not parse; the number of problems.
fn artifact_rows(
    home: &Home,
    project: &Project,
    wanted: impl Fn(&std::path::Path) -> bool,
    paths: Option<&[std::path::PathBuf]>,
    now: DateTime<Utc>,
    emit: &mut impl FnMut(&Json) -> Result<()>,
) -> Result<usize> {
    // Artifacts that do not parse are listed after the others, one row per problem.
    let mut invalid = Vec::new();
    let mut problems = 0usize;
    let mut failed: Option<anyhow::Error> = None;
    let workers = crate::worker::Catalog::discover(&project.root, &home.workers_dir());
    let branch = &project.config.integration_branch;
    let each = |o: Result<crate::commission::observe::Observed, Vec<crate::artifact::Problem>>| {
        if failed.is_some() {
            return;
        }
        match o {
            Ok(o) => {
                problems += usize::from(o.corrupt.is_some());
                if let Err(e) = emit(&row(&o, now, waiting(&o, &workers, branch))) {
                    failed = Some(e);
                }
            }
            Err(ps) => {
                problems += ps.len();
                invalid.extend(ps);
            }
        }
    };
    match paths {
        Some(paths) => crate::commission::observe::observe_paths(home, project, paths, each)?,
        None => crate::commission::observe::observe_each(home, project, &wanted, each)?,
    }
    if let Some(e) = failed {
        return Err(e);
    }
    problems += workers.problems.iter().filter(|p| wanted(&p.path)).count();
    // One row an artifact, its problems in the order of its lines.
    let invalid = super::check::by_file_and_line(invalid);
    for file in invalid.chunk_by(|a, b| a.path == b.path) {
        let stem = file[0].path.file_stem().and_then(|s| s.to_str()).unwrap_or("?");
        emit(
            &json!({"id": stem, "status": "invalid", "reason": invalid_reason(file), "path": file[0].path, "worker": null, "attempt": 0, "branch": null, "progress": null, "result": null}),
        )?;
    }
    Ok(problems)
}

/// The problems of one file, as one reason: the first in full (`path:line:col: message`), the
/// others after it by their place in the file (`line:col: message`), `; ` between.
fn invalid_reason(file: &[crate::artifact::Problem]) -> String {
    let mut said = file[0].to_string();
    for p in &file[1..] {
        said.push_str(&format!("; {}:{}: {}", p.line, p.column, p.message));
    }
    said
}

/// A failed or cancelled commission whose attempt still has processes: what is under way.
fn stopping(o: &Observed) -> Option<String> {
    let verb = match o.artifact.status? {
        crate::artifact::Status::Cancelled => "cancelling",
        crate::artifact::Status::Failed => "failing",
        _ => return None,
    };
    matches!(o.proc, Proc::Alive | Proc::Starting | Proc::Lingering)
        .then(|| o.record.as_ref().and_then(|r| r.stopping.clone()).unwrap_or_else(|| format!("{verb}: worker still running")))
}

/// What a commission still to run here waits for, as the next pass will say it in `reason:`
/// (a cycle is told by the pass and `check`: the rows are read one at a time).
fn waiting(o: &Observed, workers: &crate::worker::Catalog, branch: &str) -> Option<String> {
    still_to_run(o).then(|| crate::commission::decide::waiting(o, workers, branch, None)).flatten()
}

/// A commission this home is still to run, which the pass blocks when it must wait: pending or
/// blocked (not a draft), neither another home's nor ended on the integration branch.
pub(crate) fn still_to_run(o: &Observed) -> bool {
    matches!(o.artifact.status, None | Some(Status::Pending | Status::Blocked)) && o.elsewhere.is_none() && o.integrated.is_none()
}

/// A commission's row, as it is now (`now` for the heartbeat's age; `waiting`: see [`waiting`]).
fn row(o: &Observed, now: DateTime<Utc>, waiting: Option<String>) -> Json {
    let a = &o.artifact;
    let yaml_json = |k: &str| a.field(k).and_then(|v| serde_json::to_value(v).ok()).unwrap_or(Json::Null);
    json!({
        "id": a.id,
        "title": a.title,
        "status": a.status.map(|s| s.as_str()).unwrap_or("pending"),
        "worker": a.worker,
        "attempt": a.attempt(),
        "branch": a.str_field("branch"),
        "progress": a.str_field("progress"),
        "reason": o.corrupt.as_ref().map(|why| format!("corrupt runtime state, nothing is done for it: {why}")).or_else(|| a.str_field("reason").map(str::to_string)),
        // A person's edit that was put back, kept apart from the failure's own reason.
        "refused": a.str_field("refused"),
        "result": yaml_json("result"),
        "questions": yaml_json("questions"),
        "created": a.created(),
        "desired": a.desired.map(|d| d.as_str()),
        "stopping": stopping(o),
        // Still to run, and what it waits for (dependencies, its worker's package).
        "waiting": waiting,
        // Under way in another home, as far as this one knows: what is known, what to do.
        "elsewhere": o.elsewhere.as_ref().map(|e| e.describe()),
        // Ended on the integration branch while the checkout still says it is to run.
        "integrated": o.integrated.as_ref().map(|i| i.describe()),
        "completed": a.str_field("completed"),
        "process": match o.proc { Proc::Alive => "alive", Proc::Starting => "starting", Proc::Lingering => "lingering", Proc::Dead => "exited", Proc::NotStarted => "none" },
        "pid": o.run.as_ref().filter(|_| o.proc == Proc::Alive).map(|r| r.pid),
        // A job its runner holds in a queue: `queued (<the runner's words: which job, why>)`.
        "queued": o.queued.as_ref().filter(|_| o.proc == Proc::Starting).map(|q| format!("queued ({q})")),
        "heartbeat_age_secs": o.heartbeat.as_ref().filter(|_| o.proc == Proc::Alive).map(|h| now.signed_duration_since(h.last_activity).num_seconds()),
        "path": a.path,
    })
}

/// What is left of an artifact that is gone, as a row.
fn orphan_row(o: &super::gc::Orphan) -> Json {
    json!({"id": o.id, "status": "orphaned", "kind": o.kind, "reason": o.describe(), "path": o.artifact, "worker": null, "attempt": 0,
           "branch": o.branches.first().map(|b| b.name.clone()), "progress": null, "result": null})
}
