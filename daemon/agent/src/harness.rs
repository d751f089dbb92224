//! The harness: the long-lived owner of one conversation and its runs.
//!
//! It holds the provider, model, thinking level, system prompt, tools, hooks, default limits,
//! the message history, the steering and follow-up queues and the event subscribers. Control
//! calls (`prompt`, `steer`, `follow_up`, `cancel`, `clear_queue`, ...) are plain synchronous
//! methods that only touch that state under a short lock, so they answer at once, never
//! queued behind the run they control. Runs proceed on a tokio task.

use crate::events::{EmittedCount, EventHub, EventReceiver};
use crate::history::unanswered_calls;
use crate::hooks::{AgentHooks, NoHooks};
use crate::limits::RunLimits;
use crate::run::{RunEnd, RunSetup, execute};
use crate::tool::Tool;
use crate::toolset::{ToolSet, ToolSetError};
use futures::FutureExt;
use rein_ai::{EncodedHistory, Provider};
use rein_protocol::clock::now_ms;
use rein_protocol::event::{EndReason, QueueState, QueuedMessage, SessionEvent};
use rein_protocol::message::{ContentBlock, Message, ToolResultMessage, Usage};
use rein_protocol::method::{BusyBehavior, PromptDisposition, QueueSelector};
use rein_protocol::model::{ModelInfo, ThinkingLevel};
use rein_protocol::verify::RunOutcome;
use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// A harness request that cannot be honoured.
#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    /// A run is active: steer it, queue a follow-up, or wait.
    #[error("a run is active; steer it, queue a follow-up, or wait")]
    Busy,
    /// The tools could not be registered.
    #[error(transparent)]
    Tools(#[from] ToolSetError),
    /// A run was asked for outside a tokio runtime.
    #[error("starting a run needs a tokio runtime")]
    NoRuntime,
}

/// What a harness starts with. Built with [`HarnessConfig::new`] and adjusted field by field.
pub struct HarnessConfig {
    /// Who answers.
    pub provider: Arc<dyn Provider>,
    /// The model asked.
    pub model: ModelInfo,
    /// Reasoning effort.
    pub thinking_level: ThinkingLevel,
    /// The system prompt.
    pub system_prompt: String,
    /// The tools the model may call.
    pub tools: Vec<Arc<dyn Tool>>,
    /// The host's hooks.
    pub hooks: Arc<dyn AgentHooks>,
    /// Limits of every run that is not given its own.
    pub limits: RunLimits,
    /// The history to continue (a resumed session), shared with whoever loaded it.
    pub messages: Vec<Arc<Message>>,
}

impl HarnessConfig {
    /// A configuration with no tools, no hooks, an empty system prompt and history, thinking
    /// off and default limits.
    pub fn new(provider: Arc<dyn Provider>, model: ModelInfo) -> Self {
        Self {
            provider,
            model,
            thinking_level: ThinkingLevel::Off,
            system_prompt: String::new(),
            tools: Vec::new(),
            hooks: Arc::new(NoHooks),
            limits: RunLimits::default(),
            messages: Vec::new(),
        }
    }
}

/// What became of a prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptReceipt {
    /// The run's id when it started one; otherwise the queued item's id (for a follow-up also
    /// the id its run will have).
    pub id: String,
    /// Started, steered or queued.
    pub disposition: PromptDisposition,
}

impl PromptReceipt {
    fn into_queue(self) -> QueueReceipt {
        QueueReceipt { started_run: self.disposition == PromptDisposition::Started, id: self.id }
    }
}

/// What became of a steering or follow-up message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueReceipt {
    /// The queued item's id. For a follow-up it is also the id its run will have; when the
    /// message started a run at once, it is that run's id.
    pub id: String,
    /// True when the harness was idle and the message started a run instead of waiting.
    pub started_run: bool,
}

/// A follow-up waiting for the current run to end, with the limits its run gets.
#[derive(Debug, Clone)]
struct FollowUp {
    message: QueuedMessage,
    limits: Option<RunLimits>,
}

/// The run in progress.
struct ActiveRun {
    run_id: String,
    cancel: CancellationToken,
}

