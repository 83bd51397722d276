//! The planner: a pure function from a [`Snapshot`] to the [`Action`]s that move the world
//! toward what the artifacts ask for. No I/O, deterministic order. It owns the state machine
//! (REQ-COM-5/6 plus `draft`), intent handling (`desired:`, direct `status:` edits),
//! dependencies, limits and FIFO, exit classification and heartbeat judgement.

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{json, Value as Json};
use serde_yaml_ng::Value;

use crate::artifact::write::Edit;
use crate::artifact::{Desired, Status};
use crate::config::DispatchMode;
use crate::observe::{Observed, Proc, Snapshot};
use crate::runtime::{Heartbeat, Record, RunInfo};
use crate::toolbox::mailbox::MailBody;

/// A change to one artifact: timeline events, then the runtime record, then the frontmatter.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Update {
    pub id: String,
    /// The artifact's content hash when observed: the write is dropped if it changed.
    pub expect_hash: u64,
    pub edits: Vec<Edit>,
    pub record: Option<Record>,
    pub events: Vec<Json>,
}

impl Update {
    fn is_empty(&self) -> bool {
        self.edits.is_empty() && self.record.is_none() && self.events.is_empty()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Sig {
    Term,
    Kill,
}

/// One effect. Each is idempotent: carrying it out twice, or half and then again, converges.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum Action {
    /// Rewrite owned keys / record / timeline.
    Update(Update),
    /// Mark dispatched (unless resuming), then branch, worktree and the worker under the shim.
    Dispatch { update: Update, attempt: u32, branch: String, worker: String, resume: bool },
    /// Ask the current attempt's shim to stop every process of the attempt.
    Signal { id: String, run: RunInfo, signal: Sig, update: Update },
    /// The shim is gone but processes of its attempt are not: kill them (nothing else).
    KillLeftovers { id: String, run: RunInfo, pids: Vec<i32> },
    /// Completion: commit leftovers, squash-merge, remove the worktree, then `update`; on a
    /// conflict outside `.lore/`, `conflict` (a failure) instead, its reason naming the paths.
    Finish { update: Update, conflict: Update, attempt: u32, branch: String, summary: String },
    /// Failure/cancellation aftermath: commit partial results, remove the worktree.
    Cleanup { id: String, attempt: u32, branch: String, why: String },
    /// Remember the latest signs of life.
    Heartbeat { id: String, beat: Heartbeat },
}

impl Action {
    pub fn id(&self) -> &str {
        match self {
            Action::Update(u) | Action::Dispatch { update: u, .. } | Action::Finish { update: u, .. } => &u.id,
            Action::Signal { id, .. } | Action::KillLeftovers { id, .. } | Action::Cleanup { id, .. } | Action::Heartbeat { id, .. } => id,
        }
    }

    /// Short human description.
    pub fn describe(&self) -> String {
        let status = |u: &Update| {
            u.edits.iter().find_map(|e| match e {
                Edit::Set(k, v) if k == "status" => v.as_str().map(str::to_string),
                _ => None,
            })
        };
        match self {
            Action::Update(u) => {
                let mut parts: Vec<String> = status(u).map(|s| format!("status -> {s}")).into_iter().collect();
                for e in &u.edits {
                    let text = |v: &Value| v.as_str().unwrap_or("").lines().next().unwrap_or("").to_string();
                    match e {
                        Edit::Set(k, v) if k == "progress" => parts.push(format!("progress: {}", text(v))),
                        Edit::Set(k, _) if k == "result" => parts.push("result submitted".into()),
                        Edit::Set(k, _) if k == "questions" => parts.push("question logged".into()),
                        Edit::Set(k, v) if k == "reason" && status(u).is_none() => parts.push(text(v)),
                        Edit::Remove(k) if k == "desired" => parts.push("request consumed".into()),
                        _ => {}
                    }
                }
                if parts.is_empty() {
                    parts.push(if u.events.is_empty() { "record".into() } else { format!("{} timeline events", u.events.len()) });
                }
                parts.join("; ")
            }
            Action::Dispatch { attempt, branch, worker, resume, .. } => {
                format!("{} attempt {attempt} on {branch} (worker {worker})", if *resume { "resume dispatch" } else { "dispatch" })
            }
            Action::Signal { signal: Sig::Term, run, .. } => format!("stop the attempt: SIGTERM to its processes (shim pid {})", run.pid),
            Action::Signal { signal: Sig::Kill, run, .. } => format!("stop the attempt: SIGKILL to its processes (shim pid {})", run.pid),
            Action::KillLeftovers { pids, .. } => format!("kill {} process(es) the lost shim left behind", pids.len()),
            Action::Finish { branch, .. } => format!("complete: squash-merge {branch}"),
            Action::Cleanup { branch, why, .. } => format!("clean up ({why}): keep {branch}, remove worktree"),
            Action::Heartbeat { .. } => "heartbeat".into(),
        }
    }

