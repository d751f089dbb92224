//! Checkpoints: snapshots of a project tree in a private git object store, and putting a tree
//! back.
//!
//! Each project directory gets a bare repository under `REIN_HOME/checkpoints/<key>` (the key is
//! a hash of the directory's path); each session keeps its own index file there, so snapshots
//! of one session reuse the stat data of its previous one and only hash what changed. The
//! `git` command line does the work with `GIT_DIR`, `GIT_WORK_TREE` and `GIT_INDEX_FILE` set to
//! those private paths, so the user's repository, index and history are never touched, and a
//! directory that is not a git repository works the same.
//!
//! What a snapshot holds: every file git would see in the directory, honouring `.gitignore`
//! files (and git's default global excludes file), never `.git` directories. Nested
//! repositories are left out. A file larger than `max_file_bytes` is left out and reported; when
//! the files a snapshot has to read (new or changed since the session's previous snapshot) add
//! up to more than `max_snapshot_bytes`, no snapshot is taken and the turn cannot be undone.

mod git;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use rein_protocol::checkpoint::{FileChange, FileChangeKind, SkippedFile};
use serde::Deserialize;
use sha2::{Digest, Sha256};

use git::{Git, is_initialized, nul_list, split_nul};

/// Files larger than this are left out of snapshots unless configured otherwise (10 MiB).
pub const DEFAULT_MAX_FILE_BYTES: u64 = 10 * 1024 * 1024;
/// A snapshot that has to read more than this is not taken unless configured otherwise
/// (256 MiB).
pub const DEFAULT_MAX_SNAPSHOT_BYTES: u64 = 256 * 1024 * 1024;

/// `[checkpoints]` in the configuration, plus where the stores live.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckpointSettings {
    /// Whether turns are snapshotted at all.
    #[serde(default = "default_enabled")]
    pub enabled: bool,
    /// Files larger than this many bytes are left out (and reported).
    #[serde(default = "default_max_file_bytes")]
    pub max_file_bytes: u64,
    /// A snapshot that must read more than this many bytes of new or changed files is not
    /// taken (and reported).
    #[serde(default = "default_max_snapshot_bytes")]
    pub max_snapshot_bytes: u64,
    /// The directory holding one store per project (`REIN_HOME/checkpoints`); no checkpoints
    /// when unset.
    #[serde(skip)]
    pub root: Option<PathBuf>,
}

fn default_enabled() -> bool {
    true
}

fn default_max_file_bytes() -> u64 {
    DEFAULT_MAX_FILE_BYTES
}

fn default_max_snapshot_bytes() -> u64 {
    DEFAULT_MAX_SNAPSHOT_BYTES
}

impl Default for CheckpointSettings {
    fn default() -> Self {
        Self {
            enabled: true,
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
            max_snapshot_bytes: DEFAULT_MAX_SNAPSHOT_BYTES,
            root: None,
        }
    }
}

/// Why a checkpoint operation failed.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// `git` could not be started (not installed?).
    #[error("cannot run git (is it installed?): {source}")]
    Spawn {
        /// The cause.
        source: std::io::Error,
    },
    /// A `git` command failed.
    #[error("git {command} failed: {stderr}")]
    Git {
        /// The subcommand.
        command: String,
        /// What it printed on standard error.
        stderr: String,
    },
    /// The snapshot cap was hit.
    #[error(
        "not snapshotted: {bytes} bytes of new or changed files exceed the snapshot cap of {cap} \
         bytes (checkpoints.max_snapshot_bytes)"
    )]
    TooLarge {
        /// Bytes the snapshot would have read.
        bytes: u64,
        /// The cap.
        cap: u64,
    },
    /// A file system operation failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// A snapshot: the tree object and the files left out of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// The git tree id.
    pub tree: String,
    /// Files left out for their size.
    pub skipped: Vec<SkippedFile>,
}

/// What [`CheckpointStore::restore`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Restored {
    /// Files written back from the snapshot.
    pub restored: Vec<String>,
    /// Files removed (they were not in the snapshot).
    pub removed: Vec<String>,
}

/// The store of one project as one session uses it.
#[derive(Debug, Clone)]
pub struct CheckpointStore {
    git: Git,
    max_file_bytes: u64,
    max_snapshot_bytes: u64,
    reference: String,
}

/// The store directory of project `cwd` under `root`.
pub fn store_dir(root: &Path, cwd: &Path) -> PathBuf {
    let digest = Sha256::digest(cwd.as_os_str().as_encoded_bytes());
    let key: String = digest.iter().take(12).map(|b| format!("{b:02x}")).collect();
    root.join(key)
}

