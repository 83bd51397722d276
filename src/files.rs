//! Filesystem idioms written once: a file that may not exist (read or removed), an atomic
//! replace (temp file and rename, or an exchange), JSON files, and an advisory lock on a lock
//! file (waiting for it, or only trying). Errors name the path.

use std::fs::File;
use std::io::Write;
use std::path::Path;

use serde::{de::DeserializeOwned, Serialize};

use anyhow::{Context, Result};
use nix::fcntl::{Flock, FlockArg};

/// The file's bytes, or `None` if it does not exist. Any other failure is an error.
pub(crate) fn read_if_exists(path: &Path) -> Result<Option<Vec<u8>>> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

/// The file as text, or `None` if it does not exist.
pub(crate) fn read_text_if_exists(path: &Path) -> Result<Option<String>> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

/// The last `max` bytes of the file at `path` (all of it when smaller): a log's end without
/// reading megabytes. `None` if it cannot be read.
pub(crate) fn read_tail_bytes(path: &Path, max: u64) -> Option<Vec<u8>> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = File::open(path).ok()?;
    let len = f.metadata().ok()?.len();
    f.seek(SeekFrom::Start(len.saturating_sub(max))).ok()?;
    let mut end = Vec::new();
    f.take(max).read_to_end(&mut end).ok()?;
    Some(end)
}

/// [`read_tail_bytes`] as text (what is not UTF-8 replaced).
pub(crate) fn read_tail(path: &Path, max: u64) -> Option<String> {
    read_tail_bytes(path, max).map(|b| String::from_utf8_lossy(&b).into_owned())
}

/// Remove a file; one that is already gone is fine.
pub(crate) fn remove_if_exists(path: &Path) -> Result<()> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).with_context(|| format!("removing {}", path.display())),
    }
}

/// How to take a lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lock {
    /// Exclusive, waiting for it.
    Exclusive,
    /// Exclusive if free now.
    TryExclusive,
    /// Shared, waiting for it (to learn when an exclusive holder lets go).
    Shared,
}

/// Take `how` on the lock file at `path` (created if missing, never truncated). `Ok(None)`
/// when a try found it held.
pub(crate) fn lock(path: &Path, how: Lock) -> Result<Option<Flock<File>>> {
    use std::os::unix::fs::OpenOptionsExt;
    // Never through a link: some lock files sit in dirs a worker writes (its memory dir).
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOFOLLOW)
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
pub(crate) fn is_locked(path: &Path) -> bool {
    let Ok(f) = File::open(path) else { return false };
    match Flock::lock(f, FlockArg::LockSharedNonblock) {
        Ok(_) => false,
        Err((_, e)) => e == nix::errno::Errno::EWOULDBLOCK,
    }
}

/// Read a JSON file; `None` if it does not exist. A half-written or corrupt file is an error.
pub(crate) fn read_json<T: DeserializeOwned>(path: &Path) -> Result<Option<T>> {
    match crate::files::read_if_exists(path)? {
        Some(bytes) => Ok(Some(serde_json::from_slice(&bytes).with_context(|| format!("parsing {}", path.display()))?)),
        None => Ok(None),
    }
}

pub(crate) fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    let mut bytes = serde_json::to_vec_pretty(value)?;
    bytes.push(b'\n');
    write_atomic(path, &bytes)
}

/// Write via a temp file in the same directory and rename, keeping an existing file's mode.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = write_temp(path, bytes)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })?;
    Ok(())
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub(crate) fn exchange(a: &Path, b: &Path) -> std::io::Result<()> {
    use nix::fcntl::{renameat2, RenameFlags, AT_FDCWD};
    renameat2(AT_FDCWD, a, AT_FDCWD, b, RenameFlags::RENAME_EXCHANGE).map_err(std::io::Error::from)
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub(crate) fn exchange(_: &Path, _: &Path) -> std::io::Result<()> {
    Err(std::io::Error::from(std::io::ErrorKind::Unsupported))
}

/// A temp file beside `path` (same filesystem, so a rename is atomic) holding `bytes`, with
/// the mode of an existing `path`.
pub(crate) fn write_temp(path: &Path, bytes: &[u8]) -> Result<std::path::PathBuf> {
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
