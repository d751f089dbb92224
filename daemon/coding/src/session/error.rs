//! The errors a [`super::CodingSession`] returns, each with the protocol error kind the daemon
//! reports.

use rein_agent::HarnessError;
use rein_protocol::ErrorKind;
use rein_session::SessionError;

use crate::approval::ApprovalNotFound;

/// Why a session request failed.
#[derive(Debug, thiserror::Error)]
pub enum CodingError {
    /// A run, a user shell command, a compaction or a branch is in progress.
    #[error("the session is busy ({0}); steer, queue a follow-up, or wait")]
    Busy(&'static str),
    /// A compaction is running.
    #[error("a compaction of this session is running")]
    CompactionInProgress,
    /// The session's model cannot be used; the message says what to set.
    #[error("{message}")]
    Model {
        /// `model_not_found` or `provider_error`.
        kind: ErrorKind,
        /// What is wrong and what to set.
        message: String,
    },
    /// No pending approval with that id.
    #[error(transparent)]
    ApprovalNotFound(#[from] ApprovalNotFound),
    /// The params do not fit (an empty command, an image that is not one).
    #[error("{0}")]
    InvalidParams(String),
    /// The session was closed.
    #[error("the session was closed")]
    Closed,
    /// The session file layer failed.
    #[error(transparent)]
    Session(#[from] SessionError),
    /// A model call made for the session (a summary) failed.
    #[error("{0}")]
    Provider(String),
    /// A file system operation failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// Taking or restoring a checkpoint failed.
    #[error("checkpoint: {0}")]
    Checkpoint(String),
    /// Undo would overwrite files changed outside rein since the snapshot.
    #[error(
        "these files changed outside rein since the snapshot: {}; undo with force to overwrite them",
        .0.join(", ")
    )]
    UndoConflict(Vec<String>),
    /// The agent harness refused.
    #[error(transparent)]
    Harness(HarnessError),
    /// The project's `.rein/config.toml` cannot be used.
    #[error(transparent)]
    ProjectConfig(#[from] crate::project_config::ProjectConfigError),
    /// The sandbox asked for cannot be had.
    #[error(transparent)]
    Environment(#[from] crate::environment::EnvironmentError),
    /// A `UserPromptSubmit` hook refused the prompt; the reason is the hook's.
    #[error("a hook blocked the prompt: {0}")]
    BlockedByHook(String),
}

impl From<HarnessError> for CodingError {
    fn from(error: HarnessError) -> Self {
        match error {
            HarnessError::Busy => Self::Busy("a run is active"),
            other => Self::Harness(other),
        }
    }
}

impl CodingError {
    /// The protocol error kind (`data.kind`) the daemon reports for this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::Busy(_) => ErrorKind::SessionBusy,
            Self::CompactionInProgress => ErrorKind::CompactionInProgress,
            Self::Model { kind, .. } => *kind,
            Self::ApprovalNotFound(_) => ErrorKind::ApprovalNotFound,
            Self::InvalidParams(_) => ErrorKind::InvalidParams,
            Self::Closed => ErrorKind::SessionNotFound,
            Self::Session(error) => error.kind(),
            Self::Provider(_) => ErrorKind::ProviderError,
            Self::Io(_) | Self::Checkpoint(_) => ErrorKind::Io,
            Self::UndoConflict(_) => ErrorKind::UndoConflict,
            Self::Harness(HarnessError::Busy) => ErrorKind::SessionBusy,
            Self::Harness(_) => ErrorKind::Internal,
            Self::ProjectConfig(_) => ErrorKind::InvalidRequest,
            Self::BlockedByHook(_) => ErrorKind::ApprovalDenied,
            Self::Environment(_) => ErrorKind::SandboxUnavailable,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_follow_the_protocol() {
        assert_eq!(CodingError::from(HarnessError::Busy).kind(), ErrorKind::SessionBusy);
        assert_eq!(CodingError::CompactionInProgress.kind(), ErrorKind::CompactionInProgress);
        assert_eq!(
            CodingError::from(SessionError::EntryNotFound("x".into())).kind(),
            ErrorKind::EntryNotFound
        );
        assert_eq!(
            CodingError::from(ApprovalNotFound("ap".into())).kind(),
            ErrorKind::ApprovalNotFound
        );
        let model = CodingError::Model { kind: ErrorKind::ModelNotFound, message: "set X".into() };
        assert_eq!(model.kind(), ErrorKind::ModelNotFound);
        assert_eq!(model.to_string(), "set X");
        assert_eq!(CodingError::Closed.kind(), ErrorKind::SessionNotFound);
    }
}
