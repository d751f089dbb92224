//! Request ids exactly as JSON-RPC 2.0 allows them.
//!
//! An id is a string, a number or null, and the response carries the same value. jsonrpsee
//! only represents ids that are strings or numbers fitting a `u64`; a negative, fractional or
//! very large number (`-1`, `1.5`, `1e400`, `123456789012345678901234567890`) would be lost.
//! Such a request runs under a stand-in string id that cannot clash with a client's, and the
//! connection's writer puts the client's id back, byte for byte, into the message answering
//! it. An id of any other type (object, array, boolean) makes the request invalid; its error
//! response then has a null id, as the specification says.

use jsonrpsee_types::Id;
use serde::Deserialize;
use serde_json::value::RawValue;
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// How a request line's `id` member reads.
#[derive(Debug)]
pub enum IdKind<'a> {
    /// No `id` member: a notification.
    Absent,
    /// An id jsonrpsee represents as it is.
    Plain(Id<'static>),
    /// A number jsonrpsee cannot represent; the raw JSON text.
    Number(&'a RawValue),
    /// Not a valid id type.
    Invalid,
}

/// Classifies a raw `id` member.
pub fn classify(raw: Option<&RawValue>) -> IdKind<'_> {
    let Some(raw) = raw else { return IdKind::Absent };
    let text = raw.get();
    match text.as_bytes().first() {
        Some(b'"') => match serde_json::from_str::<String>(text) {
            Ok(text) => IdKind::Plain(Id::Str(text.into())),
            Err(_) => IdKind::Invalid,
        },
        Some(b'n') => IdKind::Plain(Id::Null),
        Some(b'-' | b'0'..=b'9') => match text.parse::<u64>() {
            Ok(number) => IdKind::Plain(Id::Number(number)),
            Err(_) => IdKind::Number(raw),
        },
        _ => IdKind::Invalid,
    }
}

/// The members of a line that may or may not be a valid request, kept as raw JSON.
#[derive(Debug, Deserialize)]
pub struct LooseRequest<'a> {
    /// `jsonrpc`.
    #[serde(borrow, default, deserialize_with = "present")]
    pub jsonrpc: Option<&'a RawValue>,
    /// `id` (`Some("null")` for an explicit null).
    #[serde(borrow, default, deserialize_with = "present")]
    pub id: Option<&'a RawValue>,
    /// `method`.
    #[serde(borrow, default, deserialize_with = "present")]
    pub method: Option<&'a RawValue>,
    /// `params`.
    #[serde(borrow, default, deserialize_with = "present")]
    pub params: Option<&'a RawValue>,
}

/// A member that is there, even when it is `null`.
fn present<'de, D>(deserializer: D) -> Result<Option<&'de RawValue>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    <&RawValue>::deserialize(deserializer).map(Some)
}

impl LooseRequest<'_> {
    /// `jsonrpc` is `"2.0"`.
    pub fn is_version_2(&self) -> bool {
        self.jsonrpc.is_some_and(|raw| raw.get() == "\"2.0\"")
    }

    /// The method name, when it is a string.
    pub fn method_name(&self) -> Option<String> {
        self.method.and_then(|raw| serde_json::from_str::<String>(raw.get()).ok())
    }
}

/// Stand-in ids for the numbers jsonrpsee cannot carry, per connection.
#[derive(Debug)]
pub struct RawIds {
    prefix: String,
    next: AtomicU64,
    pending: Mutex<HashMap<String, Box<RawValue>>>,
}

impl Default for RawIds {
    fn default() -> Self {
        Self {
            prefix: format!("rein-raw-id-{}-", uuid::Uuid::new_v4().simple()),
            next: AtomicU64::new(0),
            pending: Mutex::new(HashMap::new()),
        }
    }
}

impl RawIds {
    /// A stand-in for `raw`, remembered until the message answering it is restored.
    pub fn stand_in(&self, raw: &RawValue) -> Id<'static> {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let token = format!("{}{n}", self.prefix);
        if let Ok(mut pending) = self.pending.lock() {
            pending.insert(token.clone(), raw.to_owned());
        }
        Id::Str(token.into())
    }

    /// Puts the client's own id back into a message answering a stand-in; other messages come
    /// back unchanged.
    pub fn restore(&self, message: Box<RawValue>) -> Box<RawValue> {
        let Ok(mut pending) = self.pending.lock() else { return message };
        if pending.is_empty() {
            return message;
        }
        let text = message.get();
        let marker = format!("\"id\":\"{}", self.prefix);
        let Some(start) = text.find(&marker) else { return message };
        let token_start = start + "\"id\":\"".len();
        let Some(length) = text[token_start..].find('"') else { return message };
        let token = &text[token_start..token_start + length];
        let Some(raw) = pending.remove(token) else { return message };
        let mut restored = String::with_capacity(text.len());
        restored.push_str(&text[..start]);
        restored.push_str("\"id\":");
        restored.push_str(raw.get());
        restored.push_str(&text[token_start + length + 1..]);
        RawValue::from_string(restored).unwrap_or(message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_string()).unwrap()
    }

    #[test]
    fn ids_are_classified_per_the_specification() {
        assert!(matches!(classify(None), IdKind::Absent));
        assert!(matches!(classify(Some(&raw("7"))), IdKind::Plain(Id::Number(7))));
        assert!(matches!(classify(Some(&raw("\"a\""))), IdKind::Plain(Id::Str(s)) if s == "a"));
        assert!(matches!(classify(Some(&raw("null"))), IdKind::Plain(Id::Null)));
        for odd in ["-1", "1.5", "1e400", "123456789012345678901234567890"] {
            let value = raw(odd);
            assert!(matches!(classify(Some(&value)), IdKind::Number(r) if r.get() == odd));
        }
        for bad in ["{}", "[1]", "true"] {
            assert!(matches!(classify(Some(&raw(bad))), IdKind::Invalid));
        }
    }

    #[test]
    fn a_stand_in_is_replaced_by_the_clients_id_byte_for_byte() {
        let ids = RawIds::default();
        let id = ids.stand_in(&raw("-12.50"));
        let Id::Str(token) = id else { panic!("not a string") };
        let response = raw(&format!(r#"{{"jsonrpc":"2.0","id":"{token}","result":{{"a":1}}}}"#));
        let restored = ids.restore(response);
        assert_eq!(restored.get(), r#"{"jsonrpc":"2.0","id":-12.50,"result":{"a":1}}"#);
        // Once restored it is forgotten; other messages pass untouched.
        let other = raw(r#"{"jsonrpc":"2.0","id":3,"result":true}"#);
        assert_eq!(ids.restore(other).get(), r#"{"jsonrpc":"2.0","id":3,"result":true}"#);
    }

    #[test]
    fn loose_requests_keep_null_apart_from_absent() {
        let with_null: LooseRequest = serde_json::from_str(r#"{"id":null,"method":"m"}"#).unwrap();
        assert_eq!(with_null.id.map(RawValue::get), Some("null"));
        let without: LooseRequest = serde_json::from_str(r#"{"method":"m"}"#).unwrap();
        assert!(without.id.is_none());
        assert_eq!(without.method_name().as_deref(), Some("m"));
        assert!(!without.is_version_2());
    }
}
