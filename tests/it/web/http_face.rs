//! The web face over HTTP, without a browser: the token, then the cookie, else 401; the Host
//! and Origin checks; a worker's process refused; every outside byte escaped; the board's
//! event stream after a file written by another process; a commission's log followed; and
//! each action through `/api` changing the artifact, carried out by the reconciler `serve`
//! runs beside it.

use serde_json::json;

use super::server::Web;
use crate::common::*;

/// A worker that leaves its prompt in `seen-<attempt>.txt`, adds a line to `work.txt`, says
/// something with an escape sequence in its log, and submits.
const RECORDER: &str = r#"cp "$GUILD_HALL_PROMPT_FILE" "seen-$GUILD_HALL_ATTEMPT.txt"
echo "attempt $GUILD_HALL_ATTEMPT" >> work.txt
printf 'log line \033[31mred\033[0m <b>bold</b>\n'
"$GUILD_HALL_BIN" toolbox submit-result --summary "did attempt $GUILD_HALL_ATTEMPT""#;

fn review_project() -> Project {
    let p = Project::new(&["scribe"]);
    p.script_worker("recorder", "full", RECORDER);
    p
}

/// Attempt 1 of `id` submitted and held in review (settled before the server starts: it holds
/// the project's lock while it runs).
fn in_review(p: &Project, id: &str) {
    p.write_commission(id, "---\ntitle: Do the work\nworker: recorder\nreview: required\n---\nDo the work.\n");
    p.settle();
    assert_eq!(p.status(id), "review", "{}", p.artifact(id));
}

/// Write a file whole, as an editor saving atomically does.
fn save(path: &std::path::Path, text: &str) {
    let tmp = path.with_file_name(format!(".{}.tmp", path.file_name().and_then(|n| n.to_str()).unwrap_or("x")));
    std::fs::write(&tmp, text).expect("write");
    std::fs::rename(&tmp, path).expect("rename");
}

#[test]
fn the_token_lets_a_browser_in_once_then_its_cookie_and_nothing_else_does() {
    let p = Project::new(&["scribe"]);
    let web = Web::start(&p, &[]);
    let host = format!("Host: {}", web.host);
    // Nothing without the token or the cookie.
    for target in ["/", "/commissions/x", "/events?view=board", "/assets/app.js"] {
        assert_eq!(web.raw("GET", target, std::slice::from_ref(&host), "").status, 401, "{target}");
    }
    assert_eq!(web.raw("GET", "/?token=wrong", std::slice::from_ref(&host), "").status, 401);
    // The token once: the cookie (HttpOnly, SameSite=Strict), and the same place without it.
    let target = web.url.strip_prefix(&format!("http://{}", web.host)).expect("the URL is the server's");
    assert_eq!(target, format!("/?token={}", web.token));
    let first = web.raw("GET", target, std::slice::from_ref(&host), "");
    assert_eq!(first.status, 303, "{first:?}");
    assert_eq!(first.header("location"), Some("/"));
    let cookie = first.header("set-cookie").expect("a cookie");
    assert!(cookie.starts_with(&format!("{}; ", web.cookie())), "{cookie}");
    assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"), "{cookie}");
    assert_eq!(first.header("referrer-policy"), Some("no-referrer"));
    // The cookie: the board, with its own style and script only.
    let board = web.get("/");
    assert_eq!(board.status, 200);
    assert!(board.body.contains("data-testid=\"board\""), "{}", board.body);
    assert!(board.header("content-security-policy").is_some_and(|c| c.contains("script-src 'self'")));
    assert!(web.get("/assets/app.js").body.contains("EventSource"));
    assert!(web.get("/assets/style.css").body.contains(".columns"));
    // Another name for the server (DNS rebinding): refused, cookie or not.
    let evil = web.raw("GET", "/", &["Host: evil.example".to_string(), format!("Cookie: {}", web.cookie())], "");
    assert_eq!(evil.status, 403);
    // A change needs the cookie and an Origin of its own.
    let args = r#"{"jobId":"x"}"#;
    let no_origin = web.raw("POST", "/api/commission/status", &[host.clone(), format!("Cookie: {}", web.cookie())], args);
    assert_eq!(no_origin.status, 403, "{no_origin:?}");
    let other = [host.clone(), format!("Cookie: {}", web.cookie()), "Origin: http://evil.example".to_string()];
    assert_eq!(web.raw("POST", "/api/commission/status", &other, args).status, 403);
    let no_cookie = [host.clone(), format!("Origin: http://{}", web.host)];
    assert_eq!(web.raw("POST", "/api/commission/status", &no_cookie, args).status, 401);
    // With both: the catalogue answers (here: no such commission).
    let answer = web.post("/api/commission/status", &json!({"jobId": "x"}));
    assert_eq!(answer.status, 404, "{answer:?}");
    assert_eq!(answer.json()["kind"], "not_found");
    assert_eq!(web.post("/api/commission/no-such-operation", &json!({})).status, 404);
    // A stream's id becomes paths: one that is no id is refused before any is built.
    for view in ["commission", "meeting", "plan"] {
        let bad = web.get(&format!("/events?view={view}&id=..%2F..%2Fx"));
        assert_eq!(bad.status, 400, "{view}: {bad:?}");
        assert!(bad.body.contains("id="), "{bad:?}");
    }
}

