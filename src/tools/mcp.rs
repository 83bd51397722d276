//! The MCP face of a tool list: one stdio MCP server (rmcp) whose `tools/list` and
//! `tools/call` come from the catalogue. Arguments that do not fit a tool's schema are
//! JSON-RPC invalid-params errors (-32602), as is an id that names nothing; an operation that
//! refuses answers with a tool result marked `isError`, so that the agent reads why; a fault
//! (an I/O error, a bug) is a JSON-RPC internal error (-32603). Lines that are not JSON (or nest too
//! deep to parse) are answered -32700 here, in front of rmcp, which would drop them unanswered.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult, PaginatedRequestParams, ServerCapabilities,
    ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value as Json;

use super::{find, Tool, ToolError};

/// How our MCP servers introduce themselves: guild-hall and its version, not the library's.
pub(crate) fn implementation() -> rmcp::model::Implementation {
    let mut i = rmcp::model::Implementation::from_build_env();
    i.name = env!("CARGO_PKG_NAME").to_string();
    i.version = env!("CARGO_PKG_VERSION").to_string();
    i.title = Some("guild-hall".to_string());
    i
}

/// A tool list served over MCP for one context (a worker's commission, a project).
pub(crate) struct ToolServer<C> {
    ctx: Arc<C>,
    tools: Arc<Vec<Tool<C>>>,
    instructions: String,
    /// Why a tool not served here is not, when that says more than "unknown tool".
    hint: Arc<Hint>,
}

type Hint = dyn Fn(&str) -> Option<String> + Send + Sync;

impl<C> Clone for ToolServer<C> {
    fn clone(&self) -> Self {
        ToolServer { ctx: self.ctx.clone(), tools: self.tools.clone(), instructions: self.instructions.clone(), hint: self.hint.clone() }
    }
}

impl<C: Send + Sync + 'static> ToolServer<C> {
    pub(crate) fn new(ctx: C, tools: Vec<Tool<C>>, instructions: String) -> ToolServer<C> {
        ToolServer { ctx: Arc::new(ctx), tools: Arc::new(tools), instructions, hint: Arc::new(|_: &str| None) }
    }

    /// Say why a tool that is not served here is not (a tool of another kind's toolbox).
    pub(crate) fn with_hint(mut self, hint: impl Fn(&str) -> Option<String> + Send + Sync + 'static) -> ToolServer<C> {
        self.hint = Arc::new(hint);
        self
    }

    /// The reply to `tools/call` for `name` with `args`.
    pub(crate) fn answer(&self, name: &str, args: Json) -> Result<CallToolResult, ErrorData> {
        let tool = find(&self.tools, name)
            .ok_or_else(|| ErrorData::invalid_params((self.hint)(name).unwrap_or_else(|| format!("unknown tool {name:?}")), None))?;
        match tool.call(&self.ctx, args) {
            Ok((structured, text)) => {
                let mut r = CallToolResult::success(vec![ContentBlock::text(text)]);
                r.structured_content = Some(structured).filter(Json::is_object);
                Ok(r)
            }
            // `data.kind` as on the JSON-RPC methods: a bad argument and an unknown id share a code.
            Err(e @ (ToolError::BadArguments(_) | ToolError::NotFound(_))) => {
                Err(ErrorData::invalid_params(e.to_string(), Some(serde_json::json!({"kind": e.kind().as_str()}))))
            }
            Err(ToolError::Internal(e)) => Err(ErrorData::internal_error(format!("{e:#}"), Some(serde_json::json!({"kind": "fault"})))),
            Err(e @ (ToolError::Refused(_) | ToolError::Conflict(_))) => Ok(CallToolResult::error(vec![ContentBlock::text(e.to_string())])),
        }
    }

    /// Serve on stdin/stdout until the client goes away.
    pub(crate) fn serve_stdio(self) -> anyhow::Result<()> {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        rt.block_on(async {
            let (to_server, server_in) = tokio::io::duplex(PIPE);
            let (server_out, from_server) = tokio::io::duplex(PIPE);
            let (errors_tx, errors_rx) = tokio::sync::mpsc::unbounded_channel();
            // Both pumps run before `serve`, which waits for the client's `initialize`.
            let reader = tokio::spawn(read_lines(tokio::io::stdin(), to_server, errors_tx));
            let writer = tokio::spawn(write_lines(from_server, errors_rx, tokio::io::stdout()));
            let service = self.serve((server_in, server_out)).await?;
            service.waiting().await?;
            reader.abort();
            // Everything rmcp answered goes out before we exit (rmcp has closed its end).
            let _ = tokio::time::timeout(std::time::Duration::from_secs(10), writer).await;
            Ok(())
        })
    }
}

/// The buffer between the stdio pumps and rmcp.
const PIPE: usize = 64 * 1024;

/// Longest line taken from the client (rmcp's own limit): longer ones are answered -32700.
const MAX_LINE: usize = 16 * 1024 * 1024;

