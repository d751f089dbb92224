//! Compaction: counting context tokens, deciding when to compact, choosing the cut point,
//! asking the model for a structured summary and recording it as a compaction entry.
//!
//! A compaction runs in three steps so the session is never borrowed across the model call:
//! [`Session::prepare_compaction`] (picks the cut, refuses a second concurrent compaction),
//! [`CompactionJob::summarize`] (the model call), [`Session::finish_compaction`] (appends the
//! entry). [`Session::compact`] does all three.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rein_ai::Provider;
use rein_protocol::event::CompactionReason;
use rein_protocol::message::{ContentBlock, Message, Usage};
use rein_protocol::model::ModelInfo;
use rein_protocol::{EntryKind, SessionEntry};
use tokio_util::sync::CancellationToken;

use crate::context_tally::{ContextTally, reported_tokens};
use crate::error::SessionError;
use crate::ids::new_entry_id;
use crate::repair::PathMessage;
use crate::replay::raw_context;
use crate::session::Session;
use crate::summarize::{SummaryModel, request_summary, transcript};

/// Tokens counted for an image (providers bill images at roughly this for common sizes).
const IMAGE_TOKENS: u64 = 1_200;

/// When and how much to compact.
///
/// The three numbers are ceilings for large windows; each scales down with the model's
/// context window (see [`CompactionSettings::reserve`], [`CompactionSettings::keep_recent`]
/// and [`CompactionSettings::summary_tokens`]), so a model with an 8k window compacts only when
/// its context is really full and keeps a tail that leaves room for more turns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompactionSettings {
    /// Compact automatically when the context passes the window minus this many tokens (raised
    /// to the request's max output tokens, and never more than a third of the window).
    pub reserve_tokens: u64,
    /// Keep roughly this many tokens of the most recent messages verbatim (never more than a
    /// quarter of the window).
    pub keep_recent_tokens: u64,
    /// Most output tokens for the summary request (never more than an eighth of the window,
    /// with a floor of [`MIN_SUMMARY_TOKENS`]).
    pub summary_max_tokens: u64,
}

impl Default for CompactionSettings {
    fn default() -> Self {
        Self { reserve_tokens: 16_384, keep_recent_tokens: 20_000, summary_max_tokens: 8_192 }
    }
}

/// The reserve is at most this fraction (1/N) of the window.
const RESERVE_WINDOW_DIVISOR: u64 = 3;
/// The kept tail is at most this fraction (1/N) of the window.
const KEEP_WINDOW_DIVISOR: u64 = 4;
/// The summary is at most this fraction (1/N) of the window.
const SUMMARY_WINDOW_DIVISOR: u64 = 8;
/// The smallest output budget a summary gets, whatever the window.
pub const MIN_SUMMARY_TOKENS: u64 = 256;

impl CompactionSettings {
    /// The reserve for a model: the configured one, raised to the request's max output tokens
    /// (the answer must fit), capped at a third of the window so small windows keep most of
    /// their room for the conversation.
    pub fn reserve(&self, context_window: u64, max_output_tokens: u64) -> u64 {
        self.reserve_tokens.max(max_output_tokens).min(context_window / RESERVE_WINDOW_DIVISOR)
    }

    /// How many recent tokens a compaction keeps verbatim for a model: the configured number,
    /// capped at a quarter of the window.
    pub fn keep_recent(&self, context_window: u64) -> u64 {
        self.keep_recent_tokens.min(context_window / KEEP_WINDOW_DIVISOR)
    }

    /// The summary's output budget for a model: the configured number, capped at an eighth of
    /// the window but never below [`MIN_SUMMARY_TOKENS`].
    pub fn summary_tokens(&self, context_window: u64) -> u64 {
        self.summary_max_tokens
            .min((context_window / SUMMARY_WINDOW_DIVISOR).max(MIN_SUMMARY_TOKENS))
    }
}

/// A rough token count of one message: characters / 4, images at a flat rate.
pub fn estimate_tokens(message: &Message) -> u64 {
    let blocks: &[ContentBlock] = match message {
        Message::User(user) => &user.content,
        Message::Assistant(assistant) => &assistant.content,
        Message::ToolResult(result) => &result.content,
    };
    let mut chars = 0_u64;
    let mut images = 0_u64;
    for block in blocks {
        match block {
            ContentBlock::Text { text } => chars += text.len() as u64,
            ContentBlock::Thinking { thinking, .. } => chars += thinking.len() as u64,
            ContentBlock::ToolCall(call) => {
                chars += (call.name.len() + json_length(&call.arguments)) as u64;
            }
            ContentBlock::Image { .. } => images += 1,
        }
    }
    chars.div_ceil(4) + images * IMAGE_TOKENS
}

/// The length of `value` written as compact JSON, counted without writing it anywhere.
fn json_length(value: &serde_json::Value) -> usize {
    /// A writer that only counts what it is given.
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing a `Value` cannot fail, and a counter never refuses bytes.
    match serde_json::to_writer(&mut count, value) {
        Ok(()) => count.0,
        Err(_) => value.to_string().len(),
    }
}

