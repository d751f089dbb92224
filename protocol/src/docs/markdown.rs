//! Renders `docs/protocol.md` from the [`Reference`]: an introduction for client authors, every
//! method, the subscriptions and their events, and every other type.

use super::catalog::{MethodDoc, NotificationDoc};
use super::reference::Reference;
use super::schema_text::{
    self, Field, Shape, Variant, description, ref_name, type_anchor, type_expr, type_link,
};
use super::{DocsError, REGENERATE_COMMAND, SCHEMA_FILE, crate_docs, examples};
use crate::codec::DEFAULT_MAX_LINE_BYTES;
use crate::error::{ErrorData, ErrorKind};
use crate::method::{SubscribeParams, names};
use crate::version::PROTOCOL_VERSION;
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::BTreeSet;

/// Types documented in the events section rather than under "Types".
const EVENT_TYPES: [&str; 7] = [
    "SubscriptionItemNotification",
    "SubscriptionItem",
    "EventEnvelope",
    "SessionEvent",
    "AssistantDelta",
    "DaemonEventNotification",
    "DaemonEvent",
];

/// Tagged unions with a catch-all variant: an unknown tag parses instead of failing, so a
/// client built against this version skips what a newer daemon adds. A unit test keeps this
/// list true to the types.
const OPEN_UNIONS: [&str; 5] =
    ["SessionEvent", "AssistantDelta", "SubscriptionItem", "DaemonEvent", "SessionEntry"];

/// A tagged union's description, completed with its tag and whether it is open.
fn union_summary(name: &str, tag: &str, description: &str) -> String {
    let mut text = description.to_string();
    if !description.contains(&format!("tagged by `{tag}`")) {
        text.push_str(&format!(" Tagged by `{tag}`."));
    }
    if OPEN_UNIONS.contains(&name) {
        text.push_str(&format!(" A client skips `{tag}` values it does not know."));
    }
    text.trim_start().to_string()
}

/// A params or result table this short is repeated at every method that uses the type; longer
/// ones are shown once and linked afterwards.
const REPEATED_TABLE_ROWS: usize = 3;

/// Renders the whole reference.
pub fn render(reference: &Reference) -> Result<String, DocsError> {
    let mut doc = Markdown::new(reference.defs());
    intro(&mut doc);
    walkthrough(&mut doc)?;
    errors(&mut doc)?;
    methods(&mut doc, reference)?;
    events(&mut doc, reference)?;
    types(&mut doc);
    Ok(doc.finish())
}

/// The document being written, with the types whose anchor has been placed.
struct Markdown<'a> {
    text: String,
    defs: &'a Map<String, Value>,
    placed: BTreeSet<String>,
}

impl<'a> Markdown<'a> {
    fn new(defs: &'a Map<String, Value>) -> Self {
        Self { text: String::new(), defs, placed: BTreeSet::new() }
    }

    /// Appends a block (a paragraph, heading, table or code block) followed by a blank line.
    fn block(&mut self, text: &str) {
        self.text.push_str(text.trim_end());
        self.text.push_str("\n\n");
    }

    fn heading(&mut self, level: usize, title: &str, anchor: Option<&str>) {
        if let Some(anchor) = anchor {
            self.text.push_str(&format!("<a id=\"{anchor}\"></a>\n\n"));
        }
        self.block(&format!("{} {title}", "#".repeat(level)));
    }

    /// Places the anchor of type `name` here, unless it was placed before; true when placed
    /// now.
    fn type_anchor_once(&mut self, name: &str) -> bool {
        let first = self.defs.contains_key(name) && self.placed.insert(name.to_string());
        if first {
            self.text.push_str(&format!("<a id=\"{}\"></a>\n\n", type_anchor(name)));
        }
        first
    }

    fn code(&mut self, language: &str, lines: &[String]) {
        self.block(&format!("```{language}\n{}\n```", lines.join("\n")));
    }

    fn finish(self) -> String {
        let mut text = self.text;
        let trimmed = text.trim_end().len();
        text.truncate(trimmed);
        text.push('\n');
        text
    }
}

/// Escapes a table cell.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut out = format!("| {} |\n", header.join(" | "));
    out.push_str(&format!("|{}\n", " --- |".repeat(header.len())));
    for row in rows {
        let cells: Vec<String> = row.iter().map(|text| cell(text)).collect();
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    out
}

