//! Host hooks: how the layer above (coding, session) takes part in a run without the loop
//! knowing about it.
//!
//! Every hook is async (a boxed future), may wait as long as it likes and has a default that
//! changes nothing, so a host implements only what it needs. Hooks run on the run's task; a
//! hook that waits (an approval) should watch the cancel token it is given, but the loop does
//! not rely on it: cancelling a run stops waiting on any hook at once.

use futures::future::{BoxFuture, FutureExt, ready};
use rein_protocol::message::{ContentBlock, Message, ToolCall, ToolResultMessage};
use rein_protocol::verify::RunOutcome;
use serde_json::Value;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// What the next provider request will carry, shown to [`AgentHooks::before_request`].
#[derive(Debug, Clone, Copy)]
pub struct RequestView<'a> {
    /// The run the request belongs to.
    pub run_id: &'a str,
    /// The 1-based turn within the run.
    pub turn: u32,
    /// The system prompt in force.
    pub system_prompt: &'a str,
    /// The history that will be sent.
    pub messages: &'a [Arc<Message>],
}

/// Changes a host makes before a provider request. The default changes nothing.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RequestEdit {
    /// A new system prompt, kept for this and later requests (AGENTS.md changed, say).
    pub system_prompt: Option<String>,
    /// A new history, which replaces the harness's messages from here on (compaction, tool
    /// history repair).
    pub messages: Option<Vec<Arc<Message>>>,
}

/// One tool call as the tool hooks see it.
#[derive(Debug, Clone)]
pub struct ToolCallContext {
    /// The run the call belongs to.
    pub run_id: String,
    /// The tool's name as the model gave it.
    pub tool_name: String,
    /// The call id from the model.
    pub call_id: String,
    /// The arguments: validated when the call passed validation, as the model sent them
    /// otherwise.
    pub arguments: Value,
    /// Cancelled when the run is cancelled or runs out of time.
    pub cancel: CancellationToken,
}

/// What [`AgentHooks::before_tool_call`] decides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolCallDecision {
    /// Run the call.
    Proceed,
    /// Run the call with these arguments instead of the model's (a hook rewrote them); they
    /// are checked against the tool's schema again.
    ProceedWith {
        /// The arguments to run the call with.
        arguments: Value,
    },
    /// Do not run it; the model gets an error result saying why.
    Block {
        /// The reason the model sees.
        reason: String,
    },
}

/// The tool calls of one turn, shown to [`AgentHooks::before_tools`] and
/// [`AgentHooks::after_tools`].
#[derive(Debug, Clone, Copy)]
pub struct TurnTools<'a> {
    /// The run the turn belongs to.
    pub run_id: &'a str,
    /// The 1-based turn within the run.
    pub turn: u32,
    /// The calls of the turn's reply, in call order.
    pub calls: &'a [ToolCall],
}

/// A run whose model just stopped (a reply without tool calls, no steering waiting), shown to
/// [`AgentHooks::on_stop`].
#[derive(Debug, Clone, Copy)]
pub struct StopView<'a> {
    /// The run.
    pub run_id: &'a str,
    /// The 1-based turn whose reply stopped.
    pub turn: u32,
    /// How many times [`AgentHooks::on_stop`] already continued this run (a `Stop` hook's
    /// loop guard).
    pub continuations: u32,
    /// Cancelled when the run is cancelled or runs out of time.
    pub cancel: &'a CancellationToken,
}

/// What [`AgentHooks::on_stop`] decides.
#[derive(Debug, Clone, PartialEq)]
pub enum StopDecision {
    /// The run is complete, with this outcome.
    Finish(RunOutcome),
    /// The run goes on: `content` is appended as a user message and another turn starts
    /// (limits permitting). `outcome` is the run's outcome should it end before the model stops
    /// again.
    Continue {
        /// What the model is told (a failing check's output, say).
        content: Vec<ContentBlock>,
        /// The outcome so far.
        outcome: RunOutcome,
    },
}

/// The host's hooks into a run. Every method has a default that changes nothing.
pub trait AgentHooks: Send + Sync {
    /// Called before every provider request (also the retry after a context overflow). May
    /// replace the system prompt and the history.
    fn before_request<'a>(&'a self, request: RequestView<'a>) -> BoxFuture<'a, RequestEdit> {
        let _ = request;
        ready(RequestEdit::default()).boxed()
    }

    /// Called before a validated tool call runs: ask for approval, or block it. Not called for
    /// calls that failed validation.
    fn before_tool_call<'a>(
        &'a self,
        call: &'a ToolCallContext,
    ) -> BoxFuture<'a, ToolCallDecision> {
        let _ = call;
        ready(ToolCallDecision::Proceed).boxed()
    }

    /// Called with every result of a call the loop processed (run, blocked or invalid; not for
    /// calls cut short by cancellation); what it returns is what the model sees.
    fn after_tool_call<'a>(
        &'a self,
        call: &'a ToolCallContext,
        result: ToolResultMessage,
    ) -> BoxFuture<'a, ToolResultMessage> {
        let _ = call;
        ready(result).boxed()
    }

    /// Called before the tool calls of a turn run (not for a reply that ended the run). The
    /// coding layer snapshots the project here.
    fn before_tools<'a>(&'a self, turn: TurnTools<'a>) -> BoxFuture<'a, ()> {
        let _ = turn;
        ready(()).boxed()
    }

    /// Called after the tool calls of a turn ran (also when the run was cancelled meanwhile,
    /// so the host can record what the tools left behind); the loop waits for it, so it should
    /// be short.
    fn after_tools<'a>(&'a self, turn: TurnTools<'a>) -> BoxFuture<'a, ()> {
        let _ = turn;
        ready(()).boxed()
    }

    /// Called when the model ends a run (a reply without tool calls and no steering waiting):
    /// the place for checks that decide whether the run is really done (verification, a
    /// `Stop` hook). The default finishes the run `unverified`.
    fn on_stop<'a>(&'a self, stop: StopView<'a>) -> BoxFuture<'a, StopDecision> {
        let _ = stop;
        ready(StopDecision::Finish(RunOutcome::Unverified)).boxed()
    }

    /// Called when the provider rejected a request as too long for the context window, at
    /// most once per run. Returning a new history (compacted) retries the request with it;
    /// `None` ends the run with an error.
    fn on_context_overflow<'a>(
        &'a self,
        messages: &'a [Arc<Message>],
    ) -> BoxFuture<'a, Option<Vec<Arc<Message>>>> {
        let _ = messages;
        ready(None).boxed()
    }
}

/// Hooks that change nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoHooks;

impl AgentHooks for NoHooks {}
