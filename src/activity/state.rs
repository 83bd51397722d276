//! An activity's runtime dir under `$GUILD_HALL_HOME/state/<project>/` (a commission's, a
//! meeting's, a wave task's or a plan's verify: `config::Home` says where) and what is in it:
//! what the reconciler last wrote (`record.json`), what the shim saw (`run.json`, `exit.json`),
//! the heartbeat, logs (and the tail of one a failure's reason quotes) and locks. Plain data
//! and paths; the files are read and written with `crate::files`; no decisions.

use std::path::{Path, PathBuf};

use anyhow::Result;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::artifact::Status;

/// The reconciler's memory of a commission, written with the artifact as one step
/// ([`crate::activity::apply`]: after the artifact has landed). `prev` is read only from
/// records written before that order (record first, then the artifact): what the artifact said
/// before that status write, so that the artifact still saying it read as our write not seen
/// yet. A record written now carries none: the artifact already says its status, and anything
/// else the artifact says later is a person's request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub(crate) status: Status,
    #[serde(default)]
    pub(crate) prev: Option<Status>,
    /// The latest attempt started (0 = never dispatched).
    #[serde(default)]
    pub(crate) attempt: u32,
    /// When SIGTERM was sent to the current attempt's process group.
    #[serde(default)]
    pub(crate) term_sent_at: Option<DateTime<Utc>>,
    /// The `created:` stamp as first seen or written: restored if the key disappears (a
    /// `git stash` of the stamped file, say), so FIFO order survives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) created: Option<String>,
    /// Failed or cancelled while processes of the attempt were still alive: what is still
    /// under way ("cancelling: worker still running"), until every one of them is gone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) stopping: Option<String>,
    /// What the current attempt was given when it was dispatched (its title and prompt): an
    /// edit of the artifact while it runs applies to the next attempt, and this one's merge
    /// says the title it was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) given: Option<Given>,
    /// The revision the latest attempt is, when it is one: on the branch of the attempt it
    /// revises, with the feedback its prompt was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) revision: Option<Box<crate::artifact::commission::Revision>>,
    /// The latest attempt's squash merge conflicted outside `.lore/` on these paths: its work
    /// is held in review to be sent back to its worker with the integration tip merged in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) conflict: Option<Conflicted>,
}

/// A squash merge that conflicted: of which attempt, on which paths.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Conflicted {
    pub(crate) attempt: u32,
    pub(crate) paths: Vec<String>,
}

impl Record {
    /// Automatic send-backs (a failing check's, a conflict's) in the line of attempts the
    /// latest one ends: what `max_revisions` bounds.
    pub(crate) fn automatic_revisions(&self) -> u32 {
        self.revision.as_ref().filter(|r| r.attempt == self.attempt).map_or(0, |r| r.automatic)
    }
}

/// The title and prompt an attempt was dispatched with (the prompt as a git blob id: the
/// prompt file in the state dir holds its text).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Given {
    pub(crate) attempt: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) title: Option<String>,
    pub(crate) prompt: String,
    /// The edit already noted in the timeline (the [`Given::edit_key`] of it), so that it is
    /// noted once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) noted: Option<String>,
}

impl Given {
    pub(crate) fn new(attempt: u32, title: Option<&str>, prompt: &str) -> Given {
        Given { attempt, title: title.map(str::to_string), prompt: blob_id(prompt), noted: None }
    }

    /// What of `title` and `prompt` differs from what the attempt was given: `None` when
    /// nothing does, else the edit's key (one per distinct edit) and what changed in words.
    pub(crate) fn edit(&self, title: Option<&str>, prompt: &str) -> Option<(String, &'static str)> {
        let prompt_id = blob_id(prompt);
        let what = match (self.title.as_deref() != title, self.prompt != prompt_id) {
            (false, false) => return None,
            (true, false) => "title",
            (false, true) => "prompt",
            (true, true) => "title and prompt",
        };
        let title_id = blob_id(title.unwrap_or(""));
        Some((format!("edited:{}:{}:{}", self.attempt, &title_id[..12], &prompt_id[..12]), what))
    }
}

