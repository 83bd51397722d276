//! Settings and the on-disk layout: `.lore/guild-hall.yaml` (per project), `$GUILD_HALL_HOME`
//! (`config.yaml`, worktrees, runtime state) and the stable project name. Reads and writes
//! configuration; knows nothing about commissions' lifecycles.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{anyhow, Context, Result};
use serde::{Deserialize, Serialize};

/// How pending commissions get dispatched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub(crate) enum DispatchMode {
    /// Pending commissions go FIFO as capacity allows.
    #[default]
    Auto,
    /// Pending commissions wait for `desired: dispatched`.
    Manual,
}

/// `.lore/guild-hall.yaml`: every key optional.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProjectConfig {
    pub(crate) name: Option<String>,
    pub(crate) commission_cap: usize,
    pub(crate) meeting_cap: usize,
    /// The most follow-up requests one meeting's worker may make (`propose_followup`); more
    /// are dropped, and the meeting's log says how many.
    pub(crate) followups_per_meeting: usize,
    /// Wall-clock limit of one meeting turn: past it the worker is stopped and the turn fails
    /// saying so; `0s` means none.
    #[serde(with = "duration_str")]
    pub(crate) meeting_turn_timeout: Duration,
    pub integration_branch: String,
    #[serde(with = "duration_str")]
    pub(crate) stale_after: Duration,
    #[serde(with = "duration_str")]
    pub(crate) cancel_grace: Duration,
    pub(crate) dispatch: DispatchMode,
    pub(crate) default_worker: Option<String>,
    /// Wall-clock limit of an attempt unless the commission or its package says otherwise;
    /// `0s` means none.
    #[serde(with = "duration_str")]
    pub(crate) timeout: Duration,
    /// How long a commission's worker waits in `ask` for a person's answer, unless its package
    /// or the commission says otherwise (`ask_timeout:`).
    #[serde(with = "duration_str")]
    pub(crate) ask_timeout: Duration,
    /// The largest file one attempt may merge (or a wave task copy back): bytes, or `100MiB`.
    #[serde(with = "byte_size")]
    pub(crate) merge_max_file_size: u64,
    /// The most bytes of new or changed files one attempt (or wave task) may merge.
    #[serde(with = "byte_size")]
    pub(crate) merge_max_attempt_size: u64,
    /// The person's branch: what `sync` brings into the integration branch and `land` brings
    /// the integration branch's work into. Default: the branch `init` started from (kept in
    /// the repository's git config, `guild-hall.baseBranch`), else `main`, else `master`.
    pub(crate) base_branch: Option<String>,
    /// Sync the integration branch from this branch by itself (at `watch`'s start, and before
    /// a pass starts new work); it is then the base branch too.
    pub(crate) follow: Option<String>,
    /// Where attempts run: `local` (this machine) or `slurm` (batch jobs on the cluster
    /// `slurm:` describes). A package's or a commission's `runner:` overrides it.
    pub(crate) runner: crate::artifact::commission::RunnerName,
    /// With `runner: slurm`: where jobs go.
    pub(crate) slurm: SlurmConfig,
    /// `required`: a commission's submitted work waits in `review` for a person (approve,
    /// revise, reject); `auto`: merged at once. A package's or a commission's `review:`
    /// overrides it.
    pub(crate) review: crate::artifact::commission::ReviewMode,
    /// Commands (argv lists) every commission's attempt runs in its worktree after it
    /// submits, confined like its worker, as proof of the work; a package's and a
    /// commission's `checks:` run after these.
    pub(crate) checks: Vec<Vec<String>>,
    /// Automatic send-backs (a failing check, a merge conflict) a commission gets before it
    /// fails (or, with `review: required`, waits for a person showing the failure). A
    /// package's or a commission's `max_revisions:` overrides it.
    pub(crate) max_revisions: u32,
    /// Reviewer workers (package names) run read-only over a commission's diff once its checks
    /// pass, each giving a verdict (`approve`, or `changes` with comments on lines); a
    /// package's or a commission's `reviewers:` overrides it.
    pub(crate) reviewers: Option<Vec<String>>,
    /// What every new worktree gets before its worker starts (a package's `workspace:` adds to
    /// it): the person's ignored files copied in, setup and teardown commands, ports.
    pub(crate) workspace: Workspace,
    /// A command run with one JSON event on its stdin when something needs a person
    /// (`crate::reconcile::notifications`); it replaces the home's, and `[]` turns it off.
    pub(crate) notify: Option<Vec<String>>,
    /// How long the notify command may run before it is killed.
    #[serde(with = "duration_str")]
    pub(crate) notify_timeout: Duration,
    /// What the project's work may spend in a UTC day: once reached, new dispatches wait.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) budget: Option<DailyBudget>,
    /// Directories of Guild Hall worker packages (each a directory with a `package.json` whose
    /// `guildHall.type` is `worker`), relative to the project root: their workers are named by
    /// identity (`worker: Dalton`) and run through `agent:`'s package.
    pub(crate) guild_hall_packages: Vec<String>,
    /// The agent package Guild Hall workers run through (default `claude-code`).
    pub(crate) agent: Option<String>,
    /// A worker name mapped to any package by name (`{Dalton: claude-code-coder}`), over the
    /// Guild Hall worker of that name.
    pub(crate) worker_aliases: std::collections::BTreeMap<String, String>,
}

