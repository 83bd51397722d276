//! The home's index of live runs (`live-runs/` in the home): one entry per started run that
//! holds a worker slot — a commission's attempt, a wave task's, a reviewer's — naming its state
//! dir. The launch writes it before the run is started; the round's capacity lists it instead
//! of every state dir of the history, and removes the entries it proves over. It is only an
//! index: the state dirs stay the truth, and whether an entry's run is live is asked of them.
//!
//! # Why it never undercounts
//! A run is counted when its entry is listed and the state dir's own looks (its shim's lock,
//! `run.json`, a runner's handle) say it is live, so the index can only lose a count by losing
//! the entry of a run that is, or is about to be, live:
//! - **Written before the run can hold a slot.** [`register`] writes the entry (whole: a temp
//!   file renamed into place) before the runner is asked to start anything; a run whose entry
//!   cannot be written is not started. Its exclusive lock on the entry is held until the start
//!   returns, when the run shows in its state dir (`run.json`, `exit.json`, a runner's handle).
//! - **The start's window.** A reader removes an entry only under that lock, after proving the
//!   run over again under it (a start that finished between its first look and the lock shows
//!   then), and only once the entry is older than [`UNSTARTED`]: a start that gave up waiting
//!   (its shim slow to record) may leave a shim that shows later, and a shim takes its lock well
//!   within that.
//! - **Two readers at once** (reconcilers of two projects): whichever locks first removes; the
//!   other, finding the name gone, had nothing to count (the run was proven over under the
//!   lock). Names are never reused, so a removal can only ever remove the entry it proved.
//! - **Every run that holds a slot has one.** [`Ready::start`](crate::worker::launch::Ready::start)
//!   is the one place a detached run is started; what it starts is classified by its state
//!   dir's place (ids, slugs and project names are UTF-8 file stems), so a run the build before
//!   counted by walking `state/` has an entry of the same shape.
//! - **Retries.** Each start writes its own entry (`run-<attempt>-<uuid>`), so proving attempt N
//!   over never removes attempt N+1's; entries naming the same state dir are counted once.
//! - **Crashes.** A writer dead before its rename leaves a `.tmp-` file, removed once old and
//!   unlocked; dead after it, an entry whose run never started, proven over and removed. A
//!   reader dead mid-removal leaves the entry or not, its lock released by the kernel.
//! - **Upgrade.** A home whose runs a build before the index started has none: the first read
//!   walks every state dir as the build before did, registers the live runs it finds, and only
//!   then marks the index complete (`live-runs/complete`); a crash before the mark walks again.
//!   A build before that runs in the home after that (an old `watch` left running, a downgrade)
//!   starts runs the index does not see: each process's first round walks the state dirs too
//!   and registers them ([`crate::reconcile`]'s capacity), so the next process to reconcile
//!   counts them.
//!
//! Only guild-hall writes here: a confined worker's sandbox hides the whole home (it writes only
//! its worktree, its state dir's own parts, its memory and its package's `sandbox.write`, none
//! of them this dir unless a package names it there, as it could name the state dirs); an
//! unconfined one (`sandbox: off`) could write anything its user can, the index as much as the
//! state dirs it indexes. An entry is still read as hostile: its bytes must name a
//! path relative to the home's state root, in one of the shapes above, or it is removed with a
//! warning; it is never followed elsewhere.

use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path};
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result};
use nix::fcntl::{Flock, FlockArg};

use crate::activity::state::StateDir;
use crate::config::Home;

/// An entry's name starts so (`run-<attempt>-<uuid>`).
const ENTRY: &str = "run-";
/// An entry being written.
const TEMP: &str = ".tmp-";
/// Present once every live run of the home has its entry (the walk of an upgraded home done).
const COMPLETE: &str = "complete";
/// An entry's bytes are a relative path: anything longer is not one of ours.
const MAX_ENTRY: u64 = 4096;
/// How long an entry is kept whatever its run looks like: a start that gave up waiting may
/// leave a shim that records itself late (the start waits 30s for it).
pub(crate) const UNSTARTED: Duration = Duration::from_secs(120);

