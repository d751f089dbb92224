//! The session side of checkpoints: a snapshot before and after each turn's tools, recorded
//! in the session file; `session/undo` and `session/diff`.
//!
//! Records are `custom` entries: [`CHECKPOINT_ENTRY_TYPE`] (`turn`, `run_id`, `run_turn`,
//! `before` and `after` tree ids, `skipped` files), written once the turn's tools ran, and
//! [`UNDO_ENTRY_TYPE`] (`turn`, `before`: the tree found, `after`: the tree left, `restored`,
//! `removed`, `overwritten`, `forced`).
//!
//! Changes made outside rein are what happened between two records: from the `after` of one
//! to the `before` of the next, and from the last `after` to the tree found now. Undo refuses
//! to overwrite such a file unless forced.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};

use rein_protocol::checkpoint::{
    CheckpointInfo, DiffParams, DiffResult, SkippedFile, UndoParams, UndoResult,
};
use rein_protocol::event::SessionEvent;
use rein_protocol::{EntryKind, SessionEntry};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::error::CodingError;
use super::{CodingSession, Operation};
use crate::checkpoint::{CheckpointStore, Snapshot};

/// `custom_type` of the entry recording one checkpointed turn.
pub const CHECKPOINT_ENTRY_TYPE: &str = "rein.checkpoint";
/// `custom_type` of the entry recording an undo.
pub const UNDO_ENTRY_TYPE: &str = "rein.undo";

/// Tools that never change files: a turn calling only these is not checkpointed.
const READ_ONLY_TOOLS: &[&str] = &["read", "grep", "find", "ls"];

/// The snapshot taken before the running turn's tools, waiting for the one after them.
#[derive(Default)]
pub(crate) struct SessionCheckpoints {
    pending: Mutex<Option<Pending>>,
    /// One snapshot at a time per session (they share the session's index file).
    busy: tokio::sync::Mutex<()>,
}

struct Pending {
    run_id: String,
    run_turn: u32,
    before: Snapshot,
}

/// A checkpoint entry's data.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct CheckpointRecord {
    turn: u32,
    run_id: String,
    run_turn: u32,
    before: String,
    #[serde(default)]
    after: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    skipped: Vec<SkippedFile>,
}

/// An undo entry's data.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct UndoRecord {
    turn: u32,
    before: String,
    after: String,
}

/// A record of the session file, in file order.
enum Record {
    Checkpoint { entry_id: String, data: CheckpointRecord },
    Undo(UndoRecord),
}

impl Record {
    fn before(&self) -> Option<&str> {
        match self {
            Self::Checkpoint { data, .. } => Some(&data.before),
            Self::Undo(undo) => Some(&undo.before),
        }
    }

    fn after(&self) -> Option<&str> {
        match self {
            Self::Checkpoint { data, .. } => data.after.as_deref(),
            Self::Undo(undo) => Some(&undo.after),
        }
    }
}

impl CodingSession {
    /// The project's checkpoint store for this session; `None` when checkpoints are off.
    async fn checkpoint_store(&self) -> Result<Option<CheckpointStore>, CodingError> {
        let env = self.env();
        let settings = &env.defaults.checkpoints;
        CheckpointStore::open(settings, &PathBuf::from(&self.cwd), &self.id)
            .await
            .map_err(|error| CodingError::Checkpoint(error.to_string()))
    }

    /// Before a turn's tools run: snapshot the project, unless every call only reads.
    pub(crate) async fn checkpoint_before(&self, run_id: &str, run_turn: u32, tools: &[&str]) {
        if tools.iter().all(|name| READ_ONLY_TOOLS.contains(name)) {
            return;
        }
        let _busy = self.checkpoints.busy.lock().await;
        let snapshot = match self.checkpoint_store().await {
            Ok(Some(store)) => store.snapshot().await.map_err(|error| error.to_string()),
            Ok(None) => return,
            Err(error) => Err(error.to_string()),
        };
        let pending = match snapshot {
            Ok(before) => Some(Pending { run_id: run_id.to_string(), run_turn, before }),
            Err(error) => {
                tracing::warn!(session = %self.id, %error, "no checkpoint for this turn");
                self.pump.catch_up().await;
                self.emit(SessionEvent::CheckpointFailed {
                    run_id: run_id.to_string(),
                    run_turn,
                    error,
                });
                None
            }
        };
        *self.checkpoints.pending.lock().unwrap_or_else(PoisonError::into_inner) = pending;
    }

