//! `guild-hall mcp`: the toolbox as a stdio MCP server (rmcp), for agent CLIs that speak MCP.
//! Every tool has the same one effect as its `guild-hall toolbox` twin: an event in the
//! mailbox (or a memory file), through [`WorkerContext`]. Bad arguments are MCP errors.

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{ServerCapabilities, ServerConfig};
use rmcp::{tool, tool_handler, tool_router, ErrorData, ServerHandler, ServiceExt};
use schemars::JsonSchema;
use serde::Deserialize;

use super::mailbox::MailBody;
use super::WorkerContext;
use crate::mcp_args::Checked;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TextArgs {
    /// The text to record.
    pub text: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResultArgs {
    /// What was achieved and how it was verified, for the person who reads the result.
    pub summary: String,
    /// Files produced, as paths relative to the worktree (they must exist there).
    #[serde(default)]
    pub artifacts: Vec<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DecisionArgs {
    /// The question that needed deciding.
    pub question: String,
    /// What was decided.
    pub decision: String,
    /// Why.
    pub reasoning: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryArgs {
    /// A short filename-safe name: lowercase letters, digits, '-', '_', '.'. Storing the same
    /// key again replaces it.
    pub key: String,
    /// What to remember.
    pub content: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteArtifactArgs {
    /// Where to write, relative to your working directory and under `.lore/` (e.g.
    /// `.lore/research/notes.md`). Directories are created.
    pub path: String,
    /// The whole content of the file (UTF-8, at most 1 MiB).
    pub content: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadArtifactArgs {
    /// A file under `.lore/`, relative to your working directory.
    pub path: String,
}

/// The MCP face of the toolbox for one commission (from the environment).
#[derive(Clone)]
pub struct ToolboxServer {
    ctx: WorkerContext,
    tool_router: ToolRouter<Self>,
}

fn invalid(e: anyhow::Error) -> ErrorData {
    ErrorData::invalid_params(format!("{e:#}"), None)
}

#[tool_router]
impl ToolboxServer {
    pub fn new(ctx: WorkerContext) -> ToolboxServer {
        ToolboxServer { ctx, tool_router: Self::tool_router() }
    }

    fn send(&self, body: MailBody) -> Result<String, ErrorData> {
        let mail = self.ctx.send(body).map_err(invalid)?;
        Ok(format!("recorded (event {})", mail.seq))
    }

    #[tool(
        description = "Report what you have done and what comes next. Call it at each milestone and at least every few minutes of long work: it is shown to the person and is your heartbeat."
    )]
    async fn report_progress(&self, Parameters(a): Parameters<Checked<TextArgs>>) -> Result<String, ErrorData> {
        let a = a.get()?;
        self.send(MailBody::Progress { text: a.text })
    }

    #[tool(
        description = "Declare the commission done, once, after you have achieved and verified the outcome. Without it the commission counts as failed. Give a summary and the files you produced (relative to your working directory)."
    )]
    async fn submit_result(&self, Parameters(a): Parameters<Checked<ResultArgs>>) -> Result<String, ErrorData> {
        let a = a.get()?;
        let artifacts = super::normalise_artifacts(&a.artifacts).map_err(invalid)?;
        self.send(MailBody::Result { summary: a.summary, artifacts })
    }

    #[tool(
        description = "Record a question you cannot resolve yourself, or a result you cannot verify. It is shown to the person; carry on with your best judgement."
    )]
    async fn log_question(&self, Parameters(a): Parameters<Checked<TextArgs>>) -> Result<String, ErrorData> {
        let a = a.get()?;
        self.send(MailBody::Question { text: a.text })
    }

    #[tool(description = "Record a decision others should know about: the question, what you decided, and why.")]
    async fn record_decision(&self, Parameters(a): Parameters<Checked<DecisionArgs>>) -> Result<String, ErrorData> {
        let a = a.get()?;
        self.send(MailBody::Decision { question: a.question, decision: a.decision, reasoning: a.reasoning })
    }

    #[tool(
        description = "Write a file under .lore/ of your working directory (the whole content; directories are created). Use it to deliver files such as reports or a commission's declared outputs, then name them in submit_result."
    )]
    async fn write_artifact(&self, Parameters(a): Parameters<Checked<WriteArtifactArgs>>) -> Result<String, ErrorData> {
        let a = a.get()?;
        let rel = self.ctx.write_artifact(&a.path, &a.content).map_err(invalid)?;
        Ok(format!("wrote {rel} ({} bytes)", a.content.len()))
    }

    #[tool(description = "Read a file under .lore/ of your working directory.")]
    async fn read_artifact(&self, Parameters(a): Parameters<Checked<ReadArtifactArgs>>) -> Result<String, ErrorData> {
        let a = a.get()?;
        self.ctx.read_artifact(&a.path).map_err(invalid)
    }

    #[tool(
        description = "Remember something for your next commissions (conventions, pitfalls, where things are). It appears in your system prompt next time."
    )]
    async fn store_memory(&self, Parameters(a): Parameters<Checked<MemoryArgs>>) -> Result<String, ErrorData> {
        let a = a.get()?;
        self.ctx.store_memory(&a.key, &a.content).map_err(invalid)?;
        Ok(format!("stored memory {}", a.key))
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for ToolboxServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(crate::mcp_args::implementation())
            .with_instructions(format!(
                "Toolbox for guild-hall commission {}. Report progress as you go, log questions you cannot resolve, record decisions, store memories worth keeping, and call submit_result once when the outcome is achieved and verified.",
                self.ctx.commission
            ))
    }
}

/// Serve the toolbox on stdin/stdout until the client goes away.
pub fn serve_stdio(ctx: WorkerContext) -> anyhow::Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    rt.block_on(async {
        let service = ToolboxServer::new(ctx).serve(rmcp::transport::stdio()).await?;
        service.waiting().await?;
        Ok(())
    })
}
