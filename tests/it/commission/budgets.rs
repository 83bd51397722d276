//! Budgets: an attempt past its `resources.max_tokens` (or `max_budget_usd`) is stopped by its
//! shim mid-run and fails with the figures, its work kept on its branch, told to `notify:`
//! once; a daily `budget:` reached holds new commissions `blocked` until the day resets (the
//! day moved with `GUILD_HALL_BUDGET_NOW`), while the attempt already running finishes.

use std::path::PathBuf;

use serde_json::Value;

use crate::common::*;

/// A notify command that writes each event to a file of its own under `told/`.
fn notify(p: &Project) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let dir = p.tmp.path().join("told");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let script = p.tmp.path().join("notify.sh");
    let body = format!("#!/bin/sh\nset -eu\ncd '{}'\ncat > .event.$$ && mv .event.$$ event.$$\n", dir.display());
    std::fs::write(&script, body).expect("write");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    script
}

/// The events told so far of `event`'s kind.
fn told(p: &Project, event: &str) -> Vec<Value> {
    let dir = p.tmp.path().join("told");
    std::fs::read_dir(&dir)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_string_lossy().starts_with("event."))
                .map(|e| serde_json::from_slice::<Value>(&std::fs::read(e.path()).expect("read")).expect("one JSON event"))
                .filter(|e| e["event"] == event)
                .collect()
        })
        .unwrap_or_default()
}

/// Every notify supervisor started has ended.
fn quiet(p: &Project) {
    let mark = format!("{}/", p.tmp.path().display());
    wait_for("the notify commands to end", || processes_naming(&mark).iter().all(|(_, cmd)| !cmd.contains("notify")));
}

#[test]
fn a_worker_past_its_token_budget_is_stopped_mid_run_and_fails_with_its_work_kept() {
    let p = Project::new(&[]);
    let script = notify(&p);
    p.config(&format!("notify: [\"{}\"]\n", script.display()));
    // It works, reports what its model calls used, and would go on for a minute.
    p.script_worker(
        "spender",
        "sparse",
        r#"echo "half of it" > made.txt
"$GUILD_HALL_BIN" toolbox report-usage --input-tokens 60000 --output-tokens 1000
"$GUILD_HALL_BIN" toolbox report-usage --input-tokens 60000 --output-tokens 400
for i in $(seq 60); do sleep 1; done
"$GUILD_HALL_BIN" toolbox submit-result --summary "never reached""#,
    );
    p.write_commission("spend", "---\nworker: spender\nresources:\n  max_tokens: 100000\n---\nSpend.\n");
    p.ok(&["reconcile", "--once"]);
    wait_for("the shim to stop it for its budget", || p.state_dir("spend").join("attempt-1.budget.json").exists());
    p.settle();
    let s = p.status_json("spend");
    assert_eq!(s["status"], "failed", "{s}");
    assert_eq!(s["reason"], "budget exceeded: 121400 of 100000 tokens; its work is kept on its branch", "{}", p.ok(&["logs", "spend"]));
    // Its work is on its branch, nothing merged.
    assert_eq!(git(&p.root, &["show", "claude/commission/spend:made.txt"]), "half of it\n");
    assert!(!p.timeline("spend").iter().any(|e| e["kind"] == "result"), "stopped before it submitted");
    let budget: Vec<Value> = p.timeline("spend").into_iter().filter(|e| e["kind"] == "budget").collect();
    assert_eq!(budget.len(), 1, "{budget:?}");
    assert_eq!(budget[0]["text"], "budget exceeded: 121400 of 100000 tokens");
    // Its usage is what it reported.
    let usage: Vec<Value> = p.timeline("spend").into_iter().filter(|e| e["kind"] == "usage").collect();
    assert_eq!(usage[0]["input_tokens"].as_u64(), Some(120000));
    let log = p.ok(&["logs", "spend"]);
    assert!(log.contains("[guild-hall] budget exceeded: 121400 of 100000 tokens: the attempt is stopped"), "{log}");
    // Told once, as a `budget` event (its failure is told as well).
    wait_for("the budget to be told", || !told(&p, "budget").is_empty());
    p.ok(&["reconcile", "--once"]);
    quiet(&p);
    let events = told(&p, "budget");
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!((events[0]["id"].as_str(), events[0]["text"].as_str()), (Some("spend"), Some("budget exceeded: 121400 of 100000 tokens")));
}

