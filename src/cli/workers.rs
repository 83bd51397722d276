//! `guild-hall workers`: the installed packages (the default, in `show`), the packages bundled
//! in this binary (`--available`), and `workers add NAME` writing one out. Formatting only.

use anyhow::{bail, Context, Result};

use super::out::{line, say, say_json, Table};
use super::{show, Cli, Env};
use guild_hall::config::{Home, Project};
use guild_hall::ops::workers::{self, Target};

#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct WorkersArgs {
    #[command(subcommand)]
    pub cmd: Option<WorkersCmd>,
    /// List the worker packages bundled in this binary (name, what it does, its capabilities),
    /// each marked with where it is installed here, if it is; `workers add NAME` installs one.
    #[arg(long)]
    pub available: bool,
    /// Print the list as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Subcommand)]
pub enum WorkersCmd {
    /// Install a worker package bundled in this binary: write it into the project's
    /// .lore/workers/NAME/ (or, with --user, into the home's workers/NAME/), scripts
    /// executable. Never over an existing directory: that is refused, nothing written.
    ///
    /// Commissions waiting for this worker run at the next pass (`guild-hall watch` sees the
    /// package appear). `guild-hall workers --available` lists the bundled packages.
    Add {
        /// The bundled package to install (see `guild-hall workers --available`).
        #[arg(value_name = "NAME")]
        name: String,
        /// Into the home's workers/ ($GUILD_HALL_HOME/workers/, or --home DIR's), for every
        /// project of this home, instead of the project's .lore/workers/.
        #[arg(long)]
        user: bool,
        /// Print what was written as JSON.
        #[arg(long)]
        json: bool,
    },
}

pub fn run(cli: &Cli, args: &WorkersArgs) -> Result<()> {
    match &args.cmd {
        Some(WorkersCmd::Add { name, user, json }) => add(cli, name, *user, *json),
        None if args.available => available(cli, args.json),
        None => show::workers(&Env::load(cli)?, args.json),
    }
}

/// The directory the command is about (`-C`, else the current one).
fn dir(cli: &Cli) -> Result<std::path::PathBuf> {
    match cli.project()? {
        Some(d) => Ok(d),
        None => std::env::current_dir().context("reading the current directory"),
    }
}

fn add(cli: &Cli, name: &str, user: bool, json: bool) -> Result<()> {
    let home = Home::resolve(cli.home.as_deref())?;
    let (target, project) = if user {
        (Target::Home, None)
    } else {
        let dir = dir(cli)?;
        match Project::open_if_any(&dir)? {
            Some(project) => {
                guild_hall::ops::ensure_set_up(&project)?;
                (Target::Project, Some(project))
            }
            None => bail!(
                "{} is not inside a git repository: `workers add {name}` writes into a project's .lore/workers/; run it inside one, or with --user to install into the home's workers/ ({})",
                dir.display(),
                home.workers_dir().display()
            ),
        }
    };
    let added = workers::add(&home, project.as_ref(), name, target)?;
    if json {
        say_json!("{}", serde_json::to_string_pretty(&added)?);
    } else {
        say!("added worker {} in {} ({})", added.name, added.dir.display(), added.files.join(", "));
    }
    Ok(())
}

fn available(cli: &Cli, json: bool) -> Result<()> {
    let home = Home::resolve(cli.home.as_deref())?;
    // Outside a repository only the home's packages count as installed; inside one, a project
    // that cannot be opened (a bad .lore/guild-hall.yaml) is said, not taken for none.
    let project = Project::open_if_any(&dir(cli)?)?;
    let list = workers::available(&home, project.as_ref());
    if json {
        say_json!("{}", serde_json::to_string_pretty(&list)?);
        return Ok(());
    }
    let mut table = Table::new(["NAME", "CAPABILITIES", "INSTALLED", "DESCRIPTION"]);
    for a in &list {
        let installed = match (&a.installed, &a.installed_at) {
            (Some(guild_hall::worker::Source::Project), _) => "yes (project)".to_string(),
            (Some(guild_hall::worker::Source::Home), _) => "yes (home)".to_string(),
            _ => "no".to_string(),
        };
        table.row([line(&a.name).into_owned(), a.capabilities.join(","), installed, line(&a.description).into_owned()]);
    }
    table.print();
    say!("\ninstall one with `guild-hall workers add NAME` (into .lore/workers/; --user for the home's)");
    Ok(())
}
