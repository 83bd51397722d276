//! Drawing the board: a header, the list (commissions, plans with their waves as rows of task
//! cells, meetings), the detail pane, the message line and the footer of keys. Pure over what
//! it is given ([`Screen`]); colour only when [`Screen::colour`] says so (`NO_COLOR`, `TERM=dumb`).

use chrono::{DateTime, Utc};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span, Text};
use ratatui::widgets::{Block, Clear, List, ListItem, ListState, Paragraph, Wrap};
use ratatui::Frame;

use super::detail::Detail;
use super::keys::{Mode, Ui, HELP};
use super::model::{Item, Kind};

/// Everything one frame shows.
pub(crate) struct Screen<'a> {
    /// The items the filter keeps, in order.
    pub(crate) items: &'a [&'a Item],
    /// How many there are in all, before the filter.
    pub(crate) total: usize,
    pub(crate) ui: &'a Ui,
    /// The projects' names (an item's `project` indexes it).
    pub(crate) projects: &'a [String],
    /// Who carries out what is written: a running `watch`, the board's own, or no one.
    pub(crate) reconciler: &'a str,
    pub(crate) detail: Option<&'a Detail>,
    pub(crate) problems: &'a [String],
    pub(crate) now: DateTime<Utc>,
    /// A counter that moves the spinners of running work.
    pub(crate) tick: u64,
    pub(crate) colour: bool,
}

/// The keys in the footer, `? help` (which lists them all) first.
const FOOTER: [&str; 16] = [
    "? help",
    "q quit",
    "⏎ detail",
    "/ filter",
    "c cancel",
    "r redo",
    "d dispatch",
    "a/x accept/reject",
    "m chat",
    "l log",
    "e edit",
    "n new",
    "t answer",
    "w reconcile",
    "D diff",
    "v revise",
];

/// The footer's lines for a terminal `width` columns wide: the keys two spaces apart, wrapped
/// between keys (never within one), so that none is cut off at any width.
pub(crate) fn footer_lines(width: u16) -> Vec<String> {
    let width = usize::from(width.max(1));
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for key in FOOTER {
        let wanted = line.chars().count() + 2 + key.chars().count();
        if !line.is_empty() && wanted > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push_str("  ");
        }
        line.push_str(key);
    }
    lines.push(line);
    lines
}

const SPINNER: [&str; 4] = ["◐", "◓", "◑", "◒"];

impl Screen<'_> {
    fn style(&self, s: Style) -> Style {
        if self.colour {
            s
        } else {
            Style::default().add_modifier(s.add_modifier & (Modifier::BOLD | Modifier::REVERSED))
        }
    }

    fn status_style(&self, status: &str) -> Style {
        let s = match status {
            "failed" | "invalid" | "orphaned" | "halted" => Style::default().fg(Color::Red).add_modifier(Modifier::BOLD),
            "requested" => Style::default().fg(Color::Yellow).add_modifier(Modifier::BOLD),
            "in_progress" | "dispatched" | "running" | "verifying" | "open" => Style::default().fg(Color::Green),
            "pending" | "blocked" => Style::default().fg(Color::Cyan),
            "draft" => Style::default().fg(Color::Magenta),
            _ => Style::default().fg(Color::DarkGray),
        };
        self.style(s)
    }

    fn cell_style(&self, state: &str) -> Style {
        let s = match state {
            "integrated" => Style::default().fg(Color::Green),
            "succeeded" => Style::default().fg(Color::LightGreen),
            "running" => Style::default().fg(Color::Yellow),
            "failed" => Style::default().fg(Color::Red).add_modifier(Modifier::BOLD),
            "stopped" => Style::default().fg(Color::Magenta),
            _ => Style::default().fg(Color::DarkGray),
        };
        self.style(s)
    }
}

/// The mark a task cell carries, so that its state reads without colour too.
pub(crate) fn cell_mark(state: &str) -> &'static str {
    match state {
        "integrated" => "✓",
        "succeeded" => "+",
        "running" => "▸",
        "failed" => "✗",
        "stopped" => "■",
        _ => "·",
    }
}

