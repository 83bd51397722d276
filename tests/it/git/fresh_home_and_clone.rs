//! Git is the truth: finished work is recognised from the repository alone — the
//! artifact's terminal status plus its trailer on the integration branch — so a fresh home over
//! the same checkout, or a fresh clone, reconciles to the same state without re-running a worker
//! or rewriting a file; and an attempt in flight in another home is reported, never "repaired".

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{git, Project};

fn write_plan(root: &Path, id: &str, waves: &str) {
    let dir = root.join(".lore/plans");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(dir.join(format!("{id}.md")), format!("---\ntitle: {id}\nwaves:\n{waves}---\n")).expect("write plan");
}

/// Every file under `.lore/` of `root`, path → bytes.
fn lore(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(dir: &Path, base: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for e in entries {
            let path = e.expect("entry").path();
            if path.is_dir() {
                walk(&path, base, out);
            } else {
                let rel = path.strip_prefix(base).expect("under base").to_path_buf();
                out.insert(rel, std::fs::read(&path).expect("read"));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(&root.join(".lore"), root, &mut out);
    out
}

/// The paths whose bytes differ (or exist on one side only).
fn changed(before: &BTreeMap<PathBuf, Vec<u8>>, after: &BTreeMap<PathBuf, Vec<u8>>) -> Vec<String> {
    let mut keys: Vec<&PathBuf> = before.keys().chain(after.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|k| before.get(*k) != after.get(*k))
        .map(|k| {
            let show =
                |m: &BTreeMap<PathBuf, Vec<u8>>| m.get(k).map(|b| String::from_utf8_lossy(b).into_owned()).unwrap_or("<none>".into());
            format!("{}\n--- before:\n{}\n--- after:\n{}", k.display(), show(before), show(after))
        })
        .collect()
}

/// `guild-hall ARGS` in `root` under the home `home`; must succeed; stdout.
fn gh(p: &Project, root: &Path, home: &Path, args: &[&str]) -> String {
    let out = p.cmd().current_dir(root).env("GUILD_HALL_HOME", home).args(args).output().expect("runs");
    assert!(
        out.status.success(),
        "guild-hall {args:?} in {} under {} failed\nstdout:\n{}\nstderr:\n{}",
        root.display(),
        home.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Worker output logs (`attempt-<n>.log`) anywhere under a home: each one is a worker started.
fn workers_started(home: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for e in entries {
            let path = e.expect("entry").path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("attempt-") && n.ends_with(".log")) {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    walk(home, &mut out);
    out
}

/// What a person sees of every artifact: commissions by status, plans with their tasks' states,
/// meetings by status.
fn seen(p: &Project, root: &Path, home: &Path) -> Value {
    let status: Value = serde_json::from_str(&gh(p, root, home, &["status", "--json"])).expect("status json");
    let mut commissions = BTreeMap::new();
    for c in status.as_array().expect("rows") {
        commissions.insert(c["id"].as_str().unwrap_or("").to_string(), c["status"].clone());
    }
    let mut plans = BTreeMap::new();
    for id in ["built", "stuck"] {
        let v: Value = serde_json::from_str(&gh(p, root, home, &["plan", "show", id, "--json"])).expect("plan json");
        let tasks: Vec<Value> = v["tasks"].as_array().expect("tasks").iter().map(|t| serde_json::json!([t["label"], t["state"]])).collect();
        plans.insert(id.to_string(), serde_json::json!({"status": v["status"], "tasks": tasks}));
    }
    let mut meetings = BTreeMap::new();
    for id in ["talk", "asked"] {
        let v: Value = serde_json::from_str(&gh(p, root, home, &["meeting", "show", id, "--json"])).expect("meeting json");
        meetings.insert(id.to_string(), v["status"].clone());
    }
    serde_json::json!({"commissions": commissions, "plans": plans, "meetings": meetings})
}

/// Home A does the work: commissions that complete with a landed commit and with none, one that
/// fails, one cancelled; a plan that completes and one that halts; a meeting closed and one
/// declined. Returns what home A's `seen` says.
fn finish_everything(p: &Project) -> Value {
    p.script_worker("quiet", "sparse", "\"$GUILD_HALL_BIN\" toolbox submit-result --summary 'nothing to change'");
    p.script_worker("broken", "sparse", "echo broken: started; exit 3");
    p.create("scribe", "Landed", "output: .lore/reports/landed.md");
    p.create("quiet", "Unchanged", "nothing to do");
    p.create("broken", "Broken", "fails");
    p.create("scribe", "Dropped", "never runs");
    p.ok(&["commission", "cancel", "dropped"]);
    write_plan(&p.root, "built", "  - - {id: one, worker: mason, prompt: \"write: built.txt built\"}\n  - - {id: two, worker: mason, prompt: \"append: built.txt more\"}\n");
    write_plan(&p.root, "stuck", "  - - {id: bad, worker: mason, prompt: \"write: x.txt x\\nfail\"}\n");
    p.ok(&["meeting", "start", "--worker", "counsel", "--id", "talk", "hello\nsummary: we talked"]);
    p.ok(&["meeting", "close", "talk"]);
    std::fs::write(
        p.root.join(".lore/meetings/asked.md"),
        "---\nworker: counsel\nstatus: requested\nrequested_by: manager\nagenda: a question\n---\n",
    )
    .expect("write request");
    p.settle();
    p.ok(&["meeting", "decline", "asked", "--reason", "not now"]);
    p.settle();
    let a = seen(p, &p.root, &p.home);
    let want = serde_json::json!({
        "commissions": {"landed": "completed", "unchanged": "completed", "broken": "failed", "dropped": "cancelled"},
        "meetings": {"talk": "closed", "asked": "declined"},
    });
    assert_eq!(a["commissions"], want["commissions"], "{a}");
    assert_eq!(a["meetings"], want["meetings"], "{a}");
    assert_eq!(a["plans"]["built"]["status"], "completed", "{a}");
    assert_eq!(a["plans"]["stuck"]["status"], "halted", "{a}");
    a
}

/// A fresh home over the same checkout: one pass changes no file under `.lore/`, starts no
/// worker, and shows what home A shows.
#[test]
fn a_fresh_home_over_the_same_checkout_reconciles_to_the_same_state() {
    let p = Project::new(&["scribe", "mason", "counsel"]);
    let a = finish_everything(&p);
    let before = lore(&p.root);
    let tip = git(&p.root, &["rev-parse", "claude/main"]);
    let home_b = p.tmp.path().join("home-b");
    gh(&p, &p.root, &home_b, &["reconcile", "--once"]);
    gh(&p, &p.root, &home_b, &["reconcile", "--once"]);
    let diff = changed(&before, &lore(&p.root));
    assert!(diff.is_empty(), "a fresh home rewrote artifacts:\n{}", diff.join("\n\n"));
    assert_eq!(workers_started(&home_b), Vec::<PathBuf>::new(), "a fresh home started workers");
    assert_eq!(git(&p.root, &["rev-parse", "claude/main"]), tip, "nothing merged again");
    assert_eq!(seen(&p, &p.root, &home_b), a);
}

/// A fresh clone: the project as home A left it, committed and pushed to a bare origin with
/// the integration branch; cloned, and reconciled under a fresh home: nothing rewritten, no
/// worker started, the same state shown.
#[test]
fn a_fresh_clone_reconciles_to_the_same_state() {
    let p = Project::new(&["scribe", "mason", "counsel"]);
    let a = finish_everything(&p);
    git(&p.root, &["add", "-A"]);
    git(&p.root, &["commit", "-q", "-m", "the finished artifacts"]);
    let origin = p.tmp.path().join("origin.git");
    git(p.tmp.path(), &["init", "-q", "--bare", origin.to_str().expect("utf8")]);
    git(&p.root, &["push", "-q", origin.to_str().expect("utf8"), "main", "claude/main"]);
    let clone = p.tmp.path().join("clone");
    git(p.tmp.path(), &["clone", "-q", "-b", "main", origin.to_str().expect("utf8"), clone.to_str().expect("utf8")]);
    let home_b = p.tmp.path().join("home-b");
    // An integration branch made from the checkout (what `init` once did) lacks the
    // work the artifacts say landed: `check` says so, naming what is missing.
    git(&clone, &["branch", "claude/main", "main"]);
    let check = gh(&p, &clone, &home_b, &["check"]);
    assert!(check.contains("commission landed is completed and its attempt 1 landed a commit, but no commit on claude/main"), "{check}");
    assert!(check.contains("task built:exec:wave-2:task-1 is integrated, but no commit on claude/main"), "{check}");
    assert!(!check.contains("commission unchanged"), "it landed no commit: {check}");
    // Until `init` adopts `origin/claude/main` itself, the clone takes
    // its integration branch from the remote's by hand, as a person would.
    git(&clone, &["branch", "-f", "claude/main", "origin/claude/main"]);
    let check = gh(&p, &clone, &home_b, &["check"]);
    assert!(!check.contains("no commit on claude/main"), "{check}");
    let before = lore(&clone);
    let copied = changed(&lore(&p.root), &before);
    assert!(copied.is_empty(), "the clone has the project as home A left it:\n{}", copied.join("\n\n"));
    gh(&p, &clone, &home_b, &["reconcile", "--once"]);
    gh(&p, &clone, &home_b, &["reconcile", "--once"]);
    let diff = changed(&before, &lore(&clone));
    assert!(diff.is_empty(), "a fresh clone rewrote artifacts:\n{}", diff.join("\n\n"));
    assert_eq!(workers_started(&home_b), Vec::<PathBuf>::new(), "a fresh clone started workers");
    assert_eq!(git(&clone, &["rev-parse", "claude/main"]), git(&p.root, &["rev-parse", "claude/main"]), "nothing merged again");
    assert_eq!(seen(&p, &clone, &home_b), a);
    // The halted plan can be retried from the clone: its wave runs again here (the task
    // fails again, as its prompt says) and the plan halts again, its log going on.
    gh(&p, &clone, &home_b, &["plan", "retry", "stuck"]);
    gh(&p, &clone, &home_b, &["reconcile", "--once", "--wait", "--timeout", "120s"]);
    let v: Value = serde_json::from_str(&gh(&p, &clone, &home_b, &["plan", "show", "stuck", "--json"])).expect("plan json");
    assert_eq!(v["status"], "halted", "{v}");
    assert_eq!(v["tasks"][0]["attempt"], 2, "the attempt after the one home A ran: {v}");
    assert_eq!(workers_started(&home_b).len(), 1, "one worker: the retried task");
}

/// What a clone sees of work under way on another machine (its artifacts committed while it
/// ran): a commission in progress (one whose work already landed, one whose work did not), a
/// plan running, a meeting open. Nothing is failed, rewritten or started; `status` and `check`
/// say what is known and what a person can do.
#[test]
fn work_under_way_in_another_home_is_reported_not_repaired() {
    let p = Project::new(&["scribe", "mason", "counsel"]);
    p.create("scribe", "Landed", "output: .lore/reports/landed.md");
    p.settle();
    assert_eq!(p.status("landed"), "completed");
    // As committed on the other machine before its last pass: still in progress.
    let text = p.artifact("landed");
    let (head, tail) = text.split_once("status: completed").expect("a status line");
    std::fs::write(p.artifact_path("landed"), format!("{head}status: in_progress{tail}")).expect("write");
    p.write_commission(
        "away",
        "---\ntitle: Away\nworker: scribe\nstatus: in_progress\ncreated: 2026-11-22T10:00:00Z\nattempt: 2\nbranch: claude/commission/away+2\n---\nWork elsewhere.\n",
    );
    std::fs::create_dir_all(p.root.join(".lore/plans")).expect("mkdir");
    std::fs::create_dir_all(p.root.join(".lore/meetings")).expect("mkdir");
    std::fs::write(
        p.root.join(".lore/plans/moving.md"),
        "---\ntitle: moving\nwaves:\n  - - {id: one, worker: mason, prompt: \"write: m.txt m\"}\nstatus: running\nwave: 1\ntasks:\n  moving:exec:wave-1:task-1: running\n---\n",
    )
    .expect("write plan");
    std::fs::write(
        p.root.join(".lore/meetings/talking.md"),
        "---\ntitle: talking\nworker: counsel\nstatus: open\ncreated: 2026-11-22T10:00:00Z\nbranch: claude/meeting/talking\n---\n",
    )
    .expect("write meeting");
    let before = lore(&p.root);
    let home_b = p.tmp.path().join("home-b");
    gh(&p, &p.root, &home_b, &["reconcile", "--once"]);
    gh(&p, &p.root, &home_b, &["reconcile", "--once"]);
    let diff = changed(&before, &lore(&p.root));
    assert!(diff.is_empty(), "work under way elsewhere was rewritten:\n{}", diff.join("\n\n"));
    assert_eq!(workers_started(&home_b), Vec::<PathBuf>::new(), "nothing started here");

    let rows: Value = serde_json::from_str(&gh(&p, &p.root, &home_b, &["status", "--json"])).expect("status json");
    let row = |id: &str| rows.as_array().expect("rows").iter().find(|r| r["id"] == id).cloned().expect("a row");
    let away = row("away");
    assert_eq!(away["status"], "in_progress");
    let says = away["elsewhere"].as_str().unwrap_or("");
    for want in
        ["in another home", "attempt 2", "claude/commission/away+2", "is not on claude/main", "status: pending", "status: cancelled"]
    {
        assert!(says.contains(want), "{want:?} in {says}");
    }
    let landed = row("landed")["elsewhere"].as_str().unwrap_or("").to_string();
    assert!(landed.contains("attempt 1") && landed.contains("its work is on claude/main"), "{landed}");
    let table = gh(&p, &p.root, &home_b, &["status"]);
    assert!(table.contains("in_progress in another home: attempt 2"), "{table}");
    assert!(table.contains("plan moving: running") && table.contains("at work in another home"), "{table}");

    let plan: Value = serde_json::from_str(&gh(&p, &p.root, &home_b, &["plan", "show", "moving", "--json"])).expect("plan json");
    assert_eq!(plan["status"], "running");
    assert!(plan["elsewhere"].as_str().is_some_and(|e| e.contains("status: pending") && e.contains("status: cancelled")), "{plan}");
    let check = gh(&p, &p.root, &home_b, &["check"]);
    assert!(check.contains("commission away: in_progress in another home") && check.contains("plan moving says it is running"), "{check}");
    let check: Value = serde_json::from_str(&gh(&p, &p.root, &home_b, &["check", "--json"])).expect("check json");
    let text = check.to_string();
    assert!(text.contains("commission away: in_progress in another home") && text.contains("plan moving says it is running"), "{text}");
    assert!(text.contains("meeting talking is open in another home"), "the open meeting is reported too: {text}");

    let out = p.cmd().env("GUILD_HALL_HOME", &home_b).args(["meeting", "send", "talking", "hello?"]).output().expect("runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("meeting talking is open in another home"), "{err}");

    // A person decides: run it again here, or give it up.
    let text = p.artifact("away").replace("status: in_progress", "status: cancelled");
    p.write_commission("away", &text);
    gh(&p, &p.root, &home_b, &["reconcile", "--once"]);
    assert_eq!(p.artifact("away"), text, "given up: untouched");
}

/// Where this home did start the attempt (its runtime dir is here, its record not: a pass
/// killed before it wrote one), a worker that is gone fails the attempt, as it always did.
#[test]
fn an_attempt_this_home_started_is_still_failed_when_its_worker_is_gone() {
    let p = Project::new(&["scribe"]);
    p.ok(&["reconcile", "--once"]);
    p.write_commission(
        "mine",
        "---\ntitle: Mine\nworker: scribe\nstatus: in_progress\ncreated: 2026-11-22T10:00:00Z\nattempt: 1\nbranch: claude/commission/mine\n---\nWork.\n",
    );
    let project = std::fs::read_dir(p.home.join("state")).expect("state").next().expect("the project's state").expect("entry").path();
    std::fs::create_dir_all(project.join("commissions/mine")).expect("its runtime dir");
    p.ok(&["reconcile", "--once"]);
    let v = p.status_json("mine");
    assert_eq!(v["status"], "failed", "{v}");
    assert_eq!(v["reason"], "process lost on restart");
    assert!(v["elsewhere"].is_null(), "{v}");
}
