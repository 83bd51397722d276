//! The CLI face of a catalogue (`guild-hall toolbox <tool> ...` for the worker toolbox, `guild-hall
//! job <tool> ...` for the dispatcher), generated from it: one subcommand per tool (named with
//! `-`, the `_` spelling as an alias), its fields as positional arguments or `--flags` as the tool
//! declares, arrays as repeated flags, objects and numbers as JSON, and a positional read from
//! stdin when the tool says so and it is left out.

use clap::{Arg, ArgAction, ArgMatches, Args, Command, FromArgMatches};
use serde_json::{Map, Value as Json};

use guild_hall::tools::toolbox::tools;
use guild_hall::tools::Tool;

/// A parsed `guild-hall toolbox` call: the tool and its arguments as JSON.
#[derive(Debug, Clone)]
pub struct ToolCall {
    pub name: String,
    pub args: Json,
    /// The positional field to read from stdin, when it was left out.
    pub stdin: Option<String>,
}

/// One subcommand per tool of `tools`.
pub fn subcommands<C: 'static>(tools: &[Tool<C>]) -> Vec<Command> {
    tools
        .iter()
        .map(|t| {
            let mut cmd = Command::new(t.cli_name()).about(t.description);
            if t.name != t.cli_name() {
                cmd = cmd.alias(t.name);
            }
            let props = t.input_schema.get("properties").and_then(Json::as_object).cloned().unwrap_or_default();
            let required: Vec<String> = t
                .input_schema
                .get("required")
                .and_then(Json::as_array)
                .map(|r| r.iter().filter_map(|x| x.as_str().map(str::to_string)).collect())
                .unwrap_or_default();
            for (i, field) in t.positional.iter().enumerate() {
                let help = props.get(*field).and_then(|p| p.get("description")).and_then(Json::as_str).unwrap_or("").to_string();
                let needed = required.iter().any(|r| r == field) && t.stdin != Some(*field);
                cmd = cmd.arg(Arg::new(*field).value_name(field.to_uppercase()).index(i + 1).required(needed).help(help));
            }
            for (field, schema) in &props {
                if t.positional.contains(&field.as_str()) {
                    continue;
                }
                let help = schema.get("description").and_then(Json::as_str).unwrap_or("").to_string();
                let many = schema.get("type").and_then(Json::as_str) == Some("array");
                let arg = Arg::new(field.clone()).long(t.flag_of(field)).help(help);
                cmd = cmd.arg(if many {
                    arg.action(ArgAction::Append).value_name("PATH")
                } else {
                    arg.value_name("TEXT").required(required.contains(field))
                });
            }
            cmd
        })
        .collect()
}

/// A flag's text as the schema's type wants it: a string stays a string; a number, a boolean,
/// an object or a list of objects (`--changed-op '{"op":"add","path":"a"}'`) is read as JSON.
fn typed(schema: &Json, text: String) -> Json {
    if schema.get("type").and_then(Json::as_str) == Some("string") {
        return Json::String(text);
    }
    serde_json::from_str(&text).unwrap_or(Json::String(text))
}

/// The call the matches of [`subcommands`] describe.
pub fn parse<C: 'static>(tools: &[Tool<C>], m: &ArgMatches) -> Result<ToolCall, clap::Error> {
    {
        let (name, sub) = m.subcommand().ok_or_else(|| clap::Error::new(clap::error::ErrorKind::MissingSubcommand))?;
        let tool = tools
            .iter()
            .find(|t| t.cli_name() == name || t.name == name)
            .ok_or_else(|| clap::Error::new(clap::error::ErrorKind::InvalidSubcommand))?;
        let mut args = Map::new();
        let props = tool.input_schema.get("properties").and_then(Json::as_object).cloned().unwrap_or_default();
        // Only the tool's own fields: global options (`-v`, `--home`) are in these matches too.
        for (key, schema) in props {
            let values: Vec<String> = sub.try_get_many::<String>(&key).ok().flatten().map(|v| v.cloned().collect()).unwrap_or_default();
            let many = schema.get("type").and_then(Json::as_str) == Some("array");
            if many {
                let items = schema.get("items").cloned().unwrap_or_default();
                args.insert(key, Json::Array(values.into_iter().map(|v| typed(&items, v)).collect()));
            } else if let Some(v) = values.into_iter().next() {
                args.insert(key, typed(&schema, v));
            }
        }
        let stdin = tool.stdin.filter(|f| !args.contains_key(*f)).map(str::to_string);
        Ok(ToolCall { name: tool.name.to_string(), args: Json::Object(args), stdin })
    }
}

impl FromArgMatches for ToolCall {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        parse(&tools(), m)
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        *self = ToolCall::from_arg_matches(m)?;
        Ok(())
    }
}

impl Args for ToolCall {
    fn augment_args(cmd: Command) -> Command {
        cmd.subcommands(subcommands(&tools())).subcommand_required(true).arg_required_else_help(true)
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}
