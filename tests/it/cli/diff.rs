//! `guild-hall diff`: what a commission's attempt or a wave task would bring onto the
//! integration branch, against what git itself says of the same two commits (its stat, its
//! patch, its numstat), with a rename, a delete, a binary file and a worker's escape sequence.

use serde_json::Value;

use crate::common::{git, stop_before_merge, Project};

/// A worker that changes a line, deletes a file, renames one, adds a text file, a binary file
/// and a line with an escape sequence in it, then submits.
const EDITS: &str = r#"printf '# demo\nmore\n' > README.md
rm src/lib.txt
mv docs/guide.md docs/manual.md
printf 'one\ntwo\nthree\n' > new.txt
printf '\000\001\002\003binary' > logo.bin
printf 'evil \033[2J here\n' > evil.txt
"$GUILD_HALL_BIN" toolbox submit-result --summary "edited""#;

/// A guide long enough that moving it is a rename, not a delete and an add.
const GUIDE: &str = "line 1\nline 2\nline 3\nline 4\nline 5\nline 6\nline 7\nline 8\n";

/// `guild-hall ARGS`, stdout, with no COLUMNS (git's stat is 80 wide then too).
fn diff_out(p: &Project, args: &[&str]) -> String {
    let out = p.cmd().arg("diff").args(args).env_remove("COLUMNS").env_remove("GIT_PAGER").output().expect("runs");
    assert!(out.status.success(), "diff {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// What git says of `base..tip` with `args`, escape sequences shown as `guild-hall` shows them.
fn git_says(p: &Project, args: &[&str], base: &str, tip: &str) -> String {
    let mut all = vec!["-c", "core.quotepath=false", "diff", "--no-color"];
    all.extend_from_slice(args);
    all.extend_from_slice(&[base, tip]);
    git(&p.root, &all).replace('\x1b', "\\x1b")
}

#[test]
fn a_commissions_change_is_what_git_says_of_its_branch() {
    let p = Project::new(&[]);
    p.commit_on_integration("docs/guide.md", GUIDE, "a guide");
    p.script_worker("editor", "full", EDITS);
    let id = p.create("editor", "Edit", "Edit things.");
    stop_before_merge(&p, &id);
    let branch = format!("claude/commission/{id}");
    let base = git(&p.root, &["merge-base", "claude/main", &branch]).trim().to_string();

    // The stat and the patch, line for line as git prints them (the escape shown, not obeyed).
    let stat = diff_out(&p, &[&id, "--stat"]);
    assert_eq!(stat, git_says(&p, &["--stat"], &base, &branch));
    assert!(
        stat.contains("docs/{guide.md => manual.md} |   0") && stat.contains("logo.bin") && stat.contains("Bin 0 -> 10 bytes"),
        "{stat}"
    );
    let patch = diff_out(&p, &[&id]);
    assert_eq!(patch, git_says(&p, &[], &base, &branch));
    assert!(patch.contains("+evil \\x1b[2J here") && !patch.contains('\x1b'), "{patch}");
    assert!(patch.contains("Binary files /dev/null and b/logo.bin differ"), "{patch}");

    // JSON: each file's status and lines, as git's numstat counts them.
    let v: Value = serde_json::from_str(&diff_out(&p, &[&id, "--json"])).expect("json");
    assert_eq!(
        (v["id"].as_str(), v["branch"].as_str(), v["base"].as_str()),
        (Some(id.as_str()), Some(branch.as_str()), Some(base.as_str()))
    );
    let files: Vec<(String, String, u64, u64, bool)> = v["files"]
        .as_array()
        .expect("files")
        .iter()
        .map(|f| {
            let path = f["path"].as_str().unwrap_or("").to_string();
            (
                path,
                f["status"].as_str().unwrap_or("").to_string(),
                f["additions"].as_u64().unwrap_or(99),
                f["deletions"].as_u64().unwrap_or(99),
                f["binary"] == true,
            )
        })
        .collect();
    let want = [
        ("README.md", "modified", 1, 0, false),
        ("docs/manual.md", "renamed", 0, 0, false),
        ("evil.txt", "added", 1, 0, false),
        ("logo.bin", "added", 0, 0, true),
        ("new.txt", "added", 3, 0, false),
        ("src/lib.txt", "deleted", 0, 1, false),
    ];
    let want: Vec<(String, String, u64, u64, bool)> =
        want.iter().map(|(p, s, a, d, b)| (p.to_string(), s.to_string(), *a, *d, *b)).collect();
    assert_eq!(files, want, "{v:#}");
    assert_eq!((v["additions"].as_u64(), v["deletions"].as_u64()), (Some(5), Some(1)));
    let file = |path: &str| v["files"].as_array().and_then(|fs| fs.iter().find(|f| f["path"] == path)).cloned().expect("a file");
    assert_eq!(file("docs/manual.md")["old_path"], "docs/guide.md");
    assert!(file("logo.bin")["patch"].is_null(), "a binary file has no patch");
    assert!(file("logo.bin").as_object().is_some_and(|o| o.contains_key("patch")));
    let readme = file("README.md")["patch"].as_str().unwrap_or("").to_string();
    assert!(readme.starts_with("diff --git a/README.md b/README.md\n") && readme.contains("\n+more\n"), "{readme}");
    // --stat --json: the same numbers, no patches.
    let s: Value = serde_json::from_str(&diff_out(&p, &[&id, "--stat", "--json"])).expect("json");
    assert_eq!((s["additions"].as_u64(), s["deletions"].as_u64(), s["files"].as_array().map(Vec::len)), (Some(5), Some(1), Some(6)));
    assert!(s["files"].as_array().is_some_and(|fs| fs.iter().all(|f| f.get("patch").is_none())), "{s:#}");
    // Numstat agrees (git counts a binary file as - -).
    let numstat = git(&p.root, &["diff", "--numstat", &base, &branch]);
    for line in numstat.lines() {
        let cols: Vec<&str> = line.split('\t').collect();
        let path = cols.last().copied().unwrap_or("");
        let path = if path.contains("=>") { "docs/manual.md" } else { path };
        let f = file(path);
        if cols[0] != "-" {
            assert_eq!((f["additions"].to_string(), f["deletions"].to_string()), (cols[0].to_string(), cols[1].to_string()), "{line}");
        }
    }

    // Merged, the change is still the branch's: the same stat.
    p.settle();
    assert_eq!(p.status(&id), "completed");
    assert_eq!(diff_out(&p, &[&id, "--stat"]), stat);
}

#[test]
fn an_id_without_a_branch_is_not_found() {
    let p = Project::new(&[]);
    let (code, out, err) = p.run(&["diff", "nope"]);
    assert_eq!((code, out.as_str()), (3, ""), "{err}");
    assert!(err.contains("no commission \"nope\""), "{err}");
    p.write_commission("later", "---\nworker: scribe\nstatus: draft\n---\nNot yet.\n");
    let (code, _, err) = p.run(&["diff", "later", "--json"]);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("commission later has no branch: it has not been dispatched"), "{err}");
    let (code, _, err) = p.run(&["diff", "nope:exec:wave-1:task-1"]);
    assert_ne!(code, 0, "{err}");
}

#[test]
fn a_wave_tasks_change_is_its_branchs() {
    let p = Project::new(&[]);
    p.script_worker(
        "planter",
        "full",
        "printf 'planted\\n' > planted.txt\n\"$GUILD_HALL_BIN\" toolbox task-update --status done --sequence 1 --idempotency-key done >/dev/null",
    );
    crate::plan::fixtures::write_plan(&p, "pl", "  - - {id: t, worker: planter, prompt: go}\n");
    p.settle();
    let shown = crate::plan::fixtures::show(&p, "pl");
    assert_eq!(shown["status"], "completed", "{shown:#}");
    let task = crate::plan::fixtures::task(&shown, "t")["task"].as_str().expect("canonical id").to_string();
    let v: Value = serde_json::from_str(&diff_out(&p, &[&task, "--json"])).expect("json");
    assert_eq!(
        v["files"].as_array().map(|f| f.iter().map(|f| f["path"].as_str().unwrap_or("")).collect::<Vec<_>>()),
        Some(vec!["planted.txt"])
    );
    assert_eq!((v["additions"].as_u64(), v["deletions"].as_u64()), (Some(1), Some(0)));
    assert_eq!(diff_out(&p, &[&task, "--stat"]), " planted.txt | 1 +\n 1 file changed, 1 insertion(+)\n");
    // The plan catalogue's face, by the task's label.
    let j: Value = serde_json::from_str(&p.ok(&["plan", "diff", "pl", "t", "--json"])).expect("json");
    assert_eq!(j["files"], v["files"]);
}

/// A link the worker made is shown as a link (its target, mode 120000), never followed: the
/// file it points at is not read.
#[test]
fn a_workers_link_is_shown_not_followed() {
    let p = Project::new(&[]);
    let secret = p.tmp.path().join("secret.txt");
    std::fs::write(&secret, "the person's secret\n").expect("write");
    p.script_worker(
        "linker",
        "full",
        &format!("ln -s {} peek\n\"$GUILD_HALL_BIN\" toolbox submit-result --summary linked", secret.display()),
    );
    let id = p.create("linker", "Link", "Make a link.");
    p.settle();
    let out = diff_out(&p, &[&id]);
    assert!(out.contains("new file mode 120000") && out.contains(&format!("+{}", secret.display())), "{out}");
    assert!(!out.contains("the person's secret"), "the link's target is never read: {out}");
}
