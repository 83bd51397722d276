//! What is new in a task's mailbox, folded into the plan's timeline once: its task updates
//! (idempotent, ordered), what its worker reports, the reader's notes; and how far it was read.

use serde_json::json;

use super::step::Step;
use super::{ObservedTask, TaskFold};
use crate::worker::toolbox::mailbox::MailBody;
use crate::worker::usage::Usage;

/// Log what is new in a task's mailbox: each task update of its current attempt once (a
/// repeated idempotency key is a no-op; a sequence not above the highest applied is logged as
/// ignored), the reader's notes, a mailbox that cannot be read; and keep how far it was read.
/// Linear in the new updates: a pass reads only what was appended since the last.
pub(super) fn fold_mail(st: &mut Step<'_>, ot: &ObservedTask) {
    let t = &ot.task;
    let mail = &ot.mail;
    let Some(rec) = st.record.tasks.get(&t.canonical).cloned() else { return };
    let attempt = rec.attempt;
    if let Some(why) = &mail.error {
        let text = format!("{}: its mailbox cannot be read: {why}", t.canonical);
        st.event("anomaly", format!("mailbox-error:{}:{attempt}", t.canonical), json!({"task": t.canonical, "text": text}));
    }
    // What its workspace setup made that git does not ignore (the task's work), logged once.
    if let Some(text) = &ot.setup_made {
        let k = crate::worker::workspace::setup_key(&t.canonical, attempt);
        if !st.o.timeline_keys.contains(&k) && st.keys.insert(k) {
            let e = crate::worker::workspace::setup_event(st.now, attempt, Some(&t.canonical), text);
            st.events.push(e);
        }
    }
    // What the ended attempt used (its agent's report, else the worker's), logged once.
    if let Some(u) = ot.usage.as_ref().filter(|u| u.attempt == attempt && u.over) {
        let k = super::task_usage_key(&t.canonical, attempt);
        if !st.o.timeline_keys.contains(&k) && st.keys.insert(k.clone()) {
            let (_, mut fields) = u.event(&t.worker);
            fields["task"] = json!(t.canonical);
            st.event("usage", k, fields);
        }
    }
    let Some(folded) = mail.folded.as_ref().filter(|f| f.attempt == attempt) else { return };
    let key = |idem: &str| format!("update:{}:{attempt}:{idem}", t.canonical);
    // An older guild-hall keyed an update by the task and its key alone.
    let old_key = |idem: &str| format!("update:{}:{idem}", t.canonical);
    let log = &st.o.timeline_keys;
    let in_log = |idem: &str| log.contains(&key(idem)) || (mail.legacy && log.contains(&old_key(idem)));
    let updates: Vec<_> = mail
        .updates
        .iter()
        .filter_map(|m| match &m.body {
            MailBody::TaskUpdate(u) => Some(u),
            _ => None,
        })
        .collect();
    // The highest applied: in the record, or in the log (a pass that died after appending
    // events of this read and before writing the record and the read position).
    let logged = updates.iter().filter(|u| in_log(&u.idempotency_key)).map(|u| u.sequence).max().unwrap_or(0);
    let mut seq = rec.sequence.max(logged);
    for u in updates {
        let k = key(&u.idempotency_key);
        if in_log(&u.idempotency_key) || !st.keys.insert(k.clone()) {
            continue; // a duplicate key is a no-op
        }
        if u.sequence <= seq && seq > 0 {
            st.event("task_update_ignored", k, json!({"task": t.canonical, "attempt": attempt, "sequence": u.sequence, "applied": seq, "text": "lower sequence than the highest applied: ignored"}));
            continue;
        }
        let ops: Vec<&crate::worker::toolbox::mailbox::ChangedOp> = u
            .changed_ops
            .iter()
            .filter(|c| !crate::plan::copyback::control_plane(&c.path) && !crate::plan::copyback::excluded(&c.path))
            .collect();
        st.event("task_update", k, json!({"task": t.canonical, "attempt": attempt, "status": u.status, "sequence": u.sequence, "changed_ops": ops, "evidence_paths": u.evidence_paths, "verify_summary": u.verify_summary, "error": u.error}));
        seq = u.sequence;
    }
    seq = seq.max(mail.more_sequence);
    // What a commission's worker reports (progress, questions, decisions, its result) is
    // logged the same for a task: one package serves both kinds.
    for m in &mail.events {
        let k = format!("mail:{}:{attempt}:{}", t.canonical, m.id);
        if log.contains(&k) || !st.keys.insert(k.clone()) {
            continue;
        }
        let mut fields = m.body.timeline_fields(attempt);
        fields["task"] = json!(t.canonical);
        st.event(m.body.kind(), k, fields);
    }
    if let Some(r) = &folded.result {
        let k = format!("result:{}:{attempt}", t.canonical);
        if !log.contains(&k) && st.keys.insert(k.clone()) {
            let text = format!("{}: {}", t.canonical, r.summary);
            st.event(
                "result",
                k,
                json!({"task": t.canonical, "attempt": attempt, "summary": r.summary, "artifacts": r.artifacts, "text": text}),
            );
        }
    }
    for (k, text) in &mail.notes {
        st.event("anomaly", k.clone(), json!({"task": t.canonical, "text": format!("{}: {text}", t.canonical)}));
    }
    if let Some(r) = st.record.tasks.get_mut(&t.canonical) {
        if r.sequence != seq {
            r.sequence = seq;
            st.dirty = true;
        }
    }
    if mail.fold_changed {
        st.folds.push(TaskFold { slug: t.slug(), folded: folded.clone() });
    }
}

/// The plan's `usage:`: what its tasks' ended attempts used, those logged and those this
/// step logs.
pub(super) fn sum_usage(st: &mut Step<'_>) {
    let new: Vec<Usage> =
        st.events.iter().filter(|e| e["kind"] == "usage").filter_map(|e| serde_json::from_value::<Usage>(e.clone()).ok()).collect();
    if let Some(total) = Usage::sum(st.o.usage_recorded.iter().chain(&new)) {
        st.set("usage", total.to_yaml());
    }
}
