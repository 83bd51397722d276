//! `notify:`: the person's command, run with one JSON event on its stdin
//! (`{"event", "project", "kind", "id", "title", "text"}`, and `"from"` for a meeting request)
//! whenever a pass has written something that needs a person. What needs one is read from the
//! timeline events the pass wrote ([`needs_a_person`], the one table): a status moved to
//! `failed` or `review`, a wave task failed, a meeting created as `requested`.
//!
//! Once, across restarts and crashes: the timelines are the durable record of what happened
//! (written first by every update), and the home's state keeps, per project, how far each
//! timeline was read and the keys of the events already derived (`notify/read.json`). After
//! every round, and once before the first (what a killed pass wrote), the timelines are read
//! from there; each event that needs a person is written to the outbox (`notify/outbox/`, one
//! file named by its timeline and key, so writing it again is harmless) *before* the read
//! position moves past it, then a supervisor is started for it. The supervisor claims its file
//! by renaming it into `notify/sending/` before it runs the command: of two supervisors for one
//! event (one started by a pass that was then killed, one by the next pass, which starts one
//! for every file still in the outbox) only one claims it. So a reconciler killed at any
//! instant neither loses an event nor tells it twice; only the machine going down while the
//! command runs loses it (a claimed file is not retried: told twice is worse than once
//! missed). A timeline git rewrote (shorter than read) is read again from its start, the keys
//! keeping it from being told twice. The first look at a project takes its timelines as they
//! are: what happened before `notify:` was set is not told.
//!
//! Off the pass's path: the supervisor (`guild-hall notify-send`, [`deliver`]) is detached and
//! never waited for; it kills the command's process group after `notify_timeout` and logs a
//! failure, a timeout or an unstartable command with tracing into `notify/notify.log`. Nothing
//! here fails a pass: a problem is logged. With no `notify:` configured nothing is read.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::activity::kind::Name;
use crate::config::{Home, Project};

/// What needs a person, as the event says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Need {
    /// Work waits for a person's review (status `review`).
    Review,
    /// A commission, a plan or a wave task failed.
    Failed,
    /// A worker asks for a meeting (its id is the meeting's).
    MeetingRequested,
    /// A commission's worker asked a question and waits for a person's answer.
    Question,
    /// An attempt was stopped for its budget, or a daily budget was reached.
    Budget,
}

impl Need {
    fn as_str(self) -> &'static str {
        match self {
            Need::Review => "review",
            Need::Failed => "failed",
            Need::MeetingRequested => "meeting_requested",
            Need::Question => "question",
            Need::Budget => "budget",
        }
    }
}

/// The one table of what needs a person: an event of `kind`'s timeline, and whose it is (a
/// wave task's canonical id for its plan's `task` events). A new notification is a variant of
/// [`Need`] and a line here, read from the event a pass writes for it.
fn needs_a_person(kind: Name, e: &Value) -> Option<(Need, Option<String>)> {
    let field = |k: &str| e[k].as_str();
    let need = match (kind, field("kind")?) {
        (_, "status") if field("to") == Some("failed") => Need::Failed,
        // Not work held only until it is sent back to its worker (a failing check).
        (_, "status") if field("to") == Some("review") && e["needs_you"] != false => Need::Review,
        // Held for its reviewer workers first, then left for a person once they are heard.
        (Name::Commission, "reviewed") if e["needs_you"] == true => Need::Review,
        (Name::Commission, "question") if e["waiting"] == true => Need::Question,
        (Name::Commission, "budget") => Need::Budget,
        (Name::Plan, "task") if field("state") == Some("failed") => return Some((Need::Failed, field("task").map(str::to_string))),
        (Name::Meeting, "created") if field("status") == Some("requested") => Need::MeetingRequested,
        _ => return None,
    };
    Some((need, None))
}

/// How long the text of an event may be (a failure's reason quotes a log).
const TEXT_MAX: usize = 4000;

/// What `notify/read.json` keeps of one timeline (by its path under `.lore/`).
#[derive(Debug, Default, Serialize, Deserialize)]
struct Progress {
    /// Bytes read: complete lines only.
    read: u64,
    /// Keys of the events told.
    told: BTreeSet<String>,
}

/// `notify/read.json` in the project's state dir.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Told {
    timelines: BTreeMap<String, Progress>,
}

/// The `notify:` command and its time limit.
pub(crate) type Notify = Option<(Vec<String>, Duration)>;

