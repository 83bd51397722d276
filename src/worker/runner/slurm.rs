//! The Slurm runner: an attempt is one batch job running `guild-hall shim` on a compute node
//! (`sbatch --parsable`), its handle (`slurm.json`: job name and id) in the attempt's state dir;
//! where it stands from `scontrol show job`, with the shim's own records; stopped by `scancel`,
//! only for a job whose name carries the attempt's. Through Slurm's command-line tools.

use std::ffi::OsString;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::activity::state::{ExitInfo, StateDir};
use crate::config::SlurmConfig;
use crate::files::{read_json, write_json};
use crate::worker::liveness::{Attempt, Proc};
use crate::worker::shim::{Spec, Stop};

/// What one attempt's job asks of Slurm (made by `worker::launch`).
#[derive(Debug, Clone)]
pub struct Job {
    /// The project's name and the activity's id: in the job's name, with the attempt.
    pub project: String,
    pub id: String,
    pub config: SlurmConfig,
    pub cpus: Option<u32>,
    pub memory: Option<String>,
    /// `--time`, in minutes.
    pub minutes: Option<u64>,
}

/// `slurm.json` in the attempt's state dir: the job that runs the attempt. Written with the
/// job's name before `sbatch` runs and again with its id once it answers, so that no job is
/// ever submitted that a later pass cannot find (by name, when the id was never recorded).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Handle {
    pub attempt: u32,
    /// `guild-hall.<project>.<id>.<attempt>.<nonce>`: what proves a job is this attempt's.
    pub name: String,
    pub job_id: Option<u64>,
    pub submitted_at: DateTime<Utc>,
}

impl Handle {
    pub fn path(state: &StateDir) -> PathBuf {
        state.0.join("slurm.json")
    }

    pub fn read(state: &StateDir) -> Result<Option<Handle>> {
        read_json(&Self::path(state))
    }

    /// Whether its attempt was taken by a job: its id recorded, sbatch perhaps still answering,
    /// or Slurm knowing a job of its name (or not answering: taken, to be safe). Not taken: the
    /// pass that wrote it died before sbatch took the job, and the attempt is started again.
    pub fn taken(&self) -> bool {
        self.job_id.is_some() || self.submitting() || !matches!(find_by_name(&self.name), Ok(None))
    }

    /// Written with no job id less than [`SUBMIT_WINDOW`] ago: sbatch may still answer.
    fn submitting(&self) -> bool {
        self.job_id.is_none() && Utc::now().signed_duration_since(self.submitted_at).to_std().unwrap_or_default() < SUBMIT_WINDOW
    }
}

/// How long a handle without a job id may wait for `sbatch` to answer before the attempt is
/// taken as never submitted.
const SUBMIT_WINDOW: Duration = Duration::from_secs(60);

