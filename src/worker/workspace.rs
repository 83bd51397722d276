//! A worktree made ready for a real project (`workspace:`, the project's with its package's
//! added): the person's ignored files copied in, the record of how its attempt runs (what its
//! teardown and a review's checks run as), and its removal with that teardown first. Setup
//! runs in the shim ([`crate::worker::step`]).

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::activity::state::StateDir;
use crate::activity::worktree::WorktreeRecord;
use crate::config::Workspace;
use crate::worker::step::{self, Halt, Step, StepOutcome};

/// Why a `copy:` entry cannot be copied: it is not an ignored file of the person's checkout.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum CopyRefused {
    #[error("workspace.copy: {entry:?} {why}")]
    Outside { entry: String, why: &'static str },
    #[error("workspace.copy: {entry:?} is tracked by git: copy takes only ignored files (tracked ones are in every worktree already)")]
    Tracked { entry: String },
    #[error("workspace.copy: {entry:?} is not ignored by git: copy takes only ignored files, which stay out of every merge (add it to .gitignore)")]
    NotIgnored { entry: String },
    #[error("workspace.copy: {entry:?} lies outside the repository (through a symbolic link)")]
    Linked { entry: String },
    #[error("workspace.copy: cannot read the repository at {}: {why}", .root.display())]
    Repository { root: PathBuf, why: String },
}

/// What of `workspace.copy` cannot be copied from the checkout at `root` (a missing file is
/// no problem: nothing is copied).
pub(crate) fn copy_problems(root: &Path, ws: &Workspace) -> Vec<CopyRefused> {
    if ws.copy.is_empty() {
        return Vec::new();
    }
    let repo = match git2::Repository::open(root) {
        Ok(r) => r,
        Err(e) => return vec![CopyRefused::Repository { root: root.to_path_buf(), why: e.message().to_string() }],
    };
    let index = repo.index().ok();
    ws.copy.iter().filter_map(|entry| copy_refused(&repo, index.as_ref(), root, entry)).collect()
}

fn copy_refused(repo: &git2::Repository, index: Option<&git2::Index>, root: &Path, entry: &str) -> Option<CopyRefused> {
    if let Some(why) = crate::config::copy_entry_outside(entry) {
        return Some(CopyRefused::Outside { entry: entry.into(), why });
    }
    let rel = clean(entry);
    let rel_text = rel.to_string_lossy().into_owned();
    let tracked = index.is_some_and(|ix| {
        let dir = format!("{rel_text}/");
        ix.iter().any(|e| e.path == rel_text.as_bytes() || e.path.starts_with(dir.as_bytes()))
    });
    if tracked {
        return Some(CopyRefused::Tracked { entry: entry.into() });
    }
    let source = root.join(&rel);
    if let (Ok(real), Ok(real_root)) = (source.canonicalize(), root.canonicalize()) {
        if !real.starts_with(&real_root) {
            return Some(CopyRefused::Linked { entry: entry.into() });
        }
    }
    // A directory is ignored as a whole when git ignores it with a trailing slash.
    let ignored = repo.is_path_ignored(&rel).unwrap_or(false) || (source.is_dir() && repo.is_path_ignored(rel.join("x")).unwrap_or(false));
    (!ignored).then(|| CopyRefused::NotIgnored { entry: entry.into() })
}

/// `entry` without `.` components.
fn clean(entry: &str) -> PathBuf {
    Path::new(entry).components().filter(|c| matches!(c, Component::Normal(_))).collect()
}

