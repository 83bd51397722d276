//! Who the endpoint serves: on TCP, whoever shows the bearer token of `$GUILD_HALL_HOME/token`
//! (mode 0600, out of a confined worker's reach); on the Unix socket, any process but those of
//! this home's attempts (told by `SO_PEERCRED` and [`crate::worker::peer`]).

use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::config::Home;

/// The bearer token, created (random, mode 0600) on first use.
pub(crate) fn token(home: &Home) -> Result<String> {
    let path = home.root.join("token");
    if let Ok(t) = std::fs::read_to_string(&path) {
        if !t.trim().is_empty() {
            return Ok(t.trim().to_string());
        }
    }
    let t = format!("{}{}", uuid::Uuid::new_v4().simple(), uuid::Uuid::new_v4().simple());
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(&path)?;
    f.write_all(t.as_bytes())?;
    Ok(t)
}

/// Why the process at the other end of a Unix connection is not served: it runs a worker's
/// code for this home ([`crate::worker::peer::worker_process`]: a worker, anything it started,
/// a package's compaction or notes command), or it cannot be told apart from one (no credentials, a pid not visible here, or
/// gone before it could be looked at — a worker could connect and hand the socket on). The
/// peer is pinned by a pidfd while it is looked at, so a reused pid is never mistaken for it.
pub(crate) fn worker_peer(conn: &std::os::unix::net::UnixStream, home: &Home) -> Option<(i32, String)> {
    use nix::sys::socket::{getsockopt, sockopt};
    let pid = match getsockopt(conn, sockopt::PeerCredentials) {
        Ok(cred) => cred.pid(),
        Err(e) => return Some((0, format!("the peer's credentials cannot be read ({e})"))),
    };
    if pid <= 0 {
        return Some((pid, "the peer's process is not visible from here (another pid namespace)".into()));
    }
    // Kernels before 6.5 have no SO_PEERPIDFD: then the pid alone, checked for being there.
    let pidfd = getsockopt(conn, sockopt::PeerPidfd).ok();
    if let Some(why) = crate::worker::peer::worker_process(home, pid) {
        return Some((pid, why));
    }
    let gone = match &pidfd {
        Some(fd) => exited(fd),
        None => !Path::new(&format!("/proc/{pid}")).exists(),
    };
    gone.then(|| (pid, format!("the connecting process (pid {pid}) was gone before it could be checked")))
}

/// Whether the process behind a pidfd has ended (a pidfd is readable once it has); an error
/// counts as ended, so that a check relying on it fails closed.
fn exited(pidfd: &std::os::fd::OwnedFd) -> bool {
    let mut p = libc::pollfd { fd: pidfd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
    // SAFETY: one valid pollfd for the length of the call, and a zero timeout.
    unsafe { libc::poll(&mut p, 1, 0) != 0 }
}

/// Refusals logged per minute at most: a worker that keeps connecting must not fill the log.
const REFUSALS_LOGGED_PER_MINUTE: u32 = 20;

/// Log a refused peer (its pid and why), at most [`REFUSALS_LOGGED_PER_MINUTE`] a minute; the
/// next minute's first refusal says how many were not logged.
pub(crate) fn log_refusal(pid: i32, why: &str) {
    static WINDOW: Mutex<Option<(Instant, u32)>> = Mutex::new(None);
    let mut window = WINDOW.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let now = Instant::now();
    let (start, count) = window.get_or_insert((now, 0));
    if now.duration_since(*start) >= Duration::from_secs(60) {
        let unlogged = count.saturating_sub(REFUSALS_LOGGED_PER_MINUTE);
        if unlogged > 0 {
            tracing::warn!(unlogged, "endpoint: {unlogged} more refusals of worker processes in the last minute were not logged");
        }
        (*start, *count) = (now, 0);
    }
    *count += 1;
    if *count <= REFUSALS_LOGGED_PER_MINUTE {
        tracing::warn!(peer_pid = pid, why = %why, "endpoint: refusing a connection from a worker process");
    }
}

/// Whether an `Authorization` header's value is the bearer token (`None`: no token is set,
/// so nothing is).
pub(super) fn authorizes(token: Option<&str>, header: &str) -> bool {
    token.is_some_and(|t| header.trim() == format!("Bearer {t}"))
}

/// The error of a request without the right token (`401`).
pub(super) const UNAUTHORIZED: &str = "missing or wrong bearer token (see $GUILD_HALL_HOME/token)";

/// The error of a refused peer (`403`), with why.
pub(super) fn forbidden(why: &str) -> String {
    format!(
        "forbidden: {why}; the processes of guild-hall's own attempts (its workers) may not use this endpoint: a worker asks the person with its toolbox's ask, and asks for a meeting with request_meeting (a commission's) or propose_followup (a meeting's)"
    )
}
