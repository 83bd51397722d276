//! Worker processes: the `guild-hall shim` supervisor (its own session, the attempt's child
//! subreaper: starts the worker confined, caps its log, stops every process of the attempt,
//! writes `exit.json` only when all are gone), liveness by pid + start time + boot id, and
//! CPU samples for the heartbeat. Linux `/proc` based.

use std::collections::BTreeMap;
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

/// The kernel's boot id: a pid from another boot is never alive.
pub fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id").map(|s| s.trim().to_string()).unwrap_or_default()
}

/// Parsed `/proc/<pid>/stat`: state, start time and CPU ticks (self + reaped children).
#[derive(Debug, Clone, Copy)]
pub struct ProcStat {
    pub state: char,
    pub start_time: u64,
    pub cpu_ticks: u64,
}

pub fn proc_stat(pid: i32) -> Option<ProcStat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may contain spaces: split after it.
    let rest = &text[text.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3 (state); field N is f[N - 3].
    let num = |n: usize| f.get(n - 3).and_then(|v| v.parse::<u64>().ok());
    Some(ProcStat { state: f.first()?.chars().next()?, start_time: num(22)?, cpu_ticks: num(14)? + num(15)? + num(16)? + num(17)? })
}

/// Same boot, pid exists, same start time, not a zombie: the process `run` describes still
/// runs. Liveness only; before a signal, [`is_ours`] proves it is the attempt's shim.
fn is_alive(run: &RunInfo) -> bool {
    if run.implausible().is_some() || run.boot_id != boot_id() {
        return false;
    }
    match proc_stat(run.pid) {
        Some(st) => st.start_time == run.start_time && st.state != 'Z' && st.state != 'X',
        None => false,
    }
}

/// The process `run` describes is alive and is the attempt's shim: same boot, pid, start time,
/// and the attempt's run-id mark in its environment. A `run.json` naming anyone else's process
/// — a forged or corrupt one — never passes, whatever else it copies right.
pub fn is_ours(run: &RunInfo) -> bool {
    is_alive(run) && carries_mark(run.pid, run)
}

/// How a recorded shim stands: running and proven the attempt's, gone, or a live process that
/// is not ours (the record cannot be trusted with it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShimState {
    Ours,
    Gone,
    Foreign,
}

/// A process in the middle of exiting has no environment left to read: that is the shim
/// ending (it wrote `exit.json` first), not a foreign process, and neither is signalled.
pub fn shim_state(run: &RunInfo) -> ShimState {
    if !is_alive(run) {
        return ShimState::Gone;
    }
    match std::fs::read(format!("/proc/{}/environ", run.pid)) {
        Ok(env) if env.is_empty() => ShimState::Gone,
        Ok(_) if carries_mark(run.pid, run) => ShimState::Ours,
        Ok(_) => {
            // A shim tearing its memory down as it exits can give a cut-off environment, the
            // mark missing; it is a zombie a moment later. Only a process still alive, still
            // without the mark, is foreign (a forged record: rare, so the wait costs nothing).
            std::thread::sleep(std::time::Duration::from_millis(50));
            match std::fs::read(format!("/proc/{}/environ", run.pid)) {
                _ if !is_alive(run) => ShimState::Gone,
                Ok(env) if env.is_empty() => ShimState::Gone,
                Ok(_) if carries_mark(run.pid, run) => ShimState::Ours,
                Ok(_) => ShimState::Foreign,
                Err(_) => ShimState::Gone,
            }
        }
        Err(_) => ShimState::Gone,
    }
}

/// Whether some shim holds this commission's lock (it is starting or running).
pub fn shim_lock_held(state: &StateDir) -> bool {
    crate::files::is_locked(&state.shim_lock())
}

/// Run `cmd` in a session of its own, so that no terminal signal or group kill of ours
/// reaches it and it outlives a `--once` reconciler.
pub fn detach(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: setsid is async-signal-safe and touches no memory of the parent.
    unsafe {
        cmd.pre_exec(|| nix::unistd::setsid().map(|_| ()).map_err(std::io::Error::from));
    }
}

