//! Starting `reind` in the background: the one definition of how a detached daemon is spawned
//! and how it tells whoever started it that its socket listens. Shared by the `rein` client,
//! which starts the daemon itself when nothing answers, and by `reind` run without
//! `--foreground`.
//!
//! The contract is the daemon's command line:
//!
//! ```text
//! reind --foreground --detached --socket PATH --ready-fd N [other reind flags]
//! ```
//!
//! started with stderr on a pipe, in a process group of its own (a terminal's Ctrl-C does not
//! reach it), and without the starter's provider keys in its environment: those come on its
//! stdin, a pipe named by `REIN_SECRETS_FD=0` ([`key_handover`]; stdin is `/dev/null` when
//! there are none). `--detached` makes it log to its log file only. `N` is
//! the write end of a pipe ([`ReadyPipe`]), given to the daemon alone as its stdout (so `N` is
//! 1): the daemon writes one byte there right after binding its socket and puts `/dev/null` in
//! its place ([`notify_listening`]), so no tool or server it starts later inherits it. If the
//! daemon dies first, the starter sees the end of the pipe instead, reaps the daemon and
//! reports its exit code and what it wrote to stderr. Exit code [`EXIT_ALREADY_RUNNING`] means
//! another daemon already serves the socket or uses the same home (a lost race between two
//! starters).
//!
//! The pipe is the daemon's stdout rather than a descriptor of its own because the standard
//! library sets up stdio between fork and exec without running any code of ours, so the daemon
//! is started by `posix_spawn`: the starter's memory is not copied (a `fork` would make every
//! page it writes afterwards a copy-on-write fault, on the cold start's path), and only that
//! one child gets the descriptor, even while other threads start daemons of their own.
//!
//! A starter on a tokio runtime that talks to the daemon at once (the `rein` client) may
//! give it one end of a socket pair instead of the pipe, with [`SERVE_READY_FD_FLAG`]
//! ([`spawn_connected_on_runtime`]): the ready byte (a newline, so an empty line) comes on that
//! connection, which the daemon then serves as if it had accepted it, and the starter's first
//! request, written as soon as the daemon is spawned, is read as soon as the daemon serves.
//!
//! The keys come on stdin for the same reason: the daemon gets them without a re-execution of
//! its own (3 to 5 ms of a cold start) and the starter still uses `posix_spawn`.
//!
//! It is a crate of its own, not part of `rein-protocol`, because it is process handling (it
//! spawns, waits and reaps, and needs `nix`), not a type that crosses the socket.

pub mod key_handover;

use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// `reind` flag: run the daemon in this process instead of starting a detached one.
pub const FOREGROUND_FLAG: &str = "--foreground";
/// `reind` flag: log to the log file only (nobody reads the daemon's stderr once it listens).
pub const DETACHED_FLAG: &str = "--detached";
/// `reind` flag: the socket path to serve.
pub const SOCKET_FLAG: &str = "--socket";
/// `reind` flag: the descriptor of the start-notification pipe's write end.
pub const READY_FD_FLAG: &str = "--ready-fd";
/// `reind` flag: the `--ready-fd` descriptor is a socket, the starter's first connection: the
/// daemon writes its ready line there and then serves it like a connection it accepted.
pub const SERVE_READY_FD_FLAG: &str = "--serve-ready-fd";

/// `reind` exit code when another daemon already serves the socket or uses the home.
pub const EXIT_ALREADY_RUNNING: u8 = 3;

/// The descriptor the start-notification pipe's write end has in the daemon (`--ready-fd`):
/// its stdout.
const DAEMON_READY_FD: RawFd = 1;

/// The descriptor the keys' pipe has in the daemon: its stdin.
const DAEMON_KEYS_FD: RawFd = 0;

/// How long a starter waits for the daemon's socket to listen.
pub const READY_TIMEOUT: Duration = Duration::from_secs(10);

/// What the starter learned from the start-notification pipe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Readiness {
    /// The daemon's socket listens.
    Listening,
    /// The daemon closed the pipe without saying so: it exited (or is exiting).
    Gone,
    /// Nothing came within the wait.
    TimedOut,
}

/// The starter's end of the start-notification pipe; its write end goes to the daemon.
#[derive(Debug)]
pub struct ReadyPipe {
    reader: std::io::PipeReader,
    writer: std::io::PipeWriter,
}

impl ReadyPipe {
    /// A new pipe. Both ends are close-on-exec here (as std opens pipes), so no process this
    /// one starts inherits them; [`ReadyPipe::daemon_end`] gives the write end to one command.
    pub fn new() -> std::io::Result<Self> {
        let (reader, writer) = std::io::pipe()?;
        Ok(Self { reader, writer })
    }

