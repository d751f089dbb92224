//! One MCP server: its connection, kept alive by a supervisor task that starts it, lists its
//! tools (again on `notifications/tools/list_changed`), notices when it dies and restarts it
//! with a growing delay.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use process_wrap::tokio::{CommandWrap, KillOnDrop, ProcessGroup};
use rein_agent::ToolOutput;
use rein_protocol::mcp::{McpScope, McpServerConfig, McpServerInfo, McpServerState};
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, Tool as McpToolInfo,
};
use rmcp::service::{NotificationContext, Peer, RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, ServiceExt};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::result::tool_output;

/// The first delay before a restart; it doubles up to [`MAX_RESTART_DELAY`].
pub const FIRST_RESTART_DELAY: Duration = Duration::from_secs(1);
/// The longest delay between restarts.
pub const MAX_RESTART_DELAY: Duration = Duration::from_secs(60);

/// Where a server's state changes are reported.
pub type StatusSink = Arc<dyn Fn(McpServerInfo) + Send + Sync>;

/// What the supervisor knows.
struct ServerState {
    state: McpServerState,
    peer: Option<Peer<RoleClient>>,
    tools: Vec<McpToolInfo>,
    error: Option<String>,
    restarts: u32,
}

/// One configured server. See the module docs.
pub struct McpServer {
    name: String,
    config: McpServerConfig,
    scope: McpScope,
    session_id: Option<String>,
    cwd: PathBuf,
    hidden_env: Vec<String>,
    state: Mutex<ServerState>,
    /// Moves on every change of the tool list (and of readiness).
    generation: AtomicU64,
    refresh: Arc<Notify>,
    stop: CancellationToken,
    sink: StatusSink,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer").field("name", &self.name).finish_non_exhaustive()
    }
}

/// The client side of the connection: it only listens for tool list changes.
#[derive(Clone)]
struct ClientEvents {
    refresh: Arc<Notify>,
}

impl ClientHandler for ClientEvents {
    fn on_tool_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        self.refresh.notify_one();
        std::future::ready(())
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("rein", env!("CARGO_PKG_VERSION")),
        )
    }
}

/// A connection that is up.
type Running = RunningService<RoleClient, ClientEvents>;

impl McpServer {
    /// A server, not started yet (see [`McpServer::start`]).
    pub(crate) fn new(
        name: String,
        config: McpServerConfig,
        scope: McpScope,
        session_id: Option<String>,
        cwd: PathBuf,
        hidden_env: Vec<String>,
        sink: StatusSink,
    ) -> Arc<Self> {
        let state =
            if config.enabled { McpServerState::Starting } else { McpServerState::Disabled };
        Arc::new(Self {
            name,
            config,
            scope,
            session_id,
            cwd,
            hidden_env,
            state: Mutex::new(ServerState {
                state,
                peer: None,
                tools: Vec::new(),
                error: None,
                restarts: 0,
            }),
            generation: AtomicU64::new(0),
            refresh: Arc::new(Notify::new()),
            stop: CancellationToken::new(),
            sink,
        })
    }

    /// Starts the supervisor (nothing for a disabled server).
    pub(crate) fn start(self: &Arc<Self>) {
        if !self.config.enabled {
            return;
        }
        let server = Arc::clone(self);
        tokio::spawn(async move { server.supervise().await });
    }

    /// Stops the server for good.
    pub(crate) fn stop(&self) {
        self.stop.cancel();
    }

    /// The server's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its configuration.
    pub fn config(&self) -> &McpServerConfig {
        &self.config
    }

    /// Moves whenever the offered tools change.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    fn lock(&self) -> MutexGuard<'_, ServerState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The tools offered (after the config's filters), when the server is ready.
    pub(crate) fn offered_tools(&self) -> Vec<McpToolInfo> {
        let state = self.lock();
        if state.state != McpServerState::Ready {
            return Vec::new();
        }
        state.tools.iter().filter(|tool| self.config.offers(&tool.name)).cloned().collect()
    }

    /// The server as `mcp/list` shows it.
    pub fn info(&self) -> McpServerInfo {
        let state = self.lock();
        McpServerInfo {
            name: self.name.clone(),
            scope: self.scope,
            session_id: self.session_id.clone(),
            transport: self.config.transport(),
            state: state.state,
            tools: if state.state == McpServerState::Ready {
                state
                    .tools
                    .iter()
                    .filter(|tool| self.config.offers(&tool.name))
                    .map(|tool| super::tool::exposed_name(&self.name, &tool.name))
                    .collect()
            } else {
                Vec::new()
            },
            error: state.error.clone(),
            restarts: state.restarts,
        }
    }

    fn update(&self, change: impl FnOnce(&mut ServerState)) {
        change(&mut self.lock());
        self.generation.fetch_add(1, Ordering::SeqCst);
        (self.sink)(self.info());
    }

