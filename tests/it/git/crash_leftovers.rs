//! What a crash leaves in git is never the end of the work: a ref's lock left by a `kill -9`
//! (on the integration branch, under a plan's copy-back, on a commission's own branch) is waited
//! on, naming it, and removed once it is old enough to be a crash's; an admin dir left by a crash
//! inside `git worktree add` is pruned and the worktree made; locks a worker leaves in its own
//! admin dir never wedge its commission.

use crate::common::*;

/// Set `file`'s modification time `secs` seconds back.
fn age(file: &std::path::Path, secs: u64) {
    let then = std::time::SystemTime::now() - std::time::Duration::from_secs(secs);
    std::fs::File::options().write(true).open(file).expect("open").set_modified(then).expect("mtime");
}

/// Single passes until one's output (stdout and stderr) names `what`; 60 s at most.
fn pass_until_said(p: &Project, what: &str) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let out = p.cmd().args(["reconcile", "--once"]).output().expect("runs");
        let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        if said.contains(what) {
            return said;
        }
        assert!(std::time::Instant::now() < deadline, "no pass said {what}; the last said:\n{said}");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// A `kill -9` during a ref update leaves `refs/heads/claude/main.lock`
/// (made here by hand: the world after the crash). Every merge used to fail the work itself.
/// Now the work waits, naming the lock file; a lock old enough to be a crash's leftover (no git
/// holds a ref's lock for minutes) is removed under the project's lock, and the work lands.
#[test]
fn a_ref_lock_left_by_a_crash_never_fails_a_commission() {
    let p = Project::new(&["scribe"]);
    let lock = p.root.join(".git/refs/heads/claude/main.lock");
    std::fs::write(&lock, "").expect("the leftover lock");
    let id = p.create("scribe", "Locked out", "output: .lore/locked.md\nWrite.");
    p.pass_until("the merge waits", |p| p.artifact(&id).contains("merge waiting"));
    let art = p.artifact(&id);
    assert!(art.contains("claude/main.lock"), "the reason names the lock file: {art}");
    assert_ne!(p.status(&id), "failed", "{art}");
    assert!(lock.exists(), "a young lock may be a person's git at work: never removed");
    age(&lock, 600);
    p.settle();
    assert_eq!(p.status(&id), "completed", "{}", p.artifact(&id));
    assert!(!lock.exists(), "the stale lock was removed");
    assert!(git(&p.root, &["show", "claude/main:.lore/locked.md"]).contains("Write."));
}

/// The same lock under a plan: its copy-back used to halt the plan. It waits, then lands.
#[test]
fn a_ref_lock_left_by_a_crash_never_halts_a_plan() {
    let p = Project::new(&["mason"]);
    let lock = p.root.join(".git/refs/heads/claude/main.lock");
    std::fs::write(&lock, "").expect("the leftover lock");
    let dir = p.root.join(".lore/plans");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(dir.join("pl.md"), "---\ntitle: pl\nwaves:\n  - - {id: one, worker: mason, prompt: \"write: src/one.txt one\"}\n---\n")
        .expect("plan");
    let said = pass_until_said(&p, "claude/main.lock");
    assert!(said.contains("waiting"), "{said}");
    let plan: serde_json::Value = serde_json::from_str(&p.ok(&["plan", "show", "pl", "--json"])).expect("json");
    assert_eq!(plan["status"], "running", "{plan}");
    age(&lock, 600);
    p.settle();
    let plan: serde_json::Value = serde_json::from_str(&p.ok(&["plan", "show", "pl", "--json"])).expect("json");
    assert_eq!(plan["status"], "completed", "{plan}");
    assert_eq!(git(&p.root, &["show", "claude/main:src/one.txt"]), "one\n");
}

