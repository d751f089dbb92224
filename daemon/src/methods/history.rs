//! A session's history: branch, compact, export.

use super::session;
use crate::hub::coding_error;
use crate::rpc_error::RpcError;
use crate::server::dispatch::ConnectionContext;
use rein_protocol::method::{
    BranchParams, BranchResult, CompactParams, CompactResult, ExportParams, ExportResult,
};
use std::sync::Arc;

/// `session/branch`.
pub async fn branch(
    params: BranchParams,
    connection: Arc<ConnectionContext>,
) -> Result<BranchResult, RpcError> {
    let loaded = session(&connection, &params.session_id).await?;
    let _serial = loaded.command_lock.lock().await;
    loaded.session.branch(params.entry_id.as_deref(), params.summarize).await.map_err(coding_error)
}

/// `session/compact`.
pub async fn compact(
    params: CompactParams,
    connection: Arc<ConnectionContext>,
) -> Result<CompactResult, RpcError> {
    let loaded = session(&connection, &params.session_id).await?;
    let _serial = loaded.command_lock.lock().await;
    loaded.session.compact(params.instructions).await.map_err(coding_error)
}

/// `session/export`.
pub async fn export(
    params: ExportParams,
    connection: Arc<ConnectionContext>,
) -> Result<ExportResult, RpcError> {
    let loaded = session(&connection, &params.session_id).await?;
    let content = loaded.session.export(params.format).map_err(coding_error)?;
    Ok(ExportResult { content })
}
