//! Test harness: a real git repository and a real `$GUILD_HALL_HOME` in temp dirs, the real
//! binary, and the scripted workers from `examples/workers/`. Waits are condition-based with
//! generous deadlines; no test asserts a duration.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use assert_cmd::cargo::CommandCargoExt;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::Value;
use std::process::{Child, Stdio};

pub struct Project {
    pub tmp: tempfile::TempDir,
    pub root: PathBuf,
    pub home: PathBuf,
}

/// Run git with a clean, deterministic environment.
/// The dispatcher's tools (`mcp --manager`, the `worker/*` methods, `job`), in name order.
pub const DISPATCHER_TOOLS: [&str; 15] = [
    "abandon",
    "answer",
    "approve",
    "cancel",
    "delete",
    "diff",
    "dispatch",
    "list",
    "meeting_request",
    "redispatch",
    "reject",
    "result",
    "revise",
    "status",
    "usage",
];

pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The commit `r` names in the project's repository.
pub fn rev(p: &Project, r: &str) -> String {
    git(&p.root, &["rev-parse", r]).trim().to_string()
}

/// The trailers on the integration branch.
pub fn trailers(p: &Project) -> String {
    git(&p.root, &["log", "--format=%B", "claude/main"])
}

/// Run passes with the fault switch at `finish:1` until one stops there: the worker's work is
/// committed on its branch and the merge has not happened yet.
pub fn stop_before_merge(p: &Project, id: &str) {
    p.pass_until_fault("finish:1");
    assert_ne!(p.status(id), "completed");
}

/// PATH with the agent's bin dir in front.
pub fn path_with(bin: &Path) -> String {
    format!("{}:{}", bin.parent().expect("bin dir").display(), std::env::var("PATH").unwrap_or_default())
}

/// A name unique within this test process.
fn uuid_like() -> usize {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    N.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
}

pub fn examples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples").join("workers")
}

/// Copy the directory `from` to `to`, recursively.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read example dir") {
        let e = e.expect("entry");
        let dest = to.join(e.file_name());
        if e.path().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), &dest).expect("copy");
        }
    }
}

impl Project {
    /// A git repo with one commit, `guild-hall init` done, and the named example workers installed.
    pub fn new(workers: &[&str]) -> Project {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path().join("repo");
        let home = tmp.path().join("home");
        std::fs::create_dir_all(&root).expect("mkdir");
        git(&root, &["init", "-q", "-b", "main"]);
        git(&root, &["config", "user.name", "Test Person"]);
        git(&root, &["config", "user.email", "person@example.com"]);
        std::fs::write(root.join("README.md"), "# demo\n").expect("write");
        std::fs::create_dir_all(root.join("src")).expect("mkdir");
        std::fs::write(root.join("src/lib.txt"), "code\n").expect("write");
        git(&root, &["add", "-A"]);
        git(&root, &["commit", "-q", "-m", "initial"]);
        let p = Project { tmp, root, home };
        p.ok(&["init"]);
        for w in workers {
            p.install_worker(w, w);
        }
        p
    }

    /// Commit `content` to `path` on claude/main through a temporary worktree (removed after).
    pub fn commit_on_integration(&self, path: &str, content: &str, message: &str) {
        let wt = self.tmp.path().join(format!("person-wt-{}", uuid_like()));
        git(&self.root, &["worktree", "add", "-q", wt.to_str().expect("utf8"), "claude/main"]);
        let file = wt.join(path);
        std::fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
        std::fs::write(&file, content).expect("write");
        git(&wt, &["add", "-A"]);
        git(&wt, &["commit", "-q", "-m", message]);
        git(&self.root, &["worktree", "remove", wt.to_str().expect("utf8")]);
    }

    /// Remove `path` from claude/main with a commit, as a person would.
    pub fn remove_on_integration(&self, path: &str) {
        let wt = self.tmp.path().join(format!("person-wt-{}", uuid_like()));
        git(&self.root, &["worktree", "add", "-q", wt.to_str().expect("utf8"), "claude/main"]);
        git(&wt, &["rm", "-q", path]);
        git(&wt, &["commit", "-q", "-m", "remove it"]);
        git(&self.root, &["worktree", "remove", wt.to_str().expect("utf8")]);
    }

