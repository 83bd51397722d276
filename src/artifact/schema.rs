//! JSON Schemas of the artifacts people write: commission, meeting and plan frontmatter. They
//! are the shapes every pass and `check` hold a file's keys to ([`super::keys`]: an unknown key
//! is a problem) and what editors validate against (yaml-language-server). Each is built with
//! schemars in its kind's file from the frontmatter declaration its parser reads (`Frontmatter`
//! in [`super::commission`], [`super::meeting`], [`super::plan`], the values they name in
//! `value_schemas.rs`), and named here by kind. `worker.yaml`'s is the package's
//! ([`crate::schema`]).

pub(crate) use super::commission::commission_schema;
pub(crate) use super::meeting::meeting_schema;
pub(crate) use super::plan::plan_schema;
// What `worker.yaml`'s declaration names too.
pub(crate) use super::value_schemas::Duration;

#[cfg(test)]
/// The artifact kinds with a schema here.
pub(crate) const KINDS: [&str; 3] = ["commission", "meeting", "plan"];

/// The JSON Schema of `kind` (one of [`KINDS`]), pretty-printed.
pub(crate) fn schema(kind: &str) -> Option<String> {
    serde_json::to_string_pretty(value(kind)?).ok()
}

/// The JSON Schema of `kind` (one of [`KINDS`]) as a value.
pub(crate) fn value(kind: &str) -> Option<&'static serde_json::Value> {
    match kind {
        "commission" => Some(commission_schema()),
        "meeting" => Some(meeting_schema()),
        "plan" => Some(plan_schema()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::artifact::commission::commission_keys;
    use crate::artifact::meeting::meeting_keys;
    use crate::artifact::plan::{plan_keys, task_keys};
    use crate::artifact::Status;

    /// What `check` allows is what the schema says, key for key: one list, not two.
    #[test]
    fn the_keys_check_allows_are_the_schemas() {
        for (kind, keys) in [("commission", commission_keys()), ("meeting", meeting_keys()), ("plan", plan_keys())] {
            let mut keys: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
            let mut props = properties(kind);
            keys.sort();
            props.sort();
            assert_eq!(keys, props, "{kind}");
        }
        let v: serde_json::Value = serde_json::from_str(&schema("plan").expect("schema")).expect("json");
        let mut task: Vec<&str> = v["$defs"]["Task"]["properties"].as_object().expect("task").keys().map(String::as_str).collect();
        task.sort();
        let mut keys = task_keys().to_vec();
        keys.sort();
        assert_eq!(keys, task);
    }

    fn properties(kind: &str) -> Vec<String> {
        let v: serde_json::Value = serde_json::from_str(&schema(kind).expect("a schema")).expect("json");
        v["properties"].as_object().map(|m| m.keys().cloned().collect()).unwrap_or_default()
    }

    /// The schemas know every key the parsers read or write: they cannot drift apart unseen.
    #[test]
    fn schemas_cover_every_key_the_parsers_know() {
        let commission = properties("commission");
        for k in super::super::commission::UNREAD_KEYS.iter().chain(&super::super::commission::OWNED_KEYS) {
            assert!(commission.iter().any(|p| p == k), "commission schema lacks {k}");
        }
        let meeting = properties("meeting");
        for k in super::super::meeting::OWNED_KEYS.iter().chain(&["worker", "agenda", "references", "requested_by", "title"]) {
            assert!(meeting.iter().any(|p| p == k), "meeting schema lacks {k}");
        }
        let v: serde_json::Value = serde_json::from_str(&schema("commission").expect("schema")).expect("json");
        assert_eq!(v["additionalProperties"], false, "an unknown key is flagged");
        let text = schema("commission").expect("schema");
        for s in Status::ALL {
            assert!(text.contains(&format!("\"{s}\"")), "{s}");
        }
        let plan = properties("plan");
        for k in super::super::plan::OWNED_KEYS.iter().chain(&["desired", "parallelism", "verify", "fixer", "timeout", "waves"]) {
            assert!(plan.iter().any(|p| p == k), "plan schema lacks {k}");
        }
        assert!(schema("nope").is_none());
        for kind in KINDS {
            assert!(schema(kind).is_some(), "{kind}");
        }
    }
}
