//! The writer of one open session file: a dedicated thread owns the file's append handle, and
//! every append is sent to it and acknowledged once it is durable.
//!
//! Appends that are queued together when the thread wakes are written as one batch: one write
//! and one fsync, then each is acknowledged in the order it was sent (group commit). A batch
//! that cannot be written is cut back off the file, so the file stays valid JSONL, and every
//! append in it is answered with the error: none of them is durable.
//!
//! The write and the fsync never run on the caller's thread. A caller that may block waits
//! with [`AppendTicket::wait`]; an async caller awaits the ticket.

use std::fs::File;
use std::future::Future;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, mpsc};
use std::task::{Context, Poll};
use std::thread::JoinHandle;

use futures::channel::oneshot;

use crate::error::SessionError;

/// The name of every writer thread (15 bytes at most, the limit of a Linux thread name).
pub const WRITER_THREAD_NAME: &str = "rein-writer";

/// Stack size of a writer thread: it serializes nothing, it only calls write and fsync.
const WRITER_STACK_SIZE: usize = 128 * 1024;

/// What the writer thread is asked to do, in the order asked.
enum Request {
    /// Append these bytes (whole lines) and fsync them.
    Append { bytes: Vec<u8>, ack: oneshot::Sender<std::io::Result<()>> },
    /// Append to this file from now on (the session file was rewritten): `len` is its length.
    Replace { file: File, len: u64, ack: oneshot::Sender<std::io::Result<()>> },
    /// Tests only: wait until the sender is dropped before taking the next request, so the
    /// requests sent meanwhile are queued together.
    #[cfg(test)]
    Hold(mpsc::Receiver<()>),
}

/// The handle of a session file's writer thread. Dropping it lets the thread finish what was
/// sent and waits for it, so nothing is written after the handle is gone.
#[derive(Debug)]
pub(crate) struct FileWriter {
    path: PathBuf,
    requests: Option<mpsc::Sender<Request>>,
    thread: Option<JoinHandle<()>>,
    /// How many fsyncs of appends the thread has made (see [`FileWriter::syncs`]).
    syncs: Arc<AtomicU64>,
    #[cfg(test)]
    probe: probe::Probe,
}

impl std::fmt::Debug for Request {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Append { .. } => "Append",
            Self::Replace { .. } => "Replace",
            #[cfg(test)]
            Self::Hold(_) => "Hold",
        })
    }
}

impl FileWriter {
    /// Starts the writer of the file at `path`, appending through `file` (opened for append,
    /// `len` bytes long).
    pub(crate) fn start(path: &Path, file: File, len: u64) -> Result<Self, SessionError> {
        let (requests, queue) = mpsc::channel();
        #[cfg(test)]
        let probe = probe::Probe::default();
        let syncs = Arc::new(AtomicU64::new(0));
        let mut state = WriterState {
            path: path.to_path_buf(),
            file,
            len,
            syncs: Arc::clone(&syncs),
            #[cfg(test)]
            probe: probe.clone(),
        };
        let thread = std::thread::Builder::new()
            .name(WRITER_THREAD_NAME.to_string())
            .stack_size(WRITER_STACK_SIZE)
            .spawn(move || state.run(&queue))
            .map_err(SessionError::io("start the writer of", path))?;
        Ok(Self {
            path: path.to_path_buf(),
            requests: Some(requests),
            thread: Some(thread),
            syncs,
            #[cfg(test)]
            probe,
        })
    }

    /// How many batches of appends the thread has written and fsync'd so far: fewer than the
    /// appends sent when several shared one fsync.
    pub(crate) fn syncs(&self) -> u64 {
        self.syncs.load(Ordering::Acquire)
    }

    /// Queues `bytes` (whole lines) to be appended; the ticket resolves once they are durable
    /// or the append failed.
    pub(crate) fn append(&self, bytes: Vec<u8>) -> AppendTicket {
        let (ack, receiver) = oneshot::channel();
        self.send(Request::Append { bytes, ack });
        AppendTicket { path: self.path.clone(), action: "append to", receiver }
    }

    /// Makes the writer append to `file` (of `len` bytes) from now on, after the appends
    /// already queued; the ticket resolves once it does.
    pub(crate) fn replace(&self, file: File, len: u64) -> AppendTicket {
        let (ack, receiver) = oneshot::channel();
        self.send(Request::Replace { file, len, ack });
        AppendTicket { path: self.path.clone(), action: "reopen", receiver }
    }

    /// Sends a request. When the thread is gone (it panicked), the request is dropped with
    /// its acknowledgement, and the ticket reports that the writer stopped.
    fn send(&self, request: Request) {
        if let Some(requests) = &self.requests
            && requests.send(request).is_err()
        {
            tracing::error!(path = %self.path.display(), "the session file's writer has stopped");
        }
    }

    /// Holds the writer before its next request until the returned sender is dropped.
    #[cfg(test)]
    fn hold(&self) -> mpsc::Sender<()> {
        let (release, held) = mpsc::channel();
        self.send(Request::Hold(held));
        release
    }
}

