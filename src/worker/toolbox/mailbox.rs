//! The mailbox file: JSON lines appended under an exclusive lock, each with a sequence number
//! and a unique id, and its one reader. The reader trusts nothing in the file: it reads from a
//! position on, in bounded pieces; a line over [`LINE_MAX`], not UTF-8, not JSON or not an
//! event is skipped and noted with its file and line number; texts are cut to [`TEXT_MAX`]
//! with a marker ([`clip`]); every path is checked ([`check_path`]) and a bad one dropped.

use std::borrow::Cow;
use std::io::{BufRead, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use chrono::{SecondsFormat, Utc};
use nix::fcntl::{Flock, FlockArg};
use serde::{Deserialize, Serialize};

use crate::activity::names::ActivityKind;
use crate::activity::state::StateDir;

/// The most events of one mailbox a pass records in the timeline one by one; more are folded
/// all the same and counted in one note (a worker cannot make a pass hold its flood).
pub(crate) const MAIL_PER_PASS: usize = 1000;
/// The most notes on skipped lines and dropped paths a pass records one by one.
pub(crate) const NOTES_PER_PASS: usize = 100;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Mail {
    pub(crate) seq: u64,
    pub(crate) id: String,
    pub(crate) ts: String,
    pub(crate) attempt: u32,
    #[serde(flatten)]
    pub(crate) body: MailBody,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum MailBody {
    Progress {
        text: String,
    },
    Question {
        text: String,
    },
    Decision {
        question: String,
        decision: String,
        reasoning: String,
    },
    Result {
        summary: String,
        #[serde(default)]
        artifacts: Vec<String>,
    },
    /// A memory was stored (its content lives in the memory dir, not the mailbox).
    Memory {
        key: String,
    },
    /// A meeting's `link_artifact`.
    Link {
        path: String,
    },
    /// A meeting's `summarize_progress`.
    Summary {
        text: String,
    },
    /// A wave task's `task_update` (Kiln's TaskUpdate).
    TaskUpdate(Box<TaskUpdate>),
    /// `report_usage`: what the worker's own calls of a model used (the worker's word).
    UsageReport(crate::worker::usage::Reading),
    /// A meeting's `propose_followup`: a new request for the same worker.
    Followup {
        reason: String,
        #[serde(default)]
        references: Vec<String>,
    },
    /// A commission's `ask`: a question its worker waits on until a person answers it (or
    /// its `ask_timeout` passes). The reconciler numbers it and answers it in the answers dir
    /// ([`answers_dir`]), in a file named after this event's id.
    Ask {
        text: String,
    },
    /// A commission's `request_meeting`: guild-hall writes a `requested` meeting with its
    /// worker, the reason as its agenda.
    MeetingRequest {
        reason: String,
    },
    /// A reviewer worker's `submit_result` with `--verdict`: its verdict on the diff it was
    /// given, a summary, and comments on lines of the work.
    Verdict {
        verdict: Verdict,
        summary: String,
        #[serde(default)]
        comments: Vec<LineComment>,
    },
}

/// A reviewer's verdict on an attempt's diff.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Verdict {
    /// The work may go on (to a person's review, or the merge).
    Approve,
    /// The work goes back to its worker with the comments.
    Changes,
}

impl Verdict {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Verdict::Approve => "approve",
            Verdict::Changes => "changes",
        }
    }
}

/// A reviewer's comment on a line of the work (`--comment PATH:LINE TEXT`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct LineComment {
    /// A path in the work, relative to the worktree.
    pub(crate) path: String,
    /// The line (1-based); `None`: the file as a whole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) line: Option<u32>,
    pub(crate) text: String,
}

/// The most comments one verdict carries (more are dropped where it is read, and noted).
pub(crate) const COMMENTS_PER_VERDICT: usize = 100;

impl MailBody {
    /// Its timeline event kind.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            MailBody::Progress { .. } => "progress",
            MailBody::Question { .. } => "question",
            MailBody::Decision { .. } => "decision",
            MailBody::Result { .. } => "result",
            MailBody::Memory { .. } => "memory",
            MailBody::Link { .. } => "link",
            MailBody::Summary { .. } => "summary",
            MailBody::Followup { .. } => "followup",
            MailBody::TaskUpdate(_) => "task_update",
            MailBody::UsageReport(_) => "usage_report",
            // A question a person is to answer: a `question` in the timeline like a logged one
            // (its fields say it waits: `waiting: true` and its number).
            MailBody::Ask { .. } => "question",
            MailBody::MeetingRequest { .. } => "meeting_request",
            MailBody::Verdict { .. } => "verdict",
        }
    }

    /// The event as timeline fields (its kind is the event's kind; `attempt` added).
    pub(crate) fn timeline_fields(&self, attempt: u32) -> serde_json::Value {
        let mut fields = serde_json::to_value(self).unwrap_or(serde_json::Value::Null);
        if let serde_json::Value::Object(f) = &mut fields {
            f.remove("kind");
            f.insert("attempt".into(), attempt.into());
            if matches!(self, MailBody::Ask { .. }) {
                f.insert("waiting".into(), true.into());
            }
        }
        fields
    }
}

