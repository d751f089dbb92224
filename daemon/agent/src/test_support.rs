//! Test doubles: a scripted provider, a few tools and helpers to watch a harness.

use crate::events::EventReceiver;
use crate::tool::{ExecutionMode, Tool, ToolInvocation, ToolOutput};
use crate::{Harness, HarnessConfig};
use futures::StreamExt;
use futures::future::{BoxFuture, FutureExt};
use rein_ai::{AssistantMessageEvent, EventStream, Provider, ProviderErrorKind, ProviderRequest};
use rein_protocol::event::{AssistantDelta, SessionEvent};
use rein_protocol::message::{
    AssistantMessage, ContentBlock, Cost, Message, StopReason, ToolCall, Usage,
};
use rein_protocol::model::{Api, ModelInfo};
use serde_json::{Value, json};
use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{Barrier, Notify, watch};

/// One step of a scripted reply.
#[allow(clippy::large_enum_variant)] // a test double; size does not matter here
pub(crate) enum Step {
    /// Yield this event.
    Event(AssistantMessageEvent),
    /// Wait until the test releases the gate.
    Gate(Arc<Notify>),
    /// Never go on, ignoring cancellation: the loop must stop listening by itself.
    Hang,
}

/// A provider that answers each request with the next scripted reply and records requests.
#[derive(Default)]
pub(crate) struct ScriptedProvider {
    replies: Mutex<VecDeque<Vec<Step>>>,
    requests: Mutex<Vec<ProviderRequest>>,
}

impl ScriptedProvider {
    /// A provider with these replies, in order.
    pub(crate) fn new(replies: Vec<Vec<Step>>) -> Arc<Self> {
        Arc::new(Self { replies: Mutex::new(replies.into()), requests: Mutex::default() })
    }

    /// Adds a reply at the end of the script.
    pub(crate) fn push(&self, reply: Vec<Step>) {
        self.replies.lock().unwrap().push_back(reply);
    }

    /// Every request so far.
    pub(crate) fn requests(&self) -> Vec<ProviderRequest> {
        self.requests.lock().unwrap().clone()
    }
}

impl Provider for ScriptedProvider {
    fn stream(&self, request: ProviderRequest) -> EventStream {
        self.requests.lock().unwrap().push(request);
        let reply = self.replies.lock().unwrap().pop_front().unwrap_or_else(|| {
            let mut message = assistant(vec![], StopReason::Error);
            message.error_message = Some("the script has no more replies".into());
            vec![Step::Event(AssistantMessageEvent::Error {
                message,
                kind: ProviderErrorKind::Protocol,
            })]
        });
        futures::stream::iter(reply)
            .filter_map(|step| async move {
                match step {
                    Step::Event(event) => Some(event),
                    Step::Gate(gate) => {
                        gate.notified().await;
                        None
                    }
                    Step::Hang => futures::future::pending().await,
                }
            })
            .boxed()
    }
}

/// The model every test uses.
pub(crate) fn model() -> ModelInfo {
    ModelInfo {
        provider: "script".into(),
        id: "scripted-1".into(),
        name: "Scripted".into(),
        api: Api::OpenAiChat,
        context_window: 100_000,
        max_output_tokens: 4_000,
        images: true,
        reasoning: false,
        cost: Default::default(),
        known: true,
    }
}

/// An assistant message from the test model.
pub(crate) fn assistant(content: Vec<ContentBlock>, stop_reason: StopReason) -> AssistantMessage {
    let model = model();
    AssistantMessage {
        content,
        api: model.api.as_str().into(),
        provider: model.provider,
        model: model.id,
        usage: Usage::default(),
        stop_reason,
        error_message: None,
        timestamp: 1,
    }
}

/// A streamed text answer.
pub(crate) fn text_reply(text: &str) -> Vec<Step> {
    vec![
        Step::Event(AssistantMessageEvent::Start),
        Step::Event(AssistantMessageEvent::Delta(AssistantDelta::TextDelta {
            index: 0,
            delta: text.into(),
        })),
        Step::Event(AssistantMessageEvent::Done(assistant(
            vec![ContentBlock::text(text)],
            StopReason::Stop,
        ))),
    ]
}

/// A streamed reply making these calls `(id, tool, arguments)`.
pub(crate) fn tool_reply(calls: &[(&str, &str, Value)]) -> Vec<Step> {
    tool_reply_costing(calls, 0.0)
}