    /// After a turn's tools ran: snapshot again and record the checkpoint.
    pub(crate) async fn checkpoint_after(&self, run_id: &str, run_turn: u32) {
        let pending =
            self.checkpoints.pending.lock().unwrap_or_else(PoisonError::into_inner).take();
        let Some(pending) = pending.filter(|p| p.run_id == run_id && p.run_turn == run_turn) else {
            return;
        };
        let _busy = self.checkpoints.busy.lock().await;
        let Ok(Some(store)) = self.checkpoint_store().await else { return };
        let after = match store.snapshot().await {
            Ok(after) => Some(after.tree),
            Err(error) => {
                tracing::warn!(session = %self.id, %error, "no snapshot after the turn's tools");
                None
            }
        };
        let mut trees = vec![pending.before.tree.as_str()];
        trees.extend(after.as_deref());
        if let Err(error) = store.keep(&trees, &format!("run {run_id} turn {run_turn}")).await {
            tracing::warn!(session = %self.id, %error, "could not keep the snapshots");
        }
        // The entry follows the turn's tool results in the file.
        self.pump.catch_up().await;
        let Ok(turn) = self.journal.read(|file| next_turn(file.tree().entries())) else {
            return;
        };
        let record = CheckpointRecord {
            turn,
            run_id: run_id.to_string(),
            run_turn,
            before: pending.before.tree,
            after,
            skipped: pending.before.skipped.clone(),
        };
        let kind = EntryKind::Custom {
            custom_type: CHECKPOINT_ENTRY_TYPE.into(),
            data: serde_json::to_value(&record).unwrap_or_default(),
        };
        if let Err(error) = self.journal.append(vec![kind]).await {
            tracing::error!(session = %self.id, %error, "could not record a checkpoint");
            return;
        }
        self.emit(SessionEvent::CheckpointCreated {
            turn,
            run_id: run_id.to_string(),
            run_turn,
            skipped: pending.before.skipped,
        });
    }

    /// Restores the project's files to before a checkpointed turn's tools ran (see
    /// [`UndoParams`]); refuses, naming them, when files changed outside rein since, unless
    /// forced. Needs the session idle.
    pub async fn undo(
        &self,
        params: UndoParams,
        requested_by: &str,
    ) -> Result<UndoResult, CodingError> {
        let _operation = self.begin(Operation::Undo)?;
        let _busy = self.checkpoints.busy.lock().await;
        let store = self.checkpoint_store().await?.ok_or_else(|| {
            CodingError::InvalidParams("checkpoints are turned off ([checkpoints] enabled)".into())
        })?;
        let (records, entry_index) = self.journal.read(|file| {
            let entries = file.tree().entries();
            let index = params
                .entry_id
                .as_deref()
                .map(|id| entries.iter().position(|entry| entry.id == id));
            (records(entries), index)
        })?;
        let position = target_position(&records, &params, entry_index)?;
        let Record::Checkpoint { data: target, .. } = &records[position].1 else {
            return Err(CodingError::InvalidParams("not a checkpoint".into()));
        };
        let failed =
            |error: crate::checkpoint::CheckpointError| CodingError::Checkpoint(error.to_string());
        let current = store.snapshot().await.map_err(failed)?;
        let to_restore =
            store.changed_paths(&target.before, &current.tree).await.map_err(failed)?;
        let outside = outside_changes(&store, &records[position..], &current.tree).await?;
        let conflicts: Vec<String> = to_restore.intersection(&outside).cloned().collect();
        if !conflicts.is_empty() && !params.force {
            return Err(CodingError::UndoConflict(conflicts));
        }
        let done = store.restore(&target.before, &current.tree).await.map_err(failed)?;
        let after = store.snapshot().await.map_err(failed)?;
        if let Err(error) = store.keep(&[&current.tree, &after.tree], "undo").await {
            tracing::warn!(session = %self.id, %error, "could not keep the undo snapshots");
        }
        let data = json!({
            "turn": target.turn,
            "before": current.tree,
            "after": after.tree,
            "restored": done.restored,
            "removed": done.removed,
            "overwritten": conflicts,
            "forced": params.force,
            "requested_by": requested_by,
        });
        let kind = EntryKind::Custom { custom_type: UNDO_ENTRY_TYPE.into(), data };
        let entry = self.journal.append(vec![kind]).await?.pop().ok_or_else(|| {
            CodingError::Checkpoint("the undo was written without its entry".into())
        })?;
        self.emit(SessionEvent::UndoApplied {
            turn: target.turn,
            restored: done.restored.clone(),
            removed: done.removed.clone(),
            overwritten: conflicts.clone(),
            requested_by: requested_by.to_string(),
        });
        Ok(UndoResult {
            turn: target.turn,
            restored: done.restored,
            removed: done.removed,
            overwritten: conflicts,
            entry_id: entry.id,
        })
    }

