//! What people and tools do to plans: write a new plan (validated as the reconciler will read
//! it, before anything is written) and ask for a transition (`retry`: `status: pending`,
//! `cancel`: `status: cancelled`) by writing it into the file as a person would.

use anyhow::{bail, Result};
use serde_yaml_ng::Value;

use crate::artifact::plan::{Plan, PlanStatus, Task};
use crate::artifact::write::Edit;
use crate::config::{Home, Project};
use crate::plan::decide::PlanRecord;
use crate::tools::plan::{Listed, Row, Shown, ShownResult, ShownTask};

/// A plan to write.
#[derive(Debug, Clone)]
pub struct NewPlan {
    pub title: String,
    /// The waves as written: a list of waves, each a list of tasks `{id, worker, title, prompt}`.
    pub waves: Value,
    /// The text `waves` was read from, when it was (a file, stdin): the plan keeps it verbatim
    /// and its problems are said against it, at its own line:col.
    pub waves_text: Option<WavesText>,
    /// Default: the title, slugified.
    pub id: Option<String>,
    pub parallelism: usize,
    /// The integration verify command, run after each wave.
    pub verify: Option<Vec<String>>,
    pub fixer: Option<String>,
    pub draft: bool,
}

/// The WAVES input of `plan create`, as read.
#[derive(Debug, Clone)]
pub struct WavesText {
    /// What problems name: the file's path, or `<stdin>`.
    pub origin: String,
    pub text: String,
}

/// The shape the WAVES input must have, shown when it has another.
const WAVES_SHAPE: &str = "- - {id: a, worker: scribe, prompt: \"...\"}   # wave 1, task a\n  - {id: b, worker: scribe, prompt: \"...\"}   # wave 1, task b\n- - {id: c, worker: scribe, prompt: \"...\"}   # wave 2";

/// Write a new plan artifact (the file a person would write); its id: `--id`, refused if
/// anything of it exists, else the first free one from the title (ids are never reused).
/// Nothing is written for a plan the reconciler would refuse, nor over a file that exists;
/// a problem with the waves is said against the WAVES input ([`WavesText`]), never against
/// the plan file that was not written.
pub fn create(home: &Home, project: &Project, new: &NewPlan) -> Result<String> {
    let base = new.id.clone().unwrap_or_else(|| crate::artifact::ids::slugify_or(&new.title, "plan"));
    crate::artifact::ids::validate_id(&base)?;
    let origin = new.waves_text.as_ref().map(|w| w.origin.as_str()).unwrap_or("waves");
    if !new.waves.is_sequence() {
        let hint = match new.waves.get("waves") {
            Some(_) => " (this one is a mapping with `waves:`: give what is under `waves:`, not the mapping)",
            None => "",
        };
        let at = if new.waves_text.is_some() { ":1:1" } else { "" };
        bail!("{origin}{at}: must be a list of waves (a sequence of sequences of tasks){hint}, e.g.\n{WAVES_SHAPE}");
    }
    let rendered = crate::artifact::plan::render(&crate::artifact::plan::New {
        title: new.title.clone(),
        status: if new.draft { PlanStatus::Draft } else { PlanStatus::Pending },
        parallelism: new.parallelism,
        verify: new.verify.clone(),
        fixer: new.fixer.clone(),
        waves: &new.waves,
        waves_text: new.waves_text.as_ref().map(|w| w.text.as_str()),
    });
    let (text, waves_line) = (rendered.text, rendered.waves_line);
    // Validated as the reconciler will read it, before anything is written (each problem on a
    // line of its own): a problem in the waves at the WAVES input's own line:col; one of
    // another key (from a flag) by its words alone, the plan file not existing.
    let plan = Plan::parse(&project.plan_path(&base), &text).map_err(|problems| {
        let said: Vec<String> = problems
            .iter()
            .map(|p| match waves_line {
                Some(w) if p.line > w => format!("{origin}:{}:{}: {}", p.line - w, p.column.saturating_sub(2).max(1), p.message),
                _ => p.message.clone(),
            })
            .collect();
        anyhow::anyhow!("{}", said.join("\n"))
    })?;
    let catalog = crate::worker::Catalog::discover(&project.root, &home.workers_dir());
    for t in plan.tasks() {
        super::commission::usable_worker(&catalog, &t.worker).map_err(|e| match waves_line {
            Some(w) => {
                use crate::artifact::frontmatter::{split, value_position};
                let (line, col) = split(&text).map(|sp| value_position(&sp, &t.path_of("worker"))).unwrap_or((w + 1, 3));
                anyhow::anyhow!("{origin}:{}:{}: task {}: {e}", line.saturating_sub(w).max(1), col.saturating_sub(2).max(1), t.label)
            }
            None => anyhow::anyhow!("task {}: {e}", t.label),
        })?;
    }
    crate::artifact::make_lore_dir(&project.plans_dir())?;
    super::create_with_free_id(home, project, crate::activity::kind::Name::Plan, &base, new.id.is_some(), |id| {
        crate::artifact::create_new(&project.plan_path(id), &text, "plan", Plan::parse).map(|_| ())
    })
}