impl CheckpointStore {
    /// The store of `cwd` for session `session_id`, created on first use. `None` when
    /// checkpoints are off.
    pub async fn open(
        settings: &CheckpointSettings,
        cwd: &Path,
        session_id: &str,
    ) -> Result<Option<Self>, CheckpointError> {
        let Some(root) = settings.root.as_ref().filter(|_| settings.enabled) else {
            return Ok(None);
        };
        let git_dir = store_dir(root, cwd);
        let index_name: String =
            session_id.chars().filter(|c| c.is_ascii_alphanumeric() || *c == '-').collect();
        let git = Git {
            index: git_dir.join("indexes").join(&index_name),
            git_dir,
            work_tree: cwd.to_path_buf(),
        };
        if !is_initialized(&git.git_dir) {
            private_dir(&git.git_dir)?;
            git.init().await?;
            private_dir(&git.git_dir.join("info"))?;
            private_dir(&git.git_dir.join("indexes"))?;
            write_private(&git.git_dir.join("info").join("path"), format!("{}\n", cwd.display()))?;
            // Highest-precedence attributes: no filters, no line-ending or encoding
            // conversion, whatever the project's .gitattributes say. Written last: its presence
            // marks a finished setup.
            write_private(
                &git.git_dir.join("info").join("attributes"),
                "* -text -filter -ident !eol !working-tree-encoding\n",
            )?;
        }
        std::fs::create_dir_all(git.git_dir.join("indexes"))?;
        Ok(Some(Self {
            git,
            max_file_bytes: settings.max_file_bytes,
            max_snapshot_bytes: settings.max_snapshot_bytes,
            reference: format!("refs/rein/sessions/{index_name}"),
        }))
    }

    /// Snapshots the work tree: brings the session's index up to date with the files that
    /// changed since its last snapshot and writes the tree. Callers must not run two
    /// snapshots of one session at once (they share its index).
    pub async fn snapshot(&self) -> Result<Snapshot, CheckpointError> {
        self.snapshot_with(&self.git).await
    }

