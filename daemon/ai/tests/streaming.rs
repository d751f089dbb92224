//! Scripted streams of every wire API through the fake provider, assembled and compared
//! exactly: block order, tool-call arguments, usage, cost and stop reason.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

mod common;

use common::*;
use rein_ai::AssistantMessageEvent;
use rein_protocol::event::AssistantDelta;
use rein_protocol::message::{AssistantMessage, ContentBlock, Cost, StopReason, ToolCall, Usage};
use rein_protocol::model::Api;
use rein_testkit::fake_provider::{FakeOptions, FakeProvider, Reply, ScriptToolCall, ScriptUsage};
use serde_json::{Value, json};

fn rich_reply() -> Reply {
    Reply {
        thinking: Some("Consider the files… ünïcödé 🚀 carefully.".into()),
        thinking_signature: Some("sig-abc".into()),
        text: Some("Let me look — 日本語 text.".into()),
        tool_calls: vec![
            ScriptToolCall {
                id: Some("call_one".into()),
                name: "bash".into(),
                arguments: json!({"command": "ls -la | grep \"é\"", "timeout": 30}),
                raw_arguments: None,
            },
            ScriptToolCall {
                id: Some("call_two".into()),
                name: "read".into(),
                arguments: json!({"path": "src/main.rs", "lines": [1, 2, 3]}),
                raw_arguments: None,
            },
        ],
        usage: Some(ScriptUsage { input: 1000, output: 200, cache_read: 500, cache_write: 0 }),
        delta_size: Some(3),
        ..Reply::default()
    }
}

fn expected(api: Api, actual_signature: Option<String>) -> AssistantMessage {
    let signature = match api {
        Api::OpenAiChat => None,
        Api::Anthropic => Some("sig-abc".to_string()),
        Api::OpenAiResponses => actual_signature,
    };
    // Responses ids also name the output item (`call_id|fc_id`), for replay.
    let id = |call: &str, n: u32| match api {
        Api::OpenAiResponses => format!("{call}|fc_{n}"),
        _ => call.to_string(),
    };
    AssistantMessage {
        content: vec![
            ContentBlock::Thinking {
                thinking: "Consider the files… ünïcödé 🚀 carefully.".into(),
                signature,
                redacted: false,
            },
            ContentBlock::text("Let me look — 日本語 text."),
            ContentBlock::ToolCall(ToolCall {
                id: id("call_one", 1),
                name: "bash".into(),
                arguments: json!({"command": "ls -la | grep \"é\"", "timeout": 30}),
            }),
            ContentBlock::ToolCall(ToolCall {
                id: id("call_two", 2),
                name: "read".into(),
                arguments: json!({"path": "src/main.rs", "lines": [1, 2, 3]}),
            }),
        ],
        api: api.as_str().into(),
        provider: "fake".into(),
        model: "fake-model".into(),
        usage: Usage {
            input: 1000,
            output: 200,
            cache_read: 500,
            cache_write: 0,
            total_tokens: 1700,
            cost: Cost {
                input: 0.001,
                output: 0.0004,
                cache_read: 0.00025,
                cache_write: 0.0,
                total: 0.001 + 0.0004 + 0.00025,
            },
        },
        stop_reason: StopReason::ToolUse,
        error_message: None,
        timestamp: 0,
    }
}

fn thinking_signature(message: &AssistantMessage) -> Option<String> {
    match &message.content[0] {
        ContentBlock::Thinking { signature, .. } => signature.clone(),
        _ => None,
    }
}

/// Checks the message against the expectation and the deltas against the message.
fn check(api: Api, events: &[AssistantMessageEvent]) {
    let (mut message, error) = outcome(events);
    assert_eq!(error, None, "{api}: {message:?}");
    assert!(message.timestamp > 0);
    message.timestamp = 0;
    let signature = thinking_signature(&message);
    if api == Api::OpenAiResponses {
        let item: Value = serde_json::from_str(signature.as_deref().unwrap()).unwrap();
        assert_eq!(item["type"], "reasoning");
        assert_eq!(item["encrypted_content"], "sig-abc");
    }
    assert_eq!(message, expected(api, signature), "{api}");
    // The deltas rebuild the same blocks.
    let mut text = String::new();
    let mut thinking = String::new();
    let mut ends = Vec::new();
    for event in events {
        match event {
            AssistantMessageEvent::Delta(AssistantDelta::TextDelta { index, delta }) => {
                assert_eq!(*index, 1);
                text.push_str(delta);
            }
            AssistantMessageEvent::Delta(AssistantDelta::ThinkingDelta { index, delta }) => {
                assert_eq!(*index, 0);
                thinking.push_str(delta);
            }
            AssistantMessageEvent::Delta(AssistantDelta::ToolCallEnd { index, call }) => {
                ends.push((*index, call.clone()));
            }
            _ => {}
        }
    }
    assert_eq!(text, message.text());
    assert!(thinking.starts_with("Consider"));
    assert_eq!(ends.len(), 2);
    assert_eq!(ends[0].0, 2);
    assert_eq!(ContentBlock::ToolCall(ends[1].1.clone()), message.content[3]);
}

