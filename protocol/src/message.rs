//! Structured conversation messages: content blocks, the three message roles, usage and cost.
//!
//! Messages are never flattened to text: an assistant message keeps its blocks (text, thinking,
//! tool calls) in the order they streamed, and a tool result points back at its call by id.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::Arc;

/// A piece of message content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// An image, base64-encoded.
    Image {
        /// Base64 of the image bytes.
        data: String,
        /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
        mime_type: String,
    },
    /// Model reasoning. `signature` is the provider's opaque proof (Anthropic's thinking
    /// signature, or an OpenAI Responses reasoning item kept verbatim for replay); it is only sent
    /// back to the provider that produced it.
    Thinking {
        /// The reasoning text (empty when the provider redacted it).
        thinking: String,
        /// Opaque provider data needed to replay the block.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
        /// True when the provider returned the reasoning encrypted (`signature` holds it).
        #[serde(default, skip_serializing_if = "is_false")]
        redacted: bool,
    },
    /// A request from the model to run a tool.
    ToolCall(ToolCall),
}

fn is_false(value: &bool) -> bool {
    !*value
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text { text: text.into() }
    }

    /// The text of a text block, if this is one.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Self::Text { text } => Some(text),
            _ => None,
        }
    }
}

/// A tool call made by the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolCall {
    /// The call id the result must point back to.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments as the model gave them (normally a JSON object). When the model sent text
    /// that is not JSON, it is kept here as a JSON string so nothing is lost.
    pub arguments: Value,
}

/// Why the model stopped producing a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model finished its answer.
    Stop,
    /// The output token limit was reached.
    Length,
    /// The model wants tool results.
    ToolUse,
    /// The provider's content filter (or the model's refusal classifier) stopped the answer.
    ContentFilter,
    /// The request failed; `error_message` says why.
    Error,
    /// The request was cancelled.
    Aborted,
}

/// Token counts of one request, with what they cost.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Usage {
    /// Input tokens not read from the provider's cache.
    #[serde(default)]
    pub input: u64,
    /// Output tokens, reasoning included.
    #[serde(default)]
    pub output: u64,
    /// Input tokens read from the cache.
    #[serde(default)]
    pub cache_read: u64,
    /// Input tokens written to the cache.
    #[serde(default)]
    pub cache_write: u64,
    /// All of the above.
    #[serde(default)]
    pub total_tokens: u64,
    /// What the tokens cost, in US dollars.
    #[serde(default)]
    pub cost: Cost,
}

impl Usage {
    /// Adds another request's usage to this one.
    pub fn add(&mut self, other: &Usage) {
        self.input += other.input;
        self.output += other.output;
        self.cache_read += other.cache_read;
        self.cache_write += other.cache_write;
        self.total_tokens += other.total_tokens;
        self.cost.add(&other.cost);
    }

    /// Tokens the request occupied in the context window (input side plus output).
    pub fn context_tokens(&self) -> u64 {
        if self.total_tokens > 0 {
            self.total_tokens
        } else {
            self.input + self.output + self.cache_read + self.cache_write
        }
    }
}

/// A cost in US dollars, split like [`Usage`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Cost {
    /// Cost of uncached input.
    #[serde(default)]
    pub input: f64,
    /// Cost of output.
    #[serde(default)]
    pub output: f64,
    /// Cost of cache reads.
    #[serde(default)]
    pub cache_read: f64,
    /// Cost of cache writes.
    #[serde(default)]
    pub cache_write: f64,
    /// The sum.
    #[serde(default)]
    pub total: f64,
}

impl Cost {
    /// Adds another cost to this one.
    pub fn add(&mut self, other: &Cost) {
        self.input += other.input;
        self.output += other.output;
        self.cache_read += other.cache_read;
        self.cache_write += other.cache_write;
        self.total += other.total;
    }
}

/// A message in a conversation, tagged by `role`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// Something the user said.
    User(UserMessage),
    /// A reply from the model.
    Assistant(AssistantMessage),
    /// The result of one tool call.
    ToolResult(ToolResultMessage),
}

impl Message {
    /// The message's timestamp in milliseconds since the Unix epoch.
    pub fn timestamp(&self) -> i64 {
        match self {
            Self::User(m) => m.timestamp,
            Self::Assistant(m) => m.timestamp,
            Self::ToolResult(m) => m.timestamp,
        }
    }
}

/// Whether `history` starts with the very messages of `prefix`: the same allocations, not
/// equal copies. How state kept for a history that grows at its end (its wire encoding, its
/// tool-history check) knows it still holds; whoever keeps `prefix` holds its messages, so
/// none of them can be freed and another message be made at its address meanwhile.
pub fn starts_with_same(history: &[Arc<Message>], prefix: &[Arc<Message>]) -> bool {
    prefix.len() <= history.len()
        && prefix.iter().zip(history).all(|(kept, now)| Arc::ptr_eq(kept, now))
}

/// A user message: text and images.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct UserMessage {
    /// Text and image blocks.
    pub content: Vec<ContentBlock>,
    /// Milliseconds since the Unix epoch.
    #[serde(default)]
    pub timestamp: i64,
}

impl UserMessage {
    /// A text-only user message.
    pub fn text(text: impl Into<String>, timestamp: i64) -> Self {
        Self { content: vec![ContentBlock::text(text)], timestamp }
    }
}