/// What this home knows of plan `plan`: its record, or the one it takes when its own says less
/// than the file and git ([`crate::plan::observe::known`]), else — a plan its file says is
/// over, in a home that never ran it — what the reconciler takes from the file
/// ([`PlanRecord::adopt`]).
pub fn record(home: &Home, project: &Project, plan: &Plan) -> Result<Option<PlanRecord>> {
    let own = crate::plan::observe::record(home, project, &plan.id)?;
    let keys = crate::activity::timeline::keys(&crate::activity::timeline::path_for(&plan.path))?;
    let (known, _) = crate::plan::observe::known(home, project, plan, own, &keys);
    Ok(known.or_else(|| PlanRecord::adopt(plan, &keys)))
}

/// Where plan `plan` is: what the reconciler recorded, else what its file says.
pub fn status(plan: &Plan, record: Option<&PlanRecord>) -> PlanStatus {
    record.map(|r| r.status).or(plan.status).unwrap_or(PlanStatus::Pending)
}

/// Write `status: <to>` as a person would, after checking the request makes sense from where
/// the plan is now ([`status`]; [`crate::plan::decide::request_refusal`], the reconciler's own
/// words).
pub fn request(home: &Home, project: &Project, id: &str, to: PlanStatus) -> Result<()> {
    let plan = crate::plan::observe::load(project, id)?;
    let from = status(&plan, record(home, project, &plan)?.as_ref());
    // Refused up front, with the words the reconciler's refusal would write: nothing written.
    if let Some(why) = crate::plan::decide::request_refusal(from, to) {
        bail!("plan {id} is {from}: refused: {why}; nothing written");
    }
    let edits = [Edit::Set("status".into(), Value::String(to.as_str().into()))];
    crate::artifact::store::edit_current(&plan.path, |text| crate::activity::fit::apply(&plan.path, text, &edits, |_| None))?;
    Ok(())
}

/// A wave task named by its canonical id (`<plan>:exec:wave-<W>:task-<T>`): its plan and it;
/// `None` for an id of another shape (a commission's).
pub(crate) fn task(project: &Project, id: &str) -> Result<Option<(Plan, Task)>> {
    let Some((plan, _)) = id.split_once(":exec:") else { return Ok(None) };
    let plan = crate::plan::observe::load(project, plan)?;
    let task = plan.find_task(id)?.clone();
    Ok(Some((plan, task)))
}