/// A handle on one process that cannot be confused with a later process of the same pid.
struct PidFd(std::os::fd::OwnedFd);

impl PidFd {
    fn open(pid: i32) -> Option<PidFd> {
        use std::os::fd::FromRawFd;
        // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0u32) };
        // SAFETY: a non-negative return is a fresh fd that we now own.
        (fd >= 0).then(|| PidFd(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd as i32) }))
    }

    /// Until the process ends, a signal arrives, or `at_most` passes.
    fn wait_exit(&self, at_most: Duration) {
        use std::os::fd::AsFd;
        let mut fds = [nix::poll::PollFd::new(self.0.as_fd(), nix::poll::PollFlags::POLLIN)];
        let ms = u16::try_from(at_most.as_millis()).unwrap_or(u16::MAX);
        let _ = nix::poll::poll(&mut fds, nix::poll::PollTimeout::from(ms));
    }

    fn signal(&self, sig: Signal) -> std::io::Result<()> {
        use std::os::fd::AsRawFd;
        // SAFETY: the fd is a pidfd we own; a null siginfo means "as kill(2)".
        let r = unsafe { libc::syscall(libc::SYS_pidfd_send_signal, self.0.as_raw_fd(), sig as i32, std::ptr::null::<u8>(), 0u32) };
        if r == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::ESRCH) {
            return Ok(());
        }
        Err(e)
    }
}

/// Signal `pid` only if, once pinned by a pidfd, it still passes `still_ours`: a pid that was
/// reused by another process in between is never signalled.
fn signal_if(pid: i32, sig: Signal, still_ours: impl Fn(i32) -> bool) -> std::io::Result<bool> {
    let Some(fd) = PidFd::open(pid) else { return Ok(false) };
    if !still_ours(pid) {
        return Ok(false);
    }
    fd.signal(sig)?;
    Ok(true)
}

/// How the reconciler asks a shim to end its attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// SIGTERM to every process of the attempt, SIGKILL after the grace period.
    Term,
    /// SIGKILL to every process of the attempt, now.
    Kill,
}

/// Ask the attempt's shim to stop it. The shim signals every descendant, reaps them, and
/// only then records the exit, so "gone" means gone. A shim that is no longer the process
/// `run` describes is not signalled.
pub fn stop_attempt(run: &RunInfo, how: Stop) -> Result<()> {
    let sig = match how {
        Stop::Term => Signal::SIGTERM,
        Stop::Kill => Signal::SIGUSR1,
    };
    signal_if(run.pid, sig, |_| is_ours(run)).with_context(|| format!("signalling the shim (pid {})", run.pid))?;
    Ok(())
}

/// One row of the process table.
#[derive(Debug, Clone)]
struct ProcEntry {
    pid: i32,
    ppid: i32,
    /// Dead, waiting to be reaped by its parent: nothing left to stop.
    zombie: bool,
}

fn read_entry(pid: i32) -> Option<ProcEntry> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &text[text.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // Fields 3 (state) and 4 (ppid) are f[0] and f[1].
    let zombie = matches!(*f.first()?, "Z" | "X");
    Some(ProcEntry { pid, ppid: f.get(1)?.parse().ok()?, zombie })
}

fn process_table() -> Vec<ProcEntry> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok()).filter_map(read_entry).collect()
}

/// Every descendant of `root` (children, their children, ...), from one look at /proc.
pub fn descendants(root: i32) -> Vec<i32> {
    let table = process_table();
    let mut out = Vec::new();
    let mut frontier = vec![root];
    while let Some(p) = frontier.pop() {
        for e in table.iter().filter(|e| e.ppid == p) {
            out.push(e.pid);
            frontier.push(e.pid);
        }
    }
    out
}

