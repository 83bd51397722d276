//! The meeting state machine as a pure decider (REQ-MTG-4..9, 24, 28): requested → open |
//! declined, open → closed, nothing else. A status a person writes is a request, validated
//! against what guild-hall last accepted (the record); a refused one is put back with
//! `reason:` and a log event; one open in another home is left alone ([`elsewhere`]). Same
//! shape as the commission decider: snapshot in, actions out.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value as Json};
use serde_yaml_ng::Value;

use super::fold::Folded;
use crate::activity::reason::Reason;
use crate::activity::{changes, timeline};
use crate::artifact::write::Edit;
use crate::artifact::{Meeting, MeetingStatus};
use crate::worker::toolbox::mailbox::{Mail, MailBody};

/// guild-hall's memory of a meeting (`record.json` in its runtime dir): the status it last
/// accepted, and how far closing got.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct MeetingRecord {
    pub(crate) status: MeetingStatus,
    /// The `created:` stamp as first written: restored if the key disappears.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) created: Option<String>,
    /// Closing wrote the final notes into the artifact (they are not composed twice).
    #[serde(default)]
    pub(crate) notes_written: bool,
}

/// One meeting as observed.
#[derive(Debug, Clone)]
pub(crate) struct Observed {
    pub(crate) meeting: Meeting,
    pub(crate) record: Option<MeetingRecord>,
    /// Its mailbox as folded so far, this pass's new events taken in.
    pub(crate) folded: Folded,
    /// `folded` moved on in this pass (it is written back with the pass's update).
    pub(crate) fold_changed: bool,
    /// Follow-ups proposed before this pass's new events.
    pub(crate) followups_before: u64,
    /// This pass's new events for the log (at most [`crate::worker::toolbox::mailbox::MAIL_PER_PASS`],
    /// and every follow-up within the cap).
    pub(crate) mail: Vec<Mail>,
    /// Notes on what the reader skipped or left out of the log: (log key, text).
    pub(crate) mail_notes: Vec<(String, String)>,
    /// Its worktree exists as guild-hall made it.
    pub(crate) opened: bool,
    /// Why its worker cannot meet, if it cannot (unknown package, no `meeting` capability).
    pub(crate) worker_problem: Option<String>,
    /// This home holds a runtime trace of it (`activity::ids::runtime`: its state dir,
    /// worktree, transcript, or an update a killed pass left to settle).
    pub(crate) held_here: bool,
}

/// Everything the meeting decider needs.
#[derive(Debug, Clone)]
pub(crate) struct Snapshot {
    pub(crate) meetings: Vec<Observed>,
    pub(crate) cap: usize,
    /// The most follow-up requests one meeting may make (`followups_per_meeting`).
    pub(crate) followup_cap: usize,
    pub(crate) now: String,
}

/// A change to one meeting ([`crate::activity::apply::Update`]): its record, and how far its
/// mailbox is folded (written once the events are in the log).
pub(crate) type Update = crate::activity::apply::Update<MeetingRecord, Option<Folded>>;

/// A follow-up meeting request to write (from `propose_followup`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Followup {
    /// Derived from the proposing meeting and the mail's sequence: writing it twice is a no-op.
    pub(crate) id: String,
    pub(crate) worker: String,
    pub(crate) reason: String,
    pub(crate) references: Vec<String>,
    pub(crate) requested_by: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub(crate) enum Action {
    /// Record, refuse or fold: the update alone (and any follow-up requests first).
    Update { update: Update, followups: Vec<Followup> },
    /// Open: the branch from the integration branch, the worktree, then the update.
    Open { update: Update, branch: String },
    /// Close: follow-up requests, notes, leftovers committed, squash merge, worktree and
    /// transcript removed, then the update (which makes the record `closed`). Every step is
    /// safe to repeat.
    Close { update: Update, branch: String, notes_written: bool, followups: Vec<Followup> },
}

impl crate::activity::kind::Action for Action {
    fn id(&self) -> &str {
        match self {
            Action::Update { update, .. } | Action::Open { update, .. } | Action::Close { update, .. } => &update.id,
        }
    }

    fn starts_work(&self) -> bool {
        matches!(self, Action::Open { .. })
    }

