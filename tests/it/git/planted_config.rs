//! A confined worker gets nothing run by guild-hall's own git. A worker
//! can write its worktree, its worktree's admin dir (`.git/worktrees/<name>`: its `HEAD`, its
//! index — and a `config.worktree`, which git reads as that worktree's config when the
//! repository has `extensions.worktreeConfig`) and repositories it makes inside its worktree;
//! guild-hall's git, which runs unconfined, reads none of that as configuration and runs no
//! program any config names. Each test plants a filter whose command would write a marker
//! where the worker itself cannot write (outside its Landlock rules), and drives guild-hall
//! through the path that used to run it.

use std::path::{Path, PathBuf};

use crate::common::*;
use crate::plan::fixtures::{show, write_plan};

/// A worker package of the test's own under `.lore/workers/<name>/`, its script `run.sh`.
fn package(p: &Project, name: &str, script: &str) {
    let dir = p.root.join(".lore/workers").join(name);
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(
        dir.join("worker.yaml"),
        format!("name: {name}\ndescription: a test worker\ncommand: [\"./run.sh\"]\ncheckout: full\ncapabilities: [commission]\n"),
    )
    .expect("worker.yaml");
    let run = dir.join("run.sh");
    std::fs::write(&run, script).expect("run.sh");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// Where a planted filter would leave its mark: the test's own temp root, which no confined
/// worker can write (only guild-hall, unconfined, could).
fn marker(p: &Project, name: &str) -> PathBuf {
    p.tmp.path().join(name)
}

fn ran(marker: &Path) -> String {
    std::fs::read_to_string(marker).map(|t| format!("the planted command ran unconfined: {t}")).unwrap_or_default()
}

/// What a worker writes into its admin dir: a `config.worktree` naming a smudge and a clean
/// filter for every file (through `core.attributesFile`, a file of its own there, and through a
/// `.gitattributes` in its worktree), each writing `$1` — the reviewer's reproduction.
const PLANT_WORKTREE_CONFIG: &str = r#"plant() { # plant MARKER
  admin=$(git rev-parse --absolute-git-dir)
  printf '* filter=pwn\n' > "$admin/attributes"
  printf '* filter=pwn\n' > .gitattributes
  cat > "$admin/config.worktree" <<EOF
[core]
	attributesFile = $admin/attributes
[filter "pwn"]
	smudge = "id > $1; cat"
	clean = "id > $1; cat"
EOF
}
"#;

/// The reviewer's attack: with `extensions.worktreeConfig` on (as `git sparse-checkout --cone`
/// leaves it), a wave task's worker plants a filter in its admin dir's `config.worktree`, edits
/// a tracked file and fails. `plan retry` reuses the task's worktree — and that reuse (a reset
/// and a clean) used to run git with the admin dir as `GIT_DIR`, so git read the planted config
/// and ran the filter as guild-hall. Now the planted config is reported as tampering, the
/// worktree is made anew, and no git of guild-hall's ever reads it.
#[test]
fn a_wave_retry_never_runs_a_filter_planted_in_the_worktree_config() {
    let p = Project::new(&[]);
    git(&p.root, &["config", "extensions.worktreeConfig", "true"]);
    let mark = marker(&p, "pwned-by-retry");
    package(
        &p,
        "planter",
        &format!(
            r#"#!/bin/sh
set -eu
{PLANT_WORKTREE_CONFIG}
update() {{ "$GUILD_HALL_BIN" toolbox task-update --status "$1" --sequence "$2" --idempotency-key "$GUILD_HALL_TASK_ID:$1:$GUILD_HALL_ATTEMPT" >/dev/null; }}
update in_progress 1
if [ "$GUILD_HALL_ATTEMPT" = 1 ]; then
  plant '{}'
  echo "changed by the worker" > README.md
  update failed 2
  exit 1
fi
echo done > done.txt
update done 3
"#,
            mark.display()
        ),
    );
    write_plan(&p, "pl", "  - - {id: t, worker: planter, prompt: plant}\n");
    p.settle();
    let v = show(&p, "pl");
    assert_eq!(v["status"], "halted", "{v}");
    assert!(!mark.exists(), "{}", ran(&mark));

    p.ok(&["plan", "retry", "pl"]);
    p.settle();
    let v = show(&p, "pl");
    assert!(!mark.exists(), "{}", ran(&mark));
    assert_eq!(v["status"], "completed", "{v}");
    // The reuse was refused, naming what was planted; the task ran again in a worktree made anew.
    let named = v["log"].as_array().expect("log").iter().any(|e| e["kind"] == "orphaned" && e.to_string().contains("config.worktree"));
    assert!(named, "no event names the planted config.worktree: {v}");
    assert_eq!(git(&p.root, &["show", "claude/main:done.txt"]), "done\n");
    assert_eq!(git(&p.root, &["show", "claude/main:README.md"]), "# demo\n", "the first attempt's edit is not merged");
}

