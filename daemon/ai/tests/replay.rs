//! Replays real recorded provider streams through the real HTTP provider.
//!
//! Two sets of recordings are read:
//! - the streams recorded from live APIs in `../shared/provider-recordings/` beside the
//!   checkout (or `$REIN_RECORDINGS_DIR`); never copied into the repository, skipped with a
//!   message where absent;
//! - the recordings in `tests/recordings/`, written after the documented behaviour of servers
//!   the shared set lacks (docs/providers.md names the source of each).
//!
//! A recording holds one SSE `data:` payload per line. Lines starting with `:` are SSE
//! comments and lines starting with `#` are notes, not sent. A file named `chat__…`,
//! `responses__…` or `anthropic__…` is of that API; any other is recognised by its first
//! payload.
//!
//! Each stream is served by the fake provider in several chunkings (cuts in the middle of
//! lines and of UTF-8 characters, CRLF line ends) and the assembled message is compared with
//! an independent reading of the recording: text, thinking and signatures, tool names and
//! arguments, usage and stop reason, or the error the provider reported. The assembled
//! message is then sent back in the next request (with results for its tool calls), which the
//! fake provider's validator must accept.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

mod common;

use common::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rein_ai::ProviderErrorKind;
use rein_protocol::message::{
    AssistantMessage, ContentBlock, Message, StopReason, ToolResultMessage, UserMessage,
};
use rein_protocol::model::Api;
use rein_testkit::fake_provider::{FakeProvider, RawReply, Reply};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Where the shared recordings are: beside the checkout (as in CI), else
/// `$REIN_RECORDINGS_DIR`, else the machine-wide copy.
fn shared_dir() -> Option<PathBuf> {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let candidates = [
        Some(repo.join("../shared/provider-recordings")),
        std::env::var_os("REIN_RECORDINGS_DIR").map(PathBuf::from),
        Some(PathBuf::from("/work/shared/provider-recordings")),
    ];
    candidates.into_iter().flatten().find(|dir| dir.is_dir())
}

fn own_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/recordings")
}

/// Every `*.chunks.txt` under `dir`, sorted.
fn recordings(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else if path.to_string_lossy().ends_with(".chunks.txt") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// One line of a recording.
#[derive(Debug, Clone)]
enum Line {
    /// An SSE comment, sent as is.
    Comment(String),
    /// A `data:` payload (JSON, or `[DONE]`).
    Data(String),
}

fn read_recording(path: &Path) -> Vec<Line> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|line| !line.trim().is_empty() && !line.starts_with('#'))
        .map(|line| match line.strip_prefix(':') {
            Some(_) => Line::Comment(line.to_string()),
            None => Line::Data(line.to_string()),
        })
        .collect()
}

fn payloads(lines: &[Line]) -> Vec<Value> {
    lines
        .iter()
        .filter_map(|line| match line {
            Line::Data(data) => serde_json::from_str(data).ok(),
            Line::Comment(_) => None,
        })
        .collect()
}

fn api_of(path: &Path, payloads: &[Value]) -> Api {
    let name = path.file_name().unwrap().to_string_lossy();
    for (prefix, api) in [
        ("chat__", Api::OpenAiChat),
        ("responses__", Api::OpenAiResponses),
        ("anthropic__", Api::Anthropic),
    ] {
        if name.starts_with(prefix) {
            return api;
        }
    }
    let first = payloads.first().unwrap_or_else(|| panic!("{name}: empty recording"));
    let kind = first.get("type").and_then(Value::as_str).unwrap_or("");
    if first.get("choices").is_some() || first.get("object").is_some_and(|o| o != "response") {
        Api::OpenAiChat
    } else if kind.starts_with("response.") || first.get("response").is_some() {
        Api::OpenAiResponses
    } else if kind.starts_with("message") || kind.starts_with("content_block") || kind == "ping" {
        Api::Anthropic
    } else {
        panic!("{name}: cannot tell the API from {first}")
    }
}

