//! The event pump: forwards the harness's events to the daemon's sink in order, persisting
//! each message to the session file at its boundary first.
//!
//! A `MessageEnd` is appended to the session file (fsync'd) before it is passed on, and is
//! followed by the `EntryAppended` of its entry; every other event is passed on as it is.
//!
//! Group commit: the pump takes every event already waiting when it wakes (up to a run's
//! `agent_end`) as one batch, and writes the batch's messages and its run end with one append,
//! so one fsync covers them (the tool results of a parallel batch, the last reply and the
//! run's end). The batch's events are passed on in order once that append is durable, so no
//! event goes out before an entry it follows could be lost.
//!
//! When the append fails, the run is stopped at once (`on_failure`): an `error` event of kind
//! `io` names the file and the cause, the rest of the run's messages are not written (their
//! tool results are held, see [`super::unsaved`]), and the run's `agent_end` says `error`.
//!
//! Hooks that touch the session file or emit events of their own first call
//! [`EventPump::catch_up`], which waits until everything the harness emitted before the call
//! has been forwarded (and so persisted). It compares the harness's count of emitted events
//! with how many the forwarder has passed on; no second subscription is needed.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rein_agent::{EmittedCount, Harness};
use rein_protocol::event::{EndReason, SessionEvent};
use rein_protocol::message::Message;
use rein_protocol::{EntryKind, SessionEntry};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::environment::EventSink;
use super::error::CodingError;
use super::journal::{Journal, announce_entries};
use super::run_record::SetupSlot;

/// The forwarding task of one session and its progress.
pub(crate) struct EventPump {
    /// The harness's count of emitted events.
    emitted: EmittedCount,
    /// Events emitted before the pump subscribed (never forwarded).
    before: u64,
    forwarded: watch::Receiver<u64>,
    /// See [`EventPump::run_open`].
    run_open: Arc<AtomicBool>,
    task: Mutex<Option<JoinHandle<()>>>,
}

impl EventPump {
    /// Subscribes to `harness` and starts forwarding to `sink`; `on_failure` is called when a
    /// message could not be written, to stop the run; `setup` records each run's end.
    pub(crate) fn start(
        harness: &Harness,
        journal: Arc<Journal>,
        sink: EventSink,
        on_failure: OnFailure,
        setup: SetupSlot,
    ) -> Self {
        let (mut events, emitted, before) = harness.subscribe_counted();
        let (progress, forwarded) = watch::channel(0_u64);
        let run_open = Arc::new(AtomicBool::new(false));
        let open = Arc::clone(&run_open);
        let task = tokio::spawn(async move {
            let mut done = 0_u64;
            while let Some(first) = events.recv().await {
                let mut batch = vec![first];
                while batch.len() < MAX_BATCH && !batch.last().is_some_and(ends_run) {
                    match events.try_recv() {
                        Ok(event) => batch.push(event),
                        Err(_) => break,
                    }
                }
                done += batch.len() as u64;
                forward_batch(&journal, &sink, &on_failure, &setup, &open, batch).await;
                progress.send_replace(done);
            }
        });
        Self { emitted, before, forwarded, run_open, task: Mutex::new(Some(task)) }
    }

    /// Waits until every event the harness emitted before this call has been forwarded.
    pub(crate) async fn catch_up(&self) {
        let target = self.emitted.get().saturating_sub(self.before);
        let mut forwarded = self.forwarded.clone();
        // An error means the task ended (the session closed): nothing is left to wait for.
        let _ = forwarded.wait_for(|done| *done >= target).await;
    }

    /// True from the moment a run's `agent_start` is passed on until its `agent_end` is: the
    /// run's messages and its end may not be in the session file yet. Cleared just before
    /// `agent_end` goes out, so a client that got it finds the session idle.
    pub(crate) fn run_open(&self) -> bool {
        self.run_open.load(Ordering::Acquire)
    }

    /// Stops forwarding (the session is closing and its harness is idle).
    pub(crate) fn stop(&self) {
        let task = self.task.lock().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(task) = task {
            task.abort();
        }
    }
}

impl Drop for EventPump {
    fn drop(&mut self) {
        self.stop();
    }
}

/// What the pump calls to stop the run after a failed write.
pub(crate) type OnFailure = Box<dyn Fn() + Send + Sync>;

/// The most events forwarded as one batch.
const MAX_BATCH: usize = 1024;

/// A run's end closes a batch: the failure state changes with it (see
/// [`super::unsaved::Unsaved::end_run`]).
fn ends_run(event: &SessionEvent) -> bool {
    matches!(event, SessionEvent::AgentEnd { .. })
}

