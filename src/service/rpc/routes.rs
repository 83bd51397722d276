//! The endpoint's methods, each routed to its entry of a typed catalogue: MCP's `initialize`,
//! `tools/list` and `tools/call` and the `worker/*` methods to the dispatcher's
//! ([`crate::tools::dispatcher`]), `meeting/*` and `plan/*` to theirs. A meeting's turn is
//! answered as a stream of its events (design §8), then the reply. A refusal found before the
//! turn begins (`meeting/start`, `meeting/accept`) is answered whole; `meeting/send` begins the
//! stream before the turn validates the meeting, so its refusal is the stream's last line.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::SyncSender;
use std::sync::Arc;

use anyhow::{bail, Result};
use serde_json::{json, Value as Json};

use super::Endpoint;
use crate::config::Project;
use crate::ops::catalogue::{Meetings, Plans};
use crate::ops::dispatcher::Dispatcher;
use crate::tools::{Tool, ToolError};

/// How a request is answered: a whole reply (`None` for a notification), or a stream.
pub(crate) enum Route {
    Reply(Option<Json>),
    Stream(TurnRequest),
}

/// Where a streamed reply goes: [`Sink::begin`] starts the stream (HTTP chunked, one JSON
/// line per event); a reply that never began is written whole.
pub(crate) trait Sink {
    fn begin(&mut self);
    /// One line of the stream (begun first if it was not).
    fn line(&mut self, line: &Json);
}

/// The route of one request body.
pub(crate) fn route(body: &[u8], ep: &Endpoint) -> Route {
    match streamed_turn(body) {
        Some(turn) => Route::Stream(turn),
        None => Route::Reply(answer(body, ep)),
    }
}

fn rpc_error(id: &Json, code: i64, message: impl Into<String>) -> Json {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message.into()}})
}

/// Why a request failed, until its method answers it: the protocol's own error (its code), or
/// an operation's ([`ToolError`], whose code the method chooses).
enum Failed {
    Protocol(i64, String),
    Tool(ToolError),
}

/// JSON-RPC invalid params.
const INVALID_PARAMS: i64 = -32602;
/// JSON-RPC internal error.
const INTERNAL_ERROR: i64 = -32603;

/// The code of an operation's error on the `worker/*`, `meeting/*` and `plan/*` methods: a
/// fault is an internal error; everything else the caller asked for is invalid params, as
/// docs/mcp.md promises. `error.data.kind` tells them apart (`refused`, `not_found`,
/// `conflict`, `fault`).
fn tool_error_code(e: &ToolError) -> i64 {
    match e {
        ToolError::BadArguments(_) | ToolError::Refused(_) | ToolError::NotFound(_) | ToolError::Conflict(_) => INVALID_PARAMS,
        ToolError::Internal(_) => INTERNAL_ERROR,
    }
}

/// The error response of a method call that failed.
fn method_error(id: &Json, failed: Failed) -> Json {
    match failed {
        Failed::Protocol(code, message) => rpc_error(id, code, message),
        Failed::Tool(e) => json!({"jsonrpc": "2.0", "id": id, "error": {
            "code": tool_error_code(&e),
            "message": tool_error_message(&e),
            "data": {"kind": e.kind().as_str()},
        }}),
    }
}

/// What the caller reads of an operation's error.
fn tool_error_message(e: &ToolError) -> String {
    match e {
        ToolError::Internal(e) => format!("{e:#}"),
        e => e.to_string(),
    }
}

/// The JSON-RPC reply to one request body (`None` for a notification).
pub(crate) fn answer(body: &[u8], ep: &Endpoint) -> Option<Json> {
    let req: Json = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => return Some(rpc_error(&Json::Null, -32700, format!("parse error: {e}"))),
    };
    let id = req.get("id").cloned().unwrap_or(Json::Null);
    let Some(method) = req.get("method").and_then(Json::as_str).filter(|_| req.get("jsonrpc") == Some(&json!("2.0"))) else {
        return Some(rpc_error(&id, -32600, "invalid request: expected {\"jsonrpc\": \"2.0\", \"method\": …}"));
    };
    let params = req.get("params").cloned().unwrap_or(json!({}));
    if !params.is_object() {
        return Some(rpc_error(&id, -32602, "params must be an object"));
    }
    let notification = req.get("id").is_none();
    let result = call(method, &params, ep);
    if notification {
        return None;
    }
    Some(match result {
        Ok(v) => json!({"jsonrpc": "2.0", "id": id, "result": v}),
        Err(failed) => method_error(&id, failed),
    })
}

