//! What a teammate's clone of a CI origin makes of the work CI finished (commissions, plans): CI
//! writes the statuses on the integration branch only, so the clone's `main` still says
//! `pending`; nothing is run again, `status`, `check` and `reconcile` say so in one line, and
//! `guild-hall land` brings the statuses in. A new attempt there never reuses an attempt whose
//! trailer is on the integration branch though its branch was never pushed. A bare origin,
//! clones, fresh homes.

use std::path::Path;

use serde_json::Value;

use crate::common::git;
use crate::git::ci::{attempts_in, attempts_under, guild_hall, Origin};

/// The one line every face prints for `a`, ended on claude/main while the checkout says pending.
const LINE: &str = "commission a: completed on claude/main (attempt 1) while this checkout says pending: it is not run again here. `guild-hall land` brings the statuses into your branch";

/// An origin whose `main` holds pending commission `a`, after one `guild-hall ci` run finished it
/// (its status and trailer on origin's `claude/main`, `main` untouched).
fn after_ci() -> Origin {
    let origin = Origin::new(&["a"]);
    let (code, out, err) = guild_hall(origin.tmp.path(), &origin.clone("ci-run"), &["ci", "--timeout", "120s"]);
    assert_eq!(code, 0, "the CI run succeeds:\n{out}{err}");
    assert_eq!(origin.trailer_count("Guild-Hall-Commission: a attempt 1"), 1, "{out}{err}");
    assert!(origin.git(&["show", "claude/main:.lore/commissions/a.md"]).contains("status: completed"));
    assert!(origin.git(&["show", "main:.lore/commissions/a.md"]).contains("status: pending"));
    origin
}

fn row(tmp: &Path, clone: &Path) -> Value {
    let (code, out, err) = guild_hall(tmp, clone, &["status", "a", "--json"]);
    assert_eq!(code, 0, "{out}{err}");
    serde_json::from_str(&out).expect("status --json")
}

