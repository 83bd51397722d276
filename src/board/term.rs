//! The terminal the board takes over: raw mode and the alternate screen on the way in, and
//! always back the way it was on the way out — on return, on a panic (a hook) and around a
//! program the board hands the terminal to (`$EDITOR`, `$PAGER`, `meeting chat`).

use std::io::{stdout, Stdout, Write};
use std::process::{Command, ExitStatus};
use std::sync::atomic::{AtomicBool, Ordering};

use ratatui::crossterm::cursor::Show;
use ratatui::crossterm::execute;
use ratatui::crossterm::terminal::{disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen};
use ratatui::prelude::CrosstermBackend;
use ratatui::Terminal;

pub(crate) type Term = Terminal<CrosstermBackend<Stdout>>;

/// Raw mode, the alternate screen, the cursor hidden.
fn enter() -> std::io::Result<()> {
    enable_raw_mode()?;
    execute!(stdout(), EnterAlternateScreen)?;
    Ok(())
}

/// The terminal as it was: cooked mode, the main screen, the cursor shown. Safe to call twice.
pub(crate) fn leave() {
    let _ = disable_raw_mode();
    let _ = execute!(stdout(), LeaveAlternateScreen, Show);
    let _ = stdout().flush();
}

/// Take the terminal over; a panic from here on gives it back before its message is printed.
pub(crate) fn take() -> std::io::Result<Term> {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        leave();
        previous(info);
    }));
    enter()?;
    let mut t = Terminal::new(CrosstermBackend::new(stdout()))?;
    t.hide_cursor()?;
    t.clear()?;
    Ok(t)
}

/// Gives the terminal back when dropped (the board's return, an error, a panic unwinding).
pub(crate) struct Restore;

impl Drop for Restore {
    fn drop(&mut self) {
        leave();
    }
}

/// A program has the terminal: a Ctrl-C typed meanwhile is its (`meeting chat` interrupts an
/// answer with it), not a reason for the board to end.
pub(crate) static HANDED_OVER: AtomicBool = AtomicBool::new(false);

/// Run `program` with the terminal as it was, then take it back and redraw everything. A
/// program that failed leaves its last words on screen until Enter.
pub(crate) fn hand_over(t: &mut Term, program: &mut Command) -> std::io::Result<ExitStatus> {
    leave();
    HANDED_OVER.store(true, Ordering::SeqCst);
    let status = program.status();
    HANDED_OVER.store(false, Ordering::SeqCst);
    if !status.as_ref().is_ok_and(|s| s.success()) {
        if let Err(e) = &status {
            eprintln!("{e}");
        }
        eprint!("[press Enter to return to the board]");
        let mut line = String::new();
        let _ = std::io::stdin().read_line(&mut line);
    }
    enter()?;
    t.hide_cursor()?;
    t.clear()?;
    status
}