/// The git blob id of `text`: a stable name for it across versions and machines.
fn blob_id(text: &str) -> String {
    git2::Oid::hash_object(git2::ObjectType::Blob, text.as_bytes())
        .map(|o| o.to_string())
        .unwrap_or_else(|_| format!("{:0>40}", text.len()))
}

/// Written by the shim once the worker is started.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    pub(crate) attempt: u32,
    pub(crate) pid: i32,
    pub(crate) pgid: i32,
    /// Field 22 of `/proc/<pid>/stat`: with `boot_id`, tells a live shim from a reused pid.
    pub(crate) start_time: u64,
    pub(crate) boot_id: String,
    pub(crate) worker_pid: Option<i32>,
    pub(crate) started_at: DateTime<Utc>,
    /// Marks every process of the attempt (`GUILD_HALL_RUN_ID` in their environment).
    #[serde(default)]
    pub(crate) run_id: String,
}

impl RunInfo {
    /// Why this record cannot describe an attempt our shim started, if it cannot: the shim
    /// leads a session of its own (pid = pgid > 1) and marks it with a run id it made. Such
    /// a record is never trusted with a signal.
    pub(crate) fn implausible(&self) -> Option<String> {
        if self.pid <= 1 || self.pgid <= 1 {
            return Some(format!("pid {} / pgid {} is not a process guild-hall started", self.pid, self.pgid));
        }
        if self.pgid != self.pid {
            return Some(format!("pgid {} differs from pid {}: the shim leads its own session", self.pgid, self.pid));
        }
        if !valid_run_id(&self.run_id) {
            return Some(format!("run id {:?} is not one guild-hall makes (32 hex digits)", self.run_id));
        }
        if self.boot_id.trim().is_empty() {
            return Some("no boot id".into());
        }
        None
    }
}

/// A run id as the launch makes it: a UUID's 32 lowercase hex digits.
pub(crate) fn valid_run_id(id: &str) -> bool {
    id.len() == 32 && id.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// How an `error` that is a runner's verdict on a started attempt begins (a job elsewhere that
/// ended without, or against, its shim's record), unlike a worker that could not start.
pub(crate) const RUNNER_VERDICT: &str = "[runner] ";

/// Written by the shim when the worker exits (or could not start).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ExitInfo {
    pub(crate) attempt: u32,
    pub(crate) code: Option<i32>,
    pub(crate) signal: Option<i32>,
    #[serde(default)]
    pub(crate) error: Option<String>,
    pub(crate) finished_at: DateTime<Utc>,
    /// The last lines of the attempt's log when the worker did not exit cleanly (bounded, escape
    /// sequences stripped): the cause a bare exit code hides (`claude: not found`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) tail: Option<String>,
    /// The workspace's setup command that failed, before the worker started: the attempt
    /// ended on it (not the worker's doing; `code`, `signal` and `tail` are the command's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) setup: Option<SetupFailed>,
    /// The `checks:` run after the worker ended with a submitted result, in order, up to the
    /// first that failed (the shim's record: nothing the worker writes says a check passed).
    #[serde(default, skip_serializing_if = "no_checks")]
    pub(crate) checks: Box<[CheckRun]>,
}

fn no_checks(c: &[CheckRun]) -> bool {
    c.is_empty()
}

/// One `checks:` command as the shim ran it in the worktree after submit: the proof of work a
/// review shows (`check_results:`) and a failing one's feedback.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct CheckRun {
    /// The command as written in `checks:`.
    pub(crate) argv: Vec<String>,
    pub(crate) code: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) signal: Option<i32>,
    /// The last lines of its output (in the attempt's log).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) tail: Option<String>,
    /// Why it could not be run at all (its output then is none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<String>,
}

impl CheckRun {
    pub(crate) fn passed(&self) -> bool {
        self.code == Some(0) && self.error.is_none()
    }

    /// `cargo test`, as a person would type it.
    pub(crate) fn command(&self) -> String {
        self.argv.join(" ")
    }

    /// How it ended, in words: `exit code 101`, `killed by signal 9`, or why it never ran.
    pub(crate) fn ended(&self) -> String {
        match (&self.error, self.code, self.signal) {
            (Some(e), _, _) => format!("could not run: {e}"),
            (None, Some(c), _) => format!("exit code {c}"),
            (None, None, Some(s)) => format!("killed by signal {s}"),
            (None, None, None) => "ended without an exit code".into(),
        }
    }
}

