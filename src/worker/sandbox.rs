//! Confinement of worker processes: a Landlock ruleset under which a worker may write only
//! inside the paths it was given (its worktree, its private temp dir, ...) and may read nothing
//! in guild-hall's home but what is its own, while reading elsewhere, executing and the network
//! stay open. The ruleset is built before the fork and enforced in the child just before
//! `exec`, so guild-hall itself is never confined.

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::Command;

use landlock::{Access, AccessFs, BitFlags, CompatLevel, Compatible, Ruleset, RulesetAttr, Scope, ABI};

/// The ABI this ruleset is written for (the kernel here offers 7). Older kernels get the
/// subset they know (best effort); none at all is [`Support::Unavailable`].
const TARGET_ABI: ABI = ABI::V7;

/// Device files any program expects to open for writing; writing to them reaches no file.
const DEVICES: [&str; 7] = ["/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/ptmx", "/dev/pts", "/dev/shm"];

#[derive(Debug, thiserror::Error)]
pub(crate) enum SandboxError {
    #[error("Landlock is not available on this kernel ({0})")]
    Unavailable(String),
    /// `path` is the entry as the package wrote it (`${NAME:-DEFAULT}`), never an expanded
    /// value: that may be a secret.
    #[error("sandbox path {path}: {source}")]
    Path { path: String, source: std::io::Error },
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

/// What else a policy file is ([`Policy::from_file_bytes`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum PolicyFileError {
    #[error("not a policy file (no final NUL)")]
    NoFinalNul,
    #[error("not a policy file (no header)")]
    NoHeader,
    #[error("an entry without its path")]
    NoPath,
    #[error("a shown path without its entry")]
    NoEntry,
    /// An entry of a kind no policy writes.
    #[error("unknown entry {0:?}")]
    Unknown(String),
}

/// Why the policy file at `path` was not read ([`Policy::read_file`]).
#[derive(Debug, thiserror::Error)]
pub(crate) enum PolicyReadError {
    #[error("reading the sandbox policy {}: {error}", .path.display())]
    Io { path: PathBuf, error: std::io::Error },
    #[error("the sandbox policy {}: {error}", .path.display())]
    Invalid { path: PathBuf, error: PolicyFileError },
}

/// A `sandbox.write` entry of the form `${NAME:-DEFAULT}`: the value of `NAME` in guild-hall's
/// environment when it is set and not empty, else `DEFAULT` (so a package can follow, say,
/// `CLAUDE_CONFIG_DIR` where a person moved Claude Code's state). Any other entry is itself.
pub(crate) fn env_or_default(entry: &str) -> Result<String, EntryError> {
    let Some(inner) = entry.strip_prefix("${").and_then(|r| r.strip_suffix('}')) else { return Ok(entry.to_string()) };
    let Some((name, default)) = inner.split_once(":-") else {
        return Err(EntryError::NoDefault { entry: entry.to_string() });
    };
    let mut chars = name.chars();
    if !(chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_') && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')) {
        return Err(EntryError::NotAName { entry: entry.to_string(), name: name.to_string() });
    }
    match std::env::var(name) {
        Ok(v) if !v.is_empty() => Ok(v),
        Ok(_) | Err(std::env::VarError::NotPresent) => Ok(default.to_string()),
        Err(std::env::VarError::NotUnicode(_)) => Err(EntryError::NotUtf8 { entry: entry.to_string(), name: name.to_string() }),
    }
}

/// Why a package's path entry (`sandbox.write`, `sandbox.read`, `acp.session_dir`) is not a
/// path ([`env_or_default`], [`super::expand_home`]). Each names the entry as written, never
/// what it expanded to: a variable's value may be a secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EntryError {
    #[error("sandbox.write {entry:?}: write ${{NAME:-DEFAULT}}, with a default for when NAME is not set")]
    NoDefault { entry: String },
    #[error("sandbox.write {entry:?}: {name:?} is not a variable name")]
    NotAName { entry: String, name: String },
    #[error("sandbox.write {entry:?}: {name} is not valid UTF-8")]
    NotUtf8 { entry: String, name: String },
    /// `key` is what the entry is (`sandbox.write`, `sandbox.read`, `acp.session_dir`).
    #[error("{key} {entry:?}: HOME is not set")]
    NoHome { key: String, entry: String },
    /// `from` says what the path came from (a variable's name), or is empty.
    #[error("{key} {entry:?} must be an absolute path (or start with ~/){from}")]
    NotAbsolute { key: String, entry: String, from: String },
    #[error("{key} {entry:?} must not contain `..`{from}")]
    Upward { key: String, entry: String, from: String },
}

