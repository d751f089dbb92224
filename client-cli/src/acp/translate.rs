//! Turns rein session events and history into ACP `session/update` payloads.
//!
//! Everything here is pure: a [`Translator`] takes one daemon event at a time and returns the
//! updates to send, keeping only what it needs to fill ACP's replace-the-whole-list semantics
//! (the output a running tool has printed so far).

use rein_protocol::event::{AssistantDelta, EndReason, SessionEvent};
use rein_protocol::message::{
    ContentBlock, Message, StopReason, ToolCall, ToolResultMessage, UserMessage,
};
use rein_protocol::method::SessionState;
use serde_json::{Value, json};
use std::collections::HashMap;

/// The ACP tool kind for one of our tools, so editors can pick an icon.
pub fn tool_kind(tool_name: &str) -> &'static str {
    match tool_name {
        "read" => "read",
        "write" | "edit" => "edit",
        "bash" => "execute",
        "grep" | "find" | "ls" => "search",
        _ => "other",
    }
}

/// A one-line title for a tool call: the tool and its main argument.
pub fn tool_title(tool_name: &str, arguments: &Value) -> String {
    let main = ["path", "command", "pattern"]
        .iter()
        .find_map(|key| arguments.get(*key).and_then(Value::as_str));
    match main {
        Some(main) => format!("{tool_name} {main}"),
        None => tool_name.to_string(),
    }
}

/// The files a tool call touches, as ACP locations.
fn tool_locations(arguments: &Value) -> Value {
    match arguments.get("path").and_then(Value::as_str) {
        Some(path) => json!([{ "path": path }]),
        None => json!([]),
    }
}

/// Diff content for the file-changing tools, built from their arguments.
fn diff_content(tool_name: &str, arguments: &Value) -> Vec<Value> {
    let Some(path) = arguments.get("path").and_then(Value::as_str) else {
        return Vec::new();
    };
    match tool_name {
        "write" => match arguments.get("content").and_then(Value::as_str) {
            Some(content) => vec![json!({"type": "diff", "path": path, "oldText": null,
                "newText": content})],
            None => Vec::new(),
        },
        "edit" => arguments
            .get("edits")
            .and_then(Value::as_array)
            .map(|edits| {
                edits
                    .iter()
                    .filter_map(|edit| {
                        let old = edit.get("oldText")?.as_str()?;
                        let new = edit.get("newText")?.as_str()?;
                        Some(json!({"type": "diff", "path": path, "oldText": old, "newText": new}))
                    })
                    .collect()
            })
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}

/// ACP content blocks for our text and image blocks (others are left out).
pub fn acp_blocks(content: &[ContentBlock]) -> Vec<Value> {
    content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text { text } => Some(json!({"type": "text", "text": text})),
            ContentBlock::Image { data, mime_type } => {
                Some(json!({"type": "image", "data": data, "mimeType": mime_type}))
            }
            _ => None,
        })
        .collect()
}

/// Wraps content blocks as tool call content.
fn tool_content(content: &[ContentBlock]) -> Vec<Value> {
    acp_blocks(content)
        .into_iter()
        .map(|block| json!({"type": "content", "content": block}))
        .collect()
}

/// The `tool_call` update announcing a call the model made.
pub fn tool_call_update(call: &ToolCall) -> Value {
    json!({
        "sessionUpdate": "tool_call",
        "toolCallId": call.id,
        "title": tool_title(&call.name, &call.arguments),
        "kind": tool_kind(&call.name),
        "status": "pending",
        "content": diff_content(&call.name, &call.arguments),
        "locations": tool_locations(&call.arguments),
        "rawInput": call.arguments,
    })
}

/// The `tool_call_update` that closes a call with its result.
pub fn tool_result_update(result: &ToolResultMessage) -> Value {
    let mut update = json!({
        "sessionUpdate": "tool_call_update",
        "toolCallId": result.tool_call_id,
        "status": if result.is_error { "failed" } else { "completed" },
        "content": tool_content(&result.content),
    });
    if let Some(details) = &result.details {
        update["rawOutput"] = details.clone();
    }
    update
}

