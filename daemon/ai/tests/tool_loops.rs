//! Whole tool loops against the fake provider, whose request validator holds every request to
//! its API's documented rules: the second request after a reply with thinking and tool
//! calls, on each API, and the same history sent on after a switch to every other API.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code

mod common;

use common::*;
use rein_protocol::message::{ContentBlock, Message, ToolResultMessage};
use rein_protocol::model::ThinkingLevel;
use rein_testkit::fake_provider::{FakeProvider, Reply, ScriptToolCall};
use serde_json::json;

fn thinking_tool_reply() -> Reply {
    Reply {
        thinking: Some("List the files first.".into()),
        thinking_signature: Some("c2lnbmF0dXJl".into()),
        text: Some("Looking.".into()),
        tool_calls: vec![ScriptToolCall {
            name: "bash".into(),
            arguments: json!({"command": "ls"}),
            ..ScriptToolCall::default()
        }],
        ..Reply::default()
    }
}

fn results_for(message: &rein_protocol::message::AssistantMessage) -> Vec<Message> {
    message
        .tool_calls()
        .map(|call| {
            Message::ToolResult(ToolResultMessage {
                tool_call_id: call.id.clone(),
                tool_name: call.name.clone(),
                content: vec![ContentBlock::text("a.rs\nb.rs")],
                is_error: false,
                details: None,
                timestamp: 3,
            })
        })
        .collect()
}

#[tokio::test]
async fn second_requests_after_thinking_and_tool_calls_pass_every_api_validator() {
    for first_api in APIS {
        // The first reply, on `first_api`, with thinking switched on.
        let fake = FakeProvider::start(vec![thinking_tool_reply()]).await.unwrap();
        let mut first = request(first_api, hello());
        first.model.max_output_tokens = 64_000;
        first.options.thinking = ThinkingLevel::Medium;
        let (reply, kind) = outcome(&collect(&provider(&fake), first).await);
        assert_eq!(kind, None, "{first_api:?}: {:?}", reply.error_message);
        assert!(reply.tool_calls().next().is_some());
        let mut history = hello();
        history.push(Message::Assistant(reply.clone()));
        history.extend(results_for(&reply));
        drop(fake);
        // The next request: on the same API, and after a switch to each other one.
        for next_api in APIS {
            let fake = FakeProvider::start(vec![Reply::text("done")]).await.unwrap();
            let mut next = request(next_api, history.clone());
            next.model.max_output_tokens = 64_000;
            next.options.thinking = ThinkingLevel::Medium;
            let (message, kind) = outcome(&collect(&provider(&fake), next).await);
            assert_eq!(
                kind,
                None,
                "{first_api:?} then {next_api:?}: {:?} {:?}",
                message.error_message,
                fake.violations()
            );
            assert_eq!(message.text(), "done");
        }
    }
}
