//! The opening sections: connecting (transport, framing, requests, handshake and versions), a
//! first exchange line by line, and the errors.

use super::wire::{error_line, line_of, notification_line, request_line, response_line};
use super::{Markdown, OPEN_UNIONS, fields_table, method_link, table};
use crate::schema_text::{self, description, type_link};
use crate::{DocsError, REGENERATE_COMMAND, SCHEMA_FILE, crate_docs, examples};
use rein_protocol::codec::DEFAULT_MAX_LINE_BYTES;
use rein_protocol::error::ErrorKind;
use rein_protocol::method::{SubscribeParams, names};
use rein_protocol::version::PROTOCOL_VERSION;
use serde_json::Value;

pub(super) fn intro(doc: &mut Markdown) {
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
         is created with mode 0600 in a 0700 directory, and a connection from another user id \
         gets one `invalid_request` error line (id `null`) and is closed.",
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
         order (a slow `session/compact` does not hold up `session/state`; see Order below), \
         so match responses by `id`. The daemon never sends requests to the client; it sends notifications (no \
         `id`) for the subscriptions the client made. Approval requests are therefore events \
         that the client answers with a call to `approval/respond`.",
    );
    doc.heading(3, "Order", None);
    doc.block(
        "Requests from one connection that change a session apply in the order they arrived: \
         every request naming a `session_id` waits for the earlier ones of the same \
         connection on the same session, so `session/set_model` then `session/prompt` written \
         together prompts the new model, and 200 pipelined `session/rename` calls leave the \
         last name. Their responses come in that order too. Reads (`session/open`, `state`, \
         `messages`, `tree`, `queue`, `export`, `session/list`) and control calls \
         (`session/cancel`, `session/clear_queue`, `approval/respond`) never wait: they may \
         overtake commands sent before them. `initialize`, `session/subscribe` and the \
         unsubscribe calls also keep their order among themselves, so a subscribe and an \
         unsubscribe of its id (`sub-1`, `sub-2`, ... per connection) written together end \
         with no subscription. There is no order between connections.",
    );
    doc.heading(3, "Request ids", None);
    doc.block(
        "An `id` is a string, a number or `null`, and the response carries it back exactly as \
         sent, including negative, fractional and very large numbers (`-1`, `1.5`, `1e400`). \
         A request whose `id` is of another type (object, array, boolean) is invalid and is \
         answered with `invalid_request` and `id: null`. A request without `id` is a \
         notification and gets no response.",
    );
    doc.heading(3, "Limits", None);
    doc.block(
        "The daemon bounds what one client can hold. A connection has at most 64 requests in \
         hand at once (`reind --max-in-flight`); past that the daemon stops reading it until \
         answers have been written, so a client that writes without reading is simply not \
         read. A line must be finished within 60 s of its first byte \
         (`--line-deadline-secs`), with no pause over 10 s in the middle of it \
         (`--partial-line-idle-secs`), and all connections together may hold 64 MiB of \
         unfinished lines (`--max-buffered-input`). A connection over one of these limits \
         gets one error line (`invalid_request` for the deadlines, `overloaded` for the \
         budget) with `id: null` and is closed. Over the connection limit \
         (`--max-connections`, 4096) a new connection may still call `initialize`, \
         `daemon/info` and `daemon/shutdown`; any other request, or 2 s of silence, gets \
         one `overloaded` error line and the connection closes. When a client hangs up (end \
         of input), its subscriptions end at once and the requests it already sent are \
         answered before the connection closes. Histories come in pages \
         (`session/messages`, `session/tree`) so that no reply outgrows the line limit.",
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
pub(super) fn walkthrough(doc: &mut Markdown) -> Result<(), DocsError> {
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
        stream: Some(created.stream.clone()),
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

pub(super) fn errors(doc: &mut Markdown) -> Result<(), DocsError> {
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