/// Passes a batch of events on in order, persisting what it finishes first: every finished
/// message, then the run's end (a `run_end` entry), all with one append. A message end is
/// followed by the `EntryAppended` of its entry; a run's end is preceded by it.
pub(super) async fn forward_batch(
    journal: &Arc<Journal>,
    sink: &EventSink,
    on_failure: &OnFailure,
    setup: &SetupSlot,
    run_open: &Arc<AtomicBool>,
    batch: Vec<SessionEvent>,
) {
    // While a failed run goes on, none of its messages is written (and its end is not).
    let kinds: Vec<EntryKind> = if journal.unsaved().holding() {
        Vec::new()
    } else {
        batch
            .iter()
            .filter_map(|event| match event {
                SessionEvent::MessageEnd { message } => {
                    Some(EntryKind::Message { message: Arc::clone(message) })
                }
                other => setup.run_end(other),
            })
            .collect()
    };
    if kinds.is_empty() {
        Forwarding::new(journal, sink, setup, run_open, Written::Nothing).run(batch, on_failure);
        return;
    }
    // Announced under the file's lock once the append is durable, so the announcements of
    // concurrent writers follow the file's order.
    let slot = Arc::new(Mutex::new(Some(batch)));
    let announced = {
        let (journal, sink, setup, slot, run_open) = (
            Arc::clone(journal),
            sink.clone(),
            setup.clone(),
            Arc::clone(&slot),
            Arc::clone(run_open),
        );
        move |entries: &[SessionEntry], ahead: usize| {
            let batch = slot.lock().unwrap_or_else(PoisonError::into_inner).take();
            let written = Written::Entries { entries: entries.to_vec(), ahead, next: ahead };
            let forwarding = Forwarding::new(&journal, &sink, &setup, &run_open, written);
            // Nothing fails on this path, so there is nothing to stop.
            forwarding.run(batch.unwrap_or_default(), &(Box::new(|| {}) as OnFailure));
        }
    };
    if let Err(error) = journal.append_then(kinds, announced).await {
        let batch = slot.lock().unwrap_or_else(PoisonError::into_inner).take();
        Forwarding::new(journal, sink, setup, run_open, Written::Failed(error))
            .run(batch.unwrap_or_default(), on_failure);
    }
}

/// What became of a batch's append.
enum Written {
    /// Nothing was to be written.
    Nothing,
    /// Written: every entry appended, in file order; `ahead` of them were written before the
    /// batch's own (held tool results, queued settings); `next` is the batch's next own one.
    Entries { entries: Vec<SessionEntry>, ahead: usize, next: usize },
    /// The append failed: none of it is in the file.
    Failed(CodingError),
}

/// Passes one batch's events on, in order, given what became of its append.
struct Forwarding<'a> {
    journal: &'a Journal,
    sink: &'a EventSink,
    setup: &'a SetupSlot,
    run_open: &'a AtomicBool,
    written: Written,
}

impl<'a> Forwarding<'a> {
    fn new(
        journal: &'a Journal,
        sink: &'a EventSink,
        setup: &'a SetupSlot,
        run_open: &'a AtomicBool,
        written: Written,
    ) -> Self {
        Self { journal, sink, setup, run_open, written }
    }

    fn run(mut self, batch: Vec<SessionEvent>, on_failure: &OnFailure) {
        // Entries written ahead of the batch's own (held tool results, queued settings) come
        // first in the file, so they are announced first.
        if let Written::Entries { entries, ahead, .. } = &self.written {
            announce_entries(self.sink, entries.get(..*ahead).unwrap_or_default());
        }
        for event in batch {
            self.forward(event, on_failure);
        }
        // What the append added after the batch's own entries (a restored file's repair).
        if let Written::Entries { entries, next, .. } = &self.written {
            announce_entries(self.sink, entries.get(*next..).unwrap_or_default());
        }
    }

    /// The `EntryAppended` of the batch's next own entry.
    fn announce_next(&mut self) {
        if let Written::Entries { entries, next, .. } = &mut self.written {
            announce_entries(self.sink, entries.get(*next..=*next).unwrap_or_default());
            *next += 1;
        }
    }

