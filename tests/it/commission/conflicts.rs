//! Conflicts sent back: a squash merge that conflicts outside `.lore/` is an automatic revise —
//! the integration tip merged into the branch (a two-parent commit of guild-hall's, the markers
//! left in the files), the worker told the paths — at most `max_revisions` times, then failed;
//! a pass stopped dead between the conflict and the send-back converges.

use crate::common::*;

/// A worker that leaves its prompt in `seen-<attempt>.txt`; attempt 1 rewrites `shared.txt`,
/// a later one keeps what it found there in `found-<attempt>.txt` and resolves it.
const RESOLVER: &str = r#"cp "$GUILD_HALL_PROMPT_FILE" "seen-$GUILD_HALL_ATTEMPT.txt"
if [ "$GUILD_HALL_ATTEMPT" -gt 1 ]; then
  cp shared.txt "found-$GUILD_HALL_ATTEMPT.txt"
  echo resolved > shared.txt
else
  echo "the worker's line" > shared.txt
fi
"$GUILD_HALL_BIN" toolbox submit-result --summary "did attempt $GUILD_HALL_ATTEMPT""#;

/// A worker that writes `shared.txt` anew on every attempt (the markers gone, nothing kept).
const REWRITER: &str = r#"echo "attempt $GUILD_HALL_ATTEMPT" > shared.txt
"$GUILD_HALL_BIN" toolbox submit-result --summary "did attempt $GUILD_HALL_ATTEMPT""#;

fn project(script: &str) -> Project {
    let p = Project::new(&[]);
    p.script_worker("w", "full", script);
    p.commit_on_integration("shared.txt", "the first line\n", "a shared file");
    p.write_commission("job", "---\ntitle: Change the shared file\nworker: w\n---\nChange shared.txt.\n");
    p
}

fn kinds_of<'a>(tl: &'a [serde_json::Value], kind: &str) -> Vec<&'a serde_json::Value> {
    tl.iter().filter(|e| e["kind"] == kind).collect()
}

/// Passes until attempt `attempt`'s work is secured on its branch, just before its merge
/// (stopped dead there), then a person's commit to `shared.txt` on claude/main: its merge
/// will conflict.
fn conflict_before_the_merge_of(p: &Project, attempt: u64) {
    p.pass_until_fault("finish:1");
    assert_eq!(p.status_json("job")["attempt"].as_u64(), Some(attempt), "{}", p.artifact("job"));
    p.commit_on_integration("shared.txt", &format!("a person's line {attempt}\n"), "a person's change");
}

/// Passes until the revision `attempt`'s worktree is made (its branch holding claude/main as it
/// was then), stopped dead before its worker starts; then a person's commit to `shared.txt` on
/// claude/main: its merge will conflict again.
fn conflict_before_the_start_of(p: &Project, attempt: u64) {
    p.pass_until_fault("dispatch:3");
    assert_eq!(p.status_json("job")["attempt"].as_u64(), Some(attempt), "{}", p.artifact("job"));
    p.commit_on_integration("shared.txt", &format!("a person's line {attempt}\n"), "a person's change");
}

#[test]
fn a_conflict_is_sent_back_with_the_integration_branch_merged_in_and_the_resolution_merges() {
    let p = project(RESOLVER);
    conflict_before_the_merge_of(&p, 1);
    p.settle();
    let s = p.status_json("job");
    assert_eq!((s["status"].as_str(), s["attempt"].as_u64()), (Some("completed"), Some(2)), "{s}\n{}", p.artifact("job"));
    // Attempt 2 found the markers in the file and the paths in its prompt.
    let found = git(&p.root, &["show", "claude/main:found-2.txt"]);
    assert!(
        found.contains("<<<<<<<")
            && found.contains("the worker's line")
            && found.contains("a person's line 1")
            && found.contains(">>>>>>>"),
        "{found}"
    );
    let seen = git(&p.root, &["show", "claude/main:seen-2.txt"]);
    assert!(seen.contains("Feedback on attempt 1") && seen.contains("shared.txt: conflict markers to resolve"), "{seen}");
    assert!(seen.contains("conflicts with changes made on claude/main"), "{seen}");
    // Its resolution is what landed, over the person's change, in one squash commit.
    assert_eq!(git(&p.root, &["show", "claude/main:shared.txt"]), "resolved\n");
    assert!(trailers(&p).contains("Guild-Hall-Commission: job attempt 2"), "{}", trailers(&p));
    // guild-hall's two-parent merge is on the branch: its second parent the person's commit.
    let merges = git(&p.root, &["log", "--merges", "--format=%an %s", "claude/commission/job"]);
    assert!(merges.contains("guild-hall: merge claude/main into claude/commission/job"), "{merges}");
    // The timeline: the conflict with its paths, held only to be sent back (no person told).
    let tl = p.timeline("job");
    let conflict = kinds_of(&tl, "conflict");
    assert_eq!(conflict.len(), 1, "{tl:?}");
    assert_eq!(conflict[0]["paths"], serde_json::json!(["shared.txt"]));
    let revise = kinds_of(&tl, "revise");
    assert_eq!(revise.len(), 1, "{tl:?}");
    assert_eq!(revise[0]["from"], "conflict");
    let held: Vec<_> = kinds_of(&tl, "status").into_iter().filter(|e| e["to"] == "review").collect();
    assert_eq!(held.len(), 1, "{tl:?}");
    assert_eq!(held[0]["needs_you"], false, "{tl:?}");
}

