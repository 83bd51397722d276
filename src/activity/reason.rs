//! Why an activity stands where it does, as guild-hall writes it into an artifact's `reason:`
//! and its timeline's status moves: variants with their data (an exit, a refusal, a request),
//! rendered to text only when written ([`std::fmt::Display`]). The reasons that are state — a
//! landing that waits, a meeting's close that waits — are read back in one place
//! ([`Reason::parse`]); any other is words for people, read back as [`Reason::Said`].

use std::fmt;

use super::state::ExitInfo;

/// How a waiting landing's reason begins (`merge waiting: <why>`).
const MERGE_WAITING: &str = "merge waiting";
/// How a meeting's close that waits for its work to be secured says so.
const CLOSING_WAITS: &str = "closing waits";
/// An attempt with no sign of life for too long (the liveness rules' word for it).
const UNRESPONSIVE: &str = "process unresponsive";
/// A task's supervisor that died without recording how its worker ended.
const SUPERVISOR_DIED: &str = "its supervisor died without recording how the worker ended (killed, or a reboot)";

/// What a failing check leads to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AfterCheck {
    /// An automatic revise: `max_revisions` is not reached.
    SendBack,
    /// `max_revisions` reached, `review: auto`: the commission fails.
    Fail,
    /// `max_revisions` reached, `review: required`: it waits in review, the failure shown.
    Review { id: String },
}