    /// `$HOME` of every command and worker the test runs.
    pub fn user_home(&self) -> PathBuf {
        let h = self.tmp.path().join("user-home");
        std::fs::create_dir_all(&h).expect("mkdir home");
        h
    }

    /// Package `worker`'s memory dir in this project (`memory/<project>/<worker>` of the home).
    pub fn memory_dir(&self, worker: &str) -> PathBuf {
        let root = self.root.canonicalize().expect("project root");
        self.home.join("memory").join(guild_hall::config::default_project_name(&root)).join(worker)
    }

    pub fn install_worker(&self, example: &str, name: &str) {
        let dest = self.root.join(".lore/workers").join(name);
        copy_dir(&examples().join(example), &dest);
        if example != name {
            let y = dest.join("worker.yaml");
            let text = std::fs::read_to_string(&y).expect("worker.yaml");
            std::fs::write(&y, text.replace(&format!("name: {example}"), &format!("name: {name}"))).expect("write");
        }
    }

    pub fn cmd(&self) -> Command {
        let mut c = Command::cargo_bin("guild-hall").expect("binary built");
        c.current_dir(&self.root)
            .env("GUILD_HALL_HOME", &self.home)
            // A home directory of the test's own: what workers may not write into.
            .env("HOME", self.user_home())
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env_remove("GUILD_HALL_FAULT")
            .env_remove("RUST_LOG");
        c
    }

    /// `sh -c SCRIPT` in the project with the same environment as [`Project::cmd`] (for pipes).
    pub fn cmd_in_shell(&self, script: &str) -> Command {
        let mut c = Command::new("bash");
        c.arg("-c").arg(script).current_dir(&self.root);
        for (k, v) in self.cmd().get_envs() {
            match v {
                Some(v) => c.env(k, v),
                None => c.env_remove(k),
            };
        }
        c
    }

