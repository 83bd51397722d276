//! Who the web face serves: a request with the server's token (in the URL once, then in a
//! cookie) and a `Host` of its own (no other site's name, so no DNS rebinding); a change (a
//! POST) besides with an `Origin` of its own (no other site's form or script); and never a
//! worker's process — the endpoint's peer rule ([`crate::worker::peer`]), its TCP peer found by
//! its socket in `/proc`.

use std::net::SocketAddr;

use crate::config::Home;

use super::http::Request;

/// The token of one run of the server: random, never written to disk; it is in the URL the
/// server prints first, and then in the cookie.
pub(crate) fn new_token() -> String {
    format!("{}{}", uuid::Uuid::new_v4().simple(), uuid::Uuid::new_v4().simple())
}

/// What guards a server: its token, the cookie's name (one per port: cookies are not kept
/// apart by port) and the host names it answers to.
#[derive(Debug, Clone)]
pub(crate) struct Guard {
    pub(crate) token: String,
    pub(crate) cookie: String,
    /// `127.0.0.1:PORT`, `localhost:PORT`, `[::1]:PORT`; none for a Unix socket (whatever
    /// proxy is in front names it: no browser reaches a socket by a name of its own).
    pub(crate) hosts: Vec<String>,
}

/// What a request may do.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Its cookie is the token.
    Allowed,
    /// The token is in its URL: set the cookie and send it on without the token.
    SetCookie,
    /// 401: no token, a wrong one.
    Unauthorized,
    /// 403: not addressed to this server (its `Host`), or a change from another origin.
    Forbidden(&'static str),
}

impl Guard {
    /// The guard of a server listening at `listening` (`None`: a Unix socket).
    pub(crate) fn new(token: String, listening: Option<SocketAddr>) -> Guard {
        let (cookie, hosts) = match listening {
            Some(at) => {
                let p = at.port();
                // The loopback names a browser uses, and the address it listens at (any of
                // 127.0.0.0/8, as `--listen` chose), as a URL writes it.
                let mut hosts = vec![format!("127.0.0.1:{p}"), format!("localhost:{p}"), format!("[::1]:{p}")];
                let own = match at {
                    SocketAddr::V4(a) => a.to_string(),
                    SocketAddr::V6(a) => format!("[{}]:{p}", a.ip()),
                };
                if !hosts.contains(&own) {
                    hosts.push(own);
                }
                (format!("guild_hall_{p}"), hosts)
            }
            None => ("guild_hall".to_string(), Vec::new()),
        };
        Guard { token, cookie, hosts }
    }

    /// The `Set-Cookie` value that lets a browser in: for this server's run only (no expiry,
    /// a session cookie), unreadable by scripts, never sent by another site's request.
    pub(crate) fn set_cookie(&self) -> String {
        format!("{}={}; Path=/; HttpOnly; SameSite=Strict", self.cookie, self.token)
    }

    pub(crate) fn judge(&self, req: &Request) -> Verdict {
        let host = req.header("host").unwrap_or("");
        if !self.hosts.is_empty() && !self.hosts.iter().any(|h| h.eq_ignore_ascii_case(host)) {
            return Verdict::Forbidden("the Host header names another server");
        }
        if let Some(t) = req.query.get("token") {
            return if same(t, &self.token) { Verdict::SetCookie } else { Verdict::Unauthorized };
        }
        if !req.cookie(&self.cookie).is_some_and(|c| same(c, &self.token)) {
            return Verdict::Unauthorized;
        }
        if req.method != "GET" && req.method != "HEAD" && !self.same_origin(req) {
            return Verdict::Forbidden("a change must come from this server's own pages (its Origin header)");
        }
        Verdict::Allowed
    }

