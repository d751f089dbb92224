//! History operations of a live session: automatic compaction at the threshold, compaction
//! after a context overflow with one retry, manual compaction and its busy rules, user shell
//! commands, branching, settings, labels and names.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

mod common;

use common::{Events, Fixture, prompt, text_of};
use rein_protocol::event::{CompactionReason, EndReason, SessionEvent};
use rein_protocol::message::Message;
use rein_protocol::method::{ApprovalPolicy, ExportFormat};
use rein_protocol::model::ThinkingLevel;
use rein_protocol::{EntryKind, ErrorKind};
use rein_session::CompactionSettings;
use rein_session::replay::{BRANCH_SUMMARY_PREFIX, COMPACTION_SUMMARY_PREFIX};
use rein_testkit::fake_provider::{Fault, Reply, ScriptUsage};
use serde_json::json;

fn small_compaction(fx: &mut Fixture) {
    fx.env.defaults.compaction =
        CompactionSettings { reserve_tokens: 200, keep_recent_tokens: 10, summary_max_tokens: 50 };
}

fn with_input(reply: Reply, input: u64) -> Reply {
    Reply { usage: Some(ScriptUsage { input, output: 5, ..ScriptUsage::default() }), ..reply }
}

fn compaction_events(events: &Events) -> Vec<SessionEvent> {
    events.matching(|e| {
        matches!(e, SessionEvent::CompactionStart { .. } | SessionEvent::CompactionEnd { .. })
            || matches!(e, SessionEvent::EntryAppended { entry }
                if matches!(entry.kind, EntryKind::Compaction { .. }))
    })
}

fn request_texts(body: &serde_json::Value) -> String {
    body["messages"].as_array().unwrap().iter().skip(1).map(|m| m.to_string()).collect()
}

#[tokio::test]
async fn the_context_is_compacted_at_the_threshold_before_the_next_request() {
    let mut fx = Fixture::with_window(
        vec![
            // Long enough that the kept tail (about 10 tokens) is only the new question.
            with_input(Reply::text(format!("first answer {}", "x".repeat(100))), 1_900),
            Reply::text("SUMMARY-OF-EARLIER"),
            Reply::text("second answer"),
        ],
        2_000,
    )
    .await;
    small_compaction(&mut fx);
    let (session, mut events) = fx.create(ApprovalPolicy::Yolo).await;
    session.prompt(prompt(&session, "first question")).await.unwrap();
    events.settled().await;
    assert!(compaction_events(&events).is_empty());
    assert!(session.state(0).context_tokens >= 1_900);

    session.prompt(prompt(&session, "second question")).await.unwrap();
    events.settled().await;
    let compaction = compaction_events(&events);
    assert!(
        matches!(
            &compaction[..],
            [
                SessionEvent::CompactionStart { reason: CompactionReason::Threshold },
                SessionEvent::EntryAppended { .. },
                SessionEvent::CompactionEnd {
                    reason: CompactionReason::Threshold,
                    entry_id: Some(_),
                    error: None,
                    ..
                },
            ]
        ),
        "{compaction:#?}"
    );

    // The summary request, then the real one carrying the summary instead of the old turn.
    let bodies = fx.bodies();
    assert_eq!(bodies.len(), 3);
    let sent = request_texts(&bodies[2]);
    assert!(sent.contains("SUMMARY-OF-EARLIER"), "{sent}");
    assert!(sent.contains("second question"), "{sent}");
    assert!(!sent.contains("first answer"), "{sent}");

    let messages = session.messages();
    assert!(text_of(&messages[0]).starts_with(COMPACTION_SUMMARY_PREFIX));
    assert_eq!(text_of(messages.last().unwrap()), "second answer");
    let id = session.id().to_string();
    session.close().await;
    let (reopened, _) = fx.open(&id).await;
    assert_eq!(reopened.messages(), messages);
}