/// A `kill -9` inside `git worktree add` leaves the admin dir of a worktree never made (made
/// here by hand: `locked`, and a `gitdir` naming the worktree). Every start of that commission
/// or task used to fail "already exists" for ever, `plan retry` included. Ours, it is pruned
/// and the worktree made.
#[test]
fn an_admin_dir_left_by_a_crash_in_worktree_add_is_remade() {
    let p = Project::new(&["scribe", "mason"]);
    let first = p.create("scribe", "First", "output: .lore/first.md\nWrite.");
    p.settle();
    assert_eq!(p.status(&first), "completed");
    let admins = p.root.join(".git/worktrees");
    let leftover = |name: &str, worktree: Option<std::path::PathBuf>| {
        let admin = admins.join(name);
        std::fs::create_dir_all(&admin).expect("mkdir");
        std::fs::write(admin.join("locked"), "initializing\n").expect("locked");
        if let Some(wt) = worktree {
            std::fs::write(admin.join("gitdir"), format!("{}\n", wt.join(".git").display())).expect("gitdir");
        }
    };
    leftover("commission-second", Some(p.worktree("second")));
    let worktrees = p.worktree("second").parent().expect("dir").to_path_buf();
    leftover("task-pl-exec-wave-1-task-1", None);
    let second = p.create("scribe", "Second", "output: .lore/second.md\nWrite.");
    assert_eq!(second, "second");
    let dir = p.root.join(".lore/plans");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(dir.join("pl.md"), "---\ntitle: pl\nwaves:\n  - - {id: one, worker: mason, prompt: \"write: src/one.txt one\"}\n---\n")
        .expect("plan");
    p.settle();
    assert_eq!(p.status(&second), "completed", "{}", p.artifact(&second));
    let plan: serde_json::Value = serde_json::from_str(&p.ok(&["plan", "show", "pl", "--json"])).expect("json");
    assert_eq!(plan["status"], "completed", "{plan}");
    assert!(git(&p.root, &["show", "claude/main:.lore/second.md"]).contains("Write."));
    assert_eq!(git(&p.root, &["show", "claude/main:src/one.txt"]), "one\n");
    assert!(worktrees.exists());
}

/// A worker that leaves lock files in its own worktree's admin dir (`index.lock`, `HEAD.lock`:
/// its to write) never wedges its commission: its exit is judged and its work lands.
#[test]
fn locks_a_worker_leaves_in_its_own_admin_dir_never_wedge_its_commission() {
    let p = Project::new(&[]);
    p.script_worker(
        "locker",
        "full",
        "admin=$(git rev-parse --absolute-git-dir)\n: > \"$admin/index.lock\"\n: > \"$admin/HEAD.lock\"\necho work > w.txt\n\"$GUILD_HALL_BIN\" toolbox submit-result --summary done\n",
    );
    let id = p.create("locker", "Locker", "Lock.");
    p.pass_until("the commission settles", |p| matches!(p.status(&id).as_str(), "completed" | "failed"));
    assert_eq!(p.status(&id), "completed", "{}", p.artifact(&id));
    assert_eq!(git(&p.root, &["show", "claude/main:w.txt"]), "work\n");
}

/// The same leftover on a commission's own branch (a `kill -9` inside the branch's creation):
/// the dispatch waits, naming the lock, and goes once the lock is a crash's for sure.
#[test]
fn a_ref_lock_left_on_a_commissions_branch_never_wedges_its_dispatch() {
    let p = Project::new(&["scribe"]);
    let dir = p.root.join(".git/refs/heads/claude/commission");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let lock = dir.join("locked-branch.lock");
    std::fs::write(&lock, "").expect("the leftover lock");
    let id = p.create("scribe", "Locked branch", "output: .lore/locked-branch.md\nWrite.");
    assert_eq!(id, "locked-branch");
    let said = pass_until_said(&p, "locked-branch.lock");
    assert_ne!(p.status(&id), "failed", "{said}");
    age(&lock, 600);
    p.settle();
    assert_eq!(p.status(&id), "completed", "{}", p.artifact(&id));
    assert!(!lock.exists(), "the stale lock was removed");
}
