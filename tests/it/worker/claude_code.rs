//! The Claude Code packages (`contrib/workers/claude-code`, `claude-code-coder`):
//! - launched with a stand-in `claude` that records its exact arguments and environment, as
//!   root and as an ordinary user (the stand-in refuses a permission bypass as root, as Claude
//!   Code does);
//! - run for real: the Claude Code CLI from npm (installed into `target/claude-code` on first
//!   use, as `.ci/run` does up front), confined, against a local stand-in for the model API
//!   (`tests/fake_anthropic.py`) that scripts the model's tool calls and records which tools
//!   each request offered.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};

use crate::common::*;

pub(crate) fn install_package(p: &Project, name: &str) {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("contrib/workers").join(name);
    let dest = p.root.join(".lore/workers").join(name);
    std::fs::create_dir_all(&dest).expect("mkdir");
    for e in std::fs::read_dir(&src).expect("package").filter_map(|e| e.ok()) {
        std::fs::copy(e.path(), dest.join(e.file_name())).expect("copy");
    }
}

/// Widen the installed package's sandbox by `dir` (the way a person would, in worker.yaml).
fn allow_writes(p: &Project, name: &str, dir: &Path) {
    let yaml = p.root.join(".lore/workers").join(name).join("worker.yaml");
    let text = std::fs::read_to_string(&yaml).expect("worker.yaml");
    let widened = text.replacen("write: [\"", &format!("write: [\"{}\", \"", dir.display()), 1);
    assert_ne!(widened, text, "the package's sandbox.write line");
    std::fs::write(&yaml, widened).expect("write");
}

