//! `workspace:` end to end with scripted workers: the person's ignored files copied in and kept
//! out of the merge, setup before the worker (and its failure, said as setup's), teardown once
//! per worktree, ports disjoint between live attempts and free again after a crash; wave tasks
//! and meetings set up too, their ports shown by every face, gc tearing down a plan's task
//! worktree; a real `npm ci` from an offline cache, confined.

use crate::common::{git, in_pid_namespace, section, wait_for, Project};

/// A project whose checkout and integration branch ignore `.env` and `setup-out.txt`, with a
/// `.env` of the person's.
fn project_with_env(workers: &[&str]) -> Project {
    let p = Project::new(workers);
    let ignore = ".env\nsetup-out.txt\n";
    std::fs::write(p.root.join(".gitignore"), ignore).expect("write");
    git(&p.root, &["add", ".gitignore"]);
    git(&p.root, &["commit", "-q", "-m", "ignore local files"]);
    p.commit_on_integration(".gitignore", ignore, "ignore local files");
    std::fs::write(p.root.join(".env"), "SECRET=the-persons\n").expect("write .env");
    p
}

/// Every attempt log of the commission `id`, joined.
fn logs(p: &Project, id: &str) -> String {
    let mut out = String::new();
    for e in std::fs::read_dir(p.state_dir(id)).expect("state dir").filter_map(|e| e.ok()) {
        if e.file_name().to_string_lossy().ends_with(".log") {
            out.push_str(&std::fs::read_to_string(e.path()).unwrap_or_default());
        }
    }
    out
}

#[test]
fn setup_runs_before_the_worker_and_the_copied_env_stays_out_of_the_merge() {
    let p = project_with_env(&[]);
    // The second setup command makes a file git does not ignore: the attempt's work, said so.
    p.config(
        "workspace:\n  copy: [.env]\n  setup: [[sh, -c, \"echo built > setup-out.txt\"], [sh, -c, \"echo v1 > VERSION\"]]\n  teardown: [[sh, -c, \"echo tearing down\"]]\n",
    );
    p.script_worker("builder", "full", "cat setup-out.txt .env > seen.txt\n\"$GUILD_HALL_BIN\" toolbox submit-result --summary done");
    let id = p.create("builder", "Build", "Build it.");
    p.settle();
    assert_eq!(p.status(&id), "completed", "{}", p.artifact(&id));
    // The worker saw what setup made and the person's .env.
    assert_eq!(git(&p.root, &["show", "claude/main:seen.txt"]), "built\nSECRET=the-persons\n");
    let tree = git(&p.root, &["ls-tree", "-r", "--name-only", "claude/main"]);
    assert!(!tree.lines().any(|l| l == ".env" || l == "setup-out.txt"), "ignored files are never merged:\n{tree}");
    assert_eq!(std::fs::read_to_string(p.root.join(".env")).expect("kept"), "SECRET=the-persons\n", "the person's file is theirs");
    // Teardown ran once, before the worktree went; more passes run it no more.
    assert!(!p.worktree(&id).exists());
    p.settle();
    let log = logs(&p, &id);
    assert!(log.contains("[guild-hall] setup: sh -c echo built > setup-out.txt"), "{log}");
    assert_eq!(log.matches("[guild-hall] teardown: sh -c echo tearing down").count(), 1, "{log}");
    assert!(log.contains("tearing down\n"), "its output in the attempt's log: {log}");
    assert_eq!(git(&p.root, &["show", "claude/main:VERSION"]), "v1\n");
    let said: Vec<String> = p.timeline(&id).iter().filter(|e| e["kind"] == "setup").map(|e| e["text"].to_string()).collect();
    assert_eq!(said, ["\"workspace setup made or changed, as this attempt's work: VERSION\""], "the timeline says setup made it");
}