/// A reason guild-hall writes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Reason {
    /// A squash-merge that cannot land yet (a person's checkout of the integration branch has
    /// changes it would touch, a ref lock): tried again by the next pass.
    MergeWaiting(String),
    /// A meeting's close that waits until its work is safe on its branch (a full disk, say).
    ClosingWaits(String),
    /// Its worker exited (or its activation was refused) without a result: how.
    Exited(ExitInfo),
    /// Its worker exited cleanly without submitting its result.
    NoResult,
    /// Its worker is gone and no exit was recorded (a restart, a killed shim).
    ProcessLost,
    /// Its worker ran past its wall-clock limit: the words that name the limit.
    Overtime(String),
    /// Its attempt spent past its budget (`resources.max_budget_usd`, `max_tokens`): stopped.
    BudgetExceeded(super::budget::Overspent),
    /// A daily budget is reached: it waits for the day to end before it is dispatched.
    DailyBudgetReached(super::budget::DailyReached),
    /// No sign of life for longer than `stale_after`.
    Unresponsive,
    /// Its mailbox cannot be read (why), so a result it may hold cannot be either.
    MailboxUnreadable(String),
    /// Its work could not be merged (the landing's own words replace this when it acts).
    NotMerged,
    /// Its worker submitted its result.
    ResultSubmitted,
    /// Its result submitted and committed on its branch, nothing merged: it waits for a person
    /// to approve, revise or reject it (`review: required`).
    AwaitsReview { id: String },
    /// A person approved the work in review: merged.
    Approved,
    /// Sent back from review for a new attempt on the same branch, with feedback on attempt
    /// `after` (how many items, and from whom: a person, a check, a conflict, a reviewer).
    Revised { after: u32, items: usize, from: &'static str },
    /// A `checks:` command failed after submit (`command`, how it `ended`), with
    /// `revisions` automatic send-backs made already: what comes of it.
    CheckFailed { command: String, ended: String, revisions: u32, then: AfterCheck },
    /// Its squash merge conflicted outside `.lore/` on `paths` (empty: not yet known), with
    /// `revisions` automatic send-backs made already: held to be sent back to its worker with
    /// the integration branch merged in.
    Conflicted { paths: Vec<String>, revisions: u32 },
    /// Held in review for its reviewer workers (`reviewers:`): `reviewer` (the `index`th of
    /// `of`) reviews it now, or is to.
    AwaitsReviewers { reviewer: String, index: usize, of: usize },
    /// Reviewer workers asked for changes (`reviewers`, with `comments` in all), with
    /// `revisions` automatic send-backs made already: what comes of it.
    ReviewChanges { reviewers: Vec<String>, comments: usize, revisions: u32, then: AfterCheck },
    /// A reviewer worker ended without a verdict (how): the work waits for a person.
    NoVerdict { reviewer: String, how: String, id: String },
    /// Every reviewer worker approved: merged (a commission), completed (a plan).
    ReviewersApproved { count: usize },
    /// A plan's reviewer workers asked for changes to its integrated result (`reviewers`,
    /// `comments` in all), and who fixes it: a fix-forward commission (its id and fixer), or a
    /// person.
    PlanReviewChanges { reviewers: Vec<String>, comments: usize, plan: String, fix: Option<(String, String)> },
    /// A plan's reviewer worker ended without a verdict (how): halted for a person.
    PlanNoVerdict { reviewer: String, how: String, plan: String },
    /// A person rejected the work in review (with their words, if any): its branch is kept.
    Rejected { branch: String, text: Option<String> },
    /// A person gave it up for good (`commission abandon`, `desired: abandoned`), with their
    /// words, if any.
    Abandoned { text: Option<String> },
    /// Its worker's shim is running, with this pid.
    Running { shim_pid: i32 },
    /// Its worker ran (a result came in before its run was seen).
    Ran,
    /// Given to this worker.
    DispatchedTo(String),
    /// Nothing it waits for is missing any more (dependencies, this worker's package).
    Unblocked { worker: String },
    /// What it waits for, in words shared with `check` and `status`.
    Waiting(String),
    /// A person's request, carried out: what was asked (`status set to cancelled`,
    /// `desired dispatched`, …).
    Requested(String),
    /// A person's request refused: what was asked (when the words name it), and why not.
    Refused { request: Option<String>, why: String },
    /// A plan submitted (draft → pending).
    Submitted,
    /// A plan started at its first wave.
    Started,
    /// A person cancelled it.
    CancelledByPerson,
    /// A person retried it.
    RetriedByPerson,
    /// A wave integrated, verified next.
    WaveIntegrated(usize),
    /// A wave done, the next one begins.
    WaveDone(usize),
    /// Every wave integrated and verified.
    AllVerified,
    /// A task of the plan's wave failed (why): the wave shut down; how to retry.
    TaskFailed { task: String, label: String, why: String, plan: String },
    /// Verify failed after a wave (how), and who fixes it: a fix-forward commission (its id and
    /// fixer), or a person.
    VerifyFailed { wave: usize, how: String, plan: String, fix: Option<(String, String)> },
    /// The fix-forward commission merged: verify again.
    FixMerged(String),
    /// A task's worker cannot run here: the plan waits (task, label, why).
    TaskWaits { task: String, label: String, why: String },
    /// A task's worker cannot start (why).
    CannotStart(String),
    /// A task shut down, as asked.
    ShutDown,
    /// A task that ended while its wave was shut down.
    EndedInShutdown,
    /// A task shut down because another task of its wave failed.
    ShutDownForFailure,
    /// Its supervisor died without recording how the worker ended.
    SupervisorDied,
    /// A task's worktree is gone (what is there instead), its supervisor dead too or not.
    WorktreeGone { gone: String, died: bool },
    /// A task's work lost before the copy-back (its worktree gone: what is there instead).
    WorkLost(String),
    /// A task's mailbox cannot be read (why), so whether it reported failure cannot be known.
    FailureUnknown(String),
    /// The task's worker reported failure (its words).
    ReportedFailure(String),
    /// Why a task would run again, past its reruns: it fails instead.
    NoMoreReruns { why: Box<Reason>, reruns: u32 },
    /// Its agent hit a rate or usage limit (its words), which resets at `resets_at` when it said
    /// so: not a failure, it runs again from `not_before` on.
    UsageLimited {
        agent: String,
        said: String,
        resets_at: Option<chrono::DateTime<chrono::Utc>>,
        not_before: chrono::DateTime<chrono::Utc>,
    },
    /// Its worker's package runs at most `max` attempts at once in this home (`max_concurrent:`),
    /// and that many run: it waits for one to end.
    PackageAtCapacity { worker: String, max: usize },
    /// Reviewer `index` (of `of`) is to review the work (a commission's, a plan's), and its package runs as many
    /// attempts as its `max_concurrent:` allows (`max`): the review waits for one to end.
    ReviewerAtCapacity { reviewer: String, index: usize, of: usize, max: usize },
    /// A meeting opened by a person (written open).
    OpenedByPerson,
    /// A meeting's request accepted.
    RequestAccepted,
    /// A meeting's request declined.
    RequestDeclined,
    /// A meeting closed by a person.
    ClosedByPerson,
    /// A meeting that cannot open: its worker cannot meet (why).
    CannotOpen(String),
    /// A meeting that cannot open: the cap is reached by these open meetings.
    CapReached { cap: usize, open: Vec<String> },
    /// Any other reason: for people only.
    Said(String),
}

