//! Rules shared by the three history converters.
//!
//! Thinking blocks carry provider-specific proof (Anthropic signatures, OpenAI encrypted
//! reasoning items). They are replayed as thinking only to the provider *and* wire API that
//! produced them. Reasoning from any other source is sent as plain text wrapped in
//! `<thinking>` tags so the model still sees what was thought; redacted (encrypted) reasoning
//! from another source is dropped, since nobody else can read it.

use rein_protocol::message::{AssistantMessage, ContentBlock, StopReason};
use rein_protocol::model::ModelInfo;

/// True when `message` came from the same provider and wire API as `target`, so its thinking
/// signatures are meaningful there.
pub fn is_native(message: &AssistantMessage, target: &ModelInfo) -> bool {
    message.provider == target.provider && message.api == target.api.as_str()
}

/// Foreign reasoning as plain text, or `None` when there is nothing readable to send.
pub fn thinking_as_text(thinking: &str, redacted: bool) -> Option<String> {
    if redacted || thinking.trim().is_empty() {
        return None;
    }
    Some(format!("<thinking>\n{thinking}\n</thinking>"))
}

/// Whether an assistant message should be replayed at all: failed or cancelled replies that
/// produced nothing are skipped (APIs reject empty assistant turns).
pub fn should_replay(message: &AssistantMessage) -> bool {
    let empty = message.content.iter().all(|block| match block {
        ContentBlock::Text { text } => text.is_empty(),
        ContentBlock::Thinking { thinking, signature, .. } => {
            thinking.is_empty() && signature.is_none()
        }
        _ => false,
    });
    if message.content.is_empty() {
        return false;
    }
    let failed = matches!(message.stop_reason, StopReason::Error | StopReason::Aborted);
    !empty || !failed
}

/// The placeholder sent instead of an image to a model that does not take images.
pub const IMAGE_OMITTED: &str = "(image omitted: this model does not accept images)";

/// The `data:` URL of a base64 image.
pub fn data_url(mime_type: &str, data: &str) -> String {
    format!("data:{mime_type};base64,{data}")
}
