//! The change a squash merge of a branch would bring onto the integration branch: from their
//! merge base to the branch's tip, read from git's objects only — never from a worktree, whose
//! files and links a worker wrote — and shown as git shows it (its patch, its stat). Which
//! branch an id names is `ops::diff`'s.

use anyhow::{Context, Result};
use git2::{Delta, DiffFindOptions, DiffOptions, Oid, Repository};
use serde::Serialize;

/// How a file changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FileStatus {
    Added,
    Deleted,
    Modified,
    Renamed,
    Copied,
    /// A file became a link or the other way round (its mode's type changed).
    Typechange,
}

impl FileStatus {
    fn of(delta: Delta) -> FileStatus {
        match delta {
            Delta::Added | Delta::Untracked => FileStatus::Added,
            Delta::Deleted => FileStatus::Deleted,
            Delta::Renamed => FileStatus::Renamed,
            Delta::Copied => FileStatus::Copied,
            Delta::Typechange => FileStatus::Typechange,
            _ => FileStatus::Modified,
        }
    }
}

/// One file's change.
#[derive(Debug, Clone, Serialize)]
pub struct FileDiff {
    /// Its path after the change (before it, for a deleted file). A name that is not UTF-8 is
    /// shown with U+FFFD for its bad bytes.
    pub path: String,
    /// Where a renamed or copied file came from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old_path: Option<String>,
    pub status: FileStatus,
    /// Lines added and removed (0 and 0 for a binary file).
    pub additions: usize,
    pub deletions: usize,
    /// Its content is not text (a NUL in its first 8000 bytes, as git decides): no lines, no patch.
    pub binary: bool,
    /// Its sizes in bytes before and after, for a binary file's stat.
    #[serde(skip)]
    pub sizes: (u64, u64),
    /// Its unified diff as git prints it, from `diff --git` on; `null` for a binary file; left
    /// out when only the stat was asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub patch: Option<Option<String>>,
    /// What git prints for a binary file: its header and "Binary files a/x and b/x differ".
    #[serde(skip)]
    pub binary_text: Option<String>,
}

/// The change a squash merge of `branch` would bring.
#[derive(Debug, Clone, Serialize)]
pub struct Diff {
    /// The commission's id, or the task's canonical id.
    pub id: String,
    pub branch: String,
    /// The merge base with the integration branch (the change is from it).
    pub base: String,
    /// The branch's tip (the change is to it).
    pub tip: String,
    pub files: Vec<FileDiff>,
    pub additions: usize,
    pub deletions: usize,
}

/// What a line of a patch is, for colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// A file's header (`diff --git`, `index`, `---`, `+++`, modes, renames, "Binary files").
    Header,
    /// A hunk's `@@ -a,b +c,d @@`.
    Hunk,
    Added,
    Removed,
    Context,
}

/// The lines of one file's patch, each with what it is: header lines until the first hunk.
pub fn parts(patch: &str) -> impl Iterator<Item = (Part, &str)> {
    let mut in_header = true;
    patch.lines().map(move |l| {
        let part = if l.starts_with("diff --git ") {
            in_header = true;
            Part::Header
        } else if l.starts_with("@@") {
            in_header = false;
            Part::Hunk
        } else if in_header {
            Part::Header
        } else if l.starts_with('+') {
            Part::Added
        } else if l.starts_with('-') {
            Part::Removed
        } else {
            Part::Context
        };
        (part, l)
    })
}

/// What to read of the change: its stat, or also each file's patch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detail {
    Stat,
    Patch,
}

impl Detail {
    /// The stat alone if `stat`, else the patches too.
    pub fn of(stat: bool) -> Detail {
        if stat {
            Detail::Stat
        } else {
            Detail::Patch
        }
    }
}

/// The change from `branch`'s merge base with `integration` to its tip.
pub(crate) fn between(repo: &Repository, integration: &str, id: &str, branch: &str, detail: Detail) -> Result<Diff> {
    let tip = repo.find_branch(branch, git2::BranchType::Local)?.get().peel_to_commit()?;
    let onto = repo
        .find_branch(integration, git2::BranchType::Local)
        .with_context(|| format!("the integration branch {integration} is not there (run guild-hall init)"))?
        .get()
        .peel_to_commit()?;
    // Histories with nothing in common: the whole tree is the change.
    let base = repo.merge_base(onto.id(), tip.id()).ok();
    from(repo, id, branch, base, &tip, detail)
}

