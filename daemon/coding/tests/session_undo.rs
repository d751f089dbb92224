//! Checkpoints and undo through a real coding session: every turn's tools are bracketed by
//! snapshots in the private store, and `undo` puts back what `edit`, `write` and `bash` changed
//! (files created, rewritten and deleted), in a directory that is not a git repository.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

mod common;

use common::{Fixture, prompt};
use rein_coding::CodingSession;
use rein_protocol::ErrorKind;
use rein_protocol::checkpoint::{DiffParams, FileChange, FileChangeKind, UndoParams};
use rein_protocol::event::SessionEvent;
use rein_protocol::method::ApprovalPolicy;
use rein_testkit::fake_provider::Reply;
use serde_json::json;
use std::sync::Arc;

/// A fixture whose sessions keep checkpoints under its REIN_HOME.
async fn fixture(script: Vec<Reply>) -> Fixture {
    let mut fixture = Fixture::new(script).await;
    fixture.env.defaults.checkpoints.root = Some(fixture.home.path().join("checkpoints"));
    fixture
}

fn undo_params(session: &CodingSession, turn: Option<u32>, force: bool) -> UndoParams {
    UndoParams { session_id: session.id().to_string(), turn, entry_id: None, force }
}

async fn run(session: &CodingSession, events: &mut common::Events, text: &str) {
    session.prompt(prompt(session, text)).await.unwrap();
    events.settled().await;
}

fn sorted(mut changes: Vec<FileChange>) -> Vec<FileChange> {
    changes.sort_by(|a, b| a.path.cmp(&b.path));
    changes
}

#[tokio::test]
async fn undo_restores_what_edit_write_and_bash_changed() {
    let fixture = fixture(vec![
        Reply::tool_call(
            "edit",
            json!({"path": "src/lib.rs", "edits": [{"oldText": "one", "newText": "two"}]}),
        ),
        Reply::tool_call("write", json!({"path": "notes.md", "content": "new notes\n"})),
        Reply::tool_call(
            "bash",
            json!({"command": "echo rewritten > keep.txt && rm doomed.txt && mkdir -p gen && echo x > gen/made.txt"}),
        ),
        Reply::text("all done"),
    ])
    .await;
    fixture.write("src/lib.rs", "fn one() {}\n");
    fixture.write("keep.txt", "original\n");
    fixture.write("doomed.txt", "precious\n");
    let (session, mut events) = fixture.create(ApprovalPolicy::Yolo).await;
    run(&session, &mut events, "change things").await;

    assert_eq!(fixture.read("src/lib.rs"), "fn two() {}\n");
    assert!(!fixture.cwd().join("doomed.txt").exists());
    let created = events.matching(|e| matches!(e, SessionEvent::CheckpointCreated { .. }));
    assert_eq!(created.len(), 3, "one checkpoint per turn that ran tools");
    assert!(!fixture.cwd().join(".git").exists(), "the project is not made a repository");

    // The diff of turn 3 is the bash command's work.
    let diff = session
        .diff(DiffParams { session_id: session.id().into(), turn: Some(3), run_id: None })
        .await
        .unwrap();
    assert_eq!(
        sorted(diff.files),
        vec![
            FileChange { path: "doomed.txt".into(), change: FileChangeKind::Deleted },
            FileChange { path: "gen/made.txt".into(), change: FileChangeKind::Added },
            FileChange { path: "keep.txt".into(), change: FileChangeKind::Modified },
        ]
    );
    assert!(diff.patch.contains("-original\n+rewritten"), "{}", diff.patch);
    // The run's diff covers all three turns.
    let whole = session
        .diff(DiffParams { session_id: session.id().into(), turn: None, run_id: None })
        .await
        .unwrap();
    assert_eq!(whole.turns.iter().map(|t| t.turn).collect::<Vec<_>>(), vec![1, 2, 3]);
    assert_eq!(whole.files.len(), 5);

    // Undo the bash turn (the default: the latest), then write, then edit.
    events.clear();
    let undone = session.undo(undo_params(&session, None, false), "test").await.unwrap();
    assert_eq!(undone.turn, 3);
    assert_eq!(undone.removed, vec!["gen/made.txt".to_string()]);
    assert_eq!(fixture.read("keep.txt"), "original\n");
    assert_eq!(fixture.read("doomed.txt"), "precious\n");
    assert!(!fixture.cwd().join("gen").exists());
    assert_eq!(fixture.read("notes.md"), "new notes\n", "turn 2 is not undone yet");
    let applied = events.until(|e| matches!(e, SessionEvent::UndoApplied { .. })).await;
    assert!(matches!(
        applied,
        SessionEvent::UndoApplied { turn: 3, requested_by, .. } if requested_by == "test"
    ));

    let undone = session.undo(undo_params(&session, None, false), "test").await.unwrap();
    assert_eq!(undone.turn, 2);
    assert!(!fixture.cwd().join("notes.md").exists());
    let undone = session.undo(undo_params(&session, None, false), "test").await.unwrap();
    assert_eq!(undone.turn, 1);
    assert_eq!(fixture.read("src/lib.rs"), "fn one() {}\n");
    let nothing = session.undo(undo_params(&session, None, false), "test").await.unwrap_err();
    assert_eq!(nothing.kind(), ErrorKind::InvalidParams);

    // Each undo is recorded in the session file.
    let file = std::fs::read_to_string(fixture.session_file(session.id())).unwrap();
    assert_eq!(file.matches("\"rein.undo\"").count(), 3);
    assert_eq!(file.matches("\"rein.checkpoint\"").count(), 3);
}

