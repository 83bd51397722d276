//! The watcher's signals: SIGINT/SIGTERM stop it after the action in hand, SIGHUP reloads
//! configuration. Handlers only set flags; the loop reads them.

use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Result;

pub(super) static STOP: AtomicBool = AtomicBool::new(false);
pub(super) static RELOAD: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop(_: i32) {
    STOP.store(true, Ordering::SeqCst);
}
extern "C" fn on_hup(_: i32) {
    RELOAD.store(true, Ordering::SeqCst);
}

pub(super) fn install_signals() -> Result<()> {
    use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};
    let stop = SigAction::new(SigHandler::Handler(on_stop), SaFlags::SA_RESTART, SigSet::empty());
    let hup = SigAction::new(SigHandler::Handler(on_hup), SaFlags::SA_RESTART, SigSet::empty());
    // SAFETY: the handlers only store to atomics, which is async-signal-safe.
    unsafe {
        sigaction(Signal::SIGINT, &stop)?;
        sigaction(Signal::SIGTERM, &stop)?;
        sigaction(Signal::SIGHUP, &hup)?;
    }
    Ok(())
}
