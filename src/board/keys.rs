//! Keys to what they do: moving, the detail pane, the filter, help and the `y/n` question are
//! the board's own state, changed here; everything that acts on a project comes out as a
//! [`Command`] for [`super::act`] to carry out through the operations. Pure: no I/O.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use super::model::{Item, Kind};

/// What a key asks the board to do to the selected item or the session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Command {
    Quit,
    /// Cancel a commission or a plan (asked `y/n` first).
    Cancel,
    /// Re-dispatch a failed or cancelled commission; retry a halted plan.
    Redispatch,
    /// Dispatch a draft (or a pending commission waiting for `dispatch: manual`).
    Dispatch,
    /// Accept a meeting request (and talk: `meeting chat`).
    Accept,
    /// Decline a meeting request.
    Decline,
    /// `meeting chat` on an open meeting.
    Chat,
    /// The full log in `$PAGER`.
    Log,
    /// The artifact in `$EDITOR`.
    Edit,
    /// A new commission from a template in `$EDITOR`.
    New,
    /// Run a reconciler (`guild-hall watch`) in the background for this session.
    Reconcile,
    /// Approve a commission in review: its work merged (asked `y/n` first).
    Approve,
    /// Send a commission in review back with the comment typed ([`Ui::comment`]).
    Revise,
    /// Reject a commission in review: cancelled, its branch kept (asked `y/n` first).
    Reject,
    /// Answer the commission's worker's open question with what was typed ([`Ui::typed`]).
    Answer,
    /// Give a commission up for good: `abandoned` (asked `y/n` first).
    Abandon,
}

/// Where the keys go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Mode {
    List,
    /// Typing the filter.
    Filter,
    /// Asked `y/n` before the command is carried out on the item asked about: its kind,
    /// project and id (a `y` when the selection has moved to another item does nothing).
    Confirm(Command, (Kind, usize, String)),
    /// Typing the comment a revision is sent back with (of the item asked about).
    Comment((Kind, usize, String)),
    /// Typing an answer to the worker's open question of the item asked about (sent on Enter,
    /// only if that item is still the one selected).
    Answer((Kind, usize, String)),
    Help,
}

/// The board's own state: the selection, the filter, the pane, the line at the bottom.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Ui {
    /// Index into the items the filter keeps.
    pub(crate) selected: usize,
    /// The id of the selected item (and its kind), so that the selection follows it when the
    /// list is re-sorted under it.
    pub(crate) selected_id: Option<(Kind, usize, String)>,
    pub(crate) filter: String,
    pub(crate) mode: Mode,
    pub(crate) detail: bool,
    /// The pane shows the selected item's diff instead of its detail (`D`).
    pub(crate) diff: bool,
    /// What the last command did, or why it could not.
    pub(crate) message: Option<String>,
    /// Lines the detail pane is scrolled down (negative: up) from where it starts: its top, or
    /// its end for a running worker.
    pub(crate) scroll: i32,
    /// The comment typed for a revision (`v`), kept until it is sent.
    pub(crate) comment: String,
    /// The answer being typed ([`Mode::Answer`]), kept for [`Command::Answer`] to send.
    pub(crate) typed: String,
}

impl Default for Ui {
    fn default() -> Self {
        Ui {
            selected: 0,
            selected_id: None,
            filter: String::new(),
            mode: Mode::List,
            detail: false,
            diff: false,
            message: None,
            scroll: 0,
            comment: String::new(),
            typed: String::new(),
        }
    }
}

