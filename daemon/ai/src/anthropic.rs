//! The Anthropic Messages wire API (`anthropic`).

use crate::assemble::MessageBuilder;
use crate::compat::Compat;
use crate::encoded_history::{Encoded, WireItems, encode_items};
use crate::failure::Failure;
use crate::history::{IMAGE_OMITTED, is_native, should_replay, thinking_as_text};
use crate::ids::wire_tool_call_id;
use crate::provider::{ProviderErrorKind, ProviderRequest};
use crate::wire::Step;
use rein_protocol::message::{ContentBlock, Message, StopReason};
use rein_protocol::model::{Api, ModelInfo, ThinkingLevel};
use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::sync::Arc;

/// The `anthropic-version` header value sent with every request.
pub const API_VERSION: &str = "2023-06-01";

/// Thinking budget in tokens for a level.
pub fn thinking_budget(level: ThinkingLevel) -> Option<u64> {
    match level {
        ThinkingLevel::Off => None,
        ThinkingLevel::Minimal => Some(1024),
        ThinkingLevel::Low => Some(2048),
        ThinkingLevel::Medium => Some(8192),
        ThinkingLevel::High => Some(16384),
        ThinkingLevel::Xhigh => Some(32000),
    }
}

/// The request body for `POST {base_url}/messages`, as a JSON value (for tests and tools that
/// inspect it; requests are sent from [`body`]).
pub fn request_body(request: &ProviderRequest, compat: &Compat) -> Value {
    serde_json::to_value(body(request, compat)).unwrap_or_default()
}

/// The request body for `POST {base_url}/messages`, borrowing the request: it is serialized
/// straight from the history, with no JSON tree built in between.
pub fn body<'a>(request: &'a ProviderRequest, compat: &Compat) -> AnthropicBody<'a> {
    body_after(request, compat, Encoded::NONE)
}

/// A user or assistant message that makes a turn of its own starts a segment, when a user
/// turn follows from it: no turn is ever joined to one before it (only consecutive tool results
/// share a turn, and a message that makes no turn could stand between two of those), and the
/// cache breakpoint on the last user turn and the check for a tool loop without thinking, which
/// look at the last turns, then only see turns from it on.
pub(crate) fn starts_segment(history: &[Arc<Message>], index: usize, model: &ModelInfo) -> bool {
    let Some(message) = history.get(index) else { return false };
    let makes_turn =
        |message: &Arc<Message>| !turns(std::slice::from_ref(message), model).is_empty();
    match message.as_ref() {
        Message::User(_) => makes_turn(message),
        Message::Assistant(_) => {
            makes_turn(message)
                && history[index + 1..].iter().any(|later| match later.as_ref() {
                    Message::ToolResult(_) => true,
                    Message::User(_) => makes_turn(later),
                    Message::Assistant(_) => false,
                })
        }
        Message::ToolResult(_) => false,
    }
}

/// The turns of `history`, each as its own JSON text.
pub(crate) fn encoded_items(
    history: &[Arc<Message>],
    model: &ModelInfo,
    _compat: &Compat,
) -> serde_json::Result<Vec<Box<RawValue>>> {
    encode_items(&turns(history, model))
}

