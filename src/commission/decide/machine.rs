//! The state machine for one commission in one pass: the status as written against the status
//! last recorded (a person's edit is a request, validated; a new artifact over an ended one's
//! id, with a `created:` of its own, is new work), a one-shot `desired:`, and then what the
//! status needs now — the effect the pass must carry out. An attempt under way in another home
//! is left alone (only a request in `desired:` is answered), and so is one that ended on the
//! integration branch while the checkout still says it is to run; one another home finished
//! after every attempt of this one is adopted.

use serde_json::json;
use serde_yaml_ng::Value;

use super::deps::Cycles;
use super::effect::{Effect, Sig};
use super::liveness::{classify_exit, watch};
use super::step::Step;
use super::transitions::{person_may_request, refusal};
use crate::activity::reason::Reason;
use crate::activity::state::Record;
use crate::artifact::write::Edit;
use crate::artifact::{Desired, Status};
use crate::commission::observe::{Observed, Snapshot};

pub(super) fn plan_one<'a>(s: &Snapshot, o: &'a Observed, now: &str, cycles: &Cycles) -> (Step<'a>, Effect) {
    let mut st = Step::new(o, now);
    if let Some(away) = &o.elsewhere {
        elsewhere(o, away.attempt, &mut st);
        return (st, Effect::None);
    }
    if o.integrated.is_some() {
        // Ended on the integration branch, which the checkout's branch has not caught up with:
        // nothing to run again, and the checkout's file is the person's (`guild-hall land`
        // brings the status in). `status`, `check` and the pass's notes say so.
        return (st, Effect::None);
    }

    if o.unrecorded_worker {
        // This home's attempt, its record gone while its worker still works: nothing to watch
        // it by, so it is left as it is until the worker ends (then it fails, below).
        st.status = o.artifact.status.unwrap_or(st.status);
        return (st, Effect::None);
    }

    stamp_created(o, &mut st, now);
    // 1. The status as written versus the status we last wrote.
    as_written(o, &mut st, now);
    // 2. A one-shot request in `desired:`.
    let wants_dispatch = desired(o, &mut st);
    // A person's `answer:`, questions past their time, meeting requests (before the worker is
    // watched: one waiting for a person is never stale).
    super::asking::settle(s, o, &mut st);
    // 3. What the status needs now.
    let effect = match st.status {
        Status::Draft => Effect::None,
        Status::Pending | Status::Blocked => waiting(s, o, &mut st, cycles, wants_dispatch),
        Status::Dispatched | Status::InProgress => at_work(s, o, &mut st),
        Status::Review => super::checks::send_back(s, o, &st)
            .or_else(|| super::conflicts::send_back(s, o, &st))
            .or_else(|| {
                let passed = super::checks::passed(s, o, st.record.attempt);
                super::reviewers::step(s, o, &mut st, passed)
            })
            .unwrap_or_else(|| super::review::in_review(o, &mut st)),
        Status::Cancelled | Status::Failed | Status::Completed | Status::Abandoned => ended(s, o, &mut st),
    };
    stop_follows_processes(o, &mut st);
    (st, effect)
}

/// Under way in another home (this one never started it): nothing here to watch, stop or
/// finish; `status` and `check` say so, and a person decides. A one-shot request is answered:
/// a cancel gives the attempt up here (the other home's worker is not ours to stop); a dispatch
/// is refused, saying how to run it again here. The status is the artifact's, whatever older
/// attempt this home's record is of.
fn elsewhere(o: &Observed, attempt: u32, st: &mut Step<'_>) {
    st.status = o.artifact.status.unwrap_or(st.status);
    match o.artifact.desired {
        Some(Desired::Cancelled) => {
            let what = format!(
                "desired cancelled (attempt {} was under way in another home; its worker there, if any, is not stopped from here)",
                attempt
            );
            st.go(Status::Cancelled, Reason::Requested(what));
            st.remove("desired");
            stop_follows_processes(o, st);
        }
        Some(d @ (Desired::Dispatched | Desired::Abandoned)) => {
            let why = format!("attempt {} is under way in another home; set `status: pending` to run it again here", attempt);
            st.refuse(&format!("desired: {}", d.as_str()), &why);
            st.remove("desired");
        }
        Some(d @ (Desired::Approved | Desired::Revised | Desired::Rejected)) => {
            let why = format!("attempt {} is under way in another home; only work in review here is {}", attempt, d.as_str());
            st.refuse(&format!("desired: {}", d.as_str()), &why);
            st.remove("desired");
            st.remove("feedback");
        }
        None => {}
    }
}

