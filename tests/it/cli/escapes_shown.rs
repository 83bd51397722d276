//! What a worker writes is shown, not obeyed: progress, questions, results
//! and output carrying escape sequences (OSC 52 clipboard, OSC 8 links, screen clears), `\r`,
//! C1 controls and bidi overrides reach a person's terminal as visible escapes in every human
//! output, while `--json` (and `logs --raw`) give back exactly what was written (JSON with
//! every one of those characters escaped, so that it is safe on a terminal too).

use crate::common::*;

/// What the hostile worker writes, as `printf` in its script spells it, and as it is.
const HOSTILE_PRINTF: &str =
    r"\033]52;c;aGk=\007 \033[2J\rfake\033]8;;http://evil.example\033\\click\033]8;;\033\\ \302\2332J \342\200\256exe.txt\177 end";
const HOSTILE: &str =
    "\x1b]52;c;aGk=\x07 \x1b[2J\rfake\x1b]8;;http://evil.example\x1b\\click\x1b]8;;\x1b\\ \u{9b}2J \u{202e}exe.txt\x7f end";

/// A worker that reports progress, asks a question and prints the hostile text, waits for the
/// test to drop `go` into its worktree, then submits a result whose summary is that text too.
fn install_hostile(p: &Project) {
    let dir = p.root.join(".lore/workers/hostile");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(dir.join("worker.yaml"), "name: hostile\ncommand: [\"./run.sh\"]\ncheckout: sparse\n").expect("write");
    let script = format!(
        "#!/bin/sh\nset -eu\nh=$(printf '{HOSTILE_PRINTF}')\n\
         \"$GUILD_HALL_BIN\" toolbox report-progress \"$h\"\n\
         \"$GUILD_HALL_BIN\" toolbox log-question \"$h\"\n\
         printf '%s\\n' \"$h\"\n\
         while [ ! -e go ]; do sleep 0.05; done\nrm -f go\n\
         mkdir -p .lore/out && echo done > .lore/out/r.md\n\
         \"$GUILD_HALL_BIN\" toolbox submit-result --summary \"$h\" --artifact .lore/out/r.md\n"
    );
    std::fs::write(dir.join("run.sh"), script).expect("write");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.join("run.sh"), std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// Bytes a terminal would obey: ESC, BEL, CR, the C1 CSI, DEL and the right-to-left override.
fn assert_shown_not_obeyed(what: &str, out: &str) {
    for bad in ['\x1b', '\x07', '\r', '\u{9b}', '\x7f', '\u{202e}'] {
        assert!(!out.contains(bad), "{what} printed a raw {bad:?}:\n{out:?}");
    }
}

#[test]
fn a_workers_escape_sequences_are_shown_not_obeyed() {
    let p = Project::new(&[]);
    install_hostile(&p);
    let id = p.create("hostile", "Hostile output", "Print things.");
    p.pass_until("the progress and the question are in", |p| {
        let s = p.status_json(&id);
        s["progress"].is_string() && s["questions"].as_array().is_some_and(|q| !q.is_empty())
    });

    // While it runs: the table shows the progress, escaped; JSON gives it back exactly.
    let s = p.status_json(&id);
    assert_eq!(s["status"], "in_progress", "{s}");
    assert_eq!(s["progress"].as_str(), Some(HOSTILE));
    assert!(s["questions"].to_string().contains(&serde_json::to_string(HOSTILE).expect("json")), "{s}");
    let table = p.ok(&["status"]);
    assert_shown_not_obeyed("status", &table);
    assert!(table.contains(r"\x1b]52;c;aGk=\x07 \x1b[2J\rfake"), "{table}");
    assert_shown_not_obeyed("status <id>", &p.ok(&["status", &id]));

    std::fs::write(p.worktree(&id).join("go"), "").expect("go");
    p.settle();
    assert_eq!(p.status(&id), "completed", "{}", p.artifact(&id));

    let timeline = p.ok(&["timeline", &id]);
    assert_shown_not_obeyed("timeline", &timeline);
    for kind in ["progress", "question", "result"] {
        let line = timeline.lines().find(|l| l.contains(&format!("  {kind}"))).unwrap_or_else(|| panic!("no {kind} in:\n{timeline}"));
        assert!(line.contains(r"\x1b]52;c;aGk=\x07") && line.contains(r"\u{202e}exe.txt\x7f end"), "{line}");
    }
    let events = p.timeline(&id);
    for (kind, key) in [("progress", "text"), ("question", "text"), ("result", "summary")] {
        let e = events.iter().find(|e| e["kind"] == kind).unwrap_or_else(|| panic!("no {kind} event"));
        assert_eq!(e[key].as_str(), Some(HOSTILE), "{kind} in timeline --json");
    }
    let s = p.status_json(&id);
    assert_eq!(s["result"]["summary"].as_str(), Some(HOSTILE));
    let all: serde_json::Value = serde_json::from_str(&p.ok(&["status", "--json"])).expect("status --json");
    assert_eq!(all[0]["result"]["summary"].as_str(), Some(HOSTILE));
    // The JSON text itself is safe on a terminal too: DEL, C1 and bidi as \u escapes.
    for args in [&["status", "--json"][..], &["status", &id, "--json"], &["timeline", &id, "--json"]] {
        assert_shown_not_obeyed(&format!("{args:?}"), &p.ok(args));
    }
    let table = p.ok(&["status"]);
    assert_shown_not_obeyed("status, completed", &table);

    // The log: escaped for a person, exact with --raw.
    let log = p.ok(&["logs", &id]);
    assert_shown_not_obeyed("logs", &log);
    assert!(log.contains(r"\x1b]52;c;aGk=\x07"), "{log}");
    let raw = p.cmd().args(["logs", &id, "--raw"]).output().expect("runs").stdout;
    assert!(raw.windows(HOSTILE.len()).any(|w| w == HOSTILE.as_bytes()), "logs --raw gives the bytes back");
}

#[test]
fn what_a_file_holds_is_shown_not_obeyed() {
    let p = Project::new(&["scribe"]);
    // YAML's own escapes put the controls in: a person's (or a worker's) file, not ours.
    let title = r#""\e]52;c;aGk=\a \e[2J\rfake \u202Eexe.txt""#;
    std::fs::create_dir_all(p.root.join(".lore/meetings")).expect("mkdir");
    std::fs::write(
        p.root.join(".lore/meetings/m.md"),
        format!("---\nworker: scribe\nstatus: requested\ntitle: {title}\nagenda: {title}\nrequested_by: {title}\n---\n"),
    )
    .expect("write");
    std::fs::create_dir_all(p.root.join(".lore/plans")).expect("mkdir");
    std::fs::write(
        p.root.join(".lore/plans/pl.md"),
        format!("---\ntitle: {title}\nstatus: draft\nwaves:\n  - - {{id: t, worker: scribe, title: {title}, prompt: go}}\n---\n"),
    )
    .expect("write");
    p.write_commission("c", &format!("---\ntitle: {title}\nworker: scribe\nstatus: draft\nprogress: {title}\n---\nbody\n"));
    for args in [&["meeting", "show", "m"][..], &["meeting", "list"], &["plan", "show", "pl"], &["status"], &["status", "c"]] {
        let (_, out, err) = p.run(args);
        assert_shown_not_obeyed(&format!("{args:?}"), &out);
        assert_shown_not_obeyed(&format!("{args:?} (stderr)"), &err);
    }
    let show = p.ok(&["meeting", "show", "m"]);
    assert!(show.contains(r"meeting   m: \x1b]52;c;aGk=\x07 \x1b[2J\rfake \u{202e}exe.txt"), "{show}");
    let json: serde_json::Value = serde_json::from_str(&p.ok(&["meeting", "show", "m", "--json"])).expect("json");
    assert_eq!(json["title"].as_str(), Some("\x1b]52;c;aGk=\x07 \x1b[2J\rfake \u{202e}exe.txt"));
}