/// An age as a list shows it: `12s`, `5m`, `3h`, `2d`.
pub(crate) fn short_age(secs: i64) -> String {
    let s = secs.max(0);
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m", s / 60),
        3600..86400 => format!("{}h", s / 3600),
        _ => format!("{}d", s / 86400),
    }
}

/// `text` cut to `width` characters (an ellipsis when cut), padded to it.
fn fit(text: &str, width: usize) -> String {
    let n = text.chars().count();
    if n > width {
        let mut t: String = text.chars().take(width.saturating_sub(1)).collect();
        t.push('…');
        t
    } else {
        format!("{text}{}", " ".repeat(width - n))
    }
}

pub(crate) fn draw(f: &mut Frame<'_>, s: &Screen<'_>) {
    let area = f.area();
    let list_rows = if s.detail.is_some() { Constraint::Percentage(45) } else { Constraint::Min(1) };
    let detail_rows = if s.detail.is_some() { Constraint::Min(3) } else { Constraint::Length(0) };
    let mut keys = footer_lines(area.width);
    // What the items shown used, in all: after the keys where it fits, else a line of its own.
    if let Some(total) = crate::worker::usage::Usage::sum(s.items.iter().filter_map(|i| i.usage.as_ref())) {
        let used = format!("used {}", total.brief());
        match keys.last_mut() {
            Some(last) if last.chars().count() + 5 + used.chars().count() <= usize::from(area.width) => {
                last.push_str(&format!("  ·  {used}"))
            }
            _ => keys.push(used),
        }
    }
    // The footer takes the lines it needs, but never the list's last row.
    let footer_rows = u16::try_from(keys.len()).unwrap_or(u16::MAX).min(area.height.saturating_sub(3).max(1));
    let [head, list, detail, message, footer] =
        Layout::vertical([Constraint::Length(1), list_rows, detail_rows, Constraint::Length(1), Constraint::Length(footer_rows)])
            .areas(area);
    draw_header(f, s, head);
    draw_list(f, s, list);
    if let Some(d) = s.detail {
        draw_detail(f, s, d, detail);
    }
    draw_message(f, s, message);
    let dim = s.style(Style::default().fg(Color::DarkGray));
    let keys: Vec<Line<'_>> = keys.into_iter().map(|k| Line::from(Span::styled(k, dim))).collect();
    f.render_widget(Paragraph::new(keys), footer);
    if s.ui.mode == Mode::Help {
        draw_help(f, s, area);
    }
}

fn draw_header(f: &mut Frame<'_>, s: &Screen<'_>, area: Rect) {
    let need = s.items.iter().filter(|i| i.need() <= 4).count();
    let mut spans = vec![
        Span::styled("guild-hall board", s.style(Style::default().add_modifier(Modifier::BOLD))),
        Span::raw(format!(" · {} · ", s.projects.join(", "))),
        Span::raw(if s.items.len() == s.total { format!("{} items", s.total) } else { format!("{} of {} items", s.items.len(), s.total) }),
    ];
    if need > 0 {
        spans.push(Span::raw(" · "));
        spans.push(Span::styled(format!("{need} need you"), s.style(Style::default().fg(Color::Red).add_modifier(Modifier::BOLD))));
    }
    if !s.problems.is_empty() {
        spans.push(Span::raw(format!(" · {} unreadable", s.problems.len())));
    }
    if !s.ui.filter.is_empty() && s.ui.mode != Mode::Filter {
        spans.push(Span::raw(format!(" · filter: {}", s.ui.filter)));
    }
    f.render_widget(Paragraph::new(Line::from(spans)), area);
}