#[test]
fn conflicting_every_time_fails_after_max_revisions_naming_the_paths() {
    let p = project(REWRITER);
    p.config("max_revisions: 1\n");
    conflict_before_the_merge_of(&p, 1);
    conflict_before_the_start_of(&p, 2);
    p.settle();
    let s = p.status_json("job");
    assert_eq!((s["status"].as_str(), s["attempt"].as_u64()), (Some("failed"), Some(2)), "{s}");
    let reason = s["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("merge conflict in: shared.txt") && reason.contains("after 1 automatic revision (max_revisions)"), "{reason}");
    // Nothing merged; the work kept on its branch; the person's line stands.
    assert_eq!(git(&p.root, &["show", "claude/main:shared.txt"]), "a person's line 2\n");
    assert_eq!(git(&p.root, &["show", "claude/commission/job:shared.txt"]), "attempt 2\n");
}

/// A pass stopped dead after the conflict is found (before the hold is written), and one
/// stopped between the merge-in and the worktree: the next passes converge on one send-back.
#[test]
fn a_pass_stopped_between_the_conflict_and_the_send_back_converges() {
    for fault in ["finish:4", "dispatch:2"] {
        let p = project(RESOLVER);
        conflict_before_the_merge_of(&p, 1);
        p.pass_until_fault(fault);
        p.settle();
        let s = p.status_json("job");
        assert_eq!((s["status"].as_str(), s["attempt"].as_u64()), (Some("completed"), Some(2)), "{fault}: {s}");
        assert_eq!(git(&p.root, &["show", "claude/main:shared.txt"]), "resolved\n", "{fault}");
        let found = git(&p.root, &["show", "claude/main:found-2.txt"]);
        assert!(found.contains("<<<<<<<"), "{fault}: {found}");
        let tl = p.timeline("job");
        assert_eq!(kinds_of(&tl, "revise").len(), 1, "{fault}: {tl:?}");
        let merges = git(&p.root, &["log", "--merges", "--format=%s", "claude/commission/job"]);
        assert_eq!(merges.lines().count(), 1, "{fault}: one merge-in: {merges}");
    }
}

/// A worker that rewrites `shared.txt` on its first attempt and only submits after that.
const LEAVES_MARKERS: &str = r#"if [ "$GUILD_HALL_ATTEMPT" -eq 1 ]; then echo "the worker's line" > shared.txt; fi
"$GUILD_HALL_BIN" toolbox submit-result --summary "did attempt $GUILD_HALL_ATTEMPT""#;

#[test]
fn markers_left_unresolved_never_land() {
    let p = project(LEAVES_MARKERS);
    p.config("max_revisions: 1\n");
    let tip_before = || git(&p.root, &["rev-parse", "claude/main"]);
    conflict_before_the_merge_of(&p, 1);
    let tip = tip_before();
    p.settle();
    let s = p.status_json("job");
    assert_eq!((s["status"].as_str(), s["attempt"].as_u64()), (Some("failed"), Some(2)), "{s}");
    let reason = s["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("conflict markers left unresolved in: shared.txt") && reason.contains("after 1 automatic revision"),
        "{reason}"
    );
    assert_eq!(tip_before(), tip, "nothing merged");
    assert_eq!(git(&p.root, &["show", "claude/main:shared.txt"]), "a person's line 1\n");
    assert!(git(&p.root, &["show", "claude/commission/job:shared.txt"]).contains("<<<<<<<"));
}