    fn forward(&mut self, event: SessionEvent, on_failure: &OnFailure) {
        self.journal.unsaved().observe(&event);
        match event {
            SessionEvent::AgentEnd { run_id, reason, error, usage, turns, outcome } => {
                // The run that could not be written ended with an error, however it stopped.
                let (reason, error) = match self.journal.unsaved().end_run() {
                    Some(failure) => (
                        EndReason::Error,
                        Some(format!("the session file could not be written: {failure}")),
                    ),
                    None => (reason, error),
                };
                let event = SessionEvent::AgentEnd { run_id, reason, error, usage, turns, outcome };
                if self.setup.run_end(&event).is_some() {
                    match &self.written {
                        Written::Entries { .. } => self.announce_next(),
                        Written::Failed(error) => {
                            tracing::error!(%error, "could not record the end of a run");
                        }
                        Written::Nothing => {}
                    }
                }
                self.run_open.store(false, Ordering::Release);
                (self.sink)(event);
            }
            SessionEvent::MessageEnd { message } => match &self.written {
                Written::Entries { .. } => {
                    (self.sink)(SessionEvent::MessageEnd { message });
                    self.announce_next();
                }
                Written::Nothing => {
                    self.journal.unsaved().hold(&message);
                    (self.sink)(SessionEvent::MessageEnd { message });
                }
                Written::Failed(error) => {
                    tracing::error!(%error, role = role(&message), "could not persist a message; stopping the run");
                    let first = self.journal.fail(error, &message);
                    (self.sink)(SessionEvent::MessageEnd { message });
                    if first {
                        let path =
                            self.journal.read(|session| session.path().display().to_string()).ok();
                        (self.sink)(SessionEvent::Error {
                            error_kind: error.kind(),
                            message: error.to_string(),
                            path,
                        });
                        on_failure();
                    }
                    // The rest of the batch's messages are held, as the run's later ones are.
                    self.written = Written::Nothing;
                }
            },
            other => {
                if matches!(other, SessionEvent::AgentStart { .. }) {
                    self.run_open.store(true, Ordering::Release);
                }
                (self.sink)(other)
            }
        }
    }
}

