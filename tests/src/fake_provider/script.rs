//! The script format: what each reply says and how it is delivered.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One scripted answer to one HTTP request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Reply {
    /// Reasoning streamed first.
    pub thinking: Option<String>,
    /// The reasoning's signature (Anthropic) or encrypted content (Responses).
    pub thinking_signature: Option<String>,
    /// Text streamed after the reasoning.
    pub text: Option<String>,
    /// Tool calls streamed after the text.
    pub tool_calls: Vec<ScriptToolCall>,
    /// More blocks, in this order, after the ones above (for any other order).
    pub blocks: Vec<ScriptBlock>,
    /// Token counts reported for the reply (default: 10 input, 5 output).
    pub usage: Option<ScriptUsage>,
    /// Why the model stopped (default `tool_use` when there are tool calls, else `stop`).
    pub stop: Option<ScriptStop>,
    /// Misbehave instead of (or while) answering.
    pub fault: Option<Fault>,
    /// With `rate_limit`: the `retry-after` header, in seconds.
    pub retry_after: Option<u64>,
    /// With `rate_limit`: the `retry-after-ms` header.
    pub retry_after_ms: Option<u64>,
    /// With `drop` or `truncate`: how many SSE events to send before cutting the stream
    /// (default: none for `drop`, all but the terminal event for `truncate`).
    pub after_events: Option<usize>,
    /// Bytes per network write (overrides the server option).
    pub chunk_size: Option<usize>,
    /// Pause before each write, in milliseconds (overrides the server option).
    pub delay_ms: Option<u64>,
    /// Characters per streamed text, thinking or argument fragment (default 8).
    pub delta_size: Option<usize>,
    /// End SSE lines with CRLF instead of LF.
    pub crlf: bool,
    /// Exact bytes to answer with instead of a scripted stream (for replaying recordings);
    /// set from code, not from JSON scripts.
    #[serde(skip)]
    pub raw: Option<RawReply>,
}

/// A reply sent byte for byte: HTTP 200 with `content_type`, each chunk one network write.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RawReply {
    /// The `content-type` header, e.g. `text/event-stream`.
    pub content_type: String,
    /// The body, in the pieces it is written in.
    pub chunks: Vec<Vec<u8>>,
}

impl RawReply {
    /// An event stream written in the given pieces.
    pub fn event_stream(chunks: Vec<Vec<u8>>) -> Reply {
        Reply {
            raw: Some(Self { content_type: "text/event-stream".into(), chunks }),
            ..Reply::default()
        }
    }

    /// A JSON body (a server that ignored `stream: true`).
    pub fn json(body: &serde_json::Value) -> Reply {
        Reply {
            raw: Some(Self {
                content_type: "application/json".into(),
                chunks: vec![body.to_string().into_bytes()],
            }),
            ..Reply::default()
        }
    }
}

/// A content block of a reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum ScriptBlock {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// Reasoning.
    Thinking {
        /// The reasoning text.
        thinking: String,
        /// Signature or encrypted content.
        #[serde(default)]
        signature: Option<String>,
        /// Anthropic `redacted_thinking` (the signature is its data).
        #[serde(default)]
        redacted: bool,
    },
    /// A tool call.
    ToolCall(ScriptToolCall),
}

/// A scripted tool call.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ScriptToolCall {
    /// The call id; by default `call_N` (`toolu_N` for Anthropic), N counting every call the
    /// server has sent.
    pub id: Option<String>,
    /// The tool's name.
    pub name: String,
    /// The arguments object.
    pub arguments: Value,
    /// Argument text sent verbatim instead of `arguments` (e.g. malformed JSON).
    pub raw_arguments: Option<String>,
}

impl ScriptToolCall {
    /// The argument text streamed for this call.
    pub fn argument_text(&self) -> String {
        match (&self.raw_arguments, &self.arguments) {
            (Some(raw), _) => raw.clone(),
            (None, Value::Null) => "{}".to_string(),
            (None, value) => value.to_string(),
        }
    }
}

/// Token counts of a reply.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ScriptUsage {
    /// Uncached input tokens.
    pub input: u64,
    /// Output tokens.
    pub output: u64,
    /// Input tokens read from the cache.
    pub cache_read: u64,
    /// Input tokens written to the cache (Anthropic only).
    pub cache_write: u64,
}

