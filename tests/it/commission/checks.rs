//! Checks as proof of work (`checks:`, `max_revisions:`): run confined in the worktree after
//! submit, their results in the artifact (`check_results:`) and the timeline; a failing one
//! sends the work back on the same branch with the command and its output's tail, at most
//! `max_revisions` times, then fails it (`review: auto`) or shows it in review (`required`);
//! a pass stopped dead between the check's end and the send-back converges.

use crate::common::*;

/// A worker that leaves its prompt in `seen-<attempt>.txt`, adds a line to `work.txt`, makes
/// `good` from its second attempt on, and submits.
const FIXER: &str = r#"cp "$GUILD_HALL_PROMPT_FILE" "seen-$GUILD_HALL_ATTEMPT.txt"
echo "attempt $GUILD_HALL_ATTEMPT" >> work.txt
if [ "$GUILD_HALL_ATTEMPT" -gt 1 ]; then echo fixed > good; fi
"$GUILD_HALL_BIN" toolbox submit-result --summary "did attempt $GUILD_HALL_ATTEMPT""#;

/// A check that passes only once the work holds `good`, saying why not when it fails.
const NEEDS_GOOD: &str = r#"[sh, -c, "echo running the suite; test -f good || { echo 'assertion failed: good is missing'; exit 3; }"]"#;

fn project() -> Project {
    let p = Project::new(&[]);
    p.script_worker("fixer", "full", FIXER);
    p
}

fn commission(p: &Project, id: &str, extra: &str) {
    p.write_commission(id, &format!("---\ntitle: Do the work\nworker: fixer\n{extra}---\nDo the work.\n"));
}

fn kinds_of<'a>(tl: &'a [serde_json::Value], kind: &str) -> Vec<&'a serde_json::Value> {
    tl.iter().filter(|e| e["kind"] == kind).collect()
}

#[test]
fn a_passing_check_merges_and_its_result_is_in_the_artifact_and_the_timeline() {
    let p = project();
    p.config("checks: [[sh, -c, \"test -f work.txt && echo suite ok\"]]\n");
    commission(&p, "job", "");
    p.settle();
    assert_eq!(p.status("job"), "completed", "{}", p.artifact("job"));
    let text = p.artifact("job");
    assert!(text.contains("check_results:") && text.contains("command: 'sh -c test -f work.txt && echo suite ok'"), "{text}");
    assert!(text.contains("passed: true"), "{text}");
    assert_eq!(p.status_json("job")["attempt"], 1);
    let tl = p.timeline("job");
    let checks = kinds_of(&tl, "check");
    assert_eq!(checks.len(), 1, "{tl:?}");
    assert_eq!(checks[0]["passed"], true);
    assert_eq!(checks[0]["exit"], 0);
    // The check's output is in the attempt's log, after a line naming it.
    let log = p.ok(&["logs", "job"]);
    assert!(log.contains("[guild-hall] check: sh -c test -f work.txt && echo suite ok") && log.contains("suite ok"), "{log}");
}

#[test]
fn with_review_required_a_passing_check_waits_in_review_with_its_results() {
    let p = project();
    commission(&p, "job", "review: required\nchecks: [[sh, -c, \"exit 0\"]]\n");
    p.settle();
    assert_eq!(p.status("job"), "review", "{}", p.artifact("job"));
    let text = p.artifact("job");
    assert!(text.contains("check_results:") && text.contains("passed: true") && text.contains("did attempt 1"), "{text}");
    assert!(git(&p.root, &["show", "claude/commission/job:work.txt"]).contains("attempt 1"));
}

