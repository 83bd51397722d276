//! `status`: one row a commission, then one an artifact that does not parse (its problems in
//! one reason), then one an orphan — produced one at a time, so memory does not grow with the
//! number of artifacts. A row is typed ([`StatusRow`]): `status --json` writes it, the table
//! and the board read it.

use std::path::PathBuf;

use anyhow::Result;
use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value as Json;

use crate::artifact::Status;
use crate::commission::observe::{Observed, Proc};
use crate::config::{Home, Project};
pub use crate::worker::ports::PortRange;

/// Hand each row of the project's commissions (only `id`'s, if given) to `emit`, in order;
/// the number of problems found (invalid artifacts, corrupt runtime state). The first error
/// of `emit` ends it.
pub fn rows(
    home: &Home,
    project: &Project,
    id: Option<&str>,
    now: DateTime<Utc>,
    mut emit: impl FnMut(&StatusRow) -> Result<()>,
) -> Result<usize> {
    let wanted = |p: &std::path::Path| id.is_none_or(|i| p.file_stem().and_then(|s| s.to_str()) == Some(i));
    let problems = artifact_rows(home, project, wanted, None, now, &mut emit)?;
    for o in super::gc::inventory(home, project)? {
        if id.is_none_or(|i| o.kind == crate::activity::kind::Name::Commission && i == o.id) {
            emit(&StatusRow::Problem(ProblemRow::orphan(&o)))?;
        }
    }
    Ok(problems)
}

/// The rows of the commissions in `ids` alone (of their artifacts: orphans are not looked
/// for), for a face that follows file events and reads again only what changed (the board).
/// An id whose artifact is gone has no row.
pub(crate) fn rows_of(
    home: &Home,
    project: &Project,
    ids: &std::collections::BTreeSet<String>,
    now: DateTime<Utc>,
    mut emit: impl FnMut(&StatusRow) -> Result<()>,
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
    emit: &mut impl FnMut(&StatusRow) -> Result<()>,
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
                let mut r = row(&o, now, waiting(&o, &workers, branch));
                if o.attempt.under_way() {
                    let state = home.commission_state(&project.name, &o.artifact.id);
                    r.ports = crate::worker::ports::shown(home, &state);
                }
                if let Err(e) = emit(&StatusRow::Commission(Box::new(r))) {
                    failed = Some(e);
                }
            }
            Err(ps) => {
                problems += ps.len();
                invalid.extend(ps);
            }
        }
    };
    let schedules = match paths {
        Some(paths) => crate::commission::observe::observe_paths(home, project, paths, each)?,
        None => crate::commission::observe::observe_each(home, project, &wanted, each)?,
    };
    if let Some(e) = failed {
        return Err(e);
    }
    for (s, ps) in schedules {
        match s {
            Some(s) => emit(&StatusRow::Schedule(Box::new(ScheduleRow::of(&s))))?,
            None => {
                problems += ps.len();
                invalid.extend(ps);
            }
        }
    }
    problems += workers.problems.iter().filter(|p| wanted(&p.path)).count();
    // One row an artifact, its problems in the order of its lines.
    let invalid = super::check::by_file_and_line(invalid);
    for file in invalid.chunk_by(|a, b| a.path == b.path) {
        let stem = file[0].path.file_stem().and_then(|s| s.to_str()).unwrap_or("?");
        emit(&StatusRow::Problem(ProblemRow {
            id: stem.to_string(),
            status: ProblemStatus::Invalid,
            reason: invalid_reason(file),
            path: file[0].path.clone(),
            ..ProblemRow::default()
        }))?;
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

/// A failed, cancelled or abandoned commission whose attempt still has processes: what is
/// under way.
fn stopping(o: &Observed) -> Option<String> {
    let verb = match o.artifact.status? {
        crate::artifact::Status::Cancelled => "cancelling",
        crate::artifact::Status::Failed => "failing",
        crate::artifact::Status::Abandoned => "abandoning",
        _ => return None,
    };
    o.attempt
        .at_work()
        .then(|| o.record.as_ref().and_then(|r| r.stopping.clone()).unwrap_or_else(|| format!("{verb}: worker still running")))
}

/// What a commission still to run here waits for, as the next pass will say it in `reason:`
/// (a cycle is told by the pass and `check`: the rows are read one at a time).
fn waiting(o: &Observed, workers: &crate::worker::Catalog, branch: &str) -> Option<String> {
    // Its worker blocked on a person's answer: what it asked, and how to answer.
    if let Some(q) = crate::commission::questions::open_in(&o.artifact).first() {
        return Some(format!(
            "waiting for you: question {}: {} (`guild-hall answer {} TEXT`)",
            q.number,
            q.question.lines().next().unwrap_or_default(),
            o.artifact.id
        ));
    }
    super::check::still_to_run(o).then(|| crate::commission::decide::waiting(o, workers, branch, None)).flatten()
}

/// One row of `status`: a commission's, or a problem's (an artifact that does not parse, an
/// orphan). Serialized, it is `status --json`'s row: every field's key in the order the JSON
/// always had (alphabetical: the rows were `serde_json` objects), none left out.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum StatusRow {
    Commission(Box<CommissionRow>),
    Problem(ProblemRow),
    /// A scheduled commission (a template): its schedule and next run.
    Schedule(Box<ScheduleRow>),
}

