//! How a worker talks back: the context a tool acts in (its commission, meeting or wave task, from
//! the environment) and its effect, an event appended to the activity's mailbox (`events*.jsonl`)
//! with a sequence number and an idempotency key, which the reconciler folds into the artifact and
//! timeline. The tools themselves and their faces are `crate::tools::toolbox`.

pub(crate) mod answers;
pub(crate) mod mailbox;

use std::path::PathBuf;

use anyhow::{anyhow, bail, Result};

use mailbox::{path_in_worktree, Mail, MailBody};

use crate::activity::names::ActivityKind;

/// The most `write_artifact` writes and `read_artifact` reads at once.
pub const ARTIFACT_MAX_BYTES: usize = 1024 * 1024;

/// What a worker process knows about itself, from its environment (design §7, §8).
#[derive(Debug, Clone)]
pub struct WorkerContext {
    pub kind: ActivityKind,
    /// The commission's or meeting's id, or the wave task's slug (also `GUILD_HALL_ID`).
    pub(crate) id: String,
    pub(crate) mailbox: PathBuf,
    pub(crate) worktree: PathBuf,
    pub(crate) attempt: u32,
    /// The worker package's name (`GUILD_HALL_WORKER`).
    pub(crate) worker: Option<String>,
    /// Its memory dir, this project's and package's (`GUILD_HALL_MEMORY`).
    pub(crate) memory: Option<PathBuf>,
    /// A wave task's canonical id (`GUILD_HALL_TASK_ID`).
    pub(crate) task_id: Option<String>,
    /// Where a commission's answers to its questions come (`GUILD_HALL_ANSWERS`, [`answers`]).
    pub(crate) answers: Option<PathBuf>,
    /// How long `ask` waits for a person (`GUILD_HALL_ASK_TIMEOUT`, in seconds).
    pub(crate) ask_timeout: std::time::Duration,
    /// The package's capabilities (`GUILD_HALL_CAPABILITIES`, comma-separated): `request_meeting`
    /// needs `meeting` (the reconciler checks it again: a worker can set its own environment).
    pub(crate) capabilities: Vec<String>,
    /// The reviewer worker this process is (`GUILD_HALL_REVIEWER`): its `submit_result` is a
    /// verdict on the diff it was given, never the commission's result.
    pub(crate) reviewer: Option<String>,
}

impl WorkerContext {
    pub fn from_env() -> Result<WorkerContext> {
        let var = |k: &str| {
            std::env::var(k).map_err(|_| {
                anyhow!("{k} is not set: `guild-hall toolbox` is for worker processes started by guild-hall (it reads its commission, task or meeting from the environment)")
            })
        };
        // The kind's own variable says the kind: a meeting turn has GUILD_HALL_MEETING, a wave
        // task GUILD_HALL_TASK, a commission attempt GUILD_HALL_COMMISSION.
        let (kind, id) = match (std::env::var("GUILD_HALL_MEETING"), std::env::var("GUILD_HALL_TASK")) {
            (Ok(m), _) => (ActivityKind::Meeting, m),
            (_, Ok(t)) => (ActivityKind::Task, t),
            _ => (ActivityKind::Commission, var("GUILD_HALL_COMMISSION")?),
        };
        crate::artifact::ids::validate_id(&id)?;
        Ok(WorkerContext {
            kind,
            id,
            mailbox: PathBuf::from(var("GUILD_HALL_MAILBOX")?),
            worktree: PathBuf::from(var("GUILD_HALL_WORKTREE")?),
            attempt: var("GUILD_HALL_ATTEMPT")?.parse().map_err(|_| anyhow!("GUILD_HALL_ATTEMPT is not a number"))?,
            worker: std::env::var("GUILD_HALL_WORKER").ok(),
            memory: std::env::var_os("GUILD_HALL_MEMORY").filter(|m| !m.is_empty()).map(PathBuf::from),
            task_id: std::env::var("GUILD_HALL_TASK_ID").ok(),
            answers: std::env::var_os("GUILD_HALL_ANSWERS").filter(|a| !a.is_empty()).map(PathBuf::from),
            ask_timeout: std::env::var("GUILD_HALL_ASK_TIMEOUT")
                .ok()
                .and_then(|t| t.parse().ok())
                .map(std::time::Duration::from_secs)
                .unwrap_or(answers::DEFAULT_ASK_TIMEOUT),
            capabilities: std::env::var("GUILD_HALL_CAPABILITIES")
                .map(|c| c.split(',').filter(|c| !c.is_empty()).map(str::to_string).collect())
                .unwrap_or_default(),
            reviewer: std::env::var("GUILD_HALL_REVIEWER").ok().filter(|r| !r.is_empty()),
        })
    }

