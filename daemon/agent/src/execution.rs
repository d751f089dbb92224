//! Running the tool calls of one assistant message.
//!
//! # Scheduling
//!
//! The calls are cut, in call order, into groups: a maximal run of consecutive calls to
//! `Parallel` tools forms one group whose calls run concurrently; each call to a `Sequential`
//! tool is a group of its own. Groups run one after another, so a write never overlaps
//! anything, and reads never overlap a write that the model asked for before or after them.
//! A call of an unknown tool runs nothing and counts as parallel.
//!
//! Tool events (`ToolExecutionStart/Update/End`) are emitted live as each call progresses;
//! the result messages are handed to the caller strictly in call order, each as soon as it
//! and every call before it are done.

use crate::events::EventHub;
use crate::hooks::{AgentHooks, ToolCallContext, ToolCallDecision};
use crate::stop::RunStop;
use crate::tool::{ExecutionMode, ToolInvocation, ToolOutput, ToolUpdateSink};
use crate::toolset::{ToolSet, ValidCall};
use futures::StreamExt;
use futures::stream::FuturesOrdered;
use rein_protocol::clock::now_ms;
use rein_protocol::event::SessionEvent;
use rein_protocol::message::{ToolCall, ToolResultMessage};
use std::any::Any;
use std::ops::Range;

/// What a batch needs from the run.
pub(crate) struct BatchContext<'a> {
    /// The run the calls belong to.
    pub(crate) run_id: &'a str,
    /// Where events go.
    pub(crate) events: &'a EventHub,
    /// The host's hooks.
    pub(crate) hooks: &'a dyn AgentHooks,
    /// The tools.
    pub(crate) tools: &'a ToolSet,
    /// The run's stop signal.
    pub(crate) stop: &'a RunStop,
}

/// Cuts calls with these modes into the groups described in the module docs.
pub(crate) fn schedule(modes: &[ExecutionMode]) -> Vec<Range<usize>> {
    let mut groups = Vec::new();
    let mut start = 0;
    while start < modes.len() {
        let end = match modes[start] {
            ExecutionMode::Sequential => start + 1,
            ExecutionMode::Parallel => modes[start..]
                .iter()
                .position(|mode| *mode == ExecutionMode::Sequential)
                .map_or(modes.len(), |offset| start + offset),
        };
        groups.push(start..end);
        start = end;
    }
    groups
}

/// Runs the calls and hands each result to `record` in call order. Calls not yet started when
/// the run stops get an error result saying why, so every call has exactly one result.
pub(crate) async fn execute_batch(
    context: &BatchContext<'_>,
    calls: &[ToolCall],
    mut record: impl FnMut(&ToolResultMessage),
) -> Vec<ToolResultMessage> {
    let modes: Vec<ExecutionMode> =
        calls.iter().map(|call| context.tools.mode_of(&call.name)).collect();
    let mut results = Vec::with_capacity(calls.len());
    for group in schedule(&modes) {
        let mut running: FuturesOrdered<_> =
            calls[group].iter().map(|call| run_call(context, call)).collect();
        while let Some(result) = running.next().await {
            record(&result);
            results.push(result);
        }
    }
    results
}

/// Gives every call an error result with `text` without running anything (the reply they
/// came in was cut short or failed). Each gets `ToolExecutionEnd` but no `ToolExecutionStart`.
pub(crate) fn skip_calls(
    context: &BatchContext<'_>,
    calls: &[ToolCall],
    text: &str,
    mut record: impl FnMut(&ToolResultMessage),
) -> Vec<ToolResultMessage> {
    calls
        .iter()
        .map(|call| {
            let result = finish(context, call, ToolOutput::error(text));
            record(&result);
            result
        })
        .collect()
}

