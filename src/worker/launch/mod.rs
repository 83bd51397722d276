//! The one launch site of every kind (a commission attempt, a meeting turn, a wave task, a
//! plan's verify): what runs, its environment, what it may write and read (Landlock policy), its
//! private git object store and bounds — read (`gather`), decided without touching the disk
//! (`plan`), made real (`materialise`) — then started under the shim where its runner places
//! it, or refused, its `exit.json` saying why.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};

use crate::activity::names::ActivityKind;
use crate::activity::state::StateDir;
use crate::activity::worktree::WorktreeRecord;
use crate::artifact::commission::Resources;
use crate::config::{GlobalConfig, Home, Project, WithoutLandlock};
use crate::worker::runner::{Placement, Request, RunnerName};
use crate::worker::sandbox::{Policy, Support};
use crate::worker::shim::Spec;
use crate::worker::{Package, SandboxSpec};

/// A worker's turns when neither its activity nor its package bounds them.
pub(crate) const DEFAULT_MAX_TURNS: u64 = 150;
/// A worker's budget (USD) when neither its activity nor its package bounds it.
pub(crate) const DEFAULT_MAX_BUDGET_USD: f64 = 2.0;

/// Who is to run, for what, and where.
pub(crate) struct Activation<'a> {
    pub(crate) home: &'a Home,
    pub(crate) project: &'a Project,
    pub(crate) pkg: &'a Package,
    pub(crate) kind: ActivityKind,
    /// The commission's or meeting's id, or the wave task's slug ([`id_vars`]).
    pub(crate) id: &'a str,
    pub(crate) state: &'a StateDir,
    pub(crate) worktree: &'a WorktreeRecord,
    /// The attempt (commissions) or turn (meetings): names the log and the mailbox entries.
    pub(crate) attempt: u32,
    /// The toolbox section of the system prompt (from the catalogue, for this kind).
    pub(crate) toolbox: String,
    /// Appended to the system prompt after the toolbox (a meeting's agenda, a renewed
    /// session's summary of the conversation so far).
    pub(crate) prompt_extra: String,
    /// The worker's command line.
    pub(crate) argv: Vec<String>,
    /// The kind's own variables (design §7, §8, §9), set over the common ones.
    pub(crate) env: Vec<(String, String)>,
    /// Files of the home it reads besides its own (a meeting's message and transcript, a
    /// task's snapshot of the control plane).
    pub(crate) readable: Vec<PathBuf>,
    /// The activity's own bounds (a commission's `resources:`), over its package's, over
    /// [`DEFAULT_MAX_TURNS`] and [`DEFAULT_MAX_BUDGET_USD`].
    pub(crate) resources: Resources,
    /// At most this long between SIGTERM and SIGKILL (the project's `cancel_grace` otherwise).
    pub(crate) grace_cap: Option<Duration>,
    /// The activity's own `runner:` (a commission's), over its package's and the project's.
    pub(crate) runner: Option<RunnerName>,
    /// The activity's own wall-clock limit, over its package's and the project's (a batch
    /// job's `--time` is set from it).
    pub(crate) timeout: Option<Duration>,
    /// The activity's own `checks:` (a commission's), run after the project's and its
    /// package's once its worker submits; none for the other kinds.
    pub(crate) checks: Vec<Vec<String>>,
    /// Whether it reads and writes its package's memory in the project. A reviewer does not:
    /// the work it judges could have written there ("approve this"), and what it wrote would
    /// reach the next worker; it gets [`StateDir::private_memory`] instead.
    pub(crate) shares_memory: bool,
}

/// The variables naming the activity, the same for every kind so that one package serves
/// them all (design §7): `GUILD_HALL_ID` (a commission's or meeting's id, a wave task's slug —
/// file-name safe, unlike the task's canonical id in `GUILD_HALL_TASK_ID`), `GUILD_HALL_KIND`
/// (`commission`, `meeting`, `task`), and the kind's own (`GUILD_HALL_COMMISSION`,
/// `GUILD_HALL_MEETING`, `GUILD_HALL_TASK`), which says the kind to `guild-hall toolbox`.
pub(crate) fn id_vars(kind: ActivityKind, id: &str) -> [(String, String); 3] {
    let (own, name) = match kind {
        ActivityKind::Commission => ("GUILD_HALL_COMMISSION", "commission"),
        ActivityKind::Meeting => ("GUILD_HALL_MEETING", "meeting"),
        ActivityKind::Task => ("GUILD_HALL_TASK", "task"),
    };
    [("GUILD_HALL_ID".into(), id.into()), ("GUILD_HALL_KIND".into(), name.into()), (own.into(), id.into())]
}