/// The `created:` stamp a commission is queued by: the artifact's, kept in the record.
fn stamp_created(o: &Observed, st: &mut Step<'_>, now: &str) {
    let settled = o.artifact.status.is_some_and(Status::is_terminal);
    match (o.artifact.created(), &st.record.created) {
        (Some(c), None) if !settled => st.record.created = Some(c.to_string()),
        (None, _) if !settled => {
            // The first stamp stays the commission's: a stash or checkout that dropped the key
            // does not move it to the back of the queue.
            let created = st.record.created.clone().unwrap_or_else(|| now.to_string());
            st.set("created", Value::String(created.clone()));
            st.record.created = Some(created);
        }
        _ => {}
    }
}

/// The status as written versus the status last recorded: adopted, first met, new work over a
/// used id, or (this home's own) a write to repeat or a person's request.
fn as_written(o: &Observed, st: &mut Step<'_>, now: &str) {
    let art = o.artifact.status;
    match &o.record {
        Some(r) if newer_finished_work(o, r) => {
            // Finished work this home never ran (a teammate's re-run, a CI run's, pulled in):
            // the artifact is the truth of it, and this home's older record gives way to it.
            let status = art.unwrap_or(r.status);
            let created = o.artifact.created().map(str::to_string).or_else(|| r.created.clone());
            st.status = status;
            st.record = Record {
                status,
                prev: None,
                attempt: o.artifact.attempt(),
                term_sent_at: None,
                created,
                stopping: None,
                given: None,
                revision: None,
                conflict: None,
            };
        }
        None => match art {
            None => {
                // A new file without a status is taken as pending: created so, not moved there.
                st.update.events.push(crate::activity::timeline::created(&st.now, "pending", Some("no status: taken as pending")));
                st.arrive(Status::Pending);
            }
            Some(s @ (Status::Draft | Status::Pending | Status::Blocked)) => {
                st.update.events.push(crate::activity::timeline::created(&st.now, s.as_str(), None));
            }
            Some(Status::Dispatched | Status::InProgress) => {
                // Claims to run, and this home holds a runtime trace of it (activity::ids::runtime) but no
                // record: a pass killed before it wrote one; nothing to watch.
                st.go(Status::Failed, Reason::ProcessLost);
            }
            Some(s) if s.is_terminal() && o.artifact.attempt() == 0 => {
                // Written already over and never run (no attempt): created so, like any other.
                // One another home ran (its `attempt:`) was created there: its timeline says so.
                st.update.events.push(crate::activity::timeline::created(&st.now, s.as_str(), None));
            }
            Some(_) => {}
        },
        Some(r) if new_work_over_used_id(o, r) => {
            // Not a request to undo what ended: the old artifact is gone and this one is new
            // work under the same id. It runs as a new commission, on an attempt (and branch)
            // after every earlier one; the earlier result is history, never this one's.
            let to = if art == Some(Status::Draft) { Status::Draft } else { Status::Pending };
            let text = format!(
                "new work over a used id: {} ended {} (attempt {}) and its artifact is gone; this one is a new commission, its attempts numbered after {}",
                o.artifact.id, r.status, r.attempt, r.attempt
            );
            st.event("new-work", format!("new-work:{}:{}", r.attempt, o.artifact.hash), json!({"text": text, "after_attempt": r.attempt}));
            let created = o.artifact.created().map(str::to_string).unwrap_or_else(|| now.to_string());
            st.set("created", Value::String(created.clone()));
            st.status = to;
            st.record = Record {
                status: to,
                prev: None,
                attempt: r.attempt,
                term_sent_at: None,
                created: Some(created),
                stopping: None,
                given: None,
                revision: None,
                conflict: None,
            };
        }
        Some(r) => request(o, r, st),
    }
}

