//! Meeting notes on close (REQ-MTG-20): a summary of the conversation — from the package's
//! `notes:` command fed the transcript, or else composed from the progress summaries and the
//! last answer — then the decisions recorded and the artifacts linked. A failing command
//! never blocks closing: the composed summary stands in, and the log says why.

use std::path::Path;

use crate::activity::state::StateDir;
use crate::artifact::Meeting;
use crate::worker::toolbox::mailbox::{self, MailBody};

/// The notes, and what went wrong composing them (`(log kind, text)`), for the log.
pub(crate) struct Notes {
    pub(crate) text: String,
    pub(crate) problems: Vec<(&'static str, String)>,
}

/// The most of the last answer quoted in composed notes.
const LAST_ANSWER_CHARS: usize = 600;

/// `workers`: the catalogue the meeting's package (and its `notes:` command) is found in.
pub(crate) fn compose(
    home: &crate::config::Home,
    project: &crate::config::Project,
    workers: &crate::worker::Catalog,
    meeting: &Meeting,
    state: &StateDir,
    transcript: &Path,
) -> Notes {
    let mut problems = Vec::new();
    let worktree = home.meeting_worktree(&project.name, &meeting.id);
    let mail = read_for_notes(&state.mailbox(), worktree.is_dir().then_some(worktree.as_path())).unwrap_or_else(|e| {
        problems.push(("anomaly", format!("the mailbox could not be read for the notes: {e:#}")));
        Gathered::default()
    });
    let text = crate::files::read_text_if_exists(transcript).ok().flatten().unwrap_or_default();
    let summary = match workers.for_meeting(&meeting.worker).ok().filter(|p| p.manifest.notes.is_some()) {
        Some(pkg) => match run_notes_command(home, pkg, state, &text) {
            Ok(s) => Some(s),
            Err(e) => {
                problems.push((
                    "anomaly",
                    format!("the notes command failed ({e:#}); the notes were composed from the meeting's own record instead"),
                ));
                None
            }
        },
        None => None,
    };
    let summary = summary.unwrap_or_else(|| composed_summary(&mail.summaries, &text));
    let mut out = format!("## Summary\n\n{}\n", summary.trim());
    out.push_str("\n## Decisions\n\n");
    out.push_str(&if mail.decisions.is_empty() { "None recorded.".to_string() } else { mail.decisions.join("\n") });
    out.push('\n');
    // The same list the frontmatter shows: the latest, and how many more the log has.
    let linked = mail.links.linked_shown();
    out.push_str("\n## Artifacts\n\n");
    out.push_str(&if linked.is_empty() {
        "None linked.".to_string()
    } else {
        linked.iter().map(|p| format!("- {p}")).collect::<Vec<_>>().join("\n")
    });
    out.push('\n');
    // However much the worker recorded, the notes fit in the frontmatter (the log has it all).
    let text = mailbox::clip(&out, NOTES_MAX).into_owned();
    Notes { text, problems }
}

/// What the notes take from the whole mailbox: read once, in bounded pieces, and kept within
/// what the notes can hold.
#[derive(Default)]
struct Gathered {
    summaries: Vec<String>,
    decisions: Vec<String>,
    links: super::fold::Folded,
}

fn read_for_notes(path: &Path, worktree: Option<&Path>) -> anyhow::Result<Gathered> {
    let mut g = Gathered::default();
    let (mut summaries, mut decisions) = (0usize, 0usize);
    let mut cursor = mailbox::Cursor::default();
    let expect = mailbox::Expect { attempt: None, worktree, last: false };
    mailbox::read_from(path, &mut cursor, expect, |line| {
        let Some(m) = line.mail else { return };
        match &m.body {
            // Past what the notes hold, the rest is only in the log.
            MailBody::Summary { text } if summaries <= NOTES_MAX => {
                summaries += text.len();
                g.summaries.push(format!("- {}", text.trim()));
            }
            MailBody::Decision { question, decision, reasoning } if decisions <= NOTES_MAX => {
                let d = format!("- {question} — {decision} ({reasoning})");
                decisions += d.len();
                g.decisions.push(d);
            }
            MailBody::Link { .. } => g.links.take(&m),
            _ => {}
        }
    })?;
    Ok(g)
}

/// The most of the notes written into the meeting's frontmatter.
pub(crate) const NOTES_MAX: usize = 32 * 1024;

/// The notes of a meeting whose frontmatter has no room for the worker's text beside the rest
/// of it (a person's long agenda, say): the notes and the linked artifacts are in its log,
/// the notes whole in the `anomaly` event that says so.
pub(crate) const LEFT_OUT: &str = "(The notes and the linked artifacts do not fit in this frontmatter beside the rest of it: they are in the meeting's log, guild-hall meeting show.)";

/// The summaries the worker gave, else the number of turns and the last answer.
fn composed_summary(summaries: &[String], transcript: &str) -> String {
    if !summaries.is_empty() {
        return summaries.join("\n");
    }
    let turns = transcript.matches("\n## You").count();
    let last = transcript
        .rsplit("\n## ")
        .next()
        .filter(|_| turns > 0)
        .map(|t| t.split_once('\n').map(|(_, b)| b).unwrap_or("").trim())
        .unwrap_or("");
    if last.is_empty() {
        return format!("{}; no summary was recorded.", crate::activity::timeline::counted(turns, "turn"));
    }
    let quoted: String = last.chars().take(LAST_ANSWER_CHARS).collect();
    let more = if last.chars().count() > LAST_ANSWER_CHARS { "…" } else { "" };
    format!("{}. The last answer:\n\n> {}{more}", crate::activity::timeline::counted(turns, "turn"), quoted.replace('\n', "\n> "))
}

/// The package's `notes:` command, confined like compaction, with the transcript on stdin.
fn run_notes_command(
    home: &crate::config::Home,
    pkg: &crate::worker::Package,
    state: &StateDir,
    transcript: &str,
) -> anyhow::Result<String> {
    let argv = pkg.resolve_argv(pkg.manifest.notes.as_deref().unwrap_or_default()).map_err(anyhow::Error::msg)?;
    let global = home.load_config()?;
    let confined = crate::worker::launch::confinement(&pkg.manifest.sandbox, &global).map_err(anyhow::Error::msg)?
        == crate::worker::launch::Confinement::Confined;
    let (passed, _) = crate::worker::pass_env(&pkg.manifest.pass_env, &home.secrets_path()).map_err(anyhow::Error::msg)?;
    let mut env = pkg.manifest.env.clone();
    env.extend(passed);
    let tmp = state.0.join("notes-tmp");
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp)?;
    let out = crate::worker::filter::run_filter(pkg, &argv, &pkg.dir, transcript, &tmp, confined, &home.root, &env);
    let _ = std::fs::remove_dir_all(&tmp);
    let out = out?;
    let text = String::from_utf8(out.stdout).map_err(|_| anyhow::anyhow!("it printed non-UTF-8"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        anyhow::bail!("{} {}", out.status, err.lines().last().unwrap_or("").trim());
    }
    if text.trim().is_empty() {
        anyhow::bail!("it printed nothing");
    }
    Ok(text)
}
