//! The commission artifact: its status vocabulary, the intent keys a person writes, the keys
//! the reconciler owns, and validation with `file:line:col` problems. Pure: no I/O.

use std::fmt;
use std::hash::Hash;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_yaml_ng::{Mapping, Value};

use super::frontmatter::{key_position, split, Problem};
use super::store::content_hash;
use crate::artifact::ids;

super::vocabulary::vocabulary! {
    /// The commission state machine's states (REQ-COM-5, plus `draft`).
    pub enum Status ("status") {
        Draft = "draft",
        Pending = "pending",
        Blocked = "blocked",
        Dispatched = "dispatched",
        InProgress = "in_progress",
        Completed = "completed",
        Failed = "failed",
        Cancelled = "cancelled",
    }
}

impl Status {
    /// A worker process belongs to this state.
    pub fn is_active(self) -> bool {
        matches!(self, Status::Dispatched | Status::InProgress)
    }

    pub fn is_terminal(self) -> bool {
        matches!(self, Status::Completed | Status::Failed | Status::Cancelled)
    }
}

/// A one-shot request written by a person or tool into `desired:`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Desired {
    Dispatched,
    Cancelled,
}

impl Desired {
    pub fn as_str(self) -> &'static str {
        match self {
            Desired::Dispatched => "dispatched",
            Desired::Cancelled => "cancelled",
        }
    }
}

/// Which runner starts an activity's attempts (`runner:` in `.lore/guild-hall.yaml`, a
/// package's `worker.yaml`, or a commission's frontmatter; the most specific wins).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunnerName {
    /// The shim runs on this machine.
    #[default]
    Local,
    /// The shim runs as a Slurm batch job (`slurm:` in `.lore/guild-hall.yaml` says where).
    Slurm,
}

/// Optional per-commission overrides of the worker package's resource bounds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Resources {
    pub max_turns: Option<u64>,
    pub max_budget_usd: Option<f64>,
    /// CPUs one attempt gets on a cluster (`runner: slurm`: `--cpus-per-task`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<u32>,
    /// Memory one attempt gets on a cluster (`runner: slurm`: `--mem`), in Slurm's words:
    /// `4G`, `500M`, a number of megabytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^[0-9]+[KMGT]?$"))]
    pub memory: Option<String>,
}

/// The keys only the reconciler writes.
pub const OWNED_KEYS: [&str; 11] =
    ["status", "created", "attempt", "branch", "progress", "questions", "result", "linked_artifacts", "reason", "refused", "completed"];

/// A parsed, validated commission artifact.
#[derive(Debug, Clone)]
pub struct Commission {
    pub id: String,
    pub path: PathBuf,
    /// Hash of the file's bytes when read: writes are dropped if it changed since.
    pub hash: u64,
    pub title: Option<String>,
    /// `None` when the file has no `status:` (a new file: taken as pending).
    pub status: Option<Status>,
    pub worker: String,
    pub dependencies: Vec<String>,
    /// Line and column of `dependencies:` (or of the frontmatter), for problems that name it.
    pub dependencies_at: (usize, usize),
    /// Paths this commission declares it will produce (optional): how dependency cycles
    /// between commissions are seen.
    pub outputs: Vec<String>,
    pub resources: Resources,
    /// Wall-clock limit of an attempt (`timeout:`), overriding the package's and the project's.
    pub timeout: Option<std::time::Duration>,
    /// Where its attempts run (`runner:`), over its package's and the project's.
    pub runner: Option<RunnerName>,
    pub desired: Option<Desired>,
    /// The keys the reconciler writes or removes ([`OWNED_KEYS`] and `desired`), as parsed.
    /// Other keys are validated into the typed fields above and not kept.
    pub fields: Mapping,
    pub body: String,
}

