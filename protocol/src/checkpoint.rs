//! Checkpoints and undo on the wire: `session/undo`, `session/diff` and what they report.
//!
//! Before the tools of a turn run, the daemon snapshots the project tree into a private store;
//! after they ran, it snapshots it again. Each such turn is a *checkpoint*, numbered from 1 in
//! the order of the session (its `turn`). Undo puts the files back as they were before a
//! checkpoint's tools ran, including files that shell commands created or deleted.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `session/undo` params.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct UndoParams {
    /// The session.
    pub session_id: String,
    /// Restore the files as they were before this checkpointed turn's tools ran (the `turn`
    /// numbers of `session/diff` and `checkpoint_created`). Default: the latest turn not
    /// undone yet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<u32>,
    /// Or: undo to before the first checkpointed turn recorded at or after this entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry_id: Option<String>,
    /// Restore even files that changed outside rein since the snapshot (their changes are
    /// lost).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub force: bool,
}

/// `session/undo` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct UndoResult {
    /// The checkpointed turn the files were restored to (its state before its tools ran).
    pub turn: u32,
    /// Files written back: changed or deleted since the snapshot.
    pub restored: Vec<String>,
    /// Files removed: created since the snapshot.
    pub removed: Vec<String>,
    /// Files that changed outside rein and were overwritten anyway (`force`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overwritten: Vec<String>,
    /// The session entry recording the undo.
    pub entry_id: String,
}

/// `session/diff` params. With neither `turn` nor `run_id`: the changes of the latest run that
/// has checkpoints.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DiffParams {
    /// The session.
    pub session_id: String,
    /// The changes one checkpointed turn's tools made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<u32>,
    /// The changes a whole run's tools made (from before its first checkpoint to after its
    /// last).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
}

/// `session/diff` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DiffResult {
    /// The checkpointed turns the diff covers, in order.
    pub turns: Vec<CheckpointInfo>,
    /// Every file that differs.
    pub files: Vec<FileChange>,
    /// The changes as a unified diff (`git diff` format, binary files named only).
    pub patch: String,
}

/// One checkpointed turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CheckpointInfo {
    /// Its number in the session, from 1.
    pub turn: u32,
    /// The run it belongs to.
    pub run_id: String,
    /// Its 1-based turn within that run.
    pub run_turn: u32,
    /// The session entry recording it.
    pub entry_id: String,
}

/// How a file differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FileChangeKind {
    /// It did not exist before.
    Added,
    /// Its content or mode changed.
    Modified,
    /// It no longer exists.
    Deleted,
}

/// One changed file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FileChange {
    /// Relative to the session's directory.
    pub path: String,
    /// What happened to it.
    pub change: FileChangeKind,
}

/// A file a snapshot left out because it is larger than the per-file cap.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SkippedFile {
    /// Relative to the session's directory.
    pub path: String,
    /// Its size in bytes.
    pub bytes: u64,
}
