//! What every kind of activity (commissions, meetings, plans) shares: its git ([`git`]; branch,
//! [`worktree`] made and secured by record, landing by squash [`merge`]), the [`control_plane`]
//! no worker may change, the layout of its runtime state dir ([`state`]: records, run and exit
//! info, heartbeat), its [`timeline`], artifact edits that land whatever a worker said
//! ([`fit`]), how a decider adds edits and events to an update (`changes`), applying an update in one crash-safe order ([`apply`]), the names derived from an
//! id ([`names`]: branches, trailers), whether an id is free ([`ids`]: ids are never reused),
//! a checkout's [`remote`] (fetch, adopt, push), work that ended on the integration branch while
//! the checkout says it is to run ([`integrated`]), what in git counts as guild-hall's own word
//! ([`trailers`]), the Kind contract every kind implements
//! ([`kind`]) and the worker slots they share ([`capacity`]), what a watch keeps of what it
//! observed between passes ([`observed`]), and what an effect comes to. Atomic writes are `crate::files`'; liveness is
//! `crate::worker::liveness`.

pub(crate) mod apply;
pub(crate) mod budget;
pub(crate) mod capacity;
pub(crate) mod changes;
pub(crate) mod control_plane;
pub mod diff;
pub(crate) mod fit;
pub(crate) mod git;
pub(crate) mod ids;
pub(crate) mod integrated;
pub mod kind;
pub(crate) mod merge;
pub mod names;
pub(crate) mod observed;
pub(crate) mod reason;
pub(crate) mod remote;
pub(crate) mod state;
pub mod timeline;
pub(crate) mod trailers;
pub(crate) mod worktree;

/// What became of an action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Done,
    /// The artifact changed since it was observed: our write was dropped, the key re-planned.
    Dropped,
    /// Cannot proceed yet (e.g. the integration checkout has local changes); says why.
    Waiting(String),
}

/// How many of one round's independent effects run at once: each is mostly waiting on git and
/// a process start, so a few overlap well even on two cores. Under fault injection one at a
/// time: a fault stops the process dead, and must not do so while another's git is writing.
pub(crate) fn at_once() -> usize {
    if std::env::var_os("GUILD_HALL_FAULT").is_some() {
        1
    } else {
        4
    }
}

/// `f` of every item, up to `limit` at a time on threads of their own, the results in the
/// items' order. An item alone in its chunk of `limit` and an item whose thread cannot be had
/// (a process limit) are done on this thread, where a panic unwinds as usual; a panic on
/// another thread is the item's result `panicked()`.
pub(crate) fn each_at_once<T: Sync, R: Send>(items: &[T], limit: usize, panicked: impl Fn() -> R, f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let mut out = Vec::with_capacity(items.len());
    for batch in items.chunks(limit.max(1)) {
        if batch.len() == 1 {
            out.push(f(&batch[0]));
            continue;
        }
        let f = &f;
        std::thread::scope(|scope| {
            let started: Vec<_> =
                batch.iter().map(|t| std::thread::Builder::new().spawn_scoped(scope, move || f(t)).map_err(|_| t)).collect();
            for h in started {
                out.push(match h {
                    Ok(h) => h.join().unwrap_or_else(|_| panicked()),
                    Err(t) => f(t),
                });
            }
        });
    }
    out
}

/// Stop dead after `step` of `action` when the hidden fault switch
/// (`GUILD_HALL_FAULT=<action>:<step>`) says so: tests prove the next pass converges.
pub(crate) fn fault(action: &str, step: u32) {
    if let Ok(f) = std::env::var("GUILD_HALL_FAULT") {
        if f == format!("{action}:{step}") {
            eprintln!("guild-hall: fault injection: stopping after {action} step {step}");
            std::process::exit(86);
        }
    }
}