fn fields_table(fields: &[Field]) -> String {
    let rows: Vec<Vec<String>> = fields
        .iter()
        .map(|field| {
            vec![
                format!("`{}`", field.name),
                field.ty.clone(),
                if field.required { "yes" } else { "no" }.to_string(),
                field.description.clone(),
            ]
        })
        .collect();
    table(&["Field", "Type", "Required", "Description"], &rows)
}

fn method_anchor(name: &str) -> String {
    format!("method-{}", name.replace('/', "-"))
}

fn method_link(name: &str) -> String {
    format!("[`{name}`](#{})", method_anchor(name))
}

fn serialize_error(what: impl Into<String>) -> impl FnOnce(serde_json::Error) -> DocsError {
    let what = what.into();
    move |source| DocsError::Serialize { what, source }
}

fn line_of<T: Serialize>(value: &T, what: &str) -> Result<String, DocsError> {
    serde_json::to_string(value).map_err(serialize_error(what))
}

fn request_line(id: u32, method: &str, params: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{params}}}"#)
}

fn response_line(id: u32, result: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#)
}

fn notification_line(method: &str, params: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","method":"{method}","params":{params}}}"#)
}

fn error_line(
    id: u32,
    kind: ErrorKind,
    message: &str,
    field: Option<&str>,
) -> Result<String, DocsError> {
    let data = line_of(&ErrorData { kind, field: field.map(str::to_string) }, "error data")?;
    let message = Value::from(message);
    let code = kind.code();
    Ok(format!(
        r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":{code},"message":{message},"data":{data}}}}}"#
    ))
}

fn intro(doc: &mut Markdown) {
    doc.block("# rein protocol reference");
    doc.block(&format!(
        "> Generated from the `rein-protocol` crate by `{REGENERATE_COMMAND}`; do not edit it by \
         hand. A test fails when this file no longer matches the crate's types. The same \
         methods and types as one JSON Schema document: [`{SCHEMA_FILE}`]({SCHEMA_FILE})."
    ));
    doc.block(&format!(
        "This is the reference for writing a client of `reind`, the rein daemon: an editor \
         plugin, a script, or another front end. It describes protocol version \
         **{PROTOCOL_VERSION}**."
    ));
    doc.block(
        "Contents: [Connecting](#connecting) · [A first exchange](#a-first-exchange) · \
         [Errors](#errors) · [Methods](#methods) · \
         [Subscriptions and events](#subscriptions-and-events) · [Types](#types)",
    );

    doc.heading(2, "Connecting", Some("connecting"));
    doc.heading(3, "Transport", None);
    doc.block(
        "The daemon speaks [JSON-RPC 2.0](https://www.jsonrpc.org/specification) over a Unix \
         domain socket at `$REIN_HOME/run/reind.sock` (`REIN_HOME` defaults to \
         `~/.local/share/rein`). The socket is only open to the user who runs the daemon: it \
         is created with mode 0600 in a 0700 directory, and connections from another user id \
         are refused.",
    );
    doc.block(
        "A client that would rather spawn a process than open a socket (as editors do with \
         language servers) runs `rein stdio`: it starts the daemon when none is running and \
         bridges its own stdin and stdout to the socket, line for line.",
    );
    doc.heading(3, "Framing", None);
    doc.block(&format!(
        "Every message is one line: compact UTF-8 JSON followed by `\\n` (a `\\r\\n` ending is \
         accepted). A message must never contain a raw newline; JSON escapes newlines inside \
         strings, so compact serialization is always safe. The longest accepted line is \
         {} bytes ({} MiB, also reported as `capabilities.max_line_bytes` by `initialize`). \
         A longer line is discarded without being parsed and answered with an \
         `invalid_request` error whose `id` is `null`; a line that is not UTF-8 or not JSON is \
         answered with `parse_error`. Either way the connection stays open and the next line \
         is read normally.",
        DEFAULT_MAX_LINE_BYTES,
        DEFAULT_MAX_LINE_BYTES / (1024 * 1024)
    ));
    doc.heading(3, "Requests, responses and notifications", None);
    doc.block(
        "Method names are `family/verb`. Params are always one JSON object with named members; \
         for a method without params send `{}` or leave `params` out. Each request gets one \
         response with the same `id`. Requests on one connection may be answered out of \
         order (a slow `session/compact` does not hold up `session/state`), so match responses \
         by `id`. The daemon never sends requests to the client; it sends notifications (no \
         `id`) for the subscriptions the client made. Approval requests are therefore events \
         that the client answers with a call to `approval/respond`.",
    );
    doc.heading(3, "Handshake and versions", None);
    doc.block(&format!(
        "Send {} first: the client gives its name, version, protocol version and \
         capabilities (for example whether it shows approval requests to a person), and the \
         daemon answers with its own version, protocol version and capabilities. Scripts may \
         skip it; the connection then has default capabilities. The protocol version is \
         `MAJOR.MINOR`; this document describes `{PROTOCOL_VERSION}`. The daemon refuses an \
         `initialize` whose major version differs from its own with `incompatible_protocol`.",
        method_link(names::INITIALIZE)
    ));
    doc.block("The forward-compatibility rule, from the crate documentation:");
    let rule = crate_docs::section("Forward compatibility");
    let quoted: Vec<String> =
        rule.lines().map(|line| format!("> {line}").trim_end().to_string()).collect();
    doc.block(&quoted.join("\n"));
    doc.block(&format!(
        "The open unions are {}: a client skips a variant whose tag it does not know, and \
         their sections below say so. Missing optional members take the default given in \
         their description.",
        OPEN_UNIONS.map(type_link).join(", ")
    ));
}

