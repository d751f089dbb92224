//! The tool protocol: what a tool declares and how it is executed.

use futures::future::BoxFuture;
use rein_protocol::message::{ContentBlock, ToolDefinition};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Whether calls of a tool may run at the same time as other calls in one batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ExecutionMode {
    /// The tool only reads; calls in one assistant message run concurrently.
    Parallel,
    /// The tool changes things; calls run one at a time, in call order.
    Sequential,
}

/// Sends progress of a running tool call; each update becomes an event at once.
#[derive(Debug, Clone)]
pub struct ToolUpdateSink {
    sender: mpsc::UnboundedSender<Vec<ContentBlock>>,
}

impl ToolUpdateSink {
    /// A sink and the receiver that gets its updates.
    pub fn channel() -> (Self, mpsc::UnboundedReceiver<Vec<ContentBlock>>) {
        let (sender, receiver) = mpsc::unbounded_channel();
        (Self { sender }, receiver)
    }

    /// Reports progress. Ignored once nobody listens.
    pub fn send(&self, content: Vec<ContentBlock>) {
        let _ = self.sender.send(content);
    }

    /// Reports a chunk of text.
    pub fn text(&self, text: impl Into<String>) {
        self.send(vec![ContentBlock::text(text)]);
    }
}

/// One call of a tool.
#[derive(Debug, Clone)]
pub struct ToolInvocation {
    /// The call id from the model.
    pub call_id: String,
    /// Arguments: JSON, and valid against the tool's schema unless the tool checks its own
    /// ([`Tool::checks_own_arguments`]).
    pub arguments: Value,
    /// Cancelled when the run is cancelled; tools must stop promptly.
    pub cancel: CancellationToken,
    /// Where progress goes.
    pub updates: ToolUpdateSink,
}

/// What a tool call produced.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolOutput {
    /// What the model sees.
    pub content: Vec<ContentBlock>,
    /// Structured data for front ends, never sent to the model.
    pub details: Option<Value>,
    /// True when the call failed.
    pub is_error: bool,
}

impl ToolOutput {
    /// A successful text result.
    pub fn text(text: impl Into<String>) -> Self {
        Self { content: vec![ContentBlock::text(text)], details: None, is_error: false }
    }

    /// A failed result whose text the model sees.
    pub fn error(text: impl Into<String>) -> Self {
        Self { content: vec![ContentBlock::text(text)], details: None, is_error: true }
    }

    /// Adds structured details.
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }
}

/// A tool the model may call.
pub trait Tool: Send + Sync {
    /// The name the model calls it by.
    fn name(&self) -> &str;
    /// What it does, for the model.
    fn description(&self) -> &str;
    /// JSON Schema of the arguments object.
    fn parameters(&self) -> Value;
    /// Extra guidance for the system prompt (when and how to use the tool).
    fn guidance(&self) -> Option<&str> {
        None
    }
    /// Whether calls may overlap with others in a batch.
    fn mode(&self) -> ExecutionMode;
    /// True when [`Tool::execute`] parses and checks its arguments itself, with errors that
    /// name the field at fault (typed tools): the tool set then does not check them against
    /// [`Tool::parameters`] first, so they are validated once. False (the default) for tools
    /// that take the JSON as it comes (MCP tools, hand-written ones), whose arguments the
    /// tool set checks against the schema.
    fn checks_own_arguments(&self) -> bool {
        false
    }
    /// Runs one call. Failures are returned as `ToolOutput { is_error: true, .. }`; a panic is
    /// caught by the loop and turned into an error result as well.
    fn execute(&self, invocation: ToolInvocation) -> BoxFuture<'_, ToolOutput>;

    /// The definition sent to the provider.
    fn definition(&self) -> ToolDefinition {
        ToolDefinition {
            name: self.name().to_string(),
            description: self.description().to_string(),
            parameters: self.parameters(),
        }
    }
}
