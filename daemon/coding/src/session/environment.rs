//! What every session of a daemon shares, and how a session reaches the daemon.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;

use rein_agent::RunLimits;
use rein_ai::Registry;
use rein_protocol::event::SessionEvent;
use rein_protocol::method::ApprovalPolicy;
use rein_protocol::model::ThinkingLevel;
use rein_session::{CompactionSettings, SessionStore};

use crate::checkpoint::CheckpointSettings;
use crate::command_hooks::HooksConfig;
use crate::file_locks::FileLocks;
use crate::mcp::{McpServers, StatusSink};
use crate::tools::BashSettings;
use crate::trust::TrustStore;
use crate::verify::VerifyConfig;

/// Where a session's events go. The daemon numbers them and fans them out; the callback must
/// not block (it is called from the session's tasks and from its control methods).
pub type EventSink = Arc<dyn Fn(SessionEvent) + Send + Sync>;

/// Tells whether any attached client can answer an approval. When none can, a call that needs
/// approval is denied at once instead of waiting for nobody; when the last one leaves while a
/// request waits, the request is denied once the grace period has passed without one.
pub trait ApprovalGate: Send + Sync {
    /// True when at least one subscribed client declared it answers approvals.
    fn has_approver(&self) -> bool;

    /// Completes once no approver has been attached for `grace` without a break; never while
    /// one stays attached.
    fn abandoned(&self, grace: Duration) -> BoxFuture<'static, ()>;
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
    /// How long a waiting approval request outlives the last client that could answer it
    /// before it is denied (`approvals.grace_secs`).
    pub approval_grace: Duration,
    /// The user's configuration file in force, if any (its hash goes into each run's record).
    pub config_file: Option<PathBuf>,
    /// Files no tool reads, searches or changes (see `ToolContext::hidden_files`).
    pub hidden_files: Vec<std::path::PathBuf>,
    /// `[verify]`: the checks run when the model ends a run.
    pub verify: VerifyConfig,
    /// `[checkpoints]`: snapshots of the project before and after each turn's tools.
    pub checkpoints: CheckpointSettings,
    /// The command hooks of the configuration (`[hooks]`).
    pub hooks: HooksConfig,
    /// Whether a trusted project's `.claude/settings.json` hooks run too.
    pub hooks_from_claude_settings: bool,
    /// Where the tools of a session that was not given a sandbox run (`sandbox`).
    pub sandbox: rein_protocol::method::SandboxMode,
    /// How sandboxes are set up (`[sandbox_settings]`).
    pub sandbox_settings: crate::environment::SandboxSettings,
}

/// The default of [`SessionDefaults::approval_grace`].
pub const DEFAULT_APPROVAL_GRACE: Duration = Duration::from_secs(30);

impl Default for SessionDefaults {
    fn default() -> Self {
        Self {
            approval_policy: ApprovalPolicy::Ask,
            thinking_level: ThinkingLevel::Off,
            limits: RunLimits::default(),
            compaction: CompactionSettings::default(),
            bash: BashSettings::default(),
            extra_prompt_sections: Vec::new(),
            approval_grace: DEFAULT_APPROVAL_GRACE,
            config_file: None,
            hidden_files: Vec::new(),
            verify: VerifyConfig::default(),
            checkpoints: CheckpointSettings::default(),
            hooks: HooksConfig::default(),
            hooks_from_claude_settings: false,
            sandbox: rein_protocol::method::SandboxMode::Off,
            sandbox_settings: crate::environment::SandboxSettings::default(),
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
    /// Where `bash` writes the full output of commands whose output was cut: one directory
    /// per session below it (see `tools::spill`).
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
