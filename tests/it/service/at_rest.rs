//! A watch leaves out the commissions, plans and meetings it found at rest (settled or ended,
//! nothing running, files unchanged) and still sees, on its next pass, what a person or a pass
//! changes of them: a commission's or a plan's status edited, a task's state written over in
//! its file, a meeting's status edited, a record removed.

use serde_json::Value;

use crate::common::*;

/// Save like vim: a temp file beside it, renamed over.
fn rename_save(path: &std::path::Path, text: &str) {
    let tmp = path.with_file_name(format!(".{}.swp", path.file_name().and_then(|n| n.to_str()).unwrap_or("x")));
    std::fs::write(&tmp, text).expect("write tmp");
    std::fs::rename(&tmp, path).expect("rename");
}

/// The watch's passes that left out at least `n` artifacts of `kind` at rest (its `-v` log).
fn left_out(svc: &Service, kind: &str, n: u64) -> usize {
    svc.log()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["fields"]["message"] == "left out at rest" && v["fields"]["kind"] == kind)
        .filter(|v| v["fields"]["at_rest"].as_u64().is_some_and(|left| left >= n))
        .count()
}

/// Nudge the watch (a file under `.lore` it wakes for) until a pass has left out `n` artifacts
/// of `kind` at rest (all there are of it: the one just ended among them): what follows is
/// read against the store, not a first reading.
fn held_at_rest(p: &Project, svc: &Service, kind: &str, n: u64) {
    let before = left_out(svc, kind, n);
    let mut i = 0;
    wait_for(&format!("a pass to leave {n} {kind}(s) out at rest"), || {
        i += 1;
        std::fs::write(p.root.join(format!(".lore/nudge-{i}.txt")), "x").expect("nudge");
        std::thread::sleep(std::time::Duration::from_millis(100));
        left_out(svc, kind, n) > before
    });
}

fn plan_path(p: &Project, id: &str) -> std::path::PathBuf {
    p.root.join(".lore/plans").join(format!("{id}.md"))
}

fn plan(p: &Project, id: &str) -> Value {
    serde_json::from_str(&p.ok(&["plan", "show", id, "--json"])).expect("plan json")
}

fn task_attempt(v: &Value) -> u64 {
    v["tasks"][0]["attempt"].as_u64().unwrap_or(0)
}

fn text(p: &Project, id: &str) -> String {
    std::fs::read_to_string(plan_path(p, id)).expect("plan")
}

#[test]
fn a_plan_at_rest_is_left_out_and_an_edit_of_it_is_seen_on_the_next_pass() {
    let p = Project::new(&["mason"]);
    let svc = Service::start(&p, &[], &["--resync", "1h"]);
    std::fs::create_dir_all(p.root.join(".lore/plans")).expect("mkdir");
    rename_save(&plan_path(&p, "done"), "---\ntitle: done\nwaves:\n  - - {id: t, worker: mason, prompt: \"write: a.txt a\"}\n---\n");
    wait_for("the plan to complete", || plan(&p, "done")["status"] == "completed");
    held_at_rest(&p, &svc, "plan", 1);

    // A task's state written over in the file (integrated → failed): the record is the truth,
    // and the next pass puts it back.
    let line = text(&p, "done").lines().find(|l| l.contains("done:exec:wave-1:task-1:")).expect("the task's state").to_string();
    assert!(line.ends_with("integrated"), "{}", text(&p, "done"));
    rename_save(&plan_path(&p, "done"), &text(&p, "done").replace(&line, &line.replace("integrated", "failed")));
    wait_for("the task's state put back", || text(&p, "done").contains(&line));
    held_at_rest(&p, &svc, "plan", 1);

    // A request a completed plan refuses (completed → pending): refused on the next pass.
    rename_save(&plan_path(&p, "done"), &text(&p, "done").replace("status: completed", "status: pending"));
    wait_for("the refusal", || text(&p, "done").contains("status: completed") && text(&p, "done").contains("refused:"));
    assert_eq!(task_attempt(&plan(&p, "done")), 1, "nothing ran again");

    // A plan halted by a failing task, cancelled by a person: at rest (its failed task's
    // worktree kept); a retry then runs the task again.
    rename_save(&plan_path(&p, "retry"), "---\ntitle: retry\nwaves:\n  - - {id: t, worker: mason, prompt: fail}\n---\n");
    wait_for("the plan to halt", || plan(&p, "retry")["status"] == "halted");
    rename_save(&plan_path(&p, "retry"), &text(&p, "retry").replace("status: halted", "status: cancelled"));
    wait_for("the cancel carried out", || plan(&p, "retry")["status"] == "cancelled");
    held_at_rest(&p, &svc, "plan", 2);
    assert_eq!(task_attempt(&plan(&p, "retry")), 1);
    rename_save(&plan_path(&p, "retry"), &text(&p, "retry").replace("status: cancelled", "status: pending"));
    wait_for("the retry to run the task again", || {
        let v = plan(&p, "retry");
        task_attempt(&v) == 2 && v["status"] == "halted"
    });
    assert_eq!(svc.stop(), Some(0));
}

