//! A history written by several providers, sent to each wire API: the request bodies the
//! fake provider recorded must carry valid tool-call ids (the same for a call and its result)
//! and no thinking signature from another provider.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

mod common;

use common::*;
use rein_ai::ids::is_valid;
use rein_protocol::message::{
    AssistantMessage, ContentBlock, Message, StopReason, ToolCall, ToolResultMessage, Usage,
    UserMessage,
};
use rein_protocol::model::Api;
use rein_testkit::fake_provider::{FakeProvider, Reply};
use serde_json::{Value, json};

fn assistant(provider: &str, api: Api, content: Vec<ContentBlock>) -> Message {
    Message::Assistant(AssistantMessage {
        content,
        api: api.as_str().into(),
        provider: provider.into(),
        model: "m".into(),
        usage: Usage::default(),
        stop_reason: StopReason::ToolUse,
        error_message: None,
        timestamp: 2,
    })
}

fn call(id: &str) -> ContentBlock {
    ContentBlock::ToolCall(ToolCall {
        id: id.into(),
        name: "bash".into(),
        arguments: json!({"command": "ls"}),
    })
}

fn result(id: &str) -> Message {
    Message::ToolResult(ToolResultMessage {
        tool_call_id: id.into(),
        tool_name: "bash".into(),
        content: vec![ContentBlock::text(format!("output of {id}"))],
        is_error: false,
        details: None,
        timestamp: 3,
    })
}

const LONG_ID: &str = "call_0123456789012345678901234567890123456789012345678901234567890123456789";
const IDS: [&str; 4] = ["toolu_01A", "call_R|fc_R", "fc/../odd id", LONG_ID];

fn history() -> Vec<Message> {
    let reasoning_item = json!({"type": "reasoning", "id": "rs_1", "encrypted_content": "encR",
        "summary": [{"type": "summary_text", "text": "think R"}]});
    vec![
        Message::User(UserMessage::text("hi", 1)),
        // Anthropic, same provider name as the target ("fake").
        assistant(
            "fake",
            Api::Anthropic,
            vec![
                ContentBlock::Thinking {
                    thinking: "think A".into(),
                    signature: Some("sigA".into()),
                    redacted: false,
                },
                ContentBlock::Thinking {
                    thinking: String::new(),
                    signature: Some("REDACTED_DATA".into()),
                    redacted: true,
                },
                ContentBlock::text("a"),
                call(IDS[0]),
            ],
        ),
        result(IDS[0]),
        // Responses, same provider name.
        assistant(
            "fake",
            Api::OpenAiResponses,
            vec![
                ContentBlock::Thinking {
                    thinking: "think R".into(),
                    signature: Some(reasoning_item.to_string()),
                    redacted: false,
                },
                call(IDS[1]),
                call(IDS[2]),
            ],
        ),
        result(IDS[1]),
        result(IDS[2]),
        // Chat from another provider entirely.
        assistant(
            "local",
            Api::OpenAiChat,
            vec![
                ContentBlock::Thinking {
                    thinking: "think C".into(),
                    signature: None,
                    redacted: false,
                },
                call(IDS[3]),
            ],
        ),
        result(IDS[3]),
        Message::User(UserMessage::text("continue", 4)),
    ]
}

/// (call ids in order, result ids in order) as the body carries them.
fn wire_ids(api: Api, body: &Value) -> (Vec<String>, Vec<String>) {
    let mut calls = Vec::new();
    let mut results = Vec::new();
    let text = |v: &Value| v.as_str().unwrap().to_string();
    match api {
        Api::OpenAiChat => {
            for m in body["messages"].as_array().unwrap() {
                for c in m["tool_calls"].as_array().into_iter().flatten() {
                    calls.push(text(&c["id"]));
                }
                if m["role"] == "tool" {
                    results.push(text(&m["tool_call_id"]));
                }
            }
        }
        Api::OpenAiResponses => {
            for item in body["input"].as_array().unwrap() {
                match item["type"].as_str() {
                    Some("function_call") => calls.push(text(&item["call_id"])),
                    Some("function_call_output") => results.push(text(&item["call_id"])),
                    _ => {}
                }
            }
        }
        Api::Anthropic => {
            for m in body["messages"].as_array().unwrap() {
                for block in m["content"].as_array().into_iter().flatten() {
                    match block["type"].as_str() {
                        Some("tool_use") => calls.push(text(&block["id"])),
                        Some("tool_result") => results.push(text(&block["tool_use_id"])),
                        _ => {}
                    }
                }
            }
        }
    }
    (calls, results)
}

