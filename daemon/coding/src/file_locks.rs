//! One lock per file across the whole daemon, so writes from different sessions never
//! interleave.
//!
//! `write` and `edit` hold the lock of their file from the moment they read it until the new
//! content is in place. Two sessions editing the same file are thereby serialized: the second
//! sees the first one's result (and, if it had read the file before, is told it changed).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use tokio::sync::OwnedMutexGuard;

use crate::paths;

/// Held while a file is being changed; dropping it releases the file.
pub type FileLockGuard = OwnedMutexGuard<()>;

/// The daemon-wide table of file locks. Cheap to clone; clones share the table. Entries for
/// files nobody holds are dropped as the table is used, so it does not grow without bound.
#[derive(Debug, Clone, Default)]
pub struct FileLocks {
    locks: Arc<Mutex<HashMap<PathBuf, Weak<tokio::sync::Mutex<()>>>>>,
}

impl FileLocks {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Waits for and takes the lock of `path` (keyed by its canonical path, so different
    /// spellings of one file share a lock).
    pub async fn lock(&self, path: &Path) -> FileLockGuard {
        let key = paths::canonical_key(path);
        let lock = {
            let mut table = self.locks.lock().unwrap_or_else(PoisonError::into_inner);
            table.retain(|_, weak| weak.strong_count() > 0);
            match table.get(&key).and_then(Weak::upgrade) {
                Some(lock) => lock,
                None => {
                    let lock = Arc::new(tokio::sync::Mutex::new(()));
                    table.insert(key, Arc::downgrade(&lock));
                    lock
                }
            }
        };
        lock.lock_owned().await
    }

    /// How many files currently have a live lock entry (held or awaited).
    pub fn len(&self) -> usize {
        let table = self.locks.lock().unwrap_or_else(PoisonError::into_inner);
        table.values().filter(|weak| weak.strong_count() > 0).count()
    }

    /// True when no file is locked or awaited.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn one_file_is_held_by_one_holder_at_a_time() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.txt");
        let locks = FileLocks::new();
        let guard = locks.lock(&path).await;
        let other_spelling = dir.path().join("./x/../f.txt");
        let mut waiting = Box::pin(locks.lock(&other_spelling));
        assert!(futures::poll!(&mut waiting).is_pending(), "held by the first guard");
        drop(guard);
        let second = waiting.await;
        drop(second);
        assert!(locks.is_empty());
    }

    #[tokio::test]
    async fn different_files_do_not_block_each_other() {
        let locks = FileLocks::new();
        let _a = locks.lock(Path::new("/tmp/rein-a")).await;
        let _b = locks.lock(Path::new("/tmp/rein-b")).await;
        assert_eq!(locks.len(), 2);
    }
}
