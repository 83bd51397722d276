//! What editors, shells and commit hooks use: the JSON Schemas (`guild-hall schema`), shell
//! completions and the man page, and the pre-commit hook definition.

use crate::common::*;

/// `.pre-commit-hooks.yaml`: every hook runs `guild-hall check` on `.lore/` changes, and that
/// command fails a commit with a broken artifact and passes a good one.
#[test]
fn the_pre_commit_hooks_run_check_on_lore_changes() {
    let text =
        std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(".pre-commit-hooks.yaml")).expect("hooks file");
    let hooks: Vec<serde_yaml_ng::Value> = serde_yaml_ng::from_str(&text).expect("a YAML list");
    assert!(!hooks.is_empty());
    let p = Project::new(&["scribe"]);
    for hook in &hooks {
        let field = |k: &str| hook[k].as_str().unwrap_or_default().to_string();
        assert!(field("id").starts_with("guild-hall-check"), "{hook:?}");
        assert_eq!(field("files"), "^\\.lore/", "{hook:?}");
        assert_eq!(hook["pass_filenames"], serde_yaml_ng::Value::Bool(false), "{hook:?}");
        let entry = field("entry");
        let mut argv = entry.split_whitespace();
        assert_eq!(argv.next(), Some("guild-hall"));
        let args: Vec<&str> = argv.collect();
        p.write_commission("good", "---\ntitle: Good\nworker: scribe\n---\nDo.\n");
        let (code, out, _) = p.run(&args);
        assert_eq!(code, 0, "{entry}: {out}");
        p.write_commission("bad", "---\ntitle: Bad\nworker: scribe\nstatus: finished\n---\nDo.\n");
        let (code, out, _) = p.run(&args);
        assert_eq!(code, 1, "{entry}: {out}");
        assert!(out.contains("bad.md:4:"), "{out}");
        std::fs::remove_file(p.artifact_path("bad")).expect("rm");
    }
}

/// The YAML blocks of README.md and docs/*.md that are artifacts or packages, and every `worker.yaml` under
/// examples/ and contrib/: (kind, where, YAML).
fn examples() -> Vec<(&'static str, String, String)> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    for (page, text) in crate::docs::pages() {
        for b in crate::docs::yaml_examples(&page, &text) {
            // Project settings have no JSON Schema of their own (`check` validates them).
            let (kind, _) = crate::docs::kind_of(&b.text);
            if kind != "settings" {
                let yaml = b.text.trim_start_matches("---\n").split("\n---\n").next().unwrap_or("").to_string();
                out.push((kind, b.at, yaml));
            }
        }
    }
    for dir in ["examples/workers", "contrib/workers"] {
        for e in std::fs::read_dir(root.join(dir)).expect("dir").flatten() {
            let y = e.path().join("worker.yaml");
            if let Ok(text) = std::fs::read_to_string(&y) {
                out.push(("worker", y.display().to_string(), text));
            }
        }
    }
    out
}

/// Every example in the README, docs/ and under examples/ and contrib/ validates against the schema
/// `guild-hall schema` prints (checked by an independent validator, Python's `jsonschema`),
/// and a typo in `status:` or an unknown key does not.
#[test]
fn every_example_validates_against_its_schema() {
    let p = Project::new(&[]);
    let examples = examples();
    for kind in ["commission", "meeting", "plan", "worker"] {
        assert!(examples.iter().any(|(k, _, _)| *k == kind), "no {kind} example in the README, docs/ or examples/");
    }
    let mut cases = Vec::new();
    for (kind, where_, yaml) in &examples {
        let v: serde_yaml_ng::Value = serde_yaml_ng::from_str(yaml).unwrap_or_else(|e| panic!("{where_}: {e}"));
        cases.push(serde_json::json!({"kind": kind, "where": where_, "doc": v, "valid": true}));
        if *kind == "commission" {
            let mut bad = v.clone();
            bad["status"] = "finshed".into();
            cases.push(serde_json::json!({"kind": kind, "where": format!("{where_} (status typo)"), "doc": bad, "valid": false}));
            let mut bad = v.clone();
            bad["dependecies"] = serde_yaml_ng::Value::Sequence(vec![]);
            cases.push(serde_json::json!({"kind": kind, "where": format!("{where_} (unknown key)"), "doc": bad, "valid": false}));
        }
    }
    let dir = p.tmp.path();
    for kind in ["commission", "meeting", "plan", "worker"] {
        std::fs::write(dir.join(format!("{kind}.json")), p.ok(&["schema", kind])).expect("schema");
    }
    std::fs::write(dir.join("cases.json"), serde_json::to_string(&cases).expect("json")).expect("cases");
    let script = r#"
import json, sys, jsonschema
d = sys.argv[1]
bad = []
for c in json.load(open(d + "/cases.json")):
    schema = json.load(open(d + "/" + c["kind"] + ".json"))
    jsonschema.validators.validator_for(schema).check_schema(schema)
    errors = [e.message for e in jsonschema.validators.validator_for(schema)(schema).iter_errors(c["doc"])]
    if bool(errors) == c["valid"]:
        bad.append((c["where"], errors))
print(json.dumps(bad))
"#;
    let out = std::process::Command::new(crate::service::mcp::python()).args(["-c", script]).arg(dir).output().expect("python");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let bad = String::from_utf8_lossy(&out.stdout);
    assert_eq!(bad.trim(), "[]", "examples that do not validate, or typos that do: {bad}");
}

