//! What an attempt cost: tokens and dollars ([`Usage`]), read by the shim from the agent's own
//! end-of-run report in the attempt's output ([`Meter`]: Claude Code's stream-json `result`,
//! Codex's `turn.completed`, Gemini CLI's `result` stats, the `usage` line guild-hall's ACP
//! client prints), summed over attempts, and priced from `prices:` when the agent gave no dollars.
//!
//! Trust: the figures are the agent's word and no more — a worker can print a forged report on
//! its own output, as `toolbox report-usage` is the worker's word by definition (recorded as
//! `reported`). What guild-hall guarantees is where they go: the shim reads them from the
//! attempt's own output and records them in `exit.json`, which no worker can write, so a worker
//! can misstate its own attempt but never another's, nor rewrite a figure once recorded.

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

/// Dollars, held as millionths so that sums are exact; written as a decimal number of dollars.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub(crate) struct Usd(pub(crate) u64);

impl Usd {
    /// `None` for what is no amount of dollars (negative, not finite, absurdly large).
    pub(crate) fn from_dollars(d: f64) -> Option<Usd> {
        (d.is_finite() && (0.0..1e9).contains(&d)).then(|| Usd((d * 1e6).round() as u64))
    }

    pub(crate) fn dollars(self) -> f64 {
        self.0 as f64 / 1e6
    }
}

impl std::fmt::Display for Usd {
    /// `$0.1659`: cents always, more digits only where they say something.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&crate::activity::budget::dollars_text(self.0))
    }
}

impl Serialize for Usd {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(self.dollars())
    }
}

impl<'de> Deserialize<'de> for Usd {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Usd, D::Error> {
        let v = f64::deserialize(d)?;
        Usd::from_dollars(v).ok_or_else(|| serde::de::Error::custom(format!("{v} is not an amount of dollars")))
    }
}

/// Tokens and dollars. `input_tokens` are those not read from a cache (cache writes included),
/// `cached_tokens` those read from one; `usd` only as reported or priced, never guessed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Usage {
    // In the order of their names: `status --json`'s rows are sorted at every level.
    #[serde(default)]
    pub(crate) cached_tokens: u64,
    #[serde(default)]
    pub(crate) input_tokens: u64,
    #[serde(default)]
    pub(crate) output_tokens: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<f64>")]
    pub(crate) usd: Option<Usd>,
}

impl Usage {
    /// The sum: tokens add up; dollars add up where known (a part without them adds tokens
    /// only, so a sum's `usd` is the dollars known).
    pub(crate) fn plus(self, other: Usage) -> Usage {
        let usd = match (self.usd, other.usd) {
            (Some(a), Some(b)) => Some(Usd(a.0.saturating_add(b.0))),
            (a, b) => a.or(b),
        };
        Usage {
            input_tokens: self.input_tokens.saturating_add(other.input_tokens),
            output_tokens: self.output_tokens.saturating_add(other.output_tokens),
            cached_tokens: self.cached_tokens.saturating_add(other.cached_tokens),
            usd,
        }
    }

    pub(crate) fn sum<'a>(all: impl IntoIterator<Item = &'a Usage>) -> Option<Usage> {
        all.into_iter().fold(None, |acc: Option<Usage>, u| Some(acc.map_or(*u, |a| a.plus(*u))))
    }

    pub fn input_tokens(&self) -> u64 {
        self.input_tokens
    }

    pub fn output_tokens(&self) -> u64 {
        self.output_tokens
    }

    pub fn cached_tokens(&self) -> u64 {
        self.cached_tokens
    }

    /// The dollars as a person reads them (`$0.1659`), when known.
    pub fn usd_text(&self) -> Option<String> {
        self.usd.map(|d| d.to_string())
    }

    pub(crate) fn tokens(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens).saturating_add(self.cached_tokens)
    }

    /// As written in an artifact (`usage:`): the four keys, `usd` only when known.
    pub(crate) fn to_yaml(self) -> serde_yaml_ng::Value {
        serde_yaml_ng::to_value(self).unwrap_or(serde_yaml_ng::Value::Null)
    }

    /// An artifact's `usage:` as written there; `None` for anything else (a person's edit of
    /// it is not trusted to mean usage, and not an error: the next pass writes it again).
    pub(crate) fn from_yaml(v: &serde_yaml_ng::Value) -> Option<Usage> {
        serde_yaml_ng::from_value(v.clone()).ok()
    }

    /// One short cell: `12.4k tok $0.17`, tokens only when no dollars are known.
    pub fn brief(&self) -> String {
        let tokens = match self.tokens() {
            n if n >= 10_000_000 => format!("{}M", n / 1_000_000),
            n if n >= 1_000_000 => format!("{:.1}M", n as f64 / 1e6),
            n if n >= 10_000 => format!("{}k", n / 1000),
            n if n >= 1000 => format!("{:.1}k", n as f64 / 1e3),
            n => n.to_string(),
        };
        match self.usd {
            Some(d) => format!("{tokens} tok {d}"),
            None => format!("{tokens} tok"),
        }
    }
}

