//! A task's workspace: a fresh git clone (or, for a plain directory, a copy made into a new git
//! repository) at the base commit, inside the batch's output directory. The source is only
//! read: clones are made with `git clone` and lose their `origin` remote, so nothing the agent
//! does in the workspace (commits, `git push`) reaches the source repository.

use super::task::Task;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use tokio::process::Command;

/// A prepared workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workspace {
    /// The directory the session works in.
    pub dir: PathBuf,
    /// The commit the task starts from (full hash); `patch.diff` is taken against it.
    pub base: String,
}

/// Why a workspace could not be prepared or read.
#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    /// A git command failed.
    #[error("`git {args}` failed: {detail}")]
    Git {
        /// Its arguments.
        args: String,
        /// Its standard error, or why it could not start.
        detail: String,
    },
    /// A file operation failed.
    #[error("{what} {path}: {source}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// On which path.
        path: PathBuf,
        /// Why it failed.
        source: std::io::Error,
    },
    /// The source is not usable.
    #[error("{0}")]
    Source(String),
    /// A setup command failed.
    #[error("setup command `{command}` {status} (see setup.log)")]
    Setup {
        /// The command.
        command: String,
        /// How it ended.
        status: String,
    },
}

/// Where a task's repository comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A git repository: a URL, or the top of a local work tree (or a bare repository).
    Git(String),
    /// A local directory that is not the top of a git repository: copied.
    Directory(PathBuf),
}

/// Works out what `repo` names: URLs (`scheme://…`, `user@host:path`) are git sources; a
/// relative local path starts at `base_dir`.
pub async fn source(repo: &str, base_dir: &Path) -> Result<Source, WorkspaceError> {
    let scp_like =
        repo.split_once(':').is_some_and(|(host, _)| host.contains('@')) && !repo.starts_with('/');
    if repo.contains("://") || scp_like {
        return Ok(Source::Git(repo.to_string()));
    }
    let path = base_dir.join(repo);
    let path = std::fs::canonicalize(&path).map_err(|source| WorkspaceError::Io {
        what: "cannot open the repository",
        path: path.clone(),
        source,
    })?;
    if !path.is_dir() {
        return Err(WorkspaceError::Source(format!("{} is not a directory", path.display())));
    }
    let top = git_output(&path, &["rev-parse", "--show-toplevel"]).await.ok();
    let bare = git_output(&path, &["rev-parse", "--is-bare-repository"]).await.ok();
    let is_top = top.and_then(|top| std::fs::canonicalize(top.trim()).ok()) == Some(path.clone());
    if is_top || bare.as_deref().map(str::trim) == Some("true") {
        Ok(Source::Git(path.display().to_string()))
    } else {
        Ok(Source::Directory(path))
    }
}

/// Makes a fresh workspace for `task` at `dest` (which must not exist yet).
pub async fn prepare(
    task: &Task,
    base_dir: &Path,
    dest: &Path,
) -> Result<Workspace, WorkspaceError> {
    let parent = dest.parent().unwrap_or(Path::new("."));
    match source(&task.repo, base_dir).await? {
        Source::Git(url) => {
            let dest_text = dest.display().to_string();
            // No hard links into a local source's object store: a file written in place in the
            // clone's `.git` must not reach the source.
            let clone =
                ["clone", "--quiet", "--no-checkout", "--no-hardlinks", "--", &url, &dest_text];
            git(parent, &clone).await?;
            let base = task.base_commit.as_deref().unwrap_or("HEAD");
            let commit = format!("{base}^{{commit}}");
            let base =
                git_output(dest, &["rev-parse", "--verify", "--quiet", &commit]).await.map_err(
                    |_| WorkspaceError::Source(format!("{} has no commit `{base}`", task.repo)),
                )?;
            let base = base.trim().to_string();
            git(dest, &["checkout", "--quiet", "--detach", &base]).await?;
            git(dest, &["remote", "remove", "origin"]).await?;
            Ok(Workspace { dir: dest.to_path_buf(), base })
        }
        Source::Directory(path) => {
            if let Some(base) = &task.base_commit {
                return Err(WorkspaceError::Source(format!(
                    "base_commit `{base}` given but {} is not a git repository",
                    path.display()
                )));
            }
            let (from, to) = (path.clone(), dest.to_path_buf());
            tokio::task::spawn_blocking(move || super::outputs::copy_tree(&from, &to, &[".git"]))
                .await
                .map_err(|error| WorkspaceError::Source(error.to_string()))?
                .map_err(|source| WorkspaceError::Io {
                    what: "cannot copy",
                    path: path.clone(),
                    source,
                })?;
            git(dest, &["init", "--quiet"]).await?;
            git(dest, &["add", "--all"]).await?;
            git(dest, &["commit", "--quiet", "--allow-empty", "--no-verify", "-m", "base"]).await?;
            let base = git_output(dest, &["rev-parse", "HEAD"]).await?.trim().to_string();
            Ok(Workspace { dir: dest.to_path_buf(), base })
        }
    }
}

