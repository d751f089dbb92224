//! The generated protocol reference: it matches the committed files, documents every method and
//! event, and its examples survive a round trip through their types and fit their schemas.

// A failed unwrap here is a failed test, reported with its location.
#![allow(clippy::unwrap_used)]

use rein_protocol::method::names;
use rein_protocol::requests::MethodId;
use rein_protocol_docs::{self as docs, catalog, examples, reference::Reference};
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::BTreeSet;

/// Set to regenerate the committed files instead of comparing them.
const UPDATE_VARIABLE: &str = "REIN_UPDATE_DOCS";

#[test]
fn committed_docs_match_the_generator() {
    let generated = docs::generate().unwrap();
    let dir = docs::repo_docs_dir();
    if std::env::var_os(UPDATE_VARIABLE).is_some() {
        std::fs::create_dir_all(&dir).unwrap();
        generated.write_to(&dir).unwrap();
        return;
    }
    let stale = generated.stale_files(&dir).unwrap();
    assert!(
        stale.is_empty(),
        "docs/{} out of date with the protocol crate's types. Regenerate with \
         `{}` (or `{UPDATE_VARIABLE}=1 cargo test -p rein-protocol-docs --test docs`) and commit \
         the result.",
        stale.join(" and docs/"),
        docs::REGENERATE_COMMAND,
    );
}

#[test]
fn generation_is_deterministic() {
    assert_eq!(docs::generate().unwrap(), docs::generate().unwrap());
}

#[test]
fn every_method_of_the_table_is_documented() {
    let table: Vec<&str> = MethodId::ALL.iter().map(|id| id.name()).collect();
    assert_eq!(table, names::METHODS, "names::METHODS follows the method table");
    let listed: BTreeSet<&str> =
        names::METHODS.iter().chain(names::NOTIFICATIONS).copied().collect();
    assert_eq!(listed.len(), names::METHODS.len() + names::NOTIFICATIONS.len(), "listed twice");

    let documented: Vec<&str> = catalog::methods().iter().map(|doc| doc.name).collect();
    assert_eq!(documented, names::METHODS, "the reference follows the table's order");
    let notified: Vec<&str> = catalog::notifications().iter().map(|doc| doc.name).collect();
    assert_eq!(notified, names::NOTIFICATIONS);

    let markdown = docs::generate().unwrap().markdown;
    for name in &listed {
        assert!(markdown.contains(&format!("### `{name}`")), "no section for {name}");
    }
}

#[test]
fn the_markdown_covers_transport_errors_and_every_kind() {
    let markdown = docs::generate().unwrap().markdown;
    for fact in ["$REIN_HOME/run/reind.sock", "rein stdio", "16 MiB", "\"data\":{\"kind\":"] {
        assert!(markdown.contains(fact), "intro lacks {fact}");
    }
    for kind in rein_protocol::ErrorKind::ALL {
        let row = format!("| {} | `{}` | {} |", kind.code(), kind.as_str(), kind.description());
        assert!(markdown.contains(&row), "error table lacks {kind}");
    }
    let tagged = [
        ("event", example_tags(&examples::session_events(), "kind")),
        ("delta", example_tags(&examples::assistant_deltas(), "type")),
        ("item", example_tags(&examples::subscription_items(), "type")),
        ("daemon-event", example_tags(&examples::daemon_events(), "kind")),
    ];
    for (prefix, kinds) in tagged {
        for kind in kinds {
            let anchor = format!("<a id=\"{prefix}-{kind}\"></a>\n\n#### `{kind}`");
            assert!(markdown.contains(&anchor), "no section for {prefix} {kind}");
        }
    }
    let notification = r#"{"jsonrpc":"2.0","method":"session/event","params":{"subscription":"#;
    assert!(markdown.contains(notification));
}