/// The turns of `history`, before the cache breakpoint is marked.
fn turns<'a>(history: &'a [Arc<Message>], model: &ModelInfo) -> Vec<Turn<'a>> {
    let mut messages: Vec<Turn<'a>> = Vec::with_capacity(history.len());
    for message in history.iter().map(|message| message.as_ref()) {
        match message {
            Message::User(user) => {
                let content: Vec<Block<'a>> =
                    user.content.iter().filter_map(|b| user_block(b, model.images)).collect();
                if !content.is_empty() {
                    messages.push(Turn { role: "user", content });
                }
            }
            Message::Assistant(assistant) => {
                if !should_replay(assistant) {
                    continue;
                }
                let native = is_native(assistant, model);
                let mut content = Vec::new();
                for block in &assistant.content {
                    match block {
                        ContentBlock::Text { text } if !text.trim().is_empty() => {
                            content.push(Block::text(Cow::Borrowed(text)));
                        }
                        ContentBlock::Thinking { thinking, signature, redacted } => {
                            match (native, redacted, signature) {
                                (true, true, Some(data)) => {
                                    content.push(Block::RedactedThinking { data })
                                }
                                (true, false, Some(signature)) if !signature.is_empty() => {
                                    content.push(Block::Thinking { thinking, signature })
                                }
                                _ => {
                                    if let Some(text) = thinking_as_text(thinking, *redacted) {
                                        content.push(Block::text(Cow::Owned(text)));
                                    }
                                }
                            }
                        }
                        ContentBlock::ToolCall(call) => {
                            let input = if call.arguments.is_object() {
                                ToolInput::Given(&call.arguments)
                            } else {
                                ToolInput::Empty(EmptyObject {})
                            };
                            content.push(Block::ToolUse {
                                id: wire_tool_call_id(Api::Anthropic, &call.id),
                                name: &call.name,
                                input,
                            });
                        }
                        _ => {}
                    }
                }
                if !content.is_empty() {
                    messages.push(Turn { role: "assistant", content });
                }
            }
            Message::ToolResult(result) => {
                let mut content: Vec<Block<'a>> =
                    result.content.iter().filter_map(|b| user_block(b, model.images)).collect();
                if content.is_empty() {
                    content.push(Block::text(Cow::Borrowed("(no output)")));
                }
                let block = Block::ToolResult {
                    tool_use_id: wire_tool_call_id(Api::Anthropic, &result.tool_call_id),
                    content,
                    is_error: result.is_error,
                    cache_control: None,
                };
                // Consecutive results travel in one user turn.
                match messages.last_mut() {
                    Some(last) if last.is_tool_results() => last.content.push(block),
                    _ => messages.push(Turn { role: "user", content: vec![block] }),
                }
            }
        }
    }
    messages
}

/// The request body, with the turns of the history's first `encoded.messages` messages
/// already encoded (see [`crate::encoded_history`]).
pub(crate) fn body_after<'a>(
    request: &'a ProviderRequest,
    compat: &Compat,
    encoded: Encoded<'a>,
) -> AnthropicBody<'a> {
    let model = &request.model;
    let mut messages =
        turns(request.context.messages.get(encoded.messages..).unwrap_or(&[]), model);
    mark_cache_breakpoint(&mut messages);
    let wanted = if model.reasoning && compat.reasoning_effort {
        thinking_budget(request.options.thinking)
    } else {
        None
    };
    // Thinking cannot be switched on in the middle of a tool loop whose assistant turn has no
    // thinking of its own (another model's, say): the API wants that turn to start with it.
    let wanted = wanted.filter(|_| !continues_turn_without_thinking(&messages));
    let (max_tokens, budget) = output_limits(request.options.max_tokens, wanted, model);
    let system_prompt = &request.context.system_prompt;
    AnthropicBody {
        model: &model.id,
        messages: WireItems::new(None, encoded, messages),
        max_tokens,
        stream: true,
        system: (!system_prompt.is_empty()).then(|| {
            [SystemBlock {
                kind: "text",
                text: system_prompt,
                cache_control: CacheControl::EPHEMERAL,
            }]
        }),
        tools: request
            .context
            .tools
            .iter()
            .map(|tool| AnthropicTool {
                name: &tool.name,
                description: &tool.description,
                input_schema: &tool.parameters,
            })
            .collect(),
        thinking: budget.map(|budget_tokens| ThinkingOptions { kind: "enabled", budget_tokens }),
        temperature: match budget {
            Some(_) => None,
            None => request.options.temperature.map(f64::from),
        },
    }
}

