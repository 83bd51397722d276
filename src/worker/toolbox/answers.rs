//! How a person's answer gets back to a worker blocked in `ask`. The question goes out as a
//! mailbox event (`ask`, with the event's unique id); the reconciler numbers it, shows it in
//! the commission's `questions:`, and, once a person answers (or its `ask_timeout` passes),
//! writes the reply into the attempt's answers dir (`answers-<attempt>/` in the commission's
//! state dir), in a file named after the question's event id, written with the artifact and
//! the fold through one intent (so a reconciler killed in between finishes it on its next
//! pass). The worker's sandbox can read that dir but not write it: it cannot answer its own
//! question, nor change which number a person answers, only wait for the file its own event
//! names.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::activity::state::StateDir;

/// The words `ask` returns when no one answered within its `ask_timeout`.
pub(crate) const NO_ANSWER: &str = "no answer: decide yourself and say so in your result";

/// How long `ask` waits when nothing says otherwise.
pub(crate) const DEFAULT_ASK_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// How often a waiting `ask` looks for its answer.
const POLL: Duration = Duration::from_millis(250);

/// The dir the answers to attempt `attempt`'s questions are written in (readable by its worker
/// only, never writable).
pub(crate) fn answers_dir(state: &StateDir, attempt: u32) -> PathBuf {
    state.0.join(format!("answers-{attempt}"))
}

/// The file the reply to the question of event `id` is written in, if `id` can name a file (a
/// mailbox event's id is a UUID, or its line's place: `events-1.jsonl@0`).
pub(crate) fn answer_file(dir: &Path, id: &str) -> Option<PathBuf> {
    let plain = !id.is_empty() && id.len() <= 128 && id.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.@".contains(&b));
    (plain && !id.starts_with('.')).then(|| dir.join(format!("{id}.json")))
}

/// What the reconciler writes for one question: its number and text, and how it was replied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Reply {
    /// The question's number in its attempt (what `guild-hall answer --question` takes).
    pub(crate) question: u32,
    pub(crate) text: String,
    #[serde(flatten)]
    pub(crate) outcome: Outcome,
}

/// How a question was replied to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub(crate) enum Outcome {
    /// A person answered, then.
    Answered { answer: String, answered: String },
    /// No one answered within `ask_timeout` (noticed then).
    TimedOut { timed_out: String },
}

impl Outcome {
    /// What `ask` returns to the worker.
    pub(crate) fn said(&self) -> &str {
        match self {
            Outcome::Answered { answer, .. } => answer,
            Outcome::TimedOut { .. } => NO_ANSWER,
        }
    }
}

/// Wait for the reply to the question of event `id` in `dir`, at most `timeout`: the answer,
/// or [`NO_ANSWER`] once it passes (or the reconciler says it passed). A file that cannot be
/// read yet (being replaced) is read again.
pub(crate) fn wait(dir: &Path, id: &str, timeout: Duration) -> anyhow::Result<String> {
    let Some(file) = answer_file(dir, id) else { anyhow::bail!("the question's event id {id:?} cannot name an answer file") };
    let deadline = Instant::now() + timeout;
    loop {
        if let Ok(Some(reply)) = crate::files::read_json::<Reply>(&file) {
            return Ok(reply.outcome.said().to_string());
        }
        let now = Instant::now();
        if now >= deadline {
            return Ok(NO_ANSWER.to_string());
        }
        std::thread::sleep(POLL.min(deadline - now));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_file_is_named_only_by_a_plain_id() {
        let dir = Path::new("/s/answers-1");
        assert_eq!(answer_file(dir, "0b7e-11").as_deref(), Some(Path::new("/s/answers-1/0b7e-11.json")));
        assert_eq!(answer_file(dir, "events-1.jsonl@3").as_deref(), Some(Path::new("/s/answers-1/events-1.jsonl@3.json")));
        for bad in ["", "../x", "a/b", ".hidden", "a b"] {
            assert_eq!(answer_file(dir, bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_wait_returns_the_answer_or_no_answer() {
        let tmp = tempfile::tempdir().expect("tmp");
        let reply =
            Reply { question: 1, text: "which?".into(), outcome: Outcome::Answered { answer: "blue".into(), answered: "t".into() } };
        crate::files::write_json(&tmp.path().join("q1.json"), &reply).expect("write");
        assert_eq!(wait(tmp.path(), "q1", Duration::from_secs(5)).expect("wait"), "blue");
        assert_eq!(wait(tmp.path(), "q2", Duration::from_millis(10)).expect("wait"), NO_ANSWER);
        let late = Reply { outcome: Outcome::TimedOut { timed_out: "t".into() }, ..reply };
        crate::files::write_json(&tmp.path().join("q3.json"), &late).expect("write");
        assert_eq!(wait(tmp.path(), "q3", Duration::from_secs(5)).expect("wait"), NO_ANSWER);
    }
}