/// The JSON-RPC 2.0 answer to a line that is not JSON: a parse error, `id: null` (there is no
/// id to be read from it).
fn parse_error(why: &str) -> String {
    let reply = serde_json::json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": format!("parse error: {why}")}});
    format!("{reply}\n")
}

/// Whether `line` is one JSON value (after an optional BOM, as rmcp reads it); why not.
fn check_line(line: &[u8]) -> Result<(), serde_json::Error> {
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    // Parsed into a value, as rmcp will: serde_json's recursion limit (128) then makes
    // too-deep nesting a parse error (`IgnoredAny` would skip it iteratively, unlimited).
    serde_json::from_slice::<Json>(line).map(|_| ())
}

/// Pass the client's lines to rmcp, answering those that are not JSON with -32700 instead.
/// Blank lines are skipped, as rmcp skips them. Ends at the client's EOF (rmcp then sees its
/// own).
async fn read_lines(
    input: impl tokio::io::AsyncRead + Unpin,
    mut to_server: tokio::io::DuplexStream,
    errors: tokio::sync::mpsc::UnboundedSender<String>,
) {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let mut input = tokio::io::BufReader::new(input);
    let mut line = Vec::new();
    let mut oversized = false;
    loop {
        let (consumed, ended) = {
            let Ok(buf) = input.fill_buf().await else { break };
            if buf.is_empty() {
                break;
            }
            let newline = buf.iter().position(|b| *b == b'\n');
            let take = newline.map_or(buf.len(), |i| i + 1);
            if !oversized && line.len() + take <= MAX_LINE {
                line.extend_from_slice(&buf[..take]);
            } else {
                oversized = true;
                line.clear();
            }
            (take, newline.is_some())
        };
        input.consume(consumed);
        if !ended {
            continue;
        }
        if std::mem::take(&mut oversized) {
            let _ = errors.send(parse_error(&format!("a line over {MAX_LINE} bytes")));
            continue;
        }
        let text = line.strip_suffix(b"\n").unwrap_or(&line);
        let text = text.strip_suffix(b"\r").unwrap_or(text);
        if !text.iter().all(u8::is_ascii_whitespace) {
            match check_line(text) {
                Ok(()) => {
                    if to_server.write_all(&line).await.is_err() {
                        break;
                    }
                }
                Err(why) => {
                    let _ = errors.send(parse_error(&why.to_string()));
                }
            }
        }
        line.clear();
    }
    // A last line without a newline is dropped, as rmcp drops it; then rmcp sees the end.
    let _ = to_server.shutdown().await;
}

/// rmcp's error reply to an invalid request has no `id` at all; JSON-RPC 2.0 requires one,
/// `null` when it could not be read. Other lines pass unchanged.
fn with_id(line: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    // Only rmcp's id-less errors start so (it writes `jsonrpc`, then `id` when there is one).
    if !line.starts_with(br#"{"jsonrpc":"2.0","error":"#) {
        return line.into();
    }
    match serde_json::from_slice::<Json>(line) {
        Ok(Json::Object(mut reply)) if !reply.contains_key("id") => {
            reply.insert("id".into(), Json::Null);
            format!("{}\n", Json::Object(reply)).into_bytes().into()
        }
        _ => line.into(),
    }
}

/// Write rmcp's replies and our parse errors to the client, each a whole line, until rmcp is
/// done.
async fn write_lines(
    from_server: tokio::io::DuplexStream,
    mut errors: tokio::sync::mpsc::UnboundedReceiver<String>,
    mut out: impl tokio::io::AsyncWrite + Unpin,
) {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let mut replies = tokio::io::BufReader::new(from_server);
    let mut line = Vec::new();
    loop {
        tokio::select! {
            n = replies.read_until(b'\n', &mut line) => {
                if !matches!(n, Ok(n) if n > 0) {
                    break;
                }
                if out.write_all(&with_id(&line)).await.and(out.flush().await).is_err() {
                    return;
                }
                line.clear();
            }
            Some(e) = errors.recv() => {
                if out.write_all(e.as_bytes()).await.and(out.flush().await).is_err() {
                    return;
                }
            }
        }
    }
    // Parse errors still queued when rmcp ended are answered too.
    while let Ok(e) = errors.try_recv() {
        let _ = out.write_all(e.as_bytes()).await;
    }
    let _ = out.flush().await;
}

impl<C: Send + Sync + 'static> ServerHandler for ToolServer<C> {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(implementation())
            .with_instructions(self.instructions.clone())
    }

    async fn list_tools(&self, _: Option<PaginatedRequestParams>, _: RequestContext<RoleServer>) -> Result<ListToolsResult, ErrorData> {
        let tools = self.tools.iter().map(|t| rmcp::model::Tool::new(t.name, t.description, t.input_schema.clone())).collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(&self, request: CallToolRequestParams, _: RequestContext<RoleServer>) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.map(Json::Object).unwrap_or(Json::Null);
        self.answer(&request.name, args).map(Into::into)
    }
}
