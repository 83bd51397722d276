//! Worker packages: `worker.yaml` found in `.lore/workers/<name>/`, then
//! `$GUILD_HALL_HOME/workers/<name>/` (a package is named by its directory; the project's wins;
//! hidden directories are not packages). Loading and validating packages, resolving their command,
//! and saying where a missing one is looked for.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::artifact::commission::Resources;
use crate::artifact::Problem;
use crate::worker::sandbox::EntryError;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Checkout {
    Sparse,
    #[default]
    Full,
}

/// `worker.yaml` (contract, design §7).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "guild-hall worker package (worker.yaml)")]
pub struct Manifest {
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub(crate) command: Vec<String>,
    #[serde(default)]
    pub checkout: Checkout,
    #[serde(default = "default_capabilities")]
    pub capabilities: Vec<String>,
    #[serde(default)]
    pub(crate) posture: Option<String>,
    #[serde(default)]
    pub(crate) resources: Resources,
    #[serde(default)]
    pub(crate) env: BTreeMap<String, String>,
    /// Optional memory compaction command (argv, like `command`): gets all memories on stdin,
    /// prints the compacted memory on stdout.
    #[serde(default)]
    pub(crate) compact: Option<Vec<String>>,
    /// Where the worker may write besides its own worktree, state and temp dir; or `off`.
    #[serde(default)]
    pub sandbox: SandboxSpec,
    /// Names of variables passed to the worker from guild-hall's environment or, failing
    /// that, from `$GUILD_HALL_HOME/secrets.env` (mode 0600). Values are never logged.
    #[serde(default)]
    pub(crate) pass_env: Vec<String>,
    /// Wall-clock limit of an attempt (a humantime duration), overriding the project's.
    #[serde(default, with = "crate::config::opt_duration_str", skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<crate::artifact::schema::Duration>")]
    pub(crate) timeout: Option<std::time::Duration>,
    /// How long the worker's `ask` waits for a person (a humantime duration), over the
    /// project's; a commission's `ask_timeout:` overrides it.
    #[serde(default, with = "crate::config::opt_duration_str", skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<crate::artifact::schema::Duration>")]
    pub(crate) ask_timeout: Option<std::time::Duration>,
    /// One meeting turn (argv, like `command`): needs the `meeting` capability.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) meeting: Option<Vec<String>>,
    /// Meeting notes on close (argv): the transcript on stdin, the notes on stdout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) notes: Option<Vec<String>>,
    /// What a meeting turn prints: guild-hall's event lines, or an agent's own stream (Claude
    /// Code's or Gemini CLI's stream-json); `acp`: the command is an ACP agent, run under
    /// guild-hall's client for every kind.
    #[serde(default)]
    pub(crate) protocol: Protocol,
    /// With `protocol: acp`: what the agent may do besides the toolbox.
    #[serde(default, skip_serializing_if = "AcpSpec::is_empty")]
    pub(crate) acp: AcpSpec,
    /// Where its attempts run (`local` or `slurm`), over the project's `runner:`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) runner: Option<crate::worker::runner::RunnerName>,
    /// Whether its commissions' submitted work waits for a person (`required`) or is merged
    /// at once (`auto`), over the project's `review:`; a commission's own overrides it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) review: Option<crate::artifact::commission::ReviewMode>,
    /// Commands (argv lists) its commissions' attempts run in the worktree after submit,
    /// after the project's `checks:` and before a commission's own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) checks: Vec<Vec<String>>,
    /// Automatic send-backs before a commission fails, over the project's `max_revisions:`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) max_revisions: Option<u32>,
    /// Reviewer workers run over its commissions' diffs once their checks pass, over the
    /// project's `reviewers:`; a commission's own overrides it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) reviewers: Option<Vec<String>>,
    /// Programs its scripts run that must be on `PATH` (an agent's CLI: `claude`, `codex`):
    /// while one is missing, work for the package waits (`blocked`, naming it) and `check`
    /// says so, rather than an attempt failing on "claude: not found".
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) requires: Vec<String>,
    /// Added to the project's `workspace:` (lists after the project's, the larger `ports`):
    /// what its worktrees need besides their tracked files.
    #[serde(default, skip_serializing_if = "crate::config::Workspace::is_empty")]
    pub(crate) workspace: crate::config::Workspace,
    /// At most this many of its attempts (commissions and wave tasks) run at once in this home,
    /// across its projects (an agent's account allows so many); the rest wait, `blocked`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) max_concurrent: Option<std::num::NonZeroUsize>,
}

/// `acp:` in `worker.yaml` (with `protocol: acp`): the permission policy guild-hall's ACP client
/// answers the agent's `session/request_permission` with. The toolbox's tools are always
/// allowed; a tool listed here by name (`Bash`, `mcp__server__tool`) or by ACP kind (`edit`,
/// `execute`, `fetch`, …) is allowed; anything else is rejected, and each decision is logged.
/// `session_dir` (a `sandbox.write`-style path) opens the agent's sessions outside the
/// worktree, for an agent that loads repository content as its own settings from a session's
/// directory (Gemini CLI's `.gemini/`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct AcpSpec {
    #[serde(default)]
    pub(crate) allow: Vec<String>,
    /// Where the client opens the agent's sessions instead of the worktree: a directory of
    /// this one's named after the worktree (the worktree is named to the agent and the model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) session_dir: Option<String>,
}

impl AcpSpec {
    pub(crate) fn is_empty(&self) -> bool {
        self.allow.is_empty() && self.session_dir.is_none()
    }
}