/// What holds the slot, by where its state dir is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Slot {
    /// A commission's attempt (`<project>/commissions/<id>`).
    Commission { id: String },
    /// A wave task's attempt (`<project>/plans/<plan>/tasks/<slug>`).
    Task,
    /// A reviewer's run (`<project>/{commissions,plans}/<id>/review-<n>-<i>`).
    Reviewer,
}

/// A run the index names: its project, what it is, its state dir.
#[derive(Debug, Clone)]
pub(crate) struct Run {
    pub(crate) project: String,
    pub(crate) slot: Slot,
    pub(crate) state: StateDir,
}

/// What the state dir at `rel` (under the state root) runs, if it is one that holds a slot.
fn classify(rel: &Path) -> Option<(String, Slot)> {
    let parts: Vec<&str> = rel.components().map(|c| if let Component::Normal(s) = c { s.to_str() } else { None }).collect::<Option<_>>()?;
    let (project, slot) = match parts.as_slice() {
        [p, "commissions", id] => (p, Slot::Commission { id: id.to_string() }),
        [p, "commissions" | "plans", _, run] if run.starts_with("review-") => (p, Slot::Reviewer),
        [p, "plans", _, "tasks", _] => (p, Slot::Task),
        _ => return None,
    };
    Some((project.to_string(), slot))
}

/// The run whose state dir is `state`, if the index keeps such runs.
pub(crate) fn run_of(home: &Home, state: &StateDir) -> Option<Run> {
    let (project, slot) = classify(state.0.strip_prefix(home.state_root()).ok()?)?;
    Some(Run { project, slot, state: state.clone() })
}

/// An entry written and locked: its run is being started. Dropped once the start has returned.
pub(crate) struct Registered {
    _lock: Flock<File>,
}

/// Write the entry of `attempt` of the run whose state dir is `state`, before it is started;
/// `None` for a run that holds no slot (a plan's verify). Held locked until dropped.
pub(crate) fn register(home: &Home, state: &StateDir, attempt: u32) -> Result<Option<Registered>> {
    // Every kind's state dir is made from the home it launches in: one outside it is a fault,
    // and its run is not started (it could not be counted).
    let Ok(rel) = state.0.strip_prefix(home.state_root()) else {
        anyhow::bail!("{} is not under the home's state dir {}: the run is not started", state.0.display(), home.state_root().display());
    };
    if classify(rel).is_none() {
        return Ok(None);
    }
    let dir = home.live_runs_dir();
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let name = format!("{ENTRY}{attempt}-{}", uuid::Uuid::new_v4().simple());
    let (temp, path) = (dir.join(format!("{TEMP}{name}")), dir.join(&name));
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&temp)
        .with_context(|| format!("creating {}", temp.display()))?;
    let mut lock = Flock::lock(file, FlockArg::LockExclusive).map_err(|(_, e)| e).with_context(|| format!("locking {}", temp.display()))?;
    lock.write_all(rel.as_os_str().as_bytes()).with_context(|| format!("writing {}", temp.display()))?;
    std::fs::rename(&temp, &path).with_context(|| format!("renaming {} to {}", temp.display(), path.display()))?;
    Ok(Some(Registered { _lock: lock }))
}

/// Whether every live run of the home has its entry ([`mark_complete`]).
pub(crate) fn complete(home: &Home) -> bool {
    home.live_runs_dir().join(COMPLETE).is_file()
}

/// Say that every live run of the home has its entry: after the walk of an upgraded home.
pub(crate) fn mark_complete(home: &Home) -> Result<()> {
    let dir = home.live_runs_dir();
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    crate::files::write_atomic(&dir.join(COMPLETE), b"every run started in this home has its entry here\n")
}

