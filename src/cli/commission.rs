//! Commands that write intent: `init`, `commission create|dispatch|cancel|redispatch`, and the
//! worker-side `toolbox`. They write the same files a person would (parity, REQ-COM-4); the
//! reconciler does the rest.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Subcommand;

use super::out::say;
use super::Env;
use guild_hall::artifact::write::Edit;
use guild_hall::artifact::Desired;
use guild_hall::worker::toolbox::WorkerContext;

#[derive(Debug, Subcommand)]
pub enum CommissionCmd {
    /// Write a new commission artifact and print its id.
    ///
    /// A prompt is required: --prompt TEXT, or --prompt-file FILE ('-' reads stdin). The
    /// commission is submitted (`pending`) unless --draft; `watch` or `reconcile` runs it.
    #[command(group(clap::ArgGroup::new("prompt_source").required(true).args(["prompt", "prompt_file"])))]
    Create {
        /// Worker package that does the work.
        #[arg(long)]
        worker: String,
        /// What the commission is for, in a line; its id derives from it.
        #[arg(long)]
        title: String,
        /// A path (relative to the project root) that must exist before dispatch. Repeatable.
        #[arg(long = "depends", value_name = "PATH")]
        depends: Vec<String>,
        /// The prompt: the outcome wanted and how the worker can verify it (this or
        /// --prompt-file is required).
        #[arg(long, conflicts_with = "prompt_file")]
        prompt: Option<String>,
        /// Read the prompt from a file ('-' for stdin) instead of --prompt.
        #[arg(long, value_name = "FILE")]
        prompt_file: Option<PathBuf>,
        /// Create it as `status: draft`: the reconciler leaves it alone until it is set to pending.
        #[arg(long)]
        draft: bool,
        /// Use this id instead of the first free one derived from the title (`hello`, `hello-2`, …);
        /// refused, naming what holds it, if anything of it exists: ids are never reused.
        #[arg(long, value_name = "ID")]
        id: Option<String>,
    },
    /// Ask for dispatch (writes `desired: dispatched`).
    Dispatch {
        /// The commission id: its file stem under .lore/commissions/.
        #[arg(value_name = "COMMISSION")]
        id: String,
    },
    /// Ask for cancellation (writes `desired: cancelled`).
    Cancel {
        /// The commission id: its file stem under .lore/commissions/.
        #[arg(value_name = "COMMISSION")]
        id: String,
    },
    /// Give a commission up for good (writes `desired: abandoned`): pending, blocked, failed
    /// or cancelled ones only. It ends `abandoned`, a terminal status Guild Hall has too, and a
    /// commission depending on it no longer waits for it.
    Abandon {
        /// The commission id: its file stem under .lore/commissions/.
        #[arg(value_name = "COMMISSION")]
        id: String,
        /// Why: kept in its reason and its timeline.
        #[arg(short = 'm', long = "message", value_name = "REASON")]
        message: Option<String>,
        /// Print the request written as JSON ({id, wrote, removed}).
        #[arg(long)]
        json: bool,
    },
    /// Set a failed or cancelled commission back to pending for a new attempt.
    Redispatch {
        /// The commission id: its file stem under .lore/commissions/.
        #[arg(value_name = "COMMISSION")]
        id: String,
    },
}

pub fn init(env: &Env) -> Result<()> {
    let done = guild_hall::ops::init(&env.home, &env.project)?;
    let branch = &env.project.config.integration_branch;
    say!("project   {} ({})", env.project.name, env.project.root.display());
    say!("branch    {branch}{}", if done.branch_created { format!(" (created from {})", done.created_from) } else { String::new() });
    say!("home      {}{}", env.home.root.display(), if done.registered { " (registered)" } else { "" });
    let base = guild_hall::ops::sync::base_branch(&env.project).ok();
    if let Some(base) = &base {
        say!("base      {base}{}", if done.base_recorded.is_some() { " (recorded: sync and land pair with it)" } else { "" });
    }
    // The first steps from here, shortest path first.
    let base = base.unwrap_or_else(|| "your branch".into());
    say!("\nnext:");
    for (command, what) in [
        ("guild-hall workers --available".to_string(), "the worker packages bundled in guild-hall".to_string()),
        ("guild-hall workers add scribe".to_string(), "install one into .lore/workers/".to_string()),
        ("guild-hall commission create --worker scribe --title TITLE --prompt TEXT".to_string(), "write a commission".to_string()),
        ("guild-hall reconcile --once --wait".to_string(), "run it now (or keep `guild-hall watch` running)".to_string()),
        ("guild-hall land".to_string(), format!("bring the finished work from {branch} into {base}")),
        (
            "git add .lore && git commit -m \"guild-hall: commissions and workers\"".to_string(),
            "commit .lore/ (commissions, plans, meetings, workers and their timelines): the shared truth a clone, a teammate or CI \
             reads; commit the reconciler's later updates to it the same way"
                .to_string(),
        ),
    ] {
        say!("  {command}\n      {what}");
    }
    Ok(())
}

