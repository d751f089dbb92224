//! An MCP server's tool as the model sees it: `mcp__<server>__<tool>`, with the server's
//! description and input schema. Tools the server annotates read-only run in parallel like
//! the built-in read tools.

use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use rein_agent::{ExecutionMode, Tool, ToolInvocation, ToolOutput};
use serde_json::Value;

use super::server::McpServer;

/// Longest tool name providers accept.
const MAX_NAME_LEN: usize = 64;

/// The name the model calls a server's tool by: `mcp__<server>__<tool>`, with characters
/// providers refuse replaced by `_`, cut to 64 characters.
pub fn exposed_name(server: &str, tool: &str) -> String {
    let clean = |text: &str| -> String {
        text.chars()
            .map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' })
            .collect()
    };
    let mut name = format!("mcp__{}__{}", clean(server), clean(tool));
    name.truncate(MAX_NAME_LEN);
    name
}

/// One tool of one server.
pub struct McpTool {
    server: Arc<McpServer>,
    exposed: String,
    tool: String,
    description: String,
    schema: Value,
    read_only: bool,
}

impl McpTool {
    /// The tool `info` of `server`.
    pub(crate) fn new(server: Arc<McpServer>, info: &rmcp::model::Tool) -> Self {
        let exposed = exposed_name(server.name(), &info.name);
        let description =
            info.description.as_deref().or(info.title.as_deref()).unwrap_or("An MCP tool.");
        let mut schema = Value::Object(info.input_schema.as_ref().clone());
        if schema.get("type").is_none() {
            schema["type"] = Value::from("object");
        }
        let read_only = info.annotations.as_ref().and_then(|a| a.read_only_hint).unwrap_or(false);
        let description = format!("{description} [MCP server `{}`]", server.name());
        Self { server, exposed, tool: info.name.to_string(), description, schema, read_only }
    }

    /// Whether the server annotates it read-only.
    pub fn read_only(&self) -> bool {
        self.read_only
    }
}

impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.exposed
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> Value {
        self.schema.clone()
    }

    fn mode(&self) -> ExecutionMode {
        if self.read_only { ExecutionMode::Parallel } else { ExecutionMode::Sequential }
    }

    fn execute(&self, invocation: ToolInvocation) -> BoxFuture<'_, ToolOutput> {
        async move { self.server.call(&self.tool, invocation.arguments, &invocation.cancel).await }
            .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_prefixed_cleaned_and_capped() {
        assert_eq!(exposed_name("fs", "read_file"), "mcp__fs__read_file");
        assert_eq!(exposed_name("my server", "a.b/c"), "mcp__my_server__a_b_c");
        assert_eq!(exposed_name("s", &"x".repeat(100)).len(), 64);
    }
}
