//! The daemon's configuration file.
//!
//! Read once at start-up from `$REIN_HOME/config.toml`, or, when that file does not exist,
//! from `$XDG_CONFIG_HOME/rein/config.toml` (`~/.config/rein/config.toml`). No file at all is
//! fine: every setting has a default. The providers part (`model`, `[providers.*]`, `[retry]`)
//! belongs to `rein-ai` and is documented in `docs/config.md`; this module adds the daemon's own
//! settings beside it.

use rein_ai::config::ProvidersConfig;
use rein_protocol::method::ApprovalPolicy;
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// Everything the configuration file can set.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Config {
    /// Models and providers.
    #[serde(flatten)]
    pub providers: ProvidersConfig,
    /// The approval policy of new sessions.
    #[serde(default)]
    pub approval_policy: ApprovalPolicy,
    /// Limits applied to every run unless a prompt sets its own.
    #[serde(default)]
    pub limits: LimitsConfig,
    /// Session settings.
    #[serde(default)]
    pub sessions: SessionsConfig,
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
}

/// `[limits]`: defaults for each run.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsConfig {
    /// Most turns per run.
    #[serde(default = "default_max_turns")]
    pub max_turns: u32,
    /// Most US dollars per run; unlimited when absent.
    #[serde(default)]
    pub max_cost: Option<f64>,
    /// Most seconds per run; unlimited when absent.
    #[serde(default)]
    pub max_seconds: Option<u64>,
    /// Consecutive turns in which every tool call failed before the run stops.
    #[serde(default = "default_max_failed_turns")]
    pub max_failed_turns: u32,
}

fn default_max_turns() -> u32 {
    200
}

fn default_max_failed_turns() -> u32 {
    5
}

impl Default for LimitsConfig {
    fn default() -> Self {
        Self {
            max_turns: default_max_turns(),
            max_cost: None,
            max_seconds: None,
            max_failed_turns: default_max_failed_turns(),
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
    /// Items queued per subscriber before it is lagged.
    #[serde(default = "default_subscriber_queue")]
    pub subscriber_queue: usize,
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
    #[error("invalid configuration in {path}: {source}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What is wrong, with its line.
        source: toml::de::Error,
    },
}

/// The files tried, in order: `<home>/config.toml`, then the XDG config dir's.
pub fn candidate_paths(home: &Path) -> Vec<PathBuf> {
    let mut paths = vec![home.join("config.toml")];
    if let Some(dir) = dirs::config_dir() {
        paths.push(dir.join("rein").join("config.toml"));
    }
    paths
}

/// Loads the first configuration file that exists; defaults when there is none. Returns the
/// file used, if any.
pub fn load(home: &Path) -> Result<(Config, Option<PathBuf>), ConfigError> {
    for path in candidate_paths(home) {
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => continue,
            Err(source) => return Err(ConfigError::Read { path, source }),
        };
        let config =
            parse(&text).map_err(|source| ConfigError::Parse { path: path.clone(), source })?;
        return Ok((config, Some(path)));
    }
    Ok((Config::default(), None))
}

/// Parses a configuration document.
pub fn parse(text: &str) -> Result<Config, toml::de::Error> {
    toml::from_str(text)
}

/// The coding environment every session shares, built from the configuration.
///
/// Under `home`: session files in `sessions/`, the trust store `trust.json`, the global
/// `AGENTS.md` and `skills/`, and the full output of long commands in `tmp/bash-output/`.
pub fn coding_environment(
    home: &Path,
    config: &Config,
    registry: std::sync::Arc<rein_ai::Registry>,
) -> Result<rein_coding::session::CodingEnvironment, rein_coding::trust::TrustError> {
    use rein_coding::session::{CodingEnvironment, SessionDefaults};
    let limits = rein_agent::RunLimits {
        max_turns: Some(config.limits.max_turns),
        max_cost: config.limits.max_cost,
        max_wall_time: config.limits.max_seconds.map(std::time::Duration::from_secs),
        max_failed_turns: Some(config.limits.max_failed_turns),
    };
    Ok(CodingEnvironment {
        registry: registry.clone(),
        store: rein_session::SessionStore::new(home),
        trust: std::sync::Arc::new(rein_coding::trust::TrustStore::open(home)?),
        file_locks: rein_coding::file_locks::FileLocks::new(),
        global_dir: home.to_path_buf(),
        global_skills_dir: home.join("skills"),
        output_dir: home.join("tmp").join("bash-output"),
        defaults: SessionDefaults {
            approval_policy: config.approval_policy,
            limits,
            bash: rein_coding::BashSettings {
                hidden_env: registry.key_variables(),
                ..Default::default()
            },
            hooks: config.hooks.clone(),
            hooks_from_claude_settings: config.hooks_from_claude_settings,
            ..SessionDefaults::default()
        },
        mcp: std::sync::Arc::new(rein_coding::mcp::McpServers::none()),
        mcp_sink: rein_coding::session::ignore_mcp_status(),
    })
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
            "#,
        )
        .unwrap();
        assert_eq!(config.providers.model.as_deref(), Some("local/test-model"));
        assert!(config.providers.providers.contains_key("local"));
        assert_eq!(config.approval_policy, ApprovalPolicy::AutoEdit);
        assert_eq!(config.limits.max_turns, 7);
        assert_eq!(config.limits.max_cost, Some(1.5));
        assert_eq!(config.sessions.idle_unload_secs, 30);
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
    fn load_uses_the_home_file_and_reports_its_errors() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("config.toml"), "[limits]\nmax_turns = 3\n").unwrap();
        let (config, path) = load(dir.path()).unwrap();
        assert_eq!(config.limits.max_turns, 3);
        assert_eq!(path, Some(dir.path().join("config.toml")));
        std::fs::write(dir.path().join("config.toml"), "approval_policy = \"sometimes\"\n")
            .unwrap();
        assert!(matches!(load(dir.path()), Err(ConfigError::Parse { .. })));
    }
}
