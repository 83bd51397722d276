//! The command tree checked as a whole: every subcommand and argument explains itself in
//! `--help`, every subcommand gets a man page, and every `guild-hall …` command the README and
//! `docs/` show in a shell block exists.

use clap::CommandFactory;

use super::Cli;

fn built() -> clap::Command {
    let mut cmd = Cli::command();
    cmd.build();
    cmd
}

fn said(s: Option<&clap::builder::StyledStr>) -> bool {
    s.is_some_and(|s| !s.to_string().trim().is_empty())
}

/// Every command (hidden ones too: they show in `--help` of nobody, but in the man page of
/// someone reading the source) with its path, depth first.
fn commands(cmd: &clap::Command, path: &str, out: &mut Vec<(String, clap::Command)>) {
    out.push((path.to_string(), cmd.clone()));
    for sub in cmd.get_subcommands() {
        commands(sub, &format!("{path} {}", sub.get_name()), out);
    }
}

#[test]
fn every_subcommand_and_argument_has_help() {
    let mut all = Vec::new();
    commands(&built(), "guild-hall", &mut all);
    let mut missing = Vec::new();
    for (path, cmd) in &all {
        if !said(cmd.get_about()) && !said(cmd.get_long_about()) {
            missing.push(format!("{path}: no about"));
        }
        for a in cmd.get_arguments() {
            if !said(a.get_help()) && !said(a.get_long_help()) {
                missing.push(format!("{path}: argument {} has no help", a.get_id()));
            }
        }
    }
    assert!(all.len() > 40, "the tree was walked: {}", all.len());
    assert!(missing.is_empty(), "without help text:\n{}", missing.join("\n"));
}

/// Every command `--help` shows gets its own page, named by its path as git names its pages,
/// and each parent's page lists its subcommands' pages.
#[test]
fn every_subcommand_has_a_man_page_and_its_parent_lists_it() {
    let pages: std::collections::BTreeMap<String, String> = super::integrate::man_pages()
        .expect("pages")
        .into_iter()
        .map(|(name, text)| (name, String::from_utf8_lossy(&text).replace("\\-", "-")))
        .collect();
    let mut all = Vec::new();
    commands(&built(), "guild-hall", &mut all);
    let mut wanted = 0;
    for (path, cmd) in &all {
        // Hidden commands (the shim, `ids`) and their subcommands have none; nor has `help`.
        let words: Vec<&str> = path.split(' ').collect();
        let mut at = built();
        let mut visible = true;
        for w in &words[1..] {
            let Some(sub) = at.find_subcommand(w).cloned() else { unreachable!("{path}") };
            visible &= !sub.is_hide_set() && *w != "help";
            at = sub;
        }
        if !visible {
            continue;
        }
        wanted += 1;
        let name = words.join("-");
        let page = pages.get(&format!("{name}.1")).unwrap_or_else(|| panic!("no man page {name}.1 for `{path}`"));
        assert!(page.contains(&format!(".TH {name}")) || page.contains(&format!(".TH \"{name}")), "{name}.1 is its page:\n{page}");
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set() && s.get_name() != "help") {
            let child = format!("{name}-{}(1)", sub.get_name());
            assert!(page.contains(&child), "{name}.1 does not list {child}");
        }
    }
    assert_eq!(pages.len(), wanted, "one page per visible command: {:?}", pages.keys().collect::<Vec<_>>());
    assert!(pages.contains_key("guild-hall-commission-create.1") && pages.contains_key("guild-hall-plan-logs.1"), "{:?}", pages.keys());
}

/// The `guild-hall …` commands of the shell blocks (```sh) of README.md and docs/*.md: each as
/// the words that follow it, up to the first option, operator or comment.
fn documented_commands() -> Vec<(String, Vec<String>)> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pages = vec![root.join("README.md")];
    let mut docs: Vec<_> = std::fs::read_dir(root.join("docs")).expect("docs/").flatten().map(|e| e.path()).collect();
    docs.sort();
    pages.extend(docs.into_iter().filter(|p| p.extension().is_some_and(|e| e == "md")));
    let mut out = Vec::new();
    for page in pages {
        let text = std::fs::read_to_string(&page).expect("read");
        let name = page.strip_prefix(root).unwrap_or(&page).display().to_string();
        let mut in_sh = false;
        for (n, line) in text.lines().enumerate() {
            if line.starts_with("```") {
                in_sh = !in_sh && line.trim() == "```sh";
                continue;
            }
            if !in_sh {
                continue;
            }
            let code = line.split(" #").next().unwrap_or("");
            // `guild-hall` as a command: at the start, or after a space, `(`, `;`, `|`, `&`.
            let mut rest = code;
            while let Some(at) = rest.find("guild-hall") {
                let before = rest[..at].chars().last();
                let after = &rest[at + "guild-hall".len()..];
                rest = after;
                if !matches!(before, None | Some(' ' | '(' | ';' | '|' | '&')) || !(after.is_empty() || after.starts_with(' ')) {
                    continue;
                }
                let mut words = Vec::new();
                let mut it = after.split_whitespace().peekable();
                while let Some(w) = it.next() {
                    match w {
                        "-C" | "--home" => {
                            it.next();
                        }
                        "-v" | "-vv" => {}
                        w if w.starts_with(['-', '|', '>', '<', ';', '&', ')', '$', '\\', '"', '\'']) => break,
                        w => words.push(w.trim_end_matches([';', ')']).to_string()),
                    }
                }
                out.push((format!("{name}:{}", n + 1), words));
            }
        }
    }
    out
}

/// Every `guild-hall …` of a shell block in the docs names a real subcommand path: the first
/// word is a subcommand, and while the command reached has subcommands, so is the next word.
#[test]
fn every_command_in_the_docs_shell_blocks_exists() {
    let documented = documented_commands();
    assert!(documented.len() > 12, "the shell blocks were read: {documented:?}");
    let mut bad = Vec::new();
    for (at, words) in &documented {
        let mut cmd = built();
        for (i, w) in words.iter().enumerate() {
            if !cmd.has_subcommands() {
                break;
            }
            match cmd.find_subcommand(w).cloned() {
                Some(sub) => cmd = sub,
                None => {
                    bad.push(format!("{at}: guild-hall {}: no subcommand {w:?}", words[..=i].join(" ")));
                    break;
                }
            }
        }
    }
    assert!(bad.is_empty(), "documented commands that do not exist:\n{}", bad.join("\n"));
}