/// The language of a meeting turn's stdout (design §8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Protocol {
    /// `{"type":"text_delta",...}` JSON lines (session, text_delta, tool_use, tool_result,
    /// turn_end, error).
    #[default]
    GuildHall,
    /// Claude Code's `--output-format stream-json --include-partial-messages`, translated.
    ClaudeStreamJson,
    /// The Codex CLI's `codex exec --json` lines, translated.
    CodexJson,
    /// Gemini CLI's `--output-format stream-json`, translated.
    GeminiStreamJson,
    /// An Agent Client Protocol agent over stdio: the command runs under guild-hall's ACP
    /// client (`guild-hall acp -- COMMAND`), which prints guild-hall's event lines.
    Acp,
}

/// `sandbox:` in `worker.yaml`: `off`, or `{write: [ABSOLUTE PATHS], read: [ABSOLUTE PATHS]}`
/// to widen what the worker may write, and which of the person's credential stores it may read
/// (`~/` is the home directory). Default: confined, nothing widened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SandboxSpec {
    /// `slurm_client`: MUNGE's socket stays reachable, so the worker can use Slurm's client
    /// commands (`sbatch`, `srun`, `scontrol`) as the person: it can submit a job that runs
    /// unconfined. Off unless the package asks.
    Confined {
        write: Vec<String>,
        read: Vec<String>,
        /// `slurm_client` in worker.yaml.
        cluster_client: bool,
    },
    Off,
}

impl schemars::JsonSchema for SandboxSpec {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "SandboxSpec".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "`off`, or `{write: [ABSOLUTE PATHS], read: [ABSOLUTE PATHS], slurm_client: BOOL}` to widen what the worker may write, which of the person's credential stores (~/.ssh, ~/.aws, ...) it may read (`~/` is the home directory), and whether it may reach MUNGE's socket to use Slurm's client commands as the person (`sbatch` runs a job unconfined: an opt-in out of confinement)",
            "oneOf": [
                {"const": "off"},
                {"type": "object", "properties": {"write": {"type": "array", "items": {"type": "string"}},
                                                   "read": {"type": "array", "items": {"type": "string"}},
                                                   "slurm_client": {"type": "boolean"}},
                 "additionalProperties": false}
            ]
        })
    }
}

/// The `sandbox:` key of worker.yaml that lets a worker use its cluster's client commands
/// ([`SandboxSpec::Confined`]'s `cluster_client`).
pub(crate) const CLUSTER_CLIENT_KEY: &str = "slurm_client";

/// How `guild-hall workers` shows a package that set [`CLUSTER_CLIENT_KEY`]: said plainly, with
/// MUNGE the worker can submit a job that runs unconfined.
pub const CLUSTER_CLIENT_SHOWN: &str = "slurm_client (MUNGE reachable: can sbatch an UNCONFINED job as you)";

impl Default for SandboxSpec {
    fn default() -> Self {
        SandboxSpec::Confined { write: Vec::new(), read: Vec::new(), cluster_client: false }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SandboxMap {
    #[serde(default)]
    write: Vec<String>,
    #[serde(default)]
    read: Vec<String>,
    #[serde(default)]
    slurm_client: bool,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum SandboxRepr {
    Word(String),
    Map(SandboxMap),
}

impl<'de> Deserialize<'de> for SandboxSpec {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        match SandboxRepr::deserialize(d).map_err(|_| {
            D::Error::custom("sandbox must be `off` or `{write: [ABSOLUTE PATHS], read: [ABSOLUTE PATHS], slurm_client: BOOL}`")
        })? {
            SandboxRepr::Word(w) if w == "off" => Ok(SandboxSpec::Off),
            SandboxRepr::Word(w) => Err(D::Error::custom(format!("sandbox: {w:?} is not `off` or `{{write: [...]}}`"))),
            SandboxRepr::Map(m) => {
                for (key, p) in m.write.iter().map(|p| ("sandbox.write", p)).chain(m.read.iter().map(|p| ("sandbox.read", p))) {
                    expand_home(key, p).map_err(D::Error::custom)?;
                }
                Ok(SandboxSpec::Confined { write: m.write, read: m.read, cluster_client: m.slurm_client })
            }
        }
    }
}

impl Serialize for SandboxSpec {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            SandboxSpec::Off => s.serialize_str("off"),
            SandboxSpec::Confined { write, read, cluster_client } => {
                use serde::ser::SerializeMap;
                let mut m = s.serialize_map(None)?;
                m.serialize_entry("write", write)?;
                if !read.is_empty() {
                    m.serialize_entry("read", read)?;
                }
                if *cluster_client {
                    m.serialize_entry(CLUSTER_CLIENT_KEY, cluster_client)?;
                }
                m.end()
            }
        }
    }
}

