//! An attempt's budget as its shim holds it to it ([`Budget`]: `resources.max_budget_usd` and
//! `max_tokens`, the prices to turn tokens into dollars): the running figures — the agent's,
//! read from its output as it comes, else the worker's own reports in its mailbox — checked as
//! they move, and the attempt stopped through the shim's own stop once they pass; what passed
//! is recorded (`attempt-<n>.budget.json`, before `exit.json`) for the pass to fail it with.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::activity::budget::{Limits, Overspent};
use crate::activity::state::StateDir;
use crate::worker::usage::{priced, Prices, Reading, Usd};

/// What one attempt may spend, as the shim is given it (`--budget`, JSON).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Budget {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) max_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) max_usd: Option<Usd>,
    /// The worker's package (a price may be named after it).
    pub(crate) worker: String,
    /// The home's `prices:`, for figures that come without dollars.
    #[serde(default, skip_serializing_if = "Prices::is_empty")]
    pub(crate) prices: Prices,
}

impl Budget {
    /// An attempt's budget from its commission's `resources:` and its package's (the
    /// commission's first); `None` when neither sets one.
    pub(crate) fn of(
        commission: &crate::artifact::commission::Resources,
        package: &crate::artifact::commission::Resources,
        worker: &str,
        prices: &Prices,
    ) -> Option<Budget> {
        let max_tokens = commission.max_tokens.or(package.max_tokens);
        let max_usd = commission.max_budget_usd.or(package.max_budget_usd).and_then(Usd::from_dollars);
        (max_tokens.is_some() || max_usd.is_some()).then(|| Budget {
            max_tokens,
            max_usd,
            worker: worker.to_string(),
            prices: prices.clone(),
        })
    }

    /// What passed the budget, if anything has: the agent's figures if it gave any (they are
    /// the attempt's, as its recorded usage is), else the worker's own reports; priced as
    /// recorded usage is.
    pub(crate) fn passed(&self, agent: Option<&Reading>, reported: Option<&Reading>) -> Option<Overspent> {
        let reading = agent.or(reported)?;
        let (usage, _) = priced(reading, &self.worker, &self.prices);
        let limits = Limits { tokens: self.max_tokens, usd: self.max_usd.map(|u| u.0) };
        limits.passed(usage.tokens(), usage.usd.map(|u| u.0))
    }
}

/// Where the shim records that attempt `attempt` passed its budget.
pub(crate) fn record_file(state: &StateDir, attempt: u32) -> PathBuf {
    state.0.join(format!("attempt-{attempt}.budget.json"))
}

/// What attempt `attempt` passed, as its shim recorded it (`None`: nothing, or a record that
/// does not read: the attempt is judged by its exit alone, and a warning says why).
pub(crate) fn recorded(state: &StateDir, attempt: u32) -> Option<Overspent> {
    let file = record_file(state, attempt);
    crate::files::read_json::<Overspent>(&file).unwrap_or_else(|e| {
        tracing::warn!(file = %file.display(), error = %format!("{e:#}"), "the attempt's budget record cannot be read");
        None
    })
}

/// The running figures the shim's pump shares with its budget watch: the agent's so far.
pub(crate) type Live = Arc<Mutex<Option<Reading>>>;