fn draw_list(f: &mut Frame<'_>, s: &Screen<'_>, area: Rect) {
    if s.items.is_empty() {
        let words = if s.total == 0 {
            "nothing here yet: n writes a new commission (or write one under .lore/commissions/)".to_string()
        } else {
            format!("nothing matches the filter {:?} (/ then Esc clears it)", s.ui.filter)
        };
        f.render_widget(Paragraph::new(words).wrap(Wrap { trim: true }), area);
        return;
    }
    // Only the rows that can show around the selection are made: a list of 10,000 costs what
    // a screenful does.
    let selected = s.ui.selected.min(s.items.len() - 1);
    let height = usize::from(area.height);
    let window = &s.items[selected.saturating_sub(height)..(selected + height).min(s.items.len())];
    // Several projects: the id is named with its project, and the column is wider for it.
    let widest = if s.projects.len() > 1 { 40 } else { 24 };
    let id_width = window.iter().map(|i| id_of(s, i).chars().count()).max().unwrap_or(4).clamp(4, widest);
    let rows: Vec<ListItem<'_>> = window.iter().map(|i| ListItem::new(row(s, i, id_width))).collect();
    let mut state = ListState::default().with_selected(Some(selected - selected.saturating_sub(height)));
    let list = List::new(rows).highlight_symbol("> ").highlight_style(s.style(Style::default().add_modifier(Modifier::REVERSED)));
    f.render_stateful_widget(list, area, &mut state);
}

fn id_of(s: &Screen<'_>, i: &Item) -> String {
    if s.projects.len() > 1 {
        format!("{}/{}", s.projects.get(i.project).map(String::as_str).unwrap_or("?"), i.id)
    } else {
        i.id.clone()
    }
}

/// One item's lines: its row, and for a plan one more line a wave.
fn row<'a>(s: &Screen<'_>, i: &'a Item, id_width: usize) -> Text<'a> {
    let dim = s.style(Style::default().fg(Color::DarkGray));
    let spin = if i.alive { SPINNER[(s.tick % 4) as usize] } else { " " };
    let age = i.created.map(|c| short_age((s.now - c).num_seconds())).unwrap_or_default();
    let beat = i.heartbeat.map(|h| short_age((s.now - h).num_seconds())).unwrap_or_default();
    let attempt = if i.attempt > 0 { format!("#{}", i.attempt) } else { String::new() };
    let mut note = i.note.clone();
    if i.kind == Kind::Plan {
        let at = i.current_wave().map(|w| format!("wave {w}/{}", i.waves.len())).unwrap_or_else(|| format!("{} waves", i.waves.len()));
        let verify = i.verify.as_ref().map(|v| format!(" · verify: {v}")).unwrap_or_default();
        note = if note.is_empty() { format!("{at}{verify}") } else { format!("{at}{verify} · {note}") };
    }
    if i.questions > 0 {
        note = format!("{} question{} · {note}", i.questions, if i.questions == 1 { "" } else { "s" });
    }
    let mut lines = vec![Line::from(vec![
        Span::styled(format!("{} ", i.kind.word()), dim),
        Span::styled(format!("{spin}{} ", fit(&i.status, 11)), s.status_style(&i.status)),
        Span::raw(format!("{} ", fit(&id_of(s, i), id_width))),
        Span::raw(format!("{} ", fit(&i.worker, 9))),
        Span::styled(format!("{attempt:>3} {age:>4} {beat:>4} "), dim),
        Span::styled(i.usage.map(|u| format!("{} ", u.brief())).unwrap_or_default(), dim),
        Span::raw(note),
    ])];
    for (w, cells) in i.waves.iter().enumerate() {
        let current = i.current_wave() == Some(w + 1);
        let mut spans = vec![Span::styled(format!("      {} w{} ", if current { "▸" } else { " " }, w + 1), dim)];
        for c in cells {
            spans.push(Span::styled(format!("{}{}", cell_mark(&c.state), c.label), s.cell_style(&c.state)));
            spans.push(Span::raw(" "));
        }
        lines.push(Line::from(spans));
    }
    Text::from(lines)
}