/// Context tokens of a message list: the usage the provider reported for the last successful
/// assistant message at or after `trust_usage_from`, plus an estimate for the messages after
/// it; an estimate of everything when no such usage exists.
pub fn context_tokens(messages: &[Message], trust_usage_from: usize) -> u64 {
    let reported = messages
        .iter()
        .enumerate()
        .skip(trust_usage_from)
        .rev()
        .find_map(|(i, m)| reported_tokens(m).map(|tokens| (i, tokens)));
    match reported {
        Some((i, tokens)) => tokens + messages[i + 1..].iter().map(estimate_tokens).sum::<u64>(),
        None => messages.iter().map(estimate_tokens).sum(),
    }
}

/// [`context_tokens`] of a path whose context needs no tool-history rule (see
/// [`crate::replay::context_is_valid`]), read from the entries without copying their
/// messages: usage is trusted only from the entries after the compaction in force.
fn context_tokens_of_valid(path: &[&SessionEntry], entries: &[&SessionEntry]) -> u64 {
    let compaction_at = path.iter().rposition(|e| matches!(e.kind, EntryKind::Compaction { .. }));
    // The context entries end with every path entry after the compaction, in order.
    let trusted = compaction_at.map_or(entries.len(), |at| path.len() - at - 1);
    let first_trusted = entries.len() - trusted.min(entries.len());
    // Only stored messages report usage: summaries need not be built to find the last one.
    let reported = entries[first_trusted..].iter().enumerate().rev().find_map(|(i, entry)| {
        let EntryKind::Message { message } = &entry.kind else { return None };
        crate::context_tally::reported_tokens(message).map(|tokens| (first_trusted + i, tokens))
    });
    let (tokens, estimated_from) = reported.map_or((0, 0), |(at, tokens)| (tokens, at + 1));
    tokens
        + entries[estimated_from..]
            .iter()
            .filter_map(|entry| crate::replay::context_message_ref(entry))
            .map(|message| estimate_tokens(&message))
            .sum::<u64>()
}

/// Whether the context has passed the window minus the reserve.
pub fn should_compact(context_tokens: u64, context_window: u64, reserve: u64) -> bool {
    context_tokens > context_window.saturating_sub(reserve)
}

/// Where a cut may go, for each index `0..=len`: before a user message, or before an
/// assistant message when every earlier call has its result; at the end when no call is
/// pending. Never before a tool result, so a call is never separated from its result.
pub fn valid_cuts(messages: &[Message]) -> Vec<bool> {
    let mut pending = std::collections::HashSet::new();
    let mut cuts = Vec::with_capacity(messages.len() + 1);
    for message in messages {
        cuts.push(pending.is_empty() && !matches!(message, Message::ToolResult(_)));
        match message {
            Message::Assistant(assistant) => {
                pending.extend(assistant.tool_calls().map(|c| c.id.clone()));
            }
            Message::ToolResult(result) => {
                pending.remove(&result.tool_call_id);
            }
            Message::User(_) => {}
        }
    }
    cuts.push(pending.is_empty());
    cuts
}

/// The cut index (messages before it are summarized, from it on kept). The newest user
/// message (the request being worked on) is never lost:
///
/// 1. the earliest valid cut at or before it that keeps at most `keep_recent_tokens`;
/// 2. when the work since that request alone is larger, the earliest valid cut inside it that
///    fits (at least one message after the request is summarized); the request's text is then
///    carried verbatim in the summary ([`CARRIED_REQUEST_HEADING`]);
/// 3. when nothing fits, the latest valid cut inside the work, else the latest one before the
///    request.
///
/// `None` when no cut summarizes anything (a lone first prompt is never summarized).
pub fn find_cut_point(messages: &[Message], keep_recent_tokens: u64) -> Option<usize> {
    let cuts = valid_cuts(messages);
    let mut suffix = vec![0_u64; messages.len() + 1];
    for i in (0..messages.len()).rev() {
        suffix[i] = suffix[i + 1] + estimate_tokens(&messages[i]);
    }
    let newest_user = newest_user_index(messages);
    let keeping_request = 1..=newest_user.unwrap_or(messages.len());
    let inside_work = newest_user.map_or(messages.len() + 1, |user| user + 2)..=messages.len();
    let fits = |i: &usize| cuts[*i] && suffix[*i] <= keep_recent_tokens;
    let latest = |mut range: std::ops::RangeInclusive<usize>| range.rfind(|&i| cuts[i]);
    keeping_request
        .clone()
        .find(fits)
        .or_else(|| inside_work.clone().find(fits))
        .or_else(|| latest(inside_work))
        .or_else(|| latest(keeping_request))
}

/// Where the newest user message is.
fn newest_user_index(messages: &[Message]) -> Option<usize> {
    messages.iter().rposition(|m| matches!(m, Message::User(_)))
}

/// Separates a summary from the user's request it carries verbatim (when the compaction cut
/// into the work on that request).
pub const CARRIED_REQUEST_HEADING: &str = "\n\n## The user's current request, verbatim\n\n";

/// The request a summary carries, if any.
pub fn carried_request(summary: &str) -> Option<&str> {
    summary.split_once(CARRIED_REQUEST_HEADING).map(|(_, request)| request)
}

/// The text of a user message, images shown as `[image]`.
fn request_text(message: &Message) -> String {
    let Message::User(user) = message else { return String::new() };
    let parts: Vec<&str> = user
        .content
        .iter()
        .map(|block| match block {
            ContentBlock::Image { .. } => "[image]",
            other => other.as_text().unwrap_or_default(),
        })
        .collect();
    parts.join("\n")
}

