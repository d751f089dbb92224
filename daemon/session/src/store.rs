//! The storage root: creating, finding, opening, forking, listing and deleting session files.

use std::path::{Path, PathBuf};

use rein_protocol::method::{ListSessionsResult, ListingError, SessionSummary};

use crate::error::SessionError;
use crate::header::{FORMAT_VERSION, SessionHeader};
use crate::ids::{new_session_id, now_rfc3339};
use crate::listing::summarize_file;
use crate::paths::{self, SESSION_EXTENSION};
use crate::session::{LoadReport, Session};
use crate::storage::{SessionFile, SessionLock};

/// The sessions under one storage root (`$REIN_HOME`, passed in by the caller):
/// `<root>/sessions/<project dir name>/<session id>.jsonl`.
#[derive(Debug, Clone)]
pub struct SessionStore {
    root: PathBuf,
}

impl SessionStore {
    /// A store rooted at `root`. Nothing is created until a session is.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The storage root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Creates a new, empty session working in `cwd`; it is returned open (locked).
    pub fn create(&self, cwd: &str) -> Result<Session, SessionError> {
        self.create_with(cwd, None, Vec::new())
    }

    fn create_with(
        &self,
        cwd: &str,
        parent_session: Option<String>,
        entries: Vec<rein_protocol::SessionEntry>,
    ) -> Result<Session, SessionError> {
        let header = SessionHeader {
            kind: crate::header::HeaderType::Session,
            version: FORMAT_VERSION,
            id: new_session_id(),
            cwd: cwd.to_string(),
            created: now_rfc3339(),
            parent_session,
        };
        let path = paths::session_file(&self.root, cwd, &header.id);
        let file = SessionFile::create(&path, &header, &entries)?;
        Ok(Session::from_new_file(header, file, entries))
    }

    /// The file of the session with this id, searching every project directory.
    pub fn find(&self, session_id: &str) -> Result<PathBuf, SessionError> {
        let plain = !session_id.is_empty()
            && session_id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !plain {
            return Err(SessionError::NotFound(session_id.to_string()));
        }
        let file_name = format!("{session_id}.{SESSION_EXTENSION}");
        for dir in self.project_dirs()? {
            let candidate = dir.join(&file_name);
            if candidate.is_file() {
                return Ok(candidate);
            }
        }
        Err(SessionError::NotFound(session_id.to_string()))
    }

    /// Opens (and locks) the session with this id, repairing it if needed.
    pub fn open(&self, session_id: &str) -> Result<(Session, LoadReport), SessionError> {
        let path = self.find(session_id)?;
        Session::open(&path)
    }

    /// Copies the root-to-entry path ending at `entry_id` of `source` into a new session (new
    /// id, same cwd, `parent_session` set), returned open.
    pub fn fork(&self, source: &Session, entry_id: &str) -> Result<Session, SessionError> {
        source.require_entry(entry_id)?;
        let entries: Vec<_> = source.tree().path_to(Some(entry_id)).into_iter().cloned().collect();
        self.create_with(source.cwd(), Some(source.id().to_string()), entries)
    }

    /// Deletes a session file (with its lock and corrupt sidecar). Refused with `Locked` while
    /// any handle, this process's included, has the session open.
    pub fn delete(&self, session_id: &str) -> Result<(), SessionError> {
        let path = self.find(session_id)?;
        let lock = SessionLock::acquire(&path)?;
        std::fs::remove_file(&path).map_err(SessionError::io("delete", &path))?;
        let corrupt = paths::corrupt_file(&path);
        if corrupt.exists() {
            std::fs::remove_file(&corrupt).map_err(SessionError::io("delete", &corrupt))?;
        }
        let lock_path = paths::lock_file(&path);
        std::fs::remove_file(&lock_path).map_err(SessionError::io("delete", &lock_path))?;
        drop(lock);
        crate::storage::sync_parent_dir(&path)
    }

    /// Summaries of the sessions of `cwd` (all sessions when `None`), most recently updated
    /// first. Files and directories that cannot be read are skipped (see
    /// [`SessionStore::list_with_errors`] for what was skipped).
    pub fn list(&self, cwd: Option<&str>) -> Result<Vec<SessionSummary>, SessionError> {
        self.list_with_errors(cwd).map(|listing| listing.sessions)
    }

    /// Summaries of the sessions of `cwd` (all sessions when `None`), most recently updated
    /// first, and every session file or project directory that could not be read. Only an
    /// unreadable sessions directory (`<root>/sessions`) itself is an error.
    pub fn list_with_errors(&self, cwd: Option<&str>) -> Result<ListSessionsResult, SessionError> {
        self.list_with_errors_using(cwd, |_| None)
    }

