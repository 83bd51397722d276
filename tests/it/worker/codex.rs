//! The Codex CLI packages (`contrib/workers/codex`, `codex-coder`) run for real: the Codex CLI
//! from npm (`@openai/codex` 0.169.0, installed into `target/codex` on first use, as `.ci/run`
//! does up front), confined, against a local stand-in for the OpenAI Responses API
//! (`tests/fake_openai.py`) that scripts the model's turns and records every request: a
//! commission, a coder, a wave task, an ordinary user, a meeting (resume and renewal), and an
//! interrupted turn and a cancelled commission that leave no process.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::common::*;
use crate::worker::claude_code::{install_package, FakeApi};

/// The version the packages are tested with (worker.yaml, docs/workers.md, .ci/run).
const CODEX: &str = "0.169.0";

/// The Codex CLI from npm, in `target/codex`.
pub(crate) fn real_codex() -> PathBuf {
    npm_cli("codex", "@openai/codex", CODEX, "codex")
}

/// The stand-in Responses API, scripted.
pub(crate) fn fake_openai(p: &Project, script: Value) -> FakeApi {
    FakeApi::serve("fake_openai.py", p.tmp.path(), &script)
}

/// The real Codex, a project with the bundled package `package` installed, and the stand-in
/// answering with `script`.
fn set_up(package: &str, script: Value) -> (PathBuf, Project, FakeApi) {
    let codex = real_codex();
    let p = Project::new(&[]);
    install_package(&p, package);
    let api = fake_openai(&p, script);
    (codex, p, api)
}

/// Every request the stand-in was sent, in order.
pub(crate) fn requests(api: &FakeApi) -> Vec<Value> {
    std::fs::read_to_string(&api.requests).unwrap_or_default().lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
}

/// `guild-hall ARGS` with Codex on PATH and the stand-in as its endpoint (through pass_env).
fn with_codex(p: &Project, api: &FakeApi, codex: &Path, args: &[&str]) -> std::process::Output {
    let path = format!("{}:{}", codex.parent().expect("bin dir").display(), std::env::var("PATH").unwrap_or_default());
    p.cmd()
        .env("PATH", path)
        .env("OPENAI_BASE_URL", format!("{}/v1", api.url))
        .env("OPENAI_API_KEY", "sk-stand-in")
        // A model Codex has no metadata for gets plain function tools (MCP tools grouped by
        // server), which the stand-in can script; its own models get them through a
        // JavaScript `exec` tool instead.
        .env("CODEX_MODEL", "stand-in-model")
        .args(args)
        .output()
        .expect("runs")
}