    /// Single passes with the fault switch at `fault` (`GUILD_HALL_FAULT`) until one stops dead
    /// there (exit 86); every pass before it must succeed. 60 s at most.
    pub fn pass_until_fault(&self, fault: &str) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let out = self.cmd().args(["reconcile", "--once"]).env("GUILD_HALL_FAULT", fault).output().expect("runs");
            match out.status.code() {
                Some(86) => return,
                Some(0) => assert!(Instant::now() < deadline, "{fault}: never reached"),
                other => panic!("{fault}: {other:?} {}", String::from_utf8_lossy(&out.stderr)),
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// A project-local worker package `name` (for commissions and wave tasks) whose command is
    /// the shell script `script`, with a `checkout` of `sparse` or `full`.
    pub fn script_worker(&self, name: &str, checkout: &str, script: &str) {
        use std::os::unix::fs::PermissionsExt;
        let dir = self.root.join(".lore/workers").join(name);
        std::fs::create_dir_all(&dir).expect("mkdir");
        let yaml = format!(
            "name: {name}\ndescription: a test worker\ncommand: [\"./run.sh\"]\ncheckout: {checkout}\ncapabilities: [commission]\n"
        );
        std::fs::write(dir.join("worker.yaml"), yaml).expect("worker.yaml");
        let run = dir.join("run.sh");
        std::fs::write(&run, format!("#!/bin/sh\nset -eu\n{script}\n")).expect("run.sh");
        std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }

    /// Run and return (exit code, stdout, stderr).
    pub fn run(&self, args: &[&str]) -> (i32, String, String) {
        let out = self.cmd().args(args).output().expect("runs");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// Run and require success; returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let (code, out, err) = self.run(args);
        assert_eq!(code, 0, "guild-hall {args:?} failed\nstdout:\n{out}\nstderr:\n{err}");
        out
    }

    /// Call one tool of `guild-hall mcp --manager` (the dispatcher) and return its `result`
    /// (`structuredContent`, and `isError` for a refusal).
    pub fn manager_call(&self, tool: &str, args: serde_json::Value) -> serde_json::Value {
        use std::io::{BufRead, Write};
        let mut child = self
            .cmd()
            .args(["mcp", "--manager"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("mcp --manager");
        let mut stdin = child.stdin.take().expect("stdin");
        let mut lines = std::io::BufReader::new(child.stdout.take().expect("stdout")).lines();
        let mut send = |v: serde_json::Value| writeln!(stdin, "{v}").expect("send");
        send(
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}}),
        );
        let _init = lines.next().expect("initialize reply").expect("line");
        send(serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        send(serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": tool, "arguments": args}}));
        let reply: serde_json::Value = serde_json::from_str(&lines.next().expect("reply").expect("line")).expect("json");
        drop(stdin);
        let _ = child.kill();
        let _ = child.wait();
        reply["result"].clone()
    }

    pub fn settle(&self) -> String {
        self.ok(&["reconcile", "--once", "--wait", "--timeout", "120s"])
    }

    pub fn config(&self, yaml: &str) {
        std::fs::write(self.root.join(".lore/guild-hall.yaml"), yaml).expect("write config");
    }

    pub fn artifact_path(&self, id: &str) -> PathBuf {
        self.root.join(".lore/commissions").join(format!("{id}.md"))
    }

    pub fn write_commission(&self, id: &str, text: &str) {
        std::fs::write(self.artifact_path(id), text).expect("write commission");
    }

    pub fn create(&self, worker: &str, title: &str, prompt: &str) -> String {
        self.ok(&["commission", "create", "--worker", worker, "--title", title, "--prompt", prompt]).trim().to_string()
    }

    pub fn artifact(&self, id: &str) -> String {
        std::fs::read_to_string(self.artifact_path(id)).expect("artifact")
    }

    pub fn status_json(&self, id: &str) -> Value {
        serde_json::from_str(&self.ok(&["status", id, "--json"])).expect("status json")
    }

    pub fn status(&self, id: &str) -> String {
        self.status_json(id)["status"].as_str().unwrap_or("").to_string()
    }

    pub fn timeline(&self, id: &str) -> Vec<Value> {
        self.ok(&["timeline", id, "--json"]).lines().map(|l| serde_json::from_str(l).expect("timeline line")).collect()
    }

    pub fn worktree(&self, id: &str) -> PathBuf {
        let state = self.home.join("worktrees");
        let project = std::fs::read_dir(&state).ok().and_then(|mut d| d.next()).map(|e| e.expect("entry").path());
        project.unwrap_or(state).join(format!("commission-{id}"))
    }

    /// The commission's runtime dir (under the only project in this home), if made yet.
    pub fn try_state_dir(&self, id: &str) -> Option<PathBuf> {
        let project = std::fs::read_dir(self.home.join("state")).ok()?.filter_map(|e| e.ok()).find(|e| e.path().is_dir())?.path();
        Some(project.join("commissions").join(id))
    }

    pub fn state_dir(&self, id: &str) -> PathBuf {
        self.try_state_dir(id).expect("state dir exists")
    }

    pub fn run_info(&self, id: &str) -> Option<Value> {
        std::fs::read(self.try_state_dir(id)?.join("run.json")).ok().and_then(|b| serde_json::from_slice(&b).ok())
    }

    pub fn branches(&self) -> Vec<String> {
        git(&self.root, &["branch", "--format=%(refname:short)"]).lines().map(str::to_string).collect()
    }

    pub fn worktree_list(&self) -> String {
        git(&self.root, &["worktree", "list", "--porcelain"])
    }

    /// Keep running single passes until `cond` holds (deadline 60 s).
    pub fn pass_until(&self, what: &str, mut cond: impl FnMut(&Project) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            self.ok(&["reconcile", "--once"]);
            if cond(self) {
                return;
            }
            assert!(Instant::now() < deadline, "timed out waiting for: {what}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// Every test's processes end with it: a process of this user still alive once the
/// `Project` goes (its environment, command line or working directory names the test's temp
/// dir, so it is provably the test's own) fails the test, named, after a grace of a few
/// seconds for what is already ending; it is then killed so it cannot outlive the run.
impl Drop for Project {
    fn drop(&mut self) {
        // With its slash: every path in the temp dir, never another dir it is a prefix of.
        let mark = format!("{}/", self.tmp.path().to_string_lossy());
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut left = processes_naming(&mark);
        while !left.is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
            left = processes_naming(&mark);
        }
        if left.is_empty() {
            return;
        }
        for (pid, _) in &left {
            kill_if_naming(*pid, &mark);
        }
        let list: Vec<String> = left.iter().map(|(pid, cmd)| format!("  {pid}: {cmd}")).collect();
        let msg = format!("the test left {} process(es) of its own running (now killed):\n{}", left.len(), list.join("\n"));
        if std::thread::panicking() {
            // Already failing: a second panic would abort the whole run and hide the first.
            eprintln!("{msg}");
        } else {
            panic!("{msg}");
        }
    }
}

/// Live processes of this user (not this test process) whose environment, command line or
/// working directory contains `mark`, with their command lines.
pub fn processes_naming(mark: &str) -> Vec<(i32, String)> {
    use std::os::unix::fs::MetadataExt;
    let me = std::process::id() as i32;
    let uid = nix::unistd::geteuid().as_raw();
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    let mut found = Vec::new();
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else { continue };
        if pid == me || e.metadata().map_or(true, |m| m.uid() != uid) || !pid_alive(pid.into()) {
            continue;
        }
        if let Some(cmdline) = naming(pid, mark) {
            found.push((pid, cmdline));
        }
    }
    found
}

/// The command line of `pid` if its environment, command line or working directory contains
/// `mark`.
fn naming(pid: i32, mark: &str) -> Option<String> {
    let proc = std::path::PathBuf::from(format!("/proc/{pid}"));
    let read = |f: &str| std::fs::read(proc.join(f)).map(|b| String::from_utf8_lossy(&b).replace('\0', " ")).unwrap_or_default();
    let cmdline = read("cmdline");
    let cwd = std::fs::read_link(proc.join("cwd")).map(|p| p.to_string_lossy().into_owned()).unwrap_or_default();
    (cmdline.contains(mark) || read("environ").contains(mark) || format!("{cwd}/").starts_with(mark))
        .then(|| cmdline.trim_end().to_string())
}

/// SIGKILL `pid` only if, once pinned by a pidfd, it still names `mark`: a pid reused by
/// another process since it was found is never signalled.
fn kill_if_naming(pid: i32, mark: &str) {
    // SAFETY: pidfd_open takes a pid and flags and returns a new fd (or -1); nothing is borrowed.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0u32) };
    let Ok(fd) = i32::try_from(fd) else { return };
    if fd < 0 {
        return;
    }
    if naming(pid, mark).is_some() {
        // SAFETY: `fd` is the pidfd opened above, still open; no siginfo is passed.
        unsafe { libc::syscall(libc::SYS_pidfd_send_signal, fd, libc::SIGKILL, std::ptr::null::<u8>(), 0u32) };
    }
    // SAFETY: `fd` is ours and closed once.
    unsafe { libc::close(fd) };
}

/// What running a tool from the system gave, or the test's failure in one line when the tool
/// is not installed: a test that cannot run fails and says why (README, "Prerequisites"),
/// it is never skipped.
pub fn needs<T>(ran: std::io::Result<T>, program: &str, why: &str) -> T {
    match ran {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            panic!("this test needs `{program}` ({why}), which is not installed: see Prerequisites in README.md")
        }
        Err(e) => panic!("running `{program}` ({why}) failed: {e}"),
    }
}

/// An agent CLI from the npm registry, pinned: `npm install PACKAGE@VERSION` into
/// `target/DIR` on first use (as `.ci/run` does up front; one install at a time across test
/// processes), and the path of its `node_modules/.bin/BIN`. A test without npm or the registry
/// fails saying so.
pub fn npm_cli(dir: &str, package: &str, version: &str, bin: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target").join(dir);
    let exe = dir.join("node_modules/.bin").join(bin);
    let spec = format!("{package}@{version}");
    let installed = || {
        let manifest = dir.join("node_modules").join(package).join("package.json");
        let found = std::fs::read_to_string(manifest).ok().and_then(|t| serde_json::from_str::<Value>(&t).ok());
        exe.exists() && found.is_some_and(|m| m["version"] == version)
    };
    if !installed() {
        let lock_name = format!("guild-hall-npm-{}.lock", dir.file_name().and_then(|n| n.to_str()).unwrap_or("cli"));
        let lock = std::fs::File::create(std::env::temp_dir().join(lock_name)).expect("lock");
        let _held = nix::fcntl::Flock::lock(lock, nix::fcntl::FlockArg::LockExclusive).expect("flock");
        if !installed() {
            std::fs::create_dir_all(&dir).expect("mkdir");
            let npm = needs(
                Command::new("npm").args(["install", "--no-audit", "--no-fund", "--prefix"]).arg(&dir).arg(&spec).status(),
                "npm",
                &format!("to install {spec} into {}", dir.display()),
            );
            assert!(npm.success() && installed(), "installing {spec} from npm failed (needs the npm registry)");
        }
    }
    exe
}

/// Wait for a condition without running passes (deadline 60 s).
pub fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

pub fn pid_alive(pid: i64) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return false };
    let state = stat.rsplit(')').next().and_then(|r| r.split_whitespace().next()).unwrap_or("X");
    state != "Z" && state != "X"
}

