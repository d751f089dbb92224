//! Reading schemars output for people: a schema's type as a short expression, an object's
//! fields, and the shape of a type (object, string enum, tagged union).

use serde_json::{Map, Value};

/// The markdown anchor of a type's section.
pub(crate) fn type_anchor(name: &str) -> String {
    format!("type-{}", name.to_lowercase())
}

/// A markdown link to a type's section.
pub(crate) fn type_link(name: &str) -> String {
    format!("[`{name}`](#{})", type_anchor(name))
}

/// The name a `$ref` points at (`#/$defs/Name` gives `Name`).
pub(crate) fn ref_name(schema: &Value) -> Option<&str> {
    schema.get("$ref")?.as_str()?.rsplit('/').next()
}

/// A schema's type as a short markdown expression: `string`, `integer | null`, `array of` a
/// linked type, `map of string to ...`, a quoted constant, or `any`.
pub(crate) fn type_expr(schema: &Value) -> String {
    let Some(object) = schema.as_object() else {
        return "any".into();
    };
    if let Some(name) = ref_name(schema) {
        return type_link(name);
    }
    if let Some(value) = object.get("const") {
        return format!("`{value}`");
    }
    if let Some(values) = object.get("enum").and_then(Value::as_array) {
        return values.iter().map(|value| format!("`{value}`")).collect::<Vec<_>>().join(" | ");
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(choices) = object.get(key).and_then(Value::as_array) {
            return choices.iter().map(type_expr).collect::<Vec<_>>().join(" | ");
        }
    }
    match object.get("type") {
        Some(Value::String(name)) => named_type_expr(name, object),
        Some(Value::Array(names)) => names
            .iter()
            .filter_map(Value::as_str)
            .map(|name| named_type_expr(name, object))
            .collect::<Vec<_>>()
            .join(" | "),
        _ => "any".into(),
    }
}

fn named_type_expr(name: &str, object: &Map<String, Value>) -> String {
    match name {
        "array" => match object.get("items") {
            Some(items) => format!("array of {}", type_expr(items)),
            None => "array".into(),
        },
        "object" => match object.get("additionalProperties") {
            Some(values) if values.is_object() => {
                format!("map of string to {}", type_expr(values))
            }
            _ => "object".into(),
        },
        other => other.into(),
    }
}

/// Defaults longer than this (as compact JSON) are left out of field descriptions; they are
/// objects whose own fields document their defaults.
const LONGEST_SHOWN_DEFAULT: usize = 40;

/// One field of an object, ready to be a table row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Field {
    /// The JSON member name.
    pub name: String,
    /// Its type expression.
    pub ty: String,
    /// Whether the member must be present.
    pub required: bool,
    /// Its description, on one line, with its default when it has one.
    pub description: String,
}

/// A type's schema, read as one of the shapes the protocol uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Shape {
    /// An object with fields (possibly none).
    Object(Vec<Field>),
    /// One of a fixed set of strings, each with its description.
    StringEnum(Vec<(String, String)>),
    /// Objects told apart by the constant value of the `tag` member.
    Tagged {
        /// The tag member (`type`, `kind`, `role`, `action`).
        tag: String,
        /// Fields every variant has besides the tag.
        common: Vec<Field>,
        /// The variants in declaration order.
        variants: Vec<Variant>,
    },
    /// Anything else, as a type expression.
    Other(String),
}

/// One variant of a tagged union.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Variant {
    /// The tag's value.
    pub tag_value: String,
    /// What the variant means.
    pub description: String,
    /// The type whose fields the variant carries, for variants that wrap a named type.
    pub wraps: Option<String>,
    /// The variant's fields besides the tag (those of the wrapped type included).
    pub fields: Vec<Field>,
}

/// A description on one line (schemars keeps the doc comment's line breaks), with rustdoc's
/// intra-doc links (`` [`Usage`] ``) reduced to their code span.
pub(crate) fn one_line(text: &str) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    strip_intra_doc_links(&joined)
}