/// The ACP tool call sent with `session/request_permission`.
pub fn permission_tool_call(tool_call_id: &str, tool_name: &str, arguments: &Value) -> Value {
    json!({
        "toolCallId": tool_call_id,
        "title": tool_title(tool_name, arguments),
        "kind": tool_kind(tool_name),
        "status": "pending",
        "content": diff_content(tool_name, arguments),
        "locations": tool_locations(arguments),
        "rawInput": arguments,
    })
}

/// A text chunk update of the given kind (`agent_message_chunk`, `user_message_chunk`, ...).
fn chunk(kind: &str, block: Value) -> Value {
    json!({"sessionUpdate": kind, "content": block})
}

/// The text of a user message's text blocks, joined (how the editor's own prompts are told
/// apart from other clients').
pub fn user_text(user: &UserMessage) -> String {
    user.content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// The updates that replay one stored message, for `session/load`.
pub fn replay_message(message: &Message) -> Vec<Value> {
    match message {
        Message::User(user) => {
            acp_blocks(&user.content).into_iter().map(|b| chunk("user_message_chunk", b)).collect()
        }
        Message::Assistant(assistant) => assistant
            .content
            .iter()
            .filter_map(|block| match block {
                ContentBlock::Text { text } => {
                    Some(chunk("agent_message_chunk", json!({"type": "text", "text": text})))
                }
                ContentBlock::Thinking { thinking, .. } if !thinking.is_empty() => {
                    Some(chunk("agent_thought_chunk", json!({"type": "text", "text": thinking})))
                }
                ContentBlock::ToolCall(call) => Some(tool_call_update(call)),
                _ => None,
            })
            .collect(),
        Message::ToolResult(result) => vec![tool_result_update(result)],
    }
}

/// The `usage_update` for a session's state: context in use, the window, and the session's
/// cost so far.
pub fn usage_update(state: &SessionState) -> Value {
    json!({
        "sessionUpdate": "usage_update",
        "used": state.context_tokens,
        "size": state.context_window,
        "cost": {"amount": state.usage.cost.total, "currency": "USD"},
    })
}

/// The ACP stop reason for the end of one of our runs; `None` when the run failed and the
/// prompt must be answered with an error instead.
pub fn stop_reason(reason: EndReason, last_stop: Option<StopReason>) -> Option<&'static str> {
    match reason {
        EndReason::Completed if last_stop == Some(StopReason::Length) => Some("max_tokens"),
        EndReason::Completed if last_stop == Some(StopReason::ContentFilter) => Some("refusal"),
        EndReason::Completed => Some("end_turn"),
        EndReason::Cancelled => Some("cancelled"),
        EndReason::MaxTurns
        | EndReason::CostLimit
        | EndReason::TimeLimit
        | EndReason::ToolFailureLimit => Some("max_turn_requests"),
        _ => None,
    }
}

/// What one daemon event means for the ACP side.
#[derive(Debug, Clone, PartialEq)]
pub enum Translated {
    /// `session/update` payloads to send, in order.
    Updates(Vec<Value>),
    /// A tool call waits for approval: ask the editor.
    Permission {
        /// The daemon's approval request id.
        request_id: String,
        /// The ACP tool call to show.
        tool_call: Value,
    },
    /// An approval request was answered (by anyone) or expired.
    ApprovalResolved {
        /// The daemon's approval request id.
        request_id: String,
    },
    /// A user message entered the conversation: a prompt, a steer or a follow-up, from this
    /// editor or from another client.
    UserMessage {
        /// Its text, to recognise the editor's own prompts.
        text: String,
        /// The `user_message_chunk` updates that show it.
        updates: Vec<Value>,
    },
    /// The session's model or thinking level changed: the editor's config options are stale.
    SettingsChanged,
    /// A run ended.
    RunEnded {
        /// The run.
        run_id: String,
        /// The ACP stop reason, or `None` when the run failed.
        stop_reason: Option<&'static str>,
        /// What went wrong, when it failed.
        error: Option<String>,
        /// Updates that mark the run's unfinished tool calls `failed`, so none stays pending
        /// in the editor.
        closing: Vec<Value>,
    },
}

