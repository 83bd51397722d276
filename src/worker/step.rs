//! One command run confined in a worktree, its output appended to an attempt's log, its exit
//! and the log's tail returned: a workspace's setup (in the shim, before the worker) and
//! teardown (before the worktree is removed); the unit a review's `checks:` run on too.
//! Bounded: stopped with everything it started when its caller says so.

use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::worker::sandbox::Policy;

/// One command to run: where, as whom, confined how, and where its output goes.
pub(crate) struct Step<'a> {
    pub(crate) argv: &'a [String],
    /// Its working directory (the worktree).
    pub(crate) cwd: &'a Path,
    /// Exactly these variables; `None`: this process's own (the shim's, which are the
    /// worker's). The toolbox's mailbox is never passed: a step is no worker's turn.
    pub(crate) env: Option<&'a BTreeMap<String, String>>,
    /// Its Landlock policy; `None` runs it unconfined (as the worker would be).
    pub(crate) sandbox: Option<&'a Policy>,
    /// The attempt's log: its stdout and stderr are appended there, after a line naming it.
    pub(crate) log: &'a Path,
    /// What it is, in the log's line (`setup`, `teardown`, `check`).
    pub(crate) what: &'a str,
    /// Between SIGTERM and SIGKILL when it is stopped.
    pub(crate) grace: Duration,
    /// Told its pid once it runs (the shim records it: the attempt's CPU time is its).
    pub(crate) started: Option<&'a dyn Fn(i32)>,
}

/// How its caller asks a running step to end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Halt {
    /// SIGTERM to its process group, SIGKILL after the grace.
    Term,
    /// SIGKILL to its process group now.
    Kill,
}

/// How a step ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StepOutcome {
    pub(crate) code: Option<i32>,
    pub(crate) signal: Option<i32>,
    /// The last lines it wrote to the log ([`crate::activity::state::log_tail`]), when it did not
    /// exit with 0.
    pub(crate) tail: Option<String>,
}

impl StepOutcome {
    pub(crate) fn ok(&self) -> bool {
        self.code == Some(0)
    }
}

/// Why a step did not run.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StepError {
    #[error("a {0} command needs its program first")]
    NoCommand(String),
    #[error("cannot open the attempt's log {}: {error}", .log.display())]
    Log { log: std::path::PathBuf, error: std::io::Error },
    #[error("cannot confine `{argv}`: {error}")]
    Confine { argv: String, error: crate::worker::sandbox::SandboxError },
    #[error("cannot start `{argv}`: {error}")]
    Spawn { argv: String, error: std::io::Error },
}