/// A plan as `show` gives it: the plan, its record, and the view of both.
pub fn view(home: &Home, project: &Project, id: &str) -> Result<(Plan, Option<PlanRecord>, Shown)> {
    let plan = crate::plan::observe::load(project, id)?;
    let record = record(home, project, &plan)?;
    let log = crate::activity::timeline::read(&crate::activity::timeline::path_for(&plan.path))?;
    let status = status(&plan, record.as_ref());
    // Each task's resume class, from what is there now (its worktree, its processes).
    let workers = crate::worker::Catalog::discover(&project.root, &home.workers_dir());
    // A runtime file that cannot be trusted (a run record naming another process, say) is shown:
    // nothing is done for the plan until it is repaired or removed.
    let (observed, problem) = match crate::plan::observe::observe_plan(home, project, &workers, id) {
        Ok(o) => (Some(o), None),
        Err(e) => (None, Some(format!("{e:#}"))),
    };
    let tasks = plan
        .tasks()
        .map(|t| {
            let r = record.as_ref().and_then(|r| r.tasks.get(&t.canonical));
            let class = observed
                .as_ref()
                .and_then(|o| o.tasks.iter().find(|x| x.task.canonical == t.canonical))
                .map(|ot| crate::plan::decide::resume_class(ot, r).as_str());
            ShownTask {
                task: t.canonical.clone(),
                label: t.label.clone(),
                wave: t.wave,
                worker: t.worker.clone(),
                title: t.title.clone(),
                state: r.map(|r| r.state.as_str()).unwrap_or("queued").to_string(),
                class,
                attempt: r.map(|r| r.attempt).unwrap_or(0),
                reason: r.and_then(|r| r.reason.clone()),
                result: submitted(&log, &t.canonical),
                ports: crate::worker::ports::shown(home, &home.task_state(&project.name, &plan.id, &t.slug())),
            }
        })
        .collect();
    let reviews = reviews(&log);
    let shown = Shown {
        plan: plan.id.clone(),
        title: plan.title.clone(),
        status,
        wave: record.as_ref().map(|r| r.wave),
        waves: plan.waves.len(),
        parallelism: plan.parallelism,
        verify: plan.verify.clone(),
        fixer: plan.fixer.clone(),
        reason: record.as_ref().and_then(|r| r.reason.clone()),
        verify_runs: record.as_ref().map(|r| r.verify_runs).unwrap_or(0),
        tasks,
        log,
        problem,
        elsewhere: crate::plan::decide::elsewhere(&plan, record.as_ref()),
        integrated: crate::plan::observe::integrated(project, &plan, record.as_ref()).map(|i| i.describe()),
        usage: usage(&plan),
        reviews,
    };
    Ok((plan, record, shown))
}

/// The verdicts of its REVIEW stage, from its timeline's `review_verdict` events (each key is
/// there once).
fn reviews(log: &[serde_json::Value]) -> Vec<serde_json::Value> {
    log.iter()
        .filter(|e| e["kind"] == "review_verdict")
        .map(|e| {
            serde_json::json!({
                "reviewer": e["reviewer"],
                "round": e["round"],
                "verdict": e["verdict"],
                "summary": e["summary"],
                "comments": e.get("comments").cloned().unwrap_or_else(|| serde_json::json!([])),
            })
        })
        .collect()
}

/// What a plan's tasks' ended attempts used, as its `usage:` says.
pub fn usage(plan: &Plan) -> Option<crate::worker::usage::Usage> {
    plan.fields.get("usage").and_then(crate::worker::usage::Usage::from_yaml)
}

/// What task `canonical` submitted last, from the plan's timeline (its `result` events: the
/// latest attempt's wins).
fn submitted(log: &[serde_json::Value], canonical: &str) -> Option<ShownResult> {
    log.iter().rev().filter(|e| e["kind"] == "result" && e["task"] == canonical).find_map(|e| {
        Some(ShownResult {
            attempt: e["attempt"].as_u64().and_then(|a| u32::try_from(a).ok()).unwrap_or(0),
            summary: e["summary"].as_str()?.to_string(),
            artifacts: e["artifacts"]
                .as_array()
                .map(|a| a.iter().filter_map(|p| p.as_str().map(str::to_string)).collect())
                .unwrap_or_default(),
        })
    })
}

