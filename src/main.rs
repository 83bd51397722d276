//! The `guild-hall` binary: the command-line front end ([`cli`]: clap definitions, thin
//! handlers and output) over the library, which knows nothing of it.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
