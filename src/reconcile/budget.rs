//! The daily budgets observed for a round (`budget:` in the project's `.lore/guild-hall.yaml`
//! and the home's `config.yaml`): what today's ended attempts used, from their `usage` events,
//! against them; the first reached holds new dispatches (through the round's capacity), and is
//! told to `notify:` once per budget per day, crash-safe.

use anyhow::{Context, Result};
use serde_json::json;

use crate::activity::budget::{self, DailyReached, Limits, Scope};
use crate::config::{GlobalConfig, Home, Project};
use crate::worker::usage::{recorded_since, Usage};

/// The daily budget reached now, if one is: the project's first, then the home's (all its
/// projects together). Nothing is read when neither is set.
pub(crate) fn reached(project: &Project, global: &GlobalConfig) -> Option<DailyReached> {
    if project.config.budget.is_none() && global.budget.is_none() {
        return None;
    }
    let now = budget::now();
    let from = budget::day_start(now);
    let check = |scope: Scope, limits: Limits, used: Option<Usage>| {
        let used = used.unwrap_or_default();
        budget::daily(scope, limits, used.tokens(), used.usd.map(|u| u.0), now)
    };
    let lore = |root: &std::path::Path| root.join(".lore");
    let own = project.config.budget.map(|b| check(Scope::Project, Limits::of_day(&b), recorded_since(&lore(&project.root), from)));
    if let Some(reached) = own.flatten() {
        return Some(reached);
    }
    let b = global.budget?;
    // Every registered project, and this one (a project is used before it is registered).
    let mut roots: Vec<std::path::PathBuf> = global.projects.iter().map(|p| p.path.clone()).collect();
    if !roots.iter().any(|r| r == &project.root) {
        roots.push(project.root.clone());
    }
    let used: Vec<Usage> = roots.iter().filter_map(|r| recorded_since(&lore(r), from)).collect();
    check(Scope::Home, Limits::of_day(&b), Usage::sum(&used))
}

/// Tell `notify:` that `reached` is, once per budget per day: its key is kept in `told.json`
/// under `dir` (the project's notify dir, or the home's state for the home's budget) after
/// its event is in the outbox `outbox`; a pass killed in between writes the same outbox file
/// again, which no supervisor has claimed yet (they are started after this).
pub(crate) fn tell(home: &Home, project: &Project, reached: &DailyReached, outbox: &std::path::Path) -> Result<()> {
    let dir = match reached.scope {
        Scope::Project => home.project_state(&project.name).join("notify"),
        Scope::Home => home.state_root().join("notify"),
    };
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let told_file = dir.join("budgets-told.json");
    let _lock = crate::files::lock(&dir.join("budgets-told.lock"), crate::files::Lock::Exclusive)?;
    let mut told: std::collections::BTreeSet<String> = crate::files::read_json(&told_file)?.unwrap_or_default();
    let key = reached.key();
    if told.contains(&key) {
        return Ok(());
    }
    let event = json!({
        "event": "budget",
        "project": project.name,
        "kind": "budget",
        "id": reached.budget(),
        "title": "daily budget reached",
        "text": reached.to_string(),
    });
    std::fs::create_dir_all(outbox).with_context(|| format!("creating {}", outbox.display()))?;
    let named = format!("{:016x}.json", crate::artifact::store::content_hash(&format!("{}#{key}", project.name)));
    crate::files::write_json(&outbox.join(named), &event)?;
    crate::activity::fault("budget-told", 1);
    told.insert(key);
    // Older days' keys are of no use any more: only today's are kept.
    let today = format!("budget:{}:", (reached.resets_at - chrono::Duration::days(1)).format("%Y-%m-%d"));
    told.retain(|k| k.starts_with(&today));
    crate::files::write_json(&told_file, &told)
}