/// Copy the `copy:` entries (checked: [`copy_problems`] found none) from the checkout at `root`
/// into the worktree at `wt`: files and directories, copied, never linked; what the worktree
/// already has is kept, a missing source noted. Nothing is written through a link in the
/// worktree (a worker's earlier attempt may have left one). Returns the log's notes.
pub(crate) fn copy_into(root: &Path, wt: &Path, ws: &Workspace) -> Result<Vec<String>> {
    let mut notes = Vec::new();
    for entry in &ws.copy {
        let rel = clean(entry);
        let source = root.join(&rel);
        if std::fs::metadata(&source).is_err() {
            notes.push(format!("workspace.copy: {entry} is not in the checkout: not copied"));
            continue;
        }
        // A worktree given to its next attempt has it already (or what its worker made of it).
        if std::fs::symlink_metadata(wt.join(&rel)).is_ok() {
            continue;
        }
        if let Some(why) = unsafe_target(wt, &rel) {
            notes.push(format!("workspace.copy: {entry} not copied: {why}"));
            continue;
        }
        copy_tree(&source, &wt.join(&rel)).with_context(|| format!("copying workspace.copy {entry} into {}", wt.display()))?;
    }
    Ok(notes)
}

/// Why `rel` under `wt` is no place to copy to: a link or a file on the way.
fn unsafe_target(wt: &Path, rel: &Path) -> Option<String> {
    let mut at = wt.to_path_buf();
    let parts: Vec<_> = rel.components().collect();
    for part in &parts[..parts.len().saturating_sub(1)] {
        at.push(part);
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => return Some(format!("{} is a symbolic link", at.display())),
            Ok(m) if !m.is_dir() => return Some(format!("{} is not a directory", at.display())),
            _ => {}
        }
    }
    None
}

/// Copy `from` (a file, or a directory and what is in it, links left out) to `to`, which does
/// not exist; each file made new (never through a link).
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let meta = std::fs::metadata(from)?;
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent)?;
    }
    if meta.is_dir() {
        std::fs::create_dir(to)?;
        for e in std::fs::read_dir(from)? {
            let e = e?;
            if e.file_type()?.is_symlink() {
                continue;
            }
            copy_tree(&e.path(), &to.join(e.file_name()))?;
        }
        return Ok(());
    }
    let mut src = std::fs::File::open(from)?;
    let mut dst = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW)
        .mode(std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o777)
        .open(to)?;
    std::io::copy(&mut src, &mut dst)?;
    Ok(())
}

/// How an attempt's worker runs, written at launch into the activity's state dir (0600: its
/// environment may hold a package's `pass_env` values): what later runs in its worktree as the
/// attempt would — its teardown, a review's checks ([`run_as_attempt`]) — runs from it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct AsRun {
    /// The attempt whose log and sandbox policy it uses.
    pub(crate) attempt: u32,
    pub(crate) worktree: PathBuf,
    pub(crate) env: BTreeMap<String, String>,
    /// Confined by the attempt's sandbox policy file; else unconfined, as its worker was.
    pub(crate) confined: bool,
    /// A person's command (a plan's verify): `env` holds only its own variables, over the
    /// person's environment (less git's and guild-hall's), as the command had them.
    #[serde(default)]
    pub(crate) person: bool,
    pub(crate) grace: Duration,
    /// `workspace.teardown`: run once, before the worktree is removed.
    #[serde(default)]
    pub(crate) teardown: Vec<Vec<String>>,
}

/// The record of how the attempt runs, in `state`.
fn as_run_path(state: &StateDir) -> PathBuf {
    state.0.join("as-run.json")
}

/// Record how `attempt` runs ([`AsRun`]), over the last one's.
pub(crate) fn record_as_run(state: &StateDir, rec: &AsRun) -> Result<()> {
    let path = as_run_path(state);
    let bytes = serde_json::to_vec_pretty(rec)?;
    crate::files::write_atomic(&path, &bytes)?;
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o600))
        .with_context(|| format!("making {} private", path.display()))
}

/// How the last attempt in `state` ran, if it was recorded.
pub(crate) fn as_run(state: &StateDir) -> Option<AsRun> {
    crate::files::read_json::<AsRun>(&as_run_path(state)).ok().flatten()
}