impl Commission {
    /// Parse and validate. Any problem means the artifact must not be acted on or rewritten.
    pub fn parse(path: &Path, text: &str) -> Result<Commission, Vec<Problem>> {
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        let at = |line, col, msg: String| vec![Problem::new(path, line, col, msg)];
        if let Err(e) = ids::validate_id(stem) {
            return Err(at(1, 1, format!("bad file name: {e}")));
        }
        let split = split(text).map_err(|(line, msg)| at(line, 1, msg))?;
        let Kept(fields, unknown) = if split.yaml.trim().is_empty() {
            Kept(Mapping::new(), Mapping::new())
        } else {
            serde_yaml_ng::from_str::<Kept>(split.yaml).map_err(|e| {
                let (line, col, said) = super::locate::yaml_error(&e, split.yaml, split.first_line);
                at(line, col, format!("invalid YAML: {said}"))
            })?
        };
        // A misspelt key is invalid like a bad value: `dependecies:` must not dispatch at once;
        // nor `resources: {max_turn: 5}` run without its bound. (Keys the reader skips are
        // not looked into: guild-hall writes them.)
        let schema = super::schema::commission_shape();
        let mut problems = super::keys::unknown_keys(path, split.yaml, split.first_line, &unknown, schema);
        let nested = super::keys::unknown(&fields, schema);
        let resources_said = nested.iter().any(|u| u.within.first() == Some(&super::locate::Seg::key("resources")));
        problems.extend(nested.iter().map(|u| u.problem(path, split.yaml, split.first_line, u.message())));
        problems.sort_by_key(|p| (p.line, p.column));
        let mut bad = |key: &str, msg: String| {
            let (line, col) = key_position(&split, key);
            problems.push(Problem::new(path, line, col, msg));
        };
        let get = |k: &str| fields.get(k);

        let status = super::vocabulary::status_field::<Status>(get("status"), &mut bad);
        let worker = ids::worker_name(get("worker"), "which worker package does this").unwrap_or_else(|why| {
            bad("worker", why);
            String::new()
        });
        let mut paths = |key: &str, what: &str| {
            let mut out = Vec::new();
            match get(key) {
                None | Some(Value::Null) => {}
                Some(Value::Sequence(items)) => {
                    for item in items {
                        match item.as_str().map(ids::validate_rel_path) {
                            Some(Ok(p)) => out.push(p),
                            Some(Err(e)) => bad(key, format!("bad {what}: {e}")),
                            None => bad(key, format!("{key} must be a list of paths")),
                        }
                    }
                }
                Some(_) => bad(key, format!("{key} must be a list of paths")),
            }
            out
        };
        let dependencies = paths("dependencies", "dependency");
        let outputs = paths("outputs", "output");
        let resources = match get("resources") {
            None | Some(Value::Null) => Resources::default(),
            Some(v) => serde_yaml_ng::from_value(v.clone()).unwrap_or_else(|e| {
                // An unknown key in it is said above, at the key.
                if !resources_said {
                    bad("resources", format!("bad resources: {e} (allowed: {})", super::keys::fields::<Resources>().join(", ")));
                }
                Resources::default()
            }),
        };
        let timeout = match get("timeout") {
            None | Some(Value::Null) => None,
            Some(v) => super::frontmatter::timeout(v).map_err(|e| bad("timeout", e)).ok(),
        };
        let runner = match get("runner") {
            None | Some(Value::Null) => None,
            Some(v) => serde_yaml_ng::from_value(v.clone())
                .map_err(|_| bad("runner", format!("unknown runner: {} (expected local or slurm)", show(v))))
                .ok(),
        };
        let desired = match get("desired") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) if s == "dispatched" => Some(Desired::Dispatched),
            Some(Value::String(s)) if s == "cancelled" => Some(Desired::Cancelled),
            Some(v) => {
                bad("desired", format!("unknown request desired: {} (expected dispatched or cancelled)", show(v)));
                None
            }
        };
        let title = get("title").and_then(Value::as_str).map(str::to_string);
        if split.body.trim().is_empty() {
            let line = split.first_line + split.yaml.lines().count() + 1;
            problems.push(Problem::new(path, line, 1, "missing body: the text after the frontmatter is the worker's prompt"));
        }
        if !problems.is_empty() {
            return Err(problems);
        }
        let mut fields = fields;
        // Kept: the keys the reconciler writes or removes.
        fields.retain(|k, _| k.as_str().is_some_and(|k| OWNED_KEYS.contains(&k) || k == "desired"));
        fields.shrink_to_fit();
        Ok(Commission {
            id: stem.to_string(),
            path: path.to_path_buf(),
            hash: content_hash(text),
            title,
            status,
            worker,
            dependencies,
            dependencies_at: key_position(&split, "dependencies"),
            outputs,
            resources,
            timeout,
            runner,
            desired,
            fields,
            body: split.body.to_string(),
        })
    }

    /// The `created:` stamp as written (the FIFO key), if any.
    pub fn created(&self) -> Option<&str> {
        self.fields.get("created").and_then(Value::as_str)
    }

    pub fn attempt(&self) -> u32 {
        self.fields.get("attempt").and_then(Value::as_u64).map(|a| a as u32).unwrap_or(0)
    }

    pub fn field(&self, key: &str) -> Option<&Value> {
        self.fields.get(key)
    }

    pub fn str_field(&self, key: &str) -> Option<&str> {
        self.fields.get(key).and_then(Value::as_str)
    }
}