/// A stand-in `claude`: records its arguments (one per record) and environment, whether it
/// could write its own state (in `$CLAUDE_CONFIG_DIR`, else `~/.claude`, as Claude Code does)
/// and whether it could plant a file in the person's `~/.claude`,
/// refuses a permission bypass as root (Claude Code's own rule), then acts as an agent would
/// through the toolbox: writes its answer under `.lore/` and submits it.
fn stand_in_claude(dir: &Path, record: &Path) {
    std::fs::create_dir_all(dir).expect("mkdir");
    std::fs::create_dir_all(record.parent().expect("records dir")).expect("mkdir");
    let script = format!(
        r#"#!/bin/sh
for a in "$@"; do printf '%s\n---\n' "$a"; done > {rec}
cat > {rec}.stdin
env > {rec}.env
id -u > {rec}.uid
state="${{CLAUDE_CONFIG_DIR:-$HOME/.claude}}"
if echo session > "$state/stand-in-session" 2>/dev/null; then echo "wrote $state"; else echo "refused $state"; fi > {rec}.state
if echo planted > "$HOME/.claude/planted" 2>/dev/null; then echo wrote; else echo refused; fi > {rec}.person
prev=''
for a in "$@"; do [ "$prev" = --mcp-config ] && cp "$a" {rec}.mcp; prev=$a; done
prev=''
for a in "$@"; do [ "$prev" = --append-system-prompt-file ] && cp "$a" {rec}.system; prev=$a; done
for a in "$@"; do
  if [ "$a" = --dangerously-skip-permissions ] && [ "$(id -u)" = 0 ]; then
    echo "--dangerously-skip-permissions cannot be used with root/sudo privileges for security reasons" >&2
    exit 1
  fi
done
"$GUILD_HALL_BIN" toolbox write-artifact .lore/answers/$GUILD_HALL_COMMISSION.md "stand-in answer"
"$GUILD_HALL_BIN" toolbox submit-result --summary 'stand-in answer' --artifact .lore/answers/$GUILD_HALL_COMMISSION.md
"#,
        rec = record.display()
    );
    std::fs::write(dir.join("claude"), script).expect("write");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.join("claude"), std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// Run `guild-hall <args>` for the project, as root or as the unprivileged user 65534 (the
/// whole temp tree is handed to that user first).
pub(crate) fn run_as(p: &Project, unprivileged: bool, path: &str, args: &[&str], env: &[(&str, &Path)]) -> std::process::Output {
    let mut cmd = p.cmd();
    for (k, v) in env {
        cmd.env(k, v);
    }
    if unprivileged {
        let chown = Command::new("chown").args(["-R", "65534:65534"]).arg(p.tmp.path()).status().expect("chown");
        assert!(chown.success());
        let bin = assert_cmd::cargo::cargo_bin("guild-hall");
        let mut wrapped = Command::new("setpriv");
        wrapped.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"]).arg(bin).args(args);
        wrapped.current_dir(&p.root);
        for (k, v) in cmd.get_envs() {
            match v {
                Some(v) => wrapped.env(k, v),
                None => wrapped.env_remove(k),
            };
        }
        cmd = wrapped;
    } else {
        cmd.args(args);
    }
    let out = cmd.env("PATH", path).env("ANTHROPIC_API_KEY", "sk-from-guild-halls-env").output().expect("runs");
    if unprivileged {
        // Back to root, so that the test's own git and guild-hall calls own the repository.
        let chown = Command::new("chown").args(["-R", "0:0"]).arg(p.tmp.path()).status().expect("chown");
        assert!(chown.success());
    }
    out
}

fn launch_as(unprivileged: bool, claude_config_dir: bool) {
    let p = Project::new(&[]);
    plant_person_agent_homes(&p);
    // Claude Code's state where a person moved it: neither passed on nor written.
    let config_dir = p.tmp.path().join("claude-config");
    std::fs::create_dir_all(&config_dir).expect("mkdir");
    let env: Vec<(&str, &Path)> = if claude_config_dir { vec![("CLAUDE_CONFIG_DIR", config_dir.as_path())] } else { Vec::new() };
    install_package(&p, "claude-code");
    let bin = p.tmp.path().join("bin");
    let record = p.tmp.path().join("records/claude-args");
    stand_in_claude(&bin, &record);
    allow_writes(&p, "claude-code", record.parent().expect("records"));
    p.write_commission(
        "ask",
        "---\nworker: claude-code\nresources: {max_turns: 7, max_budget_usd: 0.5}\n---\nWhat is crash-only software?\n",
    );
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let out = run_as(&p, unprivileged, &path, &["reconcile", "--once", "--wait", "--timeout", "60s"], &env);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(p.status("ask"), "completed", "{}", p.ok(&["logs", "ask"]));
    assert_eq!(git(&p.root, &["show", "claude/main:.lore/answers/ask.md"]), "stand-in answer");
    let uid = std::fs::read_to_string(format!("{}.uid", record.display())).expect("uid");
    assert_eq!(uid.trim(), if unprivileged { "65534" } else { "0" });

    let args: Vec<String> =
        std::fs::read_to_string(&record).expect("claude ran").split("\n---\n").map(str::to_string).filter(|a| !a.is_empty()).collect();
    let after = |flag: &str| args.iter().position(|a| a == flag).and_then(|i| args.get(i + 1)).cloned().unwrap_or_default();
    // The prompt on stdin, the system prompt from its file: neither on the command line.
    assert!(args.contains(&"-p".to_string()), "{args:?}");
    let stdin = std::fs::read_to_string(format!("{}.stdin", record.display())).expect("stdin");
    assert_eq!(stdin.trim_end(), "What is crash-only software?");
    assert!(!args.iter().any(|a| a.contains("crash-only") || a.contains("You are a guild-hall worker")), "{args:?}");
    // No settings file is loaded: a repository's .claude/settings.json is content, not policy.
    let raw = std::fs::read_to_string(&record).expect("claude ran");
    assert!(raw.contains("\n---\n--setting-sources\n---\n\n---\n"), "--setting-sources \"\": {args:?}");
    assert_eq!(after("--max-turns"), "7");
    assert_eq!(after("--max-budget-usd"), "0.5");
    assert_eq!(after("--permission-mode"), "dontAsk");
    assert_eq!(after("--tools"), "Read,Grep,Glob,WebSearch,WebFetch", "only read-only built-in tools are offered");
    assert_eq!(after("--output-format"), "stream-json", "the log shows every tool call");
    assert!(args.contains(&"--verbose".to_string()), "stream-json needs --verbose in -p mode");
    assert!(args.contains(&"--strict-mcp-config".to_string()));
    assert!(!args.iter().any(|a| a.contains("dangerously") || a == "bypassPermissions"), "no permission bypass: {args:?}");
    let allowed_list = after("--allowedTools");
    let allowed: Vec<&str> = allowed_list.split(',').collect();
    let toolbox = [
        "report_progress",
        "submit_result",
        "log_question",
        "ask",
        "request_meeting",
        "record_decision",
        "store_memory",
        "write_artifact",
        "read_artifact",
    ];
    let mut want = vec!["Read", "Grep", "Glob", "WebSearch", "WebFetch"];
    let names: Vec<String> = toolbox.iter().map(|t| format!("mcp__guild-hall__{t}")).collect();
    want.extend(names.iter().map(String::as_str));
    assert_eq!(allowed, want);
    let system = std::fs::read_to_string(format!("{}.system", record.display())).expect("system prompt file");
    assert!(system.starts_with("You are a guild-hall worker.") && system.contains("write_artifact"), "{system}");
    let mcp: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(format!("{}.mcp", record.display())).expect("mcp config")).expect("json");
    let server = &mcp["mcpServers"]["guild-hall"];
    assert_eq!(server["args"], serde_json::json!(["mcp"]));
    assert!(server["command"].as_str().is_some_and(|c| c.ends_with("guild-hall")), "{mcp}");

    // Its environment: the contract, a private TMPDIR (where the MCP config went, gone with the
    // attempt), the package's env, the API key passed from guild-hall's environment.
    let env = std::fs::read_to_string(format!("{}.env", record.display())).expect("env");
    let var = |k: &str| env.lines().find_map(|l| l.strip_prefix(&format!("{k}="))).map(str::to_string);
    assert_eq!(var("GUILD_HALL_COMMISSION").as_deref(), Some("ask"));
    assert_eq!(var("ANTHROPIC_API_KEY").as_deref(), Some("sk-from-guild-halls-env"));
    assert_eq!(var("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC").as_deref(), Some("1"));
    let tmpdir = var("TMPDIR").expect("TMPDIR");
    assert!(tmpdir.starts_with(&p.home.to_string_lossy().into_owned()) && tmpdir.ends_with("/tmp"), "{tmpdir}");
    assert!(!Path::new(&tmpdir).exists(), "the private temp dir (and the MCP config in it) is gone with the attempt");
    assert!(var("GIT_DIR").is_none() && var("GIT_WORK_TREE").is_none());
    // Claude Code's home is the package's own, whatever the person's CLAUDE_CONFIG_DIR says;
    // the person's ~/.claude is not writable.
    let state = p.user_home().join(".claude/guild-hall-claude-code");
    assert_eq!(var("CLAUDE_CONFIG_DIR"), Some(state.display().to_string()));
    let wrote = std::fs::read_to_string(format!("{}.state", record.display())).expect("state");
    assert_eq!(wrote.trim(), format!("wrote {}", state.display()));
    assert_eq!(std::fs::read_to_string(state.join("stand-in-session")).expect("its state"), "session\n");
    let person = std::fs::read_to_string(format!("{}.person", record.display())).expect("person");
    assert_eq!(person.trim(), "refused", "the worker could write the person's ~/.claude");
    assert!(std::fs::read_dir(&config_dir).expect("config dir").next().is_none(), "the person's CLAUDE_CONFIG_DIR is untouched");
    agent_homes_apart(&p, &[".claude/guild-hall-claude-code"]);
    let log = p.ok(&["logs", "ask"]);
    assert!(!log.contains("sk-from-guild-halls-env"));
}