/// A `sandbox.write` entry as a path: absolute, or `~/...` under `$HOME`; never with `..`;
/// `${NAME:-DEFAULT}` is one of those, from guild-hall's environment ([`super::sandbox::env_or_default`]).
/// Errors name the entry as written, never what it expanded to: a variable's value may be a
/// secret, and these errors reach `check`, `workers`, `status`, a commission's `reason:` and
/// its timeline (which `guild-hall ci` pushes).
/// `key` is what the entry is (`sandbox.write`, `sandbox.read`, `acp.session_dir`): errors say it.
pub fn expand_home(key: &str, entry: &str) -> Result<PathBuf, EntryError> {
    let p = &super::sandbox::env_or_default(entry)?;
    // What the path came from, for an error: the variable's name, never its value.
    let what = match entry.strip_prefix("${").and_then(|r| r.split_once(":-")) {
        Some((name, _)) => format!(" (as ${name} or its default expands it; the value is not shown)"),
        None => String::new(),
    };
    let path = match p.strip_prefix("~/") {
        Some(rest) => {
            let home = std::env::var_os("HOME").ok_or_else(|| EntryError::NoHome { key: key.into(), entry: entry.into() })?;
            PathBuf::from(home).join(rest)
        }
        None => PathBuf::from(p),
    };
    if !path.is_absolute() {
        return Err(EntryError::NotAbsolute { key: key.into(), entry: entry.into(), from: what });
    }
    if path.components().any(|c| matches!(c, std::path::Component::ParentDir)) {
        return Err(EntryError::Upward { key: key.into(), entry: entry.into(), from: what });
    }
    Ok(path)
}

/// Whether `name` can be an environment variable name we pass on.
fn valid_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_') && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The values of `names` for a worker: guild-hall's own environment first, then
/// `secrets` (a `KEY=VALUE` file that must be private to its owner). Names found in neither
/// are returned apart (not passed); values never appear in an error.
pub fn pass_env(names: &[String], secrets: &Path) -> Result<(BTreeMap<String, String>, Vec<String>), PassEnvError> {
    let mut out = BTreeMap::new();
    let mut missing = Vec::new();
    let mut file: Option<BTreeMap<String, String>> = None;
    for name in names {
        if !valid_env_name(name) {
            return Err(PassEnvError::NotAName { name: name.clone() });
        }
        if name == crate::activity::git::PUSH_TOKEN_VAR {
            // guild-hall's own credential for the remote: never a worker's.
            missing.push(name.clone());
            continue;
        }
        if let Ok(v) = std::env::var(name) {
            out.insert(name.clone(), v);
            continue;
        }
        if file.is_none() {
            file = Some(read_secrets(secrets)?);
        }
        match file.as_ref().and_then(|f| f.get(name)) {
            Some(v) => {
                out.insert(name.clone(), v.clone());
            }
            None => missing.push(name.clone()),
        }
    }
    Ok((out, missing))
}

/// Why a worker package cannot run the work asked of it: none of that name (or a broken one),
/// one without the capability, or one whose command is not there.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Unusable {
    /// `why`: its problem, as the catalogue found it.
    #[error("worker package {name:?} is invalid: {why}")]
    Invalid { name: String, why: String },
    /// `said`: in the catalogue's words ([`Catalog::not_installed`]): where it looked, a
    /// did-you-mean, how to install a bundled one.
    #[error("{said}")]
    NotInstalled { said: String },
    #[error(
        "worker {name:?} does not have the `commission` capability (its worker.yaml says `capabilities: [commission]` to take this work)"
    )]
    NoCommission { name: String },
    #[error("worker {name:?} does not have the `meeting` capability")]
    NoMeeting { name: String },
    #[error("worker {name:?} has no `meeting:` command in its worker.yaml")]
    NoMeetingCommand { name: String },
    #[error("worker.yaml: command is empty")]
    EmptyCommand,
    #[error("command {prog:?} not found on PATH")]
    NotOnPath { prog: String },
    #[error("command {} is not an executable file", .path.display())]
    NotExecutable { path: PathBuf },
    /// `shown`: its path as a person would write it.
    #[error("command {prog} not found: {} does not exist", .shown.display())]
    Missing { prog: String, shown: PathBuf },
    #[error("command {} not found: {error}", .path.display())]
    Unreadable { path: PathBuf, error: std::io::Error },
}

/// Why a package's `posture:` file cannot be read as its own ([`Package::posture`]).
#[derive(Debug, thiserror::Error)]
pub(crate) enum PostureError {
    #[error("posture: {0}")]
    Path(crate::artifact::ids::IdError),
    /// `rel`: the posture's path in the package, normalised.
    #[error("posture {rel}: {error}")]
    Unreadable { rel: String, error: crate::artifact::ReadError },
}

/// Why a worker's `pass_env` cannot be had: its values never appear in one.
#[derive(Debug, thiserror::Error)]
pub enum PassEnvError {
    #[error("pass_env: {name:?} is not a variable name")]
    NotAName { name: String },
    /// The secrets file could not be read.
    #[error("{}: {error}", .path.display())]
    Unreadable { path: PathBuf, error: std::io::Error },
    #[error("{}: not a regular file", .path.display())]
    NotRegular { path: PathBuf },
    /// Others than its owner may read or write it; `mode` is its permission bits.
    #[error("{}: must be private to its owner (it is mode {mode:04o}): chmod 600 {}", .path.display(), .path.display())]
    NotPrivate { path: PathBuf, mode: u32 },
    /// Line `line` (1-based) is not `KEY=VALUE`.
    #[error("{}:{line}: expected KEY=VALUE", .path.display())]
    NotKeyValue { path: PathBuf, line: usize },
}

