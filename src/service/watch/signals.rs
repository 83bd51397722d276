//! The watcher's signals: SIGINT/SIGTERM stop it after the action in hand, SIGHUP reloads
//! configuration. signal-hook sets the flags; the loop reads them.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::Result;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

pub(super) struct Signals {
    pub stop: Arc<AtomicBool>,
    pub reload: Arc<AtomicBool>,
}

pub(super) fn install_signals() -> Result<Signals> {
    let s = Signals { stop: Arc::new(AtomicBool::new(false)), reload: Arc::new(AtomicBool::new(false)) };
    signal_hook::flag::register(SIGINT, s.stop.clone())?;
    signal_hook::flag::register(SIGTERM, s.stop.clone())?;
    signal_hook::flag::register(SIGHUP, s.reload.clone())?;
    Ok(s)
}
