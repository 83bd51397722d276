//! Whether an id is free, the one place that answers it: an id stays taken while anything of
//! it exists — its artifact (or timeline), a branch that may hold its work, a trailer naming
//! it on the integration branch, a runtime trace in this home ([`runtime`]) — so no new work is
//! ever handed an old id's history. Creating picks the next free id (`hello-2`) through it.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use git2::{Oid, Repository};

use super::git::Result;
use super::kind::Name;
use super::names;
use crate::config::{Home, Project};

/// Something of an id that exists, and so holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Trace {
    /// Its artifact, or the timeline beside it.
    File(PathBuf),
    /// A branch that may hold its work (`origin/claude/…` for a remote-tracking one).
    Branch(String),
    /// A trailer line naming it, on the integration branch (or a remote's copy of it).
    Trailer { line: String, commit: Oid },
    /// Its runtime dir, worktree, transcript or unsettled update in this home ([`runtime`]).
    Runtime(PathBuf),
}

impl std::fmt::Display for Trace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Trace::File(p) => write!(f, "the file {}", p.display()),
            Trace::Branch(b) => write!(f, "branch {b}"),
            Trace::Trailer { line, commit } => {
                write!(f, "the trailer `{line}` of commit {:.10} on the integration branch", commit.to_string())
            }
            Trace::Runtime(p) => write!(f, "{} in this home", p.display()),
        }
    }
}

/// An id asked for by name that something already holds.
#[derive(Debug, thiserror::Error)]
#[error("{kind} id {id} is taken by {}: ids are never reused (leave the id out to be given a free one)", list(.traces))]
pub(crate) struct Taken {
    pub(crate) kind: Name,
    pub(crate) id: String,
    pub(crate) traces: Vec<Trace>,
}

fn list(traces: &[Trace]) -> String {
    traces.iter().map(Trace::to_string).collect::<Vec<_>>().join(", ")
}

/// What holds the ids of one kind in one project, read once (its branches, the trailers on its
/// integration branch), to ask about as many ids as needed.
pub(crate) struct Used<'a> {
    kind: Name,
    home: &'a Home,
    project: &'a Project,
    /// (as shown, as matched: `claude/…`), local and remote-tracking.
    branches: Vec<(String, String)>,
    /// The id a trailer names → the newest such line and its commit.
    trailers: HashMap<String, (String, Oid)>,
}