#[tokio::test]
async fn a_context_overflow_compacts_and_retries_once() {
    let mut fx = Fixture::new(vec![
        Reply::text("first answer"),
        Reply::fault(Fault::ContextOverflow),
        Reply::text("SUMMARY-AFTER-OVERFLOW"),
        Reply::text("answer after retry"),
    ])
    .await;
    small_compaction(&mut fx);
    let (session, mut events) = fx.create(ApprovalPolicy::Yolo).await;
    session.prompt(prompt(&session, "first question")).await.unwrap();
    events.settled().await;
    session.prompt(prompt(&session, "second question")).await.unwrap();
    let end = events.until(|e| matches!(e, SessionEvent::AgentEnd { .. })).await;
    assert!(matches!(end, SessionEvent::AgentEnd { reason: EndReason::Completed, .. }), "{end:?}");
    events.settled().await;

    let compaction = compaction_events(&events);
    assert!(
        matches!(
            &compaction[..],
            [
                SessionEvent::CompactionStart { reason: CompactionReason::Overflow },
                SessionEvent::EntryAppended { .. },
                SessionEvent::CompactionEnd {
                    reason: CompactionReason::Overflow,
                    entry_id: Some(_),
                    ..
                },
            ]
        ),
        "{compaction:#?}"
    );
    let entry = session
        .tree()
        .entries
        .into_iter()
        .find_map(|e| match e.kind {
            EntryKind::Compaction { reason, summary, .. } => Some((reason, summary)),
            _ => None,
        })
        .unwrap();
    assert_eq!(entry, ("overflow".to_string(), "SUMMARY-AFTER-OVERFLOW".to_string()));
    let retry = request_texts(&fx.bodies()[3]);
    assert!(retry.contains("SUMMARY-AFTER-OVERFLOW") && retry.contains("second question"));
    assert_eq!(text_of(session.messages().last().unwrap()), "answer after retry");
}

#[tokio::test]
async fn manual_compaction_waits_for_the_summary_and_refuses_overlap() {
    let mut fx = Fixture::new(vec![
        Reply::text("first answer"),
        Reply::text("second answer"),
        Reply { delay_ms: Some(300), ..Reply::text("MANUAL-SUMMARY") },
    ])
    .await;
    small_compaction(&mut fx);
    let (session, mut events) = fx.create(ApprovalPolicy::Yolo).await;
    session.prompt(prompt(&session, "one")).await.unwrap();
    events.settled().await;
    session.prompt(prompt(&session, "two")).await.unwrap();
    events.settled().await;

    let running = {
        let session = session.clone();
        tokio::spawn(async move { session.compact(Some("keep names".into())).await })
    };
    events.until(|e| matches!(e, SessionEvent::CompactionStart { .. })).await;
    assert!(session.is_busy());
    assert_eq!(session.compact(None).await.unwrap_err().kind(), ErrorKind::CompactionInProgress);
    assert_eq!(
        session.prompt(prompt(&session, "x")).await.unwrap_err().kind(),
        ErrorKind::CompactionInProgress
    );
    assert_eq!(
        session.branch(None, false).await.unwrap_err().kind(),
        ErrorKind::CompactionInProgress
    );
    let result = running.await.unwrap().unwrap();
    assert_eq!(result.summary, "MANUAL-SUMMARY");
    assert!(fx.bodies()[2].to_string().contains("keep names"));
    let end = events.until(|e| matches!(e, SessionEvent::CompactionEnd { .. })).await;
    assert!(matches!(end, SessionEvent::CompactionEnd { reason: CompactionReason::Manual, .. }));
    assert!(text_of(&session.messages()[0]).contains("MANUAL-SUMMARY"));
    assert!(!session.is_busy());
}

#[tokio::test]
async fn history_operations_are_refused_during_a_run() {
    let fx = Fixture::new(vec![Reply::tool_call("bash", json!({"command": "sleep 30"}))]).await;
    let (session, mut events) = fx.create(ApprovalPolicy::Yolo).await;
    session.prompt(prompt(&session, "go")).await.unwrap();
    events.until(|e| matches!(e, SessionEvent::ToolExecutionStart { .. })).await;
    assert_eq!(session.compact(None).await.unwrap_err().kind(), ErrorKind::SessionBusy);
    assert_eq!(session.branch(None, false).await.unwrap_err().kind(), ErrorKind::SessionBusy);
    assert_eq!(session.set_model(common::MODEL).await.unwrap_err().kind(), ErrorKind::SessionBusy);
    let shell = session.shell("echo hi".into(), true).await;
    assert_eq!(shell.unwrap_err().kind(), ErrorKind::SessionBusy);
    session.close().await;
}

