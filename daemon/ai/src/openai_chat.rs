//! The OpenAI Chat Completions wire API (`openai-chat`), also spoken by OpenRouter, Groq,
//! DeepSeek, Ollama, llama.cpp, vLLM and LM Studio.

use crate::assemble::MessageBuilder;
use crate::compat::{Compat, MaxTokensField};
use crate::encoded_history::{Encoded, WireItems, encode_items};
use crate::failure::Failure;
use crate::history::{IMAGE_OMITTED, data_url, is_native, should_replay, thinking_as_text};
use crate::ids::wire_tool_call_id;
use crate::provider::ProviderRequest;
use crate::wire::Step;
use rein_protocol::message::{ContentBlock, Message, StopReason, Usage};
use rein_protocol::model::{Api, ModelInfo, ThinkingLevel};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::sync::Arc;

/// The request body for `POST {base_url}/chat/completions`, as a JSON value (for tests and
/// tools that inspect it; requests are sent from [`body`]).
pub fn request_body(request: &ProviderRequest, compat: &Compat) -> Value {
    serde_json::to_value(body(request, compat)).unwrap_or_default()
}

/// The request body for `POST {base_url}/chat/completions`, borrowing the request: it is
/// serialized straight from the history, with no JSON tree built in between.
pub fn body<'a>(request: &'a ProviderRequest, compat: &Compat) -> ChatBody<'a> {
    body_after(request, compat, Encoded::NONE)
}

/// Any message but a tool result starts a segment: the images of the tool results before it
/// are sent before it, and nothing else carries over from one message to the next.
pub(crate) fn starts_segment(history: &[Arc<Message>], index: usize, _model: &ModelInfo) -> bool {
    !matches!(history.get(index).map(AsRef::as_ref), Some(Message::ToolResult(_)) | None)
}

/// The wire messages of `history` (no system message), each as its own JSON text.
pub(crate) fn encoded_items(
    history: &[Arc<Message>],
    model: &ModelInfo,
    compat: &Compat,
) -> serde_json::Result<Vec<Box<RawValue>>> {
    encode_items(&items(history, model, compat))
}

/// The wire messages of `history`, without the system message.
fn items<'a>(
    history: &'a [Arc<Message>],
    model: &ModelInfo,
    compat: &Compat,
) -> Vec<ChatMessage<'a>> {
    let mut messages = Vec::with_capacity(history.len());
    // Images from tool results travel in a user message after the run of tool messages (a
    // tool message cannot hold images, and nothing may come between the tool messages).
    let mut tool_images: Vec<ChatPart<'a>> = Vec::new();
    for message in history.iter().map(|message| message.as_ref()) {
        if !matches!(message, Message::ToolResult(_)) {
            flush_tool_images(&mut tool_images, &mut messages);
        }
        match message {
            Message::User(user) => {
                messages
                    .push(ChatMessage::User { content: user_content(&user.content, model.images) });
            }
            Message::Assistant(assistant) => {
                if !should_replay(assistant) {
                    continue;
                }
                let native = is_native(assistant, model);
                let mut text = String::new();
                let mut reasoning = String::new();
                let mut tool_calls = Vec::new();
                for block in &assistant.content {
                    match block {
                        ContentBlock::Text { text: t } => text.push_str(t),
                        ContentBlock::Thinking { thinking, redacted: false, .. } if native => {
                            reasoning.push_str(thinking);
                        }
                        ContentBlock::Thinking { thinking, redacted, .. } => {
                            // Foreign reasoning is shown to the model as text.
                            if !native && let Some(shown) = thinking_as_text(thinking, *redacted) {
                                text.push_str(&shown);
                                text.push('\n');
                            }
                        }
                        ContentBlock::ToolCall(call) => tool_calls.push(ChatToolCall {
                            id: wire_tool_call_id(Api::OpenAiChat, &call.id),
                            kind: "function",
                            function: ChatFunction {
                                name: &call.name,
                                arguments: arguments_text(&call.arguments),
                            },
                        }),
                        ContentBlock::Image { .. } => {}
                    }
                }
                let content = (!text.is_empty()).then_some(text);
                if tool_calls.is_empty() && content.is_none() {
                    continue;
                }
                // The model's own reasoning goes back on its tool-calling turns (an empty
                // string when there was none: the field itself is required).
                let reasoning_content =
                    (!tool_calls.is_empty() && compat.reasoning_content).then_some(reasoning);
                let tool_calls = (!tool_calls.is_empty()).then_some(tool_calls);
                messages.push(ChatMessage::Assistant { content, tool_calls, reasoning_content });
            }
            Message::ToolResult(result) => {
                let text = result.text();
                messages.push(ChatMessage::Tool {
                    tool_call_id: wire_tool_call_id(Api::OpenAiChat, &result.tool_call_id),
                    content: if text.is_empty() {
                        Cow::Borrowed("(no output)")
                    } else {
                        Cow::Owned(text)
                    },
                });
                if model.images {
                    tool_images.extend(result.content.iter().filter_map(image_part));
                }
            }
        }
    }
    flush_tool_images(&mut tool_images, &mut messages);
    messages
}

