//! Why one attempt at a request failed, and whether trying again may help.
//!
//! Turns HTTP error responses into clear messages that quote the provider's own text, spots
//! context-window overflow in the many wordings servers use, and reads `retry-after` hints.

use crate::provider::ProviderErrorKind;
use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use serde_json::Value;
use std::time::{Duration, SystemTime};

/// One failed attempt.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    /// What went wrong, for people.
    pub message: String,
    /// What kind of failure it is.
    pub kind: ProviderErrorKind,
    /// Whether another attempt may succeed.
    pub retryable: bool,
    /// How long the provider asked us to wait before trying again.
    pub retry_after: Option<Duration>,
}

impl Failure {
    /// A failure that retrying cannot fix.
    pub fn fatal(kind: ProviderErrorKind, message: impl Into<String>) -> Self {
        Self { message: message.into(), kind, retryable: false, retry_after: None }
    }

    /// A failure another attempt may get past.
    pub fn transient(kind: ProviderErrorKind, message: impl Into<String>) -> Self {
        Self { message: message.into(), kind, retryable: true, retry_after: None }
    }

    /// The stream was malformed or ended before its terminal event. Retrying helps only when
    /// nothing had streamed yet, which the driver checks.
    pub fn protocol(message: impl Into<String>) -> Self {
        Self::transient(ProviderErrorKind::Protocol, message)
    }

    /// An error the provider reported inside the stream (`error` events and the like).
    pub fn from_stream_error(provider_text: &str, error_type: Option<&str>) -> Self {
        let message = format!("the provider reported an error: {provider_text}");
        if is_context_overflow(provider_text) || error_type == Some("context_length_exceeded") {
            return Self::fatal(ProviderErrorKind::ContextOverflow, message);
        }
        match error_type {
            Some(
                "overloaded_error"
                | "api_error"
                | "server_error"
                | "internal_server_error"
                | "service_unavailable"
                | "timeout",
            ) => Self::transient(ProviderErrorKind::Http, message),
            Some("rate_limit_error" | "rate_limit_exceeded") => {
                Self::transient(ProviderErrorKind::RateLimited, message)
            }
            Some("authentication_error" | "permission_error" | "invalid_api_key") => {
                Self::fatal(ProviderErrorKind::Auth, message)
            }
            _ => Self::fatal(ProviderErrorKind::Http, message),
        }
    }

    /// An error object the provider put inside the stream, in any of the shapes servers use:
    /// `{"message", "code", "type"}` where `code` may be text, an HTTP status number or
    /// `null`, or the same wrapped in `{"error": …}`. A numeric code is read as an HTTP
    /// status, so `502` is retried like a 502 response.
    pub fn from_stream_error_value(error: &Value) -> Self {
        let error = match error.get("error") {
            Some(inner) if inner.is_object() => inner,
            _ => error,
        };
        let text = match error.get("message").and_then(Value::as_str) {
            Some(message) => message.to_string(),
            None => match error.as_str() {
                Some(text) => text.to_string(),
                None => error.to_string(),
            },
        };
        let status = ["code", "status"]
            .iter()
            .filter_map(|key| error.get(*key))
            .find_map(|v| v.as_u64().or_else(|| v.as_str().and_then(|s| s.parse().ok())));
        if let Some(status) = status.and_then(|s| u16::try_from(s).ok())
            && let Ok(status) = StatusCode::from_u16(status)
        {
            let mut failure = Self::from_stream_error(&text, None);
            if failure.kind == ProviderErrorKind::ContextOverflow {
                return failure;
            }
            (failure.kind, failure.retryable) = match status.as_u16() {
                401 | 403 => (ProviderErrorKind::Auth, false),
                429 => (ProviderErrorKind::RateLimited, true),
                408 | 500..=599 => (ProviderErrorKind::Http, true),
                _ => (ProviderErrorKind::Http, false),
            };
            return failure;
        }
        // The first textual classification: `code` when it is text, else `type`.
        let kind = ["code", "type"].iter().find_map(|key| error.get(*key)?.as_str());
        Self::from_stream_error(&text, kind)
    }