fn read_secrets(path: &Path) -> Result<BTreeMap<String, String>, PassEnvError> {
    use std::os::unix::fs::MetadataExt;
    let unreadable = |error| PassEnvError::Unreadable { path: path.to_path_buf(), error };
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(e) => return Err(unreadable(e)),
    };
    if !meta.is_file() {
        return Err(PassEnvError::NotRegular { path: path.to_path_buf() });
    }
    if meta.mode() & 0o077 != 0 || meta.uid() != nix::unistd::geteuid().as_raw() {
        return Err(PassEnvError::NotPrivate { path: path.to_path_buf(), mode: meta.mode() & 0o7777 });
    }
    let text = std::fs::read_to_string(path).map_err(unreadable)?;
    let mut out = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line);
        let Some((k, v)) = line.split_once('=') else {
            return Err(PassEnvError::NotKeyValue { path: path.to_path_buf(), line: n + 1 });
        };
        let v = v.trim();
        let v = [('"', '"'), ('\'', '\'')].iter().find_map(|(a, b)| v.strip_prefix(*a).and_then(|x| x.strip_suffix(*b))).unwrap_or(v);
        out.insert(k.trim().to_string(), v.to_string());
    }
    Ok(out)
}

fn default_capabilities() -> Vec<String> {
    vec!["commission".into()]
}

/// Where a package was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    Project,
    Home,
    /// A Guild Hall worker package under a `guild_hall_packages:` directory, run through an
    /// agent package (the roster's).
    #[serde(rename = "guild_hall_packages")]
    GuildHall,
    /// A name `worker_aliases:` maps to another package.
    Alias,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Package {
    #[serde(flatten)]
    pub manifest: Manifest,
    pub dir: PathBuf,
    pub source: Source,
    /// The Guild Hall worker this package runs (its manifest and `dir` are its agent's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub guild_hall: Option<std::sync::Arc<GuildHallWorker>>,
    /// The package name `worker_aliases:` maps this name to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alias_of: Option<String>,
}

/// A Guild Hall worker package (`package.json` with a `guildHall` key), as the roster read it:
/// what its package (its agent's) runs it with.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GuildHallWorker {
    /// `guildHall.identity.name`: what commissions call it by.
    pub identity: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display_title: Option<String>,
    /// Its directory (where `package.json`, `soul.md` and `posture.md` are).
    pub dir: PathBuf,
    /// The `guild_hall_packages:` entry it was found under, as written.
    pub found_under: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// `builtInTools`, less those that do not carry over.
    pub tools: Vec<String>,
    pub checkout: Checkout,
    /// The agent package it runs through.
    pub agent: String,
}

impl GuildHallWorker {
    /// Its soul then its posture (either may be absent), as the worker's posture. Never read
    /// through a link: a package from a cloned repository could point at the person's secrets.
    pub(crate) fn posture(&self) -> Result<Option<String>, PostureError> {
        let mut parts = Vec::new();
        for name in ["soul.md", "posture.md"] {
            match crate::artifact::read_regular_beneath(&self.dir, Path::new(name)) {
                Ok(text) => parts.push(text.trim_end().to_string()),
                Err(crate::artifact::ReadError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(error) => return Err(PostureError::Unreadable { rel: name.to_string(), error }),
            }
        }
        Ok((!parts.is_empty()).then(|| format!("{}\n", parts.join("\n\n"))))
    }
}

impl Manifest {
    /// `max_concurrent:`: at most this many of its attempts at once in this home.
    pub fn max_concurrent(&self) -> Option<usize> {
        self.max_concurrent.map(std::num::NonZeroUsize::get)
    }

    /// `worker.yaml`'s schema (the one `guild-hall schema worker` prints), built once.
    pub(crate) fn schema() -> &'static serde_json::Value {
        static S: std::sync::OnceLock<serde_json::Value> = std::sync::OnceLock::new();
        S.get_or_init(|| schemars::schema_for!(Manifest).to_value())
    }

    /// The keys `worker.yaml` may hold where, from its schema.
    fn shape() -> &'static crate::artifact::keys::Shape {
        static S: std::sync::OnceLock<crate::artifact::keys::Shape> = std::sync::OnceLock::new();
        S.get_or_init(|| crate::artifact::keys::Shape::of(Manifest::schema()))
    }

    /// Parse and validate `worker.yaml` (at `file`): not YAML, or every key at any depth
    /// (`resources:`, `sandbox:`) the manifest does not have, with a "did you mean"; else what
    /// its type found; then the values no type says (a name, `pass_env`'s names, a command).
    /// Each a problem at its place.
    pub(crate) fn parse(file: &Path, text: &str) -> Result<Manifest, Vec<Problem>> {
        let problems = crate::artifact::keys::check_file(file, text, Manifest::shape());
        if !problems.is_empty() {
            return Err(problems);
        }
        let m: Manifest = serde_yaml_ng::from_str(text).map_err(|e| {
            let (line, col, said) = crate::artifact::locate::yaml_error(&e, text, 1);
            vec![Problem::new(file, line, col, format!("invalid worker.yaml: {said}"))]
        })?;
        let at = |key: &str, msg: String| {
            let (line, col) =
                crate::artifact::locate::position(text, &[crate::artifact::locate::Seg::key(key)], crate::artifact::locate::At::Value)
                    .unwrap_or((1, 1));
            vec![Problem::new(file, line, col, msg)]
        };
        if let Err(e) = crate::artifact::ids::validate_id(&m.name) {
            return Err(at("name", format!("bad name: {e}")));
        }
        if let Some(bad) = m.pass_env.iter().find(|n| !valid_env_name(n)) {
            return Err(at("pass_env", format!("pass_env: {bad:?} is not a variable name")));
        }
        if m.command.is_empty() {
            return Err(at("command", "command must be a non-empty list (argv)".into()));
        }
        if let Some(bad) = m.requires.iter().find(|r| !is_program_name(r)) {
            return Err(at(
                "requires",
                format!(
                    "requires: {bad:?} is not a program's name: name each program looked up on PATH, without a path (`requires: [claude]`)"
                ),
            ));
        }
        if let Some(bad) = m.capabilities.iter().find(|c| !CAPABILITIES.contains(&c.as_str())) {
            let near = crate::artifact::keys::did_you_mean(bad, &CAPABILITIES).map(|k| format!("did you mean `{k}`? ")).unwrap_or_default();
            return Err(at(
                "capabilities",
                format!("unknown capability `{bad}`: {near}a package's capabilities are `commission` (work dispatched to it: a commission, a wave task; `worker`, the worker-dispatch spec's word, means the same) and `meeting`"),
            ));
        }
        if !m.acp.is_empty() && m.protocol != Protocol::Acp {
            return Err(at("acp", "acp: is the policy of an ACP agent: it needs `protocol: acp`".into()));
        }
        if let Some(dir) = &m.acp.session_dir {
            expand_home("acp.session_dir", dir).map_err(|e| at("acp", e.to_string()))?;
        }
        if let Some(why) = m.workspace.shape_problems().into_iter().next() {
            return Err(at("workspace", why));
        }
        Ok(m)
    }
}