// ------------------------------------------------------------------ the independent reading

/// What the recording says the reply was.
#[derive(Debug, Clone, PartialEq)]
enum Expected {
    Message(Reading),
    /// The provider reported an error with this text.
    Error(String),
}

#[derive(Debug, Clone, Default, PartialEq)]
struct Reading {
    text: String,
    thinking: String,
    /// Anthropic signatures, redacted-thinking data, Responses encrypted content: in order.
    proofs: Vec<String>,
    tools: Vec<(String, Value)>,
    /// input (uncached), output, cache read, cache write.
    usage: (u64, u64, u64, u64),
    stop: Option<StopReason>,
}

fn args(text: &str) -> Value {
    if text.trim().is_empty() {
        return Value::Object(Default::default());
    }
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_string()))
}

fn error_text(error: &Value) -> String {
    let inner = error.get("error").filter(|e| e.is_object()).unwrap_or(error);
    inner.get("message").and_then(Value::as_str).unwrap_or("").to_string()
}

fn read_chat(payloads: &[Value]) -> Expected {
    let mut reading = Reading::default();
    // (key, id, name, arguments); key is the wire index or the position in the delta.
    let mut calls: Vec<(u64, String, String, String)> = Vec::new();
    let mut finish = None;
    for chunk in payloads {
        if let Some(error) = chunk.get("error").filter(|e| !e.is_null()) {
            return Expected::Error(error_text(error));
        }
        let choices = chunk.get("choices").and_then(Value::as_array).cloned().unwrap_or_default();
        for choice in choices {
            let delta = &choice["delta"];
            let said = |key: &str| delta.get(key).and_then(Value::as_str).unwrap_or("");
            let reasoning = if said("reasoning_content").is_empty() {
                said("reasoning")
            } else {
                said("reasoning_content")
            };
            reading.thinking.push_str(reasoning);
            match &delta["content"] {
                Value::String(text) => reading.text.push_str(text),
                Value::Array(parts) => {
                    for part in parts {
                        match part["type"].as_str() {
                            Some("text") => reading.text.push_str(part["text"].as_str().unwrap()),
                            Some("thinking") => {
                                for inner in part["thinking"].as_array().unwrap() {
                                    reading.thinking.push_str(inner["text"].as_str().unwrap());
                                }
                            }
                            _ => {}
                        }
                    }
                }
                _ => {}
            }
            let fragments = delta["tool_calls"].as_array().cloned().unwrap_or_default();
            for (position, fragment) in fragments.iter().enumerate() {
                let key = fragment["index"].as_u64().unwrap_or(position as u64);
                let id = fragment["id"].as_str().unwrap_or("");
                let name = fragment.pointer("/function/name").and_then(Value::as_str);
                let arguments = match fragment.pointer("/function/arguments") {
                    Some(Value::String(text)) => text.clone(),
                    Some(Value::Null) | None => String::new(),
                    Some(other) => other.to_string(),
                };
                let current = calls.iter().rposition(|c| c.0 == key);
                match current {
                    Some(at) if id.is_empty() || calls[at].1 == id => {
                        calls[at].3.push_str(&arguments);
                        if calls[at].2.is_empty() {
                            calls[at].2 = name.unwrap_or("").to_string();
                        }
                    }
                    _ => {
                        calls.push((key, id.to_string(), name.unwrap_or("").to_string(), arguments))
                    }
                }
            }
            if let Some(reason) = choice["finish_reason"].as_str() {
                finish = Some(reason.to_string());
            }
        }
        let usage = chunk
            .get("usage")
            .filter(|u| u.is_object())
            .or_else(|| chunk.pointer("/x_groq/usage").filter(|u| u.is_object()));
        if let Some(usage) = usage {
            let n = |p: &str| usage.pointer(p).and_then(Value::as_u64).unwrap_or(0);
            let cached = if usage.pointer("/prompt_tokens_details/cached_tokens").is_some() {
                n("/prompt_tokens_details/cached_tokens")
            } else {
                n("/prompt_cache_hit_tokens")
            };
            reading.usage = (n("/prompt_tokens") - cached, n("/completion_tokens"), cached, 0);
        }
    }
    reading.tools = calls.into_iter().map(|(_, _, name, a)| (name, args(&a))).collect();
    reading.stop = Some(match finish.as_deref() {
        Some("length") => StopReason::Length,
        Some("content_filter") => StopReason::ContentFilter,
        _ if !reading.tools.is_empty() => StopReason::ToolUse,
        _ => StopReason::Stop,
    });
    Expected::Message(reading)
}

