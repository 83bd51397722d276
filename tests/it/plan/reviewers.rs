//! A plan's REVIEW stage: after the verify of its last wave, its reviewer workers (`reviewers:`)
//! run read-only over its integrated result; `changes` takes the fix-forward path (a
//! fix-forward commission carrying the comments, then verify and the reviewers again); a
//! cancel or a time limit stops them; a pass killed in the stage converges.

use super::fixtures::show;
use crate::common::*;

/// A reviewer that approves the integrated result once it holds `fixed.txt`, else asks for it.
const PICKY: &str = r#"if [ -f fixed.txt ]; then
  "$GUILD_HALL_BIN" toolbox submit-result --verdict approve --summary "fixed is there"
else
  "$GUILD_HALL_BIN" toolbox submit-result --verdict changes --comment "one.txt:1 add fixed.txt beside it" --summary "not fixed"
fi"#;

/// A fixer that makes `fixed.txt`.
const FIXER: &str = r#"echo yes > fixed.txt
"$GUILD_HALL_BIN" toolbox submit-result --summary "fixed""#;

fn plan(p: &Project, id: &str) {
    let dir = p.root.join(".lore/plans");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let text = format!(
        "---\ntitle: {id}\nverify: [\"true\"]\nfixer: fixer\nreviewers: [picky]\nwaves:\n  - - {{id: one, worker: mason, prompt: \"write: one.txt 1\"}}\n---\n"
    );
    std::fs::write(dir.join(format!("{id}.md")), text).expect("write plan");
}

fn verdicts(v: &serde_json::Value) -> Vec<(u64, String)> {
    v["log"]
        .as_array()
        .expect("log")
        .iter()
        .filter(|e| e["kind"] == "review_verdict")
        .map(|e| (e["round"].as_u64().unwrap_or(0), e["verdict"].as_str().unwrap_or("").to_string()))
        .collect()
}

