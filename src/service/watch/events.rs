//! What wakes the watcher: file events (notify; the polling watcher when inotify is missing or
//! exhausted), filtered of editor droppings and our own noise and coalesced without a tick (a
//! finished write at once, a partial one once it settles), and a worker's end, seen without
//! polling by waiting on its shim's lock.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use globset::{Glob, GlobSet, GlobSetBuilder};
use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher};

use super::options::WatchOptions;
use crate::config::{Home, Project};

/// Editor droppings (vim, JetBrains safe-write, emacs) and our own temp files: never worth a
/// pass. Configurable additions come from `--ignore`.
pub(crate) const DEFAULT_IGNORES: [&str; 9] =
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
    /// A signal arrived: its flag is set; the loop looks at the flags.
    Signal,
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

/// A worker's own scratch under its runtime dir: its `TMPDIR` and its git object store. Its
/// `git add` of thousands of files is thousands of finished writes there, none of which says
/// anything to a pass (the shim's exit and the mailbox do). Spelled out per kind's layout, under
/// the home's state root only: an id may itself be `tmp`.
const SCRATCH_UNDER_STATE: [&str; 6] = [
    "*/commissions/*/tmp/**",
    "*/commissions/*/objects/**",
    "*/meetings/*/tmp/**",
    "*/meetings/*/objects/**",
    "*/plans/*/tasks/*/tmp/**",
    "*/plans/*/tasks/*/objects/**",
];

/// What never wakes the loop: editor droppings, runtime noise, a worker's scratch under
/// `state_root`, and the `extra` globs asked for.
pub(super) fn ignore_set(extra: &[String], state_root: &Path) -> Result<GlobSet> {
    globs(RUNTIME_IGNORES.iter().map(|s| s.to_string()).chain(extra.iter().cloned()), state_root)
}

/// What is never worth a look by anyone: editor droppings and a worker's scratch under
/// `state_root` (the board, which follows logs and heartbeats, filters with this).
pub(crate) fn never_news(state_root: &Path) -> Result<GlobSet> {
    globs(std::iter::empty(), state_root)
}

fn globs(more: impl Iterator<Item = String>, state_root: &Path) -> Result<GlobSet> {
    let mut b = GlobSetBuilder::new();
    let root = globset::escape(&state_root.to_string_lossy());
    let scratch = SCRATCH_UNDER_STATE.iter().map(|g| format!("{root}/{g}"));
    for g in DEFAULT_IGNORES.iter().map(|s| s.to_string()).chain(scratch).chain(more) {
        b.add(Glob::new(&g).with_context(|| format!("bad ignore pattern {g:?}"))?);
    }
    Ok(b.build()?)
}

pub(super) type AnyWatcher = Box<dyn WatchPaths>;

/// The two watcher kinds behind one face.
pub(super) trait WatchPaths {
    fn watch(&mut self, path: &Path, mode: RecursiveMode) -> notify::Result<()>;
}

impl<W: Watcher> WatchPaths for W {
    fn watch(&mut self, path: &Path, mode: RecursiveMode) -> notify::Result<()> {
        Watcher::watch(self, path, mode)
    }
}

/// The native watcher (the polling one when asked, or when the native one cannot start), its
/// raw events handed to [`coalesce`] in a thread of their own.
pub(super) fn make_watcher(tx: &Sender<Wake>, opts: &WatchOptions, ignores: GlobSet) -> Result<AnyWatcher> {
    let (raw_tx, raw_rx) = channel::<notify::Result<notify::Event>>();
    let (wake, debounce) = (tx.clone(), opts.debounce);
    std::thread::Builder::new().name("file-events".into()).spawn(move || coalesce(&raw_rx, &wake, debounce, &ignores))?;
    if !opts.poll {
        match RecommendedWatcher::new(raw_tx.clone(), notify::Config::default()) {
            Ok(w) => return Ok(Box::new(w)),
            Err(e) => tracing::error!(error = %e, "cannot create the native file watcher: falling back to polling"),
        }
    }
    let config = notify::Config::default().with_poll_interval(Duration::from_secs(1));
    Ok(Box::new(notify::PollWatcher::new(raw_tx, config)?))
}

/// How soon a file event may wake the loop.
#[derive(Debug, PartialEq, Eq)]
enum Urgency {
    /// Not a change (a read): never.
    Never,
    /// The content is final — a file closed after writing, renamed into place, or removed:
    /// at once, with whatever was waiting.
    Now,
    /// A write still under way (a created file not yet closed, data written, metadata, the
    /// polling watcher's findings): once `debounce` has passed since the first such event.
    Settle,
}

/// Whether an event is a change at all (a read is not): what may wake anything, here or on the
/// board.
pub(crate) fn is_change(kind: &EventKind) -> bool {
    urgency(kind) != Urgency::Never
}

