//! The methods the daemon serves, registered on one `RpcModule`.
//!
//! Each handler takes typed params (parsed with [`parse_params`], so a bad field is named in
//! the error) and the calling connection's [`ConnectionContext`]. A method listed in
//! `docs/protocol.md` but not registered here answers "method not found"; nothing answers
//! with a placeholder result.

use crate::rpc_error::{RpcError, parse_params};
use crate::server::dispatch::{ClientInfo, ConnectionContext};
use jsonrpsee::{Extensions, Methods, PendingSubscriptionSink, RpcModule, SubscriptionMessage};
use jsonrpsee_types::ErrorObjectOwned;
use rein_protocol::error::ErrorKind;
use rein_protocol::method::{
    Ack, DaemonCapabilities, DaemonInfo, Empty, ExportFormat, InitializeParams, InitializeResult,
    ModelsResult, names,
};
use rein_protocol::version::PROTOCOL_VERSION;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::future::Future;
use std::sync::Arc;
use tokio::sync::broadcast::error::RecvError;

/// The daemon's version (the crate version).
pub const DAEMON_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Errors building the method table (a name registered twice is a programming error).
#[derive(Debug, thiserror::Error)]
#[error("registering RPC methods failed: {0}")]
pub struct RegisterError(String);

/// Builds the table of every method the daemon serves.
pub fn build() -> Result<Methods, RegisterError> {
    let mut module = RpcModule::new(());
    register(&mut module, names::INITIALIZE, initialize)?;
    register(&mut module, names::DAEMON_INFO, daemon_info)?;
    register(&mut module, names::DAEMON_SHUTDOWN, daemon_shutdown)?;
    register(&mut module, names::MODELS_LIST, models_list)?;
    module
        .register_subscription(
            names::DAEMON_SUBSCRIBE,
            names::DAEMON_EVENT,
            names::DAEMON_UNSUBSCRIBE,
            daemon_subscribe,
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
                let params = parse_params::<P>(params.as_str()).map_err(ErrorObjectOwned::from)?;
                handler(params, connection).await.map_err(ErrorObjectOwned::from)
            }
        })
        .map_err(|error| RegisterError(error.to_string()))?;
    Ok(())
}

fn connection(extensions: &Extensions) -> Result<Arc<ConnectionContext>, ErrorObjectOwned> {
    extensions
        .get::<Arc<ConnectionContext>>()
        .cloned()
        .ok_or_else(|| RpcError::new(ErrorKind::Internal, "connection context missing").to_object())
}

async fn initialize(
    params: InitializeParams,
    connection: Arc<ConnectionContext>,
) -> Result<InitializeResult, RpcError> {
    if !PROTOCOL_VERSION.is_compatible_with(params.protocol_version) {
        return Err(RpcError::new(
            ErrorKind::IncompatibleProtocol,
            format!(
                "client speaks protocol {} but this daemon speaks {}; upgrade the older side",
                params.protocol_version, PROTOCOL_VERSION
            ),
        ));
    }
    if let Ok(mut client) = connection.client.lock() {
        *client = ClientInfo {
            name: params.client_name,
            version: params.client_version,
            capabilities: params.capabilities,
        };
    }
    let options = &connection.daemon.options;
    Ok(InitializeResult {
        daemon_version: DAEMON_VERSION.to_string(),
        protocol_version: PROTOCOL_VERSION,
        capabilities: DaemonCapabilities {
            replay_buffer: connection.daemon.config.sessions.replay_buffer as u64,
            max_line_bytes: options.max_line_bytes as u64,
            export_formats: vec![ExportFormat::Markdown, ExportFormat::Jsonl],
        },
    })
}

async fn daemon_info(_: Empty, connection: Arc<ConnectionContext>) -> Result<DaemonInfo, RpcError> {
    let daemon = &connection.daemon;
    Ok(DaemonInfo {
        version: DAEMON_VERSION.to_string(),
        protocol_version: PROTOCOL_VERSION,
        pid: std::process::id(),
        uptime_ms: daemon.started.elapsed().as_millis() as u64,
        socket_path: daemon.options.socket.display().to_string(),
        rein_home: daemon.options.home.display().to_string(),
        sessions_loaded: 0,
        connections: daemon.connections(),
    })
}

async fn daemon_shutdown(_: Empty, connection: Arc<ConnectionContext>) -> Result<Ack, RpcError> {
    tracing::info!(client = %connection.client_name(), "shutdown requested");
    let daemon = connection.daemon.clone();
    // Answer first, then stop: the caller learns the request was taken.
    tokio::spawn(async move {
        tokio::task::yield_now().await;
        daemon.begin_shutdown();
    });
    Ok(Ack::ok())
}

async fn models_list(
    _: Empty,
    connection: Arc<ConnectionContext>,
) -> Result<ModelsResult, RpcError> {
    let registry = &connection.daemon.registry;
    Ok(ModelsResult {
        default_model: registry.default_model().map(str::to_string),
        models: registry.models(),
    })
}

async fn daemon_subscribe(
    params: jsonrpsee_types::Params<'static>,
    pending: PendingSubscriptionSink,
    _: Arc<()>,
    extensions: Extensions,
) {
    let connection = match connection(&extensions) {
        Ok(connection) => connection,
        Err(error) => return pending.reject(error).await,
    };
    if let Err(error) = parse_params::<Empty>(params.as_str()) {
        return pending.reject(error).await;
    }
    let mut events = connection.daemon.events.subscribe();
    let Ok(sink) = pending.accept().await else { return };
    loop {
        tokio::select! {
            () = sink.closed() => break,
            event = events.recv() => match event {
                Ok(event) => {
                    let Ok(message) = serde_json::value::to_raw_value(&event) else { continue };
                    if sink.send(SubscriptionMessage::from(message)).await.is_err() {
                        break;
                    }
                }
                Err(RecvError::Lagged(skipped)) => {
                    tracing::debug!(skipped, "daemon event subscriber lagged");
                }
                Err(RecvError::Closed) => break,
            },
        }
    }
}