    /// Keeps the server running until stopped.
    async fn supervise(self: Arc<Self>) {
        let mut delay = FIRST_RESTART_DELAY;
        loop {
            let startup = Duration::from_secs(self.config.startup_timeout.max(1));
            let connected = tokio::select! {
                () = self.stop.cancelled() => break,
                connected = tokio::time::timeout(startup, self.connect()) => match connected {
                    Ok(result) => result,
                    Err(_) => Err(format!("did not start within {} s", startup.as_secs())),
                },
            };
            let failure = match connected {
                Ok(running) => {
                    delay = FIRST_RESTART_DELAY;
                    match self.serve(running).await {
                        Some(failure) => failure,
                        None => break,
                    }
                }
                Err(error) => error,
            };
            tracing::warn!(server = %self.name, error = %failure, retry_in = ?delay, "MCP server failed");
            self.update(|state| {
                state.state = McpServerState::Failed;
                state.peer = None;
                state.error = Some(failure);
            });
            tokio::select! {
                () = self.stop.cancelled() => break,
                () = tokio::time::sleep(delay) => {}
            }
            delay = (delay * 2).min(MAX_RESTART_DELAY);
            self.update(|state| {
                state.state = McpServerState::Starting;
                state.restarts += 1;
            });
        }
        self.update(|state| {
            state.state = McpServerState::Stopped;
            state.peer = None;
        });
    }

    /// Serves a connection until it ends (`Some(why)`) or the server is stopped (`None`).
    async fn serve(&self, running: Running) -> Option<String> {
        let peer = running.peer().clone();
        let token = running.cancellation_token();
        let mut ended = tokio::spawn(running.waiting());
        if let Err(error) = self.list_tools(&peer).await {
            token.cancel();
            let _ = ended.await;
            return Some(error);
        }
        loop {
            tokio::select! {
                () = self.stop.cancelled() => {
                    token.cancel();
                    let _ = ended.await;
                    return None;
                }
                quit = &mut ended => {
                    return Some(match quit {
                        Ok(reason) => format!("the connection ended ({reason:?})"),
                        Err(error) => format!("the connection task failed: {error}"),
                    });
                }
                () = self.refresh.notified() => {
                    if let Err(error) = self.list_tools(&peer).await {
                        tracing::warn!(server = %self.name, %error, "listing tools again failed");
                    }
                }
            }
        }
    }

    /// Lists the tools and marks the server ready.
    async fn list_tools(&self, peer: &Peer<RoleClient>) -> Result<(), String> {
        let tools = peer.list_all_tools().await.map_err(|e| format!("tools/list failed: {e}"))?;
        tracing::info!(server = %self.name, tools = tools.len(), "MCP server ready");
        self.update(|state| {
            state.state = McpServerState::Ready;
            state.peer = Some(peer.clone());
            state.tools = tools;
            state.error = None;
        });
        Ok(())
    }

    /// Starts the process or opens the HTTP session, and initializes.
    async fn connect(&self) -> Result<Running, String> {
        let handler = ClientEvents { refresh: Arc::clone(&self.refresh) };
        match (&self.config.command, &self.config.url) {
            (_, Some(url)) => {
                let client = rein_ai::tls::client_builder()
                    .build()
                    .map_err(|e| format!("cannot build an HTTP client: {e}"))?;
                let transport =
                    StreamableHttpClientTransport::with_client(client, self.http_config(url)?);
                handler.serve(transport).await.map_err(|e| format!("initialize failed: {e}"))
            }
            (Some(command), None) => {
                let mut process = tokio::process::Command::new(command);
                process.args(&self.config.args);
                for variable in &self.hidden_env {
                    process.env_remove(variable);
                }
                process.envs(&self.config.env);
                process.current_dir(
                    self.config.cwd.as_deref().map_or(self.cwd.clone(), PathBuf::from),
                );
                let mut wrapped = CommandWrap::from(process);
                wrapped.wrap(ProcessGroup::leader()).wrap(KillOnDrop);
                let (transport, stderr) = TokioChildProcess::builder(wrapped)
                    .stderr(Stdio::piped())
                    .spawn()
                    .map_err(|e| format!("cannot start `{command}`: {e}"))?;
                if let Some(stderr) = stderr {
                    let name = self.name.clone();
                    tokio::spawn(async move {
                        let mut lines = BufReader::new(stderr).lines();
                        while let Ok(Some(line)) = lines.next_line().await {
                            tracing::info!(server = %name, "mcp stderr: {line}");
                        }
                    });
                }
                handler.serve(transport).await.map_err(|e| format!("initialize failed: {e}"))
            }
            (None, None) => Err("neither `command` nor `url` is set".to_string()),
        }
    }

