//! Runtime records under `$GUILD_HALL_HOME/state/<project>/commissions/<id>/`: what the
//! reconciler last wrote (`record.json`), what the shim saw (`run.json`, `exit.json`), and the
//! heartbeat. Plain data plus atomic file helpers; no decisions.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context, Result};
use chrono::{DateTime, Utc};
use serde::{de::DeserializeOwned, Deserialize, Serialize};

use crate::artifact::Status;

/// The reconciler's memory of a commission, written before the artifact so a crash between
/// the two is recognisable (`prev` is what the artifact said before our write).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub status: Status,
    #[serde(default)]
    pub prev: Option<Status>,
    /// The latest attempt started (0 = never dispatched).
    #[serde(default)]
    pub attempt: u32,
    /// When SIGTERM was sent to the current attempt's process group.
    #[serde(default)]
    pub term_sent_at: Option<DateTime<Utc>>,
    /// The `created:` stamp as first seen or written: restored if the key disappears (a
    /// `git stash` of the stamped file, say), so FIFO order survives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created: Option<String>,
    /// Failed or cancelled while processes of the attempt were still alive: what is still
    /// under way ("cancelling: worker still running"), until every one of them is gone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopping: Option<String>,
}

/// Written by the shim once the worker is started.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    pub attempt: u32,
    pub pid: i32,
    pub pgid: i32,
    /// Field 22 of `/proc/<pid>/stat`: with `boot_id`, tells a live shim from a reused pid.
    pub start_time: u64,
    pub boot_id: String,
    pub worker_pid: Option<i32>,
    pub started_at: DateTime<Utc>,
    /// Marks every process of the attempt (`GUILD_HALL_RUN_ID` in their environment).
    #[serde(default)]
    pub run_id: String,
}

impl RunInfo {
    /// Why this record cannot describe an attempt our shim started, if it cannot: the shim
    /// leads a session of its own (pid = pgid > 1) and marks it with a run id it made. Such
    /// a record is never trusted with a signal.
    pub fn implausible(&self) -> Option<String> {
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
pub fn valid_run_id(id: &str) -> bool {
    id.len() == 32 && id.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Written by the shim when the worker exits (or could not start).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExitInfo {
    pub attempt: u32,
    pub code: Option<i32>,
    pub signal: Option<i32>,
    #[serde(default)]
    pub error: Option<String>,
    pub finished_at: DateTime<Utc>,
}

impl ExitInfo {
    pub fn clean(&self) -> bool {
        self.code == Some(0) && self.error.is_none()
    }

    pub fn describe(&self) -> String {
        if let Some(e) = &self.error {
            return format!("activation failed: {e}");
        }
        match (self.code, self.signal) {
            (Some(c), _) => format!("worker exited with code {c}"),
            (None, Some(s)) => format!("worker killed by signal {s}"),
            _ => "worker exited".into(),
        }
    }
}

/// Signs of life seen at the last change, and whether the worker was judged stale.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Heartbeat {
    pub last_activity: DateTime<Utc>,
    pub sample: Sample,
}

/// What advances while a worker works: its output, its CPU time, its mailbox.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sample {
    pub log_len: u64,
    pub cpu_ticks: u64,
    pub mailbox_len: u64,
}

/// Paths of one commission's runtime directory.
#[derive(Debug, Clone)]
pub struct StateDir(pub PathBuf);

impl StateDir {
    pub fn record(&self) -> PathBuf {
        self.0.join("record.json")
    }
    pub fn run(&self) -> PathBuf {
        self.0.join("run.json")
    }
    /// `run.json`, refused (an error naming the file) when it does not parse or cannot
    /// describe a process of ours ([`RunInfo::implausible`]): its processes are left alone.
    pub fn read_run(&self) -> Result<Option<RunInfo>> {
        let path = self.run();
        let run = read_json::<RunInfo>(&path)?;
        if let Some(why) = run.as_ref().and_then(RunInfo::implausible) {
            anyhow::bail!("{}: implausible, so no process is signalled by it: {why}", path.display());
        }
        Ok(run)
    }
    pub fn exit(&self) -> PathBuf {
        self.0.join("exit.json")
    }
    pub fn heartbeat(&self) -> PathBuf {
        self.0.join("heartbeat")
    }
    pub fn mailbox(&self) -> PathBuf {
        self.0.join("events.jsonl")
    }
    pub fn shim_lock(&self) -> PathBuf {
        self.0.join("shim.lock")
    }
    pub fn prompt(&self) -> PathBuf {
        self.0.join("prompt.md")
    }
    pub fn system_prompt(&self) -> PathBuf {
        self.0.join("system-prompt.md")
    }
    /// The worker's private temp dir (its `TMPDIR`), made fresh for each attempt.
    pub fn tmp(&self) -> PathBuf {
        self.0.join("tmp")
    }
    /// The worker's own git object store: objects it writes land here, never in the
    /// repository, until guild-hall has checked and adopted them.
    pub fn objects(&self) -> PathBuf {
        self.0.join("objects")
    }
    /// The worktree as guild-hall made it ([`crate::activity::git::WorktreeRecord`]).
    pub fn worktree(&self) -> PathBuf {
        self.0.join("worktree.json")
    }
    pub fn log(&self, attempt: u32) -> PathBuf {
        self.0.join(format!("attempt-{attempt}.log"))
    }
}

/// Read a JSON file; `None` if it does not exist. A half-written or corrupt file is an error.
pub fn read_json<T: DeserializeOwned>(path: &Path) -> Result<Option<T>> {
    match crate::files::read_if_exists(path)? {
        Some(bytes) => Ok(Some(serde_json::from_slice(&bytes).with_context(|| format!("parsing {}", path.display()))?)),
        None => Ok(None),
    }
}

pub fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    let mut bytes = serde_json::to_vec_pretty(value)?;
    bytes.push(b'\n');
    write_atomic(path, &bytes)
}