/// Kiln's TaskUpdate payload (the contract's schema): what a wave task reports of itself.
/// `task_id`, `phase`, `stage`, `worktree_path`, `emitted_at` and `timestamps.updated_at` are
/// required of an update as recorded ([`TaskUpdate::validate`]: one without them is dropped
/// where it is read, and noted); the toolbox fills those a worker leaves out
/// ([`TaskUpdate::complete`]), so a worker may send only its status, sequence and key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct TaskUpdate {
    /// The canonical task id `<plan>:exec:wave-<W>:task-<T>` (default: this task's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) task_id: Option<String>,
    /// The phase: the plan's id, the task id's first part (default: this task's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) phase: Option<String>,
    /// The stage: `execute`, the only one of a wave task (default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) stage: Option<String>,
    /// The task's state: queued, in_progress, verify_passed, verify_failed, done, failed,
    /// canceled, shutdown_requested or shutdown_ack.
    pub(crate) status: TaskUpdateStatus,
    /// The worktree the task works in (default: this task's; another is refused).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) worktree_path: Option<String>,
    /// The changes made: {op: add|modify|delete|rename|untracked, path, from_path}.
    #[serde(default)]
    pub(crate) changed_ops: Vec<ChangedOp>,
    /// What the task's own verification found: {result: pass|fail|skipped, command_summary:
    /// [text], checks: [{name, outcome: pass|fail|skipped}]}.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) verify_summary: Option<VerifySummary>,
    /// Evidence files, under `.lore-artifacts/<task-slug>/`.
    #[serde(default)]
    pub(crate) evidence_paths: Vec<String>,
    /// What went wrong, when the status is failed: {code, message, details_path}.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<TaskError>,
    /// When the task's steps happened: {started_at, updated_at, completed_at}, RFC 3339 in UTC
    /// (`updated_at` defaults to `emitted_at`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) timestamps: Option<Timestamps>,
    /// When the worker sent this update, RFC 3339 in UTC (default: now).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) emitted_at: Option<String>,
    /// Monotonic per task: a lower one than the highest applied is ignored.
    pub(crate) sequence: u64,
    /// Stable for a logically identical update: a repeated key is a no-op.
    pub(crate) idempotency_key: String,
}

/// A task's own verification, as the contract shapes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct VerifySummary {
    pub(crate) result: CheckOutcome,
    /// Each command run and how it ended.
    #[serde(default)]
    pub(crate) command_summary: Vec<String>,
    #[serde(default)]
    pub(crate) checks: Vec<Check>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Check {
    pub(crate) name: String,
    pub(crate) outcome: CheckOutcome,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum CheckOutcome {
    Pass,
    Fail,
    Skipped,
}

/// What went wrong, as the contract shapes it; `details_path` is checked like an evidence path.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct TaskError {
    #[serde(default)]
    pub(crate) code: Option<String>,
    #[serde(default)]
    pub(crate) message: Option<String>,
    #[serde(default)]
    pub(crate) details_path: Option<String>,
}

/// When a task's steps happened, each RFC 3339 in UTC.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Timestamps {
    #[serde(default)]
    pub(crate) started_at: Option<String>,
    /// Required as recorded; the toolbox fills it with `emitted_at`.
    #[serde(default)]
    pub(crate) updated_at: Option<String>,
    #[serde(default)]
    pub(crate) completed_at: Option<String>,
}

/// Whether `t` is an RFC 3339 time in UTC (`Z` or `+00:00`), as the contract's "ISO-8601-UTC".
fn utc_time(t: &str) -> bool {
    chrono::DateTime::parse_from_rfc3339(t).is_ok_and(|d| d.offset().local_minus_utc() == 0)
}

