//! Cost is bounded by guild-hall, not by the input: `check` and a pass over
//! commissions that wait on one another's `outputs:` finish whatever their shape — a diamond
//! of 60 (2^30 paths), a chain or a ring of 10,000 — and still name every cycle, briefly
//! (a pass over a ring of 300 tells each member a cycle through it).

use std::time::{Duration, Instant};

use crate::common::*;

fn out(id: &str) -> String {
    format!(".lore/out/{id}.md")
}

/// A waiting commission of the scribe worker.
fn write(p: &Project, id: &str, deps: &[String]) {
    p.write_commission(
        id,
        &format!("---\nworker: scribe\nstatus: pending\ndependencies: [{}]\noutputs: [{}]\n---\nStep {id}.\n", deps.join(", "), out(id)),
    );
}

/// Run guild-hall to its end, or fail the test at the deadline (the child, ours, is killed).
fn run_within(p: &Project, args: &[&str], deadline: Duration) -> (i32, String) {
    let mut child = p.cmd().args(args).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::null()).spawn().expect("spawn");
    let mut stdout = child.stdout.take().expect("stdout");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut stdout, &mut s);
        s
    });
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return (status.code().unwrap_or(-1), reader.join().expect("reader"));
        }
        if start.elapsed() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("guild-hall {args:?} did not finish within {deadline:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

const DEADLINE: Duration = Duration::from_secs(300);

#[test]
fn check_finishes_on_a_diamond_of_sixty() {
    let p = Project::new(&["scribe"]);
    let name = |l: usize, k: usize| format!("l{l:02}-{k}");
    for l in 0..30 {
        for k in 0..2 {
            let deps = if l == 0 { vec![] } else { vec![out(&name(l - 1, 0)), out(&name(l - 1, 1))] };
            write(&p, &name(l, k), &deps);
        }
    }
    let (code, stdout) = run_within(&p, &["check"], DEADLINE);
    assert_eq!(code, 0, "{stdout}");
    assert!(stdout.starts_with("ok: 60 commissions"), "{stdout}");
    // Closed into a knot (the first layer waits on the last): every commission is in a
    // cycle, and `check` names cycles through all of them.
    for k in 0..2 {
        write(&p, &name(0, k), &[out(&name(29, 0)), out(&name(29, 1))]);
    }
    let (code, stdout) = run_within(&p, &["check"], DEADLINE);
    assert_eq!(code, 1, "{stdout}");
    for l in 0..30 {
        for k in 0..2 {
            assert!(stdout.contains(&name(l, k)), "{} named in:\n{stdout}", name(l, k));
        }
    }
    assert!(stdout.lines().all(|l| l.contains("dependency cycle: l00-")), "{stdout}");
}

#[test]
fn check_finishes_on_a_chain_and_a_ring_of_ten_thousand() {
    let p = Project::new(&["scribe"]);
    let n = 10_000;
    let id = |i: usize| format!("c{i:05}");
    // c00000 waits on a path no one declares; each other on the one before.
    for i in 0..n {
        write(&p, &id(i), &[if i == 0 { ".lore/nowhere.md".to_string() } else { out(&id(i - 1)) }]);
    }
    let (code, stdout) = run_within(&p, &["check"], DEADLINE);
    assert_eq!(code, 0, "{stdout}");
    assert!(stdout.starts_with("ok: 10000 commissions"), "{stdout}");

    // Closed into a ring: one cycle of 10,000, said briefly, with its start and end.
    write(&p, &id(0), &[out(&id(n - 1))]);
    let (code, stdout) = run_within(&p, &["check"], DEADLINE);
    assert_eq!(code, 1, "{stdout}");
    let problems: Vec<&str> = stdout.lines().collect();
    assert_eq!(problems.len(), 1, "{stdout}");
    assert!(problems[0].contains("dependency cycle: c00000 -> c09999 -> c09998 -> … ("), "{stdout}");
    assert!(problems[0].contains("-> c00001 -> c00000 (a cycle of 10000 commissions)"), "{stdout}");
    assert!(problems[0].len() < 500, "{stdout}");
}

#[test]
fn every_commission_of_a_long_ring_is_told_its_cycle() {
    let p = Project::new(&["scribe"]);
    let n = 300;
    let id = |i: usize| format!("r{i:04}");
    for i in 0..n {
        write(&p, &id(i), &[out(&id((i + n - 1) % n))]);
    }
    let (code, _) = run_within(&p, &["reconcile", "--once"], DEADLINE);
    assert_eq!(code, 1, "a cycle is a problem of the pass");
    for i in [0, 1, 150, n - 1] {
        let s = p.status_json(&id(i));
        assert_eq!(s["status"], "blocked", "{s}");
        let reason = s["reason"].as_str().unwrap_or("");
        assert!(reason.starts_with("dependency cycle: r0000 -> r0299 -> "), "{reason}");
        assert!(reason.contains(&format!(" {} ", id(i))) && reason.ends_with("(a cycle of 300 commissions)"), "{reason}");
        assert!(reason.len() < 500, "{reason}");
    }
}