impl Drop for FileWriter {
    fn drop(&mut self) {
        // Closing the queue ends the thread once it has answered everything sent.
        self.requests = None;
        if let Some(thread) = self.thread.take()
            && thread.join().is_err()
        {
            tracing::error!(path = %self.path.display(), "the session file's writer panicked");
        }
    }
}

/// What the writer thread owns: the append handle and the file's length.
struct WriterState {
    path: PathBuf,
    file: File,
    len: u64,
    syncs: Arc<AtomicU64>,
    #[cfg(test)]
    probe: probe::Probe,
}

impl WriterState {
    /// Answers requests until the queue is closed.
    fn run(&mut self, queue: &mpsc::Receiver<Request>) {
        let mut next = None;
        loop {
            let request = match next.take() {
                Some(request) => request,
                None => match queue.recv() {
                    Ok(request) => request,
                    Err(mpsc::RecvError) => return,
                },
            };
            match request {
                Request::Append { bytes, ack } => {
                    let mut batch = bytes;
                    let mut acks = vec![ack];
                    // Everything queued behind it joins the batch, up to another kind of
                    // request, which keeps its place in the order.
                    while let Ok(queued) = queue.try_recv() {
                        match queued {
                            Request::Append { bytes, ack } => {
                                batch.extend_from_slice(&bytes);
                                acks.push(ack);
                            }
                            other => {
                                next = Some(other);
                                break;
                            }
                        }
                    }
                    self.commit(&batch, acks);
                }
                Request::Replace { file, len, ack } => {
                    self.file = file;
                    self.len = len;
                    let _ = ack.send(Ok(()));
                }
                #[cfg(test)]
                Request::Hold(held) => {
                    let _ = held.recv();
                }
            }
        }
    }

    /// Writes and fsyncs one batch, then answers each of its appends in order.
    fn commit(&mut self, batch: &[u8], acks: Vec<oneshot::Sender<std::io::Result<()>>>) {
        #[cfg(test)]
        self.probe.record_sync(acks.len());
        match self.file.write_all(batch).and_then(|()| self.file.sync_data()) {
            Ok(()) => {
                self.len += batch.len() as u64;
                // Counted before the acknowledgements, so a caller that was answered sees it.
                self.syncs.fetch_add(1, Ordering::Release);
                for ack in acks {
                    // A caller that stopped waiting does not change what was written.
                    let _ = ack.send(Ok(()));
                }
            }
            Err(error) => {
                if let Err(cut) = self.file.set_len(self.len) {
                    tracing::error!(path = %self.path.display(), error = %cut,
                        "could not cut back a failed append");
                }
                let mut acks = acks.into_iter();
                let first = acks.next();
                for ack in acks {
                    let _ = ack.send(Err(std::io::Error::new(error.kind(), error.to_string())));
                }
                if let Some(ack) = first {
                    let _ = ack.send(Err(error));
                }
            }
        }
    }
}

/// The answer to one append (or reopen) sent to a session file's writer: `Ok` once what was
/// sent is durable. Wait for it with [`AppendTicket::wait`], or await it.
#[derive(Debug)]
#[must_use = "an append is acknowledged only through its ticket"]
pub struct AppendTicket {
    path: PathBuf,
    action: &'static str,
    receiver: oneshot::Receiver<std::io::Result<()>>,
}

impl AppendTicket {
    /// Blocks the calling thread until the writer answers. Parks the thread itself rather
    /// than running an executor, so it may be called from inside one (a sync session method
    /// called by async code).
    pub fn wait(mut self) -> Result<(), SessionError> {
        let waker = std::task::Waker::from(std::sync::Arc::new(Unparker(std::thread::current())));
        let mut cx = Context::from_waker(&waker);
        loop {
            if let Poll::Ready(answer) = Pin::new(&mut self.receiver).poll(&mut cx) {
                return self.answer(answer);
            }
            std::thread::park();
        }
    }

    fn answer(
        &self,
        answer: Result<std::io::Result<()>, oneshot::Canceled>,
    ) -> Result<(), SessionError> {
        let source = match answer {
            Ok(Ok(())) => return Ok(()),
            Ok(Err(source)) => source,
            Err(oneshot::Canceled) => std::io::Error::other("the session file's writer stopped"),
        };
        Err(SessionError::Io { action: self.action, path: self.path.clone(), source })
    }
}

impl Future for AppendTicket {
    type Output = Result<(), SessionError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let answer = futures::ready!(Pin::new(&mut self.receiver).poll(cx));
        Poll::Ready(self.answer(answer))
    }
}

/// Wakes a thread waiting in [`AppendTicket::wait`].
struct Unparker(std::thread::Thread);

impl std::task::Wake for Unparker {
    fn wake(self: std::sync::Arc<Self>) {
        self.0.unpark();
    }
}

/// Tests only: what the writer thread did, seen from outside.
#[cfg(test)]
mod probe {
    use std::sync::{Arc, Mutex, PoisonError};

    /// One fsync: the name of the thread it ran on and how many appends it made durable.
    pub(super) type Sync = (Option<String>, usize);