/// The harness's state, behind one lock.
pub(crate) struct State {
    provider: Arc<dyn Provider>,
    model: ModelInfo,
    thinking: ThinkingLevel,
    system_prompt: String,
    tools: Arc<ToolSet>,
    hooks: Arc<dyn AgentHooks>,
    limits: RunLimits,
    /// The history, shared with the request in flight: a request takes it without copying,
    /// and an append copies it (the list, not the messages) only while a request still holds
    /// it. Each message is shared too, with the session's entry tree.
    messages: Arc<Vec<Arc<Message>>>,
    steering: Vec<QueuedMessage>,
    follow_up: VecDeque<FollowUp>,
    active: Option<ActiveRun>,
}

impl State {
    fn queues(&self) -> QueueState {
        QueueState {
            steering: self.steering.clone(),
            follow_up: self.follow_up.iter().map(|queued| queued.message.clone()).collect(),
        }
    }
}

/// What the harness and its run task share.
pub(crate) struct Shared {
    state: Mutex<State>,
    /// Event subscribers.
    pub(crate) events: EventHub,
    idle: watch::Sender<bool>,
    /// The history as earlier requests encoded it, for the next request to go on from.
    pub(crate) encoded: Arc<EncodedHistory>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Emits the queues as they are now. Called under the state lock so the events follow the
    /// order of the changes.
    fn emit_queues(&self, state: &State) {
        self.events.emit(SessionEvent::QueueChanged { queues: state.queues() });
    }

    /// Appends a finished assistant message and emits its `MessageEnd`. The event carries the
    /// history's own allocation, so the session entry made from it shares it too.
    pub(crate) fn append_message(&self, message: Message) {
        let message = Arc::new(message);
        Arc::make_mut(&mut self.lock().messages).push(Arc::clone(&message));
        self.events.emit(SessionEvent::MessageEnd { message });
    }

    /// Appends a user or tool-result message with its `MessageStart` and `MessageEnd`.
    pub(crate) fn append_input(&self, message: Message) {
        self.events.emit(SessionEvent::MessageStart { message: message.clone() });
        self.append_message(message);
    }

    /// Gives every call of the last reply that has no result an error result with `text`, so
    /// the history stays valid after a run died abruptly.
    fn answer_open_calls(&self, text: &str) {
        let open = unanswered_calls(self.lock().messages.as_slice());
        for call in open {
            self.append_input(Message::ToolResult(ToolResultMessage {
                tool_call_id: call.id,
                tool_name: call.name,
                content: vec![ContentBlock::text(text)],
                is_error: true,
                details: None,
                timestamp: now_ms(),
            }));
        }
    }

    /// The history as it is now (shared, not copied).
    pub(crate) fn messages(&self) -> Arc<Vec<Arc<Message>>> {
        self.lock().messages.clone()
    }

    /// Replaces the history (compaction, repair).
    pub(crate) fn replace_messages(&self, messages: Vec<Arc<Message>>) {
        self.lock().messages = Arc::new(messages);
        // What was encoded no longer starts the history: its memory goes now.
        self.encoded.clear();
    }

    /// Replaces the system prompt.
    pub(crate) fn replace_system_prompt(&self, prompt: String) {
        self.lock().system_prompt = prompt;
    }

    /// The system prompt and history for the next request; the history is shared, not copied.
    pub(crate) fn request_inputs(&self) -> (String, Arc<Vec<Arc<Message>>>) {
        let state = self.lock();
        (state.system_prompt.clone(), state.messages.clone())
    }

    /// True when steering messages wait.
    pub(crate) fn has_steering(&self) -> bool {
        !self.lock().steering.is_empty()
    }

    /// Takes every waiting steering message, in order.
    pub(crate) fn take_steering(&self) -> Vec<Vec<ContentBlock>> {
        let mut state = self.lock();
        if state.steering.is_empty() {
            return Vec::new();
        }
        let taken = std::mem::take(&mut state.steering);
        self.emit_queues(&state);
        taken.into_iter().map(|queued| queued.content).collect()
    }

