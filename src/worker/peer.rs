//! Telling whether a process is part of an attempt of this home (a worker, anything it
//! started, a verify command): the one predicate for every check that must not take a
//! worker's word for being someone else (the endpoint's peer check). Linux `/proc` based.

use std::path::Path;

use crate::config::Home;
use crate::worker::shim::RUN_ID_VAR;

/// Why `pid` is a process of an attempt of `home`, or `None` if it is not one.
///
/// It is one when:
/// - it, or any ancestor, is a `guild-hall shim` whose `--state-dir` is under this home's
///   `state/` — the shim is the attempt's child subreaper, so while it lives every process of
///   the attempt descends from it, whatever `setsid`, double forks or a cleared environment;
/// - or it carries the attempt mark (`GUILD_HALL_RUN_ID`) with `GUILD_HALL_HOME` naming this
///   home or unset (a process whose shim is already gone, before the reconciler kills it).
///
/// A worker can only make itself look *more* like an attempt (a command line mimicking a
/// shim's), never less while its shim lives: errors in reading `/proc` are read as "not this
/// ancestor", and callers that must fail closed check that `pid` still exists themselves.
pub fn attempt_process(home: &Home, pid: i32) -> Option<String> {
    if pid <= 0 {
        return None;
    }
    if let Some(run_id) = attempt_mark(home, pid) {
        return Some(format!("pid {pid} carries the attempt mark {RUN_ID_VAR}={run_id}"));
    }
    let state_root = home.state_root();
    let mut p = pid;
    // Bounded: the chain ends at pid 1 (or 0), but /proc is read piecewise and a loop in what
    // it reports must not hang the caller.
    for _ in 0..4096 {
        if let Some(state) = shim_state_dir(p, &state_root) {
            let whose = if p == pid { String::new() } else { format!(" descends from the guild-hall shim (pid {p}) and") };
            return Some(format!("pid {pid}{whose} is part of the attempt whose state is {}", state.display()));
        }
        match parent(p) {
            Some(pp) if pp > 0 && pp != p => p = pp,
            _ => return None,
        }
    }
    None
}

/// The run id of the attempt mark in `pid`'s environment, if it is this home's (its
/// `GUILD_HALL_HOME` is this home's root, or unset).
fn attempt_mark(home: &Home, pid: i32) -> Option<String> {
    let environ = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    let var = |name: &str| -> Option<String> {
        let prefix = format!("{name}=");
        environ.split(|b| *b == 0).find_map(|kv| kv.strip_prefix(prefix.as_bytes())).map(|v| String::from_utf8_lossy(v).into_owned())
    };
    let run_id = var(RUN_ID_VAR).filter(|v| !v.is_empty())?;
    let ours = match var("GUILD_HALL_HOME") {
        None => true,
        Some(h) => Path::new(&h) == home.root || std::fs::canonicalize(&h).is_ok_and(|h| h == home.root),
    };
    ours.then_some(run_id)
}

/// `pid`'s `--state-dir` if it is a `guild-hall shim` running an attempt of this home.
fn shim_state_dir(pid: i32, state_root: &Path) -> Option<std::path::PathBuf> {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
    if args.get(1) != Some(&&b"shim"[..]) {
        return None;
    }
    // The shim's own options come before `--`; the worker's argv after it.
    let own = args.iter().skip(2).take_while(|a| **a != b"--");
    let mut own = own.skip_while(|a| **a != b"--state-dir");
    own.next()?;
    let dir = Path::new(std::str::from_utf8(own.next()?).ok()?);
    dir.starts_with(state_root).then(|| dir.to_path_buf())
}

/// `pid`'s parent, from `/proc/<pid>/stat` (field 4, after the parenthesised name).
fn parent(pid: i32) -> Option<i32> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    text[text.rfind(')')? + 1..].split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn home() -> (tempfile::TempDir, Home) {
        let tmp = tempfile::tempdir().expect("tempdir");
        let home = Home::resolve(Some(&tmp.path().join("home"))).expect("home");
        (tmp, home)
    }

    #[test]
    fn the_test_process_is_not_an_attempt() {
        let (_tmp, home) = home();
        assert_eq!(attempt_process(&home, std::process::id() as i32), None);
        assert_eq!(attempt_process(&home, 0), None);
        assert_eq!(attempt_process(&home, -1), None);
    }

    /// A real process tree: a fake shim (a shell whose command line is a shim's of this home)
    /// with a child that cleared its environment; the child is found through its ancestor, and
    /// a process carrying the mark through its environment, but not one of another home.
    #[test]
    fn descendants_of_a_shim_and_carriers_of_the_mark_are_found() {
        use std::process::{Command, Stdio};
        let (tmp, home) = home();
        let state = home.commission_state("proj", "c1");
        // `sh shim --state-dir DIR -- worker`, a script named `shim`: argv[1] reads "shim".
        std::fs::write(tmp.path().join("shim"), "env -i sleep 30 & echo $!; trap 'kill $!; exit' TERM; wait\n").expect("script");
        let mut shim = Command::new("sh")
            .arg("shim")
            .arg("--state-dir")
            .arg(&state)
            .args(["--", "worker"])
            .current_dir(tmp.path())
            .stdout(Stdio::piped())
            .spawn()
            .expect("sh");
        let mut line = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(shim.stdout.take().expect("stdout")), &mut line).expect("pid");
        let child: i32 = line.trim().parse().expect("child pid");
        let why = attempt_process(&home, child).expect("a descendant of the shim");
        assert!(why.contains(&format!("guild-hall shim (pid {})", shim.id())) && why.contains("commissions/c1"), "{why}");
        let (_tmp2, other) = self::home();
        assert_eq!(attempt_process(&other, child), None, "another home's shim is not this home's");

        let marked = |home_var: &Path| {
            Command::new("sleep").arg("30").env_clear().env(RUN_ID_VAR, "abc123").env("GUILD_HALL_HOME", home_var).spawn().expect("sleep")
        };
        let mut ours = marked(&home.root);
        let mut theirs = marked(&other.root);
        assert!(attempt_process(&home, ours.id() as i32).is_some_and(|w| w.contains("GUILD_HALL_RUN_ID=abc123")));
        assert_eq!(attempt_process(&home, theirs.id() as i32), None);
        // Only our own children, still unreaped (so their pids are theirs); the fake shim takes
        // its child with it.
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(shim.id() as i32), nix::sys::signal::Signal::SIGTERM);
        for c in [&mut ours, &mut theirs, &mut shim] {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}
