//! What a commission's attempts used: a plain worker's `toolbox report-usage`, an agent's own
//! report on its output read by the shim (which wins), `prices:` turning tokens into dollars,
//! and the artifact's `usage:` summed over attempts, each attempt's `usage` timeline event.

use serde_json::Value;

use crate::common::*;

/// The artifact's frontmatter as YAML.
fn frontmatter(p: &Project, id: &str) -> serde_yaml_ng::Value {
    let text = p.artifact(id);
    let yaml = text.strip_prefix("---\n").and_then(|t| t.split_once("\n---")).map(|(y, _)| y).expect("frontmatter");
    serde_yaml_ng::from_str(yaml).expect("frontmatter parses")
}

fn usage_events(p: &Project, id: &str) -> Vec<Value> {
    p.timeline(id).into_iter().filter(|e| e["kind"] == "usage").collect()
}

fn figures(v: &serde_yaml_ng::Value) -> (u64, u64, u64, Option<f64>) {
    let n = |k: &str| v[k].as_u64().unwrap_or_else(|| panic!("{k} in {v:?}"));
    (n("input_tokens"), n("output_tokens"), n("cached_tokens"), v["usd"].as_f64())
}

/// `prices:` added to the home's config.yaml.
fn prices(p: &Project, yaml: &str) {
    let file = p.home.join("config.yaml");
    let text = std::fs::read_to_string(&file).unwrap_or_default();
    std::fs::write(&file, format!("{text}\nprices:\n{yaml}")).expect("config.yaml");
}

#[test]
fn a_plain_worker_reports_its_usage_which_adds_up_tokens_only() {
    let p = Project::new(&[]);
    p.script_worker(
        "caller",
        "sparse",
        r#""$GUILD_HALL_BIN" toolbox report-usage --input-tokens 1200 --output-tokens 300 --cached-tokens 5000
"$GUILD_HALL_BIN" toolbox report-usage --input-tokens 800 --output-tokens 100 --model tiny-1
# What is no amount of dollars is refused, and nothing recorded.
if "$GUILD_HALL_BIN" toolbox report-usage --input-tokens 1 --output-tokens 1 --usd -2; then exit 9; fi
"$GUILD_HALL_BIN" toolbox submit-result --summary "called a model twice""#,
    );
    let id = p.create("caller", "Call", "Call a model.");
    p.settle();
    assert_eq!(p.status(&id), "completed", "{}", p.ok(&["logs", &id]));
    let fm = frontmatter(&p, &id);
    assert_eq!(figures(&fm["usage"]), (2000, 400, 5000, None), "no dollars reported, none priced: tokens only\n{}", p.artifact(&id));
    let reports: Vec<Value> = p.timeline(&id).into_iter().filter(|e| e["kind"] == "usage_report").collect();
    assert_eq!(reports.len(), 2, "each report is the worker's word, in the timeline");
    let events = usage_events(&p, &id);
    assert_eq!(events.len(), 1, "{events:?}");
    let e = &events[0];
    assert_eq!((e["attempt"].as_u64(), e["source"].as_str(), e["worker"].as_str()), (Some(1), Some("reported"), Some("caller")));
    assert_eq!((e["input_tokens"].as_u64(), e["output_tokens"].as_u64(), e["cached_tokens"].as_u64()), (Some(2000), Some(400), Some(5000)));
    assert!(e.get("usd").is_none(), "never invented: {e}");
}

#[test]
fn prices_in_config_yaml_turn_reported_tokens_into_dollars() {
    let p = Project::new(&[]);
    // By model for the first, by package name for the second.
    prices(&p, "  tiny-1: {input: 2.0, output: 10.0, cached: 0.5}\n  priced-pkg: {input: 1.0, output: 1.0}\n");
    p.script_worker(
        "tiny-caller",
        "sparse",
        r#""$GUILD_HALL_BIN" toolbox report-usage --input-tokens 1000000 --output-tokens 100000 --cached-tokens 2000000 --model tiny-1
"$GUILD_HALL_BIN" toolbox submit-result --summary "called""#,
    );
    p.script_worker(
        "priced-pkg",
        "sparse",
        r#""$GUILD_HALL_BIN" toolbox report-usage --input-tokens 500000 --output-tokens 250000
"$GUILD_HALL_BIN" toolbox submit-result --summary "called""#,
    );
    let by_model = p.create("tiny-caller", "By model", "Call.");
    let by_package = p.create("priced-pkg", "By package", "Call.");
    p.settle();
    // 1M × $2 + 0.1M × $10 + 2M × $0.5
    assert_eq!(figures(&frontmatter(&p, &by_model)["usage"]), (1_000_000, 100_000, 2_000_000, Some(4.0)), "{}", p.artifact(&by_model));
    assert_eq!(figures(&frontmatter(&p, &by_package)["usage"]).3, Some(0.75));
    let e = &usage_events(&p, &by_model)[0];
    assert_eq!((e["usd"].as_f64(), e["priced"].as_bool(), e["model"].as_str()), (Some(4.0), Some(true), Some("tiny-1")));
}

/// A Codex-shaped worker: prints what `codex exec --json` ends a turn with, then ends as told.
const CODEX_SHAPED: &str = r#"echo '{"type":"thread.started","thread_id":"t1"}'
echo '{"type":"turn.completed","usage":{"input_tokens":21555,"cached_input_tokens":1500,"output_tokens":20,"reasoning_output_tokens":0}}'
# Its own word besides: the agent's report read from its output wins.
"$GUILD_HALL_BIN" toolbox report-usage --input-tokens 1 --output-tokens 1
if [ "$GUILD_HALL_ATTEMPT" = 1 ]; then exit 3; fi
"$GUILD_HALL_BIN" toolbox submit-result --summary "second time lucky""#;

#[test]
fn an_agents_own_report_wins_and_attempts_add_up() {
    let p = Project::new(&[]);
    p.script_worker("codexish", "sparse", CODEX_SHAPED);
    let id = p.create("codexish", "Twice", "Try twice.");
    p.settle();
    assert_eq!(p.status(&id), "failed");
    assert_eq!(figures(&frontmatter(&p, &id)["usage"]), (20055, 20, 1500, None), "{}", p.artifact(&id));
    p.ok(&["commission", "redispatch", &id]);
    p.settle();
    assert_eq!(p.status(&id), "completed", "{}", p.ok(&["logs", &id]));
    assert_eq!(figures(&frontmatter(&p, &id)["usage"]), (40110, 40, 3000, None), "summed over both attempts\n{}", p.artifact(&id));
    let events = usage_events(&p, &id);
    let said: Vec<(Option<u64>, Option<&str>, Option<u64>)> =
        events.iter().map(|e| (e["attempt"].as_u64(), e["source"].as_str(), e["input_tokens"].as_u64())).collect();
    assert_eq!(said, [(Some(1), Some("agent"), Some(20055)), (Some(2), Some("agent"), Some(20055))]);
    // What the shim recorded is guild-hall's: in the state dir, out of the worker's reach.
    let recorded = p.state_dir(&id).join("attempt-2.usage.json");
    assert!(recorded.is_file(), "{}", recorded.display());
}