/// A workspace's setup command that failed (or was stopped): the attempt's worker never ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct SetupFailed {
    /// The command as written in `workspace.setup`.
    pub(crate) argv: Vec<String>,
}

impl ExitInfo {
    /// An attempt that ended without its worker's exit: why, as its error.
    pub(crate) fn error(attempt: u32, why: String) -> ExitInfo {
        ExitInfo {
            attempt,
            code: None,
            signal: None,
            error: Some(why),
            finished_at: Utc::now(),
            tail: None,
            setup: None,
            checks: Box::default(),
        }
    }

    pub(crate) fn clean(&self) -> bool {
        self.code == Some(0) && self.error.is_none() && self.setup.is_none()
    }

    pub(crate) fn describe(&self) -> String {
        self.describe_when("")
    }

    /// [`ExitInfo::describe`] with `when` said right after how it ended, before the log's
    /// tail (`worker exited with code 127 before the end of its turn; its log ends: …`). A
    /// worker that never started is said as it is: it was never under way.
    pub(crate) fn describe_when(&self, when: &str) -> String {
        if let Some(setup) = &self.setup {
            let how = match (self.code, self.signal) {
                (Some(c), _) => format!("exited with code {c}"),
                (None, Some(s)) => format!("was killed by signal {s}"),
                _ => self.error.clone().unwrap_or_else(|| "failed".into()),
            };
            let said = format!("workspace setup `{}` {how}, before the worker started", setup.argv.join(" "));
            return match self.tail.as_deref().filter(|t| !t.is_empty()) {
                Some(t) => format!("{said}; its log ends: {t}"),
                None => said,
            };
        }
        if let Some(e) = &self.error {
            return match e.strip_prefix(RUNNER_VERDICT) {
                Some(verdict) => verdict.to_string(),
                None => format!("activation failed: {e}"),
            };
        }
        let how = match (self.code, self.signal) {
            (Some(c), _) => format!("worker exited with code {c}{when}"),
            (None, Some(s)) => format!("worker killed by signal {s}{when}"),
            _ => format!("worker exited{when}"),
        };
        match self.tail.as_deref().filter(|t| !t.is_empty()) {
            Some(t) => format!("{how}; its log ends: {t}"),
            None => how,
        }
    }
}

/// At most this many of a log's last lines go into an exit's [`ExitInfo::tail`]…
const TAIL_LINES: usize = 3;
/// …and at most this many characters of them.
const TAIL_CHARS: usize = 300;

/// The last non-blank lines of a worker's log, as a failure's reason shows them: at most
/// [`TAIL_LINES`] lines and [`TAIL_CHARS`] characters (the end kept), joined with " | ",
/// terminal escape sequences removed and other control characters dropped. `None` if blank.
pub(crate) fn log_tail(log: &[u8]) -> Option<String> {
    let from = log.len().saturating_sub(TAIL_READ as usize);
    let text = strip_escapes(&String::from_utf8_lossy(&log[from..]));
    let lines: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    let last = lines[lines.len().saturating_sub(TAIL_LINES)..].join(" | ");
    let count = last.chars().count();
    let kept: String = if count > TAIL_CHARS { format!("…{}", last.chars().skip(count - TAIL_CHARS).collect::<String>()) } else { last };
    (!kept.is_empty()).then_some(kept)
}

/// How much of a log's end [`log_tail_of`] reads: a log may be megabytes.
const TAIL_READ: u64 = 8 * 1024;

/// [`log_tail`] of the log file at `path`, reading only its end; `None` if it cannot be read.
pub(crate) fn log_tail_of(path: &Path) -> Option<String> {
    log_tail(&crate::files::read_tail_bytes(path, TAIL_READ)?)
}

