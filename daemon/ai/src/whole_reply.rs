//! Replies from servers that ignore `stream: true` and answer with one JSON body.
//!
//! Such a body is a complete reply, not a broken stream: it is rewritten into the stream
//! events its API would have sent, so the same decoder assembles it and the caller sees the
//! same deltas either way.

use crate::failure::Failure;
use crate::provider::ProviderErrorKind;
use rein_protocol::model::Api;
use serde_json::{Value, json};

/// One stream event: its SSE `event:` name (`message` when the API names none) and data.
pub type WholeEvent = (String, String);

/// The stream events equivalent to the JSON `body` of a non-streamed reply of `api`.
pub fn events(api: Api, body: &str) -> Result<Vec<WholeEvent>, Failure> {
    let value: Value = serde_json::from_str(body.trim()).map_err(|e| {
        Failure::fatal(ProviderErrorKind::Protocol, format!("malformed reply body: {e}"))
    })?;
    Ok(match api {
        Api::OpenAiChat => chat(&value),
        Api::OpenAiResponses => responses(&value),
        Api::Anthropic => anthropic(&value),
    })
}

fn data(value: &Value) -> WholeEvent {
    ("message".to_string(), value.to_string())
}

fn named(value: Value) -> WholeEvent {
    let name = value.get("type").and_then(Value::as_str).unwrap_or("message").to_string();
    (name, value.to_string())
}

/// A chat completion becomes one chunk whose delta is the whole message, then `[DONE]`.
fn chat(body: &Value) -> Vec<WholeEvent> {
    if body.get("error").is_some_and(|e| !e.is_null()) {
        return vec![data(body)];
    }
    let choices: Vec<Value> = body
        .get("choices")
        .and_then(Value::as_array)
        .map(|choices| {
            choices
                .iter()
                .map(|choice| {
                    json!({"index": choice.get("index").cloned().unwrap_or(json!(0)),
                        "delta": choice.get("message").cloned().unwrap_or(json!({})),
                        "finish_reason": choice.get("finish_reason").cloned().unwrap_or(Value::Null)})
                })
                .collect()
        })
        .unwrap_or_default();
    let mut chunk = json!({"choices": choices});
    if let Some(usage) = body.get("usage") {
        chunk["usage"] = usage.clone();
    }
    vec![data(&chunk), ("message".to_string(), "[DONE]".to_string())]
}

/// A response object becomes its output items, added and done, then its terminal event.
fn responses(body: &Value) -> Vec<WholeEvent> {
    if body.get("type").and_then(Value::as_str) == Some("error")
        || (body.get("error").is_some_and(Value::is_object) && body.get("output").is_none())
    {
        return vec![named(json!({"type": "error", "error": body.get("error").unwrap_or(body)}))];
    }
    let mut events = Vec::new();
    let items = body.get("output").and_then(Value::as_array).cloned().unwrap_or_default();
    for (index, item) in items.iter().enumerate() {
        events.push(named(
            json!({"type": "response.output_item.added", "output_index": index, "item": item}),
        ));
        if item.get("type").and_then(Value::as_str) == Some("message") {
            let parts = item.get("content").and_then(Value::as_array).cloned().unwrap_or_default();
            for part in parts {
                let (kind, text) = match part.get("type").and_then(Value::as_str) {
                    Some("output_text") => ("response.output_text.delta", part.get("text")),
                    Some("refusal") => ("response.refusal.delta", part.get("refusal")),
                    _ => continue,
                };
                let text = text.and_then(Value::as_str).unwrap_or_default();
                events.push(named(json!({"type": kind, "output_index": index, "delta": text})));
            }
        }
        events.push(named(
            json!({"type": "response.output_item.done", "output_index": index, "item": item}),
        ));
    }
    let terminal = match body.get("status").and_then(Value::as_str) {
        Some("failed") => "response.failed",
        Some("incomplete") => "response.incomplete",
        _ => "response.completed",
    };
    events.push(named(json!({"type": terminal, "response": body})));
    events
}

/// A message becomes `message_start`, each content block started and stopped, then
/// `message_delta` with the stop reason and usage, and `message_stop`.
fn anthropic(body: &Value) -> Vec<WholeEvent> {
    if body.get("type").and_then(Value::as_str) == Some("error") {
        return vec![named(body.clone())];
    }
    let usage = body.get("usage").cloned().unwrap_or(json!({}));
    let mut events = vec![named(json!({"type": "message_start", "message": {"usage": usage}}))];
    let blocks = body.get("content").and_then(Value::as_array).cloned().unwrap_or_default();
    for (index, block) in blocks.iter().enumerate() {
        events.push(named(
            json!({"type": "content_block_start", "index": index, "content_block": block}),
        ));
        events.push(named(json!({"type": "content_block_stop", "index": index})));
    }
    events.push(named(json!({"type": "message_delta",
        "delta": {"stop_reason": body.get("stop_reason").cloned().unwrap_or(Value::Null)},
        "usage": usage})));
    events.push(named(json!({"type": "message_stop"})));
    events
}