    /// Whether a change came from a page of this server: its `Origin` is the `Host` it was
    /// sent to (which [`Guard::judge`] checked is ours). Browsers send `Origin` with every
    /// POST; a request without one is refused.
    fn same_origin(&self, req: &Request) -> bool {
        let host = req.header("host").unwrap_or("");
        req.header("origin")
            .and_then(|o| o.strip_prefix("http://").or_else(|| o.strip_prefix("https://")))
            .is_some_and(|o| !host.is_empty() && o.eq_ignore_ascii_case(host))
    }
}

/// Equal, in a time that does not depend on where they differ.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Why the process at the other end of a loopback TCP connection is not served: it runs a
/// worker's code for this home, or it cannot be found (another user's, another namespace's, or
/// gone already: a worker could connect and hand the socket on). Found as the endpoint's Unix
/// peer is, from the socket: its inode in `/proc/net/tcp{,6}` (local and remote swapped), then
/// the process holding it among this user's.
pub(crate) fn worker_peer_tcp(home: &Home, ours: SocketAddr, peer: SocketAddr) -> Option<String> {
    let Some(inode) = socket_inode(ours, peer) else {
        return Some(format!("the connecting socket ({peer}) is not this user's, or was gone before it could be checked"));
    };
    let Some(pid) = holder_of(inode) else {
        return Some(format!("no process of this user holds the connecting socket ({peer})"));
    };
    crate::worker::peer::worker_process(home, pid)
}

/// The inode of the socket whose local address is `peer` and remote `ours`, if it is this
/// user's.
fn socket_inode(ours: SocketAddr, peer: SocketAddr) -> Option<u64> {
    let uid = nix::unistd::getuid().as_raw();
    let (file, local, remote) = match (peer, ours) {
        (SocketAddr::V4(p), SocketAddr::V4(o)) => ("/proc/net/tcp", hex_v4(&p), hex_v4(&o)),
        (SocketAddr::V6(p), SocketAddr::V6(o)) => ("/proc/net/tcp6", hex_v6(&p), hex_v6(&o)),
        _ => return None,
    };
    let table = std::fs::read_to_string(file).ok()?;
    table.lines().skip(1).find_map(|l| {
        // `sl local rem st tx:rx tr:when retrnsmt uid timeout inode ...`
        let f: Vec<&str> = l.split_whitespace().collect();
        let matches = f.get(1)?.eq_ignore_ascii_case(&local) && f.get(2)?.eq_ignore_ascii_case(&remote);
        (matches && f.get(7)?.parse::<u32>().ok()? == uid).then(|| f.get(9)?.parse().ok()).flatten()
    })
}

/// An IPv4 socket address as `/proc/net/tcp` writes it: the address's 32 bits in host order,
/// then the port, in hex.
fn hex_v4(a: &std::net::SocketAddrV4) -> String {
    format!("{:08X}:{:04X}", u32::from_ne_bytes(a.ip().octets()), a.port())
}

/// An IPv6 socket address as `/proc/net/tcp6` writes it: four 32-bit words, each in host order.
fn hex_v6(a: &std::net::SocketAddrV6) -> String {
    let o = a.ip().octets();
    let words: String = o.chunks(4).map(|w| format!("{:08X}", u32::from_ne_bytes([w[0], w[1], w[2], w[3]]))).collect();
    format!("{words}:{:04X}", a.port())
}

