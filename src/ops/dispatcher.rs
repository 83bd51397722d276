//! The dispatcher API of REQ-WD-5..18 (`dispatch`, `list`, `status`, `result`, `cancel`,
//! `delete`, `meeting_request`) over one project, as [`crate::tools::dispatcher::Operations`]
//! declares it: each writes only what a person could write (through [`super::commission`] and
//! [`super::meeting`]) and leaves the rest to the reconciler. `mcp --manager`, `guild-hall job`
//! and the JSON-RPC endpoint are its faces.

use anyhow::Context;
use serde_yaml_ng::Value;

use super::commission::{create, load, request, NewCommission};
use crate::artifact::ids;
use crate::artifact::write::Edit;
use crate::artifact::{Commission, Status};
use crate::config::{Home, Project};
use crate::tools::dispatcher::{
    Abandon, Abandoned, AnswerQuestion, Answered, Cancelled, Decision, Deleted, Detail, Dispatch, Dispatched, JobResult, JobRow, JobStatus,
    Jobs, List, MeetingRequest, MeetingRequested, OpenQuestion, Operations, Redispatch, Redispatched, Reject, Reviewed, Revise, UsageQuery,
    UsageReport,
};
use crate::tools::{ErrorKind, ToolError};
use crate::worker::Catalog;

fn invalid(msg: impl Into<String>) -> ToolError {
    ToolError::Refused(msg.into())
}

/// The dispatcher API over one project.
pub struct Dispatcher {
    pub home: Home,
    pub project: Project,
}

/// REQ-WD-11's four states from ours.
pub(crate) fn job_status(s: Status) -> &'static str {
    match s {
        Status::Completed => "completed",
        Status::Failed => "failed",
        // Given up for good: to a job's caller, as good as cancelled.
        Status::Cancelled | Status::Abandoned => "cancelled",
        // Nothing runs: it waits for a person (approve, revise, reject).
        Status::Review => "review",
        _ => "running",
    }
}

impl Dispatcher {
    /// A failed, cancelled or abandoned job whose processes are still being stopped: what is
    /// under way.
    /// The reconciler's record says so from its stopping decision until it has seen every
    /// process gone; a live shim says so before the reconciler has carried out the request.
    fn stopping(&self, c: &Commission) -> Option<String> {
        let verb = match c.status? {
            Status::Cancelled => "cancelling",
            Status::Failed => "failing",
            Status::Abandoned => "abandoning",
            _ => return None,
        };
        let state = crate::activity::state::StateDir(self.home.commission_state(&self.project.name, &c.id));
        // An unreadable record is not a settled one: say it may still be stopping.
        let recorded = match crate::files::read_json::<crate::activity::state::Record>(&state.record()) {
            Ok(r) => r.and_then(|r| r.stopping),
            Err(_) => Some(format!("{verb}: runtime record unreadable, processes may still be running")),
        };
        recorded.or_else(|| crate::worker::shim::shim_lock_held(&state).then(|| format!("{verb}: worker still running")))
    }

    /// The job named by a request. A malformed id is invalid arguments, an unknown one not
    /// found (both -32602 on every face, as docs/mcp.md promises; `error.data.kind` tells them
    /// apart); a job that cannot be read is refused (a link, a file that does not parse), or a
    /// fault (an I/O error).
    fn known(&self, job: &str) -> Result<Commission, ToolError> {
        ids::validate_id(job).map_err(|e| ToolError::BadArguments(format!("bad jobId: {e}")))?;
        if !self.project.commission_path(job).exists() {
            return Err(ToolError::NotFound(format!("unknown jobId {job:?}")));
        }
        load(&self.project, job).map_err(|e| ToolError::of(e.context(format!("job {job:?} is unreadable")), ErrorKind::Refused))
    }
}

impl Dispatcher {
    /// A verdict on a job in review, written as a person's would be
    /// ([`super::commission::review`]); refused, nothing written, unless it is in review.
    fn review(&self, job: &str, verdict: &super::commission::Verdict) -> Result<Reviewed, ToolError> {
        let c = self.known(job)?;
        let edits = super::commission::review(&self.project, &c.id, verdict).map_err(|e| ToolError::of(e, ErrorKind::Refused))?;
        let requested = match edits.first() {
            Some(Edit::Set(_, v)) if v.as_str() == Some("approved") => "approved",
            Some(Edit::Set(_, v)) if v.as_str() == Some("revised") => "revised",
            _ => "rejected",
        };
        super::kick(&self.home, &self.project)?;
        Ok(Reviewed { job_id: c.id, requested })
    }
}

