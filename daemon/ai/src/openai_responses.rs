//! The OpenAI Responses wire API (`openai-responses`).
//!
//! Requests are stateless (`store: false`) and ask for encrypted reasoning, so a reasoning
//! item can be replayed on the next turn: the whole item is kept as JSON in the thinking
//! block's `signature` and sent back verbatim to the same provider. A function call is stored
//! with the id `call_id|fc_id` so that its output item id can be replayed with it too.

use crate::assemble::MessageBuilder;
use crate::compat::Compat;
use crate::encoded_history::{Encoded, WireItems, encode_items};
use crate::failure::Failure;
use crate::history::{IMAGE_OMITTED, data_url, is_native, should_replay, thinking_as_text};
use crate::ids::wire_tool_call_id;
use crate::openai_chat::{arguments_text, clamp_output, effort};
use crate::provider::{ProviderErrorKind, ProviderRequest};
use crate::wire::Step;
use rein_protocol::message::{ContentBlock, Message, StopReason, Usage};
use rein_protocol::model::{Api, ModelInfo, ThinkingLevel};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::sync::Arc;

/// The request body for `POST {base_url}/responses`, as a JSON value (for tests and tools
/// that inspect it; requests are sent from [`body`]).
pub fn request_body(request: &ProviderRequest, compat: &Compat) -> Value {
    serde_json::to_value(body(request, compat)).unwrap_or_default()
}

/// The request body for `POST {base_url}/responses`, borrowing the request: it is serialized
/// straight from the history, with no JSON tree built in between.
pub fn body<'a>(request: &'a ProviderRequest, compat: &Compat) -> ResponsesBody<'a> {
    body_after(request, compat, Encoded::NONE)
}

/// Every message starts a segment: each one's input items depend on nothing around it.
pub(crate) fn starts_segment(history: &[Arc<Message>], index: usize, _model: &ModelInfo) -> bool {
    index < history.len()
}

/// The input items of `history`, each as its own JSON text.
pub(crate) fn encoded_items(
    history: &[Arc<Message>],
    model: &ModelInfo,
    _compat: &Compat,
) -> serde_json::Result<Vec<Box<RawValue>>> {
    encode_items(&input(history, model))
}

/// The input items of `history`.
fn input<'a>(history: &'a [Arc<Message>], model: &ModelInfo) -> Vec<InputItem<'a>> {
    let mut input = Vec::with_capacity(history.len());
    for message in history.iter().map(|message| message.as_ref()) {
        match message {
            Message::User(user) => {
                let content = user
                    .content
                    .iter()
                    .filter_map(|block| input_part(block, model.images))
                    .collect();
                input.push(InputItem::User(UserItem { role: "user", content }));
            }
            Message::Assistant(assistant) => {
                if !should_replay(assistant) {
                    continue;
                }
                let native = is_native(assistant, model);
                // With `store: false` the server keeps nothing: a reasoning item can only be
                // replayed with its `encrypted_content`, and a function call may name its
                // `fc_…` item only next to the reasoning items that produced it (without
                // reasoning the id serves nothing, so it is left out).
                let reasoning: Vec<Option<&RawValue>> = assistant
                    .content
                    .iter()
                    .filter_map(|block| match block {
                        ContentBlock::Thinking { signature, .. } => Some(
                            signature.as_deref().filter(|_| native).and_then(replayable_reasoning),
                        ),
                        _ => None,
                    })
                    .collect();
                let all_reasoning_replayed =
                    !reasoning.is_empty() && reasoning.iter().all(Option::is_some);
                let mut reasoning = reasoning.into_iter();
                for block in &assistant.content {
                    match block {
                        ContentBlock::Text { text } if !text.is_empty() => {
                            input.push(InputItem::assistant_text(Cow::Borrowed(text)));
                        }
                        ContentBlock::Thinking { thinking, redacted, .. } => {
                            if let Some(item) = reasoning.next().flatten() {
                                input.push(InputItem::Reasoning(item));
                            } else if let Some(text) = thinking_as_text(thinking, *redacted) {
                                input.push(InputItem::assistant_text(Cow::Owned(text)));
                            }
                        }
                        ContentBlock::ToolCall(call) => {
                            let (call_id, item_id) = split_call_id(&call.id);
                            input.push(InputItem::FunctionCall(FunctionCallItem {
                                kind: "function_call",
                                call_id: wire_tool_call_id(Api::OpenAiResponses, call_id),
                                name: &call.name,
                                arguments: arguments_text(&call.arguments),
                                id: item_id.filter(|_| native && all_reasoning_replayed),
                            }));
                        }
                        _ => {}
                    }
                }
            }
            Message::ToolResult(result) => {
                let text = result.text();
                input.push(InputItem::FunctionCallOutput(FunctionCallOutputItem {
                    kind: "function_call_output",
                    call_id: wire_tool_call_id(
                        Api::OpenAiResponses,
                        split_call_id(&result.tool_call_id).0,
                    ),
                    output: if text.is_empty() {
                        Cow::Borrowed("(no output)")
                    } else {
                        Cow::Owned(text)
                    },
                }));
                let images: Vec<InputPart<'a>> = result
                    .content
                    .iter()
                    .filter(|b| matches!(b, ContentBlock::Image { .. }))
                    .filter_map(|b| input_part(b, model.images))
                    .collect();
                if !images.is_empty() && model.images {
                    let mut content =
                        vec![InputPart::InputText { text: "Images returned by the tool:" }];
                    content.extend(images);
                    input.push(InputItem::User(UserItem { role: "user", content }));
                }
            }
        }
    }
    input
}

