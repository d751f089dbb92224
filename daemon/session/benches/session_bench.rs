//! Session benchmarks: loading a 100,000-entry session, listing 1,000 sessions, and the cost
//! of a synced append. Plain std timing; run with `cargo bench -p rein-session`.
//!
//! Targets: load under 1 s, list under 200 ms.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use rein_protocol::EntryKind;
use rein_protocol::message::{
    AssistantMessage, ContentBlock, Message, StopReason, ToolCall, ToolResultMessage, Usage,
    UserMessage,
};
use rein_session::SessionStore;

const LOAD_ENTRIES: usize = 100_000;
const LIST_SESSIONS: usize = 1_000;
const ENTRIES_PER_LISTED_SESSION: usize = 20;
const SYNCED_APPENDS: usize = 200;
const RUNS: usize = 5;

/// One turn of four entries: a prompt, a tool call, its result, an answer.
fn turn(n: usize) -> Vec<EntryKind> {
    let call = format!("call_{n}");
    let assistant = |content, stop_reason| {
        Message::Assistant(AssistantMessage {
            content,
            api: "openai-chat".into(),
            provider: "bench".into(),
            model: "m".into(),
            usage: Usage {
                input: 1_000 + n as u64,
                output: 50,
                total_tokens: 1_050 + n as u64,
                ..Usage::default()
            },
            stop_reason,
            error_message: None,
            timestamp: 1,
        })
    };
    let messages = [
        Message::User(UserMessage::text(
            format!("Please look at module {n} and fix the failing test in it."),
            1,
        )),
        assistant(
            vec![
                ContentBlock::text("Let me read it."),
                ContentBlock::ToolCall(ToolCall {
                    id: call.clone(),
                    name: "read".into(),
                    arguments: serde_json::json!({ "path": format!("src/module_{n}.rs") }),
                }),
            ],
            StopReason::ToolUse,
        ),
        Message::ToolResult(ToolResultMessage {
            tool_call_id: call,
            tool_name: "read".into(),
            content: vec![ContentBlock::text("fn main() { println!(\"hello\"); }\n".repeat(8))],
            is_error: false,
            details: None,
            timestamp: 1,
        }),
        assistant(
            vec![ContentBlock::text("Fixed: the assertion compared the wrong field.")],
            StopReason::Stop,
        ),
    ];
    messages.into_iter().map(|message| EntryKind::Message { message: message.into() }).collect()
}

fn entries(count: usize) -> Vec<EntryKind> {
    (0..).flat_map(turn).take(count).collect()
}

fn timed<T>(mut run: impl FnMut() -> T) -> (Duration, Duration) {
    let mut times: Vec<Duration> = (0..RUNS)
        .map(|_| {
            let start = Instant::now();
            std::hint::black_box(run());
            start.elapsed()
        })
        .collect();
    times.sort();
    (times[0], times[RUNS / 2])
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1_000.0)
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new(dir.path());

    // Load a 100,000-entry session (open: lock, read, parse, index, repair check).
    let mut session = store.create("/bench/load").unwrap();
    for chunk in entries(LOAD_ENTRIES).chunks(5_000) {
        session.append_all(chunk.to_vec()).unwrap();
    }
    let id = session.id().to_string();
    let size = std::fs::metadata(session.path()).unwrap().len();
    drop(session);
    let (min, median) = timed(|| store.open(&id).unwrap());
    println!(
        "load {LOAD_ENTRIES} entries ({:.1} MB): min {}, median {} (target < 1 s)",
        size as f64 / 1e6,
        ms(min),
        ms(median)
    );
    let (session, _) = store.open(&id).unwrap();
    let (min, median) = timed(|| session.context_messages());
    println!(
        "replay the active path of {LOAD_ENTRIES} entries: min {}, median {}",
        ms(min),
        ms(median)
    );
    drop(session);

    // List 1,000 sessions.
    let list_store = SessionStore::new(dir.path().join("list"));
    let per_session = entries(ENTRIES_PER_LISTED_SESSION);
    for i in 0..LIST_SESSIONS {
        let mut session = list_store.create(&format!("/bench/project-{}", i % 10)).unwrap();
        session.append_all(per_session.clone()).unwrap();
    }
    let (min, median) = timed(|| list_store.list(None).unwrap());
    let listed = list_store.list(None).unwrap().len();
    assert_eq!(listed, LIST_SESSIONS);
    println!(
        "list {LIST_SESSIONS} sessions of {ENTRIES_PER_LISTED_SESSION} entries: min {}, median {} (target < 200 ms)",
        ms(min),
        ms(median)
    );

    // One fsync per appended message.
    let mut session = store.create("/bench/append").unwrap();
    let messages = entries(SYNCED_APPENDS);
    let start = Instant::now();
    for kind in messages {
        session.append(kind).unwrap();
    }
    let per_append = start.elapsed() / SYNCED_APPENDS as u32;
    println!(
        "synced append (write + fdatasync) of one message: mean {:.3} ms",
        per_append.as_secs_f64() * 1_000.0
    );
}
