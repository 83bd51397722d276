//! Observe: read the world into a [`Snapshot`] — artifacts, runtime records, processes,
//! mailboxes, heartbeats, dependency paths, worker packages, the clock. Read-only: it never
//! writes, signals or changes anything.

use std::path::{Path, PathBuf};

use anyhow::Result;
use chrono::{DateTime, Utc};

use crate::activity::kind::Name;
use crate::activity::observed::Reading;
use crate::activity::state::{Record, StateDir};
use crate::artifact::{Commission, Problem, Status};
use crate::config::{Home, Project};
use crate::files::read_json;
use crate::worker::shim;
use crate::worker::toolbox::mailbox::{self, Cursor, Expect, Mail, MailBody};
use crate::worker::toolbox::mailbox::{MAIL_PER_PASS, NOTES_PER_PASS};
use crate::worker::Catalog;

/// Where the current attempt's process stands (shared with wave tasks and verify).
pub(crate) use crate::worker::liveness::Proc;

/// One commission as observed.
#[derive(Debug, Clone)]
pub(crate) struct Observed {
    pub(crate) artifact: Commission,
    pub(crate) record: Option<Record>,
    /// Its recorded attempt as every kind observes one: located by its runner, with its
    /// signs of life while its worker is alive (nothing known before a record of one).
    pub(crate) attempt: crate::worker::observed_attempt::ObservedAttempt,
    /// A runtime file (record, run or exit) that exists but does not parse: what is wrong.
    /// Nothing is done for this commission until it is repaired or removed.
    pub(crate) corrupt: Option<String>,
    /// The attempt's mailbox as folded so far, with this pass's new events taken in; read
    /// only while a worker may still be writing or being folded (`None`: not read).
    pub(crate) folded: Option<Folded>,
    /// `folded` moved on in this pass (it is written back with the pass's update).
    pub(crate) fold_changed: bool,
    /// The new events of this pass, for the timeline (at most [`MAIL_PER_PASS`], and the result).
    pub(crate) mail: Vec<Mail>,
    /// Notes on what the reader skipped or dropped: (timeline key, text).
    pub(crate) mail_notes: Vec<(String, String)>,
    /// The current attempt's usage, read where its mailbox is; `None`: nothing reported (or
    /// not read).
    pub(crate) usage: Option<crate::worker::usage::Attempt>,
    /// With `usage` of an attempt after the first: what the earlier ones used, from their
    /// `usage` timeline events.
    pub(crate) usage_before: Option<crate::worker::usage::Usage>,
    /// With `usage`, or in review: what the current attempt's reviewers used, as their
    /// `usage:<attempt>:review:<n>` timeline events say, by key (part of `usage:` as the
    /// attempt's own run is).
    pub(crate) usage_reviewed: Vec<(String, crate::worker::usage::Usage)>,
    /// The current attempt, over, passed its budget: its shim stopped it (or, for an agent
    /// that reports only at the end, found it past it then).
    pub(crate) overspent: Option<crate::activity::budget::Overspent>,
    /// The rate or usage limit that ended the current attempt, as its shim recorded it, and how
    /// many attempts in a row (this one included) ended so: the backoff's step.
    pub(crate) limited: Option<(crate::worker::limits::Limited, u32)>,
    /// The mailbox could not be read at all (an I/O error, not a regular file, a mode guild-hall
    /// could not give back): the attempt is watched and stopped as any other, and fails once
    /// its worker has ended (a result it may hold cannot be read).
    pub(crate) mail_error: Option<String>,
    pub(crate) worktree_exists: bool,
    /// Dependencies not on the integration branch.
    pub(crate) missing_deps: Vec<String>,
    /// Those of `missing_deps` that are on the person's base branch: committed there, not yet
    /// brought into the integration branch (`guild-hall sync`, or `follow:`).
    pub(crate) deps_on_base: Option<OnBase>,
    /// The artifact says an attempt is under way, but this home holds no record and no runtime
    /// trace of it (`activity::ids::runtime`), or a record of older attempts only: another
    /// home's attempt. Nothing is done for it here.
    pub(crate) elsewhere: Option<Elsewhere>,
    /// The artifact says it is still to run, while the integration branch's copy of it says
    /// it ended there, and this home holds no record of it: settled on the integration branch.
    /// Nothing is done for it here, and the checkout's file is left as it is.
    pub(crate) integrated: Option<Integrated>,
    /// The artifact says an attempt is under way, this home holds no record of it (its record
    /// or state dir was deleted) and a process works in its worktree: left alone until that
    /// process is gone (then it fails, `process lost on restart`, its work secured on its
    /// branch), never cleaned up under a running worker.
    pub(crate) unrecorded_worker: bool,
    /// The first attempt past every one this home and the artifact know of whose branch does
    /// not exist, nor (with no record here) its trailer on the integration branch
    /// (`activity::ids::first_free_attempt`): a dispatch never reuses a branch or a trailer made
    /// elsewhere. Looked up only for a commission that may be dispatched in this pass.
    pub(crate) free_attempt: Option<u32>,
    /// In review: the runs of its reviewer workers over the current attempt started so far
    /// ([`crate::commission::reviewing`]).
    pub(crate) reviews: Vec<crate::worker::reviewer::ReviewerRun>,
}

/// Dependencies of a commission committed on the person's base branch but not on the
/// integration branch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OnBase {
    /// The base branch.
    pub(crate) branch: String,
    pub(crate) deps: Vec<String>,
    /// The project follows it (`follow:`): a pass syncs from it before new work, so one that is
    /// still missing was stopped (a conflict, a checkout in the way).
    pub(crate) followed: bool,
}

/// What is known of a commission its artifact says is dispatched or in progress while this
/// home holds nothing of that attempt (no record and no runtime trace, or a record of older
/// attempts only): an attempt in flight in another home, or
/// one whose home was lost. Only a person can tell which, so it is reported (`status`,
/// `check`), never "repaired" on a guess.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Elsewhere {
    pub(crate) status: Status,
    pub(crate) attempt: u32,
    pub(crate) branch: Option<String>,
    /// Its attempt's trailer is on the integration branch (its work landed there); `None`: not
    /// looked for (a reconcile pass needs only to leave it alone).
    pub(crate) landed: Option<bool>,
    pub(crate) integration: String,
    /// The last attempt this home ran (its record's), older than this one; `None`: this home
    /// holds no record and no runtime trace of the commission.
    pub(crate) ran_here: Option<u32>,
}

