//! The Slurm runner: an attempt is one batch job running `guild-hall shim` on a compute node
//! (`sbatch --parsable`), its handle (`slurm.json`: job name and id) in the attempt's state dir;
//! where it stands from `squeue --json` (structured: no field the job's owner sets can pass for
//! another), with the shim's own records; stopped by `scancel` of the job's id.
//! A job is proven the attempt's by what its worker cannot change: the id sbatch answered
//! (recorded where a confined worker cannot write), its owner (our uid) and its output file (the
//! attempt's log); never by its name alone, which the job's owner may change. Through Slurm's
//! command-line tools.

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
use crate::config::{Home, SlurmConfig};
use crate::files::{read_json, write_json};
use crate::worker::runner::seam::{handle_holds_slot, Attempt, LocateError, Proc, Request, Runner, RunnerHandle, RunnerName};
use crate::worker::shim::{Spec, Stop};

/// The Slurm runner, with the project's `slurm:` settings (what a submission asks for).
pub(crate) struct Slurm {
    pub(crate) config: SlurmConfig,
}

impl Runner for Slurm {
    fn name(&self) -> RunnerName {
        RunnerName::Slurm
    }

    /// Once the job is submitted and its id recorded (it may wait in the queue).
    fn start(&self, spec: &Spec, request: &Request) -> Result<()> {
        let job = Job {
            project: request.project.clone(),
            id: request.id.clone(),
            config: self.config.clone(),
            cpus: request.cpus,
            memory: request.memory.clone(),
            minutes: request.limit.map(|limit| minutes(limit, request.grace)),
        };
        submit(spec, &job)
    }

    fn handle(&self, state: &StateDir) -> Result<Option<RunnerHandle>> {
        Ok(Handle::read(state)?.map(|h| RunnerHandle { runner: RunnerName::Slurm, attempt: h.attempt, ended: h.ended.is_some() }))
    }

    fn forget(&self, state: &StateDir) {
        Handle::remove(state);
    }

    fn taken(&self, state: &StateDir) -> Result<Option<u32>> {
        Ok(Handle::read(state)?.filter(|h| h.taken(state)).map(|h| h.attempt))
    }

    /// Slurm's to say, with the shim's records ([`attempt`]).
    fn locate(&self, state: &StateDir, attempt_no: u32, _boot: &str) -> Result<Attempt, LocateError> {
        match Handle::read(state).map_err(LocateError::Unreadable)? {
            Some(handle) if handle.attempt == attempt_no => attempt(state, attempt_no, &handle),
            _ => Err(LocateError::NoJob { handle: Handle::path(state), attempt: attempt_no }),
        }
    }

    /// Through Slurm, for a job of ours (`scancel --signal=TERM`, or `scancel` to kill).
    fn stop(&self, state: &StateDir, attempt: u32, _run: Option<&RunInfo>, how: Stop) -> Result<()> {
        match Handle::read(state)?.filter(|h| h.attempt == attempt) {
            Some(handle) => stop(state, &handle, how),
            None => Ok(()),
        }
    }

    fn holds_slot(&self, state: &StateDir, attempt: u32) -> bool {
        handle_holds_slot(state, self.handle(state).ok().flatten(), attempt)
    }

    /// A job of ours Slurm has queued or running writing the activity's log ([`ours`]).
    fn works_unrecorded(&self, home: &Home, project: &str, id: &str, _worktree: &Path) -> bool {
        ours(home, project).iter().any(|(_, of, _)| of == id)
    }
}

/// Slurm's `--time` for an attempt limited to `limit` (guild-hall stops it itself; Slurm's limit
/// is the backstop, a grace and a minute later): whole minutes, at least one.
pub(crate) fn minutes(limit: Duration, grace: Duration) -> u64 {
    (limit + grace + Duration::from_secs(60)).as_secs().div_ceil(60).max(1)
}

/// What one attempt's job asks of Slurm (made by `worker::launch`).
#[derive(Debug, Clone)]
pub(crate) struct Job {
    /// The project's name and the activity's id: in the job's name, with the attempt.
    pub(crate) project: String,
    pub(crate) id: String,
    pub(crate) config: SlurmConfig,
    pub(crate) cpus: Option<u32>,
    pub(crate) memory: Option<String>,
    /// `--time`, in minutes.
    pub(crate) minutes: Option<u64>,
}

/// `slurm.json` in the attempt's state dir: the job that runs the attempt. Written with the
/// job's name before `sbatch` runs and again with its id once it answers, so that a job sbatch
/// took can be found by a later pass (by name, when the id was never recorded). An attempt
/// submitted again keeps the name, so a late answer of the first sbatch is found too; its shim
/// runs only in the job whose name (and id, once recorded) `slurm.json` holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Handle {
    pub(crate) attempt: u32,
    /// `guild-hall.<project>.<id>.<attempt>.<nonce>`: how the job is found before its id is
    /// recorded (no proof on its own: the job's owner may rename it).
    pub(crate) name: String,
    /// The id sbatch answered (or the job found by name): with its owner and output file, what
    /// proves a job is this attempt's.
    pub(crate) job_id: Option<u64>,
    pub(crate) submitted_at: DateTime<Utc>,
    /// Set once the attempt's end is taken (its exit recorded, the job ended): how Slurm ended
    /// the job (`CANCELLED`...), empty when that says nothing. Slurm is not asked again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) ended: Option<String>,
}

impl Handle {
    pub(crate) fn path(state: &StateDir) -> PathBuf {
        state.0.join("slurm.json")
    }

    pub(crate) fn read(state: &StateDir) -> Result<Option<Handle>> {
        read_json(&Self::path(state))
    }

    /// Forget the handle in `state`: an attempt started here, or refused, is no job's.
    pub(crate) fn remove(state: &StateDir) {
        let _ = std::fs::remove_file(Self::path(state));
    }