/// Submit the attempt as a batch job and record its id. Refused (its `exit.json` saying why)
/// when the nodes cannot see the home, or Slurm will not take the job.
pub fn submit(spec: &Spec, job: &Job) -> Result<()> {
    let refuse = |why: String| crate::worker::launch::refuse(&spec.state, spec.attempt, &why);
    if let Some(why) = not_shared(spec, job.config.partition.as_deref()) {
        return refuse(why);
    }
    if let Some(m) = job.memory.as_deref().filter(|m| !valid_memory(m)) {
        return refuse(format!("resources.memory: {m:?} is not an amount Slurm takes (`4G`, `500M`, a number of megabytes)"));
    }
    // What an earlier attempt's shim wrote down is not this one's.
    let _ = std::fs::remove_file(crate::worker::shim::cpu_file(&spec.state));
    let nonce = uuid::Uuid::new_v4().simple().to_string();
    let name = format!("guild-hall.{}.{}.{}.{}", job.project, job.id, spec.attempt, &nonce[..8]);
    let mut handle = Handle { attempt: spec.attempt, name: name.clone(), job_id: None, submitted_at: Utc::now() };
    write_json(&Handle::path(&spec.state), &handle)?;
    crate::activity::fault("slurm-submit", 1);
    let (argv, env) = crate::worker::shim::shim_invocation(spec)?;
    let script = batch_script(&argv);
    let log = spec.state.log(spec.attempt);
    let mut cmd = Command::new("sbatch");
    cmd.arg("--parsable")
        .arg(format!("--job-name={name}"))
        .arg(arg("--chdir=", &spec.cwd))
        .arg(arg("--output=", &log))
        .arg("--open-mode=append")
        // The job's environment is sbatch's, which is exactly the shim's (below).
        .arg("--export=ALL")
        .arg("--ntasks=1");
    if let Some(n) = job.cpus {
        cmd.arg(format!("--cpus-per-task={n}"));
    }
    if let Some(m) = &job.memory {
        cmd.arg(format!("--mem={m}"));
    }
    if let Some(min) = job.minutes {
        cmd.arg(format!("--time={min}"));
    }
    for (flag, value) in [("partition", &job.config.partition), ("account", &job.config.account), ("qos", &job.config.qos)] {
        if let Some(v) = value {
            cmd.arg(format!("--{flag}={v}"));
        }
    }
    // The node's process table is not ours to read: the shim writes the worker's CPU time down.
    cmd.env_clear().envs(env).env(crate::worker::shim::CPU_BEAT_VAR, "1");
    // Where the cluster's configuration is, when it is not the system's.
    if let Some(conf) = std::env::var_os("SLURM_CONF") {
        cmd.env("SLURM_CONF", conf);
    }
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return refuse(format!("the Slurm runner cannot run sbatch: {e}")),
    };
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(&script).context("writing the batch script to sbatch")?;
    }
    let out = child.wait_with_output().context("waiting for sbatch")?;
    let said = String::from_utf8_lossy(&out.stdout);
    // `--parsable`: `<id>` or `<id>;<cluster>`.
    let id = said.trim().split(';').next().and_then(|id| id.parse::<u64>().ok());
    match id {
        Some(id) if out.status.success() => {
            crate::activity::fault("slurm-submit", 2);
            handle.job_id = Some(id);
            write_json(&Handle::path(&spec.state), &handle)?;
            tracing::info!(job = id, name = %name, "submitted to Slurm");
            Ok(())
        }
        _ => {
            let _ = std::fs::remove_file(Handle::path(&spec.state));
            refuse(format!("sbatch refused the job: {}", String::from_utf8_lossy(&out.stderr).trim()))
        }
    }
}

/// `--flag=path`, the path as it is (not necessarily UTF-8).
fn arg(flag: &str, path: &Path) -> OsString {
    let mut a = OsString::from(flag);
    a.push(path);
    a
}

/// Slurm's memory amount: digits, an optional unit.
fn valid_memory(m: &str) -> bool {
    let digits = m.trim_end_matches(['K', 'M', 'G', 'T']);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) && m.len() - digits.len() <= 1
}

/// The batch script: `exec` the shim, every word single-quoted.
fn batch_script(argv: &[OsString]) -> Vec<u8> {
    let mut s = b"#!/bin/sh\nexec".to_vec();
    for a in argv {
        s.extend_from_slice(b" '");
        for &b in a.as_bytes() {
            if b == b'\'' {
                s.extend_from_slice(b"'\\''");
            } else {
                s.push(b);
            }
        }
        s.push(b'\'');
    }
    s.push(b'\n');
    s
}

/// Why the nodes may not see what the attempt needs (the home's state dir and worktree, the
/// project, the guild-hall binary), if they may not: the partition has nodes other than this
/// host, and one of those paths is on a filesystem of this machine's only (`ext4`, `tmpfs`...).
fn not_shared(spec: &Spec, partition: Option<&str>) -> Option<String> {
    let mut cmd = Command::new("sinfo");
    cmd.args(["-h", "-N", "-o", "%N"]);
    if let Some(p) = partition {
        cmd.arg(format!("--partition={p}"));
    }
    let out = match cmd.output() {
        Ok(o) if o.status.success() => o,
        Ok(o) => return Some(format!("the Slurm runner could not ask sinfo for the nodes: {}", String::from_utf8_lossy(&o.stderr).trim())),
        Err(e) => return Some(format!("the Slurm runner cannot run sinfo: {e}")),
    };
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let host = host.trim();
    // Slurm names a node by its short host name.
    let short = host.split('.').next().unwrap_or(host);
    let mut others: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::trim)
        .filter(|n| !n.is_empty() && *n != host && *n != short)
        .map(str::to_string)
        .collect();
    others.sort();
    others.dedup();
    if others.is_empty() {
        return None;
    }
    let mut paths = vec![spec.state.0.clone(), spec.cwd.clone()];
    paths.extend(spec.env.get("GUILD_HALL_PROJECT").map(PathBuf::from));
    paths.extend(std::env::current_exe().ok());
    for p in paths {
        if let Some(fs) = local_fs(&p) {
            return Some(format!(
                "the Slurm runner needs the home, the project and the guild-hall binary on a filesystem the nodes share, but {} is on {fs}, this machine's own, and the cluster has nodes other than this one ({}); put them on a shared filesystem (NFS, Lustre, GPFS, CephFS, BeeGFS...)",
                p.display(),
                others.join(", ")
            ));
        }
    }
    None
}