/// The command and its time limit, if `notify:` is set (the project's first, else the home's;
/// `[]` is none): read once a pass.
pub(crate) fn command(home: &Home, project: &Project) -> Notify {
    if let Some(argv) = &project.config.notify {
        return (!argv.is_empty()).then(|| (argv.clone(), project.config.notify_timeout));
    }
    let global = home.load_config().ok()?;
    global.notify.filter(|a| !a.is_empty()).map(|argv| (argv, global.notify_timeout))
}

/// Tell the person what the timelines gained since the last look (see the module doc). Never
/// fails: what goes wrong is logged.
pub(crate) fn after_round(home: &Home, project: &Project, notify: &Notify) {
    let Some((argv, timeout)) = notify else { return };
    let dir = home.project_state(&project.name).join("notify");
    if let Err(e) = look(project, &dir) {
        tracing::warn!(project = %project.name, error = format!("{e:#}"), "notifications: the timelines could not be read");
    }
    // A daily budget reached, once per budget per day.
    if let Some(reached) = home.load_config().ok().and_then(|g| super::budget::reached(project, &g)) {
        if let Err(e) = super::budget::tell(home, project, &reached, &dir.join("outbox")) {
            tracing::warn!(project = %project.name, error = format!("{e:#}"), "notifications: the daily budget reached could not be told");
        }
    }
    if let Err(e) = start_outbox(project, &dir, argv, *timeout) {
        tracing::warn!(project = %project.name, error = format!("{e:#}"), "the notify command could not be started");
    }
}

/// The project's timelines: (kind, artifact id, timeline path, its name under `.lore/`).
fn timelines(project: &Project) -> Result<Vec<(Name, String, PathBuf, String)>> {
    let mut all = Vec::new();
    for (kind, dir) in [(Name::Commission, "commissions"), (Name::Meeting, "meetings"), (Name::Plan, "plans")] {
        let path = project.root.join(".lore").join(dir);
        let entries = match std::fs::read_dir(&path) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
        };
        for entry in entries {
            let entry = entry.with_context(|| format!("reading {}", path.display()))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(id) = name.strip_suffix(".timeline.jsonl") else { continue };
            all.push((kind, id.to_string(), entry.path(), format!("{dir}/{name}")));
        }
    }
    Ok(all)
}

/// Read the timelines from where the last look stopped: each event that needs a person goes
/// into the outbox under `dir` before the read position passes it.
fn look(project: &Project, dir: &Path) -> Result<()> {
    let path = dir.join("read.json");
    let first = !path.exists();
    let mut told: Told = crate::files::read_json(&path)?.unwrap_or_default();
    let mut changed = first;
    let outbox = dir.join("outbox");
    std::fs::create_dir_all(&outbox).with_context(|| format!("creating {}", outbox.display()))?;
    for (kind, id, file, name) in timelines(project)? {
        let len = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
        let seen = told.timelines.entry(name.clone()).or_default();
        if first {
            // The first look: what is there already happened before anyone asked to be told.
            seen.read = len;
            continue;
        }
        if len == seen.read {
            continue;
        }
        changed = true;
        let from = if len < seen.read { 0 } else { seen.read };
        let bytes = read_from(&file, from)?;
        // Complete lines only: a line being written is read once it is whole.
        let whole = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        seen.read = from + whole as u64;
        for line in bytes[..whole].split(|b| *b == b'\n') {
            let Ok(e) = serde_json::from_slice::<Value>(line) else { continue };
            let Some((need, task)) = needs_a_person(kind, &e) else { continue };
            let Some(key) = e["key"].as_str() else { continue };
            if seen.told.insert(key.to_string()) {
                let event = event(project, kind, &id, need, task.as_deref(), &e);
                let named = format!("{:016x}.json", crate::artifact::store::content_hash(&format!("{name}#{key}")));
                crate::files::write_json(&outbox.join(named), &event)?;
            }
        }
    }
    if changed {
        crate::files::write_json(&path, &told)?;
    }
    Ok(())
}

/// The outbox files this process has started a supervisor for: each is started once here (a
/// later process starts what is left when it first looks).
static STARTED: std::sync::Mutex<BTreeSet<PathBuf>> = std::sync::Mutex::new(BTreeSet::new());