fn environ_has(pid: i32, entry: &[u8]) -> bool {
    std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|env| env.split(|b| *b == 0).any(|kv| kv == entry))
}

/// The environment variable that marks every process of one attempt (its value is the run id).
pub const RUN_ID_VAR: &str = "GUILD_HALL_RUN_ID";

/// Whether `pid` carries the attempt's run-id mark (only a well-formed run id counts).
fn carries_mark(pid: i32, run: &RunInfo) -> bool {
    pid > 1 && crate::activity::state::valid_run_id(&run.run_id) && environ_has(pid, format!("{RUN_ID_VAR}={}", run.run_id).as_bytes())
}

/// Processes of an attempt whose shim is gone (killed before it could reap them): those
/// carrying the attempt's run id in their environment — the mark alone, never a session or
/// group id, which the kernel hands to an unrelated session once the shim's pid is reused.
/// Empty for an implausible record or one of an earlier boot. A process that cleared its
/// environment and left the shim's session is not found (the shim, its subreaper, stops such
/// processes while it lives).
pub fn leftovers(run: &RunInfo) -> Vec<i32> {
    if run.implausible().is_some() || run.boot_id != boot_id() {
        return Vec::new();
    }
    let me = std::process::id() as i32;
    process_table().into_iter().filter(|e| e.pid > 1 && e.pid != me && !e.zombie && carries_mark(e.pid, run)).map(|e| e.pid).collect()
}

/// Whether a live process (not this one) works in `dir` or below it (its current directory):
/// how a worker is known to be at work when the record that would name it is gone (a state
/// dir deleted under a running attempt). Only asked in that rare case: it reads every
/// process's `cwd` link.
pub fn working_in(dir: &std::path::Path) -> bool {
    let Ok(dir) = dir.canonicalize() else { return false };
    let me = std::process::id() as i32;
    process_table()
        .into_iter()
        .filter(|e| e.pid > 1 && e.pid != me && !e.zombie)
        .any(|e| std::fs::read_link(format!("/proc/{}/cwd", e.pid)).is_ok_and(|cwd| cwd.starts_with(&dir)))
}

/// SIGKILL what [`leftovers`] found, re-checking each one's mark once it is pinned.
pub fn kill_leftovers(run: &RunInfo, pids: &[i32]) -> Result<()> {
    if let Some(why) = run.implausible() {
        anyhow::bail!("not killing leftovers of an implausible run record: {why}");
    }
    let me = std::process::id() as i32;
    for &pid in pids.iter().filter(|&&p| p > 1 && p != me) {
        signal_if(pid, Signal::SIGKILL, |p| carries_mark(p, run)).with_context(|| format!("killing leftover process {pid}"))?;
    }
    Ok(())
}

/// Everything needed to start one attempt under the shim (made by `worker::launch`).
#[derive(Debug, Clone)]
pub struct Spec {
    pub state: StateDir,
    pub attempt: u32,
    pub cwd: PathBuf,
    pub argv: Vec<String>,
    pub env: BTreeMap<String, String>,
    /// How long processes get between SIGTERM and SIGKILL.
    pub grace: Duration,
    /// Size at which the attempt's log is rotated (the previous part is kept, older dropped).
    pub log_max_bytes: u64,
    /// Where the worker may write; `None` runs it unconfined.
    pub sandbox: Option<crate::worker::sandbox::Policy>,
}

