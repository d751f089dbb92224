//! The session file as the coding session writes it: every write goes through here and every
//! entry written is announced with `EntryAppended` after it is durable.
//!
//! No async worker waits for a disk. [`Journal::append_then`] queues an append to the file's
//! writer thread (which does the write and the fsync) under the file's lock, awaits it with no
//! lock held, then finishes and announces it under the lock; writes made through the
//! session's own methods ([`Journal::write_then`]) run on a blocking thread. Writes take turns,
//! each chaining after the last. Entries that belong together go in one append, so one fsync
//! covers them (group commit): [`Journal::append_then`] takes several entries at once, and
//! [`Journal::queue`] keeps entries in memory to be written ahead of the next write, in the
//! same append ([`Journal::settle`] writes them at once).
//!
//! After a run's write failed, writes are refused until that run has ended; the next write
//! then first records the tool results the failed run held back (see [`super::unsaved`]).

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use rein_protocol::event::SessionEvent;
use rein_protocol::message::Message;
use rein_protocol::{EntryKind, SessionEntry};
use rein_session::{Session, SessionError};

use super::blocking::off_the_workers;
use super::environment::EventSink;
use super::error::CodingError;
use super::unsaved::Unsaved;

/// The open (locked) session file and where its announcements go. Closing drops the file,
/// which releases its lock; later calls fail with [`CodingError::Closed`].
///
/// Locks, in order: the write turn (`turn`, async, held across the wait for a write), the
/// file (`session`), then the failure state (`unsaved`), then the queued entries (`queued`);
/// `queued` is also taken alone, by [`Journal::queue`].
pub(crate) struct Journal {
    /// Held by a write from before it is queued until it is finished and announced, so writes
    /// follow one another (each chains after the last) while the file's lock is free for
    /// reads. Taken before `session`.
    turn: Arc<tokio::sync::Mutex<()>>,
    session: Mutex<Option<Session>>,
    unsaved: Mutex<Unsaved>,
    queued: Mutex<Vec<EntryKind>>,
    sink: EventSink,
}

