//! The daemon's configuration file.
//!
//! Read once at start-up from `$REIN_HOME/config.toml`, or, when that file does not exist,
//! from `$XDG_CONFIG_HOME/rein/config.toml` (`~/.config/rein/config.toml`). No file at all is
//! fine: every setting has a default. The providers part (`model`, `[providers.*]`, `[retry]`)
//! belongs to `rein-ai` and is documented in `docs/config.md`; this module adds the daemon's own
//! settings beside it. Every table denies unknown keys, and a misspelled key is reported with
//! the closest valid one ([`rein_coding::config_file`]).

use rein_ai::RetryPolicy;
use rein_ai::config::{ProviderConfig, ProvidersConfig};
use rein_coding::config_file::{ConfigParseError, parse_strict};
pub use rein_coding::limits_config::LimitsConfig;
use rein_protocol::method::ApprovalPolicy;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Everything the configuration file can set.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The default model as `provider/model`.
    #[serde(default)]
    pub model: Option<String>,
    /// `[providers.NAME]` tables.
    #[serde(default)]
    pub providers: BTreeMap<String, ProviderConfig>,
    /// `[retry]`: how failed requests are retried.
    #[serde(default)]
    pub retry: RetryPolicy,
    /// The approval policy of new sessions.
    #[serde(default)]
    pub approval_policy: ApprovalPolicy,
    /// Limits applied to every run unless a prompt sets its own.
    #[serde(default)]
    pub limits: LimitsConfig,
    /// Session settings.
    #[serde(default)]
    pub sessions: SessionsConfig,
    /// What tools may leave on disk.
    #[serde(default)]
    pub tools: ToolsConfig,
    /// Free space on the file system holding `REIN_HOME`.
    #[serde(default)]
    pub storage: StorageConfig,
    /// How approval requests wait.
    #[serde(default)]
    pub approvals: ApprovalsConfig,
    /// `[verify]`: checks run when the model ends a run (docs/verification.md).
    #[serde(default)]
    pub verify: rein_coding::verify::VerifyConfig,
    /// `[checkpoints]`: snapshots before and after each turn's tools, for undo.
    #[serde(default)]
    pub checkpoints: rein_coding::checkpoint::CheckpointSettings,
    /// Command hooks (`[[hooks.EVENT]]`, Claude Code's format; see `docs/extensions.md`).
    #[serde(default)]
    pub hooks: rein_coding::command_hooks::HooksConfig,
    /// Whether the hooks of a trusted project's `.claude/settings.json` (and
    /// `.claude/settings.local.json`) run too.
    #[serde(default)]
    pub hooks_from_claude_settings: bool,
    /// MCP servers every session uses (`[mcp_servers.NAME]`; see `docs/extensions.md`).
    #[serde(default)]
    pub mcp_servers: std::collections::BTreeMap<String, rein_protocol::mcp::McpServerConfig>,
    /// Where the tools of new sessions run: `read-only`, `workspace-write` or `off`
    /// (docs/sandbox.md).
    #[serde(default)]
    pub sandbox: rein_protocol::method::SandboxMode,
    /// `[sandbox_settings]`: how sandboxes are set up.
    #[serde(default)]
    pub sandbox_settings: SandboxSettingsConfig,
}

/// `[sandbox_settings]`: how sandboxed commands run.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxSettingsConfig {
    /// Whether sandboxed commands may use the network.
    #[serde(default)]
    pub network: bool,
    /// The bubblewrap binary; `bwrap` on `PATH` when absent.
    #[serde(default)]
    pub bwrap: Option<PathBuf>,
    /// The image `sandbox = "container"` sessions start their container from.
    #[serde(default)]
    pub image: Option<String>,
    /// The container CLI (`docker`, `podman` or a path); `docker`, else `podman`, when absent.
    #[serde(default)]
    pub engine: Option<PathBuf>,
}

/// `[tools]`: bounds on what tools leave on disk.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolsConfig {
    /// The most bytes one file holding a command's full output (a spill file) keeps.
    #[serde(default = "default_spill_max_bytes")]
    pub spill_max_bytes: u64,
    /// Seconds a spill file is kept; older ones are removed (at start-up and every hour).
    #[serde(default = "default_spill_retention_secs")]
    pub spill_retention_secs: u64,
}

fn default_spill_max_bytes() -> u64 {
    rein_coding::tools::spill::DEFAULT_SPILL_MAX_BYTES
}

fn default_spill_retention_secs() -> u64 {
    rein_coding::tools::spill::DEFAULT_SPILL_RETENTION.as_secs()
}

