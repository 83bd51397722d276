//! Property tests over odd input: artifact parsing and the decider fed arbitrary bytes and
//! arbitrary YAML (not only well-formed commissions). Never a panic; the writes the decider
//! asks for never touch the body or a key that is not the reconciler's, and a refused edit
//! changes nothing but `status` (put back), `reason` (saying why) and the consumed `desired`
//! (besides the `created` stamp every pass gives an artifact without one). Seeds that ever found a
//! bug are kept in `proptest-regressions/` and replayed first; `PROPTEST_CASES` bounds a run,
//! and every case runs under a time bound (`timeout`).

use std::path::PathBuf;

use chrono::{TimeZone, Utc};
use proptest::prelude::*;
use serde_yaml_ng::Value;

use crate::activity::state::Record;
use crate::artifact::commission::{OWNED_KEYS, REQUEST_KEYS};
use crate::artifact::frontmatter::MAX_FRONTMATTER_BYTES;
use crate::artifact::write::{apply, Edit};
use crate::artifact::{Commission, Status};
use crate::commission::decide::{decide, Action};
use crate::commission::observe::{Observed, Proc, Snapshot};
use crate::config::{Project, ProjectConfig};
use crate::worker::Catalog;

/// Keys and values drawn from what artifacts hold, plus noise.
fn yaml_line() -> impl Strategy<Value = String> {
    let key = prop_oneof![
        Just("status".to_string()),
        Just("desired".to_string()),
        Just("feedback".to_string()),
        Just("worker".to_string()),
        Just("created".to_string()),
        Just("reason".to_string()),
        Just("title".to_string()),
        Just("dependencies".to_string()),
        Just("resources".to_string()),
        Just("timeout".to_string()),
        Just("# a comment".to_string()),
        "[a-z_]{1,8}",
    ];
    let value = prop_oneof![
        Just("pending".to_string()),
        Just("draft".to_string()),
        Just("completed".to_string()),
        Just("cancelled".to_string()),
        Just("in_progress".to_string()),
        Just("dispatched".to_string()),
        Just("review".to_string()),
        Just("approved".to_string()),
        Just("revised".to_string()),
        Just("rejected".to_string()),
        Just("[{text: x, path: a.md, line: 3}]".to_string()),
        Just("scribe".to_string()),
        Just("[.lore/a.md, ../x]".to_string()),
        Just("{max_turns: 3}".to_string()),
        Just("'quoted: value'".to_string()),
        Just("\"[[[\"".to_string()),
        Just("|\n  block\n  text".to_string()),
        Just("&a x".to_string()),
        Just("*a".to_string()),
        Just("90s".to_string()),
        "[ -~]{0,12}",
    ];
    (key, value).prop_map(|(k, v)| if k.starts_with('#') { k } else { format!("{k}: {v}") })
}

fn artifact_text() -> impl Strategy<Value = String> {
    prop_oneof![
        // A commission that parses, with odd values on keys it may or may not have.
        3 => (prop::collection::vec(yaml_line(), 0..8), "[ -~\n]{1,40}").prop_map(|(lines, body)| {
            let mut seen = std::collections::HashSet::from(["worker".to_string()]);
            let lines: Vec<String> =
                lines.into_iter().filter(|l| seen.insert(l.split(':').next().unwrap_or("").to_string())).collect();
            format!("---\nworker: scribe\n{}\n---\nDo {body}\n", lines.join("\n"))
        }),
        // Frontmatter made of plausible lines.
        1 => (prop::collection::vec(yaml_line(), 0..10), "[ -~\n]{0,40}").prop_map(|(lines, body)| {
            format!("---\n{}\n---\n{body}", lines.join("\n"))
        }),
        // Arbitrary bytes (lossily made text, as a read would).
        1 => prop::collection::vec(any::<u8>(), 0..400).prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
        // Arbitrary text inside the delimiters.
        1 => "[ -~\n\t\u{feff}]{0,300}".prop_map(|y| format!("---\n{y}\n---\nbody\n")),
        // Large: one snippet repeated up to and just past the frontmatter cap (64 KiB), after
        // a valid start: deep or long flow collections, many keys, a long block scalar.
        1 => (large_snippet(), 1usize..(MAX_FRONTMATTER_BYTES + 2048)).prop_map(|(s, bytes)| {
            format!("---\nworker: scribe\n{}\n---\nbody\n", s.repeat(bytes / s.len()))
        }),
    ]
}

/// Pieces of frontmatter that are cheap to repeat and costly to parse if nothing bounds them.
fn large_snippet() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "[",
        "{",
        "[a, ",
        "{a: [",
        "]",
        "k: [1, {a: [b, c]}, 'd']\n",
        "- x\n",
        "  line of a block scalar\n",
        "title: |\n",
        "'quoted ",
        "\"dq\\\" ",
        "# comment\n",
        "&a [*a, *a]\n",
        "\u{feff}",
        " ",
    ])
}

fn status() -> impl Strategy<Value = Option<Status>> {
    prop_oneof![
        Just(None),
        Just(Some(Status::Draft)),
        Just(Some(Status::Pending)),
        Just(Some(Status::Blocked)),
        Just(Some(Status::Dispatched)),
        Just(Some(Status::InProgress)),
        Just(Some(Status::Completed)),
        Just(Some(Status::Failed)),
        Just(Some(Status::Cancelled)),
    ]
}

