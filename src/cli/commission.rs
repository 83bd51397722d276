//! Commands that write intent: `init`, `commission create|dispatch|cancel|redispatch`, and the
//! worker-side `toolbox`. They write the same files a person would (parity, REQ-COM-4); the
//! reconciler does the rest.

use std::path::PathBuf;

use anyhow::{anyhow, bail, Context, Result};
use clap::Subcommand;
use serde_yaml_ng::{Mapping, Value};

use super::Env;
use crate::artifact::commission::content_hash;
use crate::artifact::write::{self, Edit};
use crate::artifact::{Commission, Status};
use crate::ids;
use crate::toolbox::mailbox::MailBody;
use crate::toolbox::WorkerContext;
use crate::worker::Catalog;

#[derive(Debug, Subcommand)]
pub enum CommissionCmd {
    /// Write a new commission artifact and print its id.
    Create {
        /// Worker package that does the work.
        #[arg(long)]
        worker: String,
        #[arg(long)]
        title: String,
        /// A path (relative to the project root) that must exist before dispatch. Repeatable.
        #[arg(long = "depends", value_name = "PATH")]
        depends: Vec<String>,
        /// The prompt: the outcome wanted and how the worker can verify it.
        #[arg(long, conflicts_with = "prompt_file")]
        prompt: Option<String>,
        /// Read the prompt from a file ('-' for stdin).
        #[arg(long, value_name = "FILE")]
        prompt_file: Option<PathBuf>,
        /// Create as a draft (not dispatched until set to pending).
        #[arg(long)]
        draft: bool,
        /// Use this id instead of one derived from the title.
        #[arg(long)]
        id: Option<String>,
    },
    /// Ask for dispatch (writes `desired: dispatched`).
    Dispatch { id: String },
    /// Ask for cancellation (writes `desired: cancelled`).
    Cancel { id: String },
    /// Set a failed or cancelled commission back to pending for a new attempt.
    Redispatch { id: String },
}

#[derive(Debug, Subcommand)]
pub enum ToolboxCmd {
    /// Report progress (also a heartbeat).
    ReportProgress { text: String },
    /// Submit the result (once per attempt). Artifact paths are relative to the worktree.
    SubmitResult {
        #[arg(long)]
        summary: String,
        #[arg(long = "artifact", value_name = "PATH")]
        artifacts: Vec<String>,
    },
    /// Record a question the worker cannot resolve alone.
    LogQuestion { text: String },
    /// Remember something for this worker's later commissions (overwrites the key).
    StoreMemory {
        /// A filename-safe name: lowercase letters, digits, '-', '_', '.'.
        #[arg(long)]
        key: String,
        #[arg(long)]
        content: String,
    },
    /// Record a decision and why it was made.
    RecordDecision {
        #[arg(long)]
        question: String,
        #[arg(long)]
        decision: String,
        #[arg(long)]
        reasoning: String,
    },
}

pub fn init(env: &Env) -> Result<()> {
    let lore = env.project.root.join(".lore");
    for d in ["commissions", "meetings", "workers"] {
        std::fs::create_dir_all(lore.join(d)).with_context(|| format!("creating .lore/{d}"))?;
    }
    let repo = crate::git::open(&env.project.root)?;
    let branch = &env.project.config.integration_branch;
    let created = crate::git::ensure_branch(&repo, branch, "HEAD")?;
    let registered = env.home.register(&env.project.name, &env.project.root)?;
    println!("project   {} ({})", env.project.name, env.project.root.display());
    println!("branch    {branch}{}", if created { " (created from HEAD)" } else { "" });
    println!("home      {}{}", env.home.root.display(), if registered { " (registered)" } else { "" });
    Ok(())
}

