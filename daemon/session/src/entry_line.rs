//! Reading one entry line of a session file, fast for the common kind.
//!
//! `SessionEntry` flattens its kind (tagged by `type`) and a message entry's message is tagged
//! by `role`: serde reads each of those by buffering the whole line, then the whole message,
//! into an intermediate tree before building anything, three times over for a message entry,
//! most of the lines of any session. A message entry written in rein's own field order (`type`
//! before `message`, `role` first in the message) is read here in one pass instead: the
//! envelope's fields as they come, then the message straight into the struct its role names.
//! Every other kind, and any line the fast reading does not accept, is read by the derived
//! deserializer, which decides what is damaged.

use std::fmt;

use rein_protocol::message::{AssistantMessage, Message, ToolResultMessage, UserMessage};
use rein_protocol::{EntryKind, SessionEntry};
use serde::Deserialize;
use serde::de::value::MapAccessDeserializer;
use serde::de::{DeserializeSeed, Deserializer, Error as _, IgnoredAny, MapAccess, Visitor};

/// Reads one line of a session file (without its newline) as an entry.
pub(crate) fn parse_entry(line: &[u8]) -> serde_json::Result<SessionEntry> {
    match message_entry(line) {
        Some(entry) => Ok(entry),
        None => serde_json::from_slice(line),
    }
}

/// A message entry read in one pass; `None` when the line is not one, is not in the order
/// the fast reading needs, or is not well formed.
fn message_entry(line: &[u8]) -> Option<SessionEntry> {
    let mut reader = serde_json::Deserializer::from_slice(line);
    let entry = reader.deserialize_map(MessageEntry).ok()?;
    reader.end().ok()?;
    Some(entry)
}

/// The fields of an entry line; those the fast reading does not need are skipped, as the
/// derived deserializer skips fields it does not know.
#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "snake_case")]
enum Field {
    Id,
    ParentId,
    Timestamp,
    Type,
    Message,
    #[serde(other)]
    Other,
}

/// Reads a message entry's fields in one pass. Fails (so the derived deserializer decides)
/// on anything else: another kind, a message before its `type`, a repeated field.
struct MessageEntry;

impl<'de> Visitor<'de> for MessageEntry {
    type Value = SessionEntry;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a message entry")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<SessionEntry, A::Error> {
        let (mut id, mut parent_id, mut timestamp) = (None, None, None);
        let mut is_message = false;
        let mut message = None;
        while let Some(field) = map.next_key::<Field>()? {
            match field {
                Field::Id => set(&mut id, map.next_value::<String>()?)?,
                Field::ParentId => set(&mut parent_id, map.next_value::<Option<String>>()?)?,
                Field::Timestamp => set(&mut timestamp, map.next_value::<String>()?)?,
                Field::Type => {
                    if is_message || map.next_value::<&str>()? != "message" {
                        return Err(A::Error::custom("not a message entry"));
                    }
                    is_message = true;
                }
                Field::Message => {
                    if !is_message {
                        return Err(A::Error::custom("the message comes before the type"));
                    }
                    set(&mut message, map.next_value_seed(ByRole)?)?;
                }
                Field::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        let missing = |field| A::Error::missing_field(field);
        let mut message = message.ok_or_else(|| missing("message"))?;
        shrink_content(&mut message);
        Ok(SessionEntry {
            id: id.ok_or_else(|| missing("id"))?,
            parent_id: parent_id.flatten(),
            timestamp: timestamp.ok_or_else(|| missing("timestamp"))?,
            kind: EntryKind::Message { message: message.into() },
        })
    }
}

/// Fills a field seen for the first time; a repeated field is an error.
fn set<T, E: serde::de::Error>(slot: &mut Option<T>, value: T) -> Result<(), E> {
    match slot {
        Some(_) => Err(E::custom("repeated field")),
        None => {
            *slot = Some(value);
            Ok(())
        }
    }
}

/// Reads a message whose first field is its `role` straight into the struct the role names.
struct ByRole;

impl<'de> DeserializeSeed<'de> for ByRole {
    type Value = Message;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Message, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ByRole {
    type Value = Message;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a message starting with its role")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Message, A::Error> {
        if map.next_key::<&str>()? != Some("role") {
            return Err(A::Error::custom("the role is not the first field"));
        }
        let role = map.next_value::<&str>()?;
        // The rest of the fields, read by the derived deserializer of the role's struct.
        let rest = MapAccessDeserializer::new(map);
        match role {
            "user" => UserMessage::deserialize(rest).map(Message::User),
            "assistant" => AssistantMessage::deserialize(rest).map(Message::Assistant),
            "tool_result" => ToolResultMessage::deserialize(rest).map(Message::ToolResult),
            _ => Err(A::Error::custom("no such role")),
        }
    }
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
            let is_message = matches!(entry.kind, EntryKind::Message { .. });
            assert_eq!(message_entry(&line).is_some(), is_message, "rein's order reads fast");
        }
        let lines: [&[u8]; 9] = [
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
            // The message before its type, a repeated id, another kind carrying a message.
            br#"{"id":"x","parent_id":null,"timestamp":"t","message":{"role":"user","content":[]},"type":"message"}"#,
            br#"{"id":"x","id":"y","parent_id":null,"timestamp":"t","type":"message","message":{"role":"user","content":[]}}"#,
            br#"{"id":"x","parent_id":null,"timestamp":"t","type":"session_info","name":"n","message":{"role":"user","content":[]}}"#,
        ];
        for line in lines {
            let derived = serde_json::from_slice::<SessionEntry>(line);
            match parse_entry(line) {
                Ok(entry) => assert_eq!(entry, derived.unwrap()),
                Err(_) => assert!(derived.is_err(), "{}", String::from_utf8_lossy(line)),
            }
        }
        assert!(message_entry(lines[0]).is_none(), "reordered fields are left to the derived");
    }
}
