//! Rate and usage limits an agent ran into: read by the shim from the end of an attempt's own
//! output once its worker has ended ([`scan`]: Claude Code's `result` with `api_error_status`
//! 429 or its limit words, Codex's `turn.failed`, Gemini CLI's quota errors, the `error` line
//! guild-hall's ACP client prints, and guild-hall's own `limit` line any package may print),
//! with the reset time when the agent said one, and recorded beside the attempt's exit
//! (`attempt-N.limit.json`). An attempt ended so is no failure: the kinds make it wait.
//!
//! Trust: like usage, the agent's word. A worker that forges a limit only delays itself (its
//! attempt is not a failure, and runs again later), and a reset time is held within a week.

use chrono::{DateTime, Datelike, Duration, NaiveDate, NaiveTime, TimeZone, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

/// How much of the end of an attempt's log is read for its agent's last report.
pub(crate) const SCAN_BYTES: u64 = 64 * 1024;

/// The longest a reset time may be away: beyond it (a typo, a forgery) it is not believed.
const RESET_HORIZON: Duration = Duration::days(8);

/// How much of the agent's words is kept.
const SAID_CHARS: usize = 300;

/// One attempt ended by a limit: the agent's words, and when it said the limit resets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Limited {
    pub(crate) said: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) resets_at: Option<DateTime<Utc>>,
}

/// The limit the end of an attempt's output reports, if its last verdict is one: a later
/// success (a turn completed, a result without error) means the limit did not end it.
/// Relative times ("try again in 5 minutes") and clock times ("resets 3pm") are read against
/// `now`, the time the attempt ended, clock times in this machine's time zone.
pub(crate) fn scan(text: &str, now: DateTime<Utc>) -> Option<Limited> {
    let mut verdict: Option<Limited> = None;
    // Claude Code's `rate_limit_event` says when a rejected limit resets, before its result.
    let mut announced: Option<DateTime<Utc>> = None;
    for line in text.lines() {
        let line = line.trim();
        if !line.starts_with('{') || !line.contains("\"type\"") {
            continue;
        }
        let Ok(v) = serde_json::from_str::<Json>(line) else { continue };
        match judge(&v, now) {
            Some(Line::Limit(mut l)) => {
                if l.resets_at.is_none() {
                    l.resets_at = announced;
                }
                verdict = Some(l);
            }
            Some(Line::Resets(at)) => announced = Some(at),
            Some(Line::Fine) => verdict = None,
            None => {}
        }
    }
    verdict.map(|l| Limited { resets_at: l.resets_at.filter(|t| *t <= now + RESET_HORIZON), ..l })
}

/// What one line of output says about limits.
enum Line {
    Limit(Limited),
    Resets(DateTime<Utc>),
    /// A turn that went through: any limit before it did not end the attempt.
    Fine,
}

fn judge(v: &Json, now: DateTime<Utc>) -> Option<Line> {
    let text = |j: &Json| j.as_str().map(str::to_string);
    let limited = |said: String| {
        let resets_at = resets_in(&said, now);
        Some(Line::Limit(Limited { said: short(&said), resets_at }))
    };
    match v["type"].as_str()? {
        // guild-hall's own line: any package may print it (docs/workers.md).
        "limit" => {
            let said = text(&v["text"]).unwrap_or_else(|| "the agent reported a usage limit".into());
            let resets_at = v["resets_at"].as_str().and_then(|t| DateTime::parse_from_rfc3339(t).ok()).map(|t| t.with_timezone(&Utc));
            Some(Line::Limit(Limited { said: short(&said), resets_at: resets_at.or_else(|| resets_in(&said, now)) }))
        }
        // Claude Code: a rejected limit and when it resets (a subscription's).
        "rate_limit_event" => {
            let info = &v["rate_limit_info"];
            (info["status"] == "rejected").then_some(())?;
            let at = info["resetsAt"].as_i64().and_then(|s| DateTime::from_timestamp(s, 0))?;
            Some(Line::Resets(at))
        }
        // Claude Code's and Gemini CLI's end of a run.
        "result" => {
            let said = text(&v["result"]).or_else(|| text(&v["error"]["message"])).or_else(|| text(&v["error"])).unwrap_or_default();
            let is_error = v["is_error"] == true || v["status"] == "error" || v["error"].is_object();
            if v["api_error_status"] == 429 || (is_error && names_a_limit(&said)) {
                limited(if said.is_empty() { "HTTP 429".into() } else { said })
            } else if is_error {
                None
            } else {
                Some(Line::Fine)
            }
        }
        // Codex: a turn failed, or an error said on the way; guild-hall's ACP client's error.
        "turn.failed" | "error" => {
            let said = text(&v["error"]["message"]).or_else(|| text(&v["message"])).or_else(|| text(&v["reason"])).unwrap_or_default();
            if names_a_limit(&said) {
                limited(said)
            } else {
                None
            }
        }
        "turn.completed" | "turn_end" => Some(Line::Fine),
        _ => None,
    }
}

