//! The store of project directories the user trusts.
//!
//! A repository can carry files that steer the agent: `AGENTS.md`, skills, a
//! `.rein/config.toml`. Someone else wrote them, so they enter the prompt only once the user
//! has trusted the directory. Trusting a directory trusts everything below it. The store is
//! one JSON file (`trust.json` in the directory it is opened on), replaced atomically on every
//! change.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

use serde::{Deserialize, Serialize};

use crate::atomic::write_atomic;
use crate::paths;

/// The store's file name inside its directory.
pub const TRUST_FILE_NAME: &str = "trust.json";

/// The current layout of the store file.
const FORMAT_VERSION: u32 = 1;

/// A failure to load or save the store.
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    /// The file exists but cannot be read.
    #[error("cannot read the trust store {path}: {source}")]
    Read {
        /// The store file.
        path: PathBuf,
        /// What went wrong.
        source: std::io::Error,
    },
    /// The file is not a trust store.
    #[error("the trust store {path} is damaged: {source}")]
    Parse {
        /// The store file.
        path: PathBuf,
        /// What went wrong.
        source: serde_json::Error,
    },
    /// The file cannot be written.
    #[error("cannot save the trust store {path}: {source}")]
    Write {
        /// The store file.
        path: PathBuf,
        /// What went wrong.
        source: std::io::Error,
    },
}

#[derive(Debug, Serialize, Deserialize)]
struct TrustFile {
    version: u32,
    trusted: Vec<PathBuf>,
}

/// The trusted directories, loaded from and saved to one file. Safe to share between
/// sessions; each change is saved before it returns.
#[derive(Debug)]
pub struct TrustStore {
    file: PathBuf,
    trusted: Mutex<BTreeSet<PathBuf>>,
}

impl TrustStore {
    /// Opens the store kept in `dir` (for example `$REIN_HOME`). A missing file is an empty
    /// store; the file and the directory are created on the first change.
    pub fn open(dir: &Path) -> Result<Self, TrustError> {
        let file = dir.join(TRUST_FILE_NAME);
        let trusted = match std::fs::read(&file) {
            Ok(bytes) => {
                let parsed: TrustFile = serde_json::from_slice(&bytes)
                    .map_err(|source| TrustError::Parse { path: file.clone(), source })?;
                parsed.trusted.into_iter().collect()
            }
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => BTreeSet::new(),
            Err(source) => return Err(TrustError::Read { path: file, source }),
        };
        Ok(Self { file, trusted: Mutex::new(trusted) })
    }

    /// The file the store is kept in.
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// Trusts `dir` and everything below it.
    pub fn trust(&self, dir: &Path) -> Result<(), TrustError> {
        let key = directory_key(dir);
        let mut trusted = self.entries();
        if trusted.contains(&key) {
            return Ok(());
        }
        let mut changed = trusted.clone();
        changed.insert(key);
        self.save(&changed)?;
        *trusted = changed;
        tracing::info!(dir = %dir.display(), "project trusted");
        Ok(())
    }

    /// Withdraws trust from `dir` and from any directory below it that was trusted on its own.
    /// Returns the entries removed. A directory trusted through a trusted ancestor stays
    /// trusted; revoke the ancestor for that.
    pub fn revoke(&self, dir: &Path) -> Result<Vec<PathBuf>, TrustError> {
        let key = directory_key(dir);
        let mut trusted = self.entries();
        let (removed, kept): (BTreeSet<PathBuf>, BTreeSet<PathBuf>) =
            trusted.iter().cloned().partition(|entry| entry.starts_with(&key));
        if removed.is_empty() {
            return Ok(Vec::new());
        }
        self.save(&kept)?;
        *trusted = kept;
        tracing::info!(dir = %dir.display(), "project trust revoked");
        Ok(removed.into_iter().collect())
    }

    /// Whether `path` is a trusted directory or lies below one.
    pub fn is_trusted(&self, path: &Path) -> bool {
        let key = directory_key(path);
        self.entries().iter().any(|entry| key.starts_with(entry))
    }

    /// The trusted directories, sorted.
    pub fn list(&self) -> Vec<PathBuf> {
        self.entries().iter().cloned().collect()
    }

