//! Workers confined and contained, on real processes: writes outside the worktree and the
//! private temp dir are refused (Landlock); a worker that tampers with its worktree's git
//! cannot make guild-hall touch `main`, `claude/main` or the person's checkout; no process a
//! worker starts outlives its attempt; logs are capped; the home is private.

use std::collections::BTreeMap;
use std::path::Path;

use crate::common::*;

/// The person's side of the repository, byte for byte: every file of the checkout (guild-hall's
/// own artifact writes under `.lore/commissions/` aside), the shared `.git/config`, `HEAD` and
/// hooks, and where `main` points.
fn person_state(p: &Project) -> BTreeMap<String, String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        for e in std::fs::read_dir(dir).expect("read dir").filter_map(|e| e.ok()) {
            let path = e.path();
            let rel = path.strip_prefix(root).expect("under root").to_string_lossy().into_owned();
            if rel == ".git" || rel.starts_with(".lore/commissions") {
                continue;
            }
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                out.insert(rel, String::from_utf8_lossy(&std::fs::read(&path).expect("read")).into_owned());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(&p.root, &p.root, &mut out);
    for f in ["config", "HEAD"] {
        out.insert(format!(".git/{f}"), std::fs::read_to_string(p.root.join(".git").join(f)).expect("git file"));
    }
    for e in std::fs::read_dir(p.root.join(".git/hooks")).expect("hooks").filter_map(|e| e.ok()) {
        out.insert(format!(".git/hooks/{}", e.file_name().to_string_lossy()), std::fs::read_to_string(e.path()).expect("hook"));
    }
    out.insert("ref main".into(), git(&p.root, &["rev-parse", "main"]));
    out
}

/// Assert the person's side is as it was, naming what changed.
fn assert_untouched(before: &BTreeMap<String, String>, after: &BTreeMap<String, String>) {
    let changed: Vec<String> = before
        .keys()
        .chain(after.keys())
        .filter(|k| before.get(*k) != after.get(*k))
        .map(|k| format!("{k}: {:?} -> {:?}", before.get(k), after.get(k)))
        .collect();
    assert!(changed.is_empty(), "the person's checkout, .git or main changed:\n{}", changed.join("\n"));
}

#[test]
fn a_worker_writes_only_its_worktree_and_temp_dir() {
    let p = Project::new(&["intruder", "sleeper"]);
    let victim = p.create("sleeper", "Victim", "sleep: 60\nStay a while.");
    p.pass_until("the victim runs", |p| p.status(&victim) == "in_progress");
    let before = person_state(&p);
    let integration = rev(&p, "claude/main");
    let id = p.create("intruder", "Break out", &format!("victim: {}\nTry everything.", p.worktree(&victim).display()));
    p.pass_until("the intruder is done", |p| p.status(&id) == "completed");

    let log = p.ok(&["logs", &id]);
    for what in ["project", "project-readme", "git-config", "git-hook", "git-ref", "home", "victim"] {
        assert!(log.contains(&format!("refused: {what} (")), "{what} was not refused:\n{log}");
        assert!(!log.contains(&format!("WROTE: {what}\n")), "{what} was written:\n{log}");
    }
    assert!(log.contains("Permission denied"), "{log}");
    assert!(log.contains("WROTE: tmpdir") && log.contains("WROTE: worktree"), "{log}");
    assert_untouched(&before, &person_state(&p));
    assert!(!p.user_home().join("hacked.txt").exists());
    assert!(!p.worktree(&victim).join("hacked.txt").exists());
    // claude/main moved by exactly the intruder's own merge: its one file in its worktree.
    assert_eq!(rev(&p, "claude/main~1"), integration);
    let changed = git(&p.root, &["diff", "--name-only", &integration, "claude/main"]);
    assert_eq!(changed.trim(), format!(".lore/intruder/{id}.md"));

    p.ok(&["commission", "cancel", &victim]);
    p.settle();
    assert_eq!(p.status(&victim), "cancelled");
}

