//! `guild-hall plan create|show|retry|cancel|logs`: thin over [`crate::waves`]. Each writes
//! what a person would write in the plan's file; the reconciler carries it out.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Subcommand;
use serde_json::json;
use serde_yaml_ng::Value;

use super::out::{line, say, say_err, say_json};
use super::Env;
use crate::artifact::plan::{Plan, PlanStatus};
use crate::artifact::write::Edit;

#[derive(Debug, Subcommand)]
pub enum PlanCmd {
    /// Write a new plan (`.lore/plans/<id>.md`) from a file of waves and print its id.
    ///
    /// The file (or '-' for stdin) is YAML: a list of waves, each a list of tasks
    /// `{id, worker, title, prompt}`. The plan starts at once unless --draft.
    Create {
        #[arg(long)]
        title: String,
        /// The waves (YAML), or '-' for stdin.
        waves: PathBuf,
        #[arg(long)]
        id: Option<String>,
        /// Tasks of a wave running at once.
        #[arg(long, default_value_t = 1)]
        parallelism: usize,
        /// The integration verify command, run after each wave (split on whitespace).
        #[arg(long)]
        verify: Option<String>,
        /// The worker of fix-forward commissions when verify fails.
        #[arg(long)]
        fixer: Option<String>,
        #[arg(long)]
        draft: bool,
        /// Print `{"plan": id}`.
        #[arg(long)]
        json: bool,
    },
    /// A plan: status, wave, reason, and each task's state (with its resume class) and log.
    Show {
        id: String,
        #[arg(long)]
        json: bool,
    },
    /// Run again what did not succeed (failed and shut-down tasks, or a failed verify): writes
    /// `status: pending`. Tasks reuse their worktrees (reset to the wave base, cleaned).
    Retry {
        id: String,
        #[arg(long)]
        json: bool,
    },
    /// Stop the plan: running tasks get SIGTERM (SIGKILL after cancel_grace); nothing merged is
    /// undone. Writes `status: cancelled`.
    Cancel {
        id: String,
        #[arg(long)]
        json: bool,
    },
    /// A task's worker output (TASK: its canonical id or its label), or the last verify's.
    ///
    /// Control characters in it are shown as escapes (`\x1b`, `\r`), not carried out;
    /// newlines and tabs stay. `--raw` writes the bytes exactly.
    Logs {
        id: String,
        task: Option<String>,
        /// The output of the latest verify run instead.
        #[arg(long, conflicts_with = "task")]
        verify: bool,
        /// The log's bytes exactly as written, control characters included.
        #[arg(long)]
        raw: bool,
    },
}

pub fn run(env: &Env, cmd: &PlanCmd) -> Result<()> {
    match cmd {
        PlanCmd::Create { title, waves, id, parallelism, verify, fixer, draft, json: json_out } => {
            let text = if waves.as_os_str() == "-" {
                std::io::read_to_string(std::io::stdin())?
            } else {
                std::fs::read_to_string(waves).with_context(|| format!("reading {}", waves.display()))?
            };
            let waves: Value = serde_yaml_ng::from_str(&text).with_context(|| format!("{}: not YAML", waves.display()))?;
            let id = match id {
                Some(i) => i.clone(),
                None => crate::artifact::ids::slugify(title),
            };
            crate::artifact::ids::validate_id(&id)?;
            let path = env.project.plan_path(&id);
            let mut fm = serde_yaml_ng::Mapping::new();
            fm.insert("title".into(), title.as_str().into());
            fm.insert("status".into(), if *draft { "draft" } else { "pending" }.into());
            fm.insert("parallelism".into(), (*parallelism as u64).into());
            if let Some(v) = verify {
                fm.insert("verify".into(), Value::Sequence(v.split_whitespace().map(Value::from).collect()));
            }
            if let Some(f) = fixer {
                fm.insert("fixer".into(), f.as_str().into());
            }
            fm.insert("waves".into(), waves);
            let text = format!("---\n{}---\n", serde_yaml_ng::to_string(&fm)?);
            // Validated as the reconciler will read it, before anything is written (each problem
            // on a line of its own).
            Plan::parse(&path, &text).map_err(|p| anyhow::anyhow!("{}", p.iter().map(|p| p.to_string()).collect::<Vec<_>>().join("\n")))?;
            std::fs::create_dir_all(env.project.plans_dir())?;
            crate::artifact::create_new(&path, &text, "plan", Plan::parse)?;
            if *json_out {
                say_json!("{}", json!({"plan": id}));
            } else {
                say!("{id}");
            }
            Ok(())
        }
        PlanCmd::Show { id, json } => show(env, id, *json),
        PlanCmd::Retry { id, json } => request(env, id, PlanStatus::Pending, *json),
        PlanCmd::Cancel { id, json } => request(env, id, PlanStatus::Cancelled, *json),
        PlanCmd::Logs { id, task, verify, raw } => {
            let plan = crate::plan::observe::load(&env.project, id)?;
            let record = crate::plan::observe::record(&env.home, &env.project, id)?;
            let log = if *verify {
                let runs = record.map(|r| r.verify_runs).unwrap_or(0);
                crate::activity::state::StateDir(env.home.plan_state(&env.project.name, id).join("verify")).log(runs)
            } else {
                let name = task.as_deref().context("name a task (its canonical id or label), or --verify")?;
                let t = plan
                    .tasks()
                    .find(|t| t.canonical == name || t.label == name)
                    .with_context(|| format!("plan {id} has no task {name}"))?;
                let attempt = record.and_then(|r| r.tasks.get(&t.canonical).map(|x| x.attempt)).unwrap_or(1);
                crate::activity::state::StateDir(env.home.task_state(&env.project.name, id, &t.slug())).log(attempt)
            };
            let bytes = std::fs::read(&log).with_context(|| format!("no log yet ({})", log.display()))?;
            super::out::stdout_raw(&if *raw { bytes } else { super::out::escape_bytes(&bytes) });
            Ok(())
        }
    }
}

