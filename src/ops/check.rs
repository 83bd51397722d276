//! `check`: every artifact (commissions, meetings, plans) and worker package validated as the
//! reconciler reads them — dependency cycles and unusable workers included — and, reported
//! apart, the work still to run that waits for its worker's package, the orphans of the home
//! and the attempts under way in another home (the home's state, not the artifacts').

use std::path::Path;

use anyhow::Result;

use crate::artifact::{Problem, Status};
use crate::commission::observe::{observe, Observed};
use crate::config::{Home, Project};

/// What `check` found.
#[derive(Debug)]
pub struct Report {
    /// What is wrong in the artifacts and packages: `check` fails on any.
    pub problems: Vec<Problem>,
    /// What is left of artifacts that are gone (`guild-hall gc` removes it): reported only.
    pub orphans: Vec<Problem>,
    /// What the artifacts claim that this home and this repository cannot confirm: work at
    /// work in another home (or a lost one), and finished work whose commit is not on the
    /// integration branch here. Reported only, with what to do.
    pub unsettled: Vec<Problem>,
    /// Commissions still to run that wait for their worker's package to be installed, and why
    /// (as the pass says it in `reason:`). Reported only.
    pub waiting: Vec<Problem>,
    pub commissions: usize,
    pub meetings: usize,
    pub plans: usize,
    pub packages: usize,
}

/// Validate the project's artifacts and worker packages; find the home's orphans.
// Long: one list of every check `check` makes, in the order its report says them.
pub fn check(home: &Home, project: &Project) -> Result<Report> {
    // A link at `.lore` or one of its dirs: nothing is read through it, and that is all there
    // is to say until it is a directory.
    let links = project.lore_links();
    if !links.is_empty() {
        let problems = links.iter().map(|l| Problem::new(l, 1, 1, crate::artifact::lore_link_problem(l))).collect();
        let none = Vec::new;
        return Ok(Report {
            problems,
            orphans: none(),
            unsettled: none(),
            waiting: none(),
            commissions: 0,
            meetings: 0,
            plans: 0,
            packages: 0,
        });
    }
    let snap = observe(home, project)?;
    let mut problems = snap.problems.clone();
    // A package missing what an attempt needs (its command, posture or compact file, a program
    // it requires on PATH): said at its worker.yaml, whether or not work waits for it.
    problems.extend(snap.workers.unready_problems.iter().cloned());
    problems.extend(names_not_utf8(project));
    problems.extend(crate::commission::decide::cycle_problems(&snap, &crate::commission::decide::dependency_cycles(&snap)));
    // Waiting for its worker's package is said (a person installs it), not failed on, as
    // waiting for dependencies is not (those are other work's outputs, in the normal flow).
    let mut waiting = Vec::new();
    for o in &snap.commissions {
        let a = &o.artifact;
        // Only work still to run needs its worker (an ended one, or a draft, none); a broken
        // package is said once, at its own worker.yaml.
        if still_to_run(o) {
            if let Some(why) = snap.workers.cannot_start(&a.worker) {
                waiting.push(at_key(&a.path, "worker", format!("commission {} waits: {why}", a.id)));
            }
            if let Some(t) = crate::commission::decide::not_before(o).filter(|t| *t > chrono::Utc::now()) {
                let at = t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
                let why = format!("commission {} waits until {at} (not_before: its agent hit a usage or rate limit)", a.id);
                waiting.push(at_key(&a.path, "not_before", why));
            }
        }
    }
    let now = crate::activity::timeline::timestamp(chrono::Utc::now());
    let (meetings, meeting_problems) = crate::meeting::observe::observe(home, project, &snap.workers, &now)?;
    problems.extend(meeting_problems);
    for o in &meetings.meetings {
        // An ended meeting needs no worker; a request or an open meeting waits for its
        // worker's package (the pass puts an open one back to `requested`, saying so).
        if o.meeting.status.is_some_and(|s| s.is_final()) {
            continue;
        }
        let worker = &o.meeting.worker;
        if let Some(why) = snap.workers.not_installed(worker) {
            waiting.push(at_key(&o.meeting.path, "worker", format!("meeting {} waits: {why}", o.meeting.id)));
        } else if let Err(why) = snap.workers.for_meeting(worker) {
            problems.push(at_key(&o.meeting.path, "worker", why.to_string()));
        }
    }
    let (plans, plan_problems) = crate::plan::observe::observe(home, project, &snap.workers, &now, 0)?;
    problems.extend(plan_problems);
    for o in &plans.plans {
        // A plan still to start waits for its tasks' workers (the pass holds it pending); one
        // under way needs them; one over, or a draft, none.
        use crate::artifact::plan::PlanStatus;
        let status = o.record.as_ref().map(|r| r.status).or(o.plan.status).unwrap_or(PlanStatus::Pending);
        let to_start = status == PlanStatus::Pending && o.integrated.is_none();
        if !to_start && !status.is_active() {
            continue;
        }
        for t in o.plan.tasks() {
            if let Some(why) = snap.workers.cannot_start(&t.worker) {
                let at = Problem::at_value(&o.plan.path, &t.path_of("worker"), String::new());
                if to_start {
                    waiting.push(Problem { message: format!("plan {} waits: task {} ({}): {why}", o.plan.id, t.canonical, t.label), ..at });
                } else {
                    problems.push(Problem { message: format!("wave {}, task {}: {why}", t.wave, t.label), ..at });
                }
            }
        }
        if let Some(f) = &o.plan.fixer {
            if let Err(why) = snap.workers.for_commission(f) {
                problems.push(at_key(&o.plan.path, "fixer", format!("fixer: {why}")));
            }
        }
    }
    problems.extend(workspace_problems(project, &snap.workers));
    problems.extend(reviewer_problems(project, &snap));
    let mut unsettled: Vec<Problem> = snap
        .commissions
        .iter()
        .filter_map(|o| {
            Some(at_key(&o.artifact.path, "status", format!("commission {}: {}", o.artifact.id, o.elsewhere.as_ref()?.describe())))
        })
        .collect();
    // Ended on the integration branch while the checkout says it is to run: the same line as
    // the pass's note.
    unsettled.extend(snap.commissions.iter().filter_map(|o| Some(o.integrated.as_ref()?.note(&o.artifact.path))));
    unsettled.extend(plans.plans.iter().filter_map(|o| Some(o.integrated.as_ref()?.note(&o.plan.path))));
    unsettled.extend(meetings.meetings.iter().filter_map(|o| {
        Some(at_key(&o.meeting.path, "status", crate::meeting::decide::elsewhere(&o.meeting, o.record.as_ref(), o.held_here)?))
    }));
    unsettled.extend(
        plans
            .plans
            .iter()
            .filter_map(|o| Some(at_key(&o.plan.path, "status", crate::plan::decide::elsewhere(&o.plan, o.record.as_ref())?))),
    );
    unsettled.extend(not_landed(project, &snap, &plans, &mut problems)?);
    // Orphans are reported, not failed on: they are the home's state, not the artifacts'.
    let orphans: Vec<Problem> = crate::ops::gc::inventory(home, project)?
        .iter()
        .map(|o| Problem::new(&o.artifact, 1, 1, format!("{} (guild-hall gc removes it)", o.describe())))
        .collect();
    Ok(Report {
        problems: by_file_and_line(problems),
        orphans,
        unsettled,
        waiting,
        commissions: snap.commissions.len(),
        meetings: meetings.meetings.len(),
        plans: plans.plans.len(),
        packages: snap.workers.packages.len(),
    })
}

