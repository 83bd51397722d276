//! One plan's step: a person's request validated against the record, a draft submitted, a
//! cancel carried out, the plan started; then the arm of the status it is at.

use serde_json::json;
use serde_yaml_ng::Value;

use super::record::known_record;
use super::step::{settle, Step};
use super::waves::{stopping, Stopping};
use super::{
    elsewhere, fold, person_may_request, request_refusal, verify, waves, Action, Observed, PlanRecord, Snapshot, TaskState, Update,
};
use crate::activity::reason::Reason;
use crate::activity::timeline;
use crate::artifact::plan::PlanStatus;
use crate::artifact::write::Edit;
use crate::artifact::Status;

/// One plan's step: the one action that moves it on, if any.
/// `started`: the attempts each package's tasks started earlier in this round.
pub(super) fn step(o: &Observed, s: &Snapshot, slots: usize, started: &std::collections::BTreeMap<String, usize>) -> Option<Action> {
    let now = s.now.as_str();
    use PlanStatus::*;
    let p = &o.plan;
    let asked = match p.desired.as_deref() {
        Some("cancelled") => Cancelled,
        Some("dispatched") => Pending,
        _ => p.status.unwrap_or(Pending),
    };
    // Ended on the integration branch while the checkout's file says it is to run: nothing is
    // run again, the file is the person's until `guild-hall land` brings the status in.
    if o.integrated.is_some() {
        return None;
    }
    // At work in another home (no record here): nothing is done for it, `status` says so; a
    // request in `desired:` is validated against the status it is at there.
    let away = o.record.is_none() && elsewhere(p, None).is_some();
    if away && p.desired.is_none() {
        return None;
    }
    let start = known_record(o);
    let known = start.is_some();
    let record = start.unwrap_or_else(PlanRecord::fresh);
    let mut st = Step::new(o, s, record);
    st.started = started.clone();
    let had = st.record.status;
    // First met, whatever its status (a draft, written already over): created so, the one
    // `created` event every kind opens its timeline with — not for a plan another home ran
    // (its `wave:`/`tasks:` say so), whose timeline is that home's.
    let ran = p.fields.contains_key("wave") || p.fields.contains_key("tasks");
    if o.record.is_none() && !ran && !o.timeline_keys.contains("created") {
        st.events.push(timeline::created(now, p.status.unwrap_or(Pending).as_str(), None));
    }
    // A person's request: validated against what guild-hall last accepted.
    if asked != had && known || (!known && asked != Draft && asked != Pending) {
        match request(&mut st, had, asked) {
            Some(Answer::StartWave(wave)) => return Some(Action::StartWave { update: st.finish(), wave }),
            Some(Answer::Refused(update)) => return Some(Action::Update { update: *update }),
            None => {}
        }
    }
    if o.record.is_none() && asked == Draft {
        // Nothing is recorded of a draft: only its `created` event, once.
        let events = std::mem::take(&mut st.events);
        return (!events.is_empty()).then(|| Action::Update {
            update: Update { id: p.id.clone(), expect_hash: p.hash, edits: vec![], events, record: None, fold: vec![] },
        });
    }
    if !known && asked == Pending {
        // First met, submitted (a draft this home never recorded included).
        st.record.status = Pending;
        st.dirty = true;
    } else if st.record.status == Draft && asked == Pending {
        st.go(Pending, Reason::Submitted);
    }
    // Cancelled: stop what runs; nothing merged is undone.
    if st.record.status == Cancelled {
        // What its reviewers used, whether they ended before the cancel or were stopped by it.
        if st.o.reviews.iter().any(|r| r.usage.is_some()) {
            super::review::log_usage(&mut st);
            fold::sum_usage(&mut st);
        }
        return cancel(st);
    }
    if st.record.status == Pending {
        return start_plan(st);
    }
    let w = st.record.wave;
    let Some(wave) = p.waves.get(w.saturating_sub(1)) else { return settle(st) };
    // Fold what is new in the task mailboxes into the log.
    for ot in o.tasks.iter().filter(|t| t.task.wave == w) {
        fold::fold_mail(&mut st, ot);
    }
    super::review::log_usage(&mut st);
    fold::sum_usage(&mut st);
    match st.record.status {
        Running if o.taken && !st.record.bases.contains_key(&w) => {
            // A record taken from the artifact, no task worktree to find the wave's base from:
            // the base is the tip now (and what landed of the wave is taken as integrated).
            Some(Action::StartWave { update: st.finish(), wave: w })
        }
        Running => waves::running(st, w, wave, slots, started),
        Verifying
            if o.verify.exit().is_none_or(|x| x.attempt != st.record.verify_runs)
                && o.verify.taken.is_none_or(|t| !t.covers(st.record.verify_runs)) =>
        {
            // Recorded as started, but no shim took it (a pass died between the two).
            let run = st.record.verify_runs;
            Some(Action::StartVerify { update: st.finish(), wave: w, run })
        }
        Verifying => verify::verdict(st, w),
        Halted
            if st.record.fixes > 0
                && o.fix_status == Some(Status::Completed)
                && wave.iter().all(|t| st.record.tasks.get(&t.canonical).is_some_and(|r| r.state == TaskState::Integrated)) =>
        {
            verify::after_fix(st, w)
        }
        _ => settle(st),
    }
}

