//! Five-field cron expressions in UTC (minute, hour, day of month, month, day of week), as a
//! scheduled commission's `schedule.cron` says them: parsed once, matched against a minute,
//! and the next matching minute after an instant. Pure: no clock, no I/O.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Datelike, Duration, TimeZone, Timelike, Utc};

/// A parsed expression: each field as the set of values it allows (bit `n`: value `n`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cron {
    minutes: u64,
    hours: u32,
    days: u32,
    months: u16,
    weekdays: u8,
    /// Day of month or day of week written as `*...`: then both must match; when both are
    /// restricted, either may (cron's rule, and croner's, which Guild Hall used).
    days_any: bool,
    weekdays_any: bool,
    text: String,
}

/// Why a cron expression is refused: said with the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum CronError {
    #[error("cron {text:?}: five fields (minute hour day-of-month month day-of-week) are expected, not {count}")]
    Fields { text: String, count: usize },
    #[error("cron {text:?}: the {field} field {part:?} is not {allowed}")]
    Field { text: String, field: &'static str, part: String, allowed: String },
}

struct Spec {
    name: &'static str,
    min: u32,
    max: u32,
    names: &'static [&'static str],
}

const FIELDS: [Spec; 5] = [
    Spec { name: "minute", min: 0, max: 59, names: &[] },
    Spec { name: "hour", min: 0, max: 23, names: &[] },
    Spec { name: "day-of-month", min: 1, max: 31, names: &[] },
    Spec { name: "month", min: 1, max: 12, names: &["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"] },
    // 7 is Sunday too.
    Spec { name: "day-of-week", min: 0, max: 7, names: &["sun", "mon", "tue", "wed", "thu", "fri", "sat"] },
];

impl Spec {
    fn value(&self, s: &str) -> Option<u32> {
        if let Some(i) = self.names.iter().position(|n| n.eq_ignore_ascii_case(s)) {
            return Some(i as u32 + if self.name == "month" { 1 } else { 0 });
        }
        s.parse::<u32>().ok().filter(|v| (self.min..=self.max).contains(v))
    }

    /// The set `part` (a comma list of `*`, `N`, `A-B`, each with an optional `/STEP`) allows.
    fn set(&self, part: &str) -> Option<u64> {
        let mut bits = 0u64;
        for item in part.split(',') {
            let (range, step) = match item.split_once('/') {
                Some((r, s)) => (r, s.parse::<u32>().ok().filter(|s| *s > 0)?),
                None => (item, 1),
            };
            let (lo, hi) = match range {
                "*" => (self.min, self.max),
                r => match r.split_once('-') {
                    Some((a, b)) => (self.value(a)?, self.value(b)?),
                    // `N/STEP`: from N to the end.
                    None if item.contains('/') => (self.value(r)?, self.max),
                    None => {
                        let v = self.value(r)?;
                        (v, v)
                    }
                },
            };
            if lo > hi {
                return None;
            }
            let mut v = lo;
            while v <= hi {
                bits |= 1 << v;
                // A step past the field's end (`5/4294967295`) selects its start alone.
                let Some(next) = v.checked_add(step) else { break };
                v = next;
            }
        }
        Some(bits)
    }
}

impl FromStr for Cron {
    type Err = CronError;

    fn from_str(text: &str) -> Result<Cron, CronError> {
        let parts: Vec<&str> = text.split_whitespace().collect();
        if parts.len() != 5 {
            return Err(CronError::Fields { text: text.to_string(), count: parts.len() });
        }
        let mut sets = [0u64; 5];
        for (i, (spec, part)) in FIELDS.iter().zip(&parts).enumerate() {
            sets[i] = spec.set(part).ok_or_else(|| CronError::Field {
                text: text.to_string(),
                field: spec.name,
                part: part.to_string(),
                allowed: format!(
                    "`*`, a value {}-{}{}, a range `A-B` or a list, each with an optional `/STEP`",
                    spec.min,
                    spec.max,
                    if spec.names.is_empty() { String::new() } else { format!(" (or {}…)", spec.names[..3].join(", ")) }
                ),
            })?;
        }
        // Sunday is 0 and 7.
        let weekdays = (sets[4] | (sets[4] >> 7)) & 0x7f;
        Ok(Cron {
            minutes: sets[0],
            hours: sets[1] as u32,
            days: sets[2] as u32,
            months: sets[3] as u16,
            weekdays: weekdays as u8,
            days_any: parts[2].starts_with('*'),
            weekdays_any: parts[4].starts_with('*'),
            text: parts.join(" "),
        })
    }
}