fn role(message: &Message) -> &'static str {
    match message {
        Message::User(_) => "user",
        Message::Assistant(_) => "assistant",
        Message::ToolResult(_) => "tool_result",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rein_protocol::message::{ContentBlock, ToolResultMessage, Usage, UserMessage};
    use rein_protocol::verify::RunOutcome;

    use crate::session::journal::testing::{
        announced_ids, ids_on_disk, journal_on_new_file as journal, recording_sink as journal_sink,
    };

    fn result(call: &str) -> Message {
        Message::ToolResult(ToolResultMessage {
            tool_call_id: call.into(),
            tool_name: "read".into(),
            content: vec![ContentBlock::text(format!("output of {call}"))],
            is_error: false,
            details: None,
            timestamp: 0,
        })
    }

    fn agent_end() -> SessionEvent {
        SessionEvent::AgentEnd {
            run_id: "r1".into(),
            reason: EndReason::Completed,
            error: None,
            usage: Usage::default(),
            turns: 1,
            outcome: RunOutcome::Unverified,
        }
    }

    /// The events as short names, in order: `end:<call>` for a message end, `entry:<kind>`
    /// for an entry appended, the event's type otherwise.
    fn names(events: &[SessionEvent]) -> Vec<String> {
        events
            .iter()
            .map(|event| match event {
                SessionEvent::MessageEnd { message } => match message.as_ref() {
                    Message::ToolResult(result) => format!("end:{}", result.tool_call_id),
                    _ => "end:user".into(),
                },
                SessionEvent::EntryAppended { entry } => match &entry.kind {
                    EntryKind::Message { message } => match message.as_ref() {
                        Message::ToolResult(result) => format!("entry:{}", result.tool_call_id),
                        _ => "entry:user".into(),
                    },
                    EntryKind::RunEnd { .. } => "entry:run_end".into(),
                    EntryKind::ThinkingLevelChange { .. } => "entry:thinking".into(),
                    _ => "entry:other".into(),
                },
                SessionEvent::AgentEnd { .. } => "agent_end".into(),
                other => format!("{other:?}").split([' ', '{']).next().unwrap_or_default().into(),
            })
            .collect()
    }

    fn syncs(journal: &Journal) -> u64 {
        journal.read(rein_session::Session::file_syncs).unwrap()
    }

    /// A burst of events (a parallel batch's results, then the run's end) is one batch: its
    /// four entries share one fsync, and every event is passed on in order, each message end
    /// followed by its entry and the run's end preceded by its own.
    #[tokio::test(flavor = "current_thread")]
    async fn a_burst_is_written_with_one_fsync_and_passed_on_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let (journal, _sink, events) = journal(dir.path());
        let (sink, setup) = (journal_sink(&events), SetupSlot::default());
        let burst = vec![
            SessionEvent::TurnStart { turn: 2 },
            SessionEvent::MessageEnd { message: result("c1").into() },
            SessionEvent::MessageEnd { message: result("c2").into() },
            SessionEvent::MessageEnd { message: result("c3").into() },
            agent_end(),
        ];
        let before = syncs(&journal);
        let stop: OnFailure = Box::new(|| panic!("nothing failed"));
        let open = Arc::new(AtomicBool::new(false));
        let start = vec![SessionEvent::AgentStart { run_id: "r1".into() }];
        forward_batch(&journal, &sink, &stop, &setup, &open, start).await;
        assert!(open.load(Ordering::SeqCst), "a run is open once its start is passed on");
        events.lock().unwrap().clear();
        forward_batch(&journal, &sink, &stop, &setup, &open, burst).await;
        assert!(!open.load(Ordering::SeqCst), "and closed once its end is");
        assert_eq!(syncs(&journal) - before, 1, "four entries, one fsync");
        assert_eq!(
            names(&events.lock().unwrap()),
            [
                "TurnStart",
                "end:c1",
                "entry:c1",
                "end:c2",
                "entry:c2",
                "end:c3",
                "entry:c3",
                "entry:run_end",
                "agent_end"
            ]
        );
        // What was announced is what the file holds, in its order.
        let on_disk = ids_on_disk(&journal);
        let announced = announced_ids(&events);
        assert_eq!(announced, on_disk);
    }

    /// A message written during a run is held once: its entry in the tree is the event's own
    /// allocation, which the harness's history holds too.
    #[tokio::test(flavor = "current_thread")]
    async fn a_written_message_is_the_events_own_allocation() {
        let dir = tempfile::tempdir().unwrap();
        let (journal, _sink, events) = journal(dir.path());
        let (sink, setup) = (journal_sink(&events), SetupSlot::default());
        let message = Arc::new(result("c1"));
        let stop: OnFailure = Box::new(|| panic!("nothing failed"));
        let open = Arc::new(AtomicBool::new(false));
        let batch = vec![SessionEvent::MessageEnd { message: Arc::clone(&message) }];
        forward_batch(&journal, &sink, &stop, &setup, &open, batch).await;
        let shared = journal
            .read(|session| {
                session.tree().active_path().iter().any(|entry| {
                    matches!(&entry.kind, EntryKind::Message { message: held }
                        if Arc::ptr_eq(held, &message))
                })
            })
            .unwrap();
        assert!(shared, "the session entry holds a copy of the message");
    }

    /// Settings queued before a run go to the file with the run's first message: one fsync
    /// for both, the settings first, announced first.
    #[tokio::test(flavor = "current_thread")]
    async fn queued_entries_share_the_next_append() {
        let dir = tempfile::tempdir().unwrap();
        let (journal, _sink, events) = journal(dir.path());
        let (sink, setup) = (journal_sink(&events), SetupSlot::default());
        journal.queue(vec![EntryKind::ThinkingLevelChange {
            thinking_level: rein_protocol::model::ThinkingLevel::High,
        }]);
        assert!(ids_on_disk(&journal).is_empty(), "queued, not written");
        assert!(events.lock().unwrap().is_empty(), "queued, not announced");
        let before = syncs(&journal);
        let user = Message::User(UserMessage::text("go", 0));
        let stop: OnFailure = Box::new(|| panic!("nothing failed"));
        let batch = vec![SessionEvent::MessageEnd { message: user.into() }];
        forward_batch(&journal, &sink, &stop, &setup, &Arc::default(), batch).await;
        assert_eq!(syncs(&journal) - before, 1);
        assert_eq!(names(&events.lock().unwrap()), ["entry:thinking", "end:user", "entry:user"]);
        assert_eq!(ids_on_disk(&journal).len(), 2);
        // Nothing is left queued: settling writes nothing more.
        journal.settle().await.unwrap();
        assert_eq!(syncs(&journal) - before, 1);
    }

    /// After a run's write failed, a later batch of the run writes nothing (its results are
    /// held), does not stop the run a second time, and the run ends with an error.
    #[tokio::test(flavor = "current_thread")]
    async fn a_batch_of_a_failed_run_writes_nothing_and_ends_it_with_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let (journal, _sink, events) = journal(dir.path());
        let (sink, setup) = (journal_sink(&events), SetupSlot::default());
        // The run's first write failed earlier, so its end is reported as an error; the
        // batch's messages are held, not written.
        let first = CodingError::Io(std::io::Error::other("disk full"));
        assert!(journal.fail(&first, &result("c0")));
        let stopped = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = Arc::clone(&stopped);
        let stop: OnFailure =
            Box::new(move || flag.store(true, std::sync::atomic::Ordering::SeqCst));
        let burst = vec![
            SessionEvent::MessageEnd { message: result("c1").into() },
            SessionEvent::MessageEnd { message: result("c2").into() },
            agent_end(),
        ];
        let before = syncs(&journal);
        forward_batch(&journal, &sink, &stop, &setup, &Arc::default(), burst).await;
        assert_eq!(syncs(&journal), before, "a failed run writes nothing more");
        assert!(ids_on_disk(&journal).is_empty());
        let seen = events.lock().unwrap().clone();
        assert_eq!(names(&seen), ["end:c1", "end:c2", "agent_end"]);
        assert!(
            matches!(seen.last(), Some(SessionEvent::AgentEnd { reason: EndReason::Error, .. })),
            "{seen:?}"
        );
        assert!(!stopped.load(std::sync::atomic::Ordering::SeqCst), "stopped once, earlier");
    }
}