    /// Makes a run active and describes it; emits `AgentStart`. The caller holds the lock and
    /// has checked that no run is active.
    fn activate(
        &self,
        state: &mut State,
        run_id: String,
        input: Vec<ContentBlock>,
        limits: RunLimits,
    ) -> RunSetup {
        let cancel = CancellationToken::new();
        state.active = Some(ActiveRun { run_id: run_id.clone(), cancel: cancel.clone() });
        self.idle.send_replace(false);
        self.events.emit(SessionEvent::AgentStart { run_id: run_id.clone() });
        RunSetup {
            run_id,
            input,
            limits,
            provider: state.provider.clone(),
            model: state.model.clone(),
            thinking: state.thinking,
            tools: state.tools.clone(),
            hooks: state.hooks.clone(),
            cancel,
        }
    }

    /// Runs, then follows up, until nothing is queued; then settles.
    async fn drive(self: Arc<Self>, mut setup: RunSetup) {
        loop {
            let run_id = setup.run_id.clone();
            let end = match AssertUnwindSafe(execute(&self, setup)).catch_unwind().await {
                Ok(end) => end,
                Err(_) => {
                    tracing::error!(%run_id, "the run panicked");
                    self.answer_open_calls("interrupted: internal error in the agent loop");
                    RunEnd {
                        reason: EndReason::Error,
                        error: Some("internal error: the run panicked".to_string()),
                        usage: Usage::default(),
                        turns: 0,
                        outcome: RunOutcome::Unverified,
                    }
                }
            };
            // From the end of this run to the start of the next (or to settling) is one step
            // under the lock, so a prompt never sees a run that has already ended as busy.
            let mut state = self.lock();
            self.events.emit(SessionEvent::AgentEnd {
                run_id,
                reason: end.reason,
                error: end.error,
                usage: end.usage,
                turns: end.turns,
                outcome: end.outcome,
            });
            state.active = None;
            let leftover_steering = std::mem::take(&mut state.steering);
            let moved = !leftover_steering.is_empty();
            for message in leftover_steering.into_iter().rev() {
                state.follow_up.push_front(FollowUp { message, limits: None });
            }
            match state.follow_up.pop_front() {
                Some(next) => {
                    self.emit_queues(&state);
                    let limits = next.limits.unwrap_or_else(|| state.limits.clone());
                    let message = next.message;
                    setup = self.activate(&mut state, message.id, message.content, limits);
                }
                None => {
                    if moved {
                        self.emit_queues(&state);
                    }
                    self.events.emit(SessionEvent::Settled);
                    self.idle.send_replace(true);
                    return;
                }
            }
        }
    }
}

/// The agent harness. Cheap to clone: clones share one conversation.
#[derive(Clone)]
pub struct Harness {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Harness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Harness").field("running", &self.is_running()).finish()
    }
}

fn new_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

impl Harness {
    /// A harness from a configuration; fails when a tool's schema is invalid or two tools
    /// share a name.
    pub fn new(config: HarnessConfig) -> Result<Self, HarnessError> {
        let state = State {
            provider: config.provider,
            model: config.model,
            thinking: config.thinking_level,
            system_prompt: config.system_prompt,
            tools: Arc::new(ToolSet::new(config.tools)?),
            hooks: config.hooks,
            limits: config.limits,
            messages: Arc::new(config.messages),
            steering: Vec::new(),
            follow_up: VecDeque::new(),
            active: None,
        };
        let (idle, _) = watch::channel(true);
        Ok(Self {
            shared: Arc::new(Shared {
                state: Mutex::new(state),
                events: EventHub::default(),
                idle,
                encoded: Arc::default(),
            }),
        })
    }

    /// Receives every event emitted from now on, in order.
    pub fn subscribe(&self) -> EventReceiver {
        self.shared.events.subscribe()
    }

    /// Like [`Harness::subscribe`], with the count of emitted events and how many were emitted
    /// before this subscription, so its reader can tell when it has seen everything emitted up
    /// to a given moment without a second subscription.
    pub fn subscribe_counted(&self) -> (EventReceiver, EmittedCount, u64) {
        self.shared.events.subscribe_counted()
    }

