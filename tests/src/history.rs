//! Conversations of the shape the history benchmarks grow: whole turns of a prompt, a `bash`
//! call, its output and an answer.

use rein_protocol::message::{
    AssistantMessage, ContentBlock, Message, StopReason, ToolCall, ToolResultMessage, Usage,
    UserMessage,
};
use serde_json::json;

/// Turn `n`: four messages of about 200 bytes each, the replies as `provider` would have
/// answered them over the wire API `api` (`"openai-chat"`, say).
pub fn turn(n: usize, api: &str, provider: &str) -> [Message; 4] {
    let reply = |content, stop_reason| {
        Message::Assistant(AssistantMessage {
            content,
            api: api.into(),
            provider: provider.into(),
            model: "test-model".into(),
            usage: Usage::default(),
            stop_reason,
            error_message: None,
            timestamp: 0,
        })
    };
    let call_id = format!("call_{n}");
    [
        Message::User(UserMessage::text(
            format!("step {n}: look at the files {}", "u".repeat(80)),
            0,
        )),
        reply(
            vec![ContentBlock::ToolCall(ToolCall {
                id: call_id.clone(),
                name: "bash".into(),
                arguments: json!({"command": format!("ls -la src/{n}")}),
            })],
            StopReason::ToolUse,
        ),
        Message::ToolResult(ToolResultMessage {
            tool_call_id: call_id,
            tool_name: "bash".into(),
            content: vec![ContentBlock::text(format!("total {n}\n{}", "f".repeat(120)))],
            is_error: false,
            details: None,
            timestamp: 0,
        }),
        reply(
            vec![ContentBlock::text(format!("done with step {n} {}", "a".repeat(80)))],
            StopReason::Stop,
        ),
    ]
}
