//! The one catalogue of operations that tools and agents call. Each is declared once — a typed
//! request (unknown fields refused), a typed reply, a description and the function that
//! performs it — and every face is generated from these lists: the worker toolbox over MCP
//! ([`mcp`]) and the CLI (the binary's `cli::tools`), the tool text of the worker's system
//! prompt, `mcp --manager` and the JSON-RPC endpoint (`worker/*` from the [`dispatcher`],
//! `meeting/*` from [`meeting`], `plan/*` from [`plan`]).

pub mod dispatcher;
pub(crate) mod error;
pub(crate) mod mcp;
pub mod meeting;
pub mod plan;
pub mod toolbox;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value as Json;

pub use error::{ErrorKind, Failure};

/// Why a call failed, as every face reports it.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// The arguments do not fit the tool's schema (a wrong type, a missing or unknown key):
    /// JSON-RPC invalid params (-32602) on every face.
    #[error("invalid arguments: {0}")]
    BadArguments(String),
    /// The operation refused (a bad value, a state that does not allow it). The caller sees
    /// why: a tool result with `isError` over MCP, -32602 on the `worker/*` methods.
    #[error("{0}")]
    Refused(String),
    /// What the call names is not there (an unknown id): -32602 on every face, as a bad
    /// argument is.
    #[error("{0}")]
    NotFound(String),
    /// Another writer holds what the call needs (a job still winding down, an id taken): a
    /// refusal that may not hold later, answered as one.
    #[error("{0}")]
    Conflict(String),
    /// A fault (I/O, git, a bug), not the caller's: JSON-RPC internal error (-32603).
    #[error(transparent)]
    Internal(anyhow::Error),
}

/// An error that does not say its kind is a fault here: only an operation's own refusals are
/// refusals ([`ToolError::of`] chooses otherwise).
impl From<anyhow::Error> for ToolError {
    fn from(e: anyhow::Error) -> ToolError {
        match e.downcast_ref::<Failure>().map(Failure::kind) {
            Some(kind) => ToolError::of(e, kind),
            None => ToolError::Internal(e),
        }
    }
}

impl ToolError {
    pub(crate) fn refused(msg: impl Into<String>) -> ToolError {
        ToolError::Refused(msg.into())
    }

    /// An operation's error by the kind it says ([`ErrorKind::of`]), `default` if it says none.
    pub(crate) fn of(e: anyhow::Error, default: ErrorKind) -> ToolError {
        match ErrorKind::of(&e).unwrap_or(default) {
            ErrorKind::Refused => ToolError::Refused(format!("{e:#}")),
            ErrorKind::NotFound => ToolError::NotFound(format!("{e:#}")),
            ErrorKind::Conflict => ToolError::Conflict(format!("{e:#}")),
            ErrorKind::Fault => ToolError::Internal(e),
        }
    }

    /// Its kind, as the faces answer it: arguments that do not fit are a refusal.
    pub(crate) fn kind(&self) -> ErrorKind {
        match self {
            ToolError::BadArguments(_) | ToolError::Refused(_) => ErrorKind::Refused,
            ToolError::NotFound(_) => ErrorKind::NotFound,
            ToolError::Conflict(_) => ErrorKind::Conflict,
            ToolError::Internal(_) => ErrorKind::Fault,
        }
    }
}

/// A tool's reply: structured for programs, and as text for an agent or a person.
pub(crate) trait Reply: Serialize {
    /// What an agent's tool result or the CLI shows. Pretty JSON unless a reply says better.
    fn text(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}

/// One operation of a catalogue, callable with JSON arguments on a context `C`.
pub struct Tool<C> {
    pub name: &'static str,
    pub description: &'static str,
    /// The JSON Schema of its arguments (from the typed request).
    pub input_schema: serde_json::Map<String, Json>,
    /// The CLI face: fields taken as positional arguments, in order (the rest are `--flags`).
    pub positional: &'static [&'static str],
    /// The CLI face: a positional field read from stdin when it is left out.
    pub stdin: Option<&'static str>,
    /// The CLI face: flags named otherwise than their field (`--artifact` for `artifacts`).
    pub(crate) flags: &'static [(&'static str, &'static str)],
    run: Box<Run<C>>,
    /// Whether a call with these arguments streams events before its reply (a meeting's
    /// turn); `None`: it never does.
    streams: Option<Box<Streams>>,
}

type Streams = dyn Fn(&Json) -> bool + Send + Sync;

/// A tool's function behind its JSON face: arguments in, the reply as JSON and as text out.
type Run<C> = dyn Fn(&C, Json) -> Result<(Json, String), ToolError> + Send + Sync;

