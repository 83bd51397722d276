//! The integration tests, one binary (linking one test binary instead of eleven is most of a
//! clean `cargo test` on two cores): the real `guild-hall` binary against real git
//! repositories, real worker processes and real outside tools, one module per area.

mod agree;
mod apply;
mod board;
mod check_truth;
mod ci;
mod ci_waves;
mod clone_truth;
mod common;
mod cycles_trust;
mod docs;
mod editor;
mod endpoint_trust;
mod first_hour;
mod first_hour_fixes;
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
mod positions;
mod robustness;
mod rpc;
mod rpc_catalogue;
mod settle;
mod surgical;
mod sync;
mod texts;
mod trailers;
mod watch;
mod waves;
mod waves_mail_trust;
mod waves_trust;
mod words;

/// Worker packages and processes: bundled packages, confinement and the sandbox, signals, Slurm, the real agent CLIs.
mod worker {
    pub(crate) mod acp_claude_code;
    mod acp_codex_gemini;
    mod bundled;
    pub(crate) mod claude_code;
    pub(crate) mod codex;
    mod confinement;
    pub(crate) mod gemini;
    pub(crate) mod one_package;
    mod packages;
    mod sandbox_reads;
    mod signal_safety;
    mod slurm;
}
