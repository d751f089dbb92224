//! `reind`: the rein daemon's entry point.

use anyhow::Context;
use clap::Parser;
use rein_ai::registry::Registry;
use rein_daemon::hub::Hub;
use rein_daemon::server::listener::{self, BindError};
use rein_daemon::{Daemon, DaemonOptions, config, logging, methods, server};
use rein_protocol::codec::DEFAULT_MAX_LINE_BYTES;
use rein_protocol::paths;
use std::path::PathBuf;
use std::process::{ExitCode, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The rein daemon: owns sessions and serves them over a local socket.
#[derive(Debug, Parser)]
#[command(name = "reind", version, about)]
struct Args {
    /// Socket path (default: $REIN_SOCKET, else $REIN_HOME/run/reind.sock).
    #[arg(long)]
    socket: Option<PathBuf>,
    /// Stay in the foreground and log to stderr as well as the log file.
    #[arg(long)]
    foreground: bool,
    /// Longest accepted request line in bytes.
    #[arg(long, default_value_t = DEFAULT_MAX_LINE_BYTES)]
    max_line_bytes: usize,
    /// Most client connections at once.
    #[arg(long, default_value_t = 4096)]
    max_connections: u64,
    /// Set by the background launcher: log to the file only.
    #[arg(long, hide = true)]
    detached: bool,
}

/// Exit code when another daemon already serves the socket.
const EXIT_ALREADY_RUNNING: u8 = 3;

fn main() -> ExitCode {
    let args = Args::parse();
    match run(args) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("reind: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: Args) -> anyhow::Result<ExitCode> {
    let home = paths::rein_home()?;
    let socket = match &args.socket {
        Some(socket) => socket.clone(),
        None => paths::default_socket()?,
    };
    if !args.foreground {
        return spawn_background(&args, &socket);
    }
    let _guard = logging::init(&home.join("logs"), !args.detached)
        .context("cannot open the log directory")?;
    let (config, config_path) = config::load(&home)?;
    let registry = Arc::new(Registry::new(config.providers.clone())?);
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    let entered = runtime.enter();
    let signals = ShutdownSignals::install().context("cannot install signal handlers")?;
    let bound = match listener::bind(&socket) {
        Ok(bound) => bound,
        Err(error @ BindError::AlreadyRunning { .. }) => {
            eprintln!("reind: {error}");
            return Ok(ExitCode::from(EXIT_ALREADY_RUNNING));
        }
        Err(error) => return Err(error.into()),
    };
    let options = DaemonOptions {
        home,
        socket,
        max_line_bytes: args.max_line_bytes,
        max_connections: args.max_connections,
    };
    drop(entered);
    runtime.block_on(async move {
        let (events, _) = tokio::sync::broadcast::channel(256);
        let mut env = config::coding_environment(&options.home, &config, registry.clone())?;
        config::start_mcp_servers(&options.home, &config, &mut env, events.clone());
        let env = Arc::new(env);
        let hub = Arc::new(Hub::new(env, config.sessions.clone(), events.clone()));
        let daemon = Arc::new(Daemon::new(options, config, registry, hub.clone(), events));
        hub.spawn_idle_reaper(daemon.shutdown.clone());
        match &config_path {
            Some(path) => tracing::info!(config = %path.display(), "configuration loaded"),
            None => tracing::info!("no configuration file; using defaults"),
        }
        let methods = methods::build()?;
        tracing::info!(socket = %bound.path().display(), pid = std::process::id(), "reind serving");
        signals.forward_to(daemon.clone());
        server::serve(daemon, bound, methods).await;
        tracing::info!("reind stopped");
        anyhow::Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}

/// SIGTERM and SIGINT shut down gracefully, like `daemon/shutdown`. The handlers are installed
/// before the socket is bound, so a signal can never find the daemon without them.
struct ShutdownSignals {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
}

impl ShutdownSignals {
    fn install() -> std::io::Result<Self> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Self { term: signal(SignalKind::terminate())?, int: signal(SignalKind::interrupt())? })
    }

    fn forward_to(mut self, daemon: Arc<Daemon>) {
        tokio::spawn(async move {
            tokio::select! {
                _ = self.term.recv() => tracing::info!("SIGTERM: shutting down"),
                _ = self.int.recv() => tracing::info!("SIGINT: shutting down"),
            }
            daemon.begin_shutdown();
        });
    }
}

/// Without `--foreground`: start a detached copy of ourselves (own process group, no terminal,
/// output to the log), wait until its socket answers, and exit.
fn spawn_background(args: &Args, socket: &std::path::Path) -> anyhow::Result<ExitCode> {
    use std::os::unix::process::CommandExt;
    if std::os::unix::net::UnixStream::connect(socket).is_ok() {
        eprintln!("reind: another reind is already serving {}", socket.display());
        return Ok(ExitCode::from(EXIT_ALREADY_RUNNING));
    }
    let exe = std::env::current_exe().context("cannot find the reind executable")?;
    let mut child = std::process::Command::new(exe)
        .arg("--foreground")
        .arg("--detached")
        .arg("--socket")
        .arg(socket)
        .arg("--max-line-bytes")
        .arg(args.max_line_bytes.to_string())
        .arg("--max-connections")
        .arg(args.max_connections.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .context("cannot start the daemon process")?;
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if let Some(status) = child.try_wait().context("cannot watch the daemon process")? {
            let mut message = String::new();
            if let Some(mut stderr) = child.stderr.take() {
                use std::io::Read;
                let _ = stderr.read_to_string(&mut message);
            }
            eprint!("{message}");
            let code = status.code().and_then(|c| u8::try_from(c).ok()).unwrap_or(1);
            return Ok(ExitCode::from(code));
        }
        if std::os::unix::net::UnixStream::connect(socket).is_ok() {
            println!("reind started (pid {}), serving {}", child.id(), socket.display());
            return Ok(ExitCode::SUCCESS);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    anyhow::bail!("the daemon did not answer on {} within 10 s", socket.display())
}
