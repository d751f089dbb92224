//! What happens when the session file cannot be written (a full disk, say): the state kept
//! between the failed write and the next one that succeeds.
//!
//! A failed append of a run's message stops the run: the journal refuses further writes until
//! the run has ended, and the messages the run still produces are not written. Tool results
//! among them are kept, though, because their calls really ran (or were really refused): when
//! the session writes again, the results whose calls are on the file's active path without a
//! result are written first, so no call that ran is later repaired as "interrupted". The
//! harness's in-memory history ran ahead of the file, so it is replaced by the file's before
//! the next request (see `hooks::before_request`).

use std::collections::HashSet;

use rein_protocol::EntryKind;
use rein_protocol::event::SessionEvent;
use rein_protocol::message::{ContentBlock, Message};
use rein_session::Session;

/// What a call that did not run because the session file could not be written is told.
pub(super) const NOT_RUN_UNRECORDED: &str =
    "not run: the session file could not be written, so the run stopped";

/// The failure state of one session's journal.
#[derive(Debug, Default)]
pub(crate) struct Unsaved {
    /// The failed write's error, while the session has not written successfully since.
    failure: Option<String>,
    /// True once the run that failed has ended; writes are refused until then.
    run_over: bool,
    /// Tool results produced after the failure, in order.
    held: Vec<Message>,
    /// The harness's history must be replaced by the file's before the next request.
    resync: bool,
    /// Calls of the current run that started executing.
    started: HashSet<String>,
}

impl Unsaved {
    /// Records a failed write of a run's message. True when this starts a failure (the first
    /// of its run), false when the run had already failed.
    pub(crate) fn fail(&mut self, error: String, message: &Message) -> bool {
        let first = self.failure.is_none() || self.run_over;
        self.failure = Some(error);
        self.run_over = false;
        self.resync = true;
        self.hold(message);
        first
    }

    /// Follows the run: which calls started executing (a result of a call that never started
    /// was made up by the loop when it stopped).
    pub(crate) fn observe(&mut self, event: &SessionEvent) {
        match event {
            SessionEvent::AgentStart { .. } => self.started.clear(),
            SessionEvent::ToolExecutionStart { tool_call_id, .. } => {
                self.started.insert(tool_call_id.clone());
            }
            _ => {}
        }
    }

    /// Keeps a message of the failed run that is not written: tool results only. The result
    /// of a call that never started says why it did not run (the loop only knows it was
    /// stopped).
    pub(crate) fn hold(&mut self, message: &Message) {
        let Message::ToolResult(result) = message else { return };
        let mut result = result.clone();
        if !self.started.contains(&result.tool_call_id) {
            result.content = vec![ContentBlock::text(NOT_RUN_UNRECORDED)];
            result.is_error = true;
        }
        self.held.push(Message::ToolResult(result));
    }

    /// True while the run whose write failed is still going: its messages are not written.
    pub(crate) fn holding(&self) -> bool {
        self.failure.is_some() && !self.run_over
    }

    /// Marks the failed run as over; returns the failure's error when a failed run ended.
    pub(crate) fn end_run(&mut self) -> Option<String> {
        match &self.failure {
            Some(error) if !self.run_over => {
                self.run_over = true;
                Some(error.clone())
            }
            _ => None,
        }
    }

    /// The failure's error while writes are refused (the failed run has not ended yet).
    pub(crate) fn refusal(&self) -> Option<&str> {
        self.failure.as_deref().filter(|_| !self.run_over)
    }

    /// True when a failure waits to be cleared by the next successful write.
    pub(crate) fn pending(&self) -> bool {
        self.failure.is_some()
    }

