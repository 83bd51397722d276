//! Guild Hall's own projects under guild-hall: a copied `.lore/` in Guild Hall's dialect
//! (`tests/fixtures/guild-hall-dialect`: commissions in every status, meetings) passes `check`
//! and shows every status and timeline; a pending commission in the dialect runs — through a
//! scripted worker and through the real Claude Code CLI against the stand-in model API — and
//! ends with its file still in Guild Hall's shape; ids of either case, case-only duplicates
//! refused; `abandoned`, terminal and satisfying a dependency on it.

use std::path::PathBuf;

use serde_json::Value;

use crate::common::*;

const PENDING: &str = "commission-Dalton-20260307-090000";
const ABANDONED: &str = "commission-Celeste-20260304-090000";

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/guild-hall-dialect/.lore")
}

/// Copy the fixture's artifacts (`commissions/…`, `meetings/…`) named, or all of them.
fn copy_lore(p: &Project, only: Option<&[&str]>) {
    for kind in ["commissions", "meetings"] {
        for e in std::fs::read_dir(fixtures().join(kind)).expect("fixtures").filter_map(|e| e.ok()) {
            let name = e.file_name().to_string_lossy().into_owned();
            if only.is_none_or(|o| o.iter().any(|id| name == format!("{id}.md"))) {
                std::fs::copy(e.path(), p.root.join(".lore").join(kind).join(&name)).expect("copy");
            }
        }
    }
}

fn fixture(id: &str) -> String {
    std::fs::read_to_string(fixtures().join("commissions").join(format!("{id}.md"))).expect("fixture")
}

/// The top-level keys of a file's frontmatter, in order.
fn keys(text: &str) -> Vec<String> {
    let yaml = text.split("\n---\n").next().unwrap_or("").trim_start_matches("---\n");
    yaml.lines()
        .filter(|l| !l.starts_with([' ', '-', '#']) && l.contains(':'))
        .map(|l| l.split(':').next().unwrap_or("").to_string())
        .collect()
}

fn frontmatter(text: &str) -> serde_yaml_ng::Mapping {
    let yaml = text.trim_start_matches("---\n").split("\n---\n").next().unwrap_or("");
    serde_yaml_ng::from_str(yaml).expect("frontmatter")
}

/// The events of `activity_timeline:` in order; each entry has exactly `timestamp`, `event`,
/// `reason`, and (a status change) `from` and `to`.
fn log_events(text: &str) -> Vec<String> {
    let fm = frontmatter(text);
    let log = fm.get("activity_timeline").and_then(|l| l.as_sequence()).expect("activity_timeline").clone();
    log.iter()
        .map(|e| {
            let m = e.as_mapping().expect("an entry is a mapping");
            let names: Vec<&str> = m.keys().filter_map(|k| k.as_str()).collect();
            let event = m.get("event").and_then(|v| v.as_str()).expect("event").to_string();
            let want: &[&str] = if event.starts_with("status_") {
                &["timestamp", "event", "reason", "from", "to"]
            } else {
                &["timestamp", "event", "reason"]
            };
            assert_eq!(names, want, "{event}: {m:?}");
            let ts = m.get("timestamp").and_then(|v| v.as_str()).expect("timestamp");
            assert!(chrono::DateTime::parse_from_rfc3339(ts).is_ok(), "{ts}");
            event
        })
        .collect()
}

/// Every line of `before` but `changed` ones is in `after`, in the same order, byte for byte.
fn untouched_lines_kept(before: &str, after: &str, changed: &[&str]) {
    let mut rest = after.lines();
    for line in before.lines().filter(|l| !changed.iter().any(|c| l.starts_with(c))) {
        assert!(rest.any(|l| l == line), "line {line:?} of the original is gone or moved:\n{after}");
    }
}

