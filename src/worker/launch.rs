//! Getting a worker process ready to start, for any activity (a commission attempt, a meeting
//! turn): its system prompt (posture, memory, toolbox), its environment (DESIGN §7), what it
//! may write and read (Landlock policy) and its private git object store. One implementation
//! for all.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result};

use crate::activity::state::StateDir;
use crate::activity::worktree::WorktreeRecord;
use crate::config::{GlobalConfig, Home, Project, WithoutLandlock};
use crate::worker::sandbox::{Policy, Support};
use crate::worker::shim::Launch;
use crate::worker::toolbox::ActivityKind;
use crate::worker::{Package, SandboxSpec};

/// Who is to run, for what, and where.
pub struct Activation<'a> {
    pub home: &'a Home,
    pub project: &'a Project,
    pub pkg: &'a Package,
    pub kind: ActivityKind,
    /// The commission's or meeting's id.
    pub id: &'a str,
    pub state: &'a StateDir,
    pub worktree: &'a WorktreeRecord,
    /// The attempt (commissions) or turn (meetings): names the log and the mailbox entries.
    pub attempt: u32,
    /// The toolbox section of the system prompt (from the catalogue, for this kind).
    pub toolbox: String,
    /// Appended to the system prompt after the toolbox (a meeting's agenda, a renewed
    /// session's summary of the conversation so far).
    pub prompt_extra: String,
}

/// How a package's worker will run here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Confinement {
    Confined,
    Unconfined,
}

/// Confined unless the package says `sandbox: off`; on a kernel without Landlock, unconfined
/// only if config allows it (`without_landlock: unconfined`), else the reason it cannot run.
pub fn confinement(spec: &SandboxSpec, global: &GlobalConfig) -> Result<Confinement, String> {
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
            Err(format!(
            "the worker must run confined, but Landlock is not available ({why}); to run it unconfined anyway, set `sandbox: off` in its worker.yaml or `without_landlock: unconfined` in $GUILD_HALL_HOME/config.yaml"
            ))
        }
    }
}

/// Prepare `argv` to run for `a`: writes the system prompt, makes the private object store and
/// the mailbox, and returns the launch with every common variable set (the caller adds its
/// activity's own). `Ok(Err(why))`: the worker cannot start, and why (an activation failure).
pub fn prepare(a: &Activation<'_>, argv: Vec<String>) -> Result<Result<Launch, String>> {
    let (pkg, state, rec) = (a.pkg, a.state, a.worktree);
    std::fs::create_dir_all(&state.0).with_context(|| format!("creating {}", state.0.display()))?;
    let global = a.home.load_config()?;
    let memory_dir = a.home.memory_dir();
    let posture = match pkg.posture() {
        Ok(p) => p,
        Err(why) => return Ok(Err(why)),
    };
    let (passed, missing) = match crate::worker::pass_env(&pkg.manifest.pass_env, &a.home.secrets_path()) {
        Ok(v) => v,
        Err(why) => return Ok(Err(why)),
    };
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
    let memories = crate::worker::memory::load(&memory_dir, &pkg.manifest.name)?;
    let mut prompt = crate::worker::memory::system_prompt(posture.as_deref(), &memories, global.memory_cap, &a.toolbox);
    if !a.prompt_extra.is_empty() {
        prompt.push('\n');
        prompt.push_str(a.prompt_extra.trim_end());
        prompt.push('\n');
    }
    std::fs::write(state.system_prompt(), prompt)?;
    let confined = match confinement(&pkg.manifest.sandbox, &global) {
        Ok(c) => c,
        Err(why) => return Ok(Err(why)),
    };
    if let Err(e) =
        crate::worker::memory::maybe_compact(&memory_dir, pkg, global.memory_compact_threshold, confined == Confinement::Confined)
    {
        tracing::warn!(worker = %pkg.manifest.name, error = %format!("{e:#}"), "memory compaction not started");
    }
    let own_memory = crate::worker::memory::dir(&memory_dir, &pkg.manifest.name)?;
    // A commission's attempt writes a mailbox of its own; it can reach no other.
    let mailbox = crate::worker::toolbox::mailbox::for_worker(a.kind, state, a.attempt);
    let sandbox = match confined {
        Confinement::Confined => {
            let mut writable = vec![rec.path.clone(), rec.admin.clone(), state.objects(), mailbox.clone(), own_memory.clone()];
            if let SandboxSpec::Confined { write } = &pkg.manifest.sandbox {
                for w in write {
                    let path = crate::worker::expand_home(w).map_err(anyhow::Error::msg)?;
                    if std::fs::symlink_metadata(&path).is_err() {
                        // Asked for by the package: made (private) so that it can be allowed.
                        std::fs::create_dir_all(&path).with_context(|| format!("creating sandbox.write {}", path.display()))?;
                        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o700))?;
                    }
                    writable.push(path);
                }
            }
            // The home holds the secrets, the endpoint's token and every other attempt's state,
            // worktree and memory: of it the worker reads only what is its own. The project
            // (its checkout and the git dir its worktree runs on) is not the home's.
            let readable = vec![
                a.project.root.clone(),
                rec.common.clone(),
                pkg.dir.clone(),
                std::env::current_exe()?,
                state.prompt(),
                state.system_prompt(),
            ];
            Some(Policy { writable, readable, hidden: vec![a.home.root.clone()] })
        }
        Confinement::Unconfined => None,
    };
    for dir in [own_memory, state.objects().join("info")] {
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    // The worker's git writes objects into its own store, reading the repository's through
    // it; guild-hall adopts what its branch needs after checking each object's hash.
    let mut alternates = rec.common.join("objects").to_string_lossy().into_owned();
    if let Ok(more) = std::fs::read_to_string(rec.common.join("objects/info/alternates")) {
        alternates = format!("{alternates}\n{}", more.trim_end());
    }
    crate::files::write_atomic(&state.objects().join("info/alternates"), format!("{alternates}\n").as_bytes())?;
    std::fs::OpenOptions::new().create(true).append(true).open(&mailbox)?;
    let exe = std::env::current_exe()?;
    let mut env: BTreeMap<String, String> = pkg.manifest.env.clone();
    env.extend(passed);
    let p = |x: &Path| x.to_string_lossy().into_owned();
    env.extend([
        ("GUILD_HALL_PROJECT".to_string(), p(&a.project.root)),
        ("GUILD_HALL_WORKTREE".into(), p(&rec.path)),
        ("GUILD_HALL_SYSTEM_PROMPT_FILE".into(), p(&state.system_prompt())),
        ("GUILD_HALL_MAILBOX".into(), p(&mailbox)),
        ("GUILD_HALL_BIN".into(), p(&exe)),
        ("GUILD_HALL_HOME".into(), p(&a.home.root)),
        ("GUILD_HALL_ATTEMPT".into(), a.attempt.to_string()),
        ("GUILD_HALL_WORKER".into(), pkg.manifest.name.clone()),
        ("GIT_OBJECT_DIRECTORY".into(), p(&state.objects())),
        // The worker's git never packs or prunes the shared repository on its own.
        ("GIT_CONFIG_COUNT".into(), "2".into()),
        ("GIT_CONFIG_KEY_0".into(), "gc.auto".into()),
        ("GIT_CONFIG_VALUE_0".into(), "0".into()),
        ("GIT_CONFIG_KEY_1".into(), "maintenance.auto".into()),
        ("GIT_CONFIG_VALUE_1".into(), "false".into()),
    ]);
    let id_var = match a.kind {
        ActivityKind::Commission => "GUILD_HALL_COMMISSION",
        ActivityKind::Meeting => "GUILD_HALL_MEETING",
        ActivityKind::Task => "GUILD_HALL_TASK",
    };
    env.insert(id_var.into(), a.id.to_string());
    Ok(Ok(Launch {
        state: state.clone(),
        attempt: a.attempt,
        cwd: rec.path.clone(),
        argv,
        env,
        grace: a.project.config.cancel_grace,
        log_max_bytes: global.log_max_bytes,
        sandbox,
    }))
}

