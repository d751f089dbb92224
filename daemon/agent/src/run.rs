//! One run of the loop: from the user's input to an end reason.
//!
//! A turn is one provider request and the tool calls of its reply. The run appends every
//! message to the harness's history as it completes (and reports it with `MessageEnd`), so the
//! history is valid at every turn boundary and after any stop.

use crate::execution::{BatchContext, execute_batch, skip_calls};
use crate::harness::Shared;
use crate::hooks::{AgentHooks, RequestView, StopDecision, StopView, TurnTools};
use crate::limits::{RunLimits, RunProgress};
use crate::partial::PartialMessage;
use crate::stop::RunStop;
use crate::toolset::ToolSet;
use futures::StreamExt;
use rein_ai::{
    AssistantMessageEvent, Provider, ProviderErrorKind, ProviderRequest, RequestContext,
    StreamOptions,
};
use rein_protocol::clock::now_ms;
use rein_protocol::event::{EndReason, SessionEvent};
use rein_protocol::message::{
    AssistantMessage, ContentBlock, Message, StopReason, ToolCall, ToolResultMessage, Usage,
    UserMessage,
};
use rein_protocol::model::{ModelInfo, ThinkingLevel};
use rein_protocol::verify::RunOutcome;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio_util::sync::CancellationToken;

/// Everything a run is started with; fixed for the whole run.
pub(crate) struct RunSetup {
    /// The run's id.
    pub(crate) run_id: String,
    /// The user's message that starts it.
    pub(crate) input: Vec<ContentBlock>,
    /// Its limits.
    pub(crate) limits: RunLimits,
    /// Who answers.
    pub(crate) provider: Arc<dyn Provider>,
    /// Which model.
    pub(crate) model: ModelInfo,
    /// How hard it thinks.
    pub(crate) thinking: ThinkingLevel,
    /// The tools it may call.
    pub(crate) tools: Arc<ToolSet>,
    /// The host's hooks.
    pub(crate) hooks: Arc<dyn AgentHooks>,
    /// The user's cancel.
    pub(crate) cancel: CancellationToken,
}

/// How a run ended: the content of its `AgentEnd`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RunEnd {
    /// Why it ended.
    pub(crate) reason: EndReason,
    /// What went wrong, for `Error`.
    pub(crate) error: Option<String>,
    /// Usage summed over its requests.
    pub(crate) usage: Usage,
    /// Turns taken.
    pub(crate) turns: u32,
    /// Whether the result passed the host's checks.
    pub(crate) outcome: RunOutcome,
}

/// The assistant's reply to one request.
enum Reply {
    /// The provider finished the message.
    Complete(AssistantMessage),
    /// The run stopped while the message streamed; the message is what streamed so far.
    Stopped(AssistantMessage),
    /// The provider failed.
    Failed(AssistantMessage, ProviderErrorKind),
}

/// Text given to tool calls of a reply whose request failed.
const NOT_RUN_REQUEST_FAILED: &str = "not run: the model's request failed";

/// Runs the loop until it ends. The caller emits `AgentStart` and `AgentEnd`.
pub(crate) async fn execute(shared: &Shared, setup: RunSetup) -> RunEnd {
    let stop = RunStop::new(&setup.cancel);
    let _deadline = setup.limits.max_wall_time.map(|limit| stop.arm_deadline(limit));
    let mut run = Run {
        shared,
        setup,
        stop,
        usage: Usage::default(),
        turns: 0,
        failed_turns: 0,
        overflow_recovered: false,
        continuations: 0,
        message_started: AtomicBool::new(false),
        outcome: RunOutcome::Unverified,
    };
    run.execute().await
}

struct Run<'a> {
    shared: &'a Shared,
    setup: RunSetup,
    stop: RunStop,
    usage: Usage,
    turns: u32,
    failed_turns: u32,
    overflow_recovered: bool,
    /// Times `on_stop` continued the run.
    continuations: u32,
    message_started: AtomicBool,
    outcome: RunOutcome,
}