/// Translates the live event stream of one session.
#[derive(Debug, Default)]
pub struct Translator {
    /// Tool calls announced and not finished, with the output each has printed so far.
    tool_output: HashMap<String, String>,
    /// The stop reason of the last assistant message.
    last_stop: Option<StopReason>,
}

impl Translator {
    /// A translator with no state.
    pub fn new() -> Self {
        Self::default()
    }

    /// Forgets a tool call whose result the editor was shown another way (replayed after a
    /// gap), so the run's end does not mark it failed.
    pub fn forget_tool_call(&mut self, tool_call_id: &str) {
        self.tool_output.remove(tool_call_id);
    }

    /// What `event` means for the editor.
    pub fn translate(&mut self, event: &SessionEvent) -> Translated {
        let updates = match event {
            SessionEvent::MessageUpdate { delta } => match delta {
                AssistantDelta::TextDelta { delta, .. } => {
                    vec![chunk("agent_message_chunk", json!({"type": "text", "text": delta}))]
                }
                AssistantDelta::ThinkingDelta { delta, .. } => {
                    vec![chunk("agent_thought_chunk", json!({"type": "text", "text": delta}))]
                }
                AssistantDelta::ToolCallEnd { call, .. } => {
                    self.tool_output.insert(call.id.clone(), String::new());
                    vec![tool_call_update(call)]
                }
                _ => Vec::new(),
            },
            SessionEvent::MessageStart { message: message @ Message::User(user) } => {
                let text = user_text(user);
                return Translated::UserMessage { text, updates: replay_message(message) };
            }
            SessionEvent::ApprovalResolved { request_id, .. } => {
                return Translated::ApprovalResolved { request_id: request_id.clone() };
            }
            SessionEvent::ModelChanged { .. }
            | SessionEvent::ThinkingLevelChanged { .. }
            | SessionEvent::ApprovalPolicyChanged { .. } => {
                return Translated::SettingsChanged;
            }
            SessionEvent::MessageEnd { message } => {
                if let Message::Assistant(reply) = message.as_ref() {
                    self.last_stop = Some(reply.stop_reason);
                }
                Vec::new()
            }
            SessionEvent::ToolExecutionStart { tool_call_id, .. } => {
                self.tool_output.insert(tool_call_id.clone(), String::new());
                vec![json!({"sessionUpdate": "tool_call_update", "toolCallId": tool_call_id,
                    "status": "in_progress"})]
            }
            SessionEvent::ToolExecutionUpdate { tool_call_id, content, .. } => {
                let output = self.tool_output.entry(tool_call_id.clone()).or_default();
                for block in content {
                    if let ContentBlock::Text { text } = block {
                        output.push_str(text);
                    }
                }
                vec![json!({"sessionUpdate": "tool_call_update", "toolCallId": tool_call_id,
                    "content": [{"type": "content",
                        "content": {"type": "text", "text": output}}]})]
            }
            SessionEvent::ToolExecutionEnd { tool_call_id, result, .. } => {
                self.tool_output.remove(tool_call_id);
                vec![tool_result_update(result)]
            }
            SessionEvent::ApprovalRequested {
                request_id,
                tool_call_id,
                tool_name,
                arguments,
                ..
            } => {
                return Translated::Permission {
                    request_id: request_id.clone(),
                    tool_call: permission_tool_call(tool_call_id, tool_name, arguments),
                };
            }
            SessionEvent::AgentStart { .. } => {
                self.last_stop = None;
                Vec::new()
            }
            SessionEvent::AgentEnd { run_id, reason, error, .. } => {
                let mut unfinished: Vec<String> =
                    self.tool_output.drain().map(|(id, _)| id).collect();
                unfinished.sort();
                let closing = unfinished
                    .into_iter()
                    .map(|id| {
                        json!({"sessionUpdate": "tool_call_update", "toolCallId": id,
                            "status": "failed"})
                    })
                    .collect();
                let stop_reason = stop_reason(*reason, self.last_stop);
                let error = match stop_reason {
                    Some(_) => None,
                    None => Some(error.clone().unwrap_or_else(|| format!("run ended: {reason:?}"))),
                };
                return Translated::RunEnded {
                    run_id: run_id.clone(),
                    stop_reason,
                    error,
                    closing,
                };
            }
            _ => Vec::new(),
        };
        Translated::Updates(updates)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rein_protocol::message::AssistantMessage;

    fn result(id: &str, text: &str, is_error: bool) -> ToolResultMessage {
        serde_json::from_value(json!({"tool_call_id": id, "tool_name": "bash",
            "content": [{"type": "text", "text": text}], "is_error": is_error}))
        .unwrap()
    }

    #[test]
    fn kinds_and_titles_name_the_main_argument() {
        assert_eq!(tool_kind("edit"), "edit");
        assert_eq!(tool_kind("bash"), "execute");
        assert_eq!(tool_kind("grep"), "search");
        assert_eq!(tool_kind("mystery"), "other");
        assert_eq!(tool_title("read", &json!({"path": "src/a.rs"})), "read src/a.rs");
        assert_eq!(tool_title("bash", &json!({"command": "ls"})), "bash ls");
        assert_eq!(tool_title("ls", &json!({})), "ls");
    }

    #[test]
    fn deltas_become_message_and_thought_chunks() {
        let mut translator = Translator::new();
        let text: SessionEvent = serde_json::from_value(json!({"kind": "message_update",
            "delta": {"type": "text_delta", "index": 0, "delta": "Hi"}}))
        .unwrap();
        let thinking: SessionEvent = serde_json::from_value(json!({"kind": "message_update",
            "delta": {"type": "thinking_delta", "index": 0, "delta": "hmm"}}))
        .unwrap();
        assert_eq!(
            translator.translate(&text),
            Translated::Updates(vec![json!({"sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": "Hi"}})])
        );
        assert_eq!(
            translator.translate(&thinking),
            Translated::Updates(vec![json!({"sessionUpdate": "agent_thought_chunk",
                "content": {"type": "text", "text": "hmm"}})])
        );
    }