#[test]
fn a_guild_hall_lore_passes_check_and_shows_every_status_and_timeline() {
    let p = Project::new(&[]);
    copy_lore(&p, None);
    let out = p.ok(&["check"]);
    assert!(out.starts_with("ok: 8 commissions, 3 meetings"), "{out}");
    // Every status, Guild Hall's `abandoned` among them; how each ended, from its own log.
    let rows: Value = serde_json::from_str(&p.ok(&["status", "--json"])).expect("json");
    let rows = rows.as_array().expect("rows");
    let by_id = |id: &str| rows.iter().find(|r| r["id"] == id).unwrap_or_else(|| panic!("{id} in {rows:?}")).clone();
    for (id, status) in [
        ("commission-Dalton-20260301-090000", "completed"),
        ("commission-Dalton-20260302-090000", "failed"),
        ("commission-Celeste-20260303-090000", "cancelled"),
        (ABANDONED, "abandoned"),
        ("commission-Dalton-20260305-090000", "in_progress"),
        ("commission-Dalton-20260306-090000", "dispatched"),
        (PENDING, "pending"),
        ("commission-Celeste-20260308-090000", "blocked"),
    ] {
        assert_eq!(by_id(id)["status"], status, "{id}");
    }
    let done = by_id("commission-Dalton-20260301-090000");
    assert_eq!(done["result"]["summary"], "Twelve lanterns, counted by name.", "the body is its result: {done}");
    assert_eq!(done["progress"], "Walked the tree; twelve so far.");
    assert_eq!(by_id(ABANDONED)["reason"], "The cellar was sealed; nothing to map");
    assert_eq!(by_id("commission-Dalton-20260302-090000")["reason"], "Session ended without submitting a result");
    // A failed dependency keeps it waiting; an abandoned one does not.
    let waits = |id: &str| by_id(id)["waiting"].as_str().unwrap_or("").to_string();
    assert!(
        waits("commission-Celeste-20260308-090000").contains("missing dependencies"),
        "{}",
        by_id("commission-Celeste-20260308-090000")
    );
    assert!(waits("commission-Celeste-20260308-090000").contains("commission-Dalton-20260302-090000"));
    assert!(!waits(PENDING).contains("missing dependencies"), "{}", by_id(PENDING));
    let table = p.ok(&["status"]);
    for status in ["completed", "failed", "cancelled", "abandoned", "in_progress", "dispatched", "pending", "blocked"] {
        assert!(table.contains(&format!(" {status} ")), "{status} in\n{table}");
    }
    // Its timeline, as Guild Hall logged it: text and JSON.
    let text = p.ok(&["timeline", "commission-Dalton-20260301-090000"]);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 6, "{text}");
    assert!(lines[1].contains("status     pending -> dispatched (Dispatched to worker)"), "{text}");
    assert!(lines[3].contains("progress   Walked the tree; twelve so far."), "{text}");
    assert!(lines[5].contains("status     in_progress -> completed (Execution completed)"), "{text}");
    let tl = p.timeline("commission-Dalton-20260301-090000");
    assert_eq!(kinds(&tl), ["created", "status", "status", "progress", "result", "status"]);
    assert_eq!(transitions(&tl), ["pending>dispatched", "dispatched>in_progress", "in_progress>completed"]);
    assert_eq!(tl[0]["ts"], "2026-03-01T09:00:00.120Z");
    // Meetings: `meeting_log:` is their timeline; a deferred request says until when.
    let m = p.ok(&["timeline", "audience-Octavia-20260310-100000"]);
    assert!(m.contains("entry      requested: Celeste asked about the doors") && m.contains("entry      declined: User declined"), "{m}");
    let list = p.ok(&["meeting", "list"]);
    assert!(list.contains("deferred until 2026-03-12; requested: Review the lantern count"), "{list}");
    for status in ["closed", "requested", "declined"] {
        assert!(list.contains(status), "{list}");
    }
    // Read, nothing written: the files are as copied.
    p.ok(&["status"]);
    for id in ["commission-Dalton-20260301-090000", PENDING] {
        assert_eq!(p.artifact(id), fixture(id));
    }
}

/// The worker the pending commission names (`Dalton`), as a scripted package.
const LIGHTER: &str = r#""$GUILD_HALL_BIN" toolbox report-progress "lit the first lantern"
printf 'lamp-a\nlamp-b\n' > lit.txt
"$GUILD_HALL_BIN" toolbox submit-result --summary "Lit both lanterns." --artifact lit.txt"#;

/// What the run leaves in the file: Guild Hall's keys in its order, none of ours; its log in its
/// form; the result as the body; every line it did not change byte for byte.
fn in_guild_halls_shape(before: &str, after: &str, log: &[&str], progress: &str, body: &str) {
    assert_eq!(
        keys(after),
        [
            "title",
            "date",
            "status",
            "source",
            "tags",
            "worker",
            "workerDisplayTitle",
            "prompt",
            "dependencies",
            "linked_artifacts",
            "resource_overrides",
            "activity_timeline",
            "current_progress",
            "projectName"
        ],
        "{after}"
    );
    assert!(after.contains("\nstatus: completed\n"), "Guild Hall reads `^status: (\\S+)$`: {after}");
    assert!(after.contains(&format!("\ncurrent_progress: \"{progress}\"\n")), "{after}");
    assert!(after.contains("\nlinked_artifacts:\n  - lit.txt\n"), "{after}");
    assert_eq!(log_events(after), log, "{after}");
    assert!(after.ends_with(&format!("\n---\n{body}\n")), "the result is the body: {after}");
    untouched_lines_kept(before, after, &["status:", "linked_artifacts:", "current_progress:"]);
}

