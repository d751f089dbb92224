//! End-to-end: approvals shared by several clients, through the real `reind`, raw socket
//! clients and the scripted fake provider. A waiting request is session state (a client that
//! attaches later is shown it), an approver that leaves stops counting at once, a request
//! whose approvers all left is denied after `approvals.grace_secs`, and the event of an answer
//! names the client that gave it (name, pid, tty).

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

use rein_protocol::method::InitializeParams;
use rein_testkit::background::Served;
use rein_testkit::connection::client_params;
use rein_testkit::daemon::{DaemonFixture, RawConnection};
use rein_testkit::fake_provider::Reply;
use serde_json::{Value, json};
use std::path::Path;

/// A client that introduced itself with a pid and a tty; `approvals` tells whether it answers
/// approval requests.
fn client(daemon: &DaemonFixture, name: &str, approvals: bool, pid: u32) -> RawConnection {
    let tty = Some("/dev/pts/42".to_string());
    daemon.client_with(InitializeParams { pid: Some(pid), tty, ..client_params(name, approvals) })
}

/// The client that creates the session in `project` and prompts it (it answers no
/// approvals), subscribed from the start; and the session.
fn prompter(daemon: &DaemonFixture, project: &Path) -> (RawConnection, String) {
    let mut prompter = client(daemon, "script", false, 100);
    let session = prompter.create_session(project);
    prompter.subscribe(&session, None);
    (prompter, session)
}

/// A script whose bash call must be refused, and the model's answer to the refusal.
fn refused_command() -> Vec<Reply> {
    vec![
        Reply::tool_call("bash", json!({"command": "echo should-not-run > ran.txt"})),
        Reply::text("understood"),
    ]
}

fn find<'a>(events: &'a [Value], kind: &str) -> &'a Value {
    events
        .iter()
        .find(|e| e["event"]["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} in {events:#?}"))
}

#[test]
fn a_waiting_approval_outlives_its_approver_and_is_shown_to_the_next_one() {
    let script = vec![
        Reply::tool_call("write", json!({"path": "made.txt", "content": "hello"})),
        Reply::text("written"),
        Reply::tool_call("bash", json!({"command": "sleep 60"})),
    ];
    // A long grace: the request must still be waiting when the second approver comes.
    let Served { project, fake: _fake, daemon } =
        Served::start(script, "approval_policy = \"ask\"\n[approvals]\ngrace_secs = 600");
    let target = project.path().join("made.txt");
    let (mut prompter, session) = prompter(&daemon, project.path());

    let mut first = client(&daemon, "first-editor", true, 200);
    first.subscribe(&session, None);
    prompter.call_ok(3, "session/prompt", json!({"session_id": session, "text": "write it"}));
    let request = first.events_until("approval_requested").pop().unwrap();
    let request_id = request["event"]["request_id"].as_str().unwrap().to_string();
    // The first approver goes away without answering.
    drop(first);

    // A client attaching now, live or from the current seq, is shown the waiting request
    // before anything else, with its original seq.
    let last_seq = prompter.call_ok(4, "session/state", json!({"session_id": session}))["last_seq"]
        .as_u64()
        .unwrap();
    let mut watcher = client(&daemon, "watcher", false, 300);
    watcher.subscribe(&session, Some(last_seq));
    let shown = watcher.next_session_item();
    assert_eq!(shown["event"]["kind"], "approval_requested", "{shown}");
    assert_eq!(shown["event"]["request_id"], request_id.as_str());
    assert_eq!(shown["seq"], request["seq"]);

    let mut second = client(&daemon, "second-editor", true, 400);
    second.subscribe(&session, None);
    let shown = second.next_session_item();
    assert_eq!(shown["event"]["request_id"], request_id.as_str(), "{shown}");
    second.call_ok(
        3,
        "approval/respond",
        json!({"session_id": session, "request_id": request_id, "decision": "allow_once"}),
    );

    let events = prompter.events_until("settled");
    let resolved = find(&events, "approval_resolved");
    assert_eq!(resolved["event"]["decision"], "allow_once", "{resolved}");
    assert_eq!(resolved["event"]["resolved_by"], "second-editor");
    assert_eq!(
        resolved["client"],
        json!({"name": "second-editor", "pid": 400, "tty": "/dev/pts/42"}),
        "the answer does not name its client: {resolved}"
    );
    assert_eq!(find(&events, "agent_end")["event"]["reason"], "completed");
    assert_eq!(std::fs::read_to_string(target).unwrap(), "hello");
    // Events of the run itself name no client.
    assert!(find(&events, "agent_end").get("client").is_none());
    assert!(find(&events, "tool_execution_end").get("client").is_none());

    // A client's other changes name it too.
    prompter.call_ok(
        5,
        "session/set_approval_policy",
        json!({"session_id": session, "policy": "yolo"}),
    );
    let changed = watcher.events_until("approval_policy_changed").pop().unwrap();
    assert_eq!(changed["client"]["name"], "script", "{changed}");
    assert_eq!(changed["client"]["pid"], 100);
    // Once answered, nothing is replayed any more.
    let mut late = client(&daemon, "late", false, 500);
    late.subscribe(&session, None);
    prompter.call_ok(6, "session/rename", json!({"session_id": session, "name": "renamed"}));
    let next = late.next_session_item();
    assert_ne!(next["event"]["kind"], "approval_requested", "{next}");

    // A run cancelled by one client ends naming that client.
    prompter.call_ok(7, "session/prompt", json!({"session_id": session, "text": "sleep"}));
    watcher.events_until("tool_execution_start");
    watcher.call_ok(8, "session/cancel", json!({"session_id": session}));
    let end = watcher.events_until("agent_end").pop().unwrap();
    assert_eq!(end["event"]["reason"], "cancelled", "{end}");
    assert_eq!(end["client"]["name"], "watcher", "{end}");
    assert_eq!(end["client"]["pid"], 300);
}