/// A status this home recorded, against the artifact's: our write landed, our write to repeat
/// (put back), or a person's edit — a request carried out or refused.
fn request(o: &Observed, r: &Record, st: &mut Step<'_>) {
    let art = o.artifact.status;
    if art == Some(r.status) && r.prev.is_some() {
        // Our write has landed: from now on the status it replaced, written back by a
        // person, is a request like any other (and refused with a reason if invalid).
        st.record.prev = None;
    } else if art != Some(r.status) && (art.is_none() || art == r.prev) {
        // Our own write was interrupted or dropped (or the key was deleted): write it
        // again. `prev` is kept only until the artifact is seen to say `r.status`.
        st.set("status", Value::String(r.status.as_str().into()));
        if let Some(hint) = new_work_hint(o, r).filter(|_| r.prev.is_none() || art != r.prev) {
            st.refuse("a missing status", &format!("{} is put back; {hint}", r.status));
        }
    } else if let Some(want) = art.filter(|a| *a != r.status) {
        let finished_with_result = r.status.is_active() && o.attempt.over() && st.has_result();
        if want == Status::Cancelled && finished_with_result {
            st.refuse(&format!("status change {} -> cancelled", r.status), "the worker already finished and submitted a result");
            st.set("status", Value::String(r.status.as_str().into()));
        } else if person_may_request(r.status, want) {
            st.go(want, Reason::Requested(format!("status set to {want}")));
        } else {
            let why = match new_work_hint(o, r) {
                Some(hint) => format!("{}; {hint}", refusal(r.status, want)),
                None => refusal(r.status, want),
            };
            st.refuse(&format!("status change {} -> {want}", r.status), &why);
            st.set("status", Value::String(r.status.as_str().into()));
        }
    }
}

/// A one-shot request in `desired:`: carried out or refused, and removed once answered;
/// whether a dispatch is wanted.
fn desired(o: &Observed, st: &mut Step<'_>) -> bool {
    let mut wants_dispatch = false;
    match o.artifact.desired {
        None => {}
        // What a person asks of work in review is carried out there (`review::in_review`).
        Some(_) if st.status == Status::Review => {}
        Some(d @ (Desired::Approved | Desired::Revised | Desired::Rejected)) => {
            st.refuse(&format!("desired: {}", d.as_str()), &super::transitions::review_refusal(st.status, d));
            st.remove("desired");
            st.remove("feedback");
        }
        Some(Desired::Dispatched) => match st.status {
            Status::Pending => wants_dispatch = true,
            Status::Draft | Status::Failed | Status::Cancelled => {
                st.go(Status::Pending, Reason::Requested("desired dispatched".into()));
                wants_dispatch = true;
            }
            // Kept while it waits (dependencies, its worker's package) and carried out once it
            // unblocks: with `dispatch: manual` nothing else would ever start it.
            Status::Blocked => wants_dispatch = true,
            Status::Dispatched | Status::InProgress => st.remove("desired"),
            // Answered in review (above).
            Status::Review => {}
            Status::Completed | Status::Abandoned => {
                st.refuse("desired: dispatched", &refusal(st.status, Status::Dispatched));
                st.remove("desired");
            }
        },
        Some(Desired::Abandoned) => {
            match st.status {
                Status::Pending | Status::Blocked | Status::Failed | Status::Cancelled => {
                    let text = o.artifact.feedback.iter().map(crate::artifact::Feedback::line_text).collect::<Vec<_>>().join("; ");
                    st.go(Status::Abandoned, Reason::Abandoned { text: (!text.is_empty()).then_some(text) });
                }
                other => st.refuse("desired: abandoned", &refusal(other, Status::Abandoned)),
            }
            st.remove("desired");
            st.remove("feedback");
        }
        Some(Desired::Cancelled) => {
            let finished_with_result = st.status.is_active() && o.attempt.over() && st.has_result();
            match st.status {
                _ if finished_with_result => {
                    st.refuse("desired: cancelled", "the worker already finished and submitted a result");
                    st.remove("desired");
                }
                Status::Pending | Status::Blocked | Status::Dispatched | Status::InProgress => {
                    st.go(Status::Cancelled, Reason::Requested("desired cancelled".into()));
                    st.remove("desired");
                }
                other => {
                    st.refuse("desired: cancelled", &refusal(other, Status::Cancelled));
                    st.remove("desired");
                }
            }
        }
    }
    wants_dispatch
}

