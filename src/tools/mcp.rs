//! The MCP face of a tool list: one stdio MCP server (rmcp) whose `tools/list` and
//! `tools/call` come from the catalogue. Arguments that do not fit a tool's schema are
//! JSON-RPC invalid-params errors (-32602); an operation that refuses answers with a tool
//! result marked `isError`, so that the agent reads why.

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
pub fn implementation() -> rmcp::model::Implementation {
    let mut i = rmcp::model::Implementation::from_build_env();
    i.name = env!("CARGO_PKG_NAME").to_string();
    i.version = env!("CARGO_PKG_VERSION").to_string();
    i.title = Some("guild-hall".to_string());
    i
}

/// A tool list served over MCP for one context (a worker's commission, a project).
pub struct ToolServer<C> {
    ctx: Arc<C>,
    tools: Arc<Vec<Tool<C>>>,
    instructions: String,
}

impl<C> Clone for ToolServer<C> {
    fn clone(&self) -> Self {
        ToolServer { ctx: self.ctx.clone(), tools: self.tools.clone(), instructions: self.instructions.clone() }
    }
}

impl<C: Send + Sync + 'static> ToolServer<C> {
    pub fn new(ctx: C, tools: Vec<Tool<C>>, instructions: String) -> ToolServer<C> {
        ToolServer { ctx: Arc::new(ctx), tools: Arc::new(tools), instructions }
    }

    /// The reply to `tools/call` for `name` with `args`.
    pub fn answer(&self, name: &str, args: Json) -> Result<CallToolResult, ErrorData> {
        let tool = find(&self.tools, name).ok_or_else(|| ErrorData::invalid_params(format!("unknown tool {name:?}"), None))?;
        match tool.call(&self.ctx, args) {
            Ok((structured, text)) => {
                let mut r = CallToolResult::success(vec![ContentBlock::text(text)]);
                r.structured_content = Some(structured).filter(Json::is_object);
                Ok(r)
            }
            Err(e @ ToolError::BadArguments(_)) => Err(ErrorData::invalid_params(e.to_string(), None)),
            Err(e) => Ok(CallToolResult::error(vec![ContentBlock::text(format!("{e:#}"))])),
        }
    }

    /// Serve on stdin/stdout until the client goes away.
    pub fn serve_stdio(self) -> anyhow::Result<()> {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        rt.block_on(async {
            let service = self.serve(rmcp::transport::stdio()).await?;
            service.waiting().await?;
            Ok(())
        })
    }
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