/// The local filesystem type `path` is on, or `None` for one that may be shared (a network or
/// cluster filesystem, FUSE, or one not known here).
fn local_fs(path: &Path) -> Option<&'static str> {
    let st = nix::sys::statfs::statfs(path).ok()?;
    // Magic numbers from linux/magic.h.
    let kind = st.filesystem_type().0 as u64;
    [
        (0xEF53, "ext4"),
        (0x01021994, "tmpfs"),
        (0x58465342, "xfs"),
        (0x9123683E, "btrfs"),
        (0x2FC12FC1, "zfs"),
        (0xF2F52010, "f2fs"),
        (0x794C7630, "overlayfs"),
        (0x858458F6, "ramfs"),
    ]
    .into_iter()
    .find(|(magic, _)| *magic == kind)
    .map(|(_, name)| name)
}

/// A job as `scontrol show job` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobState {
    /// Waiting in the queue, and why (`Resources`, `Priority`...).
    Queued(String),
    Running,
    /// Its processes are being ended (`COMPLETING`): its final state is a moment away.
    Ending,
    /// Ended: its state and reason (`CANCELLED`, `FAILED (NonZeroExitCode)`, `TIMEOUT`...).
    Ended(String),
    /// Slurm no longer knows it (ended longer ago than `MinJobAge`).
    Gone,
}

/// Ask Slurm where job `id` stands, and its name.
pub fn query(id: u64) -> Result<(JobState, String)> {
    let out = Command::new("scontrol").args(["show", "job", "-o", &id.to_string()]).output().context("running scontrol")?;
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() || text.trim().is_empty() {
        if err.contains("Invalid job id") {
            return Ok((JobState::Gone, String::new()));
        }
        bail!("cannot ask Slurm about job {id}: {}", err.trim());
    }
    Ok(parse_job(&text))
}

/// `scontrol show job -o`'s line: the job's state and name.
fn parse_job(text: &str) -> (JobState, String) {
    let field =
        |key: &str| text.split_whitespace().find_map(|kv| kv.split_once('=').filter(|(k, _)| *k == key).map(|(_, v)| v.to_string()));
    let state = field("JobState").unwrap_or_default();
    let reason = field("Reason").filter(|r| r != "None" && r != "(null)");
    let name = field("JobName").unwrap_or_default();
    let st = match state.as_str() {
        "PENDING" | "CONFIGURING" | "REQUEUED" | "REQUEUE_HOLD" | "REQUEUE_FED" | "RESV_DEL_HOLD" | "SUSPENDED" | "STOPPED" => {
            JobState::Queued(reason.unwrap_or_else(|| state.to_lowercase()))
        }
        "RUNNING" | "SIGNALING" | "STAGE_OUT" | "RESIZING" => JobState::Running,
        "COMPLETING" => JobState::Ending,
        _ => JobState::Ended(match reason {
            Some(r) => format!("{state} ({r})"),
            None => state,
        }),
    };
    (st, name)
}

/// The id of our job named `name`, if Slurm knows one.
fn find_by_name(name: &str) -> Result<Option<u64>> {
    let out = Command::new("squeue").args(["-h", "-t", "all", "-o", "%i", "--name", name]).output().context("running squeue")?;
    if !out.status.success() {
        bail!("cannot ask Slurm for job {name}: {}", String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(String::from_utf8_lossy(&out.stdout).lines().find_map(|l| l.trim().parse().ok()))
}

/// The jobs of `project` Slurm has queued or running (ours by their names), as (job id,
/// activity id, attempt): what a reconciler that lost its records can still find. Empty where
/// Slurm cannot be asked (not installed: no job of ours runs).
pub fn ours(project: &str) -> Vec<(u64, String, u32)> {
    let Ok(out) = Command::new("squeue").args(["-h", "-o", "%i %j"]).output() else { return Vec::new() };
    if !out.status.success() {
        return Vec::new();
    }
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let (id, name) = l.trim().split_once(' ')?;
            let (activity, attempt) = attempt_of(name, project)?;
            Some((id.parse().ok()?, activity, attempt))
        })
        .collect()
}

