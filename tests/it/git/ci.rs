//! CI that can run any number of times: the shipped GitHub workflow's own `run:` steps (all but
//! the install step: the built binary is put on PATH) run with bash in fresh clones of one bare
//! origin with fresh homes; `guild-hall ci` losing a push race; `init` in a clone adopting the
//! remote's integration branch. Real git throughout.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::common::{copy_dir, examples, git};

/// A bare origin whose `main` holds the scribe, sleeper and mason workers and the pending
/// commissions given, and the temp dir that holds it and everything the test makes (clones,
/// homes).
pub(crate) struct Origin {
    pub(crate) tmp: tempfile::TempDir,
    pub(crate) bare: PathBuf,
}

fn commission(id: &str) -> String {
    format!("---\ntitle: Commission {id}\nworker: scribe\nstatus: pending\n---\nWrite the report of {id}.\n")
}

impl Origin {
    pub(crate) fn new(ids: &[&str]) -> Origin {
        let tmp = tempfile::tempdir().expect("tempdir");
        let bare = tmp.path().join("origin.git");
        git(tmp.path(), &["init", "-q", "--bare", "-b", "main", bare.to_str().expect("utf8")]);
        let seed = tmp.path().join("seed");
        std::fs::create_dir_all(seed.join(".lore/commissions")).expect("mkdir");
        git(&seed, &["init", "-q", "-b", "main"]);
        git(&seed, &["config", "user.name", "Test Person"]);
        git(&seed, &["config", "user.email", "person@example.com"]);
        std::fs::write(seed.join("README.md"), "# demo\n").expect("write");
        for worker in ["scribe", "sleeper", "mason"] {
            copy_dir(&examples().join(worker), &seed.join(format!(".lore/workers/{worker}")));
        }
        for id in ids {
            std::fs::write(seed.join(format!(".lore/commissions/{id}.md")), commission(id)).expect("write");
        }
        git(&seed, &["add", "-A"]);
        git(&seed, &["commit", "-q", "-m", "seed"]);
        git(&seed, &["remote", "add", "origin", bare.to_str().expect("utf8")]);
        git(&seed, &["push", "-q", "origin", "main"]);
        Origin { tmp, bare }
    }

    /// A fresh clone named `name`, as `actions/checkout` with `fetch-depth: 0` makes it.
    pub(crate) fn clone(&self, name: &str) -> PathBuf {
        let dir = self.tmp.path().join(name);
        git(self.tmp.path(), &["clone", "-q", self.bare.to_str().expect("utf8"), dir.to_str().expect("utf8")]);
        dir
    }

    /// A person's commit of `path` (written with `content`) on top of origin's `from`, pushed
    /// to origin's `branch`.
    pub(crate) fn commit_on(&self, branch: &str, from: &str, path: &str, content: &str) {
        let dir = self.tmp.path().join(format!("person-{}", path.replace('/', "_")));
        git(self.tmp.path(), &["clone", "-q", self.bare.to_str().expect("utf8"), dir.to_str().expect("utf8")]);
        git(&dir, &["config", "user.name", "Test Person"]);
        git(&dir, &["config", "user.email", "person@example.com"]);
        git(&dir, &["checkout", "-q", "-B", branch, &format!("origin/{from}")]);
        std::fs::create_dir_all(dir.join(path).parent().expect("parent")).expect("mkdir");
        std::fs::write(dir.join(path), content).expect("write");
        git(&dir, &["add", "-A"]);
        git(&dir, &["commit", "-q", "-m", &format!("add {path}")]);
        git(&dir, &["push", "-q", "origin", branch]);
    }

    pub(crate) fn git(&self, args: &[&str]) -> String {
        let mut all = vec!["--git-dir", self.bare.to_str().expect("utf8")];
        all.extend(args);
        git(self.tmp.path(), &all)
    }

    /// origin's `claude/main`, if it has one.
    fn integration_tip(&self) -> Option<String> {
        let out = Command::new("git")
            .args(["--git-dir", self.bare.to_str().expect("utf8"), "rev-parse", "--verify", "-q", "refs/heads/claude/main"])
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .expect("git");
        out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    }

    /// How many commits on origin's `claude/main` carry `trailer`.
    pub(crate) fn trailer_count(&self, trailer: &str) -> usize {
        self.git(&["log", "claude/main", "--format=%B"]).lines().filter(|l| l.trim() == trailer).count()
    }
}