    #[test]
    fn a_tool_call_goes_pending_running_then_completed_with_its_output_so_far() {
        let mut translator = Translator::new();
        let end: SessionEvent = serde_json::from_value(json!({"kind": "message_update",
            "delta": {"type": "tool_call_end", "index": 0,
                "call": {"id": "c1", "name": "write",
                    "arguments": {"path": "a.txt", "content": "new"}}}}))
        .unwrap();
        let Translated::Updates(updates) = translator.translate(&end) else { panic!() };
        assert_eq!(updates[0]["sessionUpdate"], "tool_call");
        assert_eq!(updates[0]["status"], "pending");
        assert_eq!(updates[0]["kind"], "edit");
        assert_eq!(updates[0]["content"][0]["type"], "diff");
        assert_eq!(updates[0]["content"][0]["newText"], "new");
        assert_eq!(updates[0]["locations"][0]["path"], "a.txt");

        let start = SessionEvent::ToolExecutionStart {
            tool_call_id: "c1".into(),
            tool_name: "bash".into(),
            arguments: json!({}),
        };
        let Translated::Updates(updates) = translator.translate(&start) else { panic!() };
        assert_eq!(updates[0]["status"], "in_progress");

        for chunk_text in ["one\n", "two\n"] {
            let progress = SessionEvent::ToolExecutionUpdate {
                tool_call_id: "c1".into(),
                tool_name: "bash".into(),
                content: vec![ContentBlock::Text { text: chunk_text.into() }],
            };
            translator.translate(&progress);
        }
        let progress = SessionEvent::ToolExecutionUpdate {
            tool_call_id: "c1".into(),
            tool_name: "bash".into(),
            content: vec![ContentBlock::Text { text: "three\n".into() }],
        };
        let Translated::Updates(updates) = translator.translate(&progress) else { panic!() };
        assert_eq!(updates[0]["content"][0]["content"]["text"], "one\ntwo\nthree\n");

        let done = SessionEvent::ToolExecutionEnd {
            tool_call_id: "c1".into(),
            tool_name: "bash".into(),
            result: result("c1", "exit 1", true),
        };
        let Translated::Updates(updates) = translator.translate(&done) else { panic!() };
        assert_eq!(updates[0]["status"], "failed");
        assert_eq!(updates[0]["content"][0]["content"]["text"], "exit 1");
    }

