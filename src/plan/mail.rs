//! A wave task's mailbox: one per attempt (`events-<n>.jsonl`, made empty when the attempt
//! starts), read from where the last pass stopped, every event checked against the attempt and
//! the task's worktree; what the decider needs of it (a `failed` update, the `submit_result`)
//! folded and kept with the position in `events-<n>.folded.json`, so that a pass reads only new
//! bytes.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::activity::state::StateDir;
use crate::files::read_json;
use crate::worker::toolbox::mailbox::{self, Cursor, Expect, Mail, MailBody, TaskUpdateStatus};

/// The most task updates of one task a pass logs one by one; more are folded all the same and
/// counted in one note (a worker cannot make a pass hold its flood).
pub(crate) const UPDATES_PER_PASS: usize = crate::worker::toolbox::mailbox::MAIL_PER_PASS;
/// The most notes on skipped lines and dropped paths a pass logs one by one, per task.
pub(crate) const NOTES_PER_PASS: usize = crate::worker::toolbox::mailbox::NOTES_PER_PASS;

/// What is kept of an attempt's mailbox between passes: how far it was read, and what of it
/// decides how the attempt ended. Written after the plan's record (a crash in between reads
/// the same lines again: harmless, the log drops what it already has by key).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct TaskFolded {
    pub(crate) attempt: u32,
    pub(crate) cursor: Cursor,
    /// The latest `failed` update's message: the attempt failed, whatever its exit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) failed: Option<String>,
    /// Its `submit_result` (accepted once per attempt): the task's summary and artifacts,
    /// logged as the task's `result` whatever the cap on events of a pass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) result: Option<TaskResult>,
    /// What the worker reported it used (`report_usage`), summed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) reported: Option<crate::worker::usage::Reading>,
}

/// A wave task's submitted result: what a commission's `submit_result` is, in a task.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct TaskResult {
    pub(crate) summary: String,
    #[serde(default)]
    pub(crate) artifacts: Vec<String>,
}

impl TaskFolded {
    fn take(&mut self, m: &Mail) {
        match &m.body {
            MailBody::TaskUpdate(u) if u.status == TaskUpdateStatus::Failed => {
                let message = u.error.as_ref().and_then(|e| e.message.clone());
                self.failed = Some(message.unwrap_or_else(|| "it reported failed".into()));
            }
            // The first one counts (a second is refused when sent).
            MailBody::Result { summary, artifacts } if self.result.is_none() => {
                self.result = Some(TaskResult { summary: summary.clone(), artifacts: artifacts.clone() });
            }
            MailBody::UsageReport(r) => self.reported = Some(crate::worker::usage::Reading::add(self.reported.take(), r)),
            _ => {}
        }
    }
}

/// A task's mailbox as one pass read it.
#[derive(Debug, Clone, Default)]
pub(crate) struct TaskMail {
    /// The attempt's mailbox folded so far, this pass's new events taken in (`None`: not read).
    pub(crate) folded: Option<TaskFolded>,
    /// `folded` moved on in this pass: it is written back with the pass's update.
    pub(crate) fold_changed: bool,
    /// This pass's new task updates of the attempt, in order (at most [`UPDATES_PER_PASS`]).
    pub(crate) updates: Vec<Mail>,
    /// This pass's other new events of the attempt (progress, questions, decisions, memories),
    /// in order (at most [`UPDATES_PER_PASS`]; more are counted in a note). Its result is in
    /// `folded`.
    pub(crate) events: Vec<Mail>,
    /// The highest sequence among new task updates beyond those: folded without a log entry
    /// of their own (a note counts them).
    pub(crate) more_sequence: u64,
    /// Notes on lines skipped, paths dropped and updates not logged one by one: (log key,
    /// text), each naming the file and the line.
    pub(crate) notes: Vec<(String, String)>,
    /// The mailbox cannot be read at all (named, with why): the attempt fails once it ended.
    pub(crate) error: Option<String>,
    /// Read from the one mailbox an older guild-hall gave every attempt (`events.jsonl`).
    pub(crate) legacy: bool,
}

fn status_name(s: TaskUpdateStatus) -> &'static str {
    match s {
        TaskUpdateStatus::Queued => "queued",
        TaskUpdateStatus::InProgress => "in_progress",
        TaskUpdateStatus::VerifyPassed => "verify_passed",
        TaskUpdateStatus::VerifyFailed => "verify_failed",
        TaskUpdateStatus::Done => "done",
        TaskUpdateStatus::Failed => "failed",
        TaskUpdateStatus::Canceled => "canceled",
        TaskUpdateStatus::ShutdownRequested => "shutdown_requested",
        TaskUpdateStatus::ShutdownAck => "shutdown_ack",
    }
}