/// Variables a worker may inherit from the reconciler; everything else is dropped.
const INHERITED_ENV: [&str; 8] = ["PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "TZ", "SHELL"];

/// Start `guild-hall shim` for the attempt, detached in its own session, and wait until it has
/// recorded `run.json` (or `exit.json` when the worker could not start). The shim closes its
/// end of a pipe (`--ready-fd`) once it has: the wait wakes then, not at a poll's next tick.
pub fn spawn_shim(launch: &Spec) -> Result<()> {
    use std::os::fd::AsRawFd;
    let log =
        std::fs::OpenOptions::new().create(true).append(true).open(launch.state.log(launch.attempt)).context("opening the attempt log")?;
    let mut cmd = shim_command(launch)?;
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
    cmd.arg("--ready-fd").arg(fd.to_string());
    push_argv(&mut cmd, launch);
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
pub fn spawn_streaming_shim(launch: &Spec) -> Result<std::process::Child> {
    let log =
        std::fs::OpenOptions::new().create(true).append(true).open(launch.state.log(launch.attempt)).context("opening the attempt log")?;
    let mut cmd = shim_command(launch)?;
    cmd.arg("--stream");
    push_argv(&mut cmd, launch);
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(log);
    detach(&mut cmd);
    cmd.spawn().context("starting guild-hall shim")
}

/// Variables and their values.
pub type Environment = Vec<(std::ffi::OsString, std::ffi::OsString)>;

/// The `guild-hall shim` command line (the worker's argv last) and its whole environment,
/// for a runner that starts it elsewhere (a Slurm batch job).
pub fn shim_invocation(launch: &Spec) -> Result<(Vec<std::ffi::OsString>, Environment)> {
    let mut cmd = shim_command(launch)?;
    push_argv(&mut cmd, launch);
    let argv = std::iter::once(cmd.get_program().to_owned()).chain(cmd.get_args().map(|a| a.to_owned())).collect();
    let env = cmd.get_envs().filter_map(|(k, v)| Some((k.to_owned(), v?.to_owned()))).collect();
    Ok((argv, env))
}

/// The `guild-hall shim` command line and environment for `launch` (stdio left to the caller).
fn shim_command(launch: &Spec) -> Result<Command> {
    let exe = std::env::current_exe().context("locating the guild-hall binary")?;
    let mut cmd = Command::new(exe);
    cmd.arg("shim")
        .arg("--state-dir")
        .arg(&launch.state.0)
        .arg("--attempt")
        .arg(launch.attempt.to_string())
        .arg("--cwd")
        .arg(&launch.cwd)
        .arg("--grace")
        .arg(humantime::format_duration(launch.grace).to_string())
        .arg("--log-max-bytes")
        .arg(launch.log_max_bytes.to_string());
    match &launch.sandbox {
        Some(policy) => {
            // In a file of the attempt's (0600, in the home no worker reads), never on the
            // command line: every process of the machine reads that, and an expanded
            // `${NAME:-DEFAULT}` may be a secret.
            let file = policy_file(&launch.state, launch.attempt);
            crate::files::write_atomic(&file, &policy.to_file_bytes())?;
            std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o600))
                .with_context(|| format!("making {} private", file.display()))?;
            cmd.arg("--policy").arg(&file);
        }
        None => {
            cmd.arg("--unconfined");
        }
    }
    cmd.env_clear()
        .envs(INHERITED_ENV.iter().filter_map(|k| std::env::var(k).ok().map(|v| (*k, v))))
        .envs(&launch.env)
        .env("TMPDIR", launch.state.tmp())
        .env(RUN_ID_VAR, uuid::Uuid::new_v4().simple().to_string());
    Ok(cmd)
}

/// The attempt's sandbox policy, as `guild-hall shim --policy` reads it: one per attempt, so a
/// job still queued for an earlier attempt never starts under a later one's policy.
pub fn policy_file(state: &StateDir, attempt: u32) -> PathBuf {
    state.0.join(format!("sandbox-policy.{attempt}"))
}

/// The worker's argv, always last on the shim's command line.
fn push_argv(cmd: &mut Command, launch: &Spec) {
    cmd.arg("--").args(&launch.argv);
}

/// Set in the shim's environment by a runner whose node the reconciler cannot see into (Slurm):
/// the shim writes the worker's CPU time to [`cpu_file`].
pub const CPU_BEAT_VAR: &str = "GUILD_HALL_CPU_BEAT";