/// A person's command run like a worker (a plan's `verify`): as they would run it — their
/// environment less git's and guild-hall's, unconfined — contained under the shim, its output
/// kept.
pub(crate) struct Command<'a> {
    pub(crate) home: &'a Home,
    pub(crate) project: &'a Project,
    pub(crate) state: &'a StateDir,
    pub(crate) attempt: u32,
    pub(crate) cwd: PathBuf,
    pub(crate) argv: Vec<String>,
    /// Its own variables, over the person's.
    pub(crate) env: Vec<(String, String)>,
}

/// What is to be launched.
// Made once per launch and consumed at once: its size is never copied about.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Launch<'a> {
    Worker(Activation<'a>),
    Command(Command<'a>),
}

/// A launch made ready: started with [`Ready::start`] (detached, where its runner places it)
/// or [`Ready::stream`] (here). Its home keeps the index of live runs.
pub(crate) struct Ready(Spec, Placement, Home);

/// What [`prepare`] came to. One is made per dispatch and moved once: its size is no cost.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Prepared {
    Ready(Ready),
    /// The worker cannot start, and why: recorded as the attempt's exit ([`refuse`]).
    Refused(String),
}

impl Ready {
    /// Start the shim detached where its runner places it: here, once it has recorded the
    /// start (or why it failed); elsewhere, once its runner has taken it (or refused).
    /// Its entry in the home's index of live runs is written first, and held until the start
    /// has returned ([`crate::worker::live`]): a run that cannot be indexed is not started.
    pub(crate) fn start(&self) -> Result<()> {
        let _entry = crate::worker::live::register(&self.2, &self.0.state, self.0.attempt)?;
        crate::worker::runner::start(&self.0, &self.1)
    }

    /// Start the shim with the worker's stdout piped to the caller (a meeting turn).
    pub(crate) fn stream(&self) -> Result<std::process::Child> {
        crate::worker::shim::spawn_streaming_shim(&self.0)
    }

    /// The attempt it starts (its state dir and number).
    pub(crate) fn state(&self) -> (&StateDir, u32) {
        (&self.0.state, self.0.attempt)
    }

    /// The launch made a reviewer's: its worktree, the worktree's admin dir and its object
    /// store readable only (it can change no file of the work, nor commit), no workspace setup
    /// and no checks. `None`: it would run unconfined, where nothing keeps it read-only.
    pub(crate) fn read_only(mut self, worktree: &WorktreeRecord) -> Option<Ready> {
        let policy = self.0.sandbox.as_mut()?;
        let kept = [worktree.path.clone(), worktree.admin.clone(), self.0.state.objects()];
        policy.writable.retain(|w| !kept.contains(w));
        policy.readable.extend(kept);
        self.0.setup.clear();
        self.0.checks.clear();
        Some(self)
    }
}

/// Record `attempt` in `state` as one that could not start, and why: the exit a worker that
/// never ran leaves, judged by the next pass like any other.
pub(crate) fn refuse(state: &StateDir, attempt: u32, why: &str) -> Result<()> {
    crate::worker::runner::refuse(state, attempt, why)
}

/// Make `launch` ready to start: for a worker, writes its system prompt, makes its private
/// object store and mailbox, and sets its environment and policy. A worker that cannot start
/// is [`refuse`]d here, its `exit.json` written.
pub(crate) fn prepare(launch: Launch<'_>) -> Result<Prepared> {
    match launch {
        Launch::Worker(a) => match prepare_worker(&a) {
            Ok(spec) => Ok(Prepared::Ready(Ready(spec, placement(&a), a.home.clone()))),
            Err(LaunchError::Refused(refusal)) => {
                let why = refusal.to_string();
                refuse(a.state, a.attempt, &why)?;
                Ok(Prepared::Refused(why))
            }
            Err(LaunchError::Fault(e)) => Err(e),
        },
        Launch::Command(c) => {
            let global = c.home.load_config()?;
            // A person's command (a plan's verify) runs in a worktree made like a worker's.
            let ws = &c.project.config.workspace;
            // Never refused (it runs unconfined, as its person would): a `copy:` entry that is
            // not an ignored file stops it here, saying so, as `check` does.
            if let Some(refused) = crate::worker::workspace::copy_problems(&c.project.root, ws).into_iter().next() {
                return Err(refused.into());
            }
            crate::worker::workspace::copy_into(&c.project.root, &c.cwd, ws)?;
            let as_run = crate::worker::workspace::AsRun {
                attempt: c.attempt,
                worktree: c.cwd.clone(),
                env: c.env.iter().cloned().collect(),
                confined: false,
                person: true,
                grace: c.project.config.cancel_grace,
                teardown: ws.teardown.clone(),
            };
            crate::worker::workspace::record_as_run(c.state, &as_run)?;
            let mut env: BTreeMap<String, String> =
                std::env::vars().filter(|(k, _)| !k.starts_with("GIT_") && !k.starts_with("GUILD_HALL_")).collect();
            env.extend(c.env);
            Ok(Prepared::Ready(Ready(
                Spec {
                    state: c.state.clone(),
                    attempt: c.attempt,
                    cwd: c.cwd,
                    argv: c.argv,
                    env,
                    grace: c.project.config.cancel_grace,
                    log_max_bytes: global.log_max_bytes,
                    sandbox: None,
                    setup: ws.setup.clone(),
                    checks: Vec::new(),
                    budget: None,
                },
                Placement::here(Request { project: c.project.name.clone(), grace: c.project.config.cancel_grace, ..Request::default() }),
                c.home.clone(),
            )))
        }
    }
}

