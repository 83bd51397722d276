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
    /// No sign of life for longer than `stale_after`.
    Unresponsive,
    /// Its mailbox cannot be read (why), so a result it may hold cannot be either.
    MailboxUnreadable(String),
    /// Its work could not be merged (the landing's own words replace this when it acts).
    NotMerged,
    /// Its worker submitted its result.
    Submitted,
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
    /// A person's request refused: what was asked, and why not.
    Refused { request: String, why: String },
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
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::MergeWaiting(why) => write!(f, "{MERGE_WAITING}: {why}"),
            Reason::ClosingWaits(why) => write!(f, "{CLOSING_WAITS}: {why}"),
            Reason::Exited(exit) => f.write_str(&exit.describe()),
            Reason::NoResult => f.write_str("completed without submitting result"),
            Reason::ProcessLost => f.write_str("process lost on restart"),
            Reason::Overtime(why) => f.write_str(why),
            Reason::Unresponsive => f.write_str(UNRESPONSIVE),
            Reason::MailboxUnreadable(why) => {
                write!(f, "its mailbox cannot be read ({why}), so a result it may hold cannot be read either")
            }
            Reason::NotMerged => f.write_str("the attempt's work could not be merged"),
            Reason::Submitted => f.write_str("worker submitted its result"),
            Reason::Running { shim_pid } => write!(f, "worker process running (shim pid {shim_pid})"),
            Reason::Ran => f.write_str("worker process ran"),
            Reason::DispatchedTo(worker) => write!(f, "dispatched to worker {worker}"),
            Reason::Unblocked { worker } => write!(f, "all dependencies present and worker {worker} installed"),
            Reason::Waiting(why) => f.write_str(why),
            Reason::Requested(what) => write!(f, "requested: {what}"),
            Reason::Refused { request, why } => write!(f, "refused {request}: {why}"),
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
            (Reason::Submitted, "worker submitted its result"),
            (Reason::Running { shim_pid: 42 }, "worker process running (shim pid 42)"),
            (Reason::Ran, "worker process ran"),
            (Reason::DispatchedTo("w".into()), "dispatched to worker w"),
            (Reason::Unblocked { worker: "w".into() }, "all dependencies present and worker w installed"),
            (Reason::Waiting("missing dependencies".into()), "missing dependencies"),
            (Reason::Requested("desired cancelled".into()), "requested: desired cancelled"),
            (Reason::Refused { request: "desired: dispatched".into(), why: "no".into() }, "refused desired: dispatched: no"),
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