/// `budget:` in `.lore/guild-hall.yaml` (the project's) or `config.yaml` (all projects'): what
/// may be spent in a UTC day, by the attempts' recorded usage; once reached, new commissions
/// wait (`blocked`) until the day ends, and running attempts finish.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct DailyBudget {
    /// Dollars a day (as reported, else priced from `prices:`).
    pub(crate) usd_per_day: Option<f64>,
    /// Tokens a day (input, output and cached together).
    pub(crate) tokens_per_day: Option<u64>,
}

impl DailyBudget {
    /// What is wrong with it as written, if anything: an amount that is none.
    fn problem(&self) -> Option<String> {
        if let Some(d) = self.usd_per_day.filter(|d| !(d.is_finite() && *d > 0.0 && *d < 1e9)) {
            return Some(format!("budget.usd_per_day: {d} is not an amount of dollars (write a positive number, like 20.0)"));
        }
        (self.tokens_per_day == Some(0)).then(|| "budget.tokens_per_day: 0 would hold all work back; leave it out for no limit".to_string())
    }
}

/// `workspace:` in `.lore/guild-hall.yaml` (and a package's `worker.yaml`, which adds to it):
/// what a worktree of a real project needs besides its tracked files.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct Workspace {
    /// Ignored files (or directories) of the person's checkout, relative to its root, copied
    /// into every new worktree (`.env`, `config/local.yaml`): they stay ignored, never merged,
    /// never copied back.
    pub(crate) copy: Vec<String>,
    /// Commands (argv) run in the new worktree before the worker, confined like it, their
    /// output in the attempt's log (`[["npm", "ci"]]`); one failing fails the attempt.
    pub(crate) setup: Vec<Vec<String>>,
    /// Commands (argv) run in the worktree, confined like the worker, before it is removed
    /// (`[["docker", "compose", "down"]]`); bounded, their output in the last attempt's log.
    pub(crate) teardown: Vec<Vec<String>>,
    /// Ports each live attempt gets: `GUILD_HALL_PORT` .. `GUILD_HALL_PORT + ports - 1`, unique
    /// among the home's live attempts (all projects).
    pub(crate) ports: u16,
}

impl Workspace {
    /// `self` (the project's) with a package's added: lists after the project's, the larger
    /// number of ports.
    pub(crate) fn with(&self, pkg: &Workspace) -> Workspace {
        let join = |a: &Vec<Vec<String>>, b: &Vec<Vec<String>>| a.iter().chain(b).cloned().collect();
        let mut copy = self.copy.clone();
        copy.extend(pkg.copy.iter().filter(|c| !self.copy.contains(c)).cloned());
        Workspace {
            copy,
            setup: join(&self.setup, &pkg.setup),
            teardown: join(&self.teardown, &pkg.teardown),
            ports: self.ports.max(pkg.ports),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        *self == Workspace::default()
    }

    /// What is wrong in its shape, whatever the checkout holds: an empty command, a `copy:`
    /// entry that is not a plain relative path inside the repository.
    pub(crate) fn shape_problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (key, list) in [("setup", &self.setup), ("teardown", &self.teardown)] {
            for (i, argv) in list.iter().enumerate() {
                if argv.first().is_none_or(|p| p.trim().is_empty()) {
                    out.push(format!("workspace.{key}[{i}]: a command needs its program first (an argv: [\"npm\", \"ci\"])"));
                }
            }
        }
        if self.ports > MAX_PORTS {
            out.push(format!("workspace.ports: {} is more than an attempt may hold (at most {MAX_PORTS})", self.ports));
        }
        for entry in &self.copy {
            if let Some(why) = copy_entry_outside(entry) {
                out.push(format!("workspace.copy: {entry:?} {why}"));
            }
        }
        out
    }
}

/// The most ports one attempt may hold (`workspace.ports`).
pub(crate) const MAX_PORTS: u16 = 100;

/// Why a `copy:` entry names something outside the repository, if it does: absolute, with
/// `..`, or empty.
pub(crate) fn copy_entry_outside(entry: &str) -> Option<&'static str> {
    use std::path::Component;
    let path = Path::new(entry);
    if entry.trim().is_empty() {
        return Some("is empty");
    }
    if path.is_absolute() {
        return Some("lies outside the repository (an absolute path): copy names files of the checkout, relative to its root");
    }
    if path.components().any(|c| !matches!(c, Component::Normal(_) | Component::CurDir)) {
        return Some("lies outside the repository (it climbs with `..`)");
    }
    if path.components().any(|c| c.as_os_str() == ".git") {
        return Some("names git's own files, which are no checkout's");
    }
    None
}

