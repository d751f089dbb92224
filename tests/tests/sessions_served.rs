//! End-to-end: the daemon serves sessions to many clients at once, through the real `reind`,
//! raw socket clients and the scripted fake provider.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

use rein_testkit::background::{BackgroundFake, Served};
use rein_testkit::daemon::RawConnection;
use rein_testkit::fake_provider::Reply;
use serde_json::{Value, json};

/// A daemon whose session is in the middle of a 30-second tool call, with the client that
/// started it (subscribed from the start), the session, and the events up to the call's start.
fn in_a_long_tool_call() -> (Served, RawConnection, String, Vec<Value>) {
    let served = Served::start(
        vec![Reply::tool_call("bash", json!({"command": "sleep 30"}))],
        "approval_policy = \"yolo\"",
    );
    let mut a = served.daemon.client("a", false);
    let session = a.create_session(served.project.path());
    a.subscribe(&session, None);
    a.call_ok(3, "session/prompt", json!({"session_id": session, "text": "wait"}));
    let seen = a.events_until("tool_execution_start");
    (served, a, session, seen)
}

fn kinds(events: &[Value]) -> Vec<String> {
    events.iter().map(|e| e["event"]["kind"].as_str().unwrap_or("?").to_string()).collect()
}

fn seqs(events: &[Value]) -> Vec<u64> {
    events.iter().map(|e| e["seq"].as_u64().unwrap()).collect()
}

fn end_reason(events: &[Value]) -> String {
    events
        .iter()
        .find(|e| e["event"]["kind"] == "agent_end")
        .map(|e| e["event"]["reason"].as_str().unwrap().to_string())
        .unwrap_or_default()
}

