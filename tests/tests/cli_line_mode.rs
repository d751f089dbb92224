//! End-to-end: the line-mode client (`rein` without a terminal) runs the same slash commands
//! as the full-screen one, through the one implementation both share: `/fork`, `/new`,
//! `/resume` (a numbered list, then `/resume N`), `/clear` and `/export FILE`. Like the
//! full-screen client it holds back a `y` typed just after another client answered, and
//! `@path` mentions attach the file.

#![allow(clippy::unwrap_used)] // test helpers: a failure should stop the test

mod cli_support;

use cli_support::{CliEnv, Pty};
use rein_testkit::fake_provider::Reply;
use serde_json::json;
use std::process::Stdio;

/// `rein ARGS` with piped standard streams: the line-mode client.
fn line_mode(env: &CliEnv, args: &[&str]) -> Pty {
    let child = env
        .rein()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    Pty::attach(child)
}

/// Types one line.
fn type_line(rein: &mut Pty, line: &str) {
    rein.send(&format!("{line}\n"));
}

/// The rest of the line after what `rein.expect` consumed.
fn rest_of_line(rein: &mut Pty) -> String {
    rein.expect("\n").trim().to_string()
}

#[test]
fn line_mode_switches_sessions_with_the_shared_slash_commands() {
    let env = CliEnv::start(vec![Reply::text("First answer.")]);
    let mut rein = line_mode(&env, &["--approve", "yolo"]);
    rein.expect("rein: new session ");
    let first = rest_of_line(&mut rein).split_whitespace().next().unwrap_or_default().to_string();
    type_line(&mut rein, "first question");
    rein.expect("First answer.");
    rein.expect("done:");

    // /fork: a copy holding the conversation, which the client now follows.
    type_line(&mut rein, "/fork");
    rein.expect("forked into ");
    let fork = rest_of_line(&mut rein);
    assert_ne!(fork, first);
    let copied = env.messages(&fork);
    assert_eq!(copied.len(), 2, "{copied:?}");

    // /export FILE writes the session shown (the fork).
    type_line(&mut rein, "/export fork.md");
    rein.expect("exported to fork.md");
    let exported = std::fs::read_to_string(env.project.path().join("fork.md")).unwrap();
    assert!(exported.contains("first question"), "{exported}");

    // /new, then /resume lists the two sessions with a prompt and /resume N opens one.
    type_line(&mut rein, "/new");
    rein.expect("rein: new session ");
    let new = rest_of_line(&mut rein).split_whitespace().next().unwrap_or_default().to_string();
    type_line(&mut rein, "/resume");
    rein.expect("sessions of this directory (/resume N opens one):");
    let list = rein.expect(&first);
    assert!(!list.contains(&new), "the empty new session was listed: {list}");
    let number = list.lines().last().and_then(|line| line.split_whitespace().next());
    let number = number.unwrap_or_default().to_string();
    type_line(&mut rein, &format!("/resume {number}"));
    rein.expect(&format!("rein: switched to {first}"));
    rein.expect("first question");
    // The new session, never prompted, was removed when the client moved on.
    let listed = env.rpc_ok("session/list", json!({}));
    let sessions = listed["sessions"].as_array().cloned().unwrap_or_default();
    let ids: Vec<&str> = sessions.iter().filter_map(|s| s["session_id"].as_str()).collect();
    assert!(!ids.contains(&new.as_str()), "{ids:?}");
    assert!(ids.contains(&first.as_str()) && ids.contains(&fork.as_str()), "{ids:?}");

    // /clear has no screen to clear here, and says so.
    type_line(&mut rein, "/clear");
    rein.expect("not a terminal: nothing to clear");
    type_line(&mut rein, "/status");
    rein.expect(&format!("session {first}"));
    type_line(&mut rein, "/quit");
    assert_eq!(rein.wait(), Some(0));
}

