//! Worker memory: `$GUILD_HALL_HOME/memory/<project>/<worker>/<key>.md`, one project's and one
//! package's (a package in a cloned repository named like one of yours writes into its own
//! memory, never into your package's prompt in your other projects); written by
//! `store_memory`, read into the system prompt at dispatch (most recent first, whole files, up
//! to `memory_cap`), and compacted in the background by the package's `compact` command when
//! it grows past `memory_compact_threshold`. A failed compaction leaves memory exactly as it
//! was.
//!
//! A worker writes its memory dir: every file of it is read without following a link and must
//! be a regular file (a link to `secrets.env` is skipped and said, never read into a prompt).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{anyhow, bail, Context, Result};

use crate::artifact::ids;
use crate::worker::Package;

/// The file that holds compacted memory; it is a memory like the others.
pub(crate) const COMPACTED: &str = "compacted";

/// The memory dir of package `worker` under `project_memory`, a project's memory dir
/// ([`crate::config::Home::project_memory_dir`]).
pub(crate) fn dir(project_memory: &Path, worker: &str) -> Result<PathBuf> {
    ids::validate_id(worker)?;
    Ok(project_memory.join(worker))
}

/// Store (or overwrite) one memory in the memory dir `dir` (a worker's own, [`dir`]). Keys
/// are ids: filename-safe, never a path.
pub(crate) fn store(dir: &Path, key: &str, content: &str) -> Result<PathBuf> {
    ids::validate_id(key).map_err(|e| anyhow!("bad memory key: {e}"))?;
    if content.len() > 256 * 1024 {
        bail!("memory {key:?} is {} bytes; at most 256 KiB", content.len());
    }
    let path = dir.join(format!("{key}.md"));
    crate::files::write_atomic(&path, content.as_bytes())?;
    Ok(path)
}

/// One memory file.
#[derive(Debug, Clone)]
pub(crate) struct Memory {
    pub(crate) key: String,
    pub(crate) path: PathBuf,
    pub(crate) content: String,
    pub(crate) modified: std::time::SystemTime,
}

/// A worker's memories and the files of its memory dir that were not read, each said (a
/// symlink, not a regular file, unreadable): what a dispatch notes in the attempt's log.
#[derive(Debug, Default)]
pub(crate) struct Loaded {
    pub(crate) memories: Vec<Memory>,
    pub(crate) skipped: Vec<String>,
}

/// All of a worker's memories, most recently written first (ties: key).
pub(crate) fn load(project_memory: &Path, worker: &str) -> Result<Vec<Memory>> {
    Ok(load_checked(project_memory, worker)?.memories)
}

/// [`load`], with what was skipped. Each file is opened `O_NOFOLLOW` in the opened dir and
/// must be a regular file: the worker wrote this dir, and a link it planted is never followed.
pub(crate) fn load_checked(project_memory: &Path, worker: &str) -> Result<Loaded> {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = dir(project_memory, worker)?;
    let mut out = Loaded::default();
    // The dir itself: never through a link either (its parent is guild-hall's, not the
    // worker's, but a home restored from a copy could hold anything).
    let Ok(handle) = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW).open(&dir) else {
        if std::fs::symlink_metadata(&dir).is_ok_and(|m| m.file_type().is_symlink()) {
            out.skipped.push(format!("{}: a symlink, not read (memory is never read through a link)", dir.display()));
        }
        return Ok(out);
    };
    let Ok(entries) = std::fs::read_dir(&dir) else { return Ok(out) };
    for e in entries.filter_map(|e| e.ok()) {
        let name = e.file_name();
        let Some(key) = name.to_str().and_then(|n| n.strip_suffix(".md")) else { continue };
        if ids::validate_id(key).is_err() {
            continue;
        }
        let path = e.path();
        let content = match crate::artifact::read_regular_in(&handle, &name) {
            Ok(c) => c,
            Err(why) => {
                out.skipped.push(format!("{}: {why}; not read", path.display()));
                continue;
            }
        };
        let Ok(meta) = std::fs::symlink_metadata(&path) else { continue };
        out.memories.push(Memory { key: key.to_string(), content, modified: meta.modified().unwrap_or(std::time::UNIX_EPOCH), path });
    }
    out.memories.sort_by(|a, b| b.modified.cmp(&a.modified).then_with(|| a.key.cmp(&b.key)));
    Ok(out)
}

/// The system prompt for a dispatch: posture, then memories most recent first (whole files,
/// while they fit in `cap` characters), then the toolbox instructions.
pub(crate) fn system_prompt(posture: Option<&str>, memories: &[Memory], cap: usize, toolbox: &str) -> String {
    let mut out = String::new();
    if let Some(p) = posture {
        out.push_str(p.trim_end());
        out.push_str("\n\n");
    }
    let mut used = 0;
    let mut section = String::new();
    for m in memories {
        let chars = m.content.chars().count();
        if used + chars > cap {
            continue;
        }
        used += chars;
        section.push_str(&format!("### {}\n\n{}\n\n", m.key, m.content.trim_end()));
    }
    if !section.is_empty() {
        out.push_str("## Memory\n\nWhat you stored in earlier commissions, most recent first.\n\n");
        out.push_str(&section);
    }
    out.push_str(toolbox);
    out
}

/// Total characters of a worker's memory.
pub(crate) fn total_chars(memories: &[Memory]) -> usize {
    memories.iter().map(|m| m.content.chars().count()).sum()
}