#[test]
fn a_dollar_budget_counts_priced_tokens_and_an_attempt_within_it_completes() {
    let p = Project::new(&[]);
    let config = p.home.join("config.yaml");
    let text = std::fs::read_to_string(&config).unwrap_or_default();
    std::fs::write(&config, format!("{text}\nprices:\n  tiny-1: {{input: 10.0, output: 10.0}}\n")).expect("config.yaml");
    // 100k tokens at $10 a million: $1.00 each report.
    p.script_worker(
        "pricey",
        "sparse",
        r#""$GUILD_HALL_BIN" toolbox report-usage --input-tokens 100000 --output-tokens 0 --model tiny-1
if [ "$GUILD_HALL_COMMISSION" = twice ]; then
  "$GUILD_HALL_BIN" toolbox report-usage --input-tokens 100000 --output-tokens 0 --model tiny-1
  for i in $(seq 60); do sleep 1; done
fi
"$GUILD_HALL_BIN" toolbox submit-result --summary "done""#,
    );
    p.write_commission("once", "---\nworker: pricey\nresources:\n  max_budget_usd: 1.5\n---\nOnce.\n");
    p.write_commission("twice", "---\nworker: pricey\nresources:\n  max_budget_usd: 1.5\n---\nGo twice.\n");
    p.settle();
    assert_eq!(p.status("once"), "completed", "{}", p.ok(&["logs", "once"]));
    let s = p.status_json("twice");
    assert_eq!(s["reason"], "budget exceeded: $2.00 of $1.50; its work is kept on its branch", "{}", p.ok(&["logs", "twice"]));
}