/// Runs the task's setup commands in order with `sh -c` in the workspace, output appended to
/// `log`; the first failure stops.
pub async fn run_setup(commands: &[String], dir: &Path, log: &Path) -> Result<(), WorkspaceError> {
    for command in commands {
        let file =
            std::fs::OpenOptions::new().create(true).append(true).open(log).map_err(|source| {
                WorkspaceError::Io { what: "cannot write", path: log.to_path_buf(), source }
            })?;
        let err = file.try_clone().map_err(|source| WorkspaceError::Io {
            what: "cannot write",
            path: log.to_path_buf(),
            source,
        })?;
        let status = Command::new("sh")
            .args(["-c", command])
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(file)
            .stderr(err)
            .status()
            .await
            .map_err(|source| WorkspaceError::Io {
                what: "cannot start sh in",
                path: dir.to_path_buf(),
                source,
            })?;
        if !status.success() {
            let status = match status.code() {
                Some(code) => format!("exited {code}"),
                None => "was killed by a signal".to_string(),
            };
            return Err(WorkspaceError::Setup { command: command.clone(), status });
        }
    }
    Ok(())
}

/// Everything that differs from the base commit, untracked files included (as `git diff`
/// shows it; `.gitignore`d files are left out).
pub async fn patch(workspace: &Workspace) -> Result<String, WorkspaceError> {
    git(&workspace.dir, &["add", "--all"]).await?;
    git_output(
        &workspace.dir,
        &["diff", "--cached", "--binary", "--no-color", "--no-ext-diff", &workspace.base],
    )
    .await
}

/// The settings every git call gets, so a user's configuration cannot change what the batch
/// records (identity for the base commit, diff prefixes, signing, hooks).
const GIT_SETTINGS: [&str; 12] = [
    "-c",
    "user.name=rein batch",
    "-c",
    "user.email=rein-batch@localhost",
    "-c",
    "commit.gpgsign=false",
    "-c",
    "diff.noprefix=false",
    "-c",
    "diff.mnemonicPrefix=false",
    "-c",
    "core.hooksPath=/dev/null",
];

async fn git(dir: &Path, args: &[&str]) -> Result<(), WorkspaceError> {
    git_output(dir, args).await.map(drop)
}

