//! Summaries of session files for listing, read cheaply: the header line is parsed, lines are
//! counted, and only the first user message and the last session-info line are parsed.

use std::path::Path;

use rein_protocol::message::{ContentBlock, Message};
use rein_protocol::method::SessionSummary;
use rein_protocol::{EntryKind, SessionEntry};

use crate::error::SessionError;
use crate::header::SessionHeader;
use crate::ids::format_rfc3339;
use crate::session::Session;

/// Longest first prompt shown in a listing, in characters.
const FIRST_PROMPT_CHARS: usize = 200;

/// How a user-message entry line looks in the compact JSON rein writes.
const USER_MESSAGE_MARK: &str = r#""type":"message","message":{"role":"user""#;

/// How a session-info entry line looks in the compact JSON rein writes.
const SESSION_INFO_MARK: &str = r#""type":"session_info""#;

/// The listing summary of one session file. `loaded` and `running` are left false for the
/// daemon to fill in.
pub fn summarize_file(path: &Path) -> Result<SessionSummary, SessionError> {
    let bytes = std::fs::read(path).map_err(SessionError::io("read", path))?;
    let metadata = std::fs::metadata(path).map_err(SessionError::io("stat", path))?;
    let text = String::from_utf8_lossy(&bytes);
    let (first, rest) = text.split_once('\n').unwrap_or((&text, ""));
    let header: SessionHeader = serde_json::from_str(first)
        .map_err(|e| SessionError::BadHeader { path: path.to_path_buf(), reason: e.to_string() })?;
    let entry_count = rest.split('\n').filter(|line| !line.trim().is_empty()).count() as u64;
    let first_prompt = line_at(rest, rest.find(USER_MESSAGE_MARK))
        .and_then(|line| serde_json::from_str::<SessionEntry>(line).ok())
        .and_then(|entry| match entry.kind {
            EntryKind::Message { message } => match message.as_ref() {
                Message::User(user) => Some(shorten(&user.content)),
                _ => None,
            },
            _ => None,
        });
    let name = line_at(rest, rest.rfind(SESSION_INFO_MARK))
        .and_then(|line| serde_json::from_str::<SessionEntry>(line).ok())
        .and_then(|entry| match entry.kind {
            EntryKind::SessionInfo { name } => name,
            _ => None,
        });
    Ok(summary(&header, path, &metadata, name, first_prompt, entry_count))
}

/// The summary of the session `header` begins, stored at `path` (`metadata` from it): its
/// `updated` time is the file's, `loaded` and `running` are false.
fn summary(
    header: &SessionHeader,
    path: &Path,
    metadata: &std::fs::Metadata,
    name: Option<String>,
    first_prompt: Option<String>,
    entry_count: u64,
) -> SessionSummary {
    let updated = metadata
        .modified()
        .map(|t| format_rfc3339(t.into()))
        .unwrap_or_else(|_| header.created.clone());
    SessionSummary {
        session_id: header.id.clone(),
        cwd: header.cwd.clone(),
        name,
        first_prompt,
        entry_count,
        size_bytes: metadata.len(),
        created: header.created.clone(),
        updated,
        path: path.display().to_string(),
        loaded: false,
        running: false,
    }
}

/// The listing summary of an open session, from what it holds in memory instead of reading
/// its file again: the same fields as [`summarize_file`] gives for that file (an open session
/// holds every line of its file as an entry), with the size and `updated` from one `stat`.
/// `loaded` and `running` are left false for the daemon to fill in.
pub fn summarize_session(session: &Session) -> Result<SessionSummary, SessionError> {
    let path = session.path();
    let metadata = std::fs::metadata(path).map_err(SessionError::io("stat", path))?;
    let header = session.header();
    let entries = session.tree().entries();
    let first_prompt = entries.iter().find_map(|entry| match &entry.kind {
        EntryKind::Message { message } => match message.as_ref() {
            Message::User(user) => Some(shorten(&user.content)),
            _ => None,
        },
        _ => None,
    });
    let name = session.name().map(str::to_string);
    Ok(summary(header, path, &metadata, name, first_prompt, entries.len() as u64))
}

