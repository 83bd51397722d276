//! Guild Hall's dialect of a commission, per file: a commission whose frontmatter holds
//! `prompt:` (or `activity_timeline:`) is one Guild Hall wrote, and stays in Guild Hall's shape.
//! What it means when read (the prompt in `prompt:`, progress in `current_progress:`, its
//! timeline `activity_timeline:`), and how our edits of it are made in its form: which go to
//! the file (status, progress, timeline entries, the result as the body, `linked_artifacts`)
//! and which, having no place in it, are kept in the commission's state dir. Pure: no I/O.

use serde::Deserialize;
use serde_yaml_ng::{Mapping, Value};

use super::write::{double_quoted as quoted, Edit};

/// The keys whose presence makes a commission Guild Hall's.
pub(crate) const MARKS: [&str; 2] = ["prompt", "activity_timeline"];

/// Whether the commission file `text` is in Guild Hall's dialect (a top-level key of
/// [`MARKS`]): how a writer knows, before it edits, which form its edits take.
pub(crate) fn is_dialect(text: &str) -> bool {
    super::frontmatter::split(text)
        .is_ok_and(|sp| sp.yaml.lines().any(|l| MARKS.iter().any(|m| l.strip_prefix(m).is_some_and(|r| r.starts_with(':')))))
}

/// The file in a commission's state dir that keeps, for a file in Guild Hall's dialect, our
/// keys that have no place in it ([`KEPT_KEYS`]), as the mapping our file would hold.
pub(crate) const KEPT_FILE: &str = "artifact-keys.json";

/// Our keys that have no place in Guild Hall's dialect: kept in the state dir, never written
/// to the file. (`result:` goes to the body, and its artifacts to `linked_artifacts:`, as
/// Guild Hall puts them; `reason:` goes to the timeline entry of the change it explains; all
/// three are kept whole here too, as the reconciler reads them back.)
pub(crate) const KEPT_KEYS: [&str; 12] = [
    "created",
    "attempt",
    "branch",
    "result",
    "reason",
    "refused",
    "completed",
    "usage",
    "questions",
    "check_results",
    "reviews",
    "not_before",
];

/// One entry of `activity_timeline:` (or a meeting's `meeting_log:`), as Guild Hall writes it:
/// `timestamp`, `event`, `reason`, and for a status change `from` and `to`; other fields it
/// tolerates are left as written.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, serde::Serialize)]
pub(crate) struct Entry {
    #[serde(default, deserialize_with = "text")]
    pub(crate) timestamp: String,
    #[serde(default, deserialize_with = "text")]
    pub(crate) event: String,
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "some_text")]
    pub(crate) reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "some_text")]
    pub(crate) from: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "some_text")]
    pub(crate) to: Option<String>,
}

/// A scalar as its text (YAML reads an unquoted timestamp as a string, a number as a number).
fn text<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::String(s) => s,
        Value::Null => String::new(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        other => serde_yaml_ng::to_string(&other).unwrap_or_default().trim().to_string(),
    })
}

fn some_text<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    text(d).map(Some)
}

/// A log as written (`activity_timeline:`, `meeting_log:`): its entries, or why it is not one.
pub(crate) fn entries(value: &Value) -> Result<Vec<Entry>, String> {
    match value {
        Value::Null => Ok(Vec::new()),
        Value::Sequence(items) => items
            .iter()
            .enumerate()
            .map(|(i, e)| match e {
                Value::Mapping(_) => serde_yaml_ng::from_value::<Entry>(e.clone()).map_err(|why| format!("entry {}: {why}", i + 1)),
                _ => Err(format!("entry {} is not a mapping of timestamp, event, reason", i + 1)),
            })
            .collect(),
        _ => Err("must be a list of entries (timestamp, event, reason)".into()),
    }
}

