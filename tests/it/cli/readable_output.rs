//! What a person reads: every table sized to its content (a name longer
//! than a fixed column used to push the rest of its row out of line); failures, empty merges
//! and a pass's lines said plainly, with bookkeeping left out; a re-dispatched commission no
//! longer shows its old failure; `logs` of an attempt that never was names the ones there
//! were; the bundled examples say they are scripted, and the docs' examples with them are true.

use serde_json::Value;

use crate::common::{git, Project};
use crate::plan::fixtures::write_plan;

/// The character column at which `word` starts in `line` (all these lines are ASCII).
fn at(line: &str, word: &str) -> usize {
    line.find(word).unwrap_or_else(|| panic!("{word:?} in {line:?}"))
}

/// The one line of `out` starting with `start` (after its indent).
fn row<'a>(out: &'a str, start: &str) -> &'a str {
    out.lines().find(|l| l.trim_start().starts_with(start)).unwrap_or_else(|| panic!("a line starting {start:?} in:\n{out}"))
}

/// `workers` (with a header now), `plan show`, `status`'s plans and a pass's action lines keep
/// their columns whatever the length of a name: the bundled `claude-code-coder` (17
/// characters) overflowed a 16-character column, a plan's label an 8-character one, a task's
/// canonical id a 40-character one, an id a pass printed a 28-character one.
#[test]
fn every_table_is_as_wide_as_its_content() {
    let p = Project::new(&[]);
    p.ok(&["workers", "add", "scribe"]);
    p.ok(&["workers", "add", "claude-code-coder"]);
    let out = p.ok(&["workers"]);
    let header = row(&out, "NAME ");
    for name in ["claude-code-coder ", "scribe "] {
        let r = row(&out, name);
        assert_eq!(at(r, " project") + 1, at(header, "SOURCE"), "{out}");
    }

    // Two plans, one with a long id (its tasks' canonical ids pass 40 characters) and labels
    // of different lengths (one past 8).
    let long = "a-plan-whose-name-is-long-enough-to-overflow";
    write_plan(&p, "short", "  - - {id: one, worker: scribe, prompt: \"x\"}\n");
    write_plan(
        &p,
        long,
        "  - - {id: one, worker: scribe, prompt: \"x\"}\n    - {id: a-much-longer-label, worker: scribe, prompt: \"y\"}\n",
    );
    let show = p.ok(&["plan", "show", long]);
    let (first, second) = (row(&show, &format!("{long}:exec:wave-1:task-1 ")), row(&show, &format!("{long}:exec:wave-1:task-2 ")));
    assert_eq!(at(first, "queued"), at(second, "queued"), "{show}");
    assert!(second.contains(" a-much-longer-label "), "{show}");

    let status = p.ok(&["status"]);
    let (short_row, long_row) = (row(&status, "short:exec:wave-1:task-1 "), row(&status, &format!("{long}:exec:wave-1:task-1 ")));
    assert_eq!(at(short_row, "queued"), at(long_row, "queued"), "{status}");

    // As a pass prints its actions, a long id stands two spaces off its action.
    let id = "a-commission-whose-id-is-longer-than-the-column";
    p.ok(&["commission", "create", "--worker", "scribe", "--id", id, "--title", "Long", "--prompt", "output: .lore/long.md"]);
    let dry = p.ok(&["reconcile", "--dry-run"]);
    assert!(dry.contains(&format!("would: {id}  dispatch attempt 1")), "{dry}");
}

/// A pass says what changed and leaves guild-hall's bookkeeping out: a draft's `created` event
/// printed `log 1 timeline event`, a plan's passes `read task mailboxes` and `set tasks`.
#[test]
fn a_pass_reports_no_bookkeeping() {
    let p = Project::new(&["scribe"]);
    p.ok(&["commission", "create", "--worker", "scribe", "--draft", "--id", "drafty", "--title", "Drafty", "--prompt", "later"]);
    let out = p.ok(&["reconcile", "--once"]);
    assert_eq!(out.trim(), "nothing to do", "a draft first met is no news");
    assert_eq!(p.timeline("drafty").first().map(|e| e["kind"].clone()), Some(Value::from("created")), "its timeline still opens so");

    write_plan(&p, "notes", "  - - {id: one, worker: scribe, prompt: \"Write the notes.\"}\n");
    let mut said = String::new();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        said.push_str(&p.ok(&["reconcile", "--once"]));
        let v: Value = serde_json::from_str(&p.ok(&["plan", "show", "notes", "--json"])).expect("json");
        if v["status"] == "completed" {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the plan completes: {v}\n{said}");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    for bookkeeping in ["read task mailboxes", "set tasks", "timeline event", "timeline: recorded", "runtime record updated"] {
        assert!(!said.contains(bookkeeping), "{bookkeeping:?} in:\n{said}");
    }
    assert!(said.contains("status -> completed") && said.contains("start wave 1"), "{said}");
}

