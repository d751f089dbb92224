//! Sessions under a sandbox: under `auto-edit` a sandboxed command runs without asking, and a
//! command the sandbox refused runs again on the host only after a person allowed it.
//! Needs bubblewrap (`scripts/test-deps.sh`).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

mod common;

use std::sync::atomic::Ordering;

use common::{Events, Fixture, prompt};
use rein_coding::CodingSession;
use rein_protocol::event::{ApprovalDecision, SessionEvent};
use rein_protocol::message::Message;
use rein_protocol::method::{ApprovalPolicy, CreateSessionParams, SandboxMode};
use rein_testkit::fake_provider::Reply;
use serde_json::{Value, json};
use std::sync::Arc;

/// A session in the fixture's project whose commands run in a read-only sandbox.
async fn read_only_session(fx: &Fixture) -> (Arc<CodingSession>, Events) {
    let (sink, events) = fx.sink();
    let params = CreateSessionParams {
        cwd: fx.cwd().display().to_string(),
        approval_policy: Some(ApprovalPolicy::AutoEdit),
        sandbox: Some(SandboxMode::ReadOnly),
        ..CreateSessionParams::default()
    };
    let session = CodingSession::create(fx.env.clone(), params, sink, fx.gate.clone()).await;
    (session.unwrap(), events)
}

/// The approval requests seen: tool name and arguments.
fn requests(events: &Events) -> Vec<(String, Value)> {
    events
        .seen
        .iter()
        .filter_map(|e| match e {
            SessionEvent::ApprovalRequested { tool_name, arguments, .. } => {
                Some((tool_name.clone(), arguments.clone()))
            }
            _ => None,
        })
        .collect()
}

fn last_tool_result(session: &CodingSession) -> String {
    session
        .messages()
        .into_iter()
        .filter_map(|m| match m {
            Message::ToolResult(result) => Some(result.text()),
            _ => None,
        })
        .next_back()
        .unwrap()
}

async fn answer_next(session: &CodingSession, events: &mut Events, decision: ApprovalDecision) {
    let event = events.until(|e| matches!(e, SessionEvent::ApprovalRequested { .. })).await;
    let SessionEvent::ApprovalRequested { request_id, .. } = event else { unreachable!() };
    session.respond_approval(&request_id, decision, Some("no".into()), "test").unwrap();
}

#[tokio::test]
async fn a_refused_command_runs_on_the_host_only_after_approval() {
    let command = "echo made > out.txt";
    let fx = Fixture::new(vec![
        Reply::tool_call("bash", json!({ "command": command })),
        Reply::text("done"),
    ])
    .await;
    fx.gate.0.store(true, Ordering::SeqCst);
    let (session, mut events) = read_only_session(&fx).await;
    session.prompt(prompt(&session, "make a file")).await.unwrap();
    answer_next(&session, &mut events, ApprovalDecision::AllowOnce).await;
    events.settled().await;
    // Asked once: not for the sandboxed run (auto-edit), only for leaving the sandbox.
    let asked = requests(&events);
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0].0, "bash");
    assert_eq!(asked[0].1, json!({ "command": command, "sandbox": "off" }));
    assert_eq!(fx.read("out.txt"), "made\n");
    let result = last_tool_result(&session);
    assert!(result.contains("ran outside the sandbox after approval"), "{result}");
}

#[tokio::test]
async fn a_denied_escalation_keeps_the_sandboxed_result() {
    let fx = Fixture::new(vec![
        Reply::tool_call("bash", json!({ "command": "echo made > out.txt" })),
        Reply::text("done"),
    ])
    .await;
    fx.gate.0.store(true, Ordering::SeqCst);
    let (session, mut events) = read_only_session(&fx).await;
    session.prompt(prompt(&session, "make a file")).await.unwrap();
    answer_next(&session, &mut events, ApprovalDecision::Deny).await;
    events.settled().await;
    assert!(!fx.cwd().join("out.txt").exists());
    let result = last_tool_result(&session);
    assert!(result.contains("Read-only file system"), "{result}");
    assert!(result.contains("the user denied this call: no"), "{result}");
}

#[tokio::test]
async fn a_sandboxed_command_that_succeeds_asks_nobody() {
    let fx = Fixture::new(vec![
        Reply::tool_call("bash", json!({ "command": "cat marker.txt" })),
        Reply::text("done"),
    ])
    .await;
    fx.write("marker.txt", "seen");
    let (session, mut events) = read_only_session(&fx).await;
    session.prompt(prompt(&session, "look")).await.unwrap();
    events.settled().await;
    assert!(requests(&events).is_empty());
    assert_eq!(last_tool_result(&session), "seen");
}

#[tokio::test]
async fn a_session_keeps_its_sandbox_when_loaded_again() {
    let write = Reply::tool_call("bash", json!({ "command": "echo x > w.txt" }));
    let fx = Fixture::new(vec![write, Reply::text("done")]).await;
    let (session, _events) = read_only_session(&fx).await;
    let id = session.id().to_string();
    session.close().await;
    // The configured default is `off`; the session was created read-only and stays so.
    let (session, mut events) = fx.open(&id).await;
    session.prompt(prompt(&session, "write")).await.unwrap();
    events.settled().await;
    assert!(!fx.cwd().join("w.txt").exists());
    assert!(last_tool_result(&session).contains("Read-only file system"));
}
