//! Scripted replies written in each API's wire format: SSE streams and error bodies.

use super::script::{Reply, ScriptBlock, ScriptStop, pieces};
use serde_json::{Value, json};

/// Which wire format a request asked for (decided by its path).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireFormat {
    /// `/v1/chat/completions`.
    Chat,
    /// `/v1/responses`.
    Responses,
    /// `/v1/messages`.
    Anthropic,
}

impl WireFormat {
    /// The format served at `path`, if any.
    pub fn from_path(path: &str) -> Option<Self> {
        let path = path.split('?').next().unwrap_or(path);
        if path.ends_with("/chat/completions") {
            Some(Self::Chat)
        } else if path.ends_with("/responses") {
            Some(Self::Responses)
        } else if path.ends_with("/messages") {
            Some(Self::Anthropic)
        } else {
            None
        }
    }
}

/// Gives out tool-call ids for calls whose script names none.
pub trait IdSource {
    /// The next number.
    fn next_id(&mut self) -> usize;
}

impl<F: FnMut() -> usize> IdSource for F {
    fn next_id(&mut self) -> usize {
        self()
    }
}

/// One SSE event: its bytes on the wire.
pub type SseEvent = Vec<u8>;

fn sse(name: Option<&str>, data: &Value, crlf: bool) -> SseEvent {
    let eol = if crlf { "\r\n" } else { "\n" };
    let mut text = String::new();
    if let Some(name) = name {
        text.push_str(&format!("event: {name}{eol}"));
    }
    text.push_str(&format!("data: {data}{eol}{eol}"));
    text.into_bytes()
}

fn comment(crlf: bool) -> SseEvent {
    if crlf { b": keep-alive\r\n\r\n".to_vec() } else { b": keep-alive\n\n".to_vec() }
}

/// The stream for `reply` in `format`; its last event is the terminal one.
pub fn stream(
    format: WireFormat,
    reply: &Reply,
    model: &str,
    ids: &mut dyn IdSource,
) -> Vec<SseEvent> {
    match format {
        WireFormat::Chat => chat_stream(reply, model, ids),
        WireFormat::Responses => responses_stream(reply, model, ids),
        WireFormat::Anthropic => anthropic_stream(reply, model, ids),
    }
}

fn chat_stream(reply: &Reply, model: &str, ids: &mut dyn IdSource) -> Vec<SseEvent> {
    let crlf = reply.crlf;
    let size = reply.delta_size.unwrap_or(8);
    let chunk = |delta: Value, finish: Value| {
        json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0,
            "model": model, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let mut events = vec![comment(crlf)];
    events.push(sse(None, &chunk(json!({"role": "assistant", "content": ""}), Value::Null), crlf));
    let mut call_index = 0;
    for block in reply.all_blocks() {
        match block {
            ScriptBlock::Text { text } => {
                for piece in pieces(&text, size) {
                    events.push(sse(None, &chunk(json!({"content": piece}), Value::Null), crlf));
                }
            }
            ScriptBlock::Thinking { thinking, .. } => {
                for piece in pieces(&thinking, size) {
                    let delta = json!({"reasoning_content": piece});
                    events.push(sse(None, &chunk(delta, Value::Null), crlf));
                }
            }
            ScriptBlock::ToolCall(call) => {
                let id = call.id.clone().unwrap_or_else(|| format!("call_{}", ids.next_id()));
                let first = json!({"tool_calls": [{"index": call_index, "id": id, "type": "function",
                    "function": {"name": call.name, "arguments": ""}}]});
                events.push(sse(None, &chunk(first, Value::Null), crlf));
                for piece in pieces(&call.argument_text(), size) {
                    let delta = json!({"tool_calls": [{"index": call_index,
                        "function": {"arguments": piece}}]});
                    events.push(sse(None, &chunk(delta, Value::Null), crlf));
                }
                call_index += 1;
            }
        }
    }
    let finish = match reply.stop_reason() {
        ScriptStop::Stop => "stop",
        ScriptStop::Length => "length",
        ScriptStop::ToolUse => "tool_calls",
    };
    events.push(sse(None, &chunk(json!({}), json!(finish)), crlf));
    let usage = reply.usage();
    let prompt = usage.input + usage.cache_read;
    events.push(sse(
        None,
        &json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0,
            "model": model, "choices": [], "usage": {
                "prompt_tokens": prompt, "completion_tokens": usage.output,
                "total_tokens": prompt + usage.output,
                "prompt_tokens_details": {"cached_tokens": usage.cache_read}}}),
        crlf,
    ));
    events.push(if crlf { b"data: [DONE]\r\n\r\n".to_vec() } else { b"data: [DONE]\n\n".to_vec() });
    events
}

