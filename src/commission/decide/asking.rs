//! A commission's worker asking a person, decided: a person's `answer:` taken into the asked
//! question (and removed), a question past its `ask_timeout` closed without one, meeting
//! requests turned into `requested` meetings (or refused without the `meeting` capability),
//! `questions:` shown, and whether the attempt waits for a person (then never stale).

use std::time::Duration;

use serde_json::json;

use super::step::Step;
use crate::commission::observe::{Folded, Observed, Snapshot};
use crate::commission::questions::{meeting_id, target, MeetingToWrite};
use crate::worker::toolbox::answers::Outcome;

/// How long its worker's `ask` waits: the commission's `ask_timeout:`, else its package's, else
/// the project's.
pub(crate) fn ask_timeout(s: &Snapshot, o: &Observed) -> Duration {
    let package = s.workers.packages.get(&o.artifact.worker).and_then(|p| p.manifest.ask_timeout);
    o.artifact.ask_timeout.or(package).unwrap_or(s.project.config.ask_timeout)
}

/// The current attempt's fold as this step leaves it (its update's, else as observed).
fn fold<'a>(st: &'a Step<'_>) -> Option<&'a Folded> {
    let attempt = st.record.attempt;
    match &st.update.fold {
        Some(f) if f.attempt == attempt => Some(f),
        _ => st.o.folded.as_ref().filter(|f| f.attempt == attempt),
    }
}

/// Whether the current attempt waits for a person: a question it asked is open, within its
/// `ask_timeout` — or was until this pass (its answer, or its time, came just now: the worker
/// has only now been given it, so its silence until now was still waiting).
pub(super) fn waiting(st: &Step<'_>) -> bool {
    let attempt = st.record.attempt;
    let open = |f: &Folded| f.attempt == attempt && f.asks.iter().any(|a| a.is_open());
    fold(st).is_some_and(open) || st.o.folded.as_ref().is_some_and(open)
}

/// The `answer:` request, questions past their time, meeting requests, and `questions:`.
pub(super) fn settle(s: &Snapshot, o: &Observed, st: &mut Step<'_>) {
    let mut f = fold(st).cloned();
    let mut changed = false;
    let attempt = st.record.attempt;
    if let Some(req) = &o.artifact.answer {
        st.remove("answer");
        let request = "answer";
        let found = match f.as_mut() {
            Some(f) if st.status.is_active() => target(&f.asks, req.question()).map(|i| &mut f.asks[i]),
            _ => Err(format!("{} is {}: no question of its worker waits for an answer", o.artifact.id, st.status)),
        };
        match found {
            Ok(ask) => {
                ask.reply = Some(Outcome::Answered { answer: req.text().to_string(), answered: st.now.clone() });
                let number = ask.number;
                st.event(
                    "answered",
                    format!("answered:{attempt}:{number}"),
                    json!({"question": number, "text": req.text(), "attempt": attempt}),
                );
                changed = true;
            }
            Err(why) => st.refuse(request, &why),
        }
    }
    if let Some(f) = f.as_mut().filter(|_| st.status.is_active()) {
        let limit = ask_timeout(s, o);
        for ask in f.asks.iter_mut().filter(|a| a.is_open()) {
            let asked = chrono::DateTime::parse_from_rfc3339(&ask.asked).map(|t| t.with_timezone(&chrono::Utc)).unwrap_or(s.now);
            if s.now.signed_duration_since(asked).to_std().unwrap_or_default() >= limit {
                ask.reply = Some(Outcome::TimedOut { timed_out: st.now.clone() });
                let text = format!("no answer within {} (its ask_timeout): the worker decides itself", humantime::format_duration(limit));
                st.event(
                    "no_answer",
                    format!("no-answer:{attempt}:{}", ask.number),
                    json!({"question": ask.number, "text": text, "attempt": attempt}),
                );
                changed = true;
            }
        }
    }
    if let Some(f) = f.as_mut() {
        for m in f.meetings.iter_mut().filter(|m| !m.done) {
            m.done = true;
            changed = true;
            let can_meet = s.workers.packages.get(&o.artifact.worker).is_some_and(|p| p.can_meet());
            if !can_meet {
                let text = format!(
                    "request_meeting refused: worker {} does not have the `meeting` capability (no meeting written)",
                    o.artifact.worker
                );
                st.event("refused", format!("meeting-refused:{attempt}:{}", m.seq), json!({"text": text, "attempt": attempt}));
                continue;
            }
            let id = meeting_id(&o.artifact.id, attempt, m.seq);
            st.event(
                "meeting_requested",
                format!("meeting-requested:{attempt}:{}", m.seq),
                json!({"meeting": id, "worker": o.artifact.worker, "text": m.reason, "attempt": attempt}),
            );
            f.write_meetings.push(MeetingToWrite {
                id,
                worker: o.artifact.worker.clone(),
                reason: m.reason.clone(),
                reference: format!(".lore/commissions/{}.md", o.artifact.id),
                requested_by: format!("{} (commission {})", o.artifact.worker, o.artifact.id),
            });
        }
    }
    let Some(f) = f else { return };
    if !f.asks.is_empty() {
        st.set("questions", super::step::questions_value(&f));
    }
    if changed {
        st.update.fold = Some(Box::new(f));
    }
}