#[test]
fn every_link_in_the_markdown_has_its_anchor() {
    let markdown = docs::generate().unwrap().markdown;
    let anchors: BTreeSet<&str> =
        markdown.split("<a id=\"").skip(1).filter_map(|piece| piece.split('"').next()).collect();
    let mut checked = 0;
    for piece in markdown.split("](#").skip(1) {
        let target = piece.split(')').next().unwrap();
        assert!(anchors.contains(target), "link to missing anchor #{target}");
        checked += 1;
    }
    assert!(checked > 100, "only {checked} links");
}

#[test]
fn every_type_in_method_rs_is_documented() {
    let source = include_str!("../../protocol/src/method.rs");
    let declared: Vec<&str> = source
        .lines()
        .filter_map(|line| {
            let rest =
                line.strip_prefix("pub struct ").or_else(|| line.strip_prefix("pub enum "))?;
            rest.split(|c: char| !c.is_alphanumeric() && c != '_').next()
        })
        .collect();
    assert!(declared.len() > 40, "scanning method.rs found only {declared:?}");
    let reference = Reference::build();
    let defs = reference.defs();
    for name in declared {
        // The generic notification type is named after its item (`{T}Notification`).
        let schema_name = match name {
            "SubscriptionNotification" => "SubscriptionItemNotification",
            other => other,
        };
        assert!(defs.contains_key(schema_name), "{name} is in method.rs but no method uses it");
    }
}

#[test]
fn every_example_round_trips_through_its_type() {
    for doc in catalog::methods() {
        doc.params.check_round_trip().unwrap_or_else(|e| panic!("{} params: {e}", doc.name));
        doc.result.check_round_trip().unwrap_or_else(|e| panic!("{} result: {e}", doc.name));
    }
    for doc in catalog::notifications() {
        doc.params.check_round_trip().unwrap_or_else(|e| panic!("{} params: {e}", doc.name));
    }
    round_trip_all(&examples::session_events());
    round_trip_all(&examples::assistant_deltas());
    round_trip_all(&examples::subscription_items());
    round_trip_all(&examples::daemon_events());
    round_trip_all(&examples::walkthrough_events(1));
}

fn round_trip_all<T>(values: &[T])
where
    T: Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
{
    for value in values {
        let line = serde_json::to_string(value).unwrap();
        assert!(!line.contains('\n'));
        let back: T = serde_json::from_str(&line).unwrap();
        assert_eq!(&back, value, "{line}");
    }
}

/// The tag values of a tagged union's `$defs` entry.
fn variant_tags(defs: &Map<String, Value>, type_name: &str, tag: &str) -> BTreeSet<String> {
    defs[type_name]["oneOf"]
        .as_array()
        .unwrap()
        .iter()
        .map(|choice| choice["properties"][tag]["const"].as_str().unwrap().to_string())
        .collect()
}

fn example_tags<T: Serialize>(values: &[T], tag: &str) -> BTreeSet<String> {
    let tags: Vec<String> = values
        .iter()
        .map(|value| serde_json::to_value(value).unwrap()[tag].as_str().unwrap().to_string())
        .collect();
    let unique: BTreeSet<String> = tags.iter().cloned().collect();
    assert_eq!(unique.len(), tags.len(), "one example per kind: {tags:?}");
    unique
}

#[test]
fn every_event_kind_has_exactly_one_example() {
    let reference = Reference::build();
    let defs = reference.defs();
    let cases = [
        ("SessionEvent", "kind", example_tags(&examples::session_events(), "kind")),
        ("AssistantDelta", "type", example_tags(&examples::assistant_deltas(), "type")),
        ("SubscriptionItem", "type", example_tags(&examples::subscription_items(), "type")),
        ("DaemonEvent", "kind", example_tags(&examples::daemon_events(), "kind")),
    ];
    for (type_name, tag, examples) in cases {
        let kinds = variant_tags(defs, type_name, tag);
        assert!(!kinds.contains("unknown"), "{type_name} documents its catch-all variant");
        assert_eq!(kinds, examples, "{type_name} kinds and examples differ");
    }
}

