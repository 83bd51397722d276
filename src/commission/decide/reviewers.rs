//! Reviewer workers (`reviewers:`): once a submitted attempt's checks pass, its work is held in
//! `review` (committed on its branch) and each reviewer runs in turn over its diff, read-only
//! ([`crate::commission::reviewing`]); their verdicts go into `reviews:` and the timeline. All
//! approve: on to a person (`review: required`) or the merge. Any `changes`: sent back through
//! [`super::review::revise`] with the comments, bounded by `max_revisions`, then failed (`auto`)
//! or left for a person (`required`). A reviewer that ends without a verdict holds the work for
//! a person: its worker cannot fix a reviewer's failure, so nothing is sent back for it.

use serde_json::json;
use serde_yaml_ng::{Mapping, Value};

use super::effect::Effect;
use super::step::Step;
use crate::activity::reason::{AfterCheck, Reason};
use crate::artifact::commission::{Feedback, FeedbackFrom, Revision};
use crate::artifact::Status;
use crate::commission::observe::{review_usage_key, Observed, Snapshot};
use crate::worker::reviewer::{stands, Given, ReviewerRun, Stands};
use crate::worker::toolbox::mailbox::Verdict;

/// The reviewers that apply: the commission's own `reviewers:`, else its package's, else the
/// project's (`[]` at any level: none).
pub(super) fn of(s: &Snapshot, o: &Observed) -> Vec<String> {
    let package = s.workers.packages.get(&o.artifact.worker).and_then(|p| p.manifest.reviewers.clone());
    o.artifact.reviewers.clone().or(package).or_else(|| s.project.config.reviewers.clone()).unwrap_or_default()
}

/// A submitted attempt whose checks passed, with reviewers to run: held in review for them
/// (its work committed on its branch first). `None`: no reviewers apply.
pub(super) fn hold(s: &Snapshot, o: &Observed, st: &mut Step<'_>) -> Option<Effect> {
    let names = of(s, o);
    let first = names.first()?.clone();
    Some(super::review::hold_because(st, Reason::AwaitsReviewers { reviewer: first, index: 0, of: names.len() }))
}

/// In review with reviewers to hear, its work secured and nothing asked of it by a person: the
/// next reviewer started, a finished one's worktree removed, or, once every one has ended, what
/// their verdicts come to. `None`: review goes on as a person's ([`super::review::in_review`]).
pub(super) fn step(s: &Snapshot, o: &Observed, st: &mut Step<'_>, checks_passed: bool) -> Option<Effect> {
    let names = of(s, o);
    account_usage(o, st, &names);
    let settled = !o.worktree_exists && !o.attempt.at_work();
    if o.artifact.desired.is_some() {
        // A person's word goes first: reviewers still at work are stopped, their checkouts
        // removed, and the request is carried out the next pass.
        return drop_runs(o);
    }
    if names.is_empty() || !settled {
        return None;
    }
    let attempt = st.record.attempt;
    // Reviewers hear only work whose checks passed and that did not conflict: those are sent
    // back, or shown to a person, as they are.
    if !checks_passed || st.record.conflict.as_ref().is_some_and(|c| c.attempt == attempt) {
        return None;
    }
    let mut heard: Vec<(&str, &ReviewerRun, Result<&Given, String>)> = Vec::new();
    for (index, name) in names.iter().enumerate() {
        match stands(o.reviews.iter().find(|r| r.index == index)) {
            Stands::ToStart => {
                // Said once it starts (the round's decider knows whether its package has room).
                show(st, attempt, &heard);
                return Some(Effect::StartReviewer { index, reviewer: name.clone(), of: names.len() });
            }
            Stands::AtWork(r) => {
                show(st, attempt, &heard);
                // Past its wall-clock limit (its package's `timeout:`, else the project's):
                // stopped, which makes it a review without a verdict.
                let run = Some(r);
                let package = s.workers.packages.get(name).and_then(|p| p.manifest.timeout);
                let limit = crate::worker::liveness::time_limit(&[
                    (package, "the reviewer package's timeout"),
                    (Some(s.project.config.timeout), "the project's timeout"),
                ]);
                let started = run.and_then(|r| r.run.as_ref()).map(|r| r.started_at);
                if let (Some(r), Some(why)) = (run, started.and_then(|t| crate::worker::liveness::overtime(limit, t, s.now))) {
                    let text = format!("reviewer {name}: {why}");
                    st.event("timeout", format!("review_timeout:{attempt}:{index}"), json!({"text": text, "reviewer": name}));
                    return Some(Effect::DropReviewers(vec![(index, r.run.clone(), r.leftovers.clone())]));
                }
                return Some(Effect::None);
            }
            Stands::Lingering(r) => {
                show(st, attempt, &heard);
                return Some(Effect::ReviewerLeftovers { run: r.run.clone(), pids: r.leftovers.clone() });
            }
            Stands::Over(r, said) => {
                if r.worktree_exists {
                    show(st, attempt, &heard);
                    return Some(Effect::ReviewerCleanup { index });
                }
                heard.push((name.as_str(), r, said));
            }
        }
    }
    show(st, attempt, &heard);
    Some(weigh(s, o, st, &heard))
}