/// Why a task update does not hold what the contract requires ([`TaskUpdate::complete`],
/// [`TaskUpdate::validate`]).
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum TaskUpdateError {
    #[error("task_id {given:?} is not this task ({task})")]
    OtherTask { given: String, task: String },
    #[error("phase {given:?} is not this task's ({plan}, its plan)")]
    OtherPhase { given: String, plan: String },
    #[error("stage {0:?}: a wave task's stage is \"execute\"")]
    Stage(String),
    #[error("worktree_path {given:?} is not this task's worktree ({})", .worktree.display())]
    OtherWorktree { given: String, worktree: std::path::PathBuf },
    /// The required fields left out, by name.
    #[error("missing required {}", .0.join(", "))]
    Missing(Vec<&'static str>),
    #[error("task_id {0:?} is not a canonical task id (<plan>:exec:wave-<W>:task-<T>)")]
    NotCanonical(String),
    #[error("phase {phase:?} is not the task's plan ({plan})")]
    NotItsPlan { phase: String, plan: String },
    /// `shown`: the time as given, clipped.
    #[error("{name} {shown:?} is not an RFC 3339 time in UTC (2025-01-31T12:00:00Z)")]
    NotUtc { name: &'static str, shown: String },
    #[error("error.details_path: {0}")]
    DetailsPath(crate::artifact::ids::IdError),
}

impl TaskUpdate {
    /// Fill what the contract requires and the worker left out, from what the toolbox knows of
    /// its task (canonical id, worktree) and the clock; what it gave that disagrees is refused.
    pub(crate) fn complete(&mut self, task_id: &str, worktree: &Path, now: &str) -> std::result::Result<(), TaskUpdateError> {
        match &self.task_id {
            Some(given) if given != task_id => return Err(TaskUpdateError::OtherTask { given: given.clone(), task: task_id.to_string() }),
            _ => self.task_id = Some(task_id.to_string()),
        }
        let plan = task_id.split(':').next().unwrap_or_default();
        match &self.phase {
            Some(given) if given != plan => return Err(TaskUpdateError::OtherPhase { given: given.clone(), plan: plan.to_string() }),
            _ => self.phase = Some(plan.to_string()),
        }
        match &self.stage {
            Some(given) if given != "execute" => return Err(TaskUpdateError::Stage(given.clone())),
            _ => self.stage = Some("execute".into()),
        }
        let mine = worktree.canonicalize().unwrap_or_else(|_| worktree.to_path_buf());
        match &self.worktree_path {
            Some(given) if Path::new(given).canonicalize().ok().as_deref() != Some(mine.as_path()) => {
                return Err(TaskUpdateError::OtherWorktree { given: given.clone(), worktree: mine })
            }
            _ => self.worktree_path = Some(mine.to_string_lossy().into_owned()),
        }
        let emitted = self.emitted_at.get_or_insert_with(|| now.to_string()).clone();
        let stamps = self.timestamps.get_or_insert(Timestamps { started_at: None, updated_at: None, completed_at: None });
        stamps.updated_at.get_or_insert(emitted);
        self.validate()
    }

    /// Whether the update holds what the contract requires, in its shapes: the required fields
    /// present, the task id canonical with its plan as `phase`, `stage` `execute`, every time
    /// RFC 3339 in UTC, an error's `details_path` relative and inside. Why not, when not.
    pub(crate) fn validate(&self) -> std::result::Result<(), TaskUpdateError> {
        let missing: Vec<&str> = [
            ("task_id", self.task_id.is_none()),
            ("phase", self.phase.is_none()),
            ("stage", self.stage.is_none()),
            ("worktree_path", self.worktree_path.is_none()),
            ("emitted_at", self.emitted_at.is_none()),
            ("timestamps.updated_at", self.timestamps.as_ref().is_none_or(|t| t.updated_at.is_none())),
        ]
        .into_iter()
        .filter_map(|(name, gone)| gone.then_some(name))
        .collect();
        if !missing.is_empty() {
            return Err(TaskUpdateError::Missing(missing));
        }
        let task_id = self.task_id.as_deref().unwrap_or_default();
        let parts: Vec<&str> = task_id.split(':').collect();
        let numbered =
            |p: &str, prefix: &str| p.strip_prefix(prefix).is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
        if !(parts.len() == 4 && parts[1] == "exec" && numbered(parts[2], "wave-") && numbered(parts[3], "task-")) {
            return Err(TaskUpdateError::NotCanonical(task_id.to_string()));
        }
        if self.phase.as_deref() != Some(parts[0]) {
            return Err(TaskUpdateError::NotItsPlan {
                phase: self.phase.as_deref().unwrap_or_default().to_string(),
                plan: parts[0].to_string(),
            });
        }
        if self.stage.as_deref() != Some("execute") {
            return Err(TaskUpdateError::Stage(self.stage.as_deref().unwrap_or_default().to_string()));
        }
        let stamps = self.timestamps.as_ref();
        let times = [
            ("emitted_at", self.emitted_at.as_deref()),
            ("timestamps.started_at", stamps.and_then(|t| t.started_at.as_deref())),
            ("timestamps.updated_at", stamps.and_then(|t| t.updated_at.as_deref())),
            ("timestamps.completed_at", stamps.and_then(|t| t.completed_at.as_deref())),
        ];
        for (name, t) in times {
            if let Some(t) = t.filter(|t| !utc_time(t)) {
                return Err(TaskUpdateError::NotUtc { name, shown: clip(t, 64).into_owned() });
            }
        }
        if let Some(p) = self.error.as_ref().and_then(|e| e.details_path.as_deref()) {
            crate::artifact::ids::validate_rel_path(p).map_err(TaskUpdateError::DetailsPath)?;
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum TaskUpdateStatus {
    Queued,
    InProgress,
    VerifyPassed,
    VerifyFailed,
    Done,
    Failed,
    Canceled,
    ShutdownRequested,
    ShutdownAck,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ChangedOp {
    pub(crate) op: ChangeKind,
    pub(crate) path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) from_path: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ChangeKind {
    Add,
    Modify,
    Delete,
    Rename,
    Untracked,
}

/// The longest mailbox line read: a longer one is skipped and noted, and never held in memory
/// whole. The toolbox refuses to write one.
pub(crate) const LINE_MAX: usize = 1024 * 1024;
/// The most of any one text of an event (progress, question, decision, result summary,
/// meeting summary, follow-up reason) guild-hall keeps: a longer one is cut by [`clip`].
pub(crate) const TEXT_MAX: usize = 4096;
/// How much of the file is read at once.
const PIECE: usize = 64 * 1024;
/// Notes logged per read, one by one (the rest are counted).
const LOGGED_NOTES: usize = 20;

/// `text` cut to at most `max` bytes (at a character boundary), ending with a visible marker
/// that says how long it was, when it was longer: the one place mailbox texts are shortened.
pub(crate) fn clip(text: &str, max: usize) -> Cow<'_, str> {
    if text.len() <= max {
        return Cow::Borrowed(text);
    }
    let marker = format!(" … [truncated by guild-hall: {} bytes, the limit is {max}]", text.len());
    let mut keep = max.saturating_sub(marker.len());
    while !text.is_char_boundary(keep) {
        keep -= 1;
    }
    Cow::Owned(format!("{}{marker}", &text[..keep]))
}

fn clip_in(text: &mut String) {
    if text.len() > TEXT_MAX {
        *text = clip(text, TEXT_MAX).into_owned();
    }
}

/// The most commands and checks of one verify summary kept (the rest are dropped).
const LISTED_MAX: usize = 100;

/// A path named in an event, checked as the toolbox checks it ([`path_in_worktree`]):
/// relative, no `..`, and, given the worktree, inside it with no link leading out. The
/// normalised path, or why not.
pub(crate) fn check_path(path: &str, worktree: Option<&Path>) -> std::result::Result<String, EventPathError> {
    match worktree {
        Some(wt) => path_in_worktree(wt, path, false).map_err(EventPathError::Outside),
        None => crate::artifact::ids::validate_rel_path(path).map_err(|_| EventPathError::NotRelative),
    }
}

/// Why a path named in an event is dropped ([`check_path`]); said after "it".
#[derive(Debug, thiserror::Error)]
pub(crate) enum EventPathError {
    /// Not inside the worktree, as the toolbox checks it.
    #[error("{0:#}")]
    Outside(anyhow::Error),
    #[error("is not a relative path inside the worktree (absolute, empty, or with '..')")]
    NotRelative,
}

/// Make an event safe to fold: texts clipped, paths checked. Returns whether anything is left
/// of it, and a note for each path dropped.
fn sanitise(body: &mut MailBody, worktree: Option<&Path>) -> (bool, Vec<String>) {
    let mut notes = Vec::new();
    let mut paths = |what: &str, list: &mut Vec<String>| {
        list.retain_mut(|p| match check_path(p, worktree) {
            Ok(norm) => {
                *p = norm;
                true
            }
            Err(why) => {
                notes.push(format!("{what} {:?} dropped: it {}", clip(p, 256), clip(&why.to_string(), 512)));
                false
            }
        });
    };
    let mut keep = true;
    match body {
        MailBody::Progress { text } | MailBody::Question { text } | MailBody::Summary { text } | MailBody::Ask { text } => clip_in(text),
        MailBody::MeetingRequest { reason } => clip_in(reason),
        MailBody::Decision { question, decision, reasoning } => {
            for t in [question, decision, reasoning] {
                clip_in(t);
            }
        }
        MailBody::Result { summary, artifacts } => {
            clip_in(summary);
            paths("artifact", artifacts);
        }
        MailBody::Verdict { summary, comments, .. } => {
            clip_in(summary);
            if comments.len() > COMMENTS_PER_VERDICT {
                notes.push(format!("{} comments past the first {COMMENTS_PER_VERDICT} dropped", comments.len() - COMMENTS_PER_VERDICT));
                comments.truncate(COMMENTS_PER_VERDICT);
            }
            comments.retain_mut(|c| {
                clip_in(&mut c.text);
                match check_path(&c.path, worktree) {
                    Ok(norm) => {
                        c.path = norm;
                        true
                    }
                    Err(why) => {
                        notes.push(format!("comment on {:?} dropped: it {}", clip(&c.path, 256), clip(&why.to_string(), 512)));
                        false
                    }
                }
            });
        }
        MailBody::Memory { key } => clip_in(key),
        MailBody::UsageReport(r) => {
            if let Some(m) = &mut r.model {
                clip_in(m);
            }
        }
        MailBody::Link { path } => {
            let mut one = vec![std::mem::take(path)];
            paths("linked artifact", &mut one);
            match one.pop() {
                Some(p) => *path = p,
                None => keep = false,
            }
        }
        MailBody::Followup { reason, references } => {
            clip_in(reason);
            paths("reference", references);
        }
        MailBody::TaskUpdate(u) => {
            if let Err(why) = u.validate() {
                notes.push(format!("task update dropped: {}", clip(&why.to_string(), 512)));
                return (false, notes);
            }
            for t in [&mut u.phase, &mut u.stage, &mut u.worktree_path].into_iter().flatten() {
                clip_in(t);
            }
            if let Some(e) = &mut u.error {
                for t in [&mut e.code, &mut e.message].into_iter().flatten() {
                    clip_in(t);
                }
                if let Some(p) = e.details_path.take() {
                    let mut one = vec![p];
                    paths("error details path", &mut one);
                    e.details_path = one.pop();
                }
            }
            if let Some(v) = &mut u.verify_summary {
                v.command_summary.truncate(LISTED_MAX);
                v.checks.truncate(LISTED_MAX);
                v.command_summary.iter_mut().for_each(clip_in);
                v.checks.iter_mut().for_each(|c| clip_in(&mut c.name));
            }
            u.changed_ops.retain_mut(|op| {
                let mut both = vec![std::mem::take(&mut op.path)];
                both.extend(op.from_path.take());
                let n = both.len();
                paths("changed path", &mut both);
                if both.len() < n {
                    return false;
                }
                op.from_path = (n == 2).then(|| both.pop()).flatten();
                op.path = both.pop().unwrap_or_default();
                true
            });
            paths("evidence path", &mut u.evidence_paths);
        }
    }
    (keep, notes)
}

/// Where a reader stands in a mailbox file, kept between passes so that only new bytes are
/// read.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Cursor {
    /// The file's name: a position means nothing in another file.
    pub(crate) file: String,
    /// Bytes read: where the next line starts.
    pub(crate) offset: u64,
    /// Lines read (the next line's number is one more).
    pub(crate) lines: u64,
    /// Inside a line over [`LINE_MAX`], already noted: the rest of it is skipped.
    #[serde(default)]
    pub(crate) skipping: bool,
}

/// What the events read must be.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Expect<'a> {
    /// The attempt whose mailbox this is: an event of another attempt is skipped and noted.
    pub(crate) attempt: Option<u32>,
    /// The worktree every path of an event must stay inside.
    pub(crate) worktree: Option<&'a Path>,
    /// No one writes any more: an unterminated last line is complete, and read too.
    pub(crate) last: bool,
}

/// One line as read: its event, checked (none if the line was skipped), and notes on what was
/// skipped or dropped, each naming the file and the line.
#[derive(Debug)]
pub(crate) struct Line {
    pub(crate) number: u64,
    pub(crate) mail: Option<Mail>,
    pub(crate) notes: Vec<String>,
}

fn name_of(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// The notes a pass leaves (timeline key, text) about what of a mailbox it did not record one
/// by one: `unnoted` lines skipped or paths dropped beyond those noted singly, and `more`
/// events, by kind, folded without an entry of their own. `key` starts every note's key (the
/// mailbox and the line the read began at); `skipped` and `folded` finish their texts. One
/// wording for every kind that reads a mailbox.
pub(crate) fn overflow_notes(
    key: &str,
    file: &str,
    unnoted: u64,
    skipped: &str,
    more: &std::collections::BTreeMap<&'static str, u64>,
    folded: impl FnOnce(String) -> String,
) -> Vec<(String, String)> {
    let mut notes = Vec::new();
    if unnoted > 0 {
        notes.push((format!("{key}:unnoted"), format!("{file}: {unnoted} more lines skipped or paths dropped in this read{skipped}")));
    }
    if !more.is_empty() {
        let kinds: Vec<String> = more.iter().map(|(k, n)| format!("{k} x{n}")).collect();
        notes.push((format!("{key}:more"), format!("{file}: {}", folded(kinds.join(", ")))));
    }
    notes
}

/// Read the lines of the mailbox at `path` after `cursor`, moving it on, and hand each to
/// `each`. At most one line (up to [`LINE_MAX`]) and one piece of the file are held in memory
/// at once. A missing file has no lines; a file shorter than the cursor (replaced) is read
/// again from its start. Notes are also logged, with the file's path.
pub(crate) fn read_from(path: &Path, cursor: &mut Cursor, expect: Expect<'_>, mut each: impl FnMut(Line)) -> Result<()> {
    let name = name_of(path);
    if cursor.file != name {
        *cursor = Cursor { file: name.clone(), ..Cursor::default() };
    }
    let file = match open_for_reading(path) {
        Ok(Some(f)) => f,
        Ok(None) => return Ok(()),
        Err(e) => return Err(e).with_context(|| format!("opening mailbox {}", path.display())),
    };
    let len = file.metadata().with_context(|| format!("reading mailbox {}", path.display()))?.len();
    if len < cursor.offset {
        tracing::warn!(mailbox = %path.display(), "the mailbox is shorter than what was read of it: read again from its start");
        *cursor = Cursor { file: name.clone(), ..Cursor::default() };
    }
    let mut logged = 0usize;
    let mut log_and_pass = |line: Line| {
        for n in &line.notes {
            logged += 1;
            if logged <= LOGGED_NOTES {
                tracing::warn!(mailbox = %path.display(), "{n}");
            }
        }
        each(line)
    };
    scan(&file, cursor, expect, &name, &mut log_and_pass).with_context(|| format!("reading mailbox {}", path.display()))?;
    if logged > LOGGED_NOTES {
        tracing::warn!(mailbox = %path.display(), "{} more notes on this mailbox were not logged one by one", logged - LOGGED_NOTES);
    }
    Ok(())
}

/// The mode a mailbox has: guild-hall's file, read and written by its owner only.
const MODE: u32 = 0o600;

/// Open the mailbox at `path` for reading (`None`: there is none). Never through a link: the
/// mailbox is a file guild-hall made. Its mode is guild-hall's too: a worker owns the file it
/// writes (same uid) and Landlock does not cover `chmod`, so a mode it took away (`chmod 000`)
/// is given back (0600) first — on the file opened (by descriptor, through `/proc/self/fd`),
/// never on whatever the path names by then.
fn open_for_reading(path: &Path) -> std::io::Result<Option<std::fs::File>> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
    use std::os::unix::io::AsRawFd;
    // O_PATH: a handle on the file itself whatever its mode, that reads nothing.
    let handle = match std::fs::OpenOptions::new().read(true).custom_flags(libc::O_PATH | libc::O_NOFOLLOW).open(path) {
        Ok(h) => h,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let meta = handle.metadata()?;
    if meta.file_type().is_symlink() {
        return Err(std::io::Error::other("it is a symbolic link, not the file guild-hall made (never followed)"));
    }
    if !meta.is_file() {
        return Err(std::io::Error::other("it is not a regular file"));
    }
    let by_fd = PathBuf::from(format!("/proc/self/fd/{}", handle.as_raw_fd()));
    let mode = meta.mode() & 0o7777;
    if mode != MODE {
        if mode & 0o600 != 0o600 {
            tracing::warn!(mailbox = %path.display(), "the mailbox's mode was {mode:03o} (its worker changed it): set back to {MODE:03o}");
        }
        // Not the owner (a worker of another uid made it), or no /proc: opening says why.
        let _ = std::fs::set_permissions(&by_fd, std::fs::Permissions::from_mode(MODE));
    }
    match std::fs::File::open(&by_fd) {
        Ok(f) => Ok(Some(f)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // No /proc: by its path, and only if it is still the file looked at.
            let f = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW).open(path)?;
            let now = f.metadata()?;
            if (now.dev(), now.ino()) != (meta.dev(), meta.ino()) {
                return Err(std::io::Error::other("it was replaced while being opened"));
            }
            Ok(Some(f))
        }
        Err(e) => Err(e),
    }
}

/// The reading itself, from `cursor.offset` of `file` on.
fn scan(mut file: &std::fs::File, cursor: &mut Cursor, expect: Expect<'_>, name: &str, each: &mut dyn FnMut(Line)) -> Result<()> {
    file.seek(SeekFrom::Start(cursor.offset))?;
    let mut reader = std::io::BufReader::with_capacity(PIECE, file);
    let mut line: Vec<u8> = Vec::new();
    let mut too_long = cursor.skipping;
    let mut line_start = cursor.offset;
    let mut pos = cursor.offset;
    let over =
        |number: u64| Line { number, mail: None, notes: vec![format!("{name} line {number}: longer than {LINE_MAX} bytes: skipped")] };
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            break;
        }
        let newline = buf.iter().position(|&b| b == b'\n');
        let piece = &buf[..newline.unwrap_or(buf.len())];
        if !too_long {
            if line.len() + piece.len() > LINE_MAX {
                too_long = true;
                line = Vec::new();
            } else {
                line.extend_from_slice(piece);
            }
        }
        let took = newline.map_or(buf.len(), |i| i + 1);
        reader.consume(took);
        pos += took as u64;
        if newline.is_some() {
            cursor.lines += 1;
            if !too_long {
                each(parse_line(cursor.lines, &line, line_start, expect, name));
            } else if !cursor.skipping {
                each(over(cursor.lines));
            }
            line.clear();
            too_long = false;
            cursor.skipping = false;
            line_start = pos;
            cursor.offset = pos;
        }
    }
    if pos > line_start {
        // An unterminated last line: complete if no one writes any more; over the limit
        // whatever comes (noted now, its rest skipped); else still being written.
        if expect.last {
            cursor.lines += 1;
            if !too_long {
                each(parse_line(cursor.lines, &line, line_start, expect, name));
            } else if !cursor.skipping {
                each(over(cursor.lines));
            }
            cursor.skipping = false;
            cursor.offset = pos;
        } else if too_long {
            if !cursor.skipping {
                each(over(cursor.lines + 1));
            }
            cursor.skipping = true;
            cursor.offset = pos;
        }
    }
    Ok(())
}

/// One complete line: its event, checked, or why it is not one.
fn parse_line(number: u64, bytes: &[u8], offset: u64, expect: Expect<'_>, name: &str) -> Line {
    let skipped = |why: String| Line { number, mail: None, notes: vec![format!("{name} line {number}: {why}: skipped")] };
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => return skipped(format!("not UTF-8 (bad byte at column {})", e.valid_up_to() + 1)),
    };
    if text.trim().is_empty() {
        return Line { number, mail: None, notes: Vec::new() };
    }
    let mut mail: Mail = match serde_json::from_str(text) {
        Ok(m) => m,
        Err(e) => return skipped(format!("not a mailbox event ({})", clip(&e.to_string(), 300))),
    };
    if let Some(a) = expect.attempt.filter(|a| *a != mail.attempt) {
        return skipped(format!("an event of attempt {} in the mailbox of attempt {a}", mail.attempt));
    }
    // The id keys the event in the timeline: one that is not the toolbox's (a UUID) could be
    // any other event's key there, so it is replaced by where the line is.
    if uuid::Uuid::parse_str(&mail.id).is_err() {
        mail.id = format!("{name}@{offset}");
    }
    if mail.ts.len() > 64 {
        mail.ts = clip(&mail.ts, 64).into_owned();
    }
    let (keep, dropped) = sanitise(&mut mail.body, expect.worktree);
    let notes = dropped.into_iter().map(|d| format!("{name} line {number}: {d}")).collect();
    Line { number, mail: keep.then_some(mail), notes }
}

