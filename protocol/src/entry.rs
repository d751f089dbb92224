//! The session entry tree as clients see it (and as the session file stores it).
//!
//! A session is a tree of entries: each has an `id` and the `parent_id` it follows. The active
//! leaf's root-to-leaf path is the conversation the model sees.

use crate::message::{Message, Usage};
use crate::model::ThinkingLevel;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::Arc;

/// One node of the session tree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionEntry {
    /// Unique within the session.
    pub id: String,
    /// The entry this one follows; null for a root.
    pub parent_id: Option<String>,
    /// RFC 3339 time the entry was written.
    pub timestamp: String,
    /// What the entry records.
    #[serde(flatten)]
    pub kind: EntryKind,
}

/// What an entry records, tagged by `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EntryKind {
    /// A conversation message.
    Message {
        /// The message.
        // Shared: the daemon's harness history holds the same allocation, so a loaded session
        // keeps one copy of each message. Serialized as the message itself.
        message: Arc<Message>,
    },
    /// The model in force changed from here on.
    ModelChange {
        /// Provider name.
        provider: String,
        /// Model id.
        model: String,
    },
    /// The thinking level in force changed from here on.
    ThinkingLevelChange {
        /// The new level.
        thinking_level: ThinkingLevel,
    },
    /// The session's approval policy in force changed from here on.
    ApprovalPolicyChange {
        /// The new policy.
        approval_policy: crate::method::ApprovalPolicy,
    },
    /// A run ended: why, and what it was set up with (the trajectory export's `run_info`
    /// reads the last one on the path).
    RunEnd {
        /// The run's id.
        run_id: String,
        /// Why it ended.
        reason: crate::event::EndReason,
        /// What went wrong, when `reason` is `error`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// Turns the run took.
        turns: u32,
        /// What the run was set up with.
        // Boxed, as the usages below: every entry of a loaded session is as large as the
        // largest kind, so rare large fields are kept out of line (328 bytes an entry before).
        setup: Box<RunSetup>,
    },
    /// Older context was summarized; the model sees `summary` and the entries from
    /// `first_kept_entry_id` on.
    Compaction {
        /// The summary the model sees in place of the older entries.
        summary: String,
        /// The first entry kept verbatim.
        first_kept_entry_id: String,
        /// Context tokens before compacting.
        tokens_before: u64,
        /// Usage of the summarization request.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<Box<Usage>>,
        /// Why it happened: `manual`, `threshold` or `overflow`.
        #[serde(default)]
        reason: String,
    },
    /// A summary of a path that was abandoned by branching.
    BranchSummary {
        /// The leaf of the abandoned path.
        from_id: String,
        /// What was tried there.
        summary: String,
        /// Usage of the summarization request.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<Box<Usage>>,
    },
    /// A user label on an entry (null removes it).
    Label {
        /// The labelled entry.
        target_id: String,
        /// The label text.
        label: Option<String>,
    },
    /// Session metadata (its display name).
    SessionInfo {
        /// The session's name.
        name: Option<String>,
    },
    /// A record of what loading repaired, so it happens once and stays visible.
    Repair {
        /// Each repair made.
        actions: Vec<RepairAction>,
    },
    /// Opaque data for extensions; never sent to the model.
    Custom {
        /// Who wrote it and what it is.
        custom_type: String,
        /// The data.
        data: Value,
    },
    /// An entry kind this version does not know (written by a newer rein); kept as a node of the
    /// tree but otherwise ignored.
    #[serde(other)]
    #[schemars(skip)]
    Unknown,
}

/// What a run was set up with, recorded with its end so a trajectory says exactly what
/// produced it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunSetup {
    /// The rein version that ran it.
    pub rein_version: String,
    /// The provider of the model it started with.
    pub provider: String,
    /// The model id it started with.
    pub model: String,
    /// The limits it ran under (absent ones were unlimited).
    pub limits: crate::method::RunLimits,
    /// SHA-256 (hex) of the system prompt it started with.
    pub system_prompt_sha256: String,
    /// SHA-256 (hex) of the configuration files in force: the user's `config.toml`, then the
    /// trusted project's `.rein/config.toml` files; absent when there were none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_sha256: Option<String>,
    /// The project's git commit when it started, when the project is a git work tree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_commit: Option<String>,
    /// Whether the work tree had uncommitted changes when it started (with `git_commit`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_dirty: Option<bool>,
}

