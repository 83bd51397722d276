//! The endpoint and the manager: a confined worker cannot drive the watcher's
//! endpoint, a flood of idle connections does not keep a real request out, `mcp --manager`
//! answers every line by JSON-RPC's rules, and a dispatch never writes an invalid artifact.
//! Real processes throughout: the binary, a scripted worker under its real shim and sandbox,
//! curl, real sockets and stdio.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use crate::common::*;
use serde_json::{json, Value};

fn post(body: &str) -> Vec<u8> {
    format!("POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
}

/// A watcher serving its endpoint on `sock`: `Service::start` returns once the projects are
/// watched, a moment before the socket listens.
fn serving(p: &Project, sock: &Path, extra: &[&str]) -> Service {
    let args: Vec<&str> = ["--socket", sock.to_str().expect("utf8")].into_iter().chain(extra.iter().copied()).collect();
    let svc = Service::start(p, &[], &args);
    wait_for("the endpoint to listen", || svc.log().contains("serving worker/*"));
    svc
}

/// One request over the socket from the test process: (status line, JSON body).
fn call(sock: &Path, method: &str, params: Value) -> (String, Value) {
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}).to_string();
    let mut s = UnixStream::connect(sock).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(60))).expect("timeout");
    s.write_all(&post(&body)).expect("send");
    let mut reply = String::new();
    s.read_to_string(&mut reply).expect("reply");
    let (head, body) = reply.split_once("\r\n\r\n").unwrap_or((&reply, ""));
    (head.lines().next().unwrap_or("").to_string(), serde_json::from_str(body).unwrap_or(Value::Null))
}

/// A worker that, from inside its attempt, asks the endpoint (the prompt's `socket:` line) to
/// cancel another commission (`victim:`) three ways — plainly; with a cleared environment in a
/// session of its own; and orphaned (its parent gone, so re-parented to the shim) — and
/// submits the HTTP status each got.
const CALLER: &str = r#"#!/bin/sh
set -u
sock=$(sed -n 's/^socket: *//p' "$GUILD_HALL_PROMPT_FILE" | head -n 1)
victim=$(sed -n 's/^victim: *//p' "$GUILD_HALL_PROMPT_FILE" | head -n 1)
# The endpoint listens only once this attempt runs: a socket listening when an attempt starts
# is masked from it altogether (worker::sandbox_reads); one bound later is left to the peer check.
while [ ! -S "$sock" ]; do sleep 0.05; done
printf '{"jsonrpc":"2.0","id":1,"method":"worker/cancel","params":{"jobId":"%s"}}' "$victim" > "$TMPDIR/body.json"
cmd="curl -s -o /dev/null -w %{http_code} --max-time 60 --unix-socket $sock --data-binary @$TMPDIR/body.json http://x/mcp"
direct=$(sh -c "$cmd")
bare=$(env -i PATH="$PATH" setsid -w sh -c "$cmd")
env -i PATH="$PATH" sh -c "setsid $cmd > $TMPDIR/orphan 2>&1 &"
for _ in $(seq 300); do [ -s "$TMPDIR/orphan" ] && break; sleep 0.1; done
orphan=$(cat "$TMPDIR/orphan")
"$GUILD_HALL_BIN" toolbox submit-result --summary "direct=$direct bare=$bare orphan=$orphan"
"#;