    /// Classifies an HTTP error response from its status, headers and body.
    pub fn from_http(provider: &str, status: StatusCode, headers: &HeaderMap, body: &str) -> Self {
        let text = error_text(body)
            .unwrap_or_else(|| status.canonical_reason().unwrap_or("no error text").to_string());
        let message = format!("provider `{provider}` returned HTTP {}: {text}", status.as_u16());
        let code = status.as_u16();
        let overflow = code != 429 && (is_context_overflow(&text) || is_context_overflow(body));
        let (kind, retryable) = if overflow {
            (ProviderErrorKind::ContextOverflow, false)
        } else {
            match code {
                401 | 403 => (ProviderErrorKind::Auth, false),
                429 => (ProviderErrorKind::RateLimited, true),
                408 | 500..=599 => (ProviderErrorKind::Http, true),
                _ => (ProviderErrorKind::Http, false),
            }
        };
        Self { message, kind, retryable, retry_after: retry_after(headers, SystemTime::now()) }
    }

    /// A connection that failed or dropped.
    pub fn from_transport(error: &reqwest::Error) -> Self {
        Self::transient(
            ProviderErrorKind::Network,
            format!("connection failed: {}", crate::http::error_chain(error)),
        )
    }
}

/// The provider's own error text from a response body: the usual JSON shapes (`error.message`,
/// `error` as text, `message`, `detail`), or the trimmed body itself when it is not JSON.
pub fn error_text(body: &str) -> Option<String> {
    let trimmed = body.trim();
    if trimmed.is_empty() {
        return None;
    }
    if let Ok(value) = serde_json::from_str::<Value>(trimmed) {
        let candidates = [
            value.pointer("/error/message"),
            value.get("error").filter(|e| e.is_string()),
            value.get("message"),
            value.get("detail"),
            value.pointer("/error/error/message"),
        ];
        if let Some(text) = candidates.into_iter().flatten().find_map(Value::as_str) {
            let code = value
                .pointer("/error/code")
                .or_else(|| value.pointer("/error/type"))
                .and_then(Value::as_str);
            return Some(match code {
                Some(code) if !text.contains(code) => format!("{text} ({code})"),
                _ => text.to_string(),
            });
        }
    }
    const LIMIT: usize = 500;
    let mut text: String = trimmed.chars().take(LIMIT).collect();
    if text.len() < trimmed.len() {
        text.push('…');
    }
    Some(text)
}

/// True when an error text says the request did not fit the model's context window.
pub fn is_context_overflow(text: &str) -> bool {
    const WORDINGS: [&str; 10] = [
        "context_length_exceeded",
        "prompt is too long",
        "maximum context length",
        "context length exceeded",
        "exceeds the context window",
        "exceeds the maximum context",
        "too many tokens",
        "input is too long",
        "context window exceeded",
        "requested more tokens than",
    ];
    let lower = text.to_lowercase();
    WORDINGS.iter().any(|wording| lower.contains(wording))
}

/// The wait a response asks for: `retry-after-ms` (milliseconds), else `retry-after` in seconds
/// or as an HTTP date.
pub fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
    if let Some(ms) = header("retry-after-ms").and_then(|v| v.parse::<f64>().ok())
        && ms.is_finite()
        && ms >= 0.0
    {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    let value = header("retry-after")?;
    if let Ok(seconds) = value.parse::<f64>() {
        return (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds));
    }
    let date = parse_http_date(value)?;
    Some(date.duration_since(now).unwrap_or(Duration::ZERO))
}