/// The mailbox of one attempt of a commission or a wave task: a file of its own, so that
/// nothing an attempt writes can be read as another's.
pub(crate) fn attempt_file(state: &StateDir, attempt: u32) -> PathBuf {
    state.0.join(format!("events-{attempt}.jsonl"))
}

/// The mailbox to read for an attempt: its own, or, for an attempt an older guild-hall started
/// (one `events.jsonl` for every attempt), that one.
pub(crate) fn attempt_mailbox(state: &StateDir, attempt: u32) -> PathBuf {
    let own = attempt_file(state, attempt);
    if std::fs::symlink_metadata(&own).is_err() && std::fs::symlink_metadata(state.mailbox()).is_ok() {
        return state.mailbox();
    }
    own
}

/// Where a reader keeps what it folded of an attempt's mailbox, and how far it read.
pub(crate) fn folded_file(state: &StateDir, attempt: u32) -> PathBuf {
    state.0.join(format!("events-{attempt}.folded.json"))
}

/// Give an attempt about to start an empty mailbox of its own (mode 0600) and no fold of it:
/// anything already there was not written by this attempt, which has not started.
pub(crate) fn make_fresh(state: &StateDir, attempt: u32) -> Result<PathBuf> {
    use std::os::unix::fs::OpenOptionsExt;
    let own = attempt_file(state, attempt);
    if std::fs::symlink_metadata(&own).is_ok_and(|m| !m.is_file() || m.len() > 0) {
        tracing::warn!(mailbox = %own.display(), "a mailbox for an attempt not yet started was there: it is replaced by an empty one");
    }
    crate::files::remove_if_exists(&own)?;
    crate::files::remove_if_exists(&folded_file(state, attempt))?;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(MODE)
        .open(&own)
        .with_context(|| format!("creating the mailbox {}", own.display()))?;
    Ok(own)
}