    pub fn kind(&self) -> &'static str {
        match self {
            Action::Update(_) => "update",
            Action::Dispatch { .. } => "dispatch",
            Action::Signal { .. } => "signal",
            Action::KillLeftovers { .. } => "kill_leftovers",
            Action::Finish { .. } => "finish",
            Action::Cleanup { .. } => "cleanup",
            Action::Heartbeat { .. } => "heartbeat",
        }
    }
}

/// The planner's answer.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    pub actions: Vec<Action>,
    /// Nothing is running or can start without outside help: `--wait` may stop.
    pub settled: bool,
    /// Commissions that keep it from being settled (running, starting, or queued to run).
    pub busy: Vec<String>,
}

/// Transitions a person (or tool) may request by editing `status:` (DESIGN §4).
pub fn person_may_request(from: Status, to: Status) -> bool {
    use Status::*;
    matches!(
        (from, to),
        (Draft, Pending) | (Failed, Pending) | (Cancelled, Pending) | (Pending | Blocked | Dispatched | InProgress, Cancelled)
    )
}

/// The state machine's transitions the reconciler itself makes (REQ-COM-6, plus draft).
pub fn transition_allowed(from: Status, to: Status) -> bool {
    use Status::*;
    person_may_request(from, to)
        || matches!(
            (from, to),
            (Pending, Dispatched)
                | (Pending, Blocked)
                | (Blocked, Pending)
                | (Dispatched, InProgress)
                | (Dispatched, Failed)
                | (InProgress, Completed)
                | (InProgress, Failed)
                | (Dispatched, Completed)
        )
}

/// `claude/commission/<id>`, then `claude/commission/<id>+<attempt>` from the second attempt
/// on: `+` cannot appear in an id, so no attempt's branch is ever another commission's (with
/// `-`, attempt 2 of `job` would be commission `job-2`'s branch).
pub fn branch_name(id: &str, attempt: u32) -> String {
    if attempt <= 1 {
        format!("claude/commission/{id}")
    } else {
        format!("claude/commission/{id}+{attempt}")
    }
}

/// The branch of an attempt already under way: an older guild-hall named attempt `n` of `id`
/// `claude/commission/<id>-<n>`; when the artifact records that name, it is kept.
pub fn attempt_branch(o: &Observed, attempt: u32) -> String {
    let legacy = format!("claude/commission/{}-{attempt}", o.artifact.id);
    if attempt > 1 && o.artifact.str_field("branch") == Some(legacy.as_str()) {
        legacy
    } else {
        branch_name(&o.artifact.id, attempt)
    }
}

/// Timestamps as written everywhere (artifact and timeline): RFC 3339, UTC, milliseconds.
pub fn timestamp(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// Builds one commission's update as the planner reasons about it.
#[derive(Clone)]
struct Step<'a> {
    o: &'a Observed,
    now: String,
    update: Update,
    /// The status as the reconciler now holds it.
    status: Status,
    /// What the record should say (written only if it differs from the observed one).
    record: Record,
}

