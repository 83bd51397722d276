//! `guild-hall mcp`: the worker toolbox ([`crate::tools::toolbox`]) as a stdio MCP server,
//! for agent CLIs that speak MCP. Each tool has the same one effect as its `guild-hall
//! toolbox` twin: an event in the mailbox (or a memory file, or a file under `.lore/`).

use super::{ActivityKind, WorkerContext};
use crate::tools::mcp::ToolServer;

/// Serve the toolbox of the worker's commission or meeting on stdin/stdout until the client
/// goes away: the tools of that kind of activity only.
pub fn serve_stdio(ctx: WorkerContext) -> anyhow::Result<()> {
    let instructions = match ctx.kind {
        ActivityKind::Commission => format!(
            "Toolbox for guild-hall commission {}. Report progress as you go, log questions you cannot resolve, record decisions, store memories worth keeping, deliver files with write_artifact, and call submit_result once when the outcome is achieved and verified.",
            ctx.id
        ),
        ActivityKind::Meeting => format!(
            "Toolbox for guild-hall meeting {}. Link the artifacts you discuss or produce, summarize progress at milestones, record decisions, store memories worth keeping, deliver files with write_artifact, and propose a follow-up meeting when a topic needs another sitting.",
            ctx.id
        ),
    };
    let tools = crate::tools::toolbox::for_kind(ctx.kind);
    ToolServer::new(ctx, tools, instructions).serve_stdio()
}