#[test]
fn the_claude_code_package_launches_claude_as_root_without_a_permission_bypass() {
    launch_as(false, false);
}

#[test]
fn the_claude_code_package_launches_claude_as_an_ordinary_user() {
    launch_as(true, false);
}

#[test]
fn the_claude_code_package_keeps_its_own_home_whatever_claude_config_dir_says() {
    launch_as(false, true);
}

#[test]
fn the_coder_package_offers_write_edit_and_bash() {
    let p = Project::new(&[]);
    install_package(&p, "claude-code-coder");
    let bin = p.tmp.path().join("bin");
    let record = p.tmp.path().join("records/claude-args");
    stand_in_claude(&bin, &record);
    allow_writes(&p, "claude-code-coder", record.parent().expect("records"));
    let id = p.create("claude-code-coder", "Code", "Change the code.");
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let out = run_as(&p, false, &path, &["reconcile", "--once", "--wait", "--timeout", "60s"], &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(p.status(&id), "completed", "{}", p.ok(&["logs", &id]));
    let args = std::fs::read_to_string(&record).expect("claude ran");
    assert!(args.contains("\n---\nRead,Grep,Glob,Write,Edit,Bash,WebSearch,WebFetch\n---\n"), "{args}");
    assert!(args.contains("Read,Grep,Glob,Write,Edit,Bash,WebSearch,WebFetch,mcp__guild-hall__report_progress"), "{args}");
    let workers = p.ok(&["workers", "--json"]);
    let json: serde_json::Value = serde_json::from_str(&workers).expect("json");
    assert_eq!(json[0]["checkout"], "full");
    assert_eq!(json[0]["confinement"], "confined");
}

/// The Claude Code CLI from npm, in `target/claude-code` (installed on first use).
pub(crate) fn real_claude() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/claude-code");
    let bin = dir.join("node_modules/.bin/claude");
    let ok = |b: &PathBuf| Command::new(b).arg("--version").output().is_ok_and(|o| o.status.success());
    if !ok(&bin) {
        let lock = std::fs::File::create(std::env::temp_dir().join("guild-hall-claude-code.lock")).expect("lock");
        let _held = nix::fcntl::Flock::lock(lock, nix::fcntl::FlockArg::LockExclusive).expect("flock");
        if !ok(&bin) {
            std::fs::create_dir_all(&dir).expect("mkdir");
            let npm = needs(
                Command::new("npm")
                    .args(["install", "--no-audit", "--no-fund", "--prefix"])
                    .arg(&dir)
                    .arg("@anthropic-ai/claude-code@2")
                    .status(),
                "npm",
                "to install the Claude Code CLI into target/claude-code",
            );
            assert!(npm.success() && ok(&bin), "installing Claude Code from npm failed (needs the npm registry)");
        }
    }
    bin
}