/// Words of a rate or usage limit, as the agents and their APIs say them.
fn names_a_limit(said: &str) -> bool {
    let s = said.to_lowercase();
    [
        "rate limit",
        "rate_limit",
        "usage limit",
        "usage_limit",
        "too many requests",
        "429",
        "quota exceeded",
        "exceeded your current quota",
        "resource_exhausted",
        "resource exhausted",
        "hit your limit",
        "you've hit your",
        "you\u{2019}ve hit your",
        "you've reached your",
        "you\u{2019}ve reached your",
    ]
    .iter()
    .any(|w| s.contains(w))
}

fn short(said: &str) -> String {
    let one = crate::activity::state::strip_escapes(said).split_whitespace().collect::<Vec<_>>().join(" ");
    if one.chars().count() > SAID_CHARS {
        format!("{}…", one.chars().take(SAID_CHARS).collect::<String>())
    } else {
        one
    }
}

/// When the agent's words say the limit resets: an epoch after `|` (Claude Code's older
/// "usage limit reached|1751234567"), an RFC 3339 time, "in 5 minutes", or a clock time after
/// "resets" or "try again at" ("3pm", "7:57 PM", "Nov 29th, 2026 3:00 PM").
pub(crate) fn resets_in(said: &str, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    if let Some((_, tail)) = said.rsplit_once('|') {
        let digits: String = tail.trim().chars().take_while(char::is_ascii_digit).collect();
        if (9..=11).contains(&digits.len()) {
            if let Some(t) = digits.parse::<i64>().ok().and_then(|s| DateTime::from_timestamp(s, 0)) {
                return Some(t);
            }
        }
    }
    for word in said.split_whitespace() {
        let word = word.trim_matches(|c: char| matches!(c, '(' | ')' | ',' | '"' | '\''));
        let word = word.strip_suffix('.').unwrap_or(word);
        if let Ok(t) = DateTime::parse_from_rfc3339(word) {
            return Some(t.with_timezone(&Utc));
        }
    }
    let lower = said.to_lowercase();
    for marker in ["try again in ", "retry in ", "retry after ", "resets in ", "reset in "] {
        if let Some(at) = lower.find(marker) {
            // A duration past what a date can hold ("in 300000 years") says no reset time.
            if let Some(t) = duration_words(&lower[at + marker.len()..]).and_then(|d| now.checked_add_signed(d)) {
                return Some(t);
            }
        }
    }
    for marker in ["try again at ", "resets at ", "reset at ", "resets "] {
        if let Some(at) = lower.find(marker) {
            if let Some(t) = clock_words(&lower[at + marker.len()..], now) {
                return Some(t);
            }
        }
    }
    None
}

/// "5 minutes", "1 hour 30 minutes", "90s", "2h": up to the end of the phrase.
fn duration_words(rest: &str) -> Option<Duration> {
    let phrase: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == ' ').collect();
    let words: Vec<&str> = phrase.split_whitespace().filter(|w| *w != "and").collect();
    // The longest run of words that reads as a duration.
    (1..=words.len().min(6)).rev().find_map(|n| {
        let d = humantime::parse_duration(&words[..n].join(" ")).ok()?;
        (d.as_secs() > 0).then(|| Duration::from_std(d).ok()).flatten()
    })
}