/// Responses: the final `response` object holds the whole output; the deltas are not read.
fn read_responses(payloads: &[Value]) -> Expected {
    for event in payloads {
        let kind = event["type"].as_str().unwrap_or("");
        match kind {
            "error" => return Expected::Error(error_text(event)),
            "response.failed" => return Expected::Error(error_text(&event["response"]["error"])),
            "response.completed" | "response.incomplete" => {}
            _ => continue,
        }
        let response = &event["response"];
        let mut reading = Reading::default();
        for item in response["output"].as_array().cloned().unwrap_or_default() {
            match item["type"].as_str() {
                Some("message") => {
                    for part in item["content"].as_array().cloned().unwrap_or_default() {
                        match part["type"].as_str() {
                            Some("output_text") => {
                                reading.text.push_str(part["text"].as_str().unwrap())
                            }
                            Some("refusal") => {
                                reading.text.push_str(part["refusal"].as_str().unwrap())
                            }
                            _ => {}
                        }
                    }
                }
                Some("reasoning") => {
                    let texts = |key: &str| -> Vec<String> {
                        item[key]
                            .as_array()
                            .map(|parts| {
                                parts
                                    .iter()
                                    .filter_map(|p| p["text"].as_str().map(str::to_string))
                                    .collect()
                            })
                            .unwrap_or_default()
                    };
                    let summary = texts("summary");
                    if summary.is_empty() {
                        reading.thinking.push_str(&texts("content").concat());
                    } else {
                        reading.thinking.push_str(&summary.join("\n\n"));
                    }
                    if let Some(encrypted) = item["encrypted_content"].as_str() {
                        reading.proofs.push(encrypted.to_string());
                    }
                }
                Some("function_call") => reading.tools.push((
                    item["name"].as_str().unwrap().to_string(),
                    args(item["arguments"].as_str().unwrap_or("")),
                )),
                _ => {}
            }
        }
        let usage = &response["usage"];
        let n = |p: &str| usage.pointer(p).and_then(Value::as_u64).unwrap_or(0);
        let cached = n("/input_tokens_details/cached_tokens");
        reading.usage = (n("/input_tokens") - cached, n("/output_tokens"), cached, 0);
        let incomplete = kind == "response.incomplete" || response["status"] == "incomplete";
        reading.stop = Some(match response.pointer("/incomplete_details/reason") {
            Some(reason) if incomplete && reason == "content_filter" => StopReason::ContentFilter,
            _ if incomplete => StopReason::Length,
            _ if !reading.tools.is_empty() => StopReason::ToolUse,
            _ => StopReason::Stop,
        });
        return Expected::Message(reading);
    }
    panic!("the recording has no terminal event")
}

