//! Binding the socket: one daemon per socket, stale sockets replaced, owner-only permissions.
//!
//! Beside the socket sits a lock file (`<socket>.lock`) holding an advisory lock for the
//! daemon's whole life. The kernel drops the lock when the process dies, however it dies, so:
//! a second daemon that cannot take the lock exits with a clear message while the first keeps
//! serving; a daemon that can take it knows any socket file already there is a leftover of a
//! killed daemon and replaces it.

use crate::path_io::PathIoError;
use interprocess::local_socket::tokio::{Listener, Stream};
use interprocess::local_socket::traits::tokio::Listener as _;
use interprocess::os::unix::uds_local_socket::tokio as uds;
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::os::fd::OwnedFd;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};

/// Failures to bind the daemon socket.
#[derive(Debug, thiserror::Error)]
pub enum BindError {
    /// Another daemon holds the socket.
    #[error("another reind{} is already serving {socket}", pid.map(|p| format!(" (pid {p})")).unwrap_or_default())]
    AlreadyRunning {
        /// The socket.
        socket: PathBuf,
        /// The other daemon's pid, when its lock file names it.
        pid: Option<u32>,
    },
    /// A file system step failed.
    #[error(transparent)]
    Io(#[from] PathIoError),
}

fn io_error<'a>(
    action: &'static str,
    path: &'a Path,
) -> impl FnOnce(std::io::Error) -> BindError + 'a {
    PathIoError::on(action, path)
}

/// The listening socket plus the lock that makes it ours. It listens from [`bind`] on, before
/// the daemon's async runtime exists: a client's connection waits in the socket's backlog
/// until [`BoundSocket::accepting`] hands the socket to the runtime.
#[derive(Debug)]
pub struct BoundSocket {
    listener: UnixListener,
    place: Place,
}

/// The socket, registered with the async runtime, accepting connections.
#[derive(Debug)]
pub struct AcceptingSocket {
    listener: Listener,
    place: Place,
    /// A connection made before the runtime served (the starter's, handed over at the start),
    /// answered first.
    waiting: Option<Stream>,
}

/// Where the socket is: its path, and the lock that makes it ours.
#[derive(Debug)]
struct Place {
    path: PathBuf,
    lock: File,
}

/// The socket's single-instance lock after the socket itself is gone, held until the daemon's
/// last step: releasing it tells waiting clients that a new daemon may start.
#[derive(Debug)]
pub struct SocketLock {
    _file: File,
}

/// The lock file path for a socket.
pub fn lock_path(socket: &Path) -> PathBuf {
    rein_protocol::paths::socket_lock(socket)
}

/// Creates the socket's directory (0700 when we create it), takes the single-instance lock,
/// replaces a stale socket file and starts listening with mode 0600.
pub fn bind(socket: &Path) -> Result<BoundSocket, BindError> {
    if let Some(dir) = socket.parent().filter(|dir| !dir.as_os_str().is_empty() && !dir.exists()) {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(io_error("create directory", dir))?;
    }
    let lock_file = lock_path(socket);
    let mut lock = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(&lock_file)
        .map_err(io_error("open lock file", &lock_file))?;
    if let Err(error) = lock.try_lock() {
        return match error {
            fs::TryLockError::WouldBlock => {
                let mut text = String::new();
                let pid =
                    lock.read_to_string(&mut text).ok().and_then(|_| text.trim().parse().ok());
                Err(BindError::AlreadyRunning { socket: socket.to_path_buf(), pid })
            }
            fs::TryLockError::Error(source) => {
                Err(PathIoError::new("lock", lock_file, source).into())
            }
        };
    }
    lock.set_len(0).map_err(io_error("truncate lock file", &lock_file))?;
    lock.rewind().map_err(io_error("rewind lock file", &lock_file))?;
    writeln!(lock, "{}", std::process::id()).map_err(io_error("write lock file", &lock_file))?;

    if fs::symlink_metadata(socket).is_ok() {
        tracing::info!(socket = %socket.display(), "replacing a stale socket left by a daemon that died");
        fs::remove_file(socket).map_err(io_error("remove stale socket", socket))?;
    }
    let listener = UnixListener::bind(socket).map_err(io_error("listen on", socket))?;
    fs::set_permissions(socket, fs::Permissions::from_mode(0o600))
        .map_err(io_error("set permissions of", socket))?;
    Ok(BoundSocket { listener, place: Place { path: socket.to_path_buf(), lock } })
}