impl Default for ToolsConfig {
    fn default() -> Self {
        Self {
            spill_max_bytes: default_spill_max_bytes(),
            spill_retention_secs: default_spill_retention_secs(),
        }
    }
}

/// `[storage]`: free space on the file system holding `REIN_HOME`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StorageConfig {
    /// Below this many free bytes the daemon reports low disk space (`daemon/info`,
    /// `low_disk_space` event) and starts or grows no spill file.
    #[serde(default = "default_min_free_bytes")]
    pub min_free_bytes: u64,
}

fn default_min_free_bytes() -> u64 {
    rein_coding::tools::spill::DEFAULT_MIN_FREE_BYTES
}

impl Default for StorageConfig {
    fn default() -> Self {
        Self { min_free_bytes: default_min_free_bytes() }
    }
}

/// `[approvals]`: how approval requests wait for a client.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalsConfig {
    /// Seconds a waiting approval request outlives the last client that could answer it; then
    /// it is denied and the model is told why. 0 denies as soon as the last one leaves.
    #[serde(default = "default_approval_grace_secs")]
    pub grace_secs: u64,
}

fn default_approval_grace_secs() -> u64 {
    rein_coding::session::DEFAULT_APPROVAL_GRACE.as_secs()
}

impl Default for ApprovalsConfig {
    fn default() -> Self {
        Self { grace_secs: default_approval_grace_secs() }
    }
}

impl Config {
    /// The models-and-providers part, as `rein-ai` takes it.
    pub fn providers_config(&self) -> ProvidersConfig {
        ProvidersConfig {
            model: self.model.clone(),
            providers: self.providers.clone(),
            retry: self.retry.clone(),
        }
    }
}

/// `[sessions]`: how the daemon keeps sessions in memory.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionsConfig {
    /// Seconds a session stays loaded once idle and unwatched.
    #[serde(default = "default_idle_unload_secs")]
    pub idle_unload_secs: u64,
    /// Events kept per session for clients that reconnect.
    #[serde(default = "default_replay_buffer")]
    pub replay_buffer: usize,
    /// Serialized bytes of events kept per session for clients that reconnect: the replay
    /// window is the last `replay_buffer` events or this many bytes of them, whichever is
    /// smaller.
    #[serde(default = "default_replay_buffer_bytes")]
    pub replay_buffer_bytes: usize,
    /// Accepted for older configuration files and no longer used: subscribers now read the
    /// shared replay buffer and lag only when it drops an event they have not read.
    #[serde(default = "default_subscriber_queue")]
    pub subscriber_queue: usize,
}

fn default_replay_buffer_bytes() -> usize {
    4 * 1024 * 1024
}

fn default_idle_unload_secs() -> u64 {
    600
}

fn default_replay_buffer() -> usize {
    4096
}

fn default_subscriber_queue() -> usize {
    1024
}

impl Default for SessionsConfig {
    fn default() -> Self {
        Self {
            idle_unload_secs: default_idle_unload_secs(),
            replay_buffer: default_replay_buffer(),
            replay_buffer_bytes: default_replay_buffer_bytes(),
            subscriber_queue: default_subscriber_queue(),
        }
    }
}

/// The configuration file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file exists but cannot be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The file is not valid for these settings.
    #[error("invalid configuration in {path}: {error}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What is wrong, with its line and a "did you mean" hint (part of the text, not a
        /// source, so error chains do not repeat it).
        error: ConfigParseError,
    },
}

/// Loads the first configuration file that exists; defaults when there is none. Returns the
/// file used, if any.
pub fn load(home: &Path) -> Result<(Config, Option<PathBuf>), ConfigError> {
    for path in rein_protocol::paths::config_candidates(home) {
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => continue,
            Err(source) => return Err(ConfigError::Read { path, source }),
        };
        let config =
            parse(&text).map_err(|error| ConfigError::Parse { path: path.clone(), error })?;
        return Ok((config, Some(path)));
    }
    Ok((Config::default(), None))
}

/// Parses a configuration document; unknown keys anywhere are errors.
pub fn parse(text: &str) -> Result<Config, ConfigParseError> {
    parse_strict(text)
}

/// Where the files holding commands' full output go: `<home>/tmp/bash-output`, one directory
/// per session below it.
pub fn spill_root(home: &Path) -> PathBuf {
    home.join("tmp").join("bash-output")
}

