//! Usage limits that pause: an attempt its agent's rate or usage limit ended is no failure. The
//! commission waits `pending` with `not_before:` (the reset time, else a backoff), its partial
//! work kept on the attempt's branch, and runs again after it; a kill at any step converges.
//! The scripted worker `rationed` reports its limit with guild-hall's own `limit` line.

use crate::common::*;
use serde_json::Value;

fn frontmatter(p: &Project, id: &str) -> serde_yaml_ng::Value {
    let text = p.artifact(id);
    let yaml = text.split("---\n").nth(1).expect("frontmatter");
    serde_yaml_ng::from_str(yaml).expect("yaml")
}

fn not_before(p: &Project, id: &str) -> Option<chrono::DateTime<chrono::Utc>> {
    let v = frontmatter(p, id);
    let t = v["not_before"].as_str()?;
    Some(chrono::DateTime::parse_from_rfc3339(t).expect("rfc3339").with_timezone(&chrono::Utc))
}

fn events(p: &Project, id: &str, kind: &str) -> Vec<Value> {
    p.timeline(id).into_iter().filter(|e| e["kind"] == kind).collect()
}

fn ts(e: &Value) -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::parse_from_rfc3339(e["ts"].as_str().expect("ts")).expect("ts").with_timezone(&chrono::Utc)
}

/// Move a paused commission's time on, as a person may: its `not_before:` set to a time passed.
fn move_time_on(p: &Project, id: &str) {
    let text = p.artifact(id);
    let line = text.lines().find(|l| l.starts_with("not_before:")).expect("a not_before line").to_string();
    std::fs::write(p.artifact_path(id), text.replace(&line, "not_before: 2000-01-01T00:00:00Z")).expect("write");
}

#[test]
fn a_usage_limit_pauses_the_commission_until_its_reset_and_spends_no_failure() {
    let p = Project::new(&["rationed"]);
    // Its reset an hour away: the pause is seen whatever the machine's load, then time is moved.
    let id = p.create("rationed", "Metered", "limited-attempts: 1\nresets-in: 3600\nWrite it.");
    p.settle();
    // Paused, not failed: pending, with the reset time and why.
    assert_eq!(p.status(&id), "pending", "{}", p.artifact(&id));
    let limited = events(&p, &id, "limited");
    assert_eq!(limited.len(), 1, "{limited:?}");
    assert_eq!(limited[0]["attempt"], 1);
    assert!(limited[0]["text"].as_str().is_some_and(|t| t.contains("usage limit reached (attempt 1)")), "{limited:?}");
    let resets_at = limited[0]["resets_at"].as_str().expect("the reset time the worker said");
    let at = not_before(&p, &id).expect("not_before");
    assert_eq!(at, chrono::DateTime::parse_from_rfc3339(resets_at).expect("time").with_timezone(&chrono::Utc), "not_before is the reset");
    let reason = frontmatter(&p, &id)["reason"].as_str().unwrap_or("").to_string();
    assert!(reason.contains("rationed hit a usage or rate limit") && reason.contains("not a failure"), "{reason}");
    assert!(!p.timeline(&id).iter().any(|e| e["to"] == "failed"), "never failed");
    // The attempt's work is kept on its branch.
    let branch = format!("claude/commission/{id}");
    let kept = git(&p.root, &["ls-tree", "-r", "--name-only", &branch]);
    assert!(kept.contains(&format!(".lore/partial/{id}-1.md")), "{branch}: {kept}");
    // `check` says why it waits.
    let check = p.ok(&["check"]);
    assert!(check.contains(&format!("commission {id} waits until")), "{check}");
    // Not before its reset: another pass leaves it waiting.
    p.ok(&["reconcile", "--once"]);
    assert_eq!(p.status(&id), "pending", "{}", p.artifact(&id));
    // Dispatched again once the reset has passed (time moved on), and done.
    move_time_on(&p, &id);
    p.pass_until("the commission to complete after its reset", |p| p.status(&id) == "completed");
    let v = frontmatter(&p, &id);
    assert_eq!(v["attempt"], 2, "{}", p.artifact(&id));
    assert!(v.get("not_before").is_none(), "not_before goes with the dispatch: {}", p.artifact(&id));
    let dispatched: Vec<Value> = p.timeline(&id).into_iter().filter(|e| e["kind"] == "status" && e["to"] == "dispatched").collect();
    assert_eq!(dispatched.len(), 2, "dispatched again once, after time moved on: {dispatched:?}");
}