/// Runs one call: validate, ask the before-hook, execute, let the after-hook amend.
async fn run_call(context: &BatchContext<'_>, call: &ToolCall) -> ToolResultMessage {
    let stop = context.stop;
    if stop.is_stopped() {
        return finish(context, call, ToolOutput::error(stop.reason_text()));
    }
    let validated = context.tools.validate(call);
    let arguments = match &validated {
        Ok(valid) => valid.arguments.clone(),
        Err(_) => call.arguments.clone(),
    };
    context.events.emit(SessionEvent::ToolExecutionStart {
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        arguments: arguments.clone(),
    });
    let hook_call = ToolCallContext {
        run_id: context.run_id.to_string(),
        tool_name: call.name.clone(),
        call_id: call.id.clone(),
        arguments,
        cancel: stop.token().clone(),
    };
    let output = match validated {
        Err(message) => ToolOutput::error(message),
        Ok(valid) => {
            let decision = tokio::select! {
                biased;
                () = stop.token().cancelled() => None,
                decision = context.hooks.before_tool_call(&hook_call) => Some(decision),
            };
            match decision {
                None => return finish(context, call, ToolOutput::error(stop.reason_text())),
                Some(ToolCallDecision::Block { reason }) => {
                    ToolOutput::error(format!("Tool call blocked: {reason}"))
                }
                Some(ToolCallDecision::Proceed) => match invoke(context, call, valid).await {
                    Some(output) => output,
                    None => return finish(context, call, ToolOutput::error(stop.reason_text())),
                },
                Some(ToolCallDecision::ProceedWith { arguments }) => {
                    let rewritten = ToolCall { arguments, ..call.clone() };
                    match context.tools.validate(&rewritten) {
                        Err(message) => ToolOutput::error(message),
                        Ok(valid) => match invoke(context, call, valid).await {
                            Some(output) => output,
                            None => {
                                return finish(
                                    context,
                                    call,
                                    ToolOutput::error(stop.reason_text()),
                                );
                            }
                        },
                    }
                }
            }
        }
    };
    let amended = tokio::select! {
        biased;
        () = stop.token().cancelled() => None,
        amended = context.hooks.after_tool_call(&hook_call, result_message(call, output)) => {
            Some(amended)
        }
    };
    match amended {
        Some(result) => end(context, result),
        // Stopped while the after-hook ran: the call's own result went with the hook.
        None => finish(context, call, ToolOutput::error(stop.reason_text())),
    }
}

/// Executes a valid call on its own task, forwarding progress as it arrives. `None` when the
/// run stopped first (the task is aborted then).
async fn invoke(
    context: &BatchContext<'_>,
    call: &ToolCall,
    valid: ValidCall,
) -> Option<ToolOutput> {
    let (updates_sink, mut updates) = ToolUpdateSink::channel();
    let invocation = ToolInvocation {
        call_id: call.id.clone(),
        arguments: valid.arguments,
        cancel: context.stop.token().clone(),
        updates: updates_sink,
    };
    let tool = valid.tool;
    let mut task = tokio::spawn(async move { tool.execute(invocation).await });
    let emit_update = |content| {
        context.events.emit(SessionEvent::ToolExecutionUpdate {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            content,
        });
    };
    let joined = loop {
        tokio::select! {
            biased;
            () = context.stop.token().cancelled() => {
                task.abort();
                return None;
            }
            joined = &mut task => break joined,
            Some(update) = updates.recv() => emit_update(update),
        }
    };
    while let Ok(update) = updates.try_recv() {
        emit_update(update);
    }
    match joined {
        Ok(output) => Some(output),
        Err(error) if error.is_panic() => {
            let message = panic_message(error.into_panic());
            tracing::warn!(tool = %call.name, call_id = %call.id, %message, "tool panicked");
            Some(ToolOutput::error(format!("Tool `{}` panicked: {message}", call.name)))
        }
        Err(_) => None,
    }
}

/// The text of a panic payload.
fn panic_message(payload: Box<dyn Any + Send>) -> String {
    match payload.downcast::<String>() {
        Ok(text) => *text,
        Err(payload) => match payload.downcast::<&'static str>() {
            Ok(text) => (*text).to_string(),
            Err(_) => "no message".to_string(),
        },
    }
}

fn result_message(call: &ToolCall, output: ToolOutput) -> ToolResultMessage {
    ToolResultMessage {
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        content: output.content,
        is_error: output.is_error,
        details: output.details,
        timestamp: now_ms(),
    }
}

/// Ends a call that the stop cut short (no after-hook).
fn finish(context: &BatchContext<'_>, call: &ToolCall, output: ToolOutput) -> ToolResultMessage {
    end(context, result_message(call, output))
}

fn end(context: &BatchContext<'_>, result: ToolResultMessage) -> ToolResultMessage {
    context.events.emit(SessionEvent::ToolExecutionEnd {
        tool_call_id: result.tool_call_id.clone(),
        tool_name: result.tool_name.clone(),
        result: result.clone(),
    });
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use ExecutionMode::{Parallel, Sequential};

    #[test]
    fn consecutive_parallel_calls_share_a_group_and_sequential_ones_stand_alone() {
        assert_eq!(schedule(&[]), Vec::<Range<usize>>::new());
        assert_eq!(schedule(&[Parallel, Parallel, Parallel]), vec![0..3]);
        assert_eq!(schedule(&[Sequential, Sequential]), vec![0..1, 1..2]);
        assert_eq!(
            schedule(&[Parallel, Parallel, Sequential, Parallel, Sequential, Sequential]),
            vec![0..2, 2..3, 3..4, 4..5, 5..6]
        );
    }

    #[test]
    fn panic_payloads_become_text() {
        assert_eq!(panic_message(Box::new("static")), "static");
        assert_eq!(panic_message(Box::new(String::from("owned"))), "owned");
        assert_eq!(panic_message(Box::new(5_u8)), "no message");
    }
}
