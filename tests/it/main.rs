//! The integration tests, one binary (linking one test binary instead of eleven is most of a
//! clean `cargo test` on two cores): the real `guild-hall` binary against real git
//! repositories, real worker processes and real outside tools, one module per area.

mod claude_code;
mod common;
mod confinement;
mod editor;
mod endpoint_trust;
mod gc;
mod lifecycle;
mod mailbox_trust;
mod mcp;
mod meetings;
mod merge;
mod merge_trust;
mod robustness;
mod rpc;
mod sandbox_trust;
mod surgical;
mod trust;
mod watch;
mod waves;
mod waves_mail_trust;
mod waves_trust;
mod workers;
