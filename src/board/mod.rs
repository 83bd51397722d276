//! `guild-hall board`: a live, full-screen view of the commissions, plans and meetings of one or
//! several projects, with the actions a person takes on them. A face over observe and [`ops`]
//! like the CLI: it reads what `status`, `plan show` and `meeting list` read and acts through
//! the same operations; it is woken by file events (the watcher's own, [`crate::service::watch`]),
//! so at rest it reads nothing and draws nothing.
//!
//! [`model`] (items, order, filter), [`keys`] (keys to commands) and [`view`] (drawing) are
//! pure and unit-tested; [`detail`] reads the selected item's pane; [`act`] carries commands
//! out; `term` takes the terminal and always gives it back.
//!
//! [`ops`]: crate::ops

pub(crate) mod act;
pub(crate) mod changes;
pub(crate) mod detail;
pub(crate) mod keys;
pub(crate) mod model;
mod term;
pub(crate) mod view;

use std::collections::VecDeque;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use notify::Watcher as _;
use ratatui::crossterm::event::{self, Event, KeyEventKind};

use crate::config::{Home, Project};
use crate::service::watch::events::{self as feed, Wake};

use keys::{Command, Ui};
use model::{Item, Kind};

/// How the board runs.
#[derive(Debug, Clone)]
pub struct Options {
    /// Start a reconciler (`guild-hall watch`) for the session at once, for the projects no one
    /// reconciles (else the footer offers it: `w`).
    pub reconcile: bool,
    /// Colours on (off with `NO_COLOR` or `TERM=dumb`: [`colour_wanted`]).
    pub colour: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options { reconcile: false, colour: colour_wanted() }
    }
}

/// Colours unless `NO_COLOR` is set (https://no-color.org) or the terminal is `dumb`.
pub fn colour_wanted() -> bool {
    colour_for(std::env::var_os("NO_COLOR").as_deref(), std::env::var_os("TERM").as_deref())
}

/// [`colour_wanted`] for these values of `NO_COLOR` and `TERM` (an empty `NO_COLOR` is unset,
/// as https://no-color.org says).
fn colour_for(no_color: Option<&std::ffi::OsStr>, term: Option<&std::ffi::OsStr>) -> bool {
    no_color.is_none_or(|v| v.is_empty()) && term.is_none_or(|t| t != "dumb")
}

/// What wakes the board.
enum Msg {
    Input(Event),
    Files(Wake),
    /// SIGTERM, SIGHUP or SIGINT: give the terminal back and end.
    Signal,
}

/// Runtime files that change while a worker works (its log, its heartbeat) or with a lock:
/// they refresh the detail pane at once and the list at most every [`NOISE_RELOAD`].
pub(crate) fn is_noise(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    (name.starts_with("attempt-") && name.ends_with(".log"))
        || matches!(name, "heartbeat" | "shim.lock" | "lock" | "dispatch.lock" | "board-watch.log")
        || name.ends_with(".tmp")
        || name.ends_with('~')
        || name.ends_with(".swp")
}

pub(crate) const NOISE_RELOAD: Duration = Duration::from_secs(2);
const DETAIL_EVERY: Duration = Duration::from_millis(100);