    #[test]
    fn tool_calls_left_unfinished_by_a_run_end_are_marked_failed() {
        let mut translator = Translator::new();
        for id in ["c2", "c1"] {
            let end: SessionEvent = serde_json::from_value(json!({"kind": "message_update",
                "delta": {"type": "tool_call_end", "index": 0,
                    "call": {"id": id, "name": "bash", "arguments": {"command": "sleep 9"}}}}))
            .unwrap();
            translator.translate(&end);
        }
        let done = SessionEvent::ToolExecutionEnd {
            tool_call_id: "c1".into(),
            tool_name: "bash".into(),
            result: result("c1", "ok", false),
        };
        translator.translate(&done);
        let end: SessionEvent = serde_json::from_value(json!({"kind": "agent_end",
            "run_id": "r1", "reason": "cancelled", "usage": {}, "turns": 1}))
        .unwrap();
        match translator.translate(&end) {
            Translated::RunEnded { closing, .. } => assert_eq!(
                closing,
                vec![json!({"sessionUpdate": "tool_call_update", "toolCallId": "c2",
                    "status": "failed"})]
            ),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn approval_requests_become_permission_asks() {
        let mut translator = Translator::new();
        let event: SessionEvent = serde_json::from_value(json!({"kind": "approval_requested",
            "request_id": "ap-1", "tool_call_id": "c2", "tool_name": "bash",
            "arguments": {"command": "rm -rf target"}, "reason": "bash asks"}))
        .unwrap();
        match translator.translate(&event) {
            Translated::Permission { request_id, tool_call } => {
                assert_eq!(request_id, "ap-1");
                assert_eq!(tool_call["toolCallId"], "c2");
                assert_eq!(tool_call["title"], "bash rm -rf target");
                assert_eq!(tool_call["kind"], "execute");
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn user_messages_carry_their_text_and_resolutions_their_request() {
        let mut translator = Translator::new();
        let start = SessionEvent::MessageStart {
            message: Message::User(UserMessage {
                content: vec![
                    ContentBlock::Text { text: "keep ".into() },
                    ContentBlock::Text { text: "going".into() },
                ],
                timestamp: 0,
            }),
        };
        match translator.translate(&start) {
            Translated::UserMessage { text, updates } => {
                assert_eq!(text, "keep going");
                assert_eq!(updates.len(), 2);
                assert_eq!(updates[0]["sessionUpdate"], "user_message_chunk");
            }
            other => panic!("unexpected {other:?}"),
        }
        let resolved: SessionEvent = serde_json::from_value(json!({"kind": "approval_resolved",
            "request_id": "ap-3", "decision": "deny", "resolved_by": "rein"}))
        .unwrap();
        assert_eq!(
            translator.translate(&resolved),
            Translated::ApprovalResolved { request_id: "ap-3".into() }
        );
        let level: SessionEvent =
            serde_json::from_value(json!({"kind": "thinking_level_changed", "level": "high"}))
                .unwrap();
        assert_eq!(translator.translate(&level), Translated::SettingsChanged);
    }

    #[test]
    fn run_ends_map_to_stop_reasons_or_errors() {
        let mut translator = Translator::new();
        let end = |reason: &str| -> SessionEvent {
            serde_json::from_value(json!({"kind": "agent_end", "run_id": "r1", "reason": reason,
                "usage": {}, "turns": 1, "error": "provider down"}))
            .unwrap()
        };
        let ended = |translated| match translated {
            Translated::RunEnded { stop_reason, error, .. } => (stop_reason, error),
            other => panic!("unexpected {other:?}"),
        };
        assert_eq!(ended(translator.translate(&end("completed"))), (Some("end_turn"), None));
        assert_eq!(ended(translator.translate(&end("cancelled"))), (Some("cancelled"), None));
        assert_eq!(
            ended(translator.translate(&end("max_turns"))),
            (Some("max_turn_requests"), None)
        );
        assert_eq!(
            ended(translator.translate(&end("error"))),
            (None, Some("provider down".to_string()))
        );
        let long: SessionEvent = SessionEvent::MessageEnd {
            message: Message::Assistant(
                serde_json::from_value::<AssistantMessage>(json!({"content": [], "api": "a",
                    "provider": "p", "model": "m", "stop_reason": "length"}))
                .unwrap(),
            )
            .into(),
        };
        translator.translate(&long);
        assert_eq!(ended(translator.translate(&end("completed"))), (Some("max_tokens"), None));
        let filtered: SessionEvent = SessionEvent::MessageEnd {
            message: Message::Assistant(
                serde_json::from_value::<AssistantMessage>(json!({"content": [], "api": "a",
                    "provider": "p", "model": "m", "stop_reason": "content_filter"}))
                .unwrap(),
            )
            .into(),
        };
        translator.translate(&filtered);
        assert_eq!(ended(translator.translate(&end("completed"))), (Some("refusal"), None));
    }

    #[test]
    fn usage_reports_context_and_cost() {
        let state: SessionState = serde_json::from_value(json!({"session_id": "s", "cwd": "/p",
            "model": {"provider": "local", "model": "m"}, "thinking_level": "off",
            "approval_policy": "ask", "running": false,
            "queues": {"steering": [], "follow_up": []},
            "usage": {"cost": {"total": 0.25}}, "context_tokens": 1200,
            "context_window": 8000, "trusted": false, "last_seq": 9}))
        .unwrap();
        assert_eq!(
            usage_update(&state),
            json!({"sessionUpdate": "usage_update", "used": 1200, "size": 8000,
                "cost": {"amount": 0.25, "currency": "USD"}})
        );
    }

    #[test]
    fn history_replays_as_chunks_calls_and_results() {
        let user = Message::User(UserMessage {
            content: vec![ContentBlock::Text { text: "fix it".into() }],
            timestamp: 0,
        });
        let assistant: Message = serde_json::from_value(json!({"role": "assistant",
            "content": [{"type": "thinking", "thinking": "look"},
                {"type": "text", "text": "Reading."},
                {"type": "tool_call", "id": "c1", "name": "read", "arguments": {"path": "a"}}],
            "api": "a", "provider": "p", "model": "m", "stop_reason": "tool_use"}))
        .unwrap();
        let tool = Message::ToolResult(result("c1", "contents", false));
        let kinds: Vec<Value> = [user, assistant, tool]
            .iter()
            .flat_map(replay_message)
            .map(|update| update["sessionUpdate"].clone())
            .collect();
        assert_eq!(
            kinds,
            vec![
                json!("user_message_chunk"),
                json!("agent_thought_chunk"),
                json!("agent_message_chunk"),
                json!("tool_call"),
                json!("tool_call_update")
            ]
        );
    }
}
