//! `guild-hall ci`: the one way to run guild-hall in CI, any number of times. Prints what ran,
//! what landed, what was committed and whether the push went through (or `--json`).

use anyhow::Result;

use super::out::{line, say, say_err, say_json};
use super::show::entry;
use super::Env;
use guild_hall::ops::ci::{self, CiOptions};

#[derive(Debug, clap::Args)]
pub struct CiArgs {
    /// The remote whose integration branch is adopted and pushed to.
    #[arg(long, default_value = "origin", value_name = "REMOTE")]
    pub remote: String,
    /// Commit the artifact updates but do not push the integration branch.
    #[arg(long)]
    pub no_push: bool,
    /// Give up reconciling after this long (e.g. 30m) and exit 1; what settled is still
    /// committed and pushed.
    #[arg(long, default_value = "30m", value_parser = humantime::parse_duration)]
    pub timeout: std::time::Duration,
    /// Print what the run did as one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// Run it; `false` when work failed, an artifact is invalid or the time ran out.
pub fn run(env: &Env, args: &CiArgs) -> Result<bool> {
    let opts = CiOptions { remote: args.remote.clone(), push: !args.no_push, timeout: args.timeout };
    let json = args.json;
    let report = ci::run(&env.home, &env.project, &opts, |e| {
        if !json {
            entry(e, false);
        }
    })?;
    // On stderr whatever the format: a CI log shows it even when the report goes to a file.
    for w in &report.warnings {
        say_err!("warning: {}", line(w));
    }
    if json {
        say_json!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(!report.failed);
    }
    for p in &report.problems {
        say_err!("{p}");
    }
    if report.actions.is_empty() {
        say!("nothing to do");
    }
    let int = &report.integration;
    say!("{int}: {}", report.adopted);
    if let Some(base) = &report.base {
        say!("{int}: {}", if report.merged_base { format!("merged {base}") } else { format!("already holds {base}") });
    }
    say!("landed    {}", if report.landed.is_empty() { "nothing".to_string() } else { line(&report.landed.join(", ")).into_owned() });
    match &report.committed {
        Some(c) => say!("committed {} ({} under .lore/)", &c[..c.len().min(10)], super::out::counted(report.committed_paths.len(), "file")),
        None => say!("committed nothing (no artifact changed)"),
    }
    if !report.under_way.is_empty() {
        say!("not committed, still under way when the run ended (the next run starts them again): {}", line(&report.under_way.join(", ")));
    }
    match report.push {
        "rejected" => say!(
            "push rejected: {}/{int} moved on since this run fetched it (another run pushed first: {}); the next run adopts it and converges",
            report.remote,
            line(report.push_detail.as_deref().unwrap_or(""))
        ),
        "skipped" => say!("not pushed (--no-push)"),
        done => say!("push      {done} ({}/{int})", report.remote),
    }
    if report.timed_out {
        say_err!("error: timed out before every commission settled");
    }
    Ok(!report.failed)
}