/// Who said an attempt's figures: its agent's own output (read by the shim), or the worker
/// through `toolbox report-usage`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Source {
    Agent,
    Reported,
}

impl Source {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Source::Agent => "agent",
            Source::Reported => "reported",
        }
    }
}

/// One attempt's usage as recorded: the figures, who said them, the model when known, and
/// whether the dollars came from `prices:`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Reading {
    #[serde(flatten)]
    pub(crate) usage: Usage,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) model: Option<String>,
}

impl Reading {
    /// `more` added to what was read before (the model: the latest named).
    pub(crate) fn add(before: Option<Reading>, more: &Reading) -> Reading {
        match before {
            None => more.clone(),
            Some(b) => Reading { usage: b.usage.plus(more.usage), model: more.model.clone().or(b.model) },
        }
    }
}

pub(crate) use crate::config::Prices;

/// `usage`'s dollars: as reported, else priced by the model's price or the package's, else
/// none. Also says whether they came from `prices:`.
pub(crate) fn priced(reading: &Reading, worker: &str, prices: &Prices) -> (Usage, bool) {
    let u = reading.usage;
    if u.usd.is_some() {
        return (u, false);
    }
    let price = reading.model.as_deref().and_then(|m| prices.get(m)).or_else(|| prices.get(worker));
    let Some(p) = price else { return (u, false) };
    let dollars =
        (u.input_tokens as f64 * p.input + u.output_tokens as f64 * p.output + u.cached_tokens as f64 * p.cached.unwrap_or(p.input)) / 1e6;
    match Usd::from_dollars(dollars) {
        Some(usd) => (Usage { usd: Some(usd), ..u }, true),
        None => (u, false),
    }
}

/// One attempt's usage as observed: priced, who said it, and whether the attempt is over (its
/// figures final: recorded then as the attempt's `usage` timeline event).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Attempt {
    pub(crate) attempt: u32,
    pub(crate) usage: Usage,
    pub(crate) source: Source,
    pub(crate) model: Option<String>,
    /// Its dollars came from `prices:`.
    pub(crate) priced: bool,
    pub(crate) over: bool,
}

impl Attempt {
    /// The attempt's `usage` timeline event's fields (`attempt`, the figures, `source`, and
    /// `worker`, `model` and `priced` where they say something), and its key.
    pub(crate) fn event(&self, worker: &str) -> (String, Json) {
        let mut fields = serde_json::to_value(self.usage).unwrap_or_else(|_| serde_json::json!({}));
        fields["attempt"] = self.attempt.into();
        fields["source"] = self.source.as_str().into();
        fields["worker"] = worker.into();
        if let Some(m) = &self.model {
            fields["model"] = m.as_str().into();
        }
        if self.priced {
            fields["priced"] = true.into();
        }
        (format!("usage:{}", self.attempt), fields)
    }

    /// The `usage` event of a run that is not an attempt of the work whose timeline it goes on
    /// (a reviewer's run, a meeting's turn): [`Attempt::event`]'s figures under `key`, without
    /// its own run's number (which says nothing there), with `about` (what it was for: the
    /// attempt or round it reviewed, the turn).
    pub(crate) fn event_about(&self, worker: &str, key: String, about: Json) -> (String, Json) {
        let (_, mut event) = self.event(worker);
        if let (Some(e), Some(a)) = (event.as_object_mut(), about.as_object()) {
            e.remove("attempt");
            e.extend(a.clone());
        }
        (key, event)
    }
}

