//! The web face's one change stream: the board's file watcher ([`crate::board::watch_files`])
//! over what `watch` watches, each batch of changed paths classified as the board classifies
//! it ([`crate::board::changes`]) and handed to every open event stream. A count of batches
//! lets a page that was rendered before its stream opened learn that it missed one. A meeting
//! turn the face runs hands its events through here too, as they stream ([`TurnNews`]).

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
    /// What meeting turns run by this face said meanwhile, in order.
    pub(crate) turns: Vec<Arc<TurnNews>>,
}

/// One step of a meeting turn run by this face (`web::meeting::call`).
#[derive(Debug)]
pub(crate) struct TurnNews {
    /// The project's name.
    pub(crate) project: String,
    pub(crate) meeting: String,
    pub(crate) step: TurnStep,
}

#[derive(Debug)]
pub(crate) enum TurnStep {
    /// The turn began with the person's message.
    Began(String),
    Event(crate::meeting::events::TurnEvent),
    /// It ended (or was refused): its transcript says what was said.
    Done,
}

/// Where batches go.
#[derive(Default)]
pub(crate) struct Hub {
    listeners: Mutex<Vec<Sender<Arc<Batch>>>>,
    /// The reply so far of each turn streaming now, by project and meeting: what a page
    /// opened meanwhile shows.
    replies: Mutex<std::collections::BTreeMap<(String, String), String>>,
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

    /// Hand one step of a meeting turn to every stream.
    pub(crate) fn publish_turn(&self, news: TurnNews) {
        {
            let mut replies = self.replies.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let key = (news.project.clone(), news.meeting.clone());
            match &news.step {
                TurnStep::Began(_) => {
                    replies.insert(key, String::new());
                }
                TurnStep::Event(crate::meeting::events::TurnEvent::TextDelta { text }) => {
                    // Kept as the turn keeps it: at most its reply's limit.
                    if let Some(so_far) = replies.get_mut(&key).filter(|s| s.len() < crate::meeting::turn::REPLY_MAX) {
                        so_far.push_str(text);
                    }
                }
                TurnStep::Event(_) => {}
                TurnStep::Done => {
                    replies.remove(&key);
                }
            }
        }
        self.publish(Batch { paths: Vec::new(), changes: Changes::default(), turns: vec![Arc::new(news)] });
    }

    /// The reply so far of meeting `meeting`'s turn, if one streams now.
    pub(crate) fn turn_so_far(&self, project: &str, meeting: &str) -> Option<String> {
        let replies = self.replies.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        replies.get(&(project.to_string(), meeting.to_string())).cloned()
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
            hub.publish(Batch { paths, changes, turns: Vec::new() });
        }
    })?;
    Ok(watcher)
}
