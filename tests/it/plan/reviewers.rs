//! A plan's REVIEW stage: after the verify of its last wave, its reviewer workers (`reviewers:`)
//! run read-only over its integrated result; `changes` takes the fix-forward path (a
//! fix-forward commission carrying the comments, then verify and the reviewers again).

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
