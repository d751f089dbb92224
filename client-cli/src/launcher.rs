//! Finding and starting `reind` when the socket does not answer.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Failures to start the daemon.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// The `reind` binary could not be run.
    #[error("cannot run {binary}: {source}")]
    Spawn {
        /// The binary tried.
        binary: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// `reind` ran but did not come up.
    #[error("reind did not start: {0}")]
    Failed(String),
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

/// Starts a detached daemon on `socket` and returns once it answers (reind itself waits for its
/// socket before exiting). Its logs go to `$REIN_HOME/logs/reind.log`.
pub fn start_daemon(socket: &Path) -> Result<(), LaunchError> {
    let binary = daemon_binary();
    let output = Command::new(&binary)
        .arg("--socket")
        .arg(socket)
        .output()
        .map_err(|source| LaunchError::Spawn { binary: binary.clone(), source })?;
    if output.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&output.stderr).trim().to_string();
    // Lost a race with another client starting it: that is fine as long as it answers.
    if output.status.code() == Some(3) {
        return Ok(());
    }
    Err(LaunchError::Failed(if stderr.is_empty() {
        format!("exit status {}", output.status)
    } else {
        stderr
    }))
}
