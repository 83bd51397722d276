//! The plan artifact (`.lore/plans/<plan>.md`): ordered waves of tasks run in parallel inside a
//! wave, a parallelism cap, an integration `verify`, a `fixer`, wall-clock limits (`timeout:`,
//! the plan's and a task's); its status vocabulary, its keys and a task's declared once (the
//! schema and what the parser validates, with `file:line:col`), the canonical task ids, the
//! keys guild-hall owns typed ([`Owned`]), and a new plan's text (`render`). Pure.

use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_yaml_ng::{Mapping, Value};

use super::frontmatter::{self, read_mapping, Problem};
use super::ids;
use super::keys;
use super::locate::Seg;
use super::store::content_hash;

super::vocabulary::vocabulary! {
    /// A plan's states: draft|pending → running → verifying → completed; halted|failed|cancelled.
    pub enum PlanStatus ("plan status") {
        Draft = "draft",
        Pending = "pending",
        Running = "running",
        Verifying = "verifying",
        Completed = "completed",
        Halted = "halted",
        Failed = "failed",
        Cancelled = "cancelled",
    }
}

impl PlanStatus {
    /// Work of the plan may be under way.
    pub(crate) fn is_active(self) -> bool {
        matches!(self, PlanStatus::Running | PlanStatus::Verifying)
    }
}

// The one declaration of a plan's keys: their types and descriptions are the schema editors
// validate against (`guild-hall schema plan`, [`super::schema`]); their values, kept as
// written, are what [`Plan::parse`] validates.
/// A plan artifact's frontmatter.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields, title = "guild-hall plan")]
pub(crate) struct Frontmatter {
    #[schemars(with = "Option<String>")]
    title: Option<Value>,
    #[schemars(with = "Option<String>")]
    date: Option<Value>,
    /// draft|pending → running → verifying → completed; halted|failed|cancelled.
    #[schemars(with = "Option<PlanStatus>")]
    status: Option<Value>,
    /// Tasks running at once inside a wave (FIFO in plan order).
    #[schemars(with = "Option<u32>", range(min = 1))]
    parallelism: Option<Value>,
    /// The integration check (argv), run on the integration branch after each wave.
    #[schemars(with = "Option<Vec<String>>")]
    verify: Option<Value>,
    /// The worker of fix-forward commissions when verify fails.
    #[schemars(with = "Option<String>", regex(pattern = super::value_schemas::NAME_PATTERN))]
    fixer: Option<Value>,
    /// Reviewer workers run over the plan's integrated result once its last verify passes
    /// (over the project's `reviewers:`; `[]`: none).
    #[schemars(with = "Option<Vec<super::value_schemas::Name>>")]
    reviewers: Option<Value>,
    /// Wall-clock limit of each task attempt and verify run, over the package's and the
    /// project's (`0s`: none); a task's own `timeout` is over this.
    #[schemars(with = "Option<super::value_schemas::Duration>")]
    timeout: Option<Value>,
    /// The waves, in order; each a list of tasks.
    #[schemars(with = "Vec<Vec<TaskKeys>>", length(min = 1))]
    waves: Option<Value>,
    /// A one-shot request, removed once carried out: `dispatched` or `cancelled`.
    #[schemars(with = "Option<super::commission::Desired>")]
    desired: Option<Value>,
    /// Written by guild-hall: the wave under way.
    #[schemars(with = "Option<u32>")]
    wave: Option<Value>,
    /// Written by guild-hall: why it halted, failed or was cancelled.
    #[schemars(with = "Option<String>")]
    reason: Option<Value>,
    /// Written by guild-hall: why a person's edit of its status was refused (put back); gone
    /// once the status moves.
    #[schemars(with = "Option<String>")]
    refused: Option<Value>,
    /// Written by guild-hall: each task's state, by task id.
    #[schemars(with = "Option<serde_json::Map<String, serde_json::Value>>")]
    tasks: Option<Value>,
    /// Written by guild-hall.
    #[schemars(with = "Option<String>")]
    created: Option<Value>,
    /// Written by guild-hall: when it reached its end.
    #[schemars(with = "Option<String>")]
    completed: Option<Value>,
    /// Written by guild-hall: what its tasks' attempts used.
    #[schemars(with = "Option<super::value_schemas::UsageFigures>")]
    usage: Option<super::frontmatter::Unread>,
}

