//! A session's checkpoints: undo a turn's file changes, show them.

use super::{command, session};
use crate::hub::coding_error;
use crate::rpc_error::RpcError;
use crate::server::dispatch::ConnectionContext;
use rein_protocol::checkpoint::{DiffParams, DiffResult, UndoParams, UndoResult};
use std::sync::Arc;

/// `session/undo`: serialized with the session's other commands; needs it idle.
pub(super) async fn undo(
    params: UndoParams,
    connection: Arc<ConnectionContext>,
) -> Result<UndoResult, RpcError> {
    if params.turn.is_some() && params.entry_id.is_some() {
        return Err(RpcError::invalid_param("entry_id", "give turn or entry_id, not both"));
    }
    let client = connection.client_name();
    let session_id = params.session_id.clone();
    command(&connection, &session_id, async |s| s.undo(params, &client).await).await
}

/// `session/diff`: a read; never waits behind a run.
pub(super) async fn diff(
    params: DiffParams,
    connection: Arc<ConnectionContext>,
) -> Result<DiffResult, RpcError> {
    if params.turn.is_some() && params.run_id.is_some() {
        return Err(RpcError::invalid_param("run_id", "give turn or run_id, not both"));
    }
    let loaded = session(&connection, &params.session_id).await?;
    loaded.session.diff(params).await.map_err(coding_error)
}
