//! What opening a session costs in memory, counted by the allocator (deterministic: the bytes
//! asked for, not the process's RSS, so nothing here depends on timing or the machine's load).
//!
//! - The file is read a piece at a time: the memory in use while opening rises above what the
//!   open session holds by a bounded amount, however large the file (it used to hold the whole
//!   file, and its entries while their vector doubled, at once).
//! - The open session is compact: each message is held once, its content list without spare
//!   room, so a session costs about as many bytes in memory as its file takes on disk.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use rein_protocol::EntryKind;
use rein_protocol::message::Message;
use rein_session::SessionStore;

// dhat's allocator counts the bytes in use and their peak while a profiler runs.
#[global_allocator]
static ALLOCATOR: dhat::Alloc = dhat::Alloc;

/// One profiler at a time: tests measure one after another.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn alone() -> MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One turn of four entries, about 300 bytes an entry on disk: a prompt, a `bash` call, its
/// output and an answer.
fn turn(n: usize) -> [EntryKind; 4] {
    rein_testkit::history::turn(n, "openai-chat", "local")
        .map(|message| EntryKind::Message { message: message.into() })
}

/// What opening a session of `entries` entries cost: the file's size, the bytes the open
/// session holds, and the most in use above that while it opened.
struct OpenCost {
    file_bytes: usize,
    held: usize,
    transient: usize,
}

fn open_cost(entries: usize) -> OpenCost {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new(dir.path());
    let mut session = store.create("/p").unwrap();
    let kinds: Vec<EntryKind> = (0..).flat_map(turn).take(entries).collect();
    for chunk in kinds.chunks(1_000) {
        session.append_all(chunk.to_vec()).unwrap();
    }
    let id = session.id().to_string();
    let file_bytes = std::fs::metadata(session.path()).unwrap().len() as usize;
    drop(session);
    drop(kinds);

    let profiler = dhat::Profiler::builder().testing().build();
    let (session, report) = store.open(&id).unwrap();
    let stats = dhat::HeapStats::get();
    drop(profiler);
    assert!(report.actions.is_empty());
    assert_eq!(session.tree().entries().len(), entries);
    drop(session);
    let (after, peak) = (stats.curr_bytes, stats.max_bytes);
    let cost = OpenCost { file_bytes, held: after, transient: peak - after };
    eprintln!(
        "{entries} entries, {file_bytes} bytes on disk: {} held, {} more in use while opening",
        cost.held, cost.transient
    );
    cost
}

/// The memory in use while a session opens rises above what it then holds by a bounded
/// amount (the read buffer and one line), not by the size of the file.
#[test]
fn opening_reads_the_file_a_piece_at_a_time() {
    let _alone = alone();
    let small = open_cost(1_000);
    let large = open_cost(10_000);
    for cost in [&small, &large] {
        assert!(
            cost.transient < 1024 * 1024,
            "{} bytes in use above the {} held while opening a {}-byte file",
            cost.transient,
            cost.held,
            cost.file_bytes
        );
    }
}

/// An open session holds about as many bytes as its file takes on disk: one copy of each
/// message, no spare room in content lists, the entry index by position.
#[test]
fn an_open_session_is_compact() {
    let _alone = alone();
    let cost = open_cost(10_000);
    let per_entry = cost.held / 10_000;
    // 814 bytes an entry (the file takes 422): a third of it the entries themselves (no large
    // kind inline), a third the messages, the rest their text, ids and the index. It was 981
    // bytes with the run setup and the summaries' usage inline in every entry.
    assert!(
        per_entry < 900,
        "{} bytes held for a {}-byte file ({per_entry} bytes an entry)",
        cost.held,
        cost.file_bytes
    );

    // Content lists keep no spare room, and each message is held once (by its entry).
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new(dir.path());
    let mut session = store.create("/p").unwrap();
    session.append_all((0..).flat_map(turn).take(40).collect()).unwrap();
    let id = session.id().to_string();
    drop(session);
    let (session, _) = store.open(&id).unwrap();
    for entry in session.tree().entries() {
        let EntryKind::Message { message } = &entry.kind else { continue };
        assert_eq!(Arc::strong_count(message), 1);
        let content = match message.as_ref() {
            Message::User(user) => &user.content,
            Message::Assistant(assistant) => &assistant.content,
            Message::ToolResult(result) => &result.content,
        };
        assert_eq!(content.capacity(), content.len(), "spare room in {message:?}");
    }
}
