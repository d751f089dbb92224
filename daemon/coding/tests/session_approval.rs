//! Approvals in a running session: each policy, no approver attached, allow once, allow for
//! the session, deny with a reason, first answer wins, and a cancelled wait.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

mod common;

use std::sync::atomic::Ordering;

use common::{Events, Fixture, prompt};
use rein_coding::CodingSession;
use rein_coding::session::{APPROVAL_CANCELLED_REASON, NO_APPROVER_REASON};
use rein_protocol::event::{ApprovalDecision, EndReason, SessionEvent};
use rein_protocol::message::{Message, ToolResultMessage};
use rein_protocol::method::ApprovalPolicy;
use rein_protocol::{EntryKind, ErrorKind};
use rein_testkit::fake_provider::Reply;
use serde_json::json;

fn write(path: &str) -> Reply {
    Reply::tool_call("write", json!({"path": path, "content": "x\n"}))
}

fn tool_results(session: &CodingSession) -> Vec<ToolResultMessage> {
    session
        .messages()
        .into_iter()
        .filter_map(|m| match m {
            Message::ToolResult(result) => Some(result),
            _ => None,
        })
        .collect()
}

async fn requested(events: &mut Events) -> (String, String) {
    match events.until(|e| matches!(e, SessionEvent::ApprovalRequested { .. })).await {
        SessionEvent::ApprovalRequested { request_id, tool_name, .. } => (request_id, tool_name),
        _ => unreachable!(),
    }
}

