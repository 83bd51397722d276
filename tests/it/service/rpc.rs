//! The `worker/*` JSON-RPC endpoint of `guild-hall watch --socket/--listen`, over real sockets:
//! every method and its error paths, the bearer token on TCP, malformed and oversized requests.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;

use crate::common::*;
use serde_json::{json, Value};

/// Send raw bytes, return (HTTP status code, body).
fn raw(stream: &mut (impl Read + Write), request: &[u8]) -> (u16, String) {
    // The server may answer (413) and close before an oversized body is all sent.
    let _ = stream.write_all(request);
    let mut out = String::new();
    let _ = stream.read_to_string(&mut out);
    let code = out.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = out.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
    (code, body)
}

fn post(body: &str, auth: Option<&str>) -> Vec<u8> {
    let auth = auth.map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default();
    format!("POST /mcp HTTP/1.1\r\nHost: x\r\n{auth}Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}", body.len())
        .into_bytes()
}

fn rpc(sock: &Path, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}).to_string();
    let (code, reply) = raw(&mut UnixStream::connect(sock).expect("connect"), &post(&body, None));
    assert_eq!(code, 200, "{reply}");
    let v: Value = serde_json::from_str(&reply).expect("json reply");
    assert_eq!(v["id"], 7);
    v
}

fn ok(v: &Value) -> &Value {
    assert!(v.get("error").is_none(), "unexpected error: {v}");
    &v["result"]
}

fn err_code(v: &Value) -> i64 {
    v["error"]["code"].as_i64().unwrap_or_else(|| panic!("expected an error: {v}"))
}

