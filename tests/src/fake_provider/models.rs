//! `GET …/models`: the model list an OpenAI-compatible server gives, so that what lists models
//! (local server detection, `models/list`, `rein doctor`) finds the fake provider like a real
//! local server. It answers without consuming a scripted reply; the request is still recorded.

use serde_json::json;

/// The models the fake provider lists.
pub const MODEL_IDS: &[&str] = &["fake-model"];

/// Whether a request asks for the model list.
pub(super) fn is_models_request(method: &str, path: &str) -> bool {
    method == "GET"
        && path.split('?').next().unwrap_or_default().trim_end_matches('/').ends_with("/models")
}

/// The list, in the OpenAI format (`{"object": "list", "data": [{"id", ...}]}`).
pub(super) fn body() -> Vec<u8> {
    let data: Vec<_> = MODEL_IDS
        .iter()
        .map(|id| json!({"id": id, "object": "model", "created": 0, "owned_by": "rein-testkit"}))
        .collect();
    json!({"object": "list", "data": data}).to_string().into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_model_list_requests_match() {
        assert!(is_models_request("GET", "/v1/models"));
        assert!(is_models_request("GET", "/v1/models/?limit=5"));
        assert!(!is_models_request("POST", "/v1/models"));
        assert!(!is_models_request("GET", "/v1/chat/completions"));
        let body: serde_json::Value = serde_json::from_slice(&body()).unwrap();
        assert_eq!(body["data"][0]["id"], "fake-model");
    }
}
