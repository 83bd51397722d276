//! Budgets as guild-hall judges them: what one attempt may spend (`resources.max_budget_usd`,
//! `max_tokens`) and what a project or the home may spend in a UTC day (`budget:`), and what
//! passing one is ([`Overspent`], [`DailyReached`]) — typed for reasons, rendered only when
//! written. Pure: the figures come from the shim (an attempt's) and the timelines (a day's).

use std::fmt;

use chrono::{DateTime, Duration, NaiveTime, Utc};
use serde::{Deserialize, Serialize};

/// An amount a budget is counted in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Amount {
    /// Dollars, in millionths (as `Usd` holds them).
    Usd(u64),
    Tokens(u64),
}

/// Millionths of a dollar as a person reads them: `$0.1659`, cents always, more digits only
/// where they say something.
pub(crate) fn dollars_text(millionths: u64) -> String {
    let text = format!("{}.{:06}", millionths / 1_000_000, millionths % 1_000_000);
    let text = text.trim_end_matches('0');
    let (whole, frac) = text.split_once('.').unwrap_or((text, ""));
    format!("${whole}.{frac:0<2}")
}

impl fmt::Display for Amount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Amount::Usd(m) => f.write_str(&dollars_text(*m)),
            Amount::Tokens(n) => write!(f, "{n} tokens"),
        }
    }
}

/// What an attempt spent past its budget: the figure when it was stopped, and the limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Overspent {
    pub(crate) spent: Amount,
    pub(crate) limit: Amount,
}

impl fmt::Display for Overspent {
    /// `budget exceeded: $2.31 of $2.00`, `budget exceeded: 120400 of 100000 tokens`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.spent, self.limit) {
            (Amount::Tokens(s), Amount::Tokens(l)) => write!(f, "budget exceeded: {s} of {l} tokens"),
            (s, l) => write!(f, "budget exceeded: {s} of {l}"),
        }
    }
}

/// An attempt's limits: `None`, no limit of that kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Limits {
    pub(crate) tokens: Option<u64>,
    /// In millionths of a dollar.
    pub(crate) usd: Option<u64>,
}

impl Limits {
    /// The first limit the figures pass (dollars first: they are what a budget is mostly
    /// for), `None` while both are within. Dollars unknown pass no dollar limit.
    pub(crate) fn passed(&self, tokens: u64, usd: Option<u64>) -> Option<Overspent> {
        if let (Some(limit), Some(spent)) = (self.usd, usd) {
            if spent > limit {
                return Some(Overspent { spent: Amount::Usd(spent), limit: Amount::Usd(limit) });
            }
        }
        match self.tokens {
            Some(limit) if tokens > limit => Some(Overspent { spent: Amount::Tokens(tokens), limit: Amount::Tokens(limit) }),
            _ => None,
        }
    }
}

impl Limits {
    /// A daily budget's (`budget:`): dollars in millionths, a negative or absurd amount none.
    pub(crate) fn of_day(b: &crate::config::DailyBudget) -> Limits {
        let usd = b.usd_per_day.filter(|d| d.is_finite() && (0.0..1e9).contains(d)).map(|d| (d * 1e6).round() as u64);
        Limits { tokens: b.tokens_per_day, usd }
    }
}

/// Whose daily budget: the project's (`.lore/guild-hall.yaml`) or the home's, for all its
/// projects (`config.yaml`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Scope {
    Project,
    Home,
}

impl Scope {
    fn as_str(self) -> &'static str {
        match self {
            Scope::Project => "project",
            Scope::Home => "home",
        }
    }

    fn file(self) -> &'static str {
        match self {
            Scope::Project => ".lore/guild-hall.yaml",
            Scope::Home => "config.yaml",
        }
    }
}

/// A daily budget reached: new dispatches wait until `resets_at` (the next UTC midnight).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DailyReached {
    pub(crate) scope: Scope,
    pub(crate) spent: Amount,
    pub(crate) limit: Amount,
    pub(crate) resets_at: DateTime<Utc>,
}

impl DailyReached {
    /// Its key: once per budget per day (`budget:2026-11-28:project:usd`).
    pub(crate) fn key(&self) -> String {
        let unit = match self.limit {
            Amount::Usd(_) => "usd",
            Amount::Tokens(_) => "tokens",
        };
        let day = (self.resets_at - Duration::days(1)).format("%Y-%m-%d");
        format!("budget:{day}:{}:{unit}", self.scope.as_str())
    }

    /// The budget's key as written (`budget.usd_per_day in .lore/guild-hall.yaml`).
    pub(crate) fn budget(&self) -> String {
        let key = match self.limit {
            Amount::Usd(_) => "usd_per_day",
            Amount::Tokens(_) => "tokens_per_day",
        };
        format!("budget.{key} in {}", self.scope.file())
    }
}

