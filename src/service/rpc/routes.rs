//! The endpoint's methods, each routed to its entry of a typed catalogue: MCP's `initialize`,
//! `tools/list` and `tools/call` and the `worker/*` methods to the dispatcher's
//! ([`crate::tools::dispatcher`]), `meeting/*` and `plan/*` to theirs. A meeting's turn is
//! answered as a stream of its events (DESIGN §10), then the reply. A refusal found before the
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
pub enum Route {
    Reply(Option<Json>),
    Stream(TurnRequest),
}

/// Where a streamed reply goes: [`Sink::begin`] starts the stream (HTTP chunked, one JSON
/// line per event); a reply that never began is written whole.
pub trait Sink {
    fn begin(&mut self);
    /// One line of the stream (begun first if it was not).
    fn line(&mut self, line: &Json);
}

/// The route of one request body.
pub fn route(body: &[u8], ep: &Endpoint) -> Route {
    match streamed_turn(body) {
        Some(turn) => Route::Stream(turn),
        None => Route::Reply(answer(body, ep)),
    }
}

fn rpc_error(id: &Json, code: i64, message: impl Into<String>) -> Json {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message.into()}})
}

/// The JSON-RPC reply to one request body (`None` for a notification).
pub fn answer(body: &[u8], ep: &Endpoint) -> Option<Json> {
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
        Err((code, msg)) => rpc_error(&id, code, msg),
    })
}

fn call(method: &str, params: &Json, ep: &Endpoint) -> Result<Json, (i64, String)> {
    match method {
        "initialize" => Ok(json!({
            "protocolVersion": params["protocolVersion"].as_str().unwrap_or("2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "guild-hall", "version": env!("CARGO_PKG_VERSION")},
        })),
        "notifications/initialized" | "ping" => Ok(json!({})),
        "tools/list" => Ok(json!({"tools": crate::tools::listing(&crate::tools::dispatcher::tools::<Dispatcher>())})),
        "tools/call" => {
            let name = params["name"].as_str().ok_or((-32602, "tools/call needs a tool name".to_string()))?;
            let mut args = params.get("arguments").cloned().unwrap_or(json!({}));
            // The project may be named beside the arguments, or among them.
            if let (Some(p), Json::Object(a)) = (params.get("project"), &mut args) {
                a.entry("project").or_insert(p.clone());
            }
            match dispatcher_call(name, args, ep) {
                Ok(v) => Ok(json!({"content": [{"type": "text", "text": v.to_string()}], "structuredContent": v, "isError": false})),
                Err((code, msg)) if code == -32601 || code == BAD_ARGUMENTS => Err((-32602, msg)),
                Err((_, msg)) => Ok(json!({"content": [{"type": "text", "text": msg}], "isError": true})),
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
                return Err((-32601, format!("method not found: {m}")));
            };
            result.map_err(refusal_is_invalid_params)
        }
    }
}

/// On the `worker/*`, `meeting/*` and `plan/*` methods a refusal is invalid params too
/// (REQ-WD-17); only `tools/call` tells them apart.
fn refusal_is_invalid_params((code, msg): (i64, String)) -> (i64, String) {
    (if code == BAD_ARGUMENTS || code == REFUSED { -32602 } else { code }, msg)
}

/// Internal codes telling the two kinds of invalid-params apart until a face maps them.
const BAD_ARGUMENTS: i64 = -32602;
const REFUSED: i64 = -1;

/// Run a dispatcher tool against the project the arguments name (`project`: name or path), or
/// the only one served.
fn dispatcher_call(name: &str, args: Json, ep: &Endpoint) -> Result<Json, (i64, String)> {
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
) -> Result<Json, (i64, String)> {
    let (project, args) = project_of(args, ep)?;
    let (events, gone) = stream.map_or((None, Arc::default()), |(events, gone)| (Some(events), gone));
    let m = Meetings { home: ep.home.clone(), project, events, gone };
    run(&crate::tools::meeting::tools(), "meeting/", name, &m, args)
}

fn plan_call(name: &str, args: Json, ep: &Endpoint) -> Result<Json, (i64, String)> {
    let (project, args) = project_of(args, ep)?;
    run(&crate::tools::plan::tools(), "plan/", name, &Plans { home: ep.home.clone(), project }, args)
}

/// Call catalogue entry `name` (of the methods under `prefix`) on `ctx`: its reply, or the
/// error as an internal code ([`BAD_ARGUMENTS`], [`REFUSED`]) until a face maps it.
fn run<C: 'static>(tools: &[Tool<C>], prefix: &str, name: &str, ctx: &C, args: Json) -> Result<Json, (i64, String)> {
    let tool = crate::tools::find(tools, name).ok_or((-32601, format!("method not found: {prefix}{name}")))?;
    match tool.call(ctx, args) {
        Ok((v, _)) => Ok(v),
        Err(e @ ToolError::BadArguments(_)) => Err((BAD_ARGUMENTS, e.to_string())),
        Err(ToolError::Refused(m)) => Err((REFUSED, m)),
        Err(ToolError::Internal(e)) => Err((-32603, format!("{e:#}"))),
    }
}

/// The project the arguments name (`project`: name or path; the only one served if none),
/// and the arguments without it.
fn project_of(mut args: Json, ep: &Endpoint) -> Result<(Project, Json), (i64, String)> {
    let project = pick_project(&args, ep).map_err(|e| (-32602, format!("{e:#}")))?;
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
pub struct TurnRequest {
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
    /// happens (DESIGN §10); a request refused before its turn begins is answered whole (for
    /// `meeting/send`, which begins at once, the refusal ends the stream). The JSON-RPC response. Setting `gone` (the client went away) interrupts
    /// the turn, not the meeting.
    pub fn run(self, ep: &Endpoint, gone: &Arc<AtomicBool>, sink: &mut dyn Sink) -> Json {
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
                Err(e) => return Err((-32603, format!("cannot start the turn: {e}"))),
            };
            for event in received {
                match event {
                    Some(event) => sink.line(&event),
                    None => sink.begin(),
                }
            }
            turn.join().unwrap_or_else(|_| Err((-32603, "the turn failed unexpectedly".into())))
        });
        match result.map_err(refusal_is_invalid_params) {
            Ok(v) => json!({"jsonrpc": "2.0", "id": self.id, "result": v}),
            Err((code, msg)) => rpc_error(&self.id, code, msg),
        }
    }
}
