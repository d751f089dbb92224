//! The one provider interface every wire API implements.

use crate::encoded_history::EncodedHistory;
use futures::stream::BoxStream;
use rein_protocol::event::AssistantDelta;
use rein_protocol::message::{AssistantMessage, Message, ToolDefinition};
use rein_protocol::model::{ModelInfo, ThinkingLevel};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// What the model is asked: the system prompt, the history and the tools it may call.
///
/// The history and the tools are shared, not owned: a harness hands the request the same
/// history it keeps between turns (appending later copies it only if a request still holds it)
/// and the tool definitions it built once, so a request costs no copy of either.
#[derive(Debug, Clone, Default)]
pub struct RequestContext {
    /// The system prompt.
    pub system_prompt: String,
    /// The conversation so far.
    pub messages: Arc<Vec<Arc<Message>>>,
    /// Tools the model may call.
    pub tools: Arc<[ToolDefinition]>,
    /// The conversation's history as earlier requests encoded it, so this one encodes only
    /// what was appended since (see [`crate::EncodedHistory`]); `None` encodes it all.
    pub encoded: Option<Arc<EncodedHistory>>,
}

impl RequestContext {
    /// Messages in the shared form [`RequestContext::messages`] holds them, for callers that
    /// own theirs.
    pub fn shared_history(messages: impl IntoIterator<Item = Message>) -> Arc<Vec<Arc<Message>>> {
        Arc::new(messages.into_iter().map(Arc::new).collect())
    }
}

/// Per-request options.
#[derive(Debug, Clone, Default)]
pub struct StreamOptions {
    /// Reasoning effort, for models that reason.
    pub thinking: ThinkingLevel,
    /// Output token cap; the model's maximum when absent.
    pub max_tokens: Option<u64>,
    /// Sampling temperature.
    pub temperature: Option<f32>,
    /// Cancels the request; the stream then ends with an `aborted` message.
    pub cancel: CancellationToken,
}

/// One request to a provider. Owned, so the returned stream can outlive the caller's borrows.
#[derive(Debug, Clone)]
pub struct ProviderRequest {
    /// The model to ask.
    pub model: ModelInfo,
    /// What to ask.
    pub context: RequestContext,
    /// How to ask.
    pub options: StreamOptions,
}

/// Why a request failed, for callers that react differently per kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProviderErrorKind {
    /// The request exceeded the model's context window; compaction can help.
    ContextOverflow,
    /// Rate limited, and retries ran out.
    RateLimited,
    /// The provider rejected the credentials.
    Auth,
    /// Any other HTTP error status.
    Http,
    /// The connection failed or dropped.
    Network,
    /// The stream was malformed or ended without its terminal event.
    Protocol,
    /// The caller cancelled the request.
    Aborted,
}

/// One step of a streamed assistant message.
#[derive(Debug, Clone, PartialEq)]
pub enum AssistantMessageEvent {
    /// The message began; no content yet.
    Start,
    /// Content arrived.
    Delta(AssistantDelta),
    /// A failed attempt will be retried after `delay_ms`.
    Retry {
        /// 1-based attempt that failed.
        attempt: u32,
        /// The most attempts that will be made.
        max_attempts: u32,
        /// Wait before the next attempt.
        delay_ms: u64,
        /// What failed.
        error: String,
    },
    /// The message is complete (stop reason `stop`, `length` or `tool_use`).
    Done(AssistantMessage),
    /// The request failed or was cancelled: the message holds whatever streamed before, with
    /// stop reason `error` or `aborted` and an `error_message`.
    Error {
        /// The partial message.
        message: AssistantMessage,
        /// The failure's kind.
        kind: ProviderErrorKind,
    },
}

/// The stream a provider returns. It always ends with exactly one `Done` or `Error`.
pub type EventStream = BoxStream<'static, AssistantMessageEvent>;

/// A model provider: turns one request into one stream of assistant-message events.
pub trait Provider: Send + Sync {
    /// Starts the request. Never fails up front: errors arrive as the stream's final event.
    fn stream(&self, request: ProviderRequest) -> EventStream;
}