/// A session whose one run rewrote `a.txt` (it held "before") with "by rein".
async fn rein_rewrote_a_file() -> (Fixture, Arc<CodingSession>) {
    let fixture = fixture(vec![
        Reply::tool_call("write", json!({"path": "a.txt", "content": "by rein\n"})),
        Reply::text("done"),
    ])
    .await;
    fixture.write("a.txt", "before\n");
    let (session, mut events) = fixture.create(ApprovalPolicy::Yolo).await;
    run(&session, &mut events, "write a").await;
    (fixture, session)
}

#[tokio::test]
async fn undo_refuses_to_overwrite_changes_made_outside_rein_unless_forced() {
    let (fixture, session) = rein_rewrote_a_file().await;

    // The user edits the same file after the run.
    fixture.write("a.txt", "the user's own change\n");
    let refused = session.undo(undo_params(&session, Some(1), false), "test").await.unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::UndoConflict);
    assert!(refused.to_string().contains("a.txt"), "{refused}");
    assert_eq!(fixture.read("a.txt"), "the user's own change\n", "nothing was touched");

    let forced = session.undo(undo_params(&session, Some(1), true), "test").await.unwrap();
    assert_eq!(forced.overwritten, vec!["a.txt".to_string()]);
    assert_eq!(fixture.read("a.txt"), "before\n");
}

#[tokio::test]
async fn a_file_created_outside_rein_after_the_snapshot_is_named_too() {
    let (fixture, session) = rein_rewrote_a_file().await;
    // A file the user created after the run is not in the snapshot: undo would delete it, so
    // it is named (and the file rein wrote is not).
    fixture.write("other.txt", "user file\n");
    let refused = session.undo(undo_params(&session, Some(1), false), "test").await.unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::UndoConflict);
    assert!(refused.to_string().contains("other.txt"), "{refused}");
    assert!(!refused.to_string().contains("a.txt"), "{refused}");
}

#[tokio::test]
async fn undo_needs_checkpoints_and_an_idle_session() {
    let fixture = Fixture::new(vec![Reply::text("hi")]).await;
    let (session, mut events) = fixture.create(ApprovalPolicy::Yolo).await;
    run(&session, &mut events, "hello").await;
    let off = session.undo(undo_params(&session, None, false), "test").await.unwrap_err();
    assert_eq!(off.kind(), ErrorKind::InvalidParams);
}

#[tokio::test]
async fn a_turn_that_only_reads_is_not_checkpointed() {
    let fixture = fixture(vec![
        Reply::tool_call("read", json!({"path": "a.txt"})),
        Reply::tool_call("bash", json!({"command": "echo two > a.txt"})),
        Reply::text("done"),
    ])
    .await;
    fixture.write("a.txt", "one\n");
    let (session, mut events) = fixture.create(ApprovalPolicy::Yolo).await;
    run(&session, &mut events, "look, then change").await;
    let created = events.picked(|e| match e {
        SessionEvent::CheckpointCreated { turn, run_turn, .. } => Some((*turn, *run_turn)),
        _ => None,
    });
    assert_eq!(created, vec![(1, 2)], "only the bash turn (the run's second) is a checkpoint");
    // Undo to an entry: the first checkpoint at or after it (here, after the user's prompt).
    let first_entry = session.tree().entries[0].id.clone();
    let mut params = undo_params(&session, None, false);
    params.entry_id = Some(first_entry);
    let undone = session.undo(params, "test").await.unwrap();
    assert_eq!(undone.turn, 1);
    assert_eq!(fixture.read("a.txt"), "one\n");
}
