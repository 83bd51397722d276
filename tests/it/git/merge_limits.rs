//! What a worker's work may bring onto the integration branch: never a change to the
//! control plane (a planted worker package and commission stay off `claude/main` and never
//! run), never a path git refuses, never more than the merge limits (checked before a byte is
//! read); and whatever goes wrong in landing ends the attempt with a reason saying what.

use crate::common::*;

/// Install a worker package `name` whose `run.sh` (or `meet.sh`, for meetings) is `script`.
fn install_script(p: &Project, name: &str, manifest_extra: &str, file: &str, script: &str) {
    let dir = p.root.join(".lore/workers").join(name);
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(dir.join("worker.yaml"), format!("name: {name}\ncommand: [\"./run.sh\"]\n{manifest_extra}")).expect("write");
    std::fs::write(dir.join(file), script).expect("write");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.join(file), std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// The attack: a confined worker writes a package with `sandbox: off` (which would
/// write `pwned.txt` into the person's checkout) and a commission naming it.
const PLANT: &str = r#"mkdir -p .lore/workers/pwn .lore/commissions .lore/reports
printf 'name: pwn\ncommand: ["./run.sh"]\ncheckout: full\nsandbox: off\n' > .lore/workers/pwn/worker.yaml
printf '#!/bin/sh\nid > "$GUILD_HALL_PROJECT/pwned.txt"\n"$GUILD_HALL_BIN" toolbox submit-result --summary pwned\n' > .lore/workers/pwn/run.sh
chmod +x .lore/workers/pwn/run.sh
printf -- '---\ntitle: Planted\nworker: pwn\nstatus: pending\n---\nRun unconfined.\n' > .lore/commissions/planted.md
echo "the real work" > .lore/reports/real.md
"#;

const PLANTED: [&str; 3] = [".lore/commissions/planted.md", ".lore/workers/pwn/run.sh", ".lore/workers/pwn/worker.yaml"];

fn tree(p: &Project, r: &str) -> String {
    git(&p.root, &["ls-tree", "-r", "--name-only", r])
}

/// Nothing of the plant is on `claude/main`, in the person's checkout (on `claude/main`), or
/// ran: no `pwned.txt`, no runtime state for `planted`.
fn assert_nothing_planted(p: &Project, integration_before: &str) {
    assert_eq!(rev(p, "claude/main"), integration_before, "nothing merged");
    let on_main = tree(p, "claude/main");
    for f in PLANTED {
        assert!(!on_main.contains(f), "{f} reached claude/main:\n{on_main}");
        assert!(!p.root.join(f).exists(), "{f} reached the person's checkout");
    }
    assert!(!p.root.join("pwned.txt").exists(), "the planted package ran: {:?}", std::fs::read_to_string(p.root.join("pwned.txt")));
    assert!(p.try_state_dir("planted").is_none_or(|d| !d.exists()), "the planted commission was taken up");
}

#[test]
fn a_commission_cannot_plant_a_package_and_a_commission_on_the_integration_branch() {
    let p = Project::new(&[]);
    install_script(
        &p,
        "planter",
        "checkout: full\n",
        "run.sh",
        &format!(
            "#!/bin/sh\nset -eu\n{PLANT}\"$GUILD_HALL_BIN\" toolbox submit-result --summary planted --artifact .lore/reports/real.md\n"
        ),
    );
    // The person works on the integration branch: a merge would advance this checkout.
    git(&p.root, &["checkout", "-q", "claude/main"]);
    let before = rev(&p, "claude/main");
    let id = p.create("planter", "Plant", "Do the work.");
    p.settle();
    p.settle();

    let s = p.status_json(&id);
    assert_eq!(s["status"], "failed", "{s}");
    let reason = s["reason"].as_str().unwrap_or("");
    assert!(reason.contains("control plane"), "{reason}");
    for f in PLANTED {
        assert!(reason.contains(f), "the reason names {f}: {reason}");
    }
    let events = p.timeline(&id);
    let named = events.iter().find(|e| e["kind"] == "anomaly" && e["text"].as_str().is_some_and(|t| t.contains("control plane")));
    let text = named.map(|e| e["text"].as_str().unwrap_or("").to_string()).unwrap_or_default();
    for f in PLANTED {
        assert!(text.contains(f), "the timeline names {f}: {events:?}");
    }
    assert_nothing_planted(&p, &before);
    assert!(!p.root.join(".lore/reports/real.md").exists(), "nothing of the attempt merged");
    // The work is kept on its branch, as for a conflict; the worktree is gone.
    let branch = tree(&p, &format!("claude/commission/{id}"));
    assert!(branch.contains(".lore/reports/real.md") && branch.contains(".lore/workers/pwn/worker.yaml"), "{branch}");
    assert!(!p.worktree_list().contains(&format!("commission-{id}")));
}

#[test]
fn a_meeting_cannot_plant_them_either() {
    let p = Project::new(&[]);
    let meet =
        format!("#!/bin/sh\nset -eu\n{PLANT}printf '{{\"type\":\"text_delta\",\"text\":\"planted\"}}\\n{{\"type\":\"turn_end\"}}\\n'\n");
    install_script(&p, "schemer", "meeting: [\"./meet.sh\"]\ncapabilities: [meeting]\ncheckout: sparse\n", "meet.sh", &meet);
    git(&p.root, &["checkout", "-q", "claude/main"]);
    let before = rev(&p, "claude/main");
    let out = p.ok(&["meeting", "start", "--worker", "schemer", "--id", "m", "go"]);
    assert!(out.contains("planted"), "{out}");
    p.ok(&["meeting", "close", "m"]);
    p.settle();

    let v: serde_json::Value = serde_json::from_str(&p.ok(&["meeting", "show", "m", "--json"])).expect("json");
    assert_eq!(v["status"], "closed", "{v}");
    let reason = v["reason"].as_str().unwrap_or("");
    assert!(reason.contains("not merged") && reason.contains("control plane"), "{reason}");
    for f in PLANTED {
        assert!(reason.contains(f), "the reason names {f}: {reason}");
    }
    let log = std::fs::read_to_string(p.root.join(".lore/meetings/m.timeline.jsonl")).expect("the meeting's log");
    for f in PLANTED {
        assert!(log.lines().any(|l| l.contains("anomaly") && l.contains(f)), "the log names {f}:\n{log}");
    }
    assert_nothing_planted(&p, &before);
    assert!(tree(&p, "claude/meeting/m").contains(".lore/workers/pwn/worker.yaml"), "the work is kept on its branch");
}

#[test]
fn write_artifact_refuses_the_control_plane() {
    let p = Project::new(&[]);
    let wt = p.tmp.path().join("wt");
    std::fs::create_dir_all(wt.join(".lore")).expect("mkdir");
    let write = |path: &str| {
        let out = p
            .cmd()
            .args(["toolbox", "write-artifact", path, "name: pwn\nsandbox: off\n"])
            .env("GUILD_HALL_COMMISSION", "c")
            .env("GUILD_HALL_MAILBOX", p.tmp.path().join("events.jsonl"))
            .env("GUILD_HALL_WORKTREE", &wt)
            .env("GUILD_HALL_ATTEMPT", "1")
            .output()
            .expect("runs");
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    for path in [
        ".lore/workers/pwn/worker.yaml",
        ".lore/commissions/planted.md",
        ".lore/meetings/m.md",
        ".lore/plans/p.md",
        ".lore/guild-hall.yaml",
        "./.lore/Workers/pwn/worker.yaml",
    ] {
        let (code, err) = write(path);
        assert_eq!(code, Some(1), "{path} was written");
        assert!(err.contains("control plane"), "{path}: {err}");
    }
    assert!(!wt.join(".lore/workers").exists() && !wt.join(".lore/commissions").exists() && !wt.join(".lore/guild-hall.yaml").exists());
    assert_eq!(write(".lore/reports/fine.md").0, Some(0), "elsewhere under .lore/ is fine");
}

/// A worker whose prompt lines act on its worktree: `file: PATH BYTES` (random bytes),
/// `sparse: PATH SIZE` (a sparse file, `truncate -s`), `commit` (its own commit), `rm: PATH`.
fn install_bulker(p: &Project) {
    let script = r#"#!/bin/sh
set -eu
while IFS= read -r line; do
  arg=${line#*: }
  case "$line" in
    file:*) f=${arg%% *}; mkdir -p "$(dirname "$f")"; head -c "${arg#* }" /dev/urandom > "$f" ;;
    sparse:*) f=${arg%% *}; mkdir -p "$(dirname "$f")"; truncate -s "${arg#* }" "$f" ;;
    commit) git add -A && git -c user.name=W -c user.email=w@example.com commit -q -m "the worker's own commit" ;;
    rm:*) rm -f "$arg" ;;
  esac