/// One task of a wave: a commission for `worker`, run in its own worktree.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields, rename = "Task")]
pub(crate) struct TaskKeys {
    /// The task's id within its wave (canonical id: `<plan>:exec:wave-<W>:task-<T>`).
    #[schemars(with = "String", regex(pattern = super::value_schemas::NAME_PATTERN))]
    id: Option<Value>,
    /// The worker package that does it.
    #[schemars(with = "String", regex(pattern = super::value_schemas::NAME_PATTERN))]
    worker: Option<Value>,
    #[schemars(with = "Option<String>")]
    title: Option<Value>,
    /// What the worker is asked to do, and how it can verify it.
    #[schemars(with = "String")]
    prompt: Option<Value>,
    /// Wall-clock limit of each of the task's attempts, over the plan's (`0s`: none).
    #[schemars(with = "Option<super::value_schemas::Duration>")]
    timeout: Option<Value>,
}

/// The keys only guild-hall writes.
pub(crate) const OWNED_KEYS: [&str; 7] = ["status", "wave", "reason", "refused", "tasks", "created", "usage"];

/// One task of a wave.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Task {
    /// `<plan>:exec:wave-<W>:task-<T>`: W and T count from 1 in plan order.
    pub canonical: String,
    /// The plan's own label for it (`id:`), unique within its wave.
    pub label: String,
    pub(crate) wave: usize,
    /// Position in its wave, from 1: the stable commit order.
    pub(crate) index: usize,
    pub worker: String,
    pub(crate) title: Option<String>,
    pub(crate) prompt: String,
    /// Wall-clock limit of each of its attempts (`timeout:`), over the plan's.
    pub(crate) timeout: Option<std::time::Duration>,
}

impl Task {
    /// The canonical id as a filesystem name (`:` → `-`).
    pub(crate) fn slug(&self) -> String {
        slug(&self.canonical)
    }

    /// Where its `key` is in the plan's frontmatter, for a problem said at it
    /// ([`Problem::at_value`]).
    pub(crate) fn path_of(&self, key: &str) -> Vec<Seg> {
        task_path(self.wave, self.index, key)
    }
}

/// The path to wave `w`'s task `t` (both from 1)'s `key` in a plan's frontmatter.
fn task_path(w: usize, t: usize, key: &str) -> Vec<Seg> {
    vec![Seg::key("waves"), Seg::Index(w - 1), Seg::Index(t - 1), Seg::key(key)]
}

/// The filesystem slug of a canonical task id.
pub(crate) fn slug(canonical: &str) -> String {
    canonical.replace(':', "-")
}

/// A parsed, validated plan artifact.
#[derive(Debug, Clone)]
pub struct Plan {
    pub(crate) id: String,
    pub(crate) path: PathBuf,
    pub(crate) hash: u64,
    pub title: Option<String>,
    /// `None`: a new file without status (taken as pending).
    pub(crate) status: Option<PlanStatus>,
    pub parallelism: usize,
    /// The integration verify command (argv), run after each wave.
    pub verify: Option<Vec<String>>,
    /// The worker of fix-forward commissions when verify fails.
    pub(crate) fixer: Option<String>,
    /// `reviewers:` as written (the project's apply when absent).
    pub(crate) reviewers: Option<Vec<String>>,
    /// Wall-clock limit of each task attempt and verify run (`timeout:`), over the package's
    /// and the project's; a task's own `timeout:` is over this.
    pub timeout: Option<std::time::Duration>,
    pub waves: Vec<Vec<Task>>,
    pub(crate) desired: Option<String>,
    /// The keys guild-hall owns, as parsed: what its writes are compared with.
    pub(crate) fields: Mapping,
    /// The keys guild-hall owns, typed: what every reader reads of them.
    pub(crate) owned: Owned,
}

/// What guild-hall last wrote of a plan, typed ([`OWNED_KEYS`] read once; each task's state is
/// [`Plan::task_state`]). A key absent, or holding a value of another type (a hand edit),
/// reads as none.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Owned {
    /// `created:`, when a pass first took it up.
    pub(crate) created: Option<String>,
    /// `wave:`, the wave under way (from 1).
    pub(crate) wave: Option<u64>,
    /// `reason:`, why it halted, failed or was cancelled.
    pub reason: Option<String>,
}