/// An Anthropic Messages request body (see [`body`]).
#[derive(Debug, Serialize)]
pub struct AnthropicBody<'a> {
    model: &'a str,
    messages: WireItems<'a, Turn<'a>>,
    max_tokens: u64,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<[SystemBlock<'a>; 1]>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<AnthropicTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<ThinkingOptions>,
    /// Widened the way a JSON value holds it, so the number sent is the same either way.
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
}

/// One message of the conversation on the wire.
#[derive(Debug, Serialize)]
struct Turn<'a> {
    role: &'static str,
    content: Vec<Block<'a>>,
}

impl Turn<'_> {
    /// A user turn holding only tool results (where the next result joins).
    fn is_tool_results(&self) -> bool {
        self.role == "user" && self.content.iter().all(|b| matches!(b, Block::ToolResult { .. }))
    }
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block<'a> {
    Text {
        text: Cow<'a, str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    Image {
        source: ImageSource<'a>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    Thinking {
        thinking: &'a str,
        signature: &'a str,
    },
    RedactedThinking {
        data: &'a str,
    },
    ToolUse {
        id: Cow<'a, str>,
        name: &'a str,
        input: ToolInput<'a>,
    },
    ToolResult {
        tool_use_id: Cow<'a, str>,
        content: Vec<Block<'a>>,
        is_error: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
}

impl<'a> Block<'a> {
    fn text(text: Cow<'a, str>) -> Self {
        Self::Text { text, cache_control: None }
    }

    fn is_thinking(&self) -> bool {
        matches!(self, Self::Thinking { .. } | Self::RedactedThinking { .. })
    }
}

#[derive(Debug, Serialize)]
struct ImageSource<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    media_type: &'a str,
    data: &'a str,
}

/// A tool call's arguments: an object as recorded, or `{}` for anything else.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum ToolInput<'a> {
    Given(&'a Value),
    Empty(EmptyObject),
}

#[derive(Debug, Serialize)]
struct EmptyObject {}

#[derive(Debug, Clone, Copy, Serialize)]
struct CacheControl {
    #[serde(rename = "type")]
    kind: &'static str,
}

impl CacheControl {
    const EPHEMERAL: Self = Self { kind: "ephemeral" };
}

#[derive(Debug, Serialize)]
struct SystemBlock<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
    cache_control: CacheControl,
}

#[derive(Debug, Serialize)]
struct AnthropicTool<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: &'a Value,
}

#[derive(Debug, Serialize)]
struct ThinkingOptions {
    #[serde(rename = "type")]
    kind: &'static str,
    budget_tokens: u64,
}

/// The smallest thinking budget the API accepts, and the room always left for the answer.
const MIN_BUDGET: u64 = 1024;

/// `max_tokens` and the thinking budget for a request: the budget plus room for the answer,
/// both within the model's output limit (the API rejects a larger `max_tokens`, and wants
/// `budget_tokens` at least 1024 and below `max_tokens`). Thinking is left off when the limit
/// has no room for the smallest budget.
pub fn output_limits(
    requested: Option<u64>,
    budget: Option<u64>,
    model: &ModelInfo,
) -> (u64, Option<u64>) {
    let limit = if model.max_output_tokens > 0 { model.max_output_tokens } else { u64::MAX };
    let mut max_tokens = requested.unwrap_or(limit).clamp(1, limit);
    let Some(budget) = budget else { return (max_tokens, None) };
    max_tokens = max_tokens.max(budget.saturating_add(MIN_BUDGET)).min(limit);
    let budget = budget.min(max_tokens.saturating_sub(MIN_BUDGET));
    if budget < MIN_BUDGET {
        return (max_tokens, None);
    }
    (max_tokens, Some(budget))
}

