//! The supervisor of one attempt, `guild-hall shim`: its own session, the attempt's child
//! subreaper; starts the worker confined, caps its log, stops every process of the attempt, and
//! writes `exit.json` only when all are gone (or, from `refuse`, why the worker never ran).
//! Also its command line ([`ShimArgv`], owned here), how it is started, and how its records and
//! the process table say it stands. Knows no runner: one that starts it elsewhere passes its
//! check in ([`run_shim`]'s `admit`). Built on [`crate::worker::process`].

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use chrono::Utc;
use nix::sys::signal::Signal;

use crate::activity::state::{ExitInfo, RunInfo, StateDir};
use crate::files::{read_json, write_json};
use crate::worker::process::{self, Host, Processes, Reaped};

// Process utilities that callers outside `worker/` still name through the shim.
pub(crate) use crate::worker::process::{boot_id, detach, proc_stat, RUN_ID_VAR};

/// Same boot, pid exists, same start time, not a zombie: the process `run` describes still
/// runs. Liveness only; before a signal, [`is_ours`] proves it is the attempt's shim.
fn is_alive(p: &impl Processes, run: &RunInfo) -> bool {
    if run.implausible().is_some() || run.boot_id != p.boot_id() {
        return false;
    }
    p.stat(run.pid).is_some_and(|st| st.start_time == run.start_time && !st.ended())
}

/// The process `run` describes is alive and is the attempt's shim: same boot, pid, start time,
/// and the attempt's run-id mark in its environment. A `run.json` naming anyone else's process
/// — a forged or corrupt one — never passes, whatever else it copies right.
pub(crate) fn is_ours(run: &RunInfo) -> bool {
    let host = Host::default();
    is_alive(&host, run) && carries_mark(&host, run.pid, run)
}

/// How a recorded shim stands: running and proven the attempt's, gone, or a live process that
/// is not ours (the record cannot be trusted with it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ShimState {
    Ours,
    Gone,
    Foreign,
}

/// A process in the middle of exiting has no environment left to read: that is the shim
/// ending (it wrote `exit.json` first), not a foreign process, and neither is signalled.
pub(crate) fn shim_state(run: &RunInfo) -> ShimState {
    shim_state_in(&Host::default(), run)
}

fn shim_state_in(p: &impl Processes, run: &RunInfo) -> ShimState {
    if !is_alive(p, run) {
        return ShimState::Gone;
    }
    match p.environ(run.pid) {
        Some(env) if env.is_empty() => ShimState::Gone,
        Some(_) if carries_mark(p, run.pid, run) => ShimState::Ours,
        Some(_) => {
            // A shim tearing its memory down as it exits can give a cut-off environment, the
            // mark missing; it is a zombie a moment later. Only a process still alive, still
            // without the mark, is foreign (a forged record: rare, so the wait costs nothing).
            p.pause(Duration::from_millis(50));
            match p.environ(run.pid) {
                _ if !is_alive(p, run) => ShimState::Gone,
                Some(env) if env.is_empty() => ShimState::Gone,
                Some(_) if carries_mark(p, run.pid, run) => ShimState::Ours,
                Some(_) => ShimState::Foreign,
                None => ShimState::Gone,
            }
        }
        None => ShimState::Gone,
    }
}

/// Whether the shim `run` records is at work now: of this boot (`boot`, [`boot_id`] read once
/// per pass), alive, and proven the attempt's ([`is_ours`]). The one test of a recorded shim's
/// life, for every kind.
pub(crate) fn running(run: &RunInfo, boot: &str) -> bool {
    run.boot_id == boot && is_ours(run)
}

/// Whether some shim holds this commission's lock (it is starting or running).
pub(crate) fn shim_lock_held(state: &StateDir) -> bool {
    crate::files::is_locked(&state.shim_lock())
}

/// How the reconciler asks a shim to end its attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    /// SIGTERM to every process of the attempt, SIGKILL after the grace period.
    Term,
    /// SIGKILL to every process of the attempt, now.
    Kill,
}

/// Ask the attempt's shim to stop it. The shim signals every descendant, reaps them, and
/// only then records the exit, so "gone" means gone. A shim that is no longer the process
/// `run` describes is not signalled.
pub(crate) fn stop_attempt(run: &RunInfo, how: Stop) -> Result<()> {
    let sig = match how {
        Stop::Term => Signal::SIGTERM,
        Stop::Kill => Signal::SIGUSR1,
    };
    process::signal_if(run.pid, sig, |_| is_ours(run)).with_context(|| format!("signalling the shim (pid {})", run.pid))?;
    Ok(())
}

/// Whether `pid` carries the attempt's run-id mark (only a well-formed run id counts).
fn carries_mark(p: &impl Processes, pid: i32, run: &RunInfo) -> bool {
    pid > 1
        && crate::activity::state::valid_run_id(&run.run_id)
        && process::carries(p, pid, format!("{RUN_ID_VAR}={}", run.run_id).as_bytes())
}

/// Processes of an attempt whose shim is gone (killed before it could reap them): those
/// carrying the attempt's run id in their environment — the mark alone, never a session or
/// group id, which the kernel hands to an unrelated session once the shim's pid is reused.
/// Empty for an implausible record or one of an earlier boot. A process that cleared its
/// environment and left the shim's session is not found (the shim, its subreaper, stops such
/// processes while it lives).
pub(crate) fn leftovers(run: &RunInfo) -> Vec<i32> {
    leftovers_in(&Host::default(), run)
}

fn leftovers_in(p: &impl Processes, run: &RunInfo) -> Vec<i32> {
    if run.implausible().is_some() || run.boot_id != p.boot_id() {
        return Vec::new();
    }
    let me = p.me();
    p.table().into_iter().filter(|e| e.pid > 1 && e.pid != me && !e.zombie && carries_mark(p, e.pid, run)).map(|e| e.pid).collect()
}

/// Whether a live process (not this one) works in `dir` or below it (its current directory):
/// how a worker is known to be at work when the record that would name it is gone (a state
/// dir deleted under a running attempt). Only asked in that rare case: it reads every
/// process's `cwd` link.
pub(crate) fn working_in(dir: &std::path::Path) -> bool {
    let Ok(dir) = dir.canonicalize() else { return false };
    let host = Host::default();
    let me = host.me();
    host.table()
        .into_iter()
        .filter(|e| e.pid > 1 && e.pid != me && !e.zombie)
        .any(|e| host.cwd(e.pid).is_some_and(|cwd| cwd.starts_with(&dir)))
}

/// SIGKILL what [`leftovers`] found, re-checking each one's mark once it is pinned.
pub(crate) fn kill_leftovers(run: &RunInfo, pids: &[i32]) -> Result<()> {
    if let Some(why) = run.implausible() {
        anyhow::bail!("not killing leftovers of an implausible run record: {why}");
    }
    let host = Host::default();
    let me = host.me();
    for &pid in pids.iter().filter(|&&p| p > 1 && p != me) {
        host.signal_if(pid, Signal::SIGKILL, &|p| carries_mark(&host, p, run))
            .with_context(|| format!("killing leftover process {pid}"))?;
    }
    Ok(())
}

/// Record `attempt` in `state` as one whose worker never ran, and why: the one way an attempt
/// is refused, by the shim or before it (a launch, a runner), its `exit.json` judged by the
/// next pass like any other.
pub(crate) fn refuse(state: &StateDir, attempt: u32, why: &str) -> Result<()> {
    std::fs::create_dir_all(&state.0).with_context(|| format!("creating {}", state.0.display()))?;
    write_json(&state.exit(), &ExitInfo::error(attempt, why.to_string()))
}

/// How the shim is told to confine the worker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Confine {
    /// The file holding its sandbox policy (what it may write and read); the private temp dir
    /// is always added.
    Policy(PathBuf),
    /// Run it without Landlock confinement.
    Unconfined,
}