/// The person's credential stores under their home directory (design §6): keys, cloud and
/// registry logins, shell and REPL histories, and the agents' own login files. A confined
/// worker reads none of them unless its package's `sandbox.read` names one (or a directory
/// holding it). The agents' packages keep homes of their own (`~/.claude/guild-hall-<package>`,
/// ...), so only the person's login files are listed, never those directories.
const CREDENTIAL_STORES: [&str; 41] = [
    ".ssh",
    ".aws",
    ".gnupg",
    ".config/gh",
    ".config/hub",
    ".config/gcloud",
    ".azure",
    ".netrc",
    ".git-credentials",
    ".config/git/credentials",
    ".docker",
    ".kube",
    ".npmrc",
    ".pypirc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".pgpass",
    ".vault-token",
    ".terraform.d/credentials.tfrc.json",
    ".config/rclone",
    ".s3cfg",
    ".boto",
    ".m2/settings.xml",
    ".gradle/gradle.properties",
    // Browser profiles: cookies, saved passwords, session tokens.
    ".mozilla",
    ".config/google-chrome",
    ".config/chromium",
    ".password-store",
    ".local/share/keyrings",
    ".bash_history",
    ".zsh_history",
    ".zhistory",
    ".histfile",
    ".sh_history",
    ".local/share/fish/fish_history",
    ".python_history",
    ".node_repl_history",
    ".psql_history",
    ".mysql_history",
    // The agents' own logins (`~/.claude.json` holds an API key login's key too).
    ".claude/.credentials.json",
    ".claude.json",
];

/// The agents' login files and the stores that their environment variables move elsewhere.
const AGENT_LOGINS: [&str; 4] =
    [".codex/auth.json", ".gemini/oauth_creds.json", ".gemini/google_accounts.json", ".gemini/gemini-credentials.json"];

/// The person's credential stores ([`CREDENTIAL_STORES`] under `$HOME`, and where guild-hall's
/// environment moved them: `CLAUDE_CONFIG_DIR`, `CODEX_HOME`, `GNUPGHOME`, `HISTFILE`,
/// `AWS_SHARED_CREDENTIALS_FILE`, `DOCKER_CONFIG`, `KUBECONFIG`, `GH_CONFIG_DIR`), less those
/// `read` names or holds (`sandbox.read`). Whether each exists is for [`Policy::prepare`].
pub(crate) fn credential_stores(read: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty()).map(PathBuf::from) {
        out.extend(CREDENTIAL_STORES.iter().chain(AGENT_LOGINS.iter()).map(|rel| home.join(rel)));
    }
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(d) = var("CLAUDE_CONFIG_DIR") {
        out.extend([d.join(".credentials.json"), d.join(".claude.json")]);
    }
    if let Some(d) = var("CODEX_HOME") {
        out.push(d.join("auth.json"));
    }
    for name in ["GNUPGHOME", "HISTFILE", "AWS_SHARED_CREDENTIALS_FILE", "DOCKER_CONFIG", "GH_CONFIG_DIR"] {
        out.extend(var(name));
    }
    if let Some(list) = std::env::var_os("KUBECONFIG") {
        out.extend(std::env::split_paths(&list).filter(|p| !p.as_os_str().is_empty()));
    }
    out.retain(|p| p.is_absolute() && !read.iter().any(|r| p.starts_with(r)));
    out.sort();
    out.dedup();
    out
}

/// What one confined process may write and read. It may write only `writable`; it may read
/// (and run) anything but what lies in a `hidden` dir, where it reads only the `writable` and
/// `readable` paths.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Policy {
    /// The attempt's own dirs (its worktree, its state dir with its temp dir): a socket
    /// listening in one of them is its own and stays reachable. A writable dir shared with
    /// other attempts (the memory dir, a `sandbox.write` entry) is no attempt's own.
    pub(crate) own: Vec<PathBuf>,
    /// How the package wrote a writable path (its `sandbox.write` entry, maybe
    /// `${NAME:-DEFAULT}`): errors name that, never the expanded value.
    pub(crate) written_as: std::collections::BTreeMap<PathBuf, String>,
    /// The package asked for its cluster's client commands ([`crate::worker::Package::cluster_client`]):
    /// MUNGE's socket stays reachable, so the worker can run them as the person.
    pub(crate) cluster_client: bool,
    /// Directories (everything beneath them) and files it may create, change, remove and read.
    pub(crate) writable: Vec<PathBuf>,
    /// Directories and files it may read and run although they lie in a hidden dir (a path
    /// that does not exist is skipped: there is nothing to read).
    pub(crate) readable: Vec<PathBuf>,
    /// Directories it may not read, list or run anything in, but for the writable and readable
    /// paths beneath them (guild-hall's home: the secrets, the endpoint's token, other
    /// attempts' state, worktrees and memory).
    pub(crate) hidden: Vec<PathBuf>,
}

/// The first field of a policy file ([`Policy::to_file_bytes`]).
const POLICY_HEADER: &[u8] = b"guild-hall-policy-1";