#[test]
fn the_url_printed_for_another_loopback_address_lets_a_browser_in() {
    let p = Project::new(&["scribe"]);
    let web = Web::start(&p, &["--listen", "127.0.0.2:0"]);
    assert!(web.host.starts_with("127.0.0.2:"), "{}", web.url);
    let host = format!("Host: {}", web.host);
    let target = format!("/?token={}", web.token);
    assert_eq!(web.raw("GET", &target, std::slice::from_ref(&host), "").status, 303);
    let cookie = format!("Cookie: {}", web.cookie());
    assert_eq!(web.raw("GET", "/", &[host.clone(), cookie.clone()], "").status, 200);
    // Another address on the same port is still another server's name.
    let other = format!("Host: 127.0.0.3:{}", web.port());
    assert_eq!(web.raw("GET", "/", &[other, cookie], "").status, 403);
}

#[test]
fn a_workers_process_is_refused_even_with_the_cookie() {
    let p = Project::new(&["scribe"]);
    let web = Web::start(&p, &[]);
    let port = web.port();
    // A process with an attempt's mark (as a worker's are): bash's /dev/tcp, the cookie sent.
    let script = format!(
        "exec 3<>/dev/tcp/127.0.0.1/{port}; printf 'GET / HTTP/1.1\\r\\nHost: 127.0.0.1:{port}\\r\\nCookie: {}\\r\\n\\r\\n' >&3; cat <&3",
        web.cookie()
    );
    let run = |marked: bool| {
        let mut c = std::process::Command::new("bash");
        c.arg("-c").arg(&script).env("GUILD_HALL_HOME", &p.home);
        if marked {
            c.env("GUILD_HALL_RUN_ID", "web-test-run");
        } else {
            c.env_remove("GUILD_HALL_RUN_ID");
        }
        String::from_utf8_lossy(&c.output().expect("bash").stdout).into_owned()
    };
    let refused = run(true);
    assert!(refused.starts_with("HTTP/1.1 403"), "{refused}");
    assert!(refused.contains("GUILD_HALL_RUN_ID"), "the refusal says why: {refused}");
    // The same request from a process that is no worker's is served.
    let served = run(false);
    assert!(served.starts_with("HTTP/1.1 200"), "{served}");
}

