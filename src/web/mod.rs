//! `guild-hall serve`: the web face — the board, a commission's page (and W2's meeting and plan
//! pages) in a browser, live through server-sent events, acting through the same catalogues as
//! the CLI, beside a reconciler run as `watch` runs it (or the one already running).
//!
//! # Parts
//! [`http`] (a small HTTP/1.1: one request per connection, limits, event streams), [`auth`]
//! (the token, the cookie, `Host` and `Origin`, the worker peer rule), [`hub`] (the one change
//! stream: the board's file watcher, classified), [`html`] (escaping and the one layout),
//! [`context`] (the [`Server`] every request is served from, the [`Live`] trait), [`api`]
//! (`POST /api/<catalogue>/<operation>`), and one module per page: [`board`] (`/`),
//! [`commission`] (`/commissions/<id>`). Assets are in `assets/`, inside the binary. This file
//! starts the server and routes; a page never imports it (its context is [`context`]).
//!
//! # Adding a page
//! 1. A module (`web/<name>.rs`, listed in docs/hacking.md) with
//!    `pub(crate) fn page_of(server: &Server, req: &Request, ...) -> Response`
//!    that renders with [`html::page`] (every outside text through [`html::text`] or
//!    [`html::line`]) and passes `("view", "<name>")` and `("generation", hub generation)` as the
//!    body's data, plus whatever its stream needs (`id`, `project`).
//! 2. A route in [`Server::route`] (`GET /<kind>s/<id>`).
//! 3. If it is live: a [`Live`] for its view in [`live_view`]; `app.js` opens
//!    `/events?view=<name>&since=<generation>&…` (the body's `data-*` become the query) and
//!    puts each event's data into the element whose id is the event's name (`innerHTML`,
//!    keeping what is typed in `[data-keep]` fields), or, for an event named `append:<id>`,
//!    appends it. Events are HTML the server escaped.
//! 4. Actions: a `<form data-api="<catalogue>/<operation>" data-args='{"jobId":"…"}'>`; the
//!    script posts its named fields over `data-args` as JSON to `/api/…` and shows the answer
//!    in `#action-result`. No logic of its own: the catalogue's operation decides.
//!
//! # Test hooks (for the browser tests; stable)
//! - every page: `body[data-view]`, `body[data-live="on"]` once its event stream is open
//!   (`"off"` before, `"lost"` while it reconnects); `#live` says so in words;
//!   `#action-result` (`data-testid="action-result"`, `data-state="ok|error"`) after an action.
//! - board: `#board`; `[data-testid=reconciler]` ("Reconciled by this server" once its
//!   reconciler holds the project); columns `[data-testid=needs-you|running|rest]`; each item
//!   `li[data-testid=item][data-kind][data-id][data-status]` with `[data-testid=item-title]`
//!   and `[data-testid=item-status]`; filters `#filter-text`, `#filter-status`, `#filter-kind`.
//! - commission, top to bottom: `#commission-live` (re-sent after a change:
//!   `[data-testid=status]`, `#cancel`, `#questions` with `form[data-testid=answer-form]`
//!   (`textarea[name=text]`, a submit button), `#usage`); `#review` (re-sent when the branch
//!   moves or it enters or leaves review: `#diff` with `tr[data-testid=diff-line][data-path]
//!   [data-line]`, in each a `button[data-testid=comment-line]` that opens a line comment
//!   (`textarea.line-comment`); in review `#approve`, `#revise-form` (`textarea[name=message]`,
//!   submit `#revise`), `#reject-form` (`textarea[name=message]`, submit `#reject`)); `#log`
//!   (`data-testid=log`, followed); `#commission-record` (re-sent after a change:
//!   `#frontmatter`, `#timeline`). Cancel and reject ask `window.confirm` first (a browser test
//!   accepts the dialog).

pub(crate) mod api;
pub(crate) mod auth;
pub(crate) mod board;
pub(crate) mod commission;
pub(crate) mod context;
pub(crate) mod html;
pub(crate) mod http;
pub(crate) mod hub;
pub(crate) mod meeting;
pub(crate) mod plan;

use std::io::Write;
use std::net::{SocketAddr, TcpListener};
use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::sync::mpsc::RecvTimeoutError;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, bail, Result};

