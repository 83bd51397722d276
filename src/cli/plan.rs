//! `guild-hall plan create|list|show|retry|cancel|logs`: thin over [`guild_hall::ops::plan`]. Each
//! writes what a person would write in the plan's file; the reconciler carries it out.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Subcommand;
use serde_json::json;
use serde_yaml_ng::Value;

use super::out::{line, say, say_err, say_json, Table};
use super::Env;
use guild_hall::artifact::plan::PlanStatus;
use guild_hall::tools::plan::Shown;

#[derive(Debug, Subcommand)]
pub enum PlanCmd {
    /// Write a new plan (`.lore/plans/<id>.md`) from a file of waves and print its id.
    ///
    /// The file (or '-' for stdin) is YAML: a list of waves, each a list of tasks
    /// `{id, worker, title, prompt}`. The plan is submitted (`pending`) unless --draft; `watch` or
    /// `reconcile` starts it.
    ///
    /// With --planner WORKER --prompt TEXT instead of a file, a planner worker drafts the waves
    /// (Kiln's PLAN stage): one commission of it, `Plan: <title>`, run now (or by the `watch`
    /// holding the project), writes them to `.lore/drafts/<its id>.waves.yaml`; once it has
    /// landed they are validated as a file's are, and the plan is written as `status: draft` for
    /// you to read and start (`status: pending`). A failed run or invalid waves write no plan.
    Create {
        /// What the plan is for, in a line; its id derives from it.
        #[arg(long)]
        title: String,
        /// The waves (YAML), or '-' for stdin; none with --planner.
        #[arg(required_unless_present = "planner", conflicts_with = "planner")]
        waves: Option<PathBuf>,
        /// A worker package (capability `commission`) that drafts the waves from --prompt.
        #[arg(long, value_name = "WORKER", requires = "prompt", conflicts_with = "draft")]
        planner: Option<String>,
        /// What the plan is to do, for the planner.
        #[arg(long, value_name = "TEXT", requires = "planner")]
        prompt: Option<String>,
        /// How long to wait for the planner's run (it goes on past it).
        #[arg(long, default_value = "1h", value_parser = humantime::parse_duration, requires = "planner")]
        timeout: std::time::Duration,
        /// Use this id instead of the first free one derived from the title; refused, naming
        /// what holds it, if anything of it exists: ids are never reused.
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
        /// Create it as `status: draft`: nothing starts until it is set to pending.
        #[arg(long)]
        draft: bool,
        /// Print `{"plan": id}`.
        #[arg(long)]
        json: bool,
    },
    /// List the plans: id, status, wave reached of how many, tasks landed, title (and why one
    /// stopped or waits).
    List {
        /// Print `{"plans": [...], "problems": [...]}`: each plan's id, title, status, wave,
        /// waves, tasks, tasks_landed and reason.
        #[arg(long)]
        json: bool,
    },
    /// A plan: status, wave, reason, and each task's state (with its resume class) and log.
    Show {
        /// The plan id: its file stem under .lore/plans/.
        #[arg(value_name = "PLAN")]
        id: String,
        /// Print the plan, its waves and tasks as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Run again what did not succeed (failed and shut-down tasks, or a failed verify): writes
    /// `status: pending`. Tasks reuse their worktrees (reset to the wave base, cleaned).
    Retry {
        /// The plan id: its file stem under .lore/plans/.
        #[arg(value_name = "PLAN")]
        id: String,
        /// Print `{"plan": id, "requested": status}`.
        #[arg(long)]
        json: bool,
    },
    /// Stop the plan: running tasks get SIGTERM (SIGKILL after cancel_grace); nothing merged is
    /// undone. Writes `status: cancelled`.
    Cancel {
        /// The plan id: its file stem under .lore/plans/.
        #[arg(value_name = "PLAN")]
        id: String,
        /// Print `{"plan": id, "requested": status}`.
        #[arg(long)]
        json: bool,
    },
    /// A task's worker output (TASK: its canonical id or its label), or the last verify's.
    ///
    /// A label two tasks share (`task-1` in two waves) is refused with their canonical ids
    /// (`<plan>:exec:wave-<W>:task-<T>`, as `plan show` lists them): name one by it.
    ///
    /// Control characters in it are shown as escapes (`\x1b`, `\r`), not carried out;
    /// newlines and tabs stay. `--raw` writes the bytes exactly.
    Logs {
        /// The plan id: its file stem under .lore/plans/.
        #[arg(value_name = "PLAN")]
        id: String,
        /// The task: its canonical id (`<plan>:exec:wave-<W>:task-<T>`) or its label (`task-1`).
        task: Option<String>,
        /// The output of the latest verify run instead.
        #[arg(long, conflicts_with = "task")]
        verify: bool,
        /// The log's bytes exactly as written, control characters included.
        #[arg(long)]
        raw: bool,
        /// Follow: print output as it is written until the task's attempt (or the verify run)
        /// has ended.
        #[arg(short = 'f', long)]
        follow: bool,
    },
    /// A task's change: the commit its copy-back made on the integration branch (before it,
    /// what its branch holds beyond the merge base), shown as `guild-hall diff` shows a
    /// commission's (`guild-hall diff <canonical id>` is the same).
    Diff {
        /// The plan id: its file stem under .lore/plans/.
        #[arg(value_name = "PLAN")]
        id: String,
        /// The task: its canonical id (`<plan>:exec:wave-<W>:task-<T>`) or its label (`task-1`).
        task: String,
        /// Only the stat, as `git diff --stat` shows it.
        #[arg(long)]
        stat: bool,
        /// Print the change as JSON (as `guild-hall diff --json`).
        #[arg(long)]
        json: bool,
        /// Write to stdout, not through the pager.
        #[arg(long)]
        no_pager: bool,
    },
}

pub fn run(env: &Env, cmd: &PlanCmd) -> Result<()> {
    match cmd {
        PlanCmd::Create { title, waves, planner, prompt, timeout, id, parallelism, verify, fixer, draft, json: json_out } => {
            let verify = verify.as_ref().map(|v| v.split_whitespace().map(str::to_string).collect());
            let (Some(waves), None) = (waves, planner) else {
                let d = guild_hall::ops::plan::DraftPlan {
                    title: title.clone(),
                    planner: planner.clone().unwrap_or_default(),
                    prompt: prompt.clone().unwrap_or_default(),
                    id: id.clone(),
                    parallelism: *parallelism,
                    verify,
                    fixer: fixer.clone(),
                    timeout: *timeout,
                };
                let (id, cid) = guild_hall::ops::plan::draft(&env.home, &env.project, &d)?;
                if *json_out {
                    say_json!("{}", json!({"plan": id, "status": "draft", "planner_commission": cid}));
                } else {
                    say!("{id}");
                    say_err!("drafted by commission {cid}: read .lore/plans/{id}.md, then set `status: pending` in it (or `guild-hall plan retry {id}`) to start it");
                }
                return Ok(());
            };
            let (origin, text) = if waves.as_os_str() == "-" {
                ("<stdin>".to_string(), std::io::read_to_string(std::io::stdin())?)
            } else {
                (waves.display().to_string(), std::fs::read_to_string(waves).with_context(|| format!("reading {}", waves.display()))?)
            };
            let waves: Value = serde_yaml_ng::from_str(&text).with_context(|| format!("{origin}: not YAML"))?;
            let new = guild_hall::ops::plan::NewPlan {
                title: title.clone(),
                waves,
                waves_text: Some(guild_hall::ops::plan::WavesText { origin, text }),
                id: id.clone(),
                parallelism: *parallelism,
                verify,
                fixer: fixer.clone(),
                draft: *draft,
            };
            let id = guild_hall::ops::plan::create(&env.home, &env.project, &new)?;
            if *json_out {
                say_json!("{}", json!({"plan": id}));
            } else {
                say!("{id}");
            }
            Ok(())
        }
        PlanCmd::Diff { id, task, stat, json, no_pager } => {
            let how = super::diff::Shown { stat: *stat, json: *json, no_pager: *no_pager };
            super::diff::reads_as_git();
            super::diff::show(&guild_hall::ops::diff::of_task(&env.project, id, task, how.detail())?, &how)
        }
        PlanCmd::List { json } => list(env, *json),
        PlanCmd::Show { id, json } => show(env, id, *json),
        PlanCmd::Retry { id, json } => request(env, id, PlanStatus::Pending, *json),
        PlanCmd::Cancel { id, json } => request(env, id, PlanStatus::Cancelled, *json),
        PlanCmd::Logs { id, task, verify, raw, follow: true } => super::show::follow_log(*raw, |out| {
            guild_hall::ops::logs::follow_plan_log(&env.home, &env.project, id, task.as_deref(), *verify, out)
        }),
        PlanCmd::Logs { id, task, verify, raw, follow: false } => {
            let log = guild_hall::ops::logs::plan_log(&env.home, &env.project, id, task.as_deref(), *verify)?;
            let bytes = std::fs::read(&log).with_context(|| format!("no log yet ({})", log.display()))?;
            super::out::stdout_raw(&if *raw { bytes } else { super::out::escape_bytes(&bytes) });
            Ok(())
        }
    }
}

/// Ask for `to` ([`guild_hall::ops::plan::request`]) and say what happens next.
fn request(env: &Env, id: &str, to: PlanStatus, json_out: bool) -> Result<()> {
    guild_hall::ops::plan::request(&env.home, &env.project, id, to)?;
    if json_out {
        say_json!("{}", json!({"plan": id, "requested": to}));
    } else {
        say_err!("{id}: wrote status: {to}; `guild-hall reconcile --once` (or a running `guild-hall watch`) carries it out");
    }
    Ok(())
}

/// The plans as `meeting list` lists meetings: a header, a row each, problems on stderr.
fn list(env: &Env, json_out: bool) -> Result<()> {
    let listed = guild_hall::ops::plan::list(&env.home, &env.project)?;
    if json_out {
        say_json!("{}", serde_json::to_string_pretty(&serde_json::to_value(&listed)?)?);
        return Ok(());
    }
    if listed.plans.is_empty() && listed.problems.is_empty() {
        say!("no plans (write one: guild-hall plan create --title T WAVES.yaml)");
    }
    let mut table = Table::new(["ID", "STATUS", "WAVE", "TASKS", "TITLE"]);
    for p in &listed.plans {
        let wave = match p.wave {
            Some(w) if w > 0 => format!("{w}/{}", p.waves),
            _ => format!("-/{}", p.waves),
        };
        // Why it stopped or waits, after the title: the reconciler's reason, else what another
        // home or the integration branch says of it.
        let why = p.reason.as_ref().or(p.elsewhere.as_ref()).or(p.integrated.as_ref()).map(|r| format!(" · {r}")).unwrap_or_default();
        table.row([
            line(&p.plan).into_owned(),
            p.status.as_str().to_string(),
            wave,
            format!("{}/{} landed", p.tasks_landed, p.tasks),
            line(&format!("{}{why}", p.title.as_deref().unwrap_or(""))).into_owned(),
        ]);
    }
    table.print();
    for p in &listed.problems {
        say_err!("{}", line(p));
    }
    Ok(())
}

fn show(env: &Env, id: &str, json_out: bool) -> Result<()> {
    let (plan, record, shown) = guild_hall::ops::plan::view(&env.home, &env.project, id)?;
    if json_out {
        say_json!("{}", serde_json::to_string_pretty(&serde_json::to_value(&shown)?)?);
        return Ok(());
    }
    let reviews = shown.review_lines();
    let Shown { status, problem, log, elsewhere, integrated, usage, tasks: shown_tasks, .. } = shown;
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
    if let Some(e) = &elsewhere {
        say!("elsewhere {e}");
    }
    if let Some(i) = &integrated {
        say!("integrated {i}");
    }
    if let Some(u) = &usage {
        say!("usage     {}", u.brief());
    }
    say!("parallel  {}", plan.parallelism);
    if let Some(v) = &plan.verify {
        say!("verify    {}", v.join(" "));
    }
    // One table for every wave, so that the tasks' columns line up from wave to wave.
    let mut table = Table::headless().indent("  ");
    for (w, wave) in plan.waves.iter().enumerate() {
        table.line(String::new());
        table.line(format!("wave {}:", w + 1));
        for t in wave {
            let r = record.as_ref().and_then(|r| r.tasks.get(&t.canonical));
            let state = r.map(|r| r.state.as_str()).unwrap_or("queued");
            let why = r.and_then(|r| r.reason.clone()).map(|r| format!("  {}", line(&r))).unwrap_or_default();
            // Where its dev server is to be found, while it runs (as `status` says it).
            let why = match shown_tasks.iter().find(|s| s.task == t.canonical).and_then(|s| s.ports) {
                Some(p) => format!("  ports {p}{why}"),
                None => why,
            };
            table.row([
                line(&t.canonical).into_owned(),
                line(&t.label).into_owned(),
                state.to_string(),
                format!("{}{why}", line(&t.worker)),
            ]);
            if let Some(res) = shown_tasks.iter().find(|s| s.task == t.canonical).and_then(|s| s.result.as_ref()) {
                table.line(format!("    result: {}", line(&res.summary)));
                for a in &res.artifacts {
                    table.line(format!("      {}", line(a)));
                }
            }
        }
    }
    table.print();
    if !reviews.is_empty() {
        say!("\nreviews:");
        for r in &reviews {
            say!("  {}", line(r));
        }
    }
    if !log.is_empty() {
        say!("\nlog:");
        for e in &log {
            say!("  {}", line(&guild_hall::activity::timeline::render(e)));
        }
    }
    Ok(())
}
