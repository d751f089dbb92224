//! One daemon per `REIN_HOME`, whatever socket it serves.
//!
//! The socket's own lock (`<socket>.lock`, see `server::listener`) only keeps two daemons off
//! one socket; two daemons on different sockets would still share one home: its log, its
//! trust store, its session files. So a daemon first takes an advisory lock on
//! `$REIN_HOME/run/reind.lock`, held for its whole life (the kernel releases it however the
//! process dies), and writes its pid and socket there for the error a second daemon gives.

use crate::path_io::PathIoError;
use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The home lock's path: `$REIN_HOME/run/reind.lock`.
pub fn path(home: &Path) -> PathBuf {
    home.join("run").join("reind.lock")
}

/// Why the home could not be locked.
#[derive(Debug, thiserror::Error)]
pub enum HomeLockError {
    /// Another daemon holds the home.
    #[error("{}", taken_message(home, *pid, socket.as_deref(), wanted))]
    Taken {
        /// The home.
        home: PathBuf,
        /// The running daemon's pid, when its lock file says.
        pid: Option<u32>,
        /// The socket it serves, when its lock file says.
        socket: Option<PathBuf>,
        /// The socket this daemon was asked to serve.
        wanted: PathBuf,
    },
    /// A file system step failed.
    #[error(transparent)]
    Io(#[from] PathIoError),
}

/// What a daemon refused for `home` says: that the socket is already served when the running
/// daemon serves the one asked for, else which daemon uses the home.
fn taken_message(home: &Path, pid: Option<u32>, socket: Option<&Path>, wanted: &Path) -> String {
    let pid = pid.map_or_else(|| "unknown".to_string(), |p| p.to_string());
    match socket {
        Some(socket) if socket == wanted => {
            format!("another reind (pid {pid}) is already serving {}", socket.display())
        }
        _ => format!(
            "another reind (pid {pid}, socket {}) already uses REIN_HOME {}; one daemon per \
             REIN_HOME",
            socket.map_or_else(|| "unknown".to_string(), |s| s.display().to_string()),
            home.display()
        ),
    }
}

/// The lock on the home, held while this value lives.
#[derive(Debug)]
pub struct HomeLock {
    _file: File,
}

/// Takes the home's lock for a daemon serving `socket`, or says which daemon has it.
pub fn acquire(home: &Path, socket_wanted: &Path) -> Result<HomeLock, HomeLockError> {
    let path = path(home);
    let io = PathIoError::on::<HomeLockError>;
    if let Some(dir) = path.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(io("create directory", dir))?;
    }
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(&path)
        .map_err(io("open", &path))?;
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            let mut text = String::new();
            let _ = file.read_to_string(&mut text);
            let (pid, socket) = parse(&text);
            let wanted = socket_wanted.to_path_buf();
            return Err(HomeLockError::Taken { home: home.to_path_buf(), pid, socket, wanted });
        }
        Err(TryLockError::Error(source)) => {
            return Err(PathIoError::new("lock", path, source).into());
        }
    }
    let record = format!("pid {}\nsocket {}\n", std::process::id(), socket_wanted.display());
    file.set_len(0).map_err(io("truncate", &path))?;
    file.rewind().map_err(io("rewind", &path))?;
    file.write_all(record.as_bytes()).map_err(io("write", &path))?;
    Ok(HomeLock { _file: file })
}

/// The pid and socket a lock file records.
fn parse(text: &str) -> (Option<u32>, Option<PathBuf>) {
    let mut pid = None;
    let mut socket = None;
    for line in text.lines() {
        if let Some(value) = line.strip_prefix("pid ") {
            pid = value.trim().parse().ok();
        } else if let Some(value) = line.strip_prefix("socket ") {
            socket = Some(PathBuf::from(value));
        }
    }
    (pid, socket)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_names_the_holder_and_the_lock_goes_with_its_holder() {
        let home = tempfile::tempdir().unwrap();
        let first = acquire(home.path(), Path::new("/tmp/one.sock")).unwrap();
        let error = acquire(home.path(), Path::new("/tmp/two.sock")).unwrap_err();
        let text = error.to_string();
        assert!(text.contains(&format!("pid {}", std::process::id())), "{text}");
        assert!(text.contains("socket /tmp/one.sock"), "{text}");
        assert!(text.contains(&home.path().display().to_string()), "{text}");
        let same = acquire(home.path(), Path::new("/tmp/one.sock")).unwrap_err().to_string();
        assert!(same.contains("is already serving /tmp/one.sock"), "{same}");
        drop(first);
        let _second = acquire(home.path(), Path::new("/tmp/two.sock")).unwrap();
        let recorded = std::fs::read_to_string(path(home.path())).unwrap();
        assert!(recorded.contains("socket /tmp/two.sock"), "{recorded}");
    }
}
