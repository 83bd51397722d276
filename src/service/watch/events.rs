//! What wakes the watcher: debounced file events (notify; the polling watcher when inotify is
//! missing or exhausted), filtered of editor droppings and our own noise, and a worker's end,
//! seen without polling by waiting on its shim's lock.

use std::path::{Path, PathBuf};
use std::sync::mpsc::Sender;
use std::time::Duration;

use anyhow::{Context, Result};
use globset::{Glob, GlobSet, GlobSetBuilder};
use notify::{RecommendedWatcher, RecursiveMode, Watcher};
use notify_debouncer_full::{new_debouncer_opt, DebounceEventResult, Debouncer, RecommendedCache};

use super::WatchOptions;
use crate::config::{Home, Project};

/// Editor droppings (vim, JetBrains safe-write, emacs) and our own temp files: never worth a
/// pass. Configurable additions come from `--ignore`.
pub const DEFAULT_IGNORES: [&str; 9] =
    ["**/*~", "**/.*.swp", "**/.*.swx", "**/4913", "**/*___jb_tmp___", "**/*___jb_old___", "**/#*#", "**/.#*", "**/.*.guild-hall-*.tmp"];

/// Runtime files whose changes need no pass: worker output and the heartbeat are judged at the
/// heartbeat deadline (a pass per line of output would cost a core on a large project), and
/// locks and prompts change only with our own actions.
const RUNTIME_IGNORES: [&str; 7] =
    ["**/attempt-*.log", "**/heartbeat", "**/shim.lock", "**/lock", "**/dispatch.lock", "**/prompt.md", "**/system-prompt.md"];

/// What wakes the loop.
pub(crate) enum Wake {
    Files(Vec<PathBuf>),
    /// The notify backend lost events: look at everything again.
    Rescan,
    /// A worker's shim released its lock: it has exited (however it died).
    ShimGone(PathBuf),
}

pub(crate) fn watch_paths(home: &Home, project: &Project) -> Result<Vec<(PathBuf, RecursiveMode)>> {
    let lore = project.root.join(".lore");
    std::fs::create_dir_all(&lore)?;
    let repo = git2::Repository::open(&project.root)?;
    let gitdir = repo.path().to_path_buf();
    let common = repo.commondir().to_path_buf();
    let mut paths = vec![(lore, RecursiveMode::Recursive), (gitdir.clone(), RecursiveMode::NonRecursive)];
    if common != gitdir {
        paths.push((common.clone(), RecursiveMode::NonRecursive));
    }
    paths.push((common.join("refs"), RecursiveMode::Recursive));
    let state = home.state_root();
    std::fs::create_dir_all(&state)?;
    paths.push((state, RecursiveMode::Recursive));
    // The home's worker packages: one written there unblocks commissions waiting for it (a
    // path there belongs to no one project, so it wakes every one).
    let workers = home.workers_dir();
    std::fs::create_dir_all(&workers)?;
    paths.push((workers, RecursiveMode::Recursive));
    Ok(paths)
}

pub(super) fn ignore_set(extra: &[String]) -> Result<GlobSet> {
    let mut b = GlobSetBuilder::new();
    for g in DEFAULT_IGNORES.iter().chain(&RUNTIME_IGNORES).map(|s| s.to_string()).chain(extra.iter().cloned()) {
        b.add(Glob::new(&g).with_context(|| format!("bad ignore pattern {g:?}"))?);
    }
    Ok(b.build()?)
}

pub(crate) type AnyDebouncer = Box<dyn WatchPaths>;

/// The two watcher kinds behind one face.
pub(crate) trait WatchPaths {
    fn watch(&mut self, path: &Path, mode: RecursiveMode) -> notify::Result<()>;
}

impl<W: Watcher> WatchPaths for Debouncer<W, RecommendedCache> {
    fn watch(&mut self, path: &Path, mode: RecursiveMode) -> notify::Result<()> {
        Debouncer::watch(self, path, mode)
    }
}

pub(crate) fn make_debouncer(tx: &Sender<Wake>, opts: &WatchOptions) -> Result<AnyDebouncer> {
    let tx = tx.clone();
    let handler = move |res: DebounceEventResult| {
        let wake = match res {
            Ok(events) if events.iter().any(|e| e.need_rescan()) => Wake::Rescan,
            // Reads are events too (inotify open/close): only changes may wake the loop, or
            // every pass would wake the next.
            Ok(events) => Wake::Files(events.into_iter().filter(|e| is_change(&e.event.kind)).flat_map(|e| e.event.paths).collect()),
            Err(errors) => {
                for e in &errors {
                    tracing::warn!(error = %e, "file watcher error; rescanning");
                }
                Wake::Rescan
            }
        };
        let _ = tx.send(wake);
    };
    // Events are handed over on the tick after they are `debounce` old: ticking at the debounce
    // interval keeps latency under two intervals and halves the wakeups at rest.
    let tick = Some(opts.debounce);
    if !opts.poll {
        match new_debouncer_opt::<_, RecommendedWatcher, _>(
            opts.debounce,
            tick,
            handler.clone(),
            RecommendedCache::new(),
            notify::Config::default(),
        ) {
            Ok(d) => return Ok(Box::new(d)),
            Err(e) => tracing::error!(error = %e, "cannot create the native file watcher: falling back to polling"),
        }
    }
    let config = notify::Config::default().with_poll_interval(Duration::from_secs(1));
    let d = new_debouncer_opt::<_, notify::PollWatcher, _>(opts.debounce, tick, handler, RecommendedCache::new(), config)?;
    Ok(Box::new(d))
}

pub(crate) fn is_change(kind: &notify::EventKind) -> bool {
    use notify::event::{AccessKind, AccessMode, EventKind};
    match kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) => false,
        _ => true,
    }
}

pub(crate) fn is_resource_limit(e: &notify::Error) -> bool {
    match &e.kind {
        notify::ErrorKind::MaxFilesWatch => true,
        notify::ErrorKind::Io(io) => matches!(io.raw_os_error(), Some(code) if code == nix::libc::ENOSPC || code == nix::libc::EMFILE),
        _ => false,
    }
}

/// Block (in a thread) until the shim of a running worker has gone, then wake the loop. The
/// kernel releases the shim's lock however it dies, so this needs no polling.
pub(super) fn wait_for_shim(state_dir: PathBuf, tx: Sender<Wake>) {
    let spawned = std::thread::Builder::new().name("shim-waiter".into()).spawn(move || {
        let lock = crate::activity::state::StateDir(state_dir.clone()).shim_lock();
        if lock.exists() {
            let _ = crate::files::lock(&lock, crate::files::Lock::Shared);
        }
        let _ = tx.send(Wake::ShimGone(state_dir));
    });
    if let Err(e) = spawned {
        tracing::warn!(error = %e, "cannot start a shim waiter; the resync will notice the worker's end");
    }
}
