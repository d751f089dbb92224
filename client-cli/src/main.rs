//! `rein`: the command-line client of the rein daemon.
//!
//! Each subcommand is one variant of [`Command`] and one arm of [`dispatch`].

use clap::{Args, CommandFactory, Parser, Subcommand};
use clap_complete::Shell;
use rein_cli::ahead::Ahead;
use rein_cli::client::{Client, ClientError};
use rein_cli::commands::batch::BatchArgs;
use rein_cli::commands::run::RunArgs;
use rein_cli::commands::session::{self as session_cmd, QueueKind, Report};
use rein_cli::commands::{self, exit};
use rein_cli::resolve;
use rein_cli::session::{ApproveArg, SessionRequest, Target};
use rein_protocol::method::ExportFormat;
use rein_protocol::paths;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// rein: a coding agent that lives in a daemon. Talk to it from anywhere.
///
/// Without a command, starts an interactive session in the current directory.
///
/// Global options (`--socket`) go before or after the command; the session options below
/// apply only without a command.
#[derive(Debug, Parser)]
#[command(name = "rein", version, about)]
struct Cli {
    /// Daemon socket (default: $REIN_SOCKET, else $REIN_HOME/run/reind.sock).
    #[arg(long, global = true, value_name = "PATH")]
    socket: Option<PathBuf>,
    #[command(flatten)]
    start: SessionOptions,
    #[command(subcommand)]
    command: Option<Command>,
}

/// Options of the interactive commands.
#[derive(Debug, Clone, Args)]
struct SessionOptions {
    /// The model, as PROVIDER/MODEL.
    #[arg(long, value_name = "PROVIDER/MODEL")]
    model: Option<String>,
    /// The approval policy for tool calls.
    #[arg(long, value_enum, value_name = "POLICY")]
    approve: Option<ApproveArg>,
    /// The project directory (default: the current directory).
    #[arg(long, value_name = "DIR")]
    cwd: Option<PathBuf>,
}

impl SessionOptions {
    /// Whether any option was given.
    fn is_set(&self) -> bool {
        self.model.is_some() || self.approve.is_some() || self.cwd.is_some()
    }
}

