//! The web face's one change stream: the board's file watcher ([`crate::board::watch_files`])
//! over what `watch` watches, each batch of changed paths classified as the board classifies
//! it ([`crate::board::changes`]) and handed to every open event stream. A count of batches
//! lets a page that was rendered before its stream opened learn that it missed one.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};

use anyhow::Result;

use crate::board::changes::{classify, Changes};
use crate::config::{Home, Project};
use crate::service::watch::events::Wake;

/// One batch of changes: the paths (what a page following one file looks at) and what they
/// touch.
#[derive(Debug, Clone)]
pub(crate) struct Batch {
    pub(crate) paths: Vec<PathBuf>,
    pub(crate) changes: Changes,
}

/// Where batches go.
#[derive(Default)]
pub(crate) struct Hub {
    listeners: Mutex<Vec<Sender<Arc<Batch>>>>,
    /// Batches handed out since the server started.
    generation: AtomicU64,
}

impl Hub {
    /// The batches from now on.
    pub(crate) fn subscribe(&self) -> Receiver<Arc<Batch>> {
        let (tx, rx) = channel();
        self.listeners.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(tx);
        rx
    }

    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    fn publish(&self, batch: Batch) {
        let batch = Arc::new(batch);
        let mut listeners = self.listeners.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        self.generation.fetch_add(1, Ordering::SeqCst);
        // A stream that ended dropped its receiver: it is forgotten here.
        listeners.retain(|l| l.send(batch.clone()).is_ok());
    }
}

/// Start watching `projects`' files into `hub`; the watcher runs while the returned value is
/// kept.
pub(crate) fn start(home: &Home, projects: &[Project], hub: Arc<Hub>) -> Result<Box<dyn notify::Watcher>> {
    let (tx, rx) = channel::<Wake>();
    let watcher = crate::board::watch_files(home, projects, move |w| {
        let _ = tx.send(w);
    })?;
    let (home, projects) = (home.clone(), projects.to_vec());
    std::thread::Builder::new().name("web-changes".into()).spawn(move || {
        // What came in one go is one batch: a save is several events.
        while let Ok(first) = rx.recv() {
            let mut paths = Vec::new();
            let mut all = false;
            for w in std::iter::once(first).chain(rx.try_iter()) {
                match w {
                    Wake::Files(p) => paths.extend(p),
                    _ => all = true,
                }
            }
            let mut changes = classify(&home, &projects, &paths);
            changes.all |= all;
            hub.publish(Batch { paths, changes });
        }
    })?;
    Ok(watcher)
}