/// Watch what `watch` watches in each project ([`feed::watch_paths`]) and open meetings'
/// transcripts; each change (not a read: the board reads what it shows) is handed to `wake`
/// (the board's loop, the web face's change stream). No debouncer: its timer would tick at
/// rest; the reader takes what has come in one go. When the native watcher is out of
/// resources, the polling one.
pub(crate) fn watch_files<W>(home: &Home, projects: &[Project], wake: W) -> Result<Box<dyn notify::Watcher>>
where
    W: Fn(Wake) + Clone + Send + 'static,
{
    let mut paths = Vec::new();
    for p in projects {
        paths.extend(feed::watch_paths(home, p)?);
        let transcripts = home.transcripts_dir(&p.name);
        std::fs::create_dir_all(&transcripts).with_context(|| format!("creating {}", transcripts.display()))?;
        paths.push((transcripts, notify::RecursiveMode::NonRecursive));
    }
    // Editor droppings and a worker's scratch (its git objects, its TMPDIR: a `git add` is
    // thousands of writes) never wake the board; logs and heartbeats do (it follows them).
    let ignores = std::sync::Arc::new(feed::never_news(&home.state_root())?);
    let handler = |wake: W| {
        let ignores = ignores.clone();
        move |event: notify::Result<notify::Event>| {
            let said = match event {
                Ok(e) if e.need_rescan() => Wake::Rescan,
                Ok(e) if feed::is_change(&e.kind) => {
                    let paths: Vec<PathBuf> = e.paths.into_iter().filter(|p| !ignores.is_match(p)).collect();
                    if paths.is_empty() {
                        return;
                    }
                    Wake::Files(paths)
                }
                Ok(_) => return,
                Err(_) => Wake::Rescan,
            };
            wake(said);
        }
    };
    let mut native: Box<dyn notify::Watcher> = Box::new(notify::RecommendedWatcher::new(handler(wake.clone()), notify::Config::default())?);
    for (path, mode) in &paths {
        match native.watch(path, *mode) {
            Ok(()) => {}
            Err(e) if feed::is_resource_limit(&e) => {
                tracing::warn!(error = %e, "the native file watcher is out of resources: polling instead");
                let config = notify::Config::default().with_poll_interval(Duration::from_secs(1));
                let mut poll: Box<dyn notify::Watcher> = Box::new(notify::PollWatcher::new(handler(wake.clone()), config)?);
                for (path, mode) in &paths {
                    poll.watch(path, *mode).with_context(|| format!("watching {}", path.display()))?;
                }
                return Ok(poll);
            }
            Err(e) => return Err(e).with_context(|| format!("watching {}", path.display())),
        }
    }
    Ok(native)
}

/// Who carries out what the board writes, per project.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Holder {
    None,
    /// The watch this board started.
    Ours,
    /// Someone else's process (a `watch`, a one-shot `reconcile`), as its lock names it.
    Other(String),
}

/// What a lock file said, by its (inode, mtime, size): read again only when it changed (a
/// read is an event for every watcher of the home, the board's own included).
type LockTexts = std::collections::HashMap<PathBuf, ((u64, i64, u64), String)>;

fn holder(home: &Home, project: &Project, ours: Option<u32>, seen: &mut LockTexts) -> Holder {
    use std::os::unix::fs::MetadataExt;
    let lock = home.project_state(&project.name).join("lock");
    if !held(&lock) {
        return Holder::None;
    }
    let stamp = std::fs::metadata(&lock).map(|m| (m.ino(), m.mtime_nsec() + m.mtime() * 1_000_000_000, m.size())).unwrap_or_default();
    let who = match seen.get(&lock) {
        Some((s, who)) if *s == stamp => who.clone(),
        _ => {
            let who = model::clean(&std::fs::read_to_string(&lock).unwrap_or_default());
            seen.insert(lock, (stamp, who.clone()));
            who
        }
    };
    match ours {
        Some(pid) if who.contains(&format!("(pid {pid})")) => Holder::Ours,
        _ => Holder::Other(who),
    }
}

/// Whether a process holds the lock file at `path`, seen in `/proc/locks`: a look that takes
/// no lock (a shared one, however brief, could make a `watch` starting that instant refuse)
/// and writes nothing (no event of our own to wake the board again). Without `/proc/locks`,
/// the brief shared lock of [`crate::files::is_locked`].
pub(crate) fn held(path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = std::fs::metadata(path) else { return false };
    let Ok(locks) = std::fs::read_to_string("/proc/locks") else { return crate::files::is_locked(path) };
    locks.lines().any(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        // `1: FLOCK  ADVISORY  WRITE 1234 fd:01:5678 0 EOF`; a waiter's line has `->` after the number.
        f.get(1) == Some(&"FLOCK") && f.get(5).and_then(|d| d.rsplit(':').next()).and_then(|i| i.parse::<u64>().ok()) == Some(meta.ino())
    })
}

