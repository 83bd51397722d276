//! How text from outside guild-hall (a worker's words, a file's content or name) is shown to a
//! person, on a terminal or a web page alike: every character a terminal would obey is shown
//! as a visible escape instead ([`escape`]), so nothing hidden is carried out or passed on.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Whether a newline in text is kept (multi-line text) or shown as `\n` (a one-line field).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Newlines {
    Keep,
    Escape,
}

/// Characters a terminal obeys instead of showing: C0 controls (but `\t`, and `\n` when
/// kept), DEL, C1 controls, and the bidirectional overrides and isolates that reorder what is
/// shown around them ("Trojan Source").
pub fn obeyed(c: char, newlines: Newlines) -> bool {
    match c {
        '\t' => false,
        '\n' => newlines == Newlines::Escape,
        '\0'..='\x1f' | '\x7f'..='\u{9f}' => true,
        '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => true,
        _ => false,
    }
}

/// The one way text from outside guild-hall (a worker's progress, question, result, log; a
/// file's content or name) reaches a person: each character a terminal would obey is shown as
/// a visible escape — `\r`, `\n` (in a one-line field), `\x1b`, `\x07`, `\u{9b}`, `\u{202e}`
/// — so ESC sequences, OSC 52 (clipboard), OSC 8 (links), `\r` overwrites and bidi overrides
/// are seen, not carried out. Text with none is returned as it is.
pub fn escape(s: &str, newlines: Newlines) -> Cow<'_, str> {
    if !s.chars().any(|c| obeyed(c, newlines)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if !obeyed(c, newlines) {
            out.push(c);
            continue;
        }
        let _ = match c {
            '\r' => write!(out, "\\r"),
            '\n' => write!(out, "\\n"),
            c if (c as u32) < 0x80 => write!(out, "\\x{:02x}", c as u32),
            c => write!(out, "\\u{{{:x}}}", c as u32),
        };
    }
    Cow::Owned(out)
}
