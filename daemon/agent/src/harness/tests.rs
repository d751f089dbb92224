//! Behaviour of the harness and its loop, driven by a scripted provider.

use super::*;
use crate::hooks::{RequestEdit, RequestView, ToolCallContext, ToolCallDecision};
use crate::test_support::*;
use futures::future::BoxFuture;
use rein_ai::{AssistantMessageEvent, ProviderErrorKind};
use rein_protocol::event::{AssistantDelta, EndReason};
use rein_protocol::message::{StopReason, ToolResultMessage, UserMessage};
use serde_json::json;
use std::time::Duration;

fn text(text: &str) -> Vec<ContentBlock> {
    vec![ContentBlock::text(text)]
}

fn role(message: &Message) -> &'static str {
    match message {
        Message::User(_) => "user",
        Message::Assistant(_) => "assistant",
        Message::ToolResult(_) => "tool_result",
    }
}

/// A compact label per event, so a whole sequence can be compared at once.
fn label(event: &SessionEvent) -> String {
    match event {
        SessionEvent::AgentStart { .. } => "agent_start".into(),
        SessionEvent::AgentEnd { reason, turns, .. } => format!("agent_end:{reason:?}:{turns}"),
        SessionEvent::TurnStart { turn } => format!("turn_start:{turn}"),
        SessionEvent::TurnEnd { turn, tool_results, .. } => {
            format!("turn_end:{turn}:{}", tool_results.len())
        }
        SessionEvent::MessageStart { message } => format!("message_start:{}", role(message)),
        SessionEvent::MessageUpdate { delta } => match delta {
            AssistantDelta::TextDelta { .. } => "update:text".into(),
            AssistantDelta::ThinkingDelta { .. } => "update:thinking".into(),
            AssistantDelta::ToolCallStart { .. } => "update:call_start".into(),
            AssistantDelta::ToolCallDelta { .. } => "update:call_delta".into(),
            AssistantDelta::ToolCallEnd { .. } => "update:call_end".into(),
            AssistantDelta::Unknown => "update:unknown".into(),
        },
        SessionEvent::MessageEnd { message } => format!("message_end:{}", role(message)),
        SessionEvent::ToolExecutionStart { tool_call_id, .. } => {
            format!("tool_start:{tool_call_id}")
        }
        SessionEvent::ToolExecutionUpdate { tool_call_id, .. } => {
            format!("tool_update:{tool_call_id}")
        }
        SessionEvent::ToolExecutionEnd { tool_call_id, result, .. } => {
            format!("tool_end:{tool_call_id}:{}", if result.is_error { "error" } else { "ok" })
        }
        SessionEvent::QueueChanged { queues } => {
            format!("queue:{}:{}", queues.steering.len(), queues.follow_up.len())
        }
        SessionEvent::AutoRetry { attempt, .. } => format!("retry:{attempt}"),
        SessionEvent::Settled => "settled".into(),
        other => format!("other:{other:?}"),
    }
}

fn labels(events: &[SessionEvent]) -> Vec<String> {
    events.iter().map(label).collect()
}

#[tokio::test]
async fn a_plain_answer_completes_in_one_turn() {
    let provider = ScriptedProvider::new(vec![text_reply("Hello!")]);
    let (harness, mut events) = harness_with(provider.clone(), vec![Arc::new(Echo)], |_| {});
    let run_id = harness.prompt(text("hi")).unwrap();
    let seen = until_settled(&mut events).await;
    assert_eq!(seen[0], SessionEvent::AgentStart { run_id: run_id.clone() });
    assert_eq!(ends(&seen), vec![(EndReason::Completed, None, 1)]);
    let messages = harness.messages();
    assert_eq!(messages.len(), 2);
    assert_eq!(
        messages[0],
        Message::User(UserMessage { content: text("hi"), ..user_at(&messages[0]) })
    );
    match &messages[1] {
        Message::Assistant(reply) => assert_eq!(reply.text(), "Hello!"),
        other => panic!("expected the reply, got {other:?}"),
    }
    let request = &provider.requests()[0];
    assert_eq!(request.context.system_prompt, "You are a test.");
    assert_eq!(request.context.tools.len(), 1);
    assert_eq!(request.context.tools[0].name, "echo");
    assert!(!harness.is_running());
}

fn user_at(message: &Message) -> UserMessage {
    match message {
        Message::User(user) => user.clone(),
        other => panic!("expected a user message, got {other:?}"),
    }
}

#[tokio::test]
async fn a_two_turn_tool_run_emits_exactly_this_sequence() {
    let provider = ScriptedProvider::new(vec![
        tool_reply(&[("c1", "echo", json!({"text": "pong"}))]),
        text_reply("done"),
    ]);
    let (harness, mut events) = harness_with(provider.clone(), vec![Arc::new(Echo)], |_| {});
    harness.prompt(text("ping")).unwrap();
    let seen = until_settled(&mut events).await;
    assert_eq!(
        labels(&seen),
        vec![
            "agent_start",
            "message_start:user",
            "message_end:user",
            "turn_start:1",
            "message_start:assistant",
            "update:call_start",
            "update:call_end",
            "message_end:assistant",
            "tool_start:c1",
            "tool_end:c1:ok",
            "message_start:tool_result",
            "message_end:tool_result",
            "turn_end:1:1",
            "turn_start:2",
            "message_start:assistant",
            "update:text",
            "message_end:assistant",
            "turn_end:2:0",
            "agent_end:Completed:2",
            "settled",
        ]
    );
    // Every message appended is reported by a MessageEnd, in history order, sharing the
    // history's allocation (no copy of the message).
    let ended: Vec<Arc<Message>> = seen
        .iter()
        .filter_map(|event| match event {
            SessionEvent::MessageEnd { message } => Some(Arc::clone(message)),
            _ => None,
        })
        .collect();
    let history = harness.shared_messages();
    assert_eq!(ended.len(), history.len());
    for (event, held) in ended.iter().zip(history.iter()) {
        assert!(Arc::ptr_eq(event, held), "{event:?} was copied");
    }
    // The second request carries the tool result.
    let second = &provider.requests()[1].context.messages;
    assert_eq!(second.len(), 3);
    match second[2].as_ref() {
        Message::ToolResult(result) => {
            assert_eq!(result.tool_call_id, "c1");
            assert_eq!(result.text(), "pong");
            assert_eq!(result.details, Some(json!({"echoed": true})));
            assert!(!result.is_error);
        }
        other => panic!("expected the tool result, got {other:?}"),
    }
}

