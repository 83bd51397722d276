//! Agent Client Protocol workers (`protocol: acp`), for real: Zed's `claude-code-acp` adapter
//! from npm (pinned, installed into `target/claude-code-acp` on first use, as `.ci/run` does up
//! front), confined, driven by guild-hall's ACP client against the local stand-in for the model
//! API (`tests/fake_anthropic.py`): a commission through the toolbox, a meeting whose second
//! turn loads the first's session, and a cancel that leaves no process.

use std::path::{Path, PathBuf};

use crate::common::*;
use crate::worker::claude_code::FakeApi;

/// The adapter's pinned version (docs/workers.md, the package's worker.yaml and `.ci/run`).
const CLAUDE_CODE_ACP: &str = "0.16.2";

fn real_claude_code_acp() -> PathBuf {
    npm_cli("claude-code-acp", "@zed-industries/claude-code-acp", CLAUDE_CODE_ACP, "claude-code-acp")
}

fn guild_hall(p: &Project, api: &FakeApi, bin: &Path, args: &[&str]) -> (String, String) {
    let out = p
        .cmd()
        .env("PATH", path_with(bin))
        .env("ANTHROPIC_BASE_URL", api.url())
        .env("ANTHROPIC_API_KEY", "sk-stand-in")
        .args(args)
        .output()
        .expect("runs");
    let (o, e) = (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned());
    assert!(out.status.success(), "{args:?}\n{o}\n{e}");
    (o, e)
}

/// The requests the model API got that offered tools (the agent's turns), as JSON.
fn agent_requests(api: &FakeApi) -> Vec<serde_json::Value> {
    api.tool_results()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|r| r["body"]["tools"].as_array().is_some_and(|t| !t.is_empty()))
        .collect()
}