    fn write(&self, state: &StateDir) -> Result<()> {
        write_json(&Self::path(state), self)
    }

    /// Whether its attempt (in `state`) was taken by a job: its id recorded, sbatch perhaps still
    /// answering, or Slurm knowing a job of ours writing the attempt's log (or not answering:
    /// taken, to be safe). Not taken: the pass that wrote it died before sbatch took the job,
    /// and the attempt is started again.
    pub(crate) fn taken(&self, state: &StateDir) -> bool {
        self.job_id.is_some() || self.ended.is_some() || self.submitting() || !matches!(find_unrecorded(state, self), Ok(None))
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
pub(crate) fn submit(spec: &Spec, job: &Job) -> Result<()> {
    let refuse = |why: String| {
        // An earlier submission's handle is no job of this refused attempt's.
        Handle::remove(&spec.state);
        crate::worker::shim::refuse(&spec.state, spec.attempt, &why)
    };
    if let Some(why) = not_shared(spec, job.config.partition.as_deref()) {
        return refuse(why);
    }
    if let Some(m) = job.memory.as_deref().filter(|m| !valid_memory(m)) {
        return refuse(format!("resources.memory: {m:?} is not an amount Slurm takes (`4G`, `500M`, a number of megabytes)"));
    }
    // What an earlier attempt's shim wrote down is not this one's.
    let _ = std::fs::remove_file(crate::worker::shim::cpu_file(&spec.state));
    // An attempt submitted again after its first sbatch never answered keeps its name: should
    // that sbatch take the job after all, a later pass finds it by the same name.
    let name = match Handle::read(&spec.state) {
        Ok(Some(h)) if h.attempt == spec.attempt && h.job_id.is_none() && h.ended.is_none() && name_fits(&h.name, &job.id, h.attempt) => {
            h.name
        }
        _ => {
            let nonce = uuid::Uuid::new_v4().simple().to_string();
            format!("guild-hall.{}.{}.{}.{}", job.project, job.id, spec.attempt, &nonce[..8])
        }
    };
    let mut handle = Handle { attempt: spec.attempt, name: name.clone(), job_id: None, submitted_at: Utc::now(), ended: None };
    handle.write(&spec.state)?;
    crate::activity::fault("slurm-submit", 1);
    let (argv, env) = crate::worker::shim::shim_invocation(spec)?;
    let script = batch_script(&argv);
    let log = spec.state.log(spec.attempt);
    let mut cmd = Command::new("sbatch");
    cmd.arg("--parsable")
        .arg(format!("--job-name={name}"))
        .arg(arg("--chdir=", &spec.cwd))
        // `%` is a pattern character to Slurm: `%%` is a `%`.
        .arg(arg("--output=", Path::new(&escape_percent(log.as_os_str()))))
        .arg("--open-mode=append")
        // Run once: a job requeued after its worker started would run the attempt again.
        .arg("--no-requeue")
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
    cmd.env_clear().envs(env).env(crate::worker::shim::CPU_BEAT_VAR, "1").env(RUNNER_VAR, RUNNER);
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
    forget_listing();
    let said = String::from_utf8_lossy(&out.stdout);
    // `--parsable`: `<id>` or `<id>;<cluster>`.
    let id = said.trim().split(';').next().and_then(|id| id.parse::<u64>().ok());
    match id {
        Some(id) if out.status.success() => {
            crate::activity::fault("slurm-submit", 2);
            handle.job_id = Some(id);
            handle.write(&spec.state)?;
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

/// `s` with every `%` doubled (Slurm's `--output` expands `%j` and the like).
fn escape_percent(s: &std::ffi::OsStr) -> OsString {
    let mut out = Vec::new();
    for &b in s.as_bytes() {
        out.push(b);
        if b == b'%' {
            out.push(b'%');
        }
    }
    OsString::from(std::ffi::OsStr::from_bytes(&out))
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

/// A job as Slurm shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum JobState {
    /// Waiting in the queue, and why (`Resources`, `Priority`...).
    Queued(String),
    Running,
    /// Held where it was by Slurm (`SUSPENDED`, `STOPPED`): neither queued nor running.
    Suspended(String),
    /// Its processes are being ended (`COMPLETING`): its final state is a moment away.
    Ending,
    /// Ended: its state and reason (`CANCELLED`, `FAILED (NonZeroExitCode)`, `TIMEOUT`...).
    Ended(String),
    /// Slurm no longer knows it (ended longer ago than `MinJobAge`).
    Gone,
}

/// What Slurm says of a job (`squeue --json`: structured, so that no field the job's owner may
/// set — its name, its comment — can pass for another).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct JobInfo {
    pub(crate) job_id: u64,
    pub(crate) state: JobState,
    /// Its name: said, never proof of anything (its owner may change it).
    pub(crate) name: String,
    /// Its owner's uid.
    pub(crate) uid: Option<u32>,
    /// When it ended, once it has.
    pub(crate) end: Option<DateTime<Utc>>,
    /// When it was submitted.
    pub(crate) submitted: Option<DateTime<Utc>>,
    /// Its output file (`StdOut`), as submitted (`%%` for a `%` in some versions, expanded in
    /// others).
    output: String,
}

impl JobInfo {
    /// A job Slurm no longer knows.
    fn gone(job_id: u64) -> JobInfo {
        JobInfo { job_id, state: JobState::Gone, name: String::new(), uid: None, end: None, submitted: None, output: String::new() }
    }

    /// Whether its output file is `path` (as given to sbatch, its `%` doubled, or expanded).
    fn writes_to(&self, path: &Path) -> bool {
        !self.output.is_empty()
            && (self.output.as_bytes() == path.as_os_str().as_bytes()
                || self.output.as_bytes() == escape_percent(path.as_os_str()).as_bytes())
    }
}

/// How long one listing of our jobs answers for all of them: a pass asks about every attempt
/// it watches (and a stop about its job), and `squeue --json` lists every job at once (on
/// 22.05 every user's), so one listing serves the whole pass instead of one each.
const LISTING_LIFE: Duration = Duration::from_secs(1);

/// The last listing of our jobs and when it was taken.
static LISTING: std::sync::Mutex<Option<(std::time::Instant, std::sync::Arc<Vec<JobInfo>>)>> = std::sync::Mutex::new(None);

/// Our jobs as Slurm listed them less than [`LISTING_LIFE`] ago (listed now if not), and
/// whether the listing was taken by this call. A job this process submitted or cancelled since
/// is asked afresh ([`forget_listing`]).
fn listing() -> Result<(std::sync::Arc<Vec<JobInfo>>, bool)> {
    let mut last = LISTING.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((_, jobs)) = last.as_ref().filter(|(at, _)| at.elapsed() < LISTING_LIFE) {
        return Ok((jobs.clone(), false));
    }
    let jobs = std::sync::Arc::new(our_jobs()?);
    *last = Some((std::time::Instant::now(), jobs.clone()));
    Ok((jobs, true))
}

/// The listing no longer stands (a job was submitted or cancelled here).
fn forget_listing() {
    *LISTING.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = None;
}

/// What `find` finds among our jobs: in the shared listing, or, when it finds nothing there, in
/// a fresh one (a job submitted since the listing, by another process, is never missed).
fn in_listing<T>(find: impl Fn(&[JobInfo]) -> Option<T>) -> Result<Option<T>> {
    let (jobs, fresh) = listing()?;
    if let Some(found) = find(&jobs) {
        return Ok(Some(found));
    }
    if fresh {
        return Ok(None);
    }
    forget_listing();
    Ok(find(&listing()?.0))
}

/// Every job of ours Slurm knows (queued, running, or ended less than `MinJobAge` ago), from
/// `squeue --json`: an error where Slurm cannot be asked or its answer cannot be read.
fn our_jobs() -> Result<Vec<JobInfo>> {
    // `--me` and `-t all` are honoured by newer versions; 22.05 lists every job whatever they
    // say, so the owner is checked here too.
    let out = Command::new("squeue").args(["--json", "--me", "-t", "all"]).output().context("running squeue")?;
    if !out.status.success() {
        bail!("cannot ask Slurm for its jobs (squeue --json): {}", String::from_utf8_lossy(&out.stderr).trim());
    }
    let me = nix::unistd::getuid().as_raw();
    Ok(parse_jobs(&out.stdout)?.into_iter().filter(|j| j.uid == Some(me)).collect())
}

/// `squeue --json`'s answer (OpenAPI v0.0.38 of Slurm 22.05 and the later forms: a state as a
/// word or a list of them, a time as a number or `{"set", "number"}`). A name of bytes that are
/// not UTF-8 (a job's owner may set any) is read lossily, never failing the whole answer.
fn parse_jobs(bytes: &[u8]) -> Result<Vec<JobInfo>> {
    let text = String::from_utf8_lossy(bytes);
    let doc: serde_json::Value = serde_json::from_str(&text).context("reading squeue --json's answer")?;
    let Some(jobs) = doc.get("jobs").and_then(|j| j.as_array()) else {
        bail!("squeue --json answered without a `jobs` list (Slurm 21.08 or later is needed)");
    };
    Ok(jobs.iter().filter_map(parse_job).collect())
}

/// One job of `squeue --json`'s `jobs`, if it has an id.
fn parse_job(job: &serde_json::Value) -> Option<JobInfo> {
    use serde_json::Value;
    let text = |key: &str| job.get(key).and_then(Value::as_str).unwrap_or_default().to_string();
    let number = |v: &Value| match v {
        Value::Object(o) if o.get("set").and_then(Value::as_bool) == Some(false) => None,
        Value::Object(o) => o.get("number").and_then(Value::as_u64),
        v => v.as_u64(),
    };
    let time = |key: &str| {
        job.get(key).and_then(number).filter(|&t| t > 0).and_then(|t| DateTime::<Utc>::from_timestamp(i64::try_from(t).ok()?, 0))
    };
    let job_id = job.get("job_id").and_then(number)?;
    // A word, or a list: the base state first, then its flags (`COMPLETING`...).
    let states: Vec<String> = match job.get("job_state") {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).map(str::to_string).collect(),
        _ => Vec::new(),
    };
    let state = states.first().cloned().unwrap_or_default();
    let reason = Some(text("state_reason")).filter(|r| !r.is_empty() && r != "None" && r != "(null)");
    let st = match state.as_str() {
        _ if states.iter().any(|s| s == "COMPLETING") => JobState::Ending,
        "PENDING" | "CONFIGURING" | "REQUEUED" | "REQUEUE_HOLD" | "REQUEUE_FED" | "RESV_DEL_HOLD" => {
            JobState::Queued(reason.unwrap_or_else(|| state.to_lowercase()))
        }
        "SUSPENDED" | "STOPPED" => JobState::Suspended(state.to_lowercase()),
        "RUNNING" | "SIGNALING" | "STAGE_OUT" | "RESIZING" => JobState::Running,
        _ => JobState::Ended(match reason {
            Some(r) => format!("{state} ({r})"),
            None => state,
        }),
    };
    let ended = matches!(st, JobState::Ended(_));
    Some(JobInfo {
        job_id,
        state: st,
        name: text("name"),
        uid: job.get("user_id").and_then(number).and_then(|u| u32::try_from(u).ok()),
        // A job's end time before it ends is its time limit's.
        end: time("end_time").filter(|_| ended),
        submitted: time("submit_time"),
        output: text("standard_output"),
    })
}

/// Ask Slurm where job `id` stands: [`JobState::Gone`] if it no longer knows it.
/// From the listing a pass shares: a job that has moved on since (queued then, running now)
/// may still be seen where it was; [`query_fresh`] where that would mislead.
pub(crate) fn query(id: u64) -> Result<JobInfo> {
    Ok(in_listing(|jobs| jobs.iter().find(|j| j.job_id == id).cloned())?.unwrap_or_else(|| JobInfo::gone(id)))
}

/// [`query`], listed now.
fn query_fresh(id: u64) -> Result<JobInfo> {
    forget_listing();
    query(id)
}

/// The id of the job sbatch took for `handle`'s attempt in `state` without its answer being
/// recorded, if Slurm knows one: a job of ours writing the attempt's log, submitted once the
/// handle was written. Not by its name, which the job's owner may change; the lowest id if
/// two were taken (a submission given up and made again).
fn find_unrecorded(state: &StateDir, handle: &Handle) -> Result<Option<u64>> {
    let log = state.log(handle.attempt);
    // `submit_time` is the controller's clock, `submitted_at` this machine's: a job missed
    // because they disagree is submitted a second time beside the first. The log's path names
    // the attempt already; the time only keeps out a job of an earlier life of this state dir
    // (a home made again, its attempts numbered from 1) that Slurm still remembers, and such a
    // job is older than any skew an hour allows.
    let since = handle.submitted_at - CLOCK_SKEW_ALLOWED;
    in_listing(|jobs| jobs.iter().filter(|j| j.writes_to(&log) && j.submitted.is_some_and(|t| t >= since)).map(|j| j.job_id).min())
}

/// How far the controller's clock may be behind this machine's for [`find_unrecorded`].
const CLOCK_SKEW_ALLOWED: chrono::Duration = chrono::Duration::hours(1);

/// The jobs of `project` in `home` Slurm has queued or running, as (job id, commission id,
/// attempt): what a reconciler that lost its records can still find. Ours by their owner and
/// output file (an attempt's log in the project's state dir), never by their names. Empty where
/// Slurm cannot be asked (not installed: no job of ours runs).
pub(crate) fn ours(home: &Home, project: &str) -> Vec<(u64, String, u32)> {
    let Ok((jobs, _)) = listing() else { return Vec::new() };
    let dir = home.commissions_state(project);
    jobs.iter()
        .filter(|j| !matches!(j.state, JobState::Ended(_) | JobState::Gone))
        .filter_map(|j| {
            let (id, attempt) = log_of(&dir, &j.output)?;
            let state = StateDir(dir.join(&id));
            j.writes_to(&state.log(attempt)).then_some((j.job_id, id, attempt))
        })
        .collect()
}

/// The commission id and attempt of an output file `<dir>/<id>/attempt-<n>.log` (as given to
/// sbatch, its `%` doubled, or expanded).
fn log_of(dir: &Path, output: &str) -> Option<(String, u32)> {
    let path = Path::new(output);
    let file = path.file_name()?.to_str()?;
    let attempt = file.strip_prefix("attempt-")?.strip_suffix(".log")?.parse().ok()?;
    let state = path.parent()?;
    let id = state.file_name()?.to_str()?;
    let under = state.parent()?;
    if under == dir || under.as_os_str().as_bytes() == escape_percent(dir.as_os_str()).as_bytes() {
        // In the escaped form the id's `%` are doubled too.
        let id = if under == dir { id.to_string() } else { id.replace("%%", "%") };
        return Some((id, attempt));
    }
    None
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

/// Whether `name` is a job name for attempt `attempt` of activity `id` (of any project: the
/// state dir that holds the handle is the project's).
fn name_fits(name: &str, id: &str, attempt: u32) -> bool {
    let Some(rest) = name.strip_prefix("guild-hall.") else { return false };
    // The project's name may hold dots: every split that leaves `<id>.<attempt>.<nonce>`.
    rest.match_indices('.').any(|(i, _)| attempt_of(name, &rest[..i]) == Some((id.to_string(), attempt)))
}

/// The activity id of the attempt whose state dir is `state` (its last component).
fn activity_id(state: &StateDir) -> String {
    state.0.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// Why `handle` in `state` cannot name attempt `attempt`'s job, if it cannot: its name is not
/// this state dir's activity and attempt (no worker under Landlock can write it; an unconfined
/// one could).
fn bad_handle(state: &StateDir, attempt: u32, handle: &Handle) -> Option<String> {
    let id = activity_id(state);
    (!name_fits(&handle.name, &id, attempt)).then(|| {
        format!(
            "{}: job name {} is not one of attempt {attempt} of {id}; no job is cancelled by it",
            Handle::path(state).display(),
            handle.name
        )
    })
}

/// Why job `id` as Slurm describes it is not proven attempt `attempt`'s, if it is not: its owner
/// is not us, or its output file is not the attempt's log (neither of which its worker can
/// change once it runs). Its name is no proof: the job's owner may change it.
fn not_ours(state: &StateDir, attempt: u32, id: u64, info: &JobInfo) -> Option<String> {
    let me = nix::unistd::getuid().as_raw();
    let log = state.log(attempt);
    if info.uid != Some(me) {
        return Some(format!(
            "Slurm job {id} recorded in {} is not ours (owner uid {:?}, not {me})",
            Handle::path(state).display(),
            info.uid
        ));
    }
    if !info.writes_to(&log) {
        return Some(format!(
            "Slurm job {id} recorded in {} does not write the attempt's log {}: not this attempt's job",
            Handle::path(state).display(),
            log.display()
        ));
    }
    None
}

/// Set in a submitted shim's environment: the runner that placed it, whose say it asks
/// ([`admit`]).
const RUNNER_VAR: &str = "GUILD_HALL_RUNNER";
const RUNNER: &str = "slurm";

/// This runner's say on a shim about to run `attempt` of `state` (see [`not_the_recorded_job`]),
/// if this runner submitted it: its environment names this runner, or (a job submitted by an
/// earlier guild-hall, which set no runner) it writes CPU beats.
pub(crate) fn admit(state: &StateDir, attempt: u32) -> Option<String> {
    let ours = match std::env::var_os(RUNNER_VAR) {
        Some(r) => r == RUNNER,
        None => std::env::var_os(crate::worker::shim::CPU_BEAT_VAR).is_some(),
    };
    if !ours {
        return None;
    }
    let (id, name) = (std::env::var("SLURM_JOB_ID").ok(), std::env::var("SLURM_JOB_NAME").ok());
    not_the_recorded_job(state, attempt, id.as_deref(), name.as_deref())
}

/// Why the shim must not run attempt `attempt` in `state` in the Slurm job `job_id` named
/// `job_name` (its `$SLURM_JOB_ID` and `$SLURM_JOB_NAME`), if it must not: `slurm.json` does not
/// record this job for the attempt (a job of a submission given up, or not guild-hall's).
pub(crate) fn not_the_recorded_job(state: &StateDir, attempt: u32, job_id: Option<&str>, job_name: Option<&str>) -> Option<String> {
    let handle = match Handle::read(state) {
        Ok(Some(h)) if h.attempt == attempt => h,
        Ok(_) => return Some(format!("{} records no job for attempt {attempt}", Handle::path(state).display())),
        Err(e) => return Some(format!("{e:#}")),
    };
    if job_name != Some(handle.name.as_str()) {
        return Some(format!(
            "this job is named {}, not {} as {} records",
            job_name.unwrap_or("?"),
            handle.name,
            Handle::path(state).display()
        ));
    }
    match handle.job_id {
        Some(id) if job_id != Some(id.to_string().as_str()) => {
            Some(format!("this is job {}, not {id} as {} records", job_id.unwrap_or("?"), Handle::path(state).display()))
        }
        _ => None,
    }
}

/// How long the shim's `exit.json` may take to be seen here after a job ended `COMPLETED` (a
/// shared filesystem's attribute cache) before the attempt is taken as lost.
const EXIT_GRACE: Duration = Duration::from_secs(60);

/// Where `attempt` stands, its job recorded in `handle`: queued (neither running nor stale),
/// running once the shim recorded the start, ended once it recorded the exit. A job gone from
/// Slurm with no exit recorded is given one here, saying how it ended; so is a job not proven
/// this attempt's (its owner or output file not ours, the handle's name not this attempt's),
/// never cancelled. Once the end is taken the handle says so, and Slurm is not asked again.
/// `Err`: Slurm cannot be asked while the attempt has not ended.
// Long: one table of the job's states against the shim's records, each row with its verdict;
// split, the rows would no longer be read side by side.
pub(crate) fn attempt(state: &StateDir, attempt: u32, handle: &Handle) -> Result<Attempt, LocateError> {
    let e = LocateError::Unreadable;
    // Slurm not answering, said with the handle that made us ask.
    let asking = |error: anyhow::Error| LocateError::NotAnswering { handle: Handle::path(state), error };
    let run = state.read_run().map_err(e)?.filter(|r| r.attempt == attempt);
    let mut exit = read_json::<ExitInfo>(&state.exit()).map_err(e)?.filter(|x| x.attempt == attempt);
    let dead = |run: Option<RunInfo>, exit: Option<ExitInfo>| Attempt {
        proc: Proc::Dead,
        run,
        exit,
        leftovers: Vec::new(),
        queued: None,
        polled: false,
    };
    // The end taken already: nothing to ask Slurm.
    if let (Some(how), Some(x)) = (&handle.ended, &mut exit) {
        annotate(x, how, handle.job_id);
        return Ok(dead(run, exit));
    }
    let mut handle = handle.clone();
    // Ended (the handle says so) once this is known: Slurm is not asked again.
    let end = |handle: &Handle, how: &str| {
        let mut h = handle.clone();
        h.ended = Some(how.to_string());
        h.write(state).map_err(e)
    };
    if let Some(why) = bad_handle(state, attempt, &handle) {
        let x = verdict(state, attempt, format!("{RUNNER_VERDICT}{why}")).map_err(e)?;
        end(&handle, "")?;
        return Ok(dead(run, Some(x)));
    }
    let id = match handle.job_id {
        Some(id) => Some(id),
        None => {
            let found = match find_unrecorded(state, &handle) {
                Ok(found) => found,
                Err(_) if exit.is_some() => return Ok(dead(run, exit)),
                Err(err) => return Err(asking(err)),
            };
            if found.is_some() {
                // Found by its output file: recorded, for the shim to check and the next pass to ask.
                handle.job_id = found;
                handle.write(state).map_err(e)?;
            }
            found
        }
    };
    let info = match id {
        // Queued with its worker started is a job requeued (and cancelled below), or one seen
        // in a listing taken before it started: asked again, now.
        Some(id) => match query(id).and_then(|info| match info.state {
            JobState::Queued(_) if run.is_some() => query_fresh(id),
            _ => Ok(info),
        }) {
            Ok(info) => info,
            // The worker's end is recorded: it stands without Slurm's word on the job.
            Err(_) if exit.is_some() => return Ok(dead(run, exit)),
            Err(err) => return Err(asking(err)),
        },
        None if exit.is_some() => {
            end(&handle, "")?;
            return Ok(dead(run, exit));
        }
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
        // started, and is started again under the same name (a job sbatch took after all is
        // then found by it; its shim runs only in the job recorded).
        None if run.is_none() => {
            return Ok(Attempt { proc: Proc::NotStarted, run, exit: None, leftovers: Vec::new(), queued: None, polled: false })
        }
        // It ran (its shim recorded the start), and Slurm has forgotten it since.
        None => JobInfo::gone(0),
    };
    let what = id.map_or_else(|| format!("the Slurm job {}", handle.name), |id| format!("Slurm job {id}"));
    if let (Some(id), false) = (id, info.state == JobState::Gone) {
        if let Some(why) = not_ours(state, attempt, id, &info) {
            let x = match exit {
                Some(x) => x,
                None => verdict(state, attempt, format!("{RUNNER_VERDICT}{why}; it is not cancelled")).map_err(e)?,
            };
            end(&handle, "")?;
            return Ok(dead(run, Some(x)));
        }
    }
    let (proc, queued) = match (&info.state, &mut exit) {
        (JobState::Ended(how), Some(x)) => {
            // Ended by Slurm (cancelled from outside, its time limit, a node lost): said with
            // how the worker ended, for the reason.
            annotate(x, how, id);
            end(&handle, how)?;
            (Proc::Dead, None)
        }
        (JobState::Gone, Some(_)) => {
            end(&handle, "")?;
            (Proc::Dead, None)
        }
        // The shim recorded its exit; Slurm is ending the job (or has not yet seen its batch
        // script end after the shim's): how it ends is a moment away, and is taken then (a job
        // that stays ending is taken as ended).
        (JobState::Ending | JobState::Running, Some(x))
            if Utc::now().signed_duration_since(x.finished_at).to_std().unwrap_or_default() < EXIT_GRACE =>
        {
            (Proc::Starting, None)
        }
        (_, Some(_)) => (Proc::Dead, None),
        (JobState::Queued(_), None) if run.is_some() => {
            // Requeued (by an administrator: submitted with --no-requeue) after its worker
            // started: it would run the attempt twice.
            if let Some(id) = id {
                let _ = scancel(id, &[]);
            }
            exit = Some(
                verdict(state, attempt, format!("{RUNNER_VERDICT}Slurm requeued job {} after its worker started", id.unwrap_or_default()))
                    .map_err(e)?,
            );
            end(&handle, "")?;
            (Proc::Dead, None)
        }
        (JobState::Queued(reason), None) => (Proc::Starting, Some(format!("Slurm job {}: {reason}", id.unwrap_or_default()))),
        (JobState::Suspended(how), None) => (Proc::Starting, Some(format!("Slurm job {} {how} by Slurm", id.unwrap_or_default()))),
        (JobState::Running | JobState::Ending, None) if run.is_some() => (Proc::Alive, None),
        (JobState::Running | JobState::Ending, None) => (Proc::Starting, None),
        // Ended well, yet no exit seen: the shim's record may not have reached this machine's
        // view of the shared filesystem yet.
        (JobState::Ended(how), None)
            if how.starts_with("COMPLETED")
                && run.is_some()
                && info.end.is_some_and(|t| Utc::now().signed_duration_since(t).to_std().unwrap_or_default() < EXIT_GRACE) =>
        {
            (Proc::Starting, None)
        }
        (JobState::Ended(how), None) => {
            exit = Some(
                verdict(state, attempt, format!("{RUNNER_VERDICT}{what} ended {how} without the shim recording the attempt's exit"))
                    .map_err(e)?,
            );
            end(&handle, "")?;
            (Proc::Dead, None)
        }
        (JobState::Gone, None) => {
            exit = Some(
                verdict(state, attempt, format!("{RUNNER_VERDICT}{what} is gone from Slurm without the shim recording the attempt's exit"))
                    .map_err(e)?,
            );
            end(&handle, "")?;
            (Proc::Dead, None)
        }
    };
    Ok(Attempt { proc, run, exit, leftovers: Vec::new(), queued, polled: true })
}

/// Say in `x` how Slurm ended job `id` when that was not its worker's own end (`CANCELLED`, a
/// time limit, a node lost).
fn annotate(x: &mut ExitInfo, how: &str, id: Option<u64>) {
    if how.is_empty() || how.starts_with("COMPLETED") || x.error.as_deref().is_some_and(|e| e.starts_with(RUNNER_VERDICT)) {
        return;
    }
    let what = id.map_or_else(|| "the Slurm job".to_string(), |id| format!("Slurm job {id}"));
    x.error = Some(format!("{RUNNER_VERDICT}{what} ended {how}: {}", x.describe()));
}

/// Record the runner's verdict on `attempt` as its `exit.json`, unless one is there already: the
/// shim's own record is never replaced (made with a link, which fails where one exists, even on
/// a filesystem whose view here lags). Returns the exit that stands.
fn verdict(state: &StateDir, attempt: u32, why: String) -> Result<ExitInfo> {
    let x = ExitInfo::error(attempt, why);
    let path = state.exit();
    let mut bytes = serde_json::to_vec_pretty(&x)?;
    bytes.push(b'\n');
    let tmp = crate::files::write_temp(&path, &bytes)?;
    let linked = std::fs::hard_link(&tmp, &path);
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Ok(()) => Ok(x),
        Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => match read_json::<ExitInfo>(&path)? {
            Some(there) if there.attempt >= attempt => Ok(there),
            // An earlier attempt's: replaced.
            _ => {
                write_json(&path, &x)?;
                Ok(x)
            }
        },
        Err(err) => Err(anyhow::Error::from(err).context(format!("writing {}", path.display()))),
    }
}

use crate::activity::state::{RunInfo, RUNNER_VERDICT};

/// `scancel --me [args] <id>`: only a job of ours is ever cancelled.
fn scancel(id: u64, args: &[&str]) -> Result<()> {
    forget_listing();
    let out = Command::new("scancel").arg("--me").args(args).arg(id.to_string()).output().context("running scancel")?;
    if !out.status.success() {
        bail!("scancel {id}: {}", String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(())
}

/// Stop the job of `handle` in `state`, once proven ours (its handle's name this attempt's, its
/// owner us, its output the attempt's log): `Term` asks the shim (`scancel --batch
/// --signal=TERM`: it stops every process of the attempt, SIGKILL after its grace); `Kill` asks
/// the shim to kill them now (`--signal=USR1`) and cancels the job (`scancel`: Slurm ends every
/// process of it). A queued job is cancelled.
pub(crate) fn stop(state: &StateDir, handle: &Handle, how: Stop) -> Result<()> {
    if handle.ended.is_some() {
        return Ok(());
    }
    if let Some(why) = bad_handle(state, handle.attempt, handle) {
        bail!("{why}");
    }
    let Some(id) = job_id(state, handle)? else { return Ok(()) };
    // A job seen queued in the shared listing may run by now: cancelled outright, its worker
    // would get no grace. Asked again, now, unless it runs (or ended: for good).
    let info = match query(id)? {
        info if matches!(info.state, JobState::Queued(_) | JobState::Suspended(_)) => query_fresh(id)?,
        info => info,
    };
    if matches!(info.state, JobState::Ended(_) | JobState::Gone) {
        return Ok(());
    }
    if let Some(why) = not_ours(state, handle.attempt, id, &info) {
        bail!("{why}: not cancelled");
    }
    match (how, &info.state) {
        (Stop::Term, JobState::Running) => scancel(id, &["--batch", "--signal=TERM"])?,
        (Stop::Kill, JobState::Running) => {
            // The shim kills every process of the attempt at once (as a local SIGUSR1 asks),
            // then Slurm ends the job whatever became of that.
            let _ = scancel(id, &["--batch", "--signal=USR1"]);
            scancel(id, &[])?
        }
        _ => scancel(id, &[])?,
    }
    tracing::info!(job = id, how = ?how, "asked Slurm to stop the job");
    Ok(())
}

/// The job id of `handle` in `state`, found by its output file when sbatch's answer was never
/// recorded.
fn job_id(state: &StateDir, handle: &Handle) -> Result<Option<u64>> {
    match handle.job_id {
        Some(id) => Ok(Some(id)),
        None => find_unrecorded(state, handle),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slurm_handle_holds_a_slot_until_its_attempts_end_or_a_later_one() {
        use crate::worker::runner::holds_slot;
        let dir = tempfile::tempdir().expect("tempdir");
        let state = StateDir(dir.path().to_path_buf());
        let handle =
            Handle { attempt: 1, name: "guild-hall.p.c.1.0a1b2c3d".into(), job_id: Some(7), submitted_at: chrono::Utc::now(), ended: None };
        crate::files::write_json(&Handle::path(&state), &handle).expect("handle");
        assert!(holds_slot(&state, 1), "queued or running for all we know");
        crate::files::write_json(&state.exit(), &ExitInfo::error(2, "a later attempt's".into())).expect("exit");
        assert!(!holds_slot(&state, 1), "a later attempt's exit: attempt 1 has ended");
        assert!(!crate::worker::liveness::busy(&state, "boot"));
        crate::files::write_json(&state.exit(), &ExitInfo::error(1, "its own".into())).expect("exit");
        assert!(!holds_slot(&state, 1));
        std::fs::remove_file(state.exit()).expect("rm");
        crate::files::write_json(&Handle::path(&state), &Handle { ended: Some(String::new()), ..handle }).expect("handle");
        assert!(!holds_slot(&state, 1), "its end taken");
    }

    #[test]
    fn slurms_time_limit_is_a_backstop_after_guild_halls() {
        let s = Duration::from_secs;
        // 1 h + 30 s grace + a minute: 62 minutes (rounded up).
        assert_eq!(minutes(s(3600), s(30)), 62);
        assert_eq!(minutes(s(1), s(0)), 2);
    }

    /// `squeue --json`'s answer with `jobs`, each given as its JSON fields.
    fn answer(jobs: &[&str]) -> Vec<u8> {
        format!(r#"{{"meta": {{"plugin": {{"type": "openapi/v0.0.38"}}}}, "errors": [], "jobs": [{}]}}"#, jobs.join(",")).into_bytes()
    }

    #[test]
    fn squeue_json_says_state_reason_owner_and_output() {
        let jobs = parse_jobs(&answer(&[
            r#"{"job_id": 7, "name": "guild-hall.p.c.1.ab", "user_id": 0, "job_state": "PENDING", "state_reason": "Resources", "standard_output": "/h/a b/attempt-1.log", "end_time": 1900000000, "submit_time": 1700000000}"#,
            r#"{"job_id": 8, "name": "x", "user_id": 1000, "job_state": ["RUNNING"], "state_reason": "None", "standard_output": "/h/50%%/attempt-1.log", "end_time": {"set": true, "infinite": false, "number": 1900000000}}"#,
            r#"{"job_id": 9, "job_state": "SUSPENDED"}"#,
            r#"{"job_id": 10, "job_state": "CANCELLED", "state_reason": "None", "end_time": 1700000100}"#,
            r#"{"job_id": 11, "job_state": ["FAILED"], "state_reason": "NonZeroExitCode", "end_time": {"set": false, "number": 0}}"#,
            r#"{"job_id": 12, "job_state": ["COMPLETED", "COMPLETING"]}"#,
            r#"{"name": "no id"}"#,
        ]))
        .expect("parse");
        assert_eq!(jobs.iter().map(|j| j.job_id).collect::<Vec<_>>(), [7, 8, 9, 10, 11, 12], "a job without an id is skipped");
        let j = &jobs[0];
        assert_eq!((j.state.clone(), j.name.as_str(), j.uid), (JobState::Queued("Resources".into()), "guild-hall.p.c.1.ab", Some(0)));
        assert!(j.end.is_none(), "a queued job's end is its time limit's, not an end");
        assert!(j.submitted.is_some());
        assert!(j.writes_to(Path::new("/h/a b/attempt-1.log")), "a path with a space");
        assert!(!j.writes_to(Path::new("/h/a b/attempt-2.log")));
        assert!(!j.writes_to(Path::new("/h/a")));
        assert_eq!((jobs[1].state.clone(), jobs[1].uid), (JobState::Running, Some(1000)), "a state as a list (23.02 on)");
        assert!(jobs[1].writes_to(Path::new("/h/50%/attempt-1.log")), "the output as given to sbatch, its % doubled");
        assert!(jobs[1].end.is_none());
        assert_eq!(jobs[2].state, JobState::Suspended("suspended".into()));
        assert_eq!(jobs[3].state, JobState::Ended("CANCELLED".into()));
        assert!(jobs[3].end.is_some());
        assert_eq!(jobs[4].state, JobState::Ended("FAILED (NonZeroExitCode)".into()));
        assert!(jobs[4].end.is_none(), "an end time not set");
        assert_eq!(jobs[5].state, JobState::Ending);
        assert!(!jobs[2].writes_to(Path::new("")), "no output file is no one's log");
        assert!(parse_jobs(b"{}").is_err(), "no jobs list");
        assert!(parse_jobs(b"squeue: error").is_err());
    }

    /// A job's owner may set its name to anything: what looks like other fields in it (the
    /// owner, the output file, the state), quotes, bytes that are not UTF-8. It stays a name.
    #[test]
    fn a_forged_job_name_is_only_a_name() {
        let mut bytes = answer(&[
            r#"{"job_id": 5, "name": "x UserId=nobody(65534) StdOut=/nowhere JobState=CANCELLED \"user_id\": 65534, NAMEBYTE", "user_id": 1000, "job_state": "RUNNING", "state_reason": "None", "standard_output": "/h/s/c/attempt-1.log"}"#,
        ]);
        // A byte that is not UTF-8, as Slurm passes it on.
        let at = bytes.windows(8).position(|w| w == b"NAMEBYTE").expect("marker");
        bytes.splice(at..at + 8, [0xff, b'y']);
        let jobs = parse_jobs(&bytes).expect("a name not UTF-8 does not fail the answer");
        let j = &jobs[0];
        assert_eq!((j.job_id, j.uid, j.state.clone()), (5, Some(1000), JobState::Running), "{j:?}");
        assert!(j.writes_to(Path::new("/h/s/c/attempt-1.log")), "{j:?}");
        assert!(!j.writes_to(Path::new("/nowhere")));
        assert!(j.name.starts_with("x UserId=nobody(65534) StdOut=/nowhere"), "{j:?}");
    }

    #[test]
    fn an_output_file_says_whose_commission_attempt_it_is() {
        let dir = Path::new("/h/state/p/commissions");
        assert_eq!(log_of(dir, "/h/state/p/commissions/c1/attempt-2.log"), Some(("c1".into(), 2)));
        assert_eq!(log_of(dir, "/h/state/p/commissions/c1/attempt-x.log"), None);
        assert_eq!(log_of(dir, "/h/state/q/commissions/c1/attempt-2.log"), None, "another project's");
        assert_eq!(log_of(dir, "/h/state/p/commissions/a/c1/attempt-2.log"), None);
        assert_eq!(log_of(dir, "/nowhere"), None);
        let odd = Path::new("/h/5%/commissions");
        assert_eq!(log_of(odd, "/h/5%%/commissions/c%%1/attempt-1.log"), Some(("c%1".into(), 1)), "as given to sbatch");
        assert_eq!(log_of(odd, "/h/5%/commissions/c%1/attempt-1.log"), Some(("c%1".into(), 1)), "expanded");
    }

    #[test]
    fn a_job_name_says_whose_attempt_it_is() {
        assert_eq!(attempt_of("guild-hall.p-1.c1.2.0a1b2c3d", "p-1"), Some(("c1".into(), 2)));
        assert_eq!(attempt_of("guild-hall.p.v1.2.x.3.0a1b2c3d", "p"), Some(("v1.2.x".into(), 3)));
        assert_eq!(attempt_of("guild-hall.p.c1.2.0a1b2c3d", "q"), None, "another project's");
        assert_eq!(attempt_of("guild-hall.pp.c1.2.0a1b2c3d", "p"), None, "another project's");
        assert_eq!(attempt_of("wrap", "p"), None);
        assert_eq!(attempt_of("guild-hall.p.c1.x.0a1b2c3d", "p"), None);
        assert!(name_fits("guild-hall.p.q.c1.2.0a1b2c3d", "c1", 2), "a project name with a dot");
        assert!(!name_fits("guild-hall.p.c1.2.0a1b2c3d", "c1", 3), "another attempt");
        assert!(!name_fits("guild-hall.p.c2.2.0a1b2c3d", "c1", 2), "another activity");
        assert!(!name_fits("train", "c1", 2));
    }

    #[test]
    fn the_runners_verdict_never_replaces_the_shims_exit() {
        let dir = tempfile::tempdir().expect("tempdir");
        let state = StateDir(dir.path().to_path_buf());
        let shims = ExitInfo { code: Some(0), error: None, ..ExitInfo::error(2, String::new()) };
        write_json(&state.exit(), &shims).expect("exit");
        assert_eq!(verdict(&state, 2, "lost".into()).expect("verdict"), shims, "the shim's record stands");
        assert_eq!(read_json::<ExitInfo>(&state.exit()).expect("read"), Some(shims));
        let later = verdict(&state, 3, "lost".into()).expect("verdict");
        assert_eq!(later.error.as_deref(), Some("lost"), "an earlier attempt's record is replaced");
        assert_eq!(read_json::<ExitInfo>(&state.exit()).expect("read"), Some(later));
        std::fs::remove_file(state.exit()).expect("rm");
        assert_eq!(verdict(&state, 4, "lost".into()).expect("verdict").attempt, 4, "none there");
        assert_eq!(std::fs::read_dir(dir.path()).expect("ls").count(), 1, "no temp file left");
    }

    #[test]
    fn a_percent_in_the_output_path_is_doubled() {
        assert_eq!(escape_percent(std::ffi::OsStr::new("/h/50%/a.log")), OsString::from("/h/50%%/a.log"));
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
