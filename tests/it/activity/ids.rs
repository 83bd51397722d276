//! Ids are never reused: an id stays taken while anything of it exists (its artifact, a
//! branch, a trailer on the integration branch, a runtime dir); every way of creating work
//! picks the next free one, an id asked for by name that is taken is refused saying what holds
//! it, and a new artifact over an ended id (a `created:` of its own) runs as new work on a new
//! branch.

use std::path::PathBuf;

use crate::common::*;

/// `path` on the integration branch.
fn landed(p: &Project, path: &str) -> String {
    git(&p.root, &["show", &format!("claude/main:{path}")])
}

/// This project's runtime dirs under the home.
fn project_state(p: &Project) -> PathBuf {
    let root = p.root.canonicalize().expect("canonical root");
    p.home.join("state").join(guild_hall::config::default_project_name(&root))
}

/// Refused, with what holds the id named.
fn refused(p: &Project, args: &[&str], holder: &str) {
    let (code, out, err) = p.run(args);
    assert_ne!(code, 0, "{args:?} should be refused: {out}{err}");
    assert!(err.contains("is taken by") && err.contains(holder), "{args:?}: {err}");
    assert!(err.contains("ids are never reused"), "{err}");
}

#[test]
fn a_freed_id_is_never_handed_its_old_result() {
    let p = Project::new(&["scribe"]);
    let first = p.create("scribe", "Hello", "output: .lore/reports/one.md");
    assert_eq!(first, "hello");
    p.settle();
    assert_eq!(p.status(&first), "completed");
    let result = p.status_json(&first)["result"].clone();

    // The person deletes the artifact and asks for the same title again.
    std::fs::remove_file(p.artifact_path(&first)).expect("rm");
    let second = p.create("scribe", "Hello", "output: .lore/reports/two.md");
    assert_eq!(second, "hello-2", "a freed id is never handed out again");
    p.settle();
    let s = p.status_json(&second);
    assert_eq!(s["status"], "completed", "{s}");
    assert!(s.get("reason").is_none_or(|r| r.is_null()), "nothing refused: {s}");
    assert!(kinds(&p.timeline(&second)).contains(&"result".to_string()), "its worker ran");

    // Both landed, and the first's result is untouched.
    let log = trailers(&p);
    assert!(log.contains("Guild-Hall-Commission: hello attempt 1"), "{log}");
    assert!(log.contains("Guild-Hall-Commission: hello-2 attempt 1"), "{log}");
    assert!(landed(&p, ".lore/reports/one.md").contains("commission hello."));
    assert!(landed(&p, ".lore/reports/two.md").contains("commission hello-2."));
    // The first's branch still holds the first's work, and its artifact's result was its own.
    assert!(git(&p.root, &["show", "claude/commission/hello:.lore/reports/one.md"]).contains("commission hello."));
    assert!(result.to_string().contains("one.md"), "{result}");
    assert!(p.status_json(&second)["result"].to_string().contains("two.md"));
}

#[test]
fn each_trace_holds_an_id() {
    let p = Project::new(&["scribe"]);
    let create = |title: &str| p.create("scribe", title, "x");
    let by_id = |id: &str| {
        ["commission", "create", "--worker", "scribe", "--title", "t", "--id", id, "--prompt", "x", "--draft"].map(str::to_string)
    };

    // A branch only.
    git(&p.root, &["branch", "claude/commission/solo"]);
    assert_eq!(create("Solo"), "solo-2");
    let args = by_id("solo");
    refused(&p, &args.iter().map(String::as_str).collect::<Vec<_>>(), "branch claude/commission/solo");

    // A trailer on the integration branch only (the branch and artifact long gone).
    p.commit_on_integration("notes.md", "landed\n", "work\n\nGuild-Hall-Commission: landed attempt 3");
    assert_eq!(create("Landed"), "landed-2");
    let args = by_id("landed");
    refused(&p, &args.iter().map(String::as_str).collect::<Vec<_>>(), "Guild-Hall-Commission: landed attempt 3");

    // A runtime dir in this home only.
    let kept = project_state(&p).join("commissions/kept");
    std::fs::create_dir_all(&kept).expect("mkdir");
    assert_eq!(create("Kept"), "kept-2");
    let args = by_id("kept");
    refused(&p, &args.iter().map(String::as_str).collect::<Vec<_>>(), &kept.display().to_string());

    // An artifact, as always; and an id nothing holds is given as asked.
    let args = by_id("solo-2");
    refused(&p, &args.iter().map(String::as_str).collect::<Vec<_>>(), "solo-2.md");
    let args = by_id("free");
    assert_eq!(p.ok(&args.iter().map(String::as_str).collect::<Vec<_>>()).trim(), "free");
}

#[test]
fn meeting_start_picks_a_free_id_and_refuses_a_taken_one() {
    let p = Project::new(&["counsel"]);
    git(&p.root, &["branch", "claude/meeting/talk"]);
    refused(&p, &["meeting", "start", "--worker", "counsel", "--id", "talk", "hi"], "branch claude/meeting/talk");
    assert!(!p.root.join(".lore/meetings/talk.md").exists(), "nothing written");
    let out = p.ok(&["meeting", "start", "--worker", "counsel", "--title", "Talk", "hi"]);
    assert_eq!(out.lines().next(), Some("talk-2"), "{out}");
}