/// A ruleset ready to be enforced on a child process.
#[derive(Debug)]
pub(crate) struct Prepared {
    fd: OwnedFd,
    sockets: SocketMask,
}

/// Pathname Unix sockets made unreachable to a confined worker: the worker gets a mount
/// namespace of its own (in a user namespace of its own when it is not root) in which each
/// socket listening outside its own dirs ([`Policy::own`]) when it starts has `/dev/null` bound over it,
/// so `connect()` to that path is refused. Landlock does not cover `connect()` (ABI 7), and
/// confines mounts: the worker cannot take the binds away.
#[derive(Debug, Default)]
struct SocketMask {
    /// Whether a mount namespace can be had here ([`pathname_socket_support`], probed once):
    /// when not, the child never unshares and the sockets stay reachable.
    enabled: bool,
    /// Why the sockets are not masked (when not `enabled`).
    why_not: Option<String>,
    /// The sockets' paths, NUL-terminated (made before the fork: the child only calls mount).
    sockets: Vec<std::ffi::CString>,
    /// `"<euid> <euid> 1"` and `"<egid> <egid> 1"`: the maps of a user namespace of the
    /// worker's own, for when a mount namespace needs one (not root).
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
}

impl Policy {
    /// The policy as the bytes of the file `guild-hall shim --policy` reads
    /// ([`Policy::from_file_bytes`]): never on a command line, where every process of the
    /// machine reads it (an expanded `${NAME:-DEFAULT}` may be a secret). NUL-terminated fields:
    /// a header, then each entry's kind and its path (`shown` adds the entry as written).
    pub(crate) fn to_file_bytes(&self) -> Vec<u8> {
        use std::os::unix::ffi::OsStrExt;
        let mut out = Vec::new();
        let mut field = |b: &[u8]| {
            out.extend_from_slice(b);
            out.push(0);
        };
        field(POLICY_HEADER);
        for (kind, paths) in [("write", &self.writable), ("read", &self.readable), ("hide", &self.hidden), ("own", &self.own)] {
            for p in paths {
                field(kind.as_bytes());
                field(p.as_os_str().as_bytes());
            }
        }
        for (path, entry) in &self.written_as {
            field(b"shown");
            field(path.as_os_str().as_bytes());
            field(entry.as_bytes());
        }
        if self.cluster_client {
            field(b"cluster_client");
        }
        out
    }

    /// The policy [`Policy::to_file_bytes`] wrote; what else it is, is said.
    pub(crate) fn from_file_bytes(bytes: &[u8]) -> Result<Policy, PolicyFileError> {
        use std::os::unix::ffi::OsStrExt;
        let body = bytes.strip_suffix(&[0]).ok_or(PolicyFileError::NoFinalNul)?;
        let mut fields = body.split(|&b| b == 0);
        if fields.next() != Some(POLICY_HEADER) {
            return Err(PolicyFileError::NoHeader);
        }
        let path = |f: Option<&[u8]>| -> Result<PathBuf, PolicyFileError> {
            let f = f.filter(|f| !f.is_empty()).ok_or(PolicyFileError::NoPath)?;
            Ok(PathBuf::from(std::ffi::OsStr::from_bytes(f)))
        };
        let mut policy = Policy::default();
        while let Some(kind) = fields.next() {
            match kind {
                b"write" => policy.writable.push(path(fields.next())?),
                b"read" => policy.readable.push(path(fields.next())?),
                b"hide" => policy.hidden.push(path(fields.next())?),
                b"own" => policy.own.push(path(fields.next())?),
                b"shown" => {
                    let p = path(fields.next())?;
                    let entry = fields.next().ok_or(PolicyFileError::NoEntry)?;
                    policy.written_as.insert(p, String::from_utf8_lossy(entry).into_owned());
                }
                b"cluster_client" => policy.cluster_client = true,
                other => return Err(PolicyFileError::Unknown(String::from_utf8_lossy(other).into_owned())),
            }
        }
        Ok(policy)
    }

    /// Read the policy file at `path` (never through a link).
    pub(crate) fn read_file(path: &Path) -> Result<Policy, PolicyReadError> {
        use std::io::Read;
        use std::os::unix::fs::OpenOptionsExt;
        let mut bytes = Vec::new();
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(path)
            .and_then(|mut f| f.read_to_end(&mut bytes))
            .map_err(|error| PolicyReadError::Io { path: path.to_path_buf(), error })?;
        Policy::from_file_bytes(&bytes).map_err(|error| PolicyReadError::Invalid { path: path.to_path_buf(), error })
    }

    /// How a path of this policy is named in an error: the entry as the package wrote it,
    /// never what a variable expanded to.
    fn shown(&self, path: &Path) -> String {
        self.written_as.get(path).cloned().unwrap_or_else(|| path.display().to_string())
    }

