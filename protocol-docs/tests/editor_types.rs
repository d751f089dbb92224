//! The VS Code extension's hand-written wire types (`editors/vscode/src/protocol.ts`) checked
//! against the generated schema (`docs/protocol.schema.json`): every field an interface names
//! exists on the wire type of the same name (and is required there when TypeScript says it is
//! always present), every method it calls exists, and its `ApprovalDecision` words are the
//! protocol's.

// A failed unwrap here is a failed test, reported with its location.
#![allow(clippy::unwrap_used)]

use serde_json::{Map, Value};
use std::collections::BTreeSet;
use std::path::Path;

/// The repository root (this crate's parent directory).
fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap()
}

fn schema() -> Value {
    let text = std::fs::read_to_string(repo().join("docs/protocol.schema.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn typescript() -> String {
    std::fs::read_to_string(repo().join("editors/vscode/src/protocol.ts")).unwrap()
}

/// One field of an exported TypeScript interface: its name and whether it is optional (`?`).
#[derive(Debug)]
struct TsField {
    name: String,
    optional: bool,
}

/// The exported interfaces of a TypeScript source: name and top-level fields (index
/// signatures left out).
fn interfaces(source: &str) -> Vec<(String, Vec<TsField>)> {
    let mut found = Vec::new();
    let mut lines = source.lines();
    while let Some(line) = lines.next() {
        let Some(rest) = line.strip_prefix("export interface ") else { continue };
        let name = rest.trim_end_matches('{').trim().to_string();
        let mut fields = Vec::new();
        for member in lines.by_ref() {
            if member.starts_with('}') {
                break;
            }
            // Top-level members are indented by two spaces; deeper lines belong to a member.
            let Some(member) = member.strip_prefix("  ").filter(|m| !m.starts_with(' ')) else {
                continue;
            };
            let Some((key, _)) = member.split_once(':') else { continue };
            if key.starts_with('[') || key.starts_with("//") || key.starts_with("/*") {
                continue;
            }
            let optional = key.ends_with('?');
            let name = key.trim_end_matches('?').trim().to_string();
            fields.push(TsField { name, optional });
        }
        found.push((name, fields));
    }
    found
}

/// The object shapes a schema allows, `$ref`s and `oneOf` choices followed: for each, its
/// property names and required names.
fn shapes(schema: &Value, defs: &Map<String, Value>) -> Vec<(BTreeSet<String>, BTreeSet<String>)> {
    if let Some(choices) = schema.get("oneOf").and_then(Value::as_array) {
        return choices.iter().flat_map(|choice| shapes(choice, defs)).collect();
    }
    let names = |key: &str, value: &Value| -> BTreeSet<String> {
        match value.get(key) {
            Some(Value::Object(map)) => map.keys().cloned().collect(),
            Some(Value::Array(items)) => {
                items.iter().filter_map(Value::as_str).map(str::to_string).collect()
            }
            _ => BTreeSet::new(),
        }
    };
    let mut properties = names("properties", schema);
    let mut required = names("required", schema);
    if let Some(target) = schema.get("$ref").and_then(Value::as_str) {
        let def = &defs[target.trim_start_matches("#/$defs/")];
        for (more_properties, more_required) in shapes(def, defs) {
            properties.extend(more_properties);
            required.extend(more_required);
        }
    }
    vec![(properties, required)]
}

#[test]
fn the_extension_interfaces_fit_the_wire_types() {
    let schema = schema();
    let defs = schema["$defs"].as_object().unwrap();
    let declared = interfaces(&typescript());
    let mut checked = 0;
    for (name, fields) in &declared {
        let Some(def) = defs.get(name) else { continue };
        let shapes = shapes(def, defs);
        assert!(!shapes.is_empty(), "{name} has no object shape in the schema");
        for field in fields {
            assert!(
                shapes.iter().any(|(properties, _)| properties.contains(&field.name)),
                "protocol.ts: {name}.{} is not a field of the wire type {name}",
                field.name
            );
            if !field.optional {
                assert!(
                    shapes.iter().all(|(_, required)| required.contains(&field.name)),
                    "protocol.ts: {name}.{} is always present in TypeScript but optional on \
                     the wire",
                    field.name
                );
            }
            checked += 1;
        }
    }
    let names: Vec<&str> = declared.iter().map(|(name, _)| name.as_str()).collect();
    for expected in ["SessionState", "SessionSummary", "SubscriptionItem", "SessionEvent"] {
        assert!(names.contains(&expected), "protocol.ts no longer declares {expected}");
    }
    assert!(checked >= 15, "only {checked} fields checked in {names:?}");
}

#[test]
fn the_extension_calls_only_methods_of_the_protocol() {
    let schema = schema();
    let methods = schema["methods"].as_object().unwrap();
    let source = typescript();
    let mut called = BTreeSet::new();
    for piece in source.split("call").skip(1) {
        // `call("name"` or `call<T>("name"`.
        let piece = piece.strip_prefix('<').map_or(piece, |rest| {
            rest.split_once(">(").map_or("", |(_, after)| after).trim_start_matches('(')
        });
        let Some(rest) = piece.strip_prefix("(\"").or_else(|| piece.strip_prefix('"')) else {
            continue;
        };
        if let Some((name, _)) = rest.split_once('"') {
            called.insert(name.to_string());
        }
    }
    assert!(called.len() >= 8, "found only {called:?}");
    for name in &called {
        assert!(methods.contains_key(name), "protocol.ts calls {name}, which is not a method");
    }
}

#[test]
fn the_extension_approval_decisions_are_the_protocols() {
    let schema = schema();
    let wire: BTreeSet<String> = schema["$defs"]["ApprovalDecision"]["oneOf"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|choice| choice["const"].as_str())
        .filter(|word| *word != "unknown")
        .map(str::to_string)
        .collect();
    let source = typescript();
    let line = source
        .lines()
        .find(|line| line.starts_with("export type ApprovalDecision ="))
        .unwrap_or_else(|| panic!("protocol.ts declares no ApprovalDecision"));
    let declared: BTreeSet<String> =
        line.split('"').skip(1).step_by(2).map(str::to_string).collect();
    assert_eq!(declared, wire);
}