#[test]
fn every_worker_method_over_the_socket() {
    let p = Project::new(&["scripted-researcher", "sleeper", "silent", "scribe"]);
    let sock = p.tmp.path().join("gh.sock");
    let _svc = Service::start(&p, &[], &["--socket", sock.to_str().expect("utf8")]);
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&sock).expect("socket").permissions().mode() & 0o777, 0o600);

    let init = rpc(&sock, "initialize", json!({"protocolVersion": "2025-06-18"}));
    assert_eq!(ok(&init)["serverInfo"]["name"], "guild-hall");
    let tools = rpc(&sock, "tools/list", json!({}));
    assert_eq!(ok(&tools)["tools"].as_array().map(|t| t.len()), Some(crate::common::DISPATCHER_TOOLS.len()));

    // dispatch → status → result, with nothing else run: the watcher carries it out.
    let d = rpc(
        &sock,
        "worker/dispatch",
        json!({"description": "Survey logs", "task": "Logging\nSurvey.", "config": {"worker": "scripted-researcher"}}),
    );
    let job = ok(&d)["jobId"].as_str().expect("jobId").to_string();
    wait_status(&p, &job, "completed");
    let s = rpc(&sock, "worker/status", json!({"jobId": job}));
    assert_eq!(ok(&s)["status"], "completed");
    assert_eq!(ok(&s)["decisions"][0]["question"], "How deep to go?");
    let r = rpc(&sock, "worker/result", json!({"jobId": job}));
    assert_eq!(ok(&r)["output"], "Report on Logging");
    // What the work used: the scripted worker reports nothing, so there is nothing to sum.
    let u = rpc(&sock, "worker/usage", json!({"by": "day", "since": "2020-01-01"}));
    assert_eq!((ok(&u)["by"].as_str(), ok(&u)["rows"].as_array().map(Vec::len)), (Some("day"), Some(0)), "{u}");
    assert_eq!(err_code(&rpc(&sock, "worker/usage", json!({"since": "last week"}))), -32602);
    // The same through MCP tools/call.
    let via_tool = rpc(&sock, "tools/call", json!({"name": "status", "arguments": {"jobId": job}}));
    assert_eq!(ok(&via_tool)["isError"], false);
    assert!(ok(&via_tool)["content"][0]["text"].as_str().is_some_and(|t| t.contains("completed")));

    // list and its glob filter.
    let all = rpc(&sock, "worker/list", json!({}));
    assert_eq!(ok(&all)["jobs"][0], json!({"jobId": job, "status": "completed"}));
    let f = rpc(&sock, "worker/list", json!({"detail": "detailed", "filter": "Survey *"}));
    assert_eq!(ok(&f)["jobs"][0]["description"], "Survey logs");
    assert_eq!(ok(&rpc(&sock, "worker/list", json!({"filter": "nope*"})))["jobs"], json!([]));

    // A job whose worker asks: status lists the open question, answer answers it (refused when
    // none is open, as for a job that asked nothing), and the worker gets it.
    assert_eq!(err_code(&rpc(&sock, "worker/answer", json!({"jobId": job, "text": "x"}))), -32602);
    let asking = ok(&rpc(
        &sock,
        "worker/dispatch",
        json!({"description": "Hue", "task": "wait-for: Which hue?\nx", "config": {"worker": "scribe"}}),
    ))["jobId"]
        .as_str()
        .expect("id")
        .to_string();
    wait_for("the question open", || {
        ok(&rpc(&sock, "worker/status", json!({"jobId": asking})))["openQuestions"][0]["question"] == "Which hue?"
    });
    let a = rpc(&sock, "worker/answer", json!({"jobId": asking, "text": "teal", "question": 1}));
    assert_eq!(ok(&a)["question"], 1, "{a}");
    wait_status(&p, &asking, "completed");
    assert!(ok(&rpc(&sock, "worker/result", json!({"jobId": asking})))["output"].as_str().is_some_and(|o| o.contains("answer: teal")));
    assert_eq!(ok(&rpc(&sock, "worker/status", json!({"jobId": asking})))["openQuestions"], json!([]));

    // A failed job: result and delete refused.
    let failed = ok(&rpc(&sock, "worker/dispatch", json!({"description": "Quiet", "task": "x", "config": {"worker": "silent"}})))["jobId"]
        .as_str()
        .expect("id")
        .to_string();
    wait_status(&p, &failed, "failed");
    assert_eq!(err_code(&rpc(&sock, "worker/result", json!({"jobId": failed}))), -32602);
    let del = rpc(&sock, "worker/delete", json!({"jobId": failed}));
    assert_eq!(err_code(&del), -32602);
    assert!(del["error"]["message"].as_str().is_some_and(|m| m.contains("only completed or cancelled")), "{del}");

    // A running job: delete refused; cancel, cancel again (idempotent), then delete.
    let slow = ok(&rpc(
        &sock,
        "worker/dispatch",
        json!({"description": "Slow", "task": "sleep: 300\nx", "config": {"worker": "sleeper", "maxTurns": 3}}),
    ))["jobId"]
        .as_str()
        .expect("id")
        .to_string();
    wait_status(&p, &slow, "in_progress");
    assert!(p.artifact(&slow).contains("max_turns: 3"));
    assert_eq!(err_code(&rpc(&sock, "worker/delete", json!({"jobId": slow}))), -32602);
    assert_eq!(ok(&rpc(&sock, "worker/cancel", json!({"jobId": slow})))["status"], "cancelled");
    wait_status(&p, &slow, "cancelled");
    assert_eq!(ok(&rpc(&sock, "worker/cancel", json!({"jobId": slow})))["status"], "cancelled");
    // Until its cleanup is done the cancelled job is refused, with that reason, then deleted.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let d = rpc(&sock, "worker/delete", json!({"jobId": slow}));
        if d.get("error").is_none() {
            assert_eq!(d["result"]["deleted"], true);
            break;
        }
        assert!(d["error"]["message"].as_str().is_some_and(|m| m.contains("still winding down")), "{d}");
        assert!(std::time::Instant::now() < deadline, "never settled: {d}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(ok(&rpc(&sock, "worker/delete", json!({"jobId": job})))["deleted"], true);
    assert!(!p.artifact_path(&job).exists() && !p.branches().iter().any(|b| b.contains(&job)));
    assert!(p.artifact_path(&failed).exists(), "the failed job was not touched");

    // Unknown ids, traversal, wrong types, unknown methods.
    for (method, params) in [
        ("worker/status", json!({"jobId": "no-such-job"})),
        ("worker/result", json!({"jobId": "no-such-job"})),
        ("worker/delete", json!({"jobId": "no-such-job"})),
        ("worker/cancel", json!({"jobId": "../../etc"})),
        ("worker/status", json!({"jobId": 42})),
        ("worker/dispatch", json!({"description": "x"})),
        ("worker/dispatch", json!({"description": "x", "task": "y", "config": {"worker": "../w"}})),
        ("worker/list", json!({"detail": "everything"})),
        ("worker/list", json!({"filter": "[unclosed"})),
    ] {
        assert_eq!(err_code(&rpc(&sock, method, params.clone())), -32602, "{method} {params}");
    }
    assert_eq!(err_code(&rpc(&sock, "worker/explode", json!({}))), -32601);
    assert_eq!(err_code(&rpc(&sock, "nope", json!({}))), -32601);
    let n_before = std::fs::read_dir(p.root.join(".lore/commissions")).expect("dir").count();

    // Malformed JSON, not JSON-RPC, oversized, wrong path or verb.
    let (code, body) = raw(&mut UnixStream::connect(&sock).expect("connect"), &post("{not json", None));
    assert_eq!((code, serde_json::from_str::<Value>(&body).expect("json")["error"]["code"].as_i64()), (200, Some(-32700)));
    let (_, body) = raw(&mut UnixStream::connect(&sock).expect("connect"), &post(r#"{"id": 1, "method": 5}"#, None));
    assert_eq!(serde_json::from_str::<Value>(&body).expect("json")["error"]["code"], -32600);
    let huge = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"worker/dispatch","params":{{"description":"x","task":"{}"}}}}"#,
        "a".repeat(2 * 1024 * 1024)
    );
    let (code, _) = raw(&mut UnixStream::connect(&sock).expect("connect"), &post(&huge, None));
    assert_eq!(code, 413);
    let (code, _) = raw(&mut UnixStream::connect(&sock).expect("connect"), b"GET /mcp HTTP/1.1\r\n\r\n");
    assert_eq!(code, 405);
    let (code, _) = raw(&mut UnixStream::connect(&sock).expect("connect"), b"POST /other HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}");
    assert_eq!(code, 404);
    assert_eq!(std::fs::read_dir(p.root.join(".lore/commissions")).expect("dir").count(), n_before, "bad input wrote nothing");
}

