//! Where a worker's captured output is: a commission's attempt, a wave task's, a plan's last
//! verify run. Reading and showing it is the face's.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};

use crate::activity::state::{Record, StateDir};
use crate::config::{Home, Project};
use crate::files::read_json;

/// Whose attempt a log is: what says when it has ended.
enum Whose {
    Commission,
    Task { plan: String, canonical: String },
    Verify { plan: String },
}

/// The runtime dir of commission or wave task `id`, the attempt asked for (else its latest)
/// and whose it is.
struct Located {
    state: StateDir,
    attempt: u32,
    whose: Whose,
}

/// The log of commission or wave task `id` (a task by its canonical id) at `attempt`, else its
/// latest: the path and the attempt. An attempt it never had is refused naming the ones it had.
pub fn worker_log(home: &Home, project: &Project, id: &str, attempt: Option<u32>) -> Result<(PathBuf, u32)> {
    let l = locate(home, project, id, attempt)?;
    Ok((l.state.log(l.attempt), l.attempt))
}

fn locate(home: &Home, project: &Project, id: &str, attempt: Option<u32>) -> Result<Located> {
    let (state, attempt, what, latest, whose) = match super::plan::task(project, id)? {
        Some((plan, task)) => {
            let state = StateDir(home.task_state(&project.name, &plan.id, &task.slug()));
            let recorded =
                crate::plan::observe::record(home, project, &plan.id)?.and_then(|r| r.tasks.get(&task.canonical).map(|t| t.attempt));
            let whose = Whose::Task { plan: plan.id.clone(), canonical: task.canonical.clone() };
            match attempt.or(recorded.filter(|a| *a > 0)) {
                Some(a) => (state, a, "task", recorded.unwrap_or(0), whose),
                None => bail!("{id} has not started yet: no logs"),
            }
        }
        None => {
            crate::artifact::ids::validate_id(id)?;
            let state = StateDir(home.commission_state(&project.name, id));
            if !project.commission_path(id).exists() && !state.0.exists() {
                // Said as `timeline` and `status` say it.
                return Err(
                    crate::tools::Failure::not_found(crate::artifact::Wording::COMMISSION.missing(id, &project.commissions_dir())).into()
                );
            }
            let recorded = read_json::<Record>(&state.record())?.map(|r| r.attempt).unwrap_or(0);
            let attempt = match attempt {
                Some(a) => a,
                None if recorded > 0 => recorded,
                None => bail!("{id} has not been dispatched yet: no logs"),
            };
            (state, attempt, "commission", recorded, Whose::Commission)
        }
    };
    let path = state.log(attempt);
    if (attempt == 0 || attempt > latest) && !path.exists() {
        let had = match latest {
            0 => "it has not run yet".to_string(),
            1 => "its attempts: 1".to_string(),
            n => format!("its attempts: 1 to {n}"),
        };
        return Err(crate::tools::Failure::not_found(format!("{what} {id} has no attempt {attempt} ({had})")).into());
    }
    Ok(Located { state, attempt, whose })
}

/// Follow the log of commission or wave task `id` at `attempt` (else its latest) as
/// [`worker_log`] names it: `out` gets its bytes as they are written (a rotated log's earlier
/// part first), and it returns once the attempt has ended and every byte was given.
pub fn follow_worker_log(
    home: &Home,
    project: &Project,
    id: &str,
    attempt: Option<u32>,
    out: &mut dyn FnMut(&[u8]) -> Result<()>,
) -> Result<()> {
    follow(home, project, &locate(home, project, id, attempt)?, out)
}

/// Follow [`plan_log`]'s log: a task's as [`follow_worker_log`] does, the latest verify run's
/// until that run has ended.
pub fn follow_plan_log(
    home: &Home,
    project: &Project,
    id: &str,
    task: Option<&str>,
    verify: bool,
    out: &mut dyn FnMut(&[u8]) -> Result<()>,
) -> Result<()> {
    if !verify {
        let plan = crate::plan::observe::load(project, id)?;
        let t = plan.find_task(task.context("name a task (its canonical id or label), or --verify")?)?;
        return follow_worker_log(home, project, &t.canonical, None, out);
    }
    let runs = crate::plan::observe::record(home, project, id)?.map(|r| r.verify_runs).unwrap_or(0);
    let l = Located { state: StateDir(home.verify_state(&project.name, id)), attempt: runs, whose: Whose::Verify { plan: id.to_string() } };
    follow(home, project, &l, out)
}

