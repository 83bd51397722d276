//! Worker processes: the `guild-hall shim` supervisor (setsid, start the worker, forward
//! SIGTERM, reap, write `exit.json`), liveness by pid + start time + boot id, signals to a
//! process group, and CPU samples for the heartbeat. Linux `/proc` based.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use chrono::Utc;
use nix::fcntl::{Flock, FlockArg};
use nix::sys::signal::{self, SigHandler, Signal};
use nix::unistd::Pid;

use crate::runtime::{read_json, write_json, ExitInfo, RunInfo, StateDir};

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

/// Same boot, pid exists, same start time, not a zombie.
pub fn is_alive(run: &RunInfo) -> bool {
    if run.boot_id != boot_id() {
        return false;
    }
    match proc_stat(run.pid) {
        Some(st) => st.start_time == run.start_time && st.state != 'Z' && st.state != 'X',
        None => false,
    }
}

/// Whether some shim holds this commission's lock (it is starting or running).
pub fn shim_lock_held(state: &StateDir) -> bool {
    let Ok(f) = std::fs::File::open(state.shim_lock()) else { return false };
    match Flock::lock(f, FlockArg::LockSharedNonblock) {
        Ok(_) => false,
        Err((_, e)) => e == nix::errno::Errno::EWOULDBLOCK,
    }
}

/// Send `sig` to the process group; a group that is already gone is fine.
pub fn signal_group(pgid: i32, sig: Signal) -> Result<()> {
    match signal::killpg(Pid::from_raw(pgid), sig) {
        Ok(()) | Err(nix::errno::Errno::ESRCH) => Ok(()),
        Err(e) => Err(e).with_context(|| format!("sending {sig} to process group {pgid}")),
    }
}

/// Everything needed to start one attempt under the shim.
#[derive(Debug, Clone)]
pub struct Launch {
    pub state: StateDir,
    pub attempt: u32,
    pub cwd: PathBuf,
    pub argv: Vec<String>,
    pub env: BTreeMap<String, String>,
}

/// Variables a worker may inherit from the reconciler; everything else is dropped.
const INHERITED_ENV: [&str; 9] = ["PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "TZ", "TMPDIR", "SHELL"];

/// Start `guild-hall shim` for the attempt, detached in its own session, and wait until it has
/// recorded `run.json` (or `exit.json` when the worker could not start).
pub fn spawn_shim(launch: &Launch) -> Result<()> {
    let exe = std::env::current_exe().context("locating the guild-hall binary")?;
    let log =
        std::fs::OpenOptions::new().create(true).append(true).open(launch.state.log(launch.attempt)).context("opening the attempt log")?;
    let mut cmd = Command::new(exe);
    cmd.arg("shim")
        .arg("--state-dir")
        .arg(&launch.state.0)
        .arg("--attempt")
        .arg(launch.attempt.to_string())
        .arg("--cwd")
        .arg(&launch.cwd)
        .arg("--")
        .args(&launch.argv)
        .env_clear()
        .envs(INHERITED_ENV.iter().filter_map(|k| std::env::var(k).ok().map(|v| (*k, v))))
        .envs(&launch.env)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
    use std::os::unix::process::CommandExt;
    // SAFETY: setsid is async-signal-safe and touches no memory of the parent.
    unsafe {
        cmd.pre_exec(|| nix::unistd::setsid().map(|_| ()).map_err(std::io::Error::from));
    }
    let mut child = cmd.spawn().context("starting guild-hall shim")?;
    // Reap the shim when it ends so a long-lived reconciler leaves no zombie.
    std::thread::spawn(move || child.wait());
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if matches!(read_json::<RunInfo>(&launch.state.run()), Ok(Some(r)) if r.attempt == launch.attempt)
            || matches!(read_json::<ExitInfo>(&launch.state.exit()), Ok(Some(x)) if x.attempt == launch.attempt)
        {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    anyhow::bail!("the shim did not record the worker's start within 30s")
}

static WORKER_PID: AtomicI32 = AtomicI32::new(0);

extern "C" fn forward_term(_: i32) {
    let pid = WORKER_PID.load(Ordering::SeqCst);
    if pid > 0 {
        let _ = signal::kill(Pid::from_raw(pid), Signal::SIGTERM);
    }
}

/// The shim's body. Returns its exit code. Runs as a separate process, never in the reconciler.
pub fn run_shim(state_dir: &Path, attempt: u32, cwd: &Path, argv: &[String]) -> Result<i32> {
    let state = StateDir(state_dir.to_path_buf());
    let lock_file = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(state.shim_lock())?;
    // Held for the shim's whole life: a second shim for the same commission waits here and
    // then finds this attempt already started, so no duplicate worker is ever run.
    let _lock = Flock::lock(lock_file, FlockArg::LockExclusive).map_err(|(_, e)| e)?;
    if matches!(read_json::<RunInfo>(&state.run()), Ok(Some(r)) if r.attempt == attempt)
        || matches!(read_json::<ExitInfo>(&state.exit()), Ok(Some(x)) if x.attempt == attempt)
    {
        return Ok(0);
    }
    let me = std::process::id() as i32;
    let my_stat = proc_stat(me).context("reading own /proc stat")?;
    let (prog, args) = argv.split_first().context("no worker command given")?;
    let child = Command::new(prog).args(args).current_dir(cwd).stdin(Stdio::null()).spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            let exit =
                ExitInfo { attempt, code: None, signal: None, error: Some(format!("cannot start {prog}: {e}")), finished_at: Utc::now() };
            write_json(&state.exit(), &exit)?;
            return Ok(127);
        }
    };
    WORKER_PID.store(child.id() as i32, Ordering::SeqCst);
    // SAFETY: the handler only reads an atomic and calls kill(2), both async-signal-safe.
    unsafe {
        signal::signal(Signal::SIGTERM, SigHandler::Handler(forward_term))?;
        signal::signal(Signal::SIGHUP, SigHandler::SigIgn)?;
        signal::signal(Signal::SIGINT, SigHandler::SigIgn)?;
    }
    let run = RunInfo {
        attempt,
        pid: me,
        pgid: nix::unistd::getpgrp().as_raw(),
        start_time: my_stat.start_time,
        boot_id: boot_id(),
        worker_pid: Some(child.id() as i32),
        started_at: Utc::now(),
    };
    write_json(&state.run(), &run)?;
    let status = loop {
        match child.wait() {
            Ok(s) => break s,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e.into()),
        }
    };
    use std::os::unix::process::ExitStatusExt;
    let exit = ExitInfo { attempt, code: status.code(), signal: status.signal(), error: None, finished_at: Utc::now() };
    write_json(&state.exit(), &exit)?;
    Ok(0)
}
