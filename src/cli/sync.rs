//! `sync` and `land`: the integration branch and the person's base branch, brought together
//! (thin over [`guild_hall::ops::sync`]).

use anyhow::Result;

use super::out::{line, say, say_err, say_json};
use super::Env;
use guild_hall::ops::sync::{LandOptions, SyncOptions, SyncReport};

pub fn sync(env: &Env, dry_run: bool, json: bool) -> Result<bool> {
    let report = guild_hall::ops::sync::sync(&env.home, &env.project, &SyncOptions { dry_run, from: None })?;
    show(&report, json)
}

pub fn land(env: &Env, push: Option<&str>, dry_run: bool, json: bool) -> Result<bool> {
    let report = guild_hall::ops::sync::land(&env.home, &env.project, &LandOptions { push: push.map(str::to_string), dry_run })?;
    show(&report, json)
}

/// The report as JSON, or in a line; whether it went through (the exit code).
fn show(report: &SyncReport, json: bool) -> Result<bool> {
    if json {
        say_json!("{}", serde_json::to_string_pretty(report)?);
        return Ok(report.ok());
    }
    if let Some(caught_up) = &report.caught_up {
        say!("{}", line(caught_up));
    }
    if report.ok() {
        say!("{}{}", if report.dry_run { "dry run: " } else { "" }, line(&report.reason));
    } else {
        say_err!("{}", line(&report.reason));
    }
    Ok(report.ok())
}
