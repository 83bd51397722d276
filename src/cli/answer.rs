//! `guild-hall answer <id> TEXT [--question N] [--json]`: answer a question a commission's worker
//! asked and waits on, through the dispatcher catalogue's `answer` (as `mcp --manager` and the
//! `worker/answer` endpoint do it): the `answer:` a person could write in the artifact.

use anyhow::Result;
use clap::Args;

use super::out::{say, say_json};
use super::Env;
use guild_hall::ops::dispatcher::Dispatcher;

/// `guild-hall answer`'s arguments.
#[derive(Debug, Args)]
pub struct AnswerArgs {
    /// The commission whose worker asked (its file stem under .lore/commissions/).
    #[arg(value_name = "COMMISSION")]
    id: String,
    /// The answer, as the worker will read it.
    #[arg(value_name = "TEXT")]
    text: String,
    /// Which open question (its number in `questions:` and `status`); default: the oldest.
    #[arg(long, value_name = "N")]
    question: Option<u32>,
    /// Print the answer as JSON: {jobId, question, asked, answer}.
    #[arg(long)]
    json: bool,
}

pub fn run(env: &Env, a: &AnswerArgs) -> Result<()> {
    let tools = guild_hall::tools::dispatcher::tools::<Dispatcher>();
    let tool = guild_hall::tools::find(&tools, "answer").ok_or_else(|| anyhow::anyhow!("the catalogue has no answer operation"))?;
    let d = Dispatcher { home: env.home.clone(), project: env.project.clone() };
    let mut args = serde_json::json!({"jobId": a.id, "text": a.text});
    if let Some(n) = a.question {
        args["question"] = n.into();
    }
    let (reply, text) = tool.call(&d, args)?;
    if a.json {
        say_json!("{}", serde_json::to_string_pretty(&reply)?);
    } else {
        say!("{text}");
    }
    Ok(())
}