fn now() -> chrono::DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 22, 12, 0, 0).single().expect("time")
}

fn snapshot(o: Observed) -> Snapshot {
    Snapshot {
        now: now(),
        project: Project { root: PathBuf::from("/nonexistent"), name: "p".into(), config: ProjectConfig::default() },
        max_concurrent: 10,
        running_elsewhere: 0,
        running_orphans: 0,
        tasks_running: 0,
        daily_budget: None,
        running_by_package: Default::default(),
        commissions: vec![o],
        schedules: Vec::new(),
        problems: Vec::new(),
        workers: Catalog::with(&["scribe"]),
    }
}

/// The YAML mapping of a text's frontmatter, without the keys the reconciler owns.
fn not_ours(text: &str) -> Option<serde_yaml_ng::Mapping> {
    let sp = crate::artifact::frontmatter::split(text).ok()?;
    let mut m = match serde_yaml_ng::from_str::<Value>(sp.yaml).ok()? {
        Value::Mapping(m) => m,
        _ => serde_yaml_ng::Mapping::new(),
    };
    m.retain(|k, _| k.as_str().is_none_or(|k| !OWNED_KEYS.contains(&k) && !REQUEST_KEYS.contains(&k)));
    Some(m)
}

proptest! {
    // Each case is bounded in time (it runs in a forked child, killed past the bound): one
    // file must never stall a pass. The bound is generous for a debug build on a loaded
    // two-core CI machine; a real case takes milliseconds.
    #![proptest_config(ProptestConfig { cases: 512, timeout: 3_000, ..ProptestConfig::default() })]

    #[test]
    fn odd_artifacts_never_panic_and_writes_stay_surgical(text in artifact_text(), recorded in status(), alive in any::<bool>()) {
        let path = PathBuf::from(".lore/commissions/fuzz.md");
        let Ok(c) = Commission::parse(&path, &text) else { return Ok(()) };
        let record = recorded.map(|status| Record { status, prev: None, attempt: 1, term_sent_at: None, created: None, stopping: None, given: None, revision: None, conflict: None });
        let original = c.clone();
        let mut o = Observed::new(c, record);
        if alive {
            o.attempt.located.proc = Proc::Dead;
        }
        let planned = decide(&snapshot(o));
        for action in &planned.actions {
            let update = match action {
                Action::Update(u)
                | Action::Dispatch { update: u, .. }
                | Action::Finish { update: u, .. }
                | Action::Hold { update: u, .. }
                | Action::Signal { update: u, .. } => u,
                _ => continue,
            };
            if update.edits.is_empty() {
                continue;
            }
            // A refusal on its own: not folded into a transition (a dispatch, or a failure found
            // the same pass, whose own edits are checked by the decider's table tests).
            let refused = update.events.iter().any(|e| e["kind"] == "refused") && !update.events.iter().any(|e| e["kind"] == "status");
            for e in &update.edits {
                let key = match e { Edit::Set(k, _) | Edit::Remove(k) => k.as_str() };
                prop_assert!(OWNED_KEYS.contains(&key) || REQUEST_KEYS.contains(&key), "edited a key that is not ours: {}", key);
                if !refused {
                    continue;
                }
                // Exactly: the status put back to what was recorded, `reason:` saying why, the
                // request consumed — and, separately, the FIFO stamp on an artifact that had
                // none (every pass stamps one, refusal or not).
                match e {
                    Edit::Set(k, v) if k == "status" => {
                        prop_assert_eq!(v.as_str(), recorded.map(|s| s.as_str()), "a refusal set status to something else than the recorded one");
                    }
                    Edit::Set(k, v) if k == "reason" => {
                        prop_assert!(v.as_str().is_some_and(|r| r.starts_with("refused ")), "a refusal's reason: {:?}", v);
                        prop_assert!(!matches!(recorded.or(original.status), Some(Status::Failed | Status::Cancelled)), "a refusal replaced why it ended: {:?}", v);
                    }
                    // Of a failed or cancelled commission: `reason:` (why it ended) is kept.
                    Edit::Set(k, v) if k == "refused" => {
                        prop_assert!(v.as_str().is_some_and(|r| r.starts_with("refused ")), "a refusal's text: {:?}", v);
                        prop_assert!(matches!(recorded.or(original.status), Some(Status::Failed | Status::Cancelled)), "refused: of a {:?} commission", recorded);
                    }
                    Edit::Remove(k) if k == "desired" || k == "feedback" => {}
                    Edit::Set(k, v) if k == "created" => {
                        prop_assert!(original.created().is_none(), "a refusal re-stamped created");
                        prop_assert_eq!(v.as_str().map(str::to_string), Some(crate::commission::decide::timestamp(now())));
                    }
                    other => prop_assert!(false, "a refusal edited {:?}", other),
                }
            }
            // The write either is refused as a whole or changes only what it was asked to.
            if let Ok(new) = apply(&text, &update.edits) {
                let body = |t: &str| crate::artifact::frontmatter::split(t).map(|s| s.body.to_string()).ok();
                prop_assert_eq!(body(&new), body(&text), "the body changed");
                prop_assert_eq!(not_ours(&new), not_ours(&text), "a key that is not ours changed");
                prop_assert!(Commission::parse(&path, &new).is_ok(), "our write made the artifact unparsable:\n{}", new);
            }
        }
    }
}
