//! A coding session driving real runs against the scripted fake provider: persistence,
//! reopening, cancelling, busy rules and an unusable model.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

mod common;

use common::{Fixture, file_messages, prompt, text_of};
use rein_protocol::EntryKind;
use rein_protocol::ErrorKind;
use rein_protocol::event::{EndReason, SessionEvent};
use rein_protocol::message::Message;
use rein_protocol::method::{ApprovalPolicy, BusyBehavior, CreateSessionParams, PromptDisposition};
use rein_testkit::fake_provider::Reply;
use serde_json::json;

fn edit_script() -> Vec<Reply> {
    vec![
        Reply::tool_call("read", json!({"path": "src/lib.rs"})),
        Reply::tool_call(
            "edit",
            json!({"path": "src/lib.rs", "edits": [{"oldText": "a - b", "newText": "a + b"}]}),
        ),
        Reply::text("Fixed the sign in add."),
    ]
}

#[tokio::test]
async fn a_tool_using_run_edits_a_file_and_every_message_is_persisted() {
    let fx = Fixture::new(edit_script()).await;
    fx.write("src/lib.rs", "pub fn add(a: i32, b: i32) -> i32 { a - b }\n");
    let (session, mut events) = fx.create(ApprovalPolicy::Yolo).await;
    let result = session.prompt(prompt(&session, "fix add")).await.unwrap();
    assert_eq!(result.disposition, PromptDisposition::Started);
    events.settled().await;

    assert_eq!(fx.read("src/lib.rs"), "pub fn add(a: i32, b: i32) -> i32 { a + b }\n");
    let end = events.matching(|e| matches!(e, SessionEvent::AgentEnd { .. }));
    assert!(matches!(&end[..], [SessionEvent::AgentEnd { reason: EndReason::Completed, .. }]));

    // user, (assistant, tool result) x2, assistant
    let messages = session.messages();
    assert_eq!(messages.len(), 6, "{messages:#?}");
    assert_eq!(text_of(&messages[0]), "fix add");
    assert_eq!(text_of(&messages[5]), "Fixed the sign in add.");
    assert_eq!(file_messages(&fx.session_file(session.id())), messages);

    // Each message end is followed by the entry that persisted it.
    let seen = &events.seen;
    for (i, event) in seen.iter().enumerate() {
        if let SessionEvent::MessageEnd { message } = event {
            match seen.get(i + 1) {
                Some(SessionEvent::EntryAppended { entry }) => {
                    assert_eq!(entry.kind, EntryKind::Message { message: message.clone() });
                }
                other => panic!("message end followed by {other:?}"),
            }
        }
    }
    assert!(matches!(seen.last(), Some(SessionEvent::Settled)));

    let id = session.id().to_string();
    let state = session.state(7);
    assert_eq!(state.model.to_string(), common::MODEL);
    assert_eq!(state.last_seq, 7);
    assert!(!state.running);
    assert_eq!(state.usage.input, 30);
    session.close().await;
    let (reopened, _) = fx.open(&id).await;
    assert_eq!(reopened.messages(), messages);
    assert_eq!(reopened.state(0).model.to_string(), common::MODEL);

    // The second request carried the first tool result.
    let bodies = fx.bodies();
    assert_eq!(bodies.len(), 3);
    assert_eq!(bodies[1]["messages"].as_array().unwrap().len(), 4, "{}", bodies[1]);
}

#[tokio::test]
async fn a_second_open_while_loaded_is_refused_until_close() {
    let fx = Fixture::new(vec![]).await;
    let (session, _events) = fx.create(ApprovalPolicy::Yolo).await;
    let (sink, _) = fx.sink();
    let error =
        rein_coding::CodingSession::open(fx.env.clone(), session.id(), sink, fx.gate.clone())
            .await
            .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::SessionLocked);
    let id = session.id().to_string();
    session.close().await;
    assert_eq!(session.state(0).session_id, id);
    assert_eq!(
        session.prompt(prompt(&session, "x")).await.unwrap_err().kind(),
        ErrorKind::SessionNotFound
    );
    fx.open(&id).await;
}

#[tokio::test]
async fn an_unusable_model_opens_but_prompting_names_what_to_set() {
    let fx = Fixture::new(vec![]).await;
    let (sink, _events) = fx.sink();
    let params = CreateSessionParams {
        cwd: fx.cwd().display().to_string(),
        model: Some("anthropic/claude-sonnet-4-5".into()),
        ..CreateSessionParams::default()
    };
    let session = rein_coding::CodingSession::create(fx.env.clone(), params, sink, fx.gate.clone())
        .await
        .unwrap();
    assert_eq!(session.state(0).model.to_string(), "anthropic/claude-sonnet-4-5");
    let error = session.prompt(prompt(&session, "hi")).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::ModelNotFound);
    assert!(error.to_string().contains("ANTHROPIC_API_KEY"), "{error}");
    let id = session.id().to_string();
    session.close().await;

    // Reopened, it still asks for that model, and switching to a usable one works.
    let (session, mut events) = fx.open(&id).await;
    assert_eq!(session.state(0).model.to_string(), "anthropic/claude-sonnet-4-5");
    let error = session.set_model("nowhere/m").await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::ModelNotFound);
    session.set_model(common::MODEL).await.unwrap();
    events.until(|e| matches!(e, SessionEvent::ModelChanged { .. })).await;
    fx.fake.push(Reply::text("hello"));
    session.prompt(prompt(&session, "hi")).await.unwrap();
    events.settled().await;
    assert_eq!(text_of(session.messages().last().unwrap()), "hello");
}