    /// A copy of the write end, for the daemon's stdout. The command given it holds it until
    /// the command is dropped: drop it once spawned, so the pipe ends when the daemon's copy
    /// does.
    fn daemon_end(&self) -> std::io::Result<Stdio> {
        Ok(Stdio::from(self.writer.try_clone()?))
    }

    /// This process's end once the daemon was spawned: its copy of the write end is closed,
    /// so the pipe ends when the daemon's copy does.
    fn into_reader(self) -> std::io::PipeReader {
        self.reader
    }

    /// Waits, after the daemon was spawned, until it listens or is gone, for at most
    /// `timeout`.
    pub fn wait(self, timeout: Duration) -> Readiness {
        wait_for_byte(&self.into_reader(), timeout)
    }
}

/// Waits on the start-notification pipe's read end until a byte comes (listening), the pipe
/// ends (gone) or `timeout` passes. Polled on the calling thread, so the starter runs on as
/// soon as the byte arrives.
fn wait_for_byte(reader: &std::io::PipeReader, timeout: Duration) -> Readiness {
    let deadline = Instant::now() + timeout;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let wait = PollTimeout::try_from(left).unwrap_or(PollTimeout::MAX);
        let mut fds = [PollFd::new(reader.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, wait) {
            Ok(0) if left.is_zero() => return Readiness::TimedOut,
            Ok(0) | Err(nix::errno::Errno::EINTR) => continue,
            Ok(_) => {}
            Err(_) => return Readiness::Gone,
        }
        let mut byte = [0_u8; 1];
        match (&*reader).read(&mut byte) {
            Ok(1) => return Readiness::Listening,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            _ => return Readiness::Gone,
        }
    }
}

/// [`wait_for_byte`] on the calling task's tokio runtime: the pipe is registered with the
/// runtime's event loop (an error when it cannot be), and the wait ends like the blocking one.
async fn wait_for_byte_async(
    reader: std::io::PipeReader,
    timeout: Duration,
) -> std::io::Result<Readiness> {
    use tokio::io::AsyncReadExt;
    let mut receiver = tokio::net::unix::pipe::Receiver::from_owned_fd(OwnedFd::from(reader))?;
    let read = async {
        let mut byte = [0_u8; 1];
        loop {
            match receiver.read(&mut byte).await {
                Ok(1) => return Readiness::Listening,
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
                _ => return Readiness::Gone,
            }
        }
    };
    Ok(tokio::time::timeout(timeout, read).await.unwrap_or(Readiness::TimedOut))
}

/// The daemon's end: tells the starter behind `fd` that the socket listens, then lets go of
/// the pipe (also when the write failed): stdout (the launcher's choice) is pointed at
/// `/dev/null`, so a later write to it goes nowhere instead of to whatever file took the
/// number; any other descriptor is closed. The starter of a daemon that failed to tell sees it
/// as gone only once it exits, or times out.
pub fn notify_listening(fd: RawFd) -> std::io::Result<()> {
    // Opening the descriptor's /proc entry gives a second handle on the pipe without unsafe
    // code; the number itself is let go of after.
    let written = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(nix::libc::O_NONBLOCK)
        .open(format!("/proc/self/fd/{fd}"))
        .and_then(|mut pipe| pipe.write_all(b"\n"));
    written.and(let_go(fd))
}

/// The daemon's end when started with [`SERVE_READY_FD_FLAG`]: writes the ready line on the
/// socket `fd` (stdin, stdout or stderr, as the launcher hands it over), lets go of the number
/// as [`let_go`] does, and returns the socket, close-on-exec so no tool or server the daemon
/// starts inherits it, to be served as the daemon's first connection.
pub fn ready_connection(fd: RawFd) -> std::io::Result<std::os::unix::net::UnixStream> {
    let owned = match fd {
        0 => std::io::stdin().as_fd().try_clone_to_owned(),
        1 => std::io::stdout().as_fd().try_clone_to_owned(),
        2 => std::io::stderr().as_fd().try_clone_to_owned(),
        _ => Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("descriptor {fd} is not stdin, stdout or stderr"),
        )),
    }?;
    let mut connection = std::os::unix::net::UnixStream::from(owned);
    let written = connection.local_addr().and_then(|_| connection.write_all(b"\n"));
    let let_go = let_go(fd);
    written.and(let_go).map(|()| connection)
}

/// Lets go of an inherited descriptor the daemon has used up (the start-notification pipe,
/// the keys' pipe): one of stdin, stdout or stderr is pointed at `/dev/null`, so the number
/// stays taken and a later read or write goes nowhere instead of to whatever file would take
/// it; any other descriptor is closed.
pub fn let_go(fd: RawFd) -> std::io::Result<()> {
    let null = || std::fs::OpenOptions::new().read(true).write(true).open("/dev/null");
    let replaced = match fd {
        _ if fd == std::io::stdin().as_raw_fd() => nix::unistd::dup2_stdin(null()?),
        _ if fd == std::io::stdout().as_raw_fd() => nix::unistd::dup2_stdout(null()?),
        _ if fd == std::io::stderr().as_raw_fd() => nix::unistd::dup2_stderr(null()?),
        _ => nix::unistd::close(fd),
    };
    replaced.map_err(std::io::Error::from)
}

