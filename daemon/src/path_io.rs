//! A file system step that failed on one path: the single I/O error shape of the daemon's
//! start-up (home directory, home lock, socket), so each error reads "cannot ACTION PATH: CAUSE".

use std::path::{Path, PathBuf};

/// What was being done to which path, and why it failed.
#[derive(Debug, thiserror::Error)]
#[error("cannot {action} {path}: {source}")]
pub struct PathIoError {
    /// What was being done ("create directory", "lock", ...).
    pub action: &'static str,
    /// The path involved.
    pub path: PathBuf,
    /// The cause.
    #[source]
    pub source: std::io::Error,
}

impl PathIoError {
    /// The error of `action` on `path`, from its cause.
    pub fn new(action: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self { action, path: path.into(), source }
    }

    /// A `map_err` adapter turning an I/O error of `action` on `path` into `E`.
    pub fn on<'a, E: From<Self>>(
        action: &'static str,
        path: &'a Path,
    ) -> impl FnOnce(std::io::Error) -> E + 'a {
        move |source| E::from(Self::new(action, path, source))
    }
}