/// An entry as one of our timeline events, to be shown with them: a status change as our
/// `status` event, a progress report as `progress`, a submitted result as `result`, its
/// `created` as ours; any other (`opened`, `closed`, a note) as `entry`, with its event's name.
pub(crate) fn as_event(e: &Entry) -> serde_json::Value {
    let reason = e.reason.clone().unwrap_or_default();
    let mut v = match (e.event.as_str(), &e.to) {
        (ev, Some(to)) if ev.starts_with("status_") => {
            serde_json::json!({"kind": "status", "from": e.from.clone().unwrap_or_default(), "to": to, "reason": reason})
        }
        ("created", _) => serde_json::json!({"kind": "created", "status": "pending", "text": reason}),
        ("progress_report", _) => serde_json::json!({"kind": "progress", "text": reason}),
        ("result_submitted", _) => serde_json::json!({"kind": "result", "summary": reason}),
        (ev, _) => serde_json::json!({"kind": "entry", "event": ev, "text": reason}),
    };
    v["ts"] = e.timestamp.clone().into();
    v["from_log"] = true.into();
    v
}

/// A log's entries shown before our own `events`: each as [`as_event`], those written before
/// guild-hall first met the file (its first event); from then on the log's entries are ours
/// mirrored, and our timeline is the fuller record. Ordered by time (stable).
pub(crate) fn merged(log: &[Entry], events: Vec<serde_json::Value>) -> Vec<serde_json::Value> {
    let since = events.iter().filter_map(|e| e["ts"].as_str()).min().map(str::to_string);
    let before = |e: &serde_json::Value| since.as_deref().is_none_or(|s| e["ts"].as_str().is_some_and(|t| t < s));
    let mut all: Vec<serde_json::Value> = log.iter().map(as_event).filter(before).collect();
    all.extend(events);
    all.sort_by(|a, b| a["ts"].as_str().unwrap_or("").cmp(b["ts"].as_str().unwrap_or("")));
    all
}

/// `resource_overrides:` as Guild Hall writes it (`maxTurns`, `maxBudgetUsd`, `model`): the
/// same bounds as our `resources:`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct ResourceOverrides {
    pub(crate) max_turns: Option<u64>,
    pub(crate) max_budget_usd: Option<f64>,
    /// The model its worker runs (Guild Hall's override of its worker's).
    pub(crate) model: Option<String>,
}

/// A commission file in Guild Hall's dialect, as read: what it holds beyond our fields.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Dialect {
    /// The file's body: the result goes there (the prompt is in `prompt:`).
    pub(crate) body: String,
    /// `activity_timeline:` as written.
    pub(crate) timeline: Vec<Entry>,
}

/// What an update of a file in the dialect does: the edits made to the file (our keys renamed
/// to its own: `progress` → `current_progress`), the entries appended to `activity_timeline`,
/// the body (the result's summary), and the edits of the keys kept in the state dir.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Translated {
    pub(crate) file: Vec<Edit>,
    pub(crate) entries: Vec<Entry>,
    pub(crate) body: Option<String>,
    pub(crate) kept: Vec<Edit>,
}

