//! What a long-running watch observed, kept between its passes: per kind, by artifact path, the
//! files a judgement was read from with their stamps (size, mtime, inode) and what was judged,
//! fed by the watcher's file events as kube's reflector is fed by its watch ([`Store`]); every
//! kind reads its artifacts through it the one way, [`Reading`] (plans and meetings by
//! [`observe_not_at_rest`]); and lines read from git history, kept by the commit ids they were
//! read from ([`ByTips`]). Only a shortcut: a stamp that differs, an event for one of the files
//! or an overflowed event queue makes the next pass read again; without a store a pass reads.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use super::kind::Name;
use crate::artifact::Problem;

/// A file as last seen: size, mtime (ns) and inode; `None` when it did not exist. Any write
/// changes one of them (a rename into place changes the inode), so equal stamps mean the same
/// bytes for every file guild-hall and editors write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stamp {
    len: u64,
    mtime_ns: i128,
    ino: u64,
}

/// `path`'s stamp now (`None`: it does not exist, or cannot be looked at).
pub(crate) fn stamp(path: &Path) -> Option<Stamp> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).ok()?;
    Some(Stamp { len: m.len(), mtime_ns: m.mtime() as i128 * 1_000_000_000 + m.mtime_nsec() as i128, ino: m.ino() })
}

/// The files a judgement was read from, each with its stamp then.
type Files = Vec<(PathBuf, Option<Stamp>)>;

/// `files`, each stamped now (before it is read: a write meanwhile then shows as a changed
/// stamp next time).
fn stamped(files: impl IntoIterator<Item = PathBuf>) -> Files {
    files
        .into_iter()
        .map(|f| {
            let then = stamp(&f);
            (f, then)
        })
        .collect()
}

/// One judgement: the files it was read from, each with its stamp then, and what it came to.
/// The files are shared so that a look-up takes them out of the lock without copying them.
#[derive(Debug, Clone)]
struct Entry<V> {
    files: Arc<[(PathBuf, Option<Stamp>)]>,
    value: V,
}

/// The store: per (kind, artifact path), the last judgement and the files it rests on; a
/// reverse index from each file to the judgements resting on it, for the watcher's events.
#[derive(Debug)]
pub(crate) struct Store<V> {
    inner: Mutex<Inner<V>>,
}

#[derive(Debug)]
struct Inner<V> {
    /// By kind, then by artifact path: looked up by a borrowed path, with no allocation.
    entries: HashMap<Name, HashMap<PathBuf, Entry<V>>>,
    by_file: HashMap<PathBuf, BTreeSet<(Name, PathBuf)>>,
}

impl<V> Default for Store<V> {
    fn default() -> Self {
        Store { inner: Mutex::new(Inner { entries: HashMap::new(), by_file: HashMap::new() }) }
    }
}

impl<V: Clone> Store<V> {
    /// What was judged of `kind`'s artifact at `key`, if every file it was read from still has
    /// the stamp it had then (one `stat` each); else `None`, and the judgement is dropped.
    pub(crate) fn get(&self, kind: Name, key: &Path) -> Option<V> {
        let files = {
            let inner = self.inner.lock().ok()?;
            Arc::clone(&inner.entry(kind, key)?.files)
        };
        // Stamped outside the lock: passes of several threads look up at once.
        if files.iter().all(|(path, then)| stamp(path) == *then) {
            let inner = self.inner.lock().ok()?;
            return inner.entry(kind, key).map(|e| e.value.clone());
        }
        self.forget(kind, key);
        None
    }

    /// Remember `value` as judged of `kind`'s artifact at `key` from `files` with these stamps
    /// (taken before the files were read: a write meanwhile then shows as a changed stamp).
    pub(crate) fn put(&self, kind: Name, key: &Path, files: Files, value: V) {
        let Ok(mut inner) = self.inner.lock() else { return };
        let k = (kind, key.to_path_buf());
        inner.remove(kind, key);
        for (f, _) in &files {
            inner.by_file.entry(f.clone()).or_default().insert(k.clone());
        }
        inner.entries.entry(kind).or_default().insert(k.1, Entry { files: files.into(), value });
    }