#[tokio::test]
async fn every_api_assembles_a_rich_reply_exactly() {
    for api in APIS {
        let fake = FakeProvider::start(vec![rich_reply()]).await.unwrap();
        let events = collect(&provider(&fake), request(api, hello())).await;
        check(api, &events);
        assert!(retries(&events).is_empty());
        assert_eq!(fake.requests().len(), 1);
    }
}

#[tokio::test]
async fn tiny_writes_split_utf8_and_crlf_lines_change_nothing() {
    for api in APIS {
        let reply = Reply { crlf: true, ..rich_reply() };
        let options = FakeOptions { chunk_size: Some(1), ..FakeOptions::default() };
        let fake =
            FakeProvider::start_with(vec![reply.clone(), rich_reply()], options).await.unwrap();
        let provider = provider(&fake);
        check(api, &collect(&provider, request(api, hello())).await);
        let fake =
            FakeProvider::start(vec![Reply { chunk_size: Some(2), ..rich_reply() }]).await.unwrap();
        check(api, &collect(&common::provider(&fake), request(api, hello())).await);
    }
}

#[tokio::test]
async fn plain_text_stops_and_length_is_reported() {
    for api in APIS {
        let length = Reply {
            stop: Some(rein_testkit::fake_provider::ScriptStop::Length),
            ..Reply::text("cut")
        };
        let fake = FakeProvider::start(vec![Reply::text("hello world"), length]).await.unwrap();
        let provider = provider(&fake);
        let (message, error) = outcome(&collect(&provider, request(api, hello())).await);
        assert_eq!(error, None);
        assert_eq!(message.content, vec![ContentBlock::text("hello world")]);
        assert_eq!(message.stop_reason, StopReason::Stop);
        assert_eq!((message.usage.input, message.usage.output), (10, 5));
        let (message, _) = outcome(&collect(&provider, request(api, hello())).await);
        assert_eq!(message.stop_reason, StopReason::Length, "{api}");
    }
}

#[tokio::test]
async fn malformed_tool_arguments_are_kept_as_a_string() {
    for api in APIS {
        let call = ScriptToolCall {
            id: Some("call_bad".into()),
            name: "bash".into(),
            raw_arguments: Some("{\"command\": \"ls".into()),
            ..ScriptToolCall::default()
        };
        let reply = Reply { tool_calls: vec![call], ..Reply::default() };
        let fake = FakeProvider::start(vec![reply]).await.unwrap();
        let (message, error) = outcome(&collect(&provider(&fake), request(api, hello())).await);
        assert_eq!(error, None);
        let call = message.tool_calls().next().unwrap();
        assert_eq!(call.arguments, json!("{\"command\": \"ls"), "{api}");
        assert_eq!(message.stop_reason, StopReason::ToolUse);
    }
}

#[tokio::test]
async fn anthropic_redacted_thinking_and_cache_writes_are_kept() {
    use rein_testkit::fake_provider::ScriptBlock;
    let reply = Reply {
        blocks: vec![
            ScriptBlock::Thinking {
                thinking: String::new(),
                signature: Some("opaque".into()),
                redacted: true,
            },
            ScriptBlock::Text { text: "ok".into() },
        ],
        usage: Some(ScriptUsage { input: 3, output: 4, cache_read: 5, cache_write: 6 }),
        ..Reply::default()
    };
    let fake = FakeProvider::start(vec![reply]).await.unwrap();
    let (message, error) =
        outcome(&collect(&provider(&fake), request(Api::Anthropic, hello())).await);
    assert_eq!(error, None);
    assert_eq!(
        message.content[0],
        ContentBlock::Thinking {
            thinking: String::new(),
            signature: Some("opaque".into()),
            redacted: true
        }
    );
    assert_eq!(message.usage.cache_write, 6);
    assert_eq!(message.usage.total_tokens, 18);
    assert!((message.usage.cost.cache_write - 6.0 * 4.0 / 1e6).abs() < 1e-12);
}

#[tokio::test]
async fn each_api_sends_its_own_auth_headers() {
    for api in APIS {
        let fake = FakeProvider::start(vec![Reply::text("x")]).await.unwrap();
        collect(&provider(&fake), request(api, hello())).await;
        let sent = &fake.requests()[0];
        assert_eq!(sent.method, "POST");
        assert_eq!(sent.body["stream"], true);
        assert_eq!(sent.body["model"], "fake-model");
        match api {
            Api::Anthropic => {
                assert_eq!(sent.path, "/v1/messages");
                assert_eq!(sent.header("x-api-key"), Some(KEY));
                assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
                assert_eq!(sent.header("authorization"), None);
            }
            Api::OpenAiChat | Api::OpenAiResponses => {
                let path =
                    if api == Api::OpenAiChat { "/v1/chat/completions" } else { "/v1/responses" };
                assert_eq!(sent.path, path);
                assert_eq!(sent.header("authorization"), Some(format!("Bearer {KEY}").as_str()));
            }
        }
    }
}