/// The usage of attempt `attempt`: what its agent reported (the shim's record, read once the
/// attempt is `over`), else what the worker reported (`reported`, its mailbox folded), priced
/// from the home's `prices:` for `worker`'s package when no dollars were given; `None` when
/// nothing was reported.
pub(crate) fn observe(
    home: &crate::config::Home,
    state: &crate::activity::state::StateDir,
    attempt: u32,
    over: bool,
    reported: Option<&Reading>,
    worker: &str,
) -> Option<Attempt> {
    let agent = if over {
        crate::files::read_json::<Reading>(&state.usage(attempt)).unwrap_or_else(|e| {
            tracing::warn!(file = %state.usage(attempt).display(), error = %format!("{e:#}"), "the attempt's usage cannot be read");
            None
        })
    } else {
        None
    };
    let (reading, source) = match (agent, reported) {
        (Some(a), _) => (a, Source::Agent),
        (None, Some(r)) => (r.clone(), Source::Reported),
        (None, None) => return None,
    };
    let prices = home.load_config().map(|g| g.prices).unwrap_or_default();
    let (usage, priced) = priced(&reading, worker, &prices);
    Some(Attempt { attempt, usage, source, model: reading.model, priced, over })
}

/// What the attempts of the project whose `.lore/` is `lore` used, as their commissions',
/// plans' and meetings' `usage` events record it (one per ended attempt, reviewer's run or
/// meeting turn), of those that ended at or after `from`; `None` when none did.
///
/// Asked every round while a daily budget is set, so it costs what was written since `from`,
/// not the history: a timeline not modified since `from` (less [`CLOCK_SLACK`]) holds no event
/// of that time or later, and is not read (a `stat` each). An event's `ts` is never later than
/// the moment it is appended ([`crate::activity::timeline::append`]), read from the clock that
/// stamps the file's mtime; a timeline git brings in (a pull, a checkout) is written then, so
/// it is read.
pub(crate) fn recorded_since(lore: &std::path::Path, from: chrono::DateTime<chrono::Utc>) -> Option<Usage> {
    let written_since = |path: &std::path::Path| {
        let since = std::time::SystemTime::from(from) - CLOCK_SLACK;
        std::fs::metadata(path).and_then(|m| m.modified()).is_ok_and(|t| t >= since)
    };
    let mut all = Vec::new();
    for dir in ["commissions", "plans", "meetings"] {
        for path in crate::artifact::paths(&lore.join(dir)).unwrap_or_default() {
            let timeline = crate::activity::timeline::path_for(&path);
            if !written_since(&timeline) {
                continue;
            }
            let events = crate::activity::timeline::read(&timeline).unwrap_or_default();
            let ended_since =
                |e: &Json| e["ts"].as_str().and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok()).is_some_and(|t| t.to_utc() >= from);
            all.extend(summed(&events, ended_since));
        }
    }
    Usage::sum(&all)
}

/// How far an event's `ts` may run ahead of its timeline's mtime. Both are read from this
/// machine's clock at the same append, but a timeline's mtime can come from another clock (a
/// file server's) or be carried over (`cp -p`, `rsync -a`, a restored backup): a day of slack
/// still leaves the history unread, at a `stat` each.
const CLOCK_SLACK: std::time::Duration = std::time::Duration::from_secs(24 * 60 * 60);

/// The `usage` events among `events` whose key starts with `prefix`, each key once (its first),
/// with what each says was used.
pub(crate) fn keyed(events: &[Json], prefix: &str) -> Vec<(String, Usage)> {
    let mut out: Vec<(String, Usage)> = Vec::new();
    for e in events.iter().filter(|e| e["kind"] == "usage") {
        let Some(key) = e["key"].as_str().filter(|k| k.starts_with(prefix)) else { continue };
        if out.iter().any(|(k, _)| k == key) {
            continue;
        }
        if let Ok(u) = serde_json::from_value::<Usage>(e.clone()) {
            out.push((key.to_string(), u));
        }
    }
    out
}