    /// Whether a judgement of `kind`'s artifact at `key` is held, its files not looked at: for a
    /// question asked in the round that just compared their stamps ([`Store::get`]), about
    /// what only that pass writes (an event still drops it).
    pub(crate) fn holds(&self, kind: Name, key: &Path) -> bool {
        self.inner.lock().is_ok_and(|inner| inner.entry(kind, key).is_some())
    }

    /// Drop what was judged of `kind`'s artifact at `key`.
    pub(crate) fn forget(&self, kind: Name, key: &Path) {
        if let Ok(mut inner) = self.inner.lock() {
            inner.remove(kind, key);
        }
    }
}

impl<V> Store<V> {
    /// A watcher's event for `path`: every judgement read from it (or about it) is dropped.
    pub(crate) fn changed(&self, path: &Path) {
        let Ok(mut inner) = self.inner.lock() else { return };
        let mut gone: Vec<(Name, PathBuf)> = inner.by_file.get(path).map(|ks| ks.iter().cloned().collect()).unwrap_or_default();
        gone.extend(Name::ALL.iter().map(|&k| (k, path.to_path_buf())));
        for (kind, key) in gone {
            inner.remove(kind, &key);
        }
    }

    /// Events were lost (the watcher's queue overflowed, or it rescans): nothing is known.
    pub(crate) fn overflowed(&self) {
        if let Ok(mut inner) = self.inner.lock() {
            inner.entries.clear();
            inner.by_file.clear();
        }
    }

    /// How many judgements are held.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.inner.lock().map(|i| i.entries.values().map(HashMap::len).sum()).unwrap_or(0)
    }
}

impl<V> Inner<V> {
    fn entry(&self, kind: Name, key: &Path) -> Option<&Entry<V>> {
        self.entries.get(&kind)?.get(key)
    }

    fn remove(&mut self, kind: Name, key: &Path) {
        let Some(e) = self.entries.get_mut(&kind).and_then(|by_path| by_path.remove(key)) else { return };
        let k = (kind, key.to_path_buf());
        for (f, _) in e.files.iter() {
            if let Some(ks) = self.by_file.get_mut(f) {
                ks.remove(&k);
                if ks.is_empty() {
                    self.by_file.remove(f);
                }
            }
        }
    }
}

/// What the store says of a plan or a meeting: at rest, nothing for a pass to do until one of
/// the files it was judged from changes ([`observe_not_at_rest`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AtRest;

/// One observation of a kind's artifacts through a watch's store, the one way every kind reads
/// through it: an artifact whose judgement the store holds (every file it was judged from
/// keeps its stamp) is left out; the files of each other one are stamped before it is read,
/// and what it is judged to be is remembered (or, judged nothing, forgotten). Without a store
/// every artifact is read and nothing kept. `&self` throughout: the threads of one
/// observation read through one reading.
pub(crate) struct Reading<'a, V> {
    store: Option<&'a Store<V>>,
    kind: Name,
    /// Artifacts read to be judged later ([`Reading::wants`] … [`Reading::judged`]): the files
    /// of each, stamped before it was read.
    stamped: Mutex<HashMap<PathBuf, Files>>,
    /// Artifacts left out.
    left_out: AtomicUsize,
}

