//! Filesystem idioms written once: a file that may not exist (read or removed), and an advisory
//! lock on a lock file (waiting for it, or only trying). Errors name the path.

use std::fs::File;
use std::path::Path;

use anyhow::{Context, Result};
use nix::fcntl::{Flock, FlockArg};

/// The file's bytes, or `None` if it does not exist. Any other failure is an error.
pub fn read_if_exists(path: &Path) -> Result<Option<Vec<u8>>> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

/// The file as text, or `None` if it does not exist.
pub fn read_text_if_exists(path: &Path) -> Result<Option<String>> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

/// Remove a file; one that is already gone is fine.
pub fn remove_if_exists(path: &Path) -> Result<()> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).with_context(|| format!("removing {}", path.display())),
    }
}

/// How to take a lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lock {
    /// Exclusive, waiting for it.
    Exclusive,
    /// Exclusive if free now.
    TryExclusive,
    /// Shared, waiting for it (to learn when an exclusive holder lets go).
    Shared,
}

/// Take `how` on the lock file at `path` (created if missing, never truncated). `Ok(None)`
/// when a try found it held.
pub fn lock(path: &Path, how: Lock) -> Result<Option<Flock<File>>> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(path)
        .with_context(|| format!("opening lock {}", path.display()))?;
    let arg = match how {
        Lock::Exclusive => FlockArg::LockExclusive,
        Lock::TryExclusive => FlockArg::LockExclusiveNonblock,
        Lock::Shared => FlockArg::LockShared,
    };
    match Flock::lock(file, arg) {
        Ok(l) => Ok(Some(l)),
        Err((_, nix::errno::Errno::EWOULDBLOCK)) if how == Lock::TryExclusive => Ok(None),
        Err((_, e)) => Err(e).with_context(|| format!("locking {}", path.display())),
    }
}

/// Whether someone holds an exclusive lock on `path` now (a missing file: no one). Takes
/// nothing and creates nothing.
pub fn is_locked(path: &Path) -> bool {
    let Ok(f) = File::open(path) else { return false };
    match Flock::lock(f, FlockArg::LockSharedNonblock) {
        Ok(_) => false,
        Err((_, e)) => e == nix::errno::Errno::EWOULDBLOCK,
    }
}
