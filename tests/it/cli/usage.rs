//! `guild-hall usage`: what the project's ended attempts used, by commission (a wave task by
//! its id), worker, plan or day, since a date, as a table and as JSON; and `status`'s usage.

use serde_json::Value;

use crate::common::*;

/// Reports its usage with `report-usage`: `N` thousand input tokens from its prompt's `k=N`
/// line, 10 out, and a dollar if the prompt says `paid`.
const REPORTER: &str = r#"k=$(sed -n 's/^k=//p' "$GUILD_HALL_PROMPT_FILE")
if grep -q paid "$GUILD_HALL_PROMPT_FILE"; then usd="--usd 1"; else usd=""; fi
"$GUILD_HALL_BIN" toolbox report-usage --input-tokens "${k}000" --output-tokens 10 $usd
echo "$GUILD_HALL_ID" > "out-$GUILD_HALL_ID-${GUILD_HALL_TASK:-c}.txt"
"$GUILD_HALL_BIN" toolbox submit-result --summary done"#;

fn report(p: &Project, args: &[&str]) -> Value {
    let mut all = vec!["usage", "--json"];
    all.extend(args);
    serde_json::from_str(&p.ok(&all)).expect("usage json")
}

/// (key, attempts, input tokens, usd) of each row.
fn rows(v: &Value) -> Vec<(String, u64, u64, Option<f64>)> {
    v["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| {
            let u = &r["usage"];
            (
                r["key"].as_str().unwrap_or("").to_string(),
                r["attempts"].as_u64().unwrap_or(0),
                u["input_tokens"].as_u64().unwrap_or(0),
                u["usd"].as_f64(),
            )
        })
        .collect()
}

#[test]
fn usage_sums_by_commission_worker_plan_and_day() {
    let p = Project::new(&[]);
    p.script_worker("alpha", "full", REPORTER);
    p.script_worker("beta", "full", REPORTER);
    let none = p.ok(&["usage"]);
    assert!(none.contains("no usage recorded"), "{none}");
    p.write_commission("one", "---\nworker: alpha\n---\nk=1\npaid\n");
    p.write_commission("two", "---\nworker: beta\n---\nk=2\n");
    std::fs::create_dir_all(p.root.join(".lore/plans")).expect("mkdir");
    std::fs::write(
        p.root.join(".lore/plans/build.md"),
        "---\ntitle: build\nwaves:\n  - - {id: a, worker: alpha, prompt: \"k=4\"}\n    - {id: b, worker: beta, prompt: \"k=8\\npaid\"}\n---\n",
    )
    .expect("plan");
    p.settle();
    assert_eq!(p.status("one"), "completed", "{}", p.ok(&["logs", "one"]));

    let by_commission = report(&p, &[]);
    assert_eq!(by_commission["by"], "commission");
    assert_eq!(
        rows(&by_commission),
        [
            ("build:exec:wave-1:task-1".to_string(), 1, 4000, None),
            ("build:exec:wave-1:task-2".to_string(), 1, 8000, Some(1.0)),
            ("one".to_string(), 1, 1000, Some(1.0)),
            ("two".to_string(), 1, 2000, None),
        ]
    );
    assert_eq!((by_commission["total"]["input_tokens"].as_u64(), by_commission["total"]["usd"].as_f64()), (Some(15000), Some(2.0)));
    assert_eq!(
        rows(&report(&p, &["--by", "worker"])),
        [("alpha".to_string(), 2, 5000, Some(1.0)), ("beta".to_string(), 2, 10000, Some(1.0))]
    );
    assert_eq!(rows(&report(&p, &["--by", "plan"])), [("-".to_string(), 2, 3000, Some(1.0)), ("build".to_string(), 2, 12000, Some(1.0))]);
    let today = chrono::Utc::now().format("%Y-%m-%d").to_string();
    let by_day = rows(&report(&p, &["--by", "day", "--since", &today]));
    assert_eq!(by_day.len(), 1, "{by_day:?}");
    assert_eq!((by_day[0].0.as_str(), by_day[0].1, by_day[0].2), (today.as_str(), 4, 15000));
    assert_eq!(rows(&report(&p, &["--since", "2999-01-01"])), []);

    // The table: a row a worker, then the total; no dollars known is `-`, never $0.
    let table = p.ok(&["usage", "--by", "worker"]);
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[0].starts_with("WORKER") && lines[0].contains("USD"), "{table}");
    assert!(lines[1].starts_with("alpha") && lines[1].contains("5000") && lines[1].contains("$1.00"), "{table}");
    assert!(lines[3].starts_with("total") && lines[3].contains("15000") && lines[3].contains("$2.00"), "{table}");
    let table = p.ok(&["usage"]);
    let two = table.lines().find(|l| l.starts_with("two")).expect("two's row");
    assert!(two.trim_end().ends_with('-'), "{table}");

    // Bad input says what was expected.
    let (code, _, err) = p.run(&["usage", "--since", "last week"]);
    assert_ne!(code, 0);
    assert!(err.contains("expected a day (2026-11-01)"), "{err}");
    let (code, _, err) = p.run(&["usage", "--by", "team"]);
    assert_ne!(code, 0);
    assert!(err.contains("commission"), "{err}");

    // What guild-hall wrote passes `check` (the `usage:` of commissions and plans is theirs).
    p.ok(&["check"]);
    // `status --json` carries each commission's usage; tokens only when no dollars are known.
    let one = p.status_json("one");
    assert_eq!(one["usage"], serde_json::json!({"input_tokens": 1000, "output_tokens": 10, "cached_tokens": 0, "usd": 1.0}), "{one}");
    let two = p.status_json("two");
    assert_eq!(two["usage"], serde_json::json!({"input_tokens": 2000, "output_tokens": 10, "cached_tokens": 0}), "{two}");
    // The status table's USAGE column.
    let status = p.ok(&["status"]);
    let header = status.lines().find(|l| l.starts_with("ID")).expect("header");
    assert!(header.contains("USAGE"), "{status}");
    let row = status.lines().find(|l| l.starts_with("one ")).expect("one's row");
    assert!(row.contains("1.0k tok $1.00"), "{status}");
    let row = status.lines().find(|l| l.starts_with("two ")).expect("two's row");
    assert!(row.contains("2.0k tok") && !row.contains('$'), "{status}");
}
