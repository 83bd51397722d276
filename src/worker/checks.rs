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
use crate::worker::shim::ShimArgv;
use crate::worker::step::{self, Halt, Step};
use crate::worker::toolbox::mailbox::{self, Cursor, Expect, MailBody};

/// Run the attempt's checks, if it submitted a result: each one's outcome, up to the first that
/// failed (or was stopped). None ran: no checks, or no result to prove.
pub(crate) fn run(
    state: &StateDir,
    args: &ShimArgv,
    policy: Option<&Policy>,
    halt: &dyn Fn() -> Option<Halt>,
    started: &RunInfo,
) -> Vec<CheckRun> {
    if args.checks.is_empty() || !submitted(state, args.attempt, &args.cwd) {
        return Vec::new();
    }
    let log = state.log(args.attempt);
    // Each check's pid is recorded as the worker's while it runs: its CPU time is the
    // attempt's sign of life (a quiet `cargo test` is not a stale attempt).
    let record = |pid: i32| {
        let _ = write_json(&state.run(), &RunInfo { worker_pid: Some(pid), ..started.clone() });
    };
    let mut runs = Vec::new();
    for argv in &args.checks {
        if halt().is_some() {
            break;
        }
        let s = Step { argv, cwd: &args.cwd, env: None, sandbox: policy, log: &log, what: "check", grace: args.grace, started: Some(&record) };
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