/// The `guild-hall shim` command line (after the subcommand): made by the library
/// ([`ShimArgv::to_args`]) and read back by the binary ([`ShimArgv::parse`]), one owner for
/// both ends. The worker's argv is always last, after `--`, and `--state-dir` comes before it
/// ([`crate::worker::peer`] reads it from a shim's command line).
#[derive(Debug, Clone, PartialEq)]
pub struct ShimArgv {
    /// The attempt's runtime dir: run.json, exit.json and the log are written there.
    pub(crate) state_dir: PathBuf,
    /// The attempt number (names the log and the mailbox).
    pub(crate) attempt: u32,
    /// The worker's working directory (its worktree).
    pub(crate) cwd: PathBuf,
    /// Time between SIGTERM and SIGKILL when the attempt is stopped.
    pub(crate) grace: Duration,
    /// Rotate the attempt's log at this size.
    pub(crate) log_max_bytes: u64,
    pub(crate) confine: Confine,
    /// The worker's stdout is the shim's (a meeting turn streamed to its caller), and the
    /// attempt is stopped when the caller dies.
    pub(crate) stream: bool,
    /// A pipe end the shim closes once `run.json` is written (its starter waits on it).
    pub(crate) ready_fd: Option<i32>,
    /// The workspace's setup commands, run in `cwd` confined like the worker before it starts.
    pub(crate) setup: Vec<Vec<String>>,
    /// A commission's `checks:`, run in `cwd` confined like the worker once it has ended with
    /// a submitted result ([`crate::worker::checks`]).
    pub(crate) checks: Vec<Vec<String>>,
    /// What the attempt may spend: stopped once its figures pass it ([`crate::worker::budget`]).
    pub(crate) budget: Option<crate::worker::budget::Budget>,
    /// The worker's command and its arguments.
    pub(crate) argv: Vec<String>,
}

