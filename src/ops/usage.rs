//! `usage`: what the project's work used, from the `usage` events of every commission's,
//! plan's and meeting's timeline (one per ended attempt, reviewer's run or meeting turn,
//! [`crate::worker::usage`]), summed by commission (a wave task by its own id, a meeting by
//! its id), worker, plan or day, since a date.

use std::collections::BTreeMap;

use anyhow::{bail, Result};
use serde_json::Value;

use crate::config::Project;
pub use crate::tools::dispatcher::{By, UsageReport, UsageRow};
use crate::worker::usage::Usage;

/// What the project's ended attempts used, grouped `by`, those ending at or after `since` (a
/// day, `2026-11-01`, or an RFC 3339 time).
pub fn report(project: &Project, since: Option<&str>, by: By) -> Result<UsageReport> {
    let from = since.map(parse_since).transpose()?;
    let mut groups: BTreeMap<String, (usize, Usage)> = BTreeMap::new();
    let mut each = |event: &Value, plan: Option<&str>, id: &str| {
        let Ok(u) = serde_json::from_value::<Usage>(event.clone()) else { return };
        let ts = event["ts"].as_str().unwrap_or("");
        if from.is_some_and(|f| chrono::DateTime::parse_from_rfc3339(ts).map(|t| t.to_utc() < f).unwrap_or(true)) {
            return;
        }
        let key = match by {
            By::Commission => event["task"].as_str().unwrap_or(id).to_string(),
            By::Worker => event["worker"].as_str().unwrap_or("-").to_string(),
            By::Plan => plan.unwrap_or("-").to_string(),
            By::Day => ts.get(..10).unwrap_or("-").to_string(),
        };
        let g = groups.entry(key).or_default();
        g.0 += 1;
        g.1 = g.1.plus(u);
    };
    for (dir, is_plan) in [(project.commissions_dir(), false), (project.plans_dir(), true), (project.meetings_dir(), false)] {
        for path in crate::artifact::paths(&dir)? {
            let Some(id) = path.file_stem().and_then(|s| s.to_str()) else { continue };
            let mut seen = std::collections::BTreeSet::new();
            for e in crate::activity::timeline::read(&crate::activity::timeline::path_for(&path))? {
                if e["kind"] == "usage" && seen.insert(e["key"].as_str().unwrap_or("").to_string()) {
                    each(&e, is_plan.then_some(id), id);
                }
            }
        }
    }
    let rows: Vec<UsageRow> = groups.into_iter().map(|(key, (attempts, usage))| UsageRow { key, attempts, usage }).collect();
    let total = Usage::sum(rows.iter().map(|r| &r.usage)).unwrap_or_default();
    Ok(UsageReport { by, since: since.map(str::to_string), rows, total })
}

/// `--since`: a day (its start, UTC) or an RFC 3339 time.
fn parse_since(s: &str) -> Result<chrono::DateTime<chrono::Utc>> {
    if let Ok(day) = chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d") {
        return Ok(day.and_hms_opt(0, 0, 0).unwrap_or_default().and_utc());
    }
    match chrono::DateTime::parse_from_rfc3339(s) {
        Ok(t) => Ok(t.to_utc()),
        Err(_) => bail!("--since {s:?}: expected a day (2026-11-01) or a time (2026-11-01T09:00:00Z)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_takes_a_day_or_a_time_and_says_what_else() {
        assert_eq!(parse_since("2026-11-01").unwrap().to_rfc3339(), "2026-11-01T00:00:00+00:00");
        assert_eq!(parse_since("2026-11-01T09:30:00+02:00").unwrap().to_rfc3339(), "2026-11-01T07:30:00+00:00");
        assert!(parse_since("yesterday").unwrap_err().to_string().contains("expected a day"));
        assert!(By::parse("team").unwrap_err().to_string().contains("commission, worker, plan, day"));
    }
}