/// The dispatcher's operations, as the catalogue ([`crate::tools::dispatcher`]) declares them.
impl Operations for Dispatcher {
    /// `worker/approve {jobId}`.
    fn approve(&self, job: &str) -> Result<Reviewed, ToolError> {
        self.review(job, &super::commission::Verdict::Approve)
    }

    /// `worker/revise {jobId, feedback}`.
    fn revise(&self, req: Revise) -> Result<Reviewed, ToolError> {
        self.review(&req.job_id, &super::commission::Verdict::Revise(req.feedback))
    }

    /// `worker/reject {jobId, message?}`.
    fn reject(&self, req: Reject) -> Result<Reviewed, ToolError> {
        self.review(&req.job_id, &super::commission::Verdict::Reject(req.message))
    }

    /// `worker/abandon {jobId, message?}`.
    fn abandon(&self, req: Abandon) -> Result<Abandoned, ToolError> {
        let c = self.known(&req.job_id)?;
        super::commission::abandon(&self.project, &c.id, req.message.as_deref()).map_err(|e| ToolError::of(e, ErrorKind::Refused))?;
        super::kick(&self.home, &self.project)?;
        Ok(Abandoned { job_id: c.id, requested: "abandoned" })
    }

    /// `worker/redispatch {jobId}`.
    fn redispatch(&self, req: Redispatch) -> Result<Redispatched, ToolError> {
        let c = self.known(&req.job_id)?;
        super::commission::redispatch(&self.project, &c.id).map_err(|e| ToolError::of(e, ErrorKind::Refused))?;
        super::kick(&self.home, &self.project)?;
        Ok(Redispatched { job_id: c.id, requested: "pending" })
    }

    /// `worker/dispatch {description, task, config?}` → `{jobId}`.
    fn dispatch(&self, req: Dispatch) -> Result<Dispatched, ToolError> {
        let config = req.config.unwrap_or_default();
        let worker = match config.worker.or_else(|| self.project.config.default_worker.clone()) {
            Some(w) => w,
            None => return Err(invalid("no worker: set config.worker, or default_worker in .lore/guild-hall.yaml")),
        };
        // An unknown worker is a bad argument (-32602), like an unknown id.
        let catalog = Catalog::discover(&self.project.root, &self.home.workers_dir());
        catalog
            .for_commission(&worker)
            .map_err(|e| ToolError::BadArguments(format!("config.worker: {}", super::commission::unusable(&catalog, &worker, e))))?;
        if config.max_turns == Some(0) {
            return Err(invalid("config.maxTurns must be a positive number"));
        }
        if config.max_budget_usd.is_some_and(|b| b.is_nan() || b <= 0.0) {
            return Err(invalid("config.maxBudgetUsd must be a positive number"));
        }
        if config.max_tokens == Some(0) {
            return Err(invalid("config.maxTokens must be a positive number"));
        }
        // Unique across every job ever dispatched (REQ-WD-7), and filename-safe: a random
        // suffix, since two clones dispatching the same description before they meet must
        // not make one id (and `create` still refuses an id anything holds).
        let short = uuid::Uuid::new_v4().simple().to_string();
        let slug = ids::slugify(&req.description).chars().take(40).collect::<String>();
        let id = format!("{}-{}", slug.trim_end_matches('-'), &short[..8]);
        let new = NewCommission {
            worker,
            title: req.description,
            prompt: req.task,
            id: Some(id),
            max_turns: config.max_turns.map(u64::from),
            max_budget_usd: config.max_budget_usd,
            max_tokens: config.max_tokens,
            ..NewCommission::default()
        };
        let id = create(&self.home, &self.project, &new).map_err(|e| ToolError::of(e, ErrorKind::Refused))?;
        super::kick(&self.home, &self.project)?;
        Ok(Dispatched { job_id: id })
    }

    /// `worker/usage {by?, since?}`.
    fn usage(&self, req: UsageQuery) -> Result<UsageReport, ToolError> {
        super::usage::report(&self.project, req.since.as_deref(), req.by).map_err(|e| ToolError::of(e, ErrorKind::Refused))
    }