/// The summarization prompt: the conversation, the earlier summary to fold in, the structure
/// asked for and the user's extra instructions.
pub fn compaction_prompt(
    conversation: &str,
    previous_summary: Option<&str>,
    instructions: Option<&str>,
) -> String {
    let mut prompt = String::new();
    if let Some(previous) = previous_summary {
        prompt.push_str(
            "This conversation continues from an earlier summary:\n\n<previous-summary>\n",
        );
        prompt.push_str(previous);
        prompt.push_str("\n</previous-summary>\n\n");
    }
    prompt.push_str("<conversation>\n");
    prompt.push_str(conversation);
    prompt.push_str("</conversation>\n\n");
    if previous_summary.is_some() {
        prompt.push_str(
            "Write one new summary that replaces both the earlier summary and the conversation: \
             keep everything from the earlier summary that still matters.\n\n",
        );
    }
    prompt.push_str(
        "Summarize the conversation above with exactly these sections:\n\n\
         ## Goal\nWhat the user wants, with every constraint and preference they stated.\n\n\
         ## Progress\nWhat is done, what is in progress, what is blocked.\n\n\
         ## Key decisions\nWhat was decided and why.\n\n\
         ## Files touched\nEach file read, created or changed, and what changed in it.\n\n\
         ## Next steps\nWhat should happen next, in order.\n\n\
         Be brief, but keep exact file paths, names, commands and error messages the work \
         depends on.",
    );
    if let Some(extra) = instructions.filter(|text| !text.trim().is_empty()) {
        prompt.push_str("\n\nThe user asks the summary to focus on this:\n");
        prompt.push_str(extra);
    }
    prompt
}

/// The reason text stored in a compaction entry.
pub fn reason_text(reason: CompactionReason) -> &'static str {
    match reason {
        CompactionReason::Manual => "manual",
        CompactionReason::Threshold => "threshold",
        CompactionReason::Overflow => "overflow",
    }
}

/// Marks a session as compacting while it lives.
#[derive(Debug)]
struct RunningGuard(Arc<AtomicBool>);

impl RunningGuard {
    fn take(flag: &Arc<AtomicBool>) -> Result<Self, SessionError> {
        flag.compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst)
            .map_err(|_| SessionError::CompactionInProgress)?;
        Ok(Self(Arc::clone(flag)))
    }
}

impl Drop for RunningGuard {
    fn drop(&mut self) {
        self.0.store(false, Ordering::SeqCst);
    }
}

/// A prepared compaction: what to summarize and where the kept part starts. While it (or its
/// outcome) lives, a second compaction of the session is refused.
#[derive(Debug)]
pub struct CompactionJob {
    reason: CompactionReason,
    instructions: Option<String>,
    to_summarize: Vec<Message>,
    previous_summary: Option<String>,
    last_summarized_id: String,
    first_kept_entry_id: Option<String>,
    tokens_before: u64,
    carried_request: Option<String>,
    _guard: RunningGuard,
}

impl CompactionJob {
    /// Why it runs.
    pub fn reason(&self) -> CompactionReason {
        self.reason
    }

    /// Context tokens before compacting.
    pub fn tokens_before(&self) -> u64 {
        self.tokens_before
    }

    /// The messages that will be summarized.
    pub fn messages_to_summarize(&self) -> &[Message] {
        &self.to_summarize
    }

    /// The first entry kept verbatim; `None` when nothing is kept.
    pub fn first_kept_entry_id(&self) -> Option<&str> {
        self.first_kept_entry_id.as_deref()
    }

    /// The prompt the model is sent.
    pub fn prompt(&self) -> String {
        compaction_prompt(
            &transcript(&self.to_summarize),
            self.previous_summary.as_deref(),
            self.instructions.as_deref(),
        )
    }

    /// Asks the model for the summary. Takes no borrow of the session.
    pub async fn summarize(
        self,
        provider: &dyn Provider,
        model: &ModelInfo,
        settings: &CompactionSettings,
        cancel: &CancellationToken,
    ) -> Result<CompactionOutcome, SessionError> {
        let max_tokens = settings.summary_tokens(model.context_window);
        let summary_model = SummaryModel { provider, model, max_tokens, cancel };
        let (summary, usage) = request_summary(summary_model, self.prompt()).await?;
        Ok(CompactionOutcome { job: self, summary, usage })
    }
}

/// A summary ready to be recorded by [`Session::finish_compaction`].
#[derive(Debug)]
pub struct CompactionOutcome {
    job: CompactionJob,
    summary: String,
    usage: Usage,
}

impl CompactionOutcome {
    /// The summary text.
    pub fn summary(&self) -> &str {
        &self.summary
    }
}

/// What a finished compaction recorded.
#[derive(Debug, Clone, PartialEq)]
pub struct Compacted {
    /// The compaction entry.
    pub entry: SessionEntry,
    /// Context tokens before.
    pub tokens_before: u64,
    /// Estimated context tokens after.
    pub tokens_after: u64,
}