/// Item 3: a confined worker (real shim, real Landlock) tries to cancel another commission
/// over the watcher's socket: every try is refused with 403 and a log line naming it, the
/// other commission is untouched, and the person's own client is still served. The endpoint
/// starts after the attempt did: a socket listening at an attempt's start is not even
/// connectable from it (its mount namespace masks it), so this is the peer check's own proof.
#[test]
fn a_worker_cannot_drive_the_endpoint() {
    let p = Project::new(&["sleeper"]);
    let dir = p.root.join(".lore/workers/caller");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(
        dir.join("worker.yaml"),
        "name: caller\ndescription: Calls the endpoint from inside an attempt.\ncommand: [\"./run.sh\"]\ncheckout: sparse\ncapabilities: [commission]\n",
    )
    .expect("write");
    std::fs::write(dir.join("run.sh"), CALLER).expect("write");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.join("run.sh"), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let sock = p.tmp.path().join("gh.sock");

    let victim = p.create("sleeper", "Victim", "sleep: 300\nStay up.");
    let caller = p.create("caller", "Caller", &format!("socket: {}\nvictim: {victim}\nCancel it.", sock.display()));
    // Settled into its sleep (its progress recorded): from here on its file does not change.
    p.pass_until("the victim to report progress", |p| p.artifact(&victim).contains("progress: Sleeping 300s"));
    assert_eq!(p.status(&caller), "in_progress", "the caller waits for the endpoint");
    let before = p.artifact(&victim);
    let svc = serving(&p, &sock, &[]);
    wait_status(&p, &caller, "completed");
    let summary = p.status_json(&caller)["result"]["summary"].as_str().unwrap_or("").to_string();
    assert_eq!(summary, "direct=403 bare=403 orphan=403", "{}", p.ok(&["logs", &caller]));

    // The victim was not touched: still running, its file as it was.
    assert_eq!(p.status(&victim), "in_progress");
    assert_eq!(p.artifact(&victim), before);
    assert!(!p.timeline(&victim).iter().any(|e| e["to"] == "cancelled"));
    // Each refusal is logged with the peer's pid and why.
    let refusals: Vec<Value> = svc
        .log()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v.to_string().contains("refusing a connection from a worker process"))
        .collect();
    assert_eq!(refusals.len(), 3, "{}", svc.log());
    assert!(refusals.iter().all(|r| r["fields"]["peer_pid"].as_i64().is_some_and(|pid| pid > 1)), "{refusals:?}");
    // The plain try by its attempt mark; the two without an environment by their ancestor,
    // the attempt's shim (the orphan after it was re-parented to it).
    let by = |what: &str| refusals.iter().filter(|r| r.to_string().contains(what)).count();
    assert_eq!((by("carries the attempt mark GUILD_HALL_RUN_ID="), by("descends from the guild-hall shim")), (1, 2), "{refusals:?}");

    // The person's client (this test process) is served as before.
    let (status, reply) = call(&sock, "worker/cancel", json!({"jobId": victim}));
    assert_eq!(status, "HTTP/1.1 200 OK", "{reply}");
    assert_eq!(reply["result"]["status"], "cancelled", "{reply}");
    wait_status(&p, &victim, "cancelled");
    wait_stopped(&p, &victim);
}