/// The change from commit `base` to `branch`'s tip (a plan's integrated result, from where it
/// began).
pub(crate) fn since(repo: &Repository, id: &str, branch: &str, base: Oid, detail: Detail) -> Result<Diff> {
    let tip = repo.find_branch(branch, git2::BranchType::Local)?.get().peel_to_commit()?;
    from(repo, id, branch, Some(base), &tip, detail)
}

/// The change one commit made (a wave task's copy-back onto the integration branch): from its
/// first parent to it.
pub(crate) fn of_commit(repo: &Repository, id: &str, branch: &str, commit: Oid, detail: Detail) -> Result<Diff> {
    let commit = repo.find_commit(commit)?;
    let parent = commit.parent_ids().next();
    from(repo, id, branch, parent, &commit, detail)
}

/// The change from `base` (none: the empty tree) to `tip`.
fn from(repo: &Repository, id: &str, branch: &str, base: Option<Oid>, tip: &git2::Commit<'_>, detail: Detail) -> Result<Diff> {
    let old = base.map(|b| repo.find_commit(b).and_then(|c| c.tree())).transpose()?;
    let files = changes(repo, old.as_ref(), &tip.tree()?, detail)?;
    Ok(Diff {
        id: id.to_string(),
        branch: branch.to_string(),
        base: base.map(|b| b.to_string()).unwrap_or_default(),
        tip: tip.id().to_string(),
        additions: files.iter().map(|f| f.additions).sum(),
        deletions: files.iter().map(|f| f.deletions).sum(),
        files,
    })
}

/// Each file's change between two trees, renames found as git finds them by default.
fn changes(repo: &Repository, old: Option<&git2::Tree<'_>>, new: &git2::Tree<'_>, detail: Detail) -> Result<Vec<FileDiff>> {
    let mut opts = DiffOptions::new();
    opts.include_typechange(true).context_lines(3);
    let mut diff = repo.diff_tree_to_tree(old, Some(new), Some(&mut opts))?;
    // git's defaults: renames (not copies) at 50% similarity, up to 1000 candidates.
    diff.find_similar(Some(DiffFindOptions::new().renames(true).rename_limit(1000)))?;
    let lossy = |p: Option<&std::path::Path>| p.map(|p| p.to_string_lossy().into_owned()).unwrap_or_default();
    let mut files = Vec::with_capacity(diff.deltas().len());
    for idx in 0..diff.deltas().len() {
        let Some(mut patch) = git2::Patch::from_diff(&diff, idx)? else { continue };
        let delta = patch.delta();
        let status = FileStatus::of(delta.status());
        let (old_file, new_file) = (delta.old_file(), delta.new_file());
        let path = if status == FileStatus::Deleted { lossy(old_file.path()) } else { lossy(new_file.path()) };
        let old_path = matches!(status, FileStatus::Renamed | FileStatus::Copied).then(|| lossy(old_file.path()));
        let binary = delta.flags().is_binary();
        let (old_id, new_id) = (old_file.id(), new_file.id());
        let (_, additions, deletions) = if binary { (0, 0, 0) } else { patch.line_stats()? };
        let sizes = if binary { (size_of(repo, old_id), size_of(repo, new_id)) } else { (0, 0) };
        let text = match detail {
            Detail::Stat => None,
            Detail::Patch => Some(String::from_utf8_lossy(&patch.to_buf()?).into_owned()),
        };
        let (patch, binary_text) = if binary { (text.as_ref().map(|_| None), text) } else { (text.map(Some), None) };
        files.push(FileDiff { path, old_path, status, additions, deletions, binary, sizes, patch, binary_text });
    }
    Ok(files)
}

/// A blob's size, 0 for none (the side of an added or deleted file).
fn size_of(repo: &Repository, id: Oid) -> u64 {
    if id.is_zero() {
        return 0;
    }
    repo.odb().and_then(|odb| odb.read_header(id)).map_or(0, |(size, _)| size as u64)
}

