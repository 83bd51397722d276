//! The integration tests, one binary (linking one test binary instead of eleven is most of a
//! clean `cargo test` on two cores): the real `guild-hall` binary against real git
//! repositories, real worker processes and real outside tools, one module per area.

mod apply;
mod check_truth;
mod ci;
mod ci_waves;
mod claude_code;
mod clone_truth;
mod common;
mod confinement;
mod cycles_trust;
mod editor;
mod endpoint_trust;
mod gc;
mod git_trust;
mod git_truth;
mod home_truth;
mod ids;
mod keys;
mod layout;
mod lifecycle;
mod liveness;
mod r#loop;
mod mailbox_trust;
mod mcp;
mod meeting_trust;
mod meetings;
mod merge;
mod merge_trust;
mod output_trust;
mod plan_truth;
mod robustness;
mod rpc;
mod rpc_catalogue;
mod sandbox_trust;
mod settle;
mod surgical;
mod sync;
mod texts;
mod trust;
mod watch;
mod waves;
mod waves_mail_trust;
mod waves_trust;
mod workers;