/// The local stand-in for the model API, stopped when dropped.
pub(crate) struct FakeApi {
    child: Child,
    pub(crate) url: String,
    pub(crate) requests: PathBuf,
}

impl FakeApi {
    /// The Anthropic Messages API (`tests/fake_anthropic.py`).
    pub(crate) fn start(dir: &Path, script: &serde_json::Value) -> FakeApi {
        FakeApi::serve("fake_anthropic.py", dir, script)
    }

    /// The stand-in `tests/SERVER` (a model API of another agent, same arguments) instead.
    pub(crate) fn serve(server: &str, dir: &Path, script: &serde_json::Value) -> FakeApi {
        let script_path = dir.join("script.json");
        std::fs::write(&script_path, script.to_string()).expect("script");
        let requests = dir.join("requests.jsonl");
        let port_file = dir.join("port");
        let server = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests").join(server);
        let child = Command::new("python3").arg(server).arg(&script_path).arg(&requests).arg(&port_file).spawn();
        let child = needs(child, "python3", "to serve the stand-in model API");
        wait_for("the stand-in API to listen", || port_file.exists());
        let port = std::fs::read_to_string(&port_file).expect("port");
        FakeApi { child, url: format!("http://127.0.0.1:{}", port.trim()), requests }
    }

    /// Its base URL (`ANTHROPIC_BASE_URL`).
    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// The names of the tools each agent turn was offered.
    fn offered(&self) -> Vec<Vec<String>> {
        std::fs::read_to_string(&self.requests)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter_map(|r| r["body"]["tools"].as_array().cloned())
            .map(|tools| tools.iter().filter_map(|t| t["name"].as_str().map(str::to_string)).collect())
            .collect()
    }

    /// Every tool result the agent sent back, as text.
    pub(crate) fn tool_results(&self) -> String {
        std::fs::read_to_string(&self.requests).unwrap_or_default()
    }
}

