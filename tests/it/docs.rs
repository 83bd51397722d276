//! The README and `docs/` held to what the binary does: every YAML example validates with the
//! binary's own validator (`guild-hall check`, unknown keys included) unless marked as not
//! meant to, every relative link and anchor resolves, and the commands they describe behave as
//! written (`reconcile` is one pass, `commission create` says a prompt is required, `man
//! --dir` writes a page per subcommand). That every `guild-hall …` in a shell block exists is
//! checked against the clap tree itself, in the binary's unit tests (`src/cli/tests.rs`).

use std::path::{Path, PathBuf};

use crate::common::*;

/// The marker a YAML block that is not meant to validate carries on the line before its fence:
/// `<!-- not-checked: why -->`. Any other YAML block is checked; none is skipped in silence.
const NOT_CHECKED: &str = "<!-- not-checked:";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// README.md and every markdown file under docs/: (path relative to the root, text).
pub(crate) fn pages() -> Vec<(String, String)> {
    let mut names: Vec<String> = std::fs::read_dir(root().join("docs"))
        .expect("docs/")
        .flatten()
        .map(|e| format!("docs/{}", e.file_name().to_string_lossy()))
        .filter(|n| n.ends_with(".md"))
        .collect();
    names.sort();
    names.insert(0, "README.md".into());
    names.into_iter().map(|n| (n.clone(), std::fs::read_to_string(root().join(&n)).expect("read page"))).collect()
}

/// A fenced block: where it opens (`page:line`), its info string, the line before the fence,
/// and its text.
pub(crate) struct Block {
    pub at: String,
    pub lang: String,
    pub before: String,
    pub text: String,
}

fn blocks(page: &str, text: &str) -> Vec<Block> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut open: Option<Block> = None;
    for (n, line) in lines.iter().enumerate() {
        match &mut open {
            None if line.starts_with("```") => {
                let before = if n > 0 { lines[n - 1].to_string() } else { String::new() };
                open = Some(Block { at: format!("{page}:{}", n + 1), lang: line[3..].trim().to_string(), before, text: String::new() });
            }
            Some(_) if line.starts_with("```") => out.extend(open.take()),
            Some(b) => {
                b.text.push_str(line);
                b.text.push('\n');
            }
            None => {}
        }
    }
    assert!(open.is_none(), "{page}: a code fence is never closed");
    out
}

/// The YAML blocks of a page that are examples to check: all but those marked not to be, each
/// of which must say why.
pub(crate) fn yaml_examples(page: &str, text: &str) -> Vec<Block> {
    blocks(page, text)
        .into_iter()
        .filter(|b| b.lang == "yaml")
        .filter(|b| match b.before.trim().strip_prefix(NOT_CHECKED) {
            Some(why) => {
                assert!(why.trim_end_matches("-->").trim().len() > 3, "{}: say why it is not checked", b.at);
                false
            }
            None => true,
        })
        .collect()
}

/// What a YAML example is, by what it holds: a plan (`waves:`), a worker package (`command:`),
/// a meeting (`agenda:`), a commission (any other frontmatter), or project settings (a bare
/// mapping without `command:`). The path it goes to in a project.
pub(crate) fn kind_of(text: &str) -> (&'static str, &'static str) {
    let frontmatter = text.starts_with("---\n");
    if frontmatter && text.contains("\nwaves:") {
        ("plan", ".lore/plans/example.md")
    } else if frontmatter && text.contains("\nagenda:") {
        ("meeting", ".lore/meetings/example.md")
    } else if frontmatter {
        ("commission", ".lore/commissions/example.md")
    } else if text.lines().any(|l| l.starts_with("command:")) {
        ("worker", ".lore/workers/example/worker.yaml")
    } else {
        ("settings", ".lore/guild-hall.yaml")
    }
}

/// The workers an example names (`worker: X`, `fixer: X`, `default_worker: X`, and a plan's
/// tasks; `null` is none).
fn workers_named(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for key in ["worker: ", "fixer: "] {
        for part in text.split(key).skip(1) {
            let name: String = part.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_').collect();
            if !name.is_empty() && name != "null" && !out.contains(&name) {
                out.push(name);
            }
        }
    }
    out
}