/// The request body, with the wire messages of the history's first `encoded.messages`
/// messages already encoded (see [`crate::encoded_history`]).
pub(crate) fn body_after<'a>(
    request: &'a ProviderRequest,
    compat: &Compat,
    encoded: Encoded<'a>,
) -> ChatBody<'a> {
    let model = &request.model;
    let fresh =
        items(request.context.messages.get(encoded.messages..).unwrap_or(&[]), model, compat);
    let system = (!request.context.system_prompt.is_empty())
        .then(|| ChatMessage::System { content: &request.context.system_prompt });
    let messages = WireItems::new(system, encoded, fresh);
    let tools = request.context.tools.iter().map(|tool| ChatTool {
        kind: "function",
        function: ChatToolFunction {
            name: &tool.name,
            description: &tool.description,
            parameters: &tool.parameters,
        },
    });
    let max_tokens = request.options.max_tokens.map(|max| clamp_output(max, model));
    let (max_tokens, max_completion_tokens) = match compat.max_tokens_field {
        MaxTokensField::MaxTokens => (max_tokens, None),
        MaxTokensField::MaxCompletionTokens => (None, max_tokens),
    };
    let reasoning_effort = (model.reasoning
        && request.options.thinking != ThinkingLevel::Off
        && compat.reasoning_effort)
        .then(|| effort(request.options.thinking));
    ChatBody {
        model: &model.id,
        messages,
        stream: true,
        stream_options: compat.stream_usage.then_some(StreamUsage { include_usage: true }),
        tools: tools.collect(),
        max_tokens,
        max_completion_tokens,
        temperature: request.options.temperature.map(f64::from),
        reasoning_effort,
    }
}

/// A Chat Completions request body (see [`body`]).
#[derive(Debug, Serialize)]
pub struct ChatBody<'a> {
    model: &'a str,
    messages: WireItems<'a, ChatMessage<'a>>,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<StreamUsage>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<ChatTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u64>,
    /// Widened the way a JSON value holds it, so the number sent is the same either way.
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_effort: Option<&'static str>,
}

#[derive(Debug, Serialize)]
struct StreamUsage {
    include_usage: bool,
}

#[derive(Debug, Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
enum ChatMessage<'a> {
    System {
        content: &'a str,
    },
    User {
        content: UserContent<'a>,
    },
    Assistant {
        /// `null` when the turn has only tool calls.
        content: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        tool_calls: Option<Vec<ChatToolCall<'a>>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        reasoning_content: Option<String>,
    },
    Tool {
        tool_call_id: Cow<'a, str>,
        content: Cow<'a, str>,
    },
}

#[derive(Debug, Serialize)]
#[serde(untagged)]
enum UserContent<'a> {
    Text(&'a str),
    Parts(Vec<ChatPart<'a>>),
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ChatPart<'a> {
    Text { text: &'a str },
    ImageUrl { image_url: ImageUrl },
}

#[derive(Debug, Serialize)]
struct ImageUrl {
    url: String,
}

#[derive(Debug, Serialize)]
struct ChatToolCall<'a> {
    id: Cow<'a, str>,
    #[serde(rename = "type")]
    kind: &'static str,
    function: ChatFunction<'a>,
}

#[derive(Debug, Serialize)]
struct ChatFunction<'a> {
    name: &'a str,
    arguments: Cow<'a, str>,
}

#[derive(Debug, Serialize)]
struct ChatTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: ChatToolFunction<'a>,
}

#[derive(Debug, Serialize)]
struct ChatToolFunction<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

/// An output token cap within the model's limit (servers reject a larger one), at least 1.
pub fn clamp_output(requested: u64, model: &ModelInfo) -> u64 {
    let limit = if model.max_output_tokens > 0 { model.max_output_tokens } else { u64::MAX };
    requested.clamp(1, limit)
}

/// The OpenAI effort name for a thinking level.
pub fn effort(level: ThinkingLevel) -> &'static str {
    match level {
        ThinkingLevel::Off | ThinkingLevel::Minimal => "minimal",
        ThinkingLevel::Low => "low",
        ThinkingLevel::Medium => "medium",
        ThinkingLevel::High | ThinkingLevel::Xhigh => "high",
    }
}