#[tokio::test]
async fn cancel_mid_tool_leaves_a_valid_history_and_a_new_prompt_works() {
    let fx = Fixture::new(vec![
        Reply::tool_call("bash", json!({"command": "sleep 30"})),
        Reply::text("after cancel"),
    ])
    .await;
    let (session, mut events) = fx.create(ApprovalPolicy::Yolo).await;
    session.prompt(prompt(&session, "wait")).await.unwrap();
    events.until(|e| matches!(e, SessionEvent::ToolExecutionStart { .. })).await;
    assert!(session.is_busy());
    assert_eq!(
        session.prompt(prompt(&session, "again")).await.unwrap_err().kind(),
        ErrorKind::SessionBusy
    );
    assert!(session.cancel());
    let end = events.until(|e| matches!(e, SessionEvent::AgentEnd { .. })).await;
    assert!(matches!(end, SessionEvent::AgentEnd { reason: EndReason::Cancelled, .. }));
    events.settled().await;

    let messages = session.messages();
    assert!(rein_session::repair::is_valid_tool_history(&messages), "{messages:#?}");
    assert!(matches!(messages.last(), Some(Message::ToolResult(r)) if r.is_error));

    session.prompt(prompt(&session, "go on")).await.unwrap();
    events.settled().await;
    assert_eq!(text_of(session.messages().last().unwrap()), "after cancel");
    let id = session.id().to_string();
    let expected = session.messages();
    session.close().await;
    let (reopened, _) = fx.open(&id).await;
    assert_eq!(reopened.messages(), expected);
}

#[tokio::test]
async fn a_busy_prompt_can_steer_or_follow_up() {
    let fx = Fixture::new(vec![
        Reply::tool_call("bash", json!({"command": "sleep 2"})),
        Reply::text("steered answer"),
        Reply::text("follow-up answer"),
    ])
    .await;
    let (session, mut events) = fx.create(ApprovalPolicy::Yolo).await;
    session.prompt(prompt(&session, "start")).await.unwrap();
    events.until(|e| matches!(e, SessionEvent::ToolExecutionStart { .. })).await;
    let mut steer = prompt(&session, "also this");
    steer.when_busy = Some(BusyBehavior::Steer);
    assert_eq!(session.prompt(steer).await.unwrap().disposition, PromptDisposition::Steered);
    let queued = session.follow_up("then this".into(), Vec::new()).await.unwrap();
    assert!(!queued.started_run);
    assert_eq!(session.queues().follow_up.len(), 1);
    events.settled().await;
    let texts: Vec<String> = session.messages().iter().map(text_of).collect();
    let user_texts: Vec<&String> = session
        .messages()
        .iter()
        .zip(&texts)
        .filter(|(m, _)| matches!(m, Message::User(_)))
        .map(|(_, t)| t)
        .collect();
    assert_eq!(user_texts, ["start", "also this", "then this"]);
    assert_eq!(texts.last().unwrap(), "follow-up answer");
}

#[tokio::test]
async fn create_refuses_a_cwd_that_is_not_an_absolute_directory() {
    let fx = Fixture::new(vec![]).await;
    for cwd in ["relative/dir".to_string(), fx.cwd().join("missing").display().to_string()] {
        let (sink, _) = fx.sink();
        let params = CreateSessionParams { cwd, ..CreateSessionParams::default() };
        let error =
            rein_coding::CodingSession::create(fx.env.clone(), params, sink, fx.gate.clone())
                .await
                .unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidParams);
    }
}

#[tokio::test]
async fn a_prompt_queued_while_busy_runs_after_the_current_run() {
    let fx = Fixture::new(vec![
        Reply::tool_call("bash", json!({"command": "sleep 2"})),
        Reply::text("first done"),
        Reply::text("queued done"),
    ])
    .await;
    let (session, mut events) = fx.create(ApprovalPolicy::Yolo).await;
    let first = session.prompt(prompt(&session, "first")).await.unwrap();
    events.until(|e| matches!(e, SessionEvent::ToolExecutionStart { .. })).await;
    let mut queued = prompt(&session, "queued");
    queued.when_busy = Some(BusyBehavior::FollowUp);
    let queued = session.prompt(queued).await.unwrap();
    assert_eq!(queued.disposition, PromptDisposition::Queued);
    assert_ne!(queued.run_id, first.run_id);
    assert_eq!(session.state(0).run_id.as_deref(), Some(first.run_id.as_str()));
    events.settled().await;
    let starts: Vec<String> = events
        .seen
        .iter()
        .filter_map(|e| match e {
            SessionEvent::AgentStart { run_id } => Some(run_id.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(starts, [first.run_id, queued.run_id]);
    assert_eq!(text_of(session.messages().last().unwrap()), "queued done");
}