    /// Build the ruleset. Every writable path must exist (Landlock rules name open files); a
    /// hidden dir that cannot be resolved is an error (confinement fails closed).
    pub(crate) fn prepare(&self) -> Result<Prepared, SandboxError> {
        let abi = match support() {
            Support::Available { abi } => ABI::from(abi),
            Support::Unavailable { why } => return Err(SandboxError::Unavailable(why)),
        };
        let ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(AccessFs::from_all(TARGET_ABI))?
            // A worker may signal its own processes, never guild-hall or anything else, and
            // connect to no abstract Unix socket made outside its own (ABI 6).
            .scope(Scope::Signal)?
            .scope(Scope::AbstractUnixSocket)?
            .create()?;
        let fd: Option<OwnedFd> = ruleset.into();
        let fd = fd.ok_or_else(|| SandboxError::Unavailable("the kernel refused to create a ruleset".into()))?;
        // The rights this kernel knows: rules are added with the raw call (below), which takes
        // no right the ruleset does not handle.
        let handled = AccessFs::from_all(TARGET_ABI) & AccessFs::from_all(abi);
        let read = AccessFs::from_read(TARGET_ABI) & handled;
        let write = AccessFs::from_write(TARGET_ABI) & handled;
        let hidden = hidden_roots(&self.hidden)?;
        for path in around(&hidden) {
            // Best effort: an entry that cannot be opened (or is a symlink) is simply not readable.
            let _ = add_rule(&fd, &path, read, Follow::No);
        }
        // A path that holds a hidden dir is granted its writes only: reading it would read the
        // hidden dir too (rights are inherited by everything beneath).
        let holds_hidden = |p: &Path| hidden.iter().any(|h| h.starts_with(p));
        let devices = DEVICES.iter().map(PathBuf::from).filter(|p| p.exists());
        for path in self.writable.iter().cloned().chain(devices) {
            let err = |e: std::io::Error| SandboxError::Path { path: self.shown(&path), source: e };
            let canonical = path.canonicalize().map_err(err)?;
            let access = if holds_hidden(&canonical) { write } else { write | read };
            add_rule(&fd, &canonical, access, Follow::Yes).map_err(err)?;
        }
        for path in &self.readable {
            let err = |e: std::io::Error| SandboxError::Path { path: self.shown(path), source: e };
            let canonical = match path.canonicalize() {
                Ok(c) => c,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(err(e)),
            };
            if !holds_hidden(&canonical) {
                add_rule(&fd, &canonical, read, Follow::Yes).map_err(err)?;
            }
        }
        let sockets = SocketMask::around(&self.own, self.cluster_client);
        Ok(Prepared { fd, sockets })
    }
}

/// The hidden dirs, resolved (symlinks followed), none inside another. One that does not exist
/// hides nothing; one that cannot be resolved otherwise is an error.
fn hidden_roots(hidden: &[PathBuf]) -> Result<Vec<PathBuf>, SandboxError> {
    let mut out = Vec::new();
    for h in hidden {
        match h.canonicalize() {
            Ok(c) => out.push(c),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(SandboxError::Path { path: h.display().to_string(), source: e }),
        }
    }
    out.sort();
    out.dedup();
    let all = out.clone();
    out.retain(|h| !all.iter().any(|o| o != h && h.starts_with(o)));
    Ok(out)
}

/// What may be read when `hidden` are hidden: the entries of each of their ancestors that are
/// neither hidden nor an ancestor of a hidden dir. Landlock grants a right to a whole tree and
/// cannot take it back beneath, so the way around a dir is to grant its siblings and those of
/// each of its ancestors; the ancestors themselves get no right (they cannot be listed). An
/// ancestor that cannot be listed gives nothing. Entries made after this are not readable.
fn around(hidden: &[PathBuf]) -> Vec<PathBuf> {
    if hidden.is_empty() {
        return vec![PathBuf::from("/")];
    }
    let ancestors: std::collections::BTreeSet<&Path> = hidden.iter().flat_map(|h| h.ancestors().skip(1)).collect();
    let mut out = Vec::new();
    for dir in &ancestors {
        let Ok(entries) = std::fs::read_dir(dir) else { continue };
        for entry in entries.filter_map(|e| e.ok()) {
            let path = dir.join(entry.file_name());
            if !hidden.contains(&path) && !ancestors.contains(path.as_path()) {
                out.push(path);
            }
        }
    }
    out
}

/// Whether a rule's path may be a symlink (followed), or a symlink is skipped.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Follow {
    Yes,
    No,
}