/// The request body, with the input items of the history's first `encoded.messages`
/// messages already encoded (see [`crate::encoded_history`]).
pub(crate) fn body_after<'a>(
    request: &'a ProviderRequest,
    compat: &Compat,
    encoded: Encoded<'a>,
) -> ResponsesBody<'a> {
    let model = &request.model;
    let fresh = input(request.context.messages.get(encoded.messages..).unwrap_or(&[]), model);
    let system_prompt = &request.context.system_prompt;
    let reasoning = (model.reasoning
        && request.options.thinking != ThinkingLevel::Off
        && compat.reasoning_effort)
        .then(|| ReasoningOptions { effort: effort(request.options.thinking), summary: "auto" });
    ResponsesBody {
        model: &model.id,
        input: WireItems::new(None, encoded, fresh),
        stream: true,
        store: false,
        instructions: (!system_prompt.is_empty()).then_some(system_prompt.as_str()),
        tools: request
            .context
            .tools
            .iter()
            .map(|tool| ResponsesTool {
                kind: "function",
                name: &tool.name,
                description: &tool.description,
                parameters: &tool.parameters,
            })
            .collect(),
        max_output_tokens: request.options.max_tokens.map(|max| clamp_output(max, model)),
        temperature: request.options.temperature.map(f64::from),
        // Always asked for, whatever the thinking level: a model that reasons by default (and
        // models the catalog does not know) still returns reasoning items, and with
        // `store: false` only their encrypted content lets them be replayed.
        include: ["reasoning.encrypted_content"],
        reasoning,
    }
}

/// A Responses request body (see [`body`]).
#[derive(Debug, Serialize)]
pub struct ResponsesBody<'a> {
    model: &'a str,
    input: WireItems<'a, InputItem<'a>>,
    stream: bool,
    store: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    instructions: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<ResponsesTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_output_tokens: Option<u64>,
    /// Widened the way a JSON value holds it, so the number sent is the same either way.
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    include: [&'static str; 1],
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning: Option<ReasoningOptions>,
}

#[derive(Debug, Serialize)]
struct ReasoningOptions {
    effort: &'static str,
    summary: &'static str,
}

#[derive(Debug, Serialize)]
#[serde(untagged)]
enum InputItem<'a> {
    User(UserItem<'a>),
    AssistantText(AssistantTextItem<'a>),
    /// A stored reasoning item, sent back exactly as it was received.
    Reasoning(&'a RawValue),
    FunctionCall(FunctionCallItem<'a>),
    FunctionCallOutput(FunctionCallOutputItem<'a>),
}

impl<'a> InputItem<'a> {
    fn assistant_text(text: Cow<'a, str>) -> Self {
        Self::AssistantText(AssistantTextItem {
            kind: "message",
            role: "assistant",
            content: [OutputText { kind: "output_text", text }],
        })
    }
}

#[derive(Debug, Serialize)]
struct UserItem<'a> {
    role: &'static str,
    content: Vec<InputPart<'a>>,
}

#[derive(Debug, Serialize)]
struct AssistantTextItem<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    role: &'static str,
    content: [OutputText<'a>; 1],
}

#[derive(Debug, Serialize)]
struct OutputText<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: Cow<'a, str>,
}

#[derive(Debug, Serialize)]
struct FunctionCallItem<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    call_id: Cow<'a, str>,
    name: &'a str,
    arguments: Cow<'a, str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a str>,
}

#[derive(Debug, Serialize)]
struct FunctionCallOutputItem<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    call_id: Cow<'a, str>,
    output: Cow<'a, str>,
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum InputPart<'a> {
    InputText { text: &'a str },
    InputImage { image_url: String },
}

#[derive(Debug, Serialize)]
struct ResponsesTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

/// The fields of a stored reasoning item that decide whether it can be replayed.
#[derive(Deserialize)]
struct StoredReasoning<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    encrypted_content: Option<Cow<'a, str>>,
}

