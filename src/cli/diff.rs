//! `guild-hall diff ID [--stat] [--json]`: thin over [`guild_hall::ops::diff`]. On a terminal
//! the change is coloured and goes through the pager as git's does (`GIT_PAGER`, `PAGER`,
//! `less`); to a pipe or a file it is plain. Every line a worker wrote is escaped on the way.

use std::io::{IsTerminal, Write};

use anyhow::Result;

use super::out::{escape, say_json, Newlines};
use super::Env;
use guild_hall::ops::diff::{Detail, Diff, Part};

/// How the change is shown.
pub struct Shown {
    pub stat: bool,
    pub json: bool,
    pub no_pager: bool,
}

impl Shown {
    /// What to read of the change: the patches only when they are shown.
    pub fn detail(&self) -> Detail {
        Detail::of(self.stat)
    }
}

/// `guild-hall diff ID`: a commission's or a wave task's change.
pub fn diff(env: &Env, id: &str, how: &Shown) -> Result<()> {
    reads_as_git();
    show(&guild_hall::ops::diff::of(&env.home, &env.project, id, how.detail())?, how)
}

/// This process reads objects as git does: without hashing each one again to check it (libgit2
/// does by default; it was a tenth of `diff --stat`'s time over 1,000 files). A read-only
/// command's own process: the reconciler, which writes, keeps the check.
pub fn reads_as_git() {
    git2::opts::strict_hash_verification(false);
}

/// The change as JSON, or as text through the pager on a terminal.
pub fn show(diff: &Diff, how: &Shown) -> Result<()> {
    if how.json {
        say_json!("{}", serde_json::to_string_pretty(diff)?);
        return Ok(());
    }
    let terminal = std::io::stdout().is_terminal();
    let colour = terminal && guild_hall::board::colour_wanted();
    let text = if how.stat { stat_text(diff, width(terminal), colour) } else { patch_text(diff, colour) };
    match pager(terminal && !how.no_pager) {
        Some(cmd) => page(&cmd, &text),
        None => super::out::stdout_raw(text.as_bytes()),
    }
    Ok(())
}

const RESET: &str = "\x1b[m";

/// git's default colours for a diff's parts.
fn colour_of(part: Part) -> Option<&'static str> {
    match part {
        Part::Header => Some("\x1b[1m"),
        Part::Hunk => Some("\x1b[36m"),
        Part::Added => Some("\x1b[32m"),
        Part::Removed => Some("\x1b[31m"),
        Part::Context => None,
    }
}

/// Each file's patch, escaped, coloured if `colour`.
fn patch_text(diff: &Diff, colour: bool) -> String {
    let mut out = String::new();
    for (part, line) in diff.lines() {
        let line = escape(line, Newlines::Escape);
        match colour_of(part).filter(|_| colour) {
            Some(c) => out.push_str(&format!("{c}{line}{RESET}\n")),
            None => out.push_str(&format!("{line}\n")),
        }
    }
    out
}

/// The stat, escaped, its graph coloured if `colour`.
fn stat_text(diff: &Diff, width: usize, colour: bool) -> String {
    let mut out = String::new();
    for line in diff.stat(width) {
        let line = escape(&line, Newlines::Escape);
        // The graph is the run of `+` then `-` ending a file's line (after its " | ").
        let graph = line.rfind(" | ").map(|bar| bar + line[bar..].trim_end_matches(['+', '-']).len());
        match graph.filter(|&g| colour && g < line.len()) {
            Some(g) => {
                let (head, marks) = line.split_at(g);
                let plus = marks.len() - marks.trim_start_matches('+').len();
                let (p, m) = marks.split_at(plus);
                out.push_str(head);
                if !p.is_empty() {
                    out.push_str(&format!("\x1b[32m{p}{RESET}"));
                }
                if !m.is_empty() {
                    out.push_str(&format!("\x1b[31m{m}{RESET}"));
                }
                out.push('\n');
            }
            None => out.push_str(&format!("{line}\n")),
        }
    }
    out
}

/// The stat's width, as git's: `COLUMNS`, else the terminal's, else 80.
fn width(terminal: bool) -> usize {
    if let Some(n) = std::env::var("COLUMNS").ok().and_then(|c| c.parse::<usize>().ok()).filter(|n| *n > 0) {
        return n;
    }
    if terminal {
        let mut size = libc::winsize { ws_row: 0, ws_col: 0, ws_xpixel: 0, ws_ypixel: 0 };
        // SAFETY: TIOCGWINSZ fills the winsize it is given; stdout is a terminal.
        if unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut size) } == 0 && size.ws_col > 0 {
            return usize::from(size.ws_col);
        }
    }
    80
}

/// The pager to show it through, as git chooses one: `GIT_PAGER`, else `PAGER`, else `less`;
/// none when not wanted, or set to "" or `cat`.
fn pager(wanted: bool) -> Option<String> {
    if !wanted {
        return None;
    }
    let cmd = std::env::var("GIT_PAGER").or_else(|_| std::env::var("PAGER")).unwrap_or_else(|_| "less".to_string());
    let cmd = cmd.trim();
    (!cmd.is_empty() && cmd != "cat").then(|| cmd.to_string())
}

/// Show `text` through `cmd` (a shell command, as git runs it, with `LESS=FRX` unless set: it
/// quits at once for a short change and keeps the colours). A pager that cannot start: the
/// text is written as it is.
fn page(cmd: &str, text: &str) {
    let mut command = std::process::Command::new("sh");
    command.arg("-c").arg(cmd).stdin(std::process::Stdio::piped());
    if std::env::var_os("LESS").is_none() {
        command.env("LESS", "FRX");
    }
    if std::env::var_os("LV").is_none() {
        command.env("LV", "-c");
    }
    let Ok(mut child) = command.spawn() else {
        super::out::stdout_raw(text.as_bytes());
        return;
    };
    if let Some(mut stdin) = child.stdin.take() {
        // The person may quit the pager before reading it all: a closed pipe is no error.
        let _ = stdin.write_all(text.as_bytes());
    }
    // 127: the shell found no such pager; the change is shown without one.
    if child.wait().is_ok_and(|s| s.code() == Some(127)) {
        super::out::stdout_raw(text.as_bytes());
    }
}