/// Tool-call arguments as the JSON text the wire wants (a string kept from a malformed call
/// goes back exactly as the model wrote it).
pub fn arguments_text(arguments: &Value) -> Cow<'_, str> {
    match arguments {
        Value::String(raw) => Cow::Borrowed(raw),
        other => Cow::Owned(other.to_string()),
    }
}

fn user_content(blocks: &[ContentBlock], images: bool) -> UserContent<'_> {
    if let [ContentBlock::Text { text }] = blocks {
        return UserContent::Text(text);
    }
    let parts = blocks
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text { text } => Some(ChatPart::Text { text }),
            ContentBlock::Image { .. } if !images => Some(ChatPart::Text { text: IMAGE_OMITTED }),
            ContentBlock::Image { .. } => image_part(block),
            _ => None,
        })
        .collect();
    UserContent::Parts(parts)
}

fn flush_tool_images<'a>(images: &mut Vec<ChatPart<'a>>, messages: &mut Vec<ChatMessage<'a>>) {
    if images.is_empty() {
        return;
    }
    let mut parts = vec![ChatPart::Text { text: "Images returned by the tools:" }];
    parts.append(images);
    messages.push(ChatMessage::User { content: UserContent::Parts(parts) });
}

fn image_part(block: &ContentBlock) -> Option<ChatPart<'_>> {
    match block {
        ContentBlock::Image { data, mime_type } => {
            Some(ChatPart::ImageUrl { image_url: ImageUrl { url: data_url(mime_type, data) } })
        }
        _ => None,
    }
}

#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(default, borrow)]
    choices: Option<Vec<Choice<'a>>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    /// Groq reports usage here (as well as, on newer versions, in `usage`).
    #[serde(default)]
    x_groq: Option<GroqExtra>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct GroqExtra {
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct Choice<'a> {
    #[serde(default, borrow)]
    delta: Option<Delta<'a>>,
    #[serde(default)]
    finish_reason: Option<&'a str>,
}

/// Every field may be absent or an explicit `null` (SGLang, vLLM); fields rein does not use
/// (`role`, `function_call`, `refusal`, `reasoning_details`, …) are ignored whatever they hold.
#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(default, borrow)]
    content: Option<Content<'a>>,
    #[serde(default, borrow)]
    reasoning_content: Option<std::borrow::Cow<'a, str>>,
    #[serde(default, borrow)]
    reasoning: Option<std::borrow::Cow<'a, str>>,
    #[serde(default, borrow)]
    tool_calls: Option<Vec<ToolCallDelta<'a>>>,
}

/// `delta.content`: text, or (Mistral's reasoning models) an array of typed parts.
#[derive(Deserialize)]
#[serde(untagged)]
enum Content<'a> {
    Text(#[serde(borrow)] std::borrow::Cow<'a, str>),
    Parts(Vec<Value>),
}

/// Text and thinking from an array of content parts, in order: `{"type": "text", "text"}` and
/// `{"type": "thinking", "thinking": [parts…] | "…"}`; other part types are skipped.
fn push_parts(parts: &[Value], out: &mut MessageBuilder) {
    for part in parts {
        match part.get("type").and_then(Value::as_str) {
            Some("text") => out.push_text(part.get("text").and_then(Value::as_str).unwrap_or("")),
            Some("thinking") => match part.get("thinking") {
                Some(Value::String(text)) => out.push_thinking(text),
                Some(Value::Array(inner)) => {
                    for piece in inner {
                        out.push_thinking(piece.get("text").and_then(Value::as_str).unwrap_or(""));
                    }
                }
                _ => {}
            },
            _ => {}
        }
    }
}

#[derive(Deserialize)]
struct ToolCallDelta<'a> {
    #[serde(default)]
    index: Option<usize>,
    #[serde(default, borrow)]
    id: Option<std::borrow::Cow<'a, str>>,
    #[serde(default, borrow)]
    function: Option<FunctionDelta<'a>>,
}

#[derive(Deserialize)]
struct FunctionDelta<'a> {
    #[serde(default, borrow)]
    name: Option<std::borrow::Cow<'a, str>>,
    #[serde(default, borrow)]
    arguments: Option<Arguments<'a>>,
}

/// Tool-call arguments: JSON text as the API documents, or (some local servers) the JSON
/// object itself.
#[derive(Deserialize)]
#[serde(untagged)]
enum Arguments<'a> {
    Text(#[serde(borrow)] std::borrow::Cow<'a, str>),
    Object(Value),
}