    fn verb(&self) -> &'static str {
        match self {
            Action::Update { .. } => "meeting-update",
            Action::Open { .. } => "meeting-open",
            Action::Close { .. } => "meeting-close",
        }
    }

    fn describe(&self) -> String {
        match self {
            Action::Open { branch, .. } => format!("open the meeting on {branch}"),
            Action::Close { branch, .. } => format!("close the meeting: notes, merge {branch}, remove its worktree"),
            Action::Update { update, followups } => {
                let mut parts: Vec<String> = update.edits.iter().map(describe_edit).collect();
                parts.extend(followups.iter().map(|f| format!("request follow-up {}", f.id)));
                if parts.is_empty() {
                    parts.push(crate::activity::timeline::recorded(&update.events));
                }
                parts.join(", ")
            }
        }
    }
}

fn describe_edit(e: &Edit) -> String {
    match e {
        Edit::Set(k, v) if v.is_string() => format!("{k}: {}", v.as_str().unwrap_or("")),
        Edit::Set(k, _) => format!("set {k}"),
        Edit::Remove(k) => format!("remove {k}"),
    }
}

/// Plan one pass over the project's meetings: oldest first, so the cap admits them in order.
pub(crate) fn decide(s: &Snapshot) -> Vec<Action> {
    let mut order: Vec<&Observed> = s.meetings.iter().collect();
    let created = |o: &Observed| o.meeting.owned.created.clone().or_else(|| o.record.as_ref().and_then(|r| r.created.clone()));
    order.sort_by(|a, b| (created(a).is_none(), created(a), &a.meeting.id).cmp(&(created(b).is_none(), created(b), &b.meeting.id)));
    let mut open: Vec<String> = s
        .meetings
        .iter()
        .filter(|o| o.record.as_ref().is_some_and(|r| r.status == MeetingStatus::Open))
        .map(|o| o.meeting.id.clone())
        .collect();
    open.sort();
    let mut out = Vec::new();
    for o in order {
        if let Some(a) = step(s, o, &mut open) {
            out.push(a);
        }
    }
    out
}

/// Builds one meeting's update.
struct Step<'a> {
    o: &'a Observed,
    now: &'a str,
    update: Update,
    record: MeetingRecord,
    followups: Vec<Followup>,
}

