//! MCP servers: how one is configured (in `config.toml`, a project's `.rein/config.toml`, or
//! passed by an editor in `session/create`), and how the daemon reports its state
//! (`mcp/list`, the `mcp_server_status` daemon event).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Seconds a server has to start and answer `initialize` when its config does not say.
pub const DEFAULT_MCP_STARTUP_TIMEOUT_SECS: u64 = 30;
/// Seconds a tool call may take when the server's config does not say.
pub const DEFAULT_MCP_TOOL_TIMEOUT_SECS: u64 = 120;

fn default_startup_timeout() -> u64 {
    DEFAULT_MCP_STARTUP_TIMEOUT_SECS
}

fn default_tool_timeout() -> u64 {
    DEFAULT_MCP_TOOL_TIMEOUT_SECS
}

fn default_true() -> bool {
    true
}

/// One MCP server (`[mcp_servers.NAME]`): a command to run over stdio, or a URL to reach
/// over streamable HTTP.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct McpServerConfig {
    /// The program of a stdio server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Its arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Variables added to its environment.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Its working directory; the session's project directory (or the daemon's home for
    /// daemon-wide servers) when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The endpoint of a streamable HTTP server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// HTTP headers sent with every request.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// HTTP headers whose values are read from environment variables of the daemon (header
    /// name to variable name), so secrets stay out of the file.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env_headers: BTreeMap<String, String>,
    /// An environment variable of the daemon holding a bearer token for
    /// `Authorization: Bearer ...`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bearer_token_env_var: Option<String>,
    /// Only these tools are offered (all when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled_tools: Option<Vec<String>>,
    /// These tools are never offered.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disabled_tools: Vec<String>,
    /// Seconds to start and initialize (default 30).
    #[serde(default = "default_startup_timeout")]
    pub startup_timeout: u64,
    /// Seconds a tool call may take (default 120).
    #[serde(default = "default_tool_timeout")]
    pub tool_timeout: u64,
    /// False keeps the server configured but not started.
    #[serde(default = "default_true")]
    pub enabled: bool,
}

impl McpServerConfig {
    /// A stdio server running `command`.
    pub fn stdio(command: impl Into<String>, args: Vec<String>) -> Self {
        Self { command: Some(command.into()), args, ..Self::empty() }
    }

    /// A streamable HTTP server at `url`.
    pub fn http(url: impl Into<String>) -> Self {
        Self { url: Some(url.into()), ..Self::empty() }
    }

    fn empty() -> Self {
        Self {
            command: None,
            args: Vec::new(),
            env: BTreeMap::new(),
            cwd: None,
            url: None,
            headers: BTreeMap::new(),
            env_headers: BTreeMap::new(),
            bearer_token_env_var: None,
            enabled_tools: None,
            disabled_tools: Vec::new(),
            startup_timeout: DEFAULT_MCP_STARTUP_TIMEOUT_SECS,
            tool_timeout: DEFAULT_MCP_TOOL_TIMEOUT_SECS,
            enabled: true,
        }
    }

    /// The transport this config uses: `url` means HTTP, else stdio.
    pub fn transport(&self) -> McpTransport {
        if self.url.is_some() { McpTransport::Http } else { McpTransport::Stdio }
    }

    /// Whether a tool of this server is offered under its filters.
    pub fn offers(&self, tool: &str) -> bool {
        self.enabled_tools.as_ref().is_none_or(|only| only.iter().any(|t| t == tool))
            && !self.disabled_tools.iter().any(|t| t == tool)
    }
}

/// How the daemon talks to a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum McpTransport {
    /// A child process, JSON-RPC over its stdin and stdout.
    Stdio,
    /// Streamable HTTP.
    Http,
}

/// Where a server was configured, which decides who shares it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum McpScope {
    /// `config.toml`: one connection shared by every session.
    Daemon,
    /// A project's `.rein/config.toml` or an editor's `session/create`: one session's own.
    Session,
}

/// The state of a server's connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum McpServerState {
    /// Starting or restarting; not usable yet.
    Starting,
    /// Connected; its tools are offered.
    Ready,
    /// It failed to start or died; a restart is scheduled (see `error`).
    Failed,
    /// `enabled = false`.
    Disabled,
    /// The daemon or session stopped it.
    Stopped,
}

/// One server as `mcp/list` and `mcp_server_status` show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct McpServerInfo {
    /// Its name (the `NAME` of `[mcp_servers.NAME]`).
    pub name: String,
    /// Where it was configured.
    pub scope: McpScope,
    /// The session owning it, for session servers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// How the daemon talks to it.
    pub transport: McpTransport,
    /// Its state.
    pub state: McpServerState,
    /// The tools offered to the model, as the model sees them (`mcp__<server>__<tool>`).
    pub tools: Vec<String>,
    /// Why it failed, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// How many times it was restarted.
    pub restarts: u32,
}

/// `mcp/list` params.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct McpListParams {
    /// Also list this loaded session's own servers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
}

/// `mcp/list` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct McpListResult {
    /// The daemon's servers, then the session's.
    pub servers: Vec<McpServerInfo>,
}
