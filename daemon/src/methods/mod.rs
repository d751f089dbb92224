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
use jsonrpsee::{Extensions, Methods, RpcModule};
use jsonrpsee_types::ErrorObjectOwned;
use rein_coding::session::{CodingError, CodingSession};
use rein_protocol::error::ErrorKind;
use rein_protocol::event::ClientIdentity;
use rein_protocol::method::names;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::future::Future;
use std::sync::Arc;

/// The daemon's version (the crate version).
pub const DAEMON_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Errors building the method table (a name registered twice is a programming error).
#[derive(Debug, thiserror::Error)]
#[error("registering RPC methods failed: {0}")]
pub struct RegisterError(String);

/// Builds the table of every method the daemon serves.
pub fn build() -> Result<Methods, RegisterError> {
    let mut module = RpcModule::new(());
    let m = &mut module;
    register(m, names::INITIALIZE, daemon::initialize)?;
    register(m, names::DAEMON_INFO, daemon::info)?;
    register(m, names::DAEMON_SHUTDOWN, daemon::shutdown)?;
    register(m, names::MODELS_LIST, providers::models)?;
    register(m, names::PROVIDERS_CHECK, providers::check)?;
    register(m, names::MCP_LIST, daemon::mcp_list)?;
    register(m, names::TRUST_SET, daemon::trust_set)?;
    register(m, names::TRUST_LIST, daemon::trust_list)?;

    register(m, names::SESSION_CREATE, sessions::create)?;
    register(m, names::SESSION_LIST, sessions::list)?;
    register(m, names::SESSION_OPEN, sessions::open)?;
    register(m, names::SESSION_CLOSE, sessions::close)?;
    register(m, names::SESSION_DELETE, sessions::delete)?;
    register(m, names::SESSION_FORK, sessions::fork)?;
    register(m, names::SESSION_STATE, sessions::state)?;
    register(m, names::SESSION_MESSAGES, sessions::messages)?;
    register(m, names::SESSION_TREE, sessions::tree)?;
    register(m, names::SESSION_LABEL, sessions::label)?;
    register(m, names::SESSION_RENAME, sessions::rename)?;
    register(m, names::SESSION_SET_MODEL, sessions::set_model)?;
    register(m, names::SESSION_SET_THINKING, sessions::set_thinking)?;
    register(m, names::SESSION_SET_APPROVAL_POLICY, sessions::set_approval_policy)?;

    register(m, names::SESSION_PROMPT, running::prompt)?;
    register(m, names::SESSION_STEER, running::steer)?;
    register(m, names::SESSION_FOLLOW_UP, running::follow_up)?;
    register(m, names::SESSION_CANCEL, running::cancel)?;
    register(m, names::SESSION_QUEUE, running::queue)?;
    register(m, names::SESSION_CLEAR_QUEUE, running::clear_queue)?;
    register(m, names::SESSION_SHELL, running::shell)?;
    register(m, names::APPROVAL_RESPOND, running::approval_respond)?;

    register(m, names::SESSION_BRANCH, history::branch)?;
    register(m, names::SESSION_COMPACT, history::compact)?;
    register(m, names::SESSION_EXPORT, history::export)?;
    register(m, names::SESSION_UNDO, checkpoints::undo)?;
    register(m, names::SESSION_DIFF, checkpoints::diff)?;

    m.register_subscription(
        names::DAEMON_SUBSCRIBE,
        names::DAEMON_EVENT,
        names::DAEMON_UNSUBSCRIBE,
        subscriptions::daemon_events,
    )
    .map_err(|error| RegisterError(error.to_string()))?;
    m.register_subscription(
        names::SESSION_SUBSCRIBE,
        names::SESSION_EVENT,
        names::SESSION_UNSUBSCRIBE,
        subscriptions::session_events,
    )
    .map_err(|error| RegisterError(error.to_string()))?;
    Ok(module.into())
}

/// Registers an async handler with typed params and the calling connection.
fn register<P, R, F, Fut>(
    module: &mut RpcModule<()>,
    name: &'static str,
    handler: F,
) -> Result<(), RegisterError>
where
    P: DeserializeOwned + Send + 'static,
    R: Serialize + Clone + Send + 'static,
    F: Fn(P, Arc<ConnectionContext>) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<R, RpcError>> + Send + 'static,
{
    module
        .register_async_method(name, move |params, _, extensions| {
            let handler = handler.clone();
            async move {
                let connection = connection(&extensions)?;
                connection.daemon.reload_config_if_changed();
                let params = parse_params::<P>(params.as_str()).map_err(ErrorObjectOwned::from)?;
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