fn call(method: &str, params: &Json, ep: &Endpoint) -> Result<Json, Failed> {
    match method {
        "initialize" => Ok(json!({
            "protocolVersion": params["protocolVersion"].as_str().unwrap_or("2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "guild-hall", "version": env!("CARGO_PKG_VERSION")},
        })),
        "notifications/initialized" | "ping" => Ok(json!({})),
        "tools/list" => Ok(json!({"tools": crate::tools::listing(&crate::tools::dispatcher::tools::<Dispatcher>())})),
        "tools/call" => {
            let name = params["name"].as_str().ok_or(Failed::Protocol(INVALID_PARAMS, "tools/call needs a tool name".to_string()))?;
            let mut args = params.get("arguments").cloned().unwrap_or(json!({}));
            // The project may be named beside the arguments, or among them.
            if let (Some(p), Json::Object(a)) = (params.get("project"), &mut args) {
                a.entry("project").or_insert(p.clone());
            }
            // MCP's own rule: the arguments' errors (an unknown tool, an unknown id) and faults
            // are JSON-RPC errors; what the operation refused is a tool result marked `isError`.
            match dispatcher_call(name, args, ep) {
                Ok(v) => Ok(json!({"content": [{"type": "text", "text": v.to_string()}], "structuredContent": v, "isError": false})),
                Err(Failed::Protocol(code, msg)) if code == -32601 || code == INVALID_PARAMS => Err(Failed::Protocol(INVALID_PARAMS, msg)),
                Err(Failed::Protocol(_, msg)) => Ok(json!({"content": [{"type": "text", "text": msg}], "isError": true})),
                Err(Failed::Tool(e @ (ToolError::BadArguments(_) | ToolError::NotFound(_) | ToolError::Internal(_)))) => {
                    Err(Failed::Tool(e))
                }
                Err(Failed::Tool(e @ (ToolError::Refused(_) | ToolError::Conflict(_)))) => {
                    Ok(json!({"content": [{"type": "text", "text": tool_error_message(&e)}], "isError": true}))
                }
            }
        }
        m => {
            let result = if let Some(name) = m.strip_prefix("worker/") {
                dispatcher_call(name, params.clone(), ep)
            } else if let Some(name) = m.strip_prefix("meeting/") {
                meeting_call(name, params.clone(), ep, None)
            } else if let Some(name) = m.strip_prefix("plan/") {
                plan_call(name, params.clone(), ep)
            } else {
                return Err(Failed::Protocol(-32601, format!("method not found: {m}")));
            };
            result
        }
    }
}

/// Run a dispatcher tool against the project the arguments name (`project`: name or path), or
/// the only one served.
fn dispatcher_call(name: &str, args: Json, ep: &Endpoint) -> Result<Json, Failed> {
    let (project, args) = project_of(args, ep)?;
    let d = Dispatcher { home: ep.home.clone(), project };
    run(&crate::tools::dispatcher::tools(), "worker/", name, &d, args)
}

/// Run a meeting operation, its turn's events (if it runs one) sent to `events` as they
/// happen; setting `gone` interrupts the turn.
fn meeting_call(
    name: &str,
    args: Json,
    ep: &Endpoint,
    stream: Option<(SyncSender<Option<Json>>, Arc<AtomicBool>)>,
) -> Result<Json, Failed> {
    let (project, args) = project_of(args, ep)?;
    let (events, gone) = stream.map_or((None, Arc::default()), |(events, gone)| (Some(events), gone));
    let m = Meetings { home: ep.home.clone(), project, events, gone };
    run(&crate::tools::meeting::tools(), "meeting/", name, &m, args)
}

fn plan_call(name: &str, args: Json, ep: &Endpoint) -> Result<Json, Failed> {
    let (project, args) = project_of(args, ep)?;
    run(&crate::tools::plan::tools(), "plan/", name, &Plans { home: ep.home.clone(), project }, args)
}

/// Call catalogue entry `name` (of the methods under `prefix`) on `ctx`: its reply, or its
/// error for the method to answer.
fn run<C: 'static>(tools: &[Tool<C>], prefix: &str, name: &str, ctx: &C, args: Json) -> Result<Json, Failed> {
    let tool = crate::tools::find(tools, name).ok_or(Failed::Protocol(-32601, format!("method not found: {prefix}{name}")))?;
    tool.call(ctx, args).map(|(v, _)| v).map_err(Failed::Tool)
}

