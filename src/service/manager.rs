//! `guild-hall mcp --manager`: the dispatcher ([`crate::tools::dispatcher`]) as a stdio MCP
//! server for a main agent that hands out work (the spec's dispatch bridge, REQ-WD-36/39):
//! dispatch, list, status, result, cancel, delete. Its instructions name the worker-capable
//! packages.

use crate::config::{Home, Project};
use crate::ops::dispatcher::Dispatcher;
use crate::tools::mcp::ToolServer;

/// What the main agent is told at `initialize`: the workers it can dispatch to, and how.
fn instructions(home: &Home, project: &Project) -> String {
    let catalog = crate::worker::Catalog::discover(&project.root, &home.workers_dir());
    let workers: Vec<String> = catalog
        .packages
        .values()
        .filter(|p| p.can_commission())
        .map(|p| format!("- {}: {}", p.manifest.name, p.manifest.description))
        .collect();
    let default = project.config.default_worker.as_deref().map(|w| format!(" (default: {w})")).unwrap_or_default();
    let instructions = format!(
            "You can hand work to workers in project {root}.\n\nWorkers that accept dispatch{default}:\n{list}\n\n\
             How to work with them:\n\
             1. dispatch {{description, task, config: {{worker}}}}: the task is the outcome you want and how the worker can verify it. You get a jobId at once.\n\
             2. Poll status every minute or so. When it lists questions, relay them to the person; the worker carries on meanwhile. openQuestions are questions the worker waits on: relay each to the person and give their answer with answer {{jobId, text, question}} (never answer for them).\n\
             3. When status is completed, call result and present its output and artifacts to the person, with the decisions the worker recorded. If failed, show the error; the person can ask for a new dispatch.\n\
             4. cancel stops a job; delete removes a completed or cancelled one.\n\
             A job in status review waits for a verdict: show the person its work, then approve {{jobId}} merges it, revise {{jobId, feedback: [{{text, path?, line?}}]}} sends it back to the same branch, reject {{jobId, message?}} cancels it (its branch kept).\n\
             5. When something needs talking through with the person, meeting_request {{worker, reason, references}} asks them for a live meeting with a worker; they accept or decline it.\n\
             6. diff {{jobId}} shows a job's change (what its branch brings onto the integration branch), to review it or show it to the person.",
            root = project.root.display(),
            list = if workers.is_empty() { "(none installed)".to_string() } else { workers.join("\n") },
        );
    instructions
}

/// Serve the dispatcher on stdin/stdout until the client goes away.
pub fn serve_stdio(home: Home, project: Project) -> anyhow::Result<()> {
    let text = instructions(&home, &project);
    ToolServer::new(Dispatcher { home, project }, crate::tools::dispatcher::tools(), text).serve_stdio()
}
