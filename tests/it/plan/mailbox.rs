//! What a wave task writes into its mailbox is read, never trusted, and what a copy-back cannot
//! do ends the wave with a reason: an attempt cannot
//! plant updates for the next one and each attempt counts its own sequence; paths are checked
//! against the task's worktree; a pass reads only new bytes of a large mailbox; a worker that
//! makes its mailbox unreadable (`chmod 000`) is read all the same, and a mailbox that cannot
//! be read fails its attempt (a commission's too) naming the file; a copy-back of a path git
//! refuses fails the task and halts the plan. Real binary, real worker scripts, real git.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::fixtures::{show, task, write_plan};
use crate::common::*;

fn log<'a>(v: &'a Value, kind: &str) -> Vec<&'a Value> {
    v["log"].as_array().expect("log").iter().filter(|e| e["kind"] == kind).collect()
}

/// The runtime dir of a plan's task (under the only project of the home).
fn task_state(p: &Project, plan: &str, slug: &str) -> PathBuf {
    let project = p.home.join("state").read_dir().ok().and_then(|mut d| d.next()).and_then(|e| e.ok()).map(|e| e.path());
    project.unwrap_or_default().join("plans").join(plan).join("tasks").join(slug)
}

/// The mailbox a task's or commission's first attempt writes (an older guild-hall: one for
/// every attempt).
fn first_mailbox(state: &Path) -> PathBuf {
    let own = state.join("events-1.jsonl");
    if own.exists() {
        own
    } else {
        state.join("events.jsonl")
    }
}