#[cfg(test)]
/// The keys a plan's frontmatter may hold (the schema's).
pub(crate) fn plan_keys() -> &'static [&'static str] {
    super::keys::fields::<Frontmatter>()
}

/// The keys one task of a plan's wave may hold (the schema's).
pub(crate) fn task_keys() -> &'static [&'static str] {
    super::keys::fields::<TaskKeys>()
}

/// A plan's schema, built once.
pub(crate) fn plan_schema() -> &'static serde_json::Value {
    static S: std::sync::OnceLock<serde_json::Value> = std::sync::OnceLock::new();
    S.get_or_init(|| schemars::schema_for!(Frontmatter).to_value())
}

/// The keys a plan may hold where (its tasks' too), from its schema.
pub(crate) fn plan_shape() -> &'static super::keys::Shape {
    static S: std::sync::OnceLock<super::keys::Shape> = std::sync::OnceLock::new();
    S.get_or_init(|| super::keys::Shape::of(plan_schema()))
}

impl Plan {
    /// Parse and validate: a plan with any problem is not acted on.
    // Long: each key read in turn, its waves' tasks too, every problem gathered so `check`
    // says all of them.
    pub(crate) fn parse(path: &Path, text: &str) -> Result<Plan, Vec<Problem>> {
        let (stem, sp, fields) = read_mapping(path, text)?;
        // What is wrong, and where: a path into the frontmatter (a top-level key, or a task's
        // key in its wave), positioned once all is known (only a plan with problems pays).
        let mut said: Vec<(Vec<Seg>, String)> = Vec::new();
        let mut bad = |at: Vec<Seg>, msg: String| said.push((at, msg));
        let top = |key: &str| vec![Seg::key(key)];
        // Every key declared, taken apart here: a key added to the declaration is read here too.
        let Frontmatter {
            title,
            date: _informational,
            status,
            parallelism,
            verify,
            fixer,
            reviewers,
            timeout,
            waves,
            desired,
            wave,
            reason,
            refused: _read_in_the_file,
            tasks,
            created,
            completed: _not_read,
            usage: _shown_from_fields,
        } = frontmatter::declared(&fields);
        let status = super::vocabulary::status_field::<PlanStatus>(status.as_ref(), &mut |k: &str, m: String| bad(top(k), m));
        let parallelism = match parallelism {
            None | Some(Value::Null) => 1,
            Some(v) => match v.as_u64() {
                Some(n) if (1..=64).contains(&n) => n as usize,
                _ => {
                    bad(top("parallelism"), "parallelism must be a whole number from 1 to 64".into());
                    1
                }
            },
        };
        let verify = match verify {
            None | Some(Value::Null) => None,
            Some(Value::Sequence(items)) if !items.is_empty() && items.iter().all(|i| i.as_str().is_some_and(|s| !s.is_empty())) => {
                Some(items.iter().filter_map(|i| i.as_str().map(str::to_string)).collect())
            }
            Some(_) => {
                bad(top("verify"), "verify must be a command as a list of words (argv), e.g. [\"cargo\", \"test\"]".into());
                None
            }
        };
        let fixer = match fixer {
            None | Some(Value::Null) => None,
            Some(Value::String(w)) if ids::validate_id(&w).is_ok() => Some(w),
            Some(_) => {
                bad(top("fixer"), "fixer must be a worker package name".into());
                None
            }
        };
        let reviewers = match reviewers {
            None | Some(Value::Null) => None,
            Some(v) => match serde_yaml_ng::from_value::<Vec<String>>(v) {
                Ok(names) if names.iter().all(|n| ids::validate_id(n).is_ok()) => Some(names),
                _ => {
                    bad(top("reviewers"), "reviewers must be a list of worker package names".into());
                    None
                }
            },
        };
        let timeout = match timeout {
            None | Some(Value::Null) => None,
            Some(v) => frontmatter::timeout(&v).map_err(|e| bad(top("timeout"), e.to_string())).ok(),
        };
        let desired = match desired {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) if s == "dispatched" || s == "cancelled" => Some(s),
            Some(_) => {
                bad(top("desired"), "desired must be dispatched or cancelled".into());
                None
            }
        };
        let parsed_waves = parse_waves(&stem, waves.as_ref(), &mut bad);
        if let Some(v) = tasks {
            if !v.is_null() && !v.is_mapping() {
                bad(top("tasks"), "tasks is written by guild-hall: a mapping of task ids to states".into());
            }
        }
        let mut problems: Vec<Problem> = said
            .into_iter()
            .map(|(at, msg)| {
                let (line, col) = frontmatter::value_position(&sp, &at);
                Problem::new(path, line, col, msg)
            })
            .collect();
        // Every unknown key, a task's too, at the key.
        for u in keys::unknown(&fields, plan_shape()) {
            let msg = match u.within.as_slice() {
                [Seg::Key(key), Seg::Index(w), Seg::Index(t)] if key == "waves" => {
                    let label =
                        waves.as_ref().and_then(|v| v.get(w)).and_then(|v| v.get(t)).and_then(|v| v.get("id")).and_then(Value::as_str);
                    let known: Vec<&str> = u.known.iter().map(String::as_str).collect();
                    format!(
                        "wave {}, task {}: {}",
                        w + 1,
                        label.map(str::to_string).unwrap_or_else(|| format!("task-{}", t + 1)),
                        keys::unknown_key(&u.key, &known)
                    )
                }
                _ => u.message(),
            };
            problems.push(u.problem(path, sp.yaml, sp.first_line, msg));
        }
        if !problems.is_empty() {
            problems.sort_by_key(|p| (p.line, p.column));
            return Err(problems);
        }
        let mut fields = fields;
        fields.retain(|k, _| k.as_str().is_some_and(|k| OWNED_KEYS.contains(&k) || k == "desired"));
        Ok(Plan {
            id: stem.to_string(),
            path: path.to_path_buf(),
            hash: content_hash(text),
            title: frontmatter::owned_text(title),
            status,
            parallelism,
            verify,
            fixer,
            reviewers,
            timeout,
            waves: parsed_waves,
            desired,
            owned: Owned {
                created: frontmatter::owned_text(created),
                wave: wave.as_ref().and_then(Value::as_u64),
                reason: frontmatter::owned_text(reason),
            },
            fields,
        })
    }

    /// The state guild-hall last wrote for a task, as the artifact shows it.
    pub fn task_state(&self, canonical: &str) -> Option<&str> {
        self.fields.get("tasks").and_then(|t| t.get(canonical)).and_then(Value::as_str)
    }

    pub fn tasks(&self) -> impl Iterator<Item = &Task> {
        self.waves.iter().flatten()
    }

    pub(crate) fn task(&self, canonical: &str) -> Option<&Task> {
        self.tasks().find(|t| t.canonical == canonical)
    }

    /// The task a person or tool names: by its canonical id, or by its label (`id:`) when no
    /// other task of the plan has that label. Every command that takes a task name resolves
    /// it here, so none picks one of two tasks silently.
    pub(crate) fn find_task(&self, name: &str) -> Result<&Task, TaskLookup> {
        if let Some(t) = self.task(name) {
            return Ok(t);
        }
        let labelled: Vec<&Task> = self.tasks().filter(|t| t.label == name).collect();
        let ids = |ts: &mut dyn Iterator<Item = &Task>| ts.map(|t| t.canonical.as_str()).collect::<Vec<_>>().join(", ");
        match labelled.as_slice() {
            [t] => Ok(t),
            [] => Err(TaskLookup::None { plan: self.id.clone(), name: name.to_string(), tasks: ids(&mut self.tasks()) }),
            more => Err(TaskLookup::Ambiguous {
                plan: self.id.clone(),
                name: name.to_string(),
                count: more.len(),
                tasks: ids(&mut more.iter().copied()),
            }),
        }
    }
}