/// Every YAML block of the README and docs/ passes `guild-hall check` in a project of its own,
/// written where a person would put it (the workers it names installed), and the same block
/// with an unknown key added fails, at that file: the validator really read it. A block marked
/// `<!-- not-checked: why -->` is left out, and only such a block.
#[test]
fn every_yaml_example_in_the_docs_passes_check() {
    let mut checked = Vec::new();
    let mut kinds = std::collections::BTreeSet::new();
    for (page, text) in pages() {
        for b in yaml_examples(&page, &text) {
            let (kind, path) = kind_of(&b.text);
            kinds.insert(kind);
            // A package is named by its directory: a `worker.yaml` goes in the one its `name:` says.
            let named =
                b.text.lines().find_map(|l| l.strip_prefix("name: ")).map(|n| n.split_whitespace().next().unwrap_or("").to_string());
            let path = match (kind, named) {
                ("worker", Some(n)) if !n.is_empty() => format!(".lore/workers/{n}/worker.yaml"),
                _ => path.to_string(),
            };
            let path = path.as_str();
            let p = Project::new(&[]);
            // Installed as a reader would: `workers add`, from the packages the binary bundles.
            for w in workers_named(&b.text) {
                let (code, out, err) = p.run(&["workers", "add", &w]);
                assert_eq!(code, 0, "{}: names worker `{w}`, which `workers add` cannot install:\n{out}{err}", b.at);
            }
            let file = p.root.join(path);
            std::fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
            std::fs::write(&file, &b.text).expect("write");
            // A package example is installed whole, as a person would: the files it names
            // (command, posture, compact) beside it, the programs it requires on PATH.
            let bin = p.tmp.path().join("example-bin");
            if kind == "worker" {
                package_files(file.parent().expect("package dir"), &bin, &b.text);
            }
            let path_var = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
            let check = || {
                let out = p.cmd().env("PATH", &path_var).arg("check").output().expect("runs");
                let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
                (out.status.code().unwrap_or(-1), text(&out.stdout), text(&out.stderr))
            };
            let (code, out, err) = check();
            assert_eq!(code, 0, "{} ({kind}, as {path}) does not pass check:\n{out}{err}\n{}", b.at, b.text);
            // An unknown key in the same block is a problem at that file.
            let bad = match b.text.strip_prefix("---\n") {
                Some(rest) => format!("---\nno_such_key: 1\n{rest}"),
                None => format!("no_such_key: 1\n{}", b.text),
            };
            std::fs::write(&file, bad).expect("write");
            let (code, out, err) = check();
            let said = format!("{out}{err}");
            assert!(code == 1 && said.contains(path) && said.contains("unknown key `no_such_key`"), "{}: {said}", b.at);
            checked.push(b.at);
        }
    }
    for kind in ["commission", "meeting", "plan", "worker", "settings"] {
        assert!(kinds.contains(kind), "no {kind} example checked in the README or docs/: {checked:?}");
    }
}

/// The files a package example names (its command's and compact's scripts, its posture),
/// written into `dir` (executable), and the programs it `requires:` into `bin`.
fn package_files(dir: &std::path::Path, bin: &std::path::Path, yaml: &str) {
    use std::os::unix::fs::PermissionsExt;
    let m: serde_yaml_ng::Value = serde_yaml_ng::from_str(yaml).expect("yaml");
    let first = |key: &str| m[key].as_sequence().and_then(|s| s.first()).and_then(|v| v.as_str()).map(str::to_string);
    let mut files: Vec<String> = [first("command"), first("compact")].into_iter().flatten().filter(|c| c.contains('/')).collect();
    files.extend(m["posture"].as_str().map(str::to_string));
    let exe = |f: std::path::PathBuf| {
        std::fs::create_dir_all(f.parent().expect("parent")).expect("mkdir");
        std::fs::write(&f, "#!/bin/sh\n").expect("write");
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    };
    for f in files {
        exe(dir.join(f));
    }
    for prog in m["requires"].as_sequence().into_iter().flatten().filter_map(|v| v.as_str()) {
        exe(bin.join(prog));
    }
}

