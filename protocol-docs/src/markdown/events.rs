//! The subscriptions section: how subscriptions work, each notification, and every kind of
//! subscription item, session event, assistant delta and daemon event with an example.

use super::wire::{line_of, notification_line, serialize_error};
use super::{
    Markdown, fields_table, method_anchor, method_link, payload, table, union_summary, variant_body,
};
use crate::catalog::NotificationDoc;
use crate::reference::Reference;
use crate::schema_text::{self, Shape, description};
use crate::{DocsError, examples};
use rein_protocol::method::names;
use serde::Serialize;
use serde_json::Value;

pub(super) fn events(doc: &mut Markdown, reference: &Reference) -> Result<(), DocsError> {
    doc.heading(2, "Subscriptions and events", Some("subscriptions-and-events"));
    doc.block(&format!(
        "A client follows a session with {} and the daemon as a whole with {}. Each returns a \
         subscription id at once; from then on the daemon sends notifications whose `params` \
         are `{{\"subscription\": <id>, \"result\": <item>}}` (the notification shape of \
         jsonrpsee, the JSON-RPC library the daemon is built on). A subscription lasts until \
         the matching unsubscribe call, until the connection closes, or (for sessions) until \
         it ends with a `lagged` or `resync_required` notice. One connection may hold any \
         number of subscriptions, and any number of clients may follow the same session: they \
         all see the same events, and any of them may steer, cancel or answer an approval.",
        method_link(names::SESSION_SUBSCRIBE),
        method_link(names::DAEMON_SUBSCRIBE)
    ));
    doc.block(
        "Every session event carries the session's `seq`, which increases by one per event. \
         The daemon keeps a bounded replay buffer per session (at most \
         `capabilities.replay_buffer` events from `initialize`, and at most \
         `sessions.replay_buffer_bytes` of them serialized, 4 MiB by default), so a client that \
         reconnects and subscribes with `after_seq` set to the last `seq` it saw misses \
         nothing; any `after_seq` inside the buffer is served in full. Subscribers read that \
         one shared buffer. When the buffer no longer reaches back that far, or when a client \
         reads so slowly that the buffer dropped an event before the client read it, the \
         subscription ends with `resync_required` or `lagged`; \
         the client then calls `session/state` and `session/messages` and subscribes again \
         with `after_seq` set to the `last_seq` they return.",
    );
    for notification in &reference.notifications {
        notification_section(doc, reference, notification)?;
        match notification.name {
            names::SESSION_EVENT => {
                let items = examples::subscription_items();
                tagged_section(
                    doc,
                    "SubscriptionItem",
                    "Subscription items",
                    "item",
                    "Each is the `result` of one `session/event` notification.",
                    &items,
                )?;
                doc.type_anchor_once("EventEnvelope");
                doc.heading(3, "Event envelope", None);
                let envelope = doc.defs.get("EventEnvelope").cloned().unwrap_or(Value::Null);
                doc.block(&format!(
                    "**`EventEnvelope`**: {} The `event` item of a subscription carries these \
                     fields beside its `type`.",
                    description(&envelope)
                ));
                doc.block(&fields_table(&schema_text::fields(&envelope, None)));
                let events = examples::session_events();
                tagged_section(
                    doc,
                    "SessionEvent",
                    "Session events",
                    "event",
                    "Each is the `event` member of an envelope; the examples show that member. \
                     A run produces `agent_start`, then per turn `turn_start`, the messages \
                     (`message_start`, `message_update`..., `message_end`) and tool executions, \
                     `turn_end`; then `agent_end`, and `settled` once no follow-up is queued.",
                    &events,
                )?;
                let deltas = examples::assistant_deltas();
                tagged_section(
                    doc,
                    "AssistantDelta",
                    "Assistant deltas",
                    "delta",
                    "Each is the `delta` of a `message_update` event. `index` is the block's \
                     position in the assistant message that `message_end` delivers complete.",
                    &deltas,
                )?;
            }
            names::DAEMON_EVENT => {
                let events = examples::daemon_events();
                tagged_section(
                    doc,
                    "DaemonEvent",
                    "Daemon events",
                    "daemon-event",
                    "Each is the `result` of one `daemon/event` notification.",
                    &events,
                )?;
            }
            _ => {}
        }
    }
    Ok(())
}

fn notification_section(
    doc: &mut Markdown,
    reference: &Reference,
    notification: &NotificationDoc,
) -> Result<(), DocsError> {
    doc.heading(
        3,
        &format!("`{}` notification", notification.name),
        Some(&method_anchor(notification.name)),
    );
    doc.block(&format!(
        "{} Started by {}, ended by {}.",
        notification.summary,
        method_link(notification.subscribe),
        method_link(notification.unsubscribe)
    ));
    let schema = reference.notification_schema(notification.name);
    payload(doc, "Params", schema);
    let params = notification.params.example_line().map_err(serialize_error(notification.name))?;
    doc.code("json", &[notification_line(notification.name, &params)]);
    Ok(())
}

/// A tagged union documented kind by kind, each with its example from `examples`.
fn tagged_section<T: Serialize>(
    doc: &mut Markdown,
    type_name: &str,
    title: &str,
    anchor_prefix: &str,
    note: &str,
    examples: &[T],
) -> Result<(), DocsError> {
    let def = doc.defs.get(type_name).cloned().unwrap_or(Value::Null);
    doc.type_anchor_once(type_name);
    doc.heading(3, title, None);
    let Shape::Tagged { tag, variants, .. } = schema_text::shape(&def, doc.defs) else {
        doc.block(&format!("**`{type_name}`**: {}", description(&def)));
        return Ok(());
    };
    doc.block(&format!(
        "**`{type_name}`**: {} {note}",
        union_summary(type_name, &tag, &description(&def))
    ));
    let rows: Vec<Vec<String>> = variants
        .iter()
        .map(|v| {
            vec![
                format!("[`{}`](#{anchor_prefix}-{})", v.tag_value, v.tag_value),
                v.description.clone(),
            ]
        })
        .collect();
    doc.block(&table(&[&format!("`{tag}`"), "Meaning"], &rows));
    for variant in &variants {
        let example = example_for(examples, &tag, &variant.tag_value, type_name)?;
        let anchor = format!("{anchor_prefix}-{}", variant.tag_value);
        doc.heading(4, &format!("`{}`", variant.tag_value), Some(&anchor));
        variant_body(doc, variant);
        if let Some(line) = example {
            doc.code("json", &[line]);
        }
    }
    Ok(())
}

/// The compact JSON of the example whose `tag` member is `value`.
fn example_for<T: Serialize>(
    examples: &[T],
    tag: &str,
    value: &str,
    type_name: &str,
) -> Result<Option<String>, DocsError> {
    for example in examples {
        let json = serde_json::to_value(example).map_err(serialize_error(type_name))?;
        if json.get(tag).and_then(Value::as_str) == Some(value) {
            return line_of(example, type_name).map(Some);
        }
    }
    Ok(None)
}
