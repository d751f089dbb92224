//! The agent loop and its harness.
//!
//! The loop sends a system prompt, messages and tools to a provider, streams the reply, runs
//! the tool calls it asks for and goes round again until the model stops calling tools or a
//! limit ends the run. It knows nothing of files, sockets or sessions, so any front end can
//! drive it.

pub mod tool;

pub use tool::{ExecutionMode, Tool, ToolInvocation, ToolOutput, ToolUpdateSink};