/// GitHub's anchor for a heading: lowercase, punctuation dropped, spaces as `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a page: one per heading outside code blocks (a repeated one gets `-1`, `-2`).
fn anchors(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
        }
        if fenced || !line.starts_with('#') {
            continue;
        }
        let s = slug(line.trim_start_matches('#'));
        let n = out.iter().filter(|a| **a == s || a.strip_prefix(&format!("{s}-")).is_some_and(|d| d.parse::<u32>().is_ok())).count();
        out.push(if n == 0 { s } else { format!("{s}-{n}") });
    }
    out
}

/// The targets of the page's markdown links `[text](target)`, outside code blocks and spans.
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
        }
        if fenced {
            continue;
        }
        // Code spans hold no links (`a](b)` in one is text).
        let prose: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
        for part in prose.split("](").skip(1) {
            if let Some(end) = part.find(')') {
                out.push(part[..end].to_string());
            }
        }
    }
    out
}

/// Every relative link of the README and docs/ names a file that exists and, with `#anchor`,
/// a heading of it; the README reaches every page of docs/ in one click, and docs/README.md
/// indexes them all.
#[test]
fn every_relative_link_in_the_docs_resolves() {
    let pages = pages();
    let mut bad = Vec::new();
    let mut seen = 0;
    for (page, text) in &pages {
        let dir = Path::new(page).parent().unwrap_or(Path::new(""));
        for target in links(text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            seen += 1;
            let (file, anchor) = target.split_once('#').unwrap_or((&target, ""));
            let path = if file.is_empty() { PathBuf::from(page) } else { dir.join(file) };
            let full = root().join(&path);
            if !full.exists() {
                bad.push(format!("{page}: ({target}): no file {}", path.display()));
                continue;
            }
            if !anchor.is_empty() {
                let there = std::fs::read_to_string(&full).unwrap_or_default();
                if !anchors(&there).iter().any(|a| a == anchor) {
                    bad.push(format!("{page}: ({target}): no heading #{anchor} in {}", path.display()));
                }
            }
        }
    }
    assert!(bad.is_empty(), "broken links:\n{}", bad.join("\n"));
    assert!(seen > 20, "links were read: {seen}");
    let readme = &pages[0].1;
    let index = &pages.iter().find(|(p, _)| p == "docs/README.md").expect("docs/README.md, the index").1;
    for (page, _) in pages.iter().filter(|(p, _)| p.starts_with("docs/") && p != "docs/README.md") {
        let name = page.trim_start_matches("docs/");
        assert!(readme.contains(&format!("]({page}")), "the README does not link {page}");
        assert!(index.contains(&format!("]({name}")), "docs/README.md does not list {name}");
    }
}

