//! `guild-hall meeting ...`: start, chat, send, list, show, accept, decline, close. Thin over
//! [`guild_hall::ops::meeting`]: each writes what a person would write in an editor, has the
//! reconciler carry it out, and streams turns to the terminal (or as JSON lines for scripts).

use std::io::{BufRead, IsTerminal};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::{bail, Result};
use clap::Subcommand;
use serde_json::json;

use super::out::{line, say, say_err, say_json, say_raw, Table};
use super::Env;
use guild_hall::artifact::MeetingStatus;
use guild_hall::meeting::events::TurnEvent;
use guild_hall::meeting::turn::{self, Outcome};
use guild_hall::ops::meeting::{self as ops, NewMeeting};
use guild_hall::tools::meeting::{Entry, Shown};

#[derive(Debug, Subcommand)]
pub enum MeetingCmd {
    /// Start a meeting with a worker: write it (status: open), open it (branch, worktree) and
    /// run the first turn with MESSAGE, streaming the answer. Prints the id first.
    Start {
        /// A worker package with the `meeting` capability.
        #[arg(long)]
        worker: String,
        /// Why you meet (the worker is told).
        #[arg(long)]
        agenda: Option<String>,
        /// An artifact the meeting is about (repeatable).
        #[arg(long = "ref", value_name = "PATH")]
        refs: Vec<String>,
        /// What the meeting is about, in a line (default: the agenda or the first message); its
        /// id derives from it.
        #[arg(long)]
        title: Option<String>,
        /// Use this id instead of the first free one derived from the title, agenda or message;
        /// refused, naming what holds it, if anything of it exists: ids are never reused.
        #[arg(long)]
        id: Option<String>,
        /// Print the turn's events as JSON lines.
        #[arg(long)]
        json: bool,
        /// The first message (default: the agenda; with neither, no turn is run).
        message: Option<String>,
    },
    /// Talk with the worker interactively. Ctrl-C interrupts the current answer; Ctrl-D or
    /// /exit leaves the meeting open (come back any time); /close closes it.
    Chat {
        /// The meeting id: its file stem under .lore/meetings/.
        #[arg(value_name = "MEETING")]
        id: String,
    },
    /// One turn, for scripts: send MESSAGE ('-' reads stdin) and print the answer as it streams.
    Send {
        /// The meeting id: its file stem under .lore/meetings/.
        #[arg(value_name = "MEETING")]
        id: String,
        /// What you say to the worker ('-' reads it from stdin).
        message: String,
        /// Print the turn's events as JSON lines.
        #[arg(long)]
        json: bool,
    },
    /// List meetings: requests first (who asked, and why), then open ones, then the rest.
    List {
        /// Print `{"meetings": [...], "problems": [...]}` as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show a meeting: agenda, references, linked artifacts, notes and its log.
    Show {
        /// The meeting id: its file stem under .lore/meetings/.
        #[arg(value_name = "MEETING")]
        id: String,
        /// Print the meeting and its log as one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Accept a meeting request (status: open) and run its first turn: the worker opens by
    /// presenting what prompted the request; MESSAGE is added to that.
    Accept {
        /// The meeting id: its file stem under .lore/meetings/.
        #[arg(value_name = "MEETING")]
        id: String,
        /// Added to the worker's opening (what prompted the request).
        message: Option<String>,
        /// Print the turn's events as JSON lines.
        #[arg(long)]
        json: bool,
    },
    /// Decline a meeting request (status: declined). Nothing is created; its references stay.
    Decline {
        /// The meeting id: its file stem under .lore/meetings/.
        #[arg(value_name = "MEETING")]
        id: String,
        /// Why, written into the meeting's `reason:`.
        #[arg(long)]
        reason: Option<String>,
    },
    /// Close a meeting: notes written into it, its work squash-merged into the integration
    /// branch, its worktree and transcript removed (the branch is kept).
    Close {
        /// The meeting id: its file stem under .lore/meetings/.
        #[arg(value_name = "MEETING")]
        id: String,
    },
}

pub fn run(env: &Env, cmd: &MeetingCmd) -> Result<()> {
    match cmd {
        MeetingCmd::Start { worker, agenda, refs, title, id, json, message } => {
            let new = NewMeeting {
                worker: worker.clone(),
                title: title.clone(),
                agenda: agenda.clone(),
                references: refs.clone(),
                id: id.clone(),
                status: MeetingStatus::Open,
                requested_by: None,
                body: message.clone().unwrap_or_default(),
            };
            let id = ops::create(&env.home, &env.project, &new)?;
            say!("{id}");
            opened(env, &ops::open(&env.home, &env.project, &id)?);
            match guild_hall::tools::meeting::first_message(message.as_deref(), agenda.as_deref()) {
                Some(m) => one_turn(env, &id, &m, *json),
                None => Ok(()),
            }
        }
        MeetingCmd::Accept { id, message, json } => {
            let (m, opening) = ops::accept(&env.home, &env.project, id, message.as_deref())?;
            opened(env, &m);
            one_turn(env, id, &opening, *json)
        }
        MeetingCmd::Decline { id, reason } => {
            ops::decline(&env.home, &env.project, id, reason.as_deref())?;
            say_err!("declined meeting {id}; nothing was created and its references are untouched");
            Ok(())
        }
        MeetingCmd::Close { id } => close(env, id),
        MeetingCmd::Send { id, message, json } => {
            let message = if message == "-" { std::io::read_to_string(std::io::stdin())? } else { message.clone() };
            if message.trim().is_empty() {
                bail!("the message is empty");
            }
            one_turn(env, id, &message, *json)
        }
        MeetingCmd::Chat { id } => chat(env, id),
        MeetingCmd::List { json } => list(env, *json),
        MeetingCmd::Show { id, json } => show(env, id, *json),
    }
}

fn opened(env: &Env, m: &guild_hall::artifact::Meeting) {
    say_err!(
        "meeting {} open with {} on {} (worktree {})",
        m.id,
        m.worker,
        guild_hall::activity::names::meeting_branch(&m.id),
        env.home.meeting_worktree(&env.project.name, &m.id).display()
    );
}

fn close(env: &Env, id: &str) -> Result<()> {
    let (m, closed) = ops::close(&env.home, &env.project, id)?;
    if closed {
        say_err!("closed meeting {id}{}", m.owned.reason.as_deref().map(|r| format!(": {r}")).unwrap_or_default());
        if let Some(n) = m.owned.notes.as_deref() {
            say!("{}", n.trim_end());
        }
    } else {
        say_err!(
            "meeting {id} is closing: {}; the reconciler finishes it when it can",
            m.owned.reason.as_deref().unwrap_or("not done yet")
        );
    }
    Ok(())
}

/// Ctrl-C sets this instead of ending the process: it interrupts the turn, not the meeting.
fn interrupt_flag() -> Result<Arc<AtomicBool>> {
    let flag = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGINT, flag.clone())?;
    Ok(flag)
}

/// Run one turn, rendering its events; a failed turn is an error (exit 1).
fn one_turn(env: &Env, id: &str, message: &str, json: bool) -> Result<()> {
    let flag = interrupt_flag()?;
    let t = run_turn(env, id, message, json, &flag)?;
    if let Outcome::Failed { reason } = &t.outcome {
        bail!("the turn failed: {reason}");
    }
    Ok(())
}

fn run_turn(env: &Env, id: &str, message: &str, json: bool, flag: &AtomicBool) -> Result<turn::Turn> {
    let mut view = View::new(json);
    let t = ops::turn(&env.home, &env.project, id, message, flag, &mut |e| view.show(e))?;
    view.finish(&t);
    Ok(t)
}

/// How a turn looks: text as it streams, one dim line per tool use, errors on stderr; or the
/// events themselves as JSON lines.
struct View {
    json: bool,
    tty: bool,
    at_line_start: bool,
}

impl View {
    fn new(json: bool) -> View {
        View { json, tty: std::io::stdout().is_terminal(), at_line_start: true }
    }