/// How a detached start ended.
#[derive(Debug)]
pub enum Started {
    /// The daemon's socket listens.
    Listening {
        /// The daemon's process id.
        pid: u32,
    },
    /// The daemon exited before its socket listened.
    Exited {
        /// Its exit status.
        status: ExitStatus,
        /// What it wrote to stderr (its reason), trimmed.
        stderr: String,
    },
}

/// Failures to start a detached daemon (other than the daemon's own exit, see [`Started`]).
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The start-notification pipe could not be made.
    #[error("cannot make the start-notification pipe: {0}")]
    Pipe(std::io::Error),
    /// The daemon binary could not be run.
    #[error("cannot run {binary}: {source}")]
    Spawn {
        /// The binary tried.
        binary: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The start-notification pipe could not be watched by the async runtime.
    #[error("cannot watch the start-notification pipe: {0}")]
    Watch(std::io::Error),
    /// The daemon closed the pipe but could not be waited for.
    #[error("cannot watch the daemon process: {0}")]
    Wait(std::io::Error),
    /// The socket did not listen within [`READY_TIMEOUT`]; the daemon is left running.
    #[error("the daemon did not answer on {} within {} s", socket.display(), READY_TIMEOUT.as_secs())]
    TimedOut {
        /// The socket waited for.
        socket: PathBuf,
    },
}

/// Starts `binary` as a detached daemon serving `socket` (the contract in the module
/// documentation; `extra` are further `reind` flags) and waits until its socket listens or it
/// exits: [`spawn_detached`], then [`Starting::wait`].
pub fn start_detached(
    binary: &Path,
    socket: &Path,
    extra: &[OsString],
) -> Result<Started, StartError> {
    spawn_detached(binary, socket, extra)?.wait()
}

/// Spawns `binary` as a detached daemon serving `socket` (the contract in the module
/// documentation; `extra` are further `reind` flags) and returns at once, while the daemon is
/// still starting: a starter with something else to do does it during the daemon's start
/// instead of after it. The daemon is handed to a thread that waits for its exit (so a
/// long-lived starter leaves no zombie), made now for the same reason.
pub fn spawn_detached(
    binary: &Path,
    socket: &Path,
    extra: &[OsString],
) -> Result<Starting, StartError> {
    let (reader, spawned) = spawn_on_pipe(binary, socket, extra, |mut command| {
        let mut child = command.spawn()?;
        let stderr = child.stderr.take();
        Ok((child.id(), stderr, DaemonExit::watch(child)))
    })?;
    let (pid, stderr, exit) = spawned;
    Ok(Starting { reader, stderr, exit, pid, socket: socket.to_path_buf() })
}

/// [`spawn_detached`] for a starter on a tokio runtime (with its IO, time and signal drivers
/// enabled), to be waited for with [`StartingOnRuntime::listening`]: the daemon is spawned
/// through tokio, which reaps it whenever it exits, waited for or not, so no thread is made
/// for that either (on two cores, every thread made while the daemon starts slows the start).
pub fn spawn_detached_on_runtime(
    binary: &Path,
    socket: &Path,
    extra: &[OsString],
) -> Result<StartingOnRuntime, StartError> {
    let (reader, child) = spawn_on_pipe(binary, socket, extra, |command| {
        tokio::process::Command::from(command).spawn()
    })?;
    Ok(StartingOnRuntime { reader, child, socket: socket.to_path_buf() })
}

/// [`spawn_with`] told its start on a new start-notification pipe: returns the pipe's read
/// end, which only the daemon writes to once spawned, and what `spawn` made.
fn spawn_on_pipe<T>(
    binary: &Path,
    socket: &Path,
    extra: &[OsString],
    spawn: impl FnOnce(Command) -> std::io::Result<T>,
) -> Result<(std::io::PipeReader, T), StartError> {
    let ready = ReadyPipe::new().map_err(StartError::Pipe)?;
    let daemon_end = ready.daemon_end().map_err(StartError::Pipe)?;
    let spawned = spawn_with(binary, socket, extra, Ready::Pipe(daemon_end), spawn)?;
    // Only the daemon holds the write end now: the pipe ends when its copy does.
    Ok((ready.into_reader(), spawned))
}