#[test]
fn a_failing_check_sends_the_work_back_with_the_command_and_its_tail_and_the_fix_merges() {
    let p = project();
    commission(&p, "job", &format!("checks: [{NEEDS_GOOD}]\n"));
    p.settle();
    assert_eq!(p.status("job"), "completed", "{}", p.artifact("job"));
    let s = p.status_json("job");
    assert_eq!(s["attempt"], 2, "{s}");
    // Attempt 2 continued attempt 1's work on the same branch, told the command and its tail.
    assert_eq!(git(&p.root, &["show", "claude/main:work.txt"]), "attempt 1\nattempt 2\n");
    let seen = git(&p.root, &["show", "claude/main:seen-2.txt"]);
    assert!(seen.contains("Feedback on attempt 1"), "{seen}");
    assert!(seen.contains("test -f good") && seen.contains("exit code 3") && seen.contains("assertion failed: good is missing"), "{seen}");
    assert!(trailers(&p).contains("Guild-Hall-Commission: job attempt 2"), "{}", trailers(&p));
    assert!(!p.branches().iter().any(|b| b == "claude/commission/job+2"), "{:?}", p.branches());
    // The check's results: attempt 2's in the artifact, both in the timeline.
    let text = p.artifact("job");
    assert!(text.contains("passed: true") && !text.contains("passed: false"), "{text}");
    let tl = p.timeline("job");
    let checks = kinds_of(&tl, "check");
    assert_eq!(checks.iter().map(|c| c["passed"].as_bool()).collect::<Vec<_>>(), [Some(false), Some(true)], "{tl:?}");
    let revise = kinds_of(&tl, "revise");
    assert_eq!(revise.len(), 1, "{tl:?}");
    assert_eq!(revise[0]["from"], "check");
    // Held in review only to be sent back: the event says no person is needed (no `review`
    // notification), where a hold for a person says nothing of it.
    let held: Vec<_> = kinds_of(&tl, "status").into_iter().filter(|e| e["to"] == "review").collect();
    assert_eq!(held.len(), 1, "{tl:?}");
    assert_eq!(held[0]["needs_you"], false, "{tl:?}");
}