#[test]
fn a_failing_setup_fails_the_attempt_saying_the_command_and_its_tail() {
    let p = Project::new(&[]);
    p.config("workspace:\n  setup: [[sh, -c, \"echo fetching; echo 'npm ERR! no such package' >&2; exit 7\"]]\n");
    p.script_worker("builder", "full", "echo the worker ran\n\"$GUILD_HALL_BIN\" toolbox submit-result --summary done");
    let id = p.create("builder", "Build", "Build it.");
    p.settle();
    let s = p.status_json(&id);
    assert_eq!(s["status"], "failed", "{s}");
    let reason = s["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("workspace setup `sh -c echo fetching; echo 'npm ERR! no such package' >&2; exit 7` exited with code 7, before the worker started")
            && reason.ends_with("its log ends: fetching | npm ERR! no such package"),
        "{reason}"
    );
    assert!(!logs(&p, &id).contains("the worker ran"), "the worker never started");
}

#[test]
fn check_refuses_a_copy_entry_that_is_tracked_unignored_or_outside() {
    let p = project_with_env(&[]);
    std::fs::write(p.root.join("loose.txt"), "neither tracked nor ignored\n").expect("write");
    p.config("workspace:\n  copy: [.env, README.md, loose.txt]\n");
    let (code, out, err) = p.run(&["check"]);
    let said = format!("{out}{err}");
    assert_ne!(code, 0, "{said}");
    assert!(said.contains(".lore/guild-hall.yaml:2:") && said.contains("workspace.copy: \"README.md\" is tracked by git"), "{said}");
    assert!(said.contains("workspace.copy: \"loose.txt\" is not ignored by git"), "{said}");
    assert!(!said.contains("\".env\""), "an ignored file is fine: {said}");
    // A package's workspace: the same, at its worker.yaml.
    p.config("");
    p.script_worker("builder", "full", "true");
    let yaml = p.root.join(".lore/workers/builder/worker.yaml");
    let text = std::fs::read_to_string(&yaml).expect("worker.yaml");
    std::fs::write(&yaml, format!("{text}workspace:\n  copy: [src/lib.txt]\n")).expect("write");
    let (code, out, err) = p.run(&["check"]);
    let said = format!("{out}{err}");
    assert_ne!(code, 0, "{said}");
    assert!(said.contains("workers/builder/worker.yaml:") && said.contains("\"src/lib.txt\" is tracked by git"), "{said}");
    std::fs::write(&yaml, text).expect("write");
    // Outside the repository: the configuration itself is refused, naming the entry.
    p.config("workspace:\n  copy: [../elsewhere/.env]\n");
    let (code, out, err) = p.run(&["check"]);
    assert_ne!(code, 0);
    assert!(format!("{out}{err}").contains("workspace.copy: \"../elsewhere/.env\" lies outside the repository"), "{out}{err}");
}

/// A worker that writes its ports into `port.txt` and waits for `.go` in its worktree (both
/// gone before it submits: two of them merge without a conflict). `port.txt` is renamed into
/// place, so a test that sees it never reads it half-written.
const PORT_WAITER: &str = "echo \"$GUILD_HALL_PORT $GUILD_HALL_PORTS\" > port.tmp\nmv port.tmp port.txt\nwhile [ ! -e .go ]; do sleep 0.05; done\nrm -f port.txt .go\n\"$GUILD_HALL_BIN\" toolbox submit-result --summary done";

fn ports_of(p: &Project, id: &str) -> (u32, u32) {
    let text = std::fs::read_to_string(p.worktree(id).join("port.txt")).expect("port.txt");
    let mut it = text.split_whitespace().map(|n| n.parse::<u32>().expect("a number"));
    (it.next().expect("port"), it.next().expect("count"))
}