#[test]
fn without_a_reset_time_the_wait_doubles_with_each_limit_in_a_row() {
    let p = Project::new(&["rationed"]);
    let id = p.create("rationed", "Backoff", "limited-attempts: 2\nWrite it.");
    p.settle();
    assert_eq!(p.status(&id), "pending");
    let first = events(&p, &id, "limited");
    let wait = |e: &Value| (not_before(&p, &id).expect("not_before") - ts(e)).num_seconds();
    assert!((55..=61).contains(&wait(&first[0])), "about a minute: {}", wait(&first[0]));
    assert!(first[0].get("resets_at").is_none(), "{first:?}");
    // `reconcile --wait` took it as settled for now, as it does `blocked`; time moved on, it runs.
    move_time_on(&p, &id);
    p.settle();
    let second = events(&p, &id, "limited");
    assert_eq!(second.len(), 2, "{second:?}");
    assert_eq!((second[1]["attempt"].as_u64(), second[1]["in_a_row"].as_u64()), (Some(2), Some(2)));
    assert!((115..=121).contains(&wait(&second[1])), "about two minutes: {}", wait(&second[1]));
    move_time_on(&p, &id);
    p.settle();
    assert_eq!(p.status(&id), "completed", "{}", p.artifact(&id));
}

#[test]
fn a_pass_killed_while_a_limit_is_handled_converges() {
    let p = Project::new(&["rationed"]);
    let id = p.create("rationed", "Killed", "limited-attempts: 1\nresets-in: 3\nwait-for-file: .lore/go\nWrite it.");
    p.ok(&["reconcile", "--once"]);
    // The worker is held until the pass that started it is over: the limit is handled by the
    // passes killed below, whatever the machine's load.
    let worktree = p.worktree(&id);
    wait_for("the worker's worktree", || worktree.join(".git").exists());
    std::fs::create_dir_all(worktree.join(".lore")).expect("mkdir");
    std::fs::write(worktree.join(".lore/go"), "go\n").expect("write");
    let exit = p.state_dir(&id).join("exit.json");
    wait_for("the limited attempt to end", || exit.exists());
    // Killed while the pause is written, then while its work is secured.
    p.pass_until_fault("commission-apply:1");
    p.pass_until_fault("cleanup:1");
    p.settle();
    // Paused (or, on a loaded machine, already run again after its reset): never failed.
    assert!(matches!(p.status(&id).as_str(), "pending" | "dispatched" | "in_progress" | "completed"), "{}", p.artifact(&id));
    assert!(!p.timeline(&id).iter().any(|e| e["to"] == "failed"));
    assert_eq!(events(&p, &id, "limited").len(), 1, "said once");
    assert!(git(&p.root, &["ls-tree", "-r", "--name-only", &format!("claude/commission/{id}")]).contains("partial"));
    p.pass_until("completion after the reset", |p| p.status(&id) == "completed");
    assert_eq!(frontmatter(&p, &id)["attempt"], 2);
}

/// `max_concurrent: 1` in worker.yaml: of two commissions for the package, one runs and the
/// other waits `blocked`, saying why; once the first has ended the second runs, never both.
#[test]
fn max_concurrent_runs_one_attempt_of_the_package_at_a_time() {
    let p = Project::new(&[]);
    p.script_worker(
        "solo",
        "sparse",
        "sleep 4\nmkdir -p .lore/reports\necho done > .lore/reports/$GUILD_HALL_ID.md\n\"$GUILD_HALL_BIN\" toolbox submit-result --summary done --artifact .lore/reports/$GUILD_HALL_ID.md",
    );
    let yaml = p.root.join(".lore/workers/solo/worker.yaml");
    let text = std::fs::read_to_string(&yaml).expect("worker.yaml");
    std::fs::write(&yaml, format!("{text}max_concurrent: 1\n")).expect("write");
    let listed = p.ok(&["workers", "--json"]);
    assert!(listed.contains("\"max_concurrent\": 1"), "{listed}");
    assert!(p.ok(&["workers"]).contains("max_concurrent: 1"));
    let a = p.create("solo", "First", "One.");
    let b = p.create("solo", "Second", "Two.");
    p.pass_until("the second to wait for the package", |p| p.status(&b) == "blocked");
    assert!(matches!(p.status(&a).as_str(), "dispatched" | "in_progress"), "{}", p.artifact(&a));
    let reason = frontmatter(&p, &b)["reason"].as_str().unwrap_or("").to_string();
    assert!(reason.contains("worker solo runs at most 1 attempt at once") && reason.contains("max_concurrent: 1"), "{reason}");
    p.pass_until("both to complete", |p| p.status(&a) == "completed" && p.status(&b) == "completed");
    // Never both at once: the second's worker started once the first's had ended, as each
    // one's shim recorded it (a status event's time is its pass's, taken before the pass
    // looked: it may come before an end that pass saw).
    let time = |id: &str, file: &str, key: &str| {
        let v: Value = serde_json::from_slice(&std::fs::read(p.state_dir(id).join(file)).expect(file)).expect("json");
        chrono::DateTime::parse_from_rfc3339(v[key].as_str().expect(key)).expect("time")
    };
    let (ended, started) = (time(&a, "exit.json", "finished_at"), time(&b, "run.json", "started_at"));
    assert!(started >= ended, "the second started ({started}) once the first had ended ({ended})");
}