impl fmt::Display for DailyReached {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let who = match self.scope {
            Scope::Project => "the project's",
            Scope::Home => "every project's",
        };
        let (spent, limit) = match (self.spent, self.limit) {
            (Amount::Tokens(s), Amount::Tokens(l)) => (s.to_string(), format!("{l} tokens")),
            (s, l) => (s.to_string(), l.to_string()),
        };
        write!(
            f,
            "daily budget reached: {spent} of {who} {limit} today ({}); new work waits until it resets at {}",
            self.budget(),
            self.resets_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        )
    }
}

/// The start of `now`'s UTC day.
pub(crate) fn day_start(now: DateTime<Utc>) -> DateTime<Utc> {
    now.date_naive().and_time(NaiveTime::MIN).and_utc()
}

/// A day's limits against what was spent in it: the first reached (dollars first), `None`
/// while within. Reached means spent at or over it: the next dispatch would pass it.
pub(crate) fn daily(scope: Scope, limits: Limits, tokens: u64, usd: Option<u64>, now: DateTime<Utc>) -> Option<DailyReached> {
    let resets_at = day_start(now) + Duration::days(1);
    let reached = |spent: Amount, limit: Amount| Some(DailyReached { scope, spent, limit, resets_at });
    if let (Some(limit), Some(spent)) = (limits.usd, usd) {
        if spent >= limit {
            return reached(Amount::Usd(spent), Amount::Usd(limit));
        }
    }
    match limits.tokens {
        Some(limit) if tokens >= limit => reached(Amount::Tokens(tokens), Amount::Tokens(limit)),
        _ => None,
    }
}

/// The clock a day's budget is judged by: `GUILD_HALL_BUDGET_NOW` (an RFC 3339 time) when set —
/// how a test moves to the next day — else now.
pub(crate) fn now() -> DateTime<Utc> {
    std::env::var("GUILD_HALL_BUDGET_NOW").ok().and_then(|t| DateTime::parse_from_rfc3339(&t).ok()).map_or_else(Utc::now, |t| t.to_utc())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).expect("time").to_utc()
    }

    #[test]
    fn an_attempt_passes_its_budget_only_past_it_dollars_first() {
        let l = Limits { tokens: Some(100_000), usd: Some(2_000_000) };
        assert_eq!(l.passed(100_000, Some(2_000_000)), None, "at the limit is within it");
        let over = l.passed(120_400, Some(2_310_000)).expect("passed");
        assert_eq!(over.to_string(), "budget exceeded: $2.31 of $2.00");
        let over = l.passed(120_400, None).expect("passed");
        assert_eq!(over.to_string(), "budget exceeded: 120400 of 100000 tokens");
        assert_eq!(Limits { tokens: None, usd: Some(1) }.passed(u64::MAX, None), None, "no dollars known: no dollar limit passed");
        assert_eq!(Limits::default().passed(u64::MAX, Some(u64::MAX)), None);
    }

    #[test]
    fn a_day_is_reached_at_its_limit_and_resets_at_the_next_utc_midnight() {
        let now = at("2026-11-28T18:30:00+05:00");
        let l = Limits { tokens: Some(1000), usd: None };
        assert_eq!(daily(Scope::Project, l, 999, None, now), None);
        let r = daily(Scope::Project, l, 1000, Some(5), now).expect("reached");
        assert_eq!(r.resets_at, at("2026-11-29T00:00:00Z"));
        assert_eq!(r.key(), "budget:2026-11-28:project:tokens");
        assert_eq!(
            r.to_string(),
            "daily budget reached: 1000 of the project's 1000 tokens today (budget.tokens_per_day in .lore/guild-hall.yaml); new work waits until it resets at 2026-11-29T00:00:00Z"
        );
        let usd = daily(Scope::Home, Limits { tokens: Some(1), usd: Some(5_000_000) }, 9, Some(5_120_000), now).expect("reached");
        assert_eq!(usd.key(), "budget:2026-11-28:home:usd");
        assert!(usd
            .to_string()
            .starts_with("daily budget reached: $5.12 of every project's $5.00 today (budget.usd_per_day in config.yaml)"));
    }

    #[test]
    fn dollars_read_as_they_are_written_elsewhere() {
        assert_eq!(dollars_text(2_000_000), "$2.00");
        assert_eq!(dollars_text(165_900), "$0.1659");
        assert_eq!(dollars_text(1), "$0.000001");
        assert_eq!(dollars_text(0), "$0.00");
    }
}