/// The sum of the `usage` events `which` picks out of a timeline's `events` (one per key), as
/// the decider adds an attempt's usage to those before it.
pub(crate) fn summed(events: &[Json], which: impl Fn(&Json) -> bool) -> Option<Usage> {
    let mut seen = std::collections::BTreeSet::new();
    let picked: Vec<Usage> = events
        .iter()
        .filter(|e| e["kind"] == "usage" && which(e))
        .filter(|e| seen.insert(e["key"].as_str().unwrap_or("").to_string()))
        .filter_map(|e| serde_json::from_value::<Usage>(e.clone()).ok())
        .collect();
    Usage::sum(&picked)
}

/// The longest line of an attempt's output the meter looks at: an agent's report is a few
/// kilobytes; a longer line is skipped, never held whole.
pub(crate) const METER_LINE_MAX: usize = 1024 * 1024;

/// Reads an attempt's output, line by line as it is written, for its agent's usage reports,
/// summing them (a run that reports twice — two Codex turns — cost both).
#[derive(Debug, Default)]
pub(crate) struct Meter {
    line: Vec<u8>,
    over: bool,
    total: Option<Usage>,
    model: Option<String>,
    /// Claude Code's assistant messages since its last `result`, by message id (one message
    /// comes as several lines, each with its usage so far): the running figure a budget is
    /// held to between results, which then give the totals.
    messages: Vec<(String, Usage)>,
}

impl Meter {
    /// Take in a piece of output, as it came.
    pub(crate) fn feed(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let newline = bytes.iter().position(|&b| b == b'\n');
            let piece = &bytes[..newline.unwrap_or(bytes.len())];
            if !self.over {
                if self.line.len() + piece.len() > METER_LINE_MAX {
                    self.over = true;
                    self.line = Vec::new();
                } else {
                    self.line.extend_from_slice(piece);
                }
            }
            match newline {
                Some(i) => {
                    self.end_line();
                    bytes = &bytes[i + 1..];
                }
                None => break,
            }
        }
    }

    fn end_line(&mut self) {
        if !self.over {
            let line = std::mem::take(&mut self.line);
            self.line(&String::from_utf8_lossy(&line));
        }
        self.line.clear();
        self.over = false;
    }

    /// One whole line of output.
    pub(crate) fn line(&mut self, line: &str) {
        let line = line.trim();
        if !line.starts_with('{') || !line.contains("\"type\"") {
            return;
        }
        let Ok(v) = serde_json::from_str::<Json>(line) else { return };
        if let Some((usage, model)) = report(&v) {
            self.total = Some(self.total.map_or(usage, |t| t.plus(usage)));
            if model.is_some() {
                self.model = model;
            }
            self.messages.clear();
        } else if let Some((id, usage, model)) = message(&v) {
            match self.messages.iter_mut().find(|(m, _)| *m == id) {
                Some((_, u)) => *u = usage,
                None => self.messages.push((id, usage)),
            }
            if model.is_some() {
                self.model = model;
            }
        }
    }

    /// What the output has reported so far, while it runs: the reports' totals, and the
    /// messages since the last one (tokens only: a message says no dollars).
    pub(crate) fn so_far(&self) -> Option<Reading> {
        let pending = Usage::sum(self.messages.iter().map(|(_, u)| u));
        let usage = match (self.total, pending) {
            (Some(t), Some(p)) => t.plus(p),
            (t, p) => t.or(p)?,
        };
        Some(Reading { usage, model: self.model.clone() })
    }

    /// What the output reported in all, once it has ended (a last line without a newline
    /// counts).
    pub(crate) fn finish(mut self) -> Option<Reading> {
        if !self.line.is_empty() {
            self.end_line();
        }
        self.total.map(|usage| Reading { usage, model: self.model })
    }
}

fn count(v: &Json) -> u64 {
    v.as_u64().unwrap_or(0)
}

