//! `meeting/*` and `plan/*` over the watcher's endpoint, routed through their typed catalogues:
//! the same operations and answers as the CLI's, the reply shapes pinned, unknown fields
//! refused, and `meeting/start` beginning with the CLI's default first message.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;

use crate::common::*;
use serde_json::{json, Value};

/// One request over the socket: the HTTP body as it came (a whole JSON reply, or a chunked
/// stream of JSON lines, decoded).
fn request(sock: &Path, method: &str, params: Value) -> (String, String) {
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}).to_string();
    let mut s = UnixStream::connect(sock).expect("connect");
    let head = format!("POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n", body.len());
    s.write_all(head.as_bytes()).and_then(|()| s.write_all(body.as_bytes())).expect("send");
    let mut out = String::new();
    s.read_to_string(&mut out).expect("read");
    let (head, body) = out.split_once("\r\n\r\n").unwrap_or((&out, ""));
    (head.to_string(), body.to_string())
}

/// A whole JSON-RPC reply.
fn rpc(sock: &Path, method: &str, params: Value) -> Value {
    let (head, body) = request(sock, method, params);
    assert!(head.starts_with("HTTP/1.1 200 OK") && head.contains("Content-Length:"), "a whole reply: {head}\n{body}");
    let v: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
    assert_eq!(v["id"], 7);
    v
}

/// A streamed reply: its JSON lines, the response last.
fn streamed(sock: &Path, method: &str, params: Value) -> Vec<Value> {
    let (head, body) = request(sock, method, params);
    assert!(head.contains("Transfer-Encoding: chunked"), "a stream: {head}\n{body}");
    // Chunks are `<hex length>\r\n<one JSON line>\r\n`: the JSON lines are what is not a length.
    body.split("\r\n")
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l.trim_end()).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn ok(v: &Value) -> &Value {
    assert!(v.get("error").is_none(), "unexpected error: {v}");
    &v["result"]
}

fn keys(v: &Value) -> Vec<&str> {
    v.as_object().map(|o| o.keys().map(String::as_str).collect()).unwrap_or_default()
}

fn said(lines: &[Value]) -> String {
    lines.iter().filter(|l| l["type"] == "text_delta").filter_map(|l| l["text"].as_str()).collect()
}

/// The bug: `meeting/start` with an agenda and no message ran no turn over JSON-RPC, while
/// `guild-hall meeting start` begins with "Let's begin. The agenda: …". Both faces now take
/// the first message from the one operation.
#[test]
fn meeting_start_without_a_message_begins_with_the_agenda_as_the_cli_does() {
    let p = Project::new(&["counsel"]);
    let sock = p.tmp.path().join("gh.sock");
    let _svc = Service::start(&p, &[], &["--socket", sock.to_str().expect("utf8")]);
    let lines = streamed(&sock, "meeting/start", json!({"worker": "counsel", "id": "over-rpc", "agenda": "the survey"}));
    let last = lines.last().expect("the response");
    assert_eq!(last["id"], 7);
    assert_eq!(last["result"]["outcome"], "ended", "{lines:?}");
    assert_eq!(last["result"]["meeting"], "over-rpc");
    assert!(said(&lines).contains("You said: Let's begin. The agenda: the survey"), "{lines:?}");

    let cli = p.ok(&["meeting", "start", "--worker", "counsel", "--id", "over-cli", "--agenda", "the survey", "--json"]);
    let cli: Vec<Value> = cli.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    assert_eq!(said(&cli), said(&lines[..lines.len() - 1]), "the CLI and the endpoint begin alike");
}

