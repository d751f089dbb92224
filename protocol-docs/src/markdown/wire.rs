//! The example lines of the reference: JSON-RPC requests, responses, notifications and errors
//! around compactly serialized typed values.

use crate::DocsError;
use rein_protocol::error::{ErrorData, ErrorKind};
use serde::Serialize;
use serde_json::Value;

/// Maps a serializer error to a [`DocsError`] naming what was being serialized.
pub(super) fn serialize_error(
    what: impl Into<String>,
) -> impl FnOnce(serde_json::Error) -> DocsError {
    let what = what.into();
    move |source| DocsError::Serialize { what, source }
}

/// A value as compact JSON, members in declaration order.
pub(super) fn line_of<T: Serialize>(value: &T, what: &str) -> Result<String, DocsError> {
    serde_json::to_string(value).map_err(serialize_error(what))
}

/// A request line around already serialized params.
pub(super) fn request_line(id: u32, method: &str, params: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{params}}}"#)
}

/// A success response line around an already serialized result.
pub(super) fn response_line(id: u32, result: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#)
}

/// A notification line around already serialized params.
pub(super) fn notification_line(method: &str, params: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","method":"{method}","params":{params}}}"#)
}

/// An error response line as the daemon writes it: `{code, message, data: {kind, field?}}`.
pub(super) fn error_line(
    id: u32,
    kind: ErrorKind,
    message: &str,
    field: Option<&str>,
) -> Result<String, DocsError> {
    let data = line_of(&ErrorData { kind, field: field.map(str::to_string) }, "error data")?;
    let message = Value::from(message);
    let code = kind.code();
    Ok(format!(
        r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":{code},"message":{message},"data":{data}}}}}"#
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_valid_json_rpc() {
        let request: Value = serde_json::from_str(&request_line(7, "a/b", "{}")).unwrap();
        assert_eq!(request["jsonrpc"], "2.0");
        assert_eq!(request["id"], 7);
        assert_eq!(request["method"], "a/b");
        let response: Value = serde_json::from_str(&response_line(7, "true")).unwrap();
        assert_eq!(response["result"], true);
        let notification: Value = serde_json::from_str(&notification_line("x", "{}")).unwrap();
        assert!(notification.get("id").is_none());
        let error = error_line(3, ErrorKind::InvalidParams, "bad \"cwd\"", Some("cwd")).unwrap();
        let error: Value = serde_json::from_str(&error).unwrap();
        assert_eq!(error["error"]["code"], -32602);
        assert_eq!(error["error"]["message"], "bad \"cwd\"");
        assert_eq!(error["error"]["data"]["kind"], "invalid_params");
        assert_eq!(error["error"]["data"]["field"], "cwd");
    }
}
