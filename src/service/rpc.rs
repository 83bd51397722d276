//! The `worker/*` JSON-RPC 2.0 endpoint of `guild-hall watch --socket/--listen`: HTTP
//! `POST /mcp`, one request per body, served on a Unix socket (mode 0600; a peer that is a
//! process of one of this home's attempts is refused, by `SO_PEERCRED`) and/or a loopback TCP
//! port (every request needs the bearer token in `$GUILD_HALL_HOME/token`, mode 0600). The
//! methods are [`crate::ops::dispatcher::Dispatcher`]'s, plus MCP's `initialize`, `tools/list`, `tools/call`,
//! and `meeting/*` (a turn's events streamed back as chunked JSON lines).
//! A deliberately small HTTP/1.1 reader with hard limits: no keep-alive, no chunked bodies, a
//! cap on connections (at the cap the oldest that has not sent its header makes way), one
//! deadline for the whole request, the token checked on arrival, a reply written whole or not
//! at all.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use serde_json::{json, Value as Json};

use crate::config::{Home, Project};
use crate::ops::dispatcher::Dispatcher;
use crate::tools::ToolError;

/// Largest request body accepted (bigger: 413, nothing read further, nothing written).
pub const MAX_BODY: usize = 1024 * 1024;
const MAX_HEADERS: usize = 16 * 1024;

/// What the endpoint serves: the home and the projects it may dispatch into.
#[derive(Clone)]
pub struct Endpoint {
    pub home: Home,
    pub projects: Vec<PathBuf>,
    /// Required as `Authorization: Bearer <token>` (TCP only; the socket's mode guards it).
    pub token: Option<String>,
    pub limits: Limits,
}

/// The bearer token, created (random, mode 0600) on first use.
pub fn token(home: &Home) -> Result<String> {
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

/// " (pid N: its command line)" of the process serving the other end of `peer`, as the kernel
/// reports it (`SO_PEERCRED`); empty if it cannot be told.
fn server_pid(peer: &std::os::unix::net::UnixStream) -> String {
    let Ok(cred) = nix::sys::socket::getsockopt(peer, nix::sys::socket::sockopt::PeerCredentials) else { return String::new() };
    let pid = cred.pid();
    match std::fs::read(format!("/proc/{pid}/cmdline")) {
        Ok(cmd) if !cmd.is_empty() => {
            let cmd: Vec<String> =
                cmd.split(|b| *b == 0).filter(|a| !a.is_empty()).map(|a| String::from_utf8_lossy(a).into_owned()).collect();
            format!(" (pid {pid}: {})", cmd.join(" "))
        }
        _ => format!(" (pid {pid})"),
    }
}

/// Bind a Unix socket with mode 0600, replacing a stale socket file nobody listens on.
pub fn bind_socket(path: &Path) -> Result<UnixListener> {
    if path.exists() {
        use std::os::unix::fs::FileTypeExt;
        let is_socket = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_socket());
        if !is_socket {
            bail!("{} exists and is not a socket; not replacing it", path.display());
        }
        if let Ok(peer) = std::os::unix::net::UnixStream::connect(path) {
            bail!("{} is in use by another server{}", path.display(), server_pid(&peer));
        }
        std::fs::remove_file(path)?;
    }
    let listener = UnixListener::bind(path).with_context(|| format!("binding {}", path.display()))?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    Ok(listener)
}

/// Bind a TCP listener, on loopback addresses only.
pub fn bind_loopback(addr: &str) -> Result<TcpListener> {
    let addr: SocketAddr = addr.parse().map_err(|e| anyhow!("--listen {addr:?}: {e} (expected e.g. 127.0.0.1:7777)"))?;
    if !addr.ip().is_loopback() {
        bail!("--listen {addr}: only loopback addresses (127.0.0.0/8, ::1) are served");
    }
    TcpListener::bind(addr).with_context(|| format!("binding {addr}"))
}

/// How much the endpoint takes on at once, and how long a client has to send its request.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Connections served at once; one more is answered `503` at once and closed.
    pub max_connections: usize,
    /// The whole request (request line, headers and body) must arrive within this; the reply
    /// (a streamed turn may run for many minutes) is not bounded by it.
    pub request_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_connections: 64, request_timeout: Duration::from_secs(10) }
    }
}

/// A client that stops reading a reply for this long is gone (its turn is interrupted).
const WRITE_TIMEOUT: Duration = Duration::from_secs(60);

/// A connection the endpoint can serve: a Unix or TCP stream.
pub trait Conn: Read + Write + AsRawFd + Send + Sized + 'static {
    fn split(&self) -> std::io::Result<Self>;
    fn read_timeout(&self, timeout: Option<Duration>) -> std::io::Result<()>;
    fn write_timeout(&self, timeout: Option<Duration>) -> std::io::Result<()>;
    fn nonblocking(&self) -> std::io::Result<()>;
    /// Close both ways (a thread blocked reading it sees the end).
    fn close(&self);
    /// Why the peer may not be served (its pid and the reason), checked when it connects.
    fn refused_peer(&self, home: &Home) -> Option<(i32, String)>;
}

