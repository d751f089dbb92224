//! The generated protocol reference: it matches the committed files, documents every method and
//! event, and its examples survive a round trip through their types and fit their schemas.

// A failed unwrap here is a failed test, reported with its location.
#![allow(clippy::unwrap_used)]

use rein_protocol::docs::{self, catalog, examples, reference::Reference};
use rein_protocol::method::names;
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
         `{}` (or `{UPDATE_VARIABLE}=1 cargo test -p rein-protocol --test docs`) and commit \
         the result.",
        stale.join(" and docs/"),
        docs::REGENERATE_COMMAND,
    );
}

#[test]
fn generation_is_deterministic() {
    assert_eq!(docs::generate().unwrap(), docs::generate().unwrap());
}

/// The string values of the `pub const NAME: &str = "...";` lines inside `mod names`.
fn name_constants_in_source() -> BTreeSet<String> {
    let source = include_str!("../src/method.rs");
    let start = source.find("pub mod names {").unwrap();
    let body = &source[start..];
    let end = body.find("\n}").unwrap();
    body[..end]
        .lines()
        .filter_map(|line| {
            let rest = line.trim().strip_prefix("pub const ")?;
            let (_, value) = rest.split_once(": &str = \"")?;
            Some(value.strip_suffix("\";")?.to_string())
        })
        .collect()
}

#[test]
fn every_name_constant_is_documented() {
    let constants = name_constants_in_source();
    assert!(constants.len() > 30, "scanning method.rs found only {constants:?}");
    let listed: BTreeSet<String> =
        names::METHODS.iter().chain(names::NOTIFICATIONS).map(|name| name.to_string()).collect();
    assert_eq!(constants, listed, "names::METHODS and names::NOTIFICATIONS must list every name");
    assert_eq!(listed.len(), names::METHODS.len() + names::NOTIFICATIONS.len(), "listed twice");

    let documented: BTreeSet<String> = catalog::methods()
        .iter()
        .map(|doc| doc.name)
        .chain(catalog::notifications().iter().map(|doc| doc.name))
        .map(str::to_string)
        .collect();
    assert_eq!(documented, constants);

    let markdown = docs::generate().unwrap().markdown;
    for name in &constants {
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
    let source = include_str!("../src/method.rs");
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

/// A structural check of a value against the subset of JSON Schema that schemars emits for
/// these types: `$ref`, `type`, `properties`, `required`, `oneOf`, `anyOf`, `const`, `enum`,
/// `items`, `additionalProperties`, `minimum` and `pattern`-free strings.
mod schema_check {
    use serde_json::{Map, Value};

    pub fn check(schema: &Value, value: &Value, defs: &Map<String, Value>) -> Result<(), String> {
        let object = match schema {
            Value::Bool(true) => return Ok(()),
            Value::Bool(false) => return Err("false schema".into()),
            Value::Object(object) => object,
            _ => return Err(format!("not a schema: {schema}")),
        };
        if let Some(reference) = object.get("$ref").and_then(Value::as_str) {
            let name = reference.trim_start_matches("#/$defs/");
            let target = defs.get(name).ok_or_else(|| format!("dangling $ref {reference}"))?;
            check(target, value, defs)?;
        }
        if let Some(types) = object.get("type") {
            let allowed: Vec<&str> = match types {
                Value::String(name) => vec![name.as_str()],
                Value::Array(names) => names.iter().filter_map(Value::as_str).collect(),
                _ => vec![],
            };
            if !allowed.iter().any(|name| has_type(value, name)) {
                return Err(format!("{value} is not {allowed:?}"));
            }
        }
        if let Some(constant) = object.get("const")
            && constant != value
        {
            return Err(format!("{value} is not {constant}"));
        }
        if let Some(values) = object.get("enum").and_then(Value::as_array)
            && !values.contains(value)
        {
            return Err(format!("{value} is not one of {values:?}"));
        }
        if let Some(minimum) = object.get("minimum").and_then(Value::as_f64)
            && value.as_f64().is_some_and(|number| number < minimum)
        {
            return Err(format!("{value} is below {minimum}"));
        }
        if let Some(members) = value.as_object() {
            check_members(object, members, defs)?;
        }
        if let (Some(items), Some(values)) = (object.get("items"), value.as_array()) {
            for item in values {
                check(items, item, defs)?;
            }
        }
        if let Some(choices) = object.get("oneOf").and_then(Value::as_array) {
            let fits = choices.iter().filter(|choice| check(choice, value, defs).is_ok()).count();
            if fits != 1 {
                return Err(format!("{value} fits {fits} of the oneOf choices"));
            }
        }
        if let Some(choices) = object.get("anyOf").and_then(Value::as_array)
            && !choices.iter().any(|choice| check(choice, value, defs).is_ok())
        {
            return Err(format!("{value} fits none of the anyOf choices"));
        }
        Ok(())
    }

    fn check_members(
        schema: &Map<String, Value>,
        members: &Map<String, Value>,
        defs: &Map<String, Value>,
    ) -> Result<(), String> {
        for name in schema.get("required").and_then(Value::as_array).into_iter().flatten() {
            let name = name.as_str().unwrap_or_default();
            if !members.contains_key(name) {
                return Err(format!("missing required member {name}"));
            }
        }
        let properties = schema.get("properties").and_then(Value::as_object);
        for (name, member) in members {
            match properties.and_then(|properties| properties.get(name)) {
                Some(property) => {
                    check(property, member, defs).map_err(|e| format!("{name}: {e}"))?
                }
                None => {
                    if let Some(extra) = schema.get("additionalProperties") {
                        check(extra, member, defs).map_err(|e| format!("{name}: {e}"))?;
                    }
                }
            }
        }
        Ok(())
    }

    fn has_type(value: &Value, name: &str) -> bool {
        match name {
            "null" => value.is_null(),
            "boolean" => value.is_boolean(),
            "string" => value.is_string(),
            "array" => value.is_array(),
            "object" => value.is_object(),
            "number" => value.is_number(),
            "integer" => value.is_i64() || value.is_u64(),
            _ => false,
        }
    }
}
