//! Behaviour real servers showed that the scripted fake never did: stream errors whose code is
//! null or a number, servers that ignore `stream: true`, and servers that reject a parameter.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code

mod common;

use common::*;
use rein_ai::ProviderErrorKind;
use rein_ai::compat::CompatOverride;
use rein_protocol::message::{ContentBlock, StopReason};
use rein_protocol::model::Api;
use rein_testkit::fake_provider::{FakeOptions, FakeProvider, RawReply, Reply};
use serde_json::json;

fn sse(lines: &[serde_json::Value], named: bool) -> Vec<Vec<u8>> {
    lines
        .iter()
        .map(|line| {
            let name = match (named, line.get("type").and_then(|t| t.as_str())) {
                (true, Some(kind)) => format!("event: {kind}\n"),
                _ => String::new(),
            };
            format!("{name}data: {line}\n\n").into_bytes()
        })
        .collect()
}

#[tokio::test]
async fn stream_errors_with_null_or_numeric_codes_are_retried() {
    let cases = [
        (
            Api::OpenAiResponses,
            sse(
                &[json!({"type": "error", "sequence_number": 1, "error":
                    {"type": "server_error", "code": null, "message": "try again", "param": null}})],
                true,
            ),
        ),
        (
            Api::OpenAiChat,
            sse(
                &[json!({"error": {"code": 502, "message": "Provider returned error"},
                    "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "error"}]})],
                false,
            ),
        ),
    ];
    for (api, failing) in cases {
        let fake = FakeProvider::start(vec![RawReply::event_stream(failing), Reply::text("fine")])
            .await
            .unwrap();
        let events = collect(&provider(&fake), request(api, hello())).await;
        let (message, kind) = outcome(&events);
        assert_eq!(kind, None, "{api:?}: {:?}", message.error_message);
        assert_eq!(message.text(), "fine");
        assert_eq!(retries(&events).len(), 1, "{api:?}");
    }
}

#[tokio::test]
async fn a_json_body_instead_of_a_stream_is_a_complete_reply() {
    let bodies = [
        (
            Api::OpenAiChat,
            json!({"id": "c1", "object": "chat.completion", "choices": [{"index": 0,
                "message": {"role": "assistant", "content": "from json",
                    "reasoning_content": "thought",
                    "tool_calls": [{"id": "call_1", "type": "function",
                        "function": {"name": "bash", "arguments": "{\"command\":\"ls\"}"}}]},
                "finish_reason": "tool_calls"}],
                "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}}),
        ),
        (
            Api::OpenAiResponses,
            json!({"id": "resp_1", "object": "response", "status": "completed", "output": [
                {"type": "reasoning", "id": "rs_1", "encrypted_content": "enc",
                    "summary": [{"type": "summary_text", "text": "thought"}]},
                {"type": "message", "id": "msg_1", "role": "assistant",
                    "content": [{"type": "output_text", "text": "from json", "annotations": []}]},
                {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "bash",
                    "arguments": "{\"command\":\"ls\"}"}],
                "usage": {"input_tokens": 7, "output_tokens": 3, "total_tokens": 10}}),
        ),
        (
            Api::Anthropic,
            json!({"id": "msg_1", "type": "message", "role": "assistant", "content": [
                {"type": "thinking", "thinking": "thought", "signature": "sig"},
                {"type": "text", "text": "from json"},
                {"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"command": "ls"}}],
                "stop_reason": "tool_use", "usage": {"input_tokens": 7, "output_tokens": 3}}),
        ),
    ];
    for (api, body) in bodies {
        let fake = FakeProvider::start(vec![RawReply::json(&body)]).await.unwrap();
        let events = collect(&provider(&fake), request(api, hello())).await;
        let (message, kind) = outcome(&events);
        assert_eq!(kind, None, "{api:?}: {:?}", message.error_message);
        assert!(retries(&events).is_empty(), "{api:?} was retried");
        assert_eq!(message.text(), "from json", "{api:?}");
        assert!(
            message.content.iter().any(
                |b| matches!(b, ContentBlock::Thinking { thinking, .. } if thinking == "thought")
            ),
            "{api:?}: {:?}",
            message.content
        );
        let call = message.tool_calls().next().unwrap();
        assert_eq!((call.name.as_str(), &call.arguments), ("bash", &json!({"command": "ls"})));
        assert_eq!((message.usage.input, message.usage.output), (7, 3), "{api:?}");
        assert_eq!(message.stop_reason, StopReason::ToolUse);
    }
}

#[tokio::test]
async fn a_rejected_parameter_fails_once_naming_the_setting_that_drops_it() {
    // vLLM's answer to a parameter it does not know.
    let body = json!({"object": "error", "message":
        "[{'type': 'extra_forbidden', 'loc': ('body', 'stream_options'), 'msg': 'Extra inputs are not permitted'}]",
        "type": "BadRequestError", "param": null, "code": 400});
    // The fake answers 400 only to invalid requests: a bare server sends the error instead.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let text = body.to_string();
    let server = tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut served = 0;
        while let Ok((mut socket, _)) = listener.accept().await {
            served += 1;
            let mut buffer = vec![0u8; 65536];
            let _ = socket.read(&mut buffer).await;
            let response = format!(
                "HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
                text.len()
            );
            let _ = socket.write_all(response.as_bytes()).await;
            let _ = socket.shutdown().await;
            if served > 5 {
                break;
            }
        }
    });
    let unused = FakeProvider::start_with(
        vec![],
        FakeOptions { skip_validation: true, ..FakeOptions::default() },
    )
    .await
    .unwrap();
    let mut settings = settings(&unused, 3);
    settings.base_url = format!("http://{address}/v1");
    let events = collect(&provider_with(settings), request(Api::OpenAiChat, hello())).await;
    let (message, kind) = outcome(&events);
    assert_eq!(kind, Some(ProviderErrorKind::Http));
    assert!(retries(&events).is_empty(), "a rejected parameter is not retried");
    let error = message.error_message.unwrap();
    assert!(
        error.contains("stream_usage = false")
            && error.contains("[providers.fake.models.\"fake-model\".compat]"),
        "{error}"
    );
    server.abort();
}

#[tokio::test]
async fn configured_compat_settings_reach_the_request() {
    let fake = FakeProvider::start(vec![Reply::text("ok")]).await.unwrap();
    let mut settings = settings(&fake, 0);
    settings.compat.insert(
        "fake-model".into(),
        CompatOverride { stream_usage: Some(false), ..CompatOverride::default() },
    );
    let events = collect(&provider_with(settings), request(Api::OpenAiChat, hello())).await;
    assert_eq!(outcome(&events).1, None);
    let body = &fake.requests()[0].body;
    assert!(body.get("stream_options").is_none(), "{body}");
}