/// True when the request continues an assistant turn (the last message holds tool results)
/// and that turn's assistant message does not start with a thinking block.
fn continues_turn_without_thinking(messages: &[Turn<'_>]) -> bool {
    let [.., assistant, last] = messages else { return false };
    if !last.is_tool_results() || assistant.role != "assistant" {
        return false;
    }
    !assistant.content.first().is_some_and(Block::is_thinking)
}

/// Asks Anthropic to cache the conversation up to the last user turn.
fn mark_cache_breakpoint(messages: &mut [Turn<'_>]) {
    let last_user = messages.iter_mut().rev().find(|m| m.role == "user");
    // A user turn holds only text, images and tool results.
    if let Some(
        Block::Text { cache_control, .. }
        | Block::Image { cache_control, .. }
        | Block::ToolResult { cache_control, .. },
    ) = last_user.and_then(|m| m.content.last_mut())
    {
        *cache_control = Some(CacheControl::EPHEMERAL);
    }
}

/// A user or tool-result block; whitespace-only text is left out (the API rejects text blocks
/// without non-whitespace text).
fn user_block(block: &ContentBlock, images: bool) -> Option<Block<'_>> {
    match block {
        ContentBlock::Text { text } if !text.trim().is_empty() => {
            Some(Block::text(Cow::Borrowed(text)))
        }
        ContentBlock::Image { .. } if !images => Some(Block::text(Cow::Borrowed(IMAGE_OMITTED))),
        ContentBlock::Image { data, mime_type } => Some(Block::Image {
            source: ImageSource { kind: "base64", media_type: mime_type, data },
            cache_control: None,
        }),
        _ => None,
    }
}

/// Decodes an Anthropic Messages SSE stream into a [`MessageBuilder`].
#[derive(Debug, Default)]
pub struct AnthropicDecoder {
    /// Blocks by the wire's content index: (wire index, block index).
    blocks: Vec<(u64, usize)>,
}

#[derive(serde::Deserialize)]
struct EventType {
    #[serde(rename = "type", default)]
    kind: Option<String>,
}

#[derive(serde::Deserialize)]
struct DeltaEvent<'a> {
    #[serde(default)]
    index: u64,
    #[serde(borrow)]
    delta: DeltaBody<'a>,
}

#[derive(serde::Deserialize)]
struct DeltaBody<'a> {
    #[serde(rename = "type", borrow)]
    kind: std::borrow::Cow<'a, str>,
    #[serde(default, borrow)]
    text: Option<std::borrow::Cow<'a, str>>,
    #[serde(default, borrow)]
    thinking: Option<std::borrow::Cow<'a, str>>,
    #[serde(default, borrow)]
    signature: Option<std::borrow::Cow<'a, str>>,
    #[serde(default, borrow)]
    partial_json: Option<std::borrow::Cow<'a, str>>,
}

