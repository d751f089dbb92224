//! Reading one entry line of a session file, fast for the common kind.
//!
//! `SessionEntry` flattens its kind (tagged by `type`) and a message entry's message is tagged
//! by `role`: serde reads each of those by buffering the whole line, then the whole message,
//! into an intermediate tree before building anything, three times over for a message entry,
//! most of the lines of any session. A message entry is read here in one pass instead: its
//! envelope into a borrowed struct that keeps the message as raw text, then the message
//! straight into the struct its role names. Every other kind, and any line the fast reading
//! does not accept, is read by the derived deserializer, which decides what is damaged.

use std::borrow::Cow;

use rein_protocol::message::{AssistantMessage, Message, ToolResultMessage, UserMessage};
use rein_protocol::{EntryKind, SessionEntry};
use serde::Deserialize;
use serde_json::value::RawValue;

/// Reads one line of a session file (without its newline) as an entry.
pub(crate) fn parse_entry(line: &[u8]) -> serde_json::Result<SessionEntry> {
    match message_entry(line) {
        Some(entry) => Ok(entry),
        None => serde_json::from_slice(line),
    }
}

/// The fields of an entry line the fast reading needs; the others are skipped, as the
/// derived deserializer skips fields it does not know.
#[derive(Deserialize)]
struct Envelope<'a> {
    id: String,
    parent_id: Option<String>,
    timestamp: String,
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow)]
    message: Option<&'a RawValue>,
}

/// A message's role, the rest skipped.
#[derive(Deserialize)]
struct Role<'a> {
    #[serde(borrow)]
    role: Cow<'a, str>,
}

/// The role of a message whose text starts with it (`{"role":"user",...`, as rein writes it),
/// read without scanning the rest; `None` when the text starts otherwise.
fn leading_role(raw: &str) -> Option<&str> {
    let rest = raw.strip_prefix("{\"role\":\"")?;
    let (role, after) = rest.split_once('"')?;
    (after.starts_with(',') || after.starts_with('}')).then_some(role)
}

/// A message entry read in one pass; `None` when the line is not one (or is not well formed
/// enough for the fast reading).
fn message_entry(line: &[u8]) -> Option<SessionEntry> {
    let envelope: Envelope<'_> = serde_json::from_slice(line).ok()?;
    if envelope.kind != "message" {
        return None;
    }
    let raw = envelope.message?.get();
    // rein writes the role first; other writers get the role read by a full scan.
    let role = match leading_role(raw) {
        Some(role) => Cow::Borrowed(role),
        None => serde_json::from_str::<Role<'_>>(raw).ok()?.role,
    };
    let mut message = match role.as_ref() {
        "user" => Message::User(serde_json::from_str::<UserMessage>(raw).ok()?),
        "assistant" => Message::Assistant(serde_json::from_str::<AssistantMessage>(raw).ok()?),
        "tool_result" => Message::ToolResult(serde_json::from_str::<ToolResultMessage>(raw).ok()?),
        _ => return None,
    };
    shrink_content(&mut message);
    Some(SessionEntry {
        id: envelope.id,
        parent_id: envelope.parent_id,
        timestamp: envelope.timestamp,
        kind: EntryKind::Message { message: message.into() },
    })
}

/// Gives back the spare room of a message's content list. serde cannot know a JSON array's
/// length before reading it, so the list grows as it is read and keeps room for four blocks
/// where most messages hold one: about 240 bytes a message, held for as long as the session
/// stays loaded.
pub(crate) fn shrink_content(message: &mut Message) {
    let content = match message {
        Message::User(user) => &mut user.content,
        Message::Assistant(assistant) => &mut assistant.content,
        Message::ToolResult(result) => &mut result.content,
    };
    content.shrink_to_fit();
}

#[cfg(test)]
mod tests {
    use super::*;
    use rein_protocol::message::{ContentBlock, StopReason, ToolCall, Usage};
    use serde_json::json;

    fn entry(kind: EntryKind) -> SessionEntry {
        SessionEntry {
            id: "e1".into(),
            parent_id: Some("e0".into()),
            timestamp: "2026-12-01T10:00:00Z".into(),
            kind,
        }
    }

    /// Every message kind reads back as the derived deserializer reads it, and lines the
    /// fast reading refuses still get the derived deserializer's verdict.
    #[test]
    fn lines_read_as_the_derived_deserializer_reads_them() {
        let assistant = AssistantMessage {
            content: vec![
                ContentBlock::Thinking {
                    thinking: "hm".into(),
                    signature: Some("s".into()),
                    redacted: false,
                },
                ContentBlock::text("calling"),
                ContentBlock::ToolCall(ToolCall {
                    id: "c1".into(),
                    name: "bash".into(),
                    arguments: json!({"command": "ls"}),
                }),
            ],
            api: "anthropic".into(),
            provider: "p".into(),
            model: "m".into(),
            usage: Usage { input: 3, total_tokens: 9, ..Usage::default() },
            stop_reason: StopReason::ToolUse,
            error_message: Some("x".into()),
            timestamp: 5,
        };
        let entries = [
            entry(EntryKind::Message { message: Message::User(UserMessage::text("hi", 1)).into() }),
            entry(EntryKind::Message { message: Message::Assistant(assistant).into() }),
            entry(EntryKind::Message {
                message: Message::ToolResult(ToolResultMessage {
                    tool_call_id: "c1".into(),
                    tool_name: "bash".into(),
                    content: vec![ContentBlock::Image {
                        data: "AAAA".into(),
                        mime_type: "image/png".into(),
                    }],
                    is_error: true,
                    details: Some(json!({"exit": 1})),
                    timestamp: 2,
                })
                .into(),
            }),
            entry(EntryKind::SessionInfo { name: Some("n".into()) }),
            SessionEntry {
                parent_id: None,
                ..entry(EntryKind::Label { target_id: "e0".into(), label: None })
            },
        ];
        for entry in entries {
            let line = serde_json::to_vec(&entry).unwrap();
            assert_eq!(parse_entry(&line).unwrap(), entry);
        }
        let lines: [&[u8]; 6] = [
            // Fields in another order, unknown fields, whitespace.
            br#"{ "type": "message", "extra": 1, "message": {"timestamp": 4, "content": [{"text": "a", "type": "text"}], "role": "user", "more": true}, "timestamp": "t", "parent_id": null, "id": "x" }"#,
            // No such role.
            br#"{"id":"x","parent_id":null,"timestamp":"t","type":"message","message":{"role":"system","content":[]}}"#,
            // A message entry without its message.
            br#"{"id":"x","parent_id":null,"timestamp":"t","type":"message"}"#,
            // A content block of an unknown type.
            br#"{"id":"x","parent_id":null,"timestamp":"t","type":"message","message":{"role":"user","content":[{"type":"video"}]}}"#,
            // No id.
            br#"{"parent_id":null,"timestamp":"t","type":"message","message":{"role":"user","content":[]}}"#,
            br#"{not json"#,
        ];
        for line in lines {
            let derived = serde_json::from_slice::<SessionEntry>(line);
            match parse_entry(line) {
                Ok(entry) => assert_eq!(entry, derived.unwrap()),
                Err(_) => assert!(derived.is_err(), "{}", String::from_utf8_lossy(line)),
            }
        }
        assert!(message_entry(lines[0]).is_some(), "the fast reading takes reordered fields");
        assert_eq!(leading_role(r#"{"role":"user","content":[]}"#), Some("user"));
        assert_eq!(leading_role(r#"{"role":"us\"er","content":[]}"#), None);
        assert_eq!(leading_role(r#"{ "role":"user"}"#), None);
    }
}
