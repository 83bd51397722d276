//! Output of commands. A closed pipe (`guild-hall status | head -1`) or a terminal that went
//! away ends output quietly instead of panicking, and never interrupts the work a command is
//! doing (a reconcile pass goes on to its end; only its report is lost).

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// Write to stdout; once a write fails (the reader is gone), further output is dropped.
pub fn stdout_bytes(bytes: &[u8]) {
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let mut out = std::io::stdout().lock();
    if out.write_all(bytes).and_then(|_| out.flush()).is_err() {
        STDOUT_CLOSED.store(true, Ordering::Relaxed);
    }
}

pub fn stdout_fmt(args: std::fmt::Arguments<'_>) {
    stdout_bytes(args.to_string().as_bytes());
}

/// Write to stderr, ignoring failure (there is nowhere left to report it).
pub fn stderr_fmt(args: std::fmt::Arguments<'_>) {
    let _ = std::io::stderr().lock().write_fmt(args);
}

/// `println!` that survives a closed stdout.
macro_rules! say {
    () => { $crate::cli::out::stdout_bytes(b"\n") };
    ($($t:tt)*) => { $crate::cli::out::stdout_fmt(format_args!("{}\n", format_args!($($t)*))) };
}

/// `print!` that survives a closed stdout.
macro_rules! say_raw {
    ($($t:tt)*) => { $crate::cli::out::stdout_fmt(format_args!($($t)*)) };
}

/// `eprintln!` that survives a closed stderr.
macro_rules! say_err {
    ($($t:tt)*) => { $crate::cli::out::stderr_fmt(format_args!("{}\n", format_args!($($t)*))) };
}

pub(crate) use {say, say_err, say_raw};
