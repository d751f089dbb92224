//! Rules about the message history the loop keeps valid.

use rein_protocol::message::{Message, ToolCall};
use std::sync::Arc;

/// Tool calls of the last assistant message that have no result after it. A history ending in
/// such calls cannot be sent to a provider; the loop answers them when a run dies abruptly.
pub(crate) fn unanswered_calls(messages: &[Arc<Message>]) -> Vec<ToolCall> {
    let Some(last_reply) = messages.iter().rposition(|m| matches!(**m, Message::Assistant(_)))
    else {
        return Vec::new();
    };
    let Message::Assistant(reply) = messages[last_reply].as_ref() else {
        return Vec::new();
    };
    let answered: Vec<&str> = messages[last_reply + 1..]
        .iter()
        .filter_map(|message| match message.as_ref() {
            Message::ToolResult(result) => Some(result.tool_call_id.as_str()),
            _ => None,
        })
        .collect();
    reply.tool_calls().filter(|call| !answered.contains(&call.id.as_str())).cloned().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::assistant;
    use rein_protocol::message::{ContentBlock, StopReason, ToolResultMessage, UserMessage};
    use serde_json::json;

    fn shared(messages: Vec<Message>) -> Vec<Arc<Message>> {
        messages.into_iter().map(Arc::new).collect()
    }

    fn call(id: &str) -> ContentBlock {
        ContentBlock::ToolCall(ToolCall { id: id.into(), name: "ls".into(), arguments: json!({}) })
    }

    fn result(id: &str) -> Message {
        Message::ToolResult(ToolResultMessage {
            tool_call_id: id.into(),
            tool_name: "ls".into(),
            content: vec![],
            is_error: false,
            details: None,
            timestamp: 0,
        })
    }

    #[test]
    fn only_calls_of_the_last_reply_without_a_result_are_reported() {
        assert!(unanswered_calls(&[]).is_empty());
        let history = vec![
            Message::User(UserMessage::text("q", 0)),
            Message::Assistant(assistant(vec![call("old")], StopReason::ToolUse)),
            Message::Assistant(assistant(
                vec![call("a"), call("b"), call("c")],
                StopReason::ToolUse,
            )),
            result("b"),
        ];
        let ids: Vec<String> =
            unanswered_calls(&shared(history)).into_iter().map(|c| c.id).collect();
        assert_eq!(ids, vec!["a", "c"]);
        let answered = vec![
            Message::Assistant(assistant(vec![call("a")], StopReason::ToolUse)),
            result("a"),
            Message::User(UserMessage::text("next", 0)),
        ];
        assert!(unanswered_calls(&shared(answered)).is_empty());
    }
}