/// `slurm:` in `.lore/guild-hall.yaml`: where batch jobs go (each key left out: the cluster's
/// default).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct SlurmConfig {
    /// `--partition`.
    pub(crate) partition: Option<String>,
    /// `--account`.
    pub(crate) account: Option<String>,
    /// `--qos`.
    pub(crate) qos: Option<String>,
}

impl Default for ProjectConfig {
    fn default() -> Self {
        ProjectConfig {
            name: None,
            commission_cap: 3,
            meeting_cap: 5,
            followups_per_meeting: 3,
            meeting_turn_timeout: Duration::from_secs(30 * 60),
            integration_branch: "claude/main".into(),
            stale_after: Duration::from_secs(180),
            cancel_grace: Duration::from_secs(30),
            dispatch: DispatchMode::Auto,
            default_worker: None,
            timeout: Duration::from_secs(24 * 3600),
            ask_timeout: Duration::from_secs(30 * 60),
            merge_max_file_size: 100 * MIB,
            merge_max_attempt_size: 1024 * MIB,
            base_branch: None,
            follow: None,
            runner: Default::default(),
            slurm: SlurmConfig::default(),
            review: Default::default(),
            checks: Vec::new(),
            max_revisions: 2,
            reviewers: None,
            workspace: Workspace::default(),
            notify: None,
            notify_timeout: NOTIFY_TIMEOUT,
            budget: None,
            guild_hall_packages: Vec::new(),
            agent: None,
            worker_aliases: Default::default(),
        }
    }
}

const MIB: u64 = 1024 * 1024;

/// How long a notify command may run by default.
const NOTIFY_TIMEOUT: Duration = Duration::from_secs(30);

/// What one attempt may bring onto the integration branch, by size (checked from the files'
/// metadata and the objects' headers, before anything is read or hashed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MergeLimits {
    /// `merge_max_file_size`.
    pub(crate) file: u64,
    /// `merge_max_attempt_size`.
    pub(crate) attempt: u64,
}

impl ProjectConfig {
    pub(crate) const PATH: &'static str = ".lore/guild-hall.yaml";

    pub(crate) fn merge_limits(&self) -> MergeLimits {
        MergeLimits { file: self.merge_max_file_size, attempt: self.merge_max_attempt_size }
    }

    /// Load from a project root; a missing file means all defaults.
    pub(crate) fn load(root: &Path) -> Result<ProjectConfig> {
        let path = root.join(Self::PATH);
        let Some(text) = crate::files::read_text_if_exists(&path)? else { return Ok(Self::default()) };
        if text.trim().is_empty() {
            return Ok(Self::default());
        }
        // Every misspelt key at once, each at its place (one a line).
        let shape = crate::artifact::keys::Shape::closed(crate::artifact::keys::fields::<ProjectConfig>());
        let problems = crate::artifact::keys::check_file(&path, &text, &shape);
        if !problems.is_empty() {
            return Err(anyhow!("{}", problems.iter().map(|p| p.to_string()).collect::<Vec<_>>().join("\n")));
        }
        let cfg: ProjectConfig = serde_yaml_ng::from_str(&text).map_err(|e| {
            let (line, col, said) = crate::artifact::locate::yaml_error(&e, &text, 1);
            anyhow!("{}", crate::artifact::Problem::new(&path, line, col, said))
        })?;
        if cfg.commission_cap == 0 {
            return Err(anyhow!("{}: commission_cap must be at least 1", path.display()));
        }
        if cfg.merge_max_file_size == 0 || cfg.merge_max_attempt_size == 0 {
            return Err(anyhow!("{}: merge_max_file_size and merge_max_attempt_size must be more than 0", path.display()));
        }
        if let Some(name) = &cfg.name {
            crate::artifact::ids::validate_id(name).with_context(|| format!("{}: name", path.display()))?;
        }
        for (key, branch) in [("base_branch", &cfg.base_branch), ("follow", &cfg.follow)] {
            // `origin/main` is a remote-tracking branch: sync may follow it.
            if let Some(b) = branch.as_deref().filter(|b| !git2::Reference::is_valid_name(&format!("refs/heads/{b}"))) {
                return Err(anyhow!("{}: {key}: {b:?} is not a branch name", path.display()));
            }
        }
        if let Some(why) = cfg.workspace.shape_problems().into_iter().next() {
            return Err(anyhow!("{}: {why}", path.display()));
        }
        if let Some(why) = cfg.budget.and_then(|b| b.problem()) {
            return Err(anyhow!("{}: {why}", path.display()));
        }
        if let (Some(base), Some(follow)) = (&cfg.base_branch, &cfg.follow) {
            if base != follow {
                return Err(anyhow!(
                    "{}: base_branch ({base}) and follow ({follow}) name different branches; follow names the base branch too, keep one",
                    path.display()
                ));
            }
        }
        Ok(cfg)
    }
}

/// One registered project in `config.yaml`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ProjectEntry {
    pub(crate) name: String,
    pub(crate) path: PathBuf,
}