/// The plan `stem`'s `waves:` as tasks; what is wrong with them said through `bad`, at the
/// wave or the task's key.
fn parse_waves(stem: &str, waves: Option<&Value>, bad: &mut impl FnMut(Vec<Seg>, String)) -> Vec<Vec<Task>> {
    let Some(ws) = waves.and_then(Value::as_sequence).filter(|ws| !ws.is_empty()) else {
        bad(vec![Seg::key("waves")], format!("missing `waves:`: a list of waves, each a list of tasks {{{}}}", task_keys().join(", ")));
        return Vec::new();
    };
    let mut out = Vec::new();
    for (w, wave) in ws.iter().enumerate() {
        let w = w + 1;
        let Some(items) = wave.as_sequence().filter(|i| !i.is_empty()) else {
            bad(vec![Seg::key("waves"), Seg::Index(w - 1)], format!("wave {w} is empty or not a list of tasks"));
            continue;
        };
        let mut tasks: Vec<Task> = Vec::new();
        for (t, item) in items.iter().enumerate() {
            let task = parse_task(stem, w, t + 1, item, bad);
            if tasks.iter().any(|x| x.label == task.label) {
                bad(task_path(w, t + 1, "id"), format!("wave {w}: duplicate task id {:?}", task.label));
            }
            tasks.push(task);
        }
        out.push(tasks);
    }
    out
}

