//! `reind`: the rein daemon's entry point.

use anyhow::Context;
use clap::Parser;
use rein_ai::registry::Registry;
use rein_coding::process_groups;
use rein_daemon::hub::Hub;
use rein_daemon::keys::KeyStore;
use rein_daemon::server::limits::ConnectionLimits;
use rein_daemon::server::listener::{self, BindError};
use rein_daemon::{
    Daemon, DaemonOptions, config, home, home_lock, housekeeping, logging, methods, secrets, server,
};
use rein_launch::{EXIT_ALREADY_RUNNING, LaunchArgs, Started};
use rein_protocol::codec::DEFAULT_MAX_LINE_BYTES;
use rein_protocol::paths;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

mod allocator;
mod startup;

/// Logged once the walk of `REIN_HOME` that takes group and other permissions away is done:
/// from then on the daemon changes no permission it did not create.
const HOME_PRIVATE: &str = "REIN_HOME is private";

/// Most client connections at once, unless `--max-connections` says otherwise.
const DEFAULT_MAX_CONNECTIONS: u64 = 4096;

/// The rein daemon: owns sessions and serves them over a local socket.
#[derive(Debug, PartialEq, Parser)]
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
    #[arg(long, default_value_t = DEFAULT_MAX_CONNECTIONS)]
    max_connections: u64,
    /// Requests of one connection handled at once; past it the connection is not read until
    /// answers go out.
    #[arg(long, default_value_t = ConnectionLimits::default().max_in_flight)]
    max_in_flight: usize,
    /// Seconds a line may take from its first byte to its newline.
    #[arg(long, default_value_t = ConnectionLimits::default().line_deadline.as_secs())]
    line_deadline_secs: u64,
    /// Seconds a connection may stay silent in the middle of a line.
    #[arg(long, default_value_t = ConnectionLimits::default().partial_line_idle.as_secs())]
    partial_line_idle_secs: u64,
    /// Bytes of unfinished input all connections together may hold.
    #[arg(long, default_value_t = ConnectionLimits::default().max_buffered_input)]
    max_buffered_input: usize,
    /// Set by whoever starts the daemon in the background (`rein`, or `reind` without
    /// `--foreground`): log to the file only. See `rein_launch`.
    #[arg(long, hide = true)]
    detached: bool,
    /// Set by whoever starts the daemon in the background: a pipe descriptor to write one
    /// byte to once the socket listens (see `rein_launch`).
    #[arg(long, hide = true)]
    ready_fd: Option<i32>,
    /// Set by a starter that gave a socket as `--ready-fd`: after the ready byte, serve it as
    /// the first connection (see `rein_launch`).
    #[arg(long, hide = true, requires = "ready_fd")]
    serve_ready_fd: bool,
    /// Only check the configuration file: print the file used and exit 0, or the mistake
    /// (file, line, key) and exit 1. Used by `rein doctor`.
    #[arg(long)]
    check_config: bool,
}

impl Args {
    /// What the parser makes of a starter's launch arguments ([`LaunchArgs`]) and nothing
    /// else: how `rein` starts the daemon, read without building the parser's command tree.
    fn launched(launch: LaunchArgs) -> Self {
        let limits = ConnectionLimits::default();
        Self {
            socket: Some(launch.socket),
            foreground: true,
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_in_flight: limits.max_in_flight,
            line_deadline_secs: limits.line_deadline.as_secs(),
            partial_line_idle_secs: limits.partial_line_idle.as_secs(),
            max_buffered_input: limits.max_buffered_input,
            detached: true,
            ready_fd: Some(launch.ready_fd),
            serve_ready_fd: launch.serve_ready_fd,
            check_config: false,
        }
    }
}