/// `$GUILD_HALL_HOME/config.yaml`. Unknown keys are kept when we rewrite it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct GlobalConfig {
    pub(crate) max_concurrent_commissions: usize,
    /// Characters of a worker's memory put into its system prompt (most recent first).
    pub(crate) memory_cap: usize,
    /// Total characters of a worker's memory above which its package's `compact` runs.
    pub(crate) memory_compact_threshold: usize,
    /// Size at which a worker's log is rotated (one previous part is kept; older is dropped).
    pub(crate) log_max_bytes: u64,
    /// What to do when the kernel has no Landlock: refuse to start confined workers, or run
    /// them unconfined (with a warning).
    pub without_landlock: WithoutLandlock,
    /// `notify:` for every project whose own `.lore/guild-hall.yaml` names none.
    pub(crate) notify: Option<Vec<String>>,
    #[serde(with = "duration_str")]
    pub(crate) notify_timeout: Duration,
    /// Dollars per million tokens by model (or worker package), for agents that report tokens
    /// only ([`crate::worker::usage`]).
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub(crate) prices: Prices,
    /// What all the home's projects together may spend in a UTC day ([`DailyBudget`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) budget: Option<DailyBudget>,
    /// Directories of Guild Hall worker packages for every project of this home (absolute, or
    /// `~/...`), after the project's own `guild_hall_packages:`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) guild_hall_packages: Vec<String>,
    /// The agent package Guild Hall workers run through, unless the project names one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) agent: Option<String>,
    /// Worker names mapped to packages, under the project's own `worker_aliases:`.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub(crate) worker_aliases: std::collections::BTreeMap<String, String>,
    pub(crate) projects: Vec<ProjectEntry>,
    #[serde(flatten)]
    pub(crate) other: serde_yaml_ng::Mapping,
}

impl Default for GlobalConfig {
    fn default() -> Self {
        GlobalConfig {
            max_concurrent_commissions: 10,
            memory_cap: 8000,
            memory_compact_threshold: 16000,
            log_max_bytes: 16 * 1024 * 1024,
            without_landlock: WithoutLandlock::Refuse,
            notify: None,
            notify_timeout: NOTIFY_TIMEOUT,
            prices: Default::default(),
            budget: None,
            guild_hall_packages: Vec::new(),
            agent: None,
            worker_aliases: Default::default(),
            projects: Vec::new(),
            other: Default::default(),
        }
    }
}

/// The price of a model, in dollars per million tokens (`prices:` in `config.yaml`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct Price {
    pub(crate) input: f64,
    pub(crate) output: f64,
    /// Tokens read from a cache (default: the input price).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) cached: Option<f64>,
}

/// `prices:` in `config.yaml`: by model (as the agent names it) or by worker package name,
/// the model's winning.
pub(crate) type Prices = std::collections::BTreeMap<String, Price>;

/// `without_landlock:` in `config.yaml`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum WithoutLandlock {
    /// A worker that should be confined is not started (its attempt fails saying why).
    #[default]
    Refuse,
    /// It runs unconfined, and guild-hall warns once per process.
    Unconfined,
}

/// The home directory and everything laid out under it.
#[derive(Debug, Clone)]
pub struct Home {
    pub root: PathBuf,
}

