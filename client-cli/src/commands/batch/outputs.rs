//! What a batch writes, and where: `DIR/<id>/` per task, written so that a killed batch leaves
//! nothing half-written. `result.json` is written last and marks a task as done.

use rein_protocol::event::EndReason;
use rein_protocol::message::Usage;
use rein_protocol::verify::RunOutcome;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// The rein session as a JSONL trajectory (`session/export`, format `jsonl`).
pub const SESSION_FILE: &str = "session.jsonl";
/// The ATIF trajectory.
pub const ATIF_FILE: &str = "trajectory.atif.json";
/// `git diff` of the workspace against the base commit.
pub const PATCH_FILE: &str = "patch.diff";
/// The task's record ([`TaskResult`]); present once the task is done.
pub const RESULT_FILE: &str = "result.json";
/// The running attempt ([`Attempt`]); an attempt without a result was interrupted.
pub const ATTEMPT_FILE: &str = "attempt.json";
/// Output of the setup commands.
pub const SETUP_LOG: &str = "setup.log";
/// The task's working copy.
pub const WORKSPACE_DIR: &str = "workspace";
/// Interrupted attempts, one `attempt-N/` each, marked by a `partial.json`.
pub const PARTIAL_DIR: &str = "partial";
/// The batch's manifest ([`super::summary::Manifest`]).
pub const MANIFEST_FILE: &str = "batch.json";

/// The paths of one task's outputs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskDir(PathBuf);

impl TaskDir {
    /// `out/<id>`.
    pub fn new(out: &Path, id: &str) -> Self {
        Self(out.join(id))
    }

    /// The directory itself.
    pub fn root(&self) -> &Path {
        &self.0
    }

    /// A file or directory in it.
    pub fn file(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    /// The task's result, when it is done (an unreadable result counts as not done).
    pub fn result(&self) -> Option<TaskResult> {
        let text = std::fs::read(self.file(RESULT_FILE)).ok()?;
        serde_json::from_slice(&text).ok()
    }

    /// The attempt that was running, if any.
    pub fn attempt(&self) -> Option<Attempt> {
        let text = std::fs::read(self.file(ATTEMPT_FILE)).ok()?;
        serde_json::from_slice(&text).ok()
    }
}

/// Whether a task finished (an agent run ended) or could not be run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// The run ended; `end_reason` and `outcome` say how. Re-running skips the task.
    Finished,
    /// The task could not run (workspace, setup, daemon); `error` says why. Re-running tries
    /// it again.
    Error,
}

/// Token counts, summed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tokens {
    /// Input tokens not read from a cache.
    pub input: u64,
    /// Output tokens.
    pub output: u64,
    /// Input tokens read from a cache.
    pub cache_read: u64,
    /// Input tokens written to a cache.
    pub cache_write: u64,
    /// All of them.
    pub total: u64,
}

impl Tokens {
    /// The counts of a usage record.
    pub fn of(usage: &Usage) -> Self {
        Self {
            input: usage.input,
            output: usage.output,
            cache_read: usage.cache_read,
            cache_write: usage.cache_write,
            total: usage.total_tokens,
        }
    }

    /// Adds another count.
    pub fn add(&mut self, other: &Tokens) {
        self.input += other.input;
        self.output += other.output;
        self.cache_read += other.cache_read;
        self.cache_write += other.cache_write;
        self.total += other.total;
    }
}

/// `result.json`: how one task went.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskResult {
    /// The task id.
    pub id: String,
    /// Finished or error.
    pub status: TaskStatus,
    /// Why the run ended (absent when it never started).
    pub end_reason: Option<EndReason>,
    /// Whether the checks passed (absent when the run never started).
    pub outcome: Option<RunOutcome>,
    /// What went wrong: the run's error, or why the task could not run.
    pub error: Option<String>,
    /// What the run cost, in US dollars.
    pub cost_usd: f64,
    /// Tokens the run used.
    pub tokens: Tokens,
    /// Model requests the run made.
    pub turns: u32,
    /// Wall time of the whole task (workspace, setup, run, outputs), in milliseconds.
    pub duration_ms: u64,
    /// The session (in the daemon's `REIN_HOME`).
    pub session_id: Option<String>,
    /// `provider/model` the run used.
    pub model: Option<String>,
    /// The commit the workspace started from.
    pub base_commit: Option<String>,
    /// The last verification round of the run (`{"round", "passed", "checks": [...]}`).
    pub verification: Option<Value>,
    /// Which attempt this was (1 unless earlier ones were interrupted).
    pub attempt: u32,
    /// When the task started and finished (RFC 3339, UTC).
    pub started_at: String,
    /// When the task finished.
    pub finished_at: String,
}