/// Allow `access` beneath `path` (a file gets the rights that apply to files). With
/// [`Follow::No`] a symlink gets no rule: granting its target could grant a hidden dir.
fn add_rule(ruleset: &OwnedFd, path: &Path, access: BitFlags<AccessFs>, follow: Follow) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).map_err(std::io::Error::other)?;
    let flags = libc::O_PATH | libc::O_CLOEXEC | if follow == Follow::No { libc::O_NOFOLLOW } else { 0 };
    // SAFETY: `c` is NUL-terminated; O_PATH opens take no mode.
    let raw = unsafe { libc::open(c.as_ptr(), flags) };
    if raw < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `raw` was just opened and is owned here only.
    let file = std::fs::File::from(unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(raw) });
    let kind = file.metadata()?.file_type();
    if kind.is_symlink() {
        return Ok(());
    }
    let access = if kind.is_dir() { access } else { access & AccessFs::from_file(TARGET_ABI) };
    if access.is_empty() {
        return Ok(());
    }
    /// `struct landlock_path_beneath_attr` (packed, as the kernel declares it).
    #[repr(C, packed)]
    struct PathBeneathAttr {
        allowed_access: u64,
        parent_fd: i32,
    }
    const LANDLOCK_RULE_PATH_BENEATH: libc::c_int = 1;
    let attr = PathBeneathAttr { allowed_access: access.bits(), parent_fd: file.as_raw_fd() };
    // SAFETY: `attr` is a valid, live landlock_path_beneath_attr; both fds are open.
    let r = unsafe {
        libc::syscall(libc::SYS_landlock_add_rule, ruleset.as_raw_fd(), LANDLOCK_RULE_PATH_BENEATH, &attr as *const PathBeneathAttr, 0u32)
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// The pathname Unix sockets listening now (`/proc/net/unix` of this network namespace), but
/// those inside `own` (the attempt's own dirs). Only a path that is a socket now (not followed:
/// a stale entry whose path became a file or a link is no socket) is kept. Relative and
/// unreadable names are skipped.
fn listening_sockets(own: &[PathBuf]) -> Vec<PathBuf> {
    let Ok(table) = std::fs::read("/proc/net/unix") else { return Vec::new() };
    let own: Vec<PathBuf> = own.iter().map(|p| p.canonicalize().unwrap_or_else(|_| p.clone())).collect();
    let mut out: Vec<PathBuf> = table
        .split(|&b| b == b'\n')
        .skip(1)
        .filter_map(|line| {
            // Num RefCount Protocol Flags Type St Inode Path: the path is what follows the
            // seventh field (it may hold spaces).
            let mut rest = line;
            for _ in 0..7 {
                let start = rest.iter().position(|&b| b != b' ')?;
                let end = rest[start..].iter().position(|&b| b == b' ').map_or(rest.len(), |e| start + e);
                rest = &rest[end..];
            }
            let path = rest.strip_prefix(b" ")?;
            path.starts_with(b"/").then(|| PathBuf::from(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(path)))
        })
        .filter(|p| !own.iter().any(|i| p.starts_with(i)))
        .filter(|p| is_socket(p))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Whether `path` is a socket itself (a symlink is not followed: it is none).
fn is_socket(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_socket())
}

impl SocketMask {
    /// The sockets to mask for an attempt whose own dirs are `own`; MUNGE's stays reachable
    /// only to a package that asked for it (`cluster_client`).
    fn around(own: &[PathBuf], cluster_client: bool) -> SocketMask {
        use std::os::unix::ffi::OsStrExt;
        let (enabled, why_not) = match pathname_socket_support() {
            Ok(()) => (true, None),
            Err(why) => (false, Some(why.to_string())),
        };
        let munge = |p: &PathBuf| p.file_name().is_some_and(|n| n.as_bytes().starts_with(b"munge.socket"));
        let sockets = match enabled {
            true => listening_sockets(own)
                .into_iter()
                .filter(|p| !(cluster_client && munge(p)))
                .filter_map(|p| std::ffi::CString::new(p.as_os_str().as_bytes()).ok())
                .collect(),
            false => Vec::new(),
        };
        let (uid_map, gid_map) = id_maps();
        SocketMask { enabled, why_not, sockets, uid_map, gid_map }
    }

    /// In the child, before the ruleset: a mount namespace of its own (and a user namespace, if
    /// a plain one is not permitted), `/dev/null` bound over each socket that is still one. When
    /// the probe found no mount namespace to be had ([`pathname_socket_support`]) nothing is
    /// tried and the sockets stay as they are (the attempt's log and `guild-hall workers` say
    /// so); when it did, any failure stops the worker.
    ///
    /// # Safety
    /// Only raw system calls on memory made before the fork: async-signal-safe.
    unsafe fn enter(&self) -> std::io::Result<()> {
        if !self.enabled {
            return Ok(());
        }
        unshare_mounts(&self.uid_map, &self.gid_map).map_err(|(_, errno)| std::io::Error::from_raw_os_error(errno))?;
        for socket in &self.sockets {
            // Still a socket, not a link (whose target would be covered) nor a file that took
            // its path since the parent looked.
            // SAFETY: `socket` is NUL-terminated; `st` is written by lstat only.
            let mut st: libc::stat = unsafe { std::mem::zeroed() };
            if unsafe { libc::lstat(socket.as_ptr(), &mut st) } != 0 || st.st_mode & libc::S_IFMT != libc::S_IFSOCK {
                continue;
            }
            // SAFETY: both paths are NUL-terminated; a bind mount takes no data.
            let r = unsafe { libc::mount(c"/dev/null".as_ptr(), socket.as_ptr(), std::ptr::null(), libc::MS_BIND, std::ptr::null()) };
            if r != 0 {
                let e = std::io::Error::last_os_error();
                // Gone since, or out of this user's reach (then it cannot connect either).
                if !matches!(e.raw_os_error(), Some(libc::ENOENT | libc::EACCES | libc::ENOTDIR | libc::ELOOP)) {
                    return Err(e);
                }
            }
        }
        Ok(())
    }
}

/// `"<euid> <euid> 1"` and `"<egid> <egid> 1"`: the maps of a user namespace that maps this
/// user to itself.
fn id_maps() -> (Vec<u8>, Vec<u8>) {
    let (uid, gid) = (nix::unistd::geteuid().as_raw(), nix::unistd::getegid().as_raw());
    (format!("{uid} {uid} 1").into_bytes(), format!("{gid} {gid} 1").into_bytes())
}

/// The steps of [`unshare_mounts`] and of the probe, as said when one fails.
const STEPS: [&str; 6] = [
    "unshare(CLONE_NEWUSER|CLONE_NEWNS)",
    "writing /proc/self/setgroups",
    "writing /proc/self/uid_map",
    "writing /proc/self/gid_map",
    "making / a slave mount (MS_SLAVE)",
    "binding /dev/null over a file",
];

/// A mount namespace of this process's own whose mounts do not propagate back: a plain one
/// (root), else one in a user namespace mapping this user to itself. On failure, the step
/// (an index into [`STEPS`]) and its errno. Async-signal-safe.
fn unshare_mounts(uid_map: &[u8], gid_map: &[u8]) -> Result<(), (usize, i32)> {
    let errno = || std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO);
    // SAFETY: unshare, open, write, close and mount are plain system calls on valid memory.
    unsafe {
        if libc::unshare(libc::CLONE_NEWNS) != 0 {
            if libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS) != 0 {
                return Err((0, errno()));
            }
            for (step, file, content) in
                [(1, c"/proc/self/setgroups", b"deny".as_slice()), (2, c"/proc/self/uid_map", uid_map), (3, c"/proc/self/gid_map", gid_map)]
            {
                let fd = libc::open(file.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                if fd < 0 {
                    return Err((step, errno()));
                }
                let n = libc::write(fd, content.as_ptr().cast(), content.len());
                let e = errno();
                libc::close(fd);
                if n != content.len() as isize {
                    return Err((step, e));
                }
            }
        }
        if libc::mount(std::ptr::null(), c"/".as_ptr(), std::ptr::null(), libc::MS_REC | libc::MS_SLAVE, std::ptr::null()) != 0 {
            return Err((4, errno()));
        }
    }
    Ok(())
}

