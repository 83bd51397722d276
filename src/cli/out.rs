//! Output of commands. A closed pipe (`guild-hall status | head -1`) or a terminal that went
//! away ends output quietly instead of panicking, and never interrupts the work a command is
//! doing (a reconcile pass goes on to its end; only its report is lost). What a person reads
//! is shown, never obeyed: every control character in it is escaped ([`escape`]); what a
//! program reads (JSON, raw logs) is written exactly. Tables are laid out here, sized to their
//! content ([`Table`]).

use std::borrow::Cow;
use std::fmt::Write as _;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

use guild_hall::shown::obeyed;
pub use guild_hall::shown::{escape, Newlines};

/// JSON text as a terminal may show it and a program reads it exactly: serde_json escapes C0
/// controls but writes DEL, C1 controls and bidi overrides as they are; those can only stand
/// inside JSON strings, where `\u00XX` is the same character to any JSON reader.
pub fn json(s: &str) -> Cow<'_, str> {
    let loud = |c: char| c >= '\x7f' && obeyed(c, Newlines::Keep);
    if !s.chars().any(loud) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if loud(c) {
            let _ = write!(out, "\\u{:04x}", c as u32);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

pub use guild_hall::activity::timeline::counted;

/// [`escape`] for a one-line field (a title in a header, a table cell, a timeline entry).
pub fn line(s: &str) -> Cow<'_, str> {
    escape(s, Newlines::Escape)
}

/// [`escape`] for bytes that may not be UTF-8 (a worker's log): what is not UTF-8 is shown as
/// `\xNN`, one escape a byte.
pub fn escape_bytes(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        out.extend_from_slice(escape(chunk.valid(), Newlines::Keep).as_bytes());
        for b in chunk.invalid() {
            out.extend_from_slice(format!("\\x{b:02x}").as_bytes());
        }
    }
    out
}

/// A log line (our tracing output on stderr): escaped like any human text, but for the colour
/// sequences (`ESC [ digits ; m`) the log formatter itself writes on a terminal. Field values
/// are not all sanitised by the formatter (only the message is), and a worker's words reach
/// some of them.
pub fn escape_log(s: &str) -> Cow<'_, str> {
    if !s.chars().any(|c| obeyed(c, Newlines::Keep)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    let mut rest = s;
    while let Some(at) = rest.find('\x1b') {
        out.push_str(&escape(&rest[..at], Newlines::Keep));
        let seq = &rest[at..];
        let colour = seq
            .strip_prefix("\x1b[")
            .and_then(|t| t.find(|c: char| !(c.is_ascii_digit() || c == ';')).filter(|&i| t[i..].starts_with('m')));
        match colour {
            Some(i) => {
                out.push_str(&seq[..i + 3]);
                rest = &seq[i + 3..];
            }
            None => {
                out.push_str("\\x1b");
                rest = &seq[1..];
            }
        }
    }
    out.push_str(&escape(rest, Newlines::Keep));
    Cow::Owned(out)
}

/// Stderr for the log formatter, each write escaped by [`escape_log`]. The formatter writes a
/// whole event at a time, so a character is never split between writes.
pub struct LogStderr;

