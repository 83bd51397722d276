//! The watcher's signals: SIGINT/SIGTERM stop it after the action in hand, SIGHUP reloads
//! configuration. signal-hook sets the flags the loop reads and wakes the loop through its
//! channel, so the loop never polls for them.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;

use anyhow::Result;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

use super::events::Wake;

pub(super) struct Signals {
    pub(crate) stop: Arc<AtomicBool>,
    pub(crate) reload: Arc<AtomicBool>,
}

pub(super) fn install_signals(tx: &Sender<Wake>) -> Result<Signals> {
    let s = Signals { stop: Arc::new(AtomicBool::new(false)), reload: Arc::new(AtomicBool::new(false)) };
    // The flags are set in the handler itself: a stop asked for mid-pass is seen between
    // actions even before the thread below runs.
    signal_hook::flag::register(SIGINT, s.stop.clone())?;
    signal_hook::flag::register(SIGTERM, s.stop.clone())?;
    signal_hook::flag::register(SIGHUP, s.reload.clone())?;
    let mut incoming = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])?;
    let (tx, stop) = (tx.clone(), s.stop.clone());
    std::thread::Builder::new().name("signals".into()).spawn(move || {
        for signal in incoming.forever() {
            if tx.send(Wake::Signal).is_err() || (signal != SIGHUP && stop.load(Ordering::SeqCst)) {
                return;
            }
        }
    })?;
    Ok(s)
}