impl Reason {
    /// A reason as read back from an artifact's `reason:`.
    pub(crate) fn parse(text: &str) -> Reason {
        let rest = |prefix: &str| text.strip_prefix(prefix).map(|r| r.strip_prefix(": ").unwrap_or(r).to_string());
        if let Some(why) = rest(MERGE_WAITING) {
            return Reason::MergeWaiting(why);
        }
        if let Some(why) = rest(CLOSING_WAITS) {
            return Reason::ClosingWaits(why);
        }
        Reason::Said(text.to_string())
    }

    /// A landing waits.
    pub(crate) fn merge_waits(&self) -> bool {
        matches!(self, Reason::MergeWaiting(_))
    }

    /// What is ended waits for something to finish it (a merge, securing a meeting's work): the
    /// reason goes once it is done.
    pub(crate) fn waits(&self) -> bool {
        matches!(self, Reason::MergeWaiting(_) | Reason::ClosingWaits(_))
    }

    /// Work held in review only to be sent straight back to its worker (a failing check, a
    /// conflict): it waits for its worker, not a person.
    pub(crate) fn sends_back(&self) -> bool {
        matches!(
            self,
            Reason::CheckFailed { then: AfterCheck::SendBack, .. }
                | Reason::Conflicted { .. }
                | Reason::AwaitsReviewers { .. }
                | Reason::ReviewerAtCapacity { .. }
                | Reason::ReviewChanges { then: AfterCheck::SendBack, .. }
        )
    }
}