impl<'a, V: Clone> Reading<'a, V> {
    pub(crate) fn new(store: Option<&'a Store<V>>, kind: Name) -> Reading<'a, V> {
        Reading { store, kind, stamped: Mutex::new(HashMap::new()), left_out: AtomicUsize::new(0) }
    }

    /// What the store holds of the artifact at `path`, if `usable` takes it: it is left out.
    fn held(&self, path: &Path, usable: impl FnOnce(&V) -> bool) -> Option<V> {
        let value = self.store?.get(self.kind, path).filter(usable)?;
        self.left_out.fetch_add(1, Ordering::Relaxed);
        Some(value)
    }

    /// What the artifact at `path` is judged to be, read through the store in one step (for a
    /// kind that judges an artifact as it reads it): the store's judgement if it holds one that
    /// `usable` takes; else `judge()`, with `files` (those it reads, the artifact among them)
    /// stamped before, remembered when it is something and forgotten when it is nothing.
    pub(crate) fn read_through<F: IntoIterator<Item = PathBuf>>(
        &self,
        path: &Path,
        usable: impl FnOnce(&V) -> bool,
        files: impl FnOnce() -> F,
        judge: impl FnOnce() -> Option<V>,
    ) -> Option<V> {
        let Some(store) = self.store else { return judge() };
        if let Some(value) = self.held(path, usable) {
            return Some(value);
        }
        let files = stamped(files());
        let value = judge();
        remember(store, self.kind, path, files, value.clone());
        value
    }

    /// Whether the artifact at `path` is to be read (for a kind judged once everything is
    /// read, [`Reading::judged`]): not held. `files`: those its judgement is read from (the
    /// artifact among them), stamped now, before they are read.
    pub(crate) fn wants(&self, path: &Path, files: impl FnOnce() -> Vec<PathBuf>) -> bool {
        if self.store.is_none() {
            return true;
        }
        if self.held(path, |_| true).is_some() {
            return false;
        }
        if let Ok(mut stamped_now) = self.stamped.lock() {
            stamped_now.insert(path.to_path_buf(), stamped(files()));
        }
        true
    }

    /// What the artifact at `path`, read since [`Reading::wants`], came to: remembered with the
    /// stamps taken before it was read, or (nothing) forgotten.
    pub(crate) fn judged(&self, path: &Path, value: Option<V>) {
        let Some(store) = self.store else { return };
        let Some(files) = self.stamped.lock().ok().and_then(|mut s| s.remove(path)) else { return };
        remember(store, self.kind, path, files, value);
    }

    /// Every artifact read since [`Reading::wants`] and not judged yet: forgotten.
    fn forget_the_rest(&self) {
        let (Some(store), Ok(mut stamped)) = (self.store, self.stamped.lock()) else { return };
        for (path, _) in stamped.drain() {
            store.forget(self.kind, &path);
        }
    }

    /// Done: how many artifacts were left out, said at debug level (`watch -v`).
    pub(crate) fn finish(self) {
        let left_out = self.left_out.into_inner();
        if left_out > 0 {
            tracing::debug!(kind = %self.kind, at_rest = left_out, "left out at rest");
        }
    }
}

fn remember<V: Clone>(store: &Store<V>, kind: Name, path: &Path, files: Files, value: Option<V>) {
    match value {
        Some(value) => store.put(kind, path, files, value),
        None => store.forget(kind, path),
    }
}

/// A plan's or a meeting's observation through a watch's store: the artifacts under `dir` (a
/// case clash is a problem, its files left out) not held at rest, each read by `observe`, into
/// the kind's snapshot (`snapshot`); then, with a store, those `at_rest` names (by path:
/// ended, and their decider, given them alone, does nothing) are remembered at rest, the others
/// forgotten. Unlike a commission, settled by a line of its file before it is parsed, these
/// are at rest only once decided, so the judgement waits for the whole snapshot.
pub(crate) fn observe_not_at_rest<O, S>(
    store: Option<&Store<AtRest>>,
    kind: Name,
    dir: &Path,
    judged_from: impl Fn(&Path) -> Vec<PathBuf>,
    mut observe: impl FnMut(&Path) -> Result<O, Vec<Problem>>,
    snapshot: impl FnOnce(Vec<O>) -> S,
    at_rest: impl FnOnce(&S) -> Vec<PathBuf>,
) -> anyhow::Result<(S, Vec<Problem>)> {
    let (paths, mut problems) = crate::artifact::without_case_clashes(crate::artifact::paths(dir)?);
    let reading = Reading::new(store, kind);
    let mut observed = Vec::new();
    for path in paths {
        if !reading.wants(&path, || judged_from(&path)) {
            continue;
        }
        match observe(&path) {
            Ok(o) => observed.push(o),
            Err(p) => {
                reading.judged(&path, None);
                problems.extend(p)
            }
        }
    }
    let snapshot = snapshot(observed);
    if store.is_some() {
        for path in at_rest(&snapshot) {
            reading.judged(&path, Some(AtRest));
        }
        reading.forget_the_rest();
    }
    reading.finish();
    Ok((snapshot, problems))
}

/// Lines found in the history of some commits (the trailers on the integration branch and its
/// remote copies), kept with those commits' ids. Asked again with other tips, it walks only
/// what is new — from the new tips down to the old ones — when every old tip is in the new
/// history (the branch moved forward); else (a reset, a force push) it walks everything again.
#[derive(Debug, Default)]
pub(crate) struct ByTips(Mutex<Option<(Vec<git2::Oid>, std::collections::HashSet<String>)>>);

impl ByTips {
    /// The lines of `tips`' history. `walk(tips, hide)`: the lines of the commits reachable
    /// from `tips` and not from `hide`.
    pub(crate) fn lines<E>(
        &self,
        repo: &git2::Repository,
        tips: &[git2::Oid],
        walk: impl Fn(&[git2::Oid], &[git2::Oid]) -> Result<std::collections::HashSet<String>, E>,
    ) -> Result<std::collections::HashSet<String>, E> {
        let known = self.0.lock().ok().and_then(|m| m.clone());
        let lines = match known {
            Some((old, lines)) if old == tips => return Ok(lines),
            Some((old, mut lines))
                if old.iter().all(|o| tips.iter().any(|t| t == o || repo.graph_descendant_of(*t, *o).unwrap_or(false))) =>
            {
                lines.extend(walk(tips, &old)?);
                lines
            }
            _ => walk(tips, &[])?,
        };
        if let Ok(mut m) = self.0.lock() {
            *m = Some((tips.to_vec(), lines.clone()));
        }
        Ok(lines)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(p: &Path, text: &str) {
        // Written as editors and guild-hall write: a new file renamed into place.
        let tmp = p.with_extension("tmp");
        std::fs::write(&tmp, text).unwrap();
        std::fs::rename(&tmp, p).unwrap();
    }

    fn judged(store: &Store<&'static str>, key: &Path, files: &[&Path], value: &'static str) {
        store.put(Name::Commission, key, files.iter().map(|f| (f.to_path_buf(), stamp(f))).collect(), value);
    }

    #[test]
    fn a_judgement_is_a_hit_while_its_files_keep_their_stamps() {
        let dir = tempfile::tempdir().unwrap();
        let (a, rec) = (dir.path().join("a.md"), dir.path().join("record.json"));
        write(&a, "status: completed\n");
        write(&rec, "{}");
        let store = Store::default();
        assert_eq!(store.get(Name::Commission, &a), None, "nothing judged yet: a miss");
        judged(&store, &a, &[&a, &rec], "settled");
        assert_eq!(store.get(Name::Commission, &a), Some("settled"));
        assert_eq!(store.get(Name::Commission, &a), Some("settled"), "a hit does not use it up");
        assert_eq!(store.get(Name::Plan, &a), None, "kinds are kept apart");
    }

    #[test]
    fn a_changed_stamp_is_a_miss_and_drops_the_judgement() {
        let dir = tempfile::tempdir().unwrap();
        let (a, rec) = (dir.path().join("a.md"), dir.path().join("record.json"));
        write(&a, "status: completed\n");
        write(&rec, "{}");
        let store = Store::default();
        judged(&store, &a, &[&a, &rec], "settled");
        write(&rec, "{}");
        assert_eq!(store.get(Name::Commission, &a), None, "the record was written again (a new inode)");
        assert_eq!(store.len(), 0);
        judged(&store, &a, &[&a, &rec], "settled");
        std::fs::write(&a, "status: pending\n").unwrap();
        assert_eq!(store.get(Name::Commission, &a), None, "written in place: size and mtime differ");
    }

    #[test]
    fn holds_answers_without_stamps_and_forgets_with_events() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.md");
        write(&a, "status: completed\n");
        let store = Store::default();
        assert!(!store.holds(Name::Plan, &a));
        store.put(Name::Plan, &a, vec![(a.clone(), stamp(&a))], "at rest");
        assert!(store.holds(Name::Plan, &a) && !store.holds(Name::Meeting, &a));
        write(&a, "status: pending\n");
        assert!(store.holds(Name::Plan, &a), "its files are not looked at");
        assert_eq!(store.get(Name::Plan, &a), None, "a look at them drops it");
        assert!(!store.holds(Name::Plan, &a));
        store.put(Name::Plan, &a, vec![(a.clone(), stamp(&a))], "at rest");
        store.changed(&a);
        assert!(!store.holds(Name::Plan, &a), "an event drops it");
    }