fn follow(home: &Home, project: &Project, l: &Located, out: &mut dyn FnMut(&[u8]) -> Result<()>) -> Result<()> {
    let path = l.state.log(l.attempt);
    let mut earlier = path.clone().into_os_string();
    earlier.push(".1");
    if let Ok(before) = std::fs::read(&earlier) {
        out(&before)?;
    }
    let mut tail = Tail { path, file: None };
    super::follow::until_ended(std::slice::from_ref(&l.state.0), || ended(home, project, l), || tail.read_new(out))
}

/// Whether attempt `l.attempt` has ended: its shim wrote its exit (after the log drained),
/// or guild-hall has moved on from it (a later attempt, or a status no worker belongs to: a
/// shim that died without its exit is judged so by the next pass). A runtime dir that is gone
/// (the commission removed) has nothing more to write.
fn ended(home: &Home, project: &Project, l: &Located) -> Result<bool> {
    let exit = read_json::<crate::activity::state::ExitInfo>(&l.state.exit()).ok().flatten();
    if exit.is_some_and(|x| x.attempt >= l.attempt) {
        return Ok(true);
    }
    Ok(match &l.whose {
        Whose::Commission => match read_json::<Record>(&l.state.record()).ok().flatten() {
            Some(r) => r.attempt > l.attempt || (r.attempt == l.attempt && !r.status.is_active()),
            None => !l.state.0.exists(),
        },
        Whose::Task { plan, canonical } => {
            let record = crate::plan::observe::record(home, project, plan)?;
            match record.as_ref().and_then(|r| r.tasks.get(canonical)) {
                Some(t) => t.attempt > l.attempt || t.state != crate::plan::decide::TaskState::Running,
                None => record.is_none_or(|r| !r.status.is_active()),
            }
        }
        Whose::Verify { plan } => crate::plan::observe::record(home, project, plan)?
            .is_none_or(|r| r.verify_runs > l.attempt || r.status != crate::artifact::plan::PlanStatus::Verifying),
    })
}

/// A log read as it grows, through one open handle: when the shim rotates it (renames it to
/// `<log>.1` and starts a new one), the handle reads the rest of the renamed part, then the new
/// log from its start.
struct Tail {
    path: PathBuf,
    /// The log as opened, and its inode.
    file: Option<(std::fs::File, u64)>,
}

impl Tail {
    fn read_new(&mut self, out: &mut dyn FnMut(&[u8]) -> Result<()>) -> Result<()> {
        use std::io::Read;
        use std::os::unix::fs::MetadataExt;
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            if self.file.is_none() {
                match std::fs::File::open(&self.path) {
                    Ok(f) => {
                        let ino = f.metadata().with_context(|| format!("reading {}", self.path.display()))?.ino();
                        self.file = Some((f, ino));
                    }
                    // Not written yet: the worker has not started.
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
                    Err(e) => return Err(e).with_context(|| format!("opening {}", self.path.display())),
                }
            }
            let Some((file, ino)) = self.file.as_mut() else { return Ok(()) };
            loop {
                let n = match file.read(&mut buf) {
                    Ok(n) => n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(e).with_context(|| format!("reading {}", self.path.display())),
                };
                if n == 0 {
                    break;
                }
                out(&buf[..n])?;
            }
            // Rotated: what the handle holds is `<log>.1` now, read to its end; the new log next.
            match std::fs::metadata(&self.path) {
                Ok(m) if m.ino() != *ino => self.file = None,
                _ => return Ok(()),
            }
        }
    }
}

/// The log of plan `id`'s latest verify run (`verify`), or of its task `task` (its canonical
/// id, or a label no other task has: [`crate::artifact::plan::Plan::find_task`]) at its
/// latest attempt.
pub fn plan_log(home: &Home, project: &Project, id: &str, task: Option<&str>, verify: bool) -> Result<PathBuf> {
    let plan = crate::plan::observe::load(project, id)?;
    let record = crate::plan::observe::record(home, project, id)?;
    if verify {
        let runs = record.map(|r| r.verify_runs).unwrap_or(0);
        return Ok(StateDir(home.verify_state(&project.name, id)).log(runs));
    }
    let name = task.context("name a task (its canonical id or label), or --verify")?;
    let t = plan.find_task(name)?;
    let attempt = record.and_then(|r| r.tasks.get(&t.canonical).map(|x| x.attempt)).unwrap_or(1);
    Ok(StateDir(home.task_state(&project.name, id, &t.slug())).log(attempt))
}