fn read_anthropic(payloads: &[Value]) -> Expected {
    #[derive(Default)]
    struct Block {
        kind: String,
        text: String,
        signature: String,
        name: String,
        input: String,
    }
    let mut blocks: Vec<(u64, Block)> = Vec::new();
    let mut usage = (0, 0, 0, 0);
    let mut stop = None;
    let read_usage = |u: &Value, usage: &mut (u64, u64, u64, u64)| {
        let set = |key: &str, slot: &mut u64| {
            if let Some(v) = u.get(key).and_then(Value::as_u64) {
                *slot = v;
            }
        };
        set("input_tokens", &mut usage.0);
        set("output_tokens", &mut usage.1);
        set("cache_read_input_tokens", &mut usage.2);
        set("cache_creation_input_tokens", &mut usage.3);
    };
    for event in payloads {
        let index = event["index"].as_u64().unwrap_or(0);
        match event["type"].as_str().unwrap_or("") {
            "error" => return Expected::Error(error_text(event)),
            "message_start" => read_usage(&event["message"]["usage"], &mut usage),
            "content_block_start" => {
                let start = &event["content_block"];
                let s = |key: &str| start[key].as_str().unwrap_or("").to_string();
                let mut block = Block { kind: s("type"), ..Block::default() };
                match block.kind.as_str() {
                    "text" => block.text = s("text"),
                    "thinking" => {
                        block.text = s("thinking");
                        block.signature = s("signature");
                    }
                    "redacted_thinking" => block.signature = s("data"),
                    "tool_use" => {
                        block.name = s("name");
                        if start["input"].as_object().is_some_and(|o| !o.is_empty()) {
                            block.input = start["input"].to_string();
                        }
                    }
                    _ => {}
                }
                blocks.push((index, block));
            }
            "content_block_delta" => {
                let Some((_, block)) = blocks.iter_mut().rev().find(|(i, _)| *i == index) else {
                    continue;
                };
                let delta = &event["delta"];
                let s = |key: &str| delta[key].as_str().unwrap_or("");
                match delta["type"].as_str() {
                    Some("text_delta") => block.text.push_str(s("text")),
                    Some("thinking_delta") => block.text.push_str(s("thinking")),
                    Some("signature_delta") => block.signature.push_str(s("signature")),
                    Some("input_json_delta") => block.input.push_str(s("partial_json")),
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(reason) = event.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    stop = Some(reason.to_string());
                }
                read_usage(&event["usage"], &mut usage);
            }
            "message_stop" => break,
            _ => {}
        }
    }
    let mut reading = Reading { usage, ..Reading::default() };
    for (_, block) in blocks {
        match block.kind.as_str() {
            "text" => reading.text.push_str(&block.text),
            "thinking" => {
                reading.thinking.push_str(&block.text);
                if !block.signature.is_empty() {
                    reading.proofs.push(block.signature);
                }
            }
            "redacted_thinking" => reading.proofs.push(block.signature),
            "tool_use" => reading.tools.push((block.name, args(&block.input))),
            _ => {}
        }
    }
    reading.stop = Some(match stop.as_deref() {
        Some("max_tokens" | "model_context_window_exceeded") => StopReason::Length,
        Some("refusal") => StopReason::ContentFilter,
        _ if !reading.tools.is_empty() => StopReason::ToolUse,
        _ => StopReason::Stop,
    });
    Expected::Message(reading)
}

fn expected(api: Api, payloads: &[Value]) -> Expected {
    match api {
        Api::OpenAiChat => read_chat(payloads),
        Api::OpenAiResponses => read_responses(payloads),
        Api::Anthropic => read_anthropic(payloads),
    }
}

/// The same facts read from the message rein assembled.
fn observed(api: Api, message: &AssistantMessage) -> Reading {
    let mut reading = Reading::default();
    for block in &message.content {
        match block {
            ContentBlock::Text { text } => reading.text.push_str(text),
            ContentBlock::Thinking { thinking, signature, redacted } => {
                reading.thinking.push_str(thinking);
                let proof = match (api, signature) {
                    (Api::OpenAiResponses, Some(item)) => {
                        let item: Value = serde_json::from_str(item).unwrap();
                        item["encrypted_content"].as_str().map(str::to_string)
                    }
                    (_, Some(signature)) if *redacted || !signature.is_empty() => {
                        Some(signature.clone())
                    }
                    _ => None,
                };
                reading.proofs.extend(proof);
            }
            ContentBlock::ToolCall(call) => {
                reading.tools.push((call.name.clone(), call.arguments.clone()))
            }
            ContentBlock::Image { .. } => {}
        }
    }
    let u = &message.usage;
    reading.usage = (u.input, u.output, u.cache_read, u.cache_write);
    reading.stop = Some(message.stop_reason);
    reading
}