/// `text` without terminal escape sequences (CSI `ESC [ … final`, OSC `ESC ] … BEL|ESC \`,
/// two-character `ESC x`) and without other control characters but newlines (tabs: spaces).
/// What a worker wrote, made fit to be shown inside guild-hall's own screen (a failure's
/// reason, the board's cells and log lines).
pub(crate) fn strip_escapes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\x1b' => match chars.next() {
                Some('[') => {
                    for c in chars.by_ref() {
                        if ('@'..='~').contains(&c) {
                            break;
                        }
                    }
                }
                Some(']') => {
                    while let Some(c) = chars.next() {
                        if c == '\x07' || (c == '\x1b' && chars.next_if_eq(&'\\').is_some()) {
                            break;
                        }
                    }
                }
                _ => {}
            },
            '\n' => out.push('\n'),
            '\t' => out.push(' '),
            c if c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}') => {}
            c => out.push(c),
        }
    }
    out
}

/// Signs of life seen at the last change, and whether the worker was judged stale.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Heartbeat {
    pub(crate) last_activity: DateTime<Utc>,
    pub(crate) sample: Sample,
}

/// What advances while a worker works: its output, its CPU time, its mailbox.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Sample {
    pub(crate) log_len: u64,
    pub(crate) cpu_ticks: u64,
    pub(crate) mailbox_len: u64,
}

/// Paths of one commission's runtime directory.
#[derive(Debug, Clone)]
pub struct StateDir(pub PathBuf);

impl StateDir {
    pub(crate) fn record(&self) -> PathBuf {
        self.0.join("record.json")
    }
    pub(crate) fn run(&self) -> PathBuf {
        self.0.join("run.json")
    }
    /// `run.json`, refused (an error naming the file) when it does not parse or cannot
    /// describe a process of ours ([`RunInfo::implausible`]): its processes are left alone.
    pub(crate) fn read_run(&self) -> Result<Option<RunInfo>> {
        let path = self.run();
        let run = crate::files::read_json::<RunInfo>(&path)?;
        if let Some(why) = run.as_ref().and_then(RunInfo::implausible) {
            anyhow::bail!("{}: implausible, so no process is signalled by it: {why}", path.display());
        }
        Ok(run)
    }
    pub(crate) fn exit(&self) -> PathBuf {
        self.0.join("exit.json")
    }
    pub(crate) fn heartbeat(&self) -> PathBuf {
        self.0.join("heartbeat")
    }
    pub(crate) fn mailbox(&self) -> PathBuf {
        self.0.join("events.jsonl")
    }
    pub(crate) fn shim_lock(&self) -> PathBuf {
        self.0.join("shim.lock")
    }
    /// Held by the process running a meeting's turn for the whole turn: one turn at a time,
    /// and nothing closes the meeting under it.
    pub(crate) fn turn_lock(&self) -> PathBuf {
        self.0.join("turn.lock")
    }
    pub(crate) fn prompt(&self) -> PathBuf {
        self.0.join("prompt.md")
    }
    pub(crate) fn system_prompt(&self) -> PathBuf {
        self.0.join("system-prompt.md")
    }
    /// The worker's private temp dir (its `TMPDIR`), made fresh for each attempt.
    pub(crate) fn tmp(&self) -> PathBuf {
        self.0.join("tmp")
    }
    /// A reviewer's memory: private to its run, empty at its start (it shares none with the
    /// work it judges, nor leaves any to the next worker).
    pub(crate) fn private_memory(&self) -> PathBuf {
        self.0.join("memory")
    }
    /// The worker's own git object store: objects it writes land here, never in the
    /// repository, until guild-hall has checked and adopted them.
    pub(crate) fn objects(&self) -> PathBuf {
        self.0.join("objects")
    }
    /// The worktree as guild-hall made it ([`crate::activity::git::WorktreeRecord`]).
    pub(crate) fn worktree(&self) -> PathBuf {
        self.0.join("worktree.json")
    }
    pub(crate) fn log(&self, attempt: u32) -> PathBuf {
        self.0.join(format!("attempt-{attempt}.log"))
    }
    /// Written by the shim once the worktree's `workspace.setup` ran to its end (a meeting's
    /// runs once, at open); removed with the worktree.
    pub(crate) fn setup_done(&self) -> PathBuf {
        self.0.join("setup-done")
    }