/// A first exchange, line by line: handshake, create, subscribe, prompt, and the run's events.
fn walkthrough(doc: &mut Markdown) -> Result<(), DocsError> {
    doc.heading(2, "A first exchange", Some("a-first-exchange"));
    doc.block(
        "What a client and the daemon write, one line each (`->` marks the client's lines, \
         `<-` the daemon's; the arrows are not part of the protocol). The client introduces \
         itself, creates a session, subscribes to it, and sends a prompt; the call returns at \
         once and the run is followed through the events. Every line below comes from the \
         same types as the rest of this reference.",
    );
    let created = examples::created_state();
    let subscribe = SubscribeParams {
        session_id: created.session_id.clone(),
        after_seq: Some(created.last_seq),
    };
    let calls = [
        (names::INITIALIZE, line_of(&examples::initialize_params(), "initialize")?),
        (names::SESSION_CREATE, line_of(&examples::create_session_params(), "create")?),
        (names::SESSION_SUBSCRIBE, line_of(&subscribe, "subscribe")?),
        (names::SESSION_PROMPT, line_of(&examples::prompt_params(), "prompt")?),
    ];
    let results = [
        line_of(&examples::initialize_result(), "initialize")?,
        line_of(&created, "create")?,
        line_of(&examples::SESSION_SUBSCRIPTION, "subscribe")?,
        line_of(&examples::prompt_result(), "prompt")?,
    ];
    let mut lines = Vec::new();
    for ((id, (name, params)), result) in (1..).zip(calls).zip(results) {
        lines.push(format!("-> {}", request_line(id, name, &params)));
        lines.push(format!("<- {}", response_line(id, &result)));
    }
    for notification in examples::walkthrough_events(created.last_seq + 1) {
        let params = line_of(&notification, "walkthrough event")?;
        lines.push(format!("<- {}", notification_line(names::SESSION_EVENT, &params)));
    }
    doc.code("text", &lines);
    doc.block(
        "A real run streams many `message_update` lines (one per text, thinking or tool-call \
         fragment) and, when the model calls tools, `tool_execution_*` events and further \
         turns; `settled` says the session is idle and nothing more will come until a client \
         acts.",
    );
    Ok(())
}

fn errors(doc: &mut Markdown) -> Result<(), DocsError> {
    doc.heading(2, "Errors", Some("errors"));
    doc.block(&format!(
        "A failed call is answered with a JSON-RPC error object: `code` (a stable number), \
         `message` (text for people, which may change) and `data` ({}). `data.kind` names \
         the error as a word, so clients can match on it instead of the number; `data.field` \
         names the offending param for `invalid_params` when it is known. Clients must accept \
         kinds they do not know (treat them like `internal`).",
        type_link("ErrorData")
    ));
    doc.code(
        "json",
        &[
            error_line(4, ErrorKind::SessionNotFound, "no session 0193a5c2", None)?,
            error_line(5, ErrorKind::InvalidParams, "cwd must be absolute", Some("cwd"))?,
        ],
    );
    let rows: Vec<Vec<String>> = ErrorKind::ALL
        .iter()
        .map(|kind| {
            vec![
                kind.code().to_string(),
                format!("`{}`", kind.as_str()),
                kind.description().to_string(),
            ]
        })
        .collect();
    doc.block(&table(&["Code", "Kind", "Meaning"], &rows));
    doc.type_anchor_once("ErrorData");
    doc.heading(3, "ErrorData", None);
    let schema = doc.defs.get("ErrorData").cloned().unwrap_or(Value::Null);
    doc.block(&description(&schema));
    doc.block(&fields_table(&schema_text::fields(&schema, None)));
    Ok(())
}