#[test]
fn tampering_with_git_never_reaches_main_or_the_integration_branch() {
    let p = Project::new(&["tamperer"]);
    p.config("commission_cap: 6\n");
    git(&p.root, &["add", "-A"]);
    git(&p.root, &["commit", "-q", "-m", "workers and config"]);
    let before = person_state(&p);
    let integration = rev(&p, "claude/main");
    let modes = ["redirect", "delete", "reinit", "head", "config", "refs"];
    for m in modes {
        p.write_commission(m, &format!("---\nworker: tamperer\n---\ntamper: {m}\n"));
    }
    p.settle();

    assert_untouched(&before, &person_state(&p));
    for m in ["redirect", "delete", "reinit", "head"] {
        let s = p.status_json(m);
        assert_eq!(s["status"], "failed", "{m}: {s}");
        let reason = s["reason"].as_str().unwrap_or("");
        assert!(reason.contains("worktree tampered with"), "{m}: {reason}");
        // What the worker left is kept on its own branch, never merged.
        let kept = git(&p.root, &["show", &format!("claude/commission/{m}:.lore/tampered/{m}.md")]);
        assert_eq!(kept, format!("work by {m}\n"), "{m}");
        assert!(!p.worktree_list().contains(&format!("commission-{m}\n")), "{m}: worktree removed");
    }
    for (m, why) in [
        ("redirect", "to point elsewhere"),
        ("delete", ".git file was removed"),
        ("reinit", "git init"),
        ("head", "switched to refs/heads/main"),
    ] {
        let reason = p.status_json(m)["reason"].as_str().unwrap_or("").to_string();
        assert!(reason.contains(why), "{m}: {reason}");
    }
    // Shared config and other refs are out of reach: those attempts went on and merged their
    // own file, and nothing else changed.
    for m in ["config", "refs"] {
        assert_eq!(p.status(m), "completed", "{m}: {}", p.ok(&["logs", m]));
        let log = p.ok(&["logs", m]);
        assert!(!log.contains("WROTE") && !log.contains("DELETED"), "{m}:\n{log}");
    }
    let merged = git(&p.root, &["diff", "--name-only", &integration, "claude/main"]);
    assert_eq!(merged.lines().collect::<Vec<_>>(), [".lore/tampered/config.md", ".lore/tampered/refs.md"]);
    let config = &person_state(&p)[".git/config"];
    assert!(!config.contains("hooksPath") && !config.contains("fsmonitor"), "{config}");
}

/// The pids the escaper reported ("pids: A B C").
fn escaped_pids(p: &Project, id: &str) -> Vec<i64> {
    let progress = p.status_json(id)["progress"].as_str().unwrap_or("").to_string();
    let pids: Vec<i64> = progress.strip_prefix("pids: ").unwrap_or("").split(' ').filter_map(|s| s.parse().ok()).collect();
    assert_eq!(pids.len(), 3, "progress: {progress}");
    pids
}

/// A process of the test's own, not a worker's descendant: it must survive everything.
struct Bystander(std::process::Child);

impl Bystander {
    fn start() -> Bystander {
        Bystander(std::process::Command::new("sleep").arg("600").spawn().expect("sleep"))
    }
    fn alive(&self) -> bool {
        pid_alive(self.0.id() as i64)
    }
}

impl Drop for Bystander {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn nothing_a_worker_starts_outlives_its_attempt() {
    let bystander = Bystander::start();
    let p = Project::new(&["escaper"]);
    p.config("cancel_grace: 2s\nstale_after: 3s\ncommission_cap: 3\n");
    let exits = p.create("escaper", "Exit", "then: exit\nLeave things behind.");
    let cancelled = p.create("escaper", "Cancel", "then: wait\nKeep going.");
    let stale = p.create("escaper", "Hang", "then: hang\nGo quiet.");
    p.pass_until("all three report their processes", |p| {
        [&exits, &cancelled, &stale].iter().all(|id| p.status_json(id)["progress"].as_str().is_some_and(|t| t.starts_with("pids:")))
    });
    let pids: Vec<(String, Vec<i64>)> = [&exits, &cancelled, &stale].iter().map(|id| (id.to_string(), escaped_pids(&p, id))).collect();
    p.ok(&["commission", "cancel", &cancelled]);
    p.settle();
    assert_eq!(p.status(&exits), "completed");
    assert_eq!(p.status(&cancelled), "cancelled");
    assert_eq!(p.status(&stale), "failed");
    assert_eq!(p.status_json(&stale)["reason"], "process unresponsive");
    for (id, list) in &pids {
        for pid in list {
            assert!(!pid_alive(*pid), "{id}: process {pid} outlived its attempt");
        }
    }
    assert!(bystander.alive(), "a process that is not a worker's was killed");
}

#[test]
fn a_killed_shim_takes_the_whole_attempt_with_it() {
    let bystander = Bystander::start();
    let p = Project::new(&["escaper"]);
    let id = p.create("escaper", "Wait", "then: wait\nKeep going.");
    p.pass_until("the processes are reported", |p| p.status_json(&id)["progress"].as_str().is_some_and(|t| t.starts_with("pids:")));
    let pids = escaped_pids(&p, &id);
    let run = p.run_info(&id).expect("run.json");
    let (shim, worker) = (run["pid"].as_i64().expect("pid"), run["worker_pid"].as_i64().expect("worker pid"));
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(shim as i32), nix::sys::signal::Signal::SIGKILL).expect("kill shim");
    // Status follows only what is really over: when it says failed, nothing of it is left.
    p.pass_until("the commission fails", |p| {
        let failed = p.status(&id) == "failed";
        if failed {
            for pid in pids.iter().chain([&worker]) {
                assert!(!pid_alive(*pid), "process {pid} still alive when the commission was marked failed");
            }
        }
        failed
    });
    assert!(bystander.alive());
}

