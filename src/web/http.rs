//! The web face's HTTP/1.1: one request per connection (`Connection: close`), read whole
//! within a deadline and under hard size limits, a thread per connection under a cap; a reply
//! is written whole, or is a server-sent event stream that holds its connection until the
//! client goes. No keep-alive, no chunked request bodies: a browser needs neither.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Largest request body taken (a revision's comments, an answer).
pub(crate) const MAX_BODY: usize = 1024 * 1024;
const MAX_HEAD: usize = 16 * 1024;
/// The whole request must arrive within this.
pub(crate) const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// One request, as read.
#[derive(Debug, Clone, Default)]
pub(crate) struct Request {
    pub(crate) method: String,
    /// The path, percent-decoded, without its query.
    pub(crate) path: String,
    /// The query's parameters, percent-decoded (the last of a repeated name).
    pub(crate) query: BTreeMap<String, String>,
    /// Header names lowercased.
    pub(crate) headers: BTreeMap<String, String>,
    pub(crate) body: Vec<u8>,
}

impl Request {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(String::as_str)
    }

    pub(crate) fn param(&self, name: &str) -> Option<&str> {
        self.query.get(name).map(String::as_str).filter(|v| !v.is_empty())
    }

    /// The value of cookie `name`, if sent.
    pub(crate) fn cookie(&self, name: &str) -> Option<&str> {
        self.header("cookie")?.split(';').find_map(|kv| kv.trim().strip_prefix(name)?.strip_prefix('='))
    }
}

/// Why a request could not be read: answered with this status, or not at all (the client
/// went, or never said anything).
#[derive(Debug)]
pub(crate) enum BadRequest {
    Status(u16, &'static str),
    Gone,
}

/// Read one request from `conn` within `within` ([`REQUEST_TIMEOUT`] for a person's).
pub(crate) fn read_request(conn: &std::net::TcpStream, within: Duration) -> Result<Request, BadRequest> {
    read_from(conn.try_clone().map_err(|_| BadRequest::Gone)?, |t| conn.set_read_timeout(t), within)
}

/// [`read_request`] on a Unix socket.
pub(crate) fn read_request_unix(conn: &std::os::unix::net::UnixStream, within: Duration) -> Result<Request, BadRequest> {
    read_from(conn.try_clone().map_err(|_| BadRequest::Gone)?, |t| conn.set_read_timeout(t), within)
}

fn read_from(
    conn: impl Read,
    set_timeout: impl Fn(Option<Duration>) -> std::io::Result<()>,
    within: Duration,
) -> Result<Request, BadRequest> {
    let until = Instant::now() + within;
    let mut r = BufReader::new(Deadline { inner: conn, until, set_timeout });
    let mut head = Vec::new();
    loop {
        let before = head.len();
        let n = (&mut r).take((MAX_HEAD - before + 1) as u64).read_until(b'\n', &mut head).map_err(|_| BadRequest::Gone)?;
        if n == 0 {
            return Err(if head.is_empty() { BadRequest::Gone } else { BadRequest::Status(400, "the request ended early") });
        }
        if head.len() > MAX_HEAD {
            return Err(BadRequest::Status(431, "request header too large"));
        }
        if head[before..] == *b"\r\n" || head[before..] == *b"\n" {
            break;
        }
    }
    let text = std::str::from_utf8(&head).map_err(|_| BadRequest::Status(400, "the request header is not UTF-8"))?;
    let mut lines = text.lines();
    let first = lines.next().unwrap_or("");
    let mut parts = first.split(' ');
    let (Some(method), Some(target), Some(version)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(BadRequest::Status(400, "bad request line"));
    };
    if !version.starts_with("HTTP/1.") {
        return Err(BadRequest::Status(505, "HTTP/1.x only"));
    }
    let mut req = Request { method: method.to_string(), ..Request::default() };
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    req.path = decode(path).ok_or(BadRequest::Status(400, "bad path encoding"))?;
    for kv in query.split('&').filter(|kv| !kv.is_empty()) {
        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
        let (Some(k), Some(v)) = (decode_form(k), decode_form(v)) else { return Err(BadRequest::Status(400, "bad query encoding")) };
        req.query.insert(k, v);
    }
    for line in lines.filter(|l| !l.is_empty()) {
        let Some((name, value)) = line.split_once(':') else { return Err(BadRequest::Status(400, "bad header line")) };
        req.headers.insert(name.trim().to_ascii_lowercase(), value.trim().to_string());
    }
    if req.header("transfer-encoding").is_some() {
        return Err(BadRequest::Status(411, "send a Content-Length, not a chunked body"));
    }
    let length = match req.header("content-length") {
        None => 0,
        Some(n) => n.parse::<usize>().map_err(|_| BadRequest::Status(400, "bad Content-Length"))?,
    };
    if length > MAX_BODY {
        return Err(BadRequest::Status(413, "request body too large"));
    }
    req.body = vec![0; length];
    r.read_exact(&mut req.body).map_err(|_| BadRequest::Status(400, "the body ended early or came too slowly"))?;
    Ok(req)
}

/// Reads that share one deadline: a client dripping a byte at a time is cut off when the
/// request's time is up.
struct Deadline<R, F> {
    inner: R,
    until: Instant,
    set_timeout: F,
}

impl<R: Read, F: Fn(Option<Duration>) -> std::io::Result<()>> Read for Deadline<R, F> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = self.until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(std::io::ErrorKind::TimedOut.into());
        }
        (self.set_timeout)(Some(left))?;
        self.inner.read(buf)
    }
}