impl Session {
    /// Context tokens of the messages the next request sends (see [`context_tokens`]); usage
    /// reported before the compaction in force is not trusted.
    /// Kept up to date as entries are appended, so asking before every request costs only
    /// the entries since the last time.
    pub fn context_tokens(&self) -> u64 {
        let leaf = self.leaf_id();
        let mut tally = self.context_tally();
        if let Some(tokens) = tally.as_ref().and_then(|tally| tally.tokens_at(leaf)) {
            return tokens;
        }
        let path = self.tree().active_path();
        let entries = crate::replay::context_entries(&path);
        let tokens = if crate::replay::context_is_valid(&entries) {
            context_tokens_of_valid(&path, &entries)
        } else {
            self.context_tokens_by_replay()
        };
        *tally = ContextTally::start(
            leaf,
            tokens,
            entries.iter().filter_map(|entry| match &entry.kind {
                EntryKind::Message { message } => Some(Some(message.as_ref())),
                EntryKind::BranchSummary { .. } | EntryKind::Compaction { .. } => Some(None),
                _ => None,
            }),
        );
        tokens
    }

    /// [`Session::context_tokens`] computed from a full replay of the active path (which
    /// applies the tool-history rules a context that is not valid needs).
    fn context_tokens_by_replay(&self) -> u64 {
        let replay = self.replay();
        let trust_from = match &replay.compaction {
            Some(compaction) => {
                let at = replay.path.iter().position(|id| *id == compaction.entry_id);
                let after: std::collections::HashSet<&str> = at
                    .map(|at| replay.path[at + 1..].iter().map(String::as_str).collect())
                    .unwrap_or_default();
                replay
                    .messages
                    .iter()
                    .position(|m| after.contains(m.entry_id.as_str()))
                    .unwrap_or(replay.messages.len())
            }
            None => 0,
        };
        context_tokens(&replay.message_list(), trust_from)
    }

    /// Whether the context has passed the model's window minus the reserve
    /// ([`CompactionSettings::reserve`]).
    pub fn needs_compaction(&self, model: &ModelInfo, settings: &CompactionSettings) -> bool {
        let reserve = settings.reserve(model.context_window, model.max_output_tokens);
        should_compact(self.context_tokens(), model.context_window, reserve)
    }

    /// Picks what to summarize: the messages since the compaction in force, up to the cut
    /// point that keeps about `keep_recent_tokens`. Refused while another compaction of this
    /// session runs; `NothingToCompact` when no cut summarizes anything.
    pub fn prepare_compaction(
        &self,
        reason: CompactionReason,
        instructions: Option<String>,
        keep_recent_tokens: u64,
    ) -> Result<CompactionJob, SessionError> {
        let guard = RunningGuard::take(&self.compaction_running)?;
        let path = self.tree().active_path();
        let mut context = raw_context(&path);
        let mut previous_summary = None;
        if let Some(compaction) =
            path.iter().rev().find(|e| matches!(e.kind, EntryKind::Compaction { .. }))
            && let EntryKind::Compaction { summary, .. } = &compaction.kind
        {
            previous_summary = Some(summary.clone());
            context.remove(0);
        }
        let messages: Vec<Message> = context.iter().map(|m| m.message.clone()).collect();
        let cut =
            find_cut_point(&messages, keep_recent_tokens).ok_or(SessionError::NothingToCompact)?;
        // The request being worked on goes into the summary verbatim when the cut passes it,
        // and stays there while no newer request exists.
        let carried_request = match newest_user_index(&messages) {
            Some(user) if cut > user => Some(request_text(&messages[user])),
            Some(_) => None,
            None => previous_summary.as_deref().and_then(carried_request).map(str::to_string),
        };
        let tail: Vec<PathMessage> = context.split_off(cut);
        let last_summarized_id =
            context.last().map(|m| m.entry_id.clone()).ok_or(SessionError::NothingToCompact)?;
        Ok(CompactionJob {
            reason,
            instructions,
            to_summarize: context.into_iter().map(|m| m.message).collect(),
            previous_summary,
            last_summarized_id,
            first_kept_entry_id: tail.first().map(|m| m.entry_id.clone()),
            tokens_before: self.context_tokens(),
            carried_request,
            _guard: guard,
        })
    }

    /// Records a summary as a compaction entry after the active leaf. Fails with `Stale` when
    /// the leaf moved off the summarized path meanwhile. Entries appended while the summary was
    /// generated stay in the context.
    pub fn finish_compaction(
        &mut self,
        outcome: CompactionOutcome,
    ) -> Result<Compacted, SessionError> {
        let CompactionOutcome { job, summary, usage } = outcome;
        let summary = match &job.carried_request {
            Some(request) => format!("{}{CARRIED_REQUEST_HEADING}{request}", summary.trim_end()),
            None => summary,
        };
        let path: Vec<String> =
            self.tree().active_path().into_iter().map(|e| e.id.clone()).collect();
        let Some(at) = path.iter().position(|id| *id == job.last_summarized_id) else {
            return Err(SessionError::Stale("the summarized entries left the active path".into()));
        };
        if let Some(kept) = &job.first_kept_entry_id
            && !path.contains(kept)
        {
            return Err(SessionError::Stale("the first kept entry left the active path".into()));
        }
        let id = new_entry_id(|id| self.tree().contains(id));
        let first_kept_entry_id = job
            .first_kept_entry_id
            .clone()
            .or_else(|| path.get(at + 1).cloned())
            .unwrap_or_else(|| id.clone());
        let kind = EntryKind::Compaction {
            summary,
            first_kept_entry_id,
            tokens_before: job.tokens_before,
            usage: Some(Box::new(usage)),
            reason: reason_text(job.reason).to_string(),
        };
        let entry = self.append_with_id(Some(id), kind)?;
        let tokens_after = self.context_tokens();
        tracing::info!(session = %self.id(), tokens_before = job.tokens_before, tokens_after, "compacted");
        Ok(Compacted { entry, tokens_before: job.tokens_before, tokens_after })
    }