pub fn kinds(timeline: &[Value]) -> Vec<String> {
    timeline.iter().map(|e| e["kind"].as_str().unwrap_or("").to_string()).collect()
}

pub fn transitions(timeline: &[Value]) -> Vec<String> {
    timeline
        .iter()
        .filter(|e| e["kind"] == "status")
        .map(|e| format!("{}>{}", e["from"].as_str().unwrap_or(""), e["to"].as_str().unwrap_or("")))
        .collect()
}

/// A running `guild-hall watch`, stopped with SIGTERM when dropped.
pub struct Service {
    child: Option<Child>,
    log: std::path::PathBuf,
}

impl Service {
    pub fn start(p: &Project, dirs: &[&std::path::Path], extra: &[&str]) -> Service {
        let mut cmd: Command = p.cmd();
        cmd.args(["watch", "--log-format", "json", "-v"]).args(extra);
        for d in dirs {
            cmd.arg(d);
        }
        let s = Service::spawn(p, cmd);
        // The endpoint binds after the projects are taken: a test that talks to it must not
        // connect before it listens (seen as "Connection refused" under load).
        if extra.iter().any(|a| *a == "--socket" || *a == "--listen") {
            wait_for("the watcher's endpoint to listen", || s.log().contains("serving worker/*"));
        }
        s
    }