/// A `run:` step of the workflow: its name, its `env:` and its script.
type Step = (String, Vec<(String, String)>, String);

/// The `run:` steps of `contrib/ci/github-actions.yml` but the install step, each with its
/// `env:` (`${{ runner.temp }}` stands for `runner_temp`).
fn workflow_steps(runner_temp: &Path) -> Vec<Step> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("contrib/ci/github-actions.yml");
    let yaml: serde_yaml_ng::Value = serde_yaml_ng::from_str(&std::fs::read_to_string(&path).expect("workflow")).expect("yaml");
    let mut steps = Vec::new();
    for job in yaml["jobs"].as_mapping().expect("jobs").values() {
        for step in job["steps"].as_sequence().expect("steps") {
            let Some(run) = step["run"].as_str() else { continue };
            let name = step["name"].as_str().unwrap_or("").to_string();
            if run.contains("cargo install") {
                continue;
            }
            let expand = |s: &str| {
                // The origin is a path: no token to send (an empty one is none).
                let s = s.replace("${{ runner.temp }}", runner_temp.to_str().expect("utf8")).replace("${{ secrets.GITHUB_TOKEN }}", "");
                assert!(!s.contains("${{"), "step {name:?}: an expression the test cannot stand in for: {s}");
                s
            };
            let env = step["env"]
                .as_mapping()
                .map(|m| {
                    m.iter().map(|(k, v)| (k.as_str().expect("env name").to_string(), expand(v.as_str().expect("env value")))).collect()
                })
                .unwrap_or_default();
            steps.push((name.clone(), env, expand(run)));
        }
    }
    assert!(!steps.is_empty(), "the workflow has run: steps");
    steps
}

/// What one run of the workflow did.
struct Run {
    code: i32,
    output: String,
    home: PathBuf,
}

