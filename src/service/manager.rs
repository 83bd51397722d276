//! `guild-hall mcp --manager`: the dispatcher API ([`crate::service::ops::Dispatcher`]) as MCP tools for
//! a main agent that hands out work (the spec's dispatch bridge, REQ-WD-36/39): dispatch, list,
//! status, result, cancel, delete. Its instructions name the worker-capable packages.

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{ServerCapabilities, ServerConfig};
use rmcp::{tool, tool_handler, tool_router, ErrorData, ServerHandler, ServiceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::config::{Home, Project};
use crate::mcp_args::Checked;
use crate::service::ops::{Dispatcher, OpError};

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DispatchArgs {
    /// A short label for the job (shown by list).
    pub description: String,
    /// The full prompt: the outcome wanted and how the worker can verify it.
    pub task: String,
    /// Optional: which worker, and limits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<DispatchConfig>,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DispatchConfig {
    /// A worker package name (default: the project's default_worker).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker: Option<String>,
    /// At most this many agent turns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_turns: Option<u32>,
    /// At most this many US dollars of model use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_budget_usd: Option<f64>,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListArgs {
    /// "simple" (default) or "detailed" (adds description and latest progress).
    #[serde(default)]
    pub detail: Option<String>,
    /// A glob matched against job descriptions, e.g. "*survey*".
    #[serde(default)]
    pub filter: Option<String>,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JobArgs {
    /// The jobId returned by dispatch.
    #[serde(rename = "jobId")]
    pub job_id: String,
}

#[derive(Clone)]
pub struct ManagerServer {
    home: Home,
    project: Project,
    tool_router: ToolRouter<Self>,
}

fn call(s: &ManagerServer, method: &str, params: impl Serialize) -> Result<String, ErrorData> {
    let params = serde_json::to_value(params).map_err(|e| ErrorData::invalid_params(e.to_string(), None))?;
    let d = Dispatcher { home: &s.home, project: &s.project };
    match d.call(method, &params) {
        Some(Ok(v)) => Ok(serde_json::to_string_pretty(&v).unwrap_or_default()),
        Some(Err(OpError::InvalidParams(m))) => Err(ErrorData::invalid_params(m, None)),
        Some(Err(OpError::Internal(e))) => Err(ErrorData::internal_error(format!("{e:#}"), None)),
        None => Err(ErrorData::method_not_found::<rmcp::model::CallToolRequestMethod>()),
    }
}

#[tool_router]
impl ManagerServer {
    pub fn new(home: Home, project: Project) -> ManagerServer {
        ManagerServer { home, project, tool_router: Self::tool_router() }
    }

    #[tool(
        description = "Hand a task to a worker. Returns {jobId} at once; the work runs in the background (its own branch, worktree and process) and is merged when done."
    )]
    async fn dispatch(&self, Parameters(a): Parameters<Checked<DispatchArgs>>) -> Result<String, ErrorData> {
        call(self, "dispatch", a.get()?)
    }

    #[tool(
        description = "List jobs: {jobs: [{jobId, status}]}, or with detail \"detailed\" also description and latest progress. filter is a glob on descriptions."
    )]
    async fn list(&self, Parameters(a): Parameters<Checked<ListArgs>>) -> Result<String, ErrorData> {
        call(self, "list", a.get()?)
    }

    #[tool(
        description = "A job's state: status (running, completed, failed, cancelled), latest progress, the worker's open questions and decisions, error, times. Poll it; relay questions to the person."
    )]
    async fn status(&self, Parameters(a): Parameters<Checked<JobArgs>>) -> Result<String, ErrorData> {
        call(self, "status", a.get()?)
    }

    #[tool(
        description = "A completed job's result: {jobId, output, artifacts}. An error while it is running, or if it failed or was cancelled."
    )]
    async fn result(&self, Parameters(a): Parameters<Checked<JobArgs>>) -> Result<String, ErrorData> {
        call(self, "result", a.get()?)
    }

    #[tool(description = "Stop a job. Idempotent: an ended job just reports its status. Work done so far is kept on its branch.")]
    async fn cancel(&self, Parameters(a): Parameters<Checked<JobArgs>>) -> Result<String, ErrorData> {
        call(self, "cancel", a.get()?)
    }

    #[tool(
        description = "Delete a completed or cancelled job and everything it owns (its file, timeline, records and branches). Running and failed jobs are refused."
    )]
    async fn delete(&self, Parameters(a): Parameters<Checked<JobArgs>>) -> Result<String, ErrorData> {
        call(self, "delete", a.get()?)
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for ManagerServer {
    fn get_info(&self) -> ServerConfig {
        let catalog = crate::worker::Catalog::discover(&self.project.root, &self.home.workers_dir());
        let workers: Vec<String> = catalog
            .packages
            .values()
            .filter(|p| p.can_commission())
            .map(|p| format!("- {}: {}", p.manifest.name, p.manifest.description))
            .collect();
        let default = self.project.config.default_worker.as_deref().map(|w| format!(" (default: {w})")).unwrap_or_default();
        let instructions = format!(
            "You can hand work to workers in project {root}.\n\nWorkers that accept dispatch{default}:\n{list}\n\n\
             How to work with them:\n\
             1. dispatch {{description, task, config: {{worker}}}}: the task is the outcome you want and how the worker can verify it. You get a jobId at once.\n\
             2. Poll status every minute or so. When it lists questions, relay them to the person; the worker carries on meanwhile.\n\
             3. When status is completed, call result and present its output and artifacts to the person, with the decisions the worker recorded. If failed, show the error; the person can ask for a new dispatch.\n\
             4. cancel stops a job; delete removes a completed or cancelled one.",
            root = self.project.root.display(),
            list = if workers.is_empty() { "(none installed)".to_string() } else { workers.join("\n") },
        );
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(crate::mcp_args::implementation())
            .with_instructions(instructions)
    }
}

/// Serve the dispatcher on stdin/stdout until the client goes away.
pub fn serve_stdio(home: Home, project: Project) -> anyhow::Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    rt.block_on(async {
        let service = ManagerServer::new(home, project).serve(rmcp::transport::stdio()).await?;
        service.waiting().await?;
        Ok(())
    })
}
