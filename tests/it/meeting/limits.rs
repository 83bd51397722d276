//! A meeting turn its agent's rate or usage limit ended says so: the turn ends with a clear
//! line naming the worker and when the limit resets, in its output and its transcript, and the
//! meeting stays open for the next message.

use std::os::unix::fs::PermissionsExt;

use super::fixtures::project_dir;
use crate::common::Project;

/// A meeting command that prints guild-hall's `limit` line (resetting in an hour) and exits.
const LIMITED: &str = r#"#!/bin/sh
at=$(date -u -d "@$(( $(date +%s) + 3600 ))" +%Y-%m-%dT%H:%M:%SZ)
printf '{"type":"limit","text":"usage limit reached","resets_at":"%s"}\n' "$at"
exit 1
"#;

#[test]
fn a_turn_ended_by_a_usage_limit_says_so_and_when_to_send_again() {
    let p = Project::new(&["counsel"]);
    p.ok(&["meeting", "start", "--worker", "counsel", "--id", "m", "hello"]);
    let meet = p.root.join(".lore/workers/counsel/meet.sh");
    let normal = std::fs::read(&meet).expect("meet.sh");
    let tmp = meet.with_extension("tmp");
    std::fs::write(&tmp, LIMITED).expect("write");
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    std::fs::rename(&tmp, &meet).expect("rename");
    let (code, out, err) = p.run(&["meeting", "send", "m", "more, please"]);
    let said = format!("{out}{err}");
    assert!(!said.contains("panicked"), "no crash: {said}");
    let line = said.lines().find(|l| l.contains("[guild-hall] counsel hit a usage limit")).unwrap_or_else(|| panic!("the line: {said}"));
    assert!(line.contains("usage limit reached") && line.contains("it resets at ") && line.contains("send again after that"), "{line}");
    assert_ne!(code, 0, "the turn did not end with a reply: {said}");
    let transcript = std::fs::read_to_string(project_dir(&p, "meetings").join("m.md")).expect("transcript");
    assert!(transcript.contains("[guild-hall] counsel hit a usage limit"), "{transcript}");
    // The meeting stays open: once the limit is gone, the next message is answered.
    std::fs::write(&tmp, normal).expect("write");
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    std::fs::rename(&tmp, &meet).expect("rename");
    let out = p.ok(&["meeting", "send", "m", "again"]);
    assert!(out.contains("again"), "answered: {out}");
}

/// What a turn's agent reports using is a `usage` event on the meeting's timeline, seen by
/// `guild-hall usage` and counted by the daily budget; once the day's budget is reached a new
/// turn is not started, and says so in its output and the transcript.
#[test]
fn a_turns_usage_is_recorded_and_a_daily_budget_reached_holds_the_next_turn() {
    let p = Project::new(&["counsel"]);
    p.ok(&["meeting", "start", "--worker", "counsel", "--id", "m", "hello"]);
    p.ok(&["meeting", "send", "m", "usage: 1000 100 0.5"]);
    let tl = p.timeline("m");
    let usage: Vec<_> = tl.iter().filter(|e| e["kind"] == "usage").collect();
    assert_eq!(usage.len(), 1, "{tl:?}");
    assert_eq!((usage[0]["input_tokens"].as_u64(), usage[0]["usd"].as_f64()), (Some(1000), Some(0.5)), "{}", usage[0]);
    assert_eq!((usage[0]["worker"].as_str(), usage[0]["source"].as_str()), (Some("counsel"), Some("agent")), "{}", usage[0]);
    assert!(usage[0]["turn"].as_u64().is_some(), "{}", usage[0]);
    let by: serde_json::Value = serde_json::from_str(&p.ok(&["usage", "--json"])).expect("json");
    assert_eq!((by["rows"][0]["key"].as_str(), by["total"]["input_tokens"].as_u64()), (Some("m"), Some(1000)), "{by}");
    // The day's $0.40 is passed by the turn's $0.50: the next turn does not start.
    p.config("budget:\n  usd_per_day: 0.4\n");
    let turns = |p: &Project| p.timeline("m").iter().filter(|e| e["kind"] == "turn").count();
    let before = turns(&p);
    let (code, out, err) = p.run(&["meeting", "send", "m", "usage: 1000 100 0.5"]);
    let said = format!("{out}{err}");
    assert_ne!(code, 0, "{said}");
    let line = said.lines().find(|l| l.contains("[guild-hall] daily budget reached: $0.50")).unwrap_or_else(|| panic!("the line: {said}"));
    assert!(line.contains("this turn was not started") && line.contains("resets at"), "{line}");
    assert!(!said.contains("You said"), "the worker did not run: {said}");
    let transcript = std::fs::read_to_string(project_dir(&p, "meetings").join("m.md")).expect("transcript");
    assert!(transcript.contains("daily budget reached"), "{transcript}");
    assert_eq!(turns(&p), before + 1, "the turn is in the timeline, failed");
    assert_eq!(p.timeline("m").iter().filter(|e| e["kind"] == "usage").count(), 1, "nothing more was used");
}

/// A turn is held to its package's `resources:` budget: once its agent's figures pass it, the
/// turn is stopped and says why; the meeting goes on.
#[test]
fn a_turn_past_its_packages_budget_is_stopped_and_says_so() {
    let p = Project::new(&["counsel"]);
    let yaml = p.root.join(".lore/workers/counsel/worker.yaml");
    let text = std::fs::read_to_string(&yaml).expect("worker.yaml");
    std::fs::write(&yaml, format!("{text}resources: {{max_budget_usd: 0.2}}\n")).expect("write");
    p.ok(&["meeting", "start", "--worker", "counsel", "--id", "m", "hello"]);
    let (code, out, err) = p.run(&["meeting", "send", "m", "usage: 10 10 0.3\nslow"]);
    let said = format!("{out}{err}");
    assert_ne!(code, 0, "{said}");
    assert!(said.contains("budget exceeded: $0.30 of $0.20 (resources in its worker.yaml); its worker was stopped"), "{said}");
    assert!(!said.contains("word299"), "stopped before the end: {said}");
    let tl = p.timeline("m");
    assert!(tl.iter().any(|e| e["kind"] == "usage" && e["usd"].as_f64() == Some(0.3)), "{tl:?}");
    let out = p.ok(&["meeting", "send", "m", "again"]);
    assert!(out.contains("again"), "the meeting goes on: {out}");
}
