//! `guild-hall usage`: what the project's ended attempts used, grouped (the catalogue's `usage`
//! operation, as `worker/usage` and `mcp --manager` serve it), as a table or JSON.

use anyhow::Result;

use super::out::{line, say, say_json, Table};
use super::Env;
use guild_hall::ops::usage::{report, By};

pub fn usage(env: &Env, since: Option<&str>, by: &str, json_out: bool) -> Result<()> {
    let by = By::parse(by).map_err(anyhow::Error::msg)?;
    let r = report(&env.project, since, by)?;
    if json_out {
        say_json!("{}", serde_json::to_string_pretty(&r)?);
        return Ok(());
    }
    if r.rows.is_empty() {
        let since = r.since.as_deref().map(|s| format!(" since {s}")).unwrap_or_default();
        say!("no usage recorded{since}: an attempt's usage is recorded when it ends, when its agent reports it (or its worker, with `toolbox report-usage`)");
        return Ok(());
    }
    let header = match by {
        By::Commission => "COMMISSION",
        By::Worker => "WORKER",
        By::Plan => "PLAN",
        By::Day => "DAY",
    };
    let mut table = Table::new([header, "ATTEMPTS", "INPUT", "OUTPUT", "CACHED", "USD"]).right(&[1, 2, 3, 4, 5]);
    let dollars = |u: &guild_hall::worker::usage::Usage| u.usd_text().unwrap_or_else(|| "-".into());
    for row in &r.rows {
        let u = &row.usage;
        table.row([
            line(&row.key).into_owned(),
            row.attempts.to_string(),
            u.input_tokens().to_string(),
            u.output_tokens().to_string(),
            u.cached_tokens().to_string(),
            dollars(u),
        ]);
    }
    let attempts: usize = r.rows.iter().map(|r| r.attempts).sum();
    let t = &r.total;
    table.row([
        "total".to_string(),
        attempts.to_string(),
        t.input_tokens().to_string(),
        t.output_tokens().to_string(),
        t.cached_tokens().to_string(),
        dollars(t),
    ]);
    table.print();
    Ok(())
}
