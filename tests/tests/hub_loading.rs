//! End-to-end: loading and unloading sessions under concurrent clients, through the real
//! `reind` and raw socket clients. Clients opening one unloaded session at once share one
//! load; a close racing a prompt never leaves the prompt failing or its run cut short.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

use rein_testkit::background::BackgroundFake;
use rein_testkit::daemon::{DaemonFixture, RawConnection};
use rein_testkit::fake_provider::Reply;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

fn request(connection: &mut RawConnection, id: u64, method: &str, params: Value) {
    let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    connection.send_line(&line.to_string());
}

/// The response to `id` (notifications are skipped).
fn response(connection: &mut RawConnection, id: u64) -> Value {
    loop {
        let message = connection.read_json();
        if message["id"] == id {
            return message;
        }
    }
}

fn wait_idle(daemon: &DaemonFixture, session: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut client = daemon.connect();
    loop {
        let state = client.call_ok(1, "session/state", json!({"session_id": session}));
        if state["running"] == false {
            return;
        }
        assert!(Instant::now() < deadline, "the run did not end: {state}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn clients_opening_one_unloaded_session_at_once_share_one_load() {
    let daemon = DaemonFixture::start();
    let project = tempfile::tempdir().unwrap();
    let mut creator = daemon.connect();
    let mut sessions = Vec::new();
    for _ in 0..2 {
        let state = creator.call_ok(1, "session/create", json!({"cwd": project.path()}));
        let id = state["session_id"].as_str().unwrap().to_string();
        creator.call_ok(2, "session/close", json!({"session_id": id}));
        sessions.push(id);
    }
    // Sixteen clients open the two sessions, every request written before any answer is read.
    let mut clients: Vec<RawConnection> = (0..16).map(|_| daemon.connect()).collect();
    for (i, client) in clients.iter_mut().enumerate() {
        request(client, 7, "session/open", json!({"session_id": sessions[i % 2]}));
    }
    let mut streams = [Vec::new(), Vec::new()];
    for (i, client) in clients.iter_mut().enumerate() {
        let answer = response(client, 7);
        let stream = answer["result"]["stream"].as_str();
        let stream = stream.unwrap_or_else(|| panic!("open failed: {answer}")).to_string();
        streams[i % 2].push(stream);
    }
    for list in &streams {
        assert!(list.iter().all(|s| *s == list[0]), "one session was loaded twice: {list:?}");
    }
    assert_ne!(streams[0][0], streams[1][0]);
    let info = creator.call_ok(3, "daemon/info", json!({}));
    assert_eq!(info["sessions_loaded"], 2, "{info}");
}

#[test]
fn a_close_racing_a_prompt_never_cuts_the_prompt_short() {
    const ROUNDS: usize = 12;
    let fake = BackgroundFake::start(
        (0..ROUNDS).map(|i| Reply::text(format!("answer number {i}"))).collect(),
    );
    let daemon = fake.daemon("approval_policy = \"yolo\"");
    let project = tempfile::tempdir().unwrap();
    let mut closer = daemon.connect();
    let mut prompter = daemon.connect();
    let state = prompter.call_ok(1, "session/create", json!({"cwd": project.path()}));
    let session = state["session_id"].as_str().unwrap().to_string();
    let mut closed = 0;
    for round in 0..ROUNDS {
        let id = 10 + round as u64;
        // Alternate which request is written first.
        let prompt = json!({"session_id": session, "text": format!("question {round}")});
        let close = json!({"session_id": session});
        if round % 2 == 0 {
            request(&mut closer, id, "session/close", close);
            request(&mut prompter, id, "session/prompt", prompt);
        } else {
            request(&mut prompter, id, "session/prompt", prompt);
            request(&mut closer, id, "session/close", close);
        }
        let prompted = response(&mut prompter, id);
        assert!(prompted.get("result").is_some(), "round {round}: the prompt failed: {prompted}");
        let close = response(&mut closer, id);
        match close["error"]["data"]["kind"].as_str() {
            None => closed += 1,
            // Busy with the prompt's run, or already unloaded by a previous close.
            Some("session_busy" | "session_not_found") => {}
            Some(other) => panic!("round {round}: close failed with {other}: {close}"),
        }
        wait_idle(&daemon, &session);
    }
    // Every prompt ran to completion: each has its user message and its answer.
    let mut reader = daemon.connect();
    let messages = reader.call_ok(1, "session/messages", json!({"session_id": session}));
    let messages = messages["messages"].as_array().unwrap();
    let text = serde_json::to_string(messages).unwrap();
    for round in 0..ROUNDS {
        assert!(text.contains(&format!("question {round}")), "prompt {round} is missing");
    }
    let answers = messages.iter().filter(|m| m["role"] == "assistant").count();
    assert_eq!(answers, ROUNDS, "a run was cut short: {text}");
    assert!(!text.contains("\"aborted\""), "a run was cancelled: {text}");
    eprintln!("{closed} of {ROUNDS} closes went through");
}

#[test]
fn an_open_racing_a_close_waits_for_the_file_instead_of_failing_locked() {
    // A SessionEnd hook that takes a moment widens the time an unload holds the file lock.
    let mut daemon = DaemonFixture::new();
    let hook = "[[hooks.SessionEnd]]\n[[hooks.SessionEnd.hooks]]\ntype = \"command\"\ncommand = \"sleep 0.3\"\n";
    std::fs::write(daemon.home().join("config.toml"), hook).unwrap();
    daemon.spawn();
    let project = tempfile::tempdir().unwrap();
    let mut closer = daemon.connect();
    let mut opener = daemon.connect();
    let state = closer.call_ok(1, "session/create", json!({"cwd": project.path()}));
    let id = state["session_id"].as_str().unwrap().to_string();
    for round in 0..8u64 {
        // Both requests are on the wire before either answer is read: the open lands while the
        // close may still hold the session's file lock.
        request(&mut closer, 100 + round, "session/close", json!({"session_id": id}));
        request(&mut opener, 100 + round, "session/state", json!({"session_id": id}));
        let closed = response(&mut closer, 100 + round);
        let opened = response(&mut opener, 100 + round);
        assert!(opened["result"]["session_id"] == id.as_str(), "round {round}: {opened}");
        assert!(
            closed.get("result").is_some() || closed["error"]["data"]["kind"] != "session_locked",
            "round {round}: {closed}"
        );
    }
}
