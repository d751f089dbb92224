//! `initialize`, `daemon/*` and `trust/*`.

use super::DAEMON_VERSION;
use crate::clients::ProcessInfo;
use crate::rpc_error::RpcError;
use crate::server::dispatch::{ClientInfo, ConnectionContext};
use crate::sync::lock;
use rein_protocol::error::ErrorKind;
use rein_protocol::method::{
    Ack, DaemonCapabilities, DaemonInfo, Empty, ExportFormat, InitializeParams, InitializeResult,
    TrustListResult, TrustParams,
};
use rein_protocol::version::PROTOCOL_VERSION;
use std::sync::Arc;

/// `initialize`: checks the protocol version and records who the client is.
pub(super) async fn initialize(
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
    let process = ProcessInfo { pid: params.pid, tty: params.tty };
    let weak = Arc::downgrade(&connection);
    let owner: std::sync::Weak<dyn Send + Sync> = weak;
    connection.daemon.clients.record(connection.id, owner, process);
    *lock(&connection.client) = ClientInfo {
        name: params.client_name,
        version: params.client_version,
        capabilities: params.capabilities,
    };
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

/// `daemon/info`.
pub(super) async fn info(
    _: Empty,
    connection: Arc<ConnectionContext>,
) -> Result<DaemonInfo, RpcError> {
    let daemon = &connection.daemon;
    let (disk_free_bytes, low_disk_space) = crate::housekeeping::disk_status(
        &daemon.options.home,
        daemon.config.storage.min_free_bytes,
    );
    let (config_path, config_error) = daemon.config_status();
    let registry = daemon.hub.env().registry.clone();
    let (key_variables, missing_key_variables) = registry
        .key_variables()
        .into_iter()
        .partition(|name| registry.read_variable(name).is_some());
    Ok(DaemonInfo {
        version: DAEMON_VERSION.to_string(),
        protocol_version: PROTOCOL_VERSION,
        pid: std::process::id(),
        uptime_ms: daemon.started.elapsed().as_millis() as u64,
        socket_path: daemon.options.socket.display().to_string(),
        rein_home: daemon.options.home.display().to_string(),
        sessions_loaded: daemon.hub.loaded_count() as u64,
        connections: daemon.connections(),
        disk_free_bytes,
        low_disk_space,
        config_path: config_path.map(|path| path.display().to_string()),
        config_error,
        default_model: registry.effective_default_model(),
        key_variables,
        missing_key_variables,
        local_server: daemon.local_server.clone(),
    })
}

/// `daemon/shutdown`: answers, then shuts down gracefully.
pub(super) async fn shutdown(
    _: Empty,
    connection: Arc<ConnectionContext>,
) -> Result<Ack, RpcError> {
    tracing::info!(client = %connection.client_name(), "shutdown requested");
    let daemon = connection.daemon.clone();
    // Answer first, then stop: the caller learns the request was taken.
    tokio::spawn(async move {
        tokio::task::yield_now().await;
        daemon.begin_shutdown();
    });
    Ok(Ack::ok())
}

/// `trust/set`: trusts or revokes a project directory; loaded sessions under it pick the
/// change up for their next request.
pub(super) async fn trust_set(
    params: TrustParams,
    connection: Arc<ConnectionContext>,
) -> Result<Ack, RpcError> {
    let home = dirs::home_dir();
    let path = crate::validate::trust_target(
        "path",
        &params.path,
        params.trusted,
        params.force,
        home.as_deref(),
    )?;
    let hub = &connection.daemon.hub;
    let trust = &hub.env().trust;
    let result = if params.trusted { trust.trust(&path) } else { trust.revoke(&path).map(|_| ()) };
    result.map_err(|error| RpcError::new(ErrorKind::Io, error.to_string()))?;
    hub.refresh_trust(&path);
    Ok(Ack::ok())
}

/// `trust/list`.
pub(super) async fn trust_list(
    _: Empty,
    connection: Arc<ConnectionContext>,
) -> Result<TrustListResult, RpcError> {
    let trust = &connection.daemon.hub.env().trust;
    let paths = trust.list().into_iter().map(|path| path.display().to_string()).collect();
    Ok(TrustListResult { paths })
}

/// `mcp/list`: the daemon's MCP servers, then (when `session_id` names a loaded session) that
/// session's own.
pub(super) async fn mcp_list(
    params: rein_protocol::mcp::McpListParams,
    connection: Arc<ConnectionContext>,
) -> Result<rein_protocol::mcp::McpListResult, RpcError> {
    let hub = &connection.daemon.hub;
    let mut servers = hub.env().mcp.infos();
    if let Some(session_id) = params.session_id.as_deref() {
        let loaded = hub.loaded(session_id).ok_or_else(|| {
            RpcError::new(ErrorKind::SessionNotFound, format!("session {session_id} is not loaded"))
        })?;
        servers.extend(loaded.session.mcp_servers());
    }
    Ok(rein_protocol::mcp::McpListResult { servers })
}
