//! What a home knows against what the files and git say: finished work from
//! another home's later attempt is adopted, not "repaired"; an artifact a `git stash` puts back
//! is the same commission, never new work; and a home that holds a runtime trace of an
//! activity (a worktree, a pending update) never takes it for another home's.

use crate::common::*;

/// `check`'s whole output (it exits non-zero when it finds problems).
fn check(p: &Project) -> String {
    let (_, out, err) = p.run(&["check"]);
    format!("{out}{err}")
}

fn dry_run(p: &Project) -> String {
    let (code, out, err) = p.run(&["reconcile", "--once", "--dry-run"]);
    assert_eq!(code, 0, "{out}{err}");
    format!("{out}{err}")
}

#[test]
fn a_stash_putting_back_the_pending_version_never_runs_a_completed_commission_again() {
    let p = Project::new(&["scribe"]);
    let id = p.create("scribe", "Hello", "output: .lore/reports/one.md");
    git(&p.root, &["add", "-A"]);
    git(&p.root, &["commit", "-q", "-m", "a commission"]);
    p.settle();
    assert_eq!(p.status(&id), "completed");

    // The reconciler's writes are uncommitted changes: a stash puts the committed (pending,
    // never-run) version back.
    git(&p.root, &["stash", "-q"]);
    assert!(p.artifact(&id).contains("status: pending"), "{}", p.artifact(&id));
    let plan = dry_run(&p);
    assert!(!plan.contains("dispatch"), "nothing runs again: {plan}");
    p.settle();
    let art = p.artifact(&id);
    assert!(art.contains("status: completed"), "the recorded status is put back: {art}");
    assert!(art.contains("commission create"), "the reason says how to start new work instead: {art}");
    assert!(!trailers(&p).contains(&format!("Guild-Hall-Commission: {id} attempt 2")), "{}", trailers(&p));
    assert!(!p.branches().contains(&format!("claude/commission/{id}+2")), "{:?}", p.branches());

    // A file written by hand without a `created:` of its own is the same commission too.
    std::fs::remove_file(p.artifact_path(&id)).expect("rm");
    p.write_commission(&id, "---\nworker: scribe\nstatus: pending\n---\noutput: .lore/reports/again.md\n");
    p.settle();
    let art = p.artifact(&id);
    assert!(art.contains("status: completed") && art.contains("commission create"), "{art}");
    assert!(!trailers(&p).contains(&format!("Guild-Hall-Commission: {id} attempt 2")), "{}", trailers(&p));
}

#[test]
fn a_later_attempt_of_another_home_is_left_alone_while_active_and_adopted_once_finished() {
    let p = Project::new(&["silent"]);
    let id = p.create("silent", "Y", "anything");
    p.settle();
    assert_eq!(p.status(&id), "failed");
    let created = p.status_json(&id)["created"].as_str().unwrap_or("2026-01-01T00:00:00Z").to_string();

    // A teammate's re-run, attempt 2, is under way in their home: pulled in, it is theirs.
    let running = format!(
        "---\nworker: silent\ntitle: Y\nstatus: in_progress\ncreated: {created}\nattempt: 2\nbranch: claude/commission/{id}+2\n---\nanything\n"
    );
    p.write_commission(&id, &running);
    let plan = dry_run(&p);
    assert!(!plan.contains("failed"), "{plan}");
    p.ok(&["reconcile", "--once"]);
    assert_eq!(p.artifact(&id), running, "another home's attempt is never repaired");
    let c = check(&p);
    assert!(c.contains("in another home") && c.contains("up to 1 only"), "{c}");

    // It finished there and its work landed: this home adopts it, the artifact stays as it is.
    let done = format!(
        "---\nworker: silent\ntitle: Y\nstatus: completed\ncreated: {created}\nattempt: 2\nbranch: claude/commission/{id}+2\ncompleted: 2026-11-25T00:00:00.000Z\nresult:\n  summary: done there\n  artifacts: []\n---\nanything\n"
    );
    p.write_commission(&id, &done);
    p.commit_on_integration("y.md", "y\n", &format!("y\n\nGuild-Hall-Commission: {id} attempt 2"));
    let plan = dry_run(&p);
    assert!(!plan.contains("failed") && !plan.contains("refused"), "{plan}");
    p.ok(&["reconcile", "--once"]);
    p.ok(&["reconcile", "--once"]);
    assert_eq!(p.artifact(&id), done, "finished work is never rewritten");
    let s = p.status_json(&id);
    assert_eq!(s["status"], "completed", "{s}");
    assert!(!check(&p).contains(&format!("{id}.md")), "{}", check(&p));
    assert!(!kinds(&p.timeline(&id)).contains(&"refused".to_string()), "{:?}", kinds(&p.timeline(&id)));
}