fn main() -> ExitCode {
    let raw: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if raw.get(1).is_some_and(|flag| flag == process_groups::EXEC_FLAG) {
        // A tool command being launched: become it (only returns on failure).
        let error = process_groups::exec_with_parent_death(&raw[2..]);
        eprintln!("reind: cannot start the command: {error}");
        return ExitCode::from(127);
    }
    let args = match raw.get(1..).and_then(LaunchArgs::recognize) {
        Some(launch) => Args::launched(launch),
        None => Args::parse(),
    };
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
    if args.check_config {
        return Ok(check_config(&home));
    }
    let socket = match &args.socket {
        Some(socket) => socket.clone(),
        None => paths::default_socket()?,
    };
    if !args.foreground {
        return spawn_background(&args, &socket);
    }
    let (config, config_path) = config::load(&home)?;
    // Before any thread starts: may replace this process with one whose environment holds no
    // provider key (see `secrets`).
    let key_variables = Registry::new(config.providers_config())?.key_variables();
    let secrets = secrets::isolate(&key_variables).context("cannot protect the provider keys")?;
    // From here on, threads may start.
    let lookup = secrets.clone();
    // Keys come from the environment the daemon started with, then from `auth.toml`.
    let keys = KeyStore::with_environment(&home, Arc::new(move |name: &str| lookup.get(name)));
    let helper = startup::StartHelper::begin(&home, config.providers_config(), keys.clone());
    if let Some(run_dir) = socket.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        home::check_run_dir(run_dir)?;
    }
    home::create_private_dir(&home)?;
    let home_was_open = home::close_home(&home)?;
    // Before anything else is written under the home (the log included).
    let home_held = match home_lock::acquire(&home, &socket) {
        Ok(lock) => lock,
        Err(error @ home_lock::HomeLockError::Taken { .. }) => {
            eprintln!("reind: {error}");
            return Ok(ExitCode::from(EXIT_ALREADY_RUNNING));
        }
        Err(error) => return Err(error.into()),
    };
    let log_guard = logging::init(&home.join("logs"), !args.detached)
        .context("cannot open the log directory")?;
    helper.log_opened();
    raise_open_file_limit();
    if home_was_open {
        tracing::warn!(path = %home.display(), "was readable by others; made private");
    }
    let signals = ShutdownSignals::install().context("cannot install signal handlers")?;
    // Listening before the async runtime and the rest are made: a starter's connection and
    // first request wait in the socket's backlog meanwhile, and are read once the runtime
    // serves, instead of the starter waking up, connecting and writing only after all that.
    let bound = match listener::bind(&socket) {
        Ok(bound) => bound,
        Err(error @ BindError::AlreadyRunning { .. }) => {
            eprintln!("reind: {error}");
            return Ok(ExitCode::from(EXIT_ALREADY_RUNNING));
        }
        Err(error) => return Err(error.into()),
    };
    let first_connection = tell_the_starter(&args);
    tracing::debug!(keys = ?secrets, "provider keys held in memory only");
    let startup::Started { runtime, registry, local_server } = helper.started()?;
    let entered = runtime.enter();
    start_background_care(home.clone());
    reap_tool_groups(&home);
    let options = DaemonOptions {
        home,
        socket,
        max_line_bytes: args.max_line_bytes,
        max_connections: args.max_connections,
        limits: ConnectionLimits {
            max_in_flight: args.max_in_flight.max(1),
            line_deadline: Duration::from_secs(args.line_deadline_secs.max(1)),
            partial_line_idle: Duration::from_secs(args.partial_line_idle_secs.max(1)),
            max_buffered_input: args.max_buffered_input,
            ..ConnectionLimits::default()
        },
    };
    drop(entered);
    let socket_lock = runtime.block_on(async move {
        let (events, _) = tokio::sync::broadcast::channel(256);
        let mut env = config::coding_environment(&options.home, &config, registry.clone())?;
        env.defaults.config_file = config_path.clone();
        config::start_mcp_servers(&options.home, &config, &mut env, events.clone());
        let env = Arc::new(env);
        let watch = rein_daemon::config_reload::ConfigWatch::new(
            &options.home,
            config_path.clone(),
            keys.clone(),
            local_server.clone(),
        );
        let hub = Arc::new(Hub::new(env, config.sessions.clone(), events.clone()));
        let daemon = Daemon::new(options, config, registry, hub.clone(), events)
            .with_first_run(keys, local_server);
        let daemon = Arc::new(daemon);
        daemon.watch_config(watch);
        hub.spawn_idle_reaper(daemon.shutdown.clone());
        housekeeping::spawn(daemon.clone());
        match &config_path {
            Some(path) => tracing::info!(config = %path.display(), "configuration loaded"),
            None => tracing::info!("no configuration file; using defaults"),
        }
        let methods = methods::build()?;
        let stopping = daemon.clone();
        signals
            .forward_to(move || stopping.begin_shutdown())
            .context("cannot install signal handlers")?;
        let socket = bound
            .accepting(first_connection)
            .context("cannot accept connections on the socket")?;
        tracing::info!(socket = %socket.path().display(), pid = std::process::id(), "reind serving");
        let socket_lock = server::serve(daemon, socket, methods).await;
        tracing::info!("reind stopped");
        anyhow::Ok(socket_lock)
    })?;
    // The end, in the order clients rely on: tasks still running on the runtime's threads are
    // waited for and the log is flushed, then the home is released, then the socket's lock,
    // whose release clients (`rein daemon stop`, a restart) take for "gone": a daemon started
    // after it finds both free.
    drop(runtime);
    drop(log_guard);
    drop(home_held);
    drop(socket_lock);
    Ok(ExitCode::SUCCESS)
}

