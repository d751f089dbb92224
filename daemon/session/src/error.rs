//! The one error type of the session layer.

use std::path::PathBuf;

use rein_ai::ProviderErrorKind;
use rein_protocol::ErrorKind;

/// Everything that can go wrong while reading or writing sessions.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// A file system operation failed.
    #[error("{action} {path}: {source}")]
    Io {
        /// What was being done (`open`, `append to`, ...).
        action: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// Another open handle (this process or another) holds the session file's lock.
    #[error("session file {path} is locked by another writer")]
    Locked {
        /// The session file.
        path: PathBuf,
    },
    /// No session file has that id.
    #[error("no session with id {0}")]
    NotFound(String),
    /// The session has no entry with that id.
    #[error("no entry with id {0} in the session")]
    EntryNotFound(String),
    /// The first line of a session file is not a valid header.
    #[error("session file {path} has no valid header: {reason}")]
    BadHeader {
        /// The session file.
        path: PathBuf,
        /// What was wrong.
        reason: String,
    },
    /// The file was written by a newer rein with a format this version cannot read.
    #[error("session file {path} has format version {version}, newer than {supported}")]
    UnsupportedVersion {
        /// The session file.
        path: PathBuf,
        /// The file's version.
        version: u32,
        /// The newest version this build reads.
        supported: u32,
    },
    /// An entry could not be encoded as JSON (should not happen for protocol types).
    #[error("could not encode entry: {0}")]
    Encode(#[from] serde_json::Error),
    /// A compaction is already running for this session.
    #[error("a compaction is already running for this session")]
    CompactionInProgress,
    /// There is nothing to compact: the context holds no messages since the last compaction.
    #[error("nothing to compact")]
    NothingToCompact,
    /// The session moved on while a summary was generated, so the result no longer fits.
    #[error("the session changed while the summary was generated: {0}")]
    Stale(String),
    /// The model failed to produce a summary.
    #[error("summary request failed: {message}")]
    Summary {
        /// The provider's failure kind.
        kind: ProviderErrorKind,
        /// The provider's message.
        message: String,
    },
}

impl SessionError {
    /// The protocol error kind a daemon reports for this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::Io { .. } | Self::BadHeader { .. } | Self::UnsupportedVersion { .. } => {
                ErrorKind::Io
            }
            Self::Locked { .. } => ErrorKind::SessionLocked,
            Self::NotFound(_) => ErrorKind::SessionNotFound,
            Self::EntryNotFound(_) => ErrorKind::EntryNotFound,
            Self::Encode(_) => ErrorKind::Internal,
            Self::CompactionInProgress | Self::Stale(_) => ErrorKind::CompactionInProgress,
            Self::NothingToCompact => ErrorKind::InvalidParams,
            Self::Summary { .. } => ErrorKind::ProviderError,
        }
    }

    /// Wraps an I/O error with what was being done and to which path.
    pub(crate) fn io(
        action: &'static str,
        path: impl Into<PathBuf>,
    ) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| Self::Io { action, path, source }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_map_to_protocol_kinds() {
        let locked = SessionError::Locked { path: "/s.jsonl".into() };
        assert_eq!(locked.kind(), ErrorKind::SessionLocked);
        assert!(locked.to_string().contains("/s.jsonl"));
        assert_eq!(SessionError::NotFound("x".into()).kind(), ErrorKind::SessionNotFound);
        assert_eq!(SessionError::EntryNotFound("x".into()).kind(), ErrorKind::EntryNotFound);
        assert_eq!(SessionError::CompactionInProgress.kind(), ErrorKind::CompactionInProgress);
        let summary =
            SessionError::Summary { kind: ProviderErrorKind::Network, message: "down".into() };
        assert_eq!(summary.kind(), ErrorKind::ProviderError);
        let io = SessionError::io("read", "/f")(std::io::Error::other("disk"));
        assert_eq!(io.kind(), ErrorKind::Io);
        assert_eq!(io.to_string(), "read /f: disk");
    }
}