use crate::config::{Home, Project};
use auth::{Guard, Verdict};
use context::{not_found, Live, Server};
use http::{BadRequest, EventStream, Request, Response, Slots};
use hub::{Batch, Hub};

/// How `serve` runs.
#[derive(Debug, Clone)]
pub struct Options {
    /// The loopback address to listen on (`127.0.0.1:0`: a free port).
    pub listen: Option<String>,
    /// A Unix socket instead (mode 0600), for a proxy in front.
    pub socket: Option<PathBuf>,
    /// How the reconciler runs, for the projects no other process reconciles.
    pub watch: crate::service::watch::WatchOptions,
}

/// Serve the projects in `dirs` (every registered one if empty) until SIGINT or SIGTERM:
/// a reconciler for those no other process reconciles, and the web face. `say_url` is given
/// the URL to open (with its token) once the face listens.
pub fn serve(home: &Home, dirs: &[PathBuf], opts: &Options, say_url: impl FnOnce(&str)) -> Result<()> {
    let dirs: Vec<PathBuf> = if dirs.is_empty() { crate::board::registered(home)? } else { dirs.to_vec() };
    if dirs.is_empty() {
        bail!("no projects to serve: name them (`guild-hall serve -C DIR`) or register them with `guild-hall init`");
    }
    let mut projects = Vec::new();
    for d in &dirs {
        let p = Project::open(d)?;
        crate::ops::ensure_set_up(&p)?;
        projects.push(p);
    }
    let hub = Arc::new(Hub::default());
    let _watcher = hub::start(home, &projects, hub.clone())?;
    let token = auth::new_token();
    let slots = Pools::new(http::REQUEST_TIMEOUT);
    // The signals first: a stop that comes while the rest starts is not lost.
    let mut signals = signal_hook::iterator::Signals::new([signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM])?;
    match &opts.socket {
        Some(path) => {
            let listener = crate::service::rpc::transport::bind_socket(path)?;
            let server = Arc::new(Server { home: home.clone(), projects: projects.clone(), hub, guard: Guard::new(token.clone(), None) });
            say_url(&format!("http+unix://{}/?token={token}", http::encode(&path.to_string_lossy())));
            std::thread::Builder::new().name("web-socket".into()).spawn(move || accept_unix(listener, server, slots))?;
        }
        None => {
            let addr = opts.listen.as_deref().unwrap_or("127.0.0.1:0");
            let listener = crate::service::rpc::transport::bind_loopback(addr)?;
            let local = listener.local_addr()?;
            let server =
                Arc::new(Server { home: home.clone(), projects: projects.clone(), hub, guard: Guard::new(token.clone(), Some(local)) });
            let host = match local {
                SocketAddr::V4(a) => a.to_string(),
                SocketAddr::V6(a) => format!("[{}]:{}", a.ip(), a.port()),
            };
            say_url(&format!("http://{host}/?token={token}"));
            std::thread::Builder::new().name("web-tcp".into()).spawn(move || accept_tcp(listener, server, slots))?;
        }
    }
    let reconciler = start_reconciler(home, &projects, &opts.watch)?;
    // Until a stop; the reconciler (its own handlers saw the signal too) ends its pass first.
    let _ = signals.forever().next();
    if let Some(r) = reconciler {
        let _ = r.join();
    }
    Ok(())
}

/// A `watch` in a thread of this process for the projects whose lock no one holds; the others
/// are left to whoever reconciles them.
fn start_reconciler(
    home: &Home,
    projects: &[Project],
    opts: &crate::service::watch::WatchOptions,
) -> Result<Option<std::thread::JoinHandle<()>>> {
    let mut free = Vec::new();
    for p in projects {
        match crate::reconcile::lock_holder(home, p) {
            Some(who) => tracing::info!(project = %p.name, holder = %who, "reconciled by another process: serving its face only"),
            None => free.push(p.root.clone()),
        }
    }
    if free.is_empty() {
        return Ok(None);
    }
    let (home, opts) = (home.clone(), opts.clone());
    let handle = std::thread::Builder::new().name("reconciler".into()).spawn(move || {
        if let Err(e) = crate::service::watch::watch(&home, &free, &opts) {
            // Another process took a lock meanwhile, or the watcher failed: the face goes on.
            tracing::error!(error = %format!("{e:#}"), "the reconciler stopped; the web face goes on serving");
        }
    })?;
    Ok(Some(handle))
}

