//! The Codex and Gemini CLI ACP packages (`codex-acp`, `gemini-acp`) run for real under
//! guild-hall's ACP client: Zed's `@zed-industries/codex-acp` and `gemini --acp` from npm (pinned,
//! installed into `target/` on first use, as `.ci/run` does up front), confined, against the
//! stand-ins of the Codex and Gemini CLI tests: per agent a commission through the toolbox, a
//! meeting whose second turn loads the first's session, a cancel that leaves no process, and the
//! coder package as a wave task.

use std::path::PathBuf;
use std::process::Output;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

use crate::common::*;
use crate::worker::claude_code::FakeApi;
use crate::worker::codex::{fake_openai, requests, tool_outputs, toolbox_offered, OTHERS};
use crate::worker::gemini::{offered, planted_gemini_settings, real_gemini, stand_in, turns};

/// Zed's Codex adapter's pinned version (the package's worker.yaml, docs/workers.md, `.ci/run`).
const CODEX_ACP: &str = "0.16.0";

fn real_codex_acp() -> PathBuf {
    npm_cli("codex-acp", "@zed-industries/codex-acp", CODEX_ACP, "codex-acp")
}

/// One agent under test: its CLI, the variables that point it at the stand-in, and the stand-in.
struct Agent {
    bin: PathBuf,
    env: Vec<(&'static str, String)>,
    api: FakeApi,
}

impl Agent {
    /// `codex-acp` against the Responses API stand-in, with a model Codex has no metadata for (so
    /// that MCP tools are plain function tools grouped by server, which the stand-in can script).
    fn codex(p: &Project, script: Value) -> Agent {
        let bin = real_codex_acp();
        let api = fake_openai(p, script);
        let env = vec![
            ("OPENAI_BASE_URL", format!("{}/v1", api.url)),
            ("OPENAI_API_KEY", "sk-stand-in".to_string()),
            ("CODEX_MODEL", "stand-in-model".to_string()),
        ];
        Agent { bin, env, api }
    }

    /// `gemini --acp` against the Gemini API stand-in.
    fn gemini(p: &Project, script: Value) -> Agent {
        let bin = real_gemini();
        let api = stand_in(p, script);
        let env = vec![("GOOGLE_GEMINI_BASE_URL", api.url.clone()), ("GEMINI_API_KEY", "stand-in-key".to_string())];
        Agent { bin, env, api }
    }

    /// `guild-hall ARGS` with the agent on PATH and pointed at the stand-in (through pass_env).
    fn run(&self, p: &Project, args: &[&str]) -> Output {
        let mut c = p.cmd();
        c.env("PATH", path_with(&self.bin));
        for (k, v) in &self.env {
            c.env(k, v);
        }
        c.args(args).output().expect("runs")
    }

    fn ok(&self, p: &Project, args: &[&str]) -> String {
        let out = self.run(p, args);
        let (o, e) = (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned());
        assert!(out.status.success(), "{args:?}\n{o}\n{e}");
        o
    }