/// The whole line around byte offset `at`.
fn line_at(text: &str, at: Option<usize>) -> Option<&str> {
    let at = at?;
    let start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let end = text[at..].find('\n').map_or(text.len(), |i| at + i);
    Some(&text[start..end])
}

/// The text of a prompt on one line, cut to [`FIRST_PROMPT_CHARS`].
fn shorten(content: &[ContentBlock]) -> String {
    let text: String =
        content.iter().filter_map(ContentBlock::as_text).collect::<Vec<_>>().join(" ");
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut chars = one_line.chars();
    let short: String = chars.by_ref().take(FIRST_PROMPT_CHARS).collect();
    if chars.next().is_some() { format!("{short}…") } else { short }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repair::tests::assistant;
    use crate::store::SessionStore;
    use rein_protocol::message::UserMessage;

    #[test]
    fn listing_reads_name_prompt_count_and_size() {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::new(dir.path());
        let mut a = store.create("/proj/a").unwrap();
        a.set_name(Some("first name".into())).unwrap();
        a.append_message(assistant("x", &[]).message).unwrap();
        a.append_message(Message::User(UserMessage::text("  fix\n the   bug ", 1))).unwrap();
        a.append_message(Message::User(UserMessage::text("second", 2))).unwrap();
        a.set_name(Some("final name".into())).unwrap();
        let b = store.create("/proj/b").unwrap();
        let listed = store.list(Some("/proj/a")).unwrap();
        assert_eq!(listed.len(), 1);
        let s = &listed[0];
        assert_eq!(s.session_id, a.id());
        assert_eq!(s.cwd, "/proj/a");
        assert_eq!(s.name.as_deref(), Some("final name"));
        assert_eq!(s.first_prompt.as_deref(), Some("fix the bug"));
        assert_eq!(s.entry_count, 5);
        assert_eq!(s.size_bytes, std::fs::metadata(a.path()).unwrap().len());
        assert_eq!(s.created, a.header().created);
        let all = store.list(None).unwrap();
        let mut ids: Vec<_> = all.iter().map(|s| s.session_id.as_str()).collect();
        ids.sort();
        let mut expected = vec![a.id(), b.id()];
        expected.sort();
        assert_eq!(ids, expected);
        assert!(store.list(Some("/nowhere")).unwrap().is_empty());
        let empty = &store.list(Some("/proj/b")).unwrap()[0];
        assert_eq!(
            (empty.entry_count, empty.first_prompt.as_deref(), empty.name.as_deref()),
            (0, None, None)
        );
    }

    #[test]
    fn an_open_sessions_summary_from_memory_matches_its_files() {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::new(dir.path());
        let mut session = store.create("/proj/a").unwrap();
        let empty = summarize_session(&session).unwrap();
        assert_eq!(empty, summarize_file(session.path()).unwrap());
        session.set_name(Some("first name".into())).unwrap();
        session.append_message(assistant("x", &[]).message).unwrap();
        let long = format!("  fix\n the   bug {}", "word ".repeat(60));
        session.append_message(Message::User(UserMessage::text(long, 1))).unwrap();
        session.append_message(Message::User(UserMessage::text("second", 2))).unwrap();
        session.set_name(Some("final name".into())).unwrap();
        let from_memory = summarize_session(&session).unwrap();
        assert_eq!(from_memory, summarize_file(session.path()).unwrap());
        assert_eq!(from_memory.name.as_deref(), Some("final name"));
        assert_eq!(from_memory.entry_count, 5);
        assert!(from_memory.first_prompt.as_deref().is_some_and(|p| p.starts_with("fix the bug")));
        // A name cleared last is no name, in memory as in the file.
        session.set_name(None).unwrap();
        let cleared = summarize_session(&session).unwrap();
        assert_eq!(cleared, summarize_file(session.path()).unwrap());
        assert_eq!(cleared.name, None);
    }

    #[test]
    fn long_prompts_are_cut() {
        let long = "word ".repeat(100);
        let short = shorten(&[ContentBlock::text(long)]);
        assert_eq!(short.chars().count(), FIRST_PROMPT_CHARS + 1);
        assert!(short.ends_with('…'));
    }
}