impl<'a> Used<'a> {
    /// Read the branches and the integration branch's trailers (local, and every remote's copy).
    pub(crate) fn read(home: &'a Home, project: &'a Project, kind: Name) -> Result<Used<'a>> {
        let repo = super::git::open(&project.root)?;
        let integration = &project.config.integration_branch;
        let mut branches = Vec::new();
        let mut tips = Vec::new();
        for r in repo.references()? {
            let r = r?;
            let Ok(name) = r.name() else { continue };
            let (shown, short) = if let Some(b) = name.strip_prefix("refs/heads/") {
                (b.to_string(), b)
            } else if let Some((remote, b)) = name.strip_prefix("refs/remotes/").and_then(|n| n.split_once('/')) {
                (format!("{remote}/{b}"), b)
            } else {
                continue;
            };
            if short == integration {
                if let Ok(c) = r.peel_to_commit() {
                    tips.push(c.id());
                }
            } else if short.starts_with("claude/") {
                branches.push((shown, short.to_string()));
            }
        }
        Ok(Used { kind, home, project, branches, trailers: trailers(&repo, kind, &tips)? })
    }

    /// Everything that holds `id` (empty: it is free).
    pub(crate) fn traces(&self, id: &str) -> Vec<Trace> {
        let p = self.project;
        let artifact = match self.kind {
            Name::Commission => p.commission_path(id),
            Name::Meeting => p.meeting_path(id),
            Name::Plan => p.plan_path(id),
        };
        let timeline = super::timeline::path_for(&artifact);
        let mut found: Vec<Trace> =
            [artifact.clone(), timeline].into_iter().filter(|f| f.symlink_metadata().is_ok()).map(Trace::File).collect();
        // An id of another case holds it too: on a filesystem that folds case (a clone on
        // macOS) their files, branches and state dirs would be one. (Runtime paths are looked
        // up as named: where case folds, that lookup finds the other case's already.)
        found.extend(other_cases(&artifact).into_iter().map(Trace::File));
        let folded = id.to_ascii_lowercase();
        found.extend(
            self.branches
                .iter()
                .filter(|(_, b)| {
                    names::may_hold_work_of(self.kind, id, b) || names::may_hold_work_of(self.kind, &folded, &b.to_ascii_lowercase())
                })
                .map(|(shown, _)| Trace::Branch(shown.clone())),
        );
        if let Some((line, commit)) = self.trailers.get(&folded) {
            found.push(Trace::Trailer { line: line.clone(), commit: *commit });
        }
        found.extend(runtime(self.home, p, self.kind, id).into_iter().map(Trace::Runtime));
        found
    }

    /// `id`, if nothing holds it; else why not.
    pub(crate) fn claim(&self, id: &str) -> std::result::Result<(), Taken> {
        let traces = self.traces(id);
        if traces.is_empty() {
            Ok(())
        } else {
            Err(Taken { kind: self.kind, id: id.to_string(), traces })
        }
    }

    /// The first free id of `base`, `base-2`, `base-3`, … that `also_taken` does not name
    /// (ids seen taken meanwhile, by a concurrent create).
    pub(crate) fn next_free(&self, base: &str, also_taken: &[String]) -> String {
        (1u64..)
            .map(|n| if n == 1 { base.to_string() } else { crate::artifact::ids::derived(base, &n.to_string()) })
            .find(|c| !also_taken.contains(c) && self.traces(c).is_empty())
            .unwrap_or_else(|| base.to_string())
    }
}

/// What this home holds of `kind`'s `id` at run time — its state dir, worktree(s) (a plan's:
/// its tasks' and its verify worktree), transcript, an update a killed pass left to settle (`intents/<kind>.<id>.json`) — that exists: the one
/// answer to "did this home start it?". Empty: this home holds no record and no runtime trace
/// of it (work under way there is another home's, or one whose home was lost).
pub(crate) fn runtime(home: &Home, project: &Project, kind: Name, id: &str) -> Vec<PathBuf> {
    let name = &project.name;
    let mut paths = match kind {
        Name::Commission => vec![home.commission_state(name, id), home.worktree(name, id)],
        Name::Meeting => vec![home.meeting_state(name, id), home.meeting_worktree(name, id), home.transcript(name, id)],
        Name::Plan => {
            // Its tasks' worktrees too, by the slug every task of the plan's begins with.
            let tasks = format!("{}{}", crate::config::worktree_prefix::TASK, names::task_slug_prefix(id));
            let worktrees = std::fs::read_dir(home.worktrees_dir(name)).into_iter().flatten().flatten();
            let mut paths: Vec<PathBuf> =
                worktrees.filter(|e| e.file_name().to_str().is_some_and(|n| n.starts_with(&tasks))).map(|e| e.path()).collect();
            paths.extend([home.plan_state(name, id), home.verify_worktree(name, id)]);
            paths
        }
    };
    paths.push(super::apply::intent_path(home, project, kind, id));
    paths.retain(|d| d.symlink_metadata().is_ok());
    paths
}

/// The ids named by `kind`'s trailers in the history of `tips`, with the newest line of each.
fn trailers(repo: &Repository, kind: Name, tips: &[Oid]) -> Result<HashMap<String, (String, Oid)>> {
    let mut by_id = HashMap::new();
    for (commit, line) in super::trailers::lines_anywhere(repo, tips, &[], names::trailer_prefix(kind))? {
        if let Some(id) = names::trailer_owner(kind, &line) {
            // By the id folded to lower case: one of another case holds it too.
            by_id.entry(id.to_ascii_lowercase()).or_insert((line, commit));
        }
    }
    Ok(by_id)
}