/// One repair made while loading a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum RepairAction {
    /// A tool call had no result; an error result saying it was interrupted was added.
    InterruptedToolCall {
        /// The call.
        tool_call_id: String,
        /// The entry id of the added result.
        result_entry_id: String,
    },
    /// A second result for one call was dropped.
    DuplicateResultDropped {
        /// The call.
        tool_call_id: String,
        /// The dropped entry.
        entry_id: String,
    },
    /// A result with no matching call was dropped.
    OrphanResultDropped {
        /// The call id the result named.
        tool_call_id: String,
        /// The dropped entry.
        entry_id: String,
    },
    /// A result that stood away from its call was moved back behind it.
    ResultReordered {
        /// The call.
        tool_call_id: String,
        /// The moved entry.
        entry_id: String,
    },
    /// Lines that could not be parsed were set aside in the `.corrupt` sidecar file.
    CorruptLinesSkipped {
        /// 1-based line numbers in the session file.
        lines: Vec<u64>,
        /// The sidecar file's path.
        sidecar: String,
    },
    /// The session file was deleted or replaced while the session was loaded (a sync tool,
    /// `git clean`, a person tidying up), so entries were no longer reaching the file its path
    /// names. The file was written again from the daemon's copy of every entry.
    FileRestored {
        /// What had happened to the file: `missing` or `replaced`.
        cause: String,
        /// Where the file found in its place was moved, when it was replaced.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        set_aside: Option<String>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::UserMessage;

    fn entry(kind: EntryKind) -> SessionEntry {
        SessionEntry {
            id: "a1b2c3d4".into(),
            parent_id: Some("00000000".into()),
            timestamp: "2026-11-30T10:00:00Z".into(),
            kind,
        }
    }

    #[test]
    fn every_entry_kind_round_trips() {
        let kinds = vec![
            EntryKind::Message { message: Arc::new(Message::User(UserMessage::text("hi", 1))) },
            EntryKind::ModelChange { provider: "p".into(), model: "m".into() },
            EntryKind::ThinkingLevelChange { thinking_level: ThinkingLevel::High },
            EntryKind::ApprovalPolicyChange {
                approval_policy: crate::method::ApprovalPolicy::AutoEdit,
            },
            EntryKind::RunEnd {
                run_id: "r".into(),
                reason: crate::event::EndReason::MaxTurns,
                error: None,
                turns: 3,
                setup: Box::new(RunSetup {
                    rein_version: "0.1.0".into(),
                    provider: "p".into(),
                    model: "m".into(),
                    limits: crate::method::RunLimits { max_turns: Some(3), ..Default::default() },
                    system_prompt_sha256: "ab".into(),
                    config_sha256: Some("cd".into()),
                    git_commit: Some("ef".into()),
                    git_dirty: Some(true),
                }),
            },
            EntryKind::Compaction {
                summary: "s".into(),
                first_kept_entry_id: "x".into(),
                tokens_before: 10,
                usage: Some(Box::default()),
                reason: "manual".into(),
            },
            EntryKind::BranchSummary { from_id: "y".into(), summary: "tried".into(), usage: None },
            EntryKind::Label { target_id: "z".into(), label: Some("good".into()) },
            EntryKind::SessionInfo { name: Some("fix bug".into()) },
            EntryKind::Repair {
                actions: vec![
                    RepairAction::InterruptedToolCall {
                        tool_call_id: "c".into(),
                        result_entry_id: "r".into(),
                    },
                    RepairAction::DuplicateResultDropped {
                        tool_call_id: "c".into(),
                        entry_id: "e".into(),
                    },
                    RepairAction::OrphanResultDropped {
                        tool_call_id: "c".into(),
                        entry_id: "e".into(),
                    },
                    RepairAction::ResultReordered {
                        tool_call_id: "c".into(),
                        entry_id: "e".into(),
                    },
                    RepairAction::CorruptLinesSkipped { lines: vec![3], sidecar: "f".into() },
                ],
            },
            EntryKind::Custom { custom_type: "ext".into(), data: serde_json::json!({"k": 1}) },
        ];
        for kind in kinds {
            let e = entry(kind);
            let text = serde_json::to_string(&e).unwrap();
            let back: SessionEntry = serde_json::from_str(&text).unwrap();
            assert_eq!(back, e, "{text}");
        }
    }

    #[test]
    fn entry_is_flat_on_the_wire() {
        let value = serde_json::to_value(entry(EntryKind::SessionInfo { name: None })).unwrap();
        assert_eq!(value["type"], "session_info");
        assert_eq!(value["id"], "a1b2c3d4");
    }

    #[test]
    fn unknown_entry_kind_is_kept_as_unknown() {
        let text = r#"{"id":"q","parent_id":null,"timestamp":"t","type":"hologram","beam":3}"#;
        let e: SessionEntry = serde_json::from_str(text).unwrap();
        assert_eq!(e.kind, EntryKind::Unknown);
        assert_eq!(e.id, "q");
    }
}
