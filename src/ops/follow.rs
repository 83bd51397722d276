//! Following a file as it grows until what writes it has ended (`logs -f`, `timeline -f`): woken
//! by file events on the directories it lives in, with a periodic look besides (an event can be
//! lost, a directory can appear later, a file system may send none). What grows, and when it
//! ends, is the caller's; the order that never misses the last lines is here.

use std::path::PathBuf;
use std::sync::mpsc::{channel, Receiver};
use std::time::Duration;

use anyhow::Result;
use notify::{RecursiveMode, Watcher};

/// The look taken though no event came.
const FALLBACK: Duration = Duration::from_millis(500);

/// Wakes on any change under the directories it was given, or after [`FALLBACK`].
struct Waker {
    /// Kept alive for its events; `None` when no watcher could be made (the fallback alone).
    _watcher: Option<notify::RecommendedWatcher>,
    rx: Receiver<()>,
}

impl Waker {
    fn new(dirs: &[PathBuf]) -> Waker {
        let (tx, rx) = channel();
        let watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
            // A read is no change (our own reads among them: waking on them would spin).
            let read = event.as_ref().is_ok_and(|e| {
                matches!(e.kind, notify::EventKind::Access(a) if a != notify::event::AccessKind::Close(notify::event::AccessMode::Write))
            });
            if !read {
                let _ = tx.send(());
            }
        })
        .ok()
        .map(|mut w| {
            for d in dirs {
                // A directory not there yet is found by the fallback look.
                if let Err(e) = w.watch(d, RecursiveMode::NonRecursive) {
                    tracing::debug!(dir = %d.display(), error = %e, "following without file events there");
                }
            }
            w
        });
        Waker { _watcher: watcher, rx }
    }

    /// Until something changed, or the fallback look is due; what came meanwhile is taken too.
    fn wait(&self) {
        if self.rx.recv_timeout(FALLBACK).is_ok() {
            while self.rx.try_recv().is_ok() {}
        }
    }
}

/// Show what is new (`show_new`) until `ended` says the writer is done, then once more and
/// return. Whether it ended is asked before what is new is read: whatever was written before
/// the end is read after it, so the last lines are never missed.
pub(crate) fn until_ended(
    dirs: &[PathBuf],
    mut ended: impl FnMut() -> Result<bool>,
    mut show_new: impl FnMut() -> Result<()>,
) -> Result<()> {
    let waker = Waker::new(dirs);
    loop {
        let over = ended()?;
        show_new()?;
        if over {
            return Ok(());
        }
        waker.wait();
    }
}
