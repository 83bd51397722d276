//! The update one plan's step builds: owned keys set or removed only when they change, status
//! and task moves with their timeline events (each key logged once), and what a step that
//! asks for nothing else writes ([`settle`]).

use serde_json::{json, Value as Json};
use serde_yaml_ng::Value;

use super::{integration, Action, Observed, PlanRecord, Snapshot, TaskFold, TaskRecord, TaskState, Update};
use crate::activity::changes;
use crate::activity::reason::Reason;
use crate::artifact::plan::{PlanStatus, Task};
use crate::artifact::write::Edit;

/// Builds one plan's update as the decider reasons about it.
pub(super) struct Step<'a> {
    pub(super) o: &'a Observed,
    pub(super) s: &'a Snapshot,
    pub(super) now: &'a str,
    pub(super) record: PlanRecord,
    pub(super) edits: Vec<Edit>,
    pub(super) events: Vec<Json>,
    pub(super) dirty: bool,
    /// Keys of the task updates logged in this step (a repeated one is a no-op).
    pub(super) keys: std::collections::HashSet<String>,
    pub(super) folds: Vec<TaskFold>,
    /// The attempts each package started earlier in this round (tasks, reviewers), for its
    /// `max_concurrent:`.
    pub(super) started: std::collections::BTreeMap<String, usize>,
}

impl<'a> Step<'a> {
    pub(super) fn new(o: &'a Observed, s: &'a Snapshot, record: PlanRecord) -> Step<'a> {
        Step {
            o,
            s,
            now: s.now.as_str(),
            record,
            edits: Vec::new(),
            events: Vec::new(),
            dirty: false,
            keys: Default::default(),
            folds: Vec::new(),
            started: Default::default(),
        }
    }

    pub(super) fn set(&mut self, key: &str, v: Value) {
        changes::set(&self.o.plan.fields, &mut self.edits, key, v);
    }
    pub(super) fn remove(&mut self, key: &str) {
        changes::remove(&self.o.plan.fields, &mut self.edits, key);
    }
    /// A timeline event, unless the plan's timeline already holds its key.
    pub(super) fn event(&mut self, kind: &str, key: String, fields: Json) {
        changes::event(Some(&self.o.timeline_keys), &mut self.events, self.now, kind, key, fields);
    }
    pub(super) fn go(&mut self, to: PlanStatus, reason: Reason) {
        let reason = reason.to_string();
        let from = self.record.status;
        if from != to {
            let key = format!("status:{}:{}:{from}:{to}", self.record.wave, self.record.verify_runs);
            self.event("status", key, json!({"from": from.as_str(), "to": to.as_str(), "reason": reason}));
            self.record.status = to;
            self.dirty = true;
            // A refused edit of the status it was is over with it.
            self.remove("refused");
        }
        self.record.reason = (!reason.is_empty() && matches!(to, PlanStatus::Halted | PlanStatus::Failed | PlanStatus::Cancelled))
            .then(|| reason.to_string());
    }
    /// The plan stays at its status, waiting for what `why` says (its `reason:`, kept in its
    /// record as a status move's is); `None`: it waits for nothing any more. Only the step
    /// that knows why it waits writes or clears it: nothing reads the words back.
    pub(super) fn waits(&mut self, why: Option<Reason>) {
        let why = why.map(|r| r.to_string());
        if self.record.reason != why {
            self.record.reason = why;
            self.dirty = true;
        }
    }
    pub(super) fn task_state(&mut self, t: &Task, to: TaskState, reason: Option<Reason>) {
        let reason = reason.map(|r| r.to_string());
        let r = self.record.tasks.entry(t.canonical.clone()).or_insert_with(TaskRecord::queued);
        if r.state != to {
            let key = format!("task:{}:{}:{}", t.canonical, r.attempt, to.as_str());
            let fields = json!({"task": t.canonical, "label": t.label, "state": to.as_str(), "attempt": r.attempt, "reason": reason});
            r.state = to;
            r.reason = reason;
            self.dirty = true;
            self.event("task", key, fields);
        }
    }
    /// The record as the artifact shows it: status, wave, reason, each task's state.
    pub(super) fn finish(mut self) -> Update {
        self.set("status", Value::String(self.record.status.as_str().into()));
        if self.record.wave > 0 {
            self.set("wave", Value::Number(self.record.wave.into()));
        }
        match &self.record.reason {
            Some(r) => self.set("reason", Value::String(r.clone())),
            None => self.remove("reason"),
        }
        let tasks = integration::tasks_value(&self.o.plan, &self.record);
        if tasks.as_mapping().is_some_and(|m| !m.is_empty()) {
            self.set("tasks", tasks);
        }
        if self.o.plan.desired.is_some() {
            self.remove("desired");
        }
        let record = (self.dirty || self.o.taken || self.o.record.as_ref() != Some(&self.record)).then(|| self.record.clone());
        Update {
            id: self.o.plan.id.clone(),
            expect_hash: self.o.plan.hash,
            edits: self.edits,
            events: self.events,
            record,
            fold: self.folds,
        }
    }
}

/// The update alone, if there is anything to write; else, the least urgent work: removing
/// the worktree of a task whose work has landed.
pub(super) fn settle(st: Step<'_>) -> Option<Action> {
    let integrated_worktrees: Vec<String> =
        st.o.tasks
            .iter()
            .filter(|t| t.worktree_exists && st.record.tasks.get(&t.task.canonical).is_some_and(|r| r.state == TaskState::Integrated))
            .map(|t| t.task.canonical.clone())
            .collect();
    let u = st.finish();
    if !u.is_empty() {
        return Some(Action::Update { update: u });
    }
    (!integrated_worktrees.is_empty()).then_some(Action::CleanupTask { update: u, tasks: integrated_worktrees })
}
