//! A project's own settings: `.rein/config.toml` in the project directory (and in each
//! directory up to the project root), applied once the project is trusted.
//!
//! A project may set the default `model` of its new sessions, their `approval_policy`,
//! `[limits]` for every run in it, its `[verify]` checks, and its `[hooks]` and
//! `[mcp_servers]` (see [`crate::project_extensions`]). Everything else (providers, retries, the daemon's session
//! settings) belongs to the user's own `config.toml`: a project file naming it is an error, as
//! is any unknown key (with a "did you mean" hint). Files nearer the session's directory win
//! over outer ones, key by key.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rein_agent::RunLimits;
use rein_protocol::mcp::McpServerConfig;
use rein_protocol::method::ApprovalPolicy;
use serde::Deserialize;

use crate::command_hooks::HooksConfig;
use crate::config_file::{ConfigParseError, parse_strict};
use crate::limits_config::LimitsConfig;
use crate::verify::VerifyConfig;

/// Top-level keys of the user's configuration that a project file may not set.
pub const USER_ONLY_KEYS: &[&str] = &["providers", "retry", "sessions"];

/// The settings of a project's `.rein/config.toml` files, merged.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProjectConfig {
    /// The default model of new sessions in the project, as `provider/model`.
    #[serde(default)]
    pub model: Option<String>,
    /// The approval policy of new sessions in the project.
    #[serde(default)]
    pub approval_policy: Option<ApprovalPolicy>,
    /// Limits of every run in the project (a prompt's own limits still win).
    #[serde(default)]
    pub limits: LimitsConfig,
    /// `[verify]`: the project's checks; when they name commands they replace the user's.
    #[serde(default)]
    pub verify: Option<VerifyConfig>,
    /// `[[hooks.EVENT]]`: the project's command hooks (run by
    /// [`crate::project_extensions`]; accepted here so the file stays strict).
    #[serde(default)]
    pub hooks: HooksConfig,
    /// `[mcp_servers.NAME]`: the project's MCP servers (started by
    /// [`crate::project_extensions`]; accepted here so the file stays strict).
    #[serde(default)]
    pub mcp_servers: BTreeMap<String, McpServerConfig>,
}

/// A project configuration file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ProjectConfigError {
    /// The file exists but cannot be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The file is not valid TOML for these settings.
    #[error("invalid project configuration in {path}: {error}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What is wrong, with its line and a hint (part of the text, not a source, so error
        /// chains do not repeat it).
        error: ConfigParseError,
    },
    /// The file sets something only the user's configuration may set.
    #[error(
        "invalid project configuration in {path}: `{key}` can only be set in the user's \
         config.toml, not in a project's .rein/config.toml"
    )]
    UserOnly {
        /// The file.
        path: PathBuf,
        /// The key.
        key: String,
    },
}

impl ProjectConfig {
    /// Parses one project file's text.
    pub fn parse(path: &Path, text: &str) -> Result<Self, ProjectConfigError> {
        if let Ok(table) = text.parse::<toml::Table>()
            && let Some(key) = USER_ONLY_KEYS.iter().find(|key| table.contains_key(**key))
        {
            return Err(ProjectConfigError::UserOnly {
                path: path.to_path_buf(),
                key: (*key).to_string(),
            });
        }
        parse_strict(text)
            .map_err(|error| ProjectConfigError::Parse { path: path.to_path_buf(), error })
    }

    /// Reads and merges `files` (outermost first, so inner files win).
    pub fn load(files: &[PathBuf]) -> Result<Self, ProjectConfigError> {
        let mut merged = Self::default();
        for path in files {
            let text = std::fs::read_to_string(path)
                .map_err(|source| ProjectConfigError::Read { path: path.clone(), source })?;
            merged.merge(Self::parse(path, &text)?);
        }
        Ok(merged)
    }

    /// Takes every setting `inner` has.
    fn merge(&mut self, inner: Self) {
        self.model = inner.model.or(self.model.take());
        self.approval_policy = inner.approval_policy.or(self.approval_policy);
        self.limits.merge(inner.limits);
        self.verify = inner.verify.or(self.verify.take());
        if inner.hooks != HooksConfig::default() {
            self.hooks = inner.hooks;
        }
        self.mcp_servers.extend(inner.mcp_servers);
    }

    /// The user's run limits with this project's in their place where it sets them.
    pub fn limits(&self, user: &RunLimits) -> RunLimits {
        self.limits.over(user)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inner_files_win_key_by_key() {
        let dir = tempfile::tempdir().unwrap();
        let outer = dir.path().join("outer.toml");
        let inner = dir.path().join("inner.toml");
        std::fs::write(&outer, "model = \"a/b\"\n[limits]\nmax_turns = 3\nmax_cost = 1.0\n")
            .unwrap();
        std::fs::write(&inner, "approval_policy = \"yolo\"\n[limits]\nmax_turns = 5\n").unwrap();
        let config = ProjectConfig::load(&[outer, inner]).unwrap();
        assert_eq!(config.model.as_deref(), Some("a/b"));
        assert_eq!(config.approval_policy, Some(ApprovalPolicy::Yolo));
        let limits = config.limits(&RunLimits::default());
        assert_eq!(limits.max_turns, Some(5));
        assert_eq!(limits.max_cost, Some(1.0));
        assert_eq!(limits.max_failed_turns, RunLimits::default().max_failed_turns);
    }

    #[test]
    fn verify_hooks_and_mcp_servers_are_project_settings() {
        let path = Path::new("/p/.rein/config.toml");
        let text = "[verify]\ncommands = [\"make test\"]\n\
                    [[hooks.PreToolUse]]\nmatcher = \"Bash\"\n\
                    [[hooks.PreToolUse.hooks]]\ntype = \"command\"\ncommand = \"true\"\n\
                    [mcp_servers.docs]\ncommand = \"docs-server\"\n";
        let config = ProjectConfig::parse(path, text).unwrap();
        let user = VerifyConfig::default();
        let merged = user.overridden_by(config.verify.as_ref());
        assert_eq!(merged, config.verify.clone().unwrap());
        assert_ne!(config.hooks, HooksConfig::default());
        assert!(config.mcp_servers.contains_key("docs"));
        let err = ProjectConfig::parse(path, "[verify]\ncomands = []\n").unwrap_err();
        assert!(err.to_string().contains("comands"), "{err}");
    }

    #[test]
    fn unknown_and_user_only_keys_are_errors() {
        let path = Path::new("/p/.rein/config.toml");
        let err = ProjectConfig::parse(path, "[limit]\nmax_cost = 1.0\n").unwrap_err();
        let text = err.to_string();
        assert!(text.contains("/p/.rein/config.toml"), "{text}");
        assert!(text.contains("did you mean `limits`"), "{text}");
        let err = ProjectConfig::parse(path, "[providers.x]\napi = \"anthropic\"\n").unwrap_err();
        assert!(matches!(err, ProjectConfigError::UserOnly { ref key, .. } if key == "providers"));
    }
}