/// Run one of a package's filter commands (`compact`, `notes`): `input` on its stdin, its
/// stdout returned. Confined, it may write only `tmp` (its `TMPDIR`) and the package's
/// `sandbox.write`, and read nothing of the `home` but those and its package. Killed if it runs
/// longer than [`FILTER_LIMIT`].
#[allow(clippy::too_many_arguments)]
pub fn run_filter(
    pkg: &Package,
    argv: &[String],
    cwd: &Path,
    input: &str,
    tmp: &Path,
    confined: bool,
    home: &Path,
    env: &BTreeMap<String, String>,
) -> Result<std::process::Output> {
    use std::process::{Command, Stdio};
    let (prog, args) = argv.split_first().context("empty command")?;
    let mut cmd = Command::new(prog);
    cmd.args(args).current_dir(cwd).envs(env).env("TMPDIR", tmp).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    if confined {
        let mut writable = vec![tmp.to_path_buf()];
        if let SandboxSpec::Confined { write } = &pkg.manifest.sandbox {
            for w in write {
                writable.push(crate::worker::expand_home(w).map_err(anyhow::Error::msg)?);
            }
        }
        Policy { writable, readable: vec![pkg.dir.clone()], hidden: vec![home.to_path_buf()] }.prepare()?.apply_to(&mut cmd);
    }
    // Its own process group: on timeout the whole group goes, grandchildren too (one holding
    // stdout would otherwise keep us waiting).
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let mut child = cmd.spawn().with_context(|| format!("starting {prog}"))?;
    // Fed from a thread: a command that prints before it has read everything never blocks us.
    let mut stdin = child.stdin.take().context("no stdin")?;
    let input = input.to_string();
    let feeder = std::thread::spawn(move || std::io::Write::write_all(&mut stdin, input.as_bytes()));
    let pid = child.id() as i32;
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let out = child.wait_with_output();
        let _ = done_tx.send(());
        out
    });
    if done_rx.recv_timeout(FILTER_LIMIT).is_err() {
        let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
    }
    let out = waiter.join().map_err(|_| anyhow::anyhow!("{prog}: waiting for it failed"))??;
    let _ = feeder.join();
    Ok(out)
}

/// How long a filter command (`compact`, `notes`) may run.
pub const FILTER_LIMIT: std::time::Duration = std::time::Duration::from_secs(300);