impl Package {
    /// Whose memory this package's runs keep (its dir under the project's memory): the
    /// package's name; for a Guild Hall roster worker (whose manifest is its agent package's)
    /// its identity, as a name of its own — `roster.` then the identity, each byte outside
    /// `[A-Za-z0-9-]` as `_<hex>` — so that each identity remembers for itself, never through
    /// the agent package or another identity run by it.
    pub(crate) fn memory_key(&self) -> String {
        use std::fmt::Write as _;
        let Some(worker) = &self.guild_hall else { return self.manifest.name.clone() };
        let mut key = String::from("roster.");
        for b in worker.identity.bytes() {
            if b.is_ascii_alphanumeric() || b == b'-' {
                key.push(b as char);
            } else {
                let _ = write!(key, "_{b:02x}");
            }
        }
        if key.len() > 100 {
            // An id is at most 100 bytes: a long identity keeps its start and a hash of the whole.
            let hash = worker.identity.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
            let mut end = 83;
            while !key.is_char_boundary(end) {
                end -= 1;
            }
            key = format!("{}-{hash:016x}", &key[..end]);
        }
        key
    }

    /// Load one package directory's `worker.yaml`.
    pub fn load(dir: &Path) -> anyhow::Result<Package> {
        let file = dir.join("worker.yaml");
        let text = crate::artifact::read_regular(&file).map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
        let manifest = Manifest::parse(&file, &text)
            .map_err(|ps| anyhow::anyhow!("{}", ps.iter().map(|p| p.to_string()).collect::<Vec<_>>().join("\n")))?;
        Ok(Package { manifest, dir: dir.to_path_buf(), source: Source::Project, guild_hall: None, alias_of: None })
    }

    /// Where it came from, as `workers` says it: the project's `.lore/workers` or the home's
    /// `workers/` (and whether the binary bundles it), a `guild_hall_packages:` directory (and
    /// the agent it runs through), or an alias.
    pub fn origin(&self) -> String {
        let bundled = if super::bundled::is_bundled(&self.manifest.name) { " (bundled)" } else { "" };
        match (&self.alias_of, &self.guild_hall, self.source) {
            (Some(of), _, _) => format!("alias of {of}"),
            (None, Some(w), _) => format!("guild_hall_packages {} (through {})", w.found_under, w.agent),
            (None, None, Source::Home) => format!("home{bundled}"),
            (None, None, _) => format!("project{bundled}"),
        }
    }

    /// The posture text (system-prompt preamble), if the package has one: a Guild Hall
    /// worker's soul and posture, else its `posture:` file.
    pub(crate) fn posture(&self) -> Result<Option<String>, PostureError> {
        if let Some(w) = &self.guild_hall {
            return w.posture();
        }
        let Some(rel) = &self.manifest.posture else { return Ok(None) };
        let rel = crate::artifact::ids::validate_rel_path(rel).map_err(PostureError::Path)?;
        // Never through a link: a package from a cloned repository could point its posture at
        // the person's secrets, which would go into every prompt.
        crate::artifact::read_regular_beneath(&self.dir, Path::new(&rel)).map(Some).map_err(|error| PostureError::Unreadable { rel, error })
    }

    /// [`Package::sandbox_write`] beside each entry as written: what an error names (an
    /// expanded `${NAME:-DEFAULT}` may be a secret, never shown).
    pub(crate) fn sandbox_write_entries(&self) -> Result<Vec<(String, PathBuf)>, EntryError> {
        match &self.manifest.sandbox {
            SandboxSpec::Confined { write, .. } => write.iter().map(|w| expand_home("sandbox.write", w).map(|p| (w.clone(), p))).collect(),
            SandboxSpec::Off => Ok(Vec::new()),
        }
    }

    /// What the package's `sandbox.read` names, `~` expanded: of the person's credential stores
    /// ([`super::sandbox::credential_stores`]) these (and what lies beneath) are readable.
    pub(crate) fn sandbox_read(&self) -> Result<Vec<PathBuf>, EntryError> {
        match &self.manifest.sandbox {
            SandboxSpec::Confined { read, .. } => read.iter().map(|r| expand_home("sandbox.read", r)).collect(),
            SandboxSpec::Off => Ok(Vec::new()),
        }
    }

    /// The package's `sandbox.slurm_client`: its confined worker may reach MUNGE's socket.
    pub(crate) fn cluster_client(&self) -> bool {
        matches!(self.manifest.sandbox, SandboxSpec::Confined { cluster_client: true, .. })
    }

