//! Tests that need a second process: a second writer refused by the lock, and a writer killed
//! with SIGKILL at random moments while it appends.
//!
//! The second process is this test binary run again with `REIN_SESSION_CHILD` set: the
//! `child_process_entry_point` test then plays the child's part (and does nothing otherwise).

// Test helpers outside `#[test]` functions: a failed setup step should fail the test.
#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use rand::Rng;
use rein_protocol::message::{
    AssistantMessage, ContentBlock, Message, StopReason, ToolCall, ToolResultMessage, Usage,
    UserMessage,
};
use rein_session::repair::is_valid_tool_history;
use rein_session::{SessionError, SessionStore};

const CHILD_MODE: &str = "REIN_SESSION_CHILD";

/// Held by each test that starts child processes. A child holds a copy of every descriptor of
/// this process from its fork until its exec, the session lock's included: one test's children
/// would otherwise keep holding the lock another test has just released.
static SPAWNING: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    SPAWNING.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
const CHILD_ROOT: &str = "REIN_SESSION_CHILD_ROOT";
const CHILD_SESSION: &str = "REIN_SESSION_CHILD_SESSION";

fn spawn_child(mode: &str, root: &Path, session_id: &str) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_process_entry_point", "--nocapture", "--test-threads=1"])
        .env(CHILD_MODE, mode)
        .env(CHILD_ROOT, root)
        .env(CHILD_SESSION, session_id)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

fn assistant(content: Vec<ContentBlock>, stop_reason: StopReason) -> Message {
    Message::Assistant(AssistantMessage {
        content,
        api: "openai-chat".into(),
        provider: "p".into(),
        model: "m".into(),
        usage: Usage::default(),
        stop_reason,
        error_message: None,
        timestamp: 1,
    })
}

fn tool_call(id: &str) -> ContentBlock {
    ContentBlock::ToolCall(ToolCall {
        id: id.into(),
        name: "bash".into(),
        arguments: serde_json::json!({ "command": "ls" }),
    })
}

fn tool_result(id: &str, size: usize) -> Message {
    Message::ToolResult(ToolResultMessage {
        tool_call_id: id.into(),
        tool_name: "bash".into(),
        content: vec![ContentBlock::text("x".repeat(size))],
        is_error: false,
        details: None,
        timestamp: 1,
    })
}

/// The child's side: `lock` tries to open and delete the session and reports; `crash` appends
/// turns forever, printing `ACK <entry id>` after each append returns.
#[test]
fn child_process_entry_point() {
    let Ok(mode) = std::env::var(CHILD_MODE) else { return };
    let store = SessionStore::new(std::env::var(CHILD_ROOT).unwrap());
    let session_id = std::env::var(CHILD_SESSION).unwrap();
    let mut out = std::io::stdout();
    // libtest has printed the test's name without a newline; start the protocol on a new line.
    writeln!(out).unwrap();
    match mode.as_str() {
        "lock" => {
            let open = match store.open(&session_id) {
                Ok(_) => "opened".to_string(),
                Err(SessionError::Locked { .. }) => "locked".to_string(),
                Err(other) => format!("error {other}"),
            };
            let delete = match store.delete(&session_id) {
                Ok(()) => "deleted".to_string(),
                Err(SessionError::Locked { .. }) => "locked".to_string(),
                Err(other) => format!("error {other}"),
            };
            writeln!(out, "RESULT {open} {delete}").unwrap();
        }
        "crash" => {
            let (mut session, _) = store.open(&session_id).unwrap();
            let mut rng = rand::rng();
            for turn in 0_u64.. {
                let a = format!("call-{}-{turn}-a", std::process::id());
                let b = format!("call-{}-{turn}-b", std::process::id());
                let messages = [
                    Message::User(UserMessage::text(format!("turn {turn}"), 1)),
                    assistant(
                        vec![ContentBlock::text("running"), tool_call(&a), tool_call(&b)],
                        StopReason::ToolUse,
                    ),
                    tool_result(&a, rng.random_range(1..20_000)),
                    tool_result(&b, rng.random_range(1..20_000)),
                    assistant(vec![ContentBlock::text("done")], StopReason::Stop),
                ];
                for message in messages {
                    let entry = session.append_message(message).unwrap();
                    writeln!(out, "ACK {}", entry.id).unwrap();
                    out.flush().unwrap();
                }
            }
        }
        other => panic!("unknown child mode {other}"),
    }
}

fn child_result(child: Child) -> String {
    let output = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    text.lines()
        .find_map(|line| line.strip_prefix("RESULT "))
        .unwrap_or_else(|| panic!("child printed no result: {text}"))
        .to_string()
}

#[test]
fn a_writer_in_another_process_is_refused() {
    let _alone = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new(dir.path());
    let session = store.create("/p").unwrap();
    let id = session.id().to_string();
    assert_eq!(child_result(spawn_child("lock", dir.path(), &id)), "locked locked");
    drop(session);
    assert_eq!(child_result(spawn_child("lock", dir.path(), &id)), "opened deleted");
    assert!(matches!(store.open(&id), Err(SessionError::NotFound(_))));
}

#[test]
fn writer_killed_at_random_points_loses_nothing_acknowledged() {
    let _alone = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new(dir.path());
    let id = store.create("/p").unwrap().id().to_string();
    let mut rng = rand::rng();
    let mut acknowledged: Vec<String> = Vec::new();
    for _ in 0..30 {
        let mut child = spawn_child("crash", dir.path(), &id);
        let stdout = child.stdout.take().unwrap();
        let mut lines = BufReader::new(stdout).lines();
        let wait_for = rng.random_range(0..15);
        let mut seen = 0;
        while seen < wait_for {
            match lines.next() {
                Some(Ok(line)) => {
                    if let Some(entry) = line.strip_prefix("ACK ") {
                        acknowledged.push(entry.to_string());
                        seen += 1;
                    }
                }
                _ => break,
            }
        }
        if rng.random_bool(0.5) {
            std::thread::sleep(std::time::Duration::from_micros(rng.random_range(0..3_000)));
        }
        child.kill().unwrap();
        // Acknowledgements already in the pipe were acknowledged before the kill.
        for line in lines.map_while(Result::ok) {
            if let Some(entry) = line.strip_prefix("ACK ") {
                acknowledged.push(entry.to_string());
            }
        }
        child.wait().unwrap();

        let (session, _report) = store.open(&id).unwrap();
        for entry in &acknowledged {
            assert!(session.tree().contains(entry), "acknowledged entry {entry} is missing");
        }
        let messages = session.context_messages();
        assert!(is_valid_tool_history(&messages), "invalid tool history after a crash");
    }
    assert!(!acknowledged.is_empty());
}
