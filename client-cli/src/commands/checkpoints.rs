//! `rein undo` and `rein diff`: a session's checkpoints from the command line.
//!
//! Both default to the most recent session of the current directory. `undo` goes back to
//! before the latest turn not undone yet (or `--to TURN`); `diff` shows the latest run's
//! changes (or one turn's, or one run's).

use crate::client::{Client, ClientError};
use crate::commands::session::Report;
use crate::resolve;
use rein_protocol::checkpoint::{DiffParams, DiffResult, FileChangeKind, UndoParams, UndoResult};
use rein_protocol::method::SessionRef;
use rein_protocol::requests as rq;
use serde_json::Value;
use std::path::Path;

/// The session `session` names (an id or unique prefix), else the latest one of `cwd`, loaded.
async fn target_session(
    client: &mut Client,
    session: Option<&str>,
    cwd: &Path,
) -> Result<String, ClientError> {
    let session_id = match session {
        Some(text) => resolve::session_id(client, text).await?,
        None => match resolve::latest_session(client, cwd).await? {
            Some(latest) => latest.session_id,
            None => {
                return Err(ClientError::Io(std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    format!("no session in {}", cwd.display()),
                )));
            }
        },
    };
    client.request::<rq::SessionOpen>(SessionRef { session_id: session_id.clone() }).await?;
    Ok(session_id)
}

/// `rein undo [SESSION] [--to TURN] [--force]`.
pub async fn undo(
    client: &mut Client,
    session: Option<&str>,
    cwd: &Path,
    turn: Option<u32>,
    force: bool,
) -> Result<Report, ClientError> {
    let session_id = target_session(client, session, cwd).await?;
    let params = UndoParams { session_id, turn, entry_id: None, force };
    let result: UndoResult = client.request::<rq::SessionUndo>(params).await?;
    let mut text = format!("restored the files to before turn {}\n", result.turn);
    for path in &result.restored {
        text.push_str(&format!("  restored {path}\n"));
    }
    for path in &result.removed {
        text.push_str(&format!("  removed  {path}\n"));
    }
    for path in &result.overwritten {
        text.push_str(&format!("  (overwrote a change made outside rein: {path})\n"));
    }
    if result.restored.is_empty() && result.removed.is_empty() {
        text.push_str("  nothing had changed\n");
    }
    Ok(Report::from_value(serde_json::to_value(&result).unwrap_or(Value::Null), text))
}

/// `rein diff [SESSION] [--turn TURN | --run RUN]`.
pub async fn diff(
    client: &mut Client,
    session: Option<&str>,
    cwd: &Path,
    turn: Option<u32>,
    run_id: Option<String>,
) -> Result<Report, ClientError> {
    let session_id = target_session(client, session, cwd).await?;
    let params = DiffParams { session_id, turn, run_id };
    let result: DiffResult = client.request::<rq::SessionDiff>(params).await?;
    let turns: Vec<String> = result.turns.iter().map(|t| t.turn.to_string()).collect();
    let mut text = format!("turns {}: {} files changed\n", turns.join(", "), result.files.len());
    for file in &result.files {
        let mark = match file.change {
            FileChangeKind::Added => "A",
            FileChangeKind::Modified => "M",
            FileChangeKind::Deleted => "D",
        };
        text.push_str(&format!("{mark} {}\n", file.path));
    }
    if !result.patch.is_empty() {
        text.push('\n');
        text.push_str(&result.patch);
        if !result.patch.ends_with('\n') {
            text.push('\n');
        }
    }
    Ok(Report::from_value(serde_json::to_value(&result).unwrap_or(Value::Null), text))
}