    /// The changes of one checkpointed turn, of a run, or (neither given) of the latest run
    /// with checkpoints.
    pub async fn diff(&self, params: DiffParams) -> Result<DiffResult, CodingError> {
        let records = self.journal.read(|file| records(file.tree().entries()))?;
        let checkpoints: Vec<(&String, &CheckpointRecord)> = records
            .iter()
            .filter_map(|(_, record)| match record {
                Record::Checkpoint { entry_id, data } => Some((entry_id, data)),
                Record::Undo(_) => None,
            })
            .collect();
        let chosen: Vec<(&String, &CheckpointRecord)> = match (params.turn, &params.run_id) {
            (Some(turn), _) => checkpoints.into_iter().filter(|(_, c)| c.turn == turn).collect(),
            (None, Some(run)) => {
                checkpoints.into_iter().filter(|(_, c)| &c.run_id == run).collect()
            }
            (None, None) => match checkpoints.last().map(|(_, c)| c.run_id.clone()) {
                Some(run) => checkpoints.into_iter().filter(|(_, c)| c.run_id == run).collect(),
                None => Vec::new(),
            },
        };
        let (Some(first), Some(last)) = (chosen.first(), chosen.last()) else {
            return Err(CodingError::InvalidParams(match (params.turn, params.run_id) {
                (Some(turn), _) => format!("no checkpointed turn {turn} in this session"),
                (None, Some(run)) => format!("run {run} has no checkpointed turn"),
                (None, None) => "this session has no checkpointed turn yet".into(),
            }));
        };
        let to = last.1.after.clone().ok_or_else(|| {
            CodingError::InvalidParams(format!(
                "turn {} has no snapshot after its tools",
                last.1.turn
            ))
        })?;
        let store = self.checkpoint_store().await?.ok_or_else(|| {
            CodingError::InvalidParams("checkpoints are turned off ([checkpoints] enabled)".into())
        })?;
        let failed =
            |error: crate::checkpoint::CheckpointError| CodingError::Checkpoint(error.to_string());
        let files = store.changes(&first.1.before, &to).await.map_err(failed)?;
        let patch = store.patch(&first.1.before, &to).await.map_err(failed)?;
        let turns = chosen
            .iter()
            .map(|(entry_id, c)| CheckpointInfo {
                turn: c.turn,
                run_id: c.run_id.clone(),
                run_turn: c.run_turn,
                entry_id: (*entry_id).clone(),
            })
            .collect();
        Ok(DiffResult { turns, files, patch })
    }
}

/// The checkpoint and undo records of a session file, with each entry's index in the file.
fn records(entries: &[SessionEntry]) -> Vec<(usize, Record)> {
    entries
        .iter()
        .enumerate()
        .filter_map(|(index, entry)| match &entry.kind {
            EntryKind::Custom { custom_type, data } if custom_type == UNDO_ENTRY_TYPE => {
                UndoRecord::deserialize(data).ok().map(|undo| (index, Record::Undo(undo)))
            }
            _ => checkpoint_record(entry)
                .map(|data| (index, Record::Checkpoint { entry_id: entry.id.clone(), data })),
        })
        .collect()
}

/// The checkpoint `entry` records, if it is a readable checkpoint entry.
fn checkpoint_record(entry: &SessionEntry) -> Option<CheckpointRecord> {
    match &entry.kind {
        EntryKind::Custom { custom_type, data } if custom_type == CHECKPOINT_ENTRY_TYPE => {
            CheckpointRecord::deserialize(data).ok()
        }
        _ => None,
    }
}

/// The number the next checkpointed turn gets: one after the last checkpoint recorded in the
/// file (turns are numbered from 1 in file order, across branches and undos). Read from the
/// end, so that recording a checkpoint costs as much on a long session as on a new one.
fn next_turn(entries: &[SessionEntry]) -> u32 {
    entries.iter().rev().find_map(checkpoint_record).map_or(1, |last| last.turn.saturating_add(1))
}