/// Our `edits` (and the timeline `events` they come with) of a file in the dialect whose
/// status is `status` now, in its form. `now`: when, for an entry no event dates.
pub(crate) fn translate(status: Option<&str>, edits: &[Edit], events: &[serde_json::Value], now: &str) -> Translated {
    let mut t = Translated::default();
    let (mut progress, mut result, mut change) = (None, None, None);
    for e in edits {
        match e {
            Edit::Set(k, v) if KEPT_KEYS.contains(&k.as_str()) => {
                t.kept.push(e.clone());
                if k == "result" {
                    result = Some(v);
                }
            }
            Edit::Remove(k) if KEPT_KEYS.contains(&k.as_str()) => t.kept.push(e.clone()),
            Edit::Set(k, v) if k == "progress" => {
                t.file.push(Edit::Set("current_progress".into(), v.clone()));
                progress = v.as_str();
            }
            Edit::Remove(k) if k == "progress" => t.file.push(Edit::Set("current_progress".into(), Value::String(String::new()))),
            Edit::Remove(k) if k == "linked_artifacts" => t.file.push(Edit::Set(k.clone(), Value::Sequence(Vec::new()))),
            Edit::Set(k, v) if k == "status" => {
                t.file.push(e.clone());
                change = v.as_str().filter(|to| Some(*to) != status);
            }
            _ => t.file.push(e.clone()),
        }
    }
    let event = |kind: &str| events.iter().rev().find(|e| e["kind"] == kind);
    let ts = |e: Option<&serde_json::Value>| e.and_then(|e| e["ts"].as_str()).unwrap_or(now).to_string();
    // Every change of status this update carries, in order, from its timeline events (a pass
    // that found the worker already done moves it through `in_progress` to its end at once);
    // else the one the edit says.
    let mut changes: Vec<Entry> = events
        .iter()
        .filter(|e| e["kind"] == "status")
        .filter_map(|e| {
            let to = e["to"].as_str()?;
            Some(Entry {
                timestamp: ts(Some(e)),
                event: format!("status_{to}"),
                reason: Some(e["reason"].as_str().filter(|r| !r.is_empty()).map_or_else(|| format!("status {to}"), str::to_string)),
                from: e["from"].as_str().map(str::to_string),
                to: Some(to.to_string()),
            })
        })
        .collect();
    if changes.last().and_then(|e| e.to.as_deref()) != change {
        changes.clear();
        if let Some(to) = change {
            changes.push(Entry {
                timestamp: now.to_string(),
                event: format!("status_{to}"),
                reason: Some(format!("status {to}")),
                from: status.map(str::to_string),
                to: Some(to.to_string()),
            });
        }
    }
    // In the order it happened for a reader: a start (the worker seen running) before what the
    // worker reported, an end after it, whichever pass noticed which first.
    let starts = |e: &Entry| matches!(e.to.as_deref(), Some("pending" | "blocked" | "dispatched" | "in_progress"));
    let (before, after): (Vec<Entry>, Vec<Entry>) = changes.into_iter().partition(starts);
    t.entries.extend(before);
    if let Some(p) = progress {
        let e = event("progress");
        t.entries.push(Entry { timestamp: ts(e), event: "progress_report".into(), reason: Some(p.to_string()), ..Entry::default() });
    }
    if let Some(r) = result {
        let summary = r.get("summary").and_then(Value::as_str).unwrap_or_default().to_string();
        t.entries.push(Entry {
            timestamp: ts(event("result")),
            event: "result_submitted".into(),
            reason: Some(summary.clone()),
            ..Entry::default()
        });
        t.body = Some(summary);
    }
    t.entries.extend(after);
    t
}

/// `kept` (the keys in the state dir, as last written) with `edits` made.
pub(crate) fn keep(kept: &Mapping, edits: &[Edit]) -> Mapping {
    let mut out = kept.clone();
    for e in edits {
        match e {
            Edit::Set(k, v) => {
                out.insert(Value::String(k.clone()), v.clone());
            }
            Edit::Remove(k) => {
                out.remove(k.as_str());
            }
        }
    }
    out
}

/// The text of the file `text` in the dialect once `t` is made to it, as Guild Hall would
/// write it ([`super::write::apply_in_place`]).
pub(crate) fn apply(text: &str, t: &Translated) -> Result<String, super::write::WriteError> {
    let entries = t.entries.iter().map(|e| (entry_text(e), serde_yaml_ng::to_value(e).unwrap_or(Value::Null))).collect();
    let appended = super::write::Appended { key: "activity_timeline", entries };
    super::write::apply_in_place(text, &t.file, &appended, t.body.as_deref())
}