/// A meeting whose worker dies says when before its log's tail (the tail may be long), and a
/// close that changed nothing says so rather than `merged into claude/main as nothing to merge`.
#[test]
fn a_failed_turn_and_an_empty_merge_read_plainly() {
    use std::os::unix::fs::PermissionsExt;
    let p = Project::new(&["counsel"]);
    p.ok(&["meeting", "start", "--worker", "counsel", "--id", "quiet", "hello"]);
    p.ok(&["meeting", "close", "quiet"]);
    let shown = p.ok(&["meeting", "show", "quiet"]);
    assert!(shown.contains("no changes to merge into claude/main"), "{shown}");
    assert!(!shown.contains("as nothing to merge"), "{shown}");

    let dir = p.root.join(".lore/workers/gone");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(
        dir.join("worker.yaml"),
        "name: gone\ndescription: a meeting worker whose agent is missing\ncommand: [\"./meet.sh\"]\nmeeting: [\"./meet.sh\"]\ncheckout: sparse\ncapabilities: [meeting]\n",
    )
    .expect("worker.yaml");
    std::fs::write(dir.join("meet.sh"), "#!/bin/sh\necho 'claude: not found' >&2\nexit 127\n").expect("meet.sh");
    std::fs::set_permissions(dir.join("meet.sh"), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let (_, out, err) = p.run(&["meeting", "start", "--worker", "gone", "--id", "broken", "hello"]);
    let said = format!("{out}{err}");
    assert!(said.contains("worker exited with code 127 before the end of its turn; its log ends: claude: not found"), "{said}");
}

/// `commission redispatch` takes the old failure off with the old status: `status` no longer
/// shows a pending commission with `worker exited with code 3` until a pass. The timeline keeps
/// it.
#[test]
fn a_redispatched_commission_no_longer_shows_its_old_failure() {
    let p = Project::new(&[]);
    p.script_worker("flaky", "sparse", "echo 'it broke' >&2\nexit 3");
    let id = p.create("flaky", "Flaky", "Try.");
    p.settle();
    assert_eq!(p.status(&id), "failed");
    assert!(p.status_json(&id)["reason"].as_str().is_some_and(|r| r.contains("code 3")), "{}", p.artifact(&id));

    let out = p.ok(&["commission", "redispatch", &id]);
    assert!(out.contains("wrote status: pending, removed reason"), "{out}");
    let row = p.status_json(&id);
    assert_eq!(row["status"], "pending", "{row}");
    assert!(row["reason"].is_null(), "{row}");
    let table = p.ok(&["status"]);
    assert!(!row_has(&table, &id, "code 3"), "{table}");
    assert!(!p.artifact(&id).contains("reason:"), "{}", p.artifact(&id));
    assert!(p.timeline(&id).iter().any(|e| e.to_string().contains("code 3")), "the timeline keeps the failure");
}

fn row_has(table: &str, id: &str, what: &str) -> bool {
    table.lines().any(|l| l.starts_with(&format!("{id} ")) && l.contains(what))
}

/// `logs ID --attempt N` of an attempt that never was says which there were, not a raw
/// `No such file or directory (os error 2)`.
#[test]
fn logs_of_an_attempt_that_never_was_names_the_attempts() {
    let p = Project::new(&["scribe"]);
    let id = p.create("scribe", "First note", "output: .lore/first.md");
    p.settle();
    assert!(p.ok(&["logs", &id, "--attempt", "1"]).contains("scribe: done"));
    let (code, _, err) = p.run(&["logs", &id, "--attempt", "2"]);
    assert_eq!(code, 3, "not found");
    assert!(err.contains(&format!("commission {id} has no attempt 2 (its attempts: 1)")), "{err}");
    assert!(!err.contains("os error"), "{err}");
}

/// The bundled scripted-researcher and counsel say they are scripted examples; the docs' `job
/// dispatch` example does what its comment says (the scripted-researcher's report, named by the job's
/// id, on the integration branch).
#[test]
fn the_bundled_examples_say_what_they_are_and_the_docs_example_is_true() {
    let p = Project::new(&[]);
    let list: Value = serde_json::from_str(&p.ok(&["workers", "--available", "--json"])).expect("json");
    for name in ["scripted-researcher", "counsel"] {
        let d = list.as_array().and_then(|a| a.iter().find(|x| x["name"] == name)).map(|x| x["description"].clone());
        assert!(d.as_ref().and_then(Value::as_str).is_some_and(|d| d.starts_with("Scripted example, no model: ")), "{name}: {d:?}");
    }

    let docs = std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/commands.md")).expect("docs");
    let comment = docs.lines().find(|l| l.starts_with("# the bundled scripted-researcher")).expect("the example's comment");
    assert!(comment.contains("it writes .lore/reports/<jobId>.md"), "{comment}");
    let line = docs.lines().find(|l| l.starts_with("guild-hall job dispatch")).expect("the example");
    let words = crate::docs::shell_words(line);
    let args: Vec<&str> = words[1..].iter().map(String::as_str).collect();
    p.ok(&["workers", "add", "scripted-researcher"]);
    let reply: Value = serde_json::from_str(&p.ok(&args)).expect("json");
    let job = reply["jobId"].as_str().expect("a jobId").to_string();
    // The dispatch starts a reconciler of its own; it runs the job and ends.
    crate::common::wait_for("the job completed and its reconciler gone", || {
        p.status(&job) == "completed" && !p.ok(&["status"]).contains("reconciler:")
    });
    git(&p.root, &["cat-file", "-e", &format!("claude/main:.lore/reports/{job}.md")]);
}