#[tokio::test]
async fn a_multi_turn_run_feeds_every_result_back() {
    let provider = ScriptedProvider::new(vec![
        tool_reply(&[("a", "echo", json!({"text": "one"}))]),
        tool_reply(&[("b", "echo", json!({"text": "two"}))]),
        tool_reply(&[("c", "echo", json!({"text": "three"}))]),
        text_reply("all done"),
    ]);
    let (harness, mut events) = harness_with(provider.clone(), vec![Arc::new(Echo)], |_| {});
    harness.prompt(text("count")).unwrap();
    let seen = until_settled(&mut events).await;
    assert_eq!(ends(&seen), vec![(EndReason::Completed, None, 4)]);
    let requests = provider.requests();
    let lengths: Vec<usize> = requests.iter().map(|r| r.context.messages.len()).collect();
    assert_eq!(lengths, vec![1, 3, 5, 7]);
    // Every request hands the provider the harness's one encoded history, so each encodes
    // only what the one before did not.
    let encoded: Vec<_> = requests.iter().map(|r| r.context.encoded.clone().unwrap()).collect();
    assert!(encoded.iter().all(|e| Arc::ptr_eq(e, &encoded[0])));
    let messages = harness.messages();
    assert_history_valid(&messages);
    let results: Vec<String> = tool_results(&messages).into_iter().map(|r| r.2).collect();
    assert_eq!(results, vec!["one", "two", "three"]);
}

