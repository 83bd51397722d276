//! A plan's REVIEW stage: once the verify after its last wave has passed, its reviewer workers
//! (`reviewers:`, the plan's own, else the project's) run in turn over its integrated result —
//! the change from where its first wave began to the integration tip — read-only, as a
//! commission's do ([`crate::worker::reviewer`]). All approve: completed. Any `changes`: the
//! plan's fix-forward path, as for a failed verify: halted, and with a `fixer` a fix-forward
//! commission carrying the comments, after whose merge verify runs again and then the
//! reviewers, in a new round; without one, a person fixes the integration branch and retries.
//! A reviewer without a verdict halts it for a person. Each round is the verify run it follows.

use serde_json::json;

use super::step::{settle, Step};
use super::{fix_id, Action};
use crate::activity::reason::Reason;
use crate::artifact::plan::PlanStatus;
use crate::worker::reviewer::{stands, Given, ReviewerRun, Stands};
use crate::worker::toolbox::mailbox::Verdict;

/// The reviewers of the plan: its own `reviewers:`, else the project's. A plan without a
/// `verify` has none: the stage follows its verify.
pub(super) fn of(st: &Step<'_>) -> Vec<String> {
    if st.o.plan.verify.is_none() {
        return Vec::new();
    }
    st.o.plan.reviewers.clone().or_else(|| st.s.reviewers.clone()).unwrap_or_default()
}

/// What each reviewer run over the plan used, once it is over: a `usage` event on the plan's
/// timeline (keyed by the round and its place, naming the reviewer), logged once; the plan's
/// `usage:` sums it with its tasks'.
pub(super) fn log_usage(st: &mut Step<'_>) {
    let round = st.record.verify_runs;
    let names = of(st);
    for r in &st.o.reviews {
        let Some(u) = &r.usage else { continue };
        let key = format!("usage:review:{round}:{}", r.index);
        if st.o.timeline_keys.contains(&key) || !st.keys.insert(key.clone()) {
            continue;
        }
        let name = names.get(r.index).map_or("reviewer", String::as_str);
        let (key, fields) = crate::worker::reviewer::usage_event(u, name, key, json!({"round": round}));
        st.event("usage", key, fields);
    }
}

/// The stage after the last wave's verify passed (`names` not empty): the next reviewer
/// started, a finished one's checkout removed, or what their verdicts come to.
pub(super) fn stage(mut st: Step<'_>, w: usize, names: &[String]) -> Option<Action> {
    let round = st.record.verify_runs;
    let mut heard: Vec<(&str, &ReviewerRun, Result<&Given, String>)> = Vec::new();
    for (index, name) in names.iter().enumerate() {
        match stands(st.o.reviews.iter().find(|r| r.index == index)) {
            Stands::ToStart => {
                show(&mut st, round, &heard);
                // A reviewer's run is an attempt of its package: it waits while its
                // `max_concurrent:` is reached (what started earlier this round counted).
                let live = |by: &std::collections::BTreeMap<String, usize>| by.get(name).copied().unwrap_or(0);
                let cap = st.o.reviewer_caps.get(index).copied().flatten();
                if let Some(max) = cap.filter(|&max| live(&st.s.running_by_package) + live(&st.started) >= max) {
                    st.waits(Some(Reason::ReviewerAtCapacity { reviewer: name.clone(), index, of: names.len(), max }));
                    return settle(st);
                }
                // A verifying plan's reason is only ever this wait: it is over once it starts.
                st.waits(None);
                st.event(
                    "reviewer",
                    format!("reviewer:{round}:{index}"),
                    json!({"text": format!("reviewer {name} reviews the plan's integrated result"), "reviewer": name, "round": round}),
                );
                let base = st.record.bases.get(&1).cloned().unwrap_or_default();
                return Some(Action::StartReviewer { update: st.finish(), round, index, reviewer: name.clone(), base });
            }
            Stands::AtWork(r) => {
                show(&mut st, round, &heard);
                // Past its wall-clock limit (its package's `timeout:`, else the project's):
                // stopped, which makes it a reviewer without a verdict (the plan halts).
                if let Some(why) = overtime(&st, index, r) {
                    let text = format!("reviewer {name}: {why}");
                    st.event("timeout", timeout_key(round, index), json!({"text": text, "reviewer": name, "round": round}));
                    let runs = vec![(index, r.run.clone(), r.leftovers.clone())];
                    return Some(Action::DropReviewers { update: st.finish(), round, runs });
                }
                return settle(st);
            }
            Stands::Lingering(r) => {
                // Its shim is gone, processes of it are not: killed before it is judged.
                show(&mut st, round, &heard);
                let runs = vec![(index, None, r.leftovers.clone())];
                return Some(Action::DropReviewers { update: st.finish(), round, runs });
            }
            Stands::Over(r, said) => {
                if r.worktree_exists {
                    show(&mut st, round, &heard);
                    return Some(Action::ReviewerCleanup { update: st.finish(), round, index });
                }
                // Stopped past its limit: the plan says so, not only how its process ended.
                let said = match said {
                    Err(how) if st.o.timeline_keys.contains(&timeout_key(round, index)) => {
                        Err(format!("stopped past its time limit; {how}"))
                    }
                    said => said,
                };
                heard.push((name.as_str(), r, said));
            }
        }
    }
    show(&mut st, round, &heard);
    let p = &st.o.plan;
    if let Some((reviewer, _, Err(how))) = heard.iter().find(|(_, _, said)| said.is_err()) {
        st.go(PlanStatus::Halted, Reason::PlanNoVerdict { reviewer: reviewer.to_string(), how: how.clone(), plan: p.id.clone() });
        return settle(st);
    }
    let changes: Vec<(&str, &Given)> =
        heard.iter().filter_map(|(n, _, said)| said.as_ref().ok().filter(|g| g.verdict == Verdict::Changes).map(|g| (*n, *g))).collect();
    if changes.is_empty() {
        st.go(PlanStatus::Completed, Reason::ReviewersApproved { count: heard.len() });
        return settle(st);
    }
    let reviewers: Vec<String> = changes.iter().map(|(n, _)| n.to_string()).collect();
    let comments = changes.iter().map(|(_, g)| g.comments.len()).sum();
    let mut text = String::new();
    for (name, given) in &changes {
        text.push_str(&format!("- Reviewer {name} asked for changes: {}\n", given.summary));
        for c in &given.comments {
            let at = c.line.map_or(c.path.clone(), |l| format!("{}:{l}", c.path));
            text.push_str(&format!("- {at}: {}\n", c.text));
        }
    }
    match p.fixer.clone() {
        Some(fixer) => {
            let fix_round = st.record.fixes + 1;
            st.record.fixes = fix_round;
            let fix = Some((fix_id(&p.id, w, fix_round), fixer.clone()));
            st.go(PlanStatus::Halted, Reason::PlanReviewChanges { reviewers, comments, plan: p.id.clone(), fix });
            Some(Action::ReviewFix { update: st.finish(), wave: w, round: fix_round, fixer, text })
        }
        None => {
            st.go(PlanStatus::Halted, Reason::PlanReviewChanges { reviewers, comments, plan: p.id.clone(), fix: None });
            settle(st)
        }
    }
}