impl Drop for FakeApi {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn real_run(p: &Project, api: &FakeApi, claude: &Path) -> std::process::Output {
    let path = format!("{}:{}", claude.parent().expect("bin dir").display(), std::env::var("PATH").unwrap_or_default());
    p.cmd()
        .env("PATH", path)
        .env("ANTHROPIC_BASE_URL", &api.url)
        .env("ANTHROPIC_API_KEY", "sk-stand-in")
        .args(["reconcile", "--once", "--wait", "--timeout", "180s"])
        .output()
        .expect("runs")
}

#[test]
fn real_claude_code_confined_delivers_a_file_that_unblocks_a_dependent() {
    let claude = real_claude();
    let p = Project::new(&["scribe"]);
    install_package(&p, "claude-code");
    let api = FakeApi::start(
        p.tmp.path(),
        &serde_json::json!([
            // The model asks for a tool the package does not offer: Claude Code refuses it.
            {"tool_use": {"name": "Write", "input": {"file_path": "forbidden.md", "content": "x"}}},
            {"tool_use": {"name": "mcp__guild-hall__report_progress", "input": {"text": "reading"}}},
            {"tool_use": {"name": "mcp__guild-hall__write_artifact", "input": {"path": ".lore/research/crash-only.md", "content": "# Crash-only software\n\nStop = crash; start = recover.\n"}}},
            {"tool_use": {"name": "mcp__guild-hall__submit_result", "input": {"summary": "Wrote the survey", "artifacts": [".lore/research/crash-only.md"]}}},
            {"text": "All done."}
        ]),
    );
    p.write_commission("survey", "---\nworker: claude-code\noutputs: [.lore/research/crash-only.md]\n---\nSurvey crash-only software.\n");
    p.write_commission(
        "summary",
        "---\nworker: scribe\ndependencies: [.lore/research/crash-only.md]\n---\noutput: .lore/reports/summary.md\nSummarise it.\n",
    );
    plant_person_agent_homes(&p);
    let out = real_run(&p, &api, &claude);
    assert!(out.status.success(), "{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(p.status("survey"), "completed", "{}", p.ok(&["logs", "survey"]));
    // Claude Code's state went to this package's own home, never to the person's ~/.claude.
    agent_homes_apart(&p, &[".claude/guild-hall-claude-code"]);
    assert_eq!(
        git(&p.root, &["show", "claude/main:.lore/research/crash-only.md"]),
        "# Crash-only software\n\nStop = crash; start = recover.\n"
    );
    assert_eq!(p.status("summary"), "completed", "the dependent ran once the output was merged");
    let log = p.ok(&["logs", "survey"]);
    assert!(
        log.contains("\"type\":\"assistant\"") && log.contains("mcp__guild-hall__write_artifact"),
        "the tool calls are in the log:\n{log}"
    );
    assert!(!git(&p.root, &["ls-tree", "-r", "--name-only", "claude/main"]).contains("forbidden.md"));
    assert!(api.tool_results().contains("No such tool available: Write"), "the forbidden call was refused");
    // Write, Edit and Bash were never offered to the model.
    let offered = api.offered();
    assert!(!offered.is_empty());
    for tools in &offered {
        for forbidden in ["Write", "Edit", "Bash", "NotebookEdit"] {
            assert!(!tools.iter().any(|t| t == forbidden), "{forbidden} offered: {tools:?}");
        }
        assert!(tools.iter().any(|t| t == "mcp__guild-hall__write_artifact"), "{tools:?}");
    }
}

#[test]
fn real_claude_code_coder_writes_and_runs_inside_its_worktree_only() {
    let claude = real_claude();
    let p = Project::new(&[]);
    install_package(&p, "claude-code-coder");
    let id = "code";
    // A project name of our choosing, so that the worktree's path is known before dispatch.
    p.config("name: coder-test\n");
    let wt = p.home.join("worktrees/coder-test/commission-code");
    let wt = wt.to_string_lossy();
    let api = FakeApi::start(
        p.tmp.path(),
        &serde_json::json!([
            {"tool_use": {"name": "Write", "input": {"file_path": format!("{wt}/src/hello.txt"), "content": "hello from the coder\n"}}},
            {"tool_use": {"name": "Bash", "input": {"command": "cat src/hello.txt > src/copy.txt && echo built; touch \"$GUILD_HALL_PROJECT/escaped.txt\" || echo ESCAPE-REFUSED; echo '{\"hooks\": {}}' > \"$HOME/.claude/settings.json\" || echo HOME-REFUSED", "description": "build"}}},
            {"tool_use": {"name": "mcp__guild-hall__submit_result", "input": {"summary": "coded", "artifacts": ["src/hello.txt"]}}},
            {"text": "Coded."}
        ]),
    );
    p.write_commission(id, "---\nworker: claude-code-coder\n---\nAdd src/hello.txt.\n");
    plant_person_agent_homes(&p);
    let out = real_run(&p, &api, &claude);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(p.status(id), "completed", "{}\n{}", p.status_json(id), p.ok(&["logs", id]));
    assert_eq!(git(&p.root, &["show", "claude/main:src/hello.txt"]), "hello from the coder\n");
    assert_eq!(git(&p.root, &["show", "claude/main:src/copy.txt"]), "hello from the coder\n");
    assert!(!p.root.join("escaped.txt").exists());
    let results = api.tool_results();
    assert!(results.contains("ESCAPE-REFUSED") && results.contains("Permission denied"), "the sandbox refused the escape");
    // The person's ~/.claude (settings, hooks their own `claude` runs) is not the coder's to write.
    assert!(results.contains("HOME-REFUSED"), "the sandbox refused writing ~/.claude: {results}");
    agent_homes_apart(&p, &[".claude/guild-hall-claude-code-coder"]);
    assert!(api.offered().iter().all(|tools| ["Write", "Edit", "Bash"].iter().all(|t| tools.iter().any(|x| x == t))));
}

/// A repository's `.claude/settings.json` (on the integration branch, so in the worktree) is
/// content, not policy: its hooks never run, its model and API URL are not taken. And a prompt
/// over 128 KiB (too long for one argument at exec) reaches the model whole, with the system
/// prompt: both go by stdin and file, not on the command line.
#[test]
fn real_claude_code_loads_no_repository_settings_and_takes_a_long_prompt() {
    let claude = real_claude();
    let p = Project::new(&[]);
    install_package(&p, "claude-code");
    let hooks = p.tmp.path().join("hooks");
    std::fs::create_dir_all(&hooks).expect("mkdir");
    // Where a hook that ran would write: writable to the worker, so only the settings stop it.
    allow_writes(&p, "claude-code", &hooks);
    let hook =
        |name: &str| serde_json::json!([{"hooks": [{"type": "command", "command": format!("echo ran > {}/{name}", hooks.display())}]}]);
    let settings = serde_json::json!({
        "hooks": {"SessionStart": hook("SessionStart"), "UserPromptSubmit": hook("UserPromptSubmit"), "PreToolUse": hook("PreToolUse")},
        "model": "planted-model",
        "env": {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9/planted"},
        "permissions": {"allow": ["Bash", "Write"]}
    });
    p.commit_on_integration(".claude/settings.json", &settings.to_string(), "a repository's Claude Code settings");
    p.commit_on_integration(".claude/settings.local.json", &settings.to_string(), "and local ones");
    let api = FakeApi::start(
        p.tmp.path(),
        &serde_json::json!([
            {"tool_use": {"name": "mcp__guild-hall__write_artifact", "input": {"path": ".lore/answers/long.md", "content": "read it all\n"}}},
            {"tool_use": {"name": "mcp__guild-hall__submit_result", "input": {"summary": "Read the long prompt", "artifacts": [".lore/answers/long.md"]}}},
            {"text": "Done."}
        ]),
    );
    let long: String = (0..20_000).map(|i| format!("line {i:05} ")).collect();
    assert!(long.len() > 200 * 1024);
    p.write_commission("long", &format!("---\nworker: claude-code\n---\nRead this.\n{long}\nEND-OF-THE-LONG-PROMPT\n"));
    let out = real_run(&p, &api, &claude);
    assert!(out.status.success(), "{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(p.status("long"), "completed", "{}\n{}", p.status_json("long"), p.ok(&["logs", "long"]));
    assert_eq!(git(&p.root, &["show", "claude/main:.lore/answers/long.md"]), "read it all\n");
    let ran: Vec<String> =
        std::fs::read_dir(&hooks).expect("hooks dir").flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    assert!(ran.is_empty(), "the repository's hooks ran: {ran:?}");
    let requests: Vec<serde_json::Value> = api
        .tool_results()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .filter(|r: &serde_json::Value| r["body"]["tools"].is_array())
        .collect();
    assert!(!requests.is_empty(), "the model was asked (at the stand-in, not the planted URL)");
    for r in &requests {
        assert_ne!(r["body"]["model"], "planted-model", "the repository chose the model");
    }
    let first = requests[0]["body"].to_string();
    assert!(first.contains("END-OF-THE-LONG-PROMPT") && first.contains("line 19999"), "the long prompt reached the model whole");
    assert!(first.contains("You are a guild-hall worker."), "the system prompt reached the model");
}

/// A stand-in `claude` for meetings that replays the real captures in
/// `tests/fixtures/claude-code/` (copied from the shared fixtures): a new session (tool calls, streamed text), a resumed
/// turn, and what an unknown session id returns. Records each call's arguments.
fn stand_in_claude_meeting(dir: &Path, record: &Path) {
    std::fs::create_dir_all(dir).expect("mkdir");
    std::fs::create_dir_all(record).expect("mkdir");
    let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude-code");
    let script = format!(
        r#"#!/bin/sh
n=$(ls {rec} | wc -l)
{{
  for a in "$@"; do printf '%s\n---\n' "$a"; done
  printf 'STDIN:'; cat; printf '\n---\n'
  prev=''
  for a in "$@"; do [ "$prev" = --append-system-prompt-file ] && {{ printf 'SYSTEM:'; cat "$a"; printf '\n---\n'; }}; prev=$a; done
}} > {rec}/call-$n
resume=''
prev=''
for a in "$@"; do [ "$prev" = --resume ] && resume=$a; prev=$a; done
case "$resume" in
  '') cat {fx}/turn1.jsonl ;;
  1149bf9a-6688-451b-bc63-1d54cf1d6bc3) cat {fx}/turn2-resume.jsonl ;;
  *) cat {fx}/turn3-unknown-session.jsonl; cat {fx}/turn3-unknown-session.stderr >&2; exit 1 ;;
esac
"#,
        rec = record.display(),
        fx = fixtures.display()
    );
    std::fs::write(dir.join("claude"), script).expect("write");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.join("claude"), std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// The claude-code package in a meeting: Claude Code's stream-json translated (against real
/// captures), the session stored and resumed, an unknown session renewed.
#[test]
fn the_claude_code_package_meets_with_resume_and_renewal() {
    let p = Project::new(&[]);
    install_package(&p, "claude-code");
    let bin = p.tmp.path().join("bin");
    let record = p.tmp.path().join("claude-calls");
    stand_in_claude_meeting(&bin, &record);
    allow_writes(&p, "claude-code", &record);
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let run = |args: &[&str]| {
        let out = p.cmd().args(args).env("PATH", &path).output().expect("runs");
        let (o, e) = (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned());
        assert!(out.status.success(), "{args:?}\n{o}\n{e}");
        o
    };
    let out = run(&["meeting", "start", "--worker", "claude-code", "--id", "cc", "What does the survey say?"]);
    assert!(out.contains("The survey covers three designs: crash-only, journaling and checkpointing."), "{out}");
    assert!(out.contains("· mcp__gh__report_progress"), "{out}");
    let call0 = std::fs::read_to_string(record.join("call-0")).expect("first call");
    assert!(
        call0.starts_with("-p\n---\n") && call0.contains("\nSTDIN:What does the survey say?"),
        "the message is the prompt, on stdin: {call0}"
    );
    assert!(call0.contains("--setting-sources\n---\n\n---\n") && call0.contains("\nSYSTEM:You are a guild-hall worker."), "{call0}");
    assert!(!call0.contains("--resume"), "{call0}");
    assert!(call0.contains("--include-partial-messages") && call0.contains("mcp__guild-hall__link_artifact"), "{call0}");
    let artifact = std::fs::read_to_string(p.root.join(".lore/meetings/cc.md")).expect("artifact");
    assert!(artifact.contains("session_id: 1149bf9a-6688-451b-bc63-1d54cf1d6bc3"), "{artifact}");

    let out = run(&["meeting", "send", "cc", "And the next step?"]);
    let call1 = std::fs::read_to_string(record.join("call-1")).expect("second call");
    assert!(call1.contains("--resume\n---\n1149bf9a-6688-451b-bc63-1d54cf1d6bc3\n"), "resumed: {call1}");
    assert!(!out.trim().is_empty(), "{out}");

    // A session Claude Code does not have: renewed in a fresh one, told the conversation.
    let text = artifact.replace("1149bf9a-6688-451b-bc63-1d54cf1d6bc3", "00000000-0000-4000-8000-000000000000");
    std::fs::write(p.root.join(".lore/meetings/cc.md"), text).expect("write");
    let out = run(&["meeting", "send", "cc", "Still there?", "--json"]);
    assert!(out.contains("No conversation found with session ID"), "the error is shown: {out}");
    assert!(out.lines().last().unwrap_or("").contains("\"outcome\":\"ended\""), "{out}");
    let call3 = std::fs::read_to_string(record.join("call-3")).expect("renewed call");
    assert!(!call3.contains("--resume"), "a fresh session: {call3}");
    assert!(call3.contains("The conversation so far") && call3.contains("What does the survey say?"), "{call3}");
    let log = p.ok(&["meeting", "show", "cc", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&log).expect("json");
    let renewal = v["log"].as_array().expect("log").iter().find(|e| e["kind"] == "session_renewed").cloned().expect("renewal");
    assert_eq!(renewal["old"], "00000000-0000-4000-8000-000000000000");
    assert_eq!(renewal["new"], "1149bf9a-6688-451b-bc63-1d54cf1d6bc3");
}

/// The `researcher` package is Claude Code offered reading and web search — Read, Grep, Glob,
/// WebSearch, WebFetch — and no file-editing tool, its brief told where its report goes
/// (`.lore/reports/<id>.md`), its posture the researcher's (fails on ab359d5: `researcher` was
/// the scripted stub, no `claude` run at all).
#[test]
fn the_researcher_package_is_claude_code_with_web_search() {
    let p = Project::new(&[]);
    install_package(&p, "researcher");
    let bin = p.tmp.path().join("bin");
    let record = p.tmp.path().join("records/claude-args");
    stand_in_claude(&bin, &record);
    allow_writes(&p, "researcher", record.parent().expect("records"));
    let id = p.create("researcher", "Survey", "What is crash-only software?");
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let out = run_as(&p, false, &path, &["reconcile", "--once", "--wait", "--timeout", "60s"], &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(p.status(&id), "completed", "{}", p.ok(&["logs", &id]));
    let args = std::fs::read_to_string(&record).expect("claude ran");
    assert!(args.contains("\n---\nRead,Grep,Glob,WebSearch,WebFetch\n---\n"), "{args}");
    assert!(args.contains("Read,Grep,Glob,WebSearch,WebFetch,mcp__guild-hall__report_progress"), "{args}");
    let brief = std::fs::read_to_string(format!("{}.stdin", record.display())).expect("the brief");
    assert!(brief.starts_with("What is crash-only software?"), "{brief}");
    assert!(brief.contains(&format!("Write your report to .lore/reports/{id}.md")), "{brief}");
    let system = std::fs::read_to_string(format!("{}.system", record.display())).expect("the system prompt");
    assert!(system.contains("You are a careful researcher") && system.contains("## Sources"), "{system}");
    let env = std::fs::read_to_string(format!("{}.env", record.display())).expect("env");
    assert!(env.lines().any(|l| l.ends_with(".claude/guild-hall-researcher") && l.starts_with("CLAUDE_CONFIG_DIR=")), "{env}");
}

/// The real Claude Code as the `researcher`, confined, against the stand-in model API: offered
/// WebSearch and WebFetch (and never Write, Edit or Bash), it writes its structured report
/// through the toolbox and the report lands on the integration branch.
#[test]
fn real_claude_code_researcher_is_offered_web_search_and_its_report_lands() {
    let claude = real_claude();
    let p = Project::new(&[]);
    install_package(&p, "researcher");
    let report = "# What is crash-only software?\n\n## Answer\nSoftware whose only stop is a crash.\n\n## Findings\nStop = crash; start = recover ([Candea and Fox](https://www.usenix.org/legacy/events/hotos03/tech/candea.html)).\n\n## Sources\n- https://www.usenix.org/legacy/events/hotos03/tech/candea.html\n\n## Confidence and open questions\nWell supported.\n";
    let api = FakeApi::start(
        p.tmp.path(),
        &serde_json::json!([
            {"tool_use": {"name": "mcp__guild-hall__report_progress", "input": {"text": "searching"}}},
            {"tool_use": {"name": "mcp__guild-hall__write_artifact", "input": {"path": ".lore/reports/survey.md", "content": report}}},
            {"tool_use": {"name": "mcp__guild-hall__submit_result", "input": {"summary": "Crash-only software, surveyed", "artifacts": [".lore/reports/survey.md"]}}},
            {"text": "Done."}
        ]),
    );
    p.write_commission("survey", "---\nworker: researcher\n---\nWhat is crash-only software?\n");
    let out = real_run(&p, &api, &claude);
    assert!(out.status.success(), "{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(p.status("survey"), "completed", "{}", p.ok(&["logs", "survey"]));
    assert_eq!(git(&p.root, &["show", "claude/main:.lore/reports/survey.md"]), report);
    let offered = api.offered();
    assert!(!offered.is_empty());
    for tools in &offered {
        for wanted in ["WebSearch", "WebFetch", "Read", "mcp__guild-hall__write_artifact"] {
            assert!(tools.iter().any(|t| t == wanted), "{wanted} not offered: {tools:?}");
        }
        for forbidden in ["Write", "Edit", "Bash", "NotebookEdit"] {
            assert!(!tools.iter().any(|t| t == forbidden), "{forbidden} offered: {tools:?}");
        }
    }
    // The brief the model was given says where the report goes.
    assert!(api.tool_results().contains("Write your report to .lore/reports/survey.md"), "the brief reached the model");
}
