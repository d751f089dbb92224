//! A session's MCP servers and tools: the daemon's servers (shared) and the session's own (a
//! trusted project's `[mcp_servers]`, an editor's `session/create`), whose tools join the
//! coding tools. The tool set is rebuilt before a run when a server's tools changed.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use rein_agent::{Tool, ToolSet};
use rein_protocol::mcp::{McpScope, McpServerConfig, McpServerInfo, McpServerState};

use super::{CodingEnvironment, CodingSession};
use crate::mcp::McpServers;
use crate::project_extensions::read_project_extensions;
use crate::tools::{ToolContext, coding_tools};

/// How often the first prompt checks whether starting servers are ready.
const STARTUP_POLL: Duration = Duration::from_millis(50);

/// Starts a session's own servers: the project's (when trusted), then the editor's.
pub(crate) fn start_session_servers(
    env: &CodingEnvironment,
    session_id: &str,
    cwd: &Path,
    trusted: bool,
    extra: &BTreeMap<String, McpServerConfig>,
) -> McpServers {
    let mut configs = BTreeMap::new();
    if trusted {
        match read_project_extensions(cwd) {
            Ok(project) => configs.extend(project.mcp_servers),
            Err(error) => tracing::warn!(%error, "the project's MCP servers are not used"),
        }
    }
    configs.extend(extra.clone());
    if configs.is_empty() {
        return McpServers::none();
    }
    McpServers::start(
        &configs,
        McpScope::Session,
        Some(session_id.to_string()),
        cwd,
        &env.defaults.bash.hidden_env,
        Arc::clone(&env.mcp_sink),
    )
}

/// The coding tools for `context`, then every usable MCP tool of `sets`. An MCP tool whose
/// schema does not compile or whose name is taken is left out (and logged). Also returns the
/// names of the read-only MCP tools.
pub(crate) fn session_tools(
    context: ToolContext,
    sets: &[&McpServers],
) -> (Vec<Arc<dyn Tool>>, HashSet<String>) {
    let mut tools = coding_tools(context);
    let mut names: HashSet<String> = tools.iter().map(|tool| tool.name().to_string()).collect();
    let mut read_only = HashSet::new();
    for tool in sets.iter().flat_map(|set| set.tools()) {
        let name = tool.name().to_string();
        if names.contains(&name) {
            tracing::warn!(tool = %name, "two MCP tools share a name; the second is left out");
            continue;
        }
        if let Err(error) = ToolSet::new(vec![tool.clone() as Arc<dyn Tool>]) {
            tracing::warn!(tool = %name, %error, "MCP tool left out");
            continue;
        }
        if tool.read_only() {
            read_only.insert(name.clone());
        }
        names.insert(name);
        tools.push(tool);
    }
    (tools, read_only)
}

impl CodingSession {
    /// The MCP tool generation the session's tools were built from.
    fn mcp_generation_now(&self) -> u64 {
        self.env().mcp.generation().wrapping_add(self.mcp.generation())
    }

    /// Builds the session's tools for `context` and remembers what they were built from.
    pub(crate) fn build_tools(&self, context: ToolContext) -> Vec<Arc<dyn Tool>> {
        let generation = self.mcp_generation_now();
        let env = self.env();
        let (tools, read_only) = session_tools(context, &[&env.mcp, &self.mcp]);
        self.live().mcp_read_only = read_only;
        self.mcp_built.store(generation, Ordering::SeqCst);
        tools
    }

    /// Rebuilds the tools (and the system prompt listing them) when an MCP server's tools
    /// changed since they were built. Applies from the next run.
    pub(crate) fn refresh_mcp_tools(&self) {
        if self.mcp_generation_now() == self.mcp_built.load(Ordering::SeqCst) {
            return;
        }
        let context = {
            let live = self.live();
            ToolContext { images_allowed: live.model.info.images, ..live.tool_context.clone() }
        };
        let tools = self.build_tools(context);
        match self.harness.set_tools(tools.clone()) {
            Ok(()) => {
                tracing::info!(session = %self.id, tools = tools.len(), "MCP tools changed; tool set rebuilt");
                let prompt = self.live().prompt.set_tools(tools);
                self.harness.set_system_prompt(prompt);
            }
            Err(error) => tracing::error!(%error, "could not replace the tools"),
        }
    }

    /// Waits (up to the longest startup timeout) while a server is still on its first start,
    /// so the first prompt already has its tools.
    pub(crate) async fn wait_for_mcp_startup(&self) {
        let starting = |servers: &McpServers| {
            servers
                .infos()
                .iter()
                .any(|info| info.state == McpServerState::Starting && info.restarts == 0)
        };
        let daemon_servers = Arc::clone(&self.env().mcp);
        let longest =
            daemon_servers.startup_timeouts().chain(self.mcp.startup_timeouts()).max().unwrap_or(0);
        let deadline = Instant::now() + Duration::from_secs(longest);
        while (starting(&daemon_servers) || starting(&self.mcp)) && Instant::now() < deadline {
            tokio::time::sleep(STARTUP_POLL).await;
        }
    }

    /// Whether `tool` is an MCP tool its server annotates read-only.
    pub(crate) fn is_read_only_mcp_tool(&self, tool: &str) -> bool {
        self.live().mcp_read_only.contains(tool)
    }

    /// The session's own MCP servers.
    pub fn mcp_servers(&self) -> Vec<McpServerInfo> {
        self.mcp.infos()
    }
}