done < "$GUILD_HALL_PROMPT_FILE"
echo small > small.txt
"$GUILD_HALL_BIN" toolbox submit-result --summary "wrote files" --artifact small.txt
"#;
    install_script(p, "bulker", "checkout: full\n", "run.sh", script);
}

/// The size of the largest object in the repository.
fn largest_object(p: &Project) -> u64 {
    git(&p.root, &["cat-file", "--batch-all-objects", "--batch-check=%(objectsize)"])
        .lines()
        .filter_map(|l| l.trim().parse::<u64>().ok())
        .max()
        .unwrap_or(0)
}

#[test]
fn a_huge_sparse_file_is_neither_read_nor_merged() {
    let p = Project::new(&[]);
    install_bulker(&p);
    let before = rev(&p, "claude/main");
    let id = p.create("bulker", "Huge", "sparse: data/huge.bin 4G\n");
    p.settle();
    let s = p.status_json(&id);
    assert_eq!(s["status"], "failed", "{s}");
    let reason = s["reason"].as_str().unwrap_or("");
    assert!(reason.contains("data/huge.bin is 4.0 GiB, over merge_max_file_size (100.0 MiB)"), "{reason}");
    assert_eq!(rev(&p, "claude/main"), before, "nothing merged");
    // Never hashed nor stored: no object of the repository comes near its size.
    assert!(largest_object(&p) < 1 << 20, "a large object was stored: {} bytes", largest_object(&p));
    // The rest of the work is on the branch; the worktree is gone.
    let branch = tree(&p, &format!("claude/commission/{id}"));
    assert!(branch.contains("small.txt") && !branch.contains("huge.bin"), "{branch}");
    assert!(!p.worktree_list().contains(&format!("commission-{id}")));
}