async fn git_output(dir: &Path, args: &[&str]) -> Result<String, WorkspaceError> {
    let failed = |detail: String| WorkspaceError::Git { args: args.join(" "), detail };
    let output = Command::new("git")
        .args(GIT_SETTINGS)
        .args(args)
        .current_dir(dir)
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(Stdio::null())
        .output()
        .await
        .map_err(|error| failed(error.to_string()))?;
    if !output.status.success() {
        return Err(failed(String::from_utf8_lossy(&output.stderr).trim().to_string()));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(repo: &str, base: Option<&str>) -> Task {
        Task {
            id: "t".into(),
            instruction: "x".into(),
            repo: repo.into(),
            base_commit: base.map(Into::into),
            setup: Vec::new(),
            verify: None,
            limits: Default::default(),
            model: None,
            sandbox: None,
        }
    }

    fn run(dir: &Path, args: &[&str]) -> Result<String, Box<dyn std::error::Error>> {
        let output = std::process::Command::new("git")
            .args(GIT_SETTINGS)
            .args(args)
            .current_dir(dir)
            .output()?;
        assert!(
            output.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
    }

    /// Every file under `dir` (`.git` included) with its bytes, to prove nothing changed.
    fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
        let mut files = Vec::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(next) = stack.pop() {
            for entry in std::fs::read_dir(&next).into_iter().flatten().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    stack.push(path);
                } else {
                    files.push((path.clone(), std::fs::read(&path).unwrap_or_default()));
                }
            }
        }
        files.sort();
        files
    }

    #[tokio::test]
    async fn a_git_source_is_cloned_at_the_base_commit_and_left_untouched()
    -> Result<(), Box<dyn std::error::Error>> {
        let root = tempfile::tempdir()?;
        let source = root.path().join("src");
        std::fs::create_dir(&source)?;
        run(&source, &["init", "--quiet"])?;
        std::fs::write(source.join("a.txt"), "one\n")?;
        run(&source, &["add", "a.txt"])?;
        run(&source, &["commit", "--quiet", "-m", "one"])?;
        let first = run(&source, &["rev-parse", "HEAD"])?;
        std::fs::write(source.join("a.txt"), "two\n")?;
        run(&source, &["commit", "--quiet", "-am", "two"])?;
        std::fs::write(source.join("dirty.txt"), "uncommitted\n")?;
        let before = snapshot(&source);

        let dest = root.path().join("out/t/workspace");
        std::fs::create_dir_all(dest.parent().ok_or("no parent")?)?;
        let workspace = prepare(&task("src", Some(&first[..8])), root.path(), &dest).await?;
        assert_eq!(workspace.base, first);
        assert_eq!(std::fs::read_to_string(dest.join("a.txt"))?, "one\n");
        assert!(!dest.join("dirty.txt").exists(), "only committed content is cloned");

        std::fs::write(dest.join("a.txt"), "fixed\n")?;
        std::fs::write(dest.join("new.txt"), "added\n")?;
        let patch = patch(&workspace).await?;
        assert!(patch.contains("-one\n+fixed"), "{patch}");
        assert!(patch.contains("+++ b/new.txt"), "{patch}");
        run(&dest, &["commit", "--quiet", "-m", "agent"])?;
        assert!(run(&dest, &["remote"])?.is_empty(), "the clone has no way back to the source");
        assert_eq!(snapshot(&source), before, "the source repository changed");

        let missing =
            prepare(&task("src", Some("feedface")), root.path(), &root.path().join("x")).await;
        assert!(missing.err().map(|e| e.to_string()).unwrap_or_default().contains("no commit"));
        Ok(())
    }

    #[tokio::test]
    async fn a_plain_directory_is_copied_into_a_new_repository()
    -> Result<(), Box<dyn std::error::Error>> {
        let root = tempfile::tempdir()?;
        let source = root.path().join("plain");
        std::fs::create_dir_all(source.join("sub"))?;
        std::fs::write(source.join("sub/b.txt"), "bee\n")?;
        std::os::unix::fs::symlink("sub/b.txt", source.join("link"))?;
        let before = snapshot(&source);
        let dest = root.path().join("ws");
        let workspace =
            prepare(&task(&source.display().to_string(), None), root.path(), &dest).await?;
        assert_eq!(std::fs::read_to_string(dest.join("link"))?, "bee\n");
        assert!(patch(&workspace).await?.is_empty());
        std::fs::remove_file(dest.join("sub/b.txt"))?;
        assert!(patch(&workspace).await?.contains("deleted file mode"));
        assert_eq!(snapshot(&source), before);

        let log = root.path().join("setup.log");
        run_setup(&["echo prepared > setup.txt".into()], &dest, &log).await?;
        assert!(dest.join("setup.txt").exists());
        let failed = run_setup(&["echo oops >&2; exit 3".into()], &dest, &log).await;
        assert!(failed.err().map(|e| e.to_string()).unwrap_or_default().contains("exited 3"));
        assert!(std::fs::read_to_string(&log)?.contains("oops"));
        Ok(())
    }
}