#[test]
fn a_wiped_state_dir_under_a_running_worker_is_not_taken_for_another_homes() {
    let p = Project::new(&["sleeper"]);
    let id = p.create("sleeper", "Nap", "sleep: 8");
    let out = in_pid_namespace(
        &p,
        &format!(
            r#"
dispatch {id}
rm -rf "$(dirname "$(run_json {id})")"
echo "--- status"; "$GH" status {id} --json 2>&1 || true
echo "--- check"; "$GH" check 2>&1 || true
"$GH" reconcile --once >/dev/null
echo "--- during"; grep '^status:' .lore/commissions/{id}.md
pass_until "the attempt ended" grep -q '^status: failed' .lore/commissions/{id}.md
echo "--- branch"; git ls-tree -r --name-only claude/commission/{id}
"#
        ),
    );
    for part in ["status", "check"] {
        let said = section(&out, part);
        assert!(!said.contains("another home") && !said.contains("never started"), "{part}: {said}");
    }
    let status: serde_json::Value = serde_json::from_str(section(&out, "status")).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert!(status["elsewhere"].is_null(), "{status}");
    // Never failed nor cleaned up under its running worker; once it ended, what it wrote is
    // kept on its branch.
    assert_eq!(section(&out, "during").trim(), "status: in_progress", "{out}");
    assert!(section(&out, "branch").contains(&format!(".lore/slept/{id}.md")), "{out}");
}

#[test]
fn a_meeting_whose_opening_was_killed_before_its_record_is_this_homes() {
    let p = Project::new(&["counsel"]);
    let out = p
        .cmd()
        .args(["meeting", "start", "--id", "mt", "--worker", "counsel", "hi"])
        .env("GUILD_HALL_FAULT", "meeting-apply:3")
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(86), "{}", String::from_utf8_lossy(&out.stderr));
    let c = check(&p);
    assert!(!c.contains("another home") && !c.contains("never opened"), "{c}");
    let (_, o, e) = p.run(&["meeting", "send", "mt", "hello"]);
    assert!(!e.contains("another home") && !o.contains("another home"), "{o}{e}");
    assert!(e.contains("not open in this home yet") && e.contains("reconcile --once"), "{e}");
    // The next pass settles the opening: clean, and the meeting talks.
    p.ok(&["reconcile", "--once"]);
    assert!(!check(&p).contains("mt.md"), "{}", check(&p));
    p.ok(&["meeting", "send", "mt", "hello"]);
}

/// A project's name keys its state, worktrees and worker memory, and a repository can choose it
/// (`name:` in `.lore/guild-hall.yaml`): a second checkout naming itself like one the home
/// already serves is refused, by `init` and by a pass, naming both (fails on 777052f: `init`
/// took the name over and a pass ran under it, sharing the first project's memory).
#[test]
fn a_project_name_another_checkout_holds_is_refused() {
    let a = Project::new(&[]);
    a.config("name: shared\n");
    a.ok(&["init"]);
    let mut b = Project::new(&[]);
    b.home = a.home.clone();
    b.config("name: shared\n");
    let (code, out, err) = b.run(&["init"]);
    assert_ne!(code, 0, "{out}{err}");
    assert!(err.contains("\"shared\" is already taken") && err.contains(&a.root.display().to_string()), "{err}");
    let (code, out, err) = b.run(&["reconcile", "--once"]);
    assert_ne!(code, 0, "{out}{err}");
    assert!(err.contains("already taken"), "{err}");
    // The first keeps its name and runs.
    a.ok(&["reconcile", "--once"]);
    let config = std::fs::read_to_string(a.home.join("config.yaml")).expect("config");
    assert!(config.contains(&a.root.display().to_string()) && !config.contains(&b.root.display().to_string()), "{config}");
}
