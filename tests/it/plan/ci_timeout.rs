//! CI runs of a plan longer than `--timeout`: each run ends with a wave still at work, and the
//! next run, from a fresh clone and a fresh home, takes the waves whose task trailers are on the
//! integration branch as finished (git is the truth) instead of running and landing them again.

use std::path::Path;

use crate::git::ci::{attempts_under, run_guild_hall, Origin};

/// Runs of the wave task `slug` of plan `built` in a home.
fn task_attempts(home: &Path, slug: &str) -> usize {
    attempts_under(home, &format!("plans/built/tasks/{slug}"))
}

#[test]
fn a_plan_cut_short_by_the_ci_timeout_goes_on_from_its_landed_waves_in_the_next_run() {
    let origin = Origin::new(&[]);
    let plan = "---\ntitle: built\nstatus: pending\nwaves:\n  - - {id: one, worker: mason, prompt: \"write: built.txt built\"}\n  - - {id: two, worker: mason, prompt: \"sleep: 600\"}\n---\n";
    origin.commit_on("main", "main", ".lore/plans/built.md", plan);
    let first_wave = "Guild-Hall-Task: built:exec:wave-1:";
    let landed =
        |origin: &Origin| origin.git(&["log", "claude/main", "--format=%B"]).lines().filter(|l| l.trim().starts_with(first_wave)).count();

    let clone = origin.clone("first");
    let (code, out, err) = run_guild_hall(origin.tmp.path(), &clone, &["ci", "--timeout", "10s"], true);
    assert_eq!(code, 1, "the run times out in wave 2:\n{out}{err}");
    assert_eq!(landed(&origin), 1, "wave 1 landed and was pushed:\n{out}{err}\n{}", origin.git(&["log", "claude/main"]));
    assert!(task_attempts(&origin.tmp.path().join("home-first"), "built-exec-wave-1-task-1") >= 1, "{out}{err}");

    let clone = origin.clone("second");
    let (code, out, err) = run_guild_hall(origin.tmp.path(), &clone, &["ci", "--timeout", "10s"], true);
    assert_eq!(code, 1, "wave 2 is still too long:\n{out}{err}");
    let home = origin.tmp.path().join("home-second");
    assert_eq!(task_attempts(&home, "built-exec-wave-1-task-1"), 0, "wave 1 is not run again:\n{out}{err}");
    assert!(!out.contains("start built:exec:wave-1"), "{out}{err}");
    assert_eq!(task_attempts(&home, "built-exec-wave-2-task-1"), 1, "the run goes on with wave 2:\n{out}{err}");
    assert_eq!(landed(&origin), 1, "wave 1 landed once:\n{}", origin.git(&["log", "claude/main"]));
}