/// The files beside `artifact` named as it or its timeline but in another case (only where the
/// filesystem keeps case apart; where it folds case the exact lookup found them).
fn other_cases(artifact: &std::path::Path) -> Vec<PathBuf> {
    let (Some(dir), Some(name)) = (artifact.parent(), artifact.file_name().and_then(|n| n.to_str())) else { return Vec::new() };
    let timeline = super::timeline::path_for(artifact);
    let timeline = timeline.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut found: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| (n.eq_ignore_ascii_case(name) && n != name) || (n.eq_ignore_ascii_case(&timeline) && *n != timeline))
        .map(|n| dir.join(n))
        .collect();
    found.sort();
    found
}

/// The first attempt after `after` whose branch (`claude/commission/<id>` or `<id>+<n>`) does
/// not exist and, with `landed` (the trailer lines of [`integration_trailers`]), whose trailer
/// is not on the integration branch: a new attempt never reuses a branch or a trailer, whatever
/// this home remembers (a fresh home, a clone of a CI origin, which has the trailers but not
/// the branches; a wiped record). Probes exact names only, so it costs a lookup or two per call.
/// Remote-tracking copies count too (a clone's `origin/claude/commission/<id>`).
pub(crate) fn first_free_attempt(repo: &Repository, id: &str, after: u32, landed: Option<&HashSet<String>>) -> u32 {
    let remotes = remote_names(repo);
    let exists = |branch: &str| {
        super::git::branch_exists(repo, branch)
            || remotes.iter().any(|r| repo.find_reference(&format!("refs/remotes/{r}/{branch}")).is_ok())
    };
    let taken = |attempt: u32| {
        exists(&names::commission_branch(id, attempt)) || landed.is_some_and(|l| l.contains(&names::commission_trailer(id, attempt)))
    };
    let mut attempt = after.saturating_add(1);
    while taken(attempt) {
        attempt = attempt.saturating_add(1);
    }
    attempt
}

/// Every commission trailer line on the integration branch `integration`, local and every
/// remote's copy (`refs/remotes/<remote>/<integration>`): what [`first_free_attempt`] skips.
pub(crate) fn integration_trailers(repo: &Repository, integration: &str) -> Result<HashSet<String>> {
    commission_trailers_between(repo, &integration_tips(repo, integration), &[])
}

/// The integration branch's tip and every remote's copy's: where [`integration_trailers`] reads.
pub(crate) fn integration_tips(repo: &Repository, integration: &str) -> Vec<Oid> {
    let local = repo.find_reference(&format!("refs/heads/{integration}")).ok().and_then(|r| r.peel_to_commit().ok()).map(|c| c.id());
    local.into_iter().chain(remote_copies(repo, integration).into_iter().map(|(_, c)| c)).collect()
}

/// Every commission trailer line in the history of `tips` and not of `hide`.
pub(crate) fn commission_trailers_between(repo: &Repository, tips: &[Oid], hide: &[Oid]) -> Result<HashSet<String>> {
    let found = super::trailers::lines_anywhere(repo, tips, hide, names::trailer_prefix(Name::Commission))?;
    Ok(found.into_iter().map(|(_, line)| line).collect())
}

/// Every remote's copy of `branch` (`origin/claude/main`, …) with its commit.
fn remote_copies(repo: &Repository, branch: &str) -> Vec<(String, Oid)> {
    remote_names(repo)
        .into_iter()
        .filter_map(|r| {
            let commit = repo.find_reference(&format!("refs/remotes/{r}/{branch}")).ok()?.peel_to_commit().ok()?.id();
            Some((format!("{r}/{branch}"), commit))
        })
        .collect()
}