macro_rules! conn {
    ($t:ty, $refused:expr) => {
        impl Conn for $t {
            fn split(&self) -> std::io::Result<Self> {
                self.try_clone()
            }
            fn read_timeout(&self, timeout: Option<Duration>) -> std::io::Result<()> {
                self.set_read_timeout(timeout)
            }
            fn write_timeout(&self, timeout: Option<Duration>) -> std::io::Result<()> {
                self.set_write_timeout(timeout)
            }
            fn nonblocking(&self) -> std::io::Result<()> {
                self.set_nonblocking(true)
            }
            fn close(&self) {
                let _ = self.shutdown(std::net::Shutdown::Both);
            }
            fn refused_peer(&self, home: &Home) -> Option<(i32, String)> {
                $refused(self, home)
            }
        }
    };
}
conn!(std::os::unix::net::UnixStream, worker_peer);
// A TCP peer has no credentials to ask the kernel for: the bearer token alone guards it, and
// the token is out of a confined worker's reach.
conn!(std::net::TcpStream, |_: &std::net::TcpStream, _: &Home| None);

/// Why the process at the other end of a Unix connection is not served: it runs a worker's
/// code for this home ([`crate::worker::peer::worker_process`]: a worker, anything it started,
/// a package's compaction or notes command), or it cannot be told apart from one (no credentials, a pid not visible here, or
/// gone before it could be looked at — a worker could connect and hand the socket on). The
/// peer is pinned by a pidfd while it is looked at, so a reused pid is never mistaken for it.
fn worker_peer(conn: &std::os::unix::net::UnixStream, home: &Home) -> Option<(i32, String)> {
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

/// Reads that all share one deadline: a client dripping a byte at a time is cut off when the
/// request's time is up, not when one read has waited that long. While the connection is idle
/// its bytes are taken through its [`Ticket`] ([`Ticket::read_idle`]), so that shedding always
/// knows how much of the header has arrived; once claimed, they are read directly.
struct Deadline<'a, C: Conn> {
    conn: C,
    until: Instant,
    ticket: &'a Ticket<C>,
    claimed: bool,
}

impl<C: Conn> Read for Deadline<'_, C> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            let left = self.until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(std::io::ErrorKind::TimedOut.into());
            }
            if self.claimed {
                self.conn.read_timeout(Some(left))?;
                return self.conn.read(buf);
            }
            // Wait without holding anything; a shed connection is shut down, which wakes this.
            if !readable(&self.conn, left)? {
                continue;
            }
            match self.ticket.read_idle(&self.conn, buf)? {
                Idle::Read(n) => return Ok(n),
                Idle::Claimed => self.claimed = true,
                Idle::Nothing => {}
            }
        }
    }
}

/// Whether `conn` has something to read (bytes, an end, an error) within `timeout`.
fn readable(conn: &impl AsRawFd, timeout: Duration) -> std::io::Result<bool> {
    let mut p = libc::pollfd { fd: conn.as_raw_fd(), events: libc::POLLIN, revents: 0 };
    // Rounded up: a timeout under a millisecond must not become a busy loop.
    let ms = i32::try_from(timeout.as_micros().div_ceil(1000)).unwrap_or(i32::MAX);
    // SAFETY: one valid pollfd for the length of the call.
    match unsafe { libc::poll(&mut p, 1, ms) } {
        -1 => {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                Ok(false)
            } else {
                Err(e)
            }
        }
        n => Ok(n > 0),
    }
}

fn timed_out(e: &std::io::Error) -> bool {
    matches!(e.kind(), std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock)
}

/// The connections being served, in the order they were accepted (one [`Ticket`] each). Until
/// its client has sent its whole header, or it has been answered, a connection is *idle*: at
/// the cap, the oldest idle one is shed to make room for a newer connection, so a flood of
/// idle connections cannot keep a real request out. What a client has sent is what its thread
/// has read (counted in its slot) plus what still waits unread in the socket: a request whose
/// thread has not run yet is not idle. Claiming (header complete, or the first byte of an
/// answer) and shedding are decided under one lock: a connection is answered by its own
/// thread or shed, never both.
struct Table<C> {
    inner: Mutex<Slots<C>>,
}

struct Slots<C> {
    next: u64,
    /// By accept order; `None` once claimed.
    conns: std::collections::BTreeMap<u64, Option<IdleConn<C>>>,
}

/// An idle connection: a second handle on its stream, to shed it by, and how far the bytes
/// its thread has read have got towards the end of the header.
struct IdleConn<C> {
    conn: C,
    header: HeaderEnd,
}

/// How far a stream of bytes has got towards the blank line that ends an HTTP header, as
/// [`handle`] reads it (a line that is `\r\n` or `\n`, the first one included).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
enum HeaderEnd {
    #[default]
    LineStart,
    /// A `\r` at the start of a line.
    Cr,
    InLine,
    Reached,
}

impl HeaderEnd {
    fn feed(self, bytes: &[u8]) -> HeaderEnd {
        let mut state = self;
        for b in bytes {
            state = match (state, b) {
                (HeaderEnd::Reached, _) | (HeaderEnd::LineStart | HeaderEnd::Cr, b'\n') => return HeaderEnd::Reached,
                (HeaderEnd::LineStart, b'\r') => HeaderEnd::Cr,
                (_, b'\n') => HeaderEnd::LineStart,
                _ => HeaderEnd::InLine,
            };
        }
        state
    }
}

