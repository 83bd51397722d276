//! Every command agreeing, and output a person can read: requests
//! refused up front with the reconciler's own words, `status` filters that cover plans, a
//! timeline that opens with what happened, stale reasons gone, readable tables and reasons.

use serde_json::Value;

use crate::common::{needs, Project};
use crate::worker::one_package::one_task_plan;

fn plan_show(p: &Project, id: &str) -> Value {
    serde_json::from_str(&p.ok(&["plan", "show", id, "--json"])).expect("plan json")
}

fn meeting_show(p: &Project, id: &str) -> Value {
    serde_json::from_str(&p.ok(&["meeting", "show", id, "--json"])).expect("meeting json")
}

fn write_meeting(p: &Project, id: &str, text: &str) {
    let dir = p.root.join(".lore/meetings");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(dir.join(format!("{id}.md")), text).expect("write meeting");
}

fn set_status(path: &std::path::Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(path).expect("read");
    assert!(text.contains(&format!("status: {from}\n")), "{text}");
    std::fs::write(path, text.replacen(&format!("status: {from}\n"), &format!("status: {to}\n"), 1)).expect("write");
}

/// The column a header's word starts at, and the character index of `cell` in `row`.
fn column(line: &str, word: &str) -> usize {
    let at = line.find(word).unwrap_or_else(|| panic!("{word:?} in {line:?}"));
    line[..at].chars().count()
}

/// Ids longer than 30 characters keep the table aligned; a completed commission shows what it
/// ended with (its result), not the last progress note it sent on the way.
#[test]
fn the_status_table_fits_long_ids_and_shows_a_completed_result() {
    let p = Project::new(&[]);
    p.script_worker(
        "finisher",
        "sparse",
        r#""$GUILD_HALL_BIN" toolbox submit-result --summary "All three items done"
"$GUILD_HALL_BIN" toolbox report-progress "tidying up""#,
    );
    let long = "a-commission-whose-id-is-well-over-thirty-characters";
    p.ok(&["commission", "create", "--worker", "finisher", "--title", "Long", "--id", long, "--prompt", "Do it."]);
    let short = p.create("finisher", "Short", "Do it.");
    p.settle();
    let out = p.ok(&["status"]);
    let lines: Vec<&str> = out.lines().collect();
    let header = lines.iter().find(|l| l.starts_with("ID ")).unwrap_or_else(|| panic!("a header: {out}"));
    for id in [long, short.as_str()] {
        let row = lines.iter().find(|l| l.starts_with(&format!("{id} "))).unwrap_or_else(|| panic!("{id}: {out}"));
        assert_eq!(column(row, "completed"), column(header, "STATUS"), "aligned:\n{out}");
        assert_eq!(column(row, "finisher"), column(header, "WORKER"), "aligned:\n{out}");
        assert!(row.ends_with("All three items done"), "the result, not the progress: {row}");
    }
    // The JSON keeps the full id and both texts.
    let v = p.status_json(long);
    assert_eq!(v["id"], long);
    assert_eq!(v["progress"], "tidying up");
}

/// `--status` and `--worker` filter plans too; when nothing matches, the output says what
/// matched nothing instead of "no commissions".
#[test]
fn status_filters_cover_plans_and_say_what_matched_nothing() {
    let p = Project::new(&["scribe"]);
    one_task_plan(&p, "notes", "scribe");
    p.settle();
    assert_eq!(plan_show(&p, "notes")["status"], "completed");

    let out = p.ok(&["status", "--worker", "scribe"]);
    assert!(out.contains("plan notes: completed") && out.contains("notes:exec:wave-1:task-1"), "{out}");
    assert!(!out.contains("no commissions"), "{out}");
    let out = p.ok(&["status", "--status", "completed"]);
    assert!(out.contains("plan notes: completed"), "{out}");

    let out = p.ok(&["status", "--status", "failed"]);
    assert!(!out.contains("plan notes"), "a plan of another status is left out: {out}");
    assert!(out.contains("no commission or plan with status failed"), "{out}");
    let out = p.ok(&["status", "--worker", "nobody"]);
    assert!(!out.contains("plan notes"), "{out}");
    assert!(out.contains("no commission or plan with worker nobody"), "{out}");
}

/// Titles with letters beyond ASCII make readable ids.
#[test]
fn a_title_with_diacritics_is_transliterated() {
    let p = Project::new(&["scribe"]);
    p.config("dispatch: manual\n");
    assert_eq!(p.create("scribe", "Émigré café", "Say hello."), "emigre-cafe");
}

