//! Git as guild-hall runs it: opening the repository, branches, the identity of our commits,
//! and every git CLI call — named explicitly, never at a git dir a worker can write, in a clean
//! environment, with nothing configured allowed to run a program (hooks, filters, fsmonitor,
//! external diffs, a git in a nested repository). [`super::worktree`] and [`super::merge`]
//! build on this.

use std::path::{Path, PathBuf};
use std::process::Command;

use git2::{BranchType, Repository, Signature};

#[derive(Debug, thiserror::Error)]
pub(crate) enum GitError {
    #[error(transparent)]
    Git(#[from] git2::Error),
    #[error("`git {args}` failed: {stderr}")]
    Cli { args: String, stderr: String },
    #[error("{0}")]
    Other(String),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

pub(crate) type Result<T> = std::result::Result<T, GitError>;

const FALLBACK_NAME: &str = "Guild Hall";
const FALLBACK_EMAIL: &str = "guild-hall@localhost";

/// Open the repository containing `project_root`.
pub(crate) fn open(project_root: &Path) -> Result<Repository> {
    Repository::discover(project_root).map_err(|_| GitError::Other(format!("{} is not inside a git repository", project_root.display())))
}

/// The repository's configured identity, else the fixed fallback.
pub(crate) fn signature(repo: &Repository) -> Result<Signature<'static>> {
    match repo.signature() {
        Ok(s) => Ok(s.to_owned()),
        Err(_) => Ok(Signature::now(FALLBACK_NAME, FALLBACK_EMAIL)?),
    }
}

/// Where `init` records the branch it started from (the repository's own git config, so that
/// any home over this checkout finds it).
pub(crate) const BASE_BRANCH_KEY: &str = "guild-hall.baseBranch";

/// The base branch as configured (`follow:`, `base_branch:`) or recorded by `init` (git config
/// [`BASE_BRANCH_KEY`]), if any.
pub(crate) fn configured_base(repo: &Repository, config: &crate::config::ProjectConfig) -> Option<String> {
    if let Some(b) = config.follow.as_ref().or(config.base_branch.as_ref()) {
        return Some(b.clone());
    }
    repo.config().ok().and_then(|c| c.get_string(BASE_BRANCH_KEY).ok()).filter(|b| !b.is_empty())
}

/// The base branch's name: [`configured_base`], else `main`, else `master` (whichever exists).
pub(crate) fn named_base(repo: &Repository, config: &crate::config::ProjectConfig) -> Option<String> {
    configured_base(repo, config).or_else(|| ["main", "master"].into_iter().find(|b| branch_exists(repo, b)).map(str::to_string))
}

pub(crate) fn branch_exists(repo: &Repository, branch: &str) -> bool {
    repo.find_branch(branch, BranchType::Local).is_ok()
}

/// Create `branch` at what `from` (a branch name, a full ref such as
/// `refs/remotes/origin/claude/main`, or "HEAD") points to, unless it exists.
pub(crate) fn ensure_branch(repo: &Repository, branch: &str, from: &str) -> Result<bool> {
    if branch_exists(repo, branch) {
        return Ok(false);
    }
    let commit = if from == "HEAD" {
        repo.head()
            .and_then(|h| h.peel_to_commit())
            .map_err(|_| GitError::Other("the repository has no commits yet: make a first commit, then run guild-hall init".into()))?
    } else if from.starts_with("refs/") {
        repo.find_reference(from).map_err(|_| GitError::Other(format!("{from} does not exist")))?.peel_to_commit()?
    } else {
        repo.find_branch(from, BranchType::Local)
            .map_err(|_| GitError::Other(format!("branch {from:?} does not exist (run guild-hall init)")))?
            .get()
            .peel_to_commit()?
    };
    set_branch(repo, branch, &commit, false)?;
    Ok(true)
}

/// Point `branch` at `commit` (`force`: move it if it exists), never over a lock file of git's:
/// a crash's leftover older than [`STALE_REF_LOCK`] is removed first ([`ref_lock_to_wait_for`]);
/// a younger one is an error naming it, and the caller tries again on a later pass.
pub(crate) fn set_branch(repo: &Repository, branch: &str, commit: &git2::Commit<'_>, force: bool) -> Result<()> {
    let refname = format!("refs/heads/{branch}");
    if let Some(why) = ref_lock_to_wait_for(repo, &refname) {
        return Err(GitError::Other(why));
    }
    updating_ref(repo, &refname, || repo.branch(branch, commit, force))?;
    Ok(())
}

/// Where one git CLI call runs, always named explicitly: guild-hall never lets git discover a
/// repository from a directory a worker can write (a worktree's `.git` file, its admin dir's
/// `commondir`), so a worker cannot redirect where guild-hall reads or commits. Nor is a git
/// dir ever one a worker can write: `git_dir` is the repository's common dir, or a private git
/// dir guild-hall made for one checkout ([`super::worktree`]) — never a worktree's admin dir,
/// whose `config.worktree` git would read as configuration.
pub(super) struct At<'a> {
    git_dir: &'a Path,
    /// The repository's common dir, for a private git dir.
    common_dir: Option<&'a Path>,
    work_tree: Option<&'a Path>,
    index_file: Option<&'a Path>,
    /// The filter drivers to switch off, found at the first call (one operation's calls all
    /// read the same config).
    filters: std::cell::OnceCell<Vec<(String, String)>>,
}

