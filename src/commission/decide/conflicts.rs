//! A squash merge that conflicted outside `.lore/`, sent back to its worker: the hold the
//! landing writes (the work in `review`, nobody told), and the next pass's automatic revise
//! through [`super::review::revise`], the paths its feedback; bounded by `max_revisions`.

use super::effect::{Effect, Update};
use super::step::Step;
use crate::activity::reason::Reason;
use crate::artifact::commission::{Feedback, FeedbackFrom, Revision};
use crate::commission::observe::{Observed, Snapshot};

/// What a squash merge that conflicts outside `.lore/` writes when send-backs are left
/// (`max_revisions`): the work held in review (secured on its branch already by the landing),
/// its worker told — not a person. The landing adds the paths ([`crate::commission::act`]).
/// `None`: none are left, and the conflict fails the commission as any refused merge does.
pub(super) fn hold(s: &Snapshot, o: &Observed, step: &Step<'_>) -> Option<Box<Update>> {
    let revisions = step.record.automatic_revisions();
    if revisions >= super::checks::max_revisions(s, o) {
        return None;
    }
    let mut held = step.clone();
    super::review::hold_because(&mut held, Reason::Conflicted { paths: Vec::new(), revisions });
    Some(Box::new(held.finish()))
}

/// In review after a conflict, its work secured and nothing asked of it by a person: the
/// automatic revise, the paths the feedback; the dispatch merges the integration tip into the
/// branch, the markers left in those files. `None`: review goes on as a person's.
pub(super) fn send_back(s: &Snapshot, o: &Observed, st: &Step<'_>) -> Option<Effect> {
    let settled = !o.worktree_exists && !o.attempt.at_work();
    if !settled || o.artifact.desired.is_some() {
        return None;
    }
    let attempt = st.record.attempt;
    let conflict = st.record.conflict.as_ref().filter(|c| c.attempt == attempt)?;
    let revisions = st.record.automatic_revisions();
    if revisions >= super::checks::max_revisions(s, o) {
        return None;
    }
    let integration = &s.project.config.integration_branch;
    let mut feedback = vec![Feedback {
        text: format!(
            "Your work conflicts with changes made on {integration} meanwhile. guild-hall has merged {integration} into your branch: the files below hold git's conflict markers (<<<<<<<, =======, >>>>>>>). Resolve each (keep what both sides meant), remove the markers, commit, and submit again."
        ),
        path: None,
        line: None,
    }];
    feedback.extend(conflict.paths.iter().map(|p| Feedback {
        text: "conflict markers to resolve".into(),
        path: Some(p.clone()),
        line: None,
    }));
    let revision = Revision {
        attempt: attempt + 1,
        after: attempt,
        branch: super::step::attempt_branch(o, attempt),
        feedback,
        from: FeedbackFrom::Conflict,
        automatic: revisions + 1,
    };
    Some(super::review::revise(revision))
}