/// `meeting list` has a header, as `status` has.
#[test]
fn meeting_list_has_a_header() {
    let p = Project::new(&["counsel"]);
    write_meeting(&p, "findings", "---\nworker: counsel\nstatus: requested\nagenda: the findings need a decision\n---\n");
    let out = p.ok(&["meeting", "list"]);
    let mut lines = out.lines();
    let header = lines.next().unwrap_or("");
    assert!(header.starts_with("ID ") && header.contains("STATUS") && header.contains("WORKER"), "{out}");
    let row = lines.next().unwrap_or("");
    assert!(row.starts_with("findings "), "{out}");
    assert_eq!(column(row, "requested"), column(header, "STATUS"), "{out}");
}

/// The first line of every artifact's timeline says what happened: `created` with the status it
/// was made with — a hand-written commission (with a status and without), `commission create`
/// (submitted and draft), a plan created pending, a meeting request.
#[test]
fn every_timeline_opens_with_created() {
    let p = Project::new(&["scribe", "counsel"]);
    p.config("dispatch: manual\n");
    p.write_commission("bare", "---\nworker: scribe\n---\nSay hello.\n");
    p.write_commission("hand", "---\nworker: scribe\nstatus: pending\n---\nSay hello.\n");
    let made = p.create("scribe", "Made", "Say hello.");
    let draft =
        p.ok(&["commission", "create", "--worker", "scribe", "--title", "Draft", "--draft", "--prompt", "Say it."]).trim().to_string();
    one_task_plan(&p, "notes", "scribe");
    write_meeting(&p, "findings", "---\nworker: counsel\nstatus: requested\nrequested_by: manager\nagenda: the findings\n---\n");
    p.settle();

    let first = |log: &[Value]| log.first().cloned().unwrap_or(Value::Null);
    for (id, status) in [("bare", "pending"), ("hand", "pending"), (made.as_str(), "pending"), (draft.as_str(), "draft")] {
        let log = p.timeline(id);
        let e = first(&log);
        assert_eq!((e["kind"].as_str(), e["status"].as_str()), (Some("created"), Some(status)), "{id}: {log:?}");
        assert!(!log.iter().any(|e| e["kind"] == "status" && e["from"] == e["to"]), "{id}: no move to where it was: {log:?}");
    }
    let text = p.ok(&["timeline", "bare"]);
    assert!(text.lines().next().unwrap_or("").contains("created    pending"), "{text}");

    let log = plan_show(&p, "notes")["log"].as_array().cloned().unwrap_or_default();
    assert_eq!((first(&log)["kind"].as_str(), first(&log)["status"].as_str()), (Some("created"), Some("pending")), "{log:?}");
    assert!(!log.iter().any(|e| e["kind"] == "status" && e["from"] == "draft"), "never a draft: {log:?}");

    let log = meeting_show(&p, "findings")["log"].as_array().cloned().unwrap_or_default();
    assert_eq!((first(&log)["kind"].as_str(), first(&log)["status"].as_str()), (Some("created"), Some("requested")), "{log:?}");
    assert!(first(&log)["text"].as_str().unwrap_or("").contains("manager"), "{log:?}");
}

/// A meeting's successful close clears the reason an earlier refusal left.
#[test]
fn a_closed_meeting_keeps_no_old_refusal() {
    let p = Project::new(&["counsel"]);
    p.ok(&["meeting", "start", "--worker", "counsel", "--id", "m", "hello"]);
    let path = p.root.join(".lore/meetings/m.md");
    set_status(&path, "open", "requested");
    p.ok(&["reconcile", "--once"]);
    let v = meeting_show(&p, "m");
    assert!(v["reason"].as_str().unwrap_or("").starts_with("refused status change open -> requested"), "{v}");
    p.ok(&["meeting", "close", "m"]);
    let v = meeting_show(&p, "m");
    assert_eq!(v["status"], "closed", "{v}");
    assert!(v["reason"].is_null(), "the refusal is stale once the close succeeded: {v}");
}