#[test]
fn a_pending_guild_hall_commission_runs_and_keeps_its_shape() {
    let p = Project::new(&[]);
    p.script_worker("Dalton", "full", LIGHTER);
    copy_lore(&p, Some(&[PENDING, ABANDONED]));
    let before = p.artifact(PENDING);
    p.settle();
    assert_eq!(p.status(PENDING), "completed", "{}", p.artifact(PENDING));
    assert_eq!(git(&p.root, &["show", "claude/main:lit.txt"]), "lamp-a\nlamp-b\n");
    let after = p.artifact(PENDING);
    in_guild_halls_shape(
        &before,
        &after,
        &["created", "status_dispatched", "status_in_progress", "progress_report", "result_submitted", "status_completed"],
        "lit the first lantern",
        "Lit both lanterns.",
    );
    // What has no place in the dialect is kept in the state dir, not the file.
    let kept: Value =
        serde_json::from_str(&std::fs::read_to_string(p.state_dir(PENDING).join("artifact-keys.json")).expect("kept")).expect("json");
    assert_eq!(kept["attempt"], 1);
    assert_eq!(kept["branch"], format!("claude/commission/{PENDING}"));
    assert_eq!(kept["result"]["summary"], "Lit both lanterns.");
    // Settled: another pass writes nothing; the status and timeline read it back.
    assert_eq!(p.ok(&["reconcile", "--once"]).trim(), "nothing to do");
    assert_eq!(p.artifact(PENDING), after);
    let s = p.status_json(PENDING);
    assert_eq!((s["attempt"].as_u64(), s["result"]["summary"].as_str()), (Some(1), Some("Lit both lanterns.")), "{s}");
    let tl = p.timeline(PENDING);
    assert_eq!(transitions(&tl), ["pending>dispatched", "dispatched>in_progress", "in_progress>completed"], "{tl:?}");
    assert!(p.ok(&["check"]).starts_with("ok:"));
}

