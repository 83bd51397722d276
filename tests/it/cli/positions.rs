//! Positions a person can go to: every YAML problem of every kind
//! of file is at `path:line:col` counted in the file, said once — an unknown key at any
//! depth with a "did you mean", a plan task's problem at that task, a duplicate key at the
//! duplicate — and a task name two waves share is refused, the canonical ids listed.

use crate::common::Project;

/// What `check` says (it exits 1).
fn check(p: &Project) -> String {
    let (code, out, err) = p.run(&["check"]);
    assert_eq!(code, 1, "check fails:\n{out}{err}");
    format!("{out}{err}")
}

fn says(all: &str, file: &std::path::Path, line: usize, col: usize, message: &str) {
    let want = format!("{}:{line}:{col}: {message}", file.display());
    assert!(all.lines().any(|l| l.contains(&want)), "wanted {want:?} in:\n{all}");
}

fn write(path: &std::path::Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("dir")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

/// A YAML syntax error, a duplicate key and a nested unknown key, in a commission, a meeting
/// and a plan: each at its line in the file, the position said once.
#[test]
fn frontmatter_problems_of_every_kind_are_counted_in_the_file() {
    let p = Project::new(&["scribe"]);
    for (dir, extra) in [("commissions", "worker: scribe\n"), ("meetings", "worker: scribe\n"), ("plans", "")] {
        let broken = p.root.join(format!(".lore/{dir}/broken.md"));
        let waves = if dir == "plans" { "waves:\n  - - {id: a, worker: scribe, prompt: p}\n" } else { "" };
        write(&broken, &format!("---\ntitle: T\n{extra}{waves}references: [a\n---\nBody.\n"));
        let all = check(&p);
        let line = 3 + extra.lines().count() + waves.lines().count();
        let said = all.lines().find(|l| l.contains("broken.md:")).unwrap_or_default().to_string();
        assert!(said.contains(&format!("broken.md:{}:1: invalid YAML", line + 1)), "{dir}: at the line after the open list:\n{all}");
        // The parser's other position is the file's line too, and the first is not repeated.
        assert!(said.contains(&format!("at line {line} column 13")), "{dir}: {said}");
        assert!(!said.contains(&format!("line {} column 1", line + 1)), "{dir}: said once: {said}");
        std::fs::remove_file(&broken).expect("rm");

        let dup = p.root.join(format!(".lore/{dir}/dup.md"));
        write(&dup, &format!("---\ntitle: A\n{extra}{waves}title: B\n---\nBody.\n"));
        let line = 3 + extra.lines().count() + waves.lines().count();
        says(&check(&p), &dup, line, 1, "invalid YAML: duplicate key `title`");
        std::fs::remove_file(&dup).expect("rm");
    }

    let c = p.artifact_path("nested");
    write(&c, "---\ntitle: N\nworker: scribe\nresources: {max_turn: 5}\n---\nWork.\n");
    says(&check(&p), &c, 4, 13, "unknown key `max_turn` in `resources`: did you mean `max_turns`?");
    let (_, out, err) = p.run(&["reconcile", "--once"]);
    assert!(p.try_state_dir("nested").and_then(|_| p.run_info("nested")).is_none(), "not run without its bound:\n{out}{err}");
}

/// A plan's task problems are at that task: an unknown key at the key, a bad value at the
/// value, an unknown worker at its `worker:` — not all at `waves:`.
#[test]
fn plan_task_problems_point_at_the_task() {
    let p = Project::new(&["scribe"]);
    let plan = p.root.join(".lore/plans/pl.md");
    write(
        &plan,
        "---\ntitle: P\nwaves:\n  - - id: a\n      worker: scribe\n      prompt: do a\n      tmeout: 5m\n  - - {id: b, worker: scribe, prompt: do b, timeout: soon}\n    - id: c\n      worker: nobody\n      prompt: do c\n---\n",
    );
    let all = check(&p);
    says(&all, &plan, 7, 7, "wave 1, task a: unknown key `tmeout`: did you mean `timeout`?");
    says(&all, &plan, 8, 54, "wave 2, task b: timeout \"soon\" is not a duration: write it like 30m, 2h or 90s");
    // An unknown key stops the parse; the worker is checked on a plan that parses.
    write(
        &plan,
        "---\ntitle: P\nwaves:\n  - - id: a\n      worker: scribe\n      prompt: do a\n  - - {id: b, worker: scribe, prompt: do b}\n    - id: c\n      worker: nobody\n      prompt: do c\n---\n",
    );
    // A plan still to start waits for that worker: said at its `worker:`, without
    // failing.
    let (code, all, err) = p.run(&["check"]);
    assert_eq!(code, 0, "{all}{err}");
    says(&all, &plan, 9, 15, "plan pl waits: task pl:exec:wave-2:task-2 (c): worker \"nobody\" is not installed");
}

/// `worker.yaml`: every unknown key, nested ones too, each at the key; a bad value's position
/// said once.
#[test]
fn worker_yaml_problems_every_key_nested_and_once() {
    let p = Project::new(&["scribe"]);
    let manifest = p.root.join(".lore/workers/scribe/worker.yaml");
    let text = std::fs::read_to_string(&manifest).expect("worker.yaml");
    let n = text.lines().count();
    write(&manifest, &format!("{text}resources: {{max_turn: 5}}\nsandbox:\n  writ: [/tmp]\n"));
    let all = check(&p);
    says(&all, &manifest, n + 1, 13, "unknown key `max_turn` in `resources`: did you mean `max_turns`?");
    says(&all, &manifest, n + 3, 3, "unknown key `writ` in `sandbox`: did you mean `write`?");

    write(&manifest, &format!("{text}protocol: telepathy\n"));
    let all = check(&p);
    let said = all.lines().find(|l| l.contains("worker.yaml:")).unwrap_or_default().to_string();
    assert!(said.contains(&format!("worker.yaml:{}:11: invalid worker.yaml: protocol: unknown variant `telepathy`", n + 1)), "{all}");
    assert!(!said.contains(" at line "), "the position is said once: {said}");
}

/// `.lore/guild-hall.yaml`: every unknown key, each with its position and a "did you mean";
/// a bad value at the value, said once.
#[test]
fn guild_hall_yaml_says_every_unknown_key() {
    let p = Project::new(&["scribe"]);
    let config = p.root.join(".lore/guild-hall.yaml");
    write(&config, "comission_cap: 2\nmeeting_cap: 3\nstale_afer: 5m\n");
    let all = check(&p);
    says(&all, &config, 1, 1, "unknown key `comission_cap`: did you mean `commission_cap`?");
    says(&all, &config, 3, 1, "unknown key `stale_afer`: did you mean `stale_after`?");
    write(&config, "commission_cap: 2\nstale_after: 5x\n");
    let all = check(&p);
    says(&all, &config, 2, 14, "stale_after: \"5x\" is not a duration: write it like 30m, 2h or 90s");
    assert!(!all.contains(" at line "), "said once: {all}");
}

/// `plan logs <plan> task-1` when two waves have a `task-1`: refused, naming both canonical
/// ids; the canonical id names each (and `logs <canonical>` agrees).
#[test]
fn a_task_label_two_waves_share_is_refused_and_the_canonical_id_works() {
    let p = Project::new(&[]);
    p.script_worker("echoer", "sparse", "cat \"$GUILD_HALL_PROMPT_FILE\"\n\"$GUILD_HALL_BIN\" toolbox submit-result --summary done");
    write(
        &p.root.join(".lore/plans/two.md"),
        "---\ntitle: Two\nwaves:\n  - - {id: task-1, worker: echoer, prompt: the first wave speaks}\n  - - {id: task-1, worker: echoer, prompt: the second wave speaks}\n---\n",
    );
    p.settle();
    let shown = p.ok(&["plan", "show", "two"]);
    assert!(shown.contains("two:exec:wave-2:task-1"), "{shown}");

    let (code, out, err) = p.run(&["plan", "logs", "two", "task-1"]);
    assert_ne!(code, 0, "ambiguous: refused, not wave 1's log:\n{out}");
    assert!(!out.contains("the first wave speaks"), "{out}");
    assert!(err.contains("two:exec:wave-1:task-1") && err.contains("two:exec:wave-2:task-1"), "the canonical ids are listed:\n{err}");

    let second = p.ok(&["plan", "logs", "two", "two:exec:wave-2:task-1"]);
    assert!(second.contains("the second wave speaks") && !second.contains("the first"), "{second}");
    assert_eq!(p.ok(&["logs", "two:exec:wave-2:task-1"]), second, "`logs` resolves the same way");
    let (code, _, err) = p.run(&["plan", "logs", "two", "task-9"]);
    assert_ne!(code, 0);
    assert!(err.contains("plan two has no task task-9") && err.contains("two:exec:wave-1:task-1"), "{err}");
}

/// `check` in a person's words, each file's findings in the order of its lines: a timeout that
/// is no duration says how to write one (not the parser's "expected number at 0"); a plain
/// value holding `: ` says to quote it, with the line quoted as the example. `status` gives
/// an invalid artifact one row, its problems in one reason.
#[test]
fn check_says_how_to_fix_in_line_order_and_status_gives_one_row_an_id() {
    let p = Project::new(&["scribe"]);
    let a = p.root.join(".lore/commissions/a.md");
    write(&a, "---\ntitle: A\nworker: scribe\ntimeout: forever\nresources: {max_turn: 5}\nstatus: bogus\ndependecies: [x]\n---\nBody.\n");
    let b = p.root.join(".lore/commissions/b.md");
    write(&b, "---\ntitle: Bad: yaml: here\nworker: scribe\n---\nBody.\n");
    let all = check(&p);
    let (a_at, b_at) = (a.display().to_string(), b.display().to_string());
    let lines: Vec<&str> = all.lines().filter(|l| l.starts_with(&a_at) || l.starts_with(&b_at)).collect();
    assert_eq!(
        lines,
        [
            format!("{a_at}:4:10: timeout \"forever\" is not a duration: write it like 30m, 2h or 90s"),
            format!("{a_at}:5:13: unknown key `max_turn` in `resources`: did you mean `max_turns`?"),
            format!("{a_at}:6:9: unknown status \"bogus\" (expected one of: draft, pending, blocked, dispatched, in_progress, review, completed, failed, cancelled, abandoned)"),
            format!("{a_at}:7:1: unknown key `dependecies`: did you mean `dependencies`?"),
            format!("{b_at}:2:11: invalid YAML: mapping values are not allowed in this context: a value holding `: ` must be quoted, e.g. `title: \"Bad: yaml: here\"`"),
        ],
        "{all}"
    );
    // A worker.yaml's timeout is said alike.
    let y = p.root.join(".lore/workers/scribe/worker.yaml");
    let yaml = std::fs::read_to_string(&y).expect("yaml");
    write(&y, &format!("{yaml}timeout: forever\n"));
    says(
        &check(&p),
        &y,
        yaml.lines().count() + 1,
        10,
        "invalid worker.yaml: timeout: \"forever\" is not a duration: write it like 30m, 2h or 90s",
    );
    std::fs::write(&y, yaml).expect("write");

    // `status`: one row an id, however many problems it has.
    let (_, out, _) = p.run(&["status"]);
    let rows: Vec<&str> = out.lines().filter(|l| l.starts_with("a ")).collect();
    assert_eq!(rows.len(), 1, "{out}");
    let reason = format!(
        "{a_at}:4:10: timeout \"forever\" is not a duration: write it like 30m, 2h or 90s; 5:13: unknown key `max_turn` in `resources`: did you mean `max_turns`?; 6:9: unknown status \"bogus\""
    );
    assert!(rows[0].contains(&reason), "{out}");
    assert!(rows[0].ends_with("; 7:1: unknown key `dependecies`: did you mean `dependencies`?"), "{out}");
    let (_, json, _) = p.run(&["status", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&json).expect("json");
    let ids: Vec<&str> = v.as_array().expect("rows").iter().filter_map(|r| r["id"].as_str()).collect();
    assert_eq!(ids, ["a", "b"], "{json}");
}