    /// Every fsync of one writer, in order.
    #[derive(Debug, Clone, Default)]
    pub(super) struct Probe(Arc<Mutex<Vec<Sync>>>);

    impl Probe {
        pub(super) fn record_sync(&self, appends: usize) {
            let thread = std::thread::current().name().map(str::to_string);
            self.0.lock().unwrap_or_else(PoisonError::into_inner).push((thread, appends));
        }

        pub(super) fn syncs(&self) -> Vec<Sync> {
            self.0.lock().unwrap_or_else(PoisonError::into_inner).clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::OpenOptions;

    fn writer(dir: &Path) -> (PathBuf, FileWriter) {
        let path = dir.join("s.jsonl");
        std::fs::write(&path, b"header\n").unwrap();
        let file = OpenOptions::new().append(true).open(&path).unwrap();
        let writer = FileWriter::start(&path, file, 7).unwrap();
        (path, writer)
    }

    #[test]
    fn an_append_is_acknowledged_once_it_is_in_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let (path, writer) = writer(dir.path());
        writer.append(b"one\n".to_vec()).wait().unwrap();
        // Read through another handle: what was acknowledged is in the file.
        assert_eq!(std::fs::read(&path).unwrap(), b"header\none\n");
        let syncs = writer.probe.syncs();
        assert_eq!(syncs.len(), 1, "one fsync before the acknowledgement");
    }

    #[test]
    fn the_write_and_fsync_run_on_the_writer_thread() {
        let dir = tempfile::tempdir().unwrap();
        let (_path, writer) = writer(dir.path());
        let runtime = std::thread::Builder::new()
            .name("caller".into())
            .spawn(move || {
                writer.append(b"a\n".to_vec()).wait().unwrap();
                writer.append(b"b\n".to_vec()).wait().unwrap();
                writer.probe.syncs()
            })
            .unwrap();
        let syncs = runtime.join().unwrap();
        assert_eq!(syncs.len(), 2);
        for (thread, _) in syncs {
            assert_eq!(thread.as_deref(), Some(WRITER_THREAD_NAME));
        }
    }

    #[test]
    fn appends_queued_together_share_one_fsync_and_keep_their_order() {
        let dir = tempfile::tempdir().unwrap();
        let (path, writer) = writer(dir.path());
        let release = writer.hold();
        // Sent from several threads while the writer is held: all of them queue up.
        let tickets: Vec<AppendTicket> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..4)
                .map(|t| {
                    let writer = &writer;
                    scope.spawn(move || {
                        (0..5)
                            .map(|i| writer.append(format!("{t}-{i}\n").into_bytes()))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
        });
        drop(release);
        for ticket in tickets {
            ticket.wait().unwrap();
        }
        assert_eq!(writer.probe.syncs(), [(Some(WRITER_THREAD_NAME.to_string()), 20)]);
        assert_eq!(writer.syncs(), 1, "twenty appends, one fsync");
        let text = String::from_utf8(std::fs::read(&path).unwrap()).unwrap();
        let lines: Vec<&str> = text.lines().skip(1).collect();
        assert_eq!(lines.len(), 20);
        // Each sender's appends are in the file in the order it sent them.
        for t in 0..4 {
            let own: Vec<&str> =
                lines.iter().copied().filter(|l| l.starts_with(&format!("{t}-"))).collect();
            let expected: Vec<String> = (0..5).map(|i| format!("{t}-{i}")).collect();
            assert_eq!(own, expected);
        }
    }

    #[test]
    fn a_failed_batch_is_reported_to_every_caller_and_cut_back() {
        let dir = tempfile::tempdir().unwrap();
        let (path, writer) = writer(dir.path());
        writer.append(b"kept\n".to_vec()).wait().unwrap();
        // A handle that cannot write stands for a full disk: the write fails.
        let read_only = File::open(&path).unwrap();
        writer.replace(read_only, 12).wait().unwrap();
        let release = writer.hold();
        let first = writer.append(b"lost-1\n".to_vec());
        let second = writer.append(b"lost-2\n".to_vec());
        drop(release);
        for ticket in [first, second] {
            let error = ticket.wait().unwrap_err();
            assert!(
                matches!(&error, SessionError::Io { action: "append to", path: p, .. } if *p == path),
                "{error}"
            );
        }
        assert_eq!(std::fs::read(&path).unwrap(), b"header\nkept\n");
        // The writer goes on: a working handle again, and the next append is acknowledged.
        let file = OpenOptions::new().append(true).open(&path).unwrap();
        writer.replace(file, 12).wait().unwrap();
        writer.append(b"after\n".to_vec()).wait().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"header\nkept\nafter\n");
    }

    #[test]
    fn a_ticket_is_awaited_or_waited_for_inside_an_executor() {
        let dir = tempfile::tempdir().unwrap();
        let (path, writer) = writer(dir.path());
        futures::executor::block_on(writer.append(b"awaited\n".to_vec())).unwrap();
        // A sync session method called from async code waits without an executor of its own.
        futures::executor::block_on(async { writer.append(b"waited\n".to_vec()).wait() }).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"header\nawaited\nwaited\n");
    }
}