#[test]
fn loopback_tcp_needs_the_bearer_token() {
    let p = Project::new(&["scripted-researcher"]);
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("port").local_addr().expect("addr").port();
    let addr = format!("127.0.0.1:{port}");
    let _svc = Service::start(&p, &[], &["--listen", &addr]);
    let token_file = p.home.join("token");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&token_file).expect("token").permissions().mode() & 0o777, 0o600);
    let token = std::fs::read_to_string(&token_file).expect("token");
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "worker/list", "params": {}}).to_string();
    let connect = || std::net::TcpStream::connect(&addr).expect("connect");
    assert_eq!(raw(&mut connect(), &post(&body, None)).0, 401);
    assert_eq!(raw(&mut connect(), &post(&body, Some("wrong"))).0, 401);
    let (code, reply) = raw(&mut connect(), &post(&body, Some(token.trim())));
    assert_eq!(code, 200, "{reply}");
    assert_eq!(serde_json::from_str::<Value>(&reply).expect("json")["result"]["jobs"], json!([]));
}

#[test]
fn only_loopback_addresses_are_served() {
    let p = Project::new(&[]);
    let (code, _, err) = p.run(&["watch", "--listen", "0.0.0.0:7777"]);
    assert_eq!(code, 1);
    assert!(err.contains("only loopback addresses"), "{err}");
}

/// `tools/list` of an MCP server on stdio (`guild-hall <args>`): initialize, then list.
fn mcp_tools(p: &Project, args: &[&str], env: &[(&str, &Path)]) -> Value {
    use std::io::BufRead;
    let mut cmd = p.cmd();
    cmd.args(args).stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("mcp server");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut lines = std::io::BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut send = |v: Value| writeln!(stdin, "{v}").expect("send");
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}}),
    );
    let _init = lines.next().expect("initialize reply").expect("line");
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}));
    let reply: Value = serde_json::from_str(&lines.next().expect("tools/list reply").expect("line")).expect("json");
    let _ = child.kill();
    let _ = child.wait();
    reply["result"]["tools"].clone()
}

/// Name → (description, input schema), the part of a tool every face must agree on.
fn by_name(tools: &Value) -> std::collections::BTreeMap<String, (Value, Value)> {
    tools
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| (t["name"].as_str().unwrap_or("").to_string(), (t["description"].clone(), t["inputSchema"].clone())))
        .collect()
}

