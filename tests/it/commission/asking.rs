//! A worker asks a person: the scribe's `wait-for:` line calls `toolbox ask`, blocks, and writes
//! the answer it gets into its result. Answered by `guild-hall answer` and by an `answer:` edit;
//! never stale while it waits; `ask_timeout` gives "no answer"; an answer survives a reconciler
//! killed while taking it; `request-meeting` writes a requested meeting, or is refused without
//! the `meeting` capability. Real binary, real worker scripts, real processes.

use serde_json::Value;

use crate::common::*;

/// The artifact's frontmatter as YAML.
fn frontmatter(p: &Project, id: &str) -> serde_yaml_ng::Value {
    let text = p.artifact(id);
    let yaml = text.strip_prefix("---\n").and_then(|t| t.split_once("\n---")).map(|(y, _)| y).expect("frontmatter");
    serde_yaml_ng::from_str(yaml).expect("frontmatter parses")
}

/// The asked questions `questions:` shows (mappings), in order.
fn asked(p: &Project, id: &str) -> Vec<serde_yaml_ng::Value> {
    match &frontmatter(p, id)["questions"] {
        serde_yaml_ng::Value::Sequence(q) => q.iter().filter(|q| q.is_mapping()).cloned().collect(),
        _ => Vec::new(),
    }
}

fn is_open(p: &Project, id: &str) -> bool {
    asked(p, id).first().is_some_and(|q| q["open"] == serde_yaml_ng::Value::Bool(true))
}

/// A commission for the scribe that asks `question` and waits.
fn asking(p: &Project, question: &str) -> String {
    p.create("scribe", "Colour", &format!("wait-for: {question}\nWrite the colour down."))
}

fn summary(p: &Project, id: &str) -> String {
    p.status_json(id)["result"]["summary"].as_str().unwrap_or("").to_string()
}

/// A person's `answer:` written into the artifact, as an editor that saves atomically does (a
/// reconciler running meanwhile never reads half a file).
fn write_answer(p: &Project, id: &str, answer: &str) {
    let text = p.artifact(id).replacen("---\n", &format!("---\nanswer: {answer}\n"), 1);
    let tmp = p.root.join(format!(".lore/commissions/.{id}.md.tmp"));
    std::fs::write(&tmp, text).expect("write");
    std::fs::rename(&tmp, p.artifact_path(id)).expect("rename");
}

