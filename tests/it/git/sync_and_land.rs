//! `sync`, `land` and `follow:` against real git: the integration branch catches up with the
//! person's branch (fast-forward or merge, never a rewrite; conflicts and local changes in the
//! way change nothing), its work lands back (or is pushed to a bare remote), and a project that
//! follows its base branch syncs at `watch`'s start and before new work is dispatched.

use std::path::Path;

use serde_json::Value;

use crate::common::{git, wait_for, Project, Service};

fn rev(dir: &Path, what: &str) -> String {
    git(dir, &["rev-parse", what]).trim().to_string()
}

/// Commit `content` to `path` on the checked-out branch of `dir` (that file alone).
fn commit_file(dir: &Path, path: &str, content: &str, message: &str) {
    let file = dir.join(path);
    std::fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
    std::fs::write(&file, content).expect("write");
    git(dir, &["add", "--", path]);
    git(dir, &["commit", "-q", "-m", message]);
}

fn json_of(p: &Project, args: &[&str]) -> (i32, Value) {
    let (code, out, err) = p.run(args);
    let v = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: not JSON ({e}): {out}\n{err}"));
    (code, v)
}

/// A worker that copies `notes/fix.txt` of its (full) checkout to `seen.txt` and submits: it
/// fails when the file is not there.
fn reader(p: &Project) {
    p.script_worker("reader", "full", "cp notes/fix.txt seen.txt\n\"$GUILD_HALL_BIN\" toolbox submit-result --summary seen");
}