/// A clock time, with a date or not, in this machine's time zone ("(UTC)" after it: in UTC):
/// the next such moment from `now` when no date is said.
fn clock_words(rest: &str, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    let phrase: String = rest.chars().take_while(|c| !matches!(c, ';' | '\n')).take(60).collect();
    let utc = phrase.contains("(utc)") || phrase.contains(" utc");
    let words: Vec<String> = phrase
        .replace(" at ", " ")
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| matches!(c, ',' | '(' | ')' | '.')).to_string())
        .collect();
    // The clock: "3pm", "3:30pm", "7:57 pm" (the marker as its own word), "15:00".
    let mut clock = None;
    let mut date_words = Vec::new();
    for (i, w) in words.iter().enumerate() {
        let next = words.get(i + 1).map(String::as_str);
        let (body, meridiem) = match (w.strip_suffix("am").or_else(|| w.strip_suffix("pm")), next) {
            (Some(b), _) if !b.is_empty() => (b.to_string(), Some(w.ends_with("pm"))),
            (_, Some(m @ ("am" | "pm"))) => (w.clone(), Some(m == "pm")),
            _ => (w.clone(), None),
        };
        if let Some(t) = clock_of(&body, meridiem) {
            clock = Some(t);
            break;
        }
        date_words.push(w.clone());
    }
    let clock = clock?;
    let date = date_of(&date_words, now);
    let local = |d: NaiveDate| {
        let naive = d.and_time(clock);
        if utc {
            Some(Utc.from_utc_datetime(&naive))
        } else {
            chrono::Local.from_local_datetime(&naive).earliest().map(|t| t.with_timezone(&Utc))
        }
    };
    match date {
        Some(d) => local(d),
        None => {
            let today = if utc { now.date_naive() } else { now.with_timezone(&chrono::Local).date_naive() };
            // A clock time just passed is today's (said to the minute, a reset seconds away
            // reads as one passed); one passed by more than an hour is tomorrow's.
            let t = local(today)?;
            if t + Duration::hours(1) < now {
                local(today.succ_opt()?)
            } else {
                Some(t)
            }
        }
    }
}

fn clock_of(body: &str, pm: Option<bool>) -> Option<NaiveTime> {
    let (h, m) = match body.split_once(':') {
        Some((h, m)) => (h.parse::<u32>().ok()?, m.parse::<u32>().ok()?),
        None if pm.is_some() => (body.parse::<u32>().ok()?, 0),
        None => return None,
    };
    let h = match pm {
        Some(pm) if (1..=12).contains(&h) => h % 12 + if pm { 12 } else { 0 },
        Some(_) => return None,
        None if h < 24 => h,
        None => return None,
    };
    NaiveTime::from_hms_opt(h, m, 0)
}

/// "nov 29th 2026", "nov 29": a month's name and a day, the year when said, else this year's
/// (next year's when that has passed by more than a day).
fn date_of(words: &[String], now: DateTime<Utc>) -> Option<NaiveDate> {
    const MONTHS: [&str; 12] = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
    let i = words.iter().position(|w| MONTHS.iter().any(|m| w.starts_with(m)))?;
    let month = MONTHS.iter().position(|m| words[i].starts_with(m))? as u32 + 1;
    let day: u32 = words.get(i + 1)?.trim_end_matches(|c: char| c.is_ascii_alphabetic()).parse().ok()?;
    let year = words.get(i + 2).and_then(|y| y.parse::<i32>().ok()).filter(|y| (2000..3000).contains(y));
    match year {
        Some(y) => NaiveDate::from_ymd_opt(y, month, day),
        None => {
            let d = NaiveDate::from_ymd_opt(now.year(), month, day)?;
            if d.succ_opt()? < now.date_naive() {
                NaiveDate::from_ymd_opt(now.year() + 1, month, day)
            } else {
                Some(d)
            }
        }
    }
}

/// The limit the shim recorded for `attempt` in `state`, with how many attempts in a row up to
/// it ended at one (their records stay in the runtime dir, so this survives a crash).
pub(crate) fn observed(state: &crate::activity::state::StateDir, attempt: u32) -> Option<(Limited, u32)> {
    let limited = crate::files::read_json::<Limited>(&state.limit(attempt)).ok().flatten()?;
    let streak = 1 + (1..attempt).rev().take_while(|a| state.limit(*a).exists()).count() as u32;
    Some((limited, streak))
}