/// `%XX` decoded; `None` if that is not UTF-8 or an escape is broken.
pub(crate) fn decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// A query's or form's value: `+` is a space.
fn decode_form(s: &str) -> Option<String> {
    decode(&s.replace('+', " "))
}

/// `s` made safe inside a URL's path segment or query value.
pub(crate) fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A whole reply.
#[derive(Debug)]
pub(crate) struct Response {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(&'static str, String)>,
    pub(crate) body: Vec<u8>,
}

/// What every reply says: nothing is cached, sniffed, framed or referred (a page's URL may
/// carry the token the first time), and a page may load only its own script and style.
const COMMON: &str = "Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nReferrer-Policy: no-referrer\r\nX-Frame-Options: DENY\r\nContent-Security-Policy: default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'\r\nConnection: close\r\n";

impl Response {
    pub(crate) fn new(status: u16, content_type: &str, body: impl Into<Vec<u8>>) -> Response {
        Response { status, headers: vec![("Content-Type", content_type.to_string())], body: body.into() }
    }

    pub(crate) fn html(body: String) -> Response {
        Response::new(200, "text/html; charset=utf-8", body)
    }

    pub(crate) fn json(status: u16, body: &serde_json::Value) -> Response {
        Response::new(status, "application/json", body.to_string())
    }

    pub(crate) fn text(status: u16, body: &str) -> Response {
        Response::new(status, "text/plain; charset=utf-8", format!("{body}\n"))
    }

    /// `303 See Other` to `location` (a path of this server).
    pub(crate) fn redirect(location: &str) -> Response {
        let mut r = Response::new(303, "text/plain; charset=utf-8", "");
        r.headers.push(("Location", location.to_string()));
        r
    }

    pub(crate) fn with(mut self, name: &'static str, value: String) -> Response {
        self.headers.push((name, value));
        self
    }

    pub(crate) fn write_to(&self, w: &mut impl Write) -> std::io::Result<()> {
        let mut head = format!("HTTP/1.1 {} {}\r\n{COMMON}Content-Length: {}\r\n", self.status, reason(self.status), self.body.len());
        for (k, v) in &self.headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        w.write_all(head.as_bytes())?;
        w.write_all(&self.body)?;
        w.flush()
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        303 => "See Other",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        409 => "Conflict",
        411 => "Length Required",
        413 => "Payload Too Large",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        505 => "HTTP Version Not Supported",
        _ => "",
    }
}

/// A server-sent event stream on an open connection: its header once, then events; a write
/// that fails means the client went.
pub(crate) struct EventStream<W: Write> {
    w: W,
}

/// A client that stops reading its event stream for this long is gone.
pub(crate) const STREAM_WRITE_TIMEOUT: Duration = Duration::from_secs(30);

impl<W: Write> EventStream<W> {
    pub(crate) fn begin(mut w: W) -> std::io::Result<EventStream<W>> {
        let head = format!(
            "HTTP/1.1 200 OK\r\n{COMMON}Content-Type: text/event-stream; charset=utf-8\r\nX-Accel-Buffering: no\r\n\r\nretry: 1000\n\n"
        );
        w.write_all(head.as_bytes())?;
        w.flush()?;
        Ok(EventStream { w })
    }

