//! Typed method errors and their JSON-RPC form (`{code, message, data: {kind, field?}}`).

use jsonrpsee_types::ErrorObjectOwned;
use rein_protocol::error::{ErrorData, ErrorKind};

/// An error a method returns to its caller.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{kind}: {message}")]
pub struct RpcError {
    /// The stable kind.
    pub kind: ErrorKind,
    /// What went wrong, for a person.
    pub message: String,
    /// The param at fault, for `invalid_params`.
    pub field: Option<String>,
}

impl RpcError {
    /// An error of `kind` with a message.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self { kind, message: message.into(), field: None }
    }

    /// An `invalid_params` error naming the field at fault.
    pub fn invalid_param(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self { kind: ErrorKind::InvalidParams, message: message.into(), field: Some(field.into()) }
    }

    /// The JSON-RPC error object.
    pub fn to_object(&self) -> ErrorObjectOwned {
        let data = ErrorData { kind: self.kind, field: self.field.clone() };
        ErrorObjectOwned::owned(self.kind.code(), self.message.clone(), Some(data))
    }
}

impl From<RpcError> for ErrorObjectOwned {
    fn from(error: RpcError) -> Self {
        error.to_object()
    }
}

/// Parses a method's params object into `T`, naming the offending field on failure. Absent
/// params are read as `{}`.
pub fn parse_params<T: serde::de::DeserializeOwned>(raw: Option<&str>) -> Result<T, RpcError> {
    let text = match raw.map(str::trim) {
        None | Some("") | Some("null") => "{}",
        Some(text) => text,
    };
    if text.starts_with('[') {
        return Err(RpcError::new(
            ErrorKind::InvalidParams,
            "params must be an object with named fields, not an array",
        ));
    }
    let mut deserializer = serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
        let path = error.path().to_string();
        let inner = error.into_inner();
        let message = inner.to_string();
        // The root (".") names no field, and neither does an empty path (a key `""`).
        let field =
            if path == "." || path.is_empty() { missing_field_name(&message) } else { Some(path) };
        match field {
            Some(field) => RpcError::invalid_param(field.clone(), format!("{field}: {message}")),
            None => RpcError::new(ErrorKind::InvalidParams, message),
        }
    })
}

/// serde reports a missing field at the parent path; pull the name out of its message.
fn missing_field_name(message: &str) -> Option<String> {
    let rest = message.strip_prefix("missing field `")?;
    let end = rest.find('`')?;
    Some(rest[..end].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rein_protocol::method::ForkParams;

    #[test]
    fn names_the_missing_field() {
        let error = parse_params::<ForkParams>(Some(r#"{"session_id":"s"}"#)).unwrap_err();
        assert_eq!(error.kind, ErrorKind::InvalidParams);
        assert_eq!(error.field.as_deref(), Some("entry_id"));
    }

    #[test]
    fn names_the_mistyped_field() {
        let error =
            parse_params::<ForkParams>(Some(r#"{"session_id":"s","entry_id":5}"#)).unwrap_err();
        assert_eq!(error.field.as_deref(), Some("entry_id"));
        let object = error.to_object();
        assert_eq!(object.code(), -32602);
        let data: serde_json::Value =
            serde_json::from_str(object.data().map(|d| d.get()).unwrap_or("null")).unwrap();
        assert_eq!(data["kind"], "invalid_params");
        assert_eq!(data["field"], "entry_id");
    }

    /// Found by the `wire` fuzz target: a bad value under the key `""` gave an error whose
    /// field was the empty string.
    #[test]
    fn a_bad_value_under_an_empty_key_names_no_empty_field() {
        let error = parse_params::<ForkParams>(Some(r#"{"": 099}"#)).unwrap_err();
        assert_eq!(error.kind, ErrorKind::InvalidParams);
        assert_ne!(error.field.as_deref(), Some(""));
        assert!(!error.message.starts_with(':'), "{}", error.message);
    }

    #[test]
    fn absent_params_mean_an_empty_object_and_arrays_are_refused() {
        parse_params::<rein_protocol::method::Empty>(None).unwrap();
        parse_params::<rein_protocol::method::Empty>(Some("null")).unwrap();
        let error = parse_params::<rein_protocol::method::Empty>(Some("[1]")).unwrap_err();
        assert_eq!(error.kind, ErrorKind::InvalidParams);
    }
}