    /// `commission`, or `worker`: the worker-dispatch spec's word for a package that takes
    /// dispatched work (REQ-WD-1), the same capability.
    pub(crate) fn can_commission(&self) -> bool {
        self.manifest.capabilities.iter().any(|c| c == "commission" || c == "worker")
    }

    pub(crate) fn can_meet(&self) -> bool {
        self.manifest.capabilities.iter().any(|c| c == "meeting")
    }

    /// The executable to run: relative paths with a '/' resolve against the package dir, bare
    /// names against `PATH`. Errors say what is wrong, for the activation-failure reason.
    pub(crate) fn resolve_command(&self) -> Result<Vec<String>, Unusable> {
        self.resolve_argv(&self.manifest.command)
    }

    /// Resolve any argv of this package (`command`, `compact`) the same way.
    pub(crate) fn resolve_argv(&self, argv: &[String]) -> Result<Vec<String>, Unusable> {
        let (prog, args) = argv.split_first().ok_or(Unusable::EmptyCommand)?;
        let path = if prog.contains('/') {
            let p = Path::new(prog);
            if p.is_absolute() {
                p.to_path_buf()
            } else {
                self.dir.join(p)
            }
        } else {
            search_path(prog).ok_or_else(|| Unusable::NotOnPath { prog: prog.clone() })?
        };
        use std::os::unix::fs::PermissionsExt;
        match std::fs::metadata(&path) {
            Ok(m) if m.is_file() && m.permissions().mode() & 0o111 != 0 => {}
            Ok(_) => return Err(Unusable::NotExecutable { path }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                // Said as a person would write the path (`dir/run.sh`, not `dir/./run.sh`).
                let shown: PathBuf = path.components().filter(|c| !matches!(c, std::path::Component::CurDir)).collect();
                return Err(Unusable::Missing { prog: prog.clone(), shown });
            }
            Err(error) => return Err(Unusable::Unreadable { path, error }),
        }
        let mut argv = vec![path.to_string_lossy().into_owned()];
        argv.extend(args.iter().cloned());
        Ok(argv)
    }

    /// What an attempt of this package needs and does not find, each with the key of
    /// `worker.yaml` that names it (and the index in its list): its `command`, `posture`,
    /// `compact` and the programs it `requires` on `PATH`. Work for it waits while any is
    /// missing (a package is written file by file; a CLI is installed later).
    pub(crate) fn missing(&self) -> Vec<(&'static str, Option<usize>, String)> {
        let mut out = Vec::new();
        if let Err(why) = self.resolve_command() {
            out.push(("command", None, why.to_string()));
        }
        if let Some(rel) = &self.manifest.posture {
            if let Err(why) = self.posture().map_err(|e| e.to_string()) {
                let path = self.dir.join(rel);
                let why = if std::fs::symlink_metadata(&path).is_err() {
                    let shown: PathBuf = path.components().filter(|c| !matches!(c, std::path::Component::CurDir)).collect();
                    format!("posture {rel} not found: {} does not exist", shown.display())
                } else {
                    why
                };
                out.push(("posture", None, why));
            }
        }
        if let Some(compact) = &self.manifest.compact {
            if let Err(why) = self.resolve_argv(compact) {
                out.push(("compact", None, format!("compact: {why}")));
            }
        }
        for (i, prog) in self.manifest.requires.iter().enumerate() {
            if search_executable(prog).is_none() {
                out.push((
                    "requires",
                    Some(i),
                    format!("requires `{prog}`, which is not on PATH: install it, or run guild-hall with a PATH that has it"),
                ));
            }
        }
        out
    }
}

/// The capability words a package may declare ([`Package::can_commission`]: `worker` is the
/// spec's word for `commission`).
const CAPABILITIES: [&str; 3] = ["commission", "meeting", "worker"];

/// A program's bare name, as `requires:` lists it: looked up on PATH, never a path.
fn is_program_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.chars().any(|c| c == '/' || c.is_whitespace() || c.is_control())
}

/// `prog` on PATH as an executable file.
fn search_executable(prog: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(prog))
        .find(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0))
}

fn search_path(prog: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(prog)).find(|p| p.is_file())
}

// Here, not beside the bundled files: a package's manifest is this module's to parse, and the
// bundled files know nothing of it.
impl super::bundled::BundledPackage {
    /// Its `worker.yaml`, parsed (a unit test proves every bundled one parses).
    pub(crate) fn manifest(&self) -> Manifest {
        let text = self.files.iter().find(|f| f.name == "worker.yaml").map(|f| f.bytes).unwrap_or_default();
        serde_yaml_ng::from_slice(text).unwrap_or_else(|e| panic!("bundled package {}: worker.yaml: {e}", self.dir))
    }
}

/// How to install the bundled package `name`.
pub(crate) fn install_hint(name: &str) -> String {
    format!("`guild-hall workers add {name}` installs it")
}

/// A project's own worker packages: `.lore/workers/`.
pub fn project_workers_dir(project_root: &Path) -> PathBuf {
    project_root.join(".lore").join("workers")
}

/// All packages by name (project first, then home), plus problems with broken ones.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    pub packages: BTreeMap<String, Package>,
    /// Packages whose worker.yaml is broken, by directory name: the reason.
    pub(crate) broken: BTreeMap<String, String>,
    pub problems: Vec<Problem>,
    /// Where packages were looked for: the project's dir, then the home's.
    pub(crate) dirs: Vec<PathBuf>,
    /// Packages missing what an attempt needs ([`Package::missing`]: the command, posture,
    /// compact command not there (yet), a required program not on PATH), by name: why. Looked
    /// at when discovered, so that deciding from the catalog stays free of the filesystem.
    pub(crate) unready: BTreeMap<String, String>,
    /// The same, each at its key in the package's `worker.yaml`: what `check` reports.
    pub(crate) unready_problems: Vec<Problem>,
}