/// The stored reasoning item to send back, when it carries the `encrypted_content` a
/// stateless (`store: false`) request needs; an item without it names an id the server has
/// not kept ("Item with id 'rs_…' not found"). The item is checked, not rebuilt: it goes back
/// as the text it was stored as.
fn replayable_reasoning(signature: &str) -> Option<&RawValue> {
    let item: StoredReasoning<'_> = serde_json::from_str(signature).ok()?;
    let replayable = item.kind.as_deref() == Some("reasoning")
        && item.encrypted_content.is_some_and(|encrypted| !encrypted.is_empty());
    replayable.then(|| serde_json::from_str::<&RawValue>(signature).ok()).flatten()
}

/// Splits a stored Responses tool-call id, `call_id|item_id`, into its call id and the
/// `fc_…` id of the output item that carried it (needed to replay the item next to its
/// reasoning). Ids from other APIs have no item part.
pub fn split_call_id(id: &str) -> (&str, Option<&str>) {
    match id.split_once('|') {
        Some((call_id, item_id))
            if !call_id.is_empty()
                && item_id.starts_with("fc_")
                && item_id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-') =>
        {
            (call_id, Some(item_id))
        }
        _ => (id, None),
    }
}

fn input_part(block: &ContentBlock, images: bool) -> Option<InputPart<'_>> {
    match block {
        ContentBlock::Text { text } => Some(InputPart::InputText { text }),
        ContentBlock::Image { .. } if !images => Some(InputPart::InputText { text: IMAGE_OMITTED }),
        ContentBlock::Image { data, mime_type } => {
            Some(InputPart::InputImage { image_url: data_url(mime_type, data) })
        }
        _ => None,
    }
}

/// Output indexes given to items that appear only in the final response.
const FINAL_ONLY: u64 = 1 << 48;

/// The fields of a streamed fragment event (`response.*.delta`).
#[derive(serde::Deserialize)]
struct Fragment<'a> {
    #[serde(rename = "type", borrow)]
    kind: std::borrow::Cow<'a, str>,
    #[serde(default)]
    output_index: Option<u64>,
    #[serde(default)]
    summary_index: Option<u64>,
    #[serde(default, borrow)]
    item_id: Option<std::borrow::Cow<'a, str>>,
    #[serde(default, borrow)]
    delta: Option<DeltaValue<'a>>,
}

/// A fragment's `delta`: text for the events rein reads; hosted-tool events put other JSON
/// there, which is skipped.
#[derive(serde::Deserialize)]
#[serde(untagged)]
enum DeltaValue<'a> {
    Text(#[serde(borrow)] std::borrow::Cow<'a, str>),
    Other(serde::de::IgnoredAny),
}

/// Decodes a Responses SSE stream into a [`MessageBuilder`].
#[derive(Debug, Default)]
pub struct ResponsesDecoder {
    /// Blocks by output index: (output index, block index).
    items: Vec<(u64, usize)>,
    /// Output index of the reasoning summary part last written, to separate parts.
    last_summary: Option<(u64, u64)>,
    /// Output items seen, by item id: (item id, output index).
    item_ids: Vec<(String, u64)>,
    /// Every output index the stream named.
    seen: Vec<u64>,
}