impl Elsewhere {
    /// One line: what is known, and what a person can do.
    pub(crate) fn describe(&self) -> String {
        let on = self.branch.as_deref().map(|b| format!(" on {b}")).unwrap_or_default();
        let work = match self.landed {
            Some(true) => format!("; its work is on {} (its trailer is there)", self.integration),
            Some(false) => format!("; its work is not on {} (no trailer of it there)", self.integration),
            None => String::new(),
        };
        // Said as what this home holds, not as what happened: a home that lost its state dir
        // cannot know it once started the attempt.
        let here = match self.ran_here {
            None => "this home ($GUILD_HALL_HOME) holds no record and no runtime trace of it".to_string(),
            Some(n) => format!("this home ($GUILD_HALL_HOME) ran attempts up to {n} only"),
        };
        format!(
            "{} in another home: attempt {}{on}{work}. {here}, so nothing is done for it here. Set `status: pending` to run it again here, or `status: cancelled` to give it up",
            self.status, self.attempt
        )
    }
}

/// A commission the checkout's artifact says is still to run (pending, blocked, no status)
/// while the integration branch's copy of the same commission says it ended there. A completed
/// one counts only with its attempt's trailer on the integration branch, or when its timeline
/// there says it landed nothing.
pub(crate) use crate::activity::integrated::Integrated;

/// The key of reviewer `index`'s `usage` event over `attempt`.
pub(crate) fn review_usage_key(attempt: u32, index: usize) -> String {
    format!("usage:{attempt}:review:{index}")
}

impl Observed {
    /// What `attempt`'s reviewers used, by event key: the runs seen now with their usage, and
    /// those logged on an earlier pass whose run is no longer seen.
    pub(crate) fn reviewers_usage(&self, attempt: u32) -> Vec<(String, crate::worker::usage::Usage)> {
        let mut all: Vec<_> =
            self.reviews.iter().filter_map(|r| Some((review_usage_key(attempt, r.index), r.usage.as_ref()?.usage))).collect();
        for (key, u) in &self.usage_reviewed {
            if !all.iter().any(|(k, _)| k == key) {
                all.push((key.clone(), *u));
            }
        }
        all
    }

    /// An artifact and its record, before anything about its runtime has been looked at.
    pub(crate) fn new(artifact: Commission, record: Option<Record>) -> Observed {
        Observed {
            artifact,
            record,
            attempt: crate::worker::observed_attempt::ObservedAttempt::not_started(),
            corrupt: None,
            folded: None,
            fold_changed: false,
            mail: Vec::new(),
            mail_notes: Vec::new(),
            usage: None,
            usage_before: None,
            usage_reviewed: Vec::new(),
            overspent: None,
            limited: None,
            mail_error: None,
            worktree_exists: false,
            missing_deps: Vec::new(),
            deps_on_base: None,
            elsewhere: None,
            integrated: None,
            unrecorded_worker: false,
            free_attempt: None,
            reviews: Vec::new(),
        }
    }

    pub(crate) fn id(&self) -> &str {
        &self.artifact.id
    }

    /// Take in one new event of the current attempt: folded, and kept for the timeline while
    /// the pass has room for it (the rest are counted in `more`, by kind).
    pub(crate) fn deliver(&mut self, m: Mail, key: &str, more: &mut std::collections::BTreeMap<&'static str, u64>) {
        let folded = self.folded.get_or_insert_with(|| Folded::new(m.attempt));
        let taken = folded.take(&m);
        self.fold_changed = true;
        if let Err(why) = taken {
            self.mail_notes.push((key.to_string(), why.to_string()));
            return;
        }
        if self.mail.len() < MAIL_PER_PASS || matches!(m.body, MailBody::Result { .. }) {
            self.mail.push(m);
        } else {
            *more.entry(m.body.kind()).or_default() += 1;
        }
    }
}

/// The most questions the artifact lists (the latest; all are in the timeline).
pub(crate) const QUESTIONS_SHOWN: usize = 10;

/// What a commission's artifact shows of its attempt's mailbox, and how far that has been
/// read: kept between passes (`events-<n>.folded.json`) so that a pass reads only new bytes.
/// Written together with its position, after the timeline: re-reading from an older position
/// (a crash in between) is harmless, since the timeline drops events it already has by key.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Folded {
    pub(crate) attempt: u32,
    pub(crate) cursor: Cursor,
    /// The latest progress.
    #[serde(default)]
    pub(crate) progress: Option<String>,
    /// The latest questions (at most [`QUESTIONS_SHOWN`]) and how many there were in all.
    #[serde(default)]
    pub(crate) questions: Vec<String>,
    #[serde(default)]
    pub(crate) questions_total: u64,
    /// The attempt's result: the first one (submit_result is accepted once).
    #[serde(default)]
    pub(crate) result: Option<Submitted>,
    /// What the worker reported it used (`report_usage`), summed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) reported: Option<crate::worker::usage::Reading>,
    /// The questions it asked a person (`ask`), numbered, with their replies.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) asks: Vec<crate::commission::questions::Asked>,
    /// The meetings it requested (`request_meeting`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) meetings: Vec<crate::commission::questions::MeetingAsked>,
    /// Meetings the update this fold goes with writes first (decided now; never stored).
    #[serde(skip)]
    pub(crate) write_meetings: Vec<crate::commission::questions::MeetingToWrite>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Submitted {
    pub(crate) summary: String,
    pub(crate) artifacts: Vec<String>,
}

impl Folded {
    pub(crate) fn new(attempt: u32) -> Folded {
        Folded { attempt, ..Folded::default() }
    }