/// Tells whoever started the daemon in the background that its socket listens (`rein_launch`):
/// a byte on the `--ready-fd` pipe, or on the socket given with `--serve-ready-fd`, which is
/// then returned to be served as the first connection.
fn tell_the_starter(args: &Args) -> Option<std::os::unix::net::UnixStream> {
    let fd = args.ready_fd?;
    let told = if args.serve_ready_fd {
        rein_launch::ready_connection(fd).map(Some)
    } else {
        rein_launch::notify_listening(fd).map(|()| None)
    };
    told.unwrap_or_else(|error| {
        tracing::warn!(%error, fd, "cannot tell the launcher that the socket listens");
        None
    })
}

/// Starts, [`housekeeping::AFTER_START`] after the socket listens and on a thread of its own,
/// what the daemon needs soon but not for its first requests:
/// - the allocator's purging thread, not needed before the first session closes;
/// - the walk that makes everything under `REIN_HOME` the user's alone, the files made before
///   this start too. The home itself was closed to others before the daemon wrote anything, so
///   nobody else can reach what the walk has not yet visited. It grows with the number of
///   session files: run beside the first request, it made a cold `rein run` about 3 ms slower
///   (at the median, on 2 cores) on a home of 1,200 sessions.
///
/// Both threads are made after the delay too (a runtime timer waits, not a thread): on two
/// cores, making them while the first client connects competed with its first requests.
///
/// The thread is not the runtime's: shutting down does not wait for it (a walk cut short by
/// an exit, or never started, is done again on the next start). Needs an entered runtime.
fn start_background_care(home: std::path::PathBuf) {
    tokio::spawn(async move {
        tokio::time::sleep(housekeeping::AFTER_START).await;
        let spawned = std::thread::Builder::new().name("home-walk".into()).spawn(move || {
            allocator::start_purging();
            match home::make_private(&home) {
                Ok(changed) => {
                    for path in &changed {
                        tracing::warn!(path = %path.display(), "was readable by others; made private");
                    }
                    tracing::info!(changed = changed.len(), "{HOME_PRIVATE}");
                }
                Err(error) => tracing::error!(%error, "cannot make REIN_HOME private"),
            }
        });
        if let Err(error) = spawned {
            tracing::warn!(%error, "no thread for the allocator's purging and the home's walk");
        }
    });
}