#[test]
fn concurrent_attempts_get_disjoint_ports_shown_in_status() {
    let p = Project::new(&[]);
    p.config("workspace:\n  ports: 3\n");
    p.script_worker("server", "full", PORT_WAITER);
    let (a, b) = (p.create("server", "A", "Serve."), p.create("server", "B", "Serve."));
    p.ok(&["reconcile", "--once"]);
    wait_for("both workers to write their ports", || p.worktree(&a).join("port.txt").exists() && p.worktree(&b).join("port.txt").exists());
    let (pa, na) = ports_of(&p, &a);
    let (pb, nb) = ports_of(&p, &b);
    assert_eq!((na, nb), (3, 3));
    assert!(pa + 3 <= pb || pb + 3 <= pa, "disjoint: {pa} and {pb}");
    assert_eq!(p.status_json(&a)["ports"], serde_json::json!({"first": pa, "count": 3}));
    let table = p.ok(&["status"]);
    assert!(table.contains(&format!("ports {pb}-{}", pb + 2)), "{table}");
    for id in [&a, &b] {
        std::fs::write(p.worktree(id).join(".go"), "").expect("go");
    }
    p.settle();
    assert_eq!(p.status(&a), "completed", "{}", p.artifact(&a));
    assert_eq!(p.status(&b), "completed", "{}", p.artifact(&b));
    assert!(p.status_json(&a).get("ports").is_none(), "released when the attempt ended");
}

/// The shim and worker of an attempt killed with SIGKILL: no exit is recorded, and its ports
/// are free again once its attempt is proven dead.
#[test]
fn ports_of_an_attempt_killed_with_sigkill_are_free_again() {
    let p = Project::new(&[]);
    p.config("workspace:\n  ports: 2\n");
    p.script_worker("server", "full", PORT_WAITER);
    let a = p.create("server", "A", "Serve.");
    let out = in_pid_namespace(
        &p,
        &format!(
            r#"
port_file() {{ echo "$(ls -d "$GUILD_HALL_HOME"/worktrees/*/commission-{a} 2>/dev/null)/port.txt"; }}
has_ports() {{ test -s "$(port_file)"; }}
"$GH" reconcile --once >/dev/null
wait_for "the worker to write its ports" has_ports
shim=$(field {a} pid)
kill -9 -- -$shim
wait_for "the shim to be gone" gone $shim
echo "--- ports"; cat "$(port_file)"
"#
        ),
    );
    let first: u32 = section(&out, "ports").split_whitespace().next().and_then(|n| n.parse().ok()).expect("a port");
    // A new attempt of another commission takes the dead one's range.
    let b = p.create("server", "B", "Serve.");
    p.pass_until("B to write its ports", |p| p.worktree(&b).join("port.txt").exists());
    assert_eq!(ports_of(&p, &b).0, first, "the killed attempt's range is free again");
    std::fs::write(p.worktree(&b).join(".go"), "").expect("go");
    p.settle();
    assert_eq!(p.status(&b), "completed");
}

#[test]
fn a_wave_task_and_verify_run_their_setup_before_the_worker() {
    let p = Project::new(&["mason"]);
    // Ignored in every worktree: what setup makes there stays out of the copy-back.
    std::fs::write(p.root.join(".git/info/exclude"), "setup-out.txt\n").expect("exclude");
    // Setup makes one file git ignores and one it does not: the latter is the task's like
    // anything it changes.
    p.config("workspace:\n  setup: [[sh, -c, \"echo ran > setup-out.txt && mkdir -p src && echo from setup > src/from-setup.txt\"]]\n");
    let dir = p.root.join(".lore/plans");
    std::fs::create_dir_all(&dir).expect("mkdir");
    // Verify passes only where setup ran in its own worktree (the ignored file is on no branch).
    std::fs::write(
        dir.join("p.md"),
        "---\ntitle: p\nverify: [sh, -c, \"test -f setup-out.txt\"]\nwaves:\n  - - {id: one, worker: mason, prompt: \"write: src/one.txt hello\"}\n---\n",
    )
    .expect("write plan");
    p.settle();
    let v = super::super::plan::fixtures::show(&p, "p");
    assert_eq!(v["status"], "completed", "{v}");
    assert_eq!(git(&p.root, &["show", "claude/main:src/from-setup.txt"]), "from setup\n");
    assert_eq!(git(&p.root, &["show", "claude/main:src/one.txt"]), "hello\n");
    let tree = git(&p.root, &["ls-tree", "-r", "--name-only", "claude/main"]);
    assert!(!tree.lines().any(|l| l == "setup-out.txt"), "an ignored file is never copied back:\n{tree}");
    // The task's log says what of its work setup made.
    let tasks = std::fs::read_dir(p.home.join("state")).expect("state").filter_map(|e| e.ok()).map(|e| e.path().join("plans/p/tasks"));
    let logs: String = tasks
        .filter_map(|t| std::fs::read_dir(t).ok())
        .flatten()
        .filter_map(|e| e.ok())
        .filter_map(|e| std::fs::read_to_string(e.path().join("attempt-1.log")).ok())
        .collect();
    assert!(
        logs.contains("[guild-hall] setup made or changed files git does not ignore, which are this attempt's work: src/from-setup.txt\n"),
        "{logs}"
    );
    // And the plan's timeline, with the task, as a commission's says it.
    let said: Vec<serde_json::Value> = p.timeline("p").into_iter().filter(|e| e["kind"] == "setup").collect();
    assert_eq!(said.len(), 1, "once: {said:?}");
    let task = said[0]["task"].as_str().expect("the task");
    assert_eq!(said[0]["text"], format!("{task}: workspace setup made or changed, as this attempt's work: src/from-setup.txt"));
}