/// `cpu.json` in the attempt's state dir: `{"attempt": A, "cpu_ticks": N}`, the worker's CPU time
/// (its own and its reaped children's) as attempt A's shim last saw it move.
pub fn cpu_file(state: &StateDir) -> PathBuf {
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

/// How the shim runs one attempt (its command line).
#[derive(Debug, Clone)]
pub struct ShimArgs {
    pub state_dir: PathBuf,
    pub attempt: u32,
    pub cwd: PathBuf,
    pub argv: Vec<String>,
    pub grace: Duration,
    pub log_max_bytes: u64,
    pub sandbox: Option<crate::worker::sandbox::Policy>,
    /// The worker's stdout goes to the shim's own (a meeting turn read by its caller), and the
    /// caller's death stops the attempt.
    pub stream: bool,
    /// A pipe end to close once `run.json` is written (the starter waits on it).
    pub ready_fd: Option<std::os::fd::RawFd>,
}

/// The shim's body. Returns its exit code. Runs as a separate process, never in the reconciler.
///
/// It is the attempt's child subreaper: whatever the worker starts — even with `setsid` or a
/// double fork — stays its descendant, and nothing of the attempt outlives it. The worker
/// itself dies with the shim (parent-death signal); anything else a killed shim leaves behind
/// is found by the reconciler through the run id ([`leftovers`]).
pub fn run_shim(args: &ShimArgs) -> Result<i32> {
    let state = StateDir(args.state_dir.clone());
    let attempt = args.attempt;
    // The reconciler's end of the wait for `run.json`: never the worker's, closed once it is
    // written (or when the shim returns without it).
    // SAFETY: F_GETFD only asks whether the fd is open.
    let ready = args.ready_fd.filter(|&fd| fd > 2 && unsafe { libc::fcntl(fd, libc::F_GETFD) } >= 0).map(|fd| {
        // SAFETY: `--ready-fd` names the pipe end `spawn_shim` left open across the exec, owned
        // by nothing else in this process.
        let owned = unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) };
        // SAFETY: fcntl on an fd this process owns.
        unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
        owned
    });
    // Held for the shim's whole life: a second shim for the same commission waits here and
    // then finds this attempt already started, so no duplicate worker is ever run.
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
    let _lock = crate::files::lock(&state.shim_lock(), crate::files::Lock::Exclusive)?;
    if std::env::var_os(CPU_BEAT_VAR).is_some() {
        // Submitted by the Slurm runner: run only in the job `slurm.json` records for the
        // attempt (not in one of a submission given up whose sbatch answered late).
        let (id, name) = (std::env::var("SLURM_JOB_ID").ok(), std::env::var("SLURM_JOB_NAME").ok());
        if let Some(why) = crate::worker::runner::slurm::not_the_recorded_job(&state, attempt, id.as_deref(), name.as_deref()) {
            eprintln!("guild-hall shim: not running attempt {attempt} here: {why}");
            return Ok(1);
        }
    }
    if matches!(read_json::<RunInfo>(&state.run()), Ok(Some(r)) if r.attempt == attempt)
        || matches!(read_json::<ExitInfo>(&state.exit()), Ok(Some(x)) if x.attempt == attempt)
    {
        return Ok(0);
    }
    let fail = |why: String| -> Result<i32> {
        write_json(&state.exit(), &ExitInfo::error(attempt, why))?;
        Ok(127)
    };
    // SAFETY: prctl(PR_SET_CHILD_SUBREAPER) only sets a flag on this process.
    if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) } != 0 {
        return fail(format!("cannot become the attempt's subreaper: {}", std::io::Error::last_os_error()));
    }
    // A private temp dir, fresh for each attempt (TMPDIR points here).
    let tmp = state.tmp();
    let _ = std::fs::remove_dir_all(&tmp);
    if let Err(e) = std::fs::create_dir_all(&tmp) {
        return fail(format!("cannot create the private temp dir {}: {e}", tmp.display()));
    }
    let prepared = match &args.sandbox {
        Some(policy) => {
            let mut policy = policy.clone();
            policy.writable.push(tmp.clone());
            policy.own.push(tmp.clone());
            match policy.prepare() {
                Ok(p) => {
                    if let Some(why) = p.sockets_not_masked() {
                        use std::io::Write;
                        let line = format!(
                            "[guild-hall] pathname Unix sockets outside the attempt are NOT masked from this worker ({why}): it can connect to any it may open\n"
                        );
                        let _ = std::fs::OpenOptions::new()
                            .create(true)
                            .append(true)
                            .open(state.log(attempt))
                            .and_then(|mut l| l.write_all(line.as_bytes()));
                    }
                    Some(p)
                }
                Err(e) => return fail(format!("cannot confine the worker: {e}")),
            }
        }
        None => None,
    };
    let me = std::process::id() as i32;
    let my_stat = proc_stat(me).context("reading own /proc stat")?;
    // The mark that proves a process is this attempt's: without it nothing could ever be
    // signalled on the attempt's behalf, so the worker is not started.
    let run_id = std::env::var(RUN_ID_VAR).unwrap_or_default();
    if !crate::activity::state::valid_run_id(&run_id) {
        return fail(format!("no valid {RUN_ID_VAR} in the shim's environment"));
    }
    let (prog, rest) = args.argv.split_first().context("no worker command given")?;
    // Close-on-exec: the worker gets the write end only as its stdout and stderr, never the
    // read end (its log, before the pump has it) nor another copy.
    let (out_read, out_write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).context("creating the output pipe")?;
    let mut cmd = Command::new(prog);
    let stdout = if args.stream { Stdio::inherit() } else { Stdio::from(out_write.try_clone()?) };
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
    let child = match spawned {
        Ok(c) => c,
        Err(e) => return fail(format!("cannot start {prog}: {e}")),
    };
    let worker = child.id() as i32;
    let pump = {
        let log = state.log(attempt);
        let max = args.log_max_bytes;
        std::thread::spawn(move || pump_log(std::fs::File::from(out_read), &log, max))
    };
    // What the reconciler asks by signal: SIGTERM stop the attempt, SIGUSR1 kill it now.
    // SIGHUP and SIGINT (a terminal going away) only set a flag nobody reads.
    let asked = Asked { term: Arc::new(AtomicBool::new(false)), kill: Arc::new(AtomicBool::new(false)) };
    signal_hook::flag::register(signal_hook::consts::SIGTERM, asked.term.clone())?;
    signal_hook::flag::register(signal_hook::consts::SIGUSR1, asked.kill.clone())?;
    let ignored = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGHUP, ignored.clone())?;
    signal_hook::flag::register(signal_hook::consts::SIGINT, ignored)?;
    let run = RunInfo {
        attempt,
        pid: me,
        pgid: nix::unistd::getpgrp().as_raw(),
        start_time: my_stat.start_time,
        boot_id: boot_id(),
        worker_pid: Some(worker),
        started_at: Utc::now(),
        run_id,
    };
    write_json(&state.run(), &run)?;
    drop(ready);
    // On a cluster's node the reconciler cannot read this machine's process table: the
    // worker's CPU time is written down for it (`cpu.json`) whenever it moves.
    let done = Arc::new(AtomicBool::new(false));
    let beat = std::env::var_os(CPU_BEAT_VAR).is_some().then(|| {
        let (done, path) = (done.clone(), cpu_file(&state));
        std::thread::spawn(move || cpu_beats(attempt, worker, &path, &done))
    });
    let status = supervise(worker, args.grace, &asked);
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
    let _ = std::fs::remove_dir_all(&tmp);
    let mut exit = ExitInfo {
        attempt,
        code: status.and_then(|s| s.code()),
        signal: status.and_then(|s| s.signal()),
        error: None,
        finished_at: Utc::now(),
        tail: None,
    };
    if !exit.clean() {
        // The log is complete now (its pump drained): its last lines say why, where the exit
        // code alone does not (`claude: not found` behind "exit code 127").
        exit.tail = crate::activity::state::log_tail_of(&state.log(attempt));
    }
    write_json(&state.exit(), &exit)?;
    Ok(0)
}

