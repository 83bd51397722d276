//! What a plan's tasks used: each task attempt's `usage` event in the plan's timeline (its
//! agent's report read by the shim, or the worker's `report-usage`), the plan's `usage:` their
//! sum across waves.

use serde_json::Value;

use super::fixtures::{show, write_plan};
use crate::common::*;

/// A task worker: a Codex-shaped report on its output (1000 in, 200 cached, 10 out), or its
/// own `report-usage` when its prompt says `report`, and a file of its own.
const METERED: &str = r#"if grep -q report "$GUILD_HALL_PROMPT_FILE"; then
  "$GUILD_HALL_BIN" toolbox report-usage --input-tokens 500 --output-tokens 5 --usd 0.125
else
  echo '{"type":"turn.completed","usage":{"input_tokens":1200,"cached_input_tokens":200,"output_tokens":10}}'
fi
echo "$GUILD_HALL_TASK" > "out-$GUILD_HALL_TASK.txt"
"$GUILD_HALL_BIN" toolbox submit-result --summary done"#;

fn plan_usage(p: &Project, id: &str) -> serde_yaml_ng::Value {
    let text = std::fs::read_to_string(p.root.join(format!(".lore/plans/{id}.md"))).expect("plan");
    let yaml = text.strip_prefix("---\n").and_then(|t| t.split_once("\n---")).map(|(y, _)| y).expect("frontmatter");
    let fm: serde_yaml_ng::Value = serde_yaml_ng::from_str(yaml).expect("frontmatter");
    fm["usage"].clone()
}

#[test]
fn a_plan_sums_what_its_tasks_used() {
    let p = Project::new(&[]);
    p.script_worker("metered", "full", METERED);
    write_plan(
        &p,
        "costed",
        "  - - {id: a, worker: metered, prompt: agent}\n    - {id: b, worker: metered, prompt: report}\n  - - {id: c, worker: metered, prompt: agent}\n",
    );
    p.settle();
    let v = show(&p, "costed");
    assert_eq!(v["status"], "completed", "{v}");
    let u = plan_usage(&p, "costed");
    let n = |k: &str| u[k].as_u64().unwrap_or_else(|| panic!("{k}: {u:?}"));
    assert_eq!((n("input_tokens"), n("output_tokens"), n("cached_tokens")), (2500, 25, 400), "{u:?}");
    assert_eq!(u["usd"].as_f64(), Some(0.125), "the dollars known: task b's");
    let events: Vec<Value> = p.timeline("costed").into_iter().filter(|e| e["kind"] == "usage").collect();
    let mut said: Vec<(String, String)> =
        events.iter().map(|e| (e["task"].as_str().unwrap_or("").to_string(), e["source"].as_str().unwrap_or("").to_string())).collect();
    said.sort();
    assert_eq!(
        said,
        [
            ("costed:exec:wave-1:task-1".to_string(), "agent".to_string()),
            ("costed:exec:wave-1:task-2".to_string(), "reported".to_string()),
            ("costed:exec:wave-2:task-1".to_string(), "agent".to_string()),
        ]
    );
    // `plan show` and `status` say it too.
    assert_eq!(v["usage"], serde_json::json!({"input_tokens": 2500, "output_tokens": 25, "cached_tokens": 400, "usd": 0.125}), "{v}");
    let shown = p.ok(&["plan", "show", "costed"]);
    assert!(shown.lines().any(|l| l == "usage     2.9k tok $0.125"), "{shown}");
    let status = p.ok(&["status"]);
    assert!(status.lines().any(|l| l.starts_with("plan costed: completed") && l.contains("· used 2.9k tok $0.125")), "{status}");
    // A further pass changes nothing: each attempt is counted once.
    p.settle();
    assert_eq!(plan_usage(&p, "costed"), u);
    assert_eq!(p.timeline("costed").into_iter().filter(|e| e["kind"] == "usage").count(), 3);
}
