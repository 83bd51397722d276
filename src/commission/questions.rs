//! A commission's questions to a person and its meeting requests, as folded from its attempt's
//! mailbox (`ask`, `request_meeting`): each asked question numbered, open until a person
//! answers it or its `ask_timeout` passes; how `questions:` shows them; what is written for
//! the blocked worker ([`crate::worker::toolbox::answers`]). Pure: no I/O.

use serde::{Deserialize, Serialize};
use serde_yaml_ng::{Mapping, Value};

use crate::worker::toolbox::answers::{Outcome, Reply};

/// The most questions one attempt may ask; more are ignored and noted (each blocks its worker,
/// but a worker can append to its mailbox without the toolbox).
pub(crate) const ASKS_PER_ATTEMPT: usize = 50;

/// The most meetings one attempt may request; more are ignored and noted.
pub(crate) const MEETINGS_PER_ATTEMPT: usize = 3;

/// One question a worker asked and waits on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Asked {
    /// Its number in the attempt, from 1: what a person answers by (`--question N`).
    pub(crate) number: u32,
    /// Its mailbox event's id: the answer file the worker waits for is named after it.
    pub(crate) id: String,
    pub(crate) text: String,
    /// When it was asked (the event's time).
    pub(crate) asked: String,
    /// How it was replied to; none: open.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) reply: Option<Outcome>,
}

impl Asked {
    pub(crate) fn is_open(&self) -> bool {
        self.reply.is_none()
    }

    /// What the answers dir holds for it, once replied to.
    pub(crate) fn reply_file(&self) -> Option<Reply> {
        let outcome = self.reply.clone()?;
        Some(Reply { question: self.number, text: self.text.clone(), outcome })
    }

    /// Its entry in `questions:`: the question, its number and attempt, when it was asked, and
    /// its answer and when (or when it timed out) once replied to.
    pub(crate) fn entry(&self, attempt: u32) -> Value {
        let mut m = Mapping::new();
        m.insert("question".into(), Value::String(self.text.clone()));
        m.insert("number".into(), Value::from(u64::from(self.number)));
        m.insert("attempt".into(), Value::from(u64::from(attempt)));
        m.insert("asked".into(), Value::String(self.asked.clone()));
        match &self.reply {
            None => {
                m.insert("open".into(), Value::Bool(true));
            }
            Some(Outcome::Answered { answer, answered }) => {
                m.insert("answer".into(), Value::String(answer.clone()));
                m.insert("answered".into(), Value::String(answered.clone()));
            }
            Some(Outcome::TimedOut { timed_out }) => {
                m.insert("timed_out".into(), Value::String(timed_out.clone()));
            }
        }
        Value::Mapping(m)
    }
}

/// A meeting a worker asked for: written once as a `requested` meeting.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct MeetingAsked {
    /// Its mailbox event's number: with the commission and the attempt, the meeting's id.
    pub(crate) seq: u64,
    pub(crate) reason: String,
    /// The meeting was written (or refused): nothing more to do.
    #[serde(default)]
    pub(crate) done: bool,
}

/// A `requested` meeting to write for a commission's worker, as decided: written before the
/// update that marks its request done (a crash in between writes it again: a no-op).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct MeetingToWrite {
    pub(crate) id: String,
    pub(crate) worker: String,
    /// Its agenda.
    pub(crate) reason: String,
    /// The commission's artifact, relative to the project root.
    pub(crate) reference: String,
    pub(crate) requested_by: String,
}

/// The id of the meeting commission `id`'s attempt `attempt` requested in event `seq`: the
/// same on every pass, so writing it again is a no-op.
pub(crate) fn meeting_id(id: &str, attempt: u32, seq: u64) -> String {
    // Within an id's 100 bytes: the commission's id shortened (it is ASCII).
    let stem = id.get(..id.len().min(60)).unwrap_or(id).trim_end_matches('.');
    format!("{stem}-meeting-{attempt}-{seq}")
}

/// Why an ask or a meeting request was not taken in.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum TooMany {
    #[error("question {seq} ignored: an attempt may ask at most {ASKS_PER_ATTEMPT} questions")]
    Asks { seq: u64 },
    #[error("meeting request {seq} ignored: an attempt may request at most {MEETINGS_PER_ATTEMPT} meetings")]
    Meetings { seq: u64 },
}