/// The runs the index names that `is_live` proves live, each state dir once. An entry whose run
/// is proven over (under its lock, and past [`UNSTARTED`]), and an entry that is not one, are
/// removed on the way.
/// `Err`: the index, or one of its entries, cannot be read (a run it names would go uncounted:
/// the round is not to start work on a count it cannot make).
pub(crate) fn live(home: &Home, is_live: impl Fn(&Run) -> bool) -> Result<Vec<Run>> {
    let dir = home.live_runs_dir();
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("reading the index of live runs {}", dir.display())),
    };
    let root = home.state_root();
    let mut found = std::collections::BTreeMap::new();
    for e in entries {
        let e = e.with_context(|| format!("reading the index of live runs {}", dir.display()))?;
        let path = e.path();
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        if name.starts_with(TEMP) {
            prune(&path, || false);
            continue;
        }
        if !name.starts_with(ENTRY) {
            continue;
        }
        // Not through a link: nothing of ours is one (the link itself is removed, not followed).
        let mut file = match std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW).open(&path) {
            Ok(file) => file,
            Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
                tracing::warn!(entry = %path.display(), "a link in the index of live runs: removed");
                let _ = std::fs::remove_file(&path);
                continue;
            }
            // Pruned by another reader since the listing.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
        };
        let run = match read_entry(&mut file, &root) {
            Ok(run) => run,
            Err(why) => {
                if try_lock(file).is_some_and(|_lock| std::fs::remove_file(&path).is_ok()) {
                    tracing::warn!(entry = %path.display(), why, "not an entry of the index of live runs: removed");
                }
                continue;
            }
        };
        if found.contains_key(&run.state.0) || is_live(&run) {
            found.entry(run.state.0.clone()).or_insert(run);
            continue;
        }
        drop(file);
        // Seen over: removed, unless its start is under way or it shows live under the lock.
        if prune(&path, || is_live(&run)) == Pruned::Live {
            found.entry(run.state.0.clone()).or_insert(run);
        }
    }
    Ok(found.into_values().collect())
}

/// What became of an entry seen over.
#[derive(Debug, PartialEq, Eq)]
enum Pruned {
    Removed,
    /// Young, or its lock held (its start under way): kept, as it was seen.
    Kept,
    /// Live when looked at again under its lock (its start finished meanwhile): kept.
    Live,
}

/// Remove the entry (or temp file) at `path` if no one holds it, it is older than
/// [`UNSTARTED`], and `is_live` still says no under its lock.
fn prune(path: &Path, is_live: impl Fn() -> bool) -> Pruned {
    let Ok(file) = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW).open(path) else { return Pruned::Removed };
    let young = file
        .metadata()
        .and_then(|m| m.modified())
        .map_or(true, |at| SystemTime::now().duration_since(at).map_or(true, |age| age < UNSTARTED));
    if young {
        return Pruned::Kept;
    }
    let Some(_lock) = try_lock(file) else { return Pruned::Kept };
    if is_live() {
        return Pruned::Live;
    }
    // Under its lock, and never renamed onto (names are not reused): the one proven over.
    let _ = std::fs::remove_file(path);
    Pruned::Removed
}

fn try_lock(file: File) -> Option<Flock<File>> {
    Flock::lock(file, FlockArg::LockExclusiveNonblock).ok()
}