use std::os::unix::process::ExitStatusExt;

/// Reap until the worker and every process it started are gone. SIGTERM (from the
/// reconciler) is passed to all of them and followed by SIGKILL after `grace`; SIGUSR1 means
/// SIGKILL now. Processes the worker leaves behind when it exits get a short SIGTERM grace.
/// The reconciler's requests, set by signal handlers.
struct Asked {
    term: Arc<AtomicBool>,
    kill: Arc<AtomicBool>,
}

fn supervise(worker: i32, grace: Duration, asked: &Asked) -> Option<std::process::ExitStatus> {
    let me = std::process::id() as i32;
    let mut worker_status = None;
    let mut kill_at: Option<Instant> = None;
    let mut term_sent = false;
    let leftover_grace = grace.min(Duration::from_secs(2));
    let worker_fd = PidFd::open(worker);
    loop {
        // Reap everything that has ended (our children, and orphans adopted as subreaper).
        let mut no_children = false;
        loop {
            let mut raw = 0;
            // SAFETY: waitpid with WNOHANG writes only to `raw`.
            let pid = unsafe { libc::waitpid(-1, &mut raw, libc::WNOHANG) };
            if pid == worker {
                worker_status = Some(std::process::ExitStatus::from_raw(raw));
            } else if pid == 0 {
                break;
            } else if pid < 0 {
                no_children = std::io::Error::last_os_error().raw_os_error() == Some(libc::ECHILD);
                break;
            }
        }
        if no_children {
            return worker_status;
        }
        let now = Instant::now();
        if asked.kill.load(Ordering::SeqCst) || kill_at.is_some_and(|t| now >= t) {
            signal_tree(me, Signal::SIGKILL);
        } else if !term_sent && (asked.term.load(Ordering::SeqCst) || worker_status.is_some()) {
            term_sent = true;
            signal_tree(me, Signal::SIGTERM);
            kill_at = Some(now + if worker_status.is_some() { leftover_grace } else { grace });
        } else if term_sent && worker_status.is_some() && kill_at.is_some_and(|t| t > now + leftover_grace) {
            // The worker is gone; what remains gets no longer than leftovers do.
            kill_at = Some(now + leftover_grace);
        }
        match (&worker_fd, worker_status.is_some() || term_sent) {
            // Woken the moment the worker ends (its pidfd turns readable) or a signal arrives
            // (poll is never restarted); the flags are looked at every 50 ms besides.
            (Some(fd), false) => fd.wait_exit(Duration::from_millis(50)),
            (_, ending) => std::thread::sleep(Duration::from_millis(if ending { 10 } else { 50 })),
        }
    }
}

/// Signal every descendant of `root`, each pinned by a pidfd and re-checked to still descend
/// from `root` (as subreaper, whatever the worker orphaned is re-parented to us).
fn signal_tree(root: i32, sig: Signal) {
    let family = descendants(root);
    for &pid in &family {
        let still = |p: i32| read_entry(p).is_some_and(|e| e.ppid == root || family.contains(&e.ppid));
        if let Err(e) = signal_if(pid, sig, still) {
            eprintln!("guild-hall shim: cannot send {sig} to {pid}: {e}");
        }
    }
}

/// Copy the worker's output into its log, rotating at `max` bytes: the log is renamed to
/// `<log>.1` (replacing an older one) and a new log starts with a marker saying so. At most
/// about `2 × max` bytes of a chatty worker are ever on disk.
fn pump_log(mut from: std::fs::File, log: &Path, max: u64) {
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