/// What `c` does for an item: ask before cancelling it, or nothing, saying why.
enum CancelKey {
    Ask(String),
    NotHere(&'static str),
}

fn cancel_question(item: &Item) -> CancelKey {
    match item.kind {
        Kind::Meeting => CancelKey::NotHere("a meeting is closed from its chat (m, then /close), not cancelled"),
        _ => CancelKey::Ask(format!("cancel {}? y/n", item.named())),
    }
}

/// A commission in review, which `a`, `v` and `x` answer (approve, revise, reject).
fn in_review(item: &Item) -> bool {
    item.kind == Kind::Commission && item.status == "review"
}

impl Ui {
    /// Handle one key; `visible` is how many items the filter keeps and `item` the selected one.
    /// What must act on the project is returned; the rest is done to `self`.
    pub(crate) fn on_key(&mut self, key: KeyEvent, visible: usize, item: Option<&Item>) -> Option<Command> {
        if key.kind == KeyEventKind::Release {
            return None;
        }
        if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
            return Some(Command::Quit);
        }
        match self.mode.clone() {
            Mode::Help => {
                self.mode = Mode::List;
                None
            }
            Mode::Confirm(cmd, asked) => {
                self.mode = Mode::List;
                if matches!(key.code, KeyCode::Char('y') | KeyCode::Char('Y')) {
                    // The list moves under the question (the item finished and left the
                    // filter, say): only the item asked about is acted on.
                    if item.map(|i| (i.kind, i.project, i.id.as_str())) != Some((asked.0, asked.1, asked.2.as_str())) {
                        self.message = Some(format!("not done: {} is no longer the one selected", asked.2));
                        return None;
                    }
                    self.message = None;
                    Some(cmd)
                } else {
                    self.message = Some("not done".into());
                    None
                }
            }
            Mode::Comment(asked) => {
                match key.code {
                    KeyCode::Enter if !self.comment.trim().is_empty() => {
                        self.mode = Mode::List;
                        if item.map(|i| (i.kind, i.project, i.id.as_str())) != Some((asked.0, asked.1, asked.2.as_str())) {
                            self.message = Some(format!("not sent: {} is no longer the one selected", asked.2));
                            return None;
                        }
                        return Some(Command::Revise);
                    }
                    KeyCode::Esc => {
                        self.mode = Mode::List;
                        self.comment.clear();
                        self.message = Some("not sent".into());
                    }
                    KeyCode::Backspace => {
                        self.comment.pop();
                    }
                    KeyCode::Char(c) if !c.is_control() && !key.modifiers.contains(KeyModifiers::CONTROL) => self.comment.push(c),
                    _ => {}
                }
                None
            }
            Mode::Answer(asked) => {
                match key.code {
                    KeyCode::Esc => {
                        self.mode = Mode::List;
                        self.message = Some("not answered".into());
                    }
                    KeyCode::Enter => {
                        self.mode = Mode::List;
                        if self.typed.trim().is_empty() {
                            self.message = Some("not answered: nothing typed".into());
                        } else if item.map(|i| (i.kind, i.project, i.id.as_str())) != Some((asked.0, asked.1, asked.2.as_str())) {
                            self.message = Some(format!("not answered: {} is no longer the one selected", asked.2));
                        } else {
                            return Some(Command::Answer);
                        }
                    }
                    KeyCode::Backspace => {
                        self.typed.pop();
                    }
                    KeyCode::Char('u') if key.modifiers.contains(KeyModifiers::CONTROL) => self.typed.clear(),
                    KeyCode::Char(c) if !c.is_control() && !key.modifiers.contains(KeyModifiers::CONTROL) => self.typed.push(c),
                    _ => {}
                }
                None
            }
            Mode::Filter => {
                let control = key.modifiers.contains(KeyModifiers::CONTROL);
                match key.code {
                    KeyCode::Char('u') if control => self.filter.clear(),
                    KeyCode::Char(_) if control => {}
                    KeyCode::Enter => self.mode = Mode::List,
                    KeyCode::Esc => {
                        self.filter.clear();
                        self.mode = Mode::List;
                    }
                    KeyCode::Backspace => {
                        self.filter.pop();
                    }
                    KeyCode::Char(c) if !c.is_control() => self.filter.push(c),
                    _ => {}
                }
                self.selected = 0;
                None
            }
            Mode::List => self.list_key(key, visible, item),
        }
    }

    /// Lines a PgUp/PgDn scrolls the pane: a diff by a screenful's worth, the detail by five.
    fn scroll_step(&self) -> i32 {
        if self.diff {
            DIFF_STEP
        } else {
            5
        }
    }