/// The repository's remotes, by name (none when they cannot be read).
fn remote_names(repo: &Repository) -> Vec<String> {
    repo.remotes().map(|r| r.iter().flatten().flatten().map(str::to_string).collect()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &std::path::Path, args: &[&str]) {
        let out = std::process::Command::new("git")
            .current_dir(dir)
            .args(args)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .expect("git runs");
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }

    /// A repository with an integration branch, and a home beside it.
    fn setup() -> (tempfile::TempDir, Home, Project) {
        let dir = tempfile::tempdir().expect("tmp");
        let root = dir.path().join("repo");
        std::fs::create_dir_all(&root).expect("mkdir");
        git(&root, &["init", "-q", "-b", "main"]);
        git(&root, &["-c", "user.name=T", "-c", "user.email=t@e", "commit", "-q", "--allow-empty", "-m", "first"]);
        git(&root, &["branch", "claude/main"]);
        let home = Home { root: dir.path().join("home") };
        let project = Project { root, name: "p".into(), config: Default::default() };
        (dir, home, project)
    }

    /// A commit on the integration branch whose message carries `trailer`.
    fn land(project: &Project, trailer: &str) {
        let msg = format!("work\n\n{trailer}\n");
        git(&project.root, &["-c", "user.name=T", "-c", "user.email=t@e", "checkout", "-q", "claude/main"]);
        git(&project.root, &["-c", "user.name=T", "-c", "user.email=t@e", "commit", "-q", "--allow-empty", "-m", &msg]);
        git(&project.root, &["checkout", "-q", "main"]);
    }

    fn kinds_of(used: &Used<'_>, id: &str) -> Vec<&'static str> {
        used.traces(id)
            .iter()
            .map(|t| match t {
                Trace::File(_) => "file",
                Trace::Branch(_) => "branch",
                Trace::Trailer { .. } => "trailer",
                Trace::Runtime(_) => "runtime",
            })
            .collect()
    }

    #[test]
    fn each_trace_takes_an_id_of_its_kind() {
        let (_dir, home, project) = setup();
        std::fs::create_dir_all(project.commissions_dir()).expect("mkdir");
        std::fs::write(project.commission_path("by-file"), "---\n---\n").expect("write");
        std::fs::write(super::super::timeline::path_for(&project.commission_path("by-timeline")), "").expect("write");
        git(&project.root, &["branch", "claude/commission/by-branch"]);
        git(&project.root, &["branch", "claude/commission/by-later+3"]);
        git(&project.root, &["branch", "claude/commission/by-legacy-2"]);
        land(&project, &names::commission_trailer("by-trailer", 4));
        std::fs::create_dir_all(home.commission_state(&project.name, "by-state")).expect("mkdir");
        std::fs::create_dir_all(home.worktree(&project.name, "by-worktree")).expect("mkdir");
        let used = Used::read(&home, &project, Name::Commission).expect("read");
        for (id, kind) in [
            ("by-file", "file"),
            ("by-timeline", "file"),
            ("by-branch", "branch"),
            ("by-later", "branch"),
            ("by-legacy", "branch"),
            ("by-legacy-2", "branch"),
            ("by-trailer", "trailer"),
            ("by-state", "runtime"),
            ("by-worktree", "runtime"),
        ] {
            assert_eq!(kinds_of(&used, id), vec![kind], "{id}");
            let taken = used.claim(id).expect_err(id).to_string();
            assert!(taken.starts_with(&format!("commission id {id} is taken by ")), "{taken}");
        }
        for free in ["by", "by-branch-x", "other"] {
            assert_eq!(used.claim(free).ok(), Some(()), "{free}");
        }
        assert_eq!(used.next_free("by-branch", &[]), "by-branch-2");
        assert_eq!(used.next_free("by-legacy", &[]), "by-legacy-3", "by-legacy-2's branch holds both ids");
        assert_eq!(used.next_free("by-branch", &["by-branch-2".into()]), "by-branch-3");
        assert_eq!(used.next_free("fresh", &[]), "fresh");
        // Another kind's traces take nothing of this kind.
        let meetings = Used::read(&home, &project, Name::Meeting).expect("read");
        assert!(meetings.traces("by-branch").is_empty() && meetings.traces("by-trailer").is_empty());
    }

    #[test]
    fn meetings_and_plans_are_taken_by_their_own_traces() {
        let (_dir, home, project) = setup();
        git(&project.root, &["branch", "claude/meeting/m1"]);
        land(&project, &names::meeting_trailer("m2"));
        std::fs::create_dir_all(home.transcripts_dir(&project.name)).expect("mkdir");
        std::fs::write(home.transcript(&project.name, "m3"), "").expect("write");
        let used = Used::read(&home, &project, Name::Meeting).expect("read");
        assert_eq!([kinds_of(&used, "m1"), kinds_of(&used, "m2"), kinds_of(&used, "m3")], [["branch"], ["trailer"], ["runtime"]]);
        git(&project.root, &["branch", "claude/task/p1-exec-wave-1-a"]);
        git(&project.root, &["branch", "claude/verify/p2"]);
        land(&project, &names::task_trailer("p3:exec:wave-2:t"));
        std::fs::create_dir_all(home.plan_state(&project.name, "p4")).expect("mkdir");
        let used = Used::read(&home, &project, Name::Plan).expect("read");
        let got: Vec<_> = ["p1", "p2", "p3", "p4", "p5"].iter().map(|p| kinds_of(&used, p)).collect();
        assert_eq!(got, [vec!["branch"], vec!["branch"], vec!["trailer"], vec!["runtime"], vec![]]);
    }

    #[test]
    fn a_new_attempt_goes_past_every_branch_of_the_id() {
        let (_dir, _home, project) = setup();
        let repo = git2::Repository::open(&project.root).expect("open");
        assert_eq!(first_free_attempt(&repo, "c", 0, None), 1);
        git(&project.root, &["branch", "claude/commission/c"]);
        git(&project.root, &["branch", "claude/commission/c+2"]);
        assert_eq!(first_free_attempt(&repo, "c", 0, None), 3);
        assert_eq!(first_free_attempt(&repo, "c", 4, None), 5);
        // A remote-tracking copy (a clone's) holds its attempt too.
        git(&project.root, &["update-ref", "refs/remotes/origin/claude/commission/c+3", "HEAD"]);
        git(&project.root, &["remote", "add", "origin", "/nonexistent"]);
        assert_eq!(first_free_attempt(&repo, "c", 0, None), 4);
    }

    /// Review truth #3: a clone of a CI origin has the trailers of the attempts that landed but
    /// not their branches; a new attempt goes past those too (local and remote copies).
    #[test]
    fn a_new_attempt_goes_past_every_trailer_of_the_id() {
        let (_dir, _home, project) = setup();
        let repo = git2::Repository::open(&project.root).expect("open");
        land(&project, &names::commission_trailer("c", 1));
        land(&project, &names::commission_trailer("c-2", 2));
        let landed = integration_trailers(&repo, "claude/main").expect("read");
        assert_eq!(first_free_attempt(&repo, "c", 0, Some(&landed)), 2);
        assert_eq!(first_free_attempt(&repo, "c", 0, None), 1, "without the trailers: branches only");
        // Only on a remote's copy of the integration branch (the local one is behind).
        land(&project, &names::commission_trailer("c", 2));
        git(&project.root, &["remote", "add", "origin", "/nonexistent"]);
        git(&project.root, &["update-ref", "refs/remotes/origin/claude/main", "claude/main"]);
        git(&project.root, &["update-ref", "refs/heads/claude/main", "claude/main~1"]);
        let landed = integration_trailers(&repo, "claude/main").expect("read");
        assert_eq!(first_free_attempt(&repo, "c", 0, Some(&landed)), 3);
    }
}