impl StatusRow {
    pub fn id(&self) -> &str {
        match self {
            StatusRow::Commission(c) => &c.id,
            StatusRow::Problem(p) => &p.id,
            StatusRow::Schedule(s) => &s.id,
        }
    }

    /// Its status as `--status` names it: a commission's, a schedule's, `invalid` or `orphaned`.
    pub fn status(&self) -> &'static str {
        match self {
            StatusRow::Commission(c) => c.status.as_str(),
            StatusRow::Problem(p) => p.status.as_str(),
            StatusRow::Schedule(s) => s.status.as_str(),
        }
    }

    /// Its worker (a problem has none).
    pub fn worker(&self) -> Option<&str> {
        match self {
            StatusRow::Commission(c) => Some(&c.worker),
            StatusRow::Problem(_) => None,
            StatusRow::Schedule(s) => Some(&s.worker),
        }
    }
}

/// A scheduled commission's row: `type: scheduled` tells it from a commission's.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScheduleRow {
    pub id: String,
    pub(crate) title: Option<String>,
    #[serde(rename = "type")]
    pub(crate) kind: &'static str,
    pub status: crate::artifact::schedule::ScheduleStatus,
    pub worker: String,
    pub cron: String,
    pub repeat: Option<u32>,
    pub runs_completed: u32,
    pub last_run: Option<String>,
    pub last_spawned_id: Option<String>,
    /// When its next run is due (now, if one is); none once it is not active.
    pub next_run: Option<String>,
    pub(crate) path: PathBuf,
}

impl ScheduleRow {
    fn of(o: &crate::commission::observe::ObservedSchedule) -> ScheduleRow {
        let t = &o.template;
        let s = &t.schedule;
        let at = |t: DateTime<Utc>| crate::activity::timeline::timestamp(t);
        ScheduleRow {
            id: t.id.clone(),
            title: t.title.clone(),
            kind: "scheduled",
            status: t.status,
            worker: t.worker.clone(),
            cron: s.cron.to_string(),
            repeat: s.repeat,
            runs_completed: s.runs_completed,
            last_run: s.last_run.map(at),
            last_spawned_id: s.last_spawned_id.clone(),
            next_run: crate::commission::decide::schedule::next_run(o).map(at),
            path: t.path.clone(),
        }
    }

    /// What the table says of it: its next run, its cron, its count.
    pub fn note(&self) -> String {
        let count = match self.repeat {
            Some(r) => format!("{}/{r} runs", self.runs_completed),
            None => format!("{} runs", self.runs_completed),
        };
        match &self.next_run {
            Some(next) => format!("next run {next} (cron {}, UTC; {count})", self.cron),
            None => format!("cron {} (UTC; {count})", self.cron),
        }
    }
}

/// A commission's row. The fields are declared in the JSON's key order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CommissionRow {
    pub attempt: u32,
    pub(crate) branch: Option<String>,
    pub(crate) completed: Option<String>,
    pub created: Option<String>,
    pub(crate) desired: Option<&'static str>,
    /// Under way in another home, as far as this one knows: what is known, what to do.
    pub elsewhere: Option<String>,
    /// The age of its last heartbeat, while its process is alive.
    pub heartbeat_age_secs: Option<i64>,
    pub(crate) id: String,
    /// Ended on the integration branch while the checkout still says it is to run.
    pub integrated: Option<String>,
    pub(crate) path: PathBuf,
    /// The worker's pid, while it is alive.
    pub(crate) pid: Option<i32>,
    /// The ports its live attempt holds (`workspace.ports`): `{"count": 3, "first": 41000}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ports: Option<PortRange>,
    pub(crate) process: Process,
    pub progress: Option<String>,
    /// `questions:` as written (`null` when absent).
    pub(crate) questions: Json,
    /// A job its runner holds in a queue: `queued (<the runner's words: which job, why>)`.
    pub queued: Option<String>,
    pub reason: Option<String>,
    /// A person's edit that was put back, kept apart from the failure's own reason.
    pub(crate) refused: Option<String>,
    /// `result:` as written (`null` when absent).
    pub(crate) result: Json,
    /// `reviews:` as written: its reviewer workers' verdicts (left out when absent).
    #[serde(skip_serializing_if = "Json::is_null")]
    pub(crate) reviews: Json,
    pub status: Status,
    /// A failed or cancelled commission whose processes are still being stopped: what is
    /// under way.
    pub stopping: Option<String>,
    pub(crate) title: Option<String>,
    /// What its attempts used (`usage:` as written): tokens, and dollars when known.
    pub usage: Option<crate::worker::usage::Usage>,
    /// Still to run, and what it waits for (dependencies, its worker's package); or, at work,
    /// the question its worker waits on a person for.
    pub waiting: Option<String>,
    pub worker: String,
}

