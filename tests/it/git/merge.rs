//! The squash merge against a moving integration branch: conflicts fail the commission and
//! merge nothing, except `.lore/` files only guild-hall's own merges changed (those go to the
//! worker); a checkout of the integration branch is advanced only when no person's local
//! change is touched.

use crate::common::*;

/// A full-checkout worker that writes `$FILE` (from its prompt's `file:` line) and submits.
fn install_editor(p: &Project) {
    let dir = p.root.join(".lore/workers/editor");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(dir.join("worker.yaml"), "name: editor\ncommand: [\"./run.sh\"]\ncheckout: full\n").expect("write");
    let script = "#!/bin/sh\nset -eu\nf=$(sed -n 's/^file: *//p' \"$GUILD_HALL_PROMPT_FILE\")\nmkdir -p \"$(dirname \"$f\")\"\necho \"from the worker\" > \"$f\"\n\"$GUILD_HALL_BIN\" toolbox submit-result --summary \"edited $f\" --artifact \"$f\"\n";
    std::fs::write(dir.join("run.sh"), script).expect("write");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.join("run.sh"), std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// Commit `content` to `path` on claude/main, as a person would.
fn commit_on_integration(p: &Project, path: &str, content: &str) {
    p.commit_on_integration(path, content, "a person's change");
}

#[test]
fn conflict_outside_lore_fails_and_merges_nothing() {
    let p = Project::new(&[]);
    // No automatic send-back (`max_revisions: 0`): the conflict fails it at once.
    p.config("max_revisions: 0\n");
    install_editor(&p);
    let id = p.create("editor", "Edit readme", "file: README.md\nRewrite the readme.");
    stop_before_merge(&p, &id);
    commit_on_integration(&p, "README.md", "a person's readme\n");
    let tip = git(&p.root, &["rev-parse", "claude/main"]);
    p.settle();
    let s = p.status_json(&id);
    assert_eq!(s["status"], "failed", "{s}");
    let reason = s["reason"].as_str().unwrap_or("");
    assert!(reason.contains("merge conflict in: README.md"), "{reason}");
    assert_eq!(git(&p.root, &["rev-parse", "claude/main"]), tip, "nothing merged");
    assert_eq!(git(&p.root, &["show", "claude/main:README.md"]), "a person's readme\n");
    // The worker's version is kept on its branch; the result is kept in the artifact.
    assert_eq!(git(&p.root, &["show", &format!("claude/commission/{id}:README.md")]), "from the worker\n");
    assert_eq!(s["result"]["summary"], "edited README.md");
    assert!(!p.worktree_list().contains(&format!("commission-{id}")));
}

#[test]
fn a_lore_conflict_with_a_persons_commit_fails_and_overwrites_nothing() {
    let p = Project::new(&[]);
    install_editor(&p);
    let id = p.create("editor", "Edit notes", "file: .lore/notes.md\nWrite notes.");
    stop_before_merge(&p, &id);
    commit_on_integration(&p, ".lore/notes.md", "a person's notes\n");
    let tip = git(&p.root, &["rev-parse", "claude/main"]);
    p.settle();
    let s = p.status_json(&id);
    assert_eq!(s["status"], "failed", "{s}");
    let reason = s["reason"].as_str().unwrap_or("");
    assert!(reason.contains("merge conflict in: .lore/notes.md"), "{reason}");
    assert_eq!(git(&p.root, &["rev-parse", "claude/main"]), tip, "nothing merged");
    assert_eq!(git(&p.root, &["show", "claude/main:.lore/notes.md"]), "a person's notes\n");
    assert_eq!(git(&p.root, &["show", &format!("claude/commission/{id}:.lore/notes.md")]), "from the worker\n");
}

#[test]
fn a_lore_conflict_with_only_guild_halls_merges_goes_to_the_worker() {
    let p = Project::new(&[]);
    install_editor(&p);
    let id = p.create("editor", "Edit notes", "file: .lore/notes.md\nWrite notes.");
    stop_before_merge(&p, &id);
    // Another commission's squash merge (it carries guild-hall's trailer) wrote the same file.
    p.commit_on_integration(".lore/notes.md", "an earlier commission's notes\n", "Notes (other)\n\nGuild-Hall-Commission: other attempt 1");
    p.settle();
    assert_eq!(p.status(&id), "completed");
    assert_eq!(git(&p.root, &["show", "claude/main:.lore/notes.md"]), "from the worker\n");
}

#[test]
fn checked_out_integration_branch_is_advanced_when_clean() {
    let p = Project::new(&["scribe"]);
    git(&p.root, &["checkout", "-q", "claude/main"]);
    let id = p.create("scribe", "Notes", "output: .lore/notes.md\nWrite.");
    p.settle();
    assert_eq!(p.status(&id), "completed");
    let on_disk = std::fs::read_to_string(p.root.join(".lore/notes.md")).expect("advanced checkout has the file");
    assert!(on_disk.contains(&id));
    // Only the person's own untracked files (the commission and workers) remain as changes.
    let status = git(&p.root, &["status", "--porcelain"]);
    assert!(!status.contains("notes.md"), "{status}");
}

#[test]
fn checked_out_integration_branch_with_local_changes_waits() {
    let p = Project::new(&["scribe"]);
    git(&p.root, &["checkout", "-q", "claude/main"]);
    let id = p.create("scribe", "Notes", "output: .lore/notes.md\nWrite.");
    // The person has their own uncommitted file at the same path.
    std::fs::write(p.root.join(".lore/notes.md"), "my own draft\n").expect("write");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !p.artifact(&id).contains("merge waiting") {
        p.ok(&["reconcile", "--once"]);
        assert!(std::time::Instant::now() < deadline, "never waited: {}", p.artifact(&id));
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(std::fs::read_to_string(p.root.join(".lore/notes.md")).expect("read"), "my own draft\n", "not overwritten");
    assert_eq!(git(&p.root, &["rev-list", "--count", "main..claude/main"]).trim(), "1", "nothing merged yet (init's own commit alone)");
    assert_eq!(p.status(&id), "in_progress");
    // The person moves their draft away; the merge goes through.
    std::fs::rename(p.root.join(".lore/notes.md"), p.root.join(".lore/my-draft.md")).expect("mv");
    p.settle();
    assert_eq!(p.status(&id), "completed");
    assert!(std::fs::read_to_string(p.root.join(".lore/notes.md")).expect("read").contains(&id));
    assert_eq!(std::fs::read_to_string(p.root.join(".lore/my-draft.md")).expect("read"), "my own draft\n");
}

#[test]
fn an_advance_interrupted_before_the_ref_moved_is_finished() {
    let p = Project::new(&[]);
    install_editor(&p);
    git(&p.root, &["checkout", "-q", "claude/main"]);
    let id = p.create("editor", "Edit notes", "file: .lore/notes.md\nWrite notes.");
    stop_before_merge(&p, &id);
    // The state a crash between "checkout advanced" and "ref moved" leaves behind.
    std::fs::write(p.root.join(".lore/notes.md"), "from the worker\n").expect("write");
    git(&p.root, &["add", ".lore/notes.md"]);
    p.settle();
    assert_eq!(p.status(&id), "completed");
    assert_eq!(git(&p.root, &["show", "claude/main:.lore/notes.md"]), "from the worker\n");
    assert!(!git(&p.root, &["status", "--porcelain"]).contains("notes.md"));
}

#[test]
fn a_waiting_merge_is_reported_once_while_reconcile_waits() {
    let p = Project::new(&["scribe"]);
    git(&p.root, &["checkout", "-q", "claude/main"]);
    let id = p.create("scribe", "Notes", "output: .lore/notes.md\nWrite.");
    std::fs::write(p.root.join(".lore/notes.md"), "my own draft\n").expect("write");
    // `--wait` polls several times a second for 3 s; the wait is said once.
    let (_, out, _) = p.run(&["reconcile", "--once", "--wait", "--timeout", "3s"]);
    assert_eq!(out.matches("merge waiting").count(), 1, "{out}");
    assert_eq!(p.status(&id), "in_progress");
}