#[test]
fn every_byte_a_worker_or_a_file_wrote_is_escaped() {
    let p = review_project();
    p.write_commission(
        "xss",
        "---\ntitle: \"<script>alert('x')</script> \\x1b]52;c;aGk=\\x07\"\nworker: recorder\nreview: required\n---\nDo it <img src=x onerror=alert(1)>.\n",
    );
    p.settle();
    assert_eq!(p.status("xss"), "review", "{}", p.artifact("xss"));
    let web = Web::start(&p, &[]);
    for target in ["/", "/commissions/xss"] {
        let page = web.get(target).body;
        assert!(page.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"), "{target}: {page}");
        assert!(!page.contains("<script>alert"), "{target}: {page}");
        assert!(!page.contains('\x1b') && !page.contains('\x07'), "{target}: a control character reached the page");
    }
    let page = web.get("/commissions/xss").body;
    // Its title: the OSC 52 sequence (the clipboard) shown as the CLI shows it, not carried out.
    assert!(page.contains(r#"data-testid="title">&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; \x1b]52;c;aGk=\x07</span>"#), "{page}");
    // The frontmatter as written (its YAML escapes are text); the log's ESC shown as the CLI shows it.
    assert!(page.contains(r"\x1b]52;c;aGk=\x07"), "{page}");
    assert!(page.contains(r"log line \x1b[31mred\x1b[0m &lt;b&gt;bold&lt;/b&gt;"), "{page}");
    // The diff: a line of the work, escaped, with a comment button on it.
    assert!(page.contains("data-testid=\"diff-line\" data-path=\"work.txt\" data-line=\"1\""), "{page}");
    assert!(page.contains("data-testid=\"comment-line\""), "{page}");
}

#[test]
fn the_board_stream_sends_a_commission_written_by_another_process() {
    let p = Project::new(&["scribe"]);
    let web = Web::start(&p, &[]);
    // Its own reconciler holds the project once it has started.
    wait_for("the board to say this server reconciles", || web.get("/").body.contains("Reconciled by this server"));
    let page = web.get("/").body;
    let generation = page.split("data-generation=\"").nth(1).and_then(|r| r.split('"').next()).expect("the page's generation");
    let mut events = web.events(&format!("/events?view=board&since={generation}"));
    save(&p.artifact_path("fresh"), "---\ntitle: Written elsewhere\nworker: scribe\nstatus: draft\n---\nLater.\n");
    let board = events.wait("the board with the new commission", |name, data| name == "board" && data.contains("data-id=\"fresh\""));
    assert!(board.contains("Written elsewhere"), "{board}");
    // Its status changes: sent again.
    let text = p.artifact("fresh").replace("title: Written elsewhere", "title: Renamed here");
    save(&p.artifact_path("fresh"), &text);
    events.wait("the board with the new title", |name, data| name == "board" && data.contains("Renamed here"));
}

#[test]
fn approve_through_the_api_is_carried_out_by_the_reconciler_beside_the_face() {
    let p = review_project();
    in_review(&p, "job");
    let web = Web::start(&p, &[]);
    let page = web.get("/commissions/job").body;
    assert!(page.contains("id=\"approve\"") && page.contains("id=\"revise-form\""), "{page}");
    let mut events = web.events("/events?view=commission&id=job&review=yes");
    // Approving something not in review is refused, nothing written.
    let refused = web.post("/api/commission/approve", &json!({"jobId": "nope"}));
    assert!(refused.status == 404 || refused.status == 409, "{refused:?}");
    let ok = web.post("/api/commission/approve", &json!({"jobId": "job"}));
    assert_eq!(ok.status, 200, "{ok:?}");
    assert!(ok.json()["text"].is_string(), "{}", ok.body);
    wait_status(&p, "job", "completed");
    assert_eq!(git(&p.root, &["show", "claude/main:work.txt"]), "attempt 1\n");
    // The page's stream says so, and takes the verdicts away (in either order: each part is
    // read when it is sent).
    let (completed, no_verdicts) = (std::cell::Cell::new(false), std::cell::Cell::new(false));
    events.wait("the commission completed, its verdicts gone", |name, data| {
        completed.set(completed.get() || (name == "commission-live" && data.contains(">completed<")));
        no_verdicts.set(no_verdicts.get() || (name == "review" && !data.contains("id=\"approve\"")));
        completed.get() && no_verdicts.get()
    });
}

#[test]
fn revise_with_a_line_comment_reaches_the_worker_and_reject_cancels() {
    let p = review_project();
    in_review(&p, "job");
    in_review(&p, "other");
    let web = Web::start(&p, &[]);
    // No feedback: the operation refuses, as the CLI's does.
    let empty = web.post("/api/commission/revise", &json!({"jobId": "job", "feedback": []}));
    assert_eq!(empty.status, 409, "{empty:?}");
    let feedback = json!([{"text": "make it shorter"}, {"text": "say more here", "path": "work.txt", "line": 1}]);
    let sent = web.post("/api/commission/revise", &json!({"jobId": "job", "feedback": feedback}));
    assert_eq!(sent.status, 200, "{sent:?}");
    // The server's reconciler carries it out (a `reconcile` here would find its lock taken).
    wait_for("attempt 2 in review", || p.status_json("job")["attempt"] == 2 && p.status("job") == "review");
    let seen = git(&p.root, &["show", "claude/commission/job:seen-2.txt"]);
    assert!(seen.contains("- make it shorter") && seen.contains("- work.txt:1: say more here"), "{seen}");
    let rejected = web.post("/api/commission/reject", &json!({"jobId": "other", "message": "not this way"}));
    assert_eq!(rejected.status, 200, "{rejected:?}");
    wait_status(&p, "other", "cancelled");
    assert!(p.branches().iter().any(|b| b == "claude/commission/other"), "the branch is kept: {:?}", p.branches());
}

#[test]
fn a_question_is_answered_through_the_api() {
    let p = Project::new(&["scribe"]);
    let web = Web::start(&p, &[]);
    let id = p.create("scribe", "Colour", "wait-for: Which <colour>?\nWrite the colour down.");
    wait_for("the question open", || p.artifact(&id).contains("open: true"));
    let page = web.get(&format!("/commissions/{id}")).body;
    assert!(page.contains("data-testid=\"answer-form\""), "{page}");
    assert!(page.contains("Which &lt;colour&gt;?"), "{page}");
    let mut events = web.events(&format!("/events?view=commission&id={id}"));
    let answered = web.post("/api/commission/answer", &json!({"jobId": id, "text": "blue", "question": 1}));
    assert_eq!(answered.status, 200, "{answered:?}");
    wait_status(&p, &id, "completed");
    events.wait("the page completed", |name, data| name == "commission-live" && data.contains(">completed<"));
}

#[test]
fn a_running_watch_keeps_reconciling_and_serve_serves_the_face_only() {
    let p = review_project();
    in_review(&p, "job");
    let watch = Service::start(&p, &[], &[]);
    let web = Web::start(&p, &[]);
    wait_for("serve to say who reconciles", || web.log().contains("reconciled by another process"));
    let board = web.get("/").body;
    assert!(board.contains(&format!("Reconciled by guild-hall watch (pid {})", watch.pid())), "{board}");
    assert_eq!(web.post("/api/commission/approve", &json!({"jobId": "job"})).status, 200);
    // The watch carries it out.
    wait_status(&p, "job", "completed");
    assert!(watch.log().contains("job"), "{}", watch.log());
}

#[test]
fn cancel_through_the_api_stops_a_commission() {
    let p = Project::new(&["scribe", "sleeper"]);
    let web = Web::start(&p, &[]);
    let id = p.create("sleeper", "Sleep", "sleep: 120\nSleep a while.");
    wait_status(&p, &id, "in_progress");
    // Running: no "Run again", and the operation is refused in the reconciler's words.
    assert!(!web.get(&format!("/commissions/{id}")).body.contains("data-testid=\"redispatch\""));
    let refused = web.post("/api/commission/redispatch", &json!({"jobId": id}));
    assert_eq!((refused.status, refused.json()["kind"].as_str()), (409, Some("refused")), "{refused:?}");
    let cancelled = web.post("/api/commission/cancel", &json!({"jobId": id}));
    assert_eq!(cancelled.status, 200, "{cancelled:?}");
    wait_status(&p, &id, "cancelled");
    wait_stopped(&p, &id);
    // Cancelled: its page offers to run it again, and that starts a second attempt.
    let page = web.get(&format!("/commissions/{id}")).body;
    assert!(page.contains("data-api=\"commission/redispatch\"") && page.contains("data-testid=\"redispatch\""), "{page}");
    let again = web.post("/api/commission/redispatch", &json!({"jobId": id}));
    assert_eq!(again.status, 200, "{again:?}");
    assert_eq!(again.json()["reply"], json!({"jobId": id, "requested": "pending"}), "{again:?}");
    wait_for("its second attempt", || p.status_json(&id)["attempt"] == 2 && p.status(&id) == "in_progress");
    web.post("/api/commission/cancel", &json!({"jobId": id}));
    wait_status(&p, &id, "cancelled");
    wait_stopped(&p, &id);
}

/// A page's `data-NAME`.
fn data_of(page: &str, name: &str) -> String {
    page.split(&format!("data-{name}=\"")).nth(1).and_then(|r| r.split('"').next()).unwrap_or_default().to_string()
}

#[test]
fn a_running_workers_log_is_followed_from_where_the_page_left_it() {
    let p = Project::new(&["scribe"]);
    // Says a line, waits for `go` in its worktree, says another (with an escape), submits.
    p.script_worker(
        "talker",
        "full",
        r#"echo "first line"
while [ ! -e go ]; do sleep 0.1; done
printf 'second \033[1mline\n'
"$GUILD_HALL_BIN" toolbox submit-result --summary done"#,
    );
    let web = Web::start(&p, &[]);
    let id = p.create("talker", "Talk", "Talk.");
    let mut page = String::new();
    wait_for("the page showing the log's first line", || {
        page = web.get(&format!("/commissions/{id}")).body;
        page.contains("first line")
    });
    let (attempt, offset) = (data_of(&page, "attempt"), data_of(&page, "offset"));
    assert_eq!(attempt, "1", "{page}");
    let mut events = web.events(&format!(
        "/events?view=commission&id={id}&since={}&attempt={attempt}&offset={offset}&tip={}&review={}",
        data_of(&page, "generation"),
        data_of(&page, "tip"),
        data_of(&page, "review")
    ));
    save(&p.worktree(&id).join("go"), "");
    let more = events.wait("the log's next line", |name, data| name == "append:log" && data.contains("second"));
    // Only what is new (whatever else the attempt logs after it), escaped.
    assert!(more.starts_with("second \\x1b[1mline\n") && !more.contains("first line"), "{more:?}");
    wait_status(&p, &id, "completed");
}

#[test]
fn a_unix_socket_serves_the_same_rules_and_only_loopback_is_listened_on() {
    let p = Project::new(&["scribe"]);
    let (code, _, err) = p.run(&["serve", "--listen", "0.0.0.0:0"]);
    assert_ne!(code, 0);
    assert!(err.contains("only loopback addresses"), "{err}");
    let sock = p.tmp.path().join("web.sock");
    let mut child = p
        .cmd()
        .args(["serve", "--socket"])
        .arg(&sock)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("serve");
    let mut first = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(child.stdout.take().expect("stdout")), &mut first).expect("a line");
    let token = first.trim().split("?token=").nth(1).expect("a token").to_string();
    assert!(first.starts_with("http+unix://"), "{first}");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&sock).expect("the socket").permissions().mode() & 0o777, 0o600);
    let curl = |marked: bool, args: &[&str]| {
        let mut c = std::process::Command::new("curl");
        c.args(["-s", "-o", "/dev/null", "-w", "%{http_code}", "--unix-socket"]).arg(&sock).args(args);
        c.env("GUILD_HALL_HOME", &p.home);
        if marked {
            c.env("GUILD_HALL_RUN_ID", "web-test-run");
        }
        String::from_utf8_lossy(&needs(c.output(), "curl", "an HTTP client over a Unix socket").stdout).into_owned()
    };
    assert_eq!(curl(false, &["http://localhost/"]), "401");
    assert_eq!(curl(false, &[&format!("http://localhost/?token={token}")]), "303");
    let cookie = format!("Cookie: guild_hall={token}");
    assert_eq!(curl(false, &["-H", &cookie, "http://localhost/"]), "200");
    assert_eq!(curl(true, &["-H", &cookie, "http://localhost/"]), "403", "a worker's process is refused");
    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGTERM);
    let _ = child.wait();
}