fn resolutions(events: &Events) -> Vec<(ApprovalDecision, Option<String>, String)> {
    events
        .seen
        .iter()
        .filter_map(|e| match e {
            SessionEvent::ApprovalResolved { decision, reason, resolved_by, .. } => {
                Some((*decision, reason.clone(), resolved_by.clone()))
            }
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn yolo_runs_everything_without_asking() {
    let outside = tempfile::tempdir().unwrap();
    let outside_file = outside.path().join("o.txt");
    let fx = Fixture::new(vec![
        write(&outside_file.display().to_string()),
        Reply::tool_call("bash", json!({"command": "echo ran > ran.txt"})),
        Reply::text("done"),
    ])
    .await;
    let (session, mut events) = fx.create(ApprovalPolicy::Yolo).await;
    session.prompt(prompt(&session, "go")).await.unwrap();
    events.settled().await;
    assert_eq!(fx.read("ran.txt"), "ran\n");
    assert_eq!(std::fs::read_to_string(&outside_file).unwrap(), "x\n");
    assert!(events.matching(|e| matches!(e, SessionEvent::ApprovalRequested { .. })).is_empty());
}

#[tokio::test]
async fn ask_without_an_approver_denies_at_once_and_tells_the_model() {
    let fx = Fixture::new(vec![write("a.txt"), Reply::text("ok")]).await;
    let (session, mut events) = fx.create(ApprovalPolicy::Ask).await;
    session.prompt(prompt(&session, "write a")).await.unwrap();
    events.settled().await;
    assert!(!fx.cwd().join("a.txt").exists());
    let results = tool_results(&session);
    assert!(results[0].is_error);
    assert!(results[0].text().contains(NO_APPROVER_REASON), "{}", results[0].text());
    let requested = events.matching(|e| matches!(e, SessionEvent::ApprovalRequested { .. }));
    assert_eq!(requested.len(), 1);
    assert_eq!(
        resolutions(&events),
        [(ApprovalDecision::Deny, Some(NO_APPROVER_REASON.to_string()), "daemon".to_string())]
    );
    // The model saw the denial in its next request.
    let body = &fx.bodies()[1];
    assert!(body.to_string().contains("no client attached"), "{body}");
}

#[tokio::test]
async fn allow_once_runs_the_call_and_the_next_call_asks_again() {
    let fx = Fixture::new(vec![write("a.txt"), write("b.txt"), Reply::text("ok")]).await;
    fx.gate.0.store(true, Ordering::SeqCst);
    let (session, mut events) = fx.create(ApprovalPolicy::Ask).await;
    session.prompt(prompt(&session, "write two")).await.unwrap();
    let (id, tool) = requested(&mut events).await;
    assert_eq!(tool, "write");
    session.respond_approval(&id, ApprovalDecision::AllowOnce, None, "rein.nvim").unwrap();
    let (id, _) = requested(&mut events).await;
    session
        .respond_approval(&id, ApprovalDecision::Deny, Some("not b".into()), "rein-cli")
        .unwrap();
    events.settled().await;
    assert_eq!(fx.read("a.txt"), "x\n");
    assert!(!fx.cwd().join("b.txt").exists());
    assert_eq!(
        resolutions(&events),
        [
            (ApprovalDecision::AllowOnce, None, "rein.nvim".to_string()),
            (ApprovalDecision::Deny, Some("not b".to_string()), "rein-cli".to_string()),
        ]
    );
    // Each request follows the persisted reply that made the call and its execution start.
    let position =
        |wanted: &dyn Fn(&SessionEvent) -> bool| events.seen.iter().position(wanted).unwrap();
    let reply_persisted = position(&|e| {
        matches!(e, SessionEvent::EntryAppended { entry } if matches!(&entry.kind,
            EntryKind::Message { message } if matches!(**message, Message::Assistant(_))))
    });
    let started = position(&|e| matches!(e, SessionEvent::ToolExecutionStart { .. }));
    let asked = position(&|e| matches!(e, SessionEvent::ApprovalRequested { .. }));
    assert!(reply_persisted < started && started < asked, "{:#?}", events.seen);
    let results = tool_results(&session);
    assert!(!results[0].is_error);
    assert!(results[1].is_error);
    assert!(
        results[1].text().contains("the user denied this call: not b"),
        "{}",
        results[1].text()
    );
}

#[tokio::test]
async fn allow_session_stops_asking_for_that_tool() {
    let fx = Fixture::new(vec![
        write("a.txt"),
        write("b.txt"),
        Reply::tool_call("bash", json!({"command": "true"})),
        Reply::text("ok"),
    ])
    .await;
    fx.gate.0.store(true, Ordering::SeqCst);
    let (session, mut events) = fx.create(ApprovalPolicy::Ask).await;
    session.prompt(prompt(&session, "go")).await.unwrap();
    let (id, _) = requested(&mut events).await;
    session.respond_approval(&id, ApprovalDecision::AllowSession, None, "c").unwrap();
    // bash is another tool: it still asks.
    let (id, tool) = requested(&mut events).await;
    assert_eq!(tool, "bash");
    session.respond_approval(&id, ApprovalDecision::AllowOnce, None, "c").unwrap();
    events.settled().await;
    assert_eq!(fx.read("b.txt"), "x\n");
    let requested = events.matching(|e| matches!(e, SessionEvent::ApprovalRequested { .. }));
    assert_eq!(requested.len(), 2);
}

#[tokio::test]
async fn the_first_answer_wins() {
    let fx = Fixture::new(vec![write("a.txt"), Reply::text("ok")]).await;
    fx.gate.0.store(true, Ordering::SeqCst);
    let (session, mut events) = fx.create(ApprovalPolicy::Ask).await;
    session.prompt(prompt(&session, "go")).await.unwrap();
    let (id, _) = requested(&mut events).await;
    session.respond_approval(&id, ApprovalDecision::Deny, Some("no".into()), "first").unwrap();
    let late = session.respond_approval(&id, ApprovalDecision::AllowOnce, None, "second");
    assert_eq!(late.unwrap_err().kind(), ErrorKind::ApprovalNotFound);
    events.settled().await;
    assert!(!fx.cwd().join("a.txt").exists());
    assert_eq!(resolutions(&events).len(), 1);
    assert_eq!(resolutions(&events)[0].2, "first");
    let unknown = session.respond_approval("ap-nope", ApprovalDecision::Deny, None, "x");
    assert_eq!(unknown.unwrap_err().kind(), ErrorKind::ApprovalNotFound);
}

#[tokio::test]
async fn auto_edit_passes_project_edits_and_asks_for_bash_and_outside_paths() {
    let outside = tempfile::tempdir().unwrap();
    let outside_file = outside.path().join("o.txt").display().to_string();
    let fx = Fixture::new(vec![
        write("inside.txt"),
        write(&outside_file),
        Reply::tool_call("bash", json!({"command": "touch bashed"})),
        Reply::text("ok"),
    ])
    .await;
    let (session, mut events) = fx.create(ApprovalPolicy::AutoEdit).await;
    session.prompt(prompt(&session, "go")).await.unwrap();
    events.settled().await;
    assert_eq!(fx.read("inside.txt"), "x\n");
    assert!(!outside.path().join("o.txt").exists());
    assert!(!fx.cwd().join("bashed").exists());
    let asked: Vec<String> = events
        .seen
        .iter()
        .filter_map(|e| match e {
            SessionEvent::ApprovalRequested { tool_name, reason, .. } => {
                assert!(reason.contains("auto-edit"), "{reason}");
                Some(tool_name.clone())
            }
            _ => None,
        })
        .collect();
    assert_eq!(asked, ["write", "bash"]);

    // Switching to yolo lets the same calls through.
    session.set_approval_policy(ApprovalPolicy::Yolo).await.unwrap();
    assert_eq!(session.state(0).approval_policy, ApprovalPolicy::Yolo);
    fx.fake.push(Reply::tool_call("bash", json!({"command": "touch bashed"})));
    fx.fake.push(Reply::text("ok"));
    session.prompt(prompt(&session, "again")).await.unwrap();
    events.settled().await;
    assert!(fx.cwd().join("bashed").exists());
}

#[tokio::test]
async fn cancelling_while_an_approval_waits_denies_it_and_keeps_the_history_valid() {
    let fx = Fixture::new(vec![write("a.txt"), Reply::text("later")]).await;
    fx.gate.0.store(true, Ordering::SeqCst);
    let (session, mut events) = fx.create(ApprovalPolicy::Ask).await;
    session.prompt(prompt(&session, "go")).await.unwrap();
    let (id, _) = requested(&mut events).await;
    assert!(session.cancel());
    let end = events.until(|e| matches!(e, SessionEvent::AgentEnd { .. })).await;
    assert!(matches!(end, SessionEvent::AgentEnd { reason: EndReason::Cancelled, .. }));
    events.settled().await;
    assert_eq!(
        resolutions(&events),
        [(ApprovalDecision::Deny, Some(APPROVAL_CANCELLED_REASON.to_string()), "daemon".into())]
    );
    let late = session.respond_approval(&id, ApprovalDecision::AllowOnce, None, "c");
    assert_eq!(late.unwrap_err().kind(), ErrorKind::ApprovalNotFound);
    assert!(!fx.cwd().join("a.txt").exists());
    assert!(rein_session::repair::is_valid_tool_history(&session.messages()));
    session.prompt(prompt(&session, "next")).await.unwrap();
    events.settled().await;
    assert_eq!(common::text_of(session.messages().last().unwrap()), "later");
}
