//! The home's index of live runs (`live-runs/`), as the caps across projects see it: a run
//! another project started is counted while every project's reconciler prunes the index at once,
//! and a home whose runs a build before the index started is walked once and counted.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::common::*;

/// One worker slot in `p`'s home, which the other projects' commands are given too.
fn one_slot(p: &Project) {
    std::fs::write(p.home.join("config.yaml"), "max_concurrent_commissions: 1\n").expect("cfg");
}

/// `guild-hall ARGS` in `p`'s checkout under `home`; its output, required to succeed.
fn run_in(p: &Project, home: &Path, args: &[&str]) -> String {
    let out = p.cmd().env("GUILD_HALL_HOME", home).args(args).output().expect("runs");
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn status_in(p: &Project, home: &Path, id: &str) -> String {
    let s: serde_json::Value = serde_json::from_str(&run_in(p, home, &["status", id, "--json"])).expect("json");
    s["status"].as_str().expect("status").to_string()
}

/// The index's entries and the state dirs they name (relative to the state root).
fn entries(home: &Path) -> Vec<(PathBuf, String)> {
    let Ok(dir) = std::fs::read_dir(home.join("live-runs")) else { return Vec::new() };
    dir.map(|e| e.expect("entry").path())
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("run-")))
        .map(|p| {
            let named = std::fs::read_to_string(&p).expect("entry");
            (p, named)
        })
        .collect()
}

/// Make every entry of the index old enough to be pruned once its run is proven over.
fn age_entries(home: &Path) {
    for (path, _) in entries(home) {
        let f = std::fs::File::options().write(true).open(&path).expect("open");
        f.set_modified(SystemTime::now() - Duration::from_secs(3600)).expect("mtime");
    }
}

#[test]
fn a_run_of_another_project_is_counted_while_every_reconciler_prunes_the_index_at_once() {
    let (a, b, c, d) = (Project::new(&["sleeper"]), Project::new(&["sleeper"]), Project::new(&["sleeper"]), Project::new(&["sleeper"]));
    one_slot(&a);
    let home = a.home.clone();
    // A history: finished commissions in two projects, their entries left (young) by their starts.
    for (p, n) in [(&c, 2), (&d, 2)] {
        let ids: Vec<String> = (0..n).map(|i| p.create("sleeper", &format!("Done {i}"), "sleep: 0\nShort.")).collect();
        for _ in 0..40 {
            run_in(p, &home, &["reconcile", "--once", "--wait", "--timeout", "60s"]);
            if ids.iter().all(|id| status_in(p, &home, id) == "completed") {
                break;
            }
        }
        for id in &ids {
            assert_eq!(status_in(p, &home, id), "completed");
        }
    }
    let ended = entries(&home);
    assert_eq!(ended.len(), 4, "one entry per started run: {ended:?}");
    // A long run in project a, its entry as old as the history's.
    let ia = a.create("sleeper", "A", "sleep: 300\nLong.");
    let ib = b.create("sleeper", "B", "sleep: 1\nShort.");
    a.pass_until("a running", |a| a.status(&ia) == "in_progress");
    age_entries(&home);
    // Every project's reconcilers read the index (one after another: the home's dispatch lock
    // takes them in turn), each pruning what it proves over.
    std::thread::scope(|s| {
        for p in [&b, &c, &d, &a] {
            for _ in 0..2 {
                let home = &home;
                s.spawn(move || {
                    let _ = p.cmd().env("GUILD_HALL_HOME", home).args(["reconcile", "--once"]).output().expect("runs");
                });
            }
        }
    });
    assert_eq!(status_in(&b, &home, &ib), "pending", "a's run holds the one slot");
    let left = entries(&home);
    assert_eq!(left.len(), 1, "the ended runs' entries pruned, the live one's kept: {left:?}");
    assert!(left[0].1.ends_with(&format!("/commissions/{ia}")), "{left:?}");
    // Over, it frees the slot (its entry, young or not, counts no more).
    a.ok(&["commission", "cancel", &ia]);
    a.settle();
    run_in(&b, &home, &["reconcile", "--once", "--wait", "--timeout", "60s"]);
    assert_eq!(status_in(&b, &home, &ib), "completed");
}

#[test]
fn a_home_whose_runs_a_build_before_started_is_walked_and_they_are_counted() {
    let (a, b) = (Project::new(&["sleeper"]), Project::new(&["sleeper"]));
    one_slot(&a);
    let home = a.home.clone();
    let ia = a.create("sleeper", "A", "sleep: 300\nLong.");
    let ib = b.create("sleeper", "B", "sleep: 1\nShort.");
    a.pass_until("a running", |a| a.status(&ia) == "in_progress");
    // As the build before left the home: its runs have no index.
    std::fs::remove_dir_all(home.join("live-runs")).expect("no index");
    run_in(&b, &home, &["reconcile", "--once"]);
    assert_eq!(status_in(&b, &home, &ib), "pending", "a's run, found by the walk, holds the one slot");
    assert!(home.join("live-runs/complete").is_file(), "the index is marked complete after the walk");
    let found = entries(&home);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].1.ends_with(&format!("/commissions/{ia}")), "{found:?}");
    // The next process counts it too (its own first look walks as well, and registers nothing
    // the index has).
    run_in(&b, &home, &["reconcile", "--once"]);
    assert_eq!(status_in(&b, &home, &ib), "pending");
    assert_eq!(entries(&home).len(), 1);
    // A run the index never saw although it is complete (an older build ran in this home after
    // the index was made: a downgrade, then this build again) is found by the next process.
    std::fs::remove_file(&entries(&home)[0].0).expect("its entry gone");
    assert!(home.join("live-runs/complete").is_file());
    run_in(&b, &home, &["reconcile", "--once"]);
    assert_eq!(status_in(&b, &home, &ib), "pending", "a's run, found by the next process's walk, holds the one slot");
    assert_eq!(entries(&home).len(), 1, "and registered again");
    a.ok(&["commission", "cancel", &ia]);
    a.settle();
    run_in(&b, &home, &["reconcile", "--once", "--wait", "--timeout", "60s"]);
    assert_eq!(status_in(&b, &home, &ib), "completed");
}