#[test]
fn line_mode_holds_back_a_late_y_and_attaches_mentioned_files() {
    let env = CliEnv::start(vec![
        Reply::tool_call("bash", json!({"command": "echo answered-elsewhere"})),
        Reply::text("Ran it."),
    ]);
    std::fs::write(env.project.path().join("notes.txt"), "the secret word is walnut\n").unwrap();
    let mut rein = line_mode(&env, &["--approve", "ask"]);
    rein.expect("rein: new session ");
    let id = rest_of_line(&mut rein).split_whitespace().next().unwrap_or_default().to_string();
    // Another client watches the session and answers its approval.
    let mut other = env.daemon.connect();
    other.call_ok(0, "initialize", json!({"client_name": "other", "protocol_version": "1.0"}));
    other.call_ok(1, "session/subscribe", json!({"session_id": id}));
    type_line(&mut rein, "run it, see @notes.txt");
    rein.expect("approval needed: bash echo answered-elsewhere");
    let asked = other.events_until("approval_requested");
    let request_id = asked.last().unwrap()["event"]["request_id"].as_str().unwrap().to_string();
    other.call_ok(
        2,
        "approval/respond",
        json!({"session_id": id, "request_id": request_id, "decision": "allow_once"}),
    );
    rein.expect("approved once by other");
    // The y meant for it is held back, not sent to the model.
    type_line(&mut rein, "y");
    // The run goes on meanwhile: its answer may print before the notice or after it.
    let seen = rein.expect("that approval was already answered");
    if !seen.contains("Ran it.") {
        rein.expect("Ran it.");
    }
    let users: Vec<_> = env.messages(&id).into_iter().filter(|m| m["role"] == "user").collect();
    assert_eq!(users.len(), 1, "the y became a prompt: {users:?}");
    // The mention attached the file's text.
    assert!(cli_support::request_mentions(&env.requests()[0], "the secret word is walnut"));
    type_line(&mut rein, "/quit");
    assert_eq!(rein.wait(), Some(0));
}

#[test]
fn line_mode_ctrl_c_asks_once_then_cancels_and_drops_the_queue() {
    let env = CliEnv::start(vec![Reply::tool_call("bash", json!({"command": "sleep 30"}))]);
    let mut rein = Pty::spawn_piped(&env, &["--approve", "yolo"]);
    rein.expect("rein: new session ");
    let id = rest_of_line(&mut rein).split_whitespace().next().unwrap_or_default().to_string();
    rein.send("wait a long time\r");
    rein.expect("→ bash sleep 30");
    rein.send("and then this\r");
    rein.expect("queued");
    rein.send("\x03");
    rein.expect("Ctrl-C again cancels the run and drops 1 queued message(s)");
    rein.send("\x03");
    rein.expect("cancelling the run and dropping 1 queued message(s)");
    rein.expect("cancelled");
    let state = env.rpc_ok("session/state", json!({"session_id": id}));
    assert_eq!(state["queues"], json!({"steering": [], "follow_up": []}), "{state}");
    let users: Vec<_> = env.messages(&id).into_iter().filter(|m| m["role"] == "user").collect();
    assert_eq!(users.len(), 1, "{users:?}");
    assert_eq!(env.requests().len(), 1);
    rein.send("/quit\r");
    assert_eq!(rein.wait(), Some(0));
}

#[test]
fn line_mode_keeps_following_after_falling_behind_the_event_stream() {
    let mut env = CliEnv::configured(vec![
        Reply::tool_call("bash", json!({"command": "seq 1 1000000"})),
        Reply::text("flood done"),
        Reply::text("Answer after the gap."),
    ]);
    // A small replay buffer: a client stopped during the flood cannot be replayed to.
    let config = env.daemon.home().join("config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("\n[sessions]\nreplay_buffer = 32\nreplay_buffer_bytes = 65536\n");
    std::fs::write(&config, text).unwrap();
    env.daemon.spawn();
    let mut rein = line_mode(&env, &["--approve", "yolo"]);
    rein.expect("rein: new session ");
    let id = rest_of_line(&mut rein).split_whitespace().next().unwrap_or_default().to_string();
    type_line(&mut rein, "flood the terminal");
    let deadline = std::time::Instant::now() + cli_support::EXPECT_TIMEOUT;
    while env.requests().is_empty() {
        assert!(std::time::Instant::now() < deadline, "the prompt never reached the provider");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let pid = nix::unistd::Pid::from_raw(rein.pid() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGSTOP).unwrap();
    while env.messages(&id).len() < 4 {
        assert!(std::time::Instant::now() < deadline, "the run did not end");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGCONT).unwrap();
    rein.expect("fell behind the event stream");
    // Still following: the next prompt's answer shows.
    type_line(&mut rein, "and now?");
    rein.expect("Answer after the gap.");
    type_line(&mut rein, "/quit");
    assert_eq!(rein.wait(), Some(0));
}
