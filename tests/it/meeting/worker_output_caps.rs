//! What a meeting's worker says is capped and can never keep the
//! meeting from closing (linked artifacts, notes, follow-up requests), and nothing guild-hall
//! writes for a meeting is an artifact `check` would refuse. The real binary, real git, the
//! scripted `counsel` worker, which floods its own mailbox the way a hostile worker would.

use serde_json::Value;

use super::fixtures::{meeting_path, project_dir, show};
use crate::common::{git, in_pid_namespace, section, Project};

/// The status guild-hall last accepted for meeting `id` (its record), not what the file asks.
fn recorded(p: &Project, id: &str) -> Option<String> {
    let text = std::fs::read_to_string(project_dir(p, "state").join("meetings").join(id).join("record.json")).ok()?;
    serde_json::from_str::<Value>(&text).ok()?["status"].as_str().map(str::to_string)
}

fn log(v: &Value) -> Vec<Value> {
    v["log"].as_array().cloned().unwrap_or_default()
}

fn merged(p: &Project, id: &str) -> bool {
    git(&p.root, &["log", "--format=%B", "claude/main"]).contains(&format!("Guild-Hall-Meeting: {id}"))
}

/// The meeting files there are.
fn meetings(p: &Project) -> Vec<String> {
    let mut ids: Vec<String> = std::fs::read_dir(p.root.join(".lore/meetings"))
        .map(|d| {
            d.filter_map(Result::ok)
                .filter_map(|e| e.file_name().to_str().and_then(|n| n.strip_suffix(".md")).map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    ids.sort();
    ids
}

/// Item 4 for meetings: 3,000 `link_artifact` events used to make every update of the meeting
/// fail ("frontmatter too large"), so it never closed. The frontmatter lists the latest 50
/// with a first entry counting the rest (the log has them all), and the close goes through.
#[test]
fn a_flood_of_links_never_wedges_a_meeting() {
    let p = Project::new(&["counsel"]);
    p.ok(&["meeting", "start", "--worker", "counsel", "--id", "flood", "links: 3000\nlink: .lore/notes/real.md"]);
    let v = show(&p, "flood");
    // The log has every link: one by one up to what a pass records one by one (1,000), the
    // rest counted in one note.
    let links = log(&v).iter().filter(|e| e["kind"] == "link").count();
    assert_eq!(links, 1000, "one by one");
    assert!(
        log(&v).iter().any(|e| e["kind"] == "anomaly" && e["text"].as_str().is_some_and(|t| t.contains("link x2001"))),
        "the rest counted: {:?}",
        log(&v).iter().filter(|e| e["kind"] == "anomaly").collect::<Vec<_>>()
    );
    assert_eq!(v["linked_more"], 2951);
    let text = std::fs::read_to_string(meeting_path(&p, "flood")).expect("read");
    assert!(
        text.contains("- (2951 more linked artifacts, see the log)"),
        "the first entry counts the rest:\n{}",
        &text[..text.len().min(2000)]
    );
    let shown = v["linked_artifacts"].as_array().cloned().unwrap_or_default();
    assert_eq!(shown.len(), 50, "{v}");
    assert_eq!(shown.last(), Some(&Value::from(".lore/notes/real.md")), "the latest last");
    assert_eq!(shown.first(), Some(&Value::from(".lore/flood/artifact-02952.md")), "{shown:?}");
    p.ok(&["check"]);
    let out = p.ok(&["reconcile", "--once", "--json"]);
    assert!(!out.contains("meeting-update"), "converged: {}", &out[..out.len().min(2000)]);

    let out = p.ok(&["meeting", "close", "flood"]);
    assert!(out.contains("2951 more linked artifacts, see the log") && out.contains(".lore/notes/real.md"), "{out}");
    assert_eq!(recorded(&p, "flood").as_deref(), Some("closed"));
    assert!(merged(&p, "flood"), "the meeting's work is merged");
    assert!(git(&p.root, &["show", "claude/main:.lore/notes/real.md"]).contains("Written in meeting flood"));
    p.ok(&["check"]);
}

/// A close always goes through: notes that do not fit beside what a person wrote (a long
/// agenda here) are left out of the frontmatter, which points to the log, and the log event
/// holds them whole (the transcript they came from is removed on close).
#[test]
fn a_close_goes_through_when_the_notes_do_not_fit() {
    let p = Project::new(&["counsel"]);
    let agenda = "Go through every point. ".repeat(2000);
    assert!(agenda.len() > 45_000);
    p.ok(&["meeting", "start", "--worker", "counsel", "--id", "long", "--agenda", &agenda, "hello"]);
    let mut said: Vec<String> = (0..7).map(|i| format!("decide: point {i} {}", "settled at length ".repeat(220))).collect();
    said.push("link: .lore/notes/long.md".into());
    said.extend((0..6).map(|i| format!("summary: part {i} {}", "much was said ".repeat(280))));
    p.ok(&["meeting", "send", "long", &said.join("\n")]);
    // While open, the summaries do not fit either: the notes say where they are, and the
    // passes converge (nothing is planned again and again).
    p.ok(&["reconcile", "--once"]);
    let open = show(&p, "long");
    assert!(open["notes"].as_str().unwrap_or("").contains("in the meeting's log"), "{}", open["notes"]);
    let before = std::fs::read_to_string(meeting_path(&p, "long")).expect("read");
    let out = p.ok(&["reconcile", "--once", "--json"]);
    assert!(!out.contains("meeting-update"), "nothing more to do: {out}");
    assert_eq!(std::fs::read_to_string(meeting_path(&p, "long")).expect("read"), before);
    p.ok(&["check"]);
    p.ok(&["meeting", "close", "long"]);
    assert_eq!(recorded(&p, "long").as_deref(), Some("closed"));
    assert!(merged(&p, "long"), "the meeting's work is merged");
    assert!(git(&p.root, &["show", "claude/main:.lore/notes/long.md"]).contains("Written in meeting long"));
    let v = show(&p, "long");
    let notes = v["notes"].as_str().unwrap_or("");
    assert!(notes.contains("do not fit") && notes.contains("in the meeting's log"), "the notes point to the log: {notes}");
    // The last note holds the notes of the close (an earlier one, the summaries while open).
    let full = log(&v)
        .iter()
        .rev()
        .filter(|e| e["kind"] == "anomaly")
        .find_map(|e| e["notes"].as_str().map(str::to_string))
        .unwrap_or_else(|| panic!("the notes are in the log: {:?}", log(&v).iter().map(|e| e["kind"].clone()).collect::<Vec<_>>()));
    assert!(full.contains("## Summary") && full.contains("## Decisions") && full.contains("point 6"), "{}", &full[..full.len().min(500)]);
    p.ok(&["check"]);
}

/// Item 2: `propose_followup` is capped per meeting (3 by default): the rest are not written,
/// the log says how many were dropped; a proposal that would not be a valid meeting (20,000
/// references, written into the mailbox without the toolbox) is not written either, and said
/// (it counts as one of the three).
#[test]
fn followups_are_capped_and_never_invalid() {
    let p = Project::new(&["counsel"]);
    let refs: Vec<String> = (0..20_000).map(|i| format!("\".lore/r{i}.md\"")).collect();
    let huge = format!(
        r#"raw: {{"seq":900,"id":"huge","ts":"2026-11-23T10:00:00.000Z","attempt":1,"kind":"followup","reason":"many","references":[{}]}}"#,
        refs.join(",")
    );
    let mut msg: Vec<String> = vec!["hello".into(), huge];
    msg.extend((1..=6).map(|i| format!("followup: topic {i}")));
    p.ok(&["meeting", "start", "--worker", "counsel", "--id", "m"]);
    // Longer than one argument may be: on stdin.
    let message = p.tmp.path().join("message.txt");
    std::fs::write(&message, msg.join("\n")).expect("write");
    let out = p.cmd().args(["meeting", "send", "m", "-"]).stdin(std::fs::File::open(&message).expect("open")).output().expect("runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    p.ok(&["reconcile", "--once"]);
    let requests: Vec<String> = meetings(&p).into_iter().filter(|id| id != "m").collect();
    assert_eq!(requests.len(), 2, "three proposals at most, the invalid one not written: {requests:?}");
    for id in &requests {
        assert_eq!(show(&p, id)["status"], "requested");
    }
    let v = show(&p, "m");
    let notes: Vec<String> =
        log(&v).iter().filter(|e| e["kind"] == "anomaly").filter_map(|e| e["text"].as_str().map(str::to_string)).collect();
    assert!(notes.iter().any(|n| n.contains("4 follow-up proposals") && n.contains("cap of 3")), "{notes:?}");
    assert!(notes.iter().any(|n| n.contains("would not be valid") && n.contains("frontmatter too large")), "{notes:?}");
    assert_eq!(log(&v).iter().filter(|e| e["kind"] == "followup").count(), 7, "every proposal is in the log");
    p.ok(&["check"]);
    let out = p.ok(&["reconcile", "--once", "--json"]);
    assert!(!out.contains("meeting-update"), "converged: {}", &out[..out.len().min(2000)]);
    p.ok(&["meeting", "close", "m"]);
    assert_eq!(recorded(&p, "m").as_deref(), Some("closed"));
}

/// Item 3 for meetings: a request or a meeting whose text would make the artifact invalid the
/// moment it exists (an agenda over the frontmatter's size limit) is refused with why, and
/// nothing is written, on the CLI and on the dispatcher's `meeting_request` alike.
#[test]
fn a_meeting_that_would_be_invalid_is_never_written() {
    let p = Project::new(&["counsel"]);
    let long = "a".repeat(70_000);
    let (code, out, err) = p.run(&["job", "meeting-request", "--worker", "counsel", "--reason", &long]);
    assert_ne!(code, 0, "refused: {out}");
    assert!(err.contains("would not be valid") && err.contains("frontmatter too large"), "{err}");
    let (code, out, err) = p.run(&["meeting", "start", "--worker", "counsel", "--agenda", &long, "hi"]);
    assert_ne!(code, 0, "refused: {out}");
    assert!(err.contains("would not be valid") && err.contains("frontmatter too large"), "{err}");
    assert!(meetings(&p).is_empty(), "nothing written: {:?}", meetings(&p));
    p.ok(&["check"]);
    // A sound request right after is written and valid.
    let out = p.ok(&["job", "meeting-request", "--worker", "counsel", "--reason", "talk it through"]);
    let id = serde_json::from_str::<Value>(&out).expect("json")["meetingId"].as_str().expect("id").to_string();
    assert_eq!(show(&p, &id)["status"], "requested");
    p.ok(&["check"]);
}

/// The same over the watcher's endpoint: `worker/meeting_request` and `meeting/start` answer
/// invalid params (-32602) with why, as `worker/dispatch` does for a commission, and write
/// nothing.
#[test]
fn the_endpoint_refuses_an_invalid_meeting_as_invalid_params() {
    use std::io::{Read, Write};
    let p = Project::new(&["counsel"]);
    let sock = p.tmp.path().join("gh.sock");
    let _svc = crate::common::Service::start(&p, &[], &["--socket", sock.to_str().expect("utf8")]);
    let rpc = |method: &str, params: Value| -> Value {
        let body = serde_json::json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}).to_string();
        let mut s = std::os::unix::net::UnixStream::connect(&sock).expect("connect");
        let head = format!("POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n", body.len());
        s.write_all(head.as_bytes()).and_then(|()| s.write_all(body.as_bytes())).expect("send");
        let mut out = String::new();
        s.read_to_string(&mut out).expect("read");
        let reply = out.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
        serde_json::from_str(reply).unwrap_or_else(|e| panic!("{e}: {out}"))
    };
    let long = "a".repeat(70_000);
    for (method, params) in [
        ("worker/meeting_request", serde_json::json!({"worker": "counsel", "reason": long})),
        ("meeting/start", serde_json::json!({"worker": "counsel", "agenda": long})),
    ] {
        let v = rpc(method, params);
        assert_eq!(v["error"]["code"], -32602, "{method}: {}", &v.to_string()[..v.to_string().len().min(600)]);
        let msg = v["error"]["message"].as_str().unwrap_or("");
        assert!(msg.contains("would not be valid") && msg.contains("frontmatter too large"), "{method}: {msg}");
    }
    assert!(meetings(&p).is_empty(), "nothing written: {:?}", meetings(&p));
    let v = rpc("worker/meeting_request", serde_json::json!({"worker": "counsel", "reason": "talk it through"}));
    assert_eq!(v["result"]["status"], "requested", "{v}");
    p.ok(&["check"]);
}

/// Item 7 for meetings: a pass reads only what is new in a meeting's mailbox (it was read
/// whole, every pass). Shown by a worker that rewrites what it already wrote, in place: the
/// rewritten link is never read again, while what it appends is.
#[test]
fn a_pass_reads_only_what_is_new_in_the_mailbox() {
    let p = Project::new(&["counsel"]);
    p.ok(&["meeting", "start", "--worker", "counsel", "--id", "m", "link: .lore/notes/a.md"]);
    assert_eq!(show(&p, "m")["linked_artifacts"], serde_json::json!([".lore/notes/a.md"]));
    let mailbox = project_dir(&p, "state").join("meetings/m/events.jsonl");
    let before = std::fs::read_to_string(&mailbox).expect("mailbox");
    let rewritten = before.replace(".lore/notes/a.md", ".lore/notes/b.md");
    assert_eq!(rewritten.len(), before.len());
    std::fs::write(&mailbox, rewritten).expect("rewrite in place");
    p.ok(&["reconcile", "--once"]);
    assert_eq!(show(&p, "m")["linked_artifacts"], serde_json::json!([".lore/notes/a.md"]), "what was read is not read again");
    p.ok(&["meeting", "send", "m", "link: .lore/notes/c.md"]);
    let v = show(&p, "m");
    assert_eq!(v["linked_artifacts"], serde_json::json!([".lore/notes/a.md", ".lore/notes/c.md"]), "what is new is read");
    assert_eq!(log(&v).iter().filter(|e| e["kind"] == "link").count(), 2);
}

/// A meeting worker that streams text without end (`yes`): the reply kept — shown, returned,
/// written to the transcript — stops at 1 MiB with a marker saying how much was dropped, and the
/// turn ends at `meeting_turn_timeout`, failing saying so, with no process of its worker left.
#[test]
fn a_worker_streaming_without_end_is_cut_and_timed_out() {
    let p = Project::new(&[]);
    p.config("meeting_turn_timeout: 3s\n");
    let dir = p.root.join(".lore/workers/flood");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(
        dir.join("worker.yaml"),
        "name: flood\ncommand: [./meet.sh]\nmeeting: [./meet.sh]\ncapabilities: [meeting]\ncheckout: sparse\n",
    )
    .expect("yaml");
    std::fs::write(
        dir.join("meet.sh"),
        "#!/bin/sh\nexec yes '{\"type\":\"text_delta\",\"text\":\"flood flood flood flood flood flood flood flood flood flood flood flood flood flood flood flood \"}'\n",
    )
    .expect("script");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.join("meet.sh"), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let out = in_pid_namespace(
        &p,
        r#"
t=$(mktemp -d)
# Counted, not kept: a turn that never ends would fill the disk.
{ code=0; timeout 60 "$GH" meeting start --worker flood --id f go 2>"$t/err" || code=$?; echo "$code" > "$t/code"; } | wc -c > "$t/bytes"
echo "--- code"; cat "$t/code"
echo "--- bytes"; cat "$t/bytes"
echo "--- err"; cat "$t/err"
echo "--- left"; for d in /proc/[0-9]*; do [ "$(cat $d/comm 2>/dev/null)" = yes ] && echo ${d#/proc/}; done; echo none
"#,
    );
    assert_eq!(section(&out, "code").trim(), "1", "the turn ended, failed (not killed by the test's timeout): {out}");
    assert!(section(&out, "err").contains("timed out: the turn ran longer than 3s"), "{out}");
    assert_eq!(section(&out, "left").trim(), "none", "the worker was stopped: {out}");
    let shown: u64 = section(&out, "bytes").trim().parse().expect("bytes");
    assert!(shown < 2 * 1024 * 1024, "what is shown is bounded: {out}");
    let transcript = project_dir(&p, "meetings").join("f.md");
    let size = std::fs::metadata(&transcript).expect("transcript").len();
    assert!(size < 2 * 1024 * 1024, "the transcript grew by at most the cap: {size} bytes");
    let text = std::fs::read_to_string(&transcript).expect("transcript");
    assert!(text.contains("[reply truncated: ") && text.contains(" bytes dropped]"), "{}", &text[text.len().saturating_sub(400)..]);
    assert!(text.contains("_(turn failed: timed out"), "{}", &text[text.len().saturating_sub(400)..]);
}

/// A meeting worker with the meeting command `script` (`sandbox: off` when `unconfined`).
fn meeting_worker(p: &Project, name: &str, script: &str, unconfined: bool) {
    let dir = p.root.join(".lore/workers").join(name);
    std::fs::create_dir_all(&dir).expect("mkdir");
    let off = if unconfined { "sandbox: off\n" } else { "" };
    std::fs::write(
        dir.join("worker.yaml"),
        format!("name: {name}\ncommand: [./meet.sh]\nmeeting: [./meet.sh]\ncapabilities: [meeting]\ncheckout: sparse\n{off}"),
    )
    .expect("yaml");
    std::fs::write(dir.join("meet.sh"), script).expect("script");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.join("meet.sh"), std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

#[test]
fn a_turn_whose_output_outlives_its_shim_still_ends_at_the_timeout() {
    let p = Project::new(&[]);
    p.config("meeting_turn_timeout: 2s\n");
    // A process in a session of its own holds the turn's output open, and the shim that would
    // have stopped it is gone (killed here by the worker, unconfined to be able to: it stands
    // for a shim the kernel's OOM killer took). Nothing will ever close the output.
    // (Killed once the shim has recorded the run, in the state dir its private $TMPDIR is in.)
    meeting_worker(
        &p,
        "escape",
        "#!/bin/sh\nsetsid sleep 1000 &\nwhile [ ! -s \"$TMPDIR/../run.json\" ]; do sleep 0.05; done\nkill -9 $PPID\nsleep 1000\n",
        true,
    );
    let out = in_pid_namespace(
        &p,
        r#"
t=$(mktemp -d)
code=0; timeout 60 "$GH" meeting start --worker escape --id e go >"$t/out" 2>"$t/err" || code=$?
echo "--- code"; echo "$code"
echo "--- err"; cat "$t/err"
# (A process killed but not yet reaped by this namespace's init is gone all the same.)
echo "--- left"; for d in /proc/[0-9]*; do [ "$(cat $d/comm 2>/dev/null)" = sleep ] && [ "$(cut -d' ' -f3 $d/stat 2>/dev/null)" != Z ] && echo ${d#/proc/}; done; echo none
"#,
    );
    assert_eq!(section(&out, "code").trim(), "1", "the turn ended, failed (not killed by the test's timeout): {out}");
    assert!(section(&out, "err").contains("timed out: the turn ran longer than 2s"), "{out}");
    // It kept the attempt's mark in its environment: killed once the turn gave up on it.
    assert_eq!(section(&out, "left").trim(), "none", "{out}");
}

#[test]
fn a_workers_long_error_is_cut_before_the_transcript_and_timeline() {
    let p = Project::new(&[]);
    // One error line of 1 MiB.
    meeting_worker(
        &p,
        "loud",
        "#!/bin/sh\nprintf '{\"type\":\"error\",\"reason\":\"'\nhead -c 1048576 /dev/zero | tr '\\0' x\nprintf '\"}\\n'\n",
        false,
    );
    let _ = p.cmd().args(["meeting", "start", "--worker", "loud", "--id", "l", "go"]).output().expect("run");
    let transcript = std::fs::read_to_string(project_dir(&p, "meetings").join("l.md")).expect("transcript");
    assert!(transcript.contains("_(turn failed: xxxx"), "the error is the reason: {}", &transcript[..transcript.len().min(600)]);
    assert!(transcript.contains("[truncated by guild-hall: 1048576 bytes"), "the cut is marked");
    assert!(transcript.len() < 64 * 1024, "the transcript keeps only the error's start: {} bytes", transcript.len());
    let timeline = std::fs::read_to_string(p.root.join(".lore/meetings/l.timeline.jsonl")).expect("timeline");
    assert!(timeline.contains("failed: xxxx"), "the turn is in the timeline");
    assert!(timeline.len() < 64 * 1024, "the timeline too: {} bytes", timeline.len());
}