/// Like [`tool_reply`], with a cost in its usage.
pub(crate) fn tool_reply_costing(calls: &[(&str, &str, Value)], cost: f64) -> Vec<Step> {
    let mut steps = vec![Step::Event(AssistantMessageEvent::Start)];
    let mut content = Vec::new();
    for (index, (id, name, arguments)) in calls.iter().enumerate() {
        let call =
            ToolCall { id: (*id).into(), name: (*name).into(), arguments: arguments.clone() };
        steps.push(Step::Event(AssistantMessageEvent::Delta(AssistantDelta::ToolCallStart {
            index,
            id: call.id.clone(),
            name: call.name.clone(),
        })));
        steps.push(Step::Event(AssistantMessageEvent::Delta(AssistantDelta::ToolCallEnd {
            index,
            call: call.clone(),
        })));
        content.push(ContentBlock::ToolCall(call));
    }
    let mut message = assistant(content, StopReason::ToolUse);
    message.usage = Usage {
        input: 10,
        output: 5,
        total_tokens: 15,
        cost: Cost { total: cost, ..Cost::default() },
        ..Usage::default()
    };
    steps.push(Step::Event(AssistantMessageEvent::Done(message)));
    steps
}

/// A provider failure of this kind.
pub(crate) fn error_reply(kind: ProviderErrorKind, text: &str) -> Vec<Step> {
    let mut message = assistant(vec![], StopReason::Error);
    message.error_message = Some(text.into());
    vec![Step::Event(AssistantMessageEvent::Error { message, kind })]
}

/// A harness over this provider and these tools, with a subscription opened before anything
/// happens.
pub(crate) fn harness_with(
    provider: Arc<ScriptedProvider>,
    tools: Vec<Arc<dyn Tool>>,
    adjust: impl FnOnce(&mut HarnessConfig),
) -> (Harness, EventReceiver) {
    let mut config = HarnessConfig::new(provider, model());
    config.system_prompt = "You are a test.".into();
    config.tools = tools;
    adjust(&mut config);
    let harness = Harness::new(config).unwrap();
    let events = harness.subscribe();
    (harness, events)
}

/// The next event; fails the test instead of hanging forever.
pub(crate) async fn next_event(events: &mut EventReceiver) -> SessionEvent {
    tokio::time::timeout(Duration::from_secs(10), events.recv())
        .await
        .expect("no event within 10 s: the harness hangs")
        .expect("the harness dropped its subscribers")
}

/// Events up to and including the first that matches.
pub(crate) async fn events_until(
    events: &mut EventReceiver,
    stop: impl Fn(&SessionEvent) -> bool,
) -> Vec<SessionEvent> {
    let mut seen = Vec::new();
    loop {
        let event = next_event(events).await;
        let done = stop(&event);
        seen.push(event);
        if done {
            return seen;
        }
    }
}

/// Events up to and including `Settled`.
pub(crate) async fn until_settled(events: &mut EventReceiver) -> Vec<SessionEvent> {
    events_until(events, |event| matches!(event, SessionEvent::Settled)).await
}

/// The `AgentEnd` events among these, as `(reason, error, turns)`.
pub(crate) fn ends(
    events: &[SessionEvent],
) -> Vec<(rein_protocol::event::EndReason, Option<String>, u32)> {
    events
        .iter()
        .filter_map(|event| match event {
            SessionEvent::AgentEnd { reason, error, turns, .. } => {
                Some((*reason, error.clone(), *turns))
            }
            _ => None,
        })
        .collect()
}

/// Checks what every provider needs: each tool call has exactly one result, after it and
/// before the next assistant message, and no result is orphaned.
pub(crate) fn assert_history_valid(messages: &[Message]) {
    let mut open: Vec<String> = Vec::new();
    let mut answered: HashSet<String> = HashSet::new();
    for message in messages {
        match message {
            Message::Assistant(reply) => {
                assert!(open.is_empty(), "calls {open:?} have no result before the next reply");
                open = reply.tool_calls().map(|call| call.id.clone()).collect();
            }
            Message::ToolResult(result) => {
                let position = open.iter().position(|id| *id == result.tool_call_id);
                let position = position.unwrap_or_else(|| {
                    panic!("result for {} answers no open call", result.tool_call_id)
                });
                open.remove(position);
                assert!(answered.insert(result.tool_call_id.clone()), "two results for one call");
            }
            Message::User(_) => {
                assert!(open.is_empty(), "calls {open:?} have no result before a user message");
            }
        }
    }
    assert!(open.is_empty(), "calls {open:?} have no result at the end");
}

/// The text of the tool results in a history, by call id.
pub(crate) fn tool_results(messages: &[Message]) -> Vec<(String, bool, String)> {
    messages
        .iter()
        .filter_map(|message| match message {
            Message::ToolResult(result) => {
                Some((result.tool_call_id.clone(), result.is_error, result.text()))
            }
            _ => None,
        })
        .collect()
}