    // Long: one arm per key, the list's whole keymap in one place (as its help shows it).
    fn list_key(&mut self, key: KeyEvent, visible: usize, item: Option<&Item>) -> Option<Command> {
        let last = visible.saturating_sub(1);
        self.message = None;
        let needs_item = |cmd: Command| item.map(|_| cmd);
        match key.code {
            KeyCode::Char('q') => Some(Command::Quit),
            KeyCode::Up | KeyCode::Char('k') => {
                self.selected = self.selected.saturating_sub(1);
                None
            }
            KeyCode::Down | KeyCode::Char('j') => {
                self.selected = (self.selected + 1).min(last);
                None
            }
            // With the detail pane open, PgUp/PgDn scroll it; else they move ten rows.
            KeyCode::PageUp if self.detail => {
                self.scroll = (self.scroll - self.scroll_step()).max(-500);
                None
            }
            KeyCode::PageDown if self.detail => {
                self.scroll = (self.scroll + self.scroll_step()).min(MAX_SCROLL);
                None
            }
            KeyCode::PageUp => {
                self.selected = self.selected.saturating_sub(10);
                None
            }
            KeyCode::PageDown => {
                self.selected = (self.selected + 10).min(last);
                None
            }
            KeyCode::Home | KeyCode::Char('g') => {
                self.selected = 0;
                None
            }
            KeyCode::End | KeyCode::Char('G') => {
                self.selected = last;
                None
            }
            KeyCode::Enter => {
                self.detail = !self.detail;
                self.diff = false;
                None
            }
            KeyCode::Esc => {
                self.detail = false;
                self.diff = false;
                None
            }
            // The diff pane, from the top; `D` again closes it.
            KeyCode::Char('D') => {
                let open = !(self.detail && self.diff);
                (self.detail, self.diff, self.scroll) = (open, open, 0);
                None
            }
            KeyCode::Char('/') => {
                self.mode = Mode::Filter;
                None
            }
            KeyCode::Char('?') => {
                self.mode = Mode::Help;
                None
            }
            KeyCode::Char('c') => {
                let item = item?;
                match cancel_question(item) {
                    CancelKey::Ask(q) => {
                        self.message = Some(q);
                        self.mode = Mode::Confirm(Command::Cancel, (item.kind, item.project, item.id.clone()));
                    }
                    CancelKey::NotHere(why) => self.message = Some(why.to_string()),
                }
                None
            }
            KeyCode::Char('t') => {
                let item = item?;
                if item.kind != Kind::Commission {
                    self.message = Some("t answers a commission's worker's question".into());
                    return None;
                }
                self.typed.clear();
                self.mode = Mode::Answer((item.kind, item.project, item.id.clone()));
                None
            }
            KeyCode::Char('X') => {
                let item = item?;
                if item.kind != Kind::Commission {
                    self.message = Some("X abandons a commission".into());
                    return None;
                }
                self.message = Some(format!("abandon {}: give it up for good? y/n", item.named()));
                self.mode = Mode::Confirm(Command::Abandon, (item.kind, item.project, item.id.clone()));
                None
            }
            KeyCode::Char('r') => needs_item(Command::Redispatch),
            KeyCode::Char('d') => needs_item(Command::Dispatch),
            KeyCode::Char('a' | 'x') if item.is_some_and(in_review) => {
                let item = item?;
                let (cmd, q) = if key.code == KeyCode::Char('a') {
                    (Command::Approve, format!("approve {}: merge its work? y/n", item.named()))
                } else {
                    (Command::Reject, format!("reject {}: cancel it, its branch kept? y/n", item.named()))
                };
                self.message = Some(q);
                self.mode = Mode::Confirm(cmd, (item.kind, item.project, item.id.clone()));
                None
            }
            KeyCode::Char('v') => {
                let item = item?;
                if in_review(item) {
                    self.comment.clear();
                    self.mode = Mode::Comment((item.kind, item.project, item.id.clone()));
                } else {
                    self.message = Some("v sends a commission in review back with a comment".into());
                }
                None
            }
            KeyCode::Char('a') => needs_item(Command::Accept),
            KeyCode::Char('x') => needs_item(Command::Decline),
            KeyCode::Char('m') => needs_item(Command::Chat),
            KeyCode::Char('l') => needs_item(Command::Log),
            KeyCode::Char('e') => needs_item(Command::Edit),
            KeyCode::Char('n') => Some(Command::New),
            KeyCode::Char('w') => Some(Command::Reconcile),
            _ => None,
        }
    }
}

/// How far down the pane scrolls (a long diff; the view stops at its end).
const MAX_SCROLL: i32 = u16::MAX as i32;

