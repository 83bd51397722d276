//! The worker toolbox: how a worker talks back (progress, questions, decisions, memory, files
//! under `.lore/`, its result). Served to the worker over MCP (`guild-hall mcp`) and the CLI
//! (`guild-hall toolbox`), and taught in its system prompt — all from this one list.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{ErrorKind, Reply, Tool, ToolError};
use crate::activity::names::ActivityKind;
use crate::worker::toolbox::mailbox::MailBody;
use crate::worker::toolbox::WorkerContext;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Text {
    /// The text to record.
    pub(crate) text: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SubmitResult {
    /// What was achieved and how it was verified, for the person who reads the result.
    pub(crate) summary: String,
    /// Files produced, as paths relative to the worktree (they must exist there).
    #[serde(default)]
    pub(crate) artifacts: Vec<String>,
    /// A reviewer's verdict on the diff it was given: `approve`, or `changes` (the work goes
    /// back to its worker with your comments). Only a reviewer gives one, and must.
    #[serde(default)]
    pub(crate) verdict: Option<crate::worker::toolbox::mailbox::Verdict>,
    /// A reviewer's comment on a line of the work: `PATH:LINE TEXT` (or `PATH TEXT` for the
    /// file as a whole), the path relative to the working directory.
    #[serde(default)]
    pub(crate) comments: Vec<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RecordDecision {
    /// The question that needed deciding.
    pub(crate) question: String,
    /// What was decided.
    pub(crate) decision: String,
    /// Why.
    pub(crate) reasoning: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct StoreMemory {
    /// A short filename-safe name: lowercase letters, digits, '-', '_', '.'. Storing the same
    /// key again replaces it.
    pub(crate) key: String,
    /// What to remember.
    pub(crate) content: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct WriteArtifact {
    /// Where to write, relative to the working directory and under `.lore/` (e.g.
    /// `.lore/research/notes.md`). Directories are created.
    pub(crate) path: String,
    /// The whole content of the file (UTF-8, at most 1 MiB).
    pub(crate) content: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReadArtifact {
    /// A file under `.lore/`, relative to the working directory.
    pub(crate) path: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct LinkArtifact {
    /// The artifact discussed, reviewed or produced, relative to the working directory (it
    /// must exist there).
    pub(crate) path: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ProposeFollowup {
    /// Why the topic needs another sitting: the new meeting's agenda.
    pub(crate) reason: String,
    /// Artifacts the follow-up should start from, relative to the working directory.
    #[serde(default)]
    pub(crate) references: Vec<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReportUsage {
    /// Input tokens not read from a cache.
    pub(crate) input_tokens: u64,
    /// Output tokens.
    pub(crate) output_tokens: u64,
    /// Input tokens read from a cache.
    #[serde(default)]
    pub(crate) cached_tokens: u64,
    /// What it cost in dollars, if known (else `prices:` in config.yaml may price it).
    #[serde(default)]
    pub(crate) usd: Option<f64>,
    /// The model used, as its API names it (what `prices:` is looked up by).
    #[serde(default)]
    pub(crate) model: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Ask {
    /// The question, whole: the person reads it without your context.
    pub(crate) text: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RequestMeeting {
    /// Why a meeting with the person is needed: the meeting's agenda.
    pub(crate) reason: String,
}

/// What `ask` returns: the person's answer (or that there was none in time).
#[derive(Debug, Serialize)]
pub(crate) struct Answer {
    pub(crate) commission: String,
    /// The question's event in the mailbox.
    pub(crate) event: u64,
    pub(crate) answer: String,
}

impl Reply for Answer {
    /// The answer itself: what an agent reads, and what `toolbox ask` prints.
    fn text(&self) -> String {
        self.answer.clone()
    }
}

/// An event recorded in the mailbox of the commission, meeting or wave task.
#[derive(Debug, Serialize)]
pub(crate) struct Recorded {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) commission: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) meeting: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) task: Option<String>,
    pub(crate) event: u64,
}

impl Reply for Recorded {
    fn text(&self) -> String {
        format!(
            "recorded event {} for {}",
            self.event,
            self.commission.as_deref().or(self.meeting.as_deref()).or(self.task.as_deref()).unwrap_or("?")
        )
    }
}

#[derive(Debug, Serialize)]
pub(crate) struct MemoryStored {
    pub(crate) worker: String,
    pub(crate) key: String,
}

impl Reply for MemoryStored {
    fn text(&self) -> String {
        format!("stored memory {} for {}", self.key, self.worker)
    }
}

#[derive(Debug, Serialize)]
pub(crate) struct Written {
    pub(crate) path: String,
    pub(crate) bytes: usize,
}

impl Reply for Written {
    fn text(&self) -> String {
        format!("wrote {} ({})", self.path, crate::activity::timeline::counted(self.bytes, "byte"))
    }
}

#[derive(Debug, Serialize)]
pub(crate) struct Content {
    pub(crate) path: String,
    pub(crate) content: String,
}

impl Reply for Content {
    /// The file itself: what an agent wants to read, and what `toolbox read-artifact` prints.
    fn text(&self) -> String {
        self.content.clone()
    }
}

fn refused(e: anyhow::Error) -> ToolError {
    match ErrorKind::of(&e) {
        // An I/O error (EIO, a full disk) is not the agent's doing: a fault, not a refusal.
        Some(ErrorKind::Fault) => ToolError::Internal(e),
        _ => ToolError::Refused(format!("{e:#}")),
    }
}

fn send(ctx: &WorkerContext, body: MailBody) -> Result<Recorded, ToolError> {
    send_mail(ctx, ctx.send(body))
}

/// An event as recorded (or why it was not) as the tool's reply.
fn send_mail(ctx: &WorkerContext, sent: anyhow::Result<crate::worker::toolbox::mailbox::Mail>) -> Result<Recorded, ToolError> {
    let mail = sent.map_err(refused)?;
    let (commission, meeting, task) = match ctx.kind {
        ActivityKind::Commission => (Some(ctx.id.clone()), None, None),
        ActivityKind::Meeting => (None, Some(ctx.id.clone()), None),
        ActivityKind::Task => (None, None, ctx.task_id.clone().or(Some(ctx.id.clone()))),
    };
    Ok(Recorded { commission, meeting, task, event: mail.seq })
}

/// What a worker that is not a reviewer is told when it gives a verdict.
const NOT_A_REVIEWER: &str = "a verdict and comments are a reviewer worker's; submit your result with a summary and its artifacts";

/// Tools of work (a commission and a wave task alike, so that one package serves both), only a
/// meeting has (REQ-MTG-17), only a wave task has; the rest serve every kind.
const WORK_ONLY: [&str; 4] = ["report_progress", "log_question", "submit_result", "report_usage"];
const MEETING_ONLY: [&str; 3] = ["link_artifact", "propose_followup", "summarize_progress"];
const TASK_ONLY: [&str; 1] = ["task_update"];
/// A person answers a commission's worker, and meets it: not a wave task's (its plan's verify
/// and waves go on without a person) nor a meeting's (the person is there).
const COMMISSION_ONLY: [&str; 2] = ["ask", "request_meeting"];

/// Whether the tool belongs to this kind of activity.
pub(crate) fn serves(name: &str, kind: ActivityKind) -> bool {
    let only = |set: &[&str]| set.contains(&name);
    match kind {
        ActivityKind::Commission => !only(&MEETING_ONLY) && !only(&TASK_ONLY),
        ActivityKind::Meeting => !only(&WORK_ONLY) && !only(&TASK_ONLY) && !only(&COMMISSION_ONLY),
        ActivityKind::Task => !only(&MEETING_ONLY) && !only(&COMMISSION_ONLY),
    }
}

/// Why tool `name` (of the catalogue) is not in the toolbox of `kind`, said so the worker
/// knows what to do instead (a meeting has no result to submit: it ends when the person closes
/// it); `None` when it is there. `shown` is the tool as the face names it (`submit-result`).
pub fn not_here(name: &str, shown: &str, kind: ActivityKind) -> Option<String> {
    if serves(name, kind) {
        return None;
    }
    let what = match kind {
        ActivityKind::Commission => "a commission",
        ActivityKind::Meeting => "a meeting",
        ActivityKind::Task => "a wave task",
    };
    let instead = match (kind, name) {
        (ActivityKind::Meeting, "submit_result") => {
            "a meeting has no result to submit: it ends when the person closes it, and its notes are made from what you record with summarize_progress, record_decision and link_artifact"
        }
        (ActivityKind::Meeting, _) => "in a meeting, tell the person in your answer, and keep what matters with summarize_progress or record_decision",
        (_, "task_update") => "only a wave task reports task updates; report with report_progress and end with submit_result",
        (ActivityKind::Commission, "propose_followup") => {
            "a commission asks guild-hall for a meeting with request_meeting (shell: `toolbox request-meeting --reason TEXT`), which writes the requested meeting for you; to ask the person something and wait for the answer, use ask"
        }
        (ActivityKind::Task, "ask" | "request_meeting") => {
            "a wave task does not wait for a person: log_question records what you cannot resolve (carry on with your best judgement), and report with report_progress"
        }
        _ => "it is a meeting's tool; report with report_progress and end with submit_result",
    };
    Some(format!("{shown} is not in the toolbox of {what}: {instead}"))
}

/// The toolbox of one kind of activity, in the order the system prompt teaches it.
pub(crate) fn for_kind(kind: ActivityKind) -> Vec<Tool<WorkerContext>> {
    tools().into_iter().filter(|t| serves(t.name, kind)).collect()
}

/// Every tool of the worker toolbox, of every kind alike (each face offers
/// only those of its activity: [`for_kind`]).
// Long: one table, a tool an entry (name, description, handler), in the order it is taught.
pub fn tools() -> Vec<Tool<WorkerContext>> {
    vec![
        Tool::new(
            "report_progress",
            "Report what you have done and what comes next. Call it at each milestone and at least every few minutes of long work: it is shown to the person and is your heartbeat.",
            |ctx: &WorkerContext, a: Text| send(ctx, MailBody::Progress { text: a.text }),
        )
        .positional(&["text"]),
        Tool::new(
            "log_question",
            "Record a question you cannot resolve yourself, or a result you cannot verify. It is shown to the person; carry on with your best judgement.",
            |ctx: &WorkerContext, a: Text| send(ctx, MailBody::Question { text: a.text }),
        )
        .positional(&["text"]),
        Tool::new(
            "ask",
            "Ask the person a question and wait for the answer (blocking: up to the commission's ask_timeout, 30 minutes unless set). Use it when you cannot go on well without a person's decision; the answer is returned. Without an answer in time it returns \"no answer: decide yourself and say so in your result\".",
            |ctx: &WorkerContext, a: Ask| {
                let (mail, answer) = ctx.ask(&a.text).map_err(refused)?;
                Ok(Answer { commission: ctx.id.clone(), event: mail.seq, answer })
            },
        )
        .positional(&["text"]),
        Tool::new(
            "request_meeting",
            "Ask for a live meeting with the person (guild-hall writes a meeting request with your worker, the reason as its agenda and this commission as its reference; the person accepts or declines it). Needs the package's meeting capability. Carry on with your work meanwhile.",
            |ctx: &WorkerContext, a: RequestMeeting| send_mail(ctx, ctx.request_meeting(&a.reason)),
        ),
        Tool::new(
            "record_decision",
            "Record a decision others should know about: the question, what you decided, and why.",
            |ctx: &WorkerContext, a: RecordDecision| send(ctx, MailBody::Decision { question: a.question, decision: a.decision, reasoning: a.reasoning }),
        ),
        Tool::new(
            "store_memory",
            "Remember something for your next commissions (conventions, pitfalls, where things are). It appears in your system prompt next time.",
            |ctx: &WorkerContext, a: StoreMemory| {
                ctx.store_memory(&a.key, &a.content).map_err(refused)?;
                Ok(MemoryStored { worker: ctx.worker.clone().unwrap_or_default(), key: a.key })
            },
        ),
        Tool::new(
            "write_artifact",
            "Write a file under .lore/ of your working directory (the whole content; directories are created): how you deliver files such as reports, a commission's declared outputs (name them in its result) or what a meeting produces (link it).",
            |ctx: &WorkerContext, a: WriteArtifact| {
                let path = ctx.write_artifact(&a.path, &a.content).map_err(refused)?;
                Ok(Written { path, bytes: a.content.len() })
            },
        )
        .positional(&["path", "content"])
        .stdin("content"),
        Tool::new("read_artifact", "Read a file under .lore/ of your working directory.", |ctx: &WorkerContext, a: ReadArtifact| {
            let content = ctx.read_artifact(&a.path).map_err(refused)?;
            Ok(Content { path: a.path, content })
        })
        .positional(&["path"]),
        Tool::new(
            "submit_result",
            "Declare your work done, once, after you have achieved and verified the outcome. Without it a commission counts as failed (a wave task's result is recorded as its completion; its exit decides). Give a summary and the files you produced (relative to your working directory). A reviewer gives its verdict instead (verdict approve or changes, and comments PATH:LINE TEXT).",
            |ctx: &WorkerContext, a: SubmitResult| {
                match (&ctx.reviewer, a.verdict) {
                    (Some(_), Some(verdict)) => {
                        let comments: Vec<_> =
                            a.comments.iter().map(|c| crate::worker::toolbox::line_comment(c)).collect::<anyhow::Result<_>>().map_err(refused)?;
                        send(ctx, MailBody::Verdict { verdict, summary: a.summary, comments })
                    }
                    (Some(_), None) => Err(ToolError::refused(
                        "you are a reviewer: submit your verdict, approve or changes (shell: `submit-result --verdict changes --comment 'PATH:LINE TEXT' SUMMARY`)",
                    )),
                    (None, Some(_)) => Err(ToolError::refused(NOT_A_REVIEWER)),
                    (None, None) if !a.comments.is_empty() => Err(ToolError::refused(NOT_A_REVIEWER)),
                    (None, None) => {
                        let artifacts = crate::worker::toolbox::normalise_artifacts(&a.artifacts).map_err(refused)?;
                        send(ctx, MailBody::Result { summary: a.summary, artifacts })
                    }
                }
            },
        )
        .flags(&[("artifacts", "artifact"), ("comments", "comment")]),
        Tool::new(
            "report_usage",
            "Report the tokens (and dollars, if known) your own calls of a model API used since your last report; they add up. Only for a worker that calls a model itself: an agent CLI's usage (Claude Code, Codex, Gemini CLI) is read from its output.",
            |ctx: &WorkerContext, a: ReportUsage| {
                let usd = match a.usd {
                    Some(d) => Some(
                        crate::worker::usage::Usd::from_dollars(d)
                            .ok_or_else(|| ToolError::refused(format!("usd: {d} is not an amount of dollars")))?,
                    ),
                    None => None,
                };
                let usage = crate::worker::usage::Usage {
                    input_tokens: a.input_tokens,
                    output_tokens: a.output_tokens,
                    cached_tokens: a.cached_tokens,
                    usd,
                };
                send(ctx, MailBody::UsageReport(crate::worker::usage::Reading { usage, model: a.model }))
            },
        ),
        Tool::new(
            "link_artifact",
            "Link an artifact to this meeting: one you discussed, reviewed or produced. Linked artifacts are listed in the meeting and its notes.",
            |ctx: &WorkerContext, a: LinkArtifact| {
                ctx.check_artifact(&a.path).map_err(refused)?;
                let path = crate::artifact::ids::validate_rel_path(&a.path).map_err(|e| ToolError::refused(e.to_string()))?;
                send(ctx, MailBody::Link { path })
            },
        )
        .positional(&["path"]),
        Tool::new(
            "summarize_progress",
            "Snapshot the meeting's progress so far: appended to the meeting's notes and log. Use it at milestones of a long meeting.",
            |ctx: &WorkerContext, a: Text| send(ctx, MailBody::Summary { text: a.text }),
        )
        .positional(&["text"]),
        Tool::new(
            "propose_followup",
            "Propose another meeting when a topic needs continuing beyond this sitting: a meeting request for the same worker, with the reason as its agenda and the artifacts to start from. The person accepts or declines it.",
            |ctx: &WorkerContext, a: ProposeFollowup| {
                let references = crate::worker::toolbox::normalise_artifacts(&a.references).map_err(refused)?;
                if a.reason.trim().is_empty() {
                    return Err(ToolError::refused("a follow-up needs a reason (its agenda)"));
                }
                send(ctx, MailBody::Followup { reason: a.reason, references })
            },
        )
        .flags(&[("references", "ref")]),
        Tool::new(
            "task_update",
            "Report this wave task's state (Kiln's TaskUpdate): status (queued, in_progress, verify_passed, verify_failed, done, failed, canceled, shutdown_requested, shutdown_ack), changed_ops, verify_summary ({result: pass|fail|skipped, command_summary, checks: [{name, outcome}]}), evidence_paths (under .lore-artifacts/<task>/), error ({code, message, details_path}), timestamps ({started_at, updated_at, completed_at}, RFC 3339 UTC), a sequence rising with each update and an idempotency_key stable for the same update; task_id, phase, stage, worktree_path and emitted_at are filled in for you. Answer a shutdown request with status shutdown_ack.",
            |ctx: &WorkerContext, mut a: crate::worker::toolbox::mailbox::TaskUpdate| {
                let Some(mine) = &ctx.task_id else {
                    return Err(ToolError::refused("GUILD_HALL_TASK_ID is not set: task_update is for a wave task's worker"));
                };
                let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
                a.complete(mine, &ctx.worktree, &now).map_err(|e| ToolError::refused(e.to_string()))?;
                if a.idempotency_key.trim().is_empty() {
                    return Err(ToolError::refused("idempotency_key must not be empty"));
                }
                for op in &a.changed_ops {
                    for p in std::iter::once(&op.path).chain(op.from_path.as_ref()) {
                        crate::artifact::ids::validate_rel_path(p).map_err(|e| ToolError::refused(format!("changed_ops: {e}")))?;
                    }
                }
                send(ctx, MailBody::TaskUpdate(Box::new(a)))
            },
        ),
    ]
}

/// The toolbox section of a worker's system prompt: each tool by its MCP name and its shell
/// spelling, generated from [`for_kind`].
pub(crate) fn instructions(kind: ActivityKind) -> String {
    let what = match kind {
        ActivityKind::Commission => "working on a guild-hall commission. Report back",
        ActivityKind::Meeting => "in a guild-hall meeting with a person. Record what matters",
        ActivityKind::Task => "a task of a guild-hall plan's wave: change files in your working directory (never commit), then report",
    };
    let mut out = format!(
        "## Toolbox\n\nYou are {what} with these tools: as MCP tools of the\nnames below if you have them, or from a shell as `\"$GUILD_HALL_BIN\" toolbox <name> ...`\nwith the shell spelling given (underscores work there too).\n\n",
    );
    for t in for_kind(kind) {
        out.push_str(&format!("- {} (shell: `{}`): {}\n", t.name, t.cli_usage(), t.description));
    }
    out
}

/// `guild-hall mcp`: the toolbox of the worker's commission or meeting as a stdio MCP server,
/// for agent CLIs that speak MCP (the tools of that kind of activity only), until the client
/// goes away. Each tool has the same one effect as its `guild-hall toolbox` twin.
pub fn serve_stdio(ctx: WorkerContext) -> anyhow::Result<()> {
    let instructions = match ctx.kind {
        ActivityKind::Commission => format!(
            "Toolbox for guild-hall commission {}. Report progress as you go, log questions you cannot resolve (or ask the person and wait for the answer), record decisions, store memories worth keeping, deliver files with write_artifact, and call submit_result once when the outcome is achieved and verified.",
            ctx.id
        ),
        ActivityKind::Meeting => format!(
            "Toolbox for guild-hall meeting {}. Link the artifacts you discuss or produce, summarize progress at milestones, record decisions, store memories worth keeping, deliver files with write_artifact, and propose a follow-up meeting when a topic needs another sitting.",
            ctx.id
        ),
        ActivityKind::Task => format!(
            "Toolbox for wave task {}. Change files in your working directory (never commit), leave evidence under .lore-artifacts/, report progress as you go and with task_update, and call submit_result once with a summary when done; answer a shutdown request with shutdown_ack.",
            ctx.task_id.as_deref().unwrap_or(&ctx.id)
        ),
    };
    let tools = for_kind(ctx.kind);
    let kind = ctx.kind;
    let all = super::toolbox::tools();
    // A tool of another kind's toolbox is refused saying what to do instead, not "unknown".
    let hint = move |name: &str| super::find(&all, name).and_then(|t| not_here(t.name, t.name, kind));
    super::mcp::ToolServer::new(ctx, tools, instructions).with_hint(hint).serve_stdio()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the agent's own request made fail is refused (it reads why); an I/O fault is not.
    #[test]
    fn a_fault_is_not_told_to_the_agent_as_a_refusal() {
        let io = |errno: i32| anyhow::Error::from(std::io::Error::from_raw_os_error(errno)).context("writing the mailbox");
        assert!(matches!(refused(io(libc::EIO)), ToolError::Internal(_)));
        assert!(matches!(refused(io(libc::ENOSPC)), ToolError::Internal(_)));
        assert!(matches!(refused(io(libc::ELOOP)), ToolError::Refused(m) if m.starts_with("writing the mailbox: ")));
        assert!(matches!(refused(io(libc::ENOENT)), ToolError::Refused(_)), "a missing file is told to the agent");
        assert!(matches!(refused(anyhow::anyhow!("must be under .lore/")), ToolError::Refused(m) if m == "must be under .lore/"));
    }

    /// One package serves a commission and a wave task: the tools of work serve both, never a
    /// meeting; `task_update` only a task.
    #[test]
    fn the_tools_of_work_serve_commissions_and_tasks() {
        for tool in WORK_ONLY {
            assert!(serves(tool, ActivityKind::Commission) && serves(tool, ActivityKind::Task), "{tool}");
            assert!(!serves(tool, ActivityKind::Meeting), "{tool}");
        }
        assert!(serves("task_update", ActivityKind::Task) && !serves("task_update", ActivityKind::Commission));
        assert!(!serves("link_artifact", ActivityKind::Task) && serves("link_artifact", ActivityKind::Meeting));
        assert_eq!(not_here("submit_result", "submit-result", ActivityKind::Commission), None);
        let why = not_here("submit_result", "submit-result", ActivityKind::Meeting).expect("refused");
        assert!(
            why.starts_with(
                "submit-result is not in the toolbox of a meeting: a meeting has no result to submit: it ends when the person closes it"
            ),
            "{why}"
        );
        assert!(instructions(ActivityKind::Task).contains("submit_result"));
    }
}