    /// Like [`SessionStore::list_with_errors`], but a session for whose id `in_memory` gives a
    /// summary (an open session, see [`crate::listing::summarize_session`]) is listed with it
    /// instead of reading its file.
    pub fn list_with_errors_using(
        &self,
        cwd: Option<&str>,
        in_memory: impl Fn(&str) -> Option<SessionSummary>,
    ) -> Result<ListSessionsResult, SessionError> {
        let dirs = match cwd {
            Some(cwd) => vec![paths::sessions_dir(&self.root).join(paths::project_dir_name(cwd))],
            None => self.project_dirs()?,
        };
        let mut listing = ListSessionsResult::default();
        let mut skip = |path: &Path, error: &dyn std::fmt::Display| {
            tracing::warn!(path = %path.display(), %error, "skipping what cannot be read");
            listing_error(&mut listing.errors, path, error);
        };
        let mut sessions = Vec::new();
        for dir in dirs {
            let files = match session_files(&dir) {
                Ok(files) => files,
                Err(error) => {
                    skip(&dir, &error);
                    continue;
                }
            };
            for path in files {
                let known = path.file_stem().and_then(|id| in_memory(&id.to_string_lossy()));
                match known.map_or_else(|| summarize_file(&path), Ok) {
                    Ok(summary) if cwd.is_none_or(|c| c == summary.cwd) => sessions.push(summary),
                    Ok(_) => {}
                    Err(error) => skip(&path, &error),
                }
            }
        }
        sessions.sort_by(|a, b| {
            b.updated.cmp(&a.updated).then_with(|| b.session_id.cmp(&a.session_id))
        });
        listing.sessions = sessions;
        Ok(listing)
    }

    fn project_dirs(&self) -> Result<Vec<PathBuf>, SessionError> {
        // A symbolic link is followed (a project's sessions may live elsewhere); one that
        // cannot be read is reported by the listing.
        dir_items(&paths::sessions_dir(&self.root), |item| {
            item.file_type().is_ok_and(|t| t.is_dir() || t.is_symlink())
        })
    }
}

/// Records a path that could not be read.
fn listing_error(errors: &mut Vec<ListingError>, path: &Path, error: &dyn std::fmt::Display) {
    errors.push(ListingError { path: path.display().to_string(), message: error.to_string() });
}

/// The `*.jsonl` files of one project directory (none when it does not exist).
fn session_files(dir: &Path) -> Result<Vec<PathBuf>, SessionError> {
    dir_items(dir, |item| item.path().extension().is_some_and(|e| e == SESSION_EXTENSION))
}

/// The paths of the items of `dir` that `keep` accepts; none when `dir` does not exist.
fn dir_items(
    dir: &Path,
    keep: impl Fn(&std::fs::DirEntry) -> bool,
) -> Result<Vec<PathBuf>, SessionError> {
    let read = match std::fs::read_dir(dir) {
        Ok(read) => read,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(SessionError::Io { action: "list", path: dir.into(), source: e }),
    };
    let mut items = Vec::new();
    for item in read {
        let item = item.map_err(SessionError::io("list", dir))?;
        if keep(&item) {
            items.push(item.path());
        }
    }
    Ok(items)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repair::tests::{assistant, result, user};
    use rein_protocol::message::Message;

    #[test]
    fn fork_copies_the_path_into_a_new_session() {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::new(dir.path());
        let mut session = store.create("/p").unwrap();
        let u1 = session.append_message(user("u1").message).unwrap().id;
        session.append_message(assistant("a", &["c"]).message).unwrap();
        let r = session.append_message(result("r", "c").message).unwrap().id;
        session.append_message(user("u2").message).unwrap();
        let fork = store.fork(&session, &r).unwrap();
        assert_ne!(fork.id(), session.id());
        assert_eq!(fork.cwd(), "/p");
        assert_eq!(fork.header().parent_session.as_deref(), Some(session.id()));
        assert_eq!(fork.leaf_id(), Some(r.as_str()));
        let expected: Vec<Message> = session.context_messages()[..3].to_vec();
        assert_eq!(fork.context_messages(), expected);
        let fork_id = fork.id().to_string();
        drop(fork);
        let (fork, report) = store.open(&fork_id).unwrap();
        assert!(report.actions.is_empty());
        assert_eq!(fork.tree().entries()[0].id, u1);
        assert!(matches!(store.fork(&session, "nope"), Err(SessionError::EntryNotFound(_))));
    }

    #[test]
    fn listing_skips_what_it_cannot_read_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::new(dir.path());
        let session = store.create("/p").unwrap();
        let project = session.path().parent().unwrap().to_path_buf();
        // A "session file" that cannot be read (a directory), and a project directory that
        // cannot be listed (a symbolic link to itself); both fail for root too.
        let bad_file = project.join("broken.jsonl");
        std::fs::create_dir(&bad_file).unwrap();
        let bad_dir = paths::sessions_dir(dir.path()).join("loop");
        std::os::unix::fs::symlink(&bad_dir, &bad_dir).unwrap();

        let listing = store.list_with_errors(Some("/p")).unwrap();
        assert_eq!(listing.sessions.len(), 1);
        assert_eq!(listing.errors.len(), 1, "{:?}", listing.errors);
        assert_eq!(listing.errors[0].path, bad_file.display().to_string());

        let all = store.list_with_errors(None).unwrap();
        assert_eq!(all.sessions.len(), 1);
        let mut paths: Vec<&str> = all.errors.iter().map(|e| e.path.as_str()).collect();
        paths.sort_unstable();
        let mut expected = [bad_file.display().to_string(), bad_dir.display().to_string()];
        expected.sort_unstable();
        assert_eq!(paths, expected);
        assert!(all.errors.iter().all(|e| !e.message.is_empty()));
        assert_eq!(store.list(None).unwrap().len(), 1);
    }

    #[test]
    fn delete_is_refused_while_open() {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::new(dir.path());
        let session = store.create("/p").unwrap();
        let id = session.id().to_string();
        assert!(matches!(store.delete(&id), Err(SessionError::Locked { .. })));
        drop(session);
        store.delete(&id).unwrap();
        assert!(matches!(store.open(&id), Err(SessionError::NotFound(_))));
        assert!(matches!(store.find("../x"), Err(SessionError::NotFound(_))));
    }
}