    /// What the tool is called in this kind of activity.
    pub fn describe(&self) -> String {
        match self.kind {
            ActivityKind::Commission => format!("commission {}", self.id),
            ActivityKind::Meeting => format!("meeting {}", self.id),
            ActivityKind::Task => format!("wave task {}", self.id),
        }
    }

    /// Record an event. `submit_result` (a result, or a reviewer's verdict) is accepted once per attempt, and its artifact paths
    /// must exist inside the worktree.
    pub(crate) fn send(&self, body: MailBody) -> Result<Mail> {
        let is_result = matches!(body, MailBody::Result { .. } | MailBody::Verdict { .. });
        if let MailBody::Result { artifacts, .. } = &body {
            for a in artifacts {
                self.check_artifact(a)?;
            }
        }
        let attempt = self.attempt;
        mailbox::append_if(&self.mailbox, attempt, body, |m| {
            if is_result && m.attempt == attempt && matches!(m.body, MailBody::Result { .. } | MailBody::Verdict { .. }) {
                bail!("a result was already submitted for this attempt (submit_result is accepted once)");
            }
            Ok(())
        })
    }

    /// Ask a person and wait for the answer ([`answers`]): the question recorded, then its
    /// reply read from the answers dir, at most `ask_timeout`; [`answers::NO_ANSWER`] after it.
    pub(crate) fn ask(&self, text: &str) -> Result<(Mail, String)> {
        let Some(dir) = &self.answers else {
            bail!("GUILD_HALL_ANSWERS is not set: ask is for a commission's worker started by guild-hall (it reads its answers there)");
        };
        if text.trim().is_empty() {
            bail!("a question needs its text");
        }
        let mail = self.send(MailBody::Ask { text: text.to_string() })?;
        let answer = answers::wait(dir, &mail.id, self.ask_timeout)?;
        Ok((mail, answer))
    }

    /// Ask guild-hall for a meeting with a person: refused here for a package without the
    /// `meeting` capability.
    pub(crate) fn request_meeting(&self, reason: &str) -> Result<Mail> {
        if reason.trim().is_empty() {
            bail!("a meeting request needs a reason (its agenda)");
        }
        if !self.capabilities.iter().any(|c| c == "meeting") {
            bail!(
                "worker {} does not have the `meeting` capability, so no meeting can be requested with it (its worker.yaml says `capabilities: [commission, meeting]` and `meeting:` to meet); ask the person with ask instead, or log_question",
                self.worker.as_deref().unwrap_or("?")
            );
        }
        self.send(MailBody::MeetingRequest { reason: reason.to_string() })
    }

    /// Store a memory for this worker (overwriting the key), and note it in the mailbox.
    pub(crate) fn store_memory(&self, key: &str, content: &str) -> Result<Mail> {
        let Some(dir) = &self.memory else {
            bail!("GUILD_HALL_MEMORY must be set to store memory (guild-hall sets it to the package's memory dir in this project)");
        };
        crate::worker::memory::store(dir, key, content)?;
        mailbox::append(&self.mailbox, self.attempt, MailBody::Memory { key: key.to_string() })
    }

    /// Write `content` to `path` under `.lore/` of the worktree (made atomically, directories
    /// created): how an agent without file tools delivers a file. Never into the control plane
    /// (it would never be merged). Returns the normalised path.
    pub(crate) fn write_artifact(&self, path: &str, content: &str) -> Result<String> {
        if content.len() > ARTIFACT_MAX_BYTES {
            bail!("artifact {path:?} is {} bytes; at most {ARTIFACT_MAX_BYTES} bytes can be written", content.len());
        }
        let (rel, full) = self.lore_path(path)?;
        if crate::activity::control_plane::is_control_plane(&rel) {
            bail!("{rel} is in the control plane, which no worker writes ({})", crate::activity::merge::CONTROL_PLANE_RULE);
        }
        if let Some(parent) = full.parent() {
            std::fs::create_dir_all(parent).map_err(|e| anyhow!("creating the directory of {rel}: {e}"))?;
        }
        // Created directories may not be links either (a race with the worker itself).
        self.lore_path(path)?;
        crate::files::write_atomic(&full, content.as_bytes()).map_err(|e| anyhow!("writing {rel}: {e:#}"))?;
        Ok(rel)
    }