impl Home {
    /// `--home`, else `$GUILD_HALL_HOME`, else `~/.guild-hall`. Created if missing.
    pub fn resolve(explicit: Option<&Path>) -> Result<Home> {
        let root = match explicit {
            Some(p) => p.to_path_buf(),
            None => match std::env::var_os("GUILD_HALL_HOME") {
                Some(p) if !p.is_empty() => PathBuf::from(p),
                _ => {
                    let home = std::env::var_os("HOME").ok_or_else(|| anyhow!("neither GUILD_HALL_HOME nor HOME is set"))?;
                    PathBuf::from(home).join(".guild-hall")
                }
            },
        };
        std::fs::create_dir_all(&root).with_context(|| format!("creating home {}", root.display()))?;
        let root = root.canonicalize().with_context(|| format!("resolving home {}", root.display()))?;
        // Worker state, logs and secrets live here: private to its user, always.
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&root).with_context(|| format!("reading {}", root.display()))?.permissions().mode();
        if mode & 0o077 != 0 {
            std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o700))
                .with_context(|| format!("making {} private (chmod 700)", root.display()))?;
        }
        Ok(Home { root })
    }

    pub fn config_path(&self) -> PathBuf {
        self.root.join("config.yaml")
    }

    pub fn load_config(&self) -> Result<GlobalConfig> {
        let path = self.config_path();
        match crate::files::read_text_if_exists(&path)? {
            Some(t) if !t.trim().is_empty() => {
                let cfg: GlobalConfig = serde_yaml_ng::from_str(&t).map_err(|e| anyhow!("{}: {e}", path.display()))?;
                match cfg.budget.and_then(|b| b.problem()) {
                    Some(why) => Err(anyhow!("{}: {why}", path.display())),
                    None => Ok(cfg),
                }
            }
            _ => Ok(GlobalConfig::default()),
        }
    }

    /// Add the project to `config.yaml` unless it is already there. Returns true if added.
    pub(crate) fn register(&self, name: &str, path: &Path) -> Result<bool> {
        self.refuse_a_name_taken(name, path)?;
        let mut cfg = self.load_config()?;
        if cfg.projects.iter().any(|p| p.name == name && p.path == path) {
            return Ok(false);
        }
        cfg.projects.retain(|p| p.name != name);
        cfg.projects.push(ProjectEntry { name: name.to_string(), path: path.to_path_buf() });
        // Only `projects:` changes; a person's comments and other keys stay as they are (the
        // same verified surgical writer as for artifacts, on the file as frontmatter).
        let current = std::fs::read_to_string(self.config_path()).unwrap_or_default();
        let body = if current.is_empty() || current.ends_with('\n') { current } else { format!("{current}\n") };
        let wrapped = format!("---\n{body}---\n");
        let projects = serde_yaml_ng::to_value(&cfg.projects)?;
        let edited = crate::artifact::write::apply(&wrapped, &[crate::artifact::write::Edit::Set("projects".into(), projects)])
            .with_context(|| format!("updating {}", self.config_path().display()))?;
        let text = edited.strip_prefix("---\n").and_then(|t| t.strip_suffix("---\n")).unwrap_or(&edited);
        crate::files::write_atomic(&self.config_path(), text.as_bytes())?;
        Ok(true)
    }

    /// Refuse `name` for the checkout at `path` when another checkout that is still there holds
    /// it in this home: a project's name keys its state, worktrees and worker memory, and it
    /// may come from the repository (`name:` in `.lore/guild-hall.yaml`) — a cloned repository
    /// naming itself like one of the person's projects would share that project's memory and
    /// state. A registered checkout that is gone (moved, deleted) gives its name up.
    pub(crate) fn refuse_a_name_taken(&self, name: &str, path: &Path) -> Result<()> {
        let cfg = self.load_config()?;
        let same = |a: &Path, b: &Path| a == b || a.canonicalize().ok().zip(b.canonicalize().ok()).is_some_and(|(a, b)| a == b);
        if let Some(other) = cfg.projects.iter().find(|p| p.name == name && !same(&p.path, path) && p.path.join(".git").exists()) {
            anyhow::bail!(
                "the project name {name:?} is already taken in {} by {}: a project's name keys its state, worktrees and worker memory; give this checkout another (`name:` in .lore/guild-hall.yaml)",
                self.config_path().display(),
                other.path.display()
            );
        }
        Ok(())
    }

    pub(crate) fn state_root(&self) -> PathBuf {
        self.root.join("state")
    }
    /// The index of live runs: one entry per started run holding a worker slot.
    pub(crate) fn live_runs_dir(&self) -> PathBuf {
        self.root.join("live-runs")
    }
    pub(crate) fn project_state(&self, project: &str) -> PathBuf {
        self.state_root().join(project)
    }
    /// The runtime dirs of a project's commissions, one per id.
    pub(crate) fn commissions_state(&self, project: &str) -> PathBuf {
        self.project_state(project).join("commissions")
    }
    pub(crate) fn commission_state(&self, project: &str, id: &str) -> PathBuf {
        self.commissions_state(project).join(id)
    }
    /// A project's worktrees, each named by its kind's prefix ([`worktree_prefix`]) and id.
    pub(crate) fn worktrees_dir(&self, project: &str) -> PathBuf {
        self.root.join("worktrees").join(project)
    }
    pub(crate) fn worktree(&self, project: &str, id: &str) -> PathBuf {
        self.worktrees_dir(project).join(format!("{}{id}", worktree_prefix::COMMISSION))
    }
    /// The runtime dirs of a project's meetings, one per id.
    pub(crate) fn meetings_state(&self, project: &str) -> PathBuf {
        self.project_state(project).join("meetings")
    }
    pub(crate) fn meeting_state(&self, project: &str, id: &str) -> PathBuf {
        self.meetings_state(project).join(id)
    }
    /// The runtime dirs of a project's plans, one per id.
    pub(crate) fn plans_state(&self, project: &str) -> PathBuf {
        self.project_state(project).join("plans")
    }
    pub(crate) fn plan_state(&self, project: &str, plan: &str) -> PathBuf {
        self.plans_state(project).join(plan)
    }
    /// The runtime dirs of a plan's wave tasks, one per slug.
    pub(crate) fn tasks_state(&self, project: &str, plan: &str) -> PathBuf {
        self.plan_state(project, plan).join("tasks")
    }
    /// A wave task's runtime dir (`slug`: its canonical id with `-` for `:`).
    pub(crate) fn task_state(&self, project: &str, plan: &str, slug: &str) -> PathBuf {
        self.tasks_state(project, plan).join(slug)
    }
    pub(crate) fn task_worktree(&self, project: &str, slug: &str) -> PathBuf {
        self.worktrees_dir(project).join(format!("{}{slug}", worktree_prefix::TASK))
    }
    /// The runtime dir of a plan's `verify` runs.
    pub(crate) fn verify_state(&self, project: &str, plan: &str) -> PathBuf {
        self.plan_state(project, plan).join("verify")
    }
    /// Where a plan's `verify` runs: a worktree at the integration tip.
    pub(crate) fn verify_worktree(&self, project: &str, plan: &str) -> PathBuf {
        self.worktrees_dir(project).join(format!("{}{plan}", worktree_prefix::VERIFY))
    }
    pub fn meeting_worktree(&self, project: &str, id: &str) -> PathBuf {
        self.worktrees_dir(project).join(format!("{}{id}", worktree_prefix::MEETING))
    }
    /// A project's meeting transcripts, `<id>.md` each.
    pub(crate) fn transcripts_dir(&self, project: &str) -> PathBuf {
        self.root.join("meetings").join(project)
    }
    pub(crate) fn transcript(&self, project: &str, id: &str) -> PathBuf {
        self.transcripts_dir(project).join(format!("{id}.md"))
    }
    pub fn workers_dir(&self) -> PathBuf {
        self.root.join("workers")
    }
    /// Every project's worker memory (`memory/<project>/<worker>/`).
    pub(crate) fn memory_dir(&self) -> PathBuf {
        self.root.join("memory")
    }
    /// A project's worker memory, one dir per package: memory belongs to one project and one
    /// package, so a package of a cloned repository named like one of the person's never writes
    /// into that package's prompt in their other projects.
    pub(crate) fn project_memory_dir(&self, project: &str) -> PathBuf {
        self.memory_dir().join(project)
    }
    /// `KEY=VALUE` lines for `pass_env` (must be mode 0600).
    pub(crate) fn secrets_path(&self) -> PathBuf {
        self.root.join("secrets.env")
    }
}

