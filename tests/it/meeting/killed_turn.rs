//! Whether something of an activity still runs is judged one way, from what the
//! kernel says (a lock held, a process of this boot proven ours), never from a file that a
//! killed process or a reboot leaves behind.

use std::path::PathBuf;

use crate::common::Project;

/// The runtime dir of meeting `id` (under the only project in this home).
fn meeting_state(p: &Project, id: &str) -> PathBuf {
    let project = std::fs::read_dir(p.home.join("state")).expect("state").filter_map(|e| e.ok()).find(|e| e.path().is_dir());
    project.expect("project state").path().join("meetings").join(id)
}

#[test]
fn a_meeting_turn_killed_before_it_cleaned_up_keeps_nothing_from_gc() {
    let p = Project::new(&["counsel"]);
    p.ok(&["meeting", "start", "--worker", "counsel", "--id", "talk", "hello"]);
    p.ok(&["meeting", "close", "talk"]);
    // What a turn killed with SIGKILL (or a reboot) leaves: its holder file, naming a process
    // that is gone. Its lock went with it.
    let mut gone = std::process::Command::new("true").spawn().expect("spawn");
    let pid = gone.id();
    gone.wait().expect("wait");
    let state = meeting_state(&p, "talk");
    std::fs::create_dir_all(&state).expect("mkdir");
    std::fs::write(state.join("turn.json"), format!(r#"{{"pid": {pid}, "turn": 2, "since": "2026-11-24T10:00:00.000Z"}}"#))
        .expect("holder");
    std::fs::remove_file(p.root.join(".lore/meetings/talk.md")).expect("rm");
    let out = p.ok(&["gc"]);
    assert!(!out.contains("still running"), "{out}");
    assert!(out.contains("removed branch claude/meeting/talk (meeting talk)"), "{out}");
    assert!(!state.exists(), "the runtime dir is collected last: {out}");
}