#[tokio::test]
async fn switching_apis_mid_history_sends_valid_ids_and_no_foreign_signatures() {
    for api in APIS {
        let fake = FakeProvider::start(vec![Reply::text("ok")]).await.unwrap();
        let (_, error) = outcome(&collect(&provider(&fake), request(api, history())).await);
        assert_eq!(error, None);
        let body = fake.requests()[0].body.clone();
        let text = body.to_string();

        let (calls, results) = wire_ids(api, &body);
        assert_eq!(calls.len(), 4, "{api}: {body:#}");
        assert_eq!(calls, results, "{api}: a call and its result share one id");
        for id in &calls {
            assert!(is_valid(api, id), "{api}: invalid id {id}");
        }
        let distinct: std::collections::HashSet<_> = calls.iter().collect();
        assert_eq!(distinct.len(), 4);
        // Ids that were already valid for the target are kept as they are.
        if api != Api::OpenAiResponses {
            assert_eq!(calls[0], IDS[0]);
        }

        // Reasoning from the chat provider is only ever shown as text.
        assert!(text.contains("<thinking>\\nthink C\\n</thinking>"), "{api}");
        match api {
            Api::Anthropic => {
                let assistant = &body["messages"][1]["content"];
                assert_eq!(
                    assistant[0],
                    json!({"type": "thinking", "thinking": "think A", "signature": "sigA"})
                );
                assert_eq!(
                    assistant[1],
                    json!({"type": "redacted_thinking", "data": "REDACTED_DATA"})
                );
                assert!(!text.contains("encR"));
                assert!(text.contains("<thinking>\\nthink R\\n</thinking>"));
                // The system prompt and the tool results are there too.
                assert_eq!(body["system"][0]["text"], "You are a test.");
                assert_eq!(body["messages"][2]["content"][0]["type"], "tool_result");
                assert_eq!(body["messages"][4]["content"].as_array().unwrap().len(), 2);
            }
            Api::OpenAiResponses => {
                let input = body["input"].as_array().unwrap();
                assert!(
                    input
                        .iter()
                        .any(|i| i["type"] == "reasoning" && i["encrypted_content"] == "encR")
                );
                assert!(!text.contains("sigA") && !text.contains("REDACTED_DATA"));
                assert!(text.contains("<thinking>\\nthink A\\n</thinking>"));
                // The native call keeps its output item id next to the replayed reasoning.
                assert!(input.iter().any(|i| i["type"] == "function_call"
                    && i["call_id"] == "call_R"
                    && i["id"] == "fc_R"));
                assert_eq!(body["instructions"], "You are a test.");
            }
            Api::OpenAiChat => {
                assert!(
                    !text.contains("sigA")
                        && !text.contains("REDACTED_DATA")
                        && !text.contains("encR")
                );
                assert!(text.contains("<thinking>\\nthink A\\n</thinking>"));
                assert!(text.contains("<thinking>\\nthink R\\n</thinking>"));
                assert_eq!(
                    body["messages"][0],
                    json!({"role": "system", "content": "You are a test."})
                );
            }
        }
    }
}

#[tokio::test]
async fn images_reach_models_that_take_them_and_become_a_note_otherwise() {
    let user = Message::User(UserMessage {
        content: vec![
            ContentBlock::text("look"),
            ContentBlock::Image { data: "iVBORw0KGgo=".into(), mime_type: "image/png".into() },
        ],
        timestamp: 1,
    });
    for api in APIS {
        for images in [true, false] {
            let fake = FakeProvider::start(vec![Reply::text("ok")]).await.unwrap();
            let mut request = request(api, vec![user.clone()]);
            request.model.images = images;
            collect(&provider(&fake), request).await;
            let text = fake.requests()[0].body.to_string();
            assert_eq!(text.contains("iVBORw0KGgo="), images, "{api}");
            assert_eq!(text.contains("image omitted"), !images, "{api}");
        }
    }
}

#[tokio::test]
async fn chat_tool_images_follow_the_run_of_tool_messages() {
    let image = ContentBlock::Image { data: "AAAA".into(), mime_type: "image/png".into() };
    let mut first = result("call_a");
    if let Message::ToolResult(r) = &mut first {
        r.content.push(image);
    }
    let history = vec![
        Message::User(UserMessage::text("hi", 1)),
        assistant("fake", Api::OpenAiChat, vec![call("call_a"), call("call_b")]),
        first,
        result("call_b"),
    ];
    let fake = FakeProvider::start(vec![Reply::text("ok")]).await.unwrap();
    collect(&provider(&fake), request(Api::OpenAiChat, history)).await;
    let body = fake.requests()[0].body.clone();
    let roles: Vec<&str> =
        body["messages"].as_array().unwrap().iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, vec!["system", "user", "assistant", "tool", "tool", "user"]);
    assert_eq!(body["messages"][5]["content"][1]["image_url"]["url"], "data:image/png;base64,AAAA");
}