#[test]
fn a_chatty_workers_log_is_capped() {
    let p = Project::new(&["chatty"]);
    std::fs::write(
        p.home.join("config.yaml"),
        format!("log_max_bytes: 200000\n{}", std::fs::read_to_string(p.home.join("config.yaml")).unwrap_or_default()),
    )
    .expect("config");
    let id = p.create("chatty", "Talk", "lines: 30000\nSay a lot.");
    p.settle();
    assert_eq!(p.status(&id), "completed");
    let state = p.state_dir(&id);
    let current = std::fs::metadata(state.join("attempt-1.log")).expect("log").len();
    let earlier = std::fs::metadata(state.join("attempt-1.log.1")).expect("rotated part").len();
    assert!(current <= 200_000 + 200 && earlier <= 200_000 + 200, "{current} and {earlier} bytes");
    let log = p.ok(&["logs", &id]);
    assert!(log.contains("[guild-hall] log rotated at"), "the marker says what happened");
    assert!(log.trim_end().ends_with("chatty: the end") || log.contains("chatty: the end\n"), "the latest output is kept");
    assert!(!log.contains("line 0000001 "), "the oldest output was dropped");
}

#[test]
fn the_home_is_private_to_its_user() {
    let p = Project::new(&[]);
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&p.home, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    p.ok(&["status"]);
    assert_eq!(std::fs::metadata(&p.home).expect("home").permissions().mode() & 0o777, 0o700);
}

#[test]
fn without_landlock_workers_are_refused_unless_allowed() {
    let p = Project::new(&["scribe"]);
    p.install_worker("scribe", "scribe-off");
    let yaml = p.root.join(".lore/workers/scribe-off/worker.yaml");
    std::fs::write(&yaml, std::fs::read_to_string(&yaml).expect("yaml") + "sandbox: off\n").expect("write");
    let refused = p.create("scribe", "Refused", "Write.");
    let off = p.create("scribe-off", "Off", "Write.");
    let out =
        p.cmd().env("GUILD_HALL_NO_LANDLOCK", "1").args(["reconcile", "--once", "--wait", "--timeout", "60s"]).output().expect("runs");
    assert_eq!(p.status(&refused), "failed");
    let reason = p.status_json(&refused)["reason"].as_str().unwrap_or("").to_string();
    assert!(reason.contains("Landlock is not available") && reason.contains("sandbox: off"), "{reason}");
    assert_eq!(p.status(&off), "completed", "a package with sandbox: off runs unconfined");
    assert!(out.status.code().is_some());

    // The home's config may allow unconfined workers; guild-hall then says so, loudly.
    let cfg = p.home.join("config.yaml");
    std::fs::write(&cfg, format!("without_landlock: unconfined\n{}", std::fs::read_to_string(&cfg).unwrap_or_default())).expect("config");
    p.ok(&["commission", "redispatch", &refused]);
    let out =
        p.cmd().env("GUILD_HALL_NO_LANDLOCK", "1").args(["reconcile", "--once", "--wait", "--timeout", "60s"]).output().expect("runs");
    assert_eq!(p.status(&refused), "completed");
    assert!(String::from_utf8_lossy(&out.stderr).contains("UNCONFINED"), "{}", String::from_utf8_lossy(&out.stderr));

    // `workers` shows how each package runs here.
    let listing = p.cmd().env("GUILD_HALL_NO_LANDLOCK", "1").arg("workers").output().expect("runs");
    let text = String::from_utf8_lossy(&listing.stdout);
    assert!(text.contains("Landlock: not available"), "{text}");
    assert!(text.lines().any(|l| l.starts_with("scribe-off") && l.contains("sandbox off")), "{text}");
    let listing = p.ok(&["workers", "--json"]);
    let json: serde_json::Value = serde_json::from_str(&listing).expect("json");
    let by_name = |n: &str| json.as_array().expect("list").iter().find(|w| w["name"] == n).cloned().expect("worker");
    assert_eq!(by_name("scribe")["confinement"], "confined");
    assert_eq!(by_name("scribe-off")["confinement"], "off");
    assert_eq!(by_name("scribe-off")["sandbox"], "off");
}

