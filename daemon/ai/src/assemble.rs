//! Assembling streamed fragments into one assistant message.
//!
//! Every wire decoder feeds a [`MessageBuilder`]: it opens blocks in the order they stream,
//! appends fragments to them, and queues the matching [`AssistantDelta`]s so the driver can
//! forward them. Block indexes in the deltas are indexes into the final message's `content`.

use crate::cost::cost_of;
use rein_protocol::event::AssistantDelta;
use rein_protocol::message::{AssistantMessage, ContentBlock, StopReason, ToolCall, Usage};
use rein_protocol::model::ModelInfo;
use serde_json::Value;

/// Builds one assistant message from streamed fragments and records the deltas to forward.
#[derive(Debug)]
pub struct MessageBuilder {
    message: AssistantMessage,
    /// Raw argument text of tool calls still streaming, by block index.
    open_arguments: Vec<(usize, String)>,
    pending: Vec<AssistantDelta>,
    /// Deltas recorded since the builder was made (forwarded or not).
    streamed: usize,
    stop_reason: Option<StopReason>,
    model: ModelInfo,
}

impl MessageBuilder {
    /// An empty message for `model`, stamped with `timestamp` (ms since the epoch).
    pub fn new(model: &ModelInfo, timestamp: i64) -> Self {
        Self {
            message: AssistantMessage {
                content: Vec::new(),
                api: model.api.as_str().to_string(),
                provider: model.provider.clone(),
                model: model.id.clone(),
                usage: Usage::default(),
                stop_reason: StopReason::Stop,
                error_message: None,
                timestamp,
            },
            open_arguments: Vec::new(),
            pending: Vec::new(),
            streamed: 0,
            stop_reason: None,
            model: model.clone(),
        }
    }

    /// The id of the model being built.
    pub fn model_id(&self) -> &str {
        &self.model.id
    }

    /// The wire API of the model being built.
    pub fn api(&self) -> rein_protocol::model::Api {
        self.model.api
    }

    /// True once any delta has been recorded: from then on the caller has seen content, and a
    /// failed request can no longer be retried silently.
    pub fn has_streamed(&self) -> bool {
        self.streamed > 0
    }

    fn record(&mut self, delta: AssistantDelta) {
        self.streamed += 1;
        self.pending.push(delta);
    }

    /// The deltas recorded since the last call, oldest first.
    pub fn take_deltas(&mut self) -> Vec<AssistantDelta> {
        std::mem::take(&mut self.pending)
    }

    /// Drops the recorded deltas without looking at them (for callers that only want the
    /// final message).
    pub fn discard_deltas(&mut self) {
        self.pending.clear();
    }

    /// Appends text to the last block when it is a text block, or opens a new one.
    pub fn push_text(&mut self, delta: &str) {
        if delta.is_empty() {
            return;
        }
        let index = match self.message.content.last() {
            Some(ContentBlock::Text { .. }) => self.message.content.len() - 1,
            _ => self.open_text(),
        };
        self.append_text(index, delta);
    }

    /// Appends reasoning to the last block when it is a thinking block, or opens a new one.
    pub fn push_thinking(&mut self, delta: &str) {
        if delta.is_empty() {
            return;
        }
        let index = match self.message.content.last() {
            Some(ContentBlock::Thinking { .. }) => self.message.content.len() - 1,
            _ => self.open_thinking(),
        };
        self.append_thinking(index, delta);
    }

    /// Opens an empty text block and returns its index.
    pub fn open_text(&mut self) -> usize {
        self.message.content.push(ContentBlock::Text { text: String::new() });
        self.message.content.len() - 1
    }

    /// Opens an empty thinking block and returns its index.
    pub fn open_thinking(&mut self) -> usize {
        self.message.content.push(ContentBlock::Thinking {
            thinking: String::new(),
            signature: None,
            redacted: false,
        });
        self.message.content.len() - 1
    }

    /// Adds a redacted (encrypted) thinking block whose opaque data is `data`.
    pub fn push_redacted_thinking(&mut self, data: String) -> usize {
        self.message.content.push(ContentBlock::Thinking {
            thinking: String::new(),
            signature: Some(data),
            redacted: true,
        });
        self.message.content.len() - 1
    }

    /// Appends text to the text block at `index`; ignored when that is not a text block.
    pub fn append_text(&mut self, index: usize, delta: &str) {
        if delta.is_empty() {
            return;
        }
        if let Some(ContentBlock::Text { text }) = self.message.content.get_mut(index) {
            text.push_str(delta);
            self.record(AssistantDelta::TextDelta { index, delta: delta.to_string() });
        }
    }

    /// Appends reasoning to the thinking block at `index`; ignored when that is not one.
    pub fn append_thinking(&mut self, index: usize, delta: &str) {
        if delta.is_empty() {
            return;
        }
        if let Some(ContentBlock::Thinking { thinking, .. }) = self.message.content.get_mut(index) {
            thinking.push_str(delta);
            self.record(AssistantDelta::ThinkingDelta { index, delta: delta.to_string() });
        }
    }