/// The bytes waiting unread on `conn` (up to a header's limit), without taking them.
fn unread(conn: &impl AsRawFd) -> Vec<u8> {
    use nix::sys::socket::{recv, MsgFlags};
    let mut buf = vec![0; MAX_HEADERS + 1];
    let n = recv(conn.as_raw_fd(), &mut buf, MsgFlags::MSG_PEEK | MsgFlags::MSG_DONTWAIT).unwrap_or(0);
    buf.truncate(n);
    buf
}

/// What a read of an idle connection found.
enum Idle {
    /// Bytes (or, with 0, the end: the client closed, or the connection was shed).
    Read(usize),
    /// Claimed meanwhile: read it directly from now on.
    Claimed,
    /// Nothing to read after all.
    Nothing,
}

impl<C: Conn> Table<C> {
    fn new() -> Arc<Self> {
        Arc::new(Table { inner: Mutex::new(Slots { next: 0, conns: Default::default() }) })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Slots<C>> {
        self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Take a slot for `conn`, shedding the oldest idle connection if every slot is taken (one
    /// whose whole header is found waiting unread is claimed instead: its client is done).
    /// `None`: the cap is reached and nothing is idle.
    fn admit(self: &Arc<Self>, conn: &C, cap: usize) -> Option<Ticket<C>> {
        let shed = {
            let mut slots = self.lock();
            let shed = if slots.conns.len() >= cap {
                let mut oldest = None;
                for (seq, slot) in slots.conns.iter_mut() {
                    let Some(idle) = slot else { continue };
                    if idle.header.feed(&unread(&idle.conn)) == HeaderEnd::Reached {
                        *slot = None;
                        continue;
                    }
                    oldest = Some(*seq);
                    break;
                }
                slots.conns.remove(&oldest?).flatten().map(|idle| idle.conn)
            } else {
                None
            };
            let seq = slots.next;
            slots.next += 1;
            slots.conns.insert(seq, conn.split().ok().map(|conn| IdleConn { conn, header: HeaderEnd::default() }));
            (shed, Ticket { table: self.clone(), seq })
        };
        if let Some(old) = shed.0 {
            let body = json!({"error": format!(
                "busy: {cap} connections are being served (the cap); this one had not sent its request and made way for a newer one; try again shortly"
            )});
            send_now(&old, &response("503 Service Unavailable", "Retry-After: 1\r\n", &body));
            old.close();
        }
        Some(shed.1)
    }
}

/// One connection's slot, for as long as its thread serves it.
struct Ticket<C: Conn> {
    table: Arc<Table<C>>,
    seq: u64,
}

impl<C: Conn> Ticket<C> {
    /// Read what waits on the idle connection `conn` (without blocking), counting it towards
    /// the end of its header, which claims it. Under the table's lock: a byte is either still
    /// in the socket or counted in the slot whenever [`Table::admit`] looks. A shed connection
    /// reads as ended (it has been answered and closed).
    fn read_idle(&self, conn: &C, buf: &mut [u8]) -> std::io::Result<Idle> {
        use nix::sys::socket::{recv, MsgFlags};
        let mut slots = self.table.lock();
        let idle = match slots.conns.get_mut(&self.seq) {
            None => return Ok(Idle::Read(0)),
            Some(None) => return Ok(Idle::Claimed),
            Some(Some(idle)) => idle,
        };
        let n = match recv(conn.as_raw_fd(), buf, MsgFlags::MSG_DONTWAIT) {
            Ok(n) => n,
            Err(nix::errno::Errno::EAGAIN | nix::errno::Errno::EINTR) => return Ok(Idle::Nothing),
            Err(e) => return Err(e.into()),
        };
        idle.header = idle.header.feed(&buf[..n]);
        if idle.header == HeaderEnd::Reached {
            slots.conns.insert(self.seq, None);
        }
        Ok(Idle::Read(n))
    }

    /// No longer idle: from now on only this connection's thread answers it. `false` if it was
    /// shed already (then it must write nothing).
    fn claim(&self) -> bool {
        match self.table.lock().conns.get_mut(&self.seq) {
            Some(idle) => {
                *idle = None;
                true
            }
            None => false,
        }
    }
}

impl<C: Conn> Drop for Ticket<C> {
    fn drop(&mut self) {
        self.table.lock().conns.remove(&self.seq);
    }
}

/// A connection's writer that claims it ([`Ticket::claim`]) before its first byte: a shed
/// connection gets nothing from its own thread.
struct Claimed<'a, W, C: Conn> {
    w: W,
    ticket: &'a Ticket<C>,
    claimed: bool,
}

impl<W: Write, C: Conn> Write for Claimed<'_, W, C> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if !self.claimed {
            if !self.ticket.claim() {
                return Err(std::io::ErrorKind::BrokenPipe.into());
            }
            self.claimed = true;
        }
        self.w.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.w.flush()
    }
}

