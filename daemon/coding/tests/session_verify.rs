//! Verification through a real coding session: the checks run in the project when the model
//! stops, a failure goes back to the model and the run goes on, and the outcome is reported on
//! `agent_end`, recorded in the session file and in the JSONL trajectory.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

mod common;

use common::{Fixture, prompt};
use rein_coding::CodingSession;
use rein_coding::verify::{CheckConfig, VerifyConfig};
use rein_protocol::event::{EndReason, SessionEvent};
use rein_protocol::message::Message;
use rein_protocol::method::{ApprovalPolicy, ExportFormat};
use rein_protocol::verify::{RunOutcome, VerifyRequest};
use rein_protocol::{EntryKind, SessionEntry};
use rein_testkit::fake_provider::Reply;
use serde_json::{Value, json};
use std::sync::Arc;

/// The check: passes once `fixed.txt` says "ok".
const CHECK: &str = "grep -qx ok fixed.txt || { echo 'expected ok in fixed.txt'; exit 1; }";

/// Breaks the check, then runs one prompt asking for [`CHECK`] to pass until the session
/// settles.
async fn run_checked(fixture: &Fixture) -> (Arc<CodingSession>, common::Events) {
    fixture.write("fixed.txt", "broken\n");
    let (session, mut events) = fixture.create(ApprovalPolicy::Yolo).await;
    let mut params = prompt(&session, "make the check pass");
    params.verify = Some(VerifyRequest::Commands(vec![CHECK.into()]));
    session.prompt(params).await.unwrap();
    events.settled().await;
    (session, events)
}

fn outcome_of(events: &[SessionEvent]) -> (EndReason, RunOutcome) {
    events
        .iter()
        .find_map(|event| match event {
            SessionEvent::AgentEnd { reason, outcome, .. } => Some((*reason, *outcome)),
            _ => None,
        })
        .expect("an agent_end")
}