impl Journal {
    /// Wraps an open session file.
    pub(crate) fn new(session: Session, sink: EventSink) -> Self {
        Self {
            turn: Arc::default(),
            session: Mutex::new(Some(session)),
            unsaved: Mutex::default(),
            queued: Mutex::default(),
            sink,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Option<Session>> {
        self.session.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The failure state (taken after the session's lock when both are needed).
    pub(crate) fn unsaved(&self) -> MutexGuard<'_, Unsaved> {
        self.unsaved.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn queued(&self) -> MutexGuard<'_, Vec<EntryKind>> {
        self.queued.lock().unwrap_or_else(PoisonError::into_inner)
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

    /// [`Journal::read`] on a blocking thread, for a read that does file I/O of its own (a
    /// fork writes a new session file).
    pub(crate) async fn read_blocking<T: Send + 'static>(
        self: &Arc<Self>,
        read: impl FnOnce(&Session) -> T + Send + 'static,
    ) -> Result<T, CodingError> {
        let journal = Arc::clone(self);
        off_the_workers(move || journal.read(read)).await
    }

    /// Queues entries to be written ahead of the next write, in the same append (one fsync
    /// for both); nothing is written or announced until then. Does no I/O, so it may be
    /// called under a session lock; [`Journal::settle`] writes what is queued at once. An
    /// entry replaces a queued one of the same kind: the settings records queued here are
    /// read last-wins, so a second run starting before the first wrote anything (its start
    /// failed) does not write them twice.
    pub(crate) fn queue(&self, kinds: Vec<EntryKind>) {
        let mut queued = self.queued();
        for kind in kinds {
            let same = std::mem::discriminant(&kind);
            queued.retain(|other| std::mem::discriminant(other) != same);
            queued.push(kind);
        }
    }

    /// Writes (and announces) what [`Journal::queue`] queued, if anything still is.
    pub(crate) async fn settle(self: &Arc<Self>) -> Result<(), CodingError> {
        let sink = self.sink.clone();
        self.append_then(Vec::new(), move |entries, _| announce_entries(&sink, entries)).await
    }

    /// Appends `kinds` as one chain with one write and one fsync, behind what must be written
    /// first (tool results a failed run held back, then queued entries), then hands
    /// `announce` every entry written (in file order) and how many came before the first of
    /// `kinds`. `announce` runs under the file's lock, so announcements of concurrent writers
    /// follow the file's order.
    ///
    /// The file's lock is not held while the fsync is awaited: the append is queued to the
    /// file's writer under it, awaited without it (no thread waits), and finished under it
    /// again, so reads of the session never wait for a disk. Writes take turns
    /// ([`Journal::turn`]) meanwhile. The append runs in a task of its own, so a caller that
    /// stops waiting does not leave it half done.
    pub(crate) async fn append_then<T: Send + 'static>(
        self: &Arc<Self>,
        kinds: Vec<EntryKind>,
        announce: impl FnOnce(&[SessionEntry], usize) -> T + Send + 'static,
    ) -> Result<T, CodingError> {
        let turn = Arc::clone(&self.turn).lock_owned().await;
        let journal = Arc::clone(self);
        let task = tokio::spawn(async move {
            let _turn = turn;
            let (queued, ticket, ahead, ahead_count) = {
                let mut guard = journal.lock();
                let session = guard.as_mut().ok_or(CodingError::Closed)?;
                let ahead = journal.take_ahead(session)?;
                let mut all = ahead.kinds();
                let ahead_count = all.len();
                all.extend(kinds);
                if all.is_empty() {
                    journal.after_write(ahead, true);
                    return Ok(announce(&[], 0));
                }
                match session.queue_append(all) {
                    Ok((queued, ticket)) => (queued, ticket, ahead, ahead_count),
                    Err(error) => {
                        journal.after_write(ahead, false);
                        return Err(error.into());
                    }
                }
            };
            let durable = ticket.await;
            // Finishing looks at the path (and writes the file again if it went), so it runs
            // on a blocking thread too.
            off_the_workers(move || {
                let mut guard = journal.lock();
                let session = guard.as_mut().ok_or(CodingError::Closed)?;
                let before = session.tree().entries().len();
                let finished = session.finish_append(queued, durable);
                journal.after_write(ahead, finished.is_ok());
                finished?;
                let entries = session.tree().entries().get(before..).unwrap_or_default();
                Ok(announce(entries, ahead_count))
            })
            .await
        });
        match task.await {
            Ok(done) => done,
            Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
            Err(_) => Err(CodingError::Closed),
        }
    }

    /// Appends `kinds` with one fsync (see [`Journal::append_then`]) and announces every entry
    /// written with `EntryAppended`; returns the entries of `kinds`.
    pub(crate) async fn append(
        self: &Arc<Self>,
        kinds: Vec<EntryKind>,
    ) -> Result<Vec<SessionEntry>, CodingError> {
        let sink = self.sink.clone();
        let count = kinds.len();
        self.append_then(kinds, move |entries, ahead| {
            announce_entries(&sink, entries);
            entries.get(ahead..ahead + count).unwrap_or_default().to_vec()
        })
        .await
    }

    /// Writes to the session file, then hands the appended entries to `announce`, still
    /// under the file's lock, so announcements of concurrent writers follow the file's order.
    /// Runs on a blocking thread, holding the file's lock until the write is durable: for the
    /// occasional write a session method makes through [`Session`]'s own methods. The write
    /// and fsync themselves run on the file's writer thread.
    pub(crate) async fn write_then<T: Send + 'static>(
        self: &Arc<Self>,
        write: impl FnOnce(&mut Session) -> Result<T, SessionError> + Send + 'static,
        announce: impl FnOnce(&[SessionEntry]) + Send + 'static,
    ) -> Result<T, CodingError> {
        let turn = Arc::clone(&self.turn).lock_owned().await;
        let journal = Arc::clone(self);
        off_the_workers(move || {
            let _turn = turn;
            let mut guard = journal.lock();
            let session = guard.as_mut().ok_or(CodingError::Closed)?;
            let before = session.tree().entries().len();
            let ahead = journal.take_ahead(session)?;
            let kinds = ahead.kinds();
            let written_ahead =
                if kinds.is_empty() { Ok(()) } else { session.append_all(kinds).map(drop) };
            journal.after_write(ahead, written_ahead.is_ok());
            written_ahead?;
            let value = write(session)?;
            announce(session.tree().entries().get(before..).unwrap_or_default());
            Ok(value)
        })
        .await
    }

    /// Writes to the session file, then announces every appended entry with
    /// `EntryAppended`. The caller awaits the write (see [`Journal::write_then`]).
    pub(crate) async fn write<T: Send + 'static>(
        self: &Arc<Self>,
        write: impl FnOnce(&mut Session) -> Result<T, SessionError> + Send + 'static,
    ) -> Result<T, CodingError> {
        let sink = self.sink.clone();
        self.write_then(write, move |entries| announce_entries(&sink, entries)).await
    }

