//! Scheduled commissions through the real binary, the schedule's clock set by
//! `GUILD_HALL_SCHEDULE_NOW`: runs spawned on time and run to the end, one late run after
//! downtime, `repeat` completing the template, `status` showing the next run, a pass killed
//! between a run's spawn and the template's update spawning it once, Guild Hall's dialect of
//! the template, and `watch` waking for the next run on the real clock.

use crate::common::*;

/// A pass (to the end of what it starts) with the schedule's clock at `now`.
fn pass_at(p: &Project, now: &str) -> String {
    let out =
        p.cmd().env("GUILD_HALL_SCHEDULE_NOW", now).args(["reconcile", "--once", "--wait", "--timeout", "120s"]).output().expect("runs");
    assert!(out.status.success(), "{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The runs of `template` written so far, by id.
fn runs(p: &Project, template: &str) -> Vec<String> {
    let mut ids: Vec<String> = std::fs::read_dir(p.root.join(".lore/commissions"))
        .expect("dir")
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.strip_suffix(".md").map(str::to_string))
        .filter(|id| id.starts_with(&format!("{template}-")))
        .collect();
    ids.sort();
    ids
}

fn status_at(p: &Project, id: &str, now: &str) -> serde_json::Value {
    let out = p.cmd().env("GUILD_HALL_SCHEDULE_NOW", now).args(["status", id, "--json"]).output().expect("runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("json")
}

const HOURLY: &str = "---\ntitle: Hourly note\ntype: scheduled\nworker: scribe\ncreated: 2026-11-28T18:10:00.000Z\nschedule:\n  cron: \"0 * * * *\"\n  repeat: 3\n  runs_completed: 0\n---\noutput: .lore/notes/hourly.md\nWrite the hourly note.\n";

#[test]
fn runs_spawn_on_time_one_late_run_after_downtime_and_repeat_completes() {
    let p = Project::new(&["scribe"]);
    p.write_commission("hourly", HOURLY);
    assert!(p.ok(&["check"]).contains("ok:"));

    // Before its first tick: nothing, and status says when.
    pass_at(&p, "2026-11-28T18:30:00Z");
    assert!(runs(&p, "hourly").is_empty());
    let row = status_at(&p, "hourly", "2026-11-28T18:30:00Z");
    assert_eq!((row["type"].as_str(), row["status"].as_str()), (Some("scheduled"), Some("active")));
    assert_eq!(row["next_run"], "2026-11-28T19:00:00.000Z");
    let table = String::from_utf8_lossy(
        &p.cmd().env("GUILD_HALL_SCHEDULE_NOW", "2026-11-28T18:30:00Z").arg("status").output().expect("runs").stdout,
    )
    .into_owned();
    assert!(table.contains("next run 2026-11-28T19:00:00.000Z"), "{table}");

    // Its first two ticks, on time: one run each, run to the end like any commission.
    pass_at(&p, "2026-11-28T19:00:05Z");
    assert_eq!(runs(&p, "hourly"), ["hourly-20261128-1900"]);
    assert_eq!(p.status("hourly-20261128-1900"), "completed");
    let run = p.artifact("hourly-20261128-1900");
    assert!(run.contains("source_schedule: hourly") && run.contains("Write the hourly note."), "{run}");
    pass_at(&p, "2026-11-28T19:40:00Z");
    assert_eq!(runs(&p, "hourly").len(), 1, "nothing between ticks");
    pass_at(&p, "2026-11-28T20:00:30Z");
    assert_eq!(runs(&p, "hourly"), ["hourly-20261128-1900", "hourly-20261128-2000"]);
    let row = status_at(&p, "hourly", "2026-11-28T20:00:30Z");
    assert_eq!((row["runs_completed"].as_u64(), row["last_spawned_id"].as_str()), (Some(2), Some("hourly-20261128-2000")));
    assert_eq!(row["last_run"], "2026-11-28T20:00:00.000Z");

    // Nothing ran from 20:30 to 23:10: three ticks missed, one late run (the latest tick's),
    // which is its third: the template is completed.
    pass_at(&p, "2026-11-28T23:10:00Z");
    assert_eq!(runs(&p, "hourly"), ["hourly-20261128-1900", "hourly-20261128-2000", "hourly-20261128-2300"]);
    assert_eq!(p.status("hourly-20261128-2300"), "completed");
    let row = status_at(&p, "hourly", "2026-11-28T23:10:00Z");
    assert_eq!((row["status"].as_str(), row["runs_completed"].as_u64()), (Some("completed"), Some(3)));
    assert!(row["next_run"].is_null(), "{row}");
    pass_at(&p, "2026-11-29T09:00:00Z");
    assert_eq!(runs(&p, "hourly").len(), 3, "a completed template spawns nothing");
    // The template's timeline says each run it spawned, once, the late one as late.
    let spawned: Vec<(String, String)> = p
        .timeline("hourly")
        .iter()
        .filter(|e| e["kind"] == "spawned")
        .map(|e| (e["run"].as_str().unwrap_or("").to_string(), e["text"].as_str().unwrap_or("").to_string()))
        .collect();
    let ids: Vec<&str> = spawned.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["hourly-20261128-1900", "hourly-20261128-2000", "hourly-20261128-2300"], "{spawned:?}");
    assert!(spawned[2].1.starts_with("late run hourly-20261128-2300"), "{spawned:?}");
    // The template itself never ran a worker.
    assert!(!p.try_state_dir("hourly").is_some_and(|d| d.exists()), "no runtime state for the template");
    assert!(!git(&p.root, &["show", "claude/main:.lore/notes/hourly.md"]).is_empty());
}

/// Killed between writing a run and counting it in the template: the next pass, even after
/// the next tick, finds the run written and counts it; it is never written twice.
#[test]
fn a_pass_killed_between_the_spawn_and_the_count_spawns_once() {
    let p = Project::new(&["scribe"]);
    p.write_commission("hourly", HOURLY);
    let out = p
        .cmd()
        .env("GUILD_HALL_SCHEDULE_NOW", "2026-11-28T19:00:05Z")
        .env("GUILD_HALL_FAULT", "schedule:1")
        .args(["reconcile", "--once"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(86), "stopped dead after the spawn: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(runs(&p, "hourly"), ["hourly-20261128-1900"]);
    assert!(p.artifact("hourly").contains("runs_completed: 0"), "not counted yet");

    // The next pass comes after the next tick: the written run is counted first (not spawned
    // again), then the 20:00 tick gets its own.
    pass_at(&p, "2026-11-28T20:00:10Z");
    assert_eq!(runs(&p, "hourly"), ["hourly-20261128-1900", "hourly-20261128-2000"]);
    let row = status_at(&p, "hourly", "2026-11-28T20:00:10Z");
    assert_eq!(row["runs_completed"].as_u64(), Some(2), "{row}");
    for id in runs(&p, "hourly") {
        assert_eq!(p.status(&id), "completed", "{id}");
    }
}

/// The same with a real kill -9 of the pass, held after the run is written (in a pid namespace
/// of its own): the run is counted by the next pass, never written twice.
#[test]
fn a_pass_killed_dead_after_the_spawn_spawns_once() {
    let p = Project::new(&["scribe"]);
    p.write_commission("hourly", HOURLY);
    let out = in_pid_namespace(
        &p,
        r#"GUILD_HALL_SCHEDULE_NOW=2026-11-28T19:00:05Z GUILD_HALL_FAULT=schedule:1:hold "$GH" reconcile --once >/dev/null 2>&1 &
pid=$!
for i in $(seq 1200); do [ -f .lore/commissions/hourly-20261128-1900.md ] && break; sleep 0.05; done
kill -9 "$pid"
wait "$pid" || true
echo "--- counted"
grep -c 'runs_completed: 0' .lore/commissions/hourly.md || true
"#,
    );
    assert_eq!(section(&out, "counted").trim(), "1", "killed before the count: {out}");
    assert_eq!(runs(&p, "hourly"), ["hourly-20261128-1900"]);
    pass_at(&p, "2026-11-28T19:00:30Z");
    assert_eq!(runs(&p, "hourly"), ["hourly-20261128-1900"], "spawned once");
    let row = status_at(&p, "hourly", "2026-11-28T19:00:30Z");
    assert_eq!((row["runs_completed"].as_u64(), row["last_spawned_id"].as_str()), (Some(1), Some("hourly-20261128-1900")));
    assert_eq!(p.status("hourly-20261128-1900"), "completed");
    let spawned: Vec<serde_json::Value> = p.timeline("hourly").into_iter().filter(|e| e["kind"] == "spawned").collect();
    assert_eq!(spawned.len(), 1, "the run said once on the template's timeline: {spawned:?}");
    assert_eq!(spawned[0]["run"], "hourly-20261128-1900");
}

/// Guild Hall's template as Guild Hall writes it (the prompt in `prompt:`, a timeline of its
/// own, a worker named by identity) spawns too, and keeps its shape: the schedule's cron
/// quoted, its timeline untouched.
#[test]
fn a_template_in_guild_halls_dialect_spawns_and_keeps_its_shape() {
    let p = Project::new(&["scribe"]);
    p.config("worker_aliases: {Guild Master: scribe}\n");
    let text = "---\ntitle: \"Weekly tidy\"\ndate: 2026-11-01\ntype: scheduled\nstatus: active\ntags: [commission, scheduled]\nworker: Guild Master\nprompt: \"output: .lore/notes/tidy.md\\nTidy the notes.\"\ndependencies: []\nschedule:\n  cron: \"0 9 * * 1\"\n  repeat: null\n  runs_completed: 4\n  last_run: 2026-11-23T09:00:01.123Z\n  last_spawned_id: commission-Guild-Master-20261123-090001\nactivity_timeline:\n  - timestamp: 2026-11-01T09:00:00.000Z\n    event: created\n    reason: \"Schedule created\"\n---\n";
    p.write_commission("weekly-tidy", text);
    assert!(p.ok(&["check"]).contains("ok:"));
    let row = status_at(&p, "weekly-tidy", "2026-11-28T19:00:00Z");
    assert_eq!(row["next_run"], "2026-11-30T09:00:00.000Z", "Monday 09:00 UTC");
    pass_at(&p, "2026-11-30T09:00:20Z");
    assert_eq!(runs(&p, "weekly-tidy"), ["weekly-tidy-20261130-0900"]);
    assert_eq!(p.status("weekly-tidy-20261130-0900"), "completed");
    let after = p.artifact("weekly-tidy");
    assert!(after.contains("  cron: \"0 9 * * 1\"\n") && after.contains("  runs_completed: 5\n"), "{after}");
    assert!(after.contains("  last_spawned_id: weekly-tidy-20261130-0900\n") && after.contains("  repeat: null\n"), "{after}");
    assert!(after.contains("activity_timeline:\n  - timestamp: 2026-11-01T09:00:00.000Z\n"), "{after}");
}

/// A run carries its template's bounds in the template's own form: `resources:` from ours,
/// `resource_overrides:` (model included) from Guild Hall's; each run passes `check` and runs.
#[test]
fn runs_carry_the_templates_resources_in_its_dialect() {
    let p = Project::new(&["scribe"]);
    p.config("worker_aliases: {Guild Master: scribe}\n");
    p.write_commission(
        "ours",
        "---\ntype: scheduled\nworker: scribe\nresources: {max_turns: 7, max_budget_usd: 0.5}\nschedule: {cron: \"0 9 * * *\"}\ncreated: 2026-11-29T10:00:00.000Z\n---\noutput: .lore/notes/ours.md\nA note.\n",
    );
    p.write_commission(
        "theirs",
        "---\ntitle: \"Theirs\"\ndate: 2026-11-29\ntype: scheduled\nstatus: active\nworker: Guild Master\nprompt: \"output: .lore/notes/theirs.md\\nA note.\"\nresource_overrides:\n  maxTurns: 9\n  model: opus\nschedule:\n  cron: \"0 9 * * *\"\n  repeat: null\n  runs_completed: 0\n---\n",
    );
    assert!(p.ok(&["check"]).contains("ok:"));
    pass_at(&p, "2026-11-30T09:00:10Z");
    assert_eq!(runs(&p, "ours"), ["ours-20261130-0900"]);
    assert_eq!(runs(&p, "theirs"), ["theirs-20261130-0900"]);
    let ours = p.artifact("ours-20261130-0900");
    assert!(ours.contains("resources:\n  max_turns: 7\n  max_budget_usd: 0.5\n") && !ours.contains("resource_overrides"), "{ours}");
    let theirs = p.artifact("theirs-20261130-0900");
    assert!(theirs.contains("resource_overrides:\n  maxTurns: 9\n  model: opus\n") && !theirs.contains("\nresources:"), "{theirs}");
    for id in ["ours-20261130-0900", "theirs-20261130-0900"] {
        assert_eq!(p.status(id), "completed", "{id}");
    }
    assert!(p.ok(&["check"]).contains("ok:"), "the runs pass check");
}

/// `watch` on the real clock: a template due every minute gets its run within the minute
/// after its tick, without a file event to wake the watch.
#[test]
fn watch_wakes_for_the_next_run() {
    let p = Project::new(&["scribe"]);
    p.write_commission(
        "minutely",
        "---\ntype: scheduled\nworker: scribe\nschedule: {cron: \"* * * * *\", repeat: 1}\n---\noutput: .lore/notes/minute.md\nA note.\n",
    );
    let service = Service::start(&p, &[], &[]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(150);
    while runs(&p, "minutely").is_empty() {
        assert!(std::time::Instant::now() < deadline, "no run spawned: {}", service.log());
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    wait_for("the run to complete", || runs(&p, "minutely").first().is_some_and(|id| p.status(id) == "completed"));
    wait_for("the template to complete", || p.artifact("minutely").contains("status: completed"));
    service.stop();
}
