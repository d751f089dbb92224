//! The daemon's background care of `REIN_HOME`'s disk: free space watched (a `low_disk_space`
//! event when it drops below `storage.min_free_bytes`, and the `daemon/info` fields) and old
//! spill files swept (older than `tools.spill_retention_secs`).

use crate::daemon::Daemon;
use rein_coding::tools::spill;
use rein_protocol::event::DaemonEvent;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often free space is checked.
const DISK_CHECK_PERIOD: Duration = Duration::from_secs(60);
/// How often old spill files are swept.
const SWEEP_PERIOD: Duration = Duration::from_secs(60 * 60);
/// How long after the daemon starts its background care waits (this task's first check and
/// sweep, and the walk that makes the home private): past a starter's first requests, which
/// it would otherwise compete with for the CPUs and the blocking threads.
pub const AFTER_START: Duration = Duration::from_secs(1);

/// Free space on the file system holding `home`, and whether it is below `min_free_bytes`.
/// `None` (and not low) when it cannot be measured.
pub fn disk_status(home: &Path, min_free_bytes: u64) -> (Option<u64>, bool) {
    match spill::free_bytes(home) {
        Ok(free) => (Some(free), free < min_free_bytes),
        Err(error) => {
            tracing::debug!(%error, home = %home.display(), "cannot measure free space");
            (None, false)
        }
    }
}

/// Starts the housekeeping task; it ends when the daemon shuts down.
pub fn spawn(daemon: Arc<Daemon>) {
    tokio::spawn(async move {
        let home = daemon.options.home.clone();
        let spill_root = crate::config::spill_root(&home);
        let retention = Duration::from_secs(daemon.config.tools.spill_retention_secs);
        let threshold = daemon.config.storage.min_free_bytes;
        let mut was_low = false;
        let mut last_sweep: Option<Instant> = None;
        tokio::select! {
            () = daemon.shutdown.cancelled() => return,
            () = tokio::time::sleep(AFTER_START) => {}
        }
        loop {
            if last_sweep.is_none_or(|at| at.elapsed() >= SWEEP_PERIOD) {
                let root = spill_root.clone();
                let removed = tokio::task::spawn_blocking(move || spill::sweep(&root, retention))
                    .await
                    .unwrap_or_default();
                if removed > 0 {
                    tracing::info!(removed, "removed old command output files");
                }
                last_sweep = Some(Instant::now());
            }
            let (free, low) = disk_status(&home, threshold);
            if low && !was_low {
                let free_bytes = free.unwrap_or_default();
                tracing::warn!(free_bytes, threshold, home = %home.display(),
                    "low disk space on REIN_HOME");
                let _ = daemon.events.send(DaemonEvent::LowDiskSpace {
                    path: home.display().to_string(),
                    free_bytes,
                    threshold_bytes: threshold,
                });
            }
            was_low = low;
            tokio::select! {
                () = daemon.shutdown.cancelled() => return,
                () = tokio::time::sleep(DISK_CHECK_PERIOD) => {}
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_space_below_the_threshold_is_low() {
        let home = tempfile::tempdir().unwrap();
        let (free, low) = disk_status(home.path(), 0);
        assert!(free.is_some_and(|free| free > 0));
        assert!(!low);
        let (_, low) = disk_status(home.path(), u64::MAX);
        assert!(low);
    }
}
