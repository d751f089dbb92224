//! The methods the daemon serves, registered on one `RpcModule`.
//!
//! Each handler takes typed params (parsed with [`parse_params`], so a bad field is named in
//! the error) and the calling connection's [`ConnectionContext`]. One module per family:
//! `daemon` (handshake, info, shutdown, trust), `providers` (models, provider checks), `sessions` (a session's life and
//! settings), `running` (prompts, queues, cancel, shell, approvals), `history` (branch,
//! compact, export) and `subscriptions` (event streams).

mod checkpoints;
mod daemon;
mod history;
mod paging;
mod providers;
mod running;
mod sessions;
mod subscriptions;

use crate::clients;
use crate::hub::{LoadedSession, coding_error};
use crate::rpc_error::{RpcError, parse_params};
use crate::server::dispatch::ConnectionContext;
use jsonrpsee::{Extensions, Methods, PendingSubscriptionSink, RpcModule};
use jsonrpsee_types::ErrorObjectOwned;
use jsonrpsee_types::Params;
use rein_coding::session::{CodingError, CodingSession};
use rein_protocol::error::ErrorKind;
use rein_protocol::event::ClientIdentity;
use rein_protocol::requests::{self as rq, Method, MethodId, Notification, Subscription};
use std::future::Future;
use std::sync::Arc;

/// The daemon's version (the crate version).
pub const DAEMON_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Errors building the method table (a name registered twice is a programming error).
#[derive(Debug, thiserror::Error)]
#[error("registering RPC methods failed: {0}")]
pub struct RegisterError(String);

/// Builds the table of every method the daemon serves: one handler per entry of the protocol's
/// method table, each checked by the compiler against the entry's params and result types.
pub fn build() -> Result<Methods, RegisterError> {
    let mut module = RpcModule::new(());
    for id in MethodId::ALL {
        register_method(&mut module, *id)?;
    }
    Ok(module.into())
}

/// Registers the handler of one method. A method added to the table fails to compile here
/// until it has a handler.
fn register_method(m: &mut RpcModule<()>, id: MethodId) -> Result<(), RegisterError> {
    match id {
        MethodId::Initialize => register::<rq::Initialize, _, _>(m, daemon::initialize),
        MethodId::DaemonInfo => register::<rq::DaemonInfo, _, _>(m, daemon::info),
        MethodId::DaemonShutdown => register::<rq::DaemonShutdown, _, _>(m, daemon::shutdown),
        MethodId::ModelsList => register::<rq::ModelsList, _, _>(m, providers::models),
        MethodId::ProvidersCheck => register::<rq::ProvidersCheck, _, _>(m, providers::check),
        MethodId::McpList => register::<rq::McpList, _, _>(m, daemon::mcp_list),
        MethodId::TrustSet => register::<rq::TrustSet, _, _>(m, daemon::trust_set),
        MethodId::TrustList => register::<rq::TrustList, _, _>(m, daemon::trust_list),

        MethodId::SessionCreate => register::<rq::SessionCreate, _, _>(m, sessions::create),
        MethodId::SessionList => register::<rq::SessionList, _, _>(m, sessions::list),
        MethodId::SessionOpen => register::<rq::SessionOpen, _, _>(m, sessions::open),
        MethodId::SessionClose => register::<rq::SessionClose, _, _>(m, sessions::close),
        MethodId::SessionDelete => register::<rq::SessionDelete, _, _>(m, sessions::delete),
        MethodId::SessionFork => register::<rq::SessionFork, _, _>(m, sessions::fork),
        MethodId::SessionState => register::<rq::SessionState, _, _>(m, sessions::state),
        MethodId::SessionMessages => register::<rq::SessionMessages, _, _>(m, sessions::messages),
        MethodId::SessionTree => register::<rq::SessionTree, _, _>(m, sessions::tree),
        MethodId::SessionLabel => register::<rq::SessionLabel, _, _>(m, sessions::label),
        MethodId::SessionRename => register::<rq::SessionRename, _, _>(m, sessions::rename),
        MethodId::SessionSetModel => register::<rq::SessionSetModel, _, _>(m, sessions::set_model),
        MethodId::SessionSetThinking => {
            register::<rq::SessionSetThinking, _, _>(m, sessions::set_thinking)
        }
        MethodId::SessionSetApprovalPolicy => {
            register::<rq::SessionSetApprovalPolicy, _, _>(m, sessions::set_approval_policy)
        }

        MethodId::SessionPrompt => register::<rq::SessionPrompt, _, _>(m, running::prompt),
        MethodId::SessionSteer => register::<rq::SessionSteer, _, _>(m, running::steer),
        MethodId::SessionFollowUp => register::<rq::SessionFollowUp, _, _>(m, running::follow_up),
        MethodId::SessionCancel => register::<rq::SessionCancel, _, _>(m, running::cancel),
        MethodId::SessionQueue => register::<rq::SessionQueue, _, _>(m, running::queue),
        MethodId::SessionClearQueue => {
            register::<rq::SessionClearQueue, _, _>(m, running::clear_queue)
        }
        MethodId::SessionShell => register::<rq::SessionShell, _, _>(m, running::shell),
        MethodId::ApprovalRespond => {
            register::<rq::ApprovalRespond, _, _>(m, running::approval_respond)
        }

        MethodId::SessionBranch => register::<rq::SessionBranch, _, _>(m, history::branch),
        MethodId::SessionCompact => register::<rq::SessionCompact, _, _>(m, history::compact),
        MethodId::SessionExport => register::<rq::SessionExport, _, _>(m, history::export),
        MethodId::SessionUndo => register::<rq::SessionUndo, _, _>(m, checkpoints::undo),
        MethodId::SessionDiff => register::<rq::SessionDiff, _, _>(m, checkpoints::diff),

        MethodId::DaemonSubscribe => {
            register_subscription::<rq::DaemonSubscribe, _, _>(m, subscriptions::daemon_events)
        }
        MethodId::SessionSubscribe => {
            register_subscription::<rq::SessionSubscribe, _, _>(m, subscriptions::session_events)
        }
        // Registered with the subscribe method they end.
        MethodId::DaemonUnsubscribe | MethodId::SessionUnsubscribe => Ok(()),
    }
}

