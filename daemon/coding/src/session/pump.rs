//! The event pump: forwards the harness's events to the daemon's sink in order, persisting
//! each message to the session file at its boundary first.
//!
//! A `MessageEnd` is appended to the session file (fsync'd) before it is passed on, and is
//! followed by the `EntryAppended` of its entry; every other event is passed on as it is.
//!
//! When the append fails, the run is stopped at once (`on_failure`): an `error` event of kind
//! `io` names the file and the cause, the rest of the run's messages are not written (their
//! tool results are held, see [`super::unsaved`]), and the run's `agent_end` says `error`.
//!
//! Hooks that touch the session file or emit events of their own first call
//! [`EventPump::catch_up`], which waits until everything the harness emitted before the call
//! has been forwarded (and so persisted). It compares the harness's count of emitted events
//! with how many the forwarder has passed on; no second subscription is needed.

use std::sync::{Arc, Mutex, PoisonError};

use rein_agent::{EmittedCount, Harness};
use rein_protocol::event::{EndReason, SessionEvent};
use rein_protocol::message::Message;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::environment::EventSink;
use super::journal::Journal;
use super::run_record::SetupSlot;

/// The forwarding task of one session and its progress.
pub(crate) struct EventPump {
    /// The harness's count of emitted events.
    emitted: EmittedCount,
    /// Events emitted before the pump subscribed (never forwarded).
    before: u64,
    forwarded: watch::Receiver<u64>,
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
        let task = tokio::spawn(async move {
            let mut done = 0_u64;
            while let Some(event) = events.recv().await {
                forward(&journal, &sink, &on_failure, &setup, event).await;
                done += 1;
                progress.send_replace(done);
            }
        });
        Self { emitted, before, forwarded, task: Mutex::new(Some(task)) }
    }

    /// Waits until every event the harness emitted before this call has been forwarded.
    pub(crate) async fn catch_up(&self) {
        let target = self.emitted.get().saturating_sub(self.before);
        let mut forwarded = self.forwarded.clone();
        // An error means the task ended (the session closed): nothing is left to wait for.
        let _ = forwarded.wait_for(|done| *done >= target).await;
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

/// Passes one event on, persisting a finished message first: the message end is followed by
/// the `EntryAppended` of its entry. A run's end is recorded (a `run_end` entry, announced)
/// before its `agent_end` is passed on.
async fn forward(
    journal: &Arc<Journal>,
    sink: &EventSink,
    on_failure: &OnFailure,
    setup: &SetupSlot,
    event: SessionEvent,
) {
    journal.unsaved().observe(&event);
    let mut write_failed = false;
    let event = match event {
        SessionEvent::AgentEnd { run_id, reason, error, usage, turns, outcome } => {
            // The run that could not be written ended with an error, however it was stopped.
            let (reason, error) = match journal.unsaved().end_run() {
                Some(failure) => {
                    write_failed = true;
                    (
                        EndReason::Error,
                        Some(format!("the session file could not be written: {failure}")),
                    )
                }
                None => (reason, error),
            };
            SessionEvent::AgentEnd { run_id, reason, error, usage, turns, outcome }
        }
        other => other,
    };
    if let Some(entry) = setup.run_end(&event) {
        // A run whose messages could not be written records no end either: the file must not
        // acknowledge a run whose history it does not hold.
        if !write_failed
            && let Err(error) = journal.write(move |session| session.append(entry)).await
        {
            tracing::error!(%error, "could not record the end of a run");
        }
        sink(event);
        return;
    }
    let SessionEvent::MessageEnd { message } = event else {
        sink(event);
        return;
    };
    {
        let mut unsaved = journal.unsaved();
        if unsaved.holding() {
            unsaved.hold(&message);
            drop(unsaved);
            sink(SessionEvent::MessageEnd { message });
            return;
        }
    }
    let written = message.clone();
    let announced = message.clone();
    let announce_to = sink.clone();
    let persisted = journal
        .write_then(
            move |session| session.append_message(written),
            move |entries| {
                announce_to(SessionEvent::MessageEnd { message: announced });
                for entry in entries {
                    announce_to(SessionEvent::EntryAppended { entry: entry.clone() });
                }
            },
        )
        .await;
    if let Err(error) = persisted {
        tracing::error!(%error, role = role(&message), "could not persist a message; stopping the run");
        let first = journal.fail(&error, &message);
        sink(SessionEvent::MessageEnd { message });
        if first {
            let path = journal.read(|session| session.path().display().to_string()).ok();
            sink(SessionEvent::Error {
                error_kind: error.kind(),
                message: error.to_string(),
                path,
            });
            on_failure();
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
