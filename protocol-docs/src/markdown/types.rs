//! The types section: every type not already documented with a method or an event.

use super::{EVENT_TYPES, Markdown, fields_table, table, union_summary, variant_body};
use crate::schema_text::{self, Shape, description};
use serde_json::Value;

pub(super) fn types(doc: &mut Markdown) {
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