/// Start `guild-hall memory-compact` for the worker in the background if its memory is over
/// the threshold and its package can compact. Never waits for it.
/// `confined`: run the package's `compact` command under Landlock (see [`compact`]).
pub(crate) fn maybe_compact(home: &Path, project_memory: &Path, pkg: &Package, threshold: usize, confined: bool) -> Result<()> {
    let key = pkg.memory_key();
    if pkg.manifest.compact.is_none() || total_chars(&load(project_memory, &key)?) <= threshold {
        return Ok(());
    }
    let exe = std::env::current_exe()?;
    let mut cmd = Command::new(exe);
    // The subcommand first: `peer` knows a compaction by its command line.
    cmd.arg("memory-compact").arg("--memory-dir").arg(project_memory).arg("--package").arg(&pkg.dir).arg("--memory").arg(&key);
    cmd.arg("--home").arg(home);
    if !confined {
        cmd.arg("--unconfined");
    }
    cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
    crate::worker::process::detach(&mut cmd);
    let mut child = cmd.spawn().context("starting memory compaction")?;
    std::thread::spawn(move || child.wait());
    Ok(())
}

/// The compaction itself (a separate process) of the memory `key` names ([`Package::memory_key`]):
/// one at a time per worker; all memories on the command's stdin; its stdout becomes `compacted.md`; exactly the files it was given are
/// removed. Any failure leaves memory as it was.
///
/// Confined, the command may write only a private temp dir (its `TMPDIR`) and what the
/// package's `sandbox.write` adds: its output is its stdout. It reads nothing of `home`.
pub fn compact(home: &Path, project_memory: &Path, pkg: &Package, key: &str, confined: bool) -> Result<()> {
    let result = compact_now(home, project_memory, pkg, key, confined);
    // It runs in the background with nobody watching: its outcome goes to `.compact.log`
    // beside the memories (`guild-hall` never reads it back; people and tests do). Never
    // through a link the worker put there.
    if let Ok(dir) = dir(project_memory, key) {
        use std::os::unix::fs::OpenOptionsExt;
        let line = match &result {
            Ok(true) => "compacted".to_string(),
            Ok(false) => "skipped: another compaction is running".to_string(),
            Err(e) => format!("failed, memory left as it was: {e:#}"),
        };
        let stamp = crate::activity::timeline::timestamp(chrono::Utc::now());
        let _ = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(dir.join(COMPACT_LOG))
            .and_then(|mut f| std::io::Write::write_all(&mut f, format!("{stamp} {line}\n").as_bytes()));
    }
    result.map(|_| ())
}

/// Where compaction outcomes are logged, one line each.
pub(crate) const COMPACT_LOG: &str = ".compact.log";

/// The compaction; `Ok(false)` when another one holds the lock.
fn compact_now(home: &Path, project_memory: &Path, pkg: &Package, worker: &str, confined: bool) -> Result<bool> {
    let dir = dir(project_memory, worker)?;
    std::fs::create_dir_all(&dir)?;
    let Some(_lock) = crate::files::lock(&dir.join(".compact.lock"), crate::files::Lock::TryExclusive)? else {
        return Ok(false); // another compaction is running
    };
    let memories = load(project_memory, worker)?;
    let argv = pkg.resolve_argv(pkg.manifest.compact.as_deref().unwrap_or_default()).map_err(|e| anyhow!(e))?;
    let mut input = String::new();
    for m in &memories {
        input.push_str(&format!("### {}\n\n{}\n\n", m.key, m.content.trim_end()));
    }
    let tmp = dir.join(".compact-tmp");
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp)?;
    // The command reads nothing of the home but its package.
    let out = crate::worker::filter::run_filter(pkg, &argv, &pkg.dir, &input, &tmp, confined, home, &Default::default());
    let _ = std::fs::remove_dir_all(&tmp);
    let out = out.context("running the compact command")?;
    let text = String::from_utf8(out.stdout).map_err(|_| anyhow!("compact printed non-UTF-8"))?;
    if !out.status.success() || text.trim().is_empty() {
        bail!("compact failed ({}); memory left as it was", out.status);
    }
    // Write the new memory first; only then remove what it replaces (never a file written
    // while the command ran: those were not in its input).
    let compacted = dir.join(format!("{COMPACTED}.md"));
    crate::files::write_atomic(&compacted, text.as_bytes())?;
    for m in memories.iter().filter(|m| m.path != compacted) {
        let now = std::fs::symlink_metadata(&m.path).and_then(|md| md.modified()).ok();
        if now == Some(m.modified) {
            std::fs::remove_file(&m.path)?;
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mem(key: &str, content: &str) -> Memory {
        Memory { key: key.into(), path: PathBuf::from(key), content: content.into(), modified: std::time::UNIX_EPOCH }
    }

    #[test]
    fn system_prompt_order_and_cap() {
        let ms = [mem("new", &"n".repeat(10)), mem("big", &"b".repeat(100)), mem("old", &"o".repeat(10))];
        let p = system_prompt(Some("You are careful."), &ms, 50, "## Toolbox\n\n- submit_result\n");
        assert!(p.starts_with("You are careful.\n\n## Memory"));
        let (n, o) = (p.find("### new").expect("new"), p.find("### old").expect("old"));
        assert!(n < o, "most recent first");
        assert!(!p.contains("### big"), "whole files only, within the cap");
        assert!(p.contains("submit_result"));
    }

    #[test]
    fn store_rejects_bad_keys() {
        let dir = tempfile::tempdir().expect("tmp");
        for bad in ["../x", "a/b", "", ".hidden"] {
            assert!(store(&dir.path().join("w"), bad, "x").is_err(), "{bad}");
        }
        assert!(super::dir(dir.path(), "../w").is_err());
        store(&dir.path().join("w"), "k", "one").expect("store");
        store(&dir.path().join("w"), "k", "two").expect("overwrite");
        assert_eq!(load(dir.path(), "w").expect("load")[0].content, "two");
    }
}