/// The activity id and attempt a job name of `project` carries
/// (`guild-hall.<project>.<id>.<attempt>.<nonce>`; an id may hold dots, the last two parts not).
fn attempt_of(name: &str, project: &str) -> Option<(String, u32)> {
    let rest = name.strip_prefix("guild-hall.")?.strip_prefix(project)?.strip_prefix('.')?;
    let mut parts = rest.rsplitn(3, '.');
    let nonce = parts.next()?;
    let attempt = parts.next()?.parse().ok()?;
    let id = parts.next()?;
    (nonce.len() == 8 && nonce.bytes().all(|b| b.is_ascii_hexdigit()) && !id.is_empty()).then(|| (id.to_string(), attempt))
}

/// The job id of `handle`, found by name when sbatch's answer was never recorded.
fn job_id(handle: &Handle) -> Result<Option<u64>> {
    match handle.job_id {
        Some(id) => Ok(Some(id)),
        None => find_by_name(&handle.name),
    }
}

/// Where `attempt` stands, its job recorded in `handle`: queued (neither running nor stale),
/// running once the shim recorded the start, ended once it recorded the exit. A job gone from
/// Slurm with no exit recorded is given one here, saying how it ended. `Err`: Slurm cannot be
/// asked, or the recorded job is not this attempt's (its name differs).
pub fn attempt(state: &StateDir, attempt: u32, handle: &Handle) -> Result<Attempt, String> {
    let e = |e: anyhow::Error| format!("{e:#}");
    let run = state.read_run().map_err(e)?.filter(|r| r.attempt == attempt);
    let id = job_id(handle).map_err(e)?;
    let (job, name) = match id {
        Some(id) => query(id).map_err(e)?,
        None if handle.submitting() => {
            return Ok(Attempt {
                proc: Proc::Starting,
                run,
                exit: None,
                leftovers: Vec::new(),
                queued: Some("Slurm: submitting".into()),
                polled: true,
            })
        }
        // The pass that wrote the handle died before sbatch took the job: the attempt never
        // started, and is started again (a job sbatch took after all would find its attempt
        // taken, and end without running a worker).
        None if run.is_none() => {
            return Ok(Attempt { proc: Proc::NotStarted, run, exit: None, leftovers: Vec::new(), queued: None, polled: false })
        }
        // It ran (its shim recorded the start), and Slurm has forgotten it since.
        None => (JobState::Gone, String::new()),
    };
    if !name.is_empty() && name != handle.name {
        return Err(format!(
            "{}: names Slurm job {}, whose name is {name}, not this attempt's ({}); it is not cancelled",
            Handle::path(state).display(),
            id.unwrap_or_default(),
            handle.name
        ));
    }
    // Slurm first, then the exit record: a job seen ended has its shim's record there to read.
    let mut exit = read_json::<ExitInfo>(&state.exit()).map_err(e)?.filter(|x| x.attempt == attempt);
    let what = |id: Option<u64>| id.map_or_else(|| format!("the Slurm job {}", handle.name), |id| format!("Slurm job {id}"));
    let (proc, queued) = match (&job, &mut exit) {
        // The shim recorded its exit; Slurm is ending the job: how it ends is a moment away.
        (JobState::Ending, Some(_)) => (Proc::Starting, None),
        (JobState::Ended(how), Some(x)) if !how.starts_with("COMPLETED") => {
            // Ended by Slurm (cancelled from outside, its time limit, a node lost): said with
            // how the worker ended, for the reason.
            x.error = Some(format!("{RUNNER_VERDICT}{} ended {how}: {}", what(id), x.describe()));
            (Proc::Dead, None)
        }
        (_, Some(_)) => (Proc::Dead, None),
        (JobState::Queued(reason), None) => (Proc::Starting, Some(format!("Slurm job {}: {reason}", id.unwrap_or_default()))),
        (JobState::Running | JobState::Ending, None) if run.is_some() => (Proc::Alive, None),
        (JobState::Running | JobState::Ending, None) => (Proc::Starting, None),
        (JobState::Ended(how), None) => {
            let x = lost(attempt, format!("{RUNNER_VERDICT}{} ended {how} without the shim recording the attempt's exit", what(id)));
            write_json(&state.exit(), &x).map_err(e)?;
            exit = Some(x);
            (Proc::Dead, None)
        }
        (JobState::Gone, None) => {
            let x = lost(attempt, format!("{RUNNER_VERDICT}{} is gone from Slurm without the shim recording the attempt's exit", what(id)));
            write_json(&state.exit(), &x).map_err(e)?;
            exit = Some(x);
            (Proc::Dead, None)
        }
    };
    Ok(Attempt { proc, run, exit, leftovers: Vec::new(), queued, polled: true })
}