/// Wave `w`'s task `t` (both from 1) of the plan `stem`, as written in `item`; what is wrong
/// with it said through `bad` (its unknown keys are said with the plan's).
fn parse_task(stem: &str, w: usize, t: usize, item: &Value, bad: &mut impl FnMut(Vec<Seg>, String)) -> Task {
    let TaskKeys { id, worker, title, prompt, timeout } = item.as_mapping().map(frontmatter::declared).unwrap_or_default();
    let text = |v: Option<Value>| v.as_ref().and_then(Value::as_str).map(str::to_string);
    let label = text(id).unwrap_or_else(|| format!("task-{t}"));
    let worker = match text(worker) {
        Some(wk) if ids::validate_id(&wk).is_ok() => wk,
        _ => {
            bad(task_path(w, t, "worker"), format!("wave {w}, task {label}: needs `worker:`, a worker package name"));
            String::new()
        }
    };
    let prompt = match text(prompt) {
        Some(p) if !p.trim().is_empty() => p,
        _ => {
            bad(task_path(w, t, "prompt"), format!("wave {w}, task {label}: needs `prompt:`, what the task is to achieve"));
            String::new()
        }
    };
    let timeout = match timeout {
        None | Some(Value::Null) => None,
        Some(v) => frontmatter::timeout(&v).map_err(|e| bad(task_path(w, t, "timeout"), format!("wave {w}, task {label}: {e}"))).ok(),
    };
    if !item.is_mapping() {
        bad(task_path(w, t, "id"), format!("wave {w}, task {t}: a task is a mapping {{{}}}", task_keys().join(", ")));
    }
    Task { canonical: format!("{stem}:exec:wave-{w}:task-{t}"), label, wave: w, index: t, worker, title: text(title), prompt, timeout }
}

/// A new plan as guild-hall writes one (`plan create`): the keys a person would write, in the
/// order written.
#[derive(Debug, Clone)]
pub(crate) struct New<'a> {
    pub(crate) title: String,
    pub(crate) status: PlanStatus,
    pub(crate) parallelism: usize,
    pub(crate) verify: Option<Vec<String>>,
    pub(crate) fixer: Option<String>,
    /// The waves: a list of waves, each a list of tasks.
    pub(crate) waves: &'a Value,
    /// The text `waves` was read from, when it was: kept verbatim in the plan when it means
    /// exactly `waves`.
    pub(crate) waves_text: Option<&'a str>,
}

/// A plan's text as [`render`] wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rendered {
    pub(crate) text: String,
    /// When the waves' own text is in it, indented verbatim under `waves:`, the file line that
    /// `waves:` is on: the waves text's line `n` is the file's `waves_line + n`, its column `c`
    /// the file's `c + 2` (a uniform indent keeps YAML's meaning).
    pub(crate) waves_line: Option<usize>,
}