#[test]
fn a_meeting_is_set_up_once_at_open() {
    let p = Project::new(&["counsel"]);
    p.config("workspace:\n  setup: [[sh, -c, \"echo set up >> setup-count.txt\"]]\n");
    p.ok(&["meeting", "start", "--worker", "counsel", "--id", "m", "hello"]);
    p.ok(&["meeting", "send", "m", "again"]);
    let wt = p.home.join("worktrees");
    let project = std::fs::read_dir(&wt).expect("worktrees").next().expect("a project").expect("entry").path();
    let count = std::fs::read_to_string(project.join("meeting-m").join("setup-count.txt")).expect("setup ran in the meeting's worktree");
    assert_eq!(count, "set up\n", "once, at open, not at every turn");
    // What setup made that git does not ignore is the meeting's work: its timeline says so, once.
    let said: Vec<String> = p.timeline("m").iter().filter(|e| e["kind"] == "setup").map(|e| e["text"].to_string()).collect();
    assert_eq!(said, ["\"workspace setup made or changed, as this attempt's work: setup-count.txt\""], "the timeline says setup made it");
}

/// `npm ci` of a small package, from an offline cache made here with `npm pack` and
/// `npm cache add`, as a confined setup: the cache reachable through the package's
/// `sandbox.write`, never the network.
#[test]
fn npm_ci_from_an_offline_cache_runs_confined_as_setup() {
    let p = Project::new(&[]);
    let tmp = p.tmp.path();
    let npm = |dir: &std::path::Path, args: &[&str]| {
        let out = std::process::Command::new("npm")
            .args(args)
            .current_dir(dir)
            .env("npm_config_cache", tmp.join("npm-cache"))
            .env("HOME", p.user_home())
            .env("npm_config_offline", "true")
            .env("npm_config_update_notifier", "false")
            .output();
        let out = crate::common::needs(out, "npm", "the real package manager of this test");
        assert!(out.status.success(), "npm {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    // The dependency, packed and put in the cache.
    let dep = tmp.join("tiny-dep");
    std::fs::create_dir_all(&dep).expect("mkdir");
    std::fs::write(dep.join("package.json"), r#"{"name": "tiny-dep", "version": "1.0.0", "main": "index.js"}"#).expect("write");
    std::fs::write(dep.join("index.js"), "module.exports = 'tiny';\n").expect("write");
    let packed: serde_json::Value = serde_json::from_str(&npm(&dep, &["pack", "--json"])).expect("npm pack --json");
    let tarball = packed[0]["filename"].as_str().expect("its file").to_string();
    let integrity = packed[0]["integrity"].as_str().expect("its hash").to_string();
    npm(&dep, &["cache", "add", &dep.join(&tarball).to_string_lossy()]);
    // The project depends on it by the registry's name; its lock says where from and its hash.
    let lock = format!(
        r#"{{"name": "app", "version": "1.0.0", "lockfileVersion": 3, "requires": true, "packages": {{
  "": {{"name": "app", "version": "1.0.0", "dependencies": {{"tiny-dep": "1.0.0"}}}},
  "node_modules/tiny-dep": {{"version": "1.0.0", "resolved": "https://registry.npmjs.org/tiny-dep/-/tiny-dep-1.0.0.tgz", "integrity": "{integrity}"}}
}}}}"#
    );
    p.commit_on_integration("package.json", r#"{"name": "app", "version": "1.0.0", "dependencies": {"tiny-dep": "1.0.0"}}"#, "app");
    p.commit_on_integration("package-lock.json", &lock, "its lock");
    p.commit_on_integration(".gitignore", "node_modules/\n", "ignore dependencies");
    let cache = tmp.join("npm-cache");
    let dir = p.root.join(".lore/workers/node");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(
        dir.join("worker.yaml"),
        format!(
            "name: node\ncommand: [sh, -c, \"node -e \\\"require('fs').writeFileSync('out.txt', require('tiny-dep'))\\\" && \\\"$GUILD_HALL_BIN\\\" toolbox submit-result --summary done\"]\ncheckout: full\ncapabilities: [commission]\nenv: {{npm_config_cache: {c}, npm_config_offline: \"true\", npm_config_update_notifier: \"false\"}}\nsandbox: {{write: [{c}]}}\nworkspace:\n  setup: [[npm, ci, --no-audit, --no-fund]]\n",
            c = cache.display()
        ),
    )
    .expect("worker.yaml");
    let id = p.create("node", "Use the dependency", "Use it.");
    p.settle();
    let s = p.status_json(&id);
    assert_eq!(s["status"], "completed", "{s}\n{}", logs(&p, &id));
    assert_eq!(git(&p.root, &["show", "claude/main:out.txt"]), "tiny");
    let tree = git(&p.root, &["ls-tree", "-r", "--name-only", "claude/main"]);
    assert!(!tree.contains("node_modules"), "dependencies stay ignored:\n{tree}");
    assert!(logs(&p, &id).contains("[guild-hall] setup: npm ci --no-audit --no-fund"));
}