/// The coding environment every session shares, built from the configuration.
///
/// Under `home`: session files in `sessions/`, the trust store `trust.json`, the global
/// `AGENTS.md` and `skills/`, the full output of long commands in
/// `tmp/bash-output/<session id>/`, and the checkpoint stores in `checkpoints/`.
pub fn coding_environment(
    home: &Path,
    config: &Config,
    registry: std::sync::Arc<rein_ai::Registry>,
) -> Result<rein_coding::session::CodingEnvironment, rein_coding::trust::TrustError> {
    use rein_coding::session::CodingEnvironment;
    Ok(CodingEnvironment {
        registry: registry.clone(),
        store: rein_session::SessionStore::new(home),
        trust: std::sync::Arc::new(rein_coding::trust::TrustStore::open(home)?),
        file_locks: rein_coding::file_locks::FileLocks::new(),
        global_dir: home.to_path_buf(),
        global_skills_dir: home.join("skills"),
        output_dir: spill_root(home),
        defaults: session_defaults(home, config, &registry),
        mcp: std::sync::Arc::new(rein_coding::mcp::McpServers::none()),
        mcp_sink: rein_coding::session::ignore_mcp_status(),
    })
}

/// The settings new sessions start with, from the configuration and its providers.
pub fn session_defaults(
    home: &Path,
    config: &Config,
    registry: &rein_ai::Registry,
) -> rein_coding::session::SessionDefaults {
    let limits = config.limits.over(&LimitsConfig::built_in());
    rein_coding::session::SessionDefaults {
        approval_policy: config.approval_policy,
        limits,
        bash: rein_coding::BashSettings {
            // The keys, and the hand-over variable of the daemon's re-execution (its
            // descriptor is closed; a nested reind must not mistake it for its own).
            hidden_env: registry
                .key_variables()
                .into_iter()
                .chain([rein_launch::key_handover::SECRETS_FD_VAR.to_string()])
                .collect(),
            spill: rein_coding::tools::spill::SpillLimits {
                max_bytes: config.tools.spill_max_bytes,
                min_free_bytes: config.storage.min_free_bytes,
            },
            ..Default::default()
        },
        approval_grace: std::time::Duration::from_secs(config.approvals.grace_secs),
        // Keys stored by `rein login`: no tool reads, searches or changes them.
        hidden_files: vec![rein_protocol::auth::auth_path(home)],
        verify: config.verify.clone(),
        checkpoints: rein_coding::checkpoint::CheckpointSettings {
            root: Some(home.join("checkpoints")),
            ..config.checkpoints.clone()
        },
        hooks: config.hooks.clone(),
        hooks_from_claude_settings: config.hooks_from_claude_settings,
        sandbox: config.sandbox,
        sandbox_settings: rein_coding::environment::SandboxSettings {
            network: config.sandbox_settings.network,
            bwrap: config.sandbox_settings.bwrap.clone(),
            image: config.sandbox_settings.image.clone(),
            engine: config.sandbox_settings.engine.clone(),
        },
        ..rein_coding::session::SessionDefaults::default()
    }
}

