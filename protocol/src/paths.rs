//! Where the daemon keeps its state and its socket, so every client finds the same place.
//!
//! `REIN_HOME` wins; otherwise the XDG data directory (`~/.local/share/rein` on Linux). The
//! default socket is `$REIN_HOME/run/reind.sock`; `REIN_SOCKET` overrides it for clients and
//! the daemon alike.

use std::path::PathBuf;

/// The environment variable naming the state directory.
pub const REIN_HOME_ENV: &str = "REIN_HOME";
/// The environment variable naming the socket.
pub const REIN_SOCKET_ENV: &str = "REIN_SOCKET";

/// Failures to find a home for rein's state.
#[derive(Debug, thiserror::Error)]
pub enum PathsError {
    /// Neither `REIN_HOME` nor a home directory is available.
    #[error("cannot locate rein's state directory: set REIN_HOME")]
    NoHome,
}

/// The state directory: `$REIN_HOME`, else `<XDG data dir>/rein`.
pub fn rein_home() -> Result<PathBuf, PathsError> {
    if let Some(home) = std::env::var_os(REIN_HOME_ENV).filter(|value| !value.is_empty()) {
        return Ok(PathBuf::from(home));
    }
    dirs::data_dir().map(|dir| dir.join("rein")).ok_or(PathsError::NoHome)
}

/// The configuration files the daemon tries, in order: `<home>/config.toml`, then
/// `<XDG config dir>/rein/config.toml`. The first that exists is the one read.
pub fn config_candidates(home: &std::path::Path) -> Vec<PathBuf> {
    let mut paths = vec![home.join("config.toml")];
    if let Some(dir) = dirs::config_dir() {
        paths.push(dir.join("rein").join("config.toml"));
    }
    paths
}

/// The socket under a state directory: `<home>/run/reind.sock`.
pub fn socket_in(home: &std::path::Path) -> PathBuf {
    home.join("run").join("reind.sock")
}

/// The single-instance lock file beside a socket: `<socket>.lock`. The daemon serving the
/// socket holds an advisory lock on it for its whole life; clients use it to tell when a
/// dying daemon is gone.
pub fn socket_lock(socket: &std::path::Path) -> PathBuf {
    let mut name = socket.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

/// The socket clients connect to: `$REIN_SOCKET`, else `<rein_home>/run/reind.sock`.
pub fn default_socket() -> Result<PathBuf, PathsError> {
    if let Some(socket) = std::env::var_os(REIN_SOCKET_ENV).filter(|value| !value.is_empty()) {
        return Ok(PathBuf::from(socket));
    }
    Ok(socket_in(&rein_home()?))
}