/// The connections served at once: a person's, and apart the few of refused peers (a worker's
/// processes) being answered their 403 — so however many connections a worker opens, it never
/// holds a person's slot longer than the look at who it is, nor is read for long.
#[derive(Clone)]
struct Pools {
    served: Slots,
    refused: Slots,
    /// How long a person's request may take to arrive.
    request_timeout: Duration,
}

/// Refused peers' connections answered at once; past them one is closed unanswered.
const MAX_REFUSED: usize = 8;

/// How long a refused peer's request is read for: enough for one it sent to arrive (closing a
/// socket with its request unread resets it, and the 403 would not be seen), too short to hold
/// a place.
const REFUSED_READ: Duration = Duration::from_millis(500);

impl Pools {
    fn new(request_timeout: Duration) -> Pools {
        Pools { served: Slots::new(http::MAX_CONNECTIONS), refused: Slots::new(MAX_REFUSED), request_timeout }
    }
}

fn accept_tcp(listener: TcpListener, server: Arc<Server>, pools: Pools) {
    let refused = |conn: &std::net::TcpStream, server: &Server| match (conn.local_addr(), conn.peer_addr()) {
        (Ok(ours), Ok(peer)) => auth::worker_peer_tcp(&server.home, ours, peer),
        _ => Some("the connection's addresses cannot be read".to_string()),
    };
    let timeout = |conn: &std::net::TcpStream| conn.set_write_timeout(Some(http::STREAM_WRITE_TIMEOUT));
    accept(listener.incoming(), server, pools, refused, http::read_request, timeout);
}

fn accept_unix(listener: UnixListener, server: Arc<Server>, pools: Pools) {
    let refused = |conn: &std::os::unix::net::UnixStream, server: &Server| {
        crate::service::rpc::auth::worker_peer(conn, &server.home).map(|(_, why)| why)
    };
    let timeout = |conn: &std::os::unix::net::UnixStream| conn.set_write_timeout(Some(http::STREAM_WRITE_TIMEOUT));
    accept(listener.incoming(), server, pools, refused, http::read_request_unix, timeout);
}

/// One accept loop for either listener: a slot per connection (503 past them), a thread for
/// each, a worker's connection refused with a 403 from the refused peers' pool ([`Pools`]).
fn accept<C: Write + Send + 'static>(
    incoming: impl Iterator<Item = std::io::Result<C>>,
    server: Arc<Server>,
    pools: Pools,
    refused: fn(&C, &Server) -> Option<String>,
    read: fn(&C, Duration) -> Result<Request, http::BadRequest>,
    write_timeout: fn(&C) -> std::io::Result<()>,
) {
    for conn in incoming {
        let Ok(mut conn) = conn else { continue };
        let Some(slot) = pools.served.take() else {
            let _ = Response::text(503, "too many connections").write_to(&mut conn);
            continue;
        };
        let (server, pools) = (server.clone(), pools.clone());
        let spawned = std::thread::Builder::new().name("web-conn".into()).spawn(move || {
            let refused = refused(&conn, &server);
            let (_slot, within) = match refused {
                None => (slot, pools.request_timeout),
                Some(_) => {
                    drop(slot);
                    // Past the refused pool: closed unanswered (a worker is owed no answer).
                    let Some(slot) = pools.refused.take() else { return };
                    (slot, REFUSED_READ)
                }
            };
            // Read even when refused: closing a socket with its request unread resets it, and
            // the client would never see the 403.
            let req = read(&conn, within);
            let _ = write_timeout(&conn);
            serve_one(&server, req, refused, &mut conn);
        });
        if let Err(e) = spawned {
            tracing::warn!(error = %e, "web: cannot start a connection's thread");
        }
    }
}