/// Run the workflow's steps in `clone` as GitHub's runner would (`bash -e`, one after the
/// other, the job stopping at the first failed step), with the built binary on PATH and a
/// fresh runner temp dir (the home is under it).
fn run_workflow(origin: &Origin, clone: &Path, name: &str) -> Run {
    let runner_temp = origin.tmp.path().join(format!("runner-temp-{name}"));
    let user_home = origin.tmp.path().join(format!("user-home-{name}"));
    std::fs::create_dir_all(&runner_temp).expect("mkdir");
    std::fs::create_dir_all(&user_home).expect("mkdir");
    let bin_dir = assert_cmd::cargo::cargo_bin("guild-hall").parent().expect("dir").to_path_buf();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    let mut output = String::new();
    let mut code = 0;
    let mut home = runner_temp.join("guild-hall");
    for (step, env, script) in workflow_steps(&runner_temp) {
        let mut cmd = Command::new("bash");
        cmd.args(["--noprofile", "--norc", "-e", "-o", "pipefail", "-c", &script])
            .current_dir(clone)
            .env("PATH", &path)
            .env("HOME", &user_home)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env_remove("GUILD_HALL_HOME")
            .env_remove("GUILD_HALL_FAULT")
            .env_remove("RUST_LOG");
        for (k, v) in &env {
            if k == "GUILD_HALL_HOME" {
                home = PathBuf::from(v);
            }
            cmd.env(k, v);
        }
        let out = cmd.output().expect("bash runs");
        output.push_str(&format!("--- step {step:?}\n{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)));
        code = out.status.code().unwrap_or(-1);
        if code != 0 {
            break;
        }
    }
    Run { code, output, home }
}

/// How many attempts of commission `id` a home ran (each leaves its log in the runtime dir).
pub(crate) fn attempts_in(home: &Path, id: &str) -> usize {
    attempts_under(home, &format!("commissions/{id}"))
}

/// How many attempts a home ran of what has its runtime dir at `dir` under its project's
/// (`commissions/<id>`, `plans/<plan>/tasks/<slug>`).
pub(crate) fn attempts_under(home: &Path, dir: &str) -> usize {
    let Ok(projects) = std::fs::read_dir(home.join("state")) else { return 0 };
    projects
        .flatten()
        .filter_map(|p| std::fs::read_dir(p.path().join(dir)).ok())
        .flatten()
        .flatten()
        .filter(|f| f.file_name().to_string_lossy().starts_with("attempt-") && f.file_name().to_string_lossy().ends_with(".log"))
        .count()
}

fn assert_landed_once(origin: &Origin, ids: &[&str]) {
    for id in ids {
        let trailer = format!("Guild-Hall-Commission: {id} attempt 1");
        assert_eq!(origin.trailer_count(&trailer), 1, "{trailer} on origin's claude/main:\n{}", origin.git(&["log", "claude/main"]));
        let artifact = origin.git(&["show", &format!("claude/main:.lore/commissions/{id}.md")]);
        assert!(artifact.contains("status: completed"), "origin's claude/main says {id} completed:\n{artifact}");
        let report = origin.git(&["show", &format!("claude/main:.lore/reports/{id}.md")]);
        assert!(report.contains(&format!("commission {id}")), "{id}'s work is on origin's claude/main: {report}");
    }
}

#[test]
fn the_shipped_workflow_runs_twice_from_two_clones_and_each_commission_runs_once() {
    let origin = Origin::new(&["a", "b"]);
    let first = run_workflow(&origin, &origin.clone("run-1"), "1");
    assert_eq!(first.code, 0, "the first run succeeds:\n{}", first.output);
    let second = run_workflow(&origin, &origin.clone("run-2"), "2");
    for id in ["a", "b"] {
        let (one, two) = (attempts_in(&first.home, id), attempts_in(&second.home, id));
        assert_eq!(
            (one, two),
            (1, 0),
            "commission {id} ran {one} time(s) in the first run and {two} in the second: it must run exactly once\n\
             first run:\n{}\nsecond run (exit {}):\n{}",
            first.output,
            second.code,
            second.output
        );
    }
    assert_eq!(second.code, 0, "the second run succeeds too:\n{}", second.output);
    assert_landed_once(&origin, &["a", "b"]);
}

#[test]
fn a_run_that_fetched_before_another_pushed_loses_the_push_cleanly_and_the_next_converges() {
    let origin = Origin::new(&["a", "b"]);
    // Run 2 fetches origin as it was before run 1 pushed: its fetch URL is a copy taken now,
    // its push URL origin itself (as if its `git fetch` had happened first).
    let before = origin.tmp.path().join("origin-before.git");
    git(origin.tmp.path(), &["clone", "-q", "--mirror", origin.bare.to_str().expect("utf8"), before.to_str().expect("utf8")]);
    let late = origin.clone("run-2");
    git(&late, &["remote", "set-url", "origin", before.to_str().expect("utf8")]);
    git(&late, &["remote", "set-url", "--push", "origin", origin.bare.to_str().expect("utf8")]);

    let first = run_workflow(&origin, &origin.clone("run-1"), "1");
    assert_eq!(first.code, 0, "the first run succeeds:\n{}", first.output);
    let pushed = origin.integration_tip().expect("run 1 pushed claude/main");

    let second = run_workflow(&origin, &late, "2");
    assert_eq!(second.code, 0, "losing the push race is not a failure:\n{}", second.output);
    let said: Vec<&str> = second.output.lines().filter(|l| l.starts_with("push rejected:")).collect();
    assert_eq!(said.len(), 1, "one clear line says the push lost:\n{}", second.output);
    assert!(said[0].contains("origin/claude/main") && said[0].contains("next run"), "{}", said[0]);
    assert_eq!(origin.integration_tip().as_deref(), Some(pushed.as_str()), "origin is untouched by the run that lost");

    let third = run_workflow(&origin, &origin.clone("run-3"), "3");
    assert_eq!(third.code, 0, "the third run succeeds:\n{}", third.output);
    for id in ["a", "b"] {
        assert_eq!(attempts_in(&third.home, id), 0, "the third run runs nothing that landed:\n{}", third.output);
    }
    assert_landed_once(&origin, &["a", "b"]);
}

#[test]
fn a_commission_pushed_to_main_after_a_run_runs_in_the_next_and_nothing_else_does() {
    let origin = Origin::new(&["a"]);
    let first = run_workflow(&origin, &origin.clone("run-1"), "1");
    assert_eq!(first.code, 0, "{}", first.output);
    origin.commit_on("main", "main", ".lore/commissions/c.md", &commission("c"));
    let second = run_workflow(&origin, &origin.clone("run-2"), "2");
    assert_eq!(second.code, 0, "{}", second.output);
    assert_eq!((attempts_in(&second.home, "a"), attempts_in(&second.home, "c")), (0, 1), "{}", second.output);
    assert_landed_once(&origin, &["a", "c"]);
    // main's history is in claude/main: the person's commit was merged, not copied.
    let main = origin.git(&["rev-parse", "main"]);
    origin.git(&["merge-base", "--is-ancestor", main.trim(), "claude/main"]);
}

/// `guild-hall` in `dir` with a fresh home under `tmp`.
pub(crate) fn guild_hall(tmp: &Path, dir: &Path, args: &[&str]) -> (i32, String, String) {
    run_guild_hall(tmp, dir, args, false)
}

/// [`guild_hall`] as pid 1 of a pid namespace of its own: whatever it leaves running (a
/// worker still at work when its run ends, as on a CI runner that is thrown away) is killed
/// when it exits.
pub(crate) fn run_guild_hall(tmp: &Path, dir: &Path, args: &[&str], namespaced: bool) -> (i32, String, String) {
    let home = tmp.join(format!("home-{}", dir.file_name().expect("name").to_string_lossy()));
    let user_home = tmp.join("user-home");
    std::fs::create_dir_all(&user_home).expect("mkdir");
    let bin = assert_cmd::cargo::cargo_bin("guild-hall");
    let mut cmd = Command::new(if namespaced { Path::new("unshare") } else { bin.as_path() });
    if namespaced {
        if !nix::unistd::geteuid().is_root() {
            cmd.args(["--user", "--map-root-user"]);
        }
        cmd.args(["--pid", "--fork", "--mount-proc"]).arg(&bin);
    }
    let out = cmd
        .args(args)
        .current_dir(dir)
        .env("GUILD_HALL_HOME", home)
        .env("HOME", user_home)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env_remove("GUILD_HALL_FAULT")
        .env_remove("RUST_LOG")
        .output()
        .expect("runs");
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn init_in_a_clone_adopts_the_remotes_integration_branch() {
    let origin = Origin::new(&["a"]);
    // The team's claude/main holds work main does not (as a CI run leaves it).
    origin.commit_on("claude/main", "main", "landed.txt", "work\n");
    let theirs = origin.integration_tip().expect("claude/main pushed");

    let clone = origin.clone("second");
    let (code, out, err) = guild_hall(origin.tmp.path(), &clone, &["init"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("claude/main (created from origin/claude/main)"), "init says what it used:\n{out}");
    assert_eq!(git(&clone, &["rev-parse", "claude/main"]).trim(), theirs, "the local claude/main is origin's, not HEAD");

    // No remote has one: from HEAD, as ever.
    let fresh = Origin::new(&["a"]);
    let clone = fresh.clone("third");
    let (code, out, err) = guild_hall(fresh.tmp.path(), &clone, &["init"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("claude/main (created from HEAD)"), "{out}");
    // HEAD's files under a commit of guild-hall's own that the branch begins with.
    assert_eq!(git(&clone, &["rev-parse", "claude/main^"]), git(&clone, &["rev-parse", "main"]));
    assert_eq!(git(&clone, &["rev-parse", "claude/main^{tree}"]), git(&clone, &["rev-parse", "main^{tree}"]));
    assert!(git(&clone, &["log", "-1", "--format=%B", "claude/main"]).contains("Guild-Hall-Begins: claude/main"));
}

#[test]
fn ci_refuses_a_dirty_checkout_and_a_diverged_branch_and_reports_json() {
    let origin = Origin::new(&["a"]);
    let clone = origin.clone("dirty");
    std::fs::write(clone.join("notes.txt"), "mine\n").expect("write");
    let (code, out, err) = guild_hall(origin.tmp.path(), &clone, &["ci"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("uncommitted changes") && err.contains("notes.txt"), "names the file: {err}");
    assert_eq!(git(&clone, &["branch", "--show-current"]).trim(), "main", "nothing switched");
    assert_eq!(origin.integration_tip(), None, "nothing pushed");
    std::fs::remove_file(clone.join("notes.txt")).expect("rm");

    let (code, out, err) = guild_hall(origin.tmp.path(), &clone, &["ci", "--no-push", "--json", "--timeout", "120s"]);
    assert_eq!(code, 0, "{out}{err}");
    let report: Value = serde_json::from_str(&out).expect("one JSON object");
    assert_eq!(report["push"], "skipped");
    assert_eq!(report["base"], "main");
    assert_eq!(report["integration"], "claude/main");
    assert_eq!(report["landed"], serde_json::json!(["Guild-Hall-Commission: a attempt 1"]));
    assert!(report["committed"].is_string(), "{report}");
    assert!(report["committed_paths"].as_array().is_some_and(|p| p.iter().any(|p| p == ".lore/commissions/a.md")), "{report}");
    assert!(report["actions"].as_array().is_some_and(|a| !a.is_empty()), "{report}");
    assert_eq!(report["failed"], false);
    assert_eq!(origin.integration_tip(), None, "--no-push pushes nothing");
    let committed = git(&clone, &["show", "claude/main:.lore/commissions/a.md"]);
    assert!(committed.contains("status: completed"), "the artifact update is committed on claude/main: {committed}");
    assert_eq!(git(&clone, &["status", "--porcelain"]), "", "the checkout is left clean");

    // origin gets a claude/main of its own that the local one does not hold: diverged.
    origin.commit_on("claude/main", "main", "other.txt", "x\n");
    let local = git(&clone, &["rev-parse", "claude/main"]);
    let (code, out, err) = guild_hall(origin.tmp.path(), &clone, &["ci"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("have diverged") && err.contains("origin/claude/main"), "says so: {err}");
    assert_eq!(git(&clone, &["rev-parse", "claude/main"]), local, "nothing changed");
}

#[test]
fn a_base_branch_that_conflicts_with_the_integration_branch_stops_the_run_naming_the_paths() {
    let origin = Origin::new(&["a"]);
    let (code, out, err) = guild_hall(origin.tmp.path(), &origin.clone("first"), &["ci", "--timeout", "120s"]);
    assert_eq!(code, 0, "{out}{err}");
    // The person cancels `a` on main, which claude/main already says completed.
    origin.commit_on("main", "main", ".lore/commissions/a.md", &commission("a").replace("status: pending", "status: cancelled"));
    let before = origin.integration_tip();
    let clone = origin.clone("second");
    let (code, out, err) = guild_hall(origin.tmp.path(), &clone, &["ci", "--timeout", "120s"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("conflict in: .lore/commissions/a.md") && err.contains("nothing changed"), "names the path: {err}");
    assert_eq!(git(&clone, &["status", "--porcelain"]), "", "the merge was aborted: the checkout is clean");
    assert_eq!(git(&clone, &["rev-parse", "claude/main"]), git(&clone, &["rev-parse", "origin/claude/main"]), "nothing merged");
    assert_eq!(origin.integration_tip(), before, "nothing pushed");
}

#[test]
fn a_run_that_times_out_commits_only_what_settled_and_the_next_run_starts_the_rest_again() {
    let origin = Origin::new(&["a"]);
    let slow = "---\ntitle: Slow\nworker: sleeper\nstatus: pending\n---\nsleep: 600\n";
    origin.commit_on("main", "main", ".lore/commissions/slow.md", slow);
    let clone = origin.clone("first");
    let (code, out, err) = run_guild_hall(origin.tmp.path(), &clone, &["ci", "--timeout", "5s", "--json"], true);
    assert_eq!(code, 1, "a run that timed out fails:\n{out}{err}");
    let report: Value = serde_json::from_str(&out).expect("json");
    assert_eq!(report["timed_out"], true, "{report}");
    assert_eq!(report["under_way"], serde_json::json!([".lore/commissions/slow.md"]), "{report}");
    assert_eq!(report["push"], "pushed", "what settled is published: {report}");
    let paths = report["committed_paths"].as_array().expect("paths");
    assert!(paths.iter().any(|p| p == ".lore/commissions/a.md"), "{report}");
    assert!(!paths.iter().any(|p| p.as_str().is_some_and(|p| p.contains("slow"))), "nothing of the unsettled one: {report}");
    assert_landed_once(&origin, &["a"]);
    let committed = origin.git(&["show", "claude/main:.lore/commissions/slow.md"]);
    assert_eq!(committed.trim_end(), slow.trim_end(), "origin's copy of the unsettled one is as the person wrote it");

    // The next run takes it as not started (not as another machine's attempt) and starts it.
    let clone = origin.clone("second");
    let (code, out, err) = run_guild_hall(origin.tmp.path(), &clone, &["ci", "--timeout", "5s"], true);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("still under way when the run ended") && out.contains(".lore/commissions/slow.md"), "{out}{err}");
    let home = origin.tmp.path().join("home-second");
    assert_eq!(attempts_in(&home, "slow"), 1, "started again by the next run:\n{out}{err}");
    assert_eq!(attempts_in(&home, "a"), 0, "what landed is not run again:\n{out}{err}");
}

#[test]
fn ci_publishes_only_the_base_branch() {
    let origin = Origin::new(&["a"]);
    let clone = origin.clone("feature");
    git(&clone, &["checkout", "-q", "-b", "feature"]);
    std::fs::write(clone.join("wip.txt"), "unfinished\n").expect("write");
    git(&clone, &["add", "wip.txt"]);
    git(&clone, &["-c", "user.name=P", "-c", "user.email=p@example.com", "commit", "-q", "-m", "wip"]);
    let (code, out, err) = guild_hall(origin.tmp.path(), &clone, &["ci", "--timeout", "60s"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("this checkout is on feature, not the base branch main"), "{err}");
    assert_eq!(origin.integration_tip(), None, "nothing published");
    git(&clone, &["checkout", "-q", "--detach", "main"]);
    let (code, out, err) = guild_hall(origin.tmp.path(), &clone, &["ci", "--timeout", "60s"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("this checkout is detached"), "{err}");
    assert_eq!(origin.integration_tip(), None, "nothing published");
}

/// The token-guarded HTTP git server of `tests/git_http_auth.py`, stopped when dropped.
struct TokenServer {
    child: std::process::Child,
    url: String,
    auth_log: PathBuf,
}

impl TokenServer {
    fn start(root: &Path, token: &str) -> TokenServer {
        let port_file = root.join("http-port");
        let auth_log = root.join("http-auth.log");
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/git_http_auth.py");
        let child = Command::new("python3").arg(script).arg(root).arg(token).arg(&port_file).arg(&auth_log).spawn();
        let child = crate::common::needs(child, "python3", "to serve git over HTTP with a token");
        crate::common::wait_for("the git HTTP server to listen", || port_file.exists());
        let port = std::fs::read_to_string(&port_file).expect("port");
        TokenServer { child, url: format!("http://127.0.0.1:{}", port.trim()), auth_log }
    }
}

impl Drop for TokenServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `actions/checkout` with `persist-credentials: false` leaves no token in `.git/config` (where
/// a worker reads it); `guild-hall ci` fetches and pushes with `GUILD_HALL_PUSH_TOKEN`, sent as
/// the checkout's header would be, and writes it nowhere.
#[test]
fn ci_fetches_and_pushes_with_its_own_token_and_leaves_it_in_no_config() {
    let origin = Origin::new(&["a"]);
    git(&origin.bare, &["config", "http.receivepack", "true"]);
    let token = "tok-only-guild-hall-reads";
    let server = TokenServer::start(origin.tmp.path(), token);
    let clone = origin.clone("run");
    let remote_url = format!("{}/origin.git", server.url);
    git(&clone, &["remote", "set-url", "origin", &remote_url]);
    let home = origin.tmp.path().join("home-run");
    // Ahead on PATH, a `git` that notes the names of the config entries each command is given
    // in its environment (never their values), then runs the real git.
    let bin = origin.tmp.path().join("bin");
    std::fs::create_dir_all(&bin).expect("mkdir");
    let keys = origin.tmp.path().join("config-keys");
    let real_git = String::from_utf8(Command::new("sh").args(["-c", "command -v git"]).output().expect("which").stdout).expect("utf8");
    std::fs::write(
        bin.join("git"),
        format!(
            "#!/bin/sh\ni=0\nwhile [ \"$i\" -lt \"${{GIT_CONFIG_COUNT:-0}}\" ]; do eval \"echo \\\"\\$GIT_CONFIG_KEY_$i\\\"\" >> '{}'; i=$((i+1)); done\nexec '{}' \"$@\"\n",
            keys.display(),
            real_git.trim()
        ),
    )
    .expect("wrapper");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(bin.join("git"), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let out = Command::new(assert_cmd::cargo::cargo_bin("guild-hall"))
        .args(["ci", "--timeout", "120s"])
        .current_dir(&clone)
        .env("PATH", &path)
        .env("GUILD_HALL_HOME", &home)
        .env("HOME", origin.tmp.path().join("user-home"))
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GUILD_HALL_PUSH_TOKEN", token)
        .env_remove("GUILD_HALL_FAULT")
        .env_remove("RUST_LOG")
        .output()
        .expect("runs");
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{said}");
    assert!(origin.integration_tip().is_some(), "claude/main was pushed over HTTP with the token:\n{said}");
    assert_landed_once(&origin, &["a"]);
    let auth = std::fs::read_to_string(&server.auth_log).expect("auth log");
    assert!(auth.lines().any(|l| l == "basic eC1hY2Nlc3MtdG9rZW46dG9rLW9ubHktZ3VpbGQtaGFsbC1yZWFkcw=="), "{auth}");
    // Given for the remote's URL alone: nothing else a command reaches (a submodule's remote,
    // another host) is sent it.
    let keys = std::fs::read_to_string(&keys).unwrap_or_default();
    let headers: Vec<&str> = keys.lines().filter(|k| k.to_ascii_lowercase().ends_with("extraheader")).collect();
    assert!(!headers.is_empty(), "the token was given to git: {keys}");
    assert!(headers.iter().all(|k| *k == format!("http.{remote_url}.extraheader")), "scoped to {remote_url}: {headers:?}");
    // Nowhere a worker could read it: the repository's config, the home, the output.
    let config = std::fs::read_to_string(clone.join(".git/config")).expect("config");
    assert!(!config.contains("extraheader") && !config.contains(token), "{config}");
    let grep = Command::new("grep").args(["-rl", token]).arg(&home).arg(&clone).output().expect("grep");
    assert!(grep.stdout.is_empty(), "the token was written to {}", String::from_utf8_lossy(&grep.stdout));
    assert!(!said.contains(token), "{said}");
    // The shipped workflow checks out without persisting credentials.
    let workflow =
        std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("contrib/ci/github-actions.yml")).expect("workflow");
    assert!(
        workflow.contains("persist-credentials: false") && workflow.contains("GUILD_HALL_PUSH_TOKEN: ${{ secrets.GITHUB_TOKEN }}"),
        "{workflow}"
    );
}

/// A checkout whose `.git/config` still holds the header `actions/checkout` persists without
/// `persist-credentials: false` (an older recipe's workflow): `guild-hall ci` runs, and warns on
/// stderr and in `--json`, naming the key (never its value) and where to read why.
#[test]
fn ci_warns_of_a_credential_persisted_in_git_config() {
    let origin = Origin::new(&["a"]);
    let clone = origin.clone("persisted");
    let secret = "AUTHORIZATION: basic c2VjcmV0LXRva2Vu";
    git(&clone, &["config", "http.https://github.com/.extraheader", secret]);
    let (code, out, err) = guild_hall(origin.tmp.path(), &clone, &["ci", "--no-push", "--json", "--timeout", "120s"]);
    assert_eq!(code, 0, "{out}{err}");
    let report: Value = serde_json::from_str(&out).expect("one JSON object");
    let warnings = report["warnings"].as_array().cloned().unwrap_or_default();
    assert_eq!(warnings.len(), 1, "{report}");
    let w = warnings[0].as_str().unwrap_or_default();
    assert!(w.contains("http.https://github.com/.extraheader") && w.contains("docs/teams-and-ci.md"), "{w}");
    assert!(err.contains("warning: http.https://github.com/.extraheader") && err.contains("docs/teams-and-ci.md"), "{err}");
    assert!(!out.contains("c2VjcmV0") && !err.contains("c2VjcmV0"), "the value is never said: {out}{err}");
}

/// `check` reads files only: in a teammate's clone whose remote has the integration branch (a
/// pre-commit hook, a CI lint job) it checks without `init`; in a repository guild-hall never
/// set up it says to run `init`.
#[test]
fn check_runs_in_a_clone_of_a_set_up_project_without_init() {
    let origin = Origin::new(&["a"]);
    origin.commit_on("claude/main", "main", "landed.txt", "work\n");
    let clone = origin.clone("lint");
    let (code, out, err) = guild_hall(origin.tmp.path(), &clone, &["check"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(!crate::common::git(&clone, &["branch", "--list", "claude/main"]).contains("claude/main"), "check made no branch");

    let fresh = Origin::new(&["a"]);
    let clone = fresh.clone("never");
    let (code, out, err) = guild_hall(fresh.tmp.path(), &clone, &["check"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("run `guild-hall init`"), "{err}");
}