fn said(out: &std::process::Output) -> String {
    format!("{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// The tools' results the model was sent back (each `function_call_output`), in order.
pub(crate) fn tool_outputs(reqs: &[Value]) -> Vec<String> {
    reqs.iter()
        .flat_map(|r| r["body"]["input"].as_array().cloned().unwrap_or_default())
        .filter(|i| i["type"] == "function_call_output")
        .map(|i| i["output"].to_string())
        .collect()
}

/// The guild-hall toolbox's MCP tools as the model is offered them: grouped by server.
pub(crate) fn toolbox_offered(request: &Value) -> Vec<String> {
    let tools = request["body"]["tools"].as_array().cloned().unwrap_or_default();
    let ns = tools.iter().find(|t| t["type"] == "namespace" && t["name"] == "mcp__guild_hall");
    ns.and_then(|n| n["tools"].as_array()).into_iter().flatten().filter_map(|t| t["name"].as_str().map(str::to_string)).collect()
}

#[test]
fn real_codex_confined_delivers_a_file_through_the_toolbox() {
    let body = "# Crash-only software\n\nStop = crash; start = recover.\n";
    let (codex, p, api) = set_up(
        "codex",
        json!([
            // Its shell is read-only: Codex's own sandbox refuses the command.
            {"call": {"name": "exec_command", "arguments": {"cmd": "echo x > forbidden.md && echo WROTE || echo WRITE-REFUSED"}}},
            {"call": {"namespace": "mcp__guild_hall", "name": "report_progress", "arguments": {"text": "reading"}}},
            {"call": {"namespace": "mcp__guild_hall", "name": "write_artifact", "arguments": {"path": ".lore/research/crash-only.md", "content": body}}},
            {"call": {"namespace": "mcp__guild_hall", "name": "submit_result", "arguments": {"summary": "Wrote the survey", "artifacts": [".lore/research/crash-only.md"]}}},
            {"text": "All done."}
        ]),
    );
    p.write_commission("survey", "---\nworker: codex\noutputs: [.lore/research/crash-only.md]\n---\nSurvey crash-only software.\n");
    plant_person_agent_homes(&p);
    let out = with_codex(&p, &api, &codex, &["reconcile", "--once", "--wait", "--timeout", "180s"]);
    assert!(out.status.success(), "{}", said(&out));
    let reqs = requests(&api);
    assert_eq!(p.status("survey"), "completed", "{}", p.ok(&["logs", "survey"]));
    assert_eq!(git(&p.root, &["show", "claude/main:.lore/research/crash-only.md"]), body);
    let log = p.ok(&["logs", "survey"]);
    assert!(log.contains("\"type\":\"mcp_tool_call\"") && log.contains("write_artifact"), "the tool calls are in the log:\n{log}");
    assert!(!log.contains("sk-stand-in"));
    // What Codex sent: the commission as the prompt, the posture as developer instructions, the
    // toolbox's tools under the server's namespace, the key from pass_env.
    let first = &reqs[0];
    assert_eq!(first["path"], "/v1/responses");
    assert_eq!(first["headers"]["authorization"], "Bearer sk-stand-in");
    let sent = first["body"]["input"].to_string();
    assert!(sent.contains("Survey crash-only software.") && sent.contains("You are a guild-hall worker."), "{sent}");
    let toolbox = toolbox_offered(first);
    for t in ["report_progress", "write_artifact", "submit_result", "log_question"] {
        assert!(toolbox.iter().any(|x| x == t), "{t} offered: {toolbox:?}");
    }
    // Each tool's result went back to the model: the calls were made, not refused.
    let results = tool_outputs(&reqs);
    assert!(results.iter().any(|r| r.contains("crash-only.md")), "{results:?}");
    assert!(!results.iter().any(|r| r.contains("WROTE")), "{results:?}");
    assert!(!git(&p.root, &["ls-tree", "-r", "--name-only", "claude/main"]).contains("forbidden.md"));
    // Its state stayed in its own Codex home (the one place the package widens), never in the
    // person's ~/.codex.
    assert!(std::fs::read_dir(p.user_home().join(".codex/guild-hall-codex/sessions")).is_ok(), "Codex kept its session");
    agent_homes_apart(&p, &[".codex/guild-hall-codex"]);
}

#[test]
fn real_codex_meets_and_its_second_turn_sees_the_first() {
    let (codex, p, api) = set_up("codex", json!([{"echo": "ANSWER"}, {"echo": "ANSWER"}, {"echo": "RENEWED"}]));
    let out = with_codex(&p, &api, &codex, &["meeting", "start", "--worker", "codex", "--id", "cx", "remember the word PINEAPPLE"]);
    assert!(out.status.success(), "{}", said(&out));
    // A new thread's input: the system prompt, then the message (on stdin, not argv).
    let first = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        first.contains("ANSWER you said 'You are a guild-hall worker.") && first.contains("remember the word PINEAPPLE'."),
        "{}",
        said(&out)
    );
    let artifact = std::fs::read_to_string(p.root.join(".lore/meetings/cx.md")).expect("artifact");
    let thread = requests(&api)[0]["headers"]["thread-id"].as_str().expect("Codex names its thread").to_string();
    assert!(artifact.contains(&format!("session_id: {thread}")), "the thread id is the session: {artifact}");

    let out = with_codex(&p, &api, &codex, &["meeting", "send", "cx", "what was the word?", "--json"]);
    assert!(out.status.success(), "{}", said(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    // A resumed thread's input is the message alone (the thread holds the system prompt).
    assert!(stdout.contains("ANSWER you said 'what was the word?'"), "{stdout}");
    assert!(stdout.contains("remember the word PINEAPPLE']"), "turn 2 saw turn 1: {stdout}");
    let last: Value = serde_json::from_str(stdout.lines().last().unwrap_or("")).expect("the turn as json");
    assert_eq!(last["outcome"], "ended", "{stdout}");
    assert_eq!(last["session_id"], thread.as_str());
    // The stand-in's record: turn 2's request carries turn 1, question and answer, in the same thread.
    let reqs = requests(&api);
    assert_eq!(reqs.len(), 2, "{reqs:#?}");
    assert_eq!(reqs[1]["headers"]["thread-id"], thread.as_str());
    let input = reqs[1]["body"]["input"].to_string();
    assert!(input.contains("remember the word PINEAPPLE") && input.contains("what was the word?"), "{input}");
    assert!(input.contains("ANSWER you said 'You are a guild-hall worker."), "turn 1's answer: {input}");
    assert!(toolbox_offered(&reqs[1]).iter().any(|t| t == "link_artifact"), "the meeting toolbox");

    // A thread Codex does not have: renewed in a fresh one, told the conversation so far.
    let artifact = std::fs::read_to_string(p.root.join(".lore/meetings/cx.md")).expect("artifact");
    let lost = "01a20eff-0000-7000-8000-000000000000";
    std::fs::write(p.root.join(".lore/meetings/cx.md"), artifact.replace(&thread, lost)).expect("write");
    let out = with_codex(&p, &api, &codex, &["meeting", "send", "cx", "still there?", "--json"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && stdout.contains("no rollout found for thread id"), "the error is shown: {}", said(&out));
    assert!(stdout.contains("RENEWED you said 'You are a guild-hall worker.") && stdout.contains("still there?'. Earlier"), "{stdout}");
    let reqs = requests(&api);
    let renewed = &reqs[2];
    assert_ne!(renewed["headers"]["thread-id"], thread.as_str(), "a fresh thread");
    let input = renewed["body"]["input"].to_string();
    assert!(input.contains("The conversation so far") && input.contains("remember the word PINEAPPLE"), "{input}");
    let show: Value = serde_json::from_str(&p.ok(&["meeting", "show", "cx", "--json"])).expect("json");
    let renewal = show["log"].as_array().expect("log").iter().find(|e| e["kind"] == "session_renewed").cloned().expect("renewal");
    assert_eq!(renewal["old"], lost);
    assert_eq!(renewal["new"], renewed["headers"]["thread-id"]);
}

/// A shell function for the namespaced scenarios: every live process of the namespace but the
/// script itself (and what it runs to look), one a line, then `checked`.
pub(crate) const OTHERS: &str = r#"
others() {
  for d in /proc/[0-9]*; do
    pid=${d#/proc/}
    [ "$pid" = 1 ] || [ "$pid" = $$ ] || [ "$pid" = "$BASHPID" ] && continue
    alive $pid || continue
    cmd=$(tr '\0' ' ' < $d/cmdline 2>/dev/null) || continue
    case "$cmd" in *"for d in /proc"*|"") continue ;; esac
    echo "$pid $cmd"
  done
  echo "checked"
}
"#;

#[test]
fn a_codex_turn_interrupted_while_the_model_holds_its_answer_leaves_no_process() {
    let (codex, p, api) = set_up("codex", json!([{"text": "hello"}, {"hold": true}, {"echo": "AFTER"}]));
    let bin = codex.parent().expect("bin dir").display().to_string();
    let out = in_pid_namespace(
        &p,
        &format!(
            r#"
export PATH="{bin}:$PATH" OPENAI_BASE_URL="{url}/v1" OPENAI_API_KEY=sk-stand-in CODEX_MODEL=stand-in-model
"$GH" meeting start --worker codex --id cx hello >/dev/null
"$GH" meeting send cx "take your time" > "$STATE/../send.out" 2>&1 & send=$!
held() {{ [ "$(wc -l < {requests})" -ge 2 ]; }}
wait_for "the model's held answer" held
wait_for "codex running" sh -c 'grep -ls codex /proc/[0-9]*/cmdline | grep -q .'
{others}
echo "--- during"
others
kill -INT $send
wait $send || true
echo "--- send"
cat "$STATE/../send.out"
echo "--- left"
others
echo "--- next"
"$GH" meeting send cx "are you back?"
"#,
            url = api.url,
            requests = api.requests.display(),
            others = OTHERS,
        ),
    );
    assert!(section(&out, "send").contains("interrupted"), "{out}");
    let left = section(&out, "left");
    let during = section(&out, "during");
    assert!(during.contains("codex exec") && during.contains("guild-hall mcp"), "the check sees the turn's processes: {out}");
    assert_eq!(left.trim(), "checked", "processes left after the interrupted turn:\n{out}");
    assert!(section(&out, "next").contains("AFTER you said 'are you back?'"), "the meeting goes on: {out}");
    let t = std::fs::read_to_string(
        p.home.join("meetings").read_dir().expect("meetings").flatten().next().expect("project").path().join("cx.md"),
    )
    .expect("transcript");
    assert!(t.contains("_(interrupted)_"), "{t}");
}

#[test]
fn real_codex_coder_writes_and_runs_inside_its_worktree_only() {
    let (codex, p, api) = set_up(
        "codex-coder",
        json!([
            {"call": {"name": "exec_command", "arguments": {"cmd": "echo 'hello from the coder' > src/hello.txt && cp src/hello.txt src/copy.txt && echo built"}}},
            {"call": {"name": "exec_command", "arguments": {"cmd": "touch \"$GUILD_HALL_PROJECT/escaped.txt\" && echo ESCAPED || echo ESCAPE-REFUSED"}}},
            {"call": {"namespace": "mcp__guild_hall", "name": "submit_result", "arguments": {"summary": "coded", "artifacts": ["src/hello.txt"]}}},
            {"text": "Coded."}
        ]),
    );
    p.write_commission("code", "---\nworker: codex-coder\n---\nAdd src/hello.txt.\n");
    let out = with_codex(&p, &api, &codex, &["reconcile", "--once", "--wait", "--timeout", "180s"]);
    assert!(out.status.success(), "{}", said(&out));
    assert_eq!(p.status("code"), "completed", "{}", p.ok(&["logs", "code"]));
    assert_eq!(git(&p.root, &["show", "claude/main:src/hello.txt"]), "hello from the coder\n");
    assert_eq!(git(&p.root, &["show", "claude/main:src/copy.txt"]), "hello from the coder\n");
    assert!(!p.root.join("escaped.txt").exists());
    let sent = std::fs::read_to_string(&api.requests).expect("requests");
    assert!(sent.contains("ESCAPE-REFUSED") && sent.contains("Permission denied"), "guild-hall's sandbox refused the escape");
    let coder = std::fs::read(p.root.join(".lore/workers/codex-coder/codex.sh")).expect("coder's script");
    let reader = std::fs::read(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("contrib/workers/codex/codex.sh")).expect("script");
    assert_eq!(coder, reader, "codex-coder runs the codex package's codex.sh unchanged");
}

#[test]
fn real_codex_coder_as_a_wave_task_lands_its_change() {
    let (codex, p, api) = set_up(
        "codex-coder",
        json!([
            {"call": {"name": "exec_command", "arguments": {"cmd": "echo 'from a wave' > src/wave.txt && echo done"}}},
            {"call": {"namespace": "mcp__guild_hall", "name": "report_progress", "arguments": {"text": "wrote src/wave.txt"}}},
            {"text": "Wrote it."}
        ]),
    );
    let dir = p.root.join(".lore/plans");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(
        dir.join("port.md"),
        "---\ntitle: port\nwaves:\n  - - {id: wave, worker: codex-coder, prompt: \"Add src/wave.txt.\"}\n---\n",
    )
    .expect("plan");
    let out = with_codex(&p, &api, &codex, &["reconcile", "--once", "--wait", "--timeout", "180s"]);
    assert!(out.status.success(), "{}", said(&out));
    let plan: Value = serde_json::from_str(&p.ok(&["plan", "show", "port", "--json"])).expect("plan json");
    assert_eq!(plan["status"], "completed", "{plan}\n{}", p.ok(&["plan", "logs", "port"]));
    assert_eq!(git(&p.root, &["show", "claude/main:src/wave.txt"]), "from a wave\n");
    assert!(requests(&api)[0]["body"]["input"].to_string().contains("Add src/wave.txt."));
}

#[test]
fn the_codex_packages_are_bundled_valid_and_confined() {
    let p = Project::new(&[]);
    let list: Value = serde_json::from_str(&p.ok(&["workers", "--available", "--json"])).expect("json");
    let by = |n: &str| list.as_array().and_then(|a| a.iter().find(|x| x["name"] == n).cloned()).unwrap_or(Value::Null);
    assert_eq!(by("codex")["capabilities"], json!(["commission", "meeting"]), "{list}");
    assert_eq!(by("codex-coder")["capabilities"], json!(["commission"]), "{list}");
    for name in ["codex", "codex-coder"] {
        p.ok(&["workers", "add", name]);
        let script = p.root.join(".lore/workers").join(name).join("codex.sh");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&script).expect("codex.sh").permissions().mode();
        assert!(mode & 0o111 != 0, "{name}'s codex.sh is executable");
    }
    // Both run `codex`, and say so (`requires:`): without it on PATH `check` says it is
    // missing; with it, they pass.
    let bin = p.tmp.path().join("codex-bin");
    std::fs::create_dir_all(&bin).expect("mkdir");
    let out = p.cmd().env("PATH", format!("{}:/usr/bin:/bin", bin.display())).arg("check").output().expect("runs");
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(1), "{said}");
    for name in ["codex", "codex-coder"] {
        assert!(said.lines().any(|l| l.contains(&format!("{name}/worker.yaml:")) && l.contains("requires `codex`")), "{said}");
    }
    std::fs::write(bin.join("codex"), "#!/bin/sh\n").expect("write");
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(bin.join("codex"), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let out = p.cmd().env("PATH", path).arg("check").output().expect("runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    let workers: Value = serde_json::from_str(&p.ok(&["workers", "--json"])).expect("json");
    for w in workers.as_array().expect("list") {
        assert_eq!(w["confinement"], "confined", "{w}");
        assert_eq!(w["checkout"], "full", "{w}");
    }
}

#[test]
fn real_codex_runs_as_an_ordinary_user() {
    let (codex, p, api) = set_up(
        "codex",
        json!([
            {"call": {"namespace": "mcp__guild_hall", "name": "write_artifact", "arguments": {"path": ".lore/answers/ask.md", "content": "as nobody\n"}}},
            {"call": {"namespace": "mcp__guild_hall", "name": "submit_result", "arguments": {"summary": "answered", "artifacts": [".lore/answers/ask.md"]}}},
            {"text": "Done."}
        ]),
    );
    p.write_commission("ask", "---\nworker: codex\n---\nAnswer.\n");
    let path = format!("{}:{}", codex.parent().expect("bin dir").display(), std::env::var("PATH").unwrap_or_default());
    let url = format!("{}/v1", api.url);
    let env: [(&str, &Path); 3] =
        [("OPENAI_BASE_URL", Path::new(&url)), ("OPENAI_API_KEY", Path::new("sk-stand-in")), ("CODEX_MODEL", Path::new("stand-in-model"))];
    let out = crate::worker::claude_code::run_as(&p, true, &path, &["reconcile", "--once", "--wait", "--timeout", "180s"], &env);
    assert!(out.status.success(), "{}", said(&out));
    assert_eq!(p.status("ask"), "completed", "{}", p.ok(&["logs", "ask"]));
    assert_eq!(git(&p.root, &["show", "claude/main:.lore/answers/ask.md"]), "as nobody\n");
}

#[test]
fn a_codex_commission_cancelled_while_the_model_holds_its_answer_leaves_no_process() {
    let (codex, p, api) = set_up("codex", json!([{"hold": true}]));
    p.write_commission("hold", "---\nworker: codex\n---\nTake your time.\n");
    let bin = codex.parent().expect("bin dir").display().to_string();
    let out = in_pid_namespace(
        &p,
        &format!(
            r#"
export PATH="{bin}:$PATH" OPENAI_BASE_URL="{url}/v1" OPENAI_API_KEY=sk-stand-in CODEX_MODEL=stand-in-model
{others}
dispatch hold
held() {{ [ -s {requests} ]; }}
wait_for "the model's held answer" held
echo "--- during"
others
"$GH" commission cancel hold >/dev/null
cancelled() {{ "$GH" status hold --json | grep -q '"status": *"cancelled"'; }}
pass_until "the commission cancelled" cancelled
for _ in $(seq 600); do [ "$(others)" = checked ] && break; sleep 0.1; done
echo "--- left"
others
"#,
            url = api.url,
            requests = api.requests.display(),
            others = OTHERS,
        ),
    );
    let during = section(&out, "during");
    assert!(during.contains("codex exec") && during.contains("guild-hall mcp"), "the attempt's processes: {out}");
    assert_eq!(section(&out, "left").trim(), "checked", "processes left after the cancel:\n{out}");
    assert_eq!(p.status("hold"), "cancelled");
}

/// A model request that fails (HTTP 500) fails the turn at once: Codex does not retry it
/// (`request_max_retries = 0`, `stream_max_retries = 0`), guild-hall's own attempts and the
/// person's next message being the retries.
#[test]
fn real_codex_cli_fails_fast_on_a_model_error() {
    let (codex, p, api) = set_up("codex", json!([{"error": 500}, {"text": "recovered by a retry"}, {"text": "recovered by a retry"}]));
    let out = with_codex(&p, &api, &codex, &["meeting", "start", "--worker", "codex", "--id", "cx", "hello", "--json"]);
    let asked = requests(&api).iter().filter(|r| r["path"].as_str().is_some_and(|p| p.ends_with("/responses"))).count();
    assert_eq!(asked, 1, "one model request, not retried: {}", said(&out));
    assert!(!said(&out).contains("recovered by a retry"), "{}", said(&out));
}

/// A commission's revision (`guild-hall revise`) goes on in the Codex thread of the attempt it
/// revises (`codex exec resume`): the model is sent attempt 1's conversation and the feedback,
/// in the same thread.
#[test]
fn real_codex_revision_resumes_the_thread_with_the_feedback() {
    let submit = |n: u32| {
        vec![
            json!({"call": {"namespace": "mcp__guild_hall", "name": "submit_result", "arguments": {"summary": format!("attempt {n}")}}}),
            json!({"text": format!("ATTEMPT-{n}-DONE")}),
        ]
    };
    let (codex, p, api) = set_up("codex", Value::Array(submit(1).into_iter().chain(submit(2)).collect()));
    p.write_commission("rev", "---\nworker: codex\nreview: required\n---\nSay something.\n");
    let out = with_codex(&p, &api, &codex, &["reconcile", "--once", "--wait", "--timeout", "180s"]);
    assert!(out.status.success(), "{}", said(&out));
    assert_eq!(p.status("rev"), "review", "{}", p.ok(&["logs", "rev"]));
    let first = requests(&api).len();
    let thread = requests(&api)[0]["headers"]["thread-id"].as_str().expect("Codex names its thread").to_string();
    p.ok(&["revise", "rev", "-m", "FEEDBACK-4242"]);
    let out = with_codex(&p, &api, &codex, &["reconcile", "--once", "--wait", "--timeout", "180s"]);
    assert!(out.status.success(), "{}", said(&out));
    assert_eq!(p.status("rev"), "review", "{}", p.ok(&["logs", "rev", "--attempt", "2"]));
    let reqs = requests(&api);
    let again = reqs.get(first).expect("attempt 2 asked the model");
    assert_eq!(again["headers"]["thread-id"], thread.as_str(), "the same thread");
    let input = again["body"]["input"].to_string();
    assert!(input.contains("FEEDBACK-4242") && input.contains("Feedback on attempt 1"), "{input}");
    assert!(input.contains("ATTEMPT-1-DONE"), "the thread holds attempt 1: {input}");
}