    /// `guild-hall watch ARGS` under a lower open-file limit (`ulimit -n LIMIT` in a shell that
    /// then execs it, so the pid is the watcher's).
    pub fn start_with_fd_limit(p: &Project, limit: u32, extra: &[&str]) -> Service {
        let bin = assert_cmd::cargo::cargo_bin("guild-hall");
        let args: Vec<String> = extra.iter().map(|a| format!("'{a}'")).collect();
        let script = format!("ulimit -n {limit} && exec '{}' watch --log-format json -v {}", bin.display(), args.join(" "));
        Service::spawn(p, p.cmd_in_shell(&script))
    }

    fn spawn(p: &Project, mut cmd: Command) -> Service {
        static STARTED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = STARTED.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let log = p.tmp.path().join(format!("watch-{n}.log"));
        let file = std::fs::File::create(&log).expect("log");
        let child = cmd.stdout(Stdio::null()).stderr(file).spawn().expect("spawn watch");
        let s = Service { child: Some(child), log };
        wait_for("the watcher to take its projects", || s.log().contains("\"watching\""));
        s
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    pub fn signal(&self, sig: Signal) {
        let pid = self.child.as_ref().expect("running").id() as i32;
        kill(Pid::from_raw(pid), sig).expect("signal");
    }

    /// SIGTERM and the exit code.
    pub fn stop(mut self) -> Option<i32> {
        self.signal(Signal::SIGTERM);
        self.child.take().expect("running").wait().expect("wait").code()
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = kill(Pid::from_raw(c.id() as i32), Signal::SIGTERM);
            let _ = c.wait();
        }
    }
}