/// A project: a git working tree with `.lore/`, its settings and its stable name.
#[derive(Debug, Clone)]
pub struct Project {
    pub root: PathBuf,
    pub name: String,
    pub config: ProjectConfig,
}

impl Project {
    /// The project at `dir`, or `None` when `dir` is not inside a git repository (what a
    /// command that also works outside one needs); any other error — a bad
    /// `.lore/guild-hall.yaml`, say — is said.
    pub fn open_if_any(dir: &Path) -> Result<Option<Project>> {
        if git2::Repository::discover(dir).is_err() {
            return Ok(None);
        }
        Project::open(dir).map(Some)
    }

    /// Open the project at `dir` (its git top level). Fails clearly outside a git repository.
    pub fn open(dir: &Path) -> Result<Project> {
        let repo = git2::Repository::discover(dir)
            .map_err(|_| anyhow!("{} is not inside a git repository (guild-hall needs one: run `git init`)", dir.display()))?;
        let root = repo
            .workdir()
            .ok_or_else(|| anyhow!("{} is a bare repository; guild-hall needs a working tree", dir.display()))?
            .canonicalize()?;
        let config = ProjectConfig::load(&root)?;
        let name = match &config.name {
            Some(n) => n.clone(),
            None => default_project_name(&root),
        };
        Ok(Project { root, name, config })
    }

    pub fn commissions_dir(&self) -> PathBuf {
        self.root.join(".lore").join("commissions")
    }

    /// `.lore` and those of its dirs guild-hall reads and writes that are symlinks (never
    /// followed: [`crate::artifact::refuse_lore_link`]); `.lore` alone when it is one.
    pub(crate) fn lore_links(&self) -> Vec<PathBuf> {
        let lore = self.root.join(".lore");
        if crate::artifact::is_symlink(&lore) {
            return vec![lore];
        }
        let dirs = [self.commissions_dir(), self.meetings_dir(), self.plans_dir(), lore.join("workers")];
        dirs.into_iter().filter(|d| crate::artifact::is_symlink(d)).collect()
    }

    /// The artifact of commission `id` (`.lore/commissions/<id>.md`); `id` must be validated.
    pub(crate) fn commission_path(&self, id: &str) -> PathBuf {
        self.commissions_dir().join(format!("{id}.md"))
    }

    pub fn plans_dir(&self) -> PathBuf {
        self.root.join(".lore").join("plans")
    }

    /// The artifact of plan `id` (`.lore/plans/<id>.md`); `id` must be validated.
    pub(crate) fn plan_path(&self, id: &str) -> PathBuf {
        self.plans_dir().join(format!("{id}.md"))
    }

    pub fn meetings_dir(&self) -> PathBuf {
        self.root.join(".lore").join("meetings")
    }

    /// The artifact of meeting `id` (`.lore/meetings/<id>.md`); `id` must be validated.
    pub(crate) fn meeting_path(&self, id: &str) -> PathBuf {
        self.meetings_dir().join(format!("{id}.md"))
    }
}