/// A whole HTTP response: its status line, and a body of exactly `Content-Length` bytes.
fn whole(reply: &str) -> (String, String) {
    let (head, body) = reply.split_once("\r\n\r\n").unwrap_or_else(|| panic!("no end of headers: {reply:?}"));
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("Content-Length: "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no Content-Length: {reply:?}"));
    assert_eq!(body.len(), length, "a truncated body: {reply:?}");
    (head.lines().next().unwrap_or("").to_string(), body.to_string())
}

/// Item 10: with 1,200 idle connections open on the socket (far over the default cap of 64),
/// a well-behaved request gets a whole `200` while they are still open: the oldest idle
/// connections are shed to make room, each with a whole `503` or nothing, never a truncated
/// response, and the newest keep their slots.
#[test]
fn a_request_gets_through_a_flood_of_idle_connections() {
    const CAP: usize = 64; // `watch --max-connections`' default
    const IDLE: usize = 1200;
    let p = Project::new(&[]);
    let sock = p.tmp.path().join("gh.sock");
    // Idle connections are never timed out during the test: only shedding can make room.
    let svc = serving(&p, &sock, &["--request-timeout", "10m"]);
    let mut idle: Vec<UnixStream> =
        (0..IDLE).map(|i| UnixStream::connect(&sock).unwrap_or_else(|e| panic!("connect #{i}: {e}\n{}", svc.log()))).collect();

    let (status, reply) = call(&sock, "ping", json!({}));
    assert_eq!(status, "HTTP/1.1 200 OK", "{reply}");
    assert_eq!(reply, json!({"jsonrpc": "2.0", "id": 7, "result": {}}));

    // The idle ones were still open: the newest hold every slot but the one just used.
    let mut held = 0;
    for s in &mut idle {
        match answered(s) {
            None => held += 1,
            Some(r) if r.is_empty() => {}
            Some(r) => {
                let (status, body) = whole(&r);
                assert_eq!(status, "HTTP/1.1 503 Service Unavailable", "{r}");
                let v: Value = serde_json::from_str(&body).expect("a JSON error");
                assert!(v["error"].as_str().is_some_and(|e| e.starts_with("busy: 64 connections")), "{v}");
            }
        }
    }
    assert_eq!(held, CAP - 1, "idle connections still holding a slot");
}

/// Connections that send a whole header with `Content-Length` and then drip their body a byte
/// at a time hold no slot a real request needs: once every slot is taken, the oldest of them
/// makes way (a whole `503`), as a connection that has not sent its header does, and a real
/// request gets its `200` while they still drip.
#[test]
fn a_request_gets_through_a_flood_of_slow_bodies() {
    const SLOW: usize = 100;
    let p = Project::new(&[]);
    let sock = p.tmp.path().join("gh.sock");
    // The request timeout never ends them during the test: only shedding can make room.
    let svc = serving(&p, &sock, &["--request-timeout", "10m"]);
    let head = "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"jsonrpc\":";
    let slow: Vec<UnixStream> = (0..SLOW)
        .map(|i| {
            let mut s = UnixStream::connect(&sock).unwrap_or_else(|e| panic!("connect #{i}: {e}\n{}", svc.log()));
            s.write_all(head.as_bytes()).expect("header");
            s.set_nonblocking(true).expect("nonblocking");
            s
        })
        .collect();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let drip = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut slow = slow;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                for s in &mut slow {
                    // A shed one is closed: its writes fail, and that is all.
                    let _ = s.write(b" ");
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            slow
        })
    };
    let mut last = String::new();
    wait_for("a real request to get through the slow bodies", || {
        // A refused one may be closed before its body is sent: that is a try that failed.
        let body = json!({"jsonrpc": "2.0", "id": 7, "method": "ping"}).to_string();
        let mut s = UnixStream::connect(&sock).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(60))).expect("timeout");
        let mut reply = String::new();
        if s.write_all(&post(&body)).and_then(|_| s.read_to_string(&mut reply)).is_err() || !reply.contains("\r\n\r\n") {
            return false;
        }
        last = reply.clone();
        let (status, body) = whole(&reply);
        status == "HTTP/1.1 200 OK" && serde_json::from_str::<Value>(&body).ok() == Some(json!({"jsonrpc": "2.0", "id": 7, "result": {}}))
    });
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let mut slow = drip.join().expect("drip");
    let mut shed = 0;
    for s in &mut slow {
        if let Some(r) = answered(s).filter(|r| !r.is_empty()) {
            let (status, body) = whole(&r);
            assert_eq!(status, "HTTP/1.1 503 Service Unavailable", "{r}");
            assert!(body.contains("had not sent its whole request and made way"), "{body}");
            shed += 1;
        }
    }
    assert!(shed >= SLOW - 64, "the slow bodies over the cap made way ({shed} of {SLOW}); last: {last}");
}

/// `guild-hall mcp --manager` on stdio, driven line by line.
struct Manager {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    lines: std::sync::mpsc::Receiver<String>,
}

impl Manager {
    fn start(p: &Project) -> Manager {
        use std::io::BufRead;
        use std::process::Stdio;
        let mut child = p
            .cmd()
            .args(["mcp", "--manager"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("mcp --manager");
        let stdin = child.stdin.take().expect("stdin");
        let out = child.stdout.take().expect("stdout");
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut m = Manager { child, stdin, lines };
        m.send_line(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}}).to_string());
        assert_eq!(m.answer()["id"], 1);
        m.send_line(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string());
        m
    }

    fn send_line(&mut self, line: &str) {
        self.send_bytes(line.as_bytes());
    }

    fn send_bytes(&mut self, line: &[u8]) {
        self.stdin.write_all(line).expect("send");
        self.stdin.write_all(b"\n").expect("send");
        self.stdin.flush().expect("flush");
    }

    /// The next line the server writes (a generous deadline: no answer at all fails here).
    fn answer(&self) -> Value {
        let line = self.lines.recv_timeout(Duration::from_secs(30)).expect("an answer from mcp --manager");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    fn tool(&mut self, id: i64, name: &str, arguments: Value) -> Value {
        self.send_line(
            &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": arguments}}).to_string(),
        );
        let a = self.answer();
        assert_eq!(a["id"], id, "{a}");
        a
    }
}