/// Start a supervisor, detached, for each event in the outbox under `dir` not yet started by
/// this process; none is waited for.
fn start_outbox(project: &Project, dir: &Path, argv: &[String], timeout: Duration) -> Result<()> {
    let outbox = dir.join("outbox");
    let mut files: Vec<PathBuf> = match std::fs::read_dir(&outbox) {
        Ok(entries) => entries.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "json")).collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e).with_context(|| format!("reading {}", outbox.display())),
    };
    files.sort();
    let mut started = STARTED.lock().unwrap_or_else(|e| e.into_inner());
    for file in files {
        if started.contains(&file) {
            continue;
        }
        let log = open_log(&dir.join("notify.log"))?;
        let exe = std::env::current_exe().context("locating the guild-hall binary")?;
        let mut cmd = Command::new(exe);
        cmd.arg("notify-send")
            .arg("--timeout")
            .arg(humantime::format_duration(timeout).to_string())
            .arg("--event")
            .arg(&file)
            .arg("--")
            .args(argv)
            .current_dir(&project.root)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log);
        crate::worker::process::detach(&mut cmd);
        let mut child = cmd.spawn().context("starting guild-hall notify-send")?;
        started.insert(file);
        // Reaped when it ends; nothing waits for it.
        std::thread::spawn(move || child.wait());
    }
    Ok(())
}

/// How large `notify.log` grows before it is moved aside to `notify.log.1` (replacing the one
/// before): a command that fails on every event would otherwise fill the disk, a line at a time.
const LOG_MAX: u64 = 1024 * 1024;

/// `notify.log`, opened to append to; moved aside first once it has reached [`LOG_MAX`]. A
/// supervisor still writing to the old one writes on into `notify.log.1` (until that is
/// replaced in turn, a MiB of failures later).
fn open_log(path: &Path) -> Result<std::fs::File> {
    if std::fs::metadata(path).is_ok_and(|m| m.len() >= LOG_MAX) {
        let _ = std::fs::rename(path, path.with_extension("log.1"));
    }
    std::fs::OpenOptions::new().create(true).append(true).open(path).with_context(|| format!("opening {}", path.display()))
}

fn read_from(path: &Path, from: u64) -> Result<Vec<u8>> {
    use std::io::Seek;
    let mut f = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    f.seek(std::io::SeekFrom::Start(from)).with_context(|| format!("reading {}", path.display()))?;
    let mut bytes = Vec::new();
    f.read_to_end(&mut bytes).with_context(|| format!("reading {}", path.display()))?;
    Ok(bytes)
}

/// The JSON event of `need`, told by timeline event `e` of `kind`'s `id` (a wave task's
/// canonical id `task` for its plan's).
fn event(project: &Project, kind: Name, id: &str, need: Need, task: Option<&str>, e: &Value) -> Value {
    let (title, from, agenda) = about(project, kind, id);
    let text = e["reason"].as_str().filter(|r| !r.is_empty()).or(agenda.as_deref()).or(e["text"].as_str()).unwrap_or("");
    let text = match text.char_indices().nth(TEXT_MAX) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    };
    let (kind_said, id_said) = match task {
        Some(t) => ("task", t),
        None => (kind.as_str(), id),
    };
    let mut v = json!({
        "event": need.as_str(),
        "project": project.name,
        "kind": kind_said,
        "id": id_said,
        "title": title.unwrap_or_else(|| id_said.to_string()),
        "text": text,
    });
    if need == Need::MeetingRequested {
        v["from"] = from.into();
    }
    v
}

/// The artifact's title, who requested it and its agenda (a meeting's), as far as it reads.
fn about(project: &Project, kind: Name, id: &str) -> (Option<String>, Option<String>, Option<String>) {
    match kind {
        Name::Commission => {
            let c = crate::artifact::load(
                &project.commission_path(id),
                id,
                &crate::artifact::Wording::COMMISSION,
                crate::artifact::Commission::parse,
            );
            (c.ok().and_then(|c| c.title), None, None)
        }
        Name::Meeting => match crate::meeting::observe::load(project, id) {
            Ok(m) => (m.title, m.requested_by, m.agenda),
            Err(_) => (None, None, None),
        },
        Name::Plan => (crate::plan::observe::load(project, id).ok().and_then(|p| p.title), None, None),
    }
}

