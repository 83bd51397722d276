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
pub fn commission_branch(id: &str, attempt: u32) -> String {
    if attempt <= 1 {
        format!("claude/commission/{id}")
    } else {
        format!("claude/commission/{id}+{attempt}")
    }
}

/// What an older guild-hall named attempt `n` of `id`: `claude/commission/<id>-<n>`.
pub fn legacy_commission_branch(id: &str, attempt: u32) -> String {
    format!("{}{attempt}", legacy_commission_prefix(id))
}

/// The start of every [`legacy_commission_branch`] of `id`.
pub fn legacy_commission_prefix(id: &str) -> String {
    format!("claude/commission/{id}-")
}

/// Whether `branch` is an attempt's branch of commission `id` from the second on
/// (`claude/commission/<id>+<n>`; `+` is in no id).
pub fn is_later_commission_branch(id: &str, branch: &str) -> bool {
    branch.strip_prefix(&format!("claude/commission/{id}+")).is_some_and(|a| !a.is_empty() && a.bytes().all(|c| c.is_ascii_digit()))
}

/// `claude/meeting/<id>`.
pub fn meeting_branch(id: &str) -> String {
    format!("claude/meeting/{id}")
}

/// A wave task's branch, from its slug (its canonical id with `-` for `:`).
pub fn task_branch(slug: &str) -> String {
    format!("claude/task/{slug}")
}

/// How the slug of every task of `plan` begins: `<plan>-exec-wave-` (canonical ids are
/// `<plan>:exec:wave-<n>:<task>`).
pub fn task_slug_prefix(plan: &str) -> String {
    format!("{plan}-exec-wave-")
}

/// Whether `branch` is the branch of a task of `plan` (see [`task_slug_prefix`]).
pub fn is_task_branch_of(plan: &str, branch: &str) -> bool {
    branch.strip_prefix("claude/task/").is_some_and(|s| s.starts_with(&task_slug_prefix(plan)))
}

/// Where a plan's `verify` runs: `claude/verify/<plan>`.
pub fn verify_branch(plan: &str) -> String {
    format!("claude/verify/{plan}")
}

/// The trailers that mark guild-hall's own squash merges, one per kind of activity.
pub const TRAILERS: [&str; 3] = ["Guild-Hall-Commission: ", "Guild-Hall-Meeting: ", "Guild-Hall-Task: "];

/// The trailer of attempt `attempt` of commission `id` landed.
pub fn commission_trailer(id: &str, attempt: u32) -> String {
    format!("{}{id} attempt {attempt}", TRAILERS[0])
}

/// The trailer of meeting `id`'s work landed.
pub fn meeting_trailer(id: &str) -> String {
    format!("{}{id}", TRAILERS[1])
}

/// The trailer of a wave task (by its canonical id) landed.
pub fn task_trailer(canonical: &str) -> String {
    format!("{}{canonical}", TRAILERS[2])
}

/// The start of the trailers of every task of `plan`'s wave `wave` (canonical ids
/// `<plan>:exec:wave-<n>:<task>`).
pub fn wave_trailer_prefix(plan: &str, wave: usize) -> String {
    format!("{}{plan}:exec:wave-{wave}:", TRAILERS[2])
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
}