/// A commission's worker plants the same `config.worktree` and submits: its attempt fails as
/// tampered with, naming the file; nothing is merged; its files are kept on its own branch; and
/// securing them ran nothing it planted.
#[test]
fn a_commission_whose_worker_plants_worktree_config_fails_as_tampered() {
    let p = Project::new(&[]);
    git(&p.root, &["config", "extensions.worktreeConfig", "true"]);
    let mark = marker(&p, "pwned-by-commission");
    package(
        &p,
        "planter",
        &format!(
            r#"#!/bin/sh
set -eu
{PLANT_WORKTREE_CONFIG}
mkdir -p notes
echo "work by the worker" > notes/work.md
plant '{}'
echo "changed by the worker" > README.md
"$GUILD_HALL_BIN" toolbox submit-result --summary planted
"#,
            mark.display()
        ),
    );
    let integration = git(&p.root, &["rev-parse", "claude/main"]);
    p.write_commission("cw", "---\nworker: planter\n---\nPlant a worktree config.\n");
    p.settle();
    let s = p.status_json("cw");
    assert!(!mark.exists(), "{}", ran(&mark));
    assert_eq!(s["status"], "failed", "{s}");
    let reason = s["reason"].as_str().unwrap_or("");
    assert!(reason.contains("worktree tampered with") && reason.contains("config.worktree"), "{reason}");
    assert_eq!(git(&p.root, &["rev-parse", "claude/main"]), integration, "nothing merged");
    assert_eq!(git(&p.root, &["show", "claude/commission/cw:notes/work.md"]), "work by the worker\n", "its work kept on its branch");
}

/// Two ways a worker could get a program run by `git add` as guild-hall secures its work: a
/// repository of its own inside its worktree, committed as a gitlink, whose config names a
/// clean filter (git ran `git status` inside it, as guild-hall, to see whether it was dirty);
/// and a `.gitattributes` naming a filter driver the person's repository config defines. Now
/// neither runs: the gitlink is recorded from the nested repository's `HEAD` without running
/// git in it, and guild-hall's git switches every configured filter driver off (the worker's
/// bytes are committed as they are).
#[test]
fn securing_a_commission_runs_no_filter_of_a_nested_repository_or_of_the_person_config() {
    let p = Project::new(&[]);
    let nested = marker(&p, "pwned-by-nested-repo");
    let person = marker(&p, "pwned-by-person-filter");
    // A filter driver of the person's own (say git-lfs or git-crypt, installed locally).
    git(&p.root, &["config", "filter.person.clean", &format!("id > '{}'; cat", person.display())]);
    git(&p.root, &["config", "filter.person.smudge", &format!("id > '{}'; cat", person.display())]);
    package(
        &p,
        "nester",
        &format!(
            r#"#!/bin/sh
set -eu
w() {{ git -c user.name=w -c user.email=w@example.com "$@"; }}
# A repository of its own, committed into its worktree as a gitlink.
(unset GIT_OBJECT_DIRECTORY; git init -q nested && cd nested && echo a > f && w add f && w commit -qm nested)
w add nested
w commit -qm "a gitlink to a repository of my own"
# Then a filter in that repository's config, and a change `git status` there must hash.
(unset GIT_OBJECT_DIRECTORY; cd nested && git config filter.pwn.clean "id > '{nested}'; cat" && printf '* filter=pwn\n' > .gitattributes && echo b > f)
# And a file the person's filter would clean.
printf '*.txt filter=person\n' > .gitattributes
echo "the worker's bytes" > out.txt
"$GUILD_HALL_BIN" toolbox submit-result --summary nested
"#,
            nested = nested.display()
        ),
    );
    p.write_commission("nw", "---\nworker: nester\n---\nNest a repository.\n");
    p.settle();
    assert!(!person.exists(), "{}", ran(&person));
    assert!(!nested.exists(), "{}", ran(&nested));
    let s = p.status_json("nw");
    assert_eq!(s["status"], "completed", "{s}\n{}", p.ok(&["logs", "nw"]));
    assert_eq!(git(&p.root, &["show", "claude/main:out.txt"]), "the worker's bytes\n");
    let tree = git(&p.root, &["ls-tree", "claude/main", "nested"]);
    assert!(tree.starts_with("160000 commit "), "the gitlink is merged: {tree}");
}
