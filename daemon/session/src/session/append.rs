//! An append in two steps, so that a caller can wait for the fsync without holding the
//! session: [`Session::queue_append`] chains the entries after the active leaf and sends them
//! to the file's writer thread; once the writer answered, [`Session::finish_append`] makes sure
//! the path still names the file and puts the entries in the tree. Until then no read of the
//! session shows them, so nothing reads an entry that a crash could lose.

use std::collections::HashSet;
use std::sync::PoisonError;

use rein_protocol::{EntryKind, SessionEntry};

use super::Session;
use crate::error::SessionError;
use crate::ids::{new_entry_id, now_rfc3339};
use crate::storage::PathState;
use crate::writer::AppendTicket;

/// Entries sent to the session file's writer and not yet in the session: hand it back to
/// [`Session::finish_append`] with what its ticket answered.
#[derive(Debug)]
#[must_use = "the entries are in the session only once the append is finished"]
pub struct QueuedAppend {
    /// The entries, chained after the leaf they were queued on.
    written: Vec<SessionEntry>,
    /// The active leaf once they are in.
    leaf: Option<String>,
}

impl Session {
    /// Chains `kinds` after the active leaf and sends them to the file's writer as one append
    /// (one write, one fsync) without waiting; the ticket resolves once they are durable.
    /// One append at a time: finish this one before queueing the next, whose chain starts at
    /// the leaf this one leaves.
    pub fn queue_append(
        &mut self,
        kinds: Vec<EntryKind>,
    ) -> Result<(QueuedAppend, AppendTicket), SessionError> {
        self.queue_entries(kinds.into_iter().map(|kind| (None, kind)).collect())
    }

    /// [`Session::queue_append`] where an entry may bring its own id (synthesized repair
    /// results do); otherwise a fresh one is made.
    pub(crate) fn queue_entries(
        &mut self,
        entries: Vec<(Option<String>, EntryKind)>,
    ) -> Result<(QueuedAppend, AppendTicket), SessionError> {
        let timestamp = now_rfc3339();
        let mut parent = self.leaf_id().map(str::to_string);
        let mut minted: HashSet<String> = HashSet::new();
        let mut written = Vec::with_capacity(entries.len());
        for (id, kind) in entries {
            let id = id.unwrap_or_else(|| {
                new_entry_id(|id| self.tree.contains(id) || minted.contains(id))
            });
            minted.insert(id.clone());
            // A leaf move is not part of the chain: what follows it hangs off its target.
            let next_parent = match crate::tree::leaf_move_target(&kind) {
                Some(target) => target.map(str::to_string),
                None => Some(id.clone()),
            };
            written.push(SessionEntry {
                id,
                parent_id: parent.clone(),
                timestamp: timestamp.clone(),
                kind,
            });
            parent = next_parent;
        }
        let ticket = self.file.submit(&written)?;
        Ok((QueuedAppend { written, leaf: parent }, ticket))
    }

    /// Finishes a queued append once its ticket answered `durable`: on success, and once the
    /// path names the file the entries reached (a file deleted or replaced meanwhile is
    /// written again first, see `restore_file`), the entries join the tree and the last one
    /// is the leaf. On failure nothing changes: the writer cut the entries back off the file.
    /// Returns the entries.
    pub fn finish_append(
        &mut self,
        queued: QueuedAppend,
        durable: Result<(), SessionError>,
    ) -> Result<Vec<SessionEntry>, SessionError> {
        durable?;
        let QueuedAppend { written, leaf } = queued;
        debug_assert!(
            written.first().is_none_or(|first| first.parent_id.as_deref() == self.leaf_id()),
            "another append was finished between this one's queueing and its end"
        );
        let restored = match self.file.path_state()? {
            PathState::Same => None,
            lost => Some(self.restore_file(lost, &written, leaf)?),
        };
        let tally = self.context_tally.get_mut().unwrap_or_else(PoisonError::into_inner);
        for entry in written.iter().chain(&restored) {
            if tally.as_mut().is_some_and(|tally| !tally.advance(entry)) {
                *tally = None;
            }
            self.tree.push(entry.clone());
        }
        Ok(written)
    }
}

#[cfg(test)]
mod tests {
    use crate::store::SessionStore;
    use rein_protocol::EntryKind;

    fn name(text: &str) -> EntryKind {
        EntryKind::SessionInfo { name: Some(text.into()) }
    }

    #[test]
    fn a_queued_append_joins_the_session_only_once_finished() {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::new(dir.path());
        let mut session = store.create("/p").unwrap();
        let first = session.append(name("first")).unwrap();
        let syncs = session.file_syncs();
        let (queued, ticket) = session.queue_append(vec![name("a"), name("b")]).unwrap();
        // Not in any read of the session yet.
        assert_eq!(session.tree().entries().len(), 1);
        assert_eq!(session.leaf_id(), Some(first.id.as_str()));
        ticket.wait().unwrap();
        assert_eq!(session.file_syncs() - syncs, 1, "two entries, one fsync");
        let written = session.finish_append(queued, Ok(())).unwrap();
        assert_eq!(written[0].parent_id.as_deref(), Some(first.id.as_str()));
        assert_eq!(written[1].parent_id.as_deref(), Some(written[0].id.as_str()));
        assert_eq!(session.leaf_id(), Some(written[1].id.as_str()));
        assert_eq!(session.name(), Some("b"));
        let id = session.id().to_string();
        drop(session);
        let (session, _) = store.open(&id).unwrap();
        assert_eq!(session.tree().entries().len(), 3);
    }

    #[test]
    fn a_failed_append_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::new(dir.path());
        let mut session = store.create("/p").unwrap();
        let (queued, ticket) = session.queue_append(vec![name("a")]).unwrap();
        ticket.wait().unwrap();
        let failure = crate::error::SessionError::Io {
            action: "append to",
            path: session.path().to_path_buf(),
            source: std::io::Error::other("disk full"),
        };
        assert!(session.finish_append(queued, Err(failure)).is_err());
        assert!(session.tree().entries().is_empty());
        assert_eq!(session.leaf_id(), None);
    }
}