/// Spawns `binary` as a detached daemon serving `socket`, like [`spawn_detached_on_runtime`],
/// with its start told on a connection instead of a pipe: returns this process's end of a
/// socket pair whose other end the daemon writes its ready line to ([`SERVE_READY_FD_FLAG`])
/// and then serves as its first connection. What the starter writes there at once waits in
/// the pair's buffer while the daemon starts, so its first request is read as soon as the
/// daemon serves: no wake-up on a notification, no connect and no accept on the cold path.
///
/// The connection's first line is the empty ready line. A connection that ends before it
/// means the daemon exited (or is exiting): [`ConnectedStart::exited`] tells how. The
/// starter reads on the connection with its own patience ([`READY_TIMEOUT`] for the ready
/// line is what the pipe's wait allows).
pub fn spawn_connected_on_runtime(
    binary: &Path,
    socket: &Path,
    extra: &[OsString],
) -> Result<(ConnectedStart, std::os::unix::net::UnixStream), StartError> {
    spawn_on_connection(binary, socket, extra, |command| {
        let child = tokio::process::Command::from(command).spawn()?;
        Ok(ConnectedStart { child: DaemonChild::Reaped(child) })
    })
}

/// [`spawn_connected_on_runtime`] for a starter that has no async runtime yet, and exits
/// soon after the daemon listens (`rein run`): the daemon is spawned at once, without a
/// runtime's child-process machinery. A daemon that stops while such a starter still runs
/// is reaped only when it asks how the start ended ([`ConnectedStart::exited`]) or exits.
pub fn spawn_connected(
    binary: &Path,
    socket: &Path,
    extra: &[OsString],
) -> Result<(ConnectedStart, std::os::unix::net::UnixStream), StartError> {
    spawn_on_connection(binary, socket, extra, |mut command| {
        let child = command.spawn()?;
        Ok(ConnectedStart { child: DaemonChild::Plain(child) })
    })
}

/// [`spawn_with`] told its start on a new socket pair: returns what `spawn` made and this
/// process's end of the pair, the daemon holding the only other end.
fn spawn_on_connection(
    binary: &Path,
    socket: &Path,
    extra: &[OsString],
    spawn: impl FnOnce(Command) -> std::io::Result<ConnectedStart>,
) -> Result<(ConnectedStart, std::os::unix::net::UnixStream), StartError> {
    let (ours, daemon_end) = std::os::unix::net::UnixStream::pair().map_err(StartError::Pipe)?;
    let ready = Ready::Connection(Stdio::from(OwnedFd::from(daemon_end)));
    let started = spawn_with(binary, socket, extra, ready, spawn)?;
    Ok((started, ours))
}

/// What a starter tells the daemon on its command line (the contract in the module
/// documentation), before any `extra` arguments.
///
/// `reind` reads a command line that holds exactly these with [`LaunchArgs::recognize`]
/// instead of its full argument parser, which builds its whole command tree first: about
/// 0.1 ms of every cold `rein run` (docs/benchmarks.md, "Twenty-first pass").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchArgs {
    /// The socket to serve ([`SOCKET_FLAG`]).
    pub socket: PathBuf,
    /// The descriptor to tell the start on ([`READY_FD_FLAG`]).
    pub ready_fd: RawFd,
    /// Whether that descriptor is the starter's first connection ([`SERVE_READY_FD_FLAG`]).
    pub serve_ready_fd: bool,
}

impl LaunchArgs {
    /// The arguments, in the order starters write them.
    pub fn to_args(&self) -> Vec<OsString> {
        let mut args: Vec<OsString> = vec![
            FOREGROUND_FLAG.into(),
            DETACHED_FLAG.into(),
            SOCKET_FLAG.into(),
            self.socket.clone().into(),
            READY_FD_FLAG.into(),
            self.ready_fd.to_string().into(),
        ];
        if self.serve_ready_fd {
            args.push(SERVE_READY_FD_FLAG.into());
        }
        args
    }

    /// The launch arguments when `args` (the program's name left out) are exactly what
    /// [`LaunchArgs::to_args`] writes; `None` for anything else, which the full parser reads.
    pub fn recognize(args: &[OsString]) -> Option<Self> {
        let [foreground, detached, socket_flag, socket, ready_flag, ready_fd, rest @ ..] = args
        else {
            return None;
        };
        let flags = [
            (foreground, FOREGROUND_FLAG),
            (detached, DETACHED_FLAG),
            (socket_flag, SOCKET_FLAG),
            (ready_flag, READY_FD_FLAG),
        ];
        if flags.iter().any(|(given, flag)| given.as_os_str() != *flag) {
            return None;
        }
        let serve_ready_fd = match rest {
            [] => false,
            [flag] if flag.as_os_str() == SERVE_READY_FD_FLAG => true,
            _ => return None,
        };
        let ready_fd = ready_fd.to_str()?.parse().ok()?;
        Some(Self { socket: PathBuf::from(socket), ready_fd, serve_ready_fd })
    }
}

/// What the daemon is told its start on: its stdout, descriptor [`DAEMON_READY_FD`].
enum Ready {
    /// The write end of a start-notification pipe.
    Pipe(Stdio),
    /// One end of a socket pair, served as the first connection after the ready line.
    Connection(Stdio),
}