/// Pending or blocked: blocked while it waits (dependencies, its worker's package), else a
/// candidate for a slot once nothing of an earlier attempt is left.
fn waiting(s: &Snapshot, o: &Observed, st: &mut Step<'_>, cycles: &Cycles, wants_dispatch: bool) -> Effect {
    let cfg = &s.project.config;
    if let Some(full) = super::waiting::waiting(o, &s.workers, &cfg.integration_branch, Some(cycles))
        .is_none()
        .then(|| super::waiting::package_full(s, o))
        .flatten()
    {
        // Its package's `max_concurrent:` is reached: it waits for one of its attempts to end.
        if st.status == Status::Pending {
            st.go(Status::Blocked, full);
        } else if o.artifact.owned.reason.as_deref() != Some(full.to_string().as_str()) {
            st.set("reason", Value::String(full.to_string()));
        }
        return Effect::None;
    }
    if let Some(why) = super::waiting::waiting(o, &s.workers, &cfg.integration_branch, Some(cycles)) {
        if st.status == Status::Pending {
            st.go(Status::Blocked, Reason::Waiting(why));
        } else if o.artifact.owned.reason.as_deref() != Some(why.as_str())
            && !st.update.edits.iter().any(|e| matches!(e, Edit::Set(k, _) if k == "reason"))
        {
            st.set("reason", Value::String(why));
        }
        Effect::None
    } else if let Some(reached) = s.daily_budget.filter(|_| cfg.dispatch == crate::config::DispatchMode::Auto || wants_dispatch) {
        // A daily budget reached: new work waits for the day to end; what runs finishes.
        let reason = Reason::DailyBudgetReached(reached);
        if st.status == Status::Pending {
            st.go(Status::Blocked, reason);
        } else if o.artifact.owned.reason.as_deref() != Some(reason.to_string().as_str())
            && !st.update.edits.iter().any(|e| matches!(e, Edit::Set(k, _) if k == "reason"))
        {
            st.set("reason", Value::String(reason.to_string()));
        }
        Effect::None
    } else {
        if st.status == Status::Blocked {
            st.go(Status::Pending, Reason::Unblocked { worker: o.artifact.worker.clone() });
        }
        if o.attempt.lingering().is_some() {
            Effect::KillLeftovers
        } else if o.worktree_exists && !o.attempt.under_way() {
            Effect::Cleanup("leftover worktree of an earlier attempt")
        } else if super::liveness::not_before(o).is_some_and(|t| t > s.now) && !wants_dispatch {
            // Paused by its agent's limit until then (a person's dispatch starts it sooner);
            // the watch is woken then (`timers`).
            Effect::None
        } else {
            Effect::Candidate { wants: wants_dispatch }
        }
    }
}

/// Dispatched or in progress: the attempt started, held to the liveness rules, or its exit
/// classified once its worker is gone.
fn at_work(s: &Snapshot, o: &Observed, st: &mut Step<'_>) -> Effect {
    st.fold_mail();
    st.account_usage();
    match &o.attempt {
        _ if o.record.is_none() => Effect::None,
        a if a.starting() => Effect::None,
        // Nothing is over until every process of the attempt is.
        a if a.lingering().is_some() => Effect::KillLeftovers,
        a if a.untaken() && st.status == Status::Dispatched => Effect::Resume,
        a if a.alive() => {
            if st.status == Status::Dispatched {
                let pid = a.run().map(|r| r.pid).unwrap_or(0);
                st.go(Status::InProgress, Reason::Running { shim_pid: pid });
            }
            watch(s, o, st)
        }
        // What is left: nothing of it runs, it never started or it is over.
        // How it ended depends on what its mailbox holds. Its worker is gone, so nothing
        // will make it readable (a worker can `chmod` its own file; guild-hall gives the
        // mode back, so this is a file it cannot read even so): the attempt fails, saying
        // why, instead of holding its slot and worktree for ever.
        _ if o.mail_error.is_some() => {
            let why = o.mail_error.clone().unwrap_or_default();
            st.go(Status::Failed, Reason::MailboxUnreadable(why));
            Effect::None
        }
        _ => match classify_exit(o, st) {
            Effect::Finish => super::checks::submitted(s, o, st),
            other => other,
        },
    }
}