/// What the attempt's reviewers used: a `usage` event each once its run is over (keyed by the
/// attempt and the reviewer's place, naming the reviewer), and the artifact's `usage:` with
/// them — the attempts before (their reviewers' included), this one's, and its reviewers'.
/// Set from what was observed alone, so a pass repeated gives the same figures.
pub(super) fn account_usage(o: &Observed, st: &mut Step<'_>, names: &[String]) {
    let attempt = st.record.attempt;
    let used: Vec<_> = o.reviews.iter().filter_map(|r| Some((r.index, r.usage.as_ref()?))).collect();
    if used.is_empty() {
        return;
    }
    for (index, u) in used {
        let name = names.get(index).map_or("reviewer", String::as_str);
        let (key, fields) = crate::worker::reviewer::usage_event(u, name, review_usage_key(attempt, index), json!({"attempt": attempt}));
        st.event("usage", key, fields);
    }
    let own = o.usage.as_ref().filter(|u| u.attempt == attempt).map(|u| u.usage);
    let total: Vec<_> = o.usage_before.into_iter().chain(own).chain(o.reviewers_usage(attempt).into_iter().map(|(_, u)| u)).collect();
    if let Some(sum) = crate::worker::usage::Usage::sum(&total) {
        st.set("usage", sum.to_yaml());
    }
}

/// Reviewer `index` (of `of`) started now: its reason and its `reviewer` event.
pub(super) fn starting(st: &mut Step<'_>, index: usize, name: &str, of: usize) {
    let attempt = st.record.attempt;
    let why = Reason::AwaitsReviewers { reviewer: name.to_string(), index, of };
    st.set("reason", Value::String(why.to_string()));
    let text = format!("reviewer {name} reviews attempt {attempt}, read-only");
    st.event("reviewer", format!("reviewer:{attempt}:{index}"), json!({"text": text, "reviewer": name, "attempt": attempt}));
}

/// Reviewer `index` (of `of`) is to start, and its package's `max_concurrent:` (`max`) is
/// reached: the review waits for one of its attempts to end, saying so (once).
pub(super) fn waiting_for_package(o: &Observed, st: &mut Step<'_>, index: usize, name: &str, of: usize, max: usize) {
    keep_reason(o, st, Reason::ReviewerAtCapacity { reviewer: name.to_string(), index, of, max });
}

/// Reviewers of the attempt still at work, lingering or with a checkout left, when the
/// commission no longer waits for them (a person's request, or it ended): stopped and their
/// checkouts removed, at once. `None`: nothing of them is left.
pub(super) fn drop_runs(o: &Observed) -> Option<Effect> {
    let left: Vec<_> = o
        .reviews
        .iter()
        .filter(|r| r.worktree_exists || r.proc.at_work())
        .map(|r| (r.index, r.run.clone().filter(|_| r.proc.under_way()), r.leftovers.clone()))
        .collect();
    (!left.is_empty()).then_some(Effect::DropReviewers(left))
}

/// What every reviewer's word comes to.
fn weigh(s: &Snapshot, o: &Observed, st: &mut Step<'_>, heard: &[(&str, &ReviewerRun, Result<&Given, String>)]) -> Effect {
    let id = o.artifact.id.clone();
    let required = super::review::required(s, o);
    if let Some((reviewer, _, Err(how))) = heard.iter().find(|(_, _, said)| said.is_err()) {
        for_a_person(o, st, Reason::NoVerdict { reviewer: reviewer.to_string(), how: how.clone(), id });
        return Effect::None;
    }
    let changes: Vec<(&str, &Given)> =
        heard.iter().filter_map(|(n, _, said)| said.as_ref().ok().filter(|g| g.verdict == Verdict::Changes).map(|g| (*n, *g))).collect();
    if changes.is_empty() {
        if required {
            for_a_person(o, st, Reason::AwaitsReview { id });
            return Effect::None;
        }
        return Effect::ReviewersApproved { count: heard.len() };
    }
    let attempt = st.record.attempt;
    let revisions = st.record.automatic_revisions();
    let reviewers: Vec<String> = changes.iter().map(|(n, _)| n.to_string()).collect();
    let comments = changes.iter().map(|(_, g)| g.comments.len()).sum();
    if revisions < super::review::max_revisions(s, o) {
        let mut feedback = Vec::new();
        for (name, given) in &changes {
            feedback.push(Feedback { text: format!("Reviewer {name} asked for changes: {}", given.summary), path: None, line: None });
            feedback.extend(given.comments.iter().map(|c| Feedback { text: c.text.clone(), path: Some(c.path.clone()), line: c.line }));
        }
        let revision = Revision {
            attempt: attempt + 1,
            after: attempt,
            branch: super::step::attempt_branch(o, attempt),
            feedback,
            from: FeedbackFrom::Reviewer,
            automatic: revisions + 1,
        };
        keep_reason(o, st, Reason::ReviewChanges { reviewers, comments, revisions, then: AfterCheck::SendBack });
        return super::review::revise(revision);
    }
    if required {
        for_a_person(o, st, Reason::ReviewChanges { reviewers, comments, revisions, then: AfterCheck::Review { id } });
        return Effect::None;
    }
    st.go(Status::Failed, Reason::ReviewChanges { reviewers, comments, revisions, then: AfterCheck::Fail });
    Effect::None
}