fn urgency(kind: &EventKind) -> Urgency {
    use notify::event::{AccessKind, AccessMode, ModifyKind, RenameMode};
    match kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => Urgency::Now,
        EventKind::Access(_) => Urgency::Never,
        EventKind::Modify(ModifyKind::Name(RenameMode::To | RenameMode::Both)) | EventKind::Remove(_) => Urgency::Now,
        _ => Urgency::Settle,
    }
}

/// How many finished writes within one `debounce` wake the loop at once: a save right after
/// other activity (a cleanup's writes, say) is not held back, a storm is.
const WAKES_AT_ONCE: usize = 4;

/// Turn raw file events into wakes, until the watcher is dropped. Paths matching `ignores`
/// never wake anything. A final change wakes the loop at once (an editor's save or a tool's
/// rename-into-place needs no wait: its content is complete), up to [`WAKES_AT_ONCE`] wakes
/// within `debounce`; past that, what comes waits out the rest of that `debounce` (a storm of
/// finished writes is a few wakes per `debounce`, as a burst of partial writes is one); a partial
/// write waits out `debounce` from its first event, so a half-written file is not read
/// mid-write. At rest the thread blocks on its channel: there is no tick.
fn coalesce(raw: &Receiver<notify::Result<notify::Event>>, tx: &Sender<Wake>, debounce: Duration, ignores: &GlobSet) {
    let mut waiting: Vec<PathBuf> = Vec::new();
    let mut due: Option<Instant> = None;
    // The wakes at once of the current `debounce` window: when it began, and how many.
    let mut window: (Instant, usize) = (Instant::now(), 0);
    loop {
        let next = match due {
            None => raw.recv().map_err(|_| RecvTimeoutError::Disconnected),
            Some(at) => raw.recv_timeout(at.saturating_duration_since(Instant::now())),
        };
        let flush = match next {
            Err(RecvTimeoutError::Disconnected) => return,
            Err(RecvTimeoutError::Timeout) => true,
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "file watcher error; rescanning");
                let _ = tx.send(Wake::Rescan);
                false
            }
            Ok(Ok(event)) if event.need_rescan() => {
                let _ = tx.send(Wake::Rescan);
                false
            }
            Ok(Ok(event)) => match urgency(&event.kind) {
                Urgency::Never => false,
                urgency => {
                    let before = waiting.len();
                    waiting.extend(event.paths.into_iter().filter(|p| !ignores.is_match(p)));
                    let added = waiting.len() > before;
                    let now = Instant::now();
                    let soon = Some(window.0 + debounce).filter(|end| *end > now && window.1 >= WAKES_AT_ONCE);
                    if added && urgency == Urgency::Settle {
                        due.get_or_insert(now + debounce);
                    } else if added && soon.is_some() {
                        // A finished write after [`WAKES_AT_ONCE`] wakes in this window: at
                        // the window's end, with whatever else comes meanwhile.
                        due = due.min(soon).or(soon);
                    }
                    added && urgency == Urgency::Now && soon.is_none()
                }
            },
        };
        // A channel that never runs dry must not hold back what is due (a `recv_timeout` past
        // its deadline still returns a message when there is one).
        if flush || due.is_some_and(|at| at <= Instant::now()) {
            due = None;
            if !waiting.is_empty() {
                let now = Instant::now();
                window = if now < window.0 + debounce { (window.0, window.1 + 1) } else { (now, 1) };
                if tx.send(Wake::Files(std::mem::take(&mut waiting))).is_err() {
                    return;
                }
            }
        }
    }
}

pub(crate) fn is_resource_limit(e: &notify::Error) -> bool {
    match &e.kind {
        notify::ErrorKind::MaxFilesWatch => true,
        notify::ErrorKind::Io(io) => matches!(io.raw_os_error(), Some(code) if code == nix::libc::ENOSPC || code == nix::libc::EMFILE),
        _ => false,
    }
}