/// The footer's words for who reconciles.
fn reconciler_words(holders: &[Holder], ours: Option<u32>, exited: bool) -> String {
    let none = holders.iter().filter(|h| **h == Holder::None).count();
    let own = holders.iter().filter(|h| **h == Holder::Ours).count();
    if none == 0 && own == 0 {
        return match holders.first() {
            Some(Holder::Other(w)) if holders.len() == 1 => format!("reconciled by {}", w.split(" since ").next().unwrap_or(w)),
            _ => "reconciled by a running watch: the board writes intent".into(),
        };
    }
    if none == 0 {
        return format!("reconciler: this board's watch (pid {}), until q", ours.unwrap_or(0));
    }
    let exited = if exited { "the board's watch exited (see board-watch.log in the home); " } else { "" };
    if none == holders.len() {
        format!("{exited}no reconciler: w runs one for this session")
    } else {
        format!("{exited}no reconciler for {none} of {} projects: w runs one for them", holders.len())
    }
}

/// Start `guild-hall watch` for `projects`, in its own process group (a Ctrl-C meant for a
/// program the board hands the terminal to is not its), ended with the board (SIGTERM when
/// the board dies, however it dies), its log in the home's `board-watch.log`.
fn start_watch(exe: &Path, home: &Home, projects: &[&Project]) -> Result<Child> {
    use std::os::unix::process::CommandExt;
    let log = std::fs::File::create(home.root.join("board-watch.log")).context("creating board-watch.log in the home")?;
    let mut cmd = std::process::Command::new(exe);
    cmd.arg("--home").arg(&home.root).arg("watch").args(projects.iter().map(|p| &p.root));
    cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(log).process_group(0);
    // SAFETY: prctl is async-signal-safe and touches no memory of the parent's.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd.spawn().context("starting guild-hall watch")
}

/// SIGTERM to the board's own watch (workers keep running: the next reconciler adopts them),
/// SIGKILL if it has not ended in 10 s.
fn stop_watch(child: &mut Child) {
    if let Ok(pid) = i32::try_from(child.id()) {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGTERM);
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// The board's state between frames.
struct Board<'a> {
    home: &'a Home,
    projects: &'a [Project],
    names: Vec<String>,
    items: Vec<Item>,
    problems: Vec<model::Problem>,
    ui: Ui,
    detail: Option<detail::Detail>,
    loaded: Instant,
    /// What file events touched and is still to be read again (a worker's log and heartbeat
    /// are read at most every [`NOISE_RELOAD`]).
    pending: changes::Changes,
    own: Option<Child>,
    own_exited: bool,
    holders: Vec<Holder>,
    lock_texts: LockTexts,
    /// When the detail pane was last read, and whether a change waits for it (a chatty
    /// worker's log is read at most every [`DETAIL_EVERY`]).
    detail_at: Instant,
    detail_due: bool,
    /// The diff pane as last read, and whose: read again when files change or another item is
    /// selected.
    diff_of: Option<((Kind, usize, String), detail::Detail)>,
}

