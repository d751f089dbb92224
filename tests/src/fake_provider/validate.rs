//! Request validation, per wire API, written from each API's documented request rules.
//!
//! The fake provider runs [`validate`] on every request it receives and answers the way a real
//! server does (HTTP 400 naming the rule) when one is broken, so every end-to-end test checks
//! that rein sends what real servers accept: roles and their order, tool call/result pairing,
//! required fields, size limits and what may be replayed.
//!
//! Sources (read when this was written):
//! - OpenAI Chat Completions: the API reference for `POST /v1/chat/completions` (message
//!   roles, `tool_calls`, tool messages answering each `tool_call_id`, `max_completion_tokens`,
//!   `stream_options` only with `stream`).
//! - OpenAI Responses: the API reference for `POST /v1/responses` and the reasoning guide
//!   (`store: false` needs `reasoning.encrypted_content` to replay reasoning items; a
//!   `function_call` item keeps its `fc_` id only next to its reasoning item; every call needs
//!   its output; `max_output_tokens` at least 16).
//! - Anthropic Messages: the API reference for `POST /v1/messages` and the extended-thinking
//!   and tool-use guides (turns starting with `user`, every `tool_use` answered in
//!   the next message with `tool_result` blocks first, non-empty text, thinking budget from
//!   1024 to below `max_tokens`, no `temperature` with thinking, a tool loop continued with
//!   thinking on starts its assistant turn with thinking, at most 4 cache breakpoints).
//! - DeepSeek thinking mode: `reasoning_content` on assistant messages is text.

use super::encode::WireFormat;
use serde_json::{Map, Value};
use std::collections::BTreeSet;

/// Longest tool-call id OpenAI's APIs accept.
pub const OPENAI_MAX_ID_LEN: usize = 40;
/// Most tools one request may declare (OpenAI's documented limit).
pub const MAX_TOOLS: usize = 128;

/// Every rule `body` breaks for `format`, as sentences; empty when the request is valid.
pub fn validate(format: WireFormat, body: &Value) -> Vec<String> {
    let mut errors = Vec::new();
    let Some(object) = body.as_object() else {
        return vec!["the body is not a JSON object".to_string()];
    };
    match format {
        WireFormat::Chat => chat(object, &mut errors),
        WireFormat::Responses => responses(object, &mut errors),
        WireFormat::Anthropic => anthropic(object, &mut errors),
    }
    errors
}

fn str_field<'a>(object: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    object.get(key).and_then(Value::as_str)
}

fn require_model(object: &Map<String, Value>, errors: &mut Vec<String>) {
    if str_field(object, "model").is_none_or(str::is_empty) {
        errors.push("`model` must be a non-empty string".into());
    }
}

