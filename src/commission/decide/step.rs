//! One commission's update as the decider builds it: owned keys set or removed only when they
//! change, status moves with their timeline events, refusals, and the worker's mailbox folded
//! into progress, questions and result.

use serde_json::{json, Value as Json};
use serde_yaml_ng::Value;

use super::effect::Update;
use crate::activity::changes;
use crate::activity::names;
use crate::activity::reason::Reason;
use crate::activity::state::Record;
use crate::artifact::write::Edit;
use crate::artifact::Status;
use crate::commission::observe::Observed;
use crate::worker::toolbox::mailbox::MailBody;

/// Builds one commission's update as the decider reasons about it.
#[derive(Clone)]
pub(super) struct Step<'a> {
    pub(super) o: &'a Observed,
    pub(super) now: String,
    pub(super) update: Update,
    /// The status as the reconciler now holds it.
    pub(super) status: Status,
    /// What the record should say (written only if it differs from the observed one).
    pub(super) record: Record,
    /// The status moved in this step (not merely read back).
    pub(super) moved: bool,
}

impl<'a> Step<'a> {
    pub(super) fn new(o: &'a Observed, now: &str) -> Step<'a> {
        let status = o.record.as_ref().map(|r| r.status).or(o.artifact.status).unwrap_or(Status::Pending);
        let record = o.record.clone().unwrap_or(Record {
            status,
            prev: None,
            attempt: o.artifact.attempt(),
            term_sent_at: None,
            created: None,
            stopping: None,
            given: None,
            revision: None,
            conflict: None,
        });
        Step { o, now: now.to_string(), update: Update::new(&o.artifact.id, o.artifact.hash), status, record, moved: false }
    }

    pub(super) fn set(&mut self, key: &str, value: Value) {
        changes::set(&self.o.artifact.fields, &mut self.update.edits, key, value);
    }

    pub(super) fn remove(&mut self, key: &str) {
        changes::remove(&self.o.artifact.fields, &mut self.update.edits, key);
    }

    /// A timeline event (the commission's timeline keys are not observed: every one is queued).
    pub(super) fn event(&mut self, kind: &str, key: String, fields: Json) {
        changes::event(None, &mut self.update.events, &self.now, kind, key, fields);
    }

    /// Move to `to`, recording why. `reason` goes into the artifact for failures, cancels and
    /// what blocks it.
    pub(super) fn go(&mut self, to: Status, reason: Reason) {
        // Said in the event, so that nothing tells a person to look at work on its way back.
        let sent_back = reason.sends_back();
        let reason = reason.to_string();
        let from = self.status;
        let attempt = self.record.attempt;
        let mut fields = json!({"from": from.as_str(), "to": to.as_str(), "reason": reason, "attempt": attempt});
        if to == Status::Review && sent_back {
            fields["needs_you"] = json!(false);
        }
        self.event("status", format!("status:{attempt}:{from}:{to}"), fields);
        self.moved_to(to, &reason);
    }

    /// Everything of [`Self::go`] but its timeline event, and no reason: for a status a
    /// commission is first met with (its `created` event says it).
    pub(super) fn arrive(&mut self, to: Status) {
        self.moved_to(to, "");
    }

    fn moved_to(&mut self, to: Status, reason: &str) {
        self.status = to;
        self.moved = true;
        if !to.is_terminal() {
            // A re-dispatched commission has not ended (yet again).
            self.remove("completed");
        }
        // No `prev`: the record is written only after the artifact says `to` (activity::apply),
        // so a status the artifact says later is a person's request, never our write unseen.
        self.record.prev = None;
        self.record.status = to;
        // A refusal of an edit of the ended commission it was is over with it.
        self.remove("refused");
        let reason_planned = self.update.edits.iter().any(|e| matches!(e, Edit::Set(k, _) if k == "reason"));
        // In review, `reason:` says it needs a person, and how to answer.
        let explains =
            matches!(to, Status::Failed | Status::Cancelled | Status::Abandoned | Status::Blocked | Status::Review) && !reason.is_empty();
        if explains {
            self.set("reason", Value::String(reason.into()));
        } else if crate::activity::kind::stale_reason_goes(explains, reason_planned) {
            self.remove("reason");
        }
    }

    /// Refuse a request: the status is put back and `reason:` says why — but of a failed or
    /// cancelled commission, whose `reason:` is why it ended (what `worker/status` gives as the
    /// job's `error`, REQ-WD-44), `refused:` says it, and the cause stays.
    pub(super) fn refuse(&mut self, request: &str, why: &str) {
        let text = Reason::Refused { request: Some(request.into()), why: why.into() }.to_string();
        self.event("refused", format!("refused:{}:{}:{request}", self.record.attempt, self.o.artifact.hash), json!({"text": text}));
        let key = if matches!(self.status, Status::Failed | Status::Cancelled | Status::Abandoned) { "refused" } else { "reason" };
        self.set(key, Value::String(text));
    }

    pub(super) fn has_result(&self) -> bool {
        self.result().is_some()
    }

    /// The current attempt's result, as read from its mailbox (paths checked there).
    pub(super) fn result(&self) -> Option<(&'a str, &'a [String])> {
        let attempt = self.record.attempt;
        let r = self.o.folded.as_ref().filter(|f| f.attempt == attempt)?.result.as_ref()?;
        Some((r.summary.as_str(), r.artifacts.as_slice()))
    }

    /// Fold the attempt's new mailbox events into timeline events (with notes on what the
    /// reader skipped or dropped), and what they add up to into the artifact's progress,
    /// questions and result; the read position goes with the update.
    pub(super) fn fold_mail(&mut self) {
        let o = self.o;
        let attempt = self.record.attempt;
        for m in &o.mail {
            let mut fields = m.body.timeline_fields(m.attempt);
            if let (MailBody::Ask { .. }, Some(f), Json::Object(fields)) = (&m.body, o.folded.as_ref(), &mut fields) {
                // The number a person answers it by.
                if let Some(asked) = f.asks.iter().find(|a| a.id == m.id) {
                    fields.insert("question".into(), asked.number.into());
                }
            }
            self.update.events.push(crate::activity::timeline::event(&m.ts, m.body.kind(), m.id.clone(), fields));
            if let MailBody::Result { artifacts, .. } = &m.body {
                for a in artifacts {
                    self.update.events.push(crate::activity::timeline::event(
                        &m.ts,
                        "artifact",
                        format!("{}:{a}", m.id),
                        json!({"path": a}),
                    ));
                }
            }
        }
        for (key, text) in &o.mail_notes {
            self.event("anomaly", key.clone(), json!({"text": text, "attempt": attempt}));
        }
        let Some(f) = o.folded.as_ref().filter(|f| f.attempt == attempt) else { return };
        if let Some(p) = &f.progress {
            self.set("progress", Value::String(p.clone()));
        }
        // As the step left it: a person's answer may already be in (`asking::settle`).
        let shown = self.update.fold.as_deref().filter(|s| s.attempt == attempt).unwrap_or(f);
        if !shown.questions.is_empty() || !shown.asks.is_empty() {
            self.set("questions", questions_value(shown));
        }
        if let Some((summary, artifacts)) = self.result() {
            self.set("result", result_value(summary, artifacts));
        }
        if o.fold_changed && self.update.fold.is_none() {
            self.update.fold = Some(Box::new(f.clone()));
        }
    }

    /// The attempt's usage into the artifact (`usage:`, over every attempt), and once the
    /// attempt is over its `usage` timeline event. Set from what was observed alone, so a pass
    /// repeated gives the same figures and the same event key.
    pub(super) fn account_usage(&mut self) {
        let o = self.o;
        let Some(u) = o.usage.as_ref().filter(|u| u.attempt == self.record.attempt) else { return };
        // Its reviewers' runs are part of it too (never written back down).
        let reviewed = o.reviewers_usage(u.attempt).into_iter().map(|(_, r)| r);
        let parts: Vec<_> = o.usage_before.into_iter().chain([u.usage]).chain(reviewed).collect();
        if let Some(total) = crate::worker::usage::Usage::sum(&parts) {
            self.set("usage", total.to_yaml());
        }
        if u.over {
            let (key, fields) = u.event(&o.artifact.worker);
            self.event("usage", key, fields);
        }
    }

    pub(super) fn finish(mut self) -> Update {
        // Merely reading a settled artifact (one from a fresh clone, say) creates no record,
        // nor does an attempt under way in another home (a record would claim it for this
        // one) or one that ended on the integration branch; everything else is recorded so
        // that later status edits are validated against it.
        let adopted_unchanged = self.o.record.is_none()
            && (self.status.is_terminal() || self.o.elsewhere.is_some() || self.o.integrated.is_some() || self.o.unrecorded_worker)
            && self.update.events.is_empty()
            && self.record.attempt == self.o.artifact.attempt();
        if Some(&self.record) != self.o.record.as_ref() && !adopted_unchanged {
            self.update.record = Some(self.record.clone());
        }
        // Only the final status is written, whatever the step passed through.
        self.update.edits.retain(|e| !matches!(e, Edit::Set(k, _) if k == "status"));
        // One that ended on the integration branch keeps the checkout's file as it is, even
        // without a `status:` (`land` brings the status in).
        if self.o.artifact.status != Some(self.status) && self.o.integrated.is_none() {
            self.update.edits.push(Edit::Set("status".into(), Value::String(self.status.as_str().into())));
        }
        self.update
    }
}

/// The branch of an attempt already under way: an older guild-hall named attempt `n` of `id`
/// `claude/commission/<id>-<n>`; when the artifact records that name, it is kept.
pub(crate) fn attempt_branch(o: &Observed, attempt: u32) -> String {
    // A revision works on the branch of the attempt it revises.
    if let Some(r) = o.record.as_ref().and_then(|r| r.revision.as_ref()).filter(|r| r.attempt == attempt) {
        return r.branch.clone();
    }
    let legacy = names::legacy_commission_branch(&o.artifact.id, attempt);
    if attempt > 1 && o.artifact.owned.branch.as_deref() == Some(legacy.as_str()) {
        legacy
    } else {
        names::commission_branch(&o.artifact.id, attempt)
    }
}

/// `questions:` from a fold: the logged questions (the latest, after a note of how many earlier
/// ones the timeline has), then each question asked of a person ([`crate::commission::questions::Asked::entry`]).
pub(crate) fn questions_value(f: &crate::commission::observe::Folded) -> Value {
    let earlier = f.questions_total.saturating_sub(f.questions.len() as u64);
    let mut questions: Vec<Value> = Vec::new();
    if earlier > 0 {
        questions.push(Value::String(format!("({earlier} earlier questions are in the timeline)")));
    }
    questions.extend(f.questions.iter().cloned().map(Value::String));
    questions.extend(f.asks.iter().map(|a| a.entry(f.attempt)));
    Value::Sequence(questions)
}

pub(crate) fn result_value(summary: &str, artifacts: &[String]) -> Value {
    let mut m = serde_yaml_ng::Mapping::new();
    m.insert("summary".into(), Value::String(summary.into()));
    m.insert("artifacts".into(), Value::Sequence(artifacts.iter().map(|a| Value::String(a.clone())).collect()));
    Value::Mapping(m)
}