#[test]
fn every_example_fits_its_schema() {
    let reference = Reference::build();
    let defs = reference.defs();
    for doc in &reference.methods {
        let (params, result) = reference.method_schemas(doc.name);
        let value = doc.params.example_json().unwrap();
        schema_check::check(params, &value, defs)
            .unwrap_or_else(|e| panic!("{} params: {e}", doc.name));
        let value = doc.result.example_json().unwrap();
        schema_check::check(result, &value, defs)
            .unwrap_or_else(|e| panic!("{} result: {e}", doc.name));
    }
    for doc in &reference.notifications {
        let schema = reference.notification_schema(doc.name);
        let value = doc.params.example_json().unwrap();
        schema_check::check(schema, &value, defs).unwrap_or_else(|e| panic!("{}: {e}", doc.name));
    }
    let event = serde_json::json!({"$ref": "#/$defs/SessionEvent"});
    for value in examples::session_events() {
        let value = serde_json::to_value(value).unwrap();
        schema_check::check(&event, &value, defs).unwrap_or_else(|e| panic!("{value}: {e}"));
    }
    let notification = reference.notification_schema(names::SESSION_EVENT);
    for value in examples::walkthrough_events(1) {
        let value = serde_json::to_value(value).unwrap();
        schema_check::check(notification, &value, defs).unwrap_or_else(|e| panic!("{value}: {e}"));
    }
}

#[test]
fn the_schema_check_rejects_what_does_not_fit() {
    let reference = Reference::build();
    let defs = reference.defs();
    let (params, _) = reference.method_schemas(names::SESSION_PROMPT);
    let missing_text = serde_json::json!({"session_id": "s"});
    assert!(schema_check::check(params, &missing_text, defs).is_err());
    let wrong_type = serde_json::json!({"session_id": "s", "text": 3});
    assert!(schema_check::check(params, &wrong_type, defs).is_err());
    let bad_enum = serde_json::json!({"session_id": "s", "text": "t", "when_busy": "later"});
    assert!(schema_check::check(params, &bad_enum, defs).is_err());
    let event = serde_json::json!({"$ref": "#/$defs/SessionEvent"});
    let bad_kind = serde_json::json!({"kind": "turn_start"});
    assert!(schema_check::check(&event, &bad_kind, defs).is_err());
}

#[test]
fn the_schema_document_has_its_parts() {
    let document = Reference::build().document();
    assert_eq!(document["$schema"], "https://json-schema.org/draft/2020-12/schema");
    assert!(document["title"].as_str().unwrap().starts_with("rein protocol"));
    let methods = document["methods"].as_object().unwrap();
    assert_eq!(methods.len(), names::METHODS.len());
    let prompt = &methods[names::SESSION_PROMPT];
    assert_eq!(prompt["params"]["$ref"], "#/$defs/PromptParams");
    assert!(prompt["errors"].as_array().unwrap().contains(&Value::from("session_busy")));
    let notifications = document["notifications"].as_object().unwrap();
    assert_eq!(
        notifications[names::SESSION_EVENT]["params"]["$ref"],
        "#/$defs/SubscriptionItemNotification"
    );
    assert_eq!(document["errors"]["kinds"]["session_not_found"]["code"], -32001);
    // Every reference resolves.
    let text = serde_json::to_string(&document).unwrap();
    for piece in text.split("\"$ref\":\"#/$defs/").skip(1) {
        let name = piece.split('"').next().unwrap();
        assert!(document["$defs"].get(name).is_some(), "dangling $ref {name}");
    }
}

/// Checks a value against a schema of the reference with the `jsonschema` crate (JSON Schema
/// 2020-12); `$ref`s point into the reference's `$defs`.
mod schema_check {
    use serde_json::{Map, Value, json};

    pub(crate) fn check(
        schema: &Value,
        value: &Value,
        defs: &Map<String, Value>,
    ) -> Result<(), String> {
        let root = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$defs": defs,
            "allOf": [schema],
        });
        let validator =
            jsonschema::draft202012::new(&root).map_err(|e| format!("invalid schema: {e}"))?;
        validator.validate(value).map_err(|e| e.to_string())
    }
}