/// Parses an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the HTTP date format.
fn parse_http_date(text: &str) -> Option<SystemTime> {
    use time::format_description::well_known::Rfc2822;
    let normalized = text.strip_suffix(" GMT").map(|t| format!("{t} +0000"))?;
    let parsed = time::OffsetDateTime::parse(&normalized, &Rfc2822).ok()?;
    let seconds = u64::try_from(parsed.unix_timestamp()).ok()?;
    Some(SystemTime::UNIX_EPOCH + Duration::from_secs(seconds))
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    #[test]
    fn retry_after_reads_ms_seconds_and_dates() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(784_111_770);
        let h = headers(&[("retry-after-ms", "250"), ("retry-after", "9")]);
        assert_eq!(retry_after(&h, now), Some(Duration::from_millis(250)));
        assert_eq!(
            retry_after(&headers(&[("retry-after", "2")]), now),
            Some(Duration::from_secs(2))
        );
        let h = headers(&[("retry-after", "Sun, 06 Nov 1994 08:49:37 GMT")]);
        assert_eq!(retry_after(&h, now), Some(Duration::from_secs(7)));
        let later = now + Duration::from_secs(100);
        assert_eq!(retry_after(&h, later), Some(Duration::ZERO));
        assert_eq!(retry_after(&headers(&[("retry-after", "soon")]), now), None);
        assert_eq!(retry_after(&HeaderMap::new(), now), None);
    }

    #[test]
    fn error_text_finds_the_provider_message() {
        let openai = r#"{"error":{"message":"This model's maximum context length is 8192 tokens","type":"invalid_request_error","code":"context_length_exceeded"}}"#;
        assert_eq!(
            error_text(openai).unwrap(),
            "This model's maximum context length is 8192 tokens (context_length_exceeded)"
        );
        let anthropic = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#;
        assert!(error_text(anthropic).unwrap().starts_with("prompt is too long"));
        assert_eq!(error_text(r#"{"error":"model not found"}"#).unwrap(), "model not found");
        assert_eq!(error_text("<html>Bad Gateway</html>\n").unwrap(), "<html>Bad Gateway</html>");
        assert_eq!(error_text("  "), None);
    }

    #[test]
    fn http_errors_are_classified() {
        let empty = HeaderMap::new();
        let f = Failure::from_http(
            "p",
            StatusCode::BAD_REQUEST,
            &empty,
            r#"{"error":{"message":"x","code":"context_length_exceeded"}}"#,
        );
        assert_eq!((f.kind, f.retryable), (ProviderErrorKind::ContextOverflow, false));
        let f = Failure::from_http(
            "p",
            StatusCode::TOO_MANY_REQUESTS,
            &headers(&[("retry-after", "1")]),
            "slow down",
        );
        assert_eq!((f.kind, f.retryable), (ProviderErrorKind::RateLimited, true));
        assert_eq!(f.retry_after, Some(Duration::from_secs(1)));
        assert!(f.message.contains("HTTP 429") && f.message.contains("slow down"), "{}", f.message);
        let f = Failure::from_http("p", StatusCode::UNAUTHORIZED, &empty, "");
        assert_eq!((f.kind, f.retryable), (ProviderErrorKind::Auth, false));
        assert!(f.message.contains("Unauthorized"));
        let f = Failure::from_http("p", StatusCode::BAD_GATEWAY, &empty, "upstream down");
        assert_eq!((f.kind, f.retryable), (ProviderErrorKind::Http, true));
        let f = Failure::from_http("p", StatusCode::NOT_FOUND, &empty, "");
        assert_eq!((f.kind, f.retryable), (ProviderErrorKind::Http, false));
    }

    #[test]
    fn overflow_wordings_are_recognised() {
        for text in [
            "This model's maximum context length is 4096 tokens",
            "prompt is too long: 1 tokens > 0 maximum",
            "Too many tokens in request",
            "the request exceeds the context window of this model",
            "error code: context_length_exceeded",
        ] {
            assert!(is_context_overflow(text), "{text}");
        }
        assert!(!is_context_overflow("rate limit reached"));
    }

    #[test]
    fn stream_error_objects_with_null_or_numeric_codes_are_retried() {
        use serde_json::json;
        // A Responses `error` event of type `server_error` whose code is null.
        let f = Failure::from_stream_error_value(
            &json!({"type": "server_error", "code": null, "message": "The server had an error"}),
        );
        assert!(f.retryable, "{f:?}");
        let f = Failure::from_stream_error_value(&json!({"type": "error", "error":
            {"type": "server_error", "code": null, "message": "oops", "param": null}}));
        assert!(f.retryable && f.message.contains("oops"), "{f:?}");
        // An OpenRouter error chunk with an HTTP status as its code.
        let f = Failure::from_stream_error_value(
            &json!({"code": 502, "message": "Provider returned error"}),
        );
        assert!(f.retryable && f.kind == ProviderErrorKind::Http, "{f:?}");
        let f = Failure::from_stream_error_value(&json!({"code": 429, "message": "slow"}));
        assert_eq!((f.kind, f.retryable), (ProviderErrorKind::RateLimited, true));
        let f = Failure::from_stream_error_value(&json!({"code": 400, "message": "bad"}));
        assert!(!f.retryable);
        let f = Failure::from_stream_error_value(
            &json!({"code": "insufficient_quota", "type": "insufficient_quota", "message": "pay"}),
        );
        assert!(!f.retryable);
    }

    #[test]
    fn stream_errors_are_classified() {
        let f = Failure::from_stream_error("Overloaded", Some("overloaded_error"));
        assert!(f.retryable);
        let f = Failure::from_stream_error("prompt is too long", Some("invalid_request_error"));
        assert_eq!(f.kind, ProviderErrorKind::ContextOverflow);
    }
}