impl<'a> Step<'a> {
    fn new(o: &'a Observed, now: &str) -> Step<'a> {
        let status = o.record.as_ref().map(|r| r.status).or(o.artifact.status).unwrap_or(Status::Pending);
        let record =
            o.record.clone().unwrap_or(Record { status, prev: None, attempt: o.artifact.attempt(), term_sent_at: None, created: None });
        Step {
            o,
            now: now.to_string(),
            update: Update { id: o.artifact.id.clone(), expect_hash: o.artifact.hash, edits: Vec::new(), record: None, events: Vec::new() },
            status,
            record,
        }
    }

    fn set(&mut self, key: &str, value: Value) {
        if self.o.artifact.field(key) != Some(&value) || self.update.edits.iter().any(|e| matches!(e, Edit::Remove(k) if k == key)) {
            self.update.edits.retain(|e| !matches!(e, Edit::Set(k, _) | Edit::Remove(k) if k == key));
            self.update.edits.push(Edit::Set(key.into(), value));
        }
    }

    fn remove(&mut self, key: &str) {
        self.update.edits.retain(|e| !matches!(e, Edit::Set(k, _) | Edit::Remove(k) if k == key));
        if self.o.artifact.field(key).is_some() {
            self.update.edits.push(Edit::Remove(key.into()));
        }
    }

    fn event(&mut self, kind: &str, key: String, fields: Json) {
        self.update.events.push(crate::timeline::event(&self.now, kind, key, fields));
    }

    /// Move to `to`, recording why. `reason` goes into the artifact for failures and cancels.
    fn go(&mut self, to: Status, reason: &str) {
        let from = self.status;
        let attempt = self.record.attempt;
        self.event(
            "status",
            format!("status:{attempt}:{from}:{to}"),
            json!({"from": from.as_str(), "to": to.as_str(), "reason": reason, "attempt": attempt}),
        );
        self.status = to;
        self.record.prev = self.o.artifact.status;
        self.record.status = to;
        let reason_planned = self.update.edits.iter().any(|e| matches!(e, Edit::Set(k, _) if k == "reason"));
        if matches!(to, Status::Failed | Status::Cancelled | Status::Blocked) && !reason.is_empty() {
            self.set("reason", Value::String(reason.into()));
        } else if !reason_planned {
            // A stale reason goes; one written in this same step (a refusal) stays visible.
            self.remove("reason");
        }
    }

    /// Refuse a request: the status is put back and `reason:` says why.
    fn refuse(&mut self, request: &str, why: &str) {
        let text = format!("refused {request}: {why}");
        self.event("refused", format!("refused:{}:{}:{request}", self.record.attempt, self.o.artifact.hash), json!({"text": text}));
        self.set("reason", Value::String(text));
    }

    fn has_result(&self) -> bool {
        self.result().is_some()
    }

    fn result(&self) -> Option<(&'a str, &'a [String])> {
        let attempt = self.record.attempt;
        self.o.mail.iter().rev().find_map(|m| match &m.body {
            MailBody::Result { summary, artifacts } if m.attempt == attempt => Some((summary.as_str(), artifacts.as_slice())),
            _ => None,
        })
    }

    /// Fold mailbox events into timeline events and the artifact's progress/questions/result.
    fn fold_mail(&mut self) {
        let o = self.o;
        let mut progress = None;
        let mut questions = Vec::new();
        for m in &o.mail {
            match &m.body {
                MailBody::Progress { text } => progress = Some(text.clone()),
                MailBody::Question { text } => questions.push(Value::String(text.clone())),
                _ => {}
            }
            if o.timeline_keys.contains(&m.id) {
                continue;
            }
            let mut fields = serde_json::to_value(&m.body).unwrap_or(Json::Null);
            if let Json::Object(f) = &mut fields {
                f.remove("kind");
                f.insert("attempt".into(), m.attempt.into());
            }
            let kind = match &m.body {
                MailBody::Progress { .. } => "progress",
                MailBody::Question { .. } => "question",
                MailBody::Decision { .. } => "decision",
                MailBody::Result { .. } => "result",
                MailBody::Memory { .. } => "memory",
            };
            self.update.events.push(crate::timeline::event(&m.ts, kind, m.id.clone(), fields));
            if let MailBody::Result { artifacts, .. } = &m.body {
                for a in artifacts {
                    self.update.events.push(crate::timeline::event(&m.ts, "artifact", format!("{}:{a}", m.id), json!({"path": a})));
                }
            }
        }
        if let Some(p) = progress {
            self.set("progress", Value::String(p));
        }
        if !questions.is_empty() {
            self.set("questions", Value::Sequence(questions));
        }
        if let Some((summary, artifacts)) = self.result() {
            self.set("result", result_value(summary, artifacts));
        }
    }

    fn finish(mut self) -> Update {
        // Merely reading a settled artifact (one from a fresh clone, say) creates no record;
        // everything else is recorded so that later status edits are validated against it.
        let adopted_unchanged = self.o.record.is_none()
            && self.status.is_terminal()
            && self.update.events.is_empty()
            && self.record.attempt == self.o.artifact.attempt();
        if Some(&self.record) != self.o.record.as_ref() && !adopted_unchanged {
            self.update.record = Some(self.record.clone());
        }
        // Only the final status is written, whatever the step passed through.
        self.update.edits.retain(|e| !matches!(e, Edit::Set(k, _) if k == "status"));
        if self.o.artifact.status != Some(self.status) {
            self.update.edits.push(Edit::Set("status".into(), Value::String(self.status.as_str().into())));
        }
        self.update
    }
}

fn result_value(summary: &str, artifacts: &[String]) -> Value {
    let mut m = serde_yaml_ng::Mapping::new();
    m.insert("summary".into(), Value::String(summary.into()));
    m.insert("artifacts".into(), Value::Sequence(artifacts.iter().map(|a| Value::String(a.clone())).collect()));
    Value::Mapping(m)
}

/// What one commission needs beyond its update.
enum Effect {
    None,
    Candidate { wants: bool },
    Resume,
    Finish,
    Cleanup(&'static str),
    Signal(Sig),
    KillLeftovers,
    Beat(Heartbeat),
}

/// Plan one pass.
pub fn plan(s: &Snapshot) -> Plan {
    let now = timestamp(s.now);
    let cfg = &s.project.config;
    let mut actions = Vec::new();
    let mut candidates = Vec::new();
    let mut running = s.running_orphans;
    let mut busy = Vec::new();

    let cycles = dependency_cycles(s);
    for o in &s.commissions {
        if o.corrupt.is_some() {
            // Its worker may be alive for all we know: it keeps its slot, and nothing is done.
            running += 1;
            continue;
        }
        let (step, effect) = plan_one(s, o, &now, &cycles);
        if step.status.is_active() || matches!(o.proc, Proc::Alive | Proc::Starting | Proc::Lingering) {
            running += 1;
            busy.push(o.artifact.id.clone());
        }
        match effect {
            Effect::Candidate { wants } => {
                if cfg.dispatch == DispatchMode::Auto || wants {
                    busy.push(o.artifact.id.clone());
                    candidates.push(step);
                } else {
                    push_update(&mut actions, step.finish());
                }
                continue;
            }
            Effect::None => push_update(&mut actions, step.finish()),
            Effect::Resume => {
                let attempt = step.record.attempt;
                actions.push(Action::Dispatch {
                    branch: attempt_branch(o, attempt),
                    worker: o.artifact.worker.clone(),
                    attempt,
                    resume: true,
                    update: step.finish(),
                });
            }
            Effect::Finish => {
                let attempt = step.record.attempt;
                let (summary, artifacts) = step.result().unwrap_or(("", &[]));
                let mut conflict = step.clone();
                conflict.go(Status::Failed, "the attempt's work could not be merged");
                let mut done = step;
                done.go(Status::Completed, "worker submitted its result");
                let mut linked: Vec<Value> = match o.artifact.field("linked_artifacts") {
                    Some(Value::Sequence(v)) => v.clone(),
                    _ => Vec::new(),
                };
                for a in artifacts {
                    if !linked.iter().any(|l| l.as_str() == Some(a)) {
                        linked.push(Value::String(a.clone()));
                    }
                }
                if !linked.is_empty() {
                    done.set("linked_artifacts", Value::Sequence(linked));
                }
                done.set("completed", Value::String(now.clone()));
                actions.push(Action::Finish {
                    branch: attempt_branch(o, attempt),
                    attempt,
                    summary: summary.to_string(),
                    update: done.finish(),
                    conflict: conflict.finish(),
                });
            }
            Effect::Cleanup(why) => {
                let attempt = step.record.attempt;
                push_update(&mut actions, step.finish());
                actions.push(Action::Cleanup { id: o.artifact.id.clone(), attempt, branch: attempt_branch(o, attempt), why: why.into() });
            }
            Effect::Signal(sig) => match &o.run {
                Some(run) => {
                    actions.push(Action::Signal { id: o.artifact.id.clone(), run: run.clone(), signal: sig, update: step.finish() })
                }
                None => push_update(&mut actions, step.finish()),
            },
            Effect::KillLeftovers => {
                push_update(&mut actions, step.finish());
                if let Some(run) = &o.run {
                    actions.push(Action::KillLeftovers { id: o.artifact.id.clone(), run: run.clone(), pids: o.leftovers.clone() });
                }
            }
            Effect::Beat(beat) => {
                push_update(&mut actions, step.finish());
                actions.push(Action::Heartbeat { id: o.artifact.id.clone(), beat });
            }
        }
    }

    // FIFO by `created:` (ties: id), within the project and global caps.
    let created = |s: &Step<'_>| s.o.artifact.created().map(str::to_string).or_else(|| s.record.created.clone());
    candidates.sort_by(|a, b| (created(a), a.o.id()).cmp(&(created(b), b.o.id())));
    for mut step in candidates {
        let has_room = running < cfg.commission_cap && running + s.running_elsewhere < s.max_concurrent;
        if !has_room || step.o.worktree_exists {
            push_update(&mut actions, step.finish());
            continue;
        }
        running += 1;
        let attempt = step.record.attempt.max(step.o.artifact.attempt()) + 1;
        let branch = branch_name(step.o.id(), attempt);
        if attempt > 1 {
            step.event("redispatch", format!("redispatch:{attempt}"), json!({"attempt": attempt}));
        }
        step.go(Status::Dispatched, &format!("dispatched to worker {}", step.o.artifact.worker));
        step.record.attempt = attempt;
        step.record.term_sent_at = None;
        step.set("attempt", Value::from(attempt));
        step.set("branch", Value::String(branch.clone()));
        step.remove("desired");
        let worker = step.o.artifact.worker.clone();
        actions.push(Action::Dispatch { update: step.finish(), attempt, branch, worker, resume: false });
    }

    let settled = actions.is_empty() && busy.is_empty();
    Plan { actions, settled, busy }
}

fn push_update(actions: &mut Vec<Action>, u: Update) {
    if !u.is_empty() {
        actions.push(Action::Update(u));
    }
}

fn plan_one<'a>(s: &Snapshot, o: &'a Observed, now: &str, cycles: &[Vec<String>]) -> (Step<'a>, Effect) {
    let mut st = Step::new(o, now);
    let art = o.artifact.status;

    let settled = o.artifact.status.is_some_and(Status::is_terminal);
    match (o.artifact.created(), &st.record.created) {
        (Some(c), None) if !settled => st.record.created = Some(c.to_string()),
        (None, _) if !settled => {
            // The first stamp stays the commission's: a stash or checkout that dropped the key
            // does not move it to the back of the queue.
            let created = st.record.created.clone().unwrap_or_else(|| now.to_string());
            st.set("created", Value::String(created.clone()));
            st.record.created = Some(created);
        }
        _ => {}
    }

    // 1. The status as written versus the status we last wrote.
    match &o.record {
        None => match art {
            None => st.go(Status::Pending, "new commission"),
            Some(Status::Dispatched | Status::InProgress) => {
                // Claims to run, but this home never started it: nothing to watch.
                st.go(Status::Failed, "process lost on restart");
            }
            Some(_) => {}
        },
        Some(r) => {
            if art != Some(r.status) && (art.is_none() || art == r.prev) {
                // Our own write was interrupted (or the key was deleted): write it again.
                st.set("status", Value::String(r.status.as_str().into()));
            } else if let Some(want) = art.filter(|a| *a != r.status) {
                let finished_with_result = r.status.is_active() && o.proc == Proc::Dead && st.has_result();
                if want == Status::Cancelled && finished_with_result {
                    st.refuse(&format!("status change {} -> cancelled", r.status), "the worker already finished and submitted a result");
                    st.set("status", Value::String(r.status.as_str().into()));
                } else if person_may_request(r.status, want) {
                    st.go(want, &format!("requested: status set to {want}"));
                } else {
                    st.refuse(&format!("status change {} -> {want}", r.status), &refusal(r.status, want));
                    st.set("status", Value::String(r.status.as_str().into()));
                }
            }
        }
    }

    // 2. A one-shot request in `desired:`.
    let mut wants_dispatch = false;
    match o.artifact.desired {
        None => {}
        Some(Desired::Dispatched) => match st.status {
            Status::Pending => wants_dispatch = true,
            Status::Draft | Status::Failed | Status::Cancelled => {
                st.go(Status::Pending, "requested: desired dispatched");
                wants_dispatch = true;
            }
            Status::Blocked => {
                st.refuse("desired: dispatched", &format!("waiting on missing dependencies: {}", o.missing_deps.join(", ")));
                st.remove("desired");
            }
            Status::Dispatched | Status::InProgress => st.remove("desired"),
            Status::Completed => {
                st.refuse(
                    "desired: dispatched",
                    "the commission is completed; create a new one or set status: pending only from failed or cancelled",
                );
                st.remove("desired");
            }
        },
        Some(Desired::Cancelled) => {
            let finished_with_result = st.status.is_active() && o.proc == Proc::Dead && st.has_result();
            match st.status {
                _ if finished_with_result => {
                    st.refuse("desired: cancelled", "the worker already finished and submitted a result");
                    st.remove("desired");
                }
                Status::Pending | Status::Blocked | Status::Dispatched | Status::InProgress => {
                    st.go(Status::Cancelled, "requested: desired cancelled");
                    st.remove("desired");
                }
                other => {
                    st.refuse("desired: cancelled", &format!("a {other} commission cannot be cancelled"));
                    st.remove("desired");
                }
            }
        }
    }

    // 3. What the status needs now.
    let cfg = &s.project.config;
    let effect = match st.status {
        Status::Draft => Effect::None,
        Status::Pending | Status::Blocked => {
            if !o.missing_deps.is_empty() {
                let why = match cycles.iter().find(|c| c.iter().any(|id| id == o.id())) {
                    Some(cycle) => format!("dependency cycle: {} -> {}", cycle.join(" -> "), cycle[0]),
                    None => format!(
                        "missing dependencies (not on {}, where its worktree starts): {}",
                        cfg.integration_branch,
                        o.missing_deps.join(", ")
                    ),
                };
                if st.status == Status::Pending {
                    st.go(Status::Blocked, &why);
                } else if o.artifact.str_field("reason") != Some(why.as_str())
                    && !st.update.edits.iter().any(|e| matches!(e, Edit::Set(k, _) if k == "reason"))
                {
                    st.set("reason", Value::String(why));
                }
                Effect::None
            } else {
                if st.status == Status::Blocked {
                    st.go(Status::Pending, "all dependencies present");
                }
                if o.proc == Proc::Lingering {
                    Effect::KillLeftovers
                } else if o.worktree_exists && !matches!(o.proc, Proc::Alive | Proc::Starting) {
                    Effect::Cleanup("leftover worktree of an earlier attempt")
                } else {
                    Effect::Candidate { wants: wants_dispatch }
                }
            }
        }
        Status::Dispatched | Status::InProgress => {
            st.fold_mail();
            match o.proc {
                _ if o.record.is_none() => Effect::None,
                Proc::Starting => Effect::None,
                // Nothing is over until every process of the attempt is.
                Proc::Lingering => Effect::KillLeftovers,
                Proc::NotStarted if st.status == Status::Dispatched => Effect::Resume,
                Proc::Alive => {
                    if st.status == Status::Dispatched {
                        let pid = o.run.as_ref().map(|r| r.pid).unwrap_or(0);
                        st.go(Status::InProgress, &format!("worker process running (shim pid {pid})"));
                    }
                    match overtime(s, o) {
                        Some(why) => {
                            st.event("timeout", format!("timeout:{}", st.record.attempt), json!({"text": why}));
                            st.go(Status::Failed, &why);
                            Effect::Signal(Sig::Kill)
                        }
                        None => heartbeat(s, o, &mut st),
                    }
                }
                Proc::NotStarted | Proc::Dead => classify_exit(o, &mut st),
            }
        }
        Status::Cancelled | Status::Failed | Status::Completed => {
            if o.record.as_ref().is_some_and(|r| r.attempt > 0) && (o.worktree_exists || o.proc != Proc::NotStarted) {
                st.fold_mail();
            }
            match o.proc {
                Proc::Alive if st.status == Status::Cancelled => match st.record.term_sent_at {
                    None => {
                        st.record.term_sent_at = Some(s.now);
                        Effect::Signal(Sig::Term)
                    }
                    Some(t) if s.now.signed_duration_since(t).to_std().unwrap_or_default() >= cfg.cancel_grace => Effect::Signal(Sig::Kill),
                    Some(_) => Effect::None,
                },
                Proc::Alive => Effect::Signal(Sig::Kill),
                Proc::Lingering => Effect::KillLeftovers,
                Proc::Starting => Effect::None,
                _ if o.worktree_exists => {
                    Effect::Cleanup(if st.status == Status::Completed { "leftover worktree" } else { "partial results" })
                }
                _ => Effect::None,
            }
        }
    };
    (st, effect)
}

/// The wall-clock limit of an attempt and where it comes from: the commission's `timeout:`,
/// else its package's, else the project's (`0s`: none).
pub fn time_limit(s: &Snapshot, o: &Observed) -> Option<(std::time::Duration, &'static str)> {
    let package = s.workers.packages.get(&o.artifact.worker).and_then(|p| p.manifest.timeout);
    let (limit, from) = match (o.artifact.timeout, package) {
        (Some(t), _) => (t, "the commission's timeout"),
        (None, Some(t)) => (t, "its worker package's timeout"),
        (None, None) => (s.project.config.timeout, "the project's timeout"),
    };
    (!limit.is_zero()).then_some((limit, from))
}

/// Why a running attempt must stop now for running too long, if it must.
fn overtime(s: &Snapshot, o: &Observed) -> Option<String> {
    let (limit, from) = time_limit(s, o)?;
    let started = o.run.as_ref()?.started_at;
    let ran = s.now.signed_duration_since(started).to_std().unwrap_or_default();
    (ran >= limit).then(|| format!("timed out: ran longer than {} ({from})", humantime::format_duration(limit)))
}

/// A running worker: signs of life since the last look keep it alive; none for `stale_after`
/// and it is failed and its group killed.
fn heartbeat(s: &Snapshot, o: &Observed, st: &mut Step<'_>) -> Effect {
    let Some(sample) = o.sample else { return Effect::None };
    match &o.heartbeat {
        Some(hb) if hb.sample == sample => {
            let idle = s.now.signed_duration_since(hb.last_activity).to_std().unwrap_or_default();
            if idle > s.project.config.stale_after {
                let text = format!(
                    "stale: no progress, output or CPU for {}",
                    humantime::format_duration(std::time::Duration::from_secs(idle.as_secs()))
                );
                st.event("heartbeat", format!("heartbeat:{}:stale", st.record.attempt), json!({"state": "stale", "text": text}));
                st.go(Status::Failed, "process unresponsive");
                Effect::Signal(Sig::Kill)
            } else {
                Effect::None
            }
        }
        prev => {
            if prev.is_none() {
                st.event("heartbeat", format!("heartbeat:{}:healthy", st.record.attempt), json!({"state": "healthy", "text": "healthy"}));
            }
            Effect::Beat(Heartbeat { last_activity: s.now, sample })
        }
    }
}

/// REQ-COM-14: how a gone process ends its commission. A submitted result always wins.
fn classify_exit(o: &Observed, st: &mut Step<'_>) -> Effect {
    let exit = o.exit.as_ref();
    if st.has_result() {
        if st.status == Status::Dispatched {
            st.go(Status::InProgress, "worker process ran");
        }
        if let Some(x) = exit.filter(|x| !x.clean()) {
            let text = format!("{} after submitting its result", x.describe());
            st.event("anomaly", format!("anomaly:{}", st.record.attempt), json!({"text": text}));
        } else if exit.is_none() {
            st.event("anomaly", format!("anomaly:{}", st.record.attempt), json!({"text": "process lost after submitting its result"}));
        }
        return Effect::Finish;
    }
    let reason = match exit {
        Some(x) if x.clean() => "completed without submitting result".to_string(),
        Some(x) => x.describe(),
        None => {
            st.event("heartbeat", format!("heartbeat:{}:lost", st.record.attempt), json!({"state": "lost", "text": "process lost"}));
            "process lost on restart".to_string()
        }
    };
    st.go(Status::Failed, &reason);
    Effect::None
}

/// When the world must be looked at again even if no file changes: a heartbeat deadline, the
/// end of a cancel grace period, a shim that is still starting. `None`: nothing is timed.
pub fn next_check(s: &Snapshot) -> Option<std::time::Duration> {
    let cfg = &s.project.config;
    let after = |d: std::time::Duration| s.now + chrono::Duration::from_std(d).unwrap_or_default();
    let mut soonest: Option<DateTime<Utc>> = None;
    for o in &s.commissions {
        let at = match (o.proc, o.record.as_ref()) {
            (Proc::Starting | Proc::Lingering, _) => Some(after(std::time::Duration::from_millis(200))),
            (Proc::Alive, Some(r)) if r.status == Status::Cancelled => {
                r.term_sent_at.map(|t| t + chrono::Duration::from_std(cfg.cancel_grace).unwrap_or_default())
            }
            (Proc::Alive, _) => {
                let last = o.heartbeat.as_ref().map(|h| h.last_activity).unwrap_or(s.now);
                let stale = last + chrono::Duration::from_std(cfg.stale_after + std::time::Duration::from_millis(100)).unwrap_or_default();
                let timeout = time_limit(s, o)
                    .zip(o.run.as_ref())
                    .map(|((limit, _), run)| run.started_at + chrono::Duration::from_std(limit).unwrap_or_default());
                Some(timeout.map_or(stale, |t| t.min(stale)))
            }
            _ => None,
        };
        soonest = match (soonest, at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }
    soonest.map(|t| t.signed_duration_since(s.now).to_std().unwrap_or_default())
}

/// Cycles among waiting commissions: A waits on B when a dependency A is missing is one of
/// B's declared `outputs` and B has not ended. Each cycle once, starting at its smallest id.
pub fn dependency_cycles(s: &Snapshot) -> Vec<Vec<String>> {
    use std::collections::BTreeMap;
    let live = |o: &Observed| !o.artifact.status.is_some_and(Status::is_terminal);
    let mut waits: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for a in s.commissions.iter().filter(|o| live(o)) {
        for b in s.commissions.iter().filter(|o| live(o) && o.id() != a.id()) {
            if a.missing_deps.iter().any(|d| b.artifact.outputs.contains(d)) {
                waits.entry(a.id()).or_default().push(b.id());
            }
        }
    }
    let mut cycles: Vec<Vec<String>> = Vec::new();
    fn walk<'a>(at: &'a str, path: &mut Vec<&'a str>, waits: &BTreeMap<&'a str, Vec<&'a str>>, out: &mut Vec<Vec<String>>) {
        if let Some(i) = path.iter().position(|p| *p == at) {
            let mut cycle: Vec<String> = path[i..].iter().map(|s| s.to_string()).collect();
            let min = cycle.iter().enumerate().min_by_key(|(_, id)| id.as_str()).map(|(i, _)| i).unwrap_or(0);
            cycle.rotate_left(min);
            if !out.contains(&cycle) {
                out.push(cycle);
            }
            return;
        }
        path.push(at);
        for next in waits.get(at).into_iter().flatten() {
            walk(next, path, waits, out);
        }
        path.pop();
    }
    for start in waits.keys() {
        walk(start, &mut Vec::new(), &waits, &mut cycles);
    }
    cycles.sort();
    cycles
}

fn refusal(from: Status, to: Status) -> String {
    use Status::*;
    match (from, to) {
        (_, Completed) => "only the reconciler marks a commission completed (the worker submits a result)".into(),
        (_, Dispatched | InProgress) => "dispatch by setting status: pending or desired: dispatched".into(),
        (Completed, _) => "a completed commission is final".into(),
        (Dispatched | InProgress, _) => format!("a running commission can only be cancelled, not set to {to}"),
        _ => format!("{from} -> {to} is not a transition of the commission state machine"),
    }
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