impl Board<'_> {
    fn visible(&self) -> Vec<&Item> {
        self.items.iter().filter(|i| i.matches(&self.ui.filter)).collect()
    }

    fn selected(&self) -> Option<&Item> {
        let v = self.visible();
        v.get(self.ui.selected.min(v.len().saturating_sub(1))).copied()
    }

    fn key_of(i: &Item) -> (Kind, usize, String) {
        (i.kind, i.project, i.id.clone())
    }

    fn reload(&mut self) {
        let (items, problems) = model::load(self.home, self.projects, chrono::Utc::now());
        self.items = items;
        self.problems = problems;
        self.pending = changes::Changes::default();
        self.settle();
    }

    /// Read again what the pending changes touch: the commissions named, a project's plans or
    /// meetings; everything only when it must.
    fn apply_pending(&mut self) {
        let began = Instant::now();
        let c = std::mem::take(&mut self.pending);
        if !model::read_again(self.home, self.projects, &mut self.items, &mut self.problems, &c) {
            // Said by a whole reading, with the problem in its words.
            return self.reload();
        }
        self.settle();
        tracing::debug!(ms = began.elapsed().as_secs_f64() * 1000.0, ?c, "read again");
    }

    /// After the items changed: the selection kept on its item, the detail and who reconciles
    /// looked at again.
    fn settle(&mut self) {
        self.loaded = Instant::now();
        // The selection stays on its item wherever the order puts it now.
        if let Some(want) = &self.ui.selected_id {
            if let Some(at) = self.visible().iter().position(|i| Board::key_of(i) == *want) {
                self.ui.selected = at;
            }
        }
        self.after_move();
        self.look_at_holders();
    }

    /// After the selection or the filter changed: the selection within the list, remembered
    /// by id, and the detail pane of what is selected.
    fn after_move(&mut self) {
        let n = self.visible().len();
        self.ui.selected = self.ui.selected.min(n.saturating_sub(1));
        let now = self.selected().map(Board::key_of);
        if now != self.ui.selected_id {
            self.ui.scroll = 0;
        }
        self.ui.selected_id = now;
        self.refresh_detail();
    }

    /// The detail pane read again now, or within [`DETAIL_EVERY`] if it just was.
    fn refresh_detail_soon(&mut self) {
        if self.detail_at.elapsed() >= DETAIL_EVERY {
            self.refresh_detail();
        } else {
            self.detail_due = true;
        }
    }

    fn refresh_detail(&mut self) {
        self.detail_at = Instant::now();
        self.detail_due = false;
        if self.ui.detail && self.ui.diff {
            return self.refresh_diff();
        }
        self.detail = match (self.ui.detail, self.selected()) {
            (true, Some(i)) => self.projects.get(i.project).map(|p| detail::load(self.home, p, i)),
            _ => None,
        };
    }

    /// The diff pane of what is selected: as last read while it is the same item and no file
    /// changed (a key that scrolls a large change reads nothing again).
    fn refresh_diff(&mut self) {
        let Some(item) = self.selected().cloned() else {
            self.detail = None;
            return;
        };
        let key = Board::key_of(&item);
        let kept = self.diff_of.as_ref().filter(|(k, _)| *k == key).map(|(_, d)| d.clone());
        let read = kept.or_else(|| self.projects.get(item.project).map(|p| detail::diff(self.home, p, &item)));
        self.diff_of = read.clone().map(|d| (key, d));
        self.detail = read;
    }

    fn look_at_holders(&mut self) {
        let ours = self.own.as_ref().map(Child::id);
        if let Some(c) = self.own.as_mut() {
            if let Ok(Some(_)) = c.try_wait() {
                self.own = None;
                self.own_exited = true;
            }
        }
        self.holders = self.projects.iter().map(|p| holder(self.home, p, ours, &mut self.lock_texts)).collect();
    }

    fn active(&self) -> bool {
        self.items.iter().any(|i| i.alive) || !self.pending.is_empty()
    }

    fn reconcile(&mut self, exe: &Path) -> Result<String> {
        self.look_at_holders();
        let free: Vec<&Project> = self.projects.iter().zip(&self.holders).filter(|(_, h)| **h == Holder::None).map(|(p, _)| p).collect();
        if free.is_empty() {
            return Ok("every project has a reconciler already".into());
        }
        if self.own.is_some() {
            bail!("the board's watch is still starting or stopping; try again");
        }
        let child = start_watch(exe, self.home, &free)?;
        let pid = child.id();
        self.own = Some(child);
        self.own_exited = false;
        // Until it holds the lock, the footer would still say no one does: wait for it briefly.
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            self.look_at_holders();
            if self.own.is_none() || self.holders.iter().all(|h| *h != Holder::None) {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        if self.own.is_none() {
            bail!("guild-hall watch (pid {pid}) ended at once: see board-watch.log in the home");
        }
        Ok(format!("started guild-hall watch (pid {pid}) for this session"))
    }
}

