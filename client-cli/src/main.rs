//! `rein`: the command-line client of the rein daemon.

use clap::{Parser, Subcommand};
use rein_cli::client::ClientError;
use rein_cli::commands::{self, exit};
use rein_protocol::paths;
use std::path::PathBuf;
use std::process::ExitCode;

/// rein: a coding agent that lives in a daemon. Talk to it from anywhere.
#[derive(Debug, Parser)]
#[command(name = "rein", version, about)]
struct Cli {
    /// Daemon socket (default: $REIN_SOCKET, else $REIN_HOME/run/reind.sock).
    #[arg(long, global = true)]
    socket: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Start, stop or inspect the daemon.
    Daemon {
        #[command(subcommand)]
        action: DaemonAction,
    },
    /// Send one raw JSON-RPC call and print the JSON result.
    Rpc {
        /// The method, e.g. daemon/info.
        method: String,
        /// The params as a JSON object.
        params: Option<String>,
    },
    /// Bridge stdin/stdout to the daemon socket, one JSON message per line.
    Stdio,
    /// Serve the Agent Client Protocol on stdin/stdout, for editors that host ACP agents.
    Acp,
}

#[derive(Debug, Subcommand)]
enum DaemonAction {
    /// Start the daemon in the background (no-op when it runs).
    Start,
    /// Shut the daemon down gracefully.
    Stop,
    /// Show whether the daemon runs, and its details.
    Status {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            let _ = error.print();
            return ExitCode::from(if error.use_stderr() { exit::USAGE } else { exit::OK });
        }
    };
    let socket = match cli.socket.clone().map(Ok).unwrap_or_else(paths::default_socket) {
        Ok(socket) => socket,
        Err(error) => {
            eprintln!("rein: {error}");
            return ExitCode::from(exit::FAILURE);
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("rein: cannot start the async runtime: {error}");
            return ExitCode::from(exit::FAILURE);
        }
    };
    let result: Result<u8, ClientError> = runtime.block_on(async {
        match cli.command {
            Command::Daemon { action: DaemonAction::Start } => {
                commands::daemon::start(&socket).await
            }
            Command::Daemon { action: DaemonAction::Stop } => commands::daemon::stop(&socket).await,
            Command::Daemon { action: DaemonAction::Status { json } } => {
                commands::daemon::status(&socket, json).await
            }
            Command::Rpc { method, params } => {
                commands::rpc::run(&socket, &method, params.as_deref()).await
            }
            Command::Stdio => commands::stdio::run(&socket).await,
            Command::Acp => rein_cli::acp::run(&socket).await,
        }
    });
    match result {
        Ok(code) => ExitCode::from(code),
        Err(error) => {
            eprintln!("rein: {error}");
            ExitCode::from(exit::FAILURE)
        }
    }
}
