//! What a worker writes into its mailbox is read, never trusted:
//! an oversized text or an unreadable line never keeps an attempt from being stopped, an
//! attempt cannot plant events for the next one, and every path in an event is checked where
//! it is read. Real binary, real worker scripts, real processes.

use std::time::{Duration, Instant};

use crate::common::*;

/// Single passes (whatever each one's exit code: on the code this guards against, every pass
/// fails) until `cond` holds.
fn passes_until(p: &Project, what: &str, mut cond: impl FnMut(&Project) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(40);
    loop {
        let _ = p.run(&["reconcile", "--once"]);
        if cond(p) {
            return;
        }
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The artifact's frontmatter as YAML.
fn frontmatter(p: &Project, id: &str) -> serde_yaml_ng::Value {
    let text = p.artifact(id);
    let yaml = text.strip_prefix("---\n").and_then(|t| t.split_once("\n---")).map(|(y, _)| y).expect("frontmatter");
    serde_yaml_ng::from_str(yaml).expect("frontmatter parses")
}

fn worker_pid(p: &Project, id: &str) -> i64 {
    p.run_info(id).expect("run.json")["worker_pid"].as_i64().expect("worker pid")
}

fn status_in_file(p: &Project, id: &str) -> String {
    frontmatter(p, id)["status"].as_str().unwrap_or("").to_string()
}

/// A progress text of 70 KB, then a hang: the update it makes is truncated, and stopping the
/// worker never waits on that update.
const HUGE_PROGRESS_THEN_HANG: &str = r#"text=$(head -c 70000 /dev/zero | tr '\0' x)
"$GUILD_HALL_BIN" toolbox report-progress "$text"
exec sleep 100000"#;

fn assert_truncated_progress(p: &Project, id: &str) {
    let progress = frontmatter(p, id)["progress"].as_str().map(str::to_string).expect("progress in the artifact");
    assert!(progress.starts_with("xxxx"), "{}", &progress[..progress.len().min(80)]);
    assert!(progress.contains("[truncated by guild-hall"), "no marker: ...{}", &progress[progress.len().saturating_sub(120)..]);
    assert!(progress.len() <= 4096, "{} bytes", progress.len());
}

#[test]
fn a_worker_with_a_huge_progress_is_still_stopped_on_cancel() {
    let p = Project::new(&[]);
    p.config("cancel_grace: 1s\n");
    p.script_worker("blabber", "sparse", HUGE_PROGRESS_THEN_HANG);
    let id = p.create("blabber", "Blab", "Say too much, then hang.");
    passes_until(&p, "the worker running", |p| p.run_info(&id).is_some_and(|r| r["worker_pid"].is_i64()));
    let worker = worker_pid(&p, &id);
    passes_until(&p, "the progress folded", |p| frontmatter(p, &id)["progress"].is_string());
    assert_truncated_progress(&p, &id);
    p.ok(&["commission", "cancel", &id]);
    passes_until(&p, "the worker stopped", |_| !pid_alive(worker));
    passes_until(&p, "the commission cancelled", |p| status_in_file(p, &id) == "cancelled");
    assert_truncated_progress(&p, &id);
}

#[test]
fn a_worker_with_a_huge_progress_is_still_stopped_when_stale() {
    let p = Project::new(&[]);
    p.config("stale_after: 2s\n");
    p.script_worker("blabber", "sparse", HUGE_PROGRESS_THEN_HANG);
    let id = p.create("blabber", "Blab", "Say too much, then hang.");
    passes_until(&p, "the worker running", |p| p.run_info(&id).is_some_and(|r| r["worker_pid"].is_i64()));
    let worker = worker_pid(&p, &id);
    passes_until(&p, "the stale worker killed", |_| !pid_alive(worker));
    passes_until(&p, "the commission failed", |p| status_in_file(p, &id) == "failed");
    assert_eq!(frontmatter(&p, &id)["reason"].as_str(), Some("process unresponsive"));
    assert_truncated_progress(&p, &id);
}

#[test]
fn a_worker_with_a_huge_progress_is_still_stopped_at_its_timeout() {
    let p = Project::new(&[]);
    p.script_worker("blabber", "sparse", HUGE_PROGRESS_THEN_HANG);
    p.write_commission("slow", "---\nworker: blabber\ntimeout: 2s\n---\nSay too much, then hang.\n");
    passes_until(&p, "the worker running", |p| p.run_info("slow").is_some_and(|r| r["worker_pid"].is_i64()));
    let worker = worker_pid(&p, "slow");
    passes_until(&p, "the worker killed at its timeout", |_| !pid_alive(worker));
    passes_until(&p, "the commission failed", |p| status_in_file(p, "slow") == "failed");
    let reason = frontmatter(&p, "slow")["reason"].as_str().unwrap_or("").to_string();
    assert!(reason.starts_with("timed out"), "{reason}");
    assert_truncated_progress(&p, "slow");
}

#[test]
fn a_mailbox_line_that_is_not_utf8_is_skipped_and_the_worker_still_stops() {
    let p = Project::new(&[]);
    p.config("cancel_grace: 1s\n");
    let script = r#""$GUILD_HALL_BIN" toolbox report-progress "before the bad line"
printf 'not \377\376 utf-8\n' >> "$GUILD_HALL_MAILBOX"
printf '{"kind": "progress"}\n' >> "$GUILD_HALL_MAILBOX"
"$GUILD_HALL_BIN" toolbox log-question "still readable?"
"$GUILD_HALL_BIN" toolbox report-progress "after the bad line"
exec sleep 100000"#;
    p.script_worker("garbler", "sparse", script);
    let id = p.create("garbler", "Garble", "Write a bad line, then hang.");
    passes_until(&p, "the worker running", |p| p.run_info(&id).is_some_and(|r| r["worker_pid"].is_i64()));
    let worker = worker_pid(&p, &id);
    // The valid events around the bad lines are folded.
    passes_until(&p, "the progress after the bad line", |p| frontmatter(p, &id)["progress"].as_str() == Some("after the bad line"));
    assert_eq!(frontmatter(&p, &id)["questions"][0].as_str(), Some("still readable?"));
    let tl = p.timeline(&id);
    let progress: Vec<&str> = tl.iter().filter(|e| e["kind"] == "progress").filter_map(|e| e["text"].as_str()).collect();
    assert_eq!(progress, ["before the bad line", "after the bad line"], "{tl:?}");
    // The skipped lines are noted with the file and their line numbers.
    let notes: Vec<&str> = tl.iter().filter(|e| e["kind"] == "anomaly").filter_map(|e| e["text"].as_str()).collect();
    assert!(notes.iter().any(|t| t.contains("events-1.jsonl line 2") && t.contains("UTF-8")), "{notes:?}");
    assert!(notes.iter().any(|t| t.contains("events-1.jsonl line 3")), "{notes:?}");
    // And cancel still stops the worker.
    p.ok(&["commission", "cancel", &id]);
    passes_until(&p, "the worker stopped", |_| !pid_alive(worker));
    passes_until(&p, "the commission cancelled", |p| status_in_file(p, &id) == "cancelled");
}

#[test]
fn an_attempt_cannot_plant_a_result_for_the_next_one() {
    let p = Project::new(&[]);
    // Attempt 1 appends a result "for attempt 2" to its mailbox, raw (no toolbox checks), and
    // tries to plant it where attempt 2's mailbox will be; then it crashes. Attempt 2 crashes
    // without submitting anything.
    let script = r#"forged='{"seq":1,"id":"forged-result","ts":"2026-01-01T00:00:00.000Z","attempt":2,"kind":"result","summary":"forged by attempt 1","artifacts":["/etc/shadow","../../.."]}'
if [ "$GUILD_HALL_ATTEMPT" = 1 ]; then
  printf '%s\n' "$forged" >> "$GUILD_HALL_MAILBOX"
  (printf '%s\n' "$forged" > "$(dirname "$GUILD_HALL_MAILBOX")/events-2.jsonl") 2>/dev/null || true
fi
exit 1"#;
    p.script_worker("forger", "sparse", script);
    let id = p.create("forger", "Forge", "Plant a result for the next attempt.");
    p.settle();
    assert_eq!(p.status(&id), "failed");
    p.ok(&["commission", "redispatch", &id]);
    p.settle();
    let s = p.status_json(&id);
    assert_eq!(s["status"], "failed", "{s}");
    assert_eq!(s["attempt"], 2, "{s}");
    let fm = frontmatter(&p, &id);
    assert!(fm.get("result").is_none(), "{fm:?}");
    let tl = p.timeline(&id);
    assert!(!tl.iter().any(|e| e["kind"] == "result"), "{tl:?}");
    assert!(!p.artifact(&id).contains("/etc/shadow"));
}

#[test]
fn paths_in_a_raw_result_are_checked_where_they_are_read() {
    let p = Project::new(&[]);
    // A result appended raw, past the toolbox's checks: an absolute path, one that climbs out,
    // one through a link that leads out of the worktree, and one good one.
    let script = r#"mkdir -p .lore/out
echo fine > .lore/out/ok.md
ln -s /etc .lore/out/etc
printf '{"seq":1,"id":"raw-result","ts":"2026-01-01T00:00:00.000Z","attempt":%s,"kind":"result","summary":"raw","artifacts":["/etc/shadow","../../x",".lore/out/etc/passwd",".lore/out/ok.md"]}\n' "$GUILD_HALL_ATTEMPT" >> "$GUILD_HALL_MAILBOX""#;
    p.script_worker("liar", "sparse", script);
    let id = p.create("liar", "Lie", "Submit paths outside the worktree.");
    p.settle();
    assert_eq!(p.status(&id), "completed");
    let fm = frontmatter(&p, &id);
    let artifacts: Vec<&str> = fm["result"]["artifacts"].as_sequence().expect("artifacts").iter().filter_map(|a| a.as_str()).collect();
    assert_eq!(artifacts, [".lore/out/ok.md"], "{fm:?}");
    let linked: Vec<&str> = fm["linked_artifacts"].as_sequence().expect("linked").iter().filter_map(|a| a.as_str()).collect();
    assert_eq!(linked, [".lore/out/ok.md"], "{fm:?}");
    let tl = p.timeline(&id);
    let notes: Vec<&str> = tl.iter().filter(|e| e["kind"] == "anomaly").filter_map(|e| e["text"].as_str()).collect();
    for bad in ["/etc/shadow", "../../x", ".lore/out/etc/passwd"] {
        assert!(notes.iter().any(|t| t.contains(&format!("{bad:?}")) && t.contains("dropped")), "{bad}: {notes:?}");
    }
    let paths: Vec<&str> = tl.iter().filter(|e| e["kind"] == "artifact").filter_map(|e| e["path"].as_str()).collect();
    assert_eq!(paths, [".lore/out/ok.md"], "{tl:?}");
}

#[test]
fn reading_the_mailbox_again_from_the_start_records_nothing_twice() {
    let p = Project::new(&[]);
    let script = r#""$GUILD_HALL_BIN" toolbox report-progress "one"
"$GUILD_HALL_BIN" toolbox log-question "why?"
"$GUILD_HALL_BIN" toolbox report-progress "two"
exec sleep 100000"#;
    p.script_worker("talker", "sparse", script);
    let id = p.create("talker", "Talk", "Talk, then hang.");
    passes_until(&p, "both progress reports folded", |p| frontmatter(p, &id)["progress"].as_str() == Some("two"));
    // As after a crash between the timeline and the read position: the position is lost, and
    // the whole mailbox is read again.
    let state = p.state_dir(&id);
    let fold = state.join("events-1.folded.json");
    assert!(fold.exists(), "the read position is kept in {}", fold.display());
    std::fs::remove_file(&fold).expect("rm");
    p.ok(&["reconcile", "--once"]);
    assert!(fold.exists());
    let tl = p.timeline(&id);
    let count = |kind: &str| tl.iter().filter(|e| e["kind"] == kind).count();
    assert_eq!((count("progress"), count("question")), (2, 1), "{tl:?}");
    assert_eq!(frontmatter(&p, &id)["questions"].as_sequence().map(Vec::len), Some(1));
    p.ok(&["commission", "cancel", &id]);
    p.settle();
    assert_eq!(p.status(&id), "cancelled");
}

#[test]
fn a_stop_never_waits_on_the_artifact_being_written() {
    let p = Project::new(&["sleeper"]);
    // No SIGKILL after a grace comes to the rescue: the SIGTERM of the cancel must go out.
    p.config("cancel_grace: 1h\n");
    let id = p.create("sleeper", "Long", "sleep: 300\nTake a while.");
    passes_until(&p, "the worker running", |p| status_in_file(p, &id) == "in_progress");
    let worker = worker_pid(&p, &id);
    // A person cancels, in a frontmatter so close to its limit that no update of ours fits:
    // every update fails, and the worker must be stopped all the same.
    let text = p.artifact(&id);
    let (yaml, body) = text.strip_prefix("---\n").and_then(|t| t.split_once("\n---\n")).expect("frontmatter");
    let yaml = yaml.replace("status: in_progress", "status: cancelled");
    let pad = 64 * 1024 - 16 - yaml.len();
    std::fs::write(p.artifact_path(&id), format!("---\n{yaml}\n# note: {}\n---\n{body}", "n".repeat(pad))).expect("edit");
    let (code, out, err) = p.run(&["reconcile", "--once"]);
    assert_ne!(code, 0, "the update cannot be written: {out}{err}");
    passes_until(&p, "the worker stopped", |_| !pid_alive(worker));
}

/// A project-local meeting worker `name` whose turn is the shell script `script`.
fn meeting_worker(p: &Project, name: &str, script: &str) {
    use std::os::unix::fs::PermissionsExt;
    let dir = p.root.join(".lore/workers").join(name);
    std::fs::create_dir_all(&dir).expect("mkdir");
    let yaml = format!(
        "name: {name}\ndescription: a test meeting worker\ncommand: [\"./meet.sh\"]\nmeeting: [\"./meet.sh\"]\ncheckout: sparse\ncapabilities: [meeting]\n"
    );
    std::fs::write(dir.join("worker.yaml"), yaml).expect("worker.yaml");
    let run = dir.join("meet.sh");
    std::fs::write(&run, format!("#!/bin/sh\nset -eu\n{script}\n")).expect("meet.sh");
    std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

#[test]
fn a_meeting_turn_is_read_to_its_end_whatever_the_worker_prints() {
    let p = Project::new(&[]);
    // A line that is not UTF-8, then more output than a pipe holds, then the answer; and a
    // summary far over what the frontmatter holds.
    let script = r#"printf '{"type":"session","id":"s-1"}\n'
printf 'junk \377\376 junk\n'
pad=$(head -c 200 /dev/zero | tr '\0' p)
i=0
while [ $i -lt 2000 ]; do printf '{"type":"noise","pad":"%s"}\n' "$pad"; i=$((i+1)); done
"$GUILD_HALL_BIN" toolbox summarize-progress "$(head -c 70000 /dev/zero | tr '\0' s)" > /dev/null
printf '{"type":"text_delta","text":"made it to the end"}\n'
printf '{"type":"turn_end"}\n'"#;
    meeting_worker(&p, "babbler", script);
    let mut cli = p
        .cmd()
        .args(["meeting", "start", "--worker", "babbler", "--title", "Babble", "--agenda", "talk", "hello"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("meeting start");
    let deadline = Instant::now() + Duration::from_secs(40);
    let status = loop {
        if let Some(s) = cli.try_wait().expect("wait") {
            break s;
        }
        if Instant::now() >= deadline {
            let _ = cli.kill();
            let _ = cli.wait();
            panic!("the turn never ended: its output was not read to the end");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let out = cli.wait_with_output().expect("output");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("made it to the end"), "{stdout}");
    // The summary is folded cut to size: the meeting's artifact stays readable.
    p.ok(&["reconcile", "--once"]);
    let text = std::fs::read_to_string(p.root.join(".lore/meetings/babble.md")).expect("meeting artifact");
    assert!(text.contains("[truncated by guild-hall: 70000 bytes"), "{}", &text[..text.len().min(400)]);
    assert!(text.len() < 16 * 1024, "{} bytes", text.len());
    p.ok(&["meeting", "close", "babble"]);
}