/// Spawns the detached daemon's command (the contract in the module documentation) with
/// `spawn`, which consumes the command and with it the command's copy of the daemon's end of
/// `ready`: once spawned, only the daemon holds it.
fn spawn_with<T>(
    binary: &Path,
    socket: &Path,
    extra: &[OsString],
    ready: Ready,
    spawn: impl FnOnce(Command) -> std::io::Result<T>,
) -> Result<T, StartError> {
    let mut command = Command::new(binary);
    let stdin = hand_over_keys(&mut command).map_err(StartError::Pipe)?;
    let (daemon_end, serve_ready_fd) = match ready {
        Ready::Pipe(daemon_end) => (daemon_end, false),
        Ready::Connection(daemon_end) => (daemon_end, true),
    };
    let launch =
        LaunchArgs { socket: socket.to_path_buf(), ready_fd: DAEMON_READY_FD, serve_ready_fd };
    command.args(launch.to_args());
    command.args(extra).stdin(stdin).stdout(daemon_end).stderr(Stdio::piped()).process_group(0);
    spawn(command).map_err(|source| StartError::Spawn { binary: binary.to_path_buf(), source })
}

/// A daemon spawned by [`spawn_detached`] whose socket may not listen yet.
#[derive(Debug)]
pub struct Starting {
    /// The start-notification pipe's read end (the daemon holds the only write end).
    reader: std::io::PipeReader,
    /// The daemon's stderr, read only if it exits before listening.
    stderr: Option<std::process::ChildStderr>,
    /// How its exit status is learned.
    exit: DaemonExit,
    /// Its process id.
    pid: u32,
    /// The socket it was told to serve.
    socket: PathBuf,
}

impl Starting {
    /// Waits until the daemon's socket listens or the daemon exits, for at most
    /// [`READY_TIMEOUT`]. A daemon that listens (or does not answer in time) is left running;
    /// its stderr is closed here, as nobody reads it once it listens.
    pub fn wait(self) -> Result<Started, StartError> {
        let Self { reader, mut stderr, exit, pid, socket } = self;
        match wait_for_byte(&reader, READY_TIMEOUT) {
            Readiness::Listening => Ok(Started::Listening { pid }),
            Readiness::Gone => {
                // Read to the end before waiting, so a daemon with a lot to say is not blocked
                // on a full pipe while this waits for it to exit.
                let mut said = String::new();
                if let Some(pipe) = stderr.as_mut() {
                    let _ = pipe.read_to_string(&mut said);
                }
                let status = exit.status().map_err(StartError::Wait)?;
                Ok(Started::Exited { status, stderr: said.trim().to_string() })
            }
            Readiness::TimedOut => Err(StartError::TimedOut { socket }),
        }
    }
}

/// A daemon spawned by [`spawn_detached_on_runtime`] whose socket may not listen yet.
#[derive(Debug)]
pub struct StartingOnRuntime {
    /// The start-notification pipe's read end (the daemon holds the only write end).
    reader: std::io::PipeReader,
    /// The daemon, reaped by tokio whenever it exits.
    child: tokio::process::Child,
    /// The socket it was told to serve.
    socket: PathBuf,
}

impl StartingOnRuntime {
    /// [`Starting::wait`] on the runtime: the pipe is watched by the runtime's own event loop,
    /// so no thread waits on it and the waiting task runs as soon as the byte comes (a cold
    /// `rein run` connects without a hand-over between threads). A daemon that is gone is
    /// waited for there too, its stderr read to the end meanwhile.
    pub async fn listening(self) -> Result<Started, StartError> {
        let Self { reader, child, socket } = self;
        let pid = child.id().unwrap_or_default();
        let readiness =
            wait_for_byte_async(reader, READY_TIMEOUT).await.map_err(StartError::Watch)?;
        match readiness {
            Readiness::Listening => Ok(Started::Listening { pid }),
            Readiness::Gone => exit_of(child).await,
            Readiness::TimedOut => Err(StartError::TimedOut { socket }),
        }
    }
}

/// A daemon spawned by [`spawn_connected_on_runtime`] or [`spawn_connected`], whose start is
/// told on the connection.
#[derive(Debug)]
pub struct ConnectedStart {
    /// The daemon process.
    child: DaemonChild,
}

/// The process of a daemon started on a connection, as its starter holds it.
#[derive(Debug)]
enum DaemonChild {
    /// Spawned through tokio, which reaps it whenever it exits.
    Reaped(tokio::process::Child),
    /// Spawned before any runtime: waited for only when asked.
    Plain(std::process::Child),
}