#[test]
fn plan_create_picks_a_free_id_and_refuses_a_taken_one() {
    let p = Project::new(&["scribe"]);
    let waves = p.root.join("waves.yaml");
    std::fs::write(&waves, "- - {id: a, worker: scribe, prompt: x}\n").expect("write");
    let waves = waves.to_str().expect("utf8");
    git(&p.root, &["branch", "claude/verify/ship"]);
    assert_eq!(p.ok(&["plan", "create", "--title", "Ship", "--draft", waves]).trim(), "ship-2");
    assert_eq!(p.ok(&["plan", "create", "--title", "Ship", "--draft", waves]).trim(), "ship-3");
    p.commit_on_integration("x.md", "x\n", "task\n\nGuild-Hall-Task: sail:exec:wave-1:a");
    refused(&p, &["plan", "create", "--title", "t", "--id", "sail", "--draft", waves], "Guild-Hall-Task: sail:exec:wave-1:a");
    refused(&p, &["plan", "create", "--title", "t", "--id", "ship", "--draft", waves], "branch claude/verify/ship");
    assert!(!p.root.join(".lore/plans/ship.md").exists() && !p.root.join(".lore/plans/sail.md").exists());
}

#[test]
fn worker_dispatch_ids_are_unique_and_never_one_that_is_held() {
    let p = Project::new(&["scribe"]);
    // Manual dispatch: the reconciler a dispatch starts leaves the jobs waiting.
    p.config("dispatch: manual\n");
    git(&p.root, &["branch", "claude/commission/fix-it"]);
    let dispatch = || {
        let out = p.ok(&["job", "dispatch", "--description", "Fix it", "--task", "do it", "--config", r#"{"worker": "scribe"}"#]);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
        v["jobId"].as_str().unwrap_or_else(|| panic!("{v}")).to_string()
    };
    // REQ-WD-7: unique across every job ever dispatched, on any clone — the description's slug
    // and a random suffix, never the slug alone (its branch is held here).
    let (one, two) = (dispatch(), dispatch());
    for job in [&one, &two] {
        let suffix = job.strip_prefix("fix-it-").unwrap_or_else(|| panic!("{job}"));
        assert!(suffix.len() == 8 && suffix.bytes().all(|b| b.is_ascii_hexdigit()), "{job}");
        assert!(p.root.join(format!(".lore/commissions/{job}.md")).exists(), "{job}");
    }
    assert_ne!(one, two);
}

/// A project where commission `hello` completed, then its artifact was deleted and a new one
/// copied in (or generated) under its id, with a `created:` stamp of its own, asking for
/// `output`. (Without a stamp of its own it is the same commission: see `git::another_home`.)
fn hello_written_over(output: &str) -> (Project, String) {
    let p = Project::new(&["scribe"]);
    let id = p.create("scribe", "Hello", "output: .lore/reports/one.md");
    p.settle();
    assert_eq!(p.status(&id), "completed");
    std::fs::remove_file(p.artifact_path(&id)).expect("rm");
    let text = format!("---\nworker: scribe\nstatus: pending\ncreated: 2030-01-01T00:00:00.000Z\n---\noutput: {output}\n");
    p.write_commission(&id, &text);
    (p, id)
}

#[test]
fn a_new_artifact_over_an_ended_id_runs_as_new_work_on_a_new_branch() {
    let (p, id) = hello_written_over(".lore/reports/again.md");
    p.settle();
    let s = p.status_json(&id);
    assert_eq!(s["status"], "completed", "{s}");
    assert!(s.get("reason").is_none_or(|r| r.is_null()), "not refused: {s}");
    let art = p.artifact(&id);
    assert!(art.contains("attempt: 2") && art.contains("branch: claude/commission/hello+2"), "{art}");
    assert!(art.contains("again.md"), "its own result: {art}");
    let timeline = p.timeline(&id);
    assert!(kinds(&timeline).contains(&"new-work".to_string()), "{:?}", kinds(&timeline));
    assert!(trailers(&p).contains("Guild-Hall-Commission: hello attempt 2"));
    assert!(landed(&p, ".lore/reports/again.md").contains("commission hello."));
    // The earlier work is where it was.
    assert!(landed(&p, ".lore/reports/one.md").contains("commission hello."));
    assert!(git(&p.root, &["show", "claude/commission/hello:.lore/reports/one.md"]).contains("commission hello."));
}

#[test]
fn a_fresh_home_never_reuses_an_attempt_branch_made_elsewhere() {
    let (p, id) = hello_written_over(".lore/reports/elsewhere.md");

    // Another home over the same checkout: it knows nothing of attempt 1, git does.
    let other = p.tmp.path().join("other-home");
    let run = |args: &[&str]| {
        let out = p.cmd().env("GUILD_HALL_HOME", &other).args(args).output().expect("runs");
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    };
    run(&["init"]);
    run(&["reconcile", "--once", "--wait", "--timeout", "120s"]);
    let art = p.artifact(&id);
    assert!(art.contains("status: completed") && art.contains("branch: claude/commission/hello+2"), "{art}");
    assert!(trailers(&p).contains("Guild-Hall-Commission: hello attempt 2"), "{}", trailers(&p));
    assert!(landed(&p, ".lore/reports/elsewhere.md").contains("commission hello."), "the new work landed");
    // Attempt 1's branch holds attempt 1's work only.
    let first = git(&p.root, &["ls-tree", "-r", "--name-only", "claude/commission/hello"]);
    assert!(first.contains(".lore/reports/one.md") && !first.contains("elsewhere.md"), "{first}");
}
