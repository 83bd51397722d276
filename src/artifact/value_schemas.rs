//! The schemas of the values the frontmatter declarations name (a name, a relative path, a
//! duration, a commission's result): below every kind's declaration and the index of schemas
//! over them ([`super::schema`]).

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator};

// No parser builds these (it validates the text in its own words): described, never
// constructed, so each is its schema alone.

/// The schema of a package or artifact name.
pub(crate) enum Name {}

impl JsonSchema for Name {
    fn schema_name() -> Cow<'static, str> {
        "Name".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        schemars::json_schema!({
            "description": "A package or artifact name: letters, digits, `-`, `_`, `.`; no leading dot.",
            "type": "string",
            "pattern": NAME_PATTERN,
            "minLength": 1,
            "maxLength": 100,
        })
    }
}

/// The schema of a `worker:` (and a reviewer): a package name, or a Guild Hall worker's
/// identity (`Dalton`, `Guild Master`), as [`super::ids::worker_name`] accepts them.
pub(crate) enum WorkerName {}

impl JsonSchema for WorkerName {
    fn schema_name() -> Cow<'static, str> {
        "WorkerName".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        schemars::json_schema!({
            "description": "A worker package's name (letters, digits, `-`, `_`, `.`; no leading or trailing dot, no `..`, not ending in `.lock`), or a Guild Hall worker's identity as written (`Dalton`, `Guild Master`: with a capital or a space; no `/`, `\\`, control characters, or blank at either end).",
            "type": "string",
            "pattern": WORKER_PATTERN,
            "minLength": 1,
            "maxLength": 100,
        })
    }
}

// What `worker:` may be, as one regular expression without look-around (the same in
// ECMAScript, which editors use, and in Rust, which tests it against `worker_name`):
// a package name — dot-separated runs of `[A-Za-z0-9_-]`, the last not `lock` when there are
// two or more — or an identity: no `/`, `\`, control character, blank at either end, and an
// ASCII capital or a space somewhere (first, last, or between).
/// A `worker:` ([`WorkerName`]): see the comment above.
pub(crate) const WORKER_PATTERN: &str = concat!(
    r"^(?:",
    // A package name.
    r"[A-Za-z0-9_-]+",
    r"|[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*\.(?:[A-Za-z0-9_-]{1,3}|[A-Za-z0-9_-]{5,}|[A-Za-km-z0-9_-][A-Za-z0-9_-]{3}|l[A-Za-np-z0-9_-][A-Za-z0-9_-]{2}|lo[A-Zabd-z0-9_-][A-Za-z0-9_-]|loc[A-Za-jl-z0-9_-])",
    // An identity.
    r"|[A-Z]",
    r"|[A-Z][^/\\\x00-\x1f\x7f-\x9f]*[^\s/\\\x00-\x1f\x7f-\x9f]",
    r"|[^\s/\\\x00-\x1f\x7f-\x9f][^/\\\x00-\x1f\x7f-\x9f]*[A-Z ][^/\\\x00-\x1f\x7f-\x9f]*[^\s/\\\x00-\x1f\x7f-\x9f]",
    r"|[^\s/\\\x00-\x1f\x7f-\x9f][^/\\\x00-\x1f\x7f-\x9f]*[A-Z]",
    r")$"
);

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

/// The schema of a `usage:` (a commission's, a plan's): tokens and dollars, written by guild-hall.
pub(crate) enum UsageFigures {}

impl JsonSchema for UsageFigures {
    fn schema_name() -> Cow<'static, str> {
        "Usage".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        schemars::json_schema!({
            "description": "What its attempts used, summed (written by guild-hall from what each agent reported): tokens, and dollars where reported or priced.",
            "type": "object",
            "properties": {
                "input_tokens": { "type": "integer", "minimum": 0 },
                "output_tokens": { "type": "integer", "minimum": 0 },
                "cached_tokens": { "type": "integer", "minimum": 0 },
                "usd": { "type": "number", "minimum": 0 },
            },
            "additionalProperties": false,
        })
    }
}

/// What a package or artifact name may be: letters of either case, digits, `-`, `_`, `.`; no
/// leading dot (a plan's task names its worker and its own id so).
pub(crate) const NAME_PATTERN: &str = r"^[A-Za-z0-9_-][A-Za-z0-9._-]*$";

/// The schema of one entry of a commission's `questions:`: a logged question's text, or a
/// question asked of a person with its number, when asked, and its answer (or `open`).
pub(crate) enum Question {}

impl JsonSchema for Question {
    fn schema_name() -> Cow<'static, str> {
        "Question".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        schemars::json_schema!({
            "description": "A question of the worker's (written by guild-hall).",
            "anyOf": [
                { "type": "string" },
                {
                    "type": "object",
                    "properties": {
                        "question": { "type": "string" },
                        "number": { "type": "integer", "minimum": 1 },
                        "attempt": { "type": "integer", "minimum": 1 },
                        "asked": { "type": "string" },
                        "open": { "type": "boolean" },
                        "answer": { "type": "string" },
                        "answered": { "type": "string" },
                        "timed_out": { "type": "string" },
                    },
                    "required": ["question"],
                    "additionalProperties": false,
                },
            ],
        })
    }
}

/// A commission's `type:`: `one-shot` (the default) or `scheduled` (a template).
pub(crate) enum CommissionType {}