impl BoundSocket {
    /// Hands the socket to the current tokio runtime (call it within one), to accept the
    /// connections waiting and those to come, after `first`: a connection the daemon was
    /// handed at its start (the starter's, see `rein_launch::ready_connection`), served as if
    /// it had been accepted first. When the socket cannot be handed over it is removed, its
    /// lock let go, and nothing is served.
    pub fn accepting(
        self,
        first: Option<std::os::unix::net::UnixStream>,
    ) -> std::io::Result<AcceptingSocket> {
        let registered = uds::Listener::try_from(OwnedFd::from(self.listener));
        match registered {
            Ok(listener) => Ok(AcceptingSocket {
                listener: listener.into(),
                place: self.place,
                waiting: first.and_then(handed_over),
            }),
            Err(error) => {
                drop(self.place.remove());
                Err(error)
            }
        }
    }
}

/// A connection the daemon was handed, made a runtime's stream; `None` (it is closed, and its
/// client sees the daemon go away) when the runtime cannot take it.
fn handed_over(connection: std::os::unix::net::UnixStream) -> Option<Stream> {
    let taken = connection
        .set_nonblocking(true)
        .and_then(|()| uds::Stream::try_from(OwnedFd::from(connection)).map(Stream::from));
    taken.map_err(|error| tracing::warn!(%error, "cannot serve the starter's connection")).ok()
}

impl AcceptingSocket {
    /// Waits for the next connection: the one handed over at the start first, if any.
    pub async fn accept(&mut self) -> std::io::Result<Stream> {
        match self.waiting.take() {
            Some(first) => Ok(first),
            None => self.listener.accept().await,
        }
    }

    /// The socket's path.
    pub fn path(&self) -> &Path {
        &self.place.path
    }

    /// Stops listening and removes the socket file. The lock stays held by what this returns:
    /// clients read its release as "the daemon has exited" (see
    /// `rein_protocol::paths::socket_lock`), so the daemon drops it last, after its home lock.
    pub fn remove(self) -> SocketLock {
        self.place.remove()
    }
}

impl Place {
    fn remove(self) -> SocketLock {
        if let Err(error) = fs::remove_file(&self.path) {
            tracing::warn!(%error, socket = %self.path.display(), "could not remove the socket");
        }
        SocketLock { _file: self.lock }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn second_bind_is_refused_and_stale_socket_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("run").join("reind.sock");
        let first = bind(&socket).unwrap();
        let mode = fs::metadata(&socket).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let dir_mode = fs::metadata(socket.parent().unwrap()).unwrap().permissions().mode() & 0o777;
        assert_eq!(dir_mode, 0o700);
        match bind(&socket) {
            Err(BindError::AlreadyRunning { pid, .. }) => assert_eq!(pid, Some(std::process::id())),
            other => panic!("expected AlreadyRunning, got {other:?}"),
        }
        drop(first); // the lock goes; the socket file stays behind like after a crash
        assert!(socket.exists());
        let second = bind(&socket).unwrap();
        second.accepting(None).unwrap().remove();
        assert!(!socket.exists());
    }

    #[tokio::test]
    async fn a_connection_made_before_the_runtime_takes_the_socket_is_served() {
        use std::io::Write as _;
        use tokio::io::AsyncReadExt;
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("reind.sock");
        let bound = bind(&socket).unwrap();
        // The starter connects and writes as soon as the socket listens.
        let mut early = std::os::unix::net::UnixStream::connect(&socket).unwrap();
        early.write_all(b"first line\n").unwrap();
        let mut accepting = bound.accepting(None).unwrap();
        let mut stream = accepting.accept().await.unwrap();
        let mut read = [0_u8; 11];
        stream.read_exact(&mut read).await.unwrap();
        assert_eq!(&read, b"first line\n");
        drop(accepting.remove());
        assert!(!socket.exists());
    }

    /// The starter's connection handed over at the start is served before any connection
    /// already waiting on the socket, and reads what was written into it before.
    #[tokio::test]
    async fn a_handed_over_connection_is_served_first() {
        use std::io::Write as _;
        use tokio::io::AsyncReadExt;
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("reind.sock");
        let bound = bind(&socket).unwrap();
        let mut other = std::os::unix::net::UnixStream::connect(&socket).unwrap();
        other.write_all(b"other\n").unwrap();
        let (mut starter, daemon_end) = std::os::unix::net::UnixStream::pair().unwrap();
        starter.write_all(b"first\n").unwrap();
        let mut accepting = bound.accepting(Some(daemon_end)).unwrap();
        for expected in [b"first\n", b"other\n"] {
            let mut stream = accepting.accept().await.unwrap();
            let mut read = [0_u8; 6];
            stream.read_exact(&mut read).await.unwrap();
            assert_eq!(&read, expected);
        }
        drop(accepting.remove());
    }
}