#[tokio::test]
async fn parallel_calls_overlap_and_results_keep_call_order() {
    let meet = Rendezvous::new(3);
    let calls = [
        ("m0", "meet", json!({"index": 0})),
        ("m1", "meet", json!({"index": 1})),
        ("m2", "meet", json!({"index": 2})),
    ];
    let provider = ScriptedProvider::new(vec![tool_reply(&calls), text_reply("met")]);
    let (harness, mut events) = harness_with(provider, vec![meet.clone()], |_| {});
    harness.prompt(text("meet")).unwrap();
    let seen = until_settled(&mut events).await;
    assert_eq!(ends(&seen), vec![(EndReason::Completed, None, 2)]);
    // They finished last to first...
    assert_eq!(*meet.order.lock().unwrap(), vec![2, 1, 0]);
    let finished: Vec<String> = seen
        .iter()
        .filter_map(|event| match event {
            SessionEvent::ToolExecutionEnd { tool_call_id, .. } => Some(tool_call_id.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(finished, vec!["m2", "m1", "m0"]);
    // ...yet the history and the turn hold them in call order.
    let results = tool_results(&harness.messages());
    let ids: Vec<&str> = results.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(ids, vec!["m0", "m1", "m2"]);
    assert!(results.iter().all(|r| !r.1));
    let turn_results: Vec<String> = seen
        .iter()
        .find_map(|event| match event {
            SessionEvent::TurnEnd { turn: 1, tool_results, .. } => {
                Some(tool_results.iter().map(|r| r.tool_call_id.clone()).collect())
            }
            _ => None,
        })
        .unwrap();
    assert_eq!(turn_results, vec!["m0", "m1", "m2"]);
}

#[tokio::test]
async fn a_sequential_call_never_overlaps_its_neighbours() {
    // The gate is sequential: the echo after it must not start until the gate is released.
    let gate = Gate::new(false);
    let provider = ScriptedProvider::new(vec![
        tool_reply(&[
            ("e1", "echo", json!({"text": "before"})),
            ("g", "gate", json!({})),
            ("e2", "echo", json!({"text": "after"})),
        ]),
        text_reply("ok"),
    ]);
    let (harness, mut events) = harness_with(provider, vec![Arc::new(Echo), gate.clone()], |_| {});
    harness.prompt(text("go")).unwrap();
    let before_release = events_until(&mut events, |event| {
        matches!(event, SessionEvent::ToolExecutionUpdate { .. })
    })
    .await;
    assert!(labels(&before_release).contains(&"tool_end:e1:ok".to_string()));
    assert!(!labels(&before_release).iter().any(|l| l.starts_with("tool_start:e2")));
    gate.release.notify_one();
    let rest = until_settled(&mut events).await;
    let rest = labels(&rest);
    let gate_end = rest.iter().position(|l| l == "tool_end:g:ok").unwrap();
    let echo_start = rest.iter().position(|l| l == "tool_start:e2").unwrap();
    assert!(gate_end < echo_start, "{rest:?}");
}

/// Runs one reply with a single call and returns the result the model got.
async fn single_call_result(
    tools: Vec<Arc<dyn Tool>>,
    name: &str,
    arguments: Value,
) -> ToolResultMessage {
    let provider =
        ScriptedProvider::new(vec![tool_reply(&[("c1", name, arguments)]), text_reply("noted")]);
    let (harness, mut events) = harness_with(provider.clone(), tools, |_| {});
    harness.prompt(text("try")).unwrap();
    let seen = until_settled(&mut events).await;
    assert_eq!(ends(&seen), vec![(EndReason::Completed, None, 2)]);
    let messages = harness.messages();
    assert_history_valid(&messages);
    // The model saw the result in the next request.
    let next = &provider.requests()[1].context.messages;
    match next.last().map(|message| message.as_ref()) {
        Some(Message::ToolResult(result)) => result.clone(),
        other => panic!("expected a tool result, got {other:?}"),
    }
}

use serde_json::Value;

#[tokio::test]
async fn an_unknown_tool_becomes_an_error_result() {
    let result = single_call_result(vec![Arc::new(Echo)], "teleport", json!({})).await;
    assert!(result.is_error);
    assert!(result.text().contains("Unknown tool `teleport`"), "{}", result.text());
    assert!(result.text().contains("echo"));
}

#[tokio::test]
async fn unparsable_arguments_become_an_error_result() {
    let result = single_call_result(vec![Arc::new(Echo)], "echo", json!("{\"text\": oops")).await;
    assert!(result.is_error);
    assert!(result.text().contains("not valid JSON"), "{}", result.text());
}

#[tokio::test]
async fn a_schema_violation_becomes_an_error_result() {
    let result = single_call_result(vec![Arc::new(Echo)], "echo", json!({"text": 5})).await;
    assert!(result.is_error);
    assert!(result.text().contains("Invalid arguments"), "{}", result.text());
    assert!(result.text().contains("/text"), "{}", result.text());
}

#[tokio::test]
async fn a_failing_tool_becomes_an_error_result() {
    let result = single_call_result(vec![Arc::new(Fail)], "fail", json!({})).await;
    assert!(result.is_error);
    assert_eq!(result.text(), "disk on fire");
}

#[tokio::test]
async fn a_panicking_tool_becomes_an_error_result() {
    let result = single_call_result(vec![Arc::new(Panic)], "panic", json!({})).await;
    assert!(result.is_error);
    assert!(result.text().contains("panicked"), "{}", result.text());
    assert!(result.text().contains("the tool broke"), "{}", result.text());
}

#[tokio::test]
async fn tool_progress_arrives_while_the_tool_still_runs() {
    let gate = Gate::new(false);
    let provider =
        ScriptedProvider::new(vec![tool_reply(&[("g", "gate", json!({}))]), text_reply("ok")]);
    let (harness, mut events) = harness_with(provider, vec![gate.clone()], |_| {});
    harness.prompt(text("go")).unwrap();
    let seen = events_until(&mut events, |event| {
        matches!(event, SessionEvent::ToolExecutionUpdate { .. })
    })
    .await;
    // The tool is still blocked on its gate, so the update cannot have been buffered.
    match seen.last() {
        Some(SessionEvent::ToolExecutionUpdate { tool_call_id, tool_name, content }) => {
            assert_eq!((tool_call_id.as_str(), tool_name.as_str()), ("g", "gate"));
            assert_eq!(content, &text("waiting"));
        }
        other => panic!("{other:?}"),
    }
    gate.release.notify_one();
    let rest = until_settled(&mut events).await;
    assert_eq!(ends(&rest), vec![(EndReason::Completed, None, 2)]);
}

#[tokio::test]
async fn steering_is_delivered_after_the_tool_batch() {
    let gate = Gate::new(false);
    let provider =
        ScriptedProvider::new(vec![tool_reply(&[("g", "gate", json!({}))]), text_reply("steered")]);
    let (harness, mut events) = harness_with(provider.clone(), vec![gate.clone()], |_| {});
    harness.prompt(text("start")).unwrap();
    gate.started.notified().await;
    let receipt = harness.steer(text("change course")).unwrap();
    assert!(!receipt.started_run);
    assert_eq!(harness.queues().steering.len(), 1);
    gate.release.notify_one();
    let seen = until_settled(&mut events).await;
    assert_eq!(ends(&seen), vec![(EndReason::Completed, None, 2)]);
    let labels = labels(&seen);
    let queued = labels.iter().position(|l| l == "queue:1:0").unwrap();
    let tool_end = labels.iter().position(|l| l == "tool_end:g:ok").unwrap();
    let turn_end = labels.iter().position(|l| l == "turn_end:1:1").unwrap();
    let drained = labels.iter().position(|l| l == "queue:0:0").unwrap();
    let turn_two = labels.iter().position(|l| l == "turn_start:2").unwrap();
    assert!(queued < tool_end && tool_end < turn_end && turn_end < drained && drained < turn_two);
    assert_eq!(&labels[drained + 1..drained + 3], ["message_start:user", "message_end:user"]);
    let second = &provider.requests()[1].context.messages;
    assert_eq!(second.len(), 4);
    assert_eq!(
        *second[3],
        Message::User(UserMessage { content: text("change course"), ..user_at(&second[3]) })
    );
    assert!(harness.queues().steering.is_empty());
}

#[tokio::test]
async fn a_pending_steer_continues_a_run_whose_model_stopped_calling_tools() {
    let hold = Arc::new(tokio::sync::Notify::new());
    let mut first = text_reply("I am done");
    first.insert(2, Step::Gate(hold.clone()));
    let provider = ScriptedProvider::new(vec![first, text_reply("also handled that")]);
    let (harness, mut events) = harness_with(provider.clone(), vec![], |_| {});
    harness.prompt(text("task")).unwrap();
    events_until(&mut events, |event| matches!(event, SessionEvent::MessageUpdate { .. })).await;
    harness.steer(text("one more thing")).unwrap();
    hold.notify_one();
    let seen = until_settled(&mut events).await;
    assert_eq!(ends(&seen), vec![(EndReason::Completed, None, 2)]);
    let messages = harness.messages();
    let roles: Vec<&str> = messages.iter().map(role).collect();
    assert_eq!(roles, vec!["user", "assistant", "user", "assistant"]);
}

#[tokio::test]
async fn a_follow_up_starts_a_new_run_when_the_current_one_ends() {
    let gate = Gate::new(false);
    let provider = ScriptedProvider::new(vec![
        tool_reply(&[("g", "gate", json!({}))]),
        text_reply("first done"),
        text_reply("second done"),
    ]);
    let (harness, mut events) = harness_with(provider, vec![gate.clone()], |_| {});
    let first_run = harness.prompt(text("first")).unwrap();
    gate.started.notified().await;
    assert!(matches!(harness.prompt(text("again")), Err(HarnessError::Busy)));
    let receipt = harness.follow_up(text("second")).unwrap();
    assert!(!receipt.started_run);
    assert_eq!(harness.queues().follow_up.len(), 1);
    gate.release.notify_one();
    let seen = until_settled(&mut events).await;
    let starts: Vec<String> = seen
        .iter()
        .filter_map(|event| match event {
            SessionEvent::AgentStart { run_id } => Some(run_id.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(starts, vec![first_run, receipt.id]);
    assert_eq!(ends(&seen), vec![(EndReason::Completed, None, 2), (EndReason::Completed, None, 1)]);
    assert_eq!(seen.iter().filter(|e| **e == SessionEvent::Settled).count(), 1);
    let labels = labels(&seen);
    let first_end = labels.iter().position(|l| l == "agent_end:Completed:2").unwrap();
    assert_eq!(labels[first_end + 1], "queue:0:0");
    assert_eq!(labels[first_end + 2], "agent_start");
    let roles: Vec<&str> = harness.messages().iter().map(role).collect();
    assert_eq!(roles, vec!["user", "assistant", "tool_result", "assistant", "user", "assistant"]);
}

#[tokio::test]
async fn steering_or_following_up_an_idle_harness_starts_a_run() {
    let provider = ScriptedProvider::new(vec![text_reply("a"), text_reply("b")]);
    let (harness, mut events) = harness_with(provider, vec![], |_| {});
    let receipt = harness.steer(text("hello")).unwrap();
    assert!(receipt.started_run);
    assert_eq!(harness.current_run(), Some(receipt.id.clone()));
    let seen = until_settled(&mut events).await;
    assert_eq!(seen[0], SessionEvent::AgentStart { run_id: receipt.id });
    let receipt = harness.follow_up(text("again")).unwrap();
    assert!(receipt.started_run);
    harness.wait_idle().await;
    assert_eq!(harness.messages().len(), 4);
}

#[tokio::test]
async fn queues_can_be_listed_and_cleared_and_every_change_is_an_event() {
    let gate = Gate::new(false);
    let provider = ScriptedProvider::new(vec![tool_reply(&[("g", "gate", json!({}))])]);
    provider.push(text_reply("done"));
    let (harness, mut events) = harness_with(provider, vec![gate.clone()], |_| {});
    harness.prompt(text("go")).unwrap();
    gate.started.notified().await;
    let steer = harness.steer(vec![
        ContentBlock::text("look"),
        ContentBlock::Image { data: "AAAA".into(), mime_type: "image/png".into() },
    ]);
    let follow = harness.follow_up(text("later")).unwrap();
    let queues = harness.queues();
    assert_eq!(queues.steering[0].id, steer.unwrap().id);
    assert_eq!(queues.steering[0].content.len(), 2);
    assert_eq!(queues.follow_up[0].id, follow.id);
    assert_eq!(harness.clear_queue(QueueSelector::FollowUp), 1);
    assert_eq!(harness.clear_queue(QueueSelector::FollowUp), 0);
    assert_eq!(harness.clear_queue(QueueSelector::All), 1);
    gate.release.notify_one();
    let seen = until_settled(&mut events).await;
    let queue_events: Vec<String> =
        labels(&seen).into_iter().filter(|l| l.starts_with("queue:")).collect();
    assert_eq!(queue_events, vec!["queue:1:0", "queue:1:1", "queue:1:0", "queue:0:0"]);
    assert_eq!(ends(&seen), vec![(EndReason::Completed, None, 2)]);
}

#[tokio::test]
async fn images_in_a_prompt_reach_the_provider() {
    let provider = ScriptedProvider::new(vec![text_reply("a cat")]);
    let (harness, mut events) = harness_with(provider.clone(), vec![], |_| {});
    let content = vec![
        ContentBlock::text("what is this?"),
        ContentBlock::Image { data: "iVBOR".into(), mime_type: "image/png".into() },
    ];
    harness.prompt(content.clone()).unwrap();
    until_settled(&mut events).await;
    match provider.requests()[0].context.messages[0].as_ref() {
        Message::User(user) => assert_eq!(user.content, content),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn cancel_during_streaming_records_the_partial_reply_and_a_new_prompt_works() {
    let provider = ScriptedProvider::new(vec![vec![
        Step::Event(AssistantMessageEvent::Start),
        Step::Event(AssistantMessageEvent::Delta(AssistantDelta::TextDelta {
            index: 0,
            delta: "Let me".into(),
        })),
        Step::Event(AssistantMessageEvent::Delta(AssistantDelta::ToolCallStart {
            index: 1,
            id: "half".into(),
            name: "echo".into(),
        })),
        Step::Event(AssistantMessageEvent::Delta(AssistantDelta::ToolCallDelta {
            index: 1,
            delta: "{\"te".into(),
        })),
        // The provider never reacts to the cancel: the loop must stop listening by itself.
        Step::Hang,
    ]]);
    provider.push(text_reply("fresh start"));
    let (harness, mut events) = harness_with(provider.clone(), vec![Arc::new(Echo)], |_| {});
    harness.prompt(text("work")).unwrap();
    events_until(&mut events, |event| {
        matches!(event, SessionEvent::MessageUpdate { delta: AssistantDelta::ToolCallDelta { .. } })
    })
    .await;
    assert!(harness.cancel());
    let seen = until_settled(&mut events).await;
    assert_eq!(ends(&seen), vec![(EndReason::Cancelled, None, 1)]);
    assert_eq!(
        labels(&seen),
        vec![
            "message_end:assistant",
            "tool_end:half:error",
            "message_start:tool_result",
            "message_end:tool_result",
            "turn_end:1:1",
            "agent_end:Cancelled:1",
            "settled"
        ]
    );
    let messages = harness.messages();
    assert_history_valid(&messages);
    match &messages[1] {
        Message::Assistant(reply) => {
            assert_eq!(reply.stop_reason, StopReason::Aborted);
            assert_eq!(reply.text(), "Let me");
            assert_eq!(reply.error_message.as_deref(), Some("cancelled by user"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(tool_results(&messages), vec![("half".into(), true, "cancelled by user".into())]);
    assert!(!harness.cancel());

    harness.prompt(text("again")).unwrap();
    let seen = until_settled(&mut events).await;
    assert_eq!(ends(&seen), vec![(EndReason::Completed, None, 1)]);
    assert_eq!(provider.requests()[1].context.messages.len(), 4);
    assert_history_valid(&harness.messages());
}

#[tokio::test]
async fn cancel_during_a_tool_aborts_it_and_keeps_finished_results() {
    // The gate ignores its cancel token: only the loop can stop waiting for it.
    let gate = Gate::new(true);
    let provider = ScriptedProvider::new(vec![tool_reply(&[
        ("e", "echo", json!({"text": "quick"})),
        ("g", "gate", json!({})),
        ("later", "echo", json!({"text": "never"})),
    ])]);
    provider.push(text_reply("recovered"));
    let (harness, mut events) =
        harness_with(provider.clone(), vec![Arc::new(Echo), gate.clone()], |_| {});
    harness.prompt(text("go")).unwrap();
    gate.started.notified().await;
    assert!(harness.cancel());
    let seen = until_settled(&mut events).await;
    assert_eq!(ends(&seen), vec![(EndReason::Cancelled, None, 1)]);
    let messages = harness.messages();
    assert_history_valid(&messages);
    assert_eq!(
        tool_results(&messages),
        vec![
            ("e".into(), false, "quick".into()),
            ("g".into(), true, "cancelled by user".into()),
            ("later".into(), true, "cancelled by user".into()),
        ]
    );
    harness.prompt(text("continue")).unwrap();
    let seen = until_settled(&mut events).await;
    assert_eq!(ends(&seen), vec![(EndReason::Completed, None, 1)]);
    assert_history_valid(&harness.messages());
}

#[tokio::test]
async fn cancel_all_drops_the_queues_so_the_harness_settles() {
    let gate = Gate::new(false);
    let provider = ScriptedProvider::new(vec![tool_reply(&[("g", "gate", json!({}))])]);
    let (harness, mut events) = harness_with(provider, vec![gate.clone()], |_| {});
    harness.prompt(text("go")).unwrap();
    gate.started.notified().await;
    harness.steer(text("s")).unwrap();
    harness.follow_up(text("f")).unwrap();
    assert!(harness.cancel_all());
    let seen = until_settled(&mut events).await;
    assert_eq!(ends(&seen), vec![(EndReason::Cancelled, None, 1)]);
    assert_eq!(harness.queues(), QueueState::default());
}

#[tokio::test]
async fn steering_left_when_a_run_is_cancelled_becomes_the_next_follow_up() {
    let gate = Gate::new(false);
    let provider = ScriptedProvider::new(vec![
        tool_reply(&[("g", "gate", json!({}))]),
        text_reply("picked up the steer"),
    ]);
    let (harness, mut events) = harness_with(provider.clone(), vec![gate.clone()], |_| {});
    harness.prompt(text("go")).unwrap();
    gate.started.notified().await;
    let steer = harness.steer(text("and this")).unwrap();
    harness.cancel();
    let seen = until_settled(&mut events).await;
    assert_eq!(ends(&seen), vec![(EndReason::Cancelled, None, 1), (EndReason::Completed, None, 1)]);
    let second_run = seen.iter().rev().find_map(|event| match event {
        SessionEvent::AgentStart { run_id } => Some(run_id.clone()),
        _ => None,
    });
    assert_eq!(second_run, Some(steer.id));
    assert_history_valid(&harness.messages());
}

#[tokio::test]
async fn max_turns_ends_the_run() {
    let provider = ScriptedProvider::new(vec![
        tool_reply(&[("1", "echo", json!({"text": "a"}))]),
        tool_reply(&[("2", "echo", json!({"text": "b"}))]),
        tool_reply(&[("3", "echo", json!({"text": "c"}))]),
    ]);
    let (harness, mut events) = harness_with(provider.clone(), vec![Arc::new(Echo)], |config| {
        config.limits.max_turns = Some(2);
    });
    harness.prompt(text("loop")).unwrap();
    let seen = until_settled(&mut events).await;
    assert_eq!(ends(&seen), vec![(EndReason::MaxTurns, None, 2)]);
    assert_eq!(provider.requests().len(), 2);
    assert_history_valid(&harness.messages());
}

#[tokio::test]
async fn the_cost_limit_ends_the_run_and_usage_is_summed() {
    let provider = ScriptedProvider::new(vec![
        tool_reply_costing(&[("1", "echo", json!({"text": "a"}))], 0.4),
        tool_reply_costing(&[("2", "echo", json!({"text": "b"}))], 0.4),
        tool_reply_costing(&[("3", "echo", json!({"text": "c"}))], 0.4),
        tool_reply_costing(&[("4", "echo", json!({"text": "d"}))], 0.4),
    ]);
    let (harness, mut events) = harness_with(provider.clone(), vec![Arc::new(Echo)], |config| {
        config.limits.max_cost = Some(1.0);
    });
    harness.prompt(text("spend")).unwrap();
    let seen = until_settled(&mut events).await;
    assert_eq!(ends(&seen), vec![(EndReason::CostLimit, None, 3)]);
    let usage = seen
        .iter()
        .find_map(|event| match event {
            SessionEvent::AgentEnd { usage, .. } => Some(usage.clone()),
            _ => None,
        })
        .unwrap();
    assert!((usage.cost.total - 1.2).abs() < 1e-9);
    assert_eq!(usage.input, 30);
}

#[tokio::test]
async fn the_time_limit_interrupts_a_stuck_request() {
    let provider =
        ScriptedProvider::new(vec![vec![Step::Event(AssistantMessageEvent::Start), Step::Hang]]);
    let (harness, mut events) = harness_with(provider, vec![], |config| {
        config.limits.max_wall_time = Some(Duration::from_millis(20));
    });
    harness.prompt(text("think forever")).unwrap();
    let seen = until_settled(&mut events).await;
    assert_eq!(ends(&seen), vec![(EndReason::TimeLimit, None, 1)]);
    match &harness.messages()[1] {
        Message::Assistant(reply) => {
            assert_eq!(reply.stop_reason, StopReason::Aborted);
            assert!(reply.error_message.as_deref().unwrap_or_default().contains("time limit"));
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn per_run_limits_override_the_defaults() {
    let provider = ScriptedProvider::new(vec![
        tool_reply(&[("1", "echo", json!({"text": "a"}))]),
        tool_reply(&[("2", "echo", json!({"text": "b"}))]),
    ]);
    let (harness, mut events) = harness_with(provider, vec![Arc::new(Echo)], |_| {});
    let limits = RunLimits { max_turns: Some(1), ..harness.limits() };
    harness.prompt_with_limits(text("once"), limits).unwrap();
    let seen = until_settled(&mut events).await;
    assert_eq!(ends(&seen), vec![(EndReason::MaxTurns, None, 1)]);
}

#[tokio::test]
async fn consecutive_all_failed_turns_end_the_run() {
    let provider = ScriptedProvider::new(vec![
        tool_reply(&[("1", "fail", json!({})), ("1b", "nope", json!({}))]),
        tool_reply(&[("2", "echo", json!({"text": "ok"})), ("2b", "fail", json!({}))]),
        tool_reply(&[("3", "fail", json!({}))]),
        tool_reply(&[("4", "fail", json!({}))]),
        tool_reply(&[("5", "fail", json!({}))]),
    ]);
    let (harness, mut events) =
        harness_with(provider, vec![Arc::new(Fail), Arc::new(Echo)], |config| {
            config.limits.max_failed_turns = Some(2);
        });
    harness.prompt(text("break things")).unwrap();
    let seen = until_settled(&mut events).await;
    // Turn 2 had a success, which resets the count; turns 3 and 4 failed completely.
    assert_eq!(ends(&seen), vec![(EndReason::ToolFailureLimit, None, 4)]);
}

#[tokio::test]
async fn a_provider_error_ends_the_run_with_its_message() {
    let provider =
        ScriptedProvider::new(vec![error_reply(ProviderErrorKind::Auth, "bad credentials")]);
    let (harness, mut events) = harness_with(provider, vec![], |_| {});
    harness.prompt(text("hi")).unwrap();
    let seen = until_settled(&mut events).await;
    assert_eq!(ends(&seen), vec![(EndReason::Error, Some("bad credentials".into()), 1)]);
    let messages = harness.messages();
    assert_eq!(messages.len(), 2);
    assert_history_valid(&messages);
    assert!(labels(&seen).contains(&"message_start:assistant".to_string()));
}

#[tokio::test]
async fn auto_retry_notices_become_events() {
    let mut reply = text_reply("after retry");
    reply.insert(
        0,
        Step::Event(AssistantMessageEvent::Retry {
            attempt: 1,
            max_attempts: 3,
            delay_ms: 10,
            error: "429".into(),
        }),
    );
    let provider = ScriptedProvider::new(vec![reply]);
    let (harness, mut events) = harness_with(provider, vec![], |_| {});
    harness.prompt(text("hi")).unwrap();
    let seen = until_settled(&mut events).await;
    assert!(seen.contains(&SessionEvent::AutoRetry {
        attempt: 1,
        max_attempts: 3,
        delay_ms: 10,
        error: "429".into()
    }));
}

/// Hooks that record what they saw and act on it.
#[derive(Default)]
struct TestHooks {
    requests: Mutex<Vec<(u32, String, usize)>>,
    overflows: Mutex<u32>,
}

impl AgentHooks for TestHooks {
    fn before_request<'a>(&'a self, request: RequestView<'a>) -> BoxFuture<'a, RequestEdit> {
        Box::pin(async move {
            self.requests.lock().unwrap().push((
                request.turn,
                request.system_prompt.to_string(),
                request.messages.len(),
            ));
            RequestEdit {
                system_prompt: Some(format!("prompt for turn {}", request.turn)),
                messages: None,
            }
        })
    }

    fn before_tool_call<'a>(
        &'a self,
        call: &'a ToolCallContext,
    ) -> BoxFuture<'a, ToolCallDecision> {
        Box::pin(async move {
            // An approval that takes a while to answer.
            tokio::task::yield_now().await;
            if call.arguments["text"] == "forbidden" {
                ToolCallDecision::Block { reason: "the user said no".into() }
            } else {
                ToolCallDecision::Proceed
            }
        })
    }

    fn after_tool_call<'a>(
        &'a self,
        call: &'a ToolCallContext,
        mut result: ToolResultMessage,
    ) -> BoxFuture<'a, ToolResultMessage> {
        Box::pin(async move {
            if !result.is_error {
                result.content.push(ContentBlock::text(format!(" [checked {}]", call.call_id)));
            }
            result
        })
    }

    fn on_context_overflow<'a>(
        &'a self,
        messages: &'a [Arc<Message>],
    ) -> BoxFuture<'a, Option<Vec<Arc<Message>>>> {
        Box::pin(async move {
            *self.overflows.lock().unwrap() += 1;
            let last = messages.last().cloned()?;
            Some(vec![
                Arc::new(Message::User(UserMessage::text("summary of earlier work", 0))),
                last,
            ])
        })
    }
}

#[tokio::test]
async fn hooks_refresh_the_prompt_block_calls_and_amend_results() {
    let provider = ScriptedProvider::new(vec![
        tool_reply(&[
            ("ok", "echo", json!({"text": "fine"})),
            ("no", "echo", json!({"text": "forbidden"})),
        ]),
        text_reply("understood"),
    ]);
    let hooks = Arc::new(TestHooks::default());
    let (harness, mut events) = harness_with(provider.clone(), vec![Arc::new(Echo)], |config| {
        config.hooks = hooks.clone();
    });
    harness.prompt(text("go")).unwrap();
    let seen = until_settled(&mut events).await;
    assert_eq!(ends(&seen), vec![(EndReason::Completed, None, 2)]);
    assert_eq!(
        *hooks.requests.lock().unwrap(),
        vec![(1, "You are a test.".to_string(), 1), (2, "prompt for turn 1".to_string(), 4)]
    );
    let prompts: Vec<String> =
        provider.requests().iter().map(|r| r.context.system_prompt.clone()).collect();
    assert_eq!(prompts, vec!["prompt for turn 1", "prompt for turn 2"]);
    assert_eq!(harness.system_prompt(), "prompt for turn 2");
    assert_eq!(
        tool_results(&harness.messages()),
        vec![
            ("ok".into(), false, "fine [checked ok]".into()),
            ("no".into(), true, "Tool call blocked: the user said no".into()),
        ]
    );
}

#[tokio::test]
async fn a_context_overflow_is_compacted_and_retried_once_per_run() {
    let provider = ScriptedProvider::new(vec![
        error_reply(ProviderErrorKind::ContextOverflow, "too long"),
        text_reply("fits now"),
        error_reply(ProviderErrorKind::ContextOverflow, "too long again"),
        error_reply(ProviderErrorKind::ContextOverflow, "still too long"),
    ]);
    let hooks = Arc::new(TestHooks::default());
    let old = vec![
        Message::User(UserMessage::text("old question", 0)),
        Message::Assistant(assistant(text("old answer"), StopReason::Stop)),
    ];
    let (harness, mut events) = harness_with(provider.clone(), vec![], |config| {
        config.hooks = hooks.clone();
        config.messages = old.into_iter().map(Arc::new).collect();
    });
    harness.prompt(text("new question")).unwrap();
    let seen = until_settled(&mut events).await;
    assert_eq!(ends(&seen), vec![(EndReason::Completed, None, 1)]);
    let retried = &provider.requests()[1].context.messages;
    assert_eq!(retried.len(), 2);
    assert_eq!(*retried[0], Message::User(UserMessage::text("summary of earlier work", 0)));
    let roles: Vec<&str> = harness.messages().iter().map(role).collect();
    assert_eq!(roles, vec!["user", "user", "assistant"]);

    // The next run may recover once again, but not twice.
    harness.prompt(text("more")).unwrap();
    let seen = until_settled(&mut events).await;
    assert_eq!(ends(&seen), vec![(EndReason::Error, Some("still too long".into()), 1)]);
    assert_eq!(*hooks.overflows.lock().unwrap(), 2);
}

#[tokio::test]
async fn without_an_overflow_hook_an_overflow_is_an_error() {
    let provider =
        ScriptedProvider::new(vec![error_reply(ProviderErrorKind::ContextOverflow, "too long")]);
    let (harness, mut events) = harness_with(provider, vec![], |_| {});
    harness.prompt(text("hi")).unwrap();
    let seen = until_settled(&mut events).await;
    assert_eq!(ends(&seen), vec![(EndReason::Error, Some("too long".into()), 1)]);
}

#[tokio::test]
async fn history_and_settings_change_between_runs_only_where_it_is_safe() {
    let gate = Gate::new(false);
    let provider = ScriptedProvider::new(vec![tool_reply(&[("g", "gate", json!({}))])]);
    provider.push(text_reply("ok"));
    let (harness, mut events) = harness_with(provider.clone(), vec![gate.clone()], |_| {});
    harness.prompt(text("go")).unwrap();
    gate.started.notified().await;
    assert!(matches!(harness.set_messages(Vec::new()), Err(HarnessError::Busy)));
    harness.set_thinking_level(ThinkingLevel::High);
    gate.release.notify_one();
    until_settled(&mut events).await;
    // The running request kept the level it started with.
    assert!(provider.requests().iter().all(|r| r.options.thinking == ThinkingLevel::Off));

    let replacement = vec![Message::User(UserMessage::text("branch point", 0))];
    harness.set_messages(replacement.iter().cloned().map(Arc::new).collect()).unwrap();
    assert_eq!(harness.messages(), replacement);
    let next = ScriptedProvider::new(vec![text_reply("on the branch")]);
    let mut other_model = model();
    other_model.id = "scripted-2".into();
    harness.set_model(next.clone(), other_model.clone());
    harness.prompt(text("continue")).unwrap();
    until_settled(&mut events).await;
    let request = &next.requests()[0];
    assert_eq!(request.model, other_model);
    assert_eq!(request.options.thinking, ThinkingLevel::High);
    assert_eq!(request.context.messages.len(), 2);
    assert_eq!(harness.model(), other_model);
}

#[tokio::test]
async fn invalid_tool_sets_are_refused() {
    struct Bad;
    impl Tool for Bad {
        fn name(&self) -> &str {
            "bad"
        }
        fn description(&self) -> &str {
            "bad"
        }
        fn parameters(&self) -> Value {
            json!({"type": "nonsense"})
        }
        fn mode(&self) -> crate::ExecutionMode {
            crate::ExecutionMode::Parallel
        }
        fn execute(&self, _: crate::ToolInvocation) -> BoxFuture<'_, crate::ToolOutput> {
            Box::pin(async { crate::ToolOutput::text("") })
        }
    }
    let mut config = HarnessConfig::new(ScriptedProvider::new(vec![]), model());
    config.tools = vec![Arc::new(Bad)];
    assert!(matches!(Harness::new(config), Err(HarnessError::Tools(_))));
}

#[test]
fn starting_a_run_outside_a_runtime_is_an_error_not_a_panic() {
    let harness = Harness::new(HarnessConfig::new(ScriptedProvider::new(vec![]), model())).unwrap();
    assert!(matches!(harness.prompt(text("hi")), Err(HarnessError::NoRuntime)));
    assert!(!harness.is_running());
}

/// Hooks with a bug: they panic before a tool call.
struct PanickingHooks;

impl AgentHooks for PanickingHooks {
    fn before_tool_call<'a>(&'a self, _: &'a ToolCallContext) -> BoxFuture<'a, ToolCallDecision> {
        Box::pin(async { panic!("hook bug") })
    }
}

#[tokio::test]
async fn a_panic_inside_the_run_ends_it_with_an_error_and_keeps_the_history_valid() {
    let provider = ScriptedProvider::new(vec![
        tool_reply(&[("c1", "echo", json!({"text": "x"}))]),
        text_reply("still alive"),
    ]);
    let (harness, mut events) = harness_with(provider, vec![Arc::new(Echo)], |config| {
        config.hooks = Arc::new(PanickingHooks);
    });
    harness.prompt(text("go")).unwrap();
    let seen = until_settled(&mut events).await;
    assert_eq!(
        ends(&seen),
        vec![(EndReason::Error, Some("internal error: the run panicked".into()), 0)]
    );
    let messages = harness.messages();
    assert_history_valid(&messages);
    assert_eq!(
        tool_results(&messages),
        vec![("c1".into(), true, "interrupted: internal error in the agent loop".into())]
    );
    harness.set_hooks(Arc::new(crate::NoHooks));
    harness.prompt(text("again")).unwrap();
    let seen = until_settled(&mut events).await;
    assert_eq!(ends(&seen), vec![(EndReason::Completed, None, 1)]);
}

#[tokio::test]
async fn prompt_or_queue_starts_steers_or_queues_atomically() {
    let gate = Gate::new(false);
    let provider = ScriptedProvider::new(vec![
        tool_reply(&[("g", "gate", json!({}))]),
        text_reply("after steer"),
        tool_reply(&[("1", "echo", json!({"text": "a"}))]),
        tool_reply(&[("2", "echo", json!({"text": "b"}))]),
    ]);
    let (harness, mut events) = harness_with(provider, vec![gate.clone(), Arc::new(Echo)], |_| {});
    let started = harness.prompt_or_queue(text("go"), None, BusyBehavior::Steer).unwrap();
    assert_eq!(started.disposition, PromptDisposition::Started);
    gate.started.notified().await;
    let steered = harness.prompt_or_queue(text("steer"), None, BusyBehavior::Steer).unwrap();
    assert_eq!(steered.disposition, PromptDisposition::Steered);
    let limits = RunLimits { max_turns: Some(1), ..RunLimits::default() };
    let queued =
        harness.prompt_or_queue(text("later"), Some(limits), BusyBehavior::FollowUp).unwrap();
    assert_eq!(queued.disposition, PromptDisposition::Queued);
    gate.release.notify_one();
    let seen = until_settled(&mut events).await;
    // The follow-up's run kept its own one-turn limit.
    assert_eq!(ends(&seen), vec![(EndReason::Completed, None, 2), (EndReason::MaxTurns, None, 1)]);
    assert_eq!(
        seen.iter().rev().find_map(|event| match event {
            SessionEvent::AgentStart { run_id } => Some(run_id.clone()),
            _ => None,
        }),
        Some(queued.id)
    );
}

/// An approval nobody ever answers.
struct NeverApproves;

impl AgentHooks for NeverApproves {
    fn before_tool_call<'a>(&'a self, _: &'a ToolCallContext) -> BoxFuture<'a, ToolCallDecision> {
        Box::pin(futures::future::pending())
    }
}

#[tokio::test]
async fn cancel_while_an_approval_waits_answers_the_call() {
    let provider = ScriptedProvider::new(vec![tool_reply(&[("c1", "echo", json!({"text": "x"}))])]);
    let (harness, mut events) = harness_with(provider, vec![Arc::new(Echo)], |config| {
        config.hooks = Arc::new(NeverApproves);
    });
    harness.prompt(text("go")).unwrap();
    events_until(&mut events, |event| matches!(event, SessionEvent::ToolExecutionStart { .. }))
        .await;
    assert!(harness.cancel());
    let seen = until_settled(&mut events).await;
    assert_eq!(ends(&seen), vec![(EndReason::Cancelled, None, 1)]);
    assert_eq!(
        tool_results(&harness.messages()),
        vec![("c1".into(), true, "cancelled by user".into())]
    );
}

#[tokio::test]
async fn the_time_limit_interrupts_a_stuck_tool() {
    let gate = Gate::new(true);
    let provider = ScriptedProvider::new(vec![tool_reply(&[("g", "gate", json!({}))])]);
    let (harness, mut events) = harness_with(provider, vec![gate], |config| {
        config.limits.max_wall_time = Some(Duration::from_millis(20));
    });
    harness.prompt(text("wait")).unwrap();
    let seen = until_settled(&mut events).await;
    assert_eq!(ends(&seen), vec![(EndReason::TimeLimit, None, 1)]);
    let results = tool_results(&harness.messages());
    assert_eq!(results.len(), 1);
    assert!(results[0].1);
    assert!(results[0].2.contains("time limit"), "{}", results[0].2);
}

#[test]
fn a_harness_can_be_shared_across_tasks() {
    fn shareable<T: Send + Sync + Clone + 'static>() {}
    shareable::<Harness>();
}

#[tokio::test]
async fn a_prompt_right_after_agent_end_is_never_refused_as_busy() {
    let provider = ScriptedProvider::new(vec![text_reply("one"), text_reply("two")]);
    let (harness, mut events) = harness_with(provider, vec![], |_| {});
    harness.prompt(text("first")).unwrap();
    events_until(&mut events, |event| matches!(event, SessionEvent::AgentEnd { .. })).await;
    assert!(!harness.is_running());
    harness.prompt(text("second")).unwrap();
    until_settled(&mut events).await;
    until_settled(&mut events).await;
    assert_eq!(harness.messages().len(), 4);
}

/// Hooks that rewrite one call's arguments and continue a completing run once.
#[derive(Default)]
struct ContinuingHooks {
    completions: Mutex<Vec<u32>>,
}

impl AgentHooks for ContinuingHooks {
    fn before_tool_call<'a>(
        &'a self,
        call: &'a ToolCallContext,
    ) -> BoxFuture<'a, ToolCallDecision> {
        Box::pin(async move {
            match call.arguments["text"].as_str() {
                Some("rewrite me") => {
                    ToolCallDecision::ProceedWith { arguments: json!({"text": "rewritten"}) }
                }
                Some("break me") => ToolCallDecision::ProceedWith { arguments: json!({"x": 1}) },
                _ => ToolCallDecision::Proceed,
            }
        })
    }

    fn on_stop<'a>(
        &'a self,
        stop: crate::hooks::StopView<'a>,
    ) -> BoxFuture<'a, crate::hooks::StopDecision> {
        Box::pin(async move {
            self.completions.lock().unwrap().push(stop.continuations);
            if stop.continuations == 0 {
                crate::hooks::StopDecision::Continue {
                    content: text("not done yet: run the tests"),
                    outcome: RunOutcome::Unverified,
                }
            } else {
                crate::hooks::StopDecision::Finish(RunOutcome::Unverified)
            }
        })
    }
}

#[tokio::test]
async fn hooks_can_rewrite_arguments_and_continue_a_completing_run() {
    let provider = ScriptedProvider::new(vec![
        tool_reply(&[
            ("a", "echo", json!({"text": "rewrite me"})),
            ("b", "echo", json!({"text": "break me"})),
        ]),
        text_reply("first stop"),
        text_reply("second stop"),
    ]);
    let hooks = Arc::new(ContinuingHooks::default());
    let (harness, mut events) = harness_with(provider.clone(), vec![Arc::new(Echo)], |config| {
        config.hooks = hooks.clone();
    });
    harness.prompt(text("go")).unwrap();
    let seen = until_settled(&mut events).await;
    assert_eq!(ends(&seen), vec![(EndReason::Completed, None, 3)]);
    assert_eq!(*hooks.completions.lock().unwrap(), vec![0, 1]);
    let results = tool_results(&harness.messages());
    assert_eq!(results[0], ("a".into(), false, "rewritten".into()));
    assert!(results[1].1, "a rewrite that breaks the schema is an error: {results:?}");
    let third = &provider.requests()[2].context.messages;
    assert_eq!(
        third.last().map(|message| message.as_ref()),
        Some(&Message::User(UserMessage {
            content: text("not done yet: run the tests"),
            timestamp: match third.last().map(|message| message.as_ref()) {
                Some(Message::User(user)) => user.timestamp,
                _ => 0,
            },
        }))
    );
}
