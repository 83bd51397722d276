//! The integration tests, one binary (linking one test binary instead of eleven is most of a
//! clean `cargo test` on two cores): the real `guild-hall` binary against real git
//! repositories, real worker processes and real outside tools, one module per area.

mod claude_code;
mod common;
mod confinement;
mod cycles_trust;
mod editor;
mod gc;
mod lifecycle;
mod mcp;
mod meetings;
mod merge;
mod output_trust;
mod robustness;
mod rpc;
mod surgical;
mod watch;
mod waves;
mod workers;