/// Turns `` [`Name`] `` into `` `Name` `` where no `(` follows (a markdown link keeps it).
fn strip_intra_doc_links(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("[`") {
        let after = &rest[start + 1..];
        let closing = after[1..].find("`]").map(|end| end + 2);
        match closing {
            Some(end) if !after[end + 1..].starts_with('(') => {
                out.push_str(&rest[..start]);
                out.push_str(&after[..end]);
                rest = &after[end + 1..];
            }
            _ => {
                out.push_str(&rest[..start + 2]);
                rest = &rest[start + 2..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// The schema's description on one line, empty when it has none.
pub(crate) fn description(schema: &Value) -> String {
    schema.get("description").and_then(Value::as_str).map(one_line).unwrap_or_default()
}

/// Reads a type's schema (a `$defs` entry); `defs` resolves the types variants wrap.
pub(crate) fn shape(schema: &Value, defs: &Map<String, Value>) -> Shape {
    if let Some(values) = string_enum(schema) {
        return Shape::StringEnum(values);
    }
    if let Some(choices) = schema.get("oneOf").and_then(Value::as_array)
        && let Some(tag) = common_tag(choices)
    {
        let variants = choices.iter().map(|choice| variant(choice, &tag, defs)).collect();
        let common = fields(schema, None);
        return Shape::Tagged { tag, common, variants };
    }
    if schema.get("properties").is_some() || schema.get("type") == Some(&Value::from("object")) {
        return Shape::Object(fields(schema, None));
    }
    Shape::Other(type_expr(schema))
}

/// The values and descriptions of a string enum (`enum`, or `oneOf` of string constants).
fn string_enum(schema: &Value) -> Option<Vec<(String, String)>> {
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        return values.iter().map(|v| Some((v.as_str()?.to_string(), String::new()))).collect();
    }
    let choices = schema.get("oneOf")?.as_array()?;
    choices
        .iter()
        .map(|choice| {
            let value = choice.get("const")?.as_str()?;
            Some((value.to_string(), description(choice)))
        })
        .collect()
}

/// The member that holds a constant in every choice, when there is one.
fn common_tag(choices: &[Value]) -> Option<String> {
    let first = choices.first()?.get("properties")?.as_object()?;
    first
        .iter()
        .filter(|(_, property)| property.get("const").is_some())
        .map(|(name, _)| name)
        .find(|name| {
            choices.iter().all(|choice| {
                choice
                    .get("properties")
                    .and_then(|p| p.get(name.as_str()))
                    .is_some_and(|p| p.get("const").is_some())
            })
        })
        .cloned()
}

fn variant(choice: &Value, tag: &str, defs: &Map<String, Value>) -> Variant {
    let tag_value = choice
        .pointer(&format!("/properties/{tag}/const"))
        .map(|value| value.as_str().map_or_else(|| value.to_string(), str::to_string))
        .unwrap_or_default();
    let wraps = ref_name(choice).map(str::to_string);
    let mut fields: Vec<Field> = Vec::new();
    if let Some(inner) = wraps.as_deref().and_then(|name| defs.get(name)) {
        fields.extend(self::fields(inner, None));
    }
    fields.extend(self::fields(choice, Some(tag)));
    Variant { tag_value, description: description(choice), wraps, fields }
}

/// An object schema's fields: required ones first in declaration order, then optional ones by
/// name. `skip` leaves out one member (a union's tag).
pub(crate) fn fields(schema: &Value, skip: Option<&str>) -> Vec<Field> {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let field = |name: &str, property: &Value| {
        let mut text = description(property);
        if let Some(default) = property.get("default") {
            let default = default.to_string();
            if default.len() <= LONGEST_SHOWN_DEFAULT {
                if !text.is_empty() {
                    text.push(' ');
                }
                text.push_str(&format!("Default: `{default}`."));
            }
        }
        Field {
            name: name.to_string(),
            ty: type_expr(property),
            required: required.contains(&name),
            description: text,
        }
    };
    let mut out: Vec<Field> = required
        .iter()
        .filter(|name| Some(**name) != skip)
        .filter_map(|name| properties.get(*name).map(|property| field(name, property)))
        .collect();
    out.extend(
        properties
            .iter()
            .filter(|(name, _)| !required.contains(&name.as_str()) && Some(name.as_str()) != skip)
            .map(|(name, property)| field(name, property)),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn type_expressions_cover_the_shapes_schemars_emits() {
        assert_eq!(type_expr(&json!({"type": "string"})), "string");
        assert_eq!(type_expr(&json!({"type": ["integer", "null"]})), "integer | null");
        assert_eq!(type_expr(&json!({"$ref": "#/$defs/Usage"})), "[`Usage`](#type-usage)");
        assert_eq!(
            type_expr(&json!({"anyOf": [{"$ref": "#/$defs/Usage"}, {"type": "null"}]})),
            "[`Usage`](#type-usage) | null"
        );
        assert_eq!(
            type_expr(&json!({"type": "array", "items": {"type": "string"}})),
            "array of string"
        );
        assert_eq!(
            type_expr(&json!({"type": "object", "additionalProperties": {"type": "number"}})),
            "map of string to number"
        );
        assert_eq!(type_expr(&json!({"type": "object"})), "object");
        assert_eq!(type_expr(&json!({"const": "x"})), "`\"x\"`");
        assert_eq!(type_expr(&json!({"enum": ["a", "b"]})), "`\"a\"` | `\"b\"`");
        assert_eq!(type_expr(&json!({"description": "anything"})), "any");
        assert_eq!(type_expr(&json!(true)), "any");
    }

    #[test]
    fn intra_doc_links_become_code_spans() {
        assert_eq!(one_line("split like [`Usage`].\nNext"), "split like `Usage`. Next");
        assert_eq!(one_line("see [`a`](#x) and [`b`]"), "see [`a`](#x) and `b`");
        assert_eq!(one_line("odd [`x and [y]"), "odd [`x and [y]");
    }

    #[test]
    fn fields_put_required_first_and_show_defaults() {
        let schema = json!({
            "type": "object",
            "properties": {
                "a": {"type": "boolean", "default": false, "description": "Flag."},
                "z": {"type": "string", "description": "Line one\nline two."},
                "m": {"type": "integer"}
            },
            "required": ["z", "m"]
        });
        let names: Vec<_> = fields(&schema, None).into_iter().map(|f| f.name).collect();
        assert_eq!(names, ["z", "m", "a"]);
        let all = fields(&schema, None);
        assert_eq!(all[0].description, "Line one line two.");
        assert!(all[0].required);
        assert_eq!(all[2].description, "Flag. Default: `false`.");
        assert!(!all[2].required);
        assert_eq!(fields(&schema, Some("m")).len(), 2);
    }

    #[test]
    fn shapes_are_recognised() {
        let defs = Map::new();
        let strings = json!({"oneOf": [
            {"const": "ask", "type": "string", "description": "Asks."},
            {"const": "yolo", "type": "string"}
        ]});
        assert_eq!(
            shape(&strings, &defs),
            Shape::StringEnum(vec![("ask".into(), "Asks.".into()), ("yolo".into(), String::new())])
        );
        let tagged = json!({"oneOf": [
            {"type": "object", "properties": {"kind": {"const": "a"}, "x": {"type": "string"}},
             "required": ["kind", "x"]},
            {"type": "object", "properties": {"kind": {"const": "b"}}, "required": ["kind"]}
        ]});
        match shape(&tagged, &defs) {
            Shape::Tagged { tag, variants, common } => {
                assert_eq!(tag, "kind");
                assert!(common.is_empty());
                assert_eq!(variants.len(), 2);
                assert_eq!(variants[0].tag_value, "a");
                assert_eq!(variants[0].fields.len(), 1);
            }
            other => panic!("{other:?}"),
        }
        assert!(
            matches!(shape(&json!({"type": "object"}), &defs), Shape::Object(f) if f.is_empty())
        );
        assert_eq!(shape(&json!({"type": "string"}), &defs), Shape::Other("string".into()));
    }

    #[test]
    fn a_variant_wrapping_a_type_carries_its_fields() {
        let mut defs = Map::new();
        defs.insert(
            "Inner".into(),
            json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}),
        );
        let tagged = json!({"oneOf": [{"$ref": "#/$defs/Inner", "type": "object",
            "properties": {"type": {"const": "inner"}}, "required": ["type"]}]});
        let Shape::Tagged { variants, .. } = shape(&tagged, &defs) else {
            panic!("not tagged");
        };
        assert_eq!(variants[0].wraps.as_deref(), Some("Inner"));
        assert_eq!(variants[0].fields[0].name, "n");
    }
}