    /// Starts a run with the default limits and returns its id at once. Fails with `Busy`
    /// while a run is active.
    pub fn prompt(&self, content: Vec<ContentBlock>) -> Result<String, HarnessError> {
        self.submit(content, None, None).map(|receipt| receipt.id)
    }

    /// Starts a run with its own limits and returns its id at once. Fails with `Busy` while a
    /// run is active.
    pub fn prompt_with_limits(
        &self,
        content: Vec<ContentBlock>,
        limits: RunLimits,
    ) -> Result<String, HarnessError> {
        self.submit(content, Some(limits), None).map(|receipt| receipt.id)
    }

    /// Starts a run, or, while one is active, steers it or queues the prompt as a follow-up,
    /// decided atomically (what `session/prompt` with `when_busy` needs). `limits` apply to
    /// the run the prompt starts (also a queued follow-up's); the defaults when `None`.
    pub fn prompt_or_queue(
        &self,
        content: Vec<ContentBlock>,
        limits: Option<RunLimits>,
        when_busy: BusyBehavior,
    ) -> Result<PromptReceipt, HarnessError> {
        self.submit(content, limits, Some(when_busy))
    }

    /// Delivers a user message at the next turn boundary of the current run (after its tool
    /// batch); the run goes on with it even if the model had stopped calling tools. When idle,
    /// the message starts a run.
    pub fn steer(&self, content: Vec<ContentBlock>) -> Result<QueueReceipt, HarnessError> {
        self.submit(content, None, Some(BusyBehavior::Steer)).map(PromptReceipt::into_queue)
    }

    /// Queues a user message that starts a new run when the current one ends. When idle, it
    /// starts a run at once.
    pub fn follow_up(&self, content: Vec<ContentBlock>) -> Result<QueueReceipt, HarnessError> {
        self.submit(content, None, Some(BusyBehavior::FollowUp)).map(PromptReceipt::into_queue)
    }

