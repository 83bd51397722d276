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
    if report.ok() {
        brings(report);
    }
    Ok(report.ok())
}

/// What a move brings: its files with their lines added and deleted (the first 50), and the
/// work they come from. Every name is escaped: a file name or an id may be a worker's text.
fn brings(report: &SyncReport) {
    const SHOWN: usize = 50;
    if report.files.is_empty() {
        return;
    }
    let (added, deleted) = report.files.iter().fold((0, 0), |(a, d), f| (a + f.additions.unwrap_or(0), d + f.deletions.unwrap_or(0)));
    say!("{} file(s), +{added} -{deleted}:", report.files.len());
    for f in report.files.iter().take(SHOWN) {
        let counts = match (f.additions, f.deletions) {
            (Some(a), Some(d)) => format!("+{a} -{d}"),
            _ => "binary".to_string(),
        };
        say!("  {:<10} {} ({counts})", f.change, line(&f.path));
    }
    if report.files.len() > SHOWN {
        say!("  and {} more (--json lists them all)", report.files.len() - SHOWN);
    }
    if !report.work.is_empty() {
        let from: Vec<String> = report
            .work
            .iter()
            .map(|w| match w.attempt {
                Some(n) => format!("{} {} (attempt {n})", w.kind, line(&w.id)),
                None => format!("{} {}", w.kind, line(&w.id)),
            })
            .collect();
        say!("from: {}", from.join(", "));
    }
}
