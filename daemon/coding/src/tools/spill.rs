//! Spill files: the files that keep the full output of a command too long for its tool result
//! (`$REIN_HOME/tmp/bash-output/<session id>/bash-*.log`).
//!
//! They live on the disk the sessions live on, so they are bounded: each file stops growing at
//! [`SpillLimits::max_bytes`] (`tools.spill_max_bytes`), none is started or grown while the
//! file system has less than [`SpillLimits::min_free_bytes`] free (`storage.min_free_bytes`),
//! a session's files are removed with the session, and files older than the retention
//! period (`tools.spill_retention_secs`) are removed by the daemon's sweep. The tool result
//! says where the output went, the cap, and why a file was cut short or not written.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// How much a spill file may hold, and how much free space must remain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpillLimits {
    /// The most bytes one spill file keeps (the first ones the command printed).
    pub max_bytes: u64,
    /// No spill file is started or grown while its file system has less free than this.
    pub min_free_bytes: u64,
}

/// Default of `tools.spill_max_bytes`: 100 MiB.
pub const DEFAULT_SPILL_MAX_BYTES: u64 = 100 * 1024 * 1024;
/// Default of `storage.min_free_bytes`: 256 MiB.
pub const DEFAULT_MIN_FREE_BYTES: u64 = 256 * 1024 * 1024;
/// Default of `tools.spill_retention_secs`: 7 days.
pub const DEFAULT_SPILL_RETENTION: Duration = Duration::from_secs(7 * 24 * 60 * 60);
/// Free space is checked again each time a spill file grew by this much.
pub(crate) const FREE_SPACE_CHECK_BYTES: u64 = 1024 * 1024;

impl Default for SpillLimits {
    fn default() -> Self {
        Self { max_bytes: DEFAULT_SPILL_MAX_BYTES, min_free_bytes: DEFAULT_MIN_FREE_BYTES }
    }
}

/// Bytes available to unprivileged users on the file system holding `path` (or its nearest
/// existing ancestor, for a directory not created yet).
pub fn free_bytes(path: &Path) -> std::io::Result<u64> {
    let mut probe = path;
    while !probe.exists() {
        match probe.parent() {
            Some(parent) => probe = parent,
            None => break,
        }
    }
    let stats = nix::sys::statvfs::statvfs(probe).map_err(std::io::Error::from)?;
    Ok(stats.blocks_available().saturating_mul(stats.fragment_size()))
}

/// Whether a spill may start or grow by `next` bytes in `dir`: `Err` says why not.
pub(crate) fn room_for(dir: &Path, next: u64, limits: SpillLimits) -> Result<(), String> {
    match free_bytes(dir) {
        Ok(free) if free >= limits.min_free_bytes.saturating_add(next) => Ok(()),
        Ok(free) => Err(format!(
            "only {free} bytes free on the file system of {}, below the {} kept free \
             (storage.min_free_bytes)",
            dir.display(),
            limits.min_free_bytes
        )),
        Err(error) => Err(format!("cannot measure free space in {}: {error}", dir.display())),
    }
}

/// The directory of one session's spill files under the daemon's spill root.
pub fn session_dir(root: &Path, session_id: &str) -> PathBuf {
    root.join(session_id)
}

/// Removes one session's spill files (when the session is deleted). An id that is not a plain
/// name (letters, digits, `-`, `_`) names no session directory and removes nothing.
pub fn remove_session(root: &Path, session_id: &str) -> std::io::Result<()> {
    let plain = !session_id.is_empty()
        && session_id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !plain {
        return Ok(());
    }
    match std::fs::remove_dir_all(session_dir(root, session_id)) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => Err(error),
        _ => Ok(()),
    }
}

