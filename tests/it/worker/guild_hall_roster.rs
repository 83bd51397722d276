//! Guild Hall's roster: three worker packages in Guild Hall's shape (`package.json` with a
//! `guildHall` key, `soul.md`, `posture.md`; `tests/fixtures/guild-hall/packages/`) found under
//! `guild_hall_packages:`, checked, listed with where each came from, named by identity in a
//! commission and run through the real Claude Code CLI against the stand-in model API, with
//! their soul and posture, model and tools; and `worker_aliases:`.

use std::path::PathBuf;

use crate::common::*;
use crate::worker::claude_code::{install_package, real_claude, real_run, FakeApi};

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/guild-hall/packages")
}

/// A project with the fixture packages copied under `packages/` (as a Guild Hall repository
/// keeps them) and the roster configured; its workers run through the claude-code package
/// (installed) unless `extra_config` names another `agent:`.
fn roster_project(extra_config: &str) -> Project {
    let p = Project::new(&["scribe"]);
    copy_dir(&fixtures(), &p.root.join("packages"));
    install_package(&p, "claude-code");
    p.config(&format!("guild_hall_packages: [packages]\n{extra_config}"));
    p
}

/// The same, run through the scripted `scribe` (`agent:`): no agent CLI needed on PATH.
fn scribe_roster_project(extra_config: &str) -> Project {
    let p = Project::new(&["scribe"]);
    copy_dir(&fixtures(), &p.root.join("packages"));
    p.config(&format!("guild_hall_packages: [packages]\nagent: scribe\n{extra_config}"));
    p
}

fn workers_json(p: &Project) -> Vec<serde_json::Value> {
    serde_json::from_str(&p.ok(&["workers", "--json"])).expect("workers --json")
}

fn named<'a>(list: &'a [serde_json::Value], name: &str) -> &'a serde_json::Value {
    list.iter().find(|w| w["name"] == name).unwrap_or_else(|| panic!("{name} listed: {list:#?}"))
}

#[test]
fn the_roster_is_found_checked_listed_and_aliased() {
    let p = scribe_roster_project("worker_aliases: {Scribbler: scribe, Warden: Thorne}\n");
    let check = p.ok(&["check"]);
    assert!(check.contains("ok:"), "{check}");
    let list = workers_json(&p);
    let dalton = named(&list, "Dalton");
    assert_eq!(dalton["source"], "guild_hall_packages");
    assert_eq!(dalton["origin"], "guild_hall_packages packages (through scribe)");
    assert_eq!(dalton["checkout"], "full");
    assert_eq!(dalton["guild_hall"]["model"], "opus");
    assert_eq!(dalton["guild_hall"]["tools"], serde_json::json!(["Task", "Read", "Glob", "Grep", "Write", "Edit", "Bash"]));
    assert_eq!(dalton["env"]["GUILD_HALL_MODEL"], "opus");
    let thorne = named(&list, "Thorne");
    assert_eq!(thorne["checkout"], "sparse", "checkoutScope: sparse");
    assert_eq!(thorne["env"]["GUILD_HALL_TOOLS"], "Read,Glob,Grep");
    let master = named(&list, "Guild Master");
    assert_eq!(master["guild_hall"]["display_title"], "Steward of the Hall");
    assert_eq!(named(&list, "Scribbler")["origin"], "alias of scribe");
    assert_eq!(named(&list, "Warden")["origin"], "alias of Thorne");
    assert_eq!(named(&list, "scribe")["origin"], "project (bundled)");
    assert!(!list.iter().any(|w| w["name"] == "note-toolbox"), "a toolbox package is not a worker");
    let text = p.ok(&["workers"]);
    for want in ["Guild Master", "guild_hall_packages packages (through scribe)", "alias of scribe"] {
        assert!(text.contains(want), "{want} in:\n{text}");
    }

    // A commission names a worker by identity, spaces and all; a name nobody has waits, said.
    p.write_commission("plan-the-week", "---\nworker: Guild Master\n---\nPlan the week.\n");
    p.write_commission("nobody", "---\nworker: Nobody Here\n---\nAnything.\n");
    let (_, out, err) = p.run(&["check"]);
    assert!(!out.contains("plan-the-week") && !err.contains("plan-the-week"), "{out}{err}");
    assert!(format!("{out}{err}").contains("\"Nobody Here\" is not installed"), "{out}{err}");
    // An alias runs its package: the scribe writes through it.
    p.write_commission("through-alias", "---\nworker: Scribbler\n---\noutput: .lore/notes/a.md\nWrite a note.\n");
    std::fs::remove_file(p.artifact_path("nobody")).expect("rm");
    std::fs::remove_file(p.artifact_path("plan-the-week")).expect("rm");
    p.settle();
    assert_eq!(p.status("through-alias"), "completed", "{}", p.ok(&["logs", "through-alias"]));
}