/// Keys read from the frontmatter; everything else is skipped by the parser without building
/// values (parsing dominates observe, and most of a settled artifact is not ours to read).
pub(crate) const READ_KEYS: [&str; 19] = [
    "outputs",
    "runner",
    "timeout",
    "status",
    "created",
    "attempt",
    "branch",
    "progress",
    "questions",
    "result",
    "linked_artifacts",
    "reason",
    "refused",
    "completed",
    "worker",
    "dependencies",
    "resources",
    "desired",
    "title",
];

/// The frontmatter's [`READ_KEYS`] as a mapping; and the keys no commission may hold (the
/// schema's [`super::schema::commission_keys`] are the ones it may), their values left unread.
struct Kept(Mapping, Mapping);

impl<'de> Deserialize<'de> for Kept {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Kept, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Kept;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a mapping of keys to values")
            }
            fn visit_unit<E>(self) -> Result<Kept, E> {
                Ok(Kept(Mapping::new(), Mapping::new()))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut m: A) -> Result<Kept, A::Error> {
                let (mut out, mut unknown) = (Mapping::new(), Mapping::new());
                let known = super::schema::commission_keys();
                // Keys whose values are skipped, to find one written twice like the others.
                let mut skipped: Vec<Value> = Vec::new();
                while let Some(k) = m.next_key::<Value>()? {
                    if out.contains_key(&k) || skipped.contains(&k) {
                        return Err(serde::de::Error::custom(format!("duplicate key `{}`", k.as_str().unwrap_or(""))));
                    }
                    if k.as_str().is_some_and(|k| READ_KEYS.contains(&k)) {
                        let v: Value = m.next_value()?;
                        out.insert(k, v);
                    } else {
                        m.next_value::<serde::de::IgnoredAny>()?;
                        if !k.as_str().is_some_and(|k| known.contains(&k)) {
                            unknown.insert(k.clone(), Value::Null);
                        }
                        skipped.push(k);
                    }
                }
                Ok(Kept(out, unknown))
            }
        }
        d.deserialize_any(V)
    }
}

fn show(v: &Value) -> String {
    serde_yaml_ng::to_string(v).map(|s| s.trim().to_string()).unwrap_or_else(|_| "?".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Commission, Vec<Problem>> {
        Commission::parse(Path::new(".lore/commissions/c1.md"), text)
    }

    #[test]
    fn parses_a_commission() {
        let c = parse("---\ntitle: T\nworker: scribe\nstatus: pending\ndependencies: [a/b.md]\n---\nDo it.\n").unwrap();
        assert_eq!(c.id, "c1");
        assert_eq!(c.status, Some(Status::Pending));
        assert_eq!(c.dependencies, vec!["a/b.md"]);
        assert_eq!(c.body, "Do it.\n");
    }

    #[test]
    fn reports_problems_with_positions() {
        let e = parse("---\ntitle: T\nworker: scribe\nstatus: banana\n---\nbody\n").unwrap_err();
        assert_eq!(e[0].to_string(), ".lore/commissions/c1.md:4:9: unknown status \"banana\" (expected one of: draft, pending, blocked, dispatched, in_progress, completed, failed, cancelled)");
        let e = parse("---\ntitle: [\nworker: x\n---\nbody\n").unwrap_err();
        assert!(e[0].message.starts_with("invalid YAML"), "{e:?}");
        let e = parse("---\nworker: scribe\n---\n\n").unwrap_err();
        assert!(e[0].message.contains("missing body"));
        let e = parse("---\nworker: scribe\ndependencies: [../../etc/passwd]\n---\nx\n").unwrap_err();
        assert!(e[0].message.contains("bad dependency"));
        assert!(Commission::parse(Path::new("x/Bad Name.md"), "---\nworker: a\n---\nb\n").is_err());
    }

    /// A misspelt key is never skipped: `dependecies:` would drop the dependency.
    #[test]
    fn an_unknown_key_is_a_problem_at_the_key() {
        let e = parse("---\ntitle: T\nworker: scribe\ndependecies: [a/b.md]\n---\nDo it.\n").unwrap_err();
        assert_eq!(e[0].to_string(), ".lore/commissions/c1.md:4:1: unknown key `dependecies`: did you mean `dependencies`?");
        assert!(parse("---\nworker: scribe\ndate: 2026-11-22\n---\nDo it.\n").is_ok(), "every schema key is allowed");
    }

    /// A key written twice is at its second line, whether its value is read or skipped.
    #[test]
    fn a_duplicate_key_is_at_the_duplicate() {
        for key in ["title", "date"] {
            let e = parse(&format!("---\n{key}: A\nworker: scribe\n{key}: B\n---\nDo it.\n")).unwrap_err();
            assert_eq!(e[0].to_string(), format!(".lore/commissions/c1.md:4:1: invalid YAML: duplicate key `{key}`"));
        }
    }
}