/// Lines a PgUp/PgDn scrolls the diff pane.
const DIFF_STEP: i32 = 10;

/// The keys, as the footer and the help list them.
pub(crate) const HELP: [(&str, &str); 23] = [
    ("↑/↓ j/k", "move (g/G: first, last; PgUp/PgDn: ten, or scroll the detail)"),
    ("Enter", "open or close the detail pane"),
    ("D", "the diff pane: the change a commission or a plan's tasks bring (D closes)"),
    ("/", "filter: words, status:S, worker:W (Ctrl-U, Esc clear)"),
    ("c", "cancel a commission or a plan (asks y/n)"),
    ("r", "re-dispatch a failed/cancelled commission; retry a halted plan"),
    ("d", "dispatch a draft commission"),
    ("a", "accept a meeting request, then chat; approve a commission in review"),
    ("x", "decline a meeting request; reject a commission in review"),
    ("X", "abandon a pending, blocked, failed or cancelled commission: given up for good"),
    ("v", "send a commission in review back: type a comment, Enter"),
    ("", "(review: its work is on its branch, nothing merged)"),
    ("m", "chat in an open meeting (meeting chat; Ctrl-D returns)"),
    ("l", "the full log in $PAGER"),
    ("e", "the artifact in $EDITOR"),
    ("n", "a new commission from a template in $EDITOR"),
    ("t", "answer the worker's open question (type it, Enter; Esc: not)"),
    ("w", "run a reconciler for this session (when none runs)"),
    ("?", "this help"),
    ("q", "quit"),
    ("", ""),
    ("", "Every action writes what `guild-hall commission|plan|meeting`"),
    ("", "would: the same operations, the same files."),
];

#[cfg(test)]
mod tests {
    use super::*;

    fn key(c: KeyCode) -> KeyEvent {
        KeyEvent::new(c, KeyModifiers::NONE)
    }

    fn item(kind: Kind, status: &str) -> Item {
        Item { worker: String::new(), attempt: 0, ..Item::example(kind, "x", status) }
    }

    #[test]
    fn moving_stays_inside_the_list() {
        let mut ui = Ui::default();
        ui.on_key(key(KeyCode::Up), 3, None);
        assert_eq!(ui.selected, 0);
        for _ in 0..5 {
            ui.on_key(key(KeyCode::Char('j')), 3, None);
        }
        assert_eq!(ui.selected, 2);
        ui.on_key(key(KeyCode::Char('k')), 3, None);
        assert_eq!(ui.selected, 1);
        ui.on_key(key(KeyCode::Char('G')), 3, None);
        assert_eq!(ui.selected, 2);
        ui.on_key(key(KeyCode::Char('g')), 3, None);
        assert_eq!(ui.selected, 0);
        ui.on_key(key(KeyCode::Down), 0, None);
        assert_eq!(ui.selected, 0, "an empty list has nothing to select");
    }

    /// On a commission in review, `a` approves and `x` rejects (each asked y/n), `v` sends it
    /// back with the comment typed; on a meeting `a` and `x` still accept and decline.
    #[test]
    fn review_keys_approve_revise_and_reject() {
        let c = item(Kind::Commission, "review");
        let mut ui = Ui::default();
        assert_eq!(ui.on_key(key(KeyCode::Char('a')), 1, Some(&c)), None);
        assert_eq!(ui.mode, Mode::Confirm(Command::Approve, (Kind::Commission, 0, "x".into())));
        assert_eq!(ui.on_key(key(KeyCode::Char('y')), 1, Some(&c)), Some(Command::Approve));
        assert_eq!(ui.on_key(key(KeyCode::Char('x')), 1, Some(&c)), None);
        assert_eq!(ui.on_key(key(KeyCode::Char('y')), 1, Some(&c)), Some(Command::Reject));
        assert_eq!(ui.on_key(key(KeyCode::Char('v')), 1, Some(&c)), None);
        assert_eq!(ui.on_key(key(KeyCode::Enter), 1, Some(&c)), None, "an empty comment is not sent");
        for ch in "no q".chars() {
            assert_eq!(ui.on_key(key(KeyCode::Char(ch)), 1, Some(&c)), None, "typed, not a key");
        }
        assert_eq!(ui.on_key(key(KeyCode::Enter), 1, Some(&c)), Some(Command::Revise));
        assert_eq!(ui.comment, "no q");
        assert_eq!(ui.mode, Mode::List);
        let running = item(Kind::Commission, "in_progress");
        assert_eq!(ui.on_key(key(KeyCode::Char('v')), 1, Some(&running)), None);
        assert_eq!(ui.mode, Mode::List);
        let m = item(Kind::Meeting, "requested");
        assert_eq!(ui.on_key(key(KeyCode::Char('a')), 1, Some(&m)), Some(Command::Accept));
        assert_eq!(ui.on_key(key(KeyCode::Char('x')), 1, Some(&m)), Some(Command::Decline));
    }