#[test]
fn a_bad_package_json_is_said_at_its_field_and_a_name_two_claim_is_refused() {
    let p = scribe_roster_project("");
    let bad = p.root.join("packages/lamp-reader/package.json");
    let text = std::fs::read_to_string(&bad).expect("read");
    std::fs::write(&bad, text.replace("\"checkoutScope\": \"sparse\"", "\"checkoutScope\": \"partial\"")).expect("write");
    let (code, out, err) = p.run(&["check"]);
    let said = format!("{out}{err}");
    assert_ne!(code, 0, "{said}");
    let line = text.lines().position(|l| l.contains("checkoutScope")).expect("the field") + 1;
    assert!(said.contains(&format!("{}:{line}:", bad.display())), "said at the file and line: {said}");
    assert!(said.contains("guildHall.checkoutScope: `full` or `sparse`"), "{said}");

    // Two packages claiming one identity: neither runs, both are named.
    std::fs::write(&bad, &text).expect("restore");
    let twin = p.root.join("packages/forge-twin");
    copy_dir(&p.root.join("packages/forge-builder"), &twin);
    let (code, out, err) = p.run(&["check"]);
    let said = format!("{out}{err}");
    assert_ne!(code, 0, "{said}");
    assert!(said.contains("\"Dalton\" is ambiguous") && said.contains("forge-twin/package.json"), "{said}");
    assert!(!workers_json(&p).iter().any(|w| w["name"] == "Dalton"));
}

/// The worker's posture (soul, then posture) as the system prompt gave it to the model.
fn system_prompt_of(api: &FakeApi) -> String {
    let first = api.tool_results().lines().find_map(|l| serde_json::from_str::<serde_json::Value>(l).ok()).expect("a request");
    first["body"]["system"].to_string()
}

#[test]
fn real_claude_code_runs_a_commission_for_dalton_with_his_soul_model_and_tools() {
    let claude = real_claude();
    let p = roster_project("");
    let api = FakeApi::start(
        p.tmp.path(),
        &serde_json::json!([
            {"tool_use": {"name": "mcp__guild-hall__write_artifact", "input": {"path": ".lore/built/forge.md", "content": "built\n"}}},
            {"tool_use": {"name": "mcp__guild-hall__submit_result", "input": {"summary": "Built it", "artifacts": [".lore/built/forge.md"]}}},
            {"text": "Done."}
        ]),
    );
    p.write_commission("build-the-forge", "---\nworker: Dalton\n---\nBuild the forge.\n");
    let out = real_run(&p, &api, &claude);
    assert!(out.status.success(), "{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(p.status("build-the-forge"), "completed", "{}", p.ok(&["logs", "build-the-forge"]));
    assert_eq!(git(&p.root, &["show", "claude/main:.lore/built/forge.md"]), "built\n");
    let system = system_prompt_of(&api);
    let (soul, posture) = (system.find("SOUL-MARKER-DALTON"), system.find("POSTURE-MARKER-DALTON"));
    assert!(soul.is_some() && posture.is_some() && soul < posture, "soul then posture in the system prompt: {system}");
    assert!(!system.contains("You are a guild-hall worker. You work alone"), "the agent's own posture is replaced");
    let requests: Vec<serde_json::Value> = api
        .tool_results()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .filter(|r: &serde_json::Value| r["body"]["tools"].is_array())
        .collect();
    assert!(!requests.is_empty());
    for r in &requests {
        let model = r["body"]["model"].as_str().unwrap_or("");
        assert!(model.contains("opus"), "the package's model was asked for: {model}");
        let tools: Vec<&str> = r["body"]["tools"].as_array().expect("tools").iter().filter_map(|t| t["name"].as_str()).collect();
        for want in ["Read", "Write", "Edit", "Bash", "mcp__guild-hall__submit_result"] {
            assert!(tools.contains(&want), "{want} offered: {tools:?}");
        }
        assert!(!tools.contains(&"WebSearch"), "only its builtInTools: {tools:?}");
    }
    let timeline = p.timeline("build-the-forge");
    assert!(timeline.iter().any(|e| e.to_string().contains("Dalton")), "the timeline names the worker: {timeline:?}");
}

/// Each identity keeps a memory of its own (`roster.<identity>` under the project's memory),
/// never its agent package's nor another identity's run by the same package.
#[test]
fn each_identity_remembers_for_itself() {
    let p = Project::new(&["scripted-researcher"]);
    copy_dir(&fixtures(), &p.root.join("packages"));
    p.config("guild_hall_packages: [packages]\nagent: scripted-researcher\n");
    p.write_commission("first", "---\nworker: Dalton\n---\nBridges\nSurvey them.\n");
    p.settle();
    assert_eq!(p.status("first"), "completed", "{}", p.artifact("first"));
    assert!(p.memory_dir("roster.Dalton").join("last-topic.md").is_file(), "Dalton's memory is his own");
    assert!(!p.memory_dir("scripted-researcher").exists(), "nothing kept under the agent package's name");

    p.write_commission("second", "---\nworker: Thorne\n---\nTunnels\nSurvey them.\n");
    p.write_commission("third", "---\nworker: Dalton\n---\nRoads\nSurvey them.\n");
    p.write_commission("fourth", "---\nworker: Guild Master\n---\nHalls\nSurvey them.\n");
    p.settle();
    let report = |id: &str| git(&p.root, &["show", &format!("claude/main:.lore/reports/{id}.md")]);
    assert!(report("third").contains("Researched 'Bridges' in commission first."), "Dalton remembers: {}", report("third"));
    for other in ["second", "fourth"] {
        assert!(!report(other).contains("Bridges"), "{other} remembers nothing of Dalton's: {}", report(other));
    }
    // A name with a space gets a dir of its own too.
    let master = std::fs::read_to_string(p.memory_dir("roster.Guild_20Master").join("last-topic.md")).expect("Guild Master's memory");
    assert!(master.contains("Halls"), "{master}");
}