/// Answer one connection: refused (a worker's process), or its request routed.
fn serve_one<W: Write>(server: &Server, req: Result<Request, BadRequest>, refused: Option<String>, w: &mut W) {
    if let Some(why) = refused {
        crate::service::rpc::auth::log_refusal(0, &why);
        let _ = Response::text(403, &format!("forbidden: {why}; guild-hall's workers may not use its web face")).write_to(w);
        return;
    }
    let req = match req {
        Ok(r) => r,
        Err(BadRequest::Gone) => return,
        Err(BadRequest::Status(status, why)) => {
            let _ = Response::text(status, why).write_to(w);
            return;
        }
    };
    match server.guard.judge(&req) {
        Verdict::Allowed => {}
        Verdict::SetCookie => {
            // The same place without the token: it is not kept in the history or shown again.
            let rest: Vec<String> =
                req.query.iter().filter(|(k, _)| *k != "token").map(|(k, v)| format!("{}={}", http::encode(k), http::encode(v))).collect();
            let path = req.path.split('/').map(http::encode).collect::<Vec<_>>().join("/");
            let to = if rest.is_empty() { path } else { format!("{path}?{}", rest.join("&")) };
            let _ = Response::redirect(&to).with("Set-Cookie", server.guard.set_cookie()).write_to(w);
            return;
        }
        Verdict::Unauthorized => {
            let _ = Response::text(401, "open the URL `guild-hall serve` printed first (it carries the token)").write_to(w);
            return;
        }
        Verdict::Forbidden(why) => {
            let _ = Response::text(403, why).write_to(w);
            return;
        }
    }
    if req.method == "GET" && req.path == "/events" {
        return events(server, &req, w);
    }
    let response = server.route(&req);
    let _ = response.write_to(w);
}

impl Server {
    /// The response to an authorised request (but `/events`, a stream of its own).
    fn route(&self, req: &Request) -> Response {
        let segments: Vec<&str> = req.path.trim_start_matches('/').split('/').collect();
        match (req.method.as_str(), segments.as_slice()) {
            ("GET", [""]) => board::page_of(self, req),
            ("GET", ["assets", "style.css"]) => Response::new(200, "text/css; charset=utf-8", html::STYLE),
            ("GET", ["assets", "app.js"]) => Response::new(200, "text/javascript; charset=utf-8", html::SCRIPT),
            ("GET", ["commissions", id]) => match self.project_of(req, Some(id)) {
                Ok(p) => commission::page_of(self, p, id),
                Err(e) => not_found(&e),
            },
            ("GET", ["meetings", id]) => match self.project_of(req, None) {
                Ok(p) => meeting::page_of(self, p, id),
                Err(e) => not_found(&e),
            },
            ("GET", ["plans", id]) => match self.project_of(req, None) {
                Ok(p) => plan::page_of(self, p, id),
                Err(e) => not_found(&e),
            },
            ("POST", ["api", catalogue, operation]) => match self.project_of(req, None) {
                Ok(p) => api::call(self, p, catalogue, operation, &req.body),
                Err(e) => Response::json(404, &serde_json::json!({"error": format!("{e:#}"), "kind": "not_found"})),
            },
            (_, ["api", _, _]) => Response::text(405, "POST an operation's arguments as JSON").with("Allow", "POST".into()),
            _ => not_found(&anyhow!("no page {}", req.path)),
        }
    }
}

/// The [`Live`] of the view a stream asks for.
fn live_view(server: &Server, req: &Request) -> Result<Box<dyn Live>> {
    // An id becomes paths (its file, its state dir): checked as the pages check theirs.
    if let Some(id) = req.param("id") {
        crate::artifact::ids::validate_id(id).map_err(|e| anyhow!("id={id:?}: {e}"))?;
    }
    match req.param("view") {
        Some("board") => Ok(Box::new(board::Live::new(board::Filter::of(req)))),
        Some("commission") => {
            let id = req.param("id").ok_or_else(|| anyhow!("view=commission needs id="))?;
            let project = server.project_of(req, Some(id))?.clone();
            Ok(Box::new(commission::Live::new(project, id, req)))
        }
        Some("meeting") => {
            let id = req.param("id").ok_or_else(|| anyhow!("view=meeting needs id="))?;
            Ok(Box::new(meeting::Live::new(server.project_of(req, None)?.clone(), id)))
        }
        Some("plan") => {
            let id = req.param("id").ok_or_else(|| anyhow!("view=plan needs id="))?;
            Ok(Box::new(plan::Live::new(server.project_of(req, None)?.clone(), id, req)))
        }
        Some(other) => Err(anyhow!("no live view {other:?}")),
        None => Err(anyhow!("/events needs view=")),
    }
}