#[test]
fn the_reviewers_approving_complete_the_plan() {
    let p = Project::new(&["mason"]);
    p.script_worker("fixer", "full", FIXER);
    p.script_worker("picky", "full", r#""$GUILD_HALL_BIN" toolbox submit-result --verdict approve --summary "all good""#);
    plan(&p, "pr");
    p.settle();
    let v = show(&p, "pr");
    assert_eq!(v["status"], "completed", "{v}");
    assert_eq!(verdicts(&v), [(1, "approve".to_string())], "{v}");
    assert!(!p.root.join(".lore/commissions/pr-fix-wave-1-1.md").exists());
}

#[test]
fn changes_take_the_fix_forward_path_then_verify_and_the_reviewers_run_again() {
    let p = Project::new(&["mason"]);
    p.script_worker("fixer", "full", FIXER);
    p.script_worker("picky", "full", PICKY);
    plan(&p, "pr");
    p.settle();
    let v = show(&p, "pr");
    assert_eq!(v["status"], "completed", "{v}");
    // Round 1 (after verify run 1) asked for changes; the fix merged, verify ran again, round 2
    // approved.
    assert_eq!(verdicts(&v), [(1, "changes".to_string()), (2, "approve".to_string())], "{v}");
    let fix = std::fs::read_to_string(p.root.join(".lore/commissions/pr-fix-wave-1-1.md")).expect("fix-forward commission");
    assert!(fix.contains("worker: fixer") && fix.contains("one.txt:1: add fixed.txt beside it"), "it carries the comments: {fix}");
    assert_eq!(git(&p.root, &["show", "claude/main:fixed.txt"]), "yes\n");
    assert!(!git(&p.root, &["worktree", "list"]).contains("review-plan-pr"), "{}", git(&p.root, &["worktree", "list"]));
}

/// A reviewer's run dir (`review-<round>-<n>` in the plan's state dir), once it exists.
fn review_dir(p: &Project, id: &str, round: u32, index: usize) -> Option<std::path::PathBuf> {
    std::fs::read_dir(p.home.join("state"))
        .ok()?
        .flatten()
        .map(|project| project.path().join("plans").join(id).join(format!("review-{round}-{index}")))
        .find(|d| d.is_dir())
}

/// The reviewer `picky`'s package with `timeout:` set.
fn with_timeout(p: &Project, timeout: &str) {
    let yaml = p.root.join(".lore/workers/picky/worker.yaml");
    let mut manifest = std::fs::read_to_string(&yaml).expect("worker.yaml");
    manifest.push_str(&format!("timeout: {timeout}\n"));
    std::fs::write(&yaml, manifest).expect("worker.yaml");
}

#[test]
fn cancelling_the_plan_while_a_reviewer_works_stops_it_and_removes_its_checkout() {
    let p = Project::new(&["mason"]);
    p.script_worker("fixer", "full", FIXER);
    p.script_worker("picky", "full", "sleep 600");
    plan(&p, "pr");
    wait_for("the reviewer at work", || {
        p.ok(&["reconcile", "--once"]);
        review_dir(&p, "pr", 1, 0).is_some_and(|d| d.join("run.json").is_file())
    });
    assert_eq!(show(&p, "pr")["status"], "verifying");
    p.ok(&["plan", "cancel", "pr"]);
    p.settle();
    let v = show(&p, "pr");
    assert_eq!(v["status"], "cancelled", "{v}");
    let dir = review_dir(&p, "pr", 1, 0).expect("its run dir");
    // Its process is gone: its shim recorded how it ended (killed, not by itself in 600s).
    wait_for("the reviewer's end recorded", || dir.join("exit.json").is_file());
    let left: Vec<_> = std::fs::read_dir(&dir).expect("run dir").flatten().filter(|e| e.path().is_dir()).map(|e| e.file_name()).collect();
    assert!(!left.iter().any(|n| n.to_string_lossy().starts_with("review-plan-")), "its checkout is removed: {left:?}");
    assert!(!git(&p.root, &["worktree", "list"]).contains("review-plan-pr"), "{}", git(&p.root, &["worktree", "list"]));
    assert!(verdicts(&v).is_empty(), "no verdict is recorded for a cancelled plan: {v}");
}

#[test]
fn a_reviewer_past_its_time_limit_is_stopped_and_the_plan_halts_saying_so() {
    let p = Project::new(&["mason"]);
    p.script_worker("fixer", "full", FIXER);
    p.script_worker("picky", "full", "sleep 600");
    with_timeout(&p, "2s");
    plan(&p, "pr");
    p.settle();
    let v = show(&p, "pr");
    assert_eq!(v["status"], "halted", "{v}");
    let reason = v["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("reviewer picky gave no verdict (stopped past its time limit"), "{v}");
    let log = v["log"].as_array().expect("log");
    let timeouts: Vec<_> = log.iter().filter(|e| e["kind"] == "timeout").collect();
    assert!(timeouts.iter().any(|e| e["text"].as_str().unwrap_or_default().contains("reviewer picky: timed out")), "{v}");
    assert_eq!(verdicts(&v), [(1, "none".to_string())], "{v}");
    assert!(!git(&p.root, &["worktree", "list"]).contains("review-plan-pr"), "{}", git(&p.root, &["worktree", "list"]));
    // No fix-forward: the fixer cannot fix a reviewer's failure.
    assert!(!p.root.join(".lore/commissions/pr-fix-wave-1-1.md").exists());
}

/// How the plan `pr` converged after a pass stopped or killed in its REVIEW stage: completed,
/// one fix-forward commission (not two), each round's verdict recorded once.
fn converged(p: &Project, when: &str) {
    let v = show(p, "pr");
    assert_eq!(v["status"], "completed", "{when}: {v}");
    assert_eq!(verdicts(&v), [(1, "changes".to_string()), (2, "approve".to_string())], "{when}: {v}");
    let fixes: Vec<_> = std::fs::read_dir(p.root.join(".lore/commissions"))
        .expect("commissions")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("pr-fix-") && n.ends_with(".md"))
        .collect();
    assert_eq!(fixes, ["pr-fix-wave-1-1.md"], "{when}");
    let fix = std::fs::read_to_string(p.root.join(".lore/commissions/pr-fix-wave-1-1.md")).expect("fix-forward commission");
    assert!(fix.contains("one.txt:1: add fixed.txt beside it"), "{when}: it carries the comments: {fix}");
    assert_eq!(git(&p.root, &["show", "claude/main:fixed.txt"]), "yes\n", "{when}");
    assert!(!git(&p.root, &["worktree", "list"]).contains("review-plan-pr"), "{when}: {}", git(&p.root, &["worktree", "list"]));
}

/// A pass stopped at the plan's fault points in its REVIEW stage (after a reviewer's checkout
/// and prompt, before its start; after the fix-forward commission is written, before the plan
/// records it): the next passes converge.
#[test]
fn a_pass_stopped_in_the_review_stage_converges() {
    for fault in ["review:2", "fix-forward:1"] {
        let p = Project::new(&["mason"]);
        p.script_worker("fixer", "full", FIXER);
        p.script_worker("picky", "full", PICKY);
        plan(&p, "pr");
        p.pass_until_fault(fault);
        p.settle();
        converged(&p, fault);
    }
}

/// kill -9 of the reconciler at moments after a reviewer's verdict is in, before and while the
/// pass acts on it: the next passes converge on one fix-forward, each verdict recorded once.
#[test]
fn a_reconciler_killed_after_a_plan_reviewers_verdict_converges() {
    for delay in ["0", "0.05", "0.2"] {
        let p = Project::new(&["mason"]);
        p.script_worker("fixer", "full", FIXER);
        p.script_worker("picky", "full", PICKY);
        plan(&p, "pr");
        in_pid_namespace(
            &p,
            &format!(
                r#"verdict_in() {{ grep -qs '"verdict"' "$STATE"/*/plans/pr/review-1-0/events-1.jsonl && ls "$STATE"/*/plans/pr/review-1-0/exit.json >/dev/null 2>&1; }}
pass_until "the reviewer's verdict" verdict_in
"$GH" reconcile --once >/dev/null 2>&1 &
pid=$!
sleep {delay}
kill -9 $pid 2>/dev/null || true
wait $pid 2>/dev/null || true
"$GH" reconcile --once --wait --timeout 120s >/dev/null
"#
            ),
        );
        p.settle();
        converged(&p, delay);
    }
}

#[test]
fn plan_show_gives_the_reviewers_verdicts_in_text_and_json() {
    let p = Project::new(&["mason"]);
    p.script_worker("fixer", "full", FIXER);
    p.script_worker("picky", "full", PICKY);
    plan(&p, "pr");
    p.settle();
    let v = show(&p, "pr");
    let reviews = v["reviews"].as_array().expect("reviews").clone();
    let said: Vec<_> = reviews.iter().map(|r| (r["reviewer"].as_str(), r["round"].as_u64(), r["verdict"].as_str())).collect();
    assert_eq!(said, [(Some("picky"), Some(1), Some("changes")), (Some("picky"), Some(2), Some("approve"))], "{v}");
    assert_eq!(reviews[0]["comments"][0]["path"], "one.txt", "{v}");
    assert_eq!(reviews[0]["comments"][0]["line"], 1, "{v}");
    let text = p.ok(&["plan", "show", "pr"]);
    let block = text.split("\nreviews:\n").nth(1).expect("a reviews block").split("\n\n").next().unwrap_or_default();
    assert!(block.contains("picky on round 1: changes: not fixed"), "{text}");
    assert!(block.contains("    one.txt:1: add fixed.txt beside it"), "{text}");
    assert!(block.contains("picky on round 2: approve: fixed is there"), "{text}");
}

/// What a plan's reviewer reports using is a `usage` event on the plan, naming it and its
/// round, summed into the plan's `usage:` and seen by `guild-hall usage`.
#[test]
fn a_plan_reviewers_usage_is_recorded_on_the_plan() {
    let p = Project::new(&["mason"]);
    p.script_worker("fixer", "full", FIXER);
    p.script_worker(
        "picky",
        "full",
        r#""$GUILD_HALL_BIN" toolbox report-usage --input-tokens 300 --output-tokens 30 --usd 0.2
"$GUILD_HALL_BIN" toolbox submit-result --verdict approve --summary "all good""#,
    );
    plan(&p, "pr");
    p.settle();
    let v = show(&p, "pr");
    assert_eq!(v["status"], "completed", "{v}");
    let log = v["log"].as_array().expect("log");
    let usage: Vec<_> = log.iter().filter(|e| e["kind"] == "usage" && e["reviewer"] == "picky").collect();
    assert_eq!(usage.len(), 1, "{v}");
    assert_eq!((usage[0]["input_tokens"].as_u64(), usage[0]["round"].as_u64()), (Some(300), Some(1)), "{}", usage[0]);
    let text = std::fs::read_to_string(p.root.join(".lore/plans/pr.md")).expect("plan");
    assert!(text.contains("usage:") && text.contains("input_tokens: 300"), "{text}");
    let by_plan: serde_json::Value = serde_json::from_str(&p.ok(&["usage", "--by", "plan", "--json"])).expect("json");
    assert_eq!(by_plan["rows"][0]["key"], "pr", "{by_plan}");
    assert!(by_plan["rows"][0]["usage"]["input_tokens"].as_u64().is_some_and(|n| n >= 300), "{by_plan}");
}

/// A plan's reviewer is an attempt of its package: while a commission of the package runs
/// (`max_concurrent: 1`), the REVIEW stage waits, saying so, and the reviewer starts once the
/// commission's run has ended; the plan then completes.
#[test]
fn a_plan_reviewer_waits_while_its_package_is_at_max_concurrent() {
    let p = Project::new(&["mason"]);
    p.script_worker("fixer", "full", FIXER);
    p.script_worker(
        "picky",
        "full",
        r#"if [ -n "${GUILD_HALL_REVIEWER:-}" ]; then
  "$GUILD_HALL_BIN" toolbox submit-result --verdict approve --summary "all good"
else
  sleep 5
  echo long > long.txt
  "$GUILD_HALL_BIN" toolbox submit-result --summary "long work"
fi"#,
    );
    let yaml = p.root.join(".lore/workers/picky/worker.yaml");
    let text = std::fs::read_to_string(&yaml).expect("worker.yaml");
    std::fs::write(&yaml, format!("{text}max_concurrent: 1\n")).expect("write");
    p.write_commission("long", "---\ntitle: Long\nworker: picky\n---\nLong work.\n");
    p.pass_until("the package's commission to run", |p| p.status("long") == "in_progress");
    plan(&p, "pr");
    p.pass_until("the review to wait for the package, or the commission to end", |p| {
        let v = show(p, "pr");
        v["reason"].as_str().is_some_and(|r| r.contains("waits for its reviewer picky (1 of 1)")) || p.status("long") == "completed"
    });
    if p.status("long") != "completed" {
        // (On a loaded machine the commission may have ended before the plan got there.)
        let v = show(&p, "pr");
        assert!(v["reason"].as_str().is_some_and(|r| r.contains("max_concurrent: 1")), "{v}");
    }
    p.settle();
    let v = show(&p, "pr");
    assert_eq!(v["status"], "completed", "{v}");
    assert!(!v["reason"].as_str().unwrap_or_default().contains("waits for its reviewer"), "{v}");
    let json = |path: std::path::PathBuf| -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))).expect("json")
    };
    let time = |v: &serde_json::Value, key: &str| chrono::DateTime::parse_from_rfc3339(v[key].as_str().expect("time")).expect("rfc3339");
    let ended = time(&json(p.state_dir("long").join("exit.json")), "finished_at");
    let project_state = p.state_dir("long").parent().and_then(|d| d.parent()).expect("project state").to_path_buf();
    let started = time(&json(project_state.join("plans/pr/review-1-0/run.json")), "started_at");
    assert!(started >= ended, "the reviewer started at {started}, before the package's commission ended at {ended}");
}
