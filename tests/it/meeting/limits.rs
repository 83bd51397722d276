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