impl Arguments<'_> {
    fn text(&self) -> std::borrow::Cow<'_, str> {
        match self {
            Self::Text(text) => std::borrow::Cow::Borrowed(text.as_ref()),
            Self::Object(Value::Null) => std::borrow::Cow::Borrowed(""),
            Self::Object(value) => std::borrow::Cow::Owned(value.to_string()),
        }
    }
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    #[serde(default)]
    total_tokens: u64,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
    /// DeepSeek reports cache hits here.
    #[serde(default)]
    prompt_cache_hit_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

/// Decodes a Chat Completions SSE stream into a [`MessageBuilder`].
#[derive(Debug, Default)]
pub struct ChatDecoder {
    /// Open tool calls: (wire index, id, block index).
    calls: Vec<(usize, String, usize)>,
}

impl ChatDecoder {
    /// Handles one SSE event's data.
    pub fn on_data(&mut self, data: &str, out: &mut MessageBuilder) -> Result<Step, Failure> {
        let data = data.trim();
        if data == "[DONE]" {
            return Ok(Step::Done);
        }
        if data.is_empty() {
            return Ok(Step::Continue);
        }
        let chunk: Chunk<'_> = serde_json::from_str(data).map_err(|e| {
            Failure::fatal(crate::ProviderErrorKind::Protocol, format!("malformed chunk: {e}"))
        })?;
        if let Some(error) = chunk.error.filter(|e| !e.is_null()) {
            return Err(Failure::from_stream_error_value(&error));
        }
        for choice in chunk.choices.into_iter().flatten() {
            if let Some(delta) = choice.delta {
                // vLLM sends both names; some servers send an empty one next to the real one.
                let reasoning = [delta.reasoning_content, delta.reasoning]
                    .into_iter()
                    .flatten()
                    .find(|text| !text.is_empty());
                if let Some(reasoning) = reasoning {
                    out.push_thinking(&reasoning);
                }
                match delta.content {
                    Some(Content::Text(text)) => out.push_text(&text),
                    Some(Content::Parts(parts)) => push_parts(&parts, out),
                    None => {}
                }
                for (position, call) in delta.tool_calls.into_iter().flatten().enumerate() {
                    self.on_tool_call(call, position, out);
                }
            }
            if let Some(reason) = choice.finish_reason {
                out.set_stop_reason(stop_reason(reason));
            }
        }
        if let Some(usage) = chunk.usage.or(chunk.x_groq.and_then(|extra| extra.usage)) {
            let cached = usage
                .prompt_tokens_details
                .and_then(|d| d.cached_tokens)
                .or(usage.prompt_cache_hit_tokens)
                .unwrap_or(0);
            out.set_usage(Usage {
                input: usage.prompt_tokens.saturating_sub(cached),
                output: usage.completion_tokens,
                cache_read: cached,
                cache_write: 0,
                total_tokens: usage.total_tokens,
                cost: Default::default(),
            });
        }
        Ok(Step::Continue)
    }

    /// One tool-call fragment, `position` being its place in the delta's array (the index of
    /// servers that send whole calls without `index`, like Ollama).
    fn on_tool_call(&mut self, call: ToolCallDelta<'_>, position: usize, out: &mut MessageBuilder) {
        let wire_index = call.index.unwrap_or(position);
        let id = call.id.as_deref().filter(|id| !id.is_empty());
        let (name, arguments) = match &call.function {
            Some(f) => (f.name.as_deref(), f.arguments.as_ref().map(Arguments::text)),
            None => (None, None),
        };
        let existing = self.calls.iter().rposition(|(i, _, _)| *i == wire_index);
        // A new id at a known index means a new call (some servers reuse index 0).
        let starts_new = match (existing, id) {
            (None, _) => true,
            (Some(pos), Some(id)) => self.calls[pos].1 != id,
            (Some(_), None) => false,
        };
        let block = if starts_new {
            if let Some(pos) = existing {
                out.finish_tool_call(self.calls[pos].2, None);
            }
            let id = id.unwrap_or_default().to_string();
            let block = out.open_tool_call(&id, name.unwrap_or_default());
            self.calls.push((wire_index, id, block));
            block
        } else {
            let Some(pos) = existing else { return };
            let block = self.calls[pos].2;
            out.amend_tool_call(block, None, name);
            block
        };
        if let Some(arguments) = arguments {
            out.append_tool_arguments(block, &arguments);
        }
    }
}

fn stop_reason(reason: &str) -> StopReason {
    match reason {
        "length" | "max_tokens" => StopReason::Length,
        "tool_calls" | "function_call" => StopReason::ToolUse,
        "content_filter" => StopReason::ContentFilter,
        _ => StopReason::Stop,
    }
}