#[test]
fn every_face_of_a_tool_agrees() {
    let p = Project::new(&["scripted-researcher"]);
    let sock = p.tmp.path().join("gh.sock");
    let _svc = Service::start(&p, &[], &["--socket", sock.to_str().expect("utf8")]);

    // The dispatcher: `mcp --manager` and the worker/* endpoint list the same tools.
    let manager = by_name(&mcp_tools(&p, &["mcp", "--manager"], &[]));
    let endpoint = by_name(&ok(&rpc(&sock, "tools/list", json!({})))["tools"]);
    assert_eq!(manager.keys().collect::<Vec<_>>(), crate::common::DISPATCHER_TOOLS);
    assert_eq!(manager, endpoint, "mcp --manager and worker/* describe the dispatcher alike");
    // And the command line: `guild-hall job <tool>`, from the same list.
    let (_, job_help, _) = p.run(&["job", "--help"]);
    for (name, (description, _)) in &manager {
        let cli = name.replace('_', "-");
        assert!(job_help.contains(&format!("  {cli} ")), "{cli} missing from `guild-hall job`:\n{job_help}");
        let description = description.as_str().unwrap_or("");
        assert!(job_help.contains(&description[..30.min(description.len())]), "{name}'s description differs on the CLI");
    }
    assert!(manager["dispatch"].1["properties"]["config"].is_object(), "config is typed: {:?}", manager["dispatch"]);

    // The worker toolbox: `guild-hall mcp`, the CLI and the system prompt name the same tools.
    let wt = p.tmp.path().join("wt");
    std::fs::create_dir_all(&wt).expect("mkdir");
    let mailbox = p.tmp.path().join("events.jsonl");
    let toolbox = by_name(&mcp_tools(
        &p,
        &["mcp"],
        &[
            ("GUILD_HALL_MAILBOX", &mailbox),
            ("GUILD_HALL_WORKTREE", &wt),
            ("GUILD_HALL_ATTEMPT", Path::new("1")),
            ("GUILD_HALL_COMMISSION", Path::new("c")),
        ],
    ));
    let (_, help, _) = p.run(&["toolbox", "--help"]);
    let id = p.create("scripted-researcher", "Prompted", "Topic\nGo.");
    wait_for("the watcher to dispatch it", || p.try_state_dir(&id).is_some_and(|d| d.join("system-prompt.md").exists()));
    let prompt = std::fs::read_to_string(p.state_dir(&id).join("system-prompt.md")).expect("system prompt");
    assert_eq!(toolbox.len(), 10);
    for (name, (description, _)) in &toolbox {
        let cli = name.replace('_', "-");
        assert!(help.contains(&format!("  {cli} ")), "{cli} missing from the CLI:\n{help}");
        assert!(prompt.contains(&format!("- {name} (shell: `toolbox {cli}")), "{name} missing from the system prompt:\n{prompt}");
        let description = description.as_str().unwrap_or("");
        assert!(help.contains(&description[..40.min(description.len())]), "{name}'s description differs on the CLI");
        assert!(prompt.contains(description), "{name}'s description differs in the system prompt");
    }

    // A meeting's toolbox: `guild-hall mcp` with GUILD_HALL_MEETING offers the meeting tools,
    // described as on the CLI, and none of the commission-only ones.
    let meeting = by_name(&mcp_tools(
        &p,
        &["mcp"],
        &[
            ("GUILD_HALL_MAILBOX", &mailbox),
            ("GUILD_HALL_WORKTREE", &wt),
            ("GUILD_HALL_ATTEMPT", Path::new("1")),
            ("GUILD_HALL_MEETING", Path::new("m")),
        ],
    ));
    assert_eq!(
        meeting.keys().collect::<Vec<_>>(),
        ["link_artifact", "propose_followup", "read_artifact", "record_decision", "store_memory", "summarize_progress", "write_artifact"]
    );
    for (name, (description, _)) in &meeting {
        let cli = name.replace('_', "-");
        assert!(help.contains(&format!("  {cli} ")), "{cli} missing from the CLI:\n{help}");
        let description = description.as_str().unwrap_or("");
        assert!(help.contains(&description[..40.min(description.len())]), "{name}'s description differs on the CLI");
        if let Some(shared) = toolbox.get(name) {
            assert_eq!(shared.0.as_str(), Some(description), "{name} is described alike in both toolboxes");
        }
    }
}