// ------------------------------------------------------------------ chunkings

/// The recording as an SSE body: `event:` lines where the API names its events, a final
/// `data: [DONE]` for Chat Completions (every such server sends one).
fn sse_body(api: Api, lines: &[Line], eol: &str) -> Vec<u8> {
    let mut body = String::new();
    let mut done = false;
    for line in lines {
        match line {
            Line::Comment(comment) => body.push_str(&format!("{comment}{eol}{eol}")),
            Line::Data(data) => {
                if api != Api::OpenAiChat
                    && let Ok(value) = serde_json::from_str::<Value>(data)
                    && let Some(kind) = value.get("type").and_then(Value::as_str)
                {
                    body.push_str(&format!("event: {kind}{eol}"));
                }
                done |= data.trim() == "[DONE]";
                body.push_str(&format!("data: {data}{eol}{eol}"));
            }
        }
    }
    if api == Api::OpenAiChat && !done {
        body.push_str(&format!("data: [DONE]{eol}{eol}"));
    }
    body.into_bytes()
}

/// Cuts `bytes` at random places, always including one inside a multi-byte UTF-8 character
/// (when there is one) and one inside a line.
fn random_cuts(bytes: &[u8], rng: &mut StdRng, max_piece: usize) -> Vec<Vec<u8>> {
    let mut cuts = std::collections::BTreeSet::new();
    if let Some(at) = bytes.iter().position(|b| *b >= 0x80 && (*b & 0xC0) == 0x80) {
        cuts.insert(at); // a continuation byte: the cut falls inside a character
    }
    if let Some(at) = bytes.iter().position(|b| *b == b'{') {
        cuts.insert(at + 1); // inside the first JSON line
    }
    let mut at = 0;
    while at < bytes.len() {
        at += rng.random_range(1..=max_piece);
        cuts.insert(at.min(bytes.len()));
    }
    let mut pieces = Vec::new();
    let mut start = 0;
    for cut in cuts.into_iter().filter(|c| *c > 0 && *c <= bytes.len()) {
        pieces.push(bytes[start..cut].to_vec());
        start = cut;
    }
    if start < bytes.len() {
        pieces.push(bytes[start..].to_vec());
    }
    pieces
}

/// The chunkings each recording is replayed in: (label, pieces).
fn chunkings(api: Api, lines: &[Line], seed: u64) -> Vec<(String, Vec<Vec<u8>>)> {
    let mut rng = StdRng::seed_from_u64(seed);
    let lf = sse_body(api, lines, "\n");
    let crlf = sse_body(api, lines, "\r\n");
    vec![
        // Pieces of a few bytes, but no more than ~500 of them: a megabyte-long line cut into
        // 17-byte reads would only measure the SSE parser's buffering.
        (
            format!("small random pieces, LF, seed {seed}"),
            random_cuts(&lf, &mut rng, (lf.len() / 500).max(17)),
        ),
        (format!("random pieces, CRLF, seed {seed}"), random_cuts(&crlf, &mut rng, 300)),
        (format!("large random pieces, LF, seed {seed}"), random_cuts(&lf, &mut rng, 5000)),
    ]
}

// ------------------------------------------------------------------ the test

