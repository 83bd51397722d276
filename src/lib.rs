//! guild-hall: a reconciler that turns markdown commissions into running, merged agent work.
//!
//! The loop is observe → plan → act: [`observe`] reads the world into a [`observe::Snapshot`],
//! [`plan`] (pure) decides the [`plan::Action`]s, [`act`] carries each out idempotently, and
//! [`reconcile`] runs passes. Everything else is a part those three use.

pub mod act;
pub mod artifact;
pub mod cli;
pub mod config;
#[cfg(test)]
mod fuzz_tests;
pub mod git;
pub mod ids;
pub mod manager;
pub mod mcp_args;
pub mod memory;
pub mod observe;
pub mod ops;
pub mod plan;
pub mod process;
pub mod reconcile;
pub mod rpc;
pub mod runtime;
pub mod sandbox;
pub mod timeline;
pub mod toolbox;
pub mod watch;
pub mod worker;
