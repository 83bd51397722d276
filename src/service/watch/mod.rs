//! `guild-hall watch`: the same observe → decide → act pass, driven continuously for every watched
//! project by file events (notify, coalesced), timers the deciders ask for, a worker's shim going
//! away, signals, and a periodic resync. An event only marks its project dirty; what to do is
//! always decided afresh by a full pass, so nothing here is truth that a restart could lose.

pub(crate) mod events;
mod options;
mod signals;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::mpsc::{channel, RecvTimeoutError};
use std::time::{Duration, Instant};

use anyhow::{anyhow, Result};
use notify::RecursiveMode;

use crate::config::{Home, Project};
use crate::reconcile::{self, HeldLock, Options};
use events::{ignore_set, is_resource_limit, make_watcher, wait_for_shim, watch_paths, Wake};
pub use options::WatchOptions;
use signals::install_signals;

/// One watched project and what the loop knows about when to look at it next.
struct Watched {
    dir: PathBuf,
    name: String,
    _lock: HeldLock,
    /// Due for a pass, and what first made it so (logged with the pass: "files", "resync", ...).
    dirty: Option<&'static str>,
    next_at: Option<Instant>,
    resync_at: Instant,
    /// Failed actions: (kind, id) → (failures in a row, not before).
    backoff: BTreeMap<reconcile::Key, (u32, Instant)>,
    /// Problems seen in the last pass (reported once they persist for two passes).
    seen: BTreeSet<String>,
    reported: BTreeSet<String>,
    /// What its passes observed, kept between them and fed by the file events.
    observed: std::sync::Arc<reconcile::Observed>,
}

impl Watched {
    /// Due for a pass; the first cause since the last pass is the one logged.
    fn wake(&mut self, cause: &'static str) {
        self.dirty.get_or_insert(cause);
    }
}