/// A worker that writes the variables it was given into `.lore/env.md` and submits.
fn install_env_dumper(p: &Project, pass: &str) {
    let dir = p.root.join(".lore/workers/dumper");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(dir.join("worker.yaml"), format!("name: dumper\ncommand: [\"./run.sh\"]\ncheckout: sparse\npass_env: {pass}\n"))
        .expect("write");
    let script = "#!/bin/sh\nset -eu\nmkdir -p .lore\nprintf 'A=%s B=%s C=%s\\n' \"${SECRET_A:-}\" \"${SECRET_B:-}\" \"${SECRET_C:-unset}\" > .lore/env.md\n\"$GUILD_HALL_BIN\" toolbox submit-result --summary dumped --artifact .lore/env.md\n";
    std::fs::write(dir.join("run.sh"), script).expect("write");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.join("run.sh"), std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

#[test]
fn named_variables_reach_the_worker_from_the_environment_or_a_private_file() {
    use std::os::unix::fs::PermissionsExt;
    let p = Project::new(&[]);
    install_env_dumper(&p, "[SECRET_A, SECRET_B, SECRET_C]");
    let secrets = p.home.join("secrets.env");
    std::fs::write(&secrets, "# for workers\nSECRET_B=\"from-the-file\"\nSECRET_A=the-file-loses\n").expect("write");
    std::fs::set_permissions(&secrets, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let id = p.create("dumper", "Env", "Dump.");
    let run = |p: &Project| {
        p.cmd().env("SECRET_A", "from-the-env").args(["-v", "reconcile", "--once", "--wait", "--timeout", "60s"]).output().expect("runs")
    };
    run(&p);
    let s = p.status_json(&id);
    assert_eq!(s["status"], "failed");
    assert!(s["reason"].as_str().is_some_and(|r| r.contains("secrets.env") && r.contains("chmod 600")), "{s}");

    std::fs::set_permissions(&secrets, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    p.ok(&["commission", "redispatch", &id]);
    let out = run(&p);
    assert_eq!(p.status(&id), "completed", "{}", p.ok(&["logs", &id]));
    assert_eq!(git(&p.root, &["show", "claude/main:.lore/env.md"]), "A=from-the-env B=from-the-file C=unset\n");
    assert!(p.ok(&["logs", &id]).contains("pass_env: SECRET_C set neither"), "an unset name is noted, not passed");
    // Values never appear in guild-hall's own output, timeline or records.
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let timeline = std::fs::read_to_string(p.root.join(format!(".lore/commissions/{id}.timeline.jsonl"))).expect("timeline");
    for secret in ["from-the-env", "from-the-file"] {
        assert!(!said.contains(secret) && !timeline.contains(secret), "{secret} leaked");
        for f in std::fs::read_dir(p.state_dir(&id)).expect("state").filter_map(|e| e.ok()).filter(|e| e.path().is_file()) {
            let text = String::from_utf8_lossy(&std::fs::read(f.path()).expect("read")).into_owned();
            assert!(!text.contains(secret), "{secret} in {}", f.path().display());
        }
    }
}

#[test]
fn write_artifact_is_confined_to_lore_of_the_worktree() {
    let p = Project::new(&[]);
    let wt = p.tmp.path().join("wt");
    std::fs::create_dir_all(wt.join(".lore")).expect("mkdir");
    std::os::unix::fs::symlink(p.tmp.path(), wt.join(".lore/link")).expect("symlink");
    let toolbox = |args: &[&str], stdin: &str| {
        use std::io::Write;
        let mut child = p
            .cmd()
            .arg("toolbox")
            .args(args)
            .env("GUILD_HALL_COMMISSION", "c")
            .env("GUILD_HALL_MAILBOX", p.tmp.path().join("events.jsonl"))
            .env("GUILD_HALL_WORKTREE", &wt)
            .env("GUILD_HALL_ATTEMPT", "1")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("runs");
        child.stdin.take().expect("stdin").write_all(stdin.as_bytes()).expect("write");
        let out = child.wait_with_output().expect("wait");
        (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let (code, out, _) = toolbox(&["write-artifact", ".lore/reports/a.md", "# A\n"], "");
    assert_eq!(code, Some(0));
    assert!(out.contains("wrote .lore/reports/a.md"));
    assert_eq!(std::fs::read_to_string(wt.join(".lore/reports/a.md")).expect("written"), "# A\n");
    let (code, _, _) = toolbox(&["write-artifact", ".lore/from-stdin.md"], "piped\n");
    assert_eq!(code, Some(0));
    assert_eq!(std::fs::read_to_string(wt.join(".lore/from-stdin.md")).expect("written"), "piped\n");
    let (code, out, _) = toolbox(&["read-artifact", ".lore/reports/a.md"], "");
    assert_eq!((code, out.as_str()), (Some(0), "# A\n"));

    for (path, why) in [
        ("README.md", "must be under .lore/"),
        (".lore/../escape.md", "without '..'"),
        ("/etc/passwd", "must be relative"),
        (".lore/link/escape.md", "symlink"),
    ] {
        let (code, _, err) = toolbox(&["write-artifact", path, "x"], "");
        assert_eq!(code, Some(1), "{path}");
        assert!(err.contains(why), "{path}: {err}");
    }
    assert!(!p.tmp.path().join("escape.md").exists());
    let big = "x".repeat(1024 * 1024 + 1);
    let (code, _, err) = toolbox(&["write-artifact", ".lore/big.md"], &big);
    assert_eq!(code, Some(1));
    assert!(err.contains("at most"), "{err}");
    assert!(!wt.join(".lore/big.md").exists());
}

/// A worker that commits in its worktree (its git writes objects into its own store), leaves a
/// second file uncommitted, and — with `corrupt: yes` — then swaps one of its stored objects
/// for another's content.
fn install_committer(p: &Project) {
    let dir = p.root.join(".lore/workers/committer");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(dir.join("worker.yaml"), "name: committer\ncommand: [\"./run.sh\"]\ncheckout: full\n").expect("write");
    let script = r#"#!/bin/sh
set -eu
echo "committed by $GUILD_HALL_COMMISSION" > a.txt
git add a.txt
git -c user.name=W -c user.email=w@example.com commit -q -m "the worker's own commit"
echo uncommitted > b.txt
if grep -q '^corrupt: yes' "$GUILD_HALL_PROMPT_FILE"; then
  obj=$(git rev-parse HEAD:a.txt)
  other=$(echo something else | git hash-object -w --stdin)
  target="$GIT_OBJECT_DIRECTORY/$(echo "$obj" | cut -c1-2)/$(echo "$obj" | cut -c3-)"
  chmod u+w "$target"
  cp "$GIT_OBJECT_DIRECTORY/$(echo "$other" | cut -c1-2)/$(echo "$other" | cut -c3-)" "$target"
fi
"$GUILD_HALL_BIN" toolbox submit-result --summary committed --artifact a.txt
"#;
    std::fs::write(dir.join("run.sh"), script).expect("write");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.join("run.sh"), std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

#[test]
fn a_workers_own_commits_are_adopted_after_their_hashes_check_out() {
    let p = Project::new(&[]);
    install_committer(&p);
    let good = p.create("committer", "Commit", "Commit something.");
    let bad = p.create("committer", "Corrupt", "corrupt: yes\nCommit, then corrupt the store.");
    p.settle();
    assert_eq!(p.status(&good), "completed", "{}", p.ok(&["logs", &good]));
    assert_eq!(git(&p.root, &["show", "claude/main:a.txt"]), format!("committed by {good}\n"));
    assert_eq!(git(&p.root, &["show", "claude/main:b.txt"]), "uncommitted\n");
    let log = git(&p.root, &["log", "--format=%s", &format!("claude/commission/{good}")]);
    assert!(log.contains("the worker's own commit"), "{log}");
    // Every object the branches name is in the repository itself.
    git(&p.root, &["fsck", "--connectivity-only", "--no-dangling"]);

    let s = p.status_json(&bad);
    assert_eq!(s["status"], "failed", "{s}");
    let reason = s["reason"].as_str().unwrap_or("");
    assert!(reason.contains("could not be adopted"), "{reason}");
    assert!(!git(&p.root, &["log", "--format=%s", "claude/main"]).contains(&format!("({bad})")), "nothing of it merged");
}

/// A program that notes it ran (`$0`, to `marker`) and passes its stdin through (a clean
/// filter must).
fn marker_script(dir: &Path, name: &str, marker: &Path) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\necho \"{name} $*\" >> '{}'\ncat\n", marker.display())).expect("write");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path
}

#[test]
fn git_config_from_the_environment_or_the_users_home_runs_nothing() {
    let p = Project::new(&["scribe"]);
    let dir = p.tmp.path().join("programs");
    let hooks = dir.join("hooks");
    std::fs::create_dir_all(&hooks).expect("mkdir");
    let marker = p.tmp.path().join("ran.txt");
    for hook in ["pre-commit", "post-commit", "post-checkout", "reference-transaction", "post-index-change", "pre-auto-gc"] {
        marker_script(&hooks, hook, &marker);
    }
    let fsmonitor = marker_script(&dir, "fsmonitor", &marker);
    let filter = marker_script(&dir, "clean-filter", &marker);
    let attributes = dir.join("attributes");
    std::fs::write(&attributes, "* filter=mark\n").expect("write");
    // The user's own config (HOME) and config given in the environment each name every one.
    let home = p.user_home();
    std::fs::write(
        home.join(".gitconfig"),
        format!(
            "[core]\n\thooksPath = {}\n\tfsmonitor = {}\n\tattributesFile = {}\n[filter \"mark\"]\n\tclean = {}\n",
            hooks.display(),
            fsmonitor.display(),
            attributes.display(),
            filter.display()
        ),
    )
    .expect("write");
    let env_config = [
        ("core.hooksPath", hooks.display().to_string()),
        ("core.fsmonitor", fsmonitor.display().to_string()),
        ("core.attributesFile", attributes.display().to_string()),
        ("filter.mark.clean", filter.display().to_string()),
    ];
    let with_config = |c: &mut std::process::Command, global: bool| {
        c.env_remove("GIT_CONFIG_NOSYSTEM").env("HOME", &home);
        if global {
            c.env_remove("GIT_CONFIG_GLOBAL");
        } else {
            c.env("GIT_CONFIG_GLOBAL", "/dev/null").env("GIT_CONFIG_COUNT", env_config.len().to_string());
            for (i, (k, v)) in env_config.iter().enumerate() {
                c.env(format!("GIT_CONFIG_KEY_{i}"), k).env(format!("GIT_CONFIG_VALUE_{i}"), v);
            }
        }
    };
    // The set-up can fail the test: plain git in either environment runs the programs.
    for global in [true, false] {
        let scratch = p.tmp.path().join(format!("scratch-{global}"));
        std::fs::create_dir_all(&scratch).expect("mkdir");
        std::fs::write(scratch.join("f.txt"), "x\n").expect("write");
        for args in [&["init", "-q"][..], &["add", "f.txt"], &["-c", "user.name=T", "-c", "user.email=t@e", "commit", "-q", "-m", "x"]] {
            let mut c = std::process::Command::new("git");
            c.args(args).current_dir(&scratch);
            with_config(&mut c, global);
            let status = c.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null()).status().expect("git");
            assert!(status.success(), "{args:?}");
        }
        let ran = std::fs::read_to_string(&marker).unwrap_or_default();
        assert!(ran.contains("clean-filter") && ran.contains("pre-commit"), "global {global}: {ran}");
        std::fs::remove_file(&marker).expect("rm");
    }

    // A whole dispatch -> leftovers commit -> squash merge, once with each.
    for global in [true, false] {
        let id = p.create("scribe", &format!("Config {global}"), "Write it.");
        let mut c = p.cmd();
        c.args(["reconcile", "--once", "--wait", "--timeout", "120s"]);
        with_config(&mut c, global);
        let out = c.output().expect("runs");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(p.status(&id), "completed", "{}", p.ok(&["logs", &id]));
        assert_eq!(git(&p.root, &["show", &format!("claude/main:.lore/reports/{id}.md")]).lines().next(), Some(format!("# {id}").as_str()));
        assert!(
            !marker.exists(),
            "global {global}: git ran a configured program: {}",
            std::fs::read_to_string(&marker).unwrap_or_default()
        );
    }
}
