//! What a meeting's artifact shows of its mailbox — the latest links and progress summaries,
//! how many follow-ups were proposed — and how far the mailbox has been read: kept between
//! passes (`events.folded.json` in the meeting's runtime dir), so that a pass reads only the
//! new bytes, in bounded pieces, however much the worker writes.

use std::collections::VecDeque;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::activity::state::StateDir;
use crate::worker::toolbox::mailbox::{Cursor, Mail, MailBody};

/// The most linked artifacts a meeting's frontmatter lists (the latest; the log has every
/// link, and a first entry says how many more there are).
pub(crate) const LINKED_SHOWN: usize = 50;
/// ... within this many bytes of paths (a path is not bounded by the toolbox's text limit).
pub(crate) const LINKED_BYTES: usize = 16 * 1024;
/// The most progress summaries an open meeting's notes list (the latest).
pub(crate) const SUMMARIES_SHOWN: usize = 10;

/// A meeting's mailbox as folded so far.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Folded {
    pub(crate) cursor: Cursor,
    /// The latest linked artifacts, each once, oldest first: at most [`LINKED_SHOWN`] within
    /// [`LINKED_BYTES`].
    #[serde(default)]
    pub(crate) linked: VecDeque<String>,
    /// Links read that `linked` does not hold (older ones, or a path too long to list).
    #[serde(default)]
    pub(crate) linked_more: u64,
    /// The latest progress summaries as the notes list them (`- <ts> <text>`), at most
    /// [`SUMMARIES_SHOWN`], and how many there were in all.
    #[serde(default)]
    pub(crate) summaries: VecDeque<String>,
    #[serde(default)]
    pub(crate) summaries_total: u64,
    /// Follow-up proposals read.
    #[serde(default)]
    pub(crate) followups: u64,
}

impl Folded {
    /// Take one event in.
    pub(crate) fn take(&mut self, m: &Mail) {
        match &m.body {
            MailBody::Link { path } => self.link(path),
            MailBody::Summary { text } => {
                self.summaries.push_back(format!("- {} {}", m.ts, text.trim()));
                if self.summaries.len() > SUMMARIES_SHOWN {
                    self.summaries.pop_front();
                }
                self.summaries_total += 1;
            }
            MailBody::Followup { .. } => self.followups += 1,
            _ => {}
        }
    }

    fn link(&mut self, path: &str) {
        if self.linked.iter().any(|p| p == path) {
            return;
        }
        if cost(path) > LINKED_BYTES {
            self.linked_more += 1;
            return;
        }
        self.linked.push_back(path.to_string());
        while self.linked.len() > LINKED_SHOWN || self.linked.iter().map(|p| cost(p)).sum::<usize>() > LINKED_BYTES {
            self.linked.pop_front();
            self.linked_more += 1;
        }
    }

    /// `linked_artifacts` as the frontmatter and the notes list it: an entry saying how many
    /// more there are first ([`crate::artifact::meeting::linked_more_entry`]), then the latest.
    pub(crate) fn linked_shown(&self) -> Vec<String> {
        let more = (self.linked_more > 0).then(|| crate::artifact::meeting::linked_more_entry(self.linked_more));
        more.into_iter().chain(self.linked.iter().cloned()).collect()
    }

    /// The notes of an open meeting: its progress summaries so far (the latest).
    pub(crate) fn progress_notes(&self) -> Option<String> {
        if self.summaries.is_empty() {
            return None;
        }
        let earlier = self.summaries_total.saturating_sub(self.summaries.len() as u64);
        let mut text = String::from("Progress so far:\n");
        if earlier > 0 {
            text.push_str(&format!("- ({earlier} earlier summaries are in the log)\n"));
        }
        text.push_str(&self.summaries.iter().cloned().collect::<Vec<_>>().join("\n"));
        text.push('\n');
        Some(text)
    }
}

/// How many bytes a path takes in the frontmatter's list (with its `- ` and newline, roughly).
fn cost(path: &str) -> usize {
    path.len() + 4
}

/// Where a meeting's fold is kept.
pub(crate) fn path(state: &StateDir) -> PathBuf {
    state.0.join("events.folded.json")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(seq: u64, path: &str) -> Mail {
        Mail { seq, id: format!("id{seq}"), ts: format!("t{seq}"), attempt: 1, body: MailBody::Link { path: path.into() } }
    }

    #[test]
    fn the_latest_links_each_once_and_a_count_of_the_rest() {
        let mut f = Folded::default();
        for i in 0..3000u64 {
            f.take(&link(i, &format!(".lore/flood/artifact-{i:05}.md")));
        }
        f.take(&link(3000, ".lore/flood/artifact-02999.md"));
        let shown = f.linked_shown();
        assert_eq!(shown.len(), LINKED_SHOWN + 1);
        assert_eq!(shown[0], "(2950 more linked artifacts, see the log)");
        assert_eq!(shown[1], ".lore/flood/artifact-02950.md");
        assert_eq!(shown[LINKED_SHOWN], ".lore/flood/artifact-02999.md", "a link already listed is not listed twice");
        // Long paths: within the byte budget, and one too long to list is only counted.
        let mut f = Folded::default();
        for i in 0..40u64 {
            f.take(&link(i, &format!("{i}/{}", "d".repeat(1000))));
        }
        f.take(&link(41, &"x".repeat(LINKED_BYTES)));
        assert!(f.linked.iter().map(|p| p.len() + 4).sum::<usize>() <= LINKED_BYTES);
        assert_eq!(f.linked.len() as u64 + f.linked_more, 41);
        assert!(f.linked.back().is_some_and(|p| p.starts_with("39/")));
    }

    #[test]
    fn the_latest_summaries_and_how_many_came_before() {
        let mut f = Folded::default();
        for i in 0..12u64 {
            f.take(&Mail {
                seq: i,
                id: format!("s{i}"),
                ts: format!("t{i}"),
                attempt: 1,
                body: MailBody::Summary { text: format!("step {i}") },
            });
        }
        let notes = f.progress_notes().expect("notes");
        assert!(notes.starts_with("Progress so far:\n- (2 earlier summaries are in the log)\n- t2 step 2\n"), "{notes}");
        assert!(notes.ends_with("- t11 step 11\n"), "{notes}");
    }
}