/// A `copy:` entry that is not an ignored file: the attempt does not start, saying why.
#[test]
fn an_attempt_whose_copy_entry_is_tracked_does_not_start() {
    let p = Project::new(&[]);
    p.config("workspace:\n  copy: [README.md]\n");
    p.script_worker("builder", "full", "echo the worker ran\n\"$GUILD_HALL_BIN\" toolbox submit-result --summary done");
    let id = p.create("builder", "Build", "Build it.");
    p.settle();
    let s = p.status_json(&id);
    assert_eq!(s["status"], "failed", "{s}");
    assert!(s["reason"].as_str().unwrap_or_default().contains("workspace.copy: \"README.md\" is tracked by git"), "{s}");
}

/// A deleted plan's task worktree removed by `gc` is torn down first, once: gc goes through
/// the same removal as every other.
#[test]
fn gc_tears_down_a_deleted_plans_task_worktree_once() {
    let p = Project::new(&["mason"]);
    // The teardown writes where the task's sandbox lets it: a directory its package may write.
    let torn = p.tmp.path().join("torn");
    std::fs::create_dir_all(&torn).expect("mkdir");
    let yaml = p.root.join(".lore/workers/mason/worker.yaml");
    let text = std::fs::read_to_string(&yaml).expect("worker.yaml");
    std::fs::write(&yaml, format!("{text}sandbox: {{write: [{}]}}\n", torn.display())).expect("write");
    p.config(&format!("workspace:\n  teardown: [[sh, -c, \"echo torn >> {}/teardown.txt\"]]\n", torn.display()));
    let dir = p.root.join(".lore/plans");
    std::fs::create_dir_all(&dir).expect("mkdir");
    // The task fails: the plan halts and keeps its worktree.
    std::fs::write(
        dir.join("gone.md"),
        "---\ntitle: gone\nwaves:\n  - - {id: bad, worker: mason, prompt: \"write: x.txt x\\nfail\"}\n---\n",
    )
    .expect("write plan");
    p.settle();
    assert_eq!(super::super::plan::fixtures::show(&p, "gone")["status"], "halted");
    let wt = p
        .home
        .join("worktrees")
        .read_dir()
        .expect("worktrees")
        .flatten()
        .next()
        .expect("a project")
        .path()
        .join("task-gone-exec-wave-1-task-1");
    assert!(wt.exists(), "the halted plan keeps its task's worktree");
    assert!(!torn.join("teardown.txt").exists(), "not torn down while it is kept");
    std::fs::remove_file(dir.join("gone.md")).expect("delete the plan");
    let out = p.ok(&["gc", "--include-unmerged"]);
    assert!(out.contains(&wt.display().to_string()), "{out}");
    assert!(!wt.exists());
    assert_eq!(std::fs::read_to_string(torn.join("teardown.txt")).expect("torn down"), "torn\n");
    p.ok(&["gc", "--include-unmerged"]);
    assert_eq!(std::fs::read_to_string(torn.join("teardown.txt")).expect("torn down"), "torn\n", "once");
}