impl ConnectedStart {
    /// How the start ended, for a daemon whose connection ended before its ready line: it
    /// exited or is exiting, and is waited for, its stderr read to the end meanwhile. Needs a
    /// tokio runtime.
    pub async fn exited(self) -> Result<Started, StartError> {
        match self.child {
            DaemonChild::Reaped(child) => exit_of(child).await,
            DaemonChild::Plain(child) => {
                let output = tokio::task::spawn_blocking(move || child.wait_with_output())
                    .await
                    .map_err(|error| StartError::Wait(std::io::Error::other(error)))?;
                output.map(exited).map_err(StartError::Wait)
            }
        }
    }
}

/// A detached daemon that is gone before it listened: its exit status and what it wrote to
/// stderr, waited for on the runtime.
async fn exit_of(child: tokio::process::Child) -> Result<Started, StartError> {
    child.wait_with_output().await.map(exited).map_err(StartError::Wait)
}

/// A gone daemon's exit status and what it wrote to stderr, as [`Started::Exited`].
fn exited(output: std::process::Output) -> Started {
    let said = String::from_utf8_lossy(&output.stderr);
    Started::Exited { status: output.status, stderr: said.trim().to_string() }
}

/// How a starter learns a detached daemon's exit status.
#[derive(Debug)]
enum DaemonExit {
    /// A thread of its own waits for the exit (and so reaps the daemon) and sends the status.
    Watched(std::sync::mpsc::Receiver<std::io::Result<ExitStatus>>),
    /// No thread could be made: the starter waits itself when it needs the status; a daemon
    /// that keeps running is reaped when the starter exits instead.
    Unwatched(std::process::Child),
}

impl DaemonExit {
    /// Hands `child` to a thread that waits for its exit.
    fn watch(child: std::process::Child) -> Self {
        // The child goes to the thread over a channel, so it is still here when no thread
        // can be made.
        let (handed, taken) = std::sync::mpsc::sync_channel::<std::process::Child>(1);
        let (sender, receiver) = std::sync::mpsc::sync_channel(1);
        let reaper = std::thread::Builder::new().name("reind-reaper".into()).spawn(move || {
            if let Ok(mut child) = taken.recv() {
                // Once the daemon listens nobody reads the status: the send may find no one.
                let _ = sender.send(child.wait());
            }
        });
        if reaper.is_err() {
            return Self::Unwatched(child);
        }
        match handed.send(child) {
            Ok(()) => Self::Watched(receiver),
            Err(std::sync::mpsc::SendError(child)) => Self::Unwatched(child),
        }
    }

    /// The exit status, waiting for the exit.
    fn status(self) -> std::io::Result<ExitStatus> {
        match self {
            Self::Watched(receiver) => receiver.recv().unwrap_or_else(|_| {
                Err(std::io::Error::other(
                    "the thread watching the daemon ended without its status",
                ))
            }),
            Self::Unwatched(mut child) => child.wait(),
        }
    }
}