fn draw_detail(f: &mut Frame<'_>, s: &Screen<'_>, d: &Detail, area: Rect) {
    let heading = s.style(Style::default().add_modifier(Modifier::BOLD).fg(Color::Blue));
    let mut lines = Vec::new();
    for (title, body) in &d.sections {
        if body.is_empty() {
            continue;
        }
        lines.push(Line::from(Span::styled(title.clone(), heading)));
        if title == super::detail::PATCH {
            lines.extend(patch_lines(s, body));
            continue;
        }
        for l in body {
            lines.push(Line::from(format!("  {l}")));
        }
    }
    // The end of the log is what matters while it runs: scroll so the last lines show.
    // PgUp/PgDn move it from there.
    let inner = area.height.saturating_sub(2) as usize;
    let last = lines.len().saturating_sub(inner);
    let start = if d.follow { last as i64 } else { 0 };
    let scroll = (start + i64::from(s.ui.scroll)).clamp(0, last as i64);
    let block = Block::bordered().title(format!(" {} ", d.title));
    let p = Paragraph::new(lines).block(block).scroll((u16::try_from(scroll).unwrap_or(u16::MAX), 0));
    f.render_widget(p, area);
}

/// A patch's lines coloured as git colours them: headers bold, hunks cyan, added green,
/// removed red.
fn patch_lines(s: &Screen<'_>, body: &[String]) -> Vec<Line<'static>> {
    use crate::activity::diff::Part;
    let joined = body.join("\n");
    crate::activity::diff::parts(&joined)
        .map(|(part, l)| {
            let style = match part {
                Part::Header => Style::default().add_modifier(Modifier::BOLD),
                Part::Hunk => Style::default().fg(Color::Cyan),
                Part::Added => Style::default().fg(Color::Green),
                Part::Removed => Style::default().fg(Color::Red),
                Part::Context => Style::default(),
            };
            Line::from(Span::styled(format!("  {l}"), s.style(style)))
        })
        .collect()
}

fn draw_message(f: &mut Frame<'_>, s: &Screen<'_>, area: Rect) {
    let line = match &s.ui.mode {
        Mode::Filter => Line::from(vec![Span::raw("/"), Span::raw(s.ui.filter.clone()), Span::raw("█")]),
        Mode::Comment((_, _, id)) => {
            Line::from(vec![Span::raw(format!("revise {id} (Enter sends, Esc drops): ")), Span::raw(s.ui.comment.clone()), Span::raw("█")])
        }
        Mode::Answer((_, _, id)) => Line::from(vec![Span::raw(format!("answer {id}: ")), Span::raw(s.ui.typed.clone()), Span::raw("█")]),
        _ => {
            let who = Span::styled(format!("[{}]", s.reconciler), s.style(Style::default().fg(Color::Cyan)));
            match (&s.ui.message, s.problems.first()) {
                (Some(m), _) => {
                    Line::from(vec![who, Span::raw(" "), Span::styled(m.clone(), s.style(Style::default().add_modifier(Modifier::BOLD)))])
                }
                // A file that cannot be read is named until it can (as `check` names it).
                (None, Some(p)) => {
                    let more = match s.problems.len() {
                        1 => String::new(),
                        n => format!(" (and {} more: guild-hall check)", n - 1),
                    };
                    Line::from(vec![who, Span::raw(" "), Span::styled(format!("{p}{more}"), s.style(Style::default().fg(Color::Red)))])
                }
                (None, None) => Line::from(who),
            }
        }
    };
    f.render_widget(Paragraph::new(line), area);
}

fn draw_help(f: &mut Frame<'_>, s: &Screen<'_>, area: Rect) {
    let w = area.width.min(76);
    let h = (HELP.len() as u16 + 2).min(area.height);
    let at = Rect { x: area.x + (area.width - w) / 2, y: area.y + (area.height - h) / 2, width: w, height: h };
    let lines: Vec<Line<'_>> = HELP
        .iter()
        .map(|(k, what)| {
            Line::from(vec![Span::styled(format!("{k:>8}  "), s.style(Style::default().add_modifier(Modifier::BOLD))), Span::raw(*what)])
        })
        .collect();
    f.render_widget(Clear, at);
    f.render_widget(Paragraph::new(lines).block(Block::bordered().title(" keys (any key closes) ")), at);
}

#[cfg(test)]
mod tests {
    use super::super::model::Cell;
    use super::*;
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;

    fn item(kind: Kind, id: &str, status: &str, note: &str) -> Item {
        Item { note: note.into(), ..Item::example(kind, id, status) }
    }

    fn render(items: &[&Item], ui: &Ui, detail: Option<&Detail>, colour: bool, w: u16, h: u16) -> ratatui::buffer::Buffer {
        let mut t = Terminal::new(TestBackend::new(w, h)).expect("terminal");
        let projects = vec!["demo".to_string()];
        let s = Screen {
            items,
            total: items.len(),
            ui,
            projects: &projects,
            reconciler: "watch: running",
            detail,
            problems: &[],
            now: Utc::now(),
            tick: 0,
            colour,
        };
        t.draw(|f| draw(f, &s)).expect("draw");
        t.backend().buffer().clone()
    }

    fn text(b: &ratatui::buffer::Buffer) -> String {
        let mut out = String::new();
        for y in 0..b.area.height {
            for x in 0..b.area.width {
                out.push_str(b[(x, y)].symbol());
            }
            out.push('\n');
        }
        out
    }

    #[test]
    fn at_80_by_24_every_part_shows() {
        let failed = item(Kind::Commission, "survey", "failed", "process unresponsive");
        let mut plan = item(Kind::Plan, "port", "running", "");
        plan.waves = vec![
            vec![Cell { label: "one".into(), state: "integrated".into() }, Cell { label: "two".into(), state: "running".into() }],
            vec![Cell { label: "three".into(), state: "queued".into() }],
        ];
        plan.wave = Some(1);
        let detail = Detail { title: "commission survey".into(), sections: vec![("log".into(), vec!["last line".into()])], follow: true };
        let ui = Ui { detail: true, ..Ui::default() };
        let b = render(&[&failed, &plan], &ui, Some(&detail), true, 80, 24);
        let t = text(&b);
        for want in [
            "guild-hall board",
            "> comm",
            "failed",
            "survey",
            "process unresponsive",
            "wave 1/2",
            "✓one",
            "▸two",
            "·three",
            "last line",
            "[watch: running]",
            "? help",
        ] {
            assert!(t.contains(want), "{want:?} missing from:\n{t}");
        }
        // The failed status is red with colour on; nothing is coloured with it off.
        let at = t.lines().position(|l| l.contains("survey")).expect("row") as u16;
        let x = t.lines().nth(at as usize).and_then(|l| l.find("failed")).expect("status") as u16;
        let x = t.lines().nth(at as usize).map(|l| l[..x as usize].chars().count() as u16).unwrap_or(x);
        assert_eq!(b[(x, at)].fg, Color::Red);
        let plain = render(&[&failed, &plan], &ui, Some(&detail), false, 80, 24);
        for y in 0..24 {
            for x in 0..80 {
                assert_eq!((plain[(x, y)].fg, plain[(x, y)].bg), (Color::Reset, Color::Reset), "coloured at {x},{y}:\n{}", text(&plain));
            }
        }
    }

    #[test]
    fn each_item_shows_what_it_used_and_the_footer_their_total() {
        use crate::worker::usage::{Usage, Usd};
        let mut paid = item(Kind::Commission, "paid", "completed", "done");
        paid.usage = Some(Usage { input_tokens: 1200, output_tokens: 300, cached_tokens: 0, usd: Some(Usd(170_000)) });
        let mut plan = item(Kind::Plan, "port", "completed", "");
        plan.usage = Some(Usage { input_tokens: 9000, output_tokens: 500, cached_tokens: 0, usd: None });
        let none = item(Kind::Commission, "fresh", "pending", "waits");
        let t = text(&render(&[&paid, &plan, &none], &Ui::default(), None, false, 80, 24));
        let row = |id: &str| t.lines().find(|l| l.contains(id)).unwrap_or_default().to_string();
        assert!(row("paid").contains("1.5k tok $0.17 done"), "{t}");
        assert!(row("port").contains("9.5k tok "), "tokens only where no dollars are known:\n{t}");
        assert!(!row("fresh").contains("tok"), "{t}");
        assert!(t.lines().any(|l| l.trim_end().ends_with("used 11k tok $0.17")), "the footer's total:\n{t}");
        let wide = text(&render(&[&paid, &plan], &Ui::default(), None, false, 200, 24));
        assert!(
            wide.lines().any(|l| l.contains("q quit") && l.trim_end().ends_with("  ·  used 11k tok $0.17")),
            "after the keys where it fits:\n{wide}"
        );
    }

    #[test]
    fn a_small_terminal_and_the_help_still_draw() {
        let c = item(Kind::Commission, "a-rather-long-commission-id-that-is-cut", "in_progress", &"word ".repeat(40));
        let ui = Ui { mode: Mode::Help, ..Ui::default() };
        for (w, h) in [(80, 24), (20, 5), (1, 1), (200, 60)] {
            let t = text(&render(&[&c], &ui, None, true, w, h));
            assert!(!t.is_empty());
        }
        let t = text(&render(&[&c], &ui, None, true, 80, 24));
        assert!(t.contains("re-dispatch a failed"), "{t}");
    }

    #[test]
    fn the_footer_shows_every_key_at_any_width() {
        let c = item(Kind::Commission, "nap", "pending", "");
        for w in [80u16, 100, 105, 110, 120, 200] {
            let t = text(&render(&[&c], &Ui::default(), None, true, w, 24));
            for key in FOOTER {
                assert!(t.contains(key), "{key:?} cut off at {w} columns:\n{t}");
            }
            assert!(footer_lines(w).iter().all(|l| l.chars().count() <= usize::from(w)), "{w}: {:?}", footer_lines(w));
        }
        assert_eq!(footer_lines(200).len(), 1, "one line where it fits");
        assert_eq!(
            footer_lines(100)[0],
            "? help  q quit  ⏎ detail  / filter  c cancel  r redo  d dispatch  a/x accept/reject  m chat  l log"
        );
        assert_eq!(footer_lines(100)[1], "e edit  n new  t answer  w reconcile  D diff  v revise");
        // A key wider than the terminal stays whole on a line of its own.
        assert!(footer_lines(5).contains(&"a/x accept/reject".to_string()));
    }

    #[test]
    fn a_settled_plan_marks_no_current_wave() {
        let mut plan = item(Kind::Plan, "port", "running", "");
        plan.waves = vec![
            vec![Cell { label: "one".into(), state: "integrated".into() }],
            vec![Cell { label: "two".into(), state: "running".into() }],
        ];
        plan.wave = Some(2);
        let t = text(&render(&[&plan], &Ui::default(), None, true, 100, 24));
        assert!(t.contains("▸ w2") && t.contains("wave 2/2"), "{t}");
        for settled in ["completed", "failed", "cancelled"] {
            plan.status = settled.into();
            plan.waves[1][0].state = "integrated".into();
            let t = text(&render(&[&plan], &Ui::default(), None, true, 100, 24));
            assert!(!t.contains("▸ w") && t.contains("2 waves") && t.contains("  w2 ✓two"), "{settled}:\n{t}");
        }
        // Halted, it is still at the wave it stopped in: the marker says which.
        plan.status = "halted".into();
        assert!(text(&render(&[&plan], &Ui::default(), None, true, 100, 24)).contains("▸ w2"));
    }

    #[test]
    fn ages_are_short() {
        assert_eq!([short_age(-3), short_age(59), short_age(61), short_age(7200), short_age(200_000)], ["0s", "59s", "1m", "2h", "2d"]);
    }
}
