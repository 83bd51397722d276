//! Names derived from an activity's id, in one place: the kinds of worker activity, each
//! one's branch (`claude/<kind>/<id>`) and the trailer that marks its work landed on the
//! integration branch. Its paths (runtime state dir, worktree) are the home's layout
//! (`config::Home`).

/// Which kind of activity a worker process serves: its environment, mailbox and toolbox differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ActivityKind {
    Commission,
    Meeting,
    /// A task of a plan's wave.
    Task,
}

/// `claude/commission/<id>`, then `claude/commission/<id>+<attempt>` from the second attempt
/// on: `+` cannot appear in an id, so no attempt's branch is ever another commission's (with
/// `-`, attempt 2 of `job` would be commission `job-2`'s branch).
pub(crate) fn commission_branch(id: &str, attempt: u32) -> String {
    if attempt <= 1 {
        format!("claude/commission/{id}")
    } else {
        format!("claude/commission/{id}+{attempt}")
    }
}

/// What an older guild-hall named attempt `n` of `id`: `claude/commission/<id>-<n>`.
pub(crate) fn legacy_commission_branch(id: &str, attempt: u32) -> String {
    format!("{}{attempt}", legacy_commission_prefix(id))
}

/// The start of every [`legacy_commission_branch`] of `id`.
pub(crate) fn legacy_commission_prefix(id: &str) -> String {
    format!("claude/commission/{id}-")
}

/// Whether `branch` is an attempt's branch of commission `id` from the second on
/// (`claude/commission/<id>+<n>`; `+` is in no id).
pub(crate) fn is_later_commission_branch(id: &str, branch: &str) -> bool {
    branch.strip_prefix(&format!("claude/commission/{id}+")).is_some_and(|a| !a.is_empty() && a.bytes().all(|c| c.is_ascii_digit()))
}

/// `claude/meeting/<id>`.
pub fn meeting_branch(id: &str) -> String {
    format!("claude/meeting/{id}")
}

/// A wave task's branch, from its slug (its canonical id with `-` for `:`).
pub(crate) fn task_branch(slug: &str) -> String {
    format!("claude/task/{slug}")
}

/// How the slug of every task of `plan` begins: `<plan>-exec-wave-` (canonical ids are
/// `<plan>:exec:wave-<n>:<task>`).
pub(crate) fn task_slug_prefix(plan: &str) -> String {
    format!("{plan}-exec-wave-")
}

/// Whether `branch` is the branch of a task of `plan` (see [`task_slug_prefix`]).
pub(crate) fn is_task_branch_of(plan: &str, branch: &str) -> bool {
    branch.strip_prefix("claude/task/").is_some_and(|s| s.starts_with(&task_slug_prefix(plan)))
}

/// Where a plan's `verify` runs: `claude/verify/<plan>`.
pub(crate) fn verify_branch(plan: &str) -> String {
    format!("claude/verify/{plan}")
}

/// How every trailer of guild-hall's begins.
pub(crate) const TRAILER_START: &str = "Guild-Hall-";

/// The trailers that mark guild-hall's own squash merges, one per kind of activity.
pub(crate) const TRAILERS: [&str; 3] = ["Guild-Hall-Commission: ", "Guild-Hall-Meeting: ", "Guild-Hall-Task: "];

/// The trailer of attempt `attempt` of commission `id` landed.
pub(crate) fn commission_trailer(id: &str, attempt: u32) -> String {
    format!("{}{id} attempt {attempt}", TRAILERS[0])
}

/// The trailer of meeting `id`'s work landed.
pub(crate) fn meeting_trailer(id: &str) -> String {
    format!("{}{id}", TRAILERS[1])
}

/// The trailer of a wave task (by its canonical id) landed.
pub(crate) fn task_trailer(canonical: &str) -> String {
    format!("{}{canonical}", TRAILERS[2])
}

/// The start of the trailers of every task of `plan`'s wave `wave` (canonical ids
/// `<plan>:exec:wave-<n>:<task>`).
pub(crate) fn wave_trailer_prefix(plan: &str, wave: usize) -> String {
    format!("{}{plan}:exec:wave-{wave}:", TRAILERS[2])
}

