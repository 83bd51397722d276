//! What the copy-back of a wave decides, as it goes: a task whose commit landed is integrated;
//! a finding that ends the wave halts the plan saying why, failing the task to blame. The
//! copy-back itself (git, worktrees, files) is `plan::act`'s: it reports what it found here and
//! applies the update this gives back.

use serde_json::json;
use serde_yaml_ng::Value;

use super::{PlanRecord, TaskRecord, TaskState, Update};
use crate::activity::timeline;
use crate::artifact::plan::{Plan, PlanStatus, Task};
use crate::artifact::write::Edit;

/// What the copy-back found that ends the wave: nothing of it is copied back (or, for
/// [`Finding::LandFailed`], nothing from that task on in plan order).
#[derive(Debug)]
pub(crate) enum Finding<'a> {
    /// The integration branch could not be read (the trailer search, what changed on it).
    BranchUnreadable(String),
    /// The task has no worktree made for it to copy back from.
    NoWorktree(&'a Task),
    /// The task's worktree record could not be read.
    WorktreeUnreadable(&'a Task, String),
    /// The worktree is not as made (what [`crate::activity::worktree::inspect`] says), or the
    /// worker committed (`committed`: its HEAD moved from the wave base).
    Protocol { task: &'a Task, broken: Vec<String>, committed: bool },
    /// Measuring or listing the task's changes failed.
    CopyBackFailed(&'a Task, String),
    /// Changes over the merge limits (their listing).
    TooLarge(&'a Task, String),
    /// Paths git refuses to hold.
    RefusedPaths(&'a Task, Vec<String>),
    /// Changes to the control plane.
    ControlPlane(&'a Task, Vec<String>),
    /// Changes of a sparse task (its checkout `.lore/` alone) outside its checkout: paths its
    /// worker never saw.
    OutsideCheckout(&'a Task, Vec<String>),
    /// Paths the tasks changed that changed on the integration branch since the wave started
    /// (`path (task)`).
    Overlap(Vec<String>),
    /// Paths two tasks of the wave both changed (`path (task, task)`).
    Collision(Vec<String>),
    /// Landing the task's commit failed; the tasks before it landed.
    LandFailed(&'a Task, String),
}

/// One wave's copy-back as decided so far: the update the decider asked for, with the record
/// the copy-back moves on.
pub(crate) struct Integration<'a> {
    plan: &'a Plan,
    wave: usize,
    now: String,
    update: Update,
    record: PlanRecord,
}

impl<'a> Integration<'a> {
    /// Start from the decider's `update` and the plan's `record`; events are stamped `now`.
    pub(crate) fn new(plan: &'a Plan, wave: usize, now: String, update: Update, record: PlanRecord) -> Integration<'a> {
        Integration { plan, wave, now, update, record }
    }

    pub(crate) fn record(&self) -> &PlanRecord {
        &self.record
    }

    /// Whether the task is integrated already (nothing to copy back).
    pub(crate) fn integrated(&self, t: &Task) -> bool {
        self.record.tasks.get(&t.canonical).is_some_and(|r| r.state == TaskState::Integrated)
    }

    /// The task's commit is on the integration branch (`changes`: how many it copied, when
    /// this copy-back made it).
    pub(crate) fn landed(&mut self, t: &Task, commit: &str, changes: Option<usize>) {
        self.record.tasks.entry(t.canonical.clone()).or_insert_with(TaskRecord::queued).state = TaskState::Integrated;
        let mut fields = json!({"task": t.canonical, "state": "integrated", "commit": commit});
        if let Some(n) = changes {
            fields["changes"] = n.into();
        }
        self.update.events.push(timeline::event(&self.now, "task", format!("task:{}:integrated", t.canonical), fields));
    }

    /// The update so far, with the tasks' states as they now are: the copy-back ends here, or
    /// waits and goes on in a later pass.
    pub(crate) fn progress(&self) -> Update {
        let mut u = self.update.clone();
        u.record = Some(self.record.clone());
        u.edits.retain(|e| !matches!(e, Edit::Set(k, _) if k == "tasks"));
        u.edits.push(Edit::Set("tasks".into(), tasks_value(self.plan, &self.record)));
        u
    }

    /// The wave ends on `finding`: the plan halts saying why; the task to blame, if any, fails.
    pub(crate) fn halt(self, finding: Finding<'_>) -> Update {
        let wave = self.wave;
        let (reason, failed) = verdict(wave, finding);
        let Integration { plan, now, update: mut u, mut record, .. } = self;
        if let Some((t, why)) = failed {
            if let Some(r) = record.tasks.get_mut(&t.canonical) {
                r.state = TaskState::Failed;
                r.reason = Some(why.clone());
            }
            u.events.push(timeline::event(
                &now,
                "task",
                format!("task:{}:violation", t.canonical),
                json!({"task": t.canonical, "state": "failed", "reason": why}),
            ));
        }
        u.events.push(timeline::event(
            &now,
            "status",
            format!("status:{wave}:halted:{}", plan.hash),
            json!({"from": "running", "to": "halted", "reason": reason}),
        ));
        record.status = PlanStatus::Halted;
        record.reason = Some(reason.clone());
        u.edits.retain(|e| !matches!(e, Edit::Set(k, _) | Edit::Remove(k) if k == "status" || k == "reason" || k == "tasks"));
        u.edits.push(Edit::Set("status".into(), "halted".into()));
        u.edits.push(Edit::Set("reason".into(), reason.into()));
        u.edits.push(Edit::Set("tasks".into(), tasks_value(plan, &record)));
        u.record = Some(record);
        u
    }
}

/// Why the plan halts on `finding`, and the task it fails with why.
fn verdict(wave: usize, finding: Finding<'_>) -> (String, Option<(&Task, String)>) {
    // Every failure to copy a task back ends the wave with the task failed and why: never a
    // silent retry every pass.
    let failed = |t: &Task, why: String| format!("task {} failed: {why}; nothing of the wave was copied back", t.canonical);
    match finding {
        Finding::BranchUnreadable(e) => {
            (format!("the copy-back of wave {wave} failed: {e}; nothing of the wave was copied back"), None)
        }
        Finding::NoWorktree(t) => (format!("task {} has no worktree to copy back from", t.canonical), None),
        Finding::WorktreeUnreadable(t, e) => (format!("task {}: {e}; nothing of the wave was copied back", t.canonical), None),
        Finding::Protocol { task, mut broken, committed } => {
            if committed && broken.is_empty() {
                broken.push("the worker committed (its HEAD moved from the wave base); wave workers never commit".into());
            }
            let reason = format!("task {} broke the protocol: {}; nothing of the wave was copied back", task.canonical, broken.join("; "));
            (reason, Some((task, format!("protocol violation: {}", broken.join("; ")))))
        }
        Finding::CopyBackFailed(t, e) => {
            let why = format!("its copy-back failed: {e}");
            (failed(t, why.clone()), Some((t, why)))
        }
        Finding::TooLarge(t, listing) => {
            let why = format!("too large to copy back: {listing}");
            (format!("task {} is {why}; nothing of the wave was copied back", t.canonical), Some((t, why)))
        }
        Finding::RefusedPaths(t, paths) => {
            let why = format!("it left paths git refuses to hold: {}", paths.join(", "));
            (failed(t, why.clone()), Some((t, why)))
        }
        Finding::ControlPlane(t, paths) => {
            let why = format!("protocol violation: it changed the control plane: {}", paths.join(", "));
            let reason =
                format!("task {} changed the control plane ({}); nothing of the wave was copied back", t.canonical, paths.join(", "));
            (reason, Some((t, why)))
        }
        Finding::OutsideCheckout(t, paths) => {
            let why = format!(
                "its worker saw only {} (a sparse checkout) and changed paths outside it: {}",
                crate::activity::merge::SPARSE_CHECKOUT,
                paths.join(", ")
            );
            (failed(t, why.clone()), Some((t, why)))
        }
        Finding::Overlap(paths) => (
            format!(
                "the integration branch changed since wave {wave} started, where its tasks changed too: {}; nothing was copied back, every worktree kept; rebase the plan's work by hand, then retry",
                paths.join("; ")
            ),
            None,
        ),
        Finding::Collision(list) => (
            format!("collision in wave {wave}: {}; nothing was copied back, every worktree kept; fix the plan, then retry", list.join("; ")),
            None,
        ),
        Finding::LandFailed(t, e) => {
            // The tasks before it in plan order landed (their commits stay); it and those after
            // it did not.
            let why = format!("its copy-back failed: {e}");
            let reason = format!("task {} failed: {why}; the tasks after it in plan order were not copied back", t.canonical);
            (reason, Some((t, why)))
        }
    }
}

/// The artifact's `tasks:` as the record has them.
pub(super) fn tasks_value(plan: &Plan, record: &PlanRecord) -> Value {
    let mut m = serde_yaml_ng::Mapping::new();
    for t in plan.tasks() {
        if let Some(r) = record.tasks.get(&t.canonical) {
            m.insert(t.canonical.clone().into(), r.state.as_str().into());
        }
    }
    Value::Mapping(m)
}
