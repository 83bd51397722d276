//! Commands for editors, shells and packagers: `schema` (JSON Schemas), `completions` (clap's
//! scripts plus completion of commission and meeting ids), `man`, and the hidden `ids`.

use std::path::Path;

use anyhow::{anyhow, Context, Result};
use clap::CommandFactory;

// Schemas, scripts and the man page are guild-hall's own text, for programs: written exactly.
// Ids are file names: shown escaped.
use super::out::{say, say_raw, stdout_raw};
use super::{Cli, Env};

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
}

pub fn schema(kind: &str) -> Result<()> {
    let text = guild_hall::schema::schema(kind).ok_or_else(|| anyhow!("no schema for {kind:?}"))?;
    stdout_raw(format!("{text}\n").as_bytes());
    Ok(())
}

/// The subcommands whose first positional argument is a commission id, and a meeting id.
const COMMISSION_IDS: &str = "status timeline logs diff";
const COMMISSION_SUBCOMMANDS: &str = "dispatch cancel redispatch";
const MEETING_SUBCOMMANDS: &str = "chat send show accept decline close";

pub fn completions(shell: Shell) -> Result<()> {
    let mut cmd = Cli::command();
    let mut buf = Vec::new();
    let generator = match shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
        Shell::Fish => clap_complete::Shell::Fish,
    };
    clap_complete::generate(generator, &mut cmd, "guild-hall", &mut buf);
    let mut script = String::from_utf8(buf)?;
    // Ids are completed by asking the binary (`guild-hall ids`), in the project of `-C DIR` if
    // one was given: the set changes as files are written, so no static script can hold it.
    match shell {
        Shell::Bash => script.push_str(&format!(
            r#"
# Commission and meeting ids, from `guild-hall ids` (wraps the generated completion).
_guild_hall_with_ids() {{
    local cur="${{COMP_WORDS[COMP_CWORD]}}" words=() dir=() i w kind=""
    for ((i = 1; i < COMP_CWORD; i++)); do
        w="${{COMP_WORDS[i]}}"
        case "$w" in
            -C|--home) ((i++)); [ "$w" = -C ] && dir=(-C "${{COMP_WORDS[i]}}") ;;
            -*) ;;
            *) words+=("$w") ;;
        esac
    done
    case " {COMMISSION_IDS} " in *" ${{words[0]}} "*) [ "${{#words[@]}}" -eq 1 ] && kind=commissions ;; esac
    if [ "${{words[0]}}" = commission ] && [ "${{#words[@]}}" -eq 2 ]; then
        case " {COMMISSION_SUBCOMMANDS} " in *" ${{words[1]}} "*) kind=commissions ;; esac
    fi
    if [ "${{words[0]}}" = meeting ] && [ "${{#words[@]}}" -eq 2 ]; then
        case " {MEETING_SUBCOMMANDS} " in *" ${{words[1]}} "*) kind=meetings ;; esac
    fi
    if [ -n "$kind" ] && [[ "$cur" != -* ]]; then
        COMPREPLY=($(compgen -W "$(guild-hall "${{dir[@]}}" ids "$kind" 2>/dev/null)" -- "$cur"))
        return 0
    fi
    _guild__hall "$@"
}}
complete -F _guild_hall_with_ids -o bashdefault -o default guild-hall
"#
        )),
        Shell::Fish => {
            script.push_str("\n# Commission and meeting ids, from `guild-hall ids`.\n");
            script.push_str(&format!(
                "complete -c guild-hall -n \"__fish_seen_subcommand_from {COMMISSION_IDS}\" -f -a \"(guild-hall ids commissions 2>/dev/null)\"\n"
            ));
            script.push_str(&format!("complete -c guild-hall -n \"__fish_seen_subcommand_from commission; and __fish_seen_subcommand_from {COMMISSION_SUBCOMMANDS}\" -f -a \"(guild-hall ids commissions 2>/dev/null)\"\n"));
            script.push_str(&format!("complete -c guild-hall -n \"__fish_seen_subcommand_from meeting; and __fish_seen_subcommand_from {MEETING_SUBCOMMANDS}\" -f -a \"(guild-hall ids meetings 2>/dev/null)\"\n"));
        }
        Shell::Zsh => {
            // The generated functions describe positional ids as `:id -- <help>:_default`;
            // complete them from `guild-hall ids` instead (commissions, or meetings in
            // `meeting ...`; a plan's id is none of those, and keeps the default).
            let top: Vec<String> = Cli::command().get_subcommands().map(|c| format!("({})", c.get_name())).collect();
            let mut out = String::new();
            let mut section = String::new();
            for line in script.lines() {
                if top.iter().any(|t| t == line) {
                    section = line.to_string();
                }
                // An id's own help says whose it is; the section only where it does not (clap
                // writes nested sections unindented: `plan show` opens a `(show)` like the
                // top-level `show`).
                let kind = if line.contains(":id -- The plan id") {
                    None
                } else if line.contains(":id -- The meeting id") {
                    Some("meetings")
                } else {
                    match section.as_str() {
                        "(meeting)" => Some("meetings"),
                        "(plan)" => None,
                        _ => Some("commissions"),
                    }
                };
                let line = match kind {
                    Some(kind) if line.contains(":id:_default'") || line.contains(":id -- ") && line.ends_with(":_default' \\") => {
                        line.replace(":_default'", &format!(":_guild_hall_ids {kind}'"))
                    }
                    _ => line.to_string(),
                };
                out.push_str(&line);
                out.push('\n');
            }
            script = out;
            script.push_str("\n(( $+functions[_guild_hall_ids] )) ||\n_guild_hall_ids() {\n    local -a ids\n    ids=(${(f)\"$(guild-hall ids $1 2>/dev/null)\"})\n    _describe -t ids id ids\n}\n");
        }
    }
    stdout_raw(script.as_bytes());
    Ok(())
}