fn methods(doc: &mut Markdown, reference: &Reference) -> Result<(), DocsError> {
    doc.heading(2, "Methods", Some("methods"));
    let rows: Vec<Vec<String>> = reference
        .methods
        .iter()
        .map(|method| vec![method_link(method.name), method.summary.to_string()])
        .collect();
    doc.block(&table(&["Method", "Summary"], &rows));
    for (index, method) in reference.methods.iter().enumerate() {
        let notification = reference.notifications.iter().find(|n| n.subscribe == method.name);
        self::method(doc, reference, method, notification, index as u32 + 1)?;
    }
    Ok(())
}

fn method(
    doc: &mut Markdown,
    reference: &Reference,
    method: &MethodDoc,
    notification: Option<&NotificationDoc>,
    id: u32,
) -> Result<(), DocsError> {
    let (params, result) = reference.method_schemas(method.name);
    doc.heading(3, &format!("`{}`", method.name), Some(&method_anchor(method.name)));
    doc.block(method.summary);
    payload(doc, "Params", params);
    payload(doc, "Result", result);
    let kinds: Vec<String> =
        method.errors.iter().map(|kind| format!("[`{kind}`](#errors)")).collect();
    doc.block(&format!("**Errors:** {}.", kinds.join(", ")));
    for note in &method.notes {
        doc.block(note);
    }
    let what = format!("{} example", method.name);
    let params_line = method.params.example_line().map_err(serialize_error(what.clone()))?;
    let result_line = method.result.example_line().map_err(serialize_error(what))?;
    let mut lines =
        vec![request_line(id, method.name, &params_line), response_line(id, &result_line)];
    if let Some(notification) = notification {
        let params =
            notification.params.example_line().map_err(serialize_error(notification.name))?;
        lines.push(notification_line(notification.name, &params));
    }
    doc.block(if notification.is_some() {
        "**Example** (request, response, then a notification):"
    } else {
        "**Example** (request, response):"
    });
    doc.code("json", &lines);
    Ok(())
}

/// The params or result part of a method: its type and fields.
fn payload(doc: &mut Markdown, label: &str, schema: &Value) {
    let Some(name) = ref_name(schema) else {
        doc.block(&format!("**{label}:** {}.", type_expr(schema)));
        return;
    };
    let def = doc.defs.get(name).cloned().unwrap_or(Value::Null);
    let first = doc.type_anchor_once(name);
    match schema_text::shape(&def, doc.defs) {
        Shape::Object(fields) if fields.is_empty() => {
            let none = if label == "Params" { " (send `{}` or omit `params`)" } else { "" };
            doc.block(&format!("**{label}:** {} — no fields{none}.", type_link(name)));
        }
        Shape::Object(fields) if first || fields.len() <= REPEATED_TABLE_ROWS => {
            doc.block(&format!("**{label}:** {} — {}", type_link(name), description(&def)));
            doc.block(&fields_table(&fields));
        }
        Shape::Object(_) => {
            doc.block(&format!("**{label}:** {}, whose fields are listed above.", type_link(name)));
        }
        _ => {
            doc.block(&format!("**{label}:** {}.", type_link(name)));
        }
    }
}