/// Removes spill files last modified more than `retention` ago, anywhere under `root` (one
/// directory level deep), and session directories left empty. Returns how many files went.
pub fn sweep(root: &Path, retention: Duration) -> usize {
    let now = SystemTime::now();
    let old = |path: &Path| {
        std::fs::symlink_metadata(path)
            .and_then(|meta| meta.modified())
            .is_ok_and(|modified| now.duration_since(modified).unwrap_or_default() > retention)
    };
    let mut removed = 0;
    let Ok(items) = std::fs::read_dir(root) else { return 0 };
    for item in items.flatten() {
        let path = item.path();
        let is_dir = item.file_type().is_ok_and(|t| t.is_dir());
        if !is_dir {
            if old(&path) && std::fs::remove_file(&path).is_ok() {
                removed += 1;
            }
            continue;
        }
        if let Ok(files) = std::fs::read_dir(&path) {
            for file in files.flatten() {
                let file = file.path();
                if old(&file) && std::fs::remove_file(&file).is_ok() {
                    removed += 1;
                }
            }
        }
        // Only an empty directory goes; a failure means something is still in it.
        let _ = std::fs::remove_dir(&path);
    }
    removed
}

/// The line a tool result gets about its spill file: where the full output went and its cap,
/// or why it was not kept in full.
pub(crate) fn describe(spill: &SpillOutcome) -> Option<String> {
    match spill {
        SpillOutcome::None => None,
        SpillOutcome::Complete { path, limit } => Some(format!(
            "Full output: {} (files are capped at {limit} bytes by tools.spill_max_bytes)",
            path.display()
        )),
        SpillOutcome::Cut { path, kept, reason } => Some(format!(
            "Full output cut short: {} holds only the first {kept} bytes ({reason})",
            path.display()
        )),
        SpillOutcome::NotWritten { reason } => Some(format!("Full output not saved: {reason}")),
    }
}

/// What became of a command's spill file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SpillOutcome {
    /// The output fit in the tool result; no file.
    None,
    /// The file holds the whole output.
    Complete {
        /// The file.
        path: PathBuf,
        /// The cap it stayed within.
        limit: u64,
    },
    /// The file holds the start of the output only.
    Cut {
        /// The file.
        path: PathBuf,
        /// Bytes it holds.
        kept: u64,
        /// Why it stopped (the cap, low free space, a write error).
        reason: String,
    },
    /// No file could be written.
    NotWritten {
        /// Why.
        reason: String,
    },
}

impl SpillOutcome {
    /// The file, when there is one.
    pub(crate) fn path(&self) -> Option<&Path> {
        match self {
            Self::Complete { path, .. } | Self::Cut { path, .. } => Some(path),
            Self::None | Self::NotWritten { .. } => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweep_removes_old_files_and_empty_dirs_only() {
        let dir = tempfile::tempdir().unwrap();
        let session = session_dir(dir.path(), "s1");
        std::fs::create_dir_all(&session).unwrap();
        std::fs::write(session.join("bash-a.log"), "old").unwrap();
        let other = session_dir(dir.path(), "s2");
        std::fs::create_dir_all(&other).unwrap();
        std::fs::write(other.join("bash-b.log"), "new").unwrap();
        // Nothing is older than an hour yet.
        assert_eq!(sweep(dir.path(), Duration::from_secs(3600)), 0);
        assert!(session.join("bash-a.log").exists());
        // With no retention at all, everything modified before now is old.
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(sweep(dir.path(), Duration::ZERO), 2);
        assert!(!session.exists() && !other.exists());
    }

    #[test]
    fn removing_a_session_takes_its_directory() {
        let dir = tempfile::tempdir().unwrap();
        let session = session_dir(dir.path(), "s1");
        std::fs::create_dir_all(&session).unwrap();
        std::fs::write(session.join("bash-a.log"), "x").unwrap();
        remove_session(dir.path(), "s1").unwrap();
        assert!(!session.exists());
        remove_session(dir.path(), "never").unwrap();
        remove_session(&session, "..").unwrap();
        assert!(dir.path().exists());
    }

    #[test]
    fn free_space_is_measured_and_checked() {
        let dir = tempfile::tempdir().unwrap();
        let free = free_bytes(&dir.path().join("not").join("yet")).unwrap();
        assert!(free > 0);
        let limits = SpillLimits { max_bytes: 1, min_free_bytes: u64::MAX / 2 };
        let refused = room_for(dir.path(), 1, limits).unwrap_err();
        assert!(refused.contains("storage.min_free_bytes"), "{refused}");
        let limits = SpillLimits { max_bytes: 1, min_free_bytes: 0 };
        assert_eq!(room_for(dir.path(), 1, limits), Ok(()));
    }
}