impl Write for LogStderr {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        std::io::stderr().lock().write_all(escape_log(&text).as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

/// Write exactly these bytes to stdout: for what a program reads (JSON, a log asked for
/// `--raw`, generated scripts), and text already escaped. Once a write fails (the reader is
/// gone), further output is dropped.
/// Whether stdout went away (a closed pipe): a command that follows stops then.
pub fn stdout_closed() -> bool {
    STDOUT_CLOSED.load(Ordering::Relaxed)
}

/// For a command that follows and may print nothing for a long while (`logs -f | less`, the
/// pager quit): end the process, successfully, the moment its reader goes, rather than at its
/// next write. It only reads, so there is nothing to finish. A pipe's write end reports an
/// error once its read end is closed (a terminal, a hangup); a file never does.
pub fn exit_when_reader_goes() {
    std::thread::spawn(|| {
        use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
        use std::os::fd::AsFd;
        let stdout = std::io::stdout();
        loop {
            let mut fds = [PollFd::new(stdout.as_fd(), PollFlags::empty())];
            match poll(&mut fds, PollTimeout::NONE) {
                Ok(_) if fds[0].revents().is_some_and(|r| r.intersects(PollFlags::POLLERR | PollFlags::POLLHUP)) => std::process::exit(0),
                // Not a descriptor poll can watch: the next write says it.
                Ok(_) if fds[0].revents().is_none_or(|r| r.contains(PollFlags::POLLNVAL)) => return,
                Err(nix::errno::Errno::EINTR) | Ok(_) => continue,
                Err(_) => return,
            }
        }
    });
}

pub fn stdout_raw(bytes: &[u8]) {
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let mut out = std::io::stdout().lock();
    if out.write_all(bytes).and_then(|_| out.flush()).is_err() {
        STDOUT_CLOSED.store(true, Ordering::Relaxed);
    }
}

/// Human text to stdout, escaped (newlines kept).
pub fn stdout_fmt(args: std::fmt::Arguments<'_>) {
    let text = args.to_string();
    stdout_raw(escape(&text, Newlines::Keep).as_bytes());
}

/// Human text to stderr, escaped (newlines kept), ignoring failure (there is nowhere left to
/// report it).
pub fn stderr_fmt(args: std::fmt::Arguments<'_>) {
    let text = args.to_string();
    let _ = std::io::stderr().lock().write_all(escape(&text, Newlines::Keep).as_bytes());
}

/// `text` padded with spaces to `width` characters, as `{:<width$}` would; one longer keeps
/// all of itself and one space more, so that the next column (after its own separator) still
/// stands two spaces off. For lines printed as they happen (a pass's actions), whose widths
/// cannot wait for the longest; a [`Table`] is sized to its content.
pub fn pad(text: &str, width: usize) -> String {
    let n = text.chars().count();
    let fill = if n < width { width - n } else { 1 };
    format!("{text}{}", " ".repeat(fill))
}

/// A table a person reads, the one way every table of the CLI is laid out: a header (if it
/// has one) over rows whose columns are each as wide as their widest cell, so an id of any
/// length stays aligned; one space between columns, two before the last, which is free text
/// and not padded. Lines of their own may stand between rows (a plan's heading over its
/// tasks, a result under its task); [`Table::under`] starts one where the second column does.
pub struct Table<const N: usize> {
    header: Option<[&'static str; N]>,
    indent: &'static str,
    right: [bool; N],
    items: Vec<Item<N>>,
}

enum Item<const N: usize> {
    Row([String; N]),
    Line(String),
    Under(String),
}

impl<const N: usize> Table<N> {
    /// A table under this header (printed only when there are rows).
    pub fn new(header: [&'static str; N]) -> Self {
        Table { header: Some(header), indent: "", right: [false; N], items: Vec::new() }
    }

    /// A table without a header (its rows say what they are).
    pub fn headless() -> Self {
        Table { header: None, indent: "", right: [false; N], items: Vec::new() }
    }

    /// Every row (and the header) starts with `indent`.
    pub fn indent(mut self, indent: &'static str) -> Self {
        self.indent = indent;
        self
    }

    /// These columns (numbers, ages) are aligned right.
    pub fn right(mut self, columns: &[usize]) -> Self {
        for &c in columns {
            if let Some(r) = self.right.get_mut(c) {
                *r = true;
            }
        }
        self
    }

    pub fn row(&mut self, cells: [String; N]) {
        self.items.push(Item::Row(cells));
    }

    /// A line of its own, as it is, between rows.
    pub fn line(&mut self, text: String) {
        self.items.push(Item::Line(text));
    }

    /// A line of its own that starts where the second column does (a row's description).
    pub fn under(&mut self, text: String) {
        self.items.push(Item::Under(text));
    }

    /// The table's lines, trailing spaces trimmed.
    pub fn lines(&self) -> Vec<String> {
        let rows = || self.items.iter().filter_map(|i| if let Item::Row(r) = i { Some(r) } else { None });
        if self.items.is_empty() {
            return Vec::new();
        }
        let width = |c: usize| {
            let header = self.header.map(|h| h[c].chars().count()).unwrap_or(0);
            rows().map(|r| r[c].chars().count()).chain([header]).max().unwrap_or(0)
        };
        let widths: Vec<usize> = (0..N).map(width).collect();
        let render = |cells: [&str; N]| {
            let mut out = String::from(self.indent);
            for (c, cell) in cells.iter().enumerate() {
                if c + 1 == N {
                    out.push_str(if N > 1 { "  " } else { "" });
                    out.push_str(cell);
                } else {
                    if c > 0 {
                        out.push(' ');
                    }
                    let fill = " ".repeat(widths[c].saturating_sub(cell.chars().count()));
                    if self.right[c] {
                        out.push_str(&fill);
                        out.push_str(cell);
                    } else {
                        out.push_str(cell);
                        out.push_str(&fill);
                    }
                }
            }
            out.trim_end().to_string()
        };
        let mut out = Vec::new();
        if let Some(h) = self.header.filter(|_| rows().next().is_some()) {
            out.push(render(h));
        }
        let under = format!("{}{}", self.indent, " ".repeat(widths.first().map_or(0, |w| w + 1)));
        for item in &self.items {
            match item {
                Item::Row(r) => out.push(render(r.each_ref().map(String::as_str))),
                Item::Line(l) => out.push(l.clone()),
                Item::Under(l) => out.push(format!("{under}{l}")),
            }
        }
        out
    }

    /// Print it, each line escaped (see [`escape`]).
    pub fn print(&self) {
        for l in self.lines() {
            stdout_fmt(format_args!("{l}\n"));
        }
    }
}

/// `println!` for a person (escaped) that survives a closed stdout.
macro_rules! say {
    () => { $crate::cli::out::stdout_raw(b"\n") };
    ($($t:tt)*) => { $crate::cli::out::stdout_fmt(format_args!("{}\n", format_args!($($t)*))) };
}

/// `print!` for a person (escaped) that survives a closed stdout.
macro_rules! say_raw {
    ($($t:tt)*) => { $crate::cli::out::stdout_fmt(format_args!($($t)*)) };
}

/// `println!` of a JSON document or line: what a program reads back is exactly what a worker
/// wrote (JSON escapes its controls; [`json`] the few serde_json leaves raw).
macro_rules! say_json {
    ($($t:tt)*) => { $crate::cli::out::stdout_raw($crate::cli::out::json(&format!("{}\n", format_args!($($t)*))).as_bytes()) };
}

/// `eprintln!` for a person (escaped) that survives a closed stderr.
macro_rules! say_err {
    ($($t:tt)*) => { $crate::cli::out::stderr_fmt(format_args!("{}\n", format_args!($($t)*))) };
}

pub(crate) use {say, say_err, say_json, say_raw};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_are_shown_not_obeyed() {
        let hostile =
            "ok\x1b]52;c;ZXZpbA==\x07 \x1b[2J\rdone \x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\ \u{9b}31m \u{202e}txt.exe\x7f\tend\nnext";
        let shown = escape(hostile, Newlines::Keep);
        assert_eq!(
            shown,
            "ok\\x1b]52;c;ZXZpbA==\\x07 \\x1b[2J\\rdone \\x1b]8;;http://x\\x1b\\link\\x1b]8;;\\x1b\\ \\u{9b}31m \\u{202e}txt.exe\\x7f\tend\nnext"
        );
        assert_eq!(line(hostile).matches("\\n").count(), 1);
        assert!(!line(hostile).contains('\n'));
        for s in [escape(hostile, Newlines::Keep), line(hostile)] {
            assert!(!s.chars().any(|c| c.is_control() && c != '\n' && c != '\t'), "{s:?}");
        }
    }

    #[test]
    fn plain_text_is_untouched() {
        let plain = "Résumé — 日本語 ✓\ttabs\nand lines";
        assert!(matches!(escape(plain, Newlines::Keep), Cow::Borrowed(_)));
        assert_eq!(line("a\nb"), "a\\nb");
    }

    #[test]
    fn a_log_keeps_its_colours_and_shows_the_rest() {
        let line = "\x1b[2m2026\x1b[0m \x1b[33mWARN\x1b[0m error=\x1b]52;c;eA==\x07 \x1b[2J\rX \x1b[1;31m\n";
        assert_eq!(escape_log(line), "\x1b[2m2026\x1b[0m \x1b[33mWARN\x1b[0m error=\\x1b]52;c;eA==\\x07 \\x1b[2J\\rX \x1b[1;31m\n");
        assert_eq!(escape_log("tail \x1b"), "tail \\x1b");
    }

    #[test]
    fn json_stays_exact_and_shows_what_serde_leaves_raw() {
        let v = serde_json::json!({"text": "a\x1b[2J\r\u{9b}1m\u{202e}x\x7f\t\n"});
        let text = serde_json::to_string_pretty(&v).expect("json");
        let shown = json(&text);
        assert!(!shown.chars().any(|c| c.is_control() && c != '\n'), "{shown}");
        assert!(!shown.contains('\u{202e}'));
        assert_eq!(serde_json::from_str::<serde_json::Value>(&shown).expect("parses"), v);
    }

    #[test]
    fn a_table_is_as_wide_as_its_widest_cell() {
        let mut t = Table::new(["NAME", "N", "NOTE"]).right(&[1]);
        t.row(["claude-code-coder".into(), "1".into(), "a note".into()]);
        t.under("described".into());
        t.line("between".into());
        t.row(["scribe".into(), "12".into(), String::new()]);
        assert_eq!(
            t.lines(),
            [
                "NAME               N  NOTE",
                "claude-code-coder  1  a note",
                "                  described",
                "between",
                "scribe            12"
            ]
        );
        // No rows, no header.
        assert!(Table::new(["A", "B"]).lines().is_empty());
        assert_eq!(Table::<2>::headless().indent("  ").lines(), Vec::<String>::new());
    }

    #[test]
    fn a_padded_cell_longer_than_its_column_keeps_a_gap() {
        assert_eq!(pad("abc", 5), "abc  ");
        assert_eq!(pad("abcde", 5), "abcde ");
        assert_eq!(pad("abcdefg", 5), "abcdefg ");
        assert_eq!(pad("日本", 3), "日本 ");
    }

    #[test]
    fn bytes_that_are_not_utf8_are_shown_as_hex() {
        assert_eq!(escape_bytes(b"a\xff\x1b[1mb\n\xe2\x80"), b"a\\xff\\x1b[1mb\n\\xe2\\x80".to_vec());
    }
}