/// Where a worker's attempts run: its runner ([`crate::worker::runner::choose`]) and what its
/// attempt asks of it (the activity's resources over its package's; its wall-clock limit).
fn placement(a: &Activation<'_>) -> Placement {
    let cfg = &a.project.config;
    let bounds = &a.pkg.manifest.resources;
    let limit = a.timeout.or(a.pkg.manifest.timeout).unwrap_or(cfg.timeout);
    Placement {
        runner: crate::worker::runner::of(crate::worker::runner::choose(a.runner, a.pkg.manifest.runner, cfg.runner), cfg),
        request: Request {
            project: a.project.name.clone(),
            id: a.id.to_string(),
            cpus: a.resources.cpus.or(bounds.cpus),
            memory: a.resources.memory.clone().or_else(|| bounds.memory.clone()),
            limit: (!limit.is_zero()).then_some(limit),
            grace: cfg.cancel_grace,
        },
    }
}

/// How a package's worker will run here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Confinement {
    Confined,
    Unconfined,
}

/// Confined unless the package says `sandbox: off`; on a kernel without Landlock, unconfined
/// only if config allows it (`without_landlock: unconfined`), else the reason it cannot run.
pub fn confinement(spec: &SandboxSpec, global: &GlobalConfig) -> Result<Confinement, LandlockUnavailable> {
    if *spec == SandboxSpec::Off {
        return Ok(Confinement::Unconfined);
    }
    match crate::worker::sandbox::support() {
        Support::Available { .. } => Ok(Confinement::Confined),
        Support::Unavailable { why } if global.without_landlock == WithoutLandlock::Unconfined => {
            static WARNED: std::sync::Once = std::sync::Once::new();
            WARNED.call_once(|| {
                tracing::warn!(
                    "Landlock is not available ({why}): workers run UNCONFINED, as config.yaml allows (without_landlock: unconfined)"
                );
            });
            Ok(Confinement::Unconfined)
        }
        Support::Unavailable { why } => {
            static WARNED: std::sync::Once = std::sync::Once::new();
            WARNED.call_once(|| {
                tracing::warn!(
                    "Landlock is not available ({why}): workers that must run confined are NOT started (see `guild-hall workers`)"
                );
            });
            Err(LandlockUnavailable { why })
        }
    }
}

/// A worker that must run confined, on a kernel without Landlock ([`confinement`]).
#[derive(Debug, thiserror::Error)]
#[error(
    "the worker must run confined, but Landlock is not available ({why}); to run it unconfined anyway, set `sandbox: off` in its worker.yaml or `without_landlock: unconfined` in $GUILD_HALL_HOME/config.yaml"
)]
pub struct LandlockUnavailable {
    /// What the kernel said.
    pub(crate) why: String,
}