fn events(doc: &mut Markdown, reference: &Reference) -> Result<(), DocsError> {
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
         The daemon keeps a bounded replay buffer per session (its length is \
         `capabilities.replay_buffer` from `initialize`), so a client that reconnects and \
         subscribes with `after_seq` set to the last `seq` it saw misses nothing. When the \
         buffer no longer reaches back that far, or when a client reads too slowly and events \
         had to be dropped for it, the subscription ends with `resync_required` or `lagged`; \
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

fn variant_body(doc: &mut Markdown, variant: &Variant) {
    let mut text = variant.description.clone();
    if let Some(wrapped) = &variant.wraps {
        text.push_str(&format!(" Carries the fields of {}.", type_link(wrapped)));
    }
    if !text.is_empty() {
        doc.block(text.trim_start());
    }
    if variant.fields.is_empty() {
        doc.block("No other fields.");
    } else {
        doc.block(&fields_table(&variant.fields));
    }
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

fn types(doc: &mut Markdown) {
    doc.heading(2, "Types", Some("types"));
    doc.block(
        "Every other type used above, in alphabetical order. Integers are JSON numbers; \
         timestamps are milliseconds since the Unix epoch unless the field says RFC 3339.",
    );
    let names: Vec<String> = doc
        .defs
        .keys()
        .filter(|name| !doc.placed.contains(*name) && !EVENT_TYPES.contains(&name.as_str()))
        .cloned()
        .collect();
    for name in names {
        let def = doc.defs.get(&name).cloned().unwrap_or(Value::Null);
        doc.type_anchor_once(&name);
        doc.heading(3, &name, None);
        type_body(doc, &name, &def);
    }
}

fn type_body(doc: &mut Markdown, name: &str, def: &Value) {
    let text = description(def);
    match schema_text::shape(def, doc.defs) {
        Shape::Object(fields) => {
            doc.block(&text);
            if fields.is_empty() {
                doc.block("An object with no fields.");
            } else {
                doc.block(&fields_table(&fields));
            }
        }
        Shape::StringEnum(values) => {
            doc.block(&format!("{text} One of these strings:"));
            let rows: Vec<Vec<String>> = values
                .into_iter()
                .map(|(value, meaning)| vec![format!("`\"{value}\"`"), meaning])
                .collect();
            doc.block(&table(&["Value", "Meaning"], &rows));
        }
        Shape::Tagged { tag, common, variants } => {
            doc.block(&union_summary(name, &tag, &text));
            if !common.is_empty() {
                doc.block("Fields of every variant:");
                doc.block(&fields_table(&common));
            }
            for variant in &variants {
                doc.block(&format!("**`{tag}`: `\"{}\"`**", variant.tag_value));
                variant_body(doc, variant);
            }
        }
        Shape::Other(expr) => {
            let pattern = match def.get("pattern").and_then(Value::as_str) {
                Some(pattern) => format!(" matching `{pattern}`"),
                None => String::new(),
            };
            doc.block(&format!("{text} Type: {expr}{pattern}."));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entry::{RepairAction, SessionEntry};
    use crate::event::{AssistantDelta, DaemonEvent, SessionEvent, SubscriptionItem};
    use crate::message::{ContentBlock, Message};
    use serde::de::DeserializeOwned;

    /// Whether `T` parses a value whose tag is one no version has used.
    fn accepts_unknown_tag<T: DeserializeOwned>(mut value: Value, tag: &str) -> bool {
        value[tag] = Value::from("a_kind_from_the_future");
        serde_json::from_value::<T>(value).is_ok()
    }

    #[test]
    fn the_open_union_list_matches_the_types() {
        let empty = serde_json::json!({});
        let entry = serde_json::json!({"id": "e", "parent_id": null, "timestamp": "t"});
        let probes = [
            ("SessionEvent", accepts_unknown_tag::<SessionEvent>(empty.clone(), "kind")),
            ("AssistantDelta", accepts_unknown_tag::<AssistantDelta>(empty.clone(), "type")),
            ("SubscriptionItem", accepts_unknown_tag::<SubscriptionItem>(empty.clone(), "type")),
            ("DaemonEvent", accepts_unknown_tag::<DaemonEvent>(empty.clone(), "kind")),
            ("SessionEntry", accepts_unknown_tag::<SessionEntry>(entry, "type")),
            ("Message", accepts_unknown_tag::<Message>(empty.clone(), "role")),
            ("ContentBlock", accepts_unknown_tag::<ContentBlock>(empty.clone(), "type")),
            ("RepairAction", accepts_unknown_tag::<RepairAction>(empty, "action")),
        ];
        for (name, open) in probes {
            assert_eq!(OPEN_UNIONS.contains(&name), open, "{name}");
        }
        // Every tagged union in the schema is probed above.
        let reference = Reference::build();
        for (name, def) in reference.defs() {
            if let Shape::Tagged { .. } = schema_text::shape(def, reference.defs()) {
                assert!(probes.iter().any(|(probed, _)| probed == name), "probe {name}");
            }
        }
    }

    #[test]
    fn union_summaries_do_not_repeat_the_tag() {
        assert_eq!(
            union_summary("Message", "role", "A message, tagged by `role`."),
            "A message, tagged by `role`."
        );
        assert_eq!(
            union_summary("DaemonEvent", "kind", "An event."),
            "An event. Tagged by `kind`. A client skips `kind` values it does not know."
        );
    }
}