/// A reply from the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AssistantMessage {
    /// Blocks in the order they streamed.
    pub content: Vec<ContentBlock>,
    /// The wire API that produced it (`openai-chat`, `openai-responses`, `anthropic`).
    pub api: String,
    /// The provider name from the configuration (`openai`, `local`, ...).
    pub provider: String,
    /// The model id.
    pub model: String,
    /// Tokens and cost of the request.
    #[serde(default)]
    pub usage: Usage,
    /// Why the model stopped.
    pub stop_reason: StopReason,
    /// What went wrong, when `stop_reason` is `error` (or `aborted`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    /// Milliseconds since the Unix epoch.
    #[serde(default)]
    pub timestamp: i64,
}

impl AssistantMessage {
    /// The tool calls in block order.
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.content.iter().filter_map(|block| match block {
            ContentBlock::ToolCall(call) => Some(call),
            _ => None,
        })
    }

    /// All text blocks joined.
    pub fn text(&self) -> String {
        self.content.iter().filter_map(ContentBlock::as_text).collect()
    }
}

/// The result of one tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolResultMessage {
    /// The id of the call this answers.
    pub tool_call_id: String,
    /// The tool's name.
    pub tool_name: String,
    /// What the model sees: text and images.
    pub content: Vec<ContentBlock>,
    /// True when the call failed (the model sees the failure as the content).
    #[serde(default)]
    pub is_error: bool,
    /// Structured data for front ends (a diff, an exit code, ...); never sent to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    /// Milliseconds since the Unix epoch.
    #[serde(default)]
    pub timestamp: i64,
}

impl ToolResultMessage {
    /// All text blocks joined.
    pub fn text(&self) -> String {
        self.content.iter().filter_map(ContentBlock::as_text).collect()
    }
}

/// A tool the model may call, as sent to the provider.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolDefinition {
    /// The tool's name.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// JSON Schema of its arguments object.
    pub parameters: Value,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn round_trip<T: Serialize + for<'de> Deserialize<'de> + PartialEq + std::fmt::Debug>(v: &T) {
        let text = serde_json::to_string(v).unwrap();
        let back: T = serde_json::from_str(&text).unwrap();
        assert_eq!(&back, v, "{text}");
    }

    fn assistant() -> AssistantMessage {
        AssistantMessage {
            content: vec![
                ContentBlock::Thinking {
                    thinking: "hmm".into(),
                    signature: Some("sig".into()),
                    redacted: false,
                },
                ContentBlock::text("Let me look."),
                ContentBlock::ToolCall(ToolCall {
                    id: "call_1".into(),
                    name: "read".into(),
                    arguments: json!({"path": "a.rs"}),
                }),
            ],
            api: "anthropic".into(),
            provider: "anthropic".into(),
            model: "claude".into(),
            usage: Usage {
                input: 10,
                output: 5,
                cache_read: 1,
                cache_write: 2,
                total_tokens: 18,
                cost: Cost {
                    input: 0.1,
                    output: 0.2,
                    cache_read: 0.0,
                    cache_write: 0.0,
                    total: 0.3,
                },
            },
            stop_reason: StopReason::ToolUse,
            error_message: None,
            timestamp: 1,
        }
    }

    #[test]
    fn every_message_kind_round_trips() {
        round_trip(&Message::User(UserMessage {
            content: vec![
                ContentBlock::text("hi"),
                ContentBlock::Image { data: "AAAA".into(), mime_type: "image/png".into() },
            ],
            timestamp: 3,
        }));
        round_trip(&Message::Assistant(assistant()));
        round_trip(&Message::ToolResult(ToolResultMessage {
            tool_call_id: "call_1".into(),
            tool_name: "read".into(),
            content: vec![ContentBlock::text("fn main() {}")],
            is_error: false,
            details: Some(json!({"lines": 1})),
            timestamp: 4,
        }));
        round_trip(&ContentBlock::Thinking {
            thinking: String::new(),
            signature: Some("enc".into()),
            redacted: true,
        });
        round_trip(&ToolDefinition {
            name: "ls".into(),
            description: "list".into(),
            parameters: json!({"type": "object"}),
        });
    }

    #[test]
    fn wire_shape_is_tagged() {
        let value = serde_json::to_value(Message::Assistant(assistant())).unwrap();
        assert_eq!(value["role"], "assistant");
        assert_eq!(value["content"][2]["type"], "tool_call");
        assert_eq!(value["content"][2]["id"], "call_1");
        assert_eq!(value["stop_reason"], "tool_use");
    }

    #[test]
    fn unknown_fields_are_ignored() {
        let text = r#"{"role":"user","content":[{"type":"text","text":"x","future":1}],"timestamp":1,"new_field":true}"#;
        let message: Message = serde_json::from_str(text).unwrap();
        assert_eq!(message, Message::User(UserMessage::text("x", 1)));
    }

    #[test]
    fn usage_adds_up() {
        let mut total = Usage::default();
        total.add(&assistant().usage);
        total.add(&assistant().usage);
        assert_eq!(total.input, 20);
        assert!((total.cost.total - 0.6).abs() < 1e-9);
        assert_eq!(total.context_tokens(), 36);
    }
}