impl<'a> At<'a> {
    /// The repository itself (`common`, its common dir) with `work_tree`'s files and, if
    /// given, an index of our own.
    pub(super) fn repo(common: &'a Path, work_tree: &'a Path, index_file: Option<&'a Path>) -> At<'a> {
        At { git_dir: common, common_dir: None, work_tree: Some(work_tree), index_file, filters: Default::default() }
    }

    /// For a call that reads and writes no file's content (`worktree add --no-checkout`): no
    /// filter driver can run, so none is looked up.
    pub(super) fn no_filters_needed(&self) {
        let _ = self.filters.set(Vec::new());
    }

    /// A private git dir of ours (`git_dir`, in a temp dir) on the repository `common`.
    pub(super) fn private(git_dir: &'a Path, common: &'a Path, work_tree: &'a Path, index_file: &'a Path) -> At<'a> {
        At { git_dir, common_dir: Some(common), work_tree: Some(work_tree), index_file: Some(index_file), filters: Default::default() }
    }
}

/// Configuration that makes git run a program, or a git in another repository, switched off
/// for every call of ours. Hooks of every kind (`post-index-change` and `reference-transaction`
/// included), fsmonitor, signing, automatic gc/maintenance, a pager, and a checkout recursing
/// into submodules (a nested repository is the worker's: its config would be read by the git
/// run inside it). The configured filter drivers are switched off by name on top of these
/// ([`filters_off`]); diffs never run an external diff or textconv ([`per_command`]).
const NO_PROGRAMS: [&str; 7] = [
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "commit.gpgSign=false",
    "gc.auto=0",
    "maintenance.auto=false",
    "core.pager=cat",
    "submodule.recurse=false",
];

/// What our own indexes need: one self-contained file (no shared index written into a git
/// dir), and no untracked cache (an index copied from a worker's could carry a forged one).
const OWN_INDEX: [&str; 2] = ["core.splitIndex=false", "core.untrackedCache=false"];

/// Options each subcommand needs so that it runs nothing and enters no nested repository: a
/// diff runs no external diff or textconv, and neither a diff nor a status looks inside a
/// submodule's files (which runs `git status` in it, under that repository's own config — a
/// worker's) — a gitlink still counts as changed when its commit moved.
fn per_command(sub: &str) -> &'static [&'static str] {
    match sub {
        "diff" => &["--no-ext-diff", "--no-textconv", "--ignore-submodules=dirty"],
        "status" => &["--ignore-submodules=dirty"],
        _ => &[],
    }
}

/// Run the git CLI at `at` with a clean environment: no inherited `GIT_*` variable (some make
/// git run programs or read other config, `GIT_CONFIG_COUNT` among them), no system or global
/// config, no hooks, filters or other configured programs, no prompts, and our commit identity.
/// (libgit2, which does the rest, runs no hooks, fsmonitor or filter programs at all; it reads
/// the user's config only for the commit identity, [`signature`].)
pub(super) fn cli(at: &At<'_>, args: &[&str], identity: Option<&Signature<'_>>) -> Result<String> {
    cli_raw(at, args, identity).map(|out| String::from_utf8_lossy(&out).into_owned())
}