/// The mailbox a worker process writes (`GUILD_HALL_MAILBOX`): a commission's and a wave
/// task's attempt each have their own; a meeting's turns share one.
pub(crate) fn for_worker(kind: ActivityKind, state: &StateDir, attempt: u32) -> PathBuf {
    match kind {
        ActivityKind::Commission | ActivityKind::Task => attempt_file(state, attempt),
        ActivityKind::Meeting => state.mailbox(),
    }
}

/// Append one event under an exclusive lock; returns it as recorded.
pub(crate) fn append(path: &Path, attempt: u32, body: MailBody) -> Result<Mail> {
    append_if(path, attempt, body, |_| Ok(()))
}

/// Append one event if `allow` accepts every event already there, all under the same exclusive
/// lock: a rule such as "one result per attempt" holds however many writers race. The events
/// are read one at a time, as the reconciler reads them.
pub(crate) fn append_if(path: &Path, attempt: u32, body: MailBody, mut allow: impl FnMut(&Mail) -> Result<()>) -> Result<Mail> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .mode(MODE)
        .read(true)
        .append(true)
        .open(path)
        .with_context(|| format!("opening mailbox {}", path.display()))?;
    let mut file = Flock::lock(file, FlockArg::LockExclusive).map_err(|(_, e)| e).context("locking mailbox")?;
    let mut count = 0u64;
    let mut refused = None;
    let mut cursor = Cursor::default();
    let name = name_of(path);
    scan(&file, &mut cursor, Expect { last: true, ..Expect::default() }, &name, &mut |line| {
        if let Some(m) = line.mail {
            count += 1;
            if refused.is_none() {
                refused = allow(&m).err();
            }
        }
    })?;
    if let Some(e) = refused {
        return Err(e);
    }
    let mail = Mail {
        seq: count + 1,
        id: uuid::Uuid::new_v4().to_string(),
        ts: Utc::now().to_rfc3339_opts(SecondsFormat::Millis, true),
        attempt,
        body,
    };
    let mut line = serde_json::to_string(&mail)?;
    if line.len() > LINE_MAX {
        bail!("the event is {} bytes; a mailbox line holds at most {LINE_MAX} bytes (keep texts short: guild-hall keeps {TEXT_MAX} bytes of each)", line.len());
    }
    line.push('\n');
    // A torn last line (a writer killed mid-line) is closed first, so ours stands on its own.
    let len = file.metadata()?.len();
    if len > 0 {
        let mut last = [0u8; 1];
        file.seek(SeekFrom::Start(len - 1))?;
        file.read_exact(&mut last)?;
        if last[0] != b'\n' {
            line.insert(0, '\n');
        }
    }
    file.write_all(line.as_bytes())?;
    file.sync_data()?;
    Ok(mail)
}

