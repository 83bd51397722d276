//! The `guild-hall` binary: parse arguments and hand over to the library's CLI layer.

fn main() -> std::process::ExitCode {
    guild_hall::cli::main()
}