/// Returns its `text` argument.
pub(crate) struct Echo;

impl Tool for Echo {
    fn name(&self) -> &str {
        "echo"
    }
    fn description(&self) -> &str {
        "Returns its text."
    }
    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
            "additionalProperties": false
        })
    }
    fn mode(&self) -> ExecutionMode {
        ExecutionMode::Parallel
    }
    fn execute(&self, invocation: ToolInvocation) -> BoxFuture<'_, ToolOutput> {
        let text = invocation.arguments["text"].as_str().unwrap_or_default().to_string();
        async move { ToolOutput::text(text).with_details(json!({"echoed": true})) }.boxed()
    }
}

/// Always fails.
pub(crate) struct Fail;

impl Tool for Fail {
    fn name(&self) -> &str {
        "fail"
    }
    fn description(&self) -> &str {
        "Always fails."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object"})
    }
    fn mode(&self) -> ExecutionMode {
        ExecutionMode::Sequential
    }
    fn execute(&self, _: ToolInvocation) -> BoxFuture<'_, ToolOutput> {
        async { ToolOutput::error("disk on fire") }.boxed()
    }
}

/// Always panics.
pub(crate) struct Panic;

impl Tool for Panic {
    fn name(&self) -> &str {
        "panic"
    }
    fn description(&self) -> &str {
        "Panics."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object"})
    }
    fn mode(&self) -> ExecutionMode {
        ExecutionMode::Sequential
    }
    fn execute(&self, _: ToolInvocation) -> BoxFuture<'_, ToolOutput> {
        async { panic!("the tool broke") }.boxed()
    }
}

/// Reports progress, tells the test it is running, then waits for the test to release it. With
/// `ignore_cancel` it never looks at the cancel token, so only the loop can stop waiting.
pub(crate) struct Gate {
    /// Notified once the call runs.
    pub started: Arc<Notify>,
    /// Releases the call.
    pub release: Arc<Notify>,
    /// Whether the call ignores cancellation.
    pub ignore_cancel: bool,
}

impl Gate {
    /// A gate and its two signals.
    pub(crate) fn new(ignore_cancel: bool) -> Arc<Self> {
        Arc::new(Self { started: Arc::default(), release: Arc::default(), ignore_cancel })
    }
}

impl Tool for Gate {
    fn name(&self) -> &str {
        "gate"
    }
    fn description(&self) -> &str {
        "Waits for the test."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object"})
    }
    fn mode(&self) -> ExecutionMode {
        ExecutionMode::Sequential
    }
    fn execute(&self, invocation: ToolInvocation) -> BoxFuture<'_, ToolOutput> {
        async move {
            invocation.updates.text("waiting");
            self.started.notify_one();
            if self.ignore_cancel {
                self.release.notified().await;
            } else {
                tokio::select! {
                    () = self.release.notified() => {}
                    () = invocation.cancel.cancelled() => return ToolOutput::error("stopped"),
                }
            }
            ToolOutput::text("released")
        }
        .boxed()
    }
}

/// A parallel tool for `of` overlapping calls: each waits at a barrier that opens only once
/// all `of` calls run, then call `index` finishes only after every call with a higher index,
/// so they finish in reverse order.
pub(crate) struct Rendezvous {
    barrier: Barrier,
    finished: watch::Sender<usize>,
    /// Indices in the order the calls finished.
    pub order: Mutex<Vec<usize>>,
    of: usize,
}

impl Rendezvous {
    /// A rendezvous for `of` calls.
    pub(crate) fn new(of: usize) -> Arc<Self> {
        Arc::new(Self {
            barrier: Barrier::new(of),
            finished: watch::channel(0).0,
            order: Mutex::default(),
            of,
        })
    }
}

impl Tool for Rendezvous {
    fn name(&self) -> &str {
        "meet"
    }
    fn description(&self) -> &str {
        "Meets the other calls."
    }
    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {"index": {"type": "integer", "minimum": 0}},
            "required": ["index"]
        })
    }
    fn mode(&self) -> ExecutionMode {
        ExecutionMode::Parallel
    }
    fn execute(&self, invocation: ToolInvocation) -> BoxFuture<'_, ToolOutput> {
        async move {
            let index = invocation.arguments["index"].as_u64().unwrap() as usize;
            self.barrier.wait().await;
            let later = self.of - 1 - index;
            self.finished.subscribe().wait_for(|done| *done >= later).await.unwrap();
            self.order.lock().unwrap().push(index);
            self.finished.send_modify(|done| *done += 1);
            ToolOutput::text(format!("call {index}"))
        }
        .boxed()
    }
}