impl fmt::Display for Reason {
    // Long: one arm per variant, so every reason's words are read side by side (and beside
    // `parse`, which reads them back).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::MergeWaiting(why) => write!(f, "{MERGE_WAITING}: {why}"),
            Reason::ClosingWaits(why) => write!(f, "{CLOSING_WAITS}: {why}"),
            Reason::Exited(exit) => f.write_str(&exit.describe()),
            Reason::NoResult => f.write_str("completed without submitting result"),
            Reason::ProcessLost => f.write_str("process lost on restart"),
            Reason::Overtime(why) => f.write_str(why),
            Reason::BudgetExceeded(over) => write!(f, "{over}; its work is kept on its branch"),
            Reason::DailyBudgetReached(reached) => write!(f, "{reached}"),
            Reason::Unresponsive => f.write_str(UNRESPONSIVE),
            Reason::MailboxUnreadable(why) => {
                write!(f, "its mailbox cannot be read ({why}), so a result it may hold cannot be read either")
            }
            Reason::NotMerged => f.write_str("the attempt's work could not be merged"),
            Reason::ResultSubmitted => f.write_str("worker submitted its result"),
            Reason::AwaitsReview { id } => write!(
                f,
                "needs you: its work is committed on its branch, nothing merged; guild-hall approve {id}, revise {id} -m TEXT, or reject {id}"
            ),
            Reason::Approved => f.write_str("approved in review"),
            Reason::Revised { after, items, from } => write!(
                f,
                "sent back for revision of attempt {after} ({} from the {from}); it continues on the same branch",
                crate::activity::timeline::counted(*items, "feedback item")
            ),
            Reason::CheckFailed { command, ended, revisions, then } => {
                write!(f, "the check `{command}` failed ({ended})")?;
                match then {
                    AfterCheck::SendBack => f.write_str("; sent back to its worker with the output's tail"),
                    AfterCheck::Fail => {
                        write!(f, " after {} (max_revisions)", crate::activity::timeline::counted(*revisions as usize, "automatic revision"))
                    }
                    AfterCheck::Review { id } => write!(
                        f,
                        "; needs you (after {}): its work is committed on its branch, nothing merged; guild-hall approve {id}, revise {id} -m TEXT, or reject {id}",
                        crate::activity::timeline::counted(*revisions as usize, "automatic revision")
                    ),
                }
            }
            Reason::Conflicted { paths, revisions: _ } if paths.is_empty() => f.write_str(
                "its merge conflicted; sent back to its worker with the integration branch merged in, the conflict markers left for it",
            ),
            Reason::Conflicted { paths, revisions: _ } => write!(
                f,
                "its merge conflicted in: {}; sent back to its worker with the integration branch merged in, the conflict markers left for it",
                paths.join(", ")
            ),
            Reason::AwaitsReviewers { reviewer, index, of } => {
                write!(f, "its work is committed on its branch and reviewed by its reviewer workers: {reviewer} ({} of {of})", index + 1)
            }
            Reason::ReviewChanges { reviewers, comments, revisions, then } => {
                write!(
                    f,
                    "{} asked for changes ({})",
                    reviewers.join(", "),
                    crate::activity::timeline::counted(*comments, "comment")
                )?;
                match then {
                    AfterCheck::SendBack => f.write_str("; sent back to its worker with the comments"),
                    AfterCheck::Fail => {
                        write!(f, " after {} (max_revisions)", crate::activity::timeline::counted(*revisions as usize, "automatic revision"))
                    }
                    AfterCheck::Review { id } => write!(
                        f,
                        "; needs you (after {}): its work is committed on its branch, nothing merged; guild-hall approve {id}, revise {id} -m TEXT, or reject {id}",
                        crate::activity::timeline::counted(*revisions as usize, "automatic revision")
                    ),
                }
            }
            Reason::NoVerdict { reviewer, how, id } => write!(
                f,
                "reviewer {reviewer} gave no verdict ({how}); needs you: its work is committed on its branch, nothing merged; guild-hall approve {id}, revise {id} -m TEXT, or reject {id}"
            ),
            Reason::PlanReviewChanges { reviewers, comments, plan, fix } => {
                write!(
                    f,
                    "{} asked for changes to the plan's integrated result ({}; the timeline has them); ",
                    reviewers.join(", "),
                    crate::activity::timeline::counted(*comments, "comment")
                )?;
                match fix {
                    Some((id, fixer)) => write!(f, "fix-forward commission {id} by {fixer} is under way"),
                    None => write!(f, "fix it on the integration branch, then retry with guild-hall plan retry {plan}"),
                }
            }
            Reason::PlanNoVerdict { reviewer, how, plan } => {
                write!(f, "reviewer {reviewer} gave no verdict ({how}); retry with guild-hall plan retry {plan}")
            }
            Reason::ReviewersApproved { count } => {
                write!(f, "approved by its {}", crate::activity::timeline::counted(*count, "reviewer worker"))
            }
            Reason::Rejected { branch, text: Some(t) } => write!(f, "rejected in review: {t}; its work is kept on {branch}"),
            Reason::Rejected { branch, text: None } => write!(f, "rejected in review; its work is kept on {branch}"),
            Reason::Abandoned { text: Some(t) } => write!(f, "abandoned: {t}"),
            Reason::Abandoned { text: None } => f.write_str("abandoned: given up for good"),
            Reason::Submitted => f.write_str("submitted"),
            Reason::Running { shim_pid } => write!(f, "worker process running (shim pid {shim_pid})"),
            Reason::Ran => f.write_str("worker process ran"),
            Reason::DispatchedTo(worker) => write!(f, "dispatched to worker {worker}"),
            Reason::Unblocked { worker } => write!(f, "all dependencies present and worker {worker} installed"),
            Reason::Waiting(why) => f.write_str(why),
            Reason::Requested(what) => write!(f, "requested: {what}"),
            Reason::Refused { request: Some(request), why } => write!(f, "refused {request}: {why}"),
            Reason::Refused { request: None, why } => write!(f, "refused: {why}"),
            Reason::Started => f.write_str("started"),
            Reason::CancelledByPerson => f.write_str("cancelled by a person"),
            Reason::RetriedByPerson => f.write_str("retried by a person"),
            Reason::WaveIntegrated(w) => write!(f, "wave {w} integrated; verifying"),
            Reason::WaveDone(w) => write!(f, "wave {w} done"),
            Reason::AllVerified => f.write_str("every wave integrated and verified"),
            Reason::TaskFailed { task, label, why, plan } => write!(
                f,
                "task {task} ({label}) failed: {why}; the wave was shut down, its worktrees kept; retry with guild-hall plan retry {plan}"
            ),
            Reason::VerifyFailed { wave, how, plan, fix } => {
                write!(f, "verify failed after wave {wave} ({how}); its output: guild-hall plan logs {plan} --verify; ")?;
                match fix {
                    Some((id, fixer)) => write!(f, "fix-forward commission {id} by {fixer} is under way"),
                    None => f.write_str("fix it on the integration branch, then retry"),
                }
            }
            Reason::FixMerged(id) => write!(f, "{id} merged; verifying again"),
            Reason::TaskWaits { task, label, why } => write!(f, "waits: task {task} ({label}): {why}"),
            Reason::CannotStart(why) => write!(f, "cannot start: {why}"),
            Reason::ShutDown => f.write_str("shut down"),
            Reason::EndedInShutdown => f.write_str("ended while the wave was shut down"),
            Reason::ShutDownForFailure => f.write_str("shut down: another task of the wave failed"),
            Reason::SupervisorDied => f.write_str(SUPERVISOR_DIED),
            Reason::WorktreeGone { gone, died: true } => write!(f, "{SUPERVISOR_DIED}; its worktree is gone ({gone})"),
            Reason::WorktreeGone { gone, died: false } => write!(f, "its worktree is gone ({gone})"),
            Reason::WorkLost(gone) => write!(f, "its work was lost before the copy-back ({gone})"),
            Reason::FailureUnknown(why) => {
                write!(f, "its mailbox cannot be read ({why}), so whether it reported failure cannot be known")
            }
            Reason::ReportedFailure(why) => write!(f, "the worker reported failure: {why}"),
            Reason::NoMoreReruns { why, reruns } => write!(f, "{why}; not run again after {reruns} reruns"),
            Reason::UsageLimited { agent, said, resets_at, not_before } => {
                let at = not_before.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
                write!(f, "{agent} hit a usage or rate limit ({said}); not a failure: ")?;
                match resets_at {
                    Some(_) => write!(f, "it resets at {at}, and the work is dispatched again then"),
                    None => write!(f, "no reset time given, so it is dispatched again after {at} (a backoff)"),
                }
            }
            Reason::PackageAtCapacity { worker, max } => write!(
                f,
                "worker {worker} runs at most {} at once in this home (max_concurrent: {max} in its worker.yaml), and that many run: it waits for one to end",
                crate::activity::timeline::counted(*max, "attempt")
            ),
            Reason::ReviewerAtCapacity { reviewer, index, of, max } => write!(
                f,
                "waits for its reviewer {reviewer} ({} of {of}): worker {reviewer} runs at most {} at once in this home (max_concurrent: {max} in its worker.yaml), and that many run",
                index + 1,
                crate::activity::timeline::counted(*max, "attempt")
            ),
            Reason::OpenedByPerson => f.write_str("opened by a person"),
            Reason::RequestAccepted => f.write_str("request accepted"),
            Reason::RequestDeclined => f.write_str("request declined"),
            Reason::ClosedByPerson => f.write_str("closed by a person"),
            Reason::CannotOpen(why) => write!(f, "cannot open: {why}"),
            Reason::CapReached { cap, open } => write!(
                f,
                "the meeting cap ({cap}) is reached: open meetings are {}; close one (status: closed), then set this one to open",
                open.join(", ")
            ),
            Reason::Said(text) => f.write_str(text),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn each_reason_is_written_and_read_back_as_it_was() {
        let table = [
            (Reason::MergeWaiting("the checkout has local changes: a.txt".into()), "merge waiting: the checkout has local changes: a.txt"),
            (Reason::ClosingWaits("No space left on device".into()), "closing waits: No space left on device"),
            (Reason::Said("worker exited with code 1".into()), "worker exited with code 1"),
        ];
        for (reason, text) in table {
            assert_eq!(reason.to_string(), text);
            assert_eq!(Reason::parse(text), reason, "{text}");
        }
        assert!(Reason::parse("merge waiting: x").merge_waits() && Reason::parse("merge waiting: x").waits());
        assert!(!Reason::parse("closing waits: x").merge_waits() && Reason::parse("closing waits: x").waits());
        assert!(!Reason::parse("refused: a plan that is halted cannot be set to running").waits());
    }