    /// Read `path` under `.lore/` of the worktree (UTF-8, at most [`ARTIFACT_MAX_BYTES`]).
    pub(crate) fn read_artifact(&self, path: &str) -> Result<String> {
        let (rel, full) = self.lore_path(path)?;
        let meta = std::fs::metadata(&full).map_err(|e| anyhow!("{rel}: {e}"))?;
        if !meta.is_file() {
            bail!("{rel} is not a file");
        }
        if meta.len() > ARTIFACT_MAX_BYTES as u64 {
            bail!("{rel} is {} bytes; at most {ARTIFACT_MAX_BYTES} bytes can be read", meta.len());
        }
        let bytes = std::fs::read(&full).map_err(|e| anyhow!("{rel}: {e}"))?;
        String::from_utf8(bytes).map_err(|_| anyhow!("{rel} is not UTF-8 text"))
    }

    /// A path under `.lore/` of the worktree, with no symlink on the way: the normalised
    /// relative path and the full one.
    fn lore_path(&self, path: &str) -> Result<(String, PathBuf)> {
        let rel = crate::artifact::ids::validate_rel_path(path).map_err(|e| anyhow!("{e}"))?;
        if !rel.starts_with(".lore/") {
            bail!("artifact paths must be under .lore/ (got {path:?})");
        }
        let mut at = self.worktree.clone();
        for part in rel.split('/') {
            at.push(part);
            match std::fs::symlink_metadata(&at) {
                Ok(m) if m.file_type().is_symlink() => {
                    bail!("{rel}: {} is a symlink; artifacts are never written through links", at.display())
                }
                _ => {}
            }
        }
        Ok((rel, at))
    }

    pub(crate) fn check_artifact(&self, path: &str) -> Result<()> {
        path_in_worktree(&self.worktree, path, true).map_err(|e| anyhow!("artifact {path:?} {e:#}"))?;
        Ok(())
    }
}

/// Artifact paths as stored: normalised relative paths.
pub(crate) fn normalise_artifacts(paths: &[String]) -> Result<Vec<String>> {
    paths.iter().map(|p| crate::artifact::ids::validate_rel_path(p).map_err(Into::into)).collect()
}

/// A reviewer's `--comment PATH:LINE TEXT` (or `PATH TEXT`, on the file as a whole): the path
/// and text, the line when one follows the path's last `:`.
pub(crate) fn line_comment(spec: &str) -> Result<mailbox::LineComment> {
    let spec = spec.trim();
    let (place, text) = spec.split_once(char::is_whitespace).ok_or_else(|| anyhow!("comment {spec:?}: expected PATH:LINE TEXT"))?;
    let (path, line) = match place.rsplit_once(':') {
        Some((path, line)) if !line.is_empty() && line.bytes().all(|b| b.is_ascii_digit()) => {
            (path, Some(line.parse::<u32>().map_err(|_| anyhow!("comment {spec:?}: line {line} is not a line number"))?))
        }
        _ => (place, None),
    };
    crate::artifact::ids::validate_rel_path(path).map_err(|e| anyhow!("comment {spec:?}: {e}"))?;
    let text = text.trim();
    if text.is_empty() {
        bail!("comment {spec:?}: what is to change is missing after the path");
    }
    Ok(mailbox::LineComment { path: path.to_string(), line, text: text.to_string() })
}

#[cfg(test)]
mod reviewer_comment_tests {
    use super::line_comment;

    #[test]
    fn a_comment_is_a_path_an_optional_line_and_its_text() {
        let c = line_comment("src/lib.rs:42 handle the empty input").expect("comment");
        assert_eq!((c.path.as_str(), c.line, c.text.as_str()), ("src/lib.rs", Some(42), "handle the empty input"));
        let c = line_comment("notes.md  the whole file reads badly ").expect("comment");
        assert_eq!((c.path.as_str(), c.line, c.text.as_str()), ("notes.md", None, "the whole file reads badly"));
        // A colon not followed by a number is part of the path.
        let c = line_comment("a:b.md fix").expect("comment");
        assert_eq!((c.path.as_str(), c.line), ("a:b.md", None));
        for bad in ["src/lib.rs:42", "../etc/passwd:1 out", "/etc/passwd:1 out", "", "src/x.rs:99999999999 big"] {
            assert!(line_comment(bad).is_err(), "{bad:?}");
        }
    }
}