/// `reconcile` without `--once` is the same one pass: the same plan, and the same work done.
#[test]
fn reconcile_is_one_pass_with_or_without_once() {
    let p = Project::new(&["scribe"]);
    let id = p.create("scribe", "Write it", "output: .lore/out.md\nWrite the file.");
    let plan = |args: &[&str]| {
        let v: serde_json::Value = serde_json::from_str(&p.ok(args)).expect("json");
        v.as_array().expect("array").iter().map(|a| a["action"].to_string() + &a["id"].to_string()).collect::<Vec<_>>()
    };
    let bare = plan(&["reconcile", "--dry-run", "--json"]);
    assert!(!bare.is_empty(), "a dispatch is planned");
    assert_eq!(bare, plan(&["reconcile", "--once", "--dry-run", "--json"]));
    let (code, out, err) = p.run(&["reconcile", "--wait", "--timeout", "60s"]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(p.status(&id), "completed", "{out}");
    let help = p.ok(&["reconcile", "--help"]);
    assert!(help.contains("--once") && help.contains("default"), "{help}");
}

/// `commission create` says in its usage that a prompt is required, and refuses to go without.
#[test]
fn commission_create_usage_says_a_prompt_is_required() {
    let p = Project::new(&["scribe"]);
    let usage = "<--prompt <PROMPT>|--prompt-file <FILE>>";
    assert!(p.ok(&["commission", "create", "--help"]).contains(usage));
    let (code, _, err) = p.run(&["commission", "create", "--worker", "scribe", "--title", "No prompt"]);
    assert!(code == 2 && err.contains(usage), "{err}");
    assert!(!p.root.join(".lore/commissions/no-prompt.md").exists(), "nothing written");
}

/// `man --dir` writes the top page and one per subcommand, named as git names its pages, and
/// says each path; the top page lists the subcommands' pages; bare `man` prints the top page.
#[test]
fn man_writes_a_page_per_subcommand() {
    let p = Project::new(&[]);
    let dir = p.tmp.path().join("man1");
    let out = p.ok(&["man", "--dir", dir.to_str().expect("utf8")]);
    for page in
        ["guild-hall.1", "guild-hall-init.1", "guild-hall-commission-create.1", "guild-hall-plan-logs.1", "guild-hall-job-dispatch.1"]
    {
        assert!(dir.join(page).is_file() && out.contains(&dir.join(page).display().to_string()), "{page}: {out}");
    }
    assert!(!dir.join("guild-hall-shim.1").exists(), "hidden commands have no page");
    let top = std::fs::read_to_string(dir.join("guild-hall.1")).expect("top page").replace("\\-", "-");
    for sub in ["init", "reconcile", "commission", "meeting", "plan", "job", "man"] {
        assert!(top.contains(&format!("guild-hall-{sub}(1)")), "the top page lists {sub}");
    }
    assert_eq!(p.ok(&["man"]).replace("\\-", "-"), top);
}

/// A line of a shell block as its words, quotes taken off ('…' and "…"; no expansion: the
/// path's commands use none), up to a comment.
pub(crate) fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut quote = None;
    for c in line.chars() {
        match (quote, c) {
            (None, '#') if word.is_none() => break,
            (None, ' ' | '\t') => words.extend(word.take()),
            (None, '\'' | '"') => {
                quote = Some(c);
                word.get_or_insert_with(String::new);
            }
            (Some(q), c) if c == q => quote = None,
            (_, c) => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    words
}

/// The README's first screen is the five-minute path, and the path works as written: in a
/// fresh repository, each `guild-hall` command of its shell blocks runs and succeeds, its YAML
/// block is saved where the text says, and at the end both commissions' work is on the
/// person's branch, and — its `git` lines run too — nothing of `.lore/` is left uncommitted.
/// Left out: installing (the test runs the binary cargo built), `cd`, and `watch`, which runs
/// until stopped (the `reconcile --wait` beside it does the same work).
#[test]
fn the_readme_five_minute_path_works_as_written() {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README");
    let heading = "## Five minutes on your own repository";
    let at = readme.lines().position(|l| l == heading).expect("the five-minute path");
    assert!(at < 25, "the five-minute path starts on the README's first screen (line {})", at + 1);
    let section = readme.split(heading).nth(1).and_then(|s| s.split("\n## ").next()).expect("its section");
    let p = Project::new(&[]);
    let mut ran = Vec::new();
    for b in blocks("README.md", section) {
        if b.lang == "yaml" {
            // Saved as the path named in the text just before it.
            let before = &section[..section.find(&b.text).expect("the block")];
            let path = before.rsplit('`').find(|s| s.starts_with(".lore/") && s.ends_with(".md")).expect("the text names where to save it");
            std::fs::write(p.root.join(path), &b.text).expect("write");
            ran.push(format!("wrote {path}"));
            continue;
        }
        for line in b.text.lines() {
            if line.starts_with("git ") {
                let o = std::process::Command::new("sh").arg("-c").arg(line).current_dir(&p.root).output().expect("sh");
                assert!(o.status.success(), "README: `{line}` failed:\n{}", String::from_utf8_lossy(&o.stderr));
                ran.push(line.to_string());
                continue;
            }
            let words = shell_words(line);
            let Some(("guild-hall", args)) = words.split_first().map(|(a, r)| (a.as_str(), r)) else { continue };
            if args.first().is_some_and(|a| a == "watch") {
                continue;
            }
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let (code, out, err) = p.run(&args);
            assert_eq!(code, 0, "README: `{line}` failed:\n{out}{err}");
            ran.push(args.join(" "));
        }
    }
    for step in ["init", "workers add scribe", "commission create", "reconcile --wait", "status", "land", "git add .lore"] {
        assert!(ran.iter().any(|r| r.starts_with(step)), "the path runs `{step}`: {ran:?}");
    }
    assert_eq!(git(&p.root, &["status", "--porcelain"]), "", "the path leaves nothing uncommitted: {ran:?}");
    for note in ["first", "second"] {
        assert_eq!(
            git(&p.root, &["cat-file", "-t", &format!("main:.lore/notes/{note}.md")]).trim(),
            "blob",
            "{note} landed on main: {ran:?}"
        );
    }
}

/// The packages `guild-hall workers --available` lists: those a reader can install.
fn bundled() -> Vec<String> {
    let p = Project::new(&[]);
    let v: serde_json::Value = serde_json::from_str(&p.ok(&["workers", "--available", "--json"])).expect("workers --available --json");
    v.as_array().expect("array").iter().filter_map(|w| w["name"].as_str().map(str::to_string)).collect()
}

/// The code of a page: its fenced blocks (the YAML ones by their keys, [`workers_named`]) and
/// its code spans; what each names as a worker: `--worker X`, `--fixer X`, `workers add X`,
/// and a task's `{…, worker: X}`. A placeholder (`W`, `NAME`) is no name.
fn workers_in_code(page: &str, text: &str) -> Vec<(String, String)> {
    let mut code: Vec<(String, String)> = Vec::new();
    for b in blocks(page, text) {
        if b.lang == "yaml" {
            code.extend(workers_named(&b.text).into_iter().map(|w| (b.at.clone(), format!("worker: {w}"))));
        }
        code.push((b.at.clone(), b.text.clone()));
    }
    // Code spans, outside fences (a span may run over a line end).
    let mut prose = String::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            prose.push_str(line);
            prose.push('\n');
        }
    }
    code.extend(prose.split('`').skip(1).step_by(2).map(|s| (page.to_string(), s.to_string())));
    let mut out = Vec::new();
    for (at, text) in code {
        for key in ["--worker ", "--fixer ", "workers add --user ", "workers add ", "{worker: ", ", worker: ", "worker: "] {
            // `worker: X` alone only in what `workers_named` gave (a YAML block's key).
            if key == "worker: " && !text.starts_with("worker: ") {
                continue;
            }
            for part in text.split(key).skip(1) {
                let name: String = part.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_').collect();
                let placeholder = name.chars().all(|c| c.is_ascii_uppercase());
                if !name.is_empty() && !placeholder && !name.starts_with('-') {
                    out.push((at.clone(), name));
                }
            }
        }
    }
    out
}