    /// One event named `name` with `data` (each of its lines a `data:` line; a `\r` cannot
    /// end a field early: it is sent as a line break too).
    pub(crate) fn send(&mut self, name: &str, data: &str) -> std::io::Result<()> {
        let mut out = format!("event: {name}\n");
        for line in data.split(['\n', '\r']) {
            out.push_str("data: ");
            out.push_str(line);
            out.push('\n');
        }
        out.push('\n');
        self.w.write_all(out.as_bytes())?;
        self.w.flush()
    }
}

/// Connections served at once (event streams among them); one more is answered 503.
pub(crate) const MAX_CONNECTIONS: usize = 128;

/// The count of connections in a pool of at most `max`; a [`Slot`] holds one.
#[derive(Clone)]
pub(crate) struct Slots {
    used: Arc<AtomicUsize>,
    max: usize,
}

/// One connection's place in its pool, given back when dropped.
pub(crate) struct Slot(Arc<AtomicUsize>);

impl Slots {
    pub(crate) fn new(max: usize) -> Slots {
        Slots { used: Arc::default(), max }
    }

    pub(crate) fn take(&self) -> Option<Slot> {
        let n = self.used.fetch_add(1, Ordering::SeqCst);
        if n >= self.max {
            self.used.fetch_sub(1, Ordering::SeqCst);
            return None;
        }
        Some(Slot(self.used.clone()))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_is_read_with_its_query_headers_and_body() {
        let raw = b"POST /api/commission/approve?project=a%20b&x=1+2 HTTP/1.1\r\nHost: 127.0.0.1:1\r\nContent-Length: 2\r\nCookie: a=1; gh_9=tok\r\n\r\n{}";
        let req = read_from(&raw[..], |_| Ok(()), REQUEST_TIMEOUT).expect("read");
        assert_eq!(req.method, "POST");
        assert_eq!(req.path, "/api/commission/approve");
        assert_eq!(req.param("project"), Some("a b"));
        assert_eq!(req.param("x"), Some("1 2"));
        assert_eq!(req.header("host"), Some("127.0.0.1:1"));
        assert_eq!(req.cookie("gh_9"), Some("tok"));
        assert_eq!(req.body, b"{}");
    }

    #[test]
    fn oversized_chunked_and_truncated_requests_are_refused() {
        let big = format!("POST / HTTP/1.1\r\nContent-Length: {}\r\n\r\n", MAX_BODY + 1);
        assert!(matches!(read_from(big.as_bytes(), |_| Ok(()), REQUEST_TIMEOUT), Err(BadRequest::Status(413, _))));
        let chunked = b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
        assert!(matches!(read_from(&chunked[..], |_| Ok(()), REQUEST_TIMEOUT), Err(BadRequest::Status(411, _))));
        let short = b"POST / HTTP/1.1\r\nContent-Length: 9\r\n\r\nab";
        assert!(matches!(read_from(&short[..], |_| Ok(()), REQUEST_TIMEOUT), Err(BadRequest::Status(400, _))));
        let head = format!("GET / HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(MAX_HEAD));
        assert!(matches!(read_from(head.as_bytes(), |_| Ok(()), REQUEST_TIMEOUT), Err(BadRequest::Status(431, _))));
    }

    #[test]
    fn an_event_cannot_be_ended_early_by_its_data() {
        let mut out = Vec::new();
        let mut s = EventStream { w: &mut out };
        s.send("board", "a\n\nevent: x\rb").expect("send");
        assert_eq!(String::from_utf8(out).expect("utf8"), "event: board\ndata: a\ndata: \ndata: event: x\ndata: b\n\n");
    }
}