impl Diff {
    /// The stat as git prints it (`diff --stat`) in `width` columns: a line per file — its
    /// name (a rename as `dir/{old => new}`), its lines changed and a graph of `+` and `-`
    /// scaled to fit, a binary file's sizes — then the totals ([`Diff::summary`]); nothing for no
    /// change.
    pub fn stat(&self, width: usize) -> Vec<String> {
        if self.files.is_empty() {
            return Vec::new();
        }
        let names: Vec<String> = self
            .files
            .iter()
            .map(|f| match &f.old_path {
                Some(old) => renamed(old, &f.path),
                None => f.path.clone(),
            })
            .collect();
        let digits = |n: u64| n.to_string().len();
        let (mut number_width, mut bin_width, mut most) = (0, 0, 0);
        for f in &self.files {
            if f.binary {
                // "Bin OLD -> NEW bytes"; the counts aligned with "Bin".
                bin_width = bin_width.max(14 + digits(f.sizes.0) + digits(f.sizes.1));
                number_width = 3;
            } else {
                most = most.max(f.additions + f.deletions);
            }
        }
        let number_width = number_width.max(digits(most as u64));
        let width = width.max(16 + 6 + number_width);
        // What each part wants; when the line is too long the graph gets at most 3/8 of it
        // (at least 6 columns) and the name what is left.
        let mut graph_width = if most + 4 > bin_width { most } else { bin_width - 4 };
        let mut name_width = names.iter().map(|n| n.chars().count()).max().unwrap_or(0);
        let fixed = number_width + 6;
        if name_width + fixed + graph_width > width {
            let share = (width * 3 / 8).saturating_sub(fixed).max(6);
            graph_width = graph_width.min(share);
            if name_width > width.saturating_sub(fixed + graph_width) {
                name_width = width.saturating_sub(fixed + graph_width);
            } else {
                graph_width = width - fixed - name_width;
            }
        }
        // At least one column for any change: scaled as if one column shorter, plus one.
        let scale = |n: usize| if n == 0 { 0 } else { 1 + n * (graph_width - 1) / most };
        let mut out = Vec::with_capacity(self.files.len() + 1);
        for (f, name) in self.files.iter().zip(&names) {
            let (prefix, shown, room) = shortened(name, name_width);
            let mut line = format!(" {prefix}{shown:<room$} |");
            if f.binary {
                line.push_str(&format!(" {:>number_width$}", "Bin"));
                if f.sizes != (0, 0) {
                    line.push_str(&format!(" {} -> {} bytes", f.sizes.0, f.sizes.1));
                }
            } else {
                let (mut plus, mut minus) = (f.additions, f.deletions);
                if graph_width <= most {
                    let mut total = scale(plus + minus);
                    if total < 2 && plus > 0 && minus > 0 {
                        total = 2;
                    }
                    if plus < minus {
                        plus = scale(plus);
                        minus = total - plus;
                    } else {
                        minus = scale(minus);
                        plus = total - minus;
                    }
                }
                let count = f.additions + f.deletions;
                line.push_str(&format!(" {count:>number_width$}{}", if count > 0 { " " } else { "" }));
                line.push_str(&"+".repeat(plus));
                line.push_str(&"-".repeat(minus));
            }
            out.push(line);
        }
        out.push(self.summary());
        out
    }

    /// ` N files changed, A insertions(+), D deletions(-)`, as git words it.
    pub fn summary(&self) -> String {
        let n = self.files.len();
        let mut s = format!(" {n} file{} changed", if n == 1 { "" } else { "s" });
        if self.additions > 0 || self.deletions == 0 {
            s.push_str(&format!(", {} insertion{}(+)", self.additions, if self.additions == 1 { "" } else { "s" }));
        }
        if self.deletions > 0 || self.additions == 0 {
            s.push_str(&format!(", {} deletion{}(-)", self.deletions, if self.deletions == 1 { "" } else { "s" }));
        }
        s
    }

    /// Every line of the change with what it is: each file's patch as git prints it (for a
    /// binary file, its header and "Binary files a/x and b/x differ"); none when only the stat
    /// was read.
    pub fn lines(&self) -> impl Iterator<Item = (Part, &str)> {
        self.files.iter().filter_map(|f| f.patch.as_ref().and_then(Option::as_deref).or(f.binary_text.as_deref())).flat_map(parts)
    }
}

/// `name` in `width` columns, as git's stat shows it: a longer one loses its start, shown as
/// "..." and then from the next `/` on. The prefix, the name, and the width to pad it to.
fn shortened(name: &str, width: usize) -> (&'static str, &str, usize) {
    let len = name.chars().count();
    if len <= width {
        return ("", name, width);
    }
    let room = width.saturating_sub(3);
    let start = name.char_indices().nth(len - room).map_or(name.len(), |(i, _)| i);
    let tail = &name[start..];
    ("...", tail.find('/').map_or(tail, |slash| &tail[slash..]), room)
}

