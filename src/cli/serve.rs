//! `guild-hall serve`: the web face (the library's `web`) beside a reconciler run as `watch`
//! runs it. Prints the URL to open first, on stdout; the log goes to stderr.

use anyhow::{Context, Result};
use clap::Args;

use super::out::say;
use super::Cli;
use guild_hall::config::Home;

/// `guild-hall serve [--listen ADDR | --socket PATH]`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The loopback address to serve on, e.g. 127.0.0.1:7878 (default: 127.0.0.1 on a free
    /// port). Only loopback addresses are taken.
    #[arg(long, value_name = "ADDR", conflicts_with = "socket")]
    pub listen: Option<String>,
    /// Serve on this Unix socket instead (mode 0600), for a proxy in front.
    #[arg(long, value_name = "PATH")]
    pub socket: Option<std::path::PathBuf>,
    /// Poll the filesystem instead of using the native watcher (network filesystems).
    #[arg(long)]
    pub poll: bool,
}

pub fn run(cli: &Cli, args: &ServeArgs) -> Result<()> {
    let home = Home::resolve(cli.home.as_deref())?;
    let watch = guild_hall::service::watch::WatchOptions {
        poll: args.poll,
        // A person reads each action as `reconcile` says it, on stderr.
        report: Some(super::show::watch_entry as fn(Option<&str>, &guild_hall::reconcile::Entry)),
        ..Default::default()
    };
    let opts = guild_hall::web::Options { listen: args.listen.clone(), socket: args.socket.clone(), watch };
    // As `board`: the projects -C names, else the current directory's.
    let dirs = match cli.dirs.as_slice() {
        [] => vec![std::env::current_dir().context("reading the current directory")?],
        named => named.to_vec(),
    };
    guild_hall::web::serve(&home, &dirs, &opts, |url| say!("{url}"))
}
