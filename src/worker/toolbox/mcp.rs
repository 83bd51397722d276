//! `guild-hall mcp`: the worker toolbox ([`crate::tools::toolbox`]) as a stdio MCP server,
//! for agent CLIs that speak MCP. Each tool has the same one effect as its `guild-hall
//! toolbox` twin: an event in the mailbox (or a memory file, or a file under `.lore/`).

use super::WorkerContext;
use crate::tools::mcp::ToolServer;

/// Serve the toolbox of the worker's commission on stdin/stdout until the client goes away.
pub fn serve_stdio(ctx: WorkerContext) -> anyhow::Result<()> {
    let instructions = format!(
        "Toolbox for guild-hall commission {}. Report progress as you go, log questions you cannot resolve, record decisions, store memories worth keeping, deliver files with write_artifact, and call submit_result once when the outcome is achieved and verified.",
        ctx.commission
    );
    ToolServer::new(ctx, crate::tools::toolbox::tools(), instructions).serve_stdio()
}
