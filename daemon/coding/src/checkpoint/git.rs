//! Running the `git` command line against a private store: every call gets `GIT_DIR`,
//! `GIT_WORK_TREE` and `GIT_INDEX_FILE` pointing at rein's own paths, and none of the caller's
//! `GIT_*` variables or git configuration files, so neither the user's repository, its index nor
//! their settings (line-ending conversion, filters, hooks) take part.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use tokio::io::AsyncWriteExt;

use super::CheckpointError;

/// One private store bound to one work tree and one index file.
#[derive(Debug, Clone)]
pub(crate) struct Git {
    /// The store (a bare repository under `REIN_HOME`).
    pub(crate) git_dir: PathBuf,
    /// The project directory.
    pub(crate) work_tree: PathBuf,
    /// The index file this caller uses.
    pub(crate) index: PathBuf,
}

/// Settings every call gets, whatever the user's git configuration says.
const FIXED_CONFIG: &[&str] = &[
    "core.autocrlf=false",
    "core.safecrlf=false",
    "core.symlinks=true",
    "core.filemode=true",
    "core.fsmonitor=false",
    "core.untrackedCache=false",
    "core.quotePath=false",
    "core.hooksPath=/dev/null",
    "gc.auto=0",
    "diff.noprefix=false",
    "diff.renames=false",
];

impl Git {
    /// The same store and work tree with another index file.
    pub(crate) fn with_index(&self, index: PathBuf) -> Git {
        Git { index, ..self.clone() }
    }

    /// Runs `git ARGS` with `input` on standard input; returns standard output. A non-zero exit
    /// is an error carrying standard error.
    pub(crate) async fn run(
        &self,
        args: &[&str],
        input: &[u8],
    ) -> Result<Vec<u8>, CheckpointError> {
        self.execute(args, input, true).await
    }

    /// Creates the store (a bare repository at `git_dir`), private to the user: no template
    /// files, and everything git writes into it later is 0600 (directories 0700).
    pub(crate) async fn init(&self) -> Result<(), CheckpointError> {
        let dir = self.git_dir.to_string_lossy().into_owned();
        let args = ["init", "--quiet", "--bare", "--shared=0600", "--template=", &dir];
        self.execute(&args, &[], false).await.map(|_| ())
    }

    /// Runs git; `bound` sets the store, work tree and index variables.
    async fn execute(
        &self,
        args: &[&str],
        input: &[u8],
        bound: bool,
    ) -> Result<Vec<u8>, CheckpointError> {
        let mut command = tokio::process::Command::new("git");
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("GIT_") {
                command.env_remove(&name);
            }
        }
        for setting in FIXED_CONFIG {
            command.arg("-c").arg(setting);
        }
        if bound {
            command
                .env("GIT_DIR", &self.git_dir)
                .env("GIT_WORK_TREE", &self.work_tree)
                .env("GIT_INDEX_FILE", &self.index);
        }
        command
            .args(args)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_LITERAL_PATHSPECS", "1")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_AUTHOR_NAME", "rein")
            .env("GIT_AUTHOR_EMAIL", "rein@localhost")
            .env("GIT_COMMITTER_NAME", "rein")
            .env("GIT_COMMITTER_EMAIL", "rein@localhost")
            .current_dir(&self.work_tree)
            .stdin(if input.is_empty() { Stdio::null() } else { Stdio::piped() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command.spawn().map_err(|source| CheckpointError::Spawn { source })?;
        let writer = match child.stdin.take() {
            Some(mut stdin) => {
                let input = input.to_vec();
                Some(tokio::spawn(async move {
                    let written = stdin.write_all(&input).await;
                    drop(stdin);
                    written
                }))
            }
            None => None,
        };
        let output = child.wait_with_output().await.map_err(CheckpointError::Io)?;
        if let Some(writer) = writer {
            match writer.await {
                Ok(Ok(())) => {}
                Ok(Err(error)) => return Err(CheckpointError::Io(error)),
                Err(error) => return Err(CheckpointError::Io(std::io::Error::other(error))),
            }
        }
        if !output.status.success() {
            return Err(CheckpointError::Git {
                command: args.first().copied().unwrap_or_default().to_string(),
                stderr: String::from_utf8_lossy(&output.stderr).trim().to_string(),
            });
        }
        Ok(output.stdout)
    }

    /// `run`, with the output as one trimmed line (an object id).
    pub(crate) async fn run_line(&self, args: &[&str]) -> Result<String, CheckpointError> {
        let out = self.run(args, &[]).await?;
        Ok(String::from_utf8_lossy(&out).trim().to_string())
    }
}

/// NUL-separated paths as one stdin buffer.
pub(crate) fn nul_list<'a>(paths: impl IntoIterator<Item = &'a str>) -> Vec<u8> {
    let mut out = Vec::new();
    for path in paths {
        out.extend_from_slice(path.as_bytes());
        out.push(0);
    }
    out
}

/// Splits NUL-separated output into strings (lossy for names that are not UTF-8).
pub(crate) fn split_nul(bytes: &[u8]) -> Vec<String> {
    bytes
        .split(|b| *b == 0)
        .filter(|part| !part.is_empty())
        .map(|part| String::from_utf8_lossy(part).into_owned())
        .collect()
}

/// True when `path` is a git store that was set up.
pub(crate) fn is_initialized(git_dir: &Path) -> bool {
    git_dir.join("HEAD").is_file() && git_dir.join("info").join("attributes").is_file()
}