    /// The same variables as shell exports, for a script in a pid namespace.
    fn exports(&self) -> String {
        let mut s = format!("export PATH='{}'", path_with(&self.bin));
        for (k, v) in &self.env {
            s.push_str(&format!(" {k}='{v}'"));
        }
        s
    }
}

/// A project with the bundled package `name` added.
fn project_with(name: &str) -> Project {
    let p = Project::new(&[]);
    p.ok(&["workers", "add", name]);
    p
}

/// A commission whose model calls the toolbox over MCP: its file lands on claude/main, and the
/// client's log shows the calls allowed and the turn's end.
fn commission_lands_its_file(p: &Project, agent: &Agent, worker: &str) -> String {
    p.write_commission("note", &format!("---\nworker: {worker}\noutputs: [.lore/research/acp.md]\n---\nWrite a note on ACP.\n"));
    agent.ok(p, &["reconcile", "--once", "--wait", "--timeout", "180s"]);
    let log = p.ok(&["logs", "note"]);
    assert_eq!(p.status("note"), "completed", "{}\n{log}", p.status_json("note"));
    assert_eq!(git(&p.root, &["show", "claude/main:.lore/research/acp.md"]), "# ACP\n\nOne protocol, many agents.\n");
    assert!(log.contains("[guild-hall acp] allowed") && log.contains("write_artifact"), "{log}");
    assert!(log.contains(r#"{"type":"turn_end"}"#), "{log}");
    assert!(p.status_json("note").to_string().contains("Wrote the note"), "{}", p.status_json("note"));
    assert!(!log.contains("sk-stand-in") && !log.contains("stand-in-key"), "no key in the log");
    log
}

#[test]
fn real_codex_acp_commission_calls_the_toolbox_and_lands_its_file() {
    let p = project_with("codex-acp");
    let ns = "mcp__guild_hall";
    let agent = Agent::codex(
        &p,
        json!([
            // Codex never asks here (approval_policy "never"): its own read-only sandbox, which
            // cannot start inside guild-hall's Landlock, refuses the command.
            {"call": {"name": "exec_command", "arguments": {"cmd": "echo x > forbidden.md && echo WROTE"}}},
            {"call": {"namespace": ns, "name": "report_progress", "arguments": {"text": "reading"}}},
            {"call": {"namespace": ns, "name": "write_artifact", "arguments": {"path": ".lore/research/acp.md", "content": "# ACP\n\nOne protocol, many agents.\n"}}},
            {"call": {"namespace": ns, "name": "submit_result", "arguments": {"summary": "Wrote the note", "artifacts": [".lore/research/acp.md"]}}},
            {"text": "All done."}
        ]),
    );
    plant_person_agent_homes(&p);
    commission_lands_its_file(&p, &agent, "codex-acp");
    assert!(!git(&p.root, &["ls-tree", "-r", "--name-only", "claude/main"]).contains("forbidden.md"));
    agent_homes_apart(&p, &[".codex/guild-hall-codex-acp"]);
    // What Codex sent: the prompt after the system prompt, the toolbox grouped under its server,
    // the key from pass_env; each tool's result went back to the model.
    let reqs = requests(&agent.api);
    let first = reqs.iter().find(|r| r["body"]["input"].to_string().contains("Write a note on ACP.")).expect("the prompt's request");
    assert_eq!(first["headers"]["authorization"], "Bearer sk-stand-in");
    assert!(first["body"]["input"].to_string().contains("You are a guild-hall worker."), "{first}");
    let toolbox = toolbox_offered(first);
    for t in ["report_progress", "write_artifact", "submit_result"] {
        assert!(toolbox.iter().any(|x| x == t), "{t} offered: {toolbox:?}");
    }
    let results = tool_outputs(&reqs);
    assert!(results.iter().any(|r| r.contains("acp.md")), "the toolbox answered: {results:?}");
    assert!(!results.iter().any(|r| r.contains("WROTE")), "the command did not run: {results:?}");
}

#[test]
fn real_gemini_acp_commission_calls_the_toolbox_and_lands_its_file() {
    let p = project_with("gemini-acp");
    let agent = Agent::gemini(
        &p,
        json!([
            // Not the toolbox and not in the package's acp.allow: the client rejects it.
            {"call": {"name": "write_file", "args": {"file_path": "forbidden.md", "content": "x"}}},
            {"call": {"name": "mcp_guild-hall_report_progress", "args": {"text": "reading"}}},
            {"call": {"name": "mcp_guild-hall_write_artifact", "args": {"path": ".lore/research/acp.md", "content": "# ACP\n\nOne protocol, many agents.\n"}}},
            {"call": {"name": "mcp_guild-hall_submit_result", "args": {"summary": "Wrote the note", "artifacts": [".lore/research/acp.md"]}}},
            {"text": "All done."}
        ]),
    );
    plant_person_agent_homes(&p);
    let log = commission_lands_its_file(&p, &agent, "gemini-acp");
    // Gemini CLI offers its edit and shell tools over ACP and asks before each use: the client's
    // policy says no, naming the tool as `acp.allow` would.
    assert!(log.contains("[guild-hall acp] denied write_file (kind edit): not in acp.allow"), "{log}");
    assert!(!git(&p.root, &["ls-tree", "-r", "--name-only", "claude/main"]).contains("forbidden.md"));
    let turns = turns(&agent.api);
    let first = turns.iter().find(|t| t["body"]["contents"].to_string().contains("Write a note on ACP.")).expect("the prompt's request");
    assert!(first["body"]["contents"].to_string().contains("You are a guild-hall worker."), "{first}");
    for t in &turns {
        let tools = offered(t);
        assert!(tools.iter().any(|n| n == "mcp_guild-hall_write_artifact"), "{tools:?}");
    }
    // Gemini CLI's state stayed in this package's own home, never in the person's ~/.gemini.
    assert!(p.user_home().join(".gemini/guild-hall-gemini-acp/.gemini/settings.json").is_file());
    agent_homes_apart(&p, &[".gemini/guild-hall-gemini-acp"]);
    // What the prompt used, as Gemini CLI said it in its reply (`_meta.quota`): what the stand-in
    // served, recorded as the attempt's usage, tokens only.
    let (input, output, _) = crate::worker::usage::served(&agent.api);
    let s = p.status_json("note");
    assert_eq!(s["usage"], json!({"input_tokens": input, "output_tokens": output, "cached_tokens": 0}), "{s}\n{log}");
    let usage: Vec<Value> = p.timeline("note").into_iter().filter(|e| e["kind"] == "usage").collect();
    assert_eq!((usage[0]["source"].as_str(), usage[0]["model"].as_str()), (Some("agent"), Some("gemini-2.5-flash")), "{usage:?}");
}

/// A repository's committed `.gemini/settings.json` allowing the shell and starting an MCP
/// server of its own: over ACP too, Gemini CLI's session runs outside the worktree, so neither
/// is loaded — the shell call is asked for and denied by the read-only package's policy, and
/// the planted server never starts.
#[test]
fn real_gemini_acp_ignores_the_repositorys_gemini_settings() {
    let p = project_with("gemini-acp");
    p.config("name: acp-trust\n");
    let wt = p.home.join("worktrees/acp-trust/commission-trust");
    p.commit_on_integration(".gemini/settings.json", &planted_gemini_settings(&wt), "the repository's Gemini CLI settings");
    let agent = Agent::gemini(
        &p,
        json!([
            {"call": {"name": "run_shell_command", "args": {"command": format!("touch {}/shell-ran.txt", wt.display()), "description": "x"}}},
            {"call": {"name": "mcp_guild-hall_submit_result", "args": {"summary": "tried"}}},
            {"text": "Done."}
        ]),
    );
    p.write_commission("trust", "---\nworker: gemini-acp\n---\nLook around.\n");
    agent.ok(&p, &["reconcile", "--once", "--wait", "--timeout", "180s"]);
    let log = p.ok(&["logs", "trust"]);
    assert_eq!(p.status("trust"), "completed", "{}\n{log}", p.status_json("trust"));
    let landed = git(&p.root, &["ls-tree", "-r", "--name-only", "claude/main"]);
    assert!(!landed.contains("mcp-started.txt"), "the repository's MCP server started: {landed}\n{log}");
    assert!(!landed.contains("shell-ran.txt"), "the repository's tools.allowed ran the shell: {landed}\n{log}");
    assert!(log.contains("[guild-hall acp] denied run_shell_command (kind execute)"), "{log}");
    // The session ran in the package's home, the worktree included and named to the model.
    let first = turns(&agent.api)[0]["body"]["contents"].to_string();
    assert!(first.contains(&format!("The repository you work on is {}", wt.display())), "{first}");
    assert!(first.contains(&format!("  - {}", wt.display())), "the worktree is a workspace directory: {first}");
    assert!(first.contains(".gemini/guild-hall-gemini-acp/workspaces/"), "{first}");
    for t in turns(&agent.api) {
        let tools = offered(&t);
        assert!(!tools.iter().any(|n| n.contains("planted")), "the planted server's tools were offered: {tools:?}");
    }
}

/// The commission's `max_turns` bounds Gemini CLI's model turns over ACP too (its
/// `model.maxSessionTurns`, set in the session's own directory).
#[test]
fn real_gemini_acp_stops_at_the_commissions_max_turns() {
    let p = project_with("gemini-acp");
    let call = json!({"call": {"name": "mcp_guild-hall_report_progress", "args": {"text": "still going"}}});
    let agent = Agent::gemini(&p, json!([call, call, call, call, call, call]));
    p.write_commission("busy", "---\nworker: gemini-acp\nresources: {max_turns: 2}\n---\nKeep going.\n");
    agent.ok(&p, &["reconcile", "--once", "--wait", "--timeout", "180s"]);
    let log = p.ok(&["logs", "busy"]);
    assert_eq!(turns(&agent.api).len(), 2, "two model turns, then stopped:\n{log}");
}

/// A model request that fails (HTTP 500) fails the turn at once: Codex does not retry it
/// (`request_max_retries = 0`, `stream_max_retries = 0`), guild-hall's own attempts and the
/// person's next message being the retries.
#[test]
fn real_codex_acp_fails_fast_on_a_model_error() {
    let p = project_with("codex-acp");
    let agent = Agent::codex(&p, json!([{"error": 500}, {"text": "recovered by a retry"}, {"text": "recovered by a retry"}]));
    let out = agent.run(&p, &["meeting", "start", "--worker", "codex-acp", "--id", "m", "hello", "--json"]);
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let asked = requests(&agent.api).iter().filter(|r| r["path"].as_str().is_some_and(|p| p.ends_with("/responses"))).count();
    assert_eq!(asked, 1, "one model request, not retried: {said}");
    assert!(!said.contains("recovered by a retry"), "{said}");
}

fn minute_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs() / 60).unwrap_or(0)
}

/// Wait (at most a minute) until the clock's minute is past `minute`.
fn wait_past_minute(minute: u64) {
    let deadline = Instant::now() + Duration::from_secs(65);
    while minute_now() <= minute {
        assert!(Instant::now() < deadline, "the clock's minute did not change");
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn session_of(p: &Project, meeting: &str) -> String {
    let artifact = std::fs::read_to_string(p.root.join(format!(".lore/meetings/{meeting}.md"))).expect("artifact");
    artifact.lines().find_map(|l| l.strip_prefix("session_id: ")).expect("a session id stored").to_string()
}

fn renewals(p: &Project, meeting: &str) -> Vec<Value> {
    let show: Value = serde_json::from_str(&p.ok(&["meeting", "show", meeting, "--json"])).expect("json");
    show["log"].as_array().into_iter().flatten().filter(|e| e["kind"] == "session_renewed").cloned().collect()
}

#[test]
fn real_codex_acp_meeting_second_turn_loads_the_first() {
    let p = project_with("codex-acp");
    let agent = Agent::codex(&p, json!([{"text": "Noted: MANGO."}, {"text": "It was MANGO."}]));
    let out = agent.ok(&p, &["meeting", "start", "--worker", "codex-acp", "--id", "m", "Remember the word MANGO."]);
    assert!(out.contains("Noted: MANGO."), "{out}");
    let session = session_of(&p, "m");
    let out = agent.ok(&p, &["meeting", "send", "m", "What was the word?"]);
    assert!(out.contains("It was MANGO."), "{out}");
    assert_eq!(session_of(&p, "m"), session, "the same session, loaded");
    assert_eq!(renewals(&p, "m"), Vec::<Value>::new());
    // Turn 2's request to the model carries turn 1, question and answer.
    let reqs = requests(&agent.api);
    let last = reqs.last().expect("requests")["body"]["input"].to_string();
    assert!(last.contains("What was the word?") && last.contains("Remember the word MANGO.") && last.contains("Noted: MANGO."), "{last}");
    assert!(toolbox_offered(reqs.last().expect("requests")).iter().any(|t| t == "link_artifact"), "the meeting toolbox");

    // A session the agent does not have: session/load refused, the session renewed in a fresh one
    // told the conversation so far.
    let path = p.root.join(".lore/meetings/m.md");
    let lost = "01a20eff-0000-7000-8000-000000000000";
    std::fs::write(&path, std::fs::read_to_string(&path).expect("artifact").replace(&session, lost)).expect("write");
    let out = agent.ok(&p, &["meeting", "send", "m", "Still there?", "--json"]);
    assert!(out.contains("session not found"), "the refusal is shown: {out}");
    let renewed = renewals(&p, "m");
    assert_eq!(renewed.len(), 1, "{renewed:?}");
    assert_eq!(renewed[0]["old"], lost);
    assert_ne!(session_of(&p, "m"), session);
    let last = requests(&agent.api).last().expect("requests")["body"]["input"].to_string();
    assert!(last.contains("Still there?") && last.contains("Remember the word MANGO."), "told the conversation: {last}");
}

/// Gemini CLI 0.61 names its session files by the clock minute: a session loaded in the minute
/// it was created in is refused, and the meeting renews it, told the conversation so far; from
/// the next minute on, `session/load` loads it and the model gets its history from the agent.
#[test]
fn real_gemini_acp_meeting_second_turn_loads_the_first() {
    let p = project_with("gemini-acp");
    let agent = Agent::gemini(&p, json!([{"text": "Noted: MANGO."}, {"text": "It was MANGO."}, {"text": "Still MANGO."}]));
    // Two turns within one clock minute: start with at least 30 s of it left (waits at most 30 s).
    if SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs() % 60).unwrap_or(0) >= 30 {
        wait_past_minute(minute_now());
    }
    let minute = minute_now();
    let out = agent.ok(&p, &["meeting", "start", "--worker", "gemini-acp", "--id", "m", "Remember the word MANGO."]);
    assert!(out.contains("Noted: MANGO."), "{out}");
    let first = session_of(&p, "m");
    let out = agent.ok(&p, &["meeting", "send", "m", "What was the word?"]);
    assert_eq!(minute_now(), minute, "both turns ran within one minute");
    assert!(out.contains("It was MANGO."), "{out}");
    let renewed = renewals(&p, "m");
    assert_eq!(renewed.len(), 1, "the same-minute load was refused and the session renewed: {renewed:?}");
    assert_eq!(renewed[0]["old"], first.as_str());
    let second = session_of(&p, "m");
    let last = turns(&agent.api).last().expect("requests")["body"]["contents"].to_string();
    assert!(last.contains("What was the word?") && last.contains("Remember the word MANGO."), "told the conversation: {last}");

    // The next minute: the renewed session is loaded, not renewed again, and carries both turns.
    wait_past_minute(minute);
    let out = agent.ok(&p, &["meeting", "send", "m", "And now?"]);
    assert!(out.contains("Still MANGO."), "{out}");
    assert_eq!(session_of(&p, "m"), second, "the same session, loaded");
    assert_eq!(renewals(&p, "m").len(), 1, "not renewed again");
    let last = turns(&agent.api).last().expect("requests")["body"]["contents"].to_string();
    assert!(last.contains("And now?") && last.contains("What was the word?") && last.contains("It was MANGO."), "{last}");
}

/// A commission cancelled while the stand-in holds the model's answer: while it runs, the agent
/// and guild-hall's ACP client are there (`agent_cmd` names the agent's process); after the
/// cancel, no process of the attempt is left in the pid namespace.
fn cancelled_mid_turn_leaves_no_process(p: &Project, agent: &Agent, worker: &str, agent_cmd: &str) {
    p.write_commission("slow", &format!("---\nworker: {worker}\n---\nTake your time.\n"));
    let out = in_pid_namespace(
        p,
        &format!(
            r#"
{exports}
{others}
dispatch slow
wait_for "the prompt at the model" grep -qs 'Take your time.' {requests}
echo "--- during"
others
"$GH" commission cancel slow >/dev/null
cancelled() {{ "$GH" status slow --json | grep -q '"status": *"cancelled"'; }}
pass_until "the commission cancelled" cancelled
for _ in $(seq 600); do [ "$(others)" = checked ] && break; sleep 0.1; done
echo "--- left"
others
"#,
            exports = agent.exports(),
            others = OTHERS,
            requests = agent.api.requests.display(),
        ),
    );
    let during = section(&out, "during");
    assert!(during.contains(agent_cmd) && during.contains("guild-hall acp"), "the turn ran: {out}");
    assert_eq!(section(&out, "left").trim(), "checked", "processes left after the cancel:\n{out}");
    assert_eq!(p.status("slow"), "cancelled");
    let log = p.ok(&["logs", "slow"]);
    assert!(log.contains(r#"{"reason":"cancelled","type":"error"}"#), "{log}");
}

#[test]
fn real_codex_acp_cancelled_mid_turn_leaves_no_process() {
    let p = project_with("codex-acp");
    let agent = Agent::codex(&p, json!([{"hold": true}, {"hold": true}]));
    cancelled_mid_turn_leaves_no_process(&p, &agent, "codex-acp", "codex-acp");
}

#[test]
fn real_gemini_acp_cancelled_mid_turn_leaves_no_process() {
    let p = project_with("gemini-acp");
    let agent = Agent::gemini(&p, json!([{"hold": 120}, {"hold": 120}]));
    cancelled_mid_turn_leaves_no_process(&p, &agent, "gemini-acp", "gemini");
}

/// The coder package as a wave task of a plan: its shell call, allowed by its `acp.allow`
/// (`execute`), runs confined in the task's worktree and the change lands on claude/main.
fn coder_as_a_wave_task_lands_its_change(p: &Project, agent: &Agent, worker: &str) {
    let dir = p.root.join(".lore/plans");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(
        dir.join("port.md"),
        format!("---\ntitle: port\nwaves:\n  - - {{id: wave, worker: {worker}, prompt: \"Add src/wave.txt.\"}}\n---\n"),
    )
    .expect("plan");
    agent.ok(p, &["reconcile", "--once", "--wait", "--timeout", "180s"]);
    let plan: Value = serde_json::from_str(&p.ok(&["plan", "show", "port", "--json"])).expect("plan json");
    assert_eq!(plan["status"], "completed", "{plan}\n{}", p.ok(&["plan", "logs", "port", "wave"]));
    assert_eq!(git(&p.root, &["show", "claude/main:src/wave.txt"]), "from a wave\n");
    assert!(std::fs::read_to_string(&agent.api.requests).unwrap_or_default().contains("written"), "the command's output went to the model");
}

#[test]
fn real_codex_acp_coder_as_a_wave_task_lands_its_change() {
    let p = project_with("codex-acp-coder");
    let agent = Agent::codex(
        &p,
        json!([
            {"call": {"name": "exec_command", "arguments": {"cmd": "echo 'from a wave' > src/wave.txt && echo written"}}},
            {"call": {"namespace": "mcp__guild_hall", "name": "report_progress", "arguments": {"text": "wrote src/wave.txt"}}},
            {"text": "Wrote it."}
        ]),
    );
    coder_as_a_wave_task_lands_its_change(&p, &agent, "codex-acp-coder");
    // Codex asked before running the command (approval_policy "untrusted"), and the package's
    // acp.allow answered.
    let log = p.ok(&["plan", "logs", "port", "wave"]);
    assert!(log.contains("[guild-hall acp] allowed") && log.contains("(kind execute)"), "{log}");
}

#[test]
fn real_gemini_acp_coder_as_a_wave_task_lands_its_change() {
    let p = project_with("gemini-acp-coder");
    p.config("name: acp-wave\n");
    // In the worktree, as the model is told: the session's own directory is a scratch one.
    let wt = p.home.join("worktrees/acp-wave/task-port-exec-wave-1-task-1");
    let agent = Agent::gemini(
        &p,
        json!([
            {"call": {"name": "run_shell_command", "args": {"command": "echo 'from a wave' > src/wave.txt && echo written", "description": "write it", "dir_path": wt.display().to_string()}}},
            {"call": {"name": "mcp_guild-hall_report_progress", "args": {"text": "wrote src/wave.txt"}}},
            {"text": "Wrote it."}
        ]),
    );
    coder_as_a_wave_task_lands_its_change(&p, &agent, "gemini-acp-coder");
    assert!(p.ok(&["plan", "logs", "port", "wave"]).contains("[guild-hall acp] allowed run_shell_command (kind execute)"));
}