    #[test]
    fn a_deleted_or_created_file_is_a_miss() {
        let dir = tempfile::tempdir().unwrap();
        let (a, rec) = (dir.path().join("a.md"), dir.path().join("record.json"));
        write(&a, "status: completed\n");
        let store = Store::default();
        judged(&store, &a, &[&a, &rec], "settled");
        assert_eq!(store.get(Name::Commission, &a), Some("settled"), "a missing file stamped as missing");
        write(&rec, "{}");
        assert_eq!(store.get(Name::Commission, &a), None, "the record appeared");
        judged(&store, &a, &[&a, &rec], "settled");
        std::fs::remove_file(&a).unwrap();
        assert_eq!(store.get(Name::Commission, &a), None, "the artifact is gone");
    }

    #[test]
    fn an_event_for_any_file_read_drops_the_judgement_and_an_overflow_drops_all() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b, rec) = (dir.path().join("a.md"), dir.path().join("b.md"), dir.path().join("record.json"));
        for f in [&a, &b, &rec] {
            write(f, "x");
        }
        let store = Store::default();
        judged(&store, &a, &[&a, &rec], "a");
        judged(&store, &b, &[&b], "b");
        store.changed(&rec);
        assert_eq!(store.get(Name::Commission, &a), None, "its record changed, whatever the stamps say");
        assert_eq!(store.get(Name::Commission, &b), Some("b"), "unrelated");
        store.changed(&b);
        assert_eq!(store.get(Name::Commission, &b), None, "the artifact itself");
        judged(&store, &a, &[&a, &rec], "a");
        judged(&store, &b, &[&b], "b");
        store.overflowed();
        assert_eq!((store.get(Name::Commission, &a), store.get(Name::Commission, &b), store.len()), (None, None, 0));
    }

    #[test]
    fn judged_again_replaces_and_the_reverse_index_follows() {
        let dir = tempfile::tempdir().unwrap();
        let (a, old, new) = (dir.path().join("a.md"), dir.path().join("old.json"), dir.path().join("new.json"));
        for f in [&a, &old, &new] {
            write(f, "x");
        }
        let store = Store::default();
        judged(&store, &a, &[&a, &old], "first");
        judged(&store, &a, &[&a, &new], "second");
        store.changed(&old);
        assert_eq!(store.get(Name::Commission, &a), Some("second"), "no longer read from the old file");
        store.forget(Name::Commission, &a);
        assert_eq!(store.get(Name::Commission, &a), None);
        assert!(store.inner.lock().unwrap().by_file.is_empty(), "nothing left indexed");
    }

    #[test]
    fn a_reading_leaves_out_what_it_judged_at_rest_until_a_file_changes() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b, rec) = (dir.path().join("a.md"), dir.path().join("b.md"), dir.path().join("record.json"));
        for f in [&a, &b, &rec] {
            write(f, "x");
        }
        let store = Store::default();
        let files = || vec![a.clone(), rec.clone()];
        let first = Reading::new(Some(&store), Name::Plan);
        assert!(first.wants(&a, files) && first.wants(&b, || vec![b.clone()]), "nothing judged yet");
        first.judged(&a, Some(AtRest));
        first.judged(&b, None);
        let second = Reading::new(Some(&store), Name::Plan);
        assert!(!second.wants(&a, files), "at rest, its files unchanged: left out");
        assert!(second.wants(&b, || vec![b.clone()]), "not at rest: read");
        assert_eq!(second.left_out.load(Ordering::Relaxed), 1);
        assert!(Reading::new(Some(&store), Name::Meeting).wants(&a, files), "kinds are kept apart");
        assert!(Reading::<AtRest>::new(None, Name::Plan).wants(&a, files), "without a store, everything is read");
        write(&rec, "y");
        assert!(Reading::new(Some(&store), Name::Plan).wants(&a, files), "its record changed: read again");
    }

    #[test]
    fn a_write_while_it_is_read_is_seen_by_the_next_reading() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.md");
        write(&a, "status: completed\n");
        let store = Store::default();
        let reading = Reading::new(Some(&store), Name::Meeting);
        assert!(reading.wants(&a, || vec![a.clone()]));
        // Written after the stamp and before the judgement: the judgement is of the old bytes.
        write(&a, "status: open\n");
        reading.judged(&a, Some(AtRest));
        assert!(Reading::new(Some(&store), Name::Meeting).wants(&a, || vec![a.clone()]), "stamped before it was read");
    }

    #[test]
    fn an_event_or_an_overflow_makes_a_reading_read_again() {
        let dir = tempfile::tempdir().unwrap();
        let (a, rec) = (dir.path().join("a.md"), dir.path().join("record.json"));
        for f in [&a, &rec] {
            write(f, "x");
        }
        let store = Store::default();
        let at_rest = |store: &Store<AtRest>| {
            let r = Reading::new(Some(store), Name::Plan);
            assert!(r.wants(&a, || vec![a.clone(), rec.clone()]));
            r.judged(&a, Some(AtRest));
        };
        let left_out = |store: &Store<AtRest>| !Reading::new(Some(store), Name::Plan).wants(&a, || vec![a.clone(), rec.clone()]);
        at_rest(&store);
        assert!(left_out(&store));
        store.changed(&rec);
        assert!(!left_out(&store), "an event for its record, whatever the stamps say");
        at_rest(&store);
        store.overflowed();
        assert!(!left_out(&store), "events lost");
    }

    #[test]
    fn read_through_judges_once_and_then_answers_what_usable_takes() {
        let dir = tempfile::tempdir().unwrap();
        let (a, rec) = (dir.path().join("a.md"), dir.path().join("record.json"));
        for f in [&a, &rec] {
            write(f, "x");
        }
        let store: Store<&'static str> = Store::default();
        let judged = std::cell::Cell::new(0);
        let through = |store: Option<&Store<&'static str>>, usable: bool, verdict: Option<&'static str>| {
            let reading = Reading::new(store, Name::Commission);
            let v = reading.read_through(
                &a,
                |_| usable,
                || [a.clone(), rec.clone()],
                || {
                    judged.set(judged.get() + 1);
                    verdict
                },
            );
            (v, reading.left_out.load(Ordering::Relaxed))
        };
        assert_eq!(through(Some(&store), true, Some("settled")), (Some("settled"), 0), "nothing held: judged");
        assert_eq!(through(Some(&store), true, None), (Some("settled"), 1), "held, its files unchanged: not judged");
        assert_eq!(judged.get(), 1);
        assert_eq!(through(Some(&store), false, None), (None, 0), "held but not usable (the extra check): judged again");
        assert_eq!((judged.get(), store.len()), (2, 0), "judged nothing: forgotten");
        through(Some(&store), true, Some("settled"));
        write(&rec, "y");
        assert_eq!(through(Some(&store), true, Some("again")), (Some("again"), 0), "a file changed: judged again");
        assert_eq!(through(None, true, Some("x")), (Some("x"), 0), "without a store it judges, and keeps nothing");
        assert_eq!(judged.get(), 5);
    }

    #[test]
    fn one_reading_serves_many_threads() {
        let dir = tempfile::tempdir().unwrap();
        let paths: Vec<PathBuf> = (0..64).map(|i| dir.path().join(format!("c{i}.md"))).collect();
        paths.iter().for_each(|p| write(p, "x"));
        let store: Store<AtRest> = Store::default();
        let pass = || {
            let reading = Reading::new(Some(&store), Name::Commission);
            std::thread::scope(|scope| {
                for part in paths.chunks(16) {
                    let reading = &reading;
                    scope.spawn(move || part.iter().for_each(|p| _ = reading.read_through(p, |_| true, || [p.clone()], || Some(AtRest))));
                }
            });
            reading.left_out.load(Ordering::Relaxed)
        };
        assert_eq!((pass(), store.len()), (0, 64), "the first pass judges every one");
        assert_eq!(pass(), 64, "the next leaves every one out");
    }

    #[test]
    fn observe_not_at_rest_remembers_what_at_rest_names_and_forgets_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b, bad) = (dir.path().join("a.md"), dir.path().join("b.md"), dir.path().join("bad.md"));
        for f in [&a, &b, &bad] {
            write(f, "x");
        }
        let store = Store::default();
        let pass = |store: Option<&Store<AtRest>>| {
            let mut read = Vec::new();
            let (snapshot, problems) = observe_not_at_rest(
                store,
                Name::Plan,
                dir.path(),
                |p| vec![p.to_path_buf()],
                |p| {
                    read.push(p.to_path_buf());
                    if p == bad {
                        Err(vec![Problem::new(p, 1, 1, "bad".to_string())])
                    } else {
                        Ok(p.to_path_buf())
                    }
                },
                |observed: Vec<PathBuf>| observed,
                |s: &Vec<PathBuf>| s.iter().filter(|p| **p == a).cloned().collect(),
            )
            .unwrap();
            (read, snapshot, problems.len())
        };
        assert_eq!(pass(Some(&store)), (vec![a.clone(), b.clone(), bad.clone()], vec![a.clone(), b.clone()], 1), "nothing held: all read");
        assert_eq!(store.len(), 1, "only the one at rest kept");
        assert_eq!(pass(Some(&store)), (vec![b.clone(), bad.clone()], vec![b.clone()], 1), "the one at rest left out");
        assert_eq!(pass(None).0.len(), 3, "without a store, all read");
        store.changed(&a);
        assert_eq!(pass(Some(&store)).0.len(), 3, "an event for it: read again");
    }

    /// A repository whose `main` has commits with messages `msgs`; their ids, oldest first.
    fn history(dir: &Path, msgs: &[&str]) -> (git2::Repository, Vec<git2::Oid>) {
        let repo = git2::Repository::init(dir).unwrap();
        let sig = git2::Signature::now("t", "t@example.com").unwrap();
        let mut ids: Vec<git2::Oid> = Vec::new();
        {
            let tree = repo.find_tree(repo.index().unwrap().write_tree().unwrap()).unwrap();
            for m in msgs {
                let parents: Vec<git2::Commit<'_>> = ids.last().map(|p| repo.find_commit(*p).unwrap()).into_iter().collect();
                let refs: Vec<&git2::Commit<'_>> = parents.iter().collect();
                ids.push(repo.commit(None, &sig, &sig, m, &tree, &refs).unwrap());
            }
        }
        (repo, ids)
    }

    /// Every message line of the commits reachable from `tips` and not `hide`, and how many
    /// commits were read.
    fn walker<'r>(
        repo: &'r git2::Repository,
        read: &'r std::cell::Cell<usize>,
    ) -> impl Fn(&[git2::Oid], &[git2::Oid]) -> Result<std::collections::HashSet<String>, git2::Error> + 'r {
        move |tips, hide| {
            let mut walk = repo.revwalk()?;
            tips.iter().try_for_each(|t| walk.push(*t))?;
            hide.iter().try_for_each(|h| walk.hide(*h))?;
            let mut out = std::collections::HashSet::new();
            for oid in walk {
                read.set(read.get() + 1);
                out.insert(repo.find_commit(oid?)?.message().unwrap_or("").to_string());
            }
            Ok(out)
        }
    }

    #[test]
    fn lines_by_tips_walk_only_what_is_new_and_everything_after_a_reset() {
        let dir = tempfile::tempdir().unwrap();
        let (repo, ids) = history(dir.path(), &["a", "b", "c", "d"]);
        let read = std::cell::Cell::new(0);
        let memo = ByTips::default();
        let set = |xs: &[&str]| xs.iter().map(|x| x.to_string()).collect::<std::collections::HashSet<_>>();
        assert_eq!(memo.lines(&repo, &[ids[1]], walker(&repo, &read)).unwrap(), set(&["a", "b"]));
        assert_eq!(read.get(), 2, "the first walk reads the whole history");
        assert_eq!(memo.lines(&repo, &[ids[1]], walker(&repo, &read)).unwrap(), set(&["a", "b"]));
        assert_eq!(read.get(), 2, "the same tips: a hit, nothing read");
        assert_eq!(memo.lines(&repo, &[ids[3]], walker(&repo, &read)).unwrap(), set(&["a", "b", "c", "d"]));
        assert_eq!(read.get(), 4, "moved forward: only the two new commits read");
        assert_eq!(memo.lines(&repo, &[ids[2]], walker(&repo, &read)).unwrap(), set(&["a", "b", "c"]));
        assert_eq!(read.get(), 7, "moved back (a reset): everything read again, nothing of the old kept");
    }
}