    async fn snapshot_with(&self, git: &Git) -> Result<Snapshot, CheckpointError> {
        // Snapshots of one index are serialized by the caller, so a lock file found now was
        // left by a git process that was killed (a cancelled turn): it would block every
        // later snapshot.
        let mut lock = git.index.clone().into_os_string();
        lock.push(".lock");
        match std::fs::remove_file(&lock) {
            Ok(()) => tracing::debug!(index = %git.index.display(), "removed a stale index lock"),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(error.into()),
        }
        let listed = git
            .run(
                &["ls-files", "-z", "--others", "--modified", "--deleted", "--exclude-standard"],
                &[],
            )
            .await?;
        let mut update = BTreeSet::new();
        let mut drop = BTreeSet::new();
        let mut skipped = Vec::new();
        let mut bytes = 0_u64;
        for path in split_nul(&listed) {
            if path.ends_with('/') {
                // A nested repository: not part of snapshots.
                continue;
            }
            match std::fs::symlink_metadata(git.work_tree.join(&path)) {
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                    update.insert(path);
                }
                Err(error) => return Err(error.into()),
                Ok(meta) if meta.is_dir() => {
                    drop.insert(path);
                }
                Ok(meta) if meta.is_file() && meta.len() > self.max_file_bytes => {
                    skipped.push(SkippedFile { path: path.clone(), bytes: meta.len() });
                    drop.insert(path);
                }
                Ok(meta) => {
                    bytes += meta.len();
                    update.insert(path);
                }
            }
        }
        if bytes > self.max_snapshot_bytes {
            return Err(CheckpointError::TooLarge { bytes, cap: self.max_snapshot_bytes });
        }
        if !update.is_empty() {
            let input = nul_list(update.iter().map(String::as_str));
            git.run(&["update-index", "--add", "--remove", "--replace", "-z", "--stdin"], &input)
                .await?;
        }
        if !drop.is_empty() {
            let input = nul_list(drop.iter().map(String::as_str));
            git.run(&["update-index", "--force-remove", "-z", "--stdin"], &input).await?;
        }
        let tree = git.run_line(&["write-tree"]).await?;
        Ok(Snapshot { tree, skipped })
    }

    /// Keeps trees reachable in the store (a commit chain under the session's ref), so a
    /// future clean-up of the store cannot drop them.
    pub async fn keep(&self, trees: &[&str], message: &str) -> Result<(), CheckpointError> {
        let mut parent =
            self.git.run_line(&["rev-parse", "--verify", "--quiet", &self.reference]).await.ok();
        for tree in trees {
            let mut args = vec!["commit-tree", *tree, "-m", message];
            if let Some(parent) = parent.as_deref().filter(|p| !p.is_empty()) {
                args.push("-p");
                args.push(parent);
            }
            let commit = self.git.run_line(&args).await?;
            parent = Some(commit);
        }
        if let Some(commit) = parent.filter(|c| !c.is_empty()) {
            self.git.run(&["update-ref", &self.reference, &commit], &[]).await?;
        }
        Ok(())
    }

    /// The files that differ between two trees.
    pub async fn changes(&self, from: &str, to: &str) -> Result<Vec<FileChange>, CheckpointError> {
        Ok(self.raw_changes(from, to).await?.into_iter().map(|raw| raw.change).collect())
    }

    /// Paths that differ between two trees.
    pub async fn changed_paths(
        &self,
        from: &str,
        to: &str,
    ) -> Result<BTreeSet<String>, CheckpointError> {
        Ok(self.raw_changes(from, to).await?.into_iter().map(|raw| raw.change.path).collect())
    }

    async fn raw_changes(&self, from: &str, to: &str) -> Result<Vec<RawChange>, CheckpointError> {
        if from == to {
            return Ok(Vec::new());
        }
        let out = self
            .git
            .run(
                &["diff-tree", "-r", "-z", "--raw", "--no-renames", "--no-ext-diff", from, to],
                &[],
            )
            .await?;
        Ok(parse_raw(&out))
    }

    /// The difference of two trees as a unified diff.
    pub async fn patch(&self, from: &str, to: &str) -> Result<String, CheckpointError> {
        if from == to {
            return Ok(String::new());
        }
        let out = self
            .git
            .run(
                &["diff-tree", "-r", "-p", "--no-renames", "--no-ext-diff", "--no-color", from, to],
                &[],
            )
            .await?;
        Ok(String::from_utf8_lossy(&out).into_owned())
    }

    /// Puts the work tree back to `target` from `current` (a snapshot just taken): files that
    /// differ are written from `target`, files `target` does not have are removed (and
    /// directories left empty by that). Files outside snapshots (ignored, too large) are not
    /// touched.
    pub async fn restore(&self, target: &str, current: &str) -> Result<Restored, CheckpointError> {
        let changes = self.raw_changes(target, current).await?;
        let mut restored = Vec::new();
        let mut removed = Vec::new();
        for raw in changes {
            match raw.change.change {
                FileChangeKind::Added if raw.new_mode != "160000" => removed.push(raw.change.path),
                FileChangeKind::Added => {}
                FileChangeKind::Modified | FileChangeKind::Deleted if raw.old_mode == "160000" => {}
                FileChangeKind::Modified | FileChangeKind::Deleted => {
                    restored.push(raw.change.path)
                }
            }
        }
        for path in &removed {
            let full = self.git.work_tree.join(path);
            match std::fs::remove_file(&full) {
                Ok(()) => {}
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                Err(error) => return Err(error.into()),
            }
            self.remove_empty_parents(&full);
        }
        if !restored.is_empty() {
            let scratch =
                self.git.git_dir.join("indexes").join(format!("restore-{}", uuid::Uuid::now_v7()));
            let staged = self.git.with_index(scratch.clone());
            let result = async {
                staged.run(&["read-tree", target], &[]).await?;
                let input = nul_list(restored.iter().map(String::as_str));
                staged.run(&["checkout-index", "-f", "-z", "--stdin"], &input).await
            }
            .await;
            let _ = std::fs::remove_file(&scratch);
            result?;
        }
        Ok(Restored { restored, removed })
    }

    /// Removes the directories above `path` that are left empty, up to the work tree.
    fn remove_empty_parents(&self, path: &Path) {
        let mut dir = path.parent();
        while let Some(current) = dir {
            if current == self.git.work_tree || !current.starts_with(&self.git.work_tree) {
                break;
            }
            if std::fs::remove_dir(current).is_err() {
                break;
            }
            dir = current.parent();
        }
    }
}

/// One line of `diff-tree --raw`.
struct RawChange {
    old_mode: String,
    new_mode: String,
    change: FileChange,
}

/// Parses `diff-tree -z --raw` output: `:oldmode newmode oldsha newsha STATUS\0path\0`.
fn parse_raw(out: &[u8]) -> Vec<RawChange> {
    let parts = split_nul(out);
    let mut changes = Vec::new();
    let mut iter = parts.into_iter();
    while let Some(meta) = iter.next() {
        let Some(path) = iter.next() else { break };
        let fields: Vec<&str> = meta.trim_start_matches(':').split(' ').collect();
        let (Some(old_mode), Some(new_mode), Some(status)) =
            (fields.first(), fields.get(1), fields.get(4))
        else {
            continue;
        };
        let change = match status.chars().next() {
            Some('A') => FileChangeKind::Added,
            Some('D') => FileChangeKind::Deleted,
            _ => FileChangeKind::Modified,
        };
        changes.push(RawChange {
            old_mode: old_mode.to_string(),
            new_mode: new_mode.to_string(),
            change: FileChange { path, change },
        });
    }
    changes
}

#[cfg(test)]
mod tests;

/// Creates `dir` and its missing parents, owner only (the stores live under `REIN_HOME`).
fn private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)
}

/// Writes `contents` to a file only its owner may read.
fn write_private(path: &Path, contents: impl AsRef<[u8]>) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(contents.as_ref())
}