#[test]
fn real_claude_code_acp_commission_calls_the_toolbox_and_lands_its_file() {
    let bin = real_claude_code_acp();
    let p = Project::new(&[]);
    p.ok(&["workers", "add", "claude-code-acp"]);
    let api = FakeApi::start(
        p.tmp.path(),
        &serde_json::json!([
            // Not the toolbox and not in the package's acp.allow: the client rejects it.
            {"tool_use": {"name": "Write", "input": {"file_path": "forbidden.md", "content": "x"}}},
            {"tool_use": {"name": "mcp__guild-hall__report_progress", "input": {"text": "reading"}}},
            {"tool_use": {"name": "mcp__guild-hall__write_artifact", "input": {"path": ".lore/research/acp.md", "content": "# ACP\n\nOne protocol, many agents.\n"}}},
            {"tool_use": {"name": "mcp__guild-hall__submit_result", "input": {"summary": "Wrote the note", "artifacts": [".lore/research/acp.md"]}}},
            {"text": "All done."}
        ]),
    );
    p.write_commission("note", "---\nworker: claude-code-acp\noutputs: [.lore/research/acp.md]\n---\nWrite a note on ACP.\n");
    plant_person_agent_homes(&p);
    guild_hall(&p, &api, &bin, &["reconcile", "--once", "--wait", "--timeout", "180s"]);
    let log = p.ok(&["logs", "note"]);
    assert_eq!(p.status("note"), "completed", "{}\n{log}", p.status_json("note"));
    assert_eq!(git(&p.root, &["show", "claude/main:.lore/research/acp.md"]), "# ACP\n\nOne protocol, many agents.\n");
    assert!(!git(&p.root, &["ls-tree", "-r", "--name-only", "claude/main"]).contains("forbidden.md"));
    // The log: the client's permission decisions and the agent's events, in guild-hall's lines.
    assert!(log.contains("[guild-hall acp] denied Write"), "{log}");
    assert!(log.contains("[guild-hall acp] allowed mcp__guild-hall__write_artifact"), "{log}");
    assert!(log.contains(r#""name":"mcp__guild-hall__submit_result","type":"tool_use""#), "{log}");
    assert!(log.contains(r#"{"type":"turn_end"}"#), "{log}");
    // The toolbox was offered to the model over MCP, the system prompt ahead of the prompt.
    let requests = agent_requests(&api);
    let turn = requests.iter().find(|r| r["body"]["messages"].to_string().contains("Write a note on ACP.")).expect("the prompt's request");
    let tools: Vec<&str> = turn["body"]["tools"].as_array().into_iter().flatten().filter_map(|t| t["name"].as_str()).collect();
    assert!(tools.contains(&"mcp__guild-hall__submit_result"), "{tools:?}");
    assert!(turn["body"]["messages"].to_string().contains("You are a guild-hall worker."), "the system prompt went first: {turn}");
    // Claude Code's state went to this package's own home, never to the person's ~/.claude.
    agent_homes_apart(&p, &[".claude/guild-hall-claude-code-acp"]);
}

#[test]
fn real_claude_code_acp_meeting_second_turn_loads_the_first() {
    let bin = real_claude_code_acp();
    let p = Project::new(&[]);
    p.ok(&["workers", "add", "claude-code-acp"]);
    let api =
        FakeApi::start(p.tmp.path(), &serde_json::json!([{"text": "Noted: MANGO."}, {"text": "It was MANGO."}, {"text": "Still here."}]));
    let (out, _) =
        guild_hall(&p, &api, &bin, &["meeting", "start", "--worker", "claude-code-acp", "--id", "m", "Remember the word MANGO."]);
    assert!(out.contains("Noted: MANGO."), "{out}");
    let artifact = std::fs::read_to_string(p.root.join(".lore/meetings/m.md")).expect("artifact");
    let session = artifact.lines().find_map(|l| l.strip_prefix("session_id: ")).expect("a session id stored").to_string();
    let (out, _) = guild_hall(&p, &api, &bin, &["meeting", "send", "m", "What was the word?"]);
    assert!(out.contains("It was MANGO."), "{out}");
    let artifact = std::fs::read_to_string(p.root.join(".lore/meetings/m.md")).expect("artifact");
    assert!(artifact.contains(&format!("session_id: {session}")), "the same session, loaded: {artifact}");
    // Turn 2's request to the model carries turn 1: the session was loaded, not renewed.
    let requests = agent_requests(&api);
    let last = requests.last().expect("requests").to_string();
    assert!(last.contains("What was the word?") && last.contains("Remember the word MANGO.") && last.contains("Noted: MANGO."), "{last}");
    let show = p.ok(&["meeting", "show", "m", "--json"]);
    assert!(!show.contains("session_renewed"), "{show}");

    // A session the agent does not have: session/load refused, the session renewed in a fresh one
    // told the conversation so far.
    let path = p.root.join(".lore/meetings/m.md");
    let text = std::fs::read_to_string(&path).expect("artifact").replace(&session, "00000000-0000-4000-8000-000000000000");
    std::fs::write(&path, text).expect("write");
    let (out, _) = guild_hall(&p, &api, &bin, &["meeting", "send", "m", "Still there?", "--json"]);
    assert!(out.contains("session not found"), "the refusal is shown: {out}");
    assert!(out.lines().last().unwrap_or("").contains("\"outcome\":\"ended\""), "{out}");
    let show: serde_json::Value = serde_json::from_str(&p.ok(&["meeting", "show", "m", "--json"])).expect("json");
    let renewal = show["log"].as_array().expect("log").iter().find(|e| e["kind"] == "session_renewed").cloned().expect("renewed");
    assert_eq!(renewal["old"], "00000000-0000-4000-8000-000000000000");
    let last = agent_requests(&api).last().expect("requests").to_string();
    assert!(last.contains("Still there?") && last.contains("Remember the word MANGO."), "told the conversation: {last}");
}

#[test]
fn real_claude_code_acp_cancelled_mid_turn_leaves_no_process() {
    let bin = real_claude_code_acp();
    let p = Project::new(&[]);
    p.ok(&["workers", "add", "claude-code-acp"]);
    // The model takes its time (every request: Claude Code's own side requests may come first):
    // the turn is in progress when it is cancelled.
    let late = serde_json::json!({"text": "late", "sleep": 120});
    let api = FakeApi::start(p.tmp.path(), &serde_json::json!([late, late, late, late]));
    p.write_commission("slow", "---\nworker: claude-code-acp\n---\nTake your time.\n");
    let requests = p.tmp.path().join("requests.jsonl");
    let out = in_pid_namespace(
        &p,
        &format!(
            r#"
export PATH='{path}' ANTHROPIC_BASE_URL='{url}' ANTHROPIC_API_KEY=sk-stand-in
dispatch slow
shim=$(field slow pid)
wait_for "the prompt at the model" grep -qs 'Take your time.' {requests}
agent_processes() {{
  for d in /proc/[0-9]*; do
    pid=${{d#/proc/}}
    [ "$pid" = 1 ] || [ "$pid" = $$ ] && continue
    cwd=$(readlink $d/cwd 2>/dev/null || true)
    cmd=$(tr '\0' ' ' < $d/cmdline 2>/dev/null || true)
    case "$cwd $cmd" in
      *{home}*|*claude*|*node*) alive $pid && echo "$pid cwd=$cwd cmd=$cmd" ;;
    esac
  done
  return 0
}}
echo "--- during"
agent_processes
"$GH" commission cancel slow >/dev/null
pass_until "the attempt stopped" gone $shim
"$GH" reconcile --once >/dev/null 2>&1 || true
echo "--- left"
agent_processes
echo "--- status"
"$GH" status slow --json
"#,
            path = path_with(&bin),
            url = api.url(),
            requests = requests.display(),
            home = p.home.display(),
        ),
    );
    // One line a process: its pid first.
    let during: Vec<&str> = section(&out, "during").lines().filter(|l| l.starts_with(|c: char| c.is_ascii_digit())).collect();
    assert!(
        during.iter().any(|l| l.contains("claude-code-acp")) && during.iter().any(|l| l.contains("guild-hall acp")),
        "the turn ran: {during:?}"
    );
    let left: Vec<&str> = section(&out, "left").lines().filter(|l| l.starts_with(|c: char| c.is_ascii_digit())).collect();
    assert!(left.is_empty(), "processes left after the cancel:\n{}", left.join("\n"));
    assert!(section(&out, "status").contains("\"cancelled\""), "{out}");
    let log = p.ok(&["logs", "slow"]);
    assert!(log.contains(r#"{"reason":"cancelled","type":"error"}"#), "{log}");
}

#[test]
fn real_claude_code_acp_coder_as_a_wave_task_lands_its_change() {
    let bin = real_claude_code_acp();
    let p = Project::new(&[]);
    p.ok(&["workers", "add", "claude-code-acp-coder"]);
    let api = FakeApi::start(
        p.tmp.path(),
        &serde_json::json!([
            // Bash is in the coder's acp.allow: allowed, and run confined in the task's worktree.
            {"tool_use": {"name": "Bash", "input": {"command": "echo 'from a wave' > src/wave.txt && echo written", "description": "write it"}}},
            {"tool_use": {"name": "mcp__guild-hall__report_progress", "input": {"text": "wrote src/wave.txt"}}},
            {"text": "Wrote it."}
        ]),
    );
    let dir = p.root.join(".lore/plans");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(
        dir.join("port.md"),
        "---\ntitle: port\nwaves:\n  - - {id: wave, worker: claude-code-acp-coder, prompt: \"Add src/wave.txt.\"}\n---\n",
    )
    .expect("plan");
    guild_hall(&p, &api, &bin, &["reconcile", "--once", "--wait", "--timeout", "180s"]);
    let plan: serde_json::Value = serde_json::from_str(&p.ok(&["plan", "show", "port", "--json"])).expect("plan json");
    assert_eq!(plan["status"], "completed", "{plan}\n{}", p.ok(&["plan", "logs", "port", "wave"]));
    assert_eq!(git(&p.root, &["show", "claude/main:src/wave.txt"]), "from a wave\n");
    assert!(api.tool_results().contains("written"), "the command ran");
}

/// A repository's `.claude/settings.json` is its content, not the operator's word: its
/// `permissions.allow` must not let the read-only package write past guild-hall's policy.
#[test]
fn real_claude_code_acp_ignores_the_repositorys_claude_settings() {
    let bin = real_claude_code_acp();
    let p = Project::new(&[]);
    p.ok(&["workers", "add", "claude-code-acp"]);
    let settings = r#"{"permissions": {"allow": ["Write", "Write(*)", "Bash", "Bash(*)"], "defaultMode": "acceptEdits"}}"#;
    p.commit_on_integration(".claude/settings.json", settings, "the repository's Claude settings");
    let api = FakeApi::start(
        p.tmp.path(),
        &serde_json::json!([
            {"tool_use": {"name": "Write", "input": {"file_path": "forbidden.md", "content": "x"}}},
            {"tool_use": {"name": "mcp__guild-hall__submit_result", "input": {"summary": "Tried"}}},
            {"text": "All done."}
        ]),
    );
    p.write_commission("note", "---\nworker: claude-code-acp\n---\nWrite forbidden.md.\n");
    guild_hall(&p, &api, &bin, &["reconcile", "--once", "--wait", "--timeout", "180s"]);
    let log = p.ok(&["logs", "note"]);
    assert!(log.contains("[guild-hall acp] denied Write"), "asked, and denied: {log}");
    assert!(!git(&p.root, &["ls-tree", "-r", "--name-only", "claude/main"]).contains("forbidden.md"), "{log}");
}

/// A commission's revision (`guild-hall revise`) under guild-hall's ACP client loads the session
/// of the attempt it revises (`session/load`): the model is sent attempt 1's conversation and
/// the feedback.
#[test]
fn real_claude_code_acp_revision_loads_the_session_with_the_feedback() {
    let bin = real_claude_code_acp();
    let p = Project::new(&[]);
    p.ok(&["workers", "add", "claude-code-acp"]);
    let submit = |n: u32| {
        vec![
            serde_json::json!({"tool_use": {"name": "mcp__guild-hall__submit_result", "input": {"summary": format!("attempt {n}")}}}),
            serde_json::json!({"text": format!("ATTEMPT-{n}-DONE")}),
        ]
    };
    let api = FakeApi::start(p.tmp.path(), &serde_json::Value::Array(submit(1).into_iter().chain(submit(2)).collect()));
    p.write_commission("rev", "---\nworker: claude-code-acp\nreview: required\n---\nSay something.\n");
    guild_hall(&p, &api, &bin, &["reconcile", "--once", "--wait", "--timeout", "180s"]);
    assert_eq!(p.status("rev"), "review", "{}", p.ok(&["logs", "rev"]));
    let first = agent_requests(&api).len();
    p.ok(&["revise", "rev", "-m", "FEEDBACK-4242"]);
    guild_hall(&p, &api, &bin, &["reconcile", "--once", "--wait", "--timeout", "180s"]);
    let log = p.ok(&["logs", "rev", "--attempt", "2"]);
    assert_eq!(p.status("rev"), "review", "{log}");
    let requests = agent_requests(&api);
    let again = requests[first..]
        .iter()
        .map(|r| r["body"]["messages"].to_string())
        .find(|m| m.contains("FEEDBACK-4242"))
        .unwrap_or_else(|| panic!("attempt 2 was given the feedback: {:?}\n{log}", &requests[first..]));
    assert!(again.contains("Feedback on attempt 1"), "{again}");
    assert!(again.contains("ATTEMPT-1-DONE"), "the loaded session holds attempt 1: {again}\n{log}");
}