/// Starts the configured MCP servers (daemon-wide) and makes every server's state change,
/// sessions' own servers included, a `mcp_server_status` daemon event. Needs a tokio runtime.
pub fn start_mcp_servers(
    home: &Path,
    config: &Config,
    env: &mut rein_coding::session::CodingEnvironment,
    events: tokio::sync::broadcast::Sender<rein_protocol::event::DaemonEvent>,
) {
    let sink: rein_coding::mcp::StatusSink = std::sync::Arc::new(move |server| {
        let _ = events.send(rein_protocol::event::DaemonEvent::McpServerStatus { server });
    });
    env.mcp = std::sync::Arc::new(rein_coding::mcp::McpServers::start(
        &config.mcp_servers,
        rein_protocol::mcp::McpScope::Daemon,
        None,
        home,
        &env.defaults.bash.hidden_env,
        sink.clone(),
    ));
    env.mcp_sink = sink;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_file_gives_defaults() {
        let config = parse("").unwrap();
        assert_eq!(config.limits, LimitsConfig::default());
        let limits = config.limits.over(&LimitsConfig::built_in());
        assert_eq!((limits.max_turns, limits.max_failed_turns), (Some(200), Some(5)));
        assert_eq!(config.approval_policy, ApprovalPolicy::Ask);
        assert_eq!(config.sessions.replay_buffer, 4096);
    }

    #[test]
    fn reads_daemon_and_provider_settings_together() {
        let config = parse(
            r#"
            model = "local/test-model"
            approval_policy = "auto-edit"
            [providers.local]
            api = "openai-chat"
            base_url = "http://127.0.0.1:9/v1"
            [limits]
            max_turns = 7
            max_cost = 1.5
            [sessions]
            idle_unload_secs = 30
            [approvals]
            grace_secs = 5
            "#,
        )
        .unwrap();
        assert_eq!(config.model.as_deref(), Some("local/test-model"));
        assert!(config.providers.contains_key("local"));
        assert_eq!(config.providers_config().model.as_deref(), Some("local/test-model"));
        assert_eq!(config.approval_policy, ApprovalPolicy::AutoEdit);
        assert_eq!(config.limits.max_turns, Some(7));
        assert_eq!(config.limits.max_cost, Some(1.5));
        assert_eq!(config.sessions.idle_unload_secs, 30);
        assert_eq!(config.approvals.grace_secs, 5);
        assert_eq!(ApprovalsConfig::default().grace_secs, 30);
    }

    #[test]
    fn spill_and_storage_settings_are_read() {
        let config = parse(
            "[tools]\nspill_max_bytes = 4096\nspill_retention_secs = 60\n\
             [storage]\nmin_free_bytes = 1024\n",
        )
        .unwrap();
        assert_eq!(config.tools.spill_max_bytes, 4096);
        assert_eq!(config.tools.spill_retention_secs, 60);
        assert_eq!(config.storage.min_free_bytes, 1024);
        let defaults = parse("").unwrap();
        assert_eq!(defaults.tools, ToolsConfig::default());
        assert!(parse("[tools]\nspill_max = 1\n").is_err());
    }

    #[test]
    fn verify_and_checkpoints_tables() {
        let config = parse(
            r#"
            [verify]
            commands = ["cargo test"]
            max_rounds = 3
            [checkpoints]
            max_file_bytes = 1024
            "#,
        )
        .unwrap();
        assert_eq!(config.verify.plan(None).checks.len(), 1);
        assert_eq!(config.verify.max_rounds, 3);
        assert_eq!(config.checkpoints.max_file_bytes, 1024);
        assert!(config.checkpoints.enabled);
        assert!(parse("[verify]\ncommand = \"x\"\n").is_err());
        let home = tempfile::tempdir().unwrap();
        let registry =
            std::sync::Arc::new(rein_ai::Registry::new(config.providers_config()).unwrap());
        let env = coding_environment(home.path(), &config, registry).unwrap();
        assert_eq!(env.defaults.checkpoints.root, Some(home.path().join("checkpoints")));
        assert_eq!(env.defaults.verify, config.verify);
    }

    #[test]
    fn hooks_are_part_of_the_configuration() {
        let config = parse(
            r#"
            hooks_from_claude_settings = true
            [[hooks.PreToolUse]]
            matcher = "bash"
            [[hooks.PreToolUse.hooks]]
            type = "command"
            command = "./guard.sh"
            on_error = "block"
            "#,
        )
        .unwrap();
        assert!(config.hooks_from_claude_settings);
        assert!(!config.hooks.is_empty());
        assert!(parse("[[hooks.NoSuchEvent]]\nhooks = []\n").is_err());
    }

    #[test]
    fn mistakes_name_the_line() {
        let error = parse("[limits]\nmax_turns = \"many\"\n").unwrap_err();
        assert!(error.to_string().contains("max_turns"), "{error}");
        assert!(parse("[limits]\nmax_turnz = 3\n").is_err());
    }

    #[test]
    fn unknown_keys_anywhere_are_errors_with_the_closest_valid_one() {
        for (text, unknown, closest) in [
            ("[limit]\nmax_cost = 1.0\n", "limit", "limits"),
            ("approval_polcy = \"ask\"\n", "approval_polcy", "approval_policy"),
            ("modle = \"a/b\"\n", "modle", "model"),
            ("[provider.x]\napi = \"anthropic\"\n", "provider", "providers"),
            ("[retry]\nmax_retry = 1\n", "max_retry", "max_retries"),
            ("[sessions]\nidle_unload_sec = 1\n", "idle_unload_sec", "idle_unload_secs"),
            ("approval_policy = \"yollo\"\n", "yollo", "yolo"),
        ] {
            let error = parse(text).unwrap_err();
            let message = error.to_string();
            assert!(message.contains(unknown), "{text}: {message}");
            assert!(
                message.contains(&format!("did you mean `{closest}` instead of `{unknown}`?")),
                "{text}: {message}"
            );
        }
    }

    #[test]
    fn load_uses_the_home_file_and_reports_its_errors() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("config.toml"), "[limits]\nmax_turns = 3\n").unwrap();
        let (config, path) = load(dir.path()).unwrap();
        assert_eq!(config.limits.max_turns, Some(3));
        assert_eq!(path, Some(dir.path().join("config.toml")));
        std::fs::write(dir.path().join("config.toml"), "approval_policy = \"sometimes\"\n")
            .unwrap();
        assert!(matches!(load(dir.path()), Err(ConfigError::Parse { .. })));
    }
}