/// The key of the `timeout` event of reviewer `index` in `round`.
fn timeout_key(round: u32, index: usize) -> String {
    format!("review_timeout:{round}:{index}")
}

/// Why reviewer `index` at work must stop now for running longer than its package's
/// `timeout:`, else the project's, if it must.
fn overtime(st: &Step<'_>, index: usize, r: &ReviewerRun) -> Option<String> {
    let package = st.o.reviewer_timeouts.get(index).copied().flatten();
    let limit = reviewer_limit(st.s, package);
    crate::worker::liveness::overtime(limit, r.run.as_ref()?.started_at, st.s.at)
}

/// A reviewer's time limit: its package's `timeout:`, else the project's.
pub(super) fn reviewer_limit(s: &super::Snapshot, package: Option<std::time::Duration>) -> Option<(std::time::Duration, &'static str)> {
    crate::worker::liveness::time_limit(&[(package, "the reviewer package's timeout"), (Some(s.timeout), "the project's timeout")])
}

/// What of the reviewers of a cancelled plan is left — at work, lingering, or a checkout:
/// stopped and removed, at once. `None`: nothing of them is left.
pub(super) fn drop_runs(o: &super::Observed) -> Option<Vec<super::ReviewerDrop>> {
    let left: Vec<_> = o
        .reviews
        .iter()
        .filter(|r| r.worktree_exists || r.proc.at_work())
        .map(|r| (r.index, r.run.clone().filter(|_| r.proc.under_way()), r.leftovers.clone()))
        .collect();
    (!left.is_empty()).then_some(left)
}

/// A `review_verdict` event each (its key once in the timeline), as a commission's are.
fn show(st: &mut Step<'_>, round: u32, heard: &[(&str, &ReviewerRun, Result<&Given, String>)]) {
    for (name, run, said) in heard {
        let (verdict, summary, comments) = match said {
            Ok(g) => (g.verdict.as_str(), g.summary.clone(), g.comments.as_slice()),
            Err(how) => ("none", format!("no verdict: {how}"), &[][..]),
        };
        let comments: Vec<serde_json::Value> = comments.iter().map(|c| json!({"path": c.path, "line": c.line, "text": c.text})).collect();
        let text = format!("reviewer {name} on the plan's integrated result: {verdict}: {summary}");
        st.event(
            "review_verdict",
            format!("review_verdict:{round}:{}", run.index),
            json!({"text": text, "reviewer": name, "round": round, "verdict": verdict, "summary": summary, "comments": comments}),
        );
    }
}