impl ResponsesDecoder {
    /// Handles one SSE event's data (the event type is repeated inside the JSON).
    pub fn on_data(&mut self, data: &str, out: &mut MessageBuilder) -> Result<Step, Failure> {
        if data.trim().is_empty() {
            return Ok(Step::Continue);
        }
        let malformed = |e: serde_json::Error| {
            Failure::fatal(ProviderErrorKind::Protocol, format!("malformed event: {e}"))
        };
        // Fragments are most of the stream: read them without building a JSON tree.
        let fragment: Fragment<'_> = serde_json::from_str(data).map_err(malformed)?;
        let output_index = fragment.output_index.unwrap_or(0);
        if let Some(index) = fragment.output_index
            && !self.seen.contains(&index)
        {
            self.seen.push(index);
        }
        if let Some(item_id) = fragment.item_id.as_deref() {
            self.remember(item_id, output_index);
        }
        if let Some(DeltaValue::Text(delta)) = &fragment.delta {
            match fragment.kind.as_ref() {
                "response.output_text.delta" | "response.refusal.delta" => {
                    let block = self.block_or(output_index, || out.open_text());
                    out.append_text(block, delta);
                    return Ok(Step::Continue);
                }
                "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                    let part = fragment.summary_index.unwrap_or(0);
                    let block = self.block_or(output_index, || out.open_thinking());
                    if let Some((last_item, last_part)) = self.last_summary
                        && last_item == output_index
                        && last_part != part
                    {
                        out.append_thinking(block, "\n\n");
                    }
                    self.last_summary = Some((output_index, part));
                    out.append_thinking(block, delta);
                    return Ok(Step::Continue);
                }
                "response.function_call_arguments.delta" => {
                    if let Some(block) = self.block(output_index) {
                        out.append_tool_arguments(block, delta);
                    }
                    return Ok(Step::Continue);
                }
                _ => {}
            }
        }
        let event: Value = serde_json::from_str(data).map_err(malformed)?;
        match fragment.kind.as_ref() {
            "response.output_item.added" => {
                let item = &event["item"];
                if let Some(id) = item.get("id").and_then(Value::as_str) {
                    self.remember(id, output_index);
                }
                match item.get("type").and_then(Value::as_str) {
                    Some("function_call") => {
                        let call_id =
                            item.get("call_id").and_then(Value::as_str).unwrap_or_default();
                        let id = match item.get("id").and_then(Value::as_str) {
                            Some(item_id) if !item_id.is_empty() => format!("{call_id}|{item_id}"),
                            _ => call_id.to_string(),
                        };
                        let name = item.get("name").and_then(Value::as_str).unwrap_or_default();
                        let block = out.open_tool_call(&id, name);
                        self.items.push((output_index, block));
                    }
                    Some("reasoning") => {
                        let block = out.open_thinking();
                        self.items.push((output_index, block));
                    }
                    _ => {}
                }
            }
            "response.output_item.done" => {
                if let Some(id) = event.pointer("/item/id").and_then(Value::as_str) {
                    self.remember(id, output_index);
                }
                self.settle_item(output_index, &event["item"], out);
            }
            "response.completed" | "response.incomplete" => {
                let response = &event["response"];
                // The final output is the server's last word on every item. Its positions need
                // not be the stream's output indexes: items are matched by id, or (servers that
                // change ids between events) by position when the counts agree.
                if let Some(items) = response.get("output").and_then(Value::as_array) {
                    let mut seen = self.seen.clone();
                    seen.sort_unstable();
                    let positional = seen.len() == items.len();
                    for (position, item) in items.iter().enumerate() {
                        let known =
                            item.get("id").and_then(Value::as_str).and_then(|id| self.index_of(id));
                        let index = match known {
                            Some(index) => index,
                            None if positional => seen[position],
                            None => FINAL_ONLY + position as u64,
                        };
                        self.settle_item(index, item, out);
                    }
                }
                if let Some(usage) = response.get("usage").filter(|u| u.is_object()) {
                    out.set_usage(usage_of(usage));
                }
                let incomplete = fragment.kind == "response.incomplete"
                    || response.get("status").and_then(Value::as_str) == Some("incomplete");
                let reason = response.pointer("/incomplete_details/reason").and_then(Value::as_str);
                out.set_stop_reason(match (incomplete, reason) {
                    (true, Some("content_filter")) => StopReason::ContentFilter,
                    (true, _) => StopReason::Length,
                    (false, _) => StopReason::Stop,
                });
                return Ok(Step::Done);
            }
            "response.failed" => {
                let error = &event["response"]["error"];
                if error.is_object() {
                    return Err(Failure::from_stream_error_value(error));
                }
                return Err(Failure::from_stream_error("response failed", None));
            }
            "error" => return Err(Failure::from_stream_error_value(&event)),
            _ => {}
        }
        Ok(Step::Continue)
    }

    /// Brings the block of output item `output_index` in line with the finished `item`: the
    /// item's text, reasoning and arguments are complete even when deltas were dropped or
    /// trimmed (the remainder is streamed as one more delta), and a reasoning item's JSON
    /// (with its encrypted content) becomes the thinking block's signature.
    fn settle_item(&mut self, output_index: u64, item: &Value, out: &mut MessageBuilder) {
        match item.get("type").and_then(Value::as_str) {
            Some("message") => {
                let full = message_text(item);
                if full.is_empty() && self.block(output_index).is_none() {
                    return;
                }
                let block = self.block_or(output_index, || out.open_text());
                out.complete_text(block, &full);
            }
            Some("reasoning") => {
                let block = self.block_or(output_index, || out.open_thinking());
                if let Some(text) = reasoning_text(item) {
                    out.complete_text(block, &text);
                }
                out.set_signature(block, item.to_string(), None);
            }
            Some("function_call") => {
                let block = match self.block(output_index) {
                    Some(block) => block,
                    None => {
                        let call_id = item.get("call_id").and_then(Value::as_str).unwrap_or("");
                        let id = match item.get("id").and_then(Value::as_str) {
                            Some(item_id) if !item_id.is_empty() => format!("{call_id}|{item_id}"),
                            _ => call_id.to_string(),
                        };
                        let name = item.get("name").and_then(Value::as_str).unwrap_or_default();
                        let block = out.open_tool_call(&id, name);
                        self.items.push((output_index, block));
                        block
                    }
                };
                out.finish_tool_call(block, item.get("arguments").and_then(Value::as_str));
            }
            _ => {}
        }
    }

    fn remember(&mut self, item_id: &str, output_index: u64) {
        if !item_id.is_empty() && self.index_of(item_id).is_none() {
            self.item_ids.push((item_id.to_string(), output_index));
        }
    }

    fn index_of(&self, item_id: &str) -> Option<u64> {
        self.item_ids.iter().find(|(id, _)| id == item_id).map(|(_, index)| *index)
    }

    /// The block of output item `output_index`, opened with `open` when there is none yet.
    fn block_or(&mut self, output_index: u64, open: impl FnOnce() -> usize) -> usize {
        if let Some(block) = self.block(output_index) {
            return block;
        }
        let block = open();
        self.items.push((output_index, block));
        block
    }

    fn block(&self, output_index: u64) -> Option<usize> {
        self.items.iter().rev().find(|(i, _)| *i == output_index).map(|(_, b)| *b)
    }
}

