//! Directory walks shared by `grep`, `find` and `ls`: gitignore-aware, hidden files included,
//! `.git` itself skipped, in a stable order.

use std::path::Path;

use globset::{GlobBuilder, GlobMatcher};
use ignore::WalkBuilder;

/// A walk of `root` that honours `.gitignore` (whether or not the directory is in a git
/// repository), `.ignore`, git's exclude files and ignore files of parent directories. Hidden
/// files are visited, since agents often need `.github/` or `.env.example`; the `.git`
/// directory is not.
pub(crate) fn walker(root: &Path) -> WalkBuilder {
    let mut builder = WalkBuilder::new(root);
    builder
        .hidden(false)
        .parents(true)
        .ignore(true)
        .git_ignore(true)
        .git_global(true)
        .git_exclude(true)
        .require_git(false)
        .filter_entry(|entry| entry.file_name() != ".git")
        .sort_by_file_name(|a, b| a.cmp(b));
    builder
}

/// A glob matched against paths relative to the search root. A pattern without `/` matches a
/// file's name wherever it is (`*.rs`); one with `/` matches the relative path (`src/**/*.rs`),
/// where `*` stays within one directory and `**` crosses directories.
pub(crate) struct PathGlob {
    matcher: GlobMatcher,
    whole_path: bool,
}

impl PathGlob {
    /// Compiles `pattern`.
    pub(crate) fn new(pattern: &str) -> Result<Self, globset::Error> {
        let whole_path = pattern.contains('/');
        let matcher =
            GlobBuilder::new(pattern).literal_separator(whole_path).build()?.compile_matcher();
        Ok(Self { matcher, whole_path })
    }

    /// Whether `relative` (a path under the search root) matches.
    pub(crate) fn is_match(&self, relative: &Path) -> bool {
        if self.whole_path {
            self.matcher.is_match(relative)
        } else {
            relative.file_name().is_some_and(|name| self.matcher.is_match(name))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_without_slash_match_names_anywhere() {
        let glob = PathGlob::new("*.rs").unwrap();
        assert!(glob.is_match(Path::new("a.rs")));
        assert!(glob.is_match(Path::new("src/deep/a.rs")));
        assert!(!glob.is_match(Path::new("src/a.rsx")));
    }

    #[test]
    fn globs_with_slash_match_the_relative_path() {
        let glob = PathGlob::new("src/*.rs").unwrap();
        assert!(glob.is_match(Path::new("src/a.rs")));
        assert!(!glob.is_match(Path::new("src/x/a.rs")));
        let glob = PathGlob::new("**/tests/*.rs").unwrap();
        assert!(glob.is_match(Path::new("tests/a.rs")));
        assert!(glob.is_match(Path::new("crate/tests/a.rs")));
        assert!(PathGlob::new("a[").is_err());
    }

    #[test]
    fn walks_skip_gitignored_files_and_dot_git() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join(".gitignore"), "target/\n*.log\n").unwrap();
        std::fs::create_dir_all(root.join("target")).unwrap();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::write(root.join(".git/config"), "").unwrap();
        std::fs::write(root.join("target/out"), "").unwrap();
        std::fs::write(root.join("debug.log"), "").unwrap();
        std::fs::write(root.join("main.rs"), "").unwrap();
        std::fs::write(root.join(".env.example"), "").unwrap();
        let seen: Vec<String> = walker(root)
            .build()
            .filter_map(Result::ok)
            .filter(|e| e.depth() > 0)
            .map(|e| e.path().strip_prefix(root).unwrap().display().to_string())
            .collect();
        assert_eq!(seen, [".env.example", ".gitignore", "main.rs"]);
    }
}
