//! TEMPORARY STUB: replaced by the real module.
use std::path::Path;
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error(transparent)]
    Git(#[from] git2::Error),
    #[error("{0}")]
    Cli(String),
}
pub type Result<T> = std::result::Result<T, GitError>;
pub fn open(p: &Path) -> Result<git2::Repository> {
    Ok(git2::Repository::discover(p)?)
}
pub fn branch_exists(_r: &git2::Repository, _b: &str) -> bool {
    todo!()
}
pub fn ensure_branch(_r: &git2::Repository, _b: &str, _f: &str) -> Result<bool> {
    todo!()
}
pub fn path_in_branch(_r: &git2::Repository, _b: &str, _p: &str) -> Result<bool> {
    todo!()
}
pub fn add_worktree(_root: &Path, _p: &Path, _b: &str, _s: &str, _sparse: bool) -> Result<()> {
    todo!()
}
pub fn commit_all(_p: &Path, _m: &str) -> Result<Option<git2::Oid>> {
    todo!()
}
pub fn remove_worktree(_root: &Path, _p: &Path) -> Result<()> {
    todo!()
}
pub enum MergeOutcome {
    Merged(git2::Oid),
    AlreadyMerged(git2::Oid),
    NothingToMerge,
    Conflicts(Vec<String>),
    Waiting(String),
}
pub fn squash_merge(_r: &git2::Repository, _i: &str, _a: &str, _m: &str, _t: &str) -> Result<MergeOutcome> {
    todo!()
}