    /// What must be written ahead of a write's own entries: the tool results a failed run
    /// held back, then the queued entries (taken out of the queue). Refused while the run
    /// whose write failed goes on.
    fn take_ahead(&self, session: &Session) -> Result<Ahead, CodingError> {
        let held = {
            let unsaved = self.unsaved();
            if let Some(error) = unsaved.refusal() {
                return Err(CodingError::Io(std::io::Error::other(format!(
                    "the session file could not be written ({error}); nothing more is \
                     written until the run that failed has stopped"
                ))));
            }
            unsaved.pending().then(|| unsaved.results_to_write(session))
        };
        let queued = std::mem::take(&mut *self.queued());
        Ok(Ahead { held, queued })
    }

    /// After the entries ahead were written (`written`) or not: a failure is over once the
    /// held results are in; queued entries that are not in are queued again, first.
    fn after_write(&self, ahead: Ahead, written: bool) {
        if written {
            if ahead.held.is_some() {
                self.unsaved().clear();
            }
        } else if !ahead.queued.is_empty() {
            self.queued().splice(0..0, ahead.queued);
        }
    }

    /// Closes the file (releasing its lock). Returns false when it was already closed.
    pub(crate) fn close(&self) -> bool {
        self.lock().take().is_some()
    }
}

/// What is written ahead of a write's own entries (see [`Journal::take_ahead`]).
struct Ahead {
    /// The held tool results to write, while a failure is pending.
    held: Option<Vec<EntryKind>>,
    /// The entries queued by [`Journal::queue`].
    queued: Vec<EntryKind>,
}

impl Ahead {
    /// Every entry to write ahead, in order.
    fn kinds(&self) -> Vec<EntryKind> {
        self.held.iter().flatten().chain(&self.queued).cloned().collect()
    }
}

/// Announces each entry with `EntryAppended`, in order.
pub(crate) fn announce_entries(sink: &EventSink, entries: &[SessionEntry]) {
    for entry in entries {
        sink(SessionEvent::EntryAppended { entry: entry.clone() });
    }
}

/// Journals on scratch session files for the tests of the session's write path.
#[cfg(test)]
pub(super) mod testing {
    use super::*;

    /// Events passed on, in order.
    pub(in crate::session) type Recorded = Arc<Mutex<Vec<SessionEvent>>>;

    /// A sink that records every event it is given.
    pub(in crate::session) fn recording_sink(events: &Recorded) -> EventSink {
        let seen = Arc::clone(events);
        Arc::new(move |event| seen.lock().unwrap().push(event))
    }

    /// A journal on a new session file, its sink, and the events that sink recorded.
    pub(in crate::session) fn journal_on_new_file(
        dir: &std::path::Path,
    ) -> (Arc<Journal>, EventSink, Recorded) {
        let session = rein_session::SessionStore::new(dir).create("/p").unwrap();
        let events = Recorded::default();
        let sink = recording_sink(&events);
        (Arc::new(Journal::new(session, sink.clone())), sink, events)
    }

    /// The ids of the entries the session file holds now, read from disk.
    pub(in crate::session) fn ids_on_disk(journal: &Journal) -> Vec<String> {
        let path = journal.read(|session| session.path().to_path_buf()).unwrap();
        let text = std::fs::read_to_string(path).unwrap();
        text.lines().skip(1).map(|l| serde_json::from_str::<SessionEntry>(l).unwrap().id).collect()
    }