fn tool_name_ok(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn id_ok(id: &str, max: usize) -> bool {
    !id.is_empty() && id.len() <= max
}

fn number_in(
    object: &Map<String, Value>,
    key: &str,
    low: f64,
    high: f64,
    errors: &mut Vec<String>,
) {
    if let Some(value) = object.get(key) {
        match value.as_f64() {
            Some(v) if (low..=high).contains(&v) => {}
            _ => errors.push(format!("`{key}` must be a number from {low} to {high}")),
        }
    }
}

fn positive_integer(object: &Map<String, Value>, key: &str, min: u64, errors: &mut Vec<String>) {
    if let Some(value) = object.get(key) {
        match value.as_u64() {
            Some(v) if v >= min => {}
            _ => errors.push(format!("`{key}` must be an integer of at least {min}")),
        }
    }
}

fn stream_rules(object: &Map<String, Value>, errors: &mut Vec<String>) {
    if let Some(stream) = object.get("stream")
        && !stream.is_boolean()
    {
        errors.push("`stream` must be a boolean".into());
    }
}

// ---------------------------------------------------------------- Chat Completions

fn chat(object: &Map<String, Value>, errors: &mut Vec<String>) {
    require_model(object, errors);
    stream_rules(object, errors);
    if object.contains_key("stream_options") && object.get("stream") != Some(&Value::Bool(true)) {
        errors.push("`stream_options` is only allowed when `stream` is true".into());
    }
    if object.contains_key("max_tokens") && object.contains_key("max_completion_tokens") {
        errors.push("send `max_tokens` or `max_completion_tokens`, not both".into());
    }
    positive_integer(object, "max_tokens", 1, errors);
    positive_integer(object, "max_completion_tokens", 1, errors);
    number_in(object, "temperature", 0.0, 2.0, errors);
    if let Some(effort) = object.get("reasoning_effort")
        && !matches!(
            effort.as_str(),
            Some("none" | "minimal" | "low" | "medium" | "high" | "xhigh")
        )
    {
        errors.push(format!("`reasoning_effort` {effort} is not a known effort"));
    }
    chat_tools(object.get("tools"), errors);
    let Some(messages) = object.get("messages").and_then(Value::as_array) else {
        errors.push("`messages` must be an array".into());
        return;
    };
    if messages.is_empty() {
        errors.push("`messages` must not be empty".into());
    }
    // Tool-call ids the latest assistant message still waits for.
    let mut open: Vec<String> = Vec::new();
    for (i, message) in messages.iter().enumerate() {
        let at = format!("messages[{i}]");
        let Some(message) = message.as_object() else {
            errors.push(format!("{at} must be an object"));
            continue;
        };
        let role = str_field(message, "role").unwrap_or("");
        if role != "tool" && !open.is_empty() {
            errors.push(format!(
                "{at}: an assistant message with `tool_calls` must be followed by tool messages \
                 answering each `tool_call_id` (missing: {})",
                open.join(", ")
            ));
            open.clear();
        }
        match role {
            "system" | "developer" | "user" => chat_content(message, &at, role == "user", errors),
            "assistant" => {
                let calls = message.get("tool_calls");
                let content = message.get("content");
                let has_text = match content {
                    None | Some(Value::Null) => false,
                    Some(Value::String(_)) => true,
                    Some(Value::Array(parts)) => !parts.is_empty(),
                    Some(_) => {
                        errors.push(format!("{at}.content must be text, parts or null"));
                        true
                    }
                };
                if let Some(reasoning) = message.get("reasoning_content")
                    && !reasoning.is_string()
                {
                    errors.push(format!("{at}.reasoning_content must be a string"));
                }
                match calls {
                    None | Some(Value::Null) if !has_text => errors.push(format!(
                        "{at}: an assistant message needs `content` or `tool_calls`"
                    )),
                    None | Some(Value::Null) => {}
                    Some(Value::Array(calls)) if calls.is_empty() => {
                        errors.push(format!("{at}.tool_calls must not be empty when present"))
                    }
                    Some(Value::Array(calls)) => {
                        let mut seen = BTreeSet::new();
                        for (j, call) in calls.iter().enumerate() {
                            let at = format!("{at}.tool_calls[{j}]");
                            let id = call.get("id").and_then(Value::as_str).unwrap_or("");
                            if !id_ok(id, OPENAI_MAX_ID_LEN) {
                                errors.push(format!(
                                    "{at}.id `{id}` must be 1 to {OPENAI_MAX_ID_LEN} characters"
                                ));
                            }
                            if !seen.insert(id.to_string()) {
                                errors.push(format!("{at}.id `{id}` is repeated"));
                            }
                            if call.get("type").and_then(Value::as_str) != Some("function") {
                                errors.push(format!("{at}.type must be \"function\""));
                            }
                            let name = call.pointer("/function/name").and_then(Value::as_str);
                            if !name.is_some_and(tool_name_ok) {
                                errors.push(format!("{at}.function.name is missing or invalid"));
                            }
                            if !call.pointer("/function/arguments").is_some_and(Value::is_string) {
                                errors.push(format!("{at}.function.arguments must be a string"));
                            }
                            open.push(id.to_string());
                        }
                    }
                    Some(_) => errors.push(format!("{at}.tool_calls must be an array")),
                }
            }
            "tool" => {
                let id = str_field(message, "tool_call_id").unwrap_or("");
                match open.iter().position(|open_id| open_id == id) {
                    Some(pos) => {
                        open.remove(pos);
                    }
                    None => errors.push(format!(
                        "{at}: a tool message must answer a `tool_call_id` of the assistant \
                         message right before it (`{id}` is not one)"
                    )),
                }
                match message.get("content") {
                    Some(Value::String(_)) => {}
                    Some(Value::Array(parts))
                        if parts.iter().all(|p| p.get("type") == Some(&"text".into())) => {}
                    _ => errors.push(format!("{at}.content must be text or text parts")),
                }
            }
            other => errors.push(format!("{at}.role `{other}` is not a Chat Completions role")),
        }
    }
    if !open.is_empty() {
        errors.push(format!(
            "the conversation ends with tool calls that have no tool message: {}",
            open.join(", ")
        ));
    }
}

fn chat_content(message: &Map<String, Value>, at: &str, images: bool, errors: &mut Vec<String>) {
    match message.get("content") {
        Some(Value::String(_)) => {}
        Some(Value::Array(parts)) if !parts.is_empty() => {
            for (j, part) in parts.iter().enumerate() {
                match part.get("type").and_then(Value::as_str) {
                    Some("text") if part.get("text").is_some_and(Value::is_string) => {}
                    Some("image_url") if images => {
                        if !part.pointer("/image_url/url").is_some_and(Value::is_string) {
                            errors.push(format!("{at}.content[{j}].image_url.url is missing"));
                        }
                    }
                    _ => errors.push(format!("{at}.content[{j}] is not a valid part here")),
                }
            }
        }
        _ => errors.push(format!("{at}.content must be text or a non-empty array of parts")),
    }
}

fn chat_tools(tools: Option<&Value>, errors: &mut Vec<String>) {
    let Some(tools) = tools else { return };
    let Some(tools) = tools.as_array() else {
        errors.push("`tools` must be an array".into());
        return;
    };
    if tools.len() > MAX_TOOLS {
        errors.push(format!("at most {MAX_TOOLS} tools are allowed"));
    }
    let mut names = BTreeSet::new();
    for (i, tool) in tools.iter().enumerate() {
        if tool.get("type").and_then(Value::as_str) != Some("function") {
            errors.push(format!("tools[{i}].type must be \"function\""));
        }
        let name = tool.pointer("/function/name").and_then(Value::as_str).unwrap_or("");
        if !tool_name_ok(name) {
            errors.push(format!("tools[{i}].function.name `{name}` is invalid"));
        }
        if !names.insert(name.to_string()) {
            errors.push(format!("tools[{i}]: the name `{name}` is declared twice"));
        }
        if let Some(parameters) = tool.pointer("/function/parameters")
            && !parameters.is_object()
        {
            errors.push(format!("tools[{i}].function.parameters must be a JSON schema object"));
        }
    }
}

// ---------------------------------------------------------------- Responses

fn responses(object: &Map<String, Value>, errors: &mut Vec<String>) {
    require_model(object, errors);
    stream_rules(object, errors);
    positive_integer(object, "max_output_tokens", 16, errors);
    number_in(object, "temperature", 0.0, 2.0, errors);
    if let Some(instructions) = object.get("instructions")
        && !instructions.is_string()
    {
        errors.push("`instructions` must be a string".into());
    }
    let include: Vec<&str> = object
        .get("include")
        .and_then(Value::as_array)
        .map(|items| items.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if let Some(reasoning) = object.get("reasoning") {
        if let Some(effort) = reasoning.get("effort")
            && !matches!(
                effort.as_str(),
                Some("none" | "minimal" | "low" | "medium" | "high" | "xhigh")
            )
        {
            errors.push(format!("`reasoning.effort` {effort} is not a known effort"));
        }
        if let Some(summary) = reasoning.get("summary")
            && !matches!(summary.as_str(), Some("auto" | "concise" | "detailed"))
        {
            errors.push(format!("`reasoning.summary` {summary} is not a known value"));
        }
    }
    let stateless = object.get("store") == Some(&Value::Bool(false));
    if let Some(tools) = object.get("tools") {
        match tools.as_array() {
            Some(tools) => {
                if tools.len() > MAX_TOOLS {
                    errors.push(format!("at most {MAX_TOOLS} tools are allowed"));
                }
                for (i, tool) in tools.iter().enumerate() {
                    if tool.get("type").and_then(Value::as_str) == Some("function") {
                        let name = tool.get("name").and_then(Value::as_str).unwrap_or("");
                        if !tool_name_ok(name) {
                            errors.push(format!("tools[{i}].name `{name}` is invalid"));
                        }
                    }
                }
            }
            None => errors.push("`tools` must be an array".into()),
        }
    }
    let items = match object.get("input") {
        Some(Value::String(_)) => return,
        Some(Value::Array(items)) => items,
        _ => {
            errors.push("`input` must be text or an array of items".into());
            return;
        }
    };
    let mut calls: Vec<String> = Vec::new();
    let mut outputs: Vec<String> = Vec::new();
    // Whether a reasoning item has been sent since the last user message.
    let mut reasoning_in_turn = false;
    for (i, item) in items.iter().enumerate() {
        let at = format!("input[{i}]");
        let kind = item.get("type").and_then(Value::as_str);
        let role = item.get("role").and_then(Value::as_str);
        match (kind, role) {
            (
                None | Some("message"),
                Some(role @ ("user" | "system" | "developer" | "assistant")),
            ) => {
                if role == "user" {
                    reasoning_in_turn = false;
                }
                responses_content(item.get("content"), &at, role, errors);
            }
            (Some("function_call"), _) => {
                let call_id = item.get("call_id").and_then(Value::as_str).unwrap_or("");
                if !id_ok(call_id, OPENAI_MAX_ID_LEN) {
                    errors.push(format!(
                        "{at}.call_id `{call_id}` must be 1 to {OPENAI_MAX_ID_LEN} characters"
                    ));
                }
                if !item.get("name").and_then(Value::as_str).is_some_and(tool_name_ok) {
                    errors.push(format!("{at}.name is missing or invalid"));
                }
                if !item.get("arguments").is_some_and(Value::is_string) {
                    errors.push(format!("{at}.arguments must be a string"));
                }
                if let Some(id) = item.get("id") {
                    if !id.as_str().is_some_and(|id| id.starts_with("fc")) {
                        errors.push(format!("{at}.id must be an `fc_…` item id"));
                    } else if !reasoning_in_turn {
                        errors.push(format!(
                            "{at}: item {id} of type 'function_call' was provided without its \
                             required 'reasoning' item"
                        ));
                    }
                }
                calls.push(call_id.to_string());
            }
            (Some("function_call_output"), _) => {
                let call_id = item.get("call_id").and_then(Value::as_str).unwrap_or("");
                if !calls.iter().any(|c| c == call_id) {
                    errors.push(format!(
                        "{at}: no tool call found for function call output with call_id \
                         `{call_id}`"
                    ));
                }
                match item.get("output") {
                    Some(Value::String(_) | Value::Array(_)) => {}
                    _ => errors.push(format!("{at}.output must be text or parts")),
                }
                outputs.push(call_id.to_string());
            }
            (Some("reasoning"), _) => {
                reasoning_in_turn = true;
                if !item.get("summary").is_some_and(Value::is_array) {
                    errors.push(format!("{at}.summary must be an array"));
                }
                let encrypted = item
                    .get("encrypted_content")
                    .and_then(Value::as_str)
                    .is_some_and(|e| !e.is_empty());
                if stateless && !encrypted {
                    let id = item.get("id").and_then(Value::as_str).unwrap_or("?");
                    errors.push(format!(
                        "{at}: Item with id '{id}' not found (with `store: false` a reasoning \
                         item is only usable with its `encrypted_content`)"
                    ));
                }
                if encrypted && !include.contains(&"reasoning.encrypted_content") {
                    // Allowed by the API, but rein must keep asking for it to replay later.
                    errors.push(format!(
                        "{at}: encrypted reasoning is replayed but the request does not ask for \
                         `reasoning.encrypted_content`"
                    ));
                }
            }
            (Some("item_reference"), _) if stateless => {
                errors.push(format!("{at}: item references cannot be resolved with `store: false`"))
            }
            _ => errors.push(format!("{at} is not an input item rein may send")),
        }
    }
    for call in &calls {
        if !outputs.contains(call) {
            errors.push(format!("no tool output found for function call `{call}`"));
        }
    }
}

fn responses_content(content: Option<&Value>, at: &str, role: &str, errors: &mut Vec<String>) {
    match content {
        Some(Value::String(_)) => {}
        Some(Value::Array(parts)) => {
            for (j, part) in parts.iter().enumerate() {
                let kind = part.get("type").and_then(Value::as_str);
                let ok = match (role, kind) {
                    ("assistant", Some("output_text")) => {
                        part.get("text").is_some_and(Value::is_string)
                    }
                    ("assistant", Some("refusal")) => true,
                    (_, Some("input_text")) if role != "assistant" => {
                        part.get("text").is_some_and(Value::is_string)
                    }
                    ("user", Some("input_image")) => {
                        part.get("image_url").is_some_and(Value::is_string)
                            || part.get("file_id").is_some_and(Value::is_string)
                    }
                    _ => false,
                };
                if !ok {
                    errors.push(format!("{at}.content[{j}] is not a valid {role} part"));
                }
            }
        }
        _ => errors.push(format!("{at}.content must be text or an array of parts")),
    }
}

// ---------------------------------------------------------------- Anthropic Messages

fn anthropic(object: &Map<String, Value>, errors: &mut Vec<String>) {
    require_model(object, errors);
    stream_rules(object, errors);
    match object.get("max_tokens").and_then(Value::as_u64) {
        Some(v) if v >= 1 => {}
        _ => errors.push("`max_tokens` is required and must be at least 1".into()),
    }
    number_in(object, "temperature", 0.0, 1.0, errors);
    let thinking = object.get("thinking").filter(|t| t.get("type") == Some(&"enabled".into()));
    if let Some(thinking) = thinking {
        let budget = thinking.get("budget_tokens").and_then(Value::as_u64).unwrap_or(0);
        let max = object.get("max_tokens").and_then(Value::as_u64).unwrap_or(0);
        if budget < 1024 || budget >= max {
            errors.push(format!(
                "`thinking.budget_tokens` ({budget}) must be at least 1024 and less than \
                 `max_tokens` ({max})"
            ));
        }
        if object.get("temperature").is_some_and(|t| t.as_f64() != Some(1.0)) {
            errors.push("`temperature` may only be 1 while thinking is enabled".into());
        }
        // Continuing a tool loop: the assistant turn being continued must start with thinking.
        if let Some(messages) = object.get("messages").and_then(Value::as_array)
            && let [.., assistant, last] = messages.as_slice()
            && assistant.get("role").and_then(Value::as_str) == Some("assistant")
            && last.get("content").and_then(Value::as_array).is_some_and(|blocks| {
                blocks.iter().any(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
            })
        {
            let first = assistant
                .get("content")
                .and_then(Value::as_array)
                .and_then(|blocks| blocks.first())
                .and_then(|block| block.get("type"))
                .and_then(Value::as_str);
            if !matches!(first, Some("thinking" | "redacted_thinking")) {
                errors.push(
                    "with thinking enabled, an assistant message continued by tool results must                      start with a thinking or redacted_thinking block"
                        .into(),
                );
            }
        }
    }
    let mut breakpoints = 0;
    match object.get("system") {
        None | Some(Value::String(_)) => {}
        Some(Value::Array(blocks)) => {
            for block in blocks {
                breakpoints += usize::from(block.get("cache_control").is_some());
                if block.get("type").and_then(Value::as_str) != Some("text") {
                    errors.push("`system` blocks must be text blocks".into());
                }
            }
        }
        Some(_) => errors.push("`system` must be text or text blocks".into()),
    }
    if let Some(tools) = object.get("tools").and_then(Value::as_array) {
        for (i, tool) in tools.iter().enumerate() {
            let name = tool.get("name").and_then(Value::as_str).unwrap_or("");
            if !tool_name_ok(name) {
                errors.push(format!("tools[{i}].name `{name}` is invalid"));
            }
            if tool.pointer("/input_schema/type").and_then(Value::as_str) != Some("object") {
                errors.push(format!("tools[{i}].input_schema must be an object schema"));
            }
        }
    }
    let Some(messages) = object.get("messages").and_then(Value::as_array) else {
        errors.push("`messages` must be an array".into());
        return;
    };
    if messages.is_empty() {
        errors.push("`messages` must not be empty".into());
        return;
    }
    if messages[0].get("role").and_then(Value::as_str) != Some("user") {
        errors.push("the first message must use the `user` role".into());
    }
    let mut waiting: Vec<String> = Vec::new();
    for (i, message) in messages.iter().enumerate() {
        let at = format!("messages[{i}]");
        let role = message.get("role").and_then(Value::as_str).unwrap_or("");
        if !matches!(role, "user" | "assistant") {
            errors.push(format!("{at}.role must be `user` or `assistant`"));
        }
        let blocks: Vec<Value> = match message.get("content") {
            Some(Value::String(text)) => vec![serde_json::json!({"type": "text", "text": text})],
            Some(Value::Array(blocks)) if !blocks.is_empty() => blocks.clone(),
            _ => {
                errors.push(format!("{at}.content must be text or a non-empty block array"));
                continue;
            }
        };
        // Results for the previous assistant turn's calls: in this message, first.
        let mut answered = Vec::new();
        let mut seen_other = false;
        for (j, block) in blocks.iter().enumerate() {
            let at = format!("{at}.content[{j}]");
            breakpoints += usize::from(block.get("cache_control").is_some());
            let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
            match (role, kind) {
                (_, "text") => {
                    let text = block.get("text").and_then(Value::as_str).unwrap_or("");
                    if text.trim().is_empty() {
                        errors.push(format!(
                            "{at}: text content blocks must contain non-whitespace text"
                        ));
                    }
                    seen_other = true;
                }
                ("user", "image") => {
                    let media = block.pointer("/source/media_type").and_then(Value::as_str);
                    if !matches!(
                        media,
                        Some("image/jpeg" | "image/png" | "image/gif" | "image/webp")
                    ) {
                        errors.push(format!("{at}.source.media_type {media:?} is not supported"));
                    }
                    seen_other = true;
                }
                ("user", "tool_result") => {
                    let id = block.get("tool_use_id").and_then(Value::as_str).unwrap_or("");
                    if seen_other {
                        errors.push(format!(
                            "{at}: tool_result blocks must come first in the message"
                        ));
                    }
                    if !waiting.iter().any(|w| w == id) {
                        errors.push(format!(
                            "{at}: unexpected `tool_use_id` `{id}`: each tool_result must have a \
                             corresponding tool_use block in the previous message"
                        ));
                    }
                    answered.push(id.to_string());
                    match block.get("content") {
                        None | Some(Value::String(_)) => {}
                        Some(Value::Array(inner)) => {
                            for part in inner {
                                let kind = part.get("type").and_then(Value::as_str);
                                if !matches!(kind, Some("text" | "image")) {
                                    errors.push(format!(
                                        "{at}: tool_result content must be text or images"
                                    ));
                                }
                                if kind == Some("text")
                                    && part
                                        .get("text")
                                        .and_then(Value::as_str)
                                        .is_none_or(|t| t.trim().is_empty())
                                {
                                    errors.push(format!(
                                        "{at}: text content blocks must contain non-whitespace text"
                                    ));
                                }
                            }
                        }
                        Some(_) => errors.push(format!("{at}.content must be text or blocks")),
                    }
                }
                ("assistant", "thinking") => {
                    if block.get("signature").and_then(Value::as_str).is_none_or(str::is_empty) {
                        errors.push(format!("{at}: a thinking block needs its `signature`"));
                    }
                    if !block.get("thinking").is_some_and(Value::is_string) {
                        errors.push(format!("{at}.thinking must be a string"));
                    }
                }
                ("assistant", "redacted_thinking") => {
                    if block.get("data").and_then(Value::as_str).is_none_or(str::is_empty) {
                        errors.push(format!("{at}: a redacted_thinking block needs its `data`"));
                    }
                }
                ("assistant", "tool_use") => {
                    let id = block.get("id").and_then(Value::as_str).unwrap_or("");
                    if !(tool_name_ok(id)) {
                        errors.push(format!("{at}.id `{id}` must match ^[a-zA-Z0-9_-]{{1,64}}$"));
                    }
                    if !block.get("name").and_then(Value::as_str).is_some_and(tool_name_ok) {
                        errors.push(format!("{at}.name is missing or invalid"));
                    }
                    if !block.get("input").is_some_and(Value::is_object) {
                        errors.push(format!("{at}.input must be an object"));
                    }
                }
                _ => errors
                    .push(format!("{at}: a `{kind}` block is not allowed in a {role} message")),
            }
        }
        if !waiting.is_empty() {
            let missing: Vec<&String> = waiting.iter().filter(|w| !answered.contains(w)).collect();
            if !missing.is_empty() {
                errors.push(format!(
                    "{at}: `tool_use` ids were found without `tool_result` blocks immediately \
                     after: {missing:?}"
                ));
            }
        }
        waiting = if role == "assistant" {
            blocks
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_use"))
                .filter_map(|b| b.get("id").and_then(Value::as_str).map(str::to_string))
                .collect()
        } else {
            Vec::new()
        };
    }
    if !waiting.is_empty() {
        errors.push(format!("the conversation ends with unanswered tool_use ids {waiting:?}"));
    }
    if breakpoints > 4 {
        errors.push(format!("at most 4 blocks may carry `cache_control` ({breakpoints} do)"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn chat_tool_messages_must_answer_the_calls_before_them() {
        let call = json!({"id": "call_1", "type": "function",
            "function": {"name": "bash", "arguments": "{}"}});
        let good = json!({"model": "m", "stream": true, "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": null, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_1", "content": "ok"},
        ]});
        assert_eq!(validate(WireFormat::Chat, &good), Vec::<String>::new());
        let missing = json!({"model": "m", "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": null, "tool_calls": [call]},
            {"role": "user", "content": "next"},
        ]});
        assert!(validate(WireFormat::Chat, &missing)[0].contains("must be followed by tool"));
        let long = json!({"model": "m", "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "tool_calls": [{"id": "c".repeat(41), "type": "function",
                "function": {"name": "bash", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c".repeat(41), "content": "ok"},
        ]});
        assert!(validate(WireFormat::Chat, &long)[0].contains("1 to 40"));
        let options = json!({"model": "m", "stream_options": {"include_usage": true},
            "messages": [{"role": "user", "content": "hi"}]});
        assert_eq!(validate(WireFormat::Chat, &options).len(), 1);
    }

    #[test]
    fn stateless_responses_need_encrypted_reasoning_and_paired_calls() {
        let body = |reasoning: Value, call: Value| {
            json!({"model": "m", "store": false, "include": ["reasoning.encrypted_content"],
            "input": [
                {"role": "user", "content": [{"type": "input_text", "text": "hi"}]},
                reasoning, call,
                {"type": "function_call_output", "call_id": "call_1", "output": "ok"},
            ]})
        };
        let call = json!({"type": "function_call", "id": "fc_1", "call_id": "call_1",
            "name": "bash", "arguments": "{}"});
        let good = body(
            json!({"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "x"}),
            call.clone(),
        );
        assert_eq!(validate(WireFormat::Responses, &good), Vec::<String>::new());
        let bad = body(json!({"type": "reasoning", "id": "rs_1", "summary": []}), call);
        assert!(validate(WireFormat::Responses, &bad)[0].contains("Item with id 'rs_1' not found"));
        let orphan = json!({"model": "m", "input": [
            {"role": "user", "content": "hi"},
            {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "bash",
                "arguments": "{}"},
            {"type": "function_call_output", "call_id": "call_1", "output": "ok"},
        ]});
        assert!(validate(WireFormat::Responses, &orphan)[0].contains("without its required"));
    }

    #[test]
    fn anthropic_results_follow_their_calls_and_thinking_fits() {
        let good = json!({"model": "m", "max_tokens": 2048,
        "thinking": {"type": "enabled", "budget_tokens": 1024},
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "t", "signature": "s"},
                {"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}]},
        ]});
        assert_eq!(validate(WireFormat::Anthropic, &good), Vec::<String>::new());
        let mut bad = good.clone();
        bad["max_tokens"] = json!(1024);
        bad["messages"][2]["content"] = json!([{"type": "text", "text": " "}]);
        let errors = validate(WireFormat::Anthropic, &bad);
        assert_eq!(errors.len(), 3, "{errors:?}");
    }
}