/// Why a worker's launch did not give it a spec: it cannot start (a refusal, written to its
/// `exit.json` and judged like any exit), or something failed that is not the worker's (a fault).
#[derive(Debug, thiserror::Error)]
enum LaunchError {
    #[error(transparent)]
    Refused(Refusal),
    #[error(transparent)]
    Fault(#[from] anyhow::Error),
}

/// What the worker's package asks for that cannot be had, so the worker cannot start.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Refusal {
    /// Its `posture:` file cannot be read as its own.
    #[error(transparent)]
    Posture(crate::worker::package::PostureError),
    /// Its `pass_env` names no variable, or the secrets file cannot be read.
    #[error(transparent)]
    PassEnv(crate::worker::package::PassEnvError),
    #[error(transparent)]
    Landlock(#[from] LandlockUnavailable),
    /// Its `sandbox.read` names something in the home, which no worker reads.
    #[error("sandbox.read {} lies in $GUILD_HALL_HOME ({}), which no worker reads", .inside.display(), .home.display())]
    ReadsHome { inside: PathBuf, home: PathBuf },
    /// A `workspace.copy` entry that is not an ignored file of the person's checkout.
    #[error(transparent)]
    Copy(crate::worker::workspace::CopyRefused),
    /// `workspace.ports` cannot be had (why).
    #[error("workspace.ports: {0}")]
    Ports(String),
}

impl From<std::io::Error> for LaunchError {
    fn from(e: std::io::Error) -> Self {
        LaunchError::Fault(e.into())
    }
}

impl From<Refusal> for LaunchError {
    fn from(r: Refusal) -> Self {
        LaunchError::Refused(r)
    }
}

/// What a dispatch says of memory the package stored before memory was kept per project
/// (`memory/<worker>/<key>.md`): no longer read, never removed, and where to move it to keep it
/// for this project (which project it was for cannot be told, so guild-hall does not move it).
fn unread_old_memory(home: &Home, project_memory: &Path, worker: &str) -> Option<String> {
    let old = home.memory_dir().join(worker);
    let has_memories = std::fs::read_dir(&old).ok()?.filter_map(|e| e.ok()).any(|e| {
        e.file_type().is_ok_and(|t| t.is_file()) && e.file_name().to_str().is_some_and(|n| n.ends_with(".md") && !n.starts_with('.'))
    });
    let new = crate::worker::memory::dir(project_memory, worker).ok()?;
    has_memories.then(|| {
        format!(
            "memory: {} holds memory from before memory was kept per project and package; it is no longer read (nor removed): to keep it for this project, move its files into {}",
            old.display(),
            new.display()
        )
    })
}

/// What the disk and the machine say for a worker's launch, read before anything is planned
/// (`gather`).
struct Facts {
    global: GlobalConfig,
    posture: Option<String>,
    /// Its package's `pass_env`, as found.
    passed: BTreeMap<String, String>,
    memories: Vec<crate::worker::memory::Memory>,
    confinement: Confinement,
    /// Its memory dir for this project.
    own_memory: PathBuf,
    /// The guild-hall binary (the worker's `GUILD_HALL_BIN`, its ACP client).
    exe: PathBuf,
    /// Its package's `sandbox.write` entries (as written, expanded), and whether each exists.
    write_entries: Vec<(String, PathBuf, bool)>,
    /// Its package's `sandbox.read`, expanded.
    read: Vec<PathBuf>,
    /// The repository's object stores the worker's own store borrows from.
    alternates: String,
    /// The project's `workspace:` with its package's added.
    workspace: crate::config::Workspace,
    /// Its ports, when the workspace asks for some.
    ports: Option<crate::worker::ports::Allocation>,
    /// The worktree's setup has run (a meeting's runs once, at open).
    setup_done: bool,
}

/// What a worker's attempt is to be, decided from [`Facts`] without touching the disk
/// (`plan`); made real by [`materialise`].
struct Plan {
    spec: Spec,
    /// Its system prompt (`state.system_prompt()`).
    prompt: String,
    /// Directories its attempt needs: made if missing.
    dirs: Vec<PathBuf>,
    /// `sandbox.write` entries to make (private) before they can be allowed: (as written, path).
    private_dirs: Vec<(String, PathBuf)>,
    /// Its object store's `info/alternates`.
    alternates: String,
    /// Its mailbox, made empty if missing.
    mailbox: PathBuf,
}

/// The worker's shim spec, its state dir and files made; [`LaunchError::Refused`]: the worker
/// cannot start, and why (an activation failure).
fn prepare_worker(a: &Activation<'_>) -> Result<Spec, LaunchError> {
    std::fs::create_dir_all(&a.state.0).with_context(|| format!("creating {}", a.state.0.display()))?;
    let facts = gather(a)?;
    let planned = plan(a, &facts)?;
    Ok(materialise(a, &facts, planned)?)
}

/// Read what the launch of `a` depends on. What the package asks for that cannot be had (a
/// `pass_env` variable, a memory) is said in the attempt's log; [`LaunchError::Refused`]: the
/// worker cannot start.
fn gather(a: &Activation<'_>) -> Result<Facts, LaunchError> {
    let (pkg, state) = (a.pkg, a.state);
    let global = a.home.load_config()?;
    let memory_dir = a.home.project_memory_dir(&a.project.name);
    let posture = pkg.posture().map_err(Refusal::Posture)?;
    let (passed, missing) = crate::worker::pass_env(&pkg.manifest.pass_env, &a.home.secrets_path()).map_err(Refusal::PassEnv)?;
    if !missing.is_empty() {
        use std::io::Write;
        let mut log = std::fs::OpenOptions::new().create(true).append(true).open(state.log(a.attempt))?;
        writeln!(
            log,
            "[guild-hall] pass_env: {} set neither in guild-hall's environment nor in {}; not passed",
            missing.join(", "),
            a.home.secrets_path().display()
        )?;
    }
    let (loaded, own_memory) = if a.shares_memory {
        (crate::worker::memory::load_checked(&memory_dir, &pkg.memory_key())?, crate::worker::memory::dir(&memory_dir, &pkg.memory_key())?)
    } else {
        (crate::worker::memory::Loaded::default(), state.private_memory())
    };
    let mut notes = loaded.skipped.iter().map(|s| format!("memory: {s}")).collect::<Vec<_>>();
    if a.shares_memory {
        notes.extend(unread_old_memory(a.home, &memory_dir, &pkg.memory_key()));
    }
    if !notes.is_empty() {
        use std::io::Write;
        let mut log = std::fs::OpenOptions::new().create(true).append(true).open(state.log(a.attempt))?;
        for note in &notes {
            tracing::warn!(worker = %pkg.manifest.name, "{note}");
            writeln!(log, "[guild-hall] {note}")?;
        }
    }
    let confinement = confinement(&pkg.manifest.sandbox, &global).map_err(Refusal::from)?;
    let (write_entries, read) = match confinement {
        Confinement::Confined => {
            let write = pkg.sandbox_write_entries().map_err(anyhow::Error::msg)?;
            let write = write.into_iter().map(|(entry, path)| (entry, path.clone(), std::fs::symlink_metadata(&path).is_ok())).collect();
            (write, pkg.sandbox_read().map_err(anyhow::Error::msg)?)
        }
        Confinement::Unconfined => (Vec::new(), Vec::new()),
    };
    let workspace = a.project.config.workspace.with(&pkg.manifest.workspace);
    if let Some(refused) = crate::worker::workspace::copy_problems(&a.project.root, &workspace).into_iter().next() {
        return Err(Refusal::Copy(refused).into());
    }
    let ports = match workspace.ports {
        0 => None,
        n => Some(crate::worker::ports::allocate(a.home, state, a.attempt, n).map_err(|e| Refusal::Ports(format!("{e:#}")))?),
    };
    let rec = a.worktree;
    let mut alternates = rec.common.join("objects").to_string_lossy().into_owned();
    if let Ok(more) = std::fs::read_to_string(rec.common.join("objects/info/alternates")) {
        alternates = format!("{alternates}\n{}", more.trim_end());
    }
    Ok(Facts {
        global,
        posture,
        passed,
        memories: loaded.memories,
        confinement,
        own_memory,
        exe: std::env::current_exe()?,
        write_entries,
        read,
        alternates,
        workspace,
        ports,
        setup_done: state.setup_done().exists(),
    })
}

/// What the attempt of `a` is to run, from `f` alone: its argv, environment, sandbox policy,
/// bounds and files. `Err`: the worker cannot start.
fn plan(a: &Activation<'_>, f: &Facts) -> Result<Plan, Refusal> {
    let (pkg, state, rec) = (a.pkg, a.state, a.worktree);
    let mut prompt = crate::worker::memory::system_prompt(f.posture.as_deref(), &f.memories, f.global.memory_cap, &a.toolbox);
    if !a.prompt_extra.is_empty() {
        prompt.push('\n');
        prompt.push_str(a.prompt_extra.trim_end());
        prompt.push('\n');
    }
    // A commission's attempt writes a mailbox of its own; it can reach no other.
    let mailbox = crate::worker::toolbox::mailbox::for_worker(a.kind, state, a.attempt);
    let sandbox = match f.confinement {
        Confinement::Confined => Some(policy(a, f, &mailbox)?),
        Confinement::Unconfined => None,
    };
    let private_dirs =
        f.write_entries.iter().filter(|(_, _, exists)| !exists).map(|(entry, path, _)| (entry.clone(), path.clone())).collect();
    let p = |x: &Path| x.to_string_lossy().into_owned();
    let mut env: BTreeMap<String, String> = pkg.manifest.env.clone();
    env.extend(f.passed.clone());
    env.extend([
        ("GUILD_HALL_PROJECT".to_string(), p(&a.project.root)),
        ("GUILD_HALL_WORKTREE".into(), p(&rec.path)),
        ("GUILD_HALL_SYSTEM_PROMPT_FILE".into(), p(&state.system_prompt())),
        ("GUILD_HALL_MAILBOX".into(), p(&mailbox)),
        ("GUILD_HALL_BIN".into(), p(&f.exe)),
        ("GUILD_HALL_HOME".into(), p(&a.home.root)),
        ("GUILD_HALL_ATTEMPT".into(), a.attempt.to_string()),
        ("GUILD_HALL_WORKER".into(), pkg.manifest.name.clone()),
        ("GUILD_HALL_MEMORY".into(), p(&f.own_memory)),
        ("GIT_OBJECT_DIRECTORY".into(), p(&state.objects())),
        // The worker's git never packs or prunes the shared repository on its own.
        ("GIT_CONFIG_COUNT".into(), "2".into()),
        ("GIT_CONFIG_KEY_0".into(), "gc.auto".into()),
        ("GIT_CONFIG_VALUE_0".into(), "0".into()),
        ("GIT_CONFIG_KEY_1".into(), "maintenance.auto".into()),
        ("GIT_CONFIG_VALUE_1".into(), "false".into()),
    ]);
    env.extend(id_vars(a.kind, a.id));
    if let Some(ports) = &f.ports {
        env.extend([("GUILD_HALL_PORT".to_string(), ports.first.to_string()), ("GUILD_HALL_PORTS".into(), ports.count.to_string())]);
    }
    let bounds = &pkg.manifest.resources;
    let max_turns = a.resources.max_turns.or(bounds.max_turns).unwrap_or(DEFAULT_MAX_TURNS);
    let max_budget = a.resources.max_budget_usd.or(bounds.max_budget_usd).unwrap_or(DEFAULT_MAX_BUDGET_USD);
    env.extend([("GUILD_HALL_MAX_TURNS".to_string(), max_turns.to_string()), ("GUILD_HALL_MAX_BUDGET_USD".into(), max_budget.to_string())]);
    // The activity's model over its package's (`resources.model`, else a Guild Hall worker's
    // `GUILD_HALL_MODEL`, set in its manifest's env by the roster).
    if let Some(model) = a.resources.model.as_ref().or(bounds.model.as_ref()) {
        env.insert("GUILD_HALL_MODEL".into(), model.clone());
    }
    env.extend(a.env.iter().cloned());
    let grace = a.project.config.cancel_grace;
    let argv = match pkg.manifest.protocol {
        // An ACP agent runs under guild-hall's client, which is the worker the shim sees.
        crate::worker::Protocol::Acp => {
            let mut argv = vec![p(&f.exe), "acp".to_string()];
            for tool in &pkg.manifest.acp.allow {
                argv.extend(["--allow".to_string(), tool.clone()]);
            }
            if let Some(dir) = &pkg.manifest.acp.session_dir {
                // Checked when the package was loaded.
                if let Ok(dir) = crate::worker::expand_home("acp.session_dir", dir) {
                    argv.extend(["--session-dir".to_string(), p(&dir)]);
                }
            }
            argv.push("--".into());
            argv.extend(a.argv.iter().cloned());
            argv
        }
        _ => a.argv.clone(),
    };
    Ok(Plan {
        spec: Spec {
            state: state.clone(),
            attempt: a.attempt,
            cwd: rec.path.clone(),
            argv,
            env,
            grace: a.grace_cap.map_or(grace, |cap| grace.min(cap)),
            log_max_bytes: f.global.log_max_bytes,
            sandbox,
            // A meeting's worktree is set up once, at open (its first turn); a commission's or a
            // task's for each attempt (each is given a fresh worktree, or its own again).
            setup: if a.kind == ActivityKind::Meeting && f.setup_done { Vec::new() } else { f.workspace.setup.clone() },
            checks: checks(a),
            budget: budget(a, f),
        },
        prompt,
        dirs: vec![f.own_memory.clone(), state.objects().join("info")],
        private_dirs,
        alternates: f.alternates.clone(),
        mailbox,
    })
}

/// A commission's checks: the project's, its package's, then its own, in that order.
fn checks(a: &Activation<'_>) -> Vec<Vec<String>> {
    if a.kind != ActivityKind::Commission {
        return Vec::new();
    }
    let project = &a.project.config.checks;
    project.iter().chain(&a.pkg.manifest.checks).chain(&a.checks).cloned().collect()
}

/// A commission's or a wave task's budget ([`crate::worker::budget`]): its own `resources:`,
/// else its package's; none for a meeting's turns (their output streams past the shim to the
/// process running the turn, which holds the turn to its package's budget itself).
fn budget(a: &Activation<'_>, f: &Facts) -> Option<crate::worker::budget::Budget> {
    if !matches!(a.kind, ActivityKind::Commission | ActivityKind::Task) {
        return None;
    }
    crate::worker::budget::Budget::of(&a.resources, &a.pkg.manifest.resources, &a.pkg.manifest.name, &f.global.prices)
}

/// The confined worker's policy: it writes its worktree, its state (objects, mailbox), its
/// memory and its package's `sandbox.write`; of the home it reads only what is its own.
fn policy(a: &Activation<'_>, f: &Facts, mailbox: &Path) -> Result<Policy, Refusal> {
    let (pkg, state, rec) = (a.pkg, a.state, a.worktree);
    let mut writable = vec![rec.path.clone(), rec.admin.clone(), state.objects(), mailbox.to_path_buf(), f.own_memory.clone()];
    let mut written_as = BTreeMap::new();
    for (entry, path, _) in &f.write_entries {
        written_as.insert(path.clone(), entry.clone());
        writable.push(path.clone());
    }
    // The home holds the secrets, the endpoint's token and every other attempt's state,
    // worktree and memory: of it the worker reads only what is its own. The project
    // (its checkout and the git dir its worktree runs on) is not the home's.
    let mut readable =
        vec![a.project.root.clone(), rec.common.clone(), pkg.dir.clone(), f.exe.clone(), state.prompt(), state.system_prompt()];
    readable.extend(a.readable.iter().cloned());
    // The person's credential stores are hidden as the home is, but for those the
    // package's `sandbox.read` names; that never opens the home itself.
    if let Some(inside) = f.read.iter().find(|r| r.starts_with(&a.home.root)) {
        return Err(Refusal::ReadsHome { inside: inside.clone(), home: a.home.root.clone() });
    }
    let mut hidden = vec![a.home.root.clone()];
    hidden.extend(crate::worker::sandbox::credential_stores(&f.read));
    readable.extend(f.read.iter().cloned());
    // Only its worktree and its state dir (its temp dir, objects and mailbox) are the
    // attempt's own: a socket listening anywhere else, a shared `sandbox.write` dir or
    // the memory dir included, is masked.
    let own = vec![rec.path.clone(), state.0.clone()];
    Ok(Policy { writable, readable, hidden, own, written_as, cluster_client: pkg.cluster_client() })
}

/// Make `plan` real for `a`: its system prompt, directories, object store and mailbox written,
/// and its memory's compaction started if it is due.
fn materialise(a: &Activation<'_>, f: &Facts, plan: Plan) -> Result<Spec> {
    let (pkg, state) = (a.pkg, a.state);
    crate::files::write_atomic(&state.system_prompt(), plan.prompt.as_bytes())?;
    // Which package this attempt is, for its `max_concurrent:` (read among the live attempts).
    crate::files::write_atomic(&state.package(), pkg.manifest.name.as_bytes())?;
    let memory_dir = a.home.project_memory_dir(&a.project.name);
    let confined = f.confinement == Confinement::Confined;
    if !a.shares_memory {
        // Its private memory starts empty whatever an earlier run of it left.
        let _ = std::fs::remove_dir_all(state.private_memory());
    } else if let Err(e) = crate::worker::memory::maybe_compact(&a.home.root, &memory_dir, pkg, f.global.memory_compact_threshold, confined)
    {
        tracing::warn!(worker = %pkg.manifest.name, error = %format!("{e:#}"), "memory compaction not started");
    }
    for (entry, path) in &plan.private_dirs {
        // Asked for by the package: made (private) so that it can be allowed. The error names
        // the entry as written: an expanded variable may be a secret.
        let made =
            std::fs::create_dir_all(path).and_then(|_| std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(0o700)));
        if let Err(e) = made {
            anyhow::bail!("creating sandbox.write {entry:?}: {e}");
        }
    }
    for dir in &plan.dirs {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    // The worker's git writes objects into its own store, reading the repository's through
    // it; guild-hall adopts what its branch needs after checking each object's hash.
    crate::files::write_atomic(&state.objects().join("info/alternates"), format!("{}\n", plan.alternates).as_bytes())?;
    std::fs::OpenOptions::new().create(true).append(true).open(&plan.mailbox)?;
    // The person's ignored files, and how it runs (what its removal is to run first).
    let notes = crate::worker::workspace::copy_into(&a.project.root, &a.worktree.path, &f.workspace)?;
    if !notes.is_empty() {
        use std::io::Write;
        let mut log = std::fs::OpenOptions::new().create(true).append(true).open(state.log(a.attempt))?;
        for note in &notes {
            writeln!(log, "[guild-hall] {note}")?;
        }
    }
    let as_run = crate::worker::workspace::AsRun {
        attempt: a.attempt,
        worktree: a.worktree.path.clone(),
        env: plan.spec.env.clone(),
        confined: plan.spec.sandbox.is_some(),
        person: false,
        grace: plan.spec.grace,
        teardown: f.workspace.teardown.clone(),
    };
    crate::worker::workspace::record_as_run(state, &as_run)?;
    Ok(plan.spec)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::worker::Source;

    /// An activation of a package whose `worker.yaml` is `yaml`, in a home under `dir`, with
    /// the facts a launch would have gathered (confined, nothing of sandbox.write there yet).
    struct Fixture {
        home: Home,
        project: Project,
        pkg: Package,
        state: StateDir,
        worktree: WorktreeRecord,
    }

    fn fixture(dir: &Path, yaml: &str) -> Fixture {
        let home = Home::resolve(Some(&dir.join("home"))).expect("home");
        let project = Project { root: dir.join("project"), name: "p".into(), config: Default::default() };
        let manifest = serde_yaml_ng::from_str(yaml).expect("manifest");
        let pkg = Package { manifest, dir: dir.join("pkg"), source: Source::Home, guild_hall: None, alias_of: None };
        let state = StateDir(home.root.join("state/p/commissions/c"));
        let worktree = WorktreeRecord {
            path: dir.join("wt/c"),
            admin: dir.join("project/.git/worktrees/c"),
            common: dir.join("project/.git"),
            branch: "claude/c".into(),
            sparse: false,
        };
        Fixture { home, project, pkg, state, worktree }
    }

    fn activation(f: &Fixture) -> Activation<'_> {
        Activation {
            home: &f.home,
            project: &f.project,
            pkg: &f.pkg,
            kind: ActivityKind::Commission,
            id: "c",
            state: &f.state,
            worktree: &f.worktree,
            attempt: 2,
            toolbox: "TOOLBOX".into(),
            prompt_extra: String::new(),
            argv: vec!["agent".into(), "--go".into()],
            env: vec![("GUILD_HALL_MAX_TURNS".into(), "7".into())],
            readable: Vec::new(),
            resources: Resources::default(),
            grace_cap: Some(Duration::from_secs(1)),
            runner: None,
            timeout: None,
            checks: Vec::new(),
            shares_memory: true,
        }
    }