/// Whether `branch` (`claude/<kind>/…`) may hold work of the activity `id` of `kind`: a
/// commission's attempt branches (`<id>`, `<id>+<n>`, and an older guild-hall's `<id>-<n>`,
/// which may as well be commission `<id>-<n>`'s: counted for both, to be safe), a meeting's
/// branch, a plan's task and verify branches.
pub(crate) fn may_hold_work_of(kind: super::kind::Name, id: &str, branch: &str) -> bool {
    use super::kind::Name;
    match kind {
        Name::Commission => branch.strip_prefix("claude/commission/").and_then(|b| b.strip_prefix(id)).is_some_and(|rest| {
            rest.is_empty()
                || rest.starts_with('+')
                || rest.strip_prefix('-').is_some_and(|n| !n.is_empty() && n.bytes().all(|c| c.is_ascii_digit()))
        }),
        Name::Meeting => branch == meeting_branch(id),
        Name::Plan => branch == verify_branch(id) || is_task_branch_of(id, branch),
    }
}

/// The id a trailer line of `kind` names (for a plan: the plan of the task it names), if the
/// line is one: `Guild-Hall-Commission: <id> attempt <n>`, `Guild-Hall-Meeting: <id>`,
/// `Guild-Hall-Task: <plan>:exec:wave-<n>:<task>`.
pub(crate) fn trailer_owner(kind: super::kind::Name, line: &str) -> Option<&str> {
    use super::kind::Name;
    let line = line.trim();
    match kind {
        Name::Commission => line.strip_prefix(TRAILERS[0]).and_then(|r| r.rsplit_once(" attempt ")).map(|(id, _)| id),
        Name::Meeting => line.strip_prefix(TRAILERS[1]),
        Name::Plan => line.strip_prefix(TRAILERS[2]).and_then(|r| r.split_once(':')).map(|(plan, _)| plan),
    }
}

/// The trailer prefix of `kind`'s landed work.
pub(crate) fn trailer_prefix(kind: super::kind::Name) -> &'static str {
    use super::kind::Name;
    match kind {
        Name::Commission => TRAILERS[0],
        Name::Meeting => TRAILERS[1],
        Name::Plan => TRAILERS[2],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// Every id we accept makes valid branch names for every attempt.
        #[test]
        fn accepted_ids_are_branch_names(id in "[a-z0-9._-]{1,24}", attempt in 1u32..1000) {
            if crate::artifact::ids::validate_id(&id).is_ok() {
                for branch in [commission_branch(&id, attempt), meeting_branch(&id), verify_branch(&id)] {
                    proptest::prop_assert!(git2::Reference::is_valid_name(&format!("refs/heads/{branch}")), "{}", branch);
                }
            }
        }
    }

    #[test]
    fn later_attempts_are_told_from_other_ids() {
        assert_eq!(commission_branch("c", 2), "claude/commission/c+2");
        assert!(is_later_commission_branch("c", "claude/commission/c+2"));
        assert!(!is_later_commission_branch("c", "claude/commission/c+"));
        assert!(!is_later_commission_branch("c", "claude/commission/c-2"));
        assert!(!is_later_commission_branch("c", "claude/commission/c+2x"));
        assert_eq!(legacy_commission_branch("c", 3), "claude/commission/c-3");
        assert!(is_task_branch_of("p", "claude/task/p-exec-wave-1-a"));
        assert!(!is_task_branch_of("p", "claude/task/q-exec-wave-1-a"));
    }

    #[test]
    fn branches_and_trailers_are_told_by_owner() {
        use crate::activity::kind::Name;
        for b in ["claude/commission/c", "claude/commission/c+2", "claude/commission/c+x", "claude/commission/c-3"] {
            assert!(may_hold_work_of(Name::Commission, "c", b), "{b}");
        }
        for b in ["claude/commission/cd", "claude/commission/c-d", "claude/commission/c-", "claude/meeting/c", "claude/main"] {
            assert!(!may_hold_work_of(Name::Commission, "c", b), "{b}");
        }
        assert!(may_hold_work_of(Name::Meeting, "m", "claude/meeting/m"));
        assert!(!may_hold_work_of(Name::Meeting, "m", "claude/meeting/m-2"));
        assert!(may_hold_work_of(Name::Plan, "p", "claude/verify/p"));
        assert!(may_hold_work_of(Name::Plan, "p", "claude/task/p-exec-wave-1-a"));
        assert!(!may_hold_work_of(Name::Plan, "p", "claude/task/pq-exec-wave-1-a"));
        assert_eq!(trailer_owner(Name::Commission, &commission_trailer("a-b", 3)), Some("a-b"));
        assert_eq!(trailer_owner(Name::Meeting, &meeting_trailer("m")), Some("m"));
        assert_eq!(trailer_owner(Name::Plan, &task_trailer("p:exec:wave-1:t")), Some("p"));
        assert_eq!(trailer_owner(Name::Plan, &meeting_trailer("m")), None);
    }
}
