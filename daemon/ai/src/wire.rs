//! What differs between the three wire APIs, behind one switch: the endpoint, the auth
//! headers, the request body and the stream decoder.

use crate::anthropic::{self, AnthropicDecoder};
use crate::assemble::MessageBuilder;
use crate::failure::Failure;
use crate::openai_chat::{self, ChatDecoder};
use crate::openai_responses::{self, ResponsesDecoder};
use crate::provider::{ProviderErrorKind, ProviderRequest};
use bytes::Bytes;
use eventsource_stream::Eventsource;
use futures::{Stream, StreamExt};
use rein_protocol::message::AssistantMessage;
use rein_protocol::model::{Api, ModelInfo};
use serde_json::Value;

/// What a decoder wants after an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Keep reading.
    Continue,
    /// The terminal event arrived: the message is complete.
    Done,
}

/// The URL a request to `api` is posted to, under `base_url` (which ends with the version
/// segment, e.g. `https://api.openai.com/v1`).
pub fn endpoint(api: Api, base_url: &str) -> String {
    let base = base_url.trim_end_matches('/');
    match api {
        Api::OpenAiChat => format!("{base}/chat/completions"),
        Api::OpenAiResponses => format!("{base}/responses"),
        Api::Anthropic => format!("{base}/messages"),
    }
}

/// The JSON request body for `api`.
pub fn request_body(request: &ProviderRequest) -> Value {
    match request.model.api {
        Api::OpenAiChat => openai_chat::request_body(request),
        Api::OpenAiResponses => openai_responses::request_body(request),
        Api::Anthropic => anthropic::request_body(request),
    }
}

/// The headers that carry the API key (and the API version, for Anthropic).
pub fn auth_headers(api: Api, key: Option<&str>) -> Vec<(&'static str, String)> {
    let mut headers = Vec::new();
    match api {
        Api::OpenAiChat | Api::OpenAiResponses => {
            if let Some(key) = key {
                headers.push(("authorization", format!("Bearer {key}")));
            }
        }
        Api::Anthropic => {
            headers.push(("anthropic-version", anthropic::API_VERSION.to_string()));
            if let Some(key) = key {
                headers.push(("x-api-key", key.to_string()));
            }
        }
    }
    headers
}

/// Turns one API's SSE events into message content.
#[derive(Debug)]
pub enum Decoder {
    /// Chat Completions.
    Chat(ChatDecoder),
    /// Responses.
    Responses(ResponsesDecoder),
    /// Anthropic Messages.
    Anthropic(AnthropicDecoder),
}

impl Decoder {
    /// A fresh decoder for `api`.
    pub fn new(api: Api) -> Self {
        match api {
            Api::OpenAiChat => Self::Chat(ChatDecoder::default()),
            Api::OpenAiResponses => Self::Responses(ResponsesDecoder::default()),
            Api::Anthropic => Self::Anthropic(AnthropicDecoder::default()),
        }
    }

    /// Feeds one SSE event: its `event:` name (`message` when absent) and its data.
    pub fn on_event(
        &mut self,
        name: &str,
        data: &str,
        out: &mut MessageBuilder,
    ) -> Result<Step, Failure> {
        match self {
            Self::Chat(decoder) => decoder.on_data(data, out),
            Self::Responses(decoder) => decoder.on_data(data, out),
            Self::Anthropic(decoder) => decoder.on_event(name, data, out),
        }
    }
}

/// The error for a stream that ended before its terminal event.
pub fn unterminated() -> Failure {
    Failure::protocol("the stream ended before its terminal event")
}

/// Decodes a whole SSE byte stream of `model`'s API in process, without HTTP: the parser and
/// assembler the providers use, exposed for benchmarks and tests. Returns the message and the
/// number of deltas it streamed.
pub async fn assemble<S, E>(
    model: &ModelInfo,
    bytes: S,
) -> Result<(AssistantMessage, usize), Failure>
where
    S: Stream<Item = Result<Bytes, E>> + Unpin,
    E: std::fmt::Display,
{
    let mut builder = MessageBuilder::new(model, 0);
    let mut decoder = Decoder::new(model.api);
    let mut events = bytes.eventsource();
    let mut deltas = 0;
    while let Some(event) = events.next().await {
        let event = event.map_err(|e| {
            Failure::transient(ProviderErrorKind::Network, format!("stream failed: {e}"))
        })?;
        let step = decoder.on_event(&event.event, &event.data, &mut builder)?;
        deltas += builder.take_deltas().len();
        if step == Step::Done {
            let message = builder.finish();
            return Ok((message, deltas));
        }
    }
    Err(unterminated())
}