/// The top page printed, or every page written into `dir` (each path said).
pub fn man(dir: Option<&Path>) -> Result<()> {
    let pages = man_pages()?;
    let Some(dir) = dir else {
        // The top page is the first.
        stdout_raw(&pages[0].1);
        return Ok(());
    };
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    for (name, text) in &pages {
        let path = dir.join(name);
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
        say!("{}", path.display());
    }
    Ok(())
}

/// One page per command that `--help` shows (hidden ones have none), the top one first, each
/// named as git names its own: `guild-hall.1`, `guild-hall-commission-create.1`. A parent's
/// page lists its subcommands' pages (clap_mangen's SUBCOMMANDS section).
pub fn man_pages() -> Result<Vec<(String, Vec<u8>)>> {
    fn walk(cmd: &clap::Command, out: &mut Vec<(String, Vec<u8>)>) -> Result<()> {
        let man = clap_mangen::Man::new(cmd.clone()).source(format!("guild-hall {}", env!("CARGO_PKG_VERSION")));
        let mut buf = Vec::new();
        man.render(&mut buf)?;
        out.push((man.get_filename(), buf));
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            walk(sub, out)?;
        }
        Ok(())
    }
    // Built, so that each subcommand carries its full name (`guild-hall-commission-create`);
    // `help` is no command of its own here.
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    let mut out = Vec::new();
    walk(&cmd, &mut out)?;
    Ok(out)
}

/// Ids by file name only (no parsing): fast enough to run on every Tab.
pub fn ids(env: &Env, kind: &str) -> Result<()> {
    let dir = if kind == "meetings" { env.project.meetings_dir() } else { env.project.commissions_dir() };
    for p in guild_hall::artifact::paths(&dir)? {
        if let Some(id) = p.file_stem().and_then(|s| s.to_str()) {
            say_raw!("{id}\n");
        }
    }
    Ok(())
}