/// A rename as git's stat names it: what the two paths share kept outside braces
/// (`src/{a.rs => b.rs}`, `{old => new}/mod.rs`), whole directories only.
fn renamed(old: &str, new: &str) -> String {
    let (a, b) = (old.as_bytes(), new.as_bytes());
    // The shared start, up to and with its last `/`.
    let mut prefix = 0;
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        if x != y {
            break;
        }
        if *x == b'/' {
            prefix = i + 1;
        }
    }
    // The shared end, from a `/` on, never reaching into the shared start (but for its `/`).
    let floor = prefix.saturating_sub(1);
    let (mut i, mut j, mut suffix) = (a.len(), b.len(), 0);
    let at = |s: &[u8], k: usize| s.get(k).copied().unwrap_or(0);
    while i >= floor && j >= floor && at(a, i) == at(b, j) {
        if at(a, i) == b'/' {
            suffix = a.len() - i;
        }
        if i == 0 || j == 0 {
            break;
        }
        i -= 1;
        j -= 1;
    }
    if prefix + suffix == 0 {
        return format!("{old} => {new}");
    }
    let a_mid = &old[prefix..old.len().saturating_sub(suffix).max(prefix)];
    let b_mid = &new[prefix..new.len().saturating_sub(suffix).max(prefix)];
    format!("{}{{{a_mid} => {b_mid}}}{}", &old[..prefix], &old[old.len() - suffix..])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, additions: usize, deletions: usize) -> FileDiff {
        FileDiff {
            path: path.into(),
            old_path: None,
            status: FileStatus::Modified,
            additions,
            deletions,
            binary: false,
            sizes: (0, 0),
            patch: None,
            binary_text: None,
        }
    }

    fn diff(files: Vec<FileDiff>) -> Diff {
        Diff {
            id: "c".into(),
            branch: "b".into(),
            base: String::new(),
            tip: String::new(),
            additions: files.iter().map(|f| f.additions).sum(),
            deletions: files.iter().map(|f| f.deletions).sum(),
            files,
        }
    }

    #[test]
    fn the_stat_reads_as_gits() {
        let d = diff(vec![file("src/a.rs", 3, 1), file("README.md", 0, 2)]);
        assert_eq!(d.stat(80), [" src/a.rs  | 4 +++-", " README.md | 2 --", " 2 files changed, 3 insertions(+), 3 deletions(-)"]);
        let one = diff(vec![file("a", 1, 0)]);
        assert_eq!(one.summary(), " 1 file changed, 1 insertion(+)");
        assert_eq!(diff(vec![file("a", 0, 0)]).summary(), " 1 file changed, 0 insertions(+), 0 deletions(-)");
    }

    #[test]
    fn a_large_change_is_scaled_to_the_width_and_a_long_name_keeps_its_end() {
        let long = format!("{}/end.rs", "d".repeat(100));
        let d = diff(vec![file(&long, 500, 500), file("b", 1, 0)]);
        let lines = d.stat(80);
        assert!(lines.iter().all(|l| l.chars().count() <= 80), "{lines:#?}");
        assert!(lines[0].starts_with(" .../end.rs "), "{lines:#?}");
        assert!(lines[1].ends_with(" 1 +"), "the smallest change still shows: {lines:#?}");
    }

    #[test]
    fn a_rename_keeps_what_both_paths_share_outside_braces() {
        assert_eq!(renamed("src/a.rs", "src/b.rs"), "src/{a.rs => b.rs}");
        assert_eq!(renamed("old/mod.rs", "new/mod.rs"), "{old => new}/mod.rs");
        assert_eq!(renamed("a/x/c", "a/y/c"), "a/{x => y}/c");
        assert_eq!(renamed("a.txt", "b.txt"), "a.txt => b.txt");
        assert_eq!(renamed("a/b", "a/b/c"), "a/{b => b/c}");
    }

    #[test]
    fn patch_lines_are_told_apart_and_headers_are_not_changes() {
        let p = "diff --git a/x b/x\nindex 1..2 100644\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+new\n same\n";
        let kinds: Vec<Part> = parts(p).map(|(k, _)| k).collect();
        use Part::*;
        assert_eq!(kinds, [Header, Header, Header, Header, Hunk, Removed, Added, Context]);
    }
}