    #[test]
    fn cancel_asks_first_and_only_y_carries_it_out() {
        let c = item(Kind::Commission, "in_progress");
        let mut ui = Ui::default();
        assert_eq!(ui.on_key(key(KeyCode::Char('c')), 1, Some(&c)), None);
        assert_eq!(ui.mode, Mode::Confirm(Command::Cancel, (Kind::Commission, 0, "x".into())));
        assert_eq!(ui.message.as_deref(), Some("cancel commission x? y/n"));
        assert_eq!(ui.on_key(key(KeyCode::Char('n')), 1, Some(&c)), None);
        assert_eq!(ui.mode, Mode::List);
        ui.on_key(key(KeyCode::Char('c')), 1, Some(&c));
        assert_eq!(ui.on_key(key(KeyCode::Char('y')), 1, Some(&c)), Some(Command::Cancel));
        // The list moved under the question: another item selected when `y` comes.
        let other = Item { id: "other".into(), ..c.clone() };
        ui.on_key(key(KeyCode::Char('c')), 2, Some(&c));
        assert_eq!(ui.on_key(key(KeyCode::Char('y')), 1, Some(&other)), None, "never the item not asked about");
        assert_eq!(ui.message.as_deref(), Some("not done: x is no longer the one selected"));
        ui.on_key(key(KeyCode::Char('c')), 1, Some(&c));
        assert_eq!(ui.on_key(key(KeyCode::Char('y')), 0, None), None, "nor when it is gone");
        // A meeting is not cancelled: said why, nothing asked.
        let m = item(Kind::Meeting, "open");
        assert_eq!(ui.on_key(key(KeyCode::Char('c')), 1, Some(&m)), None);
        assert_eq!(ui.mode, Mode::List);
        assert!(ui.message.as_deref().is_some_and(|w| w.contains("/close")));
    }