fn responses_stream(reply: &Reply, model: &str, ids: &mut dyn IdSource) -> Vec<SseEvent> {
    let crlf = reply.crlf;
    let size = reply.delta_size.unwrap_or(8);
    let mut events = Vec::new();
    let mut push = |data: Value| {
        let name = data["type"].as_str().map(str::to_string);
        events.push(sse(name.as_deref(), &data, crlf));
    };
    let response = |status: &str| {
        json!({"id": "resp_fake", "object": "response", "model": model,
        "status": status, "output": []})
    };
    push(json!({"type": "response.created", "response": response("in_progress")}));
    push(json!({"type": "response.in_progress", "response": response("in_progress")}));
    for (o, block) in reply.all_blocks().into_iter().enumerate() {
        match block {
            ScriptBlock::Thinking { thinking, signature, .. } => {
                let id = format!("rs_{o}");
                push(json!({"type": "response.output_item.added", "output_index": o,
                    "item": {"type": "reasoning", "id": id, "summary": []}}));
                push(json!({"type": "response.reasoning_summary_part.added", "output_index": o,
                    "item_id": id, "summary_index": 0, "part": {"type": "summary_text", "text": ""}}));
                for piece in pieces(&thinking, size) {
                    push(
                        json!({"type": "response.reasoning_summary_text.delta", "output_index": o,
                        "item_id": id, "summary_index": 0, "delta": piece}),
                    );
                }
                let encrypted = signature.unwrap_or_else(|| format!("enc_{o}"));
                push(json!({"type": "response.output_item.done", "output_index": o,
                    "item": {"type": "reasoning", "id": id, "encrypted_content": encrypted,
                        "summary": [{"type": "summary_text", "text": thinking}]}}));
            }
            ScriptBlock::Text { text } => {
                let id = format!("msg_{o}");
                push(json!({"type": "response.output_item.added", "output_index": o,
                    "item": {"type": "message", "id": id, "role": "assistant", "status": "in_progress",
                        "content": []}}));
                push(json!({"type": "response.content_part.added", "output_index": o,
                    "item_id": id, "content_index": 0, "part": {"type": "output_text", "text": ""}}));
                for piece in pieces(&text, size) {
                    push(json!({"type": "response.output_text.delta", "output_index": o,
                        "item_id": id, "content_index": 0, "delta": piece}));
                }
                push(json!({"type": "response.output_text.done", "output_index": o,
                    "item_id": id, "content_index": 0, "text": text}));
                push(json!({"type": "response.output_item.done", "output_index": o,
                    "item": {"type": "message", "id": id, "role": "assistant", "status": "completed",
                        "content": [{"type": "output_text", "text": text, "annotations": []}]}}));
            }
            ScriptBlock::ToolCall(call) => {
                let n = ids.next_id();
                let call_id = call.id.clone().unwrap_or_else(|| format!("call_{n}"));
                let id = format!("fc_{n}");
                let arguments = call.argument_text();
                push(json!({"type": "response.output_item.added", "output_index": o,
                    "item": {"type": "function_call", "id": id, "call_id": call_id,
                        "name": call.name, "arguments": "", "status": "in_progress"}}));
                for piece in pieces(&arguments, size) {
                    push(json!({"type": "response.function_call_arguments.delta",
                        "output_index": o, "item_id": id, "delta": piece}));
                }
                push(json!({"type": "response.function_call_arguments.done", "output_index": o,
                    "item_id": id, "arguments": arguments}));
                push(json!({"type": "response.output_item.done", "output_index": o,
                    "item": {"type": "function_call", "id": id, "call_id": call_id,
                        "name": call.name, "arguments": arguments, "status": "completed"}}));
            }
        }
    }
    let usage = reply.usage();
    let input = usage.input + usage.cache_read;
    let (kind, status) = match reply.stop_reason() {
        ScriptStop::Length => ("response.incomplete", "incomplete"),
        _ => ("response.completed", "completed"),
    };
    let mut done = response(status);
    done["usage"] = json!({"input_tokens": input, "output_tokens": usage.output,
        "total_tokens": input + usage.output,
        "input_tokens_details": {"cached_tokens": usage.cache_read},
        "output_tokens_details": {"reasoning_tokens": 0}});
    if status == "incomplete" {
        done["incomplete_details"] = json!({"reason": "max_output_tokens"});
    }
    push(json!({"type": kind, "response": done}));
    events
}