impl Run<'_> {
    async fn execute(&mut self) -> RunEnd {
        tracing::debug!(run_id = %self.setup.run_id, "run started");
        let input = std::mem::take(&mut self.setup.input);
        self.shared
            .append_input(Message::User(UserMessage { content: input, timestamp: now_ms() }));
        loop {
            if self.stop.is_stopped() {
                return self.end(self.stop.end_reason(), None);
            }
            self.turns += 1;
            self.shared.events.emit(SessionEvent::TurnStart { turn: self.turns });
            let (message, ending) = match self.request_reply().await {
                Reply::Complete(message) => (message, None),
                Reply::Stopped(message) => (message, Some((self.stop.end_reason(), None))),
                Reply::Failed(message, kind) => {
                    let error = message
                        .error_message
                        .clone()
                        .unwrap_or_else(|| format!("the provider failed ({kind:?})"));
                    (message, Some((EndReason::Error, Some(error))))
                }
            };
            self.usage.add(&message.usage);
            self.ensure_started();
            self.shared.append_message(Message::Assistant(message.clone()));
            let calls: Vec<ToolCall> = message.tool_calls().cloned().collect();
            let runs_tools = ending.is_none() && !calls.is_empty();
            if runs_tools {
                self.before_tools(&calls).await;
            }
            let tool_results = self.answer_calls(&calls, ending.as_ref().map(|e| e.0)).await;
            if runs_tools {
                let turn =
                    TurnTools { run_id: &self.setup.run_id, turn: self.turns, calls: &calls };
                self.setup.hooks.after_tools(turn).await;
            }
            let all_failed =
                !tool_results.is_empty() && tool_results.iter().all(|result| result.is_error);
            self.shared.events.emit(SessionEvent::TurnEnd {
                turn: self.turns,
                message,
                tool_results,
            });
            if let Some((reason, error)) = ending {
                return self.end(reason, error);
            }
            if let Some(end) = self.turn_boundary(!calls.is_empty(), all_failed).await {
                return end;
            }
        }
    }

    /// Runs the calls of a reply, or, when the reply ended the run (`ending` is its reason),
    /// gives each an error result saying why it did not run. Results are appended in call
    /// order.
    async fn answer_calls(
        &self,
        calls: &[ToolCall],
        ending: Option<EndReason>,
    ) -> Vec<ToolResultMessage> {
        let batch = BatchContext {
            run_id: &self.setup.run_id,
            events: &self.shared.events,
            hooks: self.setup.hooks.as_ref(),
            tools: &self.setup.tools,
            stop: &self.stop,
        };
        let record = |result: &ToolResultMessage| {
            self.shared.append_input(Message::ToolResult(result.clone()));
        };
        match ending {
            None => execute_batch(&batch, calls, record).await,
            Some(EndReason::Error) => skip_calls(&batch, calls, NOT_RUN_REQUEST_FAILED, record),
            Some(_) => skip_calls(&batch, calls, self.stop.reason_text(), record),
        }
    }

    /// The `before_tools` hook, given up at once when the run stops.
    async fn before_tools(&self, calls: &[ToolCall]) {
        let turn = TurnTools { run_id: &self.setup.run_id, turn: self.turns, calls };
        tokio::select! {
            biased;
            () = self.stop.token().cancelled() => {}
            () = self.setup.hooks.before_tools(turn) => {}
        }
    }

    /// Asks the host whether a run the model stopped is done. `Err` ends the run (complete, or
    /// stopped meanwhile); `Ok` is the message the run goes on with.
    async fn ask_stop(&mut self) -> Result<Vec<ContentBlock>, RunEnd> {
        let view = StopView {
            run_id: &self.setup.run_id,
            turn: self.turns,
            continuations: self.continuations,
            cancel: self.stop.token(),
        };
        let decision = tokio::select! {
            biased;
            () = self.stop.token().cancelled() => None,
            decision = self.setup.hooks.on_stop(view) => Some(decision),
        };
        match decision {
            None => Err(self.end(self.stop.end_reason(), None)),
            Some(StopDecision::Finish(outcome)) => {
                self.outcome = outcome;
                Err(self.end(EndReason::Completed, None))
            }
            Some(StopDecision::Continue { content, outcome }) => {
                self.outcome = outcome;
                self.continuations += 1;
                Ok(content)
            }
        }
    }

    /// Decides at a turn boundary whether the run goes on; when it does, appends the pending
    /// steering messages. `Some` is how the run ends.
    async fn turn_boundary(&mut self, made_calls: bool, all_calls_failed: bool) -> Option<RunEnd> {
        if self.stop.is_stopped() {
            return Some(self.end(self.stop.end_reason(), None));
        }
        self.failed_turns = if all_calls_failed { self.failed_turns + 1 } else { 0 };
        let mut continuation = None;
        if !made_calls && !self.shared.has_steering() {
            match self.ask_stop().await {
                Ok(content) => continuation = Some(content),
                Err(end) => return Some(end),
            }
        }
        let progress = RunProgress {
            turns: self.turns,
            cost: self.usage.cost.total,
            failed_turns: self.failed_turns,
        };
        if let Some(reason) = self.setup.limits.exceeded(&progress) {
            return Some(self.end(reason, None));
        }
        if let Some(content) = continuation {
            self.shared.append_input(Message::User(UserMessage { content, timestamp: now_ms() }));
        }
        for content in self.shared.take_steering() {
            self.shared.append_input(Message::User(UserMessage { content, timestamp: now_ms() }));
        }
        None
    }

    /// Asks the provider, giving the host one chance to recover from a context overflow.
    async fn request_reply(&mut self) -> Reply {
        loop {
            let Some(request) = self.build_request().await else {
                return Reply::Stopped(self.aborted(&PartialMessage::default()));
            };
            match self.stream_reply(request).await {
                Reply::Failed(message, ProviderErrorKind::ContextOverflow)
                    if !self.overflow_recovered =>
                {
                    self.overflow_recovered = true;
                    let history = self.shared.messages();
                    tracing::info!(
                        run_id = %self.setup.run_id,
                        "context overflow; asking the host to compact"
                    );
                    let compacted = tokio::select! {
                        biased;
                        () = self.stop.token().cancelled() => return Reply::Stopped(message),
                        compacted = self.setup.hooks.on_context_overflow(&history) => compacted,
                    };
                    match compacted {
                        Some(messages) => self.shared.replace_messages(messages),
                        None => return Reply::Failed(message, ProviderErrorKind::ContextOverflow),
                    }
                }
                reply => return reply,
            }
        }
    }

    /// The next request, after the host's `before_request` hook. `None` when the run stopped
    /// while the hook ran.
    async fn build_request(&self) -> Option<ProviderRequest> {
        self.message_started.store(false, Ordering::Relaxed);
        let (mut system_prompt, mut messages) = self.shared.request_inputs();
        let view = RequestView {
            run_id: &self.setup.run_id,
            turn: self.turns,
            system_prompt: &system_prompt,
            messages: &messages,
        };
        let edit = tokio::select! {
            biased;
            () = self.stop.token().cancelled() => return None,
            edit = self.setup.hooks.before_request(view) => edit,
        };
        if let Some(prompt) = edit.system_prompt {
            self.shared.replace_system_prompt(prompt.clone());
            system_prompt = prompt;
        }
        if let Some(replacement) = edit.messages {
            self.shared.replace_messages(replacement);
            messages = self.shared.messages();
        }
        Some(ProviderRequest {
            model: self.setup.model.clone(),
            context: RequestContext {
                system_prompt,
                messages,
                tools: self.setup.tools.shared_definitions(),
                encoded: Some(self.shared.encoded.clone()),
            },
            options: StreamOptions {
                thinking: self.setup.thinking,
                cancel: self.stop.token().clone(),
                ..StreamOptions::default()
            },
        })
    }

    /// Streams one reply, emitting its events, and stops listening the moment the run stops.
    async fn stream_reply(&self, request: ProviderRequest) -> Reply {
        let mut stream = self.setup.provider.stream(request);
        let mut partial = PartialMessage::default();
        loop {
            let event = tokio::select! {
                biased;
                () = self.stop.token().cancelled() => {
                    self.ensure_started();
                    return Reply::Stopped(self.aborted(&partial));
                }
                event = stream.next() => event,
            };
            match event {
                Some(AssistantMessageEvent::Start) => self.ensure_started(),
                Some(AssistantMessageEvent::Delta(delta)) => {
                    self.ensure_started();
                    partial.apply(&delta);
                    self.shared.events.emit(SessionEvent::MessageUpdate { delta });
                }
                Some(AssistantMessageEvent::Retry { attempt, max_attempts, delay_ms, error }) => {
                    tracing::info!(attempt, max_attempts, delay_ms, %error, "provider retry");
                    self.shared.events.emit(SessionEvent::AutoRetry {
                        attempt,
                        max_attempts,
                        delay_ms,
                        error,
                    });
                }
                Some(AssistantMessageEvent::Done(message)) => {
                    self.ensure_started();
                    return Reply::Complete(message);
                }
                Some(AssistantMessageEvent::Error { message, kind }) => {
                    self.ensure_started();
                    tracing::warn!(?kind, error = ?message.error_message, "provider request failed");
                    return Reply::Failed(message, kind);
                }
                None => {
                    self.ensure_started();
                    let message = partial.to_message(
                        &self.setup.model,
                        StopReason::Error,
                        Some("the provider stream ended without a final message".to_string()),
                        now_ms(),
                    );
                    return Reply::Failed(message, ProviderErrorKind::Protocol);
                }
            }
        }
    }

    /// Emits `MessageStart` for the assistant message of this request once.
    fn ensure_started(&self) {
        if !self.message_started.swap(true, Ordering::Relaxed) {
            let empty = PartialMessage::default().to_message(
                &self.setup.model,
                StopReason::Stop,
                None,
                now_ms(),
            );
            self.shared
                .events
                .emit(SessionEvent::MessageStart { message: Message::Assistant(empty) });
        }
    }

    /// What streamed so far, recorded as an aborted message.
    fn aborted(&self, partial: &PartialMessage) -> AssistantMessage {
        partial.to_message(
            &self.setup.model,
            StopReason::Aborted,
            Some(self.stop.reason_text().to_string()),
            now_ms(),
        )
    }

    fn end(&self, reason: EndReason, error: Option<String>) -> RunEnd {
        tracing::debug!(run_id = %self.setup.run_id, ?reason, turns = self.turns, "run ended");
        RunEnd {
            reason,
            error,
            usage: self.usage.clone(),
            turns: self.turns,
            outcome: self.outcome,
        }
    }
}