/// The plans, by id; files that cannot be read are named in the problems.
pub fn list(home: &Home, project: &Project) -> Result<Listed> {
    let mut listed = Listed { plans: Vec::new(), problems: Vec::new() };
    for path in crate::artifact::paths(&project.plans_dir())? {
        let Some(id) = path.file_stem().and_then(|s| s.to_str()) else { continue };
        let read = crate::plan::observe::load(project, id).and_then(|p| Ok((record(home, project, &p)?, p)));
        match read {
            Ok((record, plan)) => listed.plans.push(Row {
                elsewhere: crate::plan::decide::elsewhere(&plan, record.as_ref()),
                integrated: crate::plan::observe::integrated(project, &plan, record.as_ref()).map(|i| i.describe()),
                status: status(&plan, record.as_ref()),
                wave: record.as_ref().map(|r| r.wave),
                reason: record.as_ref().and_then(|r| r.reason.clone()),
                waves: plan.waves.len(),
                tasks: plan.tasks().count(),
                tasks_landed: record
                    .as_ref()
                    .map_or(0, |r| r.tasks.values().filter(|t| t.state == crate::plan::decide::TaskState::Integrated).count()),
                title: plan.title,
                plan: plan.id,
            }),
            Err(e) => listed.problems.push(format!("{}: {e:#}", path.display())),
        }
    }
    Ok(listed)
}

/// A plan drafted by a planner worker (Kiln's PLAN stage): `plan create --planner`.
#[derive(Debug, Clone)]
pub struct DraftPlan {
    pub title: String,
    /// The planner worker's package: a commission's worker (capability `commission`).
    pub planner: String,
    /// What the plan is to do, for the planner.
    pub prompt: String,
    pub id: Option<String>,
    pub parallelism: usize,
    pub verify: Option<Vec<String>>,
    pub fixer: Option<String>,
    /// How long to wait for the planner's run.
    pub timeout: std::time::Duration,
}

/// Where a planner's commission `cid` writes the waves it drafts (under `.lore/`, outside the
/// control plane, which no commission may write).
pub(crate) fn drafted_waves_path(cid: &str) -> String {
    format!(".lore/drafts/{cid}.waves.yaml")
}

/// The most of a drafted waves file read (it is a worker's: hostile, bounded).
const DRAFT_MAX: usize = 1024 * 1024;

/// What the planner is asked, after the person's prompt: where to write what shape, and the
/// workers it may give tasks to.
fn planner_prompt(project: &Project, home: &Home, draft: &DraftPlan, path: &str) -> String {
    let catalog = crate::worker::Catalog::discover(&project.root, &home.workers_dir());
    let workers: Vec<String> = catalog
        .packages
        .keys()
        .filter_map(|n| catalog.for_commission(n).ok().map(|p| format!("- {n}: {}", p.manifest.description.trim())))
        .collect();
    format!(
        "{}\n\n## Your output: the plan's waves\n\nYou are planning, not doing the work: split it into waves of tasks for guild-hall's plan \"{}\". A wave's tasks run at once, each in its own worktree from the wave's start; a wave starts when the one before it has landed. Two tasks of one wave must not change the same file.\n\nWrite the waves as YAML to `{path}` (with write_artifact, or as a file), then call submit_result. The file is a list of waves, each a list of tasks, each task {{id, worker, prompt}} (optionally title, timeout):\n\n```yaml\n{WAVES_SHAPE}\n```\n\nThe workers a task may name:\n{}\n",
        draft.prompt.trim_end(),
        draft.title,
        workers.join("\n")
    )
}