    /// Appends to the opaque signature of the thinking block at `index`.
    pub fn append_signature(&mut self, index: usize, delta: &str) {
        if let Some(ContentBlock::Thinking { signature, .. }) = self.message.content.get_mut(index)
        {
            signature.get_or_insert_with(String::new).push_str(delta);
        }
    }

    /// Replaces the signature of the thinking block at `index`, and its text when the block
    /// is still empty and `text` is given.
    pub fn set_signature(&mut self, index: usize, value: String, text: Option<&str>) {
        let needs_text = matches!(
            self.message.content.get(index),
            Some(ContentBlock::Thinking { thinking, .. }) if thinking.is_empty()
        );
        if needs_text && let Some(text) = text {
            self.append_thinking(index, text);
        }
        if let Some(ContentBlock::Thinking { signature, .. }) = self.message.content.get_mut(index)
        {
            *signature = Some(value);
        }
    }

    /// Makes the text or thinking block at `index` read `full`, the server's final word on
    /// it: when what streamed is the start of `full`, the rest is appended as one more delta;
    /// when it differs, the block's text is replaced (there is no delta for that).
    pub fn complete_text(&mut self, index: usize, full: &str) {
        let current = match self.message.content.get(index) {
            Some(ContentBlock::Text { text }) => text.as_str(),
            Some(ContentBlock::Thinking { thinking, .. }) => thinking.as_str(),
            _ => return,
        };
        if current == full {
            return;
        }
        if let Some(rest) = full.strip_prefix(current) {
            let rest = rest.to_string();
            match self.message.content.get(index) {
                Some(ContentBlock::Text { .. }) => self.append_text(index, &rest),
                _ => self.append_thinking(index, &rest),
            }
            return;
        }
        match self.message.content.get_mut(index) {
            Some(ContentBlock::Text { text }) => *text = full.to_string(),
            Some(ContentBlock::Thinking { thinking, .. }) => *thinking = full.to_string(),
            _ => {}
        }
    }

    /// Opens a tool call block and returns its index.
    pub fn open_tool_call(&mut self, id: &str, name: &str) -> usize {
        self.message.content.push(ContentBlock::ToolCall(ToolCall {
            id: id.to_string(),
            name: name.to_string(),
            arguments: Value::Object(Default::default()),
        }));
        let index = self.message.content.len() - 1;
        self.open_arguments.push((index, String::new()));
        self.record(AssistantDelta::ToolCallStart {
            index,
            id: id.to_string(),
            name: name.to_string(),
        });
        index
    }

    /// Fills in the id or name of a streaming tool call that arrived after it opened.
    pub fn amend_tool_call(&mut self, index: usize, id: Option<&str>, name: Option<&str>) {
        if let Some(ContentBlock::ToolCall(call)) = self.message.content.get_mut(index) {
            if let Some(id) = id.filter(|id| !id.is_empty()) {
                call.id = id.to_string();
            }
            if let Some(name) = name.filter(|name| !name.is_empty())
                && call.name.is_empty()
            {
                call.name = name.to_string();
            }
        }
    }

    /// Appends a fragment of the JSON arguments of the tool call at `index`.
    pub fn append_tool_arguments(&mut self, index: usize, delta: &str) {
        if delta.is_empty() {
            return;
        }
        if let Some((_, raw)) = self.open_arguments.iter_mut().find(|(i, _)| *i == index) {
            raw.push_str(delta);
            self.record(AssistantDelta::ToolCallDelta { index, delta: delta.to_string() });
        }
    }

    /// Closes the tool call at `index`, parsing its arguments. `complete` replaces the
    /// streamed text when the wire sends the whole arguments at the end.
    pub fn finish_tool_call(&mut self, index: usize, complete: Option<&str>) {
        let Some(position) = self.open_arguments.iter().position(|(i, _)| *i == index) else {
            return;
        };
        let (_, streamed) = self.open_arguments.swap_remove(position);
        let raw = match complete {
            Some(full) if !full.is_empty() => full,
            _ => streamed.as_str(),
        };
        let arguments = parse_arguments(raw);
        if let Some(ContentBlock::ToolCall(call)) = self.message.content.get_mut(index) {
            call.arguments = arguments;
            let call = call.clone();
            self.record(AssistantDelta::ToolCallEnd { index, call });
        }
    }

    /// Closes every tool call still streaming, in block order.
    pub fn finish_open_tool_calls(&mut self) {
        let mut open: Vec<usize> = self.open_arguments.iter().map(|(i, _)| *i).collect();
        open.sort_unstable();
        for index in open {
            self.finish_tool_call(index, None);
        }
    }

    /// Number of blocks so far.
    pub fn block_count(&self) -> usize {
        self.message.content.len()
    }

    /// Records token usage (replacing what was recorded before).
    pub fn set_usage(&mut self, usage: Usage) {
        self.message.usage = usage;
    }

    /// The usage recorded so far.
    pub fn usage_mut(&mut self) -> &mut Usage {
        &mut self.message.usage
    }

