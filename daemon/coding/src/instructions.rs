//! Finding the project instruction files (`AGENTS.md`, or `CLAUDE.md` where a directory has
//! no `AGENTS.md`) that apply to a working directory.
//!
//! They come from the global config directory and from every directory between the repository
//! root and the working directory, outermost first, so the most specific instructions come
//! last and win where they disagree.

use std::path::{Path, PathBuf};

/// The instruction file names a directory is searched for, in order of preference.
pub const INSTRUCTION_FILE_NAMES: [&str; 2] = ["AGENTS.md", "CLAUDE.md"];

/// Where an instruction file or skill comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The user's global config: always used.
    Global,
    /// The project: used only when the project is trusted.
    Project,
}

/// One instruction file and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstructionFile {
    /// The file.
    pub path: PathBuf,
    /// Where it comes from.
    pub scope: Scope,
    /// Its content.
    pub content: String,
}

/// The nearest directory at or above `cwd` that holds a `.git` entry (a directory, or a file
/// in a worktree or submodule).
pub fn repo_root(cwd: &Path) -> Option<PathBuf> {
    cwd.ancestors().find(|dir| dir.join(".git").exists()).map(Path::to_path_buf)
}

/// The directories searched for project instructions, outermost first: from the repository
/// root (or, outside a repository, the file system root) down to `cwd`. `repo_root` is what
/// [`repo_root`] found for `cwd`: callers that need it too look for it once.
pub fn instruction_dirs(cwd: &Path, repo_root: Option<&Path>) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for dir in cwd.ancestors() {
        dirs.push(dir.to_path_buf());
        if repo_root == Some(dir) {
            break;
        }
    }
    dirs.reverse();
    dirs
}

/// The instruction file of one directory: `AGENTS.md` if it is a file there, else
/// `CLAUDE.md`, else none.
pub fn instruction_file_in(dir: &Path) -> Option<PathBuf> {
    INSTRUCTION_FILE_NAMES.iter().map(|name| dir.join(name)).find(|path| path.is_file())
}

/// Every path whose appearance, change or removal can change the instructions: both names in
/// the global directory and in each searched directory (from [`instruction_dirs`]).
pub fn candidate_paths(global_dir: Option<&Path>, searched: &[PathBuf]) -> Vec<PathBuf> {
    global_dir
        .into_iter()
        .chain(searched.iter().map(PathBuf::as_path))
        .flat_map(|dir| INSTRUCTION_FILE_NAMES.map(|name| dir.join(name)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dirs_run_from_the_repo_root_down_to_the_cwd() {
        let temp = tempfile::tempdir().unwrap();
        let root = temp.path().canonicalize().unwrap().join("repo");
        let cwd = root.join("a/b");
        std::fs::create_dir_all(&cwd).unwrap();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        assert_eq!(repo_root(&cwd), Some(root.clone()));
        let dirs = instruction_dirs(&cwd, repo_root(&cwd).as_deref());
        assert_eq!(dirs, vec![root.clone(), root.join("a"), cwd.clone()]);
        assert_eq!(instruction_dirs(&root, Some(&root)), vec![root.clone()]);
    }

    #[test]
    fn outside_a_repo_dirs_start_at_the_filesystem_root() {
        let cwd = Path::new("/no/such/place");
        let dirs = instruction_dirs(cwd, repo_root(cwd).as_deref());
        assert_eq!(dirs.first().map(PathBuf::as_path), Some(Path::new("/")));
        assert_eq!(dirs.last().map(PathBuf::as_path), Some(Path::new("/no/such/place")));
    }

    #[test]
    fn agents_md_is_preferred_over_claude_md() {
        let temp = tempfile::tempdir().unwrap();
        let dir = temp.path();
        assert_eq!(instruction_file_in(dir), None);
        std::fs::write(dir.join("CLAUDE.md"), "c").unwrap();
        assert_eq!(instruction_file_in(dir), Some(dir.join("CLAUDE.md")));
        std::fs::write(dir.join("AGENTS.md"), "a").unwrap();
        assert_eq!(instruction_file_in(dir), Some(dir.join("AGENTS.md")));
    }
}