impl fmt::Display for Cron {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Cron {
    fn day_matches(&self, t: &DateTime<Utc>) -> bool {
        let dom = self.days & (1 << t.day()) != 0;
        let dow = self.weekdays & (1 << t.weekday().num_days_from_sunday()) != 0;
        if self.days_any || self.weekdays_any {
            dom && dow
        } else {
            dom || dow
        }
    }

    /// Whether the minute `t` is in falls on the expression.
    #[cfg(test)]
    pub(crate) fn matches(&self, t: DateTime<Utc>) -> bool {
        self.months & (1 << t.month()) != 0
            && self.day_matches(&t)
            && self.hours & (1 << t.hour()) != 0
            && self.minutes & (1 << t.minute()) != 0
    }

    /// The first minute strictly after `t` the expression names; `None` if none within the
    /// next 30 years (`0 0 30 2 *`: February has no 30th).
    pub(crate) fn next_after(&self, t: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let floor = Utc.with_ymd_and_hms(t.year(), t.month(), t.day(), t.hour(), t.minute(), 0).single()?;
        let mut c = floor + Duration::minutes(1);
        let end = c + Duration::days(366 * 30);
        while c < end {
            if self.months & (1 << c.month()) == 0 {
                // The first minute of the next month.
                let (y, m) = if c.month() == 12 { (c.year() + 1, 1) } else { (c.year(), c.month() + 1) };
                c = Utc.with_ymd_and_hms(y, m, 1, 0, 0, 0).single()?;
            } else if !self.day_matches(&c) {
                c = Utc.with_ymd_and_hms(c.year(), c.month(), c.day(), 0, 0, 0).single()? + Duration::days(1);
            } else if self.hours & (1 << c.hour()) == 0 {
                c = Utc.with_ymd_and_hms(c.year(), c.month(), c.day(), c.hour(), 0, 0).single()? + Duration::hours(1);
            } else if self.minutes & (1 << c.minute()) == 0 {
                c += Duration::minutes(1);
            } else {
                return Some(c);
            }
        }
        None
    }

    /// The last minute the expression names in `(after, upto]`, if any: the tick a run is due
    /// for, however many were missed before it.
    pub(crate) fn last_in(&self, after: DateTime<Utc>, upto: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let first = self.next_after(after).filter(|t| *t <= upto)?;
        // Walked from a week before `upto` (a dense expression's ticks there are found without
        // walking every one since `after`); an expression with none that week is sparse enough
        // to walk from `first`.
        let walk = |from: DateTime<Utc>| {
            let mut last = None;
            let mut c = from;
            while let Some(t) = self.next_after(c).filter(|t| *t <= upto) {
                last = Some(t);
                c = t;
            }
            last
        };
        walk((upto - Duration::days(7)).max(first)).or_else(|| walk(first)).or(Some(first))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).expect("time").with_timezone(&Utc)
    }

    fn cron(s: &str) -> Cron {
        s.parse().expect("cron")
    }