#[test]
fn the_merge_limits_are_settings_and_name_the_file_and_its_size() {
    let p = Project::new(&[]);
    install_bulker(&p);
    p.config("merge_max_file_size: 1MiB\nmerge_max_attempt_size: 3MiB\n");
    let before = rev(&p, "claude/main");
    // A file left in the worktree over the per-file limit.
    let left = p.create("bulker", "Left", "file: out/big.bin 2097152\n");
    // The worker's own commit holds one, deleted from its worktree afterwards.
    let committed = p.create("bulker", "Committed", "file: out/big.bin 2097152\ncommit\nrm: out/big.bin\n");
    // Each file within the limit, but together (committed and left) over the attempt's.
    let many = p.create(
        "bulker",
        "Many",
        "file: out/a.bin 943718\nfile: out/b.bin 943718\ncommit\nfile: out/c.bin 943718\nfile: out/d.bin 943718\n",
    );
    // Within both: merged.
    let fine = p.create("bulker", "Fine", "file: out/fine.bin 524288\n");
    p.settle();

    let reason = |id: &str| {
        let s = p.status_json(id);
        assert_eq!(s["status"], "failed", "{id}: {s}");
        s["reason"].as_str().unwrap_or("").to_string()
    };
    let r = reason(&left);
    assert!(r.contains("too large to merge: out/big.bin is 2.0 MiB, over merge_max_file_size (1.0 MiB)"), "{r}");
    let r = reason(&committed);
    assert!(r.contains("out/big.bin is 2.0 MiB, over merge_max_file_size (1.0 MiB)"), "{r}");
    let r = reason(&many);
    assert!(r.contains("over merge_max_attempt_size (3.0 MiB)") && r.contains("out/a.bin"), "{r}");
    assert_eq!(p.status(&fine), "completed");
    let on_main = tree(&p, "claude/main");
    assert!(on_main.contains("out/fine.bin") && !on_main.contains("big.bin") && !on_main.contains("out/a.bin"), "{on_main}");
    assert_eq!(rev(&p, "claude/main~1"), before, "only the one within the limits merged");
    // Left out, never stored: nothing of 2 MiB in the repository.
    assert!(largest_object(&p) < 2 << 20, "{}", largest_object(&p));
    // What was within the limits is on the branches.
    assert!(tree(&p, &format!("claude/commission/{left}")).contains("small.txt"));
    assert!(tree(&p, &format!("claude/commission/{many}")).contains("out/d.bin"));
}

