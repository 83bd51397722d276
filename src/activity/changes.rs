//! The one way every kind's decider adds to an update: the artifact edits of its owned keys and
//! the timeline events, with one semantics for all three kinds. [`apply`](super::apply) then
//! writes them in its one order.
//!
//! - An edit says what differs from the artifact as observed once the step is done: the last
//!   [`set`] or [`remove`] of a key replaces any edit of that key queued before it. A `set` to
//!   the value the artifact holds queues nothing, unless it replaces a queued edit (then the
//!   key is written as it is, undoing that edit); a `remove` of a key the artifact lacks queues
//!   nothing.
//! - An [`event`] whose key the kind knows is already in its timeline (`logged`) is not queued:
//!   a kind that observes its timeline's keys (plans) says so, and its step stays empty when
//!   nothing new happened. A kind that does not (commissions, meetings) queues every event its
//!   machine emits and keys them so that each is emitted once; `apply` drops what the timeline
//!   already holds (a `status` or `heartbeat` event only when it repeats the last of its kind).

use std::collections::BTreeSet;

use serde_json::Value as Json;
use serde_yaml_ng::{Mapping, Value};

use super::timeline;
use crate::artifact::write::Edit;

/// Set owned key `key` to `value`: replaces any queued edit of the key; queued only where the
/// artifact (`fields`, as observed) does not already say it, or to undo a queued edit.
pub(crate) fn set(fields: &Mapping, edits: &mut Vec<Edit>, key: &str, value: Value) {
    let queued = edits.iter().any(|e| edit_of(e, key));
    if fields.get(key) != Some(&value) || queued {
        edits.retain(|e| !edit_of(e, key));
        edits.push(Edit::Set(key.into(), value));
    }
}

/// Remove owned key `key`: replaces any queued edit of the key; queued only where the artifact
/// holds the key.
pub(crate) fn remove(fields: &Mapping, edits: &mut Vec<Edit>, key: &str) {
    edits.retain(|e| !edit_of(e, key));
    if fields.contains_key(key) {
        edits.push(Edit::Remove(key.into()));
    }
}

/// A timeline event at `now`, unless its key is among those `logged` already.
pub(crate) fn event(logged: Option<&BTreeSet<String>>, events: &mut Vec<Json>, now: &str, kind: &str, key: String, fields: Json) {
    if !logged.is_some_and(|l| l.contains(&key)) {
        events.push(timeline::event(now, kind, key, fields));
    }
}

fn edit_of(e: &Edit, key: &str) -> bool {
    matches!(e, Edit::Set(k, _) | Edit::Remove(k) if k == key)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn fields(pairs: &[(&str, &str)]) -> Mapping {
        pairs.iter().map(|(k, v)| (Value::from(*k), Value::from(*v))).collect()
    }

    enum Call {
        Set(&'static str, &'static str),
        Remove(&'static str),
    }

    fn run(artifact: &Mapping, calls: &[Call]) -> Vec<Edit> {
        let mut edits = Vec::new();
        for c in calls {
            match c {
                Call::Set(k, v) => set(artifact, &mut edits, k, Value::from(*v)),
                Call::Remove(k) => remove(artifact, &mut edits, k),
            }
        }
        edits
    }

    #[test]
    fn the_last_call_for_a_key_wins_and_only_a_change_is_queued() {
        let a = fields(&[("status", "pending"), ("reason", "why")]);
        let s = |k: &str, v: &str| Edit::Set(k.into(), Value::from(v));
        let r = |k: &str| Edit::Remove(k.into());
        let table: Vec<(&str, Vec<Call>, Vec<Edit>)> = vec![
            ("a new value", vec![Call::Set("status", "running")], vec![s("status", "running")]),
            ("the value it holds", vec![Call::Set("status", "pending")], vec![]),
            ("a key it lacks, removed", vec![Call::Remove("result")], vec![]),
            ("a key it holds, removed", vec![Call::Remove("reason")], vec![r("reason")]),
            ("set, then removed", vec![Call::Set("reason", "other"), Call::Remove("reason")], vec![r("reason")]),
            ("removed, then set back as it is", vec![Call::Remove("reason"), Call::Set("reason", "why")], vec![s("reason", "why")]),
            ("set twice", vec![Call::Set("status", "running"), Call::Set("status", "halted")], vec![s("status", "halted")]),
            (
                "two keys keep their order",
                vec![Call::Set("status", "running"), Call::Remove("reason")],
                vec![s("status", "running"), r("reason")],
            ),
        ];
        for (name, calls, want) in table {
            assert_eq!(run(&a, &calls), want, "{name}");
        }
    }

    #[test]
    fn an_event_already_logged_is_not_queued_again() {
        let logged: BTreeSet<String> = ["status:1".to_string()].into();
        let mut events = Vec::new();
        event(Some(&logged), &mut events, "t", "status", "status:1".into(), json!({}));
        event(Some(&logged), &mut events, "t", "status", "status:2".into(), json!({}));
        event(None, &mut events, "t", "status", "status:1".into(), json!({}));
        let keys: Vec<&str> = events.iter().filter_map(|e| e["key"].as_str()).collect();
        assert_eq!(keys, ["status:2", "status:1"]);
    }

    proptest! {
        /// Whatever the calls, at most one edit per key, and applying the edits to the artifact
        /// gives what the last call for each key said.
        #[test]
        fn edits_say_what_the_last_call_for_each_key_said(
            start in proptest::collection::vec((0usize..3, 0usize..3), 0..3),
            calls in proptest::collection::vec((0usize..3, proptest::option::of(0usize..3)), 0..8),
        ) {
            const KEYS: [&str; 3] = ["status", "reason", "result"];
            const VALUES: [&str; 3] = ["a", "b", "c"];
            let artifact: Mapping = start.iter().map(|(k, v)| (Value::from(KEYS[*k]), Value::from(VALUES[*v]))).collect();
            let calls: Vec<Call> = calls.iter().map(|(k, v)| match v {
                Some(v) => Call::Set(KEYS[*k], VALUES[*v]),
                None => Call::Remove(KEYS[*k]),
            }).collect();
            let edits = run(&artifact, &calls);
            let mut after = artifact.clone();
            for e in &edits {
                match e {
                    Edit::Set(k, v) => { after.insert(Value::from(k.as_str()), v.clone()); }
                    Edit::Remove(k) => { after.remove(k.as_str()); }
                }
            }
            let mut want = artifact.clone();
            for c in &calls {
                match c {
                    Call::Set(k, v) => { want.insert(Value::from(*k), Value::from(*v)); }
                    Call::Remove(k) => { want.remove(*k); }
                }
            }
            prop_assert_eq!(after, want);
            for k in KEYS {
                prop_assert!(edits.iter().filter(|e| edit_of(e, k)).count() <= 1);
            }
        }
    }
}
