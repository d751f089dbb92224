//! The agent loop and its harness.
//!
//! The loop sends a system prompt, messages and tools to a provider, streams the reply, runs
//! the tool calls it asks for and goes round again until the model stops calling tools or a
//! limit ends the run. It knows nothing of files, sockets or sessions, so any front end can
//! drive it.
//!
//! See the module docs for the details; this page is the overview.

pub mod events;
pub mod execution;
pub mod harness;
pub mod hooks;
pub mod limits;
mod partial;
mod run;
mod stop;
pub mod tool;
pub mod toolset;

#[cfg(test)]
mod test_support;

pub use events::EventReceiver;
pub use harness::{Harness, HarnessConfig, HarnessError, QueueReceipt};
pub use hooks::{AgentHooks, NoHooks, RequestEdit, RequestView, ToolCallContext, ToolCallDecision};
pub use limits::{RunLimits, RunProgress};
pub use tool::{ExecutionMode, Tool, ToolInvocation, ToolOutput, ToolUpdateSink};
pub use toolset::{ToolSet, ToolSetError};

/// Milliseconds since the Unix epoch, for message timestamps.
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX))
}