/// Serve connections forever, a thread each, at most `limits.max_connections` at once. At the
/// cap a new connection takes the slot of the oldest one that has not yet sent its header
/// (that one is answered `503` and closed); if every slot is serving a request, the new one is
/// answered `503` at once (never read, never waited on) and closed, while those in flight go
/// on. On a Unix socket, a peer that is a worker of this home is refused (`403`). An accept
/// that fails (out of file descriptors, say) backs off instead of spinning, and is logged once
/// per kind of error.
pub fn serve<C: Conn>(incoming: impl Iterator<Item = std::io::Result<C>>, ep: Endpoint, needs_token: bool) {
    let table = Table::new();
    let mut last_error: Option<std::io::ErrorKind> = None;
    for conn in incoming {
        let conn = match conn {
            Ok(c) => {
                last_error = None;
                c
            }
            Err(e) => {
                if last_error != Some(e.kind()) {
                    tracing::warn!(error = %e, "the endpoint cannot accept a connection; backing off");
                    last_error = Some(e.kind());
                }
                std::thread::sleep(Duration::from_millis(100));
                continue;
            }
        };
        let limits = ep.limits;
        let Some(ticket) = table.admit(&conn, limits.max_connections) else {
            refuse_busy(conn, limits.max_connections);
            continue;
        };
        let ep = ep.clone();
        let spawned = std::thread::Builder::new().name("rpc-conn".into()).spawn(move || {
            let _ = conn.write_timeout(Some(WRITE_TIMEOUT));
            let refused = conn.refused_peer(&ep.home);
            if let Some((pid, why)) = &refused {
                log_refusal(*pid, why);
            }
            if let Ok(w) = conn.split() {
                let r = BufReader::new(Deadline { conn, until: Instant::now() + limits.request_timeout, ticket: &ticket, claimed: false });
                let mut w = Claimed { w, ticket: &ticket, claimed: false };
                let peer = Peer { needs_token, refused: refused.map(|(_, why)| why), claim: &|| ticket.claim() };
                handle(r, &mut w, &ep, &peer, limits.request_timeout);
            }
        });
        if let Err(e) = spawned {
            // The closure (connection and ticket) is dropped: the client sees the close.
            tracing::warn!(error = %e, "the endpoint cannot start a thread for a connection");
        }
    }
}

/// Refusals logged per minute at most: a worker that keeps connecting must not fill the log.
const REFUSALS_LOGGED_PER_MINUTE: u32 = 20;

/// Log a refused peer (its pid and why), at most [`REFUSALS_LOGGED_PER_MINUTE`] a minute; the
/// next minute's first refusal says how many were not logged.
fn log_refusal(pid: i32, why: &str) {
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

/// What the reader knows of the connection before its request: whether it needs the token,
/// whether its peer is refused, and how to claim it once its header is complete.
struct Peer<'a> {
    needs_token: bool,
    refused: Option<String>,
    claim: &'a dyn Fn() -> bool,
}

/// Over the cap: a `503` written without ever blocking the accept loop, then closed.
fn refuse_busy<C: Conn>(mut conn: C, cap: usize) {
    if conn.nonblocking().is_err() {
        return;
    }
    // Whatever the client already sent is read first, so that closing does not reset the
    // connection before it sees the answer.
    let mut sink = [0u8; 4096];
    for _ in 0..4 {
        match conn.read(&mut sink) {
            Ok(n) if n > 0 => {}
            _ => break,
        }
    }
    let body = json!({"error": format!("busy: {cap} connections are being served (the cap); try again shortly")});
    send_now(&conn, &response("503 Service Unavailable", "Retry-After: 1\r\n", &body));
}

/// Write a whole small response in one non-blocking send, or nothing: a peer whose buffer is
/// full gets no answer rather than a truncated one (the kernel takes a small write on an
/// empty socket whole).
fn send_now(conn: &impl AsRawFd, bytes: &[u8]) {
    use nix::sys::socket::{send, MsgFlags};
    let _ = send(conn.as_raw_fd(), bytes, MsgFlags::MSG_DONTWAIT | MsgFlags::MSG_NOSIGNAL);
}

/// A complete HTTP response with a JSON body, as one buffer.
fn response(status: &str, extra_headers: &str, body: &Json) -> Vec<u8> {
    let body = serde_json::to_string(body).unwrap_or_default();
    format!(
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{extra_headers}Connection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

fn respond(w: &mut impl Write, status: &str, body: &Json) {
    // One buffer, one write: the status line never goes out alone.
    let _ = w.write_all(&response(status, "", body));
    let _ = w.flush();
}

fn rpc_error(id: &Json, code: i64, message: impl Into<String>) -> Json {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message.into()}})
}

