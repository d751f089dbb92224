//! Finding what a command names: a session from an id, an id prefix or the working
//! directory, and a directory as the absolute path the daemon wants.

use crate::client::{Client, ClientError};
use rein_protocol::method::{ListSessionsParams, ListSessionsResult, SessionSummary};
use rein_protocol::requests as rq;
use std::path::{Path, PathBuf};

/// `dir` (default: the current directory) made absolute and canonical.
pub fn absolute_dir(dir: Option<&Path>) -> std::io::Result<PathBuf> {
    let dir = match dir {
        Some(dir) => dir.to_path_buf(),
        None => std::env::current_dir()?,
    };
    dir.canonicalize()
}

/// Sessions on disk, most recent first; only those of `cwd` when given.
pub async fn list_sessions(
    client: &mut Client,
    cwd: Option<&Path>,
) -> Result<Vec<SessionSummary>, ClientError> {
    Ok(list_sessions_with_errors(client, cwd).await?.sessions)
}

/// `session/list` as the daemon answers it, every page: the sessions and what it could not
/// read.
pub async fn list_sessions_with_errors(
    client: &mut Client,
    cwd: Option<&Path>,
) -> Result<ListSessionsResult, ClientError> {
    let cwd = cwd.map(|dir| dir.display().to_string());
    let params = ListSessionsParams { cwd: cwd.clone(), ..ListSessionsParams::default() };
    let mut listed: ListSessionsResult = client.request::<rq::SessionList>(params).await?;
    while let Some(cursor) = listed.next_cursor.take() {
        let params = ListSessionsParams { cwd: cwd.clone(), limit: None, cursor: Some(cursor) };
        let page: ListSessionsResult = client.request::<rq::SessionList>(params).await?;
        listed.sessions.extend(page.sessions);
        listed.next_cursor = page.next_cursor;
    }
    Ok(listed)
}

/// The most recently updated session of `cwd` that holds a prompt (empty sessions, such as
/// one left by a client that never sent a prompt, are skipped). Fetched a page at a time, so
/// usually only the newest few are sent.
pub async fn latest_session(
    client: &mut Client,
    cwd: &Path,
) -> Result<Option<SessionSummary>, ClientError> {
    let cwd = Some(cwd.display().to_string());
    let mut cursor = None;
    loop {
        let params = ListSessionsParams { cwd: cwd.clone(), limit: Some(16), cursor };
        let page: ListSessionsResult = client.request::<rq::SessionList>(params).await?;
        if let Some(found) = page.sessions.into_iter().find(|s| !is_empty(s)) {
            return Ok(Some(found));
        }
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return Ok(None),
        }
    }
}

/// Whether a listed session holds no prompt yet: nothing to continue or attach to.
pub fn is_empty(summary: &SessionSummary) -> bool {
    summary.first_prompt.is_none()
}

/// Whether `text` has the shape of a whole session id (the daemon names sessions with
/// UUIDs), so opening it directly may work without listing every session first.
pub fn may_be_whole_id(text: &str) -> bool {
    uuid::Uuid::try_parse(text).is_ok()
}

/// The full id of the session `text` names: an exact id, or a prefix that only one session
/// has. Anything else is returned unchanged, so the daemon reports `session_not_found`. A
/// whole id is returned as it is without listing (listing reads every session file of the
/// home): it can only name itself, and the daemon says when no session has it.
pub async fn session_id(client: &mut Client, text: &str) -> Result<String, ClientError> {
    if may_be_whole_id(text) {
        return Ok(text.to_string());
    }
    let sessions = list_sessions(client, None).await?;
    Ok(match_session(&sessions, text).unwrap_or(text).to_string())
}

/// The id among `sessions` that `text` names exactly or as a unique prefix.
pub fn match_session<'a>(sessions: &'a [SessionSummary], text: &str) -> Option<&'a str> {
    if let Some(exact) = sessions.iter().find(|s| s.session_id == text) {
        return Some(&exact.session_id);
    }
    let mut matches =
        sessions.iter().filter(|s| !text.is_empty() && s.session_id.starts_with(text));
    match (matches.next(), matches.next()) {
        (Some(only), None) => Some(&only.session_id),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(id: &str) -> SessionSummary {
        SessionSummary {
            session_id: id.into(),
            cwd: "/p".into(),
            name: None,
            first_prompt: None,
            entry_count: 0,
            size_bytes: 0,
            created: String::new(),
            updated: String::new(),
            path: String::new(),
            loaded: false,
            running: false,
        }
    }

    #[test]
    fn only_whole_ids_are_opened_without_listing() {
        assert!(may_be_whole_id("01a2338c-23c3-728f-a6c6-f7e3df6ad764"));
        assert!(!may_be_whole_id("01a2338c"));
        assert!(!may_be_whole_id(""));
        assert!(!may_be_whole_id("../01a2338c-23c3-728f-a6c6-f7e3df6ad764"));
    }

    #[test]
    fn sessions_match_by_id_or_unique_prefix() {
        let sessions = vec![summary("abc123"), summary("abd456"), summary("abc")];
        assert_eq!(match_session(&sessions, "abc"), Some("abc"));
        assert_eq!(match_session(&sessions, "abd"), Some("abd456"));
        assert_eq!(match_session(&sessions, "ab"), None);
        assert_eq!(match_session(&sessions, "zz"), None);
        assert_eq!(match_session(&sessions, ""), None);
    }

    #[test]
    fn sessions_without_a_prompt_count_as_empty() {
        let mut used = summary("a");
        used.first_prompt = Some("fix it".into());
        assert!(!is_empty(&used));
        assert!(is_empty(&summary("b")));
    }

    #[test]
    fn directories_become_absolute() {
        let dir = std::env::temp_dir();
        let resolved = absolute_dir(Some(&dir)).unwrap();
        assert!(resolved.is_absolute());
        assert!(absolute_dir(Some(Path::new("/no/such/dir/anywhere"))).is_err());
    }
}