/// Registers a subscription: its subscribe method, the notification carrying its items and
/// the unsubscribe method that ends it, all named by the method table.
fn register_subscription<M, F, Fut>(
    module: &mut RpcModule<()>,
    handler: F,
) -> Result<(), RegisterError>
where
    M: Subscription,
    F: Fn(Params<'static>, PendingSubscriptionSink, Arc<()>, Extensions) -> Fut
        + Send
        + Sync
        + Clone
        + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    module
        .register_subscription(
            M::NAME,
            <M::Notification as Notification>::NAME,
            <M::Unsubscribe as Method>::NAME,
            handler,
        )
        .map_err(|error| RegisterError(error.to_string()))?;
    Ok(())
}

/// Registers an async handler of method `M`: typed params in, the table's result type out,
/// with the calling connection.
fn register<M, F, Fut>(module: &mut RpcModule<()>, handler: F) -> Result<(), RegisterError>
where
    M: Method,
    F: Fn(M::Params, Arc<ConnectionContext>) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<M::Result, RpcError>> + Send + 'static,
{
    module
        .register_async_method(M::NAME, move |params, _, extensions| {
            let handler = handler.clone();
            async move {
                let connection = connection(&extensions)?;
                connection.daemon.reload_config_if_changed();
                let params =
                    parse_params::<M::Params>(params.as_str()).map_err(ErrorObjectOwned::from)?;
                let caller = identity(&connection);
                clients::on_behalf_of(caller, handler(params, connection))
                    .await
                    .map_err(ErrorObjectOwned::from)
            }
        })
        .map_err(|error| RegisterError(error.to_string()))?;
    Ok(())
}

/// Who the calling client is: its `initialize` name, pid and tty.
fn identity(connection: &ConnectionContext) -> ClientIdentity {
    let process = connection.daemon.clients.get(connection.id);
    ClientIdentity { name: connection.client_name(), pid: process.pid, tty: process.tty }
}

/// The calling connection, put in every call's extensions by the dispatcher.
fn connection(extensions: &Extensions) -> Result<Arc<ConnectionContext>, ErrorObjectOwned> {
    extensions
        .get::<Arc<ConnectionContext>>()
        .cloned()
        .ok_or_else(|| RpcError::new(ErrorKind::Internal, "connection context missing").to_object())
}

/// Runs a command that changes a session: loads it, waits its turn behind the session's other
/// commands, and maps a coding-layer failure onto the wire. A session unloaded while the
/// command waited (unloading takes the same lock) is loaded again, so the command never runs
/// on a closed session.
async fn command<R>(
    connection: &ConnectionContext,
    session_id: &str,
    run: impl AsyncFnOnce(&CodingSession) -> Result<R, CodingError>,
) -> Result<R, RpcError> {
    loop {
        let loaded = session(connection, session_id).await?;
        let _serial = loaded.command_lock.lock().await;
        if !connection.daemon.hub.is_loaded(&loaded) {
            continue;
        }
        return run(&loaded.session).await.map_err(coding_error);
    }
}

/// The session named by a call, loading it on first use.
async fn session(
    connection: &ConnectionContext,
    session_id: &str,
) -> Result<Arc<LoadedSession>, RpcError> {
    if connection.daemon.shutdown.is_cancelled() {
        return Err(RpcError::new(ErrorKind::ShuttingDown, "the daemon is shutting down"));
    }
    connection.daemon.hub.get(session_id).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_method_of_the_table_is_served_and_nothing_else() {
        let methods = build().unwrap();
        let mut served: Vec<&str> = methods.method_names().collect();
        served.sort_unstable();
        let mut table: Vec<&str> = MethodId::ALL.iter().map(|id| id.name()).collect();
        table.sort_unstable();
        assert_eq!(served, table);
    }
}
