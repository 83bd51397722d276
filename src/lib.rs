//! guild-hall: a reconciler that turns markdown artifacts into running, merged agent work.
//!
//! The loop is observe → plan → act: [`commission::observe`] reads the world into a snapshot,
//! [`commission::plan`] (pure) decides the actions, [`commission::act`] carries each out
//! idempotently, and [`reconcile`] runs passes. [`artifact`] parses and surgically writes the
//! files people edit; [`activity`] is what every kind of work shares (git, runtime state,
//! timeline); [`meeting`] is the synchronous half, planned and acted on in the same pass;
//! [`worker`] runs, confines and hears from the worker processes; [`ops`] is what people and
//! tools do (create, request, converge, check), above the loop; [`service`] (watch, JSON-RPC,
//! `mcp --manager`) and the binary's CLI are the faces over it.

pub mod activity;
pub mod artifact;
pub mod commission;
pub mod config;
pub mod files;
pub mod meeting;
pub mod ops;
pub mod plan;
pub mod reconcile;
pub mod schema;
pub mod service;
pub mod tools;
pub mod worker;

#[cfg(test)]
mod fuzz_tests;
