//! Which commissions, meetings and plan tasks produced a file, for `guild-hall show PATH`
//! (REQ-MTG-21: from an artifact, see what made it). Every commit on the integration branch's
//! first-parent chain that changed the path, newest first, with whose work it landed as its
//! trailer says ([`crate::activity::trailers`]: the same rule `land` and the merge use); a
//! commit without one (a person's, or a `sync` that brought the base branch's change in on its
//! second parent) is listed with no owner, never read for one.

use std::path::{Component, Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use git2::{Oid, Repository, Tree};
use serde::Serialize;

use crate::activity::trailers;
use crate::config::Project;

/// A file's history on the integration branch.
#[derive(Debug, Clone, Serialize)]
pub struct Produced {
    /// The path, relative to the repository's top level.
    pub path: String,
    /// The integration branch read.
    pub branch: String,
    /// Each commit that changed the path, newest first.
    pub changes: Vec<Change>,
    /// Whether the path was there already where the integration branch began (the person's
    /// history below guild-hall's `Guild-Hall-Begins` commit, whose trailers are never read).
    pub from_before: bool,
}

/// One commit of the integration branch's first-parent chain that changed the path.
#[derive(Debug, Clone, Serialize)]
pub struct Change {
    pub commit: String,
    /// The commit's date (its committer's time), RFC 3339 in UTC.
    pub date: String,
    /// `added`, `modified` or `deleted`, against the commit's first parent.
    pub change: &'static str,
    /// `commission`, `meeting` or `task` from the commit's trailer; absent when the commit
    /// carries none (not guild-hall's work).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<&'static str>,
    /// The commission's or meeting's id, or the task's canonical id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// A commission's attempt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    /// The commit's subject line (a commission's title, say): text that may come from a worker.
    pub(crate) subject: String,
}

/// The history of `path` on the project's integration branch. `path` is taken as a person
/// gives it: relative to `cwd` when `cwd` is inside the project, else to the project's top
/// level; an absolute path must be inside the project.
pub fn of(project: &Project, cwd: &Path, path: &Path) -> Result<Produced> {
    let rel = in_repository(&project.root, cwd, path)?;
    let branch = project.config.integration_branch.clone();
    let repo = crate::activity::git::open(&project.root)?;
    let tip = repo
        .find_branch(&branch, git2::BranchType::Local)
        .map_err(|_| anyhow!("there is no branch {branch:?}: run `guild-hall init`"))?
        .get()
        .peel_to_commit()
        .with_context(|| format!("reading branch {branch}"))?
        .id();
    let changes = changes(&repo, tip, Path::new(&rel))?;
    let from_before = there_at_the_beginning(&repo, tip, Path::new(&rel))?;
    if changes.is_empty() && !from_before {
        bail!("{rel} was never on {branch}: no commit of its first-parent chain has it");
    }
    Ok(Produced { path: rel, branch, changes, from_before })
}

/// Whether `path` is in the tree the chain read by [`trailers::first_parent_chain`] starts from:
/// the commit below its oldest (the integration branch's `Guild-Hall-Begins` commit, or none at
/// a root).
fn there_at_the_beginning(repo: &Repository, tip: Oid, path: &Path) -> Result<bool> {
    let chain = trailers::first_parent_chain(repo, tip, &[])?;
    let start = match chain.last() {
        Some(oldest) => repo.find_commit(*oldest)?.parent(0).ok(),
        None => Some(repo.find_commit(tip)?),
    };
    Ok(match start {
        Some(c) => c.tree()?.get_path(path).is_ok(),
        None => false,
    })
}

/// Every commit of `tip`'s first-parent chain whose tree differs from its first parent's at
/// `path` (a directory counts when anything under it changed), newest first.
fn changes(repo: &Repository, tip: Oid, path: &Path) -> Result<Vec<Change>> {
    let at = |tree: &Tree| tree.get_path(path).ok().map(|e| (e.id(), e.filemode()));
    let mut out = Vec::new();
    for oid in trailers::first_parent_chain(repo, tip, &[])? {
        let commit = repo.find_commit(oid)?;
        let now = at(&commit.tree()?);
        let before = match commit.parent(0) {
            Ok(parent) => at(&parent.tree()?),
            Err(_) => None,
        };
        let change = match (before, now) {
            (None, Some(_)) => "added",
            (Some(_), None) => "deleted",
            (Some(a), Some(b)) if a != b => "modified",
            _ => continue,
        };
        let message = String::from_utf8_lossy(commit.message_bytes()).into_owned();
        // A commit carries one trailer of ours; the first is whose work it is.
        let mark = trailers::of_message(&message).into_iter().find_map(trailers::mark);
        let date = chrono::DateTime::from_timestamp(commit.committer().when().seconds(), 0)
            .map(|d| d.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
            .unwrap_or_default();
        out.push(Change {
            commit: oid.to_string(),
            date,
            change,
            kind: mark.map(|m| m.kind),
            id: mark.map(|m| m.id.to_string()),
            attempt: mark.and_then(|m| m.attempt),
            subject: message.lines().next().unwrap_or("").to_string(),
        });
    }
    Ok(out)
}

/// `path` relative to the repository's top level `root`, `/`-separated, lexically normalised;
/// refused when it leads outside `root`.
fn in_repository(root: &Path, cwd: &Path, path: &Path) -> Result<String> {
    let root = root.canonicalize().with_context(|| format!("resolving {}", root.display()))?;
    let cwd = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
    let base = if cwd.starts_with(&root) { cwd } else { root.clone() };
    let joined = base.join(path);
    let mut normal = PathBuf::new();
    for c in joined.components() {
        match c {
            Component::ParentDir => {
                normal.pop();
            }
            Component::CurDir => {}
            other => normal.push(other),
        }
    }
    let rel = normal.strip_prefix(&root).map_err(|_| anyhow!("{} is outside the project ({})", path.display(), root.display()))?;
    let parts: Vec<&str> = rel
        .components()
        .map(|c| c.as_os_str().to_str().ok_or_else(|| anyhow!("{}: the path is not UTF-8", path.display())))
        .collect::<Result<_>>()?;
    if parts.is_empty() {
        bail!("{} is the project itself: name a file or directory in it", path.display());
    }
    Ok(parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_taken_as_a_person_gives_them() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path().canonicalize().expect("canonical");
        std::fs::create_dir_all(root.join("src/deep")).expect("mkdir");
        let rel = |cwd: &Path, p: &str| in_repository(&root, cwd, Path::new(p));
        assert_eq!(rel(&root, ".lore/notes/x.md").expect("plain"), ".lore/notes/x.md");
        assert_eq!(rel(&root.join("src/deep"), "../lib.rs").expect("from a subdirectory"), "src/lib.rs");
        assert_eq!(rel(Path::new("/"), "src/lib.rs").expect("cwd outside: from the top"), "src/lib.rs");
        assert_eq!(rel(&root, &root.join("a/./b").display().to_string()).expect("absolute"), "a/b");
        assert!(rel(&root, "../elsewhere").is_err());
        assert!(rel(&root, ".").is_err());
    }
}