/// Write `status:` as a person would, after checking the request makes sense now.
fn request(env: &Env, id: &str, to: PlanStatus, json_out: bool) -> Result<()> {
    let plan = crate::plan::observe::load(&env.project, id)?;
    let from = crate::plan::observe::record(&env.home, &env.project, id)?.map(|r| r.status).or(plan.status).unwrap_or(PlanStatus::Pending);
    if !crate::plan::decide::person_may_request(from, to) {
        bail!("plan {id} is {from}: it cannot be set to {to} (retry a halted, failed or cancelled plan; cancel a pending, running, verifying or halted one)");
    }
    let edits = [Edit::Set("status".into(), Value::String(to.as_str().into()))];
    crate::artifact::store::edit_current(&plan.path, |text| crate::activity::fit::apply(&plan.path, text, &edits, |_| None))?;
    if json_out {
        say_json!("{}", json!({"plan": id, "requested": to}));
    } else {
        say_err!("{id}: wrote status: {to}; `guild-hall reconcile --once` (or a running `guild-hall watch`) carries it out");
    }
    Ok(())
}

fn show(env: &Env, id: &str, json_out: bool) -> Result<()> {
    let plan = crate::plan::observe::load(&env.project, id)?;
    let record = crate::plan::observe::record(&env.home, &env.project, id)?;
    let log = crate::activity::timeline::read(&crate::activity::timeline::path_for(&plan.path))?;
    let status = record.as_ref().map(|r| r.status).or(plan.status).unwrap_or(PlanStatus::Pending);
    // Each task's resume class, from what is there now (its worktree, its processes).
    let workers = crate::worker::Catalog::discover(&env.project.root, &env.home.workers_dir());
    // A runtime file that cannot be trusted (a run record naming another process, say) is shown:
    // nothing is done for the plan until it is repaired or removed.
    let (observed, problem) = match crate::plan::observe::observe_plan(&env.home, &env.project, &workers, id) {
        Ok(o) => (Some(o), None),
        Err(e) => (None, Some(format!("{e:#}"))),
    };
    let tasks: Vec<serde_json::Value> = plan
        .tasks()
        .map(|t| {
            let r = record.as_ref().and_then(|r| r.tasks.get(&t.canonical));
            let state = r.map(|r| r.state.as_str()).unwrap_or("queued");
            let class = observed
                .as_ref()
                .and_then(|o| o.tasks.iter().find(|x| x.task.canonical == t.canonical))
                .map(|ot| crate::plan::decide::resume_class(ot, r).as_str());
            json!({"task": t.canonical, "label": t.label, "wave": t.wave, "worker": t.worker, "title": t.title,
                   "state": state, "class": class, "attempt": r.map(|r| r.attempt).unwrap_or(0), "reason": r.and_then(|r| r.reason.clone())})
        })
        .collect();
    if json_out {
        let v = json!({"plan": plan.id, "title": plan.title, "status": status, "wave": record.as_ref().map(|r| r.wave), "waves": plan.waves.len(),
                       "parallelism": plan.parallelism, "verify": plan.verify, "fixer": plan.fixer, "reason": record.as_ref().and_then(|r| r.reason.clone()),
                       "verify_runs": record.as_ref().map(|r| r.verify_runs).unwrap_or(0), "tasks": tasks, "log": log, "problem": problem});
        say_json!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    say!("plan      {id}{}", plan.title.as_ref().map(|t| format!(": {}", line(t))).unwrap_or_default());
    say!(
        "status    {status}{}",
        record.as_ref().filter(|r| r.wave > 0).map(|r| format!(" (wave {} of {})", r.wave, plan.waves.len())).unwrap_or_default()
    );
    if let Some(r) = record.as_ref().and_then(|r| r.reason.clone()) {
        say!("reason    {r}");
    }
    if let Some(p) = &problem {
        say!("problem   {p}");
    }
    say!("parallel  {}", plan.parallelism);
    if let Some(v) = &plan.verify {
        say!("verify    {}", v.join(" "));
    }
    for (w, wave) in plan.waves.iter().enumerate() {
        say!("\nwave {}:", w + 1);
        for t in wave {
            let r = record.as_ref().and_then(|r| r.tasks.get(&t.canonical));
            let state = r.map(|r| r.state.as_str()).unwrap_or("queued");
            let why = r.and_then(|r| r.reason.clone()).map(|r| format!("  {}", line(&r))).unwrap_or_default();
            say!("  {:<34} {:<8} {:<11} {}{why}", line(&t.canonical), line(&t.label), state, line(&t.worker));
        }
    }
    if !log.is_empty() {
        say!("\nlog:");
        for e in &log {
            say!("  {}", line(&crate::activity::timeline::render(e)));
        }
    }
    Ok(())
}
