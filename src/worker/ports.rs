//! Ports for live attempts (`workspace.ports`), unique across the home (all its projects): one
//! file per allocation under `state/ports/`, naming the attempt that holds it. An allocation
//! is free again once its attempt has ended or is proven dead — a crash leaks nothing.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::activity::state::{ExitInfo, RunInfo, StateDir};
use crate::config::Home;
use crate::files::read_json;

/// The first port handed out, and the last one.
const FIRST: u16 = 41000;
const LAST: u16 = 60999;

/// How long an allocation whose attempt has recorded neither its start nor its exit is held:
/// a launch records one or the other well within this (the shim's start is waited for 30s).
const UNSTARTED: Duration = Duration::from_secs(120);

/// One attempt's ports: `first` .. `first + count - 1`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Allocation {
    pub(crate) first: u16,
    pub(crate) count: u16,
    /// The attempt's state dir and number: whose life holds the ports.
    pub(crate) state: PathBuf,
    pub(crate) attempt: u32,
    pub(crate) at: DateTime<Utc>,
}

impl Allocation {
    pub(crate) fn last(&self) -> u16 {
        self.first + self.count - 1
    }

    fn overlaps(&self, first: u16, count: u16) -> bool {
        first <= self.last() && u32::from(self.first) < u32::from(first) + u32::from(count)
    }
}

fn dir(home: &Home) -> PathBuf {
    home.state_root().join("ports")
}

/// Whether the attempt holding `a` may still be at work: it has not recorded its exit, and
/// its shim is alive and ours (or it is still being started). `boot`: this boot's id.
fn held(a: &Allocation, boot: &str, now: DateTime<Utc>) -> bool {
    let state = StateDir(a.state.clone());
    if !state.0.is_dir() {
        return false;
    }
    if read_json::<ExitInfo>(&state.exit()).ok().flatten().is_some_and(|x| x.attempt >= a.attempt) {
        return false;
    }
    match read_json::<RunInfo>(&state.run()).ok().flatten() {
        Some(r) if r.attempt > a.attempt => false,
        Some(r) if r.attempt == a.attempt => crate::worker::shim::running(&r, boot),
        _ => (now - a.at).to_std().is_ok_and(|age| age < UNSTARTED) || (now < a.at),
    }
}

/// The allocations of the home, each with its file.
fn all(home: &Home) -> Vec<(PathBuf, Allocation)> {
    let Ok(entries) = std::fs::read_dir(dir(home)) else { return Vec::new() };
    entries
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .filter_map(|p| read_json::<Allocation>(&p).ok().flatten().map(|a| (p, a)))
        .collect()
}

/// Give `count` ports to `attempt` of the activity whose state dir is `state`: the lowest
/// range no live attempt of the home holds and nothing on this machine listens on. Allocations
/// whose attempts are over are removed on the way; one this attempt already holds is kept.
pub(crate) fn allocate(home: &Home, state: &StateDir, attempt: u32, count: u16) -> Result<Allocation> {
    let dir = dir(home);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let _lock = crate::files::lock(&dir.join(".lock"), crate::files::Lock::Exclusive)?;
    let (boot, now) = (crate::worker::shim::boot_id(), Utc::now());
    let mut live = Vec::new();
    for (file, a) in all(home) {
        if a.state == state.0 && a.attempt == attempt && a.count == count {
            return Ok(a);
        }
        if held(&a, &boot, now) {
            live.push(a);
        } else {
            let _ = std::fs::remove_file(&file);
        }
    }
    let mut first = FIRST;
    while u32::from(first) + u32::from(count) - 1 <= u32::from(LAST) {
        if let Some(taken) = live.iter().filter(|a| a.overlaps(first, count)).map(|a| a.last()).max() {
            first = taken + 1;
            continue;
        }
        if let Some(busy) = (first..first + count).find(|p| !free_here(*p)) {
            first = busy + 1;
            continue;
        }
        let a = Allocation { first, count, state: state.0.clone(), attempt, at: now };
        crate::files::write_json(&dir.join(format!("{first}.json")), &a)?;
        return Ok(a);
    }
    anyhow::bail!("no {count} free ports in {FIRST}-{LAST}: every range is held by a live attempt of this home or in use")
}

/// Whether nothing listens on `port` here (it can be bound on the loopback and every address).
fn free_here(port: u16) -> bool {
    std::net::TcpListener::bind(("0.0.0.0", port)).is_ok() && std::net::TcpListener::bind(("127.0.0.1", port)).is_ok()
}

/// The ports the live attempt of the activity whose state dir is `state` holds, if any.
pub(crate) fn of(home: &Home, state: &Path) -> Option<Allocation> {
    let (boot, now) = (crate::worker::shim::boot_id(), Utc::now());
    all(home).into_iter().map(|(_, a)| a).filter(|a| a.state == state).filter(|a| held(a, &boot, now)).max_by_key(|a| a.attempt)
}

/// A live attempt's ports: `first` .. `first + count - 1` (declared in the JSON's key order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PortRange {
    pub count: u16,
    pub first: u16,
}

impl std::fmt::Display for PortRange {
    /// `41000-41002`, or `41000` alone.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.count {
            0 | 1 => write!(f, "{}", self.first),
            n => write!(f, "{}-{}", self.first, u32::from(self.first) + u32::from(n) - 1),
        }
    }
}

/// The ports the live attempt of the activity whose state dir is `state` holds, as every face
/// shows them (`status`, meetings, a plan's tasks, the board).
pub(crate) fn shown(home: &Home, state: &Path) -> Option<PortRange> {
    of(home, state).map(|p| PortRange { first: p.first, count: p.count })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_disjoint_and_an_ended_attempts_are_free_again() {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = Home::resolve(Some(&dir.path().join("home"))).expect("home");
        let (a, b) = (StateDir(dir.path().join("a")), StateDir(dir.path().join("b")));
        std::fs::create_dir_all(&a.0).expect("mkdir");
        std::fs::create_dir_all(&b.0).expect("mkdir");
        let pa = allocate(&home, &a, 1, 3).expect("allocated");
        let pb = allocate(&home, &b, 1, 2).expect("allocated");
        assert!(pb.first > pa.last() || pb.last() < pa.first, "{pa:?} {pb:?}");
        assert_eq!(allocate(&home, &a, 1, 3).expect("again"), pa, "an attempt keeps its own");
        assert_eq!(of(&home, &a.0).map(|x| x.first), Some(pa.first));
        // Attempt 1 of `a` ends: its ports go to the next one asking.
        crate::files::write_json(&a.exit(), &ExitInfo::error(1, "done".into())).expect("exit");
        assert!(of(&home, &a.0).is_none());
        let c = StateDir(dir.path().join("c"));
        std::fs::create_dir_all(&c.0).expect("mkdir");
        let pc = allocate(&home, &c, 1, 3).expect("allocated");
        assert!(!pc.overlaps(pb.first, pb.count), "{pc:?} {pb:?}");
        assert_eq!(pc.first, pa.first, "the freed range is reused first");
    }
}