/// The run an entry names: a path relative to the state root (`root`), of a shape that holds a
/// slot. `Err`: why it is not one.
fn read_entry(file: &mut File, root: &Path) -> Result<Run, &'static str> {
    let mut bytes = Vec::new();
    file.take(MAX_ENTRY + 1).read_to_end(&mut bytes).map_err(|_| "unreadable")?;
    if bytes.len() as u64 > MAX_ENTRY {
        return Err("too long");
    }
    let rel = Path::new(std::ffi::OsStr::from_bytes(&bytes));
    let (project, slot) = classify(rel).ok_or("not the state dir of a run under the home's state root")?;
    Ok(Run { project, slot, state: StateDir(root.join(rel)) })
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    /// The index's live runs, read.
    fn live(home: &Home, is_live: impl Fn(&Run) -> bool) -> Vec<Run> {
        super::live(home, is_live).expect("the index is readable")
    }

    #[test]
    fn a_run_outside_the_homes_state_dir_is_not_started() {
        let dir = tempfile::tempdir().expect("tmp");
        let home = Home { root: dir.path().join("home") };
        let elsewhere = StateDir(dir.path().join("elsewhere/p/commissions/c"));
        assert!(register(&home, &elsewhere, 1).is_err(), "it could not be counted");
    }

    /// An entry written by hand: the shapes a reader must refuse.
    fn write_entry(home: &Home, name: &str, bytes: &[u8]) -> PathBuf {
        let dir = home.live_runs_dir();
        std::fs::create_dir_all(&dir).expect("index dir");
        let path = dir.join(name);
        std::fs::write(&path, bytes).expect("entry");
        path
    }

    fn home() -> (tempfile::TempDir, Home) {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = Home::resolve(Some(&dir.path().join("home"))).expect("home");
        (dir, home)
    }

    /// Make `path`'s modification time `ago` in the past.
    fn age(path: &Path, ago: Duration) {
        let f = File::options().write(true).open(path).expect("open");
        f.set_modified(SystemTime::now() - ago).expect("set mtime");
    }

    fn entries(home: &Home) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(home.live_runs_dir())
            .expect("index dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(ENTRY))
            .collect();
        v.sort();
        v
    }

    fn age_all(home: &Home) {
        for e in std::fs::read_dir(home.live_runs_dir()).expect("index dir") {
            age(&e.expect("entry").path(), UNSTARTED * 2);
        }
    }

    #[test]
    fn runs_that_hold_a_slot_are_named_by_where_their_state_is() {
        let (_d, home) = home();
        let at = |rel: &str| run_of(&home, &StateDir(home.state_root().join(rel))).map(|r| (r.project, r.slot));
        assert_eq!(at("p/commissions/c1"), Some(("p".into(), Slot::Commission { id: "c1".into() })));
        assert_eq!(at("p/plans/x/tasks/w1-a"), Some(("p".into(), Slot::Task)));
        assert_eq!(at("p/plans/x/review-1-0"), Some(("p".into(), Slot::Reviewer)));
        assert_eq!(at("p/commissions/c1/review-2-1"), Some(("p".into(), Slot::Reviewer)));
        // A plan's verify and a meeting hold no slot; nor does anything elsewhere.
        assert_eq!(at("p/plans/x/verify"), None);
        assert_eq!(at("p/meetings/m"), None);
        assert!(run_of(&home, &StateDir(PathBuf::from("/tmp/p/commissions/c1"))).is_none());
        let verify = StateDir(home.state_root().join("p/plans/x/verify"));
        assert!(register(&home, &verify, 1).expect("register").is_none(), "no entry for what holds no slot");
    }

    #[test]
    fn an_entry_is_kept_while_its_run_is_live_or_young_and_removed_once_proven_over() {
        let (_d, home) = home();
        let state = StateDir(home.state_root().join("p/commissions/c1"));
        drop(register(&home, &state, 1).expect("register").expect("an entry"));
        let live_now = std::cell::Cell::new(false);
        // Young: kept though not live, and not counted.
        assert!(live(&home, |_| live_now.get()).is_empty());
        assert_eq!(entries(&home).len(), 1, "a young entry is kept");
        live_now.set(true);
        age_all(&home);
        let runs = live(&home, |_| live_now.get());
        assert_eq!(runs.len(), 1);
        assert_eq!(runs[0].state.0, state.0);
        assert_eq!(entries(&home).len(), 1, "a live run's entry is kept");
        live_now.set(false);
        assert!(live(&home, |_| live_now.get()).is_empty());
        assert!(entries(&home).is_empty(), "proven over: removed");
    }

    #[test]
    fn an_entry_whose_start_is_under_way_is_never_removed() {
        let (_d, home) = home();
        let state = StateDir(home.state_root().join("p/plans/x/tasks/t"));
        let held = register(&home, &state, 1).expect("register").expect("an entry");
        age_all(&home);
        assert!(live(&home, |_| false).is_empty());
        assert_eq!(entries(&home).len(), 1, "its writer holds it: the start may not show yet");
        // The start returns with the run showing: counted, then kept.
        drop(held);
        let runs = live(&home, |_| true);
        assert_eq!(runs.len(), 1);
        assert_eq!(entries(&home).len(), 1);
    }

    #[test]
    fn a_start_that_shows_while_the_reader_proves_it_over_is_counted() {
        let (_d, home) = home();
        let state = StateDir(home.state_root().join("p/commissions/c1"));
        drop(register(&home, &state, 1).expect("register").expect("an entry"));
        age_all(&home);
        // The first look says over, the one under the lock says live (the start finished in
        // between): counted, and its entry kept.
        let looks = std::cell::Cell::new(0);
        let runs = live(&home, |_| {
            looks.set(looks.get() + 1);
            looks.get() > 1
        });
        assert_eq!(runs.len(), 1);
        assert_eq!(entries(&home).len(), 1);
    }

    #[test]
    fn each_attempt_has_its_own_entry_and_a_state_dir_counts_once() {
        let (_d, home) = home();
        let state = StateDir(home.state_root().join("p/commissions/c1"));
        drop(register(&home, &state, 1).expect("register"));
        age_all(&home);
        // Attempt 2 starts (its writer holds its entry) while attempt 1 is proven over.
        let second = register(&home, &state, 2).expect("register").expect("an entry");
        age_all(&home);
        assert!(live(&home, |_| false).is_empty());
        let left = entries(&home);
        assert_eq!(left.len(), 1, "{left:?}");
        assert!(left[0].starts_with("run-2-"), "attempt 1's removal left attempt 2's: {left:?}");
        drop(second);
        drop(register(&home, &state, 2).expect("register"));
        let runs = live(&home, |_| true);
        assert_eq!(runs.len(), 1, "two entries of one state dir count once");
    }

    #[test]
    fn readers_pruning_at_once_each_count_the_live_run_and_remove_the_rest() {
        let (_d, home) = home();
        let running = StateDir(home.state_root().join("q/plans/x/tasks/t"));
        for i in 0..20 {
            drop(register(&home, &StateDir(home.state_root().join(format!("p/commissions/c{i}"))), 1).expect("register"));
        }
        drop(register(&home, &running, 1).expect("register"));
        age_all(&home);
        std::thread::scope(|s| {
            let readers: Vec<_> = (0..8)
                .map(|_| s.spawn(|| live(&home, |r| r.state.0 == running.0).into_iter().map(|r| r.state.0).collect::<Vec<_>>()))
                .collect();
            for r in readers {
                assert_eq!(r.join().expect("reader"), vec![running.0.clone()], "every reader counts the live run");
            }
        });
        assert_eq!(entries(&home).len(), 1, "only the live run's entry is left");
    }

    #[test]
    fn a_bad_entry_is_removed_and_never_followed() {
        let (dir, home) = home();
        let outside = dir.path().join("outside/commissions/c1");
        std::fs::create_dir_all(&outside).expect("mkdir");
        let bad = [
            write_entry(&home, "run-1-a", b"../outside/commissions/c1"),
            write_entry(&home, "run-1-b", outside.as_os_str().as_bytes()),
            write_entry(&home, "run-1-c", b"p/commissions/../../x"),
            write_entry(&home, "run-1-d", b"p/meetings/m"),
            write_entry(&home, "run-1-e", b""),
            write_entry(&home, "run-1-f", &vec![b'a'; MAX_ENTRY as usize + 10]),
        ];
        let target = write_entry(&home, "elsewhere", b"p/commissions/c2");
        let link = home.live_runs_dir().join("run-1-h");
        std::os::unix::fs::symlink(&target, &link).expect("link");
        let good = write_entry(&home, "run-1-g", b"p/commissions/c1");
        let asked = std::cell::RefCell::new(Vec::new());
        let runs = live(&home, |r| {
            asked.borrow_mut().push(r.state.0.clone());
            true
        });
        assert_eq!(runs.len(), 1);
        assert_eq!(*asked.borrow(), vec![home.state_root().join("p/commissions/c1")], "only the good entry's state dir is looked at");
        for b in &bad {
            assert!(!b.exists(), "{} removed", b.display());
        }
        assert!(link.symlink_metadata().is_err() && target.exists(), "the link removed, what it named left");
        assert!(good.exists());
    }

    #[test]
    fn a_writers_leftover_temp_is_removed_once_old() {
        let (_d, home) = home();
        let temp = write_entry(&home, ".tmp-run-1-x", b"p/commissions/c1");
        assert!(live(&home, |_| true).is_empty(), "a temp is no entry");
        assert!(temp.exists(), "young: its writer may be about to rename it");
        age(&temp, UNSTARTED * 2);
        live(&home, |_| true);
        assert!(!temp.exists());
    }

    #[test]
    fn the_index_is_complete_once_marked() {
        let (_d, home) = home();
        assert!(!complete(&home));
        mark_complete(&home).expect("mark");
        assert!(complete(&home));
    }
}