/// Run until SIGINT or SIGTERM. `dirs` empty means every project registered in the home.
// Long: the setup (signals, projects, locks, the watcher) and the one loop that wakes on
// events, timers and signals; the loop's parts are functions of `Watched`.
pub fn watch(home: &Home, dirs: &[PathBuf], opts: &WatchOptions) -> Result<()> {
    let (tx, rx) = channel::<Wake>();
    let signals = install_signals(&tx)?;
    let every_registered = dirs.is_empty();
    let mut skipped: Vec<PathBuf> = Vec::new();
    let dirs: Vec<PathBuf> = if dirs.is_empty() {
        let cfg = home.load_config()?;
        if cfg.projects.is_empty() {
            return Err(anyhow!("no projects to watch: name them (`guild-hall watch DIR…`) or register them with `guild-hall init`"));
        }
        cfg.projects.into_iter().map(|p| p.path).collect()
    } else {
        dirs.to_vec()
    };
    let mut watcher = make_watcher(&tx, opts, ignore_set(&opts.ignore, &home.state_root())?)?;
    let mut projects = Vec::new();
    for dir in &dirs {
        let project = Project::open(dir)?;
        if let Err(e) = crate::ops::ensure_set_up(&project) {
            // Named: refused. One of the registered (a checkout since reset): the others run.
            if !every_registered {
                return Err(e);
            }
            tracing::warn!(project = %dir.display(), error = %format!("{e:#}"), "not watched");
            eprintln!("guild-hall watch: skipping {}: {e:#}", dir.display());
            skipped.push(dir.clone());
            continue;
        }
        let lock = reconcile::lock_project(home, &project, false, "guild-hall watch")?;
        std::fs::create_dir_all(home.project_state(&project.name))?;
        for (path, mode) in watch_paths(home, &project)? {
            if let Err(e) = watcher.watch(&path, mode) {
                if !opts.poll && is_resource_limit(&e) {
                    tracing::error!(path = %path.display(), error = %e, "the native file watcher is out of resources (inotify watches or open files): falling back to polling for every project");
                    let mut poll = opts.clone();
                    poll.poll = true;
                    // Everything of this start goes first (the locks, this project's too: a
                    // lock conflicts with another open of it even in one process; the watcher;
                    // the channel, so its signal thread ends at the next signal).
                    drop(lock);
                    drop(projects);
                    drop(watcher);
                    drop(rx);
                    return watch(home, &dirs, &poll);
                }
                return Err(anyhow!("watching {}: {e}", path.display()));
            }
        }
        tracing::info!(project = %project.name, root = %project.root.display(), "watching");
        // `follow:`: the integration branch catches up with the person's branch at start-up
        // (under the lock, before any pass), whether or not there is new work yet.
        crate::ops::sync::follow(home, &project);
        projects.push(Watched {
            dir: project.root.clone(),
            name: project.name.clone(),
            _lock: lock,
            dirty: Some("start"),
            next_at: None,
            resync_at: Instant::now() + opts.resync,
            backoff: BTreeMap::new(),
            seen: BTreeSet::new(),
            reported: BTreeSet::new(),
            observed: Default::default(),
        });
    }
    if projects.is_empty() {
        return Err(anyhow!("no registered project is set up to watch: run `guild-hall init` in one"));
    }
    let watched: Vec<PathBuf> = dirs.iter().filter(|d| !skipped.contains(d)).cloned().collect();
    start_endpoint(home, &watched, opts)?;
    let state_root = home.state_root();
    let several = projects.len() > 1;
    let mut waiting_on: BTreeSet<PathBuf> = BTreeSet::new();
    let mut watched_dirs: BTreeSet<PathBuf> = BTreeSet::new();

    while !signals.stop.load(Ordering::SeqCst) {
        if signals.reload.swap(false, Ordering::SeqCst) {
            tracing::info!("SIGHUP: reloading configuration");
            projects.iter_mut().for_each(|p| p.wake("sighup"));
        }
        let now = Instant::now();
        for p in projects.iter_mut() {
            if p.next_at.is_some_and(|t| t <= now) {
                p.wake("timer");
            }
            if p.resync_at <= now {
                p.wake("resync");
            }
        }
        for p in projects.iter_mut().filter(|p| p.dirty.is_some()) {
            if signals.stop.load(Ordering::SeqCst) {
                break;
            }
            let cause = p.dirty.take().unwrap_or("");
            let (running, dep_dirs) = pass(home, p, opts, cause, several);
            for dir in dep_dirs {
                if watched_dirs.insert(dir.clone()) {
                    if let Err(e) = watcher.watch(&dir, RecursiveMode::NonRecursive) {
                        tracing::debug!(dir = %dir.display(), error = %e, "cannot watch a dependency's directory; the resync will see it");
                    }
                }
            }
            for dir in running {
                if waiting_on.insert(dir.clone()) {
                    wait_for_shim(dir, tx.clone());
                }
            }
        }
        // Sleep until the earliest timer or a wake (a file event, a worker's end, a signal):
        // nothing else, so at rest the watcher sleeps until the resync.
        let wake_at = projects.iter().flat_map(|p| [p.next_at, Some(p.resync_at)]).flatten().min();
        let timeout = wake_at.map(|t| t.saturating_duration_since(Instant::now())).unwrap_or(opts.resync);
        match rx.recv_timeout(timeout) {
            Ok(wake) => {
                let mut wakes = vec![wake];
                wakes.extend(rx.try_iter());
                for w in wakes {
                    match w {
                        Wake::Rescan => projects.iter_mut().for_each(|p| {
                            // Events were lost: what the passes observed is not trusted.
                            p.observed.overflowed();
                            p.wake("rescan");
                        }),
                        Wake::ShimGone(dir) => {
                            // A worker ended: capacity is global, so every project may dispatch.
                            waiting_on.remove(&dir);
                            projects.iter_mut().for_each(|p| p.wake("worker ended"));
                        }
                        Wake::Signal => {}
                        Wake::Files(paths) => {
                            for path in &paths {
                                tracing::debug!(path = %path.display(), "changed");
                                projects.iter().for_each(|p| p.observed.changed(path));
                                mark(&mut projects, path, &state_root);
                            }
                        }
                    }
                }
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return Err(anyhow!("the file watcher stopped")),
        }
    }
    tracing::info!("stopping: locks released; running workers keep running and are re-adopted on the next start");
    Ok(())
}

/// One reconcile pass for a project; returns the runtime dirs of its running workers and the
/// directories where its missing dependencies would appear.
fn pass(home: &Home, w: &mut Watched, opts: &WatchOptions, cause: &str, several: bool) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let now = Instant::now();
    w.resync_at = now + opts.resync;
    let project = match Project::open(&w.dir) {
        Ok(p) => p,
        Err(e) => {
            tracing::error!(project = %w.name, error = %format!("{e:#}"), "cannot open the project; retrying at the next resync");
            // A timer already due would wake the loop again at once, for ever: the resync it is.
            w.next_at = None;
            return (Vec::new(), Vec::new());
        }
    };
    let skip: BTreeSet<reconcile::Key> = w.backoff.iter().filter(|(_, (_, until))| *until > now).map(|(key, _)| key.clone()).collect();
    let options =
        Options { skip, observed: Some(w.observed.clone()), before_dispatch: Some(crate::ops::sync::follow), ..Options::default() };
    let report = reconcile::run(home, &project, &options, |e| {
        if let Some(say) = opts.report {
            say(several.then_some(w.name.as_str()), e);
            tracing::debug!(project = %w.name, id = %e.id, action = e.action, ok = e.ok, error = e.error.as_deref(), "{}", e.detail);
        } else if e.ok {
            tracing::info!(project = %w.name, id = %e.id, action = e.action, "{}", e.detail);
        } else {
            tracing::warn!(project = %w.name, id = %e.id, action = e.action, error = e.error.as_deref().unwrap_or(""), "{} failed", e.detail);
        }
    });
    let report = match report {
        Ok(r) => r,
        Err(e) => {
            tracing::error!(project = %w.name, error = %format!("{e:#}"), "pass failed");
            w.next_at = Some(now + Duration::from_secs(5));
            return (Vec::new(), Vec::new());
        }
    };
    tracing::debug!(project = %w.name, actions = report.entries.len(), cause, "pass");
    // Backoff per artifact (of any kind) whose action failed; a success clears it.
    for e in &report.entries {
        if e.ok {
            w.backoff.remove(&e.key());
        } else {
            let n = w.backoff.get(&e.key()).map(|(n, _)| n + 1).unwrap_or(1);
            let delay = Duration::from_secs(1u64 << n.min(8)).min(Duration::from_secs(300));
            w.backoff.insert(e.key(), (n, now + delay));
        }
    }
    // A problem is reported once it is seen in two passes in a row: an editor's half-written
    // save is read again, not reported.
    let current: BTreeSet<String> = report.problems.iter().map(|p| p.to_string()).collect();
    for p in current.intersection(&w.seen) {
        if w.reported.insert(p.clone()) {
            tracing::warn!(project = %w.name, "{p}");
        }
    }
    w.reported.retain(|p| current.contains(p));
    let recheck = current.difference(&w.seen).next().is_some();
    w.seen = current;
    let backoff_at = w.backoff.values().map(|(_, until)| *until).min();
    let recheck_at = recheck.then(|| now + Duration::from_millis(300));
    w.next_at = [report.next_check.map(|d| now + d), backoff_at, recheck_at].into_iter().flatten().min();
    (report.running, report.dependency_dirs)
}