/// What the reconciler would refuse is refused up front, nothing written, in the words its own
/// refusal writes: a meeting closed before it was opened, a completed plan cancelled.
#[test]
fn meeting_and_plan_requests_are_refused_up_front_in_the_passs_words() {
    let p = Project::new(&["scribe", "counsel"]);
    write_meeting(&p, "ask", "---\nworker: counsel\nstatus: requested\nagenda: a question\n---\n");
    one_task_plan(&p, "notes", "scribe");
    p.settle();

    // The meeting: `meeting close` of a request.
    let path = p.root.join(".lore/meetings/ask.md");
    let before = std::fs::read(&path).expect("read");
    let (code, out, err) = p.run(&["meeting", "close", "ask"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("nothing written"), "{err}");
    assert_eq!(std::fs::read(&path).expect("read"), before, "nothing written");
    // The same request written by hand: the pass refuses it with the same words.
    set_status(&path, "requested", "closed");
    p.ok(&["reconcile", "--once"]);
    let reason = meeting_show(&p, "ask")["reason"].as_str().unwrap_or("").to_string();
    assert!(reason.starts_with("refused status change requested -> closed: "), "{reason}");
    assert!(err.contains(&reason), "the same words up front as in the pass:\n{err}\n{reason}");

    // The plan: `plan cancel` of a completed plan.
    assert_eq!(plan_show(&p, "notes")["status"], "completed");
    let path = p.root.join(".lore/plans/notes.md");
    let before = std::fs::read(&path).expect("read");
    let (code, out, err) = p.run(&["plan", "cancel", "notes"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("nothing written"), "{err}");
    assert_eq!(std::fs::read(&path).expect("read"), before, "nothing written");
    set_status(&path, "completed", "cancelled");
    p.ok(&["reconcile", "--once"]);
    let log = plan_show(&p, "notes")["log"].as_array().cloned().unwrap_or_default();
    let refused = log.iter().find(|e| e["kind"] == "refused").unwrap_or_else(|| panic!("refused by the pass: {log:?}"));
    let reason = refused["reason"].as_str().unwrap_or("").to_string();
    assert!(reason.starts_with("refused: a plan that is completed cannot be set to cancelled"), "{reason}");
    assert!(err.contains(&reason), "the same words up front as in the pass:\n{err}\n{reason}");
}

/// A failed attempt says why in its reason: the last lines of the worker's log, not only
/// "exit code 127" (the cause was only in `logs`).
#[test]
fn a_failed_attempts_reason_carries_the_end_of_its_log() {
    let p = Project::new(&[]);
    p.script_worker("lost", "sparse", "echo 'starting the agent'\nprintf '\\033[31mfatal:\\033[0m ' >&2\nno-such-agent-cli --run");
    let id = p.create("lost", "Lost", "Do it.");
    p.settle();
    let v = p.status_json(&id);
    assert_eq!(v["status"], "failed", "{v}");
    let reason = v["reason"].as_str().unwrap_or("");
    assert!(reason.contains("exited with code 127"), "{reason}");
    assert!(reason.contains("no-such-agent-cli") && reason.contains("not found"), "the cause: {reason}");
    assert!(!reason.contains('\x1b'), "no escape sequences: {reason:?}");
}

/// A meeting's toolbox refuses `submit_result` saying what ends a meeting instead.
#[test]
fn a_meeting_toolbox_refuses_submit_result_saying_how_a_meeting_ends() {
    let p = Project::new(&[]);
    let mailbox = p.root.join("mailbox.jsonl");
    let out = p
        .cmd()
        .args(["toolbox", "submit-result", "--summary", "done"])
        .env("GUILD_HALL_MEETING", "m")
        .env("GUILD_HALL_MAILBOX", &mailbox)
        .env("GUILD_HALL_WORKTREE", &p.root)
        .env("GUILD_HALL_ATTEMPT", "1")
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("submit-result is not in the toolbox of a meeting") && err.contains("closes it"), "{err}");
    assert!(!mailbox.exists(), "nothing recorded");
}

/// `plan show` gives each task's submitted result, as text and JSON.
#[test]
fn plan_show_gives_a_tasks_result() {
    let p = Project::new(&["scribe"]);
    one_task_plan(&p, "notes", "scribe");
    p.settle();
    let slug = "notes-exec-wave-1-task-1";
    let v = plan_show(&p, "notes");
    let task = &v["tasks"][0];
    assert_eq!(task["result"]["summary"], format!("Wrote .lore/reports/{slug}.md"), "{v}");
    assert_eq!(task["result"]["artifacts"], serde_json::json!([format!(".lore/reports/{slug}.md")]));
    let out = p.ok(&["plan", "show", "notes"]);
    assert!(out.contains(&format!("result: Wrote .lore/reports/{slug}.md")), "{out}");
}

/// Colours only on a terminal, and never with NO_COLOR set.
#[test]
fn no_colour_off_a_terminal_or_with_no_color() {
    let p = Project::new(&["scribe"]);
    // Off a terminal (a pipe): the log has no escape sequence.
    let out = p
        .cmd_in_shell("timeout -s INT 2 \"$0\" -v watch 2>&1 | cat")
        .arg(assert_cmd::cargo::cargo_bin("guild-hall"))
        .output()
        .expect("runs");
    let log = String::from_utf8_lossy(&out.stdout);
    assert!(log.contains("watching"), "{log}");
    assert!(!log.contains('\x1b'), "{log:?}");
    // On a terminal (`script` gives it one): colours, unless NO_COLOR says not to.
    let run = |no_color: bool| {
        let mut c = p.cmd_in_shell("script -qec \"timeout -s INT 2 $0 -v watch\" /dev/null");
        c.arg(assert_cmd::cargo::cargo_bin("guild-hall"));
        if no_color {
            c.env("NO_COLOR", "1");
        } else {
            c.env_remove("NO_COLOR");
        }
        let out = needs(c.output(), "script", "a terminal for the colour check (util-linux)");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let coloured = run(false);
    if !coloured.contains("watching") {
        eprintln!("skipped: `script` gave no terminal here ({coloured:?})");
        return;
    }
    assert!(coloured.contains("\x1b["), "a terminal gets colours: {coloured:?}");
    let plain = run(true);
    assert!(plain.contains("watching") && !plain.contains('\x1b'), "NO_COLOR: {plain:?}");
}

/// The file watcher's own chatter (`notify`: "unable to remove watch descriptor" when a watched
/// directory goes away) stays out of `watch`'s log at its default levels.
#[test]
fn the_watchers_own_notices_stay_quiet() {
    let p = Project::new(&[]);
    let w = crate::common::Service::start(&p, &[], &[]);
    for n in 0..3 {
        let dir = p.root.join(format!(".lore/gone-{n}/deeper"));
        std::fs::create_dir_all(&dir).expect("mkdir");
        std::thread::sleep(std::time::Duration::from_millis(300));
        std::fs::remove_dir_all(p.root.join(format!(".lore/gone-{n}"))).expect("rm");
    }
    // Events are handled in order: once a later one is seen, the removals were handled.
    std::fs::write(p.root.join(".lore/after.md"), "x\n").expect("write");
    crate::common::wait_for("the watcher to see a later change", || w.log().contains("after.md"));
    let log = w.log();
    assert!(!log.contains("unable to remove watch descriptor"), "{log}");
    w.stop();
}

/// `commission redispatch` of a completed commission is refused up front in the words the pass
/// writes when a person sets `status: pending` on it by hand.
#[test]
fn redispatch_is_refused_up_front_in_the_passs_words() {
    let p = Project::new(&["scribe"]);
    let id = p.create("scribe", "Hello", "Say hello.");
    p.settle();
    assert_eq!(p.status(&id), "completed");
    let before = p.artifact(&id);
    let (code, out, err) = p.run(&["commission", "redispatch", &id]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("nothing written"), "{err}");
    assert_eq!(p.artifact(&id), before, "nothing written");
    set_status(&p.artifact_path(&id), "completed", "pending");
    p.ok(&["reconcile", "--once"]);
    let reason = p.status_json(&id)["reason"].as_str().unwrap_or("").to_string();
    assert!(reason.starts_with("refused status change completed -> pending: a completed commission is final"), "{reason}");
    assert!(err.contains(&reason), "the same words up front as in the pass:\n{err}\n{reason}");
}

/// A title with no Latin letter names the artifact by its kind, not `commission`: a meeting
/// `meeting-<time>`, a plan `plan`.
#[test]
fn a_title_in_another_script_names_the_artifact_by_its_kind() {
    let p = Project::new(&["counsel", "scribe"]);
    p.config("dispatch: manual\n");
    let out = p.ok(&["meeting", "start", "--worker", "counsel", "--agenda", "会議の議題", "--json"]);
    let v: Value = serde_json::from_str(out.lines().next().unwrap_or("")).unwrap_or(Value::Null);
    let id = v["id"].as_str().map(str::to_string).unwrap_or_else(|| out.clone());
    assert!(id.starts_with("meeting-"), "{out}");
    let waves = p.tmp.path().join("waves.yaml");
    std::fs::write(&waves, "- - {id: one, worker: scribe, prompt: \"Do it.\"}\n").expect("waves");
    let out = p.ok(&["plan", "create", "--title", "計画", "--draft", waves.to_str().expect("utf8")]);
    assert_eq!(out.trim(), "plan", "{out}");
}