    /// Each reason a decider writes, in exactly the words the timeline and `reason:` have
    /// always had (the integration tests pin them too).
    #[test]
    fn each_reason_renders_in_its_words() {
        let exit = |code| ExitInfo { code: Some(code), ..ExitInfo::error(1, String::new()) };
        let exit = |code| ExitInfo { error: None, ..exit(code) };
        let table = [
            (Reason::Exited(exit(3)), "worker exited with code 3"),
            (Reason::NoResult, "completed without submitting result"),
            (Reason::ProcessLost, "process lost on restart"),
            (
                Reason::Overtime("timed out: ran longer than 1s (the project's timeout)".into()),
                "timed out: ran longer than 1s (the project's timeout)",
            ),
            (Reason::Unresponsive, "process unresponsive"),
            (
                Reason::MailboxUnreadable("denied".into()),
                "its mailbox cannot be read (denied), so a result it may hold cannot be read either",
            ),
            (Reason::NotMerged, "the attempt's work could not be merged"),
            (Reason::ResultSubmitted, "worker submitted its result"),
            (
                Reason::AwaitsReview { id: "c".into() },
                "needs you: its work is committed on its branch, nothing merged; guild-hall approve c, revise c -m TEXT, or reject c",
            ),
            (Reason::Approved, "approved in review"),
            (
                Reason::Revised { after: 1, items: 2, from: "person" },
                "sent back for revision of attempt 1 (2 feedback items from the person); it continues on the same branch",
            ),
            (
                Reason::CheckFailed { command: "cargo test".into(), ended: "exit code 101".into(), revisions: 0, then: AfterCheck::SendBack },
                "the check `cargo test` failed (exit code 101); sent back to its worker with the output's tail",
            ),
            (
                Reason::CheckFailed { command: "make".into(), ended: "exit code 2".into(), revisions: 2, then: AfterCheck::Fail },
                "the check `make` failed (exit code 2) after 2 automatic revisions (max_revisions)",
            ),
            (
                Reason::Conflicted { paths: vec!["a.rs".into(), "b.rs".into()], revisions: 0 },
                "its merge conflicted in: a.rs, b.rs; sent back to its worker with the integration branch merged in, the conflict markers left for it",
            ),
            (
                Reason::Conflicted { paths: Vec::new(), revisions: 1 },
                "its merge conflicted; sent back to its worker with the integration branch merged in, the conflict markers left for it",
            ),
            (Reason::Rejected { branch: "b".into(), text: Some("no".into()) }, "rejected in review: no; its work is kept on b"),
            (Reason::Rejected { branch: "b".into(), text: None }, "rejected in review; its work is kept on b"),
            (Reason::Abandoned { text: Some("out of scope".into()) }, "abandoned: out of scope"),
            (Reason::Abandoned { text: None }, "abandoned: given up for good"),
            (Reason::Running { shim_pid: 42 }, "worker process running (shim pid 42)"),
            (Reason::Ran, "worker process ran"),
            (Reason::DispatchedTo("w".into()), "dispatched to worker w"),
            (Reason::Unblocked { worker: "w".into() }, "all dependencies present and worker w installed"),
            (Reason::Waiting("missing dependencies".into()), "missing dependencies"),
            (Reason::Requested("desired cancelled".into()), "requested: desired cancelled"),
            (Reason::Refused { request: Some("desired: dispatched".into()), why: "no".into() }, "refused desired: dispatched: no"),
            (Reason::Refused { request: None, why: "no".into() }, "refused: no"),
            (Reason::Submitted, "submitted"),
            (Reason::Started, "started"),
            (Reason::CancelledByPerson, "cancelled by a person"),
            (Reason::RetriedByPerson, "retried by a person"),
            (Reason::WaveIntegrated(2), "wave 2 integrated; verifying"),
            (Reason::WaveDone(2), "wave 2 done"),
            (Reason::AllVerified, "every wave integrated and verified"),
            (
                Reason::TaskFailed { task: "p-t".into(), label: "T".into(), why: "x".into(), plan: "p".into() },
                "task p-t (T) failed: x; the wave was shut down, its worktrees kept; retry with guild-hall plan retry p",
            ),
            (
                Reason::VerifyFailed { wave: 1, how: "worker exited with code 1".into(), plan: "p".into(), fix: Some(("p-fix".into(), "w".into())) },
                "verify failed after wave 1 (worker exited with code 1); its output: guild-hall plan logs p --verify; fix-forward commission p-fix by w is under way",
            ),
            (
                Reason::VerifyFailed { wave: 1, how: "x".into(), plan: "p".into(), fix: None },
                "verify failed after wave 1 (x); its output: guild-hall plan logs p --verify; fix it on the integration branch, then retry",
            ),
            (Reason::FixMerged("p-fix".into()), "p-fix merged; verifying again"),
            (Reason::TaskWaits { task: "p-t".into(), label: "T".into(), why: "x".into() }, "waits: task p-t (T): x"),
            (Reason::CannotStart("x".into()), "cannot start: x"),
            (Reason::ShutDown, "shut down"),
            (Reason::EndedInShutdown, "ended while the wave was shut down"),
            (Reason::ShutDownForFailure, "shut down: another task of the wave failed"),
            (Reason::SupervisorDied, "its supervisor died without recording how the worker ended (killed, or a reboot)"),
            (
                Reason::WorktreeGone { gone: "g".into(), died: true },
                "its supervisor died without recording how the worker ended (killed, or a reboot); its worktree is gone (g)",
            ),
            (Reason::WorktreeGone { gone: "g".into(), died: false }, "its worktree is gone (g)"),
            (Reason::WorkLost("g".into()), "its work was lost before the copy-back (g)"),
            (Reason::FailureUnknown("x".into()), "its mailbox cannot be read (x), so whether it reported failure cannot be known"),
            (Reason::ReportedFailure("x".into()), "the worker reported failure: x"),
            (
                Reason::UsageLimited {
                    agent: "claude-code".into(),
                    said: "API Error: 429".into(),
                    resets_at: None,
                    not_before: chrono::DateTime::from_timestamp(1_795_893_600, 0).expect("time"),
                },
                "claude-code hit a usage or rate limit (API Error: 429); not a failure: no reset time given, so it is dispatched again after 2026-11-28T19:20:00Z (a backoff)",
            ),
            (
                Reason::UsageLimited {
                    agent: "codex".into(),
                    said: "try again at 7:20 PM".into(),
                    resets_at: chrono::DateTime::from_timestamp(1_795_893_600, 0),
                    not_before: chrono::DateTime::from_timestamp(1_795_893_600, 0).expect("time"),
                },
                "codex hit a usage or rate limit (try again at 7:20 PM); not a failure: it resets at 2026-11-28T19:20:00Z, and the work is dispatched again then",
            ),
            (
                Reason::PackageAtCapacity { worker: "codex".into(), max: 1 },
                "worker codex runs at most 1 attempt at once in this home (max_concurrent: 1 in its worker.yaml), and that many run: it waits for one to end",
            ),
            (
                Reason::ReviewerAtCapacity { reviewer: "critic".into(), index: 0, of: 2, max: 1 },
                "waits for its reviewer critic (1 of 2): worker critic runs at most 1 attempt at once in this home (max_concurrent: 1 in its worker.yaml), and that many run",
            ),
            (Reason::OpenedByPerson, "opened by a person"),
            (Reason::RequestAccepted, "request accepted"),
            (Reason::RequestDeclined, "request declined"),
            (Reason::ClosedByPerson, "closed by a person"),
            (Reason::CannotOpen("x".into()), "cannot open: x"),
            (
                Reason::CapReached { cap: 2, open: vec!["a".into(), "b".into()] },
                "the meeting cap (2) is reached: open meetings are a, b; close one (status: closed), then set this one to open",
            ),
            (Reason::NoMoreReruns { why: Box::new(Reason::SupervisorDied), reruns: 2 }, "its supervisor died without recording how the worker ended (killed, or a reboot); not run again after 2 reruns"),
        ];
        for (reason, text) in table {
            assert_eq!(reason.to_string(), text, "{reason:?}");
            assert!(!Reason::parse(text).waits(), "words for people are not state: {text}");
        }
    }

    proptest! {
        /// Whatever a reason says, reading back what was written gives it back.
        #[test]
        fn written_then_read_back_is_the_same(why in "[ -~]{0,40}", which in 0u8..3) {
            let reason = match which {
                0 => Reason::MergeWaiting(why),
                1 => Reason::ClosingWaits(why),
                _ if why.starts_with(MERGE_WAITING) || why.starts_with(CLOSING_WAITS) => return Ok(()),
                _ => Reason::Said(why),
            };
            prop_assert_eq!(Reason::parse(&reason.to_string()), reason);
        }
    }
}