/// Read one HTTP request and answer it. The bearer token is checked the moment its header
/// line arrives (and a request without one is refused at the end of the headers), and a
/// refused peer is answered `403` at the end of its headers: nothing more of an unauthorised
/// request is read.
fn handle(mut r: impl BufRead, w: &mut impl Write, ep: &Endpoint, peer: &Peer<'_>, timeout: Duration) {
    let needs_token = peer.needs_token;
    let too_slow = |w: &mut _| {
        let msg = format!("the request was not complete within {} (request timeout)", humantime::format_duration(timeout));
        respond(w, "408 Request Timeout", &json!({"error": msg}))
    };
    let unauthorized =
        |w: &mut _| respond(w, "401 Unauthorized", &json!({"error": "missing or wrong bearer token (see $GUILD_HALL_HOME/token)"}));
    let expected = ep.token.as_deref().map(|t| format!("Bearer {t}"));
    let mut head_len = 0;
    let mut request_line = None;
    let mut length = None;
    let mut authorized = !needs_token;
    loop {
        let mut line = String::new();
        match r.by_ref().take((MAX_HEADERS - head_len.min(MAX_HEADERS)) as u64 + 1).read_line(&mut line) {
            Ok(0) => return,
            Err(e) if timed_out(&e) => return too_slow(w),
            Err(_) => return,
            Ok(_) => {}
        }
        if line == "\r\n" || line == "\n" {
            // A whole header: no longer a connection that may be shed to make room.
            if !(peer.claim)() {
                return;
            }
            break;
        }
        head_len += line.len();
        if head_len > MAX_HEADERS {
            return respond(w, "431 Request Header Fields Too Large", &json!({"error": "headers too large"}));
        }
        let line = line.trim_end_matches(['\r', '\n']);
        if request_line.is_none() {
            request_line = Some(line.to_string());
            continue;
        }
        if let Some((k, v)) = line.split_once(':') {
            match k.trim().to_ascii_lowercase().as_str() {
                "content-length" => length = v.trim().parse::<usize>().ok(),
                "authorization" if needs_token => {
                    if expected.is_none() || Some(v.trim()) != expected.as_deref() {
                        return unauthorized(w);
                    }
                    authorized = true;
                }
                "transfer-encoding" => return respond(w, "411 Length Required", &json!({"error": "send a Content-Length body"})),
                _ => {}
            }
        }
    }
    if let Some(why) = &peer.refused {
        let msg = format!("forbidden: {why}; the processes of guild-hall's own attempts (its workers) may not use this endpoint");
        return respond(w, "403 Forbidden", &json!({"error": msg}));
    }
    let request_line = request_line.unwrap_or_default();
    let mut parts = request_line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    if target != "/mcp" {
        return respond(w, "404 Not Found", &json!({"error": "POST /mcp"}));
    }
    if method != "POST" {
        return respond(w, "405 Method Not Allowed", &json!({"error": "POST /mcp"}));
    }
    if !authorized {
        return unauthorized(w);
    }
    let Some(length) = length else {
        return respond(w, "411 Length Required", &json!({"error": "Content-Length required"}));
    };
    if length > MAX_BODY {
        return respond(w, "413 Payload Too Large", &json!({"error": format!("body over {MAX_BODY} bytes")}));
    }
    let mut body = vec![0; length];
    match r.read_exact(&mut body) {
        Ok(()) => {}
        Err(e) if timed_out(&e) => return too_slow(w),
        Err(_) => return respond(w, "400 Bad Request", &json!({"error": "body shorter than Content-Length"})),
    }
    if let Some(turn) = streamed_turn(&body) {
        return stream_turn(w, turn, ep);
    }
    match answer(&body, ep) {
        Some(reply) => respond(w, "200 OK", &reply),
        None => respond(w, "202 Accepted", &json!({})),
    }
}

/// The JSON-RPC reply to one request body (`None` for a notification).
pub fn answer(body: &[u8], ep: &Endpoint) -> Option<Json> {
    let req: Json = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => return Some(rpc_error(&Json::Null, -32700, format!("parse error: {e}"))),
    };
    let id = req.get("id").cloned().unwrap_or(Json::Null);
    let Some(method) = req.get("method").and_then(Json::as_str).filter(|_| req.get("jsonrpc") == Some(&json!("2.0"))) else {
        return Some(rpc_error(&id, -32600, "invalid request: expected {\"jsonrpc\": \"2.0\", \"method\": …}"));
    };
    let params = req.get("params").cloned().unwrap_or(json!({}));
    if !params.is_object() {
        return Some(rpc_error(&id, -32602, "params must be an object"));
    }
    let notification = req.get("id").is_none();
    let result = call(method, &params, ep);
    if notification {
        return None;
    }
    Some(match result {
        Ok(v) => json!({"jsonrpc": "2.0", "id": id, "result": v}),
        Err((code, msg)) => rpc_error(&id, code, msg),
    })
}

