//! The project's single-writer lock (who holds it is written in it, for the refusal) and the
//! home-wide dispatch lock the pass takes every round in which a kind that launches workers is
//! driven (a meeting's fold after its turn takes none); and, for a command that moves the
//! integration branch between passes, whichever of the two keeps passes from merging meanwhile.

use std::io::{Seek, Write};
use std::path::PathBuf;

use anyhow::{anyhow, Result};
use nix::fcntl::Flock;

use crate::config::{Home, Project};

/// An exclusive, non-blocking lock on a file that records its holder.
pub struct HeldLock {
    _lock: Flock<std::fs::File>,
}

/// Take the project's single-writer lock for `who` (e.g. "guild-hall watch"), or say who holds it.
pub fn lock_project(home: &Home, project: &Project, wait: bool, who: &str) -> Result<HeldLock> {
    let path = home.project_state(&project.name).join("lock");
    take_lock(&path, wait, who).map_err(|holder| {
        anyhow!(
            "project {} is being reconciled by another guild-hall process: {holder}. It is the single writer: let it do the work, stop it, or pass --wait-lock to wait for it",
            project.root.display()
        )
    })
}

/// Why a lock was not taken ([`take_lock`]).
#[derive(Debug, thiserror::Error)]
pub(crate) enum TakeLockError {
    /// Another process holds it: who, as the lock's file says (empty when it names no one).
    #[error("{holder}")]
    Held { holder: String },
    /// The lock's file could not be made or locked.
    #[error("{0:#}")]
    Fault(anyhow::Error),
}

pub(super) fn take_lock(path: &PathBuf, wait: bool, who: &str) -> std::result::Result<HeldLock, TakeLockError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| TakeLockError::Fault(e.into()))?;
    }
    use crate::files::{lock, Lock};
    let held = || TakeLockError::Held { holder: std::fs::read_to_string(path).map(|h| h.trim().to_string()).unwrap_or_default() };
    let mut f = match lock(path, Lock::TryExclusive).map_err(TakeLockError::Fault)? {
        Some(f) => f,
        None if wait => {
            // Said once, so a waiting reconciler is not silent about whom it waits for.
            if !who.is_empty() {
                tracing::warn!("waiting for the project lock, held by {}", held());
            }
            lock(path, Lock::Exclusive).map_err(TakeLockError::Fault)?.ok_or_else(held)?
        }
        None => return Err(held()),
    };
    // Who holds it, for the refusal message; the home-wide dispatch lock is taken every pass
    // and names no one (a write per pass would be a write at rest).
    if !who.is_empty() {
        let _ = f.set_len(0);
        let _ = f.rewind();
        let _ = writeln!(f, "{who} (pid {}) since {}", std::process::id(), crate::activity::timeline::timestamp(chrono::Utc::now()));
    }
    Ok(HeldLock { _lock: f })
}

/// The home-wide dispatch lock's file.
pub(super) fn dispatch_lock_path(home: &Home) -> PathBuf {
    home.root.join("dispatch.lock")
}

/// For a command that moves the integration branch outside a pass (`sync`): the project's lock
/// when no one holds it (no pass starts meanwhile), else the home's dispatch lock, which the
/// holder's pass takes for every round that can merge (so none merges meanwhile), waited for.
pub fn lock_between_passes(home: &Home, project: &Project, who: &str) -> Result<HeldLock> {
    match lock_project(home, project, false, who) {
        Ok(held) => Ok(held),
        Err(_) => take_lock(&dispatch_lock_path(home), true, "").map_err(|e| anyhow!("home lock: {e}")),
    }
}

/// Who holds the project's lock right now, if anyone.
pub fn lock_holder(home: &Home, project: &Project) -> Option<String> {
    let path = home.project_state(&project.name).join("lock");
    if !path.exists() {
        return None;
    }
    take_lock(&path, false, "").err().map(|e| e.to_string())
}
