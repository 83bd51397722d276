//! guild-hall: a reconciler that turns markdown artifacts into running, merged agent work.
//!
//! # Map
//! One loop, observe → decide → act, over three kinds of artifact: [`commission`], [`meeting`]
//! and [`plan`]. Each kind is a module with the same shape — `observe` reads the world into a
//! snapshot, `decide` (pure) turns it into actions, `act` carries each out as one small
//! idempotent effect — and implements the one contract [`activity::kind::Kind`]. [`reconcile`]
//! is the one generic pass over the three (locks, rounds, one error policy, backoff keyed by
//! kind and id). [`ops`] is what people and tools do (create, request, converge, check), above
//! the loop; [`service`] (`watch`, the JSON-RPC endpoint, `mcp --manager`) and the binary's CLI
//! are faces over it, through the typed catalogues of [`tools`]; `board` (the terminal UI, behind
//! the `board` feature) is one more, over observe and `ops`; `web` (`guild-hall serve`, behind the
//! `web` feature) serves the board's model and the catalogues to a browser.
//!
//! Below the kinds, shared by all three: [`worker`] (packages, the one launch site, the shim,
//! the sandbox, liveness, the toolbox and mailboxes), [`activity`] (git, worktrees, landing,
//! runtime state, the timeline, applying an update, names from ids, the contract), [`config`]
//! (settings and the home's layout), [`artifact`] (parse, create, load and surgically edit the
//! files people write) and [`files`] (filesystem idioms). [`schema`] prints what editors
//! validate against.
//!
//! Dependencies point down only, with no cycle:
//! `files` ← `artifact` ← `config` ← `activity` ← `worker` ← `tools` ← {`commission`,
//! `meeting`, `plan`} ← `reconcile` ← `ops` ← `service` ← `board` ← `web` ← the CLI (`src/main.rs`). The
//! kinds never import each other nor the loop.

pub mod activity;
pub mod artifact;
#[cfg(feature = "board")]
pub mod board;
pub mod commission;
pub mod config;
pub mod files;
pub mod meeting;
pub mod ops;
pub mod plan;
pub mod reconcile;
pub mod schema;
pub mod service;
pub mod shown;
pub mod tools;
#[cfg(feature = "web")]
pub mod web;
pub mod worker;

#[cfg(test)]
mod fuzz_tests;
