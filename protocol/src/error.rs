//! Error codes: a stable number and a `kind` string for every error the daemon returns.
//!
//! A JSON-RPC error from the daemon always has `data.kind` (one of [`ErrorKind`]'s names) so a
//! client can match on a word instead of a number; `data` may carry more, such as the `field`
//! a bad param was found in.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Every error kind the daemon returns, with its stable JSON-RPC code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The line was not valid JSON (or not UTF-8).
    ParseError,
    /// The JSON was not a valid JSON-RPC 2.0 request, or the line was longer than the limit.
    InvalidRequest,
    /// No such method.
    MethodNotFound,
    /// The params did not match the method; `data.field` names the culprit when known.
    InvalidParams,
    /// A fault inside the daemon; it keeps serving.
    Internal,
    /// No session with that id.
    SessionNotFound,
    /// The session is running; use steer or follow-up, or wait.
    SessionBusy,
    /// Another process holds the session file's lock.
    SessionLocked,
    /// No entry with that id in the session.
    EntryNotFound,
    /// The model provider failed.
    ProviderError,
    /// No model named so, or its provider is not configured.
    ModelNotFound,
    /// The project is not trusted for what was asked.
    NotTrusted,
    /// An approval was denied.
    ApprovalDenied,
    /// No pending approval with that id (already answered, or expired).
    ApprovalNotFound,
    /// A compaction is already running, or the session is busy answering.
    CompactionInProgress,
    /// The client's protocol major version differs from the daemon's.
    IncompatibleProtocol,
    /// The daemon is shutting down and takes no new work.
    ShuttingDown,
    /// A file system operation failed.
    Io,
    /// The daemon is at a limit (connections, buffered input); try again later.
    Overloaded,
    /// `session/undo` refused: files changed outside rein since the snapshot (the message
    /// names them); retry with `force` to overwrite them.
    UndoConflict,
    /// A sandbox was asked for (`sandbox` in the configuration, `session/create` or
    /// `rein run --sandbox`) but cannot be had here; nothing ran without it.
    SandboxUnavailable,
    /// A kind this client version does not know.
    #[serde(other)]
    #[schemars(skip)]
    Unknown,
}

impl ErrorKind {
    /// Every known kind (not `Unknown`).
    pub const ALL: [ErrorKind; 21] = [
        Self::ParseError,
        Self::InvalidRequest,
        Self::MethodNotFound,
        Self::InvalidParams,
        Self::Internal,
        Self::SessionNotFound,
        Self::SessionBusy,
        Self::SessionLocked,
        Self::EntryNotFound,
        Self::ProviderError,
        Self::ModelNotFound,
        Self::NotTrusted,
        Self::ApprovalDenied,
        Self::ApprovalNotFound,
        Self::CompactionInProgress,
        Self::IncompatibleProtocol,
        Self::ShuttingDown,
        Self::Io,
        Self::Overloaded,
        Self::UndoConflict,
        Self::SandboxUnavailable,
    ];

    /// The stable JSON-RPC error code.
    pub fn code(self) -> i32 {
        match self {
            Self::ParseError => -32700,
            Self::InvalidRequest => -32600,
            Self::MethodNotFound => -32601,
            Self::InvalidParams => -32602,
            Self::Internal => -32603,
            Self::SessionNotFound => -32001,
            Self::SessionBusy => -32002,
            Self::SessionLocked => -32003,
            Self::EntryNotFound => -32004,
            Self::ProviderError => -32005,
            Self::ModelNotFound => -32006,
            Self::NotTrusted => -32007,
            Self::ApprovalDenied => -32008,
            Self::ApprovalNotFound => -32009,
            Self::CompactionInProgress => -32010,
            Self::IncompatibleProtocol => -32011,
            Self::ShuttingDown => -32012,
            Self::Io => -32013,
            Self::Overloaded => -32020,
            Self::UndoConflict => -32021,
            Self::SandboxUnavailable => -32030,
            Self::Unknown => -32000,
        }
    }

    /// The kind with this code; `Unknown` for codes this version does not know.
    pub fn from_code(code: i32) -> Self {
        Self::ALL.into_iter().find(|kind| kind.code() == code).unwrap_or(Self::Unknown)
    }

