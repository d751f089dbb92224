//! Tool-call ids that the target API accepts.
//!
//! Ids come from whichever provider produced the call, and a session may switch providers.
//! Anthropic wants `^[a-zA-Z0-9_-]{1,64}$`; OpenAI's APIs reject ids longer than 40
//! characters, and the Responses API names its call ids `call_…`. An id that already fits the target is sent unchanged; any
//! other is replaced by a prefix and a hash of the original, so the rewrite is the same for a
//! call and its result and two different ids never map to the same one.

use rein_protocol::model::Api;
use sha2::{Digest, Sha256};
use std::borrow::Cow;

/// Longest id Anthropic accepts.
const ANTHROPIC_MAX_LEN: usize = 64;
/// Longest id OpenAI's APIs accept (`tool_call_id`, `call_id`).
const OPENAI_MAX_LEN: usize = 40;

/// The id to send to `api` for a tool call (or its result) whose stored id is `id`.
pub fn wire_tool_call_id(api: Api, id: &str) -> Cow<'_, str> {
    if is_valid(api, id) {
        return Cow::Borrowed(id);
    }
    let digest = Sha256::digest(id.as_bytes());
    let hex: String = digest.iter().take(16).map(|byte| format!("{byte:02x}")).collect();
    let prefix = match api {
        Api::Anthropic => "toolu_",
        Api::OpenAiChat | Api::OpenAiResponses => "call_",
    };
    Cow::Owned(format!("{prefix}{hex}"))
}

/// Whether `id` may be sent to `api` as it is.
pub fn is_valid(api: Api, id: &str) -> bool {
    let max_len = match api {
        Api::Anthropic => ANTHROPIC_MAX_LEN,
        Api::OpenAiChat | Api::OpenAiResponses => OPENAI_MAX_LEN,
    };
    let plain = !id.is_empty()
        && id.len() <= max_len
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    match api {
        Api::Anthropic | Api::OpenAiChat => plain,
        Api::OpenAiResponses => plain && id.starts_with("call_"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_ids_are_kept() {
        assert_eq!(wire_tool_call_id(Api::Anthropic, "toolu_01AbC-d_e"), "toolu_01AbC-d_e");
        assert_eq!(wire_tool_call_id(Api::OpenAiChat, "call_abc"), "call_abc");
        assert_eq!(wire_tool_call_id(Api::OpenAiResponses, "call_abc"), "call_abc");
    }

    #[test]
    fn invalid_ids_are_hashed_deterministically_and_distinctly() {
        let a = wire_tool_call_id(Api::Anthropic, "call_1|fc_2").into_owned();
        let b = wire_tool_call_id(Api::Anthropic, "call_1|fc_3").into_owned();
        assert_ne!(a, b);
        assert_eq!(a, wire_tool_call_id(Api::Anthropic, "call_1|fc_2"));
        assert!(is_valid(Api::Anthropic, &a) && a.starts_with("toolu_"));
        let long = "x".repeat(80);
        let c = wire_tool_call_id(Api::OpenAiChat, &long);
        assert!(is_valid(Api::OpenAiChat, &c) && c.len() <= 40);
        let d = wire_tool_call_id(Api::OpenAiResponses, "toolu_01");
        assert!(d.starts_with("call_") && is_valid(Api::OpenAiResponses, &d));
        assert_eq!(wire_tool_call_id(Api::OpenAiChat, "").len(), 37);
    }

    #[test]
    fn openai_ids_stay_within_40_characters() {
        // 41 characters: fine for Anthropic, too long for OpenAI's APIs.
        let id = format!("call_{}", "a".repeat(36));
        assert_eq!(id.len(), 41);
        assert_eq!(wire_tool_call_id(Api::Anthropic, &id), id.as_str());
        for api in [Api::OpenAiChat, Api::OpenAiResponses] {
            let sent = wire_tool_call_id(api, &id);
            assert!(sent.len() <= 40 && sent != id.as_str(), "{sent}");
        }
        let exact = format!("call_{}", "b".repeat(35));
        assert_eq!(wire_tool_call_id(Api::OpenAiChat, &exact), exact.as_str());
    }
}
