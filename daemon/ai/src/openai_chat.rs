//! The OpenAI Chat Completions wire API (`openai-chat`), also spoken by OpenRouter, Groq,
//! DeepSeek, Ollama, llama.cpp, vLLM and LM Studio.

use crate::assemble::MessageBuilder;
use crate::compat::Compat;
use crate::failure::Failure;
use crate::history::{IMAGE_OMITTED, data_url, is_native, should_replay, thinking_as_text};
use crate::ids::wire_tool_call_id;
use crate::provider::ProviderRequest;
use crate::wire::Step;
use rein_protocol::message::{ContentBlock, Message, StopReason, Usage};
use rein_protocol::model::{Api, ModelInfo, ThinkingLevel};
use serde::Deserialize;
use serde_json::{Value, json};

/// The request body for `POST {base_url}/chat/completions`.
pub fn request_body(request: &ProviderRequest, compat: &Compat) -> Value {
    let model = &request.model;
    let mut messages = Vec::new();
    if !request.context.system_prompt.is_empty() {
        messages.push(json!({"role": "system", "content": request.context.system_prompt}));
    }
    // Images from tool results travel in a user message after the run of tool messages (a
    // tool message cannot hold images, and nothing may come between the tool messages).
    let mut tool_images: Vec<Value> = Vec::new();
    for message in &request.context.messages {
        if !matches!(message, Message::ToolResult(_)) {
            flush_tool_images(&mut tool_images, &mut messages);
        }
        match message {
            Message::User(user) => {
                messages.push(
                    json!({"role": "user", "content": user_content(&user.content, model.images)}),
                );
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
                        ContentBlock::ToolCall(call) => tool_calls.push(json!({
                            "id": wire_tool_call_id(Api::OpenAiChat, &call.id),
                            "type": "function",
                            "function": {"name": call.name, "arguments": arguments_text(&call.arguments)},
                        })),
                        ContentBlock::Image { .. } => {}
                    }
                }
                let mut entry = json!({"role": "assistant"});
                entry["content"] = if text.is_empty() { Value::Null } else { Value::String(text) };
                if !tool_calls.is_empty() {
                    entry["tool_calls"] = Value::Array(tool_calls);
                    // The model's own reasoning goes back on its tool-calling turns (an empty
                    // string when there was none: the field itself is required).
                    if compat.reasoning_content {
                        entry["reasoning_content"] = Value::String(reasoning);
                    }
                } else if entry["content"].is_null() {
                    continue;
                }
                messages.push(entry);
            }
            Message::ToolResult(result) => {
                let text = result.text();
                messages.push(json!({
                    "role": "tool",
                    "tool_call_id": wire_tool_call_id(Api::OpenAiChat, &result.tool_call_id),
                    "content": if text.is_empty() { "(no output)".to_string() } else { text },
                }));
                if model.images {
                    tool_images.extend(result.content.iter().filter_map(image_part));
                }
            }
        }
    }
    flush_tool_images(&mut tool_images, &mut messages);
    let mut body = json!({
        "model": model.id,
        "messages": messages,
        "stream": true,
    });
    if compat.stream_usage {
        body["stream_options"] = json!({"include_usage": true});
    }
    if !request.context.tools.is_empty() {
        let tools: Vec<Value> = request
            .context
            .tools
            .iter()
            .map(|tool| {
                json!({"type": "function", "function": {
                    "name": tool.name, "description": tool.description, "parameters": tool.parameters,
                }})
            })
            .collect();
        body["tools"] = Value::Array(tools);
    }
    if let Some(max) = request.options.max_tokens {
        body[compat.max_tokens_field.as_str()] = json!(clamp_output(max, model));
    }
    if let Some(temperature) = request.options.temperature {
        body["temperature"] = json!(temperature);
    }
    if model.reasoning && request.options.thinking != ThinkingLevel::Off && compat.reasoning_effort
    {
        body["reasoning_effort"] = json!(effort(request.options.thinking));
    }
    body
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
pub fn arguments_text(arguments: &Value) -> String {
    match arguments {
        Value::String(raw) => raw.clone(),
        other => other.to_string(),
    }
}

fn user_content(blocks: &[ContentBlock], images: bool) -> Value {
    if let [ContentBlock::Text { text }] = blocks {
        return Value::String(text.clone());
    }
    let parts: Vec<Value> = blocks
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text { text } => Some(json!({"type": "text", "text": text})),
            ContentBlock::Image { .. } if !images => {
                Some(json!({"type": "text", "text": IMAGE_OMITTED}))
            }
            ContentBlock::Image { .. } => image_part(block),
            _ => None,
        })
        .collect();
    Value::Array(parts)
}

fn flush_tool_images(images: &mut Vec<Value>, messages: &mut Vec<Value>) {
    if images.is_empty() {
        return;
    }
    let mut parts = vec![json!({"type": "text", "text": "Images returned by the tools:"})];
    parts.append(images);
    messages.push(json!({"role": "user", "content": parts}));
}

fn image_part(block: &ContentBlock) -> Option<Value> {
    match block {
        ContentBlock::Image { data, mime_type } => {
            Some(json!({"type": "image_url", "image_url": {"url": data_url(mime_type, data)}}))
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