/// Mark the project a changed path belongs to. A worker's end or a status change recorded in
/// any project's runtime state (`exit.json`, `record.json`) may free global capacity, and a
/// path we cannot place may matter to anyone: those mark every project.
fn mark(projects: &mut [Watched], path: &Path, state_root: &Path) {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if path.starts_with(state_root) && matches!(name, "exit.json" | "record.json") {
        projects.iter_mut().for_each(|p| p.wake("files"));
        return;
    }
    let mut hit = false;
    for p in projects.iter_mut() {
        if path.starts_with(&p.dir) || path.starts_with(state_root.join(&p.name)) {
            p.wake("files");
            hit = true;
        }
    }
    if !hit {
        projects.iter_mut().for_each(|p| p.wake("files"));
    }
}

/// The `worker/*` endpoint, on the socket and/or loopback port asked for, in its own threads.
fn start_endpoint(home: &Home, dirs: &[PathBuf], opts: &WatchOptions) -> Result<()> {
    if opts.socket.is_none() && opts.listen.is_none() {
        return Ok(());
    }
    let token = match &opts.listen {
        Some(_) => Some(crate::service::rpc::auth::token(home)?),
        None => None,
    };
    let ep = crate::service::rpc::Endpoint { home: home.clone(), projects: dirs.to_vec(), token, limits: opts.limits };
    if let Some(path) = &opts.socket {
        let listener = crate::service::rpc::transport::bind_socket(path)?;
        tracing::info!(socket = %path.display(), "serving worker/* on POST /mcp");
        let ep = ep.clone();
        std::thread::Builder::new()
            .name("rpc-socket".into())
            .spawn(move || crate::service::rpc::transport::serve(listener.incoming(), ep, false))?;
    }
    if let Some(addr) = &opts.listen {
        let listener = crate::service::rpc::transport::bind_loopback(addr)?;
        tracing::info!(listen = %addr, token = %home.root.join("token").display(), "serving worker/* on POST /mcp (bearer token)");
        std::thread::Builder::new()
            .name("rpc-tcp".into())
            .spawn(move || crate::service::rpc::transport::serve(listener.incoming(), ep, true))?;
    }
    Ok(())
}