/// A commission this home is still to run, which the pass blocks when it must wait: pending or
/// blocked (not a draft), neither another home's nor ended on the integration branch.
pub(crate) fn still_to_run(o: &Observed) -> bool {
    matches!(o.artifact.status, None | Some(Status::Pending | Status::Blocked)) && o.elsewhere.is_none() && o.integrated.is_none()
}

/// `problems` with each file's together, in the order the files first appear, and each file's
/// in the order of its lines (then columns): as a person reads the file.
pub(crate) fn by_file_and_line(problems: Vec<Problem>) -> Vec<Problem> {
    let mut files: Vec<std::path::PathBuf> = Vec::new();
    for p in &problems {
        if !files.contains(&p.path) {
            files.push(p.path.clone());
        }
    }
    let mut problems = problems;
    // Stable: problems at one place keep their order.
    problems.sort_by_key(|p| (files.iter().position(|f| *f == p.path), p.line, p.column));
    problems
}

/// The entries of the control-plane dirs whose names are not UTF-8: no artifact's or
/// package's (ids are ASCII), so every reader leaves them out; `check` says so, naming each
/// (lossily: the bytes that are not UTF-8 shown as `\u{FFFD}`).
fn names_not_utf8(project: &Project) -> Vec<Problem> {
    let dirs = [project.commissions_dir(), project.meetings_dir(), project.plans_dir(), crate::worker::project_workers_dir(&project.root)];
    let mut out = Vec::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        let mut bad: Vec<std::path::PathBuf> =
            entries.filter_map(|e| e.ok()).filter(|e| e.file_name().to_str().is_none()).map(|e| e.path()).collect();
        bad.sort();
        for path in bad {
            let msg = "its name is not UTF-8, so it is no artifact or package and is not read (an id is ASCII letters, digits, `-`, `_`, `.`): rename it";
            // Lossily: a problem's path is text (`check --json` too).
            out.push(Problem::new(std::path::Path::new(&*path.to_string_lossy()), 1, 1, msg));
        }
    }
    out
}