/// The usage one line of an agent's output reports, and the model it names.
fn report(v: &Json) -> Option<(Usage, Option<String>)> {
    match v["type"].as_str()? {
        // Claude Code: the run's totals; `input_tokens` leaves out cache reads and writes.
        "result" if v["usage"].is_object() => {
            let u = &v["usage"];
            let usage = Usage {
                input_tokens: count(&u["input_tokens"]).saturating_add(count(&u["cache_creation_input_tokens"])),
                output_tokens: count(&u["output_tokens"]),
                cached_tokens: count(&u["cache_read_input_tokens"]),
                usd: v["total_cost_usd"].as_f64().and_then(Usd::from_dollars),
            };
            Some((usage, only_key(&v["modelUsage"])))
        }
        // Gemini CLI: `input_tokens` counts the cached ones, `input` does not.
        "result" if v["stats"].is_object() => {
            let s = &v["stats"];
            let cached = count(&s["cached"]);
            let input = s["input"].as_u64().unwrap_or_else(|| count(&s["input_tokens"]).saturating_sub(cached));
            let usage = Usage { input_tokens: input, output_tokens: count(&s["output_tokens"]), cached_tokens: cached, usd: None };
            Some((usage, only_key(&s["models"])))
        }
        // Codex: one turn's; `input_tokens` counts the cached ones.
        "turn.completed" if v["usage"].is_object() => {
            let u = &v["usage"];
            let cached = count(&u["cached_input_tokens"]);
            let usage = Usage {
                input_tokens: count(&u["input_tokens"]).saturating_sub(cached),
                output_tokens: count(&u["output_tokens"]),
                cached_tokens: cached,
                usd: None,
            };
            Some((usage, None))
        }
        // guild-hall's own line (its ACP client's, from what the agent sent).
        "usage" => {
            let usage: Usage = serde_json::from_value(v.clone()).ok()?;
            Some((usage, v["model"].as_str().map(str::to_string)))
        }
        _ => None,
    }
}

/// Claude Code's assistant message, as it streams: its id, its usage so far (`input_tokens`
/// leaves out cache reads and writes, as in its `result`), and its model.
fn message(v: &Json) -> Option<(String, Usage, Option<String>)> {
    if v["type"] != "assistant" {
        return None;
    }
    let m = &v["message"];
    let u = m["usage"].as_object()?;
    let n = |k: &str| u.get(k).map(count).unwrap_or(0);
    let usage = Usage {
        input_tokens: n("input_tokens").saturating_add(n("cache_creation_input_tokens")),
        output_tokens: n("output_tokens"),
        cached_tokens: n("cache_read_input_tokens"),
        usd: None,
    };
    Some((m["id"].as_str()?.to_string(), usage, m["model"].as_str().map(str::to_string)))
}

/// The one key of a by-model map (several models: none named).
fn only_key(v: &Json) -> Option<String> {
    let m = v.as_object()?;
    (m.len() == 1).then(|| m.keys().next().cloned()).flatten()
}

