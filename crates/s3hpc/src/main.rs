//! The `s3hpc` command: a thin dispatcher over the library crates.
#![deny(clippy::undocumented_unsafe_blocks)]

use clap::{Parser, Subcommand};

mod admin;
mod adminapi;
mod bench;
mod config;
mod credentials;
mod keystore;
mod logfmt;
mod mount;
mod serve;
mod user;

#[derive(Parser)]
#[command(name = "s3hpc", version, about = "S3 for HPC file systems: gateway, benchmark and mount")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

// Parsed once per process: the size of the largest variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
enum Command {
    /// Run the S3 gateway over a directory (default ./data on 127.0.0.1:9000).
    Serve(serve::ServeArgs),
    /// Measure S3 stores, the embedded path and raw POSIX side by side.
    Bench(bench::BenchArgs),
    /// Add, list, remove or rotate the accounts of a `serve --config` users file.
    User(user::UserArgs),
    /// Create, list or revoke your own S3 access keys through the gateway's Unix socket.
    Credentials(credentials::CredentialsArgs),
    /// Mount a bucket of any S3 store (HTTP, or the s3hpc binary protocol) as a directory (FUSE).
    Mount(mount::MountArgs),
}

fn main() -> anyhow::Result<()> {
    use clap::CommandFactory;
    let argv = config::with_serve_table(Cli::command(), std::env::args_os().collect())?;
    let cli = Cli::parse_from(argv);
    match cli.command {
        Command::Serve(args) => serve::run(args),
        Command::Bench(args) => bench::run(args),
        Command::User(args) => user::run(args),
        Command::Mount(args) => mount::run(args),
        Command::Credentials(args) => credentials::run(args),
    }
}