/// Finished work whose commit the integration branch here does not have: a completed
/// commission whose timeline names the commit its attempt landed as, a plan task its artifact
/// says is integrated — while no commit on the branch carries its trailer (a clone whose
/// integration branch was not taken from the remote, say). Nothing is run again for it; the
/// person is told where the work is missing. A timeline that cannot be read is one of
/// `problems`, at its path; the others are still looked at.
fn not_landed(
    project: &Project,
    snap: &crate::commission::observe::Snapshot,
    plans: &crate::plan::decide::Snapshot,
    problems: &mut Vec<Problem>,
) -> Result<Vec<Problem>> {
    use crate::activity::{merge, names, timeline};
    let branch = &project.config.integration_branch;
    let repo = crate::activity::git::open(&project.root)?;
    let on_branch = merge::trailers_on(&repo, branch)?;
    let missing = |what: String| {
        format!("{what}, but no commit on {branch} here carries its trailer: this integration branch does not have that work (bring in the work from where it landed: `guild-hall sync` fast-forwards {branch} to a remote's copy that is ahead; else `git merge origin/{branch}` on {branch} — never a reset, which would drop this branch's own work)")
    };
    let mut out = Vec::new();
    for o in snap.commissions.iter().filter(|o| o.artifact.status == Some(crate::artifact::Status::Completed)) {
        let attempt = o.artifact.attempt();
        let path = timeline::path_for(&o.artifact.path);
        let log = match timeline::read(&path) {
            Ok(log) => log,
            Err(e) => {
                problems.push(Problem::new(&path, 1, 1, format!("its timeline cannot be read: {e:#}")));
                continue;
            }
        };
        let key = format!("merge:{attempt}");
        // Landed with a commit (a worker that changed nothing landed none, and has no trailer).
        let landed = log
            .iter()
            .any(|e| e["kind"] == "merge" && e["key"] == key.as_str() && e["commit"] != crate::activity::timeline::NOTHING_TO_MERGE);
        if landed && !on_branch.contains(&names::commission_trailer(&o.artifact.id, attempt)) {
            let what = format!("commission {} is completed and its attempt {attempt} landed a commit", o.artifact.id);
            out.push(at_key(&o.artifact.path, "status", missing(what)));
        }
    }
    for o in &plans.plans {
        for t in o.plan.tasks().filter(|t| o.plan.task_state(&t.canonical) == Some("integrated")) {
            if !on_branch.contains(&names::task_trailer(&t.canonical)) {
                let what = format!("plan {}: task {} is integrated", o.plan.id, t.canonical);
                out.push(at_key(&o.plan.path, "tasks", missing(what)));
            }
        }
    }
    Ok(out)
}

/// `workspace.copy` entries, the project's and each package's, that are not ignored files of
/// the person's checkout (tracked, not ignored, outside it): each at its file's `workspace:`.
fn workspace_problems(project: &Project, workers: &crate::worker::Catalog) -> Vec<Problem> {
    let at = |file: &Path, why: String| {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        let seg = [crate::artifact::locate::Seg::key("workspace")];
        let (line, col) = crate::artifact::locate::position(&text, &seg, crate::artifact::locate::At::Value).unwrap_or((1, 1));
        Problem::new(file, line, col, why)
    };
    let config = project.root.join(crate::config::ProjectConfig::PATH);
    let mut out: Vec<Problem> = crate::worker::workspace::copy_problems(&project.root, &project.config.workspace)
        .into_iter()
        .map(|p| at(&config, p.to_string()))
        .collect();
    for pkg in workers.packages.values() {
        let own = crate::worker::workspace::copy_problems(&project.root, &pkg.manifest.workspace);
        out.extend(own.into_iter().map(|p| at(&pkg.dir.join("worker.yaml"), p.to_string())));
    }
    out
}

/// `reviewers:` naming a worker that is not installed (or cannot review, as a commission's
/// worker does its work): at the project's `.lore/guild-hall.yaml`, a package's `worker.yaml`,
/// or the commission naming it.
fn reviewer_problems(project: &Project, snap: &crate::commission::observe::Snapshot) -> Vec<Problem> {
    let unusable = |names: &[String]| -> Vec<String> {
        names.iter().filter_map(|n| snap.workers.for_commission(n).err().map(|why| format!("reviewer {n}: {why}"))).collect()
    };
    // In a YAML file of its own (no frontmatter): at the key, found by the parser's marks.
    let in_yaml = |file: &Path, why: String| {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        let seg = [crate::artifact::locate::Seg::key("reviewers")];
        let (line, col) = crate::artifact::locate::position(&text, &seg, crate::artifact::locate::At::Value).unwrap_or((1, 1));
        Problem::new(file, line, col, why)
    };
    let mut out = Vec::new();
    let config = project.root.join(crate::config::ProjectConfig::PATH);
    for why in unusable(project.config.reviewers.as_deref().unwrap_or_default()) {
        out.push(in_yaml(&config, why));
    }
    for pkg in snap.workers.packages.values() {
        for why in unusable(pkg.manifest.reviewers.as_deref().unwrap_or_default()) {
            out.push(in_yaml(&pkg.dir.join("worker.yaml"), why));
        }
    }
    for o in &snap.commissions {
        for why in unusable(o.artifact.reviewers.as_deref().unwrap_or_default()) {
            out.push(at_key(&o.artifact.path, "reviewers", why));
        }
    }
    out
}

/// A problem at `key` of the frontmatter of the artifact at `path` (at its start when the key
/// cannot be found).
fn at_key(path: &Path, key: &str, why: impl Into<String>) -> Problem {
    Problem::at_key(path, key, why)
}
