//! Harness overhead per turn: an instant provider and a no-op tool, so everything measured is
//! the loop itself (request building, event emission, validation, scheduling, history).
//!
//! Run with `cargo bench -p rein-agent`. Plain std timing; prints one line per scenario.

use futures::StreamExt;
use futures::future::{BoxFuture, FutureExt, ready};
use rein_agent::{ExecutionMode, Harness, HarnessConfig, Tool, ToolInvocation, ToolOutput};
use rein_ai::{AssistantMessageEvent, EventStream, Provider, ProviderRequest};
use rein_protocol::event::{AssistantDelta, SessionEvent};
use rein_protocol::message::{
    AssistantMessage, ContentBlock, Message, StopReason, ToolCall, Usage,
};
use rein_protocol::model::{Api, ModelInfo};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Answers at once: `calls_per_turn` no-op calls until the run has had `turns` turns, then a
/// short text.
struct InstantProvider {
    turns: usize,
    calls_per_turn: usize,
}

impl Provider for InstantProvider {
    fn stream(&self, request: ProviderRequest) -> EventStream {
        let done = request
            .context
            .messages
            .iter()
            .rev()
            .take_while(|message| !matches!(***message, Message::User(_)))
            .filter(|message| matches!(***message, Message::Assistant(_)))
            .count();
        let mut events = vec![AssistantMessageEvent::Start];
        let mut content = Vec::new();
        let stop_reason = if done + 1 < self.turns {
            for index in 0..self.calls_per_turn {
                let call = ToolCall {
                    id: format!("call-{done}-{index}"),
                    name: "noop".into(),
                    arguments: json!({"path": "src/lib.rs"}),
                };
                events.push(AssistantMessageEvent::Delta(AssistantDelta::ToolCallEnd {
                    index,
                    call: call.clone(),
                }));
                content.push(ContentBlock::ToolCall(call));
            }
            StopReason::ToolUse
        } else {
            events.push(AssistantMessageEvent::Delta(AssistantDelta::TextDelta {
                index: 0,
                delta: "done".into(),
            }));
            content.push(ContentBlock::text("done"));
            StopReason::Stop
        };
        events.push(AssistantMessageEvent::Done(AssistantMessage {
            content,
            api: "openai-chat".into(),
            provider: "bench".into(),
            model: "instant".into(),
            usage: Usage::default(),
            stop_reason,
            error_message: None,
            timestamp: 0,
        }));
        futures::stream::iter(events).boxed()
    }
}

/// Does nothing, successfully.
struct Noop;

impl Tool for Noop {
    fn name(&self) -> &str {
        "noop"
    }
    fn description(&self) -> &str {
        "Does nothing."
    }
    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"]
        })
    }
    fn mode(&self) -> ExecutionMode {
        ExecutionMode::Parallel
    }
    fn execute(&self, _: ToolInvocation) -> BoxFuture<'_, ToolOutput> {
        ready(ToolOutput::text("ok")).boxed()
    }
}

fn model() -> ModelInfo {
    ModelInfo {
        provider: "bench".into(),
        id: "instant".into(),
        name: String::new(),
        api: Api::OpenAiChat,
        context_window: 1_000_000,
        max_output_tokens: 1_000,
        images: false,
        reasoning: false,
        cost: Default::default(),
        known: false,
    }
}

/// Runs `runs` runs of `turns` turns each (history cleared between runs, so it stays small)
/// and returns the mean time per turn, events drained by a subscriber as a daemon would.
async fn measure(turns: usize, calls_per_turn: usize, runs: usize) -> Duration {
    let provider = Arc::new(InstantProvider { turns, calls_per_turn });
    let mut config = HarnessConfig::new(provider, model());
    config.tools = vec![Arc::new(Noop)];
    let harness = match Harness::new(config) {
        Ok(harness) => harness,
        Err(error) => panic!("bench setup failed: {error}"),
    };
    let mut events = harness.subscribe();
    let drain = tokio::spawn(async move {
        let mut settled = 0usize;
        while let Some(event) = events.recv().await {
            if event == SessionEvent::Settled {
                settled += 1;
            }
        }
        settled
    });
    let started = Instant::now();
    for _ in 0..runs {
        if let Err(error) = harness.set_messages(Vec::new()) {
            panic!("harness busy between runs: {error}");
        }
        if let Err(error) = harness.prompt(vec![ContentBlock::text("go")]) {
            panic!("prompt failed: {error}");
        }
        harness.wait_idle().await;
    }
    let elapsed = started.elapsed();
    drop(harness);
    let _ = drain.await;
    elapsed / u32::try_from(turns * runs).unwrap_or(u32::MAX)
}

/// Samples per scenario; the machine is shared, so the minimum (least disturbed) and the
/// median are both reported.
const SAMPLES: usize = 5;

fn main() {
    let multi_thread =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build();
    let current_thread = tokio::runtime::Builder::new_current_thread().enable_all().build();
    for (name, runtime) in [
        ("multi-thread runtime, 2 workers", multi_thread),
        ("current-thread runtime", current_thread),
    ] {
        let runtime = match runtime {
            Ok(runtime) => runtime,
            Err(error) => panic!("no runtime: {error}"),
        };
        println!("{name}");
        runtime.block_on(run_scenarios());
    }
}

async fn run_scenarios() {
    // Warm up allocators and the runtime.
    measure(10, 1, 200).await;
    println!("  {:<46} {:>15} {:>15}", "scenario", "min", "median");
    for (label, turns, calls, runs) in [
        ("plain answer (1 turn, no tools)", 1, 0, 5_000),
        ("10-turn run, 1 no-op call per turn", 10, 1, 500),
        ("10-turn run, 4 parallel no-op calls per turn", 10, 4, 250),
        ("50-turn run, 1 no-op call per turn", 50, 1, 100),
    ] {
        let mut samples = Vec::with_capacity(SAMPLES);
        for _ in 0..SAMPLES {
            samples.push(measure(turns, calls, runs).await);
        }
        samples.sort();
        let micros = |duration: Duration| duration.as_secs_f64() * 1e6;
        println!(
            "  {label:<46} {:>7.2} µs/turn {:>7.2} µs/turn",
            micros(samples[0]),
            micros(samples[SAMPLES / 2])
        );
    }
}