impl CommissionRow {
    /// `result.summary`, if the result has one.
    pub fn summary(&self) -> Option<&str> {
        self.result.get("summary").and_then(Json::as_str)
    }

    /// Its reviewer workers' verdicts ([`review_lines`]).
    pub fn review_lines(&self) -> Vec<String> {
        review_lines(&self.reviews)
    }

    /// How many questions it asked.
    pub(crate) fn questions(&self) -> usize {
        self.questions.as_array().map(Vec::len).unwrap_or(0)
    }
}

/// `reviews:` as lines, one a verdict (`picky on attempt 1: changes: summary`), each comment
/// under its verdict as `  path:line: text`.
pub(crate) fn review_lines(reviews: &Json) -> Vec<String> {
    crate::tools::plan::verdict_lines(reviews.as_array().map(Vec::as_slice).unwrap_or_default(), "attempt")
}

/// A commission's process, as the row says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Process {
    Alive,
    Starting,
    Lingering,
    Exited,
    /// Not started (no attempt's shim has recorded it).
    #[serde(rename = "none")]
    NotStarted,
}

impl From<Proc> for Process {
    fn from(p: Proc) -> Process {
        match p {
            Proc::Alive => Process::Alive,
            Proc::Starting => Process::Starting,
            Proc::Lingering => Process::Lingering,
            Proc::Dead => Process::Exited,
            Proc::NotStarted => Process::NotStarted,
        }
    }
}

/// A problem's row: an artifact that does not parse, or what is left of one that is gone. The
/// fields are declared in the JSON's key order; `kind` only for an orphan, the others always
/// (`worker`, `progress` and `result` null).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ProblemRow {
    pub attempt: u32,
    pub(crate) branch: Option<String>,
    pub(crate) id: String,
    /// An orphan's kind (a commission, meeting or plan).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) kind: Option<crate::activity::kind::Name>,
    pub(crate) path: PathBuf,
    pub(crate) progress: Option<String>,
    pub reason: String,
    pub result: Option<Json>,
    pub status: ProblemStatus,
    pub(crate) worker: Option<String>,
}

impl ProblemRow {
    /// What is left of an artifact that is gone, as a row.
    fn orphan(o: &super::gc::Orphan) -> ProblemRow {
        ProblemRow {
            id: o.id.clone(),
            status: ProblemStatus::Orphaned,
            kind: Some(o.kind),
            reason: o.describe(),
            path: o.artifact.clone(),
            branch: o.branches.first().map(|b| b.name.clone()),
            ..ProblemRow::default()
        }
    }
}

/// What a problem's row is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ProblemStatus {
    /// An artifact that does not parse.
    #[default]
    Invalid,
    /// What is left of an artifact that is gone.
    Orphaned,
}

impl ProblemStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ProblemStatus::Invalid => "invalid",
            ProblemStatus::Orphaned => "orphaned",
        }
    }
}