/// The reply shapes of `meeting/*`, pinned: a meeting's summary (start without a turn,
/// accept without a message, decline, list), close's, and `show` as the CLI's `--json`.
#[test]
fn meeting_methods_keep_their_reply_shapes() {
    let p = Project::new(&["counsel"]);
    let sock = p.tmp.path().join("gh.sock");
    let _svc = Service::start(&p, &[], &["--socket", sock.to_str().expect("utf8")]);
    let summary = ["agenda", "id", "linked_artifacts", "notes", "reason", "references", "requested_by", "session_id", "status", "worker"];
    let started = rpc(&sock, "meeting/start", json!({"worker": "counsel", "id": "quiet", "references": [".lore/a.md"]}));
    assert_eq!(keys(ok(&started)), summary, "{started}");
    assert_eq!(ok(&started)["status"], "open");
    assert_eq!(ok(&started)["references"], json!([".lore/a.md"]));

    for id in ["asked", "refused"] {
        let path = p.root.join(format!(".lore/meetings/{id}.md"));
        std::fs::create_dir_all(path.parent().expect("dir")).expect("mkdir");
        std::fs::write(&path, "---\nworker: counsel\nstatus: requested\nrequested_by: manager\nagenda: talk\n---\n").expect("write");
    }
    let accepted = rpc(&sock, "meeting/accept", json!({"id": "asked"}));
    assert_eq!(keys(ok(&accepted)), summary, "{accepted}");
    assert_eq!(ok(&accepted)["status"], "open");
    let declined = rpc(&sock, "meeting/decline", json!({"id": "refused", "reason": "not now"}));
    assert_eq!(keys(ok(&declined)), summary, "{declined}");
    assert_eq!(ok(&declined)["status"], "declined");
    assert_eq!(ok(&declined)["reason"], "declined: not now");

    let listed = rpc(&sock, "meeting/list", json!({}));
    assert_eq!(keys(ok(&listed)), ["meetings"]);
    let meetings = ok(&listed)["meetings"].as_array().expect("meetings");
    assert_eq!(meetings.len(), 3, "{listed}");
    assert!(meetings.iter().all(|m| keys(m) == summary), "{listed}");

    let shown = rpc(&sock, "meeting/show", json!({"id": "quiet"}));
    let cli: Value = serde_json::from_str(&p.ok(&["meeting", "show", "quiet", "--json"])).expect("json");
    assert_eq!(ok(&shown), &cli, "meeting/show answers as `meeting show --json`");

    let closed = rpc(&sock, "meeting/close", json!({"id": "quiet"}));
    let mut with_closed = summary.to_vec();
    with_closed.insert(0, "closed");
    with_closed.sort();
    assert_eq!(keys(ok(&closed)), with_closed, "{closed}");
    assert_eq!(ok(&closed)["closed"], true);
}

/// A typed request refuses what it does not know, as invalid params, and writes nothing.
#[test]
fn meeting_and_plan_methods_refuse_unknown_fields() {
    let p = Project::new(&["counsel", "mason"]);
    let sock = p.tmp.path().join("gh.sock");
    let _svc = Service::start(&p, &[], &["--socket", sock.to_str().expect("utf8")]);
    let v = rpc(&sock, "meeting/start", json!({"worker": "counsel", "id": "x", "colour": "blue"}));
    assert_eq!(v["error"]["code"], -32602, "{v}");
    assert!(v["error"]["message"].as_str().is_some_and(|m| m.contains("colour")), "{v}");
    let v = rpc(&sock, "plan/create", json!({"title": "x", "waves": [], "colour": "blue"}));
    assert_eq!(v["error"]["code"], -32602, "{v}");
    assert!(!p.root.join(".lore/meetings/x.md").exists() && !p.root.join(".lore/plans/x.md").exists());
    let v = rpc(&sock, "plan/nope", json!({}));
    assert_eq!(v["error"]["code"], -32601, "{v}");
}

/// `plan/*`: create, list, show (as the CLI's `--json`), retry (a draft starts) and cancel, over
/// the endpoint.
#[test]
fn plans_over_the_socket() {
    let p = Project::new(&["mason"]);
    let sock = p.tmp.path().join("gh.sock");
    let _svc = Service::start(&p, &[], &["--socket", sock.to_str().expect("utf8")]);
    let waves = json!([[{"id": "one", "worker": "mason", "prompt": "write: src/one.txt hello"}]]);
    let created = rpc(&sock, "plan/create", json!({"title": "Port it", "waves": waves, "draft": true}));
    assert_eq!(ok(&created), &json!({"plan": "port-it"}));
    let text = std::fs::read_to_string(p.root.join(".lore/plans/port-it.md")).expect("the plan file");
    assert!(text.contains("status: draft") && text.contains("parallelism: 1"), "{text}");
    let again = rpc(&sock, "plan/create", json!({"title": "Port it", "id": "port-it", "waves": waves}));
    assert_eq!(again["error"]["code"], -32602, "an id in use is refused: {again}");
    assert!(again.to_string().contains("plan id port-it is taken by the file"), "{again}");
    let bad = rpc(&sock, "plan/create", json!({"title": "Bad", "waves": [[{"id": "one"}]]}));
    assert_eq!(bad["error"]["code"], -32602, "an invalid plan is refused: {bad}");
    assert!(!p.root.join(".lore/plans/bad.md").exists());

    let listed = rpc(&sock, "plan/list", json!({}));
    assert_eq!(ok(&listed)["plans"][0]["plan"], "port-it", "{listed}");
    assert_eq!(ok(&listed)["plans"][0]["status"], "draft", "{listed}");
    assert_eq!(ok(&listed)["plans"].as_array().map(Vec::len), Some(1));

    // The watch's pass logs the draft's `created` (its one event): both faces read it after.
    crate::common::wait_for("the draft's created event", || {
        let v: Value = serde_json::from_str(&p.ok(&["plan", "show", "port-it", "--json"])).expect("json");
        v["log"].as_array().is_some_and(|l| !l.is_empty())
    });
    let shown = rpc(&sock, "plan/show", json!({"id": "port-it"}));
    let cli: Value = serde_json::from_str(&p.ok(&["plan", "show", "port-it", "--json"])).expect("json");
    assert_eq!(ok(&shown), &cli, "plan/show answers as `plan show --json`");

    let v = rpc(&sock, "plan/cancel", json!({"id": "port-it"}));
    assert_eq!(v["error"]["code"], -32602, "a draft cannot be cancelled: {v}");
    assert!(v["error"]["message"].as_str().is_some_and(|m| m.contains("plan port-it is draft")), "{v}");
    let retried = rpc(&sock, "plan/retry", json!({"id": "port-it"}));
    assert_eq!(ok(&retried), &json!({"plan": "port-it", "requested": "pending"}));
    wait_for("the retried plan to complete", || rpc(&sock, "plan/show", json!({"id": "port-it"}))["result"]["status"] == "completed");
    assert_eq!(git(&p.root, &["show", "claude/main:src/one.txt"]), "hello\n");
    let v = rpc(&sock, "plan/cancel", json!({"id": "port-it"}));
    assert_eq!(v["error"]["code"], -32602, "a completed plan cannot be cancelled: {v}");
}