/// Run the board over `projects` until `q` (or SIGTERM, SIGHUP, SIGINT).
pub fn run(home: &Home, projects: Vec<Project>, opts: &Options) -> Result<()> {
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        bail!("the board needs a terminal (for a script: `guild-hall status --json`, `plan list --json`, `meeting list --json`)");
    }
    if projects.is_empty() {
        bail!("no projects to show: name them (-C DIR) or register them with `guild-hall init` (then --all)");
    }
    let exe = std::env::current_exe().context("finding this program")?;
    let (tx, rx) = channel::<Msg>();

    // File events on what the watcher watches, handed over as they come: no timer runs at rest.
    let files = tx.clone();
    let _watcher = watch_files(home, &projects, move |wake| {
        let _ = files.send(Msg::Files(wake));
    })?;
    let signal_handle = forward_signals(tx.clone())?;
    let gate = forward_keys(tx)?;

    let mut board = Board::new(home, &projects);
    board.reload();
    if opts.reconcile {
        board.ui.message = Some(board.reconcile(&exe).unwrap_or_else(|e| format!("error: {e:#}")));
    }

    let restore = term::Restore;
    let mut t = term::take()?;
    let _ = gate.send(());
    let started = Instant::now();
    let result = (|| -> Result<()> {
        let mut redraw = true;
        let mut backlog = VecDeque::new();
        loop {
            if std::mem::replace(&mut redraw, true) {
                draw(&mut t, &board, &words_of(&board), opts, started)?;
            }
            // At rest (nothing running, nothing to catch up on) the board sleeps until an event.
            let msg = if let Some(m) = backlog.pop_front() {
                Some(m)
            } else if board.active() || board.detail_due {
                let wait = if board.detail_due { DETAIL_EVERY } else { Duration::from_secs(1) };
                match rx.recv_timeout(wait) {
                    Ok(m) => Some(m),
                    Err(RecvTimeoutError::Timeout) => None,
                    Err(RecvTimeoutError::Disconnected) => return Ok(()),
                }
            } else {
                match rx.recv() {
                    Ok(m) => Some(m),
                    Err(_) => return Ok(()),
                }
            };
            // File events that came together are taken together (one save is several events;
            // a pass writes many files); anything else waits its turn.
            let msg = match msg {
                Some(Msg::Files(first)) => Some(Msg::Files(files_together(first, &rx, &mut backlog))),
                other => other,
            };
            match msg {
                None => {
                    if board.detail_due {
                        board.refresh_detail();
                    }
                    if !board.pending.is_empty() && board.loaded.elapsed() >= NOISE_RELOAD {
                        board.apply_pending();
                    } else {
                        board.look_at_holders();
                    }
                }
                Some(Msg::Signal) => return Ok(()),
                Some(Msg::Files(Wake::Files(paths))) if paths.is_empty() => redraw = false,
                Some(Msg::Files(Wake::Files(paths))) => board.on_files(&paths),
                Some(Msg::Files(_)) => board.reload(),
                Some(Msg::Input(e)) => {
                    let quit = handle_input(&mut board, e, &exe, &mut t)?;
                    let _ = gate.send(());
                    if quit {
                        return Ok(());
                    }
                }
            }
        }
    })();
    signal_handle.close();
    drop(restore);
    drop(t);
    if let Some(mut c) = board.own.take() {
        stop_watch(&mut c);
    }
    result
}