impl Catalog {
    pub(super) fn look_at_commands(&mut self) {
        use crate::artifact::locate::{position, At, Seg};
        for (name, p) in &self.packages {
            let missing = p.missing();
            if missing.is_empty() {
                continue;
            }
            self.unready.insert(name.clone(), missing.iter().map(|(_, _, why)| why.as_str()).collect::<Vec<_>>().join("; "));
            let file = p.dir.join("worker.yaml");
            let text = crate::artifact::read_regular(&file).unwrap_or_default();
            for (key, index, why) in missing {
                let mut at = vec![Seg::key(key)];
                at.extend(index.map(Seg::Index));
                let (line, col) = position(&text, &at, At::Value).unwrap_or((1, 1));
                self.unready_problems.push(Problem::new(&file, line, col, why));
            }
        }
    }

    /// A catalog holding a plain package for each of `names` (for the decider's tests).
    #[cfg(test)]
    pub(crate) fn with(names: &[&str]) -> Catalog {
        let mut cat = Catalog::default();
        for name in names {
            let manifest: Manifest = serde_yaml_ng::from_str(&format!("name: {name}\ncommand: [./run.sh]\n")).expect("a plain manifest");
            let pkg = Package { manifest, dir: PathBuf::from("/nonexistent"), source: Source::Project, guild_hall: None, alias_of: None };
            cat.packages.insert(name.to_string(), pkg);
        }
        cat
    }

    /// Why work for worker `name` waits, if it does: no package of that name is installed
    /// (nor a broken one, which is a problem of its own). Said with where packages are looked
    /// for, and how to install it when it is bundled.
    pub(crate) fn not_installed(&self, name: &str) -> Option<String> {
        if self.packages.contains_key(name) || self.broken.contains_key(name) {
            return None;
        }
        let places: Vec<String> = self.dirs.iter().map(|d| format!("{}/", d.join(name).display())).collect();
        let how = if super::bundled::is_bundled(name) {
            install_hint(name)
        } else {
            let names: Vec<&str> = self.packages.keys().map(String::as_str).collect();
            match crate::artifact::keys::did_you_mean(name, &names) {
                Some(near) => format!("did you mean {near:?}? (`guild-hall workers --available` lists the bundled packages)"),
                None => "`guild-hall workers --available` lists the bundled packages".to_string(),
            }
        };
        Some(format!("worker {name:?} is not installed (no package in {}): {how}", places.join(" nor ")))
    }

    /// Why work (a commission, a wave task) for worker `name` cannot start yet, if it cannot:
    /// no package of that name, or one it cannot use — invalid, without the `commission`
    /// capability, or whose command is not there (yet: a package is written file by file).
    /// Such work waits; the pass, `check` and `status` all ask this.
    pub(crate) fn cannot_start(&self, name: &str) -> Option<String> {
        self.not_installed(name).or_else(|| match self.for_commission(name) {
            Ok(_) => self.unready.get(name).map(|why| format!("worker package {name:?}: {why}")),
            Err(why) => Some(why.to_string()),
        })
    }

    pub(super) fn scan(&mut self, dir: &Path, source: Source) {
        self.dirs.push(dir.to_path_buf());
        // What comes with a repository is never read through a link (its `.lore/workers`, a
        // package dir, a worker.yaml): it could lead anywhere. The home's packages are the
        // person's own, and a package dir there may be a link they made.
        if source == Source::Project {
            if let Err(e) = crate::artifact::refuse_lore_link(dir) {
                self.problems.push(Problem::new(dir, 1, 1, format!("{e:#}")));
                return;
            }
        }
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        // A hidden directory is not a package (`workers add` writes one there first).
        let mut dirs: Vec<PathBuf> = Vec::new();
        for e in entries.filter_map(|e| e.ok()) {
            if e.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            let path = e.path();
            if source == Source::Project && e.file_type().is_ok_and(|t| t.is_symlink()) {
                let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("").to_string();
                self.fail(&path, &name, 1, 1, "a symlink: a project's worker package is never read through a link (it could lead outside the repository); make it a directory".into());
                continue;
            }
            if path.is_dir() {
                dirs.push(path);
            }
        }
        dirs.sort();
        for d in dirs {
            let dir_name = d.file_name().and_then(|n| n.to_str()).unwrap_or("").to_string();
            let file = d.join("worker.yaml");
            let text = match crate::artifact::read_regular(&file) {
                Ok(t) => t,
                Err(crate::artifact::ReadError::Symlink) => {
                    self.fail(&file, &dir_name, 1, 1, crate::artifact::ReadError::Symlink.to_string());
                    continue;
                }
                Err(_) => continue,
            };
            match Manifest::parse(&file, &text) {
                // A package is named by its directory (where `workers add`, `not_installed` and
                // people look for it): a `name:` that says another — a copied package whose
                // `name:` was left as it was, say — is invalid, said at `name:`, and never
                // takes the place of the package of that name.
                Ok(m) if m.name != dir_name => {
                    use crate::artifact::locate::{position, At, Seg};
                    let (line, col) = position(&text, &[Seg::key("name")], At::Value).unwrap_or((1, 1));
                    let msg = format!(
                        "name: {} is not its directory's name {dir_name:?}: a package is named by its directory; set `name: {dir_name}` (or rename the directory)",
                        m.name
                    );
                    self.fail(&file, &dir_name, line, col, msg);
                }
                Ok(m) => {
                    if !self.packages.contains_key(&m.name) && !self.broken.contains_key(&m.name) {
                        let pkg = Package { manifest: m, dir: d.clone(), source, guild_hall: None, alias_of: None };
                        self.packages.insert(pkg.manifest.name.clone(), pkg);
                    }
                }
                Err(problems) => {
                    // Known by the name it gives itself, if it reads that far (commissions ask
                    // for it by that name); else by its directory's.
                    let name = serde_yaml_ng::from_str::<Manifest>(&text)
                        .ok()
                        .map(|m| m.name)
                        .filter(|n| crate::artifact::ids::validate_id(n).is_ok())
                        .unwrap_or_else(|| dir_name.clone());
                    for p in problems {
                        self.fail(&file, &name, p.line, p.column, p.message);
                    }
                }
            }
        }
    }