pub fn wait_status(p: &Project, id: &str, want: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (code, out, _) = p.run(&["status", id, "--json"]);
        if code == 0 && serde_json::from_str::<serde_json::Value>(&out).is_ok_and(|v| v["status"] == want) {
            return;
        }
        assert!(Instant::now() < deadline, "{id} never became {want}: {out}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Wait until the attempt's processes are all gone: its `stopped` event. A cancelled status
/// may be one the test wrote itself, and the worker still runs until a pass stops it.
pub fn wait_stopped(p: &Project, id: &str) {
    wait_for(&format!("{id}'s worker to be stopped"), || kinds(&p.timeline(id)).iter().any(|k| k == "stopped"));
}

/// Run `script` with bash as the init of a private pid namespace (`unshare --pid --fork
/// --mount-proc`: everything in it dies with it, and a test that kills by pid can reach
/// nothing outside it), with the project's environment, `$GH` the guild-hall binary and
/// `$STATE` the home's state dir. Returns stdout; the script's own failure is the test's.
pub fn in_pid_namespace(p: &Project, script: &str) -> String {
    in_namespaces(p, &[], script)
}

/// [`in_pid_namespace`], with more namespaces of its own (`--net`: a network of its own).
pub fn in_namespaces(p: &Project, more: &[&str], script: &str) -> String {
    let gh = Command::cargo_bin("guild-hall").expect("binary").get_program().to_owned();
    let mut c = Command::new("unshare");
    if !nix::unistd::geteuid().is_root() {
        // Without root, a user namespace of our own grants what the pid namespace needs.
        c.args(["--user", "--map-root-user"]);
    }
    // With namespaces of its own (a cluster's daemons in them, say), unshare ends with this
    // test however it ends (and `--kill-child` takes the namespace with it).
    if !more.is_empty() {
        use std::os::unix::process::CommandExt;
        // SAFETY: prctl(PR_SET_PDEATHSIG) only sets a flag on the child.
        unsafe {
            c.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
                Ok(())
            });
        }
    }
    c.args(more)
        .args(["--pid", "--fork", "--mount-proc", "bash", "-c"])
        .arg(format!("set -eu\n{NS_HELPERS}\n{script}"))
        .current_dir(&p.root);
    for (k, v) in p.cmd().get_envs() {
        match v {
            Some(v) => c.env(k, v),
            None => c.env_remove(k),
        };
    }
    c.env("GH", gh).env("STATE", p.home.join("state"));
    let out = needs(c.output(), "unshare", "util-linux: runs the scenario in a private pid namespace");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned());
    assert!(out.status.success(), "the namespaced scenario failed ({:?})\nstdout:\n{stdout}\nstderr:\n{stderr}", out.status);
    stdout
}

/// What a namespaced scenario printed after its `--- NAME` line, up to the next such line.
pub fn section<'a>(out: &'a str, name: &str) -> &'a str {
    let Some((_, rest)) = out.split_once(&format!("--- {name}\n")) else { return "" };
    rest.split("\n--- ").next().unwrap_or_default()
}