/// `reconcile --once` with the daily budget's clock at `now`.
fn pass_at(p: &Project, now: &str, wait: bool) {
    let mut args = vec!["reconcile", "--once"];
    if wait {
        args.extend(["--wait", "--timeout", "120s"]);
    }
    let out = p.cmd().env("GUILD_HALL_BUDGET_NOW", now).args(&args).output().expect("runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn a_daily_budget_reached_holds_new_work_until_the_day_resets_while_running_work_finishes() {
    let p = Project::new(&[]);
    let script = notify(&p);
    p.config(&format!("notify: [\"{}\"]\nbudget:\n  tokens_per_day: 1000\n", script.display()));
    p.script_worker(
        "spender",
        "sparse",
        r#""$GUILD_HALL_BIN" toolbox report-usage --input-tokens 1200 --output-tokens 300
"$GUILD_HALL_BIN" toolbox submit-result --summary "spent""#,
    );
    // Runs until the test lets it finish.
    p.script_worker(
        "slow",
        "sparse",
        r#"while [ ! -e "$GUILD_HALL_PROJECT/gate" ]; do sleep 0.1; done
"$GUILD_HALL_BIN" toolbox submit-result --summary "finished""#,
    );
    p.script_worker("quick", "sparse", r#""$GUILD_HALL_BIN" toolbox submit-result --summary "quick""#);
    // The day the test runs in, fixed: a test across midnight is judged by one day.
    let start = chrono::Utc::now();
    let today = start.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let resets = (start.date_naive() + chrono::Days::new(1)).format("%Y-%m-%dT00:00:00Z").to_string();
    p.write_commission("big", "---\nworker: spender\n---\nSpend.\n");
    p.write_commission("long", "---\nworker: slow\n---\nTake long.\n");
    pass_at(&p, &today, false);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while p.status("big") != "completed" {
        assert!(std::time::Instant::now() < deadline, "big never completed: {}", p.ok(&["logs", "big"]));
        pass_at(&p, &today, false);
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(p.status("long"), "in_progress");
    // The day's 1500 tokens passed its 1000: new work waits, saying until when.
    p.write_commission("next", "---\nworker: quick\n---\nBe quick.\n");
    pass_at(&p, &today, false);
    pass_at(&p, &today, false);
    let s = p.status_json("next");
    assert_eq!(s["status"], "blocked", "{s}");
    assert_eq!(
        s["reason"].as_str(),
        Some(format!("daily budget reached: 1500 of the project's 1000 tokens today (budget.tokens_per_day in .lore/guild-hall.yaml); new work waits until it resets at {resets}").as_str()),
    );
    // What was running finishes.
    std::fs::write(p.root.join("gate"), "").expect("gate");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while p.status("long") != "completed" {
        assert!(std::time::Instant::now() < deadline, "long never completed: {}", p.ok(&["logs", "long"]));
        pass_at(&p, &today, false);
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(p.status("next"), "blocked");
    // Told once, however many passes see it.
    wait_for("the daily budget to be told", || !told(&p, "budget").is_empty());
    pass_at(&p, &today, false);
    quiet(&p);
    let events = told(&p, "budget");
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["id"], "budget.tokens_per_day in .lore/guild-hall.yaml");
    assert!(events[0]["text"].as_str().is_some_and(|t| t.starts_with("daily budget reached: 1500")), "{}", events[0]);
    // A day later (two: a test run across midnight stamps its usage the next day) it runs.
    let later = (start + chrono::Duration::days(2)).to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    pass_at(&p, &later, true);
    assert_eq!(p.status("next"), "completed", "{}", p.ok(&["logs", "next"]));
}

#[test]
fn a_daily_budget_reached_is_told_once_also_when_the_reconciler_is_killed_as_it_tells() {
    let p = Project::new(&[]);
    let script = notify(&p);
    p.config(&format!("notify: [\"{}\"]\nbudget:\n  usd_per_day: 1.0\n", script.display()));
    p.script_worker(
        "spender",
        "sparse",
        r#""$GUILD_HALL_BIN" toolbox report-usage --input-tokens 10 --output-tokens 10 --usd 1.25
"$GUILD_HALL_BIN" toolbox submit-result --summary "spent""#,
    );
    p.write_commission("big", "---\nworker: spender\n---\nSpend.\n");
    // Stopped dead with the event in the outbox, before the day's budgets told are written.
    p.pass_until_fault("budget-told:1");
    p.settle();
    p.ok(&["reconcile", "--once"]);
    wait_for("the daily budget to be told", || !told(&p, "budget").is_empty());
    p.ok(&["reconcile", "--once"]);
    quiet(&p);
    let events = told(&p, "budget");
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["kind"], "budget");
    assert!(
        events[0]["text"].as_str().is_some_and(|t| t.starts_with("daily budget reached: $1.25 of the project's $1.00 today")),
        "{}",
        events[0]
    );
}

#[test]
fn the_homes_daily_budget_holds_every_projects_new_work() {
    let p = Project::new(&[]);
    let config = p.home.join("config.yaml");
    let text = std::fs::read_to_string(&config).unwrap_or_default();
    std::fs::write(&config, format!("{text}\nbudget:\n  tokens_per_day: 100\n")).expect("config.yaml");
    p.script_worker(
        "spender",
        "sparse",
        r#""$GUILD_HALL_BIN" toolbox report-usage --input-tokens 90 --output-tokens 20
"$GUILD_HALL_BIN" toolbox submit-result --summary "spent""#,
    );
    let now = chrono::Utc::now();
    let today = now.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let resets = (now.date_naive() + chrono::Days::new(1)).format("%Y-%m-%dT00:00:00Z").to_string();
    p.write_commission("first", "---\nworker: spender\n---\nSpend.\n");
    pass_at(&p, &today, true);
    assert_eq!(p.status("first"), "completed", "{}", p.ok(&["logs", "first"]));
    p.write_commission("second", "---\nworker: spender\n---\nSpend more.\n");
    pass_at(&p, &today, true);
    let s = p.status_json("second");
    assert_eq!(s["status"], "blocked", "{s}");
    assert_eq!(
        s["reason"].as_str(),
        Some(format!("daily budget reached: 110 of every project's 100 tokens today (budget.tokens_per_day in config.yaml); new work waits until it resets at {resets}").as_str())
    );
}
