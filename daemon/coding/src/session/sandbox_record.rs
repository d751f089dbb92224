//! The sandbox a session was created with, kept in its file, so loading the session again
//! (after an idle unload or a daemon restart) never runs its tools with less confinement than
//! it was given. A `custom` entry (`rein.sandbox`) holds it: never sent to the model, and
//! older rein versions keep it as an unknown extension entry.

use rein_protocol::EntryKind;
use rein_protocol::method::SandboxMode;
use rein_session::Session;
use serde_json::json;

/// The `custom_type` of the entry.
pub(crate) const SANDBOX_ENTRY: &str = "rein.sandbox";

/// The entry recording `mode`.
pub(crate) fn entry(mode: SandboxMode) -> EntryKind {
    EntryKind::Custom { custom_type: SANDBOX_ENTRY.to_string(), data: json!({ "mode": mode }) }
}

/// The sandbox recorded in `file`, if one was (the last record wins).
pub(crate) fn recorded(file: &Session) -> Option<SandboxMode> {
    file.tree().entries().iter().rev().find_map(|entry| match &entry.kind {
        EntryKind::Custom { custom_type, data } if custom_type == SANDBOX_ENTRY => {
            serde_json::from_value(data.get("mode")?.clone()).ok()
        }
        _ => None,
    })
}