/// Draft a plan with a planner worker: one commission of the planner (`Plan: <title>`) that
/// writes the waves to [`drafted_waves_path`]; once it has landed, the waves are read from the
/// integration branch, validated as [`create`] validates, and the plan written as
/// `status: draft` for a person to start. Returns (the plan's id, the commission's id). A run
/// that fails or writes no valid waves is refused with why (problems at the drafted file's own
/// line:col), and nothing is written to `.lore/plans/`.
pub fn draft(home: &Home, project: &Project, d: &DraftPlan) -> Result<(String, String)> {
    use crate::artifact::commission::Status;
    if d.prompt.trim().is_empty() {
        bail!("--prompt must say what the plan is to do");
    }
    if let Some(id) = &d.id {
        crate::artifact::ids::validate_id(id)?;
        if project.plan_path(id).exists() {
            bail!("plan {id} exists ({}): ids are never reused; nothing written", project.plan_path(id).display());
        }
    }
    let new = super::commission::NewCommission {
        worker: d.planner.clone(),
        title: format!("Plan: {}", d.title),
        prompt: d.prompt.clone(),
        depends: Vec::new(),
        draft: false,
        id: None,
        max_turns: None,
        max_budget_usd: None,
        max_tokens: None,
    };
    let cid = super::commission::create_with(home, project, &new, |cid| planner_prompt(project, home, d, &drafted_waves_path(cid)))?;
    let path = drafted_waves_path(&cid);
    let deadline = std::time::Instant::now() + d.timeout;
    let commission = loop {
        let c = super::commission::load(project, &cid)?;
        if c.status.is_some_and(Status::is_terminal) {
            break c;
        }
        if std::time::Instant::now() >= deadline {
            bail!(
                "the planner's commission {cid} did not end within {}: it goes on; when it completes, `git show {}:{path} | guild-hall plan create --draft --title … -` lands its waves",
                humantime::format_duration(d.timeout),
                project.config.integration_branch
            );
        }
        // A pass of our own when no one else reconciles the project; else the holder does it.
        if let Ok(_held) = crate::reconcile::lock_project(home, project, false, "guild-hall plan create --planner") {
            let opts = crate::reconcile::Options { before_dispatch: Some(super::sync::follow), ..Default::default() };
            crate::reconcile::run(home, project, &opts, |_| {})?;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let reason = commission.owned.reason.as_deref().unwrap_or("no reason given").to_string();
    match commission.status {
        Some(Status::Completed) => {}
        Some(s) => bail!("the planner's commission {cid} is {}: {reason}; no plan written", s.as_str()),
        None => bail!("the planner's commission {cid} has no status; no plan written"),
    }
    let text = drafted_on_integration(project, &path)
        .map_err(|e| anyhow::anyhow!("the planner's commission {cid} completed, but {e}; no plan written"))?;
    let origin = format!("{}:{path}", project.config.integration_branch);
    let waves: Value = serde_yaml_ng::from_str(&text).map_err(|e| anyhow::anyhow!("{origin}: not YAML ({e}); no plan written"))?;
    let plan = NewPlan {
        title: d.title.clone(),
        waves,
        waves_text: Some(WavesText { origin, text }),
        id: d.id.clone(),
        parallelism: d.parallelism,
        verify: d.verify.clone(),
        fixer: d.fixer.clone(),
        draft: true,
    };
    Ok((create(home, project, &plan)?, cid))
}

/// The text of `path` on the integration branch: a regular file, UTF-8, at most [`DRAFT_MAX`].
fn drafted_on_integration(project: &Project, path: &str) -> Result<String> {
    let repo = crate::activity::git::open(&project.root)?;
    let branch = &project.config.integration_branch;
    let tree = repo.find_branch(branch, git2::BranchType::Local)?.get().peel_to_tree()?;
    let entry = tree.get_path(std::path::Path::new(path)).map_err(|_| anyhow::anyhow!("{path} is not on {branch}"))?;
    if entry.filemode() != i32::from(git2::FileMode::Blob) {
        bail!("{path} on {branch} is not a regular file");
    }
    let blob = repo.find_blob(entry.id())?;
    if blob.size() > DRAFT_MAX {
        bail!("{path} on {branch} is {} bytes, over the {DRAFT_MAX} a plan's waves may be", blob.size());
    }
    String::from_utf8(blob.content().to_vec()).map_err(|_| anyhow::anyhow!("{path} on {branch} is not UTF-8"))
}