/// How each kind's worktree under [`Home::worktrees_dir`] begins; the id follows.
pub(crate) mod worktree_prefix {
    pub(crate) const COMMISSION: &str = "commission-";
    pub(crate) const MEETING: &str = "meeting-";
    pub(crate) const TASK: &str = "task-";
    pub(crate) const VERIFY: &str = "verify-";
    pub(crate) const ALL: [&str; 4] = [COMMISSION, MEETING, TASK, VERIFY];
}

/// Directory name plus a short hash of the absolute path: stable and filename-safe.
pub fn default_project_name(root: &Path) -> String {
    let base = root.file_name().and_then(|n| n.to_str()).map(crate::artifact::ids::ascii_slug).unwrap_or_default();
    let hash = git2::Oid::hash_object(git2::ObjectType::Blob, root.to_string_lossy().as_bytes())
        .map(|o| o.to_string()[..8].to_string())
        .unwrap_or_else(|_| "00000000".into());
    format!("{base}-{hash}")
}

/// Optional durations as humantime strings.
pub(crate) mod opt_duration_str {
    use serde::{Deserializer, Serializer};
    use std::time::Duration;

    pub(crate) fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_str(&humantime::format_duration(*d).to_string()),
            None => s.serialize_none(),
        }
    }
    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        d.deserialize_option(super::duration_str::Humantime)
    }
}

/// A size for people: `512 B`, `1.5 KiB`, `100.0 MiB`, `4.0 GiB` (and the exact bytes when
/// not a whole number of the unit's tenths, so two sizes never read the same by rounding).
pub(crate) fn human_size(bytes: u64) -> String {
    const UNITS: [(&str, u64); 3] = [("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
    for (unit, n) in UNITS {
        if bytes >= n {
            let tenths = bytes * 10 / n;
            let approx = format!("{}.{} {unit}", tenths / 10, tenths % 10);
            return if tenths * n == bytes * 10 { approx } else { format!("{approx}, {bytes} bytes") };
        }
    }
    format!("{bytes} B")
}

/// Why a size could not be read (`text`: as it was written).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum SizeError {
    #[error("bad size {text:?}: expected a number of bytes, or e.g. `100MiB`")]
    NoNumber { text: String },
    #[error("bad size {text:?}: unknown unit {unit:?} (use bytes, KiB, MiB, GiB, or KB, MB, GB)")]
    UnknownUnit { text: String, unit: String },
    #[error("bad size {text:?}: expected a number of bytes or e.g. `100MiB`")]
    NotANumber { text: String },
    #[error("bad size {text:?}")]
    OutOfRange { text: String },
}

/// Parse a size: a number of bytes, or a number with a unit (`KiB`, `MiB`, `GiB`, `TiB`;
/// `KB`, `MB`, `GB`, `TB` are decimal; `B`), spaces and case aside.
pub(crate) fn parse_size(text: &str) -> std::result::Result<u64, SizeError> {
    let t = text.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = (t[..split].trim(), t[split..].trim().to_ascii_lowercase());
    if num.is_empty() {
        return Err(SizeError::NoNumber { text: text.to_string() });
    }
    let factor: u64 = match unit.as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        "t" | "tib" => 1 << 40,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        _ => return Err(SizeError::UnknownUnit { text: text.to_string(), unit }),
    };
    let value: f64 = num.parse().map_err(|_| SizeError::NotANumber { text: text.to_string() })?;
    let bytes = value * factor as f64;
    if !bytes.is_finite() || bytes < 0.0 || bytes > u64::MAX as f64 {
        return Err(SizeError::OutOfRange { text: text.to_string() });
    }
    Ok(bytes.round() as u64)
}

/// Sizes as a number of bytes or a string with a unit (`100MiB`, `1 GiB`).
mod byte_size {
    use serde::de::{self, Deserializer, Visitor};
    use serde::Serializer;

    pub(crate) fn serialize<S: Serializer>(n: &u64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(*n)
    }
    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        d.deserialize_any(Size)
    }

    /// Read by a visitor so that a bad value is said at its own position in the file.
    struct Size;

    impl Visitor<'_> for Size {
        type Value = u64;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a size: a number of bytes, or e.g. `100MiB`")
        }
        fn visit_u64<E: de::Error>(self, n: u64) -> Result<u64, E> {
            Ok(n)
        }
        fn visit_str<E: de::Error>(self, t: &str) -> Result<u64, E> {
            super::parse_size(t).map_err(E::custom)
        }
    }
}

/// Durations as humantime strings (`90s`, `5m`).
mod duration_str {
    use serde::de::{self, Deserializer, Visitor};
    use serde::Serializer;
    use std::time::Duration;