/// How long a stream may be silent: then a comment is sent (it finds a client gone).
const PING_EVERY: Duration = Duration::from_secs(15);

/// `GET /events?view=…&since=<generation>`: the view's events until the client goes.
fn events<W: Write>(server: &Server, req: &Request, w: &mut W) {
    let mut live = match live_view(server, req) {
        Ok(l) => l,
        Err(e) => {
            let _ = Response::text(400, &format!("{e:#}")).write_to(w);
            return;
        }
    };
    // Subscribed before the generation is compared: a batch is either counted or received.
    let rx = server.hub.subscribe();
    let Ok(mut stream) = EventStream::begin(w) else { return };
    let since: u64 = req.param("since").and_then(|s| s.parse().ok()).unwrap_or(0);
    let mut send = |name: &str, data: &str| stream.send(name, data);
    if send("hello", "").is_err() {
        return;
    }
    if (server.hub.generation() > since || req.param("since").is_none()) && live.after(server, None, &mut send).is_err() {
        return;
    }
    loop {
        match rx.recv_timeout(PING_EVERY) {
            Ok(first) => {
                let mut merged = Batch { paths: first.paths.clone(), changes: first.changes.clone(), turns: first.turns.clone() };
                for more in rx.try_iter() {
                    merged.paths.extend(more.paths.iter().cloned());
                    merged.changes.merge(more.changes.clone());
                    merged.turns.extend(more.turns.iter().cloned());
                }
                if live.after(server, Some(&merged), &mut send).is_err() {
                    return;
                }
            }
            Err(RecvTimeoutError::Timeout) => {
                if send("ping", "").is_err() {
                    return;
                }
            }
            Err(RecvTimeoutError::Disconnected) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::net::TcpStream;

    /// A listener on a free loopback port, its connections served by [`accept`] with `pools`,
    /// each one judged by `refused`.
    fn listen(server: &Arc<Server>, pools: &Pools, refused: fn(&TcpStream, &Server) -> Option<String>) -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (server, pools) = (server.clone(), pools.clone());
        let timeout = |c: &TcpStream| c.set_write_timeout(Some(http::STREAM_WRITE_TIMEOUT));
        std::thread::spawn(move || accept(listener.incoming(), server, pools, refused, http::read_request, timeout));
        addr
    }

    /// The status of a `GET /` sent to `addr`.
    fn status(addr: SocketAddr) -> String {
        let mut c = TcpStream::connect(addr).expect("connect");
        // Closed unanswered: no status.
        if write!(c, "GET / HTTP/1.1\r\nHost: {addr}\r\n\r\n").is_err() {
            return String::new();
        }
        let mut answer = String::new();
        let _ = c.read_to_string(&mut answer);
        answer.lines().next().unwrap_or("").to_string()
    }

    #[test]
    fn a_workers_idle_connections_never_hold_a_persons_place() {
        let dir = tempfile::tempdir().expect("tmp");
        let server = Arc::new(Server {
            home: Home { root: dir.path().to_path_buf() },
            projects: Vec::new(),
            hub: Arc::new(Hub::default()),
            guard: Guard::new(auth::new_token(), None),
        });
        // A person's request may take an hour to arrive here: a place held as long as that
        // would be held for the whole test.
        let pools = Pools::new(Duration::from_secs(3600));
        // One listener's peers are all a worker's, the other's all a person's; one set of places.
        let worker = listen(&server, &pools, |_, _| Some("a worker's process".into()));
        let person = listen(&server, &pools, |_, _| None);
        // More idle connections than there are places, never sending a byte, held open.
        let idle: Vec<TcpStream> = (0..http::MAX_CONNECTIONS + 20).map(|_| TcpStream::connect(worker).expect("connect")).collect();
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        let mut last = status(person);
        while !last.contains(" 401 ") && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
            last = status(person);
        }
        assert!(last.contains(" 401 "), "the person is answered (without the token: 401) while the worker's connections are open: {last}");
        // A refused peer that sends its request is told why, once the refused pool has room
        // (past it, a connection is closed unanswered).
        let mut refused = status(worker);
        while !refused.contains(" 403 ") && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
            refused = status(worker);
        }
        assert!(refused.contains(" 403 "), "a worker's request is refused with a 403: {refused}");
        drop(idle);
    }
}
