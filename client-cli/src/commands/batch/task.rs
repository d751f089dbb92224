//! The task file: one JSON object per line, each a task for the batch.

use rein_protocol::method::RunLimits;
use rein_protocol::verify::VerifyRequest;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// One task of a batch, as written in the task file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Task {
    /// Names the task and its output directory (`DIR/<id>/`): letters, digits, `.`, `_`, `-`.
    pub id: String,
    /// The prompt the agent gets.
    pub instruction: String,
    /// The repository: a local path (relative paths start at the task file's directory) or a
    /// git URL.
    pub repo: String,
    /// The commit to start from (default: the repository's `HEAD`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_commit: Option<String>,
    /// Shell commands run in the fresh workspace before the agent starts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub setup: Vec<String>,
    /// Checks run when the model stops (as `verify` of `session/prompt`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<VerifyRequest>,
    /// Limits of the run (`max_turns`, `max_cost`, `max_seconds`).
    #[serde(default)]
    pub limits: RunLimits,
    /// `provider/model` (default: `--model`, else the daemon's configured model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Where the tools run, passed to `session/create` as `sandbox`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<Value>,
}

/// A task file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TaskFileError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A line is not a valid task.
    #[error("{path}:{line}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// The line number (from 1).
        line: usize,
        /// What is wrong.
        message: String,
    },
}

/// The tasks of a file, in file order, with what identifies the file.
#[derive(Debug, Clone)]
pub struct TaskFile {
    /// The tasks, in the order of the file.
    pub tasks: Vec<Task>,
    /// The directory relative repository paths start from.
    pub base_dir: PathBuf,
    /// SHA-256 (hex) of the file's bytes: shards of one batch must share it.
    pub sha256: String,
}

impl TaskFile {
    /// Reads and checks a task file: every non-blank line a task, ids valid and unique.
    pub fn load(path: &Path) -> Result<Self, TaskFileError> {
        let bytes = std::fs::read(path)
            .map_err(|source| TaskFileError::Read { path: path.to_path_buf(), source })?;
        let text = String::from_utf8_lossy(&bytes);
        let base_dir = std::path::absolute(path)
            .ok()
            .and_then(|file| file.parent().map(Path::to_path_buf))
            .unwrap_or_else(|| PathBuf::from("."));
        let invalid = |line: usize, message: String| TaskFileError::Invalid {
            path: path.to_path_buf(),
            line,
            message,
        };
        let mut tasks = Vec::new();
        let mut seen = HashSet::new();
        for (index, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let task: Task = serde_json::from_str(line)
                .map_err(|error| invalid(index + 1, error.to_string()))?;
            check_id(&task.id).map_err(|message| invalid(index + 1, message))?;
            if task.instruction.trim().is_empty() {
                return Err(invalid(
                    index + 1,
                    format!("task `{}` has an empty instruction", task.id),
                ));
            }
            if task.repo.trim().is_empty() {
                return Err(invalid(index + 1, format!("task `{}` has an empty repo", task.id)));
            }
            if !seen.insert(task.id.clone()) {
                return Err(invalid(index + 1, format!("task id `{}` appears twice", task.id)));
            }
            tasks.push(task);
        }
        Ok(Self { tasks, base_dir, sha256: crate::commands::batch::outputs::sha256_hex(&bytes) })
    }

    /// The ids in file order.
    pub fn ids(&self) -> Vec<String> {
        self.tasks.iter().map(|task| task.id.clone()).collect()
    }
}

/// Checks that an id can name a directory on every system: 1 to 128 of `[A-Za-z0-9._-]`, not
/// starting with `.`.
pub fn check_id(id: &str) -> Result<(), String> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    if id.is_empty() || id.len() > 128 || id.starts_with('.') || !id.chars().all(allowed) {
        return Err(format!(
            "task id `{id}` must be 1 to 128 letters, digits, `.`, `_` or `-`, not starting with `.`"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tasks_load_in_order_with_defaults() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("tasks.jsonl");
        std::fs::write(
            &path,
            concat!(
                r#"{"id":"a","instruction":"fix it","repo":"repos/a","verify":["sh test.sh"],"limits":{"max_turns":5}}"#,
                "\n\n",
                r#"{"id":"b","instruction":"fix b","repo":"https://example.invalid/b.git","base_commit":"abc","setup":["make"],"model":"p/m","sandbox":"workspace-write"}"#,
                "\n"
            ),
        )?;
        let file = TaskFile::load(&path)?;
        assert_eq!(file.ids(), ["a", "b"]);
        assert_eq!(file.tasks[0].limits.max_turns, Some(5));
        assert_eq!(file.tasks[0].verify, Some(VerifyRequest::Commands(vec!["sh test.sh".into()])));
        assert_eq!(file.tasks[1].sandbox, Some(Value::String("workspace-write".into())));
        assert_eq!(file.base_dir, std::path::absolute(dir.path())?);
        assert_eq!(file.sha256.len(), 64);
        Ok(())
    }

    #[test]
    fn bad_tasks_name_their_line() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("tasks.jsonl");
        for (text, needle) in [
            (r#"{"id":"a","instruction":"x","repo":"r","colour":1}"#, "unknown field"),
            (r#"{"id":"../up","instruction":"x","repo":"r"}"#, "must be 1 to 128"),
            (r#"{"id":"a","instruction":" ","repo":"r"}"#, "empty instruction"),
            (
                "{\"id\":\"a\",\"instruction\":\"x\",\"repo\":\"r\"}\n{\"id\":\"a\",\"instruction\":\"y\",\"repo\":\"r\"}",
                "appears twice",
            ),
        ] {
            std::fs::write(&path, text)?;
            let error = TaskFile::load(&path).err().ok_or("accepted a bad file")?.to_string();
            assert!(error.contains(needle), "{error}");
            assert!(error.contains("tasks.jsonl:"), "{error}");
        }
        Ok(())
    }
}