    /// The HTTP transport's settings: URL, headers, bearer token.
    fn http_config(&self, url: &str) -> Result<StreamableHttpClientTransportConfig, String> {
        use reqwest::header::{HeaderName, HeaderValue};
        let mut headers = HashMap::new();
        let mut add = |name: &str, value: &str| -> Result<(), String> {
            let name = HeaderName::try_from(name).map_err(|e| format!("header `{name}`: {e}"))?;
            let value =
                HeaderValue::try_from(value).map_err(|e| format!("header `{name}`: {e}"))?;
            headers.insert(name, value);
            Ok(())
        };
        for (name, value) in &self.config.headers {
            add(name, value)?;
        }
        for (name, variable) in &self.config.env_headers {
            let value = std::env::var(variable).map_err(|_| {
                format!("header `{name}`: environment variable {variable} is not set")
            })?;
            add(name, &value)?;
        }
        let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_string());
        config = config.custom_headers(headers);
        if let Some(variable) = &self.config.bearer_token_env_var {
            let token = std::env::var(variable).map_err(|_| {
                format!("environment variable {variable} (bearer token) is not set")
            })?;
            config = config.auth_header(token);
        }
        Ok(config)
    }

    /// Calls one of its tools (by the server's own name for it).
    pub(crate) async fn call(
        &self,
        tool: &str,
        arguments: serde_json::Value,
        cancel: &CancellationToken,
    ) -> ToolOutput {
        let peer = {
            let state = self.lock();
            match (&state.peer, state.state) {
                (Some(peer), McpServerState::Ready) => peer.clone(),
                (_, other) => {
                    let why = state.error.clone().unwrap_or_else(|| format!("{other:?}"));
                    return ToolOutput::error(format!(
                        "the MCP server `{}` is not available ({why}); it is restarted \
                         automatically, try again later",
                        self.name
                    ));
                }
            }
        };
        let mut params = CallToolRequestParams::new(tool.to_string());
        params.arguments = arguments.as_object().cloned();
        let timeout = Duration::from_secs(self.config.tool_timeout.max(1));
        let result = tokio::select! {
            () = cancel.cancelled() => return ToolOutput::error("cancelled"),
            result = tokio::time::timeout(timeout, peer.call_tool(params)) => result,
        };
        match result {
            Err(_) => ToolOutput::error(format!(
                "the MCP tool `{tool}` did not answer within {} s",
                timeout.as_secs()
            )),
            Ok(Err(error)) => ToolOutput::error(format!("the MCP tool `{tool}` failed: {error}")),
            Ok(Ok(result)) => match serde_json::to_value(&result) {
                Ok(value) => tool_output(&value),
                Err(error) => ToolOutput::error(format!("unreadable MCP result: {error}")),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(config: McpServerConfig) -> Arc<McpServer> {
        McpServer::new(
            "web".into(),
            config,
            McpScope::Daemon,
            None,
            PathBuf::from("/"),
            Vec::new(),
            Arc::new(|_| {}),
        )
    }

    #[test]
    fn http_headers_and_the_bearer_token_come_from_config_and_environment() {
        // HOME is set in every environment the tests run in; any variable would do.
        let home = std::env::var("HOME").unwrap();
        let mut config = McpServerConfig::http("http://127.0.0.1:9/mcp");
        config.headers.insert("X-Team".into(), "editors".into());
        config.env_headers.insert("X-Home".into(), "HOME".into());
        config.bearer_token_env_var = Some("HOME".into());
        let http = server(config).http_config("http://127.0.0.1:9/mcp").unwrap();
        assert_eq!(http.auth_header.as_deref(), Some(home.as_str()));
        let header = |name: &'static str| {
            let name = reqwest::header::HeaderName::from_static(name);
            http.custom_headers.get(&name).and_then(|v| v.to_str().ok()).map(str::to_string)
        };
        assert_eq!(header("x-team").as_deref(), Some("editors"));
        assert_eq!(header("x-home"), Some(home.clone()));

        let mut missing = McpServerConfig::http("http://127.0.0.1:9/mcp");
        missing.bearer_token_env_var = Some("REIN_TEST_SURELY_UNSET_VARIABLE".into());
        let error = server(missing).http_config("http://127.0.0.1:9/mcp").unwrap_err();
        assert!(error.contains("REIN_TEST_SURELY_UNSET_VARIABLE"), "{error}");
    }

    #[tokio::test]
    async fn a_server_that_cannot_start_fails_and_is_retried() {
        let (sender, mut statuses) = tokio::sync::mpsc::unbounded_channel();
        let server = McpServer::new(
            "broken".into(),
            McpServerConfig::stdio("/no/such/mcp-server", Vec::new()),
            McpScope::Daemon,
            None,
            PathBuf::from("/"),
            Vec::new(),
            Arc::new(move |info| {
                let _ = sender.send(info);
            }),
        );
        server.start();
        let failed = statuses.recv().await.unwrap();
        assert_eq!(failed.state, McpServerState::Failed);
        assert!(failed.error.as_deref().is_some_and(|e| e.contains("/no/such/mcp-server")));
        let retrying = statuses.recv().await.unwrap();
        assert_eq!((retrying.state, retrying.restarts), (McpServerState::Starting, 1));
        let output = server.call("x", serde_json::json!({}), &CancellationToken::new()).await;
        assert!(output.is_error);
        server.stop();
    }
}