/// Every worker an example in the README or docs/ names — in a YAML block, a command, a code
/// span — is a package the binary bundles (`workers --available`), so every example runs as
/// written with `workers add NAME` and nothing else.
#[test]
fn every_worker_the_docs_name_is_bundled() {
    let bundled = bundled();
    let mut named = Vec::new();
    let mut unknown = Vec::new();
    for (page, text) in pages() {
        for (at, w) in workers_in_code(&page, &text) {
            let said = format!("{at}: worker `{w}` is not bundled (bundled: {})", bundled.join(", "));
            if !bundled.contains(&w) && !unknown.contains(&said) {
                unknown.push(said);
            }
            named.push(w);
        }
    }
    assert!(unknown.is_empty(), "{}", unknown.join("\n"));
    for w in ["scribe", "counsel"] {
        assert!(named.contains(&w.to_string()), "the docs' examples were read: {named:?}");
    }
}

/// The marker of a commission or plan example that is not to be run (it needs a model, say):
/// `<!-- not-run: why -->` on the line before its fence.
const NOT_RUN: &str = "<!-- not-run:";

/// Every commission and plan example of the README and docs/ runs as written with the bundled
/// scripted workers it names, for real: written where it belongs in a fresh project, its
/// workers installed with `workers add`, the paths it depends on committed first, one
/// `reconcile --wait`; it ends `completed`, and the files it says it writes (`output:` lines,
/// `outputs:`) are on the integration branch.
#[test]
fn every_commission_and_plan_example_runs_with_bundled_workers() {
    // The scripted packages: bundled, and in examples/ (the agent packages need a model).
    let scripted: Vec<String> = bundled().into_iter().filter(|w| examples().join(w).join("worker.yaml").is_file()).collect();
    let mut ran = Vec::new();
    for (page, text) in pages() {
        for b in yaml_examples(&page, &text) {
            let (kind, path) = kind_of(&b.text);
            if !matches!(kind, "commission" | "plan") {
                continue;
            }
            if let Some(why) = b.before.trim().strip_prefix(NOT_RUN) {
                assert!(why.trim_end_matches("-->").trim().len() > 3, "{}: say why it is not run", b.at);
                continue;
            }
            let p = Project::new(&[]);
            for w in workers_named(&b.text) {
                assert!(
                    scripted.contains(&w),
                    "{}: names `{w}`, not a scripted bundled worker ({}): use one, or mark the block `{NOT_RUN} why -->`",
                    b.at,
                    scripted.join(", ")
                );
                p.ok(&["workers", "add", &w]);
            }
            let front: serde_yaml_ng::Value =
                serde_yaml_ng::from_str(b.text.trim_start_matches("---\n").split("\n---").next().unwrap_or("")).expect("frontmatter");
            let list = |key: &str| -> Vec<String> {
                front[key].as_sequence().map(|s| s.iter().filter_map(|v| v.as_str().map(str::to_string)).collect()).unwrap_or_default()
            };
            for dep in list("dependencies") {
                p.commit_on_integration(&dep, "what it depends on\n", "a dependency of the example");
            }
            let file = p.root.join(path);
            std::fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
            std::fs::write(&file, &b.text).expect("write");
            let (code, out, err) = p.run(&["reconcile", "--wait", "--timeout", "120s"]);
            assert_eq!(code, 0, "{}: reconcile failed:\n{out}{err}", b.at);
            let status = if kind == "plan" {
                let v: serde_json::Value = serde_json::from_str(&p.ok(&["plan", "show", "example", "--json"])).expect("plan json");
                v["status"].as_str().unwrap_or("").to_string()
            } else {
                p.status("example")
            };
            assert_eq!(status, "completed", "{} ({kind}) did not complete:\n{out}{err}\n{}", b.at, p.ok(&["status"]));
            let mut written = list("outputs");
            written.extend(b.text.split("output: ").skip(1).map(|s| s.chars().take_while(|c| !c.is_whitespace() && *c != '"').collect()));
            assert!(!written.is_empty(), "{}: the example says what it writes", b.at);
            for f in written {
                assert_eq!(
                    git(&p.root, &["cat-file", "-t", &format!("claude/main:{f}")]).trim(),
                    "blob",
                    "{}: {f} is on claude/main",
                    b.at
                );
            }
            ran.push(format!("{} ({kind})", b.at));
        }
    }
    for page in ["README.md", "docs/commissions.md", "docs/plans.md"] {
        assert!(ran.iter().any(|r| r.starts_with(page)), "{page}'s example ran: {ran:?}");
    }
}