    /// Prepares, summarizes and records a compaction.
    pub async fn compact(
        &mut self,
        provider: &dyn Provider,
        model: &ModelInfo,
        reason: CompactionReason,
        instructions: Option<String>,
        settings: &CompactionSettings,
        cancel: &CancellationToken,
    ) -> Result<Compacted, SessionError> {
        let keep = settings.keep_recent(model.context_window);
        let job = self.prepare_compaction(reason, instructions, keep)?;
        let outcome = job.summarize(provider, model, settings, cancel).await?;
        self.finish_compaction(outcome)
    }

    /// The compaction the layer above runs when the provider rejected a request as too long:
    /// it keeps [`CompactionSettings::keep_recent`] tokens verbatim, records the compaction with reason
    /// `overflow`, and returns the messages to retry the request with (once). The failed reply
    /// should not have been appended; if this fails too (for instance `NothingToCompact`), the
    /// run ends with the provider's error.
    pub async fn recover_from_overflow(
        &mut self,
        provider: &dyn Provider,
        model: &ModelInfo,
        settings: &CompactionSettings,
        cancel: &CancellationToken,
    ) -> Result<Vec<Arc<Message>>, SessionError> {
        let keep = settings.keep_recent(model.context_window);
        let job = self.prepare_compaction(CompactionReason::Overflow, None, keep)?;
        let outcome = job.summarize(provider, model, settings, cancel).await?;
        self.finish_compaction(outcome)?;
        Ok(self.request_messages())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repair::tests::assistant;
    use crate::replay::COMPACTION_SUMMARY_PREFIX;
    use crate::store::SessionStore;
    use crate::summarize::tests::{ScriptedProvider, model_info, reply};
    use futures::executor::block_on;
    use rein_ai::{ProviderErrorKind, ProviderRequest, RequestContext, StreamOptions};
    use rein_protocol::message::{StopReason, ToolResultMessage, UserMessage};

    /// A tool call's arguments count as long as their JSON text, escapes and all.
    #[test]
    fn json_length_is_the_length_of_the_written_text() {
        let values = [
            serde_json::json!(null),
            serde_json::json!({"command": "ls -la \"src\"\n", "n": [1, 2.5, -3], "é": "✓\u{1}"}),
            serde_json::json!([{"a": {}}, [], "", true]),
        ];
        for value in values {
            assert_eq!(json_length(&value), value.to_string().len(), "{value}");
        }
    }

    fn user_text(chars: usize, tag: &str) -> Message {
        Message::User(UserMessage::text(format!("{tag}{}", "u".repeat(chars - tag.len())), 0))
    }

    fn tool_result(call: &str, chars: usize) -> Message {
        Message::ToolResult(ToolResultMessage {
            tool_call_id: call.into(),
            tool_name: "read".into(),
            content: vec![ContentBlock::text("r".repeat(chars))],
            is_error: false,
            details: None,
            timestamp: 0,
        })
    }

    fn with_usage(message: Message, tokens: u64) -> Message {
        match message {
            Message::Assistant(mut a) => {
                a.usage = Usage { total_tokens: tokens, ..Usage::default() };
                Message::Assistant(a)
            }
            other => other,
        }
    }

    /// Eight messages, 400 chars (100 tokens) of user text each turn and 400-char tool results:
    /// u0 a0(c0) r0 u1 a1(c1) r1 u2 a2
    fn conversation() -> Vec<Message> {
        vec![
            user_text(400, "first"),
            assistant("a0", &["c0"]).message,
            tool_result("c0", 400),
            user_text(400, "second"),
            assistant("a1", &["c1"]).message,
            tool_result("c1", 400),
            user_text(400, "third"),
            with_usage(reply("done", Usage::default(), StopReason::Stop).into_message(), 5_000),
        ]
    }

    trait IntoMessage {
        fn into_message(self) -> Message;
    }

    impl IntoMessage for rein_protocol::message::AssistantMessage {
        fn into_message(self) -> Message {
            Message::Assistant(self)
        }
    }

    fn session_with(messages: &[Message]) -> (tempfile::TempDir, Session, Vec<String>) {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::new(dir.path());
        let mut session = store.create("/p").unwrap();
        let ids = messages.iter().map(|m| session.append_message(m.clone()).unwrap().id).collect();
        (dir, session, ids)
    }

    fn summary_text(message: &Message) -> String {
        match message {
            Message::User(u) => u.content.iter().filter_map(ContentBlock::as_text).collect(),
            other => panic!("not a user message: {other:?}"),
        }
    }

    #[test]
    fn tokens_come_from_usage_plus_an_estimate_after_it() {
        let mut messages = conversation();
        assert_eq!(estimate_tokens(&messages[0]), 100);
        assert_eq!(context_tokens(&messages, 0), 5_000);
        messages.push(user_text(40, "more"));
        assert_eq!(context_tokens(&messages, 0), 5_010);
        let estimate: u64 = messages.iter().map(estimate_tokens).sum();
        assert_eq!(context_tokens(&messages, 8), estimate);
        let image = Message::User(UserMessage {
            content: vec![ContentBlock::Image {
                data: "AAAA".into(),
                mime_type: "image/png".into(),
            }],
            timestamp: 0,
        });
        assert_eq!(estimate_tokens(&image), IMAGE_TOKENS);
    }

    /// The tally kept along appends must give what a full replay gives, at every step: plain
    /// appends, a reply with usage, open calls, a leaf move back, a compaction, and a result
    /// out of place (which a replay rewrites).
    #[test]
    fn context_tokens_kept_along_appends_equal_a_full_replay() {
        let (_dir, mut session, ids) = session_with(&conversation());
        let check = |session: &Session| {
            let kept = session.context_tokens();
            assert_eq!(kept, session.context_tokens_by_replay());
            // Asked again at the same leaf it answers from the tally.
            assert!(
                session
                    .context_tally()
                    .as_ref()
                    .is_none_or(|t| t.tokens_at(session.leaf_id()) == Some(kept))
            );
            kept
        };
        assert_eq!(check(&session), 5_000);
        session.append_message(user_text(40, "more")).unwrap();
        assert_eq!(check(&session), 5_010);
        assert!(session.context_tally().is_some(), "an append keeps the tally");
        session.append_message(assistant("a3", &["c3", "c4"]).message).unwrap();
        let with_calls = check(&session);
        session.append_message(tool_result("c3", 40)).unwrap();
        assert_eq!(check(&session), with_calls + 10);
        session.set_thinking_level(rein_protocol::model::ThinkingLevel::High).unwrap();
        assert_eq!(check(&session), with_calls + 10);
        session.append_message(tool_result("c4", 40)).unwrap();
        session
            .append_message(with_usage(
                reply("ok", Usage::default(), StopReason::Stop).into_message(),
                7_000,
            ))
            .unwrap();
        assert_eq!(check(&session), 7_000);
        // Back to an earlier leaf: counted afresh.
        session.move_leaf(Some(&ids[3])).unwrap();
        check(&session);
        session.append_message(user_text(40, "branch")).unwrap();
        check(&session);
        // A result with no call: the replay drops it, so the tally gives up and recomputes.
        session.append_message(tool_result("nowhere", 4_000)).unwrap();
        check(&session);
        assert!(session.context_tally().is_none(), "a rewritten context is not tallied");
        session.append_message(user_text(40, "after")).unwrap();
        check(&session);
    }

    #[test]
    fn threshold_uses_window_minus_reserve_never_below_max_output() {
        let settings = CompactionSettings::default();
        // Large windows: the configured reserve, raised to the max output tokens.
        assert_eq!(settings.reserve(200_000, 4_000), 16_384);
        assert_eq!(settings.reserve(200_000, 64_000), 64_000);
        // Small windows: at most a third of the window, so the threshold is never 0.
        assert_eq!(settings.reserve(8_192, 16_384), 2_730);
        assert_eq!(settings.reserve(4_096, 4_096), 1_365);
        // The kept tail and the summary scale down too.
        assert_eq!(settings.keep_recent(200_000), 20_000);
        assert_eq!(settings.keep_recent(8_192), 2_048);
        assert_eq!(settings.summary_tokens(200_000), 8_192);
        assert_eq!(settings.summary_tokens(8_192), 1_024);
        assert_eq!(settings.summary_tokens(1_000), MIN_SUMMARY_TOKENS);
        assert!(!should_compact(84_000, 100_000, 16_000));
        assert!(should_compact(84_001, 100_000, 16_000));
        assert!(should_compact(1, 100, 1_000));
    }

    #[test]
    fn cut_point_never_separates_a_call_from_its_result() {
        let messages = conversation();
        let cuts = valid_cuts(&messages);
        assert_eq!(cuts, [true, true, false, true, true, false, true, true, true]);
        // The last turn (u2, a2) is ~101 tokens; budget 150 keeps just it.
        assert_eq!(find_cut_point(&messages, 150), Some(6));
        // Budget 350 fits u1..a2 (100 + 1 + 100 + 100 + 1 tokens) but not r0 (not a cut anyway).
        assert_eq!(find_cut_point(&messages, 350), Some(3));
        // A tiny budget cuts inside the work on the newest request (which is then carried
        // verbatim in the summary).
        assert_eq!(find_cut_point(&messages, 0), Some(8));
        // Only the request itself would be summarized: keep it instead.
        assert_eq!(find_cut_point(&messages[..7], 0), Some(6));
        // A pending call at the end: the only cuts are before it, and none may pass the
        // newest user message, so there is nothing to summarize.
        let pending = vec![user_text(400, "q"), assistant("a", &["c"]).message];
        assert_eq!(valid_cuts(&pending), [true, true, false]);
        assert_eq!(find_cut_point(&pending, 0), None);
        assert_eq!(find_cut_point(&[user_text(8, "x")], 1_000), None);
        assert_eq!(find_cut_point(&[], 1_000), None);
    }

    #[test]
    fn compaction_by_threshold_replays_summary_then_kept_messages() {
        let (_dir, mut session, ids) = session_with(&conversation());
        // Window 5500 minus the reserve (500, raised to the model's 1000 max output) is 4500.
        let model = model_info(5_500);
        let settings = CompactionSettings {
            reserve_tokens: 500,
            keep_recent_tokens: 150,
            summary_max_tokens: 100,
        };
        assert!(session.needs_compaction(&model, &settings));
        let provider = ScriptedProvider::new(vec![Ok("## Goal\nsum one")]);
        let cancel = CancellationToken::new();
        let done = block_on(session.compact(
            &provider,
            &model,
            CompactionReason::Threshold,
            None,
            &settings,
            &cancel,
        ))
        .unwrap();
        assert_eq!(done.tokens_before, 5_000);
        // After a compaction: the summary and the kept messages, none of their usage trusted.
        assert_eq!(session.context_tokens(), session.context_tokens_by_replay());
        let EntryKind::Compaction { first_kept_entry_id, reason, usage, tokens_before, .. } =
            &done.entry.kind
        else {
            panic!("not a compaction: {:?}", done.entry);
        };
        assert_eq!(first_kept_entry_id, &ids[6]);
        assert_eq!(reason, "threshold");
        assert_eq!(*tokens_before, 5_000);
        assert_eq!(usage.as_ref().unwrap().total_tokens, 110);

        let context = session.context_messages();
        let original = conversation();
        assert_eq!(context.len(), 3);
        assert_eq!(
            summary_text(&context[0]),
            format!("{COMPACTION_SUMMARY_PREFIX}## Goal\nsum one")
        );
        assert_eq!(context[1..], original[6..]);
        // Usage reported before the compaction is not trusted any more.
        assert_eq!(done.tokens_after, context.iter().map(estimate_tokens).sum::<u64>());
        assert!(!session.needs_compaction(&model, &settings));

        let prompt = &provider.prompts()[0];
        assert!(prompt.contains("[User]: first"), "{prompt}");
        assert!(prompt.contains("[Tool result (read)]"));
        assert!(!prompt.contains("[User]: third"), "kept messages are not summarized");
        assert!(prompt.contains("## Files touched"));
        assert!(!prompt.contains("previous-summary"));
        assert!(session.tree().path_to(Some(&ids[0])).len() == 1, "history stays on disk");
        session.append_message(user_text(40, "after")).unwrap();
        assert_eq!(session.context_tokens(), session.context_tokens_by_replay());
    }

    #[test]
    fn manual_compaction_with_instructions_folds_the_earlier_summary() {
        let (_dir, mut session, _) = session_with(&conversation());
        let model = model_info(100_000);
        let settings = CompactionSettings {
            reserve_tokens: 0,
            keep_recent_tokens: 150,
            summary_max_tokens: 100,
        };
        let provider = ScriptedProvider::new(vec![Ok("first summary"), Ok("second summary")]);
        let cancel = CancellationToken::new();
        block_on(session.compact(
            &provider,
            &model,
            CompactionReason::Manual,
            None,
            &settings,
            &cancel,
        ))
        .unwrap();
        session.append_message(user_text(400, "fourth")).unwrap();
        let done = block_on(session.compact(
            &provider,
            &model,
            CompactionReason::Manual,
            Some("focus on the parser".into()),
            &settings,
            &cancel,
        ))
        .unwrap();
        let prompts = provider.prompts();
        assert!(prompts[1].contains("<previous-summary>\nfirst summary\n</previous-summary>"));
        assert!(prompts[1].contains("[User]: third"));
        assert!(prompts[1].contains("focus on the parser"));
        assert!(!prompts[1].contains("[User]: fourth"));
        let EntryKind::Compaction { first_kept_entry_id, reason, .. } = &done.entry.kind else {
            panic!()
        };
        // The tail that fits 150 tokens: the short answer (1 token) and "fourth" (100).
        let answer = &session.replay().path[7];
        assert_eq!(first_kept_entry_id, answer);
        assert_eq!(reason, "manual");
        let context = session.context_messages();
        assert_eq!(context.len(), 3);
        assert_eq!(summary_text(&context[0]), format!("{COMPACTION_SUMMARY_PREFIX}second summary"));
        assert_eq!(context[1], conversation()[7]);
        assert_eq!(context[2], user_text(400, "fourth"));
    }

    #[test]
    fn a_second_compaction_while_one_runs_is_refused() {
        let (_dir, mut session, _) = session_with(&conversation());
        let job = session.prepare_compaction(CompactionReason::Manual, None, 150).unwrap();
        assert!(session.is_compacting());
        let err = session.prepare_compaction(CompactionReason::Threshold, None, 150).unwrap_err();
        assert!(matches!(err, SessionError::CompactionInProgress));
        assert_eq!(err.kind(), rein_protocol::ErrorKind::CompactionInProgress);
        // Work goes on meanwhile; the entries written stay in the context.
        let late = session.append_message(user_text(40, "late")).unwrap();
        let provider = ScriptedProvider::new(vec![Ok("s")]);
        let model = model_info(10_000);
        let outcome = block_on(job.summarize(
            &provider,
            &model,
            &CompactionSettings::default(),
            &CancellationToken::new(),
        ))
        .unwrap();
        assert!(session.is_compacting());
        session.finish_compaction(outcome).unwrap();
        assert!(!session.is_compacting());
        assert_eq!(session.context_messages().last(), Some(&user_text(40, "late")));
        assert!(session.tree().contains(&late.id));
        let failed = ScriptedProvider::new(vec![Err(ProviderErrorKind::Network)]);
        let err = block_on(session.compact(
            &failed,
            &model,
            CompactionReason::Manual,
            None,
            &CompactionSettings { keep_recent_tokens: 0, ..CompactionSettings::default() },
            &CancellationToken::new(),
        ))
        .unwrap_err();
        assert!(matches!(err, SessionError::Summary { kind: ProviderErrorKind::Network, .. }));
        assert!(!session.is_compacting(), "a failed compaction frees the session");
    }

    #[test]
    fn a_long_run_on_one_request_is_compacted_and_the_request_carried_verbatim() {
        let run = vec![
            user_text(40, "REQUEST"),
            assistant("a0", &["c0"]).message,
            tool_result("c0", 4_000),
            assistant("a1", &["c1"]).message,
            tool_result("c1", 4_000),
            reply("done", Usage::default(), StopReason::Stop).into_message(),
        ];
        let (_dir, mut session, ids) = session_with(&run);
        let model = model_info(100_000);
        let settings = CompactionSettings {
            reserve_tokens: 0,
            keep_recent_tokens: 1_100,
            summary_max_tokens: 100,
        };
        let provider = ScriptedProvider::new(vec![Ok("first"), Ok("second")]);
        let cancel = CancellationToken::new();
        let manual = CompactionReason::Manual;
        let done =
            block_on(session.compact(&provider, &model, manual, None, &settings, &cancel)).unwrap();
        let EntryKind::Compaction { first_kept_entry_id, summary, .. } = &done.entry.kind else {
            panic!()
        };
        // The second tool round is kept; the request and the first round are summarized.
        assert_eq!(first_kept_entry_id, &ids[3]);
        assert_eq!(carried_request(summary), Some(summary_text(&run[0]).as_str()));
        let context = session.context_messages();
        assert!(summary_text(&context[0]).ends_with(&summary_text(&run[0])));
        assert_eq!(context[1..], run[3..]);
        // More work on the same request, compacted again: the request is still carried.
        session.append_message(assistant("a2", &["c2"]).message).unwrap();
        session.append_message(tool_result("c2", 4_000)).unwrap();
        let done =
            block_on(session.compact(&provider, &model, manual, None, &settings, &cancel)).unwrap();
        let EntryKind::Compaction { summary, .. } = &done.entry.kind else { panic!() };
        assert!(summary.starts_with("second"), "{summary}");
        assert_eq!(carried_request(summary), Some(summary_text(&run[0]).as_str()));
    }

    #[test]
    fn nothing_to_compact_on_an_empty_session() {
        let (_dir, session, _) = session_with(&[]);
        let err = session.prepare_compaction(CompactionReason::Manual, None, 0).unwrap_err();
        assert!(matches!(err, SessionError::NothingToCompact));
        assert!(!session.is_compacting());
    }

    /// The layer above: send, and on a context overflow compact once and retry.
    #[test]
    fn overflow_then_compact_then_retry_once() {
        let mut messages = conversation();
        messages.push(user_text(400, "fourth"));
        let (_dir, mut session, ids) = session_with(&messages);
        let model = model_info(1_000);
        let settings = CompactionSettings::default();
        let provider = ScriptedProvider::new(vec![
            Err(ProviderErrorKind::ContextOverflow),
            Ok("what happened so far"),
            Ok("the answer"),
        ]);
        let cancel = CancellationToken::new();
        let send = |messages: Vec<Arc<Message>>| {
            let request = ProviderRequest {
                model: model.clone(),
                context: RequestContext {
                    system_prompt: "sys".into(),
                    messages: Arc::new(messages),
                    tools: std::sync::Arc::from([]),
                    encoded: None,
                },
                options: StreamOptions::default(),
            };
            block_on(crate::summarize::tests::final_event(provider.stream_request(request)))
        };
        let first = send(session.request_messages());
        assert_eq!(first, Err(ProviderErrorKind::ContextOverflow));
        let retry_with =
            block_on(session.recover_from_overflow(&provider, &model, &settings, &cancel)).unwrap();
        // A quarter of the 1000-token window (250) keeps u2, a2 and "fourth" (201 tokens); the
        // tool result before them would pass the budget.
        assert_eq!(retry_with.len(), 4);
        assert_eq!(
            summary_text(&retry_with[0]),
            format!("{COMPACTION_SUMMARY_PREFIX}what happened so far")
        );
        assert!(retry_with[1..].iter().map(|m| m.as_ref()).eq(&messages[6..]));
        let second = send(retry_with);
        assert_eq!(second, Ok("the answer".to_string()));
        let leaf = session.tree().get(session.leaf_id().unwrap()).unwrap();
        let EntryKind::Compaction { reason, first_kept_entry_id, .. } = &leaf.kind else {
            panic!()
        };
        assert_eq!(reason, "overflow");
        assert_eq!(first_kept_entry_id, &ids[6]);
        assert_eq!(provider.requests.lock().unwrap().len(), 3);
    }
}