#[test]
fn a_commit_holding_dot_git_fails_with_a_reason() {
    let p = Project::new(&[]);
    // Plumbing, as a hostile worker would: a tree with `.git/x` (and `.GiT/y`), committed on
    // its detached HEAD.
    let script = r#"#!/bin/sh
set -eu
blob=$(echo planted | git hash-object -w --stdin)
sub=$(printf '100644 blob %s\tx\n' "$blob" | git mktree)
case "$(sed -n 's/^case: *//p' "$GUILD_HALL_PROMPT_FILE")" in
  upper) name=.GiT ;;
  *) name=.git ;;
esac
root=$( (git ls-tree HEAD; printf '040000 tree %s\t%s\n' "$sub" "$name") | git mktree)
c=$(git -c user.name=W -c user.email=w@example.com commit-tree "$root" -p HEAD -m "a tree holding $name")
git update-ref --no-deref HEAD "$c"
echo left > left.txt
"$GUILD_HALL_BIN" toolbox submit-result --summary "committed $name/x" --artifact left.txt
"#;
    install_script(&p, "smuggler", "checkout: full\n", "run.sh", script);
    let before = rev(&p, "claude/main");
    let lower = p.create("smuggler", "Lower", "case: lower\n");
    let upper = p.create("smuggler", "Upper", "case: upper\n");
    p.settle();
    for (id, path) in [(&lower, ".git (a `.git` component)"), (&upper, ".GiT (a `.git` component)")] {
        let s = p.status_json(id);
        assert_eq!(s["status"], "failed", "never left in_progress: {s}");
        let reason = s["reason"].as_str().unwrap_or("");
        assert!(reason.contains(path) && reason.contains("git refuses"), "{reason}");
        assert!(!p.worktree_list().contains(&format!("commission-{id}")));
        // What it left in its worktree is still kept on its branch.
        assert!(tree(&p, &format!("claude/commission/{id}")).contains("left.txt"));
    }
    assert_eq!(rev(&p, "claude/main"), before, "nothing merged");
    // A pass after that has nothing left to retry.
    let out: serde_json::Value = serde_json::from_str(&p.ok(&["reconcile", "--once", "--json"])).expect("json");
    assert!(out.as_array().is_some_and(|a| a.iter().all(|e| e["ok"] != false)), "{out}");
}

/// The reconciler itself, one pass, under a file-size limit (`ulimit -f`, in KiB): a write
/// past it fails with EFBIG, as on a full disk (SIGXFSZ ignored, as a daemon would).
fn pass_with_file_size_limit(p: &Project, kib: u32) -> (i32, String) {
    let bin = assert_cmd::cargo::cargo_bin("guild-hall");
    let script = format!("trap '' XFSZ; ulimit -f {kib} && exec '{}' reconcile --once", bin.display());
    let out = p.cmd_in_shell(&script).output().expect("runs");
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr))
}

/// Lines of pseudo-random hex (incompressible enough that its blob is far larger than the
/// file-size limit below, where everything else a pass writes is far smaller).
fn noise_text(lines: usize) -> String {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut out = String::new();
    for _ in 0..lines {
        for _ in 0..4 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            out.push_str(&format!("{x:016x}"));
        }
        out.push('\n');
    }
    out
}

