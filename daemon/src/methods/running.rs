//! Running a session: prompt, steer, follow-up, cancel, queues, the user shell, approvals.
//!
//! `prompt`, `steer` and `follow_up` return at once; the run's progress arrives as events.
//! `cancel`, `clear_queue` and `approval/respond` never wait behind other commands.

use super::{command, session};
use crate::hub::coding_error;
use crate::rpc_error::RpcError;
use crate::server::dispatch::ConnectionContext;
use rein_protocol::event::QueueState;
use rein_protocol::message::ContentBlock;
use rein_protocol::method::{
    Ack, ApprovalRespondParams, CancelResult, ClearQueueParams, PromptParams, PromptResult,
    QueueMessageParams, QueueMessageResult, SessionRef, ShellParams, ShellResult,
};
use std::sync::Arc;

/// Every image block must really be an image.
fn check_images(images: &[ContentBlock]) -> Result<(), RpcError> {
    for (index, block) in images.iter().enumerate() {
        if !matches!(block, ContentBlock::Image { .. }) {
            return Err(RpcError::invalid_param(
                format!("images[{index}]"),
                "only image content blocks may be sent as images",
            ));
        }
    }
    Ok(())
}

/// `session/prompt`.
pub(super) async fn prompt(
    params: PromptParams,
    connection: Arc<ConnectionContext>,
) -> Result<PromptResult, RpcError> {
    check_images(&params.images)?;
    let session_id = params.session_id.clone();
    command(&connection, &session_id, async |s| s.prompt(params).await).await
}

/// `session/steer`.
pub(super) async fn steer(
    params: QueueMessageParams,
    connection: Arc<ConnectionContext>,
) -> Result<QueueMessageResult, RpcError> {
    check_images(&params.images)?;
    let loaded = session(&connection, &params.session_id).await?;
    loaded.session.steer(params.text, params.images).await.map_err(coding_error)
}

/// `session/follow_up`.
pub(super) async fn follow_up(
    params: QueueMessageParams,
    connection: Arc<ConnectionContext>,
) -> Result<QueueMessageResult, RpcError> {
    check_images(&params.images)?;
    let loaded = session(&connection, &params.session_id).await?;
    loaded.session.follow_up(params.text, params.images).await.map_err(coding_error)
}

/// `session/cancel`.
pub(super) async fn cancel(
    params: SessionRef,
    connection: Arc<ConnectionContext>,
) -> Result<CancelResult, RpcError> {
    let loaded = session(&connection, &params.session_id).await?;
    Ok(CancelResult { cancelled: loaded.cancel() })
}

/// `session/queue`.
pub(super) async fn queue(
    params: SessionRef,
    connection: Arc<ConnectionContext>,
) -> Result<QueueState, RpcError> {
    let loaded = session(&connection, &params.session_id).await?;
    Ok(loaded.session.queues())
}

/// `session/clear_queue`.
pub(super) async fn clear_queue(
    params: ClearQueueParams,
    connection: Arc<ConnectionContext>,
) -> Result<QueueState, RpcError> {
    let loaded = session(&connection, &params.session_id).await?;
    Ok(loaded.session.clear_queue(params.queue))
}

/// `session/shell`.
pub(super) async fn shell(
    params: ShellParams,
    connection: Arc<ConnectionContext>,
) -> Result<ShellResult, RpcError> {
    if params.command.trim().is_empty() {
        return Err(RpcError::invalid_param("command", "command is empty"));
    }
    let ShellParams { session_id, command: line, add_to_context } = params;
    command(&connection, &session_id, async |s| s.shell(line, add_to_context).await).await
}

/// `approval/respond`: the first answer wins; later ones get `approval_not_found`.
pub(super) async fn approval_respond(
    params: ApprovalRespondParams,
    connection: Arc<ConnectionContext>,
) -> Result<Ack, RpcError> {
    let loaded = session(&connection, &params.session_id).await?;
    let client = connection.client_name();
    loaded
        .session
        .respond_approval(&params.request_id, params.decision, params.reason, &client)
        .map_err(coding_error)?;
    Ok(Ack::ok())
}
