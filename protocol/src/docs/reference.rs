//! The reference as one JSON document: every method and notification with its params and result
//! schemas and errors, the error kinds, and every type's schema under `$defs`.
//!
//! The markdown is rendered from this document, so the two files describe the same thing.

use super::DocsError;
use super::catalog::{self, MethodDoc, NotificationDoc, Payload};
use crate::error::{ErrorData, ErrorKind};
use crate::version::PROTOCOL_VERSION;
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

    /// The whole schema document.
    pub fn document(&self) -> Value {
        json!({
            "$schema": META_SCHEMA,
            "title": format!("rein protocol {PROTOCOL_VERSION}"),
            "description": "JSON-RPC 2.0 methods, notifications, errors and types of the rein \
                            daemon. Generated from the rein-protocol crate; see protocol.md.",
            "version": PROTOCOL_VERSION.to_string(),
            "methods": self.method_map,
            "notifications": self.notification_map,
            "errors": self.errors,
            "$defs": self.defs,
        })
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

    /// The document pretty-printed, with a trailing newline.
    pub fn schema_document_text(&self) -> Result<String, DocsError> {
        let mut text = serde_json::to_string_pretty(&self.document()).map_err(|source| {
            DocsError::Serialize { what: "the schema document".into(), source }
        })?;
        text.push('\n');
        Ok(text)
    }
}

fn schema_value(payload: &Payload, generator: &mut SchemaGenerator) -> Value {
    payload.schema(generator).to_value()
}