/// Why the scripted model stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScriptStop {
    /// Finished.
    Stop,
    /// Hit the output limit.
    Length,
    /// Wants tool results.
    ToolUse,
}

/// A scripted misbehaviour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fault {
    /// HTTP 429 in the API's error shape, with `retry_after` / `retry_after_ms` headers.
    RateLimit,
    /// HTTP 500 in the API's error shape.
    ServerError,
    /// HTTP 502 with an HTML body (not JSON), as proxies send.
    BadGateway,
    /// HTTP 400 saying the prompt does not fit the context window, in the API's own words.
    ContextOverflow,
    /// Start the stream, send `after_events` events, then drop the connection mid-body.
    Drop,
    /// Close the connection without answering at all.
    Disconnect,
    /// Send the stream but end it cleanly without its terminal event.
    Truncate,
}

impl Reply {
    /// A reply that says `text`.
    pub fn text(text: impl Into<String>) -> Self {
        Self { text: Some(text.into()), ..Self::default() }
    }

    /// A reply that calls one tool.
    pub fn tool_call(name: impl Into<String>, arguments: Value) -> Self {
        let call = ScriptToolCall { name: name.into(), arguments, ..ScriptToolCall::default() };
        Self { tool_calls: vec![call], ..Self::default() }
    }

    /// A reply that fails with `fault`.
    pub fn fault(fault: Fault) -> Self {
        Self { fault: Some(fault), ..Self::default() }
    }

    /// The blocks in streaming order: thinking, text, tool calls, then `blocks`.
    pub fn all_blocks(&self) -> Vec<ScriptBlock> {
        let mut blocks = Vec::new();
        if let Some(thinking) = &self.thinking {
            blocks.push(ScriptBlock::Thinking {
                thinking: thinking.clone(),
                signature: self.thinking_signature.clone(),
                redacted: false,
            });
        }
        if let Some(text) = &self.text {
            blocks.push(ScriptBlock::Text { text: text.clone() });
        }
        blocks.extend(self.tool_calls.iter().cloned().map(ScriptBlock::ToolCall));
        blocks.extend(self.blocks.iter().cloned());
        blocks
    }

    /// The stop reason to report.
    pub fn stop_reason(&self) -> ScriptStop {
        self.stop.unwrap_or_else(|| {
            let tools = self.all_blocks().iter().any(|b| matches!(b, ScriptBlock::ToolCall(_)));
            if tools { ScriptStop::ToolUse } else { ScriptStop::Stop }
        })
    }

    /// The usage to report.
    pub fn usage(&self) -> ScriptUsage {
        self.usage.unwrap_or(ScriptUsage { input: 10, output: 5, ..ScriptUsage::default() })
    }
}

/// Splits `text` into pieces of at most `size` characters (never splitting a character).
pub fn pieces(text: &str, size: usize) -> Vec<&str> {
    let size = size.max(1);
    let mut out = Vec::new();
    let mut start = 0;
    let mut count = 0;
    for (offset, _) in text.char_indices() {
        if count == size {
            out.push(&text[start..offset]);
            start = offset;
            count = 0;
        }
        count += 1;
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_documented_script_parses() {
        let script: Vec<Reply> = serde_json::from_value(json!([
            {"text": "hello"},
            {"tool_calls": [{"name": "bash", "arguments": {"command": "ls"}}]},
            {"fault": "rate_limit", "retry_after": 0}
        ]))
        .unwrap();
        assert_eq!(script[0], Reply::text("hello"));
        assert_eq!(script[1].stop_reason(), ScriptStop::ToolUse);
        assert_eq!(script[2].fault, Some(Fault::RateLimit));
        assert!(serde_json::from_value::<Reply>(json!({"txt": "typo"})).is_err());
    }

    #[test]
    fn pieces_respect_characters() {
        assert_eq!(pieces("héllo", 2), vec!["hé", "ll", "o"]);
        assert_eq!(pieces("", 3), Vec::<&str>::new());
        assert_eq!(pieces("abc", 0), vec!["a", "b", "c"]);
    }
}