/// The shim's watch over a running attempt: every quarter second, the agent's running figures
/// (`live`) and the worker's reports in its mailbox against `budget`. Once they pass it, the
/// record is written and `stop` set — the shim's own SIGTERM flag, so the attempt ends as a
/// stop asked by the reconciler does (SIGTERM, the grace, SIGKILL). Ends when `done` is set,
/// with what the worker reported.
pub(crate) fn watch(
    budget: &Budget,
    state: &StateDir,
    attempt: u32,
    live: &Live,
    stop: &AtomicBool,
    done: &AtomicBool,
    note: Note<'_>,
) -> Option<Reading> {
    use crate::worker::toolbox::mailbox::{self, Expect, MailBody};
    let file = mailbox::attempt_file(state, attempt);
    let mut cursor = mailbox::Cursor::default();
    let mut reported: Option<Reading> = None;
    let mut stopped = false;
    loop {
        // Looked at before the mailbox is read: a report written before the end is read too.
        let ending = done.load(Ordering::SeqCst);
        let _ = mailbox::read_from(&file, &mut cursor, Expect { attempt: Some(attempt), worktree: None, last: ending }, |line| {
            if let Some(MailBody::UsageReport(r)) = line.mail.map(|m| m.body) {
                reported = Some(Reading::add(reported.take(), &r));
            }
        });
        if ending {
            return reported;
        }
        if !stopped {
            let agent = live.lock().map(|l| l.clone()).unwrap_or_default();
            if let Some(over) = budget.passed(agent.as_ref(), reported.as_ref()) {
                record(state, attempt, &over, note);
                stop.store(true, Ordering::SeqCst);
                stopped = true;
            }
        }
        for _ in 0..5 {
            if done.load(Ordering::SeqCst) {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// How the shim says a line of its own in the attempt's log.
pub(crate) type Note<'a> = &'a (dyn Fn(&str) + Sync);

/// Record what passed, and say so in the attempt's log through `note` (once: a record already
/// there stays).
pub(crate) fn record(state: &StateDir, attempt: u32, over: &Overspent, note: Note<'_>) {
    let file = record_file(state, attempt);
    if file.exists() {
        return;
    }
    note(&format!("{over}: the attempt is stopped"));
    if let Err(e) = crate::files::write_json(&file, over) {
        note(&format!("cannot record that the budget was passed: {e:#}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Price;
    use crate::worker::usage::Usage;

    fn reading(tokens: u64, usd: Option<f64>, model: Option<&str>) -> Reading {
        Reading {
            usage: Usage { input_tokens: tokens, output_tokens: 0, cached_tokens: 0, usd: usd.and_then(Usd::from_dollars) },
            model: model.map(str::to_string),
        }
    }

    #[test]
    fn the_commissions_budget_wins_and_none_set_is_no_budget() {
        use crate::artifact::commission::Resources;
        let c = Resources { max_tokens: Some(10), ..Default::default() };
        let p = Resources { max_tokens: Some(99), max_budget_usd: Some(2.0), ..Default::default() };
        let b = Budget::of(&c, &p, "w", &Prices::new()).expect("a budget");
        assert_eq!((b.max_tokens, b.max_usd), (Some(10), Usd::from_dollars(2.0)));
        assert_eq!(Budget::of(&Resources::default(), &Resources::default(), "w", &Prices::new()), None);
    }

    #[test]
    fn the_agents_figures_count_priced_when_they_come_without_dollars() {
        let prices: Prices = [("m".to_string(), Price { input: 1.0, output: 1.0, cached: None })].into();
        let b = Budget { max_tokens: None, max_usd: Usd::from_dollars(2.0), worker: "w".into(), prices };
        assert_eq!(b.passed(Some(&reading(1_000_000, None, Some("m"))), None), None);
        let over = b.passed(Some(&reading(2_500_000, None, Some("m"))), None).expect("priced past it");
        assert_eq!(over.to_string(), "budget exceeded: $2.50 of $2.00");
        // The agent's word wins over the worker's, as in recorded usage.
        let worker_said = reading(9_000_000, Some(9.0), None);
        assert_eq!(b.passed(Some(&reading(10, Some(0.01), None)), Some(&worker_said)), None);
        assert!(b.passed(None, Some(&worker_said)).is_some());
        assert_eq!(b.passed(None, None), None);
    }

    #[test]
    fn the_budget_goes_to_the_shim_and_back_whole() {
        let prices: Prices = [("m".to_string(), Price { input: 1.0, output: 2.0, cached: Some(0.1) })].into();
        let b = Budget { max_tokens: Some(7), max_usd: Usd::from_dollars(1.25), worker: "w".into(), prices };
        let text = serde_json::to_string(&b).expect("json");
        assert_eq!(serde_json::from_str::<Budget>(&text).expect("reads back"), b);
    }
}