impl<C: 'static> Tool<C> {
    /// Declare an operation: `run` takes the typed request and gives the typed reply.
    pub(crate) fn new<Req, Rep>(name: &'static str, description: &'static str, run: fn(&C, Req) -> Result<Rep, ToolError>) -> Tool<C>
    where
        Req: DeserializeOwned + JsonSchema + 'static,
        Rep: Reply + 'static,
    {
        Tool {
            name,
            description,
            input_schema: schema_of::<Req>(),
            positional: &[],
            stdin: None,
            flags: &[],
            streams: None,
            run: Box::new(move |ctx, args| {
                let req: Req = serde_json::from_value(args).map_err(|e| ToolError::BadArguments(e.to_string()))?;
                let reply = run(ctx, req)?;
                let text = reply.text();
                Ok((serde_json::to_value(&reply).map_err(anyhow::Error::from)?, text))
            }),
        }
    }

    pub(crate) fn positional(mut self, fields: &'static [&'static str]) -> Tool<C> {
        self.positional = fields;
        self
    }

    pub(crate) fn stdin(mut self, field: &'static str) -> Tool<C> {
        self.stdin = Some(field);
        self
    }

    pub(crate) fn flags(mut self, flags: &'static [(&'static str, &'static str)]) -> Tool<C> {
        self.flags = flags;
        self
    }

    /// Its calls whose typed request `when` accepts stream events before the reply (the
    /// implementation hands them on; a face that cannot stream still gets the reply).
    pub(crate) fn streamed<Req: DeserializeOwned + 'static>(mut self, when: fn(&Req) -> bool) -> Tool<C> {
        self.streams = Some(Box::new(move |args: &Json| serde_json::from_value::<Req>(args.clone()).is_ok_and(|r| when(&r))));
        self
    }

    /// Whether a call with `args` streams events before its reply. Arguments that do not fit
    /// never do: the call fails before anything runs.
    pub(crate) fn streams(&self, args: &Json) -> bool {
        self.streams.as_ref().is_some_and(|s| s(args))
    }

    /// Call it: the reply as JSON and as text.
    pub fn call(&self, ctx: &C, args: Json) -> Result<(Json, String), ToolError> {
        let args = if args.is_null() { Json::Object(Default::default()) } else { args };
        (self.run)(ctx, args)
    }

    /// Its name on the command line (`report-progress` for `report_progress`).
    pub fn cli_name(&self) -> String {
        self.name.replace('_', "-")
    }

    /// The command line that calls it, for people and agents (`toolbox submit-result
    /// --summary TEXT [--artifact PATH]...`).
    pub(crate) fn cli_usage(&self) -> String {
        let mut out = format!("toolbox {}", self.cli_name());
        for p in self.positional {
            let (_, required) = self.field(p);
            let word = p.to_uppercase();
            out.push_str(&if required && self.stdin != Some(*p) { format!(" {word}") } else { format!(" [{word}]") });
        }
        let props = self.input_schema.get("properties").and_then(Json::as_object).cloned().unwrap_or_default();
        for (name, schema) in &props {
            if self.positional.contains(&name.as_str()) {
                continue;
            }
            let flag = self.flag_of(name);
            let many = schema.get("type").and_then(Json::as_str) == Some("array");
            let (_, required) = self.field(name);
            let word = if many { "PATH" } else { "TEXT" };
            let part = format!("--{flag} {word}");
            out.push(' ');
            out.push_str(&match (required, many) {
                (_, true) => format!("[{part}]..."),
                (true, false) => part,
                (false, false) => format!("[{part}]"),
            });
        }
        out
    }

    /// The flag of a field on the command line.
    pub fn flag_of(&self, field: &str) -> String {
        self.flags.iter().find(|(f, _)| *f == field).map(|(_, flag)| flag.to_string()).unwrap_or_else(|| field.replace('_', "-"))
    }

    /// Whether a field exists, and whether it is required.
    fn field(&self, name: &str) -> (bool, bool) {
        let exists = self.input_schema.get("properties").and_then(|p| p.get(name)).is_some();
        let required = self.input_schema.get("required").and_then(Json::as_array).is_some_and(|r| r.iter().any(|x| x == name));
        (exists, required)
    }
}

/// The JSON Schema of a request type, as an object (no `$schema` or title: it is inlined in
/// `tools/list`).
fn schema_of<T: JsonSchema>() -> serde_json::Map<String, Json> {
    let schema = schemars::schema_for!(T);
    let mut map = match serde_json::to_value(schema) {
        Ok(Json::Object(m)) => m,
        _ => serde_json::Map::new(),
    };
    map.remove("$schema");
    map.remove("title");
    map
}

/// Look a tool up by name.
pub fn find<'a, C>(tools: &'a [Tool<C>], name: &str) -> Option<&'a Tool<C>> {
    tools.iter().find(|t| t.name == name)
}

/// The tools as MCP's `tools/list` gives them: `{name, description, inputSchema}`.
pub(crate) fn listing<C>(tools: &[Tool<C>]) -> Json {
    Json::Array(
        tools.iter().map(|t| serde_json::json!({"name": t.name, "description": t.description, "inputSchema": t.input_schema})).collect(),
    )
}