/// A commission's row, as it is now (`now` for the heartbeat's age; `waiting`: see [`waiting`]).
fn row(o: &Observed, now: DateTime<Utc>, waiting: Option<String>) -> CommissionRow {
    let a = &o.artifact;
    let yaml_json = |k: &str| a.field(k).and_then(|v| serde_json::to_value(v).ok()).unwrap_or(Json::Null);
    CommissionRow {
        id: a.id.clone(),
        title: a.title.clone(),
        usage: a.field("usage").and_then(crate::worker::usage::Usage::from_yaml),
        status: a.status.unwrap_or(Status::Pending),
        worker: a.worker.clone(),
        attempt: a.attempt(),
        branch: a.owned.branch.clone(),
        progress: a.owned.progress.clone(),
        reason: o
            .corrupt
            .as_ref()
            .map(|why| format!("corrupt runtime state, nothing is done for it: {why}"))
            .or_else(|| a.owned.reason.clone()),
        refused: a.owned.refused.clone(),
        // In Guild Hall's dialect the result is the body (and its artifacts `linked_artifacts`).
        result: match (yaml_json("result"), &a.dialect) {
            (Json::Null, Some(d)) if !d.body.trim().is_empty() => {
                serde_json::json!({"summary": d.body.trim_end(), "artifacts": yaml_json("linked_artifacts")})
            }
            (r, _) => r,
        },
        reviews: yaml_json("reviews"),
        questions: yaml_json("questions"),
        created: a.created().map(str::to_string),
        desired: a.desired.map(|d| d.as_str()),
        stopping: stopping(o),
        waiting,
        elsewhere: o.elsewhere.as_ref().map(|e| e.describe()),
        integrated: o.integrated.as_ref().map(|i| i.describe()),
        completed: a.owned.completed.clone(),
        process: o.attempt.located.proc.into(),
        pid: o.attempt.located.run.as_ref().filter(|_| o.attempt.located.proc == Proc::Alive).map(|r| r.pid),
        ports: None,
        queued: o.attempt.located.queued.as_ref().filter(|_| o.attempt.located.proc == Proc::Starting).map(|q| format!("queued ({q})")),
        heartbeat_age_secs: o
            .attempt
            .heartbeat
            .as_ref()
            .filter(|_| o.attempt.located.proc == Proc::Alive)
            .map(|h| now.signed_duration_since(h.last_activity).num_seconds()),
        path: a.path.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rows were `serde_json` objects, whose keys are sorted: the typed rows keep every
    /// key, in that order, so `status --json` is byte for byte what it was.
    #[test]
    fn a_row_serializes_as_the_json_object_it_was() {
        let full = CommissionRow {
            attempt: 2,
            branch: Some("b".into()),
            completed: Some("2026-01-01".into()),
            created: Some("2025-12-31".into()),
            desired: Some("retry"),
            elsewhere: Some("e".into()),
            heartbeat_age_secs: Some(-3),
            id: "c".into(),
            integrated: Some("i".into()),
            path: "/p/c.md".into(),
            pid: Some(42),
            ports: Some(PortRange { first: 41000, count: 3 }),
            process: Process::Alive,
            progress: Some("p".into()),
            questions: serde_json::json!(["why?"]),
            queued: Some("q".into()),
            reason: Some("r".into()),
            refused: Some("f".into()),
            result: serde_json::json!({"summary": "s", "artifacts": ["a"]}),
            reviews: Json::Null,
            status: Status::InProgress,
            stopping: Some("s".into()),
            title: Some("t".into()),
            usage: Some(crate::worker::usage::Usage { input_tokens: 1, output_tokens: 2, cached_tokens: 3, usd: None }),
            waiting: Some("w".into()),
            worker: "scribe".into(),
        };
        let empty = CommissionRow {
            branch: None,
            completed: None,
            created: None,
            desired: None,
            elsewhere: None,
            heartbeat_age_secs: None,
            integrated: None,
            pid: None,
            ports: None,
            process: Process::NotStarted,
            progress: None,
            questions: Json::Null,
            queued: None,
            reason: None,
            refused: None,
            result: Json::Null,
            reviews: Json::Null,
            status: Status::Pending,
            stopping: None,
            title: None,
            usage: None,
            waiting: None,
            ..full.clone()
        };
        let invalid = ProblemRow { id: "bad".into(), reason: "bad.md:1:1: no".into(), path: "/p/bad.md".into(), ..ProblemRow::default() };
        let orphan = ProblemRow {
            status: ProblemStatus::Orphaned,
            kind: Some(crate::activity::kind::Name::Meeting),
            branch: Some("claude/meeting/x".into()),
            ..invalid.clone()
        };
        let rows = [
            StatusRow::Commission(Box::new(full)),
            StatusRow::Commission(Box::new(empty)),
            StatusRow::Problem(invalid),
            StatusRow::Problem(orphan),
        ];
        for row in rows {
            let as_object = serde_json::to_value(&row).expect("value");
            assert_eq!(serde_json::to_string_pretty(&row).expect("row"), serde_json::to_string_pretty(&as_object).expect("object"));
        }
    }

    #[test]
    fn each_row_keeps_the_keys_it_always_had() {
        let keys =
            |row: &StatusRow| serde_json::to_value(row).expect("value").as_object().expect("object").keys().cloned().collect::<Vec<_>>();
        let invalid = ProblemRow { id: "bad".into(), ..ProblemRow::default() };
        let problem = ["attempt", "branch", "id", "path", "progress", "reason", "result", "status", "worker"];
        assert_eq!(keys(&StatusRow::Problem(invalid.clone())), problem);
        let orphan = ProblemRow { status: ProblemStatus::Orphaned, kind: Some(crate::activity::kind::Name::Commission), ..invalid };
        let json = serde_json::to_value(StatusRow::Problem(orphan)).expect("value");
        assert_eq!(json["kind"], "commission");
        let said = (json["status"].as_str(), json["attempt"].as_u64(), json["worker"].is_null(), json["result"].is_null());
        assert_eq!(said, (Some("orphaned"), Some(0), true, true));
    }
}