    /// Take one event in; `Err` says why it is ignored.
    pub(crate) fn take(&mut self, m: &Mail) -> Result<(), Ignored> {
        use crate::commission::questions::{Asked, MeetingAsked, TooMany, ASKS_PER_ATTEMPT, MEETINGS_PER_ATTEMPT};
        match &m.body {
            MailBody::Ask { text } => {
                if self.asks.len() >= ASKS_PER_ATTEMPT {
                    return Err(Ignored::TooMany(TooMany::Asks { seq: m.seq }));
                }
                let number = self.asks.len() as u32 + 1;
                self.asks.push(Asked { number, id: m.id.clone(), text: text.clone(), asked: m.ts.clone(), reply: None });
            }
            MailBody::MeetingRequest { reason } => {
                if self.meetings.len() >= MEETINGS_PER_ATTEMPT {
                    return Err(Ignored::TooMany(TooMany::Meetings { seq: m.seq }));
                }
                self.meetings.push(MeetingAsked { seq: m.seq, reason: reason.clone(), done: false });
            }
            MailBody::Progress { text } => self.progress = Some(text.clone()),
            MailBody::Question { text } => {
                self.questions.push(text.clone());
                if self.questions.len() > QUESTIONS_SHOWN {
                    self.questions.remove(0);
                }
                self.questions_total += 1;
            }
            MailBody::Result { summary, artifacts } => {
                if self.result.is_some() {
                    return Err(Ignored::SecondResult(SecondResult { seq: m.seq }));
                }
                self.result = Some(Submitted { summary: summary.clone(), artifacts: artifacts.clone() });
            }
            MailBody::UsageReport(r) => self.reported = Some(crate::worker::usage::Reading::add(self.reported.take(), r)),
            _ => {}
        }
        Ok(())
    }
}

/// Why an event is not taken into the fold ([`Folded::take`]).
#[derive(Debug, thiserror::Error)]
pub(crate) enum Ignored {
    #[error(transparent)]
    SecondResult(SecondResult),
    #[error(transparent)]
    TooMany(crate::commission::questions::TooMany),
}

/// A result submitted after the attempt's first: ignored ([`Folded::take`]).
#[derive(Debug, thiserror::Error)]
#[error("a second result (event {seq}) ignored: submit_result is accepted once per attempt")]
pub(crate) struct SecondResult {
    /// The ignored event's number in the mailbox.
    pub(crate) seq: u64,
}

/// Everything `plan` needs, captured at one instant.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub(crate) now: DateTime<Utc>,
    pub(crate) project: Project,
    pub(crate) max_concurrent: usize,
    /// Running workers of other projects under the same home (a pass sets it from the round's
    /// capacity; 0 as observed alone).
    pub(crate) running_elsewhere: usize,
    /// This project's workers still running for an artifact that is gone (deleted, or not in
    /// the branch checked out): left alone, but they hold capacity.
    pub(crate) running_orphans: usize,
    /// This project's wave tasks whose worker runs: they share the caps with commissions.
    pub(crate) tasks_running: usize,
    /// A daily budget reached (the round's capacity's): new commissions wait, `blocked`.
    pub(crate) daily_budget: Option<crate::activity::budget::DailyReached>,
    /// Live attempts by worker package outside this project's commissions (a pass sets it
    /// from the round's capacity): what a package's `max_concurrent:` counts besides them.
    pub(crate) running_by_package: std::collections::BTreeMap<String, usize>,
    pub(crate) commissions: Vec<Observed>,
    /// The scheduled commissions (templates: never dispatched), with their runs.
    pub(crate) schedules: Vec<ObservedSchedule>,
    pub(crate) problems: Vec<Problem>,
    pub workers: Catalog,
}

/// A scheduled commission as observed: the template, and the ticks of its runs written so far
/// (from their ids, `<template>-YYYYMMDD-HHMM`).
#[derive(Debug, Clone)]
pub(crate) struct ObservedSchedule {
    pub(crate) template: crate::artifact::schedule::Template,
    pub(crate) runs: Vec<DateTime<Utc>>,
    /// The time it is decided at ([`schedule_clock`]).
    pub(crate) now: DateTime<Utc>,
}

/// The variable that sets the time scheduled commissions are decided at (RFC 3339), for tests
/// that cannot wait for a cron's minute; unset, the clock's.
pub(crate) const SCHEDULE_CLOCK_VAR: &str = "GUILD_HALL_SCHEDULE_NOW";

/// The time scheduled commissions are decided at: [`SCHEDULE_CLOCK_VAR`]'s, else `now`.
pub(crate) fn schedule_clock(now: DateTime<Utc>) -> DateTime<Utc> {
    std::env::var(SCHEDULE_CLOCK_VAR).ok().and_then(|v| DateTime::parse_from_rfc3339(&v).ok()).map(|t| t.with_timezone(&Utc)).unwrap_or(now)
}

/// Templates met while observing, parsed (or their problems), in path order once sorted.
type Templates = std::sync::Mutex<Vec<Result<crate::artifact::schedule::Template, Vec<Problem>>>>;

/// The templates met, each with its runs among `paths` (the directory's listing); problems
/// apart.
fn schedules(found: Templates, paths: &[PathBuf], problems: &mut Vec<Problem>) -> Vec<ObservedSchedule> {
    let now = schedule_clock(Utc::now());
    let mut found = found.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
    found.sort_by(|a, b| match (a, b) {
        (Ok(a), Ok(b)) => a.id.cmp(&b.id),
        _ => std::cmp::Ordering::Equal,
    });
    let mut out = Vec::new();
    for t in found {
        match t {
            Ok(template) => {
                let runs = paths
                    .iter()
                    .filter_map(|p| p.file_stem().and_then(|s| s.to_str()))
                    .filter_map(|id| crate::artifact::schedule::tick_of(&template.id, id))
                    .collect();
                out.push(ObservedSchedule { template, runs, now });
            }
            Err(ps) => problems.extend(ps),
        }
    }
    out
}

impl Snapshot {
    pub(crate) fn get(&self, id: &str) -> Option<&Observed> {
        self.commissions.iter().find(|o| o.artifact.id == id)
    }
}

/// How much of the world to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Depth {
    /// Every artifact parsed and validated (`status`, `check`).
    Full,
    /// What a reconcile pass needs: settled artifacts (terminal status by a line scan, no
    /// request, runtime record absent or in agreement, no worktree) are counted, not parsed.
    Reconcile,
}

/// Read a project's whole world.
pub fn observe(home: &Home, project: &Project) -> Result<Snapshot> {
    observe_with(home, project, Depth::Full)
}

/// What a long-running watch keeps between passes of commissions ([`crate::activity::observed`]):
/// artifacts a pass found settled, with the stamps of the artifact and its runtime record then
/// (a later pass that finds the same stamps skips reading both: a settled commission then
/// costs a `stat` or two, and raises no inotify events); and the commission trailers on the
/// integration branch, by its tips (a pass after a merge reads only the new commits).
#[derive(Debug, Default)]
pub(crate) struct Observations {
    pub(crate) settled: crate::activity::observed::Store<Settled>,
    trailers: crate::activity::observed::ByTips,
}

