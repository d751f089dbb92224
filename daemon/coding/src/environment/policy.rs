//! The file rules of an environment: which paths the tools' own file operations (not the
//! commands, which the sandbox confines) may read and write.
//!
//! Paths are compared after resolving symlinks and `..` of the part that exists, so a link
//! inside the project that points out of it is judged by where it points.

use std::io::{Error, ErrorKind};
use std::path::{Path, PathBuf};

/// What the file operations may touch. The default allows everything (the local environment).
#[derive(Debug, Clone, Default)]
pub struct FilePolicy {
    /// The name of the sandbox mode, for messages.
    mode: &'static str,
    /// Trees nothing reads (the daemon's `/proc`: its environment and memory).
    unreadable: Vec<PathBuf>,
    /// `None`: writes go anywhere. `Some`: only under these trees.
    writable: Option<Vec<PathBuf>>,
    /// Trees under the writable ones that stay read-only (`.git`, `.rein`).
    read_only: Vec<PathBuf>,
}

impl FilePolicy {
    /// Reads anywhere but `/proc`; writes nowhere.
    pub fn read_only(mode: &'static str) -> Self {
        Self {
            mode,
            unreadable: vec![PathBuf::from("/proc")],
            writable: Some(Vec::new()),
            read_only: Vec::new(),
        }
    }

    /// Reads anywhere but `/proc`; writes under `project` except its `.git` and `.rein`.
    pub fn workspace_write(mode: &'static str, project: &Path) -> Self {
        let project = resolve_existing(project);
        Self {
            mode,
            unreadable: vec![PathBuf::from("/proc")],
            read_only: vec![project.join(".git"), project.join(".rein")],
            writable: Some(vec![project]),
        }
    }

    /// Reads anywhere but `/proc`; writes under `project` (a container's mounted project).
    pub fn project_only(mode: &'static str, project: &Path) -> Self {
        Self {
            mode,
            unreadable: vec![PathBuf::from("/proc")],
            writable: Some(vec![resolve_existing(project)]),
            read_only: Vec::new(),
        }
    }

    /// True when some reads are refused.
    pub fn restricts_reads(&self) -> bool {
        !self.unreadable.is_empty()
    }

    /// `Ok` when `path` may be read; a `PermissionDenied` error saying why otherwise.
    pub fn check_read(&self, path: &Path) -> std::io::Result<()> {
        if self.unreadable.is_empty() {
            return Ok(());
        }
        let real = resolve_existing(path);
        match self.unreadable.iter().find(|tree| real.starts_with(tree)) {
            Some(tree) => Err(self.denied("read", path, &format!("{} is hidden", tree.display()))),
            None => Ok(()),
        }
    }

    /// `Ok` when `path` may be written; a `PermissionDenied` error saying why otherwise.
    pub fn check_write(&self, path: &Path) -> std::io::Result<()> {
        let Some(writable) = &self.writable else {
            return Ok(());
        };
        let real = resolve_existing(path);
        if let Some(tree) = self.read_only.iter().find(|tree| real.starts_with(tree)) {
            return Err(self.denied("write", path, &format!("{} is read-only", tree.display())));
        }
        if writable.iter().any(|tree| real.starts_with(tree)) {
            return Ok(());
        }
        let why = match writable.first() {
            Some(tree) => format!("only {} is writable", tree.display()),
            None => "nothing is writable".to_string(),
        };
        Err(self.denied("write", path, &why))
    }

    fn denied(&self, action: &str, path: &Path, why: &str) -> Error {
        Error::new(
            ErrorKind::PermissionDenied,
            format!(
                "the {} sandbox does not let tools {action} {} ({why})",
                self.mode,
                path.display()
            ),
        )
    }
}

/// `path` with symlinks and `..` resolved in its longest existing prefix, the rest appended
/// (normalized), so a file that does not exist yet is judged by where it would be created.
pub fn resolve_existing(path: &Path) -> PathBuf {
    let path = crate::paths::normalize(path);
    let mut existing = path.as_path();
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = existing.canonicalize() {
            return rest.iter().rev().fold(real, |acc: PathBuf, part| acc.join(part));
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                existing = parent;
            }
            _ => return path.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workspace_write_allows_the_project_but_not_git_rein_or_outside() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().canonicalize().unwrap().join("p");
        std::fs::create_dir_all(project.join(".git")).unwrap();
        std::fs::create_dir_all(dir.path().join("outside")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("outside"), project.join("out")).unwrap();
        let policy = FilePolicy::workspace_write("workspace-write", &project);
        assert!(policy.check_write(&project.join("src/new/deep.rs")).is_ok());
        for denied in [
            project.join(".git/hooks/pre-commit"),
            project.join(".rein/config.toml"),
            project.join("out/escaped.txt"),
            project.join("../outside/x"),
            PathBuf::from("/etc/passwd"),
        ] {
            let err = policy.check_write(&denied).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::PermissionDenied, "{}", denied.display());
            assert!(err.to_string().contains("workspace-write sandbox"), "{err}");
        }
        assert!(policy.check_read(&project.join("src")).is_ok());
        let err = policy.check_read(Path::new("/proc/self/environ")).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::PermissionDenied);
    }

    #[test]
    fn read_only_writes_nothing_and_default_allows_everything() {
        let policy = FilePolicy::read_only("read-only");
        assert!(policy.check_write(Path::new("/tmp/x")).is_err());
        let open = FilePolicy::default();
        assert!(open.check_write(Path::new("/tmp/x")).is_ok());
        assert!(open.check_read(Path::new("/proc/self/environ")).is_ok());
    }
}
