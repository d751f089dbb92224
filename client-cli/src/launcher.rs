//! Finding and starting `reind` when the socket does not answer.

use rein_launch::{StartError, Started};
use std::fs::TryLockError;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long a client cut off before its first answer waits for the daemon to exit. A daemon
/// still holding its lock after that is alive and closed the connection on purpose (a client
/// of another user, too many connections), and the client reports that instead.
pub const EXIT_WAIT: Duration = Duration::from_secs(5);

/// Failures to start the daemon.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// The detached start itself failed (see [`StartError`]): the `reind` binary could not be
    /// run, the start-notification pipe could not be made or watched, or the socket did not
    /// listen in time.
    #[error(fmt = describe_start)]
    Start(#[from] StartError),
    /// `reind` ran but exited before its socket listened: what it wrote to stderr, else its
    /// exit status.
    #[error("reind did not start: {0}")]
    Exited(String),
}

/// How a failed detached start reads to the user: a binary that cannot be run is named as
/// such; every other failure says that reind did not start, and why.
fn describe_start(error: &StartError, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    match error {
        StartError::Spawn { .. } => write!(f, "{error}"),
        other => write!(f, "reind did not start: {other}"),
    }
}

/// The `reind` binary: `$REIN_DAEMON_BIN`, else next to this executable, else `reind` on PATH.
pub fn daemon_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("REIN_DAEMON_BIN").filter(|p| !p.is_empty()) {
        return PathBuf::from(path);
    }
    let sibling = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join("reind")))
        .filter(|path| path.is_file());
    if let Some(sibling) = sibling {
        return sibling;
    }
    PathBuf::from("reind")
}

/// Starts a detached daemon on `socket` and returns once its socket listens: `rein` spawns
/// `reind --foreground --detached` itself and waits on its start-notification pipe (the
/// contract of `rein_launch`, which `reind` without `--foreground` uses too). Its
/// logs go to `$REIN_HOME/logs/reind.log`; a daemon that exits before listening is reported
/// with what it wrote to stderr; a daemon that lost the race to another client's is fine once
/// the winner answers. Blocks; an async caller uses [`spawn_daemon`] then [`daemon_listening`].
pub fn start_daemon(socket: &Path) -> Result<(), LaunchError> {
    settle(rein_launch::spawn_detached(&daemon_binary(), socket, &[])?.wait(), socket)
}

/// Spawns a detached daemon on `socket` through the caller's tokio runtime and returns while
/// it starts (see [`rein_launch::spawn_detached_on_runtime`]): quick, so an async caller may
/// call it in place and wait with [`daemon_listening`].
pub fn spawn_daemon(socket: &Path) -> Result<rein_launch::StartingOnRuntime, LaunchError> {
    Ok(rein_launch::spawn_detached_on_runtime(&daemon_binary(), socket, &[])?)
}

/// Waits until the daemon spawned by [`spawn_daemon`] listens on `socket`, as
/// [`start_daemon`] does, on the caller's tokio runtime: the start-notification pipe is waited
/// on by the runtime itself ([`rein_launch::StartingOnRuntime::listening`]); only a start that
/// did not simply listen (a lost race, a daemon that exited) is settled on a blocking thread.
pub async fn daemon_listening(
    starting: rein_launch::StartingOnRuntime,
    socket: &Path,
) -> Result<(), LaunchError> {
    let started = starting.listening().await;
    if let Ok(Started::Listening { .. }) = started {
        return settle(started, socket);
    }
    settle_on_blocking_thread(started, socket).await
}

/// Spawns a detached daemon on `socket` whose start is told on a connection, which the daemon
/// then serves (see [`rein_launch::spawn_connected_on_runtime`]): returns that connection at
/// once, for the caller to write its first request into while the daemon starts. The
/// connection's first line is the daemon's (empty) ready line; if it ends before that line,
/// ask [`daemon_exited`] what it means.
pub fn spawn_daemon_connected(
    socket: &Path,
) -> Result<(rein_launch::ConnectedStart, std::os::unix::net::UnixStream), LaunchError> {
    Ok(rein_launch::spawn_connected_on_runtime(&daemon_binary(), socket, &[])?)
}

/// [`spawn_daemon_connected`] for a caller with no async runtime yet, which exits soon after
/// (see [`rein_launch::spawn_connected`]): `rein run` starting the daemon before anything
/// else.
pub fn spawn_daemon_connected_early(
    socket: &Path,
) -> Result<(rein_launch::ConnectedStart, std::os::unix::net::UnixStream), LaunchError> {
    Ok(rein_launch::spawn_connected(&daemon_binary(), socket, &[])?)
}

