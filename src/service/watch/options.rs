//! How a watch is set up: its timings, ignores, watcher, endpoint and report ([`WatchOptions`]),
//! apart from the loop so that the event side ([`super::events`]) reads them without reaching
//! back into it.

use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Clone)]
pub struct WatchOptions {
    /// Full pass for every project this often, whatever happened.
    pub resync: Duration,
    /// How long a partial write (a file not yet closed, data still being written) waits before
    /// it is handled; a file closed after writing, renamed into place or removed is handled at
    /// once.
    pub debounce: Duration,
    /// Extra ignore globs (matched against absolute paths), on top of [`DEFAULT_IGNORES`](super::DEFAULT_IGNORES).
    pub ignore: Vec<String>,
    /// Use the polling watcher instead of the native one.
    pub poll: bool,
    /// Serve the `worker/*` JSON-RPC endpoint on this Unix socket (mode 0600).
    pub socket: Option<PathBuf>,
    /// Serve it on this loopback address too (bearer token required).
    pub listen: Option<String>,
    /// The endpoint's connection cap and request deadline.
    pub limits: crate::service::rpc::Limits,
    /// Says each action of a pass as a person reads it (`reconcile`'s lines), given the
    /// project's name when several are watched; the `tracing` event of each action is then
    /// at debug level (still there with `-vv` or `RUST_LOG`). `None`: the `tracing` events at
    /// info level are the report (`--log-format json`, for machines).
    pub report: Option<fn(Option<&str>, &crate::reconcile::Entry)>,
}

impl Default for WatchOptions {
    fn default() -> Self {
        WatchOptions {
            resync: Duration::from_secs(60),
            debounce: Duration::from_millis(50),
            ignore: Vec::new(),
            poll: false,
            socket: None,
            listen: None,
            limits: Default::default(),
            report: None,
        }
    }
}