    /// `worker/list {detail?, filter?}`: a glob on descriptions.
    fn list(&self, req: List) -> Result<Jobs, ToolError> {
        let detailed = matches!(req.detail, Detail::Detailed);
        let filter = match &req.filter {
            None => None,
            Some(g) => Some(globset::Glob::new(g).map_err(|e| invalid(format!("bad filter glob: {e}")))?.compile_matcher()),
        };
        let mut jobs = Vec::new();
        for path in crate::artifact::paths(&self.project.commissions_dir())? {
            let Ok(text) = crate::artifact::read_regular(&path) else { continue };
            let Ok(c) = Commission::parse(&path, &text) else { continue };
            let description = c.title.clone().unwrap_or_else(|| c.id.clone());
            if filter.as_ref().is_some_and(|g| !g.is_match(&description)) {
                continue;
            }
            let status = job_status(c.status.unwrap_or(Status::Pending));
            let summary = c.owned.progress.clone();
            jobs.push(JobRow {
                job_id: c.id.clone(),
                status,
                description: detailed.then_some(description),
                summary: detailed.then_some(summary),
                stopping: self.stopping(&c),
            });
        }
        Ok(Jobs { jobs })
    }

    /// `worker/status {jobId}`, plus our exact status as `commissionStatus`.
    fn status(&self, job: &str) -> Result<JobStatus, ToolError> {
        let c = self.known(job)?;
        let status = c.status.unwrap_or(Status::Pending);
        let timeline = crate::activity::timeline::read(&crate::activity::timeline::path_for(&c.path))?;
        let decisions: Vec<Decision> = timeline
            .iter()
            .filter(|e| e["kind"] == "decision")
            .map(|e| Decision { question: e["question"].clone(), decision: e["decision"].clone(), reasoning: e["reasoning"].clone() })
            .collect();
        // Logged questions as written; one asked of a person by its text.
        let questions: Vec<String> = match c.field("questions") {
            Some(Value::Sequence(q)) => {
                q.iter().filter_map(|q| q.as_str().or_else(|| q.get("question")?.as_str())).map(str::to_string).collect()
            }
            _ => Vec::new(),
        };
        let open_questions = crate::commission::questions::open_in(&c)
            .into_iter()
            .map(|q| OpenQuestion { number: q.number, question: q.question, asked: q.asked })
            .collect();
        let error = matches!(status, Status::Failed | Status::Cancelled).then(|| c.owned.reason.as_deref()).flatten();
        Ok(JobStatus {
            job_id: c.id.clone(),
            status: job_status(status),
            commission_status: status.as_str(),
            description: c.title.clone().unwrap_or_else(|| c.id.clone()),
            summary: c.owned.progress.clone(),
            questions,
            open_questions,
            decisions,
            error: error.map(str::to_string),
            stopping: self.stopping(&c),
            started_at: c.created().map(str::to_string),
            completed_at: c.owned.completed.clone(),
        })
    }

    /// `worker/result {jobId}`: only for completed jobs.
    fn result(&self, job: &str) -> Result<JobResult, ToolError> {
        let c = self.known(job)?;
        let status = c.status.unwrap_or(Status::Pending);
        // In review the result is what is reviewed: it is given, and the job is not merged yet.
        if !matches!(status, Status::Completed | Status::Review) {
            let why = c.owned.reason.as_deref().map(|r| format!(": {r}")).unwrap_or_default();
            return Err(invalid(format!(
                "job {} is {} ({status}){why}; a result exists only once it is completed or in review",
                c.id,
                job_status(status)
            )));
        }
        let result = c.field("result").cloned().unwrap_or(Value::Null);
        let output = result.get("summary").and_then(Value::as_str).unwrap_or("").to_string();
        let artifacts: Vec<String> = match result.get("artifacts") {
            Some(Value::Sequence(a)) => a.iter().filter_map(Value::as_str).map(str::to_string).collect(),
            _ => Vec::new(),
        };
        Ok(JobResult { job_id: c.id, output, artifacts })
    }

    /// `worker/cancel {jobId}`: idempotent; an ended job just reports its status.
    fn cancel(&self, job: &str) -> Result<Cancelled, ToolError> {
        let c = self.known(job)?;
        let status = c.status.unwrap_or(Status::Pending);
        if status.is_terminal() {
            return Ok(Cancelled { job_id: c.id, status: job_status(status) });
        }
        // The status itself, as a person would edit it: from this moment `status` says
        // cancelled; the reconciler stops the worker and commits its partial work.
        request(&self.project, &c.id, &[Edit::Set("status".into(), Value::from("cancelled"))])?;
        super::kick(&self.home, &self.project)?;
        Ok(Cancelled { job_id: c.id, status: "cancelled" })
    }