fn meeting_path(p: &Project, id: &str) -> std::path::PathBuf {
    p.root.join(".lore/meetings").join(format!("{id}.md"))
}

/// The status guild-hall last recorded for meeting `id`.
fn meeting_record(p: &Project, id: &str) -> Option<String> {
    let state = p.home.join("state");
    let project = std::fs::read_dir(&state).ok()?.filter_map(|e| e.ok()).next()?.path();
    let v: Value = serde_json::from_slice(&std::fs::read(project.join("meetings").join(id).join("record.json")).ok()?).ok()?;
    v["status"].as_str().map(str::to_string)
}

#[test]
fn a_meeting_at_rest_is_left_out_and_a_persons_edit_of_it_is_seen_on_the_next_pass() {
    let p = Project::new(&["counsel"]);
    let svc = Service::start(&p, &[], &["--resync", "1h"]);
    std::fs::create_dir_all(p.root.join(".lore/meetings")).expect("mkdir");
    rename_save(&meeting_path(&p, "m"), "---\nworker: counsel\nstatus: requested\n---\nHello\n");
    wait_for("the request recorded", || meeting_record(&p, "m").as_deref() == Some("requested"));
    // Declined by a person: recorded, then at rest.
    let text = std::fs::read_to_string(meeting_path(&p, "m")).expect("meeting");
    rename_save(&meeting_path(&p, "m"), &text.replace("status: requested", "status: declined"));
    wait_for("the decline recorded", || meeting_record(&p, "m").as_deref() == Some("declined"));
    held_at_rest(&p, &svc, "meeting", 1);

    // Opened again by hand, written in place (as VS Code saves: the same inode): refused on the
    // next pass, the status put back.
    let text = std::fs::read_to_string(meeting_path(&p, "m")).expect("meeting");
    std::fs::write(meeting_path(&p, "m"), text.replace("status: declined", "status: open")).expect("write in place");
    wait_for("the refusal", || {
        let text = std::fs::read_to_string(meeting_path(&p, "m")).expect("meeting");
        text.contains("status: declined") && text.contains("reason:") && text.contains("refused")
    });
    assert_eq!(meeting_record(&p, "m").as_deref(), Some("declined"));
    held_at_rest(&p, &svc, "meeting", 1);

    // Its record removed (as the message for a corrupt one says to): the next pass reads the
    // artifact again and records it anew.
    let record = {
        let state = p.home.join("state");
        let project = std::fs::read_dir(&state).expect("state").filter_map(|e| e.ok()).next().expect("project").path();
        project.join("meetings/m/record.json")
    };
    std::fs::remove_file(&record).expect("remove the record");
    wait_for("the record written again", || meeting_record(&p, "m").as_deref() == Some("declined"));
    assert_eq!(svc.stop(), Some(0));
}

#[test]
fn a_settled_commission_is_left_out_and_an_edit_of_it_is_seen_on_the_next_pass() {
    let p = Project::new(&["scribe"]);
    let svc = Service::start(&p, &[], &["--resync", "1h"]);
    rename_save(&p.artifact_path("done"), "---\nworker: scribe\n---\noutput: .lore/d.md\nWrite.\n");
    wait_status(&p, "done", "completed");
    held_at_rest(&p, &svc, "commission", 1);

    // Asked to run again by hand, written in place (the same inode): refused on the next pass,
    // the status put back, nothing run again.
    let text = p.artifact("done");
    std::fs::write(p.artifact_path("done"), text.replace("status: completed", "status: pending")).expect("write in place");
    wait_for("the refusal", || {
        let text = p.artifact("done");
        text.contains("status: completed") && text.contains("refused status change completed -> pending")
    });
    assert_eq!(p.status_json("done")["attempt"], 1, "nothing ran again");
    held_at_rest(&p, &svc, "commission", 1);
    assert_eq!(svc.stop(), Some(0));
}