/// Why a `guild-hall shim` command line was not understood.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ShimArgvError {
    #[error("guild-hall shim: {0} needs a value")]
    MissingValue(&'static str),
    #[error("guild-hall shim: {0} {1:?} is not valid: {2}")]
    Invalid(&'static str, String, String),
    #[error("guild-hall shim: {0} is required")]
    Required(&'static str),
    #[error("guild-hall shim: --policy and --unconfined exclude each other")]
    PolicyAndUnconfined,
    #[error("guild-hall shim: unknown option {0:?}")]
    Unknown(String),
    #[error("guild-hall shim: the worker's command is required, after --")]
    NoCommand,
}

impl ShimArgv {
    /// The default `--grace` and `--log-max-bytes` when the command line leaves them out.
    const GRACE: Duration = Duration::from_secs(30);
    const LOG_MAX_BYTES: u64 = 16 * 1024 * 1024;

    /// The arguments after `guild-hall shim`.
    pub(crate) fn to_args(&self) -> Vec<OsString> {
        let mut a: Vec<OsString> = vec![
            "--state-dir".into(),
            self.state_dir.clone().into(),
            "--attempt".into(),
            self.attempt.to_string().into(),
            "--cwd".into(),
            self.cwd.clone().into(),
            "--grace".into(),
            humantime::format_duration(self.grace).to_string().into(),
            "--log-max-bytes".into(),
            self.log_max_bytes.to_string().into(),
        ];
        match &self.confine {
            Confine::Policy(file) => a.extend(["--policy".into(), file.clone().into_os_string()]),
            Confine::Unconfined => a.push("--unconfined".into()),
        }
        if self.stream {
            a.push("--stream".into());
        }
        if let Some(fd) = self.ready_fd {
            a.extend(["--ready-fd".into(), fd.to_string().into()]);
        }
        if !self.setup.is_empty() {
            a.extend(["--setup".into(), serde_json::to_string(&self.setup).unwrap_or_default().into()]);
        }
        if !self.checks.is_empty() {
            a.extend(["--checks".into(), serde_json::to_string(&self.checks).unwrap_or_default().into()]);
        }
        if let Some(budget) = &self.budget {
            a.extend(["--budget".into(), serde_json::to_string(budget).unwrap_or_default().into()]);
        }
        a.push("--".into());
        a.extend(self.argv.iter().map(OsString::from));
        a
    }

    /// Read the arguments after `guild-hall shim` (`--name value` or `--name=value`).
    pub fn parse(args: impl IntoIterator<Item = OsString>) -> Result<ShimArgv, ShimArgvError> {
        let mut args = args.into_iter();
        let (mut state_dir, mut attempt, mut cwd, mut policy) = (None, None, None, None);
        let (mut grace, mut log_max_bytes, mut unconfined, mut stream, mut ready_fd) =
            (Self::GRACE, Self::LOG_MAX_BYTES, false, false, None);
        let mut argv = None;
        let mut setup = Vec::new();
        let mut checks = Vec::new();
        let mut budget = None;
        while let Some(arg) = args.next() {
            if arg == "--" {
                let rest: Result<Vec<String>, _> = args.by_ref().map(|a| a.into_string()).collect();
                argv =
                    Some(rest.map_err(|a| {
                        ShimArgvError::Invalid("the worker's command", a.to_string_lossy().into_owned(), "not UTF-8".into())
                    })?);
                break;
            }
            let (name, inline) = split_option(&arg);
            let mut value = |flag: &'static str| inline.clone().or_else(|| args.next()).ok_or(ShimArgvError::MissingValue(flag));
            match name.as_str() {
                "--state-dir" => state_dir = Some(PathBuf::from(value("--state-dir")?)),
                "--attempt" => attempt = Some(number("--attempt", value("--attempt")?)?),
                "--cwd" => cwd = Some(PathBuf::from(value("--cwd")?)),
                "--grace" => {
                    let v = text("--grace", value("--grace")?)?;
                    grace = humantime::parse_duration(&v).map_err(|e| ShimArgvError::Invalid("--grace", v, e.to_string()))?;
                }
                "--log-max-bytes" => log_max_bytes = number("--log-max-bytes", value("--log-max-bytes")?)?,
                "--policy" => policy = Some(PathBuf::from(value("--policy")?)),
                "--unconfined" if inline.is_none() => unconfined = true,
                "--stream" if inline.is_none() => stream = true,
                "--ready-fd" => ready_fd = Some(number("--ready-fd", value("--ready-fd")?)?),
                "--setup" => {
                    let v = text("--setup", value("--setup")?)?;
                    setup = serde_json::from_str(&v).map_err(|e| ShimArgvError::Invalid("--setup", v.clone(), e.to_string()))?;
                }
                "--checks" => {
                    let v = text("--checks", value("--checks")?)?;
                    checks = serde_json::from_str(&v).map_err(|e| ShimArgvError::Invalid("--checks", v.clone(), e.to_string()))?;
                }
                "--budget" => {
                    let v = text("--budget", value("--budget")?)?;
                    budget = Some(serde_json::from_str(&v).map_err(|e| ShimArgvError::Invalid("--budget", v.clone(), e.to_string()))?);
                }
                _ => return Err(ShimArgvError::Unknown(arg.to_string_lossy().into_owned())),
            }
        }
        let confine = match (policy, unconfined) {
            (Some(_), true) => return Err(ShimArgvError::PolicyAndUnconfined),
            (Some(file), false) => Confine::Policy(file),
            (None, true) => Confine::Unconfined,
            (None, false) => return Err(ShimArgvError::Required("--policy or --unconfined")),
        };
        let argv = argv.filter(|a| !a.is_empty()).ok_or(ShimArgvError::NoCommand)?;
        Ok(ShimArgv {
            state_dir: state_dir.ok_or(ShimArgvError::Required("--state-dir"))?,
            attempt: attempt.ok_or(ShimArgvError::Required("--attempt"))?,
            cwd: cwd.ok_or(ShimArgvError::Required("--cwd"))?,
            grace,
            log_max_bytes,
            confine,
            stream,
            ready_fd,
            setup,
            checks,
            budget,
            argv,
        })
    }
}

/// `--name=value` as (`--name`, `value`); `--name` as (`--name`, none).
fn split_option(arg: &OsStr) -> (String, Option<OsString>) {
    use std::os::unix::ffi::OsStrExt;
    let bytes = arg.as_bytes();
    match bytes.iter().position(|b| *b == b'=').filter(|_| bytes.starts_with(b"--")) {
        Some(i) => (String::from_utf8_lossy(&bytes[..i]).into_owned(), Some(OsStr::from_bytes(&bytes[i + 1..]).to_owned())),
        None => (arg.to_string_lossy().into_owned(), None),
    }
}

fn text(flag: &'static str, v: OsString) -> Result<String, ShimArgvError> {
    v.into_string().map_err(|v| ShimArgvError::Invalid(flag, v.to_string_lossy().into_owned(), "not UTF-8".into()))
}

fn number<T: std::str::FromStr>(flag: &'static str, v: OsString) -> Result<T, ShimArgvError>
where
    T::Err: std::fmt::Display,
{
    let v = text(flag, v)?;
    v.parse().map_err(|e: T::Err| ShimArgvError::Invalid(flag, v.clone(), e.to_string()))
}

/// Everything needed to start one attempt under the shim (made by `worker::launch`).
#[derive(Debug, Clone)]
pub(crate) struct Spec {
    pub(crate) state: StateDir,
    pub(crate) attempt: u32,
    pub(crate) cwd: PathBuf,
    pub(crate) argv: Vec<String>,
    pub(crate) env: BTreeMap<String, String>,
    /// How long processes get between SIGTERM and SIGKILL.
    pub(crate) grace: Duration,
    /// Size at which the attempt's log is rotated (the previous part is kept, older dropped).
    pub(crate) log_max_bytes: u64,
    /// Where the worker may write; `None` runs it unconfined.
    pub(crate) sandbox: Option<crate::worker::sandbox::Policy>,
    /// The workspace's setup commands, run before the worker ([`ShimArgv::setup`]).
    pub(crate) setup: Vec<Vec<String>>,
    /// A commission's checks, run after its worker submitted ([`ShimArgv::checks`]).
    pub(crate) checks: Vec<Vec<String>>,
    /// What the attempt may spend ([`ShimArgv::budget`]).
    pub(crate) budget: Option<crate::worker::budget::Budget>,
}

/// Variables a worker may inherit from the reconciler; everything else is dropped.
pub(crate) const INHERITED_ENV: [&str; 8] = ["PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "TZ", "SHELL"];

/// Start `guild-hall shim` for the attempt, detached in its own session, and wait until it has
/// recorded `run.json` (or `exit.json` when the worker could not start). The shim closes its
/// end of a pipe (`--ready-fd`) once it has: the wait wakes then, not at a poll's next tick.
pub(crate) fn spawn_shim(launch: &Spec) -> Result<()> {
    use std::os::fd::AsRawFd;
    let log =
        std::fs::OpenOptions::new().create(true).append(true).open(launch.state.log(launch.attempt)).context("opening the attempt log")?;
    // Close-on-exec here, so no other child started meanwhile (dispatches run at once) holds
    // it; kept open across this one exec only.
    let (ready, ready_w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).context("creating the shim's ready pipe")?;
    // Above the standard three, which the child's stdio takes over (a reconciler started with
    // one of them closed would have been given it here).
    let ready_w = match ready_w.as_raw_fd() {
        0..=2 => {
            // SAFETY: F_DUPFD_CLOEXEC duplicates an fd we own onto a fresh one ≥ 3.
            let fd = unsafe { libc::fcntl(ready_w.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 3) };
            if fd < 0 {
                return Err(std::io::Error::last_os_error()).context("moving the shim's ready pipe above stdio");
            }
            // SAFETY: a fresh fd that we now own.
            unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) }
        }
        _ => ready_w,
    };
    let fd = ready_w.as_raw_fd();
    let mut cmd = shim_command(launch, false, Some(fd))?;
    cmd.stdin(Stdio::null()).stdout(log.try_clone()?).stderr(log);
    detach(&mut cmd);
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: fcntl is async-signal-safe; it changes only the child's copy of the fd.
        unsafe {
            cmd.pre_exec(move || {
                if libc::fcntl(fd, libc::F_SETFD, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    let spawned = cmd.spawn();
    drop(cmd);
    drop(ready_w);
    let mut child = spawned.context("starting guild-hall shim")?;
    // Reap the shim when it ends so a long-lived reconciler leaves no zombie.
    std::thread::spawn(move || child.wait());
    let recorded = || {
        matches!(read_json::<RunInfo>(&launch.state.run()), Ok(Some(r)) if r.attempt == launch.attempt)
            || matches!(read_json::<ExitInfo>(&launch.state.exit()), Ok(Some(x)) if x.attempt == launch.attempt)
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut closed = false;
    while Instant::now() < deadline {
        if recorded() {
            return Ok(());
        }
        if closed {
            anyhow::bail!("the shim ended without recording the worker's start (its log: {})", launch.state.log(launch.attempt).display());
        }
        // Woken when the shim closes its end (after its record, or when it dies); the files are
        // looked at every 50 ms besides (a shim for an attempt already started closes it late).
        let mut fds = [nix::poll::PollFd::new(std::os::fd::AsFd::as_fd(&ready), nix::poll::PollFlags::POLLIN)];
        closed = match nix::poll::poll(&mut fds, nix::poll::PollTimeout::from(50u16)) {
            Ok(n) => n > 0,
            Err(nix::errno::Errno::EINTR) => false,
            Err(e) => return Err(e).context("waiting for the shim"),
        };
    }
    anyhow::bail!("the shim did not record the worker's start within 30s")
}

/// Start the shim for a streamed attempt (a meeting turn): in its own session (a terminal's
/// Ctrl-C is the caller's to handle), its stdout — the worker's — piped to the caller, its
/// own messages and the worker's stderr in the attempt's log. It stops the attempt if the
/// caller dies.
pub(crate) fn spawn_streaming_shim(launch: &Spec) -> Result<std::process::Child> {
    let log =
        std::fs::OpenOptions::new().create(true).append(true).open(launch.state.log(launch.attempt)).context("opening the attempt log")?;
    let mut cmd = shim_command(launch, true, None)?;
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(log);
    detach(&mut cmd);
    cmd.spawn().context("starting guild-hall shim")
}

/// Variables and their values.
pub(crate) type Environment = Vec<(std::ffi::OsString, std::ffi::OsString)>;

/// The `guild-hall shim` command line (the worker's argv last) and its whole environment,
/// for a runner that starts it elsewhere.
pub(crate) fn shim_invocation(launch: &Spec) -> Result<(Vec<std::ffi::OsString>, Environment)> {
    let cmd = shim_command(launch, false, None)?;
    let argv = std::iter::once(cmd.get_program().to_owned()).chain(cmd.get_args().map(|a| a.to_owned())).collect();
    let env = cmd.get_envs().filter_map(|(k, v)| Some((k.to_owned(), v?.to_owned()))).collect();
    Ok((argv, env))
}

/// The `guild-hall shim` command and environment for `launch` (stdio left to the caller).
fn shim_command(launch: &Spec, stream: bool, ready_fd: Option<i32>) -> Result<Command> {
    let exe = std::env::current_exe().context("locating the guild-hall binary")?;
    let confine = match &launch.sandbox {
        Some(policy) => {
            // In a file of the attempt's (0600, in the home no worker reads), never on the
            // command line: every process of the machine reads that, and an expanded
            // `${NAME:-DEFAULT}` may be a secret.
            let file = policy_file(&launch.state, launch.attempt);
            crate::files::write_atomic(&file, &policy.to_file_bytes())?;
            std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o600))
                .with_context(|| format!("making {} private", file.display()))?;
            Confine::Policy(file)
        }
        None => Confine::Unconfined,
    };
    let argv = ShimArgv {
        state_dir: launch.state.0.clone(),
        attempt: launch.attempt,
        cwd: launch.cwd.clone(),
        grace: launch.grace,
        log_max_bytes: launch.log_max_bytes,
        confine,
        stream,
        ready_fd,
        setup: launch.setup.clone(),
        checks: launch.checks.clone(),
        budget: launch.budget.clone(),
        argv: launch.argv.clone(),
    };
    let mut cmd = Command::new(exe);
    cmd.arg("shim").args(argv.to_args());
    cmd.env_clear()
        .envs(INHERITED_ENV.iter().filter_map(|k| std::env::var(k).ok().map(|v| (*k, v))))
        .envs(&launch.env)
        .env("TMPDIR", launch.state.tmp())
        .env(RUN_ID_VAR, uuid::Uuid::new_v4().simple().to_string());
    Ok(cmd)
}

/// The attempt's sandbox policy, as `guild-hall shim --policy` reads it: one per attempt, so a
/// job still queued for an earlier attempt never starts under a later one's policy.
pub(crate) fn policy_file(state: &StateDir, attempt: u32) -> PathBuf {
    state.0.join(format!("sandbox-policy.{attempt}"))
}

/// Set in the shim's environment by a runner whose node the reconciler cannot see into: the
/// shim writes the worker's CPU time to [`cpu_file`].
pub(crate) const CPU_BEAT_VAR: &str = "GUILD_HALL_CPU_BEAT";

/// `cpu.json` in the attempt's state dir: `{"attempt": A, "cpu_ticks": N}`, the worker's CPU time
/// (its own and its reaped children's) as attempt A's shim last saw it move.
pub(crate) fn cpu_file(state: &StateDir) -> PathBuf {
    state.0.join("cpu.json")
}

/// Write the worker's CPU ticks to `path` whenever they moved, every second, until `done`.
fn cpu_beats(attempt: u32, worker: i32, path: &Path, done: &AtomicBool) {
    let mut last = None;
    while !done.load(Ordering::SeqCst) {
        if let Some(ticks) = proc_stat(worker).map(|s| s.cpu_ticks).filter(|t| Some(*t) != last) {
            if write_json(path, &serde_json::json!({ "attempt": attempt, "cpu_ticks": ticks })).is_ok() {
                last = Some(ticks);
            }
        }
        for _ in 0..10 {
            if done.load(Ordering::SeqCst) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// What a runner that started the shim elsewhere says of running `attempt` of `state` here:
/// `Some(why)` if this process is not the one to run it (the shim then ends without a record:
/// the attempt is another process's to run or refuse).
pub(crate) type Admit<'a> = &'a dyn Fn(&StateDir, u32) -> Option<String>;

/// The shim's body. Returns its exit code. Runs as a separate process, never in the reconciler.
///
/// It is the attempt's child subreaper: whatever the worker starts — even with `setsid` or a
/// double fork — stays its descendant, and nothing of the attempt outlives it. The worker
/// itself dies with the shim (parent-death signal); anything else a killed shim leaves behind
/// is found by the reconciler through the run id ([`leftovers`]). Once it holds the attempt's
/// lock and the attempt has no record, every way it fails is recorded through `refuse`.
pub fn run_shim(args: &ShimArgv, admit: Admit<'_>) -> Result<i32> {
    let state = StateDir(args.state_dir.clone());
    let attempt = args.attempt;
    // The reconciler's end of the wait for `run.json`: never the worker's, closed once it is
    // written (or when the shim returns without it).
    // SAFETY: F_GETFD only asks whether the fd is open.
    let mut ready = args.ready_fd.filter(|&fd| fd > 2 && unsafe { libc::fcntl(fd, libc::F_GETFD) } >= 0).map(|fd| {
        // SAFETY: `--ready-fd` names the pipe end `spawn_shim` left open across the exec, owned
        // by nothing else in this process.
        let owned = unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) };
        // SAFETY: fcntl on an fd this process owns.
        unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
        owned
    });
    if args.stream {
        // The caller reads the turn as it happens: when it dies, the turn ends (SIGTERM, the
        // same path as a cancel). Checked after arming, so a caller already gone counts too.
        let parent = nix::unistd::getppid().as_raw();
        // SAFETY: prctl(PR_SET_PDEATHSIG) only sets a flag on this process.
        unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM, 0, 0, 0) };
        if nix::unistd::getppid().as_raw() != parent {
            return Ok(0);
        }
    }
    // Held for the shim's whole life: a second shim for the same commission waits here and
    // then finds this attempt already started, so no duplicate worker is ever run. Without it
    // nothing is recorded: another shim may hold the attempt, and its record is not ours to write.
    let _lock = crate::files::lock(&state.shim_lock(), crate::files::Lock::Exclusive)?;
    if let Some(why) = admit(&state, attempt) {
        eprintln!("guild-hall shim: not running attempt {attempt} here: {why}");
        return Ok(1);
    }
    if matches!(read_json::<RunInfo>(&state.run()), Ok(Some(r)) if r.attempt == attempt)
        || matches!(read_json::<ExitInfo>(&state.exit()), Ok(Some(x)) if x.attempt == attempt)
    {
        return Ok(0);
    }
    match run_attempt(&state, args, &mut ready) {
        Ok(()) => Ok(0),
        // The worker ran; only its end could not be written. That is no refusal (an
        // `exit.json` saying so would fail a clean run as "activation failed"): the shim fails
        // with nothing recorded, and the pass judges the attempt as a process lost.
        Err(e @ ShimError::RecordExit { .. }) => Err(anyhow::Error::new(e)),
        Err(why) => {
            refuse(&state, attempt, &why.to_string())?;
            Ok(127)
        }
    }
}

/// What the reconciler asks by signal, set by the shim's handlers: SIGTERM stop the attempt,
/// SIGUSR1 kill it now. SIGHUP and SIGINT (a terminal going away) only set a flag nobody reads.
#[derive(Default)]
struct Asked {
    term: Arc<AtomicBool>,
    kill: Arc<AtomicBool>,
}

impl Asked {
    /// How a running step is to end, as the shim has been asked: [`crate::worker::step::run`]'s `halt`.
    fn halt(&self) -> Option<crate::worker::step::Halt> {
        use crate::worker::step::Halt;
        if self.kill.load(Ordering::SeqCst) {
            Some(Halt::Kill)
        } else {
            self.term.load(Ordering::SeqCst).then_some(Halt::Term)
        }
    }

    /// Handlers for every signal the shim is asked by, registered before the worker is spawned:
    /// a request that arrives meanwhile is kept, never the default action's end of the shim.
    fn register() -> std::io::Result<Asked> {
        let asked = Asked::default();
        signal_hook::flag::register(signal_hook::consts::SIGTERM, asked.term.clone())?;
        signal_hook::flag::register(signal_hook::consts::SIGUSR1, asked.kill.clone())?;
        let ignored = Arc::new(AtomicBool::new(false));
        signal_hook::flag::register(signal_hook::consts::SIGHUP, ignored.clone())?;
        signal_hook::flag::register(signal_hook::consts::SIGINT, ignored)?;
        Ok(asked)
    }
}

/// Why the shim did not run an attempt's worker, or could not record its end ([`run_attempt`]):
/// written as the attempt's exit error.
#[derive(Debug, thiserror::Error)]
enum ShimError {
    #[error("cannot create the private temp dir {}: {error}", .dir.display())]
    TempDir { dir: std::path::PathBuf, error: std::io::Error },
    #[error("cannot read the worker's sandbox policy: {0}")]
    Policy(crate::worker::sandbox::PolicyReadError),
    #[error("cannot confine the worker: {0}")]
    Confine(crate::worker::sandbox::SandboxError),
    #[error("cannot read the shim's own /proc stat")]
    OwnStat,
    #[error("no valid {RUN_ID_VAR} in the shim's environment")]
    NoRunId,
    #[error("cannot become the attempt's subreaper: {0}")]
    Subreaper(std::io::Error),
    #[error("cannot set the shim's signal handlers: {0}")]
    Signals(std::io::Error),
    #[error("no worker command given")]
    NoCommand,
    #[error("cannot create the output pipe: {0}")]
    Pipe(nix::errno::Errno),
    #[error("cannot create the output pipe: {0}")]
    PipeCopy(std::io::Error),
    /// `prog`: the worker's command.
    #[error("cannot start {prog}: {error}")]
    Spawn { prog: String, error: std::io::Error },
    #[error("cannot record the worker's start: {0:#}")]
    RecordStart(anyhow::Error),
    /// `exit`: the exit as described.
    #[error("cannot record the worker's exit ({exit}): {error:#}")]
    RecordExit { exit: String, error: anyhow::Error },
}

/// Run the worker of one attempt to its end, recording its start (`run.json`, then `ready`
/// closed) and its exit. `Err`: why the worker never ran, for [`refuse`], or that its end could
/// not be recorded (`RecordExit`, which is not refused).
// Long: an attempt's life in the order it must happen — confined, marked, started, watched,
// checked, measured, recorded — each step a few commented lines; split, that order would be
// spread over functions that only make sense called in it.
fn run_attempt(state: &StateDir, args: &ShimArgv, ready: &mut Option<std::os::fd::OwnedFd>) -> Result<(), ShimError> {
    let attempt = args.attempt;
    // A private temp dir, fresh for each attempt (TMPDIR points here).
    let tmp = state.tmp();
    let _ = std::fs::remove_dir_all(&tmp);
    if let Err(e) = std::fs::create_dir_all(&tmp) {
        return Err(ShimError::TempDir { dir: tmp, error: e });
    }
    let mut policy = None;
    let prepared = match &args.confine {
        Confine::Policy(file) => {
            let policy = policy.insert(crate::worker::sandbox::Policy::read_file(file).map_err(ShimError::Policy)?);
            policy.writable.push(tmp.clone());
            policy.own.push(tmp.clone());
            let p = policy.prepare().map_err(ShimError::Confine)?;
            if let Some(why) = p.sockets_not_masked() {
                note(
                    state,
                    attempt,
                    &format!(
                    "pathname Unix sockets outside the attempt are NOT masked from this worker ({why}): it can connect to any it may open"
                ),
                );
            }
            Some(p)
        }
        Confine::Unconfined => None,
    };
    let host = Host::default();
    let me = host.me();
    let my_stat = host.stat(me).ok_or(ShimError::OwnStat)?;
    // The mark that proves a process is this attempt's: without it nothing could ever be
    // signalled on the attempt's behalf, so the worker is not started.
    let run_id = std::env::var(RUN_ID_VAR).unwrap_or_default();
    if !crate::activity::state::valid_run_id(&run_id) {
        return Err(ShimError::NoRunId);
    }
    // SAFETY: prctl(PR_SET_CHILD_SUBREAPER) only sets a flag on this process.
    if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) } != 0 {
        return Err(ShimError::Subreaper(std::io::Error::last_os_error()));
    }
    let asked = Asked::register().map_err(ShimError::Signals)?;
    let started = RunInfo {
        attempt,
        pid: me,
        pgid: nix::unistd::getpgrp().as_raw(),
        start_time: my_stat.start_time,
        boot_id: host.boot_id(),
        worker_pid: None,
        started_at: Utc::now(),
        run_id,
    };
    if !args.setup.is_empty() {
        // The attempt has started (its time counts toward its limit): the workspace's setup
        // first, confined like the worker, then the worker — or, when setup fails, the end.
        write_json(&state.run(), &started).map_err(ShimError::RecordStart)?;
        drop(ready.take());
        let failed = run_setup(state, args, policy.as_ref(), &asked, &started).or_else(|| {
            // Asked to stop as setup ended: the worker is not started.
            (asked.term.load(Ordering::SeqCst) || asked.kill.load(Ordering::SeqCst)).then(|| ExitInfo {
                signal: Some(libc::SIGTERM),
                error: None,
                ..ExitInfo::error(attempt, String::new())
            })
        });
        if let Some(exit) = failed {
            let _ = std::fs::remove_dir_all(&tmp);
            return write_json(&state.exit(), &exit).map_err(|error| ShimError::RecordExit { exit: exit.describe(), error });
        }
        let _ = std::fs::write(state.setup_done(), format!("{attempt}\n"));
    }
    let (worker, out_read) = spawn_worker(args, prepared, me)?;
    // The agent's figures so far, shared with the budget's watch (when there is a budget).
    let live = args.budget.as_ref().map(|_| crate::worker::budget::Live::default());
    let pump = {
        let log = state.log(attempt);
        let max = args.log_max_bytes;
        let live = live.clone();
        std::thread::spawn(move || {
            let mut meter = crate::worker::usage::Meter::default();
            pump_log(std::fs::File::from(out_read), &log, max, &mut meter, live.as_ref());
            meter.finish()
        })
    };
    let run = RunInfo { worker_pid: Some(worker), ..started.clone() };
    if let Err(e) = write_json(&state.run(), &run) {
        // No record names the worker: nothing of it may outlive the shim.
        asked.kill.store(true, Ordering::SeqCst);
        supervise(&host, worker, args.grace, &asked);
        return Err(ShimError::RecordStart(e));
    }
    drop(ready.take());
    // On a node whose process table the reconciler cannot read, the worker's CPU time is
    // written down for it (`cpu.json`) whenever it moves.
    let done = Arc::new(AtomicBool::new(false));
    let beat = std::env::var_os(CPU_BEAT_VAR).is_some().then(|| {
        let (done, path) = (done.clone(), cpu_file(state));
        std::thread::spawn(move || cpu_beats(attempt, worker, &path, &done))
    });
    // Past its budget, the attempt is stopped as the reconciler stops one: the shim's own
    // SIGTERM flag, then the grace, then SIGKILL.
    let watch = args.budget.clone().zip(live.clone()).map(|(budget, live)| {
        let (done, stop, state) = (done.clone(), asked.term.clone(), state.clone());
        std::thread::spawn(move || {
            let note = |line: &str| note(&state, attempt, line);
            crate::worker::budget::watch(&budget, &state, attempt, &live, &stop, &done, &note)
        })
    });
    let status = supervise(&host, worker, args.grace, &asked);
    done.store(true, Ordering::SeqCst);
    if let Some(b) = beat {
        let _ = b.join();
    }
    // Every writer of the pipe is gone; the log drains quickly unless someone outside the
    // attempt holds the pipe, and then it is not waited for.
    let deadline = Instant::now() + Duration::from_secs(2);
    while !pump.is_finished() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    // Every process of the worker is gone: a submitted result's checks run now, before the
    // end is recorded (their time is the attempt's; the reconciler sees them with its end).
    // However the worker ended: a result always wins, so it is always proved.
    let checks = crate::worker::checks::Checks { argvs: &args.checks, attempt, cwd: &args.cwd, policy: policy.as_ref(), grace: args.grace };
    let checks = crate::worker::checks::run(state, &checks, &|| asked.halt(), &started);
    let _ = std::fs::remove_dir_all(&tmp);
    // What the agent reported it used, read from its own output (a pump still held open by
    // someone outside the attempt is not waited for: no usage then).
    let reading = if pump.is_finished() { pump.join().ok().flatten() } else { None };
    if let Some(reading) = &reading {
        // Before `exit.json`: an attempt seen to have ended has its usage recorded already.
        if let Err(e) = write_json(&state.usage(attempt), reading) {
            note(state, attempt, &format!("cannot record the usage the agent reported: {e:#}"));
        }
    }
    // An agent that reports only at the end of its turn (Codex, Gemini CLI) is held to its
    // budget then: the attempt ended past it fails all the same (recorded before `exit.json`).
    let reported = watch.and_then(|w| w.join().ok()).flatten();
    if let Some(over) = args.budget.as_ref().and_then(|b| b.passed(reading.as_ref(), reported.as_ref())) {
        crate::worker::budget::record(state, attempt, &over, &|line: &str| note(state, attempt, line));
    }
    // A rate or usage limit its agent reported at the end (the kinds make the attempt wait):
    // recorded before `exit.json`, like usage.
    record_limit(state, attempt);
    let mut exit = ExitInfo {
        attempt,
        code: status.and_then(|s| s.code()),
        signal: status.and_then(|s| s.signal()),
        error: None,
        finished_at: Utc::now(),
        tail: None,
        setup: None,
        checks: checks.into_boxed_slice(),
    };
    if !exit.clean() {
        // The log is complete now (its pump drained): its last lines say why, where the exit
        // code alone does not (`claude: not found` behind "exit code 127").
        exit.tail = crate::activity::state::log_tail_of(&state.log(attempt));
    }
    write_json(&state.exit(), &exit).map_err(|error| ShimError::RecordExit { exit: exit.describe(), error })
}

/// Read the end of the attempt's log for a limit its agent reported ([`crate::worker::limits`])
/// and record it (`attempt-N.limit.json`).
fn record_limit(state: &StateDir, attempt: u32) {
    let Some(bytes) = crate::files::read_tail_bytes(&state.log(attempt), crate::worker::limits::SCAN_BYTES) else { return };
    if let Some(limited) = crate::worker::limits::scan(&String::from_utf8_lossy(&bytes), Utc::now()) {
        if let Err(e) = write_json(&state.limit(attempt), &limited) {
            note(state, attempt, &format!("cannot record the limit the agent reported: {e:#}"));
        }
    }
}

/// Run the workspace's setup commands in the worktree, each confined like the worker and
/// stopped as the attempt is: `Some`: the exit of the attempt whose setup failed (the command,
/// how it ended and its log's tail), its worker never started.
fn run_setup(
    state: &StateDir,
    args: &ShimArgv,
    policy: Option<&crate::worker::sandbox::Policy>,
    asked: &Asked,
    started: &RunInfo,
) -> Option<ExitInfo> {
    use crate::worker::step::{self, Step};
    let log = state.log(args.attempt);
    let halt = || asked.halt();
    // Each command's pid is recorded as the worker's while it runs: its CPU time is the
    // attempt's sign of life (a quiet `npm ci` is not a stale attempt).
    let record = |pid: i32| {
        let _ = write_json(&state.run(), &RunInfo { worker_pid: Some(pid), ..started.clone() });
    };
    let before = crate::worker::step::unignored_changes(&args.cwd);
    for argv in &args.setup {
        let s =
            Step { argv, cwd: &args.cwd, env: None, sandbox: policy, log: &log, what: "setup", grace: args.grace, started: Some(&record) };
        let failed = |code, signal, tail, error| ExitInfo {
            attempt: args.attempt,
            code,
            signal,
            error,
            finished_at: Utc::now(),
            tail,
            setup: Some(crate::activity::state::SetupFailed { argv: argv.clone() }),
            checks: Box::default(),
        };
        match step::run(&s, &halt) {
            Ok(end) if end.ok() => {}
            Ok(end) => return Some(failed(end.code, end.signal, end.tail, None)),
            Err(e) => return Some(failed(None, None, None, Some(e.to_string()))),
        }
    }
    // What setup made that git does not ignore is the attempt's work like any other: said in
    // its log, and recorded (`setup-made.json`) for what shows the attempt's story.
    if let (Some(before), Some(after)) = (before, crate::worker::step::unignored_changes(&args.cwd)) {
        let made: Vec<&str> = after.difference(&before).map(|(p, _)| p.as_str()).collect();
        if !made.is_empty() {
            note(
                state,
                args.attempt,
                &format!("setup made or changed files git does not ignore, which are this attempt's work: {}", made.join(", ")),
            );
            let _ = write_json(&state.0.join("setup-made.json"), &serde_json::json!({"attempt": args.attempt, "paths": made}));
        }
    }
    None
}

/// A line of guild-hall's in the attempt's log.
pub(crate) fn note(state: &StateDir, attempt: u32, line: &str) {
    use std::io::Write;
    let _ = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(state.log(attempt))
        .and_then(|mut l| l.write_all(format!("[guild-hall] {line}\n").as_bytes()));
}

/// Start the worker, confined by `prepared`, its stdout and stderr into a pipe whose read end
/// is returned (stdout the shim's own when streamed). It dies with the shim (`me`).
fn spawn_worker(
    args: &ShimArgv,
    prepared: Option<crate::worker::sandbox::Prepared>,
    me: i32,
) -> Result<(i32, std::os::fd::OwnedFd), ShimError> {
    let (prog, rest) = args.argv.split_first().ok_or(ShimError::NoCommand)?;
    // Close-on-exec: the worker gets the write end only as its stdout and stderr, never the
    // read end (its log, before the pump has it) nor another copy.
    let (out_read, out_write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(ShimError::Pipe)?;
    let mut cmd = Command::new(prog);
    let stdout = if args.stream { Stdio::inherit() } else { Stdio::from(out_write.try_clone().map_err(ShimError::PipeCopy)?) };
    cmd.args(rest).current_dir(&args.cwd).stdin(Stdio::null()).stdout(stdout).stderr(out_write);
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: prctl and getppid are async-signal-safe system calls.
        unsafe {
            cmd.pre_exec(move || {
                // The worker dies with its shim; if the shim is already gone, do not start.
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 || libc::getppid() != me {
                    return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
                }
                // Nothing but its stdin, stdout and stderr crosses into the worker: not a
                // descriptor the reconciler inherited from whatever started it (a CI runner's
                // jobserver pipe, a terminal's), nor one of the shim's. Close-on-exec, so the
                // confinement below can still use its own until the exec.
                if libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, libc::CLOSE_RANGE_CLOEXEC) != 0 {
                    // A kernel before 5.11: one by one, as far as descriptors are commonly had.
                    for fd in 3..4096 {
                        libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
                    }
                }
                Ok(())
            });
        }
    }
    if let Some(p) = prepared {
        p.apply_to(&mut cmd);
    }
    let spawned = cmd.spawn();
    // Our copies of the pipe's write end go with `cmd`: the log sees EOF once every process
    // of the attempt has gone.
    drop(cmd);
    let child = spawned.map_err(|error| ShimError::Spawn { prog: prog.clone(), error })?;
    Ok((child.id() as i32, out_read))
}

/// Reap until the worker and every process it started are gone. SIGTERM (from the
/// reconciler) is passed to all of them and followed by SIGKILL after `grace`; SIGUSR1 means
/// SIGKILL now. Processes the worker leaves behind when it exits get a short SIGTERM grace.
fn supervise(p: &impl Processes, worker: i32, grace: Duration, asked: &Asked) -> Option<std::process::ExitStatus> {
    let me = p.me();
    let mut worker_status = None;
    let mut kill_at: Option<Instant> = None;
    let mut term_sent = false;
    let leftover_grace = grace.min(Duration::from_secs(2));
    loop {
        // Reap everything that has ended (our children, and orphans adopted as subreaper).
        let no_children = loop {
            match p.reap() {
                Reaped::Child(pid, raw) if pid == worker => worker_status = Some(std::process::ExitStatus::from_raw(raw)),
                Reaped::Child(..) => {}
                Reaped::Nothing => break false,
                Reaped::NoChildren => break true,
            }
        };
        if no_children {
            return worker_status;
        }
        let now = p.now();
        if asked.kill.load(Ordering::SeqCst) || kill_at.is_some_and(|t| now >= t) {
            signal_tree(p, me, Signal::SIGKILL);
        } else if !term_sent && (asked.term.load(Ordering::SeqCst) || worker_status.is_some()) {
            term_sent = true;
            signal_tree(p, me, Signal::SIGTERM);
            kill_at = Some(now + if worker_status.is_some() { leftover_grace } else { grace });
        } else if term_sent && worker_status.is_some() && kill_at.is_some_and(|t| t > now + leftover_grace) {
            // The worker is gone; what remains gets no longer than leftovers do.
            kill_at = Some(now + leftover_grace);
        }
        let ending = worker_status.is_some() || term_sent;
        // Woken the moment the worker ends (its pidfd turns readable) or a signal arrives
        // (poll is never restarted); the flags are looked at every 50 ms besides.
        if ending || !p.wait_exit(worker, Duration::from_millis(50)) {
            p.pause(Duration::from_millis(if ending { 10 } else { 50 }));
        }
    }
}

/// Signal every descendant of `root`, each pinned by a pidfd and re-checked to still descend
/// from `root` (as subreaper, whatever the worker orphaned is re-parented to us).
fn signal_tree(p: &impl Processes, root: i32, sig: Signal) {
    let family = process::descendants(p, root);
    for &pid in &family {
        let still = |q: i32| p.entry(q).is_some_and(|e| e.ppid == root || family.contains(&e.ppid));
        if let Err(e) = p.signal_if(pid, sig, &still) {
            eprintln!("guild-hall shim: cannot send {sig} to {pid}: {e}");
        }
    }
}

/// Copy the worker's output into its log, rotating at `max` bytes: the log is renamed to
/// `<log>.1` (replacing an older one) and a new log starts with a marker saying so. At most
/// about `2 × max` bytes of a chatty worker are ever on disk. Every byte also goes through
/// `meter`, which reads the agent's usage reports out of it.
fn pump_log(
    mut from: std::fs::File,
    log: &Path,
    max: u64,
    meter: &mut crate::worker::usage::Meter,
    live: Option<&crate::worker::budget::Live>,
) {
    use std::io::{Read, Write};
    let open = |p: &Path| std::fs::OpenOptions::new().create(true).append(true).open(p);
    let Ok(mut out) = open(log) else { return };
    let mut written = out.metadata().map(|m| m.len()).unwrap_or(0);
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return,
        };
        meter.feed(&buf[..n]);
        if let Some(live) = live {
            // What the budget's watch reads: the figures so far, whenever they moved.
            let now = meter.so_far();
            if let Ok(mut l) = live.lock() {
                if *l != now {
                    *l = now;
                }
            }
        }
        if written + n as u64 > max && written > 0 {
            let mut old = log.as_os_str().to_owned();
            old.push(".1");
            if std::fs::rename(log, &old).is_ok() {
                if let Ok(f) = open(log) {
                    out = f;
                    let marker = format!(
                        "[guild-hall] log rotated at {written} bytes: the part before this is in {}; anything older was dropped\n",
                        Path::new(&old).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
                    );
                    let _ = out.write_all(marker.as_bytes());
                    written = marker.len() as u64;
                }
            }
        }
        if out.write_all(&buf[..n]).is_err() {
            return;
        }
        written += n as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::worker::process::fake::{self, Fake};

    fn argv(confine: Confine) -> ShimArgv {
        use std::os::unix::ffi::OsStringExt;
        ShimArgv {
            state_dir: PathBuf::from(OsString::from_vec(b"/home/x/state/a=b/\xffc".to_vec())),
            attempt: 3,
            cwd: "/work tree/--unconfined".into(),
            grace: Duration::from_millis(1500),
            log_max_bytes: 42,
            confine,
            stream: false,
            ready_fd: None,
            setup: vec![vec!["npm".into(), "ci".into()], vec!["make".into(), "a b".into()]],
            checks: vec![vec!["cargo".into(), "test".into()]],
            budget: Some(crate::worker::budget::Budget {
                max_tokens: Some(100),
                max_usd: None,
                worker: "w".into(),
                prices: Default::default(),
            }),
            argv: vec!["claude".into(), "--".into(), "--policy".into(), "".into()],
        }
    }

    #[test]
    fn the_command_line_reads_back_as_it_was_made() {
        for confine in [Confine::Unconfined, Confine::Policy("/s/sandbox-policy.3".into())] {
            let a = argv(confine);
            assert_eq!(ShimArgv::parse(a.to_args()), Ok(a.clone()));
            let b = ShimArgv { stream: true, ready_fd: Some(7), ..a };
            assert_eq!(ShimArgv::parse(b.to_args()), Ok(b.clone()));
            // The state dir comes before `--` (a shim is told by it), the worker's argv last.
            let args = b.to_args();
            let dashes = args.iter().position(|x| x == "--").expect("--");
            assert_eq!(args[..dashes].iter().position(|x| x == "--state-dir"), Some(0));
            assert_eq!(args[dashes + 1..], b.argv.iter().map(OsString::from).collect::<Vec<_>>()[..]);
        }
    }

    #[test]
    fn the_command_line_has_defaults_and_says_what_is_wrong() {
        let parse = |s: &str| ShimArgv::parse(s.split(' ').map(OsString::from));
        let a = parse("--state-dir=/s --attempt 1 --cwd /w --unconfined -- true").expect("parses");
        assert_eq!((a.grace, a.log_max_bytes, a.confine), (Duration::from_secs(30), 16 * 1024 * 1024, Confine::Unconfined));
        assert_eq!(parse("--state-dir /s --attempt 1 --cwd /w -- true"), Err(ShimArgvError::Required("--policy or --unconfined")));
        assert_eq!(parse("--state-dir /s --attempt 1 --cwd /w --unconfined --policy p -- true"), Err(ShimArgvError::PolicyAndUnconfined));
        assert_eq!(parse("--state-dir /s --attempt 1 --cwd /w --unconfined --"), Err(ShimArgvError::NoCommand));
        assert_eq!(parse("--state-dir /s --attempt 1 --cwd /w --unconfined"), Err(ShimArgvError::NoCommand));
        assert_eq!(parse("--attempt 1 --cwd /w --unconfined -- true"), Err(ShimArgvError::Required("--state-dir")));
        assert_eq!(parse("--state-dir"), Err(ShimArgvError::MissingValue("--state-dir")));
        assert!(matches!(parse("--state-dir /s --attempt x"), Err(ShimArgvError::Invalid("--attempt", ..))));
        assert!(matches!(parse("--state-dir /s --grace soon"), Err(ShimArgvError::Invalid("--grace", ..))));
        assert_eq!(parse("--stream=yes"), Err(ShimArgvError::Unknown("--stream=yes".into())));
        assert_eq!(parse("--help"), Err(ShimArgvError::Unknown("--help".into())));
    }

    const ME: i32 = 100;
    const WORKER: i32 = 101;

    /// A fake machine with the shim (`ME`) and its worker; `obeys_term` lists the processes
    /// that end when they get SIGTERM.
    fn machine(obeys_term: &'static [i32]) -> Fake {
        let f = Fake::new(ME);
        f.spawn(WORKER, ME, 1, &[]);
        let mut seen = 0;
        f.on_pause(move |s| {
            let new: Vec<(i32, Signal)> = s.signals[seen..].to_vec();
            seen = s.signals.len();
            for (pid, sig) in new {
                if sig == Signal::SIGTERM && obeys_term.contains(&pid) {
                    fake::end(s, ME, pid, libc::SIGTERM);
                }
            }
        });
        f
    }

    fn asked(term: bool, kill: bool) -> Asked {
        Asked { term: Arc::new(AtomicBool::new(term)), kill: Arc::new(AtomicBool::new(kill)) }
    }

    #[test]
    fn a_worker_that_ends_alone_is_reaped_and_nothing_is_signalled() {
        let f = machine(&[]);
        f.end(WORKER, 3 << 8);
        let status = supervise(&f, WORKER, Duration::from_secs(30), &asked(false, false));
        assert_eq!(status.and_then(|s| s.code()), Some(3));
        assert!(f.signals().is_empty());
    }

    #[test]
    fn what_the_worker_leaves_behind_gets_a_short_grace_then_sigkill() {
        let f = machine(&[]);
        // A grandchild that ignores SIGTERM, orphaned to the shim when the worker ends.
        f.spawn(102, WORKER, 2, &[]);
        f.end(WORKER, 0);
        let status = supervise(&f, WORKER, Duration::from_secs(30), &asked(false, false));
        assert_eq!(status.and_then(|s| s.code()), Some(0));
        assert_eq!(f.signals(), vec![(102, Signal::SIGTERM), (102, Signal::SIGKILL)]);
        let waited = f.elapsed();
        assert!(waited >= Duration::from_secs(2) && waited < Duration::from_secs(3), "the leftover grace, not the worker's: {waited:?}");
    }

    #[test]
    fn a_stop_asked_terms_every_process_and_kills_after_the_grace() {
        let f = machine(&[]);
        f.spawn(102, WORKER, 2, &[]);
        let status = supervise(&f, WORKER, Duration::from_secs(5), &asked(true, false));
        assert_eq!(status.and_then(|s| s.signal()), Some(libc::SIGKILL));
        let signals = f.signals();
        let terms: Vec<i32> = signals.iter().filter(|(_, s)| *s == Signal::SIGTERM).map(|(p, _)| *p).collect();
        assert_eq!(terms.len(), 2, "each process once: {signals:?}");
        assert!(signals.iter().any(|&(p, s)| p == WORKER && s == Signal::SIGKILL));
        let waited = f.elapsed();
        assert!(waited >= Duration::from_secs(5) && waited < Duration::from_secs(6), "the whole grace: {waited:?}");
    }

    #[test]
    fn a_worker_that_obeys_sigterm_ends_without_sigkill_and_its_leftovers_wait_no_longer() {
        let f = machine(&[WORKER]);
        f.spawn(102, WORKER, 2, &[]);
        let status = supervise(&f, WORKER, Duration::from_secs(60), &asked(true, false));
        assert_eq!(status.and_then(|s| s.signal()), Some(libc::SIGTERM));
        assert!(!f.signals().contains(&(WORKER, Signal::SIGKILL)));
        assert!(f.signals().contains(&(102, Signal::SIGKILL)));
        // Its leftover got no more than the leftovers' grace, though the worker's was a minute.
        assert!(f.elapsed() < Duration::from_secs(3), "{:?}", f.elapsed());
    }

    #[test]
    fn a_kill_asked_is_sigkill_now() {
        let f = machine(&[]);
        let status = supervise(&f, WORKER, Duration::from_secs(60), &asked(false, true));
        assert_eq!(status.and_then(|s| s.signal()), Some(libc::SIGKILL));
        assert_eq!(f.signals(), vec![(WORKER, Signal::SIGKILL)]);
        assert!(f.elapsed() < Duration::from_millis(100));
    }

    fn run(pid: i32, run_id: &str) -> RunInfo {
        RunInfo {
            attempt: 1,
            pid,
            pgid: pid,
            start_time: 7,
            boot_id: "boot-1".into(),
            worker_pid: None,
            started_at: Utc::now(),
            run_id: run_id.into(),
        }
    }

    #[test]
    fn a_recorded_shim_is_ours_only_with_its_mark() {
        let id = "0123456789abcdef0123456789abcdef";
        let f = Fake::new(ME);
        f.spawn(200, 1, 7, &[&format!("{RUN_ID_VAR}={id}")]);
        f.spawn(300, 1, 7, &["PATH=/bin"]);
        f.spawn(400, 1, 8, &[&format!("{RUN_ID_VAR}={id}")]);
        assert_eq!(shim_state_in(&f, &run(200, id)), ShimState::Ours);
        assert_eq!(shim_state_in(&f, &run(300, id)), ShimState::Foreign, "a live process without the mark");
        assert_eq!(shim_state_in(&f, &run(400, id)), ShimState::Gone, "another start time: another process");
        assert_eq!(shim_state_in(&f, &run(500, id)), ShimState::Gone);
        assert_eq!(shim_state_in(&f, &RunInfo { boot_id: "boot-0".into(), ..run(200, id) }), ShimState::Gone);
        f.end(200, 0);
        assert_eq!(shim_state_in(&f, &run(200, id)), ShimState::Gone, "a zombie");
    }

    #[test]
    fn leftovers_are_the_live_processes_carrying_the_mark() {
        let id = "0123456789abcdef0123456789abcdef";
        let f = Fake::new(ME);
        let mark = format!("{RUN_ID_VAR}={id}");
        f.spawn(201, 1, 1, &[&mark]);
        f.spawn(202, 1, 1, &["A=1", &mark]);
        f.spawn(203, 1, 1, &[&format!("{mark}0")]);
        f.spawn(ME, 1, 1, &[&mark]);
        f.spawn(204, ME, 1, &[&mark]);
        f.end(204, 0);
        assert_eq!(leftovers_in(&f, &run(999, id)), vec![201, 202]);
        assert!(leftovers_in(&f, &run(999, "not-a-run-id")).is_empty(), "a malformed run id marks nothing");
        assert!(leftovers_in(&f, &RunInfo { boot_id: "boot-0".into(), ..run(999, id) }).is_empty());
    }

    fn shim_in(dir: &Path, confine: Confine) -> ShimArgv {
        ShimArgv {
            state_dir: dir.to_path_buf(),
            attempt: 2,
            cwd: dir.to_path_buf(),
            grace: Duration::from_secs(1),
            log_max_bytes: 1024,
            confine,
            stream: false,
            ready_fd: None,
            setup: Vec::new(),
            checks: Vec::new(),
            budget: None,
            argv: vec!["true".into()],
        }
    }

    #[test]
    fn a_worker_that_cannot_start_is_refused_in_its_exit_record() {
        let dir = tempfile::tempdir().expect("tempdir");
        let args = shim_in(dir.path(), Confine::Policy(dir.path().join("no-such-policy")));
        assert_eq!(run_shim(&args, &|_, _| None).expect("runs"), 127);
        let state = StateDir(dir.path().to_path_buf());
        let exit = read_json::<ExitInfo>(&state.exit()).expect("reads").expect("recorded");
        assert_eq!(exit.attempt, 2);
        assert!(exit.error.as_deref().is_some_and(|e| e.starts_with("cannot read the worker's sandbox policy")), "{exit:?}");
        assert!(read_json::<RunInfo>(&state.run()).expect("reads").is_none());
        // Asked again, the attempt has its record: nothing is run or written.
        assert_eq!(run_shim(&args, &|_, _| None).expect("runs"), 0);
    }

    #[test]
    fn a_shim_its_runner_does_not_admit_records_nothing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let args = shim_in(dir.path(), Confine::Unconfined);
        assert_eq!(run_shim(&args, &|_, attempt| Some(format!("not here ({attempt})"))).expect("runs"), 1);
        let state = StateDir(dir.path().to_path_buf());
        assert!(!state.exit().exists() && !state.run().exists());
    }
}
