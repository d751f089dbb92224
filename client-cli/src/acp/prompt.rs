//! Turns an ACP prompt (a list of content blocks) into rein's prompt text and images.

use serde_json::{Value, json};

/// A prompt as rein takes it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PromptInput {
    /// The text: the editor's text blocks, then the context it attached.
    pub text: String,
    /// Image content blocks in rein's shape.
    pub images: Vec<Value>,
}

/// Joins the blocks into one prompt. Text blocks are the request; embedded resources (files
/// the editor attached) follow as fenced context, and resource links are named by their URI.
pub fn prompt_input(blocks: &[Value]) -> PromptInput {
    let mut parts: Vec<String> = Vec::new();
    let mut images = Vec::new();
    for block in blocks {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                if let Some(text) = block.get("text").and_then(Value::as_str) {
                    parts.push(text.to_string());
                }
            }
            Some("image") => {
                let data = block.get("data").and_then(Value::as_str);
                let mime = block.get("mimeType").and_then(Value::as_str);
                if let (Some(data), Some(mime)) = (data, mime) {
                    images.push(json!({"type": "image", "data": data, "mime_type": mime}));
                }
            }
            Some("resource_link") => {
                if let Some(uri) = block.get("uri").and_then(Value::as_str) {
                    parts.push(format!("@{}", uri.strip_prefix("file://").unwrap_or(uri)));
                }
            }
            Some("resource") => {
                let resource = block.get("resource").cloned().unwrap_or(Value::Null);
                let uri = resource.get("uri").and_then(Value::as_str).unwrap_or("attachment");
                if let Some(text) = resource.get("text").and_then(Value::as_str) {
                    let path = uri.strip_prefix("file://").unwrap_or(uri);
                    parts.push(format!("Context from {path}:\n```\n{text}\n```"));
                }
            }
            _ => tracing::debug!("skipping a prompt block rein cannot take: {block}"),
        }
    }
    PromptInput { text: parts.join("\n\n"), images }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_links_resources_and_images_are_combined() {
        let input = prompt_input(&[
            json!({"type": "text", "text": "Explain this."}),
            json!({"type": "resource_link", "uri": "file:///p/src/a.rs", "name": "a.rs"}),
            json!({"type": "resource", "resource": {"uri": "file:///p/b.rs", "text": "fn b() {}"}}),
            json!({"type": "image", "data": "AAAA", "mimeType": "image/png"}),
            json!({"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}),
        ]);
        assert_eq!(
            input.text,
            "Explain this.\n\n@/p/src/a.rs\n\nContext from /p/b.rs:\n```\nfn b() {}\n```"
        );
        assert_eq!(
            input.images,
            vec![json!({"type": "image", "data": "AAAA",
            "mime_type": "image/png"})]
        );
    }
}