use crate::activity::state::RUNNER_VERDICT;

fn lost(attempt: u32, why: String) -> ExitInfo {
    ExitInfo { attempt, code: None, signal: None, error: Some(why), finished_at: Utc::now(), tail: None }
}

/// Stop the job of `handle`, once proven ours (its name is the handle's): `Term` asks the shim
/// (`scancel --batch --signal=TERM`: it stops every process of the attempt, SIGKILL after its
/// grace); `Kill` asks the shim to kill them now (`--signal=USR1`) and cancels the job
/// (`scancel`: Slurm ends every process of it). A queued job is cancelled.
pub fn stop(handle: &Handle, how: Stop) -> Result<()> {
    let Some(id) = job_id(handle)? else { return Ok(()) };
    let (state, name) = query(id)?;
    if matches!(state, JobState::Ended(_) | JobState::Gone) {
        return Ok(());
    }
    if name != handle.name {
        bail!("Slurm job {id} is named {name}, not {}: not ours, not cancelled", handle.name);
    }
    let scancel = |args: &[&str]| -> Result<()> {
        let out = Command::new("scancel").args(args).arg(id.to_string()).output().context("running scancel")?;
        if !out.status.success() {
            bail!("scancel {id}: {}", String::from_utf8_lossy(&out.stderr).trim());
        }
        Ok(())
    };
    match (how, &state) {
        (Stop::Term, JobState::Running) => scancel(&["--batch", "--signal=TERM"])?,
        (Stop::Kill, JobState::Running) => {
            // The shim kills every process of the attempt at once (as a local SIGUSR1 asks),
            // then Slurm ends the job whatever became of that.
            let _ = scancel(&["--batch", "--signal=USR1"]);
            scancel(&[])?
        }
        _ => scancel(&[])?,
    }
    tracing::info!(job = id, how = ?how, "asked Slurm to stop the job");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scontrol_lines_say_state_reason_and_name() {
        let (s, n) = parse_job("JobId=7 JobName=guild-hall.p.c.1.ab UserId=root(0) JobState=PENDING Reason=Resources Dependency=(null)");
        assert_eq!((s, n.as_str()), (JobState::Queued("Resources".into()), "guild-hall.p.c.1.ab"));
        assert_eq!(parse_job("JobName=x JobState=RUNNING Reason=None").0, JobState::Running);
        assert_eq!(parse_job("JobName=x JobState=CANCELLED Reason=None").0, JobState::Ended("CANCELLED".into()));
        assert_eq!(parse_job("JobName=x JobState=FAILED Reason=NonZeroExitCode").0, JobState::Ended("FAILED (NonZeroExitCode)".into()));
    }

    #[test]
    fn a_job_name_says_whose_attempt_it_is() {
        assert_eq!(attempt_of("guild-hall.p-1.c1.2.0a1b2c3d", "p-1"), Some(("c1".into(), 2)));
        assert_eq!(attempt_of("guild-hall.p.v1.2.x.3.0a1b2c3d", "p"), Some(("v1.2.x".into(), 3)));
        assert_eq!(attempt_of("guild-hall.p.c1.2.0a1b2c3d", "q"), None, "another project's");
        assert_eq!(attempt_of("guild-hall.pp.c1.2.0a1b2c3d", "p"), None, "another project's");
        assert_eq!(attempt_of("wrap", "p"), None);
        assert_eq!(attempt_of("guild-hall.p.c1.x.0a1b2c3d", "p"), None);
    }

    #[test]
    fn the_batch_script_quotes_every_word() {
        let s = batch_script(&["/bin/gh".into(), "it's".into(), "a b".into()]);
        assert_eq!(String::from_utf8_lossy(&s), "#!/bin/sh\nexec '/bin/gh' 'it'\\''s' 'a b'\n");
    }

    #[test]
    fn memory_in_slurms_words() {
        for ok in ["4G", "500M", "1024", "2T"] {
            assert!(valid_memory(ok), "{ok}");
        }
        for bad in ["", "G", "4GB", "-1", "4 G", "1.5G"] {
            assert!(!valid_memory(bad), "{bad}");
        }
    }
}