    fn newline(&mut self) {
        if !self.at_line_start {
            say!();
            self.at_line_start = true;
        }
    }

    fn show(&mut self, e: &TurnEvent) {
        if self.json {
            say_json!("{}", serde_json::to_string(e).unwrap_or_default());
            return;
        }
        match e {
            TurnEvent::TextDelta { text } => {
                say_raw!("{text}");
                self.at_line_start = text.ends_with('\n');
            }
            TurnEvent::ToolUse { name, input } => {
                self.newline();
                let mut args = input.to_string();
                if args.chars().count() > 80 {
                    args = format!("{}…", args.chars().take(80).collect::<String>());
                }
                // The worker's words escaped, then guild-hall's own dimming around them.
                let shown = format!("· {} {}", line(name), line(&args));
                if self.tty {
                    super::out::stdout_raw(format!("\x1b[2m{shown}\x1b[0m\n").as_bytes());
                } else {
                    say!("{shown}");
                }
            }
            TurnEvent::Error { reason } => {
                self.newline();
                say_err!("error: {reason}");
            }
            TurnEvent::TurnEnd => self.newline(),
            TurnEvent::Session { .. } | TurnEvent::ToolResult { .. } => {}
        }
    }

    fn finish(&mut self, t: &turn::Turn) {
        if self.json {
            // The turn as a last line: `{"type":"turn","outcome":"ended",...}`.
            let mut v = serde_json::to_value(t).unwrap_or_default();
            if let Some(o) = v.as_object_mut() {
                o.insert("type".into(), json!("turn"));
                o.remove("text");
            }
            say_json!("{}", serde_json::to_string(&v).unwrap_or_default());
            return;
        }
        self.newline();
        if t.outcome == Outcome::Interrupted {
            say_err!("(interrupted; the meeting stays open)");
        }
    }
}

fn chat(env: &Env, id: &str) -> Result<()> {
    let m = guild_hall::meeting::observe::load(&env.project, id)?;
    if m.effective_status() != MeetingStatus::Open {
        bail!("meeting {id} is {}; only an open meeting can chat", m.effective_status());
    }
    let flag = interrupt_flag()?;
    say_err!(
        "meeting {id} with {}. Ctrl-C interrupts an answer; Ctrl-D or /exit leaves (the meeting stays open); /close closes it.",
        m.worker
    );
    let stdin = std::io::stdin();
    let interactive = stdin.is_terminal();
    loop {
        if interactive {
            say_raw!("you> ");
        }
        let mut line = String::new();
        flag.store(false, Ordering::SeqCst);
        match stdin.lock().read_line(&mut line) {
            Ok(0) => {
                say_err!("\nleft meeting {id}; it stays open (guild-hall meeting chat {id} to come back)");
                return Ok(());
            }
            Ok(_) => {}
            // Ctrl-C at the prompt: a fresh prompt.
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {
                say!();
                continue;
            }
            Err(e) => return Err(e.into()),
        }
        let text = line.trim();
        match text {
            "" => continue,
            "/exit" | "/quit" => {
                say_err!("left meeting {id}; it stays open (guild-hall meeting chat {id} to come back)");
                return Ok(());
            }
            "/close" => return close(env, id),
            _ => {}
        }
        flag.store(false, Ordering::SeqCst);
        match run_turn(env, id, text, false, &flag) {
            Ok(t) => {
                if let Outcome::Failed { reason } = &t.outcome {
                    say_err!("the turn failed: {reason}");
                }
            }
            Err(e) => say_err!("error: {e:#}"),
        }
    }
}

fn list(env: &Env, json: bool) -> Result<()> {
    let (rows, problems) = ops::list(&env.project)?;
    if json {
        // Through a JSON value: its keys come out sorted, as they always have.
        let items: Vec<_> = rows.iter().map(|m| Entry::of(&env.home, &env.project.name, m)).collect();
        say_json!("{}", serde_json::to_string_pretty(&json!({"meetings": items, "problems": problems}))?);
        return Ok(());
    }
    if rows.is_empty() && problems.is_empty() {
        say!("no meetings (start one: guild-hall meeting start --worker W \"message\")");
    }
    // As `status`: a header, columns as wide as their widest cell.
    let mut table = Table::new(["ID", "STATUS", "WORKER", "AGENDA"]);
    for m in &rows {
        let why = m.agenda.as_deref().or(m.title.as_deref()).unwrap_or("");
        let who = match (m.effective_status(), &m.requested_by) {
            (MeetingStatus::Requested, Some(by)) => format!("{}asked by {by}: ", m.deferred()),
            (MeetingStatus::Requested, None) => format!("{}requested: ", m.deferred()),
            _ => String::new(),
        };
        // Where its dev server is to be found, while a turn runs (as `status` says it).
        let who = match Entry::of(&env.home, &env.project.name, m).ports {
            Some(p) => format!("ports {p}; {who}"),
            None => who,
        };
        table.row([
            m.id.clone(),
            m.effective_status().as_str().to_string(),
            line(&m.worker).into_owned(),
            format!("{}{}", line(&who), one_line(why)),
        ]);
    }
    table.print();
    for p in &problems {
        say_err!("{p}");
    }
    Ok(())
}

fn show(env: &Env, id: &str, json: bool) -> Result<()> {
    let m = guild_hall::meeting::observe::load(&env.project, id)?;
    let log = guild_hall::activity::timeline::read(&guild_hall::activity::timeline::path_for(&m.path))?;
    if json {
        // Through a JSON value: its keys come out sorted, as they always have.
        let v = serde_json::to_value(Shown::of(&env.home, &env.project.name, &m, log))?;
        say_json!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    // One-line fields stay one line (a newline in a title is shown as `\n`); the notes are
    // text of many lines. Every control character is shown, not obeyed, either way.
    say!("meeting   {id}{}", m.title.as_ref().map(|t| format!(": {}", line(t))).unwrap_or_default());
    say!("status    {}", m.effective_status());
    say!("worker    {}", line(&m.worker));
    if let Some(by) = &m.requested_by {
        say!("asked by  {}", line(by));
    }
    if let Some(a) = &m.agenda {
        say!("agenda    {}", one_line(a));
    }
    if !m.references.is_empty() {
        say!("refs      {}", line(&m.references.join(", ")));
    }
    if let Some(b) = m.owned.branch.as_deref() {
        say!("branch    {}", line(b));
    }
    if let Some(s) = m.session_id() {
        say!("session   {}", line(s));
    }
    if let Some(p) = Entry::of(&env.home, &env.project.name, &m).ports {
        say!("ports     {p}");
    }
    let linked = m.linked_artifacts();
    if !linked.is_empty() {
        let more = match m.linked_more() {
            0 => String::new(),
            n => format!(" (and {n} more in the log)"),
        };
        say!("linked    {}{more}", line(&linked.join(", ")));
    }
    if let Some(r) = m.owned.reason.as_deref() {
        say!("reason    {}", line(r));
    }
    if let Some(n) = m.owned.notes.as_deref() {
        say!("\n{}", n.trim_end());
    }
    if !log.is_empty() {
        say!("\nlog:");
        for e in &log {
            say!("  {}", line(&guild_hall::activity::timeline::render(e)));
        }
    }
    Ok(())
}

/// The first line of a text, cut at 70 characters, its controls shown.
fn one_line(s: &str) -> String {
    let first = s.split('\n').next().unwrap_or("").trim();
    let cut = if first.chars().count() > 70 { format!("{}…", first.chars().take(70).collect::<String>()) } else { first.to_string() };
    line(&cut).into_owned()
}
