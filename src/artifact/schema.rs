//! JSON Schemas of the artifacts people write: commission, meeting and plan frontmatter. They
//! are the shapes every pass and `check` hold a file's keys to ([`super::keys`]: an unknown key
//! is a problem) and what editors validate against (yaml-language-server). Each is built with
//! schemars in its kind's file from the frontmatter declaration its parser reads (`Frontmatter`
//! in [`super::commission`], [`super::meeting`], [`super::plan`]), and named here by kind; this
//! file holds the values those declarations name. `worker.yaml`'s is the package's
//! ([`crate::schema`]).

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator};

pub use super::commission::{commission_keys, commission_schema, commission_shape};
pub use super::meeting::{meeting_keys, meeting_schema, meeting_shape};
pub use super::plan::{plan_keys, plan_schema, plan_shape, task_keys};

/// The artifact kinds with a schema here.
pub const KINDS: [&str; 3] = ["commission", "meeting", "plan"];

// The values the frontmatter declarations name that no parser builds (it validates the text in
// its own words): described, never constructed, so each is its schema alone.

/// The schema of a package or artifact name.
pub(crate) enum Name {}

impl JsonSchema for Name {
    fn schema_name() -> Cow<'static, str> {
        "Name".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        schemars::json_schema!({
            "description": "A package or artifact name: lowercase letters, digits, `-`, `_`, `.`; no leading dot.",
            "type": "string",
            "pattern": NAME_PATTERN,
            "minLength": 1,
            "maxLength": 100,
        })
    }
}

/// The schema of a path relative to the project root.
pub(crate) enum RelPath {}

impl JsonSchema for RelPath {
    fn schema_name() -> Cow<'static, str> {
        "RelPath".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        schemars::json_schema!({
            "description": "A path relative to the project root, without `..`.",
            "type": "string",
            "pattern": r"^(?!/)(?!.*(^|/)\.\.(/|$)).+$",
        })
    }
}

/// The schema of a duration.
pub(crate) enum Duration {}

impl JsonSchema for Duration {
    fn schema_name() -> Cow<'static, str> {
        "Duration".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        schemars::json_schema!({
            "description": "A duration such as `90s`, `90m`, `4h` (humantime).",
            "type": "string",
            "pattern": r"^\s*\d+(\.\d+)?\s*[a-zA-Zµ]+(\s*\d+(\.\d+)?\s*[a-zA-Zµ]+)*\s*$",
        })
    }
}

/// The schema of a commission's `result:`.
pub(crate) enum CommissionResult {}

impl JsonSchema for CommissionResult {
    fn schema_name() -> Cow<'static, str> {
        "CommissionResult".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        schemars::json_schema!({
            "description": "A submitted result (written by guild-hall from the worker's `submit_result`).",
            "type": "object",
            "properties": {
                "summary": { "type": "string" },
                "artifacts": { "type": "array", "items": generator.subschema_for::<RelPath>() },
            },
            "required": ["summary"],
            "additionalProperties": false,
        })
    }
}

/// What a package or artifact name may be: lowercase letters, digits, `-`, `_`, `.`; no
/// leading dot (a plan's task names its worker and its own id so).
pub(crate) const NAME_PATTERN: &str = r"^[a-z0-9_-][a-z0-9._-]*$";

/// The JSON Schema of `kind` (one of [`KINDS`]), pretty-printed.
pub fn schema(kind: &str) -> Option<String> {
    serde_json::to_string_pretty(value(kind)?).ok()
}

/// The JSON Schema of `kind` (one of [`KINDS`]) as a value.
pub fn value(kind: &str) -> Option<&'static serde_json::Value> {
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
