//! `guild-hall job <tool> ...`: the dispatcher's operations on the command line, generated from
//! the same catalogue as `mcp --manager` and the `worker/*` endpoint (dispatch, list, status,
//! result, cancel, delete, meeting-request): one schema, one behaviour, every face.

use clap::{ArgMatches, Args, Command, FromArgMatches};

use super::out::say_json;
use super::tools::ToolCall;
use super::Env;
use guild_hall::ops::dispatcher::Dispatcher;

/// A parsed `guild-hall job` call.
#[derive(Debug, Clone)]
pub struct JobCall(pub ToolCall);

fn tools() -> Vec<guild_hall::tools::Tool<Dispatcher>> {
    guild_hall::tools::dispatcher::tools::<Dispatcher>()
}

impl FromArgMatches for JobCall {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        super::tools::parse(&tools(), m).map(JobCall)
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        *self = JobCall::from_arg_matches(m)?;
        Ok(())
    }
}

impl Args for JobCall {
    fn augment_args(cmd: Command) -> Command {
        cmd.subcommands(super::tools::subcommands(&tools())).subcommand_required(true).arg_required_else_help(true)
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

/// Call the operation on the project and print its reply (JSON); a refusal is an error.
pub fn run(env: &Env, call: &JobCall) -> anyhow::Result<()> {
    let tools = tools();
    let tool = guild_hall::tools::find(&tools, &call.0.name).ok_or_else(|| anyhow::anyhow!("no such operation {}", call.0.name))?;
    let d = Dispatcher { home: env.home.clone(), project: env.project.clone() };
    let (reply, _) = tool.call(&d, call.0.args.clone())?;
    say_json!("{}", serde_json::to_string_pretty(&reply)?);
    Ok(())
}
