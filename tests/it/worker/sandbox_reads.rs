//! What a confined worker can read, on real processes under the real shim and service: nothing
//! of `$GUILD_HALL_HOME` but its own (no secrets file, no endpoint token, no other attempt's
//! state, worktree or memory, no reconciler environment), while its real work — its worktree,
//! its prompts, git, the toolbox, its `pass_env` variables — goes on as before.

use std::path::Path;

use crate::common::*;

/// A worker that tries to read what is not its own (each path named by a `NAME: PATH` line of
/// its prompt, or in the home), then does its real work, and reports each try as `refused: X`
/// / `READ: X` and each piece of work as `ok: X` / `FAILED: X` in `.lore/snoop/<id>.md`.
fn install_snoop(p: &Project) {
    let dir = p.root.join(".lore/workers/snoop");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(dir.join("worker.yaml"), "name: snoop\ncommand: [\"./run.sh\"]\ncheckout: full\npass_env: [SECRET_LISTED]\n")
        .expect("write");
    let script = r#"#!/bin/sh
set -u
home=$GUILD_HALL_HOME
gh=$GUILD_HALL_BIN
report=".lore/snoop/$GUILD_HALL_COMMISSION.md"
mkdir -p .lore/snoop
out=""
path() { sed -n "s/^$1: *//p" "$GUILD_HALL_PROMPT_FILE" | head -n 1; }
# What must be refused: any success is a leak.
try() {
  if sh -c "$2" >/dev/null 2>&1; then out="${out}READ: $1
"; else out="${out}refused: $1
"; fi
}
# What must work.
must() {
  if err=$(sh -c "$2" 2>&1 >/dev/null); then out="${out}ok: $1
"; else out="${out}FAILED: $1 ($err)
"; fi
}
try secrets "cat '$home/secrets.env'"
try token "cat '$home/token'"
try home-config "cat '$home/config.yaml'"
try home-listing "ls '$home'"
try other-events "cat '$(path other-events)'"
try other-memory "cat '$(path other-memory)'"
try other-memory-dir "ls '$(dirname "$(path other-memory)")'"
try victim-worktree "cat '$(path victim-worktree)/work.txt'"
try victim-prompt "cat '$(path victim-prompt)'"
# The reconciler: the parent of this worker's shim.
reconciler=$(awk '{print $4}' /proc/$PPID/stat)
try reconciler-environ "cat /proc/$reconciler/environ"
try hardlink "ln '$home/secrets.env' .lore/snoop/stolen && cat .lore/snoop/stolen"
try symlink "ln -s '$home/secrets.env' .lore/snoop/link && cat .lore/snoop/link"

must prompt "grep -q '^other-events:' '$GUILD_HALL_PROMPT_FILE'"
must system-prompt "grep -q submit_result '$GUILD_HALL_SYSTEM_PROMPT_FILE'"
must worktree-write "echo mine > .lore/snoop/mine.txt && cat .lore/snoop/mine.txt"
must worktree-read "cat README.md"
must tmpdir "echo scratch > '$TMPDIR/s' && cat '$TMPDIR/s'"
must git "git status --porcelain && git log -1 --format=%s"
must progress "'$gh' toolbox report-progress 'Snooping'"
must store-memory "'$gh' toolbox store-memory --key snooped --content 'what I saw'"
must own-memory "cat '$GUILD_HALL_MEMORY/snooped.md'"
must pass-env "[ \"\${SECRET_LISTED:-}\" = listed-value ]"
must no-unlisted-env "[ -z \"\${SECRET_UNLISTED:-}\" ]"
printf '%s' "$out" > "$report"
rm -f .lore/snoop/link .lore/snoop/stolen
"$gh" toolbox submit-result --summary "snooped" --artifact "$report"
"#;
    std::fs::write(dir.join("run.sh"), script).expect("write");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.join("run.sh"), std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// Every try refused (and `extra` too), every piece of work done. `root`: the worker runs as
/// root, which reads the reconciler's environment all the same (see docs/confinement.md).
fn check(report: &str, extra: &[&str], root: bool) {
    let refused =
        ["secrets", "token", "home-config", "home-listing", "other-events", "other-memory", "other-memory-dir", "hardlink", "symlink"];
    for what in refused.iter().chain(extra).chain((!root).then_some(&"reconciler-environ")) {
        assert!(report.contains(&format!("refused: {what}\n")), "{what} was not refused:\n{report}");
    }
    for what in [
        "prompt",
        "system-prompt",
        "worktree-write",
        "worktree-read",
        "tmpdir",
        "git",
        "progress",
        "store-memory",
        "own-memory",
        "pass-env",
        "no-unlisted-env",
    ] {
        assert!(report.contains(&format!("ok: {what}\n")), "{what} failed:\n{report}");
    }
    let leaks: Vec<&str> = report.lines().filter(|l| l.starts_with("READ") && !(root && *l == "READ: reconciler-environ")).collect();
    assert!(leaks.is_empty() && !report.contains("FAILED"), "{report}");
}

fn exists(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok()
}

#[test]
fn a_confined_worker_reads_nothing_of_the_home_but_its_own() {
    use std::os::unix::fs::PermissionsExt;
    let p = Project::new(&["scripted-researcher", "sleeper"]);
    install_snoop(&p);
    let secrets = p.home.join("secrets.env");
    std::fs::write(&secrets, "SECRET_LISTED=listed-value\nSECRET_UNLISTED=unlisted-value\n").expect("write");
    std::fs::set_permissions(&secrets, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    // The service, with its TCP listener: the bearer token is made in the home.
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("port").local_addr().expect("addr").port();
    let _svc = Service::start(&p, &[], &["--listen", &format!("127.0.0.1:{port}")]);
    let token = std::fs::read_to_string(p.home.join("token")).expect("the service made its token");

    // Another worker's memory and another commission's mailbox, left in the home.
    let other = p.create("scripted-researcher", "Other", "Something else.");
    wait_status(&p, &other, "completed");
    let other_events = p.state_dir(&other).join("events-1.jsonl");
    let other_memory = p.memory_dir("scripted-researcher").join("last-topic.md");
    // And a commission at work, with its worktree and prompt.
    let victim = p.create("sleeper", "Victim", "sleep: 60\nStay a while.");
    wait_status(&p, &victim, "in_progress");
    let victim_prompt = p.state_dir(&victim).join("prompt.md");
    // Its work in progress (its checkout is sparse: this stands for what it wrote).
    std::fs::write(p.worktree(&victim).join("work.txt"), "half done\n").expect("write");
    for f in [&other_events, &other_memory, &victim_prompt] {
        assert!(exists(f), "set-up: {} is there to be read", f.display());
    }

    let prompt = format!(
        "other-events: {}\nother-memory: {}\nvictim-worktree: {}\nvictim-prompt: {}\n",
        other_events.display(),
        other_memory.display(),
        p.worktree(&victim).display(),
        victim_prompt.display(),
    );
    let id = p.create("snoop", "Snoop", &prompt);
    wait_status(&p, &id, "completed");
    let report = git(&p.root, &["show", &format!("claude/main:.lore/snoop/{id}.md")]);
    check(&report, &["victim-worktree", "victim-prompt"], nix::unistd::geteuid().is_root());
    // The toolbox's effects are real: the progress is in the timeline, the memory in the home.
    let timeline = p.timeline(&id);
    assert!(timeline.iter().any(|e| e["kind"] == "progress" && e["text"] == "Snooping"), "{timeline:?}");
    assert_eq!(std::fs::read_to_string(p.memory_dir("snoop").join("snooped.md")).expect("memory"), "what I saw");
    // Nothing of the secrets or the token left the home by way of the worker.
    let merged = git(&p.root, &["log", "-p", "claude/main"]);
    for secret in ["listed-value", "unlisted-value", token.trim()] {
        assert!(!merged.contains(secret), "{secret} reached claude/main");
    }

    p.ok(&["commission", "cancel", &victim]);
    wait_status(&p, &victim, "cancelled");
}

/// The same as an unprivileged user (uid 65534, the whole tree handed to it): the reconciler's
/// environment, with a key in it that the worker's package does not pass, is out of reach too.
#[test]
fn an_unprivileged_confined_worker_reads_nothing_of_the_home_nor_the_reconcilers_environment() {
    use std::os::unix::fs::PermissionsExt;
    let p = Project::new(&["scripted-researcher"]);
    install_snoop(&p);
    let secrets = p.home.join("secrets.env");
    std::fs::write(&secrets, "SECRET_LISTED=listed-value\nSECRET_UNLISTED=unlisted-value\n").expect("write");
    std::fs::set_permissions(&secrets, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    // A token as the service leaves it (mode 0600 in the home).
    std::fs::write(p.home.join("token"), "the-endpoint-token\n").expect("write");
    std::fs::set_permissions(p.home.join("token"), std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let path = std::env::var("PATH").unwrap_or_default();
    let settle = |p: &Project| {
        let out = crate::worker::claude_code::run_as(p, true, &path, &["reconcile", "--once", "--wait", "--timeout", "60s"], &[]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    };
    let other = p.create("scripted-researcher", "Other", "Something else.");
    settle(&p);
    assert_eq!(p.status(&other), "completed", "{}", p.ok(&["logs", &other]));
    let other_events = p.state_dir(&other).join("events-1.jsonl");
    let other_memory = p.memory_dir("scripted-researcher").join("last-topic.md");
    assert!(exists(&other_events) && exists(&other_memory), "set-up: there to be read");
    let id = p.create("snoop", "Snoop", &format!("other-events: {}\nother-memory: {}\n", other_events.display(), other_memory.display()));
    settle(&p);
    assert_eq!(p.status(&id), "completed", "{}", p.ok(&["logs", &id]));
    let report = git(&p.root, &["show", &format!("claude/main:.lore/snoop/{id}.md")]);
    check(&report, &["reconciler-environ"], false);
    // The reconciler had it (run_as sets it); the worker never saw it.
    assert!(!report.contains("sk-from-guild-halls-env"));
}

/// A wave worker that reads the control plane's snapshot (by `.lore-snapshot/` and by
/// `$GUILD_HALL_SNAPSHOT`), tries to change it, and leaves what happened as its evidence.
fn install_copyist(p: &Project) {
    let dir = p.root.join(".lore/workers/copyist");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(dir.join("worker.yaml"), "name: copyist\ncommand: [\"./run.sh\"]\ncheckout: full\ncapabilities: [commission]\n")
        .expect("write");
    let script = r#"#!/bin/sh
set -u
slug=$(printf '%s' "$GUILD_HALL_TASK_ID" | tr ':' '-')
update() { "$GUILD_HALL_BIN" toolbox task-update --status "$1" --sequence "$2" --idempotency-key "$GUILD_HALL_TASK_ID:$1:$GUILD_HALL_ATTEMPT" >/dev/null; }
update in_progress 1
mkdir -p ".lore-artifacts/$slug"
{
  if grep -q '^title: peek' .lore-snapshot/plans/peek.md; then echo "ok: read"; else echo "FAILED: read"; fi
  if grep -q '^title: peek' "${GUILD_HALL_SNAPSHOT:-/nowhere}/plans/peek.md"; then echo "ok: read-env"; else echo "FAILED: read-env"; fi
  for f in plans/peek.md workers/copyist/worker.yaml; do
    if (echo hacked >> ".lore-snapshot/$f") 2>/dev/null; then echo "WROTE: $f"; else echo "refused: $f"; fi
  done
  if (echo new > .lore-snapshot/plans/new.md) 2>/dev/null; then echo "WROTE: new"; else echo "refused: new"; fi
  if rm -f .lore-snapshot/plans/peek.md 2>/dev/null && [ ! -e .lore-snapshot/plans/peek.md ]; then echo "WROTE: rm"; else echo "refused: rm"; fi
} > ".lore-artifacts/$slug/evidence.txt"
update done 2
"#;
    std::fs::write(dir.join("run.sh"), script).expect("write");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.join("run.sh"), std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// The snapshot of the control plane a wave task reads is out of its reach for writing, root
/// or not (0444 does not stop root; Landlock does): it lies outside the worktree.
#[test]
fn a_wave_task_reads_the_control_plane_snapshot_and_cannot_change_it() {
    let p = Project::new(&[]);
    install_copyist(&p);
    let plans = p.root.join(".lore/plans");
    std::fs::create_dir_all(&plans).expect("mkdir");
    std::fs::write(plans.join("peek.md"), "---\ntitle: peek\nwaves:\n  - - {id: one, worker: copyist, prompt: look}\n---\n")
        .expect("write");
    p.settle();
    let plan: serde_json::Value = serde_json::from_str(&p.ok(&["plan", "show", "peek", "--json"])).expect("json");
    assert_eq!(plan["status"], "completed", "{plan}");
    let evidence = git(&p.root, &["show", "claude/main:.lore/plans/peek/artifacts/peek-exec-wave-1-task-1/evidence.txt"]);
    for line in
        ["ok: read", "ok: read-env", "refused: plans/peek.md", "refused: workers/copyist/worker.yaml", "refused: new", "refused: rm"]
    {
        assert!(evidence.lines().any(|l| l == line), "{line}:\n{evidence}");
    }
}

/// The default shape, a home under `$HOME` (`~/.guild-hall`), with the package installed in the
/// home, and the real Claude Code CLI (against the stand-in API): it reads a file of `$HOME`
/// beside the home, is refused the home's `config.yaml`, and its memory, artifact and result
/// go through.
#[test]
fn real_claude_code_in_a_home_under_home_reads_only_its_own_of_it() {
    use crate::worker::claude_code::{real_claude, real_run, FakeApi};
    let claude = real_claude();
    let mut p = Project::new(&[]);
    p.home = p.user_home().join(".guild-hall");
    p.ok(&["init"]);
    let pkg = p.home.join("workers/claude-code");
    std::fs::create_dir_all(&pkg).expect("mkdir");
    let contrib = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("contrib/workers/claude-code");
    for e in std::fs::read_dir(contrib).expect("contrib").filter_map(|e| e.ok()) {
        std::fs::copy(e.path(), pkg.join(e.file_name())).expect("copy");
    }
    std::fs::write(p.user_home().join(".gitconfig"), "[user]\n\tname = Beside The Home\n").expect("write");
    let read = |path: &Path| serde_json::json!({"tool_use": {"name": "Read", "input": {"file_path": path.display().to_string()}}});
    let api = FakeApi::start(
        p.tmp.path(),
        &serde_json::json!([
            read(&p.user_home().join(".gitconfig")),
            read(&p.home.join("config.yaml")),
            {"tool_use": {"name": "mcp__guild-hall__store_memory", "input": {"key": "seen", "content": "remember this"}}},
            {"tool_use": {"name": "mcp__guild-hall__write_artifact", "input": {"path": ".lore/research/r.md", "content": "# R\n"}}},
            {"tool_use": {"name": "mcp__guild-hall__submit_result", "input": {"summary": "Done", "artifacts": [".lore/research/r.md"]}}},
            {"text": "All done."}
        ]),
    );
    p.write_commission("survey", "---\nworker: claude-code\n---\nSurvey.\n");
    let out = real_run(&p, &api, &claude);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(p.status("survey"), "completed", "{}", p.ok(&["logs", "survey"]));
    let results = api.tool_results();
    assert!(results.contains("Beside The Home"), "a file of $HOME beside the home is read");
    let config = p.home.join("config.yaml").display().to_string();
    assert!(results.contains(&format!("EACCES: permission denied, open '{config}'")), "{results}");
    assert!(!results.contains("projects:"), "nothing of config.yaml reached the model");
    assert_eq!(std::fs::read_to_string(p.memory_dir("claude-code").join("seen.md")).expect("memory"), "remember this");
    assert_eq!(git(&p.root, &["show", "claude/main:.lore/research/r.md"]), "# R\n");
}

/// Every file under `dir`, recursively, as bytes (links not followed).
fn all_bytes_under(dir: &Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else { return out };
    for e in entries.filter_map(|e| e.ok()) {
        let Ok(t) = e.file_type() else { continue };
        if t.is_dir() {
            out.extend(all_bytes_under(&e.path()));
        } else if t.is_file() {
            out.push((e.path(), std::fs::read(e.path()).unwrap_or_default()));
        }
    }
    out
}

/// A `sandbox.write` entry `${NAME:-DEFAULT}` whose variable holds a secret: whatever is wrong
/// with what it expands to, no output, artifact, timeline, log or state file shows the value;
/// the errors name the entry as written.
#[test]
fn an_expanded_sandbox_write_entry_is_never_shown() {
    let p = Project::new(&[]);
    // Not absolute: the manifest is refused when read. Absolute but not creatable: the
    // dispatch fails making it.
    let (relative, unmakeable) = ("TOKENVALUE-rel-5f3a9c", "TOKENVALUE-abs-8e1d27");
    for (name, var) in [("leaky", "MY_SECRET_TOKEN"), ("leakier", "MY_OTHER_TOKEN")] {
        p.script_worker(name, "full", "\"$GUILD_HALL_BIN\" toolbox submit-result --summary done");
        let yaml = p.root.join(".lore/workers").join(name).join("worker.yaml");
        let text = std::fs::read_to_string(&yaml).expect("yaml");
        std::fs::write(&yaml, format!("{text}sandbox: {{write: [\"${{{var}:-/tmp/x}}\"]}}\n")).expect("write");
    }
    git(&p.root, &["add", "-A"]);
    git(&p.root, &["commit", "-q", "-m", "packages"]);
    let with_secrets = |args: &[&str]| {
        let out = p
            .cmd()
            .args(args)
            .env("MY_SECRET_TOKEN", relative)
            .env("MY_OTHER_TOKEN", format!("/proc/{unmakeable}/dir"))
            .output()
            .expect("runs");
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
    };
    let a = p.create("leaky", "A", "Go.");
    let b = p.create("leakier", "B", "Go.");
    let mut said = String::new();
    for args in [
        &["reconcile", "--once"][..],
        &["reconcile", "--once"],
        &["check"],
        &["workers"],
        &["workers", "--json"],
        &["status"],
        &["status", "--json"],
        &["timeline", &a],
        &["timeline", &b],
    ] {
        said.push_str(&with_secrets(args));
    }
    for secret in [relative, unmakeable] {
        assert!(!said.contains(secret), "{secret} printed:\n{said}");
        for dir in [&p.root, &p.home] {
            for (path, bytes) in all_bytes_under(dir) {
                let text = String::from_utf8_lossy(&bytes);
                assert!(!text.contains(secret), "{secret} written into {}:\n{text}", path.display());
            }
        }
    }
    // What is wrong is still said, naming the entry as written.
    assert!(said.contains("${MY_SECRET_TOKEN:-/tmp/x}") && said.contains("must be an absolute path"), "{said}");
    assert!(said.contains("creating sandbox.write \"${MY_OTHER_TOKEN:-/tmp/x}\""), "{said}");
}

/// A worker that links a file of its memory dir to the home's `secrets.env`: the next
/// dispatch's system prompt holds nothing of it (the link is skipped, and the attempt's log says
/// so); a package whose posture is a link, or lies under a linked dir, does not start, and its
/// target reaches no prompt.
#[test]
fn a_link_in_memory_or_posture_is_never_read_into_a_prompt() {
    use std::os::unix::fs::PermissionsExt;
    let p = Project::new(&[]);
    let secrets = p.home.join("secrets.env");
    std::fs::write(&secrets, "SOME_KEY=memory-leak-canary-41\n").expect("write");
    std::fs::set_permissions(&secrets, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    // Where memory is, before and after it became per project.
    p.script_worker(
        "planter",
        "full",
        r#"mem=${GUILD_HALL_MEMORY:-$GUILD_HALL_HOME/memory/$GUILD_HALL_WORKER}
mkdir -p "$mem"
ln -sf "$GUILD_HALL_HOME/secrets.env" "$mem/leak.md"
"$GUILD_HALL_BIN" toolbox store-memory --key honest --content "an honest memory"
"$GUILD_HALL_BIN" toolbox submit-result --summary planted"#,
    );
    let first = p.create("planter", "Plant", "Go.");
    p.settle();
    assert_eq!(p.status(&first), "completed", "{}", p.ok(&["logs", &first]));
    let second = p.create("planter", "Again", "Go.");
    p.settle();
    assert_eq!(p.status(&second), "completed", "{}", p.ok(&["logs", &second]));
    let prompt = std::fs::read_to_string(p.state_dir(&second).join("system-prompt.md")).expect("system prompt");
    assert!(!prompt.contains("memory-leak-canary-41"), "the secrets went into the prompt:\n{prompt}");
    assert!(prompt.contains("an honest memory"), "the real memory is read:\n{prompt}");
    let logs = p.ok(&["logs", &second]);
    assert!(logs.contains("leak.md") && logs.contains("symlink"), "the skipped link is said: {logs}");

    // Posture: a link to a file outside, and a file under a linked dir.
    let outside = p.tmp.path().join("outside");
    std::fs::create_dir_all(&outside).expect("mkdir");
    std::fs::write(outside.join("key.md"), "posture-canary-77\n").expect("write");
    for (name, posture) in [("linked-posture", "posture.md"), ("linked-dir", "sub/key.md")] {
        p.script_worker(name, "full", "\"$GUILD_HALL_BIN\" toolbox submit-result --summary ran");
        let dir = p.root.join(".lore/workers").join(name);
        let yaml = dir.join("worker.yaml");
        let text = std::fs::read_to_string(&yaml).expect("yaml");
        std::fs::write(&yaml, format!("{text}posture: {posture}\n")).expect("write");
        if name == "linked-posture" {
            std::os::unix::fs::symlink(outside.join("key.md"), dir.join("posture.md")).expect("link");
        } else {
            std::os::unix::fs::symlink(&outside, dir.join("sub")).expect("link");
        }
        let id = p.create(name, "Postured", "Go.");
        p.settle();
        let s = p.status_json(&id);
        assert_ne!(s["status"], "completed", "{name}: ran with a posture read through a link: {s}");
        assert!(s.to_string().contains("posture"), "{name}: the reason names the posture: {s}");
        if let Some(state) = p.try_state_dir(&id) {
            let prompt = std::fs::read_to_string(state.join("system-prompt.md")).unwrap_or_default();
            assert!(!prompt.contains("posture-canary-77"), "{name}: {prompt}");
        }
    }
}

/// The person's credential stores in their home, each with a line a worker must not see.
const CREDENTIALS: [&str; 21] = [
    ".ssh/id_ed25519",
    ".pgpass",
    ".vault-token",
    ".terraform.d/credentials.tfrc.json",
    ".config/rclone/rclone.conf",
    ".s3cfg",
    ".boto",
    ".m2/settings.xml",
    ".gradle/gradle.properties",
    ".mozilla/firefox/profile/logins.json",
    ".config/google-chrome/Default/Cookies",
    ".config/chromium/Default/Login Data",
    ".aws/credentials",
    ".bash_history",
    ".zsh_history",
    ".local/share/fish/fish_history",
    ".git-credentials",
    ".config/gh/hosts.yml",
    ".claude/.credentials.json",
    ".codex/auth.json",
    ".gemini/oauth_creds.json",
];

/// A worker (`name`, with `sandbox` as its worker.yaml's `sandbox:` if any) that tries to read
/// each of [`CREDENTIALS`] in `$HOME` and reports `READ: F` or `refused: F`, then reads what it
/// needs of the home all the same (`ok:`/`FAILED:`), in `.lore/creds/<id>.md`.
fn install_credential_reader(p: &Project, name: &str, sandbox: Option<&str>) {
    let tries: String = CREDENTIALS
        .iter()
        .map(|f| {
            format!("if cat \"$HOME/{f}\" >/dev/null 2>&1; then out=\"${{out}}READ: {f}\n\"; else out=\"${{out}}refused: {f}\n\"; fi\n")
        })
        .collect();
    let script = format!(
        r#"report=".lore/creds/$GUILD_HALL_COMMISSION.md"
mkdir -p .lore/creds
out=""
{tries}
for f in .gitconfig .claude/settings.json .config/other/settings; do
  if cat "$HOME/$f" >/dev/null 2>&1; then out="${{out}}ok: $f
"; else out="${{out}}FAILED: $f
"; fi
done
printf '%s' "$out" > "$report"
"$GUILD_HALL_BIN" toolbox submit-result --summary read --artifact "$report""#
    );
    p.script_worker(name, "full", &script);
    if let Some(sandbox) = sandbox {
        let yaml = p.root.join(".lore/workers").join(name).join("worker.yaml");
        let text = std::fs::read_to_string(&yaml).expect("worker.yaml");
        std::fs::write(&yaml, format!("{text}sandbox: {sandbox}\n")).expect("write");
    }
}

/// A confined worker reads none of the person's credential stores (keys, cloud logins, shell
/// histories, the agents' own logins) while the rest of the home stays readable; a package
/// whose `sandbox.read` names one reads that one, and only that one.
#[test]
fn a_confined_worker_reads_none_of_the_persons_credentials_unless_sandbox_read_names_them() {
    let p = Project::new(&[]);
    let home = p.user_home();
    for f in CREDENTIALS.iter().chain(&[".gitconfig", ".claude/settings.json", ".config/other/settings"]) {
        let path = home.join(f);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(&path, format!("# credential-of {f}\n")).expect("plant");
    }
    install_credential_reader(&p, "reader", None);
    install_credential_reader(&p, "ssh-reader", Some("{read: [\"~/.ssh\"]}"));
    let plain = p.create("reader", "Read", "Read the home.");
    let ssh = p.create("ssh-reader", "Read with ssh", "Read the home.");
    p.settle();
    assert_eq!(p.status(&plain), "completed", "{}", p.ok(&["logs", &plain]));
    assert_eq!(p.status(&ssh), "completed", "{}", p.ok(&["logs", &ssh]));
    let report = |id: &str| git(&p.root, &["show", &format!("claude/main:.lore/creds/{id}.md")]);
    let (plain, ssh) = (report(&plain), report(&ssh));
    for f in CREDENTIALS {
        assert!(plain.contains(&format!("refused: {f}\n")), "{f} was readable:\n{plain}");
        let want = if f.starts_with(".ssh/") { "READ" } else { "refused" };
        assert!(ssh.contains(&format!("{want}: {f}\n")), "{f} with sandbox.read [~/.ssh]: want {want}:\n{ssh}");
    }
    for report in [&plain, &ssh] {
        assert!(!report.contains("FAILED"), "the rest of the home is readable:\n{report}");
    }
    // `workers` says what a package reads beyond the default.
    let workers = p.ok(&["workers"]);
    assert!(workers.contains("read +~/.ssh"), "{workers}");
}

/// Unix sockets listening outside the attempt (pathname sockets in the test's temp dir and in
/// `/tmp`, an abstract one), as the person's tmux, ssh-agent, D-Bus or Docker would be; each
/// connection accepted is written to `log`. Stopped when dropped.
struct Listeners {
    child: std::process::Child,
    pathnames: Vec<std::path::PathBuf>,
}

impl Listeners {
    fn start(dir: &Path, pathnames: Vec<std::path::PathBuf>, abstract_name: &str, log: &Path) -> Listeners {
        let ready = dir.join("listeners-ready");
        let script = r#"
import os, socket, sys, threading
log, ready, abstract, paths = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
def serve(s, name):
    while True:
        c, _ = s.accept()
        with open(log, "a") as f:
            f.write("connected: " + name + "\n")
        c.close()
socks = []
for p in paths:
    s = socket.socket(socket.AF_UNIX); s.bind(p); s.listen(8); socks.append((s, p))
s = socket.socket(socket.AF_UNIX); s.bind("\0" + abstract); s.listen(8); socks.append((s, "@" + abstract))
for s, name in socks:
    threading.Thread(target=serve, args=(s, name), daemon=True).start()
open(ready, "w").close()
threading.Event().wait()
"#;
        let child =
            std::process::Command::new("python3").arg("-c").arg(script).arg(log).arg(&ready).arg(abstract_name).args(&pathnames).spawn();
        let child = needs(child, "python3", "to listen on Unix sockets");
        wait_for("the listeners", || ready.exists());
        Listeners { child, pathnames }
    }
}

impl Drop for Listeners {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        for p in &self.pathnames {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Memory belongs to one project and one package: a package of one project named like a
/// package of another (a cloned repository's `scripted-researcher`, say) never reads nor writes the
/// other's memory, though both run under one home.
#[test]
fn memory_is_kept_per_project_and_package() {
    let a = Project::new(&["scripted-researcher"]);
    let mut b = Project::new(&["scripted-researcher"]);
    b.home = a.home.clone();
    b.ok(&["init"]);
    let first = a.create("scripted-researcher", "In A", "Topic of project A\nGo.");
    a.settle();
    assert_eq!(a.status(&first), "completed");
    let theirs = b.create("scripted-researcher", "In B", "Topic of project B\nGo.");
    b.settle();
    assert_eq!(b.status(&theirs), "completed");
    // Both projects' state is in one home: each found by its project's name.
    let system_prompt = |p: &Project, id: &str| {
        let name = guild_hall::config::default_project_name(&p.root.canonicalize().expect("root"));
        std::fs::read_to_string(p.home.join("state").join(name).join("commissions").join(id).join("system-prompt.md"))
            .expect("system prompt")
    };
    let prompt = system_prompt(&b, &theirs);
    assert!(!prompt.contains("Topic of project A"), "project A's memory reached project B's prompt:\n{prompt}");
    // Each project's memory is its own, and B's commission did not overwrite A's.
    let mine = std::fs::read_to_string(a.memory_dir("scripted-researcher").join("last-topic.md")).expect("A's memory");
    assert!(mine.contains("Topic of project A"), "{mine}");
    let again = a.create("scripted-researcher", "In A again", "Another topic\nGo.");
    a.settle();
    let prompt = system_prompt(&a, &again);
    assert!(prompt.contains("Topic of project A") && !prompt.contains("Topic of project B"), "{prompt}");
}

/// A confined worker connects to no Unix socket listening outside its attempt — a pathname
/// one in the test's temp dir or in `/tmp`, nor an abstract one — while a socket of its own
/// (in its temp dir, or abstract) works.
#[test]
fn a_confined_worker_connects_to_no_unix_socket_outside_its_attempt() {
    let p = Project::new(&[]);
    let mark = format!("guild-hall-test-{}", std::process::id());
    let in_tmp = std::path::PathBuf::from(format!("/tmp/{mark}.sock"));
    let beside = p.tmp.path().join("listen.sock");
    let log = p.tmp.path().join("connections.log");
    let abstract_name = format!("{mark}-abstract");
    let _listeners = Listeners::start(p.tmp.path(), vec![beside.clone(), in_tmp.clone()], &abstract_name, &log);
    let script = format!(
        r#"report=".lore/sock/$GUILD_HALL_COMMISSION.md"
mkdir -p .lore/sock
python3 - '{beside}' '{in_tmp}' '@{abstract_name}' > "$report" 2>&1 <<'PY'
import os, socket, sys, threading
def reach(addr):
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(addr)
        return True
    except OSError:
        return False
    finally:
        s.close()
for name in sys.argv[1:]:
    addr = "\0" + name[1:] if name.startswith("@") else name
    print(("CONNECTED: " if reach(addr) else "refused: ") + name)
# Its own sockets: in its temp dir, and abstract.
own = os.path.join(os.environ["TMPDIR"], "own.sock")
for label, addr in (("own-pathname", own), ("own-abstract", "\0own-" + str(os.getpid()))):
    srv = socket.socket(socket.AF_UNIX); srv.bind(addr); srv.listen(1)
    print(("ok: " if reach(addr) else "FAILED: ") + label)
PY
"$GUILD_HALL_BIN" toolbox submit-result --summary tried --artifact "$report""#,
        beside = beside.display(),
        in_tmp = in_tmp.display(),
    );
    p.script_worker("prober", "full", &script);
    let id = p.create("prober", "Probe", "Connect.");
    p.settle();
    assert_eq!(p.status(&id), "completed", "{}", p.ok(&["logs", &id]));
    let report = git(&p.root, &["show", &format!("claude/main:.lore/sock/{id}.md")]);
    for name in [beside.display().to_string(), in_tmp.display().to_string(), format!("@{abstract_name}")] {
        assert!(report.contains(&format!("refused: {name}\n")), "{name} was reached:\n{report}");
    }
    assert!(report.contains("ok: own-pathname\n") && report.contains("ok: own-abstract\n"), "{report}");
    let connections = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(connections.is_empty(), "{connections}");
    // The same as an unprivileged user (a user namespace of its own).
    let workers = p.ok(&["workers"]);
    assert!(workers.contains("Unix sockets outside the attempt"), "{workers}");
}

/// Put the process `cmd` starts under a Landlock domain of its own that only forbids making
/// block devices: harmless to guild-hall, but a process under Landlock may not change mounts
/// (the kernel's rule), as on a system restricting user namespaces (Ubuntu's AppArmor since
/// 23.10) `unshare(CLONE_NEWUSER|CLONE_NEWNS)` succeeds and `mount(MS_SLAVE)` fails EPERM.
fn under_landlock(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    #[repr(C)]
    struct RulesetAttr {
        handled_access_fs: u64,
    }
    const LANDLOCK_ACCESS_FS_MAKE_BLOCK: u64 = 1 << 11;
    let attr = RulesetAttr { handled_access_fs: LANDLOCK_ACCESS_FS_MAKE_BLOCK };
    // SAFETY: a valid, live attr of the size given.
    let fd =
        unsafe { libc::syscall(libc::SYS_landlock_create_ruleset, &attr as *const RulesetAttr, std::mem::size_of::<RulesetAttr>(), 0u32) };
    assert!(fd >= 0, "these tests need Landlock: {}", std::io::Error::last_os_error());
    let fd = fd as i32;
    // SAFETY: prctl and landlock_restrict_self are async-signal-safe system calls.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || libc::syscall(libc::SYS_landlock_restrict_self, fd, 0u32) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// Where no mount namespace can be had for a worker (guild-hall itself runs under Landlock,
/// which forbids changing mounts: the user namespace is made, its maps written, then
/// `mount(MS_SLAVE)` fails EPERM), confined workers still start, as root and as an
/// unprivileged user: pathname sockets are then not masked, the attempt's log says so and
/// why, and `guild-hall workers` says "not enforced" with the same reason.
#[test]
fn without_a_mount_namespace_confined_workers_start_and_say_sockets_are_not_masked() {
    for unprivileged in [false, true] {
        let p = Project::new(&[]);
        p.script_worker("plain", "full", "echo working\n\"$GUILD_HALL_BIN\" toolbox submit-result --summary done");
        let id = p.create("plain", "Plain", "Go.");
        let bin = assert_cmd::cargo::cargo_bin("guild-hall");
        let run = |args: &[&str]| {
            let mut cmd = std::process::Command::new(if unprivileged { "setpriv" } else { bin.to_str().expect("utf8") });
            if unprivileged {
                cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"]).arg(&bin);
            }
            cmd.args(args).current_dir(&p.root);
            for (k, v) in p.cmd().get_envs() {
                match v {
                    Some(v) => cmd.env(k, v),
                    None => cmd.env_remove(k),
                };
            }
            under_landlock(&mut cmd);
            cmd.output().expect("runs")
        };
        if unprivileged {
            let chown = std::process::Command::new("chown").args(["-R", "65534:65534"]).arg(p.tmp.path()).status().expect("chown");
            assert!(chown.success());
        }
        let settled = run(&["reconcile", "--once", "--wait", "--timeout", "60s"]);
        let workers = run(&["workers"]);
        if unprivileged {
            let chown = std::process::Command::new("chown").args(["-R", "0:0"]).arg(p.tmp.path()).status().expect("chown");
            assert!(chown.success());
        }
        assert!(settled.status.success(), "{}", String::from_utf8_lossy(&settled.stderr));
        let logs = p.ok(&["logs", &id]);
        assert_eq!(p.status(&id), "completed", "unprivileged: {unprivileged}: {}\n{logs}", p.status_json(&id));
        assert!(logs.contains("working"), "{logs}");
        let said = logs.lines().filter(|l| l.contains("NOT masked")).collect::<Vec<_>>();
        assert_eq!(said.len(), 1, "one line says the sockets are not masked, and why: {logs}");
        assert!(said[0].contains("MS_SLAVE") && said[0].contains("not permitted"), "{logs}");
        let workers = String::from_utf8_lossy(&workers.stdout).into_owned();
        assert!(workers.contains("pathname: not enforced: no mount namespace for workers: making / a slave mount"), "{workers}");
    }
}

/// Sockets are masked from a worker unless they lie in the attempt's own dirs: one in a
/// `sandbox.write` dir shared across attempts is masked all the same. A stale entry of
/// `/proc/net/unix` (a socket's path since taken by a file, or by a link) is left alone: the
/// file keeps its content, and the link's target is not covered.
#[test]
fn a_socket_in_a_shared_writable_dir_is_masked_and_stale_entries_are_left_alone() {
    let p = Project::new(&[]);
    let shared = p.tmp.path().join("shared");
    std::fs::create_dir_all(&shared).expect("mkdir");
    let agent = shared.join("agent.sock");
    let (as_file, as_link, target) = (p.tmp.path().join("file.sock"), p.tmp.path().join("link.sock"), p.tmp.path().join("target.txt"));
    std::fs::write(&target, "target-content\n").expect("write");
    let (log, ready) = (p.tmp.path().join("connections.log"), p.tmp.path().join("ready"));
    // Listening on all three; the last two paths are then replaced (the sockets still listen).
    let script = r#"
import os, socket, sys, threading
log, ready, target, live, as_file, as_link = sys.argv[1:7]
def serve(s, name):
    while True:
        c, _ = s.accept()
        with open(log, "a") as f:
            f.write("connected: " + name + "\n")
        c.close()
socks = []
for p in (live, as_file, as_link):
    s = socket.socket(socket.AF_UNIX); s.bind(p); s.listen(8); socks.append(s)
    threading.Thread(target=serve, args=(s, p), daemon=True).start()
os.unlink(as_file)
with open(as_file, "w") as f:
    f.write("file-content\n")
os.unlink(as_link)
os.symlink(target, as_link)
open(ready, "w").close()
threading.Event().wait()
"#;
    let child =
        std::process::Command::new("python3").arg("-c").arg(script).args([&log, &ready, &target, &agent, &as_file, &as_link]).spawn();
    let mut child = needs(child, "python3", "to listen on Unix sockets");
    wait_for("the listeners", || ready.exists());
    let worker = format!(
        r#"report=".lore/sock/$GUILD_HALL_COMMISSION.md"
mkdir -p .lore/sock
{{
python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])' '{agent}' 2>/dev/null && echo "CONNECTED: shared" || echo "refused: shared"
echo "file: $(cat '{as_file}')"
echo "target: $(cat '{target}')"
echo "through the link: $(cat '{as_link}')"
}} > "$report"
"$GUILD_HALL_BIN" toolbox submit-result --summary tried --artifact "$report""#,
        agent = agent.display(),
        as_file = as_file.display(),
        target = target.display(),
        as_link = as_link.display(),
    );
    p.script_worker("prober", "full", &worker);
    let yaml = p.root.join(".lore/workers/prober/worker.yaml");
    let text = std::fs::read_to_string(&yaml).expect("yaml");
    std::fs::write(&yaml, format!("{text}sandbox: {{write: [\"{}\"]}}\n", shared.display())).expect("write");
    let id = p.create("prober", "Probe", "Connect.");
    p.settle();
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(p.status(&id), "completed", "{}", p.ok(&["logs", &id]));
    let report = git(&p.root, &["show", &format!("claude/main:.lore/sock/{id}.md")]);
    assert!(report.contains("refused: shared\n"), "a socket in a shared sandbox.write dir was reached:\n{report}");
    for line in ["file: file-content\n", "target: target-content\n", "through the link: target-content\n"] {
        assert!(report.contains(line), "a stale entry's path was covered: want {line:?}:\n{report}");
    }
    let connections = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(connections.is_empty(), "{connections}");
}

/// An expanded `${NAME:-DEFAULT}` `sandbox.write` entry is on no process's command line while
/// the worker runs (the shim reads its policy from a private file), and one that expands to a
/// dangling link fails the attempt naming the entry as written, never the value.
#[test]
fn an_expanded_sandbox_write_entry_is_on_no_command_line_nor_in_a_reason() {
    let p = Project::new(&[]);
    let mark = format!("SECRETVALUE{}", std::process::id());
    let held = p.tmp.path().join(format!("{mark}-held"));
    std::fs::create_dir_all(&held).expect("mkdir");
    let dangling = p.tmp.path().join(format!("{mark}-dangling"));
    std::os::unix::fs::symlink(p.tmp.path().join("nowhere"), &dangling).expect("symlink");
    let cue = p.tmp.path().join("cue");
    let script = format!(
        "for i in $(seq 600); do [ -e '{cue}' ] && break; sleep 0.1; done\n\"$GUILD_HALL_BIN\" toolbox submit-result --summary done",
        cue = cue.display()
    );
    for (name, var) in [("holder", "MY_HELD_DIR"), ("dangler", "MY_DANGLING_DIR")] {
        p.script_worker(name, "full", &script);
        let yaml = p.root.join(".lore/workers").join(name).join("worker.yaml");
        let text = std::fs::read_to_string(&yaml).expect("yaml");
        std::fs::write(&yaml, format!("{text}sandbox: {{write: [\"${{{var}:-/tmp/x}}\"]}}\n")).expect("write");
    }
    git(&p.root, &["add", "-A"]);
    git(&p.root, &["commit", "-q", "-m", "packages"]);
    let with_env = |args: &[&str]| {
        let out = p.cmd().args(args).env("MY_HELD_DIR", &held).env("MY_DANGLING_DIR", &dangling).output().expect("runs");
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
    };
    let holder = p.create("holder", "Hold", "Go.");
    let dangler = p.create("dangler", "Dangle", "Go.");
    let mut said = with_env(&["reconcile", "--once"]);
    wait_for("the holder's worker to run", || p.run_info(&holder).is_some());
    // Every process's command line, the shim's and its worker's included.
    let mut on_command_lines = Vec::new();
    for e in std::fs::read_dir("/proc").expect("proc").flatten() {
        if let Ok(cmdline) = std::fs::read(e.path().join("cmdline")) {
            if String::from_utf8_lossy(&cmdline).contains(&mark) {
                on_command_lines.push(String::from_utf8_lossy(&cmdline).replace('\0', " "));
            }
        }
    }
    std::fs::write(&cue, "").expect("cue");
    said.push_str(&with_env(&["reconcile", "--once", "--wait", "--timeout", "60s"]));
    assert!(on_command_lines.is_empty(), "the expanded value is on a command line: {on_command_lines:?}");
    assert_eq!(p.status(&holder), "completed", "{}", p.ok(&["logs", &holder]));
    assert_eq!(p.status(&dangler), "failed", "{}", p.ok(&["logs", &dangler]));
    for args in [&["status", &dangler, "--json"][..], &["timeline", &dangler], &["timeline", &dangler, "--json"], &["status"]] {
        said.push_str(&with_env(args));
    }
    assert!(!said.contains(&mark), "the expanded value was shown:\n{said}");
    for file in [p.artifact_path(&dangler), p.root.join(format!(".lore/commissions/{dangler}.timeline.jsonl"))] {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        assert!(!text.contains(&mark), "{}: {text}", file.display());
    }
    // What is wrong is still said, naming the entry as written.
    assert!(said.contains("${MY_DANGLING_DIR:-/tmp/x}"), "{said}");
}
