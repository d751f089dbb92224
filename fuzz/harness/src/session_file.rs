//! Opening a session file, with its repair, on whatever bytes a crash or an editor left.
//!
//! Input layout: when byte 0 is even a valid header line is put before the rest (so most
//! inputs get past the header and exercise the entries), otherwise the rest is the whole file.
//! Checked, when the open succeeds:
//!
//! - the messages the next request would send have a valid tool history (every call answered
//!   once, directly behind its call);
//! - the repair is durable and complete: opening the file again repairs nothing more, finds
//!   no damaged or torn line, and gives the same context messages.
//!
//! An open may only fail because of the header (missing, unreadable or from a newer format).

use rein_protocol::message::Message;
use rein_session::repair::is_valid_tool_history;
use rein_session::storage::parse_file;
use rein_session::{Session, SessionError};
use std::path::Path;

/// The header put before inputs whose first byte is even.
pub const HEADER: &str = concat!(
    r#"{"type":"session","version":1,"id":"0197a1b2-0000-7000-8000-000000000001","#,
    r#""cwd":"/tmp/fuzz-project","created":"2026-11-30T10:00:00Z"}"#,
    "\n"
);

/// Runs the session-file checks on one input, using `scratch` (emptied first) for the file.
pub fn check(data: &[u8], scratch: &Path) {
    let Some((&mode, rest)) = data.split_first() else { return };
    clear(scratch);
    let path = scratch.join("0197a1b2-0000-7000-8000-000000000001.jsonl");
    let mut bytes = Vec::with_capacity(HEADER.len() + rest.len());
    if mode % 2 == 0 {
        bytes.extend_from_slice(HEADER.as_bytes());
    }
    bytes.extend_from_slice(rest);
    if let Err(error) = std::fs::write(&path, &bytes) {
        panic!("cannot write the scratch file {}: {error}", path.display());
    }
    let first = match Session::open(&path) {
        Ok((session, _report)) => {
            let request = session.request_messages();
            assert!(is_valid_tool_history(&request), "invalid tool history sent: {request:?}");
            session.context_messages()
        }
        Err(SessionError::BadHeader { .. } | SessionError::UnsupportedVersion { .. }) => return,
        Err(error) => panic!("opening failed for another reason than the header: {error}"),
    };
    let again = match Session::open(&path) {
        Ok((session, report)) => {
            assert!(report.actions.is_empty(), "a second open repaired again: {report:?}");
            session.context_messages()
        }
        Err(error) => panic!("a repaired file does not open again: {error}"),
    };
    assert_messages_eq(&first, &again);
    let written = match std::fs::read(&path) {
        Ok(written) => written,
        Err(error) => panic!("cannot read the repaired file back: {error}"),
    };
    match parse_file(&path, &written) {
        Ok(parsed) => {
            assert!(parsed.damaged.is_empty(), "damaged lines after repair: {:?}", parsed.damaged);
            assert!(!parsed.needs_rewrite, "the repaired file still needs a rewrite");
        }
        Err(error) => panic!("the repaired file does not parse: {error}"),
    }
}

fn assert_messages_eq(first: &[Message], again: &[Message]) {
    assert_eq!(first, again, "the context changed between two opens of the same file");
}

/// Removes everything in `dir` (the session file, its lock, sidecars and temp files).
fn clear(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let _ = std::fs::remove_file(entry.path());
    }
}
