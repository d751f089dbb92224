//! A session's history: branch, compact, export.

use super::paging::{Direction, page, page_bytes};
use super::{command, session};
use crate::hub::coding_error;
use crate::rpc_error::RpcError;
use crate::server::dispatch::ConnectionContext;
use rein_protocol::method::{
    BranchParams, BranchResult, CompactParams, CompactResult, ExportParams, ExportResult,
};
use std::sync::Arc;

/// `session/branch`.
pub(super) async fn branch(
    params: BranchParams,
    connection: Arc<ConnectionContext>,
) -> Result<BranchResult, RpcError> {
    let BranchParams { session_id, entry_id, summarize } = params;
    command(&connection, &session_id, async |s| s.branch(entry_id.as_deref(), summarize).await)
        .await
}

/// `session/compact`.
pub(super) async fn compact(
    params: CompactParams,
    connection: Arc<ConnectionContext>,
) -> Result<CompactResult, RpcError> {
    command(&connection, &params.session_id, async |s| s.compact(params.instructions).await).await
}

/// `session/export`.
pub(super) async fn export(
    params: ExportParams,
    connection: Arc<ConnectionContext>,
) -> Result<ExportResult, RpcError> {
    let loaded = session(&connection, &params.session_id).await?;
    let text = loaded.session.export(params.format).map_err(coding_error)?;
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let budget = page_bytes(connection.daemon.options.max_line_bytes);
    let page = page(&lines, Direction::Forward, params.cursor.as_deref(), params.limit, budget)?;
    Ok(ExportResult {
        content: lines[page.range].concat(),
        total: lines.len() as u64,
        next_cursor: page.next_cursor,
    })
}