/// Raises the open-file soft limit to the hard limit: every connection, session file and
/// tool pipe is a descriptor, and the usual soft limit of 1,024 would otherwise cap the
/// daemon long before its own limits do.
fn raise_open_file_limit() {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    match getrlimit(Resource::RLIMIT_NOFILE) {
        Ok((soft, hard)) if soft < hard => match setrlimit(Resource::RLIMIT_NOFILE, hard, hard) {
            Ok(()) => tracing::info!(from = soft, to = hard, "raised the open-file limit"),
            Err(error) => tracing::warn!(%error, soft, hard, "cannot raise the open-file limit"),
        },
        Ok(_) => {}
        Err(error) => tracing::warn!(%error, "cannot read the open-file limit"),
    }
}

/// Kills what a crashed daemon's tools left running, then records this daemon's own tool
/// groups under `run/` (see `rein_coding::process_groups`).
fn reap_tool_groups(home: &std::path::Path) {
    let run_dir = home.join("run");
    let killed = rein_coding::process_groups::reap_leftovers(&run_dir);
    if killed > 0 {
        tracing::info!(killed, "cleaned up tool processes of a previous daemon");
    }
    if let Err(error) = rein_coding::process_groups::init(&run_dir) {
        tracing::warn!(%error, "cannot record tool process groups");
    }
    // `/proc/self/exe` still reaches this binary after it was replaced on disk (an upgrade
    // while the daemon runs); the child resolves it to the same executable.
    let own = std::path::Path::new("/proc/self/exe");
    match if own.exists() { Ok(own.to_path_buf()) } else { std::env::current_exe() } {
        Ok(binary) => process_groups::set_launcher(binary),
        Err(error) => tracing::warn!(%error, "tool commands will not die with the daemon"),
    }
}