/// What an attempt that ended at a limit waits until: the reset time the agent said, else a
/// backoff from its end that doubles with each limited attempt in a row (`streak`, this one
/// included): 1m, 2m, 4m, … at most an hour. A reset time is held at least as far as a backoff
/// in seconds (1s, 2s, 4s, … at most a minute): one already passed (said to the minute, or a
/// clock apart) does not start attempt after attempt at once.
pub(crate) fn not_before(limited: &Limited, ended: DateTime<Utc>, streak: u32) -> DateTime<Utc> {
    match limited.resets_at {
        Some(at) => at.max(ended + Duration::seconds(doubling(streak))),
        None => ended + backoff(streak),
    }
}

/// 1m, 2m, 4m, … for the 1st, 2nd, 3rd limited attempt in a row, at most an hour.
pub(crate) fn backoff(streak: u32) -> Duration {
    Duration::minutes(doubling(streak))
}

/// 1, 2, 4, … 60 at most, for the 1st, 2nd, 3rd … in a row.
fn doubling(streak: u32) -> i64 {
    1i64.checked_shl(streak.saturating_sub(1).min(10)).unwrap_or(i64::MAX).min(60)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(rfc: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(rfc).expect("time").with_timezone(&Utc)
    }

    const NOW: &str = "2026-11-28T19:00:00Z";

    /// What the real Claude Code 2.1 printed against a stand-in answering 429 (an API key's
    /// rate limit: no reset time in its output).
    #[test]
    fn claude_codes_429_result_is_a_limit() {
        let out = r#"{"type":"assistant","message":{"content":[{"type":"text","text":"API Error: Request rejected (429) · This request would exceed your rate limit."}]},"error":"rate_limit"}
{"type":"result","subtype":"success","is_error":true,"api_error_status":429,"num_turns":1,"result":"API Error: Request rejected (429) · This request would exceed your rate limit.","total_cost_usd":0}"#;
        let l = scan(out, t(NOW)).expect("a limit");
        assert_eq!(l.said, "API Error: Request rejected (429) · This request would exceed your rate limit.");
        assert_eq!(l.resets_at, None);
        // A subscription's reset, said before the result.
        let with_event =
            format!("{{\"type\":\"rate_limit_event\",\"rate_limit_info\":{{\"status\":\"rejected\",\"resetsAt\":1795893600}}}}\n{out}");
        assert_eq!(scan(&with_event, t(NOW)).and_then(|l| l.resets_at), DateTime::from_timestamp(1795893600, 0));
        let old = r#"{"type":"result","is_error":true,"result":"Claude AI usage limit reached|1795893600"}"#;
        assert_eq!(scan(old, t(NOW)).and_then(|l| l.resets_at), DateTime::from_timestamp(1795893600, 0));
    }

    /// What the real Codex 0.169 printed against a stand-in answering 429.
    #[test]
    fn codexs_failed_turn_at_a_limit_is_one() {
        let plan = r#"{"type":"turn.started"}
{"type":"error","message":"You’ve hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), visit https://chatgpt.com/settings/usage to purchase more credits or try again at 7:57 PM."}
{"type":"turn.failed","error":{"message":"You’ve hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), visit https://chatgpt.com/settings/usage to purchase more credits or try again at 7:57 PM."}}"#;
        let l = scan(plan, t(NOW)).expect("a limit");
        let at = l.resets_at.expect("a reset time").with_timezone(&chrono::Local);
        assert_eq!((at.format("%H:%M").to_string()), "19:57");
        assert!(l.resets_at.unwrap() > t(NOW) - Duration::hours(14) && l.resets_at.unwrap() <= t(NOW) + Duration::days(1));
        let api = r#"{"type":"turn.failed","error":{"message":"exceeded retry limit, last status: 429 Too Many Requests"}}"#;
        assert_eq!(scan(api, t(NOW)).map(|l| l.resets_at), Some(None));
    }

    #[test]
    fn a_later_success_or_another_error_is_no_limit() {
        let recovered = "{\"type\":\"error\",\"message\":\"429 Too Many Requests\"}\n{\"type\":\"turn.completed\",\"usage\":{}}\n";
        assert_eq!(scan(recovered, t(NOW)), None);
        let other = r#"{"type":"turn.failed","error":{"message":"stream disconnected"}}"#;
        assert_eq!(scan(other, t(NOW)), None);
        // A model's answer that talks about rate limits is no limit.
        let answer = r#"{"type":"result","is_error":false,"result":"I added a rate limit of 429 per minute."}"#;
        assert_eq!(scan(answer, t(NOW)), None);
        assert_eq!(scan("rate limit\nnot json {\"type\"", t(NOW)), None);
    }

    #[test]
    fn guild_halls_own_line_and_acp_errors() {
        let own = r#"{"type":"limit","text":"quota","resets_at":"2026-11-28T21:00:00Z"}"#;
        assert_eq!(scan(own, t(NOW)), Some(Limited { said: "quota".into(), resets_at: Some(t("2026-11-28T21:00:00Z")) }));
        let acp = r#"{"type":"error","reason":"session/prompt: Rate limit exceeded: 429, try again in 90 seconds"}"#;
        assert_eq!(scan(acp, t(NOW)).and_then(|l| l.resets_at), Some(t("2026-11-28T19:01:30Z")));
        let gemini = r#"{"type":"result","status":"error","error":{"type":"FatalError","message":"Quota exceeded for quota metric 'Generate Content API requests per minute'"}}"#;
        assert_eq!(scan(gemini, t(NOW)).map(|l| l.resets_at), Some(None));
        // Too far away to believe.
        let far = r#"{"type":"limit","resets_at":"2027-01-01T00:00:00Z"}"#;
        assert_eq!(scan(far, t(NOW)).map(|l| l.resets_at), Some(None));
    }

    #[test]
    fn reset_times_in_words() {
        let now = t(NOW);
        assert_eq!(resets_in("resets 9pm (UTC)", now), Some(t("2026-11-28T21:00:00Z")));
        assert_eq!(resets_in("You've hit your session limit · resets 3:30am (UTC)", now), Some(t("2026-11-29T03:30:00Z")));
        assert_eq!(resets_in("try again at Nov 30th, 2026 3:00 PM (UTC)", now), Some(t("2026-11-30T15:00:00Z")));
        assert_eq!(resets_in("try again in 5 minutes.", now), Some(t("2026-11-28T19:05:00Z")));
        // Said to the minute: a reset seconds away reads as just passed, still today.
        assert_eq!(resets_in("try again at 6:59 PM (UTC).", now), Some(t("2026-11-28T18:59:00Z")));
        assert_eq!(resets_in("try again at 5:30 PM (UTC).", now), Some(t("2026-11-29T17:30:00Z")));
        assert_eq!(resets_in("resets at 2026-11-28T20:00:00Z.", now), Some(t("2026-11-28T20:00:00Z")));
        assert_eq!(resets_in("This request would exceed your rate limit.", now), None);
        // A worker's words past what a date holds are no reset time, never a panic.
        assert_eq!(resets_in("try again in 300000 years", now), None);
    }

    #[test]
    fn not_before_is_the_reset_else_a_doubling_backoff() {
        let ended = t(NOW);
        let at = Limited { said: String::new(), resets_at: Some(t("2026-11-28T20:00:00Z")) };
        assert_eq!(not_before(&at, ended, 3), t("2026-11-28T20:00:00Z"));
        let past = Limited { said: String::new(), resets_at: Some(t("2026-11-28T18:59:00Z")) };
        assert_eq!(not_before(&past, ended, 1), t("2026-11-28T19:00:01Z"));
        assert_eq!(not_before(&past, ended, 3), t("2026-11-28T19:00:04Z"));
        assert_eq!(not_before(&past, ended, 30), t("2026-11-28T19:01:00Z"));
        let none = Limited { said: String::new(), resets_at: None };
        let waits: Vec<i64> = (1..=9).map(|k| (not_before(&none, ended, k) - ended).num_minutes()).collect();
        assert_eq!(waits, [1, 2, 4, 8, 16, 32, 60, 60, 60]);
        assert_eq!(backoff(0), Duration::minutes(1));
        assert_eq!(backoff(u32::MAX), Duration::minutes(60));
    }
}