/// Shell helpers for the namespaced scenarios: waiting with a deadline, passes, JSON files,
/// processes and the attempt's run-id mark.
const NS_HELPERS: &str = r#"
wait_for() { # wait_for DESCRIPTION COMMAND...: up to 60 s
  local what=$1; shift
  for _ in $(seq 600); do if "$@"; then return 0; fi; sleep 0.1; done
  echo "timed out waiting for: $what" >&2; exit 1
}
pass_until() { # pass_until DESCRIPTION COMMAND...: single passes until it holds, up to 60 s
  local what=$1; shift
  for _ in $(seq 600); do "$GH" reconcile --once >/dev/null 2>&1 || true; if "$@"; then return 0; fi; sleep 0.1; done
  echo "timed out waiting for: $what" >&2; exit 1
}
run_json() { ls "$STATE"/*/commissions/"$1"/run.json; }
task_dir() { ls -d "$STATE"/*/plans/"$1"/tasks/"$2"; } # task_dir PLAN SLUG
verify_dir() { ls -d "$STATE"/*/plans/"$1"/verify; }
jget() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; } # jget FILE KEY
field() { jget "$(run_json "$1")" "$2"; }
alive() { grep -qs '^.*) [^ZX] ' /proc/$1/stat; } # not gone, not a zombie
gone() { ! alive "$1"; }
start_time() { python3 -c 'import sys; t=open("/proc/%s/stat" % sys.argv[1]).read(); print(t[t.rindex(")")+2:].split()[19])' "$1"; }
marked() { # marked RUN_ID NAME: live processes called NAME carrying the attempt's run-id mark
  local p
  for p in /proc/[0-9]*; do
    [ "$(cat $p/comm 2>/dev/null)" = "$2" ] || continue
    tr '\0' '\n' < $p/environ 2>/dev/null | grep -qx "GUILD_HALL_RUN_ID=$1" && alive ${p#/proc/} && echo ${p#/proc/}
  done
  return 0
}
forge_file() { # forge_file FILE KEY=VALUE...: rewrite fields of a run.json (numbers stay numbers)
  python3 - "$@" <<'PY'
import json, sys
path, pairs = sys.argv[1], sys.argv[2:]
run = json.load(open(path))
for kv in pairs:
    k, v = kv.split("=", 1)
    run[k] = int(v) if v.lstrip("-").isdigit() else v
json.dump(run, open(path, "w"))
PY
}
forge() { local id=$1; shift; forge_file "$(run_json "$id")" "$@"; } # forge ID KEY=VALUE...
dispatch() { # dispatch ID: one pass starts it; wait until its shim recorded the worker
  "$GH" reconcile --once >/dev/null
  wait_for "run.json of $1" run_json "$1"
}
"#;

/// What a server has already said on `stream`, read without blocking: `None` while it has said
/// nothing yet; else all it says until it closes (`Some("")` for a close without a word), or
/// what it said by the time it has been quiet for a second.
pub fn answered(stream: &mut std::os::unix::net::UnixStream) -> Option<String> {
    use std::io::Read;
    stream.set_nonblocking(true).expect("nonblocking");
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    let mut quiet_since = Instant::now();
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return Some(String::from_utf8_lossy(&out).into_owned()),
            Ok(n) => {
                out.extend_from_slice(&buf[..n]);
                quiet_since = Instant::now();
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock && out.is_empty() => return None,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock && quiet_since.elapsed() < Duration::from_secs(1) => {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(_) => return Some(String::from_utf8_lossy(&out).into_owned()),
        }
    }
}

/// The person's own agent homes and a file in each, as a person who uses the agents has them.
const PERSON_AGENT_HOMES: [(&str, &str); 3] = [(".codex", "config.toml"), (".gemini", "settings.json"), (".claude", "settings.json")];
const PERSON_FILE: &str = "# the person's own: no worker reads or writes this\n";

/// Plants the person's own `~/.codex/config.toml`, `~/.gemini/settings.json` and
/// `~/.claude/settings.json` in the project's user home (see [`agent_homes_apart`]).
pub(crate) fn plant_person_agent_homes(p: &Project) {
    for (dir, file) in PERSON_AGENT_HOMES {
        let d = p.user_home().join(dir);
        std::fs::create_dir_all(&d).expect("mkdir");
        std::fs::write(d.join(file), PERSON_FILE).expect("plant");
    }
}

/// After workers ran: the person's planted files are unchanged, and beside them the person's
/// `~/.codex`, `~/.gemini`, `~/.claude` hold only the packages' own homes `used` (paths under
/// the user home, e.g. `.codex/guild-hall-codex`), each of which the agent wrote into.
pub(crate) fn agent_homes_apart(p: &Project, used: &[&str]) {
    let home = p.user_home();
    for (dir, file) in PERSON_AGENT_HOMES {
        let d = home.join(dir);
        assert_eq!(std::fs::read_to_string(d.join(file)).ok().as_deref(), Some(PERSON_FILE), "~/{dir}/{file} untouched");
        let mut found: Vec<String> =
            std::fs::read_dir(&d).into_iter().flatten().flatten().map(|e| format!("{dir}/{}", e.file_name().to_string_lossy())).collect();
        found.sort();
        let mut want: Vec<String> = used.iter().filter(|u| u.starts_with(&format!("{dir}/"))).map(|u| u.to_string()).collect();
        want.push(format!("{dir}/{file}"));
        want.sort();
        assert_eq!(found, want, "~/{dir} holds the person's file and the packages' own homes only");
    }
    for u in used {
        assert!(std::fs::read_dir(home.join(u)).is_ok_and(|mut e| e.next().is_some()), "the agent kept its state in ~/{u}");
    }
}