/// The README stays short (under about 200 lines) and says what a newcomer otherwise learns
/// only by accident: where guild-hall keeps its state, and how to remove it all again.
#[test]
fn the_readme_is_short_and_says_where_state_lives_and_how_to_remove_it() {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README");
    let n = readme.lines().count();
    assert!(n <= 200, "the README is {n} lines: keep it under about 200 (the rest goes to docs/)");
    assert!(readme.contains("`$GUILD_HALL_HOME`") && readme.contains("`~/.guild-hall`"), "the README says where the home is");
    let section = readme.split("\n## Uninstalling").nth(1).expect("an uninstall section").split("\n## ").next().unwrap_or("");
    for needed in ["cargo uninstall guild-hall", "rm -rf ~/.guild-hall", "claude/*", ".lore", "lost", "git worktree prune"] {
        let said = section.contains(needed) || (needed == "lost" && section.contains("loses"));
        assert!(said, "the uninstall section says `{needed}`:\n{section}");
    }
}

/// No command or example of the README and docs/ holds a placeholder to fill in (`<guild-hall's
/// git URL>`, `<a tag>`): shell and YAML blocks, comments aside, are runnable as written.
#[test]
fn no_example_holds_a_placeholder() {
    let mut found = Vec::new();
    for (page, text) in pages() {
        for b in blocks(&page, &text).into_iter().filter(|b| matches!(b.lang.as_str(), "sh" | "yaml")) {
            for (n, line) in b.text.lines().enumerate() {
                let code = line.split(" #").next().unwrap_or("");
                let code = if code.trim_start().starts_with('#') { "" } else { code };
                if let Some(at) = code.find('<') {
                    if code[at..].contains('>') && code[at + 1..].starts_with(|c: char| c.is_alphabetic()) {
                        found.push(format!("{} (+{}): {line}", b.at, n + 1));
                    }
                }
            }
        }
    }
    assert!(found.is_empty(), "placeholders in examples:\n{}", found.join("\n"));
}