/// An entry as Guild Hall appends one, two-space indented under its key.
pub(crate) fn entry_text(e: &Entry) -> String {
    let mut out =
        format!("  - timestamp: {}\n    event: {}\n    reason: {}", e.timestamp, e.event, quoted(e.reason.as_deref().unwrap_or("")));
    for (k, v) in [("from", &e.from), ("to", &e.to)] {
        if let Some(v) = v {
            out.push_str(&format!("\n    {k}: {}", quoted(v)));
        }
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn our_edits_go_where_guild_hall_keeps_them() {
        let mut result = Mapping::new();
        result.insert("summary".into(), "Done.\nAll of it.".into());
        let edits = [
            Edit::Set("status".into(), "completed".into()),
            Edit::Set("progress".into(), "half way".into()),
            Edit::Set("result".into(), Value::Mapping(result)),
            Edit::Set("attempt".into(), 1.into()),
            Edit::Set("reason".into(), "submitted".into()),
            Edit::Remove("desired".into()),
        ];
        let events = [
            json!({"ts": "2026-03-21T10:00:00.000Z", "kind": "progress", "text": "half way"}),
            json!({"ts": "2026-03-21T10:05:00.000Z", "kind": "status", "from": "in_progress", "to": "completed", "reason": "submitted"}),
        ];
        let t = translate(Some("in_progress"), &edits, &events, "2026-03-21T11:00:00.000Z");
        assert_eq!(
            t.file,
            [
                Edit::Set("status".into(), "completed".into()),
                Edit::Set("current_progress".into(), "half way".into()),
                Edit::Remove("desired".into())
            ]
        );
        let kept: Vec<&str> = t.kept.iter().map(|e| if let Edit::Set(k, _) = e { k.as_str() } else { "" }).collect();
        assert_eq!(kept, ["result", "attempt", "reason"]);
        assert_eq!(t.body.as_deref(), Some("Done.\nAll of it."));
        let said: Vec<String> = t.entries.iter().map(entry_text).collect();
        assert_eq!(
            said,
            [
                "  - timestamp: 2026-03-21T10:00:00.000Z\n    event: progress_report\n    reason: \"half way\"\n",
                "  - timestamp: 2026-03-21T11:00:00.000Z\n    event: result_submitted\n    reason: \"Done.\\nAll of it.\"\n",
                "  - timestamp: 2026-03-21T10:05:00.000Z\n    event: status_completed\n    reason: \"submitted\"\n    from: \"in_progress\"\n    to: \"completed\"\n",
            ]
        );
        // A start comes before what the worker reported in the same update, an end after.
        let started = translate(
            Some("dispatched"),
            &[Edit::Set("status".into(), "in_progress".into()), Edit::Set("progress".into(), "x".into())],
            &[],
            "t",
        );
        let order: Vec<&str> = started.entries.iter().map(|e| e.event.as_str()).collect();
        assert_eq!(order, ["status_in_progress", "progress_report"]);
        // A pass that found the worker already done moves it through `in_progress` to its end
        // in one update: both changes are logged, the start before the report, the end after.
        let events = [
            json!({"ts": "t1", "kind": "status", "from": "dispatched", "to": "in_progress", "reason": "running"}),
            json!({"ts": "t2", "kind": "status", "from": "in_progress", "to": "completed", "reason": "submitted"}),
        ];
        let both = translate(
            Some("dispatched"),
            &[Edit::Set("status".into(), "completed".into()), Edit::Set("progress".into(), "x".into())],
            &events,
            "t",
        );
        let order: Vec<(&str, Option<&str>)> = both.entries.iter().map(|e| (e.event.as_str(), e.from.as_deref())).collect();
        assert_eq!(
            order,
            [("status_in_progress", Some("dispatched")), ("progress_report", None), ("status_completed", Some("in_progress"))]
        );
        // A status written again as it is records no change.
        assert!(translate(Some("completed"), &[Edit::Set("status".into(), "completed".into())], &[], "t").entries.is_empty());
    }

    /// Guild Hall's history first; from guild-hall's first event on, its own timeline only (the
    /// log's later entries mirror it).
    #[test]
    fn a_log_is_shown_up_to_where_our_timeline_begins() {
        let entry = |ts: &str, event: &str| Entry { timestamp: ts.into(), event: event.into(), ..Entry::default() };
        let log = [entry("2026-03-01T09:00:00.000Z", "created"), entry("2026-03-02T09:00:00.000Z", "progress_report")];
        let ours = vec![json!({"ts": "2026-03-02T08:00:00.000Z", "kind": "created"})];
        let all = merged(&log, ours);
        let kinds: Vec<&str> = all.iter().filter_map(|e| e["kind"].as_str()).collect();
        assert_eq!(kinds, ["created", "created"]);
        assert_eq!(all[0]["from_log"], true);
        assert_eq!(merged(&log, Vec::new()).len(), 2);
    }

    #[test]
    fn a_log_is_read_leniently_but_must_be_a_list_of_mappings() {
        let v: Value = serde_yaml_ng::from_str(
            "- timestamp: 2026-04-21T04:56:33.367Z\n  event: created\n  reason: \"Commission created\"\n- timestamp: 2026-04-21T04:56:33.369Z\n  event: status_dispatched\n  reason: x\n  from: pending\n  to: dispatched\n  extra: 1\n",
        )
        .expect("yaml");
        let e = entries(&v).expect("entries");
        assert_eq!(e.len(), 2);
        assert_eq!((e[1].from.as_deref(), e[1].to.as_deref()), (Some("pending"), Some("dispatched")));
        assert!(entries(&Value::from("x")).is_err());
        assert!(entries(&Value::Sequence(vec![Value::from(1)])).is_err());
    }
}