impl<'a> Step<'a> {
    fn new(o: &'a Observed, now: &'a str) -> Step<'a> {
        let m = &o.meeting;
        let record = o.record.clone().unwrap_or(MeetingRecord { status: m.effective_status(), created: None, notes_written: false });
        Step { o, now, update: Update::new(&m.id, m.hash), record, followups: Vec::new() }
    }

    fn set(&mut self, key: &str, value: Value) {
        changes::set(&self.o.meeting.fields, &mut self.update.edits, key, value);
    }

    fn remove(&mut self, key: &str) {
        changes::remove(&self.o.meeting.fields, &mut self.update.edits, key);
    }

    /// A timeline event (a meeting's timeline keys are not observed: every one is queued).
    fn event(&mut self, kind: &str, key: String, fields: Json) {
        changes::event(None, &mut self.update.events, self.now, kind, key, fields);
    }

    /// Accept a transition: the record follows, the log says so.
    fn go(&mut self, from: Option<MeetingStatus>, to: MeetingStatus, reason: Reason) {
        let reason = reason.to_string();
        // A meeting first met is `created` (its own event); a move is from a status it had.
        if let Some(from) = from {
            self.event("status", format!("status:{from}:{to}"), json!({"from": from.as_str(), "to": to.as_str(), "reason": reason}));
        }
        self.record.status = to;
        self.set("status", Value::String(to.as_str().into()));
        self.update.record = Some(self.record.clone());
        // A decline keeps the person's note; an open or a close clears an earlier refusal.
        let planned = self.update.edits.iter().any(|e| matches!(e, Edit::Set(k, _) if k == "reason"));
        if crate::activity::kind::stale_reason_goes(to == MeetingStatus::Declined, planned) {
            self.remove("reason");
        }
    }

    /// Refuse what the file asks: the status is put back, `reason:` and the log say why.
    fn refuse(&mut self, asked: MeetingStatus, back: MeetingStatus, why: String) {
        let key = format!("refused:{}:{asked}:{}", back, self.o.meeting.hash);
        let why = Reason::Refused { request: Some(format!("status change {back} -> {asked}")), why }.to_string();
        self.event("refused", key, json!({"asked": asked.as_str(), "status": back.as_str(), "reason": why}));
        self.set("status", Value::String(back.as_str().into()));
        self.set("reason", Value::String(why));
        self.update.record = Some(self.record.clone());
    }

    /// Stamp `created` once (the FIFO key), restoring it from the record if it went missing.
    fn stamp_created(&mut self) {
        let stamp = self.o.meeting.owned.created.clone().or_else(|| self.record.created.clone()).unwrap_or_else(|| self.now.to_string());
        if self.record.created.as_deref() != Some(stamp.as_str()) {
            self.record.created = Some(stamp.clone());
            self.update.record = Some(self.record.clone());
        }
        self.set("created", Value::String(stamp));
    }

    /// Fold the toolbox's new mail into the log and the artifact (linked artifacts, progress
    /// summaries in the notes), and turn follow-up proposals into requests, up to the cap.
    /// `closing`: the notes are left to the close (they are composed there, from all of it).
    fn fold_mail(&mut self, closing: bool, followup_cap: usize) {
        let (m, f) = (&self.o.meeting, &self.o.folded);
        // The frontmatter had no room for the worker's text once (beside a long agenda, say):
        // it stays in the log for the rest of the meeting, and the notes say so.
        let full = m.owned.notes.as_deref() == Some(super::notes::LEFT_OUT);
        let mut proposed = self.o.followups_before;
        for mail in &self.o.mail {
            self.update.events.push(timeline::event(&mail.ts, mail.body.kind(), mail.id.clone(), mail.body.timeline_fields(mail.attempt)));
            let MailBody::Followup { reason, references } = &mail.body else { continue };
            proposed += 1;
            if proposed as usize <= followup_cap {
                self.followups.push(Followup {
                    id: crate::artifact::ids::derived(&m.id, &format!("followup-{}", mail.seq)),
                    worker: m.worker.clone(),
                    reason: reason.clone(),
                    references: references.clone(),
                    requested_by: format!("{} (meeting {})", m.worker, m.id),
                });
            }
        }
        for (key, text) in &self.o.mail_notes {
            self.update.events.push(timeline::event(self.now, "anomaly", key.clone(), json!({ "text": text })));
        }
        let dropped = f.followups.saturating_sub(followup_cap as u64);
        if dropped > 0 && f.followups > self.o.followups_before {
            let text = format!(
                "{dropped} follow-up proposal{} over the cap of {followup_cap} per meeting (followups_per_meeting) {} not written as requests; each is in this log",
                if dropped == 1 { "" } else { "s" },
                if dropped == 1 { "was" } else { "were" }
            );
            self.event("anomaly", format!("followups-over-cap:{dropped}"), json!({ "text": text }));
        }
        if self.o.fold_changed {
            self.update.fold = Some(f.clone());
        }
        let linked = f.linked_shown();
        if !linked.is_empty() && !full {
            self.set("linked_artifacts", Value::Sequence(linked.into_iter().map(Value::String).collect()));
        }
        // While the meeting is open its notes are the progress summaries so far (the latest,
        // within what the frontmatter holds); closing replaces them with the full notes.
        if let Some(text) =
            f.progress_notes().filter(|_| !closing && !full && self.record.status == MeetingStatus::Open && !self.record.notes_written)
        {
            self.set("notes", Value::String(crate::worker::toolbox::mailbox::clip(&text, super::notes::NOTES_MAX).into_owned()));
        }
    }

    fn is_empty(&self) -> bool {
        self.update.is_empty() && self.followups.is_empty()
    }

    fn into_update(self) -> Option<Action> {
        if self.is_empty() {
            return None;
        }
        Some(Action::Update { update: self.update, followups: self.followups })
    }
}

/// Can this meeting be opened now? `Err` says why not (the cap, its worker).
fn admit(s: &Snapshot, o: &Observed, open: &[String]) -> Result<(), Reason> {
    if let Some(why) = &o.worker_problem {
        return Err(Reason::CannotOpen(why.clone()));
    }
    if open.len() >= s.cap && !open.contains(&o.meeting.id) {
        return Err(Reason::CapReached { cap: s.cap, open: open.to_vec() });
    }
    Ok(())
}

