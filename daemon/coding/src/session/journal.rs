//! The session file as the coding session writes it: every write goes through here and every
//! entry written is announced with `EntryAppended` after it is durable.
//!
//! After a run's write failed, writes are refused until that run has ended; the next write
//! then first records the tool results the failed run held back (see [`super::unsaved`]).

use std::sync::{Mutex, MutexGuard, PoisonError};

use rein_protocol::SessionEntry;
use rein_protocol::event::SessionEvent;
use rein_protocol::message::Message;
use rein_session::{Session, SessionError};

use super::environment::EventSink;
use super::error::CodingError;
use super::unsaved::Unsaved;

/// The open (locked) session file and where its announcements go. Closing drops the file,
/// which releases its lock; later calls fail with [`CodingError::Closed`].
pub(crate) struct Journal {
    session: Mutex<Option<Session>>,
    unsaved: Mutex<Unsaved>,
    sink: EventSink,
}

impl Journal {
    /// Wraps an open session file.
    pub(crate) fn new(session: Session, sink: EventSink) -> Self {
        Self { session: Mutex::new(Some(session)), unsaved: Mutex::default(), sink }
    }

    fn lock(&self) -> MutexGuard<'_, Option<Session>> {
        self.session.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The failure state (taken after the session's lock when both are needed).
    pub(crate) fn unsaved(&self) -> MutexGuard<'_, Unsaved> {
        self.unsaved.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records that writing `message` failed with `error`; true when this is the first
    /// failure of the run.
    pub(crate) fn fail(&self, error: &CodingError, message: &Message) -> bool {
        self.unsaved().fail(error.to_string(), message)
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
        {
            let mut unsaved = self.unsaved();
            if let Some(error) = unsaved.refusal() {
                return Err(CodingError::Io(std::io::Error::other(format!(
                    "the session file could not be written ({error}); nothing more is \
                     written until the run that failed has stopped"
                ))));
            }
            if unsaved.pending() {
                let results = unsaved.results_to_write(session);
                if !results.is_empty() {
                    session.append_all(results)?;
                }
                unsaved.clear();
            }
        }
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