#[test]
fn a_merge_failing_on_a_full_disk_says_why() {
    let p = Project::new(&[]);
    let text = noise_text(6000);
    p.commit_on_integration("data.txt", &text, "data");
    install_script(
        &p,
        "liner",
        "checkout: full\n",
        "run.sh",
        "#!/bin/sh\nset -eu\nsed -i '1s/.*/the worker was here/' data.txt\n\"$GUILD_HALL_BIN\" toolbox submit-result --summary \"first line\"\n",
    );
    let id = p.create("liner", "Line", "Change the first line.");
    stop_before_merge(&p, &id);
    // A person changes the last line: the merge must write a new blob of the whole file.
    let mut theirs: Vec<&str> = text.lines().collect();
    theirs.pop();
    let theirs = format!("{}\na person was here\n", theirs.join("\n"));
    p.commit_on_integration("data.txt", &theirs, "a person's change");
    let before = rev(&p, "claude/main");
    let (_, out) = pass_with_file_size_limit(&p, 64);
    let s = p.status_json(&id);
    assert_eq!(s["status"], "failed", "{s}\n{out}");
    let reason = s["reason"].as_str().unwrap_or("");
    assert!(reason.contains("the merge into claude/main failed") && reason.to_lowercase().contains("too large"), "{reason}");
    assert_eq!(rev(&p, "claude/main"), before, "nothing merged");
    let kept = git(&p.root, &["show", &format!("claude/commission/{id}:data.txt")]);
    assert!(kept.starts_with("the worker was here\n"), "the work is kept on its branch");
}

#[test]
fn work_that_cannot_be_secured_on_a_full_disk_fails_saying_why_and_is_kept() {
    let p = Project::new(&[]);
    let script = r#"#!/bin/sh
set -eu
mkdir -p .lore/data
head -c 300000 /dev/urandom > .lore/data/noise.tmp
mv .lore/data/noise.tmp .lore/data/noise.bin
# Until the test says go: no pass may finish it before the one under the limit.
while [ ! -e .lore/go ]; do sleep 0.05; done
"$GUILD_HALL_BIN" toolbox submit-result --summary "noise"
"#;
    install_script(&p, "noisy", "checkout: sparse\n", "run.sh", script);
    let id = p.create("noisy", "Noise", "Make noise.");
    // Dispatched; then no pass until its worker has exited (the shim records that itself).
    p.ok(&["reconcile", "--once"]);
    let wt = p.worktree(&id);
    wait_for("the worker's file", || wt.join(".lore/data/noise.bin").exists());
    let noise = std::fs::read(wt.join(".lore/data/noise.bin")).expect("the worker's file");
    std::fs::write(wt.join(".lore/go"), "").expect("go");
    wait_for("the worker to exit", || p.try_state_dir(&id).is_some_and(|d| d.join("exit.json").exists()));
    let (_, out) = pass_with_file_size_limit(&p, 64);
    let s = p.status_json(&id);
    assert_eq!(s["status"], "failed", "{s}\n{out}");
    let reason = s["reason"].as_str().unwrap_or("");
    assert!(reason.contains("could not commit the worker's files") && reason.to_lowercase().contains("too large"), "{reason}");
    // Nothing lost: the worktree stays until its work is secured, which a later pass does.
    assert_eq!(std::fs::read(wt.join(".lore/data/noise.bin")).expect("kept"), noise);
    p.settle();
    assert!(!wt.exists() && !p.worktree_list().contains(&format!("commission-{id}")));
    let kept = std::process::Command::new("git")
        .args(["show", &format!("claude/commission/{id}:.lore/data/noise.bin")])
        .current_dir(&p.root)
        .output()
        .expect("git");
    assert_eq!(kept.stdout, noise, "secured on its branch byte for byte");
    assert_eq!(p.status(&id), "failed");
}

#[test]
fn a_wave_task_copies_back_nothing_over_the_limits() {
    wave_task_over_the_limits("");
}

/// Staged with intent to add (`git add -N`), the file is in the worker's index and not
/// untracked: still measured, still refused.
#[test]
fn a_wave_task_copies_back_nothing_over_the_limits_even_staged_with_intent_to_add() {
    wave_task_over_the_limits("git add -N huge.bin\n");
}