/// Write via a temp file in the same directory and rename, keeping an existing file's mode.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = write_temp(path, bytes)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })?;
    Ok(())
}

/// Replace a file a person may be editing, only if its content still hashes to `expect` (what
/// we observed). Returns false, writing nothing, if it changed. The check and the replace are
/// one atomic step: our version is swapped in (`renameat2(RENAME_EXCHANGE)`), and if what was
/// swapped out is not what we observed, someone saved in between and theirs is swapped back.
pub fn replace_if_unchanged(path: &Path, expect: u64, bytes: &[u8]) -> Result<bool> {
    use crate::artifact::commission::content_hash;
    // Never through a symlink: a person's link is neither followed nor replaced.
    let current = crate::artifact::read_regular(path).with_context(|| format!("reading {}", path.display()))?;
    if content_hash(&current) != expect {
        return Ok(false);
    }
    let tmp = write_temp(path, bytes)?;
    let cleanup = |r: Result<bool>| {
        let _ = std::fs::remove_file(&tmp);
        r
    };
    match exchange(&tmp, path) {
        Ok(()) => {
            // `tmp` now holds what was at `path` an instant ago.
            let swapped_out = std::fs::read(&tmp).unwrap_or_default();
            if crate::artifact::is_symlink(&tmp) {
                // A link was put there after we looked: it goes back, untouched.
                return cleanup(exchange(&tmp, path).map(|()| false).map_err(anyhow::Error::from));
            }
            if content_hash(&String::from_utf8_lossy(&swapped_out)) == expect {
                return cleanup(Ok(true));
            }
            // Someone saved after we looked. Give them their file back; if they save again
            // while we do, what comes out of the exchange is not what we put in, and that
            // newer save goes back in turn. Each exchange leaves the newest save in place.
            // `placed`: what we last put at `path`; `wanted`: the newest save, now at `tmp`.
            let (mut placed, mut wanted) = (bytes.to_vec(), swapped_out);
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
            while std::time::Instant::now() < deadline {
                if let Err(e) = exchange(&tmp, path) {
                    return cleanup(Err(anyhow::Error::from(e).context(format!("restoring {} after a concurrent save", path.display()))));
                }
                let out = std::fs::read(&tmp).unwrap_or_default();
                if out == placed {
                    return cleanup(Ok(false));
                }
                (placed, wanted) = (wanted, out);
            }
            cleanup(Err(anyhow!("{} kept changing while it was being restored; the newest save is in place", path.display())))
        }
        // No RENAME_EXCHANGE here (filesystem or platform): check again and rename.
        Err(_) => {
            let again = crate::artifact::read_regular(path).unwrap_or_default();
            if content_hash(&again) != expect {
                return cleanup(Ok(false));
            }
            std::fs::rename(&tmp, path).map_err(|e| {
                let _ = std::fs::remove_file(&tmp);
                anyhow::Error::from(e).context(format!("writing {}", path.display()))
            })?;
            Ok(true)
        }
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn exchange(a: &Path, b: &Path) -> std::io::Result<()> {
    use nix::fcntl::{renameat2, RenameFlags, AT_FDCWD};
    renameat2(AT_FDCWD, a, AT_FDCWD, b, RenameFlags::RENAME_EXCHANGE).map_err(std::io::Error::from)
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn exchange(_: &Path, _: &Path) -> std::io::Result<()> {
    Err(std::io::Error::from(std::io::ErrorKind::Unsupported))
}

/// A temp file beside `path` (same filesystem, so a rename is atomic) holding `bytes`, with
/// the mode of an existing `path`.
fn write_temp(path: &Path, bytes: &[u8]) -> Result<std::path::PathBuf> {
    let dir = path.parent().context("path has no parent")?;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    // A fresh name made with O_EXCL (tempfile): nothing already there, a link planted by a
    // worker included, is ever opened or followed.
    let write = || -> std::io::Result<std::path::PathBuf> {
        let mut f = tempfile::Builder::new().prefix(&format!(".{name}.guild-hall-")).suffix(".tmp").tempfile_in(dir)?;
        f.write_all(bytes)?;
        f.as_file().sync_all()?;
        if let Ok(meta) = std::fs::metadata(path) {
            f.as_file().set_permissions(meta.permissions())?;
        }
        f.into_temp_path().keep().map_err(|e| e.error)
    };
    write().with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::artifact::commission::content_hash;

    #[test]
    fn replaces_only_what_was_observed() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("a.md");
        std::fs::write(&path, "seen\n").expect("write");
        assert!(replace_if_unchanged(&path, content_hash("seen\n"), b"ours\n").expect("replace"));
        assert_eq!(std::fs::read_to_string(&path).expect("read"), "ours\n");
        // A save we did not observe is never overwritten.
        std::fs::write(&path, "theirs\n").expect("write");
        assert!(!replace_if_unchanged(&path, content_hash("ours\n"), b"mine again\n").expect("replace"));
        assert_eq!(std::fs::read_to_string(&path).expect("read"), "theirs\n");
        // No temp files are left behind.
        assert_eq!(std::fs::read_dir(dir.path()).expect("dir").count(), 1);
    }

    #[test]
    fn a_symlink_is_never_followed_or_replaced() {
        let dir = tempfile::tempdir().expect("tmp");
        let target = dir.path().join("elsewhere.md");
        std::fs::write(&target, "theirs\n").expect("write");
        let link = dir.path().join("a.md");
        std::os::unix::fs::symlink(&target, &link).expect("symlink");
        let err = replace_if_unchanged(&link, content_hash("theirs\n"), b"ours\n").expect_err("refused");
        assert!(format!("{err:#}").contains("symlink"), "{err:#}");
        assert!(std::fs::symlink_metadata(&link).expect("link").file_type().is_symlink());
        assert_eq!(std::fs::read_to_string(&target).expect("read"), "theirs\n");
    }

    #[test]
    fn racing_rename_saves_always_survive() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("a.md");
        std::fs::write(&path, "person 0\n").expect("write");
        let p = path.clone();
        let person = std::thread::spawn(move || {
            for i in 1..=300 {
                let tmp = p.with_file_name(format!(".a.md.{i}.swp"));
                std::fs::write(&tmp, format!("person {i}\n")).expect("write");
                std::fs::rename(&tmp, &p).expect("rename");
            }
        });
        // We only ever replace a person's version with "ours after N" for the N we observed.
        let mut ours = 0;
        while !person.is_finished() {
            let seen = std::fs::read_to_string(&path).expect("read");
            let n: u32 = seen.trim().rsplit(' ').next().and_then(|n| n.parse().ok()).unwrap_or(0);
            if seen.starts_with("person")
                && replace_if_unchanged(&path, content_hash(&seen), format!("ours after {n}\n").as_bytes()).expect("replace")
            {
                ours += 1;
            }
        }
        person.join().expect("person");
        // The person's last save came after everything we observed: it must be there, unless we
        // replaced exactly it (and then we say so).
        let last = std::fs::read_to_string(&path).expect("read");
        assert!(last == "person 300\n" || last == "ours after 300\n", "{last} (we wrote {ours} times)");
    }
}

#[cfg(test)]
mod run_record_tests {
    use super::*;

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