impl JsonSchema for CommissionType {
    fn schema_name() -> Cow<'static, str> {
        "CommissionType".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        schemars::json_schema!({
            "description": "`one-shot` (the default): a commission run once; `scheduled`: a template whose runs are written at the times `schedule.cron` names.",
            "enum": ["one-shot", "scheduled"],
        })
    }
}

/// A scheduled commission's `schedule:` block.
pub(crate) enum ScheduleBlock {}

impl JsonSchema for ScheduleBlock {
    fn schema_name() -> Cow<'static, str> {
        "ScheduleBlock".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        schemars::json_schema!({
            "description": "When a scheduled commission's runs are written, and how many have been (the counts written by guild-hall).",
            "type": "object",
            "properties": {
                "cron": { "type": "string", "description": "Five fields, minute hour day-of-month month day-of-week, in UTC." },
                "repeat": { "type": ["integer", "null"], "minimum": 1, "description": "Runs before it is completed (null: for ever)." },
                "runs_completed": { "type": "integer", "minimum": 0, "description": "Written by guild-hall: runs written so far." },
                "last_run": { "type": ["string", "null"], "description": "Written by guild-hall: the tick of the latest run." },
                "last_spawned_id": { "type": ["string", "null"], "description": "Written by guild-hall: the latest run's id." },
            },
            "required": ["cron"],
            "additionalProperties": false,
        })
    }
}

/// One entry of `reviews:` (written by guild-hall: a reviewer worker's verdict on an attempt).
pub(crate) enum ReviewVerdict {}

impl JsonSchema for ReviewVerdict {
    fn schema_name() -> Cow<'static, str> {
        "ReviewVerdict".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        schemars::json_schema!({
            "description": "A reviewer worker's verdict on an attempt's diff (written by guild-hall).",
            "type": "object",
            "properties": {
                "reviewer": { "type": "string", "description": "The reviewer's worker package." },
                "attempt": { "type": "integer", "description": "The attempt it reviewed." },
                "verdict": { "type": "string", "enum": ["approve", "changes", "none"], "description": "`none`: it ended without a verdict." },
                "summary": { "type": "string" },
                "comments": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": { "path": { "type": "string" }, "line": { "type": "integer" }, "text": { "type": "string" } },
                        "required": ["path", "text"],
                        "additionalProperties": false,
                    },
                },
            },
            "required": ["reviewer", "attempt", "verdict"],
            "additionalProperties": false,
        })
    }
}

/// One entry of `check_results:` (written by guild-hall: a check as run after submit).
pub(crate) enum CheckResult {}

impl JsonSchema for CheckResult {
    fn schema_name() -> Cow<'static, str> {
        "CheckResult".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        schemars::json_schema!({
            "description": "A `checks:` command as guild-hall ran it in the worktree after submit (written by guild-hall).",
            "type": "object",
            "properties": {
                "command": { "type": "string", "description": "The command as a person would type it." },
                "exit": { "type": ["integer", "null"], "description": "Its exit code (null: killed, or it never ran)." },
                "passed": { "type": "boolean" },
                "ended": { "type": "string", "description": "How it ended, in words, when it failed." },
                "tail": { "type": "string", "description": "The last lines of a failing check's output." },
            },
            "required": ["command", "exit", "passed"],
            "additionalProperties": false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the schema says of `name`: its pattern, and its length in characters.
    fn schema_accepts(name: &str) -> bool {
        let re = regex::Regex::new(WORKER_PATTERN).expect("the pattern compiles");
        (1..=100).contains(&name.chars().count()) && re.is_match(name)
    }

    fn check_accepts(name: &str) -> bool {
        crate::artifact::ids::worker_name(Some(&serde_yaml_ng::Value::String(name.into())), "test").is_ok()
    }

    #[test]
    fn the_worker_schema_accepts_what_check_accepts() {
        let accepted = ["scribe", "claude-code", "a.b_c-1", "Dalton", "Guild Master", "X", "a B", "Zoë", "Foo.lock", "lock", "x.lok"];
        let refused = ["", " Dalton", "Dalton ", "a/B", "A\\b", "Guild\tMaster", "A\u{85}", ".x", "x.", "a..b", "x.lock", "a,b", "ä"];
        for name in accepted {
            assert!(crate::artifact::ids::valid_identity(name) || crate::artifact::ids::validate_id(name).is_ok(), "{name:?}");
            assert!(check_accepts(name) && schema_accepts(name), "{name:?} accepted by check and the schema");
        }
        for name in refused {
            assert!(!check_accepts(name) && !schema_accepts(name), "{name:?} refused by check and the schema");
        }
        // The schema `guild-hall schema commission` prints says so for `worker:`.
        let schema = crate::artifact::schema::value("commission").expect("the commission's schema");
        assert!(schema.to_string().contains(&serde_json::Value::String(WORKER_PATTERN.into()).to_string()), "{schema}");
    }

    proptest::proptest! {
        /// Over names of the characters that matter (capitals, blanks, dots, separators,
        /// `lock`, a control character), the schema and `check` agree.
        #[test]
        fn the_worker_schema_and_check_agree(name in "[aBlock. /\\\\\t\u{e9}-]{0,12}") {
            proptest::prop_assert_eq!(schema_accepts(&name), check_accepts(&name), "{:?}", name);
        }
    }
}