pub fn run(env: &Env, cmd: &CommissionCmd) -> Result<()> {
    match cmd {
        CommissionCmd::Create { worker, title, depends, prompt, prompt_file, draft, id } => {
            let prompt = match (prompt, prompt_file) {
                (Some(p), _) => p.clone(),
                (None, Some(f)) if f.as_os_str() == "-" => {
                    std::io::read_to_string(std::io::stdin()).context("reading the prompt from stdin")?
                }
                (None, Some(f)) => std::fs::read_to_string(f).with_context(|| format!("reading {}", f.display()))?,
                (None, None) => bail!("a commission needs a prompt: --prompt TEXT or --prompt-file FILE"),
            };
            let new = guild_hall::ops::commission::NewCommission {
                worker: worker.clone(),
                title: title.clone(),
                prompt,
                depends: depends.clone(),
                draft: *draft,
                id: id.clone(),
                ..Default::default()
            };
            say!("{}", guild_hall::ops::commission::create(&env.home, &env.project, &new)?);
            Ok(())
        }
        CommissionCmd::Dispatch { id } => ask(env, id, Desired::Dispatched),
        CommissionCmd::Cancel { id } => ask(env, id, Desired::Cancelled),
        CommissionCmd::Abandon { id, message, json } => {
            let edits = guild_hall::ops::commission::abandon(&env.project, id, message.as_deref())?;
            if *json {
                super::review::say_edits_json(id, &edits)?;
            } else {
                say_requested(id, &edits);
            }
            Ok(())
        }
        CommissionCmd::Redispatch { id } => {
            let edits = guild_hall::ops::commission::redispatch(&env.project, id)?;
            say_requested(id, &edits);
            Ok(())
        }
    }
}

/// Ask for a dispatch or a cancel through [`guild_hall::ops::commission::ask`] and say what
/// happens next.
fn ask(env: &Env, id: &str, desired: Desired) -> Result<()> {
    let edit = guild_hall::ops::commission::ask(&env.project, id, desired)?;
    say_requested(id, std::slice::from_ref(&edit));
    Ok(())
}

fn say_requested(id: &str, edits: &[Edit]) {
    let what = edits
        .iter()
        .map(|e| match e {
            Edit::Set(k, v) => format!("wrote {k}: {}", v.as_str().unwrap_or("?")),
            Edit::Remove(k) => format!("removed {k}"),
        })
        .collect::<Vec<_>>()
        .join(", ");
    say!("{id}: {what}; `guild-hall reconcile --once` (or a running `guild-hall watch`) carries it out");
}

/// `guild-hall toolbox <tool> ...`: one tool of the catalogue, with the worker's context from
/// its environment. Prints the tool's reply as text; a refusal is an error (exit 1).
pub fn toolbox(call: &super::tools::ToolCall) -> Result<()> {
    let ctx = WorkerContext::from_env()?;
    let mut args = call.args.clone();
    if let (Some(field), serde_json::Value::Object(a)) = (&call.stdin, &mut args) {
        let limit = guild_hall::worker::toolbox::ARTIFACT_MAX_BYTES as u64 + 1;
        let text = std::io::read_to_string(std::io::Read::take(std::io::stdin(), limit)).context("reading stdin")?;
        a.insert(field.clone(), serde_json::Value::String(text));
    }
    let tools = guild_hall::tools::toolbox::tools();
    let tool = guild_hall::tools::find(&tools, &call.name).context("no such tool")?;
    if let Some(why) = guild_hall::tools::toolbox::not_here(tool.name, &tool.cli_name(), ctx.kind) {
        bail!("{why} ({})", ctx.describe());
    }
    let (_, text) = tool.call(&ctx, args)?;
    // The worker reads the reply: exactly what the tool answered.
    let end = if text.ends_with('\n') { "" } else { "\n" };
    super::out::stdout_raw(format!("{text}{end}").as_bytes());
    Ok(())
}
