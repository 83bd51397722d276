//! Why an activity stands where it does, as guild-hall writes it into an artifact's `reason:`
//! and reads it back. The reasons that are state — a landing that waits, a meeting's close that
//! waits — are variants with their data; any other reason is words for people, never read back.
//! Rendered to text only when written ([`std::fmt::Display`]); read back in one place
//! ([`Reason::parse`]).

use std::fmt;

/// How a waiting landing's reason begins (`merge waiting: <why>`).
const MERGE_WAITING: &str = "merge waiting";
/// How a meeting's close that waits for its work to be secured says so.
const CLOSING_WAITS: &str = "closing waits";

/// A reason guild-hall writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Reason {
    /// A squash-merge that cannot land yet (a person's checkout of the integration branch has
    /// changes it would touch, a ref lock): tried again by the next pass.
    MergeWaiting(String),
    /// A meeting's close that waits until its work is safe on its branch (a full disk, say).
    ClosingWaits(String),
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