    fn fail(&mut self, file: &Path, name: &str, line: usize, col: usize, msg: String) {
        if !self.packages.contains_key(name) {
            self.broken.entry(name.to_string()).or_insert_with(|| format!("{}: {msg}", file.display()));
        }
        self.problems.push(Problem::new(file, line, col, msg));
    }

    /// The package for a commission, or why there is none (the activation-failure reason).
    pub(crate) fn for_commission(&self, name: &str) -> Result<&Package, Unusable> {
        match self.find(name)? {
            p if p.can_commission() => Ok(p),
            _ => Err(Unusable::NoCommission { name: name.to_string() }),
        }
    }

    /// The package for a meeting: the `meeting` capability and a `meeting:` command.
    pub(crate) fn for_meeting(&self, name: &str) -> Result<&Package, Unusable> {
        match self.find(name)? {
            p if !p.can_meet() => Err(Unusable::NoMeeting { name: name.to_string() }),
            p if p.manifest.meeting.is_none() => Err(Unusable::NoMeetingCommand { name: name.to_string() }),
            p => Ok(p),
        }
    }

    fn find(&self, name: &str) -> Result<&Package, Unusable> {
        match self.packages.get(name) {
            Some(p) => Ok(p),
            None => match self.broken.get(name) {
                Some(why) => Err(Unusable::Invalid { name: name.to_string(), why: why.clone() }),
                // One wording of "not installed" for every entry point: the pass's.
                None => Err(Unusable::NotInstalled {
                    said: self.not_installed(name).unwrap_or_else(|| format!("worker {name:?} is not installed")),
                }),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `worker.yaml` allows exactly its schema's keys; a slip is said at the key.
    #[test]
    fn unknown_manifest_keys_at_the_key_with_the_key_meant() {
        let schema: serde_json::Value = serde_json::from_str(&crate::schema::schema("worker").expect("schema")).expect("json");
        let mut props: Vec<&str> = schema["properties"].as_object().expect("properties").keys().map(String::as_str).collect();
        let mut keys = crate::artifact::keys::fields::<Manifest>().to_vec();
        props.sort();
        keys.sort();
        assert_eq!(keys, props);
        let file = Path::new("w/worker.yaml");
        let said =
            |text: &str| -> Vec<String> { Manifest::parse(file, text).err().unwrap_or_default().iter().map(|p| p.to_string()).collect() };
        assert_eq!(
            said("name: w\ncommand: [x]\ncapabilites: [commission]\nresources: {max_turn: 5}\nsandbox:\n  writ: [/tmp]\n"),
            [
                "w/worker.yaml:3:1: unknown key `capabilites`: did you mean `capabilities`?",
                "w/worker.yaml:4:13: unknown key `max_turn` in `resources`: did you mean `max_turns`?",
                "w/worker.yaml:6:3: unknown key `writ` in `sandbox`: did you mean `write`?",
            ],
            "every one, nested too"
        );
        assert!(said("name: w\ncommand: [x]\nenv: {ANY_NAME: x}\nsandbox: off\n").is_empty());
        // The position is said once, in front, counted in the file.
        assert_eq!(said("name: w\ncommand: [x]\ncheckout: partial\n").len(), 1);
        let bad = &said("name: w\ncommand: [x]\ncheckout: partial\n")[0];
        assert!(bad.starts_with("w/worker.yaml:3:11: invalid worker.yaml: checkout: unknown variant `partial`"), "{bad}");
        assert!(!bad.contains("line 3"), "{bad}");
        assert_eq!(said("name: w\ncommand: []\n"), ["w/worker.yaml:2:10: command must be a non-empty list (argv)"]);
        assert_eq!(
            said("name: w\ncommand: [x]\nacp: {allow: [Bash]}\n"),
            ["w/worker.yaml:3:6: acp: is the policy of an ACP agent: it needs `protocol: acp`"]
        );
        assert!(said("name: w\ncommand: [x]\nprotocol: acp\nacp: {allow: [Bash, edit]}\n").is_empty());
        assert!(said("name: w\ncommand: [x]\nprotocol: acp\nacp: {session_dir: ~/.agent/sessions}\n").is_empty());
        assert!(!said("name: w\ncommand: [x]\nprotocol: acp\nacp: {session_dir: sessions}\n").is_empty());
        assert!(!said("name: w\ncommand: [x]\nacp: {session_dir: ~/.agent/sessions}\n").is_empty());
    }
}