#[tokio::test]
async fn a_missing_key_fails_without_a_request_and_names_the_variable() {
    let fake = FakeProvider::start(vec![Reply::text("x")]).await.unwrap();
    let mut settings = settings(&fake, 3);
    settings.api_key_env = Some("UNSET_TEST_KEY".into());
    let events = collect(&provider_with(settings), request(Api::OpenAiChat, hello())).await;
    let (message, error) = outcome(&events);
    assert_eq!(error, Some(rein_ai::ProviderErrorKind::Auth));
    assert!(message.error_message.unwrap().contains("UNSET_TEST_KEY"));
    assert!(fake.requests().is_empty());
}

#[tokio::test]
async fn without_a_key_variable_no_key_is_sent() {
    let fake = FakeProvider::start(vec![Reply::text("x")]).await.unwrap();
    let mut settings = settings(&fake, 3);
    settings.api_key_env = None;
    settings.headers = vec![("x-extra".into(), "1".into())];
    let (_, error) =
        outcome(&collect(&provider_with(settings), request(Api::OpenAiChat, hello())).await);
    assert_eq!(error, None);
    let sent = &fake.requests()[0];
    assert_eq!(sent.header("authorization"), None);
    assert_eq!(sent.header("x-extra"), Some("1"));
}

/// Rebuilds the blocks from the deltas alone (signatures aside, which deltas do not carry).
fn rebuild(events: &[AssistantMessageEvent]) -> Vec<ContentBlock> {
    let mut blocks: Vec<ContentBlock> = Vec::new();
    let slot = |blocks: &mut Vec<ContentBlock>, index: usize, empty: ContentBlock| {
        while blocks.len() <= index {
            blocks.push(empty.clone());
        }
    };
    for event in events {
        let AssistantMessageEvent::Delta(delta) = event else { continue };
        match delta {
            AssistantDelta::TextDelta { index, delta } => {
                slot(&mut blocks, *index, ContentBlock::text(""));
                if let ContentBlock::Text { text } = &mut blocks[*index] {
                    text.push_str(delta);
                }
            }
            AssistantDelta::ThinkingDelta { index, delta } => {
                let empty = ContentBlock::Thinking {
                    thinking: String::new(),
                    signature: None,
                    redacted: false,
                };
                slot(&mut blocks, *index, empty.clone());
                if matches!(blocks[*index], ContentBlock::Text { ref text } if text.is_empty()) {
                    blocks[*index] = empty;
                }
                if let ContentBlock::Thinking { thinking, .. } = &mut blocks[*index] {
                    thinking.push_str(delta);
                }
            }
            AssistantDelta::ToolCallEnd { index, call } => {
                slot(&mut blocks, *index, ContentBlock::text(""));
                blocks[*index] = ContentBlock::ToolCall(call.clone());
            }
            _ => {}
        }
    }
    blocks
}

fn without_signatures(blocks: &[ContentBlock]) -> Vec<ContentBlock> {
    blocks
        .iter()
        .map(|block| match block {
            ContentBlock::Thinking { thinking, .. } => ContentBlock::Thinking {
                thinking: thinking.clone(),
                signature: None,
                redacted: false,
            },
            other => other.clone(),
        })
        .collect()
}

#[tokio::test]
async fn interleaved_blocks_keep_their_order_and_deltas_rebuild_them() {
    use rein_testkit::fake_provider::ScriptBlock;
    let call = |id: &str, n: i64| {
        ScriptBlock::ToolCall(ScriptToolCall {
            id: Some(id.into()),
            name: "bash".into(),
            arguments: json!({"n": n, "pad": "x".repeat(40)}),
            raw_arguments: None,
        })
    };
    let reply = Reply {
        blocks: vec![
            ScriptBlock::Text { text: "first".into() },
            call("call_a", 1),
            ScriptBlock::Thinking {
                thinking: "then think".into(),
                signature: None,
                redacted: false,
            },
            ScriptBlock::Text { text: "second".into() },
            call("call_b", 2),
            call("call_c", 3),
        ],
        delta_size: Some(5),
        ..Reply::default()
    };
    for api in APIS {
        let fake = FakeProvider::start(vec![reply.clone()]).await.unwrap();
        let events = collect(&provider(&fake), request(api, hello())).await;
        let (message, error) = outcome(&events);
        assert_eq!(error, None);
        let kinds: Vec<&str> = message
            .content
            .iter()
            .map(|b| match b {
                ContentBlock::Text { .. } => "text",
                ContentBlock::Thinking { .. } => "thinking",
                ContentBlock::ToolCall(_) => "tool",
                ContentBlock::Image { .. } => "image",
            })
            .collect();
        assert_eq!(kinds, vec!["text", "tool", "thinking", "text", "tool", "tool"], "{api}");
        assert_eq!(rebuild(&events), without_signatures(&message.content), "{api}");
        let args: Vec<i64> =
            message.tool_calls().map(|c| c.arguments["n"].as_i64().unwrap()).collect();
        assert_eq!(args, vec![1, 2, 3]);
    }
}