fn anthropic_stream(reply: &Reply, model: &str, ids: &mut dyn IdSource) -> Vec<SseEvent> {
    let crlf = reply.crlf;
    let size = reply.delta_size.unwrap_or(8);
    let usage = reply.usage();
    let mut events = Vec::new();
    let mut push = |data: Value| {
        let name = data["type"].as_str().map(str::to_string);
        events.push(sse(name.as_deref(), &data, crlf));
    };
    push(json!({"type": "message_start", "message": {"id": "msg_fake", "type": "message",
        "role": "assistant", "model": model, "content": [], "stop_reason": null,
        "stop_sequence": null, "usage": {"input_tokens": usage.input,
            "cache_read_input_tokens": usage.cache_read,
            "cache_creation_input_tokens": usage.cache_write, "output_tokens": 1}}}));
    push(json!({"type": "ping"}));
    for (i, block) in reply.all_blocks().into_iter().enumerate() {
        let delta =
            |delta: Value| json!({"type": "content_block_delta", "index": i, "delta": delta});
        match block {
            ScriptBlock::Text { text } => {
                push(json!({"type": "content_block_start", "index": i,
                    "content_block": {"type": "text", "text": ""}}));
                for piece in pieces(&text, size) {
                    push(delta(json!({"type": "text_delta", "text": piece})));
                }
            }
            ScriptBlock::Thinking { redacted: true, signature, .. } => {
                push(json!({"type": "content_block_start", "index": i,
                    "content_block": {"type": "redacted_thinking",
                        "data": signature.unwrap_or_default()}}));
            }
            ScriptBlock::Thinking { thinking, signature, .. } => {
                push(json!({"type": "content_block_start", "index": i,
                    "content_block": {"type": "thinking", "thinking": "", "signature": ""}}));
                for piece in pieces(&thinking, size) {
                    push(delta(json!({"type": "thinking_delta", "thinking": piece})));
                }
                let signature = signature.unwrap_or_else(|| format!("sig_{i}"));
                push(delta(json!({"type": "signature_delta", "signature": signature})));
            }
            ScriptBlock::ToolCall(call) => {
                let id = call.id.clone().unwrap_or_else(|| format!("toolu_{}", ids.next_id()));
                push(json!({"type": "content_block_start", "index": i,
                    "content_block": {"type": "tool_use", "id": id, "name": call.name, "input": {}}}));
                for piece in pieces(&call.argument_text(), size) {
                    push(delta(json!({"type": "input_json_delta", "partial_json": piece})));
                }
            }
        }
        push(json!({"type": "content_block_stop", "index": i}));
    }
    let stop = match reply.stop_reason() {
        ScriptStop::Stop => "end_turn",
        ScriptStop::Length => "max_tokens",
        ScriptStop::ToolUse => "tool_use",
    };
    push(json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
        "usage": {"output_tokens": usage.output}}));
    push(json!({"type": "message_stop"}));
    events
}

/// An error body in `format`'s own shape.
pub fn error_body(format: WireFormat, kind: &str, code: Option<&str>, message: &str) -> Value {
    match format {
        WireFormat::Anthropic => {
            json!({"type": "error", "error": {"type": kind, "message": message}})
        }
        WireFormat::Chat | WireFormat::Responses => {
            json!({"error": {"message": message, "type": kind, "param": null, "code": code}})
        }
    }
}

/// The context-overflow error `format`'s real servers send.
pub fn context_overflow_body(format: WireFormat) -> Value {
    match format {
        WireFormat::Anthropic => error_body(
            format,
            "invalid_request_error",
            None,
            "prompt is too long: 215000 tokens > 200000 maximum",
        ),
        WireFormat::Chat | WireFormat::Responses => error_body(
            format,
            "invalid_request_error",
            Some("context_length_exceeded"),
            "This model's maximum context length is 128000 tokens. However, your messages \
             resulted in 131072 tokens. Please reduce the length of the messages.",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake_provider::script::ScriptToolCall;
    use serde_json::json;

    fn data_lines(events: &[SseEvent]) -> Vec<Value> {
        events
            .iter()
            .filter_map(|e| {
                let text = String::from_utf8(e.clone()).unwrap();
                let data = text.lines().find_map(|l| l.strip_prefix("data: "))?.to_string();
                serde_json::from_str(&data).ok()
            })
            .collect()
    }

    #[test]
    fn tool_arguments_are_split_and_ids_counted() {
        let reply = Reply {
            tool_calls: vec![ScriptToolCall {
                name: "bash".into(),
                arguments: json!({"command": "ls"}),
                ..Default::default()
            }],
            delta_size: Some(4),
            ..Reply::default()
        };
        let mut n = 6;
        let mut ids = move || {
            n += 1;
            n
        };
        let events = data_lines(&stream(WireFormat::Anthropic, &reply, "m", &mut ids));
        let partial: String =
            events.iter().filter_map(|e| e["delta"]["partial_json"].as_str()).collect();
        assert_eq!(partial, r#"{"command":"ls"}"#);
        assert!(events.iter().filter(|e| e["delta"]["partial_json"].is_string()).count() > 3);
        assert!(events.iter().any(|e| e["content_block"]["id"] == "toolu_7"));
        assert_eq!(events.last().unwrap()["type"], "message_stop");
    }

    #[test]
    fn formats_are_chosen_by_path() {
        assert_eq!(WireFormat::from_path("/v1/chat/completions"), Some(WireFormat::Chat));
        assert_eq!(WireFormat::from_path("/api/v1/responses?x=1"), Some(WireFormat::Responses));
        assert_eq!(WireFormat::from_path("/v1/messages"), Some(WireFormat::Anthropic));
        assert_eq!(WireFormat::from_path("/v1/models"), None);
    }
}
