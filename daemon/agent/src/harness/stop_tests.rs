//! The `on_stop`, `before_tools` and `after_tools` hooks: a run the model stops can be sent
//! on with a message and ends with the outcome the host gives; tools are bracketed per turn.

use super::*;
use crate::hooks::{StopDecision, StopView, TurnTools};
use crate::test_support::*;
use futures::future::BoxFuture;
use rein_protocol::event::EndReason;
use serde_json::json;

/// Sends the run on once with a message, then finishes it verified; logs the tools hooks.
#[derive(Default)]
struct Checker {
    stops: Mutex<Vec<u32>>,
    tools: Mutex<Vec<String>>,
}

impl AgentHooks for Checker {
    fn before_tools<'a>(&'a self, turn: TurnTools<'a>) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            self.tools.lock().unwrap().push(format!("before:{}:{}", turn.turn, turn.calls.len()));
        })
    }

    fn after_tools<'a>(&'a self, turn: TurnTools<'a>) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            self.tools.lock().unwrap().push(format!("after:{}", turn.turn));
        })
    }

    fn on_stop<'a>(&'a self, stop: StopView<'a>) -> BoxFuture<'a, StopDecision> {
        Box::pin(async move {
            let mut stops = self.stops.lock().unwrap();
            stops.push(stop.turn);
            if stops.len() == 1 {
                StopDecision::Continue {
                    content: vec![ContentBlock::text("the check failed")],
                    outcome: RunOutcome::VerifyFailed,
                }
            } else {
                StopDecision::Finish(RunOutcome::Verified)
            }
        })
    }
}

fn outcome(seen: &[SessionEvent]) -> Option<(EndReason, RunOutcome)> {
    seen.iter().find_map(|event| match event {
        SessionEvent::AgentEnd { reason, outcome, .. } => Some((*reason, *outcome)),
        _ => None,
    })
}

#[tokio::test]
async fn a_stop_hook_sends_the_run_on_and_decides_the_outcome() {
    let provider = ScriptedProvider::new(vec![
        tool_reply(&[("c1", "echo", json!({"text": "x"}))]),
        text_reply("done"),
        text_reply("done, really"),
    ]);
    let hooks = Arc::new(Checker::default());
    let (harness, mut events) = harness_with(provider.clone(), vec![Arc::new(Echo)], |config| {
        config.hooks = hooks.clone();
    });
    harness.prompt(vec![ContentBlock::text("go")]).unwrap();
    let seen = until_settled(&mut events).await;
    assert_eq!(outcome(&seen), Some((EndReason::Completed, RunOutcome::Verified)));
    assert_eq!(*hooks.stops.lock().unwrap(), vec![2, 3]);
    assert_eq!(*hooks.tools.lock().unwrap(), vec!["before:1:1", "after:1"]);
    // The hook's message reached the model as a user message.
    let messages = harness.messages();
    assert_history_valid(&messages);
    let third = &provider.requests()[2].context.messages;
    assert!(matches!(
        third.last().map(|message| message.as_ref()),
        Some(Message::User(user)) if user.content == vec![ContentBlock::text("the check failed")]
    ));
}

#[tokio::test]
async fn a_limit_after_a_failed_round_keeps_the_failed_outcome() {
    let provider = ScriptedProvider::new(vec![text_reply("done")]);
    let hooks = Arc::new(Checker::default());
    let (harness, mut events) = harness_with(provider, vec![], |config| {
        config.hooks = hooks.clone();
        config.limits.max_turns = Some(1);
    });
    harness.prompt(vec![ContentBlock::text("go")]).unwrap();
    let seen = until_settled(&mut events).await;
    assert_eq!(outcome(&seen), Some((EndReason::MaxTurns, RunOutcome::VerifyFailed)));
    // No message is left waiting for an answer that will not come.
    assert!(matches!(harness.messages().last(), Some(Message::Assistant(_))));
}

#[tokio::test]
async fn without_hooks_a_run_is_unverified() {
    let provider = ScriptedProvider::new(vec![text_reply("hi")]);
    let (harness, mut events) = harness_with(provider, vec![], |_| {});
    harness.prompt(vec![ContentBlock::text("go")]).unwrap();
    let seen = until_settled(&mut events).await;
    assert_eq!(outcome(&seen), Some((EndReason::Completed, RunOutcome::Unverified)));
}
