//! Runtime records under `$GUILD_HALL_HOME/state/<project>/commissions/<id>/`: what the
//! reconciler last wrote (`record.json`), what the shim saw (`run.json`, `exit.json`), and the
//! heartbeat. Plain data plus atomic file helpers; no decisions.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
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
    pub fn log(&self, attempt: u32) -> PathBuf {
        self.0.join(format!("attempt-{attempt}.log"))
    }
}

/// Read a JSON file; `None` if it does not exist. A half-written or corrupt file is an error.
pub fn read_json<T: DeserializeOwned>(path: &Path) -> Result<Option<T>> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(Some(serde_json::from_slice(&bytes).with_context(|| format!("parsing {}", path.display()))?)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

pub fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    let mut bytes = serde_json::to_vec_pretty(value)?;
    bytes.push(b'\n');
    write_atomic(path, &bytes)
}

/// Write via a temp file in the same directory and rename, keeping an existing file's mode.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path.parent().context("path has no parent")?;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let tmp = dir.join(format!(".{name}.guild-hall-{}.tmp", std::process::id()));
    let result = (|| -> Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        if let Ok(meta) = std::fs::metadata(path) {
            std::fs::set_permissions(&tmp, meta.permissions())?;
        }
        std::fs::rename(&tmp, path)?;
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.with_context(|| format!("writing {}", path.display()))
}