#[test]
fn when_every_approver_has_left_the_request_is_denied_after_the_grace_period() {
    let Served { project, fake, daemon } =
        Served::start(refused_command(), "approval_policy = \"ask\"\n[approvals]\ngrace_secs = 1");
    let (mut prompter, session) = prompter(&daemon, project.path());
    let mut approver = client(&daemon, "editor", true, 200);
    approver.subscribe(&session, None);
    prompter.call_ok(3, "session/prompt", json!({"session_id": session, "text": "run it"}));
    approver.events_until("approval_requested");
    // The approver's connection closes: it must stop counting at once, and the run must not
    // wait for it forever.
    drop(approver);

    let events = prompter.events_until("settled");
    let resolved = find(&events, "approval_resolved");
    assert_eq!(resolved["event"]["decision"], "deny", "{resolved}");
    assert_eq!(resolved["event"]["resolved_by"], "daemon");
    let reason = resolved["event"]["reason"].as_str().unwrap();
    assert!(reason.contains("grace period"), "{reason}");
    let end = find(&events, "tool_execution_end");
    assert_eq!(end["event"]["result"]["is_error"], true, "{end}");
    assert!(end.to_string().contains("grace period"), "the model is not told why: {end}");
    assert_eq!(find(&events, "agent_end")["event"]["reason"], "completed");
    assert!(!project.path().join("ran.txt").exists(), "the denied command ran");
    // The model was sent the reason with the tool result.
    let requests = fake.requests();
    assert!(requests.last().unwrap().body.to_string().contains("grace period"));
}

#[test]
fn an_approver_that_disconnected_before_the_request_does_not_count() {
    // A grace period far longer than any test: only an immediate denial lets this run end.
    let config = "approval_policy = \"ask\"\n[approvals]\ngrace_secs = 3600";
    let Served { project, fake: _fake, daemon } = Served::start(refused_command(), config);
    let (mut prompter, session) = prompter(&daemon, project.path());
    let mut approver = client(&daemon, "editor", true, 200);
    approver.subscribe(&session, None);
    drop(approver);

    prompter.call_ok(3, "session/prompt", json!({"session_id": session, "text": "run it"}));
    let events = prompter.events_until("settled");
    let resolved = find(&events, "approval_resolved");
    assert_eq!(resolved["event"]["decision"], "deny", "{resolved}");
    assert_eq!(resolved["event"]["resolved_by"], "daemon");
    let reason = resolved["event"]["reason"].as_str().unwrap();
    assert!(reason.contains("no client attached"), "{reason}");
    assert!(!project.path().join("ran.txt").exists(), "the denied command ran");
}