/// `path` as a normalised relative path inside `worktree`: not absolute, no `..`, no link on
/// the way that leads out of the worktree (or nowhere); with `must_exist`, it exists. The one
/// check of a path a worker names: where the toolbox writes an event, and where guild-hall
/// reads it (a worker can append to its mailbox without the toolbox). Errors say what is wrong
/// with the path without repeating it.
pub(crate) fn path_in_worktree(worktree: &std::path::Path, path: &str, must_exist: bool) -> Result<String> {
    let rel = crate::artifact::ids::validate_rel_path(path)
        .map_err(|_| anyhow!("is not a relative path inside the worktree (absolute, empty, or with '..')"))?;
    let root = worktree.canonicalize().map_err(|e| anyhow!("cannot be checked: the worktree {}: {e}", worktree.display()))?;
    match worktree.join(&rel).canonicalize() {
        Ok(real) if real.starts_with(&root) => Ok(rel),
        Ok(_) => bail!("resolves outside the worktree"),
        Err(e) if must_exist => bail!("does not exist in the worktree: {e}"),
        Err(_) => {
            // Not there (yet, or any more): each link on the part that exists must lead inside.
            let mut at = worktree.to_path_buf();
            for part in rel.split('/') {
                at.push(part);
                match std::fs::symlink_metadata(&at) {
                    Ok(m) if m.file_type().is_symlink() => match at.canonicalize() {
                        Ok(real) if real.starts_with(&root) => {}
                        _ => bail!("goes through {part:?}, a link that leads out of the worktree (or nowhere)"),
                    },
                    Ok(_) => {}
                    Err(_) => break,
                }
            }
            Ok(rel)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn progress(text: &str) -> MailBody {
        MailBody::Progress { text: text.into() }
    }

    fn raw(path: &Path, bytes: &[u8]) {
        std::fs::OpenOptions::new().create(true).append(true).open(path).and_then(|mut f| f.write_all(bytes)).expect("append");
    }

    fn read_all(path: &Path, cursor: &mut Cursor, expect: Expect<'_>) -> (Vec<Mail>, Vec<String>) {
        let (mut mail, mut notes) = (Vec::new(), Vec::new());
        read_from(path, cursor, expect, |l| {
            mail.extend(l.mail);
            notes.extend(l.notes);
        })
        .expect("read");
        (mail, notes)
    }

    #[test]
    fn clip_cuts_at_a_character_boundary_with_a_marker() {
        assert_eq!(clip("short", 10), "short");
        let long = "é".repeat(3000);
        let c = clip(&long, TEXT_MAX);
        assert!(c.len() <= TEXT_MAX, "{}", c.len());
        assert!(c.starts_with("éé") && c.ends_with("[truncated by guild-hall: 6000 bytes, the limit is 4096]"), "{c}");
    }

    #[test]
    fn reads_only_new_lines_and_skips_bad_ones_with_their_line_numbers() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("events-1.jsonl");
        append(&path, 1, progress("one")).expect("append");
        raw(&path, b"not \xff utf-8\n{\"kind\":\"progress\"}\n\n");
        append(&path, 1, progress("two")).expect("append");
        let mut cursor = Cursor::default();
        let (mail, notes) = read_all(&path, &mut cursor, Expect::default());
        assert_eq!(mail.iter().map(|m| m.body.clone()).collect::<Vec<_>>(), [progress("one"), progress("two")]);
        assert_eq!(mail[1].seq, 2, "the toolbox counts events, not lines");
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(notes[0].starts_with("events-1.jsonl line 2: not UTF-8"), "{notes:?}");
        assert!(notes[1].starts_with("events-1.jsonl line 3: not a mailbox event"), "{notes:?}");
        assert_eq!(cursor.lines, 5);
        // Nothing new: nothing read. Then only what was appended since.
        assert_eq!(read_all(&path, &mut cursor, Expect::default()).0.len(), 0);
        append(&path, 1, progress("three")).expect("append");
        let (mail, _) = read_all(&path, &mut cursor, Expect::default());
        assert_eq!(mail.iter().map(|m| m.body.clone()).collect::<Vec<_>>(), [progress("three")]);
        assert_eq!(cursor.offset, std::fs::metadata(&path).expect("meta").len());
    }

    #[test]
    fn a_torn_line_waits_for_its_end_unless_no_one_writes_any_more() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("events.jsonl");
        let line = serde_json::to_string(&Mail { seq: 1, id: "x".into(), ts: "t".into(), attempt: 1, body: progress("p") }).expect("json");
        raw(&path, &line.as_bytes()[..10]);
        let mut cursor = Cursor::default();
        assert!(read_all(&path, &mut cursor, Expect::default()).0.is_empty());
        assert_eq!(cursor.offset, 0);
        raw(&path, &line.as_bytes()[10..]);
        assert!(read_all(&path, &mut cursor, Expect::default()).0.is_empty(), "still no newline");
        let (mail, _) = read_all(&path, &mut cursor, Expect { last: true, ..Expect::default() });
        assert_eq!(mail.len(), 1);
        assert_eq!(mail[0].id, "events.jsonl@0", "an id that is not a UUID is replaced by the line's place");
        // The toolbox closes a torn line before it writes.
        std::fs::write(&path, &line.as_bytes()[..10]).expect("write");
        append(&path, 1, progress("q")).expect("append");
        let (mail, notes) = read_all(&path, &mut Cursor::default(), Expect::default());
        assert_eq!((mail.len(), notes.len()), (1, 1), "{notes:?}");
    }

    #[test]
    fn a_line_over_the_limit_is_skipped_without_being_held() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("events.jsonl");
        append(&path, 1, progress("before")).expect("append");
        // Written in two parts, a read in between: the reader notes it once, mid-line.
        let big = format!("{{\"text\":\"{}", "x".repeat(LINE_MAX));
        raw(&path, big.as_bytes());
        let mut cursor = Cursor::default();
        let (mail, notes) = read_all(&path, &mut cursor, Expect::default());
        assert_eq!((mail.len(), notes.len()), (1, 1), "{notes:?}");
        assert!(notes[0].contains("line 2: longer than"), "{notes:?}");
        assert!(cursor.skipping);
        raw(&path, b"xxxx\"}\n");
        append(&path, 1, progress("after")).expect("append");
        let (mail, notes) = read_all(&path, &mut cursor, Expect::default());
        assert_eq!(mail.iter().map(|m| m.body.clone()).collect::<Vec<_>>(), [progress("after")]);
        assert!(notes.is_empty(), "{notes:?}");
        assert_eq!(cursor.lines, 3);
        // The toolbox never writes one.
        let err = append(&path, 1, progress(&"y".repeat(LINE_MAX))).expect_err("too long");
        assert!(format!("{err:#}").contains("at most"), "{err:#}");
    }

    #[test]
    fn events_are_clipped_and_their_paths_checked() {
        let dir = tempfile::tempdir().expect("tmp");
        let wt = dir.path().join("wt");
        std::fs::create_dir_all(wt.join(".lore")).expect("mkdir");
        std::os::unix::fs::symlink("/etc", wt.join(".lore/out")).expect("symlink");
        std::os::unix::fs::symlink(".lore", wt.join("inside")).expect("symlink");
        let path = dir.path().join("events-2.jsonl");
        let artifacts = ["/etc/shadow", "../../x", ".lore/out/passwd", "./.lore/new.md", "inside/x.md"].map(String::from).to_vec();
        append(&path, 2, MailBody::Result { summary: "s".repeat(70_000), artifacts }).expect("append");
        append(&path, 2, MailBody::Link { path: "/etc/passwd".into() }).expect("append");
        append(&path, 1, progress("planted")).expect("append");
        let (mail, notes) = read_all(&path, &mut Cursor::default(), Expect { attempt: Some(2), worktree: Some(&wt), last: false });
        assert_eq!(mail.len(), 1, "{mail:?}");
        let MailBody::Result { summary, artifacts } = &mail[0].body else { panic!("{mail:?}") };
        assert!(summary.len() <= TEXT_MAX && summary.contains("[truncated by guild-hall: 70000 bytes"));
        assert_eq!(artifacts, &[".lore/new.md", "inside/x.md"]);
        for bad in ["\"/etc/shadow\" dropped", "\"../../x\" dropped", "\".lore/out/passwd\" dropped", "\"/etc/passwd\" dropped"] {
            assert!(notes.iter().any(|n| n.contains(bad)), "{bad}: {notes:?}");
        }
        assert!(
            notes.iter().any(|n| n.starts_with("events-2.jsonl line 3: an event of attempt 1 in the mailbox of attempt 2")),
            "{notes:?}"
        );
    }

    #[test]
    fn a_mode_its_worker_took_away_is_given_back_and_no_link_is_followed() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("events-1.jsonl");
        append(&path, 1, progress("hidden")).expect("append");
        assert_eq!(std::fs::metadata(&path).expect("meta").permissions().mode() & 0o7777, 0o600, "made private");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o000)).expect("chmod");
        let (mail, _) = read_all(&path, &mut Cursor::default(), Expect::default());
        assert_eq!(mail.len(), 1);
        assert_eq!(std::fs::metadata(&path).expect("meta").permissions().mode() & 0o7777, 0o600);
        // A link (to a real mailbox, even) is never read through, nor its target's mode changed.
        let target = dir.path().join("elsewhere.jsonl");
        append(&target, 1, progress("elsewhere")).expect("append");
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o640)).expect("chmod");
        let link = dir.path().join("events-2.jsonl");
        std::os::unix::fs::symlink(&target, &link).expect("symlink");
        let err = read_from(&link, &mut Cursor::default(), Expect::default(), |_| {}).expect_err("a link");
        assert!(format!("{err:#}").contains("symbolic link"), "{err:#}");
        assert_eq!(std::fs::metadata(&target).expect("meta").permissions().mode() & 0o7777, 0o640);
        // Nor anything but a regular file.
        let not_a_file = dir.path().join("events-3.jsonl");
        std::fs::create_dir(&not_a_file).expect("mkdir");
        let err = read_from(&not_a_file, &mut Cursor::default(), Expect::default(), |_| {}).expect_err("a directory");
        assert!(format!("{err:#}").contains("events-3.jsonl") && format!("{err:#}").contains("not a regular file"), "{err:#}");
    }

    #[test]
    fn a_file_replaced_by_a_shorter_one_is_read_from_its_start() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("events.jsonl");
        append(&path, 1, progress("a")).expect("append");
        append(&path, 1, progress("b")).expect("append");
        let mut cursor = Cursor::default();
        assert_eq!(read_all(&path, &mut cursor, Expect::default()).0.len(), 2);
        std::fs::remove_file(&path).expect("rm");
        append(&path, 1, progress("c")).expect("append");
        let (mail, _) = read_all(&path, &mut cursor, Expect::default());
        assert_eq!(mail.iter().map(|m| m.body.clone()).collect::<Vec<_>>(), [progress("c")]);
    }
}