/// Replays one recording in every chunking; returns the failures.
async fn replay(path: &Path, seed: u64) -> Vec<String> {
    let lines = read_recording(path);
    let payloads = payloads(&lines);
    let api = api_of(path, &payloads);
    let want = expected(api, &payloads);
    let name = path.file_name().unwrap().to_string_lossy().to_string();
    let mut failures = Vec::new();
    let mut last = None;
    for (label, pieces) in chunkings(api, &lines, seed) {
        eprintln!("replaying {name} [{label}]");
        let fake = FakeProvider::start(vec![RawReply::event_stream(pieces)]).await.unwrap();
        let events = collect(&provider_with(settings(&fake, 0)), request(api, hello())).await;
        let (message, kind) = outcome(&events);
        let problem = match (&want, kind) {
            (Expected::Message(reading), None) => {
                let got = observed(api, &message);
                (got != *reading).then(|| format!("expected {reading:#?}\n got {got:#?}"))
            }
            (Expected::Message(_), Some(kind)) => {
                Some(format!("failed ({kind:?}): {:?}", message.error_message))
            }
            (Expected::Error(text), Some(kind)) => {
                let said = message.error_message.clone().unwrap_or_default();
                (!said.contains(text.as_str()) || kind == ProviderErrorKind::Protocol)
                    .then(|| format!("expected the error {text:?}, got ({kind:?}) {said:?}"))
            }
            (Expected::Error(text), None) => {
                Some(format!("expected the error {text:?}, got a complete message"))
            }
        };
        let violations = fake.take_violations();
        drop(fake);
        if let Some(problem) = problem {
            failures.push(format!("{name} [{label}]: {problem}"));
        }
        if !violations.is_empty() {
            failures.push(format!("{name}: invalid request: {violations:?}"));
        }
        if kind.is_none() {
            last = Some(message);
        }
    }
    // The request after the recorded reply (with results for its tool calls) must be one the
    // server accepts: what it replays of the reply (reasoning, ids) is checked by the validator.
    if let Some(reply) = last {
        let mut history = hello();
        let results: Vec<Message> = reply
            .tool_calls()
            .map(|call| {
                Message::ToolResult(ToolResultMessage {
                    tool_call_id: call.id.clone(),
                    tool_name: call.name.clone(),
                    content: vec![ContentBlock::text("done")],
                    is_error: false,
                    details: None,
                    timestamp: 2,
                })
            })
            .collect();
        history.push(Message::Assistant(reply));
        history.extend(results);
        history.push(Message::User(UserMessage::text("and then?", 3)));
        let fake = FakeProvider::start(vec![Reply::text("ok")]).await.unwrap();
        let events = collect(&provider_with(settings(&fake, 0)), request(api, history)).await;
        let (message, kind) = outcome(&events);
        let violations = fake.take_violations();
        drop(fake);
        if kind.is_some() || !violations.is_empty() {
            failures.push(format!(
                "{name}: the next request was refused: {:?} {violations:?}",
                message.error_message
            ));
        }
    }
    failures
}

async fn replay_all(files: &[PathBuf]) {
    assert!(!files.is_empty(), "no recordings found");
    // A fresh seed each run (printed with any failure), unless REIN_REPLAY_SEED fixes it.
    let base: u64 = std::env::var("REIN_REPLAY_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| rand::rng().random());
    // REIN_REPLAY_ONLY=TEXT replays only the recordings whose name contains TEXT.
    let only = std::env::var("REIN_REPLAY_ONLY").unwrap_or_default();
    let mut failures = Vec::new();
    for (i, file) in files.iter().enumerate() {
        if !file.to_string_lossy().contains(&only) {
            continue;
        }
        failures.extend(replay(file, base.wrapping_add(i as u64)).await);
    }
    assert!(
        failures.is_empty(),
        "{} of {} recordings failed (REIN_REPLAY_SEED={base}):\n{}",
        failures.len(),
        files.len(),
        failures.join("\n\n")
    );
}

#[tokio::test]
async fn every_shared_recording_parses_in_every_chunking() {
    let Some(dir) = shared_dir() else {
        println!(
            "skipped: no shared recordings (looked beside the checkout in \
             ../shared/provider-recordings, in $REIN_RECORDINGS_DIR and in \
             /work/shared/provider-recordings)"
        );
        return;
    };
    let files = recordings(&dir);
    println!("replaying {} recordings from {}", files.len(), dir.display());
    replay_all(&files).await;
}

#[tokio::test]
async fn every_own_recording_parses_in_every_chunking() {
    replay_all(&recordings(&own_dir())).await;
}