fn call(method: &str, params: &Json, ep: &Endpoint) -> Result<Json, (i64, String)> {
    match method {
        "initialize" => Ok(json!({
            "protocolVersion": params["protocolVersion"].as_str().unwrap_or("2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "guild-hall", "version": env!("CARGO_PKG_VERSION")},
        })),
        "notifications/initialized" | "ping" => Ok(json!({})),
        "tools/list" => Ok(json!({"tools": crate::tools::listing(&crate::tools::dispatcher::tools::<Dispatcher>())})),
        "tools/call" => {
            let name = params["name"].as_str().ok_or((-32602, "tools/call needs a tool name".to_string()))?;
            let mut args = params.get("arguments").cloned().unwrap_or(json!({}));
            // The project may be named beside the arguments, or among them.
            if let (Some(p), Json::Object(a)) = (params.get("project"), &mut args) {
                a.entry("project").or_insert(p.clone());
            }
            match dispatcher_call(name, args, ep) {
                Ok(v) => Ok(json!({"content": [{"type": "text", "text": v.to_string()}], "structuredContent": v, "isError": false})),
                Err((code, msg)) if code == -32601 || code == BAD_ARGUMENTS => Err((-32602, msg)),
                Err((_, msg)) => Ok(json!({"content": [{"type": "text", "text": msg}], "isError": true})),
            }
        }
        m if m.starts_with("meeting/") => meeting_call(&m["meeting/".len()..], params, ep),
        m if m.starts_with("worker/") => dispatcher_call(&m["worker/".len()..], params.clone(), ep).map_err(|(code, msg)| {
            // On the `worker/*` methods a refusal is invalid params too (REQ-WD-17).
            (if code == BAD_ARGUMENTS || code == REFUSED { -32602 } else { code }, msg)
        }),
        other => Err((-32601, format!("method not found: {other}"))),
    }
}

/// Internal codes telling the two kinds of invalid-params apart until a face maps them.
const BAD_ARGUMENTS: i64 = -32602;
const REFUSED: i64 = -1;

/// Run a dispatcher tool against the project the arguments name (`project`: name or path), or
/// the only one served.
fn dispatcher_call(name: &str, mut args: Json, ep: &Endpoint) -> Result<Json, (i64, String)> {
    let project = pick_project(&args, ep).map_err(|e| (-32602, format!("{e:#}")))?;
    if let Json::Object(a) = &mut args {
        a.remove("project");
    }
    let tools = crate::tools::dispatcher::tools();
    let tool = crate::tools::find(&tools, name).ok_or((-32601, format!("method not found: worker/{name}")))?;
    let d = Dispatcher { home: ep.home.clone(), project };
    match tool.call(&d, args) {
        Ok((v, _)) => Ok(v),
        Err(e @ ToolError::BadArguments(_)) => Err((BAD_ARGUMENTS, e.to_string())),
        Err(ToolError::Refused(m)) => Err((REFUSED, m)),
        Err(ToolError::Internal(e)) => Err((-32603, format!("{e:#}"))),
    }
}

fn pick_project(params: &Json, ep: &Endpoint) -> Result<Project> {
    let wanted = params.get("project").and_then(Json::as_str);
    let mut found = Vec::new();
    for dir in &ep.projects {
        let p = Project::open(dir)?;
        if wanted.is_none_or(|w| w == p.name || Path::new(w) == p.root) {
            found.push(p);
        }
    }
    match (found.len(), wanted) {
        (1, _) => Ok(found.remove(0)),
        (0, Some(w)) => bail!("unknown project {w:?}"),
        _ => bail!("several projects are served: name one with \"project\" (its name or path)"),
    }
}

/// A request whose reply is a streamed meeting turn: `meeting/send`, and `meeting/start` or
/// `meeting/accept` with a first `message`.
struct TurnRequest {
    id: Json,
    method: String,
    params: Json,
}

fn streamed_turn(body: &[u8]) -> Option<TurnRequest> {
    let req: Json = serde_json::from_slice(body).ok()?;
    let method = req.get("method")?.as_str()?;
    let params = req.get("params").cloned().unwrap_or(json!({}));
    let streams = method == "meeting/send" || (matches!(method, "meeting/start" | "meeting/accept") && params.get("message").is_some());
    (streams && req.get("jsonrpc") == Some(&json!("2.0")) && params.is_object()).then(|| TurnRequest {
        id: req.get("id").cloned().unwrap_or(Json::Null),
        method: method.to_string(),
        params,
    })
}

/// Answer with the turn's events as they happen: HTTP chunked, one JSON line per event (the
/// meeting events of DESIGN §10), then the JSON-RPC response as the last line. A client that
/// goes away interrupts the turn, not the meeting.
fn stream_turn(w: &mut impl Write, req: TurnRequest, ep: &Endpoint) {
    let _ =
        w.write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n");
    let _ = w.flush();
    let gone = std::sync::atomic::AtomicBool::new(false);
    let mut emit = |line: &Json| {
        let text = format!("{}\n", serde_json::to_string(line).unwrap_or_default());
        // Each chunk is one buffer, one write.
        if w.write_all(format!("{:x}\r\n{text}\r\n", text.len()).as_bytes()).and_then(|_| w.flush()).is_err() {
            gone.store(true, std::sync::atomic::Ordering::SeqCst);
        }
    };
    let result = meeting_turn(&req, ep, &gone, &mut emit);
    let last = match result {
        Ok(v) => json!({"jsonrpc": "2.0", "id": req.id, "result": v}),
        Err((code, msg)) => rpc_error(&req.id, code, msg),
    };
    emit(&last);
    let _ = w.write_all(b"0\r\n\r\n");
    let _ = w.flush();
}

fn meeting_turn(
    req: &TurnRequest,
    ep: &Endpoint,
    gone: &std::sync::atomic::AtomicBool,
    emit: &mut dyn FnMut(&Json),
) -> Result<Json, (i64, String)> {
    let project = pick_project(&req.params, ep).map_err(|e| (-32602, format!("{e:#}")))?;
    let refused = |e: anyhow::Error| (-32602, format!("{e:#}"));
    let message = req.params["message"].as_str().map(str::to_string);
    let (id, message) = match req.method.as_str() {
        "meeting/start" => {
            let m = crate::ops::meeting::start(&ep.home, &project, &new_meeting(&req.params)?).map_err(refused)?;
            (m.id, message.unwrap_or_default())
        }
        "meeting/accept" => {
            let id = param(&req.params, "id")?;
            let (_, opening) = crate::ops::meeting::accept(&ep.home, &project, &id, message.as_deref()).map_err(refused)?;
            (id, opening)
        }
        _ => (param(&req.params, "id")?, message.ok_or((-32602, "meeting/send needs a message".to_string()))?),
    };
    let turn =
        crate::ops::meeting::turn(&ep.home, &project, &id, &message, gone, &mut |e| emit(&serde_json::to_value(e).unwrap_or_default()))
            .map_err(refused)?;
    serde_json::to_value(&turn).map_err(|e| (-32603, e.to_string()))
}

fn param(params: &Json, key: &str) -> Result<String, (i64, String)> {
    params.get(key).and_then(Json::as_str).map(str::to_string).ok_or((-32602, format!("missing string parameter {key:?}")))
}

fn new_meeting(params: &Json) -> Result<crate::ops::meeting::NewMeeting, (i64, String)> {
    let text = |k: &str| params.get(k).and_then(Json::as_str).map(str::to_string);
    let references = match params.get("references") {
        None | Some(Json::Null) => Vec::new(),
        Some(Json::Array(items)) => items
            .iter()
            .map(|v| v.as_str().map(str::to_string).ok_or((-32602, "references must be paths".to_string())))
            .collect::<Result<_, _>>()?,
        Some(_) => return Err((-32602, "references must be a list of paths".into())),
    };
    Ok(crate::ops::meeting::NewMeeting {
        worker: param(params, "worker")?,
        title: text("title"),
        agenda: text("agenda"),
        references,
        id: text("id"),
        status: crate::artifact::MeetingStatus::Open,
        requested_by: None,
        body: text("message").unwrap_or_default(),
    })
}

/// `meeting/list|start|accept|decline|close` without a streamed turn.
fn meeting_call(method: &str, params: &Json, ep: &Endpoint) -> Result<Json, (i64, String)> {
    let project = pick_project(params, ep).map_err(|e| (-32602, format!("{e:#}")))?;
    let refused = |e: anyhow::Error| (-32602, format!("{e:#}"));
    let summary = |m: &crate::artifact::Meeting| {
        json!({"id": m.id, "status": m.effective_status(), "worker": m.worker, "agenda": m.agenda, "requested_by": m.requested_by,
               "references": m.references, "linked_artifacts": m.linked_artifacts(), "session_id": m.session_id(),
               "reason": m.str_field("reason"), "notes": m.str_field("notes")})
    };
    match method {
        "list" => {
            let mut out = Vec::new();
            for path in crate::artifact::paths(&project.meetings_dir()).map_err(refused)? {
                let Some(id) = path.file_stem().and_then(|s| s.to_str()) else { continue };
                if let Ok(m) = crate::meeting::observe::load(&project, id) {
                    out.push(summary(&m));
                }
            }
            Ok(json!({"meetings": out}))
        }
        "start" => crate::ops::meeting::start(&ep.home, &project, &new_meeting(params)?).map(|m| summary(&m)).map_err(refused),
        "accept" => crate::ops::meeting::accept(&ep.home, &project, &param(params, "id")?, None).map(|(m, _)| summary(&m)).map_err(refused),
        "decline" => crate::ops::meeting::decline(&ep.home, &project, &param(params, "id")?, params["reason"].as_str())
            .map(|m| summary(&m))
            .map_err(refused),
        "close" => crate::ops::meeting::close(&ep.home, &project, &param(params, "id")?)
            .map(|(m, closed)| {
                let mut v = summary(&m);
                v["closed"] = json!(closed);
                v
            })
            .map_err(refused),
        other => Err((-32601, format!("method not found: meeting/{other}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixStream;

    const HEADER: &[u8] = b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n";

    /// `n` connections admitted under `cap`: (client end, server end, ticket) each.
    fn admitted(table: &Arc<Table<UnixStream>>, n: usize, cap: usize) -> Vec<(UnixStream, UnixStream, Ticket<UnixStream>)> {
        (0..n)
            .map(|_| {
                let (client, server) = UnixStream::pair().expect("pair");
                let ticket = table.admit(&server, cap).expect("a slot");
                (client, server, ticket)
            })
            .collect()
    }

    /// What the server has written to `client` and closed (the whole of it), or `None` if it
    /// has said nothing yet.
    fn said(client: &mut UnixStream) -> Option<String> {
        client.set_nonblocking(true).expect("nonblocking");
        let mut first = [0u8; 1];
        match client.read(&mut first) {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return None,
            Ok(0) => return Some(String::new()),
            r => {
                r.expect("read");
            }
        }
        client.set_nonblocking(false).expect("blocking");
        client.set_read_timeout(Some(Duration::from_secs(60))).expect("timeout");
        let mut rest = String::new();
        client.read_to_string(&mut rest).expect("the rest");
        Some(format!("{}{rest}", first[0] as char))
    }

    fn shed(reply: &Option<String>) -> bool {
        reply.as_deref().is_some_and(|r| r.starts_with("HTTP/1.1 503 Service Unavailable\r\n") && r.contains("made way for a newer one"))
    }

    #[test]
    fn the_end_of_a_header_is_found_however_the_bytes_are_split() {
        assert_eq!(HeaderEnd::default().feed(HEADER), HeaderEnd::Reached);
        for at in 0..HEADER.len() {
            assert_eq!(HeaderEnd::default().feed(&HEADER[..at]).feed(&HEADER[at..]), HeaderEnd::Reached, "split at {at}");
            assert_ne!(HeaderEnd::default().feed(&HEADER[..at]), HeaderEnd::Reached, "{at} bytes are not a whole header");
        }
        assert_eq!(HeaderEnd::default().feed(b"GET / HTTP/1.1\nA: b\n\n"), HeaderEnd::Reached);
        assert_eq!(HeaderEnd::default().feed(b"\r\n"), HeaderEnd::Reached, "an empty first line ends it, as handle reads it");
        assert_eq!(HeaderEnd::default().feed(b"GET / HTTP/1.1\r\nA: \r\r\n"), HeaderEnd::LineStart, "\\r\\r\\n is no blank line");
    }

    /// The bug behind the burst test failing under load: a client that sent its whole header
    /// before the burst, but whose thread had not yet run to read it, was taken for idle and
    /// shed. Here no thread reads at all: the header waits unread in the socket.
    #[test]
    fn a_header_waiting_unread_is_never_shed() {
        let table = Table::new();
        let mut conns = admitted(&table, 3, 3);
        conns[0].0.write_all(HEADER).expect("header");
        let (_client, newest) = UnixStream::pair().expect("pair");
        let _ticket = table.admit(&newest, 3).expect("a slot, made by shedding an idle one");
        assert_eq!(said(&mut conns[0].0), None, "the request whose header had arrived was answered by the shedder");
        assert!(shed(&said(&mut conns[1].0)), "the oldest idle connection made way");
        assert_eq!(said(&mut conns[2].0), None);
        assert!(conns[0].2.claim(), "its own thread still answers it");
        // Every slot now serves a request or is newer than the idle one left: the next
        // connection sheds that one, and then finds nothing idle.
        let (_c, s) = UnixStream::pair().expect("pair");
        let _t = table.admit(&s, 3).expect("a slot");
        assert!(shed(&said(&mut conns[2].0)));
    }

    /// A header partly read by its thread and completed by bytes still unread counts as
    /// whole; a header partly read and no more is idle.
    #[test]
    fn a_header_read_in_part_counts_with_what_is_still_unread() {
        let table = Table::new();
        let mut conns = admitted(&table, 2, 2);
        let split = 20;
        for (client, _, _) in &mut conns {
            client.write_all(&HEADER[..split]).expect("part of a header");
        }
        for (_, server, ticket) in &conns {
            let mut r =
                Deadline { conn: server.split().expect("split"), until: Instant::now() + Duration::from_secs(60), ticket, claimed: false };
            let mut buf = [0u8; 64];
            assert_eq!(r.read(&mut buf).expect("read"), split);
        }
        // The first one's header ends with bytes its thread has not read.
        conns[0].0.write_all(&HEADER[split..]).expect("the rest");
        let (_client, newest) = UnixStream::pair().expect("pair");
        let _ticket = table.admit(&newest, 2).expect("a slot");
        assert_eq!(said(&mut conns[0].0), None);
        assert!(shed(&said(&mut conns[1].0)), "a header never finished is idle");
    }

    /// A shed connection's thread, waiting for its request, ends at once: it holds neither a
    /// thread nor a descriptor for the rest of the request timeout.
    #[test]
    fn a_shed_connection_stops_waiting_at_once() {
        let table = Table::new();
        let (client, server) = UnixStream::pair().expect("pair");
        let ticket = table.admit(&server, 1).expect("a slot");
        let (done, ended) = std::sync::mpsc::channel();
        let reader = std::thread::spawn(move || {
            let mut r = Deadline { conn: server, until: Instant::now() + Duration::from_secs(600), ticket: &ticket, claimed: false };
            let _ = done.send(r.read(&mut [0u8; 64]).map_err(|e| e.kind()));
        });
        // Most likely it waits for bytes by now; if not, its first read finds it shed: either
        // way the read ends, with nothing, long before its 10 minutes.
        let (_c, s) = UnixStream::pair().expect("pair");
        std::thread::sleep(Duration::from_millis(50));
        let _t = table.admit(&s, 1).expect("a slot");
        assert_eq!(ended.recv_timeout(Duration::from_secs(60)).expect("the read ended"), Ok(0));
        reader.join().expect("join");
        drop(client);
    }
}