/// What the store says of a commission: settled, nothing for a pass to do; judged with runtime
/// state here or without (a listing of the state dirs said there was none, so the record was
/// not read and is not stamped: a state dir that appears later makes it a miss).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Settled {
    with_state: bool,
}

/// Read the world to the given depth.
pub(crate) fn observe_with(home: &Home, project: &Project, depth: Depth) -> Result<Snapshot> {
    observe_cached(home, project, Catalog::discover(&project.root, &home.workers_dir()), depth, None)
}

/// [`observe_with`], with the worker packages already read, remembering settled artifacts
/// across calls in `store` (a watch's).
pub(crate) fn observe_cached(
    home: &Home,
    project: &Project,
    workers: Catalog,
    depth: Depth,
    store: Option<&Observations>,
) -> Result<Snapshot> {
    let now = Utc::now();
    let global = home.load_config()?;
    let mut problems = workers.problems.clone();
    let tree = Trees::of(project)?;
    let boot = shim::boot_id();
    let (paths, clashes) = crate::artifact::without_case_clashes(crate::artifact::paths(&project.commissions_dir())?);
    problems.extend(clashes);
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1).clamp(1, 8);
    let chunk = paths.len().div_ceil(threads).max(256);
    // Whether another home's attempt landed is for people (`status`, `check`), not for a pass.
    let trailers = Trailers::new(depth == Depth::Full, store.map(|s| &s.trailers));
    // Which commissions have runtime state here, from one listing: a settled artifact without
    // any (a fresh home, a clone) is then judged without a failed open of its record.
    let stated = match depth {
        Depth::Full => Default::default(),
        _ => with_state(home, project),
    };
    // Artifacts are read relative to their directory, opened once.
    let dir = std::fs::File::open(project.commissions_dir()).ok();
    let templates = Templates::default();
    let reading = Reading::new(store.map(|s| &s.settled), Name::Commission);
    // Which commissions have a worktree, from one listing: what the store holds of one is taken
    // only without (asked of every settled commission it holds, each pass).
    let worktrees = store.and_then(|_| with_worktree(&home.worktrees_dir(&project.name)));
    let observed = observe_parallel(home, project, &paths, chunk, &tree, &boot, &trailers, &templates, |p| {
        depth == Depth::Full || !settled(home, project, p, dir.as_ref(), &reading, &stated, &worktrees)
    });
    reading.finish();
    let schedules = schedules(templates, &paths, &mut problems);
    let mut commissions = Vec::with_capacity(observed.len());
    for o in observed {
        match o {
            Ok(o) => {
                if let Some(why) = &o.corrupt {
                    let msg = format!("its runtime state is corrupt, so nothing is done for it until that is repaired or removed: {why}");
                    problems.push(Problem::new(&o.artifact.path, 1, 1, msg));
                }
                if let Some(why) = &o.mail_error {
                    let msg = format!("its mailbox cannot be read ({why}): while its worker runs it is watched and can be stopped; once the worker has ended, the attempt fails");
                    problems.push(Problem::new(&o.artifact.path, 1, 1, msg));
                }
                commissions.push(o)
            }
            Err(p) => problems.extend(p),
        }
    }
    // The slots others hold are the round's capacity's (`activity::capacity`), which the
    // reconcile pass observes once and sets here.
    Ok(Snapshot {
        now,
        running_orphans: 0,
        running_elsewhere: 0,
        tasks_running: 0,
        daily_budget: None,
        running_by_package: Default::default(),
        max_concurrent: global.max_concurrent_commissions,
        project: project.clone(),
        commissions,
        schedules,
        problems,
        workers,
    })
}

/// Every commission artifact `wanted` accepts (by path), fully observed and handed to `each`
/// in path order, a batch at a time (parsed in parallel): memory stays bounded whatever the
/// number of artifacts, for `status`.
pub(crate) fn observe_each(
    home: &Home,
    project: &Project,
    wanted: impl Fn(&Path) -> bool,
    each: impl FnMut(Result<Observed, Vec<Problem>>),
) -> Result<Vec<(Option<ObservedSchedule>, Vec<Problem>)>> {
    let (paths, clashes) = crate::artifact::without_case_clashes(crate::artifact::paths(&project.commissions_dir())?);
    let paths: Vec<PathBuf> = paths.into_iter().filter(|p| wanted(p)).collect();
    let mut each = each;
    // The files of a clash are said whatever `wanted` asked for: none of them is shown.
    if !clashes.is_empty() {
        each(Err(clashes));
    }
    observe_paths(home, project, &paths, each)
}

/// [`observe_each`] over these artifacts' paths only, without listing the directory (a face
/// that knows which files changed reads those).
pub(crate) fn observe_paths(
    home: &Home,
    project: &Project,
    paths: &[PathBuf],
    mut each: impl FnMut(Result<Observed, Vec<Problem>>),
) -> Result<Vec<(Option<ObservedSchedule>, Vec<Problem>)>> {
    let tree = Trees::of(project)?;
    let boot = shim::boot_id();
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1).clamp(1, 8);
    const PER_THREAD: usize = 128;
    let trailers = Trailers::new(true, None);
    let templates = Templates::default();
    for batch in paths.chunks(threads * PER_THREAD) {
        observe_parallel(home, project, batch, PER_THREAD, &tree, &boot, &trailers, &templates, |_| true).into_iter().for_each(&mut each);
    }
    // The scheduled commissions met, each with its runs (from the whole directory), or its
    // problems: the caller shows them apart.
    let listing = crate::artifact::paths(&project.commissions_dir())?;
    let mut problems = Vec::new();
    let mut out: Vec<_> = schedules(templates, &listing, &mut problems).into_iter().map(|s| (Some(s), Vec::new())).collect();
    if !problems.is_empty() {
        out.push((None, problems));
    }
    Ok(out)
}

/// The trailers on the integration branch, each set read at most once per observation and only
/// when a commission asks: `here`, the local branch's ([`crate::activity::merge::trailers_on`]:
/// whether work landed there); `everywhere`, its commission trailers with every remote's copy
/// ([`crate::activity::ids::integration_trailers`]: the attempts a dispatch must not reuse).
#[derive(Default)]
struct Trailers<'a> {
    here: std::sync::OnceLock<std::collections::HashSet<String>>,
    everywhere: std::sync::OnceLock<std::collections::HashSet<String>>,
    /// The integration branch's copies to compare artifacts still to run with
    /// ([`crate::activity::integrated::tips`]).
    copies: std::sync::OnceLock<Vec<(String, git2::Oid)>>,
    /// Whether another home's attempt landed is looked for (for people: `status`, `check`).
    for_elsewhere: bool,
    /// `everywhere` as a watch's earlier passes read it, by the tips it was read from.
    memo: Option<&'a crate::activity::observed::ByTips>,
}