    pub(crate) fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&humantime::format_duration(*d).to_string())
    }
    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        d.deserialize_str(Humantime)?.ok_or_else(|| de::Error::custom("expected a duration such as 90s or 5m"))
    }

    /// Read by a visitor so that a bad value is said at its own position in the file.
    pub(super) struct Humantime;

    impl<'de> Visitor<'de> for Humantime {
        type Value = Option<Duration>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a duration such as 90s or 5m")
        }
        fn visit_str<E: de::Error>(self, s: &str) -> Result<Option<Duration>, E> {
            // The key is said in front by the reader that knows it (`timeout: …`).
            humantime::parse_duration(s)
                .map(Some)
                .map_err(|_| E::custom(crate::artifact::frontmatter::not_a_duration("", &format!("{s:?}")).trim_start().to_string()))
        }
        fn visit_none<E: de::Error>(self) -> Result<Option<Duration>, E> {
            Ok(None)
        }
        fn visit_unit<E: de::Error>(self) -> Result<Option<Duration>, E> {
            Ok(None)
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Option<Duration>, D::Error> {
            d.deserialize_str(self)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_and_said() {
        assert_eq!(parse_size("100MiB"), Ok(100 << 20));
        assert_eq!(parse_size(" 1 GiB "), Ok(1 << 30));
        assert_eq!(parse_size("1.5k"), Ok(1536));
        assert_eq!(parse_size("2MB"), Ok(2_000_000));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert!(parse_size("ten").is_err() && parse_size("5 parsecs").is_err() && parse_size("-1").is_err());
        assert_eq!(human_size(4 << 30), "4.0 GiB");
        assert_eq!(human_size(100 << 20), "100.0 MiB");
        assert_eq!(human_size(512), "512 B");
        assert_eq!(human_size((1 << 20) + 1), "1.0 MiB, 1048577 bytes");
    }

    #[test]
    fn followups_per_meeting_in_the_project_settings() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join(".lore")).expect("mkdir");
        assert_eq!(ProjectConfig::load(dir.path()).expect("defaults").followups_per_meeting, 3);
        std::fs::write(dir.path().join(ProjectConfig::PATH), "followups_per_meeting: 0\n").expect("write");
        assert_eq!(ProjectConfig::load(dir.path()).expect("loads").followups_per_meeting, 0);
    }

    #[test]
    fn merge_limits_in_the_project_settings() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join(".lore")).expect("mkdir");
        assert_eq!(ProjectConfig::load(dir.path()).expect("defaults").merge_limits(), MergeLimits { file: 100 << 20, attempt: 1 << 30 });
        std::fs::write(dir.path().join(ProjectConfig::PATH), "merge_max_file_size: 1MiB\nmerge_max_attempt_size: 3000000\n")
            .expect("write");
        assert_eq!(ProjectConfig::load(dir.path()).expect("loads").merge_limits(), MergeLimits { file: 1 << 20, attempt: 3_000_000 });
        std::fs::write(dir.path().join(ProjectConfig::PATH), "merge_max_file_size: lots\n").expect("write");
        let e = format!("{:#}", ProjectConfig::load(dir.path()).expect_err("refused"));
        assert!(e.contains("guild-hall.yaml:1:") && e.contains("bad size \"lots\""), "{e}");
    }

    #[test]
    fn base_branch_and_follow_in_the_project_settings() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join(".lore")).expect("mkdir");
        let load = |yaml: &str| {
            std::fs::write(dir.path().join(ProjectConfig::PATH), yaml).expect("write");
            ProjectConfig::load(dir.path()).map_err(|e| format!("{e:#}"))
        };
        let cfg = load("follow: origin/main\n").expect("loads");
        assert_eq!((cfg.follow.as_deref(), cfg.base_branch), (Some("origin/main"), None));
        assert_eq!(load("base_branch: trunk\nfollow: trunk\n").expect("the same branch twice").base_branch.as_deref(), Some("trunk"));
        let e = load("base_branch: trunk\nfollow: main\n").expect_err("two bases");
        assert!(e.contains("base_branch (trunk) and follow (main) name different branches"), "{e}");
        let e = load("follow: \"no..such\"\n").expect_err("not a branch name");
        assert!(e.contains("follow: \"no..such\" is not a branch name"), "{e}");
        // A daily budget: an amount that is none, a misspelt key.
        let e = load("budget: {usd_per_day: -3}\n").expect_err("no amount");
        assert!(
            e.to_string()
                .ends_with("guild-hall.yaml: budget.usd_per_day: -3 is not an amount of dollars (write a positive number, like 20.0)"),
            "{e}"
        );
        let e = load("budget: {usd_per_dya: 3}\n").expect_err("unknown key");
        assert!(e.to_string().contains("usd_per_dya"), "{e}");
        assert_eq!(
            load("budget: {tokens_per_day: 5000}\n").expect("valid").budget,
            Some(DailyBudget { usd_per_day: None, tokens_per_day: Some(5000) })
        );
        // A misspelt key: at the key, counted in the file, with the key meant.
        let e = load("# settings\ncommission_cap: 2\ncancel_grac: 5s\n").expect_err("unknown key");
        assert!(e.ends_with("guild-hall.yaml:3:1: unknown key `cancel_grac`: did you mean `cancel_grace`?"), "{e}");
    }
}