/// Run `step` to its end, in a process group of its own: `halt` is asked every few
/// milliseconds whether to stop it. Whatever it leaves behind in its group is killed once it
/// has exited.
pub(crate) fn run(step: &Step<'_>, halt: &dyn Fn() -> Option<Halt>) -> Result<StepOutcome, StepError> {
    let shown = step.argv.join(" ");
    let (prog, rest) = step.argv.split_first().filter(|(p, _)| !p.is_empty()).ok_or_else(|| StepError::NoCommand(step.what.into()))?;
    let open = || std::fs::OpenOptions::new().create(true).append(true).open(step.log);
    let mut log = open().map_err(|error| StepError::Log { log: step.log.to_path_buf(), error })?;
    let _ = log.write_all(format!("[guild-hall] {}: {shown}\n", step.what).as_bytes());
    let from = log.metadata().map(|m| m.len()).unwrap_or(0);
    let out = log.try_clone().map_err(|error| StepError::Log { log: step.log.to_path_buf(), error })?;
    let mut cmd = Command::new(prog);
    cmd.args(rest).current_dir(step.cwd).stdin(Stdio::null()).stdout(out).stderr(log).process_group(0);
    if let Some(env) = step.env {
        cmd.env_clear().envs(env);
    }
    cmd.env_remove("GUILD_HALL_MAILBOX");
    // SAFETY: prctl is an async-signal-safe system call.
    unsafe {
        cmd.pre_exec(|| {
            // It dies with whoever runs it.
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    if let Some(policy) = step.sandbox {
        policy.prepare().map_err(|error| StepError::Confine { argv: shown.clone(), error })?.apply_to(&mut cmd);
    }
    let mut child = cmd.spawn().map_err(|error| StepError::Spawn { argv: shown.clone(), error })?;
    drop(cmd);
    let group = child.id() as i32;
    if let Some(started) = step.started {
        started(group);
    }
    let mut kill_at: Option<Instant> = None;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) => {}
            Err(_) => break None,
        }
        match halt() {
            Some(Halt::Kill) => signal_group(group, libc::SIGKILL),
            Some(Halt::Term) if kill_at.is_none() => {
                signal_group(group, libc::SIGTERM);
                kill_at = Some(Instant::now() + step.grace);
            }
            _ => {}
        }
        if kill_at.is_some_and(|t| Instant::now() >= t) {
            signal_group(group, libc::SIGKILL);
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // What it started and left behind in its group does not outlive it.
    signal_group(group, libc::SIGKILL);
    let outcome = StepOutcome { code: status.and_then(|s| s.code()), signal: status.and_then(|s| s.signal()), tail: None };
    let tail = if outcome.ok() { None } else { tail_since(step.log, from) };
    let mut end = open().ok();
    if let Some(l) = end.as_mut() {
        let how = match (outcome.code, outcome.signal) {
            (Some(c), _) => format!("exited with code {c}"),
            (None, Some(s)) => format!("killed by signal {s}"),
            _ => "ended".into(),
        };
        let _ = l.write_all(format!("[guild-hall] {} `{shown}` {how}\n", step.what).as_bytes());
    }
    Ok(StepOutcome { tail, ..outcome })
}

/// The paths git sees changed in the worktree at `wt` — tracked files changed, untracked files
/// it does not ignore — with how: what a step made there that is the attempt's work (a setup
/// should make only ignored files). Read with libgit2 (no hooks, no configured programs), for
/// a note only; `None` when git cannot say.
pub(crate) fn unignored_changes(wt: &Path) -> Option<std::collections::BTreeSet<(String, u32)>> {
    let repo = git2::Repository::open(wt).ok()?;
    let mut opts = git2::StatusOptions::new();
    opts.include_untracked(true).recurse_untracked_dirs(true).include_ignored(false).exclude_submodules(true);
    let statuses = repo.statuses(Some(&mut opts)).ok()?;
    Some(statuses.iter().map(|e| (String::from_utf8_lossy(e.path_bytes()).into_owned(), e.status().bits())).collect())
}

/// Signal every process of the group `group` leads (none left: nothing to do).
fn signal_group(group: i32, sig: i32) {
    if group > 1 {
        // SAFETY: kill(2) with a negative pid signals that process group only.
        unsafe { libc::kill(-group, sig) };
    }
}

/// The tail of what was written to `log` from byte `from` on (at most its last 8 KiB read).
fn tail_since(log: &Path, from: u64) -> Option<String> {
    let mut f = std::fs::File::open(log).ok()?;
    let len = f.metadata().ok()?.len();
    let start = from.max(len.saturating_sub(8 * 1024));
    f.seek(SeekFrom::Start(start)).ok()?;
    let mut bytes = Vec::new();
    f.read_to_end(&mut bytes).ok()?;
    crate::activity::state::log_tail(&bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step<'a>(argv: &'a [String], dir: &'a Path, log: &'a Path, sandbox: Option<&'a Policy>) -> Step<'a> {
        Step { argv, cwd: dir, env: None, sandbox, log, what: "setup", grace: Duration::from_millis(200), started: None }
    }

    fn sh(script: &str) -> Vec<String> {
        vec!["sh".into(), "-c".into(), script.into()]
    }

    #[test]
    fn a_step_runs_in_its_dir_its_output_in_the_log_and_a_failure_has_its_tail() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = dir.path().join("log");
        let ok = sh("pwd > here; echo fine");
        let done = run(&step(&ok, dir.path(), &log, None), &|| None).expect("runs");
        assert!(done.ok() && done.tail.is_none(), "{done:?}");
        assert!(std::fs::read_to_string(dir.path().join("here"))
            .expect("written")
            .trim_end()
            .ends_with(dir.path().file_name().and_then(|n| n.to_str()).expect("name")));
        let bad = sh("echo first; echo 'npm ERR! missing' >&2; exit 3");
        let failed = run(&step(&bad, dir.path(), &log, None), &|| None).expect("runs");
        assert_eq!(failed.code, Some(3));
        let tail = failed.tail.expect("a tail");
        assert!(tail.ends_with("npm ERR! missing") && !tail.contains("fine"), "only its own output: {tail}");
        let text = std::fs::read_to_string(&log).expect("log");
        assert!(text.contains("[guild-hall] setup: sh -c pwd > here; echo fine\nfine\n"), "{text}");
        assert!(text.contains("exited with code 3"), "{text}");
    }

    #[test]
    fn a_halted_step_is_stopped_with_what_it_started() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = dir.path().join("log");
        // Renamed into place: the halt looks for the file, and must never find it empty.
        let argv = sh("sleep 30 & echo $! > child.tmp && mv child.tmp child; wait");
        let asked = std::cell::Cell::new(0);
        let halt = || {
            asked.set(asked.get() + 1);
            (dir.path().join("child").exists()).then_some(Halt::Term)
        };
        let ended = run(&step(&argv, dir.path(), &log, None), &halt).expect("runs");
        assert_eq!(ended.signal, Some(libc::SIGTERM), "{ended:?}");
        let child: i32 = std::fs::read_to_string(dir.path().join("child")).expect("pid").trim().parse().expect("a pid");
        let deadline = Instant::now() + Duration::from_secs(5);
        while crate::worker::process::proc_stat(child).is_some_and(|s| !s.ended()) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(crate::worker::process::proc_stat(child).is_none_or(|s| s.ended()), "its child is gone too");
    }

    #[test]
    fn what_git_does_not_ignore_is_seen_changed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let git = |args: &[&str]| {
            let out = Command::new("git").args(args).current_dir(dir.path()).env("GIT_CONFIG_GLOBAL", "/dev/null").output().expect("git");
            assert!(out.status.success(), "{args:?}");
        };
        git(&["init", "-q"]);
        std::fs::write(dir.path().join(".gitignore"), "node_modules/\n").expect("write");
        git(&["add", ".gitignore"]);
        let before = unignored_changes(dir.path()).expect("git says");
        std::fs::create_dir_all(dir.path().join("node_modules/x")).expect("mkdir");
        std::fs::write(dir.path().join("node_modules/x/i.js"), "x").expect("write");
        std::fs::write(dir.path().join("made.txt"), "x").expect("write");
        let after = unignored_changes(dir.path()).expect("git says");
        let made: Vec<&str> = after.difference(&before).map(|(p, _)| p.as_str()).collect();
        assert_eq!(made, ["made.txt"]);
    }

    #[test]
    fn a_confined_step_writes_only_where_its_policy_allows() {
        if let crate::worker::sandbox::Support::Unavailable { why } = crate::worker::sandbox::support() {
            panic!("these tests need Landlock: {why}");
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let (inside, outside) = (dir.path().join("wt"), dir.path().join("elsewhere"));
        std::fs::create_dir_all(&inside).expect("mkdir");
        std::fs::create_dir_all(&outside).expect("mkdir");
        let log = dir.path().join("log");
        let policy = Policy { writable: vec![inside.clone(), log.clone()], ..Default::default() };
        let argv = sh(&format!("echo a > made; echo b > {}/nope", outside.display()));
        let ended = run(&step(&argv, &inside, &log, Some(&policy)), &|| None).expect("runs");
        assert!(!ended.ok(), "{ended:?}");
        assert!(inside.join("made").exists() && !outside.join("nope").exists());
    }
}