/// The reviewers heard, the work now waits for a person: `reason:` says why and how to answer,
/// and a `reviewed` event tells them (`notify:` reads it as a review to do).
fn for_a_person(o: &Observed, st: &mut Step<'_>, why: Reason) {
    let attempt = st.record.attempt;
    let text = why.to_string();
    if keep_reason(o, st, why) {
        st.event("reviewed", format!("reviewed:{attempt}"), json!({"text": text, "attempt": attempt, "needs_you": true}));
    }
}

/// `reason:` set to `why`, unless it says so already (a pass that finds nothing new writes
/// nothing): whether it is set.
fn keep_reason(o: &Observed, st: &mut Step<'_>, why: Reason) -> bool {
    let text = why.to_string();
    let new = o.artifact.owned.reason.as_deref() != Some(text.as_str());
    if new {
        st.set("reason", Value::String(text));
    }
    new
}

/// The verdicts heard so far: `reviews:` in the artifact, a `review_verdict` event each —
/// written when `reviews:` does not say so already (a pass that finds nothing new writes
/// nothing; an event written again is dropped by its key).
fn show(st: &mut Step<'_>, attempt: u32, heard: &[(&str, &ReviewerRun, Result<&Given, String>)]) {
    if heard.is_empty() {
        return;
    }
    let mut entries = Vec::new();
    let mut events = Vec::new();
    for (name, run, said) in heard {
        let (verdict, summary, comments) = match said {
            Ok(g) => (g.verdict.as_str(), g.summary.clone(), g.comments.as_slice()),
            Err(how) => ("none", format!("no verdict: {how}"), &[][..]),
        };
        let mut m = Mapping::new();
        m.insert("reviewer".into(), Value::String(name.to_string()));
        m.insert("attempt".into(), Value::Number(attempt.into()));
        m.insert("verdict".into(), Value::String(verdict.into()));
        m.insert("summary".into(), Value::String(summary.clone()));
        if !comments.is_empty() {
            let items = comments
                .iter()
                .map(|c| {
                    let mut cm = Mapping::new();
                    cm.insert("path".into(), Value::String(c.path.clone()));
                    if let Some(l) = c.line {
                        cm.insert("line".into(), Value::Number(l.into()));
                    }
                    cm.insert("text".into(), Value::String(c.text.clone()));
                    Value::Mapping(cm)
                })
                .collect();
            m.insert("comments".into(), Value::Sequence(items));
        }
        entries.push(Value::Mapping(m));
        let text = match said {
            Ok(g) if g.verdict == Verdict::Approve => format!("reviewer {name} approved attempt {attempt}: {}", g.summary),
            Ok(g) => format!(
                "reviewer {name} asked for changes to attempt {attempt} ({}): {}",
                crate::activity::timeline::counted(g.comments.len(), "comment"),
                g.summary
            ),
            Err(how) => format!("reviewer {name} gave no verdict on attempt {attempt}: {how}"),
        };
        let comments: Vec<serde_json::Value> = comments.iter().map(|c| json!({"path": c.path, "line": c.line, "text": c.text})).collect();
        events.push((
            format!("review_verdict:{attempt}:{}", run.index),
            json!({"text": text, "reviewer": name, "attempt": attempt, "verdict": verdict, "summary": summary, "comments": comments}),
        ));
    }
    let reviews = Value::Sequence(entries);
    if st.o.artifact.fields.get("reviews") == Some(&reviews) {
        return;
    }
    for (key, fields) in events {
        st.event("review_verdict", key, fields);
    }
    st.set("reviews", reviews);
}