/// Review git #1: a teammate's fresh clone with a fresh home ran every commission CI finished
/// again, while `status` said pending and `check` said ok.
#[test]
fn a_teammates_clone_runs_nothing_ci_finished_and_every_face_says_why() {
    let origin = after_ci();
    let tmp = origin.tmp.path();
    let person = origin.clone("person");
    let (code, out, err) = guild_hall(tmp, &person, &["init"]);
    assert_eq!(code, 0, "{out}{err}");
    let artifact = person.join(".lore/commissions/a.md");
    let before = std::fs::read(&artifact).expect("read");

    let (code, out, err) = guild_hall(tmp, &person, &["reconcile", "--dry-run"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(!out.contains("dispatch"), "nothing would be dispatched:\n{out}");
    assert!(out.contains(LINE), "the dry run says it:\n{out}");

    let (code, out, err) = guild_hall(tmp, &person, &["reconcile", "--once", "--wait", "--timeout", "60s"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains(LINE), "the pass says it too:\n{out}");
    let home = tmp.join("home-person");
    assert_eq!(attempts_in(&home, "a"), 0, "no worker started for a:\n{out}{err}");
    assert_eq!(std::fs::read(&artifact).expect("read"), before, "the checkout's file is the person's: never rewritten");
    assert_eq!(origin.trailer_count("Guild-Hall-Commission: a attempt 1"), 1);

    let r = row(tmp, &person);
    assert_eq!(r["status"], "pending", "the checkout's file as it is: {r}");
    assert_eq!(r["integrated"].as_str(), LINE.strip_prefix("commission a: "), "{r}");
    let (code, out, err) = guild_hall(tmp, &person, &["status"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("completed on claude/main (attempt 1)"), "the table's note says it:\n{out}");

    let (code, out, err) = guild_hall(tmp, &person, &["check"]);
    assert_eq!(code, 0, "nothing wrong in the artifacts:\n{out}{err}");
    assert!(out.contains(LINE), "check says it:\n{out}");

    // `land` brings the statuses into the person's branch: the checkout then says completed.
    let (code, out, err) = guild_hall(tmp, &person, &["land"]);
    assert_eq!(code, 0, "{out}{err}");
    let r = row(tmp, &person);
    assert_eq!(r["status"], "completed", "{r}");
    assert_eq!(r["integrated"], Value::Null, "{r}");
    let (code, out, err) = guild_hall(tmp, &person, &["check"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(!out.contains("claude/main (attempt"), "nothing left to say:\n{out}");
    assert_eq!(attempts_in(&home, "a"), 0);
}

/// Review truth #3: new work under the id (another body) in a clone of a CI origin, which has
/// the trailer of attempt 1 but not its branch (`ci` pushes only the integration branch), was
/// dispatched as attempt 1 again: a second commit with the same trailer.
#[test]
fn a_new_attempt_in_a_clone_goes_past_the_attempts_whose_trailers_landed() {
    let origin = after_ci();
    let tmp = origin.tmp.path();
    let person = origin.clone("person");
    let (code, out, err) = guild_hall(tmp, &person, &["init"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(!git(&person, &["branch", "-a"]).contains("claude/commission/a"), "no branch of a's attempt was pushed");
    let artifact = person.join(".lore/commissions/a.md");
    let text = std::fs::read_to_string(&artifact).expect("read").replace("Write the report of a.", "Write the report of a, in French.");
    std::fs::write(&artifact, text).expect("write");

    let r = row(tmp, &person);
    assert_eq!(r["integrated"], Value::Null, "another body is other work: {r}");
    let (code, out, err) = guild_hall(tmp, &person, &["reconcile", "--dry-run"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("dispatch attempt 2 on claude/commission/a+2"), "attempt 1's trailer is on claude/main:\n{out}");
}

/// `branch`'s tip made again with another date: the same files, parent and message, another
/// commit (as an `init` a second later than another's makes).
fn redate(repo: &Path, branch: &str) {
    let tip = git(repo, &["rev-parse", branch]);
    let (tip, message) = (tip.trim(), git(repo, &["log", "-1", "--format=%B", branch]));
    let out = std::process::Command::new("git")
        .current_dir(repo)
        .env("GIT_COMMITTER_DATE", "2001-02-03T04:05:06Z")
        .env("GIT_AUTHOR_DATE", "2001-02-03T04:05:06Z")
        .args(["commit-tree", &format!("{tip}^{{tree}}"), "-p", &format!("{tip}^"), "-m", message.trim_end()])
        .output()
        .expect("git commit-tree");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    git(repo, &["update-ref", &format!("refs/heads/{branch}"), String::from_utf8_lossy(&out.stdout).trim(), tip]);
}

/// Review 2, team #1: a laptop whose `claude/main` was made before CI first ran (its `init`
/// came first) re-ran what CI finished after a `git pull`, and `land` said there was nothing
/// to land. The remote's copy counts, and `sync`/`land` catch the local branch up with it:
/// the laptop's branch holds nothing but its own beginning, which CI's run began anew (the
/// two differ but in their dates: this test failed under load, when the two `init`s fell in
/// different seconds).
#[test]
fn a_laptop_whose_integration_branch_predates_ci_runs_nothing_ci_finished_and_lands_it() {
    let origin = Origin::new(&["a"]);
    let tmp = origin.tmp.path();
    let laptop = origin.clone("laptop");
    let (code, out, err) = guild_hall(tmp, &laptop, &["init"]);
    assert_eq!(code, 0, "{out}{err}");
    redate(&laptop, "claude/main");
    let (code, out, err) = guild_hall(tmp, &origin.clone("ci-run"), &["ci", "--timeout", "120s"]);
    assert_eq!(code, 0, "the CI run succeeds:\n{out}{err}");
    git(&laptop, &["fetch", "-q", "origin"]);

    let on_origin = "commission a: completed on origin/claude/main (attempt 1) while this checkout says pending";
    let (code, out, err) = guild_hall(tmp, &laptop, &["reconcile", "--dry-run"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(!out.contains("dispatch"), "nothing would be dispatched:\n{out}");
    assert!(out.contains(on_origin), "{out}");
    let (code, out, err) = guild_hall(tmp, &laptop, &["reconcile", "--once", "--wait", "--timeout", "60s"]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(attempts_in(&tmp.join("home-laptop"), "a"), 0, "no worker started for a:\n{out}{err}");
    let (code, out, err) = guild_hall(tmp, &laptop, &["check"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains(on_origin), "{out}");

    let (code, out, err) = guild_hall(tmp, &laptop, &["land", "--dry-run"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("would bring claude/main to origin/claude/main, which is ahead: the local one held nothing but where it began"),
        "{out}"
    );
    let (code, out, err) = guild_hall(tmp, &laptop, &["land"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("moved claude/main to origin/claude/main, which was ahead: the local one held nothing but where it began"),
        "{out}"
    );
    assert_eq!(row(tmp, &laptop)["status"], "completed", "CI's status landed in main");
    assert_eq!(
        git(&laptop, &["rev-parse", "claude/main"]).trim(),
        git(&laptop, &["rev-parse", "origin/claude/main"]).trim(),
        "the local integration branch caught up"
    );
}

/// A local integration branch with anything of its own past its beginning (here a file a
/// person committed on it) is never moved to the remote's copy: `land` says the two diverged
/// and lands the local one as it is.
#[test]
fn a_laptop_whose_integration_branch_has_work_of_its_own_is_never_moved_to_the_remotes() {
    let origin = Origin::new(&["a"]);
    let tmp = origin.tmp.path();
    let laptop = origin.clone("laptop");
    let (code, out, err) = guild_hall(tmp, &laptop, &["init"]);
    assert_eq!(code, 0, "{out}{err}");
    git(&laptop, &["switch", "-q", "claude/main"]);
    std::fs::write(laptop.join("mine.txt"), "mine\n").expect("write");
    git(&laptop, &["add", "mine.txt"]);
    git(&laptop, &["-c", "user.name=P", "-c", "user.email=p@example.com", "commit", "-qm", "mine"]);
    git(&laptop, &["switch", "-q", "main"]);
    let mine = git(&laptop, &["rev-parse", "claude/main"]);
    let (code, out, err) = guild_hall(tmp, &origin.clone("ci-run"), &["ci", "--timeout", "120s"]);
    assert_eq!(code, 0, "the CI run succeeds:\n{out}{err}");
    git(&laptop, &["fetch", "-q", "origin"]);

    let (code, out, err) = guild_hall(tmp, &laptop, &["land"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("claude/main and origin/claude/main have diverged"), "{out}");
    assert_eq!(git(&laptop, &["rev-parse", "claude/main"]), mine, "the local branch is where it was");
    assert_eq!(std::fs::read_to_string(laptop.join("mine.txt")).expect("landed"), "mine\n");
}

/// The plan side of review git #1: CI finished plan `built` (its status and its task's trailer
/// on origin's `claude/main`, `main` still saying pending); a teammate's fresh clone with a
/// fresh home started it again: wave 1 (its task skipped by its trailer), then the verify, the
/// checkout's file rewritten.
#[test]
fn a_teammates_clone_runs_no_plan_ci_finished_and_every_face_says_why() {
    const PLAN_LINE: &str = "plan built: completed on claude/main while this checkout says pending: it is not run again here. `guild-hall land` brings the statuses into your branch";
    let origin = Origin::new(&[]);
    let tmp = origin.tmp.path();
    // Every verify run leaves a line here (outside every clone, so any home's run is counted).
    let trace = tmp.join("verify-runs");
    let plan = format!(
        "---\ntitle: built\nstatus: pending\nverify: [sh, -c, \"echo ran >> {}\"]\nwaves:\n  - - {{id: one, worker: mason, prompt: \"write: built.txt built\"}}\n---\nBuild it.\n",
        trace.display()
    );
    origin.commit_on("main", "main", ".lore/plans/built.md", &plan);
    let (code, out, err) = guild_hall(tmp, &origin.clone("ci-run"), &["ci", "--timeout", "120s"]);
    assert_eq!(code, 0, "the CI run succeeds:\n{out}{err}");
    let verify_runs = || std::fs::read_to_string(&trace).unwrap_or_default().lines().count();
    assert_eq!(verify_runs(), 1, "CI verified the wave once:\n{out}{err}");
    let trailer = "Guild-Hall-Task: built:exec:wave-1:task-1";
    assert_eq!(origin.trailer_count(trailer), 1, "{out}{err}");
    assert!(origin.git(&["show", "claude/main:.lore/plans/built.md"]).contains("status: completed"));
    assert!(origin.git(&["show", "main:.lore/plans/built.md"]).contains("status: pending"));

    let person = origin.clone("person");
    let (code, out, err) = guild_hall(tmp, &person, &["init"]);
    assert_eq!(code, 0, "{out}{err}");
    let artifact = person.join(".lore/plans/built.md");
    let before = std::fs::read(&artifact).expect("read");

    let (code, out, err) = guild_hall(tmp, &person, &["reconcile", "--dry-run"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(!out.contains("wave-start") && !out.contains("task-start") && !out.contains("plan-update"), "nothing would be done:\n{out}");
    assert!(out.contains(PLAN_LINE), "the dry run says it:\n{out}");

    let (code, out, err) = guild_hall(tmp, &person, &["reconcile", "--once", "--wait", "--timeout", "60s"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains(PLAN_LINE), "the pass says it too:\n{out}");
    let home = tmp.join("home-person");
    assert_eq!(attempts_under(&home, "plans/built/tasks/built-exec-wave-1-task-1"), 0, "no task started:\n{out}{err}");
    assert_eq!(verify_runs(), 1, "the verify did not run again:\n{out}{err}");
    assert_eq!(std::fs::read(&artifact).expect("read"), before, "the checkout's file is the person's: never rewritten");
    assert!(!person.join(".lore/plans/built.timeline.jsonl").exists(), "nothing logged in the checkout");
    assert_eq!(origin.trailer_count(trailer), 1);

    let shown = plan_json(tmp, &person);
    assert_eq!(shown["status"], "pending", "the checkout's file as it is: {shown}");
    assert_eq!(shown["integrated"].as_str(), PLAN_LINE.strip_prefix("plan built: "), "{shown}");
    let (code, out, err) = guild_hall(tmp, &person, &["plan", "show", "built"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("completed on claude/main while this checkout says pending"), "{out}");
    let (code, out, err) = guild_hall(tmp, &person, &["status"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("completed on claude/main while this checkout says pending"), "the plans table says it:\n{out}");
    let (code, out, err) = guild_hall(tmp, &person, &["check"]);
    assert_eq!(code, 0, "nothing wrong in the artifacts:\n{out}{err}");
    assert!(out.contains(PLAN_LINE), "check says it:\n{out}");

    // Another text is another plan: it would run.
    std::fs::write(&artifact, plan.replace("Build it.", "Build it again.")).expect("write");
    assert_eq!(plan_json(tmp, &person)["integrated"], Value::Null);
    let (code, out, err) = guild_hall(tmp, &person, &["reconcile", "--dry-run"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("start wave 1") && !out.contains(PLAN_LINE), "{out}");
    std::fs::write(&artifact, &before).expect("write");

    // `land` brings the statuses into the person's branch: the checkout then says completed.
    let (code, out, err) = guild_hall(tmp, &person, &["land"]);
    assert_eq!(code, 0, "{out}{err}");
    let shown = plan_json(tmp, &person);
    assert_eq!(shown["status"], "completed", "{shown}");
    assert_eq!(shown["integrated"], Value::Null, "{shown}");
    let (code, out, err) = guild_hall(tmp, &person, &["reconcile", "--once", "--wait", "--timeout", "60s"]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = guild_hall(tmp, &person, &["check"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(!out.contains("completed on claude/main"), "nothing left to say:\n{out}");
    assert_eq!(verify_runs(), 1, "{out}{err}");
    assert_eq!(attempts_under(&home, "plans/built/tasks/built-exec-wave-1-task-1"), 0);
}

fn plan_json(tmp: &Path, clone: &Path) -> Value {
    let (code, out, err) = guild_hall(tmp, clone, &["plan", "show", "built", "--json"]);
    assert_eq!(code, 0, "{out}{err}");
    serde_json::from_str(&out).expect("plan show --json")
}

/// Review 3, #2: the documented retry — `land` CI's statuses, set the failed commission back to
/// `pending` on main, push — was taken for work that "ended on origin/claude/main" by the next
/// CI run, whose checkout already holds that copy: nothing ran.
#[test]
fn a_retry_after_landing_runs_in_the_next_ci_run() {
    let origin = Origin::new(&[]);
    let tmp = origin.tmp.path();
    let ghost = "---\ntitle: Ghost\nworker: ghost\nstatus: pending\n---\nWrite the report of r.\n";
    // A package whose command fails at once: the attempt fails (a worker with no package at
    // all, or a command not there, would wait, not fail).
    origin.commit_on("main", "main", ".lore/workers/ghost/worker.yaml", "name: ghost\ncommand: [\"/bin/false\"]\n");
    origin.commit_on("main", "main", ".lore/commissions/r.md", ghost);
    let (code, out, err) = guild_hall(tmp, &origin.clone("ci-1"), &["ci", "--timeout", "120s"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(origin.git(&["show", "claude/main:.lore/commissions/r.md"]).contains("status: failed"), "{out}{err}");

    // The person lands CI's statuses, then asks for a retry with a worker that exists.
    let person = origin.clone("person");
    let (code, out, err) = guild_hall(tmp, &person, &["init"]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = guild_hall(tmp, &person, &["land"]);
    assert_eq!(code, 0, "{out}{err}");
    let artifact = person.join(".lore/commissions/r.md");
    let landed = std::fs::read_to_string(&artifact).expect("read");
    assert!(landed.contains("status: failed"), "{landed}");
    std::fs::write(&artifact, landed.replace("status: failed", "status: pending").replace("worker: ghost", "worker: scribe"))
        .expect("write");
    git(&person, &["-c", "user.name=P", "-c", "user.email=p@example.com", "commit", "-q", "-am", "retry r"]);
    git(&person, &["push", "-q", "origin", "main"]);

    let ci2 = origin.clone("ci-2");
    let (code, out, err) = guild_hall(tmp, &ci2, &["ci", "--timeout", "120s"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(!out.contains("failed on origin/claude/main"), "the retry is not taken for the ended attempt:\n{out}");
    assert_eq!(attempts_in(&tmp.join("home-ci-2"), "r"), 1, "the retry ran:\n{out}{err}");
    assert!(origin.git(&["show", "claude/main:.lore/commissions/r.md"]).contains("status: completed"), "{out}{err}");
}