#[test]
fn two_clients_see_identical_streams_and_share_prompt_steer_and_cancel() {
    let Served { project, fake, daemon } = Served::start(
        vec![
            Reply::tool_call("bash", json!({"command": "echo from-tool"})),
            Reply::text("first run done"),
        ],
        "approval_policy = \"yolo\"",
    );
    let mut a = daemon.client("a", false);
    let mut b = daemon.client("b", false);
    let session = a.create_session(project.path());
    a.subscribe(&session, None);
    b.subscribe(&session, None);

    let run = a.call_ok(3, "session/prompt", json!({"session_id": session, "text": "go"}));
    assert_eq!(run["disposition"], "started");
    let seen_a = a.events_until("settled");
    let seen_b = b.events_until("settled");
    assert_eq!(seen_a, seen_b, "both clients see the same numbered events");
    let numbers = seqs(&seen_a);
    assert!(numbers.windows(2).all(|w| w[1] == w[0] + 1), "seq has no gap: {numbers:?}");
    let k = kinds(&seen_a);
    for expected in
        ["agent_start", "turn_start", "tool_execution_start", "tool_execution_end", "agent_end"]
    {
        assert!(k.iter().any(|x| x == expected), "missing {expected} in {k:?}");
    }
    assert_eq!(end_reason(&seen_a), "completed");
    let tool_end = seen_a.iter().find(|e| e["event"]["kind"] == "tool_execution_end").unwrap();
    assert!(
        tool_end["event"]["result"]["content"][0]["text"].as_str().unwrap().contains("from-tool")
    );

    // One client prompts a long tool call, the other steers, a third cancels.
    fake.push(Reply::tool_call("bash", json!({"command": "sleep 30"})));
    let mut c = daemon.client("c", false);
    a.call_ok(4, "session/prompt", json!({"session_id": session, "text": "sleep"}));
    b.events_until("tool_execution_start");
    let busy = c.call(9, "session/prompt", json!({"session_id": session, "text": "me too"}));
    assert_eq!(busy["error"]["data"]["kind"], "session_busy", "{busy}");
    let steered = b.call_ok(5, "session/steer", json!({"session_id": session, "text": "hurry"}));
    assert_eq!(steered["started_run"], false);
    let cancelled = c.call_ok(1, "session/cancel", json!({"session_id": session}));
    assert_eq!(cancelled["cancelled"], true);
    let rest = a.events_until("settled");
    assert_eq!(end_reason(&rest), "cancelled", "{:?}", kinds(&rest));

    // The history stays valid and the session takes a new prompt.
    fake.push(Reply::text("after cancel"));
    c.call_ok(2, "session/prompt", json!({"session_id": session, "text": "again"}));
    let third = a.events_until("settled");
    assert_eq!(end_reason(&third), "completed");
    let messages = c.call_ok(3, "session/messages", json!({"session_id": session}));
    let last = messages["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["role"], "assistant");
    assert_eq!(last["content"][0]["text"], "after cancel");
}

#[test]
fn a_client_that_reconnects_with_its_last_seq_misses_nothing() {
    let Served { project, fake: _fake, daemon } = Served::start(
        vec![
            Reply::tool_call("bash", json!({"command": "echo one"})),
            Reply::tool_call("bash", json!({"command": "echo two"})),
            Reply::text("done"),
        ],
        "approval_policy = \"yolo\"",
    );
    let mut watcher = daemon.client("watcher", false);
    let session = watcher.create_session(project.path());
    watcher.subscribe(&session, None);
    let mut flaky = daemon.client("flaky", false);
    flaky.subscribe(&session, None);
    watcher.call_ok(3, "session/prompt", json!({"session_id": session, "text": "go"}));
    let before = flaky.events_until("tool_execution_end");
    let last_seq = before.last().unwrap()["seq"].as_u64().unwrap();
    drop(flaky);
    let all = watcher.events_until("settled");
    let mut back = daemon.client("flaky-again", false);
    back.subscribe(&session, Some(last_seq));
    let after = back.events_until("settled");
    let mut joined = before;
    joined.extend(after);
    assert_eq!(joined, all);
}

#[test]
fn a_client_that_stops_reading_is_lagged_without_stalling_the_others() {
    // 4,000 one-character deltas, one per millisecond: slow enough for a reading client to
    // keep up, far more than a client that reads nothing can hold back (socket, connection
    // queue and a 256-event replay buffer).
    let long = "x".repeat(4_000);
    let mut reply = Reply::text(long.clone());
    reply.delta_size = Some(1);
    reply.delay_ms = Some(1);
    let Served { project, fake: _fake, daemon } =
        Served::start(vec![reply], "approval_policy = \"yolo\"\n[sessions]\nreplay_buffer = 256");
    let mut reader = daemon.client("reader", false);
    let session = reader.create_session(project.path());
    let mut stuck = daemon.client("stuck", false);
    stuck.subscribe(&session, None);
    reader.subscribe(&session, None);
    reader.call_ok(3, "session/prompt", json!({"session_id": session, "text": "talk"}));
    let events = reader.events_until("settled");
    let numbers = seqs(&events);
    assert!(numbers.windows(2).all(|w| w[1] == w[0] + 1));
    let text: String = events
        .iter()
        .filter(|e| e["event"]["kind"] == "message_update")
        .filter_map(|e| e["event"]["delta"]["delta"].as_str().map(str::to_string))
        .collect();
    assert_eq!(text, long);
    // The stuck client, once it reads, finds its stream ended with a lagged notice.
    let mut last = Value::Null;
    for _ in 0..200_000 {
        last = stuck.next_session_item();
        if last["type"] != "event" {
            break;
        }
    }
    assert_eq!(last["type"], "lagged", "{last}");
}

#[test]
fn an_approval_is_answered_by_a_second_client() {
    let Served { project, fake: _fake, daemon } = Served::start(
        vec![
            Reply::tool_call("write", json!({"path": "made.txt", "content": "hello"})),
            Reply::text("written"),
        ],
        "approval_policy = \"ask\"",
    );
    let target = project.path().join("made.txt");
    let mut prompter = daemon.client("script", false);
    let mut approver = daemon.client("editor", true);
    let session = prompter.create_session(project.path());
    approver.subscribe(&session, None);
    prompter.subscribe(&session, None);
    prompter.call_ok(3, "session/prompt", json!({"session_id": session, "text": "write it"}));
    let request = approver.events_until("approval_requested").pop().unwrap();
    let request_id = request["event"]["request_id"].as_str().unwrap().to_string();
    assert_eq!(request["event"]["tool_name"], "write");
    approver.call_ok(
        3,
        "approval/respond",
        json!({"session_id": session, "request_id": request_id, "decision": "allow_once"}),
    );
    // A second answer is too late.
    let late = prompter.call(
        4,
        "approval/respond",
        json!({"session_id": session, "request_id": request_id, "decision": "deny"}),
    );
    assert_eq!(late["error"]["data"]["kind"], "approval_not_found", "{late}");
    let events = prompter.events_until("settled");
    let resolved = events.iter().find(|e| e["event"]["kind"] == "approval_resolved").unwrap();
    assert_eq!(resolved["event"]["decision"], "allow_once");
    assert_eq!(resolved["event"]["resolved_by"], "editor");
    assert_eq!(end_reason(&events), "completed");
    assert_eq!(std::fs::read_to_string(target).unwrap(), "hello");

    // A policy change by one client reaches the others.
    let policy = json!({"session_id": session, "policy": "yolo"});
    prompter.call_ok(5, "session/set_approval_policy", policy);
    let changed = approver.events_until("approval_policy_changed").pop().unwrap();
    assert_eq!(changed["event"]["policy"], "yolo");
    let state = approver.call_ok(6, "session/state", json!({"session_id": session}));
    assert_eq!(state["approval_policy"], "yolo");
}

#[test]
fn a_run_outlives_the_client_that_started_it() {
    let Served { project, fake: _fake, daemon } = Served::start(
        vec![
            Reply::tool_call("bash", json!({"command": "sleep 0.3; echo late > out.txt"})),
            Reply::text("all finished"),
        ],
        "approval_policy = \"yolo\"",
    );
    let session = {
        let mut once = daemon.client("fire-and-forget", false);
        let session = once.create_session(project.path());
        once.call_ok(3, "session/prompt", json!({"session_id": session, "text": "go"}));
        session
    };
    let mut later = daemon.client("later", false);
    let mut finished = false;
    for _ in 0..400 {
        let state = later.call_ok(5, "session/state", json!({"session_id": session}));
        if state["running"] == false && state["last_seq"].as_u64().unwrap() > 0 {
            let messages = later.call_ok(6, "session/messages", json!({"session_id": session}));
            let last = messages["messages"].as_array().unwrap().last().cloned().unwrap_or_default();
            if last["role"] == "assistant" && last["content"][0]["text"] == "all finished" {
                finished = true;
                break;
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    assert!(finished, "the run did not finish without its client");
    assert_eq!(std::fs::read_to_string(project.path().join("out.txt")).unwrap().trim(), "late");
    let list = later.call_ok(7, "session/list", json!({"cwd": project.path()}));
    let path = list["sessions"][0]["path"].as_str().unwrap().to_string();
    let file = std::fs::read_to_string(path).unwrap();
    assert!(file.contains("all finished"), "the result is in the session file");
}

#[test]
fn a_daemon_killed_during_a_tool_call_restarts_with_a_repaired_history() {
    let (Served { project: _project, fake, mut daemon }, mut a, session, seen) =
        in_a_long_tool_call();
    let cursor = seen.last().unwrap()["seq"].as_u64().unwrap();
    let stream = a.call_ok(4, "session/state", json!({"session_id": session}))["stream"].clone();
    assert!(stream.as_str().is_some_and(|s| !s.is_empty()), "{stream}");
    daemon.kill();
    drop(a);
    daemon.spawn();

    // The old cursor means nothing to the new daemon: it says so instead of replaying.
    let mut stale = daemon.client("stale", false);
    let params = json!({"session_id": session, "after_seq": cursor, "stream": stream});
    stale.call_ok(2, "session/subscribe", params);
    assert_eq!(stale.next_session_item()["type"], "resync_required");

    let mut b = daemon.client("b", false);
    let messages = b.call_ok(1, "session/messages", json!({"session_id": session}));
    let list = messages["messages"].as_array().unwrap();
    let result = list.last().unwrap();
    assert_eq!(result["role"], "tool_result", "{messages}");
    assert_eq!(result["is_error"], true);
    let calls: usize = list
        .iter()
        .filter(|m| m["role"] == "assistant")
        .map(|m| {
            m["content"].as_array().unwrap().iter().filter(|b| b["type"] == "tool_call").count()
        })
        .sum();
    let results = list.iter().filter(|m| m["role"] == "tool_result").count();
    assert_eq!(calls, results, "every call has exactly one result");

    fake.push(Reply::text("back again"));
    b.subscribe(&session, None);
    b.call_ok(3, "session/prompt", json!({"session_id": session, "text": "still there?"}));
    let events = b.events_until("settled");
    assert_eq!(end_reason(&events), "completed");
}

#[test]
fn bad_session_calls_get_typed_errors() {
    let fake = BackgroundFake::start(vec![]);
    let daemon = fake.daemon("");
    let mut a = daemon.client("a", false);
    let missing = a.call(1, "session/state", json!({"session_id": "0000-none"}));
    assert_eq!(missing["error"]["data"]["kind"], "session_not_found", "{missing}");
    let relative = a.call(2, "session/create", json!({"cwd": "relative/dir"}));
    assert_eq!(relative["error"]["data"]["field"], "cwd");
    let no_text = a.call(3, "session/prompt", json!({"session_id": "x"}));
    assert_eq!(no_text["error"]["data"]["field"], "text");
}

#[test]
fn graceful_shutdown_cancels_runs_and_leaves_valid_histories() {
    let (Served { project: _project, fake: _fake, mut daemon }, mut a, session, _) =
        in_a_long_tool_call();
    a.call_ok(4, "daemon/shutdown", json!({}));
    let rest = a.events_until("agent_end");
    assert_eq!(end_reason(&rest), "cancelled");
    assert_eq!(daemon.wait_for_exit(), Some(0));
    assert!(!daemon.socket().exists());

    daemon.spawn();
    let mut b = daemon.client("b", false);
    let messages = b.call_ok(1, "session/messages", json!({"session_id": session}));
    let last = messages["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["role"], "tool_result", "{messages}");
    assert_eq!(last["is_error"], true);
    let tree = b.call_ok(2, "session/tree", json!({"session_id": session}));
    let repaired = tree["entries"].as_array().unwrap().iter().any(|e| e["type"] == "repair");
    assert!(!repaired, "a graceful shutdown needs no repair on the next start: {tree}");
}

#[test]
fn daemon_events_report_the_session_lifecycle_and_idle_sessions_unload() {
    let Served { project, fake: _fake, daemon } = Served::start(
        vec![Reply::text("hi")],
        "approval_policy = \"yolo\"\n[sessions]\nidle_unload_secs = 1",
    );
    let mut watcher = daemon.client("watcher", false);
    watcher.call_ok(1, "daemon/subscribe", json!({}));
    let mut a = daemon.client("a", false);
    let session = a.create_session(project.path());
    a.call_ok(3, "session/prompt", json!({"session_id": session, "text": "hello"}));
    let mut kinds = Vec::new();
    while kinds.last().map(String::as_str) != Some("session_idle") {
        let event = watcher.next_notification();
        assert_eq!(event["method"], "daemon/event");
        assert_eq!(event["params"]["result"]["session_id"], session.as_str());
        kinds.push(event["params"]["result"]["kind"].as_str().unwrap().to_string());
    }
    assert_eq!(kinds, ["session_created", "session_running", "session_idle"]);

    // Idle and unwatched: unloaded within a few seconds; the next call loads it again.
    let mut unloaded = false;
    for _ in 0..100 {
        let info = a.call_ok(4, "daemon/info", json!({}));
        if info["sessions_loaded"] == 0 {
            unloaded = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(unloaded, "the idle session stayed loaded");
    let state = a.call_ok(5, "session/state", json!({"session_id": session}));
    assert_eq!(state["session_id"], session.as_str());

    a.call_ok(6, "session/close", json!({"session_id": session}));
    a.call_ok(7, "session/delete", json!({"session_id": session}));
    let deleted = watcher.next_notification();
    assert_eq!(deleted["params"]["result"]["kind"], "session_deleted");
    let missing = a.call(8, "session/state", json!({"session_id": session}));
    assert_eq!(missing["error"]["data"]["kind"], "session_not_found");
}

/// `session/list` summarizes a loaded session from memory: the same summary its file gives
/// once the session is closed, `loaded` aside.
#[test]
fn a_loaded_sessions_listing_matches_its_files() {
    let Served { project, fake: _fake, daemon } = Served::start(
        vec![Reply::tool_call("bash", json!({"command": "echo listed"})), Reply::text("done")],
        "approval_policy = \"yolo\"",
    );
    let mut a = daemon.client("a", false);
    let session = a.create_session(project.path());
    a.subscribe(&session, None);
    a.call_ok(3, "session/prompt", json!({"session_id": session, "text": "list me"}));
    a.events_until("settled");
    a.call_ok(4, "session/rename", json!({"session_id": session, "name": "listed one"}));
    let loaded = a.call_ok(5, "session/list", json!({"cwd": project.path()}));
    let mut from_memory = loaded["sessions"][0].clone();
    assert_eq!(from_memory["loaded"], true, "{loaded}");
    assert_eq!(from_memory["name"], "listed one", "{loaded}");
    assert_eq!(from_memory["first_prompt"], "list me", "{loaded}");
    a.call_ok(6, "session/close", json!({"session_id": session}));
    let closed = a.call_ok(7, "session/list", json!({"cwd": project.path()}));
    let from_file = &closed["sessions"][0];
    assert_eq!(from_file["loaded"], false, "{closed}");
    from_memory["loaded"] = json!(false);
    assert_eq!(&from_memory, from_file);
}