    fn entries(&self) -> MutexGuard<'_, BTreeSet<PathBuf>> {
        self.trusted.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn save(&self, trusted: &BTreeSet<PathBuf>) -> Result<(), TrustError> {
        let file =
            TrustFile { version: FORMAT_VERSION, trusted: trusted.iter().cloned().collect() };
        let write = |source| TrustError::Write { path: self.file.clone(), source };
        let mut bytes = serde_json::to_vec_pretty(&file).map_err(|e| write(e.into()))?;
        bytes.push(b'\n');
        write_atomic(&self.file, &bytes).map_err(write)
    }
}

/// The form a directory is stored and compared in: absolute, symlinks resolved when it
/// exists, `.` and `..` folded.
fn directory_key(dir: &Path) -> PathBuf {
    let absolute = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    dir.canonicalize().unwrap_or_else(|_| paths::normalize(&absolute))
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Dirs {
        _temp: tempfile::TempDir,
        home: PathBuf,
        project: PathBuf,
    }

    fn dirs() -> Dirs {
        let temp = tempfile::tempdir().unwrap();
        let root = temp.path().canonicalize().unwrap();
        let project = root.join("work/project");
        std::fs::create_dir_all(project.join("sub/deeper")).unwrap();
        Dirs { _temp: temp, home: root.join("rein-home"), project }
    }

    #[test]
    fn trust_and_revoke() {
        let d = dirs();
        let store = TrustStore::open(&d.home).unwrap();
        assert!(!store.is_trusted(&d.project));
        store.trust(&d.project).unwrap();
        assert!(store.is_trusted(&d.project));
        assert_eq!(store.list(), vec![d.project.clone()]);
        assert_eq!(store.revoke(&d.project).unwrap(), vec![d.project.clone()]);
        assert!(!store.is_trusted(&d.project));
        assert!(store.list().is_empty());
        assert!(store.revoke(&d.project).unwrap().is_empty());
    }

    #[test]
    fn a_trusted_directory_trusts_its_subdirectories_only() {
        let d = dirs();
        let store = TrustStore::open(&d.home).unwrap();
        store.trust(&d.project).unwrap();
        assert!(store.is_trusted(&d.project.join("sub/deeper")));
        assert!(store.is_trusted(&d.project.join("sub/./deeper/..")));
        assert!(!store.is_trusted(d.project.parent().unwrap()));
        // A sibling whose name merely starts the same is not below it.
        let sibling = d.project.with_file_name("project-other");
        std::fs::create_dir_all(&sibling).unwrap();
        assert!(!store.is_trusted(&sibling));
    }

    #[test]
    fn revoking_a_directory_revokes_entries_below_it() {
        let d = dirs();
        let store = TrustStore::open(&d.home).unwrap();
        store.trust(&d.project.join("sub")).unwrap();
        store.trust(&d.project.join("sub/deeper")).unwrap();
        let removed = store.revoke(&d.project).unwrap();
        assert_eq!(removed.len(), 2);
        assert!(!store.is_trusted(&d.project.join("sub/deeper")));
    }

    #[test]
    fn trust_persists_across_instances() {
        let d = dirs();
        {
            let store = TrustStore::open(&d.home).unwrap();
            store.trust(&d.project).unwrap();
            store.trust(&d.project.join("sub")).unwrap();
        }
        let reopened = TrustStore::open(&d.home).unwrap();
        assert!(reopened.is_trusted(&d.project.join("sub/deeper")));
        assert_eq!(reopened.list().len(), 2);
        reopened.revoke(&d.project.join("sub")).unwrap();
        let again = TrustStore::open(&d.home).unwrap();
        assert_eq!(again.list(), vec![d.project.clone()]);
        let text = std::fs::read_to_string(d.home.join(TRUST_FILE_NAME)).unwrap();
        assert!(text.contains("\"version\": 1"), "{text}");
    }

    #[test]
    fn symlinked_paths_resolve_to_the_same_directory() {
        let d = dirs();
        let link = d.project.with_file_name("link");
        std::os::unix::fs::symlink(&d.project, &link).unwrap();
        let store = TrustStore::open(&d.home).unwrap();
        store.trust(&link).unwrap();
        assert!(store.is_trusted(&d.project.join("sub")));
    }

    #[test]
    fn a_damaged_store_is_an_error() {
        let d = dirs();
        std::fs::create_dir_all(&d.home).unwrap();
        std::fs::write(d.home.join(TRUST_FILE_NAME), "{not json").unwrap();
        let err = TrustStore::open(&d.home).unwrap_err();
        assert!(matches!(err, TrustError::Parse { .. }), "{err}");
    }
}