/// `--check-config`: parses the configuration file and its provider tables like a start would.
fn check_config(home: &std::path::Path) -> ExitCode {
    let checked = config::load(home).map_err(anyhow::Error::from).and_then(|(config, path)| {
        rein_ai::Registry::new(config.providers_config())?;
        Ok(path)
    });
    match checked {
        Ok(Some(path)) => println!("configuration ok: {}", path.display()),
        Ok(None) => println!("no configuration file: defaults apply"),
        Err(error) => {
            eprintln!("reind: {error:#}");
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}

/// SIGTERM and SIGINT shut down gracefully, like `daemon/shutdown`. Their handler is installed
/// before the socket listens, so a signal can never find the daemon without one: until the
/// async runtime waits for the signals, the handler only raises a flag, read when it starts to.
struct ShutdownSignals {
    early: Arc<AtomicBool>,
}

impl ShutdownSignals {
    /// Installs the handler that raises the flag (needs no runtime).
    fn install() -> std::io::Result<Self> {
        let early = Arc::new(AtomicBool::new(false));
        for signal in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
            signal_hook::flag::register(signal, early.clone())?;
        }
        Ok(Self { early })
    }

    /// Calls `shut_down` on the first of the signals, also one that came before this call.
    /// Needs an entered runtime.
    fn forward_to(self, shut_down: impl FnOnce() + Send + 'static) -> std::io::Result<()> {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = signal(SignalKind::terminate())?;
        let mut int = signal(SignalKind::interrupt())?;
        tokio::spawn(async move {
            // Read after the runtime's handlers exist: a signal is seen by one or the other.
            if self.early.load(Ordering::SeqCst) {
                tracing::info!("SIGTERM or SIGINT while starting: shutting down");
            } else {
                tokio::select! {
                    _ = term.recv() => tracing::info!("SIGTERM: shutting down"),
                    _ = int.recv() => tracing::info!("SIGINT: shutting down"),
                }
            }
            shut_down();
        });
        Ok(())
    }
}

/// Without `--foreground`: start a detached copy of ourselves (the contract of
/// `rein_launch`, which `rein` uses too), wait until its socket listens, and exit.
fn spawn_background(args: &Args, socket: &std::path::Path) -> anyhow::Result<ExitCode> {
    if std::os::unix::net::UnixStream::connect(socket).is_ok() {
        eprintln!("reind: another reind is already serving {}", socket.display());
        return Ok(ExitCode::from(EXIT_ALREADY_RUNNING));
    }
    let exe = std::env::current_exe().context("cannot find the reind executable")?;
    let limits = [
        ("--max-line-bytes", args.max_line_bytes.to_string()),
        ("--max-connections", args.max_connections.to_string()),
        ("--max-in-flight", args.max_in_flight.to_string()),
        ("--line-deadline-secs", args.line_deadline_secs.to_string()),
        ("--partial-line-idle-secs", args.partial_line_idle_secs.to_string()),
        ("--max-buffered-input", args.max_buffered_input.to_string()),
    ];
    let extra: Vec<std::ffi::OsString> =
        limits.into_iter().flat_map(|(flag, value)| [flag.into(), value.into()]).collect();
    match rein_launch::start_detached(&exe, socket, &extra)? {
        Started::Listening { pid } => {
            println!("reind started (pid {pid}), serving {}", socket.display());
            Ok(ExitCode::SUCCESS)
        }
        Started::Exited { status, stderr } => {
            if !stderr.is_empty() {
                eprintln!("{stderr}");
            }
            let code = status.code().and_then(|c| u8::try_from(c).ok()).unwrap_or(1);
            Ok(ExitCode::from(code))
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn the_launch_contract_parses() {
        let args = Args::try_parse_from([
            "reind",
            rein_launch::FOREGROUND_FLAG,
            rein_launch::DETACHED_FLAG,
            rein_launch::SOCKET_FLAG,
            "/tmp/r.sock",
            rein_launch::READY_FD_FLAG,
            "7",
            "--max-connections",
            "9",
        ])
        .unwrap();
        assert!(args.foreground && args.detached);
        assert_eq!(args.socket, Some(PathBuf::from("/tmp/r.sock")));
        assert_eq!((args.ready_fd, args.max_connections), (Some(7), 9));
        assert!(!args.serve_ready_fd);
        let args = Args::try_parse_from([
            "reind",
            rein_launch::READY_FD_FLAG,
            "1",
            rein_launch::SERVE_READY_FD_FLAG,
        ])
        .unwrap();
        assert!(args.serve_ready_fd);
        // Serving the ready descriptor needs one.
        assert!(Args::try_parse_from(["reind", rein_launch::SERVE_READY_FD_FLAG]).is_err());
    }

    /// A starter's launch arguments read without the parser give what the parser gives.
    #[test]
    fn launch_arguments_read_without_the_parser_as_with_it() {
        for serve_ready_fd in [false, true] {
            let launch =
                LaunchArgs { socket: PathBuf::from("/tmp/r.sock"), ready_fd: 1, serve_ready_fd };
            let mut written = vec![std::ffi::OsString::from("reind")];
            written.extend(launch.to_args());
            let recognized = LaunchArgs::recognize(&written[1..]).unwrap();
            assert_eq!(Args::launched(recognized), Args::try_parse_from(&written).unwrap());
        }
    }

    /// A SIGTERM that comes after the socket listens but before the runtime waits for signals
    /// (the daemon's start) is not lost, and does not kill the process: it shuts down once the
    /// runtime runs.
    #[test]
    fn a_signal_during_the_start_shuts_down_once_serving() {
        let signals = ShutdownSignals::install().unwrap();
        signal_hook::low_level::raise(signal_hook::consts::SIGTERM).unwrap();
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let (told, shut_down) = tokio::sync::oneshot::channel();
        runtime.block_on(async move {
            signals.forward_to(move || told.send(()).unwrap_or_default()).unwrap();
            tokio::time::timeout(Duration::from_secs(10), shut_down).await.unwrap().unwrap();
        });
    }
}
