//! The agent loop and its harness.
//!
//! The loop sends a system prompt, messages and tools to a provider, streams the reply, runs
//! the tool calls it asks for and goes round again until the model stops calling tools or a
//! limit ends the run. It knows nothing of files, sockets or sessions: a host (the coding
//! layer, a test, a benchmark) gives it a [`rein_ai::Provider`], a [`rein_protocol::ModelInfo`]
//! and [`Tool`]s, and reads plain [`rein_protocol::SessionEvent`]s back.
//!
//! # The harness
//!
//! A [`Harness`] is the long-lived owner of one conversation: provider, model, thinking
//! level, system prompt, tools, hooks, default limits, the message history, the two queues
//! and the event subscribers. Its control methods never wait for a run:
//!
//! - [`Harness::prompt`] starts a run and returns its id at once; the run proceeds on a tokio
//!   task. While a run is active, prompting fails with [`HarnessError::Busy`] unless the caller
//!   steers or follows up ([`Harness::prompt_or_queue`] decides atomically).
//! - [`Harness::steer`] queues a user message delivered at the next turn boundary, after the
//!   current tool batch. A pending steer keeps the run going even when the model had just
//!   stopped calling tools.
//! - [`Harness::follow_up`] queues a user message that starts a new run when the current one
//!   ends. Steering that a run did not get to deliver (it was cancelled or hit a limit)
//!   becomes the first follow-up, so nothing the user said is silently dropped.
//! - Steering or following up an idle harness starts a run at once.
//! - [`Harness::queues`], [`Harness::clear_queue`]; every queue change is a `QueueChanged`
//!   event.
//! - [`Harness::cancel`] stops the current run; [`Harness::cancel_all`] also empties both
//!   queues so the harness settles.
//! - When no run is active and no follow-up waits, a final `Settled` event is emitted and
//!   [`Harness::wait_idle`] returns.
//! - Model, provider, thinking level, tools and hooks can be changed at any time and apply
//!   from the next run; the system prompt applies from the next request. The history can be
//!   read any time ([`Harness::messages`]) and replaced between runs
//!   ([`Harness::set_messages`]) for branching or compaction.
//!
//! # One run
//!
//! 1. The user's message is appended (`MessageStart`, `MessageEnd`).
//! 2. Each turn: `TurnStart`; the `before_request` hook may replace the system prompt and the
//!    history; the request is streamed (`MessageStart`, a `MessageUpdate` per delta,
//!    `AutoRetry` for the provider's retry notices); the reply is appended (`MessageEnd`).
//! 3. Its tool calls run (see *Scheduling*); each result is appended in call order
//!    (`MessageStart`, `MessageEnd`), then `TurnEnd` carries the reply and its results.
//! 4. No tool calls and no pending steer: the `on_stop` hook decides; by default the run is
//!    complete. Otherwise (or when the hook gives the model a message) the limits are checked,
//!    pending steering messages are appended, and the next turn starts.
//! 5. `AgentEnd` says why it ended ([`rein_protocol::event::EndReason`]), with the usage and
//!    turn count.
//!
//! Every message appended to the history is reported by a `MessageEnd` in history order, so a
//! session layer can persist each one at its boundary. The two-turn sequence is, exactly:
//! `AgentStart`, `MessageStart`/`MessageEnd` (user), `TurnStart`, `MessageStart`,
//! `MessageUpdate`..., `MessageEnd` (assistant), `ToolExecutionStart`, `ToolExecutionUpdate`...,
//! `ToolExecutionEnd`, `MessageStart`/`MessageEnd` (tool result), `TurnEnd`, `TurnStart`,
//! `MessageStart`, `MessageUpdate`..., `MessageEnd`, `TurnEnd`, `AgentEnd`, `Settled`.
//!
//! # Tool calls
//!
//! Before a call runs, its tool must exist, its arguments must be JSON (providers keep text
//! that is not JSON as a JSON string) and must match the tool's schema, compiled once per process
//! (tool sets with the same schema share the compiled validator). A tool that parses and checks
//! its own arguments ([`Tool::checks_own_arguments`], the typed coding tools) skips the schema
//! check, so arguments are validated once. A call failing any check gets an error result that tells the model what
//! to fix; it is never dropped and never crashes the loop. A tool returning `is_error`, or
//! panicking (each call runs on its own task, so a panic is caught there), is an error result
//! too.
//!
//! Scheduling: the calls of one reply are cut, in call order, into groups. A maximal run of
//! consecutive calls to [`ExecutionMode::Parallel`] tools is one group, run concurrently; every
//! call to a [`ExecutionMode::Sequential`] tool is a group of its own. Groups run one after
//! another, so a change never overlaps anything. Progress a tool sends through its
//! [`ToolUpdateSink`] becomes a `ToolExecutionUpdate` the moment it arrives; results are
//! appended strictly in call order, each as soon as it and all calls before it are done.
//!
//! # Hooks
//!
//! [`AgentHooks`] lets the host take part without the loop knowing about it. Every hook is
//! async and has a default that changes nothing:
//!
//! - `before_request`: replace the system prompt (AGENTS.md changed) and the history
//!   (compaction, tool-history repair) before every request.
//! - `before_tool_call`: approve (possibly waiting for a user), or block a validated call
//!   with a reason the model sees. It gets the tool name, call id, arguments and the run's
//!   cancel token.
//! - `after_tool_call`: amend the result the model will see.
//! - `before_run_completes`: continue a run that would complete with one more user message
//!   (command hooks' `Stop`).
//! - `on_context_overflow`: when the provider says the request is too long, return a
//!   compacted history to retry with; at most once per run.
//! - `before_tools` / `after_tools`: around the tool batch of each turn that runs one
//!   (checkpoints).
//! - `on_stop`: when the model stops calling tools, finish the run with an outcome
//!   (`verified`, ...) or keep it going with a user message (a failing check's output).
//!
//! # Limits and stopping
//!
//! [`RunLimits`] bound a run: turns, cost (the sum of `usage.cost.total` of its replies), wall
//! time, and consecutive turns in which every tool call failed; each ends the run with its own
//! reason (`MaxTurns`, `CostLimit`, `TimeLimit`, `ToolFailureLimit`). Turn, cost and failure
//! limits are checked at turn boundaries of a run that wants to go on.
//!
//! A cancel and the wall-time limit stop a run the same way: one cancellation token reaches
//! the provider stream, every running tool and every hook wait, and the loop itself stops
//! listening at once rather than relying on them. What streamed so far is recorded as an
//! assistant message with stop reason `aborted`; every call left without a result gets an
//! error result ("cancelled by user"); so the history is valid for the next prompt. A
//! provider error ends the run with `Error` and its message, its calls answered the same way.
//!
//! # Events
//!
//! [`Harness::subscribe`] returns a channel receiving every event in order. Emitting never
//! blocks and never runs subscriber code; the daemon numbers and fans them out.

pub mod events;
mod execution;
pub mod harness;
mod history;
pub mod hooks;
pub mod limits;
mod partial;
mod run;
mod schema_cache;
mod stop;
pub mod tool;
pub mod toolset;

#[cfg(test)]
mod test_support;

pub use events::{EmittedCount, EventReceiver};
pub use harness::{Harness, HarnessConfig, HarnessError, PromptReceipt, QueueReceipt};
pub use hooks::{
    AgentHooks, NoHooks, RequestEdit, RequestView, StopDecision, StopView, ToolCallContext,
    ToolCallDecision, TurnTools,
};
pub use limits::{RunLimits, RunProgress};
pub use tool::{ExecutionMode, Tool, ToolInvocation, ToolOutput, ToolUpdateSink};
pub use toolset::{ToolSet, ToolSetError};
