//! A session's life and settings: create, list, open, close, delete, fork, state, messages,
//! tree, label, rename, model, thinking level, approval policy.

use super::paging::{Direction, page, page_bytes};
use super::{command, session};
use crate::hub::coding_error;
use crate::rpc_error::RpcError;
use crate::server::dispatch::ConnectionContext;
use crate::validate;
use rein_protocol::error::ErrorKind;
use rein_protocol::method::{
    Ack, CreateSessionParams, ForkParams, HistoryPageParams, LabelParams, ListSessionsParams,
    ListSessionsResult, MessagesResult, RenameParams, SessionRef, SessionState,
    SetApprovalPolicyParams, SetModelParams, SetThinkingParams, TreeResult,
};
use std::sync::Arc;

/// `session/create`.
pub(super) async fn create(
    mut params: CreateSessionParams,
    connection: Arc<ConnectionContext>,
) -> Result<SessionState, RpcError> {
    params.cwd = validate::project_dir("cwd", &params.cwd)?;
    if let Some(model) = &params.model {
        validate::model_id("model", model)?;
    }
    let loaded = connection.daemon.hub.create(params).await?;
    Ok(loaded.state())
}

/// `session/list`.
pub(super) async fn list(
    params: ListSessionsParams,
    connection: Arc<ConnectionContext>,
) -> Result<ListSessionsResult, RpcError> {
    // A directory that exists is listed under its canonical name, as sessions record it.
    let ListSessionsParams { cwd, limit, cursor } = params;
    let cwd = cwd.map(|cwd| validate::project_dir("cwd", &cwd).unwrap_or(cwd));
    let hub = connection.daemon.hub.clone();
    let mut listed = tokio::task::spawn_blocking(move || hub.list(cwd.as_deref()))
        .await
        .map_err(|error| RpcError::new(rein_protocol::ErrorKind::Internal, error.to_string()))??;
    let budget = page_bytes(connection.daemon.options.max_line_bytes);
    let page = page(&listed.sessions, Direction::Forward, cursor.as_deref(), limit, budget)?;
    listed.total = listed.sessions.len() as u64;
    listed.sessions.truncate(page.range.end);
    listed.sessions.drain(..page.range.start);
    if cursor.is_some() {
        // Reported once, with the first page.
        listed.errors.clear();
    }
    listed.next_cursor = page.next_cursor;
    Ok(listed)
}

/// `session/open`: loads the session (if needed) and returns its state.
pub(super) async fn open(
    params: SessionRef,
    connection: Arc<ConnectionContext>,
) -> Result<SessionState, RpcError> {
    let loaded = session(&connection, &params.session_id).await?;
    Ok(loaded.state())
}

/// `session/close`.
pub(super) async fn close(
    params: SessionRef,
    connection: Arc<ConnectionContext>,
) -> Result<Ack, RpcError> {
    connection.daemon.hub.close(&params.session_id).await?;
    Ok(Ack::ok())
}

/// `session/delete`.
pub(super) async fn delete(
    params: SessionRef,
    connection: Arc<ConnectionContext>,
) -> Result<Ack, RpcError> {
    connection.daemon.hub.delete(&params.session_id).await?;
    // The session's command output files go with it.
    let spills = crate::config::spill_root(&connection.daemon.options.home);
    if let Err(error) = rein_coding::tools::spill::remove_session(&spills, &params.session_id) {
        tracing::warn!(%error, session = %params.session_id, "could not remove output files");
    }
    Ok(Ack::ok())
}

/// `session/fork`: copies an entry's path into a new session and loads it.
pub(super) async fn fork(
    params: ForkParams,
    connection: Arc<ConnectionContext>,
) -> Result<SessionState, RpcError> {
    let source = session(&connection, &params.session_id).await?;
    let new_id = source.session.fork(&params.entry_id).await.map_err(coding_error)?;
    let forked = session(&connection, &new_id).await?;
    Ok(forked.state())
}

/// `session/state`.
pub(super) async fn state(
    params: SessionRef,
    connection: Arc<ConnectionContext>,
) -> Result<SessionState, RpcError> {
    let loaded = session(&connection, &params.session_id).await?;
    Ok(loaded.state())
}

/// `session/messages`: a page of the messages on the active path, newest first in paging
/// order (oldest first within the page).
pub(super) async fn messages(
    params: HistoryPageParams,
    connection: Arc<ConnectionContext>,
) -> Result<MessagesResult, RpcError> {
    let loaded = session(&connection, &params.session_id).await?;
    // Read the seq first: events after it may already be reflected in the messages, never the
    // other way round, so a client resubscribing from it misses nothing.
    let state = loaded.state();
    let mut messages = loaded.session.messages();
    let budget = page_bytes(connection.daemon.options.max_line_bytes);
    let page =
        page(&messages, Direction::Backward, params.cursor.as_deref(), params.limit, budget)?;
    let total = messages.len() as u64;
    messages.truncate(page.range.end);
    messages.drain(..page.range.start);
    Ok(MessagesResult {
        messages,
        leaf_id: state.leaf_id,
        last_seq: state.last_seq,
        stream: state.stream,
        total,
        next_cursor: page.next_cursor,
    })
}

/// `session/tree`: a page of the session file's entries in file order.
pub(super) async fn tree(
    params: HistoryPageParams,
    connection: Arc<ConnectionContext>,
) -> Result<TreeResult, RpcError> {
    let loaded = session(&connection, &params.session_id).await?;
    let budget = page_bytes(connection.daemon.options.max_line_bytes);
    let read = loaded.session.read_tree(|entries, leaf_id| {
        let page =
            page(entries, Direction::Forward, params.cursor.as_deref(), params.limit, budget)?;
        Ok(TreeResult {
            entries: entries[page.range].to_vec(),
            leaf_id: leaf_id.map(str::to_string),
            total: entries.len() as u64,
            next_cursor: page.next_cursor,
        })
    });
    read.unwrap_or_else(|| Err(RpcError::new(ErrorKind::Io, "the session file cannot be read")))
}

/// `session/label`.
pub(super) async fn label(
    params: LabelParams,
    connection: Arc<ConnectionContext>,
) -> Result<Ack, RpcError> {
    let LabelParams { session_id, entry_id, label } = params;
    command(&connection, &session_id, async |s| s.label(&entry_id, label).await).await?;
    Ok(Ack::ok())
}

/// `session/rename`.
pub(super) async fn rename(
    params: RenameParams,
    connection: Arc<ConnectionContext>,
) -> Result<Ack, RpcError> {
    command(&connection, &params.session_id, async |s| s.rename(params.name).await).await?;
    Ok(Ack::ok())
}

/// `session/set_model`.
pub(super) async fn set_model(
    params: SetModelParams,
    connection: Arc<ConnectionContext>,
) -> Result<Ack, RpcError> {
    validate::model_id("model", &params.model)?;
    command(&connection, &params.session_id, async |s| s.set_model(&params.model).await).await?;
    Ok(Ack::ok())
}

/// `session/set_thinking`.
pub(super) async fn set_thinking(
    params: SetThinkingParams,
    connection: Arc<ConnectionContext>,
) -> Result<Ack, RpcError> {
    command(&connection, &params.session_id, async |s| s.set_thinking(params.level).await).await?;
    Ok(Ack::ok())
}

/// `session/set_approval_policy`.
pub(super) async fn set_approval_policy(
    params: SetApprovalPolicyParams,
    connection: Arc<ConnectionContext>,
) -> Result<Ack, RpcError> {
    let policy = params.policy;
    command(&connection, &params.session_id, async |s| s.set_approval_policy(policy).await).await?;
    Ok(Ack::ok())
}