/// The text of the plan `new`: the one place a plan's text is composed.
pub(crate) fn render(new: &New<'_>) -> Rendered {
    let mut fm = Mapping::new();
    fm.insert("title".into(), new.title.as_str().into());
    fm.insert("status".into(), new.status.as_str().into());
    fm.insert("parallelism".into(), (new.parallelism as u64).into());
    if let Some(v) = &new.verify {
        fm.insert("verify".into(), Value::Sequence(v.iter().map(|a| Value::from(a.as_str())).collect()));
    }
    if let Some(f) = &new.fixer {
        fm.insert("fixer".into(), f.as_str().into());
    }
    let head = frontmatter::to_yaml(&fm);
    if let Some(w) = new.waves_text {
        // A document marker would end the frontmatter or the mapping: kept as a comment, on
        // its line.
        let body: String = w
            .lines()
            .map(|l| match l {
                l if l == "---" || l.starts_with("--- ") || l == "..." || l.starts_with("... ") => format!("  # {l}\n"),
                "" => "\n".to_string(),
                l => format!("  {l}\n"),
            })
            .collect();
        let yaml = format!("{head}waves:\n{body}");
        // Used only when it means exactly the waves read (a YAML directive, say, would not).
        let same = serde_yaml_ng::from_str::<Value>(&yaml).ok().and_then(|v| v.get("waves").cloned()).is_some_and(|v| &v == new.waves);
        if same {
            return Rendered { text: format!("---\n{yaml}---\n"), waves_line: Some(1 + head.lines().count() + 1) };
        }
    }
    fm.insert("waves".into(), new.waves.clone());
    Rendered { text: format!("---\n{}---\n", frontmatter::to_yaml(&fm)), waves_line: None }
}

