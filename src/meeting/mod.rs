//! Meetings, the synchronous half (design §8): the meeting artifact's state machine as a pure
//! decider ([`decide`]) fed by [`observe`] (the mailbox read incrementally into [`fold`]) and
//! carried out by [`act`], joined by [`Meetings`], the kind the reconcile pass drives alongside
//! commissions and plans; live turns streamed from the worker ([`turn`], [`events`]); notes on
//! close ([`notes`]). Branch, worktree, leftovers and squash merge are `activity`'s. What people
//! and tools do to meetings (create, request, converge) is `crate::ops::meeting`, above the loop.

pub(crate) mod act;
pub(crate) mod decide;
pub mod events;
pub(crate) mod fold;
pub(crate) mod notes;
pub mod observe;
pub mod turn;

use std::time::Duration;

use anyhow::Result;

use crate::activity::kind::{AtWork, Capacity, Ctx, Decided, Kind, Name};
use crate::activity::observed::{AtRest, Store};
use crate::activity::Outcome;
#[cfg(test)]
use crate::artifact::MeetingStatus;
use crate::artifact::Problem;
use crate::worker::Catalog;

#[cfg(test)]
/// What a person may ask of a meeting by editing `status:` (design §8): the decider's table.
pub(crate) const REQUESTS: [(MeetingStatus, MeetingStatus); 3] = [
    (MeetingStatus::Requested, MeetingStatus::Open),
    (MeetingStatus::Requested, MeetingStatus::Declined),
    (MeetingStatus::Open, MeetingStatus::Closed),
];

/// Meetings as a kind of the reconcile pass. `store`: what a watch observed in its earlier
/// passes (meetings at rest, [`observe::at_rest`]); `None`: everything is read.
#[derive(Default)]
pub(crate) struct Meetings<'a> {
    pub(crate) store: Option<&'a Store<AtRest>>,
}

impl Kind<Catalog> for Meetings<'_> {
    const NAME: Name = Name::Meeting;
    const ACT_ORDER: u8 = 0;
    /// A meeting's turns are run by the person's command, not by the pass.
    const LAUNCHES: bool = false;
    type Snapshot = decide::Snapshot;
    type Action = decide::Action;

    fn observe(&self, ctx: Ctx<'_, Catalog>, _capacity: &Capacity) -> Result<(Self::Snapshot, Vec<Problem>)> {
        let now = crate::activity::timeline::timestamp(chrono::Utc::now());
        let (snapshot, problems) = observe::observe_cached(ctx.home, ctx.project, ctx.workers, &now, self.store)?;
        Ok((snapshot, problems))
    }

    fn decide(&self, snapshot: &Self::Snapshot) -> Decided<decide::Action> {
        Decided::actions(decide::decide(snapshot))
    }

    fn act(&self, ctx: Ctx<'_, Catalog>, _: &Self::Snapshot, action: &decide::Action) -> Result<Outcome> {
        act::act(&ctx, action)
    }

    fn next_check(&self, _: &Self::Snapshot) -> Option<Duration> {
        None
    }

    /// Nothing for the watcher to wait on (the pass never reported meetings' workers).
    fn at_work(&self, _: Ctx<'_, Catalog>, _: &Self::Snapshot) -> AtWork {
        AtWork::default()
    }

    #[cfg(test)]
    fn requests() -> Vec<(&'static str, &'static str)> {
        REQUESTS.iter().map(|(from, to)| (from.as_str(), to.as_str())).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::decide::{decide, Action, MeetingRecord, Observed, Snapshot};
    use super::*;

    fn observed(file: MeetingStatus, had: MeetingStatus) -> Observed {
        let text = format!("---\nworker: scribe\nstatus: {file}\n---\nHello\n");
        Observed {
            meeting: crate::artifact::Meeting::parse(std::path::Path::new(".lore/meetings/m.md"), &text).expect("valid"),
            record: Some(MeetingRecord { status: had, created: None, notes_written: false }),
            folded: Default::default(),
            fold_changed: false,
            followups_before: 0,
            mail: vec![],
            mail_notes: vec![],
            opened: had == MeetingStatus::Open,
            worker_problem: None,
            held_here: false,
        }
    }

    /// The request table the board and operations read is the one the decider enforces: a
    /// person's `status:` edit is carried out exactly for the pairs it lists.
    #[test]
    fn the_request_table_is_the_deciders() {
        for had in MeetingStatus::ALL {
            for asked in MeetingStatus::ALL.into_iter().filter(|&a| a != had) {
                let s = Snapshot { meetings: vec![observed(asked, had)], cap: 5, followup_cap: 3, now: "2026-11-23T10:00:00.000Z".into() };
                let actions = decide(&s);
                let accepted = actions.iter().any(|a| {
                    let (Action::Update { update, .. } | Action::Open { update, .. } | Action::Close { update, .. }) = a;
                    update.record.as_ref().is_some_and(|r| r.status == asked)
                });
                assert_eq!(accepted, REQUESTS.contains(&(had, asked)), "{had} -> {asked}: {actions:?}");
            }
        }
        assert_eq!(Meetings::requests(), vec![("requested", "open"), ("requested", "declined"), ("open", "closed")]);
    }

    /// A meeting is at rest for a watch's store (`observe::at_rest`) only closed or declined as
    /// the file and the record both say, without a worktree or anything new from its mailbox.
    #[test]
    fn a_meeting_is_at_rest_only_ended_as_recorded_and_idle() {
        use MeetingStatus::*;
        let at_rest = |o: Observed| {
            let s = Snapshot { meetings: vec![o], cap: 5, followup_cap: 3, now: "2026-11-23T10:00:00.000Z".into() };
            !super::observe::at_rest(&s).is_empty()
        };
        assert!(at_rest(observed(Closed, Closed)) && at_rest(observed(Declined, Declined)));
        assert!(!at_rest(observed(Open, Open)), "open");
        assert!(!at_rest(observed(Closed, Open)), "a close to carry out");
        assert!(!at_rest(observed(Open, Closed)), "a request to refuse");
        let mut no_record = observed(Closed, Closed);
        no_record.record = None;
        assert!(!at_rest(no_record), "not recorded yet");
        let mut checked_out = observed(Closed, Closed);
        checked_out.opened = true;
        assert!(!at_rest(checked_out), "its worktree is there");
        let mut noted = observed(Closed, Closed);
        noted.mail_notes.push(("k".into(), "a line skipped".into()));
        assert!(!at_rest(noted), "something new from its mailbox");
    }
}