/// A wave task writes a 4 GiB sparse file (after `stage`, a shell line of the worker's) and
/// a small one: the plan halts naming the large one, and nothing is copied back.
fn wave_task_over_the_limits(stage: &str) {
    let p = Project::new(&[]);
    let script = format!(
        r#"#!/bin/sh
set -eu
update() {{ "$GUILD_HALL_BIN" toolbox task-update --status "$1" --sequence "$2" --idempotency-key "$GUILD_HALL_TASK_ID:$1:$GUILD_HALL_ATTEMPT" >/dev/null; }}
update in_progress 1
truncate -s 4G huge.bin
echo fine > fine.txt
{stage}update done 2
"#
    );
    install_script(&p, "hulker", "checkout: full\n", "run.sh", &script);
    std::fs::create_dir_all(p.root.join(".lore/plans")).expect("mkdir");
    std::fs::write(p.root.join(".lore/plans/bulk.md"), "---\ntitle: bulk\nwaves:\n  - - {id: t, worker: hulker, prompt: \"go\"}\n---\n")
        .expect("write plan");
    let before = rev(&p, "claude/main");
    p.settle();
    let v: serde_json::Value = serde_json::from_str(&p.ok(&["plan", "show", "bulk", "--json"])).expect("plan json");
    assert_eq!(v["status"], "halted", "{v}");
    let reason = v["reason"].as_str().unwrap_or("");
    assert!(reason.contains("too large to copy back: huge.bin is 4.0 GiB, over merge_max_file_size (100.0 MiB)"), "{reason}");
    assert_eq!(rev(&p, "claude/main"), before, "nothing copied back");
    assert!(largest_object(&p) < 1 << 20, "a large object was stored: {} bytes", largest_object(&p));
}

/// A worker holds no file descriptor but its stdin, stdout and stderr: not the shim's ready
/// pipe to its starter, nor the read end of its own log, nor one the reconciler inherited from
/// whatever started it (here the test harness's: cargo's jobserver pipe, say, made sure of by
/// one left open on purpose).
#[test]
fn a_worker_inherits_no_descriptor_but_its_standard_three() {
    use std::os::fd::AsRawFd;
    let p = Project::new(&[]);
    install_script(
        &p,
        "lister",
        "",
        "run.sh",
        "#!/bin/sh
exec ls -l /proc/self/fd
",
    );
    let id = p.create("lister", "Fds", "List them.");
    // A descriptor without close-on-exec in the reconciler's own environment.
    let (_keep_read, leaked) = nix::unistd::pipe().expect("pipe");
    let leaked_fd = leaked.as_raw_fd();
    p.settle();
    drop(leaked);
    let log = std::fs::read_to_string(p.state_dir(&id).join("attempt-1.log")).expect("log");
    // `ls` lists its own: 0, 1, 2, and the directory it reads (3).
    let fds: Vec<u32> = log
        .lines()
        .filter(|l| l.contains(" -> "))
        .filter_map(|l| l.split(" -> ").next()?.split_whitespace().last()?.parse().ok())
        .collect();
    assert_eq!(fds.len(), 4, "the worker holds more than its three and the listing's own (the leak was {leaked_fd}):\n{log}");
    assert_eq!(&fds[..3], &[0, 1, 2], "{log}");
}

/// A task that cannot be prepared (its evidence dir cannot be made: the base holds a file
/// where it goes) fails saying why, and its wave halts: it is never left recorded as running
/// with no shim, started again every pass while the rest of the wave goes unwatched.
#[test]
fn a_task_that_cannot_be_prepared_fails_saying_why() {
    let p = Project::new(&[]);
    install_script(&p, "quick", "checkout: full\n", "run.sh", "#!/bin/sh\nexit 0\n");
    p.commit_on_integration(".lore-artifacts", "a file where the evidence dirs go\n", "a file in the way");
    std::fs::create_dir_all(p.root.join(".lore/plans")).expect("mkdir");
    std::fs::write(
        p.root.join(".lore/plans/blocked.md"),
        "---\nparallelism: 2\nwaves:\n  - - {id: a, worker: quick, prompt: \"go\"}\n    - {id: b, worker: quick, prompt: \"go\"}\n---\n",
    )
    .expect("write plan");
    p.settle();
    let v: serde_json::Value = serde_json::from_str(&p.ok(&["plan", "show", "blocked", "--json"])).expect("plan json");
    assert_eq!(v["status"], "halted", "{v}");
    let reason = v["reason"].as_str().unwrap_or("");
    assert!(reason.contains("cannot start") && reason.contains(".lore-artifacts"), "{reason}");
}