/// Which record an undo goes back to.
fn target_position(
    records: &[(usize, Record)],
    params: &UndoParams,
    entry_index: Option<Option<usize>>,
) -> Result<usize, CodingError> {
    let is_checkpoint = |record: &Record| matches!(record, Record::Checkpoint { .. });
    if let Some(turn) = params.turn {
        return records
            .iter()
            .position(|(_, r)| matches!(r, Record::Checkpoint { data, .. } if data.turn == turn))
            .ok_or_else(|| {
                CodingError::InvalidParams(format!("no checkpointed turn {turn} in this session"))
            });
    }
    if let Some(found) = entry_index {
        let index = found.ok_or_else(|| {
            CodingError::InvalidParams(format!(
                "no entry {} in this session",
                params.entry_id.as_deref().unwrap_or_default()
            ))
        })?;
        return records.iter().position(|(at, r)| *at >= index && is_checkpoint(r)).ok_or_else(
            || CodingError::InvalidParams("no checkpointed turn at or after that entry".into()),
        );
    }
    // The latest turn not undone yet: replay the records, an undo to turn T dropping every
    // live turn from T on.
    let mut live: Vec<(usize, u32)> = Vec::new();
    for (position, (_, record)) in records.iter().enumerate() {
        match record {
            Record::Checkpoint { data, .. } => live.push((position, data.turn)),
            Record::Undo(undo) => live.retain(|(_, turn)| *turn < undo.turn),
        }
    }
    live.last()
        .map(|(position, _)| *position)
        .ok_or_else(|| CodingError::InvalidParams("nothing to undo in this session".into()))
}

/// Files changed outside rein from the first of `records` on: between one record's `after`
/// and the next one's `before`, and between the last `after` and `now`.
async fn outside_changes(
    store: &CheckpointStore,
    records: &[(usize, Record)],
    now: &str,
) -> Result<BTreeSet<String>, CodingError> {
    let failed =
        |error: crate::checkpoint::CheckpointError| CodingError::Checkpoint(error.to_string());
    let mut changed = BTreeSet::new();
    for pair in records.windows(2) {
        if let (Some(after), Some(before)) = (pair[0].1.after(), pair[1].1.before()) {
            changed.extend(store.changed_paths(after, before).await.map_err(failed)?);
        }
    }
    if let Some(after) = records.last().and_then(|(_, record)| record.after()) {
        changed.extend(store.changed_paths(after, now).await.map_err(failed)?);
    }
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: &str, kind: EntryKind) -> SessionEntry {
        SessionEntry {
            id: id.into(),
            parent_id: None,
            timestamp: "2026-12-05T00:00:00Z".into(),
            kind,
        }
    }

    fn custom(id: &str, custom_type: &str, data: serde_json::Value) -> SessionEntry {
        entry(id, EntryKind::Custom { custom_type: custom_type.into(), data })
    }

    fn checkpoint(id: &str, turn: u32) -> SessionEntry {
        let record = CheckpointRecord {
            turn,
            run_id: "r".into(),
            run_turn: 1,
            before: "t0".into(),
            after: Some("t1".into()),
            skipped: Vec::new(),
        };
        custom(id, CHECKPOINT_ENTRY_TYPE, serde_json::to_value(record).unwrap())
    }

    fn label(id: &str) -> SessionEntry {
        entry(id, EntryKind::Label { target_id: "c1".into(), label: Some("x".into()) })
    }

    #[test]
    fn the_first_checkpoint_is_turn_one() {
        assert_eq!(next_turn(&[]), 1);
        assert_eq!(next_turn(&[label("a"), label("b")]), 1);
    }

    #[test]
    fn the_next_turn_follows_the_last_checkpoint_whatever_comes_after_it() {
        let undo = custom("u", UNDO_ENTRY_TYPE, json!({"turn": 2, "before": "t2", "after": "t0"}));
        let entries =
            [checkpoint("c1", 1), label("a"), checkpoint("c2", 2), undo, label("b"), label("c")];
        assert_eq!(next_turn(&entries), 3, "an undo frees no number");
        // As many as the readable checkpoints recorded, the numbering the records give.
        let counted = records(&entries)
            .iter()
            .filter(|(_, r)| matches!(r, Record::Checkpoint { .. }))
            .count();
        assert_eq!(next_turn(&entries), counted as u32 + 1);
    }

    #[test]
    fn an_unreadable_checkpoint_entry_is_passed_over() {
        let damaged = custom("d", CHECKPOINT_ENTRY_TYPE, json!({"turn": "three"}));
        assert_eq!(next_turn(&[checkpoint("c1", 1), checkpoint("c2", 2), damaged]), 3);
        assert_eq!(
            records(&[checkpoint("c1", 1), custom("d", CHECKPOINT_ENTRY_TYPE, json!(7))]).len(),
            1
        );
    }
}