/// Whether pathname Unix sockets can be kept from workers here, or why not: decided once per
/// process, by a child doing all a worker's start would (a mount namespace of its own, in a
/// user namespace when not root, and a bind mount of `/dev/null` over a file). Where user
/// namespaces are restricted (Ubuntu's AppArmor since 23.10, a process already under
/// Landlock) `unshare` may succeed and a later step fail: then no worker tries, rather than
/// none starting.
pub fn pathname_socket_support() -> Result<(), &'static NoMountNamespace> {
    static PROBED: std::sync::OnceLock<Result<(), NoMountNamespace>> = std::sync::OnceLock::new();
    PROBED.get_or_init(probe_mount_namespace).as_ref().map(|_| ())
}

/// Why no mount namespace can be had for workers here ([`pathname_socket_support`]).
#[derive(Debug, thiserror::Error)]
pub enum NoMountNamespace {
    #[error("no temp file for the probe: {0}")]
    TempFile(std::io::Error),
    #[error("{0}")]
    NulInPath(std::ffi::NulError),
    #[error("no pipe for the probe: {0}")]
    Pipe(nix::errno::Errno),
    #[error("forking the probe: {0}")]
    Fork(std::io::Error),
    /// The probe's step `what` failed.
    #[error("no mount namespace for workers: {what}: {error}")]
    Step { what: &'static str, error: std::io::Error },
    /// The probe ended otherwise than saying a step failed or exiting 0 (a wait status).
    #[error("the probe for a mount namespace ended with status {0}")]
    Status(i32),
}

fn probe_mount_namespace() -> Result<(), NoMountNamespace> {
    use std::os::unix::ffi::OsStrExt;
    let file = tempfile::NamedTempFile::new().map_err(NoMountNamespace::TempFile)?;
    let target = std::ffi::CString::new(file.path().as_os_str().as_bytes()).map_err(NoMountNamespace::NulInPath)?;
    let (uid_map, gid_map) = id_maps();
    let (read, write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(NoMountNamespace::Pipe)?;
    // SAFETY: the child makes only async-signal-safe system calls on memory made before the
    // fork, then `_exit`s.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(NoMountNamespace::Fork(std::io::Error::last_os_error()));
    }
    if pid == 0 {
        // SAFETY: as above; the failed step and errno go to the parent as 8 bytes.
        unsafe {
            let failed = match unshare_mounts(&uid_map, &gid_map) {
                Err(f) => Some(f),
                Ok(()) => (libc::mount(c"/dev/null".as_ptr(), target.as_ptr(), std::ptr::null(), libc::MS_BIND, std::ptr::null()) != 0)
                    .then(|| (5, std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO))),
            };
            if let Some((step, errno)) = failed {
                let mut msg = [0u8; 8];
                msg[..4].copy_from_slice(&(step as u32).to_ne_bytes());
                msg[4..].copy_from_slice(&errno.to_ne_bytes());
                libc::write(write.as_raw_fd(), msg.as_ptr().cast(), msg.len());
                libc::_exit(1);
            }
            libc::_exit(0);
        }
    }
    drop(write);
    let mut msg = Vec::new();
    let _ = std::io::Read::read_to_end(&mut std::fs::File::from(read), &mut msg);
    let mut status = 0;
    // SAFETY: waits for the child just forked.
    while unsafe { libc::waitpid(pid, &mut status, 0) } < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {}
    if let (Some(step), Some(errno)) = (msg.get(..4), msg.get(4..8)) {
        let step = u32::from_ne_bytes(step.try_into().unwrap_or_default()) as usize;
        let errno = i32::from_ne_bytes(errno.try_into().unwrap_or_default());
        let what = STEPS.get(step).copied().unwrap_or("the probe");
        return Err(NoMountNamespace::Step { what, error: std::io::Error::from_raw_os_error(errno) });
    }
    if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
        Ok(())
    } else {
        Err(NoMountNamespace::Status(status))
    }
}