/// [`cli`], its output as git wrote it: paths listed with `-z` byte for byte, UTF-8 or not.
pub(super) fn cli_raw(at: &At<'_>, args: &[&str], identity: Option<&Signature<'_>>) -> Result<Vec<u8>> {
    let off = match at.filters.get() {
        Some(off) => off,
        None => {
            let found = filters_off(at)?;
            at.filters.get_or_init(|| found)
        }
    };
    let mut cmd = command(at, off);
    // `-c` pairs the caller put first, then the subcommand with the options it needs.
    let mut rest = args;
    while let [c, kv, more @ ..] = rest {
        if *c != "-c" {
            break;
        }
        cmd.arg(c).arg(kv);
        rest = more;
    }
    if let [sub, more @ ..] = rest {
        cmd.arg(sub).args(per_command(sub)).args(more);
    }
    if let Some(sig) = identity {
        let (name, email) = (sig.name().unwrap_or(FALLBACK_NAME), sig.email().unwrap_or(FALLBACK_EMAIL));
        cmd.env("GIT_AUTHOR_NAME", name).env("GIT_AUTHOR_EMAIL", email).env("GIT_COMMITTER_NAME", name).env("GIT_COMMITTER_EMAIL", email);
    }
    output(cmd, args)
}

/// `git` at `at` with our environment and hardening, `config` (key, value) set on top of the
/// repository's (as `GIT_CONFIG_COUNT` entries: names need no quoting, whatever they hold).
fn command(at: &At<'_>, config: &[(String, String)]) -> Command {
    let mut cmd = Command::new("git");
    for c in NO_PROGRAMS.iter().chain(OWN_INDEX.iter()) {
        cmd.arg("-c").arg(c);
    }
    cmd.current_dir(at.work_tree.unwrap_or(at.git_dir));
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("GIT_") {
            cmd.env_remove(k);
        }
    }
    // Neither the system's nor the user's config: a program named there (a hooks path, an
    // fsmonitor, a clean filter through `core.attributesFile`) would run inside our commits.
    // The identity comes from `identity`, never from git's config.
    cmd.env("GIT_DIR", at.git_dir).env("GIT_TERMINAL_PROMPT", "0").env("GIT_CONFIG_NOSYSTEM", "1").env("GIT_CONFIG_GLOBAL", "/dev/null");
    // A partial clone's lazy fetch would run the remote's configured transport: never.
    cmd.env("GIT_NO_LAZY_FETCH", "1");
    if let Some(c) = at.common_dir {
        cmd.env("GIT_COMMON_DIR", c);
    }
    if let Some(w) = at.work_tree {
        cmd.env("GIT_WORK_TREE", w);
    }
    if let Some(i) = at.index_file {
        cmd.env("GIT_INDEX_FILE", i);
    }
    cmd.env("GIT_CONFIG_COUNT", config.len().to_string());
    for (n, (k, v)) in config.iter().enumerate() {
        cmd.env(format!("GIT_CONFIG_KEY_{n}"), k).env(format!("GIT_CONFIG_VALUE_{n}"), v);
    }
    cmd
}