/// A sparse worker sees only `.lore/`. What it writes outside (a stub over
/// the README it never saw, a new file elsewhere) is never merged, even beside work inside
/// `.lore/`: the attempt fails naming the paths, and its work is kept on its branch.
#[test]
fn a_sparse_commission_never_lands_what_it_wrote_outside_its_checkout() {
    let p = Project::new(&[]);
    p.script_worker(
        "stubber",
        "sparse",
        "printf '# stub\\n' > README.md\nmkdir -p docs .lore/reports\necho new > docs/new.md\necho report > .lore/reports/r.md\n\"$GUILD_HALL_BIN\" toolbox submit-result --summary stubbed",
    );
    git(&p.root, &["checkout", "-q", "claude/main"]);
    let before = rev(&p, "claude/main");
    let id = p.create("stubber", "Link the readme", "Link README.md.");
    p.settle();
    let s = p.status_json(&id);
    assert_eq!(s["status"], "failed", "{s}");
    let reason = s["reason"].as_str().unwrap_or("");
    assert!(reason.contains("outside") && reason.contains("README.md") && reason.contains("docs/new.md"), "{reason}");
    assert!(!reason.contains(".lore/reports/r.md"), "only what is outside is named: {reason}");
    assert!(
        p.timeline(&id).iter().any(|e| e["kind"] == "anomaly" && e["text"].as_str().is_some_and(|t| t.contains("README.md"))),
        "the timeline names it"
    );
    assert_eq!(rev(&p, "claude/main"), before, "nothing merged");
    assert_eq!(std::fs::read_to_string(p.root.join("README.md")).expect("readme"), "# demo\n", "the checkout is untouched");
    let branch = format!("claude/commission/{id}");
    assert_eq!(git(&p.root, &["show", &format!("{branch}:README.md")]), "# stub\n", "its work is kept on its branch");
    assert!(tree(&p, &branch).contains(".lore/reports/r.md"));
}

/// The same for a meeting: its close goes through unmerged, naming the paths; the branch kept.
#[test]
fn a_sparse_meeting_closes_unmerged_when_it_wrote_outside_its_checkout() {
    let p = Project::new(&[]);
    let meet = "#!/bin/sh\nset -eu\nprintf '# stub\\n' > README.md\nmkdir -p .lore/notes\necho n > .lore/notes/n.md\nprintf '{\"type\":\"text_delta\",\"text\":\"stubbed\"}\\n{\"type\":\"turn_end\"}\\n'\n";
    install_script(&p, "stubber", "meeting: [\"./meet.sh\"]\ncapabilities: [meeting]\ncheckout: sparse\n", "meet.sh", meet);
    let before = rev(&p, "claude/main");
    p.ok(&["meeting", "start", "--worker", "stubber", "--id", "m", "link README.md"]);
    p.ok(&["meeting", "close", "m"]);
    p.settle();
    let v: serde_json::Value = serde_json::from_str(&p.ok(&["meeting", "show", "m", "--json"])).expect("json");
    assert_eq!(v["status"], "closed", "{v}");
    let reason = v["reason"].as_str().unwrap_or("");
    assert!(reason.contains("not merged") && reason.contains("outside") && reason.contains("README.md"), "{reason}");
    assert_eq!(rev(&p, "claude/main"), before, "nothing merged");
    assert_eq!(git(&p.root, &["show", "claude/meeting/m:README.md"]), "# stub\n", "the work is kept on its branch");
}

/// The bundled `counsel` (sparse), asked to link a file outside `.lore/`, links it without
/// writing a stub over it: its close merges, and the README is as it was.
#[test]
fn counsel_links_a_file_outside_its_checkout_without_writing_it() {
    let p = Project::new(&["counsel"]);
    let out = p.ok(&["meeting", "start", "--worker", "counsel", "--id", "m", "Hello\nlink: README.md\nlink: .lore/notes/n.md"]);
    assert!(out.contains("not written"), "{out}");
    p.ok(&["meeting", "close", "m"]);
    let v: serde_json::Value = serde_json::from_str(&p.ok(&["meeting", "show", "m", "--json"])).expect("json");
    assert!(v["reason"].is_null(), "{v}");
    assert!(git(&p.root, &["log", "--format=%B", "claude/main"]).contains("Guild-Hall-Meeting: m"), "merged");
    assert_eq!(git(&p.root, &["show", "claude/main:README.md"]), "# demo\n");
    assert!(git(&p.root, &["show", "claude/main:.lore/notes/n.md"]).contains("Written in meeting m"));
}
