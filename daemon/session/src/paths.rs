//! Where session files live: `<root>/sessions/<project dir name>/<session id>.jsonl`.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// The extension of session files.
pub const SESSION_EXTENSION: &str = "jsonl";

/// Longest readable part of a project directory name, in bytes (the hash is added after it).
const MAX_READABLE_LEN: usize = 80;

/// The directory holding all project directories under a storage root.
pub fn sessions_dir(root: &Path) -> PathBuf {
    root.join("sessions")
}

/// A directory name for a project directory: the path with every character outside
/// `[A-Za-z0-9._-]` replaced by `-` (keeping the last 80 bytes), then `-` and the first 8 hex
/// digits of the SHA-256 of the full path, so two paths that read alike never share a directory.
pub fn project_dir_name(cwd: &str) -> String {
    let readable: String = cwd
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') { c } else { '-' })
        .collect();
    let readable = readable.trim_matches('-');
    let readable = &readable[readable.len().saturating_sub(MAX_READABLE_LEN)..];
    let readable = readable.trim_start_matches('.');
    let digest = Sha256::digest(cwd.as_bytes());
    let hash: String = digest.iter().take(4).map(|b| format!("{b:02x}")).collect();
    if readable.is_empty() { format!("root-{hash}") } else { format!("{readable}-{hash}") }
}

/// The file of one session.
pub fn session_file(root: &Path, cwd: &str, session_id: &str) -> PathBuf {
    sessions_dir(root).join(project_dir_name(cwd)).join(format!("{session_id}.{SESSION_EXTENSION}"))
}

/// The lock file beside a session file. The lock lives in its own file so that rewriting the
/// session file (temp file and rename) never changes the inode that is locked.
pub fn lock_file(session_file: &Path) -> PathBuf {
    with_suffix(session_file, ".lock")
}

/// The sidecar file that keeps lines skipped as corrupt.
pub fn corrupt_file(session_file: &Path) -> PathBuf {
    with_suffix(session_file, ".corrupt")
}

/// Where a file found in place of a loaded session's file is moved before the session's own
/// content is written back (`stamp` keeps several such files apart).
pub fn replaced_file(session_file: &Path, stamp: &str) -> PathBuf {
    with_suffix(session_file, &format!(".replaced-{stamp}"))
}

/// The temporary file a rewrite goes through (same directory, so the rename is atomic).
pub fn temp_file(session_file: &Path) -> PathBuf {
    with_suffix(session_file, ".tmp")
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn project_names_are_safe_and_distinct() {
        let a = project_dir_name("/home/me/my project");
        let b = project_dir_name("/home/me/my-project");
        assert!(a.starts_with("home-me-my-project-"), "{a}");
        assert_ne!(a, b);
        for cwd in ["/", "", "C:\\Users\\x", "/../..", "/a/\u{e9}t\u{e9}/\n", "/x/.hidden"] {
            let name = project_dir_name(cwd);
            assert!(!name.is_empty());
            assert!(!name.starts_with('.'), "{name}");
            assert!(
                name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')),
                "{name}"
            );
        }
        assert_eq!(project_dir_name("/a/b"), project_dir_name("/a/b"));
    }

    #[test]
    fn long_paths_are_shortened() {
        let long = format!("/{}", "segment/".repeat(50));
        assert!(project_dir_name(&long).len() <= MAX_READABLE_LEN + 9);
    }

    #[test]
    fn sidecars_sit_beside_the_file() {
        let file = Path::new("/r/sessions/p/abc.jsonl");
        assert_eq!(lock_file(file), Path::new("/r/sessions/p/abc.jsonl.lock"));
        assert_eq!(corrupt_file(file), Path::new("/r/sessions/p/abc.jsonl.corrupt"));
        assert_eq!(temp_file(file), Path::new("/r/sessions/p/abc.jsonl.tmp"));
    }
}