    /// Records why the model stopped.
    pub fn set_stop_reason(&mut self, reason: StopReason) {
        self.stop_reason = Some(reason);
    }

    /// The completed message: open tool calls closed, stop reason `tool_use` exactly when the
    /// model called tools (servers disagree on the finish reason), usage totals and cost
    /// filled in.
    pub fn finish(mut self) -> AssistantMessage {
        self.finish_open_tool_calls();
        let has_tools = self.message.tool_calls().next().is_some();
        let reason = match self.stop_reason.unwrap_or(StopReason::Stop) {
            StopReason::Stop if has_tools => StopReason::ToolUse,
            StopReason::ToolUse if !has_tools => StopReason::Stop,
            other => other,
        };
        self.message.stop_reason = reason;
        self.settle_usage();
        self.message
    }

    /// The partial message of a failed or cancelled request.
    pub fn fail(mut self, reason: StopReason, error: String) -> AssistantMessage {
        self.finish_open_tool_calls();
        self.message.stop_reason = reason;
        self.message.error_message = Some(error);
        self.settle_usage();
        self.message
    }

    fn settle_usage(&mut self) {
        let usage = &mut self.message.usage;
        let sum = usage.input + usage.output + usage.cache_read + usage.cache_write;
        if usage.total_tokens < sum {
            usage.total_tokens = sum;
        }
        usage.cost = cost_of(usage, &self.model.cost);
    }
}

/// Parses streamed tool-call arguments: empty text is an empty object, text that is not JSON
/// is kept as a JSON string so the loop can show the model what it sent.
pub fn parse_arguments(raw: &str) -> Value {
    if raw.trim().is_empty() {
        return Value::Object(Default::default());
    }
    serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rein_protocol::model::{Api, ModelCost};
    use serde_json::json;

    pub(crate) fn model() -> ModelInfo {
        ModelInfo {
            provider: "p".into(),
            id: "m".into(),
            name: String::new(),
            api: Api::OpenAiChat,
            context_window: 1000,
            max_output_tokens: 100,
            images: false,
            reasoning: false,
            cost: ModelCost { input: 1.0, output: 2.0, cache_read: 0.5, cache_write: 0.0 },
            known: true,
        }
    }

    #[test]
    fn blocks_keep_stream_order_and_deltas_point_at_them() {
        let mut b = MessageBuilder::new(&model(), 7);
        b.push_thinking("hm");
        b.push_thinking("m");
        b.push_text("Hi");
        let call = b.open_tool_call("c1", "bash");
        b.append_tool_arguments(call, "{\"command\":");
        b.append_tool_arguments(call, "\"ls\"}");
        b.push_text("after");
        let deltas = b.take_deltas();
        assert_eq!(deltas[0], AssistantDelta::ThinkingDelta { index: 0, delta: "hm".into() });
        assert_eq!(deltas[2], AssistantDelta::TextDelta { index: 1, delta: "Hi".into() });
        assert_eq!(
            deltas[3],
            AssistantDelta::ToolCallStart { index: 2, id: "c1".into(), name: "bash".into() }
        );
        assert_eq!(deltas[6], AssistantDelta::TextDelta { index: 3, delta: "after".into() });
        let message = b.finish();
        assert_eq!(message.stop_reason, StopReason::ToolUse);
        assert_eq!(message.content.len(), 4);
        let call = message.tool_calls().next().unwrap();
        assert_eq!(call.arguments, json!({"command": "ls"}));
        assert_eq!(message.text(), "Hiafter");
    }

    #[test]
    fn invalid_arguments_are_kept_as_a_string_and_empty_ones_are_an_object() {
        assert_eq!(parse_arguments("{\"a\": 1"), json!("{\"a\": 1"));
        assert_eq!(parse_arguments(""), json!({}));
        let mut b = MessageBuilder::new(&model(), 0);
        let i = b.open_tool_call("c", "t");
        b.append_tool_arguments(i, "{\"a\"");
        b.finish_tool_call(i, Some("{\"a\": 2}"));
        assert_eq!(b.finish().tool_calls().next().unwrap().arguments, json!({"a": 2}));
    }

    #[test]
    fn cost_follows_usage() {
        let mut b = MessageBuilder::new(&model(), 0);
        b.set_usage(Usage {
            input: 1_000_000,
            output: 500_000,
            cache_read: 2_000_000,
            ..Default::default()
        });
        let message = b.finish();
        assert_eq!(message.usage.total_tokens, 3_500_000);
        assert!((message.usage.cost.total - 3.0).abs() < 1e-9);
        assert!((message.usage.cost.cache_read - 1.0).abs() < 1e-9);
    }

    #[test]
    fn failure_keeps_partial_content() {
        let mut b = MessageBuilder::new(&model(), 0);
        b.push_text("par");
        let message = b.fail(StopReason::Aborted, "cancelled".into());
        assert_eq!(message.stop_reason, StopReason::Aborted);
        assert_eq!(message.text(), "par");
        assert_eq!(message.error_message.as_deref(), Some("cancelled"));
    }
}