/// The texts of the parts listed under `key` of an item.
fn part_texts<'a>(item: &'a Value, key: &str, text_key: &str) -> Vec<&'a str> {
    item.get(key)
        .and_then(Value::as_array)
        .map(|parts| {
            parts.iter().filter_map(|part| part.get(text_key).and_then(Value::as_str)).collect()
        })
        .unwrap_or_default()
}

/// A reasoning item's readable text: its summary parts (as the summary deltas separate them),
/// else its full reasoning text (open-weight models served by LM Studio, vLLM…).
fn reasoning_text(item: &Value) -> Option<String> {
    let summary = part_texts(item, "summary", "text");
    if !summary.is_empty() {
        return Some(summary.join("\n\n"));
    }
    let content = part_texts(item, "content", "text");
    (!content.is_empty()).then(|| content.concat())
}

/// An output message's text: its `output_text` and `refusal` parts in order.
fn message_text(item: &Value) -> String {
    let mut text = String::new();
    for part in item.get("content").and_then(Value::as_array).into_iter().flatten() {
        let piece = match part.get("type").and_then(Value::as_str) {
            Some("output_text") => part.get("text"),
            Some("refusal") => part.get("refusal"),
            _ => None,
        };
        text.push_str(piece.and_then(Value::as_str).unwrap_or_default());
    }
    text
}

fn usage_of(usage: &Value) -> Usage {
    let number = |pointer: &str| usage.pointer(pointer).and_then(Value::as_u64).unwrap_or(0);
    let cached = number("/input_tokens_details/cached_tokens");
    Usage {
        input: number("/input_tokens").saturating_sub(cached),
        output: number("/output_tokens"),
        cache_read: cached,
        cache_write: 0,
        total_tokens: number("/total_tokens"),
        cost: Default::default(),
    }
}