/// `git <args>` against a remote, in the repository `common` (its common dir, named
/// explicitly): unlike [`cli`], with the person's own git configuration and environment
/// (credential helpers, `url.*.insteadOf`, `GIT_SSH_COMMAND`: what reaching their remote
/// needs), but with hooks off (no `pre-push`), no prompt, and no inherited variable that would
/// point git at another repository. The output is returned whatever the exit code: a rejected
/// push is an answer, not a failure of ours.
pub(super) fn cli_remote(common: &Path, remote: &str, args: &[&str]) -> Result<std::process::Output> {
    let git = || {
        let mut cmd = Command::new("git");
        cmd.arg("-c").arg("core.hooksPath=/dev/null").arg("--git-dir").arg(common).current_dir(common);
        for var in [
            "GIT_DIR",
            "GIT_WORK_TREE",
            "GIT_INDEX_FILE",
            "GIT_COMMON_DIR",
            "GIT_OBJECT_DIRECTORY",
            "GIT_ALTERNATE_OBJECT_DIRECTORIES",
            "GIT_NAMESPACE",
        ] {
            cmd.env_remove(var);
        }
        cmd.env("GIT_TERMINAL_PROMPT", "0");
        cmd
    };
    let mut cmd = git();
    cmd.args(args);
    if let Some(token) = std::env::var(PUSH_TOKEN_VAR).ok().filter(|t| !t.is_empty()) {
        // For this one command only, as an entry of the environment (`GIT_CONFIG_*`, after
        // any the person set): never written to a config file a worker reads, nor on a command
        // line that any process can read in /proc. Scoped to the remote's own URLs
        // (`http.<url>.extraheader`): whatever else the command reaches (a submodule's
        // remote, another host) is not sent it.
        let mut n = std::env::var("GIT_CONFIG_COUNT").ok().and_then(|c| c.parse::<usize>().ok()).unwrap_or(0);
        let header = format!("AUTHORIZATION: basic {}", base64(format!("x-access-token:{token}").as_bytes()));
        for url in remote_http_urls(git, remote) {
            cmd.env(format!("GIT_CONFIG_KEY_{n}"), format!("http.{url}.extraheader")).env(format!("GIT_CONFIG_VALUE_{n}"), &header);
            n += 1;
        }
        cmd.env("GIT_CONFIG_COUNT", n.to_string());
    }
    Ok(cmd.output()?)
}

/// The HTTP(S) URLs `remote` fetches from and pushes to, as git resolves them (`insteadOf`
/// applied), without a user or password: what a header for it is scoped to. `remote` may be a
/// URL itself.
fn remote_http_urls(git: impl Fn() -> Command, remote: &str) -> Vec<String> {
    let mut urls = Vec::new();
    for push in [false, true] {
        let mut cmd = git();
        cmd.args(["remote", "get-url"]);
        if push {
            cmd.arg("--push");
        }
        if let Ok(out) = cmd.arg("--").arg(remote).output() {
            if out.status.success() {
                urls.extend(String::from_utf8_lossy(&out.stdout).lines().map(str::to_string));
            }
        }
    }
    if urls.is_empty() {
        urls.push(remote.to_string());
    }
    let mut scoped: Vec<String> = urls.iter().filter_map(|u| without_userinfo(u.trim())).collect();
    scoped.sort();
    scoped.dedup();
    scoped
}

/// `url` (http or https) without its `user[:password]@`; `None` for any other kind of URL.
fn without_userinfo(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
        return None;
    }
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    (!host.is_empty()).then(|| format!("{scheme}://{host}{path}"))
}

/// The variable `guild-hall ci` (and every fetch and push of guild-hall's) takes an HTTPS
/// token from: sent to the remote as `actions/checkout` would, but kept out of `.git/config`,
/// where a worker could read it. No worker is ever passed it ([`crate::worker::pass_env`]).
pub(crate) const PUSH_TOKEN_VAR: &str = "GUILD_HALL_PUSH_TOKEN";

/// Standard base64 with padding (an HTTP basic credential).
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], chunk.get(1).copied().unwrap_or(0), chunk.get(2).copied().unwrap_or(0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i)) as usize & 63]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn output(mut cmd: Command, args: &[&str]) -> Result<Vec<u8>> {
    let out = cmd.output()?;
    if !out.status.success() {
        return Err(GitError::Cli { args: args.join(" "), stderr: String::from_utf8_lossy(&out.stderr).trim().to_string() });
    }
    Ok(out.stdout)
}