/// The open question `number` names, or the oldest open one: what an answer answers; why
/// none when none.
pub(crate) fn target(asks: &[Asked], number: Option<u32>) -> Result<usize, String> {
    match number {
        Some(n) => match asks.iter().position(|a| a.number == n) {
            Some(i) if asks[i].is_open() => Ok(i),
            Some(_) => Err(format!("question {n} is not open (it was answered or timed out)")),
            None => Err(format!("there is no question {n} in this attempt")),
        },
        None => asks.iter().position(Asked::is_open).ok_or_else(|| "no question is open".to_string()),
    }
}

/// A question of a worker's waiting for a person, as `questions:` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Open {
    pub(crate) number: u32,
    pub(crate) question: String,
    pub(crate) asked: String,
}

/// The questions commission `c`'s worker waits on, as its `questions:` (as written) shows
/// them: open, of its current attempt, while it is at work (a question of an attempt that
/// ended waits on no one). What `answer`, `status` and the dispatcher read. A hand-edited
/// entry that is not one reads as none.
pub(crate) fn open_in(c: &crate::artifact::Commission) -> Vec<Open> {
    let at_work = c.status.is_some_and(crate::artifact::Status::is_active);
    let Some(Value::Sequence(items)) = c.field("questions").filter(|_| at_work) else { return Vec::new() };
    let attempt = u64::from(c.attempt());
    items
        .iter()
        .filter(|q| q.get("open").and_then(Value::as_bool) == Some(true) && q.get("attempt").and_then(Value::as_u64) == Some(attempt))
        .filter_map(|q| {
            Some(Open {
                number: u32::try_from(q.get("number")?.as_u64()?).ok()?,
                question: q.get("question")?.as_str()?.to_string(),
                asked: q.get("asked").and_then(Value::as_str).unwrap_or_default().to_string(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(number: u32, reply: Option<Outcome>) -> Asked {
        Asked { number, id: format!("e{number}"), text: format!("q{number}"), asked: "t".into(), reply }
    }

    #[test]
    fn an_answer_goes_to_the_named_or_the_oldest_open_question() {
        let answered = Some(Outcome::Answered { answer: "a".into(), answered: "t".into() });
        let asks = [ask(1, answered), ask(2, None), ask(3, None)];
        assert_eq!(target(&asks, None), Ok(1));
        assert_eq!(target(&asks, Some(3)), Ok(2));
        assert!(target(&asks, Some(1)).is_err_and(|e| e.contains("not open")));
        assert!(target(&asks, Some(9)).is_err_and(|e| e.contains("no question 9")));
        assert!(target(&asks[..1], None).is_err());
    }

    #[test]
    fn an_entry_says_open_answered_or_timed_out() {
        let open = ask(1, None).entry(1);
        assert_eq!(open["open"], Value::Bool(true));
        assert_eq!(open["question"], Value::from("q1"));
        let answered = ask(2, Some(Outcome::Answered { answer: "yes".into(), answered: "t2".into() }));
        assert_eq!(answered.entry(1)["answer"], Value::from("yes"));
        assert_eq!(answered.entry(1).get("open"), None);
        assert_eq!(answered.reply_file().map(|r| r.question), Some(2));
        assert_eq!(ask(3, None).reply_file(), None);
        // Shown open: of the current attempt, while it is at work.
        let shown = Value::Sequence(vec![Value::from("logged"), ask(1, None).entry(2), answered.entry(2), ask(3, None).entry(1)]);
        let yaml = serde_yaml_ng::to_string(&shown).expect("yaml");
        let text = |status: &str| {
            let items = yaml.lines().map(|l| format!("  {l}\n")).collect::<String>();
            format!("---\nworker: w\nstatus: {status}\nattempt: 2\nquestions:\n{items}---\nx\n")
        };
        let parse = |status: &str| crate::artifact::Commission::parse(std::path::Path::new("c.md"), &text(status)).expect("parses");
        assert_eq!(open_in(&parse("in_progress")), [Open { number: 1, question: "q1".into(), asked: "t".into() }]);
        assert!(open_in(&parse("failed")).is_empty(), "an ended attempt waits on no one");
    }
}