    fn facts(f: &Fixture, read: Vec<PathBuf>) -> Facts {
        Facts {
            global: GlobalConfig::default(),
            posture: Some("POSTURE".into()),
            passed: [("TOKEN".to_string(), "t".to_string())].into(),
            memories: Vec::new(),
            confinement: Confinement::Confined,
            own_memory: f.home.root.join("memory/p/w"),
            exe: PathBuf::from("/bin/guild-hall"),
            write_entries: vec![("~/cache".into(), PathBuf::from("/h/cache"), false), ("/tmp/x".into(), PathBuf::from("/tmp/x"), true)],
            read,
            alternates: "/project/.git/objects".into(),
            workspace: Default::default(),
            ports: None,
            setup_done: false,
        }
    }

    #[test]
    fn the_plan_says_what_runs_its_environment_policy_and_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        let f = fixture(dir.path(), "name: w\ncommand: [agent]\nenv: {MINE: m}\n");
        let a = activation(&f);
        let plan = plan(&a, &facts(&f, Vec::new())).expect("planned");
        assert_eq!(plan.spec.argv, ["agent", "--go"]);
        assert_eq!((plan.spec.cwd.clone(), plan.spec.attempt), (f.worktree.path.clone(), 2));
        assert_eq!(plan.spec.grace, Duration::from_secs(1), "capped by the activation");
        let env = &plan.spec.env;
        for (k, v) in
            [("MINE", "m"), ("TOKEN", "t"), ("GUILD_HALL_ID", "c"), ("GUILD_HALL_ATTEMPT", "2"), ("GUILD_HALL_BIN", "/bin/guild-hall")]
        {
            assert_eq!(env.get(k).map(String::as_str), Some(v), "{k}");
        }
        assert_eq!(env.get("GUILD_HALL_MAX_TURNS").map(String::as_str), Some("7"), "the kind's own variables win");
        assert!(plan.prompt.contains("POSTURE") && plan.prompt.contains("TOOLBOX"));
        let policy = plan.spec.sandbox.as_ref().expect("confined");
        assert!(policy.writable.contains(&f.worktree.path) && policy.writable.contains(&PathBuf::from("/h/cache")));
        assert!(policy.hidden.contains(&f.home.root), "the home is hidden");
        assert_eq!(policy.written_as.get(Path::new("/h/cache")).map(String::as_str), Some("~/cache"));
        assert_eq!(plan.private_dirs, vec![("~/cache".to_string(), PathBuf::from("/h/cache"))], "only what is missing is made");
        assert!(plan.dirs.contains(&f.state.objects().join("info")));
        // Nothing was written: planning is pure.
        assert!(!f.state.0.exists());
    }

    #[test]
    fn an_acp_agent_runs_under_guild_halls_client_and_a_home_read_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let f = fixture(dir.path(), "name: w\ncommand: [agent]\nprotocol: acp\nacp: {allow: [Read]}\n");
        let a = activation(&f);
        let plan = plan(&a, &facts(&f, Vec::new())).expect("planned");
        assert_eq!(plan.spec.argv, ["/bin/guild-hall", "acp", "--allow", "Read", "--", "agent", "--go"]);
        let why = plan_refused(&a, &facts(&f, vec![f.home.root.join("secrets")]));
        assert!(why.contains("lies in $GUILD_HALL_HOME"), "{why}");
        let unconfined = Facts { confinement: Confinement::Unconfined, ..facts(&f, vec![f.home.root.join("secrets")]) };
        assert!(plan_refused_or_none(&a, &unconfined).is_none(), "unconfined, no policy to refuse");
    }

    fn plan_refused(a: &Activation<'_>, f: &Facts) -> String {
        plan_refused_or_none(a, f).expect("refused")
    }

    fn plan_refused_or_none(a: &Activation<'_>, f: &Facts) -> Option<String> {
        plan(a, f).err().map(|r| r.to_string())
    }

    /// Every kind sets the common id and kind besides its own variable: one package serves all.
    #[test]
    fn every_kind_sets_the_common_id() {
        for (kind, own, name) in [
            (ActivityKind::Commission, "GUILD_HALL_COMMISSION", "commission"),
            (ActivityKind::Meeting, "GUILD_HALL_MEETING", "meeting"),
            (ActivityKind::Task, "GUILD_HALL_TASK", "task"),
        ] {
            let vars: BTreeMap<String, String> = id_vars(kind, "the-id").into_iter().collect();
            assert_eq!(vars.get("GUILD_HALL_ID").map(String::as_str), Some("the-id"), "{kind:?}");
            assert_eq!(vars.get(own).map(String::as_str), Some("the-id"), "{kind:?}");
            assert_eq!(vars.get("GUILD_HALL_KIND").map(String::as_str), Some(name), "{kind:?}");
        }
    }
}
