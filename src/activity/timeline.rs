//! The activity timeline beside its artifact (`.lore/<kind>/<id>.timeline.jsonl`, for every kind),
//! append-only across attempts, one JSON event per line. Appends are deduplicated by event key so a
//! pass repeated after a crash does not record the same thing twice. Also how events read to a
//! person (`render`, the `created` event every timeline opens with, and the one plural rule,
//! `counted`).

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde_json::{Map, Value};

/// Timestamps as written everywhere (artifact, timeline, logs): RFC 3339, UTC, milliseconds.
pub fn timestamp(t: chrono::DateTime<chrono::Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// `n` things, said as a person would: `1 commission`, `2 commissions`, `3 processes`. The
/// one plural rule of every text guild-hall writes (the CLI's tables, pass entries, notes).
pub fn counted(n: usize, one: &str) -> String {
    match n {
        1 => format!("1 {one}"),
        _ if one.ends_with('s') => format!("{n} {one}es"),
        _ => format!("{n} {one}s"),
    }
}

/// What an update that only adds timeline events says it does, as a pass prints it:
/// `timeline: recorded 2 events (anomaly, log)`: the events' kinds, in their order, once each
/// (a liveness judgement as what it found: `worker stale`).
pub(crate) fn recorded(events: &[Value]) -> String {
    let mut kinds: Vec<String> = Vec::new();
    for e in events {
        let Some(kind) = e["kind"].as_str() else { continue };
        let said = match (kind, e["state"].as_str()) {
            ("heartbeat", Some(state)) => format!("worker {state}"),
            _ => kind.to_string(),
        };
        if !kinds.contains(&said) {
            kinds.push(said);
        }
    }
    let kinds = if kinds.is_empty() { String::new() } else { format!(" ({})", kinds.join(", ")) };
    format!("timeline: recorded {}{kinds}", counted(events.len(), "event"))
}

/// Where a commission artifact's timeline lives.
pub fn path_for(artifact: &Path) -> PathBuf {
    artifact.with_extension("timeline.jsonl")
}

/// A timeline event: `ts`, `kind`, a dedupe `key`, then kind-specific fields.
pub(crate) fn event(ts: &str, kind: &str, key: String, fields: Value) -> Value {
    let mut m = Map::new();
    m.insert("ts".into(), ts.into());
    m.insert("kind".into(), kind.into());
    m.insert("key".into(), key.into());
    if let Value::Object(f) = fields {
        m.extend(f);
    }
    Value::Object(m)
}

/// The first event of every artifact's timeline, the same for every kind: it was created,
/// and with what status (rendered `created    pending`), with how it came to be if that says
/// more (`requested by researcher`). Logged once (its key), when the reconciler first meets it.
pub(crate) fn created(ts: &str, status: &str, how: Option<&str>) -> Value {
    let mut fields = serde_json::json!({"status": status});
    if let Some(h) = how {
        fields["text"] = h.into();
    }
    event(ts, "created", "created".into(), fields)
}

/// Read every event; lines that do not parse are skipped (a torn last line after a crash).
pub fn read(path: &Path) -> Result<Vec<Value>> {
    let text = crate::files::read_text_if_exists(path)?.unwrap_or_default();
    Ok(text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect())
}

/// The keys of every event already in the timeline.
pub(crate) fn keys(path: &Path) -> Result<BTreeSet<String>> {
    Ok(read(path)?.iter().filter_map(|e| e["key"].as_str().map(str::to_string)).collect())
}

/// Append events, skipping any whose key is already present anywhere in the timeline, or
/// (for `status` and `heartbeat` events, which may legitimately repeat) equals the key of the
/// latest event of its kind.
///
/// A timeline reads in time order: an event's `ts` is the time it says (a pass's clock when
/// it observed, a worker's when it wrote its mailbox line) unless that is earlier than an
/// event already written — then it is recorded at that event's time — or later than now, or
/// not a time at all (a worker writes its mailbox): then it is now. Events are stamped
/// before the moment they are written (a pass's observe, a worker's mail folded a pass
/// later, a meeting's turn ending beside a pass that folds its mail), so without this a
/// later line could say an earlier time. Writers of one timeline take turns (a lock on the
/// file), so the last time read is the last written.
pub(crate) fn append(path: &Path, events: &[Value]) -> Result<usize> {
    if events.is_empty() {
        return Ok(0);
    }
    let file = std::fs::OpenOptions::new().create(true).append(true).open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut file = nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive)
        .map_err(|(_, e)| e)
        .with_context(|| format!("locking {}", path.display()))?;
    let existing = read(path)?;
    let mut last_of_kind: BTreeMap<&str, &str> = BTreeMap::new();
    let mut all: BTreeSet<&str> = BTreeSet::new();
    for e in &existing {
        if let (Some(k), Some(key)) = (e["kind"].as_str(), e["key"].as_str()) {
            last_of_kind.insert(k, key);
            all.insert(key);
        }
    }
    let now = chrono::Utc::now();
    // Never past now: one line stamped in the future (a clock ahead, on another machine or in
    // what a worker wrote once) must not drag every later event's time along with it.
    let mut floor = existing.iter().filter_map(time_of).max().map(|f| f.min(now));
    let mut out = String::new();
    let mut n = 0;
    for e in events {
        let kind = e["kind"].as_str().unwrap_or("");
        let key = e["key"].as_str().unwrap_or("");
        let repeatable = matches!(kind, "status" | "heartbeat");
        let dup = if repeatable { last_of_kind.get(kind) == Some(&key) } else { all.contains(key) };
        if dup {
            continue;
        }
        let said = time_of(e);
        let at = said.unwrap_or(now).min(now);
        let at = floor.map_or(at, |f| at.max(f));
        floor = Some(at);
        if said == Some(at) {
            out.push_str(&serde_json::to_string(e)?);
        } else {
            let mut e = e.clone();
            if let Some(fields) = e.as_object_mut() {
                fields.insert("ts".into(), timestamp(at).into());
            }
            out.push_str(&serde_json::to_string(&e)?);
        }
        out.push('\n');
        n += 1;
    }
    if n > 0 {
        file.write_all(out.as_bytes()).with_context(|| format!("appending to {}", path.display()))?;
    }
    Ok(n)
}

