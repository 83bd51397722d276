//! A commission's `checks:` as proof of work: run by the attempt's shim once every process of
//! its worker has ended with a submitted result, each in the worktree confined like the worker
//! ([`crate::worker::step`]), in order, up to the first that fails. Their outcomes go into the
//! shim's record of the attempt's end (`exit.json`, [`crate::activity::state::CheckRun`]), which
//! the reconciler reads with that end: the worker has no process left to forge them with, no
//! pass of the reconciler waits on a `cargo test`, and their time is the attempt's.

use std::path::Path;

use crate::activity::state::{CheckRun, RunInfo, StateDir};
use crate::files::write_json;
use crate::worker::sandbox::Policy;
use crate::worker::step::{self, Halt, Step};
use crate::worker::toolbox::mailbox::{self, Cursor, Expect, MailBody};

/// The checks of one attempt, and where and how they run.
pub(crate) struct Checks<'a> {
    pub(crate) argvs: &'a [Vec<String>],
    pub(crate) attempt: u32,
    /// The worktree.
    pub(crate) cwd: &'a Path,
    /// Confined like the worker (`None`: unconfined, as it is).
    pub(crate) policy: Option<&'a Policy>,
    /// Between SIGTERM and SIGKILL when the attempt is stopped.
    pub(crate) grace: std::time::Duration,
}

/// Run the attempt's checks, if it submitted a result: each one's outcome, up to the first that
/// failed (or was stopped). None ran: no checks, or no result to prove.
pub(crate) fn run(state: &StateDir, c: &Checks<'_>, halt: &dyn Fn() -> Option<Halt>, started: &RunInfo) -> Vec<CheckRun> {
    if c.argvs.is_empty() || !submitted(state, c.attempt, c.cwd) {
        return Vec::new();
    }
    let log = state.log(c.attempt);
    // Each check's pid is recorded as the worker's while it runs: its CPU time is the
    // attempt's sign of life (a quiet `cargo test` is not a stale attempt).
    let record = |pid: i32| {
        let _ = write_json(&state.run(), &RunInfo { worker_pid: Some(pid), ..started.clone() });
    };
    let mut runs = Vec::new();
    for argv in c.argvs {
        if halt().is_some() {
            break;
        }
        let s = Step { argv, cwd: c.cwd, env: None, sandbox: c.policy, log: &log, what: "check", grace: c.grace, started: Some(&record) };
        let run = match step::run(&s, halt) {
            Ok(end) => CheckRun { argv: argv.clone(), code: end.code, signal: end.signal, tail: end.tail, error: None },
            Err(e) => CheckRun { argv: argv.clone(), code: None, signal: None, tail: None, error: Some(e.to_string()) },
        };
        let passed = run.passed();
        runs.push(run);
        if !passed {
            break;
        }
    }
    runs
}

/// Whether the attempt's own mailbox holds a result (read as the reconciler reads it: of this
/// attempt, its paths inside the worktree).
fn submitted(state: &StateDir, attempt: u32, worktree: &Path) -> bool {
    let mut found = false;
    let expect = Expect { attempt: Some(attempt), worktree: Some(worktree), last: true };
    let path = mailbox::attempt_file(state, attempt);
    let read = mailbox::read_from(&path, &mut Cursor::default(), expect, |line| {
        found |= line.mail.is_some_and(|m| matches!(m.body, MailBody::Result { .. }));
    });
    read.is_ok() && found
}
