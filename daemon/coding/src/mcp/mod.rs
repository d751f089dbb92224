//! The MCP client: rein connects to the MCP servers the user configured (`[mcp_servers.NAME]`
//! in `config.toml`, a trusted project's `.rein/config.toml`, or an editor's `session/create`)
//! with the official Rust SDK (`rmcp`) and offers their tools to the model as
//! `mcp__<server>__<tool>`.
//!
//! - Transports: stdio (the server is a child process in its own process group; its stderr
//!   goes to the daemon log) and streamable HTTP (headers, bearer token from an environment
//!   variable).
//! - Each server has a supervisor ([`server`]) that restarts it with a growing delay when it
//!   dies and lists its tools again on `notifications/tools/list_changed`. Every state change
//!   goes to a [`StatusSink`] (the daemon turns it into a `mcp_server_status` event).
//! - Results map onto tool results ([`result`]); tools annotated read-only run in parallel
//!   and need no approval under `auto-edit`.

mod result;
mod server;
mod tool;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use rein_agent::Tool;
use rein_protocol::mcp::{McpScope, McpServerConfig, McpServerInfo};

pub use result::tool_output;
pub use server::{FIRST_RESTART_DELAY, MAX_RESTART_DELAY, McpServer, StatusSink};
pub use tool::{McpTool, exposed_name};

/// A set of servers started together (the daemon's, or one session's).
#[derive(Debug, Default)]
pub struct McpServers {
    servers: Vec<Arc<McpServer>>,
}

impl McpServers {
    /// Starts every enabled server of `configs`. Relative working directories and servers
    /// without one run in `cwd`.
    pub fn start(
        configs: &BTreeMap<String, McpServerConfig>,
        scope: McpScope,
        session_id: Option<String>,
        cwd: &Path,
        hidden_env: &[String],
        sink: StatusSink,
    ) -> Self {
        let servers: Vec<Arc<McpServer>> = configs
            .iter()
            .map(|(name, config)| {
                McpServer::new(
                    name.clone(),
                    config.clone(),
                    scope,
                    session_id.clone(),
                    cwd.to_path_buf(),
                    hidden_env.to_vec(),
                    Arc::clone(&sink),
                )
            })
            .collect();
        for server in &servers {
            server.start();
        }
        Self { servers }
    }

    /// No servers.
    pub fn none() -> Self {
        Self::default()
    }

    /// True when there are no servers.
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// The tools the ready servers offer now.
    pub fn tools(&self) -> Vec<Arc<McpTool>> {
        self.servers
            .iter()
            .flat_map(|server| {
                server
                    .offered_tools()
                    .into_iter()
                    .map(|info| Arc::new(McpTool::new(Arc::clone(server), &info)))
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// The tools as agent tools.
    pub fn agent_tools(&self) -> Vec<Arc<dyn Tool>> {
        self.tools().into_iter().map(|tool| tool as Arc<dyn Tool>).collect()
    }

    /// Moves whenever any server's tools or readiness change.
    pub fn generation(&self) -> u64 {
        self.servers.iter().map(|server| server.generation()).sum()
    }

    /// Every server as `mcp/list` shows it.
    pub fn infos(&self) -> Vec<McpServerInfo> {
        self.servers.iter().map(|server| server.info()).collect()
    }

    /// The startup timeouts (seconds) of the enabled servers.
    pub fn startup_timeouts(&self) -> impl Iterator<Item = u64> + '_ {
        self.servers
            .iter()
            .filter(|server| server.config().enabled)
            .map(|server| server.config().startup_timeout)
    }

    /// Stops every server.
    pub fn stop(&self) {
        for server in &self.servers {
            server.stop();
        }
    }
}

impl Drop for McpServers {
    fn drop(&mut self) {
        self.stop();
    }
}