/// The time an event says (`ts`), if it is one.
fn time_of(e: &Value) -> Option<chrono::DateTime<chrono::Utc>> {
    e["ts"].as_str().and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok()).map(|t| t.with_timezone(&chrono::Utc))
}

/// A `merge` event's `commit` when the branch brought no change (the squash made no commit).
pub(crate) const NOTHING_TO_MERGE: &str = "nothing to merge";

/// One line of human-readable timeline.
pub fn render(e: &Value) -> String {
    let ts = e["ts"].as_str().unwrap_or("?");
    let kind = e["kind"].as_str().unwrap_or("?");
    let s = |k: &str| e[k].as_str().unwrap_or("").to_string();
    let detail = match kind {
        "status" => {
            let reason = s("reason");
            let tail = if reason.is_empty() { String::new() } else { format!(" ({reason})") };
            let stopping = if s("stopping").is_empty() { String::new() } else { format!("; {}", s("stopping")) };
            format!("{} -> {}{tail}{stopping}", s("from"), s("to"))
        }
        // `created    pending (requested by researcher)`: the status it was created with.
        "created" => match e["text"].as_str() {
            Some(how) => format!("{} ({how})", s("status")),
            None => s("status"),
        },
        // A question the worker waits on says so, with its number (what `answer` takes).
        "question" if e["waiting"] == true => format!("{} (question {}, waiting for an answer)", s("text"), e["question"]),
        "progress" | "question" | "anomaly" | "heartbeat" | "timeout" | "stopping" | "stopped" | "edited" | "setup" | "spawned" => {
            s("text")
        }
        "answered" => format!("question {}: {}", e["question"], s("text")),
        "no_answer" => format!("question {}: {}", e["question"], s("text")),
        "meeting_requested" => format!("meeting {}: {}", s("meeting"), s("text")),
        "decision" => format!("{} => {} ({})", s("question"), s("decision"), s("reasoning")),
        "result" => s("summary"),
        "artifact" => s("path"),
        "memory" => format!("stored memory {}", s("key")),
        // A close or completion that changed nothing has no commit ("nothing to merge").
        "merge" if s("commit") == NOTHING_TO_MERGE => format!("no changes to merge into {}", s("branch")),
        "merge" => format!("merged into {} as {}", s("branch"), s("commit")),
        "redispatch" => format!("attempt {}", e["attempt"]),
        // A revision: whose feedback, and every item of it.
        "revise" => {
            let feedback: Vec<crate::artifact::Feedback> = serde_json::from_value(e["feedback"].clone()).unwrap_or_default();
            let items: Vec<String> = feedback.iter().map(crate::artifact::Feedback::line_text).collect();
            format!("{} (feedback from the {}: {})", s("text"), s("from"), items.join("; "))
        }
        "refused" if e.get("asked").is_some() => format!("status: {} refused, put back to {} ({})", s("asked"), s("status"), s("reason")),
        "refused" | "request" => s("text"),
        "turn" => format!("turn {} {}", e["turn"], s("outcome")),
        "task" => {
            let why = e["reason"].as_str().map(|r| format!(" ({r})")).unwrap_or_default();
            let commit = e["commit"].as_str().map(|c| format!(" as {c}")).unwrap_or_default();
            format!("{} {}{commit}{why}", s("task"), s("state"))
        }
        "task_update" => format!("{} reports {} (sequence {})", s("task"), s("status"), e["sequence"]),
        "task_update_ignored" | "orphaned" | "rerun_required" => format!("{}: {}", s("task"), s("text")),
        "link" => format!("linked {}", s("path")),
        "summary" => s("text"),
        "followup" => format!("proposed a follow-up: {}", s("reason")),
        "session_renewed" => format!("session {} expired; renewed as {}", s("old"), s("new")),
        // An entry of Guild Hall's own log (`activity_timeline:`, `meeting_log:`).
        "entry" => format!("{}: {}", s("event"), s("text")),
        _ => e.to_string(),
    };
    format!("{ts}  {kind:<10} {detail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_revision_says_whose_feedback_and_every_item() {
        let e = serde_json::json!({"ts": "t", "kind": "revise", "text": "attempt 2 continues attempt 1's work on b", "from": "person",
            "feedback": [{"text": "shorter"}, {"text": "here", "path": "a.md", "line": 3}]});
        assert_eq!(render(&e), "t  revise     attempt 2 continues attempt 1's work on b (feedback from the person: shorter; a.md:3: here)");
    }

    #[test]
    fn an_update_of_events_only_says_what_it_recorded() {
        let e = |kind: &str| event("2026-01-01T00:00:00Z", kind, kind.into(), serde_json::json!({}));
        assert_eq!(recorded(&[e("anomaly")]), "timeline: recorded 1 event (anomaly)");
        assert_eq!(recorded(&[e("log"), e("anomaly"), e("log")]), "timeline: recorded 3 events (log, anomaly)");
        assert_eq!(recorded(&[]), "timeline: recorded 0 events");
        let stale = event("2026-01-01T00:00:00Z", "heartbeat", "heartbeat:1:stale".into(), serde_json::json!({"state": "stale"}));
        assert_eq!(recorded(&[stale]), "timeline: recorded 1 event (worker stale)");
    }

    #[test]
    fn a_timeline_reads_in_time_order_whatever_its_events_say() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("x.timeline.jsonl");
        let at = |ts: &str, key: &str| event(ts, "progress", key.into(), serde_json::json!({"text": key}));
        let before = timestamp(chrono::Utc::now());
        append(&path, &[at("2026-01-01T00:00:10.000Z", "first")]).expect("append");
        // Stamped before the event already written (a pass's observe, a worker's mail folded
        // later): recorded at that event's time, after it.
        append(&path, &[at("2026-01-01T00:00:05.000Z", "earlier"), at("2026-01-01T00:00:20.000Z", "later")]).expect("append");
        // A time in the future, or no time at all (a worker's mailbox line): now.
        append(&path, &[at("2999-01-01T00:00:00.000Z", "future"), at("yesterday", "garbage")]).expect("append");
        let after = timestamp(chrono::Utc::now());
        let got: Vec<(String, String)> = read(&path)
            .expect("read")
            .iter()
            .map(|e| (e["key"].as_str().unwrap_or("").into(), e["ts"].as_str().unwrap_or("").into()))
            .collect();
        assert_eq!(
            got[..3],
            [
                ("first".to_string(), "2026-01-01T00:00:10.000Z".to_string()),
                ("earlier".into(), "2026-01-01T00:00:10.000Z".into()),
                ("later".into(), "2026-01-01T00:00:20.000Z".into())
            ]
        );
        for (key, ts) in &got[3..] {
            assert!(before <= *ts && *ts <= after, "{key} at {ts}, written between {before} and {after}");
        }
        assert!(got.windows(2).all(|w| w[0].1 <= w[1].1), "{got:?}");
    }

    #[test]
    fn a_line_from_the_future_drags_no_later_event_along() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("x.timeline.jsonl");
        // Written by a clock far ahead (another machine's, merged in through git).
        std::fs::write(&path, format!("{}\n", event("2999-01-01T00:00:00.000Z", "progress", "ahead".into(), serde_json::json!({}))))
            .expect("write");
        let before = timestamp(chrono::Utc::now());
        append(&path, &[event(&before, "progress", "now".into(), serde_json::json!({}))]).expect("append");
        let after = timestamp(chrono::Utc::now());
        let got = read(&path).expect("read");
        let ts = got[1]["ts"].as_str().unwrap_or("").to_string();
        assert!(before <= ts && ts <= after, "recorded at {ts}, not the future line's time");
    }
}