/// Single passes, whatever each one's exit code (on the code these tests guard against, some
/// fail every time), until `cond` holds.
fn passes_until(p: &Project, what: &str, limit: Duration, mut cond: impl FnMut(&Project) -> bool) {
    let deadline = Instant::now() + limit;
    loop {
        let _ = p.run(&["reconcile", "--once"]);
        if cond(p) {
            return;
        }
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn plan_status(p: &Project, id: &str) -> String {
    show(p, id)["status"].as_str().unwrap_or("").to_string()
}

/// Attempt 1 appends, raw, a `failed` update and one with sequence 999999 "of attempt 2" to its
/// mailbox, tries to plant them where attempt 2's mailbox will be, and fails. Attempt 2 (a
/// retry) reports from sequence 1 with the keys attempt 1 used, and names an evidence path that
/// leads out of its worktree through a link. Attempt 2 succeeds, its own updates all logged,
/// the forged ones nowhere, the bad path dropped and noted.
#[test]
fn an_attempt_cannot_plant_updates_for_the_next_and_each_attempt_counts_its_own_sequence() {
    let p = Project::new(&[]);
    let script = r#"up() { "$GUILD_HALL_BIN" toolbox task-update --status "$1" --sequence "$2" --idempotency-key "$3" >/dev/null; }
if [ "$GUILD_HALL_ATTEMPT" = 1 ]; then
  up in_progress 1 start
  failed='{"seq":90,"id":"forged-failed","ts":"2026-01-01T00:00:00.000Z","attempt":2,"kind":"task_update","status":"failed","error":{"message":"forged by attempt 1"},"sequence":5,"idempotency_key":"forged-failed"}'
  high='{"seq":91,"id":"forged-high","ts":"2026-01-01T00:00:00.000Z","attempt":2,"kind":"task_update","status":"in_progress","sequence":999999,"idempotency_key":"forged-high"}'
  printf '%s\n%s\n' "$failed" "$high" >> "$GUILD_HALL_MAILBOX"
  (printf '%s\n%s\n' "$failed" "$high" > "$(dirname "$GUILD_HALL_MAILBOX")/events-2.jsonl") 2>/dev/null || true
  up in_progress 7 later
  echo "attempt 1 fails" >&2
  exit 1
fi
ln -s /etc out
up in_progress 1 start
"$GUILD_HALL_BIN" toolbox task-update --status in_progress --sequence 2 --idempotency-key evidence --evidence-paths out/passwd >/dev/null
echo done > result.txt
up done 3 later"#;
    p.script_worker("planter", "full", script);
    write_plan(&p, "pl", "  - - {id: t, worker: planter, prompt: go}\n");
    p.settle();
    let v = show(&p, "pl");
    assert_eq!(v["status"], "halted", "attempt 1 fails: {v}");
    p.ok(&["plan", "retry", "pl"]);
    p.settle();
    let v = show(&p, "pl");
    assert_eq!(v["status"], "completed", "the forged `failed` update is not attempt 2's: {v}");
    assert_eq!(task(&v, "t")["attempt"], 2, "{v}");
    assert_eq!(git(&p.root, &["show", "claude/main:result.txt"]), "done\n");
    // Attempt 2's updates are all applied, from sequence 1; nothing forged is.
    let of_2: Vec<u64> = log(&v, "task_update").iter().filter(|e| e["attempt"] == 2).filter_map(|e| e["sequence"].as_u64()).collect();
    assert_eq!(of_2, [1, 2, 3], "{v}");
    assert!(log(&v, "task_update_ignored").is_empty(), "{v}");
    let text = v["log"].to_string();
    assert!(!text.contains("forged by attempt 1") && !text.contains("999999"), "{v}");
    // Attempt 1's mailbox held them as events of another attempt: skipped, and noted.
    assert!(
        log(&v, "anomaly").iter().any(|e| e["text"].as_str().unwrap_or("").contains("an event of attempt 2 in the mailbox of attempt 1")),
        "{v}"
    );
    // The evidence path through `out` (a link to /etc) is checked against the worktree.
    let evidence = log(&v, "task_update").into_iter().find(|e| e["attempt"] == 2 && e["sequence"] == 2).expect("the update");
    assert_eq!(evidence["evidence_paths"], serde_json::json!([]), "{evidence}");
    assert!(log(&v, "anomaly").iter().any(|e| e["text"].as_str().unwrap_or("").contains("evidence path \"out/passwd\" dropped")), "{v}");
}

/// A task whose mailbox holds 8,000 task updates (appended raw, at once): folded in one pass —
/// the first 1,000 logged one by one, the rest counted in a note — and a pass after reads only
/// what is new (the position is kept). Before, each pass read it whole and compared every
/// update with every other (quadratic: about 111 s a pass, debug build).
#[test]
fn a_task_mailbox_of_8000_updates_is_folded_once_and_read_only_where_new() {
    let p = Project::new(&[]);
    let script = r#"awk 'BEGIN { for (i = 1; i <= 8000; i++) printf "{\"seq\":%d,\"id\":\"raw-%d\",\"ts\":\"2026-01-01T00:00:00.000Z\",\"attempt\":1,\"kind\":\"task_update\",\"status\":\"in_progress\",\"changed_ops\":[{\"op\":\"modify\",\"path\":\"src/f%d.rs\"}],\"sequence\":%d,\"idempotency_key\":\"step-%d\",\"task_id\":\"fl:exec:wave-1:task-1\",\"phase\":\"fl\",\"stage\":\"execute\",\"worktree_path\":\".\",\"emitted_at\":\"2026-01-01T00:00:00Z\",\"timestamps\":{\"updated_at\":\"2026-01-01T00:00:00Z\"}}\n", i, i, i, i, i }' >> "$GUILD_HALL_MAILBOX"
echo many > many.txt"#;
    p.script_worker("flooder", "full", script);
    write_plan(&p, "fl", "  - - {id: t, worker: flooder, prompt: go}\n");
    passes_until(&p, "the plan to complete", Duration::from_secs(90), |p| plan_status(p, "fl") == "completed");
    let v = show(&p, "fl");
    assert_eq!(log(&v, "task_update").len(), 1000, "the first 1,000 logged one by one");
    assert!(
        log(&v, "anomaly")
            .iter()
            .any(|e| e["text"].as_str().unwrap_or("").contains("in_progress x7000 were folded without their own entry")),
        "{v}"
    );
    assert_eq!(git(&p.root, &["show", "claude/main:many.txt"]), "many\n");
    // What was read is remembered: the position is the file's end.
    let state = task_state(&p, "fl", "fl-exec-wave-1-task-1");
    let folded: Value =
        serde_json::from_slice(&std::fs::read(state.join("events-1.folded.json")).expect("the kept position")).expect("json");
    assert_eq!(folded["cursor"]["offset"].as_u64(), Some(std::fs::metadata(state.join("events-1.jsonl")).expect("mailbox").len()));
}

/// An unprivileged worker (uid 65534, guild-hall too) owns its mailbox and can `chmod 000` it
/// (Landlock does not cover chmod): guild-hall gives the mode back and reads it. Before, a
/// commission stayed `in_progress` for ever holding its slot and worktree, and a task's plan
/// became a problem that nothing was judged for.
#[test]
fn a_worker_that_makes_its_mailbox_unreadable_is_read_all_the_same() {
    use std::os::unix::fs::PermissionsExt;
    let p = Project::new(&[]);
    p.script_worker(
        "hider",
        "full",
        "\"$GUILD_HALL_BIN\" toolbox submit-result --summary \"done, then hidden\"\nchmod 000 \"$GUILD_HALL_MAILBOX\"",
    );
    p.script_worker("task-hider", "full",
        "\"$GUILD_HALL_BIN\" toolbox task-update --status done --sequence 1 --idempotency-key done >/dev/null\necho hidden > hidden.txt\nchmod 000 \"$GUILD_HALL_MAILBOX\"",
    );
    let id = p.create("hider", "Hide", "Submit, then hide the mailbox.");
    write_plan(&p, "hp", "  - - {id: t, worker: task-hider, prompt: go}\n");
    let path = std::env::var("PATH").unwrap_or_default();
    let _ = crate::worker::claude_code::run_as(&p, true, &path, &["reconcile", "--once", "--wait", "--timeout", "40s"], &[]);
    assert_eq!(p.status(&id), "completed", "{}", p.artifact(&id));
    assert!(p.artifact(&id).contains("done, then hidden"), "{}", p.artifact(&id));
    let mode = std::fs::metadata(first_mailbox(&p.state_dir(&id))).expect("mailbox").permissions().mode() & 0o7777;
    assert_eq!(mode, 0o600, "guild-hall's file again");
    let v = show(&p, "hp");
    assert_eq!(v["status"], "completed", "{v}");
    assert_eq!(git(&p.root, &["show", "claude/main:hidden.txt"]), "hidden\n");
}

/// A mailbox guild-hall cannot read even so (here: replaced by a directory while the worker
/// runs) fails the attempt once its worker has ended, with a reason naming the file — a
/// commission (a result it may hold cannot be read) and a wave task alike — instead of
/// waiting for ever; for a task it is the task's failure, not a problem of its whole plan.
#[test]
fn a_mailbox_that_cannot_be_read_fails_the_ended_attempt_naming_it() {
    let p = Project::new(&[]);
    let go = p.tmp.path().join("go");
    let wait = format!("while [ ! -e '{}' ]; do sleep 0.1; done", go.display());
    p.script_worker("submitter", "full", &format!("\"$GUILD_HALL_BIN\" toolbox submit-result --summary \"a result\"\n{wait}"));
    p.script_worker(
        "reporter",
        "full",
        &format!(
            "\"$GUILD_HALL_BIN\" toolbox task-update --status done --sequence 1 --idempotency-key done >/dev/null\necho r > r.txt\n{wait}"
        ),
    );
    let id = p.create("submitter", "Submit", "Submit, then wait.");
    write_plan(&p, "rp", "  - - {id: t, worker: reporter, prompt: go}\n");
    let written = |m: PathBuf| std::fs::metadata(m).is_ok_and(|m| m.is_file() && m.len() > 0);
    passes_until(&p, "both workers to have written", Duration::from_secs(60), |p| {
        p.try_state_dir(&id).is_some_and(|s| written(first_mailbox(&s)))
            && written(first_mailbox(&task_state(p, "rp", "rp-exec-wave-1-task-1")))
    });
    let task_dir = task_state(&p, "rp", "rp-exec-wave-1-task-1");
    let commission_mailbox = first_mailbox(&p.state_dir(&id));
    let task_mailbox = first_mailbox(&task_dir);
    for m in [&commission_mailbox, &task_mailbox] {
        std::fs::remove_file(m).expect("rm");
        std::fs::create_dir(m).expect("mkdir");
    }
    std::fs::write(&go, "").expect("go");
    passes_until(&p, "the attempts to fail", Duration::from_secs(60), |p| {
        p.status(&id) == "failed" && task(&show(p, "rp"), "t")["state"] == "failed"
    });
    let reason = p.status_json(&id)["reason"].as_str().unwrap_or("").to_string();
    assert!(reason.contains(&commission_mailbox.display().to_string()), "{reason}");
    assert!(reason.contains("a result it may hold cannot be read"), "{reason}");
    passes_until(&p, "the plan to halt", Duration::from_secs(30), |p| plan_status(p, "rp") == "halted");
    let v = show(&p, "rp");
    let why = task(&v, "t")["reason"].as_str().unwrap_or("").to_string();
    assert!(why.contains(&task_mailbox.display().to_string()) && why.contains("its mailbox cannot be read"), "{why}");
    assert!(v["reason"].as_str().unwrap_or("").contains(&task_mailbox.display().to_string()), "{v}");
    // The task's, not the plan's: `check` has nothing to say about the plan.
    let (_, out, err) = p.run(&["check"]);
    assert!(!out.contains("rp.md") && !err.contains("rp.md"), "{out}{err}");
}

/// A task that leaves a path git refuses (`a/.GIT/config`): its copy-back fails the task,
/// naming the path, and halts the plan; before, "invalid path" failed every pass and the plan
/// stayed `running` with no reason.
#[test]
fn a_copy_back_that_fails_fails_the_task_and_halts_the_plan_saying_why() {
    let p = Project::new(&["mason"]);
    write_plan(&p, "gp", "  - - {id: t, worker: mason, prompt: \"write: a/.GIT/config x\\nwrite: fine.txt fine\"}\n");
    passes_until(&p, "the plan to halt", Duration::from_secs(60), |p| plan_status(p, "gp") == "halted");
    let v = show(&p, "gp");
    let why = task(&v, "t")["reason"].as_str().unwrap_or("").to_string();
    assert_eq!(task(&v, "t")["state"], "failed", "{v}");
    assert!(why.contains("a/.GIT/config"), "{why}");
    assert!(v["reason"].as_str().unwrap_or("").contains("a/.GIT/config"), "{v}");
    assert!(!git(&p.root, &["log", "--format=%B", "claude/main"]).contains("Guild-Hall-Task"), "nothing of the wave landed");
}

/// A meeting's mailbox (one for all its turns) is read only where it is new, too: a flood of
/// 1,500 summaries appended at once is folded in one pass — the first 1,000 logged one by one,
/// the rest counted, the notes showing the latest — the position kept at the file's end, and
/// the next pass adds nothing.
#[test]
fn a_meetings_mailbox_is_read_only_where_new() {
    use std::io::Write;
    let p = Project::new(&["counsel"]);
    p.ok(&["meeting", "start", "--worker", "counsel", "--id", "m"]);
    let project = p.home.join("state").read_dir().expect("state").next().expect("project").expect("entry").path();
    let state = project.join("meetings/m");
    let mailbox = state.join("events.jsonl");
    let mut f = std::fs::OpenOptions::new().create(true).append(true).open(&mailbox).expect("the meeting mailbox");
    for i in 1..=1500 {
        let line = format!(
            "{{\"seq\":{},\"id\":\"{}\",\"ts\":\"2026-01-01T00:00:00.000Z\",\"attempt\":1,\"kind\":\"summary\",\"text\":\"summary {i}\"}}\n",
            i + 100,
            uuid_of(i)
        );
        f.write_all(line.as_bytes()).expect("append");
    }
    drop(f);
    let events = |p: &Project| -> Vec<Value> {
        let v: Value = serde_json::from_str(&p.ok(&["meeting", "show", "m", "--json"])).expect("json");
        v["log"].as_array().cloned().unwrap_or_default()
    };
    p.ok(&["reconcile", "--once"]);
    let log = events(&p);
    let summaries = log.iter().filter(|e| e["kind"] == "summary" && e["text"].as_str().unwrap_or("").starts_with("summary ")).count();
    assert_eq!(summaries, 1000, "the first 1,000 logged one by one");
    assert!(
        log.iter()
            .any(|e| e["kind"] == "anomaly" && e["text"].as_str().unwrap_or("").contains("500 were folded without their own log entry")),
        "{log:?}"
    );
    let artifact = std::fs::read_to_string(p.root.join(".lore/meetings/m.md")).expect("artifact");
    assert!(artifact.contains("summary 1500") && artifact.contains("earlier summaries are in the log"), "{artifact}");
    let folded: Value = serde_json::from_slice(&std::fs::read(state.join("events.folded.json")).expect("the kept position")).expect("json");
    assert_eq!(folded["cursor"]["offset"].as_u64(), Some(std::fs::metadata(&mailbox).expect("mailbox").len()));
    p.ok(&["reconcile", "--once"]);
    assert_eq!(events(&p).len(), log.len(), "nothing read again");
}

/// A UUID-shaped id for a raw line (the reader keeps a UUID as the event's key).
fn uuid_of(i: usize) -> String {
    format!("00000000-0000-4000-8000-{i:012}")
}

/// Kiln's TaskUpdate schema, held to: `task_id`, `phase`, `stage`, `worktree_path`, `emitted_at`
/// are required of a recorded update (the toolbox fills them, so a worker sending only status,
/// sequence and key still reports), and `verify_summary`, `error`, `timestamps` have the
/// contract's shapes. A malformed one is refused by the toolbox naming the field; one written
/// raw without the required fields is dropped where it is read, and noted (fails on ab359d5:
/// `{"result": "maybe"}`, `updated_at: yesterday` and stage `review` were taken, the raw line
/// logged as an update).
#[test]
fn task_updates_hold_to_the_contracts_schema() {
    let p = Project::new(&[]);
    let script = r#"t() { if "$GUILD_HALL_BIN" toolbox task-update "$@" >/dev/null 2>>refusals.txt; then echo ok >> outcomes.txt; else echo refused >> outcomes.txt; fi; }
t --status in_progress --sequence 1 --idempotency-key a
t --status in_progress --sequence 2 --idempotency-key b --verify-summary '{"result":"maybe"}'
t --status in_progress --sequence 2 --idempotency-key c --timestamps '{"updated_at":"yesterday"}'
t --status in_progress --sequence 2 --idempotency-key d --stage review
t --status verify_passed --sequence 2 --idempotency-key e --verify-summary '{"result":"pass","command_summary":["cargo test: exit 0"],"checks":[{"name":"unit","outcome":"pass"}]}' --timestamps '{"started_at":"2026-01-01T00:00:00Z"}'
printf '%s\n' '{"seq":50,"id":"raw","ts":"2026-01-01T00:00:00.000Z","attempt":1,"kind":"task_update","status":"in_progress","sequence":3,"idempotency_key":"raw"}' >> "$GUILD_HALL_MAILBOX"
t --status done --sequence 4 --idempotency-key f"#;
    p.script_worker("reporter", "full", script);
    write_plan(&p, "sc", "  - - {id: t, worker: reporter, prompt: go}\n");
    p.settle();
    let v = show(&p, "sc");
    assert_eq!(v["status"], "completed", "{v}");
    assert_eq!(git(&p.root, &["show", "claude/main:outcomes.txt"]), "ok\nrefused\nrefused\nrefused\nok\nok\n");
    let refusals = git(&p.root, &["show", "claude/main:refusals.txt"]);
    assert!(refusals.contains("maybe"), "the bad result is named:\n{refusals}");
    assert!(refusals.contains("timestamps.updated_at \"yesterday\" is not an RFC 3339 time in UTC"), "{refusals}");
    assert!(refusals.contains("stage \"review\""), "{refusals}");
    let updates = log(&v, "task_update");
    let seqs: Vec<u64> = updates.iter().filter_map(|e| e["sequence"].as_u64()).collect();
    assert_eq!(seqs, [1, 2, 4], "the raw line without the required fields is not an update: {v}");
    assert_eq!(updates[1]["verify_summary"]["checks"][0]["outcome"], "pass", "{v}");
    assert!(
        log(&v, "anomaly").iter().any(|e| e["text"]
            .as_str()
            .unwrap_or("")
            .contains("task update dropped: missing required task_id, phase, stage, worktree_path, emitted_at, timestamps.updated_at")),
        "{v}"
    );
    // What the toolbox filled in is in the mailbox as recorded.
    let mailbox = std::fs::read_to_string(first_mailbox(&task_state(&p, "sc", "sc-exec-wave-1-task-1"))).expect("mailbox");
    let first: Value = serde_json::from_str(mailbox.lines().next().expect("a line")).expect("json");
    assert_eq!(first["task_id"], "sc:exec:wave-1:task-1", "{first}");
    assert_eq!((first["phase"].as_str(), first["stage"].as_str()), (Some("sc"), Some("execute")), "{first}");
    assert!(first["worktree_path"].as_str().is_some_and(|w| w.ends_with("task-sc-exec-wave-1-task-1")), "{first}");
    assert_eq!(first["timestamps"]["updated_at"], first["emitted_at"], "{first}");
}
