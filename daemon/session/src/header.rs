//! The header line: the first line of every session file.

use serde::{Deserialize, Serialize};

/// The session file format version this build writes. Readers accept this version and older.
pub const FORMAT_VERSION: u32 = 1;

/// The `type` of a header line; only `session` exists.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HeaderType {
    /// A session file header.
    #[default]
    Session,
}

/// The first line of a session file: which format it is in, which session it holds and where
/// that session works.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionHeader {
    /// Always `session`: marks the line as a header.
    #[serde(rename = "type")]
    pub kind: HeaderType,
    /// The format version the file was written in.
    pub version: u32,
    /// The session id (a uuid v7).
    pub id: String,
    /// The project directory the session works in.
    pub cwd: String,
    /// RFC 3339 creation time.
    pub created: String,
    /// The session this one was forked from, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_session: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_is_tagged_and_round_trips() {
        let header = SessionHeader {
            kind: HeaderType::Session,
            version: FORMAT_VERSION,
            id: "0190-abc".into(),
            cwd: "/tmp/p".into(),
            created: "2026-11-30T10:00:00Z".into(),
            parent_session: None,
        };
        let text = serde_json::to_string(&header).unwrap();
        assert!(text.starts_with(r#"{"type":"session","version":1,"#), "{text}");
        assert_eq!(serde_json::from_str::<SessionHeader>(&text).unwrap(), header);
        let entry = r#"{"type":"message","version":1,"id":"x","cwd":"/","created":"t"}"#;
        assert!(serde_json::from_str::<SessionHeader>(entry).is_err());
    }
}
