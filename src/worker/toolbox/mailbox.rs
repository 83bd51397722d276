//! The mailbox file: JSON lines appended under an exclusive lock, each with a sequence number
//! and a unique id. Readers skip a torn last line.

use std::io::{Read, Seek, Write};
use std::path::Path;

use anyhow::{Context, Result};
use chrono::{SecondsFormat, Utc};
use nix::fcntl::{Flock, FlockArg};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Mail {
    pub seq: u64,
    pub id: String,
    pub ts: String,
    pub attempt: u32,
    #[serde(flatten)]
    pub body: MailBody,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum MailBody {
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
    /// A meeting's `propose_followup`: a new request for the same worker.
    Followup {
        reason: String,
        #[serde(default)]
        references: Vec<String>,
    },
}

impl MailBody {
    /// Its timeline event kind.
    pub fn kind(&self) -> &'static str {
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
        }
    }

    /// The event as timeline fields (its kind is the event's kind; `attempt` added).
    pub fn timeline_fields(&self, attempt: u32) -> serde_json::Value {
        let mut fields = serde_json::to_value(self).unwrap_or(serde_json::Value::Null);
        if let serde_json::Value::Object(f) = &mut fields {
            f.remove("kind");
            f.insert("attempt".into(), attempt.into());
        }
        fields
    }
}

/// Kiln's TaskUpdate payload (the contract's schema): what a wave task reports of itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskUpdate {
    /// The canonical task id `<plan>:exec:wave-<W>:task-<T>` (default: this task's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage: Option<String>,
    pub status: TaskUpdateStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree_path: Option<String>,
    /// The changes made: {op: add|modify|delete|rename|untracked, path, from_path}.
    #[serde(default)]
    pub changed_ops: Vec<ChangedOp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify_summary: Option<serde_json::Value>,
    /// Evidence files, under `.lore-artifacts/<task-slug>/`.
    #[serde(default)]
    pub evidence_paths: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamps: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub emitted_at: Option<String>,
    /// Monotonic per task: a lower one than the highest applied is ignored.
    pub sequence: u64,
    /// Stable for a logically identical update: a repeated key is a no-op.
    pub idempotency_key: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TaskUpdateStatus {
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
pub struct ChangedOp {
    pub op: ChangeKind,
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_path: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    Add,
    Modify,
    Delete,
    Rename,
    Untracked,
}

pub fn read(path: &Path) -> Result<Vec<Mail>> {
    let text = crate::files::read_text_if_exists(path)?.unwrap_or_default();
    Ok(text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect())
}

/// Append one event under an exclusive lock; returns it as recorded.
pub fn append(path: &Path, attempt: u32, body: MailBody) -> Result<Mail> {
    append_if(path, attempt, body, |_| Ok(()))
}

/// Append one event if `allow` accepts it given the events already there, both under the same
/// exclusive lock: a rule such as "one result per attempt" holds however many writers race.
pub fn append_if(path: &Path, attempt: u32, body: MailBody, allow: impl FnOnce(&[Mail]) -> Result<()>) -> Result<Mail> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .read(true)
        .append(true)
        .open(path)
        .with_context(|| format!("opening mailbox {}", path.display()))?;
    let mut file = Flock::lock(file, FlockArg::LockExclusive).map_err(|(_, e)| e).context("locking mailbox")?;
    let mut text = String::new();
    file.rewind()?;
    file.read_to_string(&mut text)?;
    let existing: Vec<Mail> = text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    allow(&existing)?;
    let seq = existing.len() as u64 + 1;
    let mail =
        Mail { seq, id: uuid::Uuid::new_v4().to_string(), ts: Utc::now().to_rfc3339_opts(SecondsFormat::Millis, true), attempt, body };
    let mut line = String::new();
    if !text.is_empty() && !text.ends_with('\n') {
        line.push('\n');
    }
    line.push_str(&serde_json::to_string(&mail)?);
    line.push('\n');
    file.write_all(line.as_bytes())?;
    file.sync_data()?;
    Ok(mail)
}
