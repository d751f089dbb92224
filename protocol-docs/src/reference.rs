//! The reference as one JSON document: every method and notification with its params and result
//! schemas and errors, the error kinds, and every type's schema under `$defs`.
//!
//! The markdown is rendered from this document, so the two files describe the same thing.

use super::DocsError;
use super::catalog::{self, MethodDoc, NotificationDoc, Payload};
use rein_protocol::error::{ErrorData, ErrorKind};
use rein_protocol::version::PROTOCOL_VERSION;
use schemars::SchemaGenerator;
use serde_json::{Map, Value, json};

/// The JSON Schema dialect of the document.
const META_SCHEMA: &str = "https://json-schema.org/draft/2020-12/schema";

/// What a missing key reads as.
static NULL: Value = Value::Null;

/// The catalog together with the schema document built from it.
#[derive(Debug)]
pub struct Reference {
    /// Every method, in the documented order.
    pub methods: Vec<MethodDoc>,
    /// Every notification, in the documented order.
    pub notifications: Vec<NotificationDoc>,
    method_map: Map<String, Value>,
    notification_map: Map<String, Value>,
    errors: Value,
    defs: Map<String, Value>,
}

impl Reference {
    /// Builds the schema document from the catalog.
    pub fn build() -> Self {
        let methods = catalog::methods();
        let notifications = catalog::notifications();
        let mut generator = SchemaGenerator::default();

        let mut method_map = Map::new();
        for doc in &methods {
            let errors: Vec<&str> = doc.errors.iter().map(|kind| kind.as_str()).collect();
            method_map.insert(
                doc.name.to_string(),
                json!({
                    "summary": doc.summary,
                    "params": schema_value(&doc.params, &mut generator),
                    "result": schema_value(&doc.result, &mut generator),
                    "errors": errors,
                }),
            );
        }

        let mut notification_map = Map::new();
        for doc in &notifications {
            notification_map.insert(
                doc.name.to_string(),
                json!({
                    "summary": doc.summary,
                    "params": schema_value(&doc.params, &mut generator),
                    "subscribe": doc.subscribe,
                    "unsubscribe": doc.unsubscribe,
                }),
            );
        }

        let mut kinds = Map::new();
        for kind in ErrorKind::ALL {
            kinds.insert(
                kind.as_str().to_string(),
                json!({"code": kind.code(), "description": kind.description()}),
            );
        }
        let error_data = generator.subschema_for::<ErrorData>().to_value();

        let defs = generator.take_definitions(true);
        Self {
            methods,
            notifications,
            method_map,
            notification_map,
            errors: json!({"data": error_data, "kinds": kinds}),
            defs,
        }
    }

    /// The top-level members of the schema document, in the order the file shows them.
    fn members(&self) -> Vec<(&'static str, Value)> {
        vec![
            ("$schema", Value::from(META_SCHEMA)),
            ("title", Value::from(format!("rein protocol {PROTOCOL_VERSION}"))),
            (
                "description",
                Value::from(
                    "JSON-RPC 2.0 methods, notifications, errors and types of the rein daemon. \
                     Generated from the rein-protocol crate; see protocol.md.",
                ),
            ),
            ("version", Value::from(PROTOCOL_VERSION.to_string())),
            ("methods", Value::Object(self.method_map.clone())),
            ("notifications", Value::Object(self.notification_map.clone())),
            ("errors", self.errors.clone()),
            ("$defs", Value::Object(self.defs.clone())),
        ]
    }

    /// The whole schema document.
    pub fn document(&self) -> Value {
        let members = self.members().into_iter().map(|(key, value)| (key.to_string(), value));
        Value::Object(members.collect())
    }

    /// Every type's schema, by name.
    pub fn defs(&self) -> &Map<String, Value> {
        &self.defs
    }

    /// The params and result schemas of a method, as stored in the document.
    pub fn method_schemas(&self, name: &str) -> (&Value, &Value) {
        match self.method_map.get(name) {
            Some(entry) => (&entry["params"], &entry["result"]),
            None => (&NULL, &NULL),
        }
    }

    /// The params schema of a notification.
    pub fn notification_schema(&self, name: &str) -> &Value {
        self.notification_map.get(name).map_or(&NULL, |entry| &entry["params"])
    }

    /// The document pretty-printed with two-space indentation and a trailing newline; the
    /// top-level members come in a fixed reading order (metadata, methods, notifications,
    /// errors, types), everything below them sorted by key.
    pub fn schema_document_text(&self) -> Result<String, DocsError> {
        let mut parts = Vec::new();
        for (key, value) in self.members() {
            let value = serde_json::to_string_pretty(&value).map_err(|source| {
                DocsError::Serialize { what: format!("the schema document's {key}"), source }
            })?;
            // Pretty JSON has no raw newlines inside strings, so indenting by line is safe.
            parts.push(format!("  {}: {}", Value::from(key), value.replace('\n', "\n  ")));
        }
        Ok(format!("{{\n{}\n}}\n", parts.join(",\n")))
    }
}

fn schema_value(payload: &Payload, generator: &mut SchemaGenerator) -> Value {
    payload.schema(generator).to_value()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_is_the_document_in_reading_order() {
        let reference = Reference::build();
        let text = reference.schema_document_text().unwrap();
        let parsed: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(parsed, reference.document());
        assert!(text.starts_with("{\n  \"$schema\": "), "{}", &text[..40]);
        assert!(text.ends_with("}\n"));
        let methods = text.find("\n  \"methods\": ").unwrap();
        let defs = text.find("\n  \"$defs\": ").unwrap();
        assert!(methods < defs);
    }

    #[test]
    fn every_method_has_its_errors_and_schemas() {
        let reference = Reference::build();
        for doc in &reference.methods {
            let (params, result) = reference.method_schemas(doc.name);
            assert!(params.is_object(), "{}", doc.name);
            assert!(result.is_object(), "{}", doc.name);
        }
        assert!(reference.method_schemas("no/such").0.is_null());
    }
}