/// Ended (cancelled, failed, completed): what still runs stopped, leftovers killed, the
/// worktree cleaned up.
fn ended(s: &Snapshot, o: &Observed, st: &mut Step<'_>) -> Effect {
    let cfg = &s.project.config;
    // Ended from review (a person's `status: cancelled`) while reviewer workers were at work:
    // what those that finished used is logged first.
    super::reviewers::account_usage(o, st, &super::reviewers::of(s, o));
    if let Some(dropped) = super::reviewers::drop_runs(o) {
        return dropped;
    }
    if o.record.as_ref().is_some_and(|r| r.attempt > 0) && (o.worktree_exists || !o.attempt.untaken()) {
        st.fold_mail();
        st.account_usage();
    }
    match &o.attempt {
        a if a.alive() && st.status == Status::Cancelled => match st.record.term_sent_at {
            None => {
                st.record.term_sent_at = Some(s.now);
                Effect::Signal(Sig::Term)
            }
            Some(t) if s.now.signed_duration_since(t).to_std().unwrap_or_default() >= cfg.cancel_grace => Effect::Signal(Sig::Kill),
            Some(_) => Effect::None,
        },
        a if a.alive() => Effect::Signal(Sig::Kill),
        a if a.lingering().is_some() => Effect::KillLeftovers,
        // A job still in a cluster's queue: nothing of it runs, it is taken out.
        a if a.starting() && a.queued().is_some() => Effect::Signal(Sig::Kill),
        a if a.starting() => Effect::None,
        _ if o.worktree_exists => Effect::Cleanup(if st.status == Status::Completed { "leftover worktree" } else { "partial results" }),
        _ => Effect::None,
    }
}

/// A hand-written artifact over an id whose earlier commission ended (the person deleted it and
/// copied in, or generated, a new one): this home's record says it ended, yet the artifact says
/// it has not started, carries none of the keys the reconciler wrote as it ran and ended
/// (`attempt:`, `completed:`, `result:`), and carries a `created:` stamp that is not the ended
/// one's. Without that stamp it is the same commission however it got there — a `git stash`,
/// a checkout or a reset restoring an older version, a file written without `created:` — and
/// its status is a request like any other (design §4), never new work.
fn new_work_over_used_id(o: &Observed, r: &Record) -> bool {
    lacks_run_keys(o, r) && o.artifact.created().is_some_and(|c| r.created.as_deref() != Some(c))
}

/// The record says the commission ended, the artifact says it has not started and holds none
/// of the keys written as it ran and ended.
fn lacks_run_keys(o: &Observed, r: &Record) -> bool {
    r.status.is_terminal()
        && matches!(o.artifact.status, None | Some(Status::Pending | Status::Draft | Status::Blocked))
        && ["attempt", "completed", "result"].iter().all(|k| o.artifact.field(k).is_none())
}

/// For an artifact taken as the same ended commission although it looks unstarted: how to start
/// new work instead (told in the reason when its status is put back).
fn new_work_hint(o: &Observed, r: &Record) -> Option<String> {
    lacks_run_keys(o, r).then(|| {
        format!(
            "this artifact is taken for commission {} (attempt {}), since it carries no `created:` stamp other than that commission's; to start new work instead, run `guild-hall commission create` (it picks a free id) or give the file a new name",
            o.artifact.id, r.attempt
        )
    })
}

/// The artifact says how an attempt after every one this home ran ended: finished work of
/// another home (a teammate's re-run, a CI run's), which this home adopts.
fn newer_finished_work(o: &Observed, r: &Record) -> bool {
    o.artifact.attempt() > r.attempt && o.artifact.status.is_some_and(Status::is_terminal)
}

/// Status follows only what is really over: a commission failed or cancelled while processes
/// of its attempt are alive says it is still stopping (in its record, which `status` and the
/// dispatcher read, and on its terminal timeline event) until the last of them is gone; only
/// then is `completed:` stamped, with a `stopped` event.
fn stop_follows_processes(o: &Observed, st: &mut Step<'_>) {
    // Abandoned too: given up from failed or cancelled while that attempt's processes are
    // still being stopped, it is over only once they are.
    if !matches!(st.status, Status::Failed | Status::Cancelled | Status::Abandoned) {
        st.record.stopping = None;
        return;
    }
    let live = o.attempt.at_work();
    if live {
        if st.record.stopping.is_none() {
            let doing = match st.status {
                Status::Cancelled => "cancelling",
                Status::Abandoned => "abandoning",
                _ => "failing",
            };
            let text = format!("{doing}: worker still running");
            match st.update.events.iter_mut().rev().find(|e| e["kind"] == "status") {
                Some(serde_json::Value::Object(e)) => {
                    e.insert("stopping".into(), text.clone().into());
                }
                _ => st.event("stopping", format!("stopping:{}", st.record.attempt), json!({"text": text})),
            }
            st.record.stopping = Some(text);
        }
    } else if st.record.stopping.take().is_some() {
        let attempt = st.record.attempt;
        st.event("stopped", format!("stopped:{attempt}"), json!({"text": format!("every process of attempt {attempt} is gone")}));
        st.set("completed", Value::String(st.now.clone()));
    } else if st.moved {
        st.set("completed", Value::String(st.now.clone()));
    }
}