fn verification_entries(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .skip(1)
        .filter_map(|line| match serde_json::from_str::<SessionEntry>(line).unwrap().kind {
            EntryKind::Custom { custom_type, data } if custom_type == "rein.verification" => {
                Some(data)
            }
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_model_that_fixes_the_check_in_round_two_ends_verified() {
    let fixture = Fixture::new(vec![
        Reply::text("Done, I think."),
        Reply::tool_call("write", json!({"path": "fixed.txt", "content": "ok\n"})),
        Reply::text("Now it is fixed."),
    ])
    .await;
    let (session, events) = run_checked(&fixture).await;

    assert_eq!(outcome_of(&events.seen), (EndReason::Completed, RunOutcome::Verified));
    let rounds = events.picked(|e| match e {
        SessionEvent::VerifyFinished { round, passed, .. } => Some((*round, *passed)),
        _ => None,
    });
    assert_eq!(rounds, vec![(1, false), (2, true)]);
    let started = events.matching(|e| matches!(e, SessionEvent::VerifyStarted { .. }));
    assert!(matches!(
        &started[0],
        SessionEvent::VerifyStarted { round: 1, max_rounds: 2, commands, .. } if commands == &vec![CHECK.to_string()]
    ));

    // The model was told what failed: the second request carries the check's output.
    let bodies = fixture.bodies();
    assert_eq!(bodies.len(), 3);
    let second = bodies[1].to_string();
    assert!(second.contains("Verification failed (round 1 of 2)"), "{second}");
    assert!(second.contains("expected ok in fixed.txt"), "{second}");

    // Each round is in the session file, with command, exit code, duration and output.
    let file = fixture.session_file(session.id());
    let recorded = verification_entries(&file);
    assert_eq!(recorded.len(), 2);
    assert_eq!(recorded[0]["passed"], false);
    assert_eq!(recorded[0]["checks"][0]["command"], CHECK);
    assert_eq!(recorded[0]["checks"][0]["exit_code"], 1);
    assert!(recorded[0]["checks"][0]["duration_ms"].is_u64());
    assert!(recorded[0]["checks"][0]["output_tail"].as_str().unwrap().contains("expected ok"));
    assert_eq!(recorded[1]["passed"], true);
    assert_eq!(recorded[1]["round"], 2);

    // And in the trajectory, where they happened.
    let trajectory = session.export(ExportFormat::Jsonl).unwrap();
    let kinds: Vec<String> = trajectory
        .lines()
        .map(|line| {
            serde_json::from_str::<Value>(line).unwrap()["type"].as_str().unwrap().to_string()
        })
        .collect();
    let verification_lines: Vec<usize> =
        kinds.iter().enumerate().filter(|(_, k)| *k == "verification").map(|(i, _)| i).collect();
    assert_eq!(verification_lines.len(), 2, "{kinds:?}");
    assert_eq!(kinds.last().map(String::as_str), Some("run_info"));
    // The first round follows the first answer, before the feedback message.
    assert_eq!(kinds[verification_lines[0] + 1], "message", "{kinds:?}");
}

#[tokio::test]
async fn a_model_that_never_fixes_it_ends_verify_failed_after_max_rounds() {
    let fixture = Fixture::new(vec![Reply::text("Done."), Reply::text("Really done.")]).await;
    let (session, events) = run_checked(&fixture).await;

    assert_eq!(outcome_of(&events.seen), (EndReason::Completed, RunOutcome::VerifyFailed));
    assert_eq!(fixture.bodies().len(), 2, "two rounds, then the run ends");
    let finished = events.matching(|e| matches!(e, SessionEvent::VerifyFinished { .. }));
    assert_eq!(finished.len(), 2);
    // The last round's failure is not sent to a model that will not answer again.
    let messages = session.messages();
    assert!(matches!(messages.last(), Some(Message::Assistant(_))));
    assert_eq!(verification_entries(&fixture.session_file(session.id())).len(), 2);
}

#[tokio::test]
async fn configured_checks_apply_and_an_empty_list_turns_them_off() {
    let mut fixture = Fixture::new(vec![Reply::text("one"), Reply::text("two")]).await;
    fixture.env.defaults.verify = VerifyConfig {
        commands: vec![CheckConfig::Command("test -f present.txt".into())],
        max_rounds: 1,
        ..VerifyConfig::default()
    };
    fixture.write("present.txt", "");
    let (session, mut events) = fixture.create(ApprovalPolicy::Yolo).await;
    session.prompt(prompt(&session, "first")).await.unwrap();
    events.settled().await;
    assert_eq!(outcome_of(&events.seen).1, RunOutcome::Verified);

    events.clear();
    let mut params = prompt(&session, "second");
    params.verify = Some(VerifyRequest::Commands(Vec::new()));
    session.prompt(params).await.unwrap();
    events.settled().await;
    assert_eq!(outcome_of(&events.seen).1, RunOutcome::Unverified);
    assert!(events.matching(|e| matches!(e, SessionEvent::VerifyStarted { .. })).is_empty());
}

#[tokio::test]
async fn no_checks_means_unverified() {
    let fixture = Fixture::new(vec![Reply::text("hi")]).await;
    let (session, mut events) = fixture.create(ApprovalPolicy::Yolo).await;
    session.prompt(prompt(&session, "hello")).await.unwrap();
    events.settled().await;
    assert_eq!(outcome_of(&events.seen), (EndReason::Completed, RunOutcome::Unverified));
}

#[tokio::test]
async fn cancelling_during_a_check_kills_it_and_reports_the_round_cancelled() {
    let fixture = Fixture::new(vec![Reply::text("Done.")]).await;
    let (session, mut events) = fixture.create(ApprovalPolicy::Yolo).await;
    let mut params = prompt(&session, "go");
    params.verify = Some(VerifyRequest::Commands(vec!["sleep 600".into()]));
    session.prompt(params).await.unwrap();
    events.until(|e| matches!(e, SessionEvent::VerifyStarted { .. })).await;
    assert!(session.cancel());
    let finished = events.until(|e| matches!(e, SessionEvent::VerifyFinished { .. })).await;
    assert!(matches!(
        finished,
        SessionEvent::VerifyFinished { cancelled: true, passed: false, .. }
    ));
    events.settled().await;
    assert_eq!(outcome_of(&events.seen), (EndReason::Cancelled, RunOutcome::Unverified));
}

/// A `Stop` hook script at `path`: blocks (exit 2, the reason on stderr) while
/// `stop_hook_active` is false, or always.
fn stop_hook(path: &std::path::Path, always: bool) -> rein_coding::command_hooks::HooksConfig {
    use std::os::unix::fs::PermissionsExt;
    let guard = if always {
        ""
    } else {
        "case \"$input\" in *'\"stop_hook_active\":true'*) exit 0;; esac\n"
    };
    let text = format!(
        "#!/usr/bin/env bash\ninput=\"$(cat)\"\n{guard}echo 'also run the linter' >&2\nexit 2\n"
    );
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    toml::from_str(&format!(
        "[[Stop]]\n[[Stop.hooks]]\ntype = \"command\"\ncommand = {:?}\n",
        path.display().to_string()
    ))
    .unwrap()
}

#[tokio::test]
async fn a_blocking_stop_hook_counts_as_a_round_and_the_checks_still_decide() {
    let hooks_dir = tempfile::tempdir().unwrap();
    let mut fixture = Fixture::new(vec![Reply::text("Done."), Reply::text("Linted, done.")]).await;
    fixture.env.defaults.hooks = stop_hook(&hooks_dir.path().join("stop.sh"), false);
    let (session, mut events) = fixture.create(ApprovalPolicy::Yolo).await;
    let mut params = prompt(&session, "finish the task");
    params.verify = Some(VerifyRequest::Commands(vec!["true".into()]));
    session.prompt(params).await.unwrap();
    events.settled().await;

    assert_eq!(outcome_of(&events.seen), (EndReason::Completed, RunOutcome::Verified));
    // The hook's reason reached the model as the next user message.
    let bodies = fixture.bodies();
    assert_eq!(bodies.len(), 2, "the hook continued the run once");
    assert!(bodies[1].to_string().contains("also run the linter"), "{}", bodies[1]);
    // The checks ran once, as the second round (the hook's block was the first).
    let rounds: Vec<u32> = events
        .seen
        .iter()
        .filter_map(|event| match event {
            SessionEvent::VerifyFinished { round, passed: true, .. } => Some(*round),
            _ => None,
        })
        .collect();
    assert_eq!(rounds, vec![2]);
}

#[tokio::test]
async fn a_stop_hook_that_always_blocks_uses_up_the_rounds_and_the_run_ends_verify_failed() {
    let hooks_dir = tempfile::tempdir().unwrap();
    let mut fixture = Fixture::new(vec![
        Reply::text("Done."),
        Reply::text("Done now."),
        Reply::text("Really done."),
    ])
    .await;
    fixture.env.defaults.hooks = stop_hook(&hooks_dir.path().join("stop.sh"), true);
    let (session, mut events) = fixture.create(ApprovalPolicy::Yolo).await;
    let mut params = prompt(&session, "finish the task");
    params.verify = Some(VerifyRequest::Commands(vec!["true".into()]));
    session.prompt(params).await.unwrap();
    events.settled().await;

    assert_eq!(outcome_of(&events.seen), (EndReason::Completed, RunOutcome::VerifyFailed));
    assert_eq!(fixture.bodies().len(), 3, "two blocked rounds, then the run ended");
}