impl AnthropicDecoder {
    /// Handles one SSE event (`event:` name and `data:` JSON).
    pub fn on_event(
        &mut self,
        name: &str,
        data: &str,
        out: &mut MessageBuilder,
    ) -> Result<Step, Failure> {
        // A stream without `event:` lines (some proxies drop them) still names each event in
        // its payload's `type`.
        let named;
        let name = if name.is_empty() || name == "message" {
            named = serde_json::from_str::<EventType>(data).ok().and_then(|e| e.kind);
            named.as_deref().unwrap_or(name)
        } else {
            name
        };
        let malformed = |e: serde_json::Error| {
            Failure::fatal(ProviderErrorKind::Protocol, format!("malformed `{name}` event: {e}"))
        };
        match name {
            "content_block_delta" => {
                let event: DeltaEvent<'_> = serde_json::from_str(data).map_err(malformed)?;
                let Some(block) = self.block(event.index) else {
                    return Ok(Step::Continue);
                };
                let delta = event.delta;
                match delta.kind.as_ref() {
                    "text_delta" => {
                        out.append_text(block, delta.text.as_deref().unwrap_or_default())
                    }
                    "thinking_delta" => {
                        out.append_thinking(block, delta.thinking.as_deref().unwrap_or_default());
                    }
                    "signature_delta" => {
                        out.append_signature(block, delta.signature.as_deref().unwrap_or_default());
                    }
                    "input_json_delta" => out.append_tool_arguments(
                        block,
                        delta.partial_json.as_deref().unwrap_or_default(),
                    ),
                    _ => {}
                }
                Ok(Step::Continue)
            }
            "ping" => Ok(Step::Continue),
            "message_start" => {
                let event: Value = serde_json::from_str(data).map_err(malformed)?;
                if let Some(usage) = event.pointer("/message/usage") {
                    self.read_usage(usage, out);
                }
                Ok(Step::Continue)
            }
            "content_block_start" => {
                let event: Value = serde_json::from_str(data).map_err(malformed)?;
                let index = event.get("index").and_then(Value::as_u64).unwrap_or(0);
                let block = &event["content_block"];
                let text_of =
                    |key: &str| block.get(key).and_then(Value::as_str).unwrap_or_default();
                let opened = match block.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        let b = out.open_text();
                        out.append_text(b, text_of("text"));
                        Some(b)
                    }
                    Some("thinking") => {
                        let b = out.open_thinking();
                        out.append_thinking(b, text_of("thinking"));
                        if !text_of("signature").is_empty() {
                            out.append_signature(b, text_of("signature"));
                        }
                        Some(b)
                    }
                    Some("redacted_thinking") => {
                        Some(out.push_redacted_thinking(text_of("data").to_string()))
                    }
                    Some("tool_use") => {
                        let b = out.open_tool_call(text_of("id"), text_of("name"));
                        if let Some(input) = block
                            .get("input")
                            .filter(|i| i.as_object().is_some_and(|o| !o.is_empty()))
                        {
                            out.append_tool_arguments(b, &input.to_string());
                        }
                        Some(b)
                    }
                    _ => None,
                };
                if let Some(b) = opened {
                    self.blocks.push((index, b));
                }
                Ok(Step::Continue)
            }
            "content_block_stop" => {
                let event: Value = serde_json::from_str(data).map_err(malformed)?;
                let index = event.get("index").and_then(Value::as_u64).unwrap_or(0);
                if let Some(block) = self.block(index) {
                    out.finish_tool_call(block, None);
                }
                Ok(Step::Continue)
            }
            "message_delta" => {
                let event: Value = serde_json::from_str(data).map_err(malformed)?;
                if let Some(reason) = event.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    out.set_stop_reason(match reason {
                        "max_tokens" | "model_context_window_exceeded" => StopReason::Length,
                        "tool_use" => StopReason::ToolUse,
                        "refusal" => StopReason::ContentFilter,
                        _ => StopReason::Stop,
                    });
                }
                if let Some(usage) = event.get("usage") {
                    self.read_usage(usage, out);
                }
                Ok(Step::Continue)
            }
            "message_stop" => Ok(Step::Done),
            "error" => {
                let event: Value = serde_json::from_str(data).map_err(malformed)?;
                Err(Failure::from_stream_error_value(&event))
            }
            _ => Ok(Step::Continue),
        }
    }

    fn block(&self, index: u64) -> Option<usize> {
        self.blocks.iter().rev().find(|(i, _)| *i == index).map(|(_, b)| *b)
    }

    /// Usage fields arrive in `message_start` and again (cumulatively) in `message_delta`;
    /// a field present later replaces the earlier value.
    fn read_usage(&self, usage: &Value, out: &mut MessageBuilder) {
        let field = |key: &str| usage.get(key).and_then(Value::as_u64);
        let total = out.usage_mut();
        if let Some(v) = field("input_tokens") {
            total.input = v;
        }
        if let Some(v) = field("output_tokens") {
            total.output = v;
        }
        if let Some(v) = field("cache_read_input_tokens") {
            total.cache_read = v;
        }
        if let Some(v) = field("cache_creation_input_tokens") {
            total.cache_write = v;
        }
    }
}