#[test]
fn init_records_the_branch_it_started_from() {
    let p = Project::new(&[]);
    assert_eq!(git(&p.root, &["config", "guild-hall.baseBranch"]).trim(), "main");
    // On another branch, a second init keeps what was recorded.
    git(&p.root, &["checkout", "-q", "-b", "topic"]);
    p.ok(&["init"]);
    assert_eq!(git(&p.root, &["config", "guild-hall.baseBranch"]).trim(), "main");
    // A repository started on `trunk`: that is its base, for `sync` and `land`, in any home.
    let q = tempfile::tempdir().expect("tempdir");
    let root = q.path().join("repo");
    std::fs::create_dir_all(&root).expect("mkdir");
    git(&root, &["init", "-q", "-b", "trunk"]);
    git(&root, &["config", "user.name", "Test Person"]);
    git(&root, &["config", "user.email", "person@example.com"]);
    commit_file(&root, "a.txt", "a\n", "first");
    let run = |home: &str, args: &[&str]| {
        let out = p.cmd().current_dir(&root).env("GUILD_HALL_HOME", q.path().join(home)).args(args).output().expect("runs");
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    run("home1", &["init"]);
    commit_file(&root, "b.txt", "b\n", "on trunk");
    let v: Value = serde_json::from_str(&run("home2", &["sync", "--json"])).expect("json");
    assert_eq!((v["from"].as_str(), v["outcome"].as_str()), (Some("trunk"), Some("merge")), "{v}");
    assert_eq!(rev(&root, "claude/main^2"), rev(&root, "trunk"), "trunk on the merge's second parent");
    assert_eq!(rev(&root, "claude/main^{tree}"), rev(&root, "trunk^{tree}"));
}

#[test]
fn a_new_commission_after_sync_sees_what_the_person_committed_to_main() {
    let p = Project::new(&[]);
    reader(&p);
    commit_file(&p.root, "notes/fix.txt", "the fix\n", "a fix on main");
    let before = rev(&p.root, "claude/main");
    let (code, v) = json_of(&p, &["sync", "--json"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["action"], "sync");
    assert_eq!(v["from"], "main");
    assert_eq!(v["into"], "claude/main");
    // A merge commit even though claude/main was behind: main's commits stay off the
    // integration branch's first-parent chain, where only guild-hall's word is read.
    assert_eq!(v["outcome"], "merge");
    assert_eq!(v["dry_run"], false);
    assert_eq!(v["before"].as_str(), Some(before.as_str()));
    assert_eq!(v["after"].as_str(), Some(rev(&p.root, "claude/main").as_str()));
    assert_eq!(v["paths"], serde_json::json!([]));
    assert_eq!(rev(&p.root, "claude/main^1"), before);
    assert_eq!(rev(&p.root, "claude/main^2"), rev(&p.root, "main"));
    assert_eq!(rev(&p.root, "claude/main^{tree}"), rev(&p.root, "main^{tree}"));

    let id = p.create("reader", "Read the fix", "Copy notes/fix.txt.");
    p.settle();
    assert_eq!(p.status(&id), "completed", "{}", p.artifact(&id));
    assert_eq!(git(&p.root, &["show", "claude/main:seen.txt"]), "the fix\n");

    // Nothing more to bring: a second sync does nothing.
    let tip = rev(&p.root, "claude/main");
    let (code, v) = json_of(&p, &["sync", "--json"]);
    assert_eq!((code, v["outcome"].as_str()), (0, Some("up-to-date")), "{v}");
    assert_eq!(rev(&p.root, "claude/main"), tip);
}

#[test]
fn a_dependency_committed_on_main_only_says_to_sync() {
    let p = Project::new(&[]);
    reader(&p);
    commit_file(&p.root, "notes/fix.txt", "the fix\n", "a fix on main");
    p.write_commission("read", "---\nworker: reader\ntitle: Read\ndependencies: [notes/fix.txt]\n---\nCopy notes/fix.txt.\n");
    p.ok(&["reconcile", "--once"]);
    assert_eq!(p.status("read"), "blocked");
    let why = p.status_json("read")["reason"].as_str().unwrap_or_default().to_string();
    assert!(
        why.contains("notes/fix.txt is on main but not on claude/main: run `guild-hall sync` to bring main in (or set `follow: main`"),
        "{why}"
    );
    // `status` and `check` say the same.
    assert!(p.ok(&["status"]).contains("run `guild-hall sync`"));
    // Once synced, it runs.
    p.ok(&["sync"]);
    p.settle();
    assert_eq!(p.status("read"), "completed", "{}", p.artifact("read"));

    // With `follow: main` and a sync that cannot proceed, it says so instead.
    p.config("follow: main\n");
    p.commit_on_integration("README.md", "# theirs\n", "integration edits the readme");
    commit_file(&p.root, "README.md", "# mine\n", "main edits the readme");
    commit_file(&p.root, "notes/more.txt", "more\n", "more on main");
    p.write_commission("more", "---\nworker: reader\ntitle: More\ndependencies: [notes/more.txt]\n---\nCopy notes/fix.txt.\n");
    p.ok(&["reconcile", "--once"]);
    assert_eq!(p.status("more"), "blocked");
    let why = p.status_json("more")["reason"].as_str().unwrap_or_default().to_string();
    assert!(
        why.contains("notes/more.txt is on main but not on claude/main: the automatic sync (`follow: main`) has not brought it in"),
        "{why}"
    );
}

#[test]
fn sync_merges_when_both_moved_and_rewrites_nothing() {
    let p = Project::new(&[]);
    // A person's artifact on main; the integration branch records it finished (as CI does).
    commit_file(&p.root, ".lore/commissions/old.md", "---\ntitle: Old\n---\nDo it.\n", "an artifact");
    p.ok(&["sync"]);
    p.commit_on_integration(".lore/commissions/old.md", "---\ntitle: Old\nstatus: completed\n---\nDo it.\n", "old finished");
    p.commit_on_integration("done.txt", "work\n", "work on the integration branch");
    commit_file(&p.root, "notes/fix.txt", "the fix\n", "a fix on main");
    let (int_before, main_tip) = (rev(&p.root, "claude/main"), rev(&p.root, "main"));
    let (code, v) = json_of(&p, &["sync", "--json"]);
    assert_eq!((code, v["outcome"].as_str()), (0, Some("merge")), "{v}");
    let merge = rev(&p.root, "claude/main");
    assert_eq!(v["after"].as_str(), Some(merge.as_str()));
    // Two parents: the integration branch as it was, then main; no commit rewritten.
    assert_eq!(git(&p.root, &["rev-list", "--parents", "-n1", &merge]).trim(), format!("{merge} {int_before} {main_tip}"));
    assert_eq!(git(&p.root, &["show", "claude/main:done.txt"]), "work\n");
    assert_eq!(git(&p.root, &["show", "claude/main:notes/fix.txt"]), "the fix\n");
    assert!(git(&p.root, &["show", "claude/main:.lore/commissions/old.md"]).contains("status: completed"), "the finished state stays");
    assert_eq!(rev(&p.root, "main"), main_tip, "main is not touched by sync");
    assert_eq!(git(&p.root, &["log", "-1", "--format=%an <%ae>", &merge]).trim(), "Test Person <person@example.com>");
    // Again: main is in already.
    let (code, v) = json_of(&p, &["sync", "--json"]);
    assert_eq!((code, v["outcome"].as_str()), (0, Some("up-to-date")), "{v}");
}

#[test]
fn a_conflict_stops_sync_with_the_paths_and_changes_nothing() {
    let p = Project::new(&[]);
    p.commit_on_integration("README.md", "# theirs\n", "integration edits the readme");
    commit_file(&p.root, "README.md", "# mine\n", "main edits the readme");
    let refs = git(&p.root, &["for-each-ref"]);
    let status = git(&p.root, &["status", "--porcelain"]);
    let (code, out, err) = p.run(&["sync"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("conflict in: README.md") && err.contains("nothing changed"), "{err}");
    let (code, v) = json_of(&p, &["sync", "--json"]);
    assert_eq!(code, 1);
    assert_eq!((v["outcome"].as_str(), &v["paths"]), (Some("conflict"), &serde_json::json!(["README.md"])), "{v}");
    assert_eq!(git(&p.root, &["for-each-ref"]), refs, "no ref moved");
    assert_eq!(git(&p.root, &["status", "--porcelain"]), status, "the checkout is as it was");
    assert_eq!(std::fs::read_to_string(p.root.join("README.md")).expect("read"), "# mine\n");
}

#[test]
fn sync_advances_a_checked_out_integration_branch_unless_local_changes_are_in_the_way() {
    let p = Project::new(&[]);
    // The CI case: the project root itself has the integration branch checked out; main is
    // moved from a checkout of its own.
    let person = p.tmp.path().join("person");
    git(&p.root, &["checkout", "-q", "claude/main"]);
    git(&p.root, &["worktree", "add", "-q", person.to_str().expect("utf8"), "main"]);
    commit_file(&person, "README.md", "# fixed\n", "fix the readme on main");
    std::fs::write(p.root.join("README.md"), "# my local edit\n").expect("write");
    std::fs::write(p.root.join("src/lib.txt"), "local, untouched by the sync\n").expect("write");
    let tip = rev(&p.root, "claude/main");

    let (code, v) = json_of(&p, &["sync", "--json"]);
    assert_eq!((code, v["outcome"].as_str()), (1, Some("blocked")), "{v}");
    assert_eq!(v["paths"], serde_json::json!(["README.md"]));
    assert!(v["reason"].as_str().is_some_and(|r| r.contains("local changes to README.md")), "{v}");
    let (code, _, err) = p.run(&["sync"]);
    assert!(code == 1 && err.contains("README.md"), "{err}");
    assert_eq!(rev(&p.root, "claude/main"), tip, "nothing moved");
    assert_eq!(std::fs::read_to_string(p.root.join("README.md")).expect("read"), "# my local edit\n");

    // Without the local change in the way, the branch and its checkout move together; the
    // other local change stays.
    git(&p.root, &["checkout", "--", "README.md"]);
    let (code, v) = json_of(&p, &["sync", "--json"]);
    assert_eq!((code, v["outcome"].as_str()), (0, Some("merge")), "{v}");
    assert_eq!(rev(&p.root, "claude/main^2"), rev(&p.root, "main"));
    assert_eq!(std::fs::read_to_string(p.root.join("README.md")).expect("read"), "# fixed\n");
    assert_eq!(std::fs::read_to_string(p.root.join("src/lib.txt")).expect("read"), "local, untouched by the sync\n");
    assert_eq!(git(&p.root, &["status", "--porcelain", "--untracked-files=no"]).trim(), "M src/lib.txt");
}

#[test]
fn dry_runs_change_nothing() {
    let p = Project::new(&[]);
    commit_file(&p.root, "notes/fix.txt", "the fix\n", "a fix on main");
    p.commit_on_integration("done.txt", "work\n", "work");
    let refs = git(&p.root, &["for-each-ref"]);
    let (code, v) = json_of(&p, &["sync", "--dry-run", "--json"]);
    assert_eq!((code, v["outcome"].as_str(), v["dry_run"].as_bool()), (0, Some("merge"), Some(true)), "{v}");
    let (code, out, _) = p.run(&["sync", "--dry-run"]);
    assert!(code == 0 && out.contains("would bring main into claude/main"), "{out}");
    let (code, v) = json_of(&p, &["land", "--dry-run", "--json"]);
    assert_eq!(
        (code, v["outcome"].as_str(), v["from"].as_str(), v["into"].as_str()),
        (0, Some("merge"), Some("claude/main"), Some("main")),
        "{v}"
    );
    assert_eq!(git(&p.root, &["for-each-ref"]), refs, "no ref moved");
    assert!(!p.root.join("done.txt").exists());
}

#[test]
fn land_fast_forwards_main_and_the_persons_checkout() {
    let p = Project::new(&[]);
    p.commit_on_integration("done.txt", "work\n", "finished work");
    let (code, v) = json_of(&p, &["land", "--json"]);
    assert_eq!((code, v["action"].as_str(), v["outcome"].as_str()), (0, Some("land"), Some("fast-forward")), "{v}");
    assert_eq!(rev(&p.root, "main"), rev(&p.root, "claude/main"));
    assert_eq!(std::fs::read_to_string(p.root.join("done.txt")).expect("landed in the checkout"), "work\n");
    assert_eq!(git(&p.root, &["status", "--porcelain", "--untracked-files=no"]).trim(), "");
    let (code, v) = json_of(&p, &["land", "--json"]);
    assert_eq!((code, v["outcome"].as_str()), (0, Some("up-to-date")), "{v}");
}

#[test]
fn land_merges_when_main_moved_and_loses_no_commit() {
    let p = Project::new(&[]);
    p.commit_on_integration("done.txt", "work\n", "finished work");
    commit_file(&p.root, "notes/fix.txt", "the fix\n", "a fix on main");
    let (main_before, int_tip) = (rev(&p.root, "main"), rev(&p.root, "claude/main"));
    let (code, out, err) = p.run(&["land"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("brought claude/main into main (merge commit)"), "{out}");
    let merge = rev(&p.root, "main");
    assert_eq!(git(&p.root, &["rev-list", "--parents", "-n1", &merge]).trim(), format!("{merge} {main_before} {int_tip}"));
    assert_eq!(std::fs::read_to_string(p.root.join("done.txt")).expect("read"), "work\n");
    assert_eq!(std::fs::read_to_string(p.root.join("notes/fix.txt")).expect("read"), "the fix\n");
    assert_eq!(git(&p.root, &["status", "--porcelain", "--untracked-files=no"]).trim(), "");
    assert_eq!(rev(&p.root, "claude/main"), int_tip, "land does not move the integration branch");
}

#[test]
fn land_is_refused_when_the_checkout_has_changes_in_the_way() {
    let p = Project::new(&[]);
    p.commit_on_integration("README.md", "# from the work\n", "finished work");
    std::fs::write(p.root.join("README.md"), "# unsaved thoughts\n").expect("write");
    let main_tip = rev(&p.root, "main");
    let (code, out, err) = p.run(&["land"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("main is checked out at") && err.contains("local changes to README.md"), "{err}");
    let (code, v) = json_of(&p, &["land", "--json"]);
    assert_eq!((code, v["outcome"].as_str(), &v["paths"]), (1, Some("blocked"), &serde_json::json!(["README.md"])), "{v}");
    assert_eq!(rev(&p.root, "main"), main_tip);
    assert_eq!(std::fs::read_to_string(p.root.join("README.md")).expect("read"), "# unsaved thoughts\n");
}

#[test]
fn land_push_sends_the_integration_branch_to_a_remote_and_a_rejection_is_said() {
    let p = Project::new(&[]);
    let origin = p.tmp.path().join("origin.git");
    git(p.tmp.path(), &["init", "-q", "--bare", origin.to_str().expect("utf8")]);
    git(&p.root, &["remote", "add", "origin", origin.to_str().expect("utf8")]);
    p.commit_on_integration("done.txt", "work\n", "finished work");
    let main_tip = rev(&p.root, "main");

    // A dry run asks the remote and changes nothing.
    let (code, v) = json_of(&p, &["land", "--push", "origin", "--dry-run", "--json"]);
    assert_eq!((code, v["outcome"].as_str(), v["remote"].as_str()), (0, Some("pushed"), Some("origin")), "{v}");
    assert_eq!(git(&origin, &["for-each-ref"]).trim(), "");

    let (code, v) = json_of(&p, &["land", "--push", "origin", "--json"]);
    assert_eq!((code, v["action"].as_str(), v["outcome"].as_str()), (0, Some("push"), Some("pushed")), "{v}");
    assert_eq!(rev(&origin, "claude/main"), rev(&p.root, "claude/main"));
    assert_eq!(rev(&p.root, "main"), main_tip, "--push leaves the base branch alone");
    let (code, v) = json_of(&p, &["land", "--push", "origin", "--json"]);
    assert_eq!((code, v["outcome"].as_str()), (0, Some("up-to-date")), "{v}");

    // Someone else pushed first: no force, a clear refusal, origin as it was.
    let other = p.tmp.path().join("other");
    git(p.tmp.path(), &["clone", "-q", "-b", "claude/main", origin.to_str().expect("utf8"), other.to_str().expect("utf8")]);
    git(&other, &["config", "user.name", "Other"]);
    git(&other, &["config", "user.email", "other@example.com"]);
    commit_file(&other, "theirs.txt", "theirs\n", "their work");
    git(&other, &["push", "-q", "origin", "claude/main"]);
    let theirs = rev(&origin, "claude/main");
    p.commit_on_integration("mine.txt", "mine\n", "more work");
    let (code, out, err) = p.run(&["land", "--push", "origin"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("origin did not take claude/main") && err.contains("rejected"), "{err}");
    assert_eq!(rev(&origin, "claude/main"), theirs, "nothing forced");
}

/// A project that follows main, with the reader worker.
fn following() -> Project {
    let p = Project::new(&[]);
    reader(&p);
    p.config("follow: main\n");
    p
}

#[test]
fn follow_syncs_at_watch_start_and_before_new_work_is_dispatched() {
    let p = following();
    commit_file(&p.root, "notes/early.txt", "before the watch\n", "before the watch");
    let svc = Service::start(&p, &[&p.root], &[]);
    wait_for("the start-up sync", || {
        std::process::Command::new("git")
            .args(["merge-base", "--is-ancestor", "main", "claude/main"])
            .current_dir(&p.root)
            .status()
            .is_ok_and(|s| s.success())
    });

    // A fix committed while it runs is brought in before the next dispatch.
    commit_file(&p.root, "notes/fix.txt", "fixed while watching\n", "a fix on main");
    p.write_commission("read", "---\nworker: reader\ntitle: Read\n---\nCopy notes/fix.txt.\n");
    crate::common::wait_status(&p, "read", "completed");
    assert_eq!(git(&p.root, &["show", "claude/main:seen.txt"]), "fixed while watching\n");
    drop(svc);
}

#[test]
fn a_follow_sync_that_cannot_proceed_is_reported_and_work_goes_on() {
    let p = following();
    commit_file(&p.root, "notes/fix.txt", "the integration's\n", "on main first");
    p.ok(&["sync"]);
    p.commit_on_integration("README.md", "# theirs\n", "integration edits the readme");
    commit_file(&p.root, "README.md", "# mine\n", "main edits the readme");
    let tip = rev(&p.root, "claude/main");
    p.write_commission("read", "---\nworker: reader\ntitle: Read\n---\nCopy notes/fix.txt.\n");
    p.settle();
    assert_eq!(p.status("read"), "completed", "dispatch went on from the integration branch as it was");
    assert_eq!(git(&p.root, &["rev-parse", "claude/main~1"]).trim(), tip, "only the commission's work was added");
    let out = p.ok(&["status"]);
    assert!(out.contains("sync: could not follow the base branch") && out.contains("README.md"), "{out}");
    // Once the conflict is resolved by hand, the next sync goes through and status forgets it.
    git(&p.root, &["checkout", "-q", "claude/main", "--", "README.md"]);
    git(&p.root, &["commit", "-q", "-m", "take theirs", "--", "README.md"]);
    p.ok(&["sync"]);
    assert!(!p.ok(&["status"]).contains("sync:"), "a sync by hand that went through is said at once");
    p.write_commission("again", "---\nworker: reader\ntitle: Again\n---\nCopy notes/fix.txt.\n");
    p.settle();
    assert!(!p.ok(&["status"]).contains("sync:"));
}

#[test]
fn sync_runs_beside_a_watch_that_holds_the_project() {
    let p = Project::new(&[]);
    reader(&p);
    let svc = Service::start(&p, &[&p.root], &[]);
    commit_file(&p.root, "notes/fix.txt", "synced by hand\n", "a fix on main");
    let (code, v) = json_of(&p, &["sync", "--json"]);
    assert_eq!((code, v["outcome"].as_str()), (0, Some("merge")), "{v}");
    p.write_commission("read", "---\nworker: reader\ntitle: Read\n---\nCopy notes/fix.txt.\n");
    crate::common::wait_status(&p, "read", "completed");
    assert_eq!(git(&p.root, &["show", "claude/main:seen.txt"]), "synced by hand\n");
    drop(svc);
}

#[test]
fn land_updates_a_persons_worktree_whatever_its_name() {
    // guild-hall tells its own worktrees by where they are (under the home), not by a name a
    // person may use too: `task-x` here is the person's checkout of main.
    let p = Project::new(&[]);
    let wt = p.tmp.path().join("task-x");
    git(&p.root, &["checkout", "-q", "--detach"]);
    git(&p.root, &["worktree", "add", "-q", wt.to_str().expect("utf8"), "main"]);
    p.commit_on_integration("done.txt", "work\n", "finished work");
    let (code, v) = json_of(&p, &["land", "--json"]);
    assert_eq!((code, v["outcome"].as_str()), (0, Some("fast-forward")), "{v}");
    assert_eq!(std::fs::read_to_string(wt.join("done.txt")).expect("landed in the person's worktree"), "work\n");
    assert_eq!(git(&wt, &["status", "--porcelain"]).trim(), "", "nothing staged that would revert the work");
}

#[test]
fn a_change_of_mode_alone_reaches_the_checkout() {
    use std::os::unix::fs::PermissionsExt;
    let p = Project::new(&[]);
    commit_file(&p.root, "run.sh", "#!/bin/sh\necho hi\n", "a script");
    p.ok(&["sync"]);
    let wt = p.tmp.path().join("person-int");
    git(&p.root, &["worktree", "add", "-q", wt.to_str().expect("utf8"), "claude/main"]);
    std::fs::set_permissions(wt.join("run.sh"), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    git(&wt, &["commit", "-q", "-am", "make it executable"]);
    git(&p.root, &["worktree", "remove", wt.to_str().expect("utf8")]);
    let (code, v) = json_of(&p, &["land", "--json"]);
    assert_eq!((code, v["outcome"].as_str()), (0, Some("fast-forward")), "{v}");
    let mode = std::fs::metadata(p.root.join("run.sh")).expect("stat").permissions().mode();
    assert_eq!(mode & 0o111, 0o111, "the checkout's file is executable now: {mode:o}");
    assert_eq!(git(&p.root, &["status", "--porcelain", "--untracked-files=no"]).trim(), "", "and the index agrees");
}

#[test]
fn a_file_where_the_work_puts_a_directory_is_named() {
    let p = Project::new(&[]);
    p.commit_on_integration("docs/a.md", "# a\n", "docs");
    std::fs::write(p.root.join("docs"), "my notes, not committed\n").expect("write");
    let main_tip = rev(&p.root, "main");
    let (code, v) = json_of(&p, &["land", "--json"]);
    assert_eq!((code, v["outcome"].as_str(), &v["paths"]), (1, Some("blocked"), &serde_json::json!(["docs"])), "{v}");
    assert_eq!(rev(&p.root, "main"), main_tip);
    assert_eq!(std::fs::read_to_string(p.root.join("docs")).expect("kept"), "my notes, not committed\n");
}

/// Commit `files` (forced past `.gitignore`) onto claude/main through a temporary worktree.
fn force_on_integration(p: &Project, files: &[(&str, &str)], message: &str) {
    let wt = p.tmp.path().join("force-wt");
    git(&p.root, &["worktree", "add", "-q", wt.to_str().expect("utf8"), "claude/main"]);
    for (path, content) in files {
        let file = wt.join(path);
        std::fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
        std::fs::write(&file, content).expect("write");
        git(&wt, &["add", "-f", "--", path]);
    }
    git(&wt, &["commit", "-q", "-m", message]);
    git(&p.root, &["worktree", "remove", wt.to_str().expect("utf8")]);
}

/// `land` used to overwrite the person's ignored `.env` and delete an
/// ignored `local/` directory without a word. Both are in the way: it is blocked, naming them,
/// and nothing of theirs changes; once they are moved away it goes through.
#[test]
fn land_never_overwrites_or_deletes_ignored_files() {
    let p = Project::new(&[]);
    commit_file(&p.root, ".gitignore", ".env\nlocal/\n", "ignore secrets");
    p.ok(&["sync"]);
    std::fs::write(p.root.join(".env"), "SECRET=mine\n").expect("write");
    std::fs::create_dir_all(p.root.join("local")).expect("mkdir");
    std::fs::write(p.root.join("local/notes.txt"), "my notes\n").expect("write");
    force_on_integration(&p, &[(".env", "SECRET=theirs\n"), ("local", "a file where my directory is\n")], "work");
    let main_tip = rev(&p.root, "main");
    let (code, v) = json_of(&p, &["land", "--json"]);
    assert_eq!((code, v["outcome"].as_str()), (1, Some("blocked")), "{v}");
    assert_eq!(v["paths"], serde_json::json!([".env", "local"]), "{v}");
    assert!(v["reason"].as_str().is_some_and(|r| r.contains(".env") && r.contains("ignored")), "{v}");
    let (code, _, err) = p.run(&["land"]);
    assert!(code == 1 && err.contains(".env"), "{err}");
    assert_eq!(rev(&p.root, "main"), main_tip, "nothing moved");
    assert_eq!(std::fs::read_to_string(p.root.join(".env")).expect("kept"), "SECRET=mine\n");
    assert_eq!(std::fs::read_to_string(p.root.join("local/notes.txt")).expect("kept"), "my notes\n");
    // Moved away, the work lands.
    std::fs::rename(p.root.join(".env"), p.tmp.path().join("env.saved")).expect("mv");
    std::fs::rename(p.root.join("local"), p.tmp.path().join("local.saved")).expect("mv");
    let (code, v) = json_of(&p, &["land", "--json"]);
    assert_eq!((code, v["outcome"].as_str()), (0, Some("fast-forward")), "{v}");
    assert_eq!(std::fs::read_to_string(p.root.join(".env")).expect("landed"), "SECRET=theirs\n");
}

/// The same for a sync onto a checked-out integration branch (the CI case), and for edits git
/// is told not to see (assume-unchanged, skip-worktree): blocked, named, kept — never the raw
/// libgit2 error it used to be.
#[test]
fn sync_never_overwrites_ignored_files_or_edits_hidden_from_git_status() {
    let p = Project::new(&[]);
    commit_file(&p.root, ".gitignore", ".env\n", "ignore secrets");
    commit_file(&p.root, "src/skip.txt", "skip\n", "another file");
    p.ok(&["sync"]);
    git(&p.root, &["checkout", "-q", "claude/main"]);
    std::fs::write(p.root.join(".env"), "SECRET=mine\n").expect("write");
    // main, from a checkout of its own, brings an .env and changes the two files.
    let person = p.tmp.path().join("person");
    git(&p.root, &["worktree", "add", "-q", person.to_str().expect("utf8"), "main"]);
    std::fs::write(person.join(".env"), "SECRET=main\n").expect("write");
    std::fs::write(person.join("src/lib.txt"), "main's code\n").expect("write");
    std::fs::write(person.join("src/skip.txt"), "main's skip\n").expect("write");
    git(&person, &["add", "-f", ".env", "src"]);
    git(&person, &["commit", "-q", "-m", "on main"]);
    let tip = rev(&p.root, "claude/main");
    let (code, v) = json_of(&p, &["sync", "--json"]);
    assert_eq!((code, v["outcome"].as_str(), &v["paths"]), (1, Some("blocked"), &serde_json::json!([".env"])), "{v}");
    std::fs::rename(p.root.join(".env"), p.tmp.path().join("env.saved")).expect("mv");
    // Edits hidden from `git status`.
    std::fs::write(p.root.join("src/lib.txt"), "my hidden edit\n").expect("write");
    git(&p.root, &["update-index", "--assume-unchanged", "src/lib.txt"]);
    std::fs::write(p.root.join("src/skip.txt"), "my skipped edit\n").expect("write");
    git(&p.root, &["update-index", "--skip-worktree", "src/skip.txt"]);
    let (code, v) = json_of(&p, &["sync", "--json"]);
    assert_eq!(
        (code, v["outcome"].as_str(), &v["paths"]),
        (1, Some("blocked"), &serde_json::json!(["src/lib.txt", "src/skip.txt"])),
        "{v}"
    );
    assert!(v["reason"].as_str().is_some_and(|r| r.contains("assume-unchanged")), "{v}");
    assert_eq!(rev(&p.root, "claude/main"), tip, "nothing moved");
    assert_eq!(std::fs::read_to_string(p.root.join("src/lib.txt")).expect("kept"), "my hidden edit\n");
    assert_eq!(std::fs::read_to_string(p.root.join("src/skip.txt")).expect("kept"), "my skipped edit\n");
}

/// `land --dry-run` used to say only "fast-forward" and `land --json` listed
/// `"paths": []`. It says what it brings: each file with its lines added and deleted, and the
/// commissions and plan tasks it comes from (trailers in the last paragraph of the integration
/// branch's own commits only: a line in a message's body is not one).
#[test]
fn land_says_what_it_brings_and_where_from() {
    let p = Project::new(&["scribe", "mason"]);
    let id = p.create("scribe", "Notes", "output: .lore/reports/notes.md\nWrite.");
    let dir = p.root.join(".lore/plans");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(dir.join("pl.md"), "---\ntitle: pl\nwaves:\n  - - {id: one, worker: mason, prompt: \"write: src/one.txt one\"}\n---\n")
        .expect("plan");
    p.settle();
    assert_eq!(p.status(&id), "completed");
    // A person's commit whose body quotes a trailer: not guild-hall's word.
    p.commit_on_integration(
        "src/lib.txt",
        "code\nmore\n",
        "edit\n\nGuild-Hall-Commission: fake attempt 1\n\nSigned-off-by: A Person <a@example.com>",
    );
    let refs = git(&p.root, &["for-each-ref"]);
    let (code, v) = json_of(&p, &["land", "--dry-run", "--json"]);
    assert_eq!((code, v["outcome"].as_str()), (0, Some("fast-forward")), "{v}");
    let files = v["files"].as_array().cloned().unwrap_or_default();
    let file = |path: &str| files.iter().find(|f| f["path"] == path).cloned().unwrap_or_else(|| panic!("{path} listed: {v}"));
    let notes = file(".lore/reports/notes.md");
    assert_eq!(notes["change"], "added", "{notes}");
    assert!(notes["additions"].as_u64().is_some_and(|n| n > 0) && notes["deletions"] == 0, "{notes}");
    let lib = file("src/lib.txt");
    assert_eq!((lib["change"].as_str(), lib["additions"].as_u64(), lib["deletions"].as_u64()), (Some("modified"), Some(1), Some(0)));
    assert_eq!(file("src/one.txt")["additions"], 1);
    let work: Vec<String> = v["work"]
        .as_array()
        .expect("work")
        .iter()
        .map(|w| format!("{} {} {}", w["kind"].as_str().unwrap_or(""), w["id"].as_str().unwrap_or(""), w["attempt"]))
        .collect();
    assert!(work.contains(&format!("commission {id} 1")), "{work:?}");
    assert!(work.contains(&"task pl:exec:wave-1:task-1 null".to_string()), "{work:?}");
    assert!(!work.iter().any(|w| w.contains("fake")), "a line in a body is no trailer: {work:?}");
    let (code, out, _) = p.run(&["land", "--dry-run"]);
    assert_eq!(code, 0);
    assert!(out.contains("fast-forward") && out.contains(".lore/reports/notes.md (+") && out.contains("src/lib.txt (+1 -0)"), "{out}");
    assert!(out.contains(&format!("commission {id} (attempt 1)")) && out.contains("task pl:exec:wave-1:task-1"), "{out}");
    assert_eq!(git(&p.root, &["for-each-ref"]), refs, "a dry run moves nothing");
    // The land itself says the same.
    let (code, v) = json_of(&p, &["land", "--json"]);
    assert_eq!((code, v["outcome"].as_str()), (0, Some("fast-forward")), "{v}");
    assert!(v["files"].as_array().is_some_and(|f| f.len() == files.len()), "{v}");
}

/// A checkout whose index a git holds (`.git/index.lock`: a commit in progress, or a git
/// killed mid-write) is never written under it: `land` is blocked naming the lock, nothing
/// changes; once the lock is gone it goes through.
#[test]
fn land_waits_for_a_locked_index_naming_it() {
    let p = Project::new(&[]);
    p.commit_on_integration("done.txt", "work\n", "finished work");
    let lock = p.root.join(".git/index.lock");
    std::fs::write(&lock, "").expect("lock");
    let main_tip = rev(&p.root, "main");
    let (code, v) = json_of(&p, &["land", "--json"]);
    assert_eq!((code, v["outcome"].as_str()), (1, Some("blocked")), "{v}");
    assert!(v["reason"].as_str().is_some_and(|r| r.contains("index.lock")), "{v}");
    assert_eq!(rev(&p.root, "main"), main_tip);
    assert!(!p.root.join("done.txt").exists(), "nothing written under the lock");
    std::fs::remove_file(&lock).expect("rm");
    let (code, v) = json_of(&p, &["land", "--json"]);
    assert_eq!((code, v["outcome"].as_str()), (0, Some("fast-forward")), "{v}");
    assert_eq!(std::fs::read_to_string(p.root.join("done.txt")).expect("landed"), "work\n");
}

/// `sync` always merges (the base on the second parent); a `land` after it with no guild-hall
/// work in between brings nothing, so no merge commit of `sync`'s reaches `main` as noise.
#[test]
fn land_after_a_sync_alone_brings_nothing() {
    let p = Project::new(&[]);
    commit_file(&p.root, "notes/fix.txt", "the fix\n", "a fix on main");
    let (code, v) = json_of(&p, &["sync", "--json"]);
    assert_eq!((code, v["outcome"].as_str()), (0, Some("merge")), "{v}");
    let main_tip = rev(&p.root, "main");
    let (code, v) = json_of(&p, &["land", "--json"]);
    assert_eq!((code, v["outcome"].as_str()), (0, Some("up-to-date")), "{v}");
    assert_eq!(rev(&p.root, "main"), main_tip, "main untouched");
    // Work that lands afterwards still goes, with the merge under it.
    p.commit_on_integration("done.txt", "work\n", "finished work");
    let (code, v) = json_of(&p, &["land", "--json"]);
    assert_eq!((code, v["outcome"].as_str()), (0, Some("fast-forward")), "{v}");
    assert_eq!(rev(&p.root, "main"), rev(&p.root, "claude/main"));
}