/// Shell completion: clap's scripts, and ids from `guild-hall ids` where an id is expected
/// (run in a real bash); the man page.
#[test]
fn completions_complete_ids_and_the_man_page_renders() {
    let p = Project::new(&["scribe", "counsel"]);
    p.write_commission("alpha", "---\nworker: scribe\n---\nDo.\n");
    p.write_commission("beta", "---\nworker: scribe\n---\nDo.\n");
    std::fs::write(p.root.join(".lore/meetings/talk.md"), "---\nworker: counsel\nstatus: requested\n---\n").expect("meeting");
    assert_eq!(p.ok(&["ids", "commissions"]), "alpha\nbeta\n");
    assert_eq!(p.ok(&["ids", "meetings"]), "talk\n");
    let script = p.tmp.path().join("gh.bash");
    std::fs::write(&script, p.ok(&["completions", "bash"])).expect("script");
    let bin_dir = assert_cmd::cargo::cargo_bin("guild-hall").parent().expect("dir").to_path_buf();
    let complete = |words: &str| {
        let cmd = format!(
            "export PATH='{}':\"$PATH\"; source '{}'; COMP_WORDS=({words}); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)); \
             COMP_LINE=\"${{COMP_WORDS[*]}}\"; COMP_POINT=${{#COMP_LINE}}; _guild_hall_with_ids guild-hall \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            bin_dir.display(),
            script.display()
        );
        let out = p.cmd_in_shell(&cmd).output().expect("bash");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let mut got: Vec<String> = String::from_utf8_lossy(&out.stdout).lines().filter(|l| !l.is_empty()).map(str::to_string).collect();
        got.sort();
        got
    };
    assert_eq!(complete("guild-hall status ''"), ["alpha", "beta"]);
    assert_eq!(complete("guild-hall commission cancel b"), ["beta"]);
    assert_eq!(complete("guild-hall meeting close ''"), ["talk"]);
    assert!(complete("guild-hall sta").contains(&"status".to_string()), "subcommands still complete");
    let zsh = p.ok(&["completions", "zsh"]);
    // An id's line names it and says what it is (its help), then completes it from `ids`.
    assert!(
        zsh.contains(":id -- The meeting id\\: its file stem under .lore/meetings/:_guild_hall_ids meetings'")
            && zsh.contains(":id -- The commission id\\: its file stem under .lore/commissions/:_guild_hall_ids commissions'"),
        "zsh ids"
    );
    assert!(zsh.contains(":id -- The plan id\\: its file stem under .lore/plans/:_default'"), "a plan id is no commission's");
    let fish = p.ok(&["completions", "fish"]);
    assert!(fish.contains("(guild-hall ids meetings 2>/dev/null)"), "fish ids");
    let man = p.ok(&["man"]);
    assert!(man.starts_with(".ie") && man.contains(".TH guild-hall 1") && man.contains("gc") && man.contains("schema"), "{man}");
}

/// The pre-commit block of docs/commands.md is concrete (no placeholder to fill in) and is the
/// hooks file's `guild-hall-check-system`: the same entry, language, files and pass_filenames.
#[test]
fn the_docs_pre_commit_block_is_the_system_hook() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let hooks: Vec<serde_yaml_ng::Value> =
        serde_yaml_ng::from_str(&std::fs::read_to_string(root.join(".pre-commit-hooks.yaml")).expect("hooks file")).expect("YAML");
    let system = hooks.iter().find(|h| h["id"] == "guild-hall-check-system").expect("guild-hall-check-system");
    let page = std::fs::read_to_string(root.join("docs/commands.md")).expect("commands.md");
    let at = page.find("**pre-commit.**").expect("the pre-commit paragraph");
    let block = page[at..].split("```yaml\n").nth(1).and_then(|b| b.split("```").next()).expect("its YAML block");
    assert!(!block.contains('<'), "no placeholder: {block}");
    let config: serde_yaml_ng::Value = serde_yaml_ng::from_str(block).expect("a .pre-commit-config.yaml");
    let repo = &config["repos"][0];
    assert_eq!(repo["repo"], "local", "{block}");
    let hook = &repo["hooks"][0];
    for key in ["entry", "language", "files", "pass_filenames"] {
        assert_eq!(hook[key], system[key], "{key}: {block}");
    }
}
