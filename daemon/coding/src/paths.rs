//! Turning the paths a model writes into paths on disk.
//!
//! Models write paths relative to the project directory, absolute, or starting with `~`. Every
//! tool resolves them the same way here so they agree on which file is meant.

use std::path::{Component, Path, PathBuf};

/// Resolves `raw` against `cwd`: `~` and `~/...` expand to the home directory, absolute paths
/// stay as they are, anything else is joined to `cwd`. `.` and `..` are folded lexically so the
/// result reads cleanly in tool output; symlinks are not followed.
pub fn resolve(cwd: &Path, raw: &str) -> PathBuf {
    let expanded = expand_home(raw);
    let joined = if expanded.is_absolute() { expanded } else { cwd.join(expanded) };
    normalize(&joined)
}

/// Expands a leading `~` (alone or followed by `/`) to the home directory. Other paths, and
/// `~user` forms, are returned unchanged.
pub fn expand_home(raw: &str) -> PathBuf {
    let home = dirs::home_dir();
    match (raw, home) {
        ("~", Some(home)) => home,
        (_, Some(home)) if raw.starts_with("~/") => home.join(&raw[2..]),
        _ => PathBuf::from(raw),
    }
}

/// Folds `.` and `..` components without touching the file system. `..` at the root stays at
/// the root.
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push(component);
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// The path as the model should see it in output: relative to `cwd` when inside it, otherwise
/// absolute.
pub fn display(cwd: &Path, path: &Path) -> String {
    match path.strip_prefix(cwd) {
        Ok(relative) if relative.as_os_str().is_empty() => ".".to_string(),
        Ok(relative) => relative.display().to_string(),
        Err(_) => path.display().to_string(),
    }
}

/// A stable key for a file: the canonical path when the file (or, for a file not yet created,
/// its parent directory) exists, otherwise the lexically normalized path.
pub fn canonical_key(path: &Path) -> PathBuf {
    if let Ok(canonical) = path.canonicalize() {
        return canonical;
    }
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) => match parent.canonicalize() {
            Ok(parent) => parent.join(name),
            Err(_) => normalize(path),
        },
        _ => normalize(path),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_join_the_cwd() {
        assert_eq!(resolve(Path::new("/p"), "src/a.rs"), PathBuf::from("/p/src/a.rs"));
        assert_eq!(resolve(Path::new("/p"), "./src/../b.rs"), PathBuf::from("/p/b.rs"));
        assert_eq!(resolve(Path::new("/p"), "/etc/x"), PathBuf::from("/etc/x"));
        assert_eq!(resolve(Path::new("/"), "../../x"), PathBuf::from("/x"));
    }

    #[test]
    fn tilde_expands_to_home() {
        let home = dirs::home_dir().unwrap();
        assert_eq!(resolve(Path::new("/p"), "~"), home);
        assert_eq!(resolve(Path::new("/p"), "~/notes.md"), home.join("notes.md"));
        assert_eq!(resolve(Path::new("/p"), "~other"), PathBuf::from("/p/~other"));
    }

    #[test]
    fn display_is_relative_inside_the_cwd() {
        assert_eq!(display(Path::new("/p"), Path::new("/p/a/b")), "a/b");
        assert_eq!(display(Path::new("/p"), Path::new("/p")), ".");
        assert_eq!(display(Path::new("/p"), Path::new("/q/c")), "/q/c");
    }

    #[test]
    fn canonical_key_handles_missing_files() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let missing = dir.path().join("sub/../new.txt");
        assert_eq!(canonical_key(&missing), base.join("new.txt"));
    }
}
