//! Renders `docs/protocol.md` from the [`Reference`]: an introduction for client authors
//! ([`intro`]), every method ([`methods`]), the subscriptions and their events ([`events`]), and
//! every other type ([`types`]). This module holds the document builder and the table helpers
//! they share; [`wire`] writes the example JSON-RPC lines.

mod events;
mod intro;
mod methods;
mod types;
mod wire;

use super::DocsError;
use super::reference::Reference;
use super::schema_text::{
    self, Field, Shape, Variant, description, ref_name, type_anchor, type_expr, type_link,
};
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
const OPEN_UNIONS: [&str; 6] = [
    "SessionEvent",
    "AssistantDelta",
    "SubscriptionItem",
    "DaemonEvent",
    "SessionEntry",
    "KeySource",
];

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
pub(crate) fn render(reference: &Reference) -> Result<String, DocsError> {
    let mut doc = Markdown::new(reference.defs());
    intro::intro(&mut doc);
    intro::walkthrough(&mut doc)?;
    intro::errors(&mut doc)?;
    methods::methods(&mut doc, reference)?;
    events::events(&mut doc, reference)?;
    types::types(&mut doc);
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

/// A markdown table; cells are escaped.
fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut out = format!("| {} |\n", header.join(" | "));
    out.push_str(&format!("|{}\n", " --- |".repeat(header.len())));
    for row in rows {
        let cells: Vec<String> = row.iter().map(|text| cell(text)).collect();
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    out
}

/// The table of an object's fields.
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

/// The anchor of a method's (or notification's) section.
fn method_anchor(name: &str) -> String {
    format!("method-{}", name.replace('/', "-"))
}

/// A link to a method's section.
fn method_link(name: &str) -> String {
    format!("[`{name}`](#{})", method_anchor(name))
}

/// A union variant's description and fields.
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

#[cfg(test)]
mod tests {
    use super::*;
    use rein_protocol::entry::{RepairAction, SessionEntry};
    use rein_protocol::event::{AssistantDelta, DaemonEvent, SessionEvent, SubscriptionItem};
    use rein_protocol::message::{ContentBlock, Message};
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
            (
                "KeySource",
                accepts_unknown_tag::<rein_protocol::method::KeySource>(empty.clone(), "source"),
            ),
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