#[tokio::test]
async fn a_shell_command_streams_and_lands_in_the_context() {
    let fx = Fixture::new(vec![Reply::text("I see the output")]).await;
    let (session, mut events) = fx.create(ApprovalPolicy::Yolo).await;
    let started = session.shell("echo hello-from-shell; exit 3".into(), true).await.unwrap();
    let end = events.until(|e| matches!(e, SessionEvent::ShellEnd { .. })).await;
    assert_eq!(
        end,
        SessionEvent::ShellEnd {
            shell_id: started.shell_id.clone(),
            exit_code: Some(3),
            cancelled: false
        }
    );
    let output: String = events
        .seen
        .iter()
        .filter_map(|e| match e {
            SessionEvent::ShellOutput { chunk, .. } => Some(chunk.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(output, "hello-from-shell\n");
    let first_shell_event = events
        .seen
        .iter()
        .find(|e| matches!(e, SessionEvent::ShellStart { .. } | SessionEvent::ShellOutput { .. }));
    assert!(matches!(first_shell_event, Some(SessionEvent::ShellStart { .. })));
    let last = session.messages().pop().unwrap();
    assert!(matches!(last, Message::User(_)));
    let text = text_of(&last);
    assert!(text.contains("$ echo hello-from-shell; exit 3") && text.contains("[exit code 3]"));
    assert!(!session.is_busy());

    session.prompt(prompt(&session, "what did it print?")).await.unwrap();
    events.settled().await;
    assert!(request_texts(&fx.bodies()[0]).contains("hello-from-shell"));
    let id = session.id().to_string();
    session.close().await;
    let (reopened, _) = fx.open(&id).await;
    assert!(text_of(&reopened.messages()[0]).contains("hello-from-shell"));
}

#[tokio::test]
async fn a_shell_command_can_be_cancelled_and_then_is_not_added() {
    let fx = Fixture::new(vec![]).await;
    let (session, mut events) = fx.create(ApprovalPolicy::Yolo).await;
    session.shell("sleep 30".into(), true).await.unwrap();
    events.until(|e| matches!(e, SessionEvent::ShellStart { .. })).await;
    assert!(session.is_busy());
    assert_eq!(
        session.shell("true".into(), false).await.unwrap_err().kind(),
        ErrorKind::SessionBusy
    );
    assert!(session.cancel());
    let end = events.until(|e| matches!(e, SessionEvent::ShellEnd { .. })).await;
    assert!(matches!(end, SessionEvent::ShellEnd { cancelled: true, .. }));
    assert!(session.messages().is_empty());
}

#[tokio::test]
async fn branching_moves_the_leaf_and_reopening_lands_on_the_branch() {
    let fx = Fixture::new(vec![
        Reply::text("answer one"),
        Reply::text("answer two"),
        Reply::text("answer three"),
        Reply::text("SUMMARY-OF-ABANDONED"),
    ])
    .await;
    let (session, mut events) = fx.create(ApprovalPolicy::Yolo).await;
    session.prompt(prompt(&session, "one")).await.unwrap();
    events.settled().await;
    let first_answer = session.leaf_id().unwrap();
    session.prompt(prompt(&session, "two")).await.unwrap();
    events.settled().await;

    let missing = session.branch(Some("no-such-entry"), false).await.unwrap_err();
    assert_eq!(missing.kind(), ErrorKind::EntryNotFound);
    let result = session.branch(Some(&first_answer), false).await.unwrap();
    assert_eq!(result.leaf_id.as_deref(), Some(first_answer.as_str()));
    let leaf = events.until(|e| matches!(e, SessionEvent::LeafChanged { .. })).await;
    assert_eq!(leaf, SessionEvent::LeafChanged { leaf_id: Some(first_answer.clone()) });
    let texts: Vec<String> = session.messages().iter().map(text_of).collect();
    assert_eq!(texts, ["one", "answer one"]);

    session.prompt(prompt(&session, "three")).await.unwrap();
    events.settled().await;
    let sent = request_texts(&fx.bodies()[2]);
    assert!(sent.contains("answer one") && !sent.contains("answer two"), "{sent}");
    let expected = session.messages();
    assert_eq!(
        expected.iter().map(text_of).collect::<Vec<_>>(),
        ["one", "answer one", "three", "answer three"]
    );

    let id = session.id().to_string();
    session.close().await;
    let (session, mut events) = fx.open(&id).await;
    assert_eq!(session.messages(), expected);

    // Branch back to the first answer again, summarizing the abandoned "three" path.
    let result = session.branch(Some(&first_answer), true).await.unwrap();
    assert!(result.summary_entry_id.is_some());
    assert_eq!(result.leaf_id, result.summary_entry_id);
    events.until(|e| matches!(e, SessionEvent::LeafChanged { .. })).await;
    let messages = session.messages();
    assert_eq!(messages.len(), 3);
    assert!(text_of(&messages[2]).starts_with(BRANCH_SUMMARY_PREFIX));
    assert!(text_of(&messages[2]).contains("SUMMARY-OF-ABANDONED"));
}

#[tokio::test]
async fn settings_labels_and_names_are_recorded_and_survive_reopening() {
    let fx = Fixture::new(vec![Reply::text("answer")]).await;
    let (session, mut events) = fx.create(ApprovalPolicy::Ask).await;
    session.set_thinking(ThinkingLevel::High).await.unwrap();
    let thinking = events.until(|e| matches!(e, SessionEvent::ThinkingLevelChanged { .. })).await;
    assert_eq!(thinking, SessionEvent::ThinkingLevelChanged { level: ThinkingLevel::High });
    session.prompt(prompt(&session, "question")).await.unwrap();
    events.settled().await;
    let answer = session.leaf_id().unwrap();
    session.label(&answer, Some("good".into())).await.unwrap();
    session.rename("my session".into()).await.unwrap();
    let missing = session.label("nope", None).await.unwrap_err();
    assert_eq!(missing.kind(), ErrorKind::EntryNotFound);
    let labelled = events
        .until(|e| matches!(e, SessionEvent::EntryAppended { entry } if matches!(entry.kind, EntryKind::SessionInfo { .. })))
        .await;
    assert!(matches!(labelled, SessionEvent::EntryAppended { .. }));

    let markdown = session.export(ExportFormat::Markdown).unwrap();
    assert!(markdown.contains("question") && markdown.contains("answer"), "{markdown}");
    let jsonl = session.export(ExportFormat::Jsonl).unwrap();
    assert_eq!(jsonl.lines().count(), 3, "{jsonl}");

    let fork_id = session.fork(&answer).await.unwrap();
    assert_ne!(fork_id, session.id());
    let id = session.id().to_string();
    session.close().await;

    let (session, _) = fx.open(&id).await;
    let state = session.state(0);
    assert_eq!(state.thinking_level, ThinkingLevel::High);
    assert_eq!(state.name.as_deref(), Some("my session"));
    assert_eq!(state.approval_policy, ApprovalPolicy::Ask, "the session keeps its own policy");
    let labels: Vec<_> = session
        .tree()
        .entries
        .into_iter()
        .filter_map(|e| match e.kind {
            EntryKind::Label { target_id, label } => Some((target_id, label)),
            _ => None,
        })
        .collect();
    assert_eq!(labels, [(answer, Some("good".to_string()))]);
    let (fork, _) = fx.open(&fork_id).await;
    assert_eq!(fork.messages().len(), 2);
}

#[tokio::test]
async fn the_model_recorded_on_a_branch_is_put_back_in_force() {
    let fx = Fixture::new(vec![Reply::text("a1"), Reply::text("a2"), Reply::text("a3")]).await;
    let (session, mut events) = fx.create(ApprovalPolicy::Yolo).await;
    session.prompt(prompt(&session, "one")).await.unwrap();
    events.settled().await;
    let first_answer = session.leaf_id().unwrap();
    session.set_model("local/other-model").await.unwrap();
    session.prompt(prompt(&session, "two")).await.unwrap();
    events.settled().await;
    assert_eq!(fx.bodies()[1]["model"], json!("other-model"));

    events.clear();
    session.branch(Some(&first_answer), false).await.unwrap();
    let changed = events.until(|e| matches!(e, SessionEvent::ModelChanged { .. })).await;
    assert!(
        matches!(changed, SessionEvent::ModelChanged { model } if model.to_string() == common::MODEL)
    );
    assert_eq!(session.state(0).model.to_string(), common::MODEL);
    session.prompt(prompt(&session, "three")).await.unwrap();
    events.settled().await;
    assert_eq!(fx.bodies()[2]["model"], json!("test-model"));
}