/// For a daemon spawned by [`spawn_daemon_connected`] whose connection ended before its ready
/// line: waits for its exit and settles it as [`start_daemon`] does. `Ok` means it lost the
/// race to another client's daemon, which answers on `socket`.
pub async fn daemon_exited(
    starting: rein_launch::ConnectedStart,
    socket: &Path,
) -> Result<(), LaunchError> {
    settle_on_blocking_thread(starting.exited().await, socket).await
}

/// [`settle`] on a blocking thread, as it may wait for a race's winner.
async fn settle_on_blocking_thread(
    started: Result<Started, StartError>,
    socket: &Path,
) -> Result<(), LaunchError> {
    let socket = socket.to_path_buf();
    tokio::task::spawn_blocking(move || settle(started, &socket))
        .await
        .map_err(|error| StartError::Wait(std::io::Error::other(error)))?
}

/// What a detached start's outcome means for the client: listening (or a lost race whose
/// winner answers) is fine; anything else is the error to report. Blocks while it waits for
/// a race's winner.
fn settle(started: Result<Started, StartError>, socket: &Path) -> Result<(), LaunchError> {
    let (status, stderr) = match started {
        Ok(Started::Listening { pid }) => {
            tracing::debug!(pid, socket = %socket.display(), "started reind");
            return Ok(());
        }
        Ok(Started::Exited { status, stderr }) => (status, stderr),
        Err(error) => return Err(error.into()),
    };
    // Lost a race with another client starting it: that is fine once it answers (it may
    // still be getting ready when we get here). When nothing answers, the daemon in the way
    // serves another socket from the same home.
    if status.code() == Some(i32::from(rein_launch::EXIT_ALREADY_RUNNING))
        && answers_within(socket, RACE_PATIENCE)
    {
        return Ok(());
    }
    Err(LaunchError::Exited(if stderr.is_empty() {
        format!("exit status {status}")
    } else {
        stderr
    }))
}

/// How long a client that lost the race to start the daemon waits for the winner to listen.
const RACE_PATIENCE: Duration = Duration::from_secs(10);

/// Whether `socket` accepts a connection within `patience`. Polls: used only after losing the
/// race to start the daemon, when the winner's readiness cannot be waited on directly.
fn answers_within(socket: &Path, patience: Duration) -> bool {
    let deadline = Instant::now() + patience;
    loop {
        if std::os::unix::net::UnixStream::connect(socket).is_ok() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits until the daemon that served `socket` has exited: until nobody holds the socket's
/// single-instance lock (or there is no lock file), for at most `timeout`. True when it is
/// gone. A client that was cut off before its first answer calls this before starting a new
/// daemon, so the new one does not find the dying one still holding the socket.
pub fn wait_for_exit(socket: &Path, timeout: Duration) -> bool {
    let lock = rein_protocol::paths::socket_lock(socket);
    let deadline = Instant::now() + timeout;
    loop {
        let file = match std::fs::File::open(&lock) {
            Ok(file) => file,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return true,
            // A lock file this client may not open (another user's daemon): it cannot tell,
            // so it does not start a daemon of its own.
            Err(error) => {
                tracing::debug!(%error, lock = %lock.display(), "cannot open the daemon lock");
                return false;
            }
        };
        // A shared lock is enough to learn whether the daemon's exclusive one is still held;
        // it is dropped at once.
        match file.try_lock_shared() {
            Ok(()) => return true,
            Err(TryLockError::WouldBlock) => {}
            Err(TryLockError::Error(error)) => {
                tracing::debug!(%error, lock = %lock.display(), "cannot probe the daemon lock");
                return true;
            }
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_start_names_the_binary_or_says_reind_did_not_start() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("no-such-reind");
        let socket = dir.path().join("reind.sock");
        let error =
            LaunchError::from(rein_launch::start_detached(&missing, &socket, &[]).unwrap_err());
        let message = error.to_string();
        assert!(message.starts_with(&format!("cannot run {}: ", missing.display())), "{message}");

        let error = LaunchError::from(StartError::TimedOut { socket: socket.clone() });
        let expected = format!(
            "reind did not start: the daemon did not answer on {} within {} s",
            socket.display(),
            rein_launch::READY_TIMEOUT.as_secs()
        );
        assert_eq!(error.to_string(), expected);
    }

    #[test]
    fn waiting_for_exit_follows_the_socket_lock() {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("reind.sock");
        assert!(wait_for_exit(&socket, Duration::ZERO), "no lock file: nobody is there");
        let held = std::fs::File::create(rein_protocol::paths::socket_lock(&socket)).unwrap();
        held.lock().unwrap();
        assert!(!wait_for_exit(&socket, Duration::ZERO), "a held lock: still there");
        drop(held);
        assert!(wait_for_exit(&socket, Duration::ZERO));
    }
}
