//! The context's token count, kept up to date entry by entry.
//!
//! Deciding whether to compact before every request needs the context's size: the usage the
//! provider reported for the last reply plus an estimate of what came after it
//! ([`crate::compaction::context_tokens`]). Computing that from the whole active path on every
//! request costs a replay of the history; the tally computes it once and then moves it along
//! with each entry appended at the leaf, so a request costs only the entries since the last one.
//!
//! The tally stays exact: it is only advanced over a path whose context needs no tool-history
//! rule to rewrite it (every result directly behind its call, calls at the end possibly still
//! open, as during a run), where the replayed messages are exactly the entries' messages. Any
//! other change (a compaction, a branch summary, a leaf move, a result out of place) drops it,
//! and the next query computes it from the path again.

use std::collections::VecDeque;

use rein_protocol::message::{Message, StopReason};
use rein_protocol::{EntryKind, SessionEntry};

use crate::compaction::estimate_tokens;

/// The token count of the context ending at one leaf, with what it needs to move along.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ContextTally {
    /// The leaf the count is for.
    leaf: Option<String>,
    /// Context tokens at that leaf.
    tokens: u64,
    /// Calls of the last reply still waiting for their results, in call order.
    open_calls: VecDeque<String>,
}

/// Where the tool history of a context stands, read message by message.
enum Step {
    /// The message keeps the history valid (or open at the end).
    Fine,
    /// A tool-history rule would rewrite the context here.
    Rewritten,
}

impl ContextTally {
    /// A tally at `leaf` holding `tokens`, when the context's messages are `messages` exactly
    /// (no rule rewrites them); `None` when one would, so the count must be computed afresh.
    pub(crate) fn start<'a>(
        leaf: Option<&str>,
        tokens: u64,
        messages: impl IntoIterator<Item = Option<&'a Message>>,
    ) -> Option<Self> {
        let mut open_calls = VecDeque::new();
        for message in messages {
            if let Step::Rewritten = step(&mut open_calls, message) {
                return None;
            }
        }
        Some(Self { leaf: leaf.map(str::to_string), tokens, open_calls })
    }

    /// The count, when it is for `leaf`.
    pub(crate) fn tokens_at(&self, leaf: Option<&str>) -> Option<u64> {
        (self.leaf.as_deref() == leaf).then_some(self.tokens)
    }

    /// Moves the tally over an entry appended at its leaf. False when it cannot follow (the
    /// entry does not hang off the leaf, or changes the context other than by adding a
    /// message); the tally must then be dropped.
    pub(crate) fn advance(&mut self, entry: &SessionEntry) -> bool {
        if entry.parent_id != self.leaf || crate::tree::leaf_move_target(&entry.kind).is_some() {
            return false;
        }
        match &entry.kind {
            EntryKind::Message { message } => {
                if let Step::Rewritten = step(&mut self.open_calls, Some(message)) {
                    return false;
                }
                match reported_tokens(message) {
                    Some(tokens) => self.tokens = tokens,
                    None => self.tokens += estimate_tokens(message),
                }
            }
            EntryKind::Compaction { .. } | EntryKind::BranchSummary { .. } => return false,
            _ => {}
        }
        self.leaf = Some(entry.id.clone());
        true
    }
}

/// The context tokens a message's reported usage puts in force: a reply that did not fail
/// and reported usage.
pub(crate) fn reported_tokens(message: &Message) -> Option<u64> {
    match message {
        Message::Assistant(assistant)
            if assistant.usage.context_tokens() > 0
                && !matches!(assistant.stop_reason, StopReason::Error | StopReason::Aborted) =>
        {
            Some(assistant.usage.context_tokens())
        }
        _ => None,
    }
}

/// One message of the tool-history check of [`crate::repair::is_valid_tool_history`], with
/// calls left open at the end allowed. `None` is a summary carried as a user message.
fn step(open_calls: &mut VecDeque<String>, message: Option<&Message>) -> Step {
    match message {
        Some(Message::ToolResult(result)) => {
            if open_calls.front() != Some(&result.tool_call_id) {
                return Step::Rewritten;
            }
            open_calls.pop_front();
        }
        Some(Message::Assistant(assistant)) => {
            if !open_calls.is_empty() {
                return Step::Rewritten;
            }
            open_calls.extend(assistant.tool_calls().map(|call| call.id.clone()));
        }
        Some(Message::User(_)) | None => {
            if !open_calls.is_empty() {
                return Step::Rewritten;
            }
        }
    }
    Step::Fine
}
