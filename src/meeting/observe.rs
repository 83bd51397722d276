//! Observe a project's meetings: their artifacts, records, worktrees and what is new in their
//! mailboxes (read from where the last pass stopped, folded into [`Folded`]), into the
//! decider's [`Snapshot`]. Read-only.

use anyhow::Result;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::decide::{MeetingRecord, Observed, Snapshot};
use super::fold::{self, Folded};
use crate::activity::kind::Name;
use crate::activity::observed::{observe_not_at_rest, AtRest, Store};
use crate::activity::state::StateDir;
use crate::activity::worktree::WorktreeRecord;
use crate::artifact::{Meeting, MeetingStatus, Problem};
use crate::config::{Home, Project};
use crate::files::read_json;
use crate::worker::toolbox::mailbox::{self, Expect, MailBody};
use crate::worker::toolbox::mailbox::{MAIL_PER_PASS, NOTES_PER_PASS};
use crate::worker::Catalog;

/// The meetings snapshot, and the artifacts that could not be read (reported, never acted on).
pub(crate) fn observe(home: &Home, project: &Project, workers: &Catalog, now: &str) -> Result<(Snapshot, Vec<Problem>)> {
    observe_cached(home, project, workers, now, None)
}

/// [`observe`], leaving out the meetings `store` (a watch's) holds at rest, and remembering
/// there those found at rest now ([`at_rest`]).
pub(crate) fn observe_cached(
    home: &Home,
    project: &Project,
    workers: &Catalog,
    now: &str,
    store: Option<&Store<AtRest>>,
) -> Result<(Snapshot, Vec<Problem>)> {
    let cfg = &project.config;
    let snapshot = |meetings| Snapshot { meetings, cap: cfg.meeting_cap, followup_cap: cfg.followups_per_meeting, now: now.to_string() };
    let resting = |s: &Snapshot| {
        let ids = at_rest(s);
        s.meetings.iter().filter(|o| ids.contains(&o.meeting.id)).map(|o| o.meeting.path.clone()).collect()
    };
    observe_not_at_rest(
        store,
        Name::Meeting,
        &project.meetings_dir(),
        |path| judged_from(home, project, path),
        |path| observe_one(home, project, workers, path, cfg.followups_per_meeting),
        snapshot,
        resting,
    )
}

/// The files a meeting at rest is judged from: its artifact (a person's edit) and its record.
fn judged_from(home: &Home, project: &Project, path: &Path) -> Vec<PathBuf> {
    let mut files = vec![path.to_path_buf()];
    // An id that is not one never reaches the store: its artifact is a problem.
    if let Some(id) = path.file_stem().and_then(|s| s.to_str()).filter(|id| crate::artifact::ids::validate_id(id).is_ok()) {
        files.push(StateDir(home.meeting_state(&project.name, id)).record());
    }
    files
}

/// The meetings of `s` at rest: closed or declined as the artifact and this home's own record
/// both say, no worktree of it, nothing new read from its mailbox; and the decider, given them
/// alone, does nothing for them. Until its artifact or its record changes, a pass would do
/// nothing for such a meeting: a watch leaves it out.
pub(crate) fn at_rest(s: &Snapshot) -> BTreeSet<String> {
    let quiet = |o: &&Observed| {
        o.record.as_ref().is_some_and(|r| {
            matches!(r.status, MeetingStatus::Closed | MeetingStatus::Declined) && r.status == o.meeting.effective_status()
        }) && !o.opened
            && !o.fold_changed
            && o.mail.is_empty()
            && o.mail_notes.is_empty()
    };
    let candidates: Vec<Observed> = s.meetings.iter().filter(quiet).cloned().collect();
    if candidates.is_empty() {
        return BTreeSet::new();
    }
    let alone = Snapshot { meetings: candidates, cap: s.cap, followup_cap: s.followup_cap, now: s.now.clone() };
    let actions = super::decide::decide(&alone);
    let acted: BTreeSet<&str> = actions.iter().map(crate::activity::kind::Action::id).collect();
    alone.meetings.iter().map(|o| o.meeting.id.as_str()).filter(|id| !acted.contains(id)).map(str::to_string).collect()
}

/// Read one meeting artifact as it is now (for the CLI and the turn runner).
pub fn load(project: &Project, id: &str) -> Result<Meeting> {
    Ok(crate::artifact::load(&project.meeting_path(id), id, &crate::artifact::Wording::MEETING, Meeting::parse)?)
}

/// guild-hall's record of a meeting; a corrupt record is an error, never "no record".
pub(crate) fn record(home: &Home, project: &Project, id: &str) -> Result<Option<MeetingRecord>> {
    read_json(&StateDir(home.meeting_state(&project.name, id)).record())
}

