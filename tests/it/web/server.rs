//! A real `guild-hall serve` for the web face's tests, and a plain HTTP/1.1 client over a std
//! `TcpStream` (no browser): requests with or without the cookie, and a reader of its
//! server-sent events that waits for the event a test expects. The browser tests start the
//! server through this too.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use crate::common::*;

/// A running `guild-hall serve -C <project>`.
pub(crate) struct Web {
    child: Option<Child>,
    /// The URL it printed first (with its token).
    pub(crate) url: String,
    /// `127.0.0.1:PORT`.
    pub(crate) host: String,
    pub(crate) token: String,
    pub(crate) log: std::path::PathBuf,
}

/// One reply: its status, its headers (names lowercased) and its body.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: String,
}

impl Reply {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    pub(crate) fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }
}

impl Web {
    /// `guild-hall serve ARGS` in the project, once it has printed its URL.
    pub(crate) fn start(p: &Project, extra: &[&str]) -> Web {
        static STARTED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = STARTED.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let log = p.tmp.path().join(format!("serve-{n}.log"));
        let mut cmd: Command = p.cmd();
        cmd.arg("-C").arg(&p.root).arg("serve").args(extra);
        let mut child = cmd.stdout(Stdio::piped()).stderr(std::fs::File::create(&log).expect("log")).spawn().expect("spawn serve");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            let mut first = String::new();
            let _ = BufReader::new(stdout).read_line(&mut first);
            let _ = tx.send(first);
        });
        let url = match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(line) => line.trim().to_string(),
            Err(_) => panic!("serve printed no URL: {}", std::fs::read_to_string(&log).unwrap_or_default()),
        };
        assert!(url.starts_with("http://127.") && url.contains("/?token="), "the first line is the URL: {url:?}");
        let rest = url.trim_start_matches("http://");
        let (host, token) = rest.split_once("/?token=").expect("host and token");
        Web { child: Some(child), url: url.clone(), host: host.to_string(), token: token.to_string(), log }
    }

    pub(crate) fn port(&self) -> u16 {
        self.host.rsplit(':').next().and_then(|p| p.parse().ok()).expect("a port")
    }

    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The `Cookie` header a browser sends once it has been in.
    pub(crate) fn cookie(&self) -> String {
        format!("guild_hall_{}={}", self.port(), self.token)
    }

    /// A request as written (`headers` as `Name: value` lines), its reply read to the end.
    pub(crate) fn raw(&self, method: &str, target: &str, headers: &[String], body: &str) -> Reply {
        let mut s = TcpStream::connect(&self.host).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(60))).expect("timeout");
        let mut req = format!("{method} {target} HTTP/1.1\r\nContent-Length: {}\r\n", body.len());
        for h in headers {
            req.push_str(h);
            req.push_str("\r\n");
        }
        req.push_str("\r\n");
        req.push_str(body);
        s.write_all(req.as_bytes()).expect("send");
        let mut raw = Vec::new();
        let _ = s.read_to_end(&mut raw);
        parse(&String::from_utf8_lossy(&raw))
    }

    fn host_header(&self) -> String {
        format!("Host: {}", self.host)
    }

    /// GET with the cookie.
    pub(crate) fn get(&self, target: &str) -> Reply {
        self.raw("GET", target, &[self.host_header(), format!("Cookie: {}", self.cookie())], "")
    }

    /// POST JSON with the cookie, from one of its pages (its `Origin`).
    pub(crate) fn post(&self, target: &str, json: &serde_json::Value) -> Reply {
        let headers = [
            self.host_header(),
            format!("Cookie: {}", self.cookie()),
            format!("Origin: http://{}", self.host),
            "Content-Type: application/json".to_string(),
        ];
        self.raw("POST", target, &headers, &json.to_string())
    }

    /// An event stream on `target` (`/events?…`), open once its `hello` has come.
    pub(crate) fn events(&self, target: &str) -> Events {
        let mut s = TcpStream::connect(&self.host).expect("connect");
        let req =
            format!("GET {target} HTTP/1.1\r\n{}\r\nCookie: {}\r\nAccept: text/event-stream\r\n\r\n", self.host_header(), self.cookie());
        s.write_all(req.as_bytes()).expect("send");
        let (tx, rx) = channel();
        let reader = s.try_clone().expect("clone");
        std::thread::spawn(move || {
            let mut lines = BufReader::new(reader).lines();
            // The header, then events: `event:` and `data:` lines, a blank line ends each.
            for l in lines.by_ref() {
                match l {
                    Ok(l) if l.is_empty() => break,
                    Ok(_) => {}
                    Err(_) => return,
                }
            }
            let (mut name, mut data) = (String::new(), Vec::<String>::new());
            for l in lines {
                let Ok(l) = l else { return };
                if let Some(n) = l.strip_prefix("event: ") {
                    name = n.to_string();
                } else if let Some(d) = l.strip_prefix("data: ") {
                    data.push(d.to_string());
                } else if l.is_empty() && !name.is_empty() {
                    if tx.send((std::mem::take(&mut name), data.join("\n"))).is_err() {
                        return;
                    }
                    data.clear();
                }
            }
        });
        let mut ev = Events { rx, _stream: s };
        ev.wait("the stream's hello", |name, _| name == "hello");
        ev
    }
}

impl Drop for Web {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = kill(Pid::from_raw(c.id() as i32), Signal::SIGTERM);
            let _ = c.wait();
        }
    }
}

/// An open event stream's events, as they come.
pub(crate) struct Events {
    rx: Receiver<(String, String)>,
    _stream: TcpStream,
}

impl Events {
    /// The data of the first event (from now) that `want` takes; panics after a minute.
    pub(crate) fn wait(&mut self, what: &str, want: impl Fn(&str, &str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok((name, data)) if want(&name, &data) => return data,
                Ok(_) => {}
                Err(_) => panic!("timed out waiting for the event: {what}"),
            }
        }
    }
}

fn parse(raw: &str) -> Reply {
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((raw, ""));
    let mut lines = head.lines();
    let status = lines.next().and_then(|l| l.split(' ').nth(1)).and_then(|s| s.parse().ok()).unwrap_or(0);
    let headers = lines.filter_map(|l| l.split_once(':')).map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string())).collect();
    Reply { status, headers, body: body.to_string() }
}