/// What `attempt`'s setup made that git does not ignore (the shim's `setup-made.json` in
/// `state`), if it made any: the words of the timeline's `setup` event.
pub(crate) fn setup_made(state: &StateDir, attempt: u32) -> Option<String> {
    let v = crate::files::read_json::<serde_json::Value>(&state.0.join("setup-made.json")).ok().flatten()?;
    let paths: Vec<&str> = v["paths"].as_array()?.iter().filter_map(|p| p.as_str()).collect();
    (v["attempt"].as_u64() == Some(u64::from(attempt)) && !paths.is_empty())
        .then(|| format!("workspace setup made or changed, as this attempt's work: {}", paths.join(", ")))
}

/// The timeline's `setup` event of `attempt` whose setup made `text` ([`setup_made`]'s words):
/// a commission's and a meeting's keyed by the attempt (a meeting's turn), a wave task's in its
/// plan's timeline by the task (`task`: its canonical id) and the attempt.
pub(crate) fn setup_event(now: &str, attempt: u32, task: Option<&str>, text: &str) -> serde_json::Value {
    match task {
        None => crate::activity::timeline::event(now, "setup", format!("setup:{attempt}"), serde_json::json!({"text": text})),
        Some(task) => crate::activity::timeline::event(
            now,
            "setup",
            setup_key(task, attempt),
            serde_json::json!({"task": task, "attempt": attempt, "text": format!("{task}: {text}")}),
        ),
    }
}

/// The key of a wave task's `setup` event in its plan's timeline.
pub(crate) fn setup_key(task: &str, attempt: u32) -> String {
    format!("setup:{task}:{attempt}")
}

/// How long one worktree's teardown may take, all its commands together: a pass waits for it.
pub(crate) const TEARDOWN_LIMIT: Duration = Duration::from_secs(60);

/// Run the teardown recorded for the worktree `rec` in `state`, if any, bounded by
/// [`TEARDOWN_LIMIT`], its output in the attempt's log. The record goes once it has run: each
/// worktree is torn down once. A failing command is logged, never an error of the removal.
pub(crate) fn teardown(state: &StateDir, rec: &WorktreeRecord) {
    let Some(record) = as_run(state) else { return };
    if record.worktree == rec.path && rec.path.is_dir() && !record.teardown.is_empty() {
        for (argv, ended) in run_as_attempt(state, &record, &record.teardown, "teardown", TEARDOWN_LIMIT) {
            match ended {
                Ok(end) if end.ok() => {}
                Ok(_) => {
                    tracing::warn!(worktree = %rec.path.display(), command = %argv.join(" "), "workspace teardown failed (see the attempt's log)")
                }
                Err(why) => tracing::warn!(worktree = %rec.path.display(), command = %argv.join(" "), "workspace teardown not run: {why}"),
            }
        }
    }
    let _ = std::fs::remove_file(as_run_path(state));
}

/// Run `commands` one after the other in the worktree of the attempt `record` describes, as it
/// ran — its environment (less its mailbox), its sandbox (never unconfined when it was not) —
/// each into its log (`what`: `teardown`, `check`), all of them within `limit` (the one past it
/// is stopped, the rest not run). Each command with how it ended, or why it did not run.
pub(crate) fn run_as_attempt(
    state: &StateDir,
    record: &AsRun,
    commands: &[Vec<String>],
    what: &str,
    limit: Duration,
) -> Vec<(Vec<String>, Result<StepOutcome, String>)> {
    let log = state.log(record.attempt);
    let tmp = state.0.join("step-tmp");
    let _ = std::fs::remove_dir_all(&tmp);
    let _ = std::fs::create_dir_all(&tmp);
    let policy = if record.confined {
        match crate::worker::sandbox::Policy::read_file(&crate::worker::shim::policy_file(state, record.attempt)) {
            Ok(mut p) => {
                p.writable.push(tmp.clone());
                p.own.push(tmp.clone());
                Some(p)
            }
            Err(e) => {
                let why = format!("its worker's sandbox policy cannot be read ({e}), and it never runs unconfined");
                note(&log, &format!("{what} not run: {why}"));
                return commands.iter().map(|c| (c.clone(), Err(why.clone()))).collect();
            }
        }
    } else {
        None
    };
    let mut env: BTreeMap<String, String> = if record.person {
        std::env::vars().filter(|(k, _)| !k.starts_with("GIT_") && !k.starts_with("GUILD_HALL_")).collect()
    } else {
        crate::worker::shim::INHERITED_ENV.iter().filter_map(|k| std::env::var(k).ok().map(|v| (k.to_string(), v))).collect()
    };
    env.extend(record.env.clone());
    env.insert("TMPDIR".into(), tmp.to_string_lossy().into_owned());
    let deadline = Instant::now() + limit;
    let mut out = Vec::new();
    for argv in commands {
        if Instant::now() >= deadline {
            out.push((argv.clone(), Err(format!("past the limit of {}", humantime::format_duration(limit)))));
            continue;
        }
        let s = Step {
            argv,
            cwd: &record.worktree,
            env: Some(&env),
            sandbox: policy.as_ref(),
            log: &log,
            what,
            grace: record.grace.min(Duration::from_secs(5)),
            started: None,
        };
        let halt = || (Instant::now() >= deadline).then_some(Halt::Term);
        let ended = step::run(&s, &halt).map_err(|e| e.to_string());
        if let Err(why) = &ended {
            note(&log, &format!("{what}: {why}"));
        }
        if Instant::now() >= deadline {
            note(&log, &format!("{what} stopped: past its limit of {}", humantime::format_duration(limit)));
        }
        out.push((argv.clone(), ended));
    }
    let _ = std::fs::remove_dir_all(&tmp);
    out
}