    /// Starts a run when idle; otherwise queues as `when_busy` says, or fails with `Busy`.
    fn submit(
        &self,
        content: Vec<ContentBlock>,
        limits: Option<RunLimits>,
        when_busy: Option<BusyBehavior>,
    ) -> Result<PromptReceipt, HarnessError> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| HarnessError::NoRuntime)?;
        let mut state = self.shared.lock();
        let id = new_id();
        if state.active.is_some() {
            let queued = QueuedMessage { id: id.clone(), content };
            let disposition = match when_busy {
                None => return Err(HarnessError::Busy),
                Some(BusyBehavior::Steer) => {
                    state.steering.push(queued);
                    PromptDisposition::Steered
                }
                Some(BusyBehavior::FollowUp) => {
                    state.follow_up.push_back(FollowUp { message: queued, limits });
                    PromptDisposition::Queued
                }
            };
            self.shared.emit_queues(&state);
            return Ok(PromptReceipt { id, disposition });
        }
        let limits = limits.unwrap_or_else(|| state.limits.clone());
        let setup = self.shared.activate(&mut state, id.clone(), content, limits);
        drop(state);
        runtime.spawn(self.shared.clone().drive(setup));
        Ok(PromptReceipt { id, disposition: PromptDisposition::Started })
    }

    /// Both queues as they are now.
    pub fn queues(&self) -> QueueState {
        self.shared.lock().queues()
    }

    /// Empties one or both queues; returns how many messages were removed.
    pub fn clear_queue(&self, which: QueueSelector) -> usize {
        let mut state = self.shared.lock();
        let mut removed = 0;
        if matches!(which, QueueSelector::All | QueueSelector::Steering) {
            removed += std::mem::take(&mut state.steering).len();
        }
        if matches!(which, QueueSelector::All | QueueSelector::FollowUp) {
            removed += std::mem::take(&mut state.follow_up).len();
        }
        if removed > 0 {
            self.shared.emit_queues(&state);
        }
        removed
    }

    /// Cancels the current run: the provider stream and every running tool are aborted, the
    /// partial reply is recorded as `aborted`, and calls left without a result get an error
    /// result. Queued follow-ups still run afterwards (and steering left undelivered becomes
    /// the first follow-up); use [`Harness::cancel_all`] to stop everything. Returns false
    /// when no run was active.
    pub fn cancel(&self) -> bool {
        match &self.shared.lock().active {
            Some(active) => {
                active.cancel.cancel();
                true
            }
            None => false,
        }
    }

    /// Clears both queues and cancels the current run, so the harness settles. Returns true
    /// when a run was cancelled.
    pub fn cancel_all(&self) -> bool {
        self.clear_queue(QueueSelector::All);
        self.cancel()
    }

    /// True while a run is active (or about to start the next follow-up).
    pub fn is_running(&self) -> bool {
        self.shared.lock().active.is_some()
    }

    /// The id of the active run.
    pub fn current_run(&self) -> Option<String> {
        self.shared.lock().active.as_ref().map(|active| active.run_id.clone())
    }

    /// Waits until the harness is settled: no run and no queued follow-up.
    pub async fn wait_idle(&self) {
        let mut idle = self.shared.idle.subscribe();
        let _ = idle.wait_for(|idle| *idle).await;
    }

    /// A copy of the history.
    pub fn messages(&self) -> Vec<Message> {
        self.shared.messages().iter().map(|message| message.as_ref().clone()).collect()
    }

    /// The history as the harness holds it: each message shared, not copied.
    pub fn shared_messages(&self) -> Arc<Vec<Arc<Message>>> {
        self.shared.messages()
    }

    /// Replaces the history (branching, compaction). Fails with `Busy` during a run.
    pub fn set_messages(&self, messages: Vec<Arc<Message>>) -> Result<(), HarnessError> {
        let mut state = self.shared.lock();
        if state.active.is_some() {
            return Err(HarnessError::Busy);
        }
        state.messages = Arc::new(messages);
        self.shared.encoded.clear();
        Ok(())
    }

    /// The model in force for the next run.
    pub fn model(&self) -> ModelInfo {
        self.shared.lock().model.clone()
    }

    /// Changes the model and its provider; a run in progress keeps the one it started with.
    pub fn set_model(&self, provider: Arc<dyn Provider>, model: ModelInfo) {
        let mut state = self.shared.lock();
        state.provider = provider;
        state.model = model;
    }

    /// The thinking level for the next run.
    pub fn thinking_level(&self) -> ThinkingLevel {
        self.shared.lock().thinking
    }

    /// Changes the thinking level; a run in progress keeps the one it started with.
    pub fn set_thinking_level(&self, level: ThinkingLevel) {
        self.shared.lock().thinking = level;
    }

    /// The system prompt in force.
    pub fn system_prompt(&self) -> String {
        self.shared.lock().system_prompt.clone()
    }

    /// Replaces the system prompt; it applies from the next provider request, also inside a
    /// run.
    pub fn set_system_prompt(&self, prompt: impl Into<String>) {
        self.shared.replace_system_prompt(prompt.into());
    }

    /// The tools the next run gets.
    pub fn tools(&self) -> Arc<ToolSet> {
        self.shared.lock().tools.clone()
    }

    /// Replaces the tools; a run in progress keeps the ones it started with.
    pub fn set_tools(&self, tools: Vec<Arc<dyn Tool>>) -> Result<(), HarnessError> {
        let tools = Arc::new(ToolSet::new(tools)?);
        self.shared.lock().tools = tools;
        Ok(())
    }

    /// Replaces the hooks; a run in progress keeps the ones it started with.
    pub fn set_hooks(&self, hooks: Arc<dyn AgentHooks>) {
        self.shared.lock().hooks = hooks;
    }

    /// The default limits of a run.
    pub fn limits(&self) -> RunLimits {
        self.shared.lock().limits.clone()
    }

    /// Changes the default limits; a run in progress keeps its own.
    pub fn set_limits(&self, limits: RunLimits) {
        self.shared.lock().limits = limits;
    }
}

#[cfg(test)]
mod stop_tests;
#[cfg(test)]
mod tests;