/// Every filter driver the repository's config defines (`filter.<name>.clean`, `smudge`,
/// `process`), switched off: blank commands run nothing, and none is `required`. A worker
/// picks which files a driver applies to (its `.gitattributes`), so a driver the person
/// configured (git-lfs, git-crypt) would run on the worker's files, as guild-hall. With none,
/// what guild-hall checks out and commits is the bytes as they are, both ways.
fn filters_off(at: &At<'_>) -> Result<Vec<(String, String)>> {
    let mut cmd = command(at, &[]);
    cmd.args(["config", "--null", "--name-only", "--get-regexp", r"^filter\."]);
    let out = cmd.output()?;
    // 1: no such key, nothing to switch off.
    if !out.status.success() && out.status.code() != Some(1) {
        return Err(GitError::Cli {
            args: "config --get-regexp ^filter\\.".into(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    let mut names = std::collections::BTreeSet::new();
    for key in out.stdout.split(|b| *b == 0).filter(|k| !k.is_empty()) {
        let key = String::from_utf8_lossy(key);
        // `filter.<name>.<key>`: the name may hold dots, the key cannot.
        if let Some(name) = key.strip_prefix("filter.").and_then(|r| r.rsplit_once('.')).map(|(name, _)| name.to_string()) {
            names.insert(name);
        }
    }
    let mut config = Vec::new();
    for name in names {
        for (key, value) in [("clean", ""), ("smudge", ""), ("process", ""), ("required", "false")] {
            config.push((format!("filter.{name}.{key}"), value.to_string()));
        }
    }
    Ok(config)
}

pub(super) fn canonical(p: &Path) -> PathBuf {
    p.canonicalize().unwrap_or_else(|_| p.to_path_buf())
}

/// The repository's common dir (`.git` of the main checkout) for a project.
pub(crate) fn common_dir(project_root: &Path) -> Result<PathBuf> {
    Ok(canonical(open(project_root)?.commondir()))
}

/// How old a ref's lock file must be before guild-hall takes it for what a process killed in
/// the middle of a ref update left behind. Git holds a ref's lock for the instant of one update
/// (`git commit` takes it after the editor closes, not while it is open), so a lock this old is
/// no update still under way.
pub(crate) const STALE_REF_LOCK: std::time::Duration = std::time::Duration::from_secs(5 * 60);

/// How old a ref's lock must be to be removed when guild-hall's own mark says one of its
/// updates of that ref was killed midway, and the lock was made within [`MARK_TO_LOCK`] of it
/// ([`updating_ref`]): that update's, whose process is gone.
pub(crate) const DEAD_UPDATE_REF_LOCK: std::time::Duration = std::time::Duration::from_secs(10);

/// The mark of guild-hall's own updates of `refname`, in the common dir (where no worker
/// writes): `.git/guild-hall/ref-<hash>`.
fn update_mark(repo: &Repository, refname: &str) -> PathBuf {
    repo.commondir().join("guild-hall").join(format!("ref-{:016x}", crate::artifact::store::content_hash(refname)))
}

/// What a mark says while an update runs.
const UPDATING: &[u8] = b"updating";

/// Run `update` of `refname`, marked: the mark's lock held by this process throughout (the
/// kernel lets go of it when the process dies, however it dies) and its text saying `updating`
/// until the update is over, when it is removed. A ref lock found with the mark saying `updating` and its lock free
/// was left by one of guild-hall's updates killed midway, and is removed once
/// [`DEAD_UPDATE_REF_LOCK`] old ([`ref_lock_to_wait_for`]) rather than after [`STALE_REF_LOCK`]:
/// a reconciler killed at any instant converges in seconds, not minutes. Unmarked (the mark
/// cannot be made), the update runs as before and such a lock waits out its age.
pub(crate) fn updating_ref<T>(repo: &Repository, refname: &str, update: impl FnOnce() -> T) -> T {
    use std::os::unix::fs::FileExt;
    let mark = update_mark(repo, refname);
    let held = mark
        .parent()
        .and_then(|dir| std::fs::create_dir_all(dir).ok())
        .and_then(|()| crate::files::lock(&mark, crate::files::Lock::Exclusive).ok().flatten())
        .filter(|f| f.set_len(0).is_ok() && f.write_all_at(UPDATING, 0).is_ok());
    let out = update();
    if let Some(f) = held {
        // Cleared, then removed: one mark per branch ever updated would pile up. A reader that
        // opened it before the removal reads it cleared.
        let _ = f.set_len(0);
        let _ = std::fs::remove_file(&mark);
    }
    out
}

/// How soon after its mark an update of guild-hall's takes the ref's lock: a lock made later
/// is not that update's (a mark left saying `updating` by an update killed before it took the
/// lock, or after it let go, must not make a later git's lock look like ours).
const MARK_TO_LOCK: std::time::Duration = std::time::Duration::from_secs(5);

/// Whether the ref lock last modified at `locked` was left by an update of guild-hall's
/// killed midway: `refname`'s mark says `updating`, no process holds the mark's lock, and the
/// ref lock was made within [`MARK_TO_LOCK`] after the mark. The mark, locked, when it was (to
/// be cleared once the lock the update left is gone).
fn left_by_a_killed_update(repo: &Repository, refname: &str, locked: std::time::SystemTime) -> Option<nix::fcntl::Flock<std::fs::File>> {
    use std::io::Read;
    let mark = update_mark(repo, refname);
    let marked = std::fs::symlink_metadata(&mark).ok().filter(|m| m.is_file())?.modified().ok()?;
    let after_mark = locked.duration_since(marked).ok().is_some_and(|d| d <= MARK_TO_LOCK);
    if !after_mark {
        return None;
    }
    let mut held = crate::files::lock(&mark, crate::files::Lock::TryExclusive).ok().flatten()?;
    let mut said = Vec::new();
    held.read_to_end(&mut said).ok()?;
    (said == UPDATING).then_some(held)
}

/// The lock file an update of `refname` (`refs/heads/…`) must wait for, after removing a stale
/// one: git's `<ref>.lock` beside the loose ref in the common dir. `None` when there is none, or
/// when the one there was stale and is removed; else why the update waits, naming the file. The
/// age is what makes removal safe: git holds a ref's lock only for the instant of one update,
/// whoever runs it (this process, another home, a person's git), so a lock minutes old — or
/// seconds old, when guild-hall's own mark says its update of the ref was killed midway
/// ([`updating_ref`]) — is a crash's leftover. A young one is never removed, only waited for.
pub(crate) fn ref_lock_to_wait_for(repo: &Repository, refname: &str) -> Option<String> {
    let lock = repo.commondir().join(format!("{refname}.lock"));
    let meta = std::fs::symlink_metadata(&lock).ok()?;
    let age = meta.modified().ok().and_then(|m| m.elapsed().ok()).unwrap_or_default();
    let killed = meta.modified().ok().filter(|_| meta.is_file()).and_then(|at| left_by_a_killed_update(repo, refname, at));
    let stale_after = if killed.is_some() { DEAD_UPDATE_REF_LOCK } else { STALE_REF_LOCK };
    if meta.is_file() && age > stale_after {
        match std::fs::remove_file(&lock) {
            Ok(()) => {
                tracing::warn!(lock = %lock.display(), age = ?age, "removed a stale ref lock (a git process killed mid-update left it)");
                if let Some(mark) = killed {
                    let _ = mark.set_len(0);
                    let _ = std::fs::remove_file(update_mark(repo, refname));
                }
                return None;
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(e) => tracing::warn!(lock = %lock.display(), error = %e, "could not remove a stale ref lock"),
        }
    }
    let whose =
        if killed.is_some() { "an update of guild-hall's killed midway" } else { "a git process updating it, or one killed mid-update" };
    Some(format!(
        "{} is locked by {} ({whose}); guild-hall waits, and removes it once it is {} old",
        refname.strip_prefix("refs/heads/").unwrap_or(refname),
        lock.display(),
        humantime::format_duration(stale_after)
    ))
}

/// Whether `e` is git finding a lock file in its way (a ref's or an index's `.lock`).
pub(crate) fn is_lock_error(e: &GitError) -> bool {
    matches!(e, GitError::Git(g) if g.code() == git2::ErrorCode::Locked)
}

#[cfg(test)]
mod token_tests {
    /// An HTTP basic credential, encoded as every server decodes it.
    #[test]
    fn base64_pads_as_the_standard_says() {
        for (plain, encoded) in
            [("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("x-access-token:tok", "eC1hY2Nlc3MtdG9rZW46dG9r")]
        {
            assert_eq!(super::base64(plain.as_bytes()), encoded, "{plain:?}");
        }
    }
}

#[cfg(test)]
mod ref_lock_tests {
    use super::*;

    /// Set `path`'s mtime to `ago` before now.
    fn aged(path: &Path, ago: u64) {
        let at = std::time::SystemTime::now() - std::time::Duration::from_secs(ago);
        std::fs::File::options().write(true).open(path).unwrap().set_modified(at).unwrap();
    }

    /// A repository with one commit on `main`, and `refs/heads/main.lock` made `age` ago.
    fn locked(dir: &Path, age: std::time::Duration) -> (Repository, PathBuf) {
        let repo = Repository::init(dir).unwrap();
        {
            let sig = Signature::now("t", "t@example.com").unwrap();
            let tree = repo.find_tree(repo.index().unwrap().write_tree().unwrap()).unwrap();
            repo.commit(Some("refs/heads/main"), &sig, &sig, "one", &tree, &[]).unwrap();
        }
        let lock = repo.commondir().join("refs/heads/main.lock");
        std::fs::write(&lock, "0000000000000000000000000000000000000000\n").unwrap();
        std::fs::File::options().write(true).open(&lock).unwrap().set_modified(std::time::SystemTime::now() - age).unwrap();
        (repo, lock)
    }

    /// The mark as an update of ours killed midway leaves it: saying `updating`, its lock free.
    fn killed_mark(repo: &Repository) -> PathBuf {
        let mark = update_mark(repo, "refs/heads/main");
        std::fs::create_dir_all(mark.parent().unwrap()).unwrap();
        std::fs::write(&mark, UPDATING).unwrap();
        mark
    }

    #[test]
    fn a_ref_lock_an_update_of_ours_left_when_killed_goes_in_seconds() {
        let dir = tempfile::tempdir().unwrap();
        let (repo, lock) = locked(dir.path(), std::time::Duration::from_secs(20));
        // Unmarked: anyone's, minutes from stale.
        assert!(ref_lock_to_wait_for(&repo, "refs/heads/main").is_some_and(|why| why.contains("5m")));
        assert!(lock.exists());
        let mark = killed_mark(&repo);
        // The mark made 20s ago, as the lock was: the killed update's.
        aged(&mark, 21);
        assert_eq!(ref_lock_to_wait_for(&repo, "refs/heads/main"), None, "ours, killed midway, 20s old: removed");
        assert!(!lock.exists());
        assert!(!mark.exists(), "the mark gone with it");
    }

    #[test]
    fn a_lock_made_long_after_a_killed_updates_mark_is_anyones() {
        let dir = tempfile::tempdir().unwrap();
        let (repo, lock) = locked(dir.path(), std::time::Duration::from_secs(20));
        let mark = killed_mark(&repo);
        // The mark left an hour ago by an update killed before (or after) it held the lock.
        aged(&mark, 3600);
        assert!(ref_lock_to_wait_for(&repo, "refs/heads/main").is_some_and(|why| why.contains("5m")), "a later git's: minutes");
        assert!(lock.exists());
    }

    #[test]
    fn a_young_lock_or_one_a_live_update_holds_is_waited_for() {
        let dir = tempfile::tempdir().unwrap();
        let (repo, lock) = locked(dir.path(), std::time::Duration::from_secs(1));
        let mark = killed_mark(&repo);
        aged(&mark, 2);
        let why = ref_lock_to_wait_for(&repo, "refs/heads/main").expect("young: waited for");
        assert!(why.contains("killed midway") && why.contains("10s"), "{why}");
        assert!(lock.exists());
        // Old enough, but an update of ours is at work (its mark's lock held): waited for.
        aged(&mark, 61);
        aged(&lock, 60);
        let held = crate::files::lock(&mark, crate::files::Lock::Exclusive).unwrap();
        assert!(ref_lock_to_wait_for(&repo, "refs/heads/main").is_some_and(|why| why.contains("5m")), "a live update's");
        drop(held);
        assert_eq!(ref_lock_to_wait_for(&repo, "refs/heads/main"), None);
    }

    #[test]
    fn a_marked_update_leaves_its_mark_clear_and_the_ref_moved() {
        let dir = tempfile::tempdir().unwrap();
        let (repo, lock) = locked(dir.path(), std::time::Duration::from_secs(0));
        std::fs::remove_file(&lock).unwrap();
        let head = repo.refname_to_id("refs/heads/main").unwrap();
        let commit = repo.find_commit(head).unwrap();
        let mark = update_mark(&repo, "refs/heads/side");
        let said = updating_ref(&repo, "refs/heads/side", || std::fs::read(&mark).unwrap());
        assert_eq!(said, UPDATING, "it says updating while the update runs");
        assert!(!mark.exists(), "and is gone once it is over");
        set_branch(&repo, "side", &commit, false).unwrap();
        assert_eq!(repo.refname_to_id("refs/heads/side").unwrap(), head);
    }
}