/// Read what is new in the mailbox of the task's `attempt` (its runtime dir `state`): each
/// line checked (an event of another attempt skipped, every path checked against `worktree`,
/// the worktree made for the task), folded, the first [`UPDATES_PER_PASS`] task updates kept
/// for the log. `last`: no one writes any more (an unterminated last line is read too).
/// `canonical` keys the notes in the plan's log. A kept position that cannot be read starts
/// the reading over.
pub(crate) fn read(state: &StateDir, canonical: &str, attempt: u32, worktree: &Path, last: bool) -> TaskMail {
    let path = mailbox::attempt_mailbox(state, attempt);
    // An attempt an older guild-hall started shares one mailbox with the earlier attempts:
    // only its own events count.
    let legacy = path != mailbox::attempt_file(state, attempt);
    let fold_path = mailbox::folded_file(state, attempt);
    let before = match read_json::<TaskFolded>(&fold_path) {
        Ok(Some(f)) if f.attempt == attempt => f,
        Ok(_) => TaskFolded { attempt, ..TaskFolded::default() },
        Err(e) => {
            tracing::warn!(file = %fold_path.display(), error = %format!("{e:#}"), "the mailbox's read position cannot be read: reading the mailbox again from its start");
            TaskFolded { attempt, ..TaskFolded::default() }
        }
    };
    let mut out = TaskMail { legacy, ..TaskMail::default() };
    let mut folded = before.clone();
    let mut cursor = before.cursor.clone();
    let expect = Expect { attempt: (!legacy).then_some(attempt), worktree: worktree.is_dir().then_some(worktree), last };
    let file = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let (mut first, mut unnoted) = (None, 0u64);
    let mut more: BTreeMap<&'static str, u64> = BTreeMap::new();
    let read = mailbox::read_from(&path, &mut cursor, expect, |line| {
        first.get_or_insert(line.number);
        for (i, text) in line.notes.into_iter().enumerate() {
            if out.notes.len() < NOTES_PER_PASS {
                out.notes.push((format!("mailbox:{canonical}:{attempt}:{file}:{}:{i}", line.number), text));
            } else {
                unnoted += 1;
            }
        }
        let Some(m) = line.mail.filter(|m| m.attempt == attempt) else { return };
        folded.take(&m);
        let u = match &m.body {
            MailBody::TaskUpdate(u) => u,
            MailBody::Result { .. } => return,
            other => {
                if out.events.len() < UPDATES_PER_PASS {
                    out.events.push(m);
                } else {
                    *more.entry(other.kind()).or_default() += 1;
                }
                return;
            }
        };
        if out.updates.len() < UPDATES_PER_PASS {
            out.updates.push(m);
        } else {
            *more.entry(status_name(u.status)).or_default() += 1;
            out.more_sequence = out.more_sequence.max(u.sequence);
        }
    });
    if let Err(e) = read {
        // Nothing of a read that failed half way is used: the next pass reads it again.
        return TaskMail { folded: Some(before), error: Some(format!("{e:#}")), legacy, ..TaskMail::default() };
    }
    let first = first.unwrap_or(0);
    let key = format!("mailbox:{canonical}:{attempt}:{file}:{first}");
    out.notes.extend(mailbox::overflow_notes(&key, &file, unnoted, " (see the log)", &more, |kinds| {
        format!("more task updates (or other events) than a pass logs one by one ({UPDATES_PER_PASS} of each): {kinds} were folded without their own entry")
    }));
    folded.cursor = cursor;
    out.fold_changed = folded != before;
    out.folded = Some(folded);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::worker::toolbox::mailbox::{TaskError, TaskUpdate};
    use std::path::Path;

    fn update(status: TaskUpdateStatus, seq: u64) -> MailBody {
        let error =
            (status == TaskUpdateStatus::Failed).then(|| TaskError { code: None, message: Some("broke".into()), details_path: None });
        let mut u = TaskUpdate {
            task_id: None,
            phase: None,
            stage: None,
            status,
            worktree_path: None,
            changed_ops: vec![],
            verify_summary: None,
            evidence_paths: vec![],
            error,
            timestamps: None,
            emitted_at: None,
            sequence: seq,
            idempotency_key: format!("k{seq}"),
        };
        u.complete("p:exec:wave-1:task-1", Path::new("/tmp"), "2026-01-01T00:00:00Z").expect("complete");
        MailBody::TaskUpdate(Box::new(u))
    }

    #[test]
    fn a_flood_is_folded_whole_logged_in_part_and_read_once() {
        let dir = tempfile::tempdir().expect("tmp");
        let state = StateDir(dir.path().to_path_buf());
        let path = mailbox::make_fresh(&state, 2).expect("fresh");
        for i in 1..=UPDATES_PER_PASS as u64 + 5 {
            mailbox::append(&path, 2, update(TaskUpdateStatus::InProgress, i)).expect("append");
        }
        mailbox::append(&path, 2, update(TaskUpdateStatus::Failed, 9999)).expect("append");
        mailbox::append(&path, 1, update(TaskUpdateStatus::Failed, 1)).expect("append");
        let wt = dir.path().join("wt");
        let m = read(&state, "p:exec:wave-1:task-1", 2, &wt, false);
        assert!(m.error.is_none() && m.fold_changed && !m.legacy);
        assert_eq!(m.updates.len(), UPDATES_PER_PASS);
        assert_eq!(m.more_sequence, 9999);
        let folded = m.folded.clone().expect("folded");
        assert_eq!(folded.failed.as_deref(), Some("broke"));
        let notes: Vec<&str> = m.notes.iter().map(|(_, t)| t.as_str()).collect();
        assert!(notes.iter().any(|t| t.contains("failed x1, in_progress x5 were folded")), "{notes:?}");
        assert!(notes.iter().any(|t| t.contains("an event of attempt 1 in the mailbox of attempt 2")), "{notes:?}");
        // Kept: the next read has nothing new, and still knows the attempt failed.
        crate::files::write_json(&mailbox::folded_file(&state, 2), &folded).expect("keep");
        let again = read(&state, "p:exec:wave-1:task-1", 2, &wt, false);
        assert!(!again.fold_changed && again.updates.is_empty() && again.notes.is_empty());
        assert_eq!(again.folded.and_then(|f| f.failed).as_deref(), Some("broke"));
    }
}