/// Wake the loop once the shim of a running worker has gone ([`crate::worker::liveness::on_shim_exit`]).
pub(super) fn wait_for_shim(state_dir: PathBuf, tx: Sender<Wake>) {
    let dir = state_dir.clone();
    crate::worker::liveness::on_shim_exit(state_dir, move || {
        let _ = tx.send(Wake::ShimGone(dir));
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use notify::event::{AccessKind, AccessMode, CreateKind, DataChange, ModifyKind, RemoveKind, RenameMode};

    fn event(kind: EventKind, path: &str) -> notify::Result<notify::Event> {
        Ok(notify::Event::new(kind).add_path(PathBuf::from(path)))
    }

    fn files(wake: Wake) -> Vec<String> {
        match wake {
            Wake::Files(paths) => paths.iter().map(|p| p.display().to_string()).collect(),
            _ => panic!("expected files"),
        }
    }

    /// A coalescer over a channel, as the watcher runs it, with an hour of debounce: anything it
    /// hands over before the channel closes was handed over at once, not after a wait.
    fn run(events: Vec<notify::Result<notify::Event>>, debounce: Duration) -> Vec<Vec<String>> {
        let (raw_tx, raw_rx) = channel();
        let (tx, rx) = channel();
        let ignores = ignore_set(&[], Path::new("/h/state")).expect("ignores");
        // Every event waits in the channel before the coalescer starts: how they group never
        // depends on how this thread and the coalescer are scheduled (a loaded machine once
        // split a storm sent one by one into two wakes).
        for e in events {
            raw_tx.send(e).expect("send");
        }
        let worker = std::thread::spawn(move || coalesce(&raw_rx, &tx, debounce, &ignores));
        let mut out = Vec::new();
        // Everything handed over at once, or after a short debounce, arrives while the
        // coalescer still runs; what an hour's debounce holds back never does.
        while let Ok(w) = rx.recv_timeout(Duration::from_secs(2)) {
            out.push(files(w));
        }
        drop(raw_tx);
        worker.join().expect("coalescer");
        out
    }

    #[test]
    fn a_finished_write_wakes_at_once_with_what_waited() {
        let hour = Duration::from_secs(3600);
        let got = run(
            vec![
                event(EventKind::Create(CreateKind::File), "/p/.lore/commissions/a.md"),
                event(EventKind::Modify(ModifyKind::Data(DataChange::Any)), "/p/.lore/commissions/a.md"),
                event(EventKind::Access(AccessKind::Close(AccessMode::Write)), "/p/.lore/commissions/a.md"),
            ],
            hour,
        );
        assert_eq!(got, vec![vec!["/p/.lore/commissions/a.md"; 3]]);
        for (kind, path) in [
            (EventKind::Modify(ModifyKind::Name(RenameMode::To)), "/p/.lore/commissions/b.md"),
            (EventKind::Remove(RemoveKind::File), "/p/.lore/commissions/c.md"),
        ] {
            assert_eq!(run(vec![event(kind, path)], hour), vec![vec![path]]);
        }
    }

    #[test]
    fn a_storm_of_finished_writes_is_a_few_wakes_then_one_per_debounce() {
        let names: Vec<String> = (0..7).map(|i| format!("/p/.lore/commissions/c{i}.md")).collect();
        let storm = |debounce| {
            let events = names.iter().map(|n| event(EventKind::Access(AccessKind::Close(AccessMode::Write)), n)).collect();
            run(events, debounce)
        };
        let each: Vec<Vec<&str>> = names.iter().take(WAKES_AT_ONCE).map(|n| vec![n.as_str()]).collect();
        // The first few at once; the rest held for the hour.
        assert_eq!(storm(Duration::from_secs(3600)), each);
        // Held only that long: the rest comes as one wake.
        let mut then = each.clone();
        then.push(names.iter().skip(WAKES_AT_ONCE).map(String::as_str).collect());
        assert_eq!(storm(Duration::from_millis(200)), then);
    }

    #[test]
    fn a_workers_scratch_under_the_state_root_never_wakes() {
        let ignores = ignore_set(&[], Path::new("/h/state")).expect("ignores");
        for noise in [
            "/h/state/p/commissions/a/tmp/x",
            "/h/state/p/commissions/a/objects/ab/cdef",
            "/h/state/p/meetings/m/objects/pack/x.pack",
            "/h/state/p/plans/pl/tasks/pl-exec-wave-1-task-1/tmp/y",
        ] {
            assert!(ignores.is_match(noise), "{noise}");
        }
        // An id may be `tmp` or `objects`; a project anywhere may live under a `tmp`.
        for signal in [
            "/h/state/p/commissions/tmp/record.json",
            "/h/state/p/commissions/objects/exit.json",
            "/tmp/p/.lore/commissions/a.md",
            "/h/state/p/commissions/a/events.jsonl",
        ] {
            assert!(!ignores.is_match(signal), "{signal}");
        }
    }

    #[test]
    fn a_partial_write_waits_and_reads_ignored_paths_never_wake() {
        let hour = Duration::from_secs(3600);
        let got = run(
            vec![
                event(EventKind::Modify(ModifyKind::Data(DataChange::Any)), "/p/.lore/commissions/a.md"),
                event(EventKind::Access(AccessKind::Open(AccessMode::Any)), "/p/.lore/commissions/b.md"),
                event(EventKind::Access(AccessKind::Close(AccessMode::Read)), "/p/.lore/commissions/b.md"),
                // An editor's swap file and a worker's log: finished writes, but never worth a pass.
                event(EventKind::Access(AccessKind::Close(AccessMode::Write)), "/p/.lore/commissions/.a.md.swp"),
                event(EventKind::Access(AccessKind::Close(AccessMode::Write)), "/h/state/p/commissions/a/attempt-1.log"),
            ],
            hour,
        );
        assert!(got.is_empty(), "woke before the debounce: {got:?}");
        // With a short debounce, the partial write is handed over once it has settled.
        let got =
            run(vec![event(EventKind::Modify(ModifyKind::Data(DataChange::Any)), "/p/.lore/commissions/a.md")], Duration::from_millis(10));
        assert_eq!(got, vec![vec!["/p/.lore/commissions/a.md"]]);
    }
}