/// The worktree `name` (`meeting-<id>`, `task-<slug>`) of the project under the home.
fn worktree_of(p: &Project, name: &str) -> std::path::PathBuf {
    p.home.join("worktrees").read_dir().expect("worktrees").flatten().next().expect("a project").path().join(name)
}

/// `first count` as the worker at `wt` wrote them.
fn ports_at(wt: &std::path::Path) -> (u32, u32) {
    let text = std::fs::read_to_string(wt.join("port.txt")).expect("port.txt");
    let mut it = text.split_whitespace().map(|n| n.parse::<u32>().expect("a number"));
    (it.next().expect("port"), it.next().expect("count"))
}

/// A meeting worker `host` whose turn writes its ports into `port.txt` (renamed into place)
/// and waits for `.go` in its worktree.
fn host_worker(p: &Project) {
    use std::os::unix::fs::PermissionsExt;
    let dir = p.root.join(".lore/workers/host");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(dir.join("worker.yaml"), "name: host\ndescription: a test meeting worker\ncommand: [\"./meet.sh\"]\nmeeting: [\"./meet.sh\"]\ncheckout: full\ncapabilities: [meeting]\n").expect("worker.yaml");
    let meet = dir.join("meet.sh");
    std::fs::write(&meet, "#!/bin/sh\nset -eu\necho \"$GUILD_HALL_PORT $GUILD_HALL_PORTS\" > port.tmp\nmv port.tmp port.txt\nwhile [ ! -e .go ]; do sleep 0.05; done\nrm -f .go port.txt\nprintf '{\"type\":\"text_delta\",\"text\":\"served\"}\\n{\"type\":\"turn_end\"}\\n'\n").expect("meet.sh");
    std::fs::set_permissions(&meet, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// A meeting's turn and a wave task at work hold ports, and `meeting list` / `show` and
/// `plan show` say which (text and JSON), as `status` does a commission's.
#[test]
fn a_meetings_turn_and_a_wave_tasks_ports_are_shown() {
    let p = Project::new(&[]);
    p.config("workspace:\n  ports: 2\n");
    host_worker(&p);
    p.ok(&["meeting", "start", "--worker", "host", "--id", "m"]);
    let mut turn = p.cmd().args(["meeting", "send", "m", "serve"]).stdout(std::process::Stdio::null()).spawn().expect("a turn");
    let wt = worktree_of(&p, "meeting-m");
    wait_for("the meeting's worker to write its ports", || wt.join("port.txt").exists());
    let (first, count) = ports_at(&wt);
    assert_eq!(count, 2);
    let want = serde_json::json!({"first": first, "count": 2});
    let listed: serde_json::Value = serde_json::from_str(&p.ok(&["meeting", "list", "--json"])).expect("json");
    assert_eq!(listed["meetings"][0]["ports"], want, "{listed}");
    let shown: serde_json::Value = serde_json::from_str(&p.ok(&["meeting", "show", "m", "--json"])).expect("json");
    assert_eq!(shown["ports"], want, "{shown}");
    let range = format!("{first}-{}", first + 1);
    assert!(p.ok(&["meeting", "list"]).contains(&format!("ports {range}")));
    assert!(p.ok(&["meeting", "show", "m"]).contains(&format!("ports     {range}")));
    std::fs::write(wt.join(".go"), "").expect("go");
    assert!(turn.wait().expect("the turn ends").success());
    let shown: serde_json::Value = serde_json::from_str(&p.ok(&["meeting", "show", "m", "--json"])).expect("json");
    assert!(shown.get("ports").is_none(), "released when the turn ended: {shown}");

    // A wave task at work: `plan show`, per task.
    p.script_worker("server", "full", PORT_WAITER);
    let plans = p.root.join(".lore/plans");
    std::fs::create_dir_all(&plans).expect("mkdir");
    std::fs::write(plans.join("p.md"), "---\ntitle: p\nwaves:\n  - - {id: one, worker: server, prompt: serve}\n---\n").expect("write plan");
    let wt = worktree_of(&p, "task-p-exec-wave-1-task-1");
    p.pass_until("the task to write its ports", |_| wt.join("port.txt").exists());
    let (first, count) = ports_at(&wt);
    assert_eq!(count, 2);
    let v = super::super::plan::fixtures::show(&p, "p");
    assert_eq!(v["tasks"][0]["ports"], serde_json::json!({"first": first, "count": 2}), "{v}");
    assert!(p.ok(&["plan", "show", "p"]).contains(&format!("ports {first}-{}", first + 1)));
    std::fs::write(wt.join(".go"), "").expect("go");
    p.settle();
    let v = super::super::plan::fixtures::show(&p, "p");
    assert_eq!(v["status"], "completed", "{v}");
    assert!(v["tasks"][0].get("ports").is_none(), "released when the task ended: {v}");
}

/// The board's rows of a meeting whose turn is at work and of a plan whose task is say their
/// ports, as a commission's do.
#[test]
fn the_board_shows_a_meetings_and_a_plans_ports() {
    let p = Project::new(&[]);
    p.config("workspace:\n  ports: 2\n");
    host_worker(&p);
    p.script_worker("server", "full", PORT_WAITER);
    p.ok(&["meeting", "start", "--worker", "host", "--id", "m"]);
    let plans = p.root.join(".lore/plans");
    std::fs::create_dir_all(&plans).expect("mkdir");
    std::fs::write(plans.join("p.md"), "---\ntitle: p\nwaves:\n  - - {id: one, worker: server, prompt: serve}\n---\n").expect("write plan");
    let out = crate::board::terminal::scenario(
        &p,
        r#"
"$GH" meeting send m serve >/dev/null 2>&1 &
meeting=$(ls -d "$GUILD_HALL_HOME"/worktrees/*/meeting-m)
wait_for "the meeting's ports" test -s "$meeting/port.txt"
task_ports() { test -s "$(ls -d "$GUILD_HALL_HOME"/worktrees/*)/task-p-exec-wave-1-task-1/port.txt"; }
pass_until "the task's ports" task_ports
echo "--- meeting"; cat "$meeting/port.txt"
echo "--- task"; cat "$(ls -d "$GUILD_HALL_HOME"/worktrees/*)/task-p-exec-wave-1-task-1/port.txt"
board NO_COLOR=1
row_has m "ports "
row_has p "ports "
echo "--- board"; screen
"#,
    );
    let first = |name: &str| section(&out, name).split_whitespace().next().and_then(|n| n.parse::<u32>().ok()).expect("a port");
    let (m, t) = (first("meeting"), first("task"));
    let board = section(&out, "board");
    let row = |id: &str| board.lines().find(|l| l.contains(&format!(" {id} "))).unwrap_or_default().to_string();
    assert!(row("m").contains(&format!("ports {m}-{}", m + 1)), "{out}");
    assert!(row("p").contains(&format!("ports one {t}-{}", t + 1)), "{out}");
}