/// Forward the first SIGTERM, SIGHUP or SIGINT to the board (a SIGINT while a program the board
/// handed the terminal to runs is that program's); the handle closes the forwarding.
fn forward_signals(tx: Sender<Msg>) -> Result<signal_hook::iterator::Handle> {
    let mut signals =
        signal_hook::iterator::Signals::new([signal_hook::consts::SIGTERM, signal_hook::consts::SIGHUP, signal_hook::consts::SIGINT])?;
    let handle = signals.handle();
    std::thread::Builder::new().name("board-signals".into()).spawn(move || {
        for signal in signals.forever() {
            if signal == signal_hook::consts::SIGINT && term::HANDED_OVER.load(std::sync::atomic::Ordering::SeqCst) {
                continue;
            }
            let _ = tx.send(Msg::Signal);
            break;
        }
    })?;
    Ok(handle)
}

/// Forward keys to the board: one read at a time, each only once the last is handled (a send on
/// the gate returned), so that nothing is read from the terminal while a program the board
/// handed it to runs.
fn forward_keys(tx: Sender<Msg>) -> Result<Sender<()>> {
    let (gate, gate_rx) = channel::<()>();
    std::thread::Builder::new().name("board-keys".into()).spawn(move || {
        while gate_rx.recv().is_ok() {
            match event::read() {
                Ok(e) => {
                    if tx.send(Msg::Input(e)).is_err() {
                        break;
                    }
                }
                Err(_) => break,
            }
        }
    })?;
    Ok(gate)
}

/// `first` and the file events queued behind it, as one wake (a rescan if any of them is); the
/// first message of another kind waits in `backlog`.
fn files_together(first: Wake, rx: &Receiver<Msg>, backlog: &mut VecDeque<Msg>) -> Wake {
    let mut paths = Vec::new();
    let mut rescan = false;
    let mut take = |w: Wake| match w {
        Wake::Files(p) => paths.extend(p),
        _ => rescan = true,
    };
    take(first);
    while let Ok(m) = rx.try_recv() {
        match m {
            Msg::Files(w) => take(w),
            other => {
                backlog.push_back(other);
                break;
            }
        }
    }
    if rescan {
        Wake::Rescan
    } else {
        Wake::Files(paths)
    }
}

impl<'a> Board<'a> {
    /// A board of `projects`, not loaded yet.
    fn new(home: &'a Home, projects: &'a [Project]) -> Board<'a> {
        Board {
            home,
            projects,
            names: projects.iter().map(|p| p.name.clone()).collect(),
            items: Vec::new(),
            problems: Vec::new(),
            ui: Ui::default(),
            detail: None,
            loaded: Instant::now(),
            pending: changes::Changes::default(),
            own: None,
            own_exited: false,
            holders: Vec::new(),
            lock_texts: LockTexts::new(),
            detail_at: Instant::now(),
            detail_due: false,
            diff_of: None,
        }
    }

    /// Files changed at `paths` (not none): what they touch is applied now, or soon when only
    /// logs and heartbeats changed.
    fn on_files(&mut self, paths: &[PathBuf]) {
        tracing::debug!(?paths, "file events");
        self.diff_of = None;
        let touched = changes::classify(self.home, self.projects, paths);
        let detail = touched.detail;
        self.pending.merge(touched);
        if paths.iter().all(|p| is_noise(p)) && self.loaded.elapsed() < NOISE_RELOAD {
            // A log or heartbeat: the pane follows at once, the list in a while.
            self.refresh_detail_soon();
            self.look_at_holders();
        } else if self.pending.is_empty() {
            if detail {
                self.refresh_detail();
            }
            self.look_at_holders();
        } else {
            self.apply_pending();
        }
    }
}

fn words_of(board: &Board<'_>) -> String {
    reconciler_words(&board.holders, board.own.as_ref().map(Child::id), board.own_exited)
}

/// Draw a frame of the board as it is.
fn draw(t: &mut term::Term, board: &Board<'_>, words: &str, opts: &Options, started: Instant) -> Result<()> {
    let shown = board.visible();
    let problems: Vec<String> = board.problems.iter().map(|(_, _, why)| why.clone()).collect();
    let screen = view::Screen {
        items: &shown,
        total: board.items.len(),
        ui: &board.ui,
        projects: &board.names,
        reconciler: words,
        detail: board.detail.as_ref(),
        problems: &problems,
        now: chrono::Utc::now(),
        tick: started.elapsed().as_secs(),
        colour: opts.colour,
    };
    t.draw(|f| view::draw(f, &screen))?;
    Ok(())
}