    #[test]
    fn the_filter_is_typed_then_kept_or_cleared() {
        let mut ui = Ui { selected: 4, ..Ui::default() };
        ui.on_key(key(KeyCode::Char('/')), 9, None);
        for c in "status:failed".chars() {
            ui.on_key(key(KeyCode::Char(c)), 9, None);
        }
        // Keys that act in the list are text while typing.
        assert_eq!(ui.on_key(key(KeyCode::Char('q')), 9, None), None);
        ui.on_key(key(KeyCode::Backspace), 9, None);
        ui.on_key(key(KeyCode::Enter), 9, None);
        assert_eq!((ui.filter.as_str(), &ui.mode, ui.selected), ("status:failed", &Mode::List, 0));
        ui.on_key(key(KeyCode::Char('/')), 9, None);
        ui.on_key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL), 9, None);
        assert_eq!((ui.filter.as_str(), &ui.mode), ("", &Mode::Filter), "Ctrl-U clears what is typed");
        ui.on_key(key(KeyCode::Char('x')), 9, None);
        ui.on_key(key(KeyCode::Esc), 9, None);
        assert_eq!(ui.filter, "");
    }

    #[test]
    fn d_opens_the_diff_pane_from_its_top_and_closes_it() {
        let c = item(Kind::Commission, "completed");
        let mut ui = Ui { scroll: 7, ..Ui::default() };
        assert_eq!(ui.on_key(key(KeyCode::Char('D')), 1, Some(&c)), None);
        assert_eq!((ui.detail, ui.diff, ui.scroll), (true, true, 0));
        ui.on_key(key(KeyCode::PageDown), 1, Some(&c));
        ui.on_key(key(KeyCode::PageDown), 1, Some(&c));
        assert_eq!(ui.scroll, 2 * DIFF_STEP, "PgDn scrolls the diff");
        ui.on_key(key(KeyCode::Char('D')), 1, Some(&c));
        assert_eq!((ui.detail, ui.diff), (false, false));
        // From the detail pane, D shows the diff; Enter goes back to the detail.
        ui.on_key(key(KeyCode::Enter), 1, Some(&c));
        ui.on_key(key(KeyCode::Char('D')), 1, Some(&c));
        assert_eq!((ui.detail, ui.diff), (true, true));
        ui.on_key(key(KeyCode::Enter), 1, Some(&c));
        assert_eq!((ui.detail, ui.diff), (false, false));
    }

    #[test]
    fn an_answer_is_typed_then_sent_for_the_item_asked_about() {
        let c = item(Kind::Commission, "in_progress");
        let mut ui = Ui::default();
        assert_eq!(ui.on_key(key(KeyCode::Char('t')), 1, Some(&c)), None);
        assert_eq!(ui.mode, Mode::Answer((Kind::Commission, 0, "x".into())));
        for ch in "blue q".chars() {
            assert_eq!(ui.on_key(key(KeyCode::Char(ch)), 1, Some(&c)), None, "keys that act in the list are text while typing");
        }
        ui.on_key(key(KeyCode::Backspace), 1, Some(&c));
        ui.on_key(key(KeyCode::Backspace), 1, Some(&c));
        assert_eq!(ui.on_key(key(KeyCode::Enter), 1, Some(&c)), Some(Command::Answer));
        assert_eq!((ui.typed.as_str(), &ui.mode), ("blue", &Mode::List));
        // Nothing typed, another item selected, Esc: nothing sent.
        ui.on_key(key(KeyCode::Char('t')), 1, Some(&c));
        assert_eq!(ui.on_key(key(KeyCode::Enter), 1, Some(&c)), None);
        assert_eq!(ui.message.as_deref(), Some("not answered: nothing typed"));
        ui.on_key(key(KeyCode::Char('t')), 1, Some(&c));
        ui.on_key(key(KeyCode::Char('y')), 1, Some(&c));
        let other = Item { id: "other".into(), ..c.clone() };
        assert_eq!(ui.on_key(key(KeyCode::Enter), 1, Some(&other)), None);
        ui.on_key(key(KeyCode::Char('t')), 1, Some(&c));
        assert_eq!(ui.on_key(key(KeyCode::Esc), 1, Some(&c)), None);
        assert_eq!(ui.message.as_deref(), Some("not answered"));
        // Only a commission's worker asks.
        assert_eq!(ui.on_key(key(KeyCode::Char('t')), 1, Some(&item(Kind::Meeting, "open"))), None);
        assert_eq!(ui.mode, Mode::List);
    }

    #[test]
    fn actions_need_an_item_and_quit_does_not() {
        let mut ui = Ui::default();
        assert_eq!(ui.on_key(key(KeyCode::Char('r')), 0, None), None);
        assert_eq!(ui.on_key(key(KeyCode::Char('n')), 0, None), Some(Command::New));
        let c = item(Kind::Commission, "failed");
        for (k, cmd) in [
            ('r', Command::Redispatch),
            ('d', Command::Dispatch),
            ('a', Command::Accept),
            ('x', Command::Decline),
            ('m', Command::Chat),
            ('l', Command::Log),
            ('e', Command::Edit),
            ('w', Command::Reconcile),
        ] {
            assert_eq!(ui.on_key(key(KeyCode::Char(k)), 1, Some(&c)), Some(cmd), "{k}");
        }
        assert_eq!(ui.on_key(key(KeyCode::Char('q')), 1, Some(&c)), Some(Command::Quit));
        assert_eq!(ui.on_key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL), 1, Some(&c)), Some(Command::Quit));
        ui.on_key(key(KeyCode::Char('?')), 1, Some(&c));
        assert_eq!(ui.mode, Mode::Help);
        assert_eq!(ui.on_key(key(KeyCode::Char('q')), 1, Some(&c)), None, "any key closes the help");
        assert_eq!(ui.mode, Mode::List);
    }
}