/// The project the arguments name (`project`: name or path; the only one served if none),
/// and the arguments without it.
fn project_of(mut args: Json, ep: &Endpoint) -> Result<(Project, Json), Failed> {
    let project = pick_project(&args, ep).map_err(|e| Failed::Protocol(INVALID_PARAMS, format!("{e:#}")))?;
    if let Json::Object(a) = &mut args {
        a.remove("project");
    }
    Ok((project, args))
}

fn pick_project(params: &Json, ep: &Endpoint) -> Result<Project> {
    let wanted = params.get("project").and_then(Json::as_str);
    let mut found = Vec::new();
    for dir in &ep.projects {
        let p = Project::open(dir)?;
        if wanted.is_none_or(|w| w == p.name || Path::new(w) == p.root) {
            found.push(p);
        }
    }
    match (found.len(), wanted) {
        (1, _) => Ok(found.remove(0)),
        (0, Some(w)) => bail!("unknown project {w:?}"),
        _ => bail!("several projects are served: name one with \"project\" (its name or path)"),
    }
}

/// The events of a streamed turn waiting for its client.
const TURN_EVENTS_AHEAD: usize = 16;

/// A request whose reply is streamed: a meeting operation that runs a turn (`meeting/send`,
/// `meeting/start` with a first message or an agenda, `meeting/accept` with a message), as
/// its catalogue entry says.
pub(crate) struct TurnRequest {
    id: Json,
    name: String,
    params: Json,
}

fn streamed_turn(body: &[u8]) -> Option<TurnRequest> {
    let req: Json = serde_json::from_slice(body).ok()?;
    let name = req.get("method")?.as_str()?.strip_prefix("meeting/")?;
    let params = req.get("params").cloned().unwrap_or(json!({}));
    if req.get("jsonrpc") != Some(&json!("2.0")) || !params.is_object() {
        return None;
    }
    let mut args = params.clone();
    if let Json::Object(a) = &mut args {
        a.remove("project");
    }
    let tools = crate::tools::meeting::tools::<Meetings>();
    crate::tools::find(&tools, name)?.streams(&args).then(|| TurnRequest {
        id: req.get("id").cloned().unwrap_or(Json::Null),
        name: name.to_string(),
        params,
    })
}

impl TurnRequest {
    /// Run it: once its turn begins, the stream begins and `sink` is given each event as it
    /// happens (design §8); a request refused before its turn begins is answered whole (for
    /// `meeting/send`, which begins at once, the refusal ends the stream). The JSON-RPC response. Setting `gone` (the client went away) interrupts
    /// the turn, not the meeting.
    pub(crate) fn run(self, ep: &Endpoint, gone: &Arc<AtomicBool>, sink: &mut dyn Sink) -> Json {
        // Bounded: a client reading slower than the worker speaks holds the turn back (and the
        // worker on its pipe), never this process's memory.
        let (events, received) = std::sync::mpsc::sync_channel(TURN_EVENTS_AHEAD);
        // The turn runs beside this thread, which writes its events as they come: the
        // catalogue's context owns what it holds, so the events reach the writer by channel.
        // They end when the turn's context (the sender) is dropped.
        let result = std::thread::scope(|s| {
            let turn = std::thread::Builder::new()
                .name("rpc-turn".into())
                .spawn_scoped(s, || meeting_call(&self.name, self.params, ep, Some((events, gone.clone()))));
            let turn = match turn {
                Ok(t) => t,
                Err(e) => return Err(Failed::Protocol(INTERNAL_ERROR, format!("cannot start the turn: {e}"))),
            };
            for event in received {
                match event {
                    Some(event) => sink.line(&event),
                    None => sink.begin(),
                }
            }
            turn.join().unwrap_or_else(|_| Err(Failed::Protocol(INTERNAL_ERROR, "the turn failed unexpectedly".into())))
        });
        match result {
            Ok(v) => json!({"jsonrpc": "2.0", "id": self.id, "result": v}),
            Err(failed) => method_error(&self.id, failed),
        }
    }
}