/// The process (of this user's: another's fds cannot be read) with an fd on socket `inode`.
/// The processes that held the last connections are looked at first (a browser connects from
/// one process again and again): a look through every process's fds costs tens of
/// milliseconds. Only the order of the search is remembered; the answer is always a process
/// holding the socket now.
fn holder_of(inode: u64) -> Option<i32> {
    static RECENT: std::sync::Mutex<Vec<i32>> = std::sync::Mutex::new(Vec::new());
    let want = format!("socket:[{inode}]");
    let holds = |pid: i32| {
        std::fs::read_dir(format!("/proc/{pid}/fd"))
            .into_iter()
            .flatten()
            .flatten()
            .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|l| l.as_os_str() == want.as_str()))
    };
    let recent: Vec<i32> = RECENT.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
    let found = recent.iter().copied().find(|pid| holds(*pid)).or_else(|| {
        std::fs::read_dir("/proc")
            .ok()?
            .flatten()
            .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()))
            .find(|pid| !recent.contains(pid) && holds(*pid))
    })?;
    let mut recent = RECENT.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    recent.retain(|p| *p != found);
    recent.insert(0, found);
    recent.truncate(8);
    Some(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(method: &str, host: &str, extra: &[(&str, &str)]) -> Request {
        let mut r = Request { method: method.into(), path: "/".into(), ..Request::default() };
        r.headers.insert("host".into(), host.into());
        for (k, v) in extra {
            r.headers.insert(k.to_string(), v.to_string());
        }
        r
    }

    #[test]
    fn the_token_then_the_cookie_then_the_origin_let_a_request_in() {
        let g = Guard::new("t0k".into(), Some("127.0.0.1:8080".parse().expect("addr")));
        let host = "127.0.0.1:8080";
        assert_eq!(g.judge(&req("GET", host, &[])), Verdict::Unauthorized);
        let mut with_token = req("GET", host, &[]);
        with_token.query.insert("token".into(), "t0k".into());
        assert_eq!(g.judge(&with_token), Verdict::SetCookie);
        with_token.query.insert("token".into(), "nope".into());
        assert_eq!(g.judge(&with_token), Verdict::Unauthorized);
        let cookie = ("cookie", "guild_hall_8080=t0k");
        assert_eq!(g.judge(&req("GET", host, &[cookie])), Verdict::Allowed);
        assert_eq!(g.judge(&req("GET", "localhost:8080", &[("cookie", "guild_hall_8080=bad")])), Verdict::Unauthorized);
        assert!(matches!(g.judge(&req("GET", "evil.example:8080", &[cookie])), Verdict::Forbidden(_)));
        assert!(matches!(g.judge(&req("POST", host, &[cookie])), Verdict::Forbidden(_)));
        assert!(matches!(g.judge(&req("POST", host, &[cookie, ("origin", "http://evil.example")])), Verdict::Forbidden(_)));
        assert!(matches!(g.judge(&req("POST", host, &[cookie, ("origin", "http://localhost:8080")])), Verdict::Forbidden(_)));
        assert_eq!(g.judge(&req("POST", host, &[cookie, ("origin", "http://127.0.0.1:8080")])), Verdict::Allowed);
        // Behind a socket, whatever the proxy calls it, but the origin must be that name.
        let s = Guard::new("t0k".into(), None);
        let c = ("cookie", "guild_hall=t0k");
        assert_eq!(s.judge(&req("POST", "hall.internal", &[c, ("origin", "https://hall.internal")])), Verdict::Allowed);
        // Listening at another loopback address (`--listen 127.0.0.2:8080`): that name too.
        let other = Guard::new("t0k".into(), Some("127.0.0.2:8080".parse().expect("addr")));
        assert_eq!(other.judge(&req("GET", "127.0.0.2:8080", &[cookie])), Verdict::Allowed);
        assert_eq!(other.judge(&req("GET", "localhost:8080", &[cookie])), Verdict::Allowed);
        assert!(matches!(other.judge(&req("GET", "127.0.0.3:8080", &[cookie])), Verdict::Forbidden(_)));
        assert!(matches!(s.judge(&req("POST", "hall.internal", &[c, ("origin", "https://evil.example")])), Verdict::Forbidden(_)));
    }

    #[test]
    fn a_loopback_peer_is_found_by_its_socket() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let client = std::net::TcpStream::connect(listener.local_addr().expect("addr")).expect("connect");
        let (conn, peer) = listener.accept().expect("accept");
        let inode = socket_inode(conn.local_addr().expect("local"), peer).expect("the client's socket is in /proc/net/tcp");
        assert_eq!(holder_of(inode), Some(std::process::id() as i32));
        drop(client);
    }
}