/// What this home knows of a meeting its artifact says is open, as guild-hall opened it (its
/// `branch:` written), while the home holds no record and no runtime trace of it (`held_here`:
/// see [`Observed::held_here`]): open in another home (or one whose home was lost). Nothing is
/// done for it here; `check` says so, with what a person can do. A file a person writes with
/// `status: open` and no `branch:` is a request to open it here.
pub fn elsewhere(m: &Meeting, record: Option<&MeetingRecord>, held_here: bool) -> Option<String> {
    if record.is_some() || held_here || m.effective_status() != MeetingStatus::Open {
        return None;
    }
    let branch = m.owned.branch.as_deref()?;
    // Said as what this home holds, not as what happened: a home that lost its state cannot
    // know it once opened the meeting.
    Some(format!(
        "meeting {} is open in another home (its branch {branch}); this home ($GUILD_HALL_HOME) holds no record and no runtime trace of it, so nothing is done for it here. Close it where it is open, or set `status: closed` to give it up",
        m.id
    ))
}

/// Why the reconciler refuses a person's move of a meeting from `from` to `to` — the words
/// its refusal writes into `reason:` — or `None` where it carries the move out
/// ([`super::REQUESTS`]). The faces ask it up front, so they refuse with the same words.
pub(crate) fn request_refusal(from: MeetingStatus, to: MeetingStatus) -> Option<&'static str> {
    use MeetingStatus::*;
    match (from, to) {
        (Requested, Open | Declined) | (Open, Closed) => None,
        (Requested, Requested) => Some("it is requested already: accept it (status: open) or decline it (status: declined)"),
        (Requested, Closed) => {
            Some("a requested meeting is accepted (status: open) or declined (status: declined); it cannot be closed before it was opened")
        }
        (Open, _) => Some("an open meeting can only be closed (status: closed)"),
        (Closed, _) => Some("the meeting is closed, and that is final: start a new meeting to continue (guild-hall meeting start)"),
        (Declined, _) => Some("the request was declined, and that is final: write a new request to meet after all"),
    }
}

