//! What a run was set up with, captured when it starts and recorded with its end (a `run_end`
//! entry), so a trajectory export can tell a limit from a finish and say exactly what produced
//! the run: rein version, model, limits, system prompt and configuration hashes, git state.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, PoisonError};

use rein_agent::RunLimits;
use rein_protocol::EntryKind;
use rein_protocol::entry::RunSetup;
use rein_protocol::event::SessionEvent;
use rein_protocol::model::ModelRef;
use sha2::{Digest, Sha256};

/// The setup of the run in progress (or the last one), shared by the session (which fills it
/// when a run starts) and its event pump (which records it when the run ends).
#[derive(Clone, Default)]
pub(crate) struct SetupSlot(Arc<Mutex<Option<RunSetup>>>);

impl SetupSlot {
    /// Replaces the setup.
    pub(crate) fn set(&self, setup: RunSetup) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(setup);
    }

    /// The `run_end` entry for an `agent_end` event; `None` for any other event.
    pub(crate) fn run_end(&self, event: &SessionEvent) -> Option<EntryKind> {
        let SessionEvent::AgentEnd { run_id, reason, error, turns, .. } = event else {
            return None;
        };
        let setup = self.0.lock().unwrap_or_else(PoisonError::into_inner).clone();
        Some(EntryKind::RunEnd {
            run_id: run_id.clone(),
            reason: *reason,
            error: error.clone(),
            turns: *turns,
            setup: Box::new(setup.unwrap_or_default()),
        })
    }
}

/// What a run starting now is set up with.
pub(crate) struct SetupInputs<'a> {
    /// The model in force.
    pub model: &'a ModelRef,
    /// The run's limits.
    pub limits: &'a RunLimits,
    /// The system prompt in force.
    pub system_prompt: &'a str,
    /// The configuration files in force (user's first, then the project's).
    pub config_files: &'a [PathBuf],
    /// The project directory.
    pub cwd: &'a Path,
}

/// Captures the setup: hashes the prompt and the configuration files, asks git for the commit
/// and whether the work tree is dirty.
pub(crate) fn capture(inputs: &SetupInputs<'_>) -> RunSetup {
    let (git_commit, git_dirty) = match git_commit(inputs.cwd) {
        Some(commit) => (Some(commit), git_dirty(inputs.cwd)),
        None => (None, None),
    };
    RunSetup {
        rein_version: env!("CARGO_PKG_VERSION").to_string(),
        provider: inputs.model.provider.clone(),
        model: inputs.model.model.clone(),
        limits: rein_protocol::method::RunLimits {
            max_turns: inputs.limits.max_turns,
            max_cost: inputs.limits.max_cost,
            max_seconds: inputs.limits.max_wall_time.map(|d| d.as_secs()),
            max_failed_turns: inputs.limits.max_failed_turns,
        },
        system_prompt_sha256: hex(&Sha256::digest(inputs.system_prompt.as_bytes())),
        config_sha256: config_hash(inputs.config_files),
        git_commit,
        git_dirty,
    }
}

/// SHA-256 over the files' contents in order; `None` when none can be read.
fn config_hash(files: &[PathBuf]) -> Option<String> {
    let mut hasher = Sha256::new();
    let mut any = false;
    for file in files {
        if let Ok(bytes) = std::fs::read(file) {
            hasher.update(&bytes);
            any = true;
        }
    }
    any.then(|| hex(&hasher.finalize()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `git rev-parse HEAD` in `cwd`, when it is inside a work tree with a commit. Git is not
/// even started outside a work tree (no `.git` in the directory or above it): every process
/// the daemon starts briefly holds copies of its open files, session locks included.
fn git_commit(cwd: &Path) -> Option<String> {
    if !cwd.ancestors().any(|dir| dir.join(".git").exists()) {
        return None;
    }
    let output = git(cwd, &["rev-parse", "--verify", "HEAD"])?;
    let commit = output.trim();
    (!commit.is_empty()).then(|| commit.to_string())
}

/// Whether `git status` lists anything (changed, staged or untracked files).
fn git_dirty(cwd: &Path) -> Option<bool> {
    git(cwd, &["status", "--porcelain"]).map(|output| !output.trim().is_empty())
}

fn git(cwd: &Path, args: &[&str]) -> Option<String> {
    let output = Command::new("git")
        .args(args)
        .current_dir(cwd)
        .env("GIT_OPTIONAL_LOCKS", "0")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    output.status.success().then(|| String::from_utf8_lossy(&output.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_state_of_a_fresh_repository() {
        let dir = tempfile::tempdir().unwrap();
        let run = |args: &[&str]| {
            Command::new("git")
                .args(args)
                .current_dir(dir.path())
                .env("GIT_AUTHOR_NAME", "t")
                .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
                .env("GIT_COMMITTER_NAME", "t")
                .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
                .output()
                .unwrap()
        };
        assert_eq!(git_commit(dir.path()), None);
        run(&["init", "-q"]);
        std::fs::write(dir.path().join("a"), "1").unwrap();
        run(&["add", "a"]);
        run(&["commit", "-q", "-m", "one"]);
        let commit = git_commit(dir.path()).unwrap();
        assert_eq!(commit.len(), 40);
        assert_eq!(git_dirty(dir.path()), Some(false));
        std::fs::write(dir.path().join("a"), "2").unwrap();
        assert_eq!(git_dirty(dir.path()), Some(true));
    }

    #[test]
    fn hashes_are_hex_sha256() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("c.toml");
        std::fs::write(&file, "abc").unwrap();
        assert_eq!(
            config_hash(std::slice::from_ref(&file)).unwrap(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(config_hash(&[dir.path().join("missing")]), None);
    }
}
