//! What the model last saw of each file, so an edit never lands on content it has not read.
//!
//! `read`, `write` and `edit` record a stamp (modification time, size, content hash) for every
//! file they touch. Before `edit` writes, it compares the file on disk with the stamp; if
//! someone else (the user, a formatter, another session) changed it in between, the edit is
//! refused and the model is told to read the file again. A file the model never read in this
//! session has no stamp and is not checked: the exact-text match of `edit` still guards it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use sha2::{Digest, Sha256};

use crate::paths;

/// What the model last saw of one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileStamp {
    /// Modification time at that moment, when the platform reports one.
    pub mtime: Option<SystemTime>,
    /// Size in bytes.
    pub size: u64,
    /// SHA-256 of the content.
    pub hash: [u8; 32],
}

impl FileStamp {
    /// The stamp of `content` as it now sits at `path`.
    pub fn of(path: &Path, content: &[u8]) -> Self {
        Self::with_hash(path, content.len() as u64, content_hash(content))
    }

    /// A stamp from a hash computed elsewhere (for example while streaming a large file).
    pub fn with_hash(path: &Path, size: u64, hash: [u8; 32]) -> Self {
        let mtime = std::fs::metadata(path).and_then(|meta| meta.modified()).ok();
        Self { mtime, size, hash }
    }
}

/// SHA-256 of some bytes.
pub fn content_hash(content: &[u8]) -> [u8; 32] {
    Sha256::digest(content).into()
}

/// The file differs from what the model last saw.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{path} changed on disk since you last read it (it was {old_size} bytes, now {new_size}); \
     read it again before editing"
)]
pub struct FileChanged {
    /// The file.
    pub path: String,
    /// Its size when the model last saw it.
    pub old_size: u64,
    /// Its size now.
    pub new_size: u64,
}

/// The per-session record of file stamps. Cheap to clone; clones share the record.
#[derive(Debug, Clone, Default)]
pub struct FileTracker {
    seen: Arc<Mutex<HashMap<PathBuf, FileStamp>>>,
}

impl FileTracker {
    /// An empty record.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records what the model now knows of `path`.
    pub fn record(&self, path: &Path, stamp: FileStamp) {
        self.map().insert(paths::canonical_key(path), stamp);
    }

    /// The last stamp of `path`, if any.
    pub fn get(&self, path: &Path) -> Option<FileStamp> {
        self.map().get(&paths::canonical_key(path)).cloned()
    }

    /// Drops what is known of `path`.
    pub fn forget(&self, path: &Path) {
        self.map().remove(&paths::canonical_key(path));
    }

    /// Checks that `current` (the file's content now) is what the model last saw. A file with
    /// no stamp passes. Only the content counts: a file whose modification time moved but whose
    /// bytes are the same (touched, or rewritten identically) passes.
    pub fn check(&self, path: &Path, current: &[u8]) -> Result<(), FileChanged> {
        let Some(stamp) = self.get(path) else { return Ok(()) };
        let size = current.len() as u64;
        if stamp.size == size && stamp.hash == content_hash(current) {
            return Ok(());
        }
        Err(FileChanged { path: path.display().to_string(), old_size: stamp.size, new_size: size })
    }

    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, FileStamp>> {
        self.seen.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unseen_files_pass_and_seen_files_must_match() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.txt");
        std::fs::write(&path, "one").unwrap();
        let tracker = FileTracker::new();
        assert!(tracker.check(&path, b"anything").is_ok());

        tracker.record(&path, FileStamp::of(&path, b"one"));
        assert!(tracker.check(&path, b"one").is_ok());
        let err = tracker.check(&path, b"three").unwrap_err();
        assert_eq!((err.old_size, err.new_size), (3, 5));
        assert!(err.to_string().contains("read it again"));

        tracker.forget(&path);
        assert!(tracker.check(&path, b"three").is_ok());
    }

    #[test]
    fn clones_share_the_record_and_keys_are_canonical() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let path = dir.path().join("a.txt");
        std::fs::write(&path, "x").unwrap();
        let tracker = FileTracker::new();
        tracker.clone().record(&dir.path().join("sub/../a.txt"), FileStamp::of(&path, b"x"));
        assert_eq!(tracker.get(&path).map(|s| s.size), Some(1));
    }
}
