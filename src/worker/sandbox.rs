//! Confinement of worker processes: a Landlock ruleset under which a worker may write only
//! inside the paths it was given (its worktree, its private temp dir, ...), while reading,
//! executing and the network stay open. The ruleset is built before the fork and enforced in
//! the child just before `exec`, so guild-hall itself is never confined.

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::Command;

use landlock::{AccessFs, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr, RulesetCreatedAttr, Scope, ABI};

/// The ABI this ruleset is written for (the kernel here offers 7). Older kernels get the
/// subset they know (best effort); none at all is [`Support::Unavailable`].
const TARGET_ABI: ABI = ABI::V7;

/// Device files any program expects to open for writing; writing to them reaches no file.
const DEVICES: [&str; 7] = ["/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/ptmx", "/dev/pts", "/dev/shm"];

#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("Landlock is not available on this kernel ({0})")]
    Unavailable(String),
    #[error("sandbox path {path}: {source}")]
    Path { path: PathBuf, source: std::io::Error },
    #[error("building the Landlock ruleset: {0}")]
    Ruleset(#[from] landlock::RulesetError),
}

/// Whether this kernel can confine workers.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "landlock", rename_all = "snake_case")]
pub enum Support {
    Available { abi: i32 },
    Unavailable { why: String },
}

/// The Landlock ABI version of the running kernel. `GUILD_HALL_NO_LANDLOCK=1` (hidden, for
/// tests) answers as a kernel without Landlock would.
pub fn support() -> Support {
    if std::env::var_os("GUILD_HALL_NO_LANDLOCK").is_some_and(|v| v == "1") {
        return Support::Unavailable { why: "disabled by GUILD_HALL_NO_LANDLOCK=1".into() };
    }
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with a null attr and size 0 this only queries the ABI version.
    let abi = unsafe {
        libc::syscall(libc::SYS_landlock_create_ruleset, std::ptr::null::<libc::c_void>(), 0usize, LANDLOCK_CREATE_RULESET_VERSION)
    };
    if abi >= 1 {
        return Support::Available { abi: abi as i32 };
    }
    let why = match std::io::Error::last_os_error().raw_os_error() {
        Some(libc::ENOSYS) => "the kernel was built without Landlock".to_string(),
        Some(libc::EOPNOTSUPP) => "Landlock is disabled at boot (add landlock to the lsm= kernel parameter)".to_string(),
        _ => format!("landlock_create_ruleset: {}", std::io::Error::last_os_error()),
    };
    Support::Unavailable { why }
}

/// A `sandbox.write` entry of the form `${NAME:-DEFAULT}`: the value of `NAME` in guild-hall's
/// environment when it is set and not empty, else `DEFAULT` (so a package can follow, say,
/// `CLAUDE_CONFIG_DIR` where a person moved Claude Code's state). Any other entry is itself.
pub fn env_or_default(entry: &str) -> Result<String, String> {
    let Some(inner) = entry.strip_prefix("${").and_then(|r| r.strip_suffix('}')) else { return Ok(entry.to_string()) };
    let Some((name, default)) = inner.split_once(":-") else {
        return Err(format!("sandbox.write {entry:?}: write ${{NAME:-DEFAULT}}, with a default for when NAME is not set"));
    };
    let mut chars = name.chars();
    if !(chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_') && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')) {
        return Err(format!("sandbox.write {entry:?}: {name:?} is not a variable name"));
    }
    match std::env::var(name) {
        Ok(v) if !v.is_empty() => Ok(v),
        Ok(_) | Err(std::env::VarError::NotPresent) => Ok(default.to_string()),
        Err(std::env::VarError::NotUnicode(_)) => Err(format!("sandbox.write {entry:?}: {name} is not valid UTF-8")),
    }
}

/// What one confined process may write. Everything else is read-only to it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy {
    /// Directories (everything beneath them) and files it may create, change and remove.
    pub writable: Vec<PathBuf>,
}

/// A ruleset ready to be enforced on a child process.
#[derive(Debug)]
pub struct Prepared {
    fd: OwnedFd,
}

impl Policy {
    /// Build the ruleset. Every writable path must exist (Landlock rules name open files).
    pub fn prepare(&self) -> Result<Prepared, SandboxError> {
        if let Support::Unavailable { why } = support() {
            return Err(SandboxError::Unavailable(why));
        }
        let mut ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(AccessFs::from_write(TARGET_ABI))?
            // A worker may signal its own processes, never guild-hall or anything else.
            .scope(Scope::Signal)?
            .create()?;
        let devices = DEVICES.iter().map(Path::new).filter(|p| p.exists());
        for path in self.writable.iter().map(PathBuf::as_path).chain(devices) {
            let fd = PathFd::new(path)
                .map_err(|e| SandboxError::Path { path: path.to_path_buf(), source: std::io::Error::other(e.to_string()) })?;
            // Every handled right (writes only); for a file the crate keeps those that apply to files.
            ruleset = ruleset.add_rule(PathBeneath::new(fd, AccessFs::from_write(TARGET_ABI)))?;
        }
        let fd: Option<OwnedFd> = ruleset.into();
        let fd = fd.ok_or_else(|| SandboxError::Unavailable("the kernel refused to create a ruleset".into()))?;
        Ok(Prepared { fd })
    }
}

impl Prepared {
    /// Confine `cmd`'s child just before it execs: no new privileges, then the ruleset. Only
    /// two raw system calls run in the child, both async-signal-safe.
    pub fn apply_to(self, cmd: &mut Command) {
        use std::os::unix::process::CommandExt;
        let raw = self.fd.as_raw_fd();
        let keep = self.fd;
        // SAFETY: prctl and landlock_restrict_self are plain system calls; no allocation, no
        // locks. `keep` holds the ruleset fd open until the command is dropped.
        unsafe {
            cmd.pre_exec(move || {
                let _ = &keep;
                if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::syscall(libc::SYS_landlock_restrict_self, raw, 0u32) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A confined child writes where it may and is refused everywhere else, even as root.
    #[test]
    fn writes_only_where_allowed() {
        if let Support::Unavailable { why } = support() {
            panic!("these tests need Landlock: {why}");
        }
        let dir = tempfile::tempdir().expect("tmp");
        let inside = dir.path().join("inside");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(&inside).expect("mkdir");
        std::fs::create_dir_all(&outside).expect("mkdir");
        std::fs::write(outside.join("keep.txt"), "keep\n").expect("write");
        let policy = Policy { writable: vec![inside.clone()] };
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg(
            "echo ok > \"$1/new.txt\" && echo ok > /dev/null && cat \"$2/keep.txt\" >/dev/null \
             && ! (echo no > \"$2/new.txt\") 2>/dev/null && ! (echo no >> \"$2/keep.txt\") 2>/dev/null \
             && ! rm -f \"$2/keep.txt\" 2>/dev/null && ! mkdir \"$2/d\" 2>/dev/null",
        );
        cmd.arg("sh").arg(&inside).arg(&outside);
        policy.prepare().expect("ruleset").apply_to(&mut cmd);
        let status = cmd.status().expect("runs");
        assert!(status.success(), "the confined shell saw a write outside succeed, or one inside fail");
        assert_eq!(std::fs::read_to_string(inside.join("new.txt")).expect("inside"), "ok\n");
        assert!(!outside.join("new.txt").exists());
        assert!(!outside.join("d").exists());
        assert_eq!(std::fs::read_to_string(outside.join("keep.txt")).expect("kept"), "keep\n");
    }
}