    /// The held results to write before anything else: those answering a call on the file's
    /// active path that has no result there yet, in the order they came.
    pub(crate) fn results_to_write(&self, session: &Session) -> Vec<EntryKind> {
        let messages = session.context_messages();
        let answered: HashSet<&str> = messages
            .iter()
            .filter_map(|message| match message {
                Message::ToolResult(result) => Some(result.tool_call_id.as_str()),
                _ => None,
            })
            .collect();
        let mut open: HashSet<&str> = messages
            .iter()
            .filter_map(|message| match message {
                Message::Assistant(assistant) => Some(assistant.tool_calls()),
                _ => None,
            })
            .flatten()
            .map(|call| call.id.as_str())
            .filter(|id| !answered.contains(id))
            .collect();
        self.held
            .iter()
            .filter(|message| match message {
                Message::ToolResult(result) => open.remove(result.tool_call_id.as_str()),
                _ => false,
            })
            .map(|message| EntryKind::Message { message: message.clone().into() })
            .collect()
    }

    /// Forgets the failure once the session wrote again (the held results included).
    pub(crate) fn clear(&mut self) {
        self.failure = None;
        self.run_over = false;
        self.held.clear();
    }

    /// True (once) when the harness's history must be taken from the file again: a failure
    /// happened and has been cleared since.
    pub(crate) fn take_resync(&mut self) -> bool {
        if self.failure.is_some() || !self.resync {
            return false;
        }
        self.resync = false;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rein_protocol::message::{ContentBlock, ToolResultMessage, UserMessage};

    fn result(call: &str) -> Message {
        Message::ToolResult(ToolResultMessage {
            tool_call_id: call.into(),
            tool_name: "bash".into(),
            content: vec![ContentBlock::text("ran")],
            is_error: false,
            details: None,
            timestamp: 0,
        })
    }

    #[test]
    fn a_held_result_of_a_call_that_never_started_says_why() {
        let mut unsaved = Unsaved::default();
        unsaved.observe(&SessionEvent::AgentStart { run_id: "r".into() });
        unsaved.observe(&SessionEvent::ToolExecutionStart {
            tool_call_id: "ran".into(),
            tool_name: "bash".into(),
            arguments: serde_json::json!({}),
        });
        unsaved.fail("full".into(), &result("ran"));
        unsaved.hold(&result("skipped"));
        let texts: Vec<String> = unsaved
            .held
            .iter()
            .map(|m| match m {
                Message::ToolResult(r) => format!("{}:{:?}", r.is_error, r.content),
                _ => String::new(),
            })
            .collect();
        assert!(texts[0].starts_with("false:") && texts[0].contains("ran"), "{texts:?}");
        assert!(texts[1].starts_with("true:") && texts[1].contains(NOT_RUN_UNRECORDED));
    }

    #[test]
    fn a_failed_run_refuses_writes_until_it_ends_and_resyncs_after_clearing() {
        let mut unsaved = Unsaved::default();
        unsaved.observe(&SessionEvent::ToolExecutionStart {
            tool_call_id: "c1".into(),
            tool_name: "bash".into(),
            arguments: serde_json::json!({}),
        });
        assert!(!unsaved.holding());
        assert!(unsaved.fail("append to f: full".into(), &result("c1")));
        assert!(!unsaved.fail("append to f: full".into(), &result("c2")));
        unsaved.hold(&Message::User(UserMessage::text("not kept", 0)));
        assert!(unsaved.holding());
        assert_eq!(unsaved.refusal(), Some("append to f: full"));
        assert_eq!(unsaved.held.len(), 2);
        assert!(!unsaved.take_resync(), "no resync while the failure lasts");
        assert_eq!(unsaved.end_run().as_deref(), Some("append to f: full"));
        assert_eq!(unsaved.end_run(), None, "a run ends once");
        assert!(!unsaved.holding() && unsaved.refusal().is_none() && unsaved.pending());
        // A write failing again in the next run starts a new failure and keeps what was held.
        assert!(unsaved.fail("append to f: still full".into(), &result("c3")));
        assert_eq!(unsaved.held.len(), 3);
        unsaved.end_run();
        unsaved.clear();
        assert!(!unsaved.pending());
        assert!(unsaved.take_resync());
        assert!(!unsaved.take_resync());
    }
}
