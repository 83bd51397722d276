//! What counts as guild-hall's own word in git: a trailer line (`Guild-Hall-Commission:`,
//! `-Meeting:`, `-Task:`) in the last paragraph of a commit on the integration branch's
//! first-parent chain. Everything else — worker text inside a message, a person's commit that
//! `sync` brought in on a merge's second parent, a line in the middle of a message — is never
//! read as one; and text guild-hall did not write is neutralised before it goes into a message.
//! The integration branch begins at a commit of guild-hall's own ([`begin_integration_branch`]),
//! below which nothing is read.

use git2::{Oid, Repository};

use super::git::{branch_exists, set_branch, signature, GitError, Result};
use super::names::TRAILER_START;

/// Compose a commit message guild-hall signs with `trailer`: `body` (which may hold worker
/// text: a summary, notes, a title) neutralised, then the trailer as the last paragraph.
pub(crate) fn compose(body: &str, trailer: &str) -> String {
    format!("{}\n\n{trailer}\n", neutralise(body).trim_end())
}

/// `text` made unable to speak for guild-hall in a commit message: terminal escapes and other
/// control characters gone (as on guild-hall's own screen), and every line that would read as
/// one of our trailers quoted (`> `), wherever it stands.
pub(crate) fn neutralise(text: &str) -> String {
    let clean = super::state::strip_escapes(text);
    let mut out = String::with_capacity(clean.len());
    for line in clean.split_inclusive('\n') {
        if reads_as_trailer(line) {
            out.push_str("> ");
        }
        out.push_str(line);
    }
    out
}

/// Whether a line would be taken for one of guild-hall's trailers by a reader more lenient
/// than [`of_message`] (leading blanks, any case): what [`neutralise`] quotes.
fn reads_as_trailer(line: &str) -> bool {
    let start = line.trim_start();
    start.len() >= TRAILER_START.len() && start.as_bytes()[..TRAILER_START.len()].eq_ignore_ascii_case(TRAILER_START.as_bytes())
}

/// The guild-hall trailer lines of a commit message: lines of its last paragraph (after the
/// last blank line) that begin, at the line's start, with `Guild-Hall-`. A message of one
/// paragraph (a subject alone) has none: a trailer always follows a body or a subject.
pub(crate) fn of_message(message: &str) -> Vec<&str> {
    let trimmed = message.trim_end();
    let Some((_, last)) = trimmed.rsplit_once("\n\n").or_else(|| trimmed.rsplit_once("\n\r\n")) else {
        return Vec::new();
    };
    last.lines().map(|l| l.trim_end()).filter(|l| l.starts_with(TRAILER_START)).collect()
}

/// Whose work one trailer line (from [`of_message`]) marks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Mark<'a> {
    /// `commission`, `meeting` or `task`.
    pub(crate) kind: &'static str,
    /// The commission's or meeting's id, or the task's canonical id (`plan:exec:wave-N:task-M`).
    pub(crate) id: &'a str,
    /// A commission's attempt.
    pub(crate) attempt: Option<u32>,
}

/// What a trailer line says: `Guild-Hall-Commission: <id> attempt <n>`, `Guild-Hall-Meeting:
/// <id>` or `Guild-Hall-Task: <canonical>`; `None` for any other line.
pub(crate) fn mark(line: &str) -> Option<Mark<'_>> {
    use super::names::TRAILERS;
    if let Some(rest) = line.strip_prefix(TRAILERS[0]) {
        let (id, n) = rest.rsplit_once(" attempt ")?;
        Some(Mark { kind: "commission", id, attempt: n.parse().ok() })
    } else if let Some(id) = line.strip_prefix(TRAILERS[1]) {
        Some(Mark { kind: "meeting", id, attempt: None })
    } else {
        line.strip_prefix(TRAILERS[2]).map(|id| Mark { kind: "task", id, attempt: None })
    }
}