/// A commission's change and a wave task's are the same JSON from the command line
/// (`guild-hall diff --json`, `job diff`, `plan diff`), the `worker/diff` and `plan/diff`
/// methods and MCP's `tools/call`; a job with no branch is not found on each.
#[test]
fn a_diff_is_the_same_json_on_every_face() {
    let p = Project::new(&[]);
    p.script_worker("editor", "full", "printf 'more\\n' >> README.md\n\"$GUILD_HALL_BIN\" toolbox submit-result --summary done");
    p.script_worker(
        "planter",
        "full",
        "printf 'planted\\n' > planted.txt\n\"$GUILD_HALL_BIN\" toolbox task-update --status done --sequence 1 --idempotency-key done >/dev/null",
    );
    let id = p.create("editor", "Edit", "Edit the readme.");
    crate::plan::fixtures::write_plan(&p, "pl", "  - - {id: t, worker: planter, prompt: go}\n");
    p.settle();
    p.write_commission("later", "---\nworker: editor\nstatus: draft\n---\nNot yet.\n");
    let cli: Value = serde_json::from_str(&p.ok(&["diff", &id, "--json"])).expect("json");
    assert_eq!((cli["additions"].as_u64(), cli["files"][0]["path"].as_str()), (Some(1), Some("README.md")), "{cli:#}");
    let job: Value = serde_json::from_str(&p.ok(&["job", "diff", "--jobId", &id])).expect("json");
    assert_eq!(job, cli);
    let task: Value = serde_json::from_str(&p.ok(&["diff", "pl:exec:wave-1:task-1", "--json"])).expect("json");
    assert_eq!(task["files"][0]["path"], "planted.txt", "{task:#}");

    let sock = p.tmp.path().join("gh.sock");
    let _svc = Service::start(&p, &[], &["--socket", sock.to_str().expect("utf8")]);
    assert_eq!(ok(&rpc(&sock, "worker/diff", json!({"jobId": id}))), &cli);
    assert_eq!(ok(&rpc(&sock, "plan/diff", json!({"id": "pl", "task": "t"}))), &task);
    let stat = rpc(&sock, "worker/diff", json!({"jobId": id, "stat": true}));
    assert!(ok(&stat)["files"][0].get("patch").is_none() && ok(&stat)["additions"] == 1, "{stat}");
    let call = rpc(&sock, "tools/call", json!({"name": "diff", "arguments": {"jobId": id}}));
    assert_eq!(&ok(&call)["structuredContent"], &cli);
    // No branch yet: not found, on each face.
    let none = rpc(&sock, "worker/diff", json!({"jobId": "later"}));
    assert_eq!((err_code(&none), none["error"]["data"]["kind"].as_str()), (-32602, Some("not_found")), "{none}");
    let (code, _, err) = p.run(&["job", "diff", "--jobId", "later"]);
    assert_eq!(code, 3, "{err}");
}