    #[test]
    fn next_runs_as_cron_says() {
        assert_eq!(cron("0 9 * * 1").next_after(at("2026-11-28T19:00:00Z")), Some(at("2026-11-30T09:00:00Z")), "Monday 09:00");
        assert_eq!(cron("*/15 * * * *").next_after(at("2026-11-28T19:00:00Z")), Some(at("2026-11-28T19:15:00Z")), "strictly after");
        assert_eq!(cron("*/15 * * * *").next_after(at("2026-11-28T19:07:59Z")), Some(at("2026-11-28T19:15:00Z")));
        assert_eq!(cron("0 0 1 jan *").next_after(at("2026-11-28T19:00:00Z")), Some(at("2027-01-01T00:00:00Z")));
        assert_eq!(cron("0 12 29 2 *").next_after(at("2026-03-01T00:00:00Z")), Some(at("2028-02-29T12:00:00Z")), "a leap day");
        assert_eq!(cron("0 0 30 2 *").next_after(at("2026-03-01T00:00:00Z")), None, "never");
        // A step past the field's end selects its start alone (no overflow).
        assert_eq!(cron("5/4294967295 * * * *").next_after(at("2026-11-28T19:00:00Z")), Some(at("2026-11-28T19:05:00Z")));
        // Both days restricted: either. 2026-12-01 is a Tuesday.
        assert_eq!(cron("0 0 1 * fri").next_after(at("2026-11-28T00:00:00Z")), Some(at("2026-12-01T00:00:00Z")));
        assert_eq!(cron("0 0 * * 7").next_after(at("2026-11-28T00:00:00Z")), Some(at("2026-11-29T00:00:00Z")), "7 is Sunday");
        assert_eq!(cron("5-10/5 1,3 * * *").next_after(at("2026-11-28T01:05:00Z")), Some(at("2026-11-28T01:10:00Z")));
        assert_eq!(cron("0 * * * *").last_in(at("2026-11-28T10:30:00Z"), at("2026-11-30T08:59:00Z")), Some(at("2026-11-30T08:00:00Z")));
        assert_eq!(cron("0 9 1 1 *").last_in(at("2020-01-01T10:00:00Z"), at("2026-11-30T08:59:00Z")), Some(at("2026-01-01T09:00:00Z")));
        assert_eq!(cron("0 * * * *").last_in(at("2026-11-28T10:30:00Z"), at("2026-11-28T10:59:00Z")), None);
    }

    #[test]
    fn a_bad_expression_is_said_at_its_field() {
        for (bad, said) in [
            ("* * * *", "five fields"),
            ("60 * * * *", "the minute field \"60\""),
            ("* * * foo *", "the month field"),
            ("*/0 * * * *", "minute"),
            ("5-1 * * * *", "minute"),
            ("0 9 * * 1 2026", "not 6"),
        ] {
            let e = bad.parse::<Cron>().expect_err(bad).to_string();
            assert!(e.contains(said), "{bad}: {e}");
        }
    }

    /// The brute-force answer: every minute after `t` until one matches.
    fn brute(c: &Cron, t: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let mut m = Utc.with_ymd_and_hms(t.year(), t.month(), t.day(), t.hour(), t.minute(), 0).single()? + Duration::minutes(1);
        for _ in 0..(60 * 24 * 400) {
            if c.matches(m) {
                return Some(m);
            }
            m += Duration::minutes(1);
        }
        None
    }

    fn field(max: u32, min: u32) -> impl Strategy<Value = String> {
        prop_oneof![
            Just("*".to_string()),
            (min..=max).prop_map(|v| v.to_string()),
            (min..=max, 1..6u32).prop_map(|(v, s)| format!("{v}/{s}")),
            (1..8u32).prop_map(|s| format!("*/{s}")),
            (min..=max, min..=max).prop_map(|(a, b)| format!("{}-{}", a.min(b), a.max(b))),
            (min..=max, min..=max).prop_map(|(a, b)| format!("{a},{b}")),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
        /// `next_after` is the first matching minute after the instant, as a walk minute by
        /// minute finds it (within a year and a bit).
        #[test]
        fn next_after_is_the_first_match(m in field(59, 0), h in field(23, 0), d in field(28, 1), mo in field(12, 1), w in field(7, 0),
                                         start in 1_700_000_000i64..1_900_000_000i64) {
            let c: Cron = format!("{m} {h} {d} {mo} {w}").parse().expect("generated expressions parse");
            let t = DateTime::from_timestamp(start, 0).expect("time");
            let fast = c.next_after(t);
            if let Some(n) = fast.filter(|n| *n - t < Duration::days(390)) {
                prop_assert_eq!(Some(n), brute(&c, t));
            }
        }
    }
}