/// The bug: `plan/create` took `verify`, an argv the reconciler runs unconfined with the
/// person's environment, from any endpoint client; before plans were served there, only someone
/// who could write the plan file could set one. It is refused, saying why, and nothing is written.
#[test]
fn plan_create_refuses_verify() {
    let p = Project::new(&["mason"]);
    let sock = p.tmp.path().join("gh.sock");
    let _svc = Service::start(&p, &[], &["--socket", sock.to_str().expect("utf8")]);
    let waves = json!([[{"id": "one", "worker": "mason", "prompt": "write: src/one.txt hello"}]]);
    let v = rpc(&sock, "plan/create", json!({"title": "Sneaky", "waves": waves, "verify": "sh -c true", "draft": true}));
    assert_eq!(v["error"]["code"], -32602, "{v}");
    let msg = v["error"]["message"].as_str().unwrap_or_default();
    assert!(msg.contains("unconfined") && msg.contains("plan file"), "{v}");
    assert!(!p.root.join(".lore/plans/sneaky.md").exists(), "nothing written");
}

/// An operation's failure says its kind: refused, not found and conflict are invalid params
/// (-32602), a fault — an I/O error, never the caller's doing — is an internal error (-32603);
/// `error.data.kind` tells all four apart.
#[test]
fn a_refusal_a_missing_id_and_a_fault_answer_apart() {
    let p = Project::new(&["counsel"]);
    let sock = p.tmp.path().join("gh.sock");
    let _svc = Service::start(&p, &[], &["--socket", sock.to_str().expect("utf8")]);
    let error = |v: &Value| (v["error"]["code"].as_i64(), v["error"]["data"]["kind"].as_str().map(str::to_string));
    let started = rpc(&sock, "meeting/start", json!({"worker": "counsel", "id": "quiet"}));
    assert_eq!(ok(&started)["status"], "open");

    let again = rpc(&sock, "meeting/start", json!({"worker": "counsel", "id": "quiet"}));
    assert_eq!(error(&again), (Some(-32602), Some("refused".into())), "an id in use is refused: {again}");
    let missing = rpc(&sock, "meeting/show", json!({"id": "nope"}));
    assert_eq!(error(&missing), (Some(-32602), Some("not_found".into())), "{missing}");
    assert!(missing["error"]["message"].as_str().is_some_and(|m| m.contains("no meeting nope")), "{missing}");

    // Its timeline a directory: reading it fails with EISDIR, a fault and not a refusal.
    let timeline = p.root.join(".lore/meetings/quiet.timeline.jsonl");
    let _ = std::fs::remove_file(&timeline);
    std::fs::create_dir_all(&timeline).expect("mkdir");
    let broken = rpc(&sock, "meeting/show", json!({"id": "quiet"}));
    assert_eq!(error(&broken), (Some(-32603), Some("fault".into())), "{broken}");
    assert!(broken["error"]["message"].as_str().is_some_and(|m| m.contains("Is a directory")), "{broken}");
}