/// `meeting/*` over the watcher's socket, with a real client (curl) reading the turn's
/// chunked JSON lines as they come: an event arrives while the turn is still running, and a
/// client that goes away interrupts the turn, not the meeting.
#[test]
fn meetings_over_the_socket_stream_their_turns() {
    use std::io::BufRead;
    let p = Project::new(&["counsel"]);
    let sock = p.tmp.path().join("gh.sock");
    // The request timeout bounds reading the request, never the reply: a turn runs longer.
    let _svc = Service::start(&p, &[], &["--socket", sock.to_str().expect("utf8"), "--request-timeout", "1s"]);
    let curl = |body: Value| {
        let spawned = std::process::Command::new("curl")
            .args(["-sN", "--unix-socket", sock.to_str().expect("utf8"), "-X", "POST", "http://localhost/mcp", "-d"])
            .arg(body.to_string())
            .stdout(std::process::Stdio::piped())
            .spawn();
        needs(spawned, "curl", "to read the endpoint's stream as an HTTP client")
    };
    let out = curl(json!({"jsonrpc": "2.0", "id": 1, "method": "meeting/start",
        "params": {"worker": "counsel", "id": "wire", "message": "hello\nlink: .lore/wire.md"}}))
    .wait_with_output()
    .expect("curl");
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).expect("a JSON line")).collect();
    let types: Vec<&str> = lines.iter().filter_map(|l| l["type"].as_str()).collect();
    assert_eq!(types, ["session", "text_delta", "text_delta", "tool_use", "tool_result", "turn_end"], "{lines:?}");
    let last = lines.last().expect("the response");
    assert_eq!(last["id"], 1);
    assert_eq!(last["result"]["outcome"], "ended");

    // A turn with a long quiet stretch (longer than the request timeout) runs to its end.
    let out = curl(json!({"jsonrpc": "2.0", "id": 3, "method": "meeting/send", "params": {"id": "wire", "message": "pause: 2"}}))
        .wait_with_output()
        .expect("curl");
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).expect("a JSON line")).collect();
    assert!(lines.iter().any(|l| l["text"] == "after the pause"), "{lines:?}");
    assert_eq!(lines.last().map(|l| l["result"]["outcome"].clone()), Some(json!("ended")), "{lines:?}");

    // A slow turn: the first delta is read before the turn has ended.
    let mut slow = curl(json!({"jsonrpc": "2.0", "id": 2, "method": "meeting/send", "params": {"id": "wire", "message": "slow"}}));
    let mut reader = std::io::BufReader::new(slow.stdout.take().expect("stdout"));
    let turn_json =
        p.home.join("state").read_dir().expect("state").next().expect("project").expect("entry").path().join("meetings/wire/turn.json");
    let mut seen_while_running = false;
    for _ in 0..20 {
        let mut line = String::new();
        if reader.read_line(&mut line).expect("read") == 0 {
            break;
        }
        let v: Value = serde_json::from_str(&line).expect("a JSON line");
        if v["type"] == "text_delta" && turn_json.exists() {
            seen_while_running = true;
            break;
        }
    }
    assert!(seen_while_running, "events stream while the turn runs");
    // The client goes away: the turn is interrupted, the meeting stays open.
    let _ = slow.kill();
    let _ = slow.wait();
    wait_for("the interrupted turn to end", || !turn_json.exists());
    let listed = rpc(&sock, "meeting/list", json!({}));
    assert_eq!(ok(&listed)["meetings"][0]["status"], "open");

    let closed = rpc(&sock, "meeting/close", json!({"id": "wire"}));
    assert_eq!(ok(&closed)["closed"], true, "{closed}");
    assert!(git(&p.root, &["show", "claude/main:.lore/wire.md"]).contains("meeting wire"));
    let unknown = rpc(&sock, "meeting/accept", json!({"id": "nope"}));
    assert_eq!(err_code(&unknown), -32602);
}

#[test]
fn a_socket_in_use_names_the_server_holding_it() {
    let p = Project::new(&[]);
    let q = Project::new(&[]);
    let sock = p.tmp.path().join("gh.sock");
    let svc = Service::start(&p, &[], &["--socket", sock.to_str().expect("utf8")]);
    let mut second = q
        .cmd()
        .args(["watch", "--socket", sock.to_str().expect("utf8")])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    wait_for("the second server to give up", || second.try_wait().expect("poll").is_some());
    let out = second.wait_with_output().expect("wait");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains(&format!("is in use by another server (pid {}: ", svc.pid())) && err.contains(" watch "), "{err}");
    assert!(sock.exists(), "the first server's socket is left alone");
}