/// The trailer of the commit an integration branch begins with ([`begins_message`]).
pub(crate) const BEGINS: &str = "Guild-Hall-Begins: ";

/// The message of the commit guild-hall makes an integration branch begin with (on top of the
/// person's HEAD, the files the same): below it is the person's history, which no walk of
/// this module reads — a trailer a cloned repository's commits carry from before is nobody's
/// word.
pub(crate) fn begins_message(branch: &str) -> String {
    compose(
        &format!(
            "guild-hall: the integration branch {branch} begins here\n\nWhat guild-hall lands goes on top of this commit; its trailers are read from here up."
        ),
        &format!("{BEGINS}{branch}"),
    )
}

/// Create the integration branch `branch` (unless it exists) at a commit of guild-hall's own on
/// top of HEAD, with HEAD's files ([`begins_message`]): where guild-hall's
/// word starts, so that nothing in the history below it — a cloned repository's — is read as
/// a trailer. Whether it was created.
pub(crate) fn begin_integration_branch(repo: &Repository, branch: &str) -> Result<bool> {
    if branch_exists(repo, branch) {
        return Ok(false);
    }
    let head = repo
        .head()
        .and_then(|h| h.peel_to_commit())
        .map_err(|_| GitError::Other("the repository has no commits yet: make a first commit, then run guild-hall init".into()))?;
    // Always a new beginning, even where HEAD's history holds an earlier one (`land` brought it
    // to the base branch, and the integration branch was deleted since): a Begins commit is
    // text anyone can write, and a cloned repository's forged one would have its commits above
    // it read as guild-hall's. What landed below stays known by its artifacts' own statuses.
    let sig = signature(repo)?;
    let begins = repo.commit(None, &sig, &sig, &begins_message(branch), &head.tree()?, &[&head])?;
    set_branch(repo, branch, &repo.find_commit(begins)?, false)?;
    Ok(true)
}

/// The commits of `tip`'s first-parent chain, newest first, down to (not including) the first
/// one `hide` reaches, and not below the commit the integration branch began with (a
/// [`BEGINS`] trailer; a branch made by an older guild-hall has none, and its whole chain is
/// read).
pub(crate) fn first_parent_chain(repo: &Repository, tip: Oid, hide: &[Oid]) -> Result<Vec<Oid>> {
    let mut chain = Vec::new();
    walk_chain(repo, tip, hide, |oid, _| {
        chain.push(oid);
        None::<()>
    })?;
    Ok(chain)
}

/// Visit [`first_parent_chain`] newest first, each commit looked up once and handed over with
/// its trailer lines ([`of_message`]; none for a message that is not UTF-8), until `each`
/// returns something.
fn walk_chain<T>(repo: &Repository, tip: Oid, hide: &[Oid], mut each: impl FnMut(Oid, &[&str]) -> Option<T>) -> Result<Option<T>> {
    let mut walk = repo.revwalk()?;
    walk.push(tip)?;
    for h in hide {
        walk.hide(*h)?;
    }
    walk.simplify_first_parent()?;
    for oid in walk {
        let oid = oid?;
        let commit = repo.find_commit(oid)?;
        let lines = commit.message().map(of_message).unwrap_or_default();
        if lines.iter().any(|l| l.starts_with(BEGINS)) {
            break;
        }
        if let Some(found) = each(oid, &lines) {
            return Ok(Some(found));
        }
    }
    Ok(None)
}

/// Every trailer line starting with `prefix` on the first-parent chains of `tips` (not below
/// `hide`), newest first, each with the commit carrying it; each commit read once.
pub(crate) fn on_chains(repo: &Repository, tips: &[Oid], hide: &[Oid], prefix: &str) -> Result<Vec<(Oid, String)>> {
    let mut seen = std::collections::HashSet::new();
    let mut found = Vec::new();
    for tip in tips {
        walk_chain(repo, *tip, hide, |oid, lines| {
            if seen.insert(oid) {
                found.extend(lines.iter().filter(|l| l.starts_with(prefix)).map(|l| (oid, l.to_string())));
            }
            None::<()>
        })?;
    }
    Ok(found)
}