/// What an ACP agent's `session/prompt` reply says the turn used: the protocol's `usage`
/// (`inputTokens`, `outputTokens`, `cachedReadTokens`, `cachedWriteTokens`), or Gemini CLI's
/// `_meta.quota.token_count`, as guild-hall's `usage` line; `None` when it says nothing.
pub(crate) fn acp_line(result: &Json) -> Option<Json> {
    let (usage, model) = if let Some(u) = result["usage"].as_object() {
        let n = |k: &str| u.get(k).map(count).unwrap_or(0);
        let usage = Usage {
            input_tokens: n("inputTokens").saturating_add(n("cachedWriteTokens")),
            output_tokens: n("outputTokens"),
            cached_tokens: n("cachedReadTokens"),
            usd: None,
        };
        (usage, None)
    } else {
        let q = &result["_meta"]["quota"];
        let t = q["token_count"].as_object()?;
        let n = |k: &str| t.get(k).map(count).unwrap_or(0);
        let models: Vec<&str> = q["model_usage"].as_array().into_iter().flatten().filter_map(|m| m["model"].as_str()).collect();
        let model = (models.len() == 1).then(|| models[0].to_string());
        (Usage { input_tokens: n("input_tokens"), output_tokens: n("output_tokens"), cached_tokens: 0, usd: None }, model)
    };
    let mut line = serde_json::to_value(usage).ok()?;
    line["type"] = "usage".into();
    if let Some(m) = model {
        line["model"] = m.into();
    }
    Some(line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Price;

    fn capture(dir: &str, name: &str) -> String {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(dir).join(name);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    fn metered(text: &str) -> Option<Reading> {
        let mut m = Meter::default();
        // In odd pieces, as a pipe gives them.
        for chunk in text.as_bytes().chunks(37) {
            m.feed(chunk);
        }
        m.finish()
    }

    #[test]
    fn usage_since_a_time_reads_the_timelines_written_since() {
        let lore = tempfile::tempdir().unwrap();
        let dir = lore.path().join("commissions");
        std::fs::create_dir_all(&dir).unwrap();
        let now = chrono::Utc::now();
        let line = |key: &str, ts: chrono::DateTime<chrono::Utc>, tokens: u64| {
            format!(
                "{{\"ts\":\"{}\",\"kind\":\"usage\",\"key\":\"{key}\",\"input_tokens\":{tokens},\"output_tokens\":0}}\n",
                ts.to_rfc3339()
            )
        };
        let day_start = now - chrono::Duration::hours(1);
        for (id, text) in [
            ("today", line("usage:1", now, 5) + &line("usage:0", now - chrono::Duration::hours(3), 100)),
            ("older", line("usage:1", now - chrono::Duration::days(2), 1000)),
        ] {
            std::fs::write(dir.join(format!("{id}.md")), "---\nworker: w\n---\n").unwrap();
            std::fs::write(dir.join(format!("{id}.timeline.jsonl")), text).unwrap();
        }
        let since = |from| recorded_since(lore.path(), from).map(|u| u.input_tokens);
        assert_eq!(since(day_start), Some(5), "only the events since, each timeline's usage once per key");
        // A timeline not written since the day began holds nothing of the day: it is not read,
        // whatever its lines claim (its `ts` written by a clock stepped back, say).
        let stale = dir.join("today.timeline.jsonl");
        let long_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(2 * 86_400);
        std::fs::File::options().append(true).open(&stale).unwrap().set_modified(long_ago).unwrap();
        assert_eq!(since(day_start), None, "left unread");
        assert_eq!(since(now - chrono::Duration::days(3)), Some(1105), "written since that earlier time: read");
    }

    #[test]
    fn claude_codes_result_gives_its_tokens_and_dollars() {
        let r = metered(&capture("claude-code", "turn-tools.jsonl")).expect("a report");
        assert_eq!(r.usage, Usage { input_tokens: 61787, output_tokens: 128, cached_tokens: 0, usd: Usd::from_dollars(0.249708) });
        assert_eq!(r.model.as_deref(), Some("claude-opus-5-5"));
    }

    #[test]
    fn claude_codes_messages_give_a_running_figure_until_its_result() {
        let mut m = Meter::default();
        let text = capture("claude-code", "turn-tools.jsonl");
        let mut figures = Vec::new();
        for line in text.lines() {
            m.line(line);
            figures.push(m.so_far().map(|r| r.usage));
        }
        let running: Vec<Usage> = figures.iter().flatten().copied().collect();
        assert!(running.len() > 2, "a figure before the result: {figures:?}");
        assert!(running.windows(2).all(|w| w[1].tokens() >= w[0].tokens()), "it only grows: {running:?}");
        assert_eq!(m.so_far().map(|r| r.usage), m.finish().map(|r| r.usage), "the result's totals in the end");
        // One message in several lines counts once.
        let mut m = Meter::default();
        let line = r#"{"type":"assistant","message":{"id":"a","usage":{"input_tokens":100,"output_tokens":1}}}"#;
        m.line(line);
        m.line(line);
        assert_eq!(m.so_far().map(|r| r.usage.tokens()), Some(101));
    }

    #[test]
    fn codex_turns_add_up_without_dollars() {
        let r = metered(&capture("codex", "02_mcp_tool.jsonl")).expect("a report");
        assert_eq!(r.usage, Usage { input_tokens: 21555, output_tokens: 20, cached_tokens: 0, usd: None });
        let two =
            "{\"type\":\"turn.completed\",\"usage\":{\"input_tokens\":100,\"cached_input_tokens\":60,\"output_tokens\":7}}\n".repeat(2);
        assert_eq!(metered(&two).map(|r| r.usage), Some(Usage { input_tokens: 80, output_tokens: 14, cached_tokens: 120, usd: None }));
    }

    #[test]
    fn gemini_stats_give_tokens_and_the_model() {
        let r = metered(&capture("gemini", "02_mcp_tool.jsonl")).expect("a report");
        assert_eq!(r.usage, Usage { input_tokens: 16397, output_tokens: 20, cached_tokens: 0, usd: None });
        assert_eq!(r.model.as_deref(), Some("gemini-2.5-flash"));
    }

    #[test]
    fn an_acp_reply_becomes_a_usage_line_the_meter_reads() {
        let gemini: Json = serde_json::from_str(
            r#"{"stopReason": "end_turn", "_meta": {"quota": {"token_count": {"input_tokens": 12309, "output_tokens": 10}, "model_usage": [{"model": "gemini-2.5-flash", "token_count": {"input_tokens": 12309, "output_tokens": 10}}]}}}"#,
        )
        .unwrap();
        let line = acp_line(&gemini).expect("a line").to_string();
        let r = metered(&format!("{line}\n")).expect("read back");
        assert_eq!(r.usage, Usage { input_tokens: 12309, output_tokens: 10, cached_tokens: 0, usd: None });
        assert_eq!(r.model.as_deref(), Some("gemini-2.5-flash"));
        let acp: Json = serde_json::json!({"stopReason": "end_turn", "usage": {"inputTokens": 5, "outputTokens": 2, "cachedReadTokens": 40, "cachedWriteTokens": 1, "totalTokens": 48}});
        let r = metered(&acp_line(&acp).expect("a line").to_string()).expect("read back");
        assert_eq!(r.usage, Usage { input_tokens: 6, output_tokens: 2, cached_tokens: 40, usd: None });
        assert_eq!(acp_line(&serde_json::json!({"stopReason": "end_turn"})), None, "nothing said, nothing invented");
    }

    #[test]
    fn output_without_a_report_has_no_usage_and_odd_lines_are_skipped() {
        // A run that failed at once reports nothing spent, in so many words.
        let failed = metered(&capture("claude-code", "turn3-unknown-session.jsonl")).expect("a report");
        assert_eq!(failed.usage, Usage { usd: Some(Usd(0)), ..Usage::default() });
        assert_eq!(metered("plain text\n{\"type\":\"progress\"}\n"), None);
        let odd =
            format!("not json\n{{\"type\":\"result\"\n{}\n{{\"type\":\"usage\",\"input_tokens\":-3}}\n", "x".repeat(METER_LINE_MAX + 10));
        assert_eq!(metered(&odd), None);
    }

    #[test]
    fn prices_turn_tokens_into_dollars_only_when_none_were_reported() {
        let prices: Prices = [
            ("m".to_string(), Price { input: 3.0, output: 15.0, cached: Some(0.3) }),
            ("pkg".to_string(), Price { input: 1.0, output: 1.0, cached: None }),
        ]
        .into();
        let u = Usage { input_tokens: 1_000_000, output_tokens: 100_000, cached_tokens: 2_000_000, usd: None };
        let by_model = priced(&Reading { usage: u, model: Some("m".into()) }, "pkg", &prices);
        assert_eq!(by_model, (Usage { usd: Usd::from_dollars(3.0 + 1.5 + 0.6), ..u }, true));
        let by_package = priced(&Reading { usage: u, model: Some("other".into()) }, "pkg", &prices);
        assert_eq!(by_package.0.usd, Usd::from_dollars(3.1));
        assert_eq!(priced(&Reading { usage: u, model: None }, "unpriced", &prices), (u, false));
        let reported = Usage { usd: Usd::from_dollars(0.5), ..u };
        assert_eq!(priced(&Reading { usage: reported, model: Some("m".into()) }, "pkg", &prices), (reported, false));
    }

    #[test]
    fn sums_keep_known_dollars_and_cells_read_short() {
        let a = Usage { input_tokens: 1000, output_tokens: 200, cached_tokens: 300, usd: Usd::from_dollars(0.1659) };
        let b = Usage { input_tokens: 10, output_tokens: 5, cached_tokens: 0, usd: None };
        let s = Usage::sum([&a, &b]).unwrap();
        assert_eq!(s, Usage { input_tokens: 1010, output_tokens: 205, cached_tokens: 300, usd: Usd::from_dollars(0.1659) });
        assert_eq!(s.brief(), "1.5k tok $0.1659");
        assert_eq!(b.brief(), "15 tok");
        assert_eq!(Usd::from_dollars(2.0).unwrap().to_string(), "$2.00");
        assert_eq!(Usage::from_yaml(&s.to_yaml()), Some(s));
        assert_eq!(Usage::sum([]), None);
    }
}
