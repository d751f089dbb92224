//! What every session of a daemon shares, and how a session reaches the daemon.

use std::path::PathBuf;
use std::sync::Arc;

use rein_agent::RunLimits;
use rein_ai::Registry;
use rein_protocol::event::SessionEvent;
use rein_protocol::method::ApprovalPolicy;
use rein_protocol::model::ThinkingLevel;
use rein_session::{CompactionSettings, SessionStore};

use crate::command_hooks::HooksConfig;
use crate::file_locks::FileLocks;
use crate::mcp::{McpServers, StatusSink};
use crate::tools::BashSettings;
use crate::trust::TrustStore;

/// Where a session's events go. The daemon numbers them and fans them out; the callback must
/// not block (it is called from the session's tasks and from its control methods).
pub type EventSink = Arc<dyn Fn(SessionEvent) + Send + Sync>;

/// Tells whether any attached client can answer an approval right now. When none can, a call
/// that needs approval is denied at once instead of waiting for nobody.
pub trait ApprovalGate: Send + Sync {
    /// True when at least one subscribed client declared it answers approvals.
    fn has_approver(&self) -> bool;
}

/// Settings a new session starts with (from the daemon's configuration).
#[derive(Debug, Clone, PartialEq)]
pub struct SessionDefaults {
    /// The approval policy of a session that was not given one.
    pub approval_policy: ApprovalPolicy,
    /// The thinking level of a session that was not given one and has none recorded.
    pub thinking_level: ThinkingLevel,
    /// Limits of every run; a prompt's own limits override them field by field.
    pub limits: RunLimits,
    /// When to compact automatically and how much to keep.
    pub compaction: CompactionSettings,
    /// How `bash` and user shell commands run.
    pub bash: BashSettings,
    /// Extra system prompt sections from the configuration, appended as they are.
    pub extra_prompt_sections: Vec<String>,
    /// The command hooks of the configuration (`[hooks]`).
    pub hooks: HooksConfig,
    /// Whether a trusted project's `.claude/settings.json` hooks run too.
    pub hooks_from_claude_settings: bool,
}

impl Default for SessionDefaults {
    fn default() -> Self {
        Self {
            approval_policy: ApprovalPolicy::Ask,
            thinking_level: ThinkingLevel::Off,
            limits: RunLimits::default(),
            compaction: CompactionSettings::default(),
            bash: BashSettings::default(),
            extra_prompt_sections: Vec::new(),
            hooks: HooksConfig::default(),
            hooks_from_claude_settings: false,
        }
    }
}

/// Daemon-wide things every session shares. Cheap to clone.
#[derive(Clone)]
pub struct CodingEnvironment {
    /// Resolves `provider/model` to a model and its provider.
    pub registry: Arc<Registry>,
    /// Where session files live.
    pub store: SessionStore,
    /// Which project directories are trusted.
    pub trust: Arc<TrustStore>,
    /// The daemon-wide per-file locks the tools share.
    pub file_locks: FileLocks,
    /// The global config directory; its `AGENTS.md` always applies.
    pub global_dir: PathBuf,
    /// The global skills directory; always used.
    pub global_skills_dir: PathBuf,
    /// Where `bash` writes the full output of commands whose output was cut.
    pub output_dir: PathBuf,
    /// Settings a new session starts with.
    pub defaults: SessionDefaults,
    /// The daemon's MCP servers (`[mcp_servers]` of `config.toml`), shared by every session.
    pub mcp: Arc<McpServers>,
    /// Where the state changes of sessions' own MCP servers are reported.
    pub mcp_sink: StatusSink,
}

/// A status sink that drops what it gets.
pub fn ignore_mcp_status() -> StatusSink {
    Arc::new(|_| {})
}

impl std::fmt::Debug for CodingEnvironment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodingEnvironment")
            .field("store", &self.store.root())
            .field("global_dir", &self.global_dir)
            .field("defaults", &self.defaults)
            .finish_non_exhaustive()
    }
}