/// One input event: `true` to quit.
fn handle_input(board: &mut Board<'_>, e: Event, exe: &Path, t: &mut term::Term) -> Result<bool> {
    let Event::Key(key) = e else {
        // A resize is drawn by the next frame (the terminal is measured as it draws).
        return Ok(false);
    };
    if key.kind == KeyEventKind::Release {
        return Ok(false);
    }
    // The hidden fault switch of the tests: a panic, to prove the terminal is given back.
    if key.code == ratatui::crossterm::event::KeyCode::Char('!') && std::env::var("GUILD_HALL_FAULT").is_ok_and(|f| f == "board-panic:1") {
        panic!("guild-hall: fault injection: the board panics");
    }
    let visible = board.visible().len();
    let selected = board.selected().cloned();
    let cmd = board.ui.on_key(key, visible, selected.as_ref());
    board.after_move();
    let Some(cmd) = cmd else { return Ok(false) };
    let said = match cmd {
        Command::Quit => return Ok(true),
        Command::Reconcile => board.reconcile(exe),
        _ => {
            let project = selected.as_ref().and_then(|i| board.projects.get(i.project)).unwrap_or(&board.projects[0]);
            let mut run = |p: &mut std::process::Command| term::hand_over(t, p);
            let comment = std::mem::take(&mut board.ui.comment);
            let mut ctx = act::Ctx { home: board.home, project, exe, run: &mut run, comment: &comment, typed: &board.ui.typed };
            act::carry_out(cmd, selected.as_ref(), &mut ctx)
        }
    };
    board.ui.message = match said {
        Ok(words) if words.is_empty() => None,
        Ok(words) => Some(model::clean(&words)),
        Err(e) => Some(model::clean(&format!("error: {e:#}"))),
    };
    board.reload();
    Ok(false)
}

/// The projects of `--all`: every one registered in the home.
pub fn registered(home: &Home) -> Result<Vec<PathBuf>> {
    Ok(home.load_config()?.projects.into_iter().map(|p| p.path).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    #[test]
    fn no_colour_with_no_color_or_a_dumb_terminal() {
        let x = Some(OsStr::new("xterm-256color"));
        assert!(colour_for(None, x));
        assert!(colour_for(Some(OsStr::new("")), x));
        assert!(!colour_for(Some(OsStr::new("1")), x));
        assert!(!colour_for(None, Some(OsStr::new("dumb"))));
        assert!(colour_for(None, None));
    }

    #[test]
    fn the_footer_says_who_reconciles() {
        let watch = Holder::Other("guild-hall watch (pid 42) since 2026-11-28T10:00:00Z".into());
        assert_eq!(reconciler_words(std::slice::from_ref(&watch), None, false), "reconciled by guild-hall watch (pid 42)");
        assert_eq!(reconciler_words(&[Holder::None], None, false), "no reconciler: w runs one for this session");
        assert_eq!(reconciler_words(&[Holder::Ours], Some(7), false), "reconciler: this board's watch (pid 7), until q");
        assert!(reconciler_words(&[Holder::None, watch], None, true).starts_with("the board's watch exited"));
    }

    #[test]
    fn logs_heartbeats_and_locks_are_noise() {
        for p in ["/h/state/p/commissions/a/attempt-2.log", "/h/state/p/commissions/a/heartbeat", "/h/state/p/lock", "/r/.lore/x.md~"] {
            assert!(is_noise(Path::new(p)), "{p}");
        }
        for p in ["/r/.lore/commissions/a.md", "/h/state/p/commissions/a/exit.json", "/h/state/p/commissions/a/events.jsonl"] {
            assert!(!is_noise(Path::new(p)), "{p}");
        }
    }
}