pub fn run(env: &Env, cmd: &CommissionCmd) -> Result<()> {
    match cmd {
        CommissionCmd::Create { worker, title, depends, prompt, prompt_file, draft, id } => {
            let id = create(env, worker, title, depends, prompt.as_deref(), prompt_file.as_deref(), *draft, id.as_deref())?;
            println!("{id}");
            Ok(())
        }
        CommissionCmd::Dispatch { id } => request(env, id, Edit::Set("desired".into(), Value::from("dispatched"))),
        CommissionCmd::Cancel { id } => request(env, id, Edit::Set("desired".into(), Value::from("cancelled"))),
        CommissionCmd::Redispatch { id } => {
            let c = load(env, id)?;
            match c.status {
                Some(Status::Failed | Status::Cancelled) => request(env, id, Edit::Set("status".into(), Value::from("pending"))),
                other => bail!(
                    "{id} is {}: only a failed or cancelled commission can be re-dispatched",
                    other.map(|s| s.as_str()).unwrap_or("pending")
                ),
            }
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn create(
    env: &Env,
    worker: &str,
    title: &str,
    depends: &[String],
    prompt: Option<&str>,
    prompt_file: Option<&std::path::Path>,
    draft: bool,
    id: Option<&str>,
) -> Result<String> {
    let catalog = Catalog::discover(&env.project.root, &env.home.workers_dir());
    catalog.for_commission(worker).map_err(|e| anyhow!("{e}; nothing written (see `guild-hall workers`)"))?;
    if title.trim().is_empty() {
        bail!("--title must not be empty");
    }
    let deps = depends.iter().map(|d| ids::validate_rel_path(d)).collect::<Result<Vec<_>, _>>()?;
    let body = match (prompt, prompt_file) {
        (Some(p), _) => p.to_string(),
        (None, Some(f)) if f.as_os_str() == "-" => std::io::read_to_string(std::io::stdin()).context("reading the prompt from stdin")?,
        (None, Some(f)) => std::fs::read_to_string(f).with_context(|| format!("reading {}", f.display()))?,
        (None, None) => bail!("a commission needs a prompt: --prompt TEXT or --prompt-file FILE"),
    };
    if body.trim().is_empty() {
        bail!("the prompt is empty: it is what the worker works from");
    }
    let dir = env.project.commissions_dir();
    std::fs::create_dir_all(&dir)?;
    let id = match id {
        Some(id) => {
            ids::validate_id(id)?;
            id.to_string()
        }
        None => {
            let base = ids::slugify(title);
            (1..)
                .map(|n| if n == 1 { base.clone() } else { format!("{base}-{n}") })
                .find(|c| !dir.join(format!("{c}.md")).exists())
                .unwrap_or(base)
        }
    };
    let mut fm = Mapping::new();
    fm.insert("title".into(), title.into());
    fm.insert("date".into(), chrono::Utc::now().format("%Y-%m-%d").to_string().into());
    fm.insert("status".into(), if draft { "draft" } else { "pending" }.into());
    fm.insert("worker".into(), worker.into());
    if !deps.is_empty() {
        fm.insert("dependencies".into(), Value::Sequence(deps.into_iter().map(Value::from).collect()));
    }
    let mut text = format!("---\n{}---\n", serde_yaml_ng::to_string(&fm)?);
    text.push_str(body.trim_end());
    text.push('\n');
    let path = dir.join(format!("{id}.md"));
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
        .with_context(|| format!("{} already exists: choose another --id", path.display()))?;
    f.write_all(text.as_bytes())?;
    Ok(id)
}

fn load(env: &Env, id: &str) -> Result<Commission> {
    ids::validate_id(id)?;
    let path = env.project.commissions_dir().join(format!("{id}.md"));
    let text = std::fs::read_to_string(&path).with_context(|| format!("no commission {id:?} ({} not readable)", path.display()))?;
    Commission::parse(&path, &text).map_err(|ps| anyhow!("{}", ps.iter().map(|p| p.to_string()).collect::<Vec<_>>().join("\n")))
}

/// Write one intent key into the artifact, surgically and atomically. The reconciler may be
/// writing the same file: a concurrent change means read again and retry, never clobber.
fn request(env: &Env, id: &str, edit: Edit) -> Result<()> {
    for _ in 0..40 {
        let c = load(env, id)?;
        let text = std::fs::read_to_string(&c.path)?;
        if content_hash(&text) == c.hash {
            let new = write::apply(&text, std::slice::from_ref(&edit))?;
            if crate::runtime::replace_if_unchanged(&c.path, c.hash, new.as_bytes())? {
                let what = match &edit {
                    Edit::Set(k, v) => format!("{k}: {}", v.as_str().unwrap_or("?")),
                    Edit::Remove(k) => format!("removed {k}"),
                };
                println!("{id}: wrote {what}; `guild-hall reconcile --once` (or a running `guild-hall watch`) carries it out");
                return Ok(());
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    bail!("{} keeps changing; nothing written, try again", env.project.commissions_dir().join(format!("{id}.md")).display())
}

pub fn toolbox(cmd: &ToolboxCmd) -> Result<()> {
    let ctx = WorkerContext::from_env()?;
    let body = match cmd {
        ToolboxCmd::StoreMemory { key, content } => {
            ctx.store_memory(key, content)?;
            println!("stored memory {key} for {}", ctx.worker.as_deref().unwrap_or("?"));
            return Ok(());
        }
        ToolboxCmd::ReportProgress { text } => MailBody::Progress { text: text.clone() },
        ToolboxCmd::SubmitResult { summary, artifacts } => {
            MailBody::Result { summary: summary.clone(), artifacts: crate::toolbox::normalise_artifacts(artifacts)? }
        }
        ToolboxCmd::LogQuestion { text } => MailBody::Question { text: text.clone() },
        ToolboxCmd::RecordDecision { question, decision, reasoning } => {
            MailBody::Decision { question: question.clone(), decision: decision.clone(), reasoning: reasoning.clone() }
        }
    };
    let mail = ctx.send(body)?;
    println!("recorded event {} for {}", mail.seq, ctx.commission);
    Ok(())
}
