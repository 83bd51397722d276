//! The integration tests, one binary (linking one test binary instead of eleven is most of a
//! clean `cargo test` on two cores): the real `guild-hall` binary against real git
//! repositories, real worker processes and real outside tools. A directory per area (its module
//! below); a file per behaviour, with its adversarial and crash cases beside it. Run one area with
//! `cargo nextest run --test it plan::`.

mod common;
mod docs;
mod layout;

/// What every kind shares: applying an update and settling one a killed pass left, the one pass over the kinds, ids, orphans, surgical writes.
mod activity {
    mod apply;
    mod ids;
    mod notify;
    mod one_pass;
    mod orphans;
    mod settle;
    mod surgical_writes;
}

/// `guild-hall board` in a real terminal.
mod board {
    mod diff_pane;
    pub(crate) mod terminal;
    mod usage;
}

/// What the commands say and check: wording, tables, positions, misspelt keys, escapes shown not obeyed, editor support.
mod cli {
    mod agreeing_commands;
    mod check_problems;
    mod diff;
    mod editor_support;
    mod escapes_shown;
    mod first_hour;
    mod follow;
    mod load_errors;
    mod misspelt_keys;
    mod positions;
    mod readable_output;
    mod usage;
    mod wording;
}

/// A commission's life: dispatch to merge, dependencies and their cycles, its mailbox, its worker asking a person,
/// crashes and bad input.
mod commission {
    mod asking;
    mod budgets;
    mod checks;
    mod conflicts;
    mod crashes_and_bad_input;
    mod dependency_cycles;
    mod dialect;
    mod lifecycle;
    mod limits;
    mod live_runs;
    mod mailbox;
    mod review;
    mod reviewers;
    mod scheduled;
    mod usage;
}

/// Git as the truth: merging, sync and land, trailers, fresh homes and clones, CI runs, what a worker may plant,
/// and what a crash leaves in git.
mod git {
    mod another_home;
    pub(crate) mod ci;
    mod crash_leftovers;
    mod fresh_home_and_clone;
    mod merge;
    mod merge_limits;
    mod planted_config;
    mod sync_and_land;
    mod teammate_clone;
    mod trailers;
}

/// Meetings end to end, their turns, and what a meeting's worker may say.
mod meeting {
    mod end_to_end;
    mod fixtures;
    mod killed_turn;
    mod limits;
    mod worker_output_caps;
}

/// Plans and their waves: order, copy-back, verify, task liveness, the mailbox, the record against git, CI timeouts.
mod plan {
    mod ci_timeout;
    pub(crate) mod fixtures;
    mod limits;
    mod mailbox;
    mod record_vs_git;
    mod reviewers;
    mod task_liveness;
    mod usage;
    mod waves;
}

/// `watch` as a service and its endpoints: the JSON-RPC socket, the typed catalogues, MCP.
mod service {
    mod at_rest;
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
    mod guild_hall_roster;
    mod limits;
    pub(crate) mod one_package;
    mod packages;
    mod sandbox_reads;
    mod signal_safety;
    mod slurm;
    pub(crate) mod usage;
    mod workspaces;
}

/// `guild-hall serve`, the web face: over HTTP without a browser (and in a real browser).
mod web {
    mod asking;
    mod board;
    pub(crate) mod browser;
    mod escaping;
    mod harness;
    mod http_face;
    mod meeting;
    mod plan;
    mod review;
    pub(crate) mod server;
}