    /// The ids of the entries announced (`EntryAppended`) among `events`, in order.
    pub(in crate::session) fn announced_ids(events: &Recorded) -> Vec<String> {
        events
            .lock()
            .unwrap()
            .iter()
            .filter_map(|event| match event {
                SessionEvent::EntryAppended { entry } => Some(entry.id.clone()),
                _ => None,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{announced_ids, ids_on_disk};
    use super::*;
    use rein_protocol::EntryKind;

    /// A journal on a new session file, and the events it announced.
    fn journal(dir: &std::path::Path) -> (Arc<Journal>, super::testing::Recorded) {
        let (journal, _sink, events) = super::testing::journal_on_new_file(dir);
        (journal, events)
    }

    /// On a current-thread runtime the test's thread is the only async worker: a write that
    /// ran (and waited for its fsync) there would show its id.
    #[tokio::test(flavor = "current_thread")]
    async fn a_write_is_awaited_off_the_async_worker_and_durable_when_it_returns() {
        let dir = tempfile::tempdir().unwrap();
        let (journal, events) = journal(dir.path());
        let worker = std::thread::current().id();
        let (entry, thread) = journal
            .write(|session| {
                let entry = session.set_name(Some("n".into()))?;
                Ok((entry, std::thread::current().id()))
            })
            .await
            .unwrap();
        assert_ne!(thread, worker, "the write ran on the async worker");
        assert_eq!(ids_on_disk(&journal), std::slice::from_ref(&entry.id));
        let announced = events.lock().unwrap().clone();
        assert!(
            matches!(announced.as_slice(), [SessionEvent::EntryAppended { entry: e }] if *e == entry),
            "{announced:?}"
        );
    }

    #[tokio::test(flavor = "current_thread")]
    async fn concurrent_writes_are_announced_in_the_order_of_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let (journal, events) = journal(dir.path());
        let writes = (0..8).map(|i| {
            let journal = Arc::clone(&journal);
            async move {
                let kind = EntryKind::SessionInfo { name: Some(format!("n{i}")) };
                journal.write(move |session| session.append(kind)).await.unwrap()
            }
        });
        futures::future::join_all(writes).await;
        let announced = announced_ids(&events);
        assert_eq!(announced, ids_on_disk(&journal));
        assert_eq!(announced.len(), 8);
    }

    /// Appends awaited without the file's lock and writes that hold it take turns: each
    /// chains after the last, and the announcements follow the file.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn appends_and_writes_mixed_keep_the_file_order() {
        let dir = tempfile::tempdir().unwrap();
        let (journal, events) = journal(dir.path());
        let writes = (0..12).map(|i| {
            let journal = Arc::clone(&journal);
            tokio::spawn(async move {
                let kind = EntryKind::SessionInfo { name: Some(format!("n{i}")) };
                if i % 2 == 0 {
                    journal.append(vec![kind]).await.unwrap();
                } else {
                    journal.write(move |session| session.append(kind)).await.unwrap();
                }
            })
        });
        for write in futures::future::join_all(writes).await {
            write.unwrap();
        }
        let announced = announced_ids(&events);
        assert_eq!(announced, ids_on_disk(&journal));
        assert_eq!(announced.len(), 12);
        // One chain: each entry hangs off the one before it.
        let entries = journal.read(|session| session.tree().entries().to_vec()).unwrap();
        for pair in entries.windows(2) {
            assert_eq!(pair[1].parent_id.as_deref(), Some(pair[0].id.as_str()));
        }
    }

    /// A queued entry waits for the next write (or a settle) and replaces one of its kind.
    #[tokio::test(flavor = "current_thread")]
    async fn queued_entries_are_written_once_by_the_next_write() {
        use rein_protocol::model::ThinkingLevel;
        let dir = tempfile::tempdir().unwrap();
        let (journal, events) = journal(dir.path());
        journal.queue(vec![EntryKind::ThinkingLevelChange { thinking_level: ThinkingLevel::Low }]);
        journal.queue(vec![EntryKind::ThinkingLevelChange { thinking_level: ThinkingLevel::High }]);
        assert!(ids_on_disk(&journal).is_empty());
        let syncs = journal.read(Session::file_syncs).unwrap();
        let named = EntryKind::SessionInfo { name: Some("n".into()) };
        let own = journal.append(vec![named]).await.unwrap();
        assert_eq!(journal.read(Session::file_syncs).unwrap() - syncs, 1);
        let on_disk = ids_on_disk(&journal);
        assert_eq!(on_disk.len(), 2, "the queued entry (once), then the write's own");
        assert_eq!(on_disk[1], own[0].id);
        let settings = journal.read(Session::settings).unwrap();
        assert_eq!(settings.thinking_level, Some(ThinkingLevel::High));
        assert_eq!(events.lock().unwrap().len(), 2, "both announced");
        journal.settle().await.unwrap();
        assert_eq!(ids_on_disk(&journal).len(), 2, "nothing left to settle");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_write_after_close_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let (journal, _) = journal(dir.path());
        assert!(journal.close());
        let refused = journal.write(|session| session.set_name(None)).await;
        assert!(matches!(refused, Err(CodingError::Closed)), "{refused:?}");
    }
}