impl TaskResult {
    /// Whether the task counts as passed: the run's checks passed.
    pub fn passed(&self) -> bool {
        self.status == TaskStatus::Finished && self.outcome == Some(RunOutcome::Verified)
    }
}

/// `attempt.json`: written when a task starts, updated with its session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Attempt {
    /// 1 for the first attempt.
    pub attempt: u32,
    /// The session, once created.
    pub session_id: Option<String>,
    /// The workspace's base commit, once it is prepared.
    #[serde(default)]
    pub base_commit: Option<String>,
    /// When it started (RFC 3339, UTC).
    pub started_at: String,
}

/// `partial/attempt-N/partial.json`: marks the outputs of an interrupted attempt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartialMarker {
    /// Always true: these outputs are incomplete.
    pub partial: bool,
    /// Which attempt.
    pub attempt: u32,
    /// Its session, when it had one.
    pub session_id: Option<String>,
    /// Why it is partial.
    pub reason: String,
}

/// Writes `bytes` to `path` through a temporary file and a rename, so readers never see half
/// a file.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".tmp");
    let temporary = path.with_file_name(name);
    std::fs::write(&temporary, bytes)?;
    std::fs::rename(&temporary, path)
}

/// Writes a value as pretty JSON with a final newline, atomically.
pub fn write_json(path: &Path, value: &impl Serialize) -> std::io::Result<()> {
    let mut text = serde_json::to_vec_pretty(value).map_err(std::io::Error::other)?;
    text.push(b'\n');
    write_atomic(path, &text)
}

/// Copies a directory tree, leaving out entries named in `skip` (at any depth); symbolic
/// links are copied as links.
pub fn copy_tree(from: &Path, to: &Path, skip: &[&str]) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let name = entry.file_name();
        if skip.iter().any(|skipped| name == *skipped) {
            continue;
        }
        let (source, target) = (entry.path(), to.join(&name));
        let kind = entry.file_type()?;
        if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&source)?, &target)?;
        } else if kind.is_dir() {
            copy_tree(&source, &target, skip)?;
        } else {
            std::fs::copy(&source, &target)?;
        }
    }
    Ok(())
}

/// SHA-256 of `bytes`, as lower-case hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|byte| format!("{byte:02x}")).collect()
}

/// The time now as RFC 3339 in UTC.
pub fn now_rfc3339() -> String {
    rfc3339_millis(time::OffsetDateTime::now_utc().unix_timestamp_nanos() as i64 / 1_000_000)
}

/// Milliseconds since the Unix epoch as RFC 3339 in UTC (empty when out of range).
pub fn rfc3339_millis(millis: i64) -> String {
    let nanos = i128::from(millis) * 1_000_000;
    time::OffsetDateTime::from_unix_timestamp_nanos(nanos)
        .ok()
        .and_then(|at| at.format(&time::format_description::well_known::Rfc3339).ok())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_rfc3339() {
        assert_eq!(rfc3339_millis(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339_millis(1_760_000_000_123), "2025-10-09T08:53:20.123Z");
    }

    #[test]
    fn atomic_writes_leave_no_temporary_file() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("result.json");
        write_json(&path, &serde_json::json!({"a": 1}))?;
        assert_eq!(std::fs::read_to_string(&path)?, "{\n  \"a\": 1\n}\n");
        assert_eq!(std::fs::read_dir(dir.path())?.count(), 1);
        Ok(())
    }
}
