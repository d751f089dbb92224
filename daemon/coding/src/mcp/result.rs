//! How an MCP `tools/call` result becomes a rein tool result: text stays text, images stay
//! images, embedded resources become their text (or a note for binary data), structured
//! content goes to the details (and to the text when the server sent no text), and `isError`
//! marks the result as failed.

use rein_agent::ToolOutput;
use rein_protocol::message::ContentBlock;
use serde_json::{Value, json};

/// Maps a `CallToolResult` in its wire form (JSON).
pub fn tool_output(result: &Value) -> ToolOutput {
    let mut content = Vec::new();
    for block in result.get("content").and_then(Value::as_array).into_iter().flatten() {
        let text = |key: &str| block.get(key).and_then(Value::as_str).unwrap_or_default();
        match text("type") {
            "text" => content.push(ContentBlock::text(text("text"))),
            "image" => content.push(ContentBlock::Image {
                data: text("data").to_string(),
                mime_type: text("mimeType").to_string(),
            }),
            "audio" => content
                .push(ContentBlock::text(format!("[audio ({}) not shown]", text("mimeType")))),
            "resource" => {
                let resource = block.get("resource").cloned().unwrap_or(Value::Null);
                let field = |key: &str| resource.get(key).and_then(Value::as_str);
                let uri = field("uri").unwrap_or_default();
                content.push(ContentBlock::text(match field("text") {
                    Some(body) => format!("[resource {uri}]\n{body}"),
                    None => format!(
                        "[resource {uri} ({}): binary data not shown]",
                        field("mimeType").unwrap_or("unknown type")
                    ),
                }));
            }
            "resource_link" => content.push(ContentBlock::text(format!(
                "[resource link {} {}]",
                text("uri"),
                text("name")
            ))),
            other => content.push(ContentBlock::text(format!("[{other} content not shown]"))),
        }
    }
    let structured = result.get("structuredContent").filter(|value| !value.is_null()).cloned();
    if let Some(structured) = &structured
        && !content.iter().any(|block| matches!(block, ContentBlock::Text { .. }))
    {
        content.push(ContentBlock::text(structured.to_string()));
    }
    if content.is_empty() {
        content.push(ContentBlock::text("(no output)"));
    }
    ToolOutput {
        content,
        details: structured.map(|structured| json!({"structured_content": structured})),
        is_error: result.get("isError").and_then(Value::as_bool).unwrap_or(false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_content_kind_is_mapped() {
        let output = tool_output(&json!({
            "content": [
                {"type": "text", "text": "hello"},
                {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
                {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "body"}},
                {"type": "resource", "resource": {"uri": "file:///b.bin", "blob": "AAAA", "mimeType": "application/octet-stream"}},
                {"type": "resource_link", "uri": "file:///c", "name": "c"}
            ],
            "structuredContent": {"sum": 3},
            "isError": false
        }));
        assert!(!output.is_error);
        assert_eq!(output.content[0], ContentBlock::text("hello"));
        assert!(
            matches!(&output.content[1], ContentBlock::Image { mime_type, .. } if mime_type == "image/png")
        );
        assert_eq!(output.content[2], ContentBlock::text("[resource file:///a.txt]\nbody"));
        assert!(output.content[3].as_text().is_some_and(|t| t.contains("binary data")));
        assert_eq!(output.details, Some(json!({"structured_content": {"sum": 3}})));
    }

    #[test]
    fn errors_and_structured_only_results() {
        let failed =
            tool_output(&json!({"content": [{"type": "text", "text": "no"}], "isError": true}));
        assert!(failed.is_error);
        let structured = tool_output(&json!({"content": [], "structuredContent": {"x": 1}}));
        assert_eq!(structured.content, vec![ContentBlock::text("{\"x\":1}")]);
        assert_eq!(tool_output(&json!({})).content, vec![ContentBlock::text("(no output)")]);
    }
}
