//! The integration tests, one binary (linking one test binary instead of eleven is most of a
//! clean `cargo test` on two cores): the real `guild-hall` binary against real git
//! repositories, real worker processes and real outside tools, one module per area.

mod agree;
mod apply;
mod board;
mod check_truth;
mod common;
mod cycles_trust;
mod docs;
mod editor;
mod first_hour;
mod first_hour_fixes;
mod gc;
mod ids;
mod keys;
mod layout;
mod lifecycle;
mod liveness;
mod r#loop;
mod mailbox_trust;
mod meeting_trust;
mod meetings;
mod output_trust;
mod positions;
mod robustness;
mod settle;
mod surgical;
mod texts;
mod words;

/// Git as the truth: merging, sync and land, trailers, fresh homes and clones, CI runs, and what a worker may plant.
mod git {
    mod another_home;
    pub(crate) mod ci;
    mod fresh_home_and_clone;
    mod merge;
    mod merge_limits;
    mod planted_config;
    mod sync_and_land;
    mod teammate_clone;
    mod trailers;
}

/// Plans and their waves: order, copy-back, verify, task liveness, the mailbox, the record against git, CI timeouts.
mod plan {
    mod ci_timeout;
    mod mailbox;
    mod record_vs_git;
    mod task_liveness;
    mod waves;
}

/// `watch` as a service and its endpoints: the JSON-RPC socket, the typed catalogues, MCP.
mod service {
    mod endpoint_abuse;
    pub(crate) mod mcp;
    mod rpc;
    mod rpc_catalogue;
    mod watch;
}

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