    /// The `data.kind` string.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ParseError => "parse_error",
            Self::InvalidRequest => "invalid_request",
            Self::MethodNotFound => "method_not_found",
            Self::InvalidParams => "invalid_params",
            Self::Internal => "internal",
            Self::SessionNotFound => "session_not_found",
            Self::SessionBusy => "session_busy",
            Self::SessionLocked => "session_locked",
            Self::EntryNotFound => "entry_not_found",
            Self::ProviderError => "provider_error",
            Self::ModelNotFound => "model_not_found",
            Self::NotTrusted => "not_trusted",
            Self::ApprovalDenied => "approval_denied",
            Self::ApprovalNotFound => "approval_not_found",
            Self::CompactionInProgress => "compaction_in_progress",
            Self::IncompatibleProtocol => "incompatible_protocol",
            Self::ShuttingDown => "shutting_down",
            Self::Io => "io",
            Self::Overloaded => "overloaded",
            Self::UndoConflict => "undo_conflict",
            Self::SandboxUnavailable => "sandbox_unavailable",
            Self::Unknown => "unknown",
        }
    }

    /// When a client sees this error.
    pub fn description(self) -> &'static str {
        match self {
            Self::ParseError => "The line was not valid JSON or not valid UTF-8.",
            Self::InvalidRequest => {
                "The message was not a JSON-RPC 2.0 request, or the line exceeded the size limit."
            }
            Self::MethodNotFound => "The method does not exist.",
            Self::InvalidParams => {
                "The params do not fit the method; `data.field` names the field."
            }
            Self::Internal => "A fault inside the daemon. The daemon keeps serving.",
            Self::SessionNotFound => "No session has that id.",
            Self::SessionBusy => "The session is running; steer, queue a follow-up, or wait.",
            Self::SessionLocked => "Another process holds the session file's lock.",
            Self::EntryNotFound => "The session has no entry with that id.",
            Self::ProviderError => "The model provider failed; the message has its own text.",
            Self::ModelNotFound => "No such model, or its provider is not configured.",
            Self::NotTrusted => "The project directory is not trusted for this.",
            Self::ApprovalDenied => "The approval was denied.",
            Self::ApprovalNotFound => "No pending approval has that id.",
            Self::CompactionInProgress => "A compaction is running or the model is answering.",
            Self::IncompatibleProtocol => "The client's protocol major version is not supported.",
            Self::ShuttingDown => "The daemon is shutting down.",
            Self::Io => "A file system operation failed.",
            Self::Overloaded => {
                "The daemon is at a limit (connections or buffered input); the connection closes."
            }
            Self::UndoConflict => {
                "Undo would overwrite files changed outside rein since the snapshot; the message \
                 names them. Retry with `force` to overwrite them."
            }
            Self::SandboxUnavailable => {
                "A sandbox was asked for but bubblewrap cannot run here; the message says why. \
                 Nothing ran without the sandbox."
            }
            Self::Unknown => "An error kind this version does not know.",
        }
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The `data` member of every daemon error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ErrorData {
    /// The error kind.
    pub kind: ErrorKind,
    /// The param field at fault, for `invalid_params`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}

impl ErrorData {
    /// Data with only a kind.
    pub fn new(kind: ErrorKind) -> Self {
        Self { kind, field: None }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn codes_and_names_are_unique_and_stable() {
        let codes: HashSet<i32> = ErrorKind::ALL.iter().map(|k| k.code()).collect();
        let names: HashSet<&str> = ErrorKind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(codes.len(), ErrorKind::ALL.len());
        assert_eq!(names.len(), ErrorKind::ALL.len());
        for kind in ErrorKind::ALL {
            assert_eq!(ErrorKind::from_code(kind.code()), kind);
            let json = serde_json::to_string(&kind).unwrap();
            assert_eq!(json, format!("\"{}\"", kind.as_str()));
        }
        assert_eq!(ErrorKind::SessionNotFound.code(), -32001);
        assert_eq!(ErrorKind::from_code(-31999), ErrorKind::Unknown);
    }

    #[test]
    fn error_data_round_trips_and_tolerates_unknown_kinds() {
        let data = ErrorData { kind: ErrorKind::InvalidParams, field: Some("cwd".into()) };
        let text = serde_json::to_string(&data).unwrap();
        assert_eq!(serde_json::from_str::<ErrorData>(&text).unwrap(), data);
        let future: ErrorData = serde_json::from_str(r#"{"kind":"quota","x":1}"#).unwrap();
        assert_eq!(future.kind, ErrorKind::Unknown);
    }
}