/// Passes for `secs` seconds while the worker waits: it is never judged stale.
fn passes_for(p: &Project, secs: u64) {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while std::time::Instant::now() < until {
        p.ok(&["reconcile", "--once"]);
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

#[test]
fn a_question_waits_for_you_is_never_stale_and_guild_hall_answer_reaches_the_worker() {
    let p = Project::new(&["scribe"]);
    p.config("stale_after: 2s\n");
    let id = asking(&p, "Which colour?");
    p.pass_until("the question open", |p| is_open(p, &id));
    let q = &asked(&p, &id)[0];
    assert_eq!((q["question"].as_str(), q["number"].as_u64()), (Some("Which colour?"), Some(1)), "{q:?}");
    assert!(q["asked"].is_string(), "{q:?}");
    let row = p.status_json(&id);
    assert_eq!(row["status"], "in_progress");
    assert_eq!(row["waiting"], format!("waiting for you: question 1: Which colour? (`guild-hall answer {id} TEXT`)"));
    let table = p.ok(&["status"]);
    assert!(table.contains("waiting for you: question 1"), "{table}");
    // The timeline's `question` event says it waits, with its text and number.
    let tl = p.timeline(&id);
    let ev = tl.iter().find(|e| e["kind"] == "question").expect("a question event");
    assert_eq!(
        (&ev["text"], &ev["waiting"], &ev["question"], &ev["attempt"]),
        (&Value::from("Which colour?"), &Value::Bool(true), &Value::from(1), &Value::from(1)),
        "{ev}"
    );
    // Silent for longer than stale_after: still at work, still open.
    passes_for(&p, 5);
    assert_eq!(p.status(&id), "in_progress", "{:?}", p.timeline(&id));
    assert!(is_open(&p, &id));
    // No question 2; answered by number 1.
    let (code, _, err) = p.run(&["answer", &id, "red", "--question", "2"]);
    assert_ne!(code, 0);
    assert!(err.contains("has no open question 2; nothing written"), "{err}");
    let out: Value = serde_json::from_str(&p.ok(&["answer", &id, "blue", "--json"])).expect("json");
    assert_eq!(
        (&out["jobId"], &out["question"], &out["asked"], &out["answer"]),
        (&Value::from(id.clone()), &Value::from(1), &Value::from("Which colour?"), &Value::from("blue")),
        "{out}"
    );
    wait_status(&p, &id, "completed");
    assert!(summary(&p, &id).contains("answer: blue"), "{}", summary(&p, &id));
    let q = &asked(&p, &id)[0];
    assert_eq!((q["answer"].as_str(), q.get("open")), (Some("blue"), None), "{q:?}");
    assert!(q["answered"].is_string(), "{q:?}");
    assert!(!p.artifact(&id).contains("\nanswer:"), "the request is taken: {}", p.artifact(&id));
    let tl = p.timeline(&id);
    assert!(tl.iter().any(|e| e["kind"] == "answered" && e["text"] == "blue" && e["question"] == 1), "{tl:?}");
    // Nothing is open any more: refused, nothing written.
    let (code, _, err) = p.run(&["answer", &id, "again"]);
    assert_ne!(code, 0);
    assert!(err.contains("no question of its worker waits for an answer"), "{err}");
}

#[test]
fn an_answer_edit_in_the_artifact_reaches_the_worker() {
    let p = Project::new(&["scribe"]);
    let id = asking(&p, "Which shade?");
    p.pass_until("the question open", |p| is_open(p, &id));
    write_answer(&p, &id, "teal");
    p.pass_until("completed", |p| p.status(&id) == "completed");
    assert!(summary(&p, &id).contains("answer: teal"), "{}", summary(&p, &id));
    assert_eq!(asked(&p, &id)[0]["answer"].as_str(), Some("teal"));
    assert!(!p.artifact(&id).contains("\nanswer:"), "{}", p.artifact(&id));
}

#[test]
fn without_an_answer_in_its_ask_timeout_the_worker_decides_itself() {
    let p = Project::new(&["scribe"]);
    p.write_commission("late", "---\nworker: scribe\nask_timeout: 1s\n---\nwait-for: Anyone there?\nWrite it down.\n");
    p.settle();
    assert_eq!(p.status("late"), "completed");
    assert!(summary(&p, "late").contains("answer: no answer: decide yourself and say so in your result"), "{}", summary(&p, "late"));
}

/// The pass that takes the answer dies after the artifact is written, before the answer file
/// (`commission-apply:3`); the next pass finishes it, and the worker gets its answer.
#[test]
fn an_answer_taken_by_a_reconciler_killed_midway_still_reaches_the_worker() {
    let p = Project::new(&["scribe"]);
    let id = asking(&p, "Which size?");
    p.pass_until("the question open", |p| is_open(p, &id));
    p.ok(&["reconcile", "--once"]);
    write_answer(&p, &id, "{question: 1, text: large}");
    p.pass_until_fault("commission-apply:3");
    assert_eq!(asked(&p, &id)[0]["answer"].as_str(), Some("large"), "the artifact was written");
    p.pass_until("completed", |p| p.status(&id) == "completed");
    assert!(summary(&p, &id).contains("answer: large"), "{}", summary(&p, &id));
}

#[test]
fn request_meeting_writes_a_requested_meeting_for_the_worker() {
    let p = Project::new(&[]);
    p.install_worker("scribe", "scribe-meets");
    let yaml = p.root.join(".lore/workers/scribe-meets/worker.yaml");
    let text = std::fs::read_to_string(&yaml).expect("worker.yaml");
    let text = text.replace("capabilities: [commission]", "capabilities: [commission, meeting]\nmeeting: [\"./run.sh\"]");
    std::fs::write(&yaml, text).expect("write");
    let id = p.create("scribe-meets", "Talk", "request-meeting: The schema needs a decision together.\nWrite it down.");
    p.settle();
    assert_eq!(p.status(&id), "completed");
    let meeting = format!("{id}-meeting-1-2");
    let m = std::fs::read_to_string(p.root.join(format!(".lore/meetings/{meeting}.md"))).expect("the requested meeting");
    for want in [
        "status: requested",
        "worker: scribe-meets",
        "agenda: The schema needs a decision together.",
        &format!(".lore/commissions/{id}.md"),
    ] {
        assert!(m.contains(want), "{want}: {m}");
    }
    let tl = p.timeline(&id);
    assert!(tl.iter().any(|e| e["kind"] == "meeting_requested" && e["meeting"] == meeting.as_str()), "{tl:?}");
    assert!(p.ok(&["meeting", "list"]).contains(&meeting));
}

#[test]
fn request_meeting_without_the_meeting_capability_is_refused() {
    let p = Project::new(&["scribe"]);
    let id = p.create("scribe", "Talk", "request-meeting: Let us talk.\nWrite it down.");
    p.settle();
    assert_eq!(p.status(&id), "completed");
    let s = summary(&p, &id);
    assert!(s.contains("meeting: refused: ") && s.contains("does not have the `meeting` capability"), "{s}");
    assert!(!p.root.join(".lore/meetings").exists() || std::fs::read_dir(p.root.join(".lore/meetings")).expect("dir").next().is_none());
}

/// The answers dir is the worker's to read, never to write: it cannot answer its own question.
#[test]
fn a_worker_reads_its_answers_dir_but_cannot_write_an_answer() {
    let p = Project::new(&[]);
    p.script_worker(
        "forger",
        "sparse",
        r#"ls "$GUILD_HALL_ANSWERS" >/dev/null && r=readable || r=unreadable
if ( echo '{}' > "$GUILD_HALL_ANSWERS/forged.json" ) 2>/dev/null; then r="$r forged"; else r="$r refused"; fi
"$GUILD_HALL_BIN" toolbox submit-result --summary "$r""#,
    );
    let id = p.create("forger", "Forge", "Try to answer yourself.");
    p.settle();
    assert_eq!(summary(&p, &id), "readable refused");
}

/// One `ask` through the real Claude Code CLI against the tests' stand-in model: the model
/// calls the toolbox's MCP `ask`, which blocks; a person's `answer:` edit reaches it, and the
/// answer is the tool result Claude Code sends back to the model.
#[test]
fn real_claude_code_asks_over_mcp_and_gets_the_answer() {
    use crate::worker::claude_code::{install_package, real_claude, real_run, FakeApi};
    let claude = real_claude();
    let p = Project::new(&[]);
    install_package(&p, "claude-code");
    let api = FakeApi::start(
        p.tmp.path(),
        &serde_json::json!([
            {"tool_use": {"name": "mcp__guild-hall__ask", "input": {"text": "Which colour should the logo be?"}}},
            {"tool_use": {"name": "mcp__guild-hall__submit_result", "input": {"summary": "Used the colour I was told"}}},
            {"text": "Done."}
        ]),
    );
    p.write_commission("logo", "---\nworker: claude-code\n---\nPick the logo's colour: ask the person.\n");
    crate::common::plant_person_agent_homes(&p);
    std::thread::scope(|s| {
        let run = s.spawn(|| real_run(&p, &api, &claude));
        wait_for("the question open", || std::fs::read_to_string(p.artifact_path("logo")).is_ok_and(|t| t.contains("open: true")));
        assert_eq!(asked(&p, "logo")[0]["question"].as_str(), Some("Which colour should the logo be?"));
        write_answer(&p, "logo", "ultramarine");
        let out = run.join().expect("the pass");
        assert!(out.status.success(), "{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    });
    assert_eq!(p.status("logo"), "completed", "{}", p.ok(&["logs", "logo"]));
    assert!(api.tool_results().contains("ultramarine"), "the model got the answer as the tool's result");
    assert_eq!(asked(&p, "logo")[0]["answer"].as_str(), Some("ultramarine"));
}

/// The reconciler killed (SIGKILL) while a question is open, and started again: the question is
/// still open, the worker still waits, and an answer then reaches it.
#[test]
fn a_reconciler_killed_while_a_question_is_open_leaves_it_open_and_answerable() {
    let p = Project::new(&["scribe"]);
    p.config("stale_after: 2s\n");
    let id = asking(&p, "Which tone?");
    let out = in_pid_namespace(
        &p,
        &format!(
            r#"
"$GH" watch 2>../watch1.log &
w=$!
wait_for "the question open" grep -q "open: true" .lore/commissions/{id}.md
kill -9 $w; wait $w || true
echo "--- after the kill"; grep -c "open: true" .lore/commissions/{id}.md
sleep 3
"$GH" watch 2>../watch2.log &
w=$!
sleep 3
echo "--- after the restart"; "$GH" status {id} --json | grep -o '"status": *"[a-z_]*"'; grep -c "open: true" .lore/commissions/{id}.md
"$GH" answer {id} warm >/dev/null
wait_for "completed" sh -c '"$GH" status {id} --json | grep -q "\"status\": *\"completed\""'
kill $w; wait $w || true
echo "--- end"
"#
        ),
    );
    assert_eq!(section(&out, "after the kill").trim(), "1", "{out}");
    assert_eq!(section(&out, "after the restart").trim(), "\"status\": \"in_progress\"\n1", "not stale past stale_after: {out}");
    assert!(summary(&p, &id).contains("answer: warm"), "{}", summary(&p, &id));
}