/// Export formats on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum FormatArg {
    /// A readable Markdown transcript.
    Md,
    /// One JSON object per line.
    Jsonl,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run one prompt and exit (for scripts and CI).
    Run(RunArgs),
    /// Run a file of tasks, each in a fresh workspace, with per-task outputs and a summary
    /// (`rein batch merge` combines shards); see docs/batch.md.
    Batch(BatchArgs),
    /// Attach to a session interactively (default: the most recent one of the directory).
    Attach {
        /// The session (an id or a unique id prefix).
        session: Option<String>,
        #[command(flatten)]
        options: SessionOptions,
    },
    /// List the sessions of the current directory.
    Sessions {
        /// List the sessions of every directory.
        #[arg(long)]
        all: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show a session's entries as a tree (the ids for branch and label).
    Tree {
        /// The session.
        session: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Move a session's active leaf to an earlier entry.
    Branch {
        /// The session.
        session: String,
        /// The entry that becomes the leaf.
        entry: String,
        /// Summarize the abandoned path into the new branch.
        #[arg(long)]
        summarize: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Summarize a session's older context.
    Compact {
        /// The session.
        session: String,
        /// What the summary should focus on.
        #[arg(long, value_name = "TEXT")]
        instructions: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Steer a session's running run (starts a run when idle).
    Steer {
        /// The session.
        session: String,
        /// The message.
        text: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Queue a follow-up prompt that runs after the current run.
    FollowUp {
        /// The session.
        session: String,
        /// The message.
        text: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Cancel a session's run.
    Cancel {
        /// The session.
        session: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Export a session's conversation.
    Export {
        /// The session.
        session: String,
        /// The format.
        #[arg(long, value_enum, default_value = "md")]
        format: FormatArg,
        /// Write to FILE instead of stdout.
        #[arg(short = 'o', long = "output", value_name = "FILE")]
        output: Option<PathBuf>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Restore the files a session's turn changed (default: the latest session of this
    /// directory, its latest turn not undone yet).
    Undo {
        /// The session (an id or a unique id prefix).
        session: Option<String>,
        /// Go back to before this checkpointed turn (the numbers `rein diff` shows).
        #[arg(long = "to", value_name = "TURN")]
        to: Option<u32>,
        /// Overwrite files that changed outside rein since the snapshot.
        #[arg(long)]
        force: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show the file changes of a session's latest run (or of one turn or run).
    Diff {
        /// The session (an id or a unique id prefix; default: the latest of this directory).
        session: Option<String>,
        /// One checkpointed turn.
        #[arg(long, value_name = "TURN", conflicts_with = "run")]
        turn: Option<u32>,
        /// One run.
        #[arg(long, value_name = "RUN_ID")]
        run: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Label an entry of a session.
    Label {
        /// The session.
        session: String,
        /// The entry.
        entry: String,
        /// The label (empty removes it).
        text: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Trust a project directory (its AGENTS.md, skills and settings are read), or revoke it.
    Trust {
        /// The directory (default: the current directory).
        dir: Option<PathBuf>,
        /// Revoke the trust instead.
        #[arg(long)]
        revoke: bool,
        /// Trust `/` or the home directory too (every project below it); refused without this.
        #[arg(long)]
        force: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Store an API key in REIN_HOME/auth.toml (read without echo, or from stdin).
    Login {
        /// The provider, e.g. anthropic (asked for when omitted on a terminal).
        provider: Option<String>,
    },
    /// Remove a stored API key (every stored key when no provider is named).
    Logout {
        /// The provider.
        provider: Option<String>,
    },
    /// Check everything a prompt needs; exit 0 only when it is all in order.
    Doctor {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// List the models of the configured and detected providers.
    Models {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Inspect the MCP servers.
    Mcp {
        #[command(subcommand)]
        action: McpAction,
    },
    /// Print a shell completion script.
    Completions {
        /// The shell.
        shell: Shell,
    },
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
enum McpAction {
    /// List the MCP servers, their state and tools.
    List {
        /// Also list this loaded session's own servers.
        #[arg(long)]
        session: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
enum DaemonAction {
    /// Start the daemon in the background (no-op when it runs).
    Start,
    /// Shut the daemon down gracefully.
    Stop,
    /// Stop the daemon and start it again with this shell's environment.
    Restart,
    /// Show whether the daemon runs, and its details.
    Status {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // Before the runtime and the parsing, which take a while: a daemon `rein run` has to start
    // starts meanwhile.
    let ahead = Ahead::connect(args.get(1..).unwrap_or_default());
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("rein: cannot start the async runtime: {error}");
            return ExitCode::from(exit::FAILURE);
        }
    };
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(error) => {
            let _ = error.print();
            return ExitCode::from(if error.use_stderr() { exit::USAGE } else { exit::OK });
        }
    };
    if cli.command.is_some() && cli.start.is_set() {
        eprintln!(
            "rein: --model, --approve and --cwd before a command only apply to the \
             interactive session; put them after the command (`rein attach --model ...`)"
        );
        return ExitCode::from(exit::USAGE);
    }
    if let Some(Command::Completions { shell }) = &cli.command {
        clap_complete::generate(*shell, &mut Cli::command(), "rein", &mut std::io::stdout());
        return ExitCode::from(exit::OK);
    }
    let socket = match cli.socket.clone().map(Ok).unwrap_or_else(paths::default_socket) {
        Ok(socket) => socket,
        Err(error) => {
            eprintln!("rein: {error}");
            return ExitCode::from(exit::FAILURE);
        }
    };
    let ahead = {
        let _entered = runtime.enter();
        ahead.and_then(|ahead| ahead.into_client_for(&socket))
    };
    let result = runtime.block_on(dispatch(&socket, cli, ahead));
    // A blocking task still waiting (a daemon start that lost a race) must not keep `rein`
    // from exiting.
    runtime.shutdown_timeout(std::time::Duration::from_millis(500));
    match result {
        Ok(code) => ExitCode::from(code),
        Err(error) => {
            let hint = commands::daemon::version_hint(&error);
            eprintln!("rein: {}", hint.unwrap_or_else(|| error.to_string()));
            ExitCode::from(exit::FAILURE)
        }
    }
}

/// Runs the command; `ahead` is the connection made before parsing, if any (see
/// [`Ahead`]).
async fn dispatch(socket: &Path, cli: Cli, ahead: Option<Client>) -> Result<u8, ClientError> {
    let Some(command) = cli.command else {
        return attach(socket, Target::New, cli.start).await;
    };
    let client = || Client::connect_or_start(socket);
    match command {
        Command::Run(args) => commands::run::run(socket, args, ahead).await,
        Command::Batch(args) => commands::batch::run(socket, args).await,
        Command::Attach { session, options } => {
            let target = session.map(Target::Named).unwrap_or(Target::Latest);
            attach(socket, target, options).await
        }
        Command::Sessions { all, json } => {
            let cwd = if all { None } else { Some(current_dir()?) };
            report(session_cmd::sessions(&mut client().await?, cwd.as_deref()).await, json)
        }
        Command::Tree { session, json } => {
            report(session_cmd::tree(&mut client().await?, &session).await, json)
        }
        Command::Branch { session, entry, summarize, json } => {
            let client = &mut client().await?;
            report(session_cmd::branch(client, &session, &entry, summarize).await, json)
        }
        Command::Compact { session, instructions, json } => {
            let client = &mut client().await?;
            report(session_cmd::compact(client, &session, instructions).await, json)
        }
        Command::Steer { session, text, json } => {
            let client = &mut client().await?;
            report(session_cmd::queue(client, &session, QueueKind::Steer, &text).await, json)
        }
        Command::FollowUp { session, text, json } => {
            let kind = QueueKind::FollowUp;
            report(session_cmd::queue(&mut client().await?, &session, kind, &text).await, json)
        }
        Command::Cancel { session, json } => {
            report(session_cmd::cancel(&mut client().await?, &session).await, json)
        }
        Command::Export { session, format, output, json } => {
            let format = match format {
                FormatArg::Md => ExportFormat::Markdown,
                FormatArg::Jsonl => ExportFormat::Jsonl,
            };
            let result = session_cmd::export(&mut client().await?, &session, format).await;
            match (result, output) {
                (Ok(exported), Some(file)) => {
                    std::fs::write(&file, &exported.text)?;
                    if json {
                        println!("{}", serde_json::json!({"path": file.display().to_string()}));
                    } else {
                        eprintln!("exported to {}", file.display());
                    }
                    Ok(exit::OK)
                }
                (result, _) => report(result, json),
            }
        }
        Command::Undo { session, to, force, json } => {
            let cwd = current_dir()?;
            let client = &mut client().await?;
            // Named, so every attached client sees who undid.
            client.initialize(false).await?;
            let result =
                commands::checkpoints::undo(client, session.as_deref(), &cwd, to, force).await;
            report(result, json)
        }
        Command::Diff { session, turn, run, json } => {
            let cwd = current_dir()?;
            let client = &mut client().await?;
            let result =
                commands::checkpoints::diff(client, session.as_deref(), &cwd, turn, run).await;
            report(result, json)
        }
        Command::Label { session, entry, text, json } => {
            report(session_cmd::label(&mut client().await?, &session, &entry, &text).await, json)
        }
        Command::Trust { dir, revoke, force, json } => {
            let dir = match resolve::absolute_dir(dir.as_deref()) {
                Ok(dir) => dir,
                Err(error) => {
                    eprintln!("rein: not a directory I can use: {error}");
                    return Ok(exit::USAGE);
                }
            };
            report(session_cmd::trust(&mut client().await?, &dir, revoke, force).await, json)
        }
        Command::Models { json } => report(session_cmd::models(&mut client().await?).await, json),
        Command::Login { provider } => commands::login::login(socket, provider).await,
        Command::Logout { provider } => commands::login::logout(socket, provider).await,
        Command::Doctor { json } => commands::doctor::run(socket, json).await,
        Command::Mcp { action: McpAction::List { session, json } } => {
            report(session_cmd::mcp_list(&mut client().await?, session).await, json)
        }
        // Handled before the runtime starts; nothing to do here.
        Command::Completions { .. } => Ok(exit::OK),
        Command::Daemon { action: DaemonAction::Start } => commands::daemon::start(socket).await,
        Command::Daemon { action: DaemonAction::Stop } => commands::daemon::stop(socket).await,
        Command::Daemon { action: DaemonAction::Restart } => {
            commands::daemon::restart(socket).await
        }
        Command::Daemon { action: DaemonAction::Status { json } } => {
            commands::daemon::status(socket, json).await
        }
        Command::Rpc { method, params } => {
            commands::rpc::run(socket, &method, params.as_deref()).await
        }
        Command::Stdio => commands::stdio::run(socket).await,
        Command::Acp => rein_cli::acp::run(socket).await,
    }
}

async fn attach(socket: &Path, target: Target, options: SessionOptions) -> Result<u8, ClientError> {
    let cwd = match resolve::absolute_dir(options.cwd.as_deref()) {
        Ok(cwd) => cwd,
        Err(error) => {
            eprintln!("rein: cannot use that project directory: {error}");
            return Ok(exit::USAGE);
        }
    };
    let request = SessionRequest {
        target,
        cwd,
        model: options.model,
        approval: options.approve.map(Into::into),
        sandbox: None,
    };
    rein_cli::tui::run(socket, request).await
}

fn current_dir() -> Result<PathBuf, ClientError> {
    Ok(resolve::absolute_dir(None)?)
}

/// Prints a command's report; a daemon error is printed and exits 1.
fn report(result: Result<Report, ClientError>, json: bool) -> Result<u8, ClientError> {
    match result {
        Ok(report) => {
            report.print(json);
            Ok(exit::OK)
        }
        Err(ClientError::Rpc(failure)) if json => {
            let error = serde_json::json!({
                "error": {"code": failure.code, "message": failure.message, "data": failure.data}
            });
            println!("{error}");
            eprintln!("rein: {failure}");
            Ok(exit::FAILURE)
        }
        Err(error) => Err(error),
    }
}