#[test]
fn failing_every_time_fails_after_max_revisions() {
    let p = project();
    p.config("max_revisions: 1\n");
    commission(&p, "job", "checks: [[sh, -c, \"echo never; exit 1\"]]\n");
    p.settle();
    let s = p.status_json("job");
    assert_eq!(s["status"], "failed", "{s}");
    assert_eq!(s["attempt"], 2, "one automatic revision, then failed: {s}");
    let reason = s["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("the check `sh -c echo never; exit 1` failed (exit code 1) after 1 automatic revision"), "{reason}");
    // The work is kept on its branch; nothing merged.
    assert!(git(&p.root, &["show", "claude/commission/job:work.txt"]).contains("attempt 2"));
    assert!(std::process::Command::new("git")
        .args(["cat-file", "-e", "claude/main:work.txt"])
        .current_dir(&p.root)
        .status()
        .is_ok_and(|s| !s.success()));
    assert!(p.artifact("job").contains("passed: false"));
}

#[test]
fn failing_every_time_with_review_required_waits_for_a_person_showing_the_failure() {
    let p = project();
    commission(&p, "job", "review: required\nmax_revisions: 0\nchecks: [[sh, -c, \"echo broken >&2; exit 5\"]]\n");
    p.settle();
    let s = p.status_json("job");
    assert_eq!(s["status"], "review", "{s}");
    assert_eq!(s["attempt"], 1, "{s}");
    let reason = s["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("failed (exit code 5)") && reason.contains("needs you") && reason.contains("guild-hall approve job"),
        "{reason}"
    );
    let text = p.artifact("job");
    assert!(text.contains("passed: false") && text.contains("tail: broken"), "{text}");
    // Settled: nothing more happens until a person answers; approving merges as it stands.
    assert_eq!(p.ok(&["reconcile", "--once"]).trim(), "nothing to do");
    p.ok(&["approve", "job"]);
    p.settle();
    assert_eq!(p.status("job"), "completed");
}

#[test]
fn a_check_is_confined_like_the_worker() {
    let p = project();
    let outside = p.user_home().join("check-escaped.txt");
    p.config(&format!("checks: [[sh, -c, \"echo x > {} || echo refused; echo inside > check-wrote.txt\"]]\n", outside.display()));
    commission(&p, "job", "");
    p.settle();
    assert_eq!(p.status("job"), "completed", "{}", p.artifact("job"));
    assert!(!outside.exists(), "a check wrote outside the worktree");
    let log = p.ok(&["logs", "job"]);
    assert!(log.contains("refused"), "{log}");
    // What it wrote in the worktree is part of the work, like the worker's.
    assert_eq!(git(&p.root, &["show", "claude/main:check-wrote.txt"]), "inside\n");
}

/// The pass that holds a failed check's work stopped dead at each step of it (after the commit
/// on the branch, after the update): the next passes converge on one revision, the check's
/// result kept.
#[test]
fn a_pass_stopped_between_the_checks_end_and_the_send_back_converges() {
    for fault in ["hold:1", "hold:2"] {
        let p = project();
        commission(&p, "job", &format!("checks: [{NEEDS_GOOD}]\n"));
        p.pass_until_fault(fault);
        p.settle();
        assert_eq!(p.status("job"), "completed", "{fault}: {}", p.artifact("job"));
        assert_eq!(p.status_json("job")["attempt"], 2, "{fault}");
        let tl = p.timeline("job");
        assert_eq!(kinds_of(&tl, "revise").len(), 1, "{fault}: revised once: {tl:?}");
        let checks = kinds_of(&tl, "check");
        assert_eq!(checks.iter().map(|c| c["passed"].as_bool()).collect::<Vec<_>>(), [Some(false), Some(true)], "{fault}: {tl:?}");
        let seen = git(&p.root, &["show", "claude/main:seen-2.txt"]);
        assert!(seen.contains("assertion failed: good is missing"), "{fault}: {seen}");
    }
}

#[test]
fn the_projects_the_packages_and_the_commissions_checks_run_in_that_order() {
    let p = project();
    p.config("checks: [[sh, -c, \"echo from-project\"]]\n");
    let yaml = p.root.join(".lore/workers/fixer/worker.yaml");
    let mut manifest = std::fs::read_to_string(&yaml).expect("worker.yaml");
    manifest.push_str("checks: [[sh, -c, \"echo from-package\"]]\n");
    std::fs::write(&yaml, manifest).expect("worker.yaml");
    commission(&p, "job", "checks: [[sh, -c, \"echo from-commission\"]]\n");
    p.settle();
    assert_eq!(p.status("job"), "completed", "{}", p.artifact("job"));
    let log = p.ok(&["logs", "job"]);
    let at = |what: &str| log.find(&format!("[guild-hall] check: sh -c echo {what}")).unwrap_or_else(|| panic!("{what}: {log}"));
    assert!(at("from-project") < at("from-package") && at("from-package") < at("from-commission"), "{log}");
    let checks = kinds_of(&p.timeline("job"), "check").len();
    assert_eq!(checks, 3);
}

#[test]
fn a_persons_revise_does_not_reset_the_automatic_count() {
    let p = project();
    commission(&p, "job", "review: required\nmax_revisions: 1\nchecks: [[sh, -c, \"echo still broken; exit 1\"]]\n");
    p.settle();
    // Attempt 1 failed its check and was sent back once; attempt 2 failed too: a person decides.
    let s = p.status_json("job");
    assert_eq!((s["status"].as_str(), s["attempt"].as_u64()), (Some("review"), Some(2)), "{s}");
    p.ok(&["revise", "job", "-m", "try another way"]);
    p.settle();
    // Attempt 3 (the person's) failed its check: no automatic send-back is left.
    let s = p.status_json("job");
    assert_eq!((s["status"].as_str(), s["attempt"].as_u64()), (Some("review"), Some(3)), "{s}");
    let froms: Vec<String> = kinds_of(&p.timeline("job"), "revise").iter().map(|r| r["from"].as_str().unwrap_or("").to_string()).collect();
    assert_eq!(froms, ["check", "person"]);
}