/// A line of guild-hall's in the attempt's log `log`.
fn note(log: &Path, line: &str) {
    use std::io::Write;
    let _ = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .and_then(|mut l| l.write_all(format!("[guild-hall] {line}\n").as_bytes()));
}

/// Remove the worktree `rec` of the activity whose state dir is `state`, its workspace's
/// teardown run first ([`teardown`]). Every removal of an activity's worktree goes here.
pub(crate) fn remove_worktree(state: &StateDir, rec: &WorktreeRecord) -> Result<()> {
    teardown(state, rec);
    crate::activity::worktree::remove_worktree(rec)?;
    let _ = std::fs::remove_file(state.setup_done());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn git(dir: &Path, args: &[&str]) {
        let out = Command::new("git").args(args).current_dir(dir).env("GIT_CONFIG_GLOBAL", "/dev/null").output().expect("git");
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }

    fn ws(copy: &[&str]) -> Workspace {
        Workspace { copy: copy.iter().map(|c| c.to_string()).collect(), ..Default::default() }
    }

    #[test]
    fn only_ignored_files_of_the_checkout_are_copied() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("repo");
        std::fs::create_dir_all(root.join("config")).expect("mkdir");
        git(&root, &["init", "-q"]);
        std::fs::write(root.join(".gitignore"), ".env\nconfig/local.yaml\nsecrets/\n").expect("write");
        std::fs::write(root.join(".env"), "KEY=1\n").expect("write");
        std::fs::write(root.join("config/local.yaml"), "a: 1\n").expect("write");
        std::fs::write(root.join("README"), "hi\n").expect("write");
        std::fs::write(root.join("loose"), "untracked, not ignored\n").expect("write");
        std::fs::create_dir_all(root.join("secrets")).expect("mkdir");
        std::fs::write(root.join("secrets/k"), "k\n").expect("write");
        git(&root, &["add", ".gitignore", "README"]);
        let problems = copy_problems(&root, &ws(&[".env", "config/local.yaml", "secrets", "README", "loose", "../x", "/etc/passwd"]));
        let said: Vec<String> = problems.iter().map(|p| p.to_string()).collect();
        assert_eq!(problems.len(), 4, "{said:#?}");
        assert!(matches!(&problems[0], CopyRefused::Tracked { entry } if entry == "README"));
        assert!(matches!(&problems[1], CopyRefused::NotIgnored { entry } if entry == "loose"));
        assert!(matches!(&problems[2], CopyRefused::Outside { .. }) && matches!(&problems[3], CopyRefused::Outside { .. }));

        let wt = dir.path().join("wt");
        std::fs::create_dir_all(wt.join("config")).expect("mkdir");
        std::fs::write(wt.join("config/local.yaml"), "mine\n").expect("write");
        std::os::unix::fs::symlink(dir.path(), wt.join("secrets")).expect("link");
        std::os::unix::fs::symlink(dir.path(), wt.join("config2")).expect("link");
        std::fs::create_dir_all(root.join("config2")).expect("mkdir");
        std::fs::write(root.join("config2/k"), "k\n").expect("write");
        let notes = copy_into(&root, &wt, &ws(&[".env", "config/local.yaml", "secrets", "config2/k", "missing"])).expect("copies");
        assert_eq!(std::fs::read_to_string(wt.join(".env")).expect("copied"), "KEY=1\n");
        assert_eq!(std::fs::read_to_string(wt.join("config/local.yaml")).expect("kept"), "mine\n", "what is there is kept");
        assert!(!dir.path().join("k").exists(), "never written through a link");
        assert_eq!(notes.len(), 2, "a link on the way and the missing file: {notes:?}");
        assert!(notes[0].contains("config2") && notes[0].contains("symbolic link") && notes[1].contains("missing"), "{notes:?}");
    }

    #[test]
    fn commands_run_as_the_attempt_ran_within_their_limit() {
        let dir = tempfile::tempdir().expect("tempdir");
        let state = StateDir(dir.path().join("state"));
        let wt = dir.path().join("wt");
        std::fs::create_dir_all(&state.0).expect("mkdir");
        std::fs::create_dir_all(&wt).expect("mkdir");
        let env = [("FOO".to_string(), "bar".to_string()), ("GUILD_HALL_MAILBOX".to_string(), "/m".to_string())].into();
        let record = AsRun {
            attempt: 2,
            worktree: wt.clone(),
            env,
            confined: false,
            person: false,
            grace: Duration::from_millis(100),
            teardown: Vec::new(),
        };
        record_as_run(&state, &record).expect("recorded");
        let read = as_run(&state).expect("read back");
        let sh = |s: &str| vec!["sh".to_string(), "-c".to_string(), s.to_string()];
        let commands = [sh("echo \"$FOO:${GUILD_HALL_MAILBOX:-none}\" > env.txt"), sh("sleep 30"), sh("echo never > never.txt")];
        let ended = run_as_attempt(&state, &read, &commands, "check", Duration::from_millis(500));
        assert_eq!(std::fs::read_to_string(wt.join("env.txt")).expect("ran"), "bar:none\n", "its environment, less the mailbox");
        assert!(ended[0].1.as_ref().is_ok_and(StepOutcome::ok));
        assert!(ended[1].1.as_ref().is_ok_and(|e| e.signal == Some(libc::SIGTERM)), "stopped at the limit: {:?}", ended[1]);
        assert!(ended[2].1.is_err() && !wt.join("never.txt").exists(), "past the limit, not run");
        let log = std::fs::read_to_string(state.log(2)).expect("the attempt's log");
        assert!(log.contains("[guild-hall] check: sh -c sleep 30") && log.contains("check stopped: past its limit"), "{log}");
        // Confined, with no policy to confine it by: never run unconfined.
        let confined = AsRun { confined: true, ..read };
        assert!(run_as_attempt(&state, &confined, &commands[..1], "check", Duration::from_secs(5)).iter().all(|(_, e)| e.is_err()));
    }

    #[test]
    fn a_package_adds_to_the_projects_workspace() {
        let project = Workspace { copy: vec![".env".into()], setup: vec![vec!["a".into()]], teardown: vec![], ports: 3 };
        let pkg =
            Workspace { copy: vec![".env".into(), "b".into()], setup: vec![vec!["b".into()]], teardown: vec![vec!["t".into()]], ports: 2 };
        let both = project.with(&pkg);
        assert_eq!(both.copy, [".env", "b"]);
        assert_eq!(both.setup, [vec!["a".to_string()], vec!["b".to_string()]]);
        assert_eq!((both.teardown.len(), both.ports), (1, 3));
    }
}