/// The daemon's stdin: a pipe holding this process's provider keys, which `command` is made to
/// start without (see [`key_handover`]); `/dev/null` when there are none or they do not fit
/// the pipe (the daemon then moves them itself).
fn hand_over_keys(command: &mut Command) -> std::io::Result<Stdio> {
    // The daemon's home is found from the same environment it inherits.
    let known = rein_protocol::paths::rein_home()
        .map(|home| key_handover::configured_key_variables(&home))
        .unwrap_or_default();
    let keys = key_handover::EnvironmentKeys::of_this_process(&known);
    let Some(pipe) = key_handover::filled_pipe(&keys)? else {
        // Not one inherited from whoever started this process.
        command.env_remove(key_handover::SECRETS_FD_VAR);
        return Ok(Stdio::null());
    };
    for name in &keys.names {
        command.env_remove(name);
    }
    command.env(key_handover::SECRETS_FD_VAR, DAEMON_KEYS_FD.to_string());
    Ok(Stdio::from(pipe))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn launch_arguments_read_back_as_written_and_nothing_else() {
        for serve_ready_fd in [false, true] {
            let launch = LaunchArgs {
                socket: PathBuf::from("/run/user/1000/rein sock"),
                ready_fd: 1,
                serve_ready_fd,
            };
            assert_eq!(LaunchArgs::recognize(&launch.to_args()), Some(launch));
        }
        let written = LaunchArgs { socket: "/s".into(), ready_fd: 1, serve_ready_fd: true };
        let args = written.to_args();
        // Anything more, less, reordered or malformed is left to the full parser.
        let mut extra = args.clone();
        extra.extend(["--max-connections".into(), "9".into()]);
        let mut swapped = args.clone();
        swapped.swap(0, 1);
        let mut bad_fd = args.clone();
        bad_fd[5] = "one".into();
        for other in [extra, swapped, bad_fd, args[..5].to_vec(), Vec::new()] {
            assert_eq!(LaunchArgs::recognize(&other), None, "{other:?}");
        }
    }

    #[test]
    fn a_byte_means_listening_and_a_closed_pipe_means_gone() {
        let pipe = ReadyPipe::new().unwrap();
        let mut daemon_end = pipe.writer.try_clone().unwrap();
        daemon_end.write_all(b"\n").unwrap();
        assert_eq!(pipe.wait(Duration::from_secs(10)), Readiness::Listening);

        let pipe = ReadyPipe::new().unwrap();
        let daemon_end = pipe.writer.try_clone().unwrap();
        drop(daemon_end);
        assert_eq!(pipe.wait(Duration::from_secs(10)), Readiness::Gone);

        let pipe = ReadyPipe::new().unwrap();
        let _daemon_end = pipe.writer.try_clone().unwrap();
        assert_eq!(pipe.wait(Duration::from_millis(50)), Readiness::TimedOut);
    }

    /// A stand-in daemon: a shell script that records its arguments, then runs `body` with
    /// `$fd` set to the `--ready-fd` descriptor.
    fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
        let path = dir.join(name);
        let text = format!(
            "#!/bin/sh\nprintf '%s\\n' \"$@\" > \"{}\"\nfd=\nwhile [ $# -gt 0 ]; do\n  \
             if [ \"$1\" = {READY_FD_FLAG} ]; then fd=$2; fi\n  shift\ndone\n{body}\n",
            dir.join("args").display()
        );
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    // One test for all stand-ins: scripts written and run from parallel tests can fail with
    // "text file busy" when one test's fork holds the other's file open for writing.
    #[test]
    fn the_starter_sees_listening_or_the_exit_code_and_stderr() {
        let dir = tempfile::tempdir().unwrap();
        // Another start in the same process (the batch runner's workers), still waiting.
        let other_start = ReadyPipe::new().unwrap();
        // The stand-in keeps running after it said so, like a daemon.
        let binary = script(dir.path(), "listens", "echo > /proc/self/fd/$fd\nexec sleep 5");
        let socket = dir.path().join("reind.sock");
        let extra = [OsString::from("--max-connections"), OsString::from("7")];
        let started = start_detached(&binary, &socket, &extra).unwrap();
        let Started::Listening { pid } = started else { panic!("{started:?}") };
        // The daemon was given no other start's pipe: that one ends with its own copy, not
        // when this daemon exits (a lost race would read as a daemon that never answers).
        let other = other_start.wait(Duration::from_secs(2));
        let pid = nix::unistd::Pid::from_raw(i32::try_from(pid).unwrap());
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL).unwrap();
        assert_eq!(other, Readiness::Gone);
        let args = std::fs::read_to_string(dir.path().join("args")).unwrap();
        let args: Vec<&str> = args.lines().collect();
        let fd = args[5];
        assert!(fd.parse::<i32>().is_ok(), "{args:?}");
        let expected = [
            FOREGROUND_FLAG,
            DETACHED_FLAG,
            SOCKET_FLAG,
            socket.to_str().unwrap(),
            READY_FD_FLAG,
            fd,
            "--max-connections",
            "7",
        ];
        assert_eq!(args, expected);

        let binary = script(dir.path(), "exits", "echo 'reind: already serving' >&2\nexit 3");
        let socket = dir.path().join("reind.sock");
        match start_detached(&binary, &socket, &[]).unwrap() {
            Started::Exited { status, stderr } => {
                assert_eq!(status.code(), Some(i32::from(EXIT_ALREADY_RUNNING)));
                assert_eq!(stderr, "reind: already serving");
            }
            other => panic!("expected an exit, got {other:?}"),
        }

        // The same two starts spawned through tokio and waited for on its event loop.
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let binary = dir.path().join("listens");
        let started = runtime.block_on(async {
            spawn_detached_on_runtime(&binary, &socket, &[]).unwrap().listening().await
        });
        let Started::Listening { pid } = started.unwrap() else { panic!("not listening") };
        let pid = nix::unistd::Pid::from_raw(i32::try_from(pid).unwrap());
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL).unwrap();
        let binary = dir.path().join("exits");
        let started = runtime.block_on(async {
            spawn_detached_on_runtime(&binary, &socket, &[]).unwrap().listening().await
        });
        match started {
            Ok(Started::Exited { status, stderr }) => {
                assert_eq!(status.code(), Some(i32::from(EXIT_ALREADY_RUNNING)));
                assert_eq!(stderr, "reind: already serving");
            }
            other => panic!("expected an exit, got {other:?}"),
        }
        // A daemon that stops later, while the starter goes on: tokio reaps it, no zombie.
        let binary = script(dir.path(), "stops", "echo > /proc/self/fd/$fd\nsleep 0.2");
        let started = runtime.block_on(async {
            spawn_detached_on_runtime(&binary, &socket, &[]).unwrap().listening().await
        });
        let Started::Listening { pid } = started.unwrap() else { panic!("not listening") };
        let reaped = runtime.block_on(async {
            for _ in 0..100 {
                tokio::time::sleep(Duration::from_millis(50)).await;
                if !Path::new(&format!("/proc/{pid}")).exists() {
                    return true;
                }
            }
            false
        });
        assert!(reaped, "the stopped daemon {pid} was left a zombie");

        // Started on a connection: what the starter writes at once is read by the daemon once
        // it has written its ready line, on the same connection.
        let binary = script(
            dir.path(),
            "serves",
            "printf '\\n' >&$fd\nread line <&$fd\necho \"answer to $line\" >&$fd",
        );
        let (exited, lines) = runtime.block_on(async {
            let (starting, mut connection) =
                spawn_connected_on_runtime(&binary, &socket, &[]).unwrap();
            connection.write_all(b"request\n").unwrap();
            let mut lines = String::new();
            connection.read_to_string(&mut lines).unwrap();
            (starting.exited().await.unwrap(), lines)
        });
        assert_eq!(lines, "\nanswer to request\n");
        assert!(matches!(exited, Started::Exited { status, .. } if status.success()));
        let args = std::fs::read_to_string(dir.path().join("args")).unwrap();
        assert!(args.lines().any(|arg| arg == SERVE_READY_FD_FLAG), "{args}");
        // A daemon that exits first ends the connection without a ready line.
        let binary = dir.path().join("exits");
        let (exited, lines) = runtime.block_on(async {
            let (starting, mut connection) =
                spawn_connected_on_runtime(&binary, &socket, &[]).unwrap();
            let mut lines = String::new();
            connection.read_to_string(&mut lines).unwrap();
            (starting.exited().await.unwrap(), lines)
        });
        assert_eq!(lines, "");
        match exited {
            Started::Exited { status, stderr } => {
                assert_eq!(status.code(), Some(i32::from(EXIT_ALREADY_RUNNING)));
                assert_eq!(stderr, "reind: already serving");
            }
            other => panic!("expected an exit, got {other:?}"),
        }
        // The same two starts before any runtime exists: spawned at once, asked on one later.
        let serves = dir.path().join("serves");
        let (starting, mut connection) = spawn_connected(&serves, &socket, &[]).unwrap();
        connection.write_all(b"early\n").unwrap();
        let mut lines = String::new();
        connection.read_to_string(&mut lines).unwrap();
        assert_eq!(lines, "\nanswer to early\n");
        let exited = runtime.block_on(starting.exited()).unwrap();
        assert!(matches!(exited, Started::Exited { status, .. } if status.success()));
        let (starting, mut connection) = spawn_connected(&binary, &socket, &[]).unwrap();
        let mut lines = String::new();
        connection.read_to_string(&mut lines).unwrap();
        assert_eq!(lines, "");
        match runtime.block_on(starting.exited()).unwrap() {
            Started::Exited { status, stderr } => {
                assert_eq!(status.code(), Some(i32::from(EXIT_ALREADY_RUNNING)));
                assert_eq!(stderr, "reind: already serving");
            }
            other => panic!("expected an exit, got {other:?}"),
        }
    }

    /// The daemon's side of a start on a connection takes the socket from stdin, stdout or
    /// stderr only, where the launcher puts it (the end-to-end tests start `reind` that way).
    #[test]
    fn a_ready_connection_is_a_stdio_descriptor() {
        let error = ready_connection(7).unwrap_err();
        assert_eq!(error.kind(), std::io::ErrorKind::InvalidInput);
    }

    #[test]
    fn the_event_loop_wait_tells_a_byte_a_closed_pipe_and_silence_apart() {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let wait = |pipe: ReadyPipe, timeout| {
            runtime.block_on(wait_for_byte_async(pipe.into_reader(), timeout)).unwrap()
        };
        let pipe = ReadyPipe::new().unwrap();
        let mut daemon_end = pipe.writer.try_clone().unwrap();
        daemon_end.write_all(b"\n").unwrap();
        assert_eq!(wait(pipe, Duration::from_secs(10)), Readiness::Listening);

        let pipe = ReadyPipe::new().unwrap();
        drop(pipe.writer.try_clone().unwrap());
        assert_eq!(wait(pipe, Duration::from_secs(10)), Readiness::Gone);

        let pipe = ReadyPipe::new().unwrap();
        let _daemon_end = pipe.writer.try_clone().unwrap();
        assert_eq!(wait(pipe, Duration::from_millis(50)), Readiness::TimedOut);
    }

    #[test]
    fn a_missing_binary_is_a_spawn_error() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("no-such-reind");
        let error = start_detached(&missing, &dir.path().join("s"), &[]).unwrap_err();
        assert!(matches!(error, StartError::Spawn { ref binary, .. } if *binary == missing));
    }
}
