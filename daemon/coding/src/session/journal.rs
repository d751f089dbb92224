//! The session file as the coding session writes it: every write goes through here and every
//! entry written is announced with `EntryAppended` after it is durable.

use std::sync::{Mutex, MutexGuard, PoisonError};

use rein_protocol::SessionEntry;
use rein_protocol::event::SessionEvent;
use rein_session::{Session, SessionError};

use super::environment::EventSink;
use super::error::CodingError;

/// The open (locked) session file and where its announcements go. Closing drops the file,
/// which releases its lock; later calls fail with [`CodingError::Closed`].
pub(crate) struct Journal {
    session: Mutex<Option<Session>>,
    sink: EventSink,
}

impl Journal {
    /// Wraps an open session file.
    pub(crate) fn new(session: Session, sink: EventSink) -> Self {
        Self { session: Mutex::new(Some(session)), sink }
    }

    fn lock(&self) -> MutexGuard<'_, Option<Session>> {
        self.session.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Reads the session file's state.
    pub(crate) fn read<T>(&self, read: impl FnOnce(&Session) -> T) -> Result<T, CodingError> {
        self.lock().as_ref().map(read).ok_or(CodingError::Closed)
    }

    /// Writes to the session file, then hands the appended entries to `announce`, still
    /// under the file's lock, so announcements of concurrent writers follow the file's order.
    pub(crate) fn write_then<T>(
        &self,
        write: impl FnOnce(&mut Session) -> Result<T, SessionError>,
        announce: impl FnOnce(&[SessionEntry]),
    ) -> Result<T, CodingError> {
        let mut guard = self.lock();
        let session = guard.as_mut().ok_or(CodingError::Closed)?;
        let before = session.tree().entries().len();
        let value = write(session)?;
        announce(session.tree().entries().get(before..).unwrap_or_default());
        Ok(value)
    }

    /// Writes to the session file, then announces every appended entry with
    /// `EntryAppended`.
    pub(crate) fn write<T>(
        &self,
        write: impl FnOnce(&mut Session) -> Result<T, SessionError>,
    ) -> Result<T, CodingError> {
        self.write_then(write, |entries| {
            for entry in entries {
                (self.sink)(SessionEvent::EntryAppended { entry: entry.clone() });
            }
        })
    }

    /// Closes the file (releasing its lock). Returns false when it was already closed.
    pub(crate) fn close(&self) -> bool {
        self.lock().take().is_some()
    }
}