fn step(s: &Snapshot, o: &Observed, open: &mut Vec<String>) -> Option<Action> {
    use MeetingStatus::*;
    let m = &o.meeting;
    let mut st = Step::new(o, &s.now);
    let asked = m.effective_status();
    let had = o.record.as_ref().map(|r| r.status);
    if elsewhere(m, o.record.as_ref(), o.held_here).is_some() {
        return None;
    }
    match (had, asked) {
        (None, Requested) => {
            st.stamp_created();
            let by = m.requested_by.clone().unwrap_or_else(|| "a person or tool".into());
            st.update.events.push(timeline::created(s.now.as_str(), "requested", Some(&format!("requested by {by}"))));
            st.update.record = Some(st.record.clone());
            st.into_update()
        }
        (None | Some(Requested), Open) => {
            st.stamp_created();
            if had.is_none() {
                st.update.events.push(timeline::created(s.now.as_str(), "open", Some(&Reason::OpenedByPerson.to_string())));
            }
            match admit(s, o, open) {
                Ok(()) => {
                    open.push(m.id.clone());
                    let reason = if had.is_none() { Reason::OpenedByPerson } else { Reason::RequestAccepted };
                    st.go(had, Open, reason);
                    st.remove("reason");
                    st.set("branch", Value::String(crate::activity::names::meeting_branch(&m.id)));
                    Some(Action::Open { update: st.update, branch: crate::activity::names::meeting_branch(&m.id) })
                }
                Err(why) => {
                    st.record.status = Requested;
                    st.refuse(Open, Requested, why.to_string());
                    st.into_update()
                }
            }
        }
        (None, Closed | Declined) => {
            // A file written already final: nothing to carry out, only remembered.
            st.update.events.push(timeline::created(s.now.as_str(), asked.as_str(), None));
            st.update.record = Some(st.record.clone());
            st.into_update()
        }
        (Some(Requested), Requested) => st.into_update(),
        (Some(Requested), Declined) => {
            st.go(had, Declined, Reason::RequestDeclined);
            st.into_update()
        }
        (Some(Requested), Closed) => {
            st.refuse(Closed, Requested, request_refusal(Requested, Closed).unwrap_or_default().into());
            st.into_update()
        }
        (Some(Open), Open) if !o.opened => {
            // Opened in the record but its worktree is not there (a pass that died half-way):
            // opening again is idempotent.
            st.set("branch", Value::String(crate::activity::names::meeting_branch(&m.id)));
            Some(Action::Open { update: st.update, branch: crate::activity::names::meeting_branch(&m.id) })
        }
        (Some(Open), Open) => {
            st.fold_mail(false, s.followup_cap);
            st.into_update()
        }
        (Some(Open), Closed) => {
            st.fold_mail(true, s.followup_cap);
            let notes_written = st.record.notes_written;
            st.go(had, Closed, Reason::ClosedByPerson);
            Some(Action::Close {
                update: st.update,
                branch: crate::activity::names::meeting_branch(&m.id),
                notes_written,
                followups: st.followups,
            })
        }
        (Some(Open), Requested | Declined) => {
            st.refuse(asked, Open, request_refusal(Open, asked).unwrap_or_default().into());
            st.into_update()
        }
        (Some(from @ (Closed | Declined)), to) if to != from => {
            st.refuse(to, from, request_refusal(from, to).unwrap_or_default().into());
            st.into_update()
        }
        (Some(_), _) => st.into_update(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::activity::kind::Action as _;
    use std::path::Path;

    fn meeting(id: &str, status: Option<&str>, extra: &str) -> Meeting {
        let st = status.map(|s| format!("status: {s}\n")).unwrap_or_default();
        let text = format!("---\nworker: scribe\n{st}{extra}---\nHello\n");
        Meeting::parse(Path::new(&format!(".lore/meetings/{id}.md")), &text).expect("valid")
    }

    fn observed(id: &str, file: Option<&str>, rec: Option<MeetingStatus>) -> Observed {
        Observed {
            meeting: meeting(id, file, ""),
            record: rec.map(|status| MeetingRecord { status, created: None, notes_written: false }),
            folded: Folded::default(),
            fold_changed: false,
            followups_before: 0,
            mail: vec![],
            mail_notes: vec![],
            opened: rec == Some(MeetingStatus::Open),
            worker_problem: None,
            held_here: false,
        }
    }

    fn snap(meetings: Vec<Observed>, cap: usize) -> Snapshot {
        Snapshot { meetings, cap, followup_cap: 3, now: "2026-11-23T10:00:00.000Z".into() }
    }

    fn sets<'a>(a: &'a Action, key: &str) -> Option<&'a Value> {
        let (Action::Update { update, .. } | Action::Open { update, .. } | Action::Close { update, .. }) = a;
        update.edits.iter().rev().find_map(|e| match e {
            Edit::Set(k, v) if k == key => Some(v),
            _ => None,
        })
    }

    fn update(a: &Action) -> &Update {
        let (Action::Update { update, .. } | Action::Open { update, .. } | Action::Close { update, .. }) = a;
        update
    }

    /// Every (record, file) pair: what is allowed is carried out, the rest put back with a
    /// reason and a log event.
    #[test]
    fn the_whole_transition_table() {
        use MeetingStatus::*;
        let statuses = [Requested, Open, Closed, Declined];
        for had in statuses {
            for asked in statuses {
                let p = decide(&snap(vec![observed("m", Some(asked.as_str()), Some(had))], 5));
                let allowed = matches!((had, asked), (Requested, Open) | (Requested, Declined) | (Open, Closed));
                if had == asked {
                    assert!(
                        p.is_empty() || matches!(p[0], Action::Update { .. } if sets(&p[0], "status").is_none()),
                        "{had}->{asked}: {p:?}"
                    );
                    continue;
                }
                assert_eq!(p.len(), 1, "{had} -> {asked}");
                let u = update(&p[0]);
                if allowed {
                    assert_eq!(u.record.as_ref().map(|r| r.status), Some(asked), "{had} -> {asked} accepted");
                    assert!(u.events.iter().any(|e| e["kind"] == "status" && e["to"] == asked.as_str()), "{had} -> {asked} logged");
                    match asked {
                        Open => assert!(matches!(p[0], Action::Open { .. })),
                        Closed => assert!(matches!(p[0], Action::Close { .. })),
                        _ => assert!(matches!(p[0], Action::Update { .. })),
                    }
                } else {
                    assert_eq!(sets(&p[0], "status"), Some(&Value::from(had.as_str())), "{had} -> {asked} put back");
                    let reason = sets(&p[0], "reason").and_then(Value::as_str).unwrap_or("");
                    let why = match (had, asked) {
                        (Requested, Closed) => "cannot be closed before it was opened",
                        (Open, _) => "an open meeting can only be closed (status: closed)",
                        (Closed, _) => "the meeting is closed, and that is final: start a new meeting",
                        (Declined, _) => "the request was declined, and that is final: write a new request",
                        _ => unreachable!("{had} -> {asked} is allowed"),
                    };
                    assert!(reason.starts_with(&format!("refused status change {had} -> {asked}: ")), "{had} -> {asked}: {reason}");
                    assert!(reason.contains(why), "{had} -> {asked}: {reason:?} should say {why:?}");
                    assert!(u.events.iter().any(|e| e["kind"] == "refused" && e["reason"] == reason), "{had} -> {asked} logged");
                    assert_eq!(u.record.as_ref().map(|r| r.status), Some(had), "{had} -> {asked}: record unchanged");
                }
            }
        }
    }

    #[test]
    fn a_new_file_is_a_persons_meeting_or_a_request() {
        let p = decide(&snap(vec![observed("m", None, None)], 5));
        assert!(matches!(&p[0], Action::Open { branch, .. } if branch == "claude/meeting/m"), "{p:?}");
        assert_eq!(sets(&p[0], "status"), Some(&Value::from("open")));
        assert!(sets(&p[0], "created").is_some());
        let p = decide(&snap(vec![observed("m", Some("requested"), None)], 5));
        assert!(matches!(&p[0], Action::Update { .. }));
        assert_eq!(update(&p[0]).record.as_ref().map(|r| r.status), Some(MeetingStatus::Requested));
    }

    #[test]
    fn the_cap_counts_open_meetings_only_and_names_them() {
        let mut ms = vec![observed("a", Some("open"), Some(MeetingStatus::Open)), observed("b", Some("open"), Some(MeetingStatus::Open))];
        ms.push(observed("r", Some("requested"), Some(MeetingStatus::Requested)));
        ms.push(observed("d", Some("declined"), Some(MeetingStatus::Declined)));
        ms.push(observed("c", Some("open"), Some(MeetingStatus::Requested)));
        let p = decide(&snap(ms.clone(), 3));
        assert!(p.iter().any(|a| matches!(a, Action::Open { update, .. } if update.id == "c")), "under the cap: {p:?}");
        let p = decide(&snap(ms, 2));
        let c = p.iter().find(|a| a.id() == "c").expect("c planned");
        assert_eq!(sets(c, "status"), Some(&Value::from("requested")));
        let reason = sets(c, "reason").and_then(Value::as_str).unwrap_or("");
        assert!(reason.contains("cap (2)") && reason.contains("a, b"), "{reason}");
    }

    #[test]
    fn the_up_front_refusal_is_the_table_and_the_passs_words() {
        for from in MeetingStatus::ALL {
            for to in MeetingStatus::ALL {
                assert_eq!(request_refusal(from, to).is_none(), crate::meeting::REQUESTS.contains(&(from, to)), "{from} -> {to}");
            }
        }
    }

    #[test]
    fn a_worker_that_cannot_meet_is_refused_with_why() {
        let mut o = observed("m", Some("open"), Some(MeetingStatus::Requested));
        o.worker_problem = Some("worker \"x\" does not have the `meeting` capability".into());
        let p = decide(&snap(vec![o], 5));
        assert!(sets(&p[0], "reason").and_then(Value::as_str).unwrap_or("").contains("meeting` capability"));
    }

    /// `o` with `mail` read in this pass.
    fn deliver(o: &mut Observed, mail: Vec<Mail>) {
        o.followups_before = o.folded.followups;
        for m in &mail {
            o.folded.take(m);
        }
        o.fold_changed = !mail.is_empty();
        o.mail = mail;
    }

    fn mail(seq: u64, body: MailBody) -> Mail {
        Mail { seq, id: format!("id{seq}"), ts: format!("t{seq}"), attempt: 1, body }
    }

    #[test]
    fn mail_is_folded_once_and_followups_requested() {
        let mut o = observed("m", Some("open"), Some(MeetingStatus::Open));
        deliver(
            &mut o,
            vec![
                mail(1, MailBody::Link { path: ".lore/a.md".into() }),
                mail(2, MailBody::Summary { text: "half way".into() }),
                mail(3, MailBody::Followup { reason: "more".into(), references: vec![".lore/a.md".into()] }),
            ],
        );
        let p = decide(&snap(vec![o.clone()], 5));
        let Action::Update { update, followups } = &p[0] else { panic!("{p:?}") };
        assert_eq!(sets(&p[0], "linked_artifacts"), Some(&Value::Sequence(vec![Value::from(".lore/a.md")])));
        assert!(sets(&p[0], "notes").and_then(Value::as_str).unwrap_or("").contains("half way"));
        assert_eq!(update.events.len(), 3);
        assert_eq!(update.fold.as_ref(), Some(&o.folded), "the fold is written with the update");
        assert_eq!(followups[0].id, "m-followup-3");
        // Folded already, and nothing new: nothing more.
        deliver(&mut o, vec![]);
        o.meeting = meeting("m", Some("open"), "linked_artifacts: [.lore/a.md]\nnotes: |\n  Progress so far:\n  - t2 half way\n");
        assert!(decide(&snap(vec![o], 5)).is_empty());
    }

    /// Follow-ups past the cap are not requested; one note says how many, when more come.
    #[test]
    fn followups_past_the_cap_are_counted_not_requested() {
        let mut o = observed("m", Some("open"), Some(MeetingStatus::Open));
        let proposal = |seq| mail(seq, MailBody::Followup { reason: format!("topic {seq}"), references: vec![] });
        deliver(&mut o, (1..=2).map(proposal).collect());
        let p = decide(&snap(vec![o.clone()], 5));
        let Action::Update { followups, .. } = &p[0] else { panic!("{p:?}") };
        assert_eq!(followups.len(), 2);
        deliver(&mut o, (3..=6).map(proposal).collect());
        let p = decide(&snap(vec![o.clone()], 5));
        let Action::Update { update, followups } = &p[0] else { panic!("{p:?}") };
        assert_eq!(followups.iter().map(|f| f.id.as_str()).collect::<Vec<_>>(), vec!["m-followup-3"]);
        let note = update.events.iter().find(|e| e["kind"] == "anomaly").expect("a note");
        assert!(note["text"].as_str().unwrap_or("").starts_with("3 follow-up proposals over the cap of 3"), "{note}");
        assert_eq!(update.events.iter().filter(|e| e["kind"] == "followup").count(), 4, "each is in the log");
    }

    /// Once the frontmatter had no room for the worker's text, notes and links stay in the log.
    #[test]
    fn a_full_frontmatter_leaves_notes_and_links_to_the_log() {
        let mut o = observed("m", Some("open"), Some(MeetingStatus::Open));
        o.meeting = meeting("m", Some("open"), &format!("notes: \"{}\"\n", super::super::notes::LEFT_OUT));
        deliver(&mut o, vec![mail(1, MailBody::Link { path: ".lore/a.md".into() }), mail(2, MailBody::Summary { text: "s".into() })]);
        let p = decide(&snap(vec![o], 5));
        assert_eq!(sets(&p[0], "linked_artifacts"), None);
        assert_eq!(sets(&p[0], "notes"), None);
        assert_eq!(update(&p[0]).events.len(), 2, "the log has them");
    }

    #[test]
    fn a_converged_snapshot_plans_nothing() {
        let ms = vec![
            observed("o", Some("open"), Some(MeetingStatus::Open)),
            observed("r", Some("requested"), Some(MeetingStatus::Requested)),
            observed("c", Some("closed"), Some(MeetingStatus::Closed)),
            observed("d", Some("declined"), Some(MeetingStatus::Declined)),
        ];
        assert!(decide(&snap(ms, 5)).is_empty());
    }

    use proptest::prelude::*;

    fn arb_status() -> impl Strategy<Value = Option<MeetingStatus>> {
        prop::option::of(prop::sample::select(MeetingStatus::ALL.to_vec()))
    }

    /// Up to 8 meetings, each with a file status (or none), a record (or none) and an opened
    /// flag consistent with the record, under a cap of 0 to 4.
    fn arb_snapshot() -> impl Strategy<Value = Snapshot> {
        (prop::collection::vec((arb_status(), arb_status(), any::<bool>()), 0..8), 0usize..5).prop_map(|(ms, cap)| {
            let meetings = ms
                .into_iter()
                .enumerate()
                .map(|(i, (file, rec, problem))| {
                    let mut o = observed(&format!("m{i}"), file.map(|f| f.as_str()), rec);
                    o.worker_problem = (problem && i % 3 == 0).then(|| "no meeting capability".to_string());
                    o
                })
                .collect();
            snap(meetings, cap)
        })
    }

    fn recorded(p: &[Action], o: &Observed) -> Option<MeetingStatus> {
        p.iter()
            .find(|a| a.id() == o.meeting.id)
            .and_then(|a| update(a).record.as_ref().map(|r| r.status))
            .or(o.record.as_ref().map(|r| r.status))
    }

    proptest! {
        #![proptest_config(ProptestConfig { timeout: 5_000, ..ProptestConfig::default() })]

        /// Opening never takes the open meetings past the cap (those already open stay).
        #[test]
        fn never_over_the_cap(s in arb_snapshot()) {
            let p = decide(&s);
            let already = s.meetings.iter().filter(|o| o.record.as_ref().is_some_and(|r| r.status == MeetingStatus::Open)).count();
            let open = s.meetings.iter().filter(|o| recorded(&p, o) == Some(MeetingStatus::Open) || p.iter().any(|a| matches!(a, Action::Open { update, .. } if update.id == o.meeting.id))).count();
            prop_assert!(open <= s.cap.max(already), "{open} open under cap {} ({already} before)", s.cap);
        }

        /// Only requested → open | declined and open → closed are ever accepted; everything
        /// else a file asks is put back to what the record says.
        #[test]
        fn only_the_state_machine_transitions(s in arb_snapshot()) {
            let p = decide(&s);
            for o in &s.meetings {
                let (Some(had), Some(now)) = (o.record.as_ref().map(|r| r.status), recorded(&p, o)) else { continue };
                prop_assert!(had == now || matches!((had, now), (MeetingStatus::Requested, MeetingStatus::Open | MeetingStatus::Declined) | (MeetingStatus::Open, MeetingStatus::Closed)),
                    "{had} -> {now}");
                if let Some(a) = p.iter().find(|a| a.id() == o.meeting.id) {
                    if let Some(put) = sets(a, "status").and_then(Value::as_str).and_then(MeetingStatus::parse) {
                        prop_assert!(put == now || put == o.meeting.effective_status(), "writes {put}, records {now}");
                    }
                }
            }
        }

        /// Planning is deterministic, and once a plan is carried out, planning again finds
        /// nothing to do: the decider converges.
        #[test]
        fn converges(s in arb_snapshot()) {
            let p = decide(&s);
            prop_assert_eq!(serde_json::to_string(&p).ok(), serde_json::to_string(&decide(&s)).ok());
            let mut after = s.clone();
            for o in &mut after.meetings {
                let Some(a) = p.iter().find(|a| a.id() == o.meeting.id) else { continue };
                let u = update(a);
                let st = o.meeting.status.map(|x| format!("status: {x}\n")).unwrap_or_default();
                let text = crate::artifact::write::apply(&format!("---\nworker: scribe\n{st}---\nHello\n"), &u.edits).expect("edits apply");
                o.meeting = Meeting::parse(std::path::Path::new(&format!(".lore/meetings/{}.md", o.meeting.id)), &text).expect("still valid");
                if let Some(r) = &u.record {
                    o.record = Some(r.clone());
                }
                o.opened = o.record.as_ref().is_some_and(|r| r.status == MeetingStatus::Open);
                o.worker_problem = None;
            }
            let again = decide(&after);
            prop_assert!(again.is_empty(), "{again:?}");
        }
    }
}