impl<'a> Trailers<'a> {
    fn new(for_elsewhere: bool, memo: Option<&'a crate::activity::observed::ByTips>) -> Trailers<'a> {
        Trailers { for_elsewhere, memo, ..Trailers::default() }
    }

    /// Unreadable: nothing found (the work is then taken as not there).
    fn here(&self, project: &Project) -> &std::collections::HashSet<String> {
        self.here.get_or_init(|| {
            crate::activity::git::open(&project.root)
                .ok()
                .and_then(|repo| crate::activity::merge::trailers_on(&repo, &project.config.integration_branch).ok())
                .unwrap_or_default()
        })
    }

    fn copies(&self, repo: &git2::Repository, project: &Project) -> &[(String, git2::Oid)] {
        self.copies.get_or_init(|| crate::activity::integrated::tips(project, repo))
    }

    fn everywhere(&self, repo: &git2::Repository, project: &Project) -> &std::collections::HashSet<String> {
        self.everywhere.get_or_init(|| {
            let read = match self.memo {
                Some(memo) => {
                    let tips = crate::activity::ids::integration_tips(repo, &project.config.integration_branch);
                    memo.lines(repo, &tips, |tips, hide| crate::activity::ids::commission_trailers_between(repo, tips, hide))
                }
                None => crate::activity::ids::integration_trailers(repo, &project.config.integration_branch),
            };
            read.unwrap_or_else(|e| {
                tracing::warn!(error = %e, "the integration branch's trailers cannot be read: new attempts skip branches only");
                Default::default()
            })
        })
    }
}

/// The artifacts at `paths` that `keep` accepts, observed `chunk` to a thread, in path order.
/// Parsing frontmatter dominates observe, so the artifacts are spread over the cores.
/// `trailers`: the integration branch's, read once when a commission asks.
/// The trees dependencies are looked for in: the integration branch's (where a worktree
/// starts), and the person's base branch's (to say when one is there only).
struct Trees {
    integration: Option<git2::Oid>,
    base: Option<(String, git2::Oid)>,
}

impl Trees {
    fn of(project: &Project) -> Result<Trees> {
        Ok(Trees { integration: crate::activity::integrated::tree(project)?, base: crate::activity::integrated::base_tree(project) })
    }
}

#[allow(clippy::too_many_arguments)]
fn observe_parallel(
    home: &Home,
    project: &Project,
    paths: &[PathBuf],
    chunk: usize,
    trees: &Trees,
    boot: &str,
    trailers: &Trailers,
    templates: &Templates,
    keep: impl Fn(&Path) -> bool + Sync,
) -> Vec<Result<Observed, Vec<Problem>>> {
    std::thread::scope(|scope| {
        let handles: Vec<_> = paths
            .chunks(chunk.max(1))
            .map(|part| {
                let keep = &keep;
                scope.spawn(move || {
                    // git2 trees are not Sync: each thread looks the tree up in its own handle.
                    let repo = git2::Repository::open(&project.root).ok();
                    let find = |id: git2::Oid| repo.as_ref().and_then(|r| r.find_tree(id).ok());
                    let tree = trees.integration.and_then(find);
                    let base = trees.base.as_ref().and_then(|(name, id)| Some((name.as_str(), find(*id)?)));
                    part.iter()
                        .filter(|p| keep(p))
                        .filter_map(|p| {
                            observe_one(home, project, p, repo.as_ref(), tree.as_ref(), base.as_ref(), boot, trailers, templates)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap_or_default()).collect()
    })
}

/// The ids of the commissions that have a runtime state dir in this home: an empty set if the
/// project has no state dir yet; `None` if it cannot be listed whole (then every artifact's
/// record is looked for, as before).
fn with_state(home: &Home, project: &Project) -> Option<std::collections::HashSet<std::ffi::OsString>> {
    let entries = std::fs::read_dir(home.commissions_state(&project.name));
    match entries {
        // An entry that cannot be read might be any id's: then nothing is known.
        Ok(entries) => entries.map(|e| e.ok().map(|e| e.file_name())).collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some(Default::default()),
        Err(_) => None,
    }
}

/// The ids of the commissions that have something at their worktree's path, from one listing of
/// the project's worktrees `dir`: an empty set if there is no such directory; `None` if it
/// cannot be listed whole (then each commission's is looked at).
fn with_worktree(dir: &Path) -> Option<std::collections::HashSet<String>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Some(Default::default()),
        Err(_) => return None,
    };
    let mut ids = std::collections::HashSet::new();
    for entry in entries {
        // An entry that cannot be read might be any id's: then nothing is known.
        let name = entry.ok()?.file_name();
        // A name that is not UTF-8 is no commission's (ids are ASCII).
        if let Some(id) = name.to_str().and_then(|n| n.strip_prefix(crate::config::worktree_prefix::COMMISSION)) {
            ids.insert(id.to_string());
        }
    }
    Some(ids)
}

/// [`is_settled`], read through the watch's store (`reading`): answered from it when neither
/// file changed since it last said yes. `dir`: the artifact's directory, open; `stated`: the
/// ids with runtime state ([`with_state`]), if known; `worktrees`: the ids with a worktree
/// ([`with_worktree`]), if known.
fn settled(
    home: &Home,
    project: &Project,
    path: &Path,
    dir: Option<&std::fs::File>,
    reading: &Reading<'_, Settled>,
    stated: &Option<std::collections::HashSet<std::ffi::OsString>>,
    worktrees: &Option<std::collections::HashSet<String>>,
) -> bool {
    let id = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    let has_state = stated.as_ref().is_none_or(|ids| ids.contains(std::ffi::OsStr::new(id)));
    let judged = Settled { with_state: has_state };
    // The one extra check of a held judgement: the worktree, not under a watched directory nor
    // part of the stamps, is looked for every pass.
    let has_worktree = || match worktrees {
        Some(ids) => ids.contains(id),
        None => home.worktree(&project.name, id).exists(),
    };
    let usable = |held: &Settled| *held == judged && !has_worktree();
    let files = || {
        let record = has_state.then(|| StateDir(home.commission_state(&project.name, id)).record());
        std::iter::once(path.to_path_buf()).chain(record)
    };
    // Unlike a plan's or a meeting's rest (once decided), settled is judged here, before the
    // artifact is parsed (a line scan), so it is read through the store in one step.
    reading.read_through(path, usable, files, || is_settled(home, project, path, dir, has_state).then_some(judged)).is_some()
}

/// Whether dependency `dep` names a commission of the project (its id, or its file
/// `.lore/commissions/<id>.md`) that is completed or abandoned: as in Guild Hall, either
/// satisfies a dependency on it. Read by its `status:` line, as [`is_settled`] reads it.
fn commission_done_or_abandoned(project: &Project, dep: &str) -> bool {
    let id = dep.strip_prefix(".lore/commissions/").and_then(|f| f.strip_suffix(".md")).unwrap_or(dep);
    if crate::artifact::ids::validate_id(id).is_err() {
        return false;
    }
    let Ok(text) = crate::artifact::read_regular(&project.commission_path(id)) else { return false };
    let Ok(split) = crate::artifact::frontmatter::split(&text) else { return false };
    split.yaml.lines().filter_map(|l| l.strip_prefix("status:")).any(|v| {
        let v = v.split(" #").next().unwrap_or("").trim().trim_matches(|c| c == '"' || c == '\'');
        matches!(Status::parse(v), Some(Status::Completed | Status::Abandoned))
    })
}

/// A settled artifact needs nothing from a reconcile pass. Decided without parsing YAML: a
/// top-level `status:` line with a terminal value, no `desired:` line, and runtime state (if
/// any) that agrees (its own last status write seen to have landed) and has no worktree; with
/// none, an `attempt:` line (run somewhere: one written already over and never run is met
/// once, to log its `created` event). Anything unusual answers false (parse it fully).
/// `dir`: `path`'s directory, open, to read it by name; `has_state`: whether the commission may
/// have runtime state here (false only when a listing of the state dirs just showed none).
fn is_settled(home: &Home, project: &Project, path: &Path, dir: Option<&std::fs::File>, has_state: bool) -> bool {
    let text = match (dir, path.file_name()) {
        (Some(dir), Some(name)) => crate::artifact::read_regular_in(dir, name),
        _ => crate::artifact::read_regular(path),
    };
    let Ok(text) = text else { return false };
    let Ok(split) = crate::artifact::frontmatter::split(&text) else { return false };
    let mut status = None;
    let mut ran = false;
    for line in split.yaml.lines() {
        if line.starts_with("desired:") || line.starts_with("answer:") {
            return false;
        }
        ran |= line.starts_with("attempt:");
        if let Some(v) = line.strip_prefix("status:") {
            let v = v.split(" #").next().unwrap_or("").trim().trim_matches(|c| c == '"' || c == '\'');
            match (status, Status::parse(v)) {
                (None, Some(s)) if s.is_terminal() => status = Some(s),
                _ => return false,
            }
        }
    }
    let (Some(status), Some(id)) = (status, path.file_stem().and_then(|s| s.to_str())) else { return false };
    if crate::artifact::ids::validate_id(id).is_err() {
        return false;
    }
    if !has_state {
        return ran;
    }
    match read_json::<Record>(&StateDir(home.commission_state(&project.name, id)).record()) {
        Ok(None) => ran,
        Ok(Some(r)) => r.status == status && r.prev.is_none() && r.stopping.is_none() && !home.worktree(&project.name, id).exists(),
        Err(_) => false,
    }
}

/// One artifact and its runtime state.
#[allow(clippy::too_many_arguments)]
fn observe_one(
    home: &Home,
    project: &Project,
    path: &Path,
    repo: Option<&git2::Repository>,
    integration_tree: Option<&git2::Tree<'_>>,
    base: Option<&(&str, git2::Tree<'_>)>,
    boot: &str,
    trailers: &Trailers,
    templates: &Templates,
) -> Option<Result<Observed, Vec<Problem>>> {
    let text = match crate::artifact::read_regular(path) {
        Ok(t) => t,
        Err(e) => return Some(Err(vec![Problem::new(path, 1, 1, e.to_string())])),
    };
    // A scheduled commission is a template, never a commission to run: kept apart.
    if crate::artifact::schedule::is_template(&text) {
        let t = crate::artifact::schedule::Template::parse(path, &text);
        templates.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(t);
        return None;
    }
    Some(observe_artifact(home, project, path, &text, integration_tree, base, boot, trailers, repo))
}

/// [`observe_one`] for a commission's artifact, its `text` read.
#[allow(clippy::too_many_arguments)]
fn observe_artifact(
    home: &Home,
    project: &Project,
    path: &Path,
    text: &str,
    integration_tree: Option<&git2::Tree<'_>>,
    base: Option<&(&str, git2::Tree<'_>)>,
    boot: &str,
    trailers: &Trailers,
    repo: Option<&git2::Repository>,
) -> Result<Observed, Vec<Problem>> {
    let text = text.to_string();
    let artifact = Commission::parse(path, &text)?;
    let state = StateDir(home.commission_state(&project.name, &artifact.id));
    // In Guild Hall's dialect, our keys that have no place in its file are in the state dir.
    let (artifact, kept_unreadable) = match &artifact.dialect {
        None => (artifact, None),
        Some(_) => match read_json::<serde_yaml_ng::Mapping>(&state.0.join(crate::artifact::dialect::KEPT_FILE)) {
            Ok(kept) => (artifact.with_kept(&kept.unwrap_or_default()), None),
            Err(e) => (artifact, Some(format!("{e:#}"))),
        },
    };
    let (record, corrupt) = match read_json::<Record>(&state.record()) {
        Ok(r) if kept_unreadable.is_none() => (r, None),
        Ok(_) => (None, kept_unreadable),
        Err(e) => (None, Some(format!("{e:#}"))),
    };
    let mut obs = Observed::new(artifact, record);
    if corrupt.is_some() {
        obs.corrupt = corrupt;
        return Ok(obs);
    }
    if matches!(obs.artifact.status, None | Some(Status::Pending | Status::Blocked | Status::Draft)) {
        observe_dependencies(project, &mut obs, integration_tree, base);
    }
    if obs.artifact.status.is_some_and(Status::is_active) {
        let id = &obs.artifact.id;
        let away = match &obs.record {
            None => crate::activity::ids::runtime(home, project, Name::Commission, id).is_empty(),
            // An attempt after every one this home ran; unless this home's own update of it
            // waits to be settled (a pass killed between the artifact and the record).
            Some(r) => {
                obs.artifact.attempt() > r.attempt && !crate::activity::apply::intent_path(home, project, Name::Commission, id).exists()
            }
        };
        if away {
            obs.elsewhere =
                Some(elsewhere(project, &obs.artifact, obs.record.as_ref().map(|r| r.attempt), trailers.for_elsewhere.then_some(trailers)));
        } else if obs.record.is_none() {
            // This home's attempt, with its record (and maybe its whole state dir) gone: no
            // run record to watch its worker by, but one working in its worktree is found.
            let worktree = home.worktree(&project.name, id);
            obs.worktree_exists = worktree.exists();
            // (Or a job of it elsewhere, on a node whose processes are not ours to see.)
            obs.unrecorded_worker = obs.worktree_exists && crate::worker::runner::works_unrecorded(home, &project.name, id, &worktree);
        }
    }
    let to_run = matches!(obs.artifact.status, None | Some(Status::Pending | Status::Blocked));
    if let (true, Some(repo)) = (to_run && obs.record.is_none(), repo) {
        obs.integrated = trailers.copies(repo, project).iter().find_map(|(name, tip)| {
            let tree = repo.find_commit(*tip).ok()?.tree().ok()?;
            integrated(project, path, &obs.artifact, repo, &tree, name, trailers)
        });
    }
    // One waiting on missing dependencies is not dispatched in this pass: no history walk for
    // it on every pass while it waits.
    let may_dispatch = (to_run || obs.artifact.desired == Some(crate::artifact::Desired::Dispatched))
        && obs.integrated.is_none()
        && obs.missing_deps.is_empty();
    if let Some(repo) = repo.filter(|_| may_dispatch) {
        let known = obs.record.as_ref().map_or(0, |r| r.attempt).max(obs.artifact.attempt());
        // Attempts made elsewhere may have left only their trailers: looked for where an
        // attempt may have been made without this home knowing — no record here, or one that
        // ran before (a re-dispatch: another home may have run later ones) — not for new work
        // queued here, which would walk the history on every pass while it waits.
        let landed = obs.record.as_ref().is_none_or(|r| r.attempt > 0).then(|| trailers.everywhere(repo, project));
        obs.free_attempt = Some(crate::activity::ids::first_free_attempt(repo, &obs.artifact.id, known, landed));
    }
    if let Some(rec) = obs.record.clone().filter(|r| r.attempt > 0) {
        observe_attempt_here(home, project, &mut obs, &rec, &state, boot);
    }
    Ok(obs)
}

/// A commission still to run: which of its dependencies are missing (not on the integration
/// branch, nor a commission completed or abandoned), and which of those are on the base branch.
fn observe_dependencies(
    project: &Project,
    obs: &mut Observed,
    integration_tree: Option<&git2::Tree<'_>>,
    base: Option<&(&str, git2::Tree<'_>)>,
) {
    obs.missing_deps = obs
        .artifact
        .dependencies
        .iter()
        // A dependency is met when it is on the integration branch: that is where the
        // dependent's worktree starts, so a file only in the person's working tree would
        // not be there for its worker.
        .filter(|d| integration_tree.is_none_or(|t| t.get_path(Path::new(d)).is_err()))
        // One naming a commission (Guild Hall's way: its id, or its file) is met once that
        // commission is completed or abandoned.
        .filter(|d| !commission_done_or_abandoned(project, d))
        .cloned()
        .collect::<Vec<_>>();
    if let Some((name, tree)) = base {
        let there: Vec<String> = obs.missing_deps.iter().filter(|d| tree.get_path(Path::new(d)).is_ok()).cloned().collect();
        if !there.is_empty() {
            obs.deps_on_base =
                Some(OnBase { branch: name.to_string(), deps: there, followed: project.config.follow.as_deref() == Some(*name) });
        }
    }
}

/// This home's attempt `rec.attempt` of a commission: its processes, worktree, reviewers, mail
/// and usage, read from its runtime dir `state`.
fn observe_attempt_here(home: &Home, project: &Project, obs: &mut Observed, rec: &Record, state: &StateDir, boot: &str) {
    observe_runtime(obs, rec, state, boot);
    obs.worktree_exists = home.worktree(&project.name, &obs.artifact.id).exists();
    if rec.status == Status::Review {
        obs.reviews = crate::commission::reviewing::observe(home, project, &obs.artifact.id, rec.attempt, boot);
    }
    // In review, the attempt's folded result is what an approval merges with.
    let live = rec.status.is_active() || rec.status == Status::Review || obs.worktree_exists || obs.attempt.under_way();
    if live {
        let last = obs.attempt.over() || obs.attempt.untaken();
        let worktree = home.worktree(&project.name, &obs.artifact.id);
        read_mail(obs, state, rec.attempt, &worktree, last);
        // Over once its exit is recorded, or its process is gone without one (lost).
        let over = obs.attempt.exit().is_some_and(|x| x.attempt == rec.attempt) || obs.attempt.over();
        let reported = obs.folded.as_ref().filter(|f| f.attempt == rec.attempt).and_then(|f| f.reported.as_ref());
        obs.usage = crate::worker::usage::observe(home, state, rec.attempt, over, reported, &obs.artifact.worker);
        if over {
            obs.overspent = crate::worker::budget::recorded(state, rec.attempt);
            obs.limited = crate::worker::limits::observed(state, rec.attempt);
        }
        // (In review, its reviewers' usage is added to them.)
        if obs.usage.is_some() || rec.status == Status::Review {
            let events = crate::activity::timeline::read(&crate::activity::timeline::path_for(&obs.artifact.path)).unwrap_or_default();
            if rec.attempt > 1 {
                let before = |e: &serde_json::Value| e["attempt"].as_u64().is_some_and(|a| a < u64::from(rec.attempt));
                obs.usage_before = crate::worker::usage::summed(&events, before);
            }
            obs.usage_reviewed = crate::worker::usage::keyed(&events, &format!("usage:{}:review:", rec.attempt));
        }
    }
}

/// What git says of an attempt the artifact claims is under way in another home (whether it
/// landed: only with `trailers`).
fn elsewhere(project: &Project, artifact: &Commission, ran_here: Option<u32>, trailers: Option<&Trailers>) -> Elsewhere {
    let integration = project.config.integration_branch.clone();
    let attempt = artifact.attempt();
    let trailer = crate::activity::names::commission_trailer(&artifact.id, attempt);
    let landed = trailers.map(|t| t.here(project).contains(&trailer));
    Elsewhere {
        status: artifact.status.unwrap_or(Status::Dispatched),
        attempt,
        branch: artifact.owned.branch.clone(),
        landed,
        integration,
        ran_here,
    }
}

/// Whether the integration branch's copy of `artifact` (the same commission: the same
/// `created:`, or with none, the same body) says it ended there ([`Integrated`]). One blob
/// read from the tree observe already holds; the trailers only for a completed one.
fn integrated(
    project: &Project,
    path: &Path,
    artifact: &Commission,
    repo: &git2::Repository,
    tree: &git2::Tree<'_>,
    on: &str,
    trailers: &Trailers,
) -> Option<Integrated> {
    let copy = |p: &Path| crate::activity::integrated::copy(project, p, repo, tree);
    let theirs = Commission::parse(path, &copy(path)?).ok()?;
    let status = theirs.status.filter(|s| s.is_terminal())?;
    let same = match artifact.created() {
        Some(created) => theirs.created() == Some(created),
        None => theirs.body == artifact.body,
    };
    if !same {
        return None;
    }
    let attempt = theirs.attempt();
    if status == Status::Completed
        && !trailers.everywhere(repo, project).contains(&crate::activity::names::commission_trailer(&artifact.id, attempt))
    {
        // No trailer: it counts only if it landed nothing (its timeline there says so).
        let timeline = copy(&crate::activity::timeline::path_for(path))?;
        let key = format!("merge:{attempt}");
        let nothing = timeline
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .any(|e| e["kind"] == "merge" && e["key"] == key.as_str() && e["commit"] == crate::activity::timeline::NOTHING_TO_MERGE);
        if !nothing {
            return None;
        }
    }
    Some(Integrated {
        kind: Name::Commission,
        id: artifact.id.clone(),
        here: artifact.status.unwrap_or(Status::Pending).as_str(),
        status: status.as_str(),
        attempt: Some(attempt),
        integration: on.to_string(),
    })
}

/// Read what is new in the attempt's mailbox since the last pass, into `obs`: every line
/// folded, the first [`MAIL_PER_PASS`] events kept for the timeline, and a note for each line
/// skipped or path dropped. A position or digest that cannot be read starts the reading over.
fn read_mail(obs: &mut Observed, state: &StateDir, attempt: u32, worktree: &Path, last: bool) {
    let path = mailbox::attempt_mailbox(state, attempt);
    // An attempt an older guild-hall started shares one mailbox with the earlier attempts.
    let own = path == mailbox::attempt_file(state, attempt);
    let fold_path = mailbox::folded_file(state, attempt);
    let before = match read_json::<Folded>(&fold_path) {
        Ok(Some(f)) if f.attempt == attempt => f,
        Ok(_) => Folded::new(attempt),
        Err(e) => {
            tracing::warn!(file = %fold_path.display(), error = %format!("{e:#}"), "the mailbox's read position cannot be read: reading the mailbox again from its start");
            Folded::new(attempt)
        }
    };
    let mut cursor = before.cursor.clone();
    obs.folded = Some(before.clone());
    let expect = Expect { attempt: own.then_some(attempt), worktree: worktree.is_dir().then_some(worktree), last };
    let mut more: std::collections::BTreeMap<&'static str, u64> = Default::default();
    let (mut notes, mut unnoted) = (Vec::new(), 0u64);
    let mut first_line = None;
    let file = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let read = mailbox::read_from(&path, &mut cursor, expect, |line| {
        first_line.get_or_insert(line.number);
        for (i, text) in line.notes.into_iter().enumerate() {
            if notes.len() < NOTES_PER_PASS {
                notes.push((format!("mailbox:{attempt}:{file}:{}:{i}", line.number), text));
            } else {
                unnoted += 1;
            }
        }
        if let Some(m) = line.mail.filter(|m| m.attempt == attempt) {
            let key = format!("mailbox:{attempt}:{file}:{}:take", line.number);
            obs.deliver(m, &key, &mut more);
        }
    });
    if let Err(e) = read {
        // Nothing of a read that failed half way is used: the next pass reads it again.
        obs.mail_error = Some(format!("{e:#}"));
        obs.folded = Some(before);
        obs.fold_changed = false;
        obs.mail.clear();
        obs.mail_notes.clear();
        return;
    }
    let name = file;
    let first = first_line.unwrap_or(0);
    if let Some(f) = obs.folded.as_mut() {
        f.cursor = cursor;
    }
    obs.fold_changed = obs.folded.as_ref() != Some(&before);
    obs.mail_notes.extend(notes);
    obs.mail_notes.extend(mailbox::overflow_notes(&format!("mailbox:{attempt}:{name}:{first}"), &name, unnoted, " (see the log)", &more, |kinds| {
        format!("more events than a pass records one by one ({MAIL_PER_PASS}): {kinds} were folded without their own timeline entry; the artifact shows the latest")
    }));
}

fn observe_runtime(obs: &mut Observed, rec: &Record, state: &StateDir, boot: &str) {
    match crate::worker::observed_attempt::observe(state, rec.attempt, boot) {
        Ok(attempt) => obs.attempt = attempt,
        // Unreadable, implausible, or naming a process that is not the attempt's shim:
        // reported, and nothing is signalled by it.
        Err(why) => obs.corrupt = Some(why.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_commissions_with_a_worktree_from_one_listing() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("worktrees");
        assert_eq!(with_worktree(&dir), Some(Default::default()), "no worktrees yet: none has one");
        for name in ["commission-a", "task-p-exec-wave-1-t", "meeting-m", "verify-p"] {
            std::fs::create_dir_all(dir.join(name)).unwrap();
        }
        // Anything at the path counts (the look it replaces, `exists()`, would take a file too).
        std::fs::write(dir.join("commission-b"), "").unwrap();
        let ids = with_worktree(&dir).unwrap();
        assert_eq!(ids, ["a", "b"].into_iter().map(String::from).collect(), "only commissions', by id");
        let not_a_dir = tmp.path().join("file");
        std::fs::write(&not_a_dir, "").unwrap();
        assert_eq!(with_worktree(&not_a_dir), None, "cannot be listed: each is looked at");
    }
}