/// What a person's request asks for beyond the step's own update.
enum Answer {
    /// A retry of a plan taken from the artifact here: the wave's base is the tip now.
    StartWave(usize),
    /// Refused: the status put back, `reason:` saying why (the update alone).
    Refused(Box<Update>),
}

/// A person's request (`status:` or `desired:` edited), validated against what guild-hall last
/// accepted: carried out into the step, or refused.
fn request(st: &mut Step<'_>, had: PlanStatus, asked: PlanStatus) -> Option<Answer> {
    use PlanStatus::*;
    let (o, p, now) = (st.o, &st.o.plan, st.now);
    if person_may_request(had, asked) {
        match asked {
            Cancelled => {
                st.go(Cancelled, Reason::CancelledByPerson);
            }
            Pending => {
                // A retry: what did not succeed runs again; what landed stays.
                let wave = st.record.wave;
                for t in p.waves.get(wave.saturating_sub(1)).into_iter().flatten() {
                    if matches!(st.record.tasks.get(&t.canonical).map(|r| r.state), Some(TaskState::Failed | TaskState::Stopped)) {
                        st.task_state(t, TaskState::Queued, None);
                        if let Some(r) = st.record.tasks.get_mut(&t.canonical) {
                            r.stop_sent = false;
                            r.reruns = 0;
                        }
                    }
                }
                st.go(if had == Draft { Pending } else { Running }, Reason::RetriedByPerson);
                st.record.reason = None;
                if had != Draft && !st.record.bases.contains_key(&wave) {
                    // Taken from the artifact in this home: the wave's base is the tip now.
                    return Some(Answer::StartWave(wave));
                }
            }
            _ => {}
        }
    } else {
        let why = Reason::Refused { request: None, why: request_refusal(had, asked).unwrap_or_default() }.to_string();
        let mut events = Vec::new();
        let key = format!("refused:{had}:{asked}:{}", p.hash);
        if !o.timeline_keys.contains(&key) {
            events.push(timeline::event(now, "refused", key, json!({"asked": asked.as_str(), "status": had.as_str(), "reason": why})));
        }
        // `refused:`, never `reason:`: a halted plan's reason is why it halted, and stays.
        let mut edits =
            vec![Edit::Set("status".into(), Value::String(had.as_str().into())), Edit::Set("refused".into(), Value::String(why))];
        if p.desired.is_some() {
            edits.push(Edit::Remove("desired".into()));
        }
        let update = Update { id: p.id.clone(), expect_hash: p.hash, edits, events, record: None, fold: vec![] };
        return Some(Answer::Refused(Box::new(update)));
    }
    None
}

/// Cancelled: stop what runs; nothing merged is undone.
fn cancel(mut st: Step<'_>) -> Option<Action> {
    let o = st.o;
    match stopping(&mut st) {
        Stopping::Stop(task, attempt) => Some(Action::StopTask { update: st.finish(), task, attempt, kill: false }),
        _ => {
            // A verify at work is stopped too (once); its shim ends every process of it.
            let run = st.record.verify_runs;
            // (A shim at work holds its lock: `taken` says so, whatever the run.)
            let verifying = run > 0
                && o.verify.taken.is_some_and(|t| t.covers(run))
                && o.verify.exit().is_none_or(|x| x.attempt != run)
                && !o.verify.died();
            if verifying && !st.record.verify_stop_sent {
                st.record.verify_stop_sent = true;
                st.dirty = true;
                return Some(Action::StopVerify { update: st.finish(), run, kill: false });
            }
            // Its reviewers, in the REVIEW stage: stopped, their checkouts removed.
            if let Some(runs) = super::review::drop_runs(o) {
                return Some(Action::DropReviewers { update: st.finish(), round: run, runs });
            }
            settle(st)
        }
    }
}

/// Pending: started at its first wave, unless a task's worker cannot run here.
fn start_plan(mut st: Step<'_>) -> Option<Action> {
    let o = st.o;
    // A task's worker not installed or not usable: the plan waits, pending with the reason,
    // rather than start and halt on it (a plan once running waits for nothing).
    if let Some((t, why)) = o.tasks.iter().find_map(|t| t.worker_problem.as_ref().map(|why| (&t.task, why))) {
        st.waits(Some(Reason::TaskWaits { task: t.canonical.clone(), label: t.label.clone(), why: why.clone() }));
        return settle(st);
    }
    st.record.wave = 1;
    st.go(PlanStatus::Running, Reason::Started);
    Some(Action::StartWave { update: st.finish(), wave: 1 })
}