impl Drop for Manager {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Item 9: lines that are not JSON, or nest deeper than can be parsed, are answered `-32700`
/// with `id: null` (JSON-RPC 2.0), JSON that is no request `-32600` with `id: null`, and the
/// server goes on; unknown and malformed job ids and
/// unknown workers are invalid params (`-32602`), as docs/mcp.md says, not tool results.
#[test]
fn mcp_manager_answers_every_line_by_the_rules() {
    let p = Project::new(&["scripted-researcher"]);
    let mut m = Manager::start(&p);
    let deep_array = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    let deep_params = format!(
        r#"{{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{{"name":"status","arguments":{{"jobId":{}{}}}}}}}"#,
        "[".repeat(300),
        "]".repeat(300)
    );
    for bad in [&b"{not json"[..], deep_array.as_bytes(), deep_params.as_bytes(), b"\xff\xfe", br#"{"jsonrpc":"2.0","id":6,"method":"#] {
        m.send_bytes(bad);
        let a = m.answer();
        assert_eq!(a["error"]["code"], -32700, "{a} for {:?}", String::from_utf8_lossy(&bad[..bad.len().min(60)]));
        assert_eq!(a["id"], Value::Null, "{a}");
        assert_eq!(a["jsonrpc"], "2.0", "{a}");
    }

    // JSON that is no request: invalid request (-32600), with the `id: null` a reply must carry.
    for bad in ["42", r#"{"jsonrpc":"2.0","id":2}"#] {
        m.send_line(bad);
        let a = m.answer();
        assert_eq!((&a["error"]["code"], a.get("id")), (&json!(-32600), Some(&Value::Null)), "{a} for {bad}");
    }

    // An unknown job is not found, a malformed id an invalid argument: the same code, told
    // apart by `error.data.kind`.
    for (id, name, args, says, kind) in [
        (10, "status", json!({"jobId": "no-such-job"}), "unknown jobId", "not_found"),
        (11, "cancel", json!({"jobId": "../../etc/passwd"}), "bad jobId", "refused"),
        (12, "delete", json!({"jobId": "no-such-job"}), "unknown jobId", "not_found"),
        (13, "result", json!({"jobId": ".."}), "bad jobId", "refused"),
        (14, "dispatch", json!({"description": "x", "task": "y", "config": {"worker": "nobody"}}), "is not installed", "refused"),
    ] {
        let a = m.tool(id, name, args);
        assert_eq!(a["error"]["code"], -32602, "{name}: {a}");
        assert!(a["error"]["message"].as_str().is_some_and(|msg| msg.contains(says)), "{name}: {a}");
        assert_eq!(a["error"]["data"]["kind"], kind, "{name}: {a}");
    }
    // Still serving: a good call works.
    let listed = m.tool(20, "list", json!({}));
    assert_eq!(listed["result"]["structuredContent"], json!({"jobs": []}), "{listed}");
}

/// Item 9: a dispatch whose description would make the commission invalid the moment it is
/// written (a title over the frontmatter's size limit) is refused, with why, and nothing is
/// written; `check` stays clean.
#[test]
fn a_dispatch_that_would_be_invalid_writes_nothing() {
    let p = Project::new(&["scripted-researcher"]);
    let mut m = Manager::start(&p);
    let a = m.tool(
        2,
        "dispatch",
        json!({"description": "a".repeat(70_000), "task": "Survey it.", "config": {"worker": "scripted-researcher"}}),
    );
    let text = a["result"]["content"][0]["text"].as_str().or(a["error"]["message"].as_str()).unwrap_or("").to_string();
    assert!(a["result"]["isError"] == true || a.get("error").is_some(), "refused: {a}");
    assert!(text.contains("would not be valid") && text.contains("frontmatter too large"), "{text}");
    let written: Vec<_> =
        std::fs::read_dir(p.root.join(".lore/commissions")).map(|d| d.filter_map(Result::ok).collect()).unwrap_or_default();
    assert!(written.is_empty(), "nothing written: {:?}", written.iter().map(|e| e.path()).collect::<Vec<_>>());
    p.ok(&["check"]);
    // A sound dispatch right after is written and valid.
    let ok = m.tool(
        3,
        "dispatch",
        json!({"description": "Survey logs", "task": "Logging\nSurvey it.", "config": {"worker": "scripted-researcher"}}),
    );
    let job = ok["result"]["structuredContent"]["jobId"].as_str().unwrap_or_else(|| panic!("{ok}")).to_string();
    assert!(p.artifact_path(&job).exists());
    p.ok(&["check"]);
    wait_status(&p, &job, "completed");
}