    /// `worker/delete {jobId}`: completed or cancelled (and settled) only; removes the artifact,
    /// its timeline, its runtime record and its attempt branches, nothing else. A settled job
    /// has no worktree left.
    fn delete(&self, job: &str) -> Result<Deleted, ToolError> {
        let c = self.known(job)?;
        let status = c.status.unwrap_or(Status::Pending);
        if !matches!(status, Status::Completed | Status::Cancelled | Status::Abandoned) {
            return Err(invalid(format!(
                "job {} is {} ({status}): only completed or cancelled jobs can be deleted",
                c.id,
                job_status(status)
            )));
        }
        let state = crate::activity::state::StateDir(self.home.commission_state(&self.project.name, &c.id));
        // Deleted under the project lock, so that no pass that saw the job writes its state
        // back after it is gone. A one-shot reconciler at work (the one `dispatch`/`cancel`
        // start) is waited for by the caller; a `watch` holds the lock for good and is not
        // excluded here (its passes see the artifact gone soon after).
        let _lock = match crate::reconcile::lock_project(&self.home, &self.project, false, "guild-hall mcp --manager (deleting a job)") {
            Ok(lock) => Some(lock),
            Err(_) if crate::reconcile::lock_holder(&self.home, &self.project).is_some_and(|h| h.starts_with("guild-hall watch")) => None,
            Err(_) => {
                return Err(ToolError::Conflict(format!(
                    "job {} is still winding down (a reconciler is at work); try again shortly",
                    c.id
                )));
            }
        };
        // The reconciler is still stopping its worker or committing its partial results: that
        // is the reconciler's work, not ours to race.
        if self.home.worktree(&self.project.name, &c.id).exists() || crate::worker::shim::shim_lock_held(&state) {
            return Err(ToolError::Conflict(format!(
                "job {} is still winding down (worker stopping or results being committed); try again shortly",
                c.id
            )));
        }
        let repo = crate::activity::git::open(&self.project.root).map_err(anyhow::Error::from)?;
        let attempts =
            c.attempt().max(crate::files::read_json::<crate::activity::state::Record>(&state.record())?.map(|r| r.attempt).unwrap_or(0));
        // Only branches certainly this job's: `<id>` and `<id>+<n>`, and an older guild-hall's
        // `<id>-<n>` only where the artifact records it (it may be commission `<id>-<n>`'s).
        let mut ours: Vec<String> = (1..=attempts).map(|n| crate::activity::names::commission_branch(&c.id, n)).collect();
        if let Some(recorded) =
            c.owned.branch.as_deref().filter(|b| b.starts_with(&crate::activity::names::legacy_commission_prefix(&c.id)))
        {
            ours.push(recorded.to_string());
        }
        for name in ours {
            if let Ok(mut b) = repo.find_branch(&name, git2::BranchType::Local) {
                b.delete().map_err(anyhow::Error::from)?;
            }
        }
        crate::files::remove_if_exists(&crate::activity::timeline::path_for(&c.path))?;
        if state.0.exists() {
            std::fs::remove_dir_all(&state.0).with_context(|| format!("removing {}", state.0.display()))?;
        }
        crate::files::remove_if_exists(&c.path)?;
        Ok(Deleted { job_id: c.id, deleted: true })
    }

    /// `diff {jobId, stat?}`: the change of its latest attempt's branch.
    fn diff(&self, job: &str, detail: crate::activity::diff::Detail) -> Result<crate::activity::diff::Diff, ToolError> {
        let c = self.known(job)?;
        super::diff::of(&self.home, &self.project, &c.id, detail).map_err(|e| ToolError::of(e, ErrorKind::Refused))
    }

    /// `meeting_request {worker, reason, references?, title?}` → `{meetingId}`: the request
    /// artifact a person or a worker would write.
    /// `answer {jobId, text, question?}`: the `answer:` a person would write, then a pass.
    fn answer(&self, req: AnswerQuestion) -> Result<Answered, ToolError> {
        let c = self.known(&req.job_id)?;
        let asked =
            super::commission::answer(&self.project, &c.id, &req.text, req.question).map_err(|e| ToolError::of(e, ErrorKind::Refused))?;
        super::kick(&self.home, &self.project)?;
        Ok(Answered { job_id: c.id, question: asked.number, asked: asked.question, answer: req.text })
    }

    fn meeting_request(&self, req: MeetingRequest) -> Result<MeetingRequested, ToolError> {
        let new = super::meeting::NewMeeting {
            worker: req.worker,
            title: req.title,
            agenda: Some(req.reason),
            references: req.references,
            id: None,
            status: crate::artifact::MeetingStatus::Requested,
            requested_by: Some("manager".into()),
            body: String::new(),
        };
        let id = super::meeting::create(&self.home, &self.project, &new).map_err(|e| ToolError::of(e, ErrorKind::Refused))?;
        Ok(MeetingRequested { meeting_id: id, status: "requested" })
    }
}
