//! Telling whether a process runs a worker's code for this home (an attempt's processes, a
//! memory compaction's): the one predicate for every check that must not take a worker's
//! word for being someone else (the endpoint's peer check). Linux `/proc` based.

use std::path::Path;

use crate::config::Home;
use crate::worker::process::RUN_ID_VAR;

/// Why `pid` runs a worker's code for `home`, or `None` if it does not.
///
/// It does when:
/// - it, or any ancestor, is a `guild-hall shim` whose `--state-dir` is under this home's
///   `state/` — the shim is the attempt's child subreaper, so while it lives every process of
///   the attempt (a worker, a verify command, anything they start) descends from it, whatever
///   `setsid`, double forks or a cleared environment;
/// - or it, or any ancestor, is a `guild-hall memory-compact` whose `--memory-dir` is this
///   home's (a package's `compact` command and what it starts);
/// - or it descends from the calling process: guild-hall itself runs packages' `notes`
///   commands, and nothing it starts is a client of its own;
/// - or it carries the attempt mark (`GUILD_HALL_RUN_ID`) with `GUILD_HALL_HOME` naming this
///   home or unset (a process whose shim is already gone, before the reconciler kills it).
///
/// Biased towards "yes", for refusing service: a process can make itself look *more* like a
/// worker (a command line mimicking a shim's), never less while its shim lives. It is no proof
/// of ownership: never signal a process on its word.
pub(crate) fn worker_process(home: &Home, pid: i32) -> Option<String> {
    if pid <= 0 {
        return None;
    }
    if let Some(run_id) = attempt_mark(home, pid) {
        return Some(format!("pid {pid} carries the attempt mark {RUN_ID_VAR}={run_id}"));
    }
    let me = std::process::id() as i32;
    let mut p = pid;
    // Bounded: the chain ends at pid 1 (or 0), but /proc is read piecewise and a loop in what
    // it reports must not hang the caller.
    for _ in 0..4096 {
        if p == me && p != pid {
            return Some(format!("pid {pid} descends from this guild-hall process (pid {me}), which runs workers' commands"));
        }
        if let Some(role) = role(p, home) {
            let whose = if p == pid { String::new() } else { format!(" descends from the {role} (pid {p}) and") };
            return Some(format!("pid {pid}{whose} runs a worker's code ({role})"));
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

/// What `pid` is if it is a guild-hall process that runs a worker's code for this home: a
/// `guild-hall shim` of one of its attempts, or a `guild-hall memory-compact` of its memory.
/// Read from its command line (`<exe> <subcommand> ... --<dir option> <dir> ... [-- argv]`).
fn role(pid: i32, home: &Home) -> Option<String> {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
    let (option, root) = match *args.get(1)? {
        b"shim" => ("--state-dir", home.state_root()),
        b"memory-compact" => ("--memory-dir", home.memory_dir()),
        _ => return None,
    };
    // Its own options come before `--`; a shim's worker argv after it.
    let mut own = args.iter().skip(2).take_while(|a| **a != b"--").skip_while(|a| **a != option.as_bytes());
    own.next()?;
    let dir = Path::new(std::str::from_utf8(own.next()?).ok()?);
    let subcommand = String::from_utf8_lossy(args[1]);
    dir.starts_with(&root).then(|| format!("guild-hall {subcommand} {option} {}", dir.display()))
}

/// `pid`'s parent, from `/proc/<pid>/stat` (field 4, after the parenthesised name).
fn parent(pid: i32) -> Option<i32> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    text[text.rfind(')')? + 1..].split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::BufRead;
    use std::process::{Command, Stdio};

    fn home() -> (tempfile::TempDir, Home) {
        let tmp = tempfile::tempdir().expect("tempdir");
        let home = Home::resolve(Some(&tmp.path().join("home"))).expect("home");
        (tmp, home)
    }

    /// Orphaned processes started by `script` (run by `sh -c` in `dir`, with `args`), each
    /// printing `<name> <pid>` once it runs: they are not this process's descendants. They read their stdin
    /// and end when `Orphans` is dropped (no signal needed).
    struct Orphans {
        _stdin: std::process::ChildStdin,
        pids: std::collections::BTreeMap<String, i32>,
    }

    fn orphans(dir: &Path, script: &str, args: &[&Path], names: usize) -> Orphans {
        // A background job's stdin is /dev/null unless redirected: the scripts read fd 3.
        let mut sh = Command::new("sh")
            .arg("-c")
            .arg(format!("exec 3<&0\n{script}"))
            .args(args)
            .current_dir(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("sh");
        let stdin = sh.stdin.take().expect("stdin");
        let mut lines = std::io::BufReader::new(sh.stdout.take().expect("stdout")).lines();
        let pids = (0..names)
            .map(|_| {
                let line = lines.next().expect("a pid line").expect("line");
                let (name, pid) = line.split_once(' ').expect("name pid");
                (name.to_string(), pid.parse().expect("pid"))
            })
            .collect();
        sh.wait().expect("the starter exits");
        Orphans { _stdin: stdin, pids }
    }

    #[test]
    fn the_test_process_and_nonsense_pids_are_not_workers() {
        let (_tmp, home) = home();
        assert_eq!(worker_process(&home, std::process::id() as i32), None);
        assert_eq!(worker_process(&home, 0), None);
        assert_eq!(worker_process(&home, -1), None);
        assert_eq!(worker_process(&home, 1), None);
    }

    /// Real process trees: a fake shim and a fake compaction (scripts whose command lines are
    /// those of this home's), and the child of the shim with a cleared environment, are found
    /// by their command lines and ancestry; a process carrying the attempt mark by its
    /// environment; none of them for another home; and a child of this process as one.
    #[test]
    fn shims_compactions_their_descendants_and_marked_processes_are_found() {
        let (tmp, home) = home();
        let (_tmp2, other) = self::home();
        // `sh shim --state-dir DIR -- worker`: a script named `shim`, so argv[1] reads "shim".
        // Each prints its own pid once it runs (`$$`: after its exec, so its command line and
        // environment are the ones looked at).
        std::fs::write(tmp.path().join("shim"), "echo shim $$; env -i sh -c 'echo child $$; read x' <&3 & read y\n").expect("script");
        std::fs::write(tmp.path().join("memory-compact"), "echo compact $$; read y\n").expect("script");
        let state = home.commission_state("proj", "c1");
        let memory = home.memory_dir();
        let trees = orphans(
            tmp.path(),
            r#"sh shim --state-dir "$0" -- worker <&3 &
               sh memory-compact --memory-dir "$1" --package x <&3 &"#,
            &[&state, &memory],
            3,
        );
        let (shim, child, compact) = (trees.pids["shim"], trees.pids["child"], trees.pids["compact"]);
        let why = worker_process(&home, child).expect("a descendant of the shim");
        assert!(why.contains(&format!("descends from the guild-hall shim --state-dir {} (pid {shim})", state.display())), "{why}");
        assert!(worker_process(&home, shim).is_some_and(|w| w.contains("guild-hall shim")));
        assert!(worker_process(&home, compact).is_some_and(|w| w.contains("guild-hall memory-compact --memory-dir")));
        for pid in [shim, child, compact] {
            assert_eq!(worker_process(&other, pid), None, "another home's processes are not this home's");
        }

        let marked = orphans(
            tmp.path(),
            r#"env -i GUILD_HALL_RUN_ID=abc123 GUILD_HALL_HOME="$0" sh -c 'echo ours $$; read x' <&3 &
               env -i GUILD_HALL_RUN_ID=abc123 GUILD_HALL_HOME="$1" sh -c 'echo theirs $$; read x' <&3 &"#,
            &[&home.root, &other.root],
            2,
        );
        assert!(worker_process(&home, marked.pids["ours"]).is_some_and(|w| w.contains("GUILD_HALL_RUN_ID=abc123")));
        assert_eq!(worker_process(&home, marked.pids["theirs"]), None);

        // guild-hall's own children (a notes command) are never its clients.
        let mut child = Command::new("sh").arg("-c").arg("read x").stdin(Stdio::piped()).spawn().expect("sh");
        assert!(worker_process(&other, child.id() as i32).is_some_and(|w| w.contains("descends from this guild-hall process")));
        drop(child.stdin.take());
        child.wait().expect("wait");
    }
}