/// `guild-hall notify-send`: claim the outbox file `event` (renamed into `sending/` beside the
/// outbox: another supervisor that claimed it first leaves nothing to do), run `argv` with
/// its content on stdin, in a process group of its own killed with it after `timeout`, then
/// remove it. A failure, a timeout or a command that cannot start is logged (the supervisor's
/// stderr is `notify.log`).
pub fn deliver(argv: &[String], event: &Path, timeout: Duration) {
    let Some(sending) = event.parent().and_then(Path::parent).map(|d| d.join("sending")) else { return };
    let Some(name) = event.file_name() else { return };
    let claimed = sending.join(name);
    if std::fs::create_dir_all(&sending).is_err() || std::fs::rename(event, &claimed).is_err() {
        return;
    }
    match std::fs::read(&claimed) {
        Ok(bytes) => run(argv, &bytes, timeout),
        Err(e) => tracing::warn!(event = %claimed.display(), error = %e, "the event to notify could not be read"),
    }
    let _ = std::fs::remove_file(&claimed);
}

/// Run `argv` with `event` on its stdin (see [`deliver`]).
fn run(argv: &[String], event: &[u8], timeout: Duration) {
    use std::os::unix::process::CommandExt;
    let Some((program, args)) = argv.split_first() else { return };
    let child =
        Command::new(program).args(args).stdin(Stdio::piped()).stdout(Stdio::null()).stderr(Stdio::inherit()).process_group(0).spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!(command = ?argv, error = %e, "the notify command could not be started");
            return;
        }
    };
    if let Some(mut stdin) = child.stdin.take() {
        // A command that does not read its stdin is not a failure.
        let _ = stdin.write_all(event);
    }
    let deadline = Instant::now() + timeout;
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return,
            Ok(Some(status)) => {
                tracing::warn!(command = ?argv, %status, "the notify command failed");
                return;
            }
            Ok(None) if Instant::now() >= deadline => {
                let group = nix::unistd::Pid::from_raw(child.id() as i32);
                let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
                let _ = child.wait();
                tracing::warn!(command = ?argv, timeout = %humantime::format_duration(timeout), "the notify command did not end in time: killed");
                return;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => {
                tracing::warn!(command = ?argv, error = %e, "waiting for the notify command");
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_is_moved_aside_once_it_is_full() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("notify.log");
        std::fs::write(&log, "an old failure\n").unwrap();
        writeln!(open_log(&log).unwrap(), "another").unwrap();
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "an old failure\nanother\n", "below the limit: appended to");
        std::fs::write(&log, vec![b'x'; LOG_MAX as usize]).unwrap();
        writeln!(open_log(&log).unwrap(), "new").unwrap();
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "new\n", "full: a new log");
        assert_eq!(std::fs::metadata(log.with_extension("log.1")).unwrap().len(), LOG_MAX, "the full one kept beside it");
    }

    #[test]
    fn the_table_says_what_needs_a_person() {
        let failed = json!({"kind": "status", "from": "in_progress", "to": "failed", "key": "status:1:in_progress:failed"});
        assert_eq!(needs_a_person(Name::Commission, &failed), Some((Need::Failed, None)));
        assert_eq!(needs_a_person(Name::Plan, &failed), Some((Need::Failed, None)));
        let review = json!({"kind": "status", "to": "review"});
        assert_eq!(needs_a_person(Name::Commission, &review), Some((Need::Review, None)));
        let task = json!({"kind": "task", "task": "p:exec:wave-1:task-1", "state": "failed"});
        assert_eq!(needs_a_person(Name::Plan, &task), Some((Need::Failed, Some("p:exec:wave-1:task-1".into()))));
        let requested = json!({"kind": "created", "status": "requested"});
        assert_eq!(needs_a_person(Name::Meeting, &requested), Some((Need::MeetingRequested, None)));
        let asked = json!({"kind": "question", "text": "Which hue?", "waiting": true, "question": 1});
        assert_eq!(needs_a_person(Name::Commission, &asked), Some((Need::Question, None)));
        for nothing in [
            // Held in review only to be sent back to its worker (a failing check).
            json!({"kind": "status", "to": "review", "needs_you": false}),
            // A question logged, not asked of anyone.
            json!({"kind": "question", "text": "Why?"}),
            json!({"kind": "status", "to": "completed"}),
            json!({"kind": "task", "state": "integrated"}),
            json!({"kind": "created", "status": "pending"}),
            json!({"kind": "progress", "text": "failed"}),
            json!({"no": "kind"}),
        ] {
            assert_eq!(needs_a_person(Name::Commission, &nothing), None, "{nothing}");
            assert_eq!(needs_a_person(Name::Plan, &nothing), None, "{nothing}");
        }
        // A commission's `created` as requested is not a meeting request.
        assert_eq!(needs_a_person(Name::Commission, &requested), None);
    }
}