/// A burst of idle connections far larger than the cap, and than the watcher's file limit
/// (1024, a common default): every one over the cap gets a whole 503 and a JSON error (the
/// oldest idle ones make way for newer ones), a request in flight completes — its header
/// was sent before the burst, so it is never shed, even when its thread has not read it yet —
/// and the watcher goes on working: a commission dispatched during the burst runs and merges.
#[test]
fn a_burst_of_idle_connections_is_capped_under_a_1024_fd_limit() {
    let p = Project::new(&["scripted-researcher"]);
    let sock = p.tmp.path().join("gh.sock");
    let svc = Service::start_with_fd_limit(
        &p,
        1024,
        &["--socket", sock.to_str().expect("utf8"), "--max-connections", "32", "--request-timeout", "10m"],
    );
    let limits = std::fs::read_to_string(format!("/proc/{}/limits", svc.pid())).expect("limits");
    let open_files = limits.lines().find(|l| l.starts_with("Max open files")).unwrap_or("").to_string();
    assert!(open_files.split_whitespace().nth(3) == Some("1024"), "{open_files}");

    // In flight before the burst: the headers are sent, the body comes after it.
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": "worker/list", "params": {}}).to_string();
    let request = String::from_utf8(post(&body, None)).expect("utf8");
    let (head, rest) = request.split_at(request.len() - body.len());
    let mut in_flight = UnixStream::connect(&sock).expect("connect");
    in_flight.write_all(head.as_bytes()).expect("headers");
    assert_eq!(rest, body);

    let burst: Vec<UnixStream> = (0..1500).map(|_| UnixStream::connect(&sock).expect("connect")).collect();
    let id = p.create("scripted-researcher", "During the burst", "Topic\nSurvey it.");

    let mut pending: Vec<UnixStream> = burst;
    let mut refused = Vec::new();
    wait_for("the connections over the cap to be refused", || {
        let mut still = Vec::new();
        for mut s in std::mem::take(&mut pending) {
            match answered(&mut s) {
                Some(reply) => refused.push(reply),
                None => still.push(s),
            }
        }
        pending = still;
        refused.len() >= 1500 - 31
    });
    assert!(pending.len() <= 31, "{} connections held past the cap of 32", pending.len());
    for reply in &refused {
        assert!(reply.starts_with("HTTP/1.1 503 Service Unavailable\r\n"), "{reply}");
        let json = reply.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
        let v: Value = serde_json::from_str(json).expect("a JSON error");
        assert!(v["error"].as_str().is_some_and(|e| e.starts_with("busy: 32 connections")), "{v}");
    }

    // The watcher kept working: the commission ran and merged.
    wait_status(&p, &id, "completed");
    assert!(p.timeline(&id).iter().any(|e| e["kind"] == "merge"));
    // The request in flight completes.
    in_flight.write_all(body.as_bytes()).expect("body");
    let mut reply = String::new();
    in_flight.read_to_string(&mut reply).expect("reply");
    assert!(reply.starts_with("HTTP/1.1 200 OK"), "{reply}");
    assert!(reply.contains(&format!("\"jobId\":\"{id}\"")), "{reply}");
    // Once the idle ones go away, their slots are free again.
    drop(pending);
    wait_for("a slot to be free", || {
        let (code, _) = raw(&mut UnixStream::connect(&sock).expect("connect"), &post(&body, None));
        code == 200
    });
    assert!(!svc.log().contains("Too many open files"), "{}", svc.log());
}

/// The request timeout bounds the whole request: a client dripping a byte at a time is cut
/// off with a 408 before it is done, however short each wait between bytes.
#[test]
fn a_dripping_client_is_cut_off_by_the_request_timeout() {
    let p = Project::new(&[]);
    let sock = p.tmp.path().join("gh.sock");
    let _svc = Service::start(&p, &[], &["--socket", sock.to_str().expect("utf8"), "--request-timeout", "1s"]);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string();
    let request = post(&body, None);
    let padded: Vec<u8> = [&request[..20], format!("X-Pad: {}\r\n", "a".repeat(300)).as_bytes(), &request[20..]].concat();
    let mut s = UnixStream::connect(&sock).expect("connect");
    let mut sent = 0;
    let mut reply = None;
    for b in &padded {
        if s.write_all(std::slice::from_ref(b)).is_err() {
            break;
        }
        sent += 1;
        if let Some(r) = answered(&mut s) {
            reply = Some(r);
            break;
        }
        s.set_nonblocking(false).expect("blocking");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let reply = reply.or_else(|| {
        s.set_nonblocking(false).ok()?;
        let mut r = String::new();
        s.read_to_string(&mut r).ok().map(|_| r)
    });
    assert!(sent < padded.len(), "the whole request was read ({sent} bytes, one at a time): {reply:?}");
    let reply = reply.unwrap_or_default();
    assert!(reply.starts_with("HTTP/1.1 408 Request Timeout"), "{reply}");
    assert!(reply.contains("not complete within 1s"), "{reply}");
}

/// A wrong token is refused the moment its header line arrives: nothing more is waited for.
#[test]
fn a_wrong_token_is_refused_as_its_header_arrives() {
    let p = Project::new(&[]);
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("port").local_addr().expect("addr").port();
    let addr = format!("127.0.0.1:{port}");
    let _svc = Service::start(&p, &[], &["--listen", &addr, "--request-timeout", "10m"]);
    let mut s = std::net::TcpStream::connect(&addr).expect("connect");
    s.write_all(b"POST /mcp HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer wrong\r\n").expect("headers");
    // The headers never end: only a check on arrival can answer (else the 10-minute timeout).
    s.set_read_timeout(Some(std::time::Duration::from_secs(60))).expect("timeout");
    let mut reply = String::new();
    let _ = s.read_to_string(&mut reply);
    assert!(reply.starts_with("HTTP/1.1 401 Unauthorized"), "{reply:?}");
}