impl Prepared {
    /// Why pathname Unix sockets outside the attempt are not masked from this child, if they
    /// are not (no mount namespace can be had here).
    pub(crate) fn sockets_not_masked(&self) -> Option<&str> {
        self.sockets.why_not.as_deref()
    }

    /// Confine `cmd`'s child just before it execs: the sockets masked ([`SocketMask::enter`]),
    /// no new privileges, then the ruleset. Only raw system calls run in the child, all
    /// async-signal-safe.
    pub(crate) fn apply_to(self, cmd: &mut Command) {
        use std::os::unix::process::CommandExt;
        let raw = self.fd.as_raw_fd();
        let keep = self.fd;
        let sockets = self.sockets;
        // SAFETY: prctl and landlock_restrict_self are plain system calls; no allocation, no
        // locks. `keep` holds the ruleset fd open until the command is dropped.
        unsafe {
            cmd.pre_exec(move || {
                let _ = &keep;
                sockets.enter()?;
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
        let policy = Policy { writable: vec![inside.clone()], ..Default::default() };
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

    /// Run `script` (`$1` is `root`) under `policy`; its output if it failed.
    fn confined(policy: &Policy, root: &Path, script: &str) -> Result<(), String> {
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg(script).arg("sh").arg(root);
        policy.prepare().expect("ruleset").apply_to(&mut cmd);
        let out = cmd.output().expect("runs");
        match out.status.success() {
            true => Ok(()),
            false => Err(format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))),
        }
    }

    /// Of a hidden dir a confined child reads only what it was given, whether the hidden dir
    /// is reached through a symlink, a sibling link or `..`; everything around it stays
    /// readable. The hidden dir may lie in a readable one (a home inside the project) and hold
    /// one (a project inside the home); entries around it that are no file (a dangling
    /// symlink, a fifo) are no obstacle.
    #[test]
    fn reads_nothing_hidden_but_what_it_was_given() {
        if let Support::Unavailable { why } = support() {
            panic!("these tests need Landlock: {why}");
        }
        let dir = tempfile::tempdir().expect("tmp");
        let root = dir.path().canonicalize().expect("canonical");
        let home = root.join("home");
        for d in ["home/own", "home/other", "home/given", "home/project", "beside"] {
            std::fs::create_dir_all(root.join(d)).expect("mkdir");
        }
        for f in ["home/secret", "home/own/mine", "home/other/theirs", "home/given/file", "home/project/code", "beside/open"] {
            std::fs::write(root.join(f), "x\n").expect("write");
        }
        std::os::unix::fs::symlink(&home, root.join("link-to-home")).expect("symlink");
        std::os::unix::fs::symlink(root.join("link-to-home"), root.join("beside/link")).expect("symlink");
        std::os::unix::fs::symlink(root.join("gone"), root.join("dangling")).expect("symlink");
        nix::unistd::mkfifo(&root.join("fifo"), nix::sys::stat::Mode::from_bits_truncate(0o600)).expect("fifo");
        let policy = Policy {
            writable: vec![home.join("own")],
            readable: vec![home.join("given/file"), home.join("missing"), home.join("project"), root.clone()],
            // Named through the symlink: hidden all the same.
            hidden: vec![root.join("link-to-home")],
            ..Default::default()
        };
        let refused = r#"
            for no in "$1/home/secret" "$1/home/other/theirs" "$1/link-to-home/secret" "$1/beside/link/secret" \
                      "$1/home/own/../secret" "$1/home/given/../given/file/../../secret"; do
              if cat "$no" >/dev/null 2>&1; then echo "read: $no"; exit 1; fi
            done
            if ls "$1/home" >/dev/null 2>&1; then echo "listed the home"; exit 1; fi
        "#;
        let script = format!(
            r#"
            set -u
            for ok in "$1/home/own/mine" "$1/home/given/file" "$1/home/project/code" "$1/beside/open" /etc/hostname; do
              cat "$ok" >/dev/null || {{ echo "refused: $ok"; exit 1; }}
            done
            {refused}
            echo new > "$1/home/own/new" || {{ echo "no write in own"; exit 1; }}
            ls "$1/home/own" >/dev/null || {{ echo "cannot list own"; exit 1; }}
        "#
        );
        confined(&policy, &root, &script).expect("the confined shell read what it must not, or not what it may");
        // A writable dir that holds the home (`sandbox.write: [~]`) is written, never read.
        let wide = Policy { writable: vec![root.clone()], hidden: vec![home.clone()], ..Default::default() };
        let script = format!("set -u\necho x > \"$1/beside/new\" && cat \"$1/beside/open\" >/dev/null || exit 1\n{refused}");
        confined(&wide, &root, &script).expect("a writable dir holding the home");
    }

    /// The policy file carries every entry, a path that is no UTF-8 included.
    #[test]
    fn a_policy_file_reads_back_as_written() {
        use std::os::unix::ffi::OsStrExt;
        let odd = PathBuf::from(std::ffi::OsStr::from_bytes(b"/tmp/caf\xe9 dir"));
        let policy = Policy {
            writable: vec![odd.clone(), PathBuf::from("/w")],
            readable: vec![PathBuf::from("/r")],
            hidden: vec![PathBuf::from("/h")],
            own: vec![PathBuf::from("/w")],
            written_as: [(odd, "${SECRET:-/tmp/x}".to_string())].into_iter().collect(),
            cluster_client: true,
        };
        assert_eq!(Policy::from_file_bytes(&policy.to_file_bytes()), Ok(policy));
        assert!(Policy::from_file_bytes(b"guild-hall-policy-1\0write\0").is_err());
        assert!(Policy::from_file_bytes(b"something else\0").is_err());
    }

    /// A mask is enabled exactly when the probe found a mount namespace to be had, and says why
    /// not otherwise; a disabled mask lists no socket (its child never unshares).
    #[test]
    fn the_mask_follows_the_probe() {
        let mask = SocketMask::around(&[], false);
        match pathname_socket_support() {
            Ok(()) => assert!(mask.enabled && mask.why_not.is_none()),
            Err(why) => assert!(!mask.enabled && mask.why_not == Some(why.to_string()) && mask.sockets.is_empty()),
        }
    }

    /// Hidden dirs inside another are dropped; the home's siblings and its ancestors' are
    /// granted, never the home, an ancestor or a path inside them.
    #[test]
    fn around_grants_siblings_along_the_path() {
        let dir = tempfile::tempdir().expect("tmp");
        let root = dir.path().canonicalize().expect("canonical");
        for d in ["a/home/inner", "a/sib", "b"] {
            std::fs::create_dir_all(root.join(d)).expect("mkdir");
        }
        let hidden = hidden_roots(&[root.join("a/home/inner"), root.join("a/home"), root.join("nope")]).expect("roots");
        assert_eq!(hidden, vec![root.join("a/home")]);
        let granted = around(&hidden);
        assert!(granted.contains(&root.join("a/sib")) && granted.contains(&root.join("b")), "{granted:?}");
        for not in [root.join("a"), root.join("a/home"), root.clone(), PathBuf::from("/")] {
            assert!(!granted.contains(&not), "{not:?} in {granted:?}");
        }
        assert!(granted.iter().all(|g| !g.starts_with(root.join("a/home"))));
        assert_eq!(around(&[]), vec![PathBuf::from("/")]);
    }
}