/// `resource_overrides.model` is the model the worker runs (`GUILD_HALL_MODEL`, which the
/// agent packages pass their CLI), over its package's `resources.model`; our `resources.model`
/// the same; without either, the package's.
#[test]
fn the_model_a_commission_names_is_the_model_its_worker_runs() {
    let p = Project::new(&[]);
    p.script_worker("Dalton", "sparse", r#""$GUILD_HALL_BIN" toolbox submit-result --summary "model: ${GUILD_HALL_MODEL:-none}""#);
    let yaml = p.root.join(".lore/workers/Dalton/worker.yaml");
    let manifest = std::fs::read_to_string(&yaml).expect("worker.yaml");
    std::fs::write(&yaml, format!("{manifest}resources: {{model: haiku}}\n")).expect("write");
    let theirs = |model: &str| {
        format!(
            "---\ntitle: \"Say the model\"\ndate: 2026-11-28\nstatus: pending\ntags: [commission]\nworker: Dalton\nprompt: \"Say the model.\"\ndependencies: []\n{model}activity_timeline:\n  - timestamp: 2026-11-28T09:00:00.000Z\n    event: created\n    reason: \"Commission created\"\n---\n"
        )
    };
    p.write_commission("commission-Dalton-20261128-090000", &theirs("resource_overrides:\n  maxTurns: 5\n  model: opus\n"));
    p.write_commission("commission-Dalton-20261128-090001", &theirs(""));
    p.write_commission("ours", "---\nworker: Dalton\nresources: {model: sonnet}\n---\nSay the model.\n");
    assert!(p.ok(&["check"]).starts_with("ok:"));
    p.settle();
    for (id, model) in [("commission-Dalton-20261128-090000", "opus"), ("commission-Dalton-20261128-090001", "haiku"), ("ours", "sonnet")] {
        let s = p.status_json(id);
        assert_eq!(
            (s["status"].as_str(), s["result"]["summary"].as_str()),
            (Some("completed"), Some(&*format!("model: {model}"))),
            "{id}: {s}"
        );
    }
    assert!(
        p.artifact("commission-Dalton-20261128-090000").contains("resource_overrides:\n  maxTurns: 5\n  model: opus\n"),
        "kept as written"
    );
}

#[test]
fn a_pending_guild_hall_commission_runs_through_the_real_claude_code_cli() {
    use crate::worker::claude_code::{install_package, real_claude, real_run, FakeApi};
    let claude = real_claude();
    let p = Project::new(&[]);
    install_package(&p, "claude-code");
    copy_lore(&p, Some(&[PENDING, ABANDONED]));
    // Its worker mapped to an installed package by an ordinary package name.
    let path = p.artifact_path(PENDING);
    let before = p.artifact(PENDING).replace("worker: Dalton\n", "worker: claude-code\n");
    std::fs::write(&path, &before).expect("write");
    let api = FakeApi::start(
        p.tmp.path(),
        &serde_json::json!([
            {"tool_use": {"name": "mcp__guild-hall__report_progress", "input": {"text": "lit the first lantern"}}},
            {"tool_use": {"name": "mcp__guild-hall__write_artifact", "input": {"path": ".lore/notes/lit.md", "content": "lamp-a\nlamp-b\n"}}},
            {"tool_use": {"name": "mcp__guild-hall__submit_result", "input": {"summary": "Lit both lanterns.", "artifacts": [".lore/notes/lit.md"]}}},
            {"text": "Done."}
        ]),
    );
    plant_person_agent_homes(&p);
    let out = real_run(&p, &api, &claude);
    assert!(out.status.success(), "{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(p.status(PENDING), "completed", "{}", p.ok(&["logs", PENDING]));
    assert_eq!(git(&p.root, &["show", "claude/main:.lore/notes/lit.md"]), "lamp-a\nlamp-b\n");
    // The prompt the agent was given is the file's `prompt:`.
    assert!(api.tool_results().contains("Light every lantern listed in"), "the prompt reached the model");
    let after = p.artifact(PENDING);
    assert!(after.contains("\nlinked_artifacts:\n  - .lore/notes/lit.md\n"), "{after}");
    let events = log_events(&after);
    assert_eq!(events.first().map(String::as_str), Some("created"));
    assert_eq!(events.last().map(String::as_str), Some("status_completed"), "{after}");
    for e in ["status_dispatched", "status_in_progress", "progress_report", "result_submitted"] {
        assert!(events.iter().any(|x| x == e), "{e} in {events:?}");
    }
    assert!(after.ends_with("\n---\nLit both lanterns.\n"), "{after}");
    untouched_lines_kept(&before, &after, &["status:", "linked_artifacts:", "current_progress:"]);
    for ours in ["\nresult:", "\nreason:", "\ntimeline:", "\nattempt:", "\nbranch:", "\nprogress:"] {
        assert!(!after.contains(ours), "{ours} written into a Guild Hall file: {after}");
    }
}

#[test]
fn ids_of_either_case_and_case_only_duplicates_refused_by_name() {
    let p = Project::new(&["scribe"]);
    let task = "---\nworker: scribe\n---\noutput: .lore/reports/{}.md\nWrite it.\n";
    for id in ["commission-Dalton-1", "commission-dalton-1", "Report-A"] {
        p.write_commission(id, &task.replace("{}", id));
    }
    let (code, out, _) = p.run(&["check"]);
    assert_eq!(code, 1, "{out}");
    for id in ["commission-Dalton-1", "commission-dalton-1"] {
        let line = out.lines().find(|l| l.contains(&format!("{id}.md:1:1:"))).unwrap_or_else(|| panic!("{id} in\n{out}"));
        assert!(
            line.contains("commission-Dalton-1.md") && line.contains("commission-dalton-1.md") && line.contains("differ only in case"),
            "both files named: {line}"
        );
    }
    // The rest go on: the mixed-case id runs, on a branch of its own name.
    let (code, _, err) = p.run(&["reconcile", "--once", "--wait", "--timeout", "120s"]);
    assert_eq!(code, 1, "the clash is reported: {err}");
    assert_eq!(p.status("Report-A"), "completed");
    assert!(p.branches().iter().any(|b| b == "claude/commission/Report-A"), "{:?}", p.branches());
    for id in ["commission-Dalton-1", "commission-dalton-1"] {
        assert!(!p.root.join(format!(".lore/commissions/{id}.timeline.jsonl")).exists(), "{id} was acted on");
    }
    // An id that differs only in case from one in use is taken.
    let (code, _, err) = p.run(&["commission", "create", "--worker", "scribe", "--title", "T", "--prompt", "x", "--id", "report-a"]);
    assert_eq!(code, 1);
    assert!(err.contains("report-a is taken") && err.contains("Report-A"), "{err}");
}

#[test]
fn abandon_ends_a_commission_for_good_and_satisfies_a_dependency_on_it() {
    let p = Project::new(&["scribe"]);
    // `survey` waits for a worker nobody installed; `summary` waits for `survey`.
    p.write_commission("survey", "---\nworker: nobody\n---\nSurvey it.\n");
    p.write_commission(
        "summary",
        "---\nworker: scribe\ndependencies: [.lore/commissions/survey.md]\n---\noutput: .lore/reports/summary.md\nSum up.\n",
    );
    p.ok(&["reconcile", "--once"]);
    assert_eq!((p.status("survey").as_str(), p.status("summary").as_str()), ("blocked", "blocked"));
    let said: Value = serde_json::from_str(&p.ok(&["commission", "abandon", "survey", "-m", "out of scope", "--json"])).expect("json");
    assert_eq!(said["wrote"], serde_json::json!({"desired": "abandoned", "feedback": [{"text": "out of scope"}]}));
    p.settle();
    let s = p.status_json("survey");
    assert_eq!((s["status"].as_str(), s["reason"].as_str()), (Some("abandoned"), Some("abandoned: out of scope")), "{s}");
    assert!(!p.artifact("survey").contains("desired:") && !p.artifact("survey").contains("feedback:"));
    assert_eq!(p.status("summary"), "completed", "an abandoned dependency is satisfied");
    assert!(transitions(&p.timeline("survey")).contains(&"blocked>abandoned".to_string()));
    // Terminal: nothing moves it; a request is refused up front, nothing written.
    let before = p.artifact("survey");
    for args in
        [vec!["commission", "abandon", "survey"], vec!["commission", "dispatch", "survey"], vec!["commission", "redispatch", "survey"]]
    {
        let (code, _, err) = p.run(&args);
        assert_eq!(code, 1, "{args:?}: {err}");
    }
    let (_, _, err) = p.run(&["commission", "abandon", "summary"]);
    assert!(err.contains("summary is completed") && err.contains("nothing written"), "{err}");
    assert_eq!(p.artifact("survey"), before);
    std::fs::write(p.artifact_path("survey"), before.replace("status: abandoned", "status: pending")).expect("edit");
    p.settle();
    let s = p.status_json("survey");
    assert_eq!(s["status"], "abandoned", "{s}");
    assert!(s["refused"].as_str().is_some_and(|r| r.contains("an abandoned commission is final")), "{s}");
    // The board and the dispatcher's catalogue (JSON-RPC, MCP) through the same operation.
    p.write_commission("later", "---\nworker: nobody\n---\nLater.\n");
    let r = p.manager_call("abandon", serde_json::json!({"jobId": "later", "message": "not now"}));
    assert_eq!(r["structuredContent"], serde_json::json!({"jobId": "later", "requested": "abandoned"}), "{r}");
    // (The dispatcher starts a pass of its own: waited for.)
    p.ok(&["reconcile", "--once", "--wait", "--wait-lock", "--timeout", "120s"]);
    assert_eq!(p.status("later"), "abandoned");
    assert_eq!(p.manager_call("status", serde_json::json!({"jobId": "later"}))["structuredContent"]["status"], "cancelled");
    let r = p.manager_call("abandon", serde_json::json!({"jobId": "summary"}));
    assert_eq!(r["isError"], true, "{r}");
}

/// The dialect's `abandoned` as Guild Hall writes it: a log entry in its form.
#[test]
fn abandoning_a_guild_hall_commission_logs_it_in_its_form() {
    let p = Project::new(&[]);
    copy_lore(&p, Some(&["commission-Celeste-20260308-090000", "commission-Dalton-20260302-090000"]));
    let before = p.artifact("commission-Celeste-20260308-090000");
    p.ok(&["commission", "abandon", "commission-Celeste-20260308-090000", "-m", "the brass stays dull"]);
    p.ok(&["reconcile", "--once"]);
    let after = p.artifact("commission-Celeste-20260308-090000");
    let events = log_events(&after);
    assert_eq!(events, ["created", "status_blocked", "status_abandoned"], "{after}");
    assert!(
        after.contains(
            "    event: status_abandoned\n    reason: \"abandoned: the brass stays dull\"\n    from: \"blocked\"\n    to: \"abandoned\"\n"
        ),
        "{after}"
    );
    assert!(after.contains("\nstatus: abandoned\n"));
    untouched_lines_kept(&before, &after, &["status:"]);
}