/// The newest commit on `tip`'s first-parent chain, not below `base`, that carries `trailer`.
pub(crate) fn find_on_chain(repo: &Repository, tip: Oid, base: Oid, trailer: &str) -> Result<Option<Oid>> {
    walk_chain(repo, tip, &[base], |oid, lines| lines.contains(&trailer).then_some(oid))
}

/// The commits of `tip`'s first-parent chain since `base` that carry a trailer starting with
/// one of `prefixes`: guild-hall's own commits of that kind, as the one rule reads them.
pub(crate) fn ours_since(repo: &Repository, tip: Oid, base: Oid, prefixes: &[&str]) -> Result<std::collections::HashSet<Oid>> {
    let mut ours = std::collections::HashSet::new();
    walk_chain(repo, tip, &[base], |oid, lines| {
        if lines.iter().any(|l| prefixes.iter().any(|p| l.starts_with(p))) {
            ours.insert(oid);
        }
        None::<()>
    })?;
    Ok(ours)
}

/// Every line starting with `prefix` in any message in the history of `tips` but not of `hide`
/// (all parents, anywhere in a message), newest first, with the commit carrying it. Only for
/// keeping ids and attempts from being reused, where reading more than guild-hall's own word
/// only ever reserves a number; never for judging what landed (the rest of this module).
pub(crate) fn lines_anywhere(repo: &Repository, tips: &[Oid], hide: &[Oid], prefix: &str) -> Result<Vec<(Oid, String)>> {
    let mut walk = repo.revwalk()?;
    for tip in tips {
        walk.push(*tip)?;
    }
    for h in hide {
        walk.hide(*h)?;
    }
    let mut found = Vec::new();
    for oid in walk {
        let oid = oid?;
        let commit = repo.find_commit(oid)?;
        let Ok(message) = commit.message() else { continue };
        found.extend(message.lines().map(str::trim).filter(|l| l.starts_with(prefix)).map(|l| (oid, l.to_string())));
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_last_paragraph_counts() {
        assert_eq!(of_message("t (x)\n\nsummary\n\nGuild-Hall-Commission: x attempt 1\n"), vec!["Guild-Hall-Commission: x attempt 1"]);
        assert!(of_message("t (x)\n\nGuild-Hall-Commission: victim attempt 1\n\nmore text\n").is_empty());
        assert!(of_message("Guild-Hall-Commission: victim attempt 1\n").is_empty(), "a subject alone is no trailer");
        assert!(of_message("t\n\n  Guild-Hall-Commission: victim attempt 1\n").is_empty(), "indented: a continuation");
    }

    #[test]
    fn worker_text_never_makes_a_trailer() {
        let summary = "done\n\nGuild-Hall-Commission: victim attempt 1\n guild-hall-task: p:exec:wave-1:t\n";
        let message = compose(&format!("title (c)\n\n{summary}"), "Guild-Hall-Commission: c attempt 1");
        assert_eq!(of_message(&message), vec!["Guild-Hall-Commission: c attempt 1"]);
        assert!(message.contains("> Guild-Hall-Commission: victim attempt 1"), "{message}");
        assert!(message.contains(">  guild-hall-task: p:exec:wave-1:t"), "{message}");
        // Even as the whole message, quoted text reads as no trailer.
        assert!(of_message(&neutralise("x\n\nGuild-Hall-Task: p:exec:wave-1:t")).is_empty());
    }

    #[test]
    fn terminal_escapes_never_reach_a_message() {
        let message = compose("title\n\n\x1b]0;pwned\x07red \x1b[31mtext\x1b[0m\u{202e}", "Guild-Hall-Meeting: m");
        assert!(!message.chars().any(|c| c.is_control() && c != '\n'), "{message:?}");
        assert!(message.contains("red text"), "{message}");
    }
}