fn observe_one(
    home: &Home,
    project: &Project,
    workers: &Catalog,
    path: &std::path::Path,
    followup_cap: usize,
) -> Result<Observed, Vec<Problem>> {
    let problem = |msg: String| vec![Problem::new(path, 1, 1, msg)];
    let text = crate::artifact::read_regular(path).map_err(|e| problem(e.to_string()))?;
    let meeting = Meeting::parse(path, &text)?;
    let state = StateDir(home.meeting_state(&project.name, &meeting.id));
    let record: Option<MeetingRecord> = read_json(&state.record()).map_err(|e| {
        problem(format!("its runtime record is corrupt ({e:#}); nothing is done for this meeting until it is repaired or removed"))
    })?;
    let live = record.as_ref().is_some_and(|r| r.status == MeetingStatus::Open);
    let opened = live && matches!(read_json::<WorktreeRecord>(&state.worktree()), Ok(Some(rec)) if rec.path.join(".git").exists());
    let worker_problem = match meeting.effective_status() {
        // Not installed: said with where packages are looked for and how to install it.
        MeetingStatus::Open if !live => {
            workers.not_installed(&meeting.worker).or_else(|| workers.for_meeting(&meeting.worker).err().map(|e| e.to_string()))
        }
        _ => None,
    };
    let mut o = Observed {
        meeting,
        record,
        folded: Folded::default(),
        fold_changed: false,
        followups_before: 0,
        mail: Vec::new(),
        mail_notes: Vec::new(),
        opened,
        worker_problem,
        held_here: false,
    };
    if o.record.is_none() {
        o.held_here = !crate::activity::ids::runtime(home, project, Name::Meeting, &o.meeting.id).is_empty();
    }
    if live {
        // Paths it names are checked against the meeting's own worktree (computed from its id).
        let worktree = home.meeting_worktree(&project.name, &o.meeting.id);
        read_mail(&mut o, &state, &worktree, followup_cap).map_err(|e| problem(format!("its mailbox cannot be read: {e:#}")))?;
    }
    Ok(o)
}

/// Read what is new in the meeting's mailbox since the last pass into `o`: every line folded,
/// the first [`MAIL_PER_PASS`] events (and every follow-up within the cap) kept for the log,
/// a note for each line skipped or path dropped. A fold that cannot be read starts the
/// reading over.
fn read_mail(o: &mut Observed, state: &StateDir, worktree: &std::path::Path, followup_cap: usize) -> Result<()> {
    let fold_path = fold::path(state);
    let before = read_json::<Folded>(&fold_path).unwrap_or_else(|e| {
        tracing::warn!(file = %fold_path.display(), error = %format!("{e:#}"), "the meeting's mailbox fold cannot be read: reading the mailbox again from its start");
        None
    });
    let before = before.unwrap_or_default();
    let mut folded = before.clone();
    let mut cursor = before.cursor.clone();
    let expect = Expect { attempt: None, worktree: worktree.is_dir().then_some(worktree), last: false };
    let (mut mail, mut notes, mut unnoted) = (Vec::new(), Vec::new(), 0u64);
    let mut more: BTreeMap<&'static str, u64> = BTreeMap::new();
    let mut first_line = None;
    let path = state.mailbox();
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    mailbox::read_from(&path, &mut cursor, expect, |line| {
        first_line.get_or_insert(line.number);
        for (i, text) in line.notes.into_iter().enumerate() {
            if notes.len() < NOTES_PER_PASS {
                notes.push((format!("mailbox:{name}:{}:{i}", line.number), text));
            } else {
                unnoted += 1;
            }
        }
        let Some(m) = line.mail else { return };
        folded.take(&m);
        let wanted = matches!(m.body, MailBody::Followup { .. }) && folded.followups <= followup_cap as u64;
        if mail.len() < MAIL_PER_PASS || wanted {
            mail.push(m);
        } else {
            *more.entry(m.body.kind()).or_default() += 1;
        }
    })?;
    let first = first_line.unwrap_or(0);
    notes.extend(mailbox::overflow_notes(&format!("mailbox:{name}:{first}"), &name, unnoted, "", &more, |kinds| {
        format!("more events than a pass records one by one ({MAIL_PER_PASS}): {kinds} were folded without their own log entry; the meeting shows the latest")
    }));
    folded.cursor = cursor;
    o.fold_changed = folded != before;
    o.followups_before = before.followups;
    o.folded = folded;
    o.mail = mail;
    o.mail_notes = notes;
    Ok(())
}