/// Why a task name names no one task of a plan ([`Plan::find_task`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum TaskLookup {
    #[error("plan {plan} has no task {name} (its tasks: {tasks})")]
    None { plan: String, name: String, tasks: String },
    #[error("plan {plan}: {count} tasks are labelled {name} (in different waves): name one by its canonical id, {tasks}")]
    Ambiguous { plan: String, name: String, count: usize, tasks: String },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Plan, Vec<Problem>> {
        Plan::parse(Path::new(".lore/plans/port.md"), text)
    }

    #[test]
    fn parses_waves_into_canonical_tasks() {
        let p = parse(
            "---\ntitle: Port\nparallelism: 2\nverify: [cargo, test]\nfixer: coder\nwaves:\n  - - {id: a, worker: coder, prompt: do a}\n    - {id: b, worker: coder, prompt: do b}\n  - - {id: c, worker: coder, prompt: do c}\n---\n",
        )
        .unwrap();
        assert_eq!(p.waves.len(), 2);
        assert_eq!(p.waves[0][1].canonical, "port:exec:wave-1:task-2");
        assert_eq!(p.waves[0][1].slug(), "port-exec-wave-1-task-2");
        assert_eq!(p.waves[1][0].label, "c");
        assert_eq!(p.verify, Some(vec!["cargo".to_string(), "test".to_string()]));
        assert_eq!(p.parallelism, 2);
    }

    fn waves(text: &str) -> Value {
        serde_yaml_ng::from_str(text).expect("waves")
    }

    /// The keys in the order a person reads them; the waves as given, or their own text kept
    /// verbatim (a document marker as a comment), with the line `waves:` is on.
    #[test]
    fn a_new_plan_is_written_as_always() {
        let w = waves("- - {id: a, worker: w, prompt: p}\n");
        let new = New {
            title: "Port".into(),
            status: PlanStatus::Pending,
            parallelism: 2,
            verify: Some(vec!["cargo".into(), "test".into()]),
            fixer: Some("coder".into()),
            waves: &w,
            waves_text: None,
        };
        assert_eq!(
            render(&new),
            Rendered {
                text: "---\ntitle: Port\nstatus: pending\nparallelism: 2\nverify:\n- cargo\n- test\nfixer: coder\nwaves:\n- - id: a\n    worker: w\n    prompt: p\n---\n".into(),
                waves_line: None
            }
        );
        let text = "# wave 1\n---\n- - {id: a, worker: w, prompt: p}\n\n";
        let kept = New { status: PlanStatus::Draft, verify: None, fixer: None, waves_text: Some(text), ..new.clone() };
        assert_eq!(
            render(&kept),
            Rendered {
                text: "---\ntitle: Port\nstatus: draft\nparallelism: 2\nwaves:\n  # wave 1\n  # ---\n  - - {id: a, worker: w, prompt: p}\n\n---\n".into(),
                waves_line: Some(5)
            }
        );
        let other = New { waves_text: Some("%YAML 1.2\n- - {id: b, worker: w, prompt: q}\n"), ..new.clone() };
        assert_eq!(render(&other), render(&new), "a text that does not mean the waves is not kept");
    }

    proptest::proptest! {
        /// What the renderer writes, the parser reads back as the same values, the waves' own
        /// text kept or not; a line of the waves' text is the file's `waves_line` on.
        #[test]
        fn what_is_rendered_parses_back_the_same(
            title in "\\PC{0,40}|yes|null|- x",
            draft: bool,
            parallelism in 1usize..=64,
            verify in proptest::option::of(proptest::collection::vec("[a-z][a-z ]{0,8}|yes|- x", 1..4)),
            fixer in proptest::option::of("[a-z][a-z0-9_-]{0,12}"),
            tasks in proptest::collection::vec(proptest::collection::vec(("[a-z]{1,4}", "[a-z][a-z0-9-]{0,8}", "\\PC*[^\\s]\\PC*"), 1..3), 1..3),
            keep_text: bool,
        ) {
            let mut ws = Vec::new();
            for wave in &tasks {
                let mut seen = std::collections::HashSet::new();
                let items: Vec<Value> = wave
                    .iter()
                    .filter(|(id, _, _)| seen.insert(id.clone()))
                    .map(|(id, worker, prompt)| {
                        let mut t = Mapping::new();
                        t.insert("id".into(), id.as_str().into());
                        t.insert("worker".into(), worker.as_str().into());
                        t.insert("prompt".into(), prompt.as_str().into());
                        Value::Mapping(t)
                    })
                    .collect();
                ws.push(Value::Sequence(items));
            }
            let waves = Value::Sequence(ws);
            let waves_text = serde_yaml_ng::to_string(&waves).expect("yaml");
            let new = New {
                title,
                status: if draft { PlanStatus::Draft } else { PlanStatus::Pending },
                parallelism,
                verify,
                fixer,
                waves: &waves,
                waves_text: keep_text.then_some(waves_text.as_str()),
            };
            let r = render(&new);
            let p = parse(&r.text).map_err(|e| proptest::test_runner::TestCaseError::fail(format!("{e:?}\n{}", r.text)))?;
            proptest::prop_assert_eq!(p.title.as_deref(), Some(new.title.as_str()));
            proptest::prop_assert_eq!(p.status, Some(new.status));
            proptest::prop_assert_eq!(p.parallelism, new.parallelism);
            proptest::prop_assert_eq!(&p.verify, &new.verify);
            proptest::prop_assert_eq!(&p.fixer, &new.fixer);
            let read: Vec<(String, String, String)> = p.tasks().map(|t| (t.label.clone(), t.worker.clone(), t.prompt.clone())).collect();
            let given: Vec<(String, String, String)> = waves
                .as_sequence()
                .into_iter()
                .flatten()
                .flat_map(|w| w.as_sequence().into_iter().flatten())
                .map(|t| {
                    let s = |k: &str| t.get(k).and_then(Value::as_str).unwrap_or("").to_string();
                    (s("id"), s("worker"), s("prompt"))
                })
                .collect();
            proptest::prop_assert_eq!(read, given);
            proptest::prop_assert_eq!(r.waves_line.is_some(), keep_text);
            if let Some(w) = r.waves_line {
                proptest::prop_assert_eq!(r.text.lines().nth(w - 1), Some("waves:"));
                let first = format!("  {}", waves_text.lines().next().unwrap_or(""));
                proptest::prop_assert_eq!(r.text.lines().nth(w), Some(first.as_str()));
            }
        }
    }

    /// Guild-hall's keys are read once, typed; a hand edit of another type reads as none.
    #[test]
    fn the_owned_keys_are_typed() {
        let p = parse("---\ncreated: c\nwave: 2\nreason: [r]\ntasks: {port:exec:wave-1:task-1: completed}\nwaves:\n  - - {id: a, worker: w, prompt: p}\n---\n")
            .expect("valid");
        assert_eq!(p.owned, Owned { created: Some("c".into()), wave: Some(2), reason: None });
        assert_eq!(p.task_state("port:exec:wave-1:task-1"), Some("completed"));
    }

    /// A label two waves share names neither: the canonical id names each.
    #[test]
    fn a_task_is_found_by_canonical_id_or_by_a_label_only_it_has() {
        let p = parse("---\nwaves:\n  - - {id: task-1, worker: w, prompt: a}\n    - {id: only, worker: w, prompt: b}\n  - - {id: task-1, worker: w, prompt: c}\n---\n")
            .expect("valid");
        assert_eq!(p.find_task("port:exec:wave-2:task-1").map(|t| t.prompt.as_str()), Ok("c"));
        assert_eq!(p.find_task("only").map(|t| t.canonical.as_str()), Ok("port:exec:wave-1:task-2"));
        let e = p.find_task("task-1").expect_err("two waves have it").to_string();
        assert_eq!(e, "plan port: 2 tasks are labelled task-1 (in different waves): name one by its canonical id, port:exec:wave-1:task-1, port:exec:wave-2:task-1");
        let e = p.find_task("nope").expect_err("none").to_string();
        assert!(e.starts_with("plan port has no task nope (its tasks: port:exec:wave-1:task-1, "), "{e}");
    }

    #[test]
    fn timeouts_per_plan_and_per_task() {
        let p = parse(
            "---\ntimeout: 90m\nwaves:\n  - - {id: a, worker: w, prompt: p, timeout: 4s}\n    - {id: b, worker: w, prompt: q}\n---\n",
        )
        .expect("valid");
        assert_eq!(p.timeout, Some(std::time::Duration::from_secs(90 * 60)));
        assert_eq!(p.waves[0][0].timeout, Some(std::time::Duration::from_secs(4)));
        assert_eq!(p.waves[0][1].timeout, None);
        let e = parse("---\ntimeout: soon\nwaves:\n  - - {id: a, worker: w, prompt: p, timeout: 4}\n---\n").unwrap_err();
        let all: String = e.iter().map(|p| p.to_string()).collect::<Vec<_>>().join("\n");
        assert!(all.contains(":2:10: timeout \"soon\" is not a duration: write it like 30m, 2h or 90s"), "{all}");
        assert!(all.contains("wave 1, task a: timeout 4 is not a duration: write it like 30m, 2h or 90s"), "{all}");
    }

    #[test]
    fn reports_problems_with_positions() {
        let e = parse("---\nwaves:\n  - []\n---\n").unwrap_err();
        assert!(e[0].to_string().starts_with(".lore/plans/port.md:3:5:"), "at the wave, not at `waves:`: {e:?}");
        assert!(e[0].message.contains("wave 1 is empty"), "{e:?}");
        let e = parse("---\nverify: cargo test\nwaves:\n  - - {id: a, worker: w, prompt: p}\n    - {id: a, worker: w, prompt: q}\n---\n")
            .unwrap_err();
        let all: String = e.iter().map(|p| p.to_string()).collect::<Vec<_>>().join("\n");
        assert!(all.contains(":2:9: verify must be a command"), "{all}");
        assert!(all.contains("duplicate task id \"a\""), "{all}");
        let e = parse("---\nwaves:\n  - - {id: a, prompt: p, colour: red}\n---\n").unwrap_err();
        let all: String = e.iter().map(|p| p.message.clone()).collect::<Vec<_>>().join("\n");
        assert!(all.contains("needs `worker:`") && all.contains("unknown key `colour`"), "{all}");
    }

    /// A task's problem is at that task's key or value, counted in the file; every unknown
    /// key is said, each at the key.
    #[test]
    fn task_problems_point_at_the_task() {
        let text = "---\ntitle: P\nwaves:\n  - - id: a\n      worker: w\n      prompt: p\n      colr: 1\n    - {id: a, worker: W!, prompt: q}\n  - - {id: b, prompt: r, timeout: 5, wroker: w}\n---\n";
        let said: Vec<String> = parse(text).unwrap_err().iter().map(|p| p.to_string()).collect();
        assert_eq!(
            said,
            [
                ".lore/plans/port.md:7:7: wave 1, task a: unknown key `colr` (known keys: id, prompt, timeout, title, worker)",
                ".lore/plans/port.md:8:12: wave 1: duplicate task id \"a\"",
                ".lore/plans/port.md:8:23: wave 1, task a: needs `worker:`, a worker package name",
                ".lore/plans/port.md:9:7: wave 2, task b: needs `worker:`, a worker package name",
                ".lore/plans/port.md:9:35: wave 2, task b: timeout 5 is not a duration: write it like 30m, 2h or 90s",
                ".lore/plans/port.md:9:38: wave 2, task b: unknown key `wroker`: did you mean `worker`?",
            ]
        );
    }
}