/// What a reader has not got is not cited: no page of the README and docs/, nor a file a
/// bundled package or example carries, points to "DESIGN §…" or a "REQ-…" number (the
/// project's design notes are not in the repository); a page that uses Kiln's words says,
/// where it first names Kiln, what Kiln is.
#[test]
fn the_docs_cite_nothing_a_reader_has_not_got() {
    let mut texts = pages();
    for dir in ["contrib", "examples"] {
        let mut stack = vec![root().join(dir)];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).expect("read_dir").flatten() {
                let path = e.path();
                if path.is_dir() {
                    stack.push(path);
                } else if let Ok(text) = std::fs::read_to_string(&path) {
                    texts.push((path.strip_prefix(root()).expect("under the root").display().to_string(), text));
                }
            }
        }
    }
    let mut bad = Vec::new();
    for (page, text) in &texts {
        // docs/design.md states the specifications' requirements by their names (its §12), so
        // that a name cited in the code resolves in the repository: the one page that may.
        let cites: &[&str] = if page == "docs/design.md" { &["DESIGN §", "DESIGN.md"] } else { &["DESIGN §", "DESIGN.md", "REQ-"] };
        for cite in cites {
            if let Some(at) = text.find(cite) {
                bad.push(format!("{page}:{}: cites {cite}", text[..at].lines().count()));
            }
        }
        if let Some(at) = text.find("Kiln") {
            let around: String = text[at..].chars().take(120).collect();
            if !around.contains("a contract") {
                bad.push(format!("{page}:{}: names Kiln without saying what it is: {around}", text[..at].lines().count()));
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// guild-hall runs on Linux only (it reads `/proc`, confines with Landlock): nothing is shipped
/// or documented for another system's service manager (a launchd plist, say).
#[test]
fn nothing_is_shipped_for_another_system() {
    let mut stack = vec![root().join("contrib"), root().join("examples")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read_dir").flatten() {
            let path = e.path();
            assert!(!path.to_string_lossy().contains("launchd") && path.extension().is_none_or(|x| x != "plist"), "{}", path.display());
            if path.is_dir() {
                stack.push(path);
            }
        }
    }
    for (page, text) in pages() {
        assert!(!text.contains("launchd"), "{page} names launchd");
    }
    let contrib = std::fs::read_to_string(root().join("contrib/README.md")).expect("contrib/README.md");
    assert!(!contrib.contains("launchd"), "contrib/README.md names launchd");
}

/// Every reference to the design resolves inside the repository: a `design §N` in the code,
/// tests or docs names a numbered section of docs/design.md; every requirement name
/// (`REQ-COM-14`, `REQ-WD-5..18`) is stated in its table, by itself or inside a stated range;
/// and no code or test points to a design document or an issue the repository has not got.
#[test]
fn every_design_reference_resolves_in_the_repository() {
    let design = std::fs::read_to_string(root().join("docs/design.md")).expect("docs/design.md");
    let sections: Vec<u32> = design.lines().filter_map(|l| l.strip_prefix("## ")?.split_once(". ")?.0.parse().ok()).collect();
    assert!(sections.len() >= 10, "the sections were read: {sections:?}");
    // The requirement names docs/design.md states: single ones, and ranges `REQ-X-a..b`.
    let stated: Vec<(String, f64, f64)> =
        req_names(&design).into_iter().map(|(family, from, to)| (family, from, to.unwrap_or(from))).collect();
    let mut files = Vec::new();
    for dir in ["src", "tests", "docs"] {
        let mut stack = vec![root().join(dir)];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).expect("read_dir").flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|x| x == "rs" || x == "md") {
                    files.push(p);
                }
            }
        }
    }
    let mut bad = Vec::new();
    let mut cited = 0;
    let this_file = root().join("tests/it/docs.rs");
    for f in &files {
        let text = std::fs::read_to_string(f).expect("read");
        let name = f.strip_prefix(root()).expect("under the root").display().to_string();
        for (n, line) in text.lines().enumerate() {
            let at = format!("{name}:{}", n + 1);
            for (i, _) in line.match_indices("design §") {
                let num: String = line[i + "design §".len()..].chars().take_while(char::is_ascii_digit).collect();
                if num.is_empty() {
                    continue; // the words themselves (as in this test), not a citation
                }
                cited += 1;
                if !num.parse().is_ok_and(|n: u32| sections.contains(&n)) {
                    bad.push(format!("{at}: `design §{num}` is no section of docs/design.md"));
                }
            }
            if name != "docs/design.md" {
                for (family, from, to) in req_names(line) {
                    cited += 1;
                    let to = to.unwrap_or(from);
                    if !stated.iter().any(|(f, a, b)| *f == family && *a <= from && to <= *b) {
                        bad.push(format!("{at}: {family}-{from} is not stated in docs/design.md"));
                    }
                }
            }
            if f != &this_file && (name.starts_with("src/") || name.starts_with("tests/")) {
                let lower = line.to_ascii_lowercase();
                for (i, _) in lower.match_indices("issue ") {
                    if lower[i + 6..].starts_with(|c: char| c.is_ascii_digit()) {
                        bad.push(format!("{at}: cites an issue by number: {}", line.trim()));
                    }
                }
                if line.contains("DESIGN") {
                    bad.push(format!("{at}: cites a DESIGN document the repository has not got"));
                }
            }
        }
    }
    assert!(cited > 20, "the citations were read: {cited}");
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// The requirement names in `text`: (`REQ-COM`, 14, None), (`REQ-WD`, 5, Some(18)) for
/// `REQ-WD-5..18`; `REQ-COM-5/6` is two names.
fn req_names(text: &str) -> Vec<(String, f64, Option<f64>)> {
    let mut out = Vec::new();
    for (i, _) in text.match_indices("REQ-") {
        let rest = &text[i + 4..];
        let family: String = rest.chars().take_while(char::is_ascii_uppercase).collect();
        let Some(nums) = rest[family.len()..].strip_prefix('-') else { continue };
        // A number, with a sub-item (`8.6`) but not the start of a range (`5..18`).
        let number = |s: &str| -> (String, usize) {
            let mut n: String = s.chars().take_while(char::is_ascii_digit).collect();
            let sub = &s[n.len()..];
            if let Some(d) = sub.strip_prefix('.').filter(|r| r.starts_with(|c: char| c.is_ascii_digit())) {
                let more: String = d.chars().take_while(char::is_ascii_digit).collect();
                n = format!("{n}.{more}");
            }
            let len = n.len();
            (n, len)
        };
        let (first, len) = number(nums);
        let Ok(from) = first.parse::<f64>() else { continue };
        let family = format!("REQ-{family}");
        let after = &nums[len..];
        if let Some(r) = after.strip_prefix("..") {
            if let Ok(to) = number(r).0.parse::<f64>() {
                out.push((family, from, Some(to)));
                continue;
            }
        }
        out.push((family.clone(), from, None));
        // `REQ-COM-5/6`: the second number of the same family.
        if let Some(r) = after.strip_prefix('/') {
            if let Ok(n) = number(r).0.parse::<f64>() {
                out.push((family, n, None));
            }
        }
    }
    out
}