    /// What the attempt's agent reported it used, as the shim read it from its output
    /// ([`crate::worker::usage`]); absent when it reported nothing.
    pub(crate) fn usage(&self, attempt: u32) -> PathBuf {
        self.0.join(format!("attempt-{attempt}.usage.json"))
    }
    /// The worker package of the attempt last launched here (its name): what a package's
    /// `max_concurrent:` counts among the live attempts.
    pub(crate) fn package(&self) -> PathBuf {
        self.0.join("package")
    }
    /// The rate or usage limit that ended `attempt`, as the shim read it from its output.
    pub(crate) fn limit(&self, attempt: u32) -> PathBuf {
        self.0.join(format!("attempt-{attempt}.limit.json"))
    }
}

#[cfg(test)]
mod tests {
    /// A failure's reason gets the log's last lines, bounded, with no escape sequence left.
    #[test]
    fn a_logs_tail_is_short_and_plain() {
        let log = b"starting\n\x1b[31merror:\x1b[0m one\n\n\x1b]8;;http://x\x1b\\link\x1b]8;;\x07 two\r\n/bin/sh: 1: claude: not found\n\n";
        assert_eq!(super::log_tail(log).as_deref(), Some("error: one | link two | /bin/sh: 1: claude: not found"));
        assert_eq!(super::log_tail(b"\n \n"), None);
        let long = "x".repeat(1000);
        let tail = super::log_tail(long.as_bytes()).expect("a tail");
        assert!(tail.starts_with('…') && tail.chars().count() == 301, "{tail}");
        let x = super::ExitInfo {
            attempt: 1,
            code: Some(127),
            signal: None,
            error: None,
            finished_at: chrono::Utc::now(),
            tail: Some("claude: not found".into()),
            setup: None,
            checks: Box::default(),
        };
        assert_eq!(x.describe(), "worker exited with code 127; its log ends: claude: not found");
        assert_eq!(
            x.describe_when(" before the end of its turn"),
            "worker exited with code 127 before the end of its turn; its log ends: claude: not found"
        );
        // A setup that failed is said as setup's, never the worker's, and is no clean exit.
        let setup = super::ExitInfo {
            code: Some(1),
            tail: Some("npm ERR! lock out of date".into()),
            setup: Some(super::SetupFailed { argv: vec!["npm".into(), "ci".into()] }),
            ..x.clone()
        };
        assert!(!setup.clean());
        assert_eq!(
            setup.describe_when(" before the end of its turn"),
            "workspace setup `npm ci` exited with code 1, before the worker started; its log ends: npm ERR! lock out of date"
        );
        let stopped = super::ExitInfo { code: None, signal: Some(15), tail: None, ..setup };
        assert_eq!(stopped.describe(), "workspace setup `npm ci` was killed by signal 15, before the worker started");
    }

    use super::*;
    use crate::files::write_json;

    fn run(pid: i32, pgid: i32, run_id: &str) -> RunInfo {
        RunInfo {
            attempt: 1,
            pid,
            pgid,
            start_time: 1,
            boot_id: "b".into(),
            worker_pid: None,
            started_at: Utc::now(),
            run_id: run_id.into(),
        }
    }

    const ID: &str = "0123456789abcdef0123456789abcdef";

    #[test]
    fn only_a_session_leader_above_init_with_a_real_run_id_is_plausible() {
        assert_eq!(run(4242, 4242, ID).implausible(), None);
        for (pid, pgid) in [(0, 0), (1, 1), (-1, -1), (4242, 0), (0, 4242), (4242, 1), (4242, 4243)] {
            assert!(run(pid, pgid, ID).implausible().is_some(), "pid {pid} pgid {pgid} must be refused");
        }
        for id in ["", "x", &ID.to_uppercase(), &format!("{ID}0"), "0123456789abcdef0123456789abcdeg"] {
            assert!(run(4242, 4242, id).implausible().is_some(), "run id {id:?} must be refused");
        }
    }

    #[test]
    fn an_implausible_run_record_is_an_error_naming_its_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let state = StateDir(dir.path().to_path_buf());
        write_json(&state.run(), &run(0, 0, ID)).expect("write");
        let err = format!("{:#}", state.read_run().expect_err("refused"));
        assert!(err.contains(&state.run().display().to_string()) && err.contains("implausible"), "{err}");
        write_json(&state.run(), &run(4242, 4242, ID)).expect("write");
        assert!(state.read_run().expect("plausible").is_some());
    }
}
